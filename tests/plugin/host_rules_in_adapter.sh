#!/bin/sh
# No file of src/plugin outside host/ names a ganesha or ntirpc release: what
# differs by release is the host adapter's (src/plugin/host/README.md).
# Usage: host_rules_in_adapter.sh SRC_PLUGIN_DIR
set -eu
dir=$1
# Every release the adapters know, ganesha's (the folders) and ntirpc's
# (hosts.cmake), as tokens; then any "ganesha N", "ntirpc N", "NTIRPC_N",
# ".so.N" and release tags such as V6.2.
vers=$( (for h in "$dir"/host/ganesha-*/; do h=${h%/}; echo "${h##*/ganesha-}"; done
	sed -n 's/^set(_host_by_ntirpc_\([0-9.]*\) .*/\1/p' "$dir/host/hosts.cmake") |
	sort -u | sed 's/\./\\./g' | paste -sd'|' -)
[ -n "$vers" ] || { echo "no releases found under $dir/host"; exit 1; }
pat="(^|[^0-9.])($vers)([^0-9]|\$)|(ganesha|ntirpc)[ _-]?v?[0-9]|\\.so\\.[0-9]|\\bV[0-9]+\\.[0-9]"

# The pattern itself: it must catch what the shared files used to say, and
# leave protocol versions and RFC sections alone.
for bad in "ganesha 6's xdr_io_data" "ganesha 4.3 allocates NFSv4 READ buffers" \
	"before ntirpc 5.8" "\"NTIRPC_6.3\"" "libganesha_nfsd.so.6.5" "an int in 5.9 and 6.5" \
	"upstream V6.2"; do
	printf '%s\n' "$bad" | grep -qiE "$pat" || { echo "pattern misses: $bad"; exit 1; }
done
for good in "NFSv4.1 COMPOUND" "RFC 8267 section 4.5" "Listen_Addr_v6" "Peer_Prefix_V4" \
	"RFC 8881 section 2.10.6.1.2" "0x43"; do
	if printf '%s\n' "$good" | grep -qiE "$pat"; then
		echo "pattern catches: $good"
		exit 1
	fi
done

if grep -rnIiE "$pat" "$dir" --exclude-dir=host; then
	echo "these lines of src/plugin name a release: say it in the host adapter (src/plugin/host/)"
	exit 1
fi
echo "no release named outside $dir/host (releases: $(echo "$vers" | sed 's/[\\]//g'))"

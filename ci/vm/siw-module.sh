#!/bin/bash
# Soft-iWARP (siw.ko) for the interop VM's kernel (called by ci/vm/prepare.sh).
#   ci/vm/siw-module.sh KV KDIR KDEB   -> prints the path of siw.ko on its last line, or nothing
#     KV    the kernel's version string (6.1.0-56-amd64)
#     KDIR  where prepare.sh unpacked that kernel's package (KDIR/lib/modules/KV)
#     KDEB  that kernel's .deb (its Version picks the matching source and headers)
# A kernel package that ships siw.ko needs nothing. Debian 12's does not (CONFIG_RDMA_SIW is not
# set): then siw is built out of tree, as any external module is, from the siw sources of Debian's
# linux-source-<major.minor> of the kernel's own version against that kernel's
# linux-headers-<KV> (+ its -common and linux-kbuild). The packages are apt-get downloaded and
# unpacked under the work dir, never installed; the module is cached per kernel version in
# W/siw-KV/ (a new kernel version builds it again). Building needs make and the compiler the
# kernel was built with (gcc-12 on Debian 12: build-essential, ci/install-deps.sh).
# Any failure (no network, no such source version, a compile error) prints nothing and writes its
# reason to W/siw-KV/unavailable: the VM then shows siw as "not available" and runs rxe as before.
# The same apt options as prepare.sh come in APT_OPTS (trixie: the trixie root's lists).
set -uo pipefail
KV=$1 KDIR=$2 KDEB=$3
HERE=$(cd "$(dirname "$0")" && pwd)
W=${RPCRDMA_VM_WORK:-$HERE/work}
D=$W/siw-$KV
log() { echo "siw-module: $*" >&2; }
# shellcheck disable=SC2206
APTO=(${APT_OPTS:-})

shipped=$(find "$KDIR/lib/modules/$KV/" -name 'siw.ko*' 2>/dev/null | head -1)
if [ -n "$shipped" ]; then
	log "the kernel package ships $(basename "$shipped")"
	echo "$shipped"
	exit 0
fi
if [ -f "$D/siw.ko" ]; then
	echo "$D/siw.ko"
	exit 0
fi

fail() {
	mkdir -p "$D"
	echo "$*" > "$D/unavailable"
	log "siw not available: $*"
	rm -rf "$D/build"
	exit 0
}
mkdir -p "$D"; rm -f "$D/unavailable"
VER=$(dpkg-deb -f "$KDEB" Version 2>/dev/null) || fail "cannot read the kernel package's version"
MM=$(echo "$VER" | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p')
for t in make gcc xz; do command -v $t > /dev/null || fail "no $t to build siw.ko (ci/install-deps.sh)"; done

B=$D/build
rm -rf "$B"; mkdir -p "$B/debs" "$B/root"
# the headers package names its -common and kbuild packages in its Depends
get() { (cd "$B/debs" && apt-get "${APTO[@]}" download -q "$@" 2>&1 | { grep -v unsandboxed >&2 || true; }); }
log "downloading linux-headers-$KV=$VER, linux-source-$MM=$VER"
get "linux-headers-$KV=$VER" || fail "apt-get download linux-headers-$KV=$VER failed"
HDEB=$(ls "$B"/debs/linux-headers-"$KV"_*.deb)
deps=$(dpkg-deb -f "$HDEB" Depends | tr ',' '\n' | sed -n 's/^ *\(linux-\(headers\|kbuild\)-[^ ]*\).*/\1/p')
for p in $deps; do
	case $p in linux-headers-*) get "$p=$VER" ;; *) get "$p" ;; esac || fail "apt-get download $p failed"
done
# the source of exactly this kernel; the security archive keeps earlier revisions
get "linux-source-$MM=$VER" || fail "apt-get download linux-source-$MM=$VER failed"
for f in "$B"/debs/linux-headers-*.deb "$B"/debs/linux-kbuild-*.deb; do
	dpkg-deb -x "$f" "$B/root" || fail "cannot unpack $(basename "$f")"
done
H=$B/root/usr/src/linux-headers-$KV
[ -f "$H/Makefile" ] || fail "no $H/Makefile in linux-headers-$KV"
# the flavour's Makefile includes the -common one by its installed path
sed -i "s|^include /usr/src/|include $B/root/usr/src/|" "$H/Makefile"
grep -q '^CONFIG_INFINIBAND=m' "$H/.config" || fail "the kernel has no modular InfiniBand core"

log "unpacking drivers/infiniband/sw/siw from linux-source-$MM"
SDEB=$(ls "$B"/debs/linux-source-"$MM"_*.deb)
TAR=$(dpkg-deb -c "$SDEB" | awk '{print $6}' | grep "/usr/src/linux-source-$MM.tar" | head -1)
case $TAR in *.xz) Z="xz -dc -T2" ;; *.bz2) Z="bzip2 -dc" ;; *) Z=cat ;; esac
dpkg-deb --fsys-tarfile "$SDEB" | tar -xO "$TAR" | $Z |
	tar -x -C "$B" --wildcards "linux-source-$MM/drivers/infiniband/sw/siw/*" ||
	fail "no drivers/infiniband/sw/siw in linux-source-$MM"
M=$B/linux-source-$MM/drivers/infiniband/sw/siw
# the compiler the kernel was built with (.kernelvariables: gcc-12 for 6.1, gcc-14 for 6.12): the
# host's, else (a release root's kernel) the release root's, through ci/release-root.sh, which
# binds this checkout, and so the work dir under it, at its own path
CC=$(sed -n 's/^CC = .*\(gcc-[0-9][0-9]*\).*/\1/p' "$H/.kernelvariables" 2>/dev/null | head -1)
RUN=()
if [ -n "$CC" ] && ! command -v "$CC" > /dev/null; then
	ROOT=${RPCRDMA_ROOTS:-/var/cache/rpcrdma-roots}/${RPCRDMA_VM_RELEASE:-bookworm}
	REPO=$(cd "$HERE/../.." && pwd -P)
	case "$(cd "$B" && pwd -P)/" in "$REPO"/*) ;; *) fail "$CC is not here, and $W is outside the checkout" ;; esac
	[ -x "$ROOT/usr/bin/$CC" ] || fail "$KV was built with $CC, which neither this host nor $ROOT has"
	RUN=("$HERE/../release-root.sh" "${RPCRDMA_VM_RELEASE:-bookworm}" --)
fi
log "building siw.ko for $KV${RUN:+ in the ${RPCRDMA_VM_RELEASE:-} root} ($CC)"
# no BTF for the module: 6.12's modfinal would want pahole, and the debug info is stripped anyway
"${RUN[@]}" make -C "$H" M="$M" CONFIG_RDMA_SIW=m CONFIG_DEBUG_INFO_BTF_MODULES= modules \
	> "$B/make.log" 2>&1 ||
	{ tail -20 "$B/make.log" >&2; fail "make modules failed (see above)"; }
vm=$(modinfo -F vermagic "$M/siw.ko" 2>/dev/null | awk '{print $1}')
[ "$vm" = "$KV" ] || fail "siw.ko has vermagic '$vm', not $KV"
# the debug info is 5 MB of the initramfs for nothing
strip --strip-debug -o "$D/siw.ko" "$M/siw.ko" || fail "strip failed"
echo "built from linux-source-$MM $VER against linux-headers-$KV" > "$D/origin"
rm -rf "$B"
log "siw.ko built ($(cat "$D/origin"))"
echo "$D/siw.ko"

#!/bin/sh
# Build the Debian package rpcrdma_<version>-<rev>+<dist>_<arch>.deb (CPack
# DEB, see packaging/CMakeLists.txt) and print its path on the last line.
#   ci/package.sh [BUILD_DIR]            for this machine's ganesha; default build-pkg
#   ci/package.sh RELEASE [BUILD_DIR]    for RELEASE; default build-rel-RELEASE
# RELEASE is one of
#   bookworm            Debian 12, nfs-ganesha 4.3: built here (this machine)
#   bookworm-backports  Debian 12 + backports, nfs-ganesha 5.9: built in its
#                       root (ci/release-root.sh)
#   trixie              Debian 13, nfs-ganesha 6.5: built in its root
# The revision and file name carry the release (+deb12, +deb12bpo, +deb13).
# An existing build directory is reused as it is configured (bench/run.sh
# --release uses the same build-rel-RELEASE); a Debug one gives a package
# without fortified calls (lintian warns).
# Depends (nfs-ganesha major.minor, the libntirpc runtime package) and the
# drop-in's directory come from the configured build: the host adapter that
# src/plugin/CMakeLists.txt selects from the installed libntirpc, and that
# root's installed packages (RPCRDMA_GANESHA_VERSION, RPCRDMA_NTIRPC_PACKAGE,
# RPCRDMA_SYSTEMD_UNITDIR override them), so a build in a root pins its release.
set -eu
cd "$(dirname "$0")/.."
jobs=${JOBS:-2}

# The release this machine is (bookworm on the CI host), from apt's view of
# nfs-ganesha: a backports version means bookworm-backports.
host_release() {
	. /etc/os-release
	v=$(dpkg-query -W -f '${Version}' nfs-ganesha 2>/dev/null || true)
	case $v in
	*~bpo*) echo "${VERSION_CODENAME:-}-backports" ;;
	*) echo "${VERSION_CODENAME:-}" ;;
	esac
}

rel=
case ${1:-} in
bookworm | bookworm-backports | trixie)
	rel=$1
	shift
	;;
esac
if [ -n "$rel" ]; then
	B=${1:-build-rel-$rel}
	if [ "$rel" != "$(host_release)" ]; then
		# In that release's root: this script again, without the release.
		out=$(ci/release-root.sh "$rel" -- env JOBS="$jobs" ci/package.sh "$B") ||
			{ echo "$out"; exit 1; }
		echo "$out" | tail -1
		exit 0
	fi
else
	B=${1:-build-pkg}
fi

if [ ! -f "$B/CMakeCache.txt" ]; then
	cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRPCRDMA_TESTS=OFF >/dev/null
fi
# Only what the package holds (cpack's install then builds nothing else).
cmake -B "$B" -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON >/dev/null
if grep -q '^CMAKE_BUILD_TYPE:STRING=Debug$' "$B/CMakeCache.txt"; then
	echo "package.sh: $B is a Debug build: the package has no fortified calls" >&2
fi
cmake --build "$B" -j"$jobs" --target rpcrdma_ganesha rpcrdma_core rpcrdma-stat \
	rpcrdma_package_docs >&2
rm -f "$B"/packages/rpcrdma_*.deb
(cd "$B" && cpack -G DEB >/dev/null)
deb=$(ls "$B"/packages/rpcrdma_*.deb)
dpkg-deb -I "$deb" | sed -n 's/^ \(Package\|Version\|Depends\):/  \1:/p' >&2
echo "$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")"

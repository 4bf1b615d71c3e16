#!/bin/sh
# Build the Debian package rpcrdma_<version>-1_<arch>.deb (CPack DEB, see
# packaging/CMakeLists.txt) and print its path on the last line.
#   ci/package.sh [BUILD_DIR]    default build-pkg (a release build, no tests)
# An existing build directory (e.g. build/) is reused as it is configured;
# a Debug one gives a package without fortified calls (lintian warns).
# Depends (nfs-ganesha major.minor, the libntirpc runtime package) and the
# drop-in's directory come from the configured build: packaging/CMakeLists.txt
# reads them from this machine's installed nfs-ganesha and libntirpc
# (RPCRDMA_GANESHA_VERSION, RPCRDMA_NTIRPC_PACKAGE, RPCRDMA_SYSTEMD_UNITDIR
# override them), so a build in another release's root pins that release.
set -eu
cd "$(dirname "$0")/.."
B=${1:-build-pkg}
jobs=${JOBS:-2}

if [ ! -f "$B/CMakeCache.txt" ]; then
	cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRPCRDMA_TESTS=OFF >/dev/null
fi
if grep -q '^CMAKE_BUILD_TYPE:STRING=Debug$' "$B/CMakeCache.txt"; then
	echo "package.sh: $B is a Debug build: the package has no fortified calls" >&2
fi
cmake --build "$B" -j"$jobs"
rm -f "$B"/packages/rpcrdma_*.deb
(cd "$B" && cpack -G DEB >/dev/null)
deb=$(ls "$B"/packages/rpcrdma_*.deb)
dpkg-deb -I "$deb" | sed -n 's/^ \(Package\|Version\|Depends\):/  \1:/p' >&2
echo "$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")"

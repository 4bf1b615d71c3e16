#!/bin/sh
# Build the Debian package rpcrdma_<version>-1_<arch>.deb (CPack DEB, see
# packaging/CMakeLists.txt) and print its path on the last line.
#   ci/package.sh [BUILD_DIR]    default build-pkg (a release build, no tests)
# An existing build directory (e.g. build/) is reused as it is configured.
set -eu
cd "$(dirname "$0")/.."
B=${1:-build-pkg}
jobs=${JOBS:-2}

if [ ! -f "$B/CMakeCache.txt" ]; then
	cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRPCRDMA_TESTS=OFF >/dev/null
fi
cmake --build "$B" -j"$jobs"
rm -f "$B"/packages/rpcrdma_*.deb
(cd "$B" && cpack -G DEB >/dev/null)
deb=$(ls "$B"/packages/rpcrdma_*.deb)
dpkg-deb -I "$deb" | sed -n 's/^ \(Package\|Version\|Depends\):/  \1:/p' >&2
echo "$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")"

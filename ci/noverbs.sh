#!/bin/sh
# Shows that -DRPCRDMA_WITH_VERBS=OFF needs no rdma-core development files:
# builds everything into build-noverbs with stand-ins for the libibverbs and
# librdmacm headers that stop the compiler (#error) ahead of the real ones,
# checks that no link line names either library, then runs the tests that do
# not need a verbs device. Usage: ci/noverbs.sh [jobs] [ctest label regex]
# [build folders: all by default; e.g. "src/fabric tests/codec" builds what
# those folders define and what it needs (Unix Makefiles)]
set -eu
cd "$(dirname "$0")/.."
jobs=${1:-$(nproc 2>/dev/null || echo 2)}
labels=${2:-codec|transport|fabric|ulb|soak|plugin}
dirs=${3:-}
b=build-noverbs
poison=$PWD/$b/poison-include
mkdir -p "$poison/infiniband" "$poison/rdma"
for h in infiniband/verbs.h rdma/rdma_cma.h; do
	echo "#error \"$h included in a build with RPCRDMA_WITH_VERBS=OFF\"" >"$poison/$h"
done
cmake -S . -B $b -DCMAKE_BUILD_TYPE=Debug -DRPCRDMA_LTO=OFF -DRPCRDMA_WITH_VERBS=OFF \
	-DCMAKE_C_FLAGS="-I$poison" -DCMAKE_CXX_FLAGS="-I$poison" >/dev/null
if [ -z "$dirs" ]; then
	cmake --build $b -j"$jobs"
else
	for d in $dirs; do
		make -s -C "$b/$d" -j"$jobs"
	done
fi
if grep -rlE 'ibverbs|rdmacm' $b --include=link.txt; then
	echo "a target links libibverbs/librdmacm in a build without verbs"
	exit 1
fi
echo "no target includes the rdma-core headers or links their libraries"
ctest --test-dir $b --output-on-failure -j"$jobs" --timeout 300 -L "$labels"

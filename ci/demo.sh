#!/bin/sh
# The main job (README): install dependencies, build, then
#   1. the wire codec decoding the message shapes the Linux NFS/RDMA client
#      sends, and the answers a responder gives to hostile ones;
#   2. real ganesha with the rpcrdma plugin on the soft fabric, and a demo
#      NFS client that mounts (NFSv4.1 and NFSv3), writes, reads back and
#      verifies a file over RPC-over-RDMA, then shows the server's counters
#      (ci/demo-ganesha.sh).
#
# BUILD names the build folder (default build). On another ganesha release,
# in its root (ci/release-root.sh):
#   ci/release-root.sh trixie -- env BUILD=build-trixie ci/demo.sh
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD
[ "${RPCRDMA_SKIP_DEPS:-0}" = 1 ] || ./ci/install-deps.sh
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
echo "== RPC-over-RDMA v1 headers, decoded (tools/rr-hdr-dump)"
./"$BUILD"/tools/rr-hdr-dump <<'HEX'
0a0b0c0d 00000001 00000080 00000000 00000000 00000000 00000000
11223344 00000001 00000080 00000000 00000000 00000001 00000002 00000100 00008000 11223344 00001000 00000101 00000004 11223344 00002000 00000000 00000000
55667788 00000001 00000040 00000000 00000001 00000094 00002222 00010000 00000000 00004000 00000000 00000000 00000000
01020304 00000001 00000020 00000001 00000001 00000000 000000a1 00001000 00000000 00010000 00000000 00000000 00000001 00000001 000000b2 00002000 00000001 00000000
deadbeef 00000002 00000080 00000000 00000000 00000000 00000000
cafef00d 00000001 00000080 00000002
600dcafe 00000001 00000020 00000000 00000001 00000010 00000007 00001000 00000000 00001000 00000001 00000010 00000007 00001000 00000000 00001800 00000000 00000000 00000000
HEX

echo
echo "== ganesha + rpcrdma plugin (soft fabric) with the demo NFS client"
exec ci/demo-ganesha.sh "${RPCRDMA_DEMO_MIB:-8}"

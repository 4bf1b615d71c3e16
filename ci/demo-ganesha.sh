#!/bin/sh
# ganesha + the rpcrdma plugin on the soft fabric, end to end: start rpcbind
# (if needed) and the stock ganesha.nfsd with the plugin preloaded in a temp
# dir (MEM export /mem, non-default ports), run tools/rpcrdma_demo_client
# (NFSv4.1 and NFSv3 over RPC-over-RDMA: write, read back, checksum, server
# counters), stop ganesha. Exit status: the demo's (non-zero on any failure;
# 77, which ctest reads as a skip, when there is no ganesha.nfsd to start).
#
#   ci/demo-ganesha.sh [MiB]          (default 8; build/ must be built)
# Env: BUILD (default build), GANESHA_NFSD, RPCRDMA_PLUGIN_SO, KEEP_TMP=1;
# RPCRDMA_SOFT_PROFILE reaches ganesha and the client alike (ctest runs the
# demo so under each device profile: PROFILE:Demo, tests/plugin).
set -eu
cd "$(dirname "$0")/.."
MIB=${1:-8}
BUILD=${BUILD:-build}
GANESHA=${GANESHA_NFSD:-/usr/bin/ganesha.nfsd}
PLUGIN=${RPCRDMA_PLUGIN_SO:-$BUILD/src/plugin/librpcrdma_ganesha.so}
CLIENT=$BUILD/tools/rpcrdma_demo_client

[ -x "$GANESHA" ] || { echo "demo-ganesha: no $GANESHA" >&2; exit 77; }
for f in "$PLUGIN" "$CLIENT"; do
	[ -e "$f" ] || { echo "demo-ganesha: missing $f (build first)" >&2; exit 1; }
done

# rpcbind must answer before ganesha starts (it registers NFS and MOUNT).
if ! rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then
	mkdir -p /run/rpcbind
	rpcbind -w
	sleep 0.5
fi

DIR=$(mktemp -d /tmp/rpcrdma-demo.XXXXXX)
PID=
cleanup() {
	if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
		kill -TERM "$PID" 2>/dev/null || true
		i=0
		while kill -0 "$PID" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
		kill -KILL "$PID" 2>/dev/null || true
		wait "$PID" 2>/dev/null || true
	fi
	[ "${KEEP_TMP:-0}" = 1 ] && echo "demo-ganesha: kept $DIR" || rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

# Ports: four the kernel gives as free for TCP and UDP (ganesha binds both).
# A guessed one can be taken, by a socket in TIME_WAIT too (ctest runs this
# after suites that open thousands of connections); the old guess, a base
# from our pid, only where python3 cannot ask.
PORTS=$(python3 - 2>/dev/null <<'EOF'
import socket
held, ports = [], []
while len(ports) < 4:
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.bind(("", 0))
    p = t.getsockname()[1]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("", p))
    except OSError:
        t.close()
        continue
    held += [t, u]
    ports.append(p)
print(*ports)
EOF
) || PORTS=
if [ -n "$PORTS" ]; then
	set -- $PORTS
	NFS_PORT=$1 MNT_PORT=$2 NLM_PORT=$3 RQ_PORT=$4
else
	BASE=$((30000 + ($$ % 5000) * 4))
	NFS_PORT=$BASE MNT_PORT=$((BASE + 1)) NLM_PORT=$((BASE + 2)) RQ_PORT=$((BASE + 3))
fi
# The key table lives in the core module beside the preloaded library.
STATS_LINE=
cat "$PLUGIN" "$(dirname "$PLUGIN")/librpcrdma_core.so" 2>/dev/null | strings |
	grep -q '^Stats_Socket$' && STATS_LINE="Stats_Socket = $DIR/stats.sock;"
cat >"$DIR/ganesha.conf" <<EOF
NFS_CORE_PARAM {
	NFS_Port = $NFS_PORT; MNT_Port = $MNT_PORT; NLM_Port = $NLM_PORT; Rquota_Port = $RQ_PORT;
	Protocols = 3, 4; Enable_NLM = false; Enable_RQUOTA = false;
	# ganesha 6 stops without CAP_SYS_RESOURCE otherwise (containers, CI);
	# 4.3 and 5.9 only warn that they do not know the key
	allow_set_io_flusher_fail = true;
	MaxRPCSendBufferSize = 4194304; MaxRPCRecvBufferSize = 4194304;
}
NFSV4 { Graceless = true; Lease_Lifetime = 10; Grace_Period = 10; RecoveryRoot = $DIR/recov; }
EXPORT {
	Export_Id = 1; Path = /mem; Pseudo = /mem; Access_Type = RW; Squash = No_Root_Squash;
	Protocols = 3, 4; MaxRead = 4194304; MaxWrite = 4194304;
	FSAL { Name = MEM; }
}
# FSAL_MEM keeps file data only up to Inode_Size bytes per file (default 0).
MEM { Inode_Size = 2097152; }
RDMA { Enable = true; Fabric = soft; Soft_Socket = $DIR/rdma.sock; Credits = 32; $STATS_LINE }
LOG { Default_Log_Level = EVENT; }
EOF
mkdir -p "$DIR/recov"

echo "demo-ganesha: starting $GANESHA with $PLUGIN (soft fabric, $DIR)"
LD_PRELOAD=$(realpath "$PLUGIN") "$GANESHA" -F -f "$DIR/ganesha.conf" -L "$DIR/ganesha.log" \
	-p "$DIR/ganesha.pid" >"$DIR/stderr.log" 2>&1 &
PID=$!
i=0
until grep -q "NFS SERVER INITIALIZED" "$DIR/ganesha.log" 2>/dev/null &&
	grep -q "NFS over RDMA listening" "$DIR/ganesha.log" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 200 ] || ! kill -0 "$PID" 2>/dev/null; then
		echo "demo-ganesha: ganesha did not come up" >&2
		cat "$DIR/stderr.log" >&2
		tail -20 "$DIR/ganesha.log" >&2
		exit 1
	fi
	sleep 0.1
done
if grep -q ":CONFIG :CRIT" "$DIR/ganesha.log"; then
	echo "demo-ganesha: ganesha rejected the config" >&2
	grep ":CONFIG :CRIT" "$DIR/ganesha.log" >&2
	exit 1
fi
grep "rpcrdma: NFS over RDMA listening" "$DIR/ganesha.log"

STATS_ARG=
[ -n "$STATS_LINE" ] && STATS_ARG="--stats $DIR/stats.sock"
rc=0
# shellcheck disable=SC2086
"$CLIENT" --rdma "unix:$DIR/rdma.sock" --host 127.0.0.1 --mnt-port "$MNT_PORT" \
	--nfs-port "$NFS_PORT" --mib "$MIB" --file-mib 1 $STATS_ARG || rc=$?
kill -0 "$PID" 2>/dev/null || { echo "demo-ganesha: ganesha died" >&2; rc=1; }
echo "demo-ganesha: exit $rc"
exit $rc

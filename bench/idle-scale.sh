#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/idle-scale.sh - bench E at scale: PEERS client processes, each from
# its own loopback address (127.0.0.2, .3, ...), hold PER_PEER idle
# connections each (one NULL call, then nothing) to one bench_engine over the
# soft fabric's tcp; the engine's registered bytes, RSS and threads are read
# before and with them all connected. One markdown row on stdout.
#
#   bench/idle-scale.sh BUILD_DIR PEERS PER_PEER [srq|plain] [BUDGET]
#
# BUDGET: Receive_Memory_Budget in bytes (default: the engine's, an eighth
# of RAM; 0 = none). The per-peer cap is lifted; Max_Connections is set to
# the total. Needs 2 file descriptors per connection in the engine (socket,
# completion channel) and as many in the clients: the script raises its
# soft RLIMIT_NOFILE to the hard one and says so when that is too small.
set -u
B=${1:?build dir}
PEERS=${2:?peers}
PER=${3:?connections per peer}
MODE=${4:-srq}
BUDGET=${5:-}
ENG=$B/bench/nfsbench/bench_engine
NB=$B/bench/nfsbench/nfsbench
N=$((PEERS * PER))
W=$(mktemp -d /tmp/idle-scale.XXXXXX)
PORT=$((30000 + RANDOM % 20000))
HOLD=${HOLD:-600}

ulimit -n "$(ulimit -Hn)" 2>/dev/null
need=$((2 * N + 64))
if [ "$(ulimit -n)" -lt "$need" ]; then
	echo "| $MODE | $N | - | - | - | - | - | - | RLIMIT_NOFILE $(ulimit -n) < $need needed |"
	exit 1
fi

args=(--max-conns $((N + 16)) --max-per-peer 0)
[ "$MODE" = srq ] && args+=(--srq 1)
[ -n "$BUDGET" ] && args+=(--budget "$BUDGET")
"$ENG" "tcp:127.0.0.1:$PORT" "${args[@]}" >"$W/eng.out" 2>"$W/eng.err" &
ep=$!
for _ in $(seq 100); do grep -q READY "$W/eng.out" && break; sleep 0.1; done

snap() { # snap FILE: one JSON line from the engine
	local before
	before=$(grep -c '^{' "$W/eng.out")
	kill -USR1 "$ep"
	for _ in $(seq 100); do
		[ "$(grep -c '^{' "$W/eng.out")" -gt "$before" ] && break
		sleep 0.1
	done
	grep '^{' "$W/eng.out" | tail -1 >"$1"
}
snap "$W/s0.json"

t0=$(date +%s.%N)
cps=()
for p in $(seq "$PEERS"); do
	RPCRDMA_SOFT_SOURCE_ADDR=127.0.0.$((p + 1)) "$NB" --rdma "tcp:127.0.0.1:$PORT" \
		--idle "$PER" --hold "$HOLD" >"$W/c$p.out" 2>"$W/c$p.err" &
	cps+=($!)
done
for _ in $(seq 6000); do
	done_n=$(cat "$W"/c*.out 2>/dev/null | grep -c idle_conns)
	[ "$done_n" -ge "$PEERS" ] && break
	alive=0
	for c in "${cps[@]}"; do kill -0 "$c" 2>/dev/null && alive=1; done
	[ $alive = 0 ] && break
	sleep 0.1
done
t1=$(date +%s.%N)
sleep 2 # the soft fabric's I/O threads end after 500 ms idle
snap "$W/s1.json"
kill "${cps[@]}" 2>/dev/null
wait "${cps[@]}" 2>/dev/null
kill "$ep" 2>/dev/null
wait "$ep" 2>/dev/null

python3 - "$W" "$MODE" "$N" "$t0" "$t1" <<'EOF'
import json, sys, glob
w, mode, n, t0, t1 = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
a = json.load(open(w + "/s0.json")); b = json.load(open(w + "/s1.json"))
conns = b["conns"] - a["conns"]
cli = [json.loads(l) for f in glob.glob(w + "/c*.out") for l in open(f) if l.startswith("{")]
refused = sum(c["refused"] for c in cli)
reg = b["pinned_bytes"] - a["pinned_bytes"]
rss = (b["rss_kib"] - a["rss_kib"]) * 1024
per = lambda v: f"{v // conns:,}" if conns else "-"
print(f"| {mode} | {n:,} | {conns:,} | {refused:,} | {reg:,} | {per(reg)} | {rss:,} | {per(rss)} "
      f"| {b['threads']} | {t1 - t0:.1f} s |")
EOF
rm -rf "$W"

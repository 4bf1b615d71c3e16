#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/evt-threads.sh [--secs S] [--rounds R] [--threads "1 2 4 8"] [--conns N]
#                      [--procs P] [--qd Q] [--srq]
# NULL and READ 4 KiB calls/s against ganesha + rpcrdma (soft fabric, FSAL
# MEM) at N connections (default 64) with Event_Threads = each of --threads:
# P nfsbench processes (default 4) of N/P connections each, every connection
# kept at Q calls in flight (default 4); --srq: with Use_SRQ (a shared
# receive pool per event thread). Rounds are interleaved (every
# thread count once per round, a fresh ganesha for each) and the median of
# the rounds is reported, with the load averages before and after each
# measurement, and the CPU the event threads and the whole ganesha process
# used meanwhile (% of one core; set-up and warm-up included): the machine is
# shared, and the clients, the soft fabric's
# threads (a reader and a writer per busy connection) and ganesha's workers
# all run on the same cores as the event threads. Prints a markdown table
# (bench/RESULTS.md, "Event threads") and keeps the raw JSON in the work
# directory it names. Needs root (ganesha.nfsd) and a build in
# $RPCRDMA_BUILD (default build/) with nfsbench and rpcrdma_ganesha.
set -u
SECS=3 ROUNDS=3 THREADS="1 2 4 8" CONNS=64 PROCS=4 QD=4 SRQ=false
while [ $# -gt 0 ]; do
	case "$1" in
	--secs) SECS=$2; shift ;;
	--rounds) ROUNDS=$2; shift ;;
	--threads) THREADS=$2; shift ;;
	--conns) CONNS=$2; shift ;;
	--procs) PROCS=$2; shift ;;
	--qd) QD=$2; shift ;;
	--srq) SRQ=true ;;
	*) echo "usage: bench/evt-threads.sh [--secs S] [--rounds R] [--threads LIST] [--conns N] [--procs P] [--qd Q] [--srq]" >&2; exit 2 ;;
	esac
	shift
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
B=$(bench_builddir)
NB=$B/bench/nfsbench/nfsbench
PLUGIN=$B/src/plugin/librpcrdma_ganesha.so
W=$(mktemp -d "${RPCRDMA_BENCH_TMP:-/tmp}/rpcrdma-evt.XXXXXX")
make -C "$B" -j"$(nproc)" nfsbench rpcrdma_ganesha >"$W/make.log" 2>&1 ||
	{ cat "$W/make.log" >&2; exit 1; }
bench_host_setup
PER=$((CONNS / PROCS))
[ $((PER * PROCS)) -eq "$CONNS" ] || { echo "--conns must be a multiple of --procs" >&2; exit 2; }

GPID=
cleanup() { [ -z "$GPID" ] || { kill "$GPID" 2>/dev/null; wait "$GPID" 2>/dev/null; }; }
trap cleanup EXIT

# start DIR PORT THREADS: ganesha (bench/lib.sh) with Event_Threads = THREADS.
start() { bench_ganesha "$1" "$2" "Event_Threads = $3; Use_SRQ = $SRQ;"; }

# ticks PID [PREFIX]: user + system clock ticks of the process, its exited
# threads included (the soft provider's readers and writers come and go); with
# PREFIX, of its live threads whose name starts with it.
ticks() {
	local t=0 f
	[ -n "${2:-}" ] || { awk '{ print $14 + $15 }' "/proc/$1/stat"; return; }
	for f in /proc/"$1"/task/*; do
		[ -z "${2:-}" ] || case $(cat "$f/comm" 2>/dev/null) in "$2"*) ;; *) continue ;; esac
		t=$((t + $(awk '{ print $14 + $15 }' "$f/stat" 2>/dev/null || echo 0)))
	done
	echo $t
}
HZ=$(getconf CLK_TCK)

BASE=$((30000 + (RANDOM % 2000) * 10))
n=0
echo "cores: $(nproc); $CONNS connections ($PROCS processes x $PER), qd $QD each, $SECS s, $ROUNDS rounds, Use_SRQ $SRQ" >&2
for r in $(seq "$ROUNDS"); do
	for t in $THREADS; do
		d=$W/r$r-t$t
		port=$((BASE + n * 10))
		n=$((n + 1))
		start "$d" "$port" "$t" || exit 1
		for op in null read4k; do
			la0=$(cut -d' ' -f1 /proc/loadavg)
			ev0=$(ticks "$GPID" rpcrdma-event) all0=$(ticks "$GPID") t0=$(date +%s.%N)
			pids=()
			for p in $(seq "$PROCS"); do
				timeout 120 "$NB" --rdma "unix:$d/rdma.sock" --mount 127.0.0.1:$((port + 1)) \
					--op "$op" --conns "$PER" --qd "$QD" --secs "$SECS" --warmup 20 \
					>"$d/$op.$p.json" 2>"$d/$op.$p.err" &
				pids+=($!)
			done
			ok=1
			for p in "${pids[@]}"; do wait "$p" || ok=0; done
			la1=$(cut -d' ' -f1 /proc/loadavg)
			ev1=$(ticks "$GPID" rpcrdma-event) all1=$(ticks "$GPID") t1=$(date +%s.%N)
			# CPU over the whole run (set-up and warm-up included), % of one core
			evcpu=$(awk -v a="$ev0" -v b="$ev1" -v s="$t0" -v e="$t1" -v hz="$HZ" 'BEGIN { printf "%.0f", (b - a) / hz / (e - s) * 100 }')
			gcpu=$(awk -v a="$all0" -v b="$all1" -v s="$t0" -v e="$t1" -v hz="$HZ" 'BEGIN { printf "%.0f", (b - a) / hz / (e - s) * 100 }')
			ops=$(cat "$d/$op".*.json | python3 -c '
import json, sys
print(round(sum(json.loads(l)["ops_per_s"] for l in sys.stdin if l.startswith("{"))))')
			[ $ok = 1 ] || echo "round $r threads $t $op: a client failed ($d)" >&2
			echo "{\"round\":$r,\"threads\":$t,\"op\":\"$op\",\"ops_per_s\":$ops,\"ok\":$ok,\"load_before\":$la0,\"load_after\":$la1,\"event_cpu\":$evcpu,\"ganesha_cpu\":$gcpu}" |
				tee -a "$W/evt.jsonl" >&2
		done
		kill "$GPID" 2>/dev/null
		wait "$GPID" 2>/dev/null
		GPID=
	done
done
python3 - "$W/evt.jsonl" "$THREADS" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
threads = [int(t) for t in sys.argv[2].split()]
def med(t, op):
    v = [r["ops_per_s"] for r in rows if r["threads"] == t and r["op"] == op and r["ok"]]
    return statistics.median(v) if v else 0
def medk(t, op, k):
    v = [r[k] for r in rows if r["threads"] == t and r["op"] == op and r["ok"]]
    return statistics.median(v) if v else 0
def loads(t, op):
    v = [r for r in rows if r["threads"] == t and r["op"] == op]
    return ", ".join("%.1f-%.1f" % (r["load_before"], r["load_after"]) for r in v)
base = {op: med(threads[0], op) for op in ("null", "read4k")}
print("| Event_Threads | NULL calls/s | x | event threads' CPU | ganesha's CPU | READ 4 KiB calls/s | x | event threads' CPU | ganesha's CPU | load averages (1 min, before-after, each round) NULL; READ |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for t in threads:
    n, r = med(t, "null"), med(t, "read4k")
    print("| %d | %d | %.2f | %d %% | %d %% | %d | %.2f | %d %% | %d %% | %s; %s |" % (t, n, n / base["null"] if base["null"] else 0,
          medk(t, "null", "event_cpu"), medk(t, "null", "ganesha_cpu"),
          r, r / base["read4k"] if base["read4k"] else 0,
          medk(t, "read4k", "event_cpu"), medk(t, "read4k", "ganesha_cpu"),
          loads(t, "null"), loads(t, "read4k")))
EOF
echo "raw: $W/evt.jsonl" >&2

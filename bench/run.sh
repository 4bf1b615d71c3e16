#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/run.sh [--quick|--full] [--only SECTIONS] - the rpcrdma benchmarks;
# writes bench/RESULTS.md. --only (e.g. "A" or "A,D") runs just those
# sections and writes the report into the work directory instead, so a partial
# run never replaces the full RESULTS.md.
#
#   A  server instructions per operation (callgrind, deterministic), by layer,
#      RPC-over-RDMA on the soft fabric beside ganesha's own TCP transport
#   B  throughput: 1 MiB READ/WRITE MB/s, 4 KiB READ/WRITE ops/s at queue
#      depths 1/16/64, RDMA (soft) and TCP interleaved, median of 3
#   C  registrations and payload copies per I/O from the plugin's counters
#   D  forward-channel credits 1..128 at queue depth 64 (engine alone)
#   E  idle connections 1/100/1000: registered memory and RSS per connection,
#      at the engine's default bounds, without and with a budget, and with a
#      shared receive queue (Use_SRQ); NULL calls/s at 16 busy connections,
#      SRQ vs per-connection receives, interleaved, median of the rounds
#   F  (--full only) the Linux kernel NFS/RDMA client in the rxe VM (ci/vm,
#      RPCRDMA_VM_ONLY=bench): dd/fio throughput against ganesha+rpcrdma and
#      against knfsd in one boot, ratio ganesha/knfsd (about 15 minutes)
#
# --release RELEASE (bookworm, bookworm-backports, trixie; ci/package.sh
# names them) runs the same inside that release's root (ci/release-root.sh)
# against its ganesha, with a build for it in $RPCRDMA_BUILD (default
# build-rel-RELEASE, the one `ci/package.sh RELEASE` uses); the report and
# raw data then go to a bench/out/rpcrdma-bench.* directory, and the
# committed bench/RESULTS.md is left alone.
#
# Needs root (ganesha.nfsd), valgrind, python3, the Debian nfs-ganesha (4.3;
# 5.9 and 6.5 in their roots) with FSAL MEM. Builds what it needs in
# $RPCRDMA_BUILD (default build/).
# Quick mode (CI) takes about two minutes; full mode a few. Every figure is a
# median or a ratio measured in the same run; nothing here asserts a time.
# --profile NAME runs every section on that soft-provider device profile
# (RPCRDMA_SOFT_PROFILE for ganesha, the engine and the clients alike;
# docs/devices.md lists them: e.g. min, cxgb4); the report's header names it.
# RPCRDMA_BENCH_RDMA_EXTRA adds keys to the RDMA block (e.g. "Exclude_Exports = 99;"
# to measure the check of every handle that setting turns on).
# Exit status: non-zero when a run failed (an error reply, a zero credit
# grant, a protocol violation, a stall), never because of a figure.
set -u
MODE=quick
ONLY=ABCDEF
RELEASE=
ARGS=()
usage() { echo "usage: bench/run.sh [--quick|--full] [--only A,B,C,D,E,F] [--release RELEASE] [--profile NAME]" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) MODE=quick; ARGS+=("$1") ;;
	--full) MODE=full; ARGS+=("$1") ;;
	--release) [ $# -ge 2 ] || usage; RELEASE=$2; shift ;;
	--profile) [ $# -ge 2 ] || usage; export RPCRDMA_SOFT_PROFILE=$2; shift ;;
	--only) [ $# -ge 2 ] || usage; ONLY=$(echo "$2" | tr -cd 'ABCDEFabcdef' | tr a-f A-F); ARGS+=("$1" "$2"); shift ;;
	*) usage ;;
	esac
	shift
done
[ -n "$ONLY" ] || usage
# want X: is section X selected (B and C share one ganesha run)?
want() { case $ONLY in *"$1"*) return 0 ;; *) return 1 ;; esac; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "$RELEASE" ] && [ -z "${RPCRDMA_BENCH_RELEASE:-}" ]; then
	case $RELEASE in
	bookworm | bookworm-backports | trixie) ;;
	*) usage ;;
	esac
	# In the root: this script again, its work directory in the repository
	# (the root's /tmp goes with the run). F boots the VM from the host.
	mkdir -p "$ROOT/bench/out"
	exec "$ROOT/ci/release-root.sh" "$RELEASE" -- env RPCRDMA_BENCH_RELEASE="$RELEASE" \
		RPCRDMA_BUILD="${RPCRDMA_BUILD:-build-rel-$RELEASE}" \
		RPCRDMA_BENCH_TMP="$ROOT/bench/out" ${RPCRDMA_BENCH_OUT:+RPCRDMA_BENCH_OUT="$RPCRDMA_BENCH_OUT"} \
		${RPCRDMA_SOFT_PROFILE:+RPCRDMA_SOFT_PROFILE="$RPCRDMA_SOFT_PROFILE"} \
		bash "$ROOT/bench/run.sh" ${ARGS[@]+"${ARGS[@]}"}
fi
. "$ROOT/bench/lib.sh"
B=$(bench_builddir)
W=$(mktemp -d "${RPCRDMA_BENCH_TMP:-/tmp}/rpcrdma-bench.XXXXXX")
# RPCRDMA_BENCH_OUT: where the report goes (CI keeps the committed one intact)
OUT=${RPCRDMA_BENCH_OUT:-$ROOT/bench/RESULTS.md}
[ "$ONLY" = ABCDEF ] || OUT=$W/RESULTS.md
[ -z "${RPCRDMA_BENCH_RELEASE:-}" ] || OUT=${RPCRDMA_BENCH_OUT:-$W/RESULTS.md}
# Which ganesha this is (the report's header).
GVER=$(dpkg-query -W -f '${Version}' nfs-ganesha 2>/dev/null || echo unknown)
echo "{\"ganesha\":\"$GVER\",\"release\":\"${RPCRDMA_BENCH_RELEASE:-host}\",\"profile\":\"${RPCRDMA_SOFT_PROFILE:-}\"}" >"$W/host.json"
T0=$(date +%s)
NB=$B/bench/nfsbench/nfsbench
ENG=$B/bench/nfsbench/bench_engine
FABB=$B/bench/fabric/fab_bench
PLUGIN=$B/src/plugin/librpcrdma_ganesha.so
CGS=$ROOT/bench/tools/cgsplit.py
FAIL=0

if [ "$MODE" = quick ]; then
	N_SMALL=100 N_BIG=10 SECS=0.3 ROUNDS=3 FABSECS=0.2 CONNS="1 100 1000" HOLD=30
else
	N_SMALL=400 N_BIG=40 SECS=1.5 ROUNDS=3 FABSECS=1 CONNS="1 100 1000" HOLD=60
fi

log() { echo "[$(($(date +%s) - T0))s] $*" >&2; }
die() { log "FAILED: $*"; FAIL=1; }

PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	sleep 0.5
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
}
trap cleanup EXIT

# --- build -------------------------------------------------------------------
# Always (make is quick when nothing changed): binaries left from an older
# checkout would otherwise be measured as if they were this one.
log "building in $B"
[ -f "$B/CMakeCache.txt" ] || cmake -S "$ROOT" -B "$B" -DRPCRDMA_TESTS=OFF >"$W/cmake.log" 2>&1 ||
	{ cat "$W/cmake.log" >&2; exit 1; }
make -C "$B" -j"$(nproc)" nfsbench bench_engine fab_bench rpcrdma_ganesha \
	>"$W/make.log" 2>&1 || { cat "$W/make.log" >&2; exit 1; }
bench_host_setup

# Ports unlikely to collide with another bench or ganesha on this machine.
BASE=$((20000 + (RANDOM % 2000) * 10))

# start_ganesha DIR PORT [valgrind args...]: bench_ganesha (bench/lib.sh) with
# 64 credits and $RPCRDMA_BENCH_RDMA_EXTRA in the RDMA block; sets GPID.
start_ganesha() {
	local d=$1 port=$2 rc=0
	shift 2
	bench_ganesha "$d" "$port" "Credits = 64; ${RPCRDMA_BENCH_RDMA_EXTRA:-}" "$@" || rc=1
	PIDS+=("$GPID")
	return $rc
}
stop_pid() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'; }

# cpu_ticks PID: user + system clock ticks of the process, its exited threads included.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

stats_json() { # stats_json SOCKET -> the plugin's JSON on stdout
	python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); d = b""
while True:
    b = s.recv(65536)
    if not b: break
    d += b
sys.stdout.write(d.decode())' "$1"
}

# nb NAME ARGS...: run nfsbench, keep its JSON line in $W/NAME.json, flag failures.
nb() {
	local name=$1
	shift
	if ! timeout 120 "$NB" "$@" >"$W/$name.json" 2>"$W/$name.err"; then
		die "nfsbench $* -> $(tail -c 300 "$W/$name.err") $(cat "$W/$name.json")"
	fi
	cat "$W/$name.json" >>"$W/all.jsonl"
}

OPS="null getattr read4k write4k read1m write1m"
# A also runs them as NFSv4.1 COMPOUNDs (SEQUENCE, PUTFH, the op): the
# per-call work of sessions, and of the plugin's NFSv4.1 paths.
A_OPS="$OPS v41getattr v41read4k v41write4k v41read1m v41write1m"
count_for() { case $1 in *1m) echo "$N_BIG" ;; *) echo "$N_SMALL" ;; esac; }

# --- A: callgrind -------------------------------------------------------------
HAVE_GANESHA=1
command -v ganesha.nfsd >/dev/null || { HAVE_GANESHA=0; log "no ganesha.nfsd: A, B (NFS) and C skipped"; }
HAVE_CG=1
command -v callgrind_control >/dev/null || { HAVE_CG=0; log "no valgrind: A skipped"; }
echo "{\"ganesha\":$HAVE_GANESHA,\"callgrind\":$HAVE_CG}" >"$W/have.json"

log "A: ganesha under callgrind"
CG=$W/cg
PA=$BASE
if ! want A; then
	log "A: not selected"
elif [ $HAVE_GANESHA = 0 ] || [ $HAVE_CG = 0 ]; then
	log "A: skipped"
# The soft fabric ends a connection's threads after 500 ms without traffic
# (src/fabric/fab_soft_idle.c). Under callgrind the pause before the measured
# calls outlasts that, and the first call would start them again inside the
# window: a thread's start-up (its free()s pass the plugin's interposer) in
# the per-call figures. A verbs device has no such threads, so A keeps them.
elif start_ganesha "$CG" "$PA" env RPCRDMA_SOFT_IDLE_MS="${RPCRDMA_SOFT_IDLE_MS:-600000}" \
	valgrind --tool=callgrind --callgrind-out-file="$CG/cg.out"; then
	cgp=$GPID
	dumpn=0
	# cg_mark NAME: dump the counters since the last zero into $CG/NAME.cg
	cg_dump() {
		callgrind_control -d "$cgp" >/dev/null 2>&1
		dumpn=$((dumpn + 1))
		for _ in $(seq 100); do [ -s "$CG/cg.out.$dumpn" ] && break; sleep 0.1; done
		sleep 0.2
		mv "$CG/cg.out.$dumpn" "$CG/$1.cg"
	}
	for op in $A_OPS; do
		n=$(count_for "$op")
		for tr in rdma tcp; do
			if [ $tr = rdma ]; then addr=(--rdma "unix:$CG/rdma.sock"); else addr=(--tcp 127.0.0.1:$PA); fi
			# One connection: set-up and warm-up, then the counters are zeroed,
			# N calls run, and the counters are dumped before it disconnects.
			name=$tr-$op
			rm -f "$W/$name.fifo"
			mkfifo "$W/$name.fifo"
			timeout 300 "$NB" "${addr[@]}" --mount 127.0.0.1:$((PA + 1)) --op "$op" \
				--count "$n" --qd 1 --warmup "$((n / 4 + 2))" --sync \
				<"$W/$name.fifo" >"$W/cg-$name.out" 2>"$W/cg-$name.err" &
			np=$!
			exec 7>"$W/$name.fifo"
			for _ in $(seq 600); do
				grep -q WARM "$W/cg-$name.out" && break
				kill -0 $np 2>/dev/null || break
				sleep 0.1
			done
			callgrind_control -z "$cgp" >/dev/null 2>&1
			t=$(date +%s.%N)
			echo go >&7
			for _ in $(seq 1200); do
				grep -q END "$W/cg-$name.out" && break
				kill -0 $np 2>/dev/null || break
				sleep 0.05
			done
			cg_dump "$name"
			echo "{\"name\":\"$name\",\"tr\":\"$tr\",\"op\":\"$op\",\"n\":$n,\"secs\":$(since "$t")}" >>"$W/cgruns.jsonl"
			echo bye >&7
			exec 7>&-
			wait $np || die "nfsbench (callgrind) $tr $op: $(tail -c 300 "$W/cg-$name.err")"
			grep '^{' "$W/cg-$name.out" >"$W/cg-$name.json"
		done
		log "A: $op done"
	done
	# Idle ganesha (no client), after the runs: reported beside the per-op
	# figures, not subtracted (it is lumpy: timers, reapers).
	callgrind_control -z "$cgp" >/dev/null 2>&1
	t=$(date +%s.%N)
	sleep 3
	cg_dump idle
	echo "{\"name\":\"idle\",\"secs\":$(since "$t")}" >>"$W/cgruns.jsonl"
	python3 "$CGS" "$CG"/*.cg >"$W/cgsplit.jsonl" || die "cgsplit"
	stop_pid "$cgp"
else
	die "ganesha under callgrind"
fi

# --- B + C: native ganesha -----------------------------------------------------
log "B: throughput (native ganesha, FSAL MEM)"
G=$W/native
PB=$((BASE + 5))
if ! want B && ! want C; then
	log "B, C: not selected"
elif [ $HAVE_GANESHA = 0 ]; then
	log "B, C: skipped"
elif start_ganesha "$G" "$PB"; then
	gp=$GPID
	want B || ROUNDS_B=0
	for r in $(seq "${ROUNDS_B:-$ROUNDS}"); do
		for op in read1m write1m read4k write4k; do
			for qd in 1 16 64; do
				if [ $((r % 2)) = 1 ]; then order="rdma tcp"; else order="tcp rdma"; fi
				for tr in $order; do
					if [ $tr = rdma ]; then addr=(--rdma "unix:$G/rdma.sock"); else addr=(--tcp 127.0.0.1:$PB); fi
					c0=$(cpu_ticks "$gp")
					nb "tp-$tr-$op-$qd-$r" "${addr[@]}" --mount 127.0.0.1:$((PB + 1)) \
						--op "$op" --qd "$qd" --secs "$SECS" --warmup 8
					echo "{\"ticks\":$(($(cpu_ticks "$gp") - c0)),\"hz\":$(getconf CLK_TCK)}" \
						>"$W/tp-$tr-$op-$qd-$r.cpu"
				done
			done
		done
		log "B: round $r done"
	done
	log "C: counters per I/O"
	want C || log "C: not selected"
	for op in $(want C && echo read4k write4k read1m write1m); do
		n=$(count_for "$op")
		# k=0 warms up (the Read sinks' slabs and the payload pool are
		# made on first use, server-wide): N and 2N then differ by N calls only
		for k in 0 1 2; do
			stats_json "$G/stats.sock" >"$W/ctr-$op-$k-before.json"
			nb "ctr-$op-$k" --rdma "unix:$G/rdma.sock" --mount 127.0.0.1:$((PB + 1)) \
				--op "$op" --qd 16 --count $((n * (k ? k : 1)))
			stats_json "$G/stats.sock" >"$W/ctr-$op-$k-after.json"
		done
	done
	stop_pid "$gp"
else
	die "native ganesha"
fi
if want B; then
	log "B: fab_bench"
	"$FABB" -s "$FABSECS" >"$W/fab_bench.txt" 2>&1 || die "fab_bench"
fi

# --- D: credits ----------------------------------------------------------------
log "D: credits"
want D || log "D: not selected"
for r in $(want D && seq "$ROUNDS"); do
	for g in 1 4 16 64 128; do
		sock=$W/eng-$g-$r.sock
		"$ENG" "unix:$sock" --credits "$g" >"$W/eng-$g-$r.out" 2>&1 &
		ep=$!
		PIDS+=("$ep")
		for _ in $(seq 50); do grep -q READY "$W/eng-$g-$r.out" && break; sleep 0.1; done
		nb "cr-$g-$r" --rdma "unix:$sock" --op null --qd 64 --secs "$SECS" --warmup 64
		stop_pid "$ep"
	done
done

# --- E: idle connections --------------------------------------------------------
log "E: idle connections"
# eng_snapshot PID FILE OUTPUT: SIGUSR1 makes bench_engine print one JSON line.
eng_snapshot() {
	local before
	before=$(grep -c '^{' "$3" 2>/dev/null)
	kill -USR1 "$1"
	for _ in $(seq 50); do
		[ "$(grep -c '^{' "$3")" -gt "$before" ] && break
		sleep 0.1
	done
	grep '^{' "$3" | tail -1 >"$2"
}
want E || log "E: not selected"
# "defaults": the engine's own bounds (Receive_Memory_Budget from the machine,
# Max_Connections_Per_Peer 64: every unix-socket peer is 127.0.0.1). The others
# lift the per-peer cap to measure memory per connection up to N: 0 is no
# budget; "srq": no budget, receives from the shared pool (bench_engine --srq 1).
for budget in $(want E && echo defaults 0 $((32 << 20)) srq); do
	for n in $CONNS; do
		tag=idle-$budget-$n
		sock=$W/$tag.sock
		case $budget in
		defaults) eargs=() ;;
		srq) eargs=(--srq 1 --budget 0 --max-per-peer 0) ;;
		*) eargs=(--budget "$budget" --max-per-peer 0) ;;
		esac
		"$ENG" "unix:$sock" "${eargs[@]}" --max-conns 4096 >"$W/$tag.out" 2>&1 &
		ep=$!
		PIDS+=("$ep")
		for _ in $(seq 50); do grep -q READY "$W/$tag.out" && break; sleep 0.1; done
		eng_snapshot "$ep" "$W/$tag-0.json" "$W/$tag.out"
		timeout $((HOLD + 60)) "$NB" --rdma "unix:$sock" --idle "$n" --hold "$HOLD" \
			>"$W/$tag.cli" 2>"$W/$tag.clierr" &
		cp=$!
		for _ in $(seq $((HOLD * 10))); do
			grep -q idle_conns "$W/$tag.cli" && break
			kill -0 "$cp" 2>/dev/null || break
			sleep 0.1
		done
		sleep 0.5
		eng_snapshot "$ep" "$W/$tag-n.json" "$W/$tag.out"
		grep -q idle_conns "$W/$tag.cli" || echo "{\"error\":\"$(tail -c 200 "$W/$tag.clierr" | tr -d '"\n')\"}" >"$W/$tag.cli"
		kill "$cp" 2>/dev/null
		wait "$cp" 2>/dev/null
		stop_pid "$ep"
		log "E: budget $budget, $n connections"
	done
done
# 16 busy connections (one nfsbench each, NULL at queue depth 16), shared pool
# vs receives of their own; the order alternates per round.
want E && log "E: 16 busy connections, SRQ vs per-connection receives"
for r in $(want E && seq "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then order="srq own"; else order="own srq"; fi
	for m in $order; do
		sock=$W/busy-$m-$r.sock
		"$ENG" "unix:$sock" --srq "$([ $m = srq ] && echo 1 || echo 0)" \
			>"$W/busy-$m-$r.out" 2>&1 &
		ep=$!
		PIDS+=("$ep")
		for _ in $(seq 50); do grep -q READY "$W/busy-$m-$r.out" && break; sleep 0.1; done
		cps=()
		for k in $(seq 16); do
			timeout 120 "$NB" --rdma "unix:$sock" --op null --qd 16 --secs "$SECS" \
				--warmup 16 >"$W/busy-$m-$r-$k.json" 2>"$W/busy-$m-$r-$k.err" &
			cps+=($!)
		done
		for cp in "${cps[@]}"; do wait "$cp" || die "busy $m round $r: $(tail -c 200 "$W/busy-$m-$r-"*.err | tr -d '\n')"; done
		eng_snapshot "$ep" "$W/busy-$m-$r-eng.json" "$W/busy-$m-$r.out"
		stop_pid "$ep"
	done
	log "E: busy round $r done"
done

# --- F: kernel client in the VM (--full only: ~15 min of qemu TCG) ---------------
if [ "$MODE" = full ] && want F; then
	log "F: kernel NFS/RDMA client in the rxe VM, knfsd vs ganesha+rpcrdma"
	VW=${RPCRDMA_VM_WORK:-$ROOT/ci/vm/work}
	RPCRDMA_VM_ONLY=bench RPCRDMA_BUILD_DIR=$B RPCRDMA_VM_WORK=$VW "$ROOT/ci/vm/run.sh" \
		>"$W/vmbench.log" 2>&1 || die "VM bench: $(grep -A5 'INTEROP VM: FAIL' "$W/vmbench.log")"
	cp "$VW/out/bench.json" "$W/vmbench.json" 2>/dev/null
	cp -r "$VW/out" "$W/vmbench-out" 2>/dev/null
fi

# --- report --------------------------------------------------------------------
log "writing $OUT"
python3 "$ROOT/bench/tools/report.py" "$W" "$MODE" \
	"bench/run.sh --$MODE${RPCRDMA_BENCH_RELEASE:+ --release $RPCRDMA_BENCH_RELEASE}${RPCRDMA_SOFT_PROFILE:+ --profile $RPCRDMA_SOFT_PROFILE}" \
	"$(($(date +%s) - T0))" >"$OUT" || die "report"
log "done in $(($(date +%s) - T0)) s; raw data in $W"
exit $FAIL

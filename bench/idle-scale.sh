#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/idle-scale.sh - bench E at scale: PEERS client processes, each from
# its own loopback address (127.0.0.2, .3, ...), hold PER_PEER idle
# connections each (one NULL call, then nothing) to one bench_engine over the
# soft fabric's tcp; the engine's registered bytes, RSS and threads are read
# before and with them all connected. One markdown row on stdout.
#
#   bench/idle-scale.sh BUILD_DIR PEERS PER_PEER [srq|plain] [BUDGET]
#   bench/idle-scale.sh BUILD_DIR PEERS PER_PEER timeout [IDLE_TIMEOUT]
#
# BUDGET: Receive_Memory_Budget in bytes (default: the engine's, an eighth
# of RAM; 0 = none). The per-peer cap is lifted; Max_Connections is set to
# the total. Needs 2 file descriptors per connection in the engine (socket,
# completion channel) and as many in the clients: the script raises its
# soft RLIMIT_NOFILE to the hard one and says so when that is too small.
#
# STORM=1: a reconnect storm instead (bench/RESULTS.md G). Every client
# process sends its PER_PEER connection requests at once (nfsbench --storm,
# all processes starting at the same wall-clock second) and makes one NULL
# call on each as soon as it is up. The row gives what the engine admitted
# and refused by cause (its counters), what the clients saw, the time from
# the first request to the last first Reply and the longest connect-to-
# established. MAX_CONNS and PER_PEER_CAP set Max_Connections and
# Max_Connections_Per_Peer (defaults: the total, and no per-peer cap).
# Columns: mode | Max_Connections / per-peer cap | N | admitted (engine) |
# up (clients) | refused (Max_Connections / per-peer / memory) | refused
# seen by clients | clients failed or unanswered | conns_failed /
# conns_timed_out | first Replies | first request to last first Reply |
# max connect-to-established | max connect-to-refused | requests sent in |
# listen overflows (host) | clients' errors. On stderr, the CPU time the
# engine's event threads used in all (admission is evt[0]'s), and per request.
# ENG: another bench_engine binary (before/after in one run); KEEP=1 keeps
# the work directory.
#
# IO=1: connections that did I/O, then went idle. Each client process, once
# its PER_PEER connections are up, makes a 1 MiB WRITE on every one at once
# (its data pulled by RDMA Read into a sink), then a 1 MiB READ on every one
# at once (the engine answers through the Write chunk, from a bounce
# buffer: bench_engine --fill-write 1); the snapshot is taken IDLE_WAIT
# seconds (default 10 with IO=1, else 2) after the last client is done.
# Every row also gives the sink pool's registered bytes (sink_pool_bytes:
# Read sinks and bounce buffers, not in pinned_bytes; "-" for a build
# without the counter) and the I/O calls made.
#
# timeout: the engine at its defaults (Max_Connections 1024, 64 per peer,
# a peer being an IPv4 address or an IPv6 /64; Idle_Timeout 360 s unless
# IDLE_TIMEOUT is given). The connections take their slots (16 x 64 is all
# of them); one of the first peer's sends a message the engine drops
# (too short for a header) every second; a connection past the caps is
# tried from the first peer's address and from a new one; then the script
# waits until the engine holds no connection. The row: slots held, refused
# past the caps, seconds until every slot was free (from the end of
# connecting), each idle connection's and the junk sender's close timed from
# its own NULL reply, the engine's counters, and whether a new connection is
# served after. Takes IDLE_TIMEOUT plus about half a minute.
set -u
B=${1:?build dir}
PEERS=${2:?peers}
PER=${3:?connections per peer}
MODE=${4:-srq}
BUDGET=${5:-}
ENG=${ENG:-$B/bench/nfsbench/bench_engine} # ENG=: another build's, to compare
NB=$B/bench/nfsbench/nfsbench
N=$((PEERS * PER))
W=$(mktemp -d /tmp/idle-scale.XXXXXX)
PORT=$((30000 + RANDOM % 20000))
HOLD=${HOLD:-600}
if [ "$MODE" = timeout ]; then
	IDLE=${BUDGET:-360}
	BUDGET=
	HOLD=$((IDLE + 120))
fi

ulimit -n "$(ulimit -Hn)" 2>/dev/null
need=$((2 * N + 64))
if [ "$(ulimit -n)" -lt "$need" ]; then
	echo "| $MODE | $N | - | - | - | - | - | - | RLIMIT_NOFILE $(ulimit -n) < $need needed |"
	exit 1
fi

STORM=${STORM:-0}
case $MODE in
timeout) args=(--idle-timeout "$IDLE") ;;
*) args=(--max-conns "${MAX_CONNS:-$((N + 16))}" --max-per-peer "${PER_PEER_CAP:-0}")
   [ "$MODE" = srq ] && args+=(--srq 1) ;;
esac
[ -n "$BUDGET" ] && args+=(--budget "$BUDGET")
IO=${IO:-0}
[ "$IO" = 1 ] && args+=(--fill-write 1)
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
# one_conn ADDR FILE: one connection (a NULL call) from ADDR; its JSON line
one_conn() {
	RPCRDMA_SOFT_SOURCE_ADDR=$1 "$NB" --rdma "tcp:127.0.0.1:$PORT" --idle 1 --hold 0 \
		>"$2" 2>/dev/null
}
snap "$W/s0.json"

# The kernel's count of streams dropped at a full accept queue (the listen
# backlog), host-wide: storm rows show its change.
overflows() { nstat -az TcpExtListenOverflows 2>/dev/null | awk '/ListenOverflows/ {print $2}'; }
ov0=$(overflows)
t0=$(date +%s.%N)
cps=()
start_at=$(($(date +%s) + 3)) # storm: every process loaded and waiting by then
for p in $(seq "$PEERS"); do
	if [ "$STORM" = 1 ]; then
		mode_args=(--storm "$PER" --start-at "$start_at")
	else
		mode_args=(--idle "$PER")
	fi
	[ "$MODE" = timeout ] && [ "$p" = 1 ] && mode_args+=(--junk 1)
	[ "$IO" = 1 ] && mode_args+=(--io 1)
	RPCRDMA_SOFT_SOURCE_ADDR=127.0.0.$((p + 1)) "$NB" --rdma "tcp:127.0.0.1:$PORT" \
		"${mode_args[@]}" --hold "$HOLD" >"$W/c$p.out" 2>"$W/c$p.err" &
	cps+=($!)
done
alive() { for c in "${cps[@]}"; do kill -0 "$c" 2>/dev/null && return 0; done; return 1; }
for _ in $(seq 6000); do
	done_n=$(cat "$W"/c*.out 2>/dev/null | grep -c '"idle_conns"\|"storm"')
	[ "$done_n" -ge "$PEERS" ] && break
	alive || break
	sleep 0.1
done
t1=$(date +%s.%N)
ov1=$(overflows)

if [ "$MODE" = timeout ]; then
	snap "$W/s1.json"
	one_conn 127.0.0.2 "$W/past-1.json"
	one_conn 127.0.1.1 "$W/past-2.json"
	snap "$W/s2.json"
	while :; do
		snap "$W/s3.json"
		grep -q '"conns":0,' "$W/s3.json" && break
		alive || break
		sleep 1
	done
	t2=$(date +%s.%N)
	wait "${cps[@]}" 2>/dev/null
	one_conn 127.0.1.1 "$W/after.json"
	snap "$W/s4.json"
	kill "$ep" 2>/dev/null
	wait "$ep" 2>/dev/null
	python3 - "$W" "$N" "$t0" "$t1" "$t2" "$IDLE" <<'EOF'
import json, sys, glob
w, n = sys.argv[1], int(sys.argv[2])
t0, t1, t2, idle = map(float, sys.argv[3:7])
s = [json.load(open(f"{w}/s{k}.json")) for k in range(5)]
lines = [json.loads(l) for f in glob.glob(w + "/c*.out") for l in open(f) if l.startswith("{")]
held = [c for c in lines if "idle_conns" in c]
ends = [c for c in lines if "still_open" in c]
def first(f):
    l = open(f).readline()
    return json.loads(l) if l.startswith("{") else {}
past = [first(f"{w}/past-{k}.json") for k in (1, 2)]
after = first(w + "/after.json")
d = lambda k, a, b: s[b][k] - s[a][k]
junk = [f"{c['junk_closed_max_s']:.1f} s ({c['junk_sent']} dropped messages sent)"
        for c in ends if c["junk"]]
print(f"| {n:,} | {s[1]['conns']:,} | {sum(c['refused'] for c in held)} "
      f"| {sum(p.get('connected', 0) == 0 for p in past)} of {len(past)} "
      f"(conns_refused +{d('conns_refused', 1, 2)}, _peer +{d('conns_refused_peer', 1, 2)}) "
      f"| {t2 - t1:.1f} s (connecting took {t1 - t0:.1f} s) "
      f"| {min(c['idle_closed_min_s'] for c in ends):.1f} to "
      f"{max(c['idle_closed_max_s'] for c in ends):.1f} s "
      f"| {', '.join(junk) or '-'} | {sum(c['still_open'] for c in ends)} "
      f"| {d('conns_timed_out', 0, 4):,} | {d('dropped', 0, 4):,} "
      f"| {'served' if after.get('connected') == 1 else 'refused'} | {idle:.0f} s |")
EOF
	rm -rf "$W"
	exit 0
fi

# The soft fabric's I/O threads end after 500 ms idle; after I/O, the
# pools' idle periods too.
sleep "${IDLE_WAIT:-$([ "$IO" = 1 ] && echo 10 || echo 2)}"
snap "$W/s1.json"
# The engine's event threads' CPU since it started (admission is evt[0]'s):
# user + system ticks of its rpcrdma-event* threads.
evt_ticks=0
for f in /proc/"$ep"/task/*; do
	case $(cat "$f/comm" 2>/dev/null) in rpcrdma-event*) ;; *) continue ;; esac
	evt_ticks=$((evt_ticks + $(awk '{ print $14 + $15 }' "$f/stat" 2>/dev/null || echo 0)))
done
echo "event threads' CPU: $(awk -v t="$evt_ticks" -v hz="$(getconf CLK_TCK)" -v n="$N" \
	'BEGIN { printf "%.2f s, %.0f us per connection request", t / hz, t / hz / n * 1e6 }')" >&2
kill "${cps[@]}" 2>/dev/null
wait "${cps[@]}" 2>/dev/null
kill "$ep" 2>/dev/null
wait "$ep" 2>/dev/null

if [ "$STORM" = 1 ]; then
	python3 - "$W" "$MODE" "$N" "${MAX_CONNS:-$((N + 16))}" "${PER_PEER_CAP:-0}" \
		"${ov0:-}" "${ov1:-}" <<'EOF'
import json, sys, glob
w, mode, n, maxc, cap = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
ov = str(int(sys.argv[7]) - int(sys.argv[6])) if sys.argv[6] and sys.argv[7] else "-"
a = json.load(open(w + "/s0.json")); b = json.load(open(w + "/s1.json"))
d = lambda k: b[k] - a[k]
cli = [json.loads(l) for f in glob.glob(w + "/c*.out") for l in open(f) if l.startswith("{")]
s = lambda k: sum(c[k] for c in cli)
peer, mem, ref = d("conns_refused_peer"), d("conns_refused_mem"), d("conns_refused")
t_first = min(c["t_first_req"] for c in cli)
t_last = max(c["t_last_reply"] for c in cli)
hs = max(c["max_handshake_up"] for c in cli)
hr = max(c["max_handshake_refused"] for c in cli)
errs = sorted({c["error"] for c in cli if c["error"]})
print(f"| {mode} | {maxc} / {cap if cap != '0' else 'none'} | {n:,} | {d('conns_accepted'):,} "
      f"| {s('up'):,} | {ref:,} ({ref - peer - mem:,} / {peer:,} / {mem:,}) | {s('refused'):,} "
      f"| {s('failed') + s('pending'):,} | {d('conns_failed')} / {d('conns_timed_out')} "
      f"| {s('replied'):,} ({s('bad_replies')} bad) | {t_last - t_first:.2f} s | {hs:.3f} s "
      f"| {hr:.3f} s | {max(c['t_last_req'] for c in cli) - t_first:.2f} s | {ov} "
      f"| {'; '.join(errs)[:60]} |")
EOF
	[ -n "${KEEP:-}" ] && echo "kept $W" >&2 || rm -rf "$W"
	exit 0
fi
python3 - "$W" "$MODE" "$N" "$t0" "$t1" "$IO" <<'EOF'
import json, sys, glob
w, mode, n, t0, t1 = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
io = sys.argv[6] == "1"
a = json.load(open(w + "/s0.json")); b = json.load(open(w + "/s1.json"))
conns = b["conns"] - a["conns"]
cli = [json.loads(l) for f in glob.glob(w + "/c*.out") for l in open(f) if l.startswith('{"idle_conns"')]
refused = sum(c["refused"] for c in cli)
reg = b["pinned_bytes"] - a["pinned_bytes"]
rss = (b["rss_kib"] - a["rss_kib"]) * 1024
per = lambda v: f"{v // conns:,}" if conns else "-"
sink = b["sink_pool_bytes"] - a["sink_pool_bytes"] if "sink_pool_bytes" in b else None
sinks = f"{sink:,} | {per(sink)}" if sink is not None else "- | -"
ops = f"{sum(c.get('io_ops', 0) for c in cli):,} ({sum(c.get('violations', 0) for c in cli)} bad)"
print(f"| {mode} | {'I/O, then idle' if io else 'never used'} | {n:,} | {conns:,} | {refused:,} "
      f"| {reg:,} | {per(reg)} | {sinks} | {rss:,} | {per(rss)} | {ops} "
      f"| {b['threads']} | {t1 - t0:.1f} s |")
EOF
[ -n "${KEEP:-}" ] && echo "kept $W" >&2 || rm -rf "$W"

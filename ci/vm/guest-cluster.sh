#!/bin/sh
# The kernel NFS/RDMA client against two ganesha heads over CephFS (issue #35 item 4), sourced by
# guest-main.sh with VM_ONLY=cluster (RPCRDMA_VM_ONLY=cluster ci/vm/run.sh). Uses guest-main.sh's
# result / step / up / secs and its chroot of the guest's programs ($H).
#
#   1. tests/cluster/ceph-cluster.sh start in the chroot (Ceph's programs from the host root or the
#      release root, its state in the guest's RAM; no network namespace: nothing else in the guest
#      binds Ceph's ports), then `ganesha-rados-grace add a b`.
#   2. Heads a and b: ganesha.nfsd with the plugin preloaded, FSAL CEPH, RecoveryBackend
#      rados_cluster, as docs/cluster.md "Running two heads by hand"; the config is
#      ci/vm/ganesha.conf edited (cl_head_conf). NFS ports 2049 / 2149, MOUNT 20048 / 20148,
#      RDMA 20049 / 20149, Fabric = verbs (rxe0). knfsd is never started in this mode.
#   3. The kernel client: two `hard` NFSv4.1 mounts, proto=rdma, port=20049 and port=20149
#      (CL_MA, CL_MB: under the chroot's /tmp, where its python3 reaches them for the byte-range
#      locks busybox cannot take); they must be two NFS clients (the kernel trunks two mounts whose
#      EXCHANGE_ID returns the same client ID; ganesha's server owner is the host name, the same
#      for both heads here, so each head gets an epoch of its own, -E). A file written through a
#      is read back through b after close (md5), and one written through b is read through a.
#   4. Failover: a holder process keeps a file open through a, with a write lock on all of it,
#      appending 64 KiB every half second (cluster_holder.py), and a dd loop writes rounds through a
#      (header + CL_ROUND_MB MiB, conv=fsync, into 4 files in turn); b is refused a conflicting lock,
#      also through NFSv4.0 mounts of b over TCP and over RDMA (kernel 6.12 reports the v4.1
#      refusal as EIO: ci/vm/README.md).
#      a is SIGKILLed while a round is in flight and started again at once. Meanwhile
#      b serves reads of a file it holds open (after the kill, and again once a is back, in the
#      cluster's grace). The client reconnects and reclaims (the holder's open and lock), every
#      dd must finish without an error, b is still refused the lock after the grace, the holder's
#      fsync succeeds; afterwards every file's bytes are checked through b. The timeline, from the kill:
#      the client's reconnect, EXCHANGE_ID, its RECLAIM_COMPLETE (kernel tracepoints), a's
#      restart, the grace's start and end in each head's log, the loop's first round done
#      after the restart.
# Rows "RESULT cluster - CHECK pass|fail SECONDS [note]"; the notes carry MemAvailable and RSS.
CL_D=/tmp/cluster		# in the chroot; in the guest $H$CL_D (tmpfs)
CL_CONF=$CL_D/ceph/ceph.conf
CL_LEASE=${CLUSTER_LEASE:-20}
CL_GRACE=${CLUSTER_GRACE:-90}
CL_ROUND_MB=${CLUSTER_MB:-4}
CL_TIME_SCALE=${CLUSTER_TIME_SCALE:-8}
CL_TR=/sys/kernel/tracing
CL_PLUGIN=$BUILDDIR/src/plugin/librpcrdma_ganesha.so
CL_MA=$H$CL_D/ma		# head a's mount (the chroot's $CL_D/ma)
CL_MB=$H$CL_D/mb

cl() { result cluster - "$@"; }
cl_mem() { awk '/^MemAvailable/{print int($2 / 1024)}' /proc/meminfo; }
cl_rss() { awk '/VmRSS/{printf "%d", $2 / 1024}' /proc/$1/status 2>/dev/null || echo "-"; }
cl_ceph_rss() {
	r=""
	for d in mon.a osd.0 mds.a; do r="$r ${d%%.*} $(cl_rss "$(cat $H$CL_D/ceph/run/$d.pid 2>/dev/null)")"; done
	echo "${r# } MiB"
}
cl_grace_tool() { chroot $H ganesha-rados-grace --cephconf $CL_CONF --userid admin --pool nfs-ganesha --ns grace "$@"; }
cl_wait() { # SECONDS CMD...: 0 once CMD succeeds
	n=$1; shift
	while [ $n -gt 0 ]; do "$@" && return 0; sleep 1; n=$((n - 1)); done
	"$@"
}
cl_nport() { [ $1 = a ] && echo 2049 || echo 2149; }
cl_rport() { [ $1 = a ] && echo 20049 || echo 20149; }

# a head's config: ci/vm/ganesha.conf with docs/cluster.md's cluster keys (one copy of the VM's
# config, edited, rather than another of the cluster test's)
cl_head_conf() { # NODE
	n=$1; nfs=$(cl_nport $n); rdma=$(cl_rport $n); mnt=20148
	[ $n = a ] && mnt=20048
	sed -e "s|NFS_Port = 2049;|NFS_Port = $nfs; MNT_Port = $mnt;|" \
	    -e "s|Graceless = true;|Graceless = false; RecoveryBackend = rados_cluster; Grace_Period = $CL_GRACE;|" \
	    -e "s|Lease_Lifetime = 10;|Lease_Lifetime = $CL_LEASE;|" \
	    -e "s|Path = @EXPORT@;|Path = /;|" \
	    -e 's|FSAL { Name = VFS; }|FSAL { Name = CEPH; User_Id = "admin"; }|' \
	    -e "s|Port = 20049;|Port = $rdma;|" \
	    -e "s|Stats_Socket = /run/rpcrdma/stats.sock;|Stats_Socket = /run/rpcrdma/$n.sock;|" \
	    $H$REPO/ci/vm/ganesha.conf
	cat <<-EOF
	RADOS_KV { Ceph_Conf = $CL_CONF; UserId = admin; Pool = nfs-ganesha; Namespace = grace; Nodeid = $n; }
	CEPH { Ceph_Conf = $CL_CONF; }
	EOF
}
# the head's log since its latest start (each start appends); its stderr holds the plugin's
# lines written before ganesha's log is up
cl_log() {
	[ -f $H$CL_D/$1.log ] && tail -c +$(($(eval echo \${CL_LOG0_$1:-0}) + 1)) $H$CL_D/$1.log
	cat /tmp/cl_$1.err 2>/dev/null
}
cl_head_up() { # NODE: banner and RDMA listener, since its latest start
	cl_log $1 | grep -q "NFS SERVER INITIALIZED" && cl_log $1 | grep -q "NFS over RDMA listening"
}
# the head's process (the pid of its start: timeout and chroot exec it), and whether it runs: a
# child of this shell that exited stays a zombie, which kill -0 still finds
cl_head_pid() { eval echo \${CL_PID_$1:-}; }
cl_alive() { [ -n "$1" ] && [ -e /proc/$1 ] && ! grep -q '^State:[[:space:]]*Z' /proc/$1/status; }
cl_head_start_once() { # NODE EPOCH
	n=$1
	l0=0; [ -f $H$CL_D/$n.log ] && l0=$(wc -c < $H$CL_D/$n.log)
	eval "CL_LOG0_$n=$l0"
	: > /tmp/cl_$n.err
	timeout -s KILL "${GUEST_TIMEOUT:-3000}" chroot $H env LD_PRELOAD=$CL_PLUGIN /usr/bin/ganesha.nfsd -F \
		-L $CL_D/$n.log -f $CL_D/$n.conf -p /run/ganesha/$n.pid -E $2 2> /tmp/cl_$n.err &
	eval "CL_PID_$n=$!"
}
# NODE [EPOCH]: start, then (cl_head_wait) until its banner and RDMA listener; two heads starting
# together can race on rpcbind ("Cannot register"): started again, as tests/support does
cl_head_start() {
	cl_head_start_once $1 ${2:-$(date +%s)}
	eval "CL_T0_$1=$(up)"
}
cl_head_wait() { # NODE LIMIT: 0 when up; restarts it after a "Cannot register" exit
	n=$1; tries=0
	for i in $(seq $2); do
		cl_head_up $n && return 0
		if ! cl_alive "$(cl_head_pid $n)"; then
			if cl_log $n | grep -q "Cannot register" && [ $tries -lt 3 ]; then
				tries=$((tries + 1)); echo "cluster: head $n: rpcbind race, start again"
				sleep 2; cl_head_start_once $n $(($(date +%s) + tries)); continue
			fi
			return 1
		fi
		sleep 1
	done
	cl_head_up $n
}

cl_mount() { # DIR NODE
	mkdir -p $1
	timeout -s KILL 180 mount.nfs $IP:/export $1 -o vers=4.1,proto=rdma,port=$(cl_rport $2),hard
}
cl_md5() { md5sum < $1 | cut -d' ' -f1; }
cl_drop() { echo 3 > /proc/sys/vm/drop_caches; }
# the loop's round I: an 8-byte-wide header, then /tmp/cl_ref
cl_round() { printf 'round %08d\n' $1; cat /tmp/cl_ref; }
cl_loop() { # writes rounds through a until /tmp/cl_stop; "ROUND SLOT RC START END" per round
	i=0
	while [ ! -e /tmp/cl_stop ]; do
		i=$((i + 1)); s=$((i % 4)); t0=$(up)
		cl_round $i | dd of=$CL_MA/loop.$s bs=1M conv=fsync 2>> /tmp/cl_dd.err
		echo "$i $s $? $t0 $(up)" >> /tmp/cl_loop.log
	done
}
cl_rounds() { if [ -f /tmp/cl_loop.log ]; then wc -l < /tmp/cl_loop.log; else echo 0; fi; }
cl_rounds_gt() { [ "$(cl_rounds)" -gt $1 ]; }
# kernel tracepoints for the client's side of the failover (timestamps: seconds since boot)
cl_trace_on() {
	mount -t tracefs nodev $CL_TR 2>/dev/null
	for e in nfs4/nfs4_exchange_id nfs4/nfs4_create_session nfs4/nfs4_reclaim_complete \
		nfs4/nfs4_open_reclaim nfs4/nfs4_state_mgr_failed rpcrdma/xprtrdma_connect \
		rpcrdma/xprtrdma_disconnect nfs4/nfs4_set_lock nfs4/nfs4_xdr_status \
		sunrpc/rpc_xdr_overflow; do
		echo 1 > $CL_TR/events/$e/enable 2>/dev/null || echo "cluster: no tracepoint $e"
	done
	echo 8192 > $CL_TR/buffer_size_kb 2>/dev/null
}
cl_first() { # FILE PATTERN T: seconds after T of the first line matching PATTERN at or after T
	awk -v p="$2" -v t="$3" '$0 ~ p { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) {
		s = substr($i, 1, length($i) - 1) + 0; if (s >= t) { printf "%.1f", s - t; exit } } }' "$1"
}
# ganesha's log: "29/11/2026 08:15:00 : epoch ..." lines; seconds after uptime T of the first
# line matching PATTERN (the guest's clock and uptime are tied by CL_WALL0 / CL_UP0)
cl_log_first() { # NODE PATTERN T
	cl_log $1 | grep -a "$2" | while read -r d tm rest; do
		w=$(date -D '%d/%m/%Y %H:%M:%S' -d "$d $tm" +%s 2>/dev/null) || continue
		awk -v w=$w -v w0=$CL_WALL0 -v u0=$CL_UP0 -v t=$3 'BEGIN{ s = w - w0 + u0 - t; if (s >= -1) { printf "%.0f", s; exit 0 } exit 1 }' && break
	done
}

cl_across() { # CHECK SRC DST READBACK: SRC written to DST through one head, closed, read back
	t0=$(up)
	if dd if=$2 of=$3 bs=1M conv=fsync 2>/dev/null && cl_drop && [ "$(cl_md5 $4)" = "$(cl_md5 $2)" ]; then
		cl $1 pass "$(secs $t0)" "$(($(wc -c < $2) >> 20)) MiB, md5 equal"
	else
		cl $1 fail "$(secs $t0)" "md5 through the other head differs or I/O failed"
	fi
}
cl_lock_b_v40() { # PROTO PORT
	cl_lock_b_mount 4.0 $1 $2 $IP
}
# NFSv4.1 over ganesha's TCP through a second address of the guest: ganesha keys a client's
# record by the server address it came in on, so this mount gets a client ID, and a client of
# the kernel's, of its own instead of being trunked onto the RDMA mount of b
cl_lock_b_v41_tcp() { # PORT
	ip addr add ${IP%.*}.2/24 dev dummy0 2>/dev/null
	cl_lock_b_mount 4.1 tcp $1 ${IP%.*}.2
}
cl_lock_b_mount() { # VERS PROTO PORT ADDR
	v=$(echo $1 | tr -d .)
	mkdir -p $CL_MB.$2$v
	if timeout -s KILL 180 mount.nfs $4:/export $CL_MB.$2$v -o vers=$1,proto=$2,port=$3,hard; then
		cl_lock_b denied lock_b_refused_${2}_v$v $CL_D/mb.$2$v/held
		timeout -s KILL 60 umount $CL_MB.$2$v
	else
		cl lock_b_refused_${2}_v$v fail 0 "NFSv$1 mount of b over $2 failed"
	fi
}
cl_lock_b() { # WANT CHECK [FILE]: a write lock on all of the holder's file, through b, without waiting
	t0=$(up)
	o0=$(cl_overflows)
	got=$(timeout -s KILL 300 chroot $H python3 $REPO/ci/vm/cluster_holder.py trylock ${3:-$CL_D/mb/held} 2>&1 | tail -1)
	# a LOCK reply longer than the client's buffer for it (ci/vm/README.md: 6.12's EIO)
	ov=
	[ "$(cl_overflows)" = "$o0" ] ||
		ov="; the client's decode ran out of reply: $(grep -ao 'LOCK requested=[0-9]*' $CL_TR/trace | tail -1)"
	if [ "$got" = "$1" ]; then cl $2 pass "$(secs $t0)" "b: $got$ov"
	else cl $2 fail "$(secs $t0)" "b: ${got:-no answer} (want $1)$ov"; fi
}
cl_overflows() { grep -ac 'rpc_xdr_overflow' $CL_TR/trace 2>/dev/null; }

cluster_all() {
	step cluster
	mkdir -p /mnt $H$CL_D $H/run/ganesha
	pidof rpcbind > /dev/null || rpcbind -w || echo "FAIL rpcbind"
	m0=$(cl_mem)
	# ---- Ceph
	t0=$(up)
	if chroot $H env CEPH_CLUSTER_TIME_SCALE=$CL_TIME_SCALE sh $REPO/tests/cluster/ceph-cluster.sh start $CL_D/ceph \
		> /tmp/cl_ceph.out 2>&1; then
		m1=$(cl_mem)
		cl ceph_start pass "$(secs $t0)" "mon, osd on memstore, mds, CephFS active; RSS $(cl_ceph_rss);" \
			"MemAvailable $m0 -> $m1 MiB"
	else
		cl ceph_start fail "$(secs $t0)" "$(tail -3 /tmp/cl_ceph.out | tr '\n' ' ')"
		cp -r $H$CL_D/ceph/log /out/cluster-ceph-log 2>/dev/null
		return
	fi
	t0=$(up)
	if cl_grace_tool add a b > /tmp/cl_grace.out 2>&1; then cl grace_add pass "$(secs $t0)"
	else cl grace_add fail "$(secs $t0)" "$(tail -2 /tmp/cl_grace.out | tr '\n' ' ')"; return; fi

	# ---- two heads, started together (a clustered head waits for the others to enforce)
	for n in a b; do cl_head_conf $n > $H$CL_D/$n.conf; done
	cl_trace_on
	t0=$(up); e=$(date +%s)
	cl_head_start a $e; cl_head_start b $((e + 1))
	for n in a b; do
		if cl_head_wait $n 600; then
			cl head_${n}_start pass "$(secs $(eval echo \$CL_T0_$n))" \
				"RSS $(cl_rss "$(cl_head_pid $n)") MiB; $(cl_log $n | grep -o 'NFS over RDMA listening on [^:]*' | head -1)"
		else
			cl head_${n}_start fail "$(secs $t0)" "$(cl_log $n | tail -3 | tr '\n' ' ')"
			cluster_end; return
		fi
	done
	m2=$(cl_mem)
	cl heads_memory pass 0 "MemAvailable $m1 -> $m2 MiB with Ceph and both heads; RSS a $(cl_rss "$(cl_head_pid a)"), b $(cl_rss "$(cl_head_pid b)") MiB"

	# ---- the kernel client: one mount per head, two NFS clients
	t0=$(up)
	if cl_mount $CL_MA a && cl_mount $CL_MB b; then
		cl mounts pass "$(secs $t0)" "$(grep -c " $H$CL_D/m[ab] nfs4 .*proto=rdma" /proc/mounts) proto=rdma mounts"
	else
		cl mounts fail "$(secs $t0)" "mount.nfs failed"; cluster_end; return
	fi
	# /proc/fs/nfsfs/servers: one line per NFS client, the port in hex (4e51 20049, 4eb5 20149)
	if grep -q " 4e51 " /proc/fs/nfsfs/servers && grep -q " 4eb5 " /proc/fs/nfsfs/servers; then
		cl two_clients pass 0 "$(tail -n +2 /proc/fs/nfsfs/servers | tr -s ' \n' ' ')"
	else
		cl two_clients fail 0 "trunked onto one client: $(tail -n +2 /proc/fs/nfsfs/servers | tr -s ' \n' ' ')"
	fi
	dd if=/dev/urandom of=/tmp/cl_ab bs=1M count=16 2>/dev/null
	dd if=/dev/urandom of=/tmp/cl_ref bs=1M count=$CL_ROUND_MB 2>/dev/null
	cl_across write_a_read_b /tmp/cl_ab $CL_MA/ab.dat $CL_MB/ab.dat
	cl_across write_b_read_a /tmp/cl_ref $CL_MB/ba.dat $CL_MA/ba.dat

	# ---- failover under load
	# the holder: an open and a write lock through a that the client must reclaim
	rm -f $H$CL_D/hold.stop
	chroot $H python3 $REPO/ci/vm/cluster_holder.py hold $CL_D/ma/held $CL_D/hold.stop > /tmp/cl_holder.out 2>&1 &
	cl_hp=$!
	if cl_wait 300 grep -q locked /tmp/cl_holder.out; then
		cl_lock_b denied lock_b_refused_before
		# the same LOCK through NFSv4.0 mounts of b, over ganesha's own TCP and over RDMA (a
		# second v4.1 mount of b would be trunked onto the first): tells b's answer, the
		# transport's part and the minor version's (v4.0 replies carry no SEQUENCE) apart
		cl_lock_b_v40 tcp 2149
		cl_lock_b_v40 rdma 20149
		cl_lock_b_v41_tcp 2149
	else
		cl lock_b_refused_before fail 0 "the holder did not lock: $(head -c 200 /tmp/cl_holder.out)"
	fi
	# b holds ab.dat open: reads in the grace go out on that open state (a new OPEN would wait
	# for the grace's end)
	sleep 100000 < $CL_MB/ab.dat > /dev/null 2>&1 &
	cl_hold=$!
	rm -f /tmp/cl_stop /tmp/cl_loop.log /tmp/cl_dd.err
	cl_loop &
	cl_lp=$!
	cl_wait 300 cl_rounds_gt 2
	r=$(cl_rounds); cl_wait 120 cl_rounds_gt $r	# a round has just begun
	sleep 1
	CL_WALL0=$(date +%s); CL_UP0=$(up)
	tk=$(up); echo "cluster: SIGKILL head a at uptime $tk (rounds done $(cl_rounds))"
	rk=$(cl_rounds)
	p=$(cat /run/ganesha/a.pid 2>/dev/null)
	echo "cluster: head a pid $(cl_head_pid a), pid file $p"
	kill -9 $(cl_head_pid a) $p; wait $(cl_head_pid a) 2>/dev/null
	t0=$(up)
	if cl_drop && [ "$(timeout -s KILL 300 md5sum $CL_MB/ab.dat | cut -d' ' -f1)" = "$(cl_md5 /tmp/cl_ab)" ]; then
		cl read_b_a_down pass "$(secs $t0)" "ab.dat through b, a killed"
	else
		cl read_b_a_down fail "$(secs $t0)" "ab.dat through b, a killed: md5 differs or timed out"
	fi
	cl_head_start a
	if cl_head_wait a 600; then
		ta=$(up)
		cl head_a_restart pass "$(secs $CL_T0_a)" "up $(awk -v a=$ta -v b=$tk 'BEGIN{printf "%.1f", a - b}') s after the kill; RSS $(cl_rss "$(cl_head_pid a)") MiB"
	else
		cl head_a_restart fail "$(secs $CL_T0_a)" "$(cl_log a | tail -3 | tr '\n' ' ')"
	fi
	t0=$(up)
	bg=$(cl_log b | grep -ac "IN GRACE")
	if cl_drop && [ "$(timeout -s KILL 300 md5sum $CL_MB/ab.dat | cut -d' ' -f1)" = "$(cl_md5 /tmp/cl_ab)" ]; then
		cl read_b_in_grace pass "$(secs $t0)" "ab.dat through b after a's restart; b's log: $bg grace lines so far"
	else
		cl read_b_in_grace fail "$(secs $t0)" "md5 differs or timed out"
	fi
	# the loop goes on through the grace: two more rounds after a's grace ended (or a limit)
	cl_wait $((CL_GRACE * 4 + 300)) sh -c "tail -c +$(($(eval echo \$CL_LOG0_a) + 1)) $H$CL_D/a.log | grep -q 'NOT IN GRACE'"
	r=$(cl_rounds); cl_wait 600 cl_rounds_gt $((r + 1))
	touch /tmp/cl_stop
	# the holder's lock survived: b still refuses it (after the grace: no NFS4ERR_GRACE wait)
	cl_lock_b denied lock_b_refused_after
	# a watchdog's sleep must not hold the guest's output pipe open (init's tee waits for it)
	( sleep 600; kill $cl_lp ) > /dev/null 2>&1 &
	wd=$!
	wait $cl_lp
	kill $wd 2>/dev/null
	td=$(up)
	nr=$(cl_rounds); bad=$(awk '$3 != 0' /tmp/cl_loop.log | wc -l)
	# the round in flight at the kill, and the first to end after a was back
	rin=$(awk -v t=$tk '$4 <= t && $5 > t {print $1; exit}' /tmp/cl_loop.log)
	rin_end=$(awk -v t=$tk '$4 <= t && $5 > t {printf "%.1f", $5 - t; exit}' /tmp/cl_loop.log)
	if [ "$bad" = 0 ] && [ "$nr" -gt "$rk" ]; then
		cl failover_dd pass "$(awk -v a=$td -v b=$tk 'BEGIN{printf "%.1f", a - b}')" \
			"$nr rounds of $CL_ROUND_MB MiB, none failed; round ${rin:-?} in flight at the kill ended ${rin_end:-?} s after it"
	else
		cl failover_dd fail "$(awk -v a=$td -v b=$tk 'BEGIN{printf "%.1f", a - b}')" \
			"$bad of $nr rounds failed: $(head -c 300 /tmp/cl_dd.err | tr '\n' ' ')"
	fi
	# the holder: fsync (no error), close (unlocks); its bytes through b, then b gets the lock
	t0=$(up)
	touch $H$CL_D/hold.stop
	( sleep 300; kill $cl_hp ) > /dev/null 2>&1 &
	wd=$!
	wait $cl_hp; hrc=$?
	kill $wd 2>/dev/null
	nb=$(sed -n 's/^blocks //p' /tmp/cl_holder.out)
	if [ $hrc = 0 ] && [ -n "$nb" ] && cl_drop &&
		timeout -s KILL 300 chroot $H python3 $REPO/ci/vm/cluster_holder.py verify $CL_D/mb/held $nb > /tmp/cl_verify.out 2>&1; then
		cl holder_bytes_via_b pass "$(secs $t0)" "$nb blocks of 64 KiB written through a across the failover, fsync ok, equal through b"
	else
		cl holder_bytes_via_b fail "$(secs $t0)" "holder rc $hrc: $(tail -c 200 /tmp/cl_holder.out | tr '\n' ' ') $(tail -c 200 /tmp/cl_verify.out | tr '\n' ' ')"
	fi
	cl_lock_b granted lock_b_granted_after_close
	# every file's bytes through b: each holds the latest round that wrote it
	t0=$(up); sync; cl_drop; ok=0; n=0
	for s in 0 1 2 3; do
		i=$(awk -v s=$s '$2 == s {i = $1} END {print i}' /tmp/cl_loop.log)
		[ -n "$i" ] || continue
		n=$((n + 1))
		[ "$(cl_md5 $CL_MB/loop.$s)" = "$(cl_round $i | md5sum | cut -d' ' -f1)" ] && ok=$((ok + 1))
	done
	if [ $n -gt 0 ] && [ $ok = $n ]; then cl failover_bytes_via_b pass "$(secs $t0)" "$ok of $n files"
	else cl failover_bytes_via_b fail "$(secs $t0)" "$ok of $n files match"; fi
	# the timeline, seconds from the kill
	cat $CL_TR/trace > /out/cluster-trace.txt 2>/dev/null
	T=/out/cluster-trace.txt
	cl failover_timeline pass 0 "from SIGKILL of a:" \
		"client disconnect $(cl_first $T xprtrdma_disconnect $tk);" \
		"a up $(awk -v a=$ta -v b=$tk 'BEGIN{printf "%.1f", a - b}');" \
		"a declares grace $(cl_log_first a 'Now IN GRACE' $tk);" \
		"b in grace $(cl_log_first b 'Now IN GRACE' $tk);" \
		"client reconnected $(cl_first $T 'xprtrdma_connect.*:20049.*rc=0' $tk);" \
		"EXCHANGE_ID $(cl_first $T 'nfs4_exchange_id: error=0 ' $tk);" \
		"CREATE_SESSION $(cl_first $T 'nfs4_create_session: error=0 ' $tk);" \
		"open reclaims $(grep -c nfs4_open_reclaim $T) (first $(cl_first $T nfs4_open_reclaim $tk))," \
		"the holder's lock set again $(cl_first $T 'nfs4_set_lock: error=0 ' $tk);" \
		"RECLAIM_COMPLETE $(cl_first $T 'nfs4_reclaim_complete: error=0 ' $tk);" \
		"first round done after the restart $(awk -v t=${ta:-0} -v k=$tk '$5 > t {printf "%.1f", $5 - k; exit}' /tmp/cl_loop.log);" \
		"grace over on a $(cl_log_first a 'NOT IN GRACE' $tk), on b $(cl_log_first b 'NOT IN GRACE' $tk);" \
		"dd loop stopped $(awk -v a=$td -v b=$tk 'BEGIN{printf "%.1f", a - b}')"
	cl memory_end pass 0 "MemAvailable $(cl_mem) MiB; RSS a $(cl_rss "$(cl_head_pid a)"), b $(cl_rss "$(cl_head_pid b)") MiB; Ceph $(cl_ceph_rss)"
	kill $cl_hold 2>/dev/null
	cp /tmp/cl_loop.log /out/cluster-loop.log 2>/dev/null
	cluster_end
}
cluster_end() {
	step cluster-end
	touch /tmp/cl_stop
	for p in ${cl_hp:-} ${cl_hold:-}; do kill $p 2>/dev/null; done
	for m in $CL_MA $CL_MB; do grep -q " $m nfs" /proc/mounts && timeout -s KILL 60 umount -f -l $m; done
	for n in a b; do
		p=$(cl_head_pid $n)
		[ -n "$p" ] && kill $p 2>/dev/null
	done
	sleep 3
	for n in a b; do
		p=$(cl_head_pid $n)
		[ -n "$p" ] && kill -9 $p 2>/dev/null
		cp $H$CL_D/$n.log /out/cluster-$n.log 2>/dev/null
		cp /tmp/cl_$n.err /out/cluster-$n.err 2>/dev/null
		cp $H$CL_D/$n.conf /out/cluster-$n.conf 2>/dev/null
	done
	cl_grace_tool dump > /out/cluster-grace.txt 2>&1
	cp -r $H$CL_D/ceph/log /out/cluster-ceph-log 2>/dev/null
	chroot $H sh $REPO/tests/cluster/ceph-cluster.sh stop $CL_D/ceph
	killall rpcbind 2>/dev/null
}

# Sourced by guest-main.sh when VM_ONLY=bench (issue #10 F), with knfsd (2049/20049, MOUNT 20048)
# and ganesha+rpcrdma (2050/20050, MOUNT 2051) already up side by side, both exporting a tmpfs
# (trixie: both an ext4 on a RAM disk, as ganesha 6.5's FSAL VFS refuses a tmpfs).
# bench_all: for each round, each NFS version, each server (the order flips every round so a
# drift of the shared host hits both alike), one cell on a fresh proto=rdma mount:
#   dd_write1m  BENCH_MB MiB by 1 MiB records, conv=fsync (the flush is in the time)
#   dd_read1m   the same file after umount + mount: the client's page cache is gone, READs go out
#   fio_*       when the host has fio (it runs in the chroot of the host root): O_DIRECT, libaio,
#               BENCH_SECS seconds each: 1 MiB sequential write/read at queue depth 4, 4 KiB random
#               write/read at queue depth 16
# Each measurement is one line "SERVER VERS ROUND TEST pass|fail BYTES SECONDS busy=T idle=T srv=T"
# in /out/bench.results (T: clock ticks, see cpu_snap)
# (fio: BYTES/SECONDS from its JSON, kept as /out/bench/fio-SERVER-VERS-ROUND-TEST.json); the
# mount line and the client's mountstats after each cell go to /out/bench/ for the diagnosis.
# ci/vm/bench_table.py turns them into medians and ratios.
BR=/out/bench.results
BM=$H/mnt	# inside the chroot: /mnt, so the host's fio sees the same mount
mkdir -p /out/bench

bench_opts() { # SERVER VERS -> mount options (SERVER knfsd-tcp, ganesha-tcp: the TCP controls)
	case $1 in
	knfsd) o="proto=rdma,port=20049" mp=20048 ;;
	knfsd-tcp) o="proto=tcp,port=2049" mp=20048 ;;
	ganesha) o="proto=rdma,port=20050" mp=2051 ;;
	ganesha-tcp) o="proto=tcp,port=2050" mp=2051 ;;
	esac
	o="vers=$2,$o,soft,timeo=600,retrans=2"
	[ "$2" = 3 ] && o="$o,mountproto=tcp,mountport=$mp,nolock"
	echo "$o"
}
bench_mount() { timeout -s KILL 60 mount.nfs $IP:/export $BM -o "$(bench_opts "$1" "$2")"; }
bench_umount() { grep -q " $BM nfs" /proc/mounts || return 0; timeout -s KILL 60 umount $BM || umount -f $BM; }
bench_line() { echo "$*" >> $BR; echo "BENCH $*"; }

bench_dd() { # SERVER VERS ROUND: sequential 1 MiB write, remount, read
	bytes=$((BENCH_MB * 1048576))
	t0=$(up); c0=$(cpu_snap $1)
	timeout -s KILL 600 dd if=/dev/zero of=$BM/seq bs=1M count=$BENCH_MB conv=fsync 2>/dev/null
	rc=$?; st=pass; [ $rc = 0 ] || st=fail
	bench_line "$1 $2 $3 dd_write1m $st $bytes $(secs $t0) $(cpu_delta "$c0" "$(cpu_snap $1)")"
	bench_umount; bench_mount "$1" "$2" || { bench_line "$1 $2 $3 dd_read1m fail 0 0 remount"; return 1; }
	t0=$(up); c0=$(cpu_snap $1)
	timeout -s KILL 600 dd if=$BM/seq of=/dev/null bs=1M 2>/dev/null
	rc=$?; st=pass; [ $rc = 0 ] || st=fail
	bench_line "$1 $2 $3 dd_read1m $st $bytes $(secs $t0) $(cpu_delta "$c0" "$(cpu_snap $1)")"
	rm -f $BM/seq
}

# wanted TEST: true unless BENCH_JOBS (RPCRDMA_VM_BENCH_JOBS) names cells and not this one
wanted() { [ -z "${BENCH_JOBS:-}" ] || case " $BENCH_JOBS " in *" $1 "*) true ;; *) false ;; esac; }

# strace_start SERVER VERS ROUND NAME / strace_stop: with BENCH_STRACE=1, ganesha's system calls
# over one fio job, every thread (a diagnosis: tracing slows the server, so its figures are not
# comparable); knfsd has none to count
strace_start() {
	ST_PID=
	[ "${BENCH_STRACE:-0}" = 1 ] || return 0
	case $1 in knfsd*) return 0 ;; esac
	chroot $H strace -c -f -qq -o /tmp/strace.txt -p "$(pidof ganesha.nfsd)" 2>/dev/null &
	ST_PID=$!; ST_OUT=/out/bench/strace-$1-$2-$3-$4.txt
	sleep 2	# every thread attached before the job starts
}
strace_stop() {
	[ -n "$ST_PID" ] || return 0
	kill -INT $ST_PID 2>/dev/null; wait $ST_PID 2>/dev/null
	cp $H/tmp/strace.txt "$ST_OUT" 2>/dev/null
}

# perf_start SERVER VERS ROUND NAME / perf_stop: with BENCH_PERF=1, where the whole guest's CPU
# goes over one fio job (perf record -a on the cpu-clock: TCG has no PMU), for either server: by
# thread, library and function, so the server's, the client's and rxe's shares can be told apart
perf_start() {
	PF_PID=
	[ "${BENCH_PERF:-0}" = 1 ] || return 0
	chroot $H perf record -a -g -e cpu-clock -F 499 -B -q -o /tmp/perf.data 2>/dev/null &
	PF_PID=$!; PF_OUT=/out/bench/perf-$1-$2-$3-$4
	sleep 2
}
perf_stop() {
	[ -n "$PF_PID" ] || return 0
	kill -INT $PF_PID 2>/dev/null; wait $PF_PID 2>/dev/null
	chroot $H perf report -i /tmp/perf.data --stdio --no-children -g none --percent-limit 0.2 \
		--sort comm,dso > $PF_OUT-dso.txt 2>/dev/null
	chroot $H perf report -i /tmp/perf.data --stdio --no-children -g none --percent-limit 0.2 \
		--sort comm,dso,sym > $PF_OUT-sym.txt 2>/dev/null
	chroot $H perf report -i /tmp/perf.data --stdio --no-children -G --percent-limit 2 \
		--sort comm 2>/dev/null | head -4000 > $PF_OUT-callers.txt
	rm -f $H/tmp/perf.data
}

BENCH_FIO_JOBS="seqwrite1m:write:1M:4 seqread1m:read:1M:4 randwrite4k:randwrite:4k:16 randread4k:randread:4k:16"
# cpu_snap SERVER: "BUSY IDLE SRV" clock ticks: the guest's busy (user, nice, system, irq, softirq)
# and idle (idle, iowait) time from /proc/stat, and the server's own threads (ganesha.nfsd, or
# every nfsd kthread): under TCG the guest's 2 vCPUs are what both servers compete for
cpu_snap() {
	case $1 in knfsd*) p=$(pidof nfsd) ;; *) p=$(pidof ganesha.nfsd) ;; esac
	srv=0; for q in $p; do srv=$((srv + $(awk '{print $14 + $15}' /proc/$q/stat 2>/dev/null || echo 0))); done
	awk -v s=$srv '$1=="cpu"{print $2+$3+$4+$7+$8, $5+$6, s; exit}' /proc/stat
}
cpu_delta() { # BEFORE AFTER -> "busy=.. idle=.. srv=.."
	echo "$1 $2" | awk '{printf "busy=%d idle=%d srv=%d", $4-$1, $5-$2, $6-$3}'
}

bench_fio() { # SERVER VERS ROUND
	for j in $BENCH_FIO_JOBS; do
		IFS=: read -r name rw bs qd <<-EOF
		$j
		EOF
		wanted fio_$name || continue
		f=/out/bench/fio-$1-$2-$3-$name.json
		# the file laid out first, outside the job's time and CPU figures
		timeout -s KILL 300 chroot $H fio --name=$name --filename=/mnt/fio.dat \
			--size=${BENCH_FIO_MB}M --rw=$rw --bs=$bs --fallocate=none --create_only=1 \
			> /tmp/fio.err 2>&1
		strace_start "$@" "$name"
		perf_start "$@" "$name"
		t0=$(up); c0=$(cpu_snap $1)
		timeout -s KILL $((BENCH_SECS + 300)) chroot $H fio --name=$name --filename=/mnt/fio.dat \
			--size=${BENCH_FIO_MB}M --rw=$rw --bs=$bs --iodepth=$qd --ioengine=libaio --direct=1 \
			--runtime=$BENCH_SECS --time_based --fallocate=none --output-format=json \
			--output=/tmp/fio.json > /tmp/fio.err 2>&1
		rc=$?; c1=$(cpu_snap $1)
		perf_stop
		strace_stop
		cp $H/tmp/fio.json $f 2>/dev/null
		st=pass; [ $rc = 0 ] || { st=fail; tail -3 /tmp/fio.err; }
		bench_line "$1 $2 $3 fio_$name $st - $(secs $t0) $(cpu_delta "$c0" "$c1")"
	done
	rm -f $BM/fio.dat
}

bench_cell() { # SERVER VERS ROUND
	step "bench $1 v$2 round $3"
	bench_umount
	if ! bench_mount "$1" "$2"; then
		bench_line "$1 $2 $3 mount fail 0 0"
		return 1
	fi
	[ "$3" = 1 ] && grep " $BM nfs" /proc/mounts > /out/bench/mount-$1-$2.txt
	wanted dd_write1m && bench_dd "$@"
	[ -n "$BENCH_FIO" ] && bench_fio "$@"
	# per-op RPC counts and times, the transport's counters: what the diagnosis reads
	cat /proc/self/mountstats > /out/bench/mountstats-$1-$2-$3.txt
	bench_umount
}

bench_all() {
	BENCH_ROUNDS=${BENCH_ROUNDS:-3}; BENCH_MB=${BENCH_MB:-64}; BENCH_SECS=${BENCH_SECS:-5}
	BENCH_FIO_MB=${BENCH_FIO_MB:-32}
	BENCH_FIO=; [ -x $H/usr/bin/fio ] && BENCH_FIO=1
	: > $BR
	echo "rounds=$BENCH_ROUNDS mb=$BENCH_MB fio=${BENCH_FIO:-0} fio_secs=$BENCH_SECS fio_mb=$BENCH_FIO_MB" \
		"tcp_controls=${BENCH_TCP:-0}" "export_fs=${KNFSD_EXPORT_FS:-tmpfs}" \
		"versions=$(echo $VERSIONS | tr " " ,)" > /out/bench/params
	# BENCH_TCP=1: each server over TCP too (same server processes), to tell ganesha's own cost
	# from the transport's
	servers="knfsd"
	grep -q "^RESULT ganesha - start pass" /out/results && servers="knfsd ganesha"
	[ "${BENCH_TCP:-0}" = 1 ] && servers="$servers knfsd-tcp ganesha-tcp"
	r=1
	while [ $r -le $BENCH_ROUNDS ]; do
		for V in $VERSIONS; do
			order=$servers
			# every other round backwards
			[ $((r % 2)) = 0 ] && order=$(for S in $servers; do echo $S; done | sed -n '1!G;h;$p')
			for S in $order; do bench_cell $S $V $r; done
		done
		r=$((r + 1))
	done
}

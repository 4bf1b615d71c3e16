#!/bin/sh
# The kernel client at scale (issue #33 item 5), sourced by guest-main.sh with VM_ONLY=scale.
# Uses guest-main.sh's knfsd_start / knfsd_stop / ganesha_start / ganesha_stop / result.
#
# Against ganesha + rpcrdma, then against knfsd, in the same boot and by the same steps:
#   - SCALE_EXPORTS exports (/export/e1 ...; ganesha: one EXPORT block each, pseudo paths the same)
#   - server addresses 192.168.77.1 ... .SCALE_ADDRS, all on dummy0 (so all on rxe0): the kernel
#     client keeps one NFS client, with its nconnect transports, per server address and version;
#     NFSv4.1 mounts of a second address of the same server are trunked onto the first one's
#     client (same server owner), so their transports are the first address's
#   - for each address in turn, every export with vers=3 and vers=4.1, proto=rdma,
#     nconnect=SCALE_NCONNECT, while MemAvailable stays above SCALE_FLOOR_MB (the guest holds
#     that many mounts; the rest of the addresses are left out and the note says so)
#   - on every mount at once: dd writes SCALE_MB MiB (conv=fsync), then after drop_caches every
#     file is read back at once and compared (md5)
#   - while all are mounted: the server's RDMA connections (rdma_cm ids on port 20049 other than
#     the listener: `rdma resource show cm_id`, the same count for both servers; for ganesha also
#     its stats socket), the client's, QPs per process, MemAvailable, the server's RSS
#   - between the two, the same against ganesha's own TCP transport without the plugin
#     (SCALE_GANESHA_TCP=0 skips it): what fails there is ganesha's, not the transport's
# Rows "RESULT scale-SERVER - CHECK pass|fail SECONDS note" (SERVER ganesha, ganesha-tcp, knfsd).
SC_ADDRS=${SCALE_ADDRS:-12}
SC_EXPORTS=${SCALE_EXPORTS:-3}
SC_NCONNECT=${SCALE_NCONNECT:-16}
SC_MB=${SCALE_MB:-2}
SC_VERSIONS=${SCALE_VERSIONS:-3 4.1}
SC_FLOOR_MB=${SCALE_FLOOR_MB:-384}
SC_SOCK=/run/rpcrdma/stats.sock
SC_M=/mnt/scale

sc() { result "scale-$SC_SRV" - "$@"; }
sc_memavail() { awk '/^MemAvailable/{print int($2 / 1024)}' /proc/meminfo; }
# rdma_cm ids by the port of one end: FIELD src-addr (server side) or dst-addr (client side)
sc_cmids() {
	rdma resource show cm_id 2>/dev/null | awk -v f="$1" '
	{ st = ""; a = ""
	  for (i = 1; i < NF; i++) { if ($i == "state") st = $(i + 1); if ($i == f) a = $(i + 1) }
	  if (st != "LISTEN" && a ~ /:20049$/) n++ }
	END { print n + 0 }'
}
sc_qps() { # QPs per process name, e.g. "ganesha.nfsd=144 [nfsd]=0 ..."
	rdma resource show qp 2>/dev/null | awk '
	{ for (i = 1; i < NF; i++) if ($i == "comm") c[$(i + 1)]++ }
	END { for (k in c) printf "%s=%d ", k, c[k] }'
}
sc_gpid() { pidof ganesha.nfsd | awk '{print $1}'; } # ganesha's pid, if it runs
sc_rss() { # RSS of ganesha.nfsd in MiB (knfsd: kernel threads, none)
	p=$(sc_gpid)
	[ -n "$p" ] && awk '/VmRSS/{printf "%.0f MiB", $2 / 1024}' /proc/$p/status 2>/dev/null
}
# Where the memory went (issue #33): the guest's kernel-side counters in MiB, and for ganesha its
# resident pages split into the device's queues (mappings of /dev/infiniband/uverbs*: rxe's
# send, receive and completion queues, vmalloc'd by the kernel and mapped into the process),
# anonymous memory (heap, stacks, the plugin's pools) and the rest (files, libraries).
sc_meminfo() {
	awk '/^(AnonPages|Slab|SUnreclaim|VmallocUsed|PageTables|KernelStack|Shmem):/ {
		sub(":", "", $1); printf "%s%s %d", sep, $1, $2 / 1024; sep = ", " }
	END { printf " MiB" }' /proc/meminfo
}
sc_smaps() {
	p=$(sc_gpid)
	[ -n "$p" ] || return 0
	awk '/^[0-9a-f]+-[0-9a-f]+ / { name = $6; anon = (NF < 6 || name ~ /^\[(heap|stack)/) }
	     /^Rss:/ { if (name ~ /uverbs/) q += $2; else if (anon) a += $2; else f += $2 }
	     END { printf "; ganesha resident: device queues %d, anonymous %d, files %d MiB",
		   q / 1024, a / 1024, f / 1024 }' /proc/$p/smaps 2>/dev/null
}
# ganesha's anonymous resident memory by mapping size (kB: how many mappings of that size,
# their resident total), largest first, and its thread count: tells mmap'd pools (receive
# buffers, sinks, the READ payload arena) from malloc arenas and thread stacks
sc_anon_maps() {
	p=$(sc_gpid)
	[ -n "$p" ] || return 0
	echo "ganesha threads: $(awk '/^Threads/{print $2}' /proc/$p/status)"
	awk '/^[0-9a-f]+-[0-9a-f]+ / { anon = (NF < 6 || $6 ~ /^\[(heap|stack)/) }
	     /^Size:/ { sz = $2 }
	     /^Rss:/ && anon { n[sz]++; rss[sz] += $2 }
	     END { for (k in n) printf "%d %d kB x %d: %d MiB resident\n", rss[k], k, n[k], rss[k] / 1024 }' \
		/proc/$p/smaps 2>/dev/null | sort -rn | head -12 | cut -d' ' -f2-
}
sc_tcp_conns() { # the server's established TCP connections on :2049
	netstat -tn 2>/dev/null | awk '$4 ~ /:2049$/ && $6 == "ESTABLISHED"' | wc -l
}
sc_clients() { # the kernel client's NFS clients by version (/proc/fs/nfsfs/servers): trunking shows
	awk 'NR > 1 {n[$1]++} END {for (v in n) printf "%s x%d ", v, n[v]}' /proc/fs/nfsfs/servers 2>/dev/null
}
sc_stat_conns() { # ganesha's own count, from the plugin's stats socket
	timeout -s KILL 20 chroot $H $BUILDDIR/tools/rpcrdma-stat -s $SC_SOCK 2>/dev/null |
		sed -n 's/^connections: \([0-9]*\) open.*/\1/p' | head -1
}
# timeo=600 (60 s, as the bench): a TCG guest on a loaded host answers slowly, and a soft mount
# turns a timeout into an I/O error
sc_opts() { # VERS (SC_PROTO: rdma, or tcp for the control)
	if [ $SC_PROTO = rdma ]; then o="proto=rdma,port=20049"; else o="proto=tcp,port=2049"; fi
	o="vers=$1,$o,nconnect=$SC_NCONNECT,soft,timeo=600,retrans=2"
	[ "$1" = 3 ] && o="$o,mountproto=tcp,nolock"
	echo "$o"
}

# ganesha's config: ci/vm/ganesha.conf with its EXPORT block once per export (IDs, paths, pseudo
# paths numbered), and the per-peer cap lifted (the kernel client's connections to one address
# come from that address)
sc_ganesha_conf() {
	awk -v n=$SC_EXPORTS '
	/^EXPORT \{/ { inb = 1; b = "" }
	inb { b = b $0 "\n"
	      if ($0 ~ /^\}/) {
		inb = 0
		for (i = 1; i <= n; i++) {
			s = b
			sub(/Export_ID = 1;/, "Export_ID = " i ";", s)
			sub(/@EXPORT@/, "@EXPORT@/e" i, s)
			sub(/Pseudo = \/export;/, "Pseudo = /export/e" i ";", s)
			printf "%s", s
		}
	      }
	      next }
	lease != "" && /Lease_Lifetime = / { sub(/= [0-9]+;/, "= " lease ";") }
	{ print }
	/^RDMA \{/ { print "\tMax_Connections_Per_Peer = 1024;"; if (srq) print "\tUse_SRQ = true;" }' \
		lease="${SCALE_LEASE:-}" \
		srq="${SCALE_SRQ:-0}" $H$REPO/ci/vm/ganesha.conf > /tmp/scale-ganesha.conf
}
sc_ganesha_dirs() { i=1; while [ $i -le $SC_EXPORTS ]; do mkdir -p $H/tmp/export/e$i; i=$((i + 1)); done; }
sc_knfsd_exports() {
	i=1; : > /etc/exports
	while [ $i -le $SC_EXPORTS ]; do
		mkdir -p /export/e$i
		echo "/export/e$i *(rw,no_root_squash,fsid=$i,insecure,no_subtree_check)" >> /etc/exports
		i=$((i + 1))
	done
}

sc_mount_all() { # mounts address after address while memory lasts; sets sc_n, sc_nf, sc_stop
	sc_n=0; sc_nf=0; sc_stop=""
	: > /tmp/sc_mounts
	a=1
	while [ $a -le $SC_ADDRS ]; do
		m=$(sc_memavail)
		if [ "$m" -lt $SC_FLOOR_MB ]; then
			sc_stop="stopped before address $a: MemAvailable ${m} MiB < $SC_FLOOR_MB"
			break
		fi
		e=1
		while [ $e -le $SC_EXPORTS ]; do
			for v in $SC_VERSIONS; do
				d=$SC_M/a$a-e$e-v$v; mkdir -p $d
				if timeout -s KILL 90 mount.nfs 192.168.77.$a:/export/e$e $d -o "$(sc_opts $v)"; then
					echo $d >> /tmp/sc_mounts; sc_n=$((sc_n + 1))
				else
					echo "  [scale] FAIL: mount 192.168.77.$a:/export/e$e v$v"; sc_nf=$((sc_nf + 1))
				fi
			done
			e=$((e + 1))
		done
		a=$((a + 1))
	done
	sc_addrs=$((a - 1))
}
# A heartbeat every 0.2 s while the I/O runs: its longest gap is how long the whole guest stood
# still (TCG on a loaded host, memory reclaim), beside which a server's own stall can be told
sc_beat_start() { ( while :; do up; sleep 0.2; done ) > /tmp/sc_beat & sc_beat_pid=$!; }
sc_beat_stop() { # prints the longest gap in seconds
	kill $sc_beat_pid 2>/dev/null; wait $sc_beat_pid 2>/dev/null
	awk 'NR > 1 && $1 - p > m { m = $1 - p } { p = $1 } END { printf "%.1f", m }' /tmp/sc_beat
}
# ganesha's peak while the I/O runs, sampled each second: anonymous and file-backed resident
# memory (the device's queues count as the latter), and from the stats socket what the Read
# sink pools had registered and what calls held of it (issue #33)
sc_peak_start() {
	p=$(sc_gpid)
	[ -n "$p" ] || { sc_peak_pid=; return; }
	( while [ -d /proc/$p ]; do
		a=$(awk '/^RssAnon/{a=$2} /^RssFile/{f=$2} END{print a + 0, f + 0}' /proc/$p/status 2>/dev/null)
		j=$(timeout -s KILL 5 chroot $H $BUILDDIR/tools/rpcrdma-stat -s $SC_SOCK --json 2>/dev/null)
		k=$(echo "$j" | tr ',{}' '\n\n\n' | awk -F: '/"sink_pool_bytes"|"sink_bytes"/ {
			gsub(/"/, "", $1); if (!($1 in v)) v[$1] = $2 } END { print v["sink_pool_bytes"] + 0, v["sink_bytes"] + 0 }')
		echo "$a $k"
		sleep 1
	done ) > /tmp/sc_peak 2>/dev/null &
	sc_peak_pid=$!
}
sc_peak_stop() { # "; ganesha's peak: ..." (nothing for knfsd)
	[ -n "$sc_peak_pid" ] || return 0
	kill $sc_peak_pid 2>/dev/null; wait $sc_peak_pid 2>/dev/null
	awk '{ for (i = 1; i <= 4; i++) if ($i > m[i]) m[i] = $i }
	     END { if (NR) printf "; ganesha'"'"'s peak: anonymous %d MiB, files and device queues %d MiB, Read sink pools %d MiB registered, %d MiB held by calls (%d samples)",
		   m[1] / 1024, m[2] / 1024, m[3] / 1048576, m[4] / 1048576, NR }' /tmp/sc_peak
}
# the NFSv4 clients whose lease the server let lapse (ganesha logs each removal of a client's
# recovery record at EVENT; its Lease_Lifetime is ci/vm/ganesha.conf's)
sc_lapsed() {
	case $SC_SRV in ganesha*) ;; *) return ;; esac
	n=$(tail -c +$((glog0 + 1)) $H/tmp/ganesha.log 2>/dev/null | grep -c 'fs_rm_clid_impl')
	oom=""; dmesg | grep -q 'Killed process [0-9]* (ganesha.nfsd)' && oom="; ganesha was OOM-killed"
	echo "; NFSv4 clients expired by ganesha so far: ${n:-0}$oom"
}
sc_parallel() { # NAME CMD: CMD DIR on every mount at once; sets sc_bad (how many failed)
	pids=""
	: > /tmp/sc_bad
	for d in $(cat /tmp/sc_mounts); do
		( $2 $d || echo $d >> /tmp/sc_bad ) &
		pids="$pids $!"
	done
	# by pid: the server (ganesha) is a child of this shell too
	for p in $pids; do wait $p; done
	sc_bad=$(wc -l < /tmp/sc_bad)
	[ "$sc_bad" = 0 ] && return
	echo "  [scale] FAIL: $1 on $(tr '\n' ' ' < /tmp/sc_bad)"
	# what went wrong, once per kind of message
	for d in $(cat /tmp/sc_bad); do cat /tmp/sc_err.${d##*/} 2>/dev/null; done | sort | uniq -c | head -5 |
		sed 's/^/  [scale]   /'
}
# one file per mount (mounts of one export from other addresses see the same directory)
sc_write() {
	timeout -s KILL 600 dd if=/tmp/sc_ref of=$1/${1##*/} bs=256k conv=fsync 2> /tmp/sc_err.${1##*/} ||
		{ sed -i "s|$1/[^' ]*|FILE|g" /tmp/sc_err.${1##*/}; return 1; }
}
sc_read() {
	[ "$(timeout -s KILL 600 md5sum 2> /tmp/sc_err.${1##*/} < $1/${1##*/} | cut -d' ' -f1)" = "$(cat /tmp/sc_ref.md5)" ] ||
		{ echo "read back differs or failed $(sed "s|$1/[^' ]*|FILE|g" /tmp/sc_err.${1##*/})" > /tmp/sc_err.${1##*/}; return 1; }
}

sc_run() { # SERVER [PROTO]: mount, I/O, count, unmount
	SC_SRV=$1 SC_PROTO=${2:-rdma}
	step "scale $1"
	mem0=$(sc_memavail) meminfo0=$(sc_meminfo)
	t0=$(up)
	sc_mount_all
	st=pass; [ $sc_n -gt 0 ] && [ $sc_nf = 0 ] || st=fail
	sc mounts $st "$(secs $t0)" "$sc_n mounts ($sc_addrs addresses x $SC_EXPORTS exports x v$(echo $SC_VERSIONS | sed 's/ /+v/g')," \
		"nconnect=$SC_NCONNECT), $sc_nf failed${sc_stop:+; $sc_stop}"
	[ $sc_n -gt 0 ] || return 1
	sc memory-mounted pass 0 "MemAvailable $mem0 -> $(sc_memavail) MiB;" \
		"before: $meminfo0; all mounted, no I/O yet: $(sc_meminfo)$(sc_smaps)"
	t0=$(up)
	sc_beat_start; sc_peak_start
	sc_parallel write sc_write
	gap=$(sc_beat_stop) peak=$(sc_peak_stop)
	st=pass; [ $sc_bad = 0 ] || st=fail
	sc write $st "$(secs $t0)" "$SC_MB MiB on each of $sc_n mounts at once, $sc_bad failed," \
		"$(awk -v n=$sc_n -v m=$SC_MB -v s="$(secs $t0)" 'BEGIN{printf "%.1f", n * m / s}') MiB/s in all;" \
		"a 0.2 s heartbeat in the guest paused up to ${gap} s$(sc_lapsed)$peak"
	sync; echo 3 > /proc/sys/vm/drop_caches
	t0=$(up)
	sc_beat_start; sc_peak_start
	sc_parallel read sc_read
	gap=$(sc_beat_stop) peak=$(sc_peak_stop)
	st=pass; [ $sc_bad = 0 ] || st=fail
	sc read $st "$(secs $t0)" "read back and compared on $sc_n mounts at once, $sc_bad differ or failed," \
		"$(awk -v n=$sc_n -v m=$SC_MB -v s="$(secs $t0)" 'BEGIN{printf "%.1f", n * m / s}') MiB/s in all;" \
		"a 0.2 s heartbeat in the guest paused up to ${gap} s$(sc_lapsed)$peak"
	# what is held while every mount is up and has done its I/O
	if [ $SC_PROTO = rdma ]; then
		srv=$(sc_cmids src-addr)
		what="server $srv connections on :20049 (rdma_cm ids), client $(sc_cmids dst-addr)"
		[ $1 = ganesha ] && what="$what; the plugin's stats socket: $(sc_stat_conns) open"
		what="$what; QPs by process: $(sc_qps)"
	else
		srv=$(sc_tcp_conns); what="server $srv TCP connections on :2049"
	fi
	st=pass; [ "$srv" -gt 0 ] || st=fail
	sc conns $st 0 "$what; the client's NFS clients: $(sc_clients)"
	sc memory pass 0 "MemAvailable $mem0 -> $(sc_memavail) MiB with all mounted$(case $1 in ganesha*)
		echo "; ganesha RSS $(sc_rss)" ;; esac); $(sc_meminfo)$(sc_smaps)"
	rdma resource show 2>/dev/null | sed 's/^/  [scale] /'
	sc_anon_maps | sed 's/^/  [scale] /'
	t0=$(up); nu=0
	for d in $(cat /tmp/sc_mounts); do
		timeout -s KILL 60 umount $d || { nu=$((nu + 1)); umount -f -l $d 2>/dev/null; }
	done
	st=pass; [ $nu = 0 ] || st=fail
	sc umount $st "$(secs $t0)" "$nu failed"
}

scale_all() {
	step scale
	a=2
	while [ $a -le $SC_ADDRS ]; do ip addr add 192.168.77.$a/24 dev dummy0; a=$((a + 1)); done
	mkdir -p $SC_M
	dd if=/dev/urandom of=/tmp/sc_ref bs=1M count=$SC_MB 2>/dev/null
	md5sum < /tmp/sc_ref | cut -d' ' -f1 > /tmp/sc_ref.md5
	echo "  [scale] MemTotal $(awk '/^MemTotal/{print int($2 / 1024)}' /proc/meminfo) MiB, MemAvailable $(sc_memavail) MiB"
	if [ -f "$H$PLUGIN" ]; then
		sc_ganesha_conf
		# shellcheck disable=SC2034 # read by guest-main.sh's ganesha_start
		GANESHA_CONF=/tmp/scale-ganesha.conf GANESHA_PREP=sc_ganesha_dirs
		if ganesha_start scale-ganesha rdma "$PLUGIN"; then
			sc_run ganesha
		fi
		ganesha_stop scale-ganesha
		# the control: ganesha's own TCP transport, no plugin, the same mounts (tells what is
		# ganesha's and what is the RDMA transport's)
		if [ "${SCALE_GANESHA_TCP:-1}" != 0 ]; then
			ganesha_start scale-ganesha-tcp tcp "" && sc_run ganesha-tcp tcp
			ganesha_stop scale-ganesha-tcp
		fi
		unset GANESHA_CONF GANESHA_PREP
	else
		result scale-ganesha - start na 0 "no $PLUGIN"
	fi
	[ "${SCALE_KNFSD:-1}" != 0 ] || return 0
	# knfsd: 8 threads (Debian's default); its connection limit, (threads + 3) x 20 = 220 unless
	# max_connections says, would close the oldest connections past it: lifted as ganesha's cap is
	# shellcheck disable=SC2034 # read by guest-main.sh's knfsd_start
	KNFSD_THREADS=8 KNFSD_PREP=sc_knfsd_exports KNFSD_MAXCONN=4096
	knfsd_start
	sc_run knfsd
	knfsd_stop
}

#!/bin/sh
# Runs inside the VM (started by ci/vm/init). Order:
#   0. Soft-RoCE: rxe0 on dummy0, 192.168.77.1
#   1. fabric conformance suite (verbs provider on rxe0), if built
#   2. knfsd over RDMA (reference): guest-tests.sh for NFSv3, v4.1, v4.2
#   3. ganesha + librpcrdma_ganesha.so (LD_PRELOAD) over RDMA, same tests, if the plugin is built
# VM_ONLY=fabric stops after 1; VM_ONLY=bench skips 1-3 and runs guest-bench.sh instead, with knfsd
# and ganesha+rpcrdma up side by side (knfsd on 2049/20049, ganesha on 2050/20050); VM_ONLY=scale
# runs only guest-scale.sh (many nconnect mounts, ganesha+rpcrdma then knfsd); VM_ONLY=cluster
# runs only guest-cluster.sh (Ceph and two ganesha heads, the kernel client across a failover).
#   4. device removal under ganesha + rpcrdma (guest-devrm.sh), unless GANESHA_DEVRM=0;
#      VM_ONLY=devrm runs only the setup and 4.
#   5. soft-iWARP: siw0 on dummy2, 192.168.79.1 (when the initramfs has siw.ko, SIW_MODULE), then on
#      it 1-3 again: the fabric suite, knfsd, ganesha + rpcrdma and its Use_SRQ run, the server
#      labels ending in -siw. After 4, so that nothing of the rxe parts changes; VM_ONLY=siw runs
#      only the setups and 5, VM_ONLY=fabric the two fabric suites, VM_SIW=0 skips 5.
# Every result is a line "RESULT <server> <vers> <test> <pass|fail|na> <seconds> [note]" in
# /out/results (and on the console); ci/vm/run.sh turns them into the table.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
HERE=$(dirname "$0")
IP=192.168.77.1
SIW_IP=192.168.79.1
VERSIONS=${VM_VERSIONS:-3 4.1 4.2}
H=/hostroot
up() { cut -d' ' -f1 /proc/uptime; }
step() { echo "=== STEP $* (uptime $(up))"; }
result() { echo "RESULT $*" | tee -a /out/results; }
secs() { awk -v a="$1" -v b="$(up)" 'BEGIN{printf "%.1f", b-a}'; }

step rxe
modprobe crc32_generic; modprobe crc32_pclmul
for m in rdma_rxe ib_uverbs rdma_ucm rpcrdma nfsd nfsv3 nfsv4; do modprobe $m || echo "FAIL modprobe $m"; done
modprobe dummy numdummies=0; ip link add dummy0 type dummy
ip addr add $IP/24 dev dummy0; ip link set dummy0 mtu ${VM_MTU:-1500} up
t0=$(up)
if rdma link add rxe0 type rxe netdev dummy0 && ibv_devices | grep -q rxe0; then
	result setup - rxe0 pass "$(secs $t0)" "$(ibv_devinfo -d rxe0 | grep -o "active_mtu:.*" | tr -s " \t" " ")"
else
	result setup - rxe0 fail "$(secs $t0)" "rdma link add failed"
fi

# The host root, shared read-only, is the chroot for host-built programs (fabric suite, ganesha):
# their libraries (libibverbs, librdmacm, the rxe provider, libntirpc, FSALs) all come from there.
# Guest-side writable places are mounted over it.
chroot_setup() {
	for d in proc sys dev; do mount --bind /$d $H/$d; done
	# A checkout or build dir under the host's /tmp must stay visible under
	# the guest's own tmpfs: keep the host's /tmp reachable and bind them back.
	mkdir -p /hosttmp; mount --bind $H/tmp /hosttmp
	mount -t tmpfs tmp $H/tmp; mount --bind /run $H/run
	for p in "$REPO" "$BUILDDIR"; do
		case "$p" in
		/tmp/*) mkdir -p "$H$p" && mount --bind "/hosttmp${p#/tmp}" "$H$p" ;;
		esac
	done
	mount -t tmpfs varlib $H/var/lib/nfs 2>/dev/null || true
	mount -t tmpfs varlog $H/var/log 2>/dev/null || true
}
chroot_setup

# rdma_cm + the device's provider as seen by host-built programs (host libs through the chroot):
# a loopback rping, so a failing fabric suite can be told apart from a broken environment.
rping_check() { # LABEL ADDR DEVICE
	t0=$(up)
	timeout -s KILL 60 chroot $H rping -s -a $2 -p 7471 -C 3 > /tmp/rping_s.log 2>&1 &
	rs=$!
	# the server may take a while to listen on a loaded host (libraries come over 9p): retry
	for k in 1 2 3 4 5 6 7 8 9 10; do
		sleep 1
		timeout -s KILL 30 chroot $H rping -c -a $2 -p 7471 -C 3 -v > /tmp/rping_c.log 2>&1 && break
	done
	if wait $rs && grep -q 'ping data' /tmp/rping_c.log; then
		result setup - $1 pass "$(secs $t0)"
	else
		cat /tmp/rping_s.log /tmp/rping_c.log
		result setup - $1 fail "$(secs $t0)" "rping from the host root over $3 failed"
	fi
}
rping_check host_rping $IP rxe0

# ---------------------------------------------------------------- part 1: fabric conformance
step fabric
FAB=$BUILDDIR/tests/fabric/test_fabric_conformance
fabric_suite() { # LABEL ADDR [MEMLOCK]: the suite on the device of ADDR, to /out/LABEL.log
	if [ ! -x "$H$FAB" ]; then
		result $1 verbs conformance na 0 "no $FAB"
		return
	fi
	t0=$(up)
	# MEMLOCK: the suite's RLIMIT_MEMLOCK (siw charges every registration to it, root or not,
	# and the bulk case registers 16 MiB; ganesha's plugin raises its own, the suite does not)
	( [ -z "${3:-}" ] || ulimit -l $3
	  exec timeout -s KILL 300 chroot $H env RPCRDMA_FABRIC=verbs RPCRDMA_FABRIC_ADDR=$2 RPCRDMA_FABRIC_DEBUG=1 \
		"$FAB" --gtest_output=xml:/tmp/$1.xml ${VM_FABRIC_FILTER:+--gtest_filter=$VM_FABRIC_FILTER} ) \
		> /out/$1.log 2>&1
	rc=$?
	cp $H/tmp/$1.xml /out/$1.xml 2>/dev/null
	tail -30 /out/$1.log
	cnt() { grep "^\[ *$1 *\] [A-Za-z]" /out/$2.log | awk '{print $4}' | sort -u | wc -l; }
	tot=$(sed -n 's/^\[==========\] Running \([0-9]*\) test.*/\1/p' /out/$1.log | head -1)
	if [ $rc = 0 ]; then st=pass; else st=fail; fi
	result $1 verbs conformance $st "$(secs $t0)" \
		"rc=$rc tests=${tot:-?} ok=$(cnt OK $1) failed=$(cnt FAILED $1) skipped=$(cnt SKIPPED $1)"
}
if [ "${VM_ONLY:-}" = bench ] || [ "${VM_ONLY:-}" = devrm ] || [ "${VM_ONLY:-}" = siw ] || [ "${VM_ONLY:-}" = scale ] ||
	[ "${VM_ONLY:-}" = cluster ]; then
	: # the bench measures NFS; the fabric suite is the interop run's job
else
	fabric_suite fabric $IP
fi

# part 5 (soft-iWARP), defined here, run after part 4 or alone (VM_ONLY=siw, VM_ONLY=fabric)
siw_setup() {
	step siw
	t0=$(up)
	if [ "${SIW_MODULE:-none}" = none ]; then
		result setup - siw0 na 0 "no siw.ko for this kernel: ${SIW_WHY:-not built}"
		return 1
	fi
	if ! modprobe siw; then
		result setup - siw0 fail "$(secs $t0)" "modprobe siw ($SIW_MODULE) failed"
		return 1
	fi
	# siw0 alone: the rxe parts are done, and the fabric suite's buffers, CQs and PD are the
	# first device's (one device per process, as a server machine has), which on a VM with rxe0
	# still there would not be siw0's
	for d in $(rdma link show 2>/dev/null | sed -n 's|^link \(rxe[0-9]*\)/.*|\1|p'); do
		timeout -s KILL 30 rdma link delete $d || echo "FAIL rdma link delete $d"
	done
	# a netdev of its own: rdma_cm finds a device by the netdev of the address it resolves, and
	# dummy0 is rxe0's (dummy1 is the device-removal part's rxe1)
	ip link add dummy2 type dummy; ip addr add $SIW_IP/24 dev dummy2
	ip link set dummy2 mtu ${VM_MTU:-1500} up
	if rdma link add siw0 type siw netdev dummy2 && ibv_devices | grep -q siw0; then
		result setup - siw0 pass "$(secs $t0)" "$SIW_MODULE; $(ibv_devinfo -d siw0 |
			grep -oE "(transport|active_mtu):.*" | tr -s " \t\n" " ")"
	else
		result setup - siw0 fail "$(secs $t0)" "rdma link add siw0 type siw netdev dummy2 failed"
		return 1
	fi
	rping_check siw_rping $SIW_IP siw0
}
if [ "${VM_ONLY:-}" = fabric ]; then
	# RPCRDMA_VM_ONLY=fabric (run.sh): only the setups and the fabric suites
	[ "${VM_SIW:-1}" != 0 ] && siw_setup && fabric_suite fabric-siw $SIW_IP unlimited
	step done
	dmesg > /out/dmesg.txt
	echo "GUEST-MAIN-DONE"
	exit 0
fi

# ---------------------------------------------------------------- part 2: knfsd reference
knfsd_start() {
	step knfsd-start
	mount -t nfsd nfsd /proc/fs/nfsd
	mount -t rpc_pipefs rpc_pipefs /var/lib/nfs/rpc_pipefs
	if [ "${KNFSD_EXPORT_FS:-tmpfs}" = ext4 ]; then
		# the bench on trixie: the kind of store ganesha 6.5 must export (ganesha_start),
		# on a second RAM disk, so both servers write to the same kind of file system
		modprobe ext4; [ -b /dev/ram1 ] || modprobe brd rd_nr=2 rd_size=${GANESHA_EXPORT_KB:-393216} || echo "FAIL modprobe brd"
		chroot $H mkfs.ext4 -q -F -b 4096 /dev/ram1 && mount -t ext4 /dev/ram1 /export || echo "FAIL ext4 knfsd export"
	else
		mount -t tmpfs -o size=${KNFSD_EXPORT_SIZE:-256m} tmpfs /export
	fi
	echo '/export *(rw,no_root_squash,fsid=1,insecure,no_subtree_check)' > /etc/exports
	[ -z "${KNFSD_PREP:-}" ] || $KNFSD_PREP	# the scale run: its own exports
	touch /var/lib/nfs/etab /var/lib/nfs/rmtab
	mkdir -p /run/rpcbind; chown _rpc /run/rpcbind
	rpcbind -w || echo "FAIL rpcbind"
	exportfs -ra
	# a fixed MOUNT port: ganesha, started beside knfsd in the bench, takes over rpcbind's entries
	rpc.mountd --no-udp -p 20048 || echo "FAIL mountd"
	echo 10 > /proc/fs/nfsd/nfsv4leasetime; echo 10 > /proc/fs/nfsd/nfsv4gracetime
	[ -z "${KNFSD_MAXCONN:-}" ] || echo $KNFSD_MAXCONN > /proc/fs/nfsd/max_connections || echo "FAIL max_connections"
	rpc.nfsd --no-udp ${KNFSD_THREADS:-4} || echo "FAIL nfsd"
	echo "rdma 20049" > /proc/fs/nfsd/portlist || echo "FAIL portlist"
	cat /proc/fs/nfsd/portlist
	rdma resource show cm_id 2>/dev/null | grep -i listen
	step knfsd-grace; sleep 11
}
knfsd_stop() {
	step knfsd-stop
	rpc.nfsd 0; exportfs -ua; killall rpc.mountd 2>/dev/null
	killall rpcbind 2>/dev/null; sleep 1
	umount /export
}
knfsd_list() { # LABEL: the list against knfsd, every version
	knfsd_start
	for V in $VERSIONS; do
		step "$1 v$V"
		sh $HERE/guest-tests.sh $1 $V rdma /export
	done
	knfsd_stop
}
case "${VM_ONLY:-}" in bench|devrm|siw|scale|cluster) ;; *) knfsd_list knfsd ;; esac

# ---------------------------------------------------------------- part 3: ganesha + rpcrdma
PLUGIN=$BUILDDIR/src/plugin/librpcrdma_ganesha.so
# run_ganesha ganesha-tcp tcp "" runs the list against ganesha's own TCP transport (no plugin):
# the control that proves the ganesha half of this harness (GANESHA_CONTROL: 1, all or 0).
# ganesha_start LABEL PROTO PRELOAD [SED]: ganesha.nfsd in the host-root chroot on ci/vm/ganesha.conf
# (edited by the sed script SED, e.g. other ports), exporting $H/tmp/export; sets gpid; fails when
# it does not come up. PROTO rdma: wait for its rdma_cm listener on $GANESHA_RDMA_PORT too.
GANESHA_RDMA_PORT=20049
ganesha_start() {
	label=$1; proto=$2; pre=$3
	step "ganesha-start $label"
	pidof rpcbind > /dev/null || rpcbind -w || echo "FAIL rpcbind"
	mkdir -p $H/tmp/export $H/run/ganesha $H/var/lib/nfs/ganesha
	# GANESHA_EXPORT_FS=ext4 (trixie): ganesha 6.5's FSAL VFS ignores tmpfs mounts when it
	# resolves an export's file system, so the export is a fresh ext4 on a RAM disk (brd)
	if [ "${GANESHA_EXPORT_FS:-tmpfs}" = ext4 ]; then
		modprobe ext4; [ -b /dev/ram0 ] || modprobe brd rd_nr=1 rd_size=${GANESHA_EXPORT_KB:-393216} || echo "FAIL modprobe brd"
		chroot $H mkfs.ext4 -q -F -b 4096 /dev/ram0 && mount -t ext4 /dev/ram0 $H/tmp/export || echo "FAIL ext4 export"
	fi
	[ -z "${GANESHA_PREP:-}" ] || $GANESHA_PREP	# the scale run: its exports' directories
	sed -e "s|@EXPORT@|/tmp/export|" ${4:+-e "$4"} ${GANESHA_CONF:-$H$REPO/ci/vm/ganesha.conf} > $H/tmp/ganesha.conf
	t0=$(up)
	# where this run's lines begin in ganesha's log (each start appends to it)
	glog0=$(wc -c < $H/tmp/ganesha.log 2>/dev/null || echo 0)
	# LD_PRELOAD only when given; the plugin's counters come from its Stats_Socket
	# bounded by the guest's own limit (the bench's 24 cells outlast any fixed one on a slow host)
	timeout -s KILL "${GUEST_TIMEOUT:-1200}" chroot $H env ${pre:+LD_PRELOAD=$pre} \
		/usr/bin/ganesha.nfsd -F -L /tmp/ganesha.log -f /tmp/ganesha.conf -p /run/ganesha/pid &
	gpid=$!
	# ready when it listens on its NFS port and, for rdma, has an rdma_cm listener; if that
	# listener never shows, go on after 30 s anyway (the mounts will tell)
	nport=$(awk '$1=="NFS_Port"{print $3+0; exit}' $H/tmp/ganesha.conf)
	ok=0
	for i in $(seq 60); do
		kill -0 $gpid 2>/dev/null || break
		if netstat -ltn 2>/dev/null | grep -q ":${nport:-2049} "; then
			# an rdma_cm listener shows in the rdma tool's cm_id table, not in netstat
			if [ $proto = tcp ] || rdma resource show cm_id 2>/dev/null | grep -qi "listen.*:$GANESHA_RDMA_PORT"; then
				ok=1; break
			fi
			[ $i -ge 30 ] && { ok=1; break; }	# no listener seen: try anyway
		fi
		sleep 1
	done
	if [ $ok = 1 ]; then
		# RLIMIT_MEMLOCK as the harness left it (never raised here) and as ganesha has it now,
		# after the plugin's start-up (docs/devices.md: it raises what it may)
		p=$(pidof ganesha.nfsd | awk '{print $1}')
		echo "memlock: harness $(ulimit -l) kB; ganesha now: $(awk '/^Max locked memory/{print $4, $5, $6}' \
			/proc/$p/limits 2>/dev/null) (soft, hard, units)" > /out/$label.memlock
		if [ $proto = rdma ] && ! rdma resource show cm_id 2>/dev/null | grep -qi "listen.*:$GANESHA_RDMA_PORT"; then
			result $label - start pass "$(secs $t0)" "but no rdma_cm listener on :$GANESHA_RDMA_PORT"
		else
			result $label - start pass "$(secs $t0)"
		fi
		return 0
	fi
	result $label - start fail "$(secs $t0)" "ganesha did not come up"
	return 1
}
ganesha_stop() { # LABEL: counters, SIGTERM, logs to /out/LABEL.*
	label=$1
	step "ganesha-stop $label"
	rdma resource show cm_id 2>/dev/null | grep -i listen
	# the plugin's counters (one JSON object from its stats socket), before it stops
	[ -S $H/run/rpcrdma/stats.sock ] && timeout 30 chroot $H python3 -c '
import json, socket
s = socket.socket(socket.AF_UNIX); s.connect("/run/rpcrdma/stats.sock"); d = b""
while True:
    b = s.recv(65536)
    if not b: break
    d += b
j = json.loads(d)
print(" ".join("%s=%s" % kv for kv in sorted(j["global"].items())))
print("plugin:", " ".join("%s=%s" % kv for kv in sorted(j["plugin"].items())))' > /out/$label.stats 2>&1
	# SIGTERM: a clean shutdown gives the plugin its chance to write its counters
	kill $gpid 2>/dev/null
	for i in $(seq 15); do kill -0 $gpid 2>/dev/null || break; sleep 1; done
	kill -9 $gpid 2>/dev/null; wait $gpid 2>/dev/null
	cp $H/tmp/ganesha.log /out/$label.log 2>/dev/null
	grep -iE 'rpcrdma|rdma' $H/tmp/ganesha.log 2>/dev/null | grep -iE 'stat|count' > /out/$label.counters
	# the plugin's start-up: its listening line (device, transport, limits), the Use_SRQ
	# fallback, the memlock line, a listener or registration refused
	tail -c +$((${glog0:-0} + 1)) $H/tmp/ganesha.log 2>/dev/null |
		grep -E 'NFS over RDMA listening|Use_SRQ:|RLIMIT_MEMLOCK|cannot listen|cannot register|setup failed' |
		head -8 > /out/$label.startup
	killall rpcbind 2>/dev/null; sleep 1
	grep -q " $H/tmp/export " /proc/mounts && umount $H/tmp/export
	rm -rf $H/tmp/export $H/var/lib/nfs/ganesha/*
}
# run_ganesha ganesha-tcp tcp "" runs the list against ganesha's own TCP transport (no plugin):
# the control that proves the ganesha half of this harness (GANESHA_CONTROL: 1, all or 0).
run_ganesha() { # $1 = label, $2 = proto, $3 = preload (or empty), $4 = sed on the config
	if ganesha_start "$1" "$2" "$3" "${4:-}"; then
		for V in $VERSIONS; do
			step "$1 v$V"
			sh $HERE/guest-tests.sh $1 $V $2 $H/tmp/export
		done
	fi
	ganesha_stop "$1"
}
# the end of every mode: dmesg's lines of the subsystems SOURCES (a regex) that match WORDS to
# /out/dmesg-errors.txt, all of dmesg to /out/dmesg.txt, the marker run.sh looks for
guest_done() { # SOURCES WORDS
	step done
	dmesg | grep -iE "$1" | grep -iE "$2" > /out/dmesg-errors.txt
	dmesg > /out/dmesg.txt
	echo "GUEST-MAIN-DONE"
	exit 0
}
if [ "${VM_ONLY:-}" = scale ]; then
	# the kernel client at scale (guest-scale.sh): ganesha + rpcrdma, then knfsd, and nothing else
	. $HERE/guest-scale.sh
	scale_all
	guest_done 'rpcrdma|svcrdma|xprtrdma|rdma_rxe|rxe|nfs: server|oom' \
		'err|fail|warn|flush|disconnect|timeout|not responding|kill'
fi
if [ "${VM_ONLY:-}" = cluster ]; then
	# two ganesha heads over CephFS and the kernel client across a failover (guest-cluster.sh);
	# knfsd is never started, so its ports are free for head a
	. $HERE/guest-cluster.sh
	if [ -f "$H$PLUGIN" ]; then cluster_all; else result cluster - start na 0 "no $PLUGIN"; fi
	guest_done 'rpcrdma|svcrdma|xprtrdma|rdma_rxe|rxe|nfs: server|nfs4|oom' \
		'err|fail|warn|flush|disconnect|timeout|not responding|kill|reclaim'
fi
if [ "${VM_ONLY:-}" = bench ]; then
	# both servers up at once, so the rounds can alternate without restarts
	KNFSD_THREADS=8; KNFSD_EXPORT_SIZE=512m	# 8: Debian's default (RPCNFSDCOUNT)
	KNFSD_EXPORT_FS=${GANESHA_EXPORT_FS:-tmpfs}	# trixie: ext4 on a RAM disk for both
	knfsd_start
	GANESHA_RDMA_PORT=20050
	if [ -f "$H$PLUGIN" ]; then
		ganesha_start ganesha rdma "$PLUGIN" \
			's|NFS_Port = 2049;|NFS_Port = 2050; MNT_Port = 2051;|; s|Port = 20049;|Port = 20050;|'
	else
		result ganesha - start na 0 "no $PLUGIN"
	fi
	. $HERE/guest-bench.sh
	bench_all
	[ -f "$H$PLUGIN" ] && ganesha_stop ganesha
	knfsd_stop
fi
if [ "${VM_ONLY:-}" != bench ] && [ "${VM_ONLY:-}" != devrm ] && [ "${VM_ONLY:-}" != siw ] && [ "${GANESHA_CONTROL:-1}" != 0 ]; then
	# the control runs one version unless asked for all (its job: ganesha + config work here)
	all=$VERSIONS
	case " $VERSIONS " in *" 4.1 "*) VERSIONS=4.1 ;; *) VERSIONS=${VERSIONS%% *} ;; esac
	[ "$GANESHA_CONTROL" = all ] && VERSIONS=$all
	run_ganesha ganesha-tcp tcp ""
	VERSIONS=$all
fi
if [ "${VM_ONLY:-}" = bench ] || [ "${VM_ONLY:-}" = devrm ] || [ "${VM_ONLY:-}" = siw ]; then
	:
elif [ -f "$H$PLUGIN" ]; then
	run_ganesha ganesha rdma "$PLUGIN"
	# the product again with Use_SRQ: every receive from one shared receive queue on rxe,
	# a small one (64) so that it has to grow under the kernel client's bursts
	if [ "${GANESHA_SRQ:-1}" != 0 ]; then
		all=$VERSIONS
		VERSIONS=$(echo " $all " | sed 's/ 4\.2 / /; s/^ *//; s/ *$//')
		run_ganesha ganesha-srq rdma "$PLUGIN" 's|Fabric = verbs;|Fabric = verbs; Use_SRQ = true;|'
		VERSIONS=$all
	fi
else
	result ganesha - start na 0 "no $PLUGIN"
fi

# ---------------------------------------------------------------- part 4: device removal
if [ "${VM_ONLY:-}" != bench ] && [ "${VM_ONLY:-}" != siw ] && { [ "${VM_ONLY:-}" = devrm ] || [ "${GANESHA_DEVRM:-1}" != 0 ]; }; then
	if [ -f "$H$PLUGIN" ]; then
		. $HERE/guest-devrm.sh
		devrm_all
	else
		result devrm - start na 0 "no $PLUGIN"
	fi
fi

# ---------------------------------------------------------------- part 5: soft-iWARP
# The same suite and list on siw0: knfsd, ganesha + rpcrdma listening on siw0's address only (so
# its start-up line is siw0's), and Use_SRQ, which iWARP turns into per-connection receives (one
# line in ganesha's log). Every version on each, Use_SRQ too. ganesha starts as in part 3: root,
# the memlock limit the guest gives every process (the plugin raises what it may).
if [ "${VM_SIW:-1}" != 0 ] && { [ -z "${VM_ONLY:-}" ] || [ "${VM_ONLY:-}" = siw ]; } && siw_setup; then
	fabric_suite fabric-siw $SIW_IP unlimited
	export NFS_IP=$SIW_IP
	knfsd_list knfsd-siw
	if [ -f "$H$PLUGIN" ]; then
		LA="s|Fabric = verbs;|Fabric = verbs; Listen_Addr = $SIW_IP;|"
		run_ganesha ganesha-siw rdma "$PLUGIN" "$LA"
		[ "${GANESHA_SRQ:-1}" != 0 ] &&
			run_ganesha ganesha-srq-siw rdma "$PLUGIN" "$LA; s|Fabric = verbs;|Fabric = verbs; Use_SRQ = true;|"
	else
		result ganesha-siw - start na 0 "no $PLUGIN"
	fi
	unset NFS_IP
fi

guest_done 'rpcrdma|svcrdma|xprtrdma|rdma_rxe|rxe|siw|nfs: server' \
	'err|fail|warn|flush|disconnect|timeout|not responding'

#!/bin/sh
# Runs inside the VM (started by ci/vm/init). Order:
#   0. Soft-RoCE: rxe0 on dummy0, 192.168.77.1
#   1. fabric conformance suite (verbs provider on rxe0), if built
#   2. knfsd over RDMA (reference): guest-tests.sh for NFSv3, v4.1, v4.2
#   3. ganesha + librpcrdma_ganesha.so (LD_PRELOAD) over RDMA, same tests, if the plugin is built
# Every result is a line "RESULT <server> <vers> <test> <pass|fail|na> <seconds> [note]" in
# /out/results (and on the console); ci/vm/run.sh turns them into the table.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
HERE=$(dirname "$0")
IP=192.168.77.1
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
ip addr add $IP/24 dev dummy0; ip link set dummy0 up
t0=$(up)
if rdma link add rxe0 type rxe netdev dummy0 && ibv_devices | grep -q rxe0; then
	result setup - rxe0 pass "$(secs $t0)"
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

# rdma_cm + the rxe provider as seen by host-built programs (host libs through the chroot):
# a loopback rping, so a failing fabric suite can be told apart from a broken environment.
t0=$(up)
timeout -s KILL 60 chroot $H rping -s -a $IP -p 7471 -C 3 > /tmp/rping_s.log 2>&1 &
rs=$!
# the server may take a while to listen on a loaded host (libraries come over 9p): retry
for k in 1 2 3 4 5 6 7 8 9 10; do
	sleep 1
	timeout -s KILL 30 chroot $H rping -c -a $IP -p 7471 -C 3 -v > /tmp/rping_c.log 2>&1 && break
done
if wait $rs && grep -q 'ping data' /tmp/rping_c.log; then
	result setup - host_rping pass "$(secs $t0)"
else
	cat /tmp/rping_s.log /tmp/rping_c.log
	result setup - host_rping fail "$(secs $t0)" "rping from the host root over rxe0 failed"
fi

# ---------------------------------------------------------------- part 1: fabric conformance
step fabric
FAB=$BUILDDIR/tests/fabric/test_fabric_conformance
if [ -x "$H$FAB" ]; then
	t0=$(up)
	timeout -s KILL 300 chroot $H env RPCRDMA_FABRIC=verbs RPCRDMA_FABRIC_ADDR=$IP RPCRDMA_FABRIC_DEBUG=1 \
		"$FAB" --gtest_output=xml:/tmp/fabric.xml ${VM_FABRIC_FILTER:+--gtest_filter=$VM_FABRIC_FILTER} \
		> /out/fabric.log 2>&1
	rc=$?
	cp $H/tmp/fabric.xml /out/fabric.xml 2>/dev/null
	tail -30 /out/fabric.log
	cnt() { grep "^\[ *$1 *\] [A-Za-z]" /out/fabric.log | awk '{print $4}' | sort -u | wc -l; }
	tot=$(sed -n 's/^\[==========\] Running \([0-9]*\) test.*/\1/p' /out/fabric.log | head -1)
	if [ $rc = 0 ]; then st=pass; else st=fail; fi
	result fabric verbs conformance $st "$(secs $t0)" \
		"rc=$rc tests=${tot:-?} ok=$(cnt OK) failed=$(cnt FAILED) skipped=$(cnt SKIPPED)"
else
	result fabric verbs conformance na 0 "no $FAB"
fi

# RPCRDMA_VM_ONLY=fabric (run.sh): only the setup and part 1
if [ "${VM_ONLY:-}" = fabric ]; then
	step done
	dmesg > /out/dmesg.txt
	echo "GUEST-MAIN-DONE"
	exit 0
fi

# ---------------------------------------------------------------- part 2: knfsd reference
step knfsd-start
mount -t nfsd nfsd /proc/fs/nfsd
mount -t rpc_pipefs rpc_pipefs /var/lib/nfs/rpc_pipefs
mount -t tmpfs -o size=256m tmpfs /export
echo '/export *(rw,no_root_squash,fsid=1,insecure,no_subtree_check)' > /etc/exports
touch /var/lib/nfs/etab /var/lib/nfs/rmtab
mkdir -p /run/rpcbind; chown _rpc /run/rpcbind
rpcbind -w || echo "FAIL rpcbind"
exportfs -ra
rpc.mountd --no-udp || echo "FAIL mountd"
echo 10 > /proc/fs/nfsd/nfsv4leasetime; echo 10 > /proc/fs/nfsd/nfsv4gracetime
rpc.nfsd --no-udp 4 || echo "FAIL nfsd"
echo "rdma 20049" > /proc/fs/nfsd/portlist || echo "FAIL portlist"
cat /proc/fs/nfsd/portlist
rdma resource show cm_id 2>/dev/null | grep -i listen
step knfsd-grace; sleep 11
for V in $VERSIONS; do
	step "knfsd v$V"
	sh $HERE/guest-tests.sh knfsd $V rdma /export
done
step knfsd-stop
rpc.nfsd 0; exportfs -ua; killall rpc.mountd 2>/dev/null
killall rpcbind 2>/dev/null; sleep 1
umount /export

# ---------------------------------------------------------------- part 3: ganesha + rpcrdma
PLUGIN=$BUILDDIR/src/plugin/librpcrdma_ganesha.so
# run_ganesha ganesha-tcp tcp "" runs the list against ganesha's own TCP transport (no plugin):
# the control that proves the ganesha half of this harness (GANESHA_CONTROL: 1, all or 0).
run_ganesha() { # $1 = label, $2 = proto, $3 = preload (or empty)
	label=$1; proto=$2; pre=$3
	step "ganesha-start $label"
	rpcbind -w || echo "FAIL rpcbind"
	mkdir -p $H/tmp/export $H/run/ganesha $H/var/lib/nfs/ganesha
	sed "s|@EXPORT@|/tmp/export|" $H$REPO/ci/vm/ganesha.conf > $H/tmp/ganesha.conf
	t0=$(up)
	# LD_PRELOAD only when given; the plugin's counters come from its Stats_Socket
	timeout -s KILL 1200 chroot $H env ${pre:+LD_PRELOAD=$pre} \
		/usr/bin/ganesha.nfsd -F -L /tmp/ganesha.log -f /tmp/ganesha.conf -p /run/ganesha/pid &
	gpid=$!
	# ready when it listens on 2049 and, for rdma, has an rdma_cm listener on 20049; if that
	# listener never shows, go on after 30 s anyway (the mounts will tell)
	ok=0
	for i in $(seq 60); do
		kill -0 $gpid 2>/dev/null || break
		if netstat -ltn 2>/dev/null | grep -q ':2049 '; then
			# an rdma_cm listener shows in the rdma tool's cm_id table, not in netstat
			if [ $proto = tcp ] || rdma resource show cm_id 2>/dev/null | grep -qi 'listen.*:20049'; then
				ok=1; break
			fi
			[ $i -ge 30 ] && { ok=1; break; }	# no listener seen: try anyway
		fi
		sleep 1
	done
	if [ $ok = 1 ]; then
		if [ $proto = rdma ] && ! rdma resource show cm_id 2>/dev/null | grep -qi 'listen.*:20049'; then
			result $label - start pass "$(secs $t0)" "but no rdma_cm listener on :20049"
		else
			result $label - start pass "$(secs $t0)"
		fi
		for V in $VERSIONS; do
			step "$label v$V"
			sh $HERE/guest-tests.sh $label $V $proto $H/tmp/export
		done
	else
		result $label - start fail "$(secs $t0)" "ganesha did not come up"
	fi
	step "ganesha-stop $label"
	rdma resource show cm_id 2>/dev/null | grep -i listen
	# the plugin's counters (one JSON object from its stats socket), before it stops
	[ -S $H/tmp/rpcrdma-stats.sock ] && timeout 10 chroot $H python3 -c '
import json, socket
s = socket.socket(socket.AF_UNIX); s.connect("/tmp/rpcrdma-stats.sock"); d = b""
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
	killall rpcbind 2>/dev/null; sleep 1
	rm -rf $H/tmp/export $H/var/lib/nfs/ganesha/*
}
if [ "${GANESHA_CONTROL:-1}" != 0 ]; then
	# the control runs one version unless asked for all (its job: ganesha + config work here)
	all=$VERSIONS
	case " $VERSIONS " in *" 4.1 "*) VERSIONS=4.1 ;; *) VERSIONS=${VERSIONS%% *} ;; esac
	[ "$GANESHA_CONTROL" = all ] && VERSIONS=$all
	run_ganesha ganesha-tcp tcp ""
	VERSIONS=$all
fi
if [ -f "$H$PLUGIN" ]; then
	run_ganesha ganesha rdma "$PLUGIN"
else
	result ganesha - start na 0 "no $PLUGIN"
fi

step done
dmesg | grep -iE 'rpcrdma|svcrdma|xprtrdma|rdma_rxe|rxe|nfs: server' | grep -iE 'err|fail|warn|flush|disconnect|timeout|not responding' \
	> /out/dmesg-errors.txt
dmesg > /out/dmesg.txt
echo "GUEST-MAIN-DONE"

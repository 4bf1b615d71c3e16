#!/bin/sh
# Device removal under ganesha + rpcrdma (issue #25), sourced by guest-main.sh after part 3, or
# alone with RPCRDMA_VM_ONLY=devrm. Uses guest-main.sh's ganesha_start / ganesha_stop / result.
# Every check is a line "RESULT devrm - CHECK pass|fail|na SECONDS [note]".
#
# A: two devices (rxe1 on dummy1 stays): the kernel client mounts over rxe0 (proto=rdma) and over
#    TCP, dd writes through the RDMA mount in the background, then `rdma link delete rxe0`:
#    ganesha stays up, `rpcrdma-stat --check` exits 2, its connection list empties, TCP keeps
#    serving, the removal completes (ganesha closed everything it had on rxe0) and ganesha's fd
#    count is back at its baseline; `rdma link add rxe0`: --check exits 0 again within the
#    re-listen period (RR_RELISTEN_S, 5 s) and a new proto=rdma mount works.
# B: one device: the same removal of rxe0, the last device. librdmacm (rdma-core 44) closes a
#    removed device only when it can read a device list again, and the kernel (rxe cannot
#    disassociate) waits for that close: the removal stays pending while ganesha runs. Checked:
#    ganesha and TCP unaffected, --check exits 2; then what the README tells an admin: restart
#    ganesha, add the device back, RDMA works.
DR_IP2=192.168.78.1
DR_SOCK=/run/rpcrdma/stats.sock
dr() { result devrm - "$@"; }
dr_pid() { pidof ganesha.nfsd | awk '{print $1}'; }
dr_fds() { ls /proc/$1/fd 2>/dev/null | wc -l; }
dr_rss() { awk '/VmRSS/{print $2 "kB"}' /proc/$1/status 2>/dev/null; }
dr_check() { timeout -s KILL 20 chroot $H $BUILDDIR/tools/rpcrdma-stat --check -s $DR_SOCK; }
dr_check_is() { dr_check > /tmp/dr_check.out 2>&1; [ $? = "$1" ]; }
# RDMA down as the plugin reports it: exit 2 with its reason, not a missing socket
dr_check_down() { dr_check_is 2 && grep -q 'not serving' /tmp/dr_check.out; }
dr_conns_empty() {
	timeout -s KILL 20 chroot $H $BUILDDIR/tools/rpcrdma-stat --json -s $DR_SOCK 2>/dev/null |
		grep -q '"connections":\[\]'
}
# NFSv4.1 over RDMA, NFSv3 over TCP: two v4.1 mounts of one server from one client would be
# trunked by the kernel (same server owner: the RDMA mount's I/O would go over the TCP one).
dr_mount() { # DIR rdma|tcp
	mkdir -p $1
	if [ $2 = rdma ]; then o=vers=4.1,proto=rdma,port=20049
	else o=vers=3,proto=tcp,port=2049,mountproto=tcp,nolock; fi
	timeout -s KILL 60 mount.nfs $IP:/export $1 -o $o,soft,timeo=50,retrans=2
}
dr_conns() { # ganesha's RDMA connections, from the stats JSON
	timeout -s KILL 20 chroot $H $BUILDDIR/tools/rpcrdma-stat -s $DR_SOCK 2>/dev/null |
		sed -n 's/^connections: \([0-9]*\) open.*/\1/p' | head -1
}
dr_dev_fds() { # fds of ganesha's on RDMA devices: uverbs nodes, and event/completion channels
	echo "$(ls -l /proc/$1/fd 2>/dev/null | grep -c uverbs) on /dev/infiniband/uverbs*," \
		"$(ls -l /proc/$1/fd 2>/dev/null | grep -c 'infinibandevent') event channels"
}
dr_umount() { grep -q " $1 nfs" /proc/mounts && timeout -s KILL 30 umount -f -l $1; }
dr_wait() { # SECONDS CMD...: 0 once CMD succeeds
	n=$1; shift
	while [ $n -gt 0 ]; do "$@" && return 0; sleep 1; n=$((n - 1)); done
	"$@"
}
# The plugin's line: in ganesha's log (its log since issue #23), or on stderr
# (guest.log) before ganesha's log is up.
dr_removed_lines() {
	cat /out/guest.log "$H/tmp/ganesha.log" 2>/dev/null | grep -c "RDMA device removed: closing"
}
dr_noticed() { [ "$(dr_removed_lines)" -gt "${dr_seen:-0}" ]; }
dr_gone() { ! kill -0 $1 2>/dev/null; }
dr_tcp_ok() { # the TCP mount reads back the reference file, and a new TCP mount works
	sync; echo 3 > /proc/sys/vm/drop_caches
	[ "$(md5sum < /mnt/dt/ref | cut -d' ' -f1)" = "$(md5sum < /tmp/dr_ref | cut -d' ' -f1)" ] || return 1
	dr_mount /mnt/dt2 tcp && ls /mnt/dt2 > /dev/null && dr_umount /mnt/dt2
}
dr_rdma_ok() { # DIR: a new proto=rdma mount writes and reads back 1 MiB
	dr_mount $1 rdma || return 1
	grep " $1 nfs" /proc/mounts | grep -q proto=rdma || return 1
	dd if=/tmp/dr_ref of=$1/back bs=1M conv=fsync 2>/dev/null || return 1
	sync; echo 3 > /proc/sys/vm/drop_caches
	[ "$(md5sum < $1/back | cut -d' ' -f1)" = "$(md5sum < /tmp/dr_ref | cut -d' ' -f1)" ]
}
# `rdma link delete rxe0` with dd in flight, then the checks; sets dr_del (the delete's pid).
# WANT: --check's exit status while rxe0 is gone: 2, or "any" when another device remains (the
# wildcard listener is re-created on it at once, so "not serving" lasts only a moment).
dr_remove_under_io() { # PHASE WANT
	dr_mount /mnt/dr rdma || { dr "$1_mount" fail 0 "rdma mount failed"; return 1; }
	dd if=/dev/zero of=/mnt/dr/big bs=1M count=256 oflag=direct 2>/dev/null &
	dr_dd=$!
	sleep 3
	n=$(dr_conns)
	if grep " /mnt/dr nfs" /proc/mounts | grep -q proto=rdma && [ "${n:-0}" -ge 1 ] && kill -0 $dr_dd 2>/dev/null; then
		dr "$1_rdma_io_in_flight" pass 0 "$n RDMA connection(s), dd running"
	else
		dr "$1_rdma_io_in_flight" fail 0 "connections ${n:-?}, dd $(kill -0 $dr_dd 2>/dev/null && echo running || echo done)"
	fi
	echo "ganesha before removal: fds $(dr_fds $dr_gp) ($(dr_dev_fds $dr_gp)) rss $(dr_rss $dr_gp)"
	t0=$(up)
	timeout -s KILL 600 rdma link delete rxe0 &
	dr_del=$!
	if [ "$2" = any ]; then
		if dr_wait 20 dr_noticed; then
			dr "$1_removal_noticed" pass "$(secs $t0)" "then: $(dr_check 2>&1)"
		else
			dr "$1_removal_noticed" fail "$(secs $t0)" "no 'RDMA device removed' line from the plugin"
		fi
	elif dr_wait 20 dr_check_down; then
		dr "$1_check_not_serving" pass "$(secs $t0)" "$(cat /tmp/dr_check.out)"
	else
		dr "$1_check_not_serving" fail "$(secs $t0)" "exit/line: $(cat /tmp/dr_check.out)"
	fi
	dr_seen=$(dr_removed_lines)
	if dr_wait 30 dr_conns_empty; then dr "$1_conns_closed" pass "$(secs $t0)"
	else dr "$1_conns_closed" fail "$(secs $t0)" "stats still list connections"; fi
	if kill -0 $dr_gp 2>/dev/null; then dr "$1_ganesha_alive" pass "$(secs $t0)" "pid $dr_gp"
	else dr "$1_ganesha_alive" fail "$(secs $t0)" "ganesha died"; fi
	t1=$(up)
	if dr_tcp_ok; then dr "$1_tcp_service" pass "$(secs $t1)"
	else dr "$1_tcp_service" fail "$(secs $t1)" "TCP read-back or TCP mount failed"; fi
}

devrm_all() {
	step devrm
	mkdir -p /mnt
	dd if=/dev/urandom of=/tmp/dr_ref bs=1M count=1 2>/dev/null
	# ---- A: a second device stays
	ip link add dummy1 type dummy; ip addr add $DR_IP2/24 dev dummy1; ip link set dummy1 up
	rdma link add rxe1 type rxe netdev dummy1 || echo "devrm: FAIL rdma link add rxe1"
	ganesha_start devrm rdma "$PLUGIN" || { ganesha_stop devrm; return; }
	dr_gp=$(dr_pid)
	if dr_wait 10 dr_check_is 0; then dr A_check_healthy pass 0 "$(cat /tmp/dr_check.out)"
	else dr A_check_healthy fail 0 "$(cat /tmp/dr_check.out)"; fi
	dr_mount /mnt/dt tcp && cp /tmp/dr_ref /mnt/dt/ref || echo "devrm: FAIL tcp mount"
	fd0=$(dr_fds $dr_gp); rss0=$(dr_rss $dr_gp)
	echo "ganesha baseline (TCP mount, no RDMA client): fds $fd0 ($(dr_dev_fds $dr_gp)) rss $rss0"
	dr_seen=$(dr_removed_lines)
	dr_remove_under_io A any
	t0=$(up)
	if dr_wait 60 dr_gone $dr_del; then
		wait $dr_del; rc=$?
		dr A_device_released pass "$(secs $t0)" "rdma link delete rxe0 returned $rc"
	else
		dr A_device_released fail "$(secs $t0)" "rdma link delete rxe0 still waiting for ganesha"
	fi
	fd2=$(dr_fds $dr_gp)
	echo "ganesha after removal: fds $fd2 ($(dr_dev_fds $dr_gp)) rss $(dr_rss $dr_gp)"
	if [ "$fd2" -le "$fd0" ]; then dr A_fds_back pass 0 "fds: baseline $fd0, after removal $fd2; rss $rss0 -> $(dr_rss $dr_gp)"
	else dr A_fds_back fail 0 "fds: baseline $fd0, after removal $fd2; rss $rss0 -> $(dr_rss $dr_gp)"; fi
	t0=$(up)
	dr_wait 60 dr_gone $dr_dd && wait $dr_dd
	echo "dd on the RDMA mount ended after the removal: rc $? ($(secs $t0) s after)"
	dr_umount /mnt/dr
	t0=$(up)
	if dr_gone $dr_del && rdma link add rxe0 type rxe netdev dummy0; then
		if dr_wait 20 dr_check_is 0; then dr A_relisten pass "$(secs $t0)" "$(cat /tmp/dr_check.out)"
		else dr A_relisten fail "$(secs $t0)" "$(cat /tmp/dr_check.out)"; fi
		t0=$(up)
		if dr_rdma_ok /mnt/dr; then dr A_rdma_mount_again pass "$(secs $t0)"
		else dr A_rdma_mount_again fail "$(secs $t0)" "new proto=rdma mount failed"; fi
		dr_umount /mnt/dr
	else
		dr A_relisten fail "$(secs $t0)" "rxe0 could not be added back"
	fi
	# ---- B: rxe0 is the only device. Removing rxe1 (no connection on it) is noticed by the
	# provider's device check: the listener is re-created on what is left.
	t0=$(up)
	timeout -s KILL 600 rdma link delete rxe1 &
	d1=$!
	if dr_wait 60 dr_gone $d1; then dr B_spare_released pass "$(secs $t0)"
	else dr B_spare_released fail "$(secs $t0)" "rdma link delete rxe1 still waiting"; fi
	dr_wait 20 dr_check_is 0 || echo "devrm: not serving after rxe1 went: $(cat /tmp/dr_check.out)"
	dr_seen=$(dr_removed_lines)
	dr_remove_under_io B 2
	t0=$(up)
	if dr_wait 30 dr_gone $dr_del; then
		dr B_last_device_released pass "$(secs $t0)" "rdma link delete rxe0 returned"
	else
		dr B_last_device_released na "$(secs $t0)" \
			"pending while ganesha runs (librdmacm keeps the last device open): restart ganesha"
	fi
	echo "ganesha after removal: fds $(dr_fds $dr_gp) ($(dr_dev_fds $dr_gp)) rss $(dr_rss $dr_gp)"
	# the admin's way out (README): restart ganesha, add the device, mount again
	dr_umount /mnt/dr
	ganesha_stop devrm
	t0=$(up)
	if dr_wait 60 dr_gone $dr_del; then dr B_released_at_ganesha_exit pass "$(secs $t0)"
	else dr B_released_at_ganesha_exit fail "$(secs $t0)" "rdma link delete rxe0 still waiting"; fi
	kill $dr_dd 2>/dev/null
	dr_umount /mnt/dt
	t0=$(up)
	rdma link add rxe0 type rxe netdev dummy0 || echo "devrm: FAIL rdma link add rxe0"
	if ganesha_start devrm-restart rdma "$PLUGIN" && dr_rdma_ok /mnt/dr; then
		dr B_rdma_after_restart pass "$(secs $t0)"
	else
		dr B_rdma_after_restart fail "$(secs $t0)" "mount after restart failed"
	fi
	dr_umount /mnt/dr
	ganesha_stop devrm-restart
	ip link del dummy1 2>/dev/null
}

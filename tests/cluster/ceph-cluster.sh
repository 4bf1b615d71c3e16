#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ceph-cluster.sh - a throw-away one-host Ceph with a CephFS for the cluster
# tests (two ganesha heads with FSAL CEPH and the rados_cluster recovery
# backend, docs/cluster.md).
#
#   ceph-cluster.sh start DIR   one monitor, one OSD on memstore, one MDS, the
#                               CephFS "cephfs" and the pool "nfs-ganesha" for
#                               the heads' recovery state; all state, sockets
#                               and logs in DIR; prints DIR/ceph.conf
#   ceph-cluster.sh stop DIR    kill the daemons (only the ones started here,
#                               by their pid files), remove DIR
#
# With CEPH_CLUSTER_OWNER=PID in the environment, start leaves a watcher
# that stops the cluster once process PID is gone. CEPH_CLUSTER_TIME_SCALE=N
# multiplies every wait limit and command timeout by N (default 1): the
# interop VM runs this under TCG, several times slower than a host
# (ci/vm/guest-cluster.sh).
# The daemons bind 127.0.0.1 on Ceph's standard ports of the caller's network
# namespace: run it in one of its own (the cluster tests unshare theirs, see
# docs/cluster.md) so that a second run or a real Ceph on the host cannot
# collide with it; the interop VM's guest is a machine of its own and runs it
# as it is. No manager: CephFS, the monitor's pool commands and
# RADOS need none (docs/cluster.md: what a manager would cost). No cephx
# (auth none): one host, one user. Bounded: every wait has a limit of seconds.
set -eu
# stop_pids SECONDS PID...
# shellcheck source=tests/support/stop-pids.sh
. "$(dirname "$0")/../support/stop-pids.sh"

die() {
	echo "ceph-cluster.sh: $*" >&2
	exit 1
}

ADDR=127.0.0.1
SCALE=${CEPH_CLUSTER_TIME_SCALE:-1}
case $SCALE in '' | *[!0-9]* | 0) die "CEPH_CLUSTER_TIME_SCALE=$SCALE: a positive integer" ;; esac

cephc() {
	timeout $((30 * SCALE)) ceph -c "$DIR/ceph.conf" --connect-timeout $((10 * SCALE)) "$@"
}

# wait up to $1 seconds (times SCALE) for "$2..." (a command) to succeed
wait_for() {
	end=$(($(date +%s) + $1 * SCALE))
	shift
	while ! "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 0.5
	done
}

port_busy() {
	ss -Htln "sport = :$1" 2>/dev/null | grep -q .
}

mds_active() {
	cephc mds stat 2>/dev/null | grep -q 'up:active'
}

osd_up() {
	cephc osd stat 2>/dev/null | grep -q '1 up'
}

# daemon NAME CMD...: run CMD in the foreground in the background, pid in
# DIR/run/NAME.pid, output in DIR/log/NAME.out
daemon() {
	name=$1
	shift
	"$@" </dev/null >"$DIR/log/$name.out" 2>&1 &
	echo $! >"$DIR/run/$name.pid"
}

start() {
	for b in ceph-mon ceph-osd ceph-mds ceph monmaptool ceph-authtool; do
		command -v $b >/dev/null ||
			die "$b is not installed (ci/install-deps.sh: ceph-mon ceph-osd ceph-mds)"
	done
	for p in 3300 6789; do
		! port_busy $p || die "port $p is taken here (another monitor? run in a network namespace of its own)"
	done
	[ ! -e "$DIR/ceph.conf" ] || die "$DIR already holds a cluster (stop it first)"
	mkdir -p "$DIR/mon/a" "$DIR/osd/0" "$DIR/mds/a" "$DIR/run" "$DIR/log"
	fsid=$(cat /proc/sys/kernel/random/uuid)
	# memstore: the OSD keeps objects in memory (the tests write a few MiB),
	# no block device or file system of its own; small caches everywhere
	cat >"$DIR/ceph.conf" <<CONF
[global]
fsid = $fsid
mon host = [v2:$ADDR:3300,v1:$ADDR:6789]
public addr = $ADDR
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = true
run dir = $DIR/run
admin socket = $DIR/run/\$name.asok
log file = $DIR/log/\$name.log
log to stderr = false
err to stderr = false
keyring = $DIR/keyring
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0
mon max pg per osd = 1000
[mon]
mon data = $DIR/mon/\$id
mon cluster log file = $DIR/log/cluster.log
mon osd reporter subtree level = osd
[osd]
osd data = $DIR/osd/\$id
osd objectstore = memstore
memstore device bytes = 1073741824
osd memory target = 268435456
osd op num shards = 1
osd op num threads per shard = 2
osd max object name len = 256
osd max object namespace len = 64
[mds]
mds data = $DIR/mds/\$id
mds cache memory limit = 134217728
CONF
	ceph-authtool --create-keyring "$DIR/keyring" --gen-key -n mon. \
		--cap mon 'allow *' >/dev/null
	monmaptool --create --fsid "$fsid" --addv a "[v2:$ADDR:3300,v1:$ADDR:6789]" \
		"$DIR/monmap" >/dev/null
	ceph-mon -c "$DIR/ceph.conf" --mkfs -i a --monmap "$DIR/monmap" \
		--keyring "$DIR/keyring" >"$DIR/log/mon-mkfs.out" 2>&1 ||
		die "ceph-mon --mkfs failed: $(tail -5 "$DIR/log/mon-mkfs.out")"
	daemon mon.a ceph-mon -c "$DIR/ceph.conf" -f -i a
	wait_for 30 cephc mon stat || die "the monitor did not answer in $((30 * SCALE)) s: $(tail -5 "$DIR/log/mon.a.log" 2>/dev/null)"

	uuid=$(cat /proc/sys/kernel/random/uuid)
	id=$(cephc osd new "$uuid") || die "ceph osd new failed"
	[ "$id" = 0 ] || die "osd new gave id $id, not 0"
	ceph-osd -c "$DIR/ceph.conf" -i 0 --mkfs --osd-uuid "$uuid" \
		>"$DIR/log/osd-mkfs.out" 2>&1 ||
		die "ceph-osd --mkfs failed: $(tail -5 "$DIR/log/osd-mkfs.out")"
	daemon osd.0 ceph-osd -c "$DIR/ceph.conf" -f -i 0
	wait_for 60 osd_up || die "osd.0 not up in $((60 * SCALE)) s: $(tail -5 "$DIR/log/osd.0.log" 2>/dev/null)"

	daemon mds.a ceph-mds -c "$DIR/ceph.conf" -f -i a
	{
		cephc osd pool create cephfs_metadata 8 &&
			cephc osd pool create cephfs_data 8 &&
			cephc fs new cephfs cephfs_metadata cephfs_data &&
			# the heads' client records and the shared grace database (RADOS_KV)
			cephc osd pool create nfs-ganesha 8 &&
			cephc osd pool application enable nfs-ganesha nfs
	} >"$DIR/log/setup.out" 2>&1 || die "pool or file system setup failed: $(tail -5 "$DIR/log/setup.out")"
	wait_for 60 mds_active || die "no active MDS in $((60 * SCALE)) s: $(cephc mds stat 2>&1; tail -5 "$DIR/log/mds.a.log" 2>/dev/null)"
	# CEPH_CLUSTER_OWNER=PID: stop the cluster when that process is gone
	# (a test killed by its timeout leaves no daemons behind)
	if [ -n "${CEPH_CLUSTER_OWNER:-}" ]; then
		setsid sh -c 'while kill -0 "$1" 2>/dev/null && [ -e "$3/ceph.conf" ]; do sleep 2; done
			[ ! -e "$3/ceph.conf" ] || "$2" stop "$3"' \
			watch "$CEPH_CLUSTER_OWNER" "$0" "$DIR" </dev/null >/dev/null 2>&1 &
	fi
	echo "$DIR/ceph.conf"
}


pid_of() {
	[ ! -f "$DIR/run/$1.pid" ] || cat "$DIR/run/$1.pid"
}

stop() {
	[ -d "$DIR" ] || return 0
	# the MDS and the OSD first: they shut down talking to the monitor
	pids="$(pid_of mds.a) $(pid_of osd.0)"
	# shellcheck disable=SC2086
	[ -z "${pids# }" ] || stop_pids 2 $pids
	pids=$(pid_of mon.a)
	[ -z "$pids" ] || stop_pids 2 "$pids"
	if [ -n "${RR_KEEP_TMP:-}" ]; then
		mv "$DIR/ceph.conf" "$DIR/ceph.conf.stopped" 2>/dev/null || true
	else
		rm -rf "$DIR"
	fi
}

[ $# -eq 2 ] || die "usage: ceph-cluster.sh start|stop DIR"
DIR=$2
case "$1" in
start) start ;;
stop) stop ;;
*) die "unknown command $1" ;;
esac

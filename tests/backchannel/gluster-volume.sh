#!/bin/sh
# SPDX-License-Identifier: MIT
#
# gluster-volume.sh - a throw-away single-brick GlusterFS volume for the
# delegation tests (FSAL GLUSTER is the one FSAL of Debian's ganesha 4.3 that
# declares delegations and implements lease_op2).
#
#   gluster-volume.sh up DIR VOLUME   start glusterd with its state in DIR, create
#                                     VOLUME with one brick in DIR, leases on,
#                                     start it; prints the brick host address
#   gluster-volume.sh down DIR        kill the brick and glusterd, remove DIR
#
# No systemd: glusterd runs in the foreground (-N) from a volfile of our own,
# so its working, run and socket directories are all under DIR and reruns
# start clean. Bounded: every wait below has a limit of seconds.
# RR_GLUSTER_FORCE_FALLBACK=1 takes the lo fallback address (see brick_host)
# even where a global address exists, to test that path.
set -eu
# stop_pids SECONDS PID...
# shellcheck source=tests/support/stop-pids.sh
. "$(dirname "$0")/../support/stop-pids.sh"

GLUSTERD_PORT=24007 # fixed: gfapi (ganesha's FSAL) always asks this port

die() {
	echo "gluster-volume.sh: $*" >&2
	exit 1
}

cli() {
	gluster --mode=script --glusterd-sock="$DIR/glusterd.socket" \
		--log-file="$DIR/log/cli.log" "$@"
}

# glusterd refuses loopback brick hosts ("provide a valid hostname/ip other
# than localhost"): use the first global IPv4 address of this machine. A box
# with none (an isolated CI runner) gets one on lo from the benchmarking range
# (RFC 2544), removed again by down.
FALLBACK_ADDR=198.18.0.1
brick_host() {
	ip -4 -o addr show scope global 2>/dev/null |
		awk '{ sub(/\/.*/, "", $4); print $4; exit }'
}
fallback_host() {
	ip addr add "$FALLBACK_ADDR/32" dev lo scope global 2>/dev/null || return 1
	: >"$DIR/lo-addr"
	echo "$FALLBACK_ADDR"
}

# wait up to $1 seconds for "$2" (a command) to succeed
wait_for() {
	end=$(($(date +%s) + $1))
	shift
	while ! "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 0.2
	done
}

port_busy() {
	ss -Htln "sport = :$GLUSTERD_PORT" 2>/dev/null | grep -q .
}

brick_online() {
	cli volume status "$VOLUME" --xml 2>/dev/null | grep -q '<status>1</status>'
}


up() {
	command -v glusterd >/dev/null || die "glusterd is not installed (glusterfs-server)"
	mkdir -p "$DIR"
	HOST=
	[ -n "${RR_GLUSTER_FORCE_FALLBACK:-}" ] || HOST=$(brick_host)
	[ -n "$HOST" ] || HOST=$(fallback_host) ||
		die "no global IPv4 address for the brick and none could be added to lo (glusterd refuses loopback)"
	! port_busy || die "port $GLUSTERD_PORT is taken (another glusterd?)"
	mkdir -p "$DIR/lib" "$DIR/run" "$DIR/log" "$DIR/brick"
	cat >"$DIR/glusterd.vol" <<EOF
volume management
    type mgmt/glusterd
    option working-directory $DIR/lib
    option run-directory $DIR/run
    option glusterd-sockfile $DIR/glusterd.socket
    option transport-type socket
    option transport.socket.listen-port $GLUSTERD_PORT
    option transport.socket.read-fail-log off
    option ping-timeout 0
    option event-threads 1
end-volume
EOF
	glusterd -N -f "$DIR/glusterd.vol" \
		-l "$DIR/log/glusterd.log" -S "$DIR/glusterfsd.socket" \
		</dev/null >"$DIR/log/glusterd.out" 2>&1 &
	echo $! >"$DIR/glusterd.pid"
	wait_for 10 cli volume list || die "glusterd did not answer in 10 s: $(tail -5 "$DIR/log/glusterd.log")"
	# force: the brick sits on the root file system
	cli volume create "$VOLUME" "$HOST:$DIR/brick/$VOLUME" force >&2 ||
		die "volume create failed"
	# ganesha's lease_op2 is glfs_lease(), which needs the leases xlator
	cli volume set "$VOLUME" features.leases on >&2 || die "features.leases on failed"
	cli volume start "$VOLUME" >&2 || die "volume start failed"
	wait_for 20 brick_online || die "brick not online in 20 s: $(cli volume status "$VOLUME" 2>&1)"
	echo "$HOST"
}

down() {
	[ -d "$DIR" ] || return 0
	pids=""
	files=""
	for f in "$DIR"/run/vols/*/*.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		pids="$pids $pid"
		# the brick's socket and log live outside DIR: named on its command line
		args=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
		sock=$(echo "$args" | sed -n 's/.* -S \([^ ]*\.socket\) .*/\1/p')
		blog=$(echo "$args" | sed -n 's/.* -l \([^ ]*\.log\) .*/\1/p')
		case "$sock" in /var/run/gluster/*.socket | /run/gluster/*.socket) files="$files $sock" ;; esac
		case "$blog" in /var/log/glusterfs/bricks/*.log) files="$files $blog" ;; esac
	done
	[ -f "$DIR/glusterd.pid" ] && pids="$pids $(cat "$DIR/glusterd.pid")"
	# shellcheck disable=SC2086
	[ -z "$pids" ] || stop_pids 5 $pids
	# shellcheck disable=SC2086
	[ -z "$files" ] || rm -f $files
	[ ! -f "$DIR/lo-addr" ] || ip addr del "$FALLBACK_ADDR/32" dev lo 2>/dev/null || true
	rm -rf "$DIR"
}

[ $# -ge 2 ] || die "usage: gluster-volume.sh up DIR VOLUME | down DIR"
DIR=$2
case "$1" in
up)
	[ $# -eq 3 ] || die "usage: gluster-volume.sh up DIR VOLUME"
	VOLUME=$3
	up
	;;
down) down ;;
*) die "unknown command $1" ;;
esac

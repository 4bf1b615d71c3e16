# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# Sourced by the throw-away cluster scripts (tests/backchannel/gluster-volume.sh,
# tests/cluster/ceph-cluster.sh).
#
# stop_pids SECONDS PID...: TERM the given pids (only ones the script
# started) together, KILL what is left after SECONDS.
stop_pids() {
	n=$(($1 * 10))
	shift
	kill -TERM "$@" 2>/dev/null || true
	while [ "$n" -gt 0 ]; do
		alive=0
		for pid in "$@"; do
			! kill -0 "$pid" 2>/dev/null || alive=1
		done
		[ "$alive" = 1 ] || return 0
		sleep 0.1
		n=$((n - 1))
	done
	kill -KILL "$@" 2>/dev/null || true
}

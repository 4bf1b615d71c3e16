# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# bench/lib.sh - what bench/run.sh and bench/evt-threads.sh share: the build
# dir, the host's set-up, and ganesha serving FSAL MEM over NFS/TCP and
# NFS/RDMA (soft fabric on a unix socket), started and waited for the same
# way. Sourced, never run; bash. The caller sets ROOT (the checkout) first,
# and NB (nfsbench) and PLUGIN (librpcrdma_ganesha.so) before bench_ganesha.

# bench_builddir: $RPCRDMA_BUILD (relative to ROOT) or ROOT/build.
bench_builddir() {
	local b=${RPCRDMA_BUILD:-$ROOT/build}
	case "$b" in /*) ;; *) b=$ROOT/$b ;; esac
	echo "$b"
}

# bench_host_setup: enough file descriptors for many connections, and an
# rpcbind (ganesha registers with it, and the NFSv3 clients ask it).
bench_host_setup() {
	ulimit -n 65536 2>/dev/null || ulimit -n 16384 2>/dev/null || true
	if ! pgrep -x rpcbind >/dev/null; then mkdir -p /run/rpcbind; rpcbind -w 2>/dev/null || true; fi
}

# bench_gconf DIR PORTBASE RDMA_KEYS: DIR/ganesha.conf serving FSAL MEM on
# NFS/TCP (PORTBASE, MOUNT on PORTBASE + 1) and NFS/RDMA (soft fabric on
# DIR/rdma.sock) with the stats socket DIR/stats.sock; RDMA_KEYS go into the
# RDMA block (e.g. "Credits = 64;").
bench_gconf() {
	cat >"$1/ganesha.conf" <<EOF
NFS_CORE_PARAM {
	NFS_Port = $2; MNT_Port = $(($2 + 1)); NLM_Port = $(($2 + 2)); Rquota_Port = $(($2 + 3));
	Protocols = 3, 4; Enable_NLM = false; Enable_RQUOTA = false;
	# ganesha 6 stops without CAP_SYS_RESOURCE otherwise (containers, CI);
	# 4.3 and 5.9 only warn that they do not know the key
	allow_set_io_flusher_fail = true;
}
NFSV4 { Grace_Period = 10; Lease_Lifetime = 10; Graceless = true; }
EXPORT {
	Export_Id = 1; Path = /mem; Pseudo = /mem; Access_Type = RW; Squash = No_Root_Squash;
	FSAL { Name = MEM; }
}
RDMA {
	Enable = true; Fabric = soft; Soft_Socket = $1/rdma.sock; $3
	Stats_Socket = $1/stats.sock;
}
LOG { Default_Log_Level = EVENT; }
EOF
}

# bench_ganesha DIR PORT RDMA_KEYS [WRAPPER ARGS...]: ganesha.nfsd with the
# plugin preloaded on bench_gconf's config (under WRAPPER, e.g. valgrind);
# sets GPID; returns once the soft fabric's socket is there and a NULL call
# over TCP is answered, 1 (with the logs' tails) when it does not come up
# within two minutes.
bench_ganesha() {
	local d=$1 port=$2 keys=$3
	shift 3
	mkdir -p "$d"
	bench_gconf "$d" "$port" "$keys"
	LD_PRELOAD=$PLUGIN "$@" ganesha.nfsd -F -f "$d/ganesha.conf" -L "$d/ganesha.log" \
		-p "$d/pid" >"$d/stdout.log" 2>&1 &
	GPID=$!
	for _ in $(seq 240); do
		if [ -S "$d/rdma.sock" ] && "$NB" --tcp 127.0.0.1:"$port" --op null --count 1 \
			>/dev/null 2>&1; then
			return 0
		fi
		kill -0 "$GPID" 2>/dev/null || break
		sleep 0.5
	done
	echo "ganesha did not start; see $d" >&2
	tail -n 5 "$d/ganesha.log" "$d/stdout.log" >&2
	return 1
}

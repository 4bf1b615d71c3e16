#!/bin/sh
# Container entrypoint, run by tini (PID 1, which reaps rpcbind's daemon and
# forwards signals): rpcbind, then ganesha.nfsd in the foreground with the
# rpcrdma plugin, in the environment the nfs-ganesha unit gets from the
# package's systemd drop-in (LD_PRELOAD, LimitMEMLOCK=infinity).
#   GANESHA_CONF      configuration to mount (default /etc/ganesha/ganesha.conf)
#   GANESHA_LOG       ganesha's log (default STDOUT)
#   GANESHA_LOGLEVEL  default NIV_EVENT
# Extra arguments go to ganesha.nfsd.
set -eu
conf=${GANESHA_CONF:-/etc/ganesha/ganesha.conf}
# The package's drop-in, beside nfs-ganesha.service.
dropin=$(dpkg-query -L rpcrdma | grep '/nfs-ganesha.service.d/rpcrdma.conf$' | head -1)
[ -f "$dropin" ] || { echo "rpcrdma-entrypoint: the rpcrdma package's drop-in is missing" >&2; exit 2; }

if [ ! -f "$conf" ]; then
	echo "rpcrdma-entrypoint: no $conf: mount one, e.g." \
	     "-v ./ganesha.conf:/etc/ganesha/ganesha.conf:ro" \
	     "(example: /usr/share/doc/rpcrdma/examples/ganesha-rdma.conf)" >&2
	exit 2
fi
mkdir -p /run/rpcbind /run/ganesha /var/log/ganesha /var/lib/nfs/ganesha
# FSAL VFS finds file systems in /etc/mtab, which a bare root may lack.
[ -e /etc/mtab ] || ln -s ../proc/self/mounts /etc/mtab

# With --network host the host's rpcbind may already answer; use it then.
if ! rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then
	rpcbind -w
	i=0
	until rpcinfo -p 127.0.0.1 >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 50 ] || { echo "rpcrdma-entrypoint: rpcbind does not answer" >&2; exit 1; }
		sleep 0.1
	done
fi

# Registered memory: needs --ulimit memlock=-1 (or --cap-add IPC_LOCK).
if ! ulimit -l unlimited 2>/dev/null; then
	echo "rpcrdma-entrypoint: RLIMIT_MEMLOCK is $(ulimit -l) KiB" \
	     "(run with --ulimit memlock=-1 for RDMA hardware)" >&2
fi
# Environment= lines of the drop-in, as systemd would set them.
set -a
eval "$(sed -n 's/^Environment=//p' "$dropin")"
set +a
exec /usr/bin/ganesha.nfsd -F -f "$conf" -L "${GANESHA_LOG:-STDOUT}" \
	-N "${GANESHA_LOGLEVEL:-NIV_EVENT}" -p /run/ganesha/ganesha.pid "$@"

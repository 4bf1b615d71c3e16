#!/bin/sh
# Install the rpcrdma .deb on this machine, start ganesha the way the
# nfs-ganesha unit would with the package's drop-in (its Environment= and
# LimitMEMLOCK), on the soft fabric, check the plugin's "listening" line and
# rpcrdma-stat, stop ganesha, purge the package. Root only; it changes the
# machine (dpkg), so it runs only when asked:
#   RPCRDMA_PACKAGE_TEST=1 ci/package-test.sh [DEB | BUILD_DIR]
# Without RPCRDMA_PACKAGE_TEST=1 it exits 77 (ctest: skipped). With a build
# directory (default build-pkg) it builds the package there (ci/package.sh).
set -eu
cd "$(dirname "$0")/.."
if [ "${RPCRDMA_PACKAGE_TEST:-0}" != 1 ]; then
	echo "package-test: skipped (set RPCRDMA_PACKAGE_TEST=1; it installs and purges a .deb)"
	exit 77
fi
[ "$(id -u)" -eq 0 ] || { echo "package-test: needs root" >&2; exit 1; }

arg=${1:-build-pkg}
case $arg in
*.deb) deb=$arg ;;
*) deb=$(ci/package.sh "$arg" | tail -1) ;;
esac
[ -f "$deb" ] || { echo "package-test: no package $deb" >&2; exit 1; }
if dpkg -s rpcrdma >/dev/null 2>&1 && [ "${RPCRDMA_PACKAGE_TEST_FORCE:-0}" != 1 ]; then
	echo "package-test: rpcrdma is already installed here; not touching it" \
	     "(RPCRDMA_PACKAGE_TEST_FORCE=1 reinstalls and purges it)" >&2
	exit 1
fi

work=$(mktemp -d /tmp/rpcrdma-package-test.XXXXXX)
gpid=
cleanup() {
	rc=$?
	if [ -n "$gpid" ] && kill -0 "$gpid" 2>/dev/null; then
		kill -TERM "$gpid" 2>/dev/null || true
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$gpid" 2>/dev/null || break; sleep 0.5; done
		kill -KILL "$gpid" 2>/dev/null || true
	fi
	dpkg --purge rpcrdma >/dev/null 2>&1 || true
	if [ $rc -ne 0 ]; then
		echo "--- ganesha stderr ---"; cat "$work/stderr.log" 2>/dev/null || true
		echo "--- ganesha log (tail) ---"; tail -20 "$work/ganesha.log" 2>/dev/null || true
		echo "package-test: FAILED"
	fi
	rm -rf "$work"
	exit $rc
}
trap cleanup EXIT INT TERM

step() { echo "== $*"; }
fail() { echo "package-test: $*" >&2; exit 1; }

step "dpkg -i $(basename "$deb")"
dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i failed"; }
dropin=/etc/systemd/system/nfs-ganesha.service.d/rpcrdma.conf
for f in /usr/lib/x86_64-linux-gnu/rpcrdma/librpcrdma_ganesha.so /usr/bin/rpcrdma-stat \
	 /usr/share/doc/rpcrdma/examples/ganesha-rdma.conf "$dropin"; do
	[ -e "$f" ] || fail "$f not installed"
done
dpkg -L rpcrdma | while read -r f; do [ -d "$f" ] || echo "   $f"; done

step "environment from $dropin"
# What systemd gives ExecStart: Environment= lines, LimitMEMLOCK.
env_lines=$(sed -n 's/^Environment=//p' "$dropin")
[ -n "$env_lines" ] || fail "no Environment= in $dropin"
echo "$env_lines" | sed 's/^/   /'
memlock=$(sed -n 's/^LimitMEMLOCK=//p' "$dropin")
[ "$memlock" = infinity ] || fail "LimitMEMLOCK is '$memlock', not infinity"

unit=/lib/systemd/system/nfs-ganesha.service
if command -v systemd-analyze >/dev/null && [ -f "$unit" ]; then
	step "systemd-analyze verify nfs-ganesha.service + the drop-in"
	mkdir -p "$work/units/nfs-ganesha.service.d"
	cp "$unit" "$work/units/"
	cp "$dropin" "$work/units/nfs-ganesha.service.d/"
	SYSTEMD_UNIT_PATH="$work/units:" systemd-analyze verify \
		"$work/units/nfs-ganesha.service" >"$work/verify.log" 2>&1 || true
	if grep -q "rpcrdma.conf" "$work/verify.log"; then
		cat "$work/verify.log"
		fail "systemd does not accept the drop-in"
	fi
	echo "   ok"
fi

step "ganesha.nfsd with the drop-in's environment, RDMA block on the soft fabric"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])'; }
nfs=$(port); mnt=$(port); nlm=$(port); rq=$(port)
cat >"$work/ganesha.conf" <<CONF
NFS_CORE_PARAM {
	NFS_Port = $nfs; MNT_Port = $mnt; NLM_Port = $nlm; Rquota_Port = $rq;
	Protocols = 3, 4; Enable_NLM = false; Enable_RQUOTA = false;
}
NFSV4 { Graceless = true; Lease_Lifetime = 10; Grace_Period = 10; RecoveryRoot = $work; }
EXPORT {
	Export_Id = 1; Path = /mem; Pseudo = /mem; Access_Type = RW;
	Squash = No_Root_Squash; FSAL { Name = MEM; }
}
RDMA {
	Enable = true;
	Fabric = soft;
	Soft_Socket = $work/rdma.sock;
	Stats_Socket = $work/stats.sock;
}
LOG { Default_Log_Level = EVENT; }
CONF
if ! rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then
	mkdir -p /run/rpcbind
	rpcbind -w
	sleep 1
fi
ganesha=$(command -v ganesha.nfsd || echo /usr/bin/ganesha.nfsd)
# LimitMEMLOCK=infinity; a container without CAP_SYS_RESOURCE keeps its hard
# limit (the soft fabric needs no pinned memory).
if ! (ulimit -l unlimited) 2>/dev/null; then
	echo "   (cannot raise RLIMIT_MEMLOCK here: running with $(ulimit -Hl))"
fi
(
	ulimit -l unlimited 2>/dev/null || ulimit -l "$(ulimit -Hl)"
	set -a
	eval "$env_lines"
	set +a
	exec "$ganesha" -F -f "$work/ganesha.conf" -L "$work/ganesha.log" -p "$work/ganesha.pid"
) >"$work/stderr.log" 2>&1 &
gpid=$!
i=0
until grep -q "rpcrdma: NFS over RDMA listening on" "$work/stderr.log"; do
	kill -0 "$gpid" 2>/dev/null || fail "ganesha exited"
	i=$((i + 1)); [ $i -lt 200 ] || fail "no 'listening' line in 20 s"
	sleep 0.1
done
grep "rpcrdma:" "$work/stderr.log" | sed 's/^/   /'
grep -q "rpcrdma: version mismatch" "$work/stderr.log" && fail "version guard refused"
i=0
until [ -S "$work/stats.sock" ]; do
	i=$((i + 1)); [ $i -lt 50 ] || fail "no stats socket"
	sleep 0.1
done

step "rpcrdma-stat -s $work/stats.sock"
out=$(rpcrdma-stat -s "$work/stats.sock") || fail "rpcrdma-stat failed"
echo "$out" | sed 's/^/   /'
echo "$out" | grep -q "^rpcrdma: serving on .*, fabric soft" || fail "unexpected table"
echo "$out" | grep -q "^connections: 0 open" || fail "unexpected connection count"
echo "$out" | grep -q "^TOTAL " || fail "no TOTAL row"
json=$(rpcrdma-stat --json -s "$work/stats.sock") || fail "rpcrdma-stat --json failed"
case $json in
'{"fabric":"soft","server":{'*'"global":{'*'"connections":[],"health":{"serving":true,'*'}}') ;;
*) fail "unexpected JSON: $json" ;;
esac
echo "   --json: $(printf %s "$json" | cut -c1-100)..."
check=$(rpcrdma-stat --check -s "$work/stats.sock") || fail "rpcrdma-stat --check: exit $?: $check"
echo "   --check: $check"

step "stop ganesha, dpkg --purge rpcrdma"
kill -TERM "$gpid"
wait "$gpid" 2>/dev/null || true
gpid=
dpkg --purge rpcrdma >/dev/null
for f in /usr/lib/x86_64-linux-gnu/rpcrdma /usr/bin/rpcrdma-stat "$dropin"; do
	[ ! -e "$f" ] || fail "$f left after purge"
done
echo "== package-test: PASSED"

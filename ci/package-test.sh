#!/bin/sh
# The rpcrdma .deb on this machine, as an admin lives with it:
#   1. upgrade from 0.1.0-1's layout (its drop-in a conffile in /etc): the
#      old drop-in is gone after the upgrade;
#   2. ganesha started the way nfs-ganesha.service would be (every drop-in's
#      Environment=, LimitMEMLOCK, bash -c as the unit's ExecStart), on the
#      soft fabric: the plugin's "listening" line, rpcrdma-stat, --check;
#   3. dpkg --remove (apt remove), ganesha started again the same way: no
#      ld.so preload error in its output or log, TCP served;
#   4. dpkg --purge: nothing dpkg -L listed is left (but directories other
#      packages own), no drop-in anywhere;
#   5. lintian: no errors, no warnings.
# Root only; it changes the machine (dpkg), so it runs only when asked:
#   RPCRDMA_PACKAGE_TEST=1 ci/package-test.sh [DEB | BUILD_DIR]
#   RPCRDMA_PACKAGE_TEST=1 ci/package-test.sh --release RELEASE [DEB]
#   RPCRDMA_PACKAGE_TEST=1 ci/package-test.sh [--release RELEASE] --foreign DEB
# Without RPCRDMA_PACKAGE_TEST=1 it exits 77 (ctest: skipped). With a build
# directory (default build-pkg) it builds the package there (ci/package.sh).
# --release RELEASE (bookworm, bookworm-backports, trixie; see ci/package.sh):
# the package for RELEASE (built by `ci/package.sh RELEASE` unless given),
# tested in a throw-away overlay of RELEASE's cached root (ci/release-root.sh),
# so the cache stays clean; lintian runs here (the roots have none).
# --foreign DEB: a package built for another release, forced in as an admin
# would (dpkg --force-depends): ganesha still starts, serves TCP, and says in
# one rpcrdma line that RDMA is off, naming both versions; then it is purged.
set -eu
cd "$(dirname "$0")/.."
if [ "${RPCRDMA_PACKAGE_TEST:-0}" != 1 ]; then
	echo "package-test: skipped (set RPCRDMA_PACKAGE_TEST=1; it installs and purges a .deb)"
	exit 77
fi
[ "$(id -u)" -eq 0 ] || { echo "package-test: needs root" >&2; exit 1; }

rel=
if [ "${1:-}" = --release ]; then
	[ $# -ge 2 ] || { echo "package-test: --release needs a release" >&2; exit 2; }
	rel=$2
	shift 2
fi
foreign=0
if [ "${1:-}" = --foreign ]; then
	[ $# -ge 2 ] || { echo "package-test: --foreign needs a .deb" >&2; exit 2; }
	foreign=1
	shift
fi

. /etc/os-release
here=${VERSION_CODENAME:-}
case $(dpkg-query -W -f '${Version}' nfs-ganesha 2>/dev/null || true) in
*~bpo*) here=$here-backports ;;
esac
if [ -n "$rel" ] && [ "$rel" != "$here" ]; then
	# RELEASE's root, overlaid: what dpkg does there lands in the upper
	# layer, dropped with this private mount namespace.
	if [ -z "${RPCRDMA_PACKAGE_TEST_NS:-}" ]; then
		command -v lintian >/dev/null ||
			{ echo "package-test: lintian is missing (ci/install-deps.sh installs it)" >&2; exit 1; }
		deb=${1:-}
		[ -n "$deb" ] || deb=$(ci/package.sh "$rel" | tail -1)
		[ -f "$deb" ] || { echo "package-test: no package $deb" >&2; exit 1; }
		deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")
		# the cached root, made or brought up to date first
		ci/release-root.sh "$rel" -- true
		if [ $foreign = 1 ]; then set -- --foreign "$deb"; else set -- "$deb"; fi
		exec unshare --mount --propagation private \
			env RPCRDMA_PACKAGE_TEST_NS=1 "$0" --release "$rel" "$@"
	fi
	cache=${RPCRDMA_ROOTS:-/var/cache/rpcrdma-roots}
	ovl=$(mktemp -d /var/tmp/rpcrdma-package-root.XXXXXX)
	trap 'umount -R "$ovl/roots/$rel" 2>/dev/null; rm -rf --one-file-system "$ovl"' EXIT
	mkdir -p "$ovl/upper" "$ovl/work" "$ovl/roots/$rel"
	mount -t overlay overlay -o "lowerdir=$cache/$rel,upperdir=$ovl/upper,workdir=$ovl/work" \
		"$ovl/roots/$rel"
	deb=$1
	mkdir -p "$ovl/roots/$rel/var/tmp/rpcrdma-package"
	cp "$deb" "$ovl/roots/$rel/var/tmp/rpcrdma-package/"
	in_deb=/var/tmp/rpcrdma-package/$(basename "$deb")
	echo "== $rel root (overlay of $cache/$rel): ci/package-test.sh" \
	     "$([ $foreign = 1 ] && echo "--foreign ")$(basename "$deb")"
	if [ $foreign = 1 ]; then set -- --foreign "$in_deb"; else set -- "$in_deb"; fi
	RPCRDMA_ROOTS=$ovl/roots ci/release-root.sh "$rel" -- env RPCRDMA_PACKAGE_TEST=1 \
		RPCRDMA_PACKAGE_TEST_LINTIAN=0 ci/package-test.sh "$@"
	[ $foreign = 0 ] || exit 0
	echo "== lintian $(basename "$deb") (here: the roots have no lintian)"
	lintian --display-info --fail-on error,warning "$deb" >"$ovl/lintian.log" 2>&1 && lrc=0 || lrc=$?
	grep -v "running with root privileges" "$ovl/lintian.log" | sed 's/^/   /'
	[ $lrc -eq 0 ] || { echo "package-test: lintian: errors or warnings (exit $lrc)"; exit 1; }
	! grep -q "^[EW]: " "$ovl/lintian.log" || { echo "package-test: lintian: errors or warnings"; exit 1; }
	echo "   no errors, no warnings"
	echo "== package-test --release $rel: PASSED"
	exit 0
fi
lint=${RPCRDMA_PACKAGE_TEST_LINTIAN:-1}
if [ "$lint" = 1 ] && [ $foreign = 0 ]; then
	command -v lintian >/dev/null ||
		{ echo "package-test: lintian is missing (ci/install-deps.sh installs it)" >&2; exit 1; }
fi

arg=${1:-${rel:+build-rel-$rel}}
arg=${arg:-build-pkg}
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
stop_ganesha() {
	if [ -n "$gpid" ] && kill -0 "$gpid" 2>/dev/null; then
		kill -TERM "$gpid" 2>/dev/null || true
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$gpid" 2>/dev/null || break; sleep 0.5; done
		kill -KILL "$gpid" 2>/dev/null || true
	fi
	[ -z "$gpid" ] || wait "$gpid" 2>/dev/null || true
	gpid=
}
cleanup() {
	rc=$?
	stop_ganesha
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

old_dropin=/etc/systemd/system/nfs-ganesha.service.d/rpcrdma.conf
[ ! -e "$old_dropin" ] || fail "$old_dropin exists before the test: not ours, not touching it"

# What systemd gives nfs-ganesha.service's ExecStart from its drop-ins: the
# Environment= lines of every nfs-ganesha.service.d/*.conf in systemd's unit
# search path, a name in an earlier directory hiding the same name in a
# later one (a /dev/null symlink masks it). Printed one per line.
unit_env() {
	seen=" "
	for d in /etc/systemd/system /run/systemd/system /usr/local/lib/systemd/system \
		 /lib/systemd/system /usr/lib/systemd/system; do
		for f in "$d"/nfs-ganesha.service.d/*.conf; do
			[ -e "$f" ] || [ -L "$f" ] || continue
			n=$(basename "$f")
			case $seen in *" $n "*) continue ;; esac
			seen="$seen$n "
			if [ -f "$f" ]; then sed -n 's/^Environment=//p' "$f"; fi
		done
	done
}

# ganesha.nfsd as the unit starts it - through bash -c, which the preload
# reaches first - with the environment unit_env gives now; $1 names the run.
start_ganesha() {
	env_lines=$(unit_env)
	echo "$env_lines" | sed '/^$/d; s/^/   Environment=/'
	: >"$work/stderr.log"
	rm -f "$work/ganesha.log"
	(
		# LimitMEMLOCK=infinity; a container without CAP_SYS_RESOURCE
		# keeps its hard limit (the soft fabric needs no pinned memory).
		ulimit -l unlimited 2>/dev/null || ulimit -l "$(ulimit -Hl)"
		set -a
		eval "$env_lines"
		set +a
		exec /bin/bash -c "exec $ganesha -F -f $work/ganesha.conf -L $work/ganesha.log -p $work/ganesha.pid"
	) >"$work/stderr.log" 2>&1 &
	gpid=$!
}

# Until ganesha's banner, or fail after 20 s.
wait_initialized() {
	i=0
	until grep -q "NFS SERVER INITIALIZED" "$work/ganesha.log" 2>/dev/null; do
		kill -0 "$gpid" 2>/dev/null || fail "ganesha exited ($1)"
		i=$((i + 1)); [ $i -lt 200 ] || fail "ganesha not initialized in 20 s ($1)"
		sleep 0.1
	done
}

# ld.so's line for a preload it cannot load, e.g.
# "ERROR: ld.so: object '/usr/lib/.../librpcrdma_ganesha.so' from LD_PRELOAD
# cannot be preloaded (cannot open shared object file): ignored."
preload_error_re="ld\.so: object .* from LD_PRELOAD cannot be preloaded"
# The pattern must match what this ld.so prints, or its absence proves nothing.
LD_PRELOAD=$work/missing-library.so /bin/true 2>"$work/ldso.txt" || true
grep -Eq "$preload_error_re" "$work/ldso.txt" ||
	fail "this ld.so prints something else for a missing preload: $(cat "$work/ldso.txt")"

# ganesha.conf in $work (MEM export, the RDMA block on the soft fabric), rpcbind.
setup_ganesha() {
	port() { python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])'; }
	nfs=$(port); mnt=$(port); nlm=$(port); rq=$(port)
	cat >"$work/ganesha.conf" <<CONF
NFS_CORE_PARAM {
	NFS_Port = $nfs; MNT_Port = $mnt; NLM_Port = $nlm; Rquota_Port = $rq;
	Protocols = 3, 4; Enable_NLM = false; Enable_RQUOTA = false;
	# ganesha 6 stops without CAP_SYS_RESOURCE otherwise (containers, CI);
	# 4.3 and 5.9 only warn that they do not know the key
	allow_set_io_flusher_fail = true;
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
	if ! (ulimit -l unlimited) 2>/dev/null; then
		echo "   (cannot raise RLIMIT_MEMLOCK here: running with $(ulimit -Hl))"
	fi
}

# A package built for another release, forced in: ganesha serves TCP without
# RDMA, and one rpcrdma line names the ntirpc (or ganesha) it was built for
# and the one it found.
if [ $foreign = 1 ]; then
	built=$(dpkg-deb -f "$deb" Depends | grep -o 'libntirpc[0-9.]*' | sed 's/^libntirpc//' | head -1)
	have=$(dpkg-query -W -f '${Package}\n' 'libntirpc[0-9]*' 2>/dev/null | sed 's/^libntirpc//' | head -1)
	[ -n "$built" ] && [ -n "$have" ] || fail "cannot tell the ntirpc versions (package '$built', here '$have')"
	[ "$built" != "$have" ] || fail "$(basename "$deb") is built for this release (libntirpc$have)"
	step "dpkg --force-depends -i $(basename "$deb") (built for libntirpc$built; here libntirpc$have)"
	dpkg --force-depends -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i failed"; }
	grep -i "depend" "$work/dpkg.log" | sed 's/^/   /'
	dropin=$(dpkg -L rpcrdma | grep '/nfs-ganesha.service.d/rpcrdma.conf$' || true)
	[ -n "$dropin" ] || fail "the package has no drop-in"
	dpkg -L rpcrdma | sort >"$work/listed"
	step "ganesha $(dpkg-query -W -f '${Version}' nfs-ganesha) as nfs-ganesha.service starts it"
	setup_ganesha
	start_ganesha foreign
	wait_initialized "$(basename "$deb") forced in"
	if grep -Eq "$preload_error_re" "$work/stderr.log" "$work/ganesha.log"; then
		grep -E "$preload_error_re" "$work/stderr.log" "$work/ganesha.log"
		fail "ld.so preload error"
	fi
	grep "rpcrdma:" "$work/stderr.log" | sed 's/^/   /'
	n=$(grep -c "rpcrdma:" "$work/stderr.log" || true)
	[ "$n" = 1 ] || fail "$n rpcrdma lines, not one"
	line=$(grep "rpcrdma:" "$work/stderr.log")
	case $line in
	*"version mismatch"*"$built"*"found "*"$have"*"RDMA not served"*) ;;
	*) fail "the rpcrdma line does not name both versions ($built, $have)" ;;
	esac
	grep -q "rpcrdma: NFS over RDMA listening" "$work/stderr.log" && fail "RDMA listening"
	python3 -c "import socket; socket.create_connection(('127.0.0.1', $nfs), 5)" ||
		fail "ganesha does not serve NFS over TCP"
	null=$(rpcinfo -t 127.0.0.1 nfs 3) || fail "NFSv3 NULL over TCP failed"
	echo "   rpcinfo -t 127.0.0.1 nfs 3: $null"
	echo "   ganesha initialized; NFS over TCP on port $nfs; one rpcrdma line"
	stop_ganesha
	step "dpkg --purge rpcrdma"
	dpkg --purge rpcrdma >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg --purge failed"; }
	[ -z "$(unit_env | grep rpcrdma)" ] || fail "a drop-in still names rpcrdma"
	while read -r f; do
		[ -d "$f" ] || [ ! -e "$f" ] || fail "left after purge: $f"
	done <"$work/listed"
	echo "   purged, no file of it left"
	echo "== package-test --foreign: PASSED"
	exit 0
fi

step "upgrade from 0.1.0-1's layout (drop-in a conffile in $old_dropin)"
# 0.1.0-1 as it was: this package's files with the drop-in as a conffile
# in /etc and no maintainer scripts of its own (daemon-reload only).
dpkg-deb -R "$deb" "$work/old"
new_dropin=$(cd "$work/old" && find . -path '*/nfs-ganesha.service.d/rpcrdma.conf' | sed 's/^\.//')
[ -n "$new_dropin" ] || fail "the package has no nfs-ganesha.service.d/rpcrdma.conf"
case $new_dropin in /etc/*) fail "the drop-in $new_dropin is in /etc (a conffile)" ;; esac
mkdir -p "$work/old$(dirname "$old_dropin")"
mv "$work/old$new_dropin" "$work/old$old_dropin"
echo "$old_dropin" >"$work/old/DEBIAN/conffiles"
rm -f "$work/old/DEBIAN/preinst" "$work/old/DEBIAN/postinst" "$work/old/DEBIAN/postrm"
sed -i 's/^Version: .*/Version: 0.1.0-1/' "$work/old/DEBIAN/control"
dpkg-deb -b "$work/old" "$work/rpcrdma_0.1.0-1.deb" >/dev/null
dpkg -i "$work/rpcrdma_0.1.0-1.deb" >"$work/dpkg.log" 2>&1 ||
	{ cat "$work/dpkg.log"; fail "dpkg -i of the 0.1.0-1 layout failed"; }
[ -f "$old_dropin" ] || fail "0.1.0-1 layout: $old_dropin not installed"
echo "   0.1.0-1: $old_dropin installed"

step "dpkg -i $(basename "$deb") (upgrade)"
dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i failed"; }
[ ! -e "$old_dropin" ] || fail "$old_dropin survived the upgrade"
left=$(ls "$(dirname "$old_dropin")" 2>/dev/null | grep '^rpcrdma\.conf' || true)
[ -z "$left" ] || fail "left in $(dirname "$old_dropin") after the upgrade: $left"
echo "   $old_dropin removed; version $(dpkg-query -W -f '${Version}' rpcrdma)"
for f in /usr/lib/x86_64-linux-gnu/rpcrdma/librpcrdma_ganesha.so /usr/bin/rpcrdma-stat \
	 /usr/share/doc/rpcrdma/examples/ganesha-rdma.conf /usr/share/man/man5/rpcrdma.conf.5.gz \
	 "$new_dropin"; do
	[ -e "$f" ] || fail "$f not installed"
done
conffiles=$(dpkg-query -W -f '${Conffiles}' rpcrdma)
[ -z "$conffiles" ] || fail "the package has conffiles: $conffiles"
dpkg -L rpcrdma | sort >"$work/listed"
while read -r f; do [ -d "$f" ] || echo "   $f"; done <"$work/listed"

step "drop-in $new_dropin"
grep -q "^Environment=LD_PRELOAD=" "$new_dropin" || fail "no LD_PRELOAD in $new_dropin"
memlock=$(sed -n 's/^LimitMEMLOCK=//p' "$new_dropin")
[ "$memlock" = infinity ] || fail "LimitMEMLOCK is '$memlock', not infinity"
unit=$(dirname "$(dirname "$new_dropin")")/nfs-ganesha.service
[ -f "$unit" ] || unit=/lib/systemd/system/nfs-ganesha.service
if command -v systemd-analyze >/dev/null && [ -f "$unit" ]; then
	mkdir -p "$work/units/nfs-ganesha.service.d"
	cp "$unit" "$work/units/"
	cp "$new_dropin" "$work/units/nfs-ganesha.service.d/"
	SYSTEMD_UNIT_PATH="$work/units:" systemd-analyze verify \
		"$work/units/nfs-ganesha.service" >"$work/verify.log" 2>&1 || true
	if grep -q "rpcrdma.conf" "$work/verify.log"; then
		cat "$work/verify.log"
		fail "systemd does not accept the drop-in"
	fi
	echo "   systemd-analyze verify: ok"
fi

step "ganesha as nfs-ganesha.service starts it, RDMA block on the soft fabric"
setup_ganesha
start_ganesha installed
i=0
until grep -q "rpcrdma: NFS over RDMA listening on" "$work/ganesha.log" 2>/dev/null; do
	kill -0 "$gpid" 2>/dev/null || fail "ganesha exited"
	i=$((i + 1)); [ $i -lt 200 ] || fail "no 'listening' line in 20 s"
	sleep 0.1
done
grep -h "rpcrdma:" "$work/stderr.log" "$work/ganesha.log" | sed 's/^/   /'
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
stop_ganesha

step "dpkg --remove rpcrdma (apt remove), then ganesha as the unit starts it"
dpkg --remove rpcrdma >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg --remove failed"; }
[ ! -e "$new_dropin" ] || fail "$new_dropin survived dpkg --remove"
[ ! -e "$old_dropin" ] || fail "$old_dropin exists after dpkg --remove"
unit_env | grep -q "rpcrdma" && fail "a drop-in still names rpcrdma: $(unit_env)"
start_ganesha removed
wait_initialized "after remove"
if grep -Eq "$preload_error_re" "$work/stderr.log" "$work/ganesha.log"; then
	grep -E "$preload_error_re" "$work/stderr.log" "$work/ganesha.log"
	fail "ld.so preload error after dpkg --remove"
fi
grep -q "rpcrdma:" "$work/stderr.log" "$work/ganesha.log" &&
	fail "the plugin still ran after dpkg --remove"
python3 -c "import socket; socket.create_connection(('127.0.0.1', $nfs), 5)" ||
	fail "ganesha does not serve NFS over TCP after dpkg --remove"
echo "   no preload error; NFS over TCP on port $nfs; no rpcrdma line"
stop_ganesha

step "dpkg --purge rpcrdma: nothing of dpkg -L left"
dpkg --purge rpcrdma >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg --purge failed"; }
n=0
while read -r f; do
	[ -e "$f" ] || [ -L "$f" ] || continue
	# a directory another package also ships (/usr/bin, /lib/systemd/system),
	# or the merged-/usr symlink (/lib -> usr/lib) where the package has a
	# directory: dpkg never made either for us
	if [ -d "$f" ] && { [ -L "$f" ] || dpkg-query -S "$f" >/dev/null 2>&1; }; then
		continue
	fi
	echo "   left: $f"
	n=$((n + 1))
done <"$work/listed"
[ $n -eq 0 ] || fail "$n paths left after purge"
for f in "$old_dropin" "$new_dropin"; do
	[ ! -e "$f" ] || fail "$f left after purge"
done
echo "   $(wc -l <"$work/listed") paths listed before, none left"

if [ "$lint" != 1 ]; then
	echo "== package-test: PASSED (lintian left to the caller)"
	exit 0
fi
step "lintian $(basename "$deb")"
lintian --display-info --fail-on error,warning "$deb" >"$work/lintian.log" 2>&1 && lrc=0 || lrc=$?
grep -v "running with root privileges" "$work/lintian.log" | sed 's/^/   /'
[ $lrc -eq 0 ] || fail "lintian: errors or warnings (exit $lrc)"
grep -q "^[EW]: " "$work/lintian.log" && fail "lintian: errors or warnings"
echo "   no errors, no warnings"
echo "== package-test: PASSED"

#!/bin/sh
# Where no container engine runs: build the ci/Containerfile image's root
# filesystem with debootstrap, applying the Containerfile's own RUN and COPY
# steps in a chroot, then run it like `podman run`: the Containerfile's
# ENTRYPOINT (tini as PID 1, then the entrypoint: rpcbind + ganesha + the
# plugin on the soft fabric, default Stats_Socket) in its own PID, mount and
# network namespaces, and check
#   - HEALTHCHECK's command turns healthy (exit 0) within its start period;
#   - rpcrdma-stat answers;
#   - PID 1 reaps: rpcbind (daemonized, so PID 1's child) killed leaves no
#     zombie;
#   - a stop (SIGTERM to PID 1) reaches ganesha, which exits cleanly.
#   [VARIANT=ceph] ci/rootfs-smoke.sh [RELEASE [ROOTFS_DIR]]
# RELEASE is the Containerfile's build argument (default trixie; bookworm,
# bookworm-backports), VARIANT its other one (ceph: FSAL CEPH and
# ganesha-rados-grace too, checked to load and run), ROOTFS_DIR defaults to
# build-rootfs/RELEASE[-VARIANT] (ignored by git). Needs root, debootstrap, unshare, nsenter; `ci/package.sh RELEASE`'s
# .deb in build-rel-RELEASE/packages/ (made when missing).
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)
RELEASE=${1:-trixie}
case $RELEASE in
bookworm | bookworm-backports | trixie) ;;
*) echo "usage: ci/rootfs-smoke.sh [bookworm|bookworm-backports|trixie [ROOTFS_DIR]]" >&2; exit 2 ;;
esac
VARIANT=${VARIANT:-}
case $VARIANT in
'' | ceph) ;;
*) echo "rootfs-smoke: VARIANT is '' or ceph, not $VARIANT" >&2; exit 2 ;;
esac
suite=${RELEASE%-backports}
root=${2:-build-rootfs/$RELEASE${VARIANT:+-$VARIANT}}
mkdir -p "$root"
root=$(cd "$root" && pwd)
[ "$root" != / ] || exit 1
ls build-rel-"$RELEASE"/packages/rpcrdma_*.deb >/dev/null 2>&1 || ci/package.sh "$RELEASE" >/dev/null

# The mirror this machine's apt uses (deb822 URIs: or one-line deb).
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p; s/^deb \(http[^ ]*debian\) .*/\1/p' \
	/etc/apt/sources.list /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
mirror=${mirror:-http://deb.debian.org/debian}

if [ ! -f "$root/etc/debian_version" ]; then
	echo "== debootstrap --variant=minbase $suite $root $mirror"
	debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
		{ tail -20 "$root.debootstrap.log"; exit 1; }
fi

mounted=
gpid=
cleanup() {
	rc=$?
	# Only processes running inside this root filesystem: the ones we started.
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -TERM "${p#/proc/}" 2>/dev/null
	done
	[ -z "$gpid" ] || wait "$gpid" 2>/dev/null || true
	for m in $mounted; do umount -l "$root$m" 2>/dev/null || true; done
	[ -z "${export_dir:-}" ] || rmdir "$export_dir" 2>/dev/null || true
	[ -z "${volume_dir:-}" ] || rm -rf "$volume_dir"
	exit $rc
}
trap cleanup EXIT INT TERM
for m in /proc /sys /dev; do
	mkdir -p "$root$m"
	if ! mountpoint -q "$root$m"; then
		mount --rbind "$m" "$root$m"
		mounted="$m $mounted"
	fi
done
# What a container engine provides: resolv.conf, hosts.
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
[ -s "$root/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\tlocalhost\n' >"$root/etc/hosts"

# A root from an earlier run: remove the package so the steps install this one.
if chroot "$root" dpkg -s rpcrdma >/dev/null 2>&1; then
	chroot "$root" dpkg --purge rpcrdma >/dev/null
fi
echo "== Containerfile steps in the chroot"
# Join continuation lines, drop comments: one instruction per line.
instructions() {
	awk '/^[ \t]*#/ {next} /\\$/ {sub(/\\$/, ""); buf = buf $0 " "; next}
	     {print buf $0; buf = ""}' ci/Containerfile
}
instructions |
while read -r instr args; do
	case $instr in
	RUN)
		echo "-- RUN $(printf "%s" "$args" | cut -c1-100)"
		chroot "$root" /usr/bin/env RELEASE="$RELEASE" VARIANT="$VARIANT" /bin/sh -c "$args" >"$root.step.log" 2>&1 ||
			{ tail -20 "$root.step.log"; exit 1; }
		;;
	COPY)
		# shellcheck disable=SC2086
		set -- $(echo "$args" | sed "s/\${RELEASE}/$RELEASE/g")
		dest=$(eval echo "\${$#}")
		n=$#
		i=1
		for src in "$@"; do
			[ $i -lt $n ] || break
			echo "-- COPY $src $dest"
			# shellcheck disable=SC2086
			cp $top/$src "$root$dest"
			i=$((i + 1))
		done
		;;
	esac
done
chroot "$root" dpkg -s rpcrdma | sed -n 's/^\(Package\|Version\|Status\):/   \1:/p'

# ENTRYPOINT ["a", "b"] and HEALTHCHECK [OPTIONS] CMD command (shell form).
entrypoint=$(instructions | sed -n 's/^ENTRYPOINT *\[\(.*\)\] *$/\1/p' | tr -d '",')
healthcheck=$(instructions | sed -n 's/^HEALTHCHECK .*CMD \(.*\)$/\1/p')
start_period=$(instructions | sed -n 's/^HEALTHCHECK .*--start-period=\([0-9]*\)s.*/\1/p')
[ -n "$entrypoint" ] || { echo "rootfs-smoke: no ENTRYPOINT in ci/Containerfile"; exit 1; }
[ -n "$healthcheck" ] || { echo "rootfs-smoke: no HEALTHCHECK in ci/Containerfile"; exit 1; }
start_period=${start_period:-30}

echo "== ENTRYPOINT $entrypoint, in its own PID, mount and network namespaces"
echo "   (soft fabric, default Stats_Socket)"
# the VOLUME's mount point, as an engine makes it
mkdir -p "$root/etc/ganesha" "$root/srv/nfs" "$root/var/lib/nfs/ganesha"
cat >"$root/etc/ganesha/ganesha.conf" <<'CONF'
NFS_CORE_PARAM {
	Protocols = 3, 4; NFS_Port = 2049; Enable_NLM = false; Enable_RQUOTA = false;
	allow_set_io_flusher_fail = true;	# ganesha 6.5 in a container
}
NFSV4 { Graceless = true; }
EXPORT {
	Export_Id = 1; Path = /srv/nfs; Pseudo = /export; Access_Type = RW;
	Squash = No_Root_Squash; FSAL { Name = VFS; }
}
RDMA { Enable = true; Fabric = soft; Listen_Addr = 127.0.0.1; Port = 20049; }
CONF
out=$root.run.log
# Like an engine: own PID, mount and network namespaces (a /proc of that PID
# namespace), the root file system, the export (-v DIR:/srv/nfs) and the
# VOLUME for recovery state as mounts, so ganesha's VFS FSAL finds them.
export_dir=$(mktemp -d /tmp/rpcrdma-rootfs-export.XXXXXX)
volume_dir=$(mktemp -d /tmp/rpcrdma-rootfs-volume.XXXXXX)
# shellcheck disable=SC2086
unshare -p -f -m -n /bin/sh -c "set -e; mount --make-rprivate /
	mount --rbind '$root' '$root'
	mount -t proc proc '$root/proc'
	mount --bind '$export_dir' '$root/srv/nfs'
	mount --bind '$volume_dir' '$root/var/lib/nfs/ganesha'
	ip link set lo up
	exec chroot '$root' $entrypoint" >"$out" 2>&1 &
gpid=$!
# PID 1 of the container, as this machine numbers it: unshare's child.
pid1=
i=0
while [ -z "$pid1" ]; do
	pid1=$(cat "/proc/$gpid/task/$gpid/children" 2>/dev/null | awk '{print $1}')
	i=$((i + 1))
	[ $i -lt 50 ] || { cat "$out"; echo "rootfs-smoke: no PID 1"; exit 1; }
	[ -n "$pid1" ] || sleep 0.1
done
# A command inside the container (like podman exec): its namespaces and root.
in_container() { nsenter -t "$pid1" -p -m -n -r -w /bin/sh -c "$1"; }
i=0
until grep -q "rpcrdma: NFS over RDMA listening on" "$out"; do
	kill -0 "$gpid" 2>/dev/null || { cat "$out"; echo "rootfs-smoke: ganesha exited"; exit 1; }
	i=$((i + 1))
	[ $i -lt 300 ] || { cat "$out"; echo "rootfs-smoke: no listening line"; exit 1; }
	sleep 0.1
done
grep "rpcrdma:" "$out" | sed 's/^/   /'
if grep -q "No export entries" "$out"; then
	grep -E "CRIT|MAJ" "$out" | grep -v DBUS | head
	echo "rootfs-smoke: the VFS export failed"
	exit 1
fi
grep -q "Configuration file successfully parsed" "$out" || { echo "rootfs-smoke: config"; exit 1; }
comm1=$(cat "/proc/$pid1/comm")
echo "   PID 1: $comm1 ($(tr '\0' ' ' <"/proc/$pid1/cmdline"))"
[ "$comm1" = tini ] || { echo "rootfs-smoke: PID 1 is $comm1, not tini"; exit 1; }

echo "== HEALTHCHECK CMD $healthcheck"
t0=$(date +%s)
until hc=$(in_container "$healthcheck" 2>&1); do
	[ $(($(date +%s) - t0)) -lt "$start_period" ] ||
		{ echo "   $hc"; echo "rootfs-smoke: not healthy within ${start_period} s"; exit 1; }
	sleep 1
done
echo "   healthy after $(($(date +%s) - t0)) s: $hc"

echo "== rpcrdma-stat (podman exec)"
in_container rpcrdma-stat | sed 's/^/   /'
in_container rpcrdma-stat | grep -q "^rpcrdma: .*fabric soft" || exit 1

if [ "$VARIANT" = ceph ]; then
	echo "== VARIANT=ceph: FSAL CEPH resolves, ganesha-rados-grace runs"
	fsal=$(in_container 'ls /usr/lib/*/ganesha/libfsalceph.so' 2>/dev/null | head -1)
	[ -n "$fsal" ] || { echo "rootfs-smoke: no libfsalceph.so"; exit 1; }
	missing=$(in_container "ldd $fsal" | grep 'not found' || true)
	[ -z "$missing" ] || { echo "$missing"; echo "rootfs-smoke: $fsal: libraries missing"; exit 1; }
	echo "   $fsal: every library found"
	# with no cluster to reach it fails, but only after parsing its
	# arguments: its usage text names the commands a head's set-up uses
	usage=$(in_container 'ganesha-rados-grace --help' 2>&1 || true)
	cmds=$(echo "$usage" | grep -o 'dump|add|[a-z|]*' || true)
	case "|$cmds|" in
	*'|add|'*'|lift|'*) echo "   ganesha-rados-grace: commands $cmds" ;;
	*) echo "$usage"; echo "rootfs-smoke: ganesha-rados-grace gives no usage"; exit 1 ;;
	esac
fi

echo "== PID 1 reaps: rpcbind killed"
# rpcbind -w daemonizes: its daemon's parent is PID 1, which must wait for it.
rpcb=
for p in /proc/[0-9]*; do
	[ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] || continue
	[ "$(cat "$p/comm" 2>/dev/null)" = rpcbind ] && rpcb=${p#/proc/}
done
[ -n "$rpcb" ] || { echo "rootfs-smoke: no rpcbind in the container"; exit 1; }
ppid=$(awk '{print $4}' "/proc/$rpcb/stat")
echo "   rpcbind $rpcb, parent $ppid (PID 1: $pid1)"
[ "$ppid" = "$pid1" ] || { echo "rootfs-smoke: rpcbind's parent is not PID 1"; exit 1; }
kill -KILL "$rpcb"
i=0
while [ -e "/proc/$rpcb" ]; do
	i=$((i + 1))
	if [ $i -ge 50 ]; then
		echo "   $(cat "/proc/$rpcb/stat" 2>/dev/null)"
		echo "rootfs-smoke: rpcbind was not reaped (state" \
		     "$(awk '{print $3}' "/proc/$rpcb/stat" 2>/dev/null)) in 5 s"
		exit 1
	fi
	sleep 0.1
done
echo "   reaped after $((i * 100)) ms"
kill -0 "$pid1" || { echo "rootfs-smoke: the container stopped"; exit 1; }

echo "== stop: SIGTERM to PID 1 reaches ganesha"
kill -TERM "$pid1"
i=0
while kill -0 "$gpid" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 200 ] || { echo "rootfs-smoke: still running 20 s after SIGTERM"; exit 1; }
	sleep 0.1
done
wait "$gpid" && rc=0 || rc=$?
gpid=
grep -q "NFS EXIT: regular exit" "$out" || { tail -5 "$out"; echo "rootfs-smoke: ganesha did not stop cleanly (exit $rc)"; exit 1; }
echo "   ganesha: regular exit; container exit status $rc"
echo "== rootfs-smoke: PASSED"

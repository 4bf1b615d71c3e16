#!/bin/sh
# Where no container engine runs: build the ci/Containerfile image's root
# filesystem with debootstrap, applying the Containerfile's own RUN and COPY
# steps in a chroot, then smoke-test it like `podman run`: the entrypoint in
# its own network namespace (rpcbind + ganesha + the plugin on the soft
# fabric, default Stats_Socket), rpcrdma-stat against it, then stop.
#   ci/rootfs-smoke.sh [ROOTFS_DIR]     default build-rootfs/bookworm (ignored by git)
# Needs root, debootstrap, unshare; ci/package.sh's .deb in build-pkg/packages/.
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)
root=${1:-build-rootfs/bookworm}
mkdir -p "$root"
root=$(cd "$root" && pwd)
[ "$root" != / ] || exit 1
ls build-pkg/packages/rpcrdma_*.deb >/dev/null 2>&1 || ci/package.sh >/dev/null

# The mirror this machine's apt uses (deb822 URIs: or one-line deb).
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p; s/^deb \(http[^ ]*debian\) .*/\1/p' \
	/etc/apt/sources.list /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
mirror=${mirror:-http://deb.debian.org/debian}

if [ ! -f "$root/etc/debian_version" ]; then
	echo "== debootstrap --variant=minbase bookworm $root $mirror"
	debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
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
# Join continuation lines, drop comments; FROM/ARG/EXPOSE/ENTRYPOINT need no step.
awk '/^[ \t]*#/ {next} /\\$/ {sub(/\\$/, ""); buf = buf $0 " "; next}
     {print buf $0; buf = ""}' ci/Containerfile |
while read -r instr args; do
	case $instr in
	RUN)
		echo "-- RUN $(echo "$args" | cut -c1-100)"
		chroot "$root" /bin/sh -c "$args" >"$root.step.log" 2>&1 ||
			{ tail -20 "$root.step.log"; exit 1; }
		;;
	COPY)
		# shellcheck disable=SC2086
		set -- $args
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

echo "== entrypoint in its own network namespace (soft fabric, default Stats_Socket)"
mkdir -p "$root/etc/ganesha" "$root/srv/nfs"
cat >"$root/etc/ganesha/ganesha.conf" <<'CONF'
NFS_CORE_PARAM { Protocols = 3, 4; NFS_Port = 2049; Enable_NLM = false; Enable_RQUOTA = false; }
NFSV4 { Graceless = true; }
EXPORT {
	Export_Id = 1; Path = /srv/nfs; Pseudo = /export; Access_Type = RW;
	Squash = No_Root_Squash; FSAL { Name = VFS; }
}
RDMA { Enable = true; Fabric = soft; Listen_Addr = 127.0.0.1; Port = 20049; }
CONF
out=$root.run.log
# Like an engine: own mount and network namespaces, the root file system and
# the export (-v DIR:/srv/nfs) as mounts, so ganesha's VFS FSAL finds them.
export_dir=$(mktemp -d /tmp/rpcrdma-rootfs-export.XXXXXX)
unshare -m -n /bin/sh -c "set -e; mount --make-rprivate /
	mount --rbind '$root' '$root'
	mount --bind '$export_dir' '$root/srv/nfs'
	ip link set lo up
	exec chroot '$root' /usr/local/sbin/rpcrdma-entrypoint" >"$out" 2>&1 &
gpid=$!
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
i=0
until [ -S "$root/run/rpcrdma/stats.sock" ]; do
	i=$((i + 1))
	[ $i -lt 50 ] || { echo "rootfs-smoke: no stats socket"; exit 1; }
	sleep 0.1
done
grep -q "Configuration file successfully parsed" "$out" || { echo "rootfs-smoke: config"; exit 1; }
echo "== chroot rpcrdma-stat"
chroot "$root" rpcrdma-stat | sed 's/^/   /'
chroot "$root" rpcrdma-stat | grep -q "^rpcrdma: .*fabric soft" || exit 1
echo "== rootfs-smoke: PASSED"

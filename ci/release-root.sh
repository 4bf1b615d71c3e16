#!/bin/sh
# ci/release-root.sh RELEASE [--] [COMMAND...]
#
# Runs COMMAND (default: an interactive sh) inside a Debian root of RELEASE, with this repository
# bind-mounted at its own path and the working directory kept, so that from the repository root
#   ci/release-root.sh trixie -- sh -c 'cmake -S . -B build-trixie && cmake --build build-trixie'
# builds against that release's ganesha and ntirpc. RELEASE is one of
#   trixie              Debian 13: nfs-ganesha 6.5, libntirpc 6.3
#   bookworm-backports  Debian 12 + bookworm-backports: nfs-ganesha 5.9, libntirpc 5.8
# The root is made with debootstrap and filled by running ci/install-deps.sh inside it (that script is
# the one package list). Roots are cached in $RPCRDMA_ROOTS (default /var/cache/rpcrdma-roots)/RELEASE
# and reused; a root is rebuilt when its recipe changes: install-deps.sh, the suites, the mirror
# ($RPCRDMA_MIRROR, default http://deb.debian.org/debian) or ROOT_RECIPE below. RPCRDMA_ROOT_REBUILD=1
# forces a rebuild.
#
# Each run lives in its own mount and PID namespace: /proc, /sys, /dev (with /dev/pts, /dev/shm), a
# fresh tmpfs on /run and on /tmp, and the repository are mounted there only, so nothing can leak into
# the host's mount table, and any daemon the command left running (ganesha, glusterd, rpcbind) ends
# with the run. The network is the host's (loopback tests, and apt while building). Needs root.
set -eu

ROOT_RECIPE=1	# bump when the way a root is built changes
MIRROR=${RPCRDMA_MIRROR:-http://deb.debian.org/debian}
CACHE=${RPCRDMA_ROOTS:-/var/cache/rpcrdma-roots}
REPO=$(cd "$(dirname "$0")/.." && pwd -P)

usage() {
	echo "usage: $0 trixie|bookworm-backports [--] [COMMAND...]" >&2
	exit 2
}

[ $# -ge 1 ] || usage
REL=$1
shift
[ "${1:-}" != -- ] || shift
case $REL in
trixie)
	SUITE=trixie
	SUITES="trixie trixie-updates"
	;;
bookworm-backports)
	SUITE=bookworm
	SUITES="bookworm bookworm-updates bookworm-backports"
	;;
*)
	usage
	;;
esac
[ "$(id -u)" -eq 0 ] || { echo "$0: needs root (debootstrap, mount, chroot)" >&2; exit 1; }

# Everything below runs as PID 1 of a new PID namespace with a private mount namespace: its mounts
# vanish with it, and when it exits the kernel kills whatever the command left behind.
if [ "${RPCRDMA_ROOT_NS:-}" != "$$" ]; then
	exec unshare --mount --propagation private --pid --fork --kill-child --mount-proc \
		env RPCRDMA_ROOT_NS=1 "$0" "$REL" -- "$@"
fi
[ "$$" -eq 1 ] || { echo "$0: not PID 1 of a new PID namespace" >&2; exit 1; }

ROOT=$CACHE/$REL
NEW=$CACHE/$REL.new
mkdir -p "$CACHE"

recipe_hash() {
	{
		echo "recipe $ROOT_RECIPE"
		echo "release $REL suite $SUITE suites $SUITES mirror $MIRROR"
		cat "$REPO/ci/install-deps.sh"
	} | sha256sum | cut -d' ' -f1
}
HASH=$(recipe_hash)

MOUNTED=""	# mount points, newest first
# Mount points under $1 that this namespace still has (none expected after unmount_all).
mounted_under() {
	awk -v p="$1" '$5 == p || index($5, p "/") == 1 { print $5 }' /proc/self/mountinfo
}

unmount_all() {
	for m in $MOUNTED; do
		umount -R "$m" 2>/dev/null || umount -Rl "$m" 2>/dev/null || true
	done
	MOUNTED=""
}

# shellcheck disable=SC2317 # end_leftovers and cleanup run from the EXIT trap
# Ends every other process of this PID namespace, by pid: what the command left running inside the
# root. Only PID 1 of our own namespace gets here, so these are all ours.
end_leftovers() {
	sig=$1
	for d in /proc/[0-9]*; do
		pid=${d#/proc/}
		if [ "$pid" -ne 1 ]; then
			kill "-$sig" "$pid" 2>/dev/null || true
		fi
	done
}

# shellcheck disable=SC2317
cleanup() {
	end_leftovers TERM
	sleep 0.2
	end_leftovers KILL
	unmount_all
}
trap 'rc=$?; cleanup; exit $rc' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# mount_root ROOT: the mounts a command in ROOT needs; recorded in $MOUNTED for unmount_all.
mount_root() {
	r=$1
	mkdir -p "$r/proc" "$r/sys" "$r/dev" "$r/run" "$r/tmp"
	mount -t proc proc "$r/proc"
	MOUNTED="$r/proc $MOUNTED"
	mount --rbind /sys "$r/sys"
	MOUNTED="$r/sys $MOUNTED"
	mount --rbind /dev "$r/dev"	# with /dev/pts, /dev/shm, /dev/infiniband when there
	MOUNTED="$r/dev $MOUNTED"
	mount -t tmpfs -o mode=0755,nosuid,nodev run "$r/run"
	MOUNTED="$r/run $MOUNTED"
	mkdir -p "$r/run/lock"
	mount -t tmpfs -o mode=1777,nosuid,nodev tmp "$r/tmp"
	MOUNTED="$r/tmp $MOUNTED"
	# The host's name and resolver, fresh each run (apt; glusterd resolves its own host name).
	cp /etc/resolv.conf "$r/etc/resolv.conf"
	cp /etc/hosts "$r/etc/hosts"
	hostname >"$r/etc/hostname"
	# A minbase root has no /etc/mtab; ganesha's FSAL VFS reads its mounts there.
	[ -e "$r/etc/mtab" ] || ln -s ../proc/self/mounts "$r/etc/mtab"
}

# Runs "$@" in ROOT with the working directory $2.
in_root() {
	r=$1
	wd=$2
	shift 2
	# shellcheck disable=SC2016 # $1 and $@ belong to the inner sh
	chroot "$r" /usr/bin/env -u TMPDIR LANG=C.UTF-8 HOME=/root \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		sh -c 'cd "$1" && shift && exec "$@"' sh "$wd" "$@"
}

build_root() {
	# Never remove a directory that has something mounted under it (the repository, in a crash).
	if [ -n "$(mounted_under "$NEW")" ]; then
		echo "$0: $NEW has mounts, not removing it" >&2
		exit 1
	fi
	rm -rf --one-file-system "$NEW"
	t0=$(date +%s)
	echo "release-root: building $REL in $ROOT (debootstrap $SUITE from $MIRROR)" >&2
	debootstrap --variant=minbase --components=main "$SUITE" "$NEW" "$MIRROR" >&2
	rm -f "$NEW/etc/apt/sources.list"
	cat >"$NEW/etc/apt/sources.list.d/debian.sources" <<-EOF
	Types: deb
	URIs: $MIRROR
	Suites: $SUITES
	Components: main
	Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	# A cached root is used long after its Release files were signed; no daemon starts while
	# packages install (there is no init in the root; the tests start what they need).
	cat >"$NEW/etc/apt/apt.conf.d/90rpcrdma-root" <<-EOF
	Acquire::Check-Valid-Until "false";
	APT::Keep-Downloaded-Packages "false";
	EOF
	printf '#!/bin/sh\nexit 101\n' >"$NEW/usr/sbin/policy-rc.d"
	chmod 755 "$NEW/usr/sbin/policy-rc.d"
	mount_root "$NEW"
	cp "$REPO/ci/install-deps.sh" "$NEW/tmp/install-deps.sh"
	in_root "$NEW" / sh /tmp/install-deps.sh >&2
	in_root "$NEW" / apt-get clean
	unmount_all
	echo "$HASH" >"$NEW/.rpcrdma-root-recipe"
	t1=$(date +%s)
	echo "$((t1 - t0))" >"$NEW/.rpcrdma-root-build-seconds"
	if [ -n "$(mounted_under "$ROOT")" ]; then
		echo "$0: $ROOT has mounts, not replacing it" >&2
		exit 1
	fi
	rm -rf --one-file-system "$ROOT.old"
	[ ! -d "$ROOT" ] || mv "$ROOT" "$ROOT.old"
	mv "$NEW" "$ROOT"
	rm -rf --one-file-system "$ROOT.old"
	echo "release-root: $REL ready in $((t1 - t0)) s" >&2
}

current() {
	[ "${RPCRDMA_ROOT_REBUILD:-0}" != 1 ] &&
		[ -f "$ROOT/.rpcrdma-root-recipe" ] &&
		[ "$(cat "$ROOT/.rpcrdma-root-recipe")" = "$HASH" ]
}

# Runs share the root (shared lock); a rebuild waits for them (exclusive lock).
exec 9>"$CACHE/$REL.lock"
flock -s 9
if ! current; then
	flock -x 9
	if ! current; then
		build_root
	fi
	RPCRDMA_ROOT_REBUILD=0
	flock -s 9
fi

mount_root "$ROOT"
# The repository at its own path; a worktree's git directory too (read-only), so git works inside.
mkdir -p "$ROOT$REPO"
mount --bind "$REPO" "$ROOT$REPO"
MOUNTED="$ROOT$REPO $MOUNTED"
gitdir=$(git -C "$REPO" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
case $gitdir in
"" | "$REPO" | "$REPO"/*) ;;
*)
	mkdir -p "$ROOT$gitdir"
	mount --bind "$gitdir" "$ROOT$gitdir"
	mount -o remount,bind,ro "$ROOT$gitdir"
	MOUNTED="$ROOT$gitdir $MOUNTED"
	;;
esac

wd=$(pwd -P)
case $wd in
"$REPO" | "$REPO"/*) ;;
*) wd=$REPO ;;
esac
[ $# -gt 0 ] || set -- sh
rc=0
in_root "$ROOT" "$wd" "$@" || rc=$?
exit $rc

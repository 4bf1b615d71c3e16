#!/bin/sh
# Install every build and test dependency of rpcrdma on a fresh Debian 12 (ganesha 4.3), Debian 12
# with bookworm-backports in apt's sources (ganesha 5.9 and ntirpc 5.8 from backports) or Debian 13
# (ganesha 6.5, ntirpc 6.3). Idempotent; run as root (CI, ci/release-root.sh) or through sudo.
# This is the one list of packages: ci/release-root.sh builds its roots by running this script inside
# them, and rebuilds a root when this file changes.
set -eu
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo

# glusterfs-server, nfs-ganesha-gluster: a one-brick GlusterFS volume exported with FSAL GLUSTER, the
# one FSAL of Debian's ganesha 4.3 that grants delegations (tests/backchannel/gluster-volume.sh).
# qemu-system-x86 .. xz-utils, nfs-common, rdmacm-utils, ibverbs-utils: the interop VM (ci/vm/), which
# also apt-get downloads (never installs) linux-image-amd64 and nfs-kernel-server. fio: the VM bench
# (RPCRDMA_VM_ONLY=bench) runs the host's fio in the guest through its chroot of the host root.
# lintian: ci/package-test.sh fails the package on any lintian error or warning.
# debootstrap: the release roots of other ganesha releases (ci/release-root.sh).
# The clang runtime (sanitizers) and the ganesha/ntirpc packages are added below: their names or
# their suite depend on the release.
PKGS="
 build-essential cmake pkg-config git
 clang llvm
 libgtest-dev
 rdma-core ibverbs-providers libibverbs-dev librdmacm-dev ibverbs-utils rdmacm-utils
 rpcbind nfs-common iproute2 procps psmisc python3
 valgrind
 qemu-system-x86 busybox-static cpio kmod zstd xz-utils fio
 lintian
 debootstrap
"
# ceph-mon, ceph-osd, ceph-mds, nfs-ganesha-ceph, nfs-ganesha-rados-grace: the cluster tests'
# throw-away Ceph (tests/cluster/ceph-cluster.sh: no manager, memstore) and two ganesha heads with
# FSAL CEPH and the rados_cluster recovery backend (docs/cluster.md); added at the end where apt
# has them.
# The ganesha host: libntirpc-dev pulls the matching runtime (libntirpc4.3, 5.8 or 6.3).
# glusterfs-server too: nfs-ganesha-gluster pulls libglusterfs0 of its own
# suite, and glusterd must be of the same one (backports: 11.1, not 10.3).
GANESHA_PKGS="libntirpc-dev nfs-ganesha nfs-ganesha-mem nfs-ganesha-vfs nfs-ganesha-gluster
 glusterfs-server"

$SUDO apt-get update -q

codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")

# Candidate version of a package as apt would install it ("" when none).
candidate() {
	apt-cache policy "$1" | sed -n 's/^ *Candidate: *//p' | sed 's/^(none)$//'
}

# clang's runtime library package carries clang's major version (libclang-rt-14-dev on Debian 12,
# libclang-rt-19-dev on Debian 13): take it from the clang that apt will install.
clang_major=$(candidate clang | sed 's/^[0-9]*://; s/[^0-9].*//')
[ -n "$clang_major" ] || { echo "install-deps: apt has no clang candidate" >&2; exit 1; }
PKGS="$PKGS libclang-rt-$clang_major-dev"

# Debian 12 with bookworm-backports in apt's sources: ganesha 5.9 and ntirpc 5.8 from backports, the
# way Debian documents it (apt-get install -t bookworm-backports), in a transaction of their own so that
# everything else stays on bookworm: -t lets apt take a ganesha package's dependencies from backports
# where they must be (glusterfs-server 11.1 needs glusterfs-common, -cli, libglusterfs0, ... 11.1),
# which pkg/bookworm-backports alone does not. Without backports: 4.3, as before.
target=""
if [ "$codename" = bookworm ] &&
   apt-cache policy nfs-ganesha | grep -q ' bookworm-backports/'; then
	target=bookworm-backports
fi

echo "install-deps: Debian ${codename:-unknown}, clang $clang_major, ganesha from ${target:-$codename}" >&2
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $PKGS
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends ${target:+-t "$target"} $GANESHA_PKGS

# The cluster area, where this release has it: Ceph's daemons (no manager) and ganesha's FSAL CEPH
# and grace tool, all of the release's own suite. Not with ganesha from backports: its FSAL CEPH
# would want backports' Ceph libraries beside the release's daemons (the cluster tests run on the
# host's release only).
if [ -z "$target" ]; then
	CLUSTER_PKGS=""
	for p in ceph-mon ceph-osd ceph-mds nfs-ganesha-ceph nfs-ganesha-rados-grace; do
		[ -z "$(candidate "$p")" ] || CLUSTER_PKGS="$CLUSTER_PKGS $p"
	done
	if [ -n "$CLUSTER_PKGS" ]; then
		# shellcheck disable=SC2086
		$SUDO apt-get install -y -q --no-install-recommends $CLUSTER_PKGS
	fi
fi

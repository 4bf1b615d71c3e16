#!/bin/sh
# Install every build and test dependency of rpcrdma on a fresh Debian 12.
# Idempotent; run as root (CI) or through sudo.
set -eu
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo

# glusterfs-server, nfs-ganesha-gluster: a one-brick GlusterFS volume exported with FSAL GLUSTER, the
# one FSAL of Debian's ganesha 4.3 that grants delegations (tests/backchannel/gluster-volume.sh).
# qemu-system-x86 .. xz-utils, nfs-common, rdmacm-utils, ibverbs-utils: the interop VM (ci/vm/), which
# also apt-get downloads (never installs) linux-image-amd64 and nfs-kernel-server. fio: the VM bench
# (RPCRDMA_VM_ONLY=bench) runs the host's fio in the guest through its chroot of the host root.
PKGS="
 build-essential cmake pkg-config git
 clang libclang-rt-14-dev llvm
 libgtest-dev
 rdma-core ibverbs-providers libibverbs-dev librdmacm-dev ibverbs-utils rdmacm-utils
 libntirpc-dev libntirpc4.3
 nfs-ganesha nfs-ganesha-mem nfs-ganesha-vfs
 nfs-ganesha-gluster glusterfs-server
 rpcbind nfs-common iproute2 procps psmisc python3
 valgrind
 qemu-system-x86 busybox-static cpio kmod zstd xz-utils fio
"
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $PKGS

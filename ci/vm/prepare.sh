#!/bin/bash
# Build (or reuse) the VM's kernel and initramfs under ci/vm/work/.
#   ci/vm/prepare.sh            -> prints "KERNEL=... INITRD=..." on its last line
# The kernel is Debian 12's own (apt-get download linux-image-<version>, never installed on the
# host); knfsd's user-space tools come from nfs-kernel-server the same way. Everything else
# (busybox, rpcbind, mount.nfs, iproute2, rdma) is copied from the host, with its ldd libraries.
# Outputs are cached: the kernel per version, the initramfs per hash of its inputs.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=${RPCRDMA_VM_WORK:-$HERE/work}
mkdir -p "$W/debs"
log() { echo "prepare: $*" >&2; }

KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-6/{print $2; exit}')
if [ -z "$KPKG" ]; then
	# No apt lists yet (fresh machine): fall back to a kernel already cached.
	KPKG=$(ls -d "$W"/kernel-* 2>/dev/null | sed -n 's|.*/kernel-|linux-image-|p' | tail -1)
	[ -n "$KPKG" ] || { log "cannot resolve linux-image-amd64 (run apt-get update)"; exit 1; }
fi
KV=${KPKG#linux-image-}
KDIR=$W/kernel-$KV

# 1. kernel + modules (cached per version)
if [ ! -f "$KDIR/.done" ]; then
	log "downloading $KPKG"
	(cd "$W/debs" && ls ${KPKG}_*.deb >/dev/null 2>&1 || apt-get download -q "$KPKG" 2>&1 | grep -v unsandboxed >&2 || true)
	rm -rf "$KDIR"; mkdir -p "$KDIR"
	M=./lib/modules/$KV
	dpkg-deb --fsys-tarfile "$W"/debs/${KPKG}_*.deb | tar -x -C "$KDIR" --wildcards \
		./boot/vmlinuz-$KV "$M/modules.*" "$M/kernel/drivers/infiniband" "$M/kernel/net" \
		"$M/kernel/fs" "$M/kernel/crypto" "$M/kernel/arch/x86/crypto" \
		"$M/kernel/drivers/net/dummy.ko" "$M/kernel/drivers/virtio" "$M/kernel/lib"
	depmod -b "$KDIR" "$KV"
	touch "$KDIR/.done"
fi

# 2. knfsd user space (download only)
(cd "$W/debs" && ls nfs-kernel-server_*.deb >/dev/null 2>&1 || apt-get download -q nfs-kernel-server 2>&1 | grep -v unsandboxed >&2 || true)
NKS=$(ls "$W"/debs/nfs-kernel-server_*.deb | tail -1)

# 3. initramfs, keyed by its inputs
KEY=$( (echo "$KV"; basename "$NKS"; cat "$HERE/init" "$HERE/prepare.sh"; busybox 2>&1 | head -1
	dpkg-query -W rdma-core ibverbs-providers nfs-common rpcbind iproute2 2>/dev/null) | sha256sum | cut -c1-16)
INITRD=$W/initrd-$KEY.cpio
if [ ! -f "$INITRD" ]; then
	log "building initramfs $INITRD"
	R=$W/root; EXTRA=$W/nks
	rm -rf "$R" "$EXTRA"; mkdir -p "$EXTRA"; dpkg-deb -x "$NKS" "$EXTRA"
	mkdir -p $R/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,run,mnt,mnt2,mnt4k,export,hostroot,out}
	mkdir -p $R/{var/lib/nfs/v4recovery,var/lib/nfs/rpc_pipefs,usr/lib64,usr/lib/x86_64-linux-gnu/libibverbs,etc/libibverbs.d}
	mkdir -p $R/usr/lib/modules/$KV
	ln -s usr/lib $R/lib; ln -s usr/lib64 $R/lib64
	cp /bin/busybox $R/bin/
	for a in $(/bin/busybox --list); do [ -e $R/bin/$a ] || ln -s busybox $R/bin/$a; done
	MODS="virtio_pci 9pnet_virtio 9p crc32_generic crc32_pclmul rdma_rxe ib_uverbs rdma_ucm rpcrdma
	      nfsd nfsv3 nfsv4 dummy"
	for m in $MODS; do modprobe -d "$KDIR" -S "$KV" --show-depends $m; done |
		awk '$1=="insmod"{print $2}' | sort -u | while read -r f; do
			rel=${f#$KDIR/lib/modules/$KV/}
			mkdir -p "$R/lib/modules/$KV/$(dirname "$rel")"; cp "$f" "$R/lib/modules/$KV/$rel"
		done
	cp "$KDIR"/lib/modules/$KV/modules.{order,builtin,builtin.modinfo} $R/lib/modules/$KV/
	depmod -b "$R" "$KV"
	BINS="/usr/bin/ibv_devices /usr/bin/ibv_devinfo /usr/bin/rping /usr/bin/rdma /usr/sbin/ip
	 /usr/sbin/modprobe /usr/sbin/mount.nfs /usr/sbin/rpcbind /usr/sbin/rpcinfo /usr/sbin/nfsstat
	 $EXTRA/usr/sbin/exportfs $EXTRA/usr/sbin/rpc.nfsd $EXTRA/usr/sbin/rpc.mountd"
	PROV=/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
	for b in $BINS; do cp -L "$b" "$R/usr/${b#*/usr/}"; done
	export LD_LIBRARY_PATH=$EXTRA/usr/lib/x86_64-linux-gnu
	for b in $BINS $PROV; do ldd "$b" | awk '/=>/{print $3} /ld-linux/{print $1}'; done | sort -u |
		while read -r l; do [ -f "$l" ] && cp -L "$l" $R/usr/lib/x86_64-linux-gnu/; done
	cp -L /lib64/ld-linux-x86-64.so.2 $R/usr/lib64/
	cp -L /lib/x86_64-linux-gnu/libgcc_s.so.1 $R/usr/lib/x86_64-linux-gnu/
	cp -L $PROV $R/usr/lib/x86_64-linux-gnu/libibverbs/
	cp /etc/libibverbs.d/rxe.driver $R/etc/libibverbs.d/
	ln -sf /usr/sbin/mount.nfs $R/sbin/mount.nfs; ln -sf /usr/sbin/modprobe $R/sbin/modprobe
	cp /etc/netconfig /etc/services /etc/protocols $R/etc/
	printf '%s\n' 'root:x:0:0::/root:/bin/sh' '_rpc:x:102:65534::/run/rpcbind:/bin/false' \
		'statd:x:103:65534::/var/lib/nfs:/bin/false' 'nobody:x:65534:65534::/:/bin/false' > $R/etc/passwd
	printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' > $R/etc/group
	echo '127.0.0.1 localhost' > $R/etc/hosts
	touch $R/etc/fstab; ln -s /proc/mounts $R/etc/mtab
	cp "$HERE/init" $R/init; chmod +x $R/init
	(cd $R && find . | cpio -o -H newc --quiet) > "$INITRD.tmp"
	mv "$INITRD.tmp" "$INITRD"
	rm -rf "$R" "$EXTRA"
	# keep only the newest few initramfs images
	ls -t "$W"/initrd-*.cpio | tail -n +4 | xargs -r rm -f
fi
echo "KERNEL=$KDIR/boot/vmlinuz-$KV INITRD=$INITRD"

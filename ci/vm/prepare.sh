#!/bin/bash
# Build (or reuse) the VM's kernel and initramfs under ci/vm/work/.
#   ci/vm/prepare.sh            -> prints "KERNEL=... INITRD=... SIWKO=..." on its last line
# The kernel is Debian 12's own (apt-get download linux-image-<version>, never installed on the
# host); knfsd's user-space tools come from nfs-kernel-server the same way. Everything else
# (busybox, rpcbind, mount.nfs, iproute2, rdma) is copied from the host, with its ldd libraries.
# Outputs are cached: the kernel per version, the initramfs per hash of its inputs.
# Soft-iWARP's siw.ko, which Debian's kernel packages do not ship, is built for the kernel by
# ci/vm/siw-module.sh and cached beside it (RPCRDMA_VM_SIW=0: no siw).
# RPCRDMA_VM_RELEASE=trixie: the same from Debian 13 instead: kernel 6.12 and nfs-kernel-server
# downloaded with the trixie root's apt lists, every other program and library copied from that
# root (RPCRDMA_ROOTS, default /var/cache/rpcrdma-roots, made by ci/release-root.sh trixie).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=${RPCRDMA_VM_WORK:-$HERE/work}
mkdir -p "$W/debs"
log() { echo "prepare: $*" >&2; }
RELEASE=${RPCRDMA_VM_RELEASE:-bookworm}
SRC=""		# the root the guest's programs come from: "" = the host
APTO=()
case $RELEASE in
bookworm) ;;
trixie)
	SRC=${RPCRDMA_ROOTS:-/var/cache/rpcrdma-roots}/trixie
	[ -x "$SRC/usr/bin/ganesha.nfsd" ] || { log "no trixie root in $SRC (ci/release-root.sh trixie true)"; exit 1; }
	# the host's apt on the root's lists and status: no apt state of the host is touched
	APTO=(-o "Dir::State::Lists=$SRC/var/lib/apt/lists" -o Dir::Etc::SourceList=/dev/null
	      -o "Dir::Etc::SourceParts=$SRC/etc/apt/sources.list.d" -o Dir::Cache::pkgcache=
	      -o Dir::Cache::srcpkgcache= -o "Dir::State::status=$SRC/var/lib/dpkg/status"
	      -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null)
	;;
*) log "unknown RPCRDMA_VM_RELEASE=$RELEASE (bookworm, trixie)"; exit 1 ;;
esac
# in_src PATH: PATH of the source root as a host path, its symlinks resolved inside that root
in_src() { if [ -z "$SRC" ]; then echo "$1"; else echo "$SRC$(chroot "$SRC" readlink -f "$1")"; fi; }
# libs_of FILE...: the shared libraries they load, as host paths
libs_of() {
	if [ -z "$SRC" ]; then
		for b in "$@"; do ldd "$b" | awk '/=>/{print $3} /ld-linux/{print $1}'; done
	else
		for b in "$@"; do
			"$(in_src /lib64/ld-linux-x86-64.so.2)" --library-path \
				"$SRC/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}" --list "$b" | awk '/=>/{print $3}'
		done
	fi
}

KPKG=$(apt-cache "${APTO[@]}" depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-6/{print $2; exit}')
if [ -z "$KPKG" ]; then
	# No apt lists yet (fresh machine): fall back to a kernel already cached.
	KPKG=$(ls -d "$W"/kernel-* 2>/dev/null | sed -n 's|.*/kernel-|linux-image-|p' | tail -1)
	[ -n "$KPKG" ] || { log "cannot resolve linux-image-amd64 (run apt-get update)"; exit 1; }
fi
KV=${KPKG#linux-image-}
KDIR=$W/kernel-$KV

# 1. kernel + modules (cached per version)
if [ ! -f "$KDIR/.done2" ]; then
	log "downloading $KPKG"
	(cd "$W/debs" && ls ${KPKG}_*.deb >/dev/null 2>&1 || apt-get "${APTO[@]}" download -q "$KPKG" 2>&1 | grep -v unsandboxed >&2 || true)
	rm -rf "$KDIR"; mkdir -p "$KDIR"
	M=./lib/modules/$KV
	# trixie's package has merged /usr: its modules are under ./usr/lib
	if dpkg-deb -c "$W"/debs/${KPKG}_*.deb | grep " ./usr/lib/modules/$KV/" > /dev/null; then
		M=./usr/lib/modules/$KV; ln -s usr/lib "$KDIR/lib"
	fi
	dpkg-deb --fsys-tarfile "$W"/debs/${KPKG}_*.deb | tar -x -C "$KDIR" --wildcards \
		./boot/vmlinuz-$KV "$M/modules.*" "$M/kernel/drivers/infiniband" "$M/kernel/net" \
		"$M/kernel/fs" "$M/kernel/crypto" "$M/kernel/arch/x86/crypto" \
		"$M/kernel/drivers/net/dummy.ko*" "$M/kernel/drivers/block/brd.ko*" "$M/kernel/drivers/virtio" "$M/kernel/lib"
	depmod -b "$KDIR" "$KV"
	touch "$KDIR/.done2"
fi

# 1b. soft-iWARP: the kernel's siw.ko, or one built for it from Debian's linux-source (cached per
# kernel version; none when it cannot be had: the VM then shows siw as not available)
SIWKO=""
if [ "${RPCRDMA_VM_SIW:-1}" != 0 ]; then
	SIWKO=$(APT_OPTS="${APTO[*]}" "$HERE/siw-module.sh" "$KV" "$KDIR" \
		"$(ls "$W"/debs/${KPKG}_*.deb 2>/dev/null | tail -1)" | tail -1)
fi

# 2. knfsd user space (download only)
(cd "$W/debs" && ls nfs-kernel-server_*.deb >/dev/null 2>&1 || apt-get "${APTO[@]}" download -q nfs-kernel-server 2>&1 | grep -v unsandboxed >&2 || true)
NKS=$(ls "$W"/debs/nfs-kernel-server_*.deb | tail -1)

# 3. initramfs, keyed by its inputs
KEY=$( (echo "$KV"; basename "$NKS"; cat "$HERE/init" "$HERE/prepare.sh"; "$SRC/bin/busybox" 2>&1 | head -1
	[ -z "$SIWKO" ] || sha256sum < "$SIWKO"
	dpkg-query ${SRC:+--admindir=$SRC/var/lib/dpkg} -W rdma-core ibverbs-providers nfs-common rpcbind iproute2 \
		2>/dev/null) | sha256sum | cut -c1-16)
INITRD=$W/initrd-$KEY.cpio
if [ ! -f "$INITRD" ]; then
	log "building initramfs $INITRD"
	R=$W/root; EXTRA=$W/nks
	rm -rf "$R" "$EXTRA"; mkdir -p "$EXTRA"; dpkg-deb -x "$NKS" "$EXTRA"
	mkdir -p $R/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,run,mnt,mnt2,mnt4k,export,hostroot,out}
	mkdir -p $R/{var/lib/nfs/v4recovery,var/lib/nfs/rpc_pipefs,usr/lib64,usr/lib/x86_64-linux-gnu/libibverbs,etc/libibverbs.d}
	mkdir -p $R/usr/lib/modules/$KV
	ln -s usr/lib $R/lib; ln -s usr/lib64 $R/lib64
	cp "$(in_src /bin/busybox)" $R/bin/busybox
	for a in $($R/bin/busybox --list); do [ -e $R/bin/$a ] || ln -s busybox $R/bin/$a; done
	MODS="virtio_pci 9pnet_virtio 9p crc32_generic crc32_pclmul rdma_rxe ib_uverbs rdma_ucm rpcrdma
	      nfsd nfsv3 nfsv4 dummy"
	# ganesha 6.5's FSAL VFS refuses to export a tmpfs: its export is an ext4 on a RAM disk
	[ -z "$SRC" ] || MODS="$MODS brd ext4"
	# siw: the kernel's own module, or the one built out of tree, which goes to updates/ and
	# brings its dependencies (modinfo: ib_core, libcrc32c) by name
	case $SIWKO in
	"") ;;
	"$KDIR"/*) MODS="$MODS siw" ;;
	*) MODS="$MODS libcrc32c"
	   mkdir -p "$R/lib/modules/$KV/updates"; cp "$SIWKO" "$R/lib/modules/$KV/updates/siw.ko" ;;
	esac
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
	PROV=$(in_src /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so)
	HB=()	# BINS as host paths
	for b in $BINS; do case $b in "$EXTRA"/*) HB+=("$b") ;; *) HB+=("$(in_src "$b")") ;; esac; done
	i=0; for b in $BINS; do cp -L "${HB[$i]}" "$R/usr/${b#*/usr/}"; i=$((i + 1)); done
	export LD_LIBRARY_PATH=$EXTRA/usr/lib/x86_64-linux-gnu
	libs_of "${HB[@]}" $PROV | sort -u |
		while read -r l; do [ -f "$l" ] && cp -L "$l" $R/usr/lib/x86_64-linux-gnu/; done
	cp -L "$(in_src /lib64/ld-linux-x86-64.so.2)" $R/usr/lib64/
	cp -L "$(in_src /lib/x86_64-linux-gnu/libgcc_s.so.1)" $R/usr/lib/x86_64-linux-gnu/
	cp -L $PROV $R/usr/lib/x86_64-linux-gnu/libibverbs/
	cp "$SRC/etc/libibverbs.d/rxe.driver" $R/etc/libibverbs.d/
	if [ -n "$SIWKO" ]; then
		cp -L "$(in_src /usr/lib/x86_64-linux-gnu/libibverbs/libsiw-rdmav34.so)" \
			$R/usr/lib/x86_64-linux-gnu/libibverbs/
		cp "$SRC/etc/libibverbs.d/siw.driver" $R/etc/libibverbs.d/
	fi
	ln -sf /usr/sbin/mount.nfs $R/sbin/mount.nfs; ln -sf /usr/sbin/modprobe $R/sbin/modprobe
	cp "$SRC/etc/netconfig" "$SRC/etc/services" "$SRC/etc/protocols" $R/etc/
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
echo "KERNEL=$KDIR/boot/vmlinuz-$KV INITRD=$INITRD SIWKO=$SIWKO"

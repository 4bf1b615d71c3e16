#!/bin/sh
# The NFS test list, run inside the VM against one server and one NFS version:
#   guest-tests.sh SERVER VERS PROTO EXPORT_DIR
#     SERVER      label for the results (knfsd, ganesha, ganesha-tcp, ganesha-srq; -siw on siw0)
#     VERS        3 | 4.1 | 4.2
#     PROTO       rdma (port 20049) | tcp (port 2049)
#     EXPORT_DIR  the exported directory as the guest sees it (the server side; used only to
#                 pre-populate the big directory and to clean up)
# The client mounts $NFS_IP:/export (default 192.168.77.1, rxe0's; siw0's for the siw columns). Each test runs as its own process under timeout and
# prints "RESULT SERVER VERS TEST pass|fail SECONDS [note]". Sizes are small: TCG does ~20 MB/s.
#   guest-tests.sh --one TEST ...   (internal) run one test
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
IP=${NFS_IP:-192.168.77.1}
TESTS=${VM_TESTS:-"mount rw_1m rw_odd small_files symlink readdir_big rsize_4k race_2mounts remount"}
up() { cut -d' ' -f1 /proc/uptime; }
secs() { awk -v a="$1" -v b="$(up)" 'BEGIN{printf "%.1f", b-a}'; }
note() { echo "  [$T] $*"; }
die() { echo "  [$T] FAIL: $*"; exit 1; }

opts() { # mount options for $VERS/$PROTO, plus $1
	if [ "$PROTO" = rdma ]; then o="proto=rdma,port=20049"; else o="proto=tcp,port=2049"; fi
	o="vers=$VERS,$o,soft,timeo=150,retrans=2"
	[ "$VERS" = 3 ] && o="$o,mountproto=tcp,nolock"
	echo "$o${1:+,$1}"
}
do_mount() { # DIR [extra options]
	mkdir -p "$1"
	timeout -s KILL 60 mount.nfs $IP:/export "$1" -o "$(opts "$2")" || die "mount $1 -o $(opts "$2")"
}
do_umount() { grep -q " $1 nfs" /proc/mounts || return 0; timeout -s KILL 60 umount "$1" || die "umount $1"; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
sum() { md5sum < "$1" | cut -d' ' -f1; }
same() { # FILE_A FILE_B what
	[ "$(sum "$1")" = "$(sum "$2")" ] || { wrong_pages "$1" "$2"; die "$3: checksum differs ($1 vs $2)"; }
}
wrong_pages() { # EXPECTED GOT: which 4 KiB pages differ, and what was read in their place
	cmp -l "$1" "$2" 2>/dev/null | awk -v T="$T" '
	{ p = int(($1 - 1) / 4096); if (!(p in n)) { first[p] = $1 - 1; order[++k] = p }
	  n[p]++; last[p] = $1 - 1; if ($3 != 0) nz[p] = 1 }
	END { printf "  [%s] %d pages of 4 KiB differ\n", T, k
	  for (i = 1; i <= k && i <= 12; i++) { p = order[i]
	    printf "  [%s] page %d: %d bytes differ, +%d to +%d%s\n", T, p, n[p],
	      first[p] - 4096 * p, last[p] - 4096 * p, (p in nz) ? "" : ", read as zeros" } }' > /tmp/wrong
	cat /tmp/wrong
	# a wrong page that is another page of the file: which one
	for p in $(awk '$2 == "page" {sub(":", "", $3); print $3}' /tmp/wrong | head -4); do
		got=$(dd if="$2" bs=4096 skip=$p count=1 2>/dev/null | md5sum | cut -d' ' -f1)
		i=0; n=$(( ($(wc -c < "$1") + 4095) / 4096 ))
		while [ $i -lt $n ]; do
			[ "$(dd if="$1" bs=4096 skip=$i count=1 2>/dev/null | md5sum | cut -d' ' -f1)" = "$got" ] &&
				{ note "page $p holds the bytes of page $i"; break; }
			i=$((i + 1))
		done
	done
	grep "xprt:" /proc/self/mountstats | sed "s/^/  [$T] mountstats /"
}
# xprtrdma counters of /mnt's transport (/proc/self/mountstats "xprt: rdma" line):
# field 11 read_chunk_count, 12 write_chunk_count, 13 reply_chunk_count.
chunks() { awk -v k=$1 '$1=="device" {m=($5=="/mnt")} m && $1=="xprt:" && $2=="rdma" {print $(2+k); exit}' /proc/self/mountstats; }
chunk_grew() { # FIELD BEFORE what: on rdma, the counter must have moved
	[ "$PROTO" = rdma ] || return 0
	cn=$(chunks $1); note "$3: count $2 -> $cn"
	[ -n "$cn" ] && [ "$cn" -gt "$2" ] || die "$3 did not go up ($2 -> $cn)"
}
ensure_mnt() { grep -q " /mnt nfs" /proc/mounts || do_mount /mnt; }

t_mount() {
	do_umount /mnt; do_mount /mnt
	grep " /mnt nfs" /proc/mounts | head -1 | sed 's/^/  /'
	ls /mnt > /dev/null || die "ls /mnt"
}
t_rw_1m() { # 1 MiB records: 4 MiB file written and read with bs=1M
	ensure_mnt
	dd if=/dev/urandom of=/tmp/ref bs=1M count=4 2>/dev/null
	r0=$(chunks 11); w0=$(chunks 12)
	dd if=/tmp/ref of=/mnt/big bs=1M conv=fsync 2>/dev/null || die "write"
	chunk_grew 11 "$r0" "WRITE via Read chunks"
	drop
	dd if=/mnt/big of=/tmp/back bs=1M 2>/dev/null || die "read"
	chunk_grew 12 "$w0" "READ via Write chunks"
	same /tmp/ref /tmp/back "4 MiB by 1 MiB records"
	rm -f /tmp/back /tmp/ref /mnt/big
}
t_rw_odd() { # odd sizes around page/inline boundaries
	ensure_mnt
	dd if=/dev/urandom of=/tmp/src bs=1k count=1100 2>/dev/null
	SIZES="1 3 1023 1025 4095 4097 8191 65535 65537 131071 1048575 1048577 1100000"
	for s in $SIZES; do head -c $s /tmp/src > /tmp/o_$s; cat /tmp/o_$s > /mnt/odd_$s || die "write $s"; done
	drop
	for s in $SIZES; do
		n=$(stat -c %s /mnt/odd_$s); [ "$n" = $s ] || die "size of odd_$s is $n"
		cat /mnt/odd_$s > /tmp/b_$s || die "read $s"
		same /tmp/o_$s /tmp/b_$s "size $s"
	done
	# an odd-sized write at an odd offset inside an existing file
	dd if=/tmp/src of=/mnt/odd_1100000 bs=1 skip=7 seek=12345 count=7777 conv=notrunc 2>/dev/null
	dd if=/tmp/src of=/tmp/o_1100000 bs=1 skip=7 seek=12345 count=7777 conv=notrunc 2>/dev/null
	drop; cat /mnt/odd_1100000 > /tmp/b; same /tmp/o_1100000 /tmp/b "rewrite at odd offset"
	rm -f /tmp/o_* /tmp/b_* /tmp/b /mnt/odd_*
}
t_small_files() { # many small files created through the client
	ensure_mnt
	N=100; mkdir -p /mnt/small /tmp/small || die mkdir
	i=0; while [ $i -lt $N ]; do
		echo "file $i $(head -c $((i % 50 + 1)) /dev/urandom | md5sum)" > /tmp/small/f$i
		cp /tmp/small/f$i /mnt/small/f$i || die "create f$i"
		i=$((i + 1))
	done
	drop
	[ "$(ls /mnt/small | wc -l)" = $N ] || die "count $(ls /mnt/small | wc -l) != $N"
	a=$(cd /tmp/small && for f in $(ls); do cat $f; done | md5sum)
	b=$(cd /mnt/small && for f in $(ls); do cat $f; done | md5sum)
	[ "$a" = "$b" ] || die "contents differ"
	rm -rf /mnt/small /tmp/small; [ -e /mnt/small ] && die "rm -rf"
	return 0
}
t_symlink() { # short and long (2000-byte) targets: READLINK
	ensure_mnt
	long=$(head -c 3000 /dev/zero | tr '\0' 'a' | fold -w 200 | head -c 2000 | tr '\n' '/')
	ln -s target-file /mnt/sl_short || die "symlink short"
	ln -s "$long" /mnt/sl_long || die "symlink long"
	drop; do_umount /mnt; do_mount /mnt
	[ "$(readlink /mnt/sl_short)" = target-file ] || die "readlink short: $(readlink /mnt/sl_short)"
	[ "$(readlink /mnt/sl_long)" = "$long" ] || die "readlink long differs"
	echo data > /mnt/target-file; [ "$(cat /mnt/sl_short)" = data ] || die "follow link"
	rm -f /mnt/sl_short /mnt/sl_long /mnt/target-file
}
t_readdir_big() { # ~36 KB of names: READDIR replies that need a Reply chunk
	ensure_mnt
	mkdir -p "$EXPORT_DIR/bigdir" || die "server-side mkdir"
	p=$(head -c 110 /dev/zero | tr '\0' 'n')
	i=0; while [ $i -lt 300 ]; do : > "$EXPORT_DIR/bigdir/$p.$i"; i=$((i + 1)); done
	sync; do_umount /mnt; do_mount /mnt
	y0=$(chunks 13)
	a=$(ls "$EXPORT_DIR/bigdir" | md5sum); b=$(ls /mnt/bigdir | md5sum)
	chunk_grew 13 "$y0" "READDIR via Reply chunks"
	[ "$a" = "$b" ] || die "ls differs: $(ls /mnt/bigdir | wc -l) entries"
	n=$(ls -l /mnt/bigdir | grep -c "^-"); [ $n = 300 ] || die "ls -l (READDIRPLUS) shows $n"
	# unlinking while reading the directory can leave entries behind on the first pass (the
	# cookies move under the reader): that is cleanup, not the test, so allow three passes
	for k in 1 2 3; do rm -rf /mnt/bigdir 2>/dev/null && break; note "rm -rf pass $k left entries"; done
	[ -e /mnt/bigdir ] && die "rm -rf bigdir"
	return 0
}
t_rsize_4k() { # rsize=wsize=4096: 1 MiB + odd tail through 4 KiB chunks
	do_mount /mnt4k "rsize=4096,wsize=4096,nosharecache"
	grep " /mnt4k nfs" /proc/mounts | grep -q "rsize=4096,wsize=4096" || die "rsize not 4096"
	dd if=/dev/urandom of=/tmp/ref4 bs=1k count=1100 2>/dev/null
	head -c 70001 /tmp/ref4 > /tmp/ref4b
	cp /tmp/ref4 /mnt4k/f4k && cp /tmp/ref4b /mnt4k/f4kb || die "write"
	drop; do_umount /mnt4k
	# the server's copy first: tells a WRITE that stored wrong bytes from a READ that returns them
	same /tmp/ref4 "$EXPORT_DIR/f4k" "1100 KiB as stored (WRITE path)"
	same /tmp/ref4b "$EXPORT_DIR/f4kb" "70001 bytes as stored (WRITE path)"
	do_mount /mnt4k "rsize=4096,wsize=4096,nosharecache"
	cat /mnt4k/f4k > /tmp/b4 && cat /mnt4k/f4kb > /tmp/b4b || die "read"
	same /tmp/ref4 /tmp/b4 "1100 KiB read back (READ path)"; same /tmp/ref4b /tmp/b4b "70001 bytes read back (READ path)"
	rm -f /mnt4k/f4k /mnt4k/f4kb /tmp/ref4* /tmp/b4*
	do_umount /mnt4k
}
t_race_2mounts() { # two mounts (separate superblocks) write interleaved 64 KiB blocks of one file
	ensure_mnt; do_mount /mnt2 nosharecache
	dd if=/dev/urandom of=/tmp/ra bs=64k count=16 2>/dev/null
	dd if=/dev/urandom of=/tmp/rb bs=64k count=16 2>/dev/null
	dd if=/dev/zero of=/mnt/race bs=64k count=16 conv=fsync 2>/dev/null || die "create"
	cp /tmp/ra /tmp/rexp
	for i in 1 3 5 7 9 11 13 15; do dd if=/tmp/rb of=/tmp/rexp bs=64k skip=$i seek=$i count=1 conv=notrunc 2>/dev/null; done
	( for i in 0 2 4 6 8 10 12 14; do dd if=/tmp/ra of=/mnt/race bs=64k skip=$i seek=$i count=1 conv=notrunc,fsync 2>/dev/null || exit 1; done ) &
	pa=$!
	( for i in 1 3 5 7 9 11 13 15; do dd if=/tmp/rb of=/mnt2/race bs=64k skip=$i seek=$i count=1 conv=notrunc,fsync 2>/dev/null || exit 1; done ) &
	pb=$!
	wait $pa; ra=$?; wait $pb; rb=$?
	[ $ra = 0 ] && [ $rb = 0 ] || die "writers rc=$ra,$rb"
	drop
	cat /mnt2/race > /tmp/rback; same /tmp/rexp /tmp/rback "via mount 2"
	cat /mnt/race > /tmp/rback; same /tmp/rexp /tmp/rback "via mount 1"
	same /tmp/rexp "$EXPORT_DIR/race" "server side"
	rm -f /mnt/race /tmp/ra /tmp/rb /tmp/rexp /tmp/rback
	do_umount /mnt2
}
t_remount() { # data survives umount/remount; the mount comes back three times
	ensure_mnt
	dd if=/dev/urandom of=/tmp/rm bs=1k count=300 2>/dev/null
	cp /tmp/rm /mnt/remount || die write
	for k in 1 2 3; do
		do_umount /mnt; grep -q " /mnt nfs" /proc/mounts && die "still mounted"
		do_mount /mnt
		same /tmp/rm /mnt/remount "after remount $k"
	done
	rm -f /mnt/remount /tmp/rm
	do_umount /mnt
}

if [ "$1" = --one ]; then
	T=$2; SERVER=$3; VERS=$4; PROTO=$5; EXPORT_DIR=$6
	set +e
	t_$T
	exit $?
fi

SERVER=$1; VERS=$2; PROTO=${3:-rdma}; EXPORT_DIR=${4:-/export}
mounted=0
for T in $TESTS; do
	t0=$(up)
	if [ $T != mount ] && [ $mounted = 0 ]; then
		echo "RESULT $SERVER $VERS $T fail 0 no-mount" | tee -a /out/results; continue
	fi
	timeout -s KILL ${VM_TEST_TIMEOUT:-240} sh "$0" --one $T "$SERVER" "$VERS" "$PROTO" "$EXPORT_DIR"
	rc=$?
	if [ $rc = 0 ]; then st=pass; else st=fail; fi
	[ $T = mount ] && [ $rc = 0 ] && mounted=1
	[ $rc = 137 ] && echo "  [$T] killed by timeout"
	echo "RESULT $SERVER $VERS $T $st $(secs $t0)" | tee -a /out/results
done
for d in /mnt /mnt2 /mnt4k; do
	grep -q " $d nfs" /proc/mounts && { timeout -s KILL 30 umount $d || timeout -s KILL 30 umount -f $d; }
done
true

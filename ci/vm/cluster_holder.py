#!/usr/bin/env python3
# State the kernel client must reclaim across a head's restart (ci/vm/guest-cluster.sh), run in
# the guest's chroot of the host root (busybox has no byte-range locks):
#
#   cluster_holder.py hold FILE STOP     open FILE for writing, a write lock on all of it (POSIX,
#                                   so an NFSv4 LOCK), print "locked", append a 64 KiB block
#                                   every half second until the file STOP exists, fsync (an
#                                   error exits non-zero), print "blocks N", close (unlocks)
#   cluster_holder.py trylock FILE       a write lock on all of FILE without waiting: prints
#                                   "granted" (and unlocks) or "denied"
#   cluster_holder.py verify FILE N      FILE holds the N blocks of hold: exit 0, else 1
import errno
import fcntl
import os
import sys
import time

BLOCK = 65536


def block(i):
    return bytes([i % 251]) * BLOCK


def hold(path, stop):
    with open(path, "wb", buffering=0) as f:
        fcntl.lockf(f, fcntl.LOCK_EX)
        print("locked", flush=True)
        n = 0
        while not os.path.exists(stop):
            f.write(block(n))
            n += 1
            time.sleep(0.5)
        os.fsync(f.fileno())
        print("blocks", n, flush=True)


def trylock(path):
    with open(path, "r+b") as f:
        try:
            fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EACCES):
                print("denied")
                return
            raise
        fcntl.lockf(f, fcntl.LOCK_UN)
        print("granted")


def verify(path, n):
    with open(path, "rb") as f:
        for i in range(n):
            if f.read(BLOCK) != block(i):
                print("block", i, "differs")
                return 1
        if f.read(1):
            print("longer than", n, "blocks")
            return 1
    print("equal")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "hold":
        hold(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "trylock":
        trylock(sys.argv[2])
    else:
        sys.exit(verify(sys.argv[2], int(sys.argv[3])))

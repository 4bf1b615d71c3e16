#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_table.py OUTDIR - the VM bench's medians and ratios (ci/vm/guest-bench.sh's raw files).

Reads OUTDIR/bench.results ("SERVER VERS ROUND TEST STATUS BYTES SECONDS"), the fio JSON files
and mount lines under OUTDIR/bench/, and OUTDIR/host-info; writes OUTDIR/bench.json and prints
the table. Exit status 1 when a measurement failed or a server has no figures at all.
"""
import glob
import json
import os
import re
import statistics
import sys

OUT = sys.argv[1]
TESTS = [  # name, what the figure is, unit
    ("dd_write1m", "dd write, 1 MiB records, conv=fsync", "MB/s"),
    ("dd_read1m", "dd read, 1 MiB records, after remount", "MB/s"),
    ("fio_seqwrite1m", "fio 1 MiB sequential write, O_DIRECT, QD 4", "MB/s"),
    ("fio_seqread1m", "fio 1 MiB sequential read, O_DIRECT, QD 4", "MB/s"),
    ("fio_randwrite4k", "fio 4 KiB random write, O_DIRECT, QD 16", "IOPS"),
    ("fio_randread4k", "fio 4 KiB random read, O_DIRECT, QD 16", "IOPS"),
]
SERVERS = ("knfsd", "ganesha")
CONTROLS = ("knfsd-tcp", "ganesha-tcp")  # RPCRDMA_VM_BENCH_TCP=1


def ratio(a, b):
    return a / b if a is not None and b else None


def read_kv(path):
    try:
        with open(path) as f:
            return dict(re.findall(r"(\w+)=(\S+)", f.read()))
    except OSError:
        return {}


def fio_figure(path, unit):
    """(bandwidth in MB/s or IOPS, number of I/Os) from fio's JSON, None when unreadable."""
    try:
        with open(path) as f:
            text = f.read()
        job = json.loads(text[text.index("{"):])["jobs"][0]
    except (OSError, ValueError, KeyError, IndexError):
        return None
    side = job["write"] if job["write"]["io_bytes"] else job["read"]
    if side.get("error") or not side["io_bytes"]:
        return None
    return (side["iops"] if unit == "IOPS" else side["bw_bytes"] / 1e6), side["total_ios"]


TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")  # the guest runs the host's kernel config: USER_HZ 100


def measurements():
    """{(server, vers, test): [figure per round]}, {same: [(server CPU ms per I/O, guest busy
    fraction) per round]}, failures as text lines."""
    unit = {t: u for t, _, u in TESTS}
    fig, cpu, failed = {}, {}, []
    try:
        lines = open(os.path.join(OUT, "bench.results")).read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        f = line.split()
        if len(f) < 7:
            continue
        server, vers, rnd, test, status, nbytes, secs = f[:7]
        if status != "pass":
            failed.append(line)
            continue
        if test.startswith("fio_"):
            r = fio_figure(os.path.join(OUT, "bench", f"fio-{server}-{vers}-{rnd}-{test[4:]}.json"),
                           unit.get(test, "MB/s"))
            if r is None:
                failed.append(line + " (no figure in fio's JSON)")
                continue
            v, ios = r
        else:
            if float(secs) <= 0:
                failed.append(line + " (no time)")
                continue
            v, ios = int(nbytes) / float(secs) / 1e6, int(nbytes) >> 20
        fig.setdefault((server, vers, test), []).append(v)
        kv = dict(x.split("=", 1) for x in f[7:] if "=" in x)
        if ios and {"busy", "idle", "srv"} <= kv.keys():
            busy, idle = int(kv["busy"]), int(kv["idle"])
            cpu.setdefault((server, vers, test), []).append(
                (int(kv["srv"]) * TICK_MS / ios, busy / (busy + idle) if busy + idle else 0))
    return fig, cpu, failed


def mount_options():
    r = {}
    for p in glob.glob(os.path.join(OUT, "bench", "mount-*.txt")):
        key = os.path.basename(p)[6:-4]
        try:
            opts = open(p).read().split()[3].split(",")
        except (OSError, IndexError):
            continue
        r[key] = ",".join(o for o in opts if o.split("=")[0] in ("vers", "rsize", "wsize", "proto"))
    return r


def strace_per_io():
    """RPCRDMA_VM_BENCH_STRACE=1: [(cell, I/Os, {syscall: calls per I/O})] from strace -c's
    summaries and the same job's fio JSON."""
    r = []
    for p in sorted(glob.glob(os.path.join(OUT, "bench", "strace-*.txt"))):
        cell = os.path.basename(p)[len("strace-"):-len(".txt")]
        fio = fio_figure(os.path.join(OUT, "bench", "fio-" + cell + ".json"), "IOPS")
        if not fio or not fio[1]:
            continue
        calls = {}
        for line in open(p):
            f = line.split()
            # "% time seconds usecs/call calls [errors] syscall"
            if len(f) >= 5 and f[-1] != "total" and f[3].isdigit() and f[0][0].isdigit():
                calls[f[-1]] = int(f[3]) / fio[1]
        r.append((cell, fio[1], calls))
    return r


def main():
    fig, cpu, failed = measurements()
    params = read_kv(os.path.join(OUT, "bench", "params"))
    try:
        host = "; ".join(open(os.path.join(OUT, "host-info")).read().strip().splitlines())
    except OSError:
        host = ""
    versions = sorted({k[1] for k in fig}, key=float)
    controls = [c for c in CONTROLS if any(k[0] == c for k in fig)]
    rows = []
    for vers in versions:
        for test, what, unit in TESTS:
            row = {"vers": vers, "test": test, "what": what, "unit": unit}
            for srv in SERVERS + tuple(controls):
                v = fig.get((srv, vers, test), [])
                row[srv] = v
                row[srv + "_median"] = statistics.median(v) if v else None
            if not any(row[srv] for srv in SERVERS):
                continue
            for srv in SERVERS + tuple(controls):
                c = cpu.get((srv, vers, test), [])
                row[srv + "_srv_ms_per_io"] = statistics.median(x[0] for x in c) if c else None
                row[srv + "_guest_busy"] = statistics.median(x[1] for x in c) if c else None
            row["ratio"] = ratio(row["ganesha_median"], row["knfsd_median"])
            # rounds pair up (the same round ran both, next to each other): the median of the
            # per-round ratios is less hurt by the shared host's drift between rounds
            paired = [g / k for k, g in zip(row["knfsd"], row["ganesha"]) if k]
            row["paired_ratio"] = statistics.median(paired) if paired else None
            if controls:
                row["tcp_ratio"] = ratio(row.get("ganesha-tcp_median"), row.get("knfsd-tcp_median"))
            rows.append(row)
    mounts = mount_options()
    res = {"params": params, "host": host, "mounts": mounts, "rows": rows, "failed": failed}
    with open(os.path.join(OUT, "bench.json"), "w") as f:
        json.dump(res, f, indent=1)

    print(f"VM bench ({host}; {' '.join(f'{k}={v}' for k, v in params.items())})")
    fs = params.get("export_fs", "tmpfs")
    fs = "ext4 on a RAM disk" if fs == "ext4" else fs
    print(f"knfsd: {fs} export, 8 threads; ganesha+rpcrdma: FSAL VFS on {fs}; "
          "client: the guest kernel's NFS/RDMA client over rxe0. Median of the rounds; "
          "ratio = ganesha/knfsd over RDMA (of the medians; paired: median of the per-round "
          "ratios)" + (", tcp ratio = the same over TCP (controls)"
                                               if controls else "") + ".")
    cols = SERVERS + tuple(controls)
    print(f"{'vers':<5} {'test':<17} {'unit':<5} " + " ".join(f"{c:>11}" for c in cols) +
          f" {'ratio':>6} {'paired':>6}" + (f" {'tcp ratio':>9}" if controls else "") + "  per round (" +
          " | ".join(c[0] + ("t" if c.endswith("tcp") else "") for c in cols) + ")")

    def num(v):
        return "-" if v is None else f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 100 else f"{v:.0f}"

    def rat(v):
        return "-" if v is None else f"{v:.2f}"
    for r in rows:
        rounds = " | ".join(" ".join(num(v) for v in r[c]) for c in cols)
        print(f"{r['vers']:<5} {r['test']:<17} {r['unit']:<5} " +
              " ".join(f"{num(r[c + '_median']):>11}" for c in cols) + f" {rat(r['ratio']):>6}" +
              f" {rat(r['paired_ratio']):>6}" +
              (f" {rat(r['tcp_ratio']):>9}" if controls else "") + f"  {rounds}")
    if any(r.get("knfsd_srv_ms_per_io") is not None for r in rows):
        print("\nserver CPU per I/O, ms (its threads: ganesha.nfsd, or the nfsd kthreads; rxe and "
              "softirq work elsewhere), and the guest's busy % over the job (fio start included):")
        for r in rows:
            print(f"{r['vers']:<5} {r['test']:<17} " + "  ".join(
                f"{c} {num(r[c + '_srv_ms_per_io'])} ms {num(100 * r[c + '_guest_busy'])}%"
                for c in cols if r.get(c + "_srv_ms_per_io") is not None))
    traced = strace_per_io()
    if traced:
        print("\nganesha's system calls per I/O under strace -c -f (a diagnosis: tracing slows it, "
              "so the figures above for these cells do not count):")
        for cell, ios, calls in traced:
            top = sorted(calls.items(), key=lambda kv: -kv[1])[:12]
            print(f"{cell:<34} {ios:>6} I/Os {sum(calls.values()):6.1f}/I/O: " +
                  " ".join(f"{k} {v:.2f}" for k, v in top))
    for key in sorted(mounts):
        print(f"mount {key}: {mounts[key]}")
    for line in failed:
        print(f"FAILED: {line}")
    missing = [s for s in SERVERS if not any(k[0] == s for k in fig)]
    for s in missing:
        print(f"no figures for {s}")
    return 1 if failed or missing else 0


if __name__ == "__main__":
    sys.exit(main())

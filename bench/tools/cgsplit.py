#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cgsplit.py - split a callgrind dump's instruction count (Ir) by layer.

    cgsplit.py DUMP [DUMP...]   -> one JSON object per dump on stdout

Every function is given a layer from its object file, its source file (our
libraries are built with -g) and its name:

  fabric   src/fabric/, fab_*, soft_*, vb_*
  rpcrdma  src/rpcrdma/, rr_*
  ulb      src/ulb/, ulb_*
  plugin   src/plugin/, rrp_*
  ntirpc   libntirpc (Debian ships it stripped: static functions are
           addresses, so its TCP path cannot be told from its XDR/auth/
           dispatch code by name)
  ganesha  ganesha.nfsd, libganesha_nfsd, FSALs (/usr/lib/ganesha)
  log      our log lines: rr_log, rr_ratelog, rr_ratelog_summary, vlog
           (rpcrdma), rrp_log_at (plugin). At the default level they are
           connection events, at most one summary per 5 s (rr_ratelog), never
           per call; a summary that falls in a window of 10 calls is ~600
           instructions per call, so they are kept apart from the data path.
  (none)   libc, ld.so, libstdc++, liburcu, vdso, other libraries

A layered function is charged its own instructions plus the inclusive cost
of every call it makes into unlayered code (memcpy, malloc, locks, syscall
wrappers); "other" is whatever remains of the dump's total (thread start-up,
libc code not reached from a layered function). Kernel work is not counted
by callgrind at all.

The plugin interposes the allocator (rrp_payload.c: free, realloc,
posix_memalign) for the whole process, so ganesha's and ntirpc's own frees
pass through it. Those wrappers keep their own instructions (the range check,
the payload pool), but the libc work they forward is charged to whoever
called them, in proportion to each caller's inclusive cost through the
wrapper: a free() ganesha makes stays ganesha's, as it is over TCP. The
wrappers' helpers (malloc_announced, the payload pool) count as part of them.
"""
import json
import re
import sys

LAYERED = ("fabric", "rpcrdma", "ulb", "plugin", "log", "ntirpc", "ganesha")
LOG_FNS = ("rr_log", "rr_ratelog", "rr_ratelog_summary", "vlog", "rrp_log_at")
INTERPOSED = ("free", "realloc", "posix_memalign", "malloc", "calloc", "memalign",
              "aligned_alloc")


def layer_of(ob, fl, name):
    base = name.split("'")[0]
    if base.split(".")[0] in LOG_FNS and "rpcrdma" in ob:
        return "log"
    for d, l in (("/src/fabric/", "fabric"), ("/src/rpcrdma/", "rpcrdma"),
                 ("/src/ulb/", "ulb"), ("/src/plugin/", "plugin")):
        if d in fl:
            return l
    for p, l in (("fab_", "fabric"), ("soft_", "fabric"), ("vb_", "fabric"),
                 ("rr_", "rpcrdma"), ("ulb_", "ulb"), ("rrp_", "plugin")):
        if base.startswith(p) and "rpcrdma" in ob:
            return l
    if "libntirpc" in ob:
        return "ntirpc"
    if "ganesha" in ob and "rpcrdma" not in ob:
        return "ganesha"
    if "rpcrdma" in ob:
        return "plugin"
    return None


HOOK_NAMES = ("gsh_malloc__", "gsh_malloc_aligned__", "gsh_calloc__", "gsh_realloc__",
              "gsh_free_size")
HOOK_MAX_SELF = 20  # instructions per call: a null check around the allocator


OURS = ("fabric", "rpcrdma", "ulb", "plugin")


def inlined_key(fn, ob, fl, file, fninfo):
    """The cost key for lines of @file inside function @fn: @fn itself, or,
    when the compiler (LTO) inlined code of another of our layers into it,
    a key of its own in that layer (fn'@layer), so the split follows the
    source each instruction came from, not the function it ended up in."""
    here_l = layer_of("", file, "")
    fn_l = layer_of(ob, fl, fn)
    if here_l in OURS and fn_l in OURS and here_l != fn_l:
        key = f"{fn}'@{here_l}"
        fninfo.setdefault(key, (ob, file))
        return key
    return fn


CLONE = re.compile(r"(\.(lto_priv|isra|constprop|part|cold)(\.\d+)?)+$")


def shown(key):
    """A function's name as the report shows it: without the suffixes GCC
    gives the copies it specialises (foo.isra.0, foo.lto_priv.0, ...), which
    are then counted together."""
    base = CLONE.sub("", key.split("'")[0])
    return base + " (inlined code)" if "'@" in key else base


def wrapper_helpers(lay, calls, wrappers):
    """Plugin functions called only from the allocator wrappers (their slow
    paths, e.g. malloc_announced): part of the wrapper, so the libc work they
    forward (glibc's malloc for an allocation that is not a payload) is the
    caller's, as the wrapper's own forwarding is."""
    callers = {}
    for caller, callee, _, _ in calls:
        callers.setdefault(callee, set()).add(caller)
    inner = set()
    grew = True
    while grew:
        grew = False
        for fn, cs in callers.items():
            if fn in wrappers or fn in inner or lay.get(fn) != "plugin":
                continue
            if cs and all(c in wrappers or c in inner for c in cs):
                inner.add(fn)
                grew = True
    return inner


def allocator_hooks(lay, calls, wrappers, self_cost, ncalls):
    """ganesha's allocator entry points that ntirpc calls through
    tirpc_pkg_params (nfs_init.c's ntirpc_pp: gsh_malloc__, gsh_calloc__,
    gsh_free_size, ...). Debian strips libganesha_nfsd and does not export
    ntirpc_pp, so without names they are found by shape: a ganesha function
    called from ntirpc whose every callee is the C allocator (or the plugin's
    interposer of it) and which adds at most HOOK_MAX_SELF instructions per
    call. ganesha's request constructor (alloc_nfs_request, which ntirpc
    calls on TCP and the plugin on RDMA) initializes the request and is over
    that bound, so it stays ganesha's on both transports."""
    callees, from_ntirpc = {}, set()
    for caller, callee, _, _ in calls:
        callees.setdefault(caller, set()).add(callee)
        if lay.get(caller) == "ntirpc":
            from_ntirpc.add(callee)
    hooks = set()
    for fn in from_ntirpc:
        if lay.get(fn) != "ganesha" or not callees.get(fn):
            continue
        base = fn.split("'")[0]
        if base in HOOK_NAMES:
            hooks.add(fn)
            continue
        only_alloc = all(c in wrappers or (not lay.get(c) and c.split("'")[0] in INTERPOSED)
                         for c in callees[fn])
        if base.startswith("0x") and only_alloc and ncalls.get(fn) and \
                self_cost.get(fn, 0) <= HOOK_MAX_SELF * ncalls[fn]:
            hooks.add(fn)
    return hooks


def charge_hooks(hooks, calls, lay, per_fn, wrappers, self_cost, through):
    """An allocator hook is charged, like the libc it wraps, to whoever calls
    it: the ntirpc TCP path's own allocations are ntirpc's work. The
    interposer's own instructions under a hook stay the plugin's."""
    incl, plugin_self = {}, {}
    for caller, callee, _, ir in calls:
        if callee in hooks:
            incl[callee] = incl.get(callee, 0) + ir
        if caller in hooks and callee in wrappers and through[callee]:
            plugin_self[caller] = plugin_self.get(caller, 0) + \
                ir * self_cost.get(callee, 0) / through[callee]
    for caller, callee, _, ir in calls:
        if callee in hooks and lay.get(caller) and incl[callee]:
            keep = 1 - plugin_self.get(callee, 0) / incl[callee]
            per_fn[caller] = per_fn.get(caller, 0) + ir * keep


def parse(path):
    names = {"ob": {}, "fl": {}, "fn": {}}
    kind = {"ob": "ob", "cob": "ob", "fl": "fl", "fi": "fl", "fe": "fl", "cfi": "fl",
            "cfl": "fl", "fn": "fn", "cfn": "fn"}
    ref = re.compile(r"^\((\d+)\)(?: (.*))?$")

    def name(k, v):
        m = ref.match(v)
        if not m:
            return v
        if m.group(2) is not None:
            names[kind[k]][m.group(1)] = m.group(2)
            return m.group(2)
        return names[kind[k]].get(m.group(1), v)

    # Functions are keyed by their compressed id where there is one: libc's
    # free and the plugin's interposed free share a name.
    def fkey(v):
        m = ref.match(v)
        nm = name("fn", v)
        return f"{nm}'#{m.group(1)}" if m else nm

    fninfo = {}     # fn name -> (ob, fl)
    self_cost = {}  # fn -> Ir
    calls = []      # (caller fn, callee fn, callee ob, inclusive Ir)
    ncalls = {}     # callee fn -> number of calls into it
    total = 0
    ob = fl = fn = here = ""
    cob = cfn = None
    pending_call = False
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            c0 = line[0]
            if c0.isdigit() or c0 in "+-*":
                parts = line.split()
                ir = int(parts[1]) if len(parts) > 1 else 0
                if pending_call:
                    calls.append((here, cfn, cob if cob is not None else ob, ir))
                    pending_call = False
                    cob = cfn = None
                else:
                    self_cost[here] = self_cost.get(here, 0) + ir
                continue
            if line.startswith(("totals:", "summary:")):
                total = max(total, int(line.split()[1]))
                continue
            if "=" not in line:
                continue
            k, v = line.split("=", 1)
            if k == "ob":
                ob = name(k, v)
            elif k == "fl":
                fl = name(k, v)
            elif k in ("fi", "fe"):
                here = inlined_key(fn, ob, fl, name(k, v), fninfo)
            elif k in ("cfi", "cfl"):
                name(k, v)
            elif k == "fn":
                fn = here = fkey(v)
                fninfo.setdefault(fn, (ob, fl))
            elif k == "cob":
                cob = name(k, v)
            elif k == "cfn":
                cfn = fkey(v)
            elif k == "calls":
                pending_call = True
                ncalls[cfn] = ncalls.get(cfn, 0) + int(v.split()[0])
    lay = {fn: layer_of(o, f_, fn) for fn, (o, f_) in fninfo.items()}
    wrappers = {fn for fn in lay
                if lay[fn] == "plugin" and fn.split("'")[0] in INTERPOSED and "'@" not in fn}
    inner = wrapper_helpers(lay, calls, wrappers)
    wrappers |= inner
    hooks = allocator_hooks(lay, calls, wrappers, self_cost, ncalls)
    for h in hooks:
        lay[h] = None
    per_fn = {}
    for fn, ir in self_cost.items():
        if lay.get(fn):
            per_fn[fn] = per_fn.get(fn, 0) + ir
    forwarded = {w: 0 for w in wrappers}   # libc cost under each wrapper
    through = {w: 0 for w in wrappers}     # inclusive cost of calls into it
    for caller, callee, cob_, ir in calls:
        if callee in wrappers:
            through[callee] += ir
        if not lay.get(caller) or callee in hooks:
            continue
        cl = lay.get(callee)
        if cl is None and callee not in lay:
            cl = layer_of(cob_, "", callee)
        if cl is None:
            if caller in wrappers:
                forwarded[caller] += ir
            else:
                per_fn[caller] = per_fn.get(caller, 0) + ir
    # A helper's forwarded libc work goes up to the wrapper that called it,
    # then, with the wrapper's own, to the wrapper's callers.
    for caller, callee, cob_, ir in calls:
        if callee in inner and caller in wrappers and through[callee]:
            forwarded[caller] += ir * forwarded[callee] / through[callee]
    for caller, callee, cob_, ir in calls:
        if callee in wrappers and caller not in wrappers and lay.get(caller) and \
                through[callee]:
            share = ir * forwarded[callee] / through[callee]
            per_fn[caller] = per_fn.get(caller, 0) + share
    charge_hooks(hooks, calls, lay, per_fn, wrappers, self_cost, through)
    layers = {l: 0 for l in LAYERED}
    for fn, ir in per_fn.items():
        layers[lay[fn]] += ir
    layers = {l: round(v) for l, v in layers.items()}
    layers["other"] = total - sum(layers[l] for l in LAYERED)
    top = {}
    for l in ("fabric", "rpcrdma", "ulb", "plugin", "log", "ntirpc", "ganesha"):
        by_name = {}
        for fn, ir in per_fn.items():
            if lay[fn] == l:
                by_name[shown(fn)] = by_name.get(shown(fn), 0) + ir
        fns = sorted(((ir, name) for name, ir in by_name.items()), reverse=True)
        top[l] = [[name, round(ir)] for ir, name in fns[:40]]
    return {"file": path, "total": total, "layers": layers, "top": top,
            "allocator_hooks": sorted(shown(h) for h in hooks)}


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(json.dumps(parse(p)))

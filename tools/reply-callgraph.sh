#!/bin/sh
# SPDX-License-Identifier: MIT
#
# tools/reply-callgraph.sh - the static call graph of a Reply, from the
# compiler (gcc -fcallgraph-info, one .ci file per source file): what the
# plugin's x_reply calls, and that neither the engine's rr_reply reaches the
# ULB or the plugin nor the ULB's ulb_reply_plan reaches the engine - the
# Reply's shape is decided in src/rpcrdma alone (docs/architecture.md).
# Built at -O0, so that header inline functions show as calls. Calls through
# function pointers are listed, not followed. Exit status 1 when a layer
# reaches one it must not. Needs gcc and libntirpc-dev.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/reply-callgraph.XXXXXX")
trap 'rm -rf "$out"' EXIT
# The host adapter of the installed ntirpc, as src/plugin/CMakeLists.txt picks it
case $(pkg-config --modversion libntirpc) in
5.8*) host=5.9 ;;
6.3*) host=6.5 ;;
*) host=4.3 ;;
esac
host=$root/src/plugin/host/ganesha-$host
for f in "$root"/src/rpcrdma/*.c "$root"/src/ulb/*.c "$root"/src/plugin/rrp_xprt.c; do
	gcc -O0 -std=c11 -D_DEFAULT_SOURCE -D_GNU_SOURCE -D_POSIX_C_SOURCE=200809L -DINET6 \
		-I"$root/src" -I"$host" -isystem /usr/include/ntirpc -isystem /usr/include/libnl3 \
		-fcallgraph-info -c "$f" -o "$out/$(basename "$f" .c).o"
done
python3 - "$out" <<'EOF'
import collections, glob, re, sys

calls = collections.defaultdict(set)
where = {}  # function -> source file, for those defined in the files read
for ci in glob.glob(sys.argv[1] + "/*.ci"):
    for line in open(ci):
        m = re.match(r'node: \{ title: "([^"]+)" label: "[^\\"]+\\n([^:"]+)', line)
        if m and "shape" not in line:
            where[m.group(1).split(":")[-1]] = m.group(2)
        m = re.match(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"', line)
        if m:
            calls[m.group(1).split(":")[-1]].add(m.group(2).split(":")[-1])

def layer(fn):
    m = re.search(r"/src/(\w+)/", where.get(fn, ""))
    if m:
        return m.group(1)
    for prefix, name in (("rrp_", "plugin"), ("rr_", "rpcrdma"), ("ulb_", "ulb"), ("fab_", "fabric")):
        if fn.startswith(prefix):
            return name  # defined in a file not read here: by its prefix
    return "other"

def reach(fn):
    seen, todo = set(), [fn]
    while todo:
        for g in calls.get(todo.pop(), ()):
            if g not in seen:
                seen.add(g)
                todo.append(g)
    return seen

for fn in ("x_reply", "plan_reply"):
    print("%s calls: %s" % (fn, " ".join(sorted(calls[fn]))))
bad = 0
for root, banned in (("rr_reply", ("ulb", "plugin")), ("ulb_reply_plan", ("rpcrdma", "plugin"))):
    seen = reach(root)
    by = collections.Counter(layer(f) for f in seen)
    ptr = sorted(f for f in seen | {root} if "__indirect_call" in calls.get(f, ()))
    print("%s (%s) reaches %s; through pointers from: %s" % (
        root, layer(root), ", ".join("%s %d" % kv for kv in sorted(by.items())),
        " ".join(ptr) or "none"))
    for f in sorted(seen):
        if layer(f) in banned:
            print("  %s reaches %s (%s)" % (root, f, layer(f)))
            bad = 1
sys.exit(bad)
EOF

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rpcrdma.conf(5) against the sample configuration and the parser.

The same keys in packaging/man/rpcrdma.conf.5 and
config_samples/ganesha-rdma.conf's RDMA block, every one a name the plugin's
key table (src/plugin/rrp_keys.def) has, every key the table has
documented, and for each key the same Default (first word) and Range in both
documents. Exit 0 when all agree, 1 with one line per difference.
  check_config_docs.py SOURCE_DIR
"""
import os
import re
import sys

src = sys.argv[1] if len(sys.argv) > 1 else "."
problems = []

# Keys of ganesha's other blocks the plugin reads: not in the RDMA block.
OTHER_BLOCKS = {"nfs_port", "rdma"}


def sentence(text, word):
    """'Default: 64.' -> '64'; 'Range: 0 or 32..65536.' -> '0 or 32..65536'"""
    m = re.search(word + r"[^:.]*:\s*(.*?)\.(?:\s|$)", text, re.S)
    return " ".join(m.group(1).split()) if m else None


def sample_keys(path):
    """{key: comment text before it} for the RDMA block of the sample."""
    keys, block, depth, inside = {}, [], 0, False
    for line in open(path, encoding="utf-8"):
        s = line.strip()
        if not inside:
            if re.match(r"RDMA\s*\{", s):
                inside = True
            continue
        if s == "}":
            break
        m = re.match(r"#?\s*([A-Za-z][A-Za-z0-9_]*)\s*=\s*[^;]*;\s*(#.*)?$", s)
        if m:
            keys[m.group(1)] = " ".join(block)
            block = []
        elif s.startswith("#"):
            block.append(s.lstrip("#").strip())
        elif not s:
            if block and not keys:
                block = []
    return keys


def man_keys(path):
    """{key: paragraph} for the .TP entries of the KEYS section."""
    keys, cur, section = {}, None, None
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith(".SH"):
            section = ln[3:].strip().strip('"')
            cur = None
        elif section == "KEYS" and ln == ".TP" and i + 1 < len(lines):
            m = re.match(r"\.BR\s+([A-Za-z][A-Za-z0-9_]*)", lines[i + 1])
            if m:
                cur = m.group(1)
                keys[cur] = ""
                i += 1
        elif cur and not ln.startswith("."):
            keys[cur] += " " + ln.replace("\\-", "-").replace("\\(", "(")
        i += 1
    return keys


sample = sample_keys(os.path.join(src, "config_samples/ganesha-rdma.conf"))
man = man_keys(os.path.join(src, "packaging/man/rpcrdma.conf.5"))
# The keys the plugin knows: the one table both readers are made from.
code = open(os.path.join(src, "src/plugin/rrp_keys.def"), encoding="utf-8").read()
code_keys = set(re.findall(r"^\s*K\(a,\s*([A-Za-z0-9_]+)\s*,", code, re.M))
code_lower = {k.lower(): k for k in code_keys if k.lower() not in OTHER_BLOCKS}
literals = {k.lower() for k in code_keys}

if not sample:
    problems.append("no RDMA block keys found in the sample")
if not man:
    problems.append("no keys found in rpcrdma.conf(5)'s KEYS section")
for k in sorted(set(sample) - set(man)):
    problems.append(f"{k}: in the sample, not in rpcrdma.conf(5)")
for k in sorted(set(man) - set(sample)):
    problems.append(f"{k}: in rpcrdma.conf(5), not in the sample")
for k in sorted(set(sample) | set(man)):
    if k.lower() not in literals:
        problems.append(f"{k}: documented, but not a key of src/plugin/rrp_keys.def")
documented = {k.lower() for k in set(sample) | set(man)}
for lk, k in sorted(code_lower.items()):
    if lk not in documented:
        problems.append(f"{k}: accepted by the parser, documented nowhere")
for k in sorted(set(sample) & set(man)):
    for word in ("Default", "Range"):
        a, b = sentence(sample[k], word), sentence(man[k], word)
        if word == "Default":
            a = a.split()[0].rstrip(";,") if a else None
            b = b.split()[0].rstrip(";,") if b else None
            if a is None:
                problems.append(f"{k}: no Default in the sample")
            if b is None:
                problems.append(f"{k}: no Default in rpcrdma.conf(5)")
        if a != b:
            problems.append(f"{k}: {word} '{a}' in the sample, '{b}' in rpcrdma.conf(5)")

for p in problems:
    print("check_config_docs:", p)
print(f"check_config_docs: {len(sample)} keys in the sample, {len(man)} in rpcrdma.conf(5), "
      f"{len(code_lower)} in the parser: {'MISMATCH' if problems else 'ok'}")
sys.exit(1 if problems else 0)

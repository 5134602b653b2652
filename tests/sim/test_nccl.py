#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""NCCL_DEBUG=INFO logs into a uroce-sim trace (bench/nccl_log_trace.py).

On bench/workloads/nccl_sample.log (synthetic: 8 ranks, a world, two
4-rank and four 2-rank communicators):
- every call becomes the flows of its ring algorithm: per call kind the
  flow count and bytes follow from count x datatype and nranks;
- the converted trace runs on a k=4 fat-tree: every flow arrives, and no
  flow is posted before the flows it waits for arrived;
- errors name FILE:LINE: a collective line on a communicator with no
  Init COMPLETE line, a line that does not parse, an operation it does
  not convert, ranks that disagree on a call's size.
usage: test_nccl.py BINDIR SRCDIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

from simtrace import flow


def run(cmd, ok=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if ok and r.returncode:
        sys.exit("FAIL: %s: exit %d\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r


def blocks(path):
    """{call header: [(src, dst, bytes, start, tag, after)]} and flows in order."""
    out, order, cur = {}, [], None
    for ln in open(path):
        if ln.startswith("# ") and " comm " in ln:
            cur = ln[2:].split(" (")[0].strip()
            out[cur] = []
            continue
        if ln.startswith("#"):
            continue
        fl = flow(ln)
        out[cur].append(fl)
        order.append(fl)
    return out, order


def main():
    bindir, src = sys.argv[1], sys.argv[2]
    conv = [sys.executable, os.path.join(src, "bench", "nccl_log_trace.py")]
    log = os.path.join(src, "bench", "workloads", "nccl_sample.log")
    d = tempfile.mkdtemp(prefix="ur_nccl_")
    tr = os.path.join(d, "s.tr")
    run(conv + [log, "-o", tr, "--chunks", "4"])
    bl, flows = blocks(tr)
    # what each call must become (ring over nranks; 4 pieces per hop)
    want = {"Broadcast": lambda b, n: ((n - 1) * 4, (n - 1) * b),
            "Reduce": lambda b, n: ((n - 1) * 4, (n - 1) * b),
            "AllGather": lambda b, n: ((n - 1) * n, (n - 1) * n * b),
            "ReduceScatter": lambda b, n: ((n - 1) * n, (n - 1) * n * b),
            "AllReduce": lambda b, n: (2 * (n - 1) * n, 2 * (n - 1) * n * (b // n))}
    kinds = {}
    for head, fl in bl.items():
        w = head.split()
        kinds[w[0]] = kinds.get(w[0], 0) + 1
        if w[0] == "SendRecv":
            # the sample's all-to-all: 64 KiB from every rank to every other
            pairs = {(f[0], f[1]) for f in fl}
            if len(fl) != 56 or len(pairs) != 56 or any(f[2] != 65536 for f in fl):
                sys.exit("FAIL: %s: %d flows %s" % (head, len(fl), fl[:3]))
            continue
        b, n = int(w[w.index("bytes") + 1]), int(w[w.index("nranks") + 1])
        cnt, tot = want[w[0]](b, n)
        if len(fl) != cnt or sum(f[2] for f in fl) != tot:
            sys.exit("FAIL: %s: %d flows / %d bytes, want %d / %d"
                     % (head, len(fl), sum(f[2] for f in fl), cnt, tot))
    exp = {"Broadcast": 1, "AllGather": 2, "ReduceScatter": 2, "SendRecv": 1,
           "AllReduce": 5, "Reduce": 1}
    if kinds != exp:
        sys.exit("FAIL: calls %s, want %s" % (kinds, exp))
    print("sample: %d calls, %d flows, each call's flows and bytes as its ring"
          % (sum(kinds.values()), len(flows)))
    # the trace runs; dependencies hold
    p = os.path.join(d, "r")
    out = run([os.path.join(bindir, "uroce-sim"), "-s", "k=4", "-w", "trace",
               "-s", "trace=" + tr, "--lb", "spray", "-o", p]).stdout
    n = len(flows)
    if ("flows %d/%d" % (n, n)) not in out:
        sys.exit("FAIL: not every flow completed:\n%s" % out)
    rows = []
    with open(p + "_flows.csv") as f:
        next(f)
        for ln in f:
            c = ln.strip().split(",")
            rows.append((int(c[1]), int(c[2]), int(c[3]), int(c[4]), int(c[5])))
    done = {}
    for f, r in zip(flows, rows):
        if (f[0], f[1], f[2]) != r[:3]:
            sys.exit("FAIL: trace flow %s, sim %s" % (f[:3], r))
        done[f[4]] = max(done.get(f[4], 0), r[4])
    for f, r in zip(flows, rows):
        if f[5] and r[3] < max(done[t] for t in f[5]) + f[3]:
            sys.exit("FAIL: flow %s posted at %d before its tags were done" % (f[:3], r[3]))
    print("k=4: %d/%d flows done, every dependency held" % (n, n))
    # errors name the line
    lines = open(log).read().splitlines()
    coll = next(i for i, x in enumerate(lines) if "AllReduce: opCount" in x)
    cases = [
        ("unknown comm", lambda ls: ls.__setitem__(coll, ls[coll].replace(" comm 0x", " comm 0xdead0")),
         "has no Init COMPLETE line"),
        ("bad line", lambda ls: ls.__setitem__(coll, ls[coll].replace(" count ", " cnt ")),
         "does not parse"),
        ("unknown op", lambda ls: ls.__setitem__(coll, ls[coll].replace("AllReduce:", "AllToAll:")),
         "is not converted"),
        ("sizes", lambda ls: ls.__setitem__(coll, ls[coll].replace(" count 2097152 ", " count 2097151 ")),
         "disagree"),
    ]
    for name, edit, msg in cases:
        ls = list(lines)
        edit(ls)
        if ls == lines:
            sys.exit("FAIL: case %s changed nothing" % name)
        bad = os.path.join(d, "bad.log")
        with open(bad, "w") as f:
            f.write("\n".join(ls) + "\n")
        r = run(conv + [bad, "-o", os.path.join(d, "bad.tr")], ok=False)
        where = "bad.log:%d" % (coll + 1)
        if r.returncode != 1 or msg not in r.stderr or (name != "sizes" and where not in r.stderr):
            sys.exit("FAIL: %s: exit %d, %r (want %r at %s)" % (name, r.returncode, r.stderr, msg, where))
        print("error %s: %s" % (name, r.stderr.strip()))
    shutil.rmtree(d)
    print("ok")


if __name__ == "__main__":
    main()

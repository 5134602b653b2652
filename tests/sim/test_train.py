#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The training-step trace (bench/sim_train_trace.py) on uroce-sim, k=4.

Checks what no machine load can change (virtual time only):
- every flow of the step completes and carries its bytes;
- every flow with after= was posted no earlier than start_ns after the
  last flow of its tags arrived (the dependencies hold);
- the MoE skew shows in what each expert received: in every dispatch
  block the bytes into the group's ranks, sorted, are the Zipf shares;
  with skew 0 they are equal;
- the same seed gives the same trace and the same per-flow times; another
  generator seed gives another trace.
usage: test_train.py BINDIR SRCDIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

from simtrace import flow

EP = 4  # 2 stages x 2 replicas x 4 experts: the 16 hosts of k=4


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode:
        sys.exit("FAIL: %s: exit %d\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r.stdout


def gen(src, path, seed, skew):
    run([sys.executable, os.path.join(src, "bench", "sim_train_trace.py"),
         "--pp", "2", "--dp", "2", "--ep", str(EP), "--layers", "2", "--micro", "2",
         "--moe-bytes", "262144", "--pp-bytes", "65536", "--dp-bytes", "131072",
         "--compute-us", "5", "--skew", str(skew), "--seed", str(seed), "-o", path])


def parse_trace(path):
    """[(src, dst, bytes, start, tag, after, block name)] in flow order."""
    flows, block = [], ""
    for ln in open(path):
        if ln.startswith("#"):
            if "=" in ln:  # a block's name: "# kind stage=.. ..."
                block = ln[1:].strip()
            continue
        flows.append(flow(ln) + (block,))
    return flows


def sim(bindir, trace, prefix, seed, lb):
    out = run([os.path.join(bindir, "uroce-sim"), "-s", "k=4", "-w", "trace",
               "-s", "trace=" + trace, "--seed", str(seed), "--lb", lb, "-o", prefix])
    rows = []
    with open(prefix + "_flows.csv") as f:
        next(f)
        for ln in f:
            c = ln.strip().split(",")
            rows.append((int(c[1]), int(c[2]), int(c[3]), int(c[4]), int(c[5])))
    return out, rows


def main():
    bindir, src = sys.argv[1], sys.argv[2]
    seed = int.from_bytes(os.urandom(4), "little") % 1000 + 1
    print("seed %d" % seed)
    d = tempfile.mkdtemp(prefix="ur_train_")
    tr, tr2, tr0 = (os.path.join(d, x) for x in ("a.tr", "b.tr", "flat.tr"))
    gen(src, tr, seed, 1.0)
    gen(src, tr2, seed, 1.0)
    if open(tr).read() != open(tr2).read():
        sys.exit("FAIL: the same generator seed wrote two traces")
    gen(src, tr2, seed + 1, 1.0)
    if open(tr).read() == open(tr2).read():
        sys.exit("FAIL: another generator seed wrote the same trace")
    gen(src, tr0, seed, 0.0)
    fails = 0
    for path, skew, lb in ((tr, 1.0, "spray"), (tr0, 0.0, "single")):
        flows = parse_trace(path)
        out, rows = sim(bindir, path, os.path.join(d, "r"), seed, lb)
        n = len(flows)
        if len(rows) != n or ("flows %d/%d" % (n, n)) not in out:
            sys.exit("FAIL: %s: not every flow completed:\n%s" % (path, out))
        # every byte: the sim's flows are the trace's, each one done
        for i, (f, r) in enumerate(zip(flows, rows)):
            if (f[0], f[1], f[2]) != r[:3] or not r[4]:
                sys.exit("FAIL: flow %d: trace %s, sim %s" % (i, f[:3], r))
        # dependencies: posted >= start_ns after the last of its tags
        done = {}
        for f, r in zip(flows, rows):
            done[f[4]] = max(done.get(f[4], 0), r[4])
        for i, (f, r) in enumerate(zip(flows, rows)):
            if f[5] and r[3] < max(done[t] for t in f[5]) + f[3]:
                sys.exit("FAIL: flow %d posted at %d before its tags %s were done (%d) + %d"
                         % (i, r[3], f[5], max(done[t] for t in f[5]), f[3]))
        # skew: bytes delivered into each rank of each dispatch block
        blocks = {}
        for f, r in zip(flows, rows):
            if f[6].startswith("moe-dispatch "):
                b = blocks.setdefault(f[6], {})
                b[f[1]] = b.get(f[1], 0) + r[2]
        per = list(blocks.values())
        ratios = []
        w = [1.0 / (k + 1) ** skew for k in range(EP)]
        want = sorted(((EP - 1) * x / sum(w) for x in w), reverse=True)
        for b in per:
            got = sorted(b.values(), reverse=True)
            tot = sum(got)
            # rank j receives moe_bytes * w_j from each of EP - 1 others
            for g_, wt in zip(got, want):
                exp = wt * 262144
                if abs(g_ - exp) > EP:  # rounding of each flow
                    fails += 1
            ratios.append(got[0] / (tot / len(got)))
        if not per:
            sys.exit("FAIL: no dispatch blocks in %s" % path)
        print("%s skew %.1f lb %s: %d flows done, %d dispatch blocks, max/mean bytes into a rank %.2f..%.2f"
              % (os.path.basename(path), skew, lb, n, len(per), min(ratios), max(ratios)))
        if skew == 0 and max(ratios) > 1.0001:
            sys.exit("FAIL: skew 0 but a rank received %.3f x the mean" % max(ratios))
        if skew > 0 and min(ratios) < 1.8:
            sys.exit("FAIL: skew %.1f shows only %.2f x the mean" % (skew, min(ratios)))
    if fails:
        sys.exit("FAIL: %d ranks received other than their Zipf share" % fails)
    # same seed, same run: per-flow times identical
    _, a = sim(bindir, tr, os.path.join(d, "x"), seed, "adaptive")
    _, b = sim(bindir, tr, os.path.join(d, "y"), seed, "adaptive")
    if a != b:
        sys.exit("FAIL: the same seed gave two different runs")
    print("same seed, same %d flow times (adaptive)" % len(a))
    # --forward-only --place random: the forward pass alone, the same
    # flows with the ranks on distinct hosts of a larger fabric
    fo, fr = os.path.join(d, "fo.tr"), os.path.join(d, "fr.tr")
    base = [sys.executable, os.path.join(src, "bench", "sim_train_trace.py"),
            "--pp", "2", "--dp", "2", "--ep", str(EP), "--moe-bytes", "65536",
            "--seed", str(seed), "--forward-only"]
    run(base + ["-o", fo])
    run(base + ["--place", "random", "--fabric-hosts", "64", "-o", fr])
    lin, rnd = parse_trace(fo), parse_trace(fr)
    kinds = {f[6].split()[0] for f in lin}
    if kinds != {"moe-dispatch", "moe-combine", "pp-fwd"} or len(lin) != len(rnd):
        sys.exit("FAIL: forward-only blocks %s, %d/%d flows" % (kinds, len(lin), len(rnd)))
    place = {}
    for a_, b_ in zip(lin, rnd):
        for x, y in ((a_[0], b_[0]), (a_[1], b_[1])):
            if place.setdefault(x, y) != y or not 0 <= y < 64:
                sys.exit("FAIL: rank %d on hosts %d and %d" % (x, place[x], y))
        if a_[2:] != b_[2:]:
            sys.exit("FAIL: random placement changed a flow: %s / %s" % (a_, b_))
    if len(set(place.values())) != len(place) or sorted(place.values()) == sorted(place):
        sys.exit("FAIL: placement %s" % place)
    print("forward-only: %d flows; random placement: %d ranks on distinct hosts of 64"
          % (len(lin), len(place)))
    shutil.rmtree(d)
    print("ok")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""sim_train_trace.py: write one training step as a uroce-sim trace.

The step mixes, as a framework overlaps them (docs/sim.md "Training
step"): pipeline-parallel sends between stages, MoE all-to-all(v) with
skewed expert loads inside expert-parallel groups, and data-parallel ring
allreduce of gradients across replicas, bucketed per layer and started
while the backward pass goes on.

Ranks: hosts = pp * dp * ep, host = (stage * dp + replica) * ep + expert,
so an EP group is ep consecutive hosts (under one edge switch or pod).
Schedule: GPipe (every microbatch forward, then every one backward). Per
microbatch and MoE layer, forward: compute, dispatch a2a (rank i sends
moe_bytes * w[j] to expert j; w is Zipf(skew) over a random order of the
group's experts, fixed per group and layer), expert compute, combine a2a
(the transpose); backward: the same two a2a in reverse order, compute
twice as long. After the last microbatch's backward of a layer, that
layer's gradient bucket (dp_bytes / layers) is ring-allreduced over the
dp replicas of each (stage, expert) position: 2(dp-1) steps of
bucket/dp, each step waiting for the previous one's arrival, overlapping
the remaining layers' a2a and the pipeline sends.

A rank's next sends wait (after=) for every flow into it of its previous
operation (tag=): receives, not its own sends, order a rank's program.
Each block of lines starts with a comment naming it ("# moe-dispatch
stage=S layer=L micro=M group=G", "# pp-fwd", "# pp-bwd", "# dp-ring"),
so a reader can tell which flows are which (tests/sim/test_train.py).

--forward-only writes the forward pass alone (the MoE dispatch and
combine all-to-all(v) of every layer and microbatch, and the pipeline's
forward sends): an MoE all-to-all workload. --place random puts the ranks
on a random sample of --fabric-hosts hosts (a job scattered over a larger
fabric; its own generator, so the expert loads stay those of the seed).
"""
import argparse
import random
import sys


def zipf(n, s):
    w = [1.0 / (i + 1) ** s for i in range(n)]
    t = sum(w)
    return [x / t for x in w]


class Gen:
    def __init__(self, out, place):
        self.out = out
        self.place = place  # rank -> fabric host
        self.tags = 0
        self.flows = 0
        self.bytes = 0

    def tag(self):
        self.tags += 1
        return self.tags - 1

    def flow(self, gap_ns, src, dst, nbytes, tag, after):
        a = " after=" + ",".join(str(t) for t in after) if after else ""
        self.out.write("%d %d %d %d tag=%d%s\n" % (gap_ns, self.place[src],
                                                    self.place[dst], nbytes, tag, a))
        self.flows += 1
        self.bytes += nbytes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pp", type=int, default=4, help="pipeline stages")
    ap.add_argument("--dp", type=int, default=8, help="data-parallel replicas")
    ap.add_argument("--ep", type=int, default=32, help="expert-parallel group size (8-64 typical)")
    ap.add_argument("--layers", type=int, default=1, help="MoE layers per stage")
    ap.add_argument("--micro", type=int, default=2, help="microbatches")
    ap.add_argument("--moe-bytes", type=int, default=1 << 20,
                    help="tokens a rank dispatches per MoE layer and microbatch (bytes)")
    ap.add_argument("--skew", type=float, default=1.0,
                    help="Zipf exponent of the expert loads (0: uniform)")
    ap.add_argument("--pp-bytes", type=int, default=4 << 20,
                    help="activations (and their gradient) per microbatch between stages")
    ap.add_argument("--dp-bytes", type=int, default=16 << 20,
                    help="gradient bytes per rank allreduced over the replicas")
    ap.add_argument("--compute-us", type=float, default=20.0,
                    help="compute per layer and microbatch, forward (backward: 2x)")
    ap.add_argument("--forward-only", action="store_true",
                    help="the forward pass only (MoE dispatch/combine, pp-fwd): no backward, no DP")
    ap.add_argument("--place", choices=("linear", "random"), default="linear",
                    help="rank r on host r (linear) or on a random sample of the fabric's hosts")
    ap.add_argument("--fabric-hosts", type=int, default=0,
                    help="hosts of the fabric (default pp*dp*ep); --place random spreads the ranks over them")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--out", default="-", help="trace file (default stdout)")
    a = ap.parse_args()
    for k in ("pp", "dp", "ep", "layers", "micro"):
        if getattr(a, k) < 1:
            ap.error("--%s must be >= 1" % k)
    if a.ep < 2 and a.dp < 2 and a.pp < 2:
        ap.error("nothing to send: pp, dp and ep are all 1")
    for k in ("moe_bytes", "pp_bytes", "dp_bytes"):
        if not 1 <= getattr(a, k) <= 1 << 31:
            ap.error("--%s must be 1..2^31" % k.replace("_", "-"))
    if a.skew < 0 or a.compute_us < 0:
        ap.error("--skew and --compute-us must be >= 0")
    rng = random.Random(a.seed)
    pp, dp, ep, L, M = a.pp, a.dp, a.ep, a.layers, a.micro
    hosts = pp * dp * ep
    fh = a.fabric_hosts or hosts
    if fh < hosts:
        ap.error("--fabric-hosts %d is below pp*dp*ep = %d" % (fh, hosts))
    if a.place == "random":
        place = random.Random(a.seed * 7919 + 17).sample(range(fh), hosts)
    else:
        place = list(range(hosts))
    out = sys.stdout if a.out == "-" else open(a.out, "w")
    g = Gen(out, place)
    fwd = int(a.compute_us * 1000)
    bwd = 2 * fwd
    out.write("# training step: pp %d dp %d ep %d (%d hosts) layers %d micro %d "
              "moe_bytes %d skew %g pp_bytes %d dp_bytes %d compute_us %g seed %d%s%s\n"
              % (pp, dp, ep, hosts, L, M, a.moe_bytes, a.skew, a.pp_bytes,
                 a.dp_bytes, a.compute_us, a.seed,
                 " forward-only" if a.forward_only else "",
                 " place random over %d hosts" % fh if a.place == "random" else ""))
    out.write("# start_ns src dst bytes [tag=N] [after=N,...] (docs/sim.md)\n")

    def host(s, d, e):
        return (s * dp + d) * ep + e

    dep = [[] for _ in range(hosts)]  # tags a rank's next sends wait for
    ppin = {}  # (host, micro) -> tag of the pipeline send into it
    # expert loads: per (stage, replica, layer) a Zipf over a random order
    base = zipf(ep, a.skew)
    share = {}
    for s in range(pp):
        for d in range(dp):
            for l in range(L):
                order = list(range(ep))
                rng.shuffle(order)
                share[s, d, l] = [base[order[e]] for e in range(ep)]

    def a2a(kind, s, d, l, m, gap, transpose):
        """One all-to-all(v) of EP group (s, d): i -> j carries moe_bytes
        * w[j] (dispatch), or w[i] (combine, the transpose)."""
        if ep < 2:
            return
        w = share[s, d, l]
        out.write("# %s stage=%d layer=%d micro=%d group=%d\n" % (kind, s, l, m, s * dp + d))
        hs = [host(s, d, e) for e in range(ep)]
        tin = [g.tag() for _ in range(ep)]
        for off in range(1, ep):  # staggered order, as the alltoall workload
            for i in range(ep):
                j = (i + off) % ep
                nb = max(1, round(a.moe_bytes * (w[i] if transpose else w[j])))
                g.flow(gap, hs[i], hs[j], nb, tin[j], dep[hs[i]])
        for j in range(ep):
            dep[hs[j]] = [tin[j]]

    def ring(s, e, l):
        """Ring allreduce of layer l's bucket over the replicas of (s, e)."""
        if dp < 2:
            return
        per = max(1, a.dp_bytes // L // dp)
        out.write("# dp-ring stage=%d layer=%d expert=%d\n" % (s, l, e))
        hs = [host(s, d, e) for d in range(dp)]
        prev = [list(dep[h]) for h in hs]  # step 0 waits for the backward
        for st in range(2 * (dp - 1)):
            cur = []
            for r in range(dp):
                t = g.tag()
                g.flow(0, hs[r], hs[(r + 1) % dp], per, t, prev[r])
                cur.append(t)
            prev = [[cur[(r - 1) % dp]] for r in range(dp)]

    def pp_send(kind, s, t, m):
        out.write("# %s stage=%d to=%d micro=%d\n" % (kind, s, t, m))
        for d in range(dp):
            for e in range(ep):
                src, dst = host(s, d, e), host(t, d, e)
                tg = g.tag()
                g.flow(fwd if kind == "pp-fwd" else bwd, src, dst, a.pp_bytes,
                       tg, dep[src])
                ppin[dst, m] = tg

    def micro_start(s, m):
        # a stage's microbatch waits for its activations (or gradient)
        for d in range(dp):
            for e in range(ep):
                h = host(s, d, e)
                if (h, m) in ppin:
                    dep[h] = dep[h] + [ppin.pop((h, m))]

    # forward: stage by stage, microbatch by microbatch (a stage's ranks
    # wait for the activations; the fabric runs stages concurrently)
    for s in range(pp):
        for m in range(M):
            micro_start(s, m)
            for l in range(L):
                for d in range(dp):
                    a2a("moe-dispatch", s, d, l, m, fwd, False)
                for d in range(dp):
                    a2a("moe-combine", s, d, l, m, fwd, True)
            if s + 1 < pp:
                pp_send("pp-fwd", s, s + 1, m)
    # backward: last stage first; the last microbatch's layers start the
    # gradient buckets' rings
    for s in (reversed(range(pp)) if not a.forward_only else ()):
        for m in range(M):
            micro_start(s, m)
            for l in reversed(range(L)):
                for d in range(dp):
                    a2a("moe-combine-bwd", s, d, l, m, bwd, False)
                for d in range(dp):
                    a2a("moe-dispatch-bwd", s, d, l, m, bwd, True)
                if m == M - 1:
                    for e in range(ep):
                        ring(s, e, l)
            if s > 0:
                pp_send("pp-bwd", s, s - 1, m)
    out.write("# %d flows, %d bytes, %d tags\n" % (g.flows, g.bytes, g.tags))
    if out is not sys.stdout:
        out.close()
    print("sim_train_trace: %d hosts, %d flows, %.1f MiB, %d tags"
          % (hosts, g.flows, g.bytes / 2**20, g.tags), file=sys.stderr)


if __name__ == "__main__":
    main()

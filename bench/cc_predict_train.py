#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cc_predict_train.py: train the predictive congestion control's model.

Runs uroce-sim with `cc predict` and `swift_pred_milli 0` (Swift's
decisions, the predictor's features traced: `cc_trace FILE`, one line per
RTT sample "t_ns host qpn delay grad cwnd rate ecn base", ur_cc.h
UR_PRED_F_*) on training scenarios at k=8 with seeds other than the
evaluation's (1), labels each row with the queueing delay the same QP
measured HORIZON RTTs later (the queue its packets sent now will meet, as
the simulator measures it on the real path), fits
a regression tree (depth <= 4) of the change of the delay, and writes
src/transport/cc_predict_model.h.

  /usr/bin/python3 bench/cc_predict_train.py [--build build] [--out DIR]

The traces (46 MB) go to build/cc-predict-train/ and are reused when
there; the simulator is deterministic by seed, so the command rebuilds
them and the model exactly. Every 32nd labelled training row is kept in
bench/results/sim/cc_predict_train_sample.csv.

Numbers it prints (held-out scenario runs, seed 3): mean absolute error of
the model and of "no change" (the delay now), both in us.
"""
import argparse
import os
import subprocess
import sys

import numpy as np

FEATS = ["delay_us", "grad_us_per_rtt", "cwnd_pkts", "rate_gbps",
         "cnps_per_sample", "base_us"]
HORIZON = 2  # RTTs ahead
DEPTH = 4    # the tree's, at most

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
MARK = ["-s", "kmin_kb=5", "-s", "kmax_kb=200", "-s", "pmax=0.01"]


def scenarios():
    ws = os.path.join(SRC, "bench/workloads/websearch.cdf")
    fb = os.path.join(SRC, "bench/workloads/fb_hadoop.cdf")
    return [
        ("incast16", ["-w", "incast", "-s", "incast_senders=16"]),
        ("incast32", ["-w", "incast", "-s", "incast_senders=32"]),
        ("incast64", ["-w", "incast", "-s", "incast_senders=64"]),
        ("permutation", ["-w", "permutation", "-s", "bytes=2000000"]),
        ("websearch50", ["-w", "poisson", "-s", "cdf=" + ws, "-s",
                         "load=0.5", "-s", "arrive_us=1500"]),
        ("fb_hadoop70", ["-w", "poisson", "-s", "cdf=" + fb, "-s",
                         "load=0.7", "-s", "arrive_us=1500"]),
    ]


def run(build, out, name, args, seed, pfc):
    tr = os.path.join(out, "%s_s%d_pfc%s.tr" % (name, seed, pfc))
    if not os.path.exists(tr):
        cmd = ["nice", "-n", "5", os.path.join(build, "bin/uroce-sim"),
               "-s", "k=8", "--seed", str(seed), "--lb", "single",
               "-s", "pfc=" + pfc] + MARK + [
               "-s", "cc=predict", "-s", "swift_pred_milli=0",
               "-s", "cc_trace=" + tr + ".tmp"] + args
        print("+", " ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        os.rename(tr + ".tmp", tr)
    return tr


def label(path):
    """Rows X (features) and y (delay HORIZON RTTs later) of one trace."""
    d = np.loadtxt(path, ndmin=2)
    if d.size == 0:
        return np.zeros((0, len(FEATS))), np.zeros(0)
    t = d[:, 0] / 1000.0  # us
    key = d[:, 1] * 65536 + d[:, 2]
    f = d[:, 3:3 + len(FEATS)]
    X, y = [], []
    for k in np.unique(key):
        i = np.nonzero(key == k)[0]  # in time order
        tk, fk = t[i], f[i]
        rtt = fk[:, 0] + fk[:, 5]
        want = tk + HORIZON * rtt
        j = np.searchsorted(tk, want)
        ok = j < len(tk)
        jj = np.minimum(j, len(tk) - 1)
        # the QP idled (flow ended): no label
        ok &= tk[jj] <= tk + 2 * HORIZON * rtt
        X.append(fk[ok])
        y.append(fk[jj[ok], 0])
    return np.vstack(X), np.concatenate(y)


def wmedian(v, w):
    o = np.argsort(v)
    c = np.cumsum(w[o])
    return float(v[o][np.searchsorted(c, c[-1] / 2)])


def grow(X, r, w, depth, min_w, nodes):
    """A regression tree on residuals r: splits by weighted squared error
    at feature quantiles, leaves hold the weighted median (robust to the
    heavy tail of queueing delays). nodes: [feature, threshold, left,
    right, value] rows; returns this node's index."""
    me = len(nodes)
    nodes.append([-1, 0.0, 0, 0, wmedian(r, w)])
    if depth == 0 or w.sum() < 2 * min_w:
        return me
    best = None
    tot_w, tot_s = w.sum(), (w * r).sum()
    base = (w * r * r).sum() - tot_s ** 2 / tot_w
    for j in range(X.shape[1]):
        o = np.argsort(X[:, j], kind="stable")
        xs, cw, cs = X[o, j], np.cumsum(w[o]), np.cumsum((w * r)[o])
        cq = np.cumsum((w * r * r)[o])
        for q in np.linspace(0.02, 0.98, 49):
            k = np.searchsorted(cw, q * tot_w)
            if k <= 0 or k >= len(xs) - 1:
                continue
            # split between distinct values only
            k = np.searchsorted(xs, xs[k], side="right") - 1
            if k < 0 or k >= len(xs) - 1:
                continue
            wl, sl, ql = cw[k], cs[k], cq[k]
            wr, sr, qr = tot_w - wl, tot_s - sl, cq[-1] - ql
            if wl < min_w or wr < min_w:
                continue
            sse = ql - sl * sl / wl + qr - sr * sr / wr
            if best is None or sse < best[0]:
                best = (sse, j, (xs[k] + xs[k + 1]) / 2)
    if best is None or best[0] >= base * 0.999:
        return me
    _, j, t = best
    left = X[:, j] <= t
    nodes[me][0], nodes[me][1] = j, t
    nodes[me][2] = grow(X[left], r[left], w[left], depth - 1, min_w, nodes)
    nodes[me][3] = grow(X[~left], r[~left], w[~left], depth - 1, min_w,
                        nodes)
    return me


def predict(nodes, X):
    """The delay now plus the tree's predicted change, >= 0."""
    out = np.empty(len(X))
    for i, x in enumerate(X):
        n = 0
        while nodes[n][0] >= 0:
            n = nodes[n][2] if x[nodes[n][0]] <= nodes[n][1] else nodes[n][3]
        out[i] = x[0] + nodes[n][4]
    return np.maximum(out, 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="build/cc-predict-train",
                    help="the simulator's traces (46 MB; regenerated)")
    ap.add_argument("--sample", default=os.path.join(
        SRC, "bench/results/sim/cc_predict_train_sample.csv"),
        help="every 32nd labelled training row, kept in the repository")
    ap.add_argument("--model", default=os.path.join(
        SRC, "src/transport/cc_predict_model.h"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    sets = {}
    for seed in (2, 3):
        for name, args in scenarios():
            for pfc in ("off", "on"):
                X, y = label(run(a.build, a.out, name, args, seed, pfc))
                sets.setdefault(seed, []).append((name, pfc, X, y))
    Xtr = np.vstack([s[2] for s in sets[2]])
    ytr = np.concatenate([s[3] for s in sets[2]])
    # every scenario weighs the same, whatever its number of samples
    wts = np.concatenate([np.full(len(s[3]), 1.0 / max(len(s[3]), 1))
                          for s in sets[2]])
    with open(a.sample, "w") as o:
        o.write("scenario,pfc,%s,label_delay_us\n" % ",".join(FEATS))
        for name, pfc, X, y in sets[2]:
            for x, v in zip(X[::32], y[::32]):
                o.write("%s,%s,%s,%.4g\n" % (name, pfc, ",".join(
                    "%.4g" % u for u in x), v))
    nodes = []
    grow(Xtr, ytr - Xtr[:, 0], wts, DEPTH, 0.01 * wts.sum(), nodes)
    lines = []
    for name, pfc, X, y in sets[3]:
        if not len(y):
            continue
        e_m = np.abs(predict(nodes, X) - y).mean()
        e_0 = np.abs(X[:, 0] - y).mean()
        lines.append("%-12s pfc %-3s rows %7d  MAE model %7.2f us, "
                     "no change %7.2f us" % (name, pfc, len(y), e_m, e_0))
    print("\n".join(lines))
    cmd = "/usr/bin/python3 bench/cc_predict_train.py"
    with open(a.model, "w") as o:
        o.write("/* SPDX-License-Identifier: MIT */\n/*\n")
        o.write(" * Generated by `%s` (do not edit):\n" % cmd)
        o.write(" * the predictor's model (cc_predict.c): a regression tree of"
                " depth <= %d whose\n * leaf is the change of the queueing"
                " delay %d RTTs ahead, in us, from the\n * features of"
                " ur_cc.h UR_PRED_F_*; fitted on %d uroce-sim RTT samples"
                "\n * (k=8, seed 2, Swift's decisions), mean absolute error"
                " on seed 3:\n" % (DEPTH, HORIZON, len(ytr)))
        for l in lines:
            o.write(" *   %s\n" % l)
        o.write(" */\n#ifndef CC_PREDICT_MODEL_H\n#define CC_PREDICT_MODEL_H\n"
                "#include \"ur_cc.h\"\n")
        o.write("#define UR_PRED_HORIZON %d\n" % HORIZON)
        o.write("/* feature (-1: a leaf), threshold, left (<=), right, leaf"
                " value in us; features:\n * %s */\n" % ", ".join(FEATS))
        o.write("static const struct ur_pred_node ur_pred_tree[%d] = {\n" %
                len(nodes))
        for f, t, l, r, v in nodes:
            o.write("\t{ %d, %.6g, %d, %d, %.6g },\n" % (f, t, l, r, v))
        o.write("};\n#endif\n")
    print("wrote", a.model, len(nodes), "nodes")

if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cc_predict_train.py: train the predictive congestion control's model.

Runs uroce-sim with `cc predict` and `swift_pred_milli 0` (Swift's
decisions, the predictor's features traced: `cc_trace FILE`, one line per
RTT sample "t_ns host qpn delay grad cwnd rate ecn base", ur_cc.h
UR_PRED_F_*) on training scenarios at k=8 with seeds other than the
evaluation's (1), labels each row with the queueing delay the same QP
measured HORIZON RTTs later (the queue its packets sent now will meet, as
the simulator measures it on the real path), fits a linear model by
ridge least squares, and writes src/transport/cc_predict_model.h.

  /usr/bin/python3 bench/cc_predict_train.py [--build build] [--out DIR]

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


def fit(X, y, wt, lam=1e-3):
    """Weighted ridge least squares on standardised features."""
    wt = wt / wt.sum()
    mu = (X * wt[:, None]).sum(0)
    sd = np.sqrt(((X - mu) ** 2 * wt[:, None]).sum(0)) + 1e-9
    Z = np.hstack([np.ones((len(X), 1)), (X - mu) / sd])
    A = Z.T @ (Z * wt[:, None]) + lam * np.diag([0] + [1] * X.shape[1])
    b = np.linalg.solve(A, Z.T @ (y * wt))
    w = b[1:] / sd
    return np.concatenate([[b[0] - (w * mu).sum()], w])


def predict(w, X):
    return np.maximum(w[0] + X @ w[1:], 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="bench/results/sim/predict-train")
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
    w = fit(Xtr, ytr, wts)
    lines = []
    for name, pfc, X, y in sets[3]:
        if not len(y):
            continue
        e_m = np.abs(predict(w, X) - y).mean()
        e_0 = np.abs(X[:, 0] - y).mean()
        lines.append("%-12s pfc %-3s rows %7d  MAE model %7.2f us, "
                     "no change %7.2f us" % (name, pfc, len(y), e_m, e_0))
    print("\n".join(lines))
    cmd = "/usr/bin/python3 bench/cc_predict_train.py"
    with open(a.model, "w") as o:
        o.write("/* SPDX-License-Identifier: MIT */\n/*\n")
        o.write(" * Generated by `%s` (do not edit):\n" % cmd)
        o.write(" * the predictor's linear model (cc_predict.c), queueing"
                " delay %d RTTs ahead\n * in us from the features of "
                "ur_cc.h UR_PRED_F_*, fitted on %d uroce-sim RTT\n"
                " * samples (k=8, seed 2, Swift's decisions) and checked on"
                " seed 3:\n" % (HORIZON, len(ytr)))
        for l in lines:
            o.write(" *   %s\n" % l)
        o.write(" */\n#ifndef CC_PREDICT_MODEL_H\n#define CC_PREDICT_MODEL_H\n")
        o.write("#define UR_PRED_HORIZON %d\n" % HORIZON)
        o.write("/* bias, then one weight per feature: %s */\n" %
                ", ".join(FEATS))
        o.write("static const double ur_pred_w[1 + %d] = {\n" % len(FEATS))
        o.write("".join("\t%.9g,\n" % v for v in w))
        o.write("};\n#endif\n")
    print("wrote", a.model, "weights", " ".join("%.4g" % v for v in w))


if __name__ == "__main__":
    main()

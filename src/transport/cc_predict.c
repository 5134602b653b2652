// SPDX-License-Identifier: MIT
/*
 * Predictive congestion control (issue 44, docs/cc.md "Predict"): Swift's
 * window (cc_swift.c) driven by the queueing delay a model predicts
 * UR_PRED_HORIZON RTTs ahead instead of the delay measured now, so that
 * the window is cut before the queue forms and not cut while a queue that
 * is already draining still shows in the RTT.
 *
 * The model is a regression tree of depth <= 4 over per-ACK features
 * (ur_cc.h UR_PRED_F_*: delay, its gradient per RTT, window, rate, CNP
 * rate, base RTT) whose leaves give the change of the delay, as NVIDIA
 * distilled its RL congestion control into decision trees small enough
 * for a per-ACK decision; it is fitted offline on uroce-sim runs by
 * bench/cc_predict_train.py into cc_predict_model.h (generated). The
 * delay given to Swift's reaction is
 *   measured + PRED_MILLI / 1000 x max(0, predicted - measured):
 * the window is cut before the queue forms, never later than Swift's;
 * PRED_MILLI = 0 is Swift with the features computed, for training.
 */
#include <string.h>

#include "cc_predict_model.h"
#include "ur_cc.h"

#define PRED_GRAD_G 0.25 /* gradient EWMA gain */
#define PRED_ECN_G 0.125 /* CNP-rate EWMA gain (DCTCP's g = 1/16 .. 1/8) */

static void pr_init(struct ur_cc *cc, uint64_t now)
{
	ur_cc_swift_ops.init(cc, now);
	memset(&cc->u.pred, 0, sizeof(cc->u.pred));
}

static void pr_sent(struct ur_cc *cc, uint32_t bytes, uint64_t now)
{
	ur_cc_swift_ops.on_sent(cc, bytes, now);
}

static void pr_ack(struct ur_cc *cc, uint32_t bytes, uint64_t now)
{
	ur_cc_swift_ops.on_ack(cc, bytes, now);
}

/* The predictor counts CNPs as a feature; they cut as in Swift (only
 * with ECN_CUT_MILLI). */
static void pr_cnp(struct ur_cc *cc, uint64_t now)
{
	cc->u.pred.cnps++;
	ur__swift_cnp(cc, now);
}

static uint64_t pr_timer(struct ur_cc *cc, uint64_t now)
{
	return ur_cc_swift_ops.on_timer(cc, now);
}

static uint64_t pr_rate(const struct ur_cc *cc)
{
	return ur_cc_swift_ops.rate(cc);
}

static void pr_loss(struct ur_cc *cc, bool timeout, uint64_t now)
{
	ur_cc_swift_ops.on_loss(cc, timeout, now);
}

static uint32_t pr_window(const struct ur_cc *cc)
{
	return ur_cc_swift_ops.window(cc);
}

/* The model (cc_predict_model.h): the delay now plus the tree's leaf,
 * the predicted queueing delay in us, >= 0. At most depth 4: four
 * comparisons per RTT sample. */
static double predict(const double *f)
{
	const struct ur_pred_node *n = &ur_pred_tree[0];
	double y;

	while (n->feature >= 0)
		n = &ur_pred_tree[f[n->feature] <= n->threshold ? n->left
							       : n->right];
	y = f[UR_PRED_F_DELAY] + n->value;
	return y > 0 ? y : 0;
}

static void features(struct ur_cc *cc, uint64_t now)
{
	const struct ur_swift *s = &cc->u.swift;
	struct ur_pred *p = &cc->u.pred;
	double d = ur__swift_delay(cc) / 1000.0, rtt = s->rtt / 1000.0;

	if (p->samples && now > p->prev_t) {
		double g = (d - p->prev_delay) * rtt /
			   ((double)(now - p->prev_t) / 1000.0);

		p->f[UR_PRED_F_GRAD] += PRED_GRAD_G * (g - p->f[UR_PRED_F_GRAD]);
	}
	p->f[UR_PRED_F_DELAY] = d;
	p->f[UR_PRED_F_CWND] = s->cwnd;
	p->f[UR_PRED_F_RATE] = s->pkt_bytes * 8.0 * s->cwnd / (double)s->rtt;
	p->f[UR_PRED_F_ECN] += PRED_ECN_G * (p->cnps - p->f[UR_PRED_F_ECN]);
	p->f[UR_PRED_F_BASE] = rtt - d;
	p->cnps = 0;
	p->prev_delay = d;
	p->prev_t = now;
	p->samples++;
}

static void pr_delay(struct ur_cc *cc, uint32_t pkts, uint64_t rtt,
		     uint64_t now)
{
	struct ur_pred *p = &cc->u.pred;
	double w = cc->p.pred_milli / 1000.0, d;

	p->fresh = false;
	if (!ur__swift_sample(cc, rtt, now))
		return; /* nothing measured yet: no decision */
	if (rtt) {
		features(cc, now);
		p->pred = predict(p->f);
		p->fresh = true;
	}
	/* Only a rise is taken from the model: it learnt the queue under
	 * Swift's cuts, so a predicted fall is the cut Swift is about to
	 * make, and acting on it would skip that cut (measured: the 16:1
	 * incast's p99 queue 1241 -> 2334 KB at k=8). */
	d = ur__swift_delay(cc);
	if (p->pred * 1000.0 > d)
		d += w * (p->pred * 1000.0 - d);
	ur__swift_react(cc, pkts, d, now);
}

static unsigned int pr_features(const struct ur_cc *cc, double *f)
{
	const struct ur_pred *p = &cc->u.pred;

	if (!p->fresh)
		return 0;
	memcpy(f, p->f, sizeof(p->f));
	return UR_PRED_NF;
}

const struct ur_cc_ops ur_cc_predict_ops = {
	.name = "predict",
	.init = pr_init,
	.on_sent = pr_sent,
	.on_ack = pr_ack,
	.on_cnp = pr_cnp,
	.on_timer = pr_timer,
	.rate = pr_rate,
	.on_delay = pr_delay,
	.on_loss = pr_loss,
	.window = pr_window,
	.on_msg = ur__swift_msg,
	.features = pr_features,
};

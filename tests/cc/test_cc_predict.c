// SPDX-License-Identifier: MIT
/*
 * Swift's first window and the predictor on virtual time
 * (src/transport/cc_swift.c, cc_predict.c). Slow start doubles the window
 * per RTT below the target and ends at the first cut; predict with
 * PRED_MILLI 0 decides exactly as Swift, with 1000 on the generated
 * model's prediction; its features follow the delay, its gradient and the
 * CNPs. A fluid incast (N senders, one 100 Gbit/s bottleneck, FIFO queue,
 * seeded start jitter, UR_SEED to replay) shows the mechanism of issue
 * 44's 64:1 incast: the paper's 32-packet first window overruns a 6 MiB
 * queue, a slow start from 8 does not.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cc_predict_model.h"
#include "ur_cc.h"
#include "ur_rand.h"
#include "ur_settings.h"
#include "ur_test.h"

#define US 1000ull
#define MS 1000000ull

static void algo(struct ur_cc_params *p, uint32_t a)
{
	ur_cc_params_default(p);
	p->algo = a;
	p->base_win_ms = 0; /* the delay is the whole RTT here */
}

static void test_params(void)
{
	const struct ur_setting *cc = ur_setting_find("UROCE_CC");
	struct ur_cc_params p;
	const struct ur_cc_param_info *bad;
	unsigned long long v;
	char why[256];

	ASSERT_EQ(ur_setting_parse(cc, "predict", &v, why, sizeof(why)), 0);
	ASSERT_EQ(v, UR_CC_PREDICT);
	ASSERT_STR_EQ(ur_cc_ops_of(UR_CC_PREDICT)->name, "predict");
	algo(&p, UR_CC_PREDICT);
	ASSERT_EQ(ur_cc_params_check(&p, NULL), 0);
	ASSERT_EQ(p.pred_milli, 1000);
	/* Swift's rows bind predict too. */
	p.pred_milli = 1001;
	ASSERT_EQ(ur_cc_params_check(&p, &bad), -ERANGE);
	ASSERT_STR_EQ(bad->env, "PRED_MILLI");
	p.pred_milli = 0;
	p.slow_start = 2;
	ASSERT_EQ(ur_cc_params_check(&p, &bad), -ERANGE);
	ASSERT_STR_EQ(bad->env, "SLOW_START");
}

/* Below the target the window doubles per RTT (+1 per packet ACKed) until
 * the first cut or the RTT's rise over its least passes SS_EXIT of the
 * target; then +ai per RTT. */
static void test_slow_start(void)
{
	struct ur_cc_params p;
	struct ur_cc cc;
	uint64_t now = 1 * MS;

	algo(&p, UR_CC_SWIFT); /* target 25 us, init 8 */
	/* The default exit is a quarter of the target (6.25 us) of rise
	 * over the QP's least RTT (HyStart's delay increase): a fabric's
	 * idle 20 us, all of it "delay" with no base, is no queue of its
	 * own (it ended slow start on the first sample: cc10). */
	ur_cc_init(&cc, &p, now);
	cc.ops->on_delay(&cc, 1, 20 * US, now += 1 * US);
	ASSERT(cc.u.swift.ss);
	cc.ops->on_delay(&cc, 1, 24 * US, now += 1 * US);
	ASSERT(cc.u.swift.ss);
	cc.ops->on_delay(&cc, 1, 27 * US, now += 1 * US);
	ASSERT(!cc.u.swift.ss);
	ASSERT_EQ(cc.cuts, 1); /* 27 us is above the target, too */
	ur_cc_init(&cc, &p, now);
	cc.ops->on_delay(&cc, 1, 6 * US, now += 1 * US);
	cc.ops->on_delay(&cc, 1, 13 * US, now += 1 * US);
	ASSERT(!cc.u.swift.ss);
	ASSERT_EQ(cc.cuts, 0);
	p.ss_exit_milli = 500; /* half: the arithmetic below */
	ur_cc_init(&cc, &p, now);
	ASSERT_EQ(cc.ops->window(&cc), 8);
	for (int rtt = 0; rtt < 3; rtt++) {
		uint32_t w = cc.ops->window(&cc);

		for (uint32_t k = 0; k < w; k++)
			cc.ops->on_delay(&cc, 1, 10 * US, now += 1 * US);
		ASSERT_EQ(cc.ops->window(&cc), 2 * w);
	}
	ASSERT_EQ(cc.ops->window(&cc), 64);
	cc.ops->on_delay(&cc, 1, 50 * US, now += 1 * US);
	ASSERT_EQ(cc.cuts, 1);
	ASSERT(!cc.u.swift.ss);
	ASSERT_EQ(cc.ops->window(&cc), 38); /* 64 x (1 - 0.8 x 25 / 50) */
	for (int k = 0; k < 38; k++)
		cc.ops->on_delay(&cc, 1, 10 * US, now += 1 * US);
	ASSERT_EQ(cc.ops->window(&cc), 39); /* +ai per RTT now */
	/* A rise of half the target ends slow start without a cut. */
	ur_cc_init(&cc, &p, now);
	cc.ops->on_delay(&cc, 1, 10 * US, now += 1 * US);
	ASSERT_EQ(cc.ops->window(&cc), 9);
	cc.ops->on_delay(&cc, 1, 23 * US, now += 1 * US);
	ASSERT(!cc.u.swift.ss);
	ASSERT_EQ(cc.cuts, 0);
	ASSERT(cc.u.swift.cwnd < 9.2);
	/* SLOW_START 0: the paper's +ai per RTT from the start. */
	p.slow_start = 0;
	ur_cc_init(&cc, &p, now);
	for (int k = 0; k < 8; k++)
		cc.ops->on_delay(&cc, 1, 10 * US, now += 1 * US);
	ASSERT_EQ(cc.ops->window(&cc), 8);
	ASSERT(cc.u.swift.cwnd > 8.9);
}

/* PRED_MILLI 0: predict's window is Swift's, sample for sample, whatever
 * the model; its features describe the samples. */
static void test_as_swift(void)
{
	struct ur_cc_params ps, pp;
	struct ur_cc sw, pr;
	uint64_t now = 1 * MS, seed = ur_test_seed, r;
	double f[UR_PRED_NF];

	r = ur_rand_seed(seed, 44);
	algo(&ps, UR_CC_SWIFT);
	algo(&pp, UR_CC_PREDICT);
	pp.pred_milli = 0;
	ur_cc_init(&sw, &ps, now);
	ur_cc_init(&pr, &pp, now);
	ASSERT_EQ(pr.ops->features(&pr, f), 0); /* no sample yet */
	for (int i = 0; i < 2000; i++) {
		uint64_t rtt = (uint64_t)(5 * US + ur_rand_unit(&r) * 80 * US);
		uint32_t pkts = 1 + (uint32_t)(ur_rand_unit(&r) * 8);

		now += (uint64_t)(ur_rand_unit(&r) * 5 * US);
		if (ur_rand_unit(&r) < 0.1)
			rtt = 0;
		sw.ops->on_delay(&sw, pkts, rtt, now);
		pr.ops->on_delay(&pr, pkts, rtt, now);
		if (ur_rand_unit(&r) < 0.01) {
			sw.ops->on_loss(&sw, false, now);
			pr.ops->on_loss(&pr, false, now);
		}
		ASSERT(sw.u.swift.cwnd == pr.u.swift.cwnd);
		ASSERT_EQ(pr.ops->features(&pr, f), rtt ? UR_PRED_NF : 0);
		if (rtt) {
			ASSERT(fabs(f[UR_PRED_F_DELAY] - rtt / 1000.0) < 1e-9);
			ASSERT(fabs(f[UR_PRED_F_CWND] - sw.u.swift.cwnd) < 64);
		}
	}
	ASSERT_EQ(sw.cuts, pr.cuts);
}

/* The gradient follows a rising, then a falling delay; CNPs show in the
 * ECN feature and decay without them; the prediction is the generated
 * model's. */
static void test_features(void)
{
	struct ur_cc_params p;
	struct ur_cc cc;
	uint64_t now = 1 * MS;
	double f[UR_PRED_NF], y;

	algo(&p, UR_CC_PREDICT);
	p.target_us = 1000; /* no cut: the window stays out of the way */
	ur_cc_init(&cc, &p, now);
	for (int i = 0; i < 40; i++) /* +1 us per 10 us at a ~20 us RTT */
		cc.ops->on_delay(&cc, 1, (20 + i) * US, now += 10 * US);
	ASSERT_EQ(cc.ops->features(&cc, f), UR_PRED_NF);
	ASSERT(f[UR_PRED_F_GRAD] > 4 && f[UR_PRED_F_GRAD] < 6);
	for (int i = 0; i < 40; i++)
		cc.ops->on_delay(&cc, 1, (60 - i) * US, now += 10 * US);
	cc.ops->features(&cc, f);
	ASSERT(f[UR_PRED_F_GRAD] < -2);
	ASSERT(f[UR_PRED_F_ECN] == 0);
	for (int i = 0; i < 20; i++) {
		cc.ops->on_cnp(&cc, now);
		cc.ops->on_delay(&cc, 1, 30 * US, now += 10 * US);
	}
	cc.ops->features(&cc, f);
	ASSERT(f[UR_PRED_F_ECN] > 0.9 && f[UR_PRED_F_ECN] <= 1);
	for (int i = 0; i < 40; i++)
		cc.ops->on_delay(&cc, 1, 30 * US, now += 10 * US);
	cc.ops->features(&cc, f);
	ASSERT(f[UR_PRED_F_ECN] < 0.01);
	{
		int n = 0, steps = 0;

		while (ur_pred_tree[n].feature >= 0) {
			ASSERT_LT(ur_pred_tree[n].feature, UR_PRED_NF);
			n = f[ur_pred_tree[n].feature] <=
					    ur_pred_tree[n].threshold
				    ? ur_pred_tree[n].left
				    : ur_pred_tree[n].right;
			ASSERT_LE(++steps, 4); /* depth <= 4 */
		}
		y = f[UR_PRED_F_DELAY] + ur_pred_tree[n].value;
	}
	ASSERT(fabs(cc.u.pred.pred - (y > 0 ? y : 0)) < 1e-9);
}

/* ---- a fluid incast ------------------------------------------------------ */
#define PKT 4096u
#define LINK_BPS 100e9
#define PROP_NS 12000ull  /* base RTT without queueing */
#define QCAP (6u << 20)   /* a switch queue's share of its buffer */

struct ev {
	uint64_t t;    /* queue: when it entered; ACKs: when due */
	uint64_t sent; /* when its sender sent it */
	uint32_t who;
};

/* N senders of @pkts packets each start within 1 us and send at line rate
 * into one bottleneck; returns the largest queue in bytes. A packet over
 * QCAP is counted in *drops and never ACKed (the window keeps it as in
 * flight, as a loss does until its timeout: enough for the peak). */
static uint64_t incast(const struct ur_cc_params *p, uint32_t n,
		       uint32_t pkts, uint64_t seed, uint64_t *drops)
{
	struct ur_cc *cc = calloc(n, sizeof(*cc));
	uint32_t *left = calloc(n, sizeof(*left));
	uint32_t *inflight = calloc(n, sizeof(*inflight));
	uint64_t *next = calloc(n, sizeof(*next)); /* its NIC is free */
	struct ev *q = calloc((size_t)n * pkts, sizeof(*q));
	struct ev *acks = calloc((size_t)n * pkts, sizeof(*acks));
	size_t qh = 0, qt = 0, ah = 0, at = 0;
	uint64_t tx_ns = (uint64_t)(PKT * 8 / LINK_BPS * 1e9), now = 0;
	uint64_t peak = 0, acked = 0, link_free = 0;
	uint64_t r = ur_rand_seed(seed, n);

	ASSERT(cc && left && inflight && next && q && acks);
	*drops = 0;
	for (uint32_t i = 0; i < n; i++) {
		ur_cc_init(&cc[i], p, 0);
		left[i] = pkts;
		next[i] = (uint64_t)(ur_rand_unit(&r) * 1000);
	}
	while (acked + *drops < (uint64_t)n * pkts && now < 100 * MS) {
		now += tx_ns / 4;
		while (ah < at && acks[ah].t <= now) {
			struct ev *a = &acks[ah++];

			inflight[a->who]--;
			cc[a->who].ops->on_delay(&cc[a->who], 1, now - a->sent,
						 now);
			acked++;
		}
		if (qh < qt && now >= link_free) {
			acks[at] = q[qh++];
			acks[at++].t = now + PROP_NS;
			link_free = now + tx_ns;
		}
		for (uint32_t i = 0; i < n; i++) {
			if (now < next[i] || !left[i] ||
			    inflight[i] >= cc[i].ops->window(&cc[i]))
				continue;
			next[i] = now + tx_ns;
			left[i]--;
			inflight[i]++;
			if ((qt - qh + 1) * (uint64_t)PKT > QCAP) {
				(*drops)++;
				continue;
			}
			q[qt].who = i;
			q[qt].sent = now;
			q[qt++].t = now;
		}
		if ((qt - qh) * (uint64_t)PKT > peak)
			peak = (qt - qh) * (uint64_t)PKT;
	}
	free(cc);
	free(left);
	free(inflight);
	free(next);
	free(q);
	free(acks);
	return peak;
}

/* 64 senders of 1 MiB (issue 44's 64:1 incast): the paper's first window
 * of 32 packets overruns the queue, slow start from 8 does not, and the
 * predictor with the generated model does not either. */
static void test_incast(void)
{
	struct ur_cc_params p;
	uint64_t peak, drops;

	algo(&p, UR_CC_SWIFT);
	p.init_cwnd = 32;
	p.slow_start = 0;
	peak = incast(&p, 64, 256, ur_test_seed, &drops);
	fprintf(stderr, "paper's window 32: peak %llu KiB, %llu over\n",
		(unsigned long long)peak >> 10, (unsigned long long)drops);
	ASSERT_GT(drops, 0);
	algo(&p, UR_CC_SWIFT);
	peak = incast(&p, 64, 256, ur_test_seed, &drops);
	fprintf(stderr, "slow start from 8: peak %llu KiB, %llu over\n",
		(unsigned long long)peak >> 10, (unsigned long long)drops);
	ASSERT_EQ(drops, 0);
	ASSERT_LT(peak, QCAP / 2);
	algo(&p, UR_CC_PREDICT);
	peak = incast(&p, 64, 256, ur_test_seed, &drops);
	fprintf(stderr, "predict: peak %llu KiB, %llu over\n",
		(unsigned long long)peak >> 10, (unsigned long long)drops);
	ASSERT_EQ(drops, 0);
}

static const struct ur_test_case tests[] = {
	{ "params", test_params },
	{ "slow_start", test_slow_start },
	{ "as_swift", test_as_swift },
	{ "features", test_features },
	{ "incast", test_incast },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

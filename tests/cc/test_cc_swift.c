// SPDX-License-Identifier: MIT
/*
 * Swift on virtual time (Kumar et al., SIGCOMM 2020, Algorithm 1;
 * src/transport/cc_swift.c): the window grows by ai per RTT below the
 * target, is cut at most once per RTT above it by beta (delay - target) /
 * delay (at most max_mdf), goes to min_cwnd after RETX_RESET timeouts, and
 * paces below one packet; parameters are checked row by row. Through the
 * transport on the in-memory network (tnet): the requester measures the
 * RTT from its own send times, and never has more packets in flight than
 * the window.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tfix.h"
#include "ur_cc.h"
#include "ur_qp_priv.h"
#include "ur_settings.h"
#include "ur_test.h"

#define US 1000ull
#define MS 1000000ull

static void near(double got, double want, double tol, const char *what)
{
	if (fabs(got - want) > tol * (fabs(want) > 1 ? fabs(want) : 1))
		UR_FAIL("%s: got %.6g want %.6g", what, got, want);
}

static void swift(struct ur_cc_params *p)
{
	ur_cc_params_default(p);
	p->algo = UR_CC_SWIFT;
}

/* The paper's law alone: no slow start (test_cc_predict.c tests it). */
static void paper(struct ur_cc_params *p)
{
	swift(p);
	p->slow_start = 0;
}

static void test_params(void)
{
	struct ur_cc_params p;
	const struct ur_cc_param_info *bad;
	const struct ur_setting *cc = ur_setting_find("UROCE_CC");
	unsigned long long v;
	char why[256];

	swift(&p);
	ASSERT_EQ(ur_cc_params_check(&p, &bad), 0);
	ASSERT_EQ(p.target_us, 25);
	ASSERT_EQ(p.ai_milli, 1000);
	ASSERT_EQ(p.beta_milli, 800);
	ASSERT_EQ(p.max_mdf_milli, 500);
	ASSERT_EQ(p.init_cwnd, 8);
	ASSERT_EQ(p.slow_start, 1);
	/* A DCQCN profile leaves Swift's fields alone. */
	p.target_us = 77;
	ur_cc_profile_apply(&p, ur_cc_profile_find("mlx5"), 100000);
	ASSERT_EQ(p.target_us, 77);
	ASSERT_EQ(p.algo, UR_CC_SWIFT);
	/* Each row out of range is refused, and named. */
	for (unsigned int i = 0; i < ur_cc_swift_param_count; i++) {
		const struct ur_cc_param_info *r = &ur_cc_swift_param_table[i];
		struct ur_cc_params q;
		uint32_t *f;

		swift(&q);
		f = (uint32_t *)((char *)&q + r->off);
		ASSERT_EQ(*f, r->def);
		ASSERT(r->source && *r->source);
		if (r->min > 0) { /* BASE_WIN_MS allows 0 (no base) */
			*f = r->min - 1;
			ASSERT_EQ(ur_cc_params_check(&q, &bad), -ERANGE);
			ASSERT(bad == r);
		}
		if (r->max < UINT32_MAX) {
			*f = r->max + 1;
			ASSERT_EQ(ur_cc_params_check(&q, &bad), -ERANGE);
			ASSERT(bad == r);
		}
		*f = r->max;
		ASSERT_EQ(ur_cc_params_check(&q, &bad), 0);
	}
	/* Swift's rows bind only Swift: DCQCN's checks are as they were. */
	p.target_us = 0;
	ASSERT_EQ(ur_cc_params_check(&p, &bad), -ERANGE);
	ASSERT_STR_EQ(bad->env, "TARGET_US");
	p.algo = UR_CC_DCQCN;
	ASSERT_EQ(ur_cc_params_check(&p, NULL), 0);
	p.algo = 5;
	ASSERT_EQ(ur_cc_params_check(&p, NULL), -EINVAL);
	/* UROCE_CC=swift selects it; a wrong word is refused, named. */
	ASSERT(cc != NULL);
	ASSERT_EQ(ur_setting_parse(cc, "swift", &v, why, sizeof(why)), 0);
	ASSERT_EQ(v, UR_CC_SWIFT);
	ASSERT(ur_setting_parse(cc, "swfit", &v, why, sizeof(why)) < 0);
	ASSERT(strstr(why, "UROCE_CC") != NULL);
	ASSERT(ur_setting_find("UROCE_SWIFT_") != NULL);
	ASSERT_STR_EQ(ur_cc_ops_of(UR_CC_SWIFT)->name, "swift");
}

/* Below the target: +ai packets per window's worth of ACKed packets. */
static void test_grow(void)
{
	struct ur_cc_params p;
	struct ur_cc cc;
	uint64_t now = 1 * MS;

	paper(&p);
	p.init_cwnd = 64; /* the arithmetic below starts there */
	ur_cc_init(&cc, &p, now);
	ASSERT_EQ(cc.ops->window(&cc), 64);
	ASSERT_EQ(cc.ops->rate(&cc), 0);
	for (int rtt = 0; rtt < 10; rtt++) {
		double w0 = cc.u.swift.cwnd;

		/* One window of packets, ACKed 8 at a time, 10 us each. */
		for (int k = 0; k < (int)w0 / 8; k++) {
			now += 1 * US;
			cc.ops->on_delay(&cc, 8, 10 * US, now);
		}
		near(cc.u.swift.cwnd - w0, 1.0 * ((int)w0 / 8 * 8) / w0, 0.02,
		     "ai per RTT");
	}
	ASSERT_EQ(cc.cuts, 0);
	ASSERT_EQ(cc.ops->window(&cc), 73); /* 64 + 10 x ~0.9..1 */
	/* ai = 2.5 packets: faster. */
	p.ai_milli = 2500;
	ur_cc_init(&cc, &p, now);
	for (int k = 0; k < 8; k++)
		cc.ops->on_delay(&cc, 8, 10 * US, now + k);
	near(cc.u.swift.cwnd, 64 + 2.5, 0.01, "ai 2.5");
	/* An ACK with no sample (all resent) uses the last one. */
	cc.ops->on_delay(&cc, 8, 0, now + 100);
	ASSERT(cc.u.swift.cwnd > 66.5);
}

/* Above the target: one cut per RTT, by beta (d - t) / d, at most max_mdf. */
static void test_cut(void)
{
	struct ur_cc_params p;
	struct ur_cc cc;
	uint64_t now = 1 * MS;

	paper(&p); /* target 25 us, beta 0.8, max_mdf 0.5 */
	p.init_cwnd = 64;
	p.base_win_ms = 0; /* the law on the whole RTT (test_base: above a base) */
	ur_cc_init(&cc, &p, now);
	cc.ops->on_delay(&cc, 8, 50 * US, now);
	near(cc.u.swift.cwnd, 64 * (1 - 0.8 * 25.0 / 50), 1e-9, "first cut");
	ASSERT_EQ(cc.cuts, 1);
	/* Within the RTT: no second cut, and no increase either. */
	for (int k = 1; k < 10; k++)
		cc.ops->on_delay(&cc, 8, 50 * US, now + k * 4 * US);
	near(cc.u.swift.cwnd, 38.4, 1e-9, "once per RTT");
	ASSERT_EQ(cc.cuts, 1);
	/* One RTT later: the next. */
	now += 50 * US;
	cc.ops->on_delay(&cc, 8, 50 * US, now);
	near(cc.u.swift.cwnd, 38.4 * 0.6, 1e-9, "second cut");
	ASSERT_EQ(cc.cuts, 2);
	/* Far above the target: max_mdf bounds the cut (0.22 -> 0.5). */
	now += 1 * MS;
	cc.ops->on_delay(&cc, 8, 1 * MS, now);
	near(cc.u.swift.cwnd, 38.4 * 0.6 * 0.5, 1e-9, "max_mdf");
	/* The delay at the target counts as above it (paper: < target). */
	ur_cc_init(&cc, &p, now);
	cc.ops->on_delay(&cc, 8, 25 * US, now);
	near(cc.u.swift.cwnd, 64, 1e-9, "at target: a cut of 0");
	ASSERT_EQ(cc.cuts, 1);
}

/* The delay is the RTT above its windowed minimum: a constant 500 us RTT
 * (a host's, far above the 25 us target) is no queue and the window grows;
 * a queue above it cuts; a base that no longer occurs (a longer route) is
 * forgotten within two windows, not before one. */
static void test_base(void)
{
	struct ur_cc_params p;
	struct ur_cc cc;
	uint64_t now = 1 * MS, t;
	double w;

	paper(&p); /* target 25 us, beta 0.8 */
	p.init_cwnd = 64;
	p.base_win_ms = 100;
	ur_cc_init(&cc, &p, now);
	for (int k = 0; k < 80; k++) {
		now += 10 * US;
		cc.ops->on_delay(&cc, 8, 500 * US, now);
	}
	ASSERT_EQ(cc.cuts, 0);
	ASSERT(cc.u.swift.cwnd > 70);
	/* The same samples with no base: all delay, cut. */
	p.base_win_ms = 0;
	ur_cc_init(&cc, &p, 1 * MS);
	cc.ops->on_delay(&cc, 8, 500 * US, 1 * MS + 10 * US);
	ASSERT_EQ(cc.cuts, 1);
	p.base_win_ms = 100;

	/* 50 us of queue above the 500 us base: delay 50, cut by
	 * 1 - 0.8 x 25 / 50. */
	ur_cc_init(&cc, &p, now);
	cc.ops->on_delay(&cc, 8, 500 * US, now);
	w = cc.u.swift.cwnd;
	now += 550 * US;
	cc.ops->on_delay(&cc, 8, 550 * US, now);
	ASSERT_EQ(cc.cuts, 1);
	near(cc.u.swift.cwnd, w * (1 - 0.8 * 25.0 / 50), 1e-9, "queue cut");
	/* 20 us of queue: below the target, grows. */
	w = cc.u.swift.cwnd;
	cc.ops->on_delay(&cc, 8, 520 * US, now + 1 * US);
	ASSERT(cc.u.swift.cwnd > w);

	/* The route lengthens to 800 us at t: every sample is 300 us above
	 * the old base, so one cut per RTT while it is remembered. */
	t = now + 1 * MS;
	for (now = t; now < t + 99 * MS; now += 1 * MS)
		cc.ops->on_delay(&cc, 8, 800 * US, now);
	ASSERT_GE(cc.cuts, 90);
	/* Two windows on, only 800 us samples are left: no queue. */
	for (; now <= t + 201 * MS; now += 1 * MS)
		cc.ops->on_delay(&cc, 8, 800 * US, now);
	w = cc.u.swift.cwnd;
	{
		uint64_t cuts = cc.cuts;

		cc.ops->on_delay(&cc, 8, 800 * US, now);
		ASSERT_EQ(cc.cuts, cuts);
		ASSERT(cc.u.swift.cwnd > w);
	}
}

/* Losses: a NAK cuts by max_mdf once per RTT; RETX_RESET (5) timeouts in
 * a row bring the window to min_cwnd; an ACK restarts the count. */
static void test_loss(void)
{
	struct ur_cc_params p;
	struct ur_cc cc;
	uint64_t now = 1 * MS;

	paper(&p);
	p.init_cwnd = 64;
	ur_cc_init(&cc, &p, now);
	cc.ops->on_delay(&cc, 1, 10 * US, now); /* an RTT sample */
	cc.ops->on_loss(&cc, false, now);
	near(cc.u.swift.cwnd, (64 + 1.0 / 64) * 0.5, 1e-9, "NAK");
	cc.ops->on_loss(&cc, false, now + 1 * US);
	ASSERT_EQ(cc.cuts, 1);
	for (int i = 1; i <= 4; i++)
		cc.ops->on_loss(&cc, true, now + i * 100 * US);
	ASSERT(cc.u.swift.cwnd > 1);
	cc.ops->on_loss(&cc, true, now + 500 * US);
	near(cc.u.swift.cwnd, p.min_cwnd_milli / 1000.0, 1e-12, "retx reset");
	ASSERT_EQ(cc.ops->window(&cc), 1);
}

/* Below one packet: one in flight, paced at cwnd packets per RTT. */
static void test_pacing(void)
{
	struct ur_cc_params p;
	struct ur_cc cc;
	uint64_t now = 1 * MS, rtt = 100 * US;

	paper(&p);
	p.base_win_ms = 0; /* the whole RTT is above the target */
	ur_cc_init(&cc, &p, now);
	cc.ops->on_sent(&cc, 4156, now);
	while (cc.u.swift.cwnd >= 1) {
		now += rtt;
		cc.ops->on_delay(&cc, 1, rtt, now);
	}
	ASSERT_EQ(cc.ops->window(&cc), 1);
	near((double)cc.ops->rate(&cc),
	     4156 * 8e9 * cc.u.swift.cwnd / (double)rtt, 1e-6, "pacing rate");
	ASSERT_GT(cc.ops->rate(&cc), 0);
	/* Down to min_cwnd, not below. */
	for (int i = 0; i < 100; i++) {
		now += rtt;
		cc.ops->on_delay(&cc, 1, rtt, now);
	}
	near(cc.u.swift.cwnd, p.min_cwnd_milli / 1000.0, 1e-12, "floor");
	/* Below target again, it grows by ai per ACK (not ai / cwnd). */
	cc.ops->on_delay(&cc, 1, 5 * US, now + rtt);
	near(cc.u.swift.cwnd, 0.01 + 1, 1e-9, "ai below 1");
	ASSERT_EQ(cc.ops->rate(&cc), 0);
}

/* ---- through the transport -------------------------------------------- */
struct flow {
	uint64_t bytes;
	uint32_t max_inflight; /* PSNs sent and not acknowledged, at most */
};

/* Keep 8 WRITEs of @len posted for @dur; look at the requester every
 * microsecond. */
static void pump(struct tfix *f, uint64_t dur, uint32_t len, struct flow *fl)
{
	uint64_t end = f->net.now + dur;
	struct ur_cqe e[16];
	int inflight = 0, n;

	while (f->net.now < end) {
		struct ur_qp_priv *p = f->a.qp->priv;
		uint32_t d;

		while (inflight < 8) {
			ASSERT_EQ(tfix_send(&f->a, UR_WR_RDMA_WRITE, 1, 0, len,
					    (uintptr_t)f->b.buf, f->b.mr->rkey,
					    UR_SEND_SIGNALED), 0);
			inflight++;
		}
		tnet_run_until(&f->net, f->net.now + 1 * US);
		d = (uint32_t)ur_psn_diff(p->req.psn_max, p->comp.psn);
		if (d > fl->max_inflight)
			fl->max_inflight = d;
		while ((n = ur_cq_poll(&f->a.scq, e, 16)) > 0) {
			for (int i = 0; i < n; i++)
				ASSERT_EQ(e[i].status, UR_WC_SUCCESS);
			inflight -= n;
			fl->bytes += (uint64_t)n * len;
		}
	}
}

static void set_cc(struct tfix *f, const struct ur_cc_params *p)
{
	ASSERT_EQ(ur_qp_set_cc(f->a.qp, p, f->net.now), 0);
}

/* The requester's RTT samples: its send of a PSN to the ACK that covers
 * it, 2 x the one-way delay here (tnet has no serialisation). Below a
 * large target the window only grows. */
static void test_rtt_sample(void)
{
	struct ur_cc_params p;
	struct flow fl = { 0 };
	struct tfix f;
	const struct ur_swift *s;

	tfix_init(&f, UR_QPT_RC, NULL);
	f.net.f.delay_ns = 10 * US;
	swift(&p);
	p.target_us = 1000;
	set_cc(&f, &p);
	pump(&f, 2 * MS, 65536, &fl);
	s = &f.a.qp->priv->cc.cc.u.swift;
	ASSERT_GE(s->rtt, 20 * US);
	ASSERT_LT(s->rtt, 22 * US);
	ASSERT(s->cwnd > p.init_cwnd);
	ASSERT_EQ(f.a.qp->cnt.cc_cuts, 0);
	ASSERT_GT(fl.bytes, 0);
	tfix_fini(&f);
}

/* An ACK handled with a clock read before a PSN it covers was sent (an
 * engine's poller, preempted between reading the clock and receiving,
 * while another thread sent) gives no RTT sample: it once gave 1 ns, which
 * Swift kept as its base for 10 s. Then a sane ACK measures as usual. */
static void test_stale_clock(void)
{
	struct ur_cc_params p;
	struct tfix f;
	const struct ur_swift *s;
	struct ur_qp *qp;
	uint64_t t;

	tfix_init(&f, UR_QPT_RC, NULL);
	qp = f.a.qp;
	swift(&p);
	p.base_win_ms = UR_CC_ENGINE_BASE_WIN_MS;
	set_cc(&f, &p);
	s = &qp->priv->cc.cc.u.swift;
	t = f.net.now + 1 * MS;
	ur__cc_sent(qp, 0, 1024, 100, false, t + 200 * US);
	ur__cc_sent(qp, 0, 1024, 101, false, t + 300 * US);
	/* The ACK of 100..101 read at t + 250 us: 101 went at t + 300. */
	ur__cc_delay(qp, 100, 2, t + 250 * US);
	ASSERT_EQ(s->rtt, 0);
	ASSERT_EQ(ur__swift_delay(&qp->priv->cc.cc), 0);
	/* Its stamps are used up all the same (the ACK answered them). */
	ur__cc_delay(qp, 100, 2, t + 700 * US);
	ASSERT_EQ(s->rtt, 0);
	/* A PSN sent and acknowledged in order: 400 us. */
	ur__cc_sent(qp, 0, 1024, 102, false, t + 400 * US);
	ur__cc_delay(qp, 102, 1, t + 800 * US);
	ASSERT_EQ(s->rtt, 400 * US);
	ASSERT_EQ(s->base.cur, 400 * US);
	/* An ACK right at the send's time is stale too (no 0 ns RTT). */
	ur__cc_sent(qp, 0, 1024, 103, false, t + 900 * US);
	ur__cc_delay(qp, 103, 1, t + 900 * US);
	ASSERT_EQ(s->rtt, 400 * US);
	ASSERT_EQ(s->base.cur, 400 * US);
	/* The kernel received the ACK of 104 at t + 1100 us, the engine
	 * took it at t + 1600: LATE_MILLI 0 measures to the engine's time,
	 * as before; with it the RTT ends at the receive time and the wait
	 * is cc->late. */
	ur__cc_sent(qp, 0, 1024, 104, false, t + 1000 * US);
	qp->priv->cc.ack_rx = t + 1100 * US;
	ur__cc_delay(qp, 104, 1, t + 1600 * US);
	ASSERT_EQ(s->rtt, 600 * US);
	p.late_milli = 1000;
	set_cc(&f, &p);
	ur__cc_sent(qp, 0, 1024, 105, false, t + 2000 * US);
	qp->priv->cc.ack_rx = t + 2100 * US;
	ur__cc_delay(qp, 105, 1, t + 2600 * US);
	ASSERT_EQ(s->rtt, 100 * US);
	ASSERT_EQ(qp->priv->cc.cc.late, 500 * US);
	qp->priv->cc.ack_rx = 0;
	tfix_fini(&f);
}

/* The window bounds what is in flight: pinned at 4 packets (no growth to
 * speak of, a target never reached), the requester never has more than 4
 * PSNs unacknowledged; without congestion control it has far more. */
static void test_window_bounds(void)
{
	struct ur_cc_params p;
	struct flow sw = { 0 }, none = { 0 };
	struct tfix f;

	tfix_init(&f, UR_QPT_RC, NULL);
	f.net.f.delay_ns = 20 * US;
	paper(&p);
	p.target_us = 1000000;
	p.ai_milli = 1;
	p.init_cwnd = 4;
	set_cc(&f, &p);
	pump(&f, 2 * MS, 65536, &sw);
	ASSERT_LE(sw.max_inflight, 4);
	ASSERT_GE(sw.max_inflight, 4);
	tfix_fini(&f);

	tfix_init(&f, UR_QPT_RC, NULL);
	f.net.f.delay_ns = 20 * US;
	p.algo = UR_CC_NONE;
	set_cc(&f, &p);
	pump(&f, 2 * MS, 65536, &none);
	ASSERT_GT(none.max_inflight, 16);
	/* 4 packets per 40 us RTT against the whole pipe. */
	ASSERT_LT(sw.bytes * 3, none.bytes);
	tfix_fini(&f);
}

/* A path slower than the target: the window falls below one packet, the
 * requester keeps one in flight and paces. */
static void test_paced_path(void)
{
	struct ur_cc_params p;
	struct flow fl = { 0 };
	struct tfix f;
	const struct ur_swift *s;

	tfix_init(&f, UR_QPT_RC, NULL);
	f.net.f.delay_ns = 50 * US;
	paper(&p);
	p.init_cwnd = 32; /* the first 64 KiB WRITEs leave before the cuts */
	p.target_us = 20; /* the RTT is 100 us */
	p.base_win_ms = 0; /* ... and it is all counted (no base) */
	set_cc(&f, &p);
	pump(&f, 5 * MS, 65536, &fl);
	s = &f.a.qp->priv->cc.cc.u.swift;
	ASSERT(s->cwnd < 1);
	ASSERT_GT(f.a.qp->cnt.cc_cuts, 5);
	ASSERT_GT(f.a.qp->cnt.tx_paced, 0);
	ASSERT_GT(ur_qp_cc_rate(f.a.qp), 0);
	ASSERT_GT(fl.bytes, 0);
	tfix_fini(&f);
}

/* JITTER_K: the target follows the RTT's mean deviation (RFC 6298 2.3),
 * so that a host's millisecond jitter around a 500 us base is not taken
 * for a queue; a standing queue well above the jitter is still cut. */
static uint64_t jitter_run(uint32_t k, uint64_t queue_ns, int n,
			   double *cwnd)
{
	struct ur_cc_params p;
	struct ur_cc cc;
	uint64_t now = 1 * MS, x = ur_test_seed | 1;

	swift(&p); /* target 25 us */
	p.base_win_ms = UR_CC_ENGINE_BASE_WIN_MS; /* a host's 500 us base */
	p.init_cwnd = 32;
	p.jitter_k = k;
	ur_cc_init(&cc, &p, now);
	for (int i = 0; i < n; i++) {
		/* 500 us + uniform 0..2 ms (xorshift64 on the test's seed) */
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		now += 1 * MS;
		cc.ops->on_delay(&cc, 8, 500 * US + x % (2 * MS) +
					 (i >= n / 2 ? queue_ns : 0), now);
	}
	*cwnd = cc.u.swift.cwnd;
	return cc.cuts;
}

static void test_jitter(void)
{
	double wf, wa, wq;
	uint64_t fixed = jitter_run(0, 0, 400, &wf);
	uint64_t adapt = jitter_run(4, 0, 400, &wa);
	uint64_t queued = jitter_run(4, 20 * MS, 400, &wq);
	struct ur_cc_params p;
	struct ur_cc cc;

	fprintf(stderr, "jitter: cuts fixed %llu adapt %llu queued %llu; cwnd %.3f %.3f %.3f\n",
		(unsigned long long)fixed, (unsigned long long)adapt,
		(unsigned long long)queued, wf, wa, wq);
	/* The fixed 25 us target cuts on nearly every RTT of jitter. */
	ASSERT_GT(fixed, 150);
	ASSERT_LT(adapt * 4, fixed);
	ASSERT(wf * 5 < wa);
	/* 20 ms of queue (10 x the jitter) in the second half: cut, once
	 * per (now 21 ms) RTT, to a fraction of the window. */
	ASSERT_GT(queued, 5);
	ASSERT(wq * 20 < wa);
	/* The deviation: first sample R/2, then (3/4, 1/4) of |srtt - R|. */
	swift(&p);
	p.jitter_k = 2;
	ur_cc_init(&cc, &p, 1 * MS);
	cc.ops->on_delay(&cc, 8, 100 * US, 1 * MS);
	near(cc.u.swift.mdev, 50 * US, 1e-9, "mdev first");
	near(ur__swift_target(&cc), 25 * US + 2 * 50 * US, 1e-9, "target");
	cc.ops->on_delay(&cc, 8, 300 * US, 2 * MS);
	near(cc.u.swift.mdev, 0.75 * 50 * US + 0.25 * 200 * US, 1e-9, "mdev");
	near(cc.u.swift.srtt, 100 * US + 200 * US / 8.0, 1e-9, "srtt");
	p.jitter_k = 0;
	ur_cc_init(&cc, &p, 1 * MS);
	cc.ops->on_delay(&cc, 8, 100 * US, 1 * MS);
	near(ur__swift_target(&cc), 25 * US, 1e-9, "k = 0: fixed");
}

/* ECN_CUT_MILLI: a CNP cuts once per RTT (none before an RTT sample);
 * 0 (the default): CNPs change nothing. */
static void test_ecn_cut(void)
{
	struct ur_cc_params p;
	struct ur_cc cc;
	uint64_t now = 1 * MS;

	paper(&p);
	p.init_cwnd = 64;
	ur_cc_init(&cc, &p, now);
	cc.ops->on_delay(&cc, 8, 10 * US, now);
	cc.ops->on_cnp(&cc, now + 1 * US);
	ASSERT_EQ(cc.cuts, 0);
	p.ecn_cut_milli = 500;
	ur_cc_init(&cc, &p, now);
	cc.ops->on_cnp(&cc, now);
	ASSERT_EQ(cc.cuts, 0); /* no RTT yet: no "once per RTT" either */
	cc.ops->on_delay(&cc, 8, 10 * US, now);
	near(cc.u.swift.cwnd, 64 + 8.0 / 64, 1e-9, "grown");
	cc.ops->on_cnp(&cc, now + 1 * US);
	near(cc.u.swift.cwnd, (64 + 8.0 / 64) / 2, 1e-9, "cut");
	cc.ops->on_cnp(&cc, now + 5 * US); /* same RTT */
	ASSERT_EQ(cc.cuts, 1);
	cc.ops->on_cnp(&cc, now + 12 * US);
	ASSERT_EQ(cc.cuts, 2);
	/* predict shares it */
	p.algo = UR_CC_PREDICT;
	ur_cc_init(&cc, &p, now);
	cc.ops->on_delay(&cc, 8, 10 * US, now);
	cc.ops->on_cnp(&cc, now + 1 * US);
	ASSERT_EQ(cc.cuts, 1);
}

/* FIRST_MSG_PKTS: the QP's first message, if it fits, is its first
 * window; a longer one, a later one, or one after an RTT sample is not. */
static void test_first_msg(void)
{
	struct ur_cc_params p;
	struct ur_cc cc;

	swift(&p); /* init_cwnd 8, first_msg_pkts 25 */
	ASSERT_EQ(p.first_msg_pkts, 25);
	p.first_msg_pkts = 0; /* off */
	ur_cc_init(&cc, &p, 1 * MS);
	cc.ops->on_msg(&cc, 20);
	ASSERT_EQ(cc.ops->window(&cc), 8);
	p.first_msg_pkts = 25;
	ur_cc_init(&cc, &p, 1 * MS);
	cc.ops->on_msg(&cc, 20);
	ASSERT_EQ(cc.ops->window(&cc), 20);
	cc.ops->on_msg(&cc, 25); /* the second message */
	ASSERT_EQ(cc.ops->window(&cc), 20);
	ur_cc_init(&cc, &p, 1 * MS);
	cc.ops->on_msg(&cc, 26); /* too long: slow start from 8 */
	ASSERT_EQ(cc.ops->window(&cc), 8);
	cc.ops->on_msg(&cc, 20);
	ASSERT_EQ(cc.ops->window(&cc), 8);
	ur_cc_init(&cc, &p, 1 * MS);
	cc.ops->on_delay(&cc, 1, 10 * US, 1 * MS);
	cc.ops->on_msg(&cc, 20); /* the path has answered already */
	ASSERT_EQ(cc.ops->window(&cc), 9);
	ur_cc_init(&cc, &p, 1 * MS);
	cc.ops->on_msg(&cc, 4); /* smaller than the first window */
	ASSERT_EQ(cc.ops->window(&cc), 8);
	p.algo = UR_CC_PREDICT;
	ur_cc_init(&cc, &p, 1 * MS);
	cc.ops->on_msg(&cc, 20);
	ASSERT_EQ(cc.ops->window(&cc), 20);
}


/*
 * Issue 44's wire bed, on virtual time: why plain Swift moved 0.00 of a
 * 200 Mbit/s port. One QP through the port (1 KiB packets, 41 us each);
 * the hosts' RTT with no queue is 300 us plus a seeded 0..200 us of
 * jitter, and a packet alone in flight (a window of one, paced) waits
 * 150 us more for both engines to wake. The queue is what the window holds
 * above the path's BDP. Per RTT the QP sends its window (or, below one
 * packet, a packet every RTT / cwnd) and gets one ACK for them.
 */
struct wire_run {
	double util;     /* delivered / the port, over the second half */
	double qdelay;   /* mean queueing delay, us, over the second half */
	double cwnd;     /* at the end */
};

static struct wire_run wire_run(const struct ur_cc_params *p, int rounds)
{
	const double pkt_ns = 1024 * 8 / 0.2; /* 200 Mbit/s: 40.96 us */
	struct ur_cc cc;
	uint64_t now = 1 * MS, x = ur_test_seed | 1, t0 = 0;
	double sent = 0, qsum = 0;
	int qn = 0;
	struct wire_run r;

	ur_cc_init(&cc, p, now);
	cc.ops->on_sent(&cc, 1024, now);
	for (int i = 0; i < rounds; i++) {
		double w = cc.u.swift.cwnd, host, bdp, q, rtt, npk, dur;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		host = 300e3 + (double)(x % 200000) + (w < 2 ? 150e3 : 0);
		bdp = host / pkt_ns;
		q = w > bdp ? (w - bdp) * pkt_ns : 0;
		rtt = host + q;
		npk = w >= 1 ? w : 1;
		/* below one packet: one packet per RTT / cwnd */
		dur = w >= 1 ? rtt : rtt / w;
		if (dur < npk * pkt_ns)
			dur = npk * pkt_ns; /* the port's rate */
		now += (uint64_t)dur;
		if (i == rounds / 2)
			t0 = now;
		if (i >= rounds / 2) {
			sent += npk;
			qsum += q / 1e3;
			qn++;
		}
		cc.ops->on_delay(&cc, (uint32_t)npk, (uint64_t)rtt, now);
	}
	r.util = sent * pkt_ns / (double)(now - t0);
	r.qdelay = qsum / qn;
	r.cwnd = cc.u.swift.cwnd;
	return r;
}

static void test_wire_stall(void)
{
	struct ur_cc_params p;
	struct wire_run fixed, jit, based;

	swift(&p); /* target 25 us, the simulator's defaults */
	fixed = wire_run(&p, 2000);
	p.jitter_k = 4;
	jit = wire_run(&p, 2000);
	p.target_base_milli = 1000; /* the engine's defaults */
	p.base_win_ms = UR_CC_ENGINE_BASE_WIN_MS;
	based = wire_run(&p, 2000);
	fprintf(stderr, "wire_stall: util fixed %.3f jitter %.3f base %.3f; "
		"queue %.0f %.0f %.0f us; cwnd %.3f %.3f %.3f\n",
		fixed.util, jit.util, based.util, fixed.qdelay, jit.qdelay,
		based.qdelay, fixed.cwnd, jit.cwnd, based.cwnd);
	/* 25 us against a host's RTT: nothing moves. (Where the window
	 * ends is no verdict: between its 0.01 floor and a few packets after
	 * the last samples' increases, by seed; 0.1 % of the port is.) */
	ASSERT(fixed.util < 0.05);
	/* The target from the base: the port full, a queue of about a
	 * base RTT, not the window's floor. */
	ASSERT(based.util > 0.9);
	ASSERT(based.cwnd >= 2);
	ASSERT(based.qdelay < 2 * 500);
	/* The target's arithmetic: 25 us + 1.0 x the least RTT. */
	{
		struct ur_cc cc;

		p.jitter_k = 0;
		ur_cc_init(&cc, &p, 1 * MS);
		cc.ops->on_delay(&cc, 1, 400 * US, 2 * MS);
		cc.ops->on_delay(&cc, 1, 300 * US, 3 * MS);
		cc.ops->on_delay(&cc, 1, 500 * US, 4 * MS);
		near(ur__swift_target(&cc), 25 * US + 300 * US, 1e-9,
		     "target from the base");
		p.base_win_ms = 0; /* no base: the fixed target */
		ur_cc_init(&cc, &p, 1 * MS);
		cc.ops->on_delay(&cc, 1, 300 * US, 2 * MS);
		near(ur__swift_target(&cc), 25 * US, 1e-9, "no base");
	}
}

/*
 * The wire bed's sender sleeps now and then (a loaded 2-core host: its
 * engine waits milliseconds for a CPU): the ACKs that came meanwhile wait
 * in its socket, and it sends nothing until it wakes. One QP through a
 * 200 Mbit/s port as in wire_run; one round in 16 the sender sleeps
 * 1..5 ms. The port stays busy through a sleep only on what was queued
 * before it, so the queue the window holds must cover the sleeps.
 *   old:    the RTT ends when the engine wakes (the sleep is "delay");
 *   stamps: the RTT ends at the kernel's receive time (rx_ns), the sleep
 *           is cc->late, in neither the delay nor the target (not a
 *           setting: LATE_MILLI 0 ends the RTT at now; why the two go
 *           together);
 *   late:   stamps, and the target covers the lateness (LATE_MILLI 1000).
 */
struct stall_run {
	double util, qdelay, cuts;
};

static struct stall_run stall_run(const struct ur_cc_params *p, bool stamps,
				  uint64_t seed, int rounds)
{
	const double pkt_ns = 1024 * 8 / 0.2;
	struct ur_cc cc;
	uint64_t now = 1 * MS, x = seed | 1, t0 = 0;
	double sent = 0, qsum = 0;
	int qn = 0;
	struct stall_run r;

	ur_cc_init(&cc, p, now);
	cc.ops->on_sent(&cc, 1024, now);
	for (int i = 0; i < rounds; i++) {
		double w = cc.u.swift.cwnd, host, bdp, q, rtt, npk, dur, sleep = 0;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		host = 300e3 + (double)(x % 200000);
		if ((x >> 20) % 16 == 0)
			sleep = 1e6 + (double)((x >> 24) % 4000000);
		bdp = host / pkt_ns;
		q = w > bdp ? (w - bdp) * pkt_ns : 0;
		rtt = host + q;
		npk = w >= 1 ? w : 1;
		/* The window's packets take rtt to come back; a sleep adds to
		 * the round, and the port drains only what was queued. */
		dur = (w >= 1 ? rtt : rtt / w) + sleep;
		if (dur < npk * pkt_ns)
			dur = npk * pkt_ns;
		now += (uint64_t)dur;
		if (i == rounds / 2)
			t0 = now;
		if (i >= rounds / 2) {
			sent += npk;
			qsum += q / 1e3;
			qn++;
		}
		cc.late = stamps ? (uint64_t)sleep : 0;
		cc.ops->on_delay(&cc, (uint32_t)npk,
				 (uint64_t)(stamps ? rtt : rtt + sleep), now);
	}
	r.util = sent * pkt_ns / (double)(now - t0);
	r.qdelay = qsum / qn;
	r.cuts = (double)cc.cuts;
	return r;
}

/* The mean of STALL_SEEDS runs at seeds derived from the printed one: one
 * run's sleeps can fall so that the late target gains nothing over the
 * old one (util 0.916 against 0.917 at 16 of 400 seeds); the claim is
 * about sleeps on average. */
#define STALL_SEEDS 8

static struct stall_run stall_mean(const struct ur_cc_params *p, bool stamps,
				   int rounds)
{
	struct stall_run m = { 0 };

	for (int k = 0; k < STALL_SEEDS; k++) {
		struct stall_run r = stall_run(p, stamps,
			ur_test_seed + (uint64_t)k * 0x9e3779b97f4a7c15ull,
			rounds);

		m.util += r.util / STALL_SEEDS;
		m.qdelay += r.qdelay / STALL_SEEDS;
		m.cuts += r.cuts / STALL_SEEDS;
	}
	return m;
}

static void test_host_stall(void)
{
	struct ur_cc_params p;
	struct stall_run old, st, late;

	swift(&p);
	/* the engine's Swift (src/verbs/cc.c) */
	p.target_base_milli = UR_CC_ENGINE_TARGET_BASE_MILLI;
	p.jitter_k = UR_CC_ENGINE_JITTER_K;
	p.standing_milli = UR_CC_ENGINE_STANDING_MILLI;
	p.base_win_ms = UR_CC_ENGINE_BASE_WIN_MS;
	old = stall_mean(&p, false, 4000);
	st = stall_mean(&p, true, 4000);
	p.late_milli = 1000;
	late = stall_mean(&p, true, 4000);
	fprintf(stderr, "host_stall: util old %.3f stamps %.3f late %.3f; "
		"queue %.0f %.0f %.0f us; cuts %.0f %.0f %.0f\n", old.util,
		st.util, late.util, old.qdelay, st.qdelay, late.qdelay, old.cuts,
		st.cuts, late.cuts);
	/* Told apart from the delay, a sleep no longer raises the target
	 * (the RTT's deviation) either: a tighter target, a smaller queue,
	 * the port idler. The target that covers the sleeps keeps the port
	 * busier than either, with a queue of milliseconds, not the 20 ms of
	 * a window-bound one. */
	ASSERT(st.qdelay < late.qdelay);
	ASSERT(late.util > old.util);
	ASSERT(late.util > st.util);
	ASSERT(late.qdelay < 8000);
	/* LATE_MILLI's arithmetic: + 1.0 x (mean + 4 mean deviations). */
	{
		struct ur_cc cc;

		p.jitter_k = 0;
		p.target_base_milli = 0;
		ur_cc_init(&cc, &p, 1 * MS);
		cc.late = 800 * US;
		cc.ops->on_delay(&cc, 1, 300 * US, 2 * MS);
		/* avg 800/8 = 100, dev (800 - 0)/4 = 200 */
		near(ur__swift_target(&cc), 25 * US + 100 * US + 4 * 200 * US,
		     1e-6, "late target");
	}
}

/*
 * The latecomer (issue 44; cc9's test_sim dcqcn_fair, 24.6 against 0.0
 * Gbit/s): two QPs of plain Swift through one 25 Gbit/s port, the same
 * idle RTT (a seeded 6..14 us, as two hosts of a rack to a third's), the
 * second starting a seeded 2..6 ms after the first. Each samples its
 * RTT (the idle one, the port's queue and a seeded 0..1 us) four times
 * per RTT; the queue is what both send above the port's rate. A base
 * (the least RTT of 10 s) taken by the second behind the first's
 * standing queue is that queue too high: its delay is the first's less
 * the target, the first cuts alone and starves.
 */
struct late_run {
	double gbps[2];  /* each QP's rate over the last 20 ms */
	double qdelay;   /* mean queueing delay over them, us */
};

static struct late_run late_run(const struct ur_cc_params *p, uint64_t seed)
{
	const double port = 25.0, pkt = 4096 * 8; /* bits per ns, bits */
	uint64_t x = seed * 0x9e3779b97f4a7c15ull | 1, start[2];
	uint64_t next[2] = { 0, 0 }, end, t0;
	double idle, q = 0, sent[2] = { 0, 0 }, qsum = 0;
	struct ur_cc cc[2];
	struct late_run r;
	long qn = 0;

	x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	idle = 6000 + (double)(x % 8000);
	x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	start[0] = 1 * MS;
	start[1] = start[0] + 2 * MS + x % (4 * MS);
	end = start[1] + 40 * MS;
	t0 = end - 20 * MS;
	for (int i = 0; i < 2; i++)
		ur_cc_init(&cc[i], p, start[i]);
	for (uint64_t now = start[0]; now < end; now += 250) {
		/* q is in bits: its delay at the port's rate (bits/ns) */
		double in = 0, rtt = idle + q / port;

		for (int i = 0; i < 2; i++) {
			struct ur_cc *c = &cc[i];
			double w = c->u.swift.cwnd, rate;

			if (now < start[i])
				continue;
			rate = w * pkt / rtt; /* bits per ns */
			in += rate * 250;
			if (now >= t0)
				sent[i] += rate * 250;
			if (now >= next[i]) {
				uint32_t n = (uint32_t)(w / 4 >= 1 ? w / 4 : 1);

				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				c->ops->on_delay(c, n, (uint64_t)rtt + x % 1000,
						 now);
				next[i] = now + (uint64_t)(rtt / 4);
			}
		}
		q += in - port * 250;
		if (q < 0)
			q = 0;
		if (now >= t0) {
			qsum += q / port / 1e3;
			qn++;
		}
	}
	for (int i = 0; i < 2; i++)
		r.gbps[i] = sent[i] / (double)(end - t0);
	r.qdelay = qsum / (double)qn;
	return r;
}

static void test_latecomer(void)
{
	struct ur_cc_params p;
	int unfair = 0;

	swift(&p); /* plain Swift, the table's defaults */
	for (uint64_t k = 0; k < 8; k++) {
		uint64_t seed = ur_test_seed * 8 + k;
		struct late_run r = late_run(&p, seed);
		double a = r.gbps[0], b = r.gbps[1];
		double jain = (a + b) * (a + b) / (2 * (a * a + b * b));

		fprintf(stderr, "latecomer %llu: %.1f / %.1f Gbit/s, Jain %.3f, "
			"queue %.1f us\n", (unsigned long long)seed, a, b, jain,
			r.qdelay);
		if (jain < 0.95)
			unfair++;
		/* the port busy, the queue held near the target */
		ASSERT(a + b > 0.9 * 25);
		ASSERT(r.qdelay < 4 * p.target_us);
	}
	ASSERT_EQ(unfair, 0);
}


/*
 * auto's 64:1 incast (issue 44; bench/results/2026-12-07-cc11.md): a
 * seeded 48..64 QPs of auto's Swift (ur_cc_auto_swift) start within a
 * microsecond toward one 100 Gbit/s port, each with its own idle RTT (a
 * seeded 12..20 us, the fabric's). Packets of 4 KiB: a QP sends while
 * its packets in flight are below the window (below one packet, one at
 * a time, paced at its rate); each waits its turn in the port's FIFO and
 * its ACK returns half the idle RTT later, the RTT sample of one packet.
 * The first windows arrive together before any QP has a sample: with
 * 8 packets each (main before cc11) the queue's p99 was 1476-1968 KB
 * (seeds 1-64 all fail), with auto's 2 it is 244-396 KB (seeds 1-100).
 * The queue's p99 (sampled every 1 us over 3 ms) must stay under 480
 * KB, and the port busy.
 */
#define IN_PKT 4096u
#define IN_QPS 64
#define IN_RING 4096u

struct in_qp {
	struct ur_cc cc;
	uint64_t idle, start, next_send;
	uint64_t up[IN_RING], dn[IN_RING], dn_sent[IN_RING]; /* times */
	uint32_t uh, ut, dh, dt, inflight;
};

struct in_run {
	double q_p99, q_max; /* KB */
	double busy;         /* the port's share of the run busy */
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static struct in_run incast_run(const struct ur_cc_params *p, uint64_t seed)
{
	static struct in_qp qp[IN_QPS];
	static uint32_t fifo[1u << 16];
	static uint64_t fsent[1u << 16];
	static uint32_t qs[3000];
	const double ser = IN_PKT * 8 / 100.0; /* ns at 100 Gbit/s */
	const uint64_t dt = 50, end = 3 * MS;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull | 1, next_sample = US;
	uint32_t n, fh = 0, ft = 0, ns = 0;
	double credit = 0, busy = 0;
	struct in_run r;

	x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	n = 48 + (uint32_t)(x % 17);
	for (uint32_t i = 0; i < n; i++) {
		struct in_qp *q = &qp[i];

		memset(q, 0, sizeof(*q));
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		q->idle = 12 * US + x % (8 * US);
		q->start = (x >> 20) % US;
		q->next_send = q->start;
		ur_cc_init(&q->cc, p, q->start);
	}
	for (uint64_t now = 0; now < end; now += dt) {
		for (uint32_t i = 0; i < n; i++) {
			struct in_qp *q = &qp[i];
			struct ur_cc *c = &q->cc;

			/* ACKs back: one RTT sample per packet */
			while (q->dh != q->dt && q->dn[q->dh % IN_RING] <= now) {
				uint64_t sent = q->dn_sent[q->dh % IN_RING];

				q->dh++;
				q->inflight--;
				c->ops->on_delay(c, 1, now - sent, now);
			}
			/* sends: under the window, or paced below a packet */
			while (now >= q->start && now >= q->next_send &&
			       q->inflight < c->ops->window(c)) {
				uint64_t rate = c->ops->rate(c);

				c->ops->on_sent(c, IN_PKT, now);
				q->up[q->ut++ % IN_RING] = now;
				q->inflight++;
				if (rate)
					q->next_send = now + (uint64_t)(IN_PKT * 8e9 / (double)rate);
			}
			/* into the port's FIFO half the idle RTT later */
			while (q->uh != q->ut &&
			       q->up[q->uh % IN_RING] + q->idle / 2 <= now) {
				fsent[ft % (1u << 16)] = q->up[q->uh % IN_RING];
				fifo[ft++ % (1u << 16)] = i;
				q->uh++;
			}
		}
		/* the port serves at 100 Gbit/s */
		credit += fh != ft ? dt : 0;
		if (fh != ft)
			busy += dt;
		while (fh != ft && credit >= ser) {
			struct in_qp *q = &qp[fifo[fh % (1u << 16)]];

			credit -= ser;
			q->dn_sent[q->dt % IN_RING] = fsent[fh % (1u << 16)];
			q->dn[q->dt++ % IN_RING] = now + q->idle / 2;
			fh++;
		}
		if (fh == ft)
			credit = 0;
		if (now >= next_sample) {
			qs[ns++] = (ft - fh) * IN_PKT / 1024;
			next_sample += US;
		}
	}
	qsort(qs, ns, sizeof(*qs), cmp_u32);
	r.q_p99 = qs[(ns * 99 + 99) / 100 - 1];
	r.q_max = qs[ns - 1];
	r.busy = busy / (double)end;
	return r;
}

static void test_incast(void)
{
	struct ur_cc_params p;

	ur_cc_params_default(&p);
	p.algo = UR_CC_DCQCN_RTT;
	ur_cc_auto_swift(&p); /* what auto runs on a fabric's RTT */
	for (uint64_t k = 0; k < 4; k++) {
		uint64_t seed = ur_test_seed * 4 + k;
		struct in_run r = incast_run(&p, seed);

		fprintf(stderr, "incast %llu: queue p99 %.0f KB, max %.0f KB, "
			"port busy %.3f\n", (unsigned long long)seed, r.q_p99,
			r.q_max, r.busy);
		ASSERT(r.q_p99 < 480);
		ASSERT(r.busy > 0.95);
	}
}

static const struct ur_test_case tests[] = {
	{ "params", test_params },
	{ "grow", test_grow },
	{ "cut", test_cut },
	{ "base", test_base },
	{ "loss", test_loss },
	{ "pacing", test_pacing },
	{ "rtt_sample", test_rtt_sample },
	{ "stale_clock", test_stale_clock },
	{ "window_bounds", test_window_bounds },
	{ "paced_path", test_paced_path },
	{ "jitter", test_jitter },
	{ "ecn_cut", test_ecn_cut },
	{ "first_msg", test_first_msg },
	{ "wire_stall", test_wire_stall },
	{ "host_stall", test_host_stall },
	{ "latecomer", test_latecomer },
	{ "incast", test_incast },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

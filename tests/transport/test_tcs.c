// SPDX-License-Identifier: MIT
/*
 * The transmit scheduler of traffic classes (src/transport/ur_tcs.h) on
 * virtual time: senders ask ur_tcs_may as the requester does, send when
 * told yes and ask again at the time they were given, late by a seeded
 * wake-up jitter of up to 20 us (a busy host's timer); told to wait they
 * enter their class's backlog, out of packets they leave it. Checks strict
 * priority's latency, 3:1 weights, minimum rates, work conservation and
 * the settings' parsers.
 */
#include <errno.h>

#include "ur_rand.h"
#include "ur_tcs.h"
#include "ur_test.h"

/* Rates and ratios are doubles. */
#define ASSERT_DGT(a, b) UR_ASSERT_OP(a, >, b, double, "f")
#define ASSERT_DLT(a, b) UR_ASSERT_OP(a, <, b, double, "f")

#define GBIT 1000000000ull
#define T0 1000000000ull /* virtual time starts at 1 s (0 is "never") */
#define PKT 4154u        /* a 4096-byte WRITE middle packet: BTH + ICRC ... */

struct sender {
	unsigned int prio;
	uint32_t bytes;
	uint64_t next;        /* asks at */
	uint64_t from, until; /* backlogged in [from, until) */
	uint64_t gap;         /* >0: a ping every gap ns (one packet each) */
	uint64_t born;        /* the ping waiting since */
	bool waiting;
	bool in;              /* in its class's backlog (ur_tcs_backlog) */
	uint64_t sent_bytes, sent_from_mark;
	uint64_t lat_max, lat_sum, lat_n;
};

struct run {
	struct ur_tcs s;
	uint64_t rng;
	struct sender *q;
	unsigned int n;
	uint64_t mark;        /* sent_from_mark counts from here */
};

static uint64_t jitter(struct run *r)
{
	return ur_rand_next(&r->rng) % 20000;
}

/* Run until @end: each step the sender that asks first. */
static void run_until(struct run *r, uint64_t end)
{
	for (;;) {
		struct sender *x = NULL;
		uint64_t when = 0;

		for (unsigned int i = 0; i < r->n; i++) {
			struct sender *y = &r->q[i];

			if (y->next < y->from)
				y->next = y->from;
			if (y->next >= y->until) {
				if (y->in) { /* done: leaves the backlog */
					ur_tcs_backlog(&r->s, y->prio, false,
						       y->until);
					y->in = false;
				}
				continue;
			}
			if (!x || y->next < x->next)
				x = y;
		}
		if (!x || x->next >= end)
			return;
		if (x->gap && !x->waiting) {
			x->waiting = true;
			x->born = x->next;
		}
		if (ur_tcs_may(&r->s, x->prio, x->bytes, x->next, &when)) {
			ur_tcs_sent(&r->s, x->prio, x->bytes, x->next);
			x->sent_bytes += x->bytes;
			if (x->next >= r->mark)
				x->sent_from_mark += x->bytes;
			if (x->gap) {
				uint64_t l = x->next - x->born;

				x->lat_sum += l;
				x->lat_n++;
				if (l > x->lat_max)
					x->lat_max = l;
				x->waiting = false;
				if (x->in) /* nothing more to send */
					ur_tcs_backlog(&r->s, x->prio, false,
						       x->next);
				x->in = false;
				/* The next ping at a random time around gap. */
				x->next = x->born + x->gap / 2 +
					  ur_rand_next(&r->rng) % x->gap;
			} else {
				x->next += 300; /* the CPU time of a packet */
			}
		} else {
			ASSERT_GT(when, x->next);
			if (!x->in)
				ur_tcs_backlog(&r->s, x->prio, true, x->next);
			x->in = true;
			x->next = when + jitter(r);
		}
	}
}

static void run_init(struct run *r, const struct ur_tcs_cfg *cfg,
		     uint64_t bps, struct sender *q, unsigned int n)
{
	memset(r, 0, sizeof(*r));
	ur_tcs_init(&r->s, cfg, bps, bps * 4 / 1000 / 8); /* 4 ms: uroce's */
	r->rng = ur_rand_seed(ur_test_seed, 45);
	r->q = q;
	r->n = n;
	for (unsigned int i = 0; i < n; i++) {
		if (!q[i].until)
			q[i].until = UINT64_MAX;
		if (!q[i].from)
			q[i].from = T0;
		q[i].next = q[i].from;
	}
}

static double gbps(uint64_t bytes, uint64_t ns)
{
	return (double)bytes * 8 / (double)ns;
}

/* A ping-pong in a dedicated class next to two bulk streams under a
 * 1 Gbit/s limit leaves at once; in a weighted class (no dedicated one)
 * it waits behind the bulk's bucket. The device's rate stays the limit. */
static void strict_latency(void)
{
	struct ur_tcs_cfg cfg;
	struct run r;
	uint64_t dur = 500000000ull, total;

	for (int strict = 1; strict >= 0; strict--) {
		struct sender q[3] = {
			{ .prio = 0, .bytes = PKT },
			{ .prio = 0, .bytes = PKT },
			{ .prio = 5, .bytes = 90, .gap = 200000 },
		};

		ur_tcs_cfg_default(&cfg);
		cfg.strict = strict ? 1u << 5 : 0;
		cfg.weight[0] = 2; /* classes on in both runs */
		run_init(&r, &cfg, GBIT, q, 3);
		ASSERT(r.s.on);
		r.mark = T0 + 10000000; /* after the first bucket's burst */
		run_until(&r, T0 + dur);
		total = q[0].sent_from_mark + q[1].sent_from_mark +
			q[2].sent_from_mark;
		printf("strict=%d: ping n %llu mean %.1f us max %.1f us; "
		       "device %.3f Gbit/s\n", strict,
		       (unsigned long long)q[2].lat_n,
		       (double)q[2].lat_sum / (double)q[2].lat_n / 1e3,
		       (double)q[2].lat_max / 1e3,
		       gbps(total, dur - 10000000));
		ASSERT_GT(q[2].lat_n, 2000);
		/* Within 1 % of the limit (and never above it by more than
		 * the bucket and the headroom). */
		ASSERT_DGT(gbps(total, dur - 10000000), 0.99);
		ASSERT_DLT(gbps(total, dur - 10000000), 1.01);
		if (strict) {
			/* Never held: the bulk runs the bucket at most one
			 * packet ahead, less than the headroom. */
			ASSERT_EQ(q[2].lat_max, 0);
		} else {
			/* Held behind the bucket: the test sees the cost. */
			ASSERT_GT(q[2].lat_sum, 0);
		}
	}
}

/* Two bulk classes weighted 3:1 share the limit 3:1 (within 3 %). */
static void weights_3_1(void)
{
	struct ur_tcs_cfg cfg;
	struct sender q[3] = {
		{ .prio = 0, .bytes = PKT },
		{ .prio = 2, .bytes = PKT },
		{ .prio = 2, .bytes = 1100 }, /* the same class, smaller packets */
	};
	struct run r;
	double ratio;

	ur_tcs_cfg_default(&cfg);
	cfg.weight[0] = 3;
	cfg.weight[2] = 1;
	run_init(&r, &cfg, GBIT, q, 3);
	r.mark = T0 + 10000000;
	run_until(&r, T0 + 1000000000ull);
	ratio = (double)q[0].sent_from_mark /
		(double)(q[1].sent_from_mark + q[2].sent_from_mark);
	printf("3:1 -> %.3f (%.3f and %.3f Gbit/s)\n", ratio,
	       gbps(q[0].sent_from_mark, 990000000ull),
	       gbps(q[1].sent_from_mark + q[2].sent_from_mark, 990000000ull));
	ASSERT_DGT(ratio, 3.0 * 0.97);
	ASSERT_DLT(ratio, 3.0 * 1.03);
}

/* A dedicated class that never stops starves a weighted one, unless that
 * one has a minimum rate: then it gets it (within 3 %). */
static void min_rate(void)
{
	struct ur_tcs_cfg cfg;
	struct run r;

	for (int with_min = 0; with_min < 2; with_min++) {
		struct sender q[2] = {
			{ .prio = 6, .bytes = PKT },
			{ .prio = 0, .bytes = PKT },
		};
		double g;

		ur_tcs_cfg_default(&cfg);
		cfg.strict = 1u << 6;
		cfg.min_bps[0] = with_min ? 100000000ull : 0;
		run_init(&r, &cfg, GBIT, q, 2);
		r.mark = T0 + 10000000;
		run_until(&r, T0 + 1000000000ull);
		g = gbps(q[1].sent_from_mark, 990000000ull);
		printf("min %d: class 0 %.4f Gbit/s, class 6 %.4f Gbit/s\n",
		       with_min, g, gbps(q[0].sent_from_mark, 990000000ull));
		if (with_min) {
			ASSERT_DGT(g, 0.1 * 0.97);
			ASSERT_DLT(g, 0.1 * 1.10);
		} else {
			ASSERT_DLT(g, 0.01);
		}
		ASSERT_DGT(gbps(q[0].sent_from_mark + q[1].sent_from_mark,
			       990000000ull), 0.99);
	}
}

/* Weights 3:1, the weight-1 class idle for a while: the other one takes
 * the whole limit meanwhile, and the returning one gets no credit for the
 * time away (3:1 again at once, not a catch-up). */
static void work_conserving(void)
{
	struct ur_tcs_cfg cfg;
	struct sender q[2] = {
		{ .prio = 0, .bytes = PKT },
		{ .prio = 1, .bytes = PKT, .until = T0 + 200000000ull },
	};
	struct sender back = { .prio = 1, .bytes = PKT,
			       .from = T0 + 600000000ull };
	struct sender all[3];
	struct run r;
	uint64_t a0, b0, a1, b1;

	ur_tcs_cfg_default(&cfg);
	cfg.weight[0] = 3;
	all[0] = q[0];
	all[1] = q[1];
	all[2] = back;
	run_init(&r, &cfg, GBIT, all, 3);
	r.mark = T0 + 250000000ull; /* class 1 away */
	run_until(&r, T0 + 550000000ull);
	a0 = all[0].sent_from_mark;
	printf("alone: %.3f Gbit/s\n", gbps(a0, 300000000ull));
	ASSERT_DGT(gbps(a0, 300000000ull), 0.99);
	run_until(&r, T0 + 600000000ull);
	a0 = all[0].sent_bytes;
	b0 = all[2].sent_bytes;
	run_until(&r, T0 + 650000000ull);
	a1 = all[0].sent_bytes - a0;
	b1 = all[2].sent_bytes - b0;
	printf("back: %.3f : 1 in its first 50 ms\n", (double)a1 / (double)b1);
	ASSERT_DGT((double)a1 / (double)b1, 3.0 * 0.95);
	ASSERT_DLT((double)a1 / (double)b1, 3.0 * 1.05);
}

/* Two dedicated classes: the higher one first. */
static void strict_order(void)
{
	struct ur_tcs_cfg cfg;
	struct sender q[3] = {
		{ .prio = 5, .bytes = PKT },
		{ .prio = 6, .bytes = PKT },
		{ .prio = 0, .bytes = PKT },
	};
	struct run r;

	ur_tcs_cfg_default(&cfg);
	cfg.strict = (1u << 5) | (1u << 6);
	run_init(&r, &cfg, GBIT, q, 3);
	r.mark = T0 + 10000000;
	run_until(&r, T0 + 500000000ull);
	printf("6: %.3f, 5: %.4f, 0: %.4f Gbit/s\n",
	       gbps(q[1].sent_from_mark, 490000000ull),
	       gbps(q[0].sent_from_mark, 490000000ull),
	       gbps(q[2].sent_from_mark, 490000000ull));
	ASSERT_DGT(gbps(q[1].sent_from_mark, 490000000ull), 0.98);
	ASSERT_DLT(gbps(q[0].sent_from_mark, 490000000ull), 0.02);
	ASSERT_DLT(gbps(q[2].sent_from_mark, 490000000ull), 0.02);
}

/* No limit: nothing to share, always yes. Defaults: classes off. */
static void off_and_unlimited(void)
{
	struct ur_tcs_cfg cfg;
	struct ur_tcs s;
	uint64_t w = 0;

	ur_tcs_cfg_default(&cfg);
	ASSERT(!ur_tcs_cfg_active(&cfg));
	cfg.strict = 1;
	ASSERT(ur_tcs_cfg_active(&cfg));
	ur_tcs_init(&s, &cfg, 0, 0);
	for (int i = 0; i < 1000; i++) {
		ASSERT(ur_tcs_may(&s, (unsigned int)i & 7, PKT, T0 + (uint64_t)i, &w));
		ur_tcs_sent(&s, (unsigned int)i & 7, PKT, T0 + (uint64_t)i);
	}
	ASSERT_EQ(w, 0);
	/* The map: DSCP >> 3 (trust DSCP), the SL (trust PCP). */
	ASSERT_EQ(ur_tc_prio(UR_TC_TRUST_DSCP, 46 << 2, 3), 5);
	ASSERT_EQ(ur_tc_prio(UR_TC_TRUST_DSCP, (26 << 2) | 2, 0), 3);
	ASSERT_EQ(ur_tc_prio(UR_TC_TRUST_PCP, 46 << 2, 3), 3);
	ASSERT_EQ(ur_tc_prio(UR_TC_TRUST_PCP, 0, 15), 7);
}

static void parse(void)
{
	char why[160];
	uint8_t m;
	uint32_t w[8];
	uint64_t b[8];

	ASSERT_EQ(ur_tcs_parse_prios("5", &m, why, sizeof(why)), 0);
	ASSERT_EQ(m, 0x20);
	ASSERT_EQ(ur_tcs_parse_prios("5,6", &m, why, sizeof(why)), 0);
	ASSERT_EQ(m, 0x60);
	for (unsigned int i = 0; i < 8; i++) {
		static const char *const bad[] = { "", "8", "5,5", "-1", "5,",
						   "a", "5 6", "0,1,2,3,4,5,6,7,0" };

		ASSERT_EQ(ur_tcs_parse_prios(bad[i], &m, why, sizeof(why)),
			  -EINVAL);
		ASSERT(strstr(why, "0..7"));
	}
	ASSERT_EQ(ur_tcs_parse_weights("3,1", w, why, sizeof(why)), 0);
	ASSERT_EQ(w[0], 3);
	ASSERT_EQ(w[1], 1);
	ASSERT_EQ(w[7], 1);
	ASSERT_EQ(ur_tcs_parse_weights("1,2,3,4,5,6,7,100", w, why, sizeof(why)), 0);
	ASSERT_EQ(w[7], 100);
	ASSERT_EQ(ur_tcs_parse_weights("0,1", w, why, sizeof(why)), -EINVAL);
	ASSERT_EQ(ur_tcs_parse_weights("101", w, why, sizeof(why)), -EINVAL);
	ASSERT_EQ(ur_tcs_parse_weights("1,1,1,1,1,1,1,1,1", w, why, sizeof(why)),
		  -EINVAL);
	ASSERT(strstr(why, "1..100"));
	ASSERT_EQ(ur_tcs_parse_mins("0,100", b, why, sizeof(why)), 0);
	ASSERT_EQ(b[1], 100000000ull);
	ASSERT_EQ(b[2], 0);
	ASSERT_EQ(ur_tcs_parse_mins("400001", b, why, sizeof(why)), -EINVAL);
	ASSERT(strstr(why, "400000"));
}

static const struct ur_test_case tests[] = {
	{ "strict_latency", strict_latency },
	{ "weights_3_1", weights_3_1 },
	{ "min_rate", min_rate },
	{ "work_conserving", work_conserving },
	{ "strict_order", strict_order },
	{ "off_and_unlimited", off_and_unlimited },
	{ "parse", parse },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

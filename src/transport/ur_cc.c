// SPDX-License-Identifier: MIT
/*
 * Congestion control and shaping glue (docs/cc.md): the parameter table,
 * the per-QP reaction point (an algorithm from ur_cc_ops + a token-bucket
 * pacer that also enforces the QP's and the device's rate limits), and the
 * notification point, which answers an ECN CE-marked request with a CNP
 * (IBTA Annex A17.9) at most once per cnp_interval_us per QP.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ur_qp_priv.h"

/* One row per parameter, DCQCN's and Swift's from their X tables. */
#define UR_CC_X(env, f, def, lo, hi, src)                                    \
	{ #env, #f, offsetof(struct ur_cc_params, f), def, lo, hi, src },
const struct ur_cc_param_info ur_cc_param_table[] = {
	UR_CC_PARAMS(UR_CC_X)
};
const unsigned int ur_cc_param_count =
	sizeof(ur_cc_param_table) / sizeof(ur_cc_param_table[0]);

const struct ur_cc_param_info ur_cc_swift_param_table[] = {
	UR_CC_SWIFT_PARAMS(UR_CC_X)
};
#undef UR_CC_X
const unsigned int ur_cc_swift_param_count =
	sizeof(ur_cc_swift_param_table) / sizeof(ur_cc_swift_param_table[0]);

/*
 * Profiles (docs/cc.md "Profiles"). "uroce" is the default: the column of
 * UR_CC_PARAMS, chosen by measurement in uroce-sim (docs/results.md) and
 * written for a 100 Gbit/s link; its rates follow the link's. "mlx5" is
 * the firmware's defaults (NVIDIA "DCQCN parameters": rpg_time_reset
 * 300 us, rpg_ai_rate 5 Mb/s, rpg_hai_rate 50 Mb/s, rpg_min_rate 1 Mb/s at
 * every link speed), for studies and for matching a hardware peer.
 */
#define UR_CC_MLX5 { .g_recip = 256, .alpha_timer_us = 55,                  \
		     .rate_timer_us = 300, .byte_counter = 10485760, .f = 5, \
		     .ai_mbps = 5, .hai_mbps = 50, .min_rate_mbps = 1,       \
		     .min_dec_pct = 50, .initial_alpha = 1024,               \
		     .cnp_interval_us = 50, .first_cnp_mbps = 0 }

const struct ur_cc_profile ur_cc_profiles[] = {
	{ .name = "uroce", .scales = true,
	  .p = {
#define UR_CC_X(env, f, def, lo, hi, src) .f = def,
		  UR_CC_PARAMS(UR_CC_X)
#undef UR_CC_X
	  },
	  .doc = "measured in uroce-sim; rates follow the link" },
	{ .name = "mlx5", .scales = false, .p = UR_CC_MLX5,
	  .doc = "mlx5 firmware defaults, the same at every link speed" },
};
const unsigned int ur_cc_profile_count =
	sizeof(ur_cc_profiles) / sizeof(ur_cc_profiles[0]);

const struct ur_cc_profile *ur_cc_profile_find(const char *name)
{
	for (unsigned int i = 0; i < ur_cc_profile_count; i++)
		if (!strcmp(ur_cc_profiles[i].name, name))
			return &ur_cc_profiles[i];
	return NULL;
}

/* A rate of the profile for a link of @link_mbps, within its row's range
 * (a rate that scales to nothing keeps 1 Mb/s). */
static uint32_t scale_rate(uint32_t v, uint64_t link_mbps, uint32_t hi)
{
	uint64_t r = ((uint64_t)v * link_mbps + UR_CC_REF_MBPS / 2) /
		     UR_CC_REF_MBPS;

	if (v && !r)
		r = 1;
	return r > hi ? hi : (uint32_t)r;
}

/* Swift's fields of @to from @from (a profile is DCQCN's only). */
static void swift_copy(struct ur_cc_params *to, const struct ur_cc_params *from)
{
	for (unsigned int i = 0; i < ur_cc_swift_param_count; i++) {
		size_t off = ur_cc_swift_param_table[i].off;

		memcpy((char *)to + off, (const char *)from + off,
		       sizeof(uint32_t));
	}
}

void ur_cc_profile_apply(struct ur_cc_params *p,
			 const struct ur_cc_profile *prof, uint64_t link_mbps)
{
	struct ur_cc_params keep = *p;

	*p = prof->p;
	p->algo = keep.algo;
	swift_copy(p, &keep);
	if (!prof->scales)
		return;
	if (!link_mbps) {
		/* Rates written for 100 Gbit/s could be above a slower link
		 * (a floor of 1 Gbit/s on a 1 Gbit/s port is no limiter):
		 * take mlx5's, which hardware uses at every speed. */
		const struct ur_cc_params m = UR_CC_MLX5;

		p->ai_mbps = m.ai_mbps;
		p->hai_mbps = m.hai_mbps;
		p->min_rate_mbps = m.min_rate_mbps;
		p->first_cnp_mbps = m.first_cnp_mbps;
		return;
	}
	p->ai_mbps = scale_rate(p->ai_mbps, link_mbps, 100000);
	p->hai_mbps = scale_rate(p->hai_mbps, link_mbps, 100000);
	p->min_rate_mbps = scale_rate(p->min_rate_mbps, link_mbps, 100000);
	p->first_cnp_mbps = scale_rate(p->first_cnp_mbps, link_mbps, 1000000);
}

void ur_cc_params_default(struct ur_cc_params *p)
{
	p->algo = UR_CC_DCQCN;
#define UR_CC_X(env, f, def, lo, hi, src) p->f = def;
	UR_CC_SWIFT_PARAMS(UR_CC_X)
#undef UR_CC_X
	ur_cc_profile_apply(p, &ur_cc_profiles[0], 0);
}

static int check_rows(const struct ur_cc_params *p,
		      const struct ur_cc_param_info *t, unsigned int n,
		      const struct ur_cc_param_info **bad)
{
	for (unsigned int i = 0; i < n; i++) {
		uint32_t v = *(const uint32_t *)((const char *)p + t[i].off);

		if (v < t[i].min || v > t[i].max) {
			if (bad)
				*bad = &t[i];
			return -ERANGE;
		}
	}
	return 0;
}

int ur_cc_params_check(const struct ur_cc_params *p,
		       const struct ur_cc_param_info **bad)
{
	if (bad)
		*bad = NULL;
	if (p->algo != UR_CC_NONE && p->algo != UR_CC_DCQCN &&
	    p->algo != UR_CC_SWIFT && p->algo != UR_CC_PREDICT &&
	    p->algo != UR_CC_DCQCN_RTT)
		return -EINVAL;
	/* DCQCN's rows always (as before Swift came); Swift's when it or
	 * predict runs (a switch to it comes through here again). */
	if (check_rows(p, ur_cc_param_table, ur_cc_param_count, bad))
		return -ERANGE;
	if (p->algo != UR_CC_SWIFT && p->algo != UR_CC_PREDICT)
		return 0;
	return check_rows(p, ur_cc_swift_param_table, ur_cc_swift_param_count,
			  bad);
}

const struct ur_cc_ops *ur_cc_ops_of(uint32_t algo)
{
	return algo == UR_CC_DCQCN     ? &ur_cc_dcqcn_ops
	       : algo == UR_CC_DCQCN_RTT ? &ur_cc_dcqcn_rtt_ops
	       : algo == UR_CC_SWIFT   ? &ur_cc_swift_ops
	       : algo == UR_CC_PREDICT ? &ur_cc_predict_ops
				       : &ur_cc_none_ops;
}

void ur_cc_init(struct ur_cc *cc, const struct ur_cc_params *p, uint64_t now)
{
	memset(cc, 0, sizeof(*cc));
	cc->p = *p;
	cc->ops = ur_cc_ops_of(p->algo);
	cc->ops->init(cc, now);
}

/* ---- rate estimator ------------------------------------------------------- */
#define UR_EST_WINDOW_NS 1000000ull  /* one sample per >= 1 ms */
#define UR_EST_IDLE_NS 50000000ull   /* a longer gap restarts the window */

void ur__rate_est_add(struct ur_rate_est *e, uint32_t bytes, uint64_t now)
{
	if (!e->start || now - e->start > UR_EST_IDLE_NS) {
		/* These bytes left (or were delivered) before the window. */
		e->start = now;
		e->bytes = 0;
		return;
	}
	e->bytes += bytes;
	if (now - e->start >= UR_EST_WINDOW_NS) {
		double s = (double)e->bytes * 8e9 / (double)(now - e->start);

		e->bps = e->bps ? (e->bps + s) / 2 : s;
		e->start = now;
		e->bytes = 0;
	}
}

/*
 * The rate now: the last full window's, or before the first one ends the
 * window so far, once it is UR_EST_PART_NS long. A 2 MB flow at 100 Gbit/s
 * lasts 170 us, far less than a window: without this its first CNP found
 * nothing measured and cut from an assumed 10 Gbit/s (docs/cc.md).
 */
#define UR_EST_PART_NS 5000ull

double ur__rate_est_bps(const struct ur_rate_est *e, uint64_t now)
{
	if (e->bps)
		return e->bps;
	if (!e->start || now < e->start + UR_EST_PART_NS || !e->bytes ||
	    now - e->start > UR_EST_IDLE_NS)
		return 0;
	return (double)e->bytes * 8e9 / (double)(now - e->start);
}

/* ---- token bucket --------------------------------------------------------- */
#define UR_PACE_QUANTUM_MAX 32768u /* bytes released per pacer wake-up, at most */

/* The time @bytes take at @bps; 0 for no limit (bps 0: 0/0 was NaN,
 * which UBSan flags converting to an integer). */
static uint64_t bytes_ns(uint64_t bytes, uint64_t bps)
{
	return bps ? (uint64_t)((double)bytes * 8e9 / (double)bps) : 0;
}

bool ur_pacer_ok(const struct ur_pacer *pc, uint64_t now, uint64_t *when)
{
	if (!pc->bps || pc->t <= now)
		return true;
	*when = pc->t;
	return false;
}

void ur_pacer_sent(struct ur_pacer *pc, uint32_t bytes, uint64_t now)
{
	uint64_t b = bytes_ns(pc->burst, pc->bps);

	if (!pc->bps)
		return;
	if (pc->t + b < now)
		pc->t = now - b; /* a full bucket holds `burst` bytes */
	pc->t += bytes_ns(bytes, pc->bps);
}

/*
 * Default bursts. A configured limit (QP or device) gets 4 ms at the rate,
 * at least 64 KiB: a software NIC on a busy host stalls for milliseconds
 * (scheduling, a window waiting for ACKs), and tokens that overflow a small
 * bucket are lost for good. With 1 ms, ib_write_bw under a 5 Gbit/s limit
 * reached 65-81 % of it on 2 CPUs; with 4 ms, 98 % (docs/cc.md). Congestion
 * control gets 200 us, at least 16 KiB, so the switch queue sees small
 * bursts.
 */
static uint64_t default_burst(uint64_t bps, bool limit)
{
	uint64_t b = (uint64_t)((double)bps * (limit ? 4e-3 : 200e-6) / 8);
	uint64_t lo = limit ? 65536 : 16384;

	return b < lo ? lo : b;
}

void ur_dev_set_tcs(struct ur_dev *dev, const struct ur_tcs_cfg *cfg)
{
	uint64_t burst = dev->rate_burst ? dev->rate_burst
					 : default_burst(dev->rate_bps, true);

	ur_tcs_init(&dev->tcs, cfg, dev->rate_bps, dev->rate_bps ? burst : 0);
}

/* ---- per QP ---------------------------------------------------------------- */
/* A new connection: no rate known, no loss seen. */
static void bw_reset(struct ur_qp *qp)
{
	struct ur_qp_cc *c = &qp->priv->cc;

	if (c->bw)
		ur__bw_init(c->bw);
	c->bw_lossy = false;
	c->bw_ecn = false;
}

/*
 * Pacing at the delivery rate (ur_bw.h): a requester whose peer holds
 * out-of-order requests (selective repeat negotiated), on one path, once
 * the peer reported a loss, and while no CE CNP came. A lossless path
 * never starts it (perftest on loopback, an ECN fabric's permutation);
 * an ECN-marking fabric's congestion control is DCQCN's or Swift's, so
 * the first CE CNP stops it for the connection. A standard peer (no
 * selective repeat) sees go-back-N as before. Sprayed QPs are left out:
 * the responder reports holes only on one path, so their frontier would
 * move with the cumulative ACK alone.
 */
bool ur__cc_bw_on(const struct ur_qp *qp)
{
	const struct ur_qp_priv *p = qp->priv;

	return p->cc.bw && p->cc.bw_lossy && !p->cc.bw_ecn && p->sr.p.pace &&
	       p->sr.tx_peer && !p->mp && qp->type == UR_QPT_RC;
}

/*
 * The peer reported a loss: the pacer starts. A STARTUP still on drains
 * at once: it filled the path's queue with up to a window unpaced (256
 * packets, 7.5 ms at 300 Mbit/s in test_sr sr_delay_loss5), which every
 * NAK and resend waits behind, and a loss that is random says nothing of
 * the plateau BBR's STARTUP looks for.
 */
static void bw_loss(struct ur_qp *qp)
{
	struct ur_qp_cc *c = &qp->priv->cc;

	if (!c->bw_lossy && c->bw)
		ur__bw_lossy(c->bw);
	c->bw_lossy = true;
}

/* Packets in flight past the receiver's known frontier. */
static uint32_t bw_beyond(const struct ur_qp *qp)
{
	int32_t d = ur_psn_diff(ur__req_cursor_psn(qp), qp->priv->cc.bw->front);

	return d > 0 ? (uint32_t)d : 0;
}

static void qcc_state_init(struct ur_qp *qp, const struct ur_cc_params *p,
			   uint64_t now)
{
	struct ur_qp_cc *c = &qp->priv->cc;

	ur__cc_idle(qp); /* a reset, a new algorithm: out of the backlog */
	ur_cc_init(&c->cc, p, now);
	memset(&c->pace, 0, sizeof(c->pace));
	c->stamped = 0;
	c->wait = false;
	c->cnp_sent = false;
}

void ur__cc_qp_init(struct ur_qp *qp, uint64_t now)
{
	struct ur_cc_params p = qp->dev->cc;

	/* A host that configured nothing gets the defaults (DCQCN on). */
	if (!p.g_recip || ur_cc_params_check(&p, NULL))
		ur_cc_params_default(&p);
	qcc_state_init(qp, &p, now);
	qp->priv->cc.limit_bps = 0;
	qp->priv->cc.limit_burst = 0;
	bw_reset(qp);
	/* UROCE_CC=auto: DCQCN until the peer shows it is uroce
	 * (ur_cc_neg.c). */
	qp->priv->cc.cc_auto = qp->dev->cc_auto;
	qp->priv->cc.peer_uroce = false;
	qp->priv->cc.neg_pending = false;
}

void ur__cc_qp_reset(struct ur_qp *qp)
{
	struct ur_qp_cc *c = &qp->priv->cc;
	struct ur_cc_params p = c->cc.p;

	/* A negotiated algorithm was this peer's: the next connection
	 * starts from the device's again. */
	if (c->cc_auto && c->peer_uroce)
		p.algo = qp->dev->cc.algo;
	c->peer_uroce = false;
	c->neg_pending = false;
	qcc_state_init(qp, &p, 0);
	c->limit_bps = 0;
	c->limit_burst = 0;
	bw_reset(qp);
}

/*
 * A new algorithm mid-transfer (auto's switch, the owner's choice): one
 * with a window (Swift's first is 8 packets) may find more in flight
 * than it lets be, sent under DCQCN, which asks for an ACK only at the
 * end of a message and every UR_ACKREQ_EVERY PSNs. Nothing more may leave
 * and nothing in flight need bring the ACK that would let it: the
 * transport timer would (test_cc_neg midflight). Probe: the newest PSN
 * again with AckReq, whose duplicate the responder acknowledges (C9-105).
 */
static void strand_check(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	int32_t out = ur_psn_diff(ur__req_cursor_psn(qp), p->comp.psn);

	if (qp->type == UR_QPT_RC && out > 0 &&
	    (uint32_t)out >= ur__cc_window(qp)) {
		qp->dev->cnt.cc_switch_probe++;
		ur__req_probe(qp, now);
	}
}

int ur_qp_set_cc(struct ur_qp *qp, const struct ur_cc_params *p, uint64_t now)
{
	int rc = ur_cc_params_check(p, NULL);

	if (rc)
		return rc;
	qcc_state_init(qp, p, now);
	strand_check(qp, now);
	/* The owner chose: no negotiation for this QP. */
	qp->priv->cc.cc_auto = false;
	qp->priv->cc.neg_pending = false;
	return 0;
}

void ur__cc_switch(struct ur_qp *qp, const struct ur_cc_params *p,
		   uint64_t now)
{
	qcc_state_init(qp, p, now);
	strand_check(qp, now);
}

bool ur_qp_cc_negotiated(const struct ur_qp *qp)
{
	return qp->priv->cc.cc_auto && qp->priv->cc.peer_uroce;
}

void ur_qp_get_cc(const struct ur_qp *qp, struct ur_cc_params *p)
{
	*p = qp->priv->cc.cc.p;
}

int ur_qp_set_rate_limit(struct ur_qp *qp, uint32_t kbps, uint32_t burst)
{
	struct ur_qp_cc *c = &qp->priv->cc;

	c->limit_bps = (uint64_t)kbps * 1000;
	c->limit_burst = burst;
	c->pace.bps = 0; /* recomputed at the next send */
	qp->priv->attr.rate_limit = kbps;
	return 0;
}

uint64_t ur_qp_cc_rate(const struct ur_qp *qp)
{
	const struct ur_cc *cc = &qp->priv->cc.cc;

	return cc->ops->rate(cc);
}

uint32_t ur_qp_cc_window(const struct ur_qp *qp)
{
	const struct ur_cc *cc = &qp->priv->cc.cc;

	return cc->ops->window ? cc->ops->window(cc) : 0;
}

uint64_t ur_qp_cc_srtt(const struct ur_qp *qp)
{
	const struct ur_cc *cc = &qp->priv->cc.cc;

	return cc->ops == &ur_cc_dcqcn_rtt_ops ? (uint64_t)cc->u.dcqcn.srtt
					       : 0;
}

/*
 * The delivery-rate pacer's bucket: UR_BW_BURST_NS at the rate, at least
 * 4 packets, and twice the host's recent lateness in waking from the
 * pacer's waits, up to UR_BW_BURST_MAX_NS: a host that wakes late sends
 * what accrued meanwhile. On this VM at load 10 a 1 ms bucket lost the
 * tokens of wake-ups 0.1-9 ms late: a 5 % bed run waited 3.7 s on the
 * pacer, 2.3 s of it past the times it asked for (a quantum per late
 * wake-up). A fixed 4 ms cost virtual time, where hosts wake on time,
 * 0.03-0.05 of the link at 5 % (bursts into the shaper's queue, ahead
 * of NAKs and resends).
 */
#define UR_BW_BURST_NS 1000000ull
#define UR_BW_BURST_MAX_NS 8000000ull

static uint64_t bw_burst(const struct ur_qp *qp, uint64_t bps)
{
	uint64_t ns = 2 * qp->priv->cc.late_ns, b;
	uint64_t lo = 4ull * ur_qp_req_mtu(qp);

	if (ns < UR_BW_BURST_NS)
		ns = UR_BW_BURST_NS;
	if (ns > UR_BW_BURST_MAX_NS)
		ns = UR_BW_BURST_MAX_NS;
	b = (uint64_t)((double)bps * (double)ns / 8e9);
	return b < lo ? lo : b;
}

void ur__cc_woke(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_cc *c = &qp->priv->cc;

	if (c->wait && now >= c->wait_until) {
		uint64_t l = now - c->wait_until, was = c->late_ns;

		/* the largest lately: a sixteenth off per wake-up */
		c->late_ns = l > was ? l : was - was / 16;
		if (c->late_ns / 250000 != was / 250000)
			c->pace.bps = 0; /* the bucket: at the next send */
	}
	c->wait = false;
}

/* The pacer's rate: the lower of the algorithm's, the delivery-rate
 * pacer's (ur__cc_bw_on) and the QP's limit. */
static void pace_update(struct ur_qp *qp)
{
	struct ur_qp_cc *c = &qp->priv->cc;
	uint64_t bps = c->cc.ops->rate(&c->cc), burst, bw = 0;

	if (ur__cc_bw_on(qp))
		bw = ur__bw_rate(c->bw);
	if (bw && (!bps || bw < bps))
		bps = bw;
	if (c->limit_bps && (!bps || c->limit_bps < bps))
		bps = c->limit_bps;
	if (bps == c->pace.bps)
		return;
	if (bps == c->limit_bps)
		burst = c->limit_burst ? c->limit_burst : default_burst(bps, true);
	else if (bps == bw)
		burst = bw_burst(qp, bps);
	else
		burst = default_burst(bps, false);
	if (burst < 2 * ur_qp_req_mtu(qp))
		burst = 2 * ur_qp_req_mtu(qp);
	c->pace.bps = bps;
	c->pace.burst = burst;
}

bool ur__cc_may_send(struct ur_qp *qp, unsigned int prio, uint64_t now)
{
	struct ur_qp_cc *c = &qp->priv->cc;
	struct ur_dev *dev = qp->dev;
	uint64_t when = 0;
	bool ok;

	c->cc.ops->on_timer(&c->cc, now);
	if (ur__cc_bw_on(qp))
		ur__bw_tick(c->bw, bw_beyond(qp), now);
	pace_update(qp);
	ok = ur_pacer_ok(&c->pace, now, &when);
	if (dev->tcs.on && dev->rate_bps) {
		/* Traffic classes: the scheduler shares the device's bucket
		 * (ur_tcs.h). */
		uint64_t t = 0;

		if (!ur_tcs_may(&dev->tcs, prio, ur_qp_req_mtu(qp), now, &t)) {
			ok = false;
			if (t > when)
				when = t;
			(&dev->cnt.tx_prio0_held)[prio & 7]++;
			if (c->tcs_in != prio + 1) {
				ur__cc_idle(qp);
				ur_tcs_backlog(&dev->tcs, prio, true, now);
				c->tcs_in = (uint8_t)(prio + 1);
			}
		}
	} else if (dev->rate_bps) {
		uint64_t t = atomic_load_explicit(&dev->rate_t,
						  memory_order_relaxed);

		if (t > now) {
			ok = false;
			if (t > when)
				when = t;
		}
	}
	if (!ok) {
		/* Wait for a quantum of tokens, not one packet's: a software
		 * NIC pays a wake-up and a system call per release, and a
		 * release of several packets leaves as one GSO send. The
		 * average rate is unchanged while the quantum is well inside
		 * the bucket. */
		uint64_t q = c->pace.burst / 4;

		if (q > UR_PACE_QUANTUM_MAX)
			q = UR_PACE_QUANTUM_MAX;
		if (c->pace.bps && q > ur_qp_req_mtu(qp))
			when += bytes_ns(q - ur_qp_req_mtu(qp), c->pace.bps);
		c->wait = true;
		c->wait_until = when;
		dev->cnt.tx_paced++;
		qp->cnt.tx_paced++;
	}
	return ok;
}

void ur__cc_sq_empty(struct ur_qp *qp)
{
	struct ur_qp_cc *c = &qp->priv->cc;

	if (c->bw && c->bw->started)
		ur__bw_app_limited(c->bw, bw_beyond(qp));
}

void ur__cc_idle(struct ur_qp *qp)
{
	struct ur_qp_cc *c = &qp->priv->cc;

	if (!c->tcs_in)
		return;
	ur_tcs_backlog(&qp->dev->tcs, c->tcs_in - 1u, false, 0);
	c->tcs_in = 0;
}

/*
 * Send times for a delay-based algorithm (ops->on_delay): a slot per PSN
 * mod UR_CC_STAMPS, taken by a first send when free (empty, or its PSN
 * acknowledged already). A resend clears its PSN's slot: the ACK could be
 * the first send's or the resend's (Karn's rule, RFC 6298 section 3). With
 * more than UR_CC_STAMPS packets in flight some PSNs go unstamped; the ACK
 * that covers a stamped one measures the RTT.
 */
static void stamp(struct ur_qp *qp, uint32_t psn, bool resend, uint64_t now)
{
	struct ur_qp_cc *c = &qp->priv->cc;
	uint32_t i = psn % UR_CC_STAMPS;
	uint64_t bit = 1ull << i;
	bool mine = (c->stamped & bit) && c->stamp[i].psn == psn;

	if (resend) {
		if (mine)
			c->stamped &= ~bit;
		return;
	}
	if (mine || !(c->stamped & bit) ||
	    ur_psn_diff(c->stamp[i].psn, qp->priv->comp.psn) < 0) {
		c->stamp[i].psn = psn;
		c->stamp[i].t = now;
		c->stamped |= bit;
	}
}

void ur__cc_sent(struct ur_qp *qp, unsigned int prio, uint32_t bytes,
		 uint32_t psn, bool resend, uint64_t now)
{
	struct ur_qp_cc *c = &qp->priv->cc;
	struct ur_dev *dev = qp->dev;

	if (c->cc.ops->on_delay && qp->type == UR_QPT_RC)
		stamp(qp, psn, resend, now);
	if (qp->type == UR_QPT_RC && qp->priv->sr.tx_peer &&
	    qp->priv->sr.p.pace) {
		if (!c->bw && (c->bw = malloc(sizeof(*c->bw))))
			ur__bw_init(c->bw);
		if (c->bw)
			ur__bw_sent(c->bw, psn, bytes, resend, now);
	}
	c->cc.ops->on_sent(&c->cc, bytes, now);
	ur_pacer_sent(&c->pace, bytes, now);
	if (dev->tcs.on && dev->rate_bps) {
		ur_tcs_sent(&dev->tcs, prio, bytes, now);
	} else if (dev->rate_bps) {
		uint64_t b = bytes_ns(dev->rate_burst ? dev->rate_burst
						      : default_burst(dev->rate_bps, true),
				      dev->rate_bps);
		uint64_t t = atomic_load(&dev->rate_t), n;

		do {
			n = t + b < now ? now - b : t;
			n += bytes_ns(bytes, dev->rate_bps);
		} while (!atomic_compare_exchange_weak(&dev->rate_t, &t, n));
	}
}

void ur__cc_acked(struct ur_qp *qp, uint32_t from, uint32_t pkts,
		  uint64_t now)
{
	struct ur_cc *cc = &qp->priv->cc.cc;

	(void)from;
	cc->ops->on_ack(cc, pkts * ur_qp_req_mtu(qp), now);
	if (qp->priv->cc.bw)
		ur__bw_front(qp->priv->cc.bw, qp->priv->comp.psn, now);
}

/*
 * auto between uroce ends (a QP of an auto device running dcqcn-rtt):
 * a hello round trip (ur_cc_neg.c: before any data of the QP) below
 * AUTO_RTT_US hands the QP to Swift, with the device's parameters for
 * it. Such an RTT is a fabric's (1 us hops: the simulator's idle 12 us),
 * whose excess over the base is the switches' queue, Swift's signal;
 * Swift meets issue 44's simulator targets that dcqcn-rtt misses
 * (docs/results.md "The default in the simulator"). A software NIC's on
 * a loaded host is its wake-ups (this VM's wire bed: 140 us-9 ms), where
 * Swift moved 0.29-0.61 of the port (docs/cc.md): dcqcn-rtt stays.
 * Swift here compares the whole RTT with its target, as the paper's
 * (BASE_WIN_MS 0): a fabric's base is below the target, and a base
 * taken with another flow's queue standing made a latecomer take the
 * link (test_sim dcqcn_fair: 24.6 Gbit/s against 0.0; 12.3 / 12.3 with
 * no base). The
 * data's RTT samples are not asked: the first ones already carry the
 * QP's own queue (a 64:1 incast's reach 110 us in the simulator).
 */
#define AUTO_SS_EXIT_MILLI 125
#define AUTO_INIT_CWND 2

void ur_cc_auto_swift(struct ur_cc_params *p)
{
	p->algo = UR_CC_SWIFT;
	p->base_win_ms = 0;
	/* Slow start ends on the RTT's rise over the QP's least (cc_swift.c
	 * ss_delay) at an eighth of the target: at a quarter the long flows'
	 * overshoot put WebSearch 50 %'s p99 slowdown < 10 KB at 0.60 of
	 * DCQCN's (seed 1; 0.33 at an eighth, permutation 1.03x cc none
	 * against 1.02x; bench/results/2026-12-07-cc10.md). */
	p->ss_exit_milli = AUTO_SS_EXIT_MILLI;
	/* The first window, sent before any RTT sample says how many share
	 * the port: 64 QPs x 8 packets x 4 KiB are 2 MiB on one port at
	 * once, 168 us of queue at 100 Gbit/s, and cuts once per (that
	 * long) RTT took 310 us to bring it under 480 KB: the 64:1 incast's
	 * queue p99 was 1233 KB at k=16 with PFC on, 1.08x DCQCN's; 2
	 * packets: 386 KB (0.34x), permutation 1.09x cc none against 1.03x
	 * (bench/results/2026-12-07-cc11.md). */
	p->init_cwnd = AUTO_INIT_CWND;
}

void ur__cc_auto_pick(struct ur_qp *qp, uint64_t rtt, uint64_t now)
{
	struct ur_qp_cc *c = &qp->priv->cc;
	struct ur_cc_params p = c->cc.p;

	if (!rtt || !c->cc_auto || c->cc.ops != &ur_cc_dcqcn_rtt_ops ||
	    rtt >= (uint64_t)p.auto_rtt_us * 1000)
		return;
	ur_cc_auto_swift(&p);
	if (ur_cc_params_check(&p, NULL))
		return;
	ur__cc_switch(qp, &p, now);
	qp->dev->cnt.cc_auto_swift++;
}

/* Called as the completer moves the oldest unacknowledged PSN, before the
 * requester sends what the ACK lets it (which could take the slots). */
void ur__cc_delay(struct ur_qp *qp, uint32_t from, uint32_t pkts,
		  uint64_t now)
{
	struct ur_qp_cc *c = &qp->priv->cc;
	struct ur_cc *cc = &c->cc;
	uint32_t n = pkts < UR_CC_STAMPS ? pkts : UR_CC_STAMPS;
	uint64_t rtt = 0, before = cc->cuts;
	/* With LATE_MILLI the RTT ends at the host's receive time (the
	 * target covers the rest, cc_swift.c); without, at now, as before. */
	uint64_t at = c->ack_rx && cc->p.late_milli ? c->ack_rx : now;
	bool first = true;

	if (!cc->ops->on_delay)
		return;
	/* The newest stamped PSN of [from, from + pkts): the ACK answers
	 * it, so its RTT holds the least waiting behind other packets. A
	 * send stamped after @now (a host whose clock for this ACK was read
	 * before a send on another thread) gives no sample: the RTT it
	 * would give is too short by the clock's age, and a windowed
	 * minimum (Swift's base) would keep it for its whole window. The RTT
	 * ends when the host received the ACK (its kernel's timestamp), and
	 * what it waited for the engine is told apart (cc->late). */
	for (uint32_t k = 1; k <= n; k++) {
		uint32_t psn = ur_psn_add(from, pkts - k);
		uint32_t i = psn % UR_CC_STAMPS;

		if (!(c->stamped & (1ull << i)) || c->stamp[i].psn != psn)
			continue;
		if (first && at > c->stamp[i].t)
			rtt = at - c->stamp[i].t;
		first = false;
		c->stamped &= ~(1ull << i);
	}
	cc->late = rtt ? now - at : 0;
	cc->ops->on_delay(cc, pkts, rtt, now);
	if (qp->dev->cc_trace && cc->ops->features) {
		double f[UR_CC_TRACE_NF];
		unsigned int nf = cc->ops->features(cc, f);

		if (nf)
			qp->dev->cc_trace(qp->dev, qp, f, nf, now);
	}
	if (cc->cuts != before) {
		qp->dev->cnt.cc_cuts++;
		qp->cnt.cc_cuts++;
	}
}

void ur__cc_loss(struct ur_qp *qp, bool timeout, uint64_t now)
{
	struct ur_cc *cc = &qp->priv->cc.cc;
	uint64_t before = cc->cuts;

	bw_loss(qp);
	if (!cc->ops->on_loss)
		return;
	cc->ops->on_loss(cc, timeout, now);
	if (cc->cuts != before) {
		qp->dev->cnt.cc_cuts++;
		qp->cnt.cc_cuts++;
	}
}

void ur__cc_msg(struct ur_qp *qp, uint32_t pkts)
{
	struct ur_cc *cc = &qp->priv->cc.cc;

	if (cc->ops->on_msg)
		cc->ops->on_msg(cc, pkts);
}

/*
 * The responder acknowledges only when asked (AckReq, C9-98; coalesced
 * ACKs, 9.7.5.1.1), and the requester asks at the end of a message, every
 * UR_ACKREQ_EVERY PSNs (UR_CC_ACK_EVERY for a delay-based algorithm) and
 * when the window fills. A pacer at a low rate (DCQCN near its floor:
 * 1 Mbit/s is a 1 KiB packet per 8 ms, and the pacer releases a quantum
 * of tokens at a time) holds those packets so far apart that what is in
 * flight stays unacknowledged past the transport timer, which then fires
 * with nothing lost (a probe, then go-back-N; test_cc_neg midflight).
 * Ask on every packet once UR_ACKREQ_EVERY packets and a quantum take half
 * the timer at the pacer's rate: at most one ACK per packet, at a rate
 * where that costs nothing.
 */
bool ur__cc_ack_wanted(const struct ur_qp *qp)
{
	const struct ur_qp_cc *c = &qp->priv->cc;
	uint64_t rto = ur_timeout_ns(qp->priv->attr.timeout);
	uint64_t q = c->pace.burst / 4;

	if (!c->pace.bps || !rto)
		return false;
	if (q > UR_PACE_QUANTUM_MAX)
		q = UR_PACE_QUANTUM_MAX;
	q += (uint64_t)UR_ACKREQ_EVERY * ur_qp_req_mtu(qp);
	return bytes_ns(q, c->pace.bps) >= rto / 2;
}

uint32_t ur__cc_window(const struct ur_qp *qp)
{
	const struct ur_cc *cc = &qp->priv->cc.cc;
	uint32_t w = cc->ops->window ? cc->ops->window(cc) : UINT32_MAX;

	/* The delivery-rate pacer bounds what is past the frontier; what
	 * the responder holds behind its holes is not in the path, and
	 * recovery needs the window to cover it (a smaller window starved
	 * it: bench/results/2026-12-07-loss8.md). */
	if (ur__cc_bw_on(qp)) {
		uint32_t cap = ur__bw_cap(qp->priv->cc.bw);
		int32_t held = ur_psn_diff(qp->priv->cc.bw->front,
					   qp->priv->comp.psn);

		if (cap != UINT32_MAX) {
			cap += held > 0 ? (uint32_t)held : 0;
			if (cap < w)
				w = cap;
		}
	}
	return w;
}

/* Reaction point: a CNP for this QP (A17.9.3). A spraying QP's peer names
 * the marked request's PSN (the selective-repeat bit on the CNP; docs/wire.md
 * "Spraying"), so that its path sheds weight. */
void ur__cc_rx_cnp(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now)
{
	struct ur_cc *cc = &qp->priv->cc.cc;
	uint64_t before = cc->cuts;

	if (ur_bth_ext_sr(pkt->bth) && pkt->payload_len >= 1 &&
	    (pkt->payload[0] & UR_CNP_LATE)) {
		/* A late notice (ur_sr.c): path feedback, not congestion. */
		qp->dev->cnt.rx_sr_late++;
		if (qp->priv->mp)
			ur__mp_late(qp->priv->mp, pkt->h.psn);
		return;
	}
	if (ur_bth_ext_sr(pkt->bth) && pkt->payload_len >= 4 &&
	    (pkt->payload[0] & UR_CNP_HEARD)) {
		/* A path notice (ur_sr.c): a port of ours was heard. */
		qp->dev->cnt.rx_sr_heard++;
		if (qp->priv->mp)
			ur__mp_heard(qp->priv->mp, ur_get16(pkt->payload + 2));
		return;
	}
	if (ur_bth_ext_sr(pkt->bth) && pkt->payload_len >= 6 &&
	    (pkt->payload[0] & UR_CNP_HOLE)) {
		/* A hole report (ur_sr.c "holes"): these PSNs are lost. */
		uint32_t n = ur_get16(pkt->payload + 4);

		qp->dev->cnt.rx_sr_hole++;
		if (qp->priv->mp)
			ur__mp_loss(qp->priv->mp, pkt->h.psn);
		/* The request after the hole arrived: the frontier. */
		bw_loss(qp);
		if (qp->priv->cc.bw)
			ur__bw_front(qp->priv->cc.bw,
				     ur_psn_add(pkt->h.psn, n + 1), now);
		ur__req_resend_hole(qp, pkt->h.psn, n, now);
		if (ur__cc_bw_on(qp))
			ur__req_progress(qp, now); /* the frontier freed some */
		return;
	}
	if (ur_bth_ext_sr(pkt->bth) && pkt->payload_len >= 4 &&
	    (pkt->payload[0] & UR_CNP_SILENT)) {
		qp->dev->cnt.rx_sr_heard++;
		if (qp->priv->mp)
			ur__mp_silent(qp, ur_get16(pkt->payload + 2), now);
		return;
	}
	qp->cnt.rx_cnp++;
	qp->priv->cc.bw_ecn = true; /* the fabric marks: its cc paces */
	if (qp->priv->mp && ur_bth_ext_sr(pkt->bth))
		ur__mp_ecn(qp->priv->mp, pkt->h.psn);
	cc->ops->on_cnp(cc, now);
	if (cc->cuts != before) {
		qp->dev->cnt.cc_cuts++;
		qp->cnt.cc_cuts++;
	}
}

/* Notification point: a request arrived with CE (A17.9.2). The CNP goes to
 * the sender's QP, at most once per interval per QP. Its BTH PSN is
 * reserved (0); towards a requester that speaks selective repeat it names
 * the marked request, with the selective-repeat bit set (docs/wire.md
 * "Spraying"), so that a spraying requester knows the path. */
void ur__cc_rx_ce(struct ur_qp *qp, uint32_t psn, uint64_t now)
{
	struct ur_qp_cc *c = &qp->priv->cc;
	uint64_t gap = (uint64_t)c->cc.p.cnp_interval_us * 1000;
	struct ur_txhdr h = {
		.opcode = UR_OP_CNP,
		.becn = true,
		.dqpn = qp->priv->attr.dest_qp_num,
	};
	struct ur_pktbuf *b;

	qp->dev->cnt.rx_ecn_ce++;
	qp->cnt.rx_ecn_ce++;
	if (qp->type == UR_QPT_UD)
		return;
	if (c->cnp_sent && now - c->last_cnp < gap)
		return;
	if (qp->type == UR_QPT_RC && qp->priv->sr.p.enable &&
	    qp->priv->sr.rx_peer)
		h.psn = psn;
	b = ur__tx_alloc(qp, h.opcode, UR_CNP_PAYLOAD_LEN);
	if (!b)
		return;
	memset(ur__tx_payload(b, h.opcode), 0, UR_CNP_PAYLOAD_LEN);
	c->last_cnp = now;
	c->cnp_sent = true;
	qp->dev->cnt.tx_cnp++;
	qp->cnt.tx_cnp++;
	ur__tx_send(qp, b, &h, UR_CNP_PAYLOAD_LEN, NULL);
}

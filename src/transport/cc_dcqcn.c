// SPDX-License-Identifier: MIT
/*
 * DCQCN reaction point (Zhu et al., "Congestion Control for Large-Scale
 * RDMA Deployments", SIGCOMM 2015, section 3.1 and Figure 5), with the
 * parameters of mlx5 firmware where the paper leaves them open
 * (docs/cc.md cites each default).
 *
 *   CNP:          RT = RC; RC = RC (1 - alpha/2); alpha = (1-g) alpha + g;
 *                 timer, byte counter and both stage counts restart.
 *   alpha timer:  every K without a CNP, alpha = (1-g) alpha.
 *   rate events:  every T (timer) and every B bytes sent (byte counter);
 *                 while both stage counts are <= F: fast recovery;
 *                 one above F: additive increase RT += R_AI;
 *                 both above F: hyper increase RT += i R_HAI
 *                 (i = min count - F); then RC = (RT + RC) / 2.
 *
 * The limiter starts inactive: a QP sends as fast as the path takes it
 * until its first CNP, which cuts from the rate the path was delivering
 * (ACKed bytes) rather than from an assumed line rate. When recovery brings
 * RC above the most the path ever delivered, the limiter switches off again.
 * Timers are evaluated lazily (on_timer catches up every expiry up to now in
 * order), so a QP with nothing to send costs no wake-ups.
 *
 * dcqcn-rtt (UR_CC_DCQCN_RTT, between uroce ends): the same, with K and T
 * at least the QP's smoothed RTT (RFC 6298 srtt of the requester's own
 * samples, as Swift takes them). The paper's K = 55 us and T are "about
 * an RTT" of its fabric; a software NIC's RTT is the hosts' (ms on a
 * loaded machine), where alpha decays to nothing between CNPs that come
 * ms apart and recovery outruns the feedback (docs/cc.md "Lab timers":
 * the lab set 3 ms by hand). It also cuts at most once per srtt (a CNP
 * between raises alpha only), and its byte counter B is at least 32 srtts
 * of bytes at the current rate (b_bytes).
 */
#include <string.h>

#include "ur_cc.h"

#define MBIT 1e6
#define DCQCN_RTT_BASE_WIN_NS 1000000000ull /* the trace's base RTT: 1 s */
#define DCQCN_FALLBACK_BPS 10e9 /* first CNP with nothing measured */
#define DCQCN_MAX_BPS 1e12

static void dq_init(struct ur_cc *cc, uint64_t now)
{
	struct ur_dcqcn *d = &cc->u.dcqcn;

	(void)now;
	memset(d, 0, sizeof(*d));
	d->alpha = cc->p.initial_alpha / 1024.0;
}

static double min_rate(const struct ur_cc *cc)
{
	return cc->p.min_rate_mbps * MBIT;
}

/* One rate-increase event (timer or byte counter). */
static void increase(struct ur_cc *cc)
{
	struct ur_dcqcn *d = &cc->u.dcqcn;
	uint32_t f = cc->p.f;

	if (d->t_stage > f && d->b_stage > f) {
		uint32_t i = (d->t_stage < d->b_stage ? d->t_stage : d->b_stage) - f;

		d->rt += i * (cc->p.hai_mbps * MBIT); /* hyper increase */
	} else if (d->t_stage > f || d->b_stage > f) {
		d->rt += cc->p.ai_mbps * MBIT; /* additive increase */
	} /* else fast recovery: RT unchanged */
	if (d->rt > DCQCN_MAX_BPS)
		d->rt = DCQCN_MAX_BPS;
	d->rc = (d->rt + d->rc) / 2;
	/* Back above what the path delivered: the limiter is off. */
	if ((d->line > 0 && d->rc >= d->line) || d->rc >= DCQCN_MAX_BPS)
		d->active = false;
}

/* K and T in ns: the parameters, or (dcqcn-rtt) at least one srtt.
 * The base RTT instead of the srtt (which carries the queue) was tried
 * in the simulator's fabric (cc9): permutation FCT 554 us against the
 * srtt's 724 (cc none 384) and 15465 drops on the 64:1 incast against
 * 13610; auto runs Swift there instead (ur_cc.c ur__cc_auto_pick). */
static uint64_t k_ns(const struct ur_cc *cc)
{
	uint64_t k = (uint64_t)cc->p.alpha_timer_us * 1000;

	return cc->u.dcqcn.srtt > (double)k ? (uint64_t)cc->u.dcqcn.srtt : k;
}

static uint64_t t_ns(const struct ur_cc *cc)
{
	uint64_t t = (uint64_t)cc->p.rate_timer_us * 1000;

	return cc->u.dcqcn.srtt > (double)t ? (uint64_t)cc->u.dcqcn.srtt : t;
}

static uint64_t dq_timer(struct ur_cc *cc, uint64_t now)
{
	struct ur_dcqcn *d = &cc->u.dcqcn;
	uint64_t k = k_ns(cc);
	uint64_t t = t_ns(cc);
	double g = 1.0 / cc->p.g_recip;

	for (unsigned int n = 0; d->active && n < 1000000; n++) {
		if (d->alpha_next <= d->rate_next && d->alpha_next <= now) {
			d->alpha *= 1 - g;
			if (d->alpha < 1e-9)
				d->alpha = 0;
			d->alpha_next += k;
		} else if (d->rate_next <= now) {
			d->t_stage++;
			d->rate_next += t;
			increase(cc);
		} else {
			break;
		}
	}
	if (!d->active)
		return UINT64_MAX;
	return d->alpha_next < d->rate_next ? d->alpha_next : d->rate_next;
}

/*
 * The byte counter B in bytes: the parameter, or (dcqcn-rtt) at least
 * DCQCN_RTT_B_SRTTS srtts' worth at the current rate. The paper's B is
 * 10 MB at 40 Gbit/s, 2 ms or ~36 rate timers of 55 us: hyper increase
 * needs many RTTs without a CNP. Our 64 KiB (a 100 Gbit/s fabric's 5 us)
 * fired every ~5 ms at 100 Mbit/s, several times per srtt of a host: with
 * T at an srtt of 0.5 ms once the queue drained, both stages passed F
 * within 1.5 ms and hyper increase (i x 50 Mbit/s per stage) refilled the
 * port past the senders' windows, which then held a window-deep queue
 * (test_dcqcn engine_port; bench/results/2026-12-07-cc7.md).
 */
#define DCQCN_RTT_B_SRTTS 32

static uint64_t b_bytes(const struct ur_cc *cc)
{
	const struct ur_dcqcn *d = &cc->u.dcqcn;
	double b = DCQCN_RTT_B_SRTTS * d->srtt * d->rc / 8e9;

	return b > (double)cc->p.byte_counter ? (uint64_t)b
					      : cc->p.byte_counter;
}

static void line_update(struct ur_dcqcn *d, double bps)
{
	if (bps > d->line)
		d->line = bps;
}

static void dq_sent(struct ur_cc *cc, uint32_t bytes, uint64_t now)
{
	struct ur_dcqcn *d = &cc->u.dcqcn;

	ur__rate_est_add(&d->sent, bytes, now);
	if (!d->acked.bps)
		line_update(d, d->sent.bps); /* no ACKs (UC): what left */
	if (!d->active)
		return;
	d->bytes += bytes;
	while (d->active && d->bytes >= b_bytes(cc)) {
		d->bytes -= b_bytes(cc);
		d->b_stage++;
		increase(cc);
	}
}

static void dq_ack(struct ur_cc *cc, uint32_t bytes, uint64_t now)
{
	struct ur_dcqcn *d = &cc->u.dcqcn;

	ur__rate_est_add(&d->acked, bytes, now);
	line_update(d, d->acked.bps);
}

static void dq_cnp(struct ur_cc *cc, uint64_t now)
{
	struct ur_dcqcn *d = &cc->u.dcqcn;
	double g = 1.0 / cc->p.g_recip, rc, floor;

	dq_timer(cc, now);
	/* dcqcn-rtt: the last cut shows at the sender one RTT later; a
	 * CNP before that answers packets sent at the old rate (the
	 * notification point sends one per cnp_interval_us, 10 us, and the
	 * hosts' RTT is milliseconds: a run of cuts for one queue). It
	 * raises alpha, which the next cut uses (as Swift cuts once per RTT;
	 * bench/results/2026-12-07-cc5.md). */
	if (d->active && d->srtt && (double)(now - d->cut_at) < d->srtt) {
		d->alpha = (1 - g) * d->alpha + g;
		d->alpha_next = now + k_ns(cc);
		return;
	}
	if (!d->active) {
		/* Start from what the path delivered, not an assumed rate;
		 * a first-CNP rate below it sets both RC and RT (mlx5
		 * rate_to_set_on_first_cnp: "rates (current, target)"). */
		double acked = ur__rate_est_bps(&d->acked, now);
		double sent = ur__rate_est_bps(&d->sent, now);

		rc = acked ? acked : sent ? sent
		   : d->line ? d->line : DCQCN_FALLBACK_BPS;
		if (cc->p.first_cnp_mbps && cc->p.first_cnp_mbps * MBIT < rc)
			rc = cc->p.first_cnp_mbps * MBIT;
		d->rc = rc;
		d->active = true;
	}
	d->rt = d->rc;
	rc = d->rc * (1 - d->alpha / 2);
	floor = d->rc * (cc->p.min_dec_pct / 100.0);
	if (rc < floor)
		rc = floor;
	if (rc < min_rate(cc))
		rc = min_rate(cc);
	d->rc = rc;
	d->alpha = (1 - g) * d->alpha + g;
	d->t_stage = d->b_stage = 0;
	d->bytes = 0;
	d->alpha_next = now + k_ns(cc);
	d->rate_next = now + t_ns(cc);
	d->cut_at = now;
	cc->cuts++;
}

/* dcqcn-rtt: the RTT samples (ur_cc.c stamps the PSNs) smoothed as
 * RFC 6298 2.2-2.3 srtt (gain 1/8); they only lengthen K and T. */
static void dq_delay(struct ur_cc *cc, uint32_t pkts, uint64_t rtt,
		     uint64_t now)
{
	struct ur_dcqcn *d = &cc->u.dcqcn;

	(void)pkts;
	d->rtt = rtt;
	if (!rtt)
		return;
	d->srtt = d->srtt ? d->srtt + ((double)rtt - d->srtt) / 8
			  : (double)rtt;
	ur__win_min_add(&d->base, DCQCN_RTT_BASE_WIN_NS, rtt, now);
}

static unsigned int dq_features(const struct ur_cc *cc, double *f)
{
	const struct ur_dcqcn *d = &cc->u.dcqcn;

	if (!d->rtt)
		return 0;
	f[UR_DCQCN_T_RATE] = d->active ? d->rc / 1e9 : 0;
	f[UR_DCQCN_T_RTT] = (double)d->rtt / 1e3;
	f[UR_DCQCN_T_SRTT] = d->srtt / 1e3;
	f[UR_DCQCN_T_BASE] = (double)ur__win_min(&d->base) / 1e3;
	f[UR_DCQCN_T_STRETCH] = (double)t_ns(cc) / 1e3;
	f[UR_DCQCN_T_ALPHA] = d->alpha;
	return UR_DCQCN_T_N;
}

static uint64_t dq_rate(const struct ur_cc *cc)
{
	const struct ur_dcqcn *d = &cc->u.dcqcn;

	return d->active ? (uint64_t)d->rc : 0;
}

const struct ur_cc_ops ur_cc_dcqcn_ops = {
	.name = "dcqcn",
	.init = dq_init,
	.on_sent = dq_sent,
	.on_ack = dq_ack,
	.on_cnp = dq_cnp,
	.on_timer = dq_timer,
	.rate = dq_rate,
};

const struct ur_cc_ops ur_cc_dcqcn_rtt_ops = {
	.name = "dcqcn-rtt",
	.init = dq_init,
	.on_sent = dq_sent,
	.on_ack = dq_ack,
	.on_cnp = dq_cnp,
	.on_timer = dq_timer,
	.rate = dq_rate,
	.on_delay = dq_delay,
	.features = dq_features,
};

// SPDX-License-Identifier: MIT
/*
 * Swift (Kumar et al., "Swift: Delay is Simple and Effective for
 * Congestion Control in the Datacenter", SIGCOMM 2020, section 3 and
 * Algorithm 1): a congestion window in packets, driven by the measured
 * round-trip delay against a target.
 *
 *   ACK, delay < target:  slow start (until the first cut or the RTT's
 *                         rise over its least >= target / 4): cwnd += acked
 *                         cwnd += ai * acked / cwnd   (cwnd >= 1)
 *                         cwnd += ai * acked          (cwnd < 1)
 *   ACK, delay >= target: at most once per RTT,
 *                         cwnd *= max(1 - beta (delay - target) / delay,
 *                                     1 - max_mdf)
 *   timeout:              RETX_RESET timeouts in a row: cwnd = min_cwnd;
 *                         else at most once per RTT cwnd *= 1 - max_mdf
 *   NAK (fast recovery):  at most once per RTT cwnd *= 1 - max_mdf
 *   cwnd < 1:             one packet in flight, paced at cwnd packets per
 *                         RTT (the paper's pacing delay RTT / cwnd)
 *
 * The RTT is measured from the requester's send of a PSN to the ACK that
 * covers it (ur_cc.c keeps the send times). The paper's "fabric delay"
 * subtracts the NIC and host parts with timestamps on the wire, which we
 * do not have. In a fabric (the simulator) the delay is the whole RTT,
 * held to one target that every QP shares, as the paper's: the target
 * covers the fabric's longest idle round trip (its hops), so no QP sees
 * less of a queue than another does. On a host the NIC and host parts
 * are tens of us to ms, so the engine's delay is the RTT above a base:
 * the least RTT of the last BASE_WIN_MS (as BBR's min_rtt filter, 10 s;
 * Linux tcp_min_rtt_wlen). A base taken behind another flow's standing
 * queue is that queue too high, and the QP that took it starves the one
 * that was there first (test_cc_swift latecomer: 0.0 against 25.0 Gbit/s
 * with a 10 s base; a base that ages ratchets the queue up by a target a
 * window instead, 345 us at 1 ms): hence no base by default.
 * Neither hop-count nor flow-count target scaling is implemented: the
 * target is one number (docs/cc.md "Swift"), or, with JITTER_K, that
 * number plus k times the RTT's mean deviation (RFC 6298 2.3 rttvar), so
 * that a host whose RTT jitters by milliseconds does not take its own
 * jitter for a queue. CNPs are ignored unless ECN_CUT_MILLI: then a CNP
 * (the switch marked ECN) cuts once per RTT, a second signal that host
 * jitter does not blur.
 *
 * Ours: the first window. Before any RTT sample a sender knows nothing of
 * the fan-in; 64 senders with the paper's window of a BDP each put 8 MB
 * on one switch port and lose packets (issue 44). So the window starts
 * small (INIT_CWND 8) and grows as TCP's slow start (RFC 5681 3.1), one
 * packet per packet ACKed, until the first decrease or an RTT that has
 * risen SS_EXIT of the target above the QP's least (a queue is forming,
 * as HyStart's delay increase ends CUBIC's slow start); the delay signal
 * is one RTT late, so a slow start overshoots by at most the window that
 * was still below it (docs/cc.md "Swift's first window").
 */
#include <string.h>

#include "ur_cc.h"

#define SWIFT_RETX_RESET 5      /* paper: RETX_RESET_THRESHOLD */
#define SWIFT_MAX_CWND 65536.0  /* the largest send window (UROCE_TX_WINDOW) */

static void sw_init(struct ur_cc *cc, uint64_t now)
{
	struct ur_swift *s = &cc->u.swift;

	(void)now;
	memset(s, 0, sizeof(*s));
	s->cwnd = cc->p.init_cwnd;
	s->ss = cc->p.slow_start;
}

static double min_cwnd(const struct ur_cc *cc)
{
	return cc->p.min_cwnd_milli / 1000.0;
}

static void clamp(struct ur_cc *cc)
{
	struct ur_swift *s = &cc->u.swift;

	if (s->cwnd < min_cwnd(cc))
		s->cwnd = min_cwnd(cc);
	if (s->cwnd > SWIFT_MAX_CWND)
		s->cwnd = SWIFT_MAX_CWND;
}

/* At most one decrease per RTT (the paper's can_decrease). */
static bool can_cut(const struct ur_swift *s, uint64_t now)
{
	return !s->cut_once || now - s->last_cut >= s->rtt;
}

static void cut(struct ur_cc *cc, double factor, uint64_t now)
{
	struct ur_swift *s = &cc->u.swift;

	s->cwnd *= factor;
	s->ss = false;
	s->last_cut = now;
	s->cut_once = true;
	cc->cuts++;
	clamp(cc);
}

static void sw_sent(struct ur_cc *cc, uint32_t bytes, uint64_t now)
{
	struct ur_swift *s = &cc->u.swift;

	(void)now;
	if (bytes > s->pkt_bytes)
		s->pkt_bytes = bytes;
}

static void sw_ack(struct ur_cc *cc, uint32_t bytes, uint64_t now)
{
	(void)cc;
	(void)bytes;
	(void)now;
}

static uint64_t base_rtt(const struct ur_swift *s)
{
	return ur__win_min(&s->base);
}

bool ur__swift_sample(struct ur_cc *cc, uint64_t rtt, uint64_t now)
{
	struct ur_swift *s = &cc->u.swift;
	uint64_t win = cc->p.base_win_ms * 1000000ull;

	if (rtt) {
		double d;

		s->rtt = rtt;
		if (!s->rtt_min || rtt < s->rtt_min)
			s->rtt_min = rtt;
		/* RFC 6298 2.2-2.3: first sample srtt = R, rttvar = R/2;
		 * then rttvar += (|srtt - R| - rttvar)/4, srtt += (R - srtt)/8 */
		if (!s->srtt) {
			s->srtt = (double)rtt;
			s->mdev = rtt / 2.0;
		} else {
			d = s->srtt - (double)rtt;
			s->mdev += ((d < 0 ? -d : d) - s->mdev) / 4;
			s->srtt += ((double)rtt - s->srtt) / 8;
		}
		/* The host's lateness, the same estimators (gains 1/8, 1/4). */
		d = s->late_avg - (double)cc->late;
		s->late_dev += ((d < 0 ? -d : d) - s->late_dev) / 4;
		s->late_avg += ((double)cc->late - s->late_avg) / 8;
		if (win)
			ur__win_min_add(&s->base, win, rtt, now);
		if (cc->p.standing_milli)
			ur__win_min_add(&s->standing,
					(uint64_t)(s->srtt *
						   cc->p.standing_milli / 1000),
					rtt, now);
	}
	return s->rtt != 0;
}

/*
 * The RTT the delay is taken from: the last sample, or with STANDING_MILLI
 * the standing RTT (Arun and Balakrishnan, "Copa", NSDI 2018, section
 * 2.2: the least RTT of the last srtt / 2): a queue raises every sample
 * of a window, a host's scheduling spike only some, so the least of them
 * is the queue's delay without the spikes. The same two halves as the
 * base (ur_win_min); the window follows srtt.
 */
static uint64_t delay_rtt(const struct ur_cc *cc)
{
	const struct ur_swift *s = &cc->u.swift;

	if (!cc->p.standing_milli || !s->standing.cur)
		return s->rtt;
	return ur__win_min(&s->standing);
}

double ur__swift_delay(const struct ur_cc *cc)
{
	const struct ur_swift *s = &cc->u.swift;

	return (double)(delay_rtt(cc) - (cc->p.base_win_ms ? base_rtt(s) : 0));
}

/*
 * TARGET_US, plus TARGET_BASE_MILLI of the base RTT, plus JITTER_K mean
 * deviations. On a software NIC the base RTT is the hosts' (wake-ups,
 * batching, a user-space switch: 100 us to ms), and a packet alone in
 * flight, as a paced QP's is, waits for wake-ups a stream does not: its
 * RTT lies above the base by more than 25 us with no queue at all, every
 * such sample cut, and the window sat at its floor for good (the wire
 * bed's "0.00 of the port"; test_cc_swift wire_stall). A target that
 * scales with the base, as Swift's own target scales with the path's
 * hops, leaves the host's part of the RTT alone.
 */
double ur__swift_target(const struct ur_cc *cc)
{
	const struct ur_swift *s = &cc->u.swift;
	double base = cc->p.base_win_ms && s->rtt ? (double)base_rtt(s) : 0;

	return cc->p.target_us * 1000.0 +
	       cc->p.target_base_milli / 1000.0 * base +
	       cc->p.jitter_k * s->mdev +
	       cc->p.late_milli / 1000.0 * (s->late_avg + 4 * s->late_dev);
}

/*
 * The delay that ends slow start: the RTT's rise over the QP's own least
 * (HyStart's delay increase). With a base that is the delay; with none
 * (auto's Swift) the delay is the whole RTT, and a fabric's idle 12-18 us
 * passed a quarter of the target on the first sample: every QP grew by
 * AI alone from 8 packets, 1 a RTT, and the 2 MB permutation took 1.21x
 * cc none's FCT (1.03x with this; bench/results/2026-12-07-cc10.md).
 */
static double ss_delay(const struct ur_cc *cc, double delay)
{
	const struct ur_swift *s = &cc->u.swift;

	if (cc->p.base_win_ms)
		return delay;
	return (double)(delay_rtt(cc) - s->rtt_min);
}

void ur__swift_react(struct ur_cc *cc, uint32_t pkts, double delay,
		     uint64_t now)
{
	struct ur_swift *s = &cc->u.swift;
	double target = ur__swift_target(cc), ai = cc->p.ai_milli / 1000.0;

	s->retx = 0;
	if (s->ss && ss_delay(cc, delay) >= target * cc->p.ss_exit_milli / 1000.0)
		s->ss = false; /* a queue forms: no more doubling */
	if (delay < target) {
		if (s->ss)
			s->cwnd += pkts;
		else
			s->cwnd += s->cwnd >= 1 ? ai * pkts / s->cwnd
						: ai * pkts;
		clamp(cc);
	} else if (can_cut(s, now)) {
		double f = 1 - cc->p.beta_milli / 1000.0 * (delay - target) /
				       delay;
		double lo = 1 - cc->p.max_mdf_milli / 1000.0;

		cut(cc, f > lo ? f : lo, now);
	}
}

static void sw_delay(struct ur_cc *cc, uint32_t pkts, uint64_t rtt,
		     uint64_t now)
{
	if (!ur__swift_sample(cc, rtt, now))
		return; /* nothing measured yet: no decision */
	ur__swift_react(cc, pkts, ur__swift_delay(cc), now);
}

static void sw_loss(struct ur_cc *cc, bool timeout, uint64_t now)
{
	struct ur_swift *s = &cc->u.swift;

	if (timeout && ++s->retx >= SWIFT_RETX_RESET) {
		s->cwnd = min_cwnd(cc);
		s->ss = false;
		s->last_cut = now;
		s->cut_once = true;
		cc->cuts++;
	} else if (can_cut(s, now)) {
		cut(cc, 1 - cc->p.max_mdf_milli / 1000.0, now);
	}
}

void ur__swift_cnp(struct ur_cc *cc, uint64_t now)
{
	/* A CNP says a switch queue passed its marking threshold: cut as a
	 * NAK does but by ECN_CUT, at most once per RTT (the one-cut-per-RTT
	 * rule of the paper's delay cuts). */
	if (cc->p.ecn_cut_milli && cc->u.swift.rtt &&
	    can_cut(&cc->u.swift, now))
		cut(cc, 1 - cc->p.ecn_cut_milli / 1000.0, now);
}

/*
 * A QP's first message, if it fits in FIRST_MSG_PKTS, goes whole in the
 * first RTT rather than by slow start: Homa (Montazeri et al., SIGCOMM
 * 2018, section 3.2) sends a message's first RTTbytes unscheduled for
 * the same reason, a short message should not wait RTTs for a window. An
 * incast of many long messages still starts at INIT_CWND; one of many
 * short messages can put senders x FIRST_MSG_PKTS on a port at once.
 */
void ur__swift_msg(struct ur_cc *cc, uint32_t pkts)
{
	struct ur_swift *s = &cc->u.swift;

	if (!s->msg_seen && !s->rtt && pkts <= cc->p.first_msg_pkts &&
	    pkts > s->cwnd)
		s->cwnd = pkts;
	s->msg_seen = true;
}

static void sw_cnp(struct ur_cc *cc, uint64_t now)
{
	ur__swift_cnp(cc, now);
}

static uint64_t sw_timer(struct ur_cc *cc, uint64_t now)
{
	(void)cc;
	(void)now;
	return UINT64_MAX;
}

/* Below one packet the window is one packet, paced to cwnd per RTT. */
static uint64_t sw_rate(const struct ur_cc *cc)
{
	const struct ur_swift *s = &cc->u.swift;
	double bps;

	if (s->cwnd >= 1 || !s->rtt || !s->pkt_bytes)
		return 0;
	bps = s->pkt_bytes * 8e9 * s->cwnd / (double)s->rtt;
	return bps < 1 ? 1 : (uint64_t)bps;
}

/*
 * What a trace (UROCE_CC_TRACE, uroce-sim's cc_trace) shows of each RTT
 * sample, in us and packets: the delay, the target it is held against,
 * the window, the RTT, the base and the mean deviation (UR_SWIFT_T_*).
 */
static unsigned int sw_features(const struct ur_cc *cc, double *f)
{
	const struct ur_swift *s = &cc->u.swift;

	if (!s->rtt)
		return 0;
	f[UR_SWIFT_T_DELAY] = ur__swift_delay(cc) / 1000.0;
	f[UR_SWIFT_T_TARGET] = ur__swift_target(cc) / 1000.0;
	f[UR_SWIFT_T_CWND] = s->cwnd;
	f[UR_SWIFT_T_RTT] = s->rtt / 1000.0;
	f[UR_SWIFT_T_BASE] = (cc->p.base_win_ms ? base_rtt(s) : 0) / 1000.0;
	f[UR_SWIFT_T_MDEV] = s->mdev / 1000.0;
	f[UR_SWIFT_T_LATE] = cc->late / 1000.0;
	return UR_SWIFT_T_N;
}

static uint32_t sw_window(const struct ur_cc *cc)
{
	double w = cc->u.swift.cwnd;

	return w < 1 ? 1 : (uint32_t)w;
}

const struct ur_cc_ops ur_cc_swift_ops = {
	.name = "swift",
	.init = sw_init,
	.on_sent = sw_sent,
	.on_ack = sw_ack,
	.on_cnp = sw_cnp,
	.on_timer = sw_timer,
	.rate = sw_rate,
	.on_delay = sw_delay,
	.on_loss = sw_loss,
	.window = sw_window,
	.on_msg = ur__swift_msg,
	.features = sw_features,
};

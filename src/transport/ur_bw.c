// SPDX-License-Identifier: MIT
/*
 * Delivery-rate sampling and pacing for selective repeat (ur_bw.h; docs/
 * transport.md "Pacing at the delivery rate"). As TCP BBR's: each first
 * send records the delivered count and when it last moved; when the
 * receiver's frontier passes that packet, the packets delivered meanwhile
 * over the longer of the send and the delivery intervals are a rate sample
 * (draft-cheng-iccrg-delivery-rate-estimation 3.3), the largest of the
 * last UR_BW_ROUNDS round trips is the bottleneck's rate, and the least
 * RTT of 10 s the propagation delay. "Delivered" is the frontier's
 * progress: a hole the responder reported counts when reported and its
 * resend does not, so the count is what reached the receiver, as TCP's
 * (a retransmission counts there). Neither a loss nor host jitter lowers
 * a max filter; a delay signal it does not use.
 */
#include <string.h>

#include "ur_bw.h"
#include "ur_wire.h"

#define BW_RTT_WIN_NS 10000000000ull /* BBR's min_rtt window: 10 s */
#define BW_HIGH_GAIN 2.885           /* 2 / ln 2: STARTUP doubles per round */
#define BW_CWND_GAIN 2.0             /* in flight: 2 x the BDP (BBR) */
#define BW_FULL_ROUNDS 3             /* STARTUP ends after 3 flat rounds */
#define BW_EXTRA_PKTS 16             /* ACKs come every 8 PSNs: 2 of them */
#define BW_SCAN 16                   /* PSNs looked back for a send record */

/* PROBE's cycle (BBR): one round trip above the rate, one below to drain
 * what that queued, six at it. */
static const double probe_gain[8] = { 1.25, 0.75, 1, 1, 1, 1, 1, 1 };

void ur__bw_init(struct ur_bw *b)
{
	memset(b, 0, sizeof(*b));
}

static double bw_max(const struct ur_bw *b)
{
	double m = 0;

	for (unsigned int i = 0; i < UR_BW_ROUNDS; i++)
		if (b->rmax[i] > m)
			m = b->rmax[i];
	return m;
}

void ur__bw_sent(struct ur_bw *b, uint32_t psn, uint32_t bytes, bool resend,
		 uint64_t now)
{
	struct ur_bw_slot *s = &b->slot[psn % UR_BW_SLOTS];

	if (bytes > b->pkt_bytes)
		b->pkt_bytes = bytes;
	if (!b->started) {
		b->started = true;
		b->front = psn;
	}
	if (resend) {
		/* Karn's rule (RFC 6298 3): no RTT from a PSN sent twice. */
		if (s->used && s->psn == psn)
			s->resent = true;
		return;
	}
	/* Nothing in flight before it (the first send, or after an idle
	 * pause): the sample starts now, not at the last delivery, or a
	 * pause of the application's counts as the path's time (Linux
	 * tcp_rate.c tcp_rate_skb_sent). A sample that spanned a 100 ms
	 * pause paced the bed's QP at under 1 Mbit/s for seconds. */
	if (!b->dtime || ur_psn_diff(psn, b->front) <= 0)
		b->dtime = b->first = now;
	s->used = true;
	s->resent = false;
	s->app = b->app_limited != 0;
	s->psn = psn;
	s->t = now;
	s->delivered = b->delivered;
	s->dtime = b->dtime;
	s->first = b->first;
}

/* A round trip ended: the filter's slot for the next; STARTUP's test. */
static void round_start(struct ur_bw *b)
{
	double bw;

	b->rounds++;
	/* A round without a sample (all app-limited and lower) does not
	 * age the filter: as BBR's windowed max, which expires only when a
	 * new sample comes. */
	if (b->rmax[b->fslot] > 0) {
		b->fslot = (uint8_t)((b->fslot + 1) % UR_BW_ROUNDS);
		b->rmax[b->fslot] = 0;
	}
	if (b->mode != UR_BW_STARTUP)
		return;
	bw = bw_max(b);
	if (bw >= b->full_bw * 1.25) {
		b->full_bw = bw;
		b->full_cnt = 0;
	} else if (++b->full_cnt >= BW_FULL_ROUNDS) {
		b->mode = UR_BW_DRAIN;
	}
}

void ur__bw_front(struct ur_bw *b, uint32_t front, uint64_t now)
{
	int32_t d = b->started ? ur_psn_diff(front, b->front) : 0;
	const struct ur_bw_slot *p = NULL;
	uint64_t interval, rtt;

	if (d <= 0)
		return;
	/* The newest PSN passed that has its first send's record. */
	for (int32_t k = 1; k <= d && k <= BW_SCAN; k++) {
		uint32_t psn = ur_psn_add(front, (uint32_t)-k & UR_PSN_MASK);
		const struct ur_bw_slot *s = &b->slot[psn % UR_BW_SLOTS];

		if (s->used && s->psn == psn && s->t <= now) {
			p = s;
			break;
		}
	}
	b->front = front;
	b->delivered += (uint32_t)d;
	b->dtime = now;
	if (b->app_limited && b->delivered > b->app_limited)
		b->app_limited = 0;
	if (!p)
		return;
	b->first = p->t;
	if (p->delivered >= b->next_round) {
		b->next_round = b->delivered;
		round_start(b);
	}
	rtt = now - p->t;
	if (!p->resent)
		ur__win_min_add(&b->min_rtt, BW_RTT_WIN_NS, rtt, now);
	interval = p->t - p->first;
	if (now - p->dtime > interval)
		interval = now - p->dtime;
	/* Shorter than the least RTT: a burst of ACKs, not the path's rate
	 * (Linux tcp_rate.c). */
	if (!interval || interval < ur__win_min(&b->min_rtt))
		return;
	double s = (double)(b->delivered - p->delivered) / (double)interval;
	double *m = &b->rmax[b->fslot];

	/* An app-limited sample says the path is at least this fast: it
	 * counts only if it raises the estimate (BBR). */
	if (p->app && s <= bw_max(b))
		return;
	if (s > *m)
		*m = s;
	b->samples++;
	if (b->mode == UR_BW_STARTUP && BW_HIGH_GAIN * bw_max(b) > b->startup_rate)
		b->startup_rate = BW_HIGH_GAIN * bw_max(b);
}

void ur__bw_app_limited(struct ur_bw *b, uint32_t inflight)
{
	b->app_limited = b->delivered + inflight;
	if (!b->app_limited)
		b->app_limited = 1;
}

void ur__bw_lossy(struct ur_bw *b)
{
	if (b->mode == UR_BW_STARTUP && b->samples)
		b->mode = UR_BW_DRAIN;
}

static double gain(const struct ur_bw *b)
{
	return b->mode == UR_BW_STARTUP ? BW_HIGH_GAIN
	       : b->mode == UR_BW_DRAIN ? 1.0 / BW_HIGH_GAIN
					: probe_gain[b->cycle];
}

double ur__bw_max_bps(const struct ur_bw *b)
{
	return bw_max(b) * (double)b->pkt_bytes * 8e9;
}

uint64_t ur__bw_min_rtt(const struct ur_bw *b)
{
	return ur__win_min(&b->min_rtt);
}

uint64_t ur__bw_rate(const struct ur_bw *b)
{
	double r = gain(b) * bw_max(b);

	if (b->mode == UR_BW_STARTUP && r < b->startup_rate)
		r = b->startup_rate;
	return (uint64_t)(r * (double)b->pkt_bytes * 8e9);
}

static double bdp(const struct ur_bw *b)
{
	return bw_max(b) * (double)ur__win_min(&b->min_rtt);
}

uint32_t ur__bw_cap(const struct ur_bw *b)
{
	double w = bdp(b);

	if (w <= 0)
		return UINT32_MAX;
	w = w * (b->mode == UR_BW_STARTUP ? BW_HIGH_GAIN : BW_CWND_GAIN) +
	    BW_EXTRA_PKTS;
	return w > 65536 ? 65536 : (uint32_t)w;
}

void ur__bw_tick(struct ur_bw *b, uint32_t beyond, uint64_t now)
{
	uint64_t rtt = ur__win_min(&b->min_rtt);

	if (b->mode == UR_BW_DRAIN && (double)beyond <= bdp(b)) {
		b->mode = UR_BW_PROBE;
		b->cycle = 2; /* at the rate first: DRAIN just emptied it */
		b->cycle_at = now;
	} else if (b->mode == UR_BW_PROBE && rtt && now - b->cycle_at >= rtt) {
		b->cycle = (uint8_t)((b->cycle + 1) % 8);
		b->cycle_at = now;
	}
}

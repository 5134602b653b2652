// SPDX-License-Identifier: MIT
/*
 * Spraying (docs/wire.md "Spraying"): which of its source ports an RC
 * QP's next request leaves from. Paths are weighted, and the weights
 * follow what the paths deliver (rates_update below): once per interval
 * of about half a round trip, a path found saturated (a late notice, a
 * loss or a CE mark named it, or its own round trip rose above the
 * others') gets its part of what all paths delivered, and every other
 * path gains 1/16, a probe for room. Requests go out in a smooth
 * weighted round robin (each path's share follows its weight,
 * interleaved rather than in bursts), so a congested or cut path sheds
 * traffic within a few round trips and wins it back when it recovers.
 * The simulator and the bonded port drive this same code.
 *
 * A path that fails (docs/wire.md "Spraying", "A path that fails") is
 * taken out of the round robin rather than kept at the floor weight,
 * where each of its packets would be lost and waited for: when losses
 * name it MP_DOWN_MISS times in a row while another path delivers, or
 * when the host says its port cannot send (a bonded port's interface is
 * down or refuses our sends, ur_dev_ops.path_ok; or is quiet while our
 * responder found a rail gone, path_quiet), or when the peer says it NAKed a
 * gap without waiting for the port (a silent notice, ur__mp_silent). What it carried that is not yet
 * acknowledged goes again on the others at once, instead of one NAK per
 * hole. A path that losses took out gets one request in MP_PROBE_NS
 * (doubling while it stays down, up to MP_PROBE_MAX_NS times the paths
 * down) as a probe, and
 * an ACK for a probe puts it back (towards a peer that sends path
 * notices: a copy every 2-8 ms, and the notice, probe_copies); one the host took out gets a plain ACK
 * every MP_HOST_PROBE_NS (nothing that opens a hole when lost: the
 * peer's host hears it) and comes back when the host says so.
 */
#include <stdlib.h>
#include <string.h>

#include "ur_qp_priv.h"

#define MP_W_MIN 1
#define MP_W_MAX 64
#define MP_W_INIT 16
#define MP_RING_MIN 64
#define MP_RING_MAX 65536 /* the largest selective-repeat window */
#define MP_NONE 0xff       /* ring entry: no request, or acknowledged */
#define MP_DOWN_MISS 3     /* losses without a delivery that take it out */
#define MP_DOWN_NS 2000000ull /* ... and as long without one */
#define MP_PROBE_SLACK_NS 500000ull
#define MP_DOWN_LOSS 1
#define MP_DOWN_HOST 2
#define MP_PROBE_NS 2000000ull
#define MP_PROBE_MAX_NS 32000000u
#define MP_COPY_MAX_NS 8000000u /* a copy's gap stops doubling here */
#define MP_POLL_NS 250000ull
#define MP_HOST_PROBE_NS 1000000ull
#define MP_RESENT 0x80     /* ring entry flag: sent again (no RTT sample) */
#define MP_SHARE_SHIFT 10  /* share = weight << 10 (finer steps) */
#define MP_SHARE_MAX ((uint32_t)MP_W_MAX << MP_SHARE_SHIFT)
#define MP_IV_MIN_NS 500000u   /* the shortest rate interval */
#define MP_Q_SLACK_NS 100000u  /* queued deeper than the least by this */
#define MP_LATE_HOT 1          /* late notices in an interval: saturated */
#define MP_SAMPLE_N 4          /* an ACK of more times its first poorly */
#define MP_DRAIN 8             /* a saturated path: this much less */
#define MP_PROBE_UP 32         /* any other: this much more */

/* The ring remembers the path of the last @window request PSNs (the
 * selective-repeat window: feedback names nothing older). */
struct ur_mp *ur__mp_new(const uint16_t *sports, unsigned int k,
			 unsigned int flags, unsigned int run, uint32_t window)
{
	uint32_t ring = MP_RING_MIN;
	struct ur_mp *mp;

	/* twice the window: an ACK's requests are looked up after the
	 * completer has already sent the next ones (ur_dev.c) */
	while (ring < 2 * window && ring < MP_RING_MAX)
		ring *= 2;
	/* psn_path, then psn_t (ring is a power of two >= 64: aligned) */
	mp = calloc(1, sizeof(*mp) + ring + ring * sizeof(uint32_t));
	if (!mp)
		return NULL;
	mp->psn_t = (uint32_t *)(void *)(mp->psn_path + ring);
	for (unsigned int i = 0; i < k; i++) {
		mp->sport[i] = sports[i];
		mp->w[i] = MP_W_INIT;
		mp->share[i] = (uint32_t)MP_W_INIT << MP_SHARE_SHIFT;
	}
	memset(mp->psn_path, MP_NONE, ring);
	mp->deadline = UINT64_MAX;
	mp->copy_to = -1;
	mp->k = (uint8_t)k;
	mp->oblivious = flags & UR_MP_OBLIVIOUS;
	mp->run = flags & UR_MP_RUNS ? (run ? run : UR_MP_RUN) : 1;
	mp->ring = ring;
	return mp;
}

/* The path @psn left on, or -1 (one port, or an index out of range). */
static int path_of(const struct ur_mp *mp, uint32_t psn)
{
	uint8_t i = mp->psn_path[psn & (mp->ring - 1u)];

	if (i == MP_NONE)
		return -1;
	i &= (uint8_t)~MP_RESENT;
	return mp->k > 1 && i < mp->k ? i : -1;
}

static bool all_down(const struct ur_mp *mp)
{
	for (unsigned int i = 0; i < mp->k; i++)
		if (!mp->down[i])
			return false;
	return true;
}

/* One step of the smooth weighted round robin over the paths that are
 * up (all of them if none is: better a path that may work than none). */
static int swrr(struct ur_mp *mp)
{
	bool any = all_down(mp);
	int total = 0, best = -1;

	for (unsigned int i = 0; i < mp->k; i++) {
		if (mp->down[i] && !any)
			continue;
		mp->cur[i] = (int16_t)(mp->cur[i] + mp->w[i]);
		total += mp->w[i];
		if (best < 0 || mp->cur[i] > mp->cur[best])
			best = (int)i;
	}
	mp->cur[best] = (int16_t)(mp->cur[best] - total);
	return best;
}

/* Silent this long (no delivery) with losses, it failed: MP_DOWN_NS,
 * or 2 round trips where queues make them longer (a path whose requests
 * wait in a deep queue delivers nothing for a round trip). */
static uint64_t down_ns(const struct ur_mp *mp)
{
	return 2 * mp->srtt > MP_DOWN_NS ? 2 * mp->srtt : MP_DOWN_NS;
}

/* A probe not acknowledged after this was lost: it holds the peer's
 * head (and so the window) until it is sent again. */
static uint64_t probe_wait(const struct ur_mp *mp)
{
	return mp->srtt + mp->srtt / 2 + MP_PROBE_SLACK_NS;
}

static unsigned int n_down(const struct ur_mp *mp)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < mp->k; i++)
		n += mp->down[i] == MP_DOWN_LOSS;
	return n ? n : 1;
}

/* A down path whose probe is due, or -1. */
static int probe_due(struct ur_mp *mp)
{
	for (unsigned int i = 0; i < mp->k; i++) {
		if (mp->down[i] != MP_DOWN_LOSS || mp->now < mp->probe_at[i] ||
		    (mp->probe_out & 1u << i)) /* one at a time */
			continue;
		mp->probe_at[i] = mp->now + mp->probe_gap[i];
		/* the cap grows with the paths that are down: the QP's
		 * probes, each of which holds the window when lost, stay
		 * at about one per MP_PROBE_MAX_NS in all */
		if (mp->probe_gap[i] < MP_PROBE_MAX_NS * n_down(mp))
			mp->probe_gap[i] *= 2;
		mp->cnt[i].probes++;
		mp->probe_out = (uint16_t)(mp->probe_out | 1u << i);
		mp->probe_sent[i] = mp->now;
		if (mp->now + probe_wait(mp) < mp->deadline)
			mp->deadline = mp->now + probe_wait(mp);
		return (int)i;
	}
	return -1;
}

/* Runs (UR_MP_RUNS) only while every path delivers: a run on a path
 * that has begun to lose makes a hole per request, each one a selective
 * NAK and a round trip (test_mp mp_runs_cut16 stood still for 50 ms). */
static bool runs_ok(const struct ur_mp *mp)
{
	for (unsigned int i = 0; i < mp->k; i++)
		if (mp->down[i] || mp->miss[i])
			return false;
	return true;
}

unsigned int ur__mp_pick(struct ur_mp *mp, uint32_t psn, bool resend)
{
	/* A resend avoids the path its original left on (it was lost
	 * there); otherwise it takes its turn like any request, so that
	 * the resends of a timeout spread over the paths as their weights
	 * say rather than all falling on one that may be cut too. */
	int lost = resend && !mp->oblivious ? path_of(mp, psn) : -1;
	int best = resend || mp->heard_peer ? -1 : probe_due(mp);

	/* A probe's copy (probe_copies): the request's own entry stays the
	 * live path's, whose ACK it is. */
	if (mp->copy_to >= 0 && resend) {
		mp->cnt[mp->copy_to].packets++;
		return (unsigned int)mp->copy_to;
	}

	if (best < 0 && !resend && mp->run_left && runs_ok(mp)) {
		best = mp->run_path; /* the run goes on (UR_MP_RUNS) */
		mp->run_left--;
	} else if (best < 0) {
		best = swrr(mp);
		if (!resend) {
			mp->run_path = (uint8_t)best;
			mp->run_left = (uint8_t)(mp->run - 1);
		}
		/* nor, for two more turns at most, one that lost a request
		 * and has delivered nothing since (miss): with half of 16
		 * ports on a cut link, a hole's resends fell on it again,
		 * one per selective NAK, and the window stood for 60 ms
		 * (test_mp mp_cut16, one seed in CI: 0.34 of the link; now
		 * 0.86; seeds 1..60: min 0.57 -> 0.85, median 0.98 -> 0.95) */
		for (unsigned int n = 0; resend && n < 2 &&
		     (best == lost || mp->miss[best]); n++)
			best = swrr(mp);
	} else {
		mp->probe_psn[best] = psn;
	}
	if (!resend && !mp->rtt_on) {
		mp->rtt_on = true;
		mp->rtt_psn = psn;
		mp->rtt_at = mp->now;
	}
	mp->psn_path[psn & (mp->ring - 1u)] =
		(uint8_t)(best | (resend ? MP_RESENT : 0));
	mp->psn_t[psn & (mp->ring - 1u)] = (uint32_t)mp->now;
	mp->cnt[best].packets++;
	return (unsigned int)best;
}

uint16_t ur__mp_ans_sport(struct ur_mp *mp)
{
	for (unsigned int n = 0; n < mp->k; n++) {
		unsigned int i = mp->ans_next++ % mp->k;

		if (!mp->down[i])
			return mp->sport[i];
	}
	return mp->sport[mp->ans_next++ % mp->k];
}

/* Does a path other than @i deliver (up, no loss since it last did)? */
static bool others_deliver(const struct ur_mp *mp, int i)
{
	for (unsigned int j = 0; j < mp->k; j++)
		if ((int)j != i && !mp->down[j] && !mp->miss[j])
			return true;
	return false;
}

static void mark_down(struct ur_mp *mp, unsigned int i, uint8_t why)
{
	if (!mp->down[i])
		mp->went_down = (uint16_t)(mp->went_down | 1u << i);
	/* The host's word decides while it says no (the path comes back
	 * when it says yes, and losses may take it out again then). */
	if (why == MP_DOWN_HOST)
		mp->down[i] = MP_DOWN_HOST;
	else if (!(mp->down[i] & MP_DOWN_HOST))
		mp->down[i] |= why;
}

static void mark_up(struct ur_mp *mp, unsigned int i, uint8_t why)
{
	if (!(mp->down[i] & why))
		return;
	mp->down[i] &= (uint8_t)~why;
	if (mp->down[i])
		return;
	/* back in (counted at the next tick) unless it never went out */
	if (mp->went_down & 1u << i)
		mp->went_down = (uint16_t)(mp->went_down & ~(1u << i));
	else
		mp->came_back = (uint16_t)(mp->came_back | 1u << i);
	mp->w[i] = MP_W_INIT;
	mp->share[i] = (uint32_t)MP_W_INIT << MP_SHARE_SHIFT;
	mp->cur[i] = 0;
	mp->miss[i] = 0;
	mp->credit_at[i] = mp->now;
}

/* Path @i went down: its share moves to the others at once, and what it
 * carried that is not acknowledged yet goes again now (each of those is
 * most likely lost, and a NAK names one hole per round trip). */
static void take_out(struct ur_qp *qp, struct ur_mp *mp, unsigned int i,
		     uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	int32_t n = ur_psn_diff(p->req.psn_max, p->comp.psn);
	uint32_t psn = p->comp.psn;

	mp->cnt[i].downs++;
	mp->probe_out = (uint16_t)(mp->probe_out & ~(1u << i));
	mp->probe_gap[i] = (uint32_t)MP_PROBE_NS;
	mp->probe_at[i] = now + MP_PROBE_NS;
	if (n <= 0 || all_down(mp))
		return;
	if ((uint32_t)n > mp->ring)
		n = (int32_t)mp->ring;
	for (; n > 0; n--, psn = ur_psn_add(psn, 1))
		if (path_of(mp, psn) == (int)i)
			ur__req_resend_psn(qp, psn, now);
}

/*
 * Where the peer names the ports it hears (path notices, ur_sr.c), a
 * path that losses took out is probed with a copy of the newest request
 * sent, which left on a live path too: lost, it holds nothing (a probe
 * that was the request's only copy held the peer's head, and with it
 * the window, until it was found lost: 1.5 round trips of a queued
 * path, every few ms while paths were down). So the gap stays short (2
 * ms doubling to MP_COPY_MAX_NS) and a restored path is back within
 * that and a one-way trip. Not READs or atomics (ur__req_copy_newest).
 */
static void probe_copies(struct ur_qp *qp, struct ur_mp *mp, uint64_t now)
{
	if (!mp->heard_peer || (qp->state != UR_QPS_RTS &&
				qp->state != UR_QPS_SQD) || all_down(mp))
		return;
	for (unsigned int i = 0; i < mp->k; i++) {
		if (mp->down[i] != MP_DOWN_LOSS || now < mp->probe_at[i])
			continue;
		mp->copy_to = (int8_t)i;
		if (ur__req_copy_newest(qp, now) == -ENOENT) {
			mp->copy_to = -1;
			return; /* nothing to copy: at the next request */
		}
		mp->copy_to = -1;
		mp->probe_at[i] = now + mp->probe_gap[i];
		if (mp->probe_gap[i] < MP_COPY_MAX_NS)
			mp->probe_gap[i] *= 2;
		mp->cnt[i].probes++;
	}
}

/* Probes in flight: one acknowledged is gone from probe_out (the ACK
 * put its path back, ur__mp_acked); one older than probe_wait()
 * is sent again on a path that is up. */
static void probes_lost(struct ur_qp *qp, struct ur_mp *mp, uint64_t now)
{
	uint64_t wait = probe_wait(mp);

	mp->deadline = UINT64_MAX;
	for (uint16_t out = mp->probe_out; out; out &= (uint16_t)(out - 1)) {
		unsigned int i = (unsigned int)__builtin_ctz(out);
		uint32_t psn = mp->probe_psn[i];

		if (ur_psn_diff(psn, qp->priv->comp.psn) < 0 ||
		    path_of(mp, psn) != (int)i) {
			mp->probe_out = (uint16_t)(mp->probe_out & ~(1u << i));
		} else if (now - mp->probe_sent[i] >= wait) {
			mp->probe_out = (uint16_t)(mp->probe_out & ~(1u << i));
			if (qp->state == UR_QPS_RTS || qp->state == UR_QPS_SQD)
				ur__req_resend_psn(qp, psn, now);
		} else if (mp->probe_sent[i] + wait < mp->deadline) {
			mp->deadline = mp->probe_sent[i] + wait;
		}
	}
}

void ur__mp_tick(struct ur_qp *qp, uint64_t now)
{
	struct ur_mp *mp = qp->priv->mp;
	const struct ur_dev_ops *ops = qp->dev->ops;

	if (!mp || mp->k < 2)
		return;
	mp->now = now;
	if (ops->path_ok && now >= mp->poll_at) {
		mp->poll_at = now + MP_POLL_NS;
		/* A quiet interface (the host hears nothing on it while it
		 * hears the others) counts only while the peer owes us
		 * something: answers to our requests outstanding, or our own
		 * responder found a rail gone with a gap waiting on it
		 * (ur__sr_if_gone). Alone it is no verdict: the peer's runs
		 * and stalls left a working rail quiet for 2-12 ms in healthy
		 * transfers (bench/bond.sh: 3-29 take-outs of the receiver's
		 * answer paths in 5 s, where nothing was owed). A path
		 * taken out so comes back once its interface is heard again,
		 * not when nothing is owed for a moment: it was put back
		 * between two messages and taken out again with a window of
		 * requests lost on it, 2-17 times in a rdrop cut's 2 s
		 * (bench/bond.sh, path11 traces). */
		bool owed = ur_psn_diff(qp->priv->req.psn_max,
					qp->priv->comp.psn) > 0 ||
			    ur__sr_if_gone(qp);

		for (unsigned int i = 0; i < mp->k; i++) {
			bool quiet = ops->path_quiet &&
				     (owed || (mp->down[i] & MP_DOWN_HOST)) &&
				     ops->path_quiet(qp->dev->host,
						     mp->sport[i], now);

			if (ops->path_ok(qp->dev->host, mp->sport[i], now) &&
			    !quiet)
				mark_up(mp, i, MP_DOWN_HOST);
			else
				mark_down(mp, i, MP_DOWN_HOST);
		}
	}
	while (mp->went_down) {
		unsigned int i = (unsigned int)__builtin_ctz(mp->went_down);

		mp->went_down = (uint16_t)(mp->went_down & ~(1u << i));
		qp->dev->cnt.mp_path_out += mp->down[i] != 0;
		if (mp->down[i] && (qp->state == UR_QPS_RTS ||
				    qp->state == UR_QPS_SQD))
			take_out(qp, mp, i, now);
	}
	/* Take-outs and returns as device counters (a healthy transfer
	 * has none: bench/bond.sh, bench/multipath.sh print them). */
	if (mp->came_back) {
		qp->dev->cnt.mp_path_back +=
			(uint64_t)__builtin_popcount(mp->came_back);
		mp->came_back = 0;
	}
	probes_lost(qp, mp, now);
	probe_copies(qp, mp, now);
	/* A path the host says cannot send: a plain ACK every ms keeps the
	 * peer's host hearing it once it works again (ur__tx_probe_ack). */
	for (unsigned int i = 0; i < mp->k; i++) {
		if (!(mp->down[i] & MP_DOWN_HOST) || now < mp->probe_at[i] ||
		    (qp->state != UR_QPS_RTS && qp->state != UR_QPS_SQD))
			continue;
		mp->probe_at[i] = now + MP_HOST_PROBE_NS;
		mp->cnt[i].probes++;
		ur__tx_probe_ack(qp, mp->sport[i]);
	}
}

void ur__mp_loss(struct ur_mp *mp, uint32_t psn)
{
	int i = path_of(mp, psn);

	if (i < 0)
		return;
	mp->cnt[i].losses++;
	if (mp->oblivious)
		return;
	mp->hot = (uint16_t)(mp->hot | 1u << i); /* a queue that overflowed */
	if (mp->miss[i] < UINT8_MAX)
		mp->miss[i]++;
	/* Lost again and again, delivering nothing in between for a while
	 * (spurious NAKs of a path that is only late stop as the peer's gap
	 * timer widens: sr_two_paths_loss), while another path delivers: it
	 * fails (taken out at the next tick). */
	if (mp->miss[i] >= MP_DOWN_MISS && others_deliver(mp, i) &&
	    mp->now - mp->credit_at[i] >= down_ns(mp))
		mark_down(mp, (unsigned int)i, MP_DOWN_LOSS);
}

void ur__mp_ecn(struct ur_mp *mp, uint32_t psn)
{
	int i = path_of(mp, psn);

	if (i < 0)
		return;
	mp->cnt[i].ecn++;
	if (!mp->oblivious)
		mp->hot = (uint16_t)(mp->hot | 1u << i);
}

/*
 * The peer NAKed a gap without waiting for port @sport, silent while
 * others delivered (a path notice, ur_sr.c). If a request of ours left
 * on it long enough ago to have arrived (MP_SILENT_NS, or its path's
 * floor round trip) and is not acknowledged, the path failed: out now,
 * its requests sent again, rather than after 3 losses and 2 round trips
 * of a queued path (test_mp mp_cut16: 10-14 ms). A port we had stopped
 * using is silent for that reason alone: nothing of ours is on it.
 */
#define MP_SILENT_NS 1000000u
void ur__mp_silent(struct ur_qp *qp, uint16_t sport, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_mp *mp = p->mp;
	int32_t n = ur_psn_diff(p->req.psn_max, p->comp.psn);
	uint32_t psn = p->comp.psn;
	int i = -1;

	for (unsigned int j = 0; j < mp->k; j++)
		if (mp->sport[j] == sport)
			i = (int)j;
	if (i < 0 || mp->down[i] || mp->oblivious || n <= 0 ||
	    !others_deliver(mp, i))
		return;
	if ((uint32_t)n > mp->ring)
		n = (int32_t)mp->ring;
	mp->now = now;
	for (; n > 0; n--, psn = ur_psn_add(psn, 1)) {
		uint8_t e = mp->psn_path[psn & (mp->ring - 1u)];
		uint32_t age = (uint32_t)now - mp->psn_t[psn & (mp->ring - 1u)];

		if (e == (uint8_t)i &&
		    age >= (mp->rtt_min[i] > MP_SILENT_NS ? mp->rtt_min[i]
							 : MP_SILENT_NS)) {
			mark_down(mp, (unsigned int)i, MP_DOWN_LOSS);
			ur__mp_tick(qp, now);
			return;
		}
	}
}

void ur__mp_heard(struct ur_mp *mp, uint16_t sport)
{
	mp->heard_peer = true;
	for (unsigned int i = 0; i < mp->k; i++) {
		if (mp->sport[i] != sport || !(mp->down[i] & MP_DOWN_LOSS))
			continue;
		mp->probe_out = (uint16_t)(mp->probe_out & ~(1u << i));
		mark_up(mp, i, MP_DOWN_LOSS);
	}
}

/* The responder saw the request @psn arrive late, after later ones from
 * other paths had waited for it (ur_sr.c "late notice"): its path is
 * queued deeper than the others. A quarter off, as for a CE mark: the
 * shares move until the paths' delays match, which is when they follow
 * the paths' rates. */
void ur__mp_late(struct ur_mp *mp, uint32_t psn)
{
	int i = path_of(mp, psn);

	if (i < 0)
		return;
	mp->cnt[i].late++;
	if (mp->lates[i] < UINT8_MAX)
		mp->lates[i]++;
}

/*
 * Weights from delivered rates. Once per interval (half the QP's round
 * trip, at least MP_IV_MIN_NS) each path that is up gets a new share:
 * - a path found saturated (a late notice, a loss or a CE mark named it,
 *   or its own round trip rose above its floor by MP_Q_SLACK_NS more
 *   than the least queued path's) delivered at its rate: its share moves
 *   half way down to its part of what all delivered (half: ACKs come in
 *   lumps of a message), then 1/MP_DRAIN off to drain its queue;
 * - any other path gains 1/MP_PROBE_UP: the probe that finds a path
 *   that got faster, and moves traffic onto a path with room.
 * Shares are then scaled so that the largest is MP_SHARE_MAX. Where all
 * paths are saturated the shares follow their delivered rates; where
 * some are, the others grow until their queues match (MP-RDMA and
 * Hermes balance so, on queueing delay). A cumulative ACK can time a
 * path only when it covers a few requests (MP_SAMPLE_N): then the first
 * is the one the peer's head waited for, the others were held for it,
 * and its round trip is its own path's, not the slowest path's. RoCE
 * ACKs a message's last packet, so with large messages the late notices
 * (responder side) carry the signal.
 */
static void rates_update(struct ur_mp *mp)
{
	uint64_t total = 0, sum = 0;
	uint32_t qmin = UINT32_MAX, max = 0;

	for (unsigned int i = 0; i < mp->k; i++) {
		if (mp->down[i])
			continue;
		total += mp->dlv[i];
		sum += mp->share[i];
		if (mp->rtt_s[i] && mp->rtt_s[i] - mp->rtt_min[i] < qmin)
			qmin = mp->rtt_s[i] - mp->rtt_min[i];
	}
	for (unsigned int i = 0; i < mp->k; i++)
		if (mp->lates[i] >= MP_LATE_HOT)
			mp->hot = (uint16_t)(mp->hot | 1u << i);
	for (unsigned int i = 0; i < mp->k && qmin != UINT32_MAX; i++)
		if (!mp->down[i] && mp->rtt_s[i] &&
		    mp->rtt_s[i] - mp->rtt_min[i] > qmin + MP_Q_SLACK_NS +
							    qmin / 8)
			mp->hot = (uint16_t)(mp->hot | 1u << i);
	for (unsigned int i = 0; i < mp->k; i++) {
		uint64_t sh = mp->share[i];

		if (mp->down[i])
			continue;
		/* Lost and silent for MP_DOWN_NS while others delivered: it
		 * failed. Waiting for MP_DOWN_MISS losses would leave it at
		 * the floor weight, each of its few requests lost and
		 * holding the window until it is NAKed. */
		if (!mp->dlv[i] && mp->miss[i] && total &&
		    mp->now - mp->credit_at[i] >= down_ns(mp)) {
			mark_down(mp, i, MP_DOWN_LOSS);
			continue;
		}
		if (mp->hot & 1u << i) {
			uint64_t d = total ? mp->dlv[i] * sum / total : 0;

			if (d < sh) /* half way: ACKs come in lumps */
				sh -= (sh - d) / 2;
			sh -= sh / MP_DRAIN;
		} else {
			sh += sh / MP_PROBE_UP;
		}
		mp->share[i] = (uint32_t)(sh ? sh : 1);
		if (mp->share[i] > max)
			max = mp->share[i];
	}
	for (unsigned int i = 0; i < mp->k; i++) {
		uint64_t sh;

		if (mp->down[i] || !max)
			continue;
		sh = (uint64_t)mp->share[i] * MP_SHARE_MAX / max;
		if (sh < (uint64_t)MP_W_MIN << MP_SHARE_SHIFT)
			sh = (uint64_t)MP_W_MIN << MP_SHARE_SHIFT;
		mp->share[i] = (uint32_t)sh;
		mp->w[i] = (uint8_t)(sh >> MP_SHARE_SHIFT);
	}
	for (unsigned int i = 0; i < mp->k; i++) {
		mp->dlv[i] = 0;
		mp->lates[i] = 0;
		mp->rtt_s[i] = 0;
		/* the floor forgets slowly (a path's route may change) */
		mp->rtt_min[i] += mp->rtt_min[i] / 256;
	}
	mp->hot = 0;
	mp->iv_at = mp->now;
}

void ur__mp_acked(struct ur_mp *mp, uint32_t psn, uint32_t n)
{
	uint64_t iv;

	/* The ACK covered requests psn .. psn + n - 1: each was delivered
	 * over the path it last left on. @psn reached the peer's head last
	 * (the rest were held for it): its round trip is its path's. */
	if (mp->rtt_on && ur_psn_diff(mp->rtt_psn, psn) >= 0 &&
	    ur_psn_diff(mp->rtt_psn, psn + n) < 0) {
		uint64_t s = mp->now - mp->rtt_at;

		mp->srtt = mp->srtt ? (7 * mp->srtt + s) / 8 : s;
		mp->rtt_on = false;
	}
	if (n > mp->ring)
		psn += n - mp->ring, n = mp->ring;
	else if (!mp->oblivious && n <= MP_SAMPLE_N) {
		uint8_t e = mp->psn_path[psn & (mp->ring - 1u)];
		int i = path_of(mp, psn);

		if (i >= 0 && !(e & MP_RESENT)) {
			uint32_t s = (uint32_t)mp->now -
				     mp->psn_t[psn & (mp->ring - 1u)];

			if (!s)
				s = 1;
			if (!mp->rtt_min[i] || s < mp->rtt_min[i])
				mp->rtt_min[i] = s;
			if (!mp->rtt_s[i] || s < mp->rtt_s[i])
				mp->rtt_s[i] = s;
		}
	}
	for (; n; n--, psn++) {
		uint8_t *at = &mp->psn_path[psn & (mp->ring - 1u)];
		int i = path_of(mp, psn);
		bool resent = *at != MP_NONE && (*at & MP_RESENT);

		*at = MP_NONE; /* done: a READ's response PSNs name no path */
		if (i < 0 || mp->oblivious)
			continue;
		mp->dlv[i]++;
		/* Which copy of a resent request came is unknown (Karn): one
		 * resent onto a dead path, whose original on a live one was
		 * only late, clears nothing (test_sr sr_two_paths_dead: such
		 * a credit kept the dead path in until the retries ran out) */
		if (resent)
			continue;
		mp->miss[i] = 0;
		mp->credit_at[i] = mp->now;
		if (mp->down[i] & MP_DOWN_LOSS)
			mark_up(mp, (unsigned int)i, MP_DOWN_LOSS); /* a probe */
	}
	iv = mp->srtt / 2 > MP_IV_MIN_NS ? mp->srtt / 2 : MP_IV_MIN_NS;
	if (!mp->oblivious && mp->k > 1 && mp->now - mp->iv_at >= iv)
		rates_update(mp);
}

// SPDX-License-Identifier: MIT
/*
 * Selective repeat, the responder's half and the device's buffer
 * (docs/transport.md "Selective repeat", docs/wire.md "Extensions").
 *
 * A request that arrives ahead of the expected PSN (ePSN) from a requester
 * that marks its requests with UR_BTH_EXT_SR, on a QP where selective
 * repeat is enabled, is kept instead of NAKed: its bytes go into a slot of
 * a pool shared by the device's QPs, on the QP's list sorted by PSN. When
 * ePSN arrives the held requests that follow it run through the ordinary
 * responder state machine, in PSN order, so placement, receive completions,
 * READ responses, atomics and ACKs are exactly those of in-order arrival.
 *
 * A gap is not NAKed at once (spraying reorders): once the oldest request
 * held behind it is reorder_ns old, one NAK (PSN sequence error) with the
 * bit set names ePSN, and the requester resends that PSN alone. A request
 * that cannot be held (beyond the window, pool exhausted) gets one plain
 * NAK: go-back-N, which is always correct.
 *
 * The pool grows by chunks (8 slots, doubling up to 256) to pool_pkts slots and is shared by QPs that
 * may be driven from different threads, so it has its own small spinlock
 * (like the CQ ring). Nothing is allocated per packet once it is warm.
 */
#include <stdlib.h>
#include <string.h>

#include "ur_qp_priv.h"

#define SR_CHUNK_MAX 256 /* slots per chunk; chunks double from 8 */
#define SR_DEFAULT_WINDOW 256
#define SR_DEFAULT_POOL 8192
#define SR_SLOT_HDR 64 /* largest header set + pad + ICRC, rounded up */
#define UR_SR_LATE_EVERY 64 /* requests between two late notices */

static void late_notice(struct ur_qp *qp, uint32_t psn);
static void path_notice(struct ur_qp *qp, uint8_t what, uint16_t sport,
			uint32_t psn);
static uint64_t path_idle(const struct ur_sr *sr);
static uint64_t path_wait(const struct ur_sr *sr, uint32_t epsn, uint64_t now);
static bool sr_cnp(struct ur_qp *qp, uint8_t what, uint16_t sport,
		   uint32_t psn, uint16_t n, uint16_t by);

struct ur_sr_pool {
	atomic_flag lock;
	uint32_t slot_bytes;   /* data bytes per slot */
	uint32_t n, cap;       /* slots allocated / allowed */
	struct ur_sr_slot *free;
	void **chunks;
	uint32_t nchunks, capchunks;
};

void ur_sr_params_default(struct ur_sr_params *p)
{
	p->enable = 1;
	p->window = SR_DEFAULT_WINDOW;
	p->reorder_ns = 20000;
	p->pool_pkts = SR_DEFAULT_POOL;
	p->peer_known = 0;
	p->pace = 0; /* off until the real bed agrees: bench/results/2026-12-07-loss9.md */
}

static void pool_lock(struct ur_sr_pool *pl)
{
	while (atomic_flag_test_and_set_explicit(&pl->lock, memory_order_acquire))
		;
}

static void pool_unlock(struct ur_sr_pool *pl)
{
	atomic_flag_clear_explicit(&pl->lock, memory_order_release);
}

/*
 * Two pools: path-MTU slots, and jumbo slots (docs/wire.md "Jumbo
 * packets") made at the first jumbo packet held, each slot the largest
 * jumbo size our link carries. The jumbo pool may take as many bytes as
 * the other (pool_pkts path-MTU packets), at least one window of 256
 * packets: 2,071 slots of 16 KiB for the default 8,192 x 4 KiB. A slot
 * four times the size for every packet would have cost a device that
 * never sees jumbo packets four times the memory per held packet.
 */
static struct ur_sr_pool *pool_of(struct ur_dev *dev, bool jumbo)
{
	struct ur_sr_pool *_Atomic *at = jumbo ? &dev->sr_pool_jumbo
					      : &dev->sr_pool;
	struct ur_sr_pool *pl = atomic_load(at), *none = NULL;
	uint32_t mtu = dev->max_mtu ? dev->max_mtu : 4096;
	uint32_t cap = dev->sr.pool_pkts ? dev->sr.pool_pkts : SR_DEFAULT_POOL;

	if (pl)
		return pl;
	pl = calloc(1, sizeof(*pl));
	if (!pl)
		return NULL;
	atomic_flag_clear(&pl->lock);
	pl->slot_bytes = mtu + SR_SLOT_HDR;
	pl->cap = cap;
	if (jumbo) {
		uint32_t j = ur_jumbo_size(ur_jumbo_bits(dev->jumbo_max));
		uint64_t c;

		pl->slot_bytes = (j ? j : UR_JUMBO_MTU) + SR_SLOT_HDR;
		c = (uint64_t)cap * (mtu + SR_SLOT_HDR) / pl->slot_bytes;
		pl->cap = c < SR_DEFAULT_WINDOW ? SR_DEFAULT_WINDOW
						: (uint32_t)c;
	}
	if (!atomic_compare_exchange_strong(at, &none, pl)) {
		free(pl); /* another thread made it first */
		return none;
	}
	return pl;
}

static size_t slot_size(const struct ur_sr_pool *pl)
{
	return (sizeof(struct ur_sr_slot) + pl->slot_bytes + 15) & ~(size_t)15;
}

/* Under the lock: add a chunk of slots to the free list. */
static bool pool_grow(struct ur_sr_pool *pl)
{
	uint32_t k = pl->n < 8 ? 8 : pl->n > SR_CHUNK_MAX ? SR_CHUNK_MAX : pl->n;
	size_t sz = slot_size(pl);
	uint8_t *c;

	if (k > pl->cap - pl->n)
		k = pl->cap - pl->n;
	if (!k)
		return false;
	if (pl->nchunks == pl->capchunks) {
		uint32_t nc = pl->capchunks ? 2 * pl->capchunks : 16;
		void **a = realloc(pl->chunks, nc * sizeof(*a));

		if (!a)
			return false;
		pl->chunks = a;
		pl->capchunks = nc;
	}
	c = malloc(sz * k);
	if (!c)
		return false;
	pl->chunks[pl->nchunks++] = c;
	for (uint32_t i = 0; i < k; i++) {
		struct ur_sr_slot *s = (struct ur_sr_slot *)(void *)(c + sz * i);

		s->next = pl->free;
		pl->free = s;
	}
	pl->n += k;
	return true;
}

/* A slot for a packet of @len bytes (headers to ICRC): from the jumbo
 * pool when it is larger than a path-MTU slot. */
static struct ur_sr_slot *slot_get(struct ur_dev *dev, uint32_t len)
{
	uint32_t mtu = dev->max_mtu ? dev->max_mtu : 4096;
	bool jumbo = len > mtu + SR_SLOT_HDR;
	struct ur_sr_pool *pl = pool_of(dev, jumbo);
	struct ur_sr_slot *s = NULL;

	if (!pl || len > pl->slot_bytes)
		return NULL;
	pool_lock(pl);
	if (pl->free || pool_grow(pl)) {
		s = pl->free;
		pl->free = s->next;
		s->jumbo = jumbo;
	}
	pool_unlock(pl);
	return s;
}

static void slot_put(struct ur_dev *dev, struct ur_sr_slot *s)
{
	struct ur_sr_pool *pl = atomic_load(s->jumbo ? &dev->sr_pool_jumbo
						     : &dev->sr_pool);

	pool_lock(pl);
	s->next = pl->free;
	pl->free = s;
	pool_unlock(pl);
}

static void pool_free(struct ur_sr_pool *pl)
{
	if (!pl)
		return;
	for (uint32_t i = 0; i < pl->nchunks; i++)
		free(pl->chunks[i]);
	free(pl->chunks);
	free(pl);
}

void ur_dev_fini(struct ur_dev *dev)
{
	pool_free(atomic_exchange(&dev->sr_pool, NULL));
	pool_free(atomic_exchange(&dev->sr_pool_jumbo, NULL));
}

/* ---- per QP ------------------------------------------------------------- */
int ur_qp_set_sr(struct ur_qp *qp, const struct ur_sr_params *p)
{
	struct ur_sr *sr = &qp->priv->sr;

	if (!p || p->enable > UR_SR_AUTO || p->window > 65536 ||
	    (p->enable && (qp->type != UR_QPT_RC || qp->xrc ||
			   qp->priv->crypt.alg)))
		return -EINVAL;
	sr->p = *p;
	if (!sr->p.window)
		sr->p.window = SR_DEFAULT_WINDOW;
	sr->reorder_min = sr->p.reorder_ns;
	return 0;
}

int ur_qp_set_paths(struct ur_qp *qp, const uint16_t *sports, unsigned int k,
		    unsigned int flags)
{
	struct ur_mp *mp;

	if (qp->type != UR_QPT_RC || !sports || k < 1 || k > UR_MP_MAX ||
	    (k > 1 && !qp->priv->sr.p.enable) || (flags & ~(UR_MP_OBLIVIOUS | UR_MP_RUNS)))
		return -EINVAL;
	mp = k > 1 ? ur__mp_new(sports, k, flags, qp->dev->spray_run, qp->priv->sr.p.window)
		   : NULL; /* its own port: no state */
	if (k > 1 && !mp)
		return -ENOMEM;
	free(qp->priv->mp);
	qp->priv->mp = mp;
	return 0;
}

unsigned int ur_qp_paths(const struct ur_qp *qp)
{
	return qp->priv->mp ? qp->priv->mp->k : 1;
}

int ur_qp_path_info(const struct ur_qp *qp, unsigned int i, uint16_t *sport,
		    unsigned int *weight, struct ur_mp_path_cnt *cnt)
{
	const struct ur_mp *mp = qp->priv->mp;

	if (i >= ur_qp_paths(qp))
		return -EINVAL;
	if (!mp) {
		*sport = qp->sport;
		*weight = 1;
		memset(cnt, 0, sizeof(*cnt));
		cnt->packets = qp->cnt.tx_packets;
		return 0;
	}
	*sport = mp->sport[i];
	*weight = mp->down[i] ? 0 : mp->w[i]; /* out of the spray: 0 */
	*cnt = mp->cnt[i];
	return 0;
}

void ur_qp_get_sr(const struct ur_qp *qp, struct ur_sr_params *p)
{
	*p = qp->priv->sr.p;
}

uint32_t ur_qp_sr_state(const struct ur_qp *qp)
{
	const struct ur_sr *sr = &qp->priv->sr;

	return (sr->p.enable ? 1u : 0) | (sr->tx_peer ? 2u : 0) |
	       (sr->rx_peer ? 4u : 0) | (sr->peer_ok ? 8u : 0);
}

bool ur_qp_rx_sprayed(const struct ur_qp *qp)
{
	return qp->priv->sr.sprayed;
}

void ur__sr_release(struct ur_qp *qp)
{
	struct ur_sr *sr = &qp->priv->sr;

	while (sr->held) {
		struct ur_sr_slot *s = sr->held;

		sr->held = s->next;
		slot_put(qp->dev, s);
	}
	sr->held_last = NULL;
	sr->arr_first = sr->arr_last = NULL;
	sr->hole_cur = NULL;
	sr->nheld = 0;
	if (sr->rep)
		memset(sr->rep, 0, UR_SR_NAKED * sizeof(*sr->rep));
	memset(sr->path, 0, sizeof(sr->path));
	sr->rx_last = 0;
	sr->sprayed = false;
	sr->gap_deadline = UINT64_MAX;
	sr->draining = false;
	sr->nak_live = false;
}

/*
 * A selective NAK asks for one PSN; if that resend is lost too, nothing
 * else would ask again until the requester's transport timer (4.096 us x
 * 2^timeout, 67 ms at perftest's 14) ends in go-back-N. So the NAK is
 * repeated (renak) while ePSN stays missing: after 1.5 times the
 * NAK-to-resend time seen on this QP, never sooner than the gap timer, 1
 * ms before the first sample (a round trip on any LAN; an early repeat
 * costs one duplicate), or at once when a resend asked for later came
 * first (fill_t, below). Twice that time, as before, held test_sr
 * sr_delay_loss5 at 0.50-0.68 of the link (12 seeds, 0.60 mean): each
 * lost resend stood for 2 x 3 ms, its window's queue included, while
 * the window ran dry; 1.5 x and the rule below: 0.67-0.77 (0.72).
 */
#define UR_SR_RENAK_FIRST 1000000ull /* 1 ms */
#define UR_SR_RENAK_MAX 100000000ull /* 100 ms */
static uint64_t renak_after(const struct ur_sr *sr)
{
	uint64_t t = sr->nak_rtt ? 3ull * sr->nak_rtt / 2 : UR_SR_RENAK_FIRST;

	if (t < sr->p.reorder_ns)
		t = sr->p.reorder_ns;
	/* Sprayed: the resend may take a slower path than the NAK's
	 * round trips measured (and those may be a late original's). */
	if (sr->sprayed && t < path_idle(sr))
		t = path_idle(sr);
	/* Each repeat waits twice as long (RFC 6298 5.5): the samples
	 * come from resends that arrived, and a queue that grew since
	 * holds the next one longer; repeating sooner only feeds it. */
	for (unsigned int i = 0; i < sr->nak_repeats && t < UR_SR_RENAK_MAX; i++)
		t *= 2;
	return t;
}

/* The selective NAK: ePSN is missing, the requests after it are held.
 * A repeat on evidence (a later resend came, fill_t) does not back off:
 * it is no guess that the round trip grew. */
static void sr_nak(struct ur_qp *qp, bool backoff, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_sr *sr = &p->sr;
	bool again = sr->nak_live && sr->nak_psn == p->resp.psn;

	p->resp.nak_sent = true;
	if (!sr->naked)
		sr->naked = calloc(UR_SR_NAKED, sizeof(*sr->naked));
	/* After a repeat, a second copy says nothing about reordering. */
	if (sr->naked) /* else spurious NAKs go unnoticed */
		sr->naked[p->resp.psn % UR_SR_NAKED] = again ? 0 : p->resp.psn + 1;
	if (again) {
		sr->nak_again = true;
		if (backoff)
			sr->nak_repeats++;
		qp->dev->cnt.tx_sr_renak++;
	} else {
		sr->nak_again = false;
		sr->nak_repeats = 0;
		sr->nak_psn = p->resp.psn;
		sr->nak_top = sr->held_last ? sr->held_last->psn : p->resp.psn;
		sr->nak_t0 = now;
	}
	sr->nak_live = true;
	sr->nak_t = now;
	sr->gap_deadline = now + renak_after(sr);
	qp->dev->cnt.tx_sr_nak++;
	qp->cnt.tx_sr_nak++;
	ur__tx_ack(qp, ur_aeth_nak(UR_NAK_PSN_SEQ_ERR), p->resp.psn);
}

/*
 * Can a copy of a PSN that a selective NAK or a hole report sent at @t
 * named, arriving @now, be the resend it asked for? Not before the NAK
 * has made a round trip: sooner, it is the original, late (a host that
 * was not scheduled for milliseconds receives a queue of them at one
 * instant, each behind the NAK of the one before). Half the NAK-to-resend
 * time seen, once seen.
 */
static bool may_be_resend(const struct ur_sr *sr, uint64_t t, uint64_t now)
{
	return now > t && now - t >= sr->nak_rtt / 2;
}

static void nak_sample(struct ur_sr *sr, uint64_t rtt)
{
	if (rtt > UINT32_MAX)
		rtt = UINT32_MAX;
	sr->nak_rtt = sr->nak_rtt ? (uint32_t)((7ull * sr->nak_rtt + rtt) / 8)
				  : (uint32_t)rtt;
}

/*
 * A resend came: every NAK or hole report sent before the one it answers
 * whose resend has not come is lost, or its resend is (RACK's rule, RFC
 * 8985 6.2, on our own requests: one path is a FIFO both ways, and the
 * requester resends in the order the requests came). fill_t keeps the
 * latest such request's time; a selective NAK out for ePSN from before
 * it is repeated at once (gap_arm), not after renak_after(). One path
 * only: a sprayed QP's resends take paths of different delays.
 */
static void sr_filled_at(struct ur_sr *sr, uint64_t t)
{
	if (!sr->sprayed && t > sr->fill_t)
		sr->fill_t = t;
}

/* The request at ePSN came while a selective NAK for it was out: the
 * NAK-to-resend time, smoothed as RFC 6298 does the RTT; none from a
 * repeated NAK (which copy came is unknown: Karn's rule). */
void ur__sr_resent(struct ur_qp *qp, uint32_t psn, uint64_t now)
{
	struct ur_sr *sr = &qp->priv->sr;
	uint64_t rtt;

	if (!sr->nak_live || psn != sr->nak_psn)
		return;
	sr->nak_live = false;
	/* Repeated before the first sample: the time from the first NAK
	 * is at least the round trip, never less (a repeat at 1 ms on a
	 * 1.5 ms round trip never got a sample by Karn's rule, so every
	 * first NAK was repeated: 60 % of them, bench/loss_delay.sh). One
	 * path only: a sprayed QP's first NAK may wait for a cut path to
	 * be taken out, and that wait as its round trip held test_mp
	 * mp_runs_cut16 at 0.14-0.29 of the live link's rate. */
	/* (the first NAK's time: a repeat's resend left no sooner) */
	if (may_be_resend(sr, sr->nak_t0, now))
		sr_filled_at(sr, sr->nak_t0);
	if (sr->nak_again && !sr->nak_rtt && !sr->sprayed && now > sr->nak_t0)
		rtt = now - sr->nak_t0;
	else if (sr->nak_again || !may_be_resend(sr, sr->nak_t, now))
		return;
	else
		rtt = now - sr->nak_t;
	nak_sample(sr, rtt);
}

/*
 * A PSN we selectively NAKed came twice: the original was late, not
 * lost, and the resend was for nothing. Paths whose delays differ (a
 * sprayed QP over queues of different depth) reorder by more than the gap
 * timer: double it, up to UR_SR_REORDER_MAX, as TCP widens its reordering
 * window on a DSACK (RFC 8985, 7.2). ur__sr_filled shrinks it back.
 */
#define UR_SR_REORDER_MAX 50000000ull /* 50 ms */
void ur__sr_duplicate(struct ur_qp *qp, uint32_t psn, uint64_t now)
{
	struct ur_sr *sr = &qp->priv->sr;

	if (!sr->p.enable || !sr->naked || sr->naked[psn % UR_SR_NAKED] != psn + 1)
		return;
	sr->naked[psn % UR_SR_NAKED] = 0;
	qp->dev->cnt.rx_sr_spurious++;
	/* A path seen for the first time since the last NAK: that NAK did
	 * not know of it (its first packets came late), this is not
	 * reordering within a path. */
	if (sr->path_new_t > sr->nak_t && now - sr->path_new_t < path_idle(sr))
		return;
	if (sr->p.reorder_ns < UR_SR_REORDER_MAX)
		sr->p.reorder_ns = sr->p.reorder_ns
					   ? (sr->p.reorder_ns * 2 < UR_SR_REORDER_MAX
						      ? sr->p.reorder_ns * 2
						      : UR_SR_REORDER_MAX)
					   : 20000;
}

/*
 * The held requests by arrival (slot anext/aprev), oldest first, beside
 * the list by PSN: the gap timer and ur__sr_filled want the oldest
 * arrival on every held request, and a walk of the PSN list for it was
 * 4-7 % of a sprayed simulation (bench/results/2026-12-07-sim5.md).
 * Arrivals come in time order, so a new one goes last (the walk back is
 * for a clock that stepped back, and keeps the answer exact).
 */
static void arr_link(struct ur_sr *sr, struct ur_sr_slot *s)
{
	struct ur_sr_slot *a = sr->arr_last;

	while (a && a->t > s->t)
		a = a->aprev;
	s->aprev = a;
	s->anext = a ? a->anext : sr->arr_first;
	if (s->anext)
		s->anext->aprev = s;
	else
		sr->arr_last = s;
	if (a)
		a->anext = s;
	else
		sr->arr_first = s;
}

static void arr_unlink(struct ur_sr *sr, struct ur_sr_slot *s)
{
	if (s->aprev)
		s->aprev->anext = s->anext;
	else
		sr->arr_first = s->anext;
	if (s->anext)
		s->anext->aprev = s->aprev;
	else
		sr->arr_last = s->aprev;
}

/* The oldest held request's arrival; UINT64_MAX if none is held. */
static uint64_t held_oldest(const struct ur_sr *sr)
{
	return sr->arr_first ? sr->arr_first->t : UINT64_MAX;
}

/*
 * A gap closed by itself: the request at ePSN came, not NAKed, while
 * later ones were held, as late as the oldest of them has waited. The gap
 * timer moves a sixteenth of the way down towards 1.5 x that lateness
 * (never below the timer as set), so that once the reordering that
 * widened it is gone (a queue drained, a path cut) a real loss is NAKed
 * again in about the reordering's time, not in the 50 ms a past burst
 * left (RFC 8985 bounds its window by the RTT for the same reason; the
 * responder has no RTT, but sees the reordering itself).
 */
void ur__sr_filled(struct ur_qp *qp, uint64_t now)
{
	struct ur_sr *sr = &qp->priv->sr;
	uint64_t oldest = held_oldest(sr), target;

	if (oldest > now)
		return;
	if (now - oldest > sr->reorder_min &&
	    sr->late_pkts >= UR_SR_LATE_EVERY)
		late_notice(qp, qp->priv->resp.psn);
	target = (now - oldest) * 3 / 2;
	if (target < sr->reorder_min)
		target = sr->reorder_min;
	if (sr->p.reorder_ns > target)
		sr->p.reorder_ns -= (uint32_t)((sr->p.reorder_ns - target + 15) / 16);
}

/*
 * Paths. A sprayed requester's paths are its UDP source ports, and each is
 * a FIFO (ECMP hashes a port onto one link), so a PSN sent on a path is
 * lost once a later PSN arrived on that path. The responder does not know
 * which path carried ePSN, but if every path that is still delivering has
 * delivered a PSN after ePSN, the path that carried it has too: ePSN is
 * lost. While one such path has not, ePSN may be queued behind on it (two
 * links whose queues differ by milliseconds reorder by that much, far
 * beyond any fixed timer): wait. A path silent for path_idle() stopped
 * delivering (cut, or its sender stopped using it) and is not waited for,
 * so a dead path costs path_idle() per gap, not a spurious NAK per gap.
 */
#define UR_SR_PATH_IDLE 1000000ull /* 1 ms */
static uint64_t path_idle(const struct ur_sr *sr)
{
	uint64_t t = 4ull * sr->p.reorder_ns;

	if (t < 2ull * sr->nak_rtt)
		t = 2ull * sr->nak_rtt;
	return t > UR_SR_PATH_IDLE ? t : UR_SR_PATH_IDLE;
}

void ur__sr_path_seen(struct ur_qp *qp, uint16_t sport, uint8_t rx_if,
		      uint32_t psn, uint64_t now)
{
	struct ur_sr *sr = &qp->priv->sr;
	struct ur_sr_path *e = NULL, *lru = &sr->path[0];
	bool heard = false;

	/* Nothing came for path_idle(): every path was silent together,
	 * our host unscheduled (its socket filling meanwhile: bench/
	 * multipath.sh at load 10-14 stalled 2-4 ms) or the requester
	 * idle. That says nothing of any one path, so it does not count
	 * towards one's silence: else the first arrival after it found
	 * every path idle and NAKed ePSN, queued right behind it (3,100
	 * spurious NAKs a run). Shorter shared silences count: a path that
	 * failed is still found while the others trickle, the gap timer
	 * firing before the next arrival. */
	if (sr->rx_last && now > sr->rx_last &&
	    now - sr->rx_last >= path_idle(sr)) {
		for (unsigned int i = 0; i < UR_SR_PATHS; i++)
			if (sr->path[i].used)
				sr->path[i].last_t += now - sr->rx_last;
	}
	if (now > sr->rx_last)
		sr->rx_last = now;
	for (unsigned int i = 0; i < UR_SR_PATHS; i++) {
		struct ur_sr_path *x = &sr->path[i];

		if (x->used && x->sport == sport) {
			e = x;
			break;
		}
		/* the first free entry, else the longest silent */
		if (lru->used && (!x->used || x->last_t < lru->last_t))
			lru = x;
	}
	if (!e) {
		if (lru->used || lru != &sr->path[0])
			sr->sprayed = true; /* a second port */
		e = lru;
		sr->path_new_t = now;
		e->used = true;
		e->sport = sport;
		e->max_psn = psn;
		heard = true;
	} else {
		if (ur_psn_diff(psn, e->max_psn) > 0)
			e->max_psn = psn;
		/* Named silent since it was last heard (told): news, however
		 * short the silence. By path_idle() alone a rail restored
		 * within it was never heard again: path_idle() had grown to
		 * 200 ms with the cut's NAK round trips, and the requester's
		 * probe copies then came every 8 ms (test_mp
		 * mp_cut_bond_refused: back in 34 ms in half the seeds, not
		 * within 200 in the others). */
		heard = e->told || e->last_t + path_idle(sr) <= now;
	}
	/* The resend our selective NAK asked for left after every request
	 * that had arrived by then (nak_top and below) was first sent: its
	 * path has passed them all, whatever its PSN. Without this the
	 * path that carried it, now fresh and behind the next hole, was
	 * waited for path_idle() (1 ms) before each next NAK (uroce-sim,
	 * MoE over failed links: 17 holes of one QP, 7 ms). */
	if (sr->nak_live && psn == sr->nak_psn &&
	    may_be_resend(sr, sr->nak_t, now) &&
	    ur_psn_diff(sr->nak_top, e->max_psn) > 0)
		e->max_psn = sr->nak_top;
	e->last_t = now;
	e->told = false;
	e->gone = false;
	e->rx_if = rx_if;
	sr->late_pkts++;
	/* A port heard first, or again after it went silent (path_wait no
	 * longer waited for it): the requester's probe of a path it took
	 * out came through (ur_mp.c "A path that fails"). */
	if (heard)
		path_notice(qp, UR_CNP_HEARD, sport, psn);
}

/* A CNP of the extension (docs/wire.md "CNP"): @what in the first
 * reserved byte, @sport (the port a notice names, or 0) in the next two;
 * from our port @by (0: as any answer). False: no transmit buffer. */
static bool sr_cnp(struct ur_qp *qp, uint8_t what, uint16_t sport,
		   uint32_t psn, uint16_t n, uint16_t by)
{
	struct ur_ipudp path = qp->priv->attr.path;
	struct ur_txhdr h = {
		.opcode = UR_OP_CNP,
		.dqpn = qp->priv->attr.dest_qp_num,
		.psn = psn,
	};
	struct ur_pktbuf *b = ur__tx_alloc(qp, h.opcode, UR_CNP_PAYLOAD_LEN);
	uint8_t *pl;

	if (!b)
		return false;
	pl = ur__tx_payload(b, h.opcode);
	memset(pl, 0, UR_CNP_PAYLOAD_LEN);
	pl[0] = what;
	ur_put16(pl + 2, sport);
	ur_put16(pl + 4, n);
	path.sport = by;
	ur__tx_send(qp, b, &h, UR_CNP_PAYLOAD_LEN, by ? &path : NULL);
	return true;
}

/*
 * A late notice (docs/wire.md "Spraying"): the request at ePSN came after
 * later ones from other paths had waited for it longer than the gap
 * timer's floor: its path is queued deeper than theirs. The responder
 * names it in a CNP with the selective-repeat bit and UR_CNP_LATE in the
 * first reserved byte, at most once per UR_SR_LATE_EVERY requests, and
 * the requester's spraying moves weight off that path (ur__mp_late), so
 * that the split follows the paths' rates (a selective NAK used to be
 * this signal, at the price of a resend). Only towards a requester that
 * marks its requests; DCQCN does not see it.
 */
static void late_notice(struct ur_qp *qp, uint32_t psn)
{
	if (!qp->priv->sr.rx_peer || !sr_cnp(qp, UR_CNP_LATE, 0, psn, 0, 0))
		return;
	qp->priv->sr.late_pkts = 0;
	qp->dev->cnt.tx_sr_late++;
}

/*
 * A path notice (docs/wire.md "Spraying"): a CNP like the late notice,
 * UR_CNP_HEARD in the first reserved byte and the source port heard in
 * the next two. A requester that took that port's path out of its spray
 * puts it back: its probes are copies of requests that also leave on a
 * live path, so that a lost one holds nothing, and only this says one
 * arrived. UR_CNP_SILENT instead: a gap is NAKed without waiting for
 * that port, silent for path_idle() while others delivered (RACK's
 * test, RFC 8985, made where the arrivals are seen).
 */
static void path_notice(struct ur_qp *qp, uint8_t what, uint16_t sport,
			uint32_t psn)
{
	const struct ur_mp *mp = qp->priv->mp;

	/* only to a requester that sprays (a second port seen) */
	if (!qp->priv->sr.rx_peer || !qp->priv->sr.sprayed)
		return;
	/* A silent notice by each of our ports that is up: sprayed as
	 * any answer, it went by the cut rail in turn and was lost there
	 * (bench/bond.sh rdrop traces: the sender then found the path by
	 * its own losses, or 27 ms later). */
	if (what == UR_CNP_SILENT && mp && mp->k > 1) {
		for (unsigned int i = 0; i < mp->k; i++)
			if (!mp->down[i])
				sr_cnp(qp, what, sport, psn, 0, mp->sport[i]);
		return;
	}
	sr_cnp(qp, what, sport, psn, 0, 0);
}

/* 0 if every delivering path passed @epsn (it is lost); else when the
 * first path that has not goes idle. */
static uint64_t path_wait(const struct ur_sr *sr, uint32_t epsn, uint64_t now)
{
	uint64_t idle = path_idle(sr), until = 0;

	for (unsigned int i = 0; i < UR_SR_PATHS; i++) {
		const struct ur_sr_path *x = &sr->path[i];

		if (!x->used || x->gone || x->last_t + idle <= now ||
		    ur_psn_diff(x->max_psn, epsn) > 0)
			continue;
		if (!until || x->last_t + idle < until)
			until = x->last_t + idle;
	}
	return until;
}

/*
 * The ports whose interface stopped receiving (a bonded port's host
 * knows: ur_dev_ops.rx_if_ok) among those that have not passed ePSN:
 * named in a silent notice now, and not waited for. Silence seen per
 * port takes path_idle() (4 x the gap timer: 20 ms in bench/bond.sh),
 * and the requester stands still once its window is full of requests
 * behind the first one lost (256 packets: 3-7 ms); the host sees a
 * silent interface in about 2 ms (udp.c bond_silent), and a refused
 * send at once. Asked every UR_SR_IF_POLL_NS while a gap waits.
 *
 * A refused send is known only once something is sent, and a responder
 * with a gap open sends nothing: its ACK waits for ePSN. So when a gap
 * first waits for a port, a plain ACK (ur__tx_probe_ack, a duplicate)
 * goes by each of our own ports, at most every UR_SR_IF_PROBE_NS: a
 * rail whose sends the host refuses is then known at the next ask. On
 * the bed (bench/bond.sh rdrop: the receiver's DROP both ways), the
 * window filled before the others had 16 arrivals, or the engine fell
 * 7 ms behind, and the gap was named only after path_idle(): 20 ms.
 */
#define UR_SR_IF_POLL_NS 250000ull
#define UR_SR_IF_PROBE_NS 2000000ull

bool ur__sr_if_gone(const struct ur_qp *qp)
{
	const struct ur_sr *sr = &qp->priv->sr;

	for (unsigned int i = 0; i < UR_SR_PATHS; i++)
		if (sr->path[i].used && sr->path[i].gone)
			return true;
	return false;
}

static void ifs_probe(struct ur_qp *qp, uint64_t now)
{
	struct ur_sr *sr = &qp->priv->sr;
	const struct ur_mp *mp = qp->priv->mp;

	if (!mp || mp->k < 2 || now < sr->if_probe_at ||
	    (qp->state != UR_QPS_RTS && qp->state != UR_QPS_SQD))
		return;
	sr->if_probe_at = now + UR_SR_IF_PROBE_NS;
	for (unsigned int i = 0; i < mp->k; i++)
		if (!mp->down[i])
			ur__tx_probe_ack(qp, mp->sport[i]);
}

static void ifs_gone(struct ur_qp *qp, uint64_t now)
{
	const struct ur_dev_ops *ops = qp->dev->ops;
	struct ur_qp_priv *p = qp->priv;
	struct ur_sr *sr = &p->sr;
	bool more = false, asked = false;

	if (!ops->rx_if_ok || !sr->sprayed)
		return;
	for (unsigned int i = 0; i < UR_SR_PATHS; i++) {
		struct ur_sr_path *x = &sr->path[i];

		if (!x->used || !x->rx_if || x->gone ||
		    ur_psn_diff(x->max_psn, p->resp.psn) > 0)
			continue;
		if (now < sr->if_poll_at) {
			more = true;
			continue;
		}
		if (ops->rx_if_ok(qp->dev->host, x->rx_if, now)) {
			more = asked = true;
			continue;
		}
		x->gone = true;
		if (!x->told) {
			x->told = true;
			path_notice(qp, UR_CNP_SILENT, x->sport, p->resp.psn);
		}
	}
	if (asked)
		ifs_probe(qp, now);
	if (now >= sr->if_poll_at)
		sr->if_poll_at = now + UR_SR_IF_POLL_NS;
	if (more && sr->if_poll_at < sr->gap_deadline)
		sr->gap_deadline = sr->if_poll_at;
}

/*
 * Holes. A selective NAK names ePSN alone, and the next hole is NAKed once
 * that resend has filled the first: one hole per round trip, which bounds
 * a QP at 1/p packets per round trip at loss p (109 Mbit/s at 5 % and 1.5
 * ms: bench/results/2026-12-07-spray4.md). So while the NAK for ePSN is
 * out, the PSNs missing further on go to the requester in hole reports
 * (CNPs with UR_CNP_HOLE, docs/wire.md "Selective repeat"; SACK blocks
 * turned around, RFC 2018), each once it is lost by the gap timer's test:
 * the held request after it waited reorder_ns and every delivering path
 * has passed it. Only to a requester that marks its requests, over one
 * path. A resend that arrives is a NAK-to-resend sample; one that is lost,
 * or a report that is, is found when its PSN becomes ePSN: its NAK counts
 * as sent at the report (repeated renak_after() from then), not at the
 * transport timer.
 */
static void hole_mark(struct ur_sr *sr, uint32_t psn, uint64_t now)
{
	struct ur_sr_rep *r = &sr->rep[psn % UR_SR_NAKED];

	r->psn1 = psn + 1;
	r->top = sr->held_last ? sr->held_last->psn : psn;
	r->t = now;
	sr->naked[psn % UR_SR_NAKED] = psn + 1; /* a late original: spurious */
}

static void holes_report(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_sr *sr = &p->sr;
	struct ur_sr_slot *s;
	uint32_t next;

	/* Not over sprayed paths: there a report for a path that came
	 * back (test_mp mp_cut16) cost 118 spurious resends and took
	 * weight off it, and its restore took 60 ms instead of 14. */
	if (!sr->rx_peer || !sr->naked || sr->sprayed)
		return;
	if (!sr->rep && !(sr->rep = calloc(UR_SR_NAKED, sizeof(*sr->rep))))
		return;
	s = sr->hole_cur ? sr->hole_cur->next : sr->held;
	next = sr->hole_cur ? ur_psn_add(sr->hole_cur->psn, sr->hole_cur->span)
			    : ur_psn_add(p->resp.psn, 1);
	for (; s; sr->hole_cur = s, next = ur_psn_add(s->psn, s->span), s = s->next) {
		int32_t n = ur_psn_diff(s->psn, next);
		uint64_t at = s->t + sr->p.reorder_ns;

		if (n <= 0 || sr->rep[next % UR_SR_NAKED].psn1 == next + 1)
			continue; /* no hole, or reported before a drain */
		if (at <= now)
			at = path_wait(sr, ur_psn_add(s->psn, UR_PSN_MASK), now);
		if (at) { /* not lost yet: look again then */
			if (at < sr->gap_deadline)
				sr->gap_deadline = at;
			return;
		}
		if (n > UINT16_MAX) /* the rest is NAKed in turn */
			n = UINT16_MAX;
		if (!sr_cnp(qp, UR_CNP_HOLE, 0, next, (uint16_t)n, 0))
			return; /* no buffer: at the next arrival */
		qp->dev->cnt.tx_sr_hole++;
		for (int32_t i = 0; i < n; i++)
			hole_mark(sr, ur_psn_add(next, (uint32_t)i), now);
	}
}

/* ePSN moved to a PSN a hole report named: that report was its NAK. */
static void hole_adopt(struct ur_qp *qp)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_sr *sr = &p->sr;
	struct ur_sr_rep *r;

	if (!sr->rep || p->resp.nak_sent || sr->gbn_sent)
		return;
	r = &sr->rep[p->resp.psn % UR_SR_NAKED];
	if (r->psn1 != p->resp.psn + 1)
		return;
	r->psn1 = 0;
	p->resp.nak_sent = true;
	sr->nak_live = true;
	sr->nak_again = false;
	sr->nak_repeats = 0;
	sr->nak_psn = p->resp.psn;
	sr->nak_t = sr->nak_t0 = r->t;
	sr->nak_top = r->top;
}

/* Quiet on every port this long: see gap_arm. The gap timer, at least
 * UR_SR_ALL_QUIET_NS: a slow path's packets come that far apart (25
 * Mbit/s: 330 us a 1 KiB packet; test_sr sr_two_paths_reorder, with the
 * gap timer alone, NAKed 7 late ones). */
#define UR_SR_ALL_QUIET_NS 2000000ull
static uint64_t all_quiet_ns(const struct ur_sr *sr)
{
	return sr->p.reorder_ns > UR_SR_ALL_QUIET_NS ? sr->p.reorder_ns
						     : UR_SR_ALL_QUIET_NS;
}

/* When to NAK the gap at ePSN: reorder_ns after the oldest held request
 * arrived (reordering within a path), and once no path that is still
 * delivering may hold ePSN behind (above); at once if both have passed. */
static void gap_arm(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_sr *sr = &p->sr;
	uint64_t oldest, wait;
	bool all_quiet;

	sr->gap_deadline = UINT64_MAX;
	if (sr->held)
		hole_adopt(qp);
	if (sr->held && sr->nak_live && sr->nak_psn == p->resp.psn &&
	    p->resp.nak_sent && !sr->gbn_sent) {
		/* our selective NAK for ePSN is out: repeat it when due,
		 * or once a later request's resend came */
		if (sr->nak_t + renak_after(sr) <= now)
			sr_nak(qp, true, now);
		else if (sr->nak_t < sr->fill_t)
			sr_nak(qp, false, now);
		else
			sr->gap_deadline = sr->nak_t + renak_after(sr);
		holes_report(qp, now);
		return;
	}
	if (!sr->held || p->resp.nak_sent)
		return;
	ifs_gone(qp, now); /* may arm gap_deadline for its next ask */
	oldest = held_oldest(sr);
	if (oldest + sr->p.reorder_ns > now) {
		if (oldest + sr->p.reorder_ns < sr->gap_deadline)
			sr->gap_deadline = oldest + sr->p.reorder_ns;
		return;
	}
	/* Sprayed, nothing came by any port for the gap timer while the
	 * gap waits: a path that still held ePSN would have delivered it
	 * (a FIFO link does not go quiet with packets queued), so none is
	 * waited for. The requester stands still once its window is full
	 * behind ePSN, and where the rail that carried ePSN was the last to
	 * deliver, the other has nothing left to show the rail silent by
	 * (udp.c bond_silent's count): ePSN waited for path_idle(), 20 ms
	 * (test_mp mp_cut_bond_silent: 29 of seeds 1..60). Timers run after
	 * the host drained what arrived (tnet, the engine), so a stall of
	 * our own is no silence here; the requester's is, so the ports are
	 * not named silent for it, only the gap NAKed: named, they took a
	 * live path out 3 times in a healthy bonded run at load 15
	 * (bench/bond.sh), where a spurious NAK costs one resend. */
	all_quiet = sr->sprayed && sr->rx_last &&
		    now - sr->rx_last >= all_quiet_ns(sr);
	wait = all_quiet ? 0 : path_wait(sr, p->resp.psn, now);
	if (wait) {
		if (sr->sprayed && sr->rx_last + all_quiet_ns(sr) < wait)
			wait = sr->rx_last + all_quiet_ns(sr);
		if (wait < sr->gap_deadline)
			sr->gap_deadline = wait;
		return;
	}
	/* The ports not waited for because silent, once each until heard
	 * again: the requester takes out those it still sends on. */
	for (unsigned int i = 0; i < UR_SR_PATHS; i++) {
		struct ur_sr_path *x = &sr->path[i];

		if (x->used && !x->told && x->last_t + path_idle(sr) <= now &&
		    ur_psn_diff(x->max_psn, p->resp.psn) <= 0) {
			x->told = true;
			path_notice(qp, UR_CNP_SILENT, x->sport, p->resp.psn);
		}
	}
	sr_nak(qp, true, now);
	holes_report(qp, now);
}

/* A request we cannot hold: one plain NAK for ePSN (go-back-N). */
static void sr_cannot_hold(struct ur_qp *qp)
{
	struct ur_qp_priv *p = qp->priv;

	qp->dev->cnt.rx_sr_drop++;
	if (p->sr.gbn_sent)
		return;
	p->sr.gbn_sent = true;
	p->resp.nak_sent = true;
	p->sr.gap_deadline = UINT64_MAX;
	ur__tx_ack_plain(qp, ur_aeth_nak(UR_NAK_PSN_SEQ_ERR), p->resp.psn);
}

void ur__sr_hold(struct ur_qp *qp, const struct ur_pkt *pkt, uint32_t d,
		  uint64_t now)
{
	struct ur_sr *sr = &qp->priv->sr;
	uint32_t len = (uint32_t)(pkt->payload - pkt->bth) + pkt->payload_len +
		       pkt->h.pad + UR_ICRC_LEN;
	struct ur_sr_slot **pp, *s;

	if (d >= sr->p.window) {
		sr_cannot_hold(qp);
		return;
	}
	/* Mostly in PSN order: after the last one without a walk. */
	pp = sr->held_last && ur_psn_diff(sr->held_last->psn, pkt->h.psn) < 0
		     ? &sr->held_last->next : &sr->held;
	for (; *pp; pp = &(*pp)->next) {
		int32_t e = ur_psn_diff((*pp)->psn, pkt->h.psn);

		if (e == 0) { /* already held: a duplicate */
			qp->dev->cnt.rx_duplicate++;
			qp->cnt.rx_duplicate++;
			return;
		}
		if (e > 0)
			break;
	}
	s = slot_get(qp->dev, len);
	if (!s) {
		sr_cannot_hold(qp);
		return;
	}
	if (sr->rep && sr->rep[pkt->h.psn % UR_SR_NAKED].psn1 == pkt->h.psn + 1) {
		/* a reported hole filled: its report-to-resend time (not
		 * a late original's) */
		struct ur_sr_rep *r = &sr->rep[pkt->h.psn % UR_SR_NAKED];

		r->psn1 = 0;
		if (may_be_resend(sr, r->t, now)) {
			nak_sample(sr, now - r->t);
			sr_filled_at(sr, r->t);
		}
	}
	memcpy(s->data, pkt->bth, len);
	s->len = len;
	s->psn = pkt->h.psn;
	/* A READ takes a PSN per response (9.7.5.1.3): no hole after it. */
	s->span = pkt->mask & UR_OPF_READ ? ur_npkts(pkt->reth.len, ur_qp_mtu(qp)) : 1;
	if (!s->span)
		s->span = 1;
	s->t = now;
	s->next = *pp;
	*pp = s;
	if (!s->next)
		sr->held_last = s;
	arr_link(sr, s);
	sr->nheld++;
	qp->dev->cnt.rx_sr_held++;
	qp->cnt.rx_sr_held++;
	/* Also when armed: this arrival may show that every path passed
	 * ePSN. */
	gap_arm(qp, now);
}

static bool receives(const struct ur_qp *qp)
{
	return qp->state == UR_QPS_RTR || qp->state == UR_QPS_RTS ||
	       qp->state == UR_QPS_SQD;
}

void ur__sr_drain(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_sr *sr = &p->sr;
	uint32_t epsn = p->resp.psn;

	if (sr->draining)
		return;
	sr->draining = true;
	while (sr->held && receives(qp) && !p->resp.rd_active) {
		struct ur_sr_slot *s = sr->held;
		int32_t d = ur_psn_diff(s->psn, p->resp.psn);
		struct ur_pkt pkt;

		if (d > 0)
			break;
		sr->held = s->next;
		if (!sr->held)
			sr->held_last = NULL;
		arr_unlink(sr, s);
		sr->nheld--;
		if (s == sr->hole_cur)
			sr->hole_cur = NULL;
		if (d == 0 && ur_pkt_decode(s->data, s->len, &pkt) == UR_DEC_OK)
			ur__resp_run(qp, &pkt, now);
		/* else: overtaken (a resent copy ran first) */
		slot_put(qp->dev, s);
	}
	sr->draining = false;
	if (!receives(qp)) {
		ur__sr_release(qp);
		return;
	}
	if (p->resp.psn != epsn)
		sr->gbn_sent = false;
	gap_arm(qp, now);
}

void ur__sr_timer(struct ur_qp *qp, uint64_t now)
{
	struct ur_sr *sr = &qp->priv->sr;

	if (sr->gap_deadline > now)
		return;
	sr->gap_deadline = UINT64_MAX;
	ur__sr_drain(qp, now); /* re-arms, or NAKs the gap */
}

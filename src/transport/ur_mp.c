// SPDX-License-Identifier: MIT
/*
 * Spraying (docs/wire.md "Spraying"): which of its source ports an RC
 * QP's next request leaves from. Paths are weighted, and the weights
 * follow what the paths deliver: a path whose packet a selective NAK, a
 * go-back-N NAK or a timeout names as lost halves its weight; a path whose
 * packet a CNP names as CE-marked (the peer's notification point echoes
 * the PSN, a negotiated extension) loses a quarter; each request an ACK
 * covers gives its path one back (AIMD per path, as MP-RDMA's
 * congestion-aware spraying and TCP do per flow). Requests go out in a smooth weighted round robin (each
 * path's share follows its weight, interleaved rather than in bursts), so
 * a congested or cut path sheds traffic within a few round trips and wins
 * it back when it recovers. The simulator drives this same code.
 */
#include <stdlib.h>
#include <string.h>

#include "ur_qp_priv.h"

#define MP_W_MIN 1
#define MP_W_MAX 64
#define MP_W_INIT 16
#define MP_RING_MIN 64
#define MP_RING_MAX 65536 /* the largest selective-repeat window */

/* The ring remembers the path of the last @window request PSNs (the
 * selective-repeat window: feedback names nothing older). */
struct ur_mp *ur__mp_new(const uint16_t *sports, unsigned int k,
			 unsigned int flags, uint32_t window)
{
	uint32_t ring = MP_RING_MIN;
	struct ur_mp *mp;

	while (ring < window && ring < MP_RING_MAX)
		ring *= 2;
	mp = calloc(1, sizeof(*mp) + ring);
	if (!mp)
		return NULL;
	for (unsigned int i = 0; i < k; i++) {
		mp->sport[i] = sports[i];
		mp->w[i] = MP_W_INIT;
	}
	mp->k = (uint8_t)k;
	mp->oblivious = flags & UR_MP_OBLIVIOUS;
	mp->ring = ring;
	return mp;
}

/* The path @psn left on, or -1 (one port, or an index out of range). */
static int path_of(const struct ur_mp *mp, uint32_t psn)
{
	uint8_t i = mp->psn_path[psn & (mp->ring - 1u)];

	return mp->k > 1 && i < mp->k ? i : -1;
}

/* One step of the smooth weighted round robin. */
static int swrr(struct ur_mp *mp)
{
	int total = 0, best = 0;

	for (unsigned int i = 0; i < mp->k; i++) {
		mp->cur[i] = (int16_t)(mp->cur[i] + mp->w[i]);
		total += mp->w[i];
		if (mp->cur[i] > mp->cur[best])
			best = (int)i;
	}
	mp->cur[best] = (int16_t)(mp->cur[best] - total);
	return best;
}

unsigned int ur__mp_pick(struct ur_mp *mp, uint32_t psn, bool resend)
{
	/* A resend avoids the path its original left on (it was lost
	 * there); otherwise it takes its turn like any request, so that
	 * the resends of a timeout spread over the paths as their weights
	 * say rather than all falling on one that may be cut too. */
	int lost = resend && !mp->oblivious ? path_of(mp, psn) : -1;
	int best = swrr(mp);

	if (best == lost && mp->k > 1)
		best = swrr(mp);
	mp->psn_path[psn & (mp->ring - 1u)] = (uint8_t)best;
	mp->cnt[best].packets++;
	return (unsigned int)best;
}

void ur__mp_loss(struct ur_mp *mp, uint32_t psn)
{
	int i = path_of(mp, psn);

	if (i < 0)
		return;
	mp->cnt[i].losses++;
	if (!mp->oblivious)
		mp->w[i] = (uint8_t)(mp->w[i] / 2 > MP_W_MIN ? mp->w[i] / 2
							     : MP_W_MIN);
}

void ur__mp_ecn(struct ur_mp *mp, uint32_t psn)
{
	int i = path_of(mp, psn);

	if (i < 0)
		return;
	mp->cnt[i].ecn++;
	if (!mp->oblivious) {
		uint8_t cut = (uint8_t)(mp->w[i] / 4 ? mp->w[i] / 4 : 1);

		mp->w[i] = (uint8_t)(mp->w[i] - cut > MP_W_MIN ? mp->w[i] - cut
							       : MP_W_MIN);
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
	if (!mp->oblivious) {
		uint8_t cut = (uint8_t)(mp->w[i] / 4 ? mp->w[i] / 4 : 1);

		mp->w[i] = (uint8_t)(mp->w[i] - cut > MP_W_MIN ? mp->w[i] - cut
							       : MP_W_MIN);
	}
}

void ur__mp_acked(struct ur_mp *mp, uint32_t psn, uint32_t n)
{
	/* The ACK covered requests psn .. psn + n - 1: each was delivered
	 * over the path it last left on, and only those paths gain. A cut
	 * path gains nothing, so its weight stays at the floor (its share a
	 * few percent, every packet of it resent), and a restored one wins
	 * its share back as its packets arrive again, in a few hundred of
	 * the QP's packets. */
	if (mp->oblivious)
		return;
	if (n > mp->ring)
		psn += n - mp->ring, n = mp->ring;
	for (; n; n--, psn++) {
		int i = path_of(mp, psn);

		if (i >= 0 && mp->w[i] < MP_W_MAX)
			mp->w[i]++;
	}
}

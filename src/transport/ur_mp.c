// SPDX-License-Identifier: MIT
/*
 * Spraying (docs/wire.md "Spraying"): which of its source ports an RC
 * QP's next request leaves from. Paths are weighted, and the weights
 * follow what the paths deliver: a path whose packet a selective NAK, a
 * go-back-N NAK or a timeout names as lost halves its weight; every ACK
 * gives each path one back (AIMD per path, as MP-RDMA's congestion-aware
 * spraying and TCP do per flow). Requests go out in a
 * smooth weighted round robin (each path's share follows its weight,
 * interleaved rather than in bursts), so a congested or cut path sheds
 * traffic within a few round trips and wins it back when it recovers.
 */
#include <string.h>

#include "ur_qp_priv.h"

#define MP_W_MIN 1
#define MP_W_MAX 64
#define MP_W_INIT 16

void ur__mp_init(struct ur_mp *mp, const uint16_t *sports, unsigned int k)
{
	memset(mp, 0, sizeof(*mp));
	for (unsigned int i = 0; i < k; i++) {
		mp->sport[i] = sports[i];
		mp->w[i] = MP_W_INIT;
	}
	mp->k = (uint8_t)k;
}

unsigned int ur__mp_pick(struct ur_mp *mp, uint32_t psn)
{
	int total = 0, best = 0;

	for (unsigned int i = 0; i < mp->k; i++) {
		mp->cur[i] = (int16_t)(mp->cur[i] + mp->w[i]);
		total += mp->w[i];
		if (mp->cur[i] > mp->cur[best])
			best = (int)i;
	}
	mp->cur[best] = (int16_t)(mp->cur[best] - total);
	mp->psn_path[psn & (UR_MP_RING - 1)] = (uint8_t)best;
	return (unsigned int)best;
}

void ur__mp_loss(struct ur_mp *mp, uint32_t psn)
{
	uint8_t i = mp->psn_path[psn & (UR_MP_RING - 1)];

	if (mp->k > 1 && i < mp->k) {
		mp->w[i] = (uint8_t)(mp->w[i] / 2 > MP_W_MIN ? mp->w[i] / 2
							     : MP_W_MIN);
		mp->losses[i]++;
	}
}

void ur__mp_acked(struct ur_mp *mp)
{
	/* Every path gains: a cumulative ACK says little about which path
	 * delivered (the PSN it names is often the late one that closed a
	 * gap), and a path that loses nothing should win its share back. */
	for (unsigned int i = 0; i < mp->k; i++)
		if (mp->w[i] < MP_W_MAX)
			mp->w[i]++;
}

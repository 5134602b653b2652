// SPDX-License-Identifier: MIT
/*
 * Base and extended transport header codecs (IBTA vol. 1 9.2, 9.3), all via
 * explicit big-endian loads and stores.
 */
#include "ur_wire.h"

/*
 * BTH (IBTA 9.2): opcode | SE M Pad(2) TVer(4) | P_Key(16) |
 * FECN BECN resv6 | DestQP(24) | AckReq resv7 | PSN(24).
 */
void ur_bth_encode(uint8_t *p, const struct ur_bth *h)
{
	p[0] = h->opcode;
	p[1] = (uint8_t)((h->se ? 0x80 : 0) | (h->mig ? 0x40 : 0) |
			 ((h->pad & 3) << 4) | (h->tver & 0xf));
	ur_put16(p + 2, h->pkey);
	p[4] = (uint8_t)((h->fecn ? 0x80 : 0) | (h->becn ? 0x40 : 0));
	ur_put24(p + 5, h->dqpn & 0xffffff);
	p[8] = h->ackreq ? 0x80 : 0;
	ur_put24(p + 9, h->psn & UR_PSN_MASK);
}

void ur_bth_decode(const uint8_t *p, struct ur_bth *h)
{
	h->opcode = ur_bth_opcode(p);
	h->se = ur_bth_se(p);
	h->mig = ur_bth_mig(p);
	h->pad = ur_bth_pad(p);
	h->tver = ur_bth_tver(p);
	h->pkey = ur_bth_pkey(p);
	h->fecn = ur_bth_fecn(p);
	h->becn = ur_bth_becn(p);
	h->dqpn = ur_bth_dqpn(p);
	h->ackreq = ur_bth_ackreq(p);
	h->psn = ur_bth_psn(p);
}

/* RETH (IBTA 9.3.3): VA(64) | R_Key(32) | DMA length(32). */
void ur_reth_encode(uint8_t *p, const struct ur_reth *r)
{
	ur_put64(p, r->va);
	ur_put32(p + 8, r->rkey);
	ur_put32(p + 12, r->len);
}

void ur_reth_decode(const uint8_t *p, struct ur_reth *r)
{
	r->va = ur_get64(p);
	r->rkey = ur_get32(p + 8);
	r->len = ur_get32(p + 12);
}

/* AtomicETH (IBTA 9.3.4): VA(64) | R_Key(32) | Swap/Add(64) | Compare(64). */
void ur_atmeth_encode(uint8_t *p, const struct ur_atmeth *a)
{
	ur_put64(p, a->va);
	ur_put32(p + 8, a->rkey);
	ur_put64(p + 12, a->swap_add);
	ur_put64(p + 20, a->compare);
}

void ur_atmeth_decode(const uint8_t *p, struct ur_atmeth *a)
{
	a->va = ur_get64(p);
	a->rkey = ur_get32(p + 8);
	a->swap_add = ur_get64(p + 12);
	a->compare = ur_get64(p + 20);
}

/* DETH (IBTA 9.3.2): Q_Key(32) | resv8 | SrcQP(24). */
void ur_deth_encode(uint8_t *p, const struct ur_deth *d)
{
	ur_put32(p, d->qkey);
	p[4] = 0;
	ur_put24(p + 5, d->sqpn & 0xffffff);
}

void ur_deth_decode(const uint8_t *p, struct ur_deth *d)
{
	d->qkey = ur_get32(p);
	d->sqpn = ur_get24(p + 5);
}

/* AETH (IBTA 9.3.5): Syndrome(8) | MSN(24). */
void ur_aeth_encode(uint8_t *p, const struct ur_aeth *a)
{
	p[0] = a->syndrome;
	ur_put24(p + 1, a->msn & 0xffffff);
}

void ur_aeth_decode(const uint8_t *p, struct ur_aeth *a)
{
	a->syndrome = p[0];
	a->msn = ur_get24(p + 1);
}

/*
 * FETH (IBTA 1.5 memory placement extensions): resv26 | Selectivity
 * Level(2) | Placement Type(4), as rxe lays it out.
 */
void ur_feth_encode(uint8_t *p, const struct ur_feth *f)
{
	ur_put32(p, (uint32_t)((f->sel_level & 3) << 4) | (f->placement & 0xf));
}

void ur_feth_decode(const uint8_t *p, struct ur_feth *f)
{
	uint32_t v = ur_get32(p);

	f->sel_level = (v >> 4) & 3;
	f->placement = v & 0xf;
}

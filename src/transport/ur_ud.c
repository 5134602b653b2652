// SPDX-License-Identifier: MIT
/*
 * UD receive (IBTA 9.9, 10.2.4): Q_Key check, one message per packet, and
 * the 40-byte GRH slot at the start of every receive buffer. Over RoCEv2
 * the slot holds the IP header of the datagram: an IPv6 header as is, or
 * for IPv4 20 zero bytes followed by the 20-byte IPv4 header (Annex A17.4,
 * as rdma-core and Linux rxe present it).
 */
#include <string.h>

#include "ur_qp_priv.h"

#define UR_GRH_LEN 40
#define UDP_HDR_LEN 8

static uint16_t ipv4_csum(const uint8_t *h)
{
	uint32_t s = 0;

	for (int i = 0; i < 20; i += 2)
		s += ur_get16(h + i);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Fill the 40-byte GRH slot for a datagram whose IB part was @ib_len bytes. */
void ur__ud_grh(uint8_t *grh, const struct ur_rxinfo *ri, uint32_t ib_len)
{
	const struct ur_ipudp *ip = &ri->path;

	memset(grh, 0, UR_GRH_LEN);
	if (ip->v6) {
		ur_put32(grh, (6u << 28) | ((uint32_t)ip->tos << 20) |
				      (ip->flow_label & 0xfffff));
		ur_put16(grh + 4, (uint16_t)(UDP_HDR_LEN + ib_len));
		grh[6] = 17; /* UDP */
		grh[7] = ip->ttl;
		memcpy(grh + 8, ip->src, 16);
		memcpy(grh + 24, ip->dst, 16);
		return;
	}
	grh += 20;
	grh[0] = 0x45;
	grh[1] = ip->tos;
	ur_put16(grh + 2, (uint16_t)(20 + UDP_HDR_LEN + ib_len));
	ur_put16(grh + 4, ip->ip_id);
	ur_put16(grh + 6, ip->ip_frag);
	grh[8] = ip->ttl;
	grh[9] = 17;
	memcpy(grh + 12, ip->src, 4);
	memcpy(grh + 16, ip->dst, 4);
	ur_put16(grh + 10, ipv4_csum(grh));
}

void ur__ud_rx(struct ur_qp *qp, const struct ur_pkt *pkt,
		const struct ur_rxinfo *ri, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_rwqe *rwqe;
	struct ur_qsge *sge;
	uint8_t grh[UR_GRH_LEN];
	uint32_t ib_len, flags = UR_WC_GRH, imm = 0;

	if (!(pkt->mask & UR_HDR_DETH) || !(pkt->mask & UR_OPF_SEND))
		return;
	if (pkt->deth.qkey != p->attr.qkey) {
		qp->dev->cnt.rx_drop_qkey++;
		return;
	}
	if (!ur__rq_ready(qp)) {
		qp->dev->cnt.rx_drop_no_recv++;
		return;
	}
	rwqe = ur_rwqe_at(qp, p->rq_head);
	sge = ur_rwqe_sge(qp, p->rq_head);
	if (ur__sge_resolve(qp, sge, rwqe->num_sge, UR_ACCESS_LOCAL_WRITE)) {
		ur__recv_complete(qp, UR_WC_LOC_PROT_ERR, UR_WC_RECV, 0, 0, 0,
				   pkt->deth.sqpn, false, now);
		return;
	}
	if (rwqe->length < UR_GRH_LEN + pkt->payload_len) {
		ur__recv_complete(qp, UR_WC_LOC_LEN_ERR, UR_WC_RECV, 0, 0, 0,
				   pkt->deth.sqpn, false, now);
		return;
	}
	ib_len = (uint32_t)(pkt->payload - pkt->bth) + pkt->payload_len +
		 pkt->h.pad + UR_ICRC_LEN;
	ur__ud_grh(grh, ri, ib_len);
	ur__sge_copy_in(sge, rwqe->num_sge, 0, grh, UR_GRH_LEN);
	ur__sge_copy_in(sge, rwqe->num_sge, UR_GRH_LEN, pkt->payload,
			 pkt->payload_len);
	if (pkt->mask & UR_OPF_IMM) {
		flags |= UR_WC_WITH_IMM;
		imm = ur_imm_net(pkt->imm);
	}
	/* RoCE has no service level on the wire; like mlx5 (whose layout
	 * UCX's UD DGID check reads) wc.sl says how the GRH area is filled:
	 * bit 3 UDP present, bits 2..0 the L3 type, 2 IPv4 (header in bytes
	 * 20..39), 1 IPv6 (the whole 40 bytes). */
	ur__recv_complete_sl(qp, UR_WC_SUCCESS, UR_WC_RECV,
			      UR_GRH_LEN + pkt->payload_len, imm, flags,
			      pkt->deth.sqpn, ri->path.v6 ? 0x9 : 0xa,
			      pkt->h.se, now);
}

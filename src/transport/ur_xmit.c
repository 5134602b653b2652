// SPDX-License-Identifier: MIT
/*
 * Building outgoing packets: headers are written through the wire codec at
 * the offsets the opcode table gives (IBTA 9.2, 9.3); the payload is
 * gathered by the caller straight into the host's buffer, so there is no
 * bounce copy.
 */
#include <stddef.h>
#include <string.h>

#include "ur_qp_priv.h"

/* The per-priority counters are groups of 8 in priority order. */
_Static_assert(offsetof(struct ur_counters, tx_prio7_pkts) ==
		       offsetof(struct ur_counters, tx_prio0_pkts) + 7 * 8 &&
	       offsetof(struct ur_counters, tx_prio7_bytes) ==
		       offsetof(struct ur_counters, tx_prio0_bytes) + 7 * 8 &&
	       offsetof(struct ur_counters, tx_prio7_held) ==
		       offsetof(struct ur_counters, tx_prio0_held) + 7 * 8,
	       "prio counters");

static uint32_t pad_of(uint32_t payload_len)
{
	return (4 - (payload_len & 3)) & 3;
}

struct ur_pktbuf *ur__tx_alloc(struct ur_qp *qp, uint8_t opcode,
				uint32_t payload_len)
{
	uint32_t len = (uint32_t)ur_pkt_hdr_len(opcode) + payload_len +
		       ur__crypt_overhead(qp) + pad_of(payload_len) +
		       UR_ICRC_LEN;
	struct ur_pktbuf *b;

	/* An ACK owed since earlier in the receive batch leaves before
	 * anything else of this QP's, where it would have been made. */
	if (qp->priv->resp.ack_owed)
		ur__tx_ack_owed(qp);
	b = qp->dev->ops->pkt_alloc(qp->dev->host, len);
	if (b && b->cap < len)
		return NULL; /* host contract broken; never write past cap */
	if (b) {
		b->ext = NULL;
		b->qp_io = qp->io_priv;
	}
	return b;
}

uint8_t *ur__tx_payload(struct ur_pktbuf *b, uint8_t opcode)
{
	return b->data + ur_pkt_hdr_len(opcode);
}

void ur__tx_payload_from(struct ur_qp *qp, struct ur_pktbuf *b,
			  uint8_t opcode, const uint8_t *src, uint32_t len)
{
	if (!len)
		return;
	/* By reference only past UR_TX_EXT_MIN: a small payload costs the
	 * kernel two more iovecs to gather (headers, payload, pad + ICRC),
	 * more than our copy; a GSO run of 32 such packets went as 96. */
	if (qp->dev->tx_ext && len > UR_TX_EXT_MIN)
		b->ext = src;
	else
		memcpy(ur__tx_payload(b, opcode), src, len);
}

void ur__tx_send(struct ur_qp *qp, struct ur_pktbuf *b,
		  const struct ur_txhdr *h, uint32_t payload_len,
		  const struct ur_ipudp *path)
{
	const struct ur_opcode_info *info = ur_opcode_info(h->opcode);
	uint8_t *p = b->data;
	uint32_t pad = pad_of(payload_len), extra = 0;
	struct ur_bth bth = {
		.opcode = h->opcode, .se = h->se, .ackreq = h->ackreq,
		.becn = h->becn,
		.pad = (uint8_t)pad, .pkey = UR_DEFAULT_PKEY,
		.dqpn = h->dqpn, .psn = h->psn & UR_PSN_MASK,
	};

	ur_bth_encode(p, &bth);
	if (qp->type == UR_QPT_RC && qp->priv->sr.p.enable) {
		/* Selective repeat (docs/wire.md "Extensions"): every request
		 * offers it (negotiated: once the peer is known to be uroce);
		 * answers confirm it once the peer's requests did, and CNPs
		 * then name the marked request's PSN (ur_cc.c). */
		if (((info->mask & UR_OPF_REQ) && ur__sr_offer(qp)) ||
		    ((info->mask & (UR_OPF_ACK | UR_OPF_CNP)) &&
		     qp->priv->sr.rx_peer && !h->no_sr))
			p[4] |= UR_BTH_EXT_SR;
	}
	if (qp->type == UR_QPT_RC && qp->priv->jumbo.enable) {
		/* Jumbo packets (docs/wire.md "Extensions"): requests offer
		 * the sizes our link carries (negotiated: once the peer is
		 * known to be uroce); answers take those of them the peer's
		 * requests offered. */
		if ((info->mask & UR_OPF_REQ) && ur__jumbo_offer(qp))
			p[4] |= ur_jumbo_bits(qp->dev->jumbo_max);
		else if (info->mask & UR_OPF_ACK)
			p[4] |= qp->priv->jumbo.rx_peer;
	}
	if (info->mask & UR_HDR_RETH)
		ur_reth_encode(p + info->off[UR_ETH_RETH], &h->reth);
	if (info->mask & UR_HDR_ATMETH)
		ur_atmeth_encode(p + info->off[UR_ETH_ATMETH], &h->atm);
	if (info->mask & UR_HDR_AETH)
		ur_aeth_encode(p + info->off[UR_ETH_AETH], &h->aeth);
	if (info->mask & UR_HDR_ATMACK)
		ur_put64(p + info->off[UR_ETH_ATMACK], h->atmack);
	if (info->mask & UR_HDR_DETH)
		ur_deth_encode(p + info->off[UR_ETH_DETH], &h->deth);
	if (info->mask & UR_HDR_IMMDT)
		ur_imm_put(p + info->off[UR_ETH_IMMDT], h->imm_net);
	if (info->mask & UR_HDR_IETH)
		ur_put32(p + info->off[UR_ETH_IETH], h->ieth);
	if (info->mask & UR_HDR_XRCETH)
		ur_xrceth_put(p + info->off[UR_ETH_XRCETH], h->xrc_srqn);
	if (qp->priv->crypt.alg) {
		/* Sealed (docs/wire.md "Encryption"): the ciphertext and the
		 * trailer replace the payload; the trailer is a multiple of 4
		 * so the pad stays the payload's. */
		ur__crypt_seal(qp, b, info->hdr_len, payload_len);
		extra = UR_CRYPT_TRAILER;
	}
	p += info->hdr_len + (b->ext ? 0 : payload_len + extra);
	memset(p, 0, pad + UR_ICRC_LEN);
	b->len = info->hdr_len + payload_len + extra + pad + UR_ICRC_LEN;

	b->path = path ? *path : qp->priv->attr.path;
	if (!b->path.sport)
		b->path.sport = qp->sport ? qp->sport
					   : ur_rocev2_sport(qp->qpn); /* ECMP entropy, A17.3 */
	/* Spraying: requests over the QP's ports (ur_mp.c), once the peer
	 * holds out-of-order ones (selective repeat answered, or known). */
	if (qp->priv->mp && (info->mask & UR_OPF_REQ) && ur__sr_offer(qp) &&
	    (qp->priv->sr.tx_peer || qp->priv->sr.p.peer_known ||
	     qp->priv->sr.peer_ok) && !path) {
		struct ur_mp *mp = qp->priv->mp;

		b->path.sport = mp->sport[ur__mp_pick(mp, h->psn, h->resend)];
	} else if (qp->priv->mp && qp->priv->mp->k > 1 &&
		   !(info->mask & UR_OPF_REQ) && qp->priv->sr.p.enable &&
		   qp->priv->sr.rx_peer && !path) {
		/* Answers to a peer that sprays go round the QP's own ports:
		 * on one, a cut path would take every ACK and NAK with it;
		 * spread, it loses a share that the next cumulative ACK (or
		 * a repeated NAK, ur_sr.c) covers; a path that is down
		 * (ur_mp.c) gets none. */
		b->path.sport = ur__mp_ans_sport(qp->priv->mp);
	}
	if (!b->path.dport)
		b->path.dport = UR_ROCEV2_PORT;
	/* Requests of RC/UC QPs under congestion control are ECN-capable,
	 * ECT(0) (RFC 3168; DCQCN section 3). */
	if ((info->mask & UR_OPF_REQ) && qp->type != UR_QPT_UD &&
	    qp->priv->cc.cc.p.algo != UR_CC_NONE)
		b->path.tos = (uint8_t)((b->path.tos & ~3u) | 2u);
	qp->dev->cnt.tx_packets++;
	qp->dev->cnt.tx_bytes += b->len;
	{
		unsigned int prio = ur__qp_prio(qp, &b->path);

		(&qp->dev->cnt.tx_prio0_pkts)[prio]++;
		(&qp->dev->cnt.tx_prio0_bytes)[prio] += b->len;
	}
	qp->cnt.tx_packets++;
	qp->cnt.tx_bytes += b->len;
	qp->dev->ops->pkt_send(qp->dev->host, b);
}

static void tx_ack(struct ur_qp *qp, uint8_t syndrome, uint32_t psn,
		   uint32_t msn, bool no_sr)
{
	struct ur_txhdr h = {
		.opcode = ur__op(qp, UR_OP_RC_ACKNOWLEDGE),
		.no_sr = no_sr,
		.dqpn = qp->priv->attr.dest_qp_num,
		.psn = psn,
		.aeth = { .syndrome = syndrome, .msn = msn },
	};
	struct ur_pktbuf *b = ur__tx_alloc(qp, h.opcode, 0);

	if (!b)
		return; /* the requester's timer recovers */
	switch (ur_aeth_kind(syndrome)) {
	case UR_AETH_RNR_NAK:
		qp->dev->cnt.tx_nak_rnr++;
		break;
	case UR_AETH_NAK:
		if (ur_aeth_value(syndrome) == UR_NAK_PSN_SEQ_ERR)
			qp->dev->cnt.tx_nak_seq++;
		else
			qp->dev->cnt.tx_nak_other++;
		break;
	default:
		break;
	}
	ur__tx_send(qp, b, &h, 0, NULL);
}

void ur__tx_ack(struct ur_qp *qp, uint8_t syndrome, uint32_t psn)
{
	tx_ack(qp, syndrome, psn, qp->priv->resp.msn, false);
}

void ur__tx_ack_plain(struct ur_qp *qp, uint8_t syndrome, uint32_t psn)
{
	tx_ack(qp, syndrome, psn, qp->priv->resp.msn, true);
}

void ur__tx_ack_owed(struct ur_qp *qp)
{
	struct ur_resp *r = &qp->priv->resp;

	if (!r->ack_owed)
		return;
	r->ack_owed = false; /* before ur__tx_alloc, which looks */
	tx_ack(qp, ur_aeth_ack(UR_AETH_CREDIT_INVALID), r->ack_psn, r->ack_msn,
	       false);
}

/* Spraying: a path the host says cannot send is probed with a plain ACK
 * of what the responder has (ePSN - 1: a duplicate, ignored by the
 * peer's completer, 9.7.5.1.2), not with a request that would open a
 * hole if lost; its arrival tells the peer's host the path works. */
void ur__tx_probe_ack(struct ur_qp *qp, uint16_t sport)
{
	struct ur_txhdr h = {
		.opcode = ur__op(qp, UR_OP_RC_ACKNOWLEDGE),
		.dqpn = qp->priv->attr.dest_qp_num,
		.psn = ur_psn_add(qp->priv->resp.psn, UR_PSN_MASK),
		.aeth = { .syndrome = ur_aeth_ack(UR_AETH_CREDIT_INVALID),
			  .msn = qp->priv->resp.msn },
	};
	struct ur_ipudp path = qp->priv->attr.path;
	struct ur_pktbuf *b = ur__tx_alloc(qp, h.opcode, 0);

	if (!b)
		return;
	path.sport = sport;
	ur__tx_send(qp, b, &h, 0, &path);
}

// SPDX-License-Identifier: MIT
/*
 * Device-level receive: decode, drop what is malformed or foreign, find the
 * QP (IBTA 9.6 packet header validation: P_Key, destination QP, QP state,
 * transport type), then hand the packet to the QP's responder, completer or
 * UD receive.
 */
#include "ur_qp_priv.h"

/* The transport service an opcode belongs to: its top three bits (9.2). */
static uint32_t opcode_qp_type(uint8_t opcode)
{
	switch (opcode >> 5) {
	case 0:
		return UR_QPT_RC;
	case 1:
		return UR_QPT_UC;
	case 3:
		return UR_QPT_UD;
	default:
		return 0;
	}
}

/* What every received datagram goes through: decode, P_Key. */
static int rx_check(struct ur_dev *dev, const uint8_t *buf, size_t len,
		    const struct ur_rxinfo *ri, struct ur_pkt *pkt)
{
	dev->cnt.rx_packets++;
	dev->cnt.rx_bytes += len;
	if (ur_pkt_decode(buf, len, pkt) != UR_DEC_OK) {
		dev->cnt.rx_drop_malformed++;
		return -EBADMSG;
	}
	if (ri && !ri->icrc_checked)
		dev->cnt.rx_unverified_icrc++;
	/* 9.6.1.1 / 10.9: the default P_Key, full or limited member. */
	if ((pkt->h.pkey & 0x7fff) != 0x7fff) {
		dev->cnt.rx_drop_pkey++;
		return -EACCES;
	}
	return 0;
}

int ur_dev_rx_mcast_classify(struct ur_dev *dev, const uint8_t *buf,
			     size_t len, const struct ur_rxinfo *ri,
			     struct ur_pkt *pkt)
{
	int rc = rx_check(dev, buf, len, ri, pkt);

	if (rc)
		return rc;
	/* 10.5.2: only UD sends are multicast, to QPN 0xFFFFFF. */
	if (pkt->h.dqpn != UR_MCAST_QPN ||
	    opcode_qp_type(pkt->h.opcode) != UR_QPT_UD) {
		dev->cnt.rx_drop_opcode++;
		return -EPROTO;
	}
	return 0;
}

int ur_dev_rx_classify(struct ur_dev *dev, const uint8_t *buf, size_t len,
		       const struct ur_rxinfo *ri, struct ur_pkt *pkt,
		       struct ur_qp **qpp)
{
	struct ur_qp *qp;
	int rc = rx_check(dev, buf, len, ri, pkt);

	if (rc)
		return rc;
	if (pkt->mask & UR_OPF_CNP)
		dev->cnt.rx_cnp++; /* for the sender's QP (A17.9.3) */
	qp = dev->ops->qp_lookup(dev->host, pkt->h.dqpn);
	if (!qp) {
		dev->cnt.rx_drop_no_qp++;
		return -ENOENT;
	}
	if ((pkt->mask & UR_OPF_CNP) && qp->type != UR_QPT_UD) {
		*qpp = qp;
		return 0;
	}
	/* XRC (prefix 101b) goes to XRC QPs only: requests to a TGT,
	 * responses to an INI. */
	if (qp->xrc ? !ur_op_is_xrc(pkt->h.opcode) ||
			      !(pkt->mask & (qp->xrc == UR_XRC_TGT ? UR_OPF_REQ
								    : UR_OPF_ACK))
		    : opcode_qp_type(pkt->h.opcode) != qp->type) {
		dev->cnt.rx_drop_opcode++;
		return -EPROTO;
	}
	if (!ur_state_receives(qp->state)) {
		dev->cnt.rx_drop_bad_state++;
		return -EINVAL;
	}
	*qpp = qp;
	return 0;
}

void ur_qp_rx(struct ur_qp *qp, const struct ur_pkt *pkt,
	      const struct ur_rxinfo *ri, uint64_t now)
{
	struct ur_pkt opened, rc;
	bool sealed_now = false;

	if (!ur_state_receives(qp->state)) {
		qp->dev->cnt.rx_drop_bad_state++;
		return;
	}
	if (qp->type != UR_QPT_UD && !ur__from_peer(qp, ri)) {
		/* Requests, ACKs, NAKs and CNPs alike: none of them may
		 * move a connection's state when forged off the path. */
		qp->dev->cnt.rx_drop_offpath++;
		return;
	}
	if (ur__crypt_pending(qp)) {
		/* Negotiating: plain is not decided, and the keys exist only
		 * once the peer's nonce is known. A packet that verifies
		 * under them proves the peer has ours: sealed from here. */
		if (!qp->priv->crypt.have_peer ||
		    ur__crypt_open(qp, pkt, &opened)) {
			qp->dev->cnt.rx_drop_auth++;
			return;
		}
		qp->priv->crypt.neg = UR_CRYPT_NEG_SEALED;
		sealed_now = true;
		pkt = &opened;
	} else if (qp->priv->crypt.alg) {
		/* Encrypted (docs/wire.md "Encryption"): the tag is checked
		 * before any state machine sees the packet; what fails is
		 * dropped and changes nothing. */
		int rc = ur__crypt_open(qp, pkt, &opened);

		if (rc) {
			if (rc == -EALREADY)
				qp->dev->cnt.rx_drop_replay++;
			else
				qp->dev->cnt.rx_drop_auth++;
			return;
		}
		pkt = &opened;
	} else if (ur_bth_ext_crypt(pkt->bth) && qp->type != UR_QPT_UD) {
		/* Sealed for a QP that has no key: its payload is ciphertext
		 * (a standard device would take it as data). */
		qp->dev->cnt.rx_drop_auth++;
		return;
	}
	if (qp->xrc && ur_op_is_xrc(pkt->h.opcode)) {
		/* XRC runs RC's state machines: they see the RC opcode, the
		 * XRCETH stays in the mask and rc.xrc_srqn (the headers were
		 * decoded already, at the XRC offsets). */
		rc = *pkt;
		rc.h.opcode = ur_op_xrc_to_rc(pkt->h.opcode);
		rc.info = ur_opcode_info(rc.h.opcode);
		rc.mask = rc.info->mask | (pkt->mask & UR_HDR_XRCETH);
		pkt = &rc;
	}
	qp->cnt.rx_packets++;
	qp->cnt.rx_bytes += pkt->payload_len;
	if (pkt->mask & UR_OPF_CNP) {
		ur__cc_rx_cnp(qp, pkt, now);
	} else if (pkt->mask & UR_OPF_REQ) {
		/* ECN CE (RFC 3168): this QP is the notification point. */
		if (ri && (ri->path.tos & 3) == 3)
			ur__cc_rx_ce(qp, pkt->h.psn, now);
		if (qp->type == UR_QPT_UD)
			ur__ud_rx(qp, pkt, ri, now);
		else
			ur__resp_rx(qp, pkt, ri, now);
	} else if (pkt->mask & UR_OPF_ACK) {
		uint32_t acked = qp->priv->comp.psn;
		int32_t d;

		if (qp->priv->mp)
			qp->priv->mp->now = now; /* (its round trip timing) */
		qp->priv->cc.ack_rx = ri && ri->rx_ns <= now ? ri->rx_ns : 0;
		ur__comp_rx(qp, pkt, now);
		qp->priv->cc.ack_rx = 0;
		d = ur_psn_diff(qp->priv->comp.psn, acked);
		if (d > 0) {
			ur__cc_acked(qp, acked, (uint32_t)d, now);
			if (qp->priv->mp) /* spraying: the paths that delivered */
				ur__mp_acked(qp->priv->mp, acked, (uint32_t)d);
		}
	}
	if (qp->priv->mp)
		ur__mp_tick(qp, now); /* a path that failed: out at once */
	if (sealed_now)
		ur_qp_progress(qp, now); /* what was posted meanwhile */
	ur__qp_update_deadline(qp);
}

int ur_dev_rx(struct ur_dev *dev, const uint8_t *buf, size_t len,
	      const struct ur_rxinfo *ri, uint64_t now)
{
	struct ur_pkt pkt;
	struct ur_qp *qp;
	int rc = ur_dev_rx_classify(dev, buf, len, ri, &pkt, &qp);

	if (rc)
		return rc;
	ur_qp_rx(qp, &pkt, ri, now);
	return 0;
}

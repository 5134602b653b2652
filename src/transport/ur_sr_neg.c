// SPDX-License-Identifier: MIT
/*
 * Negotiating selective repeat (and with it spraying) with the peer
 * (docs/wire.md "Selective repeat negotiation"). A QP whose selective
 * repeat is UR_SR_AUTO does not set UR_BTH_EXT_SR on its requests until
 * the peer has shown it is a uroce QP with selective repeat, so that a
 * standard peer (rxe, an RNIC) sees exactly the RoCEv2 it would see with
 * selective repeat off. Going INIT->RTR it sends a uroce vendor-class MAD
 * to the peer's QP1 (class 0x0A, vendor range 1, IBTA 13.4.4), as the
 * encryption hello does (ur_crypt_neg.c), and resends it (1 ms, doubling
 * to 64 ms) until the peer's hello or answer arrives or UR_SR_NEG_NS has
 * passed. A uroce QP with selective repeat on answers a hello. A standard
 * peer does not answer a vendor class: the QP stays plain go-back-N.
 * Nothing waits for the negotiation: requests leave unmarked meanwhile.
 *
 * The hello is not authenticated: it only says "I hold out-of-order
 * requests", and a forged one makes us set a reserved bit and spread
 * our source ports, which a standard peer ignores. It is taken only from
 * the QP's peer address, for this QP from the peer's QPN.
 */
#include <string.h>

#include "ur_qp_priv.h"

/* The MAD (256 bytes): the hellos' common part (ur_wire.h), nothing more. */
#define HELLO_MAGIC 0x55725372u /* "UrSr" */

/* A hello that says no more than who sends it to whom (selective
 * repeat's, congestion control's): its attribute and magic, and the ids. */
int ur__hello_parse_ids(uint16_t attr, uint32_t magic, const uint8_t *mad,
			size_t len, struct ur_sr_hello *h)
{
	struct ur_hello g = { .attr = attr, .magic = magic };

	memset(h, 0, sizeof(*h));
	if (ur_hello_get(mad, len, &g))
		return -EBADMSG;
	h->answer = g.answer;
	h->src_qpn = g.src_qpn;
	h->dst_qpn = g.dst_qpn;
	return 0;
}

int ur_sr_hello_parse(const uint8_t *mad, size_t len, struct ur_sr_hello *h)
{
	return ur__hello_parse_ids(UR_SR_HELLO_ATTR, HELLO_MAGIC, mad, len, h);
}

static void hello_send(struct ur_qp *qp, bool answer)
{
	struct ur_sr *sr = &qp->priv->sr;
	uint8_t mad[UR_SR_HELLO_LEN] = { 0 };

	if (!qp->dev->sr_hello_send)
		return;
	ur_hello_put(mad, &(struct ur_hello){
		.attr = UR_SR_HELLO_ATTR, .magic = HELLO_MAGIC,
		.answer = answer, .src_qpn = qp->qpn,
		.dst_qpn = qp->priv->attr.dest_qp_num,
		.tid = (uint64_t)qp->qpn << 32 | sr->hellos_sent++ });
	qp->dev->cnt.tx_sr_hello++;
	qp->dev->sr_hello_send(qp->dev, qp, &qp->priv->attr.path, mad);
}

void ur__sr_neg_start(struct ur_qp *qp, uint64_t now)
{
	struct ur_sr *sr = &qp->priv->sr;

	if (sr->p.enable != UR_SR_AUTO || !qp->dev->sr_hello_send ||
	    sr->peer_ok)
		return;
	sr->neg_pending = true;
	sr->give_up_at = now + UR_SR_NEG_NS;
	ur__hello_first(&sr->hello_at, &sr->hello_gap, now);
	hello_send(qp, false);
}

void ur__sr_neg_timer(struct ur_qp *qp, uint64_t now)
{
	struct ur_sr *sr = &qp->priv->sr;

	if (!sr->neg_pending)
		return;
	if (sr->peer_ok || sr->p.enable != UR_SR_AUTO ||
	    !ur_state_receives(qp->state)) {
		sr->neg_pending = false;
		return;
	}
	if (now >= sr->give_up_at) {
		/* No uroce peer answered: plain go-back-N, as with any
		 * standard device (its marked packets would still tell). */
		qp->dev->cnt.sr_neg_timeout++;
		sr->neg_pending = false;
		return;
	}
	if (ur__hello_again(&sr->hello_at, &sr->hello_gap, now))
		hello_send(qp, false);
}

int ur_qp_sr_hello_rx(struct ur_qp *qp, const uint8_t *mad, size_t len,
		      const struct ur_rxinfo *ri, uint64_t now)
{
	struct ur_sr *sr = &qp->priv->sr;
	struct ur_sr_hello h;

	(void)now;
	if (ur_sr_hello_parse(mad, len, &h)) {
		qp->dev->cnt.rx_drop_malformed++;
		return -EBADMSG;
	}
	/* Only an RC QP with selective repeat on, connected (RTR on), from
	 * its peer's address and QPN. An early hello (we were not RTR yet)
	 * is dropped: the peer resends it. */
	if (qp->type != UR_QPT_RC || qp->xrc || !sr->p.enable ||
	    !ur_state_receives(qp->state) || !ur__from_peer(qp, ri) ||
	    h.dst_qpn != qp->qpn || h.src_qpn != qp->priv->attr.dest_qp_num) {
		qp->dev->cnt.rx_drop_no_qp++;
		return -ENOENT;
	}
	qp->dev->cnt.rx_sr_hello++;
	sr->peer_ok = true;
	sr->neg_pending = false;
	if (!h.answer)
		hello_send(qp, true); /* an answer is never answered */
	ur__qp_update_deadline(qp);
	return 0;
}

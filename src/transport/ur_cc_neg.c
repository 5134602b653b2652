// SPDX-License-Identifier: MIT
/*
 * Choosing the congestion control with the peer (UROCE_CC=auto, the
 * default; docs/cc.md "Between uroce ends: auto"). A QP of a device
 * in auto mode starts with DCQCN, which is what a standard peer (rxe, an RNIC) speaks:
 * it sends CNPs for our CE-marked requests, and we react to them. Going
 * INIT->RTR it sends a uroce vendor-class MAD to the peer's QP1 (class
 * 0x0A, vendor range 1, IBTA 13.4.4; the hellos' common part in mad.c,
 * attribute UR_CC_HELLO_ATTR), resent after 1 ms, doubling to 64 ms,
 * until the peer's hello or answer arrives or UR_CC_NEG_NS has passed. A
 * uroce QP in auto mode answers; the two ends then know they are uroce
 * and each switches its requester to the device's choice between uroce
 * ends (dev->cc_auto_algo, UROCE_CC_AUTO: DCQCN with RTT-scaled timers,
 * or Swift; docs/cc.md "Between uroce ends: auto"). Both measure the RTT from
 * our own send times and so ask for an ACK every 8 PSNs, which a
 * standard peer would answer too, but it sees no change until it has
 * said it is uroce. A standard peer drops a vendor class no agent
 * registered: the QP stays DCQCN. Nothing waits: requests leave under
 * DCQCN meanwhile.
 *
 * The hello is not authenticated: a forged one makes a QP run a
 * sender-side algorithm that needs nothing of the peer (dcqcn-rtt still
 * reacts to CNPs; Swift only with UROCE_SWIFT_ECN_CUT_MILLI). It is taken
 * only from the QP's peer address, naming this QP and the peer's QPN.
 */
#include <string.h>

#include "ur_qp_priv.h"

#define HELLO_MAGIC 0x55724363u      /* "UrCc" */

int ur_cc_hello_parse(const uint8_t *mad, size_t len, struct ur_sr_hello *h)
{
	return ur__hello_parse_ids(UR_CC_HELLO_ATTR, HELLO_MAGIC, mad, len, h);
}

static void hello_send(struct ur_qp *qp, bool answer, uint64_t now)
{
	struct ur_qp_cc *c = &qp->priv->cc;
	uint8_t mad[UR_SR_HELLO_LEN] = { 0 };

	if (!qp->dev->cc_hello_send)
		return;
	ur_hello_put(mad, &(struct ur_hello){
		.attr = UR_CC_HELLO_ATTR, .magic = HELLO_MAGIC,
		.answer = answer, .src_qpn = qp->qpn,
		.dst_qpn = qp->priv->attr.dest_qp_num,
		.tid = (uint64_t)qp->qpn << 32 | c->hellos_sent++ });
	qp->dev->cnt.tx_cc_hello++;
	if (!answer) {
		c->hellos_asked++;
		c->hello_sent_at = now;
	}
	qp->dev->cc_hello_send(qp->dev, qp, &qp->priv->attr.path, mad);
}

/* An RC QP (not XRC) of a device in auto mode that its owner did not
 * give an algorithm of its own (uroce_qp_set_cc). */
static bool negotiates(const struct ur_qp *qp)
{
	return qp->priv->cc.cc_auto && qp->type == UR_QPT_RC && !qp->xrc;
}

void ur__cc_neg_start(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_cc *c = &qp->priv->cc;

	if (!negotiates(qp) || !qp->dev->cc_hello_send || c->peer_uroce)
		return;
	c->neg_pending = true;
	c->hellos_asked = 0;
	c->give_up_at = now + UR_CC_NEG_NS;
	ur__hello_first(&c->hello_at, &c->hello_gap, now);
	hello_send(qp, false, now);
}

void ur__cc_neg_timer(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_cc *c = &qp->priv->cc;

	if (!c->neg_pending)
		return;
	if (c->peer_uroce || !negotiates(qp) ||
	    !ur_state_receives(qp->state)) {
		c->neg_pending = false;
		return;
	}
	if (now >= c->give_up_at) {
		/* No uroce peer answered: DCQCN, as with any standard
		 * device. */
		qp->dev->cnt.cc_neg_timeout++;
		c->neg_pending = false;
		return;
	}
	if (ur__hello_again(&c->hello_at, &c->hello_gap, now))
		hello_send(qp, false, now);
}

int ur_qp_cc_hello_rx(struct ur_qp *qp, const uint8_t *mad, size_t len,
		      const struct ur_rxinfo *ri, uint64_t now)
{
	struct ur_qp_cc *c = &qp->priv->cc;
	struct ur_sr_hello h;
	uint64_t rtt = 0;

	if (ur_cc_hello_parse(mad, len, &h)) {
		qp->dev->cnt.rx_drop_malformed++;
		return -EBADMSG;
	}
	/* Only a negotiating QP, connected (RTR on), from its peer's
	 * address and QPN. An early hello (we were not RTR yet) is dropped:
	 * the peer resends it. */
	if (!negotiates(qp) || !ur_state_receives(qp->state) ||
	    !ur__from_peer(qp, ri) || h.dst_qpn != qp->qpn ||
	    h.src_qpn != qp->priv->attr.dest_qp_num) {
		qp->dev->cnt.rx_drop_no_qp++;
		return -ENOENT;
	}
	qp->dev->cnt.rx_cc_hello++;
	c->neg_pending = false;
	/* The answer to our only hello: the path's round trip before any
	 * data, the hosts' included (a resent hello's answer could be the
	 * earlier one's, so none is measured then). */
	if (h.answer && c->hellos_asked == 1 && now > c->hello_sent_at)
		rtt = now - c->hello_sent_at;
	if (!c->peer_uroce) {
		struct ur_cc_params p = c->cc.p;

		/* Both ends are uroce: the algorithm chosen for uroce ends
		 * (UROCE_CC_AUTO), with the device's parameters for it. */
		p.algo = qp->dev->cc_auto_algo;
		if (p.algo != c->cc.p.algo && !ur_cc_params_check(&p, NULL)) {
			ur__cc_switch(qp, &p, now);
			qp->dev->cnt.cc_auto_switched++;
		}
		c->peer_uroce = true;
	}
	/* dcqcn-rtt on a fabric's round trip: Swift (ur_cc.c). */
	ur__cc_auto_pick(qp, rtt, now);
	if (!h.answer)
		hello_send(qp, true, now); /* an answer is never answered */
	ur__qp_update_deadline(qp);
	return 0;
}

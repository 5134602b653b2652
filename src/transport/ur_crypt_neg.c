// SPDX-License-Identifier: MIT
/*
 * Negotiating encryption with the peer (docs/wire.md "Encryption
 * negotiation"): when a QP whose device has a policy (allow, require)
 * goes INIT->RTR, it sends a uroce vendor-class MAD to the peer's QP1
 * (class 0x0A, vendor range 1, IBTA 13.4.4) carrying its fresh 16-byte
 * nonce and an HMAC-SHA256 under a key derived from the administrator's,
 * and resends it until the peer's answer echoes that nonce. Both nonces
 * then enter each direction's key (ur_crypt.c derive). Nothing is sent
 * and nothing received is taken while the QP waits. A standard peer (rxe,
 * an RNIC) does not answer a vendor class: after a while the QP goes on
 * plain if the policy allows, else it moves to the error state. A forged
 * or altered MAD fails its HMAC and is ignored; a dropped one is resent.
 */
#include <string.h>

#include "ur_qp_priv.h"

/* The MAD (256 bytes; common header IBTA 13.4.3, then ours). */
enum {
	H_ALG = 30, /* in the common part's pad byte (ur_wire.h) */
	H_NONCE = UR_HELLO_OWN,
	H_ECHO = H_NONCE + UR_CRYPT_NONCE_LEN,
	H_MAC = H_ECHO + UR_CRYPT_NONCE_LEN, /* MAC over [0, H_MAC) + GIDs */
	H_END = H_MAC + 32,
};
#define HELLO_MAGIC 0x55724372u /* "UrCr" */

int ur_crypt_hello_parse(const uint8_t *mad, size_t len,
			 struct ur_crypt_hello *h)
{
	struct ur_hello g = { .attr = UR_CRYPT_HELLO_ATTR, .magic = HELLO_MAGIC };

	memset(h, 0, sizeof(*h));
	if (ur_hello_get(mad, len, &g))
		return -EBADMSG;
	h->answer = g.answer;
	h->alg = mad[H_ALG];
	h->src_qpn = g.src_qpn;
	h->dst_qpn = g.dst_qpn;
	memcpy(h->nonce, mad + H_NONCE, UR_CRYPT_NONCE_LEN);
	memcpy(h->echo, mad + H_ECHO, UR_CRYPT_NONCE_LEN);
	return 0;
}

/* HMAC of a hello under the hello key: HKDF of the administrator's key
 * ("uroce hello v1", the algorithm), over the MAD up to the MAC and both
 * GIDs (sender's, receiver's; not sent: each end knows them from its AV,
 * so a hello replayed from another address or to another QP fails). */
static int hello_mac(const struct ur_qp *qp, const uint8_t *mad, bool tx,
		     uint8_t out[32])
{
	static const uint8_t label[] = "uroce hello v1";
	const struct ur_qp_crypt *c = &qp->priv->crypt;
	const struct ur_ipudp *pa = &qp->priv->attr.path;
	uint8_t key[32], msg[H_MAC + 32], info = c->alg;
	int rc;

	rc = ur_crypt_hkdf(label, sizeof(label) - 1, c->ikm, sizeof(c->ikm),
			   &info, 1, key, sizeof(key));
	memcpy(msg, mad, H_MAC);
	ur__crypt_gid16(pa->v6, tx ? pa->src : pa->dst, msg + H_MAC);
	ur__crypt_gid16(pa->v6, tx ? pa->dst : pa->src, msg + H_MAC + 16);
	if (!rc)
		rc = ur_crypt_hmac(key, sizeof(key), msg, sizeof(msg), out);
	memset(key, 0, sizeof(key));
	return rc;
}

static void hello_send(struct ur_qp *qp, bool answer)
{
	struct ur_qp_crypt *c = &qp->priv->crypt;
	uint8_t mad[UR_CRYPT_HELLO_LEN] = { 0 };

	if (!qp->dev->crypt_hello_send)
		return;
	ur_hello_put(mad, &(struct ur_hello){
		.attr = UR_CRYPT_HELLO_ATTR, .magic = HELLO_MAGIC,
		.answer = answer, .src_qpn = qp->qpn,
		.dst_qpn = qp->priv->attr.dest_qp_num,
		.tid = (uint64_t)qp->qpn << 32 | c->hellos_sent++ });
	mad[H_ALG] = c->alg;
	memcpy(mad + H_NONCE, c->nonce_l, UR_CRYPT_NONCE_LEN);
	if (c->have_peer)
		memcpy(mad + H_ECHO, c->nonce_p, UR_CRYPT_NONCE_LEN);
	if (hello_mac(qp, mad, true, mad + H_MAC))
		return;
	qp->dev->cnt.tx_crypt_hello++;
	qp->dev->crypt_hello_send(qp->dev, qp, &qp->priv->attr.path, mad);
}

void ur__crypt_neg_start(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_crypt *c = &qp->priv->crypt;
	uint64_t wait = c->policy == UR_CRYPT_POLICY_REQUIRE
				? UR_CRYPT_NEG_REQUIRE_NS : UR_CRYPT_NEG_ALLOW_NS;

	ur_crypt_random(c->nonce_l, sizeof(c->nonce_l));
	memset(c->nonce_p, 0, sizeof(c->nonce_p));
	c->have_peer = c->confirmed = false;
	c->neg = UR_CRYPT_NEG_PENDING;
	c->give_up_at = now + wait;
	ur__hello_first(&c->hello_at, &c->hello_gap, now);
	hello_send(qp, false);
}

/* Both nonces known and the peer has ours: sealed from here on. */
static void neg_done(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_crypt *c = &qp->priv->crypt;

	c->neg = UR_CRYPT_NEG_SEALED;
	c->tx.valid = c->rx[0].valid = c->rx[1].valid = false;
	ur_qp_progress(qp, now); /* what was posted meanwhile leaves */
}

void ur__crypt_neg_timer(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_crypt *c = &qp->priv->crypt;

	if (c->neg != UR_CRYPT_NEG_PENDING)
		return;
	if (now >= c->give_up_at) {
		qp->dev->cnt.crypt_neg_timeout++;
		if (c->policy == UR_CRYPT_POLICY_ALLOW) {
			/* No uroce peer with the key answered: plain RoCEv2,
			 * as with any standard device. */
			ur_qp_set_crypt(qp, UR_CRYPT_NONE, NULL);
			c->neg = UR_CRYPT_NEG_PLAIN;
			ur_qp_progress(qp, now);
			return;
		}
		/* require: never plain. The QP fails as one whose peer
		 * never answers does (its WRs flush with an error). */
		c->neg = UR_CRYPT_NEG_FAILED;
		ur__qp_error(qp, now);
		if (qp->dev->ops->qp_event)
			qp->dev->ops->qp_event(qp->dev->host, qp,
					       UR_EVENT_QP_FATAL);
		return;
	}
	if (ur__hello_again(&c->hello_at, &c->hello_gap, now))
		hello_send(qp, false);
}

int ur_qp_crypt_hello_rx(struct ur_qp *qp, const uint8_t *mad, size_t len,
			 const struct ur_rxinfo *ri, uint64_t now)
{
	struct ur_qp_crypt *c = &qp->priv->crypt;
	struct ur_crypt_hello h;
	uint8_t mac[32];
	bool echoes;

	if (ur_crypt_hello_parse(mad, len, &h))
		return -EBADMSG;
	/* Only a QP that negotiates, from its peer's address, for this
	 * connection, with our algorithm and a MAC that verifies. A QP not
	 * negotiating yet is common, not an attack: the passive side of
	 * rdma_cm reaches RTR, and says hello, before the active side. */
	if (c->neg != UR_CRYPT_NEG_PENDING && c->neg != UR_CRYPT_NEG_SEALED) {
		qp->dev->cnt.rx_drop_bad_state++;
		return -EAGAIN;
	}
	if (!ur__from_peer(qp, ri) || h.dst_qpn != qp->qpn ||
	    h.src_qpn != qp->priv->attr.dest_qp_num) {
		qp->dev->cnt.rx_drop_offpath++;
		return -EACCES;
	}
	if (h.alg != c->alg || hello_mac(qp, mad, false, mac) ||
	    ur_crypt_memneq(mac, mad + H_MAC, sizeof(mac))) {
		qp->dev->cnt.rx_drop_auth++;
		return -EACCES;
	}
	qp->dev->cnt.rx_crypt_hello++;
	echoes = !ur_crypt_memneq(h.echo, c->nonce_l, UR_CRYPT_NONCE_LEN);
	if (c->neg == UR_CRYPT_NEG_SEALED) {
		/* The peer lost our answer: answer again, for this session
		 * only. */
		if (!h.answer &&
		    !ur_crypt_memneq(h.nonce, c->nonce_p, UR_CRYPT_NONCE_LEN))
			hello_send(qp, true);
		return 0;
	}
	/* A hello that echoes our nonce is fresh: its nonce is the peer's
	 * (it replaces one an old hello, replayed, may have left). */
	if (!c->have_peer || echoes) {
		memcpy(c->nonce_p, h.nonce, UR_CRYPT_NONCE_LEN);
		c->have_peer = true;
	} else if (ur_crypt_memneq(h.nonce, c->nonce_p, UR_CRYPT_NONCE_LEN)) {
		return 0; /* another session's hello, not echoing ours */
	}
	if (echoes && !c->confirmed) {
		/* Confirmed now: tell the peer we have its nonce too, even
		 * when this was its answer (an answer is never answered, so
		 * this does not loop). */
		c->confirmed = true;
		hello_send(qp, true);
	} else if (!h.answer) {
		hello_send(qp, true);
	}
	if (c->confirmed)
		neg_done(qp, now);
	else
		ur__qp_update_deadline(qp);
	return 0;
}

int ur_dev_crypt_hello_rx(struct ur_dev *dev, const uint8_t *mad, size_t len,
			  const struct ur_rxinfo *ri, uint64_t now)
{
	struct ur_crypt_hello h;
	struct ur_qp *qp;

	if (ur_crypt_hello_parse(mad, len, &h)) {
		dev->cnt.rx_drop_malformed++;
		return -EBADMSG;
	}
	qp = dev->ops->qp_lookup(dev->host, h.dst_qpn);
	if (!qp || (qp->type != UR_QPT_RC && qp->type != UR_QPT_UC)) {
		dev->cnt.rx_drop_no_qp++;
		return -ENOENT;
	}
	return ur_qp_crypt_hello_rx(qp, mad, len, ri, now);
}

uint32_t ur_qp_crypt_neg(const struct ur_qp *qp)
{
	return qp->priv->crypt.neg;
}

// SPDX-License-Identifier: MIT
/*
 * The completer (IBTA 9.7.5.2, 9.7.6): matches ACKs, NAKs, READ responses
 * and atomic ACKs against outstanding send WQEs, in order, and owns the
 * retransmission timer and the RNR wait.
 *
 * An acknowledgement for PSN p acknowledges every request before it
 * (coalesced ACKs, 9.7.5.1.1). Retries are go-back-N from the oldest
 * unacked PSN (timeout, NAK-sequence error).
 *
 * READ responses that arrive ahead of the expected one (reordering, a
 * loss) are kept, up to 63 PSNs ahead; the READ request is sent again for
 * the rest (9.7.4.1.4) only when the response with its last PSN arrives
 * with a gap, or once per gap when an ACK or a response passes the
 * unfinished READ/atomic ("implied NAK"). Such a request alone is sent
 * again, without go-back-N; requests after it whose answers were dropped
 * meanwhile are resent once the READ/atomic completes. None of this
 * consumes the retry budget or rearms the timer: only progress does.
 */
#include <string.h>

#include "ur_qp_priv.h"

#define COMP_STATES(X)                                                       \
	X(CHECK_PSN) X(CHECK_ACK) X(READ) X(ATOMIC) X(COMPLETE) X(NAK)       \
	X(RETRY) X(RNR) X(ERROR) X(DONE) X(DROP) X(READ_AHEAD) X(PASSED)     \
	X(SR_RESEND)

enum comp_state {
#define UR_X(n) COMP_##n,
	COMP_STATES(UR_X)
#undef UR_X
};

static const char *const comp_state_name[] __attribute__((unused)) = {
#define UR_X(n) [COMP_##n] = #n,
	COMP_STATES(UR_X)
#undef UR_X
};

/* What ended the WQE when the state machine reaches COMP_ERROR. */
struct comp_ctx {
	const struct ur_pkt *pkt;
	uint32_t psn;
	struct ur_swqe *wqe;
	uint32_t status;
	bool progress;
	/* An ACK for psn taken again (do_complete), not pkt itself. */
	bool replay;
	uint64_t now;
};

static uint32_t wqe_last_psn(const struct ur_swqe *wqe)
{
	return ur_psn_add(wqe->first_psn, wqe->npkts - 1);
}

static bool is_ack_type(const struct ur_swqe *wqe)
{
	return wqe->opcode != UR_WR_RDMA_READ &&
	       wqe->opcode != UR_WR_ATOMIC_CMP_AND_SWP &&
	       wqe->opcode != UR_WR_ATOMIC_FETCH_AND_ADD;
}

static bool outstanding(const struct ur_qp *qp)
{
	const struct ur_qp_priv *p = qp->priv;

	return p->sq_head != p->req.assigned &&
	       ur_psn_diff(p->req.psn_max, p->comp.psn) > 0;
}

/*
 * The transport timer: 4.096 us x 2^timeout, doubled for each timeout in a
 * row without progress, up to 4x (IBTA lets the timer run up to 4x the
 * value, 9.7.6.1.3; mlx5's adaptive retransmission doubles it too). A
 * peer that is only slow (a loaded host that did not run its engine for
 * a while) then has 27 timeouts' worth, not 8, before retry_cnt 7 ends
 * the QP; a dead one is still found within (retry_cnt + 1) x 4 x timeout.
 */
void ur__comp_arm(struct ur_qp *qp, uint64_t now)
{
	struct ur_comp *c = &qp->priv->comp;
	unsigned int missed = qp->priv->attr.retry_cnt > c->retry_left
				      ? qp->priv->attr.retry_cnt - c->retry_left
				      : 0;
	uint64_t t = ur_timeout_ns(qp->priv->attr.timeout) << (missed < 2 ? missed : 2);

	if (c->rto_deadline == UINT64_MAX && t && !qp->priv->req.rnr_wait) {
		c->rto_deadline = now + t;
		if (c->held_at)
			c->held_at = now; /* only the hold from now on */
		ur__qp_update_deadline(qp);
	}
}

/*
 * The timer measures how long the requests that left go unanswered
 * (9.7.6.1.3), not how long the QP waits its turn at its own NIC. Only
 * a message's last packet asks for an ACK (and one in UR_ACKREQ_EVERY):
 * a QP whose first packets left and whose next one the device refused (no
 * transmit buffer: the NIC's queue is full, its scheduler serves the
 * other QPs) cannot be answered before that last one leaves, and 1,023
 * QPs sharing a NIC wait longer than 4.2 ms (uroce-sim, the 1024-rank
 * all-to-all: a timeout on every QP, no drop). So the time between a
 * refusal (ur__comp_held) and the QP's next try (ur__comp_unheld) is
 * added to the deadline while no request that asked for an ACK is out
 * unanswered. A loss is still found within the timer of the last packet
 * that left (the hold lies between the first packet and it), and a lost
 * request that asked for an ACK as soon as before.
 */
void ur__comp_held(struct ur_qp *qp, uint64_t now)
{
	struct ur_comp *c = &qp->priv->comp;

	if (!c->held_at)
		c->held_at = now ? now : 1;
}

/* The hold so far moves the deadline on, unless a request that asked
 * for an ACK is out unanswered (its answer does not wait for the
 * NIC); @still: refused again. */
static void hold_credit(struct ur_qp *qp, uint64_t now, bool still)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_comp *c = &p->comp;

	if (!c->held_at)
		return;
	if (c->rto_deadline != UINT64_MAX && now > c->held_at &&
	    !(p->req.ackreq_out &&
	      ur_psn_diff(p->req.ackreq_psn, c->psn) >= 0))
		c->rto_deadline += now - c->held_at;
	c->held_at = still ? now : 0;
}

void ur__comp_unheld(struct ur_qp *qp, uint64_t now)
{
	hold_credit(qp, now, false);
}

/*
 * Selective repeat's tail probe (RFC 8985 7.2-7.3): a lost tail (the last
 * requests a QP sent, nothing after them) leaves the responder nothing to
 * hold and so no gap to NAK; only the transport timer (4.2 ms at timeout
 * 10) would find it. A sprayed QP over a path that fails loses tails as
 * often as holes (uroce-sim, MoE over 8 failed links: 230 QPs waited for
 * the timer with no NAK at all, the last flow for three expiries). So a
 * QP whose peer holds out-of-order requests, once it has sent everything
 * posted, probes UR_TAIL_NS after its last progress (or two smoothed
 * round trips of its paths, if longer, unless a selective NAK showed
 * losses: their recovery inflated those samples): the newest PSN again
 * with AckReq, as the timer's probe does. A duplicate costs one packet
 * (C9-105 answers it with the cumulative ACK), a lost tail becomes a gap
 * the responder NAKs. One probe per tail, none for a PSN a selective NAK
 * named; it touches neither the retry count nor sr_probed, so the timer's
 * probe and go-back-N stay as they were.
 */
#define UR_TAIL_NS 1000000ull /* 1 ms */

/* A tail: every posted request has left (not a window or a pacer
 * holding the rest back: then the next ACK brings more, and a probe
 * there fired into every recovery; bench/multipath_sim.sh at 5 % loss:
 * 55 timeouts instead of 0). */
static bool all_sent(const struct ur_qp *qp)
{
	const struct ur_qp_priv *p = qp->priv;
	const struct ur_req *r = &p->req;

	if (ur__req_cursor_psn(qp) != r->psn_max)
		return false;
	if (r->idx == p->sq_tail)
		return true;
	return r->idx + 1 == p->sq_tail && r->idx != r->assigned &&
	       r->pkt >= ur_swqe_at(qp, r->idx)->npkts;
}

static void tail_arm(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_comp *c = &p->comp;
	uint64_t t = UR_TAIL_NS;

	c->tail_at = 0;
	if (!outstanding(qp)) {
		c->lossy = false;
		return;
	}
	/* Not while the responder waits for the resend of its selective
	 * NAK: it repeats the NAK itself (ur_sr.c "renak"). */
	if (!p->sr.tx_peer || !all_sent(qp) ||
	    (c->lossy && c->psn == c->nak_psn))
		return;
	if (!c->lossy && p->mp && 2 * p->mp->srtt > t)
		t = 2 * p->mp->srtt;
	c->tail_psn = c->psn;
	c->tail_at = now + t;
	ur__qp_update_deadline(qp);
}

/* A request left: a tail probe once the last one did (above). */
void ur__comp_sent(struct ur_qp *qp, uint64_t now)
{
	if (!qp->priv->comp.tail_at)
		tail_arm(qp, now);
}

static void comp_advance(struct ur_qp *qp, struct comp_ctx *cx, uint32_t psn)
{
	struct ur_comp *c = &qp->priv->comp;
	uint32_t from = c->psn;
	int32_t d = ur_psn_diff(psn, c->psn);

	if (d > 0) {
		c->psn = psn;
		c->rd_seen = d < 64 ? c->rd_seen >> d : 0;
		cx->progress = true;
		/* READ responses already here. */
		while (c->rd_seen & 1) {
			c->rd_seen >>= 1;
			c->psn = ur_psn_add(c->psn, 1);
		}
		/* A delay-based algorithm's RTT sample (ur_cc.c). */
		ur__cc_delay(qp, from, (uint32_t)ur_psn_diff(c->psn, from),
			     cx->now);
	}
}

/*
 * A recovery request (the head READ/atomic asked again, a probe for the
 * cumulative ACK) is itself lost now and then (the same loss that lost
 * the answer): it goes again after three times the ask-to-answer time
 * seen on this QP, never sooner than UR_ASK_MIN_NS, 1 ms before the
 * first sample, doubling at each repeat (RFC 6298 5.5), not after the
 * transport timer (67 ms at perftest's timeout 14), which stays the last
 * resort. It needs no RTT guess of the path: it goes only where an answer
 * is known to be missing (a later one came), so a repeat that was not
 * needed costs one request, never a go-back.
 */
#define UR_ASK_FIRST_NS 1000000ull /* 1 ms */
#define UR_ASK_MIN_NS 500000ull    /* 0.5 ms */
#define UR_ASK_MAX_NS 100000000ull /* 100 ms */

/* The oldest unacknowledged PSN moved past the ask: its time is a sample
 * (not after a repeat: which copy was answered is unknown, Karn). */
static void ask_settle(struct ur_comp *c, uint64_t now)
{
	uint64_t rtt;

	if (!c->ask_at || c->psn == c->ask_psn)
		return;
	c->ask_at = 0;
	if (c->ask_n || now < c->ask_t)
		return;
	rtt = now - c->ask_t;
	if (rtt > UINT32_MAX)
		rtt = UINT32_MAX;
	c->ask_rtt = c->ask_rtt ? (uint32_t)((7ull * c->ask_rtt + rtt) / 8)
				: (uint32_t)rtt;
}

static void ask_arm(struct ur_qp *qp, uint64_t now, bool again)
{
	struct ur_comp *c = &qp->priv->comp;
	uint64_t t = c->ask_rtt ? 3ull * c->ask_rtt : UR_ASK_FIRST_NS;

	if (t < UR_ASK_MIN_NS)
		t = UR_ASK_MIN_NS;
	if (!again) {
		c->ask_n = 0;
		c->ask_t = now;
	} else if (c->ask_n < 16) {
		c->ask_n++;
	}
	for (unsigned int i = 0; i < c->ask_n && t < UR_ASK_MAX_NS; i++)
		t *= 2;
	c->ask_at = now + t;
}

/* Ask for the head READ/atomic again, from the oldest missing PSN. */
static void comp_ask(struct ur_qp *qp, uint64_t now)
{
	struct ur_comp *c = &qp->priv->comp;

	ask_settle(c, now);
	c->rd_asked = true;
	c->rd_ask_psn = c->psn;
	ur__req_resend_one(qp, qp->priv->sq_head, c->psn, now);
	c->ask_psn = c->psn;
	ask_arm(qp, now, false);
}

/*
 * IBTA 9.7.5.2 (as rxe's check_psn): an ACK, NAK or response is
 * taken only for a PSN in flight, from the oldest unacknowledged one up to
 * the last one ever sent. Anything else, above all a NAK, is a ghost: a
 * stale duplicate (rx_duplicate) or for a PSN never sent (rx_drop_psn), and
 * must not complete, retry or fail a WQE.
 */
static enum comp_state check_psn(struct ur_qp *qp, struct comp_ctx *cx)
{
	struct ur_qp_priv *p = qp->priv;

	if (ur_psn_diff(cx->psn, p->comp.psn) < 0) {
		qp->dev->cnt.rx_duplicate++;
		return COMP_DROP; /* old response or ACK */
	}
	if (ur_psn_diff(cx->psn, p->req.psn_max) >= 0 ||
	    p->sq_head == p->req.assigned) {
		qp->dev->cnt.rx_drop_psn++;
		return COMP_DROP; /* for a PSN never sent, or nothing sent */
	}
	return COMP_CHECK_ACK;
}

static enum comp_state check_ack(struct ur_qp *qp, struct comp_ctx *cx)
{
	struct ur_qp_priv *p = qp->priv;
	const struct ur_pkt *pkt = cx->pkt;
	/* A replayed ACK is a plain ACK for cx->psn. */
	uint32_t m = cx->replay ? 0 : pkt->mask;
	uint8_t op = cx->replay ? UR_OP_RC_ACKNOWLEDGE : pkt->h.opcode;
	bool is_nak = (m & UR_HDR_AETH) &&
		      ur_aeth_kind(pkt->aeth.syndrome) != UR_AETH_ACK;
	struct ur_swqe *wqe;

	if (p->sq_head == p->req.assigned)
		return COMP_DONE;
	wqe = cx->wqe = ur_swqe_at(qp, p->sq_head);
	if (wqe->done)
		return COMP_DONE;

	if (is_ack_type(wqe)) {
		int32_t d = ur_psn_diff(cx->psn, wqe_last_psn(wqe));

		/* Acknowledged by anything after it; a NAK for p acks p-1. */
		if (d > 0 || (d == 0 && !is_nak && op == UR_OP_RC_ACKNOWLEDGE))
			return COMP_COMPLETE;
		if (is_nak)
			return COMP_NAK;
		if (op != UR_OP_RC_ACKNOWLEDGE)
			return COMP_DROP; /* a response for a SEND: bogus */
		comp_advance(qp, cx, ur_psn_add(cx->psn, 1)); /* partial */
		return COMP_DONE;
	}
	if (ur_psn_diff(cx->psn, wqe->first_psn) < 0)
		return COMP_DROP;
	if (is_nak)
		return COMP_NAK;
	if (wqe->opcode == UR_WR_RDMA_READ && (m & UR_OPF_READ_RESP) &&
	    ur_psn_diff(cx->psn, wqe_last_psn(wqe)) <= 0) {
		if (cx->psn == p->comp.psn)
			return COMP_READ;
		return ur_psn_diff(cx->psn, p->comp.psn) > 0 ? COMP_READ_AHEAD
							    : COMP_DROP;
	}
	if (wqe->opcode != UR_WR_RDMA_READ &&
	    ((op == UR_OP_RC_ATOMIC_ACKNOWLEDGE && cx->psn == wqe->first_psn) ||
	     wqe->answered))
		return COMP_ATOMIC;
	/* An ACK (or response) that passes an unfinished READ/atomic:
	 * (part of) its response was lost or is late. */
	return COMP_PASSED;
}

/* Copy the READ response at @cx->psn into place: 0, -EINVAL for a malformed
 * response (dropped: the timer retries), or -EACCES when the WQE's memory
 * lost its key since it was posted. */
static int read_store(struct ur_qp *qp, struct comp_ctx *cx)
{
	struct ur_swqe *wqe = cx->wqe;
	uint32_t k = (uint32_t)ur_psn_diff(cx->psn, wqe->first_psn);
	uint32_t mtu = ur_qp_mtu(qp), off = k * mtu;
	uint32_t want = wqe->length - off < mtu ? wqe->length - off : mtu;

	if (wqe->length == 0)
		want = 0;
	if (cx->pkt->payload_len != want)
		return -EINVAL;
	if (want && ur__wqe_keys(qp, qp->priv->sq_head, wqe)) {
		cx->status = UR_WC_LOC_PROT_ERR;
		return -EACCES;
	}
	if (want)
		ur__sge_copy_in(ur_swqe_sge(qp, qp->priv->sq_head),
				 wqe->num_sge, off, cx->pkt->payload, want);
	return 0;
}

/* A response of the head READ ahead of the expected PSN: keep it. When
 * the last one arrives with a gap, the responder has sent everything it
 * was asked for: ask for the rest (once per response stream). */
static enum comp_state do_read_ahead(struct ur_qp *qp, struct comp_ctx *cx,
				     uint64_t now)
{
	struct ur_comp *c = &qp->priv->comp;
	uint32_t i = (uint32_t)ur_psn_diff(cx->psn, c->psn);

	if (i < 64) {
		int rc = read_store(qp, cx);

		if (rc)
			return rc == -EACCES ? COMP_ERROR : COMP_DROP;
		c->rd_seen |= 1ull << i;
	}
	if (cx->psn == wqe_last_psn(cx->wqe))
		comp_ask(qp, now);
	return COMP_DONE;
}

/* The responder answered something after the head READ/atomic, which is
 * unfinished: ask for it once per gap. */
static enum comp_state do_passed(struct ur_qp *qp, struct comp_ctx *cx,
				 uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_comp *c = &p->comp;
	const struct ur_pkt *pkt = cx->pkt;
	uint8_t op = cx->replay ? UR_OP_RC_ACKNOWLEDGE : pkt->h.opcode;

	if (!c->rd_beyond) {
		c->beyond_ack = false;
		c->beyond_max = cx->psn;
	} else if (ur_psn_diff(cx->psn, c->beyond_max) > 0) {
		c->beyond_max = cx->psn;
	}
	/* An ACK or atomic ACK acknowledges every request up to its PSN
	 * (9.7.5.1.2): remember the newest, taken again at the head's
	 * completion; a later atomic's answer is kept with its WQE. */
	if (op == UR_OP_RC_ACKNOWLEDGE || op == UR_OP_RC_ATOMIC_ACKNOWLEDGE) {
		if (!c->beyond_ack || ur_psn_diff(cx->psn, c->beyond_psn) > 0) {
			c->beyond_ack = true;
			c->beyond_psn = cx->psn;
		}
	}
	if (op == UR_OP_RC_ATOMIC_ACKNOWLEDGE && !cx->replay) {
		for (uint32_t i = p->sq_head + 1; i != p->req.assigned; i++) {
			struct ur_swqe *w = ur_swqe_at(qp, i);

			if (ur_psn_diff(w->first_psn, cx->psn) > 0)
				break;
			if (w->first_psn == cx->psn && !w->done &&
			    w->opcode != UR_WR_RDMA_READ &&
			    ur__wr_is_rd_atomic(w->opcode)) {
				memcpy(&w->answer, &pkt->atmack, 8);
				w->answered = true;
				break;
			}
		}
	}
	if (!(c->rd_asked && c->rd_ask_psn == c->psn))
		comp_ask(qp, now);
	c->rd_beyond = true;
	return COMP_DONE;
}

static enum comp_state do_read(struct ur_qp *qp, struct comp_ctx *cx)
{
	struct ur_swqe *wqe = cx->wqe;
	int rc = read_store(qp, cx);

	if (rc)
		return rc == -EACCES ? COMP_ERROR : COMP_DROP;
	comp_advance(qp, cx, ur_psn_add(cx->psn, 1));
	return ur_psn_diff(qp->priv->comp.psn, wqe_last_psn(wqe)) > 0
		       ? COMP_COMPLETE : COMP_DONE;
}

static enum comp_state do_atomic(struct ur_qp *qp, struct comp_ctx *cx)
{
	struct ur_swqe *wqe = cx->wqe;
	uint8_t v[8];

	/* the original value, host order */
	if (wqe->answered)
		memcpy(v, &wqe->answer, 8);
	else
		memcpy(v, &cx->pkt->atmack, 8);
	if (wqe->num_sge && ur__wqe_keys(qp, qp->priv->sq_head, wqe)) {
		cx->status = UR_WC_LOC_PROT_ERR;
		return COMP_ERROR;
	}
	if (wqe->num_sge)
		ur__sge_copy_in(ur_swqe_sge(qp, qp->priv->sq_head),
				 wqe->num_sge, 0, v, 8);
	return COMP_COMPLETE;
}

static enum comp_state do_complete(struct ur_qp *qp, struct comp_ctx *cx)
{
	struct ur_swqe *wqe = cx->wqe;
	uint32_t last = wqe_last_psn(wqe);

	ur__wqe_done(qp, wqe, UR_WC_SUCCESS);
	comp_advance(qp, cx, ur_psn_add(last, 1));
	if (qp->priv->comp.rd_beyond) {
		struct ur_comp *c = &qp->priv->comp;
		/* Answers to later requests were dropped meanwhile. The
		 * newest ACK among them is taken again now; anything
		 * dropped after it (a READ response) is asked for. */
		bool more = !c->beyond_ack ||
			    ur_psn_diff(c->beyond_max, c->beyond_psn) > 0;

		c->rd_beyond = false;
		if (c->beyond_ack && ur_psn_diff(c->beyond_psn, cx->psn) > 0) {
			cx->psn = c->beyond_psn;
			cx->replay = true;
		}
		c->beyond_ack = false;
		if (more && qp->priv->sr.tx_peer) {
			/* The responder executed them (it holds or
			 * runs every request in order): one request
			 * again, with AckReq, brings the cumulative ACK
			 * (C9-105), not a window of duplicates. */
			ur__req_probe(qp, cx->now);
			c->ask_probe = true; /* timed in comp_finish */
		} else if (more) {
			ur__req_go_back(qp, qp->priv->comp.psn);
		}
	}
	/* A coalesced ACK may cover further WQEs (9.7.5.1.2): retire this
	 * one so that check_ack looks at the next. */
	if (ur_psn_diff(cx->psn, last) > 0) {
		ur__sq_complete(qp, cx->now);
		return COMP_CHECK_ACK;
	}
	return COMP_DONE;
}

/* IBTA 9.7.5.2.? table 44: NAK codes -> completion status. */
static const uint8_t nak_status[] = {
	[UR_NAK_INV_REQ] = UR_WC_REM_INV_REQ_ERR,
	[UR_NAK_REM_ACCESS_ERR] = UR_WC_REM_ACCESS_ERR,
	[UR_NAK_REM_OP_ERR] = UR_WC_REM_OP_ERR,
	[UR_NAK_INV_RD_REQ] = UR_WC_REM_INV_RD_REQ_ERR,
};

static enum comp_state do_nak(struct ur_qp *qp, struct comp_ctx *cx)
{
	struct ur_swqe *wqe = cx->wqe;
	uint8_t syn = cx->pkt->aeth.syndrome;
	uint8_t code = ur_aeth_value(syn);

	/* The requests before the NAKed PSN were executed (9.7.5.1.2). */
	if (is_ack_type(wqe) && ur_psn_diff(cx->psn, wqe->first_psn) > 0)
		comp_advance(qp, cx, cx->psn);
	if (ur_aeth_kind(syn) == UR_AETH_RNR_NAK) {
		qp->dev->cnt.rx_nak_rnr++;
		qp->cnt.rx_nak_rnr++;
		return COMP_RNR;
	}
	if (code == UR_NAK_PSN_SEQ_ERR) {
		qp->dev->cnt.rx_nak_seq++;
		qp->cnt.rx_nak_seq++;
		if (qp->priv->req.rnr_wait)
			return COMP_DONE;
		/* Selective repeat: the responder holds what follows. */
		return ur__sr_marked(qp, cx->pkt) ? COMP_SR_RESEND : COMP_RETRY;
	}
	qp->dev->cnt.rx_nak_other++;
	qp->cnt.rx_nak_other++;
	cx->status = code < sizeof(nak_status) && nak_status[code]
			     ? nak_status[code] : UR_WC_REM_OP_ERR;
	return COMP_ERROR;
}

static enum comp_state do_retry(struct ur_qp *qp, struct comp_ctx *cx,
				uint64_t now)
{
	struct ur_comp *c = &qp->priv->comp;

	if (qp->priv->mp)
		ur__mp_loss(qp->priv->mp, c->psn);
	ur__cc_loss(qp, false, now);
	ur__req_go_back(qp, c->psn);
	c->rd_beyond = false; /* everything from c->psn goes again */
	c->rto_deadline = UINT64_MAX;
	ur__comp_arm(qp, now);
	return COMP_DONE;
}

/* A selective NAK (docs/transport.md "Selective repeat"): resend the
 * named PSN alone; the timer restarts as for a go-back-N retry. */
static enum comp_state do_sr_resend(struct ur_qp *qp, struct comp_ctx *cx,
				    uint64_t now)
{
	struct ur_comp *c = &qp->priv->comp;

	qp->dev->cnt.rx_sr_nak++;
	c->lossy = true;
	c->nak_psn = cx->psn;
	if (qp->priv->mp)
		ur__mp_loss(qp->priv->mp, cx->psn);
	ur__cc_loss(qp, false, now);
	ur__req_resend_psn(qp, cx->psn, now);
	c->rto_deadline = UINT64_MAX;
	ur__comp_arm(qp, now);
	return COMP_DONE;
}

/* IBTA 9.7.5.2.8: wait the responder's RNR timer, then resend. */
static enum comp_state do_rnr(struct ur_qp *qp, struct comp_ctx *cx,
			      uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	uint8_t timer = ur_aeth_value(cx->pkt->aeth.syndrome);

	if (p->req.rnr_wait)
		return COMP_DONE; /* already waiting for this one */
	if (p->comp.rnr_left == 0) {
		cx->status = UR_WC_RNR_RETRY_EXC_ERR;
		return COMP_ERROR;
	}
	if (p->attr.rnr_retry != 7) /* 7 means retry forever */
		p->comp.rnr_left--;
	ur__req_go_back(qp, p->comp.psn);
	p->req.rnr_wait = true;
	p->req.rnr_deadline = now + (uint64_t)ur_rnr_timer_us(timer) * 1000;
	p->comp.rto_deadline = UINT64_MAX;
	return COMP_DONE;
}

static void comp_finish(struct ur_qp *qp, struct comp_ctx *cx, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;

	if (cx->progress)
		ask_settle(&p->comp, now);
	if (p->comp.ask_probe) {
		p->comp.ask_probe = false;
		p->comp.ask_psn = p->comp.psn;
		ask_arm(qp, now, false);
	}
	if (cx->progress) {
		p->comp.sr_probed = false;
		p->comp.retry_left = p->attr.retry_cnt;
		p->comp.rnr_left = p->attr.rnr_retry;
		p->comp.rto_deadline = UINT64_MAX;
		if (outstanding(qp))
			ur__comp_arm(qp, now);
		/* Do not resend what the ACK just covered. */
		if (ur_psn_diff(ur__req_cursor_psn(qp), p->comp.psn) < 0)
			ur__req_go_back(qp, p->comp.psn);
	}
	ur__sq_complete(qp, now);
	if (cx->progress || !p->comp.tail_at)
		tail_arm(qp, now);
	if (qp->state == UR_QPS_SQD && p->sq_head == p->req.assigned &&
	    !p->comp.drained_sent) {
		p->comp.drained_sent = true;
		if (p->en_sqd_notify && qp->dev->ops->qp_event)
			qp->dev->ops->qp_event(qp->dev->host, qp,
					       UR_EVENT_SQ_DRAINED);
	}
	ur__req_progress(qp, now);
	ur__qp_update_deadline(qp);
}

void ur__comp_rx(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now)
{
	struct comp_ctx cx = { .pkt = pkt, .psn = pkt->h.psn, .now = now };
	enum comp_state s = COMP_CHECK_PSN;

	if (qp->type != UR_QPT_RC ||
	    (qp->state != UR_QPS_RTS && qp->state != UR_QPS_SQD))
		return;
	if (ur__sr_marked(qp, pkt))
		qp->priv->sr.tx_peer = true;
	/* Messages that get their PSNs from now on may use jumbo packets. */
	if (qp->priv->jumbo.enable && ur_bth_ext_jumbo(pkt->bth))
		qp->priv->jumbo.tx_peer = ur_bth_ext_jumbo(pkt->bth) &
					  ur_jumbo_bits(qp->dev->jumbo_max);
	for (;;) {
		switch (s) {
		case COMP_CHECK_PSN:
			s = check_psn(qp, &cx);
			break;
		case COMP_CHECK_ACK:
			s = check_ack(qp, &cx);
			break;
		case COMP_READ:
			s = do_read(qp, &cx);
			break;
		case COMP_ATOMIC:
			s = do_atomic(qp, &cx);
			break;
		case COMP_COMPLETE:
			s = do_complete(qp, &cx);
			break;
		case COMP_NAK:
			s = do_nak(qp, &cx);
			break;
		case COMP_RETRY:
			s = do_retry(qp, &cx, now);
			break;
		case COMP_SR_RESEND:
			s = do_sr_resend(qp, &cx, now);
			break;
		case COMP_READ_AHEAD:
			s = do_read_ahead(qp, &cx, now);
			break;
		case COMP_PASSED:
			s = do_passed(qp, &cx, now);
			break;
		case COMP_RNR:
			s = do_rnr(qp, &cx, now);
			break;
		case COMP_ERROR:
			ur__wqe_done(qp, cx.wqe, cx.status);
			ur__qp_error(qp, now);
			return;
		case COMP_DONE:
			comp_finish(qp, &cx, now);
			return;
		case COMP_DROP:
			if (cx.progress)
				comp_finish(qp, &cx, now);
			return;
		}
	}
}

/* Retransmission timeout (9.7.6.1.3) and the end of an RNR wait. */
void ur__comp_timer(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_comp *c = &p->comp;

	if (p->req.rnr_wait && now >= p->req.rnr_deadline) {
		p->req.rnr_wait = false;
		ur__req_go_back(qp, c->psn);
		ur__req_progress(qp, now);
	}
	if (c->ask_at && now >= c->ask_at) {
		c->ask_at = 0;
		if (outstanding(qp) && c->psn == c->ask_psn && !p->req.rnr_wait) {
			struct ur_swqe *w = ur_swqe_at(qp, p->sq_head);

			qp->dev->cnt.tx_reask++;
			qp->cnt.tx_reask++;
			if (c->rd_asked && c->rd_ask_psn == c->psn && !w->done &&
			    ur__wr_is_rd_atomic(w->opcode))
				ur__req_resend_one(qp, p->sq_head, c->psn, now);
			else
				ur__req_probe(qp, now);
			ask_arm(qp, now, true);
		}
	}
	if (c->tail_at && now >= c->tail_at) {
		c->tail_at = 0;
		/* (not while a lost answer is asked for again: ask_at) */
		if (outstanding(qp) && c->psn == c->tail_psn && !c->ask_at &&
		    !p->req.rnr_wait && !c->sr_probed) {
			qp->dev->cnt.tx_sr_probe++;
			qp->cnt.tx_sr_probe++;
			ur__req_probe(qp, now);
		}
	}
	/* Still refused by the device: the timer waits with the QP. */
	if (c->held_at && c->rto_deadline != UINT64_MAX &&
	    now >= c->rto_deadline)
		hold_credit(qp, now, true);
	if (c->rto_deadline != UINT64_MAX && now >= c->rto_deadline) {
		c->rto_deadline = UINT64_MAX;
		if (outstanding(qp) && p->sr.tx_peer && !c->sr_probed &&
		    !p->req.sr_resend) {
			/* Selective repeat's probe (RFC 8985 7.3): the
			 * responder holds what arrived. The oldest
			 * unacknowledged PSN again (a READ/atomic whose
			 * answer was lost), and the newest with AckReq:
			 * a lost ACK comes again, a lost tail becomes a
			 * gap the responder NAKs. Not counted as a
			 * timeout: the next expiry without progress goes
			 * back N. At the transport timer, not earlier: a
			 * probe at three smoothed RTTs fired whenever a
			 * queue grew faster than the average followed
			 * (uroce-sim, bench/multipath_sim.sh, 1 % loss:
			 * 71 go-backs and 19,578 resends instead of 0 and
			 * 979; two clean paths 516 resends instead of 0). */
			c->sr_probed = true;
			qp->dev->cnt.tx_sr_probe++;
			qp->cnt.tx_sr_probe++;
			ur__req_resend_psn(qp, c->psn, now);
			ur__req_probe(qp, now);
			ur__comp_arm(qp, now);
		} else if (outstanding(qp)) {
			c->sr_probed = false;
			qp->dev->cnt.tx_timeouts++;
			if (c->retry_left == 0) {
				ur__wqe_done(qp, ur_swqe_at(qp, p->sq_head),
					      UR_WC_RETRY_EXC_ERR);
				ur__qp_error(qp, now);
				return;
			}
			c->retry_left--;
			if (p->mp)
				ur__mp_loss(p->mp, c->psn);
			ur__cc_loss(qp, true, now);
			ur__req_go_back(qp, c->psn);
			c->rd_beyond = false;
			ur__comp_arm(qp, now);
			ur__req_progress(qp, now);
		}
	}
	ur__qp_update_deadline(qp);
}

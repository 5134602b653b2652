// SPDX-License-Identifier: MIT
/*
 * The responder for RC and UC (IBTA 9.7.5, 9.8): checks the PSN against the
 * expected PSN, the opcode sequence, the receive queue, the remote key;
 * executes SEND/WRITE/READ/atomics; and acknowledges.
 *
 * Duplicates (9.7.5.1.1): SEND and WRITE are never executed again, only
 * re-acknowledged; a READ is served again from the duplicate request; an
 * atomic is answered from the saved-results cache and never executed twice.
 * A packet ahead of the expected PSN gets one NAK-sequence error until the
 * expected PSN arrives (9.7.5.1.2).
 */
#include <string.h>

#include "ur_copy.h"
#include "ur_qp_priv.h"

#define RESP_STATES(X)                                                       \
	X(CHECK_PSN) X(CHECK_OP_SEQ) X(CHECK_OP_VALID) X(CHECK_RESOURCE)     \
	X(CHECK_RKEY) X(EXECUTE) X(ACKNOWLEDGE) X(DUPLICATE) X(NAK_SEQ)      \
	X(ERROR) X(DONE)

enum resp_state {
#define UR_X(n) RESP_##n,
	RESP_STATES(UR_X)
#undef UR_X
};

static const char *const resp_state_name[] __attribute__((unused)) = {
#define UR_X(n) [RESP_##n] = #n,
	RESP_STATES(UR_X)
#undef UR_X
};

struct resp_ctx {
	const struct ur_pkt *pkt;
	uint32_t psn;
	uint8_t *host;       /* RETH/AtomicETH target, once checked */
	uint8_t nak;         /* syndrome to send in RESP_ERROR */
	uint8_t event;       /* async event for RESP_ERROR */
	uint32_t recv_status; /* complete the receive WQE with this, or 0 */
	uint64_t now;
};

static bool is_rc(const struct ur_qp *qp)
{
	return qp->type == UR_QPT_RC;
}

static enum resp_state nak(struct resp_ctx *cx, enum ur_nak_code code)
{
	cx->nak = ur_aeth_nak(code);
	cx->event = code == UR_NAK_REM_ACCESS_ERR ? UR_EVENT_QP_ACCESS_ERR
						  : UR_EVENT_QP_REQ_ERR;
	return RESP_ERROR;
}

static void uc_abort(struct ur_qp *qp)
{
	struct ur_resp *r = &qp->priv->resp;

	r->cur = UR_CUR_NONE;
	r->off = 0;
	r->rwqe_taken = false; /* the receive WQE is reused */
}

static enum resp_state check_psn(struct ur_qp *qp, struct resp_ctx *cx)
{
	struct ur_resp *r = &qp->priv->resp;
	int32_t d = ur_psn_diff(cx->psn, r->psn);
	uint32_t m = cx->pkt->mask;

	if (!is_rc(qp)) {
		/* UC (9.8.3): a gap drops the message in progress; resync
		 * on the next FIRST or ONLY. */
		if (d != 0 || r->uc_drop) {
			if (d != 0)
				qp->dev->cnt.rx_drop_psn++;
			uc_abort(qp);
			if (m & UR_OPF_FIRST) {
				r->uc_drop = false;
				r->psn = cx->psn;
				return RESP_CHECK_OP_SEQ;
			}
			r->uc_drop = true;
			r->psn = ur_psn_add(cx->psn, 1);
			return RESP_DONE;
		}
		return RESP_CHECK_OP_SEQ;
	}
	if (d > 0) {
		qp->dev->cnt.rx_out_of_seq++;
		qp->cnt.rx_out_of_seq++;
		if (ur__sr_marked(qp, cx->pkt)) {
			/* Selective repeat: keep it for when the gap fills. */
			ur__sr_hold(qp, cx->pkt, (uint32_t)d, cx->now);
			return RESP_DONE;
		}
		return r->nak_sent ? RESP_DONE : RESP_NAK_SEQ;
	}
	if (d < 0) {
		qp->dev->cnt.rx_duplicate++;
		qp->cnt.rx_duplicate++;
		ur__sr_duplicate(qp, cx->psn, cx->now);
		return RESP_DUPLICATE;
	}
	if (r->rd_active) {
		/* Answer the READ first (responses go in request order);
		 * still out of buffers: drop, the requester resends. */
		ur__resp_progress(qp, cx->now);
		if (r->rd_active)
			return RESP_DONE;
	}
	r->nak_sent = false;
	r->dup_acked = false;
	return RESP_CHECK_OP_SEQ;
}

/* IBTA 9.7.5.1.3 / C9-? : FIRST...MIDDLE...LAST of one message in order. */
static enum resp_state check_op_seq(struct ur_qp *qp, struct resp_ctx *cx)
{
	struct ur_resp *r = &qp->priv->resp;
	uint32_t m = cx->pkt->mask;
	bool cont = m & (UR_OPF_MIDDLE | UR_OPF_LAST) && !(m & UR_OPF_FIRST);
	bool ok;

	switch (r->cur) {
	case UR_CUR_SEND:
		ok = cont && (m & UR_OPF_SEND);
		break;
	case UR_CUR_WRITE:
		ok = cont && (m & UR_OPF_WRITE);
		break;
	default:
		ok = !cont;
		break;
	}
	if (ok)
		return RESP_CHECK_OP_VALID;
	if (!is_rc(qp)) {
		uc_abort(qp);
		r->uc_drop = true;
		r->psn = ur_psn_add(cx->psn, 1);
		return RESP_DONE;
	}
	return nak(cx, UR_NAK_INV_REQ);
}

/*
 * XRC TGT (XRC annex): the request's XRCETH names the XRC SRQ that gives
 * its receive WQE, the PD its remote key is checked in and the CQ its
 * receive completes on. One that does not exist, or belongs to another
 * XRC domain than the TGT's, is answered like a bad R_Key: NAK remote
 * access error, the QP in error (class C, 9.9.3.1.3; rxe's XRC patches
 * do the same).
 */
static enum resp_state xrc_bind(struct ur_qp *qp, struct resp_ctx *cx)
{
	const struct ur_dev_ops *ops = qp->dev->ops;
	struct ur_srq *srq = NULL;

	if (!(cx->pkt->mask & UR_HDR_XRCETH))
		return nak(cx, UR_NAK_INV_REQ);
	if (ops->srq_lookup)
		srq = ops->srq_lookup(qp->dev->host, cx->pkt->xrc_srqn);
	if (!srq || !srq->xrcd || srq->xrcd != qp->xrcd)
		return nak(cx, UR_NAK_REM_ACCESS_ERR);
	qp->srq = srq;
	qp->pdn = srq->pdn;
	qp->recv_cq = srq->cq;
	return RESP_CHECK_OP_VALID;
}

static enum resp_state check_op_valid(struct ur_qp *qp, struct resp_ctx *cx)
{
	const struct ur_pkt *pkt = cx->pkt;
	uint32_t m = pkt->mask, mtu = ur_qp_mtu(qp);
	uint32_t acc = qp->priv->attr.qp_access_flags;

	if (qp->xrc == UR_XRC_TGT && xrc_bind(qp, cx) == RESP_ERROR)
		return RESP_ERROR;
	if (((m & (UR_OPF_WRITE | UR_OPF_ATOMIC_WRITE)) &&
	     !(acc & UR_ACCESS_REMOTE_WRITE)) ||
	    ((m & UR_OPF_READ) && !(acc & UR_ACCESS_REMOTE_READ)) ||
	    ((m & UR_OPF_ATOMIC) && !(acc & UR_ACCESS_REMOTE_ATOMIC)))
		return nak(cx, UR_NAK_REM_ACCESS_ERR);
	if (m & (UR_OPF_SEND | UR_OPF_WRITE)) {
		/* 9.7.5.1.3: FIRST and MIDDLE carry exactly one PMTU; with
		 * jumbo packets on, the path MTU or a jumbo size our link
		 * carries (the requester chose per message). */
		uint8_t jb = qp->priv->jumbo.enable && mtu == 4096
				     ? ur_jumbo_bits(qp->dev->jumbo_max)
				     : 0;
		uint32_t max = jb ? ur_jumbo_size(jb) : mtu;

		if ((m & (UR_OPF_FIRST | UR_OPF_MIDDLE)) && !(m & UR_OPF_LAST)
			    ? pkt->payload_len != mtu &&
				      !(jb & ur_jumbo_bit(pkt->payload_len))
			    : pkt->payload_len > max)
			return nak(cx, UR_NAK_INV_REQ);
	}
	if ((m & UR_OPF_ATOMIC_WRITE) &&
	    (pkt->payload_len != 8 || pkt->reth.len != 8))
		return nak(cx, UR_NAK_INV_REQ);
	return RESP_CHECK_RESOURCE;
}

/* Take the head receive WQE for a SEND or WRITE_WITH_IMM (9.7.5.1.4: RNR). */
static enum resp_state check_resource(struct ur_qp *qp, struct resp_ctx *cx)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_resp *r = &p->resp;
	uint32_t m = cx->pkt->mask;
	bool need = (m & UR_OPF_SEND) ||
		    ((m & UR_OPF_WRITE) && (m & UR_OPF_IMM));

	if (!need || r->rwqe_taken)
		return RESP_CHECK_RKEY;
	if (!ur__rq_ready(qp)) {
		if (!is_rc(qp)) {
			qp->dev->cnt.rx_drop_no_recv++;
			uc_abort(qp);
			r->uc_drop = true;
			r->psn = ur_psn_add(cx->psn, 1);
			return RESP_DONE;
		}
		cx->nak = ur_aeth_rnr_nak(p->attr.min_rnr_timer);
		r->nak_sent = true; /* later packets wait for the resend */
		ur__tx_ack(qp, cx->nak, r->psn);
		return RESP_DONE;
	}
	r->rwqe_gen = atomic_load(&qp->dev->key_gen);
	if (ur__sge_resolve(qp, ur_rwqe_sge(qp, p->rq_head),
			     ur_rwqe_at(qp, p->rq_head)->num_sge,
			     UR_ACCESS_LOCAL_WRITE)) {
		cx->recv_status = UR_WC_LOC_PROT_ERR;
		return nak(cx, UR_NAK_REM_OP_ERR);
	}
	r->rwqe_taken = true;
	return RESP_CHECK_RKEY;
}

/* C9-88 and 10.6.3: the remote key is checked before a byte is touched. */
static enum resp_state check_rkey(struct ur_qp *qp, struct resp_ctx *cx)
{
	const struct ur_pkt *pkt = cx->pkt;
	uint32_t m = pkt->mask, access, rkey, len;
	uint64_t va;

	if (m & UR_OPF_ATOMIC) {
		va = pkt->atm.va;
		rkey = pkt->atm.rkey;
		len = 8;
		access = UR_ACCESS_REMOTE_ATOMIC;
		if (va & 7)
			return nak(cx, UR_NAK_INV_REQ);
	} else if (m & UR_HDR_RETH) {
		va = pkt->reth.va;
		rkey = pkt->reth.rkey;
		len = pkt->reth.len;
		access = (m & UR_OPF_READ) ? UR_ACCESS_REMOTE_READ
					   : UR_ACCESS_REMOTE_WRITE;
		if ((m & UR_OPF_ATOMIC_WRITE) && (va & 7))
			return nak(cx, UR_NAK_INV_REQ);
		if ((m & UR_OPF_WRITE) && (m & UR_OPF_LAST) &&
		    pkt->payload_len != len)
			return nak(cx, UR_NAK_INV_REQ);
		if ((m & UR_OPF_WRITE) && !(m & UR_OPF_LAST) &&
		    len <= pkt->payload_len)
			return nak(cx, UR_NAK_INV_REQ);
		if (len == 0) {
			cx->host = NULL; /* zero length: no key check (C9-88) */
			return RESP_EXECUTE;
		}
	} else {
		return RESP_EXECUTE;
	}
	if (ur_rkey_check(qp, rkey, va, len, access, &cx->host))
		return nak(cx, UR_NAK_REM_ACCESS_ERR);
	return RESP_EXECUTE;
}

static enum resp_state exec_send(struct ur_qp *qp, struct resp_ctx *cx)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_resp *r = &p->resp;
	const struct ur_pkt *pkt = cx->pkt;
	struct ur_rwqe *rwqe = ur_rwqe_at(qp, p->rq_head);
	uint32_t flags = 0, imm = 0;

	if (pkt->payload_len > rwqe->length - r->off) {
		/* 9.7.5.2.? : too long for the buffer: local length error
		 * here, invalid request for the requester. */
		cx->recv_status = UR_WC_LOC_LEN_ERR;
		return nak(cx, UR_NAK_INV_REQ);
	}
	/* The receive buffer's region may be gone since the first packet. */
	if (pkt->payload_len && ur__keys_moved(qp, &r->rwqe_gen) &&
	    ur__sge_resolve(qp, ur_rwqe_sge(qp, p->rq_head), rwqe->num_sge,
			     UR_ACCESS_LOCAL_WRITE)) {
		cx->recv_status = UR_WC_LOC_PROT_ERR;
		return nak(cx, UR_NAK_REM_OP_ERR);
	}
	ur__sge_copy_in(ur_rwqe_sge(qp, p->rq_head), rwqe->num_sge, r->off,
			 pkt->payload, pkt->payload_len);
	r->off += pkt->payload_len;
	if (!(pkt->mask & UR_OPF_LAST)) {
		r->cur = UR_CUR_SEND;
		return RESP_ACKNOWLEDGE;
	}
	if (pkt->mask & UR_OPF_IMM) {
		flags = UR_WC_WITH_IMM;
		imm = ur_imm_net(pkt->imm);
	} else if (pkt->mask & UR_OPF_INV) {
		flags = UR_WC_WITH_INV;
		imm = pkt->ieth;
		/* 10.6.7.2.3: a type 2 window of our PD is invalidated
		 * before the receive completes. Other keys (regions) have
		 * nothing to invalidate here and the receive completes as
		 * usual (docs/transport.md). */
		(void)ur__mw_invalidate(qp, pkt->ieth);
	}
	ur__recv_complete(qp, UR_WC_SUCCESS, UR_WC_RECV, r->off, imm, flags,
			   0, pkt->h.se, cx->now);
	r->cur = UR_CUR_NONE;
	r->off = 0;
	r->rwqe_taken = false;
	r->msn = ur_psn_add(r->msn, 1);
	return RESP_ACKNOWLEDGE;
}

static enum resp_state exec_write(struct ur_qp *qp, struct resp_ctx *cx)
{
	struct ur_resp *r = &qp->priv->resp;
	const struct ur_pkt *pkt = cx->pkt;

	if (pkt->mask & UR_OPF_FIRST) {
		r->wr_host = cx->host;
		r->wr_left = r->wr_len = pkt->reth.len;
		r->wr_rkey = pkt->reth.rkey;
		r->wr_va = pkt->reth.va;
		r->wr_gen = atomic_load(&qp->dev->key_gen);
	}
	if (pkt->payload_len > r->wr_left ||
	    ((pkt->mask & UR_OPF_LAST) && pkt->payload_len != r->wr_left))
		return nak(cx, UR_NAK_INV_REQ);
	if (pkt->payload_len) {
		/* The region may have been deregistered since the FIRST
		 * packet (C9-88: no byte through an invalid key). */
		if (ur__keys_moved(qp, &r->wr_gen) &&
		    ur_rkey_check(qp, r->wr_rkey, r->wr_va, r->wr_left,
				  UR_ACCESS_REMOTE_WRITE, &r->wr_host)) {
			r->cur = UR_CUR_NONE;
			return nak(cx, UR_NAK_REM_ACCESS_ERR);
		}
		/* Already there when the host placed it while checking
		 * its ICRC (ur_qp_rx_place). */
		if (pkt->payload != r->wr_host)
			ur_copy(r->wr_host, pkt->payload, pkt->payload_len);
		r->wr_host += pkt->payload_len;
		r->wr_va += pkt->payload_len;
		r->wr_left -= pkt->payload_len;
	}
	if (!(pkt->mask & UR_OPF_LAST)) {
		r->cur = UR_CUR_WRITE;
		return RESP_ACKNOWLEDGE;
	}
	r->cur = UR_CUR_NONE;
	if (pkt->mask & UR_OPF_IMM) {
		ur__recv_complete(qp, UR_WC_SUCCESS, UR_WC_RECV_RDMA_WITH_IMM,
				   r->wr_len, ur_imm_net(pkt->imm),
				   UR_WC_WITH_IMM, 0, pkt->h.se, cx->now);
		r->rwqe_taken = false;
	}
	r->msn = ur_psn_add(r->msn, 1);
	return RESP_ACKNOWLEDGE;
}

/* Start answering a READ at @psn for [host, host+len) (9.7.5.1.5). */
static void read_start(struct ur_qp *qp, const struct ur_pkt *pkt,
		       const uint8_t *host, uint32_t len, uint32_t psn,
		       uint64_t now)
{
	struct ur_resp *r = &qp->priv->resp;

	r->rd_active = true;
	r->rd_host = host;
	r->rd_rkey = pkt->reth.rkey;
	r->rd_va = pkt->reth.va;
	r->rd_gen = atomic_load(&qp->dev->key_gen);
	r->rd_len = len;
	r->rd_off = 0;
	r->rd_psn = r->rd_first_psn = psn;
	ur__resp_progress(qp, now);
}

void ur__resp_progress(struct ur_qp *qp, uint64_t now)
{
	struct ur_resp *r = &qp->priv->resp;
	uint32_t mtu = ur_qp_mtu(qp);

	/* A response continued after the lock was released: its region may
	 * be gone. Stop; the requester's retry gets the NAK. */
	if (r->rd_active && r->rd_len && ur__keys_moved(qp, &r->rd_gen)) {
		uint8_t *host;

		if (ur_rkey_check(qp, r->rd_rkey, r->rd_va, r->rd_len,
				  UR_ACCESS_REMOTE_READ, &host))
			r->rd_active = false;
		else
			r->rd_host = host;
	}
	while (r->rd_active) {
		uint32_t n = ur_npkts(r->rd_len, mtu);
		uint32_t k = r->rd_off / mtu;
		uint32_t len = r->rd_len - r->rd_off < mtu ? r->rd_len - r->rd_off
							   : mtu;
		struct ur_txhdr h = {
			.dqpn = qp->priv->attr.dest_qp_num,
			.psn = r->rd_psn,
			.aeth = { .syndrome = ur_aeth_ack(UR_AETH_CREDIT_INVALID),
				  .msn = r->msn },
		};
		struct ur_pktbuf *b;

		if (n == 1)
			h.opcode = UR_OP_RC_RDMA_READ_RESPONSE_ONLY;
		else if (k == 0)
			h.opcode = UR_OP_RC_RDMA_READ_RESPONSE_FIRST;
		else if (k == n - 1)
			h.opcode = UR_OP_RC_RDMA_READ_RESPONSE_LAST;
		else
			h.opcode = UR_OP_RC_RDMA_READ_RESPONSE_MIDDLE;
		h.opcode = ur__op(qp, h.opcode);
		b = ur__tx_alloc(qp, h.opcode, len);
		if (!b)
			return; /* continue on the next progress call */
		ur__tx_payload_from(qp, b, h.opcode, r->rd_host + r->rd_off,
				     len);
		ur__tx_send(qp, b, &h, len, NULL);
		r->rd_off += len;
		r->rd_psn = ur_psn_add(r->rd_psn, 1);
		if (k >= n - 1)
			r->rd_active = false;
	}
}

static void send_atomic_ack(struct ur_qp *qp, uint32_t psn, uint64_t orig)
{
	struct ur_txhdr h = {
		.opcode = ur__op(qp, UR_OP_RC_ATOMIC_ACKNOWLEDGE),
		.dqpn = qp->priv->attr.dest_qp_num,
		.psn = psn,
		.aeth = { .syndrome = ur_aeth_ack(UR_AETH_CREDIT_INVALID),
			  .msn = qp->priv->resp.msn },
		.atmack = orig,
	};
	struct ur_pktbuf *b = ur__tx_alloc(qp, h.opcode, 0);

	if (b)
		ur__tx_send(qp, b, &h, 0, NULL);
}

/* Keep a responder resource for the READ or atomic at @psn (the oldest
 * one gives way: 9.5.4 allows max_dest_rd_atomic outstanding). */
static struct ur_rd_res *res_new(struct ur_qp *qp, uint32_t psn)
{
	struct ur_resp *r = &qp->priv->resp;
	struct ur_rd_res *res = &r->res[r->res_next++ % r->n_res];

	memset(res, 0, sizeof(*res));
	res->valid = true;
	res->psn = psn;
	return res;
}

/* The kept resource a duplicate READ or atomic at @psn belongs to: an
 * atomic by its PSN, a READ by any PSN of its response (a retried READ
 * asks from where its responses stopped, 9.7.4.1.4). NULL: none. */
static const struct ur_rd_res *res_find(const struct ur_qp *qp, uint32_t psn,
					bool read)
{
	const struct ur_resp *r = &qp->priv->resp;

	for (uint32_t i = 0; i < r->n_res; i++) {
		const struct ur_rd_res *res = &r->res[i];

		if (!res->valid || res->read != read)
			continue;
		if (read ? ur_psn_diff(psn, res->psn) >= 0 &&
				   ur_psn_diff(psn, res->last_psn) <= 0
			 : psn == res->psn)
			return res;
	}
	return NULL;
}

/* IBTA 9.4.5: atomics on an 8-byte aligned target, at most once. */
static enum resp_state exec_atomic(struct ur_qp *qp, struct resp_ctx *cx)
{
	struct ur_resp *r = &qp->priv->resp;
	const struct ur_pkt *pkt = cx->pkt;
	uint64_t *t = (uint64_t *)(void *)cx->host;
	uint64_t orig;
	struct ur_rd_res *res;

	if (pkt->h.opcode == UR_OP_RC_COMPARE_SWAP) {
		orig = pkt->atm.compare;
		__atomic_compare_exchange_n(t, &orig, pkt->atm.swap_add, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	} else {
		orig = __atomic_fetch_add(t, pkt->atm.swap_add,
					  __ATOMIC_SEQ_CST);
	}
	res = res_new(qp, cx->psn);
	res->orig = orig;
	r->msn = ur_psn_add(r->msn, 1);
	r->psn = ur_psn_add(r->psn, 1);
	send_atomic_ack(qp, cx->psn, orig);
	return RESP_DONE;
}

static enum resp_state execute(struct ur_qp *qp, struct resp_ctx *cx,
			       uint64_t now)
{
	struct ur_resp *r = &qp->priv->resp;
	const struct ur_pkt *pkt = cx->pkt;
	uint32_t m = pkt->mask;

	if (m & UR_OPF_SEND)
		return exec_send(qp, cx);
	if (m & UR_OPF_WRITE)
		return exec_write(qp, cx);
	if (m & UR_OPF_ATOMIC)
		return exec_atomic(qp, cx);
	if (m & UR_OPF_ATOMIC_WRITE) {
		uint64_t v;

		memcpy(&v, pkt->payload, 8);
		__atomic_store_n((uint64_t *)(void *)cx->host, v,
				 __ATOMIC_SEQ_CST);
		r->msn = ur_psn_add(r->msn, 1);
		return RESP_ACKNOWLEDGE;
	}
	if (m & UR_OPF_READ) {
		uint32_t n = ur_npkts(pkt->reth.len, ur_qp_mtu(qp));
		struct ur_rd_res *res = res_new(qp, cx->psn);

		res->read = true;
		res->last_psn = ur_psn_add(cx->psn, n - 1);
		res->va = pkt->reth.va;
		res->rkey = pkt->reth.rkey;
		res->len = pkt->reth.len;
		res->pdn = qp->pdn; /* an XRC TGT's changes per request */
		r->psn = ur_psn_add(r->psn, n);
		r->msn = ur_psn_add(r->msn, 1);
		read_start(qp, pkt, cx->host, pkt->reth.len, cx->psn, now);
		return RESP_DONE;
	}
	return nak(cx, UR_NAK_INV_REQ);
}

/* Coalesced ACKs: answer when asked (AckReq, 9.7.5.1.1). Within a
 * receive batch the host delivers with ack_later, the answer is owed and
 * made once, at the batch's end: each request's ACK made at once was
 * superseded by the next one in the host's queue (a 64-byte WRITE stream
 * made 20 ACKs per one sent, about 14 % of the responder's CPU). */
static enum resp_state acknowledge(struct ur_qp *qp, struct resp_ctx *cx)
{
	struct ur_resp *r = &qp->priv->resp;

	r->psn = ur_psn_add(cx->psn, 1);
	if (!is_rc(qp) || !cx->pkt->h.ackreq)
		return RESP_DONE;
	if (r->ack_owed) /* covered by this newer one (9.7.5.1.2) */
		qp->dev->cnt.tx_ack_coalesced++;
	if (r->ack_later) {
		r->ack_owed = true;
		r->ack_psn = cx->psn;
		r->ack_msn = r->msn;
		return RESP_DONE;
	}
	r->ack_owed = false;
	ur__tx_ack(qp, ur_aeth_ack(UR_AETH_CREDIT_INVALID), cx->psn);
	return RESP_DONE;
}

static enum resp_state duplicate(struct ur_qp *qp, struct resp_ctx *cx,
				 uint64_t now)
{
	struct ur_resp *r = &qp->priv->resp;
	const struct ur_pkt *pkt = cx->pkt;
	uint32_t m = pkt->mask;

	if (m & UR_OPF_READ) {
		const struct ur_rd_res *res = res_find(qp, cx->psn, true);
		const struct ur_reth *re = &pkt->reth;
		uint8_t *host = NULL;

		/* 9.7.5.1.5: only a READ we still keep a resource for, and
		 * only within what it asked (same key, a part of its range,
		 * as rxe checks): not half the PSN space of READs answered
		 * again to whoever asks, which made us a reflector. */
		if (!res || re->rkey != res->rkey || re->va < res->va ||
		    re->len > res->len || re->va - res->va > res->len - re->len) {
			qp->dev->cnt.rx_drop_dup_rd++;
			return RESP_DONE;
		}
		/* Serve the duplicate from its PSN. A READ job still in
		 * progress (out of buffers) is abandoned: this is the one
		 * the requester is waiting for, and it asks again for the
		 * other. */
		/* XRC TGT: the key is the PD's of the SRQ the READ named
		 * then, not of the latest request's. */
		if (qp->xrc == UR_XRC_TGT)
			qp->pdn = res->pdn;
		if (pkt->reth.len) {
			if (ur_rkey_check(qp, pkt->reth.rkey, pkt->reth.va,
					  pkt->reth.len, UR_ACCESS_REMOTE_READ,
					  &host))
				return RESP_DONE;
		}
		read_start(qp, pkt, host, pkt->reth.len, cx->psn, now);
		return RESP_DONE;
	}
	if (m & UR_OPF_ATOMIC) {
		const struct ur_rd_res *res = res_find(qp, cx->psn, false);

		if (res)
			send_atomic_ack(qp, cx->psn, res->orig);
		else
			qp->dev->cnt.rx_drop_dup_rd++;
		return RESP_DONE;
	}
	/* C9-105: acknowledge again, without executing. Once per burst of
	 * duplicates unless the requester asks. */
	if (pkt->h.ackreq || !r->dup_acked) {
		r->dup_acked = true;
		ur__tx_ack(qp, ur_aeth_ack(UR_AETH_CREDIT_INVALID),
			    ur_psn_add(r->psn, UR_PSN_MASK));
	}
	return RESP_DONE;
}

static void resp_error(struct ur_qp *qp, struct resp_ctx *cx, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;

	if (cx->recv_status && p->rq_head != p->rq_tail)
		ur__recv_complete(qp, cx->recv_status, UR_WC_RECV, 0, 0, 0, 0,
				   false, now);
	if (!is_rc(qp)) {
		uc_abort(qp);
		p->resp.uc_drop = true;
		p->resp.psn = ur_psn_add(cx->psn, 1);
		return;
	}
	ur__tx_ack(qp, cx->nak, cx->psn);
	/* An RC responder error is fatal for the QP (10.3.1, 11.6.2). */
	ur__qp_error(qp, now);
	if (qp->dev->ops->qp_event)
		qp->dev->ops->qp_event(qp->dev->host, qp,
				       (enum ur_async_event)cx->event);
}

uint8_t *ur_qp_rx_place(const struct ur_qp *qp, const uint8_t *buf,
			size_t len, const struct ur_rxinfo *ri)
{
	const struct ur_resp *r = &qp->priv->resp;

	/* Not a byte from anyone but the peer (ur_qp_rx drops it after). */
	/* Nor anything sealed: it lands once its tag verified. */
	if (qp->type != UR_QPT_RC || !ur__from_peer(qp, ri) ||
	    qp->priv->crypt.alg ||
	    len < UR_BTH_LEN + UR_ICRC_LEN ||
	    ur_bth_opcode(buf) != UR_OP_RC_RDMA_WRITE_MIDDLE ||
	    ur_bth_pad(buf) || r->cur != UR_CUR_WRITE ||
	    ur_bth_psn(buf) != r->psn || !ur_state_receives(qp->state))
		return NULL;
	/* Never the message's last bytes: a program may poll memory for
	 * them (ib_write_lat does) and take them as the end of the WRITE,
	 * so they land only once checked. */
	if (len - UR_BTH_LEN - UR_ICRC_LEN >= r->wr_left)
		return NULL;
	/* A region deregistered since the FIRST packet: exec_write looks
	 * the key up again. */
	if (atomic_load(&qp->dev->key_gen) != r->wr_gen)
		return NULL;
	return r->wr_host;
}

void ur__resp_rx(struct ur_qp *qp, const struct ur_pkt *pkt,
		  const struct ur_rxinfo *ri, uint64_t now)
{
	struct ur_sr *sr = &qp->priv->sr;

	if (ur__sr_marked(qp, pkt)) {
		sr->rx_peer = true;
		if (ri)
			ur__sr_path_seen(qp, ri->path.sport, ri->rx_if,
					 pkt->h.psn, now);
	}
	if (sr->held && pkt->h.psn == qp->priv->resp.psn &&
	    !qp->priv->resp.nak_sent)
		ur__sr_filled(qp, now);
	if (sr->nak_live && pkt->h.psn == qp->priv->resp.psn)
		ur__sr_resent(qp, pkt->h.psn, now);
	if (qp->priv->jumbo.enable && ur_bth_ext_jumbo(pkt->bth))
		qp->priv->jumbo.rx_peer = ur_bth_ext_jumbo(pkt->bth) &
					  ur_jumbo_bits(qp->dev->jumbo_max);
	qp->priv->resp.ack_later = ri && ri->ack_later && is_rc(qp);
	ur__resp_run(qp, pkt, now);
	if (sr->held)
		ur__sr_drain(qp, now);
	qp->priv->resp.ack_later = false;
	/* XRC TGT: the SRQ is named again by the next request (and the
	 * host may destroy it meanwhile); its PD and CQ stay for a READ
	 * still being answered and for a flush. */
	if (qp->xrc == UR_XRC_TGT)
		qp->srq = NULL;
}

bool ur_qp_ack_owed(const struct ur_qp *qp)
{
	return qp->priv->resp.ack_owed;
}

void ur_qp_ack_flush(struct ur_qp *qp)
{
	ur__tx_ack_owed(qp);
}

void ur__resp_run(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now)
{
	struct resp_ctx cx = { .pkt = pkt, .psn = pkt->h.psn, .now = now };
	enum resp_state s = RESP_CHECK_PSN;

	for (;;) {
		switch (s) {
		case RESP_CHECK_PSN:
			s = check_psn(qp, &cx);
			break;
		case RESP_CHECK_OP_SEQ:
			s = check_op_seq(qp, &cx);
			break;
		case RESP_CHECK_OP_VALID:
			s = check_op_valid(qp, &cx);
			break;
		case RESP_CHECK_RESOURCE:
			s = check_resource(qp, &cx);
			break;
		case RESP_CHECK_RKEY:
			s = check_rkey(qp, &cx);
			break;
		case RESP_EXECUTE:
			s = execute(qp, &cx, now);
			break;
		case RESP_ACKNOWLEDGE:
			s = acknowledge(qp, &cx);
			break;
		case RESP_DUPLICATE:
			s = duplicate(qp, &cx, now);
			break;
		case RESP_NAK_SEQ:
			qp->priv->resp.nak_sent = true;
			ur__tx_ack(qp, ur_aeth_nak(UR_NAK_PSN_SEQ_ERR),
				    qp->priv->resp.psn);
			return;
		case RESP_ERROR:
			resp_error(qp, &cx, now);
			return;
		case RESP_DONE:
			return;
		}
	}
}

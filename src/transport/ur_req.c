// SPDX-License-Identifier: MIT
/*
 * The requester (IBTA 9.5, 9.7.1, 9.7.4): turns send WQEs into request
 * packets. It assigns PSNs when a WQE starts, segments by path MTU into
 * FIRST/MIDDLE/LAST or ONLY, and keeps the send window, the limit on
 * outstanding READ/atomic requests (max_rd_atomic, 9.5.4) and the fence.
 * Retransmission is go-back-N: the completer moves the cursor back with
 * ur__req_go_back() and this code sends again from there.
 */
#include <string.h>

#include "ur_qp_priv.h"

enum { QPT_RC = 1 << UR_QPT_RC, QPT_UC = 1 << UR_QPT_UC, QPT_UD = 1 << UR_QPT_UD };

/* Per work request opcode: the RC wire opcodes and what it completes as. */
struct ur_wr_info {
	bool valid;
	uint8_t qpts;       /* QPT_* that may post it */
	uint8_t only, first, middle, last; /* RC opcodes; UC adds 0x20 */
	uint8_t wc;         /* enum ur_wc_opcode */
	bool rd_atomic;     /* counts against max_rd_atomic */
	bool has_payload;   /* payload comes from the SGEs */
	bool local;         /* executed by the requester, no packets */
	uint32_t local_access; /* needed on the local SGEs */
};

static const struct ur_wr_info wr_info[] = {
	[UR_WR_SEND] = {
		.valid = true, .qpts = QPT_RC | QPT_UC | QPT_UD,
		.only = UR_OP_RC_SEND_ONLY, .first = UR_OP_RC_SEND_FIRST,
		.middle = UR_OP_RC_SEND_MIDDLE, .last = UR_OP_RC_SEND_LAST,
		.wc = UR_WC_SEND, .has_payload = true,
	},
	[UR_WR_SEND_WITH_IMM] = {
		.valid = true, .qpts = QPT_RC | QPT_UC | QPT_UD,
		.only = UR_OP_RC_SEND_ONLY_IMM, .first = UR_OP_RC_SEND_FIRST,
		.middle = UR_OP_RC_SEND_MIDDLE, .last = UR_OP_RC_SEND_LAST_IMM,
		.wc = UR_WC_SEND, .has_payload = true,
	},
	[UR_WR_SEND_WITH_INV] = {
		.valid = true, .qpts = QPT_RC,
		.only = UR_OP_RC_SEND_ONLY_INV, .first = UR_OP_RC_SEND_FIRST,
		.middle = UR_OP_RC_SEND_MIDDLE, .last = UR_OP_RC_SEND_LAST_INV,
		.wc = UR_WC_SEND, .has_payload = true,
	},
	[UR_WR_RDMA_WRITE] = {
		.valid = true, .qpts = QPT_RC | QPT_UC,
		.only = UR_OP_RC_RDMA_WRITE_ONLY,
		.first = UR_OP_RC_RDMA_WRITE_FIRST,
		.middle = UR_OP_RC_RDMA_WRITE_MIDDLE,
		.last = UR_OP_RC_RDMA_WRITE_LAST,
		.wc = UR_WC_RDMA_WRITE, .has_payload = true,
	},
	[UR_WR_RDMA_WRITE_WITH_IMM] = {
		.valid = true, .qpts = QPT_RC | QPT_UC,
		.only = UR_OP_RC_RDMA_WRITE_ONLY_IMM,
		.first = UR_OP_RC_RDMA_WRITE_FIRST,
		.middle = UR_OP_RC_RDMA_WRITE_MIDDLE,
		.last = UR_OP_RC_RDMA_WRITE_LAST_IMM,
		.wc = UR_WC_RDMA_WRITE, .has_payload = true,
	},
	[UR_WR_RDMA_READ] = {
		.valid = true, .qpts = QPT_RC,
		.only = UR_OP_RC_RDMA_READ_REQUEST,
		.wc = UR_WC_RDMA_READ, .rd_atomic = true,
		.local_access = UR_ACCESS_LOCAL_WRITE,
	},
	[UR_WR_ATOMIC_CMP_AND_SWP] = {
		.valid = true, .qpts = QPT_RC,
		.only = UR_OP_RC_COMPARE_SWAP,
		.wc = UR_WC_COMP_SWAP, .rd_atomic = true,
		.local_access = UR_ACCESS_LOCAL_WRITE,
	},
	[UR_WR_ATOMIC_FETCH_AND_ADD] = {
		.valid = true, .qpts = QPT_RC,
		.only = UR_OP_RC_FETCH_ADD,
		.wc = UR_WC_FETCH_ADD, .rd_atomic = true,
		.local_access = UR_ACCESS_LOCAL_WRITE,
	},
	[UR_WR_BIND_MW] = {
		.valid = true, .qpts = QPT_RC | QPT_UC,
		.wc = UR_WC_BIND_MW, .local = true,
	},
	[UR_WR_LOCAL_INV] = {
		.valid = true, .qpts = QPT_RC | QPT_UC | QPT_UD,
		.wc = UR_WC_LOCAL_INV, .local = true,
	},
	[UR_WR_ATOMIC_WRITE] = {
		.valid = true, .qpts = QPT_RC,
		.only = UR_OP_RC_ATOMIC_WRITE,
		.wc = UR_WC_ATOMIC_WRITE, .has_payload = true,
	},
};

static const struct ur_wr_info *wr_lookup(uint32_t opcode)
{
	if (opcode >= sizeof(wr_info) / sizeof(wr_info[0]) ||
	    !wr_info[opcode].valid)
		return NULL;
	return &wr_info[opcode];
}

bool ur__wr_allowed(uint32_t qp_type, uint32_t opcode)
{
	const struct ur_wr_info *wi = wr_lookup(opcode);

	return wi && qp_type < 8 && (wi->qpts & (1u << qp_type));
}

bool ur__wr_is_rd_atomic(uint32_t opcode)
{
	const struct ur_wr_info *wi = wr_lookup(opcode);

	return wi && wi->rd_atomic;
}

bool ur__wr_is_local(uint32_t opcode)
{
	const struct ur_wr_info *wi = wr_lookup(opcode);

	return wi && wi->local;
}

/* The send window in PSNs: the QP's, but no more than UR_TX_WINDOW_BYTES
 * in flight, so that jumbo packets do not multiply the bytes outstanding
 * (and what a loss makes the peer and the switch absorb), nor more than a
 * window-based congestion control allows (Swift's cwnd, ur_cc.h). */
static uint32_t req_window(const struct ur_qp *qp)
{
	uint32_t cap = UR_TX_WINDOW_BYTES / ur_qp_req_mtu(qp);
	uint32_t w = qp->priv->req.window < cap ? qp->priv->req.window : cap;
	uint32_t cw = ur__cc_window(qp);

	return cw < w ? cw : w;
}

/* Memory window operations run when the WQE starts, in send queue order
 * (IBTA 10.6.7.2); a failure completes the WQE in error and the QP goes
 * to ERR, as for a bad lkey. */
static uint32_t exec_local(struct ur_qp *qp, struct ur_swqe *wqe)
{
	if (wqe->opcode == UR_WR_BIND_MW)
		return ur__mw_bind(qp, wqe->rkey, wqe->imm,
				    (uint32_t)wqe->swap, wqe->remote_addr,
				    wqe->compare_add,
				    (uint32_t)(wqe->swap >> 32))
			       ? UR_WC_MW_BIND_ERR : UR_WC_SUCCESS;
	return ur__mw_invalidate(qp, wqe->imm) ? UR_WC_LOC_QP_OP_ERR
						: UR_WC_SUCCESS;
}

uint32_t ur__wr_wc_opcode(uint32_t opcode)
{
	const struct ur_wr_info *wi = wr_lookup(opcode);

	return wi ? wi->wc : UR_WC_SEND;
}

/* Mark a WQE complete; CQEs are generated in order by ur__sq_complete. */
void ur__wqe_done(struct ur_qp *qp, struct ur_swqe *wqe, uint32_t status)
{
	struct ur_req *req = &qp->priv->req;

	if (wqe->done)
		return;
	wqe->done = true;
	wqe->status = (uint8_t)status;
	if (ur__wr_is_rd_atomic(wqe->opcode) && req->rd_outstanding)
		req->rd_outstanding--;
}

void ur__sq_complete(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;

	while (p->sq_head != p->req.assigned) {
		struct ur_swqe *wqe = ur_swqe_at(qp, p->sq_head);
		struct ur_cqe e;

		if (!wqe->done)
			break;
		if ((wqe->flags & UR_SEND_SIGNALED) ||
		    wqe->status != UR_WC_SUCCESS) {
			memset(&e, 0, sizeof(e));
			e.wr_id = wqe->wr_id;
			e.status = wqe->status;
			e.opcode = ur__wr_wc_opcode(wqe->opcode);
			e.byte_len = wqe->length;
			e.qp_num = qp->qpn;
			e.ts = now;
			ur__cq_push(qp, qp->send_cq, &e, false);
		}
		p->sq_head++;
	}
	if ((int32_t)(p->req.idx - p->sq_head) < 0) {
		p->req.idx = p->sq_head; /* the cursor never trails the head */
		p->req.pkt = 0;
	}
}

void ur__req_reset(struct ur_qp *qp)
{
	struct ur_req *req = &qp->priv->req;
	uint32_t window = req->window ? req->window : UR_DEFAULT_TX_WINDOW;

	memset(req, 0, sizeof(*req));
	req->window = window;
	req->idx = req->assigned = qp->priv->sq_head;
}

/* The PSN the transmit cursor will send next. */
uint32_t ur__req_cursor_psn(const struct ur_qp *qp)
{
	const struct ur_qp_priv *p = qp->priv;

	if (p->req.idx == p->req.assigned)
		return p->req.psn_next;
	return ur_psn_add(ur_swqe_at(qp, p->req.idx)->first_psn, p->req.pkt);
}

/* Move the transmit cursor back to @psn (go-back-N, IBTA 9.7.4.1.3). */
void ur__req_go_back(struct ur_qp *qp, uint32_t psn)
{
	struct ur_qp_priv *p = qp->priv;

	for (uint32_t i = p->sq_head; i != p->req.assigned; i++) {
		struct ur_swqe *wqe = ur_swqe_at(qp, i);
		int32_t d = ur_psn_diff(psn, wqe->first_psn);

		if (wqe->done)
			continue;
		if (d < 0)
			d = 0; /* resend the whole oldest unfinished WQE */
		if ((uint32_t)d < wqe->npkts) {
			p->req.idx = i;
			p->req.pkt = (uint32_t)d;
			return;
		}
	}
	p->req.idx = p->req.assigned;
	p->req.pkt = 0;
}

/* IBTA 9.5: lkeys are checked when the WQE starts, before any byte moves. */
static int wqe_resolve(struct ur_qp *qp, uint32_t idx, struct ur_swqe *wqe)
{
	const struct ur_wr_info *wi = wr_lookup(wqe->opcode);

	if (wqe->resolved)
		return 0;
	wqe->key_gen = atomic_load(&qp->dev->key_gen);
	if (!(wqe->flags & UR_SEND_INLINE)) {
		int rc = ur__sge_resolve(qp, ur_swqe_sge(qp, idx),
					  wqe->num_sge, wi->local_access);
		if (rc)
			return rc;
	}
	wqe->resolved = true;
	return 0;
}

int ur__wqe_keys(struct ur_qp *qp, uint32_t idx, struct ur_swqe *wqe)
{
	if ((wqe->flags & UR_SEND_INLINE) || !ur__keys_moved(qp, &wqe->key_gen))
		return 0;
	return ur__sge_resolve(qp, ur_swqe_sge(qp, idx), wqe->num_sge,
				wr_lookup(wqe->opcode)->local_access);
}

static uint8_t pkt_opcode(const struct ur_qp *qp, const struct ur_wr_info *wi,
			  uint32_t k, uint32_t n)
{
	uint8_t op;

	if (qp->type == UR_QPT_UD)
		return wi->only == UR_OP_RC_SEND_ONLY_IMM ? UR_OP_UD_SEND_ONLY_IMM
							  : UR_OP_UD_SEND_ONLY;
	if (n == 1 || !wi->has_payload)
		op = wi->only;
	else if (k == 0)
		op = wi->first;
	else if (k == n - 1)
		op = wi->last;
	else
		op = wi->middle;
	return qp->type == UR_QPT_UC ? (uint8_t)(op + 0x20) : ur__op(qp, op);
}

/* Build and send packet @k of the WQE at @idx. -EAGAIN: no buffer. */
static int send_pkt(struct ur_qp *qp, uint32_t idx, struct ur_swqe *wqe,
		    uint32_t k, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	const struct ur_wr_info *wi = wr_lookup(wqe->opcode);
	uint32_t mtu = wqe->mtu;
	uint32_t off = k * mtu, len = 0, end;
	bool last = k == wqe->npkts - 1;
	const struct ur_ipudp *path = NULL;
	struct ur_txhdr h = {
		.opcode = pkt_opcode(qp, wi, k, wqe->npkts),
		.dqpn = p->attr.dest_qp_num,
		.psn = ur_psn_add(wqe->first_psn, k),
		.xrc_srqn = wqe->xrc_srqn,
	};
	struct ur_pktbuf *b;

	if (wi->has_payload) {
		len = wqe->length - off < mtu ? wqe->length - off : mtu;
	}
	if (wqe->opcode == UR_WR_RDMA_READ) {
		/* A resent READ asks for the rest only (9.7.4.1.4). */
		h.reth.va = wqe->remote_addr + off;
		h.reth.rkey = wqe->rkey;
		h.reth.len = wqe->length - (wqe->length < off ? wqe->length : off);
		h.ackreq = true;
	} else if (wqe->opcode == UR_WR_ATOMIC_CMP_AND_SWP ||
		   wqe->opcode == UR_WR_ATOMIC_FETCH_AND_ADD) {
		h.atm.va = wqe->remote_addr;
		h.atm.rkey = wqe->rkey;
		if (wqe->opcode == UR_WR_ATOMIC_CMP_AND_SWP) {
			h.atm.compare = wqe->compare_add;
			h.atm.swap_add = wqe->swap;
		} else {
			h.atm.swap_add = wqe->compare_add;
		}
		h.ackreq = true;
	} else {
		if (k == 0) {
			h.reth.va = wqe->remote_addr;
			h.reth.rkey = wqe->rkey;
			h.reth.len = wqe->length;
		}
		if (last) {
			h.imm_net = wqe->imm;
			h.ieth = wqe->imm;
			h.se = (wqe->flags & UR_SEND_SOLICITED) &&
			       (wqe->opcode != UR_WR_RDMA_WRITE);
		}
		/* Ask for an ACK at the end of a message, now and then in a
		 * long one, and when this packet fills the send window. */
		h.ackreq = last || (k + 1) % UR_ACKREQ_EVERY == 0 ||
			   (uint32_t)ur_psn_diff(h.psn, p->comp.psn) + 1 >=
				   req_window(qp) ||
			   ((p->cc.cc.ops->on_delay || ur__cc_bw_on(qp)) &&
			    h.psn % UR_CC_ACK_EVERY == UR_CC_ACK_EVERY - 1) ||
			   ur__cc_ack_wanted(qp);
	}
	if (p->req.ackreq) { /* ur__req_probe */
		h.ackreq = true;
		p->req.ackreq = false;
	}
	if (qp->type != UR_QPT_RC)
		h.ackreq = false;
	if (h.ackreq) { /* (ur_comp.c "held": the timer runs for it) */
		p->req.ackreq_out = true;
		p->req.ackreq_psn = h.psn;
	}
	if (qp->type == UR_QPT_UD) {
		h.dqpn = wqe->ud_dqpn;
		h.deth.qkey = wqe->ud_qkey;
		h.deth.sqpn = qp->qpn;
		path = &wqe->ud_path;
	}

	/* Between packets the application may deregister a region this WQE
	 * reads from (or a retransmission may come much later). */
	if (len && ur__wqe_keys(qp, idx, wqe)) {
		p->req.key_err = true;
		p->req.key_err_idx = idx;
		return -EACCES;
	}
	b = ur__tx_alloc(qp, h.opcode, len);
	if (!b) {
		if (qp->type == UR_QPT_RC)
			ur__comp_held(qp, now); /* the timer waits too */
		return -EAGAIN;
	}
	if (len) {
		const struct ur_qsge *sge = ur_swqe_sge(qp, idx);
		const uint8_t *span = ur__sge_span(sge, wqe->num_sge, off, len);

		if (span)
			ur__tx_payload_from(qp, b, h.opcode, span, len);
		else
			ur__sge_copy_out(sge, wqe->num_sge, off,
					  ur__tx_payload(b, h.opcode), len);
	}
	if (ur_psn_diff(h.psn, p->req.psn_max) < 0) {
		h.resend = true;
		qp->dev->cnt.tx_retransmit++;
		qp->cnt.tx_retransmit++;
	}
	/* A READ request stands for all its response PSNs. */
	end = wqe->opcode == UR_WR_RDMA_READ
		      ? ur_psn_add(wqe->first_psn, wqe->npkts)
		      : ur_psn_add(h.psn, 1);
	if (ur_psn_diff(end, p->req.psn_max) > 0)
		p->req.psn_max = end;
	ur__tx_send(qp, b, &h, len, path);
	ur__cc_sent(qp, ur__qp_prio(qp, path), (uint32_t)ur_pkt_hdr_len(h.opcode) + len + UR_ICRC_LEN,
		    h.psn, h.resend, now);
	return 0;
}

/* Send the request of the READ/atomic at @idx again, for the rest from
 * @psn (9.7.4.1.4), without moving the cursor: the requests after it
 * need not be resent. Without a buffer the retransmission timer retries. */
int ur__req_resend_one(struct ur_qp *qp, uint32_t idx, uint32_t psn,
			uint64_t now)
{
	struct ur_swqe *wqe = ur_swqe_at(qp, idx);
	int32_t k = ur_psn_diff(psn, wqe->first_psn);

	if (wqe->done || k < 0 || (uint32_t)k >= wqe->npkts)
		return 0;
	if (wqe->opcode != UR_WR_RDMA_READ)
		k = 0;
	return send_pkt(qp, idx, wqe, (uint32_t)k, now);
}

/* Selective repeat: the responder holds what follows @psn and misses
 * @psn alone. Send that one packet again (a READ from there, as above),
 * unless it was never sent or the cursor is about to send it anyway. */
static int resend_psn(struct ur_qp *qp, uint32_t psn, uint64_t now,
		      bool hole)
{
	struct ur_qp_priv *p = qp->priv;

	if (ur_psn_diff(psn, p->comp.psn) < 0 ||
	    ur_psn_diff(psn, p->req.psn_max) >= 0 ||
	    ur_psn_diff(psn, ur__req_cursor_psn(qp)) >= 0)
		return 0;
	for (uint32_t i = p->sq_head; i != p->req.assigned; i++) {
		struct ur_swqe *wqe = ur_swqe_at(qp, i);
		int32_t k = ur_psn_diff(psn, wqe->first_psn);

		int rc;

		if (k < 0)
			return 0;
		if ((uint32_t)k >= wqe->npkts)
			continue;
		if (wqe->done)
			return 0;
		/* A hole report counts a READ's response PSNs as missing
		 * requests (the responder never saw the READ): only its
		 * request is one. */
		if (hole && k && wqe->opcode == UR_WR_RDMA_READ)
			return 0;
		if (wqe->opcode == UR_WR_RDMA_READ ||
		    ur__wr_is_rd_atomic(wqe->opcode))
			rc = ur__req_resend_one(qp, i, psn, now);
		else
			rc = send_pkt(qp, i, wqe, (uint32_t)k, now);
		if (!rc) {
			qp->dev->cnt.tx_sr_resend++;
			qp->cnt.tx_sr_resend++;
		}
		return rc;
	}
	return 0;
}

/* Without a transmit buffer the resend waits for the next progress call
 * (ahead of new packets), not for the timeout. One is enough: the
 * responder NAKs only its current ePSN, so a newer NAK supersedes. */
void ur__req_resend_psn(struct ur_qp *qp, uint32_t psn, uint64_t now)
{
	struct ur_req *req = &qp->priv->req;

	req->sr_resend = resend_psn(qp, psn, now, false) != 0;
	req->sr_resend_psn = psn;
}

/* A hole report (ur_sr.c "holes"): these PSNs again. One without a
 * buffer is not kept: the responder NAKs it once it is ePSN. */
void ur__req_resend_hole(struct ur_qp *qp, uint32_t psn, uint32_t n,
			 uint64_t now)
{
	for (uint32_t i = 0; i < n; i++)
		if (resend_psn(qp, ur_psn_add(psn, i), now, true) == -EAGAIN)
			break;
}

/* Selective repeat: send the newest PSN sent again, with AckReq (unless
 * it is the oldest unacknowledged one, or nothing is out): a duplicate at
 * the responder brings its cumulative ACK (C9-105), a loss there opens a
 * gap that the responder NAKs. */
void ur__req_probe(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	uint32_t last = ur_psn_add(ur__req_cursor_psn(qp), UR_PSN_MASK);

	p->req.probe_pending = false;
	if (ur_psn_diff(last, p->comp.psn) <= 0)
		return;
	/* Behind a resend that waits for a buffer (the oldest PSN's, at a
	 * timer expiry): after it, not never (uroce-sim, MoE over failed
	 * links: a timer expiry per lost tail packet). */
	if (p->req.sr_resend) {
		p->req.probe_pending = true;
		return;
	}
	p->req.ackreq = true; /* (stays for the next packet if none left) */
	if (resend_psn(qp, last, now, false) == -EAGAIN)
		p->req.probe_pending = true; /* no buffer: at the next progress */
}

int ur__req_copy_newest(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	uint32_t last = ur_psn_add(ur__req_cursor_psn(qp), UR_PSN_MASK);

	if (ur_psn_diff(last, p->comp.psn) < 0 || p->req.sr_resend)
		return -ENOENT;
	/* Not a READ or an atomic: the peer would run its copy again
	 * (9.7.5.1.3: a duplicate READ is answered in full). */
	for (uint32_t i = p->sq_head; i != p->req.assigned; i++) {
		struct ur_swqe *wqe = ur_swqe_at(qp, i);
		int32_t k = ur_psn_diff(last, wqe->first_psn);

		if (k >= 0 && (uint32_t)k < wqe->npkts)
			return wqe->opcode == UR_WR_RDMA_READ ||
					       ur__wr_is_rd_atomic(wqe->opcode)
				       ? -ENOENT
				       : resend_psn(qp, last, now, false);
	}
	return -ENOENT;
}

/* May the WQE at the cursor start now? (window, 9.5.4 limits, fence) */
static bool can_start(struct ur_qp *qp, struct ur_swqe *wqe)
{
	struct ur_qp_priv *p = qp->priv;
	uint32_t max_rd = p->attr.max_rd_atomic ? p->attr.max_rd_atomic : 1;

	if (qp->state != UR_QPS_RTS)
		return false; /* SQD: finish what started, start nothing */
	if (qp->type != UR_QPT_RC)
		return true;
	if ((wqe->flags & UR_SEND_FENCE) && p->req.rd_outstanding)
		return false;
	if (ur__wr_is_rd_atomic(wqe->opcode) && p->req.rd_outstanding >= max_rd)
		return false;
	return true;
}

/* Is @psn inside the send window? The oldest unacked one always is. */
static bool in_window(struct ur_qp *qp, uint32_t psn)
{
	struct ur_qp_priv *p = qp->priv;
	int32_t d = ur_psn_diff(psn, p->comp.psn);

	return qp->type != UR_QPT_RC || d <= 0 || (uint32_t)d < req_window(qp);
}

/* Fail the WQE whose memory lost its key (send_pkt), and the QP (10.8.3). */
static void key_fail(struct ur_qp *qp, uint64_t now)
{
	struct ur_swqe *wqe = ur_swqe_at(qp, qp->priv->req.key_err_idx);

	qp->priv->req.key_err = false;
	if (!wqe->done)
		ur__wqe_done(qp, wqe, UR_WC_LOC_PROT_ERR);
	ur__qp_error(qp, now);
}

void ur__req_progress(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_req *req = &p->req;

	ur__cc_woke(qp, now);
	if (qp->state != UR_QPS_RTS && qp->state != UR_QPS_SQD)
		ur__cc_idle(qp);
	if ((qp->state != UR_QPS_RTS && qp->state != UR_QPS_SQD) ||
	    req->rnr_wait || ur__crypt_pending(qp))
		return; /* (negotiating encryption: nothing leaves yet) */
	if (req->key_err) {
		key_fail(qp, now);
		return;
	}
	if (qp->type == UR_QPT_RC)
		ur__comp_unheld(qp, now); /* refused again: held again */
	if (req->sr_resend) {
		req->sr_resend = resend_psn(qp, req->sr_resend_psn, now, false) != 0;
		if (req->sr_resend)
			return; /* still no buffer */
	}
	if (req->probe_pending) {
		ur__req_probe(qp, now);
		if (req->probe_pending)
			return; /* still no buffer */
	}
	while (req->idx != p->sq_tail) {
		uint32_t idx = req->idx;
		struct ur_swqe *wqe = ur_swqe_at(qp, idx);
		int rc;

		if (idx == req->assigned) {
			if (!can_start(qp, wqe))
				break;
			if (wr_lookup(wqe->opcode)->local) {
				uint32_t st = exec_local(qp, wqe);

				/* No PSN: the completer never waits for it. */
				wqe->first_psn = req->psn_next;
				wqe->npkts = 0;
				req->assigned++;
				req->idx++;
				req->pkt = 0;
				ur__wqe_done(qp, wqe, st);
				if (st != UR_WC_SUCCESS) {
					ur__qp_error(qp, now);
					return;
				}
				ur__sq_complete(qp, now);
				continue;
			}
			rc = wqe_resolve(qp, idx, wqe);
			wqe->first_psn = req->psn_next;
			/* READ responses come at the path MTU (the
			 * responder's count of PSNs, 9.7.4.1.4). */
			wqe->mtu = wqe->opcode == UR_WR_RDMA_READ
					   ? ur_qp_mtu(qp)
					   : ur_qp_req_mtu(qp);
			wqe->npkts = ur_npkts(wqe->length, wqe->mtu);
			if (!wr_lookup(wqe->opcode)->has_payload &&
			    wqe->opcode != UR_WR_RDMA_READ)
				wqe->npkts = 1;
			if (qp->type == UR_QPT_UD)
				wqe->npkts = 1;
			req->psn_next = ur_psn_add(req->psn_next, wqe->npkts);
			req->assigned++;
			if (qp->type == UR_QPT_RC)
				ur__cc_msg(qp, wqe->npkts);
			if (ur__wr_is_rd_atomic(wqe->opcode))
				req->rd_outstanding++;
			req->pkt = 0;
			if (rc) {
				ur__wqe_done(qp, wqe, UR_WC_LOC_PROT_ERR);
				ur__qp_error(qp, now);
				return;
			}
		}
		if (wqe->done || req->pkt >= wqe->npkts) {
			req->idx++;
			req->pkt = 0;
			continue;
		}
		if (!in_window(qp, ur_psn_add(wqe->first_psn, req->pkt)))
			break;
		if (!ur__cc_may_send(qp, ur__qp_prio(qp, qp->type == UR_QPT_UD
							      ? &wqe->ud_path
							      : NULL),
				     now))
			break; /* paced: qp->deadline says when */
		rc = send_pkt(qp, idx, wqe, req->pkt, now);
		if (rc == -EACCES) {
			key_fail(qp, now);
			return;
		}
		if (rc)
			break;
		if (wqe->opcode == UR_WR_RDMA_READ)
			req->pkt = wqe->npkts; /* one request asks for all */
		else
			req->pkt++;
		if (qp->type == UR_QPT_RC) {
			ur__comp_arm(qp, now);
			ur__comp_sent(qp, now);
		} else if (req->pkt == wqe->npkts) {
			/* UC/UD: done once on the wire (9.8, 9.9). */
			ur__wqe_done(qp, wqe, UR_WC_SUCCESS);
			ur__sq_complete(qp, now);
		}
	}
	if (req->idx == p->sq_tail) {
		ur__cc_idle(qp); /* all sent: out of its class's backlog */
		if (qp->type == UR_QPT_RC)
			ur__cc_sq_empty(qp); /* the rate samples: app-limited */
	}
}

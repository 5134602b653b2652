// SPDX-License-Identifier: MIT
/*
 * One iWARP connection (ur_iw.h): MPA set-up (RFC 5044 7, RFC 6581),
 * then RDMAP over DDP over MPA FPDUs (RFC 5040, 5041). The codec is in
 * src/wire (ur_iwarp.h); this file is the protocol: who sends what when,
 * placement, ordering, Terminate and flush.
 *
 * Ordering (RFC 5040): the stream is in order, so READ Responses
 * arrive in the order of the Requests and untagged messages by MSN; send
 * WQEs complete in posting order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ur_iw.h"
#include "ur_qp_priv.h"

#define IW_TX_MAX_DEFAULT (256u << 10)
#define IW_NQ 3 /* untagged queues: SEND, READ Request, Terminate */

struct iw_swqe {
	struct ur_swqe w;    /* the fields the RoCE path keeps */
	uint32_t seg;        /* next segment to frame */
	bool sent;           /* all framed */
	bool inl;            /* inline: its bytes are ours, no key */
	bool rd_out;         /* READ: Request sent, Response not complete */
	uint32_t rd_got;     /* READ: bytes placed */
	uint64_t end_off;    /* stream offset after its last byte */
};

struct iw_rwqe {
	struct ur_rwqe w;
};

struct iw_irq { /* a READ Request to answer (RFC 5040) */
	struct ur_rdmap_rreq r;
	uint32_t seg;
};

struct ur_iw_conn {
	struct ur_qp *qp;
	struct ur_iw_cfg cfg;
	uint32_t state;
	int err;
	bool want_close;
	uint64_t deadline;

	/* MPA set-up */
	struct ur_mpa_rr req, peer;
	struct ur_mpa_conn neg;
	uint8_t rr_buf[UR_MPA_RR_LEN + UR_MPA_PD_MAX];
	uint32_t rr_have;
	uint8_t peer_pd[UR_MPA_PD_MAX];
	bool rtr_read_wait;  /* initiator: our READ RTR's answer to eat */

	/* framing */
	struct ur_mpa_rx rx;
	struct ur_mpa_tx tx;
	uint32_t mulpdu;

	/* out: stream bytes for the host */
	uint8_t *out;
	size_t out_cap, out_head, out_tail;
	uint64_t tx_total, tx_consumed;
	uint8_t *scratch;    /* one payload gathered from several SGEs */

	/* send queue */
	struct iw_swqe *sq;
	struct ur_qsge *sq_sge;
	uint8_t *sq_inl;
	uint32_t sq_cap, sq_head, sq_cur, sq_tail;
	uint32_t ss, rs;     /* SGE slots per send / receive WQE */
	uint32_t rd_out;     /* READ Requests outstanding (<= ORD) */

	/* receive queue and the SEND being placed */
	struct iw_rwqe *rq;
	struct ur_qsge *rq_sge;
	uint32_t rq_cap, rq_head, rq_tail;
	bool rx_active;
	uint32_t rx_off;
	uint64_t rx_key_gen; /* key_gen when the receive was resolved */

	uint32_t tx_msn[IW_NQ], rx_msn[IW_NQ];
	struct iw_irq irq[UR_IW_IRQ_MAX];
	uint32_t irq_head, irq_tail;

	struct ur_iw_term_info term_tx, term_rx;
	struct ur_iw_counters cnt;
	uint64_t now;        /* the latest `now` a call brought */
};

static const char *const state_names[] = {
	[UR_IWS_REQ_WAIT] = "REQ_WAIT", [UR_IWS_REQ_RCVD] = "REQ_RCVD",
	[UR_IWS_REP_WAIT] = "REP_WAIT", [UR_IWS_RTR_WAIT] = "RTR_WAIT",
	[UR_IWS_RTS] = "RTS", [UR_IWS_ERROR] = "ERROR",
	[UR_IWS_CLOSED] = "CLOSED", [UR_IWS_IDLE] = "IDLE",
};

const char *ur_iw_state_name(uint32_t state)
{
	return state < sizeof(state_names) / sizeof(state_names[0])
		       ? state_names[state] : "?";
}

void ur_iw_cfg_siw(struct ur_iw_cfg *cfg, bool initiator)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->initiator = initiator;
	cfg->pol.relaxed_ird = true;
	cfg->pol.ird = cfg->pol.ord = 1;
	cfg->pol.ird_max = cfg->pol.ord_max = UR_IW_IRQ_MAX;
	cfg->term_layout = UR_TERM_SIW;
	cfg->emss = 1448;
}

/* ---- output buffer ------------------------------------------------------ */
static size_t out_len(const struct ur_iw_conn *c)
{
	return c->out_tail - c->out_head;
}

static uint8_t *out_room(struct ur_iw_conn *c, size_t need)
{
	if (c->out_tail + need > c->out_cap) {
		memmove(c->out, c->out + c->out_head, out_len(c));
		c->out_tail -= c->out_head;
		c->out_head = 0;
	}
	return c->out_tail + need <= c->out_cap ? c->out + c->out_tail : NULL;
}

static int out_put(struct ur_iw_conn *c, const uint8_t *b, size_t n)
{
	uint8_t *d = out_room(c, n);

	if (!d)
		return -ENOSPC;
	memcpy(d, b, n);
	c->out_tail += n;
	c->tx_total += n;
	return 0;
}

/* One DDP segment: its header from @s, @len payload bytes at @pl. */
static int emit(struct ur_iw_conn *c, const struct ur_ddp_seg *s,
		const uint8_t *pl, uint32_t len)
{
	uint8_t hdr[UR_DDP_UNTAGGED_LEN + UR_RDMAP_RREQ_LEN];
	int hl = ur_ddp_encode_hdr(hdr, sizeof(hdr), s);
	size_t need;
	uint8_t *d;
	int n;

	if (hl < 0)
		return hl;
	need = ur_mpa_tx_len(&c->tx, (uint32_t)hl + len);
	d = out_room(c, need);
	if (!d)
		return -ENOSPC;
	n = ur_mpa_tx_frame(&c->tx, d, need, hdr, (size_t)hl, pl, len);
	if (n < 0)
		return n;
	c->out_tail += (size_t)n;
	c->tx_total += (uint64_t)n;
	c->cnt.tx_fpdus++;
	c->cnt.tx_bytes += len;
	return 0;
}

/* ---- completions and the error state ------------------------------------ */
static void push(struct ur_iw_conn *c, struct ur_cq *cq, uint64_t wr_id,
		 uint32_t status, uint32_t opcode, uint32_t len, uint32_t imm,
		 uint32_t flags, bool se, uint64_t now)
{
	struct ur_cqe e = {
		.wr_id = wr_id, .status = status, .opcode = opcode,
		.byte_len = len, .imm_data = imm, .qp_num = c->qp->qpn,
		.wc_flags = flags, .ts = now,
	};

	ur__cq_push(c->qp, cq, &e, se);
}

/* Send WQEs complete in order: a WRITE or SEND once its last byte left
 * for TCP, a READ once its Response is placed (RFC 5040). */
static void sq_complete(struct ur_iw_conn *c, uint64_t now)
{
	while (c->sq_head != c->sq_tail) {
		struct iw_swqe *q = &c->sq[c->sq_head % c->sq_cap];

		if (!q->w.done) {
			if (q->w.opcode == UR_WR_RDMA_READ || !q->sent ||
			    q->end_off > c->tx_consumed)
				return;
			q->w.done = true;
			q->w.status = UR_WC_SUCCESS;
		}
		if ((q->w.flags & UR_SEND_SIGNALED) ||
		    q->w.status != UR_WC_SUCCESS)
			push(c, c->qp->send_cq, q->w.wr_id, q->w.status,
			     ur__wr_wc_opcode(q->w.opcode), q->w.length, 0, 0,
			     false, now);
		c->sq_head++;
		if ((int32_t)(c->sq_cur - c->sq_head) < 0) /* free-running */
			c->sq_cur = c->sq_head;
	}
}

/* 10.3.1 of IBTA, as the RoCE path: in error every WQE completes with a
 * flush error, a status set before (a failed READ) kept. */
static void flush_all(struct ur_iw_conn *c, uint64_t now)
{
	for (uint32_t i = c->sq_head; i != c->sq_tail; i++) {
		struct iw_swqe *q = &c->sq[i % c->sq_cap];

		if (!q->w.done) {
			q->w.done = true;
			q->w.status = UR_WC_WR_FLUSH_ERR;
		}
	}
	sq_complete(c, now);
	c->sq_cur = c->sq_head;
	c->rd_out = 0;
	c->irq_head = c->irq_tail;
	for (; c->rq_head != c->rq_tail; c->rq_head++)
		push(c, c->qp->recv_cq, c->rq[c->rq_head % c->rq_cap].w.wr_id,
		     UR_WC_WR_FLUSH_ERR, UR_WC_RECV, 0, 0, 0, false, now);
	c->rx_active = false;
}

/* enter_error's @ev for an end the application hears of from rdma_cm */
#define IW_NO_EVENT ((enum ur_async_event)-1)

static void enter_error(struct ur_iw_conn *c, uint32_t state, int err,
			enum ur_async_event ev, uint64_t now)
{
	bool was = c->state == UR_IWS_ERROR || c->state == UR_IWS_CLOSED;

	if (!c->err)
		c->err = err;
	c->state = state;
	c->want_close = true;
	c->deadline = UINT64_MAX;
	c->qp->state = UR_QPS_ERR;
	flush_all(c, now);
	if (!was && state == UR_IWS_ERROR && ev != IW_NO_EVENT &&
	    c->qp->dev->ops->qp_event)
		c->qp->dev->ops->qp_event(c->qp->dev->host, c->qp, ev);
}

/*
 * Send a Terminate (RFC 5040 4, 7) and enter ERROR. @u/@ulen: the
 * offending ULPDU (NULL: none, e.g. the framing was lost); its DDP header
 * is copied (D), a READ Request's body too (R), and with M the DDP
 * Segment Length, which siw fills with the payload length.
 */
static void terminate(struct ur_iw_conn *c, uint8_t layer, uint8_t etype,
		      uint8_t ecode, const uint8_t *u, size_t ulen,
		      uint64_t now)
{
	struct ur_iw_term t = {.layer = layer, .etype = etype, .ecode = ecode};
	uint8_t body[4 + 2 + UR_DDP_UNTAGGED_LEN + UR_RDMAP_RREQ_LEN];
	struct ur_ddp_seg s = {
		.opcode = UR_RDMAP_TERMINATE, .last = true,
		.qn = UR_DDP_QN_TERM, .msn = c->tx_msn[UR_DDP_QN_TERM]++,
	};
	int n;

	if (c->state == UR_IWS_ERROR || c->state == UR_IWS_CLOSED)
		return;
	if (u && ulen >= 2) {
		size_t hl = ur_ddp_hdr_len(u[0] & UR_DDP_F_TAGGED);

		if (ulen >= hl) {
			t.m = t.d = true;
			t.ddp_hdr = u;
			t.ddp_hdr_len = (uint8_t)hl;
			t.seg_len = (uint16_t)(ulen - hl);
			if (!(u[0] & UR_DDP_F_TAGGED) &&
			    (u[1] & 0x0f) == UR_RDMAP_READ_REQ &&
			    ulen >= hl + UR_RDMAP_RREQ_LEN) {
				t.r = true;
				t.rdma_hdr = u + hl;
				t.rdma_hdr_len = UR_RDMAP_RREQ_LEN;
				t.seg_len = 0;
			}
		}
	}
	n = ur_iw_term_encode(body, sizeof(body), c->cfg.term_layout, &t);
	if (n > 0 && emit(c, &s, body, (uint32_t)n) == 0)
		c->cnt.tx_term++;
	c->term_tx = (struct ur_iw_term_info){true, layer, etype, ecode};
	enter_error(c, UR_IWS_ERROR, -ECONNRESET,
		    etype == 1 ? UR_EVENT_QP_ACCESS_ERR : UR_EVENT_QP_FATAL,
		    now);
}

static void terminate_err(struct ur_iw_conn *c, enum ur_iw_err e,
			  const uint8_t *u, size_t ulen, uint64_t now)
{
	uint8_t l, t, code;

	ur_iw_err_term(e, &l, &t, &code);
	terminate(c, l, t, code, u, ulen, now);
}

/* The layer, type and code for a failed key check of a tagged segment
 * (DDP, RFC 5041) or a READ source (RDMAP, RFC 5040 7): missing key,
 * bounds, or (RDMAP only) rights. */
static void term_key(struct ur_iw_conn *c, int rc, uint32_t stag, bool rdmap,
		     const uint8_t *u, size_t ulen, uint64_t now)
{
	uint8_t code = rc == -ERANGE ? 0x01 : 0x00;
	const struct ur_mr *k = c->qp->dev->ops->mr_lookup(c->qp->dev->host,
							    stag);

	if (rc == -EACCES && k && k->rkey == stag && k->pdn == c->qp->pdn &&
	    (k->type == UR_KEY_MR || k->mw_valid))
		rdmap = true, code = 0x02; /* the key is there: its rights */
	terminate(c, rdmap ? UR_TERM_LAYER_RDMAP : UR_TERM_LAYER_DDP, 1, code,
		  u, ulen, now);
}

/* ---- transmit ----------------------------------------------------------- */
static int wqe_keys(struct ur_iw_conn *c, struct iw_swqe *q, uint32_t idx,
		    uint32_t access)
{
	if (q->inl || (q->w.resolved && !ur__keys_moved(c->qp, &q->w.key_gen)))
		return 0;
	q->w.key_gen = atomic_load(&c->qp->dev->key_gen);
	q->w.resolved = true;
	return ur__sge_resolve(c->qp, &c->sq_sge[(size_t)(idx % c->sq_cap) *
						  c->ss],
			       q->w.num_sge, access);
}

static void local_fail(struct ur_iw_conn *c, struct iw_swqe *q, uint64_t now)
{
	q->w.done = true;
	q->w.status = UR_WC_LOC_PROT_ERR;
	/* RFC 5040 7: a local error ends the stream; tell the peer. */
	terminate(c, UR_TERM_LAYER_RDMAP, 2, 0x07, NULL, 0, now);
}

/* One segment of send WQE @idx; false when it must wait. */
static bool tx_wqe(struct ur_iw_conn *c, uint32_t idx, uint64_t now)
{
	struct iw_swqe *q = &c->sq[idx % c->sq_cap];
	struct ur_qsge *sge = &c->sq_sge[(size_t)(idx % c->sq_cap) *
					 c->ss];
	struct ur_ddp_seg m = {0}, s;
	uint32_t off, len, n;
	const uint8_t *pl = NULL;

	if ((q->w.flags & UR_SEND_FENCE) && q->seg == 0 && c->rd_out)
		return false; /* RFC 5040: after the READs before it */
	if (q->w.opcode == UR_WR_RDMA_READ) {
		if (c->rd_out >= c->neg.ord)
			return false;
		if (wqe_keys(c, q, idx, UR_ACCESS_LOCAL_WRITE)) {
			local_fail(c, q, now);
			return false;
		}
		m.opcode = UR_RDMAP_READ_REQ;
		m.last = true;
		m.qn = UR_DDP_QN_READ;
		m.msn = c->tx_msn[UR_DDP_QN_READ]++;
		m.rreq.sink_stag = q->w.num_sge ? sge[0].lkey : 0;
		m.rreq.sink_to = q->w.num_sge ? sge[0].addr : 0;
		m.rreq.size = q->w.length;
		m.rreq.src_stag = q->w.rkey;
		m.rreq.src_to = q->w.remote_addr;
		if (emit(c, &m, NULL, 0))
			return false;
		q->sent = q->rd_out = true;
		c->rd_out++;
		c->sq_cur++;
		return true;
	}
	if (wqe_keys(c, q, idx, 0)) {
		local_fail(c, q, now);
		return false;
	}
	if (q->w.opcode == UR_WR_RDMA_WRITE) {
		m.opcode = UR_RDMAP_WRITE;
		m.stag = q->w.rkey;
		m.to = q->w.remote_addr;
	} else {
		bool inv = q->w.opcode == UR_WR_SEND_WITH_INV;
		bool se = q->w.flags & UR_SEND_SOLICITED;

		m.opcode = inv ? (se ? UR_RDMAP_SEND_SE_INV : UR_RDMAP_SEND_INV)
			       : (se ? UR_RDMAP_SEND_SE : UR_RDMAP_SEND);
		m.inv_stag = inv ? q->w.imm : 0;
		m.qn = UR_DDP_QN_SEND;
		m.msn = c->tx_msn[UR_DDP_QN_SEND];
	}
	n = ur_ddp_cut(&m, q->w.length, c->mulpdu, q->seg, &s, &off, &len);
	if (len) {
		pl = ur__sge_span(sge, q->w.num_sge, off, len);
		if (!pl) {
			ur__sge_copy_out(sge, q->w.num_sge, off, c->scratch,
					 len);
			pl = c->scratch;
		}
	}
	if (emit(c, &s, pl, len))
		return false;
	if (++q->seg == n) {
		if (m.opcode != UR_RDMAP_WRITE)
			c->tx_msn[UR_DDP_QN_SEND]++;
		q->sent = true;
		q->end_off = c->tx_total;
		c->sq_cur++;
	}
	return true;
}

/* One segment of the oldest READ Response (RFC 5040). */
static bool tx_read_resp(struct ur_iw_conn *c, uint64_t now)
{
	struct iw_irq *r = &c->irq[c->irq_head % UR_IW_IRQ_MAX];
	struct ur_ddp_seg m = {
		.opcode = UR_RDMAP_READ_RESP, .stag = r->r.sink_stag,
		.to = r->r.sink_to,
	}, s;
	uint32_t off, len, n;
	uint8_t *src = NULL;
	int rc = 0;

	n = ur_ddp_cut(&m, r->r.size, c->mulpdu, r->seg, &s, &off, &len);
	/* Checked again per segment: the key may have gone meanwhile. */
	if (r->r.size)
		rc = ur_rkey_check(c->qp, r->r.src_stag, r->r.src_to + off, len,
				   UR_ACCESS_REMOTE_READ, &src);
	if (rc) {
		term_key(c, rc, r->r.src_stag, true, NULL, 0, now);
		return false;
	}
	if (emit(c, &s, src, len))
		return false;
	if (++r->seg == n)
		c->irq_head++;
	return true;
}

/*
 * What leaves next: a message once begun is finished before another
 * starts (siw's receiver follows one tagged message at a time, and siw
 * itself serves its READ queue between send WQEs); between messages the
 * READ Responses go first, they hold the peer's ORD.
 */
static void tx_pump(struct ur_iw_conn *c, uint64_t now)
{
	while (c->state == UR_IWS_RTS && out_len(c) < c->cfg.tx_max) {
		bool rr = c->irq_head != c->irq_tail;
		bool sq = c->sq_cur != c->sq_tail;

		if (sq && c->sq[c->sq_cur % c->sq_cap].seg)
			rr = false; /* a send WQE is half out */
		else if (rr && c->irq[c->irq_head % UR_IW_IRQ_MAX].seg)
			sq = false; /* a READ Response is */
		if (rr) {
			if (!tx_read_resp(c, now))
				break;
		} else if (sq) {
			if (!tx_wqe(c, c->sq_cur, now))
				break;
		} else {
			break;
		}
	}
	sq_complete(c, now);
}

/* ---- receive: one DDP segment ------------------------------------------- */
static void rx_read_resp(struct ur_iw_conn *c, const struct ur_ddp_seg *s,
			 const uint8_t *u, size_t ulen, uint64_t now)
{
	struct iw_swqe *q = NULL;
	struct ur_qsge *sge;
	uint32_t i;

	if (c->rtr_read_wait && !s->payload_len && s->last) {
		c->rtr_read_wait = false; /* the answer to our READ RTR */
		return;
	}
	for (i = c->sq_head; i != c->sq_cur; i++) {
		q = &c->sq[i % c->sq_cap];
		if (q->rd_out)
			break;
		q = NULL;
	}
	sge = q ? &c->sq_sge[(size_t)(i % c->sq_cap) * c->ss]
		: NULL;
	/* RFC 5041: the sink STag and TO must be those of the oldest
	 * outstanding Request (responses come in order). */
	if (!q || s->stag != (q->w.num_sge ? sge[0].lkey : 0)) {
		terminate(c, UR_TERM_LAYER_DDP, 1, 0x00, u, ulen, now);
		return;
	}
	if (s->to != (q->w.num_sge ? sge[0].addr : 0) + q->rd_got ||
	    s->payload_len > q->w.length - q->rd_got) {
		terminate(c, UR_TERM_LAYER_DDP, 1, 0x01, u, ulen, now);
		return;
	}
	if (ur__keys_moved(c->qp, &q->w.key_gen) &&
	    ur__sge_resolve(c->qp, sge, q->w.num_sge, UR_ACCESS_LOCAL_WRITE)) {
		terminate(c, UR_TERM_LAYER_DDP, 1, 0x00, u, ulen, now);
		return;
	}
	if (s->payload_len)
		memcpy(sge[0].host + q->rd_got, s->payload, s->payload_len);
	q->rd_got += s->payload_len;
	c->cnt.rx_placed += s->payload_len;
	if (!s->last)
		return;
	if (q->rd_got != q->w.length) {
		terminate(c, UR_TERM_LAYER_DDP, 1, 0x01, u, ulen, now);
		return;
	}
	q->rd_out = false;
	q->w.done = true;
	q->w.status = UR_WC_SUCCESS;
	c->rd_out--;
	sq_complete(c, now);
}

static void rx_write(struct ur_iw_conn *c, const struct ur_ddp_seg *s,
		     const uint8_t *u, size_t ulen, uint64_t now)
{
	uint8_t *dst;
	int rc;

	/* A zero-length WRITE places nothing and is not checked (as a
	 * zero-length RoCE WRITE, C9-88); the RTR is one (RFC 6581). */
	if (!s->payload_len)
		return;
	rc = ur_rkey_check(c->qp, s->stag, s->to, s->payload_len,
			   UR_ACCESS_REMOTE_WRITE, &dst);
	if (rc) {
		term_key(c, rc, s->stag, false, u, ulen, now);
		return;
	}
	memcpy(dst, s->payload, s->payload_len);
	c->cnt.rx_placed += s->payload_len;
}

static void rx_send(struct ur_iw_conn *c, const struct ur_ddp_seg *s,
		    const uint8_t *u, size_t ulen, uint64_t now)
{
	struct iw_rwqe *r;
	struct ur_qsge *sge;
	uint32_t idx = c->rq_head;

	/* RFC 5041: the MSN names the message, the MO its
	 * place; a new message takes the next receive. */
	if (s->msn != c->rx_msn[UR_DDP_QN_SEND]) {
		terminate(c, UR_TERM_LAYER_DDP, 2, 0x03, u, ulen, now);
		return;
	}
	if (s->mo != (c->rx_active ? c->rx_off : 0)) {
		terminate(c, UR_TERM_LAYER_DDP, 2, 0x04, u, ulen, now);
		return;
	}
	if (idx == c->rq_tail) {
		terminate(c, UR_TERM_LAYER_DDP, 2, 0x02, u, ulen, now);
		return;
	}
	r = &c->rq[idx % c->rq_cap];
	sge = &c->rq_sge[(size_t)(idx % c->rq_cap) * c->rs];
	if (!c->rx_active || ur__keys_moved(c->qp, &c->rx_key_gen)) {
		/* Resolved at the first segment, again if a key moved since
		 * (a region deregistered meanwhile is not written). */
		c->rx_key_gen = atomic_load(&c->qp->dev->key_gen);
		if (ur__sge_resolve(c->qp, sge, r->w.num_sge,
				    UR_ACCESS_LOCAL_WRITE)) {
			push(c, c->qp->recv_cq, r->w.wr_id, UR_WC_LOC_PROT_ERR,
			     UR_WC_RECV, 0, 0, 0, false, now);
			c->rq_head++;
			c->rx_active = false;
			terminate(c, UR_TERM_LAYER_RDMAP, 2, 0x07, u, ulen, now);
			return;
		}
		if (!c->rx_active) {
			c->rx_active = true;
			c->rx_off = 0;
		}
	}
	if (s->payload_len > r->w.length - c->rx_off) {
		terminate(c, UR_TERM_LAYER_DDP, 2, 0x05, u, ulen, now);
		return;
	}
	ur__sge_copy_in(sge, r->w.num_sge, c->rx_off, s->payload,
			s->payload_len);
	c->rx_off += s->payload_len;
	c->cnt.rx_placed += s->payload_len;
	if (!s->last)
		return;
	c->rx_active = false;
	c->rx_msn[UR_DDP_QN_SEND]++;
	c->rq_head++;
	/* As the RoCE path (ur_resp.c): a type 2 window of our PD is
	 * invalidated, and the receive reports the STag either way. */
	if (s->op->inval)
		(void)ur__mw_invalidate(c->qp, s->inv_stag);
	push(c, c->qp->recv_cq, r->w.wr_id, UR_WC_SUCCESS, UR_WC_RECV,
	     c->rx_off, s->op->inval ? s->inv_stag : 0,
	     s->op->inval ? UR_WC_WITH_INV : 0, s->op->se, now);
}

static void rx_read_req(struct ur_iw_conn *c, const struct ur_ddp_seg *s,
			const uint8_t *u, size_t ulen, uint64_t now)
{
	int rc = 0;

	if (s->msn != c->rx_msn[UR_DDP_QN_READ]) {
		terminate(c, UR_TERM_LAYER_DDP, 2, 0x03, u, ulen, now);
		return;
	}
	/* RFC 5040, RFC 6581: at most IRD Requests outstanding; more is
	 * a Request the queue has no room for. */
	if (c->irq_tail - c->irq_head >= c->neg.ird &&
	    !(c->state == UR_IWS_RTR_WAIT && !s->rreq.size)) {
		terminate(c, UR_TERM_LAYER_DDP, 2, 0x02, u, ulen, now);
		return;
	}
	if (s->rreq.size)
		rc = ur_rkey_check(c->qp, s->rreq.src_stag, s->rreq.src_to,
				   s->rreq.size, UR_ACCESS_REMOTE_READ, NULL);
	if (rc) {
		term_key(c, rc, s->rreq.src_stag, true, u, ulen, now);
		return;
	}
	c->rx_msn[UR_DDP_QN_READ]++;
	c->irq[c->irq_tail % UR_IW_IRQ_MAX] = (struct iw_irq){.r = s->rreq};
	c->irq_tail++;
}

/* What a Terminate means for our WQEs: the READ it names fails with a
 * remote error, everything else flushes (as siw's peer sees it). */
static void rx_term(struct ur_iw_conn *c, const struct ur_ddp_seg *s,
		    uint64_t now)
{
	struct ur_iw_term t = {0};
	bool read = false;

	c->cnt.rx_term++;
	if (ur_iw_term_decode(s->body, s->body_len, c->cfg.term_layout, &t) ==
	    UR_IW_OK) {
		c->term_rx = (struct ur_iw_term_info){true, t.layer, t.etype,
						      t.ecode};
		read = t.r || (t.d && !(t.ddp_hdr[0] & UR_DDP_F_TAGGED) &&
			       (t.ddp_hdr[1] & 0x0f) == UR_RDMAP_READ_REQ);
	}
	if (read) {
		for (uint32_t i = c->sq_head; i != c->sq_cur; i++) {
			struct iw_swqe *q = &c->sq[i % c->sq_cap];

			if (!q->rd_out)
				continue;
			q->w.done = true;
			q->w.status = t.etype == 1 ? UR_WC_REM_ACCESS_ERR
						   : UR_WC_REM_OP_ERR;
			break;
		}
	}
	enter_error(c, UR_IWS_ERROR, -ECONNRESET, UR_EVENT_QP_FATAL, now);
}

static void rx_fpdu(struct ur_iw_conn *c, const struct ur_mpa_fpdu *fp,
		    uint64_t now)
{
	struct ur_ddp_seg s;
	enum ur_iw_err e = ur_ddp_decode(fp->ulpdu, fp->ulpdu_len, &s);

	c->cnt.rx_fpdus++;
	if (e != UR_IW_OK) {
		terminate_err(c, e, fp->ulpdu, fp->ulpdu_len, now);
		return;
	}
	c->cnt.rx_bytes += s.payload_len;
	if (c->state == UR_IWS_RTR_WAIT && s.opcode != UR_RDMAP_TERMINATE) {
		/* RFC 6581: the first FPDU is the RTR the Reply named. */
		if (c->neg.rtr == UR_RTR_WRITE && s.opcode == UR_RDMAP_WRITE &&
		    !s.payload_len) {
			c->state = UR_IWS_RTS;
			c->qp->state = UR_QPS_RTS;
			return;
		}
		if (c->neg.rtr == UR_RTR_READ &&
		    s.opcode == UR_RDMAP_READ_REQ && !s.rreq.size) {
			rx_read_req(c, &s, fp->ulpdu, fp->ulpdu_len, now);
			c->state = UR_IWS_RTS;
			c->qp->state = UR_QPS_RTS;
			tx_pump(c, now);
			return;
		}
		terminate_err(c, UR_IW_NO_RTR, fp->ulpdu, fp->ulpdu_len, now);
		return;
	}
	switch (s.opcode) {
	case UR_RDMAP_WRITE:
		rx_write(c, &s, fp->ulpdu, fp->ulpdu_len, now);
		break;
	case UR_RDMAP_READ_RESP:
		rx_read_resp(c, &s, fp->ulpdu, fp->ulpdu_len, now);
		break;
	case UR_RDMAP_READ_REQ:
		rx_read_req(c, &s, fp->ulpdu, fp->ulpdu_len, now);
		break;
	case UR_RDMAP_TERMINATE:
		rx_term(c, &s, now);
		break;
	default:
		rx_send(c, &s, fp->ulpdu, fp->ulpdu_len, now);
		break;
	}
}

/* ---- MPA set-up ------------------------------------------------------------- */
static int rr_send(struct ur_iw_conn *c, struct ur_mpa_rr *rr,
		   const uint8_t *pd, uint16_t pd_len)
{
	uint8_t b[UR_MPA_RR_LEN + UR_MPA_PD_MAX];
	int n;

	rr->pd = pd;
	rr->pd_len = pd_len;
	n = ur_mpa_rr_encode(b, sizeof(b), rr);
	if (n < 0)
		return n;
	return out_put(c, b, (size_t)n);
}

static void start_framing(struct ur_iw_conn *c)
{
	ur_mpa_rx_init(&c->rx, c->neg.crc, c->neg.markers_rx);
	ur_mpa_tx_init(&c->tx, c->neg.crc, c->neg.markers_tx);
	c->mulpdu = ur_mpa_mulpdu(c->cfg.emss, c->neg.markers_tx);
	c->deadline = UINT64_MAX;
}

static void keep_peer(struct ur_iw_conn *c, const struct ur_mpa_rr *rr)
{
	c->peer = *rr;
	memcpy(c->peer_pd, rr->pd, rr->pd_len);
	c->peer.pd = c->peer_pd;
}

/* The initiator has the Reply (RFC 5044 7.1, 6581). */
static void got_reply(struct ur_iw_conn *c, const struct ur_mpa_rr *rep,
		      uint64_t now)
{
	int rc = ur_mpa_check_reply(&c->req, rep, &c->cfg.pol, &c->neg);

	if (rc) {
		/* A refused connection has no RDMAP stream to terminate. */
		enter_error(c, UR_IWS_CLOSED, rc == -ECONNREFUSED ? rc : -EPROTO,
			    UR_EVENT_QP_FATAL, now);
		return;
	}
	start_framing(c);
	c->state = UR_IWS_RTS;
	c->qp->state = UR_QPS_RTS;
	if (c->neg.rtr == UR_RTR_WRITE) {
		struct ur_ddp_seg m = {.opcode = UR_RDMAP_WRITE, .last = true,
				       .stag = UR_RTR_STAG};

		(void)emit(c, &m, NULL, 0);
	} else if (c->neg.rtr == UR_RTR_READ) {
		struct ur_ddp_seg m = {
			.opcode = UR_RDMAP_READ_REQ, .last = true,
			.qn = UR_DDP_QN_READ,
			.msn = c->tx_msn[UR_DDP_QN_READ]++,
			.rreq = {.sink_stag = UR_RTR_STAG,
				 .src_stag = UR_RTR_STAG},
		};

		(void)emit(c, &m, NULL, 0);
		c->rtr_read_wait = true;
	}
	tx_pump(c, now);
}

/* Request/Reply bytes: the 20-byte frame, then its PD_Length more. */
static size_t rx_rr(struct ur_iw_conn *c, const uint8_t *p, size_t n,
		    uint64_t now)
{
	struct ur_mpa_rr rr;
	size_t want, take, used;
	enum ur_iw_err e;

	want = c->rr_have < UR_MPA_RR_LEN
		       ? UR_MPA_RR_LEN
		       : UR_MPA_RR_LEN + ur_get16(c->rr_buf + 18);
	if (want > sizeof(c->rr_buf))
		want = sizeof(c->rr_buf) + 1; /* the decoder names it */
	take = want - c->rr_have < n ? want - c->rr_have : n;
	if (c->rr_have + take > sizeof(c->rr_buf))
		take = sizeof(c->rr_buf) - c->rr_have;
	memcpy(c->rr_buf + c->rr_have, p, take);
	c->rr_have += (uint32_t)take;
	e = ur_mpa_rr_decode(c->rr_buf, c->rr_have, &rr, &used);
	if (e == UR_IW_MORE && c->rr_have < sizeof(c->rr_buf))
		return take;
	if (e != UR_IW_OK) {
		/* No Reply to a malformed Request (siw closes). */
		enter_error(c, UR_IWS_CLOSED, -EPROTO, UR_EVENT_QP_FATAL, now);
		return n;
	}
	if (c->cfg.initiator) {
		if (!rr.reply) {
			enter_error(c, UR_IWS_CLOSED, -EPROTO,
				    UR_EVENT_QP_FATAL, now);
			return n;
		}
		keep_peer(c, &rr);
		got_reply(c, &rr, now);
	} else {
		if (rr.reply) {
			enter_error(c, UR_IWS_CLOSED, -EPROTO,
				    UR_EVENT_QP_FATAL, now);
			return n;
		}
		keep_peer(c, &rr);
		c->state = UR_IWS_REQ_RCVD;
	}
	return take;
}

static int answer(struct ur_iw_conn *c, const uint8_t *pd, uint16_t pd_len,
		  bool reject, uint64_t now)
{
	struct ur_mpa_rr rep;
	int rc;

	if (c->cfg.initiator || c->state != UR_IWS_REQ_RCVD)
		return -EINVAL;
	if (pd_len > UR_MPA_PD_MAX - (c->peer.v2 ? UR_MPA_V2_LEN : 0))
		return -EINVAL;
	rc = ur_mpa_answer(&c->peer, &c->cfg.pol, &rep, &c->neg);
	if (rc < 0) {
		enter_error(c, UR_IWS_CLOSED, -EPROTO, UR_EVENT_QP_FATAL, now);
		return 1;
	}
	if (reject)
		rep.flags |= UR_MPA_F_REJECT;
	if (rr_send(c, &rep, pd, pd_len) < 0)
		return -EINVAL;
	if (reject || rc == 1) {
		enter_error(c, UR_IWS_CLOSED, -ECONNREFUSED, UR_EVENT_QP_FATAL,
			    now);
		return reject ? 0 : 1;
	}
	start_framing(c);
	if (c->neg.rtr != UR_RTR_NONE) {
		c->state = UR_IWS_RTR_WAIT;
	} else {
		c->state = UR_IWS_RTS;
		c->qp->state = UR_QPS_RTS;
		tx_pump(c, now);
	}
	return 0;
}

int ur_iw_accept(struct ur_iw_conn *c, const uint8_t *pd, uint16_t pd_len,
		 uint64_t now)
{
	return answer(c, pd, pd_len, false, now);
}

int ur_iw_reject(struct ur_iw_conn *c, const uint8_t *pd, uint16_t pd_len,
		 uint64_t now)
{
	return answer(c, pd, pd_len, true, now);
}

/* ---- the host's calls -------------------------------------------------------- */
int ur_iw_rx(struct ur_iw_conn *c, const uint8_t *p, size_t n, uint64_t now)
{
	c->now = now;
	while (n) {
		struct ur_mpa_fpdu fp;
		size_t used = 0;
		enum ur_iw_err e;

		switch (c->state) {
		case UR_IWS_REQ_WAIT:
		case UR_IWS_REP_WAIT:
			used = rx_rr(c, p, n, now);
			break;
		case UR_IWS_RTR_WAIT:
		case UR_IWS_RTS:
			e = ur_mpa_rx_feed(&c->rx, p, n, &used, &fp);
			if (e == UR_IW_OK)
				rx_fpdu(c, &fp, now);
			else if (e != UR_IW_MORE)
				terminate_err(c, e, NULL, 0, now);
			break;
		case UR_IWS_REQ_RCVD:
			/* The initiator waits for our Reply (RFC 5044
			 * 7.1.2): anything before it is a protocol error. */
			enter_error(c, UR_IWS_CLOSED, -EPROTO,
				    UR_EVENT_QP_FATAL, now);
			used = n;
			break;
		default:
			c->cnt.rx_discarded += n;
			used = n;
			break;
		}
		p += used;
		n -= used;
	}
	tx_pump(c, now);
	return c->err;
}

size_t ur_iw_tx_peek(const struct ur_iw_conn *c, const uint8_t **p)
{
	*p = c->out + c->out_head;
	return out_len(c);
}

void ur_iw_tx_done(struct ur_iw_conn *c, size_t n, uint64_t now)
{
	c->now = now;
	if (n > out_len(c))
		n = out_len(c);
	c->out_head += n;
	c->tx_consumed += n;
	if (c->out_head == c->out_tail)
		c->out_head = c->out_tail = 0;
	sq_complete(c, now);
	tx_pump(c, now);
}

bool ur_iw_want_close(const struct ur_iw_conn *c)
{
	return c->want_close;
}

void ur_iw_close(struct ur_iw_conn *c, uint64_t now)
{
	bool data = c->state == UR_IWS_RTS || c->state == UR_IWS_RTR_WAIT ||
		    c->state == UR_IWS_ERROR;

	/* The stream ended (FIN, RST, or our own disconnect): ERROR and the
	 * WQEs flush, but no async event, as siw's siw_qp_llp_close; the
	 * application hears DISCONNECTED from rdma_cm. Errors the protocol
	 * finds (Terminate, MPA, timeouts) stay QP_FATAL. */
	enter_error(c, data ? UR_IWS_ERROR : UR_IWS_CLOSED, -ECONNRESET,
		    IW_NO_EVENT, now);
}

void ur_iw_timer(struct ur_iw_conn *c, uint64_t now)
{
	if (now >= c->deadline)
		enter_error(c, UR_IWS_CLOSED, -ETIMEDOUT, UR_EVENT_QP_FATAL,
			    now);
}

uint64_t ur_iw_deadline(const struct ur_iw_conn *c)
{
	return c->deadline;
}

int ur_iw_post_send(struct ur_iw_conn *c, const struct ur_send_wr *wr,
		    uint64_t now)
{
	const struct ur_qp_caps *caps = &c->qp->caps;
	struct iw_swqe *q;
	struct ur_qsge *sge;
	uint64_t len = 0;
	uint32_t idx = c->sq_tail;

	c->now = now;
	switch (wr->opcode) {
	case UR_WR_RDMA_WRITE:
	case UR_WR_SEND:
	case UR_WR_SEND_WITH_INV:
		break;
	case UR_WR_RDMA_READ:
		if (wr->num_sge > 1 ||
		    (c->state == UR_IWS_RTS && !c->neg.ord))
			return -EINVAL;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (wr->num_sge > caps->max_send_sge || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	if (c->sq_tail - c->sq_head >= caps->max_send_wr)
		return -ENOMEM;
	for (uint32_t i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > UINT32_MAX ||
	    ((wr->flags & UR_SEND_INLINE) && len > caps->max_inline_data))
		return -EINVAL;
	q = &c->sq[idx % c->sq_cap];
	sge = &c->sq_sge[(size_t)(idx % c->sq_cap) * c->ss];
	memset(q, 0, sizeof(*q));
	q->w.wr_id = wr->wr_id;
	q->w.opcode = (uint8_t)wr->opcode;
	q->w.flags = (uint8_t)wr->flags;
	q->w.imm = wr->imm_data;
	q->w.rkey = wr->rkey;
	q->w.remote_addr = wr->remote_addr;
	q->w.length = (uint32_t)len;
	if ((wr->flags & UR_SEND_INLINE) && wr->opcode != UR_WR_RDMA_READ) {
		uint8_t *d = c->sq_inl + (size_t)(idx % c->sq_cap) *
						 caps->max_inline_data;
		uint32_t at = 0;

		for (uint32_t i = 0; i < wr->num_sge; i++) {
			memcpy(d + at, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			at += wr->sg_list[i].length;
		}
		sge[0] = (struct ur_qsge){.addr = 0, .length = at, .host = d};
		q->w.num_sge = at ? 1 : 0;
		q->inl = true;
	} else {
		for (uint32_t i = 0; i < wr->num_sge; i++)
			sge[i] = (struct ur_qsge){
				.addr = wr->sg_list[i].addr,
				.length = wr->sg_list[i].length,
				.lkey = wr->sg_list[i].lkey,
			};
		q->w.num_sge = wr->num_sge;
	}
	c->sq_tail++;
	if (c->state == UR_IWS_ERROR || c->state == UR_IWS_CLOSED)
		flush_all(c, now);
	else
		tx_pump(c, now);
	return 0;
}

int ur_iw_post_recv(struct ur_iw_conn *c, const struct ur_recv_wr *wr,
		    uint64_t now)
{
	struct iw_rwqe *r;
	struct ur_qsge *sge;
	uint64_t len = 0;
	uint32_t idx = c->rq_tail;

	if (wr->num_sge > c->qp->caps.max_recv_sge ||
	    (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	if (c->rq_tail - c->rq_head >= c->qp->caps.max_recv_wr)
		return -ENOMEM;
	r = &c->rq[idx % c->rq_cap];
	sge = &c->rq_sge[(size_t)(idx % c->rq_cap) * c->rs];
	for (uint32_t i = 0; i < wr->num_sge; i++) {
		sge[i] = (struct ur_qsge){
			.addr = wr->sg_list[i].addr,
			.length = wr->sg_list[i].length,
			.lkey = wr->sg_list[i].lkey,
		};
		len += wr->sg_list[i].length;
	}
	if (len > UINT32_MAX)
		return -EINVAL;
	r->w.wr_id = wr->wr_id;
	r->w.num_sge = wr->num_sge;
	r->w.length = (uint32_t)len;
	c->rq_tail++;
	if (c->state == UR_IWS_ERROR || c->state == UR_IWS_CLOSED)
		flush_all(c, now);
	return 0;
}

/* ---- life ----------------------------------------------------------------------- */
uint32_t ur_iw_state(const struct ur_iw_conn *c) { return c->state; }
const struct ur_mpa_conn *ur_iw_neg(const struct ur_iw_conn *c)
{
	return &c->neg;
}
const struct ur_mpa_rr *ur_iw_peer_rr(const struct ur_iw_conn *c)
{
	return &c->peer;
}
const struct ur_iw_term_info *ur_iw_term_sent(const struct ur_iw_conn *c)
{
	return &c->term_tx;
}
const struct ur_iw_term_info *ur_iw_term_rcvd(const struct ur_iw_conn *c)
{
	return &c->term_rx;
}
const struct ur_iw_counters *ur_iw_counters(const struct ur_iw_conn *c)
{
	return &c->cnt;
}
int ur_iw_error(const struct ur_iw_conn *c) { return c->err; }

void ur_iw_conn_free(struct ur_iw_conn *c)
{
	if (!c)
		return;
	if (c->qp->proto_conn == c) {
		c->qp->proto = &ur_proto_rocev2;
		c->qp->proto_conn = NULL;
	}
	free(c->out);
	free(c->scratch);
	free(c->sq);
	free(c->sq_sge);
	free(c->sq_inl);
	free(c->rq);
	free(c->rq_sge);
	free(c);
}

/* Take the role in c->cfg: an initiator's Request is queued at once. */
static int iw_begin(struct ur_iw_conn *c, uint64_t now)
{
	const struct ur_iw_cfg *cfg = &c->cfg;

	c->deadline = cfg->mpa_timeout_ns ? now + cfg->mpa_timeout_ns
					  : UINT64_MAX;
	if (cfg->initiator) {
		/* RFC 6581 as siw sends it: Rev 2, the enhanced flag and
		 * the IRD/ORD word, then the ULP's private data. */
		c->req = (struct ur_mpa_rr){
			.rev = UR_MPA_REV2, .v2 = true,
			.flags = (uint8_t)((cfg->pol.crc_required ? UR_MPA_F_CRC : 0) |
					   (cfg->pol.markers ? UR_MPA_F_MARKERS : 0)),
			.p2p = cfg->p2p, .rtr_write = cfg->p2p && cfg->rtr_write,
			.rtr_read = cfg->p2p && cfg->rtr_read,
			.ird = cfg->pol.ird, .ord = cfg->pol.ord,
		};
		if (rr_send(c, &c->req, cfg->pd, cfg->pd_len) < 0)
			return -EINVAL;
		c->state = UR_IWS_REP_WAIT;
	} else {
		c->state = UR_IWS_REQ_WAIT;
	}
	return 0;
}

int ur_iw_start(struct ur_iw_conn *c, const struct ur_iw_cfg *cfg,
		uint64_t now)
{
	uint32_t tx_max = c->cfg.tx_max;

	if (c->state != UR_IWS_IDLE || cfg->emss < 64 ||
	    cfg->pol.ird > UR_IW_IRQ_MAX || cfg->pol.ird_max > UR_IW_IRQ_MAX ||
	    cfg->pd_len > UR_MPA_PD_MAX - UR_MPA_V2_LEN)
		return -EINVAL;
	c->cfg = *cfg;
	c->cfg.tx_max = tx_max;
	c->cfg.idle = false;
	c->now = now;
	return iw_begin(c, now);
}

static uint32_t pow2_up(uint32_t n) /* n <= 2^31 (the device's max_qp_wr) */
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

int ur_iw_conn_new(struct ur_qp *qp, const struct ur_iw_cfg *cfg,
		   uint64_t now, struct ur_iw_conn **out)
{
	const struct ur_qp_caps *caps = &qp->caps;
	struct ur_iw_conn *c;

	*out = NULL;
	if (qp->type != UR_QPT_RC || qp->srq || !caps->max_send_wr ||
	    !caps->max_recv_wr || cfg->emss < 64 ||
	    cfg->pol.ird > UR_IW_IRQ_MAX || cfg->pol.ird_max > UR_IW_IRQ_MAX ||
	    cfg->pd_len > UR_MPA_PD_MAX - UR_MPA_V2_LEN)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->qp = qp;
	c->cfg = *cfg;
	c->now = now;
	if (!c->cfg.tx_max)
		c->cfg.tx_max = IW_TX_MAX_DEFAULT;
	/* Room for what tx_pump may add past tx_max: one FPDU and its
	 * markers, and a Terminate. */
	c->out_cap = c->cfg.tx_max + 2 * UR_MPA_FPDU_MAX + 1024;
	c->out = malloc(c->out_cap);
	c->scratch = malloc(UR_MPA_ULPDU_MAX);
	c->ss = caps->max_send_sge ? caps->max_send_sge : 1;
	c->rs = caps->max_recv_sge ? caps->max_recv_sge : 1;
	/* Slots by a power of two: the indices run free over 2^32, and
	 * index % cap stays continuous across the wrap only then. The
	 * queues still take at most max_send_wr / max_recv_wr WQEs. */
	c->sq_cap = pow2_up(caps->max_send_wr);
	c->rq_cap = pow2_up(caps->max_recv_wr);
	c->sq = calloc(c->sq_cap, sizeof(*c->sq));
	c->sq_sge = calloc((size_t)c->sq_cap * c->ss,
			   sizeof(*c->sq_sge));
	c->sq_inl = calloc((size_t)c->sq_cap * (caps->max_inline_data + 1), 1);
	c->rq = calloc(c->rq_cap, sizeof(*c->rq));
	c->rq_sge = calloc((size_t)c->rq_cap * c->rs,
			   sizeof(*c->rq_sge));
	if (!c->out || !c->scratch || !c->sq || !c->sq_sge || !c->sq_inl ||
	    !c->rq || !c->rq_sge) {
		ur_iw_conn_free(c);
		return -ENOMEM;
	}
	for (int i = 0; i < IW_NQ; i++)
		c->tx_msn[i] = c->rx_msn[i] = 1; /* RFC 5041 */
	c->deadline = UINT64_MAX;
	c->state = UR_IWS_IDLE;
	if (!cfg->idle && iw_begin(c, now) < 0) {
		ur_iw_conn_free(c);
		return -EINVAL;
	}
	qp->proto = &ur_proto_iwarp;
	qp->proto_conn = c;
	*out = c;
	return 0;
}

/* ---- the iWARP row of the protocol table (ur_transport.h) ------------------ */
static int iw_post_send(struct ur_qp *qp, const struct ur_send_wr *wr,
			uint64_t now)
{
	return ur_iw_post_send(qp->proto_conn, wr, now);
}

static int iw_post_recv(struct ur_qp *qp, const struct ur_recv_wr *wr)
{
	struct ur_iw_conn *c = qp->proto_conn;

	return ur_iw_post_recv(c, wr, c->now);
}

/* The connection owns the state: RTS comes with MPA, and ERR (the
 * application's, e.g. rdma_disconnect) ends it: WQEs flush, the host
 * closes the socket. Attributes without a state change are kept by the
 * host (rdma_cm sets them before the connection exists). */
static int iw_modify(struct ur_qp *qp, const struct ur_qp_attr *attr,
		     uint32_t mask, uint64_t now)
{
	struct ur_iw_conn *c = qp->proto_conn;

	if (!(mask & UR_QP_STATE) || attr->qp_state == qp->state)
		return 0;
	/* Before the connection, the QP goes to INIT and RTR as siw's
	 * IDLE state takes them (rdma_cm's INIT, an application's RTR);
	 * RTS only comes with MPA. */
	if (c->state == UR_IWS_IDLE && qp->state != UR_QPS_ERR &&
	    (attr->qp_state == UR_QPS_RESET || attr->qp_state == UR_QPS_INIT ||
	     attr->qp_state == UR_QPS_RTR)) {
		qp->state = attr->qp_state;
		return 0;
	}
	if (attr->qp_state != UR_QPS_ERR)
		return -EINVAL;
	ur_iw_close(c, now);
	return 0;
}

static int iw_stream_rx(struct ur_qp *qp, const uint8_t *p, size_t n,
			uint64_t now)
{
	return ur_iw_rx(qp->proto_conn, p, n, now);
}

static size_t iw_stream_tx_peek(struct ur_qp *qp, const uint8_t **p)
{
	return ur_iw_tx_peek(qp->proto_conn, p);
}

static void iw_stream_tx_done(struct ur_qp *qp, size_t n, uint64_t now)
{
	ur_iw_tx_done(qp->proto_conn, n, now);
}

/* iWARP: RDMAP/DDP/MPA in TCP, TCP's reliability, MPA set-up (siw's
 * device attributes: IBV_TRANSPORT_IWARP, IBV_NODE_RNIC). */
const struct ur_proto_ops ur_proto_iwarp = {
	.name = "iwarp",
	.transport = 1, /* IBV_TRANSPORT_IWARP */
	.node_type = 4, /* IBV_NODE_RNIC */
	.framing = UR_FRAMING_STREAM,
	.reliability = UR_REL_LLP,
	.connection = UR_CONN_MPA,
	.post_send = iw_post_send,
	.post_recv = iw_post_recv,
	.modify = iw_modify,
	.stream_rx = iw_stream_rx,
	.stream_tx_peek = iw_stream_tx_peek,
	.stream_tx_done = iw_stream_tx_done,
};


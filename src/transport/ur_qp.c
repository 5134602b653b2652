// SPDX-License-Identifier: MIT
/*
 * QP lifecycle: create/destroy, the modify state machine (IBTA 10.3,
 * 11.2.4.2 table of required and optional attributes per transition),
 * posting, the error state and flushing, and the QP's timer.
 */
#include <stdlib.h>
#include <string.h>

#include "ur_qp_priv.h"

#define QPS_NAMES(X) X(RESET) X(INIT) X(RTR) X(RTS) X(SQD) X(SQE) X(ERR)
static const char *const qps_name[] __attribute__((unused)) = {
#define UR_X(n) [UR_QPS_##n] = #n,
	QPS_NAMES(UR_X)
#undef UR_X
};

/* ---- the transition table (11.2.4.2; rdma-core / Linux qp_state_table) */
/* XI, XT: XRC INI and TGT (XRC annex; Linux's IB_QPT_XRC_INI/_TGT rows). */
enum { T_RC, T_UC, T_UD, T_XI, T_XT, T_NUM };

struct qp_trans {
	bool valid;
	uint32_t req[T_NUM], opt[T_NUM];
};

#define M(x) UR_QP_##x
#define INIT_RC (M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS))
#define INIT_UD (M(PKEY_INDEX) | M(PORT) | M(QKEY))
#define TO_RTS_RC (M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) |           \
		   M(MIN_RNR_TIMER) | M(PATH_MIG_STATE) | M(RATE_LIMIT))
#define TO_RTS_UC (M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) |           \
		   M(PATH_MIG_STATE) | M(RATE_LIMIT))
#define TO_RTS_UD (M(CUR_STATE) | M(QKEY) | M(RATE_LIMIT))
#define RTR_RC (M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) |               \
		M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER))
#define RTR_UC (M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN))
#define RTS_RC (M(SQ_PSN) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |         \
		M(MAX_QP_RD_ATOMIC))
#define SQD_RC (M(PORT) | M(AV) | M(TIMEOUT) | M(RETRY_CNT) |                  \
		M(RNR_RETRY) | M(MAX_QP_RD_ATOMIC) | M(MAX_DEST_RD_ATOMIC) |     \
		M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX) |                  \
		M(MIN_RNR_TIMER) | M(PATH_MIG_STATE))
#define ANY_TO(s) [UR_QPS_##s] = { .valid = true }

/*
 * An XRC INI is RC's requester (RTS needs its retry attributes; the
 * responder's, which it has none of, are taken and ignored at RTR), a
 * TGT RC's responder (RTR needs the responder's, RTS the timeout and
 * SQ PSN of its ACKs only).
 */
static const struct qp_trans qp_table[UR_QPS_ERR + 1][UR_QPS_ERR + 1] = {
	[UR_QPS_RESET] = {
		ANY_TO(RESET), ANY_TO(ERR),
		[UR_QPS_INIT] = { .valid = true,
			.req = { INIT_RC, INIT_RC, INIT_UD, INIT_RC, INIT_RC } },
	},
	[UR_QPS_INIT] = {
		ANY_TO(RESET), ANY_TO(ERR),
		[UR_QPS_INIT] = { .valid = true,
			.opt = { INIT_RC, INIT_RC, INIT_UD, INIT_RC, INIT_RC } },
		[UR_QPS_RTR] = { .valid = true,
			.req = { RTR_RC, RTR_UC, 0, RTR_UC, RTR_RC },
			.opt = { M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX),
				 M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX),
				 M(PKEY_INDEX) | M(QKEY),
				 M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX) |
					 M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER),
				 M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX) } },
	},
	[UR_QPS_RTR] = {
		ANY_TO(RESET), ANY_TO(ERR),
		[UR_QPS_RTS] = { .valid = true,
			.req = { RTS_RC, M(SQ_PSN), M(SQ_PSN), RTS_RC,
				 M(SQ_PSN) | M(TIMEOUT) },
			.opt = { TO_RTS_RC, TO_RTS_UC, TO_RTS_UD, TO_RTS_RC,
				 TO_RTS_RC } },
	},
	[UR_QPS_RTS] = {
		ANY_TO(RESET), ANY_TO(ERR),
		[UR_QPS_RTS] = { .valid = true,
			.opt = { TO_RTS_RC, TO_RTS_UC, TO_RTS_UD, TO_RTS_RC,
				 TO_RTS_RC } },
		[UR_QPS_SQD] = { .valid = true,
			.opt = { M(EN_SQD_ASYNC_NOTIFY), M(EN_SQD_ASYNC_NOTIFY),
				 M(EN_SQD_ASYNC_NOTIFY), M(EN_SQD_ASYNC_NOTIFY),
				 M(EN_SQD_ASYNC_NOTIFY) } },
	},
	[UR_QPS_SQD] = {
		ANY_TO(RESET), ANY_TO(ERR),
		[UR_QPS_RTS] = { .valid = true,
			.opt = { TO_RTS_RC, TO_RTS_UC, TO_RTS_UD, TO_RTS_RC,
				 TO_RTS_RC } },
		[UR_QPS_SQD] = { .valid = true,
			.opt = { SQD_RC,
				 M(PORT) | M(AV) | M(ALT_PATH) | M(ACCESS_FLAGS) |
				 M(PKEY_INDEX) | M(PATH_MIG_STATE),
				 M(PKEY_INDEX) | M(QKEY), SQD_RC, SQD_RC } },
	},
	[UR_QPS_SQE] = {
		ANY_TO(RESET), ANY_TO(ERR),
		[UR_QPS_RTS] = { .valid = true,
			.opt = { 0, M(CUR_STATE) | M(ACCESS_FLAGS),
				 M(CUR_STATE) | M(QKEY), 0, 0 } },
	},
	[UR_QPS_ERR] = { ANY_TO(RESET), ANY_TO(ERR) },
};

static int type_index(uint32_t type)
{
	switch (type) {
	case UR_QPT_RC:
		return T_RC;
	case UR_QPT_UC:
		return T_UC;
	case UR_QPT_UD:
		return T_UD;
	default:
		return -1;
	}
}

uint64_t ur_timeout_ns(uint8_t code)
{
	/* 4.096 us * 2^code (11.2.4.2); 0 disables the timer. */
	return code ? 4096ull << (code & 31) : 0;
}

/* ---- create / destroy --------------------------------------------------- */
/* The rings (caps.alloc's when it gives them; ur_qp_priv.ring_custom). */
enum { UR_QR_SQ, UR_QR_SQ_SGE, UR_QR_SQ_INLINE, UR_QR_RQ, UR_QR_RQ_SGE };

static void *ring_alloc(struct ur_qp *qp, int which, size_t size)
{
	bool custom;
	void *r = ur__ring_alloc(qp->caps.alloc, size, UR_RING_QP, &custom);

	if (custom)
		qp->priv->ring_custom |= 1u << which;
	return r;
}

static void ring_free(const struct ur_alloc *a, struct ur_qp_priv *p,
		      int which, void *r)
{
	ur__ring_free(a, r, UR_RING_QP, p->ring_custom & (1u << which));
}

static void qp_free(struct ur_qp *qp)
{
	struct ur_qp_priv *p = qp->priv;
	const struct ur_alloc *a = qp->caps.alloc;

	if (!p)
		return;
	free(p->resp.res);
	free(p->sr.naked);
	free(p->sr.rep);
	free(p->mp);
	free(p->cc.bw);
	ring_free(a, p, UR_QR_RQ_SGE, p->rq_sge);
	ring_free(a, p, UR_QR_RQ, p->rq);
	ring_free(a, p, UR_QR_SQ_INLINE, p->sq_inline);
	ring_free(a, p, UR_QR_SQ_SGE, p->sq_sge);
	ring_free(a, p, UR_QR_SQ, p->sq);
	free(p);
	qp->priv = NULL;
}

int ur_qp_create(struct ur_dev *dev, struct ur_qp *qp, uint32_t type,
		 uint32_t qpn, uint32_t pdn, const struct ur_qp_caps *caps,
		 struct ur_cq *send_cq, struct ur_cq *recv_cq)
{
	return ur_qp_create_ex(dev, qp, type, qpn, pdn, caps, send_cq, recv_cq,
			       NULL);
}

/* @plain: without the device's default extensions (XRC). */
static int qp_create(struct ur_dev *dev, struct ur_qp *qp, uint32_t type,
		     uint32_t qpn, uint32_t pdn, const struct ur_qp_caps *caps,
		     struct ur_cq *send_cq, struct ur_cq *recv_cq,
		     struct ur_srq *srq, bool plain)
{
	struct ur_qp_priv *p;
	size_t ssge, rsge;

	if (type_index(type) < 0 || !caps)
		return -EINVAL;
	memset(qp, 0, sizeof(*qp));
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	qp->qpn = qpn & UR_PSN_MASK;
	qp->type = type;
	qp->state = UR_QPS_RESET;
	qp->pdn = pdn;
	qp->caps = *caps;
	qp->send_cq = send_cq;
	qp->recv_cq = recv_cq;
	qp->dev = dev;
	qp->deadline = UINT64_MAX;
	qp->proto = &ur_proto_rocev2;
	qp->priv = p;

	p->sq_cap = caps->max_send_wr;
	p->rq_cap = caps->max_recv_wr;
	if (srq) {
		/* One private slot for the WQE taken from the SRQ. */
		qp->srq = srq;
		qp->caps.max_recv_wr = 0;
		qp->caps.max_recv_sge = srq->max_sge;
		p->rq_cap = 1;
	}
	ssge = caps->max_send_sge ? caps->max_send_sge : 1;
	rsge = qp->caps.max_recv_sge ? qp->caps.max_recv_sge : 1;
	if (p->sq_cap) {
		p->sq = ring_alloc(qp, UR_QR_SQ, p->sq_cap * sizeof(*p->sq));
		p->sq_sge = ring_alloc(qp, UR_QR_SQ_SGE,
				       p->sq_cap * ssge * sizeof(*p->sq_sge));
		if (!p->sq || !p->sq_sge)
			goto err;
		if (caps->max_inline_data) {
			p->sq_inline = ring_alloc(qp, UR_QR_SQ_INLINE,
						  (size_t)p->sq_cap *
						  caps->max_inline_data);
			if (!p->sq_inline)
				goto err;
		}
	}
	if (p->rq_cap) {
		p->rq = ring_alloc(qp, UR_QR_RQ, p->rq_cap * sizeof(*p->rq));
		p->rq_sge = ring_alloc(qp, UR_QR_RQ_SGE,
				       p->rq_cap * rsge * sizeof(*p->rq_sge));
		if (!p->rq || !p->rq_sge)
			goto err;
	}
	p->resp.n_res = 1;
	p->resp.res = calloc(1, sizeof(*p->resp.res));
	if (!p->resp.res)
		goto err;
	p->req.window = dev->tx_window ? dev->tx_window : UR_DEFAULT_TX_WINDOW;
	p->comp.rto_deadline = UINT64_MAX;
	p->sr.gap_deadline = UINT64_MAX;
	if (plain)
		goto done;
	if ((type == UR_QPT_RC || type == UR_QPT_UC) && dev->crypt_alg &&
	    dev->crypt_policy != UR_CRYPT_POLICY_OFF) {
		/* Before SR, which then stays off: a QP the policy wants
		 * encrypted is never created plain. */
		int rc = ur_qp_set_crypt(qp, dev->crypt_alg, dev->crypt_key);

		if (rc) {
			qp_free(qp);
			return rc;
		}
		p->crypt.policy = dev->crypt_policy;
	}
	if (type == UR_QPT_RC && dev->sr.enable)
		(void)ur_qp_set_sr(qp, &dev->sr); /* not with crypt: stays off */
	/* Only over a link that carries them: else the bits would say
	 * nothing, and an encrypted QP's buffer would grow for nothing.
	 * Negotiated by default only where the link carries 16 KiB
	 * (loopback): on 9000-byte Ethernet, 8 KiB packets put drops into
	 * auto's runs and made DCQCN unfair on the congestion bed (docs/cc.md
	 * "Jumbo packets on the bed"); UROCE_JUMBO=1 still offers them. */
	if (type == UR_QPT_RC && dev->jumbo_max &&
	    (dev->jumbo_default == 1 ||
	     (dev->jumbo_default == UR_JUMBO_AUTO &&
	      dev->jumbo_max >= UR_JUMBO_AUTO_MIN)))
		(void)ur_qp_set_jumbo(qp, dev->jumbo_default);
done:
	ur__cc_qp_init(qp, 0);
	return 0;
err:
	qp_free(qp);
	return -ENOMEM;
}

int ur_qp_create_xrc(struct ur_dev *dev, struct ur_qp *qp,
		     enum ur_xrc_role role, uint32_t qpn, uint32_t pdn,
		     const struct ur_qp_caps *caps, struct ur_cq *send_cq,
		     uint32_t xrcd)
{
	struct ur_qp_caps c;
	int rc;

	if (!caps || (role != UR_XRC_INI && role != UR_XRC_TGT))
		return -EINVAL;
	c = *caps;
	if (role == UR_XRC_INI) {
		c.max_recv_wr = c.max_recv_sge = 0;
	} else {
		/* One private slot for the WQE taken from an XRC SRQ, as
		 * for an SRQ-attached QP; no send queue. */
		c.max_send_wr = c.max_send_sge = c.max_inline_data = 0;
		c.max_recv_wr = 1;
		send_cq = NULL;
	}
	/* The uroce extensions (encryption, selective repeat, jumbo) are
	 * negotiated between RC QPs and stay off: XRC packets are plain
	 * IBTA. */
	rc = qp_create(dev, qp, UR_QPT_RC, qpn, pdn, &c, send_cq, NULL, NULL,
		       true);
	if (rc)
		return rc;
	qp->xrc = (uint8_t)role;
	qp->xrcd = role == UR_XRC_TGT ? xrcd : 0;
	return 0;
}

int ur_qp_create_ex(struct ur_dev *dev, struct ur_qp *qp, uint32_t type,
		    uint32_t qpn, uint32_t pdn, const struct ur_qp_caps *caps,
		    struct ur_cq *send_cq, struct ur_cq *recv_cq,
		    struct ur_srq *srq)
{
	return qp_create(dev, qp, type, qpn, pdn, caps, send_cq, recv_cq, srq,
			 false);
}

void ur_qp_destroy(struct ur_qp *qp)
{
	if (qp->priv) {
		ur__cc_idle(qp);
		ur__sr_release(qp);
		ur__crypt_free(qp);
	}
	qp_free(qp);
}

int ur_qp_set_tx_window(struct ur_qp *qp, uint32_t pkts)
{
	if (!pkts || pkts >= (1u << 23))
		return -EINVAL;
	qp->priv->req.window = pkts;
	return 0;
}

/* ---- SGE helpers ---------------------------------------------------------- */
int ur__sge_resolve(struct ur_qp *qp, struct ur_qsge *sge, uint32_t n,
		     uint32_t access)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct ur_mr *mr;

		if (!sge[i].length) {
			sge[i].host = NULL;
			continue;
		}
		mr = qp->dev->ops->mr_lookup(qp->dev->host, sge[i].lkey);
		if (!mr || mr->lkey != sge[i].lkey)
			return -EACCES;
		if (ur_mr_check(mr, qp->pdn, sge[i].addr, sge[i].length,
				access, &sge[i].host))
			return -EACCES;
	}
	return 0;
}

int ur__sge_copy_in(struct ur_qsge *sge, uint32_t n, uint32_t off,
		     const uint8_t *src, uint32_t len)
{
	for (uint32_t i = 0; i < n && len; i++) {
		uint32_t c;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		c = sge[i].length - off < len ? sge[i].length - off : len;
		memcpy(sge[i].host + off, src, c);
		src += c;
		len -= c;
		off = 0;
	}
	return len ? -ERANGE : 0;
}

void ur__sge_copy_out(const struct ur_qsge *sge, uint32_t n, uint32_t off,
		       uint8_t *dst, uint32_t len)
{
	for (uint32_t i = 0; i < n && len; i++) {
		uint32_t c;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		c = sge[i].length - off < len ? sge[i].length - off : len;
		memcpy(dst, sge[i].host + off, c);
		dst += c;
		len -= c;
		off = 0;
	}
}

const uint8_t *ur__sge_span(const struct ur_qsge *sge, uint32_t n,
			     uint32_t off, uint32_t len)
{
	for (uint32_t i = 0; i < n; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		return sge[i].length - off >= len ? sge[i].host + off : NULL;
	}
	return NULL;
}

void ur__recv_complete_sl(struct ur_qp *qp, uint32_t status, uint32_t opcode,
			   uint32_t byte_len, uint32_t imm, uint32_t flags,
			   uint32_t src_qp, uint8_t sl, bool solicited,
			   uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_rwqe *rwqe = ur_rwqe_at(qp, p->rq_head);
	struct ur_cqe e = {
		.wr_id = rwqe->wr_id, .status = status, .opcode = opcode,
		.byte_len = byte_len, .imm_data = imm, .qp_num = qp->qpn,
		.src_qp = src_qp, .wc_flags = flags, .sl = sl, .ts = now,
	};

	p->rq_head++;
	ur__cq_push(qp, qp->recv_cq, &e, solicited);
}

void ur__recv_complete(struct ur_qp *qp, uint32_t status, uint32_t opcode,
			uint32_t byte_len, uint32_t imm, uint32_t flags,
			uint32_t src_qp, bool solicited, uint64_t now)
{
	ur__recv_complete_sl(qp, status, opcode, byte_len, imm, flags, src_qp,
			      0, solicited, now);
}

/* ---- error state: flush everything (10.3.1, 11.4.1.1) --------------------- */
static void flush_rq(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;

	while (p->rq_head != p->rq_tail)
		ur__recv_complete(qp, UR_WC_WR_FLUSH_ERR, UR_WC_RECV, 0, 0, 0,
				   0, false, now);
	p->resp.rwqe_taken = false;
}

static void flush_sq(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;

	for (; p->sq_head != p->sq_tail; p->sq_head++) {
		struct ur_swqe *wqe = ur_swqe_at(qp, p->sq_head);
		uint32_t st = wqe->done ? wqe->status : UR_WC_WR_FLUSH_ERR;
		struct ur_cqe e = {
			.wr_id = wqe->wr_id, .status = st,
			.opcode = ur__wr_wc_opcode(wqe->opcode),
			.byte_len = wqe->length, .qp_num = qp->qpn, .ts = now,
		};

		if (st != UR_WC_SUCCESS || (wqe->flags & UR_SEND_SIGNALED))
			ur__cq_push(qp, qp->send_cq, &e, false);
	}
	p->req.idx = p->req.assigned = p->sq_head;
	p->req.pkt = 0;
	p->req.rd_outstanding = 0;
}

void ur__qp_error(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	bool was_err = qp->state == UR_QPS_ERR;

	ur__tx_ack_owed(qp); /* for what was executed before */
	qp->state = UR_QPS_ERR;
	p->req.rnr_wait = false;
	p->comp.rto_deadline = UINT64_MAX;
	p->resp.rd_active = false;
	p->resp.cur = UR_CUR_NONE;
	ur__sr_release(qp);
	flush_sq(qp, now);
	flush_rq(qp, now);
	qp->deadline = UINT64_MAX;
	/* 11.6.2: an SRQ-attached QP in ERR takes no more WQEs. */
	if (qp->srq && !was_err && qp->dev->ops->qp_event)
		qp->dev->ops->qp_event(qp->dev->host, qp,
				       UR_EVENT_QP_LAST_WQE_REACHED);
}

void ur__qp_update_deadline(struct ur_qp *qp)
{
	struct ur_qp_priv *p = qp->priv;
	uint64_t d = p->comp.rto_deadline;

	if (p->req.rnr_wait && p->req.rnr_deadline < d)
		d = p->req.rnr_deadline;
	if (p->cc.wait && p->cc.wait_until < d)
		d = p->cc.wait_until; /* the pacer lets the next packet go */
	if (p->sr.gap_deadline < d)
		d = p->sr.gap_deadline; /* NAK a gap (selective repeat) */
	if (p->comp.ask_at && p->comp.ask_at < d)
		d = p->comp.ask_at; /* ask again for a lost answer */
	if (p->comp.tail_at && p->comp.tail_at < d)
		d = p->comp.tail_at; /* selective repeat's tail probe */
	if (p->mp && p->mp->probe_out && p->mp->deadline < d)
		d = p->mp->deadline; /* a spraying probe lost (ur_mp.c) */
	if (p->crypt.neg == UR_CRYPT_NEG_PENDING) {
		/* resend the hello, give up */
		if (p->crypt.hello_at < d)
			d = p->crypt.hello_at;
		if (p->crypt.give_up_at < d)
			d = p->crypt.give_up_at;
	}
	if (p->sr.neg_pending) {
		/* resend the selective-repeat hello, give up */
		if (p->sr.hello_at < d)
			d = p->sr.hello_at;
		if (p->sr.give_up_at < d)
			d = p->sr.give_up_at;
	}
	if (p->cc.neg_pending) {
		/* resend the congestion-control hello, give up */
		if (p->cc.hello_at < d)
			d = p->cc.hello_at;
		if (p->cc.give_up_at < d)
			d = p->cc.give_up_at;
	}
	qp->deadline = d;
}

int ur_qp_set_jumbo(struct ur_qp *qp, unsigned int on)
{
	struct ur_jumbo *j = &qp->priv->jumbo;

	/* Selective repeat holds jumbo packets in slots of their size
	 * (ur_sr.c "pool"): the two go together. */
	if (on > UR_JUMBO_AUTO ||
	    (on && (qp->type != UR_QPT_RC || qp->xrc)))
		return -EINVAL;
	j->enable = (uint8_t)on;
	if (ur__crypt_buf(qp)) {
		j->enable = false;
		return -ENOMEM;
	}
	if (!on)
		j->rx_peer = j->tx_peer = 0;
	return 0;
}

uint32_t ur_qp_jumbo_state(const struct ur_qp *qp)
{
	const struct ur_jumbo *j = &qp->priv->jumbo;
	uint32_t m = ur_qp_req_mtu(qp), size = m > 4096 ? m : 0;

	return (j->enable ? 1u : 0) | (j->tx_peer ? 2u : 0) |
	       (j->rx_peer ? 4u : 0) |
	       (j->enable == UR_JUMBO_AUTO ? 8u : 0) | (size / 1024) << 8;
}

static void qp_reset(struct ur_qp *qp)
{
	struct ur_qp_priv *p = qp->priv;

	p->sq_head = p->sq_tail = p->rq_head = p->rq_tail = 0;
	memset(&p->comp, 0, sizeof(p->comp));
	p->comp.rto_deadline = UINT64_MAX;
	ur__req_reset(qp);
	memset(p->resp.res, 0, p->resp.n_res * sizeof(*p->resp.res));
	{
		struct ur_rd_res *a = p->resp.res;
		uint32_t n = p->resp.n_res;

		memset(&p->resp, 0, sizeof(p->resp));
		p->resp.res = a;
		p->resp.n_res = n;
	}
	memset(&p->attr, 0, sizeof(p->attr));
	ur__sr_release(qp);
	{
		struct ur_sr_params sp = p->sr.p;
		uint32_t *naked = p->sr.naked, rmin = p->sr.reorder_min;
		struct ur_sr_rep *rep = p->sr.rep;

		memset(&p->sr, 0, sizeof(p->sr));
		p->sr.p = sp;
		p->sr.p.reorder_ns = rmin; /* a new connection's reordering */
		p->sr.reorder_min = rmin;
		p->sr.gap_deadline = UINT64_MAX;
		if (naked) /* kept for the next connection, emptied */
			memset(naked, 0, UR_SR_NAKED * sizeof(*naked));
		p->sr.naked = naked;
		if (rep)
			memset(rep, 0, UR_SR_NAKED * sizeof(*rep));
		p->sr.rep = rep;
	}
	p->jumbo.rx_peer = p->jumbo.tx_peer = 0; /* a new connection */
	ur__cc_qp_reset(qp);
	qp->deadline = UINT64_MAX;
}

/* ---- modify --------------------------------------------------------------- */
static bool mtu_ok(uint32_t mtu)
{
	return mtu == 256 || mtu == 512 || mtu == 1024 || mtu == 2048 ||
	       mtu == 4096;
}

static int check_values(const struct ur_qp_attr *a, uint32_t mask)
{
	if ((mask & UR_QP_PATH_MTU) && !mtu_ok(a->path_mtu))
		return -EINVAL;
	if ((mask & UR_QP_TIMEOUT) && a->timeout > 31)
		return -EINVAL;
	if ((mask & UR_QP_RETRY_CNT) && a->retry_cnt > 7)
		return -EINVAL;
	if ((mask & UR_QP_RNR_RETRY) && a->rnr_retry > 7)
		return -EINVAL;
	if ((mask & UR_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return -EINVAL;
	/* Which ports exist is the host's (a device may have several). */
	if ((mask & UR_QP_PORT) && a->port_num == 0)
		return -EINVAL;
	return 0;
}

static int set_rd_res(struct ur_qp *qp, uint32_t n)
{
	struct ur_resp *r = &qp->priv->resp;
	struct ur_rd_res *a;

	if (!n)
		n = 1;
	if (n == r->n_res)
		return 0;
	a = calloc(n, sizeof(*a));
	if (!a)
		return -ENOMEM;
	free(r->res);
	r->res = a;
	r->n_res = n;
	r->res_next = 0;
	return 0;
}

static void apply_attrs(struct ur_qp *qp, const struct ur_qp_attr *a,
			uint32_t mask)
{
	struct ur_qp_attr *q = &qp->priv->attr;

	if (mask & UR_QP_ACCESS_FLAGS)
		q->qp_access_flags = a->qp_access_flags;
	if (mask & UR_QP_PKEY_INDEX)
		q->pkey_index = a->pkey_index;
	if (mask & UR_QP_PORT)
		q->port_num = a->port_num;
	if (mask & UR_QP_QKEY)
		q->qkey = a->qkey;
	if (mask & UR_QP_AV) {
		q->path = a->path;
		q->sl = a->sl;
	}
	if (mask & UR_QP_PATH_MTU)
		q->path_mtu = a->path_mtu;
	if (mask & UR_QP_TIMEOUT)
		q->timeout = a->timeout;
	if (mask & UR_QP_RETRY_CNT)
		q->retry_cnt = a->retry_cnt;
	if (mask & UR_QP_RNR_RETRY)
		q->rnr_retry = a->rnr_retry;
	if (mask & UR_QP_MIN_RNR_TIMER)
		q->min_rnr_timer = a->min_rnr_timer;
	if (mask & UR_QP_RQ_PSN)
		q->rq_psn = a->rq_psn & UR_PSN_MASK;
	if (mask & UR_QP_SQ_PSN)
		q->sq_psn = a->sq_psn & UR_PSN_MASK;
	if (mask & UR_QP_DEST_QPN)
		q->dest_qp_num = a->dest_qp_num & UR_PSN_MASK;
	if (mask & UR_QP_MAX_QP_RD_ATOMIC)
		q->max_rd_atomic = a->max_rd_atomic;
	if (mask & UR_QP_MAX_DEST_RD_ATOMIC)
		q->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & UR_QP_RATE_LIMIT)
		ur_qp_set_rate_limit(qp, a->rate_limit, 0);
}

static int roce_modify(struct ur_qp *qp, const struct ur_qp_attr *attr,
		       uint32_t mask, uint64_t now);

int ur_qp_modify(struct ur_qp *qp, const struct ur_qp_attr *attr,
		 uint32_t mask, uint64_t now)
{
	if (qp->proto_conn)
		return qp->proto->modify(qp, attr, mask, now);
	return roce_modify(qp, attr, mask, now);
}

static int roce_modify(struct ur_qp *qp, const struct ur_qp_attr *attr,
		       uint32_t mask, uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	uint32_t cur = qp->state, next;
	const struct qp_trans *t;
	uint32_t req, opt;
	int ti = qp->xrc ? (qp->xrc == UR_XRC_INI ? T_XI : T_XT)
			 : type_index(qp->type), rc;

	if ((mask & UR_QP_CUR_STATE) && attr->cur_qp_state != cur)
		return -EINVAL;
	next = (mask & UR_QP_STATE) ? attr->qp_state : cur;
	if (next > UR_QPS_ERR || cur > UR_QPS_ERR)
		return -EINVAL;
	t = &qp_table[cur][next];
	if (!t->valid)
		return -EINVAL;
	req = t->req[ti];
	opt = t->opt[ti];
	if ((mask & req) != req ||
	    (mask & ~(req | opt | UR_QP_STATE)))
		return -EINVAL;
	rc = check_values(attr, mask);
	if (rc)
		return rc;
	if (mask & UR_QP_MAX_DEST_RD_ATOMIC) {
		rc = set_rd_res(qp, attr->max_dest_rd_atomic);
		if (rc)
			return rc;
	}

	if (next == UR_QPS_RESET) {
		qp_reset(qp);
		if (p->crypt.alg)
			ur__crypt_reset(qp);
		p->crypt.neg = UR_CRYPT_NEG_NONE;
		qp->state = UR_QPS_RESET;
		return 0;
	}
	apply_attrs(qp, attr, mask);
	if (next == UR_QPS_ERR && ur__crypt_pending(qp))
		p->crypt.neg = UR_CRYPT_NEG_FAILED; /* the user gave up */
	if (next == UR_QPS_ERR) {
		ur__qp_error(qp, now);
		return 0;
	}
	qp->state = next;
	if (cur == UR_QPS_INIT && next == UR_QPS_RTR) {
		if (p->crypt.policy && !p->crypt.alg)
			/* Plain after a fallback, and reset since: again. */
			(void)ur_qp_set_crypt(qp, qp->dev->crypt_alg,
					      qp->dev->crypt_key);
		if (p->crypt.alg)
			ur__crypt_reset(qp); /* a new connection, a new session */
		if (p->crypt.alg && qp->dev->crypt_hello_send)
			ur__crypt_neg_start(qp, now);
		else if (p->crypt.policy == UR_CRYPT_POLICY_ALLOW)
			(void)ur_qp_set_crypt(qp, UR_CRYPT_NONE, NULL);
		/* (require without a way to negotiate: sealed from the
		 * start, keys of the session ids alone) */
		p->resp.psn = p->attr.rq_psn;
		p->resp.msn = 0;
		ur__sr_neg_start(qp, now); /* UR_SR_AUTO: hello the peer */
		ur__cc_neg_start(qp, now); /* UROCE_CC=auto: the same */
	}
	if (cur == UR_QPS_RTR && next == UR_QPS_RTS) {
		p->req.psn_next = p->req.psn_max = p->attr.sq_psn;
		p->comp.psn = p->attr.sq_psn;
		p->comp.retry_left = p->attr.retry_cnt;
		p->comp.rnr_left = p->attr.rnr_retry;
	}
	if (next == UR_QPS_SQD && cur == UR_QPS_RTS) {
		p->en_sqd_notify = mask & UR_QP_EN_SQD_ASYNC_NOTIFY;
		p->comp.drained_sent = false;
		if (p->sq_head == p->req.assigned) {
			p->comp.drained_sent = true;
			if (p->en_sqd_notify && qp->dev->ops->qp_event)
				qp->dev->ops->qp_event(qp->dev->host, qp,
						       UR_EVENT_SQ_DRAINED);
		}
	}
	if (mask & (UR_QP_RETRY_CNT | UR_QP_RNR_RETRY)) {
		p->comp.retry_left = p->attr.retry_cnt;
		p->comp.rnr_left = p->attr.rnr_retry;
	}
	if (next == UR_QPS_RTS)
		ur_qp_progress(qp, now);
	return 0;
}

void ur_qp_query(const struct ur_qp *qp, struct ur_qp_attr *attr)
{
	const struct ur_qp_priv *p = qp->priv;

	*attr = p->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->sq_draining = qp->state == UR_QPS_SQD &&
			    p->sq_head != p->req.assigned;
}

/* ---- posting -------------------------------------------------------------- */
static int check_send_wr(const struct ur_qp *qp, const struct ur_send_wr *wr,
			 uint64_t *total)
{
	uint64_t len = 0;

	if (!ur__wr_allowed(qp->type, wr->opcode))
		return -EINVAL;
	/* XRC: only an INI sends, and the XRC opcode group has no FLUSH or
	 * ATOMIC WRITE (table 38 lists them for RC only). */
	if (qp->xrc == UR_XRC_TGT ||
	    (qp->xrc && (wr->opcode == UR_WR_FLUSH ||
			 wr->opcode == UR_WR_ATOMIC_WRITE)))
		return -EINVAL;
	if (ur__wr_is_local(wr->opcode)) { /* no data: SGEs ignored */
		*total = 0;
		return 0;
	}
	if (wr->num_sge > qp->caps.max_send_sge || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	for (uint32_t i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > 0x80000000ull)
		return -EINVAL;
	if (wr->flags & UR_SEND_INLINE) {
		if (len > qp->caps.max_inline_data ||
		    ur__wr_is_rd_atomic(wr->opcode))
			return -EINVAL;
	}
	switch (wr->opcode) {
	case UR_WR_ATOMIC_CMP_AND_SWP:
	case UR_WR_ATOMIC_FETCH_AND_ADD:
		if (wr->num_sge && len < 8)
			return -EINVAL;
		break;
	case UR_WR_ATOMIC_WRITE:
		if (len != 8)
			return -EINVAL;
		break;
	default:
		break;
	}
	if (qp->type == UR_QPT_UD &&
	    (!wr->ah || len > (qp->dev->max_mtu ? qp->dev->max_mtu : 4096)))
		return -EINVAL;
	*total = len;
	return 0;
}

static int roce_post_send(struct ur_qp *qp, const struct ur_send_wr *wr,
			  uint64_t now);

int ur_qp_post_send(struct ur_qp *qp, const struct ur_send_wr *wr,
		    uint64_t now)
{
	if (__builtin_expect(qp->proto_conn != NULL, 0))
		return qp->proto->post_send(qp, wr, now);
	return roce_post_send(qp, wr, now);
}

static int roce_post_send(struct ur_qp *qp, const struct ur_send_wr *wr,
			  uint64_t now)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_swqe *wqe;
	struct ur_qsge *sge;
	uint64_t total;
	uint32_t idx;
	int rc;

	if (qp->state == UR_QPS_RESET || qp->state == UR_QPS_INIT ||
	    qp->state == UR_QPS_RTR)
		return -EINVAL;
	rc = check_send_wr(qp, wr, &total);
	if (rc)
		return rc;
	if (p->sq_tail - p->sq_head >= p->sq_cap)
		return -ENOMEM;
	idx = p->sq_tail;
	wqe = ur_swqe_at(qp, idx);
	sge = ur_swqe_sge(qp, idx);
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr->wr_id;
	wqe->opcode = (uint8_t)wr->opcode;
	wqe->flags = (uint8_t)wr->flags;
	wqe->imm = wr->imm_data;
	wqe->rkey = wr->rkey;
	wqe->remote_addr = wr->remote_addr;
	wqe->compare_add = wr->compare_add;
	wqe->swap = wr->swap;
	wqe->xrc_srqn = wr->xrc_srqn & 0xffffffu;
	wqe->length = (uint32_t)total;
	if (ur__wr_is_rd_atomic(wr->opcode) && wr->opcode != UR_WR_RDMA_READ)
		wqe->length = 8;
	if (ur__wr_is_local(wr->opcode)) {
		if (wr->opcode == UR_WR_BIND_MW) {
			wqe->imm = wr->bind.new_rkey;
			wqe->remote_addr = wr->bind.addr;
			wqe->compare_add = wr->bind.length;
			wqe->swap = wr->bind.lkey |
				    (uint64_t)wr->bind.access << 32;
		}
		goto queued;
	}
	if (wr->flags & UR_SEND_INLINE) {
		uint8_t *dst = ur_swqe_inline(qp, idx);
		uint32_t off = 0;

		for (uint32_t i = 0; i < wr->num_sge; i++) {
			memcpy(dst + off,
			       (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			off += wr->sg_list[i].length;
		}
		sge[0] = (struct ur_qsge){ .addr = (uintptr_t)dst,
					   .length = off, .host = dst };
		wqe->num_sge = 1;
		wqe->resolved = true;
	} else {
		for (uint32_t i = 0; i < wr->num_sge; i++)
			sge[i] = (struct ur_qsge){ .addr = wr->sg_list[i].addr,
						   .length = wr->sg_list[i].length,
						   .lkey = wr->sg_list[i].lkey };
		wqe->num_sge = wr->num_sge;
	}
	if (qp->type == UR_QPT_UD) {
		wqe->ud_path = wr->ah->path;
		wqe->ud_dqpn = wr->remote_qpn & UR_PSN_MASK;
		/* A Q_Key with the high bit set means "use the QP's" (10.2.4). */
		wqe->ud_qkey = (wr->remote_qkey & 0x80000000u) ? p->attr.qkey
							       : wr->remote_qkey;
	}
queued:
	p->sq_tail++;
	if (qp->state == UR_QPS_ERR) {
		flush_sq(qp, now);
		return 0;
	}
	ur__req_progress(qp, now);
	ur__qp_update_deadline(qp);
	return 0;
}

static int roce_post_recv(struct ur_qp *qp, const struct ur_recv_wr *wr);

int ur_qp_post_recv(struct ur_qp *qp, const struct ur_recv_wr *wr)
{
	if (__builtin_expect(qp->proto_conn != NULL, 0))
		return qp->proto->post_recv(qp, wr);
	return roce_post_recv(qp, wr);
}

static int roce_post_recv(struct ur_qp *qp, const struct ur_recv_wr *wr)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_rwqe *rwqe;
	struct ur_qsge *sge;
	uint64_t len = 0;

	if (qp->state == UR_QPS_RESET || qp->srq || qp->xrc)
		return -EINVAL;
	if (wr->num_sge > qp->caps.max_recv_sge || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	if (p->rq_tail - p->rq_head >= p->rq_cap)
		return -ENOMEM;
	rwqe = ur_rwqe_at(qp, p->rq_tail);
	sge = ur_rwqe_sge(qp, p->rq_tail);
	for (uint32_t i = 0; i < wr->num_sge; i++) {
		sge[i] = (struct ur_qsge){ .addr = wr->sg_list[i].addr,
					   .length = wr->sg_list[i].length,
					   .lkey = wr->sg_list[i].lkey };
		len += wr->sg_list[i].length;
	}
	if (len > UINT32_MAX)
		return -EINVAL;
	rwqe->wr_id = wr->wr_id;
	rwqe->num_sge = wr->num_sge;
	rwqe->length = (uint32_t)len;
	p->rq_tail++;
	if (qp->state == UR_QPS_ERR)
		flush_rq(qp, 0);
	return 0;
}

void ur_qp_progress(struct ur_qp *qp, uint64_t now)
{
	if (qp->priv->mp)
		qp->priv->mp->now = now; /* send times (ur__mp_pick) */
	if (ur__crypt_pending(qp)) {
		/* Nothing leaves before the negotiation ends. */
		ur__qp_update_deadline(qp);
		return;
	}
	if (qp->type == UR_QPT_RC) {
		ur__resp_progress(qp, now);
		if (qp->priv->sr.held)
			ur__sr_drain(qp, now); /* a READ job held them up */
	}
	ur__req_progress(qp, now);
	ur__qp_update_deadline(qp);
}

uint32_t ur_qp_unacked(const struct ur_qp *qp)
{
	if (qp->type != UR_QPT_RC)
		return 0;
	return (qp->priv->req.psn_max - qp->priv->comp.psn) & UR_PSN_MASK;
}

uint32_t ur_qp_psn_next(const struct ur_qp *qp)
{
	return qp->type == UR_QPT_RC ? qp->priv->req.psn_max : 0;
}

uint32_t ur_qp_unacked_below(const struct ur_qp *qp, uint32_t psn_next)
{
	int32_t d;

	if (qp->type != UR_QPT_RC)
		return 0;
	d = ur_psn_diff(psn_next, qp->priv->comp.psn);
	return d > 0 ? (uint32_t)d : 0;
}

void ur_qp_timer(struct ur_qp *qp, uint64_t now)
{
	if (ur__crypt_pending(qp)) {
		ur__crypt_neg_timer(qp, now);
		if (ur__crypt_pending(qp) || qp->state == UR_QPS_ERR) {
			ur__qp_update_deadline(qp);
			return;
		}
	}
	if (qp->state == UR_QPS_RTS || qp->state == UR_QPS_SQD)
		ur__comp_timer(qp, now);
	if (qp->priv->sr.gap_deadline <= now)
		ur__sr_timer(qp, now);
	if (qp->priv->sr.neg_pending)
		ur__sr_neg_timer(qp, now);
	if (qp->priv->cc.neg_pending)
		ur__cc_neg_timer(qp, now);
	if (qp->priv->mp)
		ur__mp_tick(qp, now);
	ur_qp_progress(qp, now);
}

/* RoCEv2: IBTA transport in UDP (port 4791), own reliability, CM MADs. */
const struct ur_proto_ops ur_proto_rocev2 = {
	.name = "rocev2",
	.transport = 0, /* IBV_TRANSPORT_IB */
	.node_type = 1, /* IBV_NODE_CA */
	.framing = UR_FRAMING_DATAGRAM,
	.reliability = UR_REL_PSN,
	.connection = UR_CONN_CM_MAD,
	.post_send = roce_post_send,
	.post_recv = roce_post_recv,
	.modify = roce_modify,
};

// SPDX-License-Identifier: MIT
/*
 * Raw packet QPs (IBV_QPT_RAW_PACKET), flow steering (ibv_create_flow) and
 * receive-side scaling (work queues, indirection tables, RSS QPs).
 *
 * A raw QP sends whole Ethernet frames and receives the frames its flow
 * rules select, as a NIC's raw Ethernet queues do; it never passes through
 * the RoCE transport. Frames travel on the context's raw port (an
 * AF_PACKET socket on the device's interface, src/io/raw.c), opened with
 * the first raw QP. Which QP a frame is for is the pure rule matcher's
 * answer (flow_match.c); here are the objects, the receive queues and the
 * dispatch.
 *
 * Locking: the context's raw lock guards the flow list and is held while a
 * frame is dispatched, so once ibv_destroy_flow returns no frame reaches
 * its QP; a QP with flows, a WQ in an indirection table and a table used
 * by a QP refuse destruction (EBUSY), as the kernel does. Each receive
 * queue has a lock of its own for posts.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "ur_log.h"
#include "ur_raw.h"
#include "urv.h"
#include "urv_flow.h"

enum { URV_MAX_RAW_SGE = 16 };

/* A posted receive: where a frame goes. */
struct urv_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	struct ur_sge sge[URV_MAX_RAW_SGE];
};

/* The receive queue of a raw QP or of a WQ. */
struct urv_rq {
	pthread_mutex_t lock;
	struct urv_rwqe *ring;
	uint32_t size, head, tail; /* free-running; count = tail - head */
	uint32_t max_sge;
	uint32_t pdn;
	uint32_t num; /* the QP or WQ number completions carry */
	struct urv_cq *cq;
};

struct urv_ind_tbl;

struct urv_raw_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex; /* wr_start stays NULL: no _ex posting */
	};
	struct urv_context *ctx;
	uint32_t pdn;
	atomic_int state;  /* enum ibv_qp_state */
	bool sq_sig_all;
	struct ibv_qp_cap cap;
	struct urv_rq rq;  /* a plain raw QP's */
	struct urv_ind_tbl *ind; /* an RSS QP's */
	uint8_t key[URV_RSS_KEY_LEN];
	uint64_t fields;
	int nflows;        /* under the raw lock */
	uint64_t seen;     /* last frame delivered (one copy per QP) */
};

struct urv_flow {
	struct ibv_flow flow;
	struct urv_flow *next;
	struct urv_raw_qp *qp;
	struct urv_flow_rule rule;
};

struct urv_wq {
	struct ibv_wq wq;
	struct urv_context *ctx;
	struct urv_rq rq;
	atomic_int state; /* enum ibv_wq_state */
	atomic_int users; /* indirection tables */
};

struct urv_ind_tbl {
	struct ibv_rwq_ind_table t;
	uint32_t size;
	struct urv_wq **wqs;
	atomic_int users; /* RSS QPs */
};

struct urv_raw_ctx {
	pthread_mutex_t lock;
	struct ur_raw *port;
	struct urv_flow *flows;
	uint64_t frame_seq;
	/* Frames no rule took, and frames for a queue with no receive
	 * posted: dropped, as a NIC drops them (UROCE_LOG=debug prints). */
	uint64_t unmatched, no_wqe;
};

static atomic_uint urv_ind_tbl_num, urv_flow_handle;

static struct urv_raw_qp *to_rqp(struct ibv_qp *qp)
{
	return urv_container_of(qp, struct urv_raw_qp, qp);
}
static struct urv_flow *to_uflow(struct ibv_flow *f)
{
	return urv_container_of(f, struct urv_flow, flow);
}
static struct urv_wq *to_uwq(struct ibv_wq *wq)
{
	return urv_container_of(wq, struct urv_wq, wq);
}
static struct urv_ind_tbl *to_uind(struct ibv_rwq_ind_table *t)
{
	return urv_container_of(t, struct urv_ind_tbl, t);
}

/* ---- completions and receive queues ------------------------------------ */

static void push_cqe(struct urv_cq *cq, uint64_t wr_id, uint32_t status,
		     uint32_t opcode, uint32_t byte_len, uint32_t num)
{
	struct ur_cqe e = {
		.wr_id = wr_id, .status = status, .opcode = opcode,
		.byte_len = byte_len, .qp_num = num, .ts = ur_now(),
	};
	bool fire;

	if (ur_cq_add(&cq->ucq, &e, &fire)) {
		ur_log(UR_LOG_WARN, "CQ %p full: a raw QP completion is lost",
		       (void *)cq);
		return;
	}
	if (fire)
		urv__host_ops.cq_event(NULL, &cq->ucq);
}

static int rq_init(struct urv_rq *rq, uint32_t max_wr, uint32_t max_sge,
		   uint32_t pdn, uint32_t num, struct urv_cq *cq)
{
	rq->size = max_wr ? max_wr : 1;
	rq->ring = calloc(rq->size, sizeof(*rq->ring));
	if (!rq->ring)
		return -ENOMEM;
	rq->max_sge = max_sge ? max_sge : 1;
	rq->pdn = pdn;
	rq->num = num;
	rq->cq = cq;
	rq->head = rq->tail = 0;
	pthread_mutex_init(&rq->lock, NULL);
	return 0;
}

static void rq_fini(struct urv_rq *rq)
{
	if (!rq->ring)
		return;
	pthread_mutex_destroy(&rq->lock);
	free(rq->ring);
	rq->ring = NULL;
}

static int rq_post(struct urv_rq *rq, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad)
{
	int ret = 0;

	pthread_mutex_lock(&rq->lock);
	for (; wr; wr = wr->next) {
		struct urv_rwqe *q;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			ret = EINVAL;
		} else if (rq->tail - rq->head >= rq->size) {
			ret = ENOMEM; /* the queue is full */
		}
		if (ret) {
			*bad = wr;
			break;
		}
		q = &rq->ring[rq->tail % rq->size];
		q->wr_id = wr->wr_id;
		q->num_sge = (uint32_t)wr->num_sge;
		if (wr->num_sge)
			memcpy(q->sge, wr->sg_list,
			       (size_t)wr->num_sge * sizeof(q->sge[0]));
		rq->tail++;
	}
	pthread_mutex_unlock(&rq->lock);
	return ret;
}

/* Complete every posted receive with a flush error (the queue went to
 * the error state), or drop them silently (it was reset). */
static void rq_flush(struct urv_rq *rq, bool complete)
{
	pthread_mutex_lock(&rq->lock);
	while (rq->head != rq->tail) {
		struct urv_rwqe *q = &rq->ring[rq->head % rq->size];

		if (complete)
			push_cqe(rq->cq, q->wr_id, UR_WC_WR_FLUSH_ERR, UR_WC_RECV,
				 0, rq->num);
		rq->head++;
	}
	pthread_mutex_unlock(&rq->lock);
}

/* Scatter @frame into the next posted receive and complete it. False if
 * nothing was posted (the frame is dropped). */
static bool rq_deliver(struct urv_context *ctx, struct urv_rq *rq,
		       const uint8_t *frame, size_t len)
{
	struct urv_rwqe q;
	uint32_t status = UR_WC_SUCCESS;
	size_t off = 0;

	pthread_mutex_lock(&rq->lock);
	if (rq->head == rq->tail) {
		pthread_mutex_unlock(&rq->lock);
		return false;
	}
	q = rq->ring[rq->head % rq->size];
	rq->head++;
	pthread_mutex_unlock(&rq->lock);

	for (uint32_t i = 0; i < q.num_sge && off < len; i++) {
		const struct ur_sge *s = &q.sge[i];
		size_t n = len - off < s->length ? len - off : s->length;
		const struct ur_mr *mr;
		uint8_t *p;

		if (!n)
			continue; /* an empty buffer holds nothing */
		mr = ur_engine_mr_find(ctx->eng, s->lkey);
		if (!mr || mr->type != UR_KEY_MR || mr->lkey != s->lkey ||
		    ur_mr_check(mr, rq->pdn, s->addr, n, UR_ACCESS_LOCAL_WRITE,
				&p)) {
			status = UR_WC_LOC_PROT_ERR;
			break;
		}
		memcpy(p, frame + off, n);
		off += n;
	}
	if (status == UR_WC_SUCCESS && off < len)
		status = UR_WC_LOC_LEN_ERR; /* the buffers are too short */
	push_cqe(rq->cq, q.wr_id, status, UR_WC_RECV, (uint32_t)len, rq->num);
	return true;
}

/* ---- the receive side: which queue a frame is for ---------------------- */

static bool deliver(struct urv_raw_ctx *rc, struct urv_raw_qp *qp,
		    const struct urv_frame *fr, const uint8_t *frame,
		    size_t len)
{
	if (qp->seen == rc->frame_seq)
		return true; /* another of its rules took the frame already */
	qp->seen = rc->frame_seq;
	if (qp->ind) {
		/* RSS: the hash of the fields asked for picks the WQ. */
		uint8_t in[36];
		size_t n = urv__rss_input(fr, qp->fields, in);
		uint32_t h = urv__toeplitz(qp->key, sizeof(qp->key), in, n);
		struct urv_wq *wq = qp->ind->wqs[h & (qp->ind->size - 1)];

		if (atomic_load(&wq->state) != IBV_WQS_RDY)
			return false;
		return rq_deliver(qp->ctx, &wq->rq, frame, len);
	}
	/* A raw QP receives from RTR on (IBTA 10.3.1: the receive queue
	 * works in RTR and RTS). */
	if (atomic_load(&qp->state) != IBV_QPS_RTR &&
	    atomic_load(&qp->state) != IBV_QPS_RTS)
		return false;
	return rq_deliver(qp->ctx, &qp->rq, frame, len);
}

/*
 * The raw port's thread, per frame. Steering as the NICs do it: the
 * NORMAL rules of the best (lowest) priority that match take the frame,
 * one copy per QP; a frame no NORMAL rule took goes to the default rules
 * (all frames, or multicast only); sniffer rules see every frame.
 */
static void raw_rx(void *arg, const uint8_t *frame, size_t len)
{
	struct urv_raw_ctx *rc = arg;
	struct urv_frame fr;
	bool taken = false, got = false;
	unsigned int best = UINT16_MAX + 1u;

	if (!urv__frame_parse(frame, len, &fr))
		return;
	pthread_mutex_lock(&rc->lock);
	rc->frame_seq++;
	for (struct urv_flow *f = rc->flows; f; f = f->next)
		if (f->rule.type == IBV_FLOW_ATTR_NORMAL &&
		    f->rule.priority < best && urv__flow_match(&f->rule, &fr))
			best = f->rule.priority;
	for (struct urv_flow *f = rc->flows; f; f = f->next) {
		bool take;

		switch (f->rule.type) {
		case IBV_FLOW_ATTR_NORMAL:
			take = f->rule.priority == best &&
			       urv__flow_match(&f->rule, &fr);
			break;
		case IBV_FLOW_ATTR_ALL_DEFAULT:
			take = best > UINT16_MAX;
			break;
		case IBV_FLOW_ATTR_MC_DEFAULT:
			take = best > UINT16_MAX && urv__frame_is_mcast(&fr);
			break;
		default: /* sniffer */
			take = true;
			break;
		}
		if (!take)
			continue;
		taken = true;
		got |= deliver(rc, f->qp, &fr, frame, len);
	}
	if (!taken)
		rc->unmatched++;
	else if (!got)
		rc->no_wqe++;
	pthread_mutex_unlock(&rc->lock);
}

/*
 * Tell the port which destinations the rules can take, so that the kernel
 * drops the rest of the interface's traffic (on lo: every RoCE datagram of
 * the machine) before it is queued for us. A rule that does not name its
 * destination MAC, or a default or sniffer rule, lets every frame in.
 * Under the raw lock.
 */
static void refilter(struct urv_raw_ctx *rc)
{
	struct ur_raw_match m[UR_RAW_FILTER_MAX];
	bool all = false;
	int n = 0, ret;

	for (struct urv_flow *f = rc->flows; f && !all; f = f->next) {
		const struct urv_flow_rule *r = &f->rule;
		static const uint8_t zero[6];

		if (r->type != IBV_FLOW_ATTR_NORMAL || !(r->have & URV_FLOW_ETH) ||
		    !memcmp(r->eth_mask.dst_mac, zero, 6) ||
		    n == UR_RAW_FILTER_MAX) {
			all = true;
			break;
		}
		memcpy(m[n].mac, r->eth_val.dst_mac, 6);
		memcpy(m[n].mask, r->eth_mask.dst_mac, 6);
		n++;
	}
	ret = ur_raw_filter(rc->port, m, n, all);
	if (ret) {
		/* Every frame then, still matched one by one above. */
		ur_log(UR_LOG_WARN, "raw port: socket filter: %s", strerror(-ret));
		(void)ur_raw_filter(rc->port, NULL, 0, true);
	}
}

/* The context's raw state and port, made with its first raw QP. */
static int raw_ctx_get(struct urv_context *ctx, struct urv_raw_ctx **out)
{
	struct ibv_context *c = &ctx->vctx.context;
	struct urv_raw_ctx *rc;
	int ret = 0;

	pthread_mutex_lock(&c->mutex);
	rc = ctx->raw;
	if (!rc) {
		rc = calloc(1, sizeof(*rc));
		if (!rc) {
			ret = -ENOMEM;
			goto out;
		}
		pthread_mutex_init(&rc->lock, NULL);
		ret = ur_raw_open(ctx->dev->ports[0].ifindex, raw_rx, rc, &rc->port);
		if (ret) {
			if (ret == -ENODEV)
				ur_log(UR_LOG_ERROR, "%s: raw packet QP: the "
				       "device's address is on no local "
				       "interface", ctx->dev->vdev.device.name);
			pthread_mutex_destroy(&rc->lock);
			free(rc);
			goto out;
		}
		ctx->raw = rc;
	}
	*out = rc;
out:
	pthread_mutex_unlock(&c->mutex);
	return ret;
}

void urv__raw_ctx_fini(struct urv_context *ctx)
{
	struct urv_raw_ctx *rc = ctx->raw;

	if (!rc)
		return;
	ur_raw_close(rc->port);
	ur_log(UR_LOG_DEBUG, "%s: raw port: %llu frames matched no rule, %llu "
	       "found no receive posted, %llu too long",
	       ctx->dev->vdev.device.name, (unsigned long long)rc->unmatched,
	       (unsigned long long)rc->no_wqe,
	       (unsigned long long)ur_raw_truncated(rc->port));
	pthread_mutex_destroy(&rc->lock);
	free(rc);
	ctx->raw = NULL;
}

/* ---- QPs --------------------------------------------------------------- */

static bool is_ours_cq(struct ibv_context *ctx, struct ibv_cq *cq)
{
	return cq && cq->context == ctx;
}

static int rss_conf(struct urv_raw_qp *qp, struct ibv_context *context,
		    const struct ibv_qp_init_attr_ex *attr)
{
	const struct ibv_rx_hash_conf *h = &attr->rx_hash_conf;

	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_RX_HASH) ||
	    !(attr->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) ||
	    !attr->rwq_ind_tbl || attr->rwq_ind_tbl->context != context)
		return -EINVAL;
	if (h->rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ)
		return -EOPNOTSUPP;
	if (h->rx_hash_fields_mask & ~(uint64_t)URV_RSS_FIELDS)
		return -EOPNOTSUPP; /* inner headers, IPsec SPI */
	if (h->rx_hash_key_len != URV_RSS_KEY_LEN || !h->rx_hash_key)
		return -EINVAL;
	memcpy(qp->key, h->rx_hash_key, URV_RSS_KEY_LEN);
	qp->fields = h->rx_hash_fields_mask;
	qp->ind = to_uind(attr->rwq_ind_tbl);
	return 0;
}

struct ibv_qp *urv__raw_create_qp(struct ibv_context *context,
				  struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS |
			       IBV_QP_INIT_ATTR_RX_HASH | IBV_QP_INIT_ATTR_IND_TABLE;
	struct urv_context *ctx = to_uctx(context);
	bool rss = attr->comp_mask & (IBV_QP_INIT_ATTR_RX_HASH |
				      IBV_QP_INIT_ATTR_IND_TABLE);
	struct urv_raw_ctx *rc;
	struct urv_raw_qp *qp;
	int ret;

	if (attr->comp_mask & ~known)
		return urv_err_ptr(-EOPNOTSUPP); /* _ex posting, TSO, ... */
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags)
		return urv_err_ptr(-EOPNOTSUPP);
	if (attr->srq)
		return urv_err_ptr(-EOPNOTSUPP);
	if (!rss && (!is_ours_cq(context, attr->send_cq) ||
		     !is_ours_cq(context, attr->recv_cq)))
		return urv_err_ptr(-EINVAL);
	if (!rss && (attr->cap.max_send_wr > URV_MAX_QP_WR ||
		     attr->cap.max_recv_wr > URV_MAX_QP_WR ||
		     attr->cap.max_send_sge > URV_MAX_RAW_SGE ||
		     attr->cap.max_recv_sge > URV_MAX_RAW_SGE ||
		     attr->cap.max_inline_data > URV_MAX_INLINE))
		return urv_err_ptr(-EINVAL);
	ret = raw_ctx_get(ctx, &rc);
	if (ret)
		return urv_err_ptr(ret);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return urv_err_ptr(-ENOMEM);
	qp->ctx = ctx;
	qp->pdn = to_upd(attr->pd)->pdn;
	qp->qp.qp_num = ur_engine_alloc_qpn(ctx->eng);
	if (rss) {
		ret = rss_conf(qp, context, attr);
		if (ret)
			goto err_free;
	} else {
		qp->cap.max_send_wr = attr->cap.max_send_wr ? attr->cap.max_send_wr : 1;
		qp->cap.max_recv_wr = attr->cap.max_recv_wr ? attr->cap.max_recv_wr : 1;
		qp->cap.max_send_sge = attr->cap.max_send_sge ? attr->cap.max_send_sge : 1;
		qp->cap.max_recv_sge = attr->cap.max_recv_sge ? attr->cap.max_recv_sge : 1;
		qp->cap.max_inline_data = URV_MAX_INLINE;
		ret = rq_init(&qp->rq, qp->cap.max_recv_wr, qp->cap.max_recv_sge,
			      qp->pdn, qp->qp.qp_num, to_ucq(attr->recv_cq));
		if (ret)
			goto err_free;
		attr->cap = qp->cap;
	}
	qp->qp.context = context;
	qp->qp.qp_context = attr->qp_context;
	qp->qp.pd = attr->pd;
	qp->qp.send_cq = rss ? NULL : attr->send_cq;
	qp->qp.recv_cq = rss ? NULL : attr->recv_cq;
	qp->qp.handle = qp->qp.qp_num;
	qp->qp.state = IBV_QPS_RESET;
	qp->qp.qp_type = IBV_QPT_RAW_PACKET;
	pthread_mutex_init(&qp->qp.mutex, NULL);
	pthread_cond_init(&qp->qp.cond, NULL);
	qp->sq_sig_all = attr->sq_sig_all;
	atomic_store(&qp->state, IBV_QPS_RESET);
	if (rss) {
		atomic_fetch_add(&qp->ind->users, 1);
	} else {
		atomic_fetch_add(&to_ucq(attr->send_cq)->nqp, 1);
		atomic_fetch_add(&to_ucq(attr->recv_cq)->nqp, 1);
	}
	atomic_fetch_add(&to_upd(attr->pd)->users, 1);
	atomic_fetch_add(&ctx->nqp, 1);
	return &qp->qp;

err_free:
	free(qp);
	return urv_err_ptr(ret);
}

int urv__raw_destroy_qp(struct ibv_qp *ibqp)
{
	struct urv_raw_qp *qp = to_rqp(ibqp);
	struct urv_raw_ctx *rc = qp->ctx->raw;
	int nflows;

	pthread_mutex_lock(&rc->lock);
	nflows = qp->nflows;
	pthread_mutex_unlock(&rc->lock);
	if (nflows)
		return EBUSY; /* its flows first, as the kernel asks */
	if (qp->ind) {
		atomic_fetch_sub(&qp->ind->users, 1);
	} else {
		atomic_fetch_sub(&to_ucq(ibqp->send_cq)->nqp, 1);
		atomic_fetch_sub(&to_ucq(ibqp->recv_cq)->nqp, 1);
		rq_fini(&qp->rq);
	}
	urv__pd_put(to_upd(ibqp->pd));
	atomic_fetch_sub(&qp->ctx->nqp, 1);
	pthread_cond_destroy(&ibqp->cond);
	pthread_mutex_destroy(&ibqp->mutex);
	free(qp);
	return 0;
}

/* The raw QP transitions the kernel allows (its qp_state_table for
 * IB_QPT_RAW_PACKET): up RESET -> INIT -> RTR -> RTS, and to RESET or
 * ERR from anywhere. */
static bool raw_transition_ok(int from, int to)
{
	if (to == IBV_QPS_RESET || to == IBV_QPS_ERR)
		return true;
	switch (from) {
	case IBV_QPS_RESET:
		return to == IBV_QPS_INIT;
	case IBV_QPS_INIT:
		return to == IBV_QPS_INIT || to == IBV_QPS_RTR;
	case IBV_QPS_RTR:
		return to == IBV_QPS_RTS;
	case IBV_QPS_RTS:
		return to == IBV_QPS_RTS;
	default:
		return false;
	}
}

int urv__raw_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	const int known = IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_PORT;
	struct urv_raw_qp *qp = to_rqp(ibqp);
	int from, to;

	if (mask & ~known)
		return EINVAL;
	if ((mask & IBV_QP_PORT) && attr->port_num != 1)
		return EINVAL;
	if (!(mask & IBV_QP_STATE))
		return 0;
	pthread_mutex_lock(&ibqp->mutex);
	from = atomic_load(&qp->state);
	to = attr->qp_state;
	if (((mask & IBV_QP_CUR_STATE) && (int)attr->cur_qp_state != from) ||
	    !raw_transition_ok(from, to) ||
	    (from == IBV_QPS_RESET && to == IBV_QPS_INIT &&
	     !(mask & IBV_QP_PORT))) {
		pthread_mutex_unlock(&ibqp->mutex);
		return EINVAL;
	}
	atomic_store(&qp->state, to);
	ibqp->state = (enum ibv_qp_state)to;
	pthread_mutex_unlock(&ibqp->mutex);
	if (qp->ind)
		return 0; /* an RSS QP's queues are its WQs' */
	if (to == IBV_QPS_ERR && from != IBV_QPS_ERR) {
		rq_flush(&qp->rq, true);
	} else if (to == IBV_QPS_RESET) {
		rq_flush(&qp->rq, false);
		ur_cq_clean(&to_ucq(ibqp->send_cq)->ucq, ibqp->qp_num);
		if (ibqp->recv_cq != ibqp->send_cq)
			ur_cq_clean(&to_ucq(ibqp->recv_cq)->ucq, ibqp->qp_num);
	}
	return 0;
}

int urv__raw_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		      struct ibv_qp_init_attr *init_attr)
{
	struct urv_raw_qp *qp = to_rqp(ibqp);

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum ibv_qp_state)atomic_load(&qp->state);
	attr->cur_qp_state = attr->qp_state;
	attr->port_num = 1;
	attr->cap = qp->cap;
	attr->path_mig_state = IBV_MIG_MIGRATED;
	if (init_attr) {
		memset(init_attr, 0, sizeof(*init_attr));
		init_attr->qp_context = ibqp->qp_context;
		init_attr->send_cq = ibqp->send_cq;
		init_attr->recv_cq = ibqp->recv_cq;
		init_attr->cap = qp->cap;
		init_attr->qp_type = IBV_QPT_RAW_PACKET;
		init_attr->sq_sig_all = qp->sq_sig_all;
	}
	return 0;
}

int urv__raw_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad)
{
	struct urv_raw_qp *qp = to_rqp(ibqp);

	if (qp->ind || atomic_load(&qp->state) == IBV_QPS_RESET) {
		*bad = wr; /* an RSS QP receives through its WQs */
		return EINVAL;
	}
	return rq_post(&qp->rq, wr, bad);
}

/* One send: the WR's bytes are the frame, Ethernet header first. */
static int raw_send_one(struct urv_raw_qp *qp, const struct ibv_send_wr *wr)
{
	struct iovec iov[URV_MAX_RAW_SGE];
	size_t len = 0;
	int n = 0, ret;

	if (wr->opcode != IBV_WR_SEND)
		return -EINVAL; /* TSO and the rest are not offered */
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge ||
	    (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	for (int i = 0; i < wr->num_sge; i++) {
		const struct ibv_sge *s = &wr->sg_list[i];
		uint8_t *p = (uint8_t *)(uintptr_t)s->addr;

		if (!s->length)
			continue;
		if (!(wr->send_flags & IBV_SEND_INLINE)) {
			const struct ur_mr *mr = ur_engine_mr_find(qp->ctx->eng,
								    s->lkey);

			if (!mr || mr->type != UR_KEY_MR || mr->lkey != s->lkey ||
			    ur_mr_check(mr, qp->pdn, s->addr, s->length, 0, &p))
				return -EACCES;
		}
		iov[n].iov_base = p;
		iov[n].iov_len = s->length;
		len += s->length;
		n++;
	}
	if ((wr->send_flags & IBV_SEND_INLINE) && len > URV_MAX_INLINE)
		return -EINVAL;
	ret = ur_raw_sendv(qp->ctx->raw->port, iov, n, len);
	return ret;
}

int urv__raw_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		       struct ibv_send_wr **bad)
{
	struct urv_raw_qp *qp = to_rqp(ibqp);

	if (qp->ind || atomic_load(&qp->state) != IBV_QPS_RTS) {
		*bad = wr;
		return EINVAL;
	}
	for (; wr; wr = wr->next) {
		uint32_t status = UR_WC_SUCCESS;
		int ret = raw_send_one(qp, wr);

		if (ret == -EINVAL) {
			*bad = wr;
			return EINVAL;
		}
		/* The frame is handed to the interface: done, as a NIC's
		 * send completes once the frame has left. */
		if (ret == -EACCES)
			status = UR_WC_LOC_PROT_ERR;
		else if (ret == -EMSGSIZE)
			status = UR_WC_LOC_LEN_ERR;
		else if (ret && ret != -ENOBUFS && ret != -EAGAIN)
			status = UR_WC_LOC_QP_OP_ERR; /* lost like a dropped frame otherwise */
		if (status != UR_WC_SUCCESS)
			ur_log(UR_LOG_INFO, "raw QP 0x%x: send: %s", ibqp->qp_num,
			       strerror(-ret));
		if (status != UR_WC_SUCCESS || qp->sq_sig_all ||
		    (wr->send_flags & IBV_SEND_SIGNALED))
			push_cqe(to_ucq(ibqp->send_cq), wr->wr_id, status,
				 UR_WC_SEND, 0, ibqp->qp_num);
	}
	return 0;
}

/* ---- flows ------------------------------------------------------------- */

struct ibv_flow *urv__create_flow(struct ibv_qp *ibqp, struct ibv_flow_attr *attr)
{
	struct urv_raw_qp *qp;
	struct urv_raw_ctx *rc;
	struct urv_flow *f;
	int ret;

	if (!ibqp || !attr)
		return urv_err_ptr(-EINVAL);
	if (ibqp->qp_type != IBV_QPT_RAW_PACKET)
		return urv_err_ptr(-EOPNOTSUPP); /* steering feeds raw QPs only */
	qp = to_rqp(ibqp);
	rc = qp->ctx->raw;
	f = calloc(1, sizeof(*f));
	if (!f)
		return urv_err_ptr(-ENOMEM);
	ret = urv__flow_rule_parse(attr, &f->rule);
	if (ret) {
		free(f);
		return urv_err_ptr(ret);
	}
	f->qp = qp;
	f->flow.context = ibqp->context;
	f->flow.handle = atomic_fetch_add(&urv_flow_handle, 1) + 1;
	pthread_mutex_lock(&rc->lock);
	f->next = rc->flows;
	rc->flows = f;
	qp->nflows++;
	refilter(rc);
	pthread_mutex_unlock(&rc->lock);
	return &f->flow;
}

int urv__destroy_flow(struct ibv_flow *flow)
{
	struct urv_flow *f = to_uflow(flow);
	struct urv_raw_ctx *rc = f->qp->ctx->raw;
	struct urv_flow **pp;

	pthread_mutex_lock(&rc->lock);
	for (pp = &rc->flows; *pp && *pp != f; pp = &(*pp)->next)
		;
	if (!*pp) {
		pthread_mutex_unlock(&rc->lock);
		return EINVAL;
	}
	*pp = f->next;
	f->qp->nflows--;
	refilter(rc);
	pthread_mutex_unlock(&rc->lock);
	free(f);
	return 0;
}

/* ---- work queues and indirection tables -------------------------------- */

static int wq_post_recv(struct ibv_wq *ibwq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad)
{
	struct urv_wq *wq = to_uwq(ibwq);

	if (atomic_load(&wq->state) == IBV_WQS_RESET) {
		*bad = wr;
		return EINVAL;
	}
	return rq_post(&wq->rq, wr, bad);
}

struct ibv_wq *urv__create_wq(struct ibv_context *context,
			      struct ibv_wq_init_attr *attr)
{
	struct urv_context *ctx = to_uctx(context);
	struct urv_wq *wq;

	if (attr->comp_mask & ~(uint32_t)IBV_WQ_INIT_ATTR_FLAGS)
		return urv_err_ptr(-EINVAL);
	if ((attr->comp_mask & IBV_WQ_INIT_ATTR_FLAGS) && attr->create_flags)
		return urv_err_ptr(-EOPNOTSUPP); /* VLAN stripping, FCS, ... */
	if (attr->wq_type != IBV_WQT_RQ)
		return urv_err_ptr(-EINVAL);
	if (!attr->pd || attr->pd->context != context ||
	    !is_ours_cq(context, attr->cq))
		return urv_err_ptr(-EINVAL);
	if (attr->max_wr > URV_MAX_QP_WR || attr->max_sge > URV_MAX_RAW_SGE)
		return urv_err_ptr(-EINVAL);
	wq = calloc(1, sizeof(*wq));
	if (!wq)
		return urv_err_ptr(-ENOMEM);
	wq->ctx = ctx;
	wq->wq.wq_num = ur_engine_alloc_qpn(ctx->eng);
	if (rq_init(&wq->rq, attr->max_wr, attr->max_sge, to_upd(attr->pd)->pdn,
		    wq->wq.wq_num, to_ucq(attr->cq))) {
		free(wq);
		return urv_err_ptr(-ENOMEM);
	}
	attr->max_wr = wq->rq.size;
	attr->max_sge = wq->rq.max_sge;
	wq->wq.context = context;
	wq->wq.wq_context = attr->wq_context;
	wq->wq.pd = attr->pd;
	wq->wq.cq = attr->cq;
	wq->wq.handle = wq->wq.wq_num;
	wq->wq.state = IBV_WQS_RESET;
	wq->wq.wq_type = IBV_WQT_RQ;
	wq->wq.post_recv = wq_post_recv;
	pthread_mutex_init(&wq->wq.mutex, NULL);
	pthread_cond_init(&wq->wq.cond, NULL);
	atomic_store(&wq->state, IBV_WQS_RESET);
	atomic_fetch_add(&to_ucq(attr->cq)->nqp, 1);
	atomic_fetch_add(&to_upd(attr->pd)->users, 1);
	return &wq->wq;
}

int urv__modify_wq(struct ibv_wq *ibwq, struct ibv_wq_attr *attr)
{
	const uint32_t known = IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE |
			       IBV_WQ_ATTR_FLAGS;
	struct urv_wq *wq = to_uwq(ibwq);
	int from, to;

	if (attr->attr_mask & ~known)
		return EINVAL;
	if ((attr->attr_mask & IBV_WQ_ATTR_FLAGS) && attr->flags_mask)
		return EOPNOTSUPP;
	if (!(attr->attr_mask & IBV_WQ_ATTR_STATE))
		return 0;
	pthread_mutex_lock(&ibwq->mutex);
	from = atomic_load(&wq->state);
	to = attr->wq_state;
	if (((attr->attr_mask & IBV_WQ_ATTR_CURR_STATE) &&
	     (int)attr->curr_wq_state != from) ||
	    (to != IBV_WQS_RESET && to != IBV_WQS_RDY && to != IBV_WQS_ERR) ||
	    (from == IBV_WQS_ERR && to == IBV_WQS_RDY)) {
		pthread_mutex_unlock(&ibwq->mutex);
		return EINVAL;
	}
	atomic_store(&wq->state, to);
	ibwq->state = (enum ibv_wq_state)to;
	pthread_mutex_unlock(&ibwq->mutex);
	if (to == IBV_WQS_ERR && from != IBV_WQS_ERR)
		rq_flush(&wq->rq, true);
	else if (to == IBV_WQS_RESET && from != IBV_WQS_RESET) {
		rq_flush(&wq->rq, false);
		ur_cq_clean(&to_ucq(ibwq->cq)->ucq, ibwq->wq_num);
	}
	return 0;
}

int urv__destroy_wq(struct ibv_wq *ibwq)
{
	struct urv_wq *wq = to_uwq(ibwq);

	if (atomic_load(&wq->users))
		return EBUSY; /* still in an indirection table */
	atomic_fetch_sub(&to_ucq(ibwq->cq)->nqp, 1);
	urv__pd_put(to_upd(ibwq->pd));
	rq_fini(&wq->rq);
	pthread_cond_destroy(&ibwq->cond);
	pthread_mutex_destroy(&ibwq->mutex);
	free(wq);
	return 0;
}

struct ibv_rwq_ind_table *
urv__create_rwq_ind_table(struct ibv_context *context,
			  struct ibv_rwq_ind_table_init_attr *attr)
{
	struct urv_ind_tbl *t;
	uint32_t size;

	if (attr->comp_mask || attr->log_ind_tbl_size > URV_MAX_RWQ_IND_LOG ||
	    !attr->ind_tbl)
		return urv_err_ptr(-EINVAL);
	size = 1u << attr->log_ind_tbl_size;
	for (uint32_t i = 0; i < size; i++)
		if (!attr->ind_tbl[i] || attr->ind_tbl[i]->context != context ||
		    attr->ind_tbl[i]->wq_type != IBV_WQT_RQ)
			return urv_err_ptr(-EINVAL);
	t = calloc(1, sizeof(*t));
	if (!t)
		return urv_err_ptr(-ENOMEM);
	t->wqs = calloc(size, sizeof(*t->wqs));
	if (!t->wqs) {
		free(t);
		return urv_err_ptr(-ENOMEM);
	}
	t->size = size;
	for (uint32_t i = 0; i < size; i++) {
		t->wqs[i] = to_uwq(attr->ind_tbl[i]);
		atomic_fetch_add(&t->wqs[i]->users, 1);
	}
	t->t.context = context;
	t->t.ind_tbl_num = (int)(atomic_fetch_add(&urv_ind_tbl_num, 1) + 1);
	t->t.ind_tbl_handle = t->t.ind_tbl_num;
	return &t->t;
}

int urv__destroy_rwq_ind_table(struct ibv_rwq_ind_table *ibt)
{
	struct urv_ind_tbl *t = to_uind(ibt);

	if (atomic_load(&t->users))
		return EBUSY; /* an RSS QP still hashes into it */
	for (uint32_t i = 0; i < t->size; i++)
		atomic_fetch_sub(&t->wqs[i]->users, 1);
	free(t->wqs);
	free(t);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * Queue pairs: create/modify/query/destroy and the classic post verbs.
 *
 * The transport's struct ur_qp is embedded in ours; every ur_qp_* call is
 * made under ur_engine_qp_lock() (the engine thread runs the same QP), and
 * the engine is kicked after a post or modify with the lock released.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ur_latprof.h"
#include "ur_log.h"
#include "urv.h"

_Static_assert(IBV_QPT_RC == (int)UR_QPT_RC, "qp type");
_Static_assert(IBV_QPT_UC == (int)UR_QPT_UC, "qp type");
_Static_assert(IBV_QPT_UD == (int)UR_QPT_UD, "qp type");
_Static_assert(IBV_QPS_RESET == (int)UR_QPS_RESET, "qp state");
_Static_assert(IBV_QPS_RTS == (int)UR_QPS_RTS, "qp state");
_Static_assert(IBV_QPS_ERR == (int)UR_QPS_ERR, "qp state");
_Static_assert(IBV_QP_STATE == (int)UR_QP_STATE, "mask");
_Static_assert(IBV_QP_AV == (int)UR_QP_AV, "mask");
_Static_assert(IBV_QP_PATH_MTU == (int)UR_QP_PATH_MTU, "mask");
_Static_assert(IBV_QP_SQ_PSN == (int)UR_QP_SQ_PSN, "mask");
_Static_assert(IBV_QP_MAX_DEST_RD_ATOMIC == (int)UR_QP_MAX_DEST_RD_ATOMIC, "mask");
_Static_assert(IBV_QP_DEST_QPN == (int)UR_QP_DEST_QPN, "mask");
_Static_assert(IBV_QP_RATE_LIMIT == (int)UR_QP_RATE_LIMIT, "mask");
_Static_assert(IBV_WR_RDMA_WRITE == (int)UR_WR_RDMA_WRITE, "wr opcode");
_Static_assert(IBV_WR_SEND_WITH_IMM == (int)UR_WR_SEND_WITH_IMM, "wr opcode");
_Static_assert(IBV_WR_ATOMIC_FETCH_AND_ADD == (int)UR_WR_ATOMIC_FETCH_AND_ADD, "wr opcode");
_Static_assert(IBV_WR_SEND_WITH_INV == (int)UR_WR_SEND_WITH_INV, "wr opcode");
_Static_assert(IBV_WR_ATOMIC_WRITE == (int)UR_WR_ATOMIC_WRITE, "wr opcode");
_Static_assert(IBV_SEND_SIGNALED == (int)UR_SEND_SIGNALED, "send flags");
_Static_assert(IBV_SEND_INLINE == (int)UR_SEND_INLINE, "send flags");
_Static_assert(IBV_EVENT_QP_LAST_WQE_REACHED == (int)UR_EVENT_QP_LAST_WQE_REACHED, "event");
_Static_assert(IBV_EVENT_COMM_EST == (int)UR_EVENT_COMM_EST, "event");
/* struct ibv_sge and struct ur_sge are the same shape: cast, no copy. */
_Static_assert(sizeof(struct ibv_sge) == sizeof(struct ur_sge), "sge");
_Static_assert(offsetof(struct ibv_sge, length) == offsetof(struct ur_sge, length), "sge");
_Static_assert(offsetof(struct ibv_sge, lkey) == offsetof(struct ur_sge, lkey), "sge");

static bool is_ours_cq(struct ibv_context *ctx, struct ibv_cq *cq)
{
	return cq && cq->context == ctx;
}

/* The fields every QP sets once the transport's is made (any type). */
static void qp_fill(struct urv_qp *qp, struct ibv_context *context,
		    const struct ibv_qp_init_attr_ex *attr)
{
	qp->uqp.owner = qp;
	qp->qp.context = context;
	qp->qp.qp_context = attr->qp_context;
	qp->qp.handle = qp->uqp.qpn;
	qp->qp.qp_num = qp->uqp.qpn;
	qp->qp.state = IBV_QPS_RESET;
	qp->qp.qp_type = attr->qp_type;
	pthread_mutex_init(&qp->qp.mutex, NULL);
	pthread_cond_init(&qp->qp.cond, NULL);
	qp->sq_sig_all = attr->sq_sig_all ? 1 : 0;
}

/* Undo a QP create that failed: @made once the transport's QP exists. */
static struct ibv_qp *create_failed(struct urv_qp *qp, bool made, int ret)
{
	if (made) {
		urv__qp_ex_fini(qp);
		pthread_cond_destroy(&qp->qp.cond);
		pthread_mutex_destroy(&qp->qp.mutex);
		ur_qp_destroy(&qp->uqp);
	}
	free(qp);
	return urv_err_ptr(ret);
}

/*
 * XRC QPs (IBTA XRC annex; the protocol in ur_qp_create_xrc). An INI
 * (IBV_QPT_XRC_SEND) has a PD, a send queue and its CQ, no receive side;
 * a TGT (IBV_QPT_XRC_RECV) only its XRC domain: no PD, queue or CQ, its
 * receives land in the XRC SRQ each request names.
 */
static struct ibv_qp *create_xrc_qp(struct ibv_context *context,
				    struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS;
	struct urv_context *ctx = to_uctx(context);
	bool ini = attr->qp_type == IBV_QPT_XRC_SEND;
	struct urv_xrcd *xrcd = NULL;
	struct urv_pd *pd = NULL;
	struct ur_qp_caps caps;
	struct urv_qp *qp;
	int ret;

	if (attr->comp_mask & ~known)
		return urv_err_ptr(-EOPNOTSUPP);
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    attr->create_flags)
		return urv_err_ptr(-EOPNOTSUPP);
	if (ini) {
		if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd ||
		    attr->pd->context != context ||
		    !is_ours_cq(context, attr->send_cq) || attr->srq)
			return urv_err_ptr(-EINVAL);
		if (attr->cap.max_send_wr > URV_MAX_QP_WR ||
		    attr->cap.max_send_sge > URV_MAX_SGE ||
		    attr->cap.max_inline_data > URV_MAX_INLINE)
			return urv_err_ptr(-EINVAL);
		if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
		    (attr->send_ops_flags & (IBV_QP_EX_WITH_TSO |
					     IBV_QP_EX_WITH_ATOMIC_WRITE)))
			return urv_err_ptr(-EOPNOTSUPP); /* none in XRC */
		pd = to_upd(attr->pd);
	} else {
		if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) ||
		    !attr->xrcd || attr->xrcd->context != context)
			return urv_err_ptr(-EINVAL);
		xrcd = to_uxrcd(attr->xrcd);
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return urv_err_ptr(-ENOMEM);
	qp->ctx = ctx;
	memset(&caps, 0, sizeof(caps));
	caps.max_send_wr = attr->cap.max_send_wr ? attr->cap.max_send_wr : 1;
	caps.max_send_sge = attr->cap.max_send_sge ? attr->cap.max_send_sge : 1;
	caps.max_recv_sge = URV_MAX_SGE; /* a TGT: any XRC SRQ's WQE */
	caps.max_inline_data = URV_MAX_INLINE;
	ret = ur_qp_create_xrc(ur_engine_dev(ctx->eng), &qp->uqp,
			       ini ? UR_XRC_INI : UR_XRC_TGT,
			       ur_engine_alloc_qpn(ctx->eng), pd ? pd->pdn : 0,
			       &caps, ini ? &to_ucq(attr->send_cq)->ucq : NULL,
			       xrcd ? xrcd->xrcdn : 0);
	if (ret)
		goto err_free;
	qp_fill(qp, context, attr);
	if (ini) {
		qp->qp.pd = attr->pd;
		qp->qp.send_cq = attr->send_cq;
		if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
			urv__qp_ex_init(qp, attr->send_ops_flags);
	}
	qp->xrcd = xrcd;
	qp->eng = ctx->eng;
	qp->port_num = 1;
	ret = ur_engine_qp_add(ctx->eng, &qp->uqp);
	if (ret)
		goto err_destroy;
	attr->cap.max_send_wr = ini ? qp->uqp.caps.max_send_wr : 0;
	attr->cap.max_send_sge = ini ? qp->uqp.caps.max_send_sge : 0;
	attr->cap.max_inline_data = ini ? qp->uqp.caps.max_inline_data : 0;
	attr->cap.max_recv_wr = 0;
	attr->cap.max_recv_sge = 0;
	if (ini) {
		atomic_fetch_add(&to_ucq(attr->send_cq)->nqp, 1);
		atomic_fetch_add(&pd->users, 1);
	} else {
		atomic_fetch_add(&xrcd->users, 1);
	}
	atomic_fetch_add(&ctx->nqp, 1);
	return &qp->qp;

err_destroy:
	return create_failed(qp, true, ret);
err_free:
	return create_failed(qp, false, ret);
}

struct ibv_qp *urv__create_qp_ex(struct ibv_context *context,
				  struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS;
	struct urv_context *ctx;
	struct ur_qp_caps caps;
	struct urv_qp *qp;
	struct urv_pd *pd;
	uint32_t qpn;
	int ret;

	if (!urv__is_our_context(context))
		return urv_err_ptr(-EINVAL);
	ctx = to_uctx(context);
	/* An iWARP device has RC QPs without SRQ (docs/verbs.md "iWARP"). */
	if (urv__dev_is_iwarp(ctx->dev) &&
	    (attr->qp_type != IBV_QPT_RC || attr->srq))
		return urv_err_ptr(-EOPNOTSUPP);
	if (attr->qp_type == IBV_QPT_XRC_SEND ||
	    attr->qp_type == IBV_QPT_XRC_RECV)
		return create_xrc_qp(context, attr);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context != context)
		return urv_err_ptr(-EINVAL);
	if (attr->qp_type == IBV_QPT_RAW_PACKET)
		return urv__raw_create_qp(context, attr);
	if (attr->comp_mask & ~known)
		return urv_err_ptr(-EOPNOTSUPP);
	/* No creation flag (scatter FCS, source QPN, ...) is offered; an
	 * empty set is fine. */
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    attr->create_flags)
		return urv_err_ptr(-EOPNOTSUPP);
	switch (attr->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
		break;
	case IBV_QPT_DRIVER:
		return urv_err_ptr(-EOPNOTSUPP);
	default:
		return urv_err_ptr(-EINVAL);
	}
	if (attr->srq && attr->srq->context != context)
		return urv_err_ptr(-EINVAL);

	if (!is_ours_cq(context, attr->send_cq) ||
	    !is_ours_cq(context, attr->recv_cq))
		return urv_err_ptr(-EINVAL);
	if (attr->cap.max_send_wr > URV_MAX_QP_WR ||
	    (!attr->srq && attr->cap.max_recv_wr > URV_MAX_QP_WR) ||
	    attr->cap.max_send_sge > URV_MAX_SGE ||
	    (!attr->srq && attr->cap.max_recv_sge > URV_MAX_SGE) ||
	    attr->cap.max_inline_data > URV_MAX_INLINE)
		return urv_err_ptr(-EINVAL);
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (attr->send_ops_flags & IBV_QP_EX_WITH_TSO))
		return urv_err_ptr(-EOPNOTSUPP);

	pd = to_upd(attr->pd);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return urv_err_ptr(-ENOMEM);
	qp->ctx = ctx;
	caps.max_send_wr = attr->cap.max_send_wr ? attr->cap.max_send_wr : 1;
	caps.max_recv_wr = attr->cap.max_recv_wr ? attr->cap.max_recv_wr : 1;
	caps.max_send_sge = attr->cap.max_send_sge ? attr->cap.max_send_sge : 1;
	caps.max_recv_sge = attr->cap.max_recv_sge ? attr->cap.max_recv_sge : 1;
	caps.max_inline_data = URV_MAX_INLINE; /* every QP gets the maximum */
	caps.alloc = urv__pd_ring_alloc(pd); /* a parent domain's allocator */

	qpn = ur_engine_alloc_qpn(ctx->eng);
	ret = ur_qp_create_ex(ur_engine_dev(ctx->eng), &qp->uqp, attr->qp_type,
			      qpn, pd->pdn, &caps, &to_ucq(attr->send_cq)->ucq,
			      &to_ucq(attr->recv_cq)->ucq,
			      attr->srq ? &to_usrq(attr->srq)->usrq : NULL);
	if (ret)
		goto err_free;
	qp_fill(qp, context, attr);
	qp->qp.pd = attr->pd;
	qp->qp.send_cq = attr->send_cq;
	qp->qp.recv_cq = attr->recv_cq;
	qp->qp.srq = attr->srq;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		urv__qp_ex_init(qp, attr->send_ops_flags);

	qp->eng = ctx->eng;
	qp->port_num = 1;
	if (urv__dev_is_iwarp(ctx->dev)) {
		ret = urv__iw_qp_init(qp);
		if (ret)
			goto err_destroy;
	}
	ret = ur_engine_qp_add(ctx->eng, &qp->uqp);
	if (ret) {
		urv__iw_qp_fini(qp);
		goto err_destroy;
	}

	/* Report what the QP really has. */
	attr->cap.max_send_wr = qp->uqp.caps.max_send_wr;
	attr->cap.max_recv_wr = qp->uqp.caps.max_recv_wr;
	attr->cap.max_send_sge = qp->uqp.caps.max_send_sge;
	attr->cap.max_recv_sge = qp->uqp.caps.max_recv_sge;
	attr->cap.max_inline_data = qp->uqp.caps.max_inline_data;
	if (attr->srq) {
		attr->cap.max_recv_sge = 0; /* the SRQ's */
		atomic_fetch_add(&to_usrq(attr->srq)->nqp, 1);
	}

	atomic_fetch_add(&to_ucq(attr->send_cq)->nqp, 1);
	atomic_fetch_add(&to_ucq(attr->recv_cq)->nqp, 1);
	atomic_fetch_add(&pd->users, 1);
	atomic_fetch_add(&ctx->nqp, 1);
	return &qp->qp;

err_destroy:
	return create_failed(qp, true, ret);
err_free:
	return create_failed(qp, false, ret);
}

URV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
					struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ex;
	struct ibv_qp *qp;

	if (!pd)
		return urv_err_ptr(-EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	qp = urv__create_qp_ex(pd->context, &ex);
	if (qp)
		qp_init_attr->cap = ex.cap;
	return qp;
}

URV_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct urv_qp *qp = to_uqp(ibqp);

	return qp->qp_ex.wr_start ? &qp->qp_ex : NULL;
}

/* IBTA 9.7.1 / RoCEv2 annex A17: the AV must carry a GRH (the GIDs are the
 * IP addresses). */
int urv__ah_to_path(struct urv_context *ctx, const struct ibv_ah_attr *ah,
		     struct ur_ipudp *p)
{
	struct urv_port *port =
		urv__port(ctx->dev, ah->port_num ? ah->port_num : 1);
	struct ur_ipudp src;

	static atomic_bool told_grh, told_gid, told_sgid;

	if (!ah->is_global) {
		/* What a new user meets first (ibv_rc_pingpong without -g):
		 * say why, once. */
		if (!atomic_exchange(&told_grh, true))
			fprintf(stderr, "uroce: an address without a GRH "
				"(is_global=0) cannot reach a RoCE peer: give "
				"its GID (ibv_*_pingpong -g 0, perftest -x 0)\n");
		return -EINVAL;
	}
	if (!port)
		return -EINVAL; /* no such port */
	if (ah->grh.sgid_index >= port->num_gids) {
		if (!atomic_exchange(&told_gid, true))
			fprintf(stderr, "uroce: GID index %u: %s port %u has %u "
				"GIDs (uroce-devinfo -v lists them)\n",
				ah->grh.sgid_index, ctx->dev->vdev.device.name,
				ah->port_num ? ah->port_num : 1,
				(unsigned)port->num_gids);
		return -EINVAL;
	}
	/* The engine sends from and listens on GID 0's address only (its
	 * socket is bound there): any other source GID would give a path
	 * whose replies reach nobody. Say so instead of timing out later. */
	if (ah->grh.sgid_index != 0) {
		if (!atomic_exchange(&told_sgid, true))
			fprintf(stderr, "uroce: source GID index %u: only GID 0 "
				"is served (set UROCE_IP or UROCE_PORTS to the "
				"address wanted)\n",
				ah->grh.sgid_index);
		return -EOPNOTSUPP;
	}
	memset(p, 0, sizeof(*p));
	memset(&src, 0, sizeof(src));
	urv__gid_to_addr(&ah->grh.dgid, p, true);
	urv__gid_to_addr(&port->gids[ah->grh.sgid_index].gid, &src, false);
	if (src.v6 != p->v6)
		return -EINVAL; /* IPv4 source, IPv6 destination or the reverse */
	memcpy(p->src, src.src, sizeof(p->src));
	p->dport = ctx->udp_port;
	p->sport = 0; /* the transport picks the source port per QP */
	p->tos = ah->grh.traffic_class;
	p->ttl = ah->grh.hop_limit ? ah->grh.hop_limit : 64;
	p->flow_label = ah->grh.flow_label;
	p->ip_frag = 0x4000; /* DF */
	return 0;
}

/* UROCE_LOG=info: the connection steps of a QP, with what the peer is. */
static void log_modify(const struct ibv_qp *ibqp, const struct ibv_qp_attr *a,
		       uint32_t mask, int err)
{
	static const char *const state[] = { "RESET", "INIT", "RTR", "RTS",
					     "SQD", "SQE", "ERR" };
	const char *to = (unsigned int)a->qp_state < 7 ? state[a->qp_state] : "?";
	char gid[INET6_ADDRSTRLEN] = "no GRH";

	if (err) {
		ur_log(UR_LOG_INFO, "QP 0x%x: modify to %s failed: %s",
		       ibqp->qp_num, to, strerror(err));
		return;
	}
	if (a->qp_state == IBV_QPS_RTR) {
		if ((mask & IBV_QP_AV) && a->ah_attr.is_global)
			inet_ntop(AF_INET6, a->ah_attr.grh.dgid.raw, gid, sizeof(gid));
		ur_log(UR_LOG_INFO, "QP 0x%x: RTR: peer QP 0x%x at %s (sgid index %u), "
		       "rq_psn 0x%x, path MTU %u", ibqp->qp_num, a->dest_qp_num,
		       gid, a->ah_attr.grh.sgid_index, a->rq_psn,
		       128u << a->path_mtu);
	} else if (a->qp_state == IBV_QPS_RTS) {
		ur_log(UR_LOG_INFO, "QP 0x%x: RTS: sq_psn 0x%x, timeout %u, "
		       "retry_cnt %u, rnr_retry %u", ibqp->qp_num, a->sq_psn,
		       a->timeout, a->retry_cnt, a->rnr_retry);
	} else {
		ur_log(UR_LOG_INFO, "QP 0x%x: %s", ibqp->qp_num, to);
	}
}

/*
 * IBV_QP_PORT: the QP moves to its port's engine, whose socket and address
 * its packets leave from and arrive at. Only before it has a path (RESET or
 * INIT): nothing is in flight, and its QPN (port 1's slot, which every
 * port's engine claims) stays (docs/ports-classes.md "Ports").
 */
static int qp_set_port(struct urv_qp *qp, unsigned int port_num)
{
	struct ur_engine *e;
	int ret;

	if (port_num == qp->port_num)
		return 0;
	if (qp->uqp.state != UR_QPS_RESET && qp->uqp.state != UR_QPS_INIT)
		return -EINVAL;
	/* An XRC QP is found through port 1's engine (ibv_open_qp, XRC
	 * SRQ numbers): it stays there. */
	if (qp->qp.qp_type == IBV_QPT_XRC_SEND || qp->qp.qp_type == IBV_QPT_XRC_RECV)
		return -EOPNOTSUPP;
	ret = urv__port_engine(qp->ctx, port_num, &e);
	if (ret)
		return ret;
	ur_engine_qp_del(qp->eng, &qp->uqp);
	qp->uqp.dev = ur_engine_dev(e);
	ret = ur_engine_qp_add(e, &qp->uqp);
	if (ret) { /* back where it was */
		qp->uqp.dev = ur_engine_dev(qp->eng);
		if (ur_engine_qp_add(qp->eng, &qp->uqp))
			ur_log(UR_LOG_ERROR, "QP 0x%x: lost its port", qp->qp.qp_num);
		return ret;
	}
	qp->eng = e;
	qp->port_num = (uint8_t)port_num;
	if (qp->qp.send_cq)
		atomic_store(&to_ucq(qp->qp.send_cq)->eng, e);
	if (qp->qp.recv_cq)
		atomic_store(&to_ucq(qp->qp.recv_cq)->eng, e);
	return 0;
}

URV_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			     int attr_mask)
{
	struct urv_qp *qp = to_uqp(ibqp);
	struct ur_qp_attr ua;
	uint32_t mask = (uint32_t)attr_mask;
	int ret;

	if (ibqp->qp_type == IBV_QPT_RAW_PACKET)
		return urv__raw_modify_qp(ibqp, attr, attr_mask);
	memset(&ua, 0, sizeof(ua));
	if (mask & ~(uint32_t)(IBV_QP_RATE_LIMIT * 2 - 1))
		return EINVAL;
	if (mask & (IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE))
		return EINVAL; /* no APM on RoCE */
	ua.qp_state = attr->qp_state;
	ua.cur_qp_state = attr->cur_qp_state;
	ua.qp_access_flags = attr->qp_access_flags;
	if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0)
		return EINVAL;
	if ((mask & IBV_QP_PORT) && !urv__port(qp->ctx->dev, attr->port_num))
		return EINVAL;
	if (mask & IBV_QP_PORT) {
		ret = qp_set_port(qp, attr->port_num);
		if (ret)
			return -ret;
	}
	ua.pkey_index = attr->pkey_index;
	ua.port_num = attr->port_num;
	ua.qkey = attr->qkey;
	if (mask & IBV_QP_AV) {
		/* The path leaves from the QP's port, whatever the AV says
		 * (rdma-core takes the AV's port_num from the QP's port). */
		struct ibv_ah_attr ah = attr->ah_attr;

		ah.port_num = qp->port_num;
		ret = urv__ah_to_path(qp->ctx, &ah, &ua.path);
		if (ret)
			return -ret;
		ua.sl = attr->ah_attr.sl; /* the priority under trust PCP */
	}
	if (mask & IBV_QP_PATH_MTU) {
		if (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > IBV_MTU_4096)
			return EINVAL;
		ua.path_mtu = 128u << attr->path_mtu;
	}
	ua.timeout = attr->timeout;
	ua.retry_cnt = attr->retry_cnt;
	ua.rnr_retry = attr->rnr_retry;
	ua.min_rnr_timer = attr->min_rnr_timer;
	ua.rq_psn = attr->rq_psn;
	ua.sq_psn = attr->sq_psn;
	ua.dest_qp_num = attr->dest_qp_num;
	ua.max_rd_atomic = attr->max_rd_atomic;
	ua.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > URV_MAX_RD_ATOM)
		return EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > URV_MAX_RD_ATOM)
		return EINVAL;
	ua.rate_limit = attr->rate_limit;
	if ((mask & IBV_QP_RATE_LIMIT) && attr->rate_limit &&
	    (attr->rate_limit < URV_PP_RATE_MIN_KBPS ||
	     attr->rate_limit > URV_PP_RATE_MAX_KBPS))
		return EINVAL;
	if ((mask & IBV_QP_CAP) &&
	    (attr->cap.max_send_wr > qp->uqp.caps.max_send_wr ||
	     attr->cap.max_recv_wr > qp->uqp.caps.max_recv_wr))
		return EINVAL; /* resizing a QP is not supported */

	ur_engine_qp_lock(&qp->uqp);
	ret = ur_qp_modify(&qp->uqp, &ua, mask & ~(uint32_t)IBV_QP_CAP, ur_now());
	ur_engine_qp_unlock(&qp->uqp);
	if ((mask & IBV_QP_STATE) && ur_log_on(UR_LOG_INFO))
		log_modify(ibqp, attr, mask, -ret);
	if (ret)
		return -ret;
	ur_engine_qp_kick(qp->eng, &qp->uqp);
	if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR &&
	    (mask & IBV_QP_AV) && (mask & IBV_QP_DEST_QPN))
		ur_engine_peer_hint(qp->eng, &ua.path, ua.dest_qp_num);
	if (mask & IBV_QP_STATE)
		ibqp->state = attr->qp_state;
	/* A reset QP starts afresh: its old completions (flushes) leave its
	 * CQs, as the mlx4/mlx5 providers do. */
	if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET) {
		if (ibqp->send_cq) /* none on an XRC TGT */
			ur_cq_clean(&to_ucq(ibqp->send_cq)->ucq, ibqp->qp_num);
		if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
			ur_cq_clean(&to_ucq(ibqp->recv_cq)->ucq, ibqp->qp_num);
	}
	return 0;
}

URV_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			    int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct urv_qp *qp = to_uqp(ibqp);
	struct urv_device *dev;
	struct ur_qp_attr ua;
	int idx;

	if (ibqp->qp_type == IBV_QPT_RAW_PACKET)
		return urv__raw_query_qp(ibqp, attr, init_attr);
	dev = qp->ctx->dev;
	memset(&ua, 0, sizeof(ua));
	ur_engine_qp_lock(&qp->uqp);
	ur_qp_query(&qp->uqp, &ua);
	ur_engine_qp_unlock(&qp->uqp);

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum ibv_qp_state)ua.qp_state;
	attr->cur_qp_state = (enum ibv_qp_state)ua.qp_state;
	attr->path_mtu = ua.path_mtu >= 4096 ? IBV_MTU_4096 :
			 ua.path_mtu >= 2048 ? IBV_MTU_2048 :
			 ua.path_mtu >= 1024 ? IBV_MTU_1024 :
			 ua.path_mtu >= 512 ? IBV_MTU_512 : IBV_MTU_256;
	attr->path_mig_state = IBV_MIG_MIGRATED;
	attr->qkey = ua.qkey;
	attr->rq_psn = ua.rq_psn;
	attr->sq_psn = ua.sq_psn;
	attr->dest_qp_num = ua.dest_qp_num;
	attr->qp_access_flags = ua.qp_access_flags;
	attr->cap.max_send_wr = qp->uqp.caps.max_send_wr;
	attr->cap.max_recv_wr = qp->uqp.caps.max_recv_wr;
	attr->cap.max_send_sge = qp->uqp.caps.max_send_sge;
	attr->cap.max_recv_sge = qp->uqp.caps.max_recv_sge;
	attr->cap.max_inline_data = qp->uqp.caps.max_inline_data;
	if (ibqp->qp_type != IBV_QPT_UD) {
		struct ibv_ah_attr *ah = &attr->ah_attr;

		ah->is_global = 1;
		ah->port_num = qp->port_num;
		ah->grh.hop_limit = ua.path.ttl;
		ah->grh.traffic_class = ua.path.tos;
		ah->sl = ua.sl;
		ah->grh.flow_label = ua.path.flow_label;
		urv__gid_from_ip(&ah->grh.dgid, ua.path.dst, ua.path.v6);
		idx = urv__find_gid(&dev->ports[qp->port_num - 1], ua.path.src,
				    ua.path.v6);
		ah->grh.sgid_index = idx < 0 ? 0 : (uint8_t)idx;
	}
	attr->pkey_index = 0;
	attr->en_sqd_async_notify = 0;
	attr->sq_draining = ua.sq_draining;
	attr->max_rd_atomic = ua.max_rd_atomic;
	attr->max_dest_rd_atomic = ua.max_dest_rd_atomic;
	attr->min_rnr_timer = ua.min_rnr_timer;
	attr->port_num = qp->port_num;
	attr->timeout = ua.timeout;
	attr->retry_cnt = ua.retry_cnt;
	attr->rnr_retry = ua.rnr_retry;
	attr->rate_limit = ua.rate_limit;

	if (init_attr) {
		memset(init_attr, 0, sizeof(*init_attr));
		init_attr->qp_context = ibqp->qp_context;
		init_attr->send_cq = ibqp->send_cq;
		init_attr->recv_cq = ibqp->recv_cq;
		init_attr->srq = ibqp->srq;
		init_attr->cap = attr->cap;
		init_attr->qp_type = ibqp->qp_type;
		init_attr->sq_sig_all = (int)qp->sq_sig_all;
	}
	return 0;
}

static bool ev_is_qp(struct urv_event *e, void *qp)
{
	return e->ev.event_type != IBV_EVENT_CQ_ERR &&
	       e->ev.event_type != IBV_EVENT_DEVICE_FATAL &&
	       e->ev.event_type != IBV_EVENT_PORT_ACTIVE &&
	       e->ev.event_type != IBV_EVENT_PORT_ERR &&
	       e->ev.element.qp == qp;
}

URV_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct urv_qp *qp = to_uqp(ibqp);
	struct urv_context *ctx;

	if (ibqp->qp_type == IBV_QPT_RAW_PACKET)
		return urv__raw_destroy_qp(ibqp);
	/* An XRC TGT opened again (ibv_open_qp): the last handle ends it. */
	if (atomic_load(&qp->opens)) {
		atomic_fetch_sub(&qp->opens, 1);
		return 0;
	}
	ctx = qp->ctx;
	/* After this the engine thread no longer touches the QP. */
	ur_engine_qp_del(qp->eng, &qp->uqp);
	urv__evq_drop(&ctx->async, ev_is_qp, ibqp);
	pthread_mutex_lock(&ibqp->mutex);
	while (ibqp->events_completed != qp->async_events_reported)
		pthread_cond_wait(&ibqp->cond, &ibqp->mutex);
	pthread_mutex_unlock(&ibqp->mutex);

	urv__iw_qp_fini(qp);
	ur_qp_destroy(&qp->uqp);
	if (ibqp->send_cq) /* none on an XRC TGT */
		atomic_fetch_sub(&to_ucq(ibqp->send_cq)->nqp, 1);
	if (ibqp->recv_cq) /* nor on an XRC INI */
		atomic_fetch_sub(&to_ucq(ibqp->recv_cq)->nqp, 1);
	if (ibqp->srq)
		atomic_fetch_sub(&to_usrq(ibqp->srq)->nqp, 1);
	if (ibqp->pd)
		urv__pd_put(to_upd(ibqp->pd));
	if (qp->xrcd)
		atomic_fetch_sub(&qp->xrcd->users, 1);
	atomic_fetch_sub(&ctx->nqp, 1);
	urv__qp_ex_fini(qp);
	pthread_cond_destroy(&ibqp->cond);
	pthread_mutex_destroy(&ibqp->mutex);
	free(qp);
	return 0;
}

/* ---- posting ------------------------------------------------------------- */

static int send_wr_convert(struct urv_qp *qp, const struct ibv_send_wr *wr,
			   struct ur_send_wr *u)
{
	memset(u, 0, sizeof(*u));
	if (wr->num_sge < 0 || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	u->wr_id = wr->wr_id;
	u->opcode = wr->opcode;
	u->flags = wr->send_flags | (qp->sq_sig_all ? IBV_SEND_SIGNALED : 0);
	u->imm_data = wr->imm_data; /* or invalidate_rkey: same union */
	u->sg_list = (const struct ur_sge *)wr->sg_list;
	u->num_sge = (uint32_t)wr->num_sge;
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_WRITE:
		u->remote_addr = wr->wr.rdma.remote_addr;
		u->rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		u->remote_addr = wr->wr.atomic.remote_addr;
		u->rkey = wr->wr.atomic.rkey;
		u->compare_add = wr->wr.atomic.compare_add;
		u->swap = wr->wr.atomic.swap;
		break;
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
		break;
	case IBV_WR_LOCAL_INV: /* imm_data is invalidate_rkey */
		u->num_sge = 0;
		return 0;
	case IBV_WR_BIND_MW:
		u->num_sge = 0;
		return urv__bind_wr(&qp->qp, wr->bind_mw.mw, wr->bind_mw.rkey,
				     &wr->bind_mw.bind_info, u);
	default:
		return -EINVAL; /* TSO, DRIVER1, FLUSH */
	}
	if (qp->qp.qp_type == IBV_QPT_XRC_SEND)
		u->xrc_srqn = wr->qp_type.xrc.remote_srqn;
	if (qp->qp.qp_type == IBV_QPT_UD) {
		if (!wr->wr.ud.ah)
			return -EINVAL;
		/* IBV_DEVICE_UD_AV_PORT_ENFORCE: the AV's port is the QP's. */
		if (to_uah(wr->wr.ud.ah)->port_num != qp->port_num)
			return -EINVAL;
		u->ah = &to_uah(wr->wr.ud.ah)->uah;
		u->remote_qpn = wr->wr.ud.remote_qpn;
		u->remote_qkey = wr->wr.ud.remote_qkey;
	}
	return 0;
}

int urv__post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad)
{
	struct urv_qp *qp = to_uqp(ibqp);
	struct ur_send_wr u;
	uint64_t now;
	int ret = 0;

	if (ibqp->qp_type == IBV_QPT_RAW_PACKET)
		return urv__raw_post_send(ibqp, wr, bad);
	UR_LP_MARK(UR_LP_POST);
	ur_engine_qp_lock(&qp->uqp);
	now = ur_now(); /* after a wait for the lock: timers armed from it */
	for (; wr; wr = wr->next) {
		ret = send_wr_convert(qp, wr, &u);
		if (!ret)
			ret = ur_qp_post_send(&qp->uqp, &u, now);
		if (ret) {
			*bad = wr;
			break;
		}
	}
	ur_engine_qp_post_unlock(qp->eng, &qp->uqp, true, now);
	return -ret;
}

int urv__post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad)
{
	struct urv_qp *qp = to_uqp(ibqp);
	struct ur_recv_wr u;
	int ret = 0;

	if (ibqp->qp_type == IBV_QPT_RAW_PACKET)
		return urv__raw_post_recv(ibqp, wr, bad);
	ur_engine_qp_lock(&qp->uqp);
	for (; wr; wr = wr->next) {
		ret = urv_recv_wr(wr, &u);
		if (!ret)
			ret = ur_qp_post_recv(&qp->uqp, &u);
		if (ret) {
			*bad = wr;
			break;
		}
	}
	ur_engine_qp_post_unlock(qp->eng, &qp->uqp, false, 0);
	return -ret;
}

// SPDX-License-Identifier: MIT
/*
 * Shared receive queues: ibv_create_srq(_ex), modify, query, destroy and
 * post_srq_recv. The ring and its lock are the transport's struct ur_srq;
 * QPs created with init_attr.srq take their receive WQEs from it
 * (ur_qp_create_ex). SRQ_LIMIT_REACHED reaches us through the engine's
 * qp_event with the QP that took the WQE (events.c maps it to the SRQ).
 * An XRC SRQ (IBV_SRQT_XRC) belongs to an XRC domain and has its own CQ
 * and a number in the engine's table, by which the XRCETH of a request to
 * an XRC TGT QP of that domain names it (xrc.c, ur_engine_srq_add).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "urv.h"

_Static_assert(IBV_SRQ_MAX_WR == (int)UR_SRQ_MAX_WR, "srq mask");
_Static_assert(IBV_SRQ_LIMIT == (int)UR_SRQ_LIMIT, "srq mask");
_Static_assert(IBV_EVENT_SRQ_LIMIT_REACHED == (int)UR_EVENT_SRQ_LIMIT_REACHED,
	       "event");

static struct ibv_srq *create_srq(struct ibv_context *context,
				  struct ibv_pd *ibpd, struct ibv_srq_attr *a,
				  void *srq_context, struct ibv_xrcd *xrcd,
				  struct ibv_cq *cq)
{
	struct urv_srq *srq;
	struct urv_pd *pd;
	int ret;

	if (!urv__is_our_context(context) || !ibpd || ibpd->context != context)
		return urv_err_ptr(-EINVAL);
	if (urv__dev_is_iwarp(to_uctx(context)->dev))
		return urv_err_ptr(-EOPNOTSUPP); /* max_srq 0 (docs/verbs.md "iWARP") */
	if (!a->max_wr || a->max_wr > URV_MAX_SRQ_WR ||
	    a->max_sge > URV_MAX_SGE || a->srq_limit > a->max_wr)
		return urv_err_ptr(-EINVAL);
	pd = to_upd(ibpd);
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return urv_err_ptr(-ENOMEM);
	ret = ur_srq_init_alloc(&srq->usrq, pd->pdn, a->max_wr,
				a->max_sge ? a->max_sge : 1, a->srq_limit,
				urv__pd_ring_alloc(pd));
	if (ret) {
		free(srq);
		return urv_err_ptr(ret);
	}
	srq->usrq.owner = srq;
	srq->ctx = to_uctx(context);
	if (xrcd) {
		srq->xrcd = to_uxrcd(xrcd);
		srq->cq = to_ucq(cq);
		srq->usrq.xrcd = srq->xrcd->xrcdn;
		srq->usrq.cq = &srq->cq->ucq;
		ret = ur_engine_srq_add(srq->ctx->eng, &srq->usrq);
		if (ret) {
			ur_srq_fini(&srq->usrq);
			free(srq);
			return urv_err_ptr(ret);
		}
		atomic_fetch_add(&srq->xrcd->users, 1);
		atomic_fetch_add(&srq->cq->nqp, 1);
	}
	srq->srq.context = context;
	srq->srq.srq_context = srq_context;
	srq->srq.pd = ibpd;
	srq->srq.handle = (uint32_t)(uintptr_t)srq;
	pthread_mutex_init(&srq->srq.mutex, NULL);
	pthread_cond_init(&srq->srq.cond, NULL);
	a->max_wr = srq->usrq.max_wr;
	a->max_sge = srq->usrq.max_sge;
	atomic_fetch_add(&pd->users, 1);
	return &srq->srq;
}

URV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
					  struct ibv_srq_init_attr *init)
{
	if (!pd || !init)
		return urv_err_ptr(-EINVAL);
	return create_srq(pd->context, pd, &init->attr, init->srq_context,
			  NULL, NULL);
}

/* verbs_context.create_srq_ex: ibv_create_srq_ex() calls ibv_create_srq()
 * itself for the plain PD(+TYPE BASIC) case; this handles the rest. */
struct ibv_srq *urv__create_srq_ex(struct ibv_context *context,
				    struct ibv_srq_init_attr_ex *init)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE |
			       IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_XRCD;
	bool xrc;

	if (!init || !(init->comp_mask & IBV_SRQ_INIT_ATTR_PD))
		return urv_err_ptr(-EINVAL);
	if ((init->comp_mask & ~known) ||
	    ((init->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	     init->srq_type != IBV_SRQT_BASIC &&
	     init->srq_type != IBV_SRQT_XRC))
		return urv_err_ptr(-EOPNOTSUPP); /* tag matching */
	xrc = (init->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	      init->srq_type == IBV_SRQT_XRC;
	if (!xrc)
		return create_srq(context, init->pd, &init->attr,
				  init->srq_context, NULL, NULL);
	/* An XRC SRQ needs its domain and the CQ its receives complete on. */
	if (!(init->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !init->xrcd ||
	    init->xrcd->context != context ||
	    !(init->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !init->cq ||
	    init->cq->context != context)
		return urv_err_ptr(-EINVAL);
	return create_srq(context, init->pd, &init->attr, init->srq_context,
			  init->xrcd, init->cq);
}

URV_EXPORT int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
			      int mask)
{
	struct urv_srq *srq = to_usrq(ibsrq);

	if (!attr || (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)))
		return EINVAL;
	if ((mask & IBV_SRQ_MAX_WR) && attr->max_wr > URV_MAX_SRQ_WR)
		return EINVAL;
	return -ur_srq_modify(&srq->usrq, attr->max_wr, attr->srq_limit,
			      (uint32_t)mask);
}

URV_EXPORT int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct urv_srq *srq = to_usrq(ibsrq);

	if (!attr)
		return EINVAL;
	attr->max_wr = srq->usrq.max_wr;
	attr->max_sge = srq->usrq.max_sge;
	attr->srq_limit = srq->usrq.limit;
	return 0;
}

static bool ev_is_srq(struct urv_event *e, void *srq)
{
	return (e->ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED ||
		e->ev.event_type == IBV_EVENT_SRQ_ERR) &&
	       e->ev.element.srq == srq;
}

URV_EXPORT int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct urv_srq *srq = to_usrq(ibsrq);

	if (atomic_load(&srq->nqp))
		return EBUSY;
	if (srq->xrcd)
		ur_engine_srq_del(srq->ctx->eng, &srq->usrq);
	urv__evq_drop(&srq->ctx->async, ev_is_srq, ibsrq);
	pthread_mutex_lock(&ibsrq->mutex);
	while (ibsrq->events_completed != srq->async_events_reported)
		pthread_cond_wait(&ibsrq->cond, &ibsrq->mutex);
	pthread_mutex_unlock(&ibsrq->mutex);
	ur_srq_fini(&srq->usrq);
	if (srq->xrcd) {
		atomic_fetch_sub(&srq->xrcd->users, 1);
		atomic_fetch_sub(&srq->cq->nqp, 1);
	}
	urv__pd_put(to_upd(ibsrq->pd));
	pthread_cond_destroy(&ibsrq->cond);
	pthread_mutex_destroy(&ibsrq->mutex);
	free(srq);
	return 0;
}

int urv__post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad)
{
	struct urv_srq *srq = to_usrq(ibsrq);
	struct ur_recv_wr u;
	int ret = 0;

	for (; wr; wr = wr->next) {
		ret = urv_recv_wr(wr, &u);
		if (!ret)
			ret = ur_srq_post_recv(&srq->usrq, &u);
		if (ret) {
			*bad = wr;
			break;
		}
	}
	return -ret;
}

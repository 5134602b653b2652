// SPDX-License-Identifier: MIT
/*
 * Shared receive queues (IBTA 10.2.9, 11.2.3, 11.6.2 limit event).
 *
 * The SRQ is a ring of receive WQEs with its own spinlock, because the QPs
 * that share it are driven from different threads. A QP attached to an SRQ
 * has a one-slot private receive queue; when a SEND needs a WQE and that
 * slot is empty, ur__rq_ready() moves the SRQ's head WQE into it. From
 * there the responder, UD receive and flush code treat it like any RQ WQE,
 * so a multi-packet message keeps the WQE it started with, and a QP that
 * enters ERR flushes only the WQE it took (the rest stay in the SRQ).
 */
#include <stdlib.h>
#include <string.h>

#include "ur_qp_priv.h"

struct ur_srq_priv {
	struct ur_rwqe *rq;   /* max_wr */
	struct ur_qsge *sge;  /* max_wr * max_sge */
	const struct ur_alloc *alloc;
	bool rq_custom, sge_custom; /* from alloc */
};

static void srq_lock(struct ur_srq *srq)
{
	while (atomic_flag_test_and_set_explicit(&srq->lock,
						 memory_order_acquire))
		;
}

static void srq_unlock(struct ur_srq *srq)
{
	atomic_flag_clear_explicit(&srq->lock, memory_order_release);
}

static void srq_priv_free(struct ur_srq_priv *p)
{
	if (!p)
		return;
	ur__ring_free(p->alloc, p->sge, UR_RING_SRQ, p->sge_custom);
	ur__ring_free(p->alloc, p->rq, UR_RING_SRQ, p->rq_custom);
	free(p);
}

static struct ur_srq_priv *srq_priv_alloc(uint32_t max_wr, uint32_t max_sge,
					  const struct ur_alloc *alloc)
{
	struct ur_srq_priv *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->alloc = alloc;
	p->rq = ur__ring_alloc(alloc, (size_t)max_wr * sizeof(*p->rq),
			       UR_RING_SRQ, &p->rq_custom);
	p->sge = ur__ring_alloc(alloc,
				(size_t)max_wr * max_sge * sizeof(*p->sge),
				UR_RING_SRQ, &p->sge_custom);
	if (!p->rq || !p->sge) {
		srq_priv_free(p);
		return NULL;
	}
	return p;
}

int ur_srq_init(struct ur_srq *srq, uint32_t pdn, uint32_t max_wr,
		uint32_t max_sge, uint32_t limit)
{
	return ur_srq_init_alloc(srq, pdn, max_wr, max_sge, limit, NULL);
}

int ur_srq_init_alloc(struct ur_srq *srq, uint32_t pdn, uint32_t max_wr,
		      uint32_t max_sge, uint32_t limit,
		      const struct ur_alloc *alloc)
{
	if (!max_wr || limit > max_wr)
		return -EINVAL;
	memset(srq, 0, sizeof(*srq));
	atomic_flag_clear(&srq->lock);
	srq->max_wr = max_wr;
	srq->max_sge = max_sge ? max_sge : 1;
	srq->limit = limit;
	srq->pdn = pdn;
	srq->alloc = alloc;
	srq->priv = srq_priv_alloc(srq->max_wr, srq->max_sge, alloc);
	return srq->priv ? 0 : -ENOMEM;
}

void ur_srq_fini(struct ur_srq *srq)
{
	srq_priv_free(srq->priv);
	srq->priv = NULL;
}

int ur_srq_post_recv(struct ur_srq *srq, const struct ur_recv_wr *wr)
{
	struct ur_rwqe *rwqe;
	struct ur_qsge *sge;
	uint64_t len = 0;
	uint32_t slot;

	if (wr->num_sge > srq->max_sge || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	for (uint32_t i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > UINT32_MAX)
		return -EINVAL;
	srq_lock(srq);
	if (srq->tail - srq->head >= srq->max_wr) {
		srq_unlock(srq);
		return -ENOMEM;
	}
	slot = srq->tail % srq->max_wr;
	rwqe = &srq->priv->rq[slot];
	sge = &srq->priv->sge[(size_t)slot * srq->max_sge];
	for (uint32_t i = 0; i < wr->num_sge; i++)
		sge[i] = (struct ur_qsge){ .addr = wr->sg_list[i].addr,
					   .length = wr->sg_list[i].length,
					   .lkey = wr->sg_list[i].lkey };
	rwqe->wr_id = wr->wr_id;
	rwqe->num_sge = wr->num_sge;
	rwqe->length = (uint32_t)len;
	srq->tail++;
	srq_unlock(srq);
	return 0;
}

/* Resize to @max_wr slots keeping the queued WQEs in order. */
static int srq_resize(struct ur_srq *srq, uint32_t max_wr)
{
	struct ur_srq_priv *n, *o;
	uint32_t count;

	n = srq_priv_alloc(max_wr, srq->max_sge, srq->alloc);
	if (!n)
		return -ENOMEM;
	srq_lock(srq);
	count = srq->tail - srq->head;
	if (max_wr < count || max_wr < srq->limit) {
		srq_unlock(srq);
		srq_priv_free(n);
		return -EINVAL;
	}
	o = srq->priv;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t from = (srq->head + i) % srq->max_wr;

		n->rq[i] = o->rq[from];
		memcpy(&n->sge[(size_t)i * srq->max_sge],
		       &o->sge[(size_t)from * srq->max_sge],
		       srq->max_sge * sizeof(*n->sge));
	}
	srq->priv = n;
	srq->head = 0;
	srq->tail = count;
	srq->max_wr = max_wr;
	srq_unlock(srq);
	srq_priv_free(o);
	return 0;
}

int ur_srq_modify(struct ur_srq *srq, uint32_t max_wr, uint32_t limit,
		  uint32_t mask)
{
	int rc;

	if (mask & ~(uint32_t)(UR_SRQ_MAX_WR | UR_SRQ_LIMIT))
		return -EINVAL;
	if ((mask & UR_SRQ_MAX_WR) && !max_wr)
		return -EINVAL;
	if ((mask & UR_SRQ_LIMIT) &&
	    limit > ((mask & UR_SRQ_MAX_WR) ? max_wr : srq->max_wr))
		return -EINVAL;
	if ((mask & UR_SRQ_MAX_WR) && max_wr != srq->max_wr) {
		rc = srq_resize(srq, max_wr);
		if (rc)
			return rc;
	}
	if (mask & UR_SRQ_LIMIT) {
		srq_lock(srq);
		srq->limit = limit;
		srq_unlock(srq);
	}
	return 0;
}

uint32_t ur_srq_count(struct ur_srq *srq)
{
	uint32_t n;

	srq_lock(srq);
	n = srq->tail - srq->head;
	srq_unlock(srq);
	return n;
}

bool ur__rq_ready(struct ur_qp *qp)
{
	struct ur_qp_priv *p = qp->priv;
	struct ur_srq *srq = qp->srq;
	struct ur_rwqe *from;
	uint32_t slot;
	bool limit_hit = false;

	if (p->rq_head != p->rq_tail)
		return true;
	if (!srq)
		return false;
	srq_lock(srq);
	if (srq->head == srq->tail) {
		srq_unlock(srq);
		return false;
	}
	slot = srq->head % srq->max_wr;
	from = &srq->priv->rq[slot];
	*ur_rwqe_at(qp, p->rq_tail) = *from;
	memcpy(ur_rwqe_sge(qp, p->rq_tail),
	       &srq->priv->sge[(size_t)slot * srq->max_sge],
	       from->num_sge * sizeof(struct ur_qsge));
	srq->head++;
	/* 11.6.2 (C11-?): the limit fires once, then must be re-armed. */
	if (srq->limit && srq->tail - srq->head < srq->limit) {
		srq->limit = 0;
		limit_hit = true;
	}
	srq_unlock(srq);
	p->rq_tail++;
	if (limit_hit && qp->dev->ops->qp_event)
		qp->dev->ops->qp_event(qp->dev->host, qp,
				       UR_EVENT_SRQ_LIMIT_REACHED);
	return true;
}

// SPDX-License-Identifier: MIT
/*
 * The completion queue ring. Producers are the QPs attached to the CQ (one
 * host lock per QP, so two QPs may push at once); consumers poll from any
 * thread. A tiny spinlock keeps the ring consistent.
 *
 * Notification (IBTA 11.4.2.2, ibv_req_notify_cq): one cq_event per arm;
 * a solicited-only arm fires on a solicited or an unsuccessful completion.
 * Overflow (11.4.2.1) is a CQ error: report it once through qp_event with
 * the QP that overflowed and drop the entry.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ur_qp_priv.h"

static void cq_lock(struct ur_cq *cq)
{
	while (atomic_flag_test_and_set_explicit(&cq->lock,
						 memory_order_acquire))
		;
}

static void cq_unlock(struct ur_cq *cq)
{
	atomic_flag_clear_explicit(&cq->lock, memory_order_release);
}

int ur_cq_init_alloc(struct ur_cq *cq, uint32_t cqe,
		     const struct ur_alloc *alloc)
{
	memset(cq, 0, sizeof(*cq));
	atomic_flag_clear(&cq->lock);
	if (!cqe)
		return -EINVAL;
	cq->alloc = alloc;
	cq->ring = ur__ring_alloc(alloc, (size_t)cqe * sizeof(*cq->ring),
				  UR_RING_CQ, &cq->ring_custom);
	if (!cq->ring)
		return -ENOMEM;
	cq->cqe = cqe;
	return 0;
}

int ur_cq_init(struct ur_cq *cq, uint32_t cqe)
{
	return ur_cq_init_alloc(cq, cqe, NULL);
}

void ur_cq_fini(struct ur_cq *cq)
{
	ur__ring_free(cq->alloc, cq->ring, UR_RING_CQ, cq->ring_custom);
	cq->ring = NULL;
	cq->cqe = 0;
}

int ur_cq_resize(struct ur_cq *cq, uint32_t cqe)
{
	struct ur_cqe *ring, *old;
	bool custom, old_custom;
	uint32_t n;

	if (!cqe)
		return -EINVAL;
	ring = ur__ring_alloc(cq->alloc, (size_t)cqe * sizeof(*ring),
			      UR_RING_CQ, &custom);
	if (!ring)
		return -ENOMEM;
	cq_lock(cq);
	n = cq->tail - cq->head;
	if (n > cqe) {
		cq_unlock(cq);
		ur__ring_free(cq->alloc, ring, UR_RING_CQ, custom);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < n; i++)
		ring[i] = cq->ring[(cq->head + i) % cq->cqe];
	old = cq->ring;
	old_custom = cq->ring_custom;
	cq->ring = ring;
	cq->ring_custom = custom;
	cq->cqe = cqe;
	cq->head = 0;
	cq->tail = n;
	cq_unlock(cq);
	ur__ring_free(cq->alloc, old, UR_RING_CQ, old_custom);
	return 0;
}

int ur_cq_clean(struct ur_cq *cq, uint32_t qpn)
{
	uint32_t n, kept = 0;

	cq_lock(cq);
	n = cq->tail - cq->head;
	for (uint32_t i = 0; i < n; i++) {
		struct ur_cqe *e = &cq->ring[(cq->head + i) % cq->cqe];

		if (e->qp_num != qpn)
			cq->ring[(cq->head + kept++) % cq->cqe] = *e;
	}
	cq->tail = cq->head + kept;
	cq_unlock(cq);
	return (int)(n - kept);
}

int ur_cq_poll(struct ur_cq *cq, struct ur_cqe *out, int n)
{
	int got = 0;

	/* An empty ring is seen without the lock: a thread spinning on its
	 * CQ otherwise took it at every turn, and the producer (the engine
	 * thread or another poller delivering the ACK it waits for) spun on
	 * it behind the spinner (ur__cq_push and cq_poll_raw: 5.5 % of a
	 * spinning 64-byte ib_write_bw requester). An entry pushed meanwhile
	 * is found at the next poll. */
	if (!ur_cq_nonempty(cq))
		return 0;
	cq_lock(cq);
	while (got < n && cq->head != cq->tail) {
		out[got++] = cq->ring[cq->head % cq->cqe];
		cq->head++;
	}
	cq_unlock(cq);
	return got;
}

bool ur_cq_nonempty(const struct ur_cq *cq)
{
	return __atomic_load_n(&cq->tail, __ATOMIC_RELAXED) !=
	       __atomic_load_n(&cq->head, __ATOMIC_RELAXED);
}

void ur_cq_arm(struct ur_cq *cq, bool solicited_only)
{
	cq_lock(cq);
	if (cq->armed)
		cq->armed_solicited = cq->armed_solicited && solicited_only;
	else
		cq->armed_solicited = solicited_only;
	cq->armed = true;
	cq_unlock(cq);
}

int ur_cq_add(struct ur_cq *cq, const struct ur_cqe *e, bool *fire)
{
	int ret = 0;

	*fire = false;
	cq_lock(cq);
	if (cq->tail - cq->head >= cq->cqe) {
		cq->overflow = true;
		ret = -ENOSPC;
	} else {
		cq->ring[cq->tail % cq->cqe] = *e;
		cq->tail++;
		if (cq->armed && (!cq->armed_solicited ||
				  e->status != UR_WC_SUCCESS)) {
			cq->armed = false;
			*fire = true;
		}
	}
	cq_unlock(cq);
	return ret;
}

/* Add one completion; may call ops->cq_event or ops->qp_event. */
void ur__cq_push(struct ur_qp *qp, struct ur_cq *cq, const struct ur_cqe *e,
		  bool solicited)
{
	const struct ur_dev_ops *ops = qp->dev->ops;
	bool fire = false, overflow = false, dropped = false;

	if (!cq)
		return;
	cq_lock(cq);
	if (cq->tail - cq->head >= cq->cqe) {
		overflow = !cq->overflow;
		cq->overflow = true;
		dropped = true;
	} else {
		cq->ring[cq->tail % cq->cqe] = *e;
		cq->tail++;
		if (cq->armed && (!cq->armed_solicited || solicited ||
				  e->status != UR_WC_SUCCESS)) {
			cq->armed = false;
			fire = true;
		}
	}
	cq_unlock(cq);
	if (dropped)
		qp->dev->cnt.cq_overflow++;
	if (overflow && ops->qp_event)
		ops->qp_event(qp->dev->host, qp, UR_EVENT_CQ_ERR);
	if (fire && ops->cq_event)
		ops->cq_event(qp->dev->host, cq);
}

static const char *const wc_status_names[] = {
	[UR_WC_SUCCESS] = "success",
	[UR_WC_LOC_LEN_ERR] = "local length error",
	[UR_WC_LOC_QP_OP_ERR] = "local QP operation error",
	[UR_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
	[UR_WC_LOC_PROT_ERR] = "local protection error",
	[UR_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
	[UR_WC_MW_BIND_ERR] = "memory management operation error",
	[UR_WC_BAD_RESP_ERR] = "bad response error",
	[UR_WC_LOC_ACCESS_ERR] = "local access error",
	[UR_WC_REM_INV_REQ_ERR] = "remote invalid request error",
	[UR_WC_REM_ACCESS_ERR] = "remote access error",
	[UR_WC_REM_OP_ERR] = "remote operation error",
	[UR_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
	[UR_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
	[UR_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
	[UR_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
	[UR_WC_REM_ABORT_ERR] = "aborted error",
	[UR_WC_INV_EECN_ERR] = "invalid EE context number",
	[UR_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
	[UR_WC_FATAL_ERR] = "fatal error",
	[UR_WC_RESP_TIMEOUT_ERR] = "response timeout error",
	[UR_WC_GENERAL_ERR] = "general error",
	[UR_WC_TM_ERR] = "TM error",
	[UR_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
};

const char *ur_wc_status_name(uint32_t status)
{
	return status < sizeof(wc_status_names) / sizeof(wc_status_names[0])
		       ? wc_status_names[status]
		       : "unknown";
}

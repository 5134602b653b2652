// SPDX-License-Identifier: MIT
/*
 * Completion queues: ibv_create_cq / ibv_create_cq_ex, polling (both the
 * classic ibv_poll_cq and the start/next/end_poll iterator), notification.
 *
 * The ring is the transport's struct ur_cq (own spinlock, so polling is
 * thread-safe). An empty poll drives the engine once from the caller's
 * thread (ur_engine_poll) and looks again, so busy-polling applications
 * make progress without waiting for the engine thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ur_latprof.h"
#include "ur_log.h"
#include "urv.h"

_Static_assert(IBV_WC_SUCCESS == (int)UR_WC_SUCCESS, "wc status");
_Static_assert(IBV_WC_WR_FLUSH_ERR == (int)UR_WC_WR_FLUSH_ERR, "wc status");
_Static_assert(IBV_WC_RETRY_EXC_ERR == (int)UR_WC_RETRY_EXC_ERR, "wc status");
_Static_assert(IBV_WC_RNR_RETRY_EXC_ERR == (int)UR_WC_RNR_RETRY_EXC_ERR, "wc status");
_Static_assert(IBV_WC_REM_ACCESS_ERR == (int)UR_WC_REM_ACCESS_ERR, "wc status");
_Static_assert(IBV_WC_GENERAL_ERR == (int)UR_WC_GENERAL_ERR, "wc status");
_Static_assert(IBV_WC_TM_RNDV_INCOMPLETE == (int)UR_WC_TM_RNDV_INCOMPLETE, "wc status");
_Static_assert(IBV_WC_SEND == (int)UR_WC_SEND, "wc opcode");
_Static_assert(IBV_WC_RDMA_WRITE == (int)UR_WC_RDMA_WRITE, "wc opcode");
_Static_assert(IBV_WC_RDMA_READ == (int)UR_WC_RDMA_READ, "wc opcode");
_Static_assert(IBV_WC_COMP_SWAP == (int)UR_WC_COMP_SWAP, "wc opcode");
_Static_assert(IBV_WC_FETCH_ADD == (int)UR_WC_FETCH_ADD, "wc opcode");
_Static_assert(IBV_WC_LOCAL_INV == (int)UR_WC_LOCAL_INV, "wc opcode");
_Static_assert(IBV_WC_ATOMIC_WRITE == (int)UR_WC_ATOMIC_WRITE, "wc opcode");
_Static_assert(IBV_WC_RECV == (int)UR_WC_RECV, "wc opcode");
_Static_assert(IBV_WC_RECV_RDMA_WITH_IMM == (int)UR_WC_RECV_RDMA_WITH_IMM, "wc opcode");
_Static_assert(IBV_WC_GRH == (int)UR_WC_GRH, "wc flags");
_Static_assert(IBV_WC_WITH_IMM == (int)UR_WC_WITH_IMM, "wc flags");
_Static_assert(IBV_WC_WITH_INV == (int)UR_WC_WITH_INV, "wc flags");

/* UROCE_LOG=info: an error completion, named (flushes only at debug: a
 * QP in error flushes every outstanding request). */
static void log_bad_cqe(const struct ur_cqe *e)
{
	enum ur_log_level lvl = e->status == UR_WC_WR_FLUSH_ERR ? UR_LOG_DEBUG
							       : UR_LOG_INFO;

	ur_log(lvl, "QP 0x%x: completion wr_id %llu: %s (vendor_err %u)",
	       e->qp_num, (unsigned long long)e->wr_id,
	       ibv_wc_status_str((enum ibv_wc_status)e->status), e->vendor_err);
}

static void cqe_to_wc(const struct ur_cqe *e, struct ibv_wc *wc)
{
	if (__builtin_expect(e->status != UR_WC_SUCCESS, 0) &&
	    ur_log_on(UR_LOG_INFO))
		log_bad_cqe(e);
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = e->wr_id;
	wc->status = (enum ibv_wc_status)e->status;
	wc->opcode = (enum ibv_wc_opcode)e->opcode;
	wc->vendor_err = e->vendor_err;
	wc->byte_len = e->byte_len;
	wc->imm_data = e->imm_data;
	wc->qp_num = e->qp_num;
	wc->src_qp = e->src_qp;
	wc->wc_flags = e->wc_flags;
	wc->sl = e->sl;
	wc->pkey_index = 0;
}

static int cq_poll_raw(struct urv_cq *cq, struct ur_cqe *out, int n)
{
	int got = ur_cq_poll(&cq->ucq, out, n);

	if (got == 0) {
		struct ur_engine *e = atomic_load_explicit(&cq->eng,
							   memory_order_relaxed);
		uint64_t now = ur_engine_poll(e, &cq->ucq);

		got = ur_cq_poll(&cq->ucq, out, n);
		ur_engine_poll_done(e, got, now);
	}
	UR_LP_POLL(got == 0);
	if (got > 0)
		UR_LP_MARK(UR_LP_CQE);
	return got;
}

int urv__poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct urv_cq *cq = to_ucq(ibcq);
	struct ur_cqe buf[16];
	int done = 0;

	if (n < 0)
		return -1;
	while (done < n) {
		int want = n - done > 16 ? 16 : n - done;
		int got = done ? ur_cq_poll(&cq->ucq, buf, want) :
				 cq_poll_raw(cq, buf, want);

		for (int i = 0; i < got; i++)
			cqe_to_wc(&buf[i], &wc[done + i]);
		done += got;
		if (got < want)
			break;
	}
	return done;
}

int urv__req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct urv_cq *cq = to_ucq(ibcq);

	ur_cq_arm(&cq->ucq, solicited_only != 0);
	/* The caller is about to block on its channel: the engine receives
	 * for it from now on, even if it was spinning until a moment ago. */
	ur_engine_app_blocks(atomic_load(&cq->eng));
	return 0;
}

/* ---- ibv_cq_ex iterator -------------------------------------------------- */

static int urv_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct urv_cq *cq = to_ucq_ex(ibcq);

	if (attr && attr->comp_mask)
		return EINVAL;
	if (cq_poll_raw(cq, &cq->cur, 1) != 1)
		return ENOENT;
	ibcq->wr_id = cq->cur.wr_id;
	ibcq->status = (enum ibv_wc_status)cq->cur.status;
	return 0;
}

static int urv_next_poll(struct ibv_cq_ex *ibcq)
{
	struct urv_cq *cq = to_ucq_ex(ibcq);

	if (ur_cq_poll(&cq->ucq, &cq->cur, 1) != 1)
		return ENOENT;
	ibcq->wr_id = cq->cur.wr_id;
	ibcq->status = (enum ibv_wc_status)cq->cur.status;
	return 0;
}

static void urv_end_poll(struct ibv_cq_ex *ibcq)
{
}

static enum ibv_wc_opcode urv_read_opcode(struct ibv_cq_ex *c)
{
	return (enum ibv_wc_opcode)to_ucq_ex(c)->cur.opcode;
}
static uint32_t urv_read_vendor_err(struct ibv_cq_ex *c)
{
	return to_ucq_ex(c)->cur.vendor_err;
}
static uint32_t urv_read_byte_len(struct ibv_cq_ex *c)
{
	return to_ucq_ex(c)->cur.byte_len;
}
static __be32 urv_read_imm_data(struct ibv_cq_ex *c)
{
	return to_ucq_ex(c)->cur.imm_data;
}
static uint32_t urv_read_qp_num(struct ibv_cq_ex *c)
{
	return to_ucq_ex(c)->cur.qp_num;
}
static uint32_t urv_read_src_qp(struct ibv_cq_ex *c)
{
	return to_ucq_ex(c)->cur.src_qp;
}
static unsigned int urv_read_wc_flags(struct ibv_cq_ex *c)
{
	return to_ucq_ex(c)->cur.wc_flags;
}
static uint32_t urv_read_slid(struct ibv_cq_ex *c)
{
	return 0; /* RoCE: no LIDs */
}
static uint8_t urv_read_sl(struct ibv_cq_ex *c)
{
	return to_ucq_ex(c)->cur.sl;
}
static uint8_t urv_read_dlid_path_bits(struct ibv_cq_ex *c)
{
	return 0;
}
static uint64_t urv_read_completion_ts(struct ibv_cq_ex *c)
{
	return to_ucq_ex(c)->cur.ts;
}
/* The engine's clock is CLOCK_MONOTONIC (ur_now); the wall clock is it
 * moved by the offset between the two at the time of the read. */
static uint64_t urv_read_completion_wallclock_ns(struct ibv_cq_ex *c)
{
	uint64_t mono = ur_now(), real = ur_now_real();

	return to_ucq_ex(c)->cur.ts + (real - mono);
}
static uint16_t urv_read_cvlan(struct ibv_cq_ex *c)
{
	return 0;
}
static uint32_t urv_read_flow_tag(struct ibv_cq_ex *c)
{
	return 0;
}

#define URV_CQ_WC_FLAGS                                                      \
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |  \
	 IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |       \
	 IBV_WC_EX_WITH_DLID_PATH_BITS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |  \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK | IBV_WC_EX_WITH_CVLAN |   \
	 IBV_WC_EX_WITH_FLOW_TAG)

static struct ibv_cq_ex *create_cq(struct ibv_context *context,
				   const struct ibv_cq_init_attr_ex *attr)
{
	struct urv_context *ctx;
	struct urv_pd *pd = NULL;
	struct ibv_cq_ex *x;
	struct urv_cq *cq;
	int ret;

	if (!urv__is_our_context(context))
		return urv_err_ptr(-EINVAL);
	ctx = to_uctx(context);
	if (attr->cqe < 1 || attr->cqe > URV_MAX_CQE)
		return urv_err_ptr(-EINVAL);
	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					  IBV_CQ_INIT_ATTR_MASK_PD))
		return urv_err_ptr(-EOPNOTSUPP);
	if (attr->wc_flags & ~(uint64_t)URV_CQ_WC_FLAGS)
		return urv_err_ptr(-EOPNOTSUPP);
	if (attr->comp_vector >= (uint32_t)context->num_comp_vectors)
		return urv_err_ptr(-EINVAL);
	/* A CQ belongs to no PD; with MASK_PD it is created on a parent
	 * domain, whose allocator gives its ring (as libmlx5: a plain PD
	 * there is EINVAL). */
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		if (!attr->parent_domain ||
		    attr->parent_domain->context != context ||
		    !to_upd(attr->parent_domain)->parent)
			return urv_err_ptr(-EINVAL);
		pd = to_upd(attr->parent_domain);
	}

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return urv_err_ptr(-ENOMEM);
	ret = ur_cq_init_alloc(&cq->ucq, attr->cqe,
			       pd ? urv__pd_ring_alloc(pd) : NULL);
	if (ret)
		goto err_free;
	cq->pd = pd;
	cq->ucq.owner = cq;
	cq->ctx = ctx;
	atomic_init(&cq->eng, ctx->eng);
	cq->wc_flags = attr->wc_flags;

	x = &cq->cq_ex;
	x->context = context;
	x->channel = attr->channel;
	x->cq_context = attr->cq_context;
	x->cqe = (int)cq->ucq.cqe;
	pthread_mutex_init(&x->mutex, NULL);
	pthread_cond_init(&x->cond, NULL);
	x->start_poll = urv_start_poll;
	x->next_poll = urv_next_poll;
	x->end_poll = urv_end_poll;
	x->read_opcode = urv_read_opcode;
	x->read_vendor_err = urv_read_vendor_err;
	x->read_byte_len = urv_read_byte_len;
	x->read_imm_data = urv_read_imm_data;
	x->read_qp_num = urv_read_qp_num;
	x->read_src_qp = urv_read_src_qp;
	x->read_wc_flags = urv_read_wc_flags;
	x->read_slid = urv_read_slid;
	x->read_sl = urv_read_sl;
	x->read_dlid_path_bits = urv_read_dlid_path_bits;
	x->read_completion_ts = urv_read_completion_ts;
	x->read_completion_wallclock_ns = urv_read_completion_wallclock_ns;
	x->read_cvlan = urv_read_cvlan;
	x->read_flow_tag = urv_read_flow_tag;
	/* read_tm_info: NULL (no tag matching). */

	if (attr->channel)
		atomic_fetch_add(&to_uch(attr->channel)->ncq, 1);
	if (pd)
		atomic_fetch_add(&pd->users, 1);
	atomic_fetch_add(&ctx->ncq, 1);
	return x;

err_free:
	free(cq);
	return urv_err_ptr(ret);
}

URV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
					void *cq_context,
					struct ibv_comp_channel *channel,
					int comp_vector)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = cqe < 0 ? 0 : (uint32_t)cqe,
		.cq_context = cq_context,
		.channel = channel,
		.comp_vector = comp_vector < 0 ? UINT32_MAX : (uint32_t)comp_vector,
	};
	struct ibv_cq_ex *x = create_cq(context, &attr);

	return x ? ibv_cq_ex_to_cq(x) : NULL;
}

struct ibv_cq_ex *urv__create_cq_ex(struct ibv_context *ctx,
				     struct ibv_cq_init_attr_ex *attr)
{
	return create_cq(ctx, attr);
}

static bool ev_is_cq(struct urv_event *e, void *cq)
{
	return e->cq == cq;
}

URV_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct urv_cq *cq = to_ucq(ibcq);

	if (atomic_load(&cq->nqp))
		return EBUSY;
	/* Unread events for this CQ go away, as the kernel's do. */
	if (ibcq->channel)
		urv__evq_drop(&to_uch(ibcq->channel)->q, ev_is_cq, ibcq);
	/* As rdma-core: wait until every event handed out was acked. */
	pthread_mutex_lock(&ibcq->mutex);
	while (ibcq->comp_events_completed != cq->comp_events_reported)
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);

	if (ibcq->channel)
		atomic_fetch_sub(&to_uch(ibcq->channel)->ncq, 1);
	atomic_fetch_sub(&cq->ctx->ncq, 1);
	ur_cq_fini(&cq->ucq);
	if (cq->pd)
		urv__pd_put(cq->pd);
	pthread_cond_destroy(&ibcq->cond);
	pthread_mutex_destroy(&ibcq->mutex);
	free(cq);
	return 0;
}

URV_EXPORT int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct urv_cq *cq = to_ucq(ibcq);
	int ret;

	if (cqe < 1 || cqe > URV_MAX_CQE)
		return EINVAL;
	ret = ur_cq_resize(&cq->ucq, (uint32_t)cqe);
	if (ret)
		return -ret;
	ibcq->cqe = (int)cq->ucq.cqe;
	return 0;
}

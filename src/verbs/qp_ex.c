// SPDX-License-Identifier: MIT
/*
 * The ibv_qp_ex work request builder (ibv_wr_start .. ibv_wr_complete).
 *
 * WRs are built into a private array and handed to the transport in one go
 * at ibv_wr_complete(), so ibv_wr_abort() really discards them and a batch
 * is posted under a single QP lock. Errors found while building (too many
 * SGEs, inline data too long) are remembered and returned by
 * ibv_wr_complete(), which then posts nothing, as rdma-core providers do.
 * Inline data is copied at ibv_wr_set_inline_data*() time: the caller may
 * reuse its buffer as soon as that call returns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ur_latprof.h"
#include "urv.h"

static void pend_clear(struct urv_qp *qp)
{
	for (size_t i = 0; i < qp->npend; i++) {
		free(qp->pend[i].inl);
		qp->pend[i].inl = NULL;
	}
	qp->npend = 0;
	qp->wr_err = 0;
}

void urv__qp_ex_fini(struct urv_qp *qp)
{
	pend_clear(qp);
	free(qp->pend);
	qp->pend = NULL;
	qp->cap_pend = 0;
}

static struct urv_wr_pending *cur(struct urv_qp *qp)
{
	return qp->npend ? &qp->pend[qp->npend - 1] : NULL;
}

/* Start a new WR with the qp_ex's current wr_id/wr_flags. */
static struct urv_wr_pending *wr_new(struct ibv_qp_ex *ibqp, uint32_t opcode)
{
	struct urv_qp *qp = to_uqp_ex(ibqp);
	struct urv_wr_pending *p;

	if (qp->wr_err)
		return NULL;
	if (qp->npend == qp->cap_pend) {
		size_t n = qp->cap_pend ? qp->cap_pend * 2 : 8;
		struct urv_wr_pending *np = realloc(qp->pend, n * sizeof(*np));

		if (!np) {
			qp->wr_err = -ENOMEM;
			return NULL;
		}
		qp->pend = np;
		qp->cap_pend = n;
	}
	p = &qp->pend[qp->npend++];
	memset(&p->wr, 0, sizeof(p->wr));
	p->inl = NULL;
	p->wr.wr_id = ibqp->wr_id;
	p->wr.opcode = opcode;
	p->wr.flags = ibqp->wr_flags | (qp->sq_sig_all ? IBV_SEND_SIGNALED : 0);
	p->wr.sg_list = p->sge;
	return p;
}

static void urv_wr_start(struct ibv_qp_ex *ibqp)
{
	pend_clear(to_uqp_ex(ibqp));
}

static int urv_wr_complete(struct ibv_qp_ex *ibqp)
{
	struct urv_qp *qp = to_uqp_ex(ibqp);
	int ret = qp->wr_err;

	if (!ret) {
		uint64_t now;

		UR_LP_MARK(UR_LP_POST);
		ur_engine_qp_lock(&qp->uqp);
		now = ur_now(); /* as in urv__post_send */
		for (size_t i = 0; i < qp->npend && !ret; i++) {
			struct urv_wr_pending *p = &qp->pend[i];

			p->wr.sg_list = p->sge; /* the array may have moved */
			if (qp->qp.qp_type == IBV_QPT_UD)
				p->wr.ah = &p->ah;
			ret = ur_qp_post_send(&qp->uqp, &p->wr, now);
		}
		ur_engine_qp_post_unlock(qp->eng, &qp->uqp, true, now);
	}
	pend_clear(qp);
	return -ret;
}

static void urv_wr_abort(struct ibv_qp_ex *ibqp)
{
	pend_clear(to_uqp_ex(ibqp));
}

static void urv_wr_send(struct ibv_qp_ex *ibqp)
{
	wr_new(ibqp, UR_WR_SEND);
}

static void urv_wr_send_imm(struct ibv_qp_ex *ibqp, __be32 imm)
{
	struct urv_wr_pending *p = wr_new(ibqp, UR_WR_SEND_WITH_IMM);

	if (p)
		p->wr.imm_data = imm;
}

static void urv_wr_send_inv(struct ibv_qp_ex *ibqp, uint32_t rkey)
{
	struct urv_wr_pending *p = wr_new(ibqp, UR_WR_SEND_WITH_INV);

	if (p)
		p->wr.imm_data = rkey;
}

static void urv_wr_rdma(struct ibv_qp_ex *ibqp, uint32_t op, uint32_t rkey,
			uint64_t addr, __be32 imm)
{
	struct urv_wr_pending *p = wr_new(ibqp, op);

	if (p) {
		p->wr.rkey = rkey;
		p->wr.remote_addr = addr;
		p->wr.imm_data = imm;
	}
}

static void urv_wr_rdma_write(struct ibv_qp_ex *ibqp, uint32_t rkey, uint64_t addr)
{
	urv_wr_rdma(ibqp, UR_WR_RDMA_WRITE, rkey, addr, 0);
}

static void urv_wr_rdma_write_imm(struct ibv_qp_ex *ibqp, uint32_t rkey,
				  uint64_t addr, __be32 imm)
{
	urv_wr_rdma(ibqp, UR_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

static void urv_wr_rdma_read(struct ibv_qp_ex *ibqp, uint32_t rkey, uint64_t addr)
{
	urv_wr_rdma(ibqp, UR_WR_RDMA_READ, rkey, addr, 0);
}

static void urv_wr_atomic_cmp_swp(struct ibv_qp_ex *ibqp, uint32_t rkey,
				  uint64_t addr, uint64_t compare, uint64_t swap)
{
	struct urv_wr_pending *p = wr_new(ibqp, UR_WR_ATOMIC_CMP_AND_SWP);

	if (p) {
		p->wr.rkey = rkey;
		p->wr.remote_addr = addr;
		p->wr.compare_add = compare;
		p->wr.swap = swap;
	}
}

static void urv_wr_atomic_fetch_add(struct ibv_qp_ex *ibqp, uint32_t rkey,
				    uint64_t addr, uint64_t add)
{
	struct urv_wr_pending *p = wr_new(ibqp, UR_WR_ATOMIC_FETCH_AND_ADD);

	if (p) {
		p->wr.rkey = rkey;
		p->wr.remote_addr = addr;
		p->wr.compare_add = add;
	}
}

/* IBA atomic write (8 bytes): the data travels as an inline SGE. */
static void urv_wr_atomic_write(struct ibv_qp_ex *ibqp, uint32_t rkey,
				uint64_t addr, const void *data)
{
	struct urv_qp *qp = to_uqp_ex(ibqp);
	struct urv_wr_pending *p = wr_new(ibqp, UR_WR_ATOMIC_WRITE);

	if (!p)
		return;
	p->wr.rkey = rkey;
	p->wr.remote_addr = addr;
	p->inl = malloc(8);
	if (!p->inl) {
		qp->wr_err = -ENOMEM;
		return;
	}
	memcpy(p->inl, data, 8);
	p->sge[0].addr = (uintptr_t)p->inl;
	p->sge[0].length = 8;
	p->sge[0].lkey = 0;
	p->wr.num_sge = 1;
	p->wr.flags |= UR_SEND_INLINE;
}

static void urv_wr_set_sge(struct ibv_qp_ex *ibqp, uint32_t lkey,
			   uint64_t addr, uint32_t length)
{
	struct urv_qp *qp = to_uqp_ex(ibqp);
	struct urv_wr_pending *p = cur(qp);

	if (!p || qp->wr_err)
		return;
	p->sge[0].addr = addr;
	p->sge[0].length = length;
	p->sge[0].lkey = lkey;
	p->wr.num_sge = 1;
}

static void urv_wr_set_sge_list(struct ibv_qp_ex *ibqp, size_t n,
				const struct ibv_sge *sg)
{
	struct urv_qp *qp = to_uqp_ex(ibqp);
	struct urv_wr_pending *p = cur(qp);

	if (!p || qp->wr_err)
		return;
	if (n > qp->uqp.caps.max_send_sge || n > URV_MAX_SGE) {
		qp->wr_err = -EINVAL;
		return;
	}
	memcpy(p->sge, sg, n * sizeof(*sg));
	p->wr.num_sge = (uint32_t)n;
}

static void urv_wr_set_inline_data_list(struct ibv_qp_ex *ibqp, size_t n,
					const struct ibv_data_buf *bufs)
{
	struct urv_qp *qp = to_uqp_ex(ibqp);
	struct urv_wr_pending *p = cur(qp);
	size_t total = 0, off = 0;

	if (!p || qp->wr_err)
		return;
	for (size_t i = 0; i < n; i++)
		total += bufs[i].length;
	if (total > qp->uqp.caps.max_inline_data) {
		qp->wr_err = -EINVAL;
		return;
	}
	p->inl = malloc(total ? total : 1);
	if (!p->inl) {
		qp->wr_err = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		memcpy(p->inl + off, bufs[i].addr, bufs[i].length);
		off += bufs[i].length;
	}
	p->sge[0].addr = (uintptr_t)p->inl;
	p->sge[0].length = (uint32_t)total;
	p->sge[0].lkey = 0;
	p->wr.num_sge = 1;
	p->wr.flags |= UR_SEND_INLINE;
}

static void urv_wr_set_inline_data(struct ibv_qp_ex *ibqp, void *addr,
				   size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	urv_wr_set_inline_data_list(ibqp, 1, &b);
}

static void urv_wr_bind_mw(struct ibv_qp_ex *ibqp, struct ibv_mw *mw,
			   uint32_t rkey, const struct ibv_mw_bind_info *bi)
{
	struct urv_qp *qp = to_uqp_ex(ibqp);
	struct urv_wr_pending *p = wr_new(ibqp, UR_WR_BIND_MW);

	if (p)
		qp->wr_err = urv__bind_wr(&qp->qp, mw, rkey, bi, &p->wr);
}

static void urv_wr_local_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	struct urv_wr_pending *p = wr_new(ibqp, UR_WR_LOCAL_INV);

	if (p)
		p->wr.imm_data = invalidate_rkey;
}

static void urv_wr_set_ud_addr(struct ibv_qp_ex *ibqp, struct ibv_ah *ah,
			       uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct urv_qp *qp = to_uqp_ex(ibqp);
	struct urv_wr_pending *p = cur(qp);

	if (!p || qp->wr_err)
		return;
	if (!ah || to_uah(ah)->port_num != qp->port_num) {
		qp->wr_err = -EINVAL; /* none, or another port's */
		return;
	}
	p->ah = to_uah(ah)->uah;
	p->wr.remote_qpn = remote_qpn;
	p->wr.remote_qkey = remote_qkey;
}

static void urv_wr_set_xrc_srqn(struct ibv_qp_ex *ibqp, uint32_t remote_srqn)
{
	struct urv_qp *qp = to_uqp_ex(ibqp);
	struct urv_wr_pending *p = cur(qp);

	if (p && !qp->wr_err)
		p->wr.xrc_srqn = remote_srqn;
}

void urv__qp_ex_init(struct urv_qp *qp, uint64_t ops)
{
	struct ibv_qp_ex *x = &qp->qp_ex;

	x->comp_mask = 0;
	x->wr_start = urv_wr_start;
	x->wr_complete = urv_wr_complete;
	x->wr_abort = urv_wr_abort;
	if (ops & IBV_QP_EX_WITH_SEND)
		x->wr_send = urv_wr_send;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM)
		x->wr_send_imm = urv_wr_send_imm;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_INV)
		x->wr_send_inv = urv_wr_send_inv;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE)
		x->wr_rdma_write = urv_wr_rdma_write;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		x->wr_rdma_write_imm = urv_wr_rdma_write_imm;
	if (ops & IBV_QP_EX_WITH_RDMA_READ)
		x->wr_rdma_read = urv_wr_rdma_read;
	if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		x->wr_atomic_cmp_swp = urv_wr_atomic_cmp_swp;
	if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		x->wr_atomic_fetch_add = urv_wr_atomic_fetch_add;
	if (ops & IBV_QP_EX_WITH_ATOMIC_WRITE)
		x->wr_atomic_write = urv_wr_atomic_write;
	if (ops & IBV_QP_EX_WITH_BIND_MW)
		x->wr_bind_mw = urv_wr_bind_mw;
	if (ops & IBV_QP_EX_WITH_LOCAL_INV)
		x->wr_local_inv = urv_wr_local_inv;
	x->wr_set_sge = urv_wr_set_sge;
	x->wr_set_sge_list = urv_wr_set_sge_list;
	x->wr_set_inline_data = urv_wr_set_inline_data;
	x->wr_set_inline_data_list = urv_wr_set_inline_data_list;
	if (qp->qp.qp_type == IBV_QPT_UD)
		x->wr_set_ud_addr = urv_wr_set_ud_addr;
	if (qp->qp.qp_type == IBV_QPT_XRC_SEND)
		x->wr_set_xrc_srqn = urv_wr_set_xrc_srqn;
	/* wr_send_tso, wr_flush: NULL (create fails with EOPNOTSUPP for
	 * TSO). */
}

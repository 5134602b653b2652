// SPDX-License-Identifier: MIT
/*
 * Memory windows (IBTA 10.6.7): type 1 (bound with ibv_bind_mw, usable
 * from any QP of the PD) and type 2B (bound with an IBV_WR_BIND_MW work
 * request, usable only through the QP that bound it, freed by LOCAL_INV or
 * SEND_WITH_INV). A window is a key in the engine's table; the transport
 * binds and invalidates it in send queue order (src/transport/ur_mw.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "urv.h"

_Static_assert(IBV_MW_TYPE_1 == (int)UR_KEY_MW1, "mw type");
_Static_assert(IBV_MW_TYPE_2 == (int)UR_KEY_MW2, "mw type");

struct ibv_mw *urv__alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct urv_context *ctx = to_uctx(ibpd->context);
	struct urv_mw *mw;
	int ret;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
		return urv_err_ptr(-EINVAL);
	if (urv__dev_is_iwarp(ctx->dev))
		return urv_err_ptr(-EOPNOTSUPP); /* max_mw 0: no BIND_MW here */
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return urv_err_ptr(-ENOMEM);
	mw->key.type = type;
	mw->key.pdn = to_upd(ibpd)->pdn;
	mw->key.owner = &mw->mw;
	ret = ur_engine_mr_add(ctx->eng, &mw->key);
	if (ret) {
		free(mw);
		return urv_err_ptr(ret);
	}
	mw->mw.context = ibpd->context;
	mw->mw.pd = ibpd;
	mw->mw.rkey = mw->key.rkey;
	mw->mw.handle = mw->key.rkey >> 8;
	mw->mw.type = type;
	atomic_fetch_add(&to_upd(ibpd)->users, 1);
	return &mw->mw;
}

int urv__dealloc_mw(struct ibv_mw *ibmw)
{
	struct urv_mw *mw = to_umw(ibmw);
	int ret;

	/* Out of the table (waits for accesses through it to finish). */
	ret = ur_engine_mr_del(to_uctx(ibmw->context)->eng, &mw->key);
	if (ret)
		return -ret;
	/* Nothing reaches the window now: let go of its region. */
	if (mw->key.mw_mr)
		atomic_fetch_sub(&mw->key.mw_mr->nbound, 1);
	urv__pd_put(to_upd(ibmw->pd));
	free(mw);
	return 0;
}

/* ibv_bind_mw (type 1): a BIND_MW work request with the next key, as
 * rdma-core providers do; the window's rkey is the new key once posted. */
int urv__bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr, *bad;
	int ret;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	ret = urv__post_send(qp, &wr, &bad);
	if (!ret)
		mw->rkey = wr.bind_mw.rkey;
	return ret;
}

/* Fill the transport's BIND_MW fields; -EINVAL for a foreign window or
 * region. */
int urv__bind_wr(struct ibv_qp *qp, struct ibv_mw *mw, uint32_t rkey,
		  const struct ibv_mw_bind_info *bi, struct ur_send_wr *u)
{
	if (!mw || mw->context != qp->context || !bi ||
	    (bi->mr && bi->mr->context != qp->context))
		return -EINVAL;
	u->opcode = UR_WR_BIND_MW;
	u->rkey = mw->rkey; /* names the window (its index) */
	u->bind.new_rkey = rkey;
	u->bind.lkey = bi->mr ? bi->mr->lkey : 0;
	u->bind.addr = bi->addr;
	u->bind.length = bi->mr ? bi->length : 0;
	/* Local write is implied by the region and meaningless for a
	 * window; the transport checks the rest. */
	u->bind.access = bi->mw_access_flags & ~(unsigned int)IBV_ACCESS_LOCAL_WRITE;
	return 0;
}

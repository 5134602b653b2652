// SPDX-License-Identifier: MIT
/*
 * Memory windows (IBTA 10.6.7, 11.4.1.2-3): remote key checks through
 * regions and windows, BIND_MW, and invalidation (LOCAL_INV and
 * SEND_WITH_INV).
 *
 * A window is a struct ur_mr in the host's key table whose binding
 * (iova/host/length/access/rkey) changes while remote requests on other
 * QPs may be looking at it, so the binding is read and written under the
 * window's mw_lock. The host's table lock keeps the window itself, and a
 * region with windows bound to it (nbound), alive meanwhile.
 */
#include <errno.h>

#include "ur_qp_priv.h"

static void mw_lock(struct ur_mr *mw)
{
	while (atomic_flag_test_and_set_explicit(&mw->mw_lock,
						 memory_order_acquire))
		;
}

static void mw_unlock(struct ur_mr *mw)
{
	atomic_flag_clear_explicit(&mw->mw_lock, memory_order_release);
}

/* The table holds keys as const; windows are the one kind the transport
 * writes (their binding, under mw_lock). */
static struct ur_mr *key_lookup(struct ur_qp *qp, uint32_t key)
{
	return (struct ur_mr *)qp->dev->ops->mr_lookup(qp->dev->host, key);
}

int ur_rkey_check(struct ur_qp *qp, uint32_t rkey, uint64_t va, uint64_t len,
		  uint32_t access, uint8_t **out)
{
	struct ur_mr *k = key_lookup(qp, rkey);
	int rc;

	if (!k || (k->type == UR_KEY_MR && k->rkey != rkey))
		return -EACCES;
	if (k->type == UR_KEY_MR)
		return ur_mr_check(k, qp->pdn, va, len, access, out);
	mw_lock(k);
	if (!k->mw_valid || k->rkey != rkey || k->pdn != qp->pdn ||
	    (k->type == UR_KEY_MW2 && k->mw_qpn != qp->qpn) ||
	    (k->access & access) != access) {
		rc = -EACCES;
	} else if (va < k->iova || len > k->length ||
		   va - k->iova > k->length - len) {
		rc = -ERANGE;
	} else {
		rc = 0;
		if (out)
			*out = k->host + (va - k->iova);
	}
	mw_unlock(k);
	return rc;
}

/* Drop a window's binding (caller holds mw_lock). Pointers resolved through
 * it are checked again before use (ur_dev.key_gen). */
static void mw_unbind(struct ur_qp *qp, struct ur_mr *mw)
{
	atomic_fetch_add_explicit(&qp->dev->key_gen, 1, memory_order_release);
	if (mw->mw_mr)
		atomic_fetch_sub(&mw->mw_mr->nbound, 1);
	mw->mw_mr = NULL;
	mw->mw_valid = false;
	mw->length = 0;
	mw->access = 0;
}

/*
 * BIND_MW (IBTA 10.6.7.2.1, o10-36.2.1..): the window and the region must
 * be in the QP's PD, the region must allow MW_BIND, the range must lie
 * inside it, remote write/atomic access needs local write on the region,
 * the new key keeps the window's index. A type 1 window is rebound at
 * will (length 0 unbinds it); a type 2 window must be free (invalidated)
 * and may be zero based. Returns 0 or -EINVAL (MW_BIND_ERR).
 */
int ur__mw_bind(struct ur_qp *qp, uint32_t mw_key, uint32_t new_rkey,
		 uint32_t lkey, uint64_t addr, uint64_t length,
		 uint32_t access)
{
	struct ur_mr *mw = key_lookup(qp, mw_key);
	struct ur_mr *mr = NULL;
	const uint32_t remote = UR_ACCESS_REMOTE_WRITE | UR_ACCESS_REMOTE_READ |
				UR_ACCESS_REMOTE_ATOMIC | UR_ACCESS_ZERO_BASED;
	bool zero_based = access & UR_ACCESS_ZERO_BASED;
	uint64_t iova;
	int rc = -EINVAL;

	if (!mw || mw->type == UR_KEY_MR || mw->pdn != qp->pdn ||
	    (new_rkey >> 8) != (mw_key >> 8) || (access & ~remote))
		return -EINVAL;
	if (length) {
		mr = key_lookup(qp, lkey);
		if (!mr || mr->type != UR_KEY_MR || mr->lkey != lkey ||
		    mr->pdn != qp->pdn || !(mr->access & UR_ACCESS_MW_BIND))
			return -EINVAL;
		if ((access & (UR_ACCESS_REMOTE_WRITE | UR_ACCESS_REMOTE_ATOMIC)) &&
		    !(mr->access & UR_ACCESS_LOCAL_WRITE))
			return -EINVAL;
		if (addr < mr->iova || length > mr->length ||
		    addr - mr->iova > mr->length - length)
			return -EINVAL;
	}
	if (zero_based && mw->type != UR_KEY_MW2)
		return -EINVAL; /* only type 2 windows may be zero based */
	if (mw->type == UR_KEY_MW2 && !length)
		return -EINVAL; /* a type 2 window is freed by invalidation */
	iova = zero_based ? 0 : addr;

	mw_lock(mw);
	if (mw->type == UR_KEY_MW2 && mw->mw_valid)
		goto out; /* bound: must be invalidated first */
	mw_unbind(qp, mw);
	mw->rkey = new_rkey;
	if (mr) {
		atomic_fetch_add(&mr->nbound, 1);
		mw->mw_mr = mr;
		mw->iova = iova;
		mw->host = mr->host + (addr - mr->iova);
		mw->length = length;
		mw->access = access & ~UR_ACCESS_ZERO_BASED;
		mw->mw_qpn = qp->qpn;
		mw->mw_valid = true;
	}
	rc = 0;
out:
	mw_unlock(mw);
	return rc;
}

/*
 * LOCAL_INV / SEND_WITH_INV of @key (IBTA 10.6.7.2.2-3): only a valid type
 * 2 window of the QP's PD can be invalidated. Returns 0 or -EINVAL.
 */
int ur__mw_invalidate(struct ur_qp *qp, uint32_t key)
{
	struct ur_mr *mw = key_lookup(qp, key);
	int rc = -EINVAL;

	if (!mw || mw->type != UR_KEY_MW2)
		return -EINVAL;
	mw_lock(mw);
	if (mw->mw_valid && mw->rkey == key && mw->pdn == qp->pdn) {
		mw_unbind(qp, mw);
		rc = 0;
	}
	mw_unlock(mw);
	return rc;
}

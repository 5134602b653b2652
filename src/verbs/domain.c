// SPDX-License-Identifier: MIT
/*
 * Thread domains and parent domains (ibv_alloc_td, ibv_alloc_parent_domain).
 *
 * A parent domain is its PD for everything (same pdn: MRs, QPs, SRQs, AHs
 * and windows of the two mix freely) plus, when the application gives
 * them, alloc/free callbacks for the rings of the QPs, SRQs and CQs
 * created on it (ur_alloc.c calls them; IBV_ALLOCATOR_USE_DEFAULT falls
 * back to calloc for that ring). A thread domain is the application's
 * promise that one thread at a time uses the objects on it; uroce's locks
 * are per QP and cost little uncontended, so it takes the promise and
 * elides nothing. Errors as libmlx5: a TD or parent domain attribute
 * with an unknown comp_mask bit, a parent domain without a PD, or with a
 * PD or TD of another context → EINVAL; dealloc of a TD, PD or parent
 * domain still in use → EBUSY.
 */
#include <errno.h>
#include <stdlib.h>

#include <uroce/uroce.h>

#include "urv.h"

_Static_assert((UROCE_RES_TYPE_QP & 0xffffffff) == UR_RING_QP, "res type");
_Static_assert((UROCE_RES_TYPE_CQ & 0xffffffff) == UR_RING_CQ, "res type");
_Static_assert((UROCE_RES_TYPE_SRQ & 0xffffffff) == UR_RING_SRQ, "res type");

struct ibv_td *urv__alloc_td(struct ibv_context *context,
			     struct ibv_td_init_attr *attr)
{
	struct urv_td *td;

	if (!urv__is_our_context(context) || !attr || attr->comp_mask)
		return urv_err_ptr(-EINVAL);
	td = calloc(1, sizeof(*td));
	if (!td)
		return urv_err_ptr(-ENOMEM);
	td->td.context = context;
	return &td->td;
}

int urv__dealloc_td(struct ibv_td *ibtd)
{
	struct urv_td *td = to_utd(ibtd);

	if (atomic_load(&td->users))
		return EBUSY;
	free(td);
	return 0;
}

/* The application's callbacks, seen as the transport's allocator. */
static void *pd_ring_alloc(void *arg, size_t size, size_t align,
			   uint32_t kind)
{
	struct urv_pd *pd = arg;

	return pd->alloc(&pd->pd, pd->pd_context, size, align,
			 UROCE_RES_TYPE_BASE | kind);
}

static void pd_ring_free(void *arg, void *ptr, uint32_t kind)
{
	struct urv_pd *pd = arg;

	pd->free(&pd->pd, pd->pd_context, ptr, UROCE_RES_TYPE_BASE | kind);
}

struct ibv_pd *urv__alloc_parent_domain(struct ibv_context *context,
					struct ibv_parent_domain_init_attr *attr)
{
	const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct urv_pd *pd, *parent;

	if (!urv__is_our_context(context) || !attr || !attr->pd ||
	    attr->pd->context != context || (attr->comp_mask & ~known) ||
	    (attr->td && attr->td->context != context))
		return urv_err_ptr(-EINVAL);
	parent = to_upd(attr->pd);
	if (parent->parent) /* a parent domain of a parent domain */
		return urv_err_ptr(-EINVAL);
	if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	    (!attr->alloc || !attr->free))
		return urv_err_ptr(-EINVAL);
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return urv_err_ptr(-ENOMEM);
	pd->pd.context = context;
	pd->pd.handle = parent->pd.handle;
	pd->pdn = parent->pdn;
	pd->parent = parent;
	if (attr->td) {
		pd->td = to_utd(attr->td);
		atomic_fetch_add(&pd->td->users, 1);
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
		pd->ring_alloc = (struct ur_alloc){ .alloc = pd_ring_alloc,
						    .free = pd_ring_free,
						    .arg = pd };
	}
	atomic_fetch_add(&parent->users, 1);
	atomic_fetch_add(&to_uctx(context)->npd, 1);
	return &pd->pd;
}

/* ibv_dealloc_pd of a parent domain. */
int urv__dealloc_parent_domain(struct urv_pd *pd)
{
	if (atomic_load(&pd->users))
		return EBUSY;
	urv__pd_put(pd->parent);
	if (pd->td)
		atomic_fetch_sub(&pd->td->users, 1);
	atomic_fetch_sub(&to_uctx(pd->pd.context)->npd, 1);
	free(pd);
	return 0;
}

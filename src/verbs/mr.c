// SPDX-License-Identifier: MIT
/*
 * Protection domains and memory regions.
 *
 * A PD is a random 32-bit number that scopes keys (the transport checks the
 * PD of every key). Registering memory pins it where RLIMIT_MEMLOCK allows
 * (best effort: the engine reads the pages from user space, so an unpinned
 * region still works, it can just be swapped) and marks it MADV_DONTFORK so
 * a fork()ed child never shares pages the engine writes into, which is what
 * ibv_fork_init() gives on real hardware.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "urv.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

_Static_assert((int)IBV_ACCESS_LOCAL_WRITE == (int)UR_ACCESS_LOCAL_WRITE, "access");
_Static_assert((int)IBV_ACCESS_REMOTE_WRITE == (int)UR_ACCESS_REMOTE_WRITE, "access");
_Static_assert((int)IBV_ACCESS_REMOTE_READ == (int)UR_ACCESS_REMOTE_READ, "access");
_Static_assert((int)IBV_ACCESS_REMOTE_ATOMIC == (int)UR_ACCESS_REMOTE_ATOMIC, "access");
_Static_assert((int)IBV_ACCESS_MW_BIND == (int)UR_ACCESS_MW_BIND, "access");
_Static_assert((int)IBV_ACCESS_ZERO_BASED == (int)UR_ACCESS_ZERO_BASED, "access");
_Static_assert((int)IBV_ACCESS_ON_DEMAND == (int)UR_ACCESS_ON_DEMAND, "access");
_Static_assert((int)IBV_ACCESS_HUGETLB == (int)UR_ACCESS_HUGETLB, "access");

static uint32_t urv_random32(void)
{
	uint32_t v = 0;

	while (getrandom(&v, sizeof(v), 0) != sizeof(v))
		;
	return v;
}

URV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct urv_pd *pd;

	if (!urv__is_our_context(context))
		return urv_err_ptr(-EINVAL);
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return urv_err_ptr(-ENOMEM);
	pd->pd.context = context;
	pd->pdn = urv_random32();
	pd->pd.handle = pd->pdn;
	atomic_fetch_add(&to_uctx(context)->npd, 1);
	urv__share_pd(pd, true); /* ibv_import_pd finds it */
	return &pd->pd;
}

URV_EXPORT int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct urv_pd *pd = to_upd(ibpd);

	if (pd->parent)
		return urv__dealloc_parent_domain(pd);
	if (pd->imported) { /* only the import goes (import.c) */
		if (atomic_load(&pd->users) > 1)
			return EBUSY;
		urv__pd_put(pd);
		return 0;
	}
	/* Off the import list first: an import that found it holds it. */
	urv__share_pd(pd, false);
	if (atomic_load(&pd->users)) {
		urv__share_pd(pd, true);
		return EBUSY;
	}
	atomic_fetch_sub(&to_uctx(ibpd->context)->npd, 1);
	free(pd);
	return 0;
}

#define URV_ACCESS_SUPPORTED                                                 \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                   \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                  \
	 IBV_ACCESS_ZERO_BASED | IBV_ACCESS_HUGETLB | IBV_ACCESS_MW_BIND |    \
	 IBV_ACCESS_ON_DEMAND)

#define URV_ACCESS_REMOTE                                                    \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |                   \
	 IBV_ACCESS_REMOTE_ATOMIC)

/* IBTA 10.6.3.1 (C10-xx): remote write or atomic access needs local write. */
static int check_access(unsigned int access)
{
	access &= ~IBV_ACCESS_OPTIONAL_RANGE; /* hints: ignored */
	if (access & ~URV_ACCESS_SUPPORTED)
		return -EINVAL;
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

static void page_range(void *addr, size_t len, void **start, size_t *plen)
{
	uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t s = (uintptr_t)addr & ~(ps - 1);
	uintptr_t e = ((uintptr_t)addr + len + ps - 1) & ~(ps - 1);

	*start = (void *)s;
	*plen = e - s;
}

/*
 * mlock/munlock/madvise the pages under [addr, addr+len). Huge pages
 * (MAP_HUGETLB, hugetlbfs) split only at their own size, so when the
 * kernel refuses the base pages with EINVAL the range is widened to the
 * 2 MiB, then the 1 GiB pages it lies in (as rdma-core's fork protection
 * does with RDMAV_HUGEPAGES_SAFE). 0 or -1 as the call.
 */
enum pages_op { PAGES_LOCK, PAGES_UNLOCK, PAGES_DONTFORK, PAGES_DOFORK };

static int pages_do(void *addr, size_t len, enum pages_op op)
{
	const size_t sizes[] = { (size_t)sysconf(_SC_PAGESIZE),
				 (size_t)2 << 20, (size_t)1 << 30 };
	int ret = -1;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uintptr_t a = sizes[i];
		uintptr_t s = (uintptr_t)addr & ~(a - 1);
		uintptr_t e = ((uintptr_t)addr + len + a - 1) & ~(a - 1);

		switch (op) {
		case PAGES_LOCK:
			ret = mlock((void *)s, e - s);
			break;
		case PAGES_UNLOCK:
			ret = munlock((void *)s, e - s);
			break;
		case PAGES_DONTFORK:
			ret = madvise((void *)s, e - s, MADV_DONTFORK);
			break;
		case PAGES_DOFORK:
			ret = madvise((void *)s, e - s, MADV_DOFORK);
			break;
		}
		if (!ret || errno != EINVAL)
			break;
	}
	return ret;
}

/* Pin (best effort) and protect from fork the pages of [addr, addr+len). */
static bool pin(void *addr, size_t len)
{
	bool locked;

	if (!len)
		return false;
	locked = !pages_do(addr, len, PAGES_LOCK);
	(void)pages_do(addr, len, PAGES_DONTFORK);
	return locked;
}

static void unpin(void *addr, size_t len, bool locked)
{
	if (!len)
		return;
	(void)pages_do(addr, len, PAGES_DOFORK);
	if (locked)
		(void)pages_do(addr, len, PAGES_UNLOCK);
}

static struct ibv_mr *reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			     uint64_t iova, unsigned int access)
{
	struct urv_pd *pd;
	struct urv_mr *mr;
	int ret;

	if (!ibpd || !urv__is_our_context(ibpd->context))
		return urv_err_ptr(-EINVAL);
	pd = to_upd(ibpd);
	ret = check_access(access);
	if (ret)
		return urv_err_ptr(ret);
	/* Implicit ODP (addr NULL, length SIZE_MAX): the whole address space,
	 * for local access only, since a remote peer could name any address
	 * and the engine cannot fault in or refuse an unmapped page. */
	if (!addr && length == SIZE_MAX && (access & IBV_ACCESS_ON_DEMAND)) {
		if (access & URV_ACCESS_REMOTE)
			return urv_err_ptr(-EOPNOTSUPP);
		iova = 0;
	} else if (!addr && length) {
		return urv_err_ptr(-EINVAL);
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return urv_err_ptr(-ENOMEM);

	/* On-demand paging: nothing to pin or protect, the engine reads the
	 * pages through the process's own mappings whenever they are. */
	mr->odp = access & IBV_ACCESS_ON_DEMAND;
	if (!mr->odp)
		mr->locked = pin(addr, length); /* best effort, see above */

	mr->umr.iova = (access & IBV_ACCESS_ZERO_BASED) ? 0 : iova;
	mr->umr.host = addr;
	mr->umr.length = length;
	mr->umr.access = access & URV_ACCESS_SUPPORTED;
	mr->access = access;
	mr->umr.pdn = pd->pdn;
	mr->umr.owner = &mr->mr;
	ret = ur_engine_mr_add(to_uctx(ibpd->context)->eng, &mr->umr);
	if (ret)
		goto err_unpin;

	mr->mr.context = ibpd->context;
	mr->mr.pd = ibpd;
	mr->mr.addr = addr;
	mr->mr.length = length;
	mr->mr.handle = mr->umr.lkey;
	mr->mr.lkey = mr->umr.lkey;
	mr->mr.rkey = mr->umr.rkey;
	atomic_fetch_add(&pd->users, 1);
	return &mr->mr;

err_unpin:
	if (!mr->odp)
		unpin(addr, length, mr->locked);
	free(mr);
	return urv_err_ptr(ret);
}

URV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr,
				     size_t length, int access)
{
	return reg_mr(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

URV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr,
					  size_t length, uint64_t iova,
					  int access)
{
	return reg_mr(pd, addr, length, iova, (unsigned int)access);
}

URV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
					   size_t length, uint64_t iova,
					   unsigned int access)
{
	return reg_mr(pd, addr, length, iova, access);
}

URV_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct urv_mr *mr = to_umr(ibmr);
	struct urv_context *ctx = to_uctx(ibmr->context);
	int ret;

	if (mr->imported) { /* only the import goes (import.c) */
		urv__unimport_mr(mr);
		return 0;
	}
	if (atomic_load(&mr->imports))
		return EBUSY;
	ret = ur_engine_mr_del(ctx->eng, &mr->umr);
	if (ret)
		return -ret; /* EBUSY: memory windows are bound to it */
	if (mr->dm) {
		urv__dm_put(mr->dm); /* nothing pinned here */
	} else if (!mr->odp) {
		/* Not reference counted: overlapping regions share the fate
		 * of the last dereg (docs/verbs.md). */
		unpin(mr->umr.host, mr->umr.length, mr->locked);
	}
	urv__pd_put(to_upd(ibmr->pd));
	free(mr);
	return 0;
}

/*
 * IBTA 11.2.8.? Reregister: new PD, access and/or translation, same keys.
 * The region is updated once no request uses it (the engine's key table
 * lock), so a request sees the old or the new region, never a mix.
 * Errors as rdma-core: IBV_REREG_MR_ERR_INPUT for bad arguments,
 * IBV_REREG_MR_ERR_CMD when the device refuses (EBUSY: windows bound).
 */
URV_EXPORT int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *pd,
			    void *addr, size_t length, int access)
{
	struct urv_mr *mr;
	struct ur_mr upd;
	unsigned int acc;
	bool locked = false;
	int ret;

	if (!ibmr || !urv__is_our_context(ibmr->context) || !flags ||
	    (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED))
		goto einval;
	if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!addr || !length))
		goto einval;
	if (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS))
		goto einval;
	if ((flags & IBV_REREG_MR_CHANGE_PD) &&
	    (!pd || pd->context != ibmr->context))
		goto einval;
	mr = to_umr(ibmr);
	if (mr->imported) /* its owner changes it */
		goto einval;
	upd = mr->umr;
	acc = (flags & IBV_REREG_MR_CHANGE_ACCESS) ? (unsigned int)access
						  : mr->access;
	/* A DM MR keeps its device memory and stays zero based. */
	if (mr->dm && ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) ||
		       !(acc & IBV_ACCESS_ZERO_BASED) ||
		       (acc & (IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB |
			       IBV_ACCESS_MW_BIND))))
		goto einval;
	ret = check_access(acc);
	if (ret) {
		errno = -ret;
		return IBV_REREG_MR_ERR_INPUT;
	}
	upd.access = acc & URV_ACCESS_SUPPORTED;
	if (flags & IBV_REREG_MR_CHANGE_PD)
		upd.pdn = to_upd(pd)->pdn;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		upd.host = addr;
		upd.length = length;
		upd.iova = (uintptr_t)addr;
		if (!mr->odp)
			locked = pin(addr, length);
	}
	if ((acc ^ mr->access) & IBV_ACCESS_ZERO_BASED ||
	    (flags & IBV_REREG_MR_CHANGE_TRANSLATION))
		upd.iova = (acc & IBV_ACCESS_ZERO_BASED) ? 0
							: (uintptr_t)upd.host;

	ret = ur_engine_mr_update(to_uctx(ibmr->context)->eng, &mr->umr, &upd);
	if (ret) {
		if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && !mr->odp)
			unpin(addr, length, locked);
		errno = -ret;
		return IBV_REREG_MR_ERR_CMD;
	}
	mr->access = acc;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		if (!mr->odp)
			unpin(ibmr->addr, ibmr->length, mr->locked);
		mr->locked = locked;
		ibmr->addr = addr;
		ibmr->length = length;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		atomic_fetch_add(&to_upd(pd)->users, 1);
		urv__pd_put(to_upd(ibmr->pd));
		ibmr->pd = pd;
	}
	return 0;

einval:
	errno = EINVAL;
	return IBV_REREG_MR_ERR_INPUT;
}

/*
 * ibv_advise_mr: uroce never pins, so every region behaves as on-demand
 * paging and prefetching only warms the pages (MADV_WILLNEED, or
 * MADV_POPULATE_WRITE for PREFETCH_WRITE where the kernel has it).
 * EINVAL for an unknown advice or flag, no SGE, or an SGE that is not
 * inside an ODP region of @pd (PREFETCH_WRITE: with local write).
 */
int urv__advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		    uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge)
{
	struct urv_context *ctx = to_uctx(pd->context);

	if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return EINVAL;
	if ((flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH) || !num_sge ||
	    !sg_list)
		return EINVAL;
	for (uint32_t i = 0; i < num_sge; i++) {
		const struct ur_mr *k = ur_engine_mr_find(ctx->eng, sg_list[i].lkey);
		uint32_t need = advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE
					? UR_ACCESS_LOCAL_WRITE : 0;

		if (!k || k->lkey != sg_list[i].lkey ||
		    !(k->access & UR_ACCESS_ON_DEMAND) ||
		    ur_mr_check(k, to_upd(pd)->pdn, sg_list[i].addr,
				sg_list[i].length, need, NULL))
			return EINVAL;
	}
	if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return 0; /* map nothing that is not mapped already */
	for (uint32_t i = 0; i < num_sge; i++) {
		void *ps;
		size_t plen;

		if (!sg_list[i].length)
			continue;
		page_range((void *)(uintptr_t)sg_list[i].addr,
			   sg_list[i].length, &ps, &plen);
#ifdef MADV_POPULATE_WRITE
		if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
		    !madvise(ps, plen, MADV_POPULATE_WRITE))
			continue;
#endif
		(void)madvise(ps, plen, MADV_WILLNEED);
	}
	return 0;
}

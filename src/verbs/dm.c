// SPDX-License-Identifier: MIT
/*
 * Device memory: ibv_alloc_dm, ibv_free_dm, ibv_memcpy_to/from_dm and
 * ibv_reg_dm_mr.
 *
 * An HCA's device memory is memory on the NIC that the host reaches over
 * PCI; a software NIC's own memory is host memory, so a DM here is a shared
 * anonymous mapping the library owns (mlock()ed where RLIMIT_MEMLOCK
 * allows). The application reaches it only through the memcpy calls and
 * through DM MRs, which are zero based (IBV_ACCESS_ZERO_BASED is required)
 * and work like any region: local SGEs, and the target of remote WRITE,
 * READ and atomics. Shared, not private, so a forked child sees the same
 * bytes as the parent, as it would see a device's mapped memory.
 *
 * The rules are rdma-core's (man ibv_alloc_dm; libmlx5 and the kernel):
 * comp_mask must be 0 (EINVAL), length 1..max_dm_size and at most what
 * is left of the device's max_dm_size in this process (else ENOMEM);
 * log_align_req up to 30. memcpy: a range past the end is EFAULT, an
 * offset or length that is not a multiple of 4 EINVAL. reg_dm_mr: without
 * ZERO_BASED, with an access bit a DM MR cannot have, or past the end,
 * EINVAL. free: EBUSY while DM MRs use it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "urv.h"

#define URV_DM_ACCESS                                                        \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                   \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                  \
	 IBV_ACCESS_ZERO_BASED | IBV_ACCESS_OPTIONAL_RANGE)

static atomic_uint urv_dm_handles;

/* Take @len of the device's DM budget; false when it is used up. */
static bool dm_budget_take(struct urv_device *dev, size_t len)
{
	size_t used = atomic_load(&dev->dm_used);

	do {
		if (len > URV_MAX_DM_SIZE - used)
			return false;
	} while (!atomic_compare_exchange_weak(&dev->dm_used, &used,
					       used + len));
	return true;
}

static int dm_access(struct urv_dm *dm, uint64_t off, size_t len)
{
	if (off > dm->length || len > dm->length - off)
		return EFAULT;
	/* As an HCA's (libmlx5): 4-byte granules. */
	if ((off & 3) || (len & 3))
		return EINVAL;
	return 0;
}

static int dm_memcpy_to(struct ibv_dm *ibdm, uint64_t off, const void *host,
			size_t len)
{
	struct urv_dm *dm = to_udm(ibdm);
	int ret = dm_access(dm, off, len);

	if (!ret && len)
		memcpy(dm->base + off, host, len);
	return ret;
}

static int dm_memcpy_from(void *host, struct ibv_dm *ibdm, uint64_t off,
			  size_t len)
{
	struct urv_dm *dm = to_udm(ibdm);
	int ret = dm_access(dm, off, len);

	if (!ret && len)
		memcpy(host, dm->base + off, len);
	return ret;
}

struct ibv_dm *urv__alloc_dm(struct ibv_context *context,
			     struct ibv_alloc_dm_attr *attr)
{
	struct urv_device *dev;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), align, len;
	struct urv_dm *dm;
	uintptr_t start;

	if (!urv__is_our_context(context) || !attr || attr->comp_mask ||
	    !attr->length || attr->log_align_req > URV_DM_MAX_LOG_ALIGN)
		return urv_err_ptr(-EINVAL);
	if (attr->length > URV_MAX_DM_SIZE)
		return urv_err_ptr(-EINVAL); /* as libmlx5: over max_dm_size */
	dev = to_uctx(context)->dev;
	if (!dm_budget_take(dev, attr->length))
		return urv_err_ptr(-ENOMEM);
	dm = calloc(1, sizeof(*dm));
	if (!dm)
		goto err_budget;
	align = (size_t)1 << attr->log_align_req;
	if (align < ps)
		align = ps;
	len = (attr->length + ps - 1) & ~(ps - 1);
	dm->map_len = len + align - ps; /* slack to align the start */
	dm->map = mmap(NULL, dm->map_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (dm->map == MAP_FAILED)
		goto err_free;
	start = ((uintptr_t)dm->map + align - 1) & ~(uintptr_t)(align - 1);
	dm->base = (uint8_t *)start;
	dm->length = attr->length;
	dm->locked = !mlock(dm->base, len); /* best effort, as MRs */
	dm->dm.context = context;
	dm->dm.memcpy_to_dm = dm_memcpy_to;
	dm->dm.memcpy_from_dm = dm_memcpy_from;
	dm->dm.comp_mask = IBV_DM_MASK_HANDLE;
	dm->dm.handle = atomic_fetch_add(&urv_dm_handles, 1) + 1;
	urv__share_dm(dm, true); /* ibv_import_dm finds it */
	return &dm->dm;

err_free:
	free(dm);
err_budget:
	atomic_fetch_sub(&dev->dm_used, attr->length);
	return urv_err_ptr(-ENOMEM);
}

int urv__free_dm(struct ibv_dm *ibdm)
{
	struct urv_dm *dm = to_udm(ibdm);

	if (dm->imported) { /* only the import goes (import.c) */
		if (atomic_load(&dm->users) > 1)
			return EBUSY;
		urv__dm_put(dm);
		return 0;
	}
	/* Off the import list first: an import that found it holds it. */
	urv__share_dm(dm, false);
	if (atomic_load(&dm->users)) {
		urv__share_dm(dm, true);
		return EBUSY;
	}
	munmap(dm->map, dm->map_len); /* unlocks too */
	atomic_fetch_sub(&to_uctx(ibdm->context)->dev->dm_used, dm->length);
	free(dm);
	return 0;
}

struct ibv_mr *urv__reg_dm_mr(struct ibv_pd *ibpd, struct ibv_dm *ibdm,
			      uint64_t offset, size_t length,
			      unsigned int access)
{
	struct urv_dm *dm;
	struct urv_mr *mr;
	int ret;

	if (!ibpd || !ibdm || !urv__is_our_context(ibpd->context) ||
	    ibdm->context->device != ibpd->context->device)
		return urv_err_ptr(-EINVAL);
	dm = to_udm(ibdm);
	/* Zero based always (the DM has no address the application knows);
	 * remote write and atomics need local write (IBTA 10.6.3.1). */
	if (!(access & IBV_ACCESS_ZERO_BASED) || (access & ~URV_DM_ACCESS) ||
	    ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & IBV_ACCESS_LOCAL_WRITE)))
		return urv_err_ptr(-EINVAL);
	if (offset > dm->length || length > dm->length - offset)
		return urv_err_ptr(-EINVAL);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return urv_err_ptr(-ENOMEM);
	mr->dm = dm;
	mr->umr.iova = 0;
	mr->umr.host = dm->base + offset;
	mr->umr.length = length;
	mr->umr.access = access & ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	mr->access = access;
	mr->umr.pdn = to_upd(ibpd)->pdn;
	mr->umr.owner = &mr->mr;
	ret = ur_engine_mr_add(to_uctx(ibpd->context)->eng, &mr->umr);
	if (ret) {
		free(mr);
		return urv_err_ptr(ret);
	}
	mr->mr.context = ibpd->context;
	mr->mr.pd = ibpd;
	mr->mr.addr = NULL; /* as rdma-core: the DM's address is hidden */
	mr->mr.length = length;
	mr->mr.handle = mr->umr.lkey;
	mr->mr.lkey = mr->umr.lkey;
	mr->mr.rkey = mr->umr.rkey;
	atomic_fetch_add(&dm->users, 1);
	atomic_fetch_add(&to_upd(ibpd)->users, 1);
	return &mr->mr;
}

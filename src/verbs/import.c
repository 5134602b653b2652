// SPDX-License-Identifier: MIT
/*
 * Importing: ibv_import_device, ibv_import_pd/mr/dm and ibv_unimport_*.
 *
 * With a kernel, a context's command fd names its uverbs file, and another
 * context opened on it (ibv_import_device, usually in another process that
 * received the fd) reaches the same kernel objects by their handles. uroce
 * has no kernel: its objects live in the process that made them (keys in
 * its engine, memory in its address space). So importing works within one
 * process: each context's cmd_fd is a memfd of its own, ibv_import_device
 * finds the live context whose cmd_fd is the same file (a dup of it) and
 * opens another context on its device, which shares its engine, as any two
 * contexts of one device in a process do (device.c); the new context owns
 * the fd. ibv_import_pd/mr/dm find the object by its handle among those of
 * contexts on the same engine and give a new struct that names it. A fd
 * that is no live context of this process (another process's) is
 * EOPNOTSUPP; an unknown handle EINVAL.
 *
 * An import holds its original: ibv_dealloc_pd, ibv_dereg_mr and
 * ibv_free_dm of the original are EBUSY while imports of it exist, and
 * the dealloc/dereg/free of an import only unimports it (with a kernel it
 * would destroy the shared object; here the original's owner does).
 * ibv_unimport_pd/dm may come while objects made on the import still
 * point at it (rdma-core allows it, pyverbs does it): the application's
 * handle is one reference of the import's users, and the last put frees
 * it (urv__pd_put, urv__dm_put).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "urv.h"

static pthread_mutex_t share_lock = PTHREAD_MUTEX_INITIALIZER;
static struct urv_link ctxs = { &ctxs, &ctxs }, pds = { &pds, &pds },
		       dms = { &dms, &dms };

static void link_set(struct urv_link *head, struct urv_link *l, bool add)
{
	pthread_mutex_lock(&share_lock);
	if (add) {
		l->next = head;
		l->prev = head->prev;
		head->prev->next = l;
		head->prev = l;
	} else if (l->next) {
		l->prev->next = l->next;
		l->next->prev = l->prev;
		l->next = l->prev = NULL;
	}
	pthread_mutex_unlock(&share_lock);
}

void urv__share_ctx(struct urv_context *ctx, bool add)
{
	link_set(&ctxs, &ctx->link, add);
}

void urv__share_pd(struct urv_pd *pd, bool add)
{
	link_set(&pds, &pd->link, add);
}

void urv__share_dm(struct urv_dm *dm, bool add)
{
	link_set(&dms, &dm->link, add);
}

URV_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct ibv_device *dev = NULL;
	struct ibv_context *c;
	struct stat st;

	if (fstat(cmd_fd, &st))
		return urv_err_ptr(-EINVAL);
	pthread_mutex_lock(&share_lock);
	for (struct urv_link *l = ctxs.next; l != &ctxs; l = l->next) {
		struct urv_context *x = urv_container_of(l, struct urv_context,
							 link);

		if (x->cmd_ino && x->cmd_dev == st.st_dev &&
		    x->cmd_ino == st.st_ino) {
			dev = x->vctx.context.device;
			break;
		}
	}
	pthread_mutex_unlock(&share_lock);
	if (!dev) /* another process's context, or no context */
		return urv_err_ptr(-EOPNOTSUPP);
	c = ibv_open_device(dev);
	if (!c)
		return NULL;
	/* The new context owns the fd it was imported through. */
	close(c->cmd_fd);
	c->cmd_fd = cmd_fd;
	return c;
}

/* The original PD (or DM) behind @handle among the objects of contexts on
 * @ctx's engine; NULL if none. share_lock held. */
static struct urv_pd *find_pd(struct urv_context *ctx, uint32_t handle)
{
	for (struct urv_link *l = pds.next; l != &pds; l = l->next) {
		struct urv_pd *pd = urv_container_of(l, struct urv_pd, link);

		if (pd->pd.handle == handle &&
		    to_uctx(pd->pd.context)->eng == ctx->eng)
			return pd;
	}
	return NULL;
}

static struct urv_dm *find_dm(struct urv_context *ctx, uint32_t handle)
{
	for (struct urv_link *l = dms.next; l != &dms; l = l->next) {
		struct urv_dm *dm = urv_container_of(l, struct urv_dm, link);

		if (dm->dm.handle == handle &&
		    to_uctx(dm->dm.context)->eng == ctx->eng)
			return dm;
	}
	return NULL;
}

URV_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context,
					uint32_t pd_handle)
{
	struct urv_pd *orig, *pd;

	if (!urv__is_our_context(context))
		return urv_err_ptr(-EINVAL);
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return urv_err_ptr(-ENOMEM);
	pthread_mutex_lock(&share_lock);
	orig = find_pd(to_uctx(context), pd_handle);
	if (orig)
		atomic_fetch_add(&orig->users, 1);
	pthread_mutex_unlock(&share_lock);
	if (!orig) {
		free(pd);
		return urv_err_ptr(-EINVAL);
	}
	pd->pd.context = context;
	pd->pd.handle = orig->pd.handle;
	pd->pdn = orig->pdn;
	pd->imported = orig;
	atomic_init(&pd->users, 1); /* the application's handle */
	atomic_fetch_add(&to_uctx(context)->npd, 1);
	return &pd->pd;
}

void urv__pd_put(struct urv_pd *pd)
{
	if (atomic_fetch_sub(&pd->users, 1) == 1 && pd->imported) {
		urv__pd_put(pd->imported);
		atomic_fetch_sub(&to_uctx(pd->pd.context)->npd, 1);
		free(pd);
	}
}

URV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	if (pd && to_upd(pd)->imported)
		urv__pd_put(to_upd(pd));
}

/* The handle of a region is its lkey: the engine's key table finds it. */
URV_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *ibpd,
					uint32_t mr_handle)
{
	const struct ur_mr *k;
	struct urv_mr *orig, *mr;

	if (!ibpd || !urv__is_our_context(ibpd->context))
		return urv_err_ptr(-EINVAL);
	k = ur_engine_mr_find(to_uctx(ibpd->context)->eng, mr_handle);
	if (!k || k->type != UR_KEY_MR || k->lkey != mr_handle ||
	    k->pdn != to_upd(ibpd)->pdn)
		return urv_err_ptr(-EINVAL);
	orig = to_umr(k->owner);
	if (orig->imported)
		orig = orig->imported;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return urv_err_ptr(-ENOMEM);
	mr->imported = orig;
	mr->mr = orig->mr;
	mr->mr.context = ibpd->context;
	mr->mr.pd = ibpd;
	atomic_fetch_add(&orig->imports, 1);
	atomic_fetch_add(&to_upd(ibpd)->users, 1);
	return &mr->mr;
}

void urv__unimport_mr(struct urv_mr *mr)
{
	atomic_fetch_sub(&mr->imported->imports, 1);
	urv__pd_put(to_upd(mr->mr.pd));
	free(mr);
}

URV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
	if (mr && to_umr(mr)->imported)
		urv__unimport_mr(to_umr(mr));
}

URV_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context,
					uint32_t dm_handle)
{
	struct urv_dm *orig, *dm;

	if (!urv__is_our_context(context))
		return urv_err_ptr(-EINVAL);
	dm = calloc(1, sizeof(*dm));
	if (!dm)
		return urv_err_ptr(-ENOMEM);
	pthread_mutex_lock(&share_lock);
	orig = find_dm(to_uctx(context), dm_handle);
	if (orig)
		atomic_fetch_add(&orig->users, 1);
	pthread_mutex_unlock(&share_lock);
	if (!orig) {
		free(dm);
		return urv_err_ptr(-EINVAL);
	}
	*dm = (struct urv_dm){ .dm = orig->dm, .base = orig->base,
			       .length = orig->length, .imported = orig };
	atomic_init(&dm->users, 1); /* the application's handle */
	dm->dm.context = context;
	return &dm->dm;
}

void urv__dm_put(struct urv_dm *dm)
{
	if (atomic_fetch_sub(&dm->users, 1) == 1 && dm->imported) {
		urv__dm_put(dm->imported);
		free(dm);
	}
}

URV_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
	if (dm && to_udm(dm)->imported)
		urv__dm_put(to_udm(dm));
}

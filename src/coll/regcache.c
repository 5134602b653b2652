/* SPDX-License-Identifier: MIT */
/*
 * Registration cache for user buffers, so large sends leave straight from
 * the caller's memory instead of through a staging copy, and large plain
 * receives land straight in it (remote write access). A collective
 * registers its buffers once (ur__reg_hint); the data path only looks up
 * (ur__reg_find) and falls back to the copy on a miss. Registering costs
 * milliseconds per 16 MiB, so entries live until evicted (least recently
 * used) or the communicator goes away.
 *
 * Entries are keyed by virtual address. That is right for uroce, which
 * reaches memory through the address, but a NIC that pins pages would
 * send stale data from a buffer that was freed and reallocated at the same
 * address; so the cache is on by default only on uroce devices
 * (UROCE_COLL_REGCACHE overrides: 0 off, N entries).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll_internal.h"

struct ur_reg {
	uintptr_t lo, hi;   /* page-aligned range the MR covers */
	struct ibv_mr *mr;
	int remote;         /* registered for remote writes too */
	uint64_t used;      /* LRU stamp */
};

int ur__reg_init(struct uroce_comm *c, int entries)
{
	c->nregs = entries > 0 ? entries : 0;
	if (!c->nregs)
		return 0;
	c->regs = calloc((size_t)c->nregs, sizeof(*c->regs));
	return c->regs ? 0 : -ENOMEM;
}

void ur__reg_fini(struct uroce_comm *c)
{
	for (int i = 0; i < c->nregs; i++)
		if (c->regs[i].mr)
			ibv_dereg_mr(c->regs[i].mr);
	free(c->regs);
	c->regs = NULL;
	c->nregs = 0;
}

struct ibv_mr *ur__reg_find(struct uroce_comm *c, const void *buf, size_t len,
			     int remote)
{
	uintptr_t a = (uintptr_t)buf;

	for (int i = 0; i < c->nregs; i++) {
		struct ur_reg *g = &c->regs[i];

		if (g->mr && g->lo <= a && a + len <= g->hi && g->remote >= remote) {
			g->used = ++c->reg_clock;
			return g->mr;
		}
	}
	return NULL;
}

/*
 * Make [buf, buf + len) findable. Only large buffers: below UR_ZC_MIN the
 * staging copy is cheap and a registration is not. Called between collectives' transfers, when no zero-copy send is in
 * flight (ur__xfer waits for them), so any entry may be evicted.
 */
void ur__reg_hint(struct uroce_comm *c, const void *buf, size_t len,
		   int remote)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t lo, hi;
	struct ur_reg *v = NULL;

	if (!c->nregs || !buf || len < UR_ZC_MIN || ur__reg_find(c, buf, len, remote))
		return;
	lo = (uintptr_t)buf & ~(uintptr_t)(pg - 1);
	hi = ((uintptr_t)buf + len + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1);
	for (int i = 0; i < c->nregs; i++) {
		struct ur_reg *g = &c->regs[i];

		/* A range this one covers would never be found first again. */
		if (g->mr && lo <= g->lo && g->hi <= hi && g->remote <= remote) {
			ibv_dereg_mr(g->mr);
			g->mr = NULL;
		}
		if (!g->mr ? (!v || v->mr) : (!v || (v->mr && g->used < v->used)))
			v = g;
	}
	if (v->mr)
		ibv_dereg_mr(v->mr);
	v->mr = ibv_reg_mr(c->pd, (void *)lo, hi - lo, remote ?
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : 0);
	v->remote = remote;
	v->lo = lo;
	v->hi = hi;
	v->used = ++c->reg_clock;
	/* A failed registration (memlock limit) just means the copy path. */
}

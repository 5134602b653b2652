/* SPDX-License-Identifier: MIT */
/*
 * Sub-communicators without a rendezvous of their own: the parent carries
 * the bootstrap. Every parent rank gives its (color, key) in a parent
 * allgather; each member creates its new communicator's CQ, staging
 * region and one RC QP per new peer on the parent's device and PD; a
 * second parent allgather carries the connection records (size x size,
 * zero where two ranks share no communicator); after connecting, a parent
 * barrier makes sure every new QP is ready before anyone writes.
 *
 * A sub-communicator has its own queue, progress thread, QPs and slots, so
 * several are in flight at once and independently of the parent. Its
 * failure detector is the root communicator's bootstrap sockets (wboot):
 * a failure anywhere aborts them, so every communicator of the job fails
 * together, as after a dead rank.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_internal.h"

struct member {
	int64_t key;
	int prank;
};

static int by_key(const void *a, const void *b)
{
	const struct member *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->prank - y->prank;
}

/* A child of c with c's settings, on c's device: rank and size set. */
static struct uroce_comm *child_new(struct uroce_comm *c, int rank, int size)
{
	struct uroce_comm *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->rank = rank;
	k->size = size;
	k->timeout_ms = c->timeout_ms;
	k->gid_index = c->gid_index;
	k->slot = c->slot;
	k->nslots = c->nslots;
	k->credit_batch = c->credit_batch;
	k->algo_override = c->algo_override;
	k->last_algo = "none";
	k->ctx = c->ctx;
	k->pd = c->pd;
	k->spin_ns = c->spin_ns;
	k->pspin_ns = c->pspin_ns;
	k->cpu_shared = c->cpu_shared;
	k->cur_spin_ns = c->spin_ns;
	k->block_ns = c->block_ns;
	k->yield = c->yield;
	k->qp_timeout = c->qp_timeout;
	k->boot.listen_fd = -1;
	k->wboot = c->wboot;
	k->parent = c;
	k->port = c->port;
	memcpy(k->gid, c->gid, 16);
	k->mtu = c->mtu;
	k->lid = c->lid;
	k->jumbo = c->jumbo;
	k->cma = c->cma;
	k->regcache_entries = c->regcache_entries;
	return k;
}

/* A rail's child: its own port (and device), with that port's GID,
 * MTU and LID. */
struct rail_at {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int port;
};

static int child_on_rail(struct uroce_comm *k, const struct rail_at *at)
{
	struct ibv_port_attr pa;
	union ibv_gid gid;

	k->ctx = at->ctx;
	k->pd = at->pd;
	k->port = at->port;
	if (ibv_query_port(k->ctx, (uint8_t)k->port, &pa) ||
	    ibv_query_gid(k->ctx, (uint8_t)k->port, k->gid_index, &gid))
		return -ENODEV;
	memcpy(k->gid, gid.raw, 16);
	k->mtu = (uint32_t)pa.active_mtu;
	k->lid = pa.lid;
	return 0;
}

static int split(struct uroce_comm *c, int color, int key,
		 const struct rail_at *rail, struct uroce_comm **out)
{
	int n = c->size, me = -1, m = 0, e;
	int64_t mine[2] = { color, key };
	int64_t *all = malloc(sizeof(int64_t) * 2 * (size_t)n);
	struct member *mem = malloc(sizeof(*mem) * (size_t)n);
	int *child_of = malloc(sizeof(int) * (size_t)n); /* parent -> child rank */
	struct ur_conn_info *recs = calloc((size_t)n, sizeof(*recs));
	struct ur_conn_info *table = calloc((size_t)n * (size_t)n, sizeof(*table));
	struct uroce_comm *k = NULL;

	*out = NULL;
	if (!all || !mem || !child_of || !recs || !table) {
		e = ur__fail(c, -ENOMEM, "split: out of memory");
		goto done;
	}
	e = ur__run_allgather(c, mine, all, 2, UROCE_INT64);
	if (e)
		goto done;
	for (int j = 0; j < n; j++) {
		child_of[j] = -1;
		if (color >= 0 && all[2 * j] == color)
			mem[m++] = (struct member){ .key = all[2 * j + 1], .prank = j };
	}
	qsort(mem, (size_t)m, sizeof(*mem), by_key);
	for (int i = 0; i < m; i++) {
		child_of[mem[i].prank] = i;
		if (mem[i].prank == c->rank)
			me = i;
	}
	if (me >= 0) {
		k = child_new(c, me, m);
		if (!k) {
			e = ur__fail(c, -ENOMEM, "split: out of memory");
			goto done;
		}
		e = rail ? child_on_rail(k, rail) : 0;
		if (!e)
			e = ur__reg_init(k, k->regcache_entries);
		if (!e)
			e = ur__comm_setup(k);
		if (e) {
			/* The others are already on their way: fail them. */
			e = ur__fail(c, e, "split: creating the new communicator: %s",
				     strerror(-e));
			goto done;
		}
		for (int j = 0; j < n; j++)
			if (child_of[j] >= 0)
				ur__conn_info(k, child_of[j], &recs[j]);
	}
	e = ur__run_allgather(c, recs, table, sizeof(*recs) * (size_t)n, UROCE_UINT8);
	if (e)
		goto done;
	for (int j = 0; k && j < n; j++) {
		if (child_of[j] < 0 || j == c->rank)
			continue;
		e = ur__comm_connect(k, child_of[j], &recs[j], &table[(size_t)j * n + c->rank]);
		if (e) {
			e = ur__fail(c, e, "split: connecting to rank %d: %s", j, strerror(-e));
			goto done;
		}
	}
	/* Nobody writes before every new QP is at least RTR. */
	e = ur__run_barrier(c);
	if (k)
		ur__seg_unlink(k); /* every member has mapped it (or never will) */
done:
	if (!e && k) {
		__atomic_fetch_add(&c->children, 1, __ATOMIC_ACQ_REL);
		*out = k;
	} else if (k) {
		ur__comm_free(k);
	}
	free(all);
	free(mem);
	free(child_of);
	free(recs);
	free(table);
	return e;
}

int ur__run_split(struct uroce_comm *c, int color, int key,
		   struct uroce_comm **out)
{
	return split(c, color, key, NULL, out);
}

int ur__run_split_rail(struct uroce_comm *c, struct ibv_context *ctx,
			struct ibv_pd *pd, int port, struct uroce_comm **out)
{
	struct rail_at at = { ctx, pd, port };

	return split(c, 0, c->rank, &at, out);
}

/*
 * The lanes of a new communicator c (nbc.c): want_lanes - 1 splits of c
 * with every rank in one color, in rank order, so that up to want_lanes
 * of c's collectives progress at once. Collective over c, run by its
 * creator before anyone else can use c.
 */
int ur__lanes_init(struct uroce_comm *c)
{
	int n = c->want_lanes;

	if (n <= 1)
		return 0;
	c->lanes = calloc((size_t)n, sizeof(*c->lanes));
	if (!c->lanes)
		return ur__fail(c, -ENOMEM, "lanes: out of memory");
	c->lanes[0] = c;
	for (int i = 1; i < n; i++) {
		struct uroce_comm *k;
		int e = ur__run_split(c, 0, c->rank, &k);

		if (e)
			return e;
		/* Not a child the caller destroys: c's teardown does. */
		__atomic_fetch_sub(&c->children, 1, __ATOMIC_ACQ_REL);
		k->owner = c;
		c->lanes[i] = k;
		c->nlanes = i + 1;
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * A small chained hash table: QPN -> QP, key -> MR, port -> socket. Its
 * writers are serialized by their owner's lock; a reader may run beside a
 * writer that only adds (ur__map_put publishes a node whole, with a release
 * store), never beside one that deletes: the engine reads its QP table
 * under rx_lock alone, and deletes under rx_lock too (engine.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "ur_io_priv.h"

static uint32_t slot_of(const struct ur_map *m, uint32_t key)
{
	/* Keys are random or QPNs; a multiplicative hash spreads both. */
	return (key * 2654435761u) & (m->nb - 1);
}

int ur__map_init(struct ur_map *m, uint32_t nb)
{
	m->b = calloc(nb, sizeof(*m->b));
	m->nb = nb;
	m->n = 0;
	return m->b ? 0 : -ENOMEM;
}

void ur__map_fini(struct ur_map *m)
{
	for (uint32_t i = 0; m->b && i < m->nb; i++) {
		struct ur_map_node *n = m->b[i], *nx;

		for (; n; n = nx) {
			nx = n->next;
			free(n);
		}
	}
	free(m->b);
	m->b = NULL;
}

void *ur__map_get(const struct ur_map *m, uint32_t key)
{
	for (struct ur_map_node *n = __atomic_load_n(&m->b[slot_of(m, key)],
						     __ATOMIC_ACQUIRE);
	     n; n = __atomic_load_n(&n->next, __ATOMIC_ACQUIRE))
		if (n->key == key)
			return n->val;
	return NULL;
}

int ur__map_put(struct ur_map *m, uint32_t key, void *val)
{
	uint32_t s = slot_of(m, key);
	struct ur_map_node *n;

	if (ur__map_get(m, key))
		return -EEXIST;
	n = malloc(sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->key = key;
	n->val = val;
	n->next = m->b[s];
	__atomic_store_n(&m->b[s], n, __ATOMIC_RELEASE);
	m->n++;
	return 0;
}

void *ur__map_del(struct ur_map *m, uint32_t key)
{
	for (struct ur_map_node **p = &m->b[slot_of(m, key)]; *p;
	     p = &(*p)->next) {
		struct ur_map_node *n = *p;
		void *val;

		if (n->key != key)
			continue;
		*p = n->next;
		val = n->val;
		free(n);
		m->n--;
		return val;
	}
	return NULL;
}

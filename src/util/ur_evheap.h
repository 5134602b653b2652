/* SPDX-License-Identifier: MIT */
/*
 * The event queue of everything that runs on virtual time (the simulator,
 * the transport tests' network): a binary min-heap ordered by (time,
 * insertion sequence), so that events of one instant run in the order
 * they were scheduled, as libuv's timer heap orders its timers.
 */
#ifndef UR_EVHEAP_H
#define UR_EVHEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct ur_ev {
	uint64_t t, seq;
	void *ptr;
	uint32_t type, arg;
};

struct ur_evheap {
	struct ur_ev *a;
	size_t n, cap;
	uint64_t seq;
};

static inline bool ur_ev_before(const struct ur_ev *a, const struct ur_ev *b)
{
	/* one 128-bit comparison: no branch between the two keys */
	return ((unsigned __int128)a->t << 64 | a->seq) <
	       ((unsigned __int128)b->t << 64 | b->seq);
}

/* Schedule an event at @t with a sequence number taken earlier from
 * ur_evheap_reserve(): it runs where it would have had it been pushed
 * then (an event that is often not needed is only pushed once it is). */
static inline int ur_evheap_push_seq(struct ur_evheap *h, uint64_t t,
				     uint64_t seq, uint32_t type, void *ptr,
				     uint32_t arg)
{
	struct ur_ev e = { .t = t, .seq = seq, .ptr = ptr, .type = type,
			   .arg = arg };
	size_t i;

	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 1024;
		struct ur_ev *a = realloc(h->a, cap * sizeof(*a));

		if (!a)
			return -1;
		h->a = a;
		h->cap = cap;
	}
	i = h->n++;
	while (i > 0) {
		size_t up = (i - 1) / 2;

		if (!ur_ev_before(&e, &h->a[up]))
			break;
		h->a[i] = h->a[up];
		i = up;
	}
	h->a[i] = e;
	return 0;
}

/* The sequence number the next push would get, taken. */
static inline uint64_t ur_evheap_reserve(struct ur_evheap *h)
{
	return h->seq++;
}

/* Schedule an event at @t; 0, or -1 when out of memory. */
static inline int ur_evheap_push(struct ur_evheap *h, uint64_t t,
				 uint32_t type, void *ptr, uint32_t arg)
{
	return ur_evheap_push_seq(h, t, h->seq++, type, ptr, arg);
}

/* The earliest event (the heap must not be empty). */
static inline struct ur_ev ur_evheap_pop(struct ur_evheap *h)
{
	struct ur_ev top = h->a[0], last = h->a[--h->n];
	size_t i = 0, n = h->n;

	for (;;) {
		size_t l = 2 * i + 1, m;

		if (l >= n)
			break;
		m = l;
		if (l + 1 < n && ur_ev_before(&h->a[l + 1], &h->a[l]))
			m = l + 1;
		if (!ur_ev_before(&h->a[m], &last))
			break;
		h->a[i] = h->a[m];
		i = m;
	}
	if (n)
		h->a[i] = last;
	return top;
}

static inline void ur_evheap_fini(struct ur_evheap *h)
{
	free(h->a);
	h->a = NULL;
	h->n = h->cap = 0;
}

#endif

// SPDX-License-Identifier: MIT
/*
 * The event queue: events ordered by (time, insertion sequence), so that
 * ties resolve in the order events were scheduled (as libuv's timer heap).
 *
 * Three parts, one order. The near future (packets, ports, PFC frames:
 * nearly all of them less than a link delay and a packet's serialisation
 * ahead) goes into a calendar of 1 ns buckets covering `nb` ns from the
 * running event's time; an event of one instant lands in one bucket,
 * where it only needs ordering by sequence, and the sequence grows as
 * events are scheduled, so it is nearly always appended (a port's end of
 * serialisation, pushed late under the sequence it reserved earlier, is
 * moved back a few places). Events beyond the calendar go to a binary
 * heap (`heap`), QP timers and flow starts to another (`slow`: one per
 * QP or flow, mostly far off). The queue pops the earliest of the three
 * heads, so the order is exactly that of one heap (`evq heap` keeps
 * everything in the heaps: the test compares the two event for event).
 *
 * Why: at 8192 hosts the one heap held tens of thousands of events and
 * every pop sifted a hole down its whole depth, most levels a cache miss;
 * a bucket is read front to back, and its next event's object (the
 * packet, the port) is fetched while the current one runs.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_priv.h"

/* ---- calendar ----------------------------------------------------------- */
static uint32_t pow2_at_least(uint64_t v)
{
	uint32_t p = 1;

	while (p < v && p < (1u << 30))
		p <<= 1;
	return p;
}

int sim__evq_init(struct sim *s)
{
	struct sim_cal *c = &s->cal;
	uint64_t bps = s->c.host_bps < s->c.fabric_bps ? s->c.host_bps
						       : s->c.fabric_bps;
	uint64_t ser = bps ? ((uint64_t)(s->c.mtu + 128 + SIM_WIRE_OVH) *
			      8000000000ull + bps - 1) / bps : 0;
	uint64_t span = 2 * (s->c.link_delay_ns + ser + 64);

	if (s->c.evq == SIM_EVQ_HEAP)
		return 0;
	/* what a link delay and a packet's serialisation cover, twice; a
	 * bucket is 16 bytes empty */
	c->nb = pow2_at_least(span < 1024 ? 1024 : span > 65536 ? 65536 : span);
	c->mask = c->nb - 1;
	c->b = calloc(c->nb, sizeof(*c->b));
	c->bits = calloc(c->nb / 64, sizeof(*c->bits));
	if (!c->b || !c->bits)
		return -1;
	return 0;
}

void sim__evq_fini(struct sim *s)
{
	struct sim_cal *c = &s->cal;

	for (uint32_t i = 0; c->b && i < c->nb; i++)
		free(c->b[i].a);
	free(c->b);
	free(c->bits);
	memset(c, 0, sizeof(*c));
	ur_evheap_fini(&s->heap);
	ur_evheap_fini(&s->slow);
}

static void cal_put(struct sim_cal *c, const struct ur_ev *e)
{
	uint32_t i = (uint32_t)e->t & c->mask;
	struct sim_cal_bucket *b = &c->b[i];
	uint32_t j;

	if (b->n == b->cap) {
		if (b->head) { /* room at the front: move the rest down */
			memmove(b->a, b->a + b->head,
				(b->n - b->head) * sizeof(*b->a));
			b->n -= b->head;
			b->head = 0;
		} else {
			uint32_t cap = b->cap ? 2 * b->cap : 8;
			struct ur_ev *a = realloc(b->a, cap * sizeof(*a));

			if (!a)
				abort(); /* out of memory: the run cannot go on */
			b->a = a;
			b->cap = cap;
		}
	}
	/* one instant per bucket: ordered by sequence alone */
	for (j = b->n; j > b->head && b->a[j - 1].seq > e->seq; j--)
		b->a[j] = b->a[j - 1];
	b->a[j] = *e;
	if (b->n++ == b->head)
		c->bits[i >> 6] |= 1ull << (i & 63);
	c->n++;
}

/* The first non-empty bucket from base's (the calendar must not be
 * empty): buckets hold the instants [base, base + nb) in order round the
 * ring. */
static struct sim_cal_bucket *cal_first(const struct sim_cal *c)
{
	uint32_t i = (uint32_t)c->base & c->mask, w = i >> 6;
	uint64_t m = c->bits[w] & (~0ull << (i & 63));
	uint32_t nw = c->nb >> 6;

	while (!m) { /* round the ring; back at w, its bits below i */
		w = (w + 1) & (nw - 1);
		m = c->bits[w];
	}
	return &c->b[(w << 6) + (uint32_t)__builtin_ctzll(m)];
}

/* ---- push and pop --------------------------------------------------------- */
void sim__push_seq(struct sim *s, uint64_t t, uint64_t seq, uint32_t type,
		   void *ptr, uint32_t arg)
{
	struct sim_cal *c = &s->cal;
	struct ur_evheap *h;

	if (type == SIM_EV_QPTIMER || type == SIM_EV_FLOW) {
		h = &s->slow;
	} else if (c->nb && t >= c->base && t - c->base < c->nb) {
		struct ur_ev e = { .t = t, .seq = seq, .ptr = ptr,
				   .type = type, .arg = arg };

		cal_put(c, &e);
		return;
	} else {
		h = &s->heap;
	}
	if (ur_evheap_push_seq(h, t, seq, type, ptr, arg))
		abort(); /* out of memory: the run cannot go on */
}

void sim__push(struct sim *s, uint64_t t, uint32_t type, void *ptr,
	       uint32_t arg)
{
	sim__push_seq(s, t, ur_evheap_reserve(&s->heap), type, ptr, arg);
}

bool sim__evq_empty(const struct sim *s)
{
	return !s->heap.n && !s->slow.n && !s->cal.n;
}

bool sim__evq_pop(struct sim *s, uint64_t end, struct ur_ev *out)
{
	struct sim_cal *c = &s->cal;
	struct sim_cal_bucket *b = NULL;
	const struct ur_ev *best = NULL;
	int from = 0; /* 0 calendar, 1 heap, 2 slow */

	if (c->n) {
		b = cal_first(c);
		best = &b->a[b->head];
	}
	if (s->heap.n && (!best || ur_ev_before(&s->heap.a[0], best))) {
		best = &s->heap.a[0];
		from = 1;
	}
	if (s->slow.n && (!best || ur_ev_before(&s->slow.a[0], best))) {
		best = &s->slow.a[0];
		from = 2;
	}
	if (!best || best->t > end)
		return false;
	if (from == 1) {
		*out = ur_evheap_pop(&s->heap);
	} else if (from == 2) {
		*out = ur_evheap_pop(&s->slow);
	} else {
		*out = b->a[b->head++];
		c->n--;
		if (b->head == b->n) {
			uint32_t i = (uint32_t)(b - c->b);

			b->head = b->n = 0;
			c->bits[i >> 6] &= ~(1ull << (i & 63));
		}
	}
	/* nothing earlier is left anywhere, so the calendar may start here */
	if (c->nb)
		c->base = out->t;
	if (c->n) {
		/* The calendar's next event most likely runs next: fetch what
		 * it points at (packet, port) and, for an arrival, the node,
		 * while this one runs (each was a cache miss at 8192 hosts). */
		const struct ur_ev *nx;

		b = cal_first(c);
		nx = &b->a[b->head];
		__builtin_prefetch(nx->ptr);
		if (nx->type == SIM_EV_ARRIVE)
			__builtin_prefetch(&s->nodes[nx->arg]);
	}
	return true;
}

// SPDX-License-Identifier: MIT
/* Traffic classes and the device's transmit scheduler (ur_tcs.h). Pure:
 * time comes in as `now`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ur_tcs.h"

void ur_tcs_cfg_default(struct ur_tcs_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (unsigned int p = 0; p < UR_TC_N; p++)
		cfg->weight[p] = 1;
}

bool ur_tcs_cfg_active(const struct ur_tcs_cfg *cfg)
{
	if (cfg->strict)
		return true;
	for (unsigned int p = 0; p < UR_TC_N; p++)
		if (cfg->weight[p] != 1 || cfg->min_bps[p])
			return true;
	return false;
}

/* Up to 8 comma-separated unsigned values in [lo, hi] into @v; how many,
 * or -EINVAL. */
static int parse_list(const char *text, unsigned long long lo,
		      unsigned long long hi, unsigned long long *v)
{
	const char *c = text;
	int n = 0;

	if (!c || !*c)
		return -EINVAL;
	for (;;) {
		char *end;

		if (n == UR_TC_N || *c < '0' || *c > '9')
			return -EINVAL;
		v[n] = strtoull(c, &end, 10);
		if (end == c || end - c > 12 || v[n] < lo || v[n] > hi)
			return -EINVAL;
		n++;
		if (!*end)
			return n;
		if (*end != ',')
			return -EINVAL;
		c = end + 1;
	}
}

int ur_tcs_parse_prios(const char *text, uint8_t *mask, char *why, size_t len)
{
	unsigned long long v[UR_TC_N];
	int n = parse_list(text, 0, 7, v);

	*mask = 0;
	for (int i = 0; i < n; i++) {
		if (*mask & (1u << v[i])) {
			n = -EINVAL;
			break;
		}
		*mask |= (uint8_t)(1u << v[i]);
	}
	if (n < 0) {
		snprintf(why, len, "a list of priorities 0..7, each once (\"5\", \"5,6\")");
		*mask = 0;
		return -EINVAL;
	}
	return 0;
}

int ur_tcs_parse_weights(const char *text, uint32_t *w, char *why, size_t len)
{
	unsigned long long v[UR_TC_N];
	int n = parse_list(text, 1, UR_TC_WEIGHT_MAX, v);

	if (n < 0) {
		snprintf(why, len, "1 to 8 weights 1..%u, priority 0 first (\"3,1\"; the missing ones 1)",
			 UR_TC_WEIGHT_MAX);
		return -EINVAL;
	}
	for (int i = 0; i < UR_TC_N; i++)
		w[i] = i < n ? (uint32_t)v[i] : 1;
	return 0;
}

int ur_tcs_parse_mins(const char *text, uint64_t *bps, char *why, size_t len)
{
	unsigned long long v[UR_TC_N];
	int n = parse_list(text, 0, 400000, v);

	if (n < 0) {
		snprintf(why, len, "1 to 8 rates 0..400000 Mbit/s, priority 0 first (\"0,100\"; the missing ones 0)");
		return -EINVAL;
	}
	for (int i = 0; i < UR_TC_N; i++)
		bps[i] = i < n ? v[i] * 1000000ull : 0;
	return 0;
}

/* The time @bytes take at @bps (bps > 0). */
static uint64_t bytes_ns(uint64_t bytes, uint64_t bps)
{
	return (uint64_t)((double)bytes * 8e9 / (double)bps);
}

static bool is_strict(const struct ur_tcs *s, unsigned int p)
{
	return s->cfg.strict & (1u << p);
}

void ur_tcs_init(struct ur_tcs *s, const struct ur_tcs_cfg *cfg, uint64_t bps,
		 uint64_t burst)
{
	unsigned int rank = 0;

	memset(s, 0, sizeof(*s));
	atomic_flag_clear(&s->lock);
	s->cfg = *cfg;
	s->on = ur_tcs_cfg_active(cfg);
	s->bps = bps;
	if (!bps)
		return;
	s->burst_ns = bytes_ns(burst, bps);
	/* A software NIC's QP that waits wakes late, by up to milliseconds
	 * on a busy host (the reason for the bucket's 4 ms, ur_cc.c): the
	 * quantum is a quarter of the bucket, and a backlogged class that
	 * does not ask counts as gone after twice the bucket's time (a QP
	 * that goes away leaves at once, ur__cc_idle), so that a late
	 * wake-up neither idles the device nor drops a class from the
	 * shares: with half the bucket, 3:1 on a loaded 2-CPU host came out
	 * 1.5 to 3.2, with twice 2.99 to 3.00 (docs/ports-classes.md). */
	s->quantum = burst / 4 > UR_TCS_QUANTUM ? burst / 4 : UR_TCS_QUANTUM;
	s->active_ns = 2 * s->burst_ns > UR_TCS_ACTIVE_NS ? 2 * s->burst_ns
							  : UR_TCS_ACTIVE_NS;
	s->wmax = 1;
	for (unsigned int p = 0; p < UR_TC_N; p++) {
		if (!cfg->weight[p])
			s->cfg.weight[p] = 1;
		if (!is_strict(s, p) && s->cfg.weight[p] > s->wmax)
			s->wmax = s->cfg.weight[p];
	}
	/* The ladder: weighted 0, dedicated ones a step each from the lowest
	 * priority up, a minimum rate above them all. */
	for (unsigned int p = 0; p < UR_TC_N; p++)
		if (is_strict(s, p))
			s->c[p].head_ns = ++rank * bytes_ns(UR_TCS_HEAD_BYTES, bps);
	for (unsigned int p = 0; p < UR_TC_N; p++) {
		uint64_t m = cfg->min_bps[p], b = m / 8000; /* 1 ms */

		if (!m)
			continue;
		s->c[p].min_burst_ns = bytes_ns(b < 32768 ? 32768 : b, m);
	}
}

static void lock(struct ur_tcs *s)
{
	while (atomic_flag_test_and_set_explicit(&s->lock, memory_order_acquire))
		;
}

static void unlock(struct ur_tcs *s)
{
	atomic_flag_clear_explicit(&s->lock, memory_order_release);
}

/* Backlogged: a QP of the class was told to wait and has not run out of
 * work since (ur_tcs_backlog), and the class asked within active_ns (a
 * QP that went away without saying so holds no one back for long). */
static bool backlogged(const struct ur_tcs *s, const struct ur_tcs_class *c,
		       uint64_t now)
{
	/* Threads pass `now` as of their call: @now may be before seen. */
	return c->nq && c->seen + s->active_ns >= now;
}

/* The smallest service count among the backlogged weighted classes but
 * @skip (UINT64_MAX: none). */
static uint64_t vmin(const struct ur_tcs *s, uint64_t now, unsigned int skip)
{
	uint64_t m = UINT64_MAX;

	for (unsigned int q = 0; q < UR_TC_N; q++)
		if (q != skip && !is_strict(s, q) && backlogged(s, &s->c[q], now) &&
		    s->c[q].vt < m)
			m = s->c[q].vt;
	return m;
}

/* The top of the ladder: a class under its minimum rate. */
static uint64_t head_min(const struct ur_tcs *s)
{
	unsigned int n = (unsigned int)__builtin_popcount(s->cfg.strict);

	return (n + 1) * bytes_ns(UR_TCS_HEAD_BYTES, s->bps);
}

/* A class that is not backlogged sent less than its share (a ping-pong,
 * a class back from idle): it keeps half a quantum of credit, no more
 * (start-time fair queueing's max(F, V)). */
static void catch_up(struct ur_tcs *s, struct ur_tcs_class *c,
		     unsigned int prio, uint64_t now)
{
	uint64_t o = vmin(s, now, prio), lag = s->quantum / 2;

	if (o != UINT64_MAX && c->vt + lag < o)
		c->vt = o - lag;
}

void ur_tcs_backlog(struct ur_tcs *s, unsigned int prio, bool on,
		    uint64_t now)
{
	struct ur_tcs_class *c = &s->c[prio & 7];

	if (!s->bps)
		return;
	lock(s);
	if (on) {
		if (!is_strict(s, prio & 7) && !backlogged(s, c, now))
			catch_up(s, c, prio & 7, now);
		c->nq++;
		if (now > c->seen)
			c->seen = now;
	} else if (c->nq) {
		c->nq--;
	}
	unlock(s);
}

bool ur_tcs_may(struct ur_tcs *s, unsigned int prio, uint32_t bytes,
		uint64_t now, uint64_t *when)
{
	struct ur_tcs_class *c = &s->c[prio & 7];
	bool strict = is_strict(s, prio & 7), ok;
	uint64_t w = 0;

	(void)bytes;
	if (!s->bps)
		return true;
	lock(s);
	if (now > c->seen)
		c->seen = now;
	if (s->cfg.min_bps[prio & 7] && c->min_t <= now &&
	    s->t <= now + head_min(s)) {
		ok = true;
	} else if (strict) {
		ok = s->t <= now + c->head_ns;
		w = s->t - c->head_ns;
	} else {
		uint64_t m = vmin(s, now, prio & 7);

		ok = s->t <= now && (m == UINT64_MAX || c->vt <= m + s->quantum);
		/* Behind the bucket: when it has room; ahead of the others:
		 * after they had a turn. */
		w = s->t > now ? s->t
			       : now + bytes_ns(s->quantum / 4, s->bps);
	}
	if (!ok) {
		if (s->cfg.min_bps[prio & 7]) {
			/* Or when its minimum lets it go: tokens of its own
			 * and the bucket within the top headroom. */
			uint64_t m = s->t - head_min(s);

			if (s->t < head_min(s) || m < c->min_t)
				m = c->min_t;
			if (m < w)
				w = m;
		}
		*when = w > now ? w : now + 1000;
	}
	unlock(s);
	return ok;
}

void ur_tcs_sent(struct ur_tcs *s, unsigned int prio, uint32_t bytes,
		 uint64_t now)
{
	struct ur_tcs_class *c = &s->c[prio & 7];
	uint64_t m = s->cfg.min_bps[prio & 7];

	if (!s->bps)
		return;
	lock(s);
	if (s->t + s->burst_ns < now)
		s->t = now - s->burst_ns; /* a full bucket holds the burst */
	s->t += bytes_ns(bytes, s->bps);
	if (now > c->seen)
		c->seen = now;
	if (m && c->min_t <= now) {
		/* Under the minimum: not counted against the weights. */
		if (c->min_t + c->min_burst_ns < now)
			c->min_t = now - c->min_burst_ns;
		c->min_t += bytes_ns(bytes, m);
	} else if (!is_strict(s, prio & 7)) {
		uint64_t v = (uint64_t)bytes * s->wmax / s->cfg.weight[prio & 7];
		if (!backlogged(s, c, now))
			catch_up(s, c, prio & 7, now);
		c->vt += v;
	}
	unlock(s);
}

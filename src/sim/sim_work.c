// SPDX-License-Identifier: MIT
/*
 * Workloads, as flows with dependencies: ring allreduce (reduce-scatter +
 * allgather, 2(R-1) steps of bytes/R per rank, each step split into
 * pipelined chunks; chunk c of step s leaves rank r once chunk c of step
 * s-1 arrived from rank r-1), MoE all-to-all (every rank sends `bytes` to
 * every other), a random permutation, an incast and a trace file
 * ("start_ns src dst bytes" per line, # comments).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim_priv.h"

static uint32_t *placement(struct sim *s, uint32_t r)
{
	uint32_t *o = malloc(s->nhosts * sizeof(*o));

	if (!o)
		abort();
	for (uint32_t i = 0; i < s->nhosts; i++)
		o[i] = i;
	if (s->c.random_placement)
		for (uint32_t i = s->nhosts - 1; i > 0; i--) {
			uint32_t j = (uint32_t)(sim__rand(s) % (i + 1)), t = o[i];

			o[i] = o[j];
			o[j] = t;
		}
	(void)r;
	return o;
}

static int ring(struct sim *s, char *err, size_t n)
{
	uint32_t r = s->c.ranks ? s->c.ranks : s->nhosts, c = s->c.chunks;
	uint32_t *o;
	uint64_t per;
	char w[300];

	if (r < 2 || r > s->nhosts || !c) {
		snprintf(err, n, "%sring: ranks must be 2..%u, chunks >= 1",
			 sim__cfg_where(&s->c, w, sizeof(w), "ranks", "chunks",
					 "workload", "k", "topology", "leaves",
					 "hosts_per_leaf", (const char *)NULL),
			 s->nhosts);
		return -1;
	}
	per = s->c.bytes / r / c;
	if (!per)
		per = 1;
	o = placement(s, r);
	for (uint32_t st = 0; st < 2 * (r - 1); st++)
		for (uint32_t ch = 0; ch < c; ch++)
			for (uint32_t k = 0; k < r; k++) {
				uint32_t f = sim_add_flow(s, o[k], o[(k + 1) % r], per, 0);

				if (st) {
					/* prev: step st-1, chunk ch, rank k-1 */
					uint32_t p = f - c * r + (k ? -1u : r - 1);

					s->flows[p].child = f;
					s->flows[f].deps = 1;
				}
			}
	free(o);
	return 0;
}

static int alltoall(struct sim *s, char *err, size_t n)
{
	uint32_t r = s->c.ranks ? s->c.ranks : s->nhosts;
	uint32_t *o;
	char w[300];

	if (r < 2 || r > s->nhosts) {
		snprintf(err, n, "%salltoall: ranks must be 2..%u",
			 sim__cfg_where(&s->c, w, sizeof(w), "ranks", "workload",
					 "k", "topology", "leaves",
					 "hosts_per_leaf", (const char *)NULL),
			 s->nhosts);
		return -1;
	}
	o = placement(s, r);
	/* Each rank walks its peers starting after itself (the usual
	 * staggered order); all are posted at once. */
	for (uint32_t i = 1; i < r; i++)
		for (uint32_t k = 0; k < r; k++)
			sim_add_flow(s, o[k], o[(k + i) % r], s->c.bytes, 0);
	free(o);
	return 0;
}

static int permutation(struct sim *s)
{
	uint32_t *o = placement(s, s->nhosts), nh = s->nhosts;

	for (uint32_t i = nh - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(sim__rand(s) % (i + 1)), t = o[i];

		o[i] = o[j];
		o[j] = t;
	}
	for (uint32_t i = 0; i < nh; i++)
		if (o[i] == i) { /* no host sends to itself */
			uint32_t j = (i + 1) % nh, t = o[i];

			o[i] = o[j];
			o[j] = t;
		}
	for (uint32_t i = 0; i < nh; i++)
		if (o[i] != i)
			sim_add_flow(s, i, o[i], s->c.bytes, 0);
	free(o);
	return 0;
}

static int trace(struct sim *s, char *err, size_t n)
{
	FILE *f = fopen(s->c.trace, "r");
	char line[256], w[300];
	int ln = 0;

	if (!f) {
		snprintf(err, n, "%s%s: %s",
			 sim__cfg_where(&s->c, w, sizeof(w), "trace", "workload",
					 (const char *)NULL),
			 s->c.trace[0] ? s->c.trace : "(no trace file)",
			 strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long t, src, dst, bytes;
		char *h = strchr(line, '#'), extra[2];
		const char *p = line;
		int k;

		ln++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, n, "%s:%d: line longer than %zu characters",
				 s->c.trace, ln, sizeof(line) - 2);
			goto fail;
		}
		if (h)
			*h = 0;
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			continue;
		if (strchr(p, '-')) {
			snprintf(err, n, "%s:%d: negative value", s->c.trace, ln);
			goto fail;
		}
		k = sscanf(p, "%llu %llu %llu %llu %1s", &t, &src, &dst, &bytes, extra);
		if (k != 4) {
			snprintf(err, n, "%s:%d: expected 'start_ns src dst bytes'",
				 s->c.trace, ln);
			goto fail;
		}
		if (src >= s->nhosts || dst >= s->nhosts) {
			snprintf(err, n, "%s:%d: host out of range (topology has %u hosts)",
				 s->c.trace, ln, s->nhosts);
			goto fail;
		}
		if (src == dst || !bytes || bytes > (1ull << 31)) {
			snprintf(err, n, "%s:%d: %s", s->c.trace, ln,
				 src == dst ? "source equals destination"
					    : "bytes must be 1..2^31");
			goto fail;
		}
		sim_add_flow(s, (uint32_t)src, (uint32_t)dst, bytes, t);
	}
	fclose(f);
	return 0;
fail:
	fclose(f);
	return -1;
}

int sim_workload(struct sim *s, char *err, size_t n)
{
	int rc = 0;
	char w[300];

	if (s->c.bytes > (1ull << 31)) {
		snprintf(err, n, "%sbytes: at most 2 GiB per message",
			 sim__cfg_where(&s->c, w, sizeof(w), "bytes",
					 (const char *)NULL));
		return -1;
	}
	switch (s->c.work) {
	case SIM_WORK_RING:
		rc = ring(s, err, n);
		break;
	case SIM_WORK_ALLTOALL:
		rc = alltoall(s, err, n);
		break;
	case SIM_WORK_PERM:
		rc = permutation(s);
		break;
	case SIM_WORK_INCAST:
		if (s->c.incast_senders < 1 || s->c.incast_senders >= s->nhosts) {
			snprintf(err, n, "%sincast: senders must be 1..%u",
				 sim__cfg_where(&s->c, w, sizeof(w), "incast_senders",
						 "workload", "k", "topology", "leaves",
						 "hosts_per_leaf", (const char *)NULL),
				 s->nhosts - 1);
			return -1;
		}
		for (uint32_t i = 1; i <= s->c.incast_senders; i++)
			sim_add_flow(s, i, 0, s->c.bytes, 0);
		break;
	case SIM_WORK_TRACE:
		rc = trace(s, err, n);
		break;
	default:
		break;
	}
	return rc;
}

// SPDX-License-Identifier: MIT
/*
 * Workloads, as flows with dependencies: ring allreduce (reduce-scatter +
 * allgather, 2(R-1) steps of bytes/R per rank, each step split into
 * pipelined chunks; chunk c of step s leaves rank r once chunk c of step
 * s-1 arrived from rank r-1), MoE all-to-all (every rank sends `bytes` to
 * every other), a random permutation, an incast and a trace file
 * ("start_ns src dst bytes [tag=N] [after=N,...]" per line, # comments:
 * a flow with after= starts start_ns after every flow of those tags has
 * arrived; a tag's flows all come before the first line that waits for
 * it, so the dependencies have no cycle), and Poisson arrivals with sizes
 * from a CDF file at a given load (the WebSearch and FB_Hadoop workloads
 * of DCQCN/HPCC-style studies, bench/workloads/).
 */
#include <math.h>
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

/* ---- trace tags: a flow may wait for every flow of some tags ---------- */
static struct sim_tag *tag_at(struct sim *s, uint32_t t)
{
	if (t >= s->ntags) {
		uint32_t cap = s->ntags ? s->ntags : 1024;
		struct sim_tag *a;

		while (cap <= t)
			cap *= 2;
		a = realloc(s->tags, cap * sizeof(*a));
		if (!a)
			abort();
		memset(a + s->ntags, 0, (cap - s->ntags) * sizeof(*a));
		for (uint32_t i = s->ntags; i < cap; i++)
			a[i].waiters = SIM_NONE;
		s->tags = a;
		s->ntags = cap;
	}
	return &s->tags[t];
}

static void tag_wait(struct sim *s, struct sim_tag *tg, uint32_t f)
{
	if (s->nwait == s->capwait) {
		s->capwait = s->capwait ? 2 * s->capwait : 1024;
		s->wait = realloc(s->wait, s->capwait * sizeof(*s->wait));
		if (!s->wait)
			abort();
	}
	s->wait[s->nwait].flow = f;
	s->wait[s->nwait].next = tg->waiters;
	tg->waiters = s->nwait++;
	s->flows[f].deps++;
}

/* One "tag=N" or "after=N[,N...]" field of trace line @ln (flow @f). */
static int trace_field(struct sim *s, const char *fld, uint32_t f, int ln,
		       char *err, size_t n)
{
	const char *p;
	bool after = !strncmp(fld, "after=", 6);

	if (!after && strncmp(fld, "tag=", 4)) {
		snprintf(err, n, "%s:%d: expected tag=N or after=N[,N...], not '%s'",
			 s->c.trace, ln, fld);
		return -1;
	}
	p = fld + (after ? 6 : 4);
	for (;;) {
		char *end;
		unsigned long t;
		struct sim_tag *tg;

		if (!isdigit((unsigned char)*p))
			goto bad;
		errno = 0;
		t = strtoul(p, &end, 10);
		if (errno || t > SIM_TAG_MAX)
			goto bad;
		tg = tag_at(s, (uint32_t)t);
		if (!after) {
			if (*end || s->flows[f].tag != SIM_NONE)
				goto bad;
			if (tg->closed) {
				snprintf(err, n, "%s:%d: tag=%lu after line %d waited for it (a tag's flows come before any after=)",
					 s->c.trace, ln, t, tg->closed);
				return -1;
			}
			tg->left++;
			s->flows[f].tag = (uint32_t)t;
			return 0;
		}
		if (!tg->left || s->flows[f].tag == t) {
			snprintf(err, n, "%s:%d: after=%lu: no earlier line has tag=%lu",
				 s->c.trace, ln, t, t);
			return -1;
		}
		if (!tg->closed)
			tg->closed = ln;
		tag_wait(s, tg, f);
		s->flows[f].deps |= SIM_DEPS_REL;
		if (!*end)
			return 0;
		if (*end != ',')
			goto bad;
		p = end + 1;
	}
bad:
	snprintf(err, n, "%s:%d: expected tag=N or after=N[,N...] (N 0..%u, one tag per line), not '%s'",
		 s->c.trace, ln, SIM_TAG_MAX, fld);
	return -1;
}

int sim_trace_read(struct sim *s, FILE *f, char *err, size_t n)
{
	char line[256], *p;
	int ln = 0, rc;

	while ((rc = sim__line(f, line, sizeof(line), &ln, &p, s->c.trace, err,
			       n))) {
		unsigned long long t, src, dst, bytes;
		char *save, *fld;
		uint32_t fl;
		int k, used = 0;

		if (rc < 0)
			return -1;
		if (strchr(p, '-')) {
			snprintf(err, n, "%s:%d: negative value", s->c.trace, ln);
			return -1;
		}
		k = sscanf(p, "%llu %llu %llu %llu%n", &t, &src, &dst, &bytes, &used);
		if (k != 4 || (p[used] && !isspace((unsigned char)p[used]))) {
			snprintf(err, n, "%s:%d: expected 'start_ns src dst bytes [tag=N] [after=N[,N...]]'",
				 s->c.trace, ln);
			return -1;
		}
		if (src >= s->nhosts || dst >= s->nhosts) {
			snprintf(err, n, "%s:%d: host out of range (topology has %u hosts)",
				 s->c.trace, ln, s->nhosts);
			return -1;
		}
		if (src == dst || !bytes || bytes > (1ull << 31)) {
			snprintf(err, n, "%s:%d: %s", s->c.trace, ln,
				 src == dst ? "source equals destination"
					    : "bytes must be 1..2^31");
			return -1;
		}
		if (t > (1ull << 62)) {
			snprintf(err, n, "%s:%d: start_ns beyond 2^62", s->c.trace, ln);
			return -1;
		}
		fl = sim_add_flow(s, (uint32_t)src, (uint32_t)dst, bytes, t);
		for (fld = strtok_r(p + used, " \t\r\n", &save);
		     fld; fld = strtok_r(NULL, " \t\r\n", &save))
			if (trace_field(s, fld, fl, ln, err, n))
				return -1;
	}
	return 0;
}

static int trace(struct sim *s, char *err, size_t n)
{
	FILE *f = fopen(s->c.trace, "r");
	char w[300];
	int rc;

	if (!f) {
		snprintf(err, n, "%s%s: %s",
			 sim__cfg_where(&s->c, w, sizeof(w), "trace", "workload",
					 (const char *)NULL),
			 s->c.trace[0] ? s->c.trace : "(no trace file)",
			 strerror(errno));
		return -1;
	}
	rc = sim_trace_read(s, f, err, n);
	fclose(f);
	return rc;
}

/* Poisson arrivals at each host at `load` of its link rate (payload
 * bytes), sizes from the CDF by inverse transform, destinations uniform
 * among the other hosts. n hosts each of rate lambda are one Poisson
 * process of rate n*lambda whose source is uniform, which gives one
 * sequence in time order for a flow limit. */
static int poisson(struct sim *s, char *err, size_t n)
{
	struct sim_cdf cdf;
	char w[300];
	FILE *f = fopen(s->c.cdf, "r");
	double mean, rate, t = 0;
	uint32_t nh = s->nhosts;
	int rc;

	if (!f) {
		snprintf(err, n, "%s%s: %s",
			 sim__cfg_where(&s->c, w, sizeof(w), "cdf", "workload",
					 (const char *)NULL),
			 s->c.cdf[0] ? s->c.cdf : "(no cdf file)", strerror(errno));
		return -1;
	}
	rc = sim_cdf_read(&cdf, f, s->c.cdf, err, n);
	fclose(f);
	if (rc)
		return -1;
	if (nh < 2 || !s->c.arrive_ns) {
		snprintf(err, n, "%spoisson: needs 2 hosts and arrive_us > 0",
			 sim__cfg_where(&s->c, w, sizeof(w), "arrive_us",
					 (const char *)NULL));
		return -1;
	}
	mean = sim_cdf_mean(&cdf);
	/* flows per ns over the whole fabric */
	rate = nh * s->c.load * (double)s->c.host_bps / 8e9 / mean;
	for (;;) {
		uint32_t src, dst;
		uint64_t bytes;

		t += -log(1 - sim__frand(s)) / rate;
		if (t >= (double)s->c.arrive_ns ||
		    (s->c.max_flows && s->nflows >= s->c.max_flows))
			break;
		src = (uint32_t)(sim__rand(s) % nh);
		dst = (uint32_t)(sim__rand(s) % (nh - 1));
		dst += dst >= src;
		bytes = sim_cdf_draw(&cdf, sim__frand(s));
		sim_add_flow(s, src, dst, bytes, (uint64_t)t);
	}
	/* the span the load was offered over (the last arrival, if the flow
	 * limit came first) */
	s->gen_ns = t < (double)s->c.arrive_ns ? (uint64_t)t : s->c.arrive_ns;
	return 0;
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
	case SIM_WORK_POISSON:
		rc = poisson(s, err, n);
		break;
	default:
		break;
	}
	return rc;
}

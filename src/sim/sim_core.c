// SPDX-License-Identifier: MIT
/*
 * The discrete-event engine: a seeded xorshift generator, the packet
 * pool and the main loop over the event queue (sim_evq.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "sim_priv.h"
#include "ur_rand.h"
#include "ur_units.h"

/* ---- random ----------------------------------------------------------- */
uint64_t sim__rand(struct sim *s)
{
	return ur_rand_next(&s->rng);
}

double sim__frand(struct sim *s)
{
	return ur_rand_unit(&s->rng);
}

/* ---- packet pool: two size classes, slabs, free lists ------------------ */
struct sim_pkt *sim__pkt_get(struct sim *s, uint32_t len)
{
	struct sim_pool *pl = &s->pool;
	int c = len > pl->cap[0];
	struct sim_pkt *p;

	if (!pl->free[c]) {
		size_t sz = sizeof(struct sim_pkt) + pl->cap[c];
		uint32_t n = c ? 64 : 256;
		uint8_t *slab;

		sz = (sz + 15) & ~(size_t)15;
		slab = malloc(sz * n);
		if (!slab)
			abort();
		if (pl->nslabs == pl->capslabs) {
			pl->capslabs = pl->capslabs ? 2 * pl->capslabs : 64;
			pl->slabs = realloc(pl->slabs,
					    pl->capslabs * sizeof(*pl->slabs));
			if (!pl->slabs)
				abort();
		}
		pl->slabs[pl->nslabs++] = slab;
		for (uint32_t i = 0; i < n; i++) {
			p = (struct sim_pkt *)(slab + i * sz);
			p->big = (uint8_t)c;
			p->next = pl->free[c];
			pl->free[c] = p;
		}
		pl->allocated += n;
	}
	p = pl->free[c];
	pl->free[c] = p->next;
	p->next = NULL;
	p->b.data = p->data;
	p->b.cap = pl->cap[c];
	p->b.len = 0;
	p->b.host_priv = p;
	p->accounted = 0;
	if (++pl->live > pl->peak)
		pl->peak = pl->live;
	return p;
}

void sim__pkt_put(struct sim *s, struct sim_pkt *p)
{
	struct sim_pool *pl = &s->pool;

	p->next = pl->free[p->big];
	pl->free[p->big] = p;
	pl->live--;
}

/* ---- life cycle ----------------------------------------------------------- */
static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct sim *sim_create(const struct sim_cfg *c, char *err, size_t n)
{
	struct sim *s = calloc(1, sizeof(*s));

	if (!s) {
		snprintf(err, n, "out of memory");
		return NULL;
	}
	s->c = *c;
	s->rng = ur_rand_seed(c->seed, 0x1234567);
	s->now = 0;
	s->pool.cap[0] = 128;
	s->pool.cap[1] = c->mtu + 128;
	s->wall0 = wall();
	s->progress_next = c->progress_s;
	if (sim__evq_init(s)) {
		snprintf(err, n, "out of memory (event queue)");
		sim_destroy(s);
		return NULL;
	}
	if (sim__topo_build(s, err, n) || sim__hosts_init(s, err, n)) {
		sim_destroy(s);
		return NULL;
	}
	if (c->queue_trace[0]) {
		s->queue_trace = fopen(c->queue_trace, "w");
		if (!s->queue_trace) {
			snprintf(err, n, "queue_trace %s: %s", c->queue_trace,
				 strerror(errno));
			sim_destroy(s);
			return NULL;
		}
	}
	if (c->sample_ns)
		sim__push(s, c->sample_ns, SIM_EV_SAMPLE, NULL, 0);
	return s;
}

void sim_destroy(struct sim *s)
{
	if (!s)
		return;
	sim__hosts_fini(s);
	for (uint32_t i = 0; s->nodes && i < s->nnodes; i++) {
		for (uint32_t j = 0; s->nodes[i].ports && j < s->nodes[i].nports; j++)
			for (int pr = 0; pr < SIM_NPRIO; pr++)
				free(s->nodes[i].ports[j].q[pr].a);
		free(s->nodes[i].ports);
	}
	free(s->nodes);
	free(s->host_node);
	free(s->nbrs);
	free(s->dist);
	sim__evq_fini(s);
	for (size_t i = 0; i < s->pool.nslabs; i++)
		free(s->pool.slabs[i]);
	free(s->pool.slabs);
	free(s->flows);
	free(s->tags);
	free(s->wait);
	free(s->qhist);
	if (s->queue_trace)
		fclose(s->queue_trace);
	free(s);
}

uint64_t sim_now(const struct sim *s) { return s->now; }
uint32_t sim_hosts(const struct sim *s) { return s->nhosts; }

const struct sim_flow *sim_flows(const struct sim *s, uint32_t *n)
{
	*n = s->nflows;
	return s->flows;
}

uint32_t sim_add_flow(struct sim *s, uint32_t src, uint32_t dst,
		      uint64_t bytes, uint64_t t_start)
{
	struct sim_flow *f;

	if (s->nflows == s->capflows) {
		s->capflows = s->capflows ? 2 * s->capflows : 1024;
		s->flows = realloc(s->flows, s->capflows * sizeof(*s->flows));
		if (!s->flows)
			abort();
	}
	f = &s->flows[s->nflows];
	memset(f, 0, sizeof(*f));
	f->src = src;
	f->dst = dst;
	f->bytes = bytes;
	f->t_start = t_start;
	f->child = SIM_NONE;
	f->tag = SIM_NONE;
	f->next_pend = SIM_NONE;
	return s->nflows++;
}

/* Payload the hosts have sent so far, roughly: what their links carried
 * less each packet's headers (Ethernet..UDP and ~40 bytes of IB headers;
 * ACKs count as nothing). Whole flows complete late in a collective, so
 * completions alone give no estimate until the very end. */
static double sent_payload(const struct sim *s)
{
	double b = 0;

	for (uint32_t h = 0; h < s->nhosts; h++) {
		const struct sim_node *n = &s->nodes[s->host_node[h]];

		for (uint16_t i = 0; i < n->nports; i++)
			b += (double)n->ports[i].tx_bytes -
			     (double)n->ports[i].tx_pkts * (SIM_WIRE_OVH + 40);
	}
	return b > 0 ? b : 0;
}

/* One whole line (never a '\r' overwrite: a log keeps every line). The
 * estimate goes by payload sent (at most 99 % until every flow is done),
 * or by virtual time when the run has an end and that is further along. */
static void progress_line(struct sim *s)
{
	double w = wall() - s->wall0, done = sent_payload(s),
	       total = s->bytes_total, sent;
	char a[UR_UNITS_LEN], b[UR_UNITS_LEN], t[UR_UNITS_LEN], p[128];

	if (s->flows_done < s->nflows && done > 0.99 * total)
		done = 0.99 * total; /* retransmissions */
	if (s->nflows && s->flows_done == s->nflows)
		done = total;
	sent = done;
	if (s->c.end_ns &&
	    (total <= 0 || (double)s->now / s->c.end_ns > done / total))
		done = (double)s->now, total = (double)s->c.end_ns;
	fprintf(stderr, "[sim] t=%s, flows %u/%u done, ~%s of %s sent, "
		"%.1fM events (%.2f Mev/s), pkts live %lu: %s\n",
		ur_fmt_ns(t, sizeof(t), (double)s->now), s->flows_done,
		s->nflows, ur_fmt_bytes(a, sizeof(a), sent),
		ur_fmt_bytes(b, sizeof(b), (double)s->bytes_total),
		s->events / 1e6, w > 0 ? s->events / w / 1e6 : 0,
		(unsigned long)s->pool.live,
		ur_fmt_progress(p, sizeof(p), done, total,
				(uint64_t)(w * 1e9)));
}

static void start_flows(struct sim *s)
{
	uint64_t max = 4096;

	s->bytes_total = 0;
	for (uint32_t i = 0; i < s->nflows; i++) {
		if (s->flows[i].bytes > max)
			max = s->flows[i].bytes;
		s->bytes_total += s->flows[i].bytes;
	}
	/* One region on every host: contents do not matter, only that the
	 * transport may copy the largest message in and out of it. */
	s->buf = calloc(1, max);
	if (!s->buf)
		abort();
	s->mr.host = s->buf;
	s->mr.length = max;
	for (uint32_t i = 0; i < s->nflows; i++)
		if (!s->flows[i].deps && !s->flows[i].t_post)
			sim__push(s, s->flows[i].t_start, SIM_EV_FLOW, NULL, i);
}

/* Every switch egress port whose queue is not empty, in 1 KiB bins: the
 * queue p50/p99 of the summary (docs/sim.md "Output"). With queue_trace
 * one line per sample: "t_ns node port max_bytes sum_bytes ports", the
 * longest queue (its switch and port), all queues' sum and how many
 * ports have one: where a p99 comes from (an incast's first windows, a
 * standing queue). */
static void sample_queues(struct sim *s)
{
	uint32_t nb = (uint32_t)(s->c.buffer_bytes >> 10) + 1;
	uint64_t sum = 0;
	uint32_t max = 0, mnode = 0, mport = 0, busy = 0;

	if (!s->qhist) {
		s->qhist = calloc(nb, sizeof(*s->qhist));
		if (!s->qhist)
			abort();
	}
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct sim_node *nd = &s->nodes[i];

		if (nd->kind == SIM_HOST)
			continue;
		for (uint32_t j = 0; j < nd->nports; j++) {
			const struct sim_port *pt = &nd->ports[j];
			uint32_t q = pt->qbytes[0] + pt->qbytes[1];

			if (!q)
				continue;
			s->qhist[q >> 10 < nb ? q >> 10 : nb - 1]++;
			sum += q;
			busy++;
			if (q > max) {
				max = q;
				mnode = i;
				mport = j;
			}
		}
	}
	if (s->queue_trace)
		fprintf(s->queue_trace, "%llu %s %u %u %llu %u\n",
			(unsigned long long)s->now,
			max ? s->nodes[mnode].name : "-", mport, max,
			(unsigned long long)sum, busy);
}

void sim_run(struct sim *s, uint64_t until)
{
	uint64_t end = s->c.end_ns ? s->c.end_ns : UINT64_MAX;

	if (until < end)
		end = until;
	if (!s->events)
		start_flows(s);
	for (struct ur_ev e;;) {
		if (s->nflows && s->flows_done == s->nflows)
			break; /* the workload is done: leftover timers do not matter */
		if (!sim__evq_pop(s, end, &e))
			break;
		s->now = e.t;
		s->cur_seq = e.seq;
		s->events++;
		switch (e.type) {
		case SIM_EV_ARRIVE:
			sim__arrive(s, e.ptr, e.arg);
			break;
		case SIM_EV_TXDONE:
			sim__txdone(s, e.ptr);
			break;
		case SIM_EV_PFC:
			sim__pfc(s, e.ptr, e.arg);
			break;
		case SIM_EV_QPTIMER:
			sim__qp_timer(s, e.ptr);
			break;
		case SIM_EV_FLOW:
			sim__flow_start(s, e.arg);
			break;
		case SIM_EV_LINK:
			sim__link_event(s, e.arg);
			break;
		case SIM_EV_SAMPLE:
			/* Not counted as an event (the figures of runs before
			 * sampling stay as they were); re-armed only while
			 * something else is pending. */
			s->events--;
			sample_queues(s);
			if (!sim__evq_empty(s))
				sim__push(s, s->now + s->c.sample_ns,
					   SIM_EV_SAMPLE, NULL, 0);
			break;
		}
		if (s->c.progress && !(s->events & 0xffff) &&
		    wall() >= s->wall0 + s->progress_next) {
			s->progress_next += s->c.progress_s;
			progress_line(s);
		}
	}
	if (s->c.progress)
		progress_line(s); /* where it stopped */
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The FCT (post to last byte at the receiver) of a flow alone on an idle
 * fabric: every packet serialised at the host's line rate with its wire
 * headers (Ethernet..UDP + BTH + ICRC; RETH/ImmDt left out, so this is a
 * lower bound), plus the path's propagation and, at each switch, the
 * store-and-forward of the first packet (the train behind it follows
 * back to back at equal rates). HPCC's "ideal FCT" (Li et al. SIGCOMM
 * 2019) is the same with a base RTT in place of the one-way delay; our
 * FCT ends at the receiver, so the one-way delay is the base. */
uint64_t sim__ideal_ns(const struct sim *s, const struct sim_flow *f)
{
	uint64_t mtu = s->c.mtu, pk = (f->bytes + mtu - 1) / mtu;
	uint64_t ovh = SIM_WIRE_OVH + 12 + 4;
	uint64_t last = (f->bytes < mtu ? f->bytes : mtu) + ovh;
	uint64_t hops = s->dist[(size_t)f->dst * s->nnodes + s->host_node[f->src]];
	double bps = (double)s->c.host_bps;

	return (uint64_t)((f->bytes + pk * ovh) * 8e9 / bps +
			  hops * s->c.link_delay_ns +
			  (hops - 1) * last * 8e9 / bps);
}

double sim_flow_slowdown(const struct sim *s, uint32_t i)
{
	const struct sim_flow *f = &s->flows[i];

	if (i >= s->nflows || !f->t_done)
		return 0;
	return (double)(f->t_done - f->t_post) / (double)sim__ideal_ns(s, f);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *v, uint64_t n, unsigned int p)
{
	uint64_t i = n * p / 100;

	return n ? v[i < n ? i : n - 1] : 0;
}

static const uint64_t bucket_max[SIM_NBUCKETS - 1] = {
	10000, 100000, 1000000, 10000000,
};

static unsigned int bucket(uint64_t bytes)
{
	unsigned int b = 0;

	while (b < SIM_NBUCKETS - 1 && bytes >= bucket_max[b])
		b++;
	return b;
}

/* Slowdowns overall and per size bucket, Jain's index of the flows'
 * rates (Jain, Chiu, Hawe 1984: (sum x)^2 / (n sum x^2)) over the flows
 * of at least 1 MB, whose rate the bandwidth decides (all flows if none
 * is), the sampled queue percentiles and the offered load. */
static void result_flows(struct sim *s, struct sim_result *r)
{
	double *sl = malloc((s->nflows + 1) * sizeof(*sl));
	double *bk = malloc((s->nflows + 1) * sizeof(*bk));
	double jx[2] = { 0 }, jx2[2] = { 0 };
	uint64_t n = 0, jn[2] = { 0 }, tot = 0, acc = 0, bytes = 0;
	uint32_t nb = (uint32_t)(s->c.buffer_bytes >> 10) + 1;

	if (!sl || !bk)
		abort();
	for (uint32_t i = 0; i < s->nflows; i++) {
		const struct sim_flow *f = &s->flows[i];
		double x;
		int big;

		bytes += f->bytes;
		if (!f->t_done)
			continue;
		sl[n++] = (double)(f->t_done - f->t_post) /
			  (double)sim__ideal_ns(s, f);
		x = f->bytes / (double)(f->t_done - f->t_post + 1);
		big = f->bytes >= 1000000;
		jx[big] += x;
		jx2[big] += x * x;
		jn[big]++;
	}
	qsort(sl, n, sizeof(*sl), cmp_dbl);
	r->slow_p50 = pct(sl, n, 50);
	r->slow_p99 = pct(sl, n, 99);
	for (unsigned int b = 0; b < SIM_NBUCKETS; b++) {
		uint64_t m = 0;

		for (uint32_t i = 0; i < s->nflows; i++) {
			const struct sim_flow *f = &s->flows[i];

			if (f->t_done && bucket(f->bytes) == b)
				bk[m++] = (double)(f->t_done - f->t_post) /
					  (double)sim__ideal_ns(s, f);
		}
		qsort(bk, m, sizeof(*bk), cmp_dbl);
		r->slow[b].n = m;
		r->slow[b].p50 = pct(bk, m, 50);
		r->slow[b].p99 = pct(bk, m, 99);
	}
	{
		int w = jn[1] ? 1 : 0;

		if (jn[w] && jx2[w] > 0)
			r->jain = jx[w] * jx[w] / (jn[w] * jx2[w]);
	}
	free(sl);
	free(bk);
	for (uint32_t i = 0; s->qhist && i < nb; i++)
		tot += s->qhist[i];
	r->queue_samples = tot;
	for (uint32_t i = 0; tot && i < nb; i++) {
		uint64_t before = acc;

		acc += s->qhist[i];
		/* the bin's upper edge: a percentile never understates */
		if (before < (tot + 1) / 2 && acc >= (tot + 1) / 2)
			r->queue_p50_kb = i + 1;
		if (before < (tot * 99 + 99) / 100 && acc >= (tot * 99 + 99) / 100)
			r->queue_p99_kb = i + 1;
	}
	if (s->gen_ns && s->nhosts)
		r->offered_load = bytes * 8e9 /
				  ((double)s->nhosts * s->c.host_bps * s->gen_ns);
}

void sim_result(struct sim *s, struct sim_result *r)
{
	uint64_t *fct = malloc((s->nflows + 1) * sizeof(*fct));
	uint64_t n = 0, host_bytes = 0, fab_bytes = 0, host_cap = 0,
		 fab_cap = 0;
	double sum = 0, span;
	struct rusage ru;

	memset(r, 0, sizeof(*r));
	r->hosts = s->nhosts;
	r->switches = s->nnodes - s->nhosts;
	/* every host's real QPs (one per connection end; ncon counts both
	 * directions of a connection's lookup key, i.e. each end once) */
	for (uint32_t i = 0; i < s->nhosts; i++)
		r->qps += s->hosts[i].nqps;
	r->flows = s->nflows;
	r->flows_done = s->flows_done;
	r->t_first = s->t_first;
	r->t_last = s->t_last;
	for (uint32_t i = 0; i < s->nflows; i++) {
		const struct sim_flow *f = &s->flows[i];

		if (!f->t_done)
			continue;
		fct[n] = f->t_done - f->t_post;
		sum += fct[n++];
	}
	if (n) {
		qsort(fct, n, sizeof(*fct), cmp_u64);
		r->fct_mean_us = sum / n / 1e3;
		r->fct_p50_us = fct[n / 2] / 1e3;
		r->fct_p99_us = fct[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] / 1e3;
	}
	free(fct);
	result_flows(s, r);
	span = s->t_last > s->t_first ? (double)(s->t_last - s->t_first) : 0;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		struct sim_node *nd = &s->nodes[i];

		r->drops += nd->drops;
		for (uint32_t j = 0; j < nd->nports; j++) {
			struct sim_port *pt = &nd->ports[j];
			double u;

			r->ecn_marks += pt->marks;
			r->pause_frames += pt->pause_frames;
			r->paused_ns += pt->paused_ns;
			if (pt->qmax > r->max_queue)
				r->max_queue = pt->qmax;
			if (!pt->up || !span)
				continue;
			u = pt->tx_bytes * 8e9 / ((double)pt->bps * span);
			if (u > r->max_link_util)
				r->max_link_util = u;
			if (nd->kind == SIM_HOST ||
			    pt->peer->node->kind == SIM_HOST) {
				if (nd->kind == SIM_HOST) {
					host_bytes += pt->tx_bytes;
					host_cap += pt->bps;
				}
			} else {
				fab_bytes += pt->tx_bytes;
				fab_cap += pt->bps;
			}
		}
	}
	if (span && host_cap)
		r->host_util = host_bytes * 8e9 / ((double)host_cap * span);
	if (span && fab_cap)
		r->fabric_util = fab_bytes * 8e9 / ((double)fab_cap * span);
	for (uint32_t i = 0; i < s->nhosts; i++) {
		struct ur_counters *c = &s->hosts[i].dev.cnt;

		r->retransmits += c->tx_retransmit;
		r->timeouts += c->tx_timeouts;
		r->cnps += c->tx_cnp;
		r->nak_seq += c->tx_nak_seq;
		r->sr_held += c->rx_sr_held;
		r->sr_naks += c->tx_sr_nak;
		r->offpath += c->rx_drop_offpath;
		for (uint32_t j = 0; j < s->hosts[i].nqps; j++) {
			const struct ur_qp *qp = &s->hosts[i].qps[j]->qp;

			for (unsigned int k = 0; k < ur_qp_paths(qp); k++) {
				struct ur_mp_path_cnt pc;
				unsigned int w;
				uint16_t sport;

				ur_qp_path_info(qp, k, &sport, &w, &pc);
				if (ur_qp_paths(qp) > 1) {
					r->sprayed += k ? pc.packets : 0;
					r->path_losses += pc.losses;
					r->path_ecn += pc.ecn;
					r->path_late += pc.late;
				}
			}
		}
	}
	r->events = s->events;
	r->hops = s->hops;
	r->wall_s = wall() - s->wall0;
	getrusage(RUSAGE_SELF, &ru);
	r->max_rss_kb = (uint64_t)ru.ru_maxrss;
	r->cpu_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
		   ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

// SPDX-License-Identifier: MIT
/*
 * The fabric: egress FIFOs per port and priority (control strictly before
 * data), serialisation at the link rate, propagation delay, Bernoulli loss,
 * switch shared buffers with a dynamic threshold per queue, RED/ECN marking
 * on the egress queue (CE in the packet's path.tos, which the receiving
 * transport's notification point reads), PFC per ingress port and priority
 * (XOFF/XON thresholds; a pause frame takes one link delay) and ECMP by a
 * salted hash of the 5-tuple over the shortest-path next hops.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_priv.h"

void sim__host_addr(uint32_t hid, uint8_t ip[4])
{
	uint32_t v = hid + 1;

	ip[0] = 10;
	ip[1] = (uint8_t)(v >> 16);
	ip[2] = (uint8_t)(v >> 8);
	ip[3] = (uint8_t)v;
}

uint32_t sim__addr_host(const uint8_t ip[4])
{
	return (((uint32_t)ip[1] << 16) | ((uint32_t)ip[2] << 8) | ip[3]) - 1;
}

static inline uint64_t ser_ns(const struct sim_port *pt, uint32_t len)
{
	return ((uint64_t)(len + SIM_WIRE_OVH) * 8000000000ull + pt->bps - 1) /
	       pt->bps;
}

uint32_t sim__hash(const struct ur_ipudp *p, uint32_t salt)
{
	uint64_t x = ((uint64_t)ur_get32(p->src) << 32) | ur_get32(p->dst);
	uint64_t y = ((((uint64_t)p->sport << 16) | p->dport) << 8) | 17;

	x ^= y * 0x9E3779B97F4A7C15ull;
	x ^= (uint64_t)salt * 0xC2B2AE3D27D4EB4Full;
	/* murmur3 fmix64 */
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return (uint32_t)(x >> 32);
}

int sim__route(const struct sim *s, const struct sim_node *n, uint32_t dst,
		const struct ur_ipudp *path)
{
	const uint8_t *d = &s->dist[(size_t)dst * s->nnodes];
	uint8_t my = d[n->id];
	uint16_t cand[SIM_MAX_PORTS];
	uint32_t nc = 0;

	for (uint32_t j = 0; j < n->nports; j++) {
		uint32_t m = n->nbr[j];

		if (m != SIM_NONE && d[m] + 1 == my)
			cand[nc++] = (uint16_t)j;
	}
	if (!nc)
		return -1;
	if (nc == 1)
		return cand[0];
	return cand[sim__hash(path, n->salt) % nc];
}

static void qtrace(struct sim *s, struct sim_port *pt)
{
	uint32_t q = pt->qbytes[0] + pt->qbytes[1];

	if (q > pt->qmax)
		pt->qmax = q;
	if (pt->trace)
		pt->trace(pt->trace_arg, s->now, q);
}

static void send_pfc(struct sim *s, struct sim_port *in, int pr, bool on)
{
	in->pause_sent[pr] = on;
	in->pause_frames++;
	sim__push(s, s->now + ser_ns(in, 64 - SIM_WIRE_OVH + 20) + in->delay,
		   SIM_EV_PFC, in->peer, (uint32_t)pr | (on ? 0x100u : 0));
}

static void q_put(struct sim_queue *q, struct sim_pkt *p, uint32_t len,
		  struct sim_port *in)
{
	if (q->n == q->cap) {
		uint32_t cap = q->cap ? 2 * q->cap : 16;
		struct sim_qent *a = malloc(cap * sizeof(*a));

		if (!a)
			abort(); /* out of memory: the run cannot go on */
		for (uint32_t i = 0; i < q->n; i++)
			a[i] = q->a[(q->head + i) & (q->cap - 1)];
		free(q->a);
		q->a = a;
		q->cap = cap;
		q->head = 0;
	}
	q->a[(q->head + q->n++) & (q->cap - 1)] =
		(struct sim_qent){ .p = p, .in = in, .len = len };
}

static void start_tx(struct sim *s, struct sim_port *pt)
{
	struct sim_qent x;
	struct sim_pkt *p;
	int pr;
	uint64_t t;

	for (pr = SIM_NPRIO - 1; pr >= 0; pr--)
		if (pt->q[pr].n && !pt->paused[pr])
			break;
	if (pr < 0)
		return;
	x = pt->q[pr].a[pt->q[pr].head];
	pt->q[pr].head = (pt->q[pr].head + 1) & (pt->q[pr].cap - 1);
	pt->q[pr].n--;
	p = x.p;
	pt->qbytes[pr] -= x.len;
	qtrace(s, pt);
	if (x.in) {
		struct sim_port *in = x.in;

		pt->node->buf_used -= x.len;
		in->in_bytes[pr] -= x.len;
		if (in->pause_sent[pr] && in->in_bytes[pr] <= s->c.pfc_xon)
			send_pfc(s, in, pr, false);
	}
	t = ser_ns(pt, x.len);
	pt->busy_until = s->now + t;
	pt->txseq = ur_evheap_reserve(&s->heap);
	pt->txpend = false;
	if (pt->q[0].n || pt->q[1].n ||
	    (pt->node->kind == SIM_HOST && pt->node->host->bhead))
		sim__port_wake(s, pt);
	pt->tx_bytes += x.len + SIM_WIRE_OVH;
	pt->tx_pkts++;
	s->hops++;
	if (!pt->up || pt->tx_pkts == pt->drop_nth ||
	    (pt->loss > 0 && sim__frand(s) < pt->loss)) {
		pt->drops++;
		pt->node->drops++;
		sim__pkt_put(s, p);
		return;
	}
	p->in = pt->peer;
	p->accounted = 0;
	sim__push(s, s->now + t + pt->delay, SIM_EV_ARRIVE, p, pt->peer_node);
}

/* Still serialising: before its end, or at that instant but before the
 * end's event would have run (it has the sequence number txseq). */
static bool busy(const struct sim *s, const struct sim_port *pt)
{
	return pt->txpend || s->now < pt->busy_until ||
	       (s->now == pt->busy_until && s->cur_seq < pt->txseq);
}

void sim__port_wake(struct sim *s, struct sim_port *pt)
{
	if (pt->txpend || !busy(s, pt))
		return;
	pt->txpend = true;
	sim__push_seq(s, pt->busy_until, pt->txseq, SIM_EV_TXDONE, pt, 0);
}

void sim__port_enqueue(struct sim *s, struct sim_port *pt, struct sim_pkt *p)
{
	int pr = p->prio;

	q_put(&pt->q[pr], p, p->b.len, p->accounted ? p->in : NULL);
	pt->qbytes[pr] += p->b.len;
	qtrace(s, pt);
	if (busy(s, pt))
		sim__port_wake(s, pt);
	else
		start_tx(s, pt);
}

void sim__txdone(struct sim *s, struct sim_port *pt)
{
	pt->txpend = false;
	start_tx(s, pt);
	if (pt->node->kind == SIM_HOST)
		sim__host_txdone(s, pt->node->host);
}

void sim__pfc(struct sim *s, struct sim_port *pt, uint32_t arg)
{
	int pr = arg & 0xff;
	bool on = arg & 0x100;

	if (on == pt->paused[pr])
		return;
	pt->paused[pr] = on;
	if (on) {
		pt->paused_at[pr] = s->now;
	} else {
		pt->paused_ns += s->now - pt->paused_at[pr];
		if (!busy(s, pt))
			start_tx(s, pt);
	}
}

static void drop(struct sim *s, struct sim_node *n, struct sim_port *out,
		 struct sim_pkt *p)
{
	n->drops++;
	if (out)
		out->drops++;
	sim__pkt_put(s, p);
}

void sim__arrive(struct sim *s, struct sim_pkt *p, uint32_t node)
{
	struct sim_port *in = p->in, *out;
	struct sim_node *n = &s->nodes[node]; /* in->node, one miss less */
	const struct sim_cfg *c = &s->c;
	uint32_t len = p->b.len;
	int pr = p->prio, e;

	if (n->kind == SIM_HOST) {
		sim__host_rx(s, n->host, p);
		return;
	}
	e = sim__route(s, n, p->dst, &p->b.path);
	if (e < 0) {
		drop(s, n, NULL, p);
		return;
	}
	out = &n->ports[e];
	if (n->buf_used + len > c->buffer_bytes) {
		drop(s, n, out, p); /* with PFC: headroom exhausted */
		return;
	}
	if (!c->pfc && out->qbytes[pr] + len >
			       c->dt_alpha * (double)(c->buffer_bytes - n->buf_used)) {
		drop(s, n, out, p);
		return;
	}
	n->buf_used += len;
	in->in_bytes[pr] += len;
	p->accounted = 1;
	if (c->pfc && !in->pause_sent[pr] && in->in_bytes[pr] >= c->pfc_xoff)
		send_pfc(s, in, pr, true);
	if (c->ecn && pr == 0 && (p->b.path.tos & 3) && (p->b.path.tos & 3) != 3) {
		uint32_t q = out->qbytes[0];
		double pm = 0;

		if (q >= c->kmax)
			pm = 1;
		else if (q > c->kmin)
			pm = c->pmax * (q - c->kmin) / (double)(c->kmax - c->kmin);
		if (pm > 0 && (pm >= 1 || sim__frand(s) < pm)) {
			p->b.path.tos |= 3;
			out->marks++;
		}
	}
	sim__port_enqueue(s, out, p);
}

/* ---- introspection -------------------------------------------------------- */
int sim_node_by_name(const struct sim *s, const char *name)
{
	for (uint32_t i = 0; i < s->nnodes; i++)
		if (!strcmp(s->nodes[i].name, name))
			return (int)i;
	return -1;
}

int sim_port_to(const struct sim *s, int node, int peer)
{
	const struct sim_node *n = &s->nodes[node];

	for (uint32_t j = 0; j < n->nports; j++)
		if ((int)n->ports[j].peer->node->id == peer)
			return (int)j;
	return -1;
}

uint64_t sim_port_tx_bytes(const struct sim *s, int node, int port)
{
	return s->nodes[node].ports[port].tx_bytes;
}

int sim_port_peer(const struct sim *s, int node, int port)
{
	return (int)s->nodes[node].ports[port].peer->node->id;
}

void sim_port_drop_nth(struct sim *s, int node, int port, uint64_t n)
{
	s->nodes[node].ports[port].drop_nth = n;
}

const struct ur_counters *sim_host_counters(const struct sim *s, uint32_t h)
{
	return &s->hosts[h].dev.cnt;
}

uint64_t sim_port_max_queue(const struct sim *s, int node, int port)
{
	return s->nodes[node].ports[port].qmax;
}

void sim_trace_port(struct sim *s, int node, int port,
		    void (*fn)(void *arg, uint64_t t, uint32_t bytes), void *arg)
{
	s->nodes[node].ports[port].trace = fn;
	s->nodes[node].ports[port].trace_arg = arg;
}

int sim_ecmp_port(const struct sim *s, int node, uint32_t src, uint32_t dst,
		  uint16_t sport)
{
	struct ur_ipudp p;

	memset(&p, 0, sizeof(p));
	sim__host_addr(src, p.src);
	sim__host_addr(dst, p.dst);
	p.sport = sport;
	p.dport = UR_ROCEV2_PORT;
	return sim__route(s, &s->nodes[node], dst, &p);
}

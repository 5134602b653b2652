// SPDX-License-Identifier: MIT
/*
 * Topologies: a k-ary three-tier fat-tree (k^3/4 hosts, k pods of k/2 edge
 * and k/2 aggregation switches, (k/2)^2 cores) and a two-tier leaf-spine
 * (oversubscription = hosts_per_leaf * host rate / (spines * fabric rate))
 * and a rail-optimised two-tier fabric: servers of `rails` NICs (a GPU per
 * NIC, each a simulated host), in groups of hosts_per_leaf servers; NIC i
 * of every server of a group on that group's leaf of rail i; every leaf to
 * every spine (rail + spine, as NVIDIA's DGX SuperPOD scalable units;
 * spines 0 is refused: rail-only, Wang et al. 2023, needs NVLink between
 * the rails, which is not modelled).
 * Failed and degraded links from the configuration, then hop distances to
 * every host over the links that are up (the ECMP next hops).
 *
 * Nodes: hosts first (node index = host id), named h<i>; then edge/leaf
 * switches e<i>, aggregation a<i>, core/spine c<i>.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_priv.h"

struct link {
	uint32_t a, b;
	uint64_t bps;
};

struct builder {
	struct link *l;
	uint32_t n, cap;
};

static void add_link(struct builder *b, uint32_t x, uint32_t y, uint64_t bps)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 1024;
		b->l = realloc(b->l, b->cap * sizeof(*b->l));
		if (!b->l)
			abort();
	}
	b->l[b->n++] = (struct link){ x, y, bps };
}

static void add_nodes(struct sim *s, uint32_t n, uint8_t kind, char pfx,
		      uint32_t *counter)
{
	for (uint32_t i = 0; i < n; i++) {
		struct sim_node *nd = &s->nodes[s->nnodes];

		nd->id = s->nnodes++;
		nd->kind = kind;
		snprintf(nd->name, sizeof(nd->name), "%c%u", pfx, (*counter)++);
	}
}

static int bfs(struct sim *s, uint32_t h, uint32_t *queue)
{
	uint8_t *d = &s->dist[(size_t)h * s->nnodes];
	uint32_t qh = 0, qt = 0;

	memset(d, 0xff, s->nnodes);
	d[s->host_node[h]] = 0;
	queue[qt++] = s->host_node[h];
	while (qh < qt) {
		struct sim_node *n = &s->nodes[queue[qh++]];

		if (n->kind == SIM_HOST && d[n->id] != 0)
			continue; /* hosts do not forward */
		for (uint32_t j = 0; j < n->nports; j++) {
			uint32_t m = n->nbr[j];

			if (m == SIM_NONE || d[m] != 0xff)
				continue;
			d[m] = (uint8_t)(d[n->id] + 1);
			queue[qt++] = m;
		}
	}
	return 0;
}

/* The port at end A of link line @i of the configuration (it exists:
 * sim__topo_build checked). */
static struct sim_port *cfg_port(struct sim *s, uint32_t i)
{
	const struct sim_linkcfg *lc = &s->c.links[i];
	int x = sim_node_by_name(s, lc->a), y = sim_node_by_name(s, lc->b);

	return &s->nodes[x].ports[sim_port_to(s, x, y)];
}

/* Neighbour tables as if the timed failures had happened (@down) or not. */
static void set_timed(struct sim *s, bool down)
{
	for (uint32_t i = 0; i < s->c.n_links; i++) {
		struct sim_port *p;

		if (s->c.links[i].bps || !s->c.links[i].at_ns ||
		    s->c.links[i].restore)
			continue;
		p = cfg_port(s, i);
		p->node->nbr[p->idx] = down ? SIM_NONE : p->peer->node->id;
		p->peer->node->nbr[p->peer->idx] = down ? SIM_NONE : p->node->id;
	}
}

int sim__topo_build(struct sim *s, char *err, size_t en)
{
	const struct sim_cfg *c = &s->c;
	struct builder b = { 0 };
	uint32_t nh, ne, na, nc, ch = 0, ce = 0, ca = 0, cc = 0;
	uint32_t *deg, *queue;
	char w[300];

#define WHERE(...) sim__cfg_where(c, w, sizeof(w), __VA_ARGS__, (const char *)NULL)
	if (c->topo == SIM_TOPO_FATTREE) {
		uint32_t k = c->k, h2 = k / 2;

		if (k < 2 || k % 2 || k > 64) {
			snprintf(err, en, "%sfat-tree: k must be even, 2..64 (got %u)",
				 WHERE("k", "topology"), k);
			return -1;
		}
		nh = k * k * k / 4;
		ne = k * h2;
		na = k * h2;
		nc = h2 * h2;
		/* host h on edge h / h2; edge (p, j) = p*h2+j; agg (p, m) =
		 * p*h2+m; agg m of each pod to cores m*h2 .. m*h2+h2-1. */
		for (uint32_t h = 0; h < nh; h++)
			add_link(&b, h, nh + h / h2, c->host_bps);
		for (uint32_t p = 0; p < k; p++)
			for (uint32_t j = 0; j < h2; j++)
				for (uint32_t m = 0; m < h2; m++)
					add_link(&b, nh + p * h2 + j,
						 nh + ne + p * h2 + m, c->fabric_bps);
		for (uint32_t p = 0; p < k; p++)
			for (uint32_t m = 0; m < h2; m++)
				for (uint32_t i = 0; i < h2; i++)
					add_link(&b, nh + ne + p * h2 + m,
						 nh + ne + na + m * h2 + i,
						 c->fabric_bps);
	} else if (c->topo == SIM_TOPO_RAIL) {
		uint32_t r = c->rails, hpl = c->hosts_per_leaf;

		if (!r || !hpl || !c->rail_groups || !c->spines ||
		    (uint64_t)r * hpl * c->rail_groups > (1u << 20) ||
		    (uint64_t)r * c->rail_groups > 65535) {
			snprintf(err, en, "%srail: rails, hosts_per_leaf, rail_groups and spines must be > 0, at most 2^20 hosts",
				 WHERE("rails", "hosts_per_leaf", "rail_groups",
				       "spines", "topology"));
			return -1;
		}
		nh = r * hpl * c->rail_groups;
		ne = r * c->rail_groups;
		na = 0;
		nc = c->spines;
		/* host h = server * rails + nic; server = group * hpl + j;
		 * leaf (group, rail) = group * rails + rail. */
		for (uint32_t h = 0; h < nh; h++)
			add_link(&b, h, nh + h / r / hpl * r + h % r, c->host_bps);
		for (uint32_t l = 0; l < ne; l++)
			for (uint32_t sp = 0; sp < nc; sp++)
				add_link(&b, nh + l, nh + ne + sp, c->fabric_bps);
	} else {
		if (!c->leaves || !c->spines || !c->hosts_per_leaf) {
			snprintf(err, en, "%sleaf-spine: leaves, spines and hosts_per_leaf must be > 0",
				 WHERE("leaves", "spines", "hosts_per_leaf", "topology"));
			return -1;
		}
		nh = c->leaves * c->hosts_per_leaf;
		ne = c->leaves;
		na = 0;
		nc = c->spines;
		for (uint32_t h = 0; h < nh; h++)
			add_link(&b, h, nh + h / c->hosts_per_leaf, c->host_bps);
		for (uint32_t l = 0; l < ne; l++)
			for (uint32_t sp = 0; sp < nc; sp++)
				add_link(&b, nh + l, nh + ne + sp, c->fabric_bps);
	}
	s->nhosts = nh;
	s->nodes = calloc(nh + ne + na + nc, sizeof(*s->nodes));
	s->host_node = calloc(nh, sizeof(*s->host_node));
	deg = calloc(nh + ne + na + nc, sizeof(*deg));
	if (!s->nodes || !s->host_node || !deg)
		abort();
	add_nodes(s, nh, SIM_HOST, 'h', &ch);
	add_nodes(s, ne, SIM_EDGE, 'e', &ce);
	add_nodes(s, na, SIM_AGG, 'a', &ca);
	add_nodes(s, nc, SIM_CORE, 'c', &cc);
	for (uint32_t h = 0; h < nh; h++) {
		s->host_node[h] = h;
		s->nodes[h].hid = h;
	}
	for (uint32_t i = 0; i < b.n; i++) {
		deg[b.l[i].a]++;
		deg[b.l[i].b]++;
	}
	for (uint32_t i = 0; i < nh + ne + na + nc; i++)
		if (deg[i] > SIM_MAX_PORTS) {
			snprintf(err, en, "%sa switch with %u ports (at most %u)",
				 WHERE("leaves", "spines", "hosts_per_leaf",
				       "rails", "rail_groups", "k", "topology"),
				 deg[i], SIM_MAX_PORTS);
			free(b.l);
			free(deg);
			return -1;
		}
	for (uint32_t i = 0; i < s->nnodes; i++) {
		s->nodes[i].ports = calloc(deg[i] ? deg[i] : 1, sizeof(struct sim_port));
		if (!s->nodes[i].ports)
			abort();
		s->nodes[i].salt = (uint32_t)sim__rand(s);
	}
	for (uint32_t i = 0; i < b.n; i++) {
		struct sim_node *x = &s->nodes[b.l[i].a], *y = &s->nodes[b.l[i].b];
		struct sim_port *px = &x->ports[x->nports], *py = &y->ports[y->nports];

		px->node = x;
		py->node = y;
		px->idx = x->nports++;
		py->idx = y->nports++;
		px->peer = py;
		py->peer = px;
		px->peer_node = y->id;
		py->peer_node = x->id;
		px->bps = py->bps = b.l[i].bps;
		px->delay = py->delay = (uint32_t)c->link_delay_ns;
		px->loss = py->loss = c->link_loss;
		px->up = py->up = true;
	}
	free(b.l);
	free(deg);
	/* Failed and degraded links. */
	for (uint32_t i = 0; i < c->n_links; i++) {
		const struct sim_linkcfg *lc = &c->links[i];
		int x = sim_node_by_name(s, lc->a), y = sim_node_by_name(s, lc->b);
		int px = x >= 0 && y >= 0 ? sim_port_to(s, x, y) : -1;
		struct sim_port *p;

		if (px < 0) {
			if (lc->line)
				snprintf(err, en, "%s:%d: no link between '%s' and '%s'",
					 c->file, lc->line, lc->a, lc->b);
			else
				snprintf(err, en, "no link between '%s' and '%s'",
					 lc->a, lc->b);
			return -1;
		}
		p = &s->nodes[x].ports[px];
		if (lc->restore) {
			/* comes back from an earlier failure of the link */
			bool failed = false;

			for (uint32_t j = 0; j < c->n_links; j++) {
				const struct sim_linkcfg *f = &c->links[j];
				int fx = sim_node_by_name(s, f->a);
				int fy = sim_node_by_name(s, f->b);

				if (!f->bps && !f->restore && f->at_ns < lc->at_ns &&
				    ((fx == x && fy == y) || (fx == y && fy == x)))
					failed = true;
			}
			if (!failed) {
				if (lc->line)
					snprintf(w, sizeof(w), "%s:%d: ", c->file,
						 lc->line);
				else
					w[0] = 0;
				snprintf(err, en, "%srestore %s %s: no fail of that link before it",
					 w, lc->a, lc->b);
				return -1;
			}
		} else if (!lc->bps) {
			/* a timed failure is down for the check below only */
			if (!lc->at_ns)
				p->up = p->peer->up = false;
		} else {
			p->bps = p->peer->bps = lc->bps;
			p->loss = p->peer->loss = lc->loss;
		}
	}
	/* Sanity of the switch configuration. */
	if (c->pfc) {
		uint32_t maxports = 0;

		for (uint32_t i = nh; i < s->nnodes; i++)
			if (s->nodes[i].nports > maxports)
				maxports = s->nodes[i].nports;
		if (c->pfc_xon > c->pfc_xoff) {
			snprintf(err, en, "%spfc_xon (%u) above pfc_xoff (%u)",
				 WHERE("pfc_xon_kb", "pfc_xoff_kb", "pfc"),
				 c->pfc_xon, c->pfc_xoff);
			return -1;
		}
		if ((uint64_t)(c->pfc_xoff + c->pfc_headroom) * SIM_NPRIO * maxports >
		    c->buffer_bytes) {
			snprintf(err, en, "%spfc: (xoff %u + headroom %u) x %u priorities x %u ports exceeds the %lu-byte buffer (not lossless)",
				 WHERE("pfc_xoff_kb", "pfc_headroom_kb", "buffer_kb",
				       "pfc", "k", "spines", "leaves",
				       "hosts_per_leaf", "topology"),
				 c->pfc_xoff, c->pfc_headroom, SIM_NPRIO, maxports,
				 (unsigned long)c->buffer_bytes);
			return -1;
		}
	}
	if (c->ecn && c->kmin > c->kmax) {
		snprintf(err, en, "%skmin (%u) above kmax (%u)",
			 WHERE("kmin_kb", "kmax_kb", "ecn"), c->kmin, c->kmax);
		return -1;
	}
	/* Neighbours by port, for the BFS and the forwarding. */
	{
		size_t np = 0;

		for (uint32_t i = 0; i < s->nnodes; i++)
			np += s->nodes[i].nports;
		s->nbrs = malloc((np ? np : 1) * sizeof(*s->nbrs));
		if (!s->nbrs)
			abort();
		np = 0;
		for (uint32_t i = 0; i < s->nnodes; i++) {
			struct sim_node *nd = &s->nodes[i];

			nd->nbr = &s->nbrs[np];
			for (uint32_t j = 0; j < nd->nports; j++)
				nd->nbr[j] = nd->ports[j].up
						     ? nd->ports[j].peer->node->id
						     : SIM_NONE;
			np += nd->nports;
		}
	}
	/* Every host reachable from host 0 once every failure, timed ones
	 * too, has happened and none came back (the worst moment, whatever
	 * the order of fail and restore lines). */
	s->dist = malloc((size_t)nh * s->nnodes);
	queue = malloc(s->nnodes * sizeof(*queue));
	if (!s->dist || !queue)
		abort();
	set_timed(s, true);
	bfs(s, 0, queue);
	set_timed(s, false);
	for (uint32_t h = 1; h < nh; h++)
		if (s->dist[s->host_node[h]] == 0xff) {
			int line = 0;

			/* name the last fail line: with it the set disconnects */
			for (uint32_t i = 0; i < c->n_links; i++)
				if (!c->links[i].bps && !c->links[i].restore &&
				    c->links[i].line > line)
					line = c->links[i].line;
			if (line)
				snprintf(w, sizeof(w), "%s:%d: ", c->file, line);
			else
				w[0] = 0;
			snprintf(err, en, "%sfailed links disconnect host %u from host 0",
				 w, h);
			free(queue);
			return -1;
		}
	/* Distances to every host. */
	for (uint32_t h = 0; h < nh; h++)
		bfs(s, h, queue);
	free(queue);
	for (uint32_t i = 0; i < c->n_links; i++)
		if (!c->links[i].bps && c->links[i].at_ns)
			sim__push(s, c->links[i].at_ns, SIM_EV_LINK, NULL, i);
	return 0;
#undef WHERE
}

/* Failure @i of the configuration at its time: the link loses every packet
 * from now on (both ways); the switches route around it reroute_us later
 * (until then ECMP still hashes flows onto it). A restore line: the link
 * carries packets again from now on, and the switches take it back into
 * their routes reroute_us later (until then only what was already hashed
 * onto it, or sprayed by a port the routes still use, crosses it). */
void sim__link_event(struct sim *s, uint32_t arg)
{
	const struct sim_linkcfg *lc = &s->c.links[arg & ~SIM_LINK_REROUTE];
	struct sim_port *p = cfg_port(s, arg & ~SIM_LINK_REROUTE);

	if (!(arg & SIM_LINK_REROUTE)) {
		p->up = p->peer->up = lc->restore;
		if (s->c.reroute_ns) {
			sim__push(s, s->now + s->c.reroute_ns, SIM_EV_LINK, NULL,
				   arg | SIM_LINK_REROUTE);
			return;
		}
	}
	p->node->nbr[p->idx] = lc->restore ? p->peer->node->id : SIM_NONE;
	p->peer->node->nbr[p->peer->idx] = lc->restore ? p->node->id : SIM_NONE;
	{
		uint32_t *queue = malloc(s->nnodes * sizeof(*queue));

		if (!queue)
			abort();
		for (uint32_t h = 0; h < s->nhosts; h++)
			bfs(s, h, queue);
		free(queue);
	}
	s->reroutes++;
}

// SPDX-License-Identifier: MIT
#include "tnet.h"
#include "ur_crypt.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ur_test.h"
#include "ur_rand.h"
#include "ur_txq.h"

uint64_t tnet_rand(struct tnet *net)
{
	return ur_rand_next(&net->rng);
}

double tnet_frand(struct tnet *net)
{
	return ur_rand_unit(&net->rng);
}

void tnet_addr(int node, struct ur_ipudp *ip)
{
	memset(ip, 0, sizeof(*ip));
	ip->dst[0] = 10;
	ip->dst[3] = (uint8_t)(node + 1);
	ip->dport = UR_ROCEV2_PORT;
	ip->ttl = 64;
}

void tnet_rxinfo(int from, int to, struct ur_rxinfo *ri)
{
	memset(ri, 0, sizeof(*ri));
	tnet_addr(to, &ri->path);
	memcpy(ri->path.src, (uint8_t[4]){ 10, 0, 0, (uint8_t)(from + 1) }, 4);
	ri->path.sport = 0xc000;
	ri->icrc_checked = true;
}

int tnet_inject(struct tnet *net, int from, int to, const uint8_t *p,
		uint32_t len)
{
	struct ur_rxinfo ri;

	tnet_rxinfo(from, to, &ri);
	return ur_dev_rx(&net->nodes[to].dev, p, len, &ri, net->now);
}

/* ---- the event queue (util/ur_evheap.h, the simulator's too) --------- */
static void heap_push(struct tnet *net, struct tpkt p)
{
	struct tpkt *c = malloc(sizeof(*c));

	ASSERT(c);
	*c = p;
	ASSERT_EQ(ur_evheap_push(&net->q, p.at, 0, c, 0), 0);
}

static struct tpkt heap_pop(struct tnet *net)
{
	struct tpkt *c = ur_evheap_pop(&net->q).ptr, p = *c;

	free(c);
	return p;
}

/* ---- device ops ------------------------------------------------------ */
static void wire_send(struct tnode *n, struct ur_pktbuf *b);

/* tnet.txq: send what the node's queue holds, as the engine's flush. */
static void txq_flush(struct tnode *n)
{
	struct ur_txq *q = n->txq;

	if (!q)
		return;
	for (unsigned int i = 0; i < q->used; i++)
		if (q->slot[i].ready)
			wire_send(n, &q->slot[i].pb);
	ur_txq_reset(q);
}

static void txq_flush_all(struct tnet *net)
{
	for (int i = 0; i < net->n_nodes; i++)
		txq_flush(&net->nodes[i]);
}

static struct ur_pktbuf *op_alloc(void *host, uint32_t len)
{
	struct tnode *n = host;
	struct ur_pktbuf *b;

	if (n->pkt_budget == 0)
		return NULL;
	if (n->pkt_budget > 0)
		n->pkt_budget--;
	if (n->net->txq) {
		if (!n->txq) {
			n->txq = calloc(1, sizeof(*n->txq));
			ASSERT(n->txq);
		}
		b = ur_txq_alloc(n->txq, n, len);
		if (!b) { /* full */
			txq_flush(n);
			b = ur_txq_alloc(n->txq, n, len);
		}
		return b;
	}
	b = calloc(1, sizeof(*b) + len);
	ASSERT(b);
	b->data = (uint8_t *)(b + 1);
	b->cap = len;
	return b;
}

static void enqueue(struct tnet *net, int dst, const struct ur_pktbuf *b,
		    uint64_t extra)
{
	struct tpkt p = {
		.at = net->now + net->f.delay_ns + extra,
		.seq = net->seq++,
		.dst = dst,
		.len = b->len,
		.path = b->path,
	};

	p.data = malloc(b->len);
	ASSERT(p.data);
	memcpy(p.data, b->data, b->len);
	heap_push(net, p);
}

static void op_send(void *host, struct ur_pktbuf *b)
{
	struct tnode *n = host;

	if (n->net->txq) {
		((struct ur_txq_slot *)b->host_priv)->route = 0;
		if (ur_txq_commit(n->txq, b, &n->dev.cnt))
			txq_flush(n);
		return;
	}
	wire_send(n, b);
	free(b);
}

/* A packet leaves the node: the faults, then the queue of deliveries. */
static void wire_send(struct tnode *n, struct ur_pktbuf *b)
{
	struct tnet *net = n->net;
	int dst = b->path.dst[3] - 1;
	struct tfault *f = &net->f;
	uint64_t extra = 0;

	ASSERT(b->len <= b->cap);
	ASSERT(dst >= 0 && dst < net->n_nodes);
	memcpy(b->path.src, (uint8_t[4]){ 10, 0, 0, (uint8_t)(n->id + 1) }, 4);
	if (net->tap) {
		net->tap_sport = b->path.sport;
		net->tap_tos = b->path.tos;
		net->tap(net, b->data, b->len, net->tap_arg);
	}
	if (f->drop_count && b->data[0] == f->drop_opcode) {
		f->drop_count--;
		f->drop_psn = ur_bth_psn(b->data);
		net->dropped++;
		return;
	}
	if (f->drop_again && b->data[0] == f->drop_opcode &&
	    ur_bth_psn(b->data) == f->drop_psn) {
		f->drop_again--;
		net->dropped++;
		return;
	}
	if (f->loss && tnet_frand(net) < f->loss) {
		net->dropped++;
		return;
	}
	for (unsigned int i = 0; i < f->npaths; i++) {
		struct tpath *tp = &f->path[i];

		if (tp->sport != b->path.sport)
			continue;
		if (tp->tx_refuse_at && n->id == 1 &&
		    net->now >= tp->tx_refuse_at) {
			struct tpath *d = tp->refuse_if && tp->refuse_if <=
				f->npaths ? &f->path[tp->refuse_if - 1] : NULL;

			if (d && !d->rx_dead_at)
				d->rx_dead_at = net->now;
			net->dropped++;
			return;
		}
		extra += tp->delay_ns;
		if (tp->link && tp->link <= f->npaths)
			tp = &f->path[tp->link - 1];
		if (tp->loss && tnet_frand(net) < tp->loss) {
			net->dropped++;
			return;
		}
		if (tp->rate_bps) {
			uint64_t start = tp->free > net->now ? tp->free : net->now;

			if (tp->queue_ns && start - net->now > tp->queue_ns) {
				tp->tail_drops++;
				net->dropped++;
				return; /* tail drop */
			}
			tp->free = start + (uint64_t)b->len * 8 * 1000000000ull /
						   tp->rate_bps;
			extra += tp->free - net->now;
		}
	}
	if (f->rate_bps) {
		uint64_t start = n->link_free > net->now ? n->link_free : net->now;

		if (start - net->now > f->queue_ns) {
			net->dropped++;
				return; /* tail drop */
		}
		n->link_free = start + (uint64_t)b->len * 8 * 1000000000ull /
					       f->rate_bps;
		extra += n->link_free - net->now;
	}
	if (f->ce && (b->path.tos & 3) && tnet_frand(net) < f->ce)
		b->path.tos |= 3; /* ECN CE */
	if (f->reorder && tnet_frand(net) < f->reorder)
		extra += tnet_rand(net) % (f->jitter_ns + 1);
	enqueue(net, dst, b, extra);
	if (f->dup && tnet_frand(net) < f->dup)
		enqueue(net, dst, b, tnet_rand(net) % (f->jitter_ns + 1));
}

static void op_cq_event(void *host, struct ur_cq *cq)
{
	((struct tnode *)host)->cq_events++;
}

static void op_qp_event(void *host, struct ur_qp *qp, enum ur_async_event ev)
{
	struct tnode *n = host;

	n->qp_events++;
	n->last_qp_event = ev;
}

static const struct ur_mr *op_mr_lookup(void *host, uint32_t key)
{
	struct tnode *n = host;

	for (int i = 0; i < n->n_mrs; i++)
		if (n->mrs[i] && (n->mrs[i]->lkey == key || n->mrs[i]->rkey == key))
			return n->mrs[i];
	return NULL;
}

static struct ur_qp *op_qp_lookup(void *host, uint32_t qpn)
{
	struct tnode *n = host;

	for (int i = 0; i < n->n_qps; i++)
		if (n->qps[i] && n->qps[i]->qpn == qpn)
			return n->qps[i];
	return NULL;
}

static struct ur_srq *op_srq_lookup(void *host, uint32_t srqn)
{
	struct tnode *n = host;

	for (size_t i = 0; i < sizeof(n->srqs) / sizeof(n->srqs[0]); i++)
		if (n->srqs[i] && n->srqs[i]->srqn == srqn)
			return n->srqs[i];
	return NULL;
}

/* A negotiation MAD (dev->crypt_hello_send, dev->sr_hello_send): queued
 * like a packet to the peer's node, delivered by ur_dev_crypt_hello_rx or
 * ur_qp_sr_hello_rx. */
static void op_hello(struct ur_dev *dev, struct ur_qp *qp,
		     const struct ur_ipudp *dst, const uint8_t *mad)
{
	struct tnode *n = dev->host;
	struct tnet *net = n->net;
	struct tpkt p = {
		.at = net->now + net->f.delay_ns, .seq = net->seq++,
		.dst = dst->dst[3] - 1, .len = UR_CRYPT_HELLO_LEN,
		.path = *dst, .hello = true,
	};

	(void)qp;
	ASSERT(p.dst >= 0 && p.dst < net->n_nodes);
	memcpy(p.path.src, (uint8_t[4]){ 10, 0, 0, (uint8_t)(n->id + 1) }, 4);
	if (net->f.drop_hellos) {
		net->f.drop_hellos--;
		net->dropped++;
		return;
	}
	if (net->f.hello_loss && tnet_frand(net) < net->f.hello_loss) {
		net->dropped++;
		return;
	}
	p.data = malloc(p.len);
	ASSERT(p.data);
	memcpy(p.data, mad, p.len);
	net->hellos++;
	heap_push(net, p);
}

/* The link (its path index + 1) a packet from UDP port @sport comes
 * by, with f.rx_ifs; else 0. */
static uint8_t rx_if_of(const struct tnet *net, uint16_t sport)
{
	const struct tfault *f = &net->f;

	for (unsigned int i = 0; f->rx_ifs && i < f->npaths; i++)
		if (f->path[i].sport == sport)
			return (uint8_t)(f->path[i].link && f->path[i].link <=
							    f->npaths
						 ? f->path[i].link : i + 1);
	return 0;
}

static bool op_rx_if_ok(void *host, unsigned int rx_if, uint64_t now)
{
	const struct tfault *f = &((struct tnode *)host)->net->f;
	uint64_t at;

	if (!rx_if || rx_if > f->npaths)
		return true;
	at = f->path[rx_if - 1].rx_dead_at;
	if (at && now >= at)
		return false;
	if (f->rx_silence && ((struct tnode *)host)->id == 1) {
		const struct tpath *tp = &f->path[rx_if - 1];

		if ((tp->rx_at && f->rx_last - tp->rx_at < 2000000) ||
		    now - f->rx_last >= 8000000)
			return true;
		return f->rx_total - tp->rx_mark < 16;
	}
	return true;
}

/* ur_dev_ops.path_ok: no host here refuses a send (tx_refuse_at drops
 * node 1's packets in wire_send and names the interface dead instead). */
static bool op_path_ok(void *host, uint16_t sport, uint64_t now)
{
	(void)host;
	(void)sport;
	(void)now;
	return true;
}

/* ur_dev_ops.path_quiet: node 0's port @sport is on a link whose
 * quiet_at has come (tfault.path). */
static bool op_path_quiet(void *host, uint16_t sport, uint64_t now)
{
	const struct tnode *n = host;
	const struct tfault *f = &n->net->f;

	if (n->id != 0)
		return false;
	for (unsigned int i = 0; i < f->npaths; i++) {
		const struct tpath *tp = &f->path[i];

		if (tp->sport != sport)
			continue;
		if (tp->link && tp->link <= f->npaths)
			tp = &f->path[tp->link - 1];
		return tp->quiet_at && now >= tp->quiet_at;
	}
	return false;
}

static const struct ur_dev_ops tnet_ops = {
	.rx_if_ok = op_rx_if_ok,
	.path_ok = op_path_ok,
	.path_quiet = op_path_quiet,
	.pkt_alloc = op_alloc,
	.pkt_send = op_send,
	.cq_event = op_cq_event,
	.qp_event = op_qp_event,
	.mr_lookup = op_mr_lookup,
	.qp_lookup = op_qp_lookup,
	.srq_lookup = op_srq_lookup,
};

void tnet_init(struct tnet *net, uint64_t seed, int nodes)
{
	memset(net, 0, sizeof(*net));
	net->rng = ur_rand_seed(seed, 1);
	net->now = 1000000;
	net->f.delay_ns = 2000;
	net->n_nodes = nodes;
	for (int i = 0; i < nodes; i++) {
		struct tnode *n = &net->nodes[i];

		n->net = net;
		n->id = i;
		n->dev.ops = &tnet_ops;
		n->dev.host = n;
		n->dev.max_mtu = 4096;
		n->dev.crypt_hello_send = op_hello;
		n->dev.sr_hello_send = op_hello; /* with dev.sr.enable 2 */
		n->dev.cc_hello_send = op_hello; /* with dev.cc_auto */
		n->next_key = 0x100 * (i + 1);
		n->pkt_budget = -1;
	}
}

void tnet_fini(struct tnet *net)
{
	for (size_t i = 0; i < net->q.n; i++) {
		free(tnet_queued(net, i)->data);
		free(tnet_queued(net, i));
	}
	ur_evheap_fini(&net->q);
	for (int i = 0; i < net->n_nodes; i++) {
		struct tnode *n = &net->nodes[i];

		for (int j = 0; j < n->n_mrs; j++)
			free(n->mrs[j]);
		for (int j = 0; j < n->n_qps; j++) {
			if (n->qps[j]) {
				ur_qp_destroy(n->qps[j]);
				free(n->qps[j]);
			}
		}
		ur_dev_fini(&n->dev);
		free(n->txq);
	}
}

struct ur_mr *tnet_mr(struct tnode *n, void *buf, uint64_t len,
		      uint32_t access, uint32_t pdn)
{
	struct ur_mr *mr = calloc(1, sizeof(*mr));

	ASSERT(mr && n->n_mrs < TNET_MAX_MRS);
	mr->iova = (uintptr_t)buf;
	mr->host = buf;
	mr->length = len;
	mr->lkey = n->next_key++;
	mr->rkey = n->next_key++ | 0x10000;
	mr->access = access;
	mr->pdn = pdn;
	n->mrs[n->n_mrs++] = mr;
	return mr;
}

void tnet_mr_del(struct tnode *n, struct ur_mr *mr)
{
	for (int i = 0; i < n->n_mrs; i++)
		if (n->mrs[i] == mr) {
			free(mr);
			n->mrs[i] = NULL;
		}
	atomic_fetch_add(&n->dev.key_gen, 1); /* as a host must (ur_dev) */
}

struct ur_qp *tnet_qp(struct tnode *n, uint32_t type, uint32_t pdn,
		      const struct ur_qp_caps *caps, struct ur_cq *scq,
		      struct ur_cq *rcq)
{
	struct ur_qp *qp = calloc(1, sizeof(*qp));
	uint32_t qpn = 0x100 + (uint32_t)n->id * 0x1000 + (uint32_t)n->n_qps;

	ASSERT(qp && n->n_qps < TNET_MAX_QPS);
	ASSERT_EQ(ur_qp_create(&n->dev, qp, type, qpn, pdn, caps, scq, rcq), 0);
	n->qps[n->n_qps++] = qp;
	qp->owner = n;
	return qp;
}

void tnet_qp_del(struct tnode *n, struct ur_qp *qp)
{
	for (int i = 0; i < n->n_qps; i++)
		if (n->qps[i] == qp) {
			n->qps[i] = NULL;
			ur_qp_destroy(qp);
			free(qp);
		}
}

/* At the network's time: a QP that connected at 0 on a clock that starts
 * at 1 ms found every timer it set going RTR (the negotiation hellos'
 * first resend) due at once. */
static void modify_ok(struct ur_qp *qp, struct ur_qp_attr *a, uint32_t mask)
{
	int rc = ur_qp_modify(qp, a, mask,
			      ((struct tnode *)qp->owner)->net->now);

	if (rc)
		UR_FAIL("modify qp 0x%x to %u mask 0x%x: %d", qp->qpn,
			a->qp_state, mask, rc);
}

static void connect_one(struct ur_qp *qp, struct ur_qp *peer,
			const struct tconn_attr *ca, uint32_t rq_psn,
			uint32_t sq_psn, uint8_t tclass)
{
	struct tnode *pn = peer->owner;
	struct ur_qp_attr a = {0};
	bool rc = qp->type == UR_QPT_RC;

	a.qp_state = UR_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = ca->access;
	modify_ok(qp, &a, UR_QP_STATE | UR_QP_PKEY_INDEX | UR_QP_PORT |
			  UR_QP_ACCESS_FLAGS);
	a.qp_state = UR_QPS_RTR;
	tnet_addr(pn->id, &a.path);
	a.path.tos = tclass;
	{
		/* The source GID, as verbs puts it in the AV (the key
		 * derivation of an encrypted QP names both ends). */
		struct ur_ipudp me;

		tnet_addr(((struct tnode *)qp->owner)->id, &me);
		memcpy(a.path.src, me.dst, sizeof(a.path.src));
	}
	a.path_mtu = ca->mtu ? ca->mtu : 1024;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = ca->max_dest_rd_atomic ? ca->max_dest_rd_atomic
						: 16;
	a.min_rnr_timer = ca->min_rnr_timer;
	modify_ok(qp, &a, UR_QP_STATE | UR_QP_AV | UR_QP_PATH_MTU |
			  UR_QP_DEST_QPN | UR_QP_RQ_PSN |
			  (rc ? UR_QP_MAX_DEST_RD_ATOMIC | UR_QP_MIN_RNR_TIMER : 0));
	a.qp_state = UR_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = ca->timeout;
	a.retry_cnt = ca->retry_cnt;
	a.rnr_retry = ca->rnr_retry;
	a.max_rd_atomic = ca->max_rd_atomic ? ca->max_rd_atomic : 16;
	/* An XRC TGT sends only ACKs: the timeout and SQ PSN (XRC annex). */
	modify_ok(qp, &a, UR_QP_STATE | UR_QP_SQ_PSN |
			  (qp->xrc == UR_XRC_TGT ? UR_QP_TIMEOUT
			   : rc ? UR_QP_TIMEOUT | UR_QP_RETRY_CNT |
					  UR_QP_RNR_RETRY | UR_QP_MAX_QP_RD_ATOMIC
				: 0));
}

void tnet_connect(struct ur_qp *a, struct ur_qp *b, const struct tconn_attr *ca)
{
	connect_one(a, b, ca, ca->psn_b, ca->psn_a, ca->tclass_a);
	connect_one(b, a, ca, ca->psn_a, ca->psn_b, ca->tclass_b);
}

void tnet_ud_up(struct ur_qp *qp, uint32_t qkey)
{
	struct ur_qp_attr a = {0};

	a.qp_state = UR_QPS_INIT;
	a.port_num = 1;
	a.qkey = qkey;
	modify_ok(qp, &a, UR_QP_STATE | UR_QP_PKEY_INDEX | UR_QP_PORT | UR_QP_QKEY);
	a.qp_state = UR_QPS_RTR;
	modify_ok(qp, &a, UR_QP_STATE);
	a.qp_state = UR_QPS_RTS;
	a.sq_psn = 0;
	modify_ok(qp, &a, UR_QP_STATE | UR_QP_SQ_PSN);
}

/* ---- the event loop -------------------------------------------------- */
/* tfault.stall_*: when node @i runs again if it is asleep at @t, else @t. */
static uint64_t awake_at(const struct tnet *net, int i, uint64_t t)
{
	const struct tfault *f = &net->f;

	if (!f->stall_ns || i != f->stall_node || t == UINT64_MAX ||
	    t % f->stall_every_ns >= f->stall_ns)
		return t;
	return t - t % f->stall_every_ns + f->stall_ns;
}

static uint64_t next_deadline(struct tnet *net)
{
	uint64_t d = UINT64_MAX;

	for (int i = 0; i < net->n_nodes; i++)
		for (int j = 0; j < net->nodes[i].n_qps; j++) {
			struct ur_qp *qp = net->nodes[i].qps[j];

			if (qp && awake_at(net, i, qp->deadline) < d)
				d = awake_at(net, i, qp->deadline);
		}
	return d;
}

static void run_timers(struct tnet *net)
{
	for (int i = 0; i < net->n_nodes; i++)
		for (int j = 0; j < net->nodes[i].n_qps; j++) {
			struct ur_qp *qp = net->nodes[i].qps[j];

			if (qp && qp->deadline <= net->now &&
			    awake_at(net, i, net->now) == net->now)
				ur_qp_timer(qp, net->now);
		}
}

static void progress_all(struct tnet *net)
{
	for (int i = 0; i < net->n_nodes; i++)
		for (int j = 0; j < net->nodes[i].n_qps; j++)
			if (net->nodes[i].qps[j] &&
			    awake_at(net, i, net->now) == net->now)
				ur_qp_progress(net->nodes[i].qps[j], net->now);
}

/* tnet.place: true when it took the packet (placed, or dropped as failing
 * its check). */
static bool place_step(struct tnet *net, struct tpkt *p, struct ur_rxinfo *ri)
{
	struct ur_dev *dev = &net->nodes[p->dst].dev;
	size_t pl = p->len - UR_BTH_LEN - UR_ICRC_LEN;
	struct ur_qp *qp;
	struct ur_pkt pkt;
	uint8_t *dst;

	if (p->len < UR_BTH_LEN + UR_ICRC_LEN)
		return false;
	qp = dev->ops->qp_lookup(dev->host, ur_bth_dqpn(p->data));
	dst = qp ? ur_qp_rx_place(qp, p->data, p->len, ri) : NULL;
	if (!dst)
		return false;
	if (tnet_frand(net) < net->place_bad) {
		memset(dst, 0xee, pl);
		net->placed_bad++;
		return true;
	}
	memcpy(dst, p->data + UR_BTH_LEN, pl);
	/* The responder must take the data in place, not from here. */
	memset(p->data + UR_BTH_LEN, 0xdd, pl);
	if (ur_dev_rx_classify(dev, p->data, p->len, ri, &pkt, &qp))
		return true;
	pkt.payload = dst;
	ur_qp_rx(qp, &pkt, ri, net->now);
	net->placed++;
	return true;
}

static void deliver(struct tnet *net, struct tpkt *p, bool later)
{
	struct ur_rxinfo ri = { .path = p->path, .icrc_checked = true,
				.ack_later = later,
				.rx_if = rx_if_of(net, p->path.sport) };

	struct ur_sr_hello sh;

	if (net->f.rx_silence && p->dst == 1 && ri.rx_if) {
		struct tpath *tp = &net->f.path[ri.rx_if - 1];

		tp->rx_mark = ++net->f.rx_total;
		tp->rx_at = net->now;
		net->f.rx_last = net->now;
	}
	if (p->hello && !ur_sr_hello_parse(p->data, p->len, &sh)) {
		struct ur_dev *dev = &net->nodes[p->dst].dev;
		struct ur_qp *qp = dev->ops->qp_lookup(dev->host, sh.dst_qpn);

		if (qp)
			(void)ur_qp_sr_hello_rx(qp, p->data, p->len, &ri,
						net->now);
	} else if (p->hello && !ur_cc_hello_parse(p->data, p->len, &sh)) {
		struct ur_dev *dev = &net->nodes[p->dst].dev;
		struct ur_qp *qp = dev->ops->qp_lookup(dev->host, sh.dst_qpn);

		if (qp)
			(void)ur_qp_cc_hello_rx(qp, p->data, p->len, &ri,
						net->now);
	} else if (p->hello)
		(void)ur_dev_crypt_hello_rx(&net->nodes[p->dst].dev, p->data,
					    p->len, &ri, net->now);
	else if (!net->place || !place_step(net, p, &ri))
		ur_dev_rx(&net->nodes[p->dst].dev, p->data, p->len, &ri,
			  net->now);
	free(p->data);
	net->delivered++;
}

/* tnet.ack_later: the end of a receive batch. */
static void acks_owed_flush(struct tnet *net)
{
	for (int i = 0; i < net->n_nodes; i++)
		for (int j = 0; j < net->nodes[i].n_qps; j++) {
			struct ur_qp *qp = net->nodes[i].qps[j];

			if (qp && ur_qp_ack_owed(qp))
				ur_qp_ack_flush(qp);
		}
}

static uint64_t step(struct tnet *net, uint64_t limit)
{
	uint64_t d, at;

	if (net->txq)
		txq_flush_all(net); /* what posts made since the last step */
	d = next_deadline(net);
	at = net->q.n ? net->q.a[0].t : UINT64_MAX;

	if (at == UINT64_MAX && d == UINT64_MAX)
		return 0;
	if ((at <= d ? at : d) > limit)
		return 0;
	if (at <= d) {
		struct tpkt p = heap_pop(net);

		if (awake_at(net, p.dst, p.at) != p.at) {
			/* asleep: it waits in order (a later seq) */
			p.at = awake_at(net, p.dst, p.at);
			p.seq = net->seq++;
			heap_push(net, p);
			return 1;
		}
		if (p.at > net->now)
			net->now = p.at;
		/* tnet.txq: what arrives at one instant is one receive batch
		 * (the engine's recvmmsg of up to 16), answered by one flush. */
		for (int k = 1;; k++) {
			bool more = net->txq && k < TNET_RX_BATCH &&
				    net->q.n && net->q.a[0].t == at;

			deliver(net, &p, more && net->ack_later);
			if (!more)
				break;
			p = heap_pop(net);
		}
		if (net->ack_later)
			acks_owed_flush(net);
	} else {
		if (d > net->now)
			net->now = d;
		run_timers(net);
	}
	progress_all(net);
	if (net->txq)
		txq_flush_all(net);
	return 1;
}

uint64_t tnet_run(struct tnet *net, uint64_t limit)
{
	uint64_t n = 0;

	while (step(net, limit))
		n++;
	return n;
}

void tnet_run_until(struct tnet *net, uint64_t t)
{
	while (step(net, t))
		;
	if (net->now < t)
		net->now = t;
}

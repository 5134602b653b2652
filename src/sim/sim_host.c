// SPDX-License-Identifier: MIT
/*
 * Simulated hosts: a struct ur_dev each, whose ops lend packets from the
 * simulator's pool and queue them on the host's NIC port. The NIC accepts
 * data packets while its egress queue is below cfg.nic_queue bytes; a QP
 * refused a buffer waits in a FIFO and is progressed when the queue drains
 * (the NIC's round-robin QP scheduler). ACKs/NAKs/CNPs are never refused.
 *
 * QPs are real RC QPs (ur_qp_create/modify), connected pairwise when a
 * flow first needs the pair; each QP's deadline is an event in the heap.
 * Flows are RDMA WRITE with immediate (the immediate names the flow) into
 * one region shared by every host: contents do not matter.
 *
 * Spraying is the transport's (ur_qp_set_paths, ur_mp.c), as on the real
 * wire: a QP with selective repeat (cfg.sr, negotiated like on real
 * devices: both ends enable it) sends its requests over K source ports,
 * equally weighted for `spray`, weighted by per-path losses and ECN marks
 * for `adaptive`; the responder holds requests that arrive early and NAKs
 * a gap after cfg.reseq_ns. Single-path QPs are plain RoCEv2. Spraying
 * without selective repeat (`sr off`, a baseline the transport refuses)
 * is the simulated NIC rotating the source port itself.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim_priv.h"
#include "ur_txq.h"

static void after(struct sim *s, struct sim_qp *q);

/* Send (and receive) WRs per QP: the workload's flows wait in the
 * simulator's per-QP list, so a few slots keep the QP busy. */
static uint32_t qp_wrs(const struct sim *s)
{
	return s->c.chunks > 2 ? 2 * s->c.chunks : 4;
}

/* ---- device ops ----------------------------------------------------------- */
static void block(struct sim_host *h, struct sim_qp *q)
{
	if (!q || q->blocked)
		return;
	q->blocked = true;
	q->bnext = NULL;
	if (h->btail)
		h->btail->bnext = q;
	else
		h->bhead = q;
	h->btail = q;
}

static struct ur_pktbuf *op_alloc(void *host, uint32_t len)
{
	struct sim_host *h = host;
	struct sim *s = h->s;
	struct sim_pkt *p;

	if (len > 64 && h->node->ports[0].qbytes[0] >= s->c.nic_queue) {
		block(h, h->cur);
		sim__port_wake(s, &h->node->ports[0]);
		return NULL;
	}
	p = sim__pkt_get(s, len);
	return &p->b;
}

/* A packet whose payload the transport left in registered memory
 * (ur_dev.tx_ext): only its headers, pad and ICRC slot are kept, in a
 * small buffer, with pktbuf.ext pointing at the payload; b.len stays the
 * packet's length on the wire. An MTU of payload per packet in flight
 * (switch queues hold ~400 K packets at k=32) would be gigabytes of bytes
 * nobody reads: the region's contents do not matter. */
static struct sim_pkt *shrink(struct sim *s, struct sim_pkt *p)
{
	struct ur_txq_parts x = ur_txq_parts(&p->b);
	uint32_t keep = p->b.len - x.payload;
	struct sim_pkt *q;

	if (keep > s->pool.cap[0])
		return p;
	q = sim__pkt_get(s, keep);
	memcpy(q->data, p->data, keep);
	q->b.len = p->b.len;
	q->b.path = p->b.path;
	q->b.ext = p->b.ext;
	q->b.qp_io = p->b.qp_io;
	sim__pkt_put(s, p);
	return q;
}

static void op_send(void *host, struct ur_pktbuf *b)
{
	struct sim_host *h = host;
	struct sim *s = h->s;
	struct sim_pkt *p = b->host_priv;
	uint8_t op = b->data[0];

	if (b->ext) {
		p = shrink(s, p);
		b = &p->b;
	}
	p->src = h->id;
	p->dst = sim__addr_host(b->path.dst);
	sim__host_addr(h->id, b->path.src);
	p->prio = (op == UR_OP_RC_ACKNOWLEDGE || op == UR_OP_CNP) ? 1 : 0;
	/* The NIC's own rotation: spraying over go-back-N (sr off). */
	if (h->cur && h->cur->nic_spray && op <= UR_OP_RC_RDMA_WRITE_ONLY_IMM)
		b->path.sport = ur_mp_sport(h->cur->qp.sport,
					    h->cur->rr++ % s->c.paths);
	p->t0 = s->now;
	sim__port_enqueue(s, &h->node->ports[0], p);
}

static void op_cq_event(void *host, struct ur_cq *cq)
{
}

static void op_qp_event(void *host, struct ur_qp *qp, enum ur_async_event ev)
{
	fprintf(stderr, "sim: host %u qp 0x%x async event %d\n",
		((struct sim_host *)host)->id, qp->qpn, ev);
}

static const struct ur_mr *op_mr_lookup(void *host, uint32_t key)
{
	struct sim *s = ((struct sim_host *)host)->s;

	return key == s->mr.lkey || key == s->mr.rkey ? &s->mr : NULL;
}

static struct ur_qp *op_qp_lookup(void *host, uint32_t qpn)
{
	struct sim_host *h = host;
	uint32_t i = qpn - SIM_QPN0;

	return i < h->nqps ? &h->qps[i]->qp : NULL;
}

static const struct ur_dev_ops sim_dev_ops = {
	.pkt_alloc = op_alloc,
	.pkt_send = op_send,
	.cq_event = op_cq_event,
	.qp_event = op_qp_event,
	.mr_lookup = op_mr_lookup,
	.qp_lookup = op_qp_lookup,
};

/* `cc_trace FILE`: one line per RTT sample of a QP whose algorithm has
 * features (predict): "t_ns host qpn f0 f1 ..." (ur_cc.h UR_PRED_F_*),
 * the training data of bench/cc_predict_train.py. */
static void cc_trace(struct ur_dev *dev, const struct ur_qp *qp,
		     const double *f, unsigned int nf, uint64_t now)
{
	struct sim_host *h = dev->host;
	FILE *o = h->s->cc_trace;

	fprintf(o, "%llu %u %u", (unsigned long long)now, h->id, qp->qpn);
	for (unsigned int i = 0; i < nf; i++)
		fprintf(o, " %.4g", f[i]);
	fputc('\n', o);
}

int sim__hosts_init(struct sim *s, char *err, size_t n)
{
	struct ur_cc_params cc;

	sim_cfg_cc(&s->c, &cc);
	/* auto: the hello is not simulated; its answer's round trip would
	 * be the fabric's idle one, at most 6 links each way (a 3-tier
	 * fat-tree's longest path; the hosts take no time), which below
	 * AUTO_RTT_US makes auto Swift (ur_cc.c ur__cc_auto_pick). */
	if (s->c.cc_auto && cc.algo == UR_CC_DCQCN_RTT &&
	    12 * s->c.link_delay_ns < (uint64_t)cc.auto_rtt_us * 1000) {
		ur_cc_auto_swift(&cc);
		/* a swift_<field> given still wins over auto's own */
		for (unsigned int i = 0; i < ur_cc_swift_param_count; i++) {
			size_t off = ur_cc_swift_param_table[i].off;

			if (s->c.swift_set & (1u << i))
				*(uint32_t *)((char *)&cc + off) =
					*(const uint32_t *)((const char *)&s->c.cc + off);
		}
	}
	if (s->c.cc_trace[0]) {
		s->cc_trace = fopen(s->c.cc_trace, "w");
		if (!s->cc_trace) {
			snprintf(err, n, "cc_trace %s: %s", s->c.cc_trace,
				 strerror(errno));
			return -1;
		}
	}
	s->hosts = calloc(s->nhosts, sizeof(*s->hosts));
	s->rxbuf = calloc(1, s->pool.cap[1]);
	if (!s->hosts || !s->rxbuf) {
		snprintf(err, n, "out of memory (hosts)");
		return -1;
	}
	for (uint32_t i = 0; i < s->nhosts; i++) {
		struct sim_host *h = &s->hosts[i];

		h->s = s;
		h->id = i;
		h->node = &s->nodes[s->host_node[i]];
		h->node->host = h;
		h->dev.ops = &sim_dev_ops;
		h->dev.host = h;
		h->dev.max_mtu = s->c.mtu;
		h->dev.cc = cc;
		/* auto: every simulated host is uroce (sim_cfg.c "cc"). */
		h->dev.cc_auto = s->c.cc_auto;
		h->dev.cc_auto_algo = cc.algo;
		if (s->cc_trace)
			h->dev.cc_trace = cc_trace;
		h->dev.tx_ext = true; /* payloads by reference: shrink() */
		/* The CQ is drained after every transport call, which
		 * touches one QP: it holds at most that QP's send and
		 * receive completions (an engine's 4096 entries would be
		 * 224 KiB per host, 1.8 GiB at k=32). */
		if (ur_cq_init(&h->cq, 4 * qp_wrs(s) + 16)) {
			snprintf(err, n, "out of memory (CQ)");
			return -1;
		}
	}
	s->mr.iova = 0x10000;
	s->mr.lkey = 0x101;
	s->mr.rkey = 0x10101;
	s->mr.access = UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE;
	s->mr.pdn = 1;
	s->mr.type = UR_KEY_MR;
	return 0;
}

void sim__hosts_fini(struct sim *s)
{
	if (s->cc_trace)
		fclose(s->cc_trace);
	s->cc_trace = NULL;
	if (!s->hosts)
		return;
	for (uint32_t i = 0; i < s->nhosts; i++) {
		struct sim_host *h = &s->hosts[i];

		for (uint32_t j = 0; j < h->nqps; j++) {
			ur_qp_destroy(&h->qps[j]->qp);
			free(h->qps[j]);
		}
		free(h->qps);
		ur_dev_fini(&h->dev);
		ur_cq_fini(&h->cq);
	}
	free(s->hosts);
	free(s->rxbuf);
	free(s->ckey);
	free(s->cval);
	free(s->buf);
}

/* ---- connections ------------------------------------------------------------ */
static size_t ckey_slot(const struct sim *s, uint64_t key)
{
	uint64_t x = key * 0x9E3779B97F4A7C15ull;
	size_t i = (size_t)(x >> 20) & (s->ccap - 1);

	while (s->ckey[i] && s->ckey[i] != key)
		i = (i + 1) & (s->ccap - 1);
	return i;
}

struct sim_qp *sim__conn_find(const struct sim *s, uint32_t a, uint32_t b)
{
	uint64_t key = ((uint64_t)(a + 1) << 32) | (b + 1);
	size_t i;

	if (!s->ccap)
		return NULL;
	i = ckey_slot(s, key);
	return s->ckey[i] ? s->cval[i] : NULL;
}

static void cput(struct sim *s, uint32_t a, uint32_t b, struct sim_qp *q)
{
	uint64_t key = ((uint64_t)(a + 1) << 32) | (b + 1);
	size_t i;

	if (2 * (s->ncon + 1) > s->ccap) {
		uint64_t *ok = s->ckey;
		struct sim_qp **ov = s->cval;
		size_t oc = s->ccap;

		s->ccap = oc ? 2 * oc : 1024;
		s->ckey = calloc(s->ccap, sizeof(*s->ckey));
		s->cval = calloc(s->ccap, sizeof(*s->cval));
		if (!s->ckey || !s->cval)
			abort();
		for (size_t j = 0; j < oc; j++)
			if (ok[j]) {
				size_t k = ckey_slot(s, ok[j]);

				s->ckey[k] = ok[j];
				s->cval[k] = ov[j];
			}
		free(ok);
		free(ov);
	}
	i = ckey_slot(s, key);
	s->ckey[i] = key;
	s->cval[i] = q;
	s->ncon++;
}

static struct sim_qp *qp_new(struct sim *s, struct sim_host *h, uint32_t peer)
{
	struct sim_qp *q = calloc(1, sizeof(*q));
	struct ur_qp_caps caps = {
		.max_send_wr = qp_wrs(s),
		.max_send_sge = 1, .max_recv_sge = 1,
	};

	if (!q)
		abort();
	caps.max_recv_wr = caps.max_send_wr;
	if (h->nqps == h->capqps) {
		h->capqps = h->capqps ? 2 * h->capqps : 8;
		h->qps = realloc(h->qps, h->capqps * sizeof(*h->qps));
		if (!h->qps)
			abort();
	}
	if (ur_qp_create(&h->dev, &q->qp, UR_QPT_RC, SIM_QPN0 + h->nqps, 1,
			 &caps, &h->cq, &h->cq))
		abort();
	h->qps[h->nqps++] = q;
	q->qp.owner = q;
	q->qp.sport = (uint16_t)(0xc000 | (sim__rand(s) & 0x3fff));
	q->h = h;
	q->peer_hid = peer;
	q->armed = UINT64_MAX;
	q->pend_head = q->pend_tail = SIM_NONE;
	if (s->c.window)
		ur_qp_set_tx_window(&q->qp, s->c.window);
	if (s->c.sr == SIM_SR_ON ||
	    (s->c.sr == SIM_SR_AUTO && s->c.lb != SIM_LB_SINGLE)) {
		struct ur_sr_params sp;

		ur_sr_params_default(&sp);
		sp.window = s->c.window > 64 ? s->c.window : 64;
		if (sp.window > 65536)
			sp.window = 65536;
		sp.reorder_ns = (uint32_t)(s->c.reseq_ns < UINT32_MAX
						   ? s->c.reseq_ns : UINT32_MAX);
		sp.peer_known = 1; /* both ends are configured alike */
		if (ur_qp_set_sr(&q->qp, &sp))
			abort();
	}
	if (s->c.lb != SIM_LB_SINGLE && s->c.paths > 1) {
		uint16_t sports[UR_MP_MAX];

		for (uint32_t i = 0; i < s->c.paths; i++)
			sports[i] = ur_mp_sport(q->qp.sport, i);
		if (ur_qp_set_paths(&q->qp, sports, s->c.paths,
				    s->c.lb == SIM_LB_SPRAY ? UR_MP_OBLIVIOUS : 0))
			q->nic_spray = true; /* no selective repeat */
	}
	return q;
}

static void qp_up(struct sim *s, struct sim_qp *q)
{
	struct ur_qp_attr a;
	struct ur_recv_wr rw = { 0 };
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = UR_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE;
	rc = ur_qp_modify(&q->qp, &a, UR_QP_STATE | UR_QP_PKEY_INDEX |
				      UR_QP_PORT | UR_QP_ACCESS_FLAGS, s->now);
	a.qp_state = UR_QPS_RTR;
	sim__host_addr(q->peer_hid, a.path.dst);
	sim__host_addr(q->h->id, a.path.src);
	a.path.dport = UR_ROCEV2_PORT;
	a.path.ttl = 64;
	a.path_mtu = s->c.mtu;
	a.dest_qp_num = q->peer->qp.qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	rc |= ur_qp_modify(&q->qp, &a, UR_QP_STATE | UR_QP_AV | UR_QP_PATH_MTU |
				       UR_QP_DEST_QPN | UR_QP_RQ_PSN |
				       UR_QP_MAX_DEST_RD_ATOMIC |
				       UR_QP_MIN_RNR_TIMER, s->now);
	a.qp_state = UR_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = s->c.timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	rc |= ur_qp_modify(&q->qp, &a, UR_QP_STATE | UR_QP_SQ_PSN |
				       UR_QP_TIMEOUT | UR_QP_RETRY_CNT |
				       UR_QP_RNR_RETRY | UR_QP_MAX_QP_RD_ATOMIC,
			   s->now);
	if (rc)
		abort();
	for (uint32_t i = 0; i < q->qp.caps.max_recv_wr; i++)
		ur_qp_post_recv(&q->qp, &rw);
}

/* A new pair of QPs between hosts @a and @b, ahead of the pair's others
 * (next_conn). */
static struct sim_qp *conn_new(struct sim *s, uint32_t a, uint32_t b)
{
	struct sim_qp *qa = qp_new(s, &s->hosts[a], b);
	struct sim_qp *qb = qp_new(s, &s->hosts[b], a);

	qa->peer = qb;
	qb->peer = qa;
	qa->next_conn = sim__conn_find(s, a, b);
	qb->next_conn = sim__conn_find(s, b, a);
	qp_up(s, qa);
	qp_up(s, qb);
	cput(s, a, b, qa);
	cput(s, b, a, qb);
	return qa;
}

struct sim_qp *sim__conn(struct sim *s, uint32_t a, uint32_t b)
{
	struct sim_qp *qa = sim__conn_find(s, a, b);

	return qa ? qa : conn_new(s, a, b);
}

/* qp_per_flow: a flow on a QP of its own, as each flow is a connection
 * of its own in the DCQCN and HPCC papers' simulations: an idle QP of
 * the pair (nothing posted or waiting), else a new pair. Otherwise every
 * flow of a host pair goes in order on one RC QP, and a short one posted
 * behind a 20 MB message waits for it (bench/results/2026-12-07-cc11.md:
 * what makes WebSearch's p99 slowdown of small flows). */
static struct sim_qp *conn_flow(struct sim *s, uint32_t a, uint32_t b)
{
	for (struct sim_qp *x = sim__conn_find(s, a, b); x; x = x->next_conn)
		if (!x->outstanding && x->pend_head == SIM_NONE)
			return x;
	return conn_new(s, a, b);
}

/* ---- flows ------------------------------------------------------------------ */
static int post_flow(struct sim *s, struct sim_qp *q, uint32_t f)
{
	const struct sim_flow *fl = &s->flows[f];
	struct ur_sge sge = { .addr = s->mr.iova, .length = (uint32_t)fl->bytes,
			      .lkey = s->mr.lkey };
	struct ur_send_wr wr = {
		.wr_id = f,
		.opcode = UR_WR_RDMA_WRITE_WITH_IMM,
		.flags = UR_SEND_SIGNALED,
		.imm_data = htonl(f),
		.remote_addr = s->mr.iova,
		.rkey = s->mr.rkey,
		.sg_list = &sge,
		.num_sge = 1,
	};
	struct sim_qp *prev = q->h->cur;
	int rc;

	q->h->cur = q;
	rc = ur_qp_post_send(&q->qp, &wr, s->now);
	q->h->cur = prev;
	if (!rc)
		q->outstanding++;
	return rc;
}

void sim__flow_start(struct sim *s, uint32_t f)
{
	struct sim_flow *fl = &s->flows[f];
	struct sim_qp *q = s->c.qp_per_flow ? conn_flow(s, fl->src, fl->dst)
					    : sim__conn(s, fl->src, fl->dst);

	fl->t_post = s->now ? s->now : 1;
	if (!s->t_first || s->now < s->t_first)
		s->t_first = s->now;
	if (q->pend_head == SIM_NONE && q->outstanding < q->qp.caps.max_send_wr &&
	    !post_flow(s, q, f)) {
		after(s, q);
		return;
	}
	fl->next_pend = SIM_NONE;
	if (q->pend_tail != SIM_NONE)
		s->flows[q->pend_tail].next_pend = f;
	else
		q->pend_head = f;
	q->pend_tail = f;
}

/* One dependency of flow @f is done; the last one starts it (at its
 * start time, or that long from now for a trace's after=). */
static void release(struct sim *s, uint32_t f)
{
	struct sim_flow *c = &s->flows[f];
	uint64_t at = c->t_start;

	if (!(c->deps & ~SIM_DEPS_REL) || --c->deps & ~SIM_DEPS_REL)
		return;
	if (c->deps & SIM_DEPS_REL)
		at += s->now;
	if (at > s->now)
		sim__push(s, at, SIM_EV_FLOW, NULL, f);
	else
		sim__flow_start(s, f);
}

static void flow_done(struct sim *s, uint32_t f)
{
	struct sim_flow *fl = &s->flows[f];

	if (f >= s->nflows || fl->t_done)
		return;
	fl->t_done = s->now;
	s->flows_done++;
	if (s->now > s->t_last)
		s->t_last = s->now;
	if (fl->child != SIM_NONE)
		release(s, fl->child);
	if (fl->tag != SIM_NONE && !--s->tags[fl->tag].left)
		for (uint32_t w = s->tags[fl->tag].waiters; w != SIM_NONE;
		     w = s->wait[w].next)
			release(s, s->wait[w].flow);
}

/* Hand completions to the workload; repost receives, post waiting flows. */
static void drain(struct sim *s, struct sim_host *h)
{
	struct ur_cqe e[32];
	int n;

	while ((n = ur_cq_poll(&h->cq, e, 32)) > 0) {
		for (int i = 0; i < n; i++) {
			struct sim_qp *q = h->qps[e[i].qp_num - SIM_QPN0];

			if (e[i].status != UR_WC_SUCCESS) {
				fprintf(stderr, "sim: host %u qp 0x%x: %s (wc status %u)\n",
					h->id, e[i].qp_num,
					ur_wc_status_name(e[i].status), e[i].status);
				continue;
			}
			if (e[i].opcode & UR_WC_RECV) {
				struct ur_recv_wr rw = { 0 };

				ur_qp_post_recv(&q->qp, &rw);
				flow_done(s, ntohl(e[i].imm_data));
				continue;
			}
			q->outstanding--;
			while (q->pend_head != SIM_NONE &&
			       q->outstanding < q->qp.caps.max_send_wr) {
				uint32_t f = q->pend_head;

				if (post_flow(s, q, f))
					break;
				q->pend_head = s->flows[f].next_pend;
				if (q->pend_head == SIM_NONE)
					q->pend_tail = SIM_NONE;
			}
			after(s, q);
		}
	}
}

/* After every transport call on @q: keep its deadline in the heap, take
 * the completions. */
static void after(struct sim *s, struct sim_qp *q)
{
	uint64_t d = q->qp.deadline;

	if (d != UINT64_MAX && d < q->armed) {
		if (d < s->now)
			d = s->now;
		q->armed = d;
		sim__push(s, d, SIM_EV_QPTIMER, q, 0);
	}
	if (q->h->cq.head != q->h->cq.tail)
		drain(s, q->h);
}

void sim__qp_timer(struct sim *s, struct sim_qp *q)
{
	if (s->now != q->armed)
		return; /* superseded by an earlier deadline */
	q->armed = UINT64_MAX;
	if (q->qp.deadline <= s->now) {
		q->h->cur = q;
		ur_qp_timer(&q->qp, s->now);
		q->h->cur = NULL;
	}
	after(s, q);
}

void sim__host_txdone(struct sim *s, struct sim_host *h)
{
	struct sim_port *pt = &h->node->ports[0];

	while (h->bhead && pt->qbytes[0] < s->c.nic_queue) {
		struct sim_qp *q = h->bhead;

		h->bhead = q->bnext;
		if (!h->bhead)
			h->btail = NULL;
		q->blocked = false;
		h->cur = q;
		ur_qp_progress(&q->qp, s->now);
		h->cur = NULL;
		after(s, q);
	}
}

/* ---- receive ------------------------------------------------------------------ */
static void deliver(struct sim *s, struct sim_host *h, struct sim_pkt *p)
{
	struct ur_rxinfo ri = { .path = p->b.path, .icrc_checked = true };
	const uint8_t *data = p->data;
	struct ur_pkt pkt;
	struct ur_qp *qp;

	if (p->b.ext) {
		/* Whole again, in one scratch buffer (one packet at a time):
		 * headers and trailer; the payload bytes are whatever the
		 * buffer holds, as the region's contents do not matter (a
		 * copy from pktbuf.ext was ~5 % of a run). */
		struct ur_txq_parts x = ur_txq_parts(&p->b);

		memcpy(s->rxbuf, p->data, x.hdr);
		memcpy(s->rxbuf + x.hdr + x.payload, p->data + x.hdr,
		       x.pad + UR_ICRC_LEN);
		data = s->rxbuf;
	}
	if (!ur_dev_rx_classify(&h->dev, data, p->b.len, &ri, &pkt, &qp)) {
		struct sim_qp *q = qp->owner;
		uint8_t *at = ur_qp_rx_place(qp, data, p->b.len, &ri);

		/* A WRITE's middle packet "placed" as the engine does while it
		 * checks the ICRC (the responder then copies nothing); the
		 * bytes themselves do not matter here, so none are copied
		 * (the responder's copy was ~5 % of a run). */
		if (at)
			pkt.payload = at;
		h->cur = q;
		ur_qp_rx(qp, &pkt, &ri, s->now);
		h->cur = NULL;
		after(s, q);
	}
	sim__pkt_put(s, p);
}

void sim__host_rx(struct sim *s, struct sim_host *h, struct sim_pkt *p)
{
	deliver(s, h, p);
}

uint64_t sim_qp_tx_bytes(const struct sim *s, uint32_t src, uint32_t dst)
{
	struct sim_qp *q = sim__conn_find(s, src, dst);

	return q ? q->qp.cnt.tx_bytes : 0;
}

uint64_t sim_qp_srtt(const struct sim *s, uint32_t src, uint32_t dst)
{
	struct sim_qp *q = sim__conn_find(s, src, dst);

	return q ? ur_qp_cc_srtt(&q->qp) : 0;
}

uint64_t sim_qp_rate(const struct sim *s, uint32_t src, uint32_t dst)
{
	struct sim_qp *q = sim__conn_find(s, src, dst);

	return q ? ur_qp_cc_rate(&q->qp) : 0;
}

// SPDX-License-Identifier: MIT
/*
 * Shared receive queues (ring, limit event, sharing, LAST_WQE_REACHED) and
 * bad input at the device/QP boundary: unknown QPN, wrong P_Key, PSN far
 * outside the window, stray ACKs. Run one case with `test_srq NAME`.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tfix.h"

#define RUN(f) tnet_run(&(f)->net, UINT64_MAX)

/* Node 1 gets two RC QPs on one SRQ, node 0 one peer QP for each. */
struct sfix {
	struct tfix f;
	struct ur_srq srq;
	struct ur_qp *a2, *b2; /* second pair; f.a.qp/f.b.qp the first */
	struct ur_cq a2_scq;
};

static struct ur_qp *srq_qp(struct tnode *n, struct ur_cq *scq,
			    struct ur_cq *rcq, struct ur_srq *srq)
{
	struct ur_qp_caps caps = { .max_send_wr = 64, .max_recv_wr = 64,
				   .max_send_sge = 4, .max_recv_sge = 4 };
	struct ur_qp *qp = calloc(1, sizeof(*qp));
	uint32_t qpn = 0x800 + (uint32_t)n->id * 0x1000 + (uint32_t)n->n_qps;

	ASSERT(qp);
	ASSERT_EQ(ur_qp_create_ex(&n->dev, qp, UR_QPT_RC, qpn, 1, &caps, scq,
				  rcq, srq), 0);
	ASSERT_EQ(qp->caps.max_recv_wr, 0);
	n->qps[n->n_qps++] = qp;
	qp->owner = n;
	return qp;
}

static void sfix_init(struct sfix *s, uint32_t max_wr, uint32_t limit)
{
	struct tfix *f = &s->f;
	struct tnode *b = &f->net.nodes[1];

	memset(s, 0, sizeof(*s));
	memset(f, 0, sizeof(*f));
	tnet_init(&f->net, ur_test_seed, 2);
	f->ca = (struct tconn_attr){ .mtu = 1024, .timeout = 14,
				     .retry_cnt = 7, .rnr_retry = 7,
				     .min_rnr_timer = 1, .access = ACC_ALL,
				     .psn_a = 10, .psn_b = 20 };
	ASSERT_EQ(ur_srq_init(&s->srq, 1, max_wr, 2, limit), 0);
	for (int i = 0; i < 2; i++)
		tfix_side(f, i ? &f->b : &f->a, i, 256);
	ASSERT_EQ(ur_cq_init(&s->a2_scq, 256), 0);
	{
		struct ur_qp_caps caps = { .max_send_wr = 64, .max_recv_wr = 64,
					    .max_send_sge = 4, .max_recv_sge = 4 };

		f->a.qp = tnet_qp(f->a.node, UR_QPT_RC, 1, &caps, &f->a.scq,
				  &f->a.rcq);
		s->a2 = tnet_qp(f->a.node, UR_QPT_RC, 1, &caps, &s->a2_scq,
				&f->a.rcq);
	}
	f->b.qp = srq_qp(b, &f->b.scq, &f->b.rcq, &s->srq);
	s->b2 = srq_qp(b, &f->b.scq, &f->b.rcq, &s->srq);
	tnet_connect(f->a.qp, f->b.qp, &f->ca);
	tnet_connect(s->a2, s->b2, &f->ca);
}

static void sfix_fini(struct sfix *s)
{
	tfix_fini(&s->f);
	ur_cq_fini(&s->a2_scq);
	ur_srq_fini(&s->srq);
}

static int srq_post(struct sfix *s, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ur_sge sge = { (uintptr_t)(s->f.b.buf + off), len,
			      s->f.b.mr->lkey };
	struct ur_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };

	return ur_srq_post_recv(&s->srq, &wr);
}

static int send_on(struct sfix *s, struct ur_qp *qp, uint64_t wr_id,
		   uint32_t off, uint32_t len)
{
	struct ur_sge sge = { (uintptr_t)(s->f.a.buf + off), len,
			      s->f.a.mr->lkey };
	struct ur_send_wr wr = { .wr_id = wr_id, .opcode = UR_WR_SEND,
				 .flags = UR_SEND_SIGNALED, .sg_list = &sge,
				 .num_sge = 1 };

	return ur_qp_post_send(qp, &wr, s->f.net.now);
}

/* Two QPs take WQEs from one SRQ in order; limit fires once when the count
 * drops below it; the data of each message lands in the WQE it took. */
static void t_srq_shared(void)
{
	struct sfix s;
	struct tnode *b;
	struct ur_cqe e;
	struct ur_sge sge = { 0, 1, 0 };
	struct ur_recv_wr rw = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	int expect_qp[7];

	sfix_init(&s, 8, 0);
	b = &s.f.net.nodes[1];
	ASSERT_EQ(ur_qp_post_recv(s.f.b.qp, &rw), -EINVAL);
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(srq_post(&s, 100 + i, (uint32_t)i * 8192, 8192), 0);
	ASSERT_EQ(srq_post(&s, 999, 0, 16), -ENOMEM);
	ASSERT_EQ(ur_srq_count(&s.srq), 8);
	ASSERT_EQ(ur_srq_modify(&s.srq, 0, 9, UR_SRQ_LIMIT), -EINVAL);
	ASSERT_EQ(ur_srq_modify(&s.srq, 0, 3, UR_SRQ_LIMIT), 0);
	tfix_fill(s.f.a.buf, 64 * 1024, 7);

	/* Five messages, alternating QPs, 3000 bytes each (3 packets). */
	for (int i = 0; i < 5; i++) {
		struct ur_qp *qp = (i & 1) ? s.a2 : s.f.a.qp;

		expect_qp[i] = (i & 1) ? (int)s.b2->qpn : (int)s.f.b.qp->qpn;
		ASSERT_EQ(send_on(&s, qp, (uint64_t)i, (uint32_t)i * 3000, 3000), 0);
		RUN(&s.f);
	}
	ASSERT_EQ(ur_srq_count(&s.srq), 3);
	ASSERT_EQ(b->qp_events, 0);
	ASSERT_EQ(send_on(&s, s.f.a.qp, 5, 5 * 3000, 3000), 0);
	expect_qp[5] = (int)s.f.b.qp->qpn;
	RUN(&s.f);
	ASSERT_EQ(b->qp_events, 1);
	ASSERT_EQ(b->last_qp_event, UR_EVENT_SRQ_LIMIT_REACHED);
	ASSERT_EQ(s.srq.limit, 0); /* disarmed */
	ASSERT_EQ(send_on(&s, s.a2, 6, 6 * 3000, 3000), 0);
	expect_qp[6] = (int)s.b2->qpn;
	RUN(&s.f);
	ASSERT_EQ(b->qp_events, 1); /* once */
	for (int i = 0; i < 7; i++) {
		e = tfix_cqe(&s.f.b.rcq);
		ASSERT_EQ(e.status, UR_WC_SUCCESS);
		ASSERT_EQ(e.wr_id, 100 + (uint64_t)i);
		ASSERT_EQ(e.qp_num, (uint32_t)expect_qp[i]);
		ASSERT_EQ(e.byte_len, 3000);
		ASSERT_MEM_EQ(s.f.b.buf + i * 8192, s.f.a.buf + i * 3000, 3000);
	}
	tfix_no_cqe(&s.f.b.rcq);
	ASSERT_EQ(ur_srq_count(&s.srq), 1);
	sfix_fini(&s);
}

/* An empty SRQ makes the responder send RNR NAKs; posting recovers. */
static void t_srq_rnr(void)
{
	struct sfix s;

	sfix_init(&s, 4, 0);
	tfix_fill(s.f.a.buf, 5000, 3);
	ASSERT_EQ(send_on(&s, s.f.a.qp, 1, 0, 5000), 0);
	tnet_run_until(&s.f.net, s.f.net.now + 5000);
	ASSERT_GE(s.f.net.nodes[0].dev.cnt.rx_nak_rnr, 1);
	ASSERT_EQ(srq_post(&s, 42, 100, 6000), 0);
	RUN(&s.f);
	ASSERT_EQ(tfix_cqe(&s.f.a.scq).status, UR_WC_SUCCESS);
	{
		struct ur_cqe e = tfix_cqe(&s.f.b.rcq);

		ASSERT_EQ(e.wr_id, 42);
		ASSERT_EQ(e.byte_len, 5000);
	}
	ASSERT_MEM_EQ(s.f.b.buf + 100, s.f.a.buf, 5000);
	sfix_fini(&s);
}

/* Resize keeps queued WQEs in order; can't shrink below the count. */
static void t_srq_modify(void)
{
	struct sfix s;

	sfix_init(&s, 4, 0);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(srq_post(&s, (uint64_t)i, (uint32_t)i * 4096, 4096), 0);
	ASSERT_EQ(ur_srq_modify(&s.srq, 2, 0, UR_SRQ_MAX_WR), -EINVAL);
	ASSERT_EQ(ur_srq_modify(&s.srq, 0, 0, UR_SRQ_MAX_WR), -EINVAL);
	ASSERT_EQ(ur_srq_modify(&s.srq, 0, 0, 4), -EINVAL);
	/* Take two first so the ring wraps across the resize. */
	ASSERT_EQ(send_on(&s, s.f.a.qp, 1, 0, 10), 0);
	ASSERT_EQ(send_on(&s, s.f.a.qp, 2, 0, 10), 0);
	RUN(&s.f);
	ASSERT_EQ(srq_post(&s, 4, 0, 4096), 0);
	ASSERT_EQ(ur_srq_modify(&s.srq, 16, 8, UR_SRQ_MAX_WR | UR_SRQ_LIMIT), 0);
	ASSERT_EQ(s.srq.max_wr, 16);
	ASSERT_EQ(ur_srq_count(&s.srq), 3);
	for (int i = 5; i < 10; i++)
		ASSERT_EQ(srq_post(&s, (uint64_t)i, 0, 4096), 0);
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(send_on(&s, s.a2, 10 + (uint64_t)i, 0, 10), 0);
	RUN(&s.f);
	for (int i = 0; i < 10; i++)
		ASSERT_EQ(tfix_cqe(&s.f.b.rcq).wr_id, (uint64_t)i);
	ASSERT_EQ(s.f.net.nodes[1].last_qp_event, UR_EVENT_SRQ_LIMIT_REACHED);
	sfix_fini(&s);
}

/* A QP on an SRQ that enters ERR reports LAST_WQE_REACHED, flushes only
 * the WQE it had taken; the other QP keeps receiving from the SRQ. */
static void t_srq_last_wqe(void)
{
	struct sfix s;
	struct ur_qp_attr a = { .qp_state = UR_QPS_ERR };
	struct tnode *b;
	struct ur_cqe e;

	sfix_init(&s, 8, 0);
	b = &s.f.net.nodes[1];
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(srq_post(&s, (uint64_t)i, (uint32_t)i * 4096, 4096), 0);
	/* The first packet of a 3-packet SEND takes WQE 0 into the QP. */
	s.f.net.f.drop_opcode = UR_OP_RC_SEND_MIDDLE;
	s.f.net.f.drop_count = 1000;
	ASSERT_EQ(send_on(&s, s.f.a.qp, 1, 0, 3000), 0);
	tnet_run_until(&s.f.net, s.f.net.now + 100000);
	ASSERT_EQ(ur_srq_count(&s.srq), 3);
	ASSERT_EQ(ur_qp_modify(s.f.b.qp, &a, UR_QP_STATE, s.f.net.now), 0);
	ASSERT_EQ(b->qp_events, 1);
	ASSERT_EQ(b->last_qp_event, UR_EVENT_QP_LAST_WQE_REACHED);
	e = tfix_cqe(&s.f.b.rcq);
	ASSERT_EQ(e.wr_id, 0);
	ASSERT_EQ(e.status, UR_WC_WR_FLUSH_ERR);
	tfix_no_cqe(&s.f.b.rcq);
	ASSERT_EQ(ur_srq_count(&s.srq), 3);
	/* ERR -> ERR: no second event. */
	ASSERT_EQ(ur_qp_modify(s.f.b.qp, &a, UR_QP_STATE, s.f.net.now), 0);
	ASSERT_EQ(b->qp_events, 1);
	s.f.net.f.drop_count = 0;
	ASSERT_EQ(send_on(&s, s.a2, 2, 0, 100), 0);
	tnet_run(&s.f.net, s.f.net.now + 1000000000ull);
	e = tfix_cqe(&s.f.b.rcq);
	ASSERT_EQ(e.wr_id, 1);
	ASSERT_EQ(e.status, UR_WC_SUCCESS);
	ASSERT_EQ(e.qp_num, s.b2->qpn);
	sfix_fini(&s);
}

/* ---- bad input ------------------------------------------------------------ */
struct cap {
	uint8_t pkt[8][2048];
	uint32_t len[8];
	int n;
};

static void tap(struct tnet *net, const uint8_t *data, uint32_t len, void *arg)
{
	struct cap *c = arg;

	(void)net;
	if (c->n < 8 && len <= sizeof(c->pkt[0])) {
		memcpy(c->pkt[c->n], data, len);
		c->len[c->n++] = len;
	}
}

static int inject(struct tfix *f, int node, const uint8_t *p, uint32_t len)
{
	return tnet_inject(&f->net, node ^ 1, node, p, len);
}

/* A WRITE captured on the wire, then replayed with one field changed:
 * unknown QPN, wrong P_Key, PSN far ahead or far behind. None writes. */
static void t_bad_input(void)
{
	struct tfix f;
	struct cap c = { .n = 0 };
	struct ur_counters *cb;
	uint8_t p[2048];
	uint32_t len, psn;

	tfix_init(&f, UR_QPT_RC, NULL);
	cb = &f.net.nodes[1].dev.cnt;
	f.net.tap = tap;
	f.net.tap_arg = &c;
	tfix_fill(f.a.buf, 512, 1);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, 512,
			    (uintptr_t)f.b.buf, f.b.mr->rkey, UR_SEND_SIGNALED), 0);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_SUCCESS);
	f.net.tap = NULL;
	ASSERT_EQ(c.n, 2); /* the WRITE and its ACK */
	len = c.len[0];
	ASSERT_EQ(c.pkt[0][0], UR_OP_RC_RDMA_WRITE_ONLY);
	memset(f.b.buf, 0, 512);

	/* Unknown destination QP. */
	memcpy(p, c.pkt[0], len);
	p[5] ^= 0x55;
	ASSERT_EQ(inject(&f, 1, p, len), -ENOENT);
	ASSERT_EQ(cb->rx_drop_no_qp, 1);
	/* Wrong P_Key (not the default partition). */
	memcpy(p, c.pkt[0], len);
	ur_put16(p + 2, 0x8001);
	ASSERT_EQ(inject(&f, 1, p, len), -EACCES);
	ASSERT_EQ(cb->rx_drop_pkey, 1);
	/* Truncated: malformed. */
	ASSERT_EQ(inject(&f, 1, c.pkt[0], 20), -EBADMSG);
	ASSERT_EQ(cb->rx_drop_malformed, 1);
	/* PSN 2^22 ahead: not executed, one NAK sequence error. */
	memcpy(p, c.pkt[0], len);
	psn = (ur_get32(p + 8) + (1u << 22)) & UR_PSN_MASK;
	ur_put32(p + 8, (p[8] & 0x80u) << 24 | psn);
	ASSERT_EQ(inject(&f, 1, p, len), 0);
	ASSERT_EQ(cb->rx_out_of_seq, 1);
	ASSERT_EQ(cb->tx_nak_seq, 1);
	/* PSN 2^22 behind: a duplicate, re-ACKed but not executed. */
	psn = (ur_get32(c.pkt[0] + 8) - (1u << 22)) & UR_PSN_MASK;
	ur_put32(p + 8, (p[8] & 0x80u) << 24 | psn);
	ASSERT_EQ(inject(&f, 1, p, len), 0);
	ASSERT_EQ(cb->rx_duplicate, 1);
	for (int i = 0; i < 512; i++)
		ASSERT_EQ(f.b.buf[i], 0);
	/* An ACK for a PSN never sent reaches the requester: dropped. */
	memcpy(p, c.pkt[1], c.len[1]);
	psn = (ur_get32(p + 8) + 1000) & UR_PSN_MASK;
	ur_put32(p + 8, psn);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 2, 0, 512,
			    (uintptr_t)f.b.buf, f.b.mr->rkey, UR_SEND_SIGNALED), 0);
	ASSERT_EQ(inject(&f, 0, p, c.len[1]), 0);
	ASSERT_EQ(f.net.nodes[0].dev.cnt.rx_drop_psn, 1);
	tnet_run(&f.net, f.net.now + 1000000000ull);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_SUCCESS);
	ASSERT_MEM_EQ(f.b.buf, f.a.buf, 512);
	ASSERT_EQ(f.a.qp->state, UR_QPS_RTS);
	ASSERT_EQ(f.b.qp->state, UR_QPS_RTS);
	tfix_fini(&f);
}

static const struct ur_test_case tests[] = {
	{ "srq_shared", t_srq_shared },
	{ "srq_rnr", t_srq_rnr },
	{ "srq_modify", t_srq_modify },
	{ "srq_last_wqe", t_srq_last_wqe },
	{ "bad_input", t_bad_input },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

// SPDX-License-Identifier: MIT
/*
 * XRC (IBTA XRC annex): an INI QP on node 0 talks to a TGT QP on node 1,
 * whose requests land in the XRC SRQ their XRCETH names. On the wire: XRC
 * opcodes, the XRCETH on every request and on nothing else; reliability is
 * RC's (a lossy run); a bad SRQ number or an SRQ of another XRC domain gets
 * NAK remote access error; the SRQ's PD governs remote keys. Run one case
 * with `test_xrc NAME`.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tfix.h"

#define XRCD 7
#define SRQN 0x42     /* in XRCD */
#define SRQN_OTHER 0x43 /* in another XRC domain */
#define SRQN_PD2 0x44   /* in XRCD, PD 2 */

struct xfix {
	struct tfix f;           /* a: the INI side, b: the TGT side */
	struct ur_srq srq, other, srq_pd2;
	struct ur_mr *mr_pd2;    /* a region of b in another PD */
	/* the tap's view */
	uint64_t req, req_xrceth_ok, ans, ans_xrc, not_xrc;
	uint32_t srqn_seen;
};

static void tap(struct tnet *net, const uint8_t *d, uint32_t len, void *arg)
{
	struct xfix *x = arg;
	struct ur_pkt p;

	(void)net;
	if (ur_pkt_decode(d, len, &p) != UR_DEC_OK)
		return;
	if (!ur_op_is_xrc(p.h.opcode)) {
		x->not_xrc++;
		return;
	}
	if (p.mask & UR_OPF_REQ) {
		x->req++;
		/* reserved byte 0, then the SRQ number, right after the BTH */
		if ((p.mask & UR_HDR_XRCETH) && d[UR_BTH_LEN] == 0 &&
		    ur_get24(d + UR_BTH_LEN + 1) == p.xrc_srqn)
			x->req_xrceth_ok++;
		x->srqn_seen = p.xrc_srqn;
	} else {
		x->ans++;
		x->ans_xrc += !(p.mask & UR_HDR_XRCETH);
	}
}

static struct ur_qp *xrc_qp(struct tnode *n, enum ur_xrc_role role,
			    struct ur_cq *scq)
{
	struct ur_qp_caps caps = { .max_send_wr = 64, .max_send_sge = 4,
				   .max_recv_sge = 4, .max_inline_data = 64 };
	struct ur_qp *qp = calloc(1, sizeof(*qp));
	uint32_t qpn = 0x900 + (uint32_t)n->id * 0x1000 + (uint32_t)n->n_qps;

	ASSERT(qp);
	ASSERT_EQ(ur_qp_create_xrc(&n->dev, qp, role, qpn,
				   role == UR_XRC_INI ? 1 : 0, &caps, scq, XRCD),
		  0);
	ASSERT_EQ(qp->type, UR_QPT_RC);
	ASSERT_EQ(qp->xrc, role);
	n->qps[n->n_qps++] = qp;
	qp->owner = n;
	return qp;
}

static void xfix_init(struct xfix *x)
{
	struct tfix *f = &x->f;

	memset(x, 0, sizeof(*x));
	tnet_init(&f->net, ur_test_seed, 2);
	f->ca = (struct tconn_attr){ .mtu = 1024, .timeout = 12,
				     .retry_cnt = 7, .rnr_retry = 7,
				     .min_rnr_timer = 1, .access = ACC_ALL,
				     .psn_a = 0xfffffe, .psn_b = 77 };
	for (int i = 0; i < 2; i++)
		tfix_side(f, i ? &f->b : &f->a, i, 256);
	x->mr_pd2 = tnet_mr(f->b.node, f->b.buf + TBUF / 2, TBUF / 2, ACC_ALL,
			    2);
	/* The XRC SRQs of node 1: receives complete on b.rcq. */
	ASSERT_EQ(ur_srq_init(&x->srq, 1, 64, 4, 0), 0);
	x->srq.xrcd = XRCD;
	x->srq.srqn = SRQN;
	x->srq.cq = &f->b.rcq;
	ASSERT_EQ(ur_srq_init(&x->other, 1, 64, 4, 0), 0);
	x->other.xrcd = XRCD + 1;
	x->other.srqn = SRQN_OTHER;
	x->other.cq = &f->b.rcq;
	/* Same domain, another PD. */
	ASSERT_EQ(ur_srq_init(&x->srq_pd2, 2, 64, 4, 0), 0);
	x->srq_pd2.xrcd = XRCD;
	x->srq_pd2.srqn = SRQN_PD2;
	x->srq_pd2.cq = &f->b.rcq;
	f->b.node->srqs[0] = &x->srq;
	f->b.node->srqs[1] = &x->other;
	f->b.node->srqs[2] = &x->srq_pd2;
	f->a.qp = xrc_qp(f->a.node, UR_XRC_INI, &f->a.scq);
	f->b.qp = xrc_qp(f->b.node, UR_XRC_TGT, NULL);
	tnet_connect(f->a.qp, f->b.qp, &f->ca);
	f->net.tap = tap;
	f->net.tap_arg = x;
}

static void xfix_fini(struct xfix *x)
{
	tfix_fini(&x->f);
	ur_srq_fini(&x->srq);
	ur_srq_fini(&x->other);
	ur_srq_fini(&x->srq_pd2);
}

static int xsend(struct xfix *x, uint32_t opcode, uint64_t wr_id,
		 uint32_t off, uint32_t len, uint64_t raddr, uint32_t rkey,
		 uint32_t srqn)
{
	struct tside *s = &x->f.a;
	struct ur_sge sge = { (uintptr_t)(s->buf + off), len, s->mr->lkey };
	struct ur_send_wr wr = {
		.wr_id = wr_id, .opcode = opcode, .flags = UR_SEND_SIGNALED,
		.remote_addr = raddr, .rkey = rkey, .compare_add = 5,
		.swap = 9, .imm_data = 0x01020304,
		.sg_list = &sge, .num_sge = 1, .xrc_srqn = srqn,
	};

	return ur_qp_post_send(s->qp, &wr, x->f.net.now);
}

static void srq_recv(struct xfix *x, struct ur_srq *srq, uint64_t wr_id,
		     uint32_t off, uint32_t len)
{
	struct tside *b = &x->f.b;
	struct ur_sge sge = { (uintptr_t)(b->buf + off), len, b->mr->lkey };
	struct ur_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };

	ASSERT_EQ(ur_srq_post_recv(srq, &wr), 0);
}

/* A three-packet SEND and a SEND with immediate land in the SRQ the
 * XRCETH names; every request carries it, no answer does. */
static void t_send(void)
{
	struct xfix x;
	struct ur_cqe e;

	xfix_init(&x);
	tfix_fill(x.f.a.buf, 3000, 1);
	srq_recv(&x, &x.srq, 11, 0, 4096);
	srq_recv(&x, &x.srq, 12, 8192, 64);
	ASSERT_EQ(xsend(&x, UR_WR_SEND, 1, 0, 3000, 0, 0, SRQN), 0);
	e = tfix_run_ok(&x.f, &x.f.a.scq);
	ASSERT_EQ(e.wr_id, 1);
	e = tfix_cqe(&x.f.b.rcq);
	ASSERT_EQ(e.status, UR_WC_SUCCESS);
	ASSERT_EQ(e.wr_id, 11);
	ASSERT_EQ(e.opcode, UR_WC_RECV);
	ASSERT_EQ(e.byte_len, 3000);
	ASSERT_EQ(e.qp_num, x.f.b.qp->qpn);
	ASSERT_MEM_EQ(x.f.b.buf, x.f.a.buf, 3000);
	ASSERT_EQ(xsend(&x, UR_WR_SEND_WITH_IMM, 2, 100, 60, 0, 0, SRQN), 0);
	tfix_run_ok(&x.f, &x.f.a.scq);
	e = tfix_cqe(&x.f.b.rcq);
	ASSERT_EQ(e.wr_id, 12);
	ASSERT_EQ(e.wc_flags & UR_WC_WITH_IMM, UR_WC_WITH_IMM);
	ASSERT_EQ(e.imm_data, 0x01020304);
	ASSERT_MEM_EQ(x.f.b.buf + 8192, x.f.a.buf + 100, 60);
	ASSERT_EQ(ur_srq_count(&x.srq), 0);
	ASSERT_EQ(x.req, 4);
	ASSERT_EQ(x.req_xrceth_ok, 4);
	ASSERT_EQ(x.srqn_seen, SRQN);
	ASSERT_GE(x.ans, 2);
	ASSERT_EQ(x.ans_xrc, x.ans);
	ASSERT_EQ(x.not_xrc, 0);
	xfix_fini(&x);
}

/* WRITE (with immediate: a WQE of the SRQ), READ and both atomics. */
static void t_rdma(void)
{
	struct xfix x;
	struct tside *a = &x.f.a, *b = &x.f.b;
	uint64_t v = 5;
	struct ur_cqe e;

	xfix_init(&x);
	tfix_fill(a->buf, 5000, 2);
	ASSERT_EQ(xsend(&x, UR_WR_RDMA_WRITE, 1, 0, 5000, (uintptr_t)b->buf,
			b->mr->rkey, SRQN), 0);
	tfix_run_ok(&x.f, &a->scq);
	ASSERT_MEM_EQ(b->buf, a->buf, 5000);
	tfix_no_cqe(&b->rcq);
	srq_recv(&x, &x.srq, 21, 0, 0);
	ASSERT_EQ(xsend(&x, UR_WR_RDMA_WRITE_WITH_IMM, 2, 0, 100,
			(uintptr_t)b->buf + 10000, b->mr->rkey, SRQN), 0);
	tfix_run_ok(&x.f, &a->scq);
	e = tfix_cqe(&b->rcq);
	ASSERT_EQ(e.opcode, UR_WC_RECV_RDMA_WITH_IMM);
	ASSERT_EQ(e.wr_id, 21);
	tfix_fill(b->buf + 20000, 2500, 3);
	ASSERT_EQ(xsend(&x, UR_WR_RDMA_READ, 3, 30000, 2500,
			(uintptr_t)b->buf + 20000, b->mr->rkey, SRQN), 0);
	e = tfix_run_ok(&x.f, &a->scq);
	ASSERT_EQ(e.opcode, UR_WC_RDMA_READ);
	ASSERT_MEM_EQ(a->buf + 30000, b->buf + 20000, 2500);
	memcpy(b->buf + 40000, &v, 8);
	ASSERT_EQ(xsend(&x, UR_WR_ATOMIC_FETCH_AND_ADD, 4, 40000, 8,
			(uintptr_t)b->buf + 40000, b->mr->rkey, SRQN), 0);
	tfix_run_ok(&x.f, &a->scq);
	memcpy(&v, a->buf + 40000, 8);
	ASSERT_EQ(v, 5);              /* the original */
	memcpy(&v, b->buf + 40000, 8);
	ASSERT_EQ(v, 10);             /* 5 + 5 */
	ASSERT_EQ(xsend(&x, UR_WR_ATOMIC_CMP_AND_SWP, 5, 40008, 8,
			(uintptr_t)b->buf + 40000, b->mr->rkey, SRQN), 0);
	tfix_run_ok(&x.f, &a->scq);
	memcpy(&v, b->buf + 40000, 8);
	ASSERT_EQ(v, 10);             /* compare 5 failed: unchanged */
	ASSERT_EQ(x.req, x.req_xrceth_ok);
	ASSERT_EQ(x.not_xrc, 0);
	/* The XRC group has no ATOMIC WRITE or FLUSH; a TGT has no queues. */
	ASSERT_EQ(xsend(&x, UR_WR_ATOMIC_WRITE, 6, 0, 8, (uintptr_t)b->buf,
			b->mr->rkey, SRQN), -EINVAL);
	{
		struct ur_sge sge = { (uintptr_t)b->buf, 8, b->mr->lkey };
		struct ur_recv_wr rw = { .wr_id = 1, .sg_list = &sge,
					 .num_sge = 1 };
		struct ur_send_wr sw = { .opcode = UR_WR_SEND, .sg_list = &sge,
					 .num_sge = 1 };

		ASSERT_EQ(ur_qp_post_recv(b->qp, &rw), -EINVAL);
		ASSERT_EQ(ur_qp_post_send(b->qp, &sw, x.f.net.now), -EINVAL);
		ASSERT_EQ(ur_qp_post_recv(a->qp, &rw), -EINVAL);
	}
	xfix_fini(&x);
}

/* An XRCETH naming no SRQ, or an SRQ of another XRC domain, or a key of
 * a PD that is not the SRQ's: NAK remote access error, the TGT in error. */
static void bad_case(int which)
{
	struct xfix x;
	struct tside *a = &x.f.a, *b = &x.f.b;
	struct ur_cqe e;
	uint64_t nak0;

	xfix_init(&x);
	srq_recv(&x, &x.other, 31, 0, 64);
	nak0 = b->node->dev.cnt.tx_nak_other;
	if (which == 0)
		ASSERT_EQ(xsend(&x, UR_WR_SEND, 1, 0, 64, 0, 0, 0x99), 0);
	else if (which == 1)
		ASSERT_EQ(xsend(&x, UR_WR_SEND, 1, 0, 64, 0, 0, SRQN_OTHER), 0);
	else
		ASSERT_EQ(xsend(&x, UR_WR_RDMA_WRITE, 1, 0, 64,
				(uintptr_t)b->buf + TBUF / 2, x.mr_pd2->rkey,
				SRQN), 0);
	tnet_run(&x.f.net, x.f.net.now + 1000000000ull);
	e = tfix_cqe(&a->scq);
	ASSERT_EQ(e.status, UR_WC_REM_ACCESS_ERR);
	ASSERT_EQ(b->node->dev.cnt.tx_nak_other, nak0 + 1);
	ASSERT_EQ(b->qp->state, UR_QPS_ERR);
	ASSERT_EQ(b->node->last_qp_event, UR_EVENT_QP_ACCESS_ERR);
	tfix_no_cqe(&b->rcq); /* the other domain's WQE stays */
	ASSERT_EQ(ur_srq_count(&x.other), 1);
	xfix_fini(&x);
}

static void t_bad_srqn(void) { bad_case(0); }
static void t_other_xrcd(void) { bad_case(1); }
static void t_srq_pd(void) { bad_case(2); }

/* Loss, duplicates and reordering: RC's retransmission carries XRC. */
static void t_lossy(void)
{
	struct xfix x;
	struct tside *a = &x.f.a, *b = &x.f.b;
	int n = 0;

	xfix_init(&x);
	x.f.net.f = (struct tfault){ .loss = 0.1, .dup = 0.05, .reorder = 0.1,
				     .delay_ns = 5000, .jitter_ns = 20000 };
	tfix_fill(a->buf, 40 * 2048, 4);
	for (int i = 0; i < 40; i++) {
		srq_recv(&x, &x.srq, 100 + (uint64_t)i, (uint32_t)i * 2048,
			 2048);
		ASSERT_EQ(xsend(&x, UR_WR_SEND, (uint64_t)i,
				(uint32_t)i * 2048, 2000, 0, 0, SRQN), 0);
	}
	tnet_run(&x.f.net, x.f.net.now + 10000000000ull);
	for (int i = 0; i < 40; i++) {
		struct ur_cqe e = tfix_cqe(&a->scq);

		ASSERT_EQ(e.status, UR_WC_SUCCESS);
		e = tfix_cqe(&b->rcq);
		ASSERT_EQ(e.status, UR_WC_SUCCESS);
		ASSERT_EQ(e.wr_id, 100 + (uint64_t)i);
		n++;
	}
	ASSERT_EQ(n, 40);
	ASSERT_MEM_EQ(b->buf, a->buf, 2000);
	ASSERT_MEM_EQ(b->buf + 39 * 2048, a->buf + 39 * 2048, 2000);
	ASSERT_GT(x.f.net.dropped, 0);
	ASSERT_GT(a->node->dev.cnt.tx_retransmit, 0);
	ASSERT_EQ(b->qp->state, UR_QPS_RTS);
	xfix_fini(&x);
}

/* A READ whose response is lost is asked for again after a SEND to an
 * SRQ of another PD went through: the duplicate is served with the key
 * checked in the READ's PD, not the latest request's. */
static void t_dup_read_pd(void)
{
	struct xfix x;
	struct tside *a = &x.f.a, *b = &x.f.b;
	struct ur_sge sge;
	struct ur_recv_wr rw = { .wr_id = 55, .sg_list = &sge, .num_sge = 1 };
	struct ur_cqe e;

	xfix_init(&x);
	sge = (struct ur_sge){ (uintptr_t)(b->buf + TBUF / 2), 64,
			       x.mr_pd2->lkey };
	ASSERT_EQ(ur_srq_post_recv(&x.srq_pd2, &rw), 0);
	tfix_fill(b->buf, 3000, 5);
	x.f.net.f.drop_opcode = UR_OP_XRC_RDMA_READ_RESPONSE_FIRST;
	x.f.net.f.drop_count = 1;
	ASSERT_EQ(xsend(&x, UR_WR_RDMA_READ, 1, 0, 3000, (uintptr_t)b->buf,
			b->mr->rkey, SRQN), 0);
	ASSERT_EQ(xsend(&x, UR_WR_SEND, 2, 8000, 64, 0, 0, SRQN_PD2), 0);
	tnet_run(&x.f.net, x.f.net.now + 10000000000ull);
	e = tfix_cqe(&a->scq);
	ASSERT_EQ(e.status, UR_WC_SUCCESS);
	ASSERT_EQ(e.wr_id, 1);
	ASSERT_MEM_EQ(a->buf, b->buf, 3000);
	e = tfix_cqe(&a->scq);
	ASSERT_EQ(e.status, UR_WC_SUCCESS);
	ASSERT_EQ(tfix_cqe(&b->rcq).wr_id, 55);
	ASSERT_EQ(x.f.net.dropped, 1);
	ASSERT_EQ(b->qp->state, UR_QPS_RTS);
	xfix_fini(&x);
}

/* An RC opcode to an XRC QP, or an XRC request to an INI: dropped. */
static void t_wrong_opcode(void)
{
	struct xfix x;
	uint8_t p[64];
	struct ur_pkt pk = { 0 };
	int n;

	xfix_init(&x);
	pk.h.opcode = UR_OP_RC_SEND_ONLY;
	pk.h.pkey = 0xffff;
	pk.h.dqpn = x.f.b.qp->qpn;
	pk.h.psn = 77;
	n = ur_pkt_encode(p, sizeof(p), &pk, "hi", 2);
	ASSERT_GT(n, 0);
	ASSERT_EQ(tnet_inject(&x.f.net, 0, 1, p, (uint32_t)n), -EPROTO);
	pk.h.opcode = UR_OP_XRC_SEND_ONLY;
	pk.h.dqpn = x.f.a.qp->qpn;
	pk.xrc_srqn = SRQN;
	n = ur_pkt_encode(p, sizeof(p), &pk, "hi", 2);
	ASSERT_EQ(tnet_inject(&x.f.net, 1, 0, p, (uint32_t)n), -EPROTO);
	ASSERT_EQ(x.f.b.node->dev.cnt.rx_drop_opcode, 1);
	ASSERT_EQ(x.f.a.node->dev.cnt.rx_drop_opcode, 1);
	ASSERT_EQ(x.f.b.qp->state, UR_QPS_RTS);
	xfix_fini(&x);
}

static const struct ur_test_case tests[] = {
	{ "send", t_send },
	{ "rdma", t_rdma },
	{ "bad_srqn", t_bad_srqn },
	{ "other_xrcd", t_other_xrcd },
	{ "srq_pd", t_srq_pd },
	{ "lossy", t_lossy },
	{ "dup_read_pd", t_dup_read_pd },
	{ "wrong_opcode", t_wrong_opcode },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

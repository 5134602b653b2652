// SPDX-License-Identifier: MIT
/*
 * Two RC QPs in one process, connected to each other over UDP on
 * UROCE_IP=127.0.0.6: SEND, SEND_WITH_IMM, RDMA WRITE (+IMM), RDMA READ,
 * compare-and-swap and fetch-and-add, through ibv_post_send and through the
 * ibv_qp_ex builder, checked byte for byte; completion events through a
 * channel; error completions for a bad lkey and a bad rkey.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "rc_connect.h"
#include "ur_test.h"

#define BUF 65536

struct side {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_comp_channel *ch;
static struct side a, b;

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static void wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int n = urt_poll_wait(cq, wc, 10);

	ASSERT_GE(n, 0);
	if (n == 0)
		UR_FAIL("no completion within 10 s");
}

static void expect_ok(struct ibv_cq *cq, enum ibv_wc_opcode op, uint64_t wr_id)
{
	struct ibv_wc wc;

	wait_wc(cq, &wc);
	if (wc.status != IBV_WC_SUCCESS)
		UR_FAIL("wr_id %llu: %s", (unsigned long long)wc.wr_id,
			ibv_wc_status_str(wc.status));
	ASSERT_EQ(wc.opcode, op);
	ASSERT_EQ_U64(wc.wr_id, wr_id);
}

static void make_side(struct side *s, bool ex)
{
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64,
			 .max_send_sge = 4, .max_recv_sge = 4,
			 .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};

	s->cq = ibv_create_cq(ctx, 256, s, ch, 0);
	ASSERT(s->cq);
	ia.send_cq = ia.recv_cq = s->cq;
	if (ex) {
		ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				    IBV_QP_EX_WITH_RDMA_WRITE |
				    IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				    IBV_QP_EX_WITH_RDMA_READ |
				    IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	}
	s->qp = ibv_create_qp_ex(ctx, &ia);
	ASSERT(s->qp);
	s->qpx = ex ? ibv_qp_to_qp_ex(s->qp) : NULL;
	s->buf = aligned_alloc(4096, BUF);
	ASSERT(s->buf);
	memset(s->buf, 0, BUF);
	s->mr = ibv_reg_mr(pd, s->buf, BUF,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	ASSERT(s->mr);
}

static void connect_qp(struct side *s, uint32_t dqpn)
{
	struct urt_rc_conn c = {
		.dqpn = dqpn, .psn = 0x111, .rd_atomic = 4,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
	};

	ASSERT_EQ(urt_rc_connect(ctx, s->qp, &c), 0);
	ASSERT_EQ(s->qp->state, IBV_QPS_RTS);
}

static void setup(bool ex)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	ASSERT(list && list[0]);
	ctx = ibv_open_device(list[0]);
	ASSERT(ctx);
	ibv_free_device_list(list);
	pd = ibv_alloc_pd(ctx);
	ch = ibv_create_comp_channel(ctx);
	ASSERT(pd && ch);
	make_side(&a, ex);
	make_side(&b, ex);
	connect_qp(&a, b.qp->qp_num);
	connect_qp(&b, a.qp->qp_num);
}

static void teardown_side(struct side *s)
{
	ASSERT_EQ(ibv_destroy_qp(s->qp), 0);
	ASSERT_EQ(ibv_destroy_cq(s->cq), 0);
	ASSERT_EQ(ibv_dereg_mr(s->mr), 0);
	free(s->buf);
}

static void teardown(void)
{
	teardown_side(&a);
	teardown_side(&b);
	ASSERT_EQ(ibv_destroy_comp_channel(ch), 0);
	ASSERT_EQ(ibv_dealloc_pd(pd), 0);
	ASSERT_EQ(ibv_close_device(ctx), 0);
}

static void post_recv(struct side *s, uint64_t id, size_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + off, len, s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	ASSERT_EQ(ibv_post_recv(s->qp, &wr, &bad), 0);
}

static void post(struct side *s, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	ASSERT_EQ(ibv_post_send(s->qp, wr, &bad), 0);
}

/* ---- classic ibv_post_send ------------------------------------------------ */

static void t_post_send(void)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	uint64_t *remote;

	setup(false);

	/* SEND of 3000 bytes (3 packets at MTU 1024), with an event. */
	fill(a.buf, 3000, 1);
	post_recv(&b, 100, 8192, 4096);
	ASSERT_EQ(ibv_req_notify_cq(b.cq, 0), 0);
	sge = (struct ibv_sge){ (uintptr_t)a.buf, 3000, a.mr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	post(&a, &wr);
	{
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };

		ASSERT_EQ(poll(&p, 1, 10000), 1);
		ASSERT_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
		ASSERT(ev_cq == b.cq && ev_ctx == &b);
		ibv_ack_cq_events(ev_cq, 1);
	}
	expect_ok(a.cq, IBV_WC_SEND, 1);
	wait_wc(b.cq, &wc);
	ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
	ASSERT_EQ(wc.opcode, IBV_WC_RECV);
	ASSERT_EQ(wc.byte_len, 3000);
	ASSERT_EQ(wc.qp_num, b.qp->qp_num);
	ASSERT_MEM_EQ(b.buf + 8192, a.buf, 3000);

	/* SEND_WITH_IMM, inline. */
	post_recv(&b, 101, 8192, 4096);
	memcpy(a.buf + 100, "inline!", 7);
	sge = (struct ibv_sge){ (uintptr_t)a.buf + 100, 7, 0 };
	wr.wr_id = 2;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htobe32(0xdeadbeef);
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	post(&a, &wr);
	expect_ok(a.cq, IBV_WC_SEND, 2);
	wait_wc(b.cq, &wc);
	ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
	ASSERT(wc.wc_flags & IBV_WC_WITH_IMM);
	ASSERT_EQ(be32toh(wc.imm_data), 0xdeadbeef);
	ASSERT_MEM_EQ(b.buf + 8192, "inline!", 7);

	/* RDMA WRITE 20000 bytes. */
	fill(a.buf, 20000, 2);
	sge = (struct ibv_sge){ (uintptr_t)a.buf, 20000, a.mr->lkey };
	wr.wr_id = 3;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)b.buf + 16384;
	wr.wr.rdma.rkey = b.mr->rkey;
	post(&a, &wr);
	expect_ok(a.cq, IBV_WC_RDMA_WRITE, 3);
	ASSERT_MEM_EQ(b.buf + 16384, a.buf, 20000);

	/* RDMA READ it back into another place. */
	sge = (struct ibv_sge){ (uintptr_t)a.buf + 32768, 20000, a.mr->lkey };
	wr.wr_id = 4;
	wr.opcode = IBV_WR_RDMA_READ;
	post(&a, &wr);
	expect_ok(a.cq, IBV_WC_RDMA_READ, 4);
	ASSERT_MEM_EQ(a.buf + 32768, a.buf, 20000);

	/* Atomics on b.buf[0..7]. */
	remote = (uint64_t *)b.buf;
	*remote = 40;
	sge = (struct ibv_sge){ (uintptr_t)a.buf + 60000, 8, a.mr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr_id = 5;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = (uintptr_t)b.buf;
	wr.wr.atomic.rkey = b.mr->rkey;
	wr.wr.atomic.compare_add = 2;
	post(&a, &wr);
	expect_ok(a.cq, IBV_WC_FETCH_ADD, 5);
	ASSERT_EQ(*(uint64_t *)(a.buf + 60000), 40);
	ASSERT_EQ(*remote, 42);
	wr.wr_id = 6;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 42;
	wr.wr.atomic.swap = 0x1122334455667788ull;
	post(&a, &wr);
	expect_ok(a.cq, IBV_WC_COMP_SWAP, 6);
	ASSERT_EQ(*(uint64_t *)(a.buf + 60000), 42);
	ASSERT_EQ_U64(*remote, 0x1122334455667788ull);

	/* Bad rkey: remote access error. */
	sge = (struct ibv_sge){ (uintptr_t)a.buf, 64, a.mr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr_id = 7;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)b.buf;
	wr.wr.rdma.rkey = b.mr->rkey ^ 0x5a5a0000;
	post(&a, &wr);
	wait_wc(a.cq, &wc);
	ASSERT_EQ(wc.wr_id, 7);
	ASSERT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);

	teardown();
}

static void t_bad_lkey(void)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_wc wc;
	int ret;

	setup(false);
	sge = (struct ibv_sge){ (uintptr_t)a.buf, 64, a.mr->lkey ^ 0x00ff0000 };
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr_id = 9;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)b.buf;
	wr.wr.rdma.rkey = b.mr->rkey;
	/* Either refused at post or completed with a protection error. */
	ret = ibv_post_send(a.qp, &wr, &bad);
	if (ret) {
		ASSERT_EQ(ret, EINVAL);
	} else {
		wait_wc(a.cq, &wc);
		ASSERT_EQ(wc.wr_id, 9);
		ASSERT(wc.status == IBV_WC_LOC_PROT_ERR ||
		       wc.status == IBV_WC_LOC_ACCESS_ERR);
	}
	teardown();
}

/* ---- ibv_qp_ex builder ---------------------------------------------------- */

static void t_qp_ex(void)
{
	struct ibv_qp_ex *x;
	struct ibv_wc wc;
	struct ibv_sge sl[2];
	uint64_t *remote;

	setup(true);
	x = a.qpx;
	ASSERT(x);

	/* Two WRs in one batch: SEND from two SGEs + RDMA WRITE with IMM. */
	fill(a.buf, 5000, 3);
	post_recv(&b, 200, 8192, 8192);
	post_recv(&b, 201, 0, 0);
	ibv_wr_start(x);
	x->wr_id = 10;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	sl[0] = (struct ibv_sge){ (uintptr_t)a.buf, 1000, a.mr->lkey };
	sl[1] = (struct ibv_sge){ (uintptr_t)a.buf + 1000, 4000, a.mr->lkey };
	ibv_wr_set_sge_list(x, 2, sl);
	x->wr_id = 11;
	ibv_wr_rdma_write_imm(x, b.mr->rkey, (uintptr_t)b.buf + 40000,
			      htobe32(77));
	ibv_wr_set_sge(x, a.mr->lkey, (uintptr_t)a.buf, 5000);
	ASSERT_EQ(ibv_wr_complete(x), 0);
	expect_ok(a.cq, IBV_WC_SEND, 10);
	expect_ok(a.cq, IBV_WC_RDMA_WRITE, 11);
	wait_wc(b.cq, &wc);
	ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
	ASSERT_EQ(wc.wr_id, 200);
	ASSERT_EQ(wc.byte_len, 5000);
	ASSERT_MEM_EQ(b.buf + 8192, a.buf, 5000);
	wait_wc(b.cq, &wc);
	ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
	ASSERT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	ASSERT_EQ(be32toh(wc.imm_data), 77);
	ASSERT_MEM_EQ(b.buf + 40000, a.buf, 5000);

	/* Inline SEND_WITH_IMM. */
	post_recv(&b, 202, 8192, 64);
	ibv_wr_start(x);
	x->wr_id = 12;
	ibv_wr_send_imm(x, htobe32(5));
	{
		struct ibv_data_buf db[2] = { { "abc", 3 }, { "defg", 4 } };

		ibv_wr_set_inline_data_list(x, 2, db);
	}
	ASSERT_EQ(ibv_wr_complete(x), 0);
	expect_ok(a.cq, IBV_WC_SEND, 12);
	wait_wc(b.cq, &wc);
	ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
	ASSERT_EQ(wc.byte_len, 7);
	ASSERT_MEM_EQ(b.buf + 8192, "abcdefg", 7);

	/* READ. */
	fill(b.buf + 20000, 3000, 4);
	ibv_wr_start(x);
	x->wr_id = 13;
	ibv_wr_rdma_read(x, b.mr->rkey, (uintptr_t)b.buf + 20000);
	ibv_wr_set_sge(x, a.mr->lkey, (uintptr_t)a.buf + 30000, 3000);
	ASSERT_EQ(ibv_wr_complete(x), 0);
	expect_ok(a.cq, IBV_WC_RDMA_READ, 13);
	ASSERT_MEM_EQ(a.buf + 30000, b.buf + 20000, 3000);

	/* Atomics. */
	remote = (uint64_t *)(b.buf + 64);
	*remote = 1000;
	ibv_wr_start(x);
	x->wr_id = 14;
	ibv_wr_atomic_fetch_add(x, b.mr->rkey, (uintptr_t)remote, 24);
	ibv_wr_set_sge(x, a.mr->lkey, (uintptr_t)a.buf + 50000, 8);
	x->wr_id = 15;
	ibv_wr_atomic_cmp_swp(x, b.mr->rkey, (uintptr_t)remote, 1024, 7);
	ibv_wr_set_sge(x, a.mr->lkey, (uintptr_t)a.buf + 50008, 8);
	ASSERT_EQ(ibv_wr_complete(x), 0);
	expect_ok(a.cq, IBV_WC_FETCH_ADD, 14);
	expect_ok(a.cq, IBV_WC_COMP_SWAP, 15);
	ASSERT_EQ(*(uint64_t *)(a.buf + 50000), 1000);
	ASSERT_EQ(*(uint64_t *)(a.buf + 50008), 1024);
	ASSERT_EQ(*remote, 7);

	teardown();
}

static void t_cq_ex_poll(void)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 16,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
	};
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_cq_ex *cx;
	struct ibv_qp *qp;
	struct ibv_qp_attr qa;
	struct ibv_recv_wr rwr = { .wr_id = 33 }, *bad;
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int ret;

	setup(false);
	cx = ibv_create_cq_ex(ctx, &ca);
	ASSERT(cx);
	ia.send_cq = ia.recv_cq = ibv_cq_ex_to_cq(cx);
	qp = ibv_create_qp(pd, &ia);
	ASSERT(qp);
	/* A receive flushed by moving the QP to ERR shows up through the
	 * extended poll API. */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	ASSERT_EQ(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	ASSERT_EQ(ibv_post_recv(qp, &rwr, &bad), 0);
	qa.qp_state = IBV_QPS_ERR;
	ASSERT_EQ(ibv_modify_qp(qp, &qa, IBV_QP_STATE), 0);
	for (int i = 0; (ret = ibv_start_poll(cx, &pa)) == ENOENT && i < 1000000; i++)
		;
	ASSERT_EQ(ret, 0);
	ASSERT_EQ(cx->wr_id, 33);
	ASSERT_EQ(cx->status, IBV_WC_WR_FLUSH_ERR);
	ASSERT_EQ(ibv_wc_read_qp_num(cx), qp->qp_num);
	ASSERT_EQ(ibv_next_poll(cx), ENOENT);
	ibv_end_poll(cx);
	ASSERT_EQ(ibv_destroy_qp(qp), 0);
	ASSERT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cx)), 0);
	teardown();
}

static const struct ur_test_case tests[] = {
	{ "post_send", t_post_send },
	{ "bad_lkey", t_bad_lkey },
	{ "qp_ex", t_qp_ex },
	{ "cq_ex_poll", t_cq_ex_poll },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	setenv("UROCE_IP", "127.0.0.6", 1);
	return ur_test_main(argc, argv, tests);
}

// SPDX-License-Identifier: MIT
/*
 * Transport unit tests: every opcode byte-exact, the error paths with their
 * exact completion statuses, the QP state machine, and duplicates. Run one
 * case with `test_transport NAME`; UR_SEED repeats a run.
 */
#include <errno.h>
#include <string.h>

#include "tfix.h"

#define RUN(f) tnet_run(&(f)->net, UINT64_MAX)

/* SEND of 0..many MTUs into a buffer bigger than needed. */
static void t_send_sizes(void)
{
	static const uint32_t sizes[] = { 0, 1, 3, 1023, 1024, 1025, 2048,
					  4097, 10 * 1024 + 5, 65536 };
	struct tfix f;

	tfix_init(&f, UR_QPT_RC, NULL);
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t n = sizes[i];
		struct ur_cqe e;

		tfix_fill(f.a.buf, n, i);
		memset(f.b.buf, 0xee, n + 16);
		ASSERT_EQ(tfix_recv(&f.b, 1000 + i, 0, n + 16), 0);
		ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, i, 0, n, 0, 0,
				    UR_SEND_SIGNALED), 0);
		RUN(&f);
		e = tfix_cqe(&f.a.scq);
		ASSERT_EQ(e.status, UR_WC_SUCCESS);
		ASSERT_EQ(e.opcode, UR_WC_SEND);
		ASSERT_EQ(e.wr_id, i);
		e = tfix_cqe(&f.b.rcq);
		ASSERT_EQ(e.status, UR_WC_SUCCESS);
		ASSERT_EQ(e.opcode, UR_WC_RECV);
		ASSERT_EQ(e.wr_id, 1000 + i);
		ASSERT_EQ(e.byte_len, n);
		ASSERT_EQ(e.qp_num, f.b.qp->qpn);
		ASSERT_EQ(e.wc_flags, 0);
		ASSERT_MEM_EQ(f.b.buf, f.a.buf, n);
		ASSERT_EQ(f.b.buf[n], 0xee);
		tfix_no_cqe(&f.a.scq);
		tfix_no_cqe(&f.b.rcq);
	}
	ASSERT_EQ(f.net.nodes[0].dev.cnt.tx_retransmit, 0);
	tfix_fini(&f);
}

/* Multi-SGE on both sides, with IMM and SE, and unsignaled sends. */
static void t_send_multi_sge(void)
{
	struct tfix f;
	struct ur_sge ss[3], rs[4];
	struct ur_send_wr wr = {0};
	struct ur_recv_wr rw = {0};
	uint8_t expect[5000];
	struct ur_cqe e;

	tfix_init(&f, UR_QPT_RC, NULL);
	tfix_fill(f.a.buf, 8192, 7);
	ss[0] = (struct ur_sge){ (uintptr_t)f.a.buf + 10, 1000, f.a.mr->lkey };
	ss[1] = (struct ur_sge){ (uintptr_t)f.a.buf + 3000, 1500, f.a.mr->lkey };
	ss[2] = (struct ur_sge){ (uintptr_t)f.a.buf + 6000, 500, f.a.mr->lkey };
	memcpy(expect, f.a.buf + 10, 1000);
	memcpy(expect + 1000, f.a.buf + 3000, 1500);
	memcpy(expect + 2500, f.a.buf + 6000, 500);
	rs[0] = (struct ur_sge){ (uintptr_t)f.b.buf + 100, 7, f.b.mr->lkey };
	rs[1] = (struct ur_sge){ (uintptr_t)f.b.buf + 200, 0, f.b.mr->lkey };
	rs[2] = (struct ur_sge){ (uintptr_t)f.b.buf + 1000, 2000, f.b.mr->lkey };
	rs[3] = (struct ur_sge){ (uintptr_t)f.b.buf + 5000, 1000, f.b.mr->lkey };
	rw.wr_id = 77;
	rw.sg_list = rs;
	rw.num_sge = 4;
	ASSERT_EQ(ur_qp_post_recv(f.b.qp, &rw), 0);
	wr.wr_id = 5;
	wr.opcode = UR_WR_SEND_WITH_IMM;
	wr.flags = UR_SEND_SIGNALED | UR_SEND_SOLICITED;
	wr.imm_data = 0x12345678;
	wr.sg_list = ss;
	wr.num_sge = 3;
	ur_cq_arm(&f.b.rcq, true);
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), 0);
	RUN(&f);
	e = tfix_cqe(&f.b.rcq);
	ASSERT_EQ(e.status, UR_WC_SUCCESS);
	ASSERT_EQ(e.byte_len, 3000);
	ASSERT_EQ(e.wc_flags, UR_WC_WITH_IMM);
	ASSERT_EQ(e.imm_data, 0x12345678);
	ASSERT_EQ(f.net.nodes[1].cq_events, 1);
	ASSERT_MEM_EQ(f.b.buf + 100, expect, 7);
	ASSERT_MEM_EQ(f.b.buf + 1000, expect + 7, 2000);
	ASSERT_MEM_EQ(f.b.buf + 5000, expect + 2007, 993);
	e = tfix_cqe(&f.a.scq);
	ASSERT_EQ(e.wr_id, 5);
	/* Unsignaled: no CQE, but the next signaled one comes. */
	ASSERT_EQ(tfix_recv(&f.b, 1, 0, 100), 0);
	ASSERT_EQ(tfix_recv(&f.b, 2, 0, 100), 0);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, 8, 0, 10, 0, 0, 0), 0);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, 9, 0, 10, 0, 0, UR_SEND_SIGNALED), 0);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.a.scq).wr_id, 9);
	tfix_no_cqe(&f.a.scq);
	ASSERT_EQ(tfix_cqe(&f.b.rcq).wr_id, 1);
	ASSERT_EQ(tfix_cqe(&f.b.rcq).wr_id, 2);
	/* Not solicited: the solicited-only arm does not fire. */
	ASSERT_EQ(f.net.nodes[1].cq_events, 1);
	tfix_fini(&f);
}

static void t_send_inline(void)
{
	struct tfix f;
	uint8_t a[100], b2[50];
	struct ur_sge ss[2] = { { (uintptr_t)a, 100, 0 }, { (uintptr_t)b2, 50, 0 } };
	struct ur_send_wr wr = { .wr_id = 1, .opcode = UR_WR_SEND,
				 .flags = UR_SEND_INLINE | UR_SEND_SIGNALED,
				 .sg_list = ss, .num_sge = 2 };

	tfix_init(&f, UR_QPT_RC, NULL);
	tfix_fill(a, 100, 1);
	tfix_fill(b2, 50, 2);
	ASSERT_EQ(tfix_recv(&f.b, 1, 0, 4096), 0);
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), 0);
	memset(a, 0, sizeof(a)); /* the caller's buffer is free on return */
	tfix_fill(a, 100, 1);
	memset(b2, 0, 50);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.b.rcq).byte_len, 150);
	ASSERT_MEM_EQ(f.b.buf, a, 100);
	tfix_fill(b2, 50, 2);
	ASSERT_MEM_EQ(f.b.buf + 100, b2, 50);
	/* Too much inline data. */
	ss[0].length = 300;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), -EINVAL);
	tfix_fini(&f);
}

static void t_write(void)
{
	static const uint32_t sizes[] = { 0, 1, 1024, 1500, 3 * 1024, 100000 };
	struct tfix f;

	tfix_init(&f, UR_QPT_RC, NULL);
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t n = sizes[i];
		struct ur_cqe e;

		tfix_fill(f.a.buf, n, 100 + i);
		memset(f.b.buf, 0, n + 64);
		ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, i, 0, n,
				    (uintptr_t)f.b.buf + 17, f.b.mr->rkey,
				    UR_SEND_SIGNALED), 0);
		RUN(&f);
		e = tfix_cqe(&f.a.scq);
		ASSERT_EQ(e.status, UR_WC_SUCCESS);
		ASSERT_EQ(e.opcode, UR_WC_RDMA_WRITE);
		ASSERT_MEM_EQ(f.b.buf + 17, f.a.buf, n);
		ASSERT_EQ(f.b.buf[17 + n], 0);
		ASSERT_EQ(f.b.buf[16], 0);
		tfix_no_cqe(&f.b.rcq);
	}
	/* WRITE_WITH_IMM consumes a receive; byte_len is the DMA length. */
	ASSERT_EQ(tfix_recv(&f.b, 42, 0, 0), 0);
	{
		struct ur_sge sge = { (uintptr_t)f.a.buf, 3000, f.a.mr->lkey };
		struct ur_send_wr wr = {
			.wr_id = 9, .opcode = UR_WR_RDMA_WRITE_WITH_IMM,
			.flags = UR_SEND_SIGNALED, .imm_data = 0xabcdef01,
			.remote_addr = (uintptr_t)f.b.buf + 4096,
			.rkey = f.b.mr->rkey, .sg_list = &sge, .num_sge = 1,
		};
		struct ur_cqe e;

		tfix_fill(f.a.buf, 3000, 9);
		ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), 0);
		RUN(&f);
		e = tfix_cqe(&f.b.rcq);
		ASSERT_EQ(e.status, UR_WC_SUCCESS);
		ASSERT_EQ(e.opcode, UR_WC_RECV_RDMA_WITH_IMM);
		ASSERT_EQ(e.wr_id, 42);
		ASSERT_EQ(e.byte_len, 3000);
		ASSERT_EQ(e.imm_data, 0xabcdef01);
		ASSERT_EQ(e.wc_flags, UR_WC_WITH_IMM);
		ASSERT_MEM_EQ(f.b.buf + 4096, f.a.buf, 3000);
		ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_SUCCESS);
	}
	tfix_fini(&f);
}

static void t_read(void)
{
	static const uint32_t sizes[] = { 0, 8, 1024, 1025, 5000, 200000 };
	struct tfix f;

	tfix_init(&f, UR_QPT_RC, NULL);
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t n = sizes[i];
		struct ur_cqe e;

		tfix_fill(f.b.buf + 300, n, 200 + i);
		memset(f.a.buf, 0, n + 64);
		ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_READ, i, 1, n,
				    (uintptr_t)f.b.buf + 300, f.b.mr->rkey,
				    UR_SEND_SIGNALED), 0);
		RUN(&f);
		e = tfix_cqe(&f.a.scq);
		ASSERT_EQ(e.status, UR_WC_SUCCESS);
		ASSERT_EQ(e.opcode, UR_WC_RDMA_READ);
		ASSERT_EQ(e.byte_len, n);
		ASSERT_MEM_EQ(f.a.buf + 1, f.b.buf + 300, n);
		ASSERT_EQ(f.a.buf[1 + n], 0);
	}
	tfix_fini(&f);
}

static void t_atomics(void)
{
	struct tfix f;
	uint64_t *t, *res;
	struct ur_sge sge;
	struct ur_send_wr wr = {0};

	tfix_init(&f, UR_QPT_RC, NULL);
	t = (uint64_t *)(void *)(f.b.buf + 64);
	res = (uint64_t *)(void *)(f.a.buf + 8);
	*t = 100;
	sge = (struct ur_sge){ (uintptr_t)res, 8, f.a.mr->lkey };
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.flags = UR_SEND_SIGNALED;
	wr.remote_addr = (uintptr_t)t;
	wr.rkey = f.b.mr->rkey;

	wr.opcode = UR_WR_ATOMIC_FETCH_AND_ADD;
	wr.compare_add = 5;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), 0);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.a.scq).opcode, UR_WC_FETCH_ADD);
	ASSERT_EQ(*res, 100);
	ASSERT_EQ(*t, 105);

	wr.opcode = UR_WR_ATOMIC_CMP_AND_SWP;
	wr.compare_add = 104; /* no match */
	wr.swap = 7;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), 0);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.a.scq).opcode, UR_WC_COMP_SWAP);
	ASSERT_EQ(*res, 105);
	ASSERT_EQ(*t, 105);
	wr.compare_add = 105;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), 0);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_SUCCESS);
	ASSERT_EQ(*res, 105);
	ASSERT_EQ(*t, 7);

	/* ATOMIC_WRITE: 8 bytes from the SGE. */
	*res = 0x1122334455667788ull;
	wr.opcode = UR_WR_ATOMIC_WRITE;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), 0);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.a.scq).opcode, UR_WC_ATOMIC_WRITE);
	ASSERT_EQ_U64(*t, 0x1122334455667788ull);
	sge.length = 4;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), -EINVAL);

	/* Misaligned target: NAK invalid request. */
	sge.length = 8;
	wr.opcode = UR_WR_ATOMIC_FETCH_AND_ADD;
	wr.remote_addr = (uintptr_t)t + 4;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), 0);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_REM_INV_REQ_ERR);
	ASSERT_EQ_U64(*t, 0x1122334455667788ull);
	ASSERT_EQ(f.a.qp->state, UR_QPS_ERR);
	ASSERT_EQ(f.b.qp->state, UR_QPS_ERR);
	tfix_fini(&f);
}

static void t_send_with_inv(void)
{
	struct tfix f;
	struct ur_sge sge;
	struct ur_send_wr wr = {0};
	struct ur_cqe e;

	tfix_init(&f, UR_QPT_RC, NULL);
	sge = (struct ur_sge){ (uintptr_t)f.a.buf, 2000, f.a.mr->lkey };
	tfix_fill(f.a.buf, 2000, 3);
	wr.opcode = UR_WR_SEND_WITH_INV;
	wr.imm_data = 0xdead01; /* the rkey to invalidate, host order */
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.flags = UR_SEND_SIGNALED;
	ASSERT_EQ(tfix_recv(&f.b, 3, 0, 4096), 0);
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), 0);
	RUN(&f);
	e = tfix_cqe(&f.b.rcq);
	ASSERT_EQ(e.status, UR_WC_SUCCESS);
	ASSERT_EQ(e.wc_flags, UR_WC_WITH_INV);
	ASSERT_EQ(e.imm_data, 0xdead01);
	ASSERT_EQ(e.byte_len, 2000);
	ASSERT_MEM_EQ(f.b.buf, f.a.buf, 2000);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_SUCCESS);
	tfix_fini(&f);
}

static const struct ur_test_case tests[] = {
	{ "send_sizes", t_send_sizes },
	{ "send_multi_sge", t_send_multi_sge },
	{ "send_inline", t_send_inline },
	{ "write", t_write },
	{ "read", t_read },
	{ "atomics", t_atomics },
	{ "send_with_inv", t_send_with_inv },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

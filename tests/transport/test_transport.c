// SPDX-License-Identifier: MIT
/*
 * Transport unit tests: every opcode byte-exact, the error paths with their
 * exact completion statuses, the QP state machine, and duplicates. Run one
 * case with `test_transport NAME`; UR_SEED repeats a run.
 */
#include <errno.h>
#include <string.h>

#include "tfix.h"
#include "ur_cc.h"

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

/*
 * Receive placement (ur_qp_rx_place): the middle packets of a WRITE land
 * before they are delivered, also under loss, duplication and reordering,
 * and when some fail their check after landing. The data must come out
 * whole, and the bytes after the WRITE untouched.
 */
static void t_write_placed(void)
{
	struct tfix f;
	const uint32_t n = 300000; /* 293 packets of 1 KiB */

	tfix_init(&f, UR_QPT_RC, NULL);
	f.net.place = true;
	for (int round = 0; round < 4; round++) {
		uint64_t placed = f.net.placed;

		if (round == 1) {
			f.net.f.loss = 0.02;
			f.net.f.dup = 0.02;
			f.net.f.reorder = 0.05;
			f.net.f.jitter_ns = 20000;
		}
		if (round >= 2)
			f.net.place_bad = 0.05;
		tfix_fill(f.a.buf, n, 300 + (uint32_t)round);
		memset(f.b.buf, 0, n + 64);
		ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, n,
				    (uintptr_t)f.b.buf + 8, f.b.mr->rkey,
				    UR_SEND_SIGNALED), 0);
		ASSERT_EQ(tfix_run_ok(&f, &f.a.scq).opcode, UR_WC_RDMA_WRITE);
		ASSERT_MEM_EQ(f.b.buf + 8, f.a.buf, n);
		ASSERT_EQ(f.b.buf[7], 0);
		ASSERT_EQ(f.b.buf[8 + n], 0);
		/* Without faults every middle packet is placed (all but
		 * FIRST and LAST). */
		if (round == 0)
			ASSERT_EQ(f.net.placed - placed, (n + 1023) / 1024 - 2);
		else
			ASSERT_GT(f.net.placed - placed, 0);
	}
	ASSERT_GT(f.net.placed_bad, 0);
	tfix_fini(&f);
}

/*
 * What ur_qp_rx_place accepts: only the next in-sequence middle packet of
 * the WRITE in progress, only inside what the WRITE has left but its last
 * bytes, and not once a region was deregistered meanwhile.
 */
static void t_place_bounds(void)
{
	static uint8_t pkt[UR_BTH_LEN + 4096 + UR_ICRC_LEN];
	const uint32_t n = 2500; /* FIRST 1024, MIDDLE 1024, LAST 452 */
	const size_t mid = UR_BTH_LEN + 1024 + UR_ICRC_LEN;
	struct ur_rxinfo ri, ri_b, ri_x;
	struct ur_mr *other;
	struct tfix f;

	tnet_rxinfo(0, 1, &ri);   /* from a, b's peer */
	tnet_rxinfo(1, 0, &ri_b); /* from b */
	tnet_rxinfo(8, 1, &ri_x); /* from 10.0.0.9: nobody's peer */
	tfix_init(&f, UR_QPT_RC, NULL);
	other = tnet_mr(f.b.node, f.b.buf + TBUF / 2, 4096, ACC_ALL, 1);
	f.net.f.delay_ns = 1000;
	f.net.f.drop_opcode = UR_OP_RC_RDMA_WRITE_MIDDLE;
	f.net.f.drop_count = 1;
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, n,
			    (uintptr_t)f.b.buf + 64, f.b.mr->rkey,
			    UR_SEND_SIGNALED), 0);
	/* FIRST (PSN 100) lands, MIDDLE is lost, LAST is out of sequence:
	 * b waits for PSN 101, 1476 bytes left; its NAK is still on the way. */
	tnet_run(&f.net, f.net.now + 1500);
	ur_put16(pkt + 2, 0xffff);
	ur_put24(pkt + 5, f.b.qp->qpn);
	pkt[0] = UR_OP_RC_RDMA_WRITE_MIDDLE;
	ur_put24(pkt + 9, 101);
	ASSERT(ur_qp_rx_place(f.b.qp, pkt, mid, &ri) == f.b.buf + 64 + 1024);
	/* The same packet from another address: nothing is placed. */
	ASSERT(!ur_qp_rx_place(f.b.qp, pkt, mid, &ri_x));
	ASSERT(!ur_qp_rx_place(f.b.qp, pkt, mid, NULL));
	ASSERT(!ur_qp_rx_place(f.b.qp, pkt, UR_BTH_LEN + 1476 + UR_ICRC_LEN, &ri));
	ASSERT(!ur_qp_rx_place(f.b.qp, pkt, sizeof(pkt), &ri));
	ASSERT(!ur_qp_rx_place(f.b.qp, pkt, UR_BTH_LEN + UR_ICRC_LEN - 1, &ri));
	pkt[1] = 1 << 4; /* a pad */
	ASSERT(!ur_qp_rx_place(f.b.qp, pkt, mid, &ri));
	pkt[1] = 0;
	ur_put24(pkt + 9, 102);
	ASSERT(!ur_qp_rx_place(f.b.qp, pkt, mid, &ri));
	ur_put24(pkt + 9, 100);
	ASSERT(!ur_qp_rx_place(f.b.qp, pkt, mid, &ri));
	ur_put24(pkt + 9, 101);
	pkt[0] = UR_OP_RC_RDMA_WRITE_LAST;
	ASSERT(!ur_qp_rx_place(f.b.qp, pkt, mid, &ri));
	pkt[0] = UR_OP_RC_RDMA_WRITE_MIDDLE;
	ASSERT(!ur_qp_rx_place(f.a.qp, pkt, mid, &ri_b)); /* a has no WRITE coming */
	ASSERT(ur_qp_rx_place(f.b.qp, pkt, mid, &ri));
	tnet_mr_del(f.b.node, other);
	ASSERT(!ur_qp_rx_place(f.b.qp, pkt, mid, &ri));
	/* The WRITE then completes; nothing is in progress any more. */
	ASSERT_EQ(tfix_run_ok(&f, &f.a.scq).opcode, UR_WC_RDMA_WRITE);
	ASSERT_MEM_EQ(f.b.buf + 64, f.a.buf, n);
	ur_put24(pkt + 9, 103);
	ASSERT(!ur_qp_rx_place(f.b.qp, pkt, mid, &ri));
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


/* Remote access errors: the requester sees REM_ACCESS_ERR, memory stays
 * untouched, the rest of the send queue is flushed, both QPs go to ERR. */
static void access_case(int which)
{
	struct tfix f;
	struct ur_mr *ro, *other_pd;
	uint64_t raddr;
	uint32_t rkey, op = UR_WR_RDMA_WRITE, len = 100;
	struct ur_cqe e;

	tfix_init(&f, UR_QPT_RC, NULL);
	ro = tnet_mr(f.b.node, f.b.buf + 4096, 4096,
		     UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_READ, 1);
	other_pd = tnet_mr(f.b.node, f.b.buf + 8192, 4096, ACC_ALL, 2);
	raddr = (uintptr_t)f.b.buf;
	rkey = f.b.mr->rkey;
	switch (which) {
	case 0: rkey = 0xbad; break;                              /* bad rkey */
	case 1: rkey = other_pd->rkey; raddr = other_pd->iova; break; /* PD */
	case 2: rkey = ro->rkey; raddr = ro->iova; break;         /* access */
	case 3: raddr = (uintptr_t)f.b.buf + TBUF - 50; break;    /* bounds */
	case 4: rkey = ro->rkey; raddr = ro->iova; op = UR_WR_ATOMIC_FETCH_AND_ADD;
		len = 8; break;                                  /* atomic */
	case 5: raddr = (uintptr_t)f.b.buf + TBUF - 50; op = UR_WR_RDMA_READ;
		break;                                           /* read bounds */
	case 6: rkey = f.b.mr->lkey; break;                       /* lkey as rkey */
	}
	tfix_fill(f.a.buf, 4096, 1);
	ASSERT_EQ(tfix_send(&f.a, op, 1, 0, len, raddr, rkey, UR_SEND_SIGNALED), 0);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, 2, 0, 10, 0, 0, 0), 0);
	ASSERT_EQ(tfix_recv(&f.b, 50, 0, 100), 0);
	RUN(&f);
	e = tfix_cqe(&f.a.scq);
	ASSERT_EQ(e.wr_id, 1);
	ASSERT_EQ(e.status, UR_WC_REM_ACCESS_ERR);
	e = tfix_cqe(&f.a.scq);
	ASSERT_EQ(e.wr_id, 2); /* unsignaled, but flushed in error */
	ASSERT_EQ(e.status, UR_WC_WR_FLUSH_ERR);
	tfix_no_cqe(&f.a.scq);
	e = tfix_cqe(&f.b.rcq);
	ASSERT_EQ(e.status, UR_WC_WR_FLUSH_ERR);
	for (uint32_t i = 0; i < TBUF; i++)
		if (f.b.buf[i])
			UR_FAIL("case %d: target byte %u written", which, i);
	ASSERT_EQ(f.a.qp->state, UR_QPS_ERR);
	ASSERT_EQ(f.b.qp->state, UR_QPS_ERR);
	ASSERT_EQ(f.net.nodes[1].last_qp_event, UR_EVENT_QP_ACCESS_ERR);
	/* Posting to a QP in ERR completes at once with a flush. */
	ASSERT_EQ(tfix_recv(&f.b, 51, 0, 100), 0);
	ASSERT_EQ(tfix_cqe(&f.b.rcq).status, UR_WC_WR_FLUSH_ERR);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, 3, 0, 10, 0, 0, 0), 0);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_WR_FLUSH_ERR);
	tfix_fini(&f);
}

static void t_err_rem_access(void)
{
	for (int i = 0; i < 7; i++)
		access_case(i);
}

/* QP without REMOTE_WRITE in its access flags. */
static void t_err_qp_access(void)
{
	struct tfix f;
	struct tconn_attr ca = { .mtu = 1024, .timeout = 14, .retry_cnt = 7,
				 .rnr_retry = 7,
				 .access = UR_ACCESS_REMOTE_READ };

	tfix_init(&f, UR_QPT_RC, &ca);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, 10,
			    (uintptr_t)f.b.buf, f.b.mr->rkey, UR_SEND_SIGNALED), 0);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_REM_ACCESS_ERR);
	ASSERT_EQ(f.b.buf[0], 0);
	tfix_fini(&f);
}

/* Receive buffer too small: LOC_LEN_ERR at the responder, REM_INV_REQ_ERR
 * at the requester. */
static void t_err_recv_too_small(void)
{
	struct tfix f;
	struct ur_cqe e;

	tfix_init(&f, UR_QPT_RC, NULL);
	ASSERT_EQ(tfix_recv(&f.b, 1, 0, 1500), 0);
	ASSERT_EQ(tfix_recv(&f.b, 2, 0, 1500), 0);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, 9, 0, 3000, 0, 0, UR_SEND_SIGNALED), 0);
	RUN(&f);
	e = tfix_cqe(&f.b.rcq);
	ASSERT_EQ(e.wr_id, 1);
	ASSERT_EQ(e.status, UR_WC_LOC_LEN_ERR);
	e = tfix_cqe(&f.b.rcq);
	ASSERT_EQ(e.wr_id, 2);
	ASSERT_EQ(e.status, UR_WC_WR_FLUSH_ERR);
	e = tfix_cqe(&f.a.scq);
	ASSERT_EQ(e.status, UR_WC_REM_INV_REQ_ERR);
	ASSERT_EQ(f.net.nodes[1].last_qp_event, UR_EVENT_QP_REQ_ERR);
	tfix_fini(&f);
}

/* A bad local key: LOC_PROT_ERR, nothing on the wire. */
static void t_err_lkey(void)
{
	struct tfix f;
	struct ur_sge sge;
	struct ur_send_wr wr = {0};
	struct ur_mr *ro;

	tfix_init(&f, UR_QPT_RC, NULL);
	sge = (struct ur_sge){ (uintptr_t)f.a.buf, 10, 0x999 };
	wr.opcode = UR_WR_SEND;
	wr.flags = UR_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), 0);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_LOC_PROT_ERR);
	ASSERT_EQ(f.net.nodes[0].dev.cnt.tx_packets, 0);
	tfix_fini(&f);

	/* READ into a region without LOCAL_WRITE. */
	tfix_init(&f, UR_QPT_RC, NULL);
	ro = tnet_mr(f.a.node, f.a.buf, 4096, UR_ACCESS_REMOTE_READ, 1);
	sge = (struct ur_sge){ (uintptr_t)f.a.buf, 10, ro->lkey };
	wr.opcode = UR_WR_RDMA_READ;
	wr.remote_addr = (uintptr_t)f.b.buf;
	wr.rkey = f.b.mr->rkey;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), 0);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_LOC_PROT_ERR);
	tfix_fini(&f);
}

/* No receive posted: RNR NAKs, retried rnr_retry times, then
 * RNR_RETRY_EXC_ERR; with a receive posted in time, it succeeds. */
static void t_err_rnr(void)
{
	struct tfix f;
	struct tconn_attr ca = { .mtu = 1024, .timeout = 14, .retry_cnt = 7,
				 .rnr_retry = 3, .min_rnr_timer = 4, /* 0.04 ms */
				 .access = ACC_ALL };
	uint64_t t0;

	tfix_init(&f, UR_QPT_RC, &ca);
	t0 = f.net.now;
	ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, 1, 0, 3000, 0, 0, UR_SEND_SIGNALED), 0);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, 2, 0, 10, 0, 0, UR_SEND_SIGNALED), 0);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_RNR_RETRY_EXC_ERR);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_WR_FLUSH_ERR);
	ASSERT_EQ(f.net.nodes[0].dev.cnt.rx_nak_rnr, 4);
	ASSERT_GE(f.net.now - t0, 3 * 40000);
	ASSERT_EQ(f.a.qp->state, UR_QPS_ERR);
	ASSERT_EQ(f.b.qp->state, UR_QPS_RTS);
	tfix_fini(&f);

	/* Recovery: post the receive during the RNR wait. */
	tfix_init(&f, UR_QPT_RC, &ca);
	tfix_fill(f.a.buf, 3000, 4);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, 1, 0, 3000, 0, 0, UR_SEND_SIGNALED), 0);
	tnet_run_until(&f.net, f.net.now + 20000);
	ASSERT_EQ(f.net.nodes[0].dev.cnt.rx_nak_rnr, 1);
	ASSERT_EQ(tfix_recv(&f.b, 7, 0, 4000), 0);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_SUCCESS);
	ASSERT_EQ(tfix_cqe(&f.b.rcq).byte_len, 3000);
	ASSERT_MEM_EQ(f.b.buf, f.a.buf, 3000);
	tfix_fini(&f);
}

/* Dead peer: RETRY_EXC_ERR after retry_cnt retransmissions, within
 * (retry_cnt + 1) x 4 x timeout on the virtual clock; the timer doubles
 * per timeout in a row up to 4x: 1 + 2 + 4 + 4 timeouts' time. */
static void t_err_dead_peer(void)
{
	struct tfix f;
	struct tconn_attr ca = { .mtu = 1024, .timeout = 10, .retry_cnt = 3,
				 .rnr_retry = 7, .access = ACC_ALL };
	uint64_t t0, to = ur_timeout_ns(10), dt;

	ASSERT_EQ(to, 4096ull * 1024);
	ASSERT_EQ(ur_timeout_ns(0), 0);
	tfix_init(&f, UR_QPT_RC, &ca);
	f.net.f.loss = 1.0;
	t0 = f.net.now;
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, 5000,
			    (uintptr_t)f.b.buf, f.b.mr->rkey, 0), 0);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, 2, 0, 10, 0, 0, UR_SEND_SIGNALED), 0);
	RUN(&f);
	dt = f.net.now - t0;
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_RETRY_EXC_ERR);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_WR_FLUSH_ERR);
	ASSERT_GE(dt, (1 + 2 + 4 + 4) * to);
	ASSERT_LE(dt, (3 + 1) * 4 * to);
	ASSERT_EQ(f.net.nodes[0].dev.cnt.tx_timeouts, 4);
	ASSERT_EQ(f.a.qp->deadline, UINT64_MAX);
	tfix_fini(&f);
}

/* Modify: required/optional masks per transition, wrong states. */
static void t_qp_modify(void)
{
	struct tfix f;
	struct ur_qp *qp;
	struct ur_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4,
				    .max_send_sge = 1, .max_recv_sge = 1 };
	struct ur_qp_attr a = {0}, q;
	uint32_t init = UR_QP_STATE | UR_QP_PKEY_INDEX | UR_QP_PORT |
			UR_QP_ACCESS_FLAGS;
	uint32_t rtr = UR_QP_STATE | UR_QP_AV | UR_QP_PATH_MTU |
		       UR_QP_DEST_QPN | UR_QP_RQ_PSN |
		       UR_QP_MAX_DEST_RD_ATOMIC | UR_QP_MIN_RNR_TIMER;
	uint32_t rts = UR_QP_STATE | UR_QP_SQ_PSN | UR_QP_TIMEOUT |
		       UR_QP_RETRY_CNT | UR_QP_RNR_RETRY |
		       UR_QP_MAX_QP_RD_ATOMIC;

	tfix_init(&f, UR_QPT_UD, NULL);
	qp = tnet_qp(f.a.node, UR_QPT_RC, 1, &caps, &f.a.scq, &f.a.rcq);
	a.port_num = 1;
	a.path_mtu = 1024;
	/* RESET -> RTR skips INIT. */
	a.qp_state = UR_QPS_RTR;
	ASSERT_EQ(ur_qp_modify(qp, &a, rtr, 0), -EINVAL);
	/* Missing ACCESS_FLAGS; then QKEY is not allowed for RC. */
	a.qp_state = UR_QPS_INIT;
	ASSERT_EQ(ur_qp_modify(qp, &a, init & ~UR_QP_ACCESS_FLAGS, 0), -EINVAL);
	ASSERT_EQ(ur_qp_modify(qp, &a, init | UR_QP_QKEY, 0), -EINVAL);
	ASSERT_EQ(ur_qp_post_recv(qp, &(struct ur_recv_wr){ 0 }), -EINVAL);
	ASSERT_EQ(ur_qp_modify(qp, &a, init, 0), 0);
	ASSERT_EQ(qp->state, UR_QPS_INIT);
	/* Receives may be posted from INIT, sends not before RTS. */
	ASSERT_EQ(ur_qp_post_recv(qp, &(struct ur_recv_wr){ 0 }), 0);
	ASSERT_EQ(tfix_send(&(struct tside){ .node = f.a.node, .qp = qp,
					     .buf = f.a.buf, .mr = f.a.mr },
			    UR_WR_SEND, 0, 0, 1, 0, 0, 0), -EINVAL);
	/* INIT -> RTR needs MIN_RNR_TIMER for RC. */
	a.qp_state = UR_QPS_RTR;
	ASSERT_EQ(ur_qp_modify(qp, &a, rtr & ~UR_QP_MIN_RNR_TIMER, 0), -EINVAL);
	a.path_mtu = 1000;
	ASSERT_EQ(ur_qp_modify(qp, &a, rtr, 0), -EINVAL);
	a.path_mtu = 2048;
	ASSERT_EQ(ur_qp_modify(qp, &a, rtr | UR_QP_SQ_PSN, 0), -EINVAL);
	ASSERT_EQ(ur_qp_modify(qp, &a, rtr, 0), 0);
	/* RTR -> RTS needs all five. */
	a.qp_state = UR_QPS_RTS;
	ASSERT_EQ(ur_qp_modify(qp, &a, rts & ~UR_QP_RETRY_CNT, 0), -EINVAL);
	a.retry_cnt = 8;
	ASSERT_EQ(ur_qp_modify(qp, &a, rts, 0), -EINVAL);
	a.retry_cnt = 7;
	a.sq_psn = 0x123456;
	ASSERT_EQ(ur_qp_modify(qp, &a, rts, 0), 0);
	ur_qp_query(qp, &q);
	ASSERT_EQ(q.qp_state, UR_QPS_RTS);
	ASSERT_EQ(q.path_mtu, 2048);
	ASSERT_EQ(q.sq_psn, 0x123456);
	/* RTS -> RTS may change MIN_RNR_TIMER, not PATH_MTU. */
	ASSERT_EQ(ur_qp_modify(qp, &a, UR_QP_MIN_RNR_TIMER, 0), 0);
	ASSERT_EQ(ur_qp_modify(qp, &a, UR_QP_PATH_MTU, 0), -EINVAL);
	/* CUR_STATE must match. */
	a.cur_qp_state = UR_QPS_RTR;
	ASSERT_EQ(ur_qp_modify(qp, &a, UR_QP_STATE | UR_QP_CUR_STATE, 0), -EINVAL);
	/* RTS -> SQD -> RTS. */
	a.qp_state = UR_QPS_SQD;
	ASSERT_EQ(ur_qp_modify(qp, &a, UR_QP_STATE | UR_QP_EN_SQD_ASYNC_NOTIFY, 0), 0);
	ASSERT_EQ(f.net.nodes[0].last_qp_event, UR_EVENT_SQ_DRAINED);
	ASSERT_EQ(qp->state, UR_QPS_SQD);
	a.qp_state = UR_QPS_RTS;
	ASSERT_EQ(ur_qp_modify(qp, &a, UR_QP_STATE, 0), 0);
	/* Any -> ERR flushes, ERR -> RTS is not allowed, ERR -> RESET is. */
	a.qp_state = UR_QPS_ERR;
	ASSERT_EQ(ur_qp_modify(qp, &a, UR_QP_STATE, 0), 0);
	ASSERT_EQ(tfix_cqe(&f.a.rcq).status, UR_WC_WR_FLUSH_ERR);
	a.qp_state = UR_QPS_RTS;
	ASSERT_EQ(ur_qp_modify(qp, &a, UR_QP_STATE | UR_QP_SQ_PSN, 0), -EINVAL);
	a.qp_state = UR_QPS_RESET;
	ASSERT_EQ(ur_qp_modify(qp, &a, UR_QP_STATE, 0), 0);
	ASSERT_EQ(qp->state, UR_QPS_RESET);
	/* UD: INIT needs QKEY, RTR and RTS need almost nothing. */
	a.qp_state = UR_QPS_INIT;
	ASSERT_EQ(ur_qp_modify(f.b.qp, &a, init, 0), -EINVAL);
	ASSERT_EQ(ur_qp_modify(f.b.qp, &a, UR_QP_STATE | UR_QP_PKEY_INDEX |
				      UR_QP_PORT | UR_QP_QKEY, 0), 0);
	a.qp_state = UR_QPS_RTR;
	ASSERT_EQ(ur_qp_modify(f.b.qp, &a, UR_QP_STATE, 0), 0);
	a.qp_state = UR_QPS_RTS;
	ASSERT_EQ(ur_qp_modify(f.b.qp, &a, UR_QP_STATE, 0), -EINVAL);
	ASSERT_EQ(ur_qp_modify(f.b.qp, &a, UR_QP_STATE | UR_QP_SQ_PSN, 0), 0);
	tfix_fini(&f);
}

/* Post validation: opcode per QP type, SGE count, full queue. */
static void t_post_checks(void)
{
	struct tfix f;
	struct ur_sge sge[5];
	struct ur_send_wr wr = { .opcode = UR_WR_SEND, .sg_list = sge };
	int i;

	tfix_init(&f, UR_QPT_RC, NULL);
	for (i = 0; i < 5; i++)
		sge[i] = (struct ur_sge){ (uintptr_t)f.a.buf, 1, f.a.mr->lkey };
	wr.num_sge = 5;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, 0), -EINVAL);
	wr.num_sge = 1;
	wr.opcode = UR_WR_TSO;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, 0), -EINVAL);
	wr.opcode = 99;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, 0), -EINVAL);
	wr.opcode = UR_WR_SEND;
	f.net.f.loss = 1.0; /* keep them queued */
	for (i = 0; i < 256; i++)
		ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, 0), 0);
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, 0), -ENOMEM);
	for (i = 0; i < 256; i++)
		ASSERT_EQ(tfix_recv(&f.a, 0, 0, 1), 0);
	ASSERT_EQ(tfix_recv(&f.a, 0, 0, 1), -ENOMEM);
	tfix_fini(&f);

	tfix_init(&f, UR_QPT_UC, NULL);
	wr.opcode = UR_WR_RDMA_READ;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, 0), -EINVAL);
	wr.opcode = UR_WR_ATOMIC_FETCH_AND_ADD;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, 0), -EINVAL);
	tfix_fini(&f);
}

/* CQ: overflow is reported once and drops; arm fires once; resize. */
static void t_cq(void)
{
	struct tfix f;
	struct ur_cq small;
	struct ur_cqe e[8];

	tfix_init(&f, UR_QPT_RC, NULL);
	ASSERT_EQ(ur_cq_init(&small, 2), 0);
	f.a.qp->send_cq = &small;
	ur_cq_arm(&small, false);
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(tfix_recv(&f.b, i, 0, 16), 0);
		ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, i, 0, 1, 0, 0,
				    UR_SEND_SIGNALED), 0);
	}
	RUN(&f);
	ASSERT_EQ(f.net.nodes[0].cq_events, 1);
	ASSERT_EQ(f.net.nodes[0].qp_events, 1);
	ASSERT_EQ(f.net.nodes[0].last_qp_event, UR_EVENT_CQ_ERR);
	ASSERT_EQ(f.net.nodes[0].dev.cnt.cq_overflow, 2);
	ASSERT_EQ(ur_cq_resize(&small, 1), -EINVAL);
	ASSERT_EQ(ur_cq_resize(&small, 8), 0);
	ASSERT_EQ(ur_cq_poll(&small, e, 8), 2);
	ASSERT_EQ(e[0].wr_id, 0);
	ASSERT_EQ(e[1].wr_id, 1);
	f.a.qp->send_cq = &f.a.scq;
	ur_cq_fini(&small);
	tfix_fini(&f);
}

/* UD: GRH slot with the IPv4 header, src_qp, Q_Key checks, MTU limit. */
static void t_ud(void)
{
	struct tfix f;
	struct ur_ah ah;
	struct ur_sge sge;
	struct ur_send_wr wr = {0};
	struct ur_cqe e;
	uint8_t *grh;

	tfix_init(&f, UR_QPT_UD, NULL);
	tnet_ud_up(f.a.qp, 0x1111);
	tnet_ud_up(f.b.qp, 0x2222);
	memset(&ah, 0, sizeof(ah));
	tnet_addr(1, &ah.path);
	ah.path.tos = 0x28;
	tfix_fill(f.a.buf, 4096, 5);
	sge = (struct ur_sge){ (uintptr_t)f.a.buf, 1000, f.a.mr->lkey };
	wr.wr_id = 1;
	wr.opcode = UR_WR_SEND_WITH_IMM;
	wr.flags = UR_SEND_SIGNALED;
	wr.imm_data = 0x01020304;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.ah = &ah;
	wr.remote_qpn = f.b.qp->qpn;
	wr.remote_qkey = 0x2222;
	ASSERT_EQ(tfix_recv(&f.b, 10, 0, 2000), 0);
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), 0);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_SUCCESS);
	e = tfix_cqe(&f.b.rcq);
	ASSERT_EQ(e.status, UR_WC_SUCCESS);
	ASSERT_EQ(e.byte_len, 1040);
	ASSERT_EQ(e.src_qp, f.a.qp->qpn);
	ASSERT_EQ(e.wc_flags, UR_WC_GRH | UR_WC_WITH_IMM);
	ASSERT_EQ(e.imm_data, 0x01020304);
	ASSERT_MEM_EQ(f.b.buf + 40, f.a.buf, 1000);
	grh = f.b.buf;
	for (int i = 0; i < 20; i++)
		ASSERT_EQ(grh[i], 0);
	ASSERT_EQ(grh[20], 0x45);
	ASSERT_EQ(grh[21], 0x28);
	/* total length: IP 20 + UDP 8 + BTH 12 + DETH 8 + ImmDt 4 + 1000 + ICRC 4 */
	ASSERT_EQ(ur_get16(grh + 22), 20 + 8 + 12 + 8 + 4 + 1000 + 4);
	ASSERT_EQ(grh[29], 17);
	ASSERT_EQ(grh[32], 10);
	ASSERT_EQ(grh[35], 1); /* source 10.0.0.1 */
	ASSERT_EQ(grh[39], 2); /* destination 10.0.0.2 */
	{ /* the header checksum verifies */
		uint32_t s = 0;

		for (int i = 20; i < 40; i += 2)
			s += ur_get16(grh + i);
		while (s >> 16)
			s = (s & 0xffff) + (s >> 16);
		ASSERT_EQ(s, 0xffff);
	}
	/* Wrong Q_Key: dropped. The QP's own Q_Key via the high bit. */
	wr.remote_qkey = 0x3333;
	ASSERT_EQ(tfix_recv(&f.b, 11, 0, 2000), 0);
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), 0);
	RUN(&f);
	tfix_no_cqe(&f.b.rcq);
	ASSERT_EQ(f.net.nodes[1].dev.cnt.rx_drop_qkey, 1);
	wr.remote_qkey = 0x80000000u;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), 0);
	RUN(&f);
	tfix_no_cqe(&f.b.rcq); /* a's qkey 0x1111 != b's */
	ASSERT_EQ(f.net.nodes[1].dev.cnt.rx_drop_qkey, 2);
	/* Buffer too small for GRH + payload. */
	wr.remote_qkey = 0x2222;
	sge.length = 1990;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), 0);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.b.rcq).status, UR_WC_LOC_LEN_ERR);
	/* Payload above the MTU. */
	sge.length = 4097;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), -EINVAL);
	wr.opcode = UR_WR_RDMA_WRITE;
	sge.length = 10;
	ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), -EINVAL);
	tfix_fini(&f);
}

/* UC: SEND and WRITE without ACKs; a lost packet drops its message. */
static void t_uc(void)
{
	struct tfix f;
	struct ur_cqe e;

	tfix_init(&f, UR_QPT_UC, NULL);
	tfix_fill(f.a.buf, 8192, 6);
	ASSERT_EQ(tfix_recv(&f.b, 1, 0, 8192), 0);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, 1, 0, 3000, 0, 0, UR_SEND_SIGNALED), 0);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 2, 0, 5000,
			    (uintptr_t)f.b.buf + 10000, f.b.mr->rkey,
			    UR_SEND_SIGNALED), 0);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.a.scq).wr_id, 1);
	ASSERT_EQ(tfix_cqe(&f.a.scq).wr_id, 2);
	e = tfix_cqe(&f.b.rcq);
	ASSERT_EQ(e.byte_len, 3000);
	ASSERT_MEM_EQ(f.b.buf, f.a.buf, 3000);
	ASSERT_MEM_EQ(f.b.buf + 10000, f.a.buf, 5000);
	ASSERT_EQ(f.net.nodes[1].dev.cnt.tx_packets, 0); /* no ACKs */
	/* Lose the MIDDLE of a 3-packet SEND: that message is dropped, the
	 * receive is used by the next one. */
	f.net.f.drop_opcode = UR_OP_UC_SEND_MIDDLE;
	f.net.f.drop_count = 1;
	ASSERT_EQ(tfix_recv(&f.b, 2, 0, 8192), 0);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, 3, 0, 3000, 0, 0, UR_SEND_SIGNALED), 0);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, 4, 100, 500, 0, 0, UR_SEND_SIGNALED), 0);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_SUCCESS);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_SUCCESS);
	e = tfix_cqe(&f.b.rcq);
	ASSERT_EQ(e.wr_id, 2);
	ASSERT_EQ(e.byte_len, 500);
	ASSERT_MEM_EQ(f.b.buf, f.a.buf + 100, 500);
	tfix_no_cqe(&f.b.rcq);
	tfix_fini(&f);
}

/* Every request packet duplicated: SENDs delivered once, atomics executed
 * once, WRITEs not re-executed. */
static void t_duplicates(void)
{
	struct tfix f;
	uint64_t *t, *res;
	struct ur_sge sge;
	struct ur_send_wr wr = {0};

	tfix_init(&f, UR_QPT_RC, NULL);
	f.net.f.dup = 1.0;
	f.net.f.jitter_ns = 50000;
	t = (uint64_t *)(void *)(f.b.buf + 64);
	res = (uint64_t *)(void *)(f.a.buf + 4096);
	for (int i = 0; i < 20; i++) {
		ASSERT_EQ(tfix_recv(&f.b, i, 8192 + i * 4096, 4096), 0);
		tfix_fill(f.a.buf, 3000, i);
		ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, i, 0, 3000, 0, 0,
				    UR_SEND_SIGNALED), 0);
		sge = (struct ur_sge){ (uintptr_t)(res + i), 8, f.a.mr->lkey };
		wr = (struct ur_send_wr){
			.wr_id = 100 + i, .opcode = UR_WR_ATOMIC_FETCH_AND_ADD,
			.flags = UR_SEND_SIGNALED, .remote_addr = (uintptr_t)t,
			.rkey = f.b.mr->rkey, .compare_add = 1,
			.sg_list = &sge, .num_sge = 1 };
		ASSERT_EQ(ur_qp_post_send(f.a.qp, &wr, f.net.now), 0);
		RUN(&f);
		ASSERT_EQ(tfix_cqe(&f.a.scq).wr_id, i);
		ASSERT_EQ(tfix_cqe(&f.a.scq).wr_id, 100 + i);
		ASSERT_EQ(tfix_cqe(&f.b.rcq).wr_id, i);
		ASSERT_MEM_EQ(f.b.buf + 8192 + i * 4096, f.a.buf, 3000);
		ASSERT_EQ(res[i], i);
		ASSERT_EQ(*t, i + 1);
	}
	tfix_no_cqe(&f.b.rcq);
	ASSERT_GT(f.net.nodes[1].dev.cnt.rx_duplicate, 20);
	tfix_fini(&f);
}

/* SQD: new WQEs wait, RTS resumes them. */
static void t_sqd(void)
{
	struct tfix f;
	struct ur_qp_attr a = {0};

	tfix_init(&f, UR_QPT_RC, NULL);
	a.qp_state = UR_QPS_SQD;
	ASSERT_EQ(ur_qp_modify(f.a.qp, &a, UR_QP_STATE, f.net.now), 0);
	ASSERT_EQ(tfix_recv(&f.b, 1, 0, 100), 0);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, 1, 0, 10, 0, 0, UR_SEND_SIGNALED), 0);
	RUN(&f);
	tfix_no_cqe(&f.a.scq);
	a.qp_state = UR_QPS_RTS;
	ASSERT_EQ(ur_qp_modify(f.a.qp, &a, UR_QP_STATE, f.net.now), 0);
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_SUCCESS);
	tfix_fini(&f);
}

/* The host runs out of packet buffers: sending resumes on progress. */
static void t_backpressure(void)
{
	struct tfix f;

	tfix_init(&f, UR_QPT_RC, NULL);
	tfix_fill(f.a.buf, 50000, 8);
	f.net.nodes[0].pkt_budget = 3;
	f.net.nodes[1].pkt_budget = 2;
	ASSERT_EQ(tfix_recv(&f.b, 1, 0, 50000), 0);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, 1, 0, 50000, 0, 0, UR_SEND_SIGNALED), 0);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_READ, 2, 100000, 50000,
			    (uintptr_t)f.b.buf, f.b.mr->rkey, UR_SEND_SIGNALED), 0);
	ASSERT_EQ(f.net.nodes[0].dev.cnt.tx_packets, 3);
	tnet_run_until(&f.net, f.net.now + 1000000); /* < one timeout */
	f.net.nodes[0].pkt_budget = -1;
	f.net.nodes[1].pkt_budget = -1;
	RUN(&f);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_SUCCESS);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_SUCCESS);
	ASSERT_MEM_EQ(f.b.buf, f.a.buf, 50000);
	ASSERT_MEM_EQ(f.a.buf + 100000, f.b.buf, 50000);
	tfix_fini(&f);
}

/* One ACK covers every message before it (9.7.5.1.2): real RNICs and rxe
 * coalesce, and uroce's own engine keeps only the newest ACK of a batch.
 * Lose all but the last of ten ACKs: all ten complete at once, with no
 * timeout and nothing sent again. */
static void t_coalesced_ack(void)
{
	struct tfix f;

	tfix_init(&f, UR_QPT_RC, NULL);
	f.net.f.drop_opcode = UR_OP_RC_ACKNOWLEDGE;
	f.net.f.drop_count = 9;
	for (int i = 0; i < 10; i++) {
		ASSERT_EQ(tfix_recv(&f.b, i, i * 64, 64), 0);
		ASSERT_EQ(tfix_send(&f.a, UR_WR_SEND, i, i * 64, 64, 0, 0,
				    UR_SEND_SIGNALED), 0);
	}
	tnet_run_until(&f.net, f.net.now + 1000000); /* < one timeout */
	for (int i = 0; i < 10; i++)
		ASSERT_EQ(tfix_cqe(&f.a.scq).wr_id, i);
	ASSERT_EQ(f.net.nodes[0].dev.cnt.tx_timeouts, 0);
	ASSERT_EQ(f.net.nodes[0].dev.cnt.tx_retransmit, 0);
	tfix_fini(&f);
}

/* Traffic classes (docs/wire.md "Traffic classes"): a QP's AV traffic class
 * is the TOS byte of every packet it sends, requests and answers alike;
 * the responder answers in its own class, not the requester's. ECN bits
 * stay congestion control's (ECT(0) on requests under DCQCN). The device
 * counts its packets per priority, tx_prio<DSCP >> 3>_pkts. */
struct tc_tap {
	const struct tfix *f;
	uint64_t pkts[2], bad_dscp[2], bad_ecn[2], ans[2];
	uint8_t ecn_req[2]; /* the ECN bits expected on requests */
};

static void tc_tap_fn(struct tnet *net, const uint8_t *d, uint32_t len,
		      void *arg)
{
	static const uint8_t dscp[2] = { 46, 24 }; /* EF; CS3 */
	struct tc_tap *t = arg;
	struct ur_pkt pkt;
	int from;

	if (ur_pkt_decode(d, len, &pkt) != UR_DEC_OK)
		return;
	from = pkt.h.dqpn == t->f->b.qp->qpn ? 0 : 1;
	t->pkts[from]++;
	t->bad_dscp[from] += (net->tap_tos >> 2) != dscp[from];
	if (pkt.mask & UR_OPF_REQ)
		t->bad_ecn[from] += (net->tap_tos & 3) != t->ecn_req[from];
	else
		t->ans[from]++;
}

static void t_tclass(void)
{
	for (int dcqcn = 0; dcqcn < 2; dcqcn++) {
		struct tconn_attr ca = {
			.mtu = 1024, .timeout = 14, .retry_cnt = 7,
			.rnr_retry = 7, .min_rnr_timer = 1, .access = ACC_ALL,
			.psn_a = 100, .psn_b = 0xfffff0,
			.tclass_a = 46 << 2, .tclass_b = 24 << 2,
		};
		struct tc_tap t = { 0 };
		struct ur_counters *ca_cnt, *cb_cnt;
		struct tfix f;

		tfix_init(&f, UR_QPT_RC, &ca);
		t.f = &f;
		{
			/* a: none, then DCQCN; b: none */
			struct ur_cc_params cc;

			ur_cc_params_default(&cc);
			cc.algo = UR_CC_NONE;
			ASSERT_EQ(ur_qp_set_cc(f.b.qp, &cc, f.net.now), 0);
			cc.algo = dcqcn ? UR_CC_DCQCN : UR_CC_NONE;
			ASSERT_EQ(ur_qp_set_cc(f.a.qp, &cc, f.net.now), 0);
			t.ecn_req[0] = dcqcn ? 2 : 0; /* ECT(0), RFC 3168 */
		}
		f.net.tap = tc_tap_fn;
		f.net.tap_arg = &t;
		/* a WRITEs and READs (b answers with ACKs and READ
		 * responses); b SENDs to a (a ACKs). */
		ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, 5000,
				    (uintptr_t)f.b.buf, f.b.mr->rkey,
				    UR_SEND_SIGNALED), 0);
		ASSERT_EQ(tfix_run_ok(&f, &f.a.scq).wr_id, 1);
		ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_READ, 2, 0, 5000,
				    (uintptr_t)f.b.buf, f.b.mr->rkey,
				    UR_SEND_SIGNALED), 0);
		ASSERT_EQ(tfix_run_ok(&f, &f.a.scq).wr_id, 2);
		ASSERT_EQ(tfix_recv(&f.a, 3, 0, 4096), 0);
		ASSERT_EQ(tfix_send(&f.b, UR_WR_SEND, 4, 0, 3000, 0, 0,
				    UR_SEND_SIGNALED), 0);
		ASSERT_EQ(tfix_run_ok(&f, &f.b.scq).wr_id, 4);
		ASSERT_EQ(tfix_cqe(&f.a.rcq).wr_id, 3);
		for (int i = 0; i < 2; i++) {
			ASSERT_GT(t.pkts[i], 3);
			ASSERT_GT(t.ans[i], 0);
			ASSERT_EQ(t.bad_dscp[i], 0);
			ASSERT_EQ(t.bad_ecn[i], 0);
		}
		ca_cnt = &f.net.nodes[0].dev.cnt;
		cb_cnt = &f.net.nodes[1].dev.cnt;
		ASSERT_EQ(ca_cnt->tx_prio5_pkts, t.pkts[0]); /* 46 >> 3 */
		ASSERT_EQ(cb_cnt->tx_prio3_pkts, t.pkts[1]); /* 24 >> 3 */
		ASSERT_EQ(ca_cnt->tx_prio5_pkts, ca_cnt->tx_packets);
		ASSERT_EQ(cb_cnt->tx_prio3_pkts, cb_cnt->tx_packets);
		ASSERT_EQ(ca_cnt->tx_prio0_pkts + cb_cnt->tx_prio0_pkts, 0);
		tfix_fini(&f);
	}
}

static const struct ur_test_case tests[] = {
	{ "send_sizes", t_send_sizes },
	{ "send_multi_sge", t_send_multi_sge },
	{ "send_inline", t_send_inline },
	{ "write", t_write },
	{ "write_placed", t_write_placed },
	{ "place_bounds", t_place_bounds },
	{ "read", t_read },
	{ "atomics", t_atomics },
	{ "send_with_inv", t_send_with_inv },
	{ "err_rem_access", t_err_rem_access },
	{ "err_qp_access", t_err_qp_access },
	{ "err_recv_too_small", t_err_recv_too_small },
	{ "err_lkey", t_err_lkey },
	{ "err_rnr", t_err_rnr },
	{ "err_dead_peer", t_err_dead_peer },
	{ "qp_modify", t_qp_modify },
	{ "post_checks", t_post_checks },
	{ "cq", t_cq },
	{ "ud", t_ud },
	{ "uc", t_uc },
	{ "duplicates", t_duplicates },
	{ "sqd", t_sqd },
	{ "backpressure", t_backpressure },
	{ "coalesced_ack", t_coalesced_ack },
	{ "tclass", t_tclass },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

// SPDX-License-Identifier: MIT
/*
 * Raw packet QPs on a real interface (lo, UROCE_IP set by ctest), through
 * the public verbs API: frames sent by a raw QP of one context reach the
 * raw QPs of another only through matching flow rules, byte for byte; a QP
 * without a rule receives nothing; an RSS QP spreads frames over its WQs
 * by the Toeplitz hash of their addresses. It needs CAP_NET_RAW and fails
 * without it (CI runs as root): a raw QP that cannot be made is a failure
 * here, not a skip.
 *
 * Frames use MAC addresses of their own (a locally administered multicast
 * destination), so the rdma-core suite's raw tests, should they run at
 * the same time on the same lo, neither see them nor disturb them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ur_test.h"
#include "urv_flow.h"

enum { FRAME_LEN = 128, SLOTS = 32, BUF = FRAME_LEN * SLOTS };

static const uint8_t dmac[6] = { 0x03, 0x55, 0x52, 0x00, 0x00, 0x01 };
static const uint8_t smac[6] = { 0x02, 0x55, 0x52, 0x00, 0x00, 0x02 };

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static struct ibv_context *open_dev(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *c;

	ASSERT(l && l[0]);
	c = ibv_open_device(l[0]);
	ASSERT(c);
	ibv_free_device_list(l);
	return c;
}

static void side_open(struct side *s)
{
	s->ctx = open_dev();
	s->pd = ibv_alloc_pd(s->ctx);
	ASSERT(s->pd);
	s->cq = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
	ASSERT(s->cq);
	s->buf = calloc(1, BUF);
	ASSERT(s->buf);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF, IBV_ACCESS_LOCAL_WRITE);
	ASSERT(s->mr);
}

static void side_close(struct side *s)
{
	ASSERT_EQ(ibv_dereg_mr(s->mr), 0);
	ASSERT_EQ(ibv_destroy_cq(s->cq), 0);
	ASSERT_EQ(ibv_dealloc_pd(s->pd), 0);
	ASSERT_EQ(ibv_close_device(s->ctx), 0);
	free(s->buf);
}

static struct ibv_qp *raw_qp(struct side *s, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = cq,
		.cap = { .max_send_wr = 8, .max_recv_wr = SLOTS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RAW_PACKET,
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);

	if (!qp) {
		fprintf(stderr, "test_raw_qp: a raw packet QP: %s%s\n",
			strerror(errno), errno == EPERM ?
			" (needs CAP_NET_RAW: run as root)" : "");
		exit(1);
	}
	/* INIT needs the port; RTR and RTS nothing more (as rdma-core). */
	ASSERT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	ASSERT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT), 0);
	a.qp_state = IBV_QPS_RTR;
	ASSERT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	ASSERT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	return qp;
}

/* Eth | IPv4 | UDP, @src and @dport varying, the rest fixed. */
static void make_frame(uint8_t *f, const char *src, uint16_t dport,
		       uint8_t tag)
{
	memset(f, tag, FRAME_LEN);
	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	f[12] = 0x08, f[13] = 0x00;
	f[14] = 0x45;
	f[15] = 0;
	f[16] = 0, f[17] = FRAME_LEN - 14;
	f[18] = f[19] = f[20] = f[21] = 0;
	f[22] = 64;
	f[23] = IPPROTO_UDP;
	f[24] = f[25] = 0;
	inet_pton(AF_INET, src, f + 26);
	inet_pton(AF_INET, "10.85.82.1", f + 30);
	f[34] = 0x30, f[35] = 0x39;   /* source port 12345 */
	f[36] = (uint8_t)(dport >> 8), f[37] = (uint8_t)dport;
	f[38] = 0, f[39] = FRAME_LEN - 34;
	f[40] = f[41] = 0;
}

static void post_recv_slot(struct side *s, struct ibv_qp *qp, struct ibv_wq *wq,
			   int slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(s->buf + slot * FRAME_LEN),
			       .length = FRAME_LEN, .lkey = s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)slot, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (wq)
		ASSERT_EQ(ibv_post_wq_recv(wq, &wr, &bad), 0);
	else
		ASSERT_EQ(ibv_post_recv(qp, &wr, &bad), 0);
}

static void send_frame(struct side *s, struct ibv_qp *qp, const uint8_t *f)
{
	struct ibv_sge sge = { .addr = (uintptr_t)s->buf, .length = FRAME_LEN,
			       .lkey = s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	int n;

	memcpy(s->buf, f, FRAME_LEN);
	ASSERT_EQ(ibv_post_send(qp, &wr, &bad), 0);
	/* The send completes once the frame has left: at once. */
	n = ibv_poll_cq(s->cq, 1, &wc);
	ASSERT_EQ(n, 1);
	ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
	ASSERT_EQ(wc.opcode, IBV_WC_SEND);
	ASSERT_EQ(wc.wr_id, 7);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One completion from @cq, within 10 s (frames on lo take microseconds). */
static void poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	double end = now_s() + 10;

	while (now_s() < end) {
		int n = ibv_poll_cq(cq, 1, wc);

		ASSERT(n >= 0);
		if (n)
			return;
	}
	UR_FAIL("no completion within 10 s");
}

static void t_flow_steering(void)
{
	struct side tx, rx;
	struct ibv_cq *cq2;
	struct ibv_qp *sq, *q1, *q2;
	struct ibv_flow *flow;
	struct ibv_wc wc;
	uint8_t yes[FRAME_LEN], no[FRAME_LEN], yes2[FRAME_LEN];
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_eth eth;
		struct ibv_flow_spec_tcp_udp udp;
	} fa = {
		.attr = { .type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(fa),
			  .num_of_specs = 2, .port = 1 },
		.eth = { .type = IBV_FLOW_SPEC_ETH, .size = sizeof(fa.eth) },
		.udp = { .type = IBV_FLOW_SPEC_UDP, .size = sizeof(fa.udp) },
	};

	side_open(&tx);
	side_open(&rx);
	cq2 = ibv_create_cq(rx.ctx, 64, NULL, NULL, 0);
	ASSERT(cq2);
	sq = raw_qp(&tx, tx.cq);
	q1 = raw_qp(&rx, rx.cq);
	q2 = raw_qp(&rx, cq2); /* no rule: receives nothing */
	memcpy(fa.eth.val.dst_mac, dmac, 6);
	memset(fa.eth.mask.dst_mac, 0xff, 6);
	fa.udp.val.dst_port = htons(0x5552);
	fa.udp.mask.dst_port = 0xffff;
	flow = ibv_create_flow(q1, &fa.attr);
	ASSERT(flow);
	for (int i = 0; i < 4; i++) {
		post_recv_slot(&rx, q1, NULL, i);
		post_recv_slot(&rx, q2, NULL, 8 + i);
	}
	make_frame(no, "10.85.82.2", 0x5553, 0xa1);
	make_frame(yes, "10.85.82.2", 0x5552, 0xb2);
	make_frame(yes2, "10.85.82.3", 0x5552, 0xc3);
	/* lo keeps the order: had the first frame been taken, it would be
	 * the first completion. */
	send_frame(&tx, sq, no);
	send_frame(&tx, sq, yes);
	poll_one(rx.cq, &wc);
	ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
	ASSERT_EQ(wc.opcode, IBV_WC_RECV);
	ASSERT_EQ(wc.wr_id, 0);
	ASSERT_EQ(wc.byte_len, FRAME_LEN);
	ASSERT_EQ(wc.qp_num, q1->qp_num);
	ASSERT_MEM_EQ(rx.buf, yes, FRAME_LEN);
	send_frame(&tx, sq, yes2);
	poll_one(rx.cq, &wc);
	ASSERT_EQ(wc.wr_id, 1);
	ASSERT_MEM_EQ(rx.buf + FRAME_LEN, yes2, FRAME_LEN);
	ASSERT_EQ(ibv_poll_cq(rx.cq, 1, &wc), 0);
	ASSERT_EQ(ibv_poll_cq(cq2, 1, &wc), 0);

	/* A QP with rules is not destroyed before them (as the kernel). */
	ASSERT_EQ(ibv_destroy_qp(q1), EBUSY);
	ASSERT_EQ(ibv_destroy_flow(flow), 0);
	/* Flushed on the way to the error state: the two receives left. */
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		ASSERT_EQ(ibv_modify_qp(q1, &a, IBV_QP_STATE), 0);
		for (int i = 2; i < 4; i++) {
			poll_one(rx.cq, &wc);
			ASSERT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
			ASSERT_EQ(wc.wr_id, (uint64_t)i);
		}
	}
	ASSERT_EQ(ibv_destroy_qp(q1), 0);
	ASSERT_EQ(ibv_destroy_qp(q2), 0);
	ASSERT_EQ(ibv_destroy_qp(sq), 0);
	ASSERT_EQ(ibv_destroy_cq(cq2), 0);
	side_close(&tx);
	side_close(&rx);
}

static void t_rss(void)
{
	static const uint8_t key[URV_RSS_KEY_LEN] = {
		0x55, 0x52, 0x6f, 0x43, 0x45, 0x20, 0x52, 0x53, 0x53, 0x21,
		0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
		0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
		0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
	};
	enum { NWQ = 4, NFRAMES = 16 };
	struct side tx, rx;
	struct ibv_cq *cqs[2];
	struct ibv_wq *wqs[NWQ];
	struct ibv_rwq_ind_table *tbl;
	struct ibv_qp *sq, *rss;
	struct ibv_flow *flow;
	struct ibv_device_attr_ex da;
	unsigned int used = 0;
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_eth eth;
	} fa = {
		.attr = { .type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(fa),
			  .num_of_specs = 1, .port = 1 },
		.eth = { .type = IBV_FLOW_SPEC_ETH, .size = sizeof(fa.eth) },
	};

	side_open(&tx);
	side_open(&rx);
	ASSERT_EQ(ibv_query_device_ex(rx.ctx, NULL, &da), 0);
	ASSERT_EQ(da.rss_caps.supported_qpts, 1u << IBV_QPT_RAW_PACKET);
	ASSERT(da.rss_caps.rx_hash_function & IBV_RX_HASH_FUNC_TOEPLITZ);
	ASSERT(da.max_wq_type_rq > 0);
	for (int i = 0; i < 2; i++) {
		cqs[i] = ibv_create_cq(rx.ctx, 64, NULL, NULL, 0);
		ASSERT(cqs[i]);
	}
	for (int i = 0; i < NWQ; i++) {
		struct ibv_wq_init_attr wa = { .wq_type = IBV_WQT_RQ,
			.max_wr = 8, .max_sge = 1, .pd = rx.pd, .cq = cqs[i % 2] };
		struct ibv_wq_attr m = { .attr_mask = IBV_WQ_ATTR_STATE,
					 .wq_state = IBV_WQS_RDY };

		wqs[i] = ibv_create_wq(rx.ctx, &wa);
		ASSERT(wqs[i]);
		ASSERT_EQ(ibv_modify_wq(wqs[i], &m), 0);
		for (int j = 0; j < 8; j++)
			post_recv_slot(&rx, NULL, wqs[i], i * 8 + j);
	}
	{
		struct ibv_rwq_ind_table_init_attr ta = { .log_ind_tbl_size = 2,
							  .ind_tbl = wqs };

		tbl = ibv_create_rwq_ind_table(rx.ctx, &ta);
		ASSERT(tbl);
	}
	{
		struct ibv_qp_init_attr_ex ia = {
			.qp_type = IBV_QPT_RAW_PACKET,
			.comp_mask = IBV_QP_INIT_ATTR_PD |
				     IBV_QP_INIT_ATTR_RX_HASH |
				     IBV_QP_INIT_ATTR_IND_TABLE,
			.pd = rx.pd, .rwq_ind_tbl = tbl,
			.rx_hash_conf = {
				.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ,
				.rx_hash_key_len = sizeof(key),
				.rx_hash_key = (uint8_t *)key,
				.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 |
						       IBV_RX_HASH_DST_IPV4,
			},
		};

		rss = ibv_create_qp_ex(rx.ctx, &ia);
		ASSERT(rss);
	}
	memcpy(fa.eth.val.dst_mac, dmac, 6);
	memset(fa.eth.mask.dst_mac, 0xff, 6);
	flow = ibv_create_flow(rss, &fa.attr);
	ASSERT(flow);
	sq = raw_qp(&tx, tx.cq);
	for (int i = 0; i < NFRAMES; i++) {
		uint8_t f[FRAME_LEN];
		char src[32];

		snprintf(src, sizeof(src), "10.%d.%d.%d", i, i * 7, i * 13);
		make_frame(f, src, 0x5552, (uint8_t)i);
		send_frame(&tx, sq, f);
	}
	/* Each frame is in the WQ its hash names: the completion's QP number
	 * is that WQ's, its buffer one of that WQ's slots. */
	for (int got = 0; got < NFRAMES;) {
		for (int c = 0; c < 2; c++) {
			struct ibv_wc wc;
			struct urv_frame fr;
			uint8_t in[36];
			const uint8_t *f;
			uint32_t h;
			int n = ibv_poll_cq(cqs[c], 1, &wc), w;

			ASSERT(n >= 0);
			if (!n)
				continue;
			ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
			f = rx.buf + wc.wr_id * FRAME_LEN;
			ASSERT(urv__frame_parse(f, FRAME_LEN, &fr));
			h = urv__toeplitz(key, sizeof(key), in,
					  urv__rss_input(&fr, IBV_RX_HASH_SRC_IPV4 |
							 IBV_RX_HASH_DST_IPV4, in));
			w = (int)(h & (NWQ - 1));
			ASSERT_EQ(wc.qp_num, wqs[w]->wq_num);
			ASSERT_EQ((int)wc.wr_id / 8, w);
			ASSERT_EQ(c, w % 2);
			used |= 1u << w;
			got++;
		}
	}
	ASSERT_GT(__builtin_popcount(used), 1); /* spread, not all in one */

	ASSERT_EQ(ibv_destroy_flow(flow), 0);
	ASSERT_EQ(ibv_destroy_rwq_ind_table(tbl), EBUSY); /* the QP hashes into it */
	ASSERT_EQ(ibv_destroy_qp(rss), 0);
	ASSERT_EQ(ibv_destroy_wq(wqs[0]), EBUSY);          /* in the table */
	ASSERT_EQ(ibv_destroy_rwq_ind_table(tbl), 0);
	for (int i = 0; i < NWQ; i++)
		ASSERT_EQ(ibv_destroy_wq(wqs[i]), 0);
	ASSERT_EQ(ibv_destroy_qp(sq), 0);
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(ibv_destroy_cq(cqs[i]), 0);
	side_close(&tx);
	side_close(&rx);
}

static const struct ur_test_case tests[] = {
	{ "flow_steering", t_flow_steering },
	{ "rss", t_rss },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

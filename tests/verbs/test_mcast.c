// SPDX-License-Identifier: MIT
/*
 * Multicast over the verbs API (ibv_attach_mcast / ibv_detach_mcast): one
 * UD QP sends to a group (AH to the MGID, remote QPN 0xFFFFFF) over real
 * UDP on a loopback address; every attached QP with the right Q_Key gets
 * a copy, a detached one none, one with another Q_Key none. Bad input:
 * attaching an RC QP or a unicast GID, detaching twice (EINVAL).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "ur_test.h"

#define QKEY 0x11111111u
#define GRH 40
#define MSG 200

struct ud {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t buf[4096];
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ud snd, r1, r2, r3;
static union ibv_gid mgid;

static void ud_make(struct ud *u, uint32_t qkey)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qkey = qkey };

	u->cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	ASSERT(u->cq);
	ia.send_cq = ia.recv_cq = u->cq;
	u->qp = ibv_create_qp(pd, &ia);
	ASSERT(u->qp);
	ASSERT_EQ(ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					       IBV_QP_PORT | IBV_QP_QKEY), 0);
	a.qp_state = IBV_QPS_RTR;
	ASSERT_EQ(ibv_modify_qp(u->qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	ASSERT_EQ(ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	u->mr = ibv_reg_mr(pd, u->buf, sizeof(u->buf), IBV_ACCESS_LOCAL_WRITE);
	ASSERT(u->mr);
}

static void ud_free(struct ud *u)
{
	ASSERT_EQ(ibv_destroy_qp(u->qp), 0);
	ASSERT_EQ(ibv_dereg_mr(u->mr), 0);
	ASSERT_EQ(ibv_destroy_cq(u->cq), 0);
}

static void post_recv(struct ud *u)
{
	struct ibv_sge sge = { (uintptr_t)u->buf, GRH + MSG, u->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 },
			   *bad;

	memset(u->buf, 0, GRH + MSG);
	ASSERT_EQ(ibv_post_recv(u->qp, &wr, &bad), 0);
}

/* One CQE within 5 s (a loaded machine), or none. */
static int poll_one(struct ud *u, struct ibv_wc *wc, int ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(u->cq, 1, wc);

		ASSERT_GE(n, 0);
		if (n)
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 +
			    (t.tv_nsec - t0.tv_nsec) / 1000000 > ms)
			return 0;
	}
}

static void send_to_group(uint8_t seed)
{
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
				  .grh = { .dgid = mgid, .sgid_index = 0,
					   .hop_limit = 1 } };
	struct ibv_ah *ah = ibv_create_ah(pd, &aa);
	struct ibv_sge sge = { (uintptr_t)snd.buf, MSG, snd.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = ah, .remote_qpn = 0xffffff,
			   .remote_qkey = QKEY },
	}, *bad;
	struct ibv_wc wc;

	ASSERT(ah);
	memset(snd.buf, seed, MSG);
	ASSERT_EQ(ibv_post_send(snd.qp, &wr, &bad), 0);
	ASSERT_EQ(poll_one(&snd, &wc, 5000), 1);
	ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
	ASSERT_EQ(ibv_destroy_ah(ah), 0);
}

static void expect_copy(struct ud *u, uint8_t seed)
{
	struct ibv_wc wc;

	ASSERT_EQ(poll_one(u, &wc, 5000), 1);
	ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
	ASSERT_EQ(wc.byte_len, GRH + MSG);
	ASSERT_EQ(wc.src_qp, snd.qp->qp_num);
	ASSERT_EQ(wc.wc_flags & IBV_WC_GRH, IBV_WC_GRH);
	for (int i = 0; i < MSG; i++)
		ASSERT_EQ(u->buf[GRH + i], seed);
}

static void t_mcast(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device_attr da;
	struct ibv_wc wc;
	union ibv_gid ucast;

	ASSERT(list && list[0]);
	ctx = ibv_open_device(list[0]);
	ASSERT(ctx);
	ibv_free_device_list(list);
	ASSERT_EQ(ibv_query_device(ctx, &da), 0);
	ASSERT_GT(da.max_mcast_grp, 0);
	pd = ibv_alloc_pd(ctx);
	ASSERT(pd);
	/* 239.7.7.7 as RoCEv2 writes an IPv4 group: IPv4-mapped. */
	memset(&mgid, 0, sizeof(mgid));
	mgid.raw[10] = mgid.raw[11] = 0xff;
	mgid.raw[12] = 239, mgid.raw[13] = 7, mgid.raw[14] = 7;
	mgid.raw[15] = 7;
	ud_make(&snd, QKEY);
	ud_make(&r1, QKEY);
	ud_make(&r2, QKEY);
	ud_make(&r3, 0x22222222); /* another Q_Key: attached, never served */

	ASSERT_EQ(ibv_attach_mcast(r1.qp, &mgid, 0), 0);
	ASSERT_EQ(ibv_attach_mcast(r1.qp, &mgid, 0), 0); /* again: fine */
	ASSERT_EQ(ibv_attach_mcast(r2.qp, &mgid, 0), 0);
	ASSERT_EQ(ibv_attach_mcast(r3.qp, &mgid, 0), 0);
	post_recv(&r1);
	post_recv(&r1); /* room for a duplicate, which must not come */
	post_recv(&r2);
	post_recv(&r3);
	send_to_group(0x41);
	expect_copy(&r1, 0x41);
	expect_copy(&r2, 0x41);
	/* One copy per QP: on lo the kernel loops the datagram back once
	 * (IP_MULTICAST_LOOP) and drops what lo carries (a martian); a
	 * duplicate would follow within microseconds, 0.3 s is ample. */
	ASSERT_EQ(poll_one(&r1, &wc, 300), 0);
	/* The group's QPs are served in one pass over the datagram: with
	 * r1's and r2's copies in, r3's would be too. */
	ASSERT_EQ(ibv_poll_cq(r3.cq, 1, &wc), 0);
	ASSERT_EQ(ibv_poll_cq(snd.cq, 1, &wc), 0); /* not attached */

	ASSERT_EQ(ibv_detach_mcast(r2.qp, &mgid, 0), 0);
	ASSERT_EQ(ibv_detach_mcast(r2.qp, &mgid, 0), EINVAL);
	post_recv(&r2);
	send_to_group(0x42);
	expect_copy(&r1, 0x42);
	ASSERT_EQ(ibv_poll_cq(r2.cq, 1, &wc), 0);

	/* Bad input. */
	memcpy(&ucast, &mgid, sizeof(ucast));
	ucast.raw[12] = 127, ucast.raw[13] = 0, ucast.raw[14] = 0;
	ucast.raw[15] = 1;
	ASSERT_EQ(ibv_attach_mcast(r2.qp, &ucast, 0), EINVAL);
	{
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_RC, .send_cq = r2.cq,
			.recv_cq = r2.cq,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct ibv_qp *rc = ibv_create_qp(pd, &ia);

		ASSERT(rc);
		ASSERT_EQ(ibv_attach_mcast(rc, &mgid, 0), EINVAL);
		ASSERT_EQ(ibv_destroy_qp(rc), 0);
	}
	/* A QP destroyed while attached leaves its groups. */
	ASSERT_EQ(ibv_detach_mcast(r1.qp, &mgid, 0), 0);
	ud_free(&r3);
	ud_free(&r2);
	ud_free(&r1);
	ud_free(&snd);
	ASSERT_EQ(ibv_dealloc_pd(pd), 0);
	ASSERT_EQ(ibv_close_device(ctx), 0);
}

static const struct ur_test_case tests[] = {
	{ "mcast", t_mcast },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	setenv("UROCE_IP", "127.0.0.63", 1);
	setenv("UROCE_PORT", "14799", 1);
	return ur_test_main(argc, argv, tests);
}

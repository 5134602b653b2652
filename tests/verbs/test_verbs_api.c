// SPDX-License-Identifier: MIT
/*
 * Verbs API test: the public libibverbs API of build/lib/libibverbs.so.1
 * with UROCE_IP=127.0.0.5: device list, queries, PD/MR/CQ/QP lifecycles and
 * the documented errors for bad inputs (docs/verbs.md).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <uroce/uroce.h>

#include "ur_test.h"

static struct ibv_context *open_ctx(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	int n = -1;

	list = ibv_get_device_list(&n);
	ASSERT(list);
	ASSERT_EQ(n, 1);
	ctx = ibv_open_device(list[0]);
	ASSERT(ctx);
	ibv_free_device_list(list);
	return ctx;
}

static void t_device_list(void)
{
	struct ibv_device **list;
	int n = -1;

	list = ibv_get_device_list(&n);
	ASSERT(list);
	ASSERT_EQ(n, 1);
	ASSERT(list[1] == NULL);
	ASSERT_STR_EQ(ibv_get_device_name(list[0]), "uroce0");
	ASSERT_EQ(list[0]->node_type, IBV_NODE_CA);
	ASSERT_EQ(list[0]->transport_type, IBV_TRANSPORT_IB);
	ASSERT_NE(ibv_get_device_guid(list[0]), 0);
	ASSERT_EQ(ibv_get_device_index(list[0]), 0);
	/* Stable GUID: a second list gives the same device. */
	{
		struct ibv_device **l2 = ibv_get_device_list(NULL);

		ASSERT(l2 && l2[0] == list[0]);
		ibv_free_device_list(l2);
	}
	ibv_free_device_list(list);
}

static void t_query(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_device_attr da;
	struct ibv_device_attr_ex dx;
	struct ibv_port_attr pa;
	struct ibv_gid_entry ge[4];
	union ibv_gid gid;
	uint8_t want[16] = { [10] = 0xff, [11] = 0xff, 127, 0, 0, 5 };
	__be16 pkey;
	const char *icrc;

	ASSERT_EQ(ibv_query_device(ctx, &da), 0);
	ASSERT_GE(da.max_qp_wr, 8192);
	ASSERT_EQ(da.max_sge, 16);
	ASSERT_GE(da.max_cqe, 65536);
	ASSERT_EQ(da.atomic_cap, IBV_ATOMIC_HCA);
	ASSERT_GE(da.max_qp_rd_atom, 16);
	ASSERT_EQ(da.phys_port_cnt, 1);
	ASSERT_STR_EQ(da.fw_ver, "uroce 0.1");
	ASSERT_EQ(da.node_guid, ibv_get_device_guid(ctx->device));

	ASSERT_EQ(ibv_query_device_ex(ctx, NULL, &dx), 0);
	ASSERT_EQ(dx.orig_attr.max_qp_wr, da.max_qp_wr);

	ASSERT_EQ(ibv_query_port(ctx, 1, &pa), 0);
	ASSERT_EQ(pa.state, IBV_PORT_ACTIVE);
	ASSERT_EQ(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	ASSERT_EQ(pa.max_mtu, IBV_MTU_4096);
	ASSERT_EQ(pa.active_mtu, IBV_MTU_4096); /* lo: MTU 65536 */
	ASSERT_EQ(pa.gid_tbl_len, 64); /* fixed table, one address used */
	ASSERT_EQ(pa.pkey_tbl_len, 1);
	ASSERT_GE(pa.max_msg_sz, 1u << 30);
	ASSERT_NE(ibv_query_port(ctx, 2, &pa), 0);

	ASSERT_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
	ASSERT_MEM_EQ(gid.raw, want, 16);
	/* An empty entry reads as the zero GID; past the table: EINVAL. */
	memset(gid.raw, 0xff, sizeof(gid.raw));
	ASSERT_EQ(ibv_query_gid(ctx, 1, 1, &gid), 0);
	ASSERT_EQ(gid.global.interface_id, 0);
	ASSERT_EQ(gid.global.subnet_prefix, 0);
	errno = 0;
	ASSERT_EQ(ibv_query_gid(ctx, 1, 64, &gid), -1);
	ASSERT_EQ(errno, EINVAL);

	ASSERT_EQ(ibv_query_gid_ex(ctx, 1, 0, &ge[0], 0), 0);
	ASSERT_EQ(ge[0].gid_type, IBV_GID_TYPE_ROCE_V2);
	ASSERT_MEM_EQ(ge[0].gid.raw, want, 16);
	ASSERT_EQ(ibv_query_gid_ex(ctx, 1, 1, &ge[0], 0), ENODATA);
	ASSERT_EQ(ibv_query_gid_ex(ctx, 1, 64, &ge[0], 0), EINVAL);
	ASSERT_EQ(ibv_query_gid_ex(ctx, 1, 0, &ge[0], 1), EINVAL);

	ASSERT_EQ(ibv_query_gid_table(ctx, ge, 4, 0), 1);
	ASSERT_EQ(ge[0].gid_index, 0);
	ASSERT_EQ(ibv_query_gid_table(ctx, ge, 0, 0), -EINVAL);
	ASSERT_EQ(_ibv_query_gid_table(ctx, ge, 4, 0, 8), -EINVAL);

	ASSERT_EQ(ibv_query_pkey(ctx, 1, 0, &pkey), 0);
	ASSERT_EQ(ntohs(pkey), 0xffff);
	ASSERT_EQ(ibv_get_pkey_index(ctx, 1, htons(0xffff)), 0);

	icrc = uroce_query_icrc_mode(ctx);
	ASSERT(icrc && *icrc);
	errno = 0;
	ASSERT(uroce_query_icrc_mode(NULL) == NULL);
	ASSERT_EQ(errno, EINVAL);

	/* The async fd is pollable and empty. */
	{
		struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };

		ASSERT_EQ(poll(&p, 1, 0), 0);
		ASSERT(fcntl(ctx->async_fd, F_GETFD) & FD_CLOEXEC);
	}
	ASSERT_EQ(ibv_close_device(ctx), 0);
}

static void t_pd_mr(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	static char buf[3][8192];
	struct ibv_mr *mr[3];

	ASSERT(pd);
	mr[0] = ibv_reg_mr(pd, buf[0], sizeof(buf[0]), IBV_ACCESS_LOCAL_WRITE);
	mr[1] = ibv_reg_mr(pd, buf[1], sizeof(buf[1]),
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	/* IBV_ACCESS_RELAXED_ORDERING is an optional hint: ignored. */
	mr[2] = ibv_reg_mr_iova2(pd, buf[2], sizeof(buf[2]), 0x1000,
				 IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_RELAXED_ORDERING);
	ASSERT(mr[0] && mr[1] && mr[2]);
	ASSERT(mr[0]->lkey != mr[1]->lkey && mr[1]->lkey != mr[2]->lkey);
	ASSERT(mr[0]->addr == buf[0] && mr[0]->length == sizeof(buf[0]));
	ASSERT(mr[0]->pd == pd);

	/* IBTA: remote write/atomic access needs local write. */
	errno = 0;
	ASSERT(!ibv_reg_mr(pd, buf[0], 64, IBV_ACCESS_REMOTE_WRITE));
	ASSERT_EQ(errno, EINVAL);
	errno = 0;
	ASSERT(!ibv_reg_mr(pd, buf[0], 64, IBV_ACCESS_REMOTE_ATOMIC));
	ASSERT_EQ(errno, EINVAL);
	errno = 0;
	ASSERT(!ibv_reg_mr(pd, buf[0], 64, 1 << 15)); /* unknown bit */
	ASSERT_EQ(errno, EINVAL);

	ASSERT_EQ(ibv_dealloc_pd(pd), EBUSY);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(ibv_dereg_mr(mr[i]), 0);
	ASSERT_EQ(ibv_dealloc_pd(pd), 0);
	ASSERT_EQ(ibv_close_device(ctx), 0);
}

static void t_cq(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq, *cq2;
	struct ibv_wc wc[4];
	struct pollfd p;

	ASSERT(ch);
	ASSERT(fcntl(ch->fd, F_GETFD) & FD_CLOEXEC);
	cq = ibv_create_cq(ctx, 100, (void *)0x1234, ch, 0);
	ASSERT(cq);
	ASSERT_GE(cq->cqe, 100);
	ASSERT(cq->cq_context == (void *)0x1234);
	ASSERT_EQ(ibv_poll_cq(cq, 4, wc), 0);
	ASSERT_EQ(ibv_req_notify_cq(cq, 0), 0);
	p.fd = ch->fd;
	p.events = POLLIN;
	ASSERT_EQ(poll(&p, 1, 0), 0);
	/* Non-blocking channel: no event yet -> EAGAIN. */
	{
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		int fl = fcntl(ch->fd, F_GETFL);

		ASSERT_EQ(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
		errno = 0;
		ASSERT_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), -1);
		ASSERT_EQ(errno, EAGAIN);
	}
	ASSERT_EQ(ibv_destroy_comp_channel(ch), EBUSY);

	errno = 0;
	ASSERT(!ibv_create_cq(ctx, 0, NULL, NULL, 0));
	ASSERT_EQ(errno, EINVAL);
	errno = 0;
	ASSERT(!ibv_create_cq(ctx, 1 << 30, NULL, NULL, 0));
	ASSERT_EQ(errno, EINVAL);
	errno = 0;
	ASSERT(!ibv_create_cq(ctx, 10, NULL, NULL, 5)); /* bad vector */
	ASSERT_EQ(errno, EINVAL);

	cq2 = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	ASSERT(cq2);
	ASSERT_EQ(ibv_destroy_cq(cq2), 0);
	ASSERT_EQ(ibv_destroy_cq(cq), 0);
	ASSERT_EQ(ibv_destroy_comp_channel(ch), 0);
	ASSERT_EQ(ibv_close_device(ctx), 0);
}

static void t_cq_ex(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_cq_init_attr_ex a = {
		.cqe = 64,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
	};
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &a);

	ASSERT(cq);
	ASSERT_EQ(ibv_start_poll(cq, &pa), ENOENT);
	ASSERT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
	a.wc_flags = IBV_WC_EX_WITH_TM_INFO;
	errno = 0;
	ASSERT(!ibv_create_cq_ex(ctx, &a));
	ASSERT_EQ(errno, EOPNOTSUPP);
	ASSERT_EQ(ibv_close_device(ctx), 0);
}

static void t_qp_errors(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 2, .max_recv_sge = 2 },
	};
	struct ibv_qp_attr qa;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_recv_wr rwr, *rbad = NULL;
	struct ibv_sge sge[17];
	static char buf[4096];
	struct ibv_mr *mr;
	struct ibv_qp *qp;

	ASSERT(pd && cq);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	ASSERT(mr);
	qp = ibv_create_qp(pd, &ia);
	ASSERT(qp);
	ASSERT_NE(qp->qp_num, 0);
	ASSERT_EQ(qp->state, IBV_QPS_RESET);
	ASSERT_EQ(ia.cap.max_inline_data, 256);
	ASSERT(ibv_qp_to_qp_ex(qp) == NULL); /* not created with send ops */

	/* Posting to a RESET QP. */
	memset(&wr, 0, sizeof(wr));
	sge[0] = (struct ibv_sge){ (uintptr_t)buf, 64, mr->lkey };
	wr.sg_list = sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	ASSERT_EQ(ibv_post_send(qp, &wr, &bad), EINVAL);
	ASSERT(bad == &wr);

	/* RESET->INIT needs PKEY_INDEX|PORT|ACCESS_FLAGS. */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	ASSERT_EQ(ibv_modify_qp(qp, &qa, IBV_QP_STATE), EINVAL);
	ASSERT_EQ(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	ASSERT_EQ(qp->state, IBV_QPS_INIT);
	/* port 2 does not exist. */
	qa.port_num = 2;
	ASSERT_EQ(ibv_modify_qp(qp, &qa, IBV_QP_PORT), EINVAL);

	/* INIT->RTR without a GRH: RoCE needs is_global (as rxe). */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = IBV_MTU_1024;
	qa.dest_qp_num = 0x123456;
	qa.rq_psn = 1;
	qa.max_dest_rd_atomic = 1;
	qa.min_rnr_timer = 12;
	qa.ah_attr.port_num = 1;
	qa.ah_attr.is_global = 0;
	ASSERT_EQ(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_AV |
				IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER), EINVAL);
	ASSERT_EQ(qp->state, IBV_QPS_INIT);

	/* Oversized WRs. */
	for (int i = 0; i < 17; i++)
		sge[i] = (struct ibv_sge){ (uintptr_t)buf, 1, mr->lkey };
	memset(&rwr, 0, sizeof(rwr));
	rwr.sg_list = sge;
	rwr.num_sge = 17;
	ASSERT_EQ(ibv_post_recv(qp, &rwr, &rbad), EINVAL);
	ASSERT(rbad == &rwr);
	rwr.num_sge = 1;
	ASSERT_EQ(ibv_post_recv(qp, &rwr, &rbad), 0);

	/* A QP with more SGEs than the device has is refused. */
	ia.cap.max_send_sge = 17;
	errno = 0;
	ASSERT(!ibv_create_qp(pd, &ia));
	ASSERT_EQ(errno, EINVAL);
	ia.cap.max_send_sge = 1;
	/* A QP on an SRQ: the SRQ cannot go while the QP uses it. */
	{
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8,
							  .max_sge = 2,
							  .srq_limit = 2 } };
		struct ibv_srq_attr q;
		struct ibv_recv_wr *sbad;
		struct ibv_qp *sqp;
		struct ibv_srq *srq = ibv_create_srq(pd, &sa);

		ASSERT(srq);
		ASSERT_EQ(ibv_query_srq(srq, &q), 0);
		ASSERT_EQ(q.max_wr, 8);
		ASSERT_EQ(q.max_sge, 2);
		ASSERT_EQ(q.srq_limit, 2);
		q.srq_limit = 9;
		ASSERT_EQ(ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT), EINVAL);
		q.max_wr = 16;
		ASSERT_EQ(ibv_modify_srq(srq, &q, IBV_SRQ_MAX_WR), 0);
		ASSERT_EQ(ibv_query_srq(srq, &q), 0);
		ASSERT_EQ(q.max_wr, 16);
		ASSERT_EQ(ibv_post_srq_recv(srq, &rwr, &sbad), 0);
		ia.srq = srq;
		sqp = ibv_create_qp(pd, &ia);
		ASSERT(sqp);
		ASSERT_EQ(sqp->srq, srq);
		ASSERT_EQ(ibv_destroy_srq(srq), EBUSY);
		ASSERT_EQ(ibv_destroy_qp(sqp), 0);
		ASSERT_EQ(ibv_destroy_srq(srq), 0);
		ia.srq = NULL;
	}

	/* Query reflects the state and the caps. */
	{
		struct ibv_qp_init_attr qi;

		ASSERT_EQ(ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_CAP, &qi), 0);
		ASSERT_EQ(qa.qp_state, IBV_QPS_INIT);
		ASSERT_GE(qi.cap.max_send_wr, 16);
		ASSERT(qi.send_cq == cq);
	}

	ASSERT_EQ(ibv_destroy_cq(cq), EBUSY);
	ASSERT_EQ(ibv_dealloc_pd(pd), EBUSY);
	ASSERT_EQ(ibv_destroy_qp(qp), 0);
	ASSERT_EQ(ibv_dereg_mr(mr), 0);
	ASSERT_EQ(ibv_destroy_cq(cq), 0);
	ASSERT_EQ(ibv_dealloc_pd(pd), 0);
	ASSERT_EQ(ibv_close_device(ctx), 0);
}

static void t_qp_ex_and_ud(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM,
	};
	struct ibv_ah_attr aa = { .port_num = 1 };
	struct ibv_qp_ex *qpx;
	struct ibv_qp *qp;
	struct ibv_ah *ah;

	ASSERT(pd && cq);
	qp = ibv_create_qp_ex(ctx, &ia);
	ASSERT(qp);
	qpx = ibv_qp_to_qp_ex(qp);
	ASSERT(qpx);
	ASSERT(qpx->wr_send && qpx->wr_set_ud_addr && !qpx->wr_rdma_read);

	/* No GRH -> no RoCE address. */
	errno = 0;
	ASSERT(!ibv_create_ah(pd, &aa));
	ASSERT_EQ(errno, EINVAL);
	aa.is_global = 1;
	aa.grh.hop_limit = 1;
	ibv_query_gid(ctx, 1, 0, &aa.grh.dgid);
	ah = ibv_create_ah(pd, &aa);
	ASSERT(ah);

	/* Building on a RESET QP then aborting posts nothing. */
	ibv_wr_start(qpx);
	qpx->wr_id = 7;
	ibv_wr_send(qpx);
	ibv_wr_set_ud_addr(qpx, ah, 1, 0x11111111);
	ibv_wr_set_inline_data(qpx, "hello", 5);
	ibv_wr_abort(qpx);
	/* Completing it on a RESET QP fails. */
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_ud_addr(qpx, ah, 1, 0x11111111);
	ibv_wr_set_inline_data(qpx, "hello", 5);
	ASSERT_EQ(ibv_wr_complete(qpx), EINVAL);
	/* Inline data longer than max_inline_data. */
	{
		static char big[1024];

		ibv_wr_start(qpx);
		ibv_wr_send(qpx);
		ibv_wr_set_ud_addr(qpx, ah, 1, 0x11111111);
		ibv_wr_set_inline_data(qpx, big, sizeof(big));
		ASSERT_EQ(ibv_wr_complete(qpx), EINVAL);
	}

	/* Unsupported send ops are refused at create. */
	ia.send_ops_flags = IBV_QP_EX_WITH_TSO;
	errno = 0;
	ASSERT(!ibv_create_qp_ex(ctx, &ia));
	ASSERT_EQ(errno, EOPNOTSUPP);

	ASSERT_EQ(ibv_dealloc_pd(pd), EBUSY);
	ASSERT_EQ(ibv_destroy_ah(ah), 0);
	ASSERT_EQ(ibv_destroy_qp(qp), 0);
	ASSERT_EQ(ibv_destroy_cq(cq), 0);
	ASSERT_EQ(ibv_dealloc_pd(pd), 0);
	ASSERT_EQ(ibv_close_device(ctx), 0);
}

/* uroce's extensions on a QP: jumbo packets and selective repeat exclude
 * each other, UD has neither, bad arguments are EINVAL. */
static void t_qp_extensions(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct uroce_sr_params sp;
	struct ibv_qp *rc, *ud;
	uint32_t st = 99;

	ASSERT(pd && cq);
	rc = ibv_create_qp(pd, &ia);
	ia.qp_type = IBV_QPT_UD;
	ud = ibv_create_qp(pd, &ia);
	ASSERT(rc && ud);
	ASSERT_EQ(uroce_qp_query_jumbo(rc, &st), 0);
	/* UROCE_JUMBO unset here: negotiated (bits 0 and 3) where the
	 * device's link carries them (loopback), else off. */
	ASSERT(st == 0 || st == 9);
	ASSERT_EQ(uroce_qp_set_jumbo(rc, 3), EINVAL);
	ASSERT_EQ(uroce_qp_set_jumbo(rc, -1), EINVAL);
	ASSERT_EQ(uroce_qp_set_jumbo(rc, 2), 0);
	ASSERT_EQ(uroce_qp_query_jumbo(rc, &st), 0);
	ASSERT_EQ(st, 9);
	ASSERT_EQ(uroce_qp_set_jumbo(NULL, 1), EINVAL);
	ASSERT_EQ(uroce_qp_query_jumbo(rc, NULL), EINVAL);
	ASSERT_EQ(uroce_qp_set_jumbo(ud, 1), EINVAL);
	ASSERT_EQ(uroce_qp_set_jumbo(rc, 1), 0);
	ASSERT_EQ(uroce_qp_query_jumbo(rc, &st), 0);
	ASSERT_EQ(st, 1); /* enabled; the peer has not said anything */
	/* Selective repeat and jumbo packets go together. */
	ASSERT_EQ(uroce_qp_query_sr(rc, &sp, NULL), 0);
	sp.enable = 1;
	ASSERT_EQ(uroce_qp_set_sr(rc, &sp), 0);
	ASSERT_EQ(uroce_qp_set_jumbo(rc, 0), 0);
	ASSERT_EQ(uroce_qp_set_sr(rc, &sp), 0);
	ASSERT_EQ(uroce_qp_set_jumbo(rc, 1), 0);
	ASSERT_EQ(ibv_destroy_qp(ud), 0);
	ASSERT_EQ(ibv_destroy_qp(rc), 0);
	ASSERT_EQ(ibv_destroy_cq(cq), 0);
	ASSERT_EQ(ibv_dealloc_pd(pd), 0);
	ASSERT_EQ(ibv_close_device(ctx), 0);
}

/* XRC domains, XRC SRQs, TGT QPs and ibv_open_qp: the checks that do
 * not need traffic (pyverbs' XRC tests and tests/transport/test_xrc.c
 * move data). */
static void t_xrc(void)
{
	struct ibv_context *ctx = open_ctx();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_srq_init_attr_ex sa = { .attr = { .max_wr = 4, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE,
		.srq_type = IBV_SRQT_XRC, .pd = pd };
	struct ibv_xrcd_init_attr xa = { 0 };
	struct ibv_xrcd *x, *x1, *x2;
	struct ibv_srq *srq, *basic;
	struct ibv_qp_init_attr_ex qa = { .qp_type = IBV_QPT_XRC_RECV,
					  .comp_mask = IBV_QP_INIT_ATTR_XRCD };
	struct ibv_qp_open_attr oa = { 0 };
	struct ibv_qp *tgt, *again;
	char path[] = "/tmp/uroce_xrcd_XXXXXX";
	uint32_t n = 0;
	int fd;

	ASSERT(pd && cq);
	/* An XRC SRQ needs its domain and CQ. */
	errno = 0;
	ASSERT(!ibv_create_srq_ex(ctx, &sa));
	ASSERT_EQ(errno, EINVAL);
	/* A private domain (no file). */
	x = ibv_open_xrcd(ctx, &xa);
	ASSERT(x);
	sa.comp_mask |= IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	sa.xrcd = x;
	sa.cq = cq;
	srq = ibv_create_srq_ex(ctx, &sa);
	ASSERT(srq);
	ASSERT_EQ(ibv_get_srq_num(srq, &n), 0);
	ASSERT(n != 0 && n <= 0xffffff);
	basic = ibv_create_srq(pd, &(struct ibv_srq_init_attr){
					   .attr = { .max_wr = 1, .max_sge = 1 } });
	ASSERT(basic);
	ASSERT_EQ(ibv_get_srq_num(basic, &n), EINVAL);
	ASSERT_EQ(ibv_close_xrcd(x), EBUSY);   /* the SRQ is in it */
	ASSERT_EQ(ibv_destroy_cq(cq), EBUSY);  /* the SRQ completes on it */
	/* A TGT QP: no PD, queue or CQ; found again by ibv_open_qp. */
	qa.xrcd = x;
	tgt = ibv_create_qp_ex(ctx, &qa);
	ASSERT(tgt);
	ASSERT_EQ(ibv_post_recv(tgt, &(struct ibv_recv_wr){ 0 },
				&(struct ibv_recv_wr *){ NULL }), EINVAL);
	oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
		       IBV_QP_OPEN_ATTR_TYPE;
	oa.qp_num = tgt->qp_num;
	oa.xrcd = x;
	oa.qp_type = IBV_QPT_RC;
	errno = 0;
	ASSERT(!ibv_open_qp(ctx, &oa));
	ASSERT_EQ(errno, EINVAL);
	oa.qp_type = IBV_QPT_XRC_RECV;
	oa.qp_num = tgt->qp_num ^ 1;
	errno = 0;
	ASSERT(!ibv_open_qp(ctx, &oa));
	ASSERT_EQ(errno, ENOENT);
	oa.qp_num = tgt->qp_num;
	again = ibv_open_qp(ctx, &oa);
	ASSERT(again == tgt);
	ASSERT_EQ(ibv_destroy_qp(again), 0); /* the opened handle */
	ASSERT_EQ(ibv_destroy_qp(tgt), 0);   /* the QP */
	ASSERT_EQ(ibv_destroy_srq(srq), 0);
	ASSERT_EQ(ibv_destroy_srq(basic), 0);
	ASSERT_EQ(ibv_close_xrcd(x), 0);
	/* Domains by file: O_CREAT makes, a second open shares, O_EXCL
	 * refuses an existing one, no O_CREAT finds none that is absent. */
	fd = mkstemp(path);
	ASSERT(fd >= 0);
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = fd;
	xa.oflags = 0;
	errno = 0;
	ASSERT(!ibv_open_xrcd(ctx, &xa));
	ASSERT_EQ(errno, ENOENT);
	xa.oflags = O_CREAT;
	x1 = ibv_open_xrcd(ctx, &xa);
	ASSERT(x1);
	xa.oflags = O_CREAT | O_EXCL;
	errno = 0;
	ASSERT(!ibv_open_xrcd(ctx, &xa));
	ASSERT_EQ(errno, EEXIST);
	xa.oflags = 0;
	x2 = ibv_open_xrcd(ctx, &xa);
	ASSERT(x2 && x2 != x1);
	xa.oflags = O_TRUNC;
	errno = 0;
	ASSERT(!ibv_open_xrcd(ctx, &xa));
	ASSERT_EQ(errno, EINVAL);
	ASSERT_EQ(ibv_close_xrcd(x1), 0);
	ASSERT_EQ(ibv_close_xrcd(x2), 0);
	xa.oflags = 0; /* the last close ended the domain */
	errno = 0;
	ASSERT(!ibv_open_xrcd(ctx, &xa));
	ASSERT_EQ(errno, ENOENT);
	close(fd);
	unlink(path);
	ASSERT_EQ(ibv_destroy_cq(cq), 0);
	ASSERT_EQ(ibv_dealloc_pd(pd), 0);
	ASSERT_EQ(ibv_close_device(ctx), 0);
}

static const struct ur_test_case tests[] = {
	{ "device_list", t_device_list },
	{ "query", t_query },
	{ "pd_mr", t_pd_mr },
	{ "cq", t_cq },
	{ "cq_ex", t_cq_ex },
	{ "qp_errors", t_qp_errors },
	{ "qp_ex_and_ud", t_qp_ex_and_ud },
	{ "qp_extensions", t_qp_extensions },
	{ "xrc", t_xrc },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	/* Before the first verbs call: the device list is built once. */
	setenv("UROCE_IP", "127.0.0.5", 1);
	return ur_test_main(argc, argv, tests);
}

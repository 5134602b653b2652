// SPDX-License-Identifier: MIT
/*
 * The iWARP device at the verbs level, without rdma_cm (UROCE_IWARP=1 and
 * UROCE_IP set by ctest): two RC QPs of one context joined by a TCP
 * connection over loopback through the uroce_iw_connect/uroce_iw_accept
 * hooks that our librdmacm uses (include/uroce/uroce.h), the Request
 * read off the socket by hand as rdma_cm's listener reads it. Checks:
 *  - the device is IBV_TRANSPORT_IWARP / IBV_NODE_RNIC with siw's limits
 *    (no atomics, max_sge_rd 1, READ depth 128); UD, UC and XRC QPs,
 *    SRQs and memory windows are refused with EOPNOTSUPP, ibv_modify_qp
 *    to RTS with EINVAL;
 *  - receives posted before the connection are kept; both sides hear
 *    ESTABLISHED, the initiator with the accept's private data;
 *  - SEND (solicited), WRITE 1 MiB and READ 1 MiB (one SGE) land with the
 *    right content and completions, in both directions;
 *  - WRITE_WITH_IMM, SEND_WITH_IMM and atomics are EOPNOTSUPP, a READ with
 *    two SGEs EINVAL;
 *  - a WRITE to a bad STag is Terminated: the writer's QP errs, its later
 *    WQEs flush, and both sides hear the stream end;
 *  - uroce_iw_disconnect: the other side hears DISCONNECTED.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uroce/uroce.h>

#include "ur_test.h"

#define BIG (1u << 20)
#define ACC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	     IBV_ACCESS_REMOTE_READ)

struct side {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	atomic_int ev[4];
	char pd[64];
	size_t pd_len;
	pthread_mutex_t lock;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct side A, B;

static void news(void *arg, enum uroce_iw_event ev, int err, const void *p,
		 size_t len)
{
	struct side *s = arg;

	(void)err;
	pthread_mutex_lock(&s->lock);
	if (len && len < sizeof(s->pd)) {
		memcpy(s->pd, p, len);
		s->pd_len = len;
	}
	pthread_mutex_unlock(&s->lock);
	atomic_fetch_add(&s->ev[ev], 1);
}

static void wait_ev(struct side *s, enum uroce_iw_event ev)
{
	for (int i = 0; i < 20000 && !atomic_load(&s->ev[ev]); i++)
		usleep(1000);
	ASSERT(atomic_load(&s->ev[ev]) > 0);
}

static void side_init(struct side *s)
{
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64,
			 .max_send_sge = 2, .max_recv_sge = 1 },
	};

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	ASSERT(s->cq);
	a.send_cq = a.recv_cq = s->cq;
	s->qp = ibv_create_qp(pd, &a);
	ASSERT(s->qp);
	s->buf = calloc(1, 4 * BIG);
	ASSERT(s->buf);
	s->mr = ibv_reg_mr(pd, s->buf, 4 * BIG, ACC);
	ASSERT(s->mr);
}

static void side_fini(struct side *s)
{
	ASSERT_EQ(ibv_destroy_qp(s->qp), 0);
	ASSERT_EQ(ibv_dereg_mr(s->mr), 0);
	ASSERT_EQ(ibv_destroy_cq(s->cq), 0);
	free(s->buf);
	pthread_mutex_destroy(&s->lock);
}

static struct ibv_wc poll1(struct side *s)
{
	struct ibv_wc wc;

	for (long i = 0; i < 200000000; i++) {
		int n = ibv_poll_cq(s->cq, 1, &wc);

		ASSERT(n >= 0);
		if (n)
			return wc;
		if (i > 1000)
			usleep(100);
	}
	UR_FAIL("no completion");
	return wc;
}

static int post(struct side *s, enum ibv_wr_opcode op, uint64_t wr_id,
		size_t off, uint32_t len, uint64_t raddr, uint32_t rkey,
		unsigned int flags)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + off, len, s->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED | flags,
	}, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	return ibv_post_send(s->qp, &wr, &bad);
}

static void post_recv(struct side *s, uint64_t wr_id, size_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + off, len, s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	ASSERT_EQ(ibv_post_recv(s->qp, &wr, &bad), 0);
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131 + seed + (i >> 12));
}

/* Connect A (initiator) to B over a TCP connection on UROCE_IP. */
static void connect_pair(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int l, c, a;
	uint8_t req[600];
	size_t have = 0, want = 20;

	inet_pton(AF_INET, getenv("UROCE_IP"), &sa.sin_addr);
	l = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT(l >= 0);
	ASSERT_EQ(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ASSERT_EQ(listen(l, 1), 0);
	ASSERT_EQ(getsockname(l, (struct sockaddr *)&sa, &sl), 0);
	c = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_EQ(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	a = accept(l, NULL, NULL);
	ASSERT(a >= 0);
	close(l);
	ASSERT_EQ(uroce_iw_connect(A.qp, c, "hello", 5, 16, 16, news, &A), 0);
	/* The Request: 20 bytes, then PD_Length (bytes 18..19) more. */
	while (have < want) {
		ssize_t r = read(a, req + have, want - have);

		ASSERT(r > 0);
		have += (size_t)r;
		if (have == 20)
			want = 20 + ((size_t)req[18] << 8 | req[19]);
		ASSERT(want <= sizeof(req));
	}
	ASSERT(!memcmp(req, "MPA ID Req Frame", 16));
	ASSERT_EQ(want, 20 + 4 + 5); /* the RFC 6581 word, then "hello" */
	ASSERT(!memcmp(req + 24, "hello", 5));
	ASSERT_EQ(uroce_iw_accept(B.qp, a, req, have, "world!", 6, 16, 16,
				  news, &B), 0);
	wait_ev(&A, UROCE_IW_ESTABLISHED);
	wait_ev(&B, UROCE_IW_ESTABLISHED);
	ASSERT_EQ(A.pd_len, 6);
	ASSERT(!memcmp(A.pd, "world!", 6));
}

static void test_device(void)
{
	struct ibv_device_attr da;
	struct ibv_qp_init_attr ud = {
		.qp_type = IBV_QPT_UD, .cap = { 1, 1, 1, 1, 0 },
	};
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RTS };

	ASSERT_EQ(ctx->device->transport_type, IBV_TRANSPORT_IWARP);
	ASSERT_EQ(ctx->device->node_type, IBV_NODE_RNIC);
	ASSERT_EQ(ibv_query_device(ctx, &da), 0);
	ASSERT_EQ(da.atomic_cap, IBV_ATOMIC_NONE);
	ASSERT_EQ(da.max_sge_rd, 1);
	ASSERT_EQ(da.max_qp_rd_atom, 128);
	ASSERT_EQ(da.max_srq, 0);
	ud.send_cq = ud.recv_cq = A.cq;
	errno = 0;
	ASSERT(!ibv_create_qp(pd, &ud));
	ASSERT_EQ(errno, EOPNOTSUPP);
	ud.qp_type = IBV_QPT_UC;
	errno = 0;
	ASSERT(!ibv_create_qp(pd, &ud));
	ASSERT_EQ(errno, EOPNOTSUPP);
	ASSERT_EQ(ibv_modify_qp(A.qp, &qa, IBV_QP_STATE), EINVAL);
	{
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };

		errno = 0;
		ASSERT(!ibv_create_srq(pd, &sa));
		ASSERT_EQ(errno, EOPNOTSUPP);
		errno = 0;
		ASSERT(!ibv_alloc_mw(pd, IBV_MW_TYPE_2));
		ASSERT_EQ(errno, EOPNOTSUPP);
		ud.qp_type = IBV_QPT_XRC_SEND;
		errno = 0;
		ASSERT(!ibv_create_qp(pd, &ud));
		ASSERT_EQ(errno, EOPNOTSUPP);
	}
}

static void test_ops(void)
{
	struct ibv_wc wc;

	/* Receives before the connection are kept (rping posts one). */
	post_recv(&B, 100, 3 * BIG, 4096);
	post_recv(&A, 200, 3 * BIG, 4096);
	connect_pair();
	/* SEND, solicited, each way. */
	fill(A.buf, 3000, 1);
	ASSERT_EQ(post(&A, IBV_WR_SEND, 1, 0, 3000, 0, 0, IBV_SEND_SOLICITED), 0);
	wc = poll1(&A);
	ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
	ASSERT_EQ(wc.wr_id, 1);
	wc = poll1(&B);
	ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
	ASSERT_EQ(wc.wr_id, 100);
	ASSERT_EQ(wc.opcode, IBV_WC_RECV);
	ASSERT_EQ(wc.byte_len, 3000);
	ASSERT_MEM_EQ(B.buf + 3 * BIG, A.buf, 3000);
	fill(B.buf, 77, 2);
	ASSERT_EQ(post(&B, IBV_WR_SEND, 2, 0, 77, 0, 0, 0), 0);
	ASSERT_EQ(poll1(&B).status, IBV_WC_SUCCESS);
	wc = poll1(&A);
	ASSERT_EQ(wc.wr_id, 200);
	ASSERT_EQ(wc.byte_len, 77);
	ASSERT_MEM_EQ(A.buf + 3 * BIG, B.buf, 77);
	/* WRITE 1 MiB A -> B, READ 1 MiB of B's into A. */
	fill(A.buf, BIG, 3);
	fill(B.buf + 2 * BIG, BIG, 4);
	ASSERT_EQ(post(&A, IBV_WR_RDMA_WRITE, 3, 0, BIG,
		       (uintptr_t)B.buf + BIG, B.mr->rkey, 0), 0);
	ASSERT_EQ(post(&A, IBV_WR_RDMA_READ, 4, BIG, BIG,
		       (uintptr_t)B.buf + 2 * BIG, B.mr->rkey, 0), 0);
	wc = poll1(&A);
	ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
	ASSERT_EQ(wc.wr_id, 3);
	wc = poll1(&A);
	ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
	ASSERT_EQ(wc.wr_id, 4);
	ASSERT_EQ(wc.opcode, IBV_WC_RDMA_READ);
	ASSERT_MEM_EQ(B.buf + BIG, A.buf, BIG);
	ASSERT_MEM_EQ(A.buf + BIG, B.buf + 2 * BIG, BIG);
	/* The other way: B WRITEs into A, READs A's. */
	fill(B.buf, BIG, 5);
	ASSERT_EQ(post(&B, IBV_WR_RDMA_WRITE, 5, 0, BIG,
		       (uintptr_t)A.buf + 2 * BIG, A.mr->rkey, 0), 0);
	ASSERT_EQ(post(&B, IBV_WR_RDMA_READ, 6, BIG, 4096,
		       (uintptr_t)A.buf + 2 * BIG, A.mr->rkey, 0), 0);
	ASSERT_EQ(poll1(&B).wr_id, 5);
	ASSERT_EQ(poll1(&B).wr_id, 6);
	ASSERT_MEM_EQ(A.buf + 2 * BIG, B.buf, BIG);
	ASSERT_MEM_EQ(B.buf + BIG, B.buf, 4096);
	/* No iWARP wire form: refused at posting. */
	ASSERT_EQ(post(&A, IBV_WR_RDMA_WRITE_WITH_IMM, 7, 0, 8,
		       (uintptr_t)B.buf, B.mr->rkey, 0), EOPNOTSUPP);
	ASSERT_EQ(post(&A, IBV_WR_SEND_WITH_IMM, 7, 0, 8, 0, 0, 0), EOPNOTSUPP);
	ASSERT_EQ(post(&A, IBV_WR_ATOMIC_FETCH_AND_ADD, 7, 0, 8,
		       (uintptr_t)B.buf, B.mr->rkey, 0), EOPNOTSUPP);
	ASSERT_EQ(post(&A, IBV_WR_ATOMIC_CMP_AND_SWP, 7, 0, 8,
		       (uintptr_t)B.buf, B.mr->rkey, 0), EOPNOTSUPP);
	{
		struct ibv_sge sg[2] = {
			{ (uintptr_t)A.buf, 8, A.mr->lkey },
			{ (uintptr_t)A.buf + 8, 8, A.mr->lkey },
		};
		struct ibv_send_wr wr = {
			.wr_id = 8, .sg_list = sg, .num_sge = 2,
			.opcode = IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		wr.wr.rdma.remote_addr = (uintptr_t)B.buf;
		wr.wr.rdma.rkey = B.mr->rkey;
		ASSERT_EQ(ibv_post_send(A.qp, &wr, &bad), EINVAL);
	}
}

static void test_terminate(void)
{
	struct ibv_wc wc;

	/* A bad STag: B Terminates, A's QP errs; later WQEs flush. */
	ASSERT_EQ(post(&A, IBV_WR_RDMA_WRITE, 10, 0, 64, 0x1000,
		       B.mr->rkey ^ 0x5a5a00, 0), 0);
	wc = poll1(&A);
	ASSERT_EQ(wc.wr_id, 10);
	/* The WRITE left (it completes when TCP took it, as siw); the
	 * Terminate comes back and errs A's QP. */
	for (int i = 0; i < 20000 && atomic_load(&A.ev[UROCE_IW_DISCONNECTED]) +
	     atomic_load(&B.ev[UROCE_IW_DISCONNECTED]) < 2; i++)
		usleep(1000);
	ASSERT_EQ(atomic_load(&A.ev[UROCE_IW_DISCONNECTED]), 1);
	ASSERT_EQ(atomic_load(&B.ev[UROCE_IW_DISCONNECTED]), 1);
	ASSERT_EQ(post(&A, IBV_WR_SEND, 11, 0, 8, 0, 0, 0), 0);
	wc = poll1(&A);
	ASSERT_EQ(wc.wr_id, 11);
	ASSERT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
}

/* Async events waiting on the context within @ms (each acknowledged). */
static int async_events(int ms)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int n = 0;

	while (poll(&p, 1, ms) == 1 && !ibv_get_async_event(ctx, &ev)) {
		ibv_ack_async_event(&ev);
		n++;
		ms = 0;
	}
	return n;
}

static void test_disconnect(void)
{
	/* A fresh pair; A disconnects, B hears it, then A does too. */
	side_fini(&A);
	side_fini(&B);
	side_init(&A);
	side_init(&B);
	connect_pair();
	async_events(0); /* the Terminate test's QP_FATALs */
	ASSERT_EQ(uroce_iw_disconnect(A.qp), 0);
	wait_ev(&B, UROCE_IW_DISCONNECTED);
	ASSERT_EQ(uroce_iw_disconnect(B.qp), 0);
	wait_ev(&A, UROCE_IW_DISCONNECTED);
	ASSERT_EQ(atomic_load(&A.ev[UROCE_IW_FAILED]), 0);
	ASSERT_EQ(atomic_load(&B.ev[UROCE_IW_FAILED]), 0);
	/* an orderly end raises no async event (siw_qp_llp_close) */
	ASSERT_EQ(async_events(100), 0);
}

static void setup(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);

	ASSERT(l && l[0]);
	ctx = ibv_open_device(l[0]);
	ASSERT(ctx);
	ibv_free_device_list(l);
	pd = ibv_alloc_pd(ctx);
	ASSERT(pd);
	side_init(&A);
	side_init(&B);
}

static void test_all(void)
{
	setup();
	test_device();
	test_ops();
	test_terminate();
	test_disconnect();
	side_fini(&A);
	side_fini(&B);
	ASSERT_EQ(ibv_dealloc_pd(pd), 0);
	ASSERT_EQ(ibv_close_device(ctx), 0);
}

static const struct ur_test_case tests[] = {
	{"iw_verbs", test_all},
	{NULL, NULL},
};

UR_TEST_MAIN(tests)

// SPDX-License-Identifier: MIT
/*
 * tclass-sched: traffic classes under a device rate limit (issue 45,
 * docs/ports-classes.md), with plain verbs in one process and one device
 * context, so that every QP shares the context's UROCE_RATE_LIMIT_MBPS.
 *
 *   tclass-sched lat [-n PINGS] [-b BULK_TC] [-p PING_TC] [-z SIZE]
 *     A ping-pong (SEND of 64 bytes each way, one thread playing both
 *     ends, spinning) on a QP pair with traffic class PING_TC, first
 *     alone, then next to a bulk RDMA WRITE stream (SIZE per WRITE, 48
 *     outstanding, its own thread) on a pair with BULK_TC. Prints
 *     "idle_p50 idle_p99 load_p50 load_p99 bulk_gbps" (round trips, us).
 *   tclass-sched share [-s SECS] [-a TC_A] [-c TC_B] [-z SIZE]
 *     Two bulk WRITE streams, pairs with classes TC_A and TC_B, driven by
 *     one thread. Prints "a_gbps b_gbps a/b" over SECS after a warm-up.
 *
 * The traffic class is the GRH one (the IP TOS byte): DSCP 46 is 184.
 * With UROCE_TC_STRICT / UROCE_TC_WEIGHTS the device schedules the
 * classes; without, they share the limit's one bucket.
 */
#include <getopt.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define BULK_DEPTH 48
#define BUF_BYTES (4u << 20)

struct end {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char *buf;
	int unreaped;
};

struct pair {
	struct end a, b; /* a sends (WRITEs, pings), b answers */
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;

static void die(const char *what)
{
	fprintf(stderr, "tclass-sched: %s failed\n", what);
	exit(1);
}

static void end_init(struct end *e, struct ibv_comp_channel *ch)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	e->cq = ibv_create_cq(ctx, 256, NULL, ch, 0);
	if (!e->cq)
		die("ibv_create_cq");
	ia.send_cq = ia.recv_cq = e->cq;
	e->qp = ibv_create_qp(pd, &ia);
	e->buf = aligned_alloc(4096, BUF_BYTES);
	if (!e->qp || !e->buf)
		die("ibv_create_qp");
	memset(e->buf, 1, BUF_BYTES);
	e->mr = ibv_reg_mr(pd, e->buf, BUF_BYTES,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!e->mr)
		die("ibv_reg_mr");
}

/* INIT, RTR, RTS towards @dqpn of this device, GRH traffic class @tc. */
static void end_connect(struct end *e, uint32_t dqpn, uint8_t tc)
{
	struct ibv_qp_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	qa.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(e->qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("INIT");
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = IBV_MTU_4096;
	qa.dest_qp_num = dqpn;
	qa.rq_psn = 1;
	qa.max_dest_rd_atomic = 1;
	qa.min_rnr_timer = 1;
	qa.ah_attr.is_global = 1;
	qa.ah_attr.port_num = 1;
	qa.ah_attr.grh.hop_limit = 1;
	qa.ah_attr.grh.traffic_class = tc;
	if (ibv_query_gid(ctx, 1, 0, &qa.ah_attr.grh.dgid))
		die("ibv_query_gid");
	if (ibv_modify_qp(e->qp, &qa, IBV_QP_STATE | IBV_QP_AV |
			  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	qa.timeout = 14;
	qa.retry_cnt = 7;
	qa.rnr_retry = 7;
	qa.sq_psn = 1;
	qa.max_rd_atomic = 1;
	if (ibv_modify_qp(e->qp, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
}

static void pair_init(struct pair *p, uint8_t tc, struct ibv_comp_channel *ch)
{
	end_init(&p->a, ch);
	end_init(&p->b, NULL);
	end_connect(&p->a, p->b.qp->qp_num, tc);
	end_connect(&p->b, p->a.qp->qp_num, tc);
}

/* ---- bulk ---------------------------------------------------------------- */
struct bulk {
	struct pair p;
	uint32_t size;
	unsigned int next; /* slot of the next WRITE */
	int outstanding;
	_Atomic uint64_t bytes; /* completed */
	struct ibv_comp_channel *ch; /* lat: the bulk thread sleeps on it */
};

static void bulk_post(struct bulk *k)
{
	uint32_t off = (k->next++ % (BUF_BYTES / k->size)) * k->size;
	struct ibv_sge sge = { (uintptr_t)k->p.a.buf + off, k->size,
			       k->p.a.mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)k->p.b.buf + off, k->p.b.mr->rkey },
	}, *bad;

	if (ibv_post_send(k->p.a.qp, &wr, &bad))
		die("ibv_post_send (WRITE)");
	k->outstanding++;
}

/* Keep BULK_DEPTH WRITEs outstanding; false once none is left after stop. */
static bool bulk_step(struct bulk *k, bool stop)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(k->p.a.cq, 16, wc);

	if (n < 0)
		die("ibv_poll_cq");
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "tclass-sched: WRITE: %s\n",
				ibv_wc_status_str(wc[i].status));
			exit(1);
		}
		k->outstanding--;
		atomic_fetch_add(&k->bytes, k->size);
	}
	while (!stop && k->outstanding < BULK_DEPTH)
		bulk_post(k);
	/* The answering end has nothing to poll (WRITEs complete there
	 * silently), but its CQ is polled so that its engine work runs. */
	ibv_poll_cq(k->p.b.cq, 16, wc);
	return k->outstanding > 0;
}

static atomic_bool bulk_stop;

/* The bulk thread sleeps on its completion channel between completions
 * (the engine thread sends for it meanwhile): a spinning one would take a
 * CPU from the ping-pong, which no scheduler of packets can give back on
 * a 2-CPU machine. */
static void *bulk_thread(void *arg)
{
	struct bulk *k = arg;
	struct ibv_cq *cq;
	void *cctx;

	while (bulk_step(k, atomic_load(&bulk_stop))) {
		if (ibv_req_notify_cq(k->p.a.cq, 0))
			die("ibv_req_notify_cq");
		if (bulk_step(k, atomic_load(&bulk_stop)) &&
		    !atomic_load(&bulk_stop)) {
			if (ibv_get_cq_event(k->ch, &cq, &cctx))
				die("ibv_get_cq_event");
			ibv_ack_cq_events(cq, 1);
		}
	}
	return NULL;
}

/* ---- ping-pong ------------------------------------------------------------ */
static void post_recv(struct end *e)
{
	struct ibv_sge sge = { (uintptr_t)e->buf, 64, e->mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(e->qp, &wr, &bad))
		die("ibv_post_recv");
}

static void post_send64(struct end *e)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + 4096, 64, e->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (ibv_post_send(e->qp, &wr, &bad))
		die("ibv_post_send (SEND)");
	e->unreaped++;
}

/* Spin until a receive completes, reaping send completions on the way. */
static void wait_recv(struct end *e)
{
	struct ibv_wc wc[8];

	for (;;) {
		int n = ibv_poll_cq(e->cq, 8, wc);
		bool got = false;

		if (n < 0)
			die("ibv_poll_cq");
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "tclass-sched: SEND: %s\n",
					ibv_wc_status_str(wc[i].status));
				exit(1);
			}
			if (wc[i].opcode == IBV_WC_RECV)
				got = true;
			else
				e->unreaped--;
		}
		if (got)
			return;
	}
}

/* @n round trips into @rtt (us), sorted. */
static void pingpong(struct pair *p, int n, double *rtt)
{
	for (int i = 0; i < n; i++) {
		double t0 = bench_now_us();

		post_send64(&p->a);
		wait_recv(&p->b);
		post_recv(&p->b);
		post_send64(&p->b);
		wait_recv(&p->a);
		post_recv(&p->a);
		rtt[i] = bench_now_us() - t0;
	}
	qsort(rtt, (size_t)n, sizeof(*rtt), bench_cmp_dbl);
}

static double pct(const double *v, int n, double q)
{
	int i = (int)(q * (n - 1) + 0.5);

	return v[i];
}

static void open_dev(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	if (!list || !list[0])
		die("ibv_get_device_list (no device)");
	ctx = ibv_open_device(list[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd)
		die("ibv_open_device");
	ibv_free_device_list(list);
}

static int run_lat(int n, uint8_t bulk_tc, uint8_t ping_tc, uint32_t size)
{
	static struct bulk k;
	struct pair ping;
	double *idle = calloc((size_t)n, sizeof(double));
	double *load = calloc((size_t)n, sizeof(double));
	double t0, t1;
	uint64_t b0, b1;
	pthread_t th;

	if (!idle || !load)
		die("calloc");
	open_dev();
	pair_init(&ping, ping_tc, NULL);
	k.size = size;
	k.ch = ibv_create_comp_channel(ctx);
	if (!k.ch)
		die("ibv_create_comp_channel");
	pair_init(&k.p, bulk_tc, k.ch);
	for (int i = 0; i < 16; i++) {
		post_recv(&ping.a);
		post_recv(&ping.b);
	}
	pingpong(&ping, n / 10 + 1, idle); /* warm-up */
	pingpong(&ping, n, idle);
	if (pthread_create(&th, NULL, bulk_thread, &k))
		die("pthread_create");
	/* Past the first burst of the limit's bucket. */
	t0 = bench_now_us();
	while (bench_now_us() - t0 < 300000)
		;
	b0 = atomic_load(&k.bytes);
	t0 = bench_now_us();
	pingpong(&ping, n, load);
	t1 = bench_now_us();
	b1 = atomic_load(&k.bytes);
	atomic_store(&bulk_stop, true);
	pthread_join(th, NULL);
	printf("%.1f %.1f %.1f %.1f %.3f\n", pct(idle, n, 0.5),
	       pct(idle, n, 0.99), pct(load, n, 0.5), pct(load, n, 0.99),
	       (double)(b1 - b0) * 8 / (t1 - t0) / 1e3);
	return 0;
}

static int run_share(double secs, uint8_t tc_a, uint8_t tc_b, uint32_t size)
{
	static struct bulk a, b;
	double t0, t1;
	uint64_t a0, b0, a1, b1;

	open_dev();
	a.size = b.size = size;
	pair_init(&a.p, tc_a, NULL);
	pair_init(&b.p, tc_b, NULL);
	t0 = bench_now_us();
	while (bench_now_us() - t0 < 500000) {
		bulk_step(&a, false);
		bulk_step(&b, false);
	}
	a0 = atomic_load(&a.bytes);
	b0 = atomic_load(&b.bytes);
	t0 = bench_now_us();
	do {
		bulk_step(&a, false);
		bulk_step(&b, false);
		t1 = bench_now_us();
	} while (t1 - t0 < secs * 1e6);
	a1 = atomic_load(&a.bytes);
	b1 = atomic_load(&b.bytes);
	while (bulk_step(&a, true) | bulk_step(&b, true))
		;
	printf("%.3f %.3f %.3f\n", (double)(a1 - a0) * 8 / (t1 - t0) / 1e3,
	       (double)(b1 - b0) * 8 / (t1 - t0) / 1e3,
	       (double)(a1 - a0) / (double)(b1 - b0 ? b1 - b0 : 1));
	return 0;
}

int main(int argc, char **argv)
{
	int n = 2000, c;
	double secs = 3;
	unsigned long bulk_tc = 0, ping_tc = 184, tc_a = 0, tc_b = 32;
	uint32_t size = 65536;

	if (argc < 2 || (strcmp(argv[1], "lat") && strcmp(argv[1], "share"))) {
		fprintf(stderr, "usage: tclass-sched lat|share [options]\n");
		return 2;
	}
	optind = 2;
	while ((c = getopt(argc, argv, "n:b:p:z:s:a:c:")) != -1) {
		switch (c) {
		case 'n': n = atoi(optarg); break;
		case 'b': bulk_tc = strtoul(optarg, NULL, 0); break;
		case 'p': ping_tc = strtoul(optarg, NULL, 0); break;
		case 'z': size = (uint32_t)bench_parse_size(optarg); break;
		case 's': secs = atof(optarg); break;
		case 'a': tc_a = strtoul(optarg, NULL, 0); break;
		case 'c': tc_b = strtoul(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (n < 10 || !size || size > BUF_BYTES || BUF_BYTES % size)
		die("arguments");
	if (!strcmp(argv[1], "lat"))
		return run_lat(n, (uint8_t)bulk_tc, (uint8_t)ping_tc, size);
	return run_share(secs, (uint8_t)tc_a, (uint8_t)tc_b, size);
}

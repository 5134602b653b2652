// SPDX-License-Identifier: MIT
/*
 * idle-cpu: what an idle device context costs (issue 5: under 1 % of a core).
 *
 * Opens the first device, connects PAIRS pairs of RC QPs to each other,
 * sends MSGS messages each way on every pair (so that ACKs, timers and
 * counters have been used), then leaves everything open and idle for
 * SECONDS while the application waits: asleep (default), or with -e
 * blocked in poll() on an armed completion channel, the way an
 * event-driven program waits. The process's CPU time over that window
 * (every thread: the engine's included, from getrusage) is the cost.
 * With -p the application instead spins on ibv_poll_cq, as perftest does:
 * about 100 % (its own thread), which also shows that the figure counts.
 *
 *   idle-cpu [-q PAIRS] [-m MSGS] [-t SECONDS] [-e | -p]
 * Prints "cpu_pct_of_one_core context_switches_per_s".
 */
#include <getopt.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "rc_connect.h"

#define DEPTH 16

static void die(const char *what)
{
	fprintf(stderr, "idle-cpu: %s failed\n", what);
	exit(1);
}

static double mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_s(long *csw)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*csw = ru.ru_nvcsw + ru.ru_nivcsw;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void post_recv(struct ibv_qp *qp, struct ibv_mr *mr)
{
	struct ibv_sge sge = { (uintptr_t)mr->addr, 64, mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		die("ibv_post_recv");
}

static void post_send(struct ibv_qp *qp, struct ibv_mr *mr)
{
	struct ibv_sge sge = { (uintptr_t)mr->addr, 8, mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (ibv_post_send(qp, &wr, &bad))
		die("ibv_post_send");
}

/* Poll @cq until @n completions, all successful. */
static void reap(struct ibv_cq *cq, int n)
{
	struct ibv_wc wc[16];

	while (n > 0) {
		int got = ibv_poll_cq(cq, n < 16 ? n : 16, wc);

		if (got < 0)
			die("ibv_poll_cq");
		for (int i = 0; i < got; i++)
			if (wc[i].status != IBV_WC_SUCCESS)
				die("a completion");
		n -= got;
	}
}

int main(int argc, char **argv)
{
	int pairs = 8, msgs = 1000, opt, nqp;
	double secs = 5;
	bool event = false, spin = false;
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch = NULL;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp **qp;
	char *buf;

	while ((opt = getopt(argc, argv, "q:m:t:eph")) != -1) {
		switch (opt) {
		case 'q': pairs = atoi(optarg); break;
		case 'm': msgs = atoi(optarg); break;
		case 't': secs = atof(optarg); break;
		case 'e': event = true; break;
		case 'p': spin = true; break;
		default:
			fprintf(stderr, "usage: idle-cpu [-q PAIRS] [-m MSGS] "
				"[-t SECONDS] [-e | -p]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (pairs < 1 || pairs > 512 || msgs < 0 || secs <= 0 ||
	    (event && spin)) {
		fprintf(stderr, "idle-cpu: -q 1..512, -m >= 0, -t > 0, not both "
			"-e and -p\n");
		return 2;
	}
	nqp = 2 * pairs;
	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		die("ibv_get_device_list");
	ctx = ibv_open_device(list[0]);
	if (!ctx)
		die("ibv_open_device");
	pd = ibv_alloc_pd(ctx);
	if (event && !(ch = ibv_create_comp_channel(ctx)))
		die("ibv_create_comp_channel");
	cq = ibv_create_cq(ctx, 4 * DEPTH * nqp, NULL, ch, 0);
	buf = calloc(1, 4096);
	qp = calloc((size_t)nqp, sizeof(*qp));
	if (!pd || !cq || !buf || !qp)
		die("setup");
	mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	for (int i = 0; i < nqp; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qp[i] = ibv_create_qp(pd, &ia);
		if (!qp[i])
			die("ibv_create_qp");
	}
	for (int i = 0; i < nqp; i++) {
		struct urt_rc_conn c = { .dqpn = qp[i ^ 1]->qp_num, .psn = 0 };

		if (urt_rc_connect(ctx, qp[i], &c))
			die("connecting the QPs");
	}
	/* Traffic first: one message at a time each way on every QP. */
	for (int m = 0; m < msgs; m++) {
		for (int i = 0; i < nqp; i++)
			post_recv(qp[i], mr);
		for (int i = 0; i < nqp; i++)
			post_send(qp[i], mr);
		reap(cq, 2 * nqp);
	}
	/* A receive left posted on every QP, as a server's would be. */
	for (int i = 0; i < nqp; i++)
		post_recv(qp[i], mr);
	if (event && ibv_req_notify_cq(cq, 0))
		die("ibv_req_notify_cq");
	sleep(1); /* ACKs and timers of the traffic settle */

	long csw0, csw1;
	double c0 = cpu_s(&csw0), t0 = mono_s(), t1;

	if (event) {
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };

		if (poll(&p, 1, (int)(secs * 1000)) != 0)
			die("idle wait (an event came)");
	} else if (spin) {
		struct ibv_wc wc;

		while (mono_s() - t0 < secs)
			if (ibv_poll_cq(cq, 1, &wc) != 0)
				die("idle wait (a completion came)");
	} else {
		struct timespec ts = { (time_t)secs,
				       (long)((secs - (time_t)secs) * 1e9) };

		nanosleep(&ts, NULL);
	}
	t1 = mono_s();
	double c1 = cpu_s(&csw1);

	printf("%.3f %.1f\n", 100 * (c1 - c0) / (t1 - t0),
	       (double)(csw1 - csw0) / (t1 - t0));
	for (int i = 0; i < nqp; i++)
		ibv_destroy_qp(qp[i]);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	if (ch)
		ibv_destroy_comp_channel(ch);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(qp);
	free(buf);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * A poster streaming small WRITEs must not make the engine walk its QP
 * table per post (docs/engine.md, timers; counter eng_timer_walks).
 *
 * Every post that finds its QP fully acknowledged arms the retransmission
 * timer again. That used to mark the engine's timers dirty each time, and
 * the engine thread walked the QP table at each loop while a program
 * streamed: thousands of walks for a few thousand WRITEs. A timer armed no
 * later than the earliest deadline the engine knows needs no walk.
 *
 * The child (UROCE_STATS=1: the counters come out at close): two RC QPs
 * of one context, 40 000 WRITEs of 64 bytes from A to B, 64 outstanding,
 * one in 16 signalled, A's CQ polled when the window is full (about 1 s
 * under ASan). The parent prints the walks per 100 WRITEs: the due ones
 * are a retransmission deadline passing every 67 ms and the engine's
 * first scan (74-86 per run with the fix, release, quiet machine; 14-29
 * in dpath3's ASan runs). A benchmark, not a test:
 * the count depends on how often the engine thread runs beside the
 * poster, so on the machine's load (the fix made 521 walks in a CI run
 * under ASan beside other work; the old code 1249 in one run and 90 in
 * another). Run it as `build/bench/timer-walks` with UROCE_IP set (or under
 * uroce-run).
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rc_connect.h"

#define WRITES 40000
#define WINDOW 64
#define SIGNAL_EVERY 16

static void die(const char *what)
{
	fprintf(stderr, "timer-walks: %s failed\n", what);
	exit(1);
}

/* Reap one signalled WRITE (SIGNAL_EVERY of them). */
static void reap(struct urt_rc_end *a)
{
	struct ibv_wc wc;

	if (urt_poll_wait(a->cq, &wc, 10) != 1 ||
	    wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RDMA_WRITE)
		die("a WRITE completion");
}

static int child(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	struct urt_rc_end a, b;
	int out = 0;

	if (!pd)
		die("ibv_open_device");
	if (urt_rc_end_init(ctx, pd, &a, 2 * WINDOW, 1, 2 * WINDOW,
			    IBV_ACCESS_LOCAL_WRITE) ||
	    urt_rc_end_init(ctx, pd, &b, 1, 1, 4,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE))
		die("creating the QPs");
	if (urt_rc_connect(ctx, a.qp, &(struct urt_rc_conn){ .dqpn = b.qp->qp_num, .psn = 1, .rd_atomic = 1 }) ||
	    urt_rc_connect(ctx, b.qp, &(struct urt_rc_conn){ .dqpn = a.qp->qp_num, .psn = 1, .rd_atomic = 1,
							      .access = IBV_ACCESS_REMOTE_WRITE }))
		die("connecting the QPs");
	for (int i = 0; i < WRITES; i++) {
		struct ibv_sge sge = { (uintptr_t)a.buf, 64, a.mr->lkey };
		struct ibv_send_wr wr = {
			.sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = (i + 1) % SIGNAL_EVERY ? 0 : IBV_SEND_SIGNALED,
			.wr.rdma = { (uintptr_t)b.buf + (unsigned)(i % 64) * 64,
				     b.mr->rkey },
		}, *bad;

		if (out == WINDOW) {
			reap(&a);
			out -= SIGNAL_EVERY;
		}
		if (ibv_post_send(a.qp, &wr, &bad))
			die("ibv_post_send");
		out++;
	}
	for (; out > 0; out -= SIGNAL_EVERY)
		reap(&a);
	urt_rc_end_fini(&a);
	urt_rc_end_fini(&b);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx); /* prints the counters */
	ibv_free_device_list(list);
	return 0;
}

int main(int argc, char **argv)
{
	char out[8192];
	long walks, pkts;

	if (argc == 2 && !strcmp(argv[1], "--child"))
		return child();
	if (urt_child_counters("timer-walks", NULL, out, sizeof(out))) {
		fprintf(stderr, "child failed:\n%s", out);
		return 1;
	}
	walks = urt_counter(out, "eng_timer_walks");
	pkts = urt_counter(out, "tx_packets");
	printf("%d WRITEs: tx_packets %ld, eng_timer_walks %ld (%.2f per 100 WRITEs)\n",
	       WRITES, pkts, walks, 100.0 * (double)walks / WRITES);
	if (pkts < WRITES) {
		printf("the WRITEs were not all sent\n");
		return 1;
	}
	return 0;
}

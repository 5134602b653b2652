// SPDX-License-Identifier: MIT
/*
 * uroce_context_set_poller_stays (include/uroce/uroce.h): a poller that
 * comes back late after its completions hands the socket to the engine
 * thread at each completion (counter poll_handover), unless the program
 * said its pollers stay.
 *
 * Each run is a child process (so that its counters are its own) with
 * UROCE_STATS=1, which prints the device counters at close. The child: two
 * RC QPs of one context; 12 rounds of a SEND from A to B, A spinning on its
 * CQ until the SEND completes, then 50 us away from it (spinning on the
 * clock) and two empty polls: a late return (over 20 us), yet within the
 * 100 us for which the engine thread leaves the socket to a poller. From
 * the third late return on, each completion hands over. The parent checks
 * poll_handover > 0 by default, and 0 with the hint in a run with enough
 * late returns (poll_late) for a hand-over without it.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rc_connect.h"
#include "uroce/uroce.h"

#define ROUNDS 12
#define RUNS 20 /* attempts per case; see main() */

static void die(const char *what)
{
	fprintf(stderr, "test_poll_hint: %s failed\n", what);
	exit(1);
}

static void poll_one(struct urt_rc_end *s, enum ibv_wc_opcode op)
{
	struct ibv_wc wc;
	int n;

	do
		n = ibv_poll_cq(s->cq, 1, &wc);
	while (n == 0);
	if (n < 0 || wc.status != IBV_WC_SUCCESS || wc.opcode != op)
		die("a completion");
}

/* Away from the CQ for @ns without sleeping: a sleep of 50 us may last up
 * to 100 us (the default 50 us timer slack) plus its wake-up, near or past
 * the window in which the engine thread leaves the socket to the poller;
 * a run whose rounds all overshoot cannot hand over. */
static void away(long ns)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ns);
}

/* The child: the traffic pattern; the counters come out at close. */
static int child(int stays)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	struct urt_rc_end a, b;

	if (!pd)
		die("ibv_open_device");
	if (uroce_context_set_poller_stays(ctx, 2) != EINVAL ||
	    uroce_context_set_poller_stays(NULL, 1) != EINVAL ||
	    uroce_context_set_poller_stays(ctx, stays) != 0)
		die("uroce_context_set_poller_stays");
	if (urt_rc_end_init(ctx, pd, &a, 4, ROUNDS, 2 * ROUNDS,
			    IBV_ACCESS_LOCAL_WRITE) ||
	    urt_rc_end_init(ctx, pd, &b, 4, ROUNDS, 2 * ROUNDS,
			    IBV_ACCESS_LOCAL_WRITE))
		die("creating the QPs");
	if (urt_rc_connect(ctx, a.qp, &(struct urt_rc_conn){ .dqpn = b.qp->qp_num, .psn = 1, .rd_atomic = 1 }) ||
	    urt_rc_connect(ctx, b.qp, &(struct urt_rc_conn){ .dqpn = a.qp->qp_num, .psn = 1, .rd_atomic = 1 }))
		die("connecting the QPs");
	for (int i = 0; i < ROUNDS; i++) {
		struct ibv_sge sge = { (uintptr_t)b.buf, 64, b.mr->lkey };
		struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;

		if (ibv_post_recv(b.qp, &rwr, &rbad))
			die("ibv_post_recv");
	}
	for (int i = 0; i < ROUNDS; i++) {
		struct ibv_sge sge = { (uintptr_t)a.buf, 8, a.mr->lkey };
		struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		if (ibv_post_send(a.qp, &wr, &bad))
			die("ibv_post_send");
		poll_one(&a, IBV_WC_SEND); /* spins: the poller drains */
		poll_one(&b, IBV_WC_RECV);
		away(50000); /* then comes back late */
		/* ...and finds nothing: a late return whether or not the
		 * next poll would find its completion already made (a fast
		 * machine's first poll after the post often does). It polls
		 * once more at once: two polls within 10 us are how the
		 * engine knows a spinning poller (ur_engine_poll), whom a
		 * hand-over concerns. Without it, a poll that found both
		 * completions could be the only one of a round; under ASan
		 * with the other CPU busy, polls took over 10 us and no run
		 * in 20 counted as spinning. */
		for (int k = 0; k < 2; k++) {
			struct ibv_wc wc;

			if (ibv_poll_cq(a.cq, 1, &wc) != 0)
				die("an empty poll");
		}
	}
	urt_rc_end_fini(&a);
	urt_rc_end_fini(&b);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx); /* prints the counters */
	ibv_free_device_list(list);
	return 0;
}

/* Run the child with @stays; 0, or -1 on failure. Its counters: *@late
 * (completions after which the poller came back late), *@hand. */
static int run(const char *stays, long *late, long *hand)
{
	char out[8192];

	if (urt_child_counters("test_poll_hint", stays, out, sizeof(out))) {
		fprintf(stderr, "child (stays %s) failed:\n%s", stays, out);
		return -1;
	}
	*late = urt_counter(out, "poll_late");
	*hand = urt_counter(out, "poll_handover");
	printf("stays %s: poll_late %ld, poll_handover %ld\n", stays, *late,
	       *hand);
	return 0;
}

/*
 * Whether this poller drains the socket or the engine thread does is a
 * race (the engine takes the socket whenever the poller has not spun in
 * the last 100 us): a run may have too few late returns to test anything.
 * Such runs are repeated, up to RUNS: each takes about 10 ms, and under
 * ctest -j2 beside the network-heavy tests 5 were sometimes too few.
 */
int main(int argc, char **argv)
{
	long late, hand;
	int i;

	if (argc == 3 && !strcmp(argv[1], "--child"))
		return child(atoi(argv[2]));
	for (i = 0; i < RUNS; i++) {
		if (run("0", &late, &hand))
			return 1;
		if (hand > 0)
			break;
	}
	if (i == RUNS) {
		printf("FAIL: no hand-over by default in %d runs\n", RUNS);
		return 1;
	}
	for (i = 0; i < RUNS; i++) {
		if (run("1", &late, &hand))
			return 1;
		if (hand) {
			printf("FAIL: hand-overs with the hint\n");
			return 1;
		}
		if (late >= 4) /* a default run would have handed over */
			break;
	}
	if (i == RUNS) {
		printf("FAIL: too few late returns with the hint in %d runs\n", RUNS);
		return 1;
	}
	printf("ok\n");
	return 0;
}

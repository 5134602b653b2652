/* SPDX-License-Identifier: MIT */
/*
 * Non-blocking collectives, point-to-point, groups and sub-communicators,
 * run under uroce-launch; every rank computes every rank's inputs, so each
 * checks its results exactly (int32 sums, data movement).
 *   nbc_check [all|die|tag|order]
 *   all    every i-collective issued at once and waited in reverse order;
 *          progress while the caller sleeps; tagged sends in order; a
 *          ring exchange larger than the slots in one group; split by
 *          color/key and by a rank list, three communicators in flight at
 *          once; bad arguments
 *   die    the last rank _exit(0)s while requests are in flight on a
 *          sub-communicator and on the parent: every other rank's wait
 *          fails (prints "detected in")
 *   tag    rank 1 receives with another tag than rank 0 sends: both fail
 *          naming it
 * "all" also checks completion callbacks (uroce_request_notify) and, with
 * lanes (UROCE_COLL_LANES > 1 and a progress thread), that collectives of
 * one communicator progress together: a receive that waits for its sender
 * does not hold up a collective queued after it, and a small allreduce
 * issued after a large one completes before it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uroce/coll.h>

static int g_rank, g_fail;

#define CHECK_EQ(a, b, what)                                                   \
	do {                                                                   \
		long long _a = (long long)(a), _b = (long long)(b);            \
		if (_a != _b) {                                                \
			fprintf(stderr, "rank %d: FAIL %s:%d: %s: %s = %lld, want %lld\n", \
				g_rank, __FILE__, __LINE__, what, #a, _a, _b); \
			g_fail = 1;                                            \
		}                                                              \
	} while (0)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Element i of rank r's input; sums over 8 ranks stay small. */
static int32_t val(int r, size_t i, int salt)
{
	return (int32_t)((r * 7 + (int)(i % 9973) * 3 + salt * 11) % 101) - 50;
}

static int32_t *input(int r, size_t n, int salt)
{
	int32_t *p = malloc(n * sizeof(int32_t) + 1);

	for (size_t i = 0; i < n; i++)
		p[i] = val(r, i, salt);
	return p;
}

/* Compare buf with want, once per call (the first wrong element). */
static void check_buf(const int32_t *buf, const int32_t *want, size_t n,
		      const char *what)
{
	for (size_t i = 0; i < n; i++)
		if (buf[i] != want[i]) {
			fprintf(stderr, "rank %d: FAIL %s: element %zu = %d, want %d\n",
				g_rank, what, i, buf[i], want[i]);
			g_fail = 1;
			return;
		}
}

/* Every collective issued at once, waited for last to first. */
static void all_collectives(uroce_comm_t *c, size_t cnt, const char *name)
{
	int r = uroce_comm_rank(c), n = uroce_comm_size(c);
	uroce_request_t *q[8];
	int32_t *ar_in = input(r, cnt, 1), *ar = malloc(cnt * 4 + 1);
	int32_t *rd = malloc(cnt * 4 + 1), *bc = malloc(cnt * 4 + 1);
	int32_t *ag = malloc(cnt * 4 * n + 1), *rs_in = input(r, cnt * n, 2);
	int32_t *rs = malloc(cnt * 4 + 1), *a2a_in = input(r, cnt * n, 3);
	int32_t *a2a = malloc(cnt * 4 * n + 1), *a2av = malloc(cnt * 4 * n + 1);
	int32_t *want = malloc(cnt * 4 * n + 1);
	size_t vc[64], vd[64];
	int root = n - 1;
	char what[96];

	if (r == root)
		memcpy(bc, ar_in, cnt * 4);
	for (int i = 0; i < n; i++) {
		vc[i] = cnt;
		vd[i] = (size_t)i * cnt;
	}
	CHECK_EQ(uroce_iallreduce(c, ar_in, ar, cnt, UROCE_INT32, UROCE_SUM, &q[0]), 0, "iallreduce");
	CHECK_EQ(uroce_ireduce(c, ar_in, rd, cnt, UROCE_INT32, UROCE_SUM, root, &q[1]), 0, "ireduce");
	CHECK_EQ(uroce_ibroadcast(c, bc, bc, cnt, UROCE_INT32, root, &q[2]), 0, "ibroadcast");
	CHECK_EQ(uroce_iallgather(c, ar_in, ag, cnt, UROCE_INT32, &q[3]), 0, "iallgather");
	CHECK_EQ(uroce_ireduce_scatter(c, rs_in, rs, cnt, UROCE_INT32, UROCE_SUM, &q[4]), 0, "ireduce_scatter");
	CHECK_EQ(uroce_ialltoall(c, a2a_in, a2a, cnt, UROCE_INT32, &q[5]), 0, "ialltoall");
	CHECK_EQ(uroce_ialltoallv(c, a2a_in, vc, vd, a2av, vc, vd, UROCE_INT32, &q[6]), 0, "ialltoallv");
	/* The arrays were copied: scribbling on them changes nothing. */
	memset(vc, 0xff, sizeof(vc));
	CHECK_EQ(uroce_ibarrier(c, &q[7]), 0, "ibarrier");
	for (int k = 7; k >= 0; k--) {
		CHECK_EQ(uroce_wait(&q[k]), 0, "wait");
		CHECK_EQ(q[k] == NULL, 1, "request freed");
	}
	for (size_t i = 0; i < cnt; i++) {
		int64_t s = 0;
		for (int j = 0; j < n; j++)
			s += val(j, i, 1);
		want[i] = (int32_t)s;
	}
	snprintf(what, sizeof(what), "%s iallreduce %zu", name, cnt);
	check_buf(ar, want, cnt, what);
	if (r == root) {
		snprintf(what, sizeof(what), "%s ireduce %zu", name, cnt);
		check_buf(rd, want, cnt, what);
	}
	for (size_t i = 0; i < cnt; i++)
		want[i] = val(root, i, 1);
	snprintf(what, sizeof(what), "%s ibroadcast %zu", name, cnt);
	check_buf(bc, want, cnt, what);
	for (int j = 0; j < n; j++)
		for (size_t i = 0; i < cnt; i++)
			want[(size_t)j * cnt + i] = val(j, i, 1);
	snprintf(what, sizeof(what), "%s iallgather %zu", name, cnt);
	check_buf(ag, want, cnt * n, what);
	for (size_t i = 0; i < cnt; i++) {
		int64_t s = 0;
		for (int j = 0; j < n; j++)
			s += val(j, (size_t)r * cnt + i, 2);
		want[i] = (int32_t)s;
	}
	snprintf(what, sizeof(what), "%s ireduce_scatter %zu", name, cnt);
	check_buf(rs, want, cnt, what);
	for (int j = 0; j < n; j++)
		for (size_t i = 0; i < cnt; i++)
			want[(size_t)j * cnt + i] = val(j, (size_t)r * cnt + i, 3);
	snprintf(what, sizeof(what), "%s ialltoall %zu", name, cnt);
	check_buf(a2a, want, cnt * n, what);
	snprintf(what, sizeof(what), "%s ialltoallv %zu", name, cnt);
	check_buf(a2av, want, cnt * n, what);
	free(ar_in); free(ar); free(rd); free(bc); free(ag); free(rs_in);
	free(rs); free(a2a_in); free(a2a); free(a2av); free(want);
}

/* Issued, then the caller sleeps without calling in; uroce_test (which
 * does not progress while a progress thread exists) must then see it done. */
static void progress_while_sleeping(uroce_comm_t *c)
{
	size_t cnt = 100000;
	int r = uroce_comm_rank(c), n = uroce_comm_size(c), done = 0;
	int32_t *in = input(r, cnt, 4), *out = malloc(cnt * 4);
	uroce_request_t *q;
	double t0 = now_ms();

	CHECK_EQ(uroce_iallreduce(c, in, out, cnt, UROCE_INT32, UROCE_SUM, &q), 0, "iallreduce");
	while (now_ms() - t0 < 20000) {
		usleep(50000);
		CHECK_EQ(uroce_test(&q, &done), 0, "test");
		if (done)
			break;
	}
	CHECK_EQ(done, 1, "allreduce done while the caller slept");
	if (done) {
		int64_t s = 0;
		for (int j = 0; j < n; j++)
			s += val(j, cnt - 1, 4);
		CHECK_EQ(out[cnt - 1], s, "slept allreduce result");
	} else {
		uroce_wait(&q);
	}
	free(in);
	free(out);
}

/* Tagged messages between neighbours, in order; a ring exchange larger
 * than the slots (3 MiB) in one group, which one by one would deadlock. */
static void point_to_point(uroce_comm_t *c)
{
	int r = uroce_comm_rank(c), n = uroce_comm_size(c);
	int next = (r + 1) % n, prev = (r - 1 + n) % n;
	size_t big = 3u << 18; /* int32 elements: 3 MiB */
	int32_t *sbuf = input(r, big, 5), *rbuf = malloc(big * 4);
	int32_t small[3][17], got[3][17];
	uroce_request_t *q[8];

	if (n < 2)
		return;
	/* Three tagged sends in a row, received in the same order. */
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < 17; i++)
			small[k][i] = r * 1000 + k * 100 + i;
	for (int k = 0; k < 3; k++)
		CHECK_EQ(uroce_isend(c, small[k], 17, UROCE_INT32, next, 40 + k, &q[k]), 0, "isend");
	for (int k = 0; k < 3; k++)
		CHECK_EQ(uroce_irecv(c, got[k], 17, UROCE_INT32, prev, 40 + k, &q[3 + k]), 0, "irecv");
	CHECK_EQ(uroce_waitall(6, q), 0, "waitall p2p");
	for (int k = 0; k < 3; k++)
		CHECK_EQ(got[k][16], prev * 1000 + k * 100 + 16, "tagged message order");

	CHECK_EQ(uroce_group_start(c), 0, "group_start");
	CHECK_EQ(uroce_group_start(c), -EINVAL, "nested group");
	CHECK_EQ(uroce_isend(c, sbuf, big, UROCE_INT32, next, 7, &q[0]), 0, "group isend");
	CHECK_EQ(uroce_irecv(c, rbuf, big, UROCE_INT32, prev, 7, &q[1]), 0, "group irecv");
	CHECK_EQ(uroce_wait(&q[0]), -EINVAL, "wait inside the group");
	CHECK_EQ(uroce_barrier(c), -EINVAL, "blocking call inside the group");
	CHECK_EQ(uroce_group_end(c), 0, "group_end");
	CHECK_EQ(uroce_waitall(2, q), 0, "group waitall");
	int32_t *want = input(prev, big, 5);
	check_buf(rbuf, want, big, "3 MiB ring exchange in a group");
	free(want);

	/* Blocking ping-pong between 0 and 1. */
	if (r < 2) {
		int32_t x = r == 0 ? 12345 : 0;
		if (r == 0) {
			CHECK_EQ(uroce_send(c, &x, 1, UROCE_INT32, 1, 0), 0, "send");
			CHECK_EQ(uroce_recv(c, &x, 1, UROCE_INT32, 1, 0), 0, "recv");
			CHECK_EQ(x, 12346, "pong");
		} else {
			CHECK_EQ(uroce_recv(c, &x, 1, UROCE_INT32, 0, 0), 0, "recv");
			x++;
			CHECK_EQ(uroce_send(c, &x, 1, UROCE_INT32, 0, 0), 0, "send");
		}
	}
	free(sbuf);
	free(rbuf);
}

/* Split by color (r % 2) and key (-r: reversed), by a rank list, and run
 * all three communicators at once. */
static void sub_communicators(uroce_comm_t *c)
{
	int r = uroce_comm_rank(c), n = uroce_comm_size(c);
	uroce_comm_t *half = NULL, *list = NULL, *none = (uroce_comm_t *)1;
	int ranks[8], nl = 0;
	size_t cnt = 5000;

	CHECK_EQ(uroce_comm_split(c, r % 2, -r, &half), 0, "split");
	if (!half)
		return;
	int hn = (n - r % 2 + 1) / 2;
	CHECK_EQ(uroce_comm_size(half), hn, "split size");
	/* Reversed keys: the highest parent rank of a color is rank 0. */
	CHECK_EQ(uroce_comm_rank(half), hn - 1 - r / 2, "split rank");
	/* A list in reverse order without rank 0. */
	for (int i = n - 1; i >= 1; i--)
		ranks[nl++] = i;
	CHECK_EQ(uroce_comm_split_ranks(c, ranks, nl, r == 0 ? &none : &list), 0, "split_ranks");
	if (r == 0)
		CHECK_EQ(none == NULL, 1, "not in the list: NULL");
	else
		CHECK_EQ(uroce_comm_rank(list), n - 1 - r, "list rank");
	CHECK_EQ(uroce_comm_destroy(c), -EBUSY, "destroy a parent with children");

	/* Three communicators in flight at once. */
	int32_t *in = input(r, cnt, 6), *o1 = malloc(cnt * 4), *o2 = malloc(cnt * 4);
	int32_t *o3 = malloc(cnt * 4);
	uroce_request_t *q[3] = { 0 };
	CHECK_EQ(uroce_iallreduce(half, in, o1, cnt, UROCE_INT32, UROCE_SUM, &q[0]), 0, "half");
	if (list)
		CHECK_EQ(uroce_iallreduce(list, in, o2, cnt, UROCE_INT32, UROCE_SUM, &q[1]), 0, "list");
	CHECK_EQ(uroce_iallreduce(c, in, o3, cnt, UROCE_INT32, UROCE_SUM, &q[2]), 0, "parent");
	CHECK_EQ(uroce_waitall(3, q), 0, "waitall three communicators");
	for (size_t i = 0; i < cnt; i += 997) {
		int64_t sh = 0, sl = 0, sa = 0;
		for (int j = 0; j < n; j++) {
			sa += val(j, i, 6);
			if (j % 2 == r % 2)
				sh += val(j, i, 6);
			if (j)
				sl += val(j, i, 6);
		}
		CHECK_EQ(o1[i], sh, "allreduce on the color");
		if (list)
			CHECK_EQ(o2[i], sl, "allreduce on the list");
		CHECK_EQ(o3[i], sa, "allreduce on the parent");
	}
	all_collectives(half, 3000, "half");
	if (list)
		all_collectives(list, 300, "list");
	CHECK_EQ(uroce_comm_destroy(half), 0, "destroy half");
	if (list)
		CHECK_EQ(uroce_comm_destroy(list), 0, "destroy list");
	free(in); free(o1); free(o2); free(o3);
}

struct note {
	int calls, result;
};

static void on_done(void *arg, int result)
{
	struct note *n = arg;

	__atomic_fetch_add(&n->calls, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&n->result, result, __ATOMIC_RELEASE);
}

/* The completion callback: called once, by whoever completes the request,
 * or at once when it is already complete. */
static void notify(uroce_comm_t *c)
{
	int r = uroce_comm_rank(c), n = uroce_comm_size(c);
	size_t cnt = 300000;
	int32_t *in = input(r, cnt, 8), *out = malloc(cnt * 4);
	struct note a = { 0, 1 }, b = { 0, 1 };
	uroce_request_t *q = NULL;
	double t0 = now_ms();

	CHECK_EQ(uroce_iallreduce(c, in, out, cnt, UROCE_INT32, UROCE_SUM, &q), 0, "iallreduce");
	if (!q) { /* broken communicator: reported above */
		free(in);
		free(out);
		return;
	}
	CHECK_EQ(uroce_request_notify(q, on_done, &a), 0, "notify");
	CHECK_EQ(uroce_request_notify(q, on_done, &b), -EINVAL, "a second callback");
	CHECK_EQ(uroce_request_notify(q, NULL, &b), -EINVAL, "no callback");
	if (getenv("UROCE_COLL_PROGRESS") && !strcmp(getenv("UROCE_COLL_PROGRESS"), "0")) {
		CHECK_EQ(uroce_wait(&q), 0, "wait");
	} else {
		/* The progress thread completes it and calls us back. */
		while (!__atomic_load_n(&a.calls, __ATOMIC_ACQUIRE) && now_ms() - t0 < 20000)
			usleep(1000);
		CHECK_EQ(a.calls, 1, "callback made without a wait");
		CHECK_EQ(uroce_request_notify(q, on_done, &b), -EINVAL, "a second callback, done");
		CHECK_EQ(uroce_wait(&q), 0, "wait after the callback");
	}
	CHECK_EQ(a.calls, 1, "one callback");
	CHECK_EQ(a.result, 0, "callback result");
	int64_t s = 0;
	for (int j = 0; j < n; j++)
		s += val(j, cnt - 1, 8);
	CHECK_EQ(out[cnt - 1], s, "allreduce with a callback");
	/* Already complete: at once, in this thread. A send and a receive
	 * run in issue order (lane 0): once the receive is waited for, the
	 * send is complete, not yet freed. */
	if (n >= 2) {
		uroce_request_t *sq = NULL, *rq = NULL;
		int32_t x = r, y = -1;
		CHECK_EQ(uroce_isend(c, &x, 1, UROCE_INT32, (r + 1) % n, 9, &sq), 0, "isend");
		CHECK_EQ(uroce_irecv(c, &y, 1, UROCE_INT32, (r + n - 1) % n, 9, &rq), 0, "irecv");
		CHECK_EQ(uroce_wait(&rq), 0, "wait receive");
		CHECK_EQ(y, (r + n - 1) % n, "received");
		CHECK_EQ(sq ? uroce_request_notify(sq, on_done, &b) : -1, 0, "notify a completed send");
		CHECK_EQ(b.calls, 1, "callback at once on a completed request");
		CHECK_EQ(b.result, 0, "its result");
		CHECK_EQ(uroce_wait(&sq), 0, "wait send");
	}
	free(in);
	free(out);
}

/*
 * Lanes: collectives of one communicator progress together. On a fresh
 * communicator (its non-blocking collectives numbered from 0, lane k
 * mod n):
 * - rank 0 posts a receive from rank 1 (lane 0), then everyone an
 *   allreduce (the second non-blocking collective: lane 1); rank 1 sends only once its
 *   allreduce is done. One queue would deadlock (the allreduce behind a
 *   receive whose send waits for the allreduce).
 * - a 16 MiB allreduce, then a 4 KiB one; after waiting for the small one,
 *   the large one must still be running at least once in three tries
 *   (one queue completes them in order, so never).
 */
static void lanes(uroce_comm_t *parent)
{
	int r = uroce_comm_rank(parent), n = uroce_comm_size(parent);
	const char *lv = getenv("UROCE_COLL_LANES"), *pv = getenv("UROCE_COLL_PROGRESS");
	size_t big = 4u << 20, cnt = 1000;
	uroce_comm_t *c = NULL;
	uroce_request_t *q[2];
	int32_t tok = 0, *in, *out, *sin, *sout;

	if ((lv && atoi(lv) == 1) || (pv && !strcmp(pv, "0")) || n < 2) {
		printf("rank %d: lanes: off (UROCE_COLL_LANES=1 or no progress thread)\n", r);
		return;
	}
	CHECK_EQ(uroce_comm_split(parent, 0, r, &c), 0, "split for lanes");
	if (!c)
		return;
	in = input(r, big, 9);
	out = malloc(big * 4);
	sin = input(r, cnt, 10);
	sout = malloc(cnt * 4);
	/* The first i-collective takes lane 0, the next lane 1. */
	CHECK_EQ(uroce_ibarrier(c, &q[0]), 0, "ibarrier (lane 0)");
	CHECK_EQ(uroce_wait(&q[0]), 0, "ibarrier");
	if (r == 0)
		CHECK_EQ(uroce_irecv(c, &tok, 1, UROCE_INT32, 1, 5, &q[1]), 0, "irecv token");
	CHECK_EQ(uroce_iallreduce(c, sin, sout, cnt, UROCE_INT32, UROCE_SUM, &q[0]), 0,
		 "allreduce (lane 1)");
	CHECK_EQ(uroce_wait(&q[0]), 0, "allreduce beside a pending receive");
	if (r == 1)
		CHECK_EQ(uroce_send(c, &(int32_t){ 4242 }, 1, UROCE_INT32, 0, 5), 0, "send token");
	if (r == 0) {
		CHECK_EQ(uroce_wait(&q[1]), 0, "receive token");
		CHECK_EQ(tok, 4242, "token");
	}
	int64_t s = 0;
	for (int j = 0; j < n; j++)
		s += val(j, cnt - 1, 10);
	CHECK_EQ(sout[cnt - 1], s, "allreduce beside a receive");

	int overtook = 0;
	for (int t = 0; t < 3 && !overtook; t++) {
		int done = 1;
		CHECK_EQ(uroce_iallreduce(c, in, out, big, UROCE_INT32, UROCE_SUM, &q[0]), 0, "big");
		CHECK_EQ(uroce_iallreduce(c, sin, sout, cnt, UROCE_INT32, UROCE_SUM, &q[1]), 0, "small");
		CHECK_EQ(uroce_wait(&q[1]), 0, "wait small");
		CHECK_EQ(uroce_test(&q[0], &done), 0, "test big");
		overtook = !done;
		CHECK_EQ(uroce_wait(&q[0]), 0, "wait big");
		printf("rank %d: lanes: try %d: the small allreduce %s the large one\n", r, t + 1,
		       overtook ? "completed before" : "did not overtake");
	}
	/* Each rank judges its own order. */
	CHECK_EQ(overtook, 1, "a collective overtook an earlier one (lanes progress together)");
	s = 0;
	for (int j = 0; j < n; j++)
		s += val(j, big - 1, 9);
	CHECK_EQ(out[big - 1], s, "big allreduce");
	CHECK_EQ(uroce_comm_destroy(c), 0, "destroy");
	free(in);
	free(out);
	free(sin);
	free(sout);
}

static void bad_arguments(uroce_comm_t *c)
{
	int r = uroce_comm_rank(c), n = uroce_comm_size(c), x = 0, done;
	uroce_request_t *q = NULL;

	CHECK_EQ(uroce_isend(c, &x, 1, UROCE_INT32, r, 0, &q), -EINVAL, "send to self");
	CHECK_EQ(uroce_isend(c, &x, 1, UROCE_INT32, n, 0, &q), -EINVAL, "peer out of range");
	CHECK_EQ(uroce_isend(c, &x, 1, UROCE_INT32, (r + 1) % n, -1, &q), -EINVAL, "negative tag");
	CHECK_EQ(uroce_iallreduce(c, NULL, &x, 1, UROCE_INT32, UROCE_SUM, &q), -EINVAL, "NULL buffer");
	CHECK_EQ(uroce_ireduce(c, &x, &x, 1, UROCE_INT32, UROCE_SUM, n, &q), -EINVAL, "bad root");
	CHECK_EQ(uroce_iallreduce(c, &x, &x, 1, UROCE_DTYPE_MAX, UROCE_SUM, &q), -EINVAL, "bad type");
	CHECK_EQ(uroce_comm_split(c, -5, 0, &(uroce_comm_t *){ 0 }), -EINVAL, "bad color");
	CHECK_EQ(uroce_comm_split_ranks(c, (int[]){ 0, 0 }, 2, &(uroce_comm_t *){ 0 }), -EINVAL,
		 "duplicate rank in the list");
	CHECK_EQ(uroce_group_end(c), -EINVAL, "group_end without start");
	CHECK_EQ(q == NULL, 1, "no request on error");
	CHECK_EQ(uroce_wait(&q), 0, "wait on NULL");
	CHECK_EQ(uroce_test(&q, &done), 0, "test on NULL");
	CHECK_EQ(done, 1, "NULL is done");
	/* Still usable after local errors. */
	CHECK_EQ(uroce_allreduce(c, &x, &x, 1, UROCE_INT32, UROCE_SUM), 0, "usable");
}

/* The last rank dies with requests in flight on a child and the parent. */
static int die(uroce_comm_t *c)
{
	int r = uroce_comm_rank(c), n = uroce_comm_size(c);
	uroce_comm_t *all = NULL;
	size_t cnt = 50000;
	int32_t *in = input(r, cnt, 7), *o1 = malloc(cnt * 4), *o2 = malloc(cnt * 4);

	if (uroce_comm_split(c, 0, r, &all)) {
		free(in);
		free(o1);
		free(o2);
		return 1;
	}
	for (int it = 0; it < 1000; it++) {
		uroce_request_t *q[2];
		double t0 = now_ms();

		if (it == 3 && r == n - 1)
			_exit(0);
		if (uroce_iallreduce(all, in, o1, cnt, UROCE_INT32, UROCE_SUM, &q[0]) ||
		    uroce_iallreduce(c, in, o2, cnt, UROCE_INT32, UROCE_SUM, &q[1]))
			q[0] = q[1] = NULL;
		int e = uroce_waitall(2, q);
		if (e) {
			printf("rank %d: detected in %.0f ms: %s\n", r, now_ms() - t0,
			       uroce_comm_strerror(all));
			/* Broken communicators are torn down without waiting. */
			uroce_comm_destroy(all);
			uroce_comm_destroy(c);
			free(in);
			free(o1);
			free(o2);
			return 0;
		}
	}
	printf("rank %d: NOT detected\n", r);
	return 1;
}

static int tag_mismatch(uroce_comm_t *c)
{
	int r = uroce_comm_rank(c), x = 5, e = 0;
	double t0 = now_ms();

	if (r == 0)
		e = uroce_send(c, &x, 1, UROCE_INT32, 1, 3);
	else if (r == 1)
		e = uroce_recv(c, &x, 1, UROCE_INT32, 0, 4);
	if (!e)
		e = uroce_barrier(c); /* rank 0's send completes locally */
	if (e) {
		printf("rank %d: detected in %.0f ms: %s\n", r, now_ms() - t0,
		       uroce_comm_strerror(c));
		uroce_comm_destroy(c);
		return 0;
	}
	printf("rank %d: NOT detected\n", r);
	return 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";
	uroce_comm_t *c;

	if (uroce_comm_init(&c, NULL))
		return 1;
	g_rank = uroce_comm_rank(c);
	if (!strcmp(mode, "die"))
		return die(c);
	if (!strcmp(mode, "tag"))
		return tag_mismatch(c);
	all_collectives(c, 1000, "world");
	all_collectives(c, 70000, "world"); /* direct streams from 256 KiB */
	progress_while_sleeping(c);
	point_to_point(c);
	sub_communicators(c);
	notify(c);
	lanes(c);
	bad_arguments(c);
	CHECK_EQ(uroce_comm_destroy(c), 0, "destroy");
	if (!g_fail)
		printf("rank %d: nbc_check all PASS\n", g_rank);
	return g_fail;
}

/* SPDX-License-Identifier: MIT */
/*
 * Failure behaviour, under uroce-launch: coll_fail MODE
 *   die       the last rank _exit(0)s in the middle of an allreduce loop
 *   hang      the last rank stops calling (sleeps the timeout + 2 s, then exits)
 *   count     rank 1 passes count+1
 *   type      rank 1 passes int32 instead of float32
 *   coll      rank 1 calls allgather instead of allreduce
 *   vcount    alltoallv where rank 1 sends rank 0 a count at or above the
 *             direct-receive threshold (256 KiB) and rank 0 expects one
 *             below it: the two ends would take different paths
 *   acount    alltoall where rank 1 passes 70000 floats per peer (above
 *             the threshold) and the others 1000 (below): alltoall's ends
 *             each decide from their own count whether to offer a buffer
 *   cut       every rank runs allreduce until one fails (at most 60 s),
 *             printing "running" after its third call: the caller takes
 *             a rank's network away then (coll_lab.sh cuts its links)
 * Every other rank must get an error (never hang) and prints
 * "detected in N ms: <reason>"; exit 0 then, 1 if nothing was detected.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "uroce/coll.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "die";
	size_t count = 50000;
	uroce_comm_t *comm;
	int e = uroce_comm_init(&comm, NULL);

	if (e)
		return 1;
	int r = uroce_comm_rank(comm), n = uroce_comm_size(comm), victim = n - 1;
	size_t big = (count + 1) * n > 70000 * 8 ? (count + 1) * n : 70000 * 8;
	float *a = calloc(big, sizeof(float)), *b = calloc(big, sizeof(float));
	/* vcount: 70000 floats (273 KiB) sent, 1000 expected */
	size_t vs[8], vr[8], vd[8];

	for (int i = 0; i < n && i < 8; i++) {
		vs[i] = vr[i] = 1000;
		vd[i] = (size_t)i * 1000;
	}
	if (r == 1)
		vs[0] = 70000;
	double t0 = now_ms(), start = t0;
	int cut = !strcmp(mode, "cut");

	for (int it = 0; cut ? now_ms() - start < 60e3 : it < 1000; it++) {
		if (cut) {
			if (it == 3) {
				printf("rank %d: running\n", r);
				fflush(stdout);
			}
			t0 = now_ms();
			e = uroce_allreduce(comm, a, b, count, UROCE_FLOAT32, UROCE_SUM);
		} else if (it == 3) {
			if (!strcmp(mode, "die") && r == victim)
				_exit(0);
			if (!strcmp(mode, "hang") && r == victim) {
				sleep((unsigned)(atoi(getenv("UROCE_COLL_TIMEOUT_MS") ?: "30000") / 1000 + 2));
				_exit(0);
			}
			t0 = now_ms();
			if (r == 1 && !strcmp(mode, "count"))
				e = uroce_allreduce(comm, a, b, count + 1, UROCE_FLOAT32, UROCE_SUM);
			else if (r == 1 && !strcmp(mode, "type"))
				e = uroce_allreduce(comm, a, b, count, UROCE_INT32, UROCE_SUM);
			else if (r == 1 && !strcmp(mode, "coll"))
				e = uroce_allgather(comm, a, b, count, UROCE_FLOAT32);
			else if (!strcmp(mode, "vcount") && n <= 8)
				/* sdispls 0 for all: a holds 70000 floats */
				e = uroce_alltoallv(comm, a, vs, (size_t[8]){ 0 }, b,
						    vr, vd, UROCE_FLOAT32);
			else if (!strcmp(mode, "acount") && n <= 8)
				e = uroce_alltoall(comm, a, b, r == 1 ? 70000 : 1000,
						   UROCE_FLOAT32);
			else
				e = uroce_allreduce(comm, a, b, count, UROCE_FLOAT32, UROCE_SUM);
		} else {
			e = uroce_allreduce(comm, a, b, count, UROCE_FLOAT32, UROCE_SUM);
		}
		if (e) {
			printf("rank %d: detected in %.0f ms: %s\n", r, now_ms() - t0,
			       uroce_comm_strerror(comm));
			uroce_comm_destroy(comm);
			free(a);
			free(b);
			return 0;
		}
	}
	printf("rank %d: NOT detected\n", r);
	uroce_comm_destroy(comm);
	free(a);
	free(b);
	return 1;
}

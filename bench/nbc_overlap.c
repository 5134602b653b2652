/* SPDX-License-Identifier: MIT */
/*
 * Overlap of a non-blocking collective with computation, as OSU's
 * osu_iallreduce defines it: t_pure = issue + wait with nothing between;
 * then the "compute" is set to take t_pure and t_total = issue + compute +
 * wait; overlap = 100 * (1 - (t_total - t_cpu) / t_pure), clamped to
 * 0..100 (all times averaged over iterations, then over ranks). As in
 * OSU's code, both loops run WARMUP iterations first that are not timed
 * and end every iteration with a barrier outside the time, so a rank's
 * late start (an oversleep) does not carry into the next iteration.
 *   nbc-overlap     (uroce, under uroce-launch)
 *   nbc-overlap-mpi (Open MPI, under mpirun; built from this file with
 *                    -DUR_USE_MPI)
 * flags: -b MIN -e MAX -f FACTOR -n ITERS -w WARMUP -o allreduce|alltoall
 *        -c sleep|spin   (compute: nanosleep, as a thread waiting on a GPU,
 *                         or a loop reading the clock on the calling core)
 * float32 sum, out of place; size is the largest buffer (nccl-tests).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#ifdef UR_USE_MPI
#include <mpi.h>
#define LIB "Open MPI"
typedef MPI_Request req_t;
static int g_rank, g_size;
static void lib_init(int *argc, char ***argv)
{
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &g_size);
}
static void lib_fini(void) { MPI_Finalize(); }
static int istart(int a2a, const float *s, float *d, size_t count, req_t *q)
{
	if (a2a)
		return MPI_Ialltoall(s, (int)count, MPI_FLOAT, d, (int)count, MPI_FLOAT,
				     MPI_COMM_WORLD, q);
	return MPI_Iallreduce(s, d, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, q);
}
static int iwait(req_t *q) { return MPI_Wait(q, MPI_STATUS_IGNORE); }
static void barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }
static double avg(double x)
{
	double s;
	MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	return s / g_size;
}
#else
#include <uroce/coll.h>
#define LIB "uroce"
typedef uroce_request_t *req_t;
static int g_rank, g_size;
static uroce_comm_t *g_comm;
static void lib_init(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (uroce_comm_init(&g_comm, NULL))
		exit(1);
	g_rank = uroce_comm_rank(g_comm);
	g_size = uroce_comm_size(g_comm);
}
static void lib_fini(void) { uroce_comm_destroy(g_comm); }
static int istart(int a2a, const float *s, float *d, size_t count, req_t *q)
{
	if (a2a)
		return uroce_ialltoall(g_comm, s, d, count, UROCE_FLOAT32, q);
	return uroce_iallreduce(g_comm, s, d, count, UROCE_FLOAT32, UROCE_SUM, q);
}
static int iwait(req_t *q) { return uroce_wait(q); }
static void barrier(void)
{
	if (uroce_barrier(g_comm))
		exit(1);
}
static double avg(double x)
{
	double s;
	if (uroce_allreduce(g_comm, &x, &s, 1, UROCE_FLOAT64, UROCE_AVG))
		exit(1);
	return s;
}
#endif

/* A failed call ends the run (nonzero status): no figures from it. */
static void ok(int e, const char *what)
{
	if (e) {
		fprintf(stderr, "nbc-overlap: rank %d: %s failed (%d)\n", g_rank, what, e);
		exit(1);
	}
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void compute(int spin, double us)
{
	if (spin) {
		double end = now_us() + us;
		while (now_us() < end)
			;
		return;
	}
	struct timespec ts = { .tv_sec = (time_t)(us / 1e6),
			       .tv_nsec = (long)((us - (time_t)(us / 1e6) * 1e6) * 1e3) };
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	size_t minb = 64 << 10, maxb = 64 << 20;
	int iters = 10, warm = 2, a2a = 0, spin = 0, ch;
	double factor = 4;

	lib_init(&argc, &argv);
	while ((ch = getopt(argc, argv, "b:e:f:n:w:o:c:")) != -1) {
		switch (ch) {
		case 'b': minb = bench_parse_size(optarg); break;
		case 'e': maxb = bench_parse_size(optarg); break;
		case 'f': factor = atof(optarg); break;
		case 'n': iters = atoi(optarg); break;
		case 'w': warm = atoi(optarg); break;
		case 'o':
			if (!strcmp(optarg, "alltoall"))
				a2a = 1;
			else if (strcmp(optarg, "allreduce"))
				goto usage;
			break;
		case 'c':
			if (!strcmp(optarg, "spin"))
				spin = 1;
			else if (strcmp(optarg, "sleep"))
				goto usage;
			break;
		default:
		usage:
			if (!g_rank)
				fprintf(stderr, "usage: %s -b MIN -e MAX -f F -n IT -w WU "
					"-o allreduce|alltoall -c sleep|spin\n", argv[0]);
			exit(2);
		}
	}
	if (iters < 1 || factor <= 1 || minb < 4 || maxb < minb)
		goto usage;
	float *s = calloc(maxb / 4 + 16, 4), *d = calloc(maxb / 4 + 16, 4);
	if (!s || !d)
		exit(1);
	for (size_t i = 0; i < maxb / 4; i++)
		s[i] = (float)(i % 7);
	if (!g_rank)
		printf("# %s overlap: %s, %d ranks, compute %s, float32, iters %d, warmup %d\n"
		       "#%11s %12s %12s %12s %8s\n", LIB, a2a ? "alltoall" : "allreduce",
		       g_size, spin ? "spin" : "sleep", iters, warm, "size(B)", "pure(us)",
		       "cpu(us)", "total(us)", "overlap%");
	for (size_t sz = minb; sz <= maxb; sz = (size_t)(sz * factor)) {
		size_t count = sz / 4 / (a2a ? (size_t)g_size : 1);
		double t, pure = 0, cpu = 0, total = 0;
		req_t q;

		/* As OSU: warm-up iterations not counted, a barrier after
		 * every iteration (outside the time) in both loops. */
		for (int i = 0; i < warm + iters; i++) {
			t = now_us();
			ok(istart(a2a, s, d, count, &q), "issue");
			ok(iwait(&q), "wait");
			if (i >= warm)
				pure += now_us() - t;
			barrier();
		}
		pure /= iters;
		/* Every rank computes as long as the slowest rank's pure time
		 * (OSU: the average; equal here, up to noise). */
		double target = avg(pure);
		barrier();
		for (int i = 0; i < warm + iters; i++) {
			t = now_us();
			ok(istart(a2a, s, d, count, &q), "issue");
			double c0 = now_us();
			compute(spin, target);
			double c1 = now_us();
			ok(iwait(&q), "wait");
			if (i >= warm) {
				cpu += c1 - c0;
				total += now_us() - t;
			}
			barrier();
		}
		cpu = avg(cpu / iters);
		total = avg(total / iters);
		pure = target;
		double ov = 100.0 * (1.0 - (total - cpu) / pure);
		if (ov < 0)
			ov = 0;
		if (ov > 100)
			ov = 100;
		if (!g_rank)
			printf("%12zu %12.1f %12.1f %12.1f %8.1f\n", sz, pure, cpu, total, ov);
		fflush(stdout);
	}
	free(s);
	free(d);
	lib_fini();
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The MPI side of bench/coll.sh: allreduce, alltoall, allgather and
 * reduce-scatter bandwidth with the same conventions and columns as
 * uroce-coll-perf (nccl-tests style: size is the largest buffer).
 *   mpirun -np N coll-mpi-perf -b 4K -e 64M -f 4 -n 20 -w 5 -o allreduce [-C]
 * float32, sum, out of place; time is the slowest rank's average. -C also
 * prints each call's time on rank 0, as uroce-coll-perf -C does.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"

int main(int argc, char **argv)
{
	size_t minb = 4096, maxb = 1 << 20;
	static const char *const ops[] = { "allreduce", "alltoall", "allgather", "reducescatter" };
	enum { AR, A2A, AG, RS, NOPS } op = AR;
	int iters = 20, warm = 5, ch, n, r, calls = 0;
	double factor = 2;

	MPI_Init(&argc, &argv);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	while ((ch = getopt(argc, argv, "b:e:f:n:w:o:C")) != -1) {
		switch (ch) {
		case 'b': minb = bench_parse_size(optarg); break;
		case 'e': maxb = bench_parse_size(optarg); break;
		case 'f': factor = atof(optarg); break;
		case 'n': iters = atoi(optarg); break;
		case 'w': warm = atoi(optarg); break;
		case 'o':
			for (op = AR; op < NOPS && strcmp(optarg, ops[op]); op++)
				;
			if (op < NOPS)
				break;
			if (!r)
				fprintf(stderr, "coll-mpi-perf: unknown operation '%s'\n", optarg);
			goto usage;
		case 'C': calls = 1; break;
		default:
		usage:
			if (!r)
				fprintf(stderr, "usage: coll-mpi-perf -b MIN -e MAX -f F -n IT -w WU "
					"-o allreduce|alltoall|allgather|reducescatter [-C]\n");
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	float *s = malloc((maxb / 4 + n) * 4), *d = malloc((maxb / 4 + n) * 4);
	if (!s || !d)
		MPI_Abort(MPI_COMM_WORLD, 1);
	/* Data in every page, as uroce-coll-perf has: a calloc'ed input that
	 * nobody writes maps the kernel's one zero page, and every copy out of
	 * it then reads one 4 KiB page from L1 (2 MiB memcpy 52 us against
	 * 120 with data here, CMA 100 against 160). The output is touched too,
	 * as uroce-coll-perf's is, so no call pays its first faults. */
	for (size_t i = 0; i < maxb / 4 + (size_t)n; i++)
		s[i] = (float)((r * 5 + (long)i) % 7);
	memset(d, 0, (maxb / 4 + n) * 4);
	/* every op but allreduce splits its largest buffer into n blocks */
	int per = op != AR;
	double bus = per ? (double)(n - 1) / n : 2.0 * (n - 1) / n;
	if (!r)
		printf("# coll-mpi-perf: %s, %d ranks, float32 sum, iters %d, warmup %d\n"
		       "#%11s %12s %12s %9s %9s\n", ops[op], n, iters,
		       warm, "size(B)", "count", "time(us)", "algbw", "busbw");
	for (size_t sz = minb; sz <= maxb; sz = (size_t)(sz * factor)) {
		int count = (int)(sz / 4 / (per ? n : 1));
		double *ct = calls ? calloc((size_t)(warm + iters), sizeof(*ct)) : NULL;
		for (int i = 0; i < warm + iters; i++) {
			static double t0;
			double a;
			if (i == warm) {
				MPI_Barrier(MPI_COMM_WORLD);
				t0 = MPI_Wtime();
			}
			a = ct ? MPI_Wtime() : 0;
			switch (op) {
			case A2A:
				MPI_Alltoall(s, count, MPI_FLOAT, d, count, MPI_FLOAT, MPI_COMM_WORLD);
				break;
			case AG:
				MPI_Allgather(s, count, MPI_FLOAT, d, count, MPI_FLOAT, MPI_COMM_WORLD);
				break;
			case RS:
				MPI_Reduce_scatter_block(s, d, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
				break;
			default:
				MPI_Allreduce(s, d, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
			}
			if (ct)
				ct[i] = (MPI_Wtime() - a) * 1e6;
			if (i == warm + iters - 1) {
				double t = (MPI_Wtime() - t0) / iters * 1e6, tm;
				MPI_Allreduce(&t, &tm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
				size_t bytes = (size_t)count * 4 * (per ? n : 1);
				if (!r)
					printf("%12zu %12d %12.1f %9.4f %9.4f\n", bytes, count, tm,
					       bytes / tm / 1e3, bytes / tm / 1e3 * bus);
				if (!r && ct) {
					printf("# calls of %zu B (us, rank 0; %d warm-up, then %d timed):",
					       bytes, warm, iters);
					for (int k = 0; k < warm + iters; k++)
						printf(" %.1f", ct[k]);
					printf("\n");
				}
			}
		}
		free(ct);
		fflush(stdout);
	}
	free(s);
	free(d);
	MPI_Finalize();
	return 0;
}

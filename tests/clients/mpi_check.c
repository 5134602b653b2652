/* SPDX-License-Identifier: MIT */
/*
 * MPI_Allreduce (int64 sum) and MPI_Alltoall (int64 blocks) at a few sizes,
 * every element of every result checked against its formula on every
 * rank. Built with the MPI compiler wrapper's flags; tests/clients/mpi.sh
 * runs it under Open MPI with each rank on uroce.
 *   mpi_check
 * Prints "mpi_check: N ranks: ... PASS" on rank 0 and exits 0 only if
 * every rank found every element right.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int64_t ar_in(int rank, long i)
{
	return (int64_t)rank * 1000003 + i * 7 + 1;
}

/* What block @dst of rank @src holds at @k. */
static int64_t a2a_val(int src, int dst, int np, long c, long k)
{
	return ((int64_t)src * np + dst) * c + k + 1;
}

int main(int argc, char **argv)
{
	static const long ar_counts[] = { 1, 1000, 262144 };
	static const long a2a_counts[] = { 1, 1000, 32768 };
	long bad = 0, all_bad = 0, ar_elems = 0, a2a_elems = 0;
	int rank, np;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	for (size_t t = 0; t < sizeof(ar_counts) / sizeof(ar_counts[0]); t++) {
		long n = ar_counts[t];
		int64_t *in = malloc(n * sizeof(*in)), *out = malloc(n * sizeof(*out));
		int64_t rsum = 0;

		if (!in || !out)
			MPI_Abort(MPI_COMM_WORLD, 2);
		for (long i = 0; i < n; i++) {
			in[i] = ar_in(rank, i);
			out[i] = -1;
		}
		for (int r = 0; r < np; r++)
			rsum += (int64_t)r * 1000003;
		MPI_Allreduce(in, out, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
		for (long i = 0; i < n; i++) {
			int64_t want = rsum + (int64_t)np * (i * 7 + 1);

			if (out[i] != want && bad++ < 5)
				fprintf(stderr, "rank %d: allreduce n=%ld [%ld] = %lld, want %lld\n",
					rank, n, i, (long long)out[i], (long long)want);
		}
		ar_elems += n;
		free(in);
		free(out);
	}
	for (size_t t = 0; t < sizeof(a2a_counts) / sizeof(a2a_counts[0]); t++) {
		long c = a2a_counts[t];
		int64_t *in = malloc(c * np * sizeof(*in)), *out = malloc(c * np * sizeof(*out));

		if (!in || !out)
			MPI_Abort(MPI_COMM_WORLD, 2);
		for (int d = 0; d < np; d++)
			for (long k = 0; k < c; k++) {
				in[d * c + k] = a2a_val(rank, d, np, c, k);
				out[d * c + k] = -1;
			}
		MPI_Alltoall(in, (int)c, MPI_INT64_T, out, (int)c, MPI_INT64_T,
			     MPI_COMM_WORLD);
		for (int s = 0; s < np; s++)
			for (long k = 0; k < c; k++) {
				int64_t want = a2a_val(s, rank, np, c, k);

				if (out[s * c + k] != want && bad++ < 5)
					fprintf(stderr, "rank %d: alltoall c=%ld from %d [%ld] = %lld, want %lld\n",
						rank, c, s, k, (long long)out[s * c + k],
						(long long)want);
			}
		a2a_elems += c * np;
		free(in);
		free(out);
	}
	MPI_Allreduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_check: %d ranks: allreduce %ld elements, alltoall %ld elements per rank checked: %ld wrong: %s\n",
		       np, ar_elems, a2a_elems, all_bad, all_bad ? "FAIL" : "PASS");
	MPI_Finalize();
	return all_bad ? 1 : 0;
}

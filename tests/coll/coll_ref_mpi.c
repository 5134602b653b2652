/* SPDX-License-Identifier: MIT */
/*
 * Reference results from Open MPI for the cases in a case file:
 *   mpirun -np N coll_ref_mpi CASES OUTDIR [SEED]
 * writes OUTDIR/<case index>.r<rank> (the rank's output buffer; nothing
 * for reduce at non-roots) for every case MPI can compute (cc_mpi_can).
 * Built with mpicc; shares only coll_case.h with the uroce side.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "coll_case.h"

static MPI_Datatype mtype(const struct cc_case *c)
{
	switch (c->type) {
	case CC_F32: return MPI_FLOAT;
	case CC_F64: return MPI_DOUBLE;
	case CC_F16: case CC_BF16: return MPI_UINT16_T; /* data movement only */
	case CC_I32: return MPI_INT32_T;
	case CC_I64: return MPI_INT64_T;
	default: return MPI_UINT8_T;
	}
}

static MPI_Op mop(const struct cc_case *c)
{
	switch (c->redop) {
	case CC_PROD: return MPI_PROD;
	case CC_MIN: return MPI_MIN;
	case CC_MAX: return MPI_MAX;
	default: return MPI_SUM;
	}
}

int main(int argc, char **argv)
{
	static struct cc_case cs[4096];
	int n, r, nc;
	uint64_t seed;

	MPI_Init(&argc, &argv);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	if (argc < 3) {
		fprintf(stderr, "usage: coll_ref_mpi CASES OUTDIR [SEED]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 1;
	nc = cc_read(argv[1], cs, 4096);
	if (nc < 0)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (int k = 0; k < nc; k++) {
		struct cc_case *c = &cs[k];
		size_t sc, rc, es = cc_type_size[c->type];
		MPI_Datatype dt = mtype(c);

		if (!cc_mpi_can(c) || c->root >= n)
			continue;
		cc_sizes(c, n, r, &sc, &rc);
		char *in = malloc(sc * es + 1), *out = calloc(rc * es + 1, 1);
		cc_fill(c, seed + (uint64_t)k, r, in, sc);
		int cnt = (int)c->count;
		switch (c->op) {
		case CC_ALLREDUCE: MPI_Allreduce(in, out, cnt, dt, mop(c), MPI_COMM_WORLD); break;
		case CC_REDUCE: MPI_Reduce(in, out, cnt, dt, mop(c), c->root, MPI_COMM_WORLD); break;
		case CC_BROADCAST:
			if (r == c->root)
				memcpy(out, in, sc * es);
			MPI_Bcast(out, cnt, dt, c->root, MPI_COMM_WORLD);
			break;
		case CC_ALLGATHER: MPI_Allgather(in, cnt, dt, out, cnt, dt, MPI_COMM_WORLD); break;
		case CC_REDUCESCATTER:
			MPI_Reduce_scatter_block(in, out, cnt, dt, mop(c), MPI_COMM_WORLD);
			break;
		case CC_ALLTOALL: MPI_Alltoall(in, cnt, dt, out, cnt, dt, MPI_COMM_WORLD); break;
		case CC_ALLTOALLV: {
			int *v = malloc(sizeof(int) * 4 * (size_t)n), so = 0, ro = 0;
			for (int j = 0; j < n; j++) {
				v[j] = (int)cc_vcount(c->count, r, j); v[n + j] = so; so += v[j];
				v[2 * n + j] = (int)cc_vcount(c->count, j, r); v[3 * n + j] = ro; ro += v[2 * n + j];
			}
			MPI_Alltoallv(in, v, v + n, dt, out, v + 2 * n, v + 3 * n, dt, MPI_COMM_WORLD);
			free(v);
			break;
		}
		default: break;
		}
		if (c->op != CC_REDUCE || r == c->root) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/%d.r%d", argv[2], k, r);
			FILE *f = fopen(path, "wb");
			if (!f || fwrite(out, 1, rc * es, f) != rc * es) {
				perror(path);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
			fclose(f);
		}
		free(in);
		free(out);
	}
	MPI_Finalize();
	return 0;
}

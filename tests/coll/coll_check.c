/* SPDX-License-Identifier: MIT */
/*
 * Checks liburoce_coll against reference results, under uroce-launch:
 *   uroce-launch -n N coll_check CASES REFDIR [SEED]
 * For each case of the case file (coll_case.h) every rank fills its input,
 * runs the collective (odd cases in place, every third case on buffers
 * misaligned by 1..7 bytes) and compares its output with REFDIR/<k>.r<rank>
 * written by coll_ref_mpi under mpirun. Cases Open MPI cannot compute
 * (float16/bfloat16 reductions, avg) are checked against a float64
 * reference computed here from every rank's inputs.
 *
 * Integers and data movement must match exactly. Float reductions may
 * differ by eps * n * sum(|inputs|) (eps: 2^-24 float32, 2^-53 float64,
 * 2^-11 float16, 2^-8 bfloat16), plus eps * |ref| for avg's division: the
 * bound of a sum of n terms in any order. The inputs make most cases
 * exact anyway.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_case.h"
#include "uroce/coll.h"

static const double eps[] = { 0x1p-24, 0x1p-53, 0x1p-11, 0x1p-8, 0, 0, 0 };

static double combine(int op, double a, double b)
{
	switch (op) {
	case CC_PROD: return a * b;
	case CC_MIN: return a < b ? a : b;
	case CC_MAX: return a > b ? a : b;
	default: return a + b;
	}
}

/* Float64 reference of reduced element g, and its tolerance. */
static double ref_reduce(const struct cc_case *c, uint64_t seed, int n, size_t g, double *tol)
{
	double acc = cc_value(c, seed, 0, g), sabs = fabs(acc);

	for (int r = 1; r < n; r++) {
		double v = cc_value(c, seed, r, g);
		acc = combine(c->redop, acc, v);
		sabs += fabs(v);
	}
	if (c->type == CC_U8 && (c->redop == CC_SUM || c->redop == CC_AVG || c->redop == CC_PROD))
		acc = fmod(acc, 256);
	if (c->type == CC_I32 && c->redop == CC_PROD)
		acc = (double)(int32_t)(int64_t)acc;
	if (c->redop == CC_AVG)
		acc = c->type >= CC_I32 ? trunc(acc / n) : acc / n;
	*tol = eps[c->type] * (c->redop == CC_PROD ? n * fabs(acc) :
			       n * sabs + fabs(acc));
	return acc;
}

static int run(uroce_comm_t *comm, const struct cc_case *c, int inplace, char *sbuf,
	       char *rbuf, size_t *v, int n, char **out)
{
	int r = uroce_comm_rank(comm);
	size_t es = cc_type_size[c->type];
	enum uroce_dtype dt = (enum uroce_dtype)c->type;
	enum uroce_redop op = (enum uroce_redop)c->redop;
	const char *s = inplace ? rbuf : sbuf;

	*out = rbuf;
	switch (c->op) {
	case CC_ALLREDUCE: return uroce_allreduce(comm, s, rbuf, c->count, dt, op);
	case CC_REDUCE: return uroce_reduce(comm, s, rbuf, c->count, dt, op, c->root);
	case CC_BROADCAST: return uroce_broadcast(comm, s, rbuf, c->count, dt, c->root);
	case CC_ALLGATHER:
		return uroce_allgather(comm, inplace ? rbuf + (size_t)r * c->count * es : sbuf,
				       rbuf, c->count, dt);
	case CC_REDUCESCATTER:
		if (inplace)
			*out = sbuf + (size_t)r * c->count * es;
		return uroce_reduce_scatter(comm, sbuf, *out, c->count, dt, op);
	case CC_ALLTOALL: return uroce_alltoall(comm, s, rbuf, c->count, dt);
	case CC_ALLTOALLV:
		return uroce_alltoallv(comm, s, v, v + n, rbuf, v + 2 * n, v + 3 * n, dt);
	default: return -1;
	}
}

int main(int argc, char **argv)
{
	static struct cc_case cs[4096];
	uroce_comm_t *comm;
	int nc, n, r, e, fails = 0;
	uint64_t seed;

	if (argc < 3) {
		fprintf(stderr, "usage: uroce-launch -n N coll_check CASES REFDIR [SEED]\n");
		return 2;
	}
	seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 1;
	nc = cc_read(argv[1], cs, 4096);
	if (nc < 0)
		return 2;
	e = uroce_comm_init(&comm, NULL);
	if (e) {
		fprintf(stderr, "coll_check: init: %d\n", e);
		return 1;
	}
	n = uroce_comm_size(comm);
	r = uroce_comm_rank(comm);
	size_t *v = calloc(4 * (size_t)n, sizeof(size_t));
	for (int k = 0; k < nc; k++) {
		const struct cc_case *c = &cs[k];
		size_t sc, rc, es = cc_type_size[c->type];
		int inplace = k % 2 == 1, mis = k % 3 == 1 ? 1 + k % 7 : 0;
		char *out, *sraw, *rraw, *sbuf, *rbuf;

		if (c->root >= n)
			continue;
		cc_sizes(c, n, r, &sc, &rc);
		if (c->op == CC_ALLTOALLV) {
			size_t so = 0, ro = 0;
			for (int j = 0; j < n; j++) {
				v[j] = cc_vcount(c->count, r, j); v[n + j] = so; so += v[j];
				v[2 * n + j] = cc_vcount(c->count, j, r); v[3 * n + j] = ro; ro += v[2 * n + j];
			}
		}
		size_t big = (sc > rc ? sc : rc) * es + 16;
		sraw = malloc(big + 8);
		rraw = calloc(big + 8, 1);
		sbuf = sraw + mis;
		rbuf = rraw + mis;
		cc_fill(c, seed + (uint64_t)k, r, sbuf, sc);
		if (inplace) {
			/* The input where the in-place convention expects it. */
			if (c->op == CC_ALLGATHER)
				memcpy(rbuf + (size_t)r * c->count * es, sbuf, sc * es);
			else if (c->op != CC_REDUCESCATTER)
				memcpy(rbuf, sbuf, sc * es);
		}
		e = run(comm, c, inplace, sbuf, rbuf, v, n, &out);
		if (e) {
			fprintf(stderr, "FAIL case %d (%s %s %s count %zu): error %d: %s\n", k,
				cc_op_names[c->op], cc_type_names[c->type], cc_redop_names[c->redop],
				c->count, e, uroce_comm_strerror(comm));
			return 1;
		}
		long bad = 0;
		size_t first = 0;
		double got_v = 0, want_v = 0;
		int has_out = c->op != CC_REDUCE || r == c->root;
		if (has_out && cc_mpi_can(c)) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/%d.r%d", argv[2], k, r);
			FILE *f = fopen(path, "rb");
			char *ref = malloc(rc * es + 1);
			if (!f || fread(ref, 1, rc * es, f) != rc * es) {
				fprintf(stderr, "FAIL case %d: no reference %s\n", k, path);
				return 1;
			}
			fclose(f);
			int fl = cc_reducing(c) && c->type <= CC_BF16;
			for (size_t i = 0; i < rc; i++) {
				double g = uroce_dtype_get((enum uroce_dtype)c->type, out, i);
				double w = uroce_dtype_get((enum uroce_dtype)c->type, ref, i);
				int ok = fl ? fabs(g - w) <= eps[c->type] * n * (fabs(w) + 64) :
					      !memcmp(out + i * es, ref + i * es, es);
				if (!ok && !bad++) {
					first = i; got_v = g; want_v = w;
				}
			}
			free(ref);
		} else if (has_out) {
			for (size_t i = 0; i < rc; i++) {
				size_t g = c->op == CC_REDUCESCATTER ? (size_t)r * c->count + i : i;
				double tol, w = ref_reduce(c, seed + (uint64_t)k, n, g, &tol);
				double got = uroce_dtype_get((enum uroce_dtype)c->type, out, i);
				if (!(fabs(got - w) <= tol) && !bad++) {
					first = i; got_v = got; want_v = w;
				}
			}
		}
		if (bad) {
			fprintf(stderr, "FAIL case %d (%s %s %s count %zu root %d, %s, misalign %d, algo %s): "
				"%ld wrong, first at %zu: %.17g vs reference %.17g\n", k,
				cc_op_names[c->op], cc_type_names[c->type], cc_redop_names[c->redop],
				c->count, c->root, inplace ? "in place" : "out of place", mis,
				uroce_comm_last_algo(comm), bad, first, got_v, want_v);
			fails++;
		} else if (r == 0 && getenv("COLL_CHECK_VERBOSE")) {
			printf("ok case %d: %s %s %s count %zu (%s)\n", k, cc_op_names[c->op],
			       cc_type_names[c->type], cc_redop_names[c->redop], c->count,
			       uroce_comm_last_algo(comm));
		}
		free(sraw);
		free(rraw);
	}
	/* Everyone agrees on the verdict. */
	int64_t f = fails;
	e = uroce_allreduce(comm, &f, &f, 1, UROCE_INT64, UROCE_SUM);
	if (r == 0)
		printf("coll_check: %d ranks, %d cases: %s (%lld rank-case failures)\n", n, nc,
		       !e && !f ? "PASS" : "FAIL", (long long)f);
	uroce_comm_destroy(comm);
	free(v);
	return e || f ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Shared by the MPI reference generator (coll_ref_mpi.c, built with mpicc,
 * no uroce code) and the uroce checker (coll_check.c): the case list format
 * and the deterministic inputs.
 *
 * Case file: one case a line, "op type redop count root", '#' comments.
 * The inputs are chosen so that MPI's and our results can be compared
 * exactly where the arithmetic allows it: sums of multiples of 1/4 below
 * 2^8, products of +-{1/2, 1, 2}, small integers for int products.
 */
#ifndef COLL_CASE_H
#define COLL_CASE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum cc_op { CC_ALLREDUCE, CC_REDUCE, CC_BROADCAST, CC_ALLGATHER, CC_REDUCESCATTER,
	     CC_ALLTOALL, CC_ALLTOALLV, CC_NOPS };
static const char *const cc_op_names[CC_NOPS] = { "allreduce", "reduce", "broadcast",
						  "allgather", "reducescatter", "alltoall",
						  "alltoallv" };
/* Same order as enum uroce_dtype / uroce_redop. */
static const char *const cc_type_names[] = { "float32", "float64", "float16", "bfloat16",
					     "int32", "int64", "uint8" };
static const size_t cc_type_size[] = { 4, 8, 2, 2, 4, 8, 1 };
static const char *const cc_redop_names[] = { "sum", "prod", "min", "max", "avg" };
enum { CC_F32, CC_F64, CC_F16, CC_BF16, CC_I32, CC_I64, CC_U8, CC_NTYPES };
enum { CC_SUM, CC_PROD, CC_MIN, CC_MAX, CC_AVG, CC_NREDOPS };

struct cc_case {
	int op, type, redop, root;
	size_t count;
};

static inline int cc_lookup(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], s))
			return i;
	return -1;
}

/* Reads up to max cases; returns the count or -1 on a bad line. */
static inline int cc_read(const char *path, struct cc_case *cs, int max)
{
	FILE *f = fopen(path, "r");
	char line[256], op[32], ty[32], ro[32];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f) && n < max) {
		struct cc_case *c = &cs[n];
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%31s %31s %31s %zu %d", op, ty, ro, &c->count, &c->root) != 5 ||
		    (c->op = cc_lookup(cc_op_names, CC_NOPS, op)) < 0 ||
		    (c->type = cc_lookup(cc_type_names, CC_NTYPES, ty)) < 0 ||
		    (c->redop = cc_lookup(cc_redop_names, CC_NREDOPS, ro)) < 0) {
			fprintf(stderr, "bad case line: %s", line);
			fclose(f);
			return -1;
		}
		n++;
	}
	fclose(f);
	return n;
}

static inline int cc_reducing(const struct cc_case *c)
{
	return c->op == CC_ALLREDUCE || c->op == CC_REDUCE || c->op == CC_REDUCESCATTER;
}

/* Open MPI 4.1 has no float16/bfloat16 reductions and no avg. */
static inline int cc_mpi_can(const struct cc_case *c)
{
	if (!cc_reducing(c))
		return 1;
	return c->type != CC_F16 && c->type != CC_BF16 && c->redop != CC_AVG;
}

/* alltoallv: elements from src to dst. */
static inline size_t cc_vcount(size_t count, int src, int dst)
{
	return count ? count - 1 + (size_t)((src * 3 + dst) % 4) : (size_t)((src + dst) % 2);
}

/* Elements of rank r's send and receive buffers. */
static inline void cc_sizes(const struct cc_case *c, int n, int r, size_t *sc, size_t *rc)
{
	switch (c->op) {
	case CC_ALLGATHER: *sc = c->count; *rc = c->count * n; break;
	case CC_REDUCESCATTER: *sc = c->count * n; *rc = c->count; break;
	case CC_ALLTOALL: *sc = *rc = c->count * n; break;
	case CC_ALLTOALLV:
		*sc = *rc = 0;
		for (int j = 0; j < n; j++) {
			*sc += cc_vcount(c->count, r, j);
			*rc += cc_vcount(c->count, j, r);
		}
		break;
	default: *sc = *rc = c->count; break;
	}
}

static inline uint64_t cc_hash(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

/* The input value of element i at rank r, as a double that the type holds
 * exactly. */
static inline double cc_value(const struct cc_case *c, uint64_t seed, int r, size_t i)
{
	uint64_t h = cc_hash(seed ^ cc_hash((uint64_t)r * 0x9e3779b97f4a7c15ull + i));
	int t = c->type;

	if (c->redop == CC_PROD && cc_reducing(c)) {
		static const double fv[] = { -2, -1, -0.5, 0.5, 1, 2, 1, 1 };
		static const double iv[] = { -2, -1, 1, 2, 1, 1, 3, -1 };
		if (t == CC_U8)
			return (double)(h % 7 + 1);
		return (t == CC_I32 || t == CC_I64) ? iv[h % 8] : fv[h % 8];
	}
	switch (t) {
	/* Keep uint8 sums below 256: Open MPI 4.1's op/avx saturates uint8
	 * MPI_SUM where C (and we) wrap. */
	case CC_U8: return (double)(cc_reducing(c) ? h % 32 : h % 256);
	case CC_I32: return (double)((int64_t)(h % 200001) - 100000);
	case CC_I64: return (double)((int64_t)(h % 2000000001ull) - 1000000000) * 1024.0;
	default: return (double)((int64_t)(h % 129) - 64) / 4.0; /* -16..16 by 1/4 */
	}
}

/* Exactly representable values only (see cc_value), so no rounding. */
static inline uint16_t cc_to_half(double d)
{
	float f = (float)d;
	uint32_t u;

	memcpy(&u, &f, 4);
	if (!(u & 0x7fffffff))
		return (uint16_t)(u >> 16);
	uint32_t sign = (u >> 16) & 0x8000;
	int e = (int)((u >> 23) & 0xff) - 127 + 15;
	return (uint16_t)(sign | (uint32_t)e << 10 | (u & 0x7fffff) >> 13);
}

static inline void cc_store(int type, void *buf, size_t i, double v)
{
	char *p = (char *)buf + i * cc_type_size[type];
	union { float f; double d; uint16_t h; int32_t i32; int64_t i64; uint8_t u8; } x;

	switch (type) {
	case CC_F32: x.f = (float)v; break;
	case CC_F64: x.d = v; break;
	case CC_F16: x.h = cc_to_half(v); break;
	case CC_BF16: { float f = (float)v; uint32_t u; memcpy(&u, &f, 4); x.h = (uint16_t)(u >> 16); break; }
	case CC_I32: x.i32 = (int32_t)v; break;
	case CC_I64: x.i64 = (int64_t)v; break;
	default: x.u8 = (uint8_t)(int64_t)v; break;
	}
	memcpy(p, &x, cc_type_size[type]);
}

static inline void cc_fill(const struct cc_case *c, uint64_t seed, int r, void *buf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cc_store(c->type, buf, i, cc_value(c, seed, r, i));
}
#endif

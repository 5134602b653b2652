/* SPDX-License-Identifier: MIT */
/*
 * Type tables, algorithm selection and the ring building blocks.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "coll_internal.h"

static const struct {
	const char *name;
	const char *alias[3];
	size_t size;
} dtypes[UROCE_DTYPE_MAX] = {
	[UROCE_FLOAT32] = { "float32", { "float", "f32", "fp32" }, 4 },
	[UROCE_FLOAT64] = { "float64", { "double", "f64", "fp64" }, 8 },
	[UROCE_FLOAT16] = { "float16", { "half", "f16", "fp16" }, 2 },
	[UROCE_BFLOAT16] = { "bfloat16", { "bf16", NULL, NULL }, 2 },
	[UROCE_INT32] = { "int32", { "int", "i32", NULL }, 4 },
	[UROCE_INT64] = { "int64", { "i64", "long", NULL }, 8 },
	[UROCE_UINT8] = { "uint8", { "u8", "char", "byte" }, 1 },
};

static const char *const redops[UROCE_REDOP_MAX] = {
	[UROCE_SUM] = "sum", [UROCE_PROD] = "prod", [UROCE_MIN] = "min",
	[UROCE_MAX] = "max", [UROCE_AVG] = "avg",
};

size_t uroce_dtype_size(enum uroce_dtype dt)
{
	return (unsigned)dt < UROCE_DTYPE_MAX ? dtypes[dt].size : 0;
}

const char *uroce_dtype_name(enum uroce_dtype dt)
{
	return (unsigned)dt < UROCE_DTYPE_MAX ? dtypes[dt].name : "?";
}

const char *uroce_redop_name(enum uroce_redop op)
{
	return (unsigned)op < UROCE_REDOP_MAX ? redops[op] : "?";
}

int uroce_dtype_parse(const char *s)
{
	for (int i = 0; i < UROCE_DTYPE_MAX; i++) {
		if (!strcasecmp(s, dtypes[i].name))
			return i;
		for (int j = 0; j < 3; j++)
			if (dtypes[i].alias[j] && !strcasecmp(s, dtypes[i].alias[j]))
				return i;
	}
	return -1;
}

int uroce_redop_parse(const char *s)
{
	for (int i = 0; i < UROCE_REDOP_MAX; i++)
		if (!strcasecmp(s, redops[i]))
			return i;
	return -1;
}

/* Which algorithms implement which collective (bit per enum ur_algo). */
#define B(a) (1u << UR_A_##a)
static const unsigned algos_of[UR_C_MAX] = {
	[UR_C_ALLREDUCE] = B(RING) | B(RABENSEIFNER) | B(RECDOUBLING) | B(TREE),
	[UR_C_REDUCE] = B(RING) | B(TREE),
	[UR_C_BROADCAST] = B(RING) | B(TREE),
	[UR_C_ALLGATHER] = B(RING) | B(BRUCK),
	[UR_C_REDUCESCATTER] = B(RING) | B(HALVING),
	[UR_C_ALLTOALL] = B(PAIRWISE),
	[UR_C_ALLTOALLV] = B(PAIRWISE),
	[UR_C_BARRIER] = B(DISSEMINATION),
};

/*
 * Latency-bound sizes use log(n)-step algorithms, bandwidth-bound sizes the
 * ring. Thresholds are per rank's vector in bytes. An override that the
 * collective does not implement is ignored (documented).
 */
enum ur_algo ur__pick(struct uroce_comm *c, enum ur_coll_kind k, size_t bytes)
{
	enum ur_algo a;

	if (c->size == 1)
		return UR_A_LOCAL;
	if (c->algo_override != UR_A_AUTO && (algos_of[k] & (1u << c->algo_override)))
		return c->algo_override;
	switch (k) {
	case UR_C_ALLREDUCE: {
		/* On one host with one copy (CMA) bytes are cheap and steps
		 * dear: from 4 ranks (a power of two) recursive doubling's
		 * log2 n whole-vector steps beat Rabenseifner's 2 log2 n up
		 * to 1 MiB (measured: docs/collectives.md). */
		int pow2 = !(c->size & (c->size - 1));
		size_t rd_max = c->cma && c->size >= 4 && pow2 ? UR_RD_CMA_MAX : 16384;

		a = bytes <= rd_max ? UR_A_RECDOUBLING :
		    bytes <= (1u << 20) ? UR_A_RABENSEIFNER : UR_A_RING;
		break;
	}
	case UR_C_REDUCE:
	case UR_C_BROADCAST:
		a = bytes <= 65536 ? UR_A_TREE : UR_A_RING;
		break;
	case UR_C_ALLGATHER:
		/* Bruck's ceil(log2 n) steps against the ring's n-1 (the
		 * same at 3 ranks), while its copies are cheap (measured:
		 * docs/collectives.md). */
		a = c->size >= 4 && bytes <= UR_BRUCK_MAX ? UR_A_BRUCK : UR_A_RING;
		break;
	case UR_C_REDUCESCATTER: {
		/* Recursive halving: log2 n steps at a power of two, with
		 * the same bytes as the ring; otherwise a fold of whole
		 * vectors first and a block back last (measured:
		 * docs/collectives.md). Not at 3 ranks: 3 steps for 2. */
		size_t total = bytes * (size_t)c->size;
		int pow2 = !(c->size & (c->size - 1));

		a = c->size >= 4 && total <= (pow2 ? UR_HALVING_POW2_MAX : UR_HALVING_MAX) ?
			    UR_A_HALVING : UR_A_RING;
		break;
	}
	case UR_C_ALLTOALL:
	case UR_C_ALLTOALLV:
		a = UR_A_PAIRWISE;
		break;
	case UR_C_BARRIER:
		a = UR_A_DISSEMINATION;
		break;
	default:
		a = UR_A_RING;
		break;
	}
	return a;
}

static int mod(int a, int n)
{
	return ((a % n) + n) % n;
}

/*
 * Ring reduce-scatter over n blocks: in step s rank r sends block
 * r-s+shift to r+1 and reduces block r-s-1+shift from r-1 into buf. After
 * n-1 steps rank r holds the full reduction of block r+1+shift. Each step
 * streams its block in slot-sized chunks, several in flight. Step 0 sends
 * a block of the input; every later step sends the block the previous one
 * reduced; each received block is reduced once, from the input's block:
 * so in need not be copied into buf first.
 */
int ur__ring_reduce_scatter(struct uroce_comm *c, char *buf, const char *in,
			     size_t count, int shift, uint32_t sig,
			     enum uroce_dtype dt, enum uroce_redop op)
{
	int n = c->size, r = c->rank;
	size_t es = uroce_dtype_size(dt);

	if (n == 1 && buf != in)
		ur_move(buf, in, count * es);
	for (int s = 0; s < n - 1; s++) {
		int sb = mod(r - s + shift, n), rb = mod(r - s - 1 + shift, n);
		size_t so = ur__blk_off(count, n, sb) * es;
		size_t ro = ur__blk_off(count, n, rb) * es;
		int e = ur__sendrecv_reduce(c, mod(r + 1, n), (s ? buf : in) + so,
					     ur__blk_len(count, n, sb) * es,
					     mod(r - 1, n), buf + ro, in + ro,
					     ur__blk_len(count, n, rb) * es,
					     sig, dt, op);
		if (e)
			return e;
	}
	return 0;
}

/* Ring allgather: rank r starts owning block r+1+shift. */
int ur__ring_allgather_blocks(struct uroce_comm *c, char *buf, size_t count,
			       int shift, uint32_t sig, enum uroce_dtype dt)
{
	int n = c->size, r = c->rank;
	size_t es = uroce_dtype_size(dt);

	for (int s = 0; s < n - 1; s++) {
		int sb = mod(r + 1 + shift - s, n), rb = mod(r + shift - s, n);
		int e = ur__sendrecv(c, mod(r + 1, n), buf + ur__blk_off(count, n, sb) * es,
				      ur__blk_len(count, n, sb) * es, mod(r - 1, n),
				      buf + ur__blk_off(count, n, rb) * es,
				      ur__blk_len(count, n, rb) * es, UR_X_RECV, sig,
				      dt, UROCE_SUM);
		if (e)
			return e;
	}
	return 0;
}

double uroce_dtype_get(enum uroce_dtype dt, const void *buf, size_t i)
{
	const char *p = (const char *)buf + i * uroce_dtype_size(dt);
	union { float f; double d; uint16_t h; int32_t i32; int64_t i64; uint8_t u8; } v;

	memcpy(&v, p, uroce_dtype_size(dt));
	switch (dt) {
	case UROCE_FLOAT32: return v.f;
	case UROCE_FLOAT64: return v.d;
	case UROCE_FLOAT16: return ur__half_to_float(v.h);
	case UROCE_BFLOAT16: return ur__bf16_to_float(v.h);
	case UROCE_INT32: return v.i32;
	case UROCE_INT64: return (double)v.i64;
	case UROCE_UINT8: return v.u8;
	default: return 0;
	}
}

void uroce_dtype_set(enum uroce_dtype dt, void *buf, size_t i, double x)
{
	char *p = (char *)buf + i * uroce_dtype_size(dt);
	union { float f; double d; uint16_t h; int32_t i32; int64_t i64; uint8_t u8; } v;

	switch (dt) {
	case UROCE_FLOAT32: v.f = (float)x; break;
	case UROCE_FLOAT64: v.d = x; break;
	case UROCE_FLOAT16: v.h = ur__float_to_half((float)x); break;
	case UROCE_BFLOAT16: v.h = ur__float_to_bf16((float)x); break;
	case UROCE_INT32: v.i32 = (int32_t)x; break;
	case UROCE_INT64: v.i64 = (int64_t)x; break;
	case UROCE_UINT8: v.u8 = (uint8_t)(int64_t)x; break;
	default: return;
	}
	memcpy(p, &v, uroce_dtype_size(dt));
}

/* SPDX-License-Identifier: MIT */
/*
 * Reduction kernels: dst[i] = dst[i] op src[i], or x[i] op src[i].
 * Compiled with -O3 so gcc vectorises the plain loops. Elements are
 * loaded and stored with memcpy, so buffers need no alignment (the
 * compiler emits unaligned vector accesses and never peels assuming
 * element alignment). float16 and bfloat16 go through float: convert,
 * operate, round to nearest even.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "coll_internal.h"

float ur__half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
	float f;

	if (exp == 0x1f) {
		u = sign | 0x7f800000u | man << 13; /* inf / NaN */
	} else if (exp) {
		u = sign | (exp + 112) << 23 | man << 13;
	} else {
		/* zero or subnormal: man * 2^-24 */
		f = (float)man * 5.9604644775390625e-8f;
		return sign ? -f : f;
	}
	memcpy(&f, &u, 4);
	return f;
}

uint16_t ur__float_to_half(float f)
{
	uint32_t u, sign, exp, man;

	memcpy(&u, &f, 4);
	sign = (u >> 16) & 0x8000;
	exp = (u >> 23) & 0xff;
	man = u & 0x7fffff;
	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | man >> 13 : 0));
	int e = (int)exp - 127 + 15;
	if (e >= 0x1f)
		return (uint16_t)(sign | 0x7c00);
	if (e <= 0) {
		if (e < -10)
			return (uint16_t)sign;
		man |= 0x800000;
		int shift = 14 - e;
		uint32_t half = man >> shift;
		uint32_t rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
		if (rem > mid || (rem == mid && (half & 1)))
			half++;
		return (uint16_t)(sign | half);
	}
	uint32_t h = sign | (uint32_t)e << 10 | man >> 13;
	uint32_t rem = man & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
		h++; /* may carry into the exponent: correct, up to inf */
	return (uint16_t)h;
}

float ur__bf16_to_float(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

uint16_t ur__float_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	if ((u & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

#define LD(T, p, i) ({ T _v; memcpy(&_v, (p) + (i) * sizeof(T), sizeof(T)); _v; })
#define ST(T, p, i, v) do { T _v = (v); memcpy((p) + (i) * sizeof(T), &_v, sizeof(T)); } while (0)

/*
 * Each kernel comes in two forms: name(d, s, n), d[i] = d[i] op s[i], and
 * name_3(d, x, s, n), d[i] = x[i] op s[i] (d apart from x and s), so that
 * a reduction out of place reads its two inputs and writes the result in
 * one pass instead of copying x to d first. Both are built for AVX2 and
 * the baseline (UR_VEC). The body reads a from x: in the two-operand
 * form x is d, which restrict allows (x is based on d).
 */
#define FORMS(name, ...)                                                     \
	UR_VEC static void name##_3(char *restrict d, const char *restrict x,\
				    const char *restrict s, size_t n)        \
	{                                                                    \
		for (size_t i = 0; i < n; i++) { __VA_ARGS__ }               \
	}                                                                    \
	UR_VEC static void name(char *restrict d, const char *restrict s,    \
				size_t n)                                    \
	{                                                                    \
		const char *x = d;                                           \
		for (size_t i = 0; i < n; i++) { __VA_ARGS__ }               \
	}
#define KERNEL(name, T, EXPR)                                                \
	FORMS(name, T a = LD(T, x, i), b = LD(T, s, i); ST(T, d, i, EXPR);)

#define MINMAX(tn, T)                                                        \
	KERNEL(min_##tn, T, (b < a ? b : a))                                 \
	KERNEL(max_##tn, T, (b > a ? b : a))
#define KERNELS(tn, T)                                                       \
	KERNEL(sum_##tn, T, (T)(a + b))                                      \
	KERNEL(prod_##tn, T, (T)(a * b))                                     \
	MINMAX(tn, T)

KERNELS(f32, float)
KERNELS(f64, double)
KERNELS(u8, uint8_t)
MINMAX(i32, int32_t)
MINMAX(i64, int64_t)

/* Integer sums/products wrap as two's complement (unsigned arithmetic),
 * as MPI implementations do in practice; no signed-overflow UB. */
KERNEL(wsum_i32, int32_t, (int32_t)((uint32_t)a + (uint32_t)b))
KERNEL(wprod_i32, int32_t, (int32_t)((uint32_t)a * (uint32_t)b))
KERNEL(wsum_i64, int64_t, (int64_t)((uint64_t)a + (uint64_t)b))
KERNEL(wprod_i64, int64_t, (int64_t)((uint64_t)a * (uint64_t)b))

#define HKERNEL(name, TO, FROM, EXPR)                                        \
	FORMS(name, float a = FROM(LD(uint16_t, x, i));                      \
		    float b = FROM(LD(uint16_t, s, i));                      \
		    ST(uint16_t, d, i, TO(EXPR));)
#define HKERNELS(tn, TO, FROM)                                               \
	HKERNEL(sum_##tn, TO, FROM, a + b)                                   \
	HKERNEL(prod_##tn, TO, FROM, a * b)                                  \
	HKERNEL(min_##tn, TO, FROM, (b < a ? b : a))                         \
	HKERNEL(max_##tn, TO, FROM, (b > a ? b : a))

HKERNELS(f16, ur__float_to_half, ur__half_to_float)
HKERNELS(bf16, ur__float_to_bf16, ur__bf16_to_float)

typedef void (*kernel_fn)(char *restrict, const char *restrict, size_t);
typedef void (*kernel3_fn)(char *restrict, const char *restrict,
			   const char *restrict, size_t);

/* [dtype][op]; avg reduces as sum and divides in ur__reduce_finish. */
#define KERNEL_TABLE(type, sfx)                                              \
	static const type kernels##sfx[UROCE_DTYPE_MAX][UROCE_REDOP_MAX] = { \
		[UROCE_FLOAT32] = { sum_f32##sfx, prod_f32##sfx, min_f32##sfx, max_f32##sfx, sum_f32##sfx }, \
		[UROCE_FLOAT64] = { sum_f64##sfx, prod_f64##sfx, min_f64##sfx, max_f64##sfx, sum_f64##sfx }, \
		[UROCE_FLOAT16] = { sum_f16##sfx, prod_f16##sfx, min_f16##sfx, max_f16##sfx, sum_f16##sfx }, \
		[UROCE_BFLOAT16] = { sum_bf16##sfx, prod_bf16##sfx, min_bf16##sfx, max_bf16##sfx, sum_bf16##sfx }, \
		[UROCE_INT32] = { wsum_i32##sfx, wprod_i32##sfx, min_i32##sfx, max_i32##sfx, wsum_i32##sfx }, \
		[UROCE_INT64] = { wsum_i64##sfx, wprod_i64##sfx, min_i64##sfx, max_i64##sfx, wsum_i64##sfx }, \
		[UROCE_UINT8] = { sum_u8##sfx, prod_u8##sfx, min_u8##sfx, max_u8##sfx, sum_u8##sfx }, \
	};
KERNEL_TABLE(kernel_fn, )
KERNEL_TABLE(kernel3_fn, _3)

void ur__reduce(void *dst, const void *src, size_t count,
		 enum uroce_dtype dt, enum uroce_redop op)
{
	kernels[dt][op](dst, src, count);
}

void ur__reduce3(void *dst, const void *a, const void *src, size_t count,
		  enum uroce_dtype dt, enum uroce_redop op)
{
	if (dst == a)
		kernels[dt][op](dst, src, count);
	else
		kernels_3[dt][op](dst, a, src, count);
}

void ur__reduce_finish(void *buf, size_t count, enum uroce_dtype dt,
			enum uroce_redop op, int n)
{
	char *p = buf;

	if (op != UROCE_AVG || n == 1)
		return;
	for (size_t i = 0; i < count; i++) {
		switch (dt) {
		case UROCE_FLOAT32: ST(float, p, i, LD(float, p, i) / (float)n); break;
		case UROCE_FLOAT64: ST(double, p, i, LD(double, p, i) / n); break;
		case UROCE_FLOAT16:
			ST(uint16_t, p, i, ur__float_to_half(ur__half_to_float(LD(uint16_t, p, i)) / (float)n));
			break;
		case UROCE_BFLOAT16:
			ST(uint16_t, p, i, ur__float_to_bf16(ur__bf16_to_float(LD(uint16_t, p, i)) / (float)n));
			break;
		case UROCE_INT32: ST(int32_t, p, i, LD(int32_t, p, i) / n); break;
		case UROCE_INT64: ST(int64_t, p, i, LD(int64_t, p, i) / n); break;
		case UROCE_UINT8: ST(uint8_t, p, i, (uint8_t)(LD(uint8_t, p, i) / n)); break;
		default: break;
		}
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * Reduction kernels and float16/bfloat16 conversions (no network).
 */
#include <math.h>

#include "coll_internal.h"
#include "ur_test.h"

static void test_half_roundtrip(void)
{
	/* Every finite half converts to float and back unchanged. */
	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7c00) == 0x7c00)
			continue;
		ASSERT_EQ(ur__float_to_half(ur__half_to_float((uint16_t)h)), h);
	}
	ASSERT_EQ(ur__float_to_half(1.0f), 0x3c00);
	ASSERT_EQ(ur__float_to_half(65504.0f), 0x7bff);
	ASSERT_EQ(ur__float_to_half(65520.0f), 0x7c00); /* rounds to inf */
	ASSERT_EQ(ur__float_to_half(1.0f + 0x1p-11f), 0x3c00); /* tie to even */
	ASSERT_EQ(ur__float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);
	ASSERT_EQ(ur__float_to_half(0x1p-24f), 0x0001); /* smallest subnormal */
	ASSERT(ur__half_to_float(0x0001) == 0x1p-24f);
}

static void test_bf16_roundtrip(void)
{
	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7f80) == 0x7f80)
			continue;
		ASSERT_EQ(ur__float_to_bf16(ur__bf16_to_float((uint16_t)h)), h);
	}
	ASSERT_EQ(ur__float_to_bf16(1.0f), 0x3f80);
	ASSERT_EQ(ur__float_to_bf16(1.0f + 0x1p-8f), 0x3f80); /* tie to even */
	ASSERT_EQ(ur__float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
}

/* Every type and op on a misaligned buffer against a scalar reference. */
static void test_kernels(void)
{
	enum { N = 1037 };
	static char a[N * 8 + 16], b[N * 8 + 16];

	for (int dt = 0; dt < UROCE_DTYPE_MAX; dt++) {
		for (int op = 0; op < UROCE_REDOP_MAX; op++) {
			char *x = a + 3, *y = b + 5;
			for (size_t i = 0; i < N; i++) {
				uroce_dtype_set(dt, x, i, (double)((int)(i % 7) - 3));
				uroce_dtype_set(dt, y, i, (double)((int)(i % 5) - 1));
			}
			if (dt == UROCE_UINT8)
				for (size_t i = 0; i < N; i++) {
					uroce_dtype_set(dt, x, i, (double)(i % 6 + 250));
					uroce_dtype_set(dt, y, i, (double)(i % 5));
				}
			ur__reduce(x, y, N, dt, op);
			ur__reduce_finish(x, N, dt, op, 2);
			for (size_t i = 0; i < N; i++) {
				double p = dt == UROCE_UINT8 ? (double)(i % 6 + 250) : (double)((int)(i % 7) - 3);
				double q = dt == UROCE_UINT8 ? (double)(i % 5) : (double)((int)(i % 5) - 1);
				double w = op == UROCE_PROD ? p * q : op == UROCE_MIN ? fmin(p, q) :
					   op == UROCE_MAX ? fmax(p, q) : p + q;
				if (dt == UROCE_UINT8)
					w = fmod(w, 256);
				if (op == UROCE_AVG)
					w = dt >= UROCE_INT32 ? trunc(w / 2) : w / 2;
				double g = uroce_dtype_get(dt, x, i);
				if (g != w)
					UR_FAIL("%s %s element %zu: %g want %g", uroce_dtype_name(dt),
						uroce_redop_name(op), i, g, w);
			}
		}
	}
}

/* Three operands (out of place): dst = a op src equals copying a and
 * reducing src into it, for every type and op, on misaligned buffers and
 * an odd count, writing nothing past dst's end; a == dst is the
 * two-operand case. */
static void test_reduce3(void)
{
	enum { N = 9001 };
	static char a[N * 8 + 16], s[N * 8 + 16], d[N * 8 + 16], ref[N * 8 + 16];

	for (int dt = 0; dt < UROCE_DTYPE_MAX; dt++) {
		for (int op = 0; op < UROCE_REDOP_MAX; op++) {
			size_t es = uroce_dtype_size(dt);
			char *x = a + 1, *y = s + 7, *z = d + 3, *r = ref + 5;

			for (size_t i = 0; i < N; i++) {
				uroce_dtype_set(dt, x, i, (double)(i % 9) + 1);
				uroce_dtype_set(dt, y, i, (double)(i % 4) + 1);
			}
			memset(z, 0x5a, N * es + 8);
			memcpy(r, x, N * es);
			ur__reduce(r, y, N, dt, op);
			ur__reduce3(z, x, y, N, dt, op);
			ASSERT(memcmp(z, r, N * es) == 0);
			ASSERT(z[N * es] == 0x5a);
			ASSERT(uroce_dtype_get(dt, x, 10) == 2.0); /* a untouched */
			ur__reduce3(x, x, y, N, dt, op);
			ASSERT(memcmp(x, r, N * es) == 0);
		}
	}
}

/* ur_copy, ur_copy_stream and ur_move equal memcpy and memmove: lengths
 * around the vector loops' thresholds and their 64- and 128-byte steps,
 * relative misalignments of the two buffers from -60 to 63 bytes, overlap
 * both ways; and they write nothing outside the destination. */
static void test_copy(void)
{
	enum { MAXN = 3 * 4096 + 77, PAD = 256 };
	static uint8_t src[MAXN + 2 * PAD], dst[MAXN + 2 * PAD], ref[MAXN + 2 * PAD];
	static const size_t lens[] = { 0, 1, 127, 128, 129, 191, 2047, 2048,
				       2049, 2048 + 127, 4096, MAXN };

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 131 + 7);
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		for (int so = 0; so < 64; so += 5) {
			for (int d = 0; d < 64; d += 3) {
				size_t n = lens[l];

				memset(dst, 0xa5, sizeof(dst));
				memset(ref, 0xa5, sizeof(ref));
				ur_copy(dst + PAD + d, src + PAD + so, n);
				memcpy(ref + PAD + d, src + PAD + so, n);
				ASSERT(memcmp(dst, ref, sizeof(dst)) == 0);
				memset(dst, 0xa5, sizeof(dst));
				ur_copy_stream(dst + PAD + d, src + PAD + so, n);
				ASSERT(memcmp(dst, ref, sizeof(dst)) == 0);
			}
		}
	}
	/* overlapping moves, forwards and backwards, and no-ops */
	static const long shifts[] = { -4100, -33, -1, 0, 1, 16, 33, 4100 };
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		for (size_t k = 0; k < sizeof(shifts) / sizeof(shifts[0]); k++) {
			size_t n = lens[l] > 4300 ? 4300 : lens[l]; /* in bounds */
			uint8_t *b = dst + PAD + 4100, *r = ref + PAD + 4100;

			memcpy(dst, src, sizeof(dst));
			memcpy(ref, src, sizeof(ref));
			ur_move(b + shifts[k], b, n);
			memmove(r + shifts[k], r, n);
			ASSERT(memcmp(dst, ref, sizeof(dst)) == 0);
		}
	}
}

static const struct ur_test_case tests[] = {
	{ "copy", test_copy },
	{ "reduce3", test_reduce3 },
	{ "half_roundtrip", test_half_roundtrip },
	{ "bf16_roundtrip", test_bf16_roundtrip },
	{ "kernels", test_kernels },
	{ NULL, NULL },
};
UR_TEST_MAIN(tests)

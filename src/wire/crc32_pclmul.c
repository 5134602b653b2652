// SPDX-License-Identifier: MIT
/*
 * CRC-32 by carry-less multiplication folding (Gopal et al., "Fast CRC
 * Computation for Generic Polynomials Using PCLMULQDQ Instruction", Intel
 * 2009), in the bit-reflected domain of the IEEE polynomial. Four 128-bit
 * lanes are folded 64 bytes at a time, merged into one, folded down to 64
 * bits and Barrett-reduced to 32. Long buffers first run eight lanes (128
 * bytes a step) to hide the multiplier latency, or sixteen (256 bytes a
 * step) with AVX-512; under 64 bytes one lane folds. Tails (under 16
 * bytes) go to slice-by-8.
 */
#include <stdbool.h>
#include <string.h>

#include "wire_int.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/*
 * Folding constants for P(x) = 0x104c11db7, reflected, each x^n mod P
 * shifted as the paper's section on bit reflection gives them.
 */
#define K9 0x11542778aull  /* x^(16*128+32) mod P: fold 2048 bits */
#define K10 0x1322d1430ull /* x^(16*128-32) mod P */
#define K7 0x1e88ef372ull /* x^(8*128+32) mod P: fold 1024 bits */
#define K8 0x14a7fe880ull /* x^(8*128-32) mod P */
#define K1 0x154442bd4ull /* x^(4*128+32) mod P: fold 512 bits */
#define K2 0x1c6e41596ull /* x^(4*128-32) mod P */
#define K3 0x1751997d0ull /* x^(128+32) mod P: fold 128 bits */
#define K4 0x0ccaa009eull /* x^(128-32) mod P */
#define K5 0x163cd6124ull /* x^64 mod P: fold 64 -> 32 */
#define P_RED 0x1db710641ull /* P' reflected */
#define MU 0x1f7011641ull    /* floor(x^64 / P), reflected */

#define TARGET __attribute__((target("pclmul,sse4.1")))

/* x * K (both halves) + next 16 bytes. */
TARGET static inline __m128i fold16(__m128i x, __m128i k, const uint8_t *p)
{
	__m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
	__m128i hi = _mm_clmulepi64_si128(x, k, 0x11);

	return _mm_xor_si128(_mm_xor_si128(lo, hi),
			     _mm_loadu_si128((const void *)p));
}

TARGET static inline __m128i fold_reg(__m128i x, __m128i k, __m128i y)
{
	__m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
	__m128i hi = _mm_clmulepi64_si128(x, k, 0x11);

	return _mm_xor_si128(_mm_xor_si128(lo, hi), y);
}

/* VPCLMULQDQ (AVX2 width): the same eight-lane fold over 1024 bits with
 * two lanes per 256-bit register, half the instructions per byte. */
#define TARGET256 __attribute__((target("vpclmulqdq,avx2,pclmul,sse4.1")))
/* VPCLMULQDQ (AVX-512 width): sixteen lanes, four per register. */
#define TARGET512 \
	__attribute__((target("vpclmulqdq,avx512f,avx2,pclmul,sse4.1")))
static unsigned int cpu_bits = 128; /* widest fold this CPU runs */
static unsigned int vec_bits = 128; /* widest in use (tests lower it) */

TARGET256 static inline __m256i fold32(__m256i y, __m256i k, __m256i d)
{
	__m256i lo = _mm256_clmulepi64_epi128(y, k, 0x00);
	__m256i hi = _mm256_clmulepi64_epi128(y, k, 0x11);

	return _mm256_xor_si256(_mm256_xor_si256(lo, hi), d);
}

/* Lanes x[0..7] hold bytes 16 * i of each 128-byte block. With @dst, the
 * bytes folded are also stored there: the copy rides on the loads. */
TARGET256 static size_t fold8_v256(__m128i x[8], const uint8_t *p, size_t n,
				   uint8_t *dst)
{
	const __m256i k = _mm256_set_epi64x((long long)K8, (long long)K7,
					    (long long)K8, (long long)K7);
	__m256i y0 = _mm256_set_m128i(x[1], x[0]);
	__m256i y1 = _mm256_set_m128i(x[3], x[2]);
	__m256i y2 = _mm256_set_m128i(x[5], x[4]);
	__m256i y3 = _mm256_set_m128i(x[7], x[6]);
	size_t done = 0;

	while (n - done >= 128) {
		const uint8_t *q = p + done;
		__m256i d0 = _mm256_loadu_si256((const void *)q);
		__m256i d1 = _mm256_loadu_si256((const void *)(q + 32));
		__m256i d2 = _mm256_loadu_si256((const void *)(q + 64));
		__m256i d3 = _mm256_loadu_si256((const void *)(q + 96));

		y0 = fold32(y0, k, d0);
		y1 = fold32(y1, k, d1);
		y2 = fold32(y2, k, d2);
		y3 = fold32(y3, k, d3);
		if (dst) {
			uint8_t *o = dst + done;

			_mm256_storeu_si256((void *)o, d0);
			_mm256_storeu_si256((void *)(o + 32), d1);
			_mm256_storeu_si256((void *)(o + 64), d2);
			_mm256_storeu_si256((void *)(o + 96), d3);
		}
		done += 128;
	}
	x[0] = _mm256_castsi256_si128(y0);
	x[1] = _mm256_extracti128_si256(y0, 1);
	x[2] = _mm256_castsi256_si128(y1);
	x[3] = _mm256_extracti128_si256(y1, 1);
	x[4] = _mm256_castsi256_si128(y2);
	x[5] = _mm256_extracti128_si256(y2, 1);
	x[6] = _mm256_castsi256_si128(y3);
	x[7] = _mm256_extracti128_si256(y3, 1);
	return done;
}

TARGET512 static inline __m512i fold64(__m512i z, __m512i k, __m512i d)
{
	__m512i lo = _mm512_clmulepi64_epi128(z, k, 0x00);
	__m512i hi = _mm512_clmulepi64_epi128(z, k, 0x11);

	return _mm512_ternarylogic_epi64(lo, hi, d, 0x96); /* lo ^ hi ^ d */
}

/*
 * Eight lanes in, eight out, as fold8_v256, over 256-byte blocks: the
 * first 128 bytes at @p join the lanes as lanes 8..15 (a 256-byte
 * window), four registers fold over 2048 bits, and at the end lanes 0..7
 * fold over 1024 bits onto lanes 8..15. @n >= 384 (one block past the
 * joined bytes), else nothing is done.
 */
TARGET512 static size_t fold8_v512(__m128i x[8], const uint8_t *p, size_t n,
				   uint8_t *dst)
{
	const __m512i k16 = _mm512_set_epi64((long long)K10, (long long)K9,
					     (long long)K10, (long long)K9,
					     (long long)K10, (long long)K9,
					     (long long)K10, (long long)K9);
	const __m512i k8 = _mm512_set_epi64((long long)K8, (long long)K7,
					    (long long)K8, (long long)K7,
					    (long long)K8, (long long)K7,
					    (long long)K8, (long long)K7);
	__m512i z0, z1, z2, z3;
	size_t done;

	if (n < 384)
		return 0;
	z0 = _mm512_inserti64x4(_mm512_castsi256_si512(
					_mm256_set_m128i(x[1], x[0])),
				_mm256_set_m128i(x[3], x[2]), 1);
	z1 = _mm512_inserti64x4(_mm512_castsi256_si512(
					_mm256_set_m128i(x[5], x[4])),
				_mm256_set_m128i(x[7], x[6]), 1);
	z2 = _mm512_loadu_si512((const void *)p);
	z3 = _mm512_loadu_si512((const void *)(p + 64));
	if (dst) {
		_mm512_storeu_si512((void *)dst, z2);
		_mm512_storeu_si512((void *)(dst + 64), z3);
	}
	for (done = 128; n - done >= 256; done += 256) {
		const uint8_t *q = p + done;
		__m512i d0 = _mm512_loadu_si512((const void *)q);
		__m512i d1 = _mm512_loadu_si512((const void *)(q + 64));
		__m512i d2 = _mm512_loadu_si512((const void *)(q + 128));
		__m512i d3 = _mm512_loadu_si512((const void *)(q + 192));

		z0 = fold64(z0, k16, d0);
		z1 = fold64(z1, k16, d1);
		z2 = fold64(z2, k16, d2);
		z3 = fold64(z3, k16, d3);
		if (dst) {
			uint8_t *o = dst + done;

			_mm512_storeu_si512((void *)o, d0);
			_mm512_storeu_si512((void *)(o + 64), d1);
			_mm512_storeu_si512((void *)(o + 128), d2);
			_mm512_storeu_si512((void *)(o + 192), d3);
		}
	}
	/* Sixteen lanes to eight: 0..7 over 1024 bits onto 8..15. */
	z0 = fold64(z0, k8, z2);
	z1 = fold64(z1, k8, z3);
	x[0] = _mm512_extracti32x4_epi32(z0, 0);
	x[1] = _mm512_extracti32x4_epi32(z0, 1);
	x[2] = _mm512_extracti32x4_epi32(z0, 2);
	x[3] = _mm512_extracti32x4_epi32(z0, 3);
	x[4] = _mm512_extracti32x4_epi32(z1, 0);
	x[5] = _mm512_extracti32x4_epi32(z1, 1);
	x[6] = _mm512_extracti32x4_epi32(z1, 2);
	x[7] = _mm512_extracti32x4_epi32(z1, 3);
	return done;
}

/* @dst: where the 8-lane VPCLMULQDQ loop also stores what it folds
 * (dst[i] = p[i]): *@copied bytes from byte *@at on (0 when that loop did
 * not run). */
TARGET static uint32_t fold(uint32_t reg, const uint8_t *p, size_t n,
			    uint8_t *dst, size_t *at, size_t *copied)
{
	const uint8_t *start = p;
	const __m128i k12 = _mm_set_epi64x((long long)K2, (long long)K1);
	const __m128i k34 = _mm_set_epi64x((long long)K4, (long long)K3);
	const __m128i k5 = _mm_set_epi64x(0, (long long)K5);
	const __m128i poly = _mm_set_epi64x((long long)MU, (long long)P_RED);
	const __m128i mask32 = _mm_setr_epi32(-1, 0, -1, 0);
	__m128i x0, x1, x2, x3, t0, t1, t2, t3;

	/* n >= 16 and a multiple of 16 here. */
	if (n < 64) {
		/* Headers (a pseudo header, a BTH): one lane. */
		x0 = _mm_xor_si128(_mm_loadu_si128((const void *)p),
				   _mm_cvtsi32_si128((int)reg));
		p += 16;
		n -= 16;
		goto one_lane;
	}
	x0 = _mm_loadu_si128((const __m128i *)(const void *)p);
	x1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
	x2 = _mm_loadu_si128((const __m128i *)(const void *)(p + 32));
	x3 = _mm_loadu_si128((const __m128i *)(const void *)(p + 48));
	x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)reg));
	p += 64;
	n -= 64;

	if (n >= 192) {
		const __m128i k78 = _mm_set_epi64x((long long)K8, (long long)K7);
		__m128i x4 = _mm_loadu_si128((const void *)p);
		__m128i x5 = _mm_loadu_si128((const void *)(p + 16));
		__m128i x6 = _mm_loadu_si128((const void *)(p + 32));
		__m128i x7 = _mm_loadu_si128((const void *)(p + 48));

		p += 64;
		n -= 64;
		if (vec_bits >= 256 && n >= 128) {
			__m128i x[8] = { x0, x1, x2, x3, x4, x5, x6, x7 };
			uint8_t *d = dst ? dst + (p - start) : NULL;
			size_t done = 0;

			/* The two loops store one contiguous run. */
			if (vec_bits >= 512)
				done = fold8_v512(x, p, n, d);
			if (n - done >= 128)
				done += fold8_v256(x, p + done, n - done,
						   d ? d + done : NULL);

			x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3];
			x4 = x[4], x5 = x[5], x6 = x[6], x7 = x[7];
			if (dst) {
				*at = (size_t)(p - start);
				*copied = done;
			}
			p += done;
			n -= done;
		}
		while (n >= 128) {
			x0 = fold16(x0, k78, p);
			x1 = fold16(x1, k78, p + 16);
			x2 = fold16(x2, k78, p + 32);
			x3 = fold16(x3, k78, p + 48);
			x4 = fold16(x4, k78, p + 64);
			x5 = fold16(x5, k78, p + 80);
			x6 = fold16(x6, k78, p + 96);
			x7 = fold16(x7, k78, p + 112);
			p += 128;
			n -= 128;
		}
		/* Eight lanes to four: fold the first four over 512 bits. */
		x0 = fold_reg(x0, k12, x4);
		x1 = fold_reg(x1, k12, x5);
		x2 = fold_reg(x2, k12, x6);
		x3 = fold_reg(x3, k12, x7);
	}

	while (n >= 64) {
		t0 = _mm_clmulepi64_si128(x0, k12, 0x00);
		t1 = _mm_clmulepi64_si128(x1, k12, 0x00);
		t2 = _mm_clmulepi64_si128(x2, k12, 0x00);
		t3 = _mm_clmulepi64_si128(x3, k12, 0x00);
		x0 = _mm_clmulepi64_si128(x0, k12, 0x11);
		x1 = _mm_clmulepi64_si128(x1, k12, 0x11);
		x2 = _mm_clmulepi64_si128(x2, k12, 0x11);
		x3 = _mm_clmulepi64_si128(x3, k12, 0x11);
		x0 = _mm_xor_si128(_mm_xor_si128(x0, t0),
				   _mm_loadu_si128((const void *)p));
		x1 = _mm_xor_si128(_mm_xor_si128(x1, t1),
				   _mm_loadu_si128((const void *)(p + 16)));
		x2 = _mm_xor_si128(_mm_xor_si128(x2, t2),
				   _mm_loadu_si128((const void *)(p + 32)));
		x3 = _mm_xor_si128(_mm_xor_si128(x3, t3),
				   _mm_loadu_si128((const void *)(p + 48)));
		p += 64;
		n -= 64;
	}

	/* Merge the four lanes into x0. */
	t0 = _mm_clmulepi64_si128(x0, k34, 0x00);
	x0 = _mm_clmulepi64_si128(x0, k34, 0x11);
	x0 = _mm_xor_si128(_mm_xor_si128(x0, t0), x1);
	t0 = _mm_clmulepi64_si128(x0, k34, 0x00);
	x0 = _mm_clmulepi64_si128(x0, k34, 0x11);
	x0 = _mm_xor_si128(_mm_xor_si128(x0, t0), x2);
	t0 = _mm_clmulepi64_si128(x0, k34, 0x00);
	x0 = _mm_clmulepi64_si128(x0, k34, 0x11);
	x0 = _mm_xor_si128(_mm_xor_si128(x0, t0), x3);

one_lane:
	while (n >= 16) {
		t0 = _mm_clmulepi64_si128(x0, k34, 0x00);
		x0 = _mm_clmulepi64_si128(x0, k34, 0x11);
		x0 = _mm_xor_si128(_mm_xor_si128(x0, t0),
				   _mm_loadu_si128((const void *)p));
		p += 16;
		n -= 16;
	}

	/* 128 -> 64 bits. */
	t0 = _mm_clmulepi64_si128(x0, k34, 0x10);
	x0 = _mm_xor_si128(_mm_srli_si128(x0, 8), t0);
	/* 64 -> 32 bits. */
	t0 = _mm_srli_si128(x0, 4);
	x0 = _mm_and_si128(x0, mask32);
	x0 = _mm_clmulepi64_si128(x0, k5, 0x00);
	x0 = _mm_xor_si128(x0, t0);
	/* Barrett reduction. */
	t0 = _mm_and_si128(x0, mask32);
	t0 = _mm_clmulepi64_si128(t0, poly, 0x10);
	t0 = _mm_and_si128(t0, mask32);
	t0 = _mm_clmulepi64_si128(t0, poly, 0x00);
	x0 = _mm_xor_si128(x0, t0);
	return (uint32_t)_mm_extract_epi32(x0, 1);
}

int ur__crc32_pclmul_usable(void)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("vpclmulqdq") &&
	    __builtin_cpu_supports("avx2"))
		cpu_bits = __builtin_cpu_supports("avx512f") ? 512 : 256;
	vec_bits = cpu_bits;
	return __builtin_cpu_supports("pclmul") &&
	       __builtin_cpu_supports("sse4.1");
}

unsigned int ur__crc32_pclmul_bits(unsigned int max)
{
	vec_bits = max < cpu_bits ? max : cpu_bits;
	return vec_bits;
}

uint32_t ur__crc32_pclmul(uint32_t reg, const uint8_t *p, size_t n)
{
	if (n >= 16) {
		size_t bulk = n & ~(size_t)15;

		reg = fold(reg, p, bulk, NULL, NULL, NULL);
		p += bulk;
		n -= bulk;
	}
	return ur__crc32_slice8(reg, p, n);
}

/*
 * The same, copying @p to @dst. The bulk of a long buffer is stored by the
 * folding loop itself, so the copy reads nothing a second time; the bytes
 * before it (loaded ahead of the loop) and the tail are copied around it.
 */
uint32_t ur__crc32_pclmul_copy(uint32_t reg, uint8_t *dst, const uint8_t *p,
				size_t n)
{
	size_t bulk = n & ~(size_t)15, copied = 0, at = 0;

	if (bulk >= 16)
		reg = fold(reg, p, bulk, dst, &at, &copied);
	memcpy(dst, p, at);
	memcpy(dst + at + copied, p + at + copied, n - at - copied);
	return ur__crc32_slice8(reg, p + bulk, n - bulk);
}

#else /* no x86: the portable code stands in */

int ur__crc32_pclmul_usable(void)
{
	return 0;
}

unsigned int ur__crc32_pclmul_bits(unsigned int max)
{
	(void)max;
	return 0;
}

uint32_t ur__crc32_pclmul(uint32_t reg, const uint8_t *p, size_t n)
{
	return ur__crc32_slice8(reg, p, n);
}

uint32_t ur__crc32_pclmul_copy(uint32_t reg, uint8_t *dst, const uint8_t *p,
				size_t n)
{
	memcpy(dst, p, n);
	return ur__crc32_slice8(reg, p, n);
}
#endif

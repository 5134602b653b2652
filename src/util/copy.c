/* SPDX-License-Identifier: MIT */
/*
 * Bulk copies: the collectives' staging slots, scratch copies and own
 * blocks; the shared-memory path's records; payloads placed on receive.
 *
 * glibc copies from a few KiB up to most of the L3 with `rep movsb`. On
 * the AMD EPYC (KVM) machines we measure on, that runs at 2 GB/s instead of
 * 40-55 GB/s when the destination lies 1 to about 60 bytes (mod 4096) after
 * the source. That is exactly where a malloc'ed buffer (16 bytes into its
 * page) lands against a page-aligned slot: a 4-rank allgather spent more
 * time in memcpy than in the ICRC, and was 16 % faster with rep movsb
 * turned off (GLIBC_TUNABLES glibc.cpu.x86_rep_movsb_threshold). Plain
 * vector loads and stores do not care where the two lie.
 */
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "ur_copy.h"

/* Unaligned 32-byte vectors: one AVX load or store, or two SSE ones. */
typedef uint8_t v32 __attribute__((vector_size(32), aligned(1), may_alias));

enum { COPY_LOOP_MIN = 2048 }; /* below this glibc copies with vectors too */

UR_VEC static void copy_loop(uint8_t *restrict d, const uint8_t *restrict s,
			  size_t n)
{
	size_t i = 0;

	for (; i + 128 <= n; i += 128) {
		v32 a = *(const v32 *)(s + i), b = *(const v32 *)(s + i + 32);
		v32 c = *(const v32 *)(s + i + 64), e = *(const v32 *)(s + i + 96);

		*(v32 *)(d + i) = a;
		*(v32 *)(d + i + 32) = b;
		*(v32 *)(d + i + 64) = c;
		*(v32 *)(d + i + 96) = e;
		/* A compiler barrier: gcc would turn the loop back into a
		 * call to memcpy. */
		__asm__ volatile("" ::: "memory");
	}
	if (i < n)
		memcpy(d + i, s + i, n - i);
}

void ur_copy(void *restrict dst, const void *restrict src, size_t n)
{
	if (n < COPY_LOOP_MIN)
		memcpy(dst, src, n);
	else
		copy_loop(dst, src, n);
}

void ur_move(void *dst, const void *src, size_t n)
{
	uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;

	if (d == s || !n)
		return;
	if (d + n <= s || s + n <= d)
		ur_copy(dst, src, n);
	else
		memmove(dst, src, n);
}

/*
 * Non-temporal stores: the destination goes to memory without first being
 * read into the cache (a third less memory traffic) and without pushing
 * out what the cache holds. For large copies whose destination nobody
 * reads soon, such as a collective's own block in the caller's buffer.
 */
void ur_copy_stream(void *restrict dst, const void *restrict src, size_t n)
{
#if defined(__x86_64__)
	uint8_t *d = dst;
	const uint8_t *s = src;
	size_t head = (16 - ((uintptr_t)d & 15)) & 15;

	if (n < 128) {
		memcpy(dst, src, n);
		return;
	}
	memcpy(d, s, head);
	d += head;
	s += head;
	n -= head;
	for (; n >= 64; n -= 64, d += 64, s += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)s);
		__m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
		__m128i e = _mm_loadu_si128((const __m128i *)(s + 48));

		_mm_stream_si128((__m128i *)d, a);
		_mm_stream_si128((__m128i *)(d + 16), b);
		_mm_stream_si128((__m128i *)(d + 32), c);
		_mm_stream_si128((__m128i *)(d + 48), e);
	}
	memcpy(d, s, n);
	/* Streaming stores are weakly ordered: publish them before anyone
	 * is told the copy is done. */
	_mm_sfence();
#else
	ur_copy(dst, src, n);
#endif
}

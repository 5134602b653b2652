// SPDX-License-Identifier: MIT
/*
 * CRC32c (Castagnoli polynomial 0x1edc6f41, reflected 0x82f63b78), the MPA
 * FPDU CRC (RFC 5044, the iSCSI digest of RFC 3720). Not the ICRC's
 * polynomial (crc32.c). A portable slice-by-8 back end and one on the SSE4.2
 * crc32 instruction, chosen at run time as crc32.c chooses PCLMUL.
 */
#include <stdbool.h>

#include "ur_iwarp.h"

#define CRC32C_POLY_REFLECTED 0x82f63b78u

static uint32_t c8[8][256];

typedef uint32_t (*crcc_fn)(uint32_t, const uint8_t *, size_t);
static uint32_t crcc_slice8(uint32_t c, const uint8_t *p, size_t n);
static crcc_fn crcc_best = crcc_slice8;
static crcc_fn crcc_impl = crcc_slice8;

static inline uint32_t le32(const uint8_t *p)
{
	return p[0] | (p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

/* c8[k][b]: the register after byte b and then k zero bytes. */
static uint32_t crcc_slice8(uint32_t c, const uint8_t *p, size_t n)
{
	while (n >= 8) {
		uint32_t a = c ^ le32(p), b = le32(p + 4);

		c = c8[7][a & 0xff] ^ c8[6][(a >> 8) & 0xff] ^
		    c8[5][(a >> 16) & 0xff] ^ c8[4][a >> 24] ^
		    c8[3][b & 0xff] ^ c8[2][(b >> 8) & 0xff] ^
		    c8[1][(b >> 16) & 0xff] ^ c8[0][b >> 24];
		p += 8;
		n -= 8;
	}
	while (n--)
		c = c8[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

#if defined(__x86_64__)
#include <immintrin.h>

/* The crc32 instruction works on the same reflected register. */
__attribute__((target("sse4.2"))) static uint32_t
crcc_sse42(uint32_t c, const uint8_t *p, size_t n)
{
	uint64_t r = c;

	while (n && ((uintptr_t)p & 7)) {
		r = _mm_crc32_u8((uint32_t)r, *p++);
		n--;
	}
	while (n >= 8) {
		uint64_t v;

		__builtin_memcpy(&v, p, 8);
		r = _mm_crc32_u64(r, v);
		p += 8;
		n -= 8;
	}
	while (n--)
		r = _mm_crc32_u8((uint32_t)r, *p++);
	return (uint32_t)r;
}

static bool sse42_usable(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2");
}
#else
static uint32_t crcc_sse42(uint32_t c, const uint8_t *p, size_t n)
{
	return crcc_slice8(c, p, n);
}

static bool sse42_usable(void)
{
	return false;
}
#endif

__attribute__((constructor(101))) static void crc32c_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ ((c & 1) ? CRC32C_POLY_REFLECTED : 0);
		c8[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int k = 1; k < 8; k++)
			c8[k][i] = (c8[k - 1][i] >> 8) ^ c8[0][c8[k - 1][i] & 0xff];
	if (sse42_usable())
		crcc_best = crcc_sse42;
	crcc_impl = crcc_best;
}

/**
 * ur_crc32c() - CRC32c as iSCSI and MPA use it.
 * @crc: previous result (0 to start).
 * @buf: data.
 * @len: its length.
 *
 * Return: the CRC of everything fed so far (RFC 3720 B.4: 32 zero bytes
 * give 0x8a9136aa). MPA sends it least significant byte first.
 */
uint32_t ur_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return ~crcc_impl(~crc, buf, len);
}

const char *ur_crc32c_impl(void)
{
	return crcc_impl == crcc_sse42 ? "sse42" : "slice8";
}

void ur_crc32c_force_portable(bool on)
{
	crcc_impl = on ? crcc_slice8 : crcc_best;
}

// SPDX-License-Identifier: MIT
/*
 * CRC-32 (IEEE 802.3 polynomial, reflected, the zlib crc32() convention),
 * which IBTA uses for the ICRC (vol. 1 7.8.1, Annex A17.3.3). A portable
 * slice-by-8 back end, and a PCLMULQDQ one (crc32_pclmul.c) chosen at run
 * time.
 */
#include <stdbool.h>
#include <string.h>

#include "ur_wire.h"
#include "wire_int.h"

#define CRC32_POLY_REFLECTED 0xedb88320u

/*
 * slice8[k][b] is the CRC register after feeding byte b followed by k zero
 * bytes; eight lookups then advance the register by eight bytes at once.
 */
static uint32_t slice8[8][256];

typedef uint32_t (*crc_fn)(uint32_t, const uint8_t *, size_t);
static crc_fn crc_best = ur__crc32_slice8;
static crc_fn crc_impl = ur__crc32_slice8;

/* Before icrc.c's tables, which use ur_crc32 (constructor 102). */
__attribute__((constructor(101))) static void crc32_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ ((c & 1) ? CRC32_POLY_REFLECTED : 0);
		slice8[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int k = 1; k < 8; k++)
			slice8[k][i] = (slice8[k - 1][i] >> 8) ^
				       slice8[0][slice8[k - 1][i] & 0xff];
	if (ur__crc32_pclmul_usable())
		crc_best = ur__crc32_pclmul;
	crc_impl = crc_best;
}

static inline uint32_t load_le32(const uint8_t *p)
{
	return p[0] | (p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

uint32_t ur__crc32_slice8(uint32_t c, const uint8_t *p, size_t n)
{
	while (n >= 8) {
		uint32_t a = c ^ load_le32(p);
		uint32_t b = load_le32(p + 4);

		c = slice8[7][a & 0xff] ^ slice8[6][(a >> 8) & 0xff] ^
		    slice8[5][(a >> 16) & 0xff] ^ slice8[4][a >> 24] ^
		    slice8[3][b & 0xff] ^ slice8[2][(b >> 8) & 0xff] ^
		    slice8[1][(b >> 16) & 0xff] ^ slice8[0][b >> 24];
		p += 8;
		n -= 8;
	}
	while (n--)
		c = slice8[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

/**
 * ur_crc32() - zlib-compatible CRC-32.
 * @crc: previous result (0 to start).
 * @buf: data.
 * @len: its length.
 *
 * Return: the CRC of everything fed so far, as zlib's crc32() gives it.
 */
uint32_t ur_crc32(uint32_t crc, const void *buf, size_t len)
{
	return ~crc_impl(~crc, buf, len);
}

uint32_t ur_crc32_copy(uint32_t crc, void *dst, const void *buf, size_t len)
{
	if (crc_impl == ur__crc32_pclmul)
		return ~ur__crc32_pclmul_copy(~crc, dst, buf, len);
	memcpy(dst, buf, len);
	return ~crc_impl(~crc, buf, len);
}

const char *ur_crc32_impl(void)
{
	return crc_impl == ur__crc32_pclmul ? "pclmul" : "slice8";
}

unsigned int ur_crc32_vec_bits(unsigned int max)
{
	return crc_best == ur__crc32_pclmul ? ur__crc32_pclmul_bits(max) : 0;
}

void ur_crc32_force_portable(bool on)
{
	crc_impl = on ? ur__crc32_slice8 : crc_best;
}

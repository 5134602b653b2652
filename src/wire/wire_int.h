/* SPDX-License-Identifier: MIT */
/* Internal to the wire library: CRC-32 back ends behind ur_crc32(). */
#ifndef UR_WIRE_INT_H
#define UR_WIRE_INT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Both work on the raw reflected CRC register (no pre/post inversion), so
 * they can be chained and compared directly.
 */
uint32_t ur__crc32_slice8(uint32_t reg, const uint8_t *p, size_t n);
/* Any length; uses carry-less multiply folding for the bulk. */
uint32_t ur__crc32_pclmul(uint32_t reg, const uint8_t *p, size_t n);
/* The same, also copying the @n bytes at @p to @dst (no overlap). */
uint32_t ur__crc32_pclmul_copy(uint32_t reg, uint8_t *dst, const uint8_t *p,
				size_t n);
/* True when the CPU has PCLMULQDQ and SSE4.1. */
int ur__crc32_pclmul_usable(void);
/* Widest folding loop to use, at most @max bits and what the CPU runs
 * (128, 256 with VPCLMULQDQ, 512 with AVX-512 too); returns it. */
unsigned int ur__crc32_pclmul_bits(unsigned int max);

#endif

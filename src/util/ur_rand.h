/* SPDX-License-Identifier: MIT */
/*
 * The seeded generator of everything virtual (the simulator, the transport
 * tests' network): xorshift64* (Vigna, "An experimental exploration of
 * Marsaglia's xorshift generators, scrambled", 2016). Fast and good enough
 * for loss and path choices; not for keys or anything an attacker sees.
 */
#ifndef UR_RAND_H
#define UR_RAND_H

#include <stdint.h>

/* A state from a seed: never 0 (xorshift's fixed point). */
static inline uint64_t ur_rand_seed(uint64_t seed, uint64_t salt)
{
	uint64_t s = seed * 0x9E3779B97F4A7C15ull + salt;

	return s ? s : 1;
}

static inline uint64_t ur_rand_next(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [0, 1). */
static inline double ur_rand_unit(uint64_t *state)
{
	return (double)(ur_rand_next(state) >> 11) / (double)(1ull << 53);
}

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Helpers the benchmark programs share: a monotonic clock in microseconds,
 * the comparison that sorts samples for their medians, and the UDP GSO/GRO
 * socket options for C libraries whose headers predate them. Header-only.
 */
#ifndef UR_BENCH_UTIL_H
#define UR_BENCH_UTIL_H

#include <netinet/udp.h>
#include <time.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

static inline double bench_now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* qsort comparison of doubles, ascending. */
static inline int bench_cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#endif

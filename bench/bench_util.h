/* SPDX-License-Identifier: MIT */
/*
 * Helpers the benchmark programs share: a monotonic clock in microseconds,
 * the comparison that sorts samples for their medians, sizes with K/M/G
 * suffixes (powers of 1024), pinning to one CPU, and the UDP GSO/GRO
 * socket options for C libraries whose headers predate them. Header-only.
 */
#ifndef UR_BENCH_UTIL_H
#define UR_BENCH_UTIL_H

#include <netinet/udp.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
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

/* "64K", "4M", "1G" (powers of 1024) or a plain number of bytes. */
static inline size_t bench_parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	switch (*end) {
	case 'G': case 'g': v *= 1024; /* fall through */
	case 'M': case 'm': v *= 1024; /* fall through */
	case 'K': case 'k': v *= 1024; break;
	default: break;
	}
	return (size_t)v;
}

/* Run the calling process on CPU @cpu alone; 0 or -1 (errno set). */
static inline int bench_pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

#endif

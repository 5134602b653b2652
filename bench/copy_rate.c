// SPDX-License-Identifier: MIT
/*
 * copy-rate: one core's memcpy rate, the reference for issue 38's "RC WRITE
 * 1 MiB between two processes on the shared-memory path >= 0.7 x memcpy"
 * (bench/shm_write.sh).
 *
 *   copy-rate [-s BYTES] [-w WORKING_SET] [-t SECONDS]
 * Copies BYTES at a time (default 1 MiB) from one buffer into another for
 * SECONDS (default 2), walking through WORKING_SET bytes of each (default
 * BYTES: the same buffers every time, cache-warm as perftest's single
 * buffer is; a working set of 64 MiB copies from and to memory past the
 * caches). Prints the median of 20 slices' rates in GB/s (10^9 bytes).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define SLICES 20

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 4096, 64K, 1M, 64M: a number with an optional K/M/G suffix */
static size_t size_arg(const char *s)
{
	char *end;
	size_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'K': case 'k': return v << 10;
	case 'M': case 'm': return v << 20;
	case 'G': case 'g': return v << 30;
	}
	return *end ? 0 : v;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	size_t bytes = 1 << 20, set = 0;
	double secs = 2, rate[SLICES];
	int c;

	while ((c = getopt(argc, argv, "s:w:t:")) != -1) {
		switch (c) {
		case 's': bytes = size_arg(optarg); break;
		case 'w': set = size_arg(optarg); break;
		case 't': secs = atof(optarg); break;
		default:
			fprintf(stderr, "usage: copy-rate [-s BYTES] [-w WORKING_SET] [-t SECONDS]\n");
			return 2;
		}
	}
	if (!set)
		set = bytes;
	if (!bytes || set < bytes || secs <= 0) {
		fprintf(stderr, "copy-rate: need 0 < BYTES <= WORKING_SET and SECONDS > 0\n");
		return 2;
	}
	set -= set % bytes;
	char *src = mmap(NULL, set, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	char *dst = mmap(NULL, set, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (src == MAP_FAILED || dst == MAP_FAILED) {
		perror("copy-rate: mmap");
		return 1;
	}
	memset(src, 0x5a, set);
	memset(dst, 0, set);
	size_t off = 0;
	for (int s = 0; s < SLICES; s++) {
		double t0 = mono_s(), t;
		size_t n = 0;
		do {
			memcpy(dst + off, src + off, bytes);
			off = (off + bytes) % set;
			n++;
			t = mono_s();
		} while (t - t0 < secs / SLICES);
		rate[s] = (double)n * (double)bytes / (t - t0) / 1e9;
	}
	qsort(rate, SLICES, sizeof(rate[0]), cmp_d);
	printf("%.2f\n", (rate[SLICES / 2 - 1] + rate[SLICES / 2]) / 2);
	return 0;
}

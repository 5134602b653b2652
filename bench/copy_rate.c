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

#include "bench_util.h"

#define SLICES 20

int main(int argc, char **argv)
{
	size_t bytes = 1 << 20, set = 0;
	double secs = 2, rate[SLICES];
	int c;

	while ((c = getopt(argc, argv, "s:w:t:")) != -1) {
		switch (c) {
		case 's': bytes = bench_parse_size(optarg); break;
		case 'w': set = bench_parse_size(optarg); break;
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
		double t0 = bench_now_us(), t;
		size_t n = 0;
		do {
			memcpy(dst + off, src + off, bytes);
			off = (off + bytes) % set;
			n++;
			t = bench_now_us();
		} while (t - t0 < secs * 1e6 / SLICES);
		rate[s] = (double)n * (double)bytes / (t - t0) / 1e3;
	}
	qsort(rate, SLICES, sizeof(rate[0]), bench_cmp_dbl);
	printf("%.2f\n", (rate[SLICES / 2 - 1] + rate[SLICES / 2]) / 2);
	return 0;
}

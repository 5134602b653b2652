// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: a uroce-sim trace file (sim_trace_read, src/sim/
 * sim_work.c) as arbitrary bytes on a k=4 fat-tree. The reader accepts or
 * names a line; whatever it accepts runs to the end (tags and after= can
 * make no cycle, so every flow starts), within a virtual-time bound.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sim_cfg c;
	struct sim *s;
	char err[512];
	FILE *f;
	uint32_t n;

	if (size > 4096)
		return 0; /* a few dozen flows say all the parser can */
	f = fmemopen((void *)data, size, "r");
	if (f) {
		struct sim_cdf cdf;

		if (sim_cdf_read(&cdf, f, "fuzz", err, sizeof(err))) {
			if (strncmp(err, "fuzz:", 5))
				abort();
		} else {
			double m = sim_cdf_mean(&cdf);

			if (cdf.y[0] != 0 || cdf.y[cdf.n - 1] != 100 ||
			    !(m >= cdf.x[0] && m <= cdf.x[cdf.n - 1]))
				abort();
			for (int i = 0; i <= 8; i++) {
				uint64_t b = sim_cdf_draw(&cdf, i / 8.0 * 0.999);

				if (b < 1 || b > (uint64_t)cdf.x[cdf.n - 1] + 1)
					abort();
			}
		}
		fclose(f);
	}
	sim_cfg_default(&c);
	snprintf(c.trace, sizeof(c.trace), "fuzz");
	c.work = SIM_WORK_TRACE;
	s = sim_create(&c, err, sizeof(err));
	if (!s)
		abort();
	f = fmemopen((void *)data, size, "r");
	if (!f) {
		sim_destroy(s);
		return 0;
	}
	if (sim_trace_read(s, f, err, sizeof(err))) {
		if (strncmp(err, "fuzz:", 5))
			abort(); /* an error that names no line */
	} else {
		const struct sim_flow *fl = sim_flows(s, &n);
		uint64_t big = 0;

		for (uint32_t i = 0; i < n; i++)
			big += fl[i].bytes;
		/* small enough to run: every flow must then complete */
		if (n && big <= (1u << 20)) {
			for (uint32_t i = 0; i < n; i++)
				if (fl[i].t_start > 1000000000ull)
					goto out;
			sim_run(s, UINT64_MAX);
			fl = sim_flows(s, &n);
			for (uint32_t i = 0; i < n; i++)
				if (!fl[i].t_done)
					abort(); /* a dependency that never came */
		}
	}
out:
	fclose(f);
	sim_destroy(s);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Human units (ur_units.h). */
#include <math.h>
#include <stdio.h>

#include "ur_units.h"

/* Three significant digits: 1.23, 12.3, 123. */
static char *scaled(char *buf, size_t n, double v, const char *unit)
{
	const char *fmt = v < 9.995 ? "%.2f %s" : v < 99.95 ? "%.1f %s"
							    : "%.0f %s";

	snprintf(buf, n, fmt, v, unit);
	return buf;
}

/* @v against the steps of @step (1024 or 1000), up to the last unit. */
static char *prefixed(char *buf, size_t n, double v, double step,
		      const char *const *units, int nunits)
{
	int i = 0;

	if (!isfinite(v) || v < 0) {
		snprintf(buf, n, "? %s", units[0]);
		return buf;
	}
	/* 999.7 would print as "1000 k": move up where the rounding would
	 * show the step. */
	while (i + 1 < nunits && v >= step - 0.5)
		v /= step, i++;
	if (i == 0) {
		snprintf(buf, n, "%.0f %s", v, units[0]); /* whole bytes, ns */
		return buf;
	}
	return scaled(buf, n, v, units[i]);
}

char *ur_fmt_bytes(char *buf, size_t n, double bytes)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB",
					 "PiB" };

	return prefixed(buf, n, bytes, 1024, u, 6);
}

char *ur_fmt_Bps(char *buf, size_t n, double bytes_per_s)
{
	static const char *const u[] = { "B/s", "KiB/s", "MiB/s", "GiB/s",
					 "TiB/s" };

	return prefixed(buf, n, bytes_per_s, 1024, u, 5);
}

char *ur_fmt_bps(char *buf, size_t n, double bits_per_s)
{
	static const char *const u[] = { "bit/s", "kbit/s", "Mbit/s",
					 "Gbit/s", "Tbit/s" };

	return prefixed(buf, n, bits_per_s, 1000, u, 5);
}

char *ur_fmt_ns(char *buf, size_t n, double ns)
{
	static const char *const u[] = { "ns", "us", "ms", "s" };
	double s = ns / 1e9;

	if (!isfinite(ns) || ns < 0) {
		snprintf(buf, n, "? s");
		return buf;
	}
	if (s < 59.95)
		return prefixed(buf, n, ns, 1000, u, 4);
	if (s < 3599.5) {
		unsigned long t = (unsigned long)(s + 0.5);

		snprintf(buf, n, "%lu min %02lu s", t / 60, t % 60);
		return buf;
	}
	{
		unsigned long t = (unsigned long)(s / 60 + 0.5);

		snprintf(buf, n, "%lu h %02lu min", t / 60, t % 60);
	}
	return buf;
}

char *ur_fmt_progress(char *buf, size_t n, double done, double total,
		      uint64_t elapsed_ns)
{
	char el[UR_UNITS_LEN], left[UR_UNITS_LEN];
	double f = total > 0 ? done / total : 0;

	if (f < 0)
		f = 0;
	if (f > 1)
		f = 1;
	ur_fmt_ns(el, sizeof(el), (double)elapsed_ns);
	if (f >= 1)
		snprintf(buf, n, "100%% done, %s elapsed", el);
	else if (f <= 0 || !elapsed_ns)
		snprintf(buf, n, "%.0f%% done, %s elapsed, time left unknown",
			 f * 100, el);
	else
		snprintf(buf, n, "%.0f%% done, %s elapsed, ~%s left",
			 (double)(int)(f * 100), el,
			 ur_fmt_ns(left, sizeof(left),
				   (double)elapsed_ns * (1 - f) / f));
	return buf;
}

// SPDX-License-Identifier: MIT
/*
 * Flow-size distributions: a CDF file of "bytes percentile" points (the
 * format of HPCC's traffic_gen/, Li et al. SIGCOMM 2019), read as a
 * piecewise-linear CDF; sizes drawn by inverse transform, the mean by the
 * trapezoid rule (the exact mean of that piecewise-linear distribution).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "sim_priv.h"

int sim_cdf_read(struct sim_cdf *c, FILE *f, const char *name, char *err,
		 size_t n)
{
	char line[256], *p;
	int ln = 0, rc;

	c->n = 0;
	while ((rc = sim__line(f, line, sizeof(line), &ln, &p, name, err, n))) {
		char *end;
		double x, y;

		if (rc < 0)
			return -1;
		errno = 0;
		x = strtod(p, &end);
		if (end == p || errno || !isspace((unsigned char)*end))
			goto bad;
		p = end;
		y = strtod(p, &end);
		if (end == p || errno)
			goto bad;
		while (isspace((unsigned char)*end))
			end++;
		if (*end)
			goto bad;
		if (!(x >= 0 && x <= (double)(1ull << 31)) ||
		    !(y >= 0 && y <= 100)) {
			snprintf(err, n, "%s:%d: bytes must be 0..2^31 and percentile 0..100",
				 name, ln);
			return -1;
		}
		if (c->n && (x <= c->x[c->n - 1] || y <= c->y[c->n - 1])) {
			snprintf(err, n, "%s:%d: bytes and percentile must both increase",
				 name, ln);
			return -1;
		}
		if (c->n == SIM_CDF_MAX) {
			snprintf(err, n, "%s:%d: more than %d points", name, ln,
				 SIM_CDF_MAX);
			return -1;
		}
		if (!c->n && y != 0) {
			snprintf(err, n, "%s:%d: the first point's percentile must be 0",
				 name, ln);
			return -1;
		}
		c->x[c->n] = x;
		c->y[c->n++] = y;
		continue;
bad:
		snprintf(err, n, "%s:%d: expected 'bytes percentile'", name, ln);
		return -1;
	}
	if (c->n < 2 || c->y[c->n - 1] != 100) {
		snprintf(err, n, "%s:%d: needs at least two points, the last at percentile 100",
			 name, ln);
		return -1;
	}
	return 0;
}

double sim_cdf_mean(const struct sim_cdf *c)
{
	double m = 0;

	for (uint32_t i = 1; i < c->n; i++)
		m += (c->x[i] + c->x[i - 1]) / 2 * (c->y[i] - c->y[i - 1]);
	return m / 100;
}

double sim_cdf_at(const struct sim_cdf *c, double bytes)
{
	if (bytes <= c->x[0])
		return 0;
	for (uint32_t i = 1; i < c->n; i++)
		if (bytes <= c->x[i])
			return (c->y[i - 1] + (c->y[i] - c->y[i - 1]) *
				(bytes - c->x[i - 1]) / (c->x[i] - c->x[i - 1])) / 100;
	return 1;
}

uint64_t sim_cdf_draw(const struct sim_cdf *c, double u)
{
	double y = u * 100, x = c->x[c->n - 1];

	for (uint32_t i = 1; i < c->n; i++)
		if (y <= c->y[i]) {
			x = c->x[i - 1] + (c->x[i] - c->x[i - 1]) *
			    (y - c->y[i - 1]) / (c->y[i] - c->y[i - 1]);
			break;
		}
	x = round(x);
	return x < 1 ? 1 : (uint64_t)x;
}

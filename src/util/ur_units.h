/* SPDX-License-Identifier: MIT */
/*
 * Human units for the lines tools print for people (progress, summaries,
 * watch views): sizes in B/KiB/MiB/GiB/TiB, durations in ns/us/ms/s/min/h,
 * link rates in bit/s (k/M/G/T, powers of ten as links are sold), byte
 * rates in B/s with binary prefixes. Three significant digits. Never for
 * machine-read columns (--csv, uroce-stat's columns, perf tables): those
 * keep plain numbers in one unit.
 *
 * Time is passed in: a progress line is computed from the elapsed time the
 * caller measured, so this file reads no clock.
 */
#ifndef UR_UNITS_H
#define UR_UNITS_H

#include <stddef.h>
#include <stdint.h>

#define UR_UNITS_LEN 32 /* room for any one value with its unit */

/* Each writes into @buf (@n bytes, UR_UNITS_LEN is enough) and returns it. */
char *ur_fmt_bytes(char *buf, size_t n, double bytes);
char *ur_fmt_ns(char *buf, size_t n, double ns);
char *ur_fmt_bps(char *buf, size_t n, double bits_per_s);
char *ur_fmt_Bps(char *buf, size_t n, double bytes_per_s);

/*
 * One progress line's tail: "42% done, 3.10 s elapsed, ~4.28 s left". The
 * estimate assumes the rest goes at the pace so far (@done of @total units
 * of work in @elapsed_ns); before any work is done it says "time left
 * unknown". No newline: the caller ends the line (a progress line is a
 * whole line, never a '\r' overwrite that leaves half-lines in a log).
 * Returns @buf.
 */
char *ur_fmt_progress(char *buf, size_t n, double done, double total,
		      uint64_t elapsed_ns);

#endif

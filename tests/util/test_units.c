/* SPDX-License-Identifier: MIT */
/* util: human units and progress lines (src/util/units.c). */
#include "ur_test.h"
#include "ur_units.h"

static char b[UR_UNITS_LEN];

static void test_bytes(void)
{
	ASSERT_STR_EQ(ur_fmt_bytes(b, sizeof(b), 0), "0 B");
	ASSERT_STR_EQ(ur_fmt_bytes(b, sizeof(b), 1023), "1023 B");
	ASSERT_STR_EQ(ur_fmt_bytes(b, sizeof(b), 1024), "1.00 KiB");
	ASSERT_STR_EQ(ur_fmt_bytes(b, sizeof(b), 1536), "1.50 KiB");
	ASSERT_STR_EQ(ur_fmt_bytes(b, sizeof(b), 65536), "64.0 KiB");
	ASSERT_STR_EQ(ur_fmt_bytes(b, sizeof(b), 1 << 20), "1.00 MiB");
	ASSERT_STR_EQ(ur_fmt_bytes(b, sizeof(b), 700.0 * (1 << 20)),
		      "700 MiB");
	ASSERT_STR_EQ(ur_fmt_bytes(b, sizeof(b), 3.0 * (1 << 30)), "3.00 GiB");
	ASSERT_STR_EQ(ur_fmt_bytes(b, sizeof(b), 2048.0 * (1ull << 40)),
		      "2.00 PiB");
	ASSERT_STR_EQ(ur_fmt_bytes(b, sizeof(b), -1), "? B");
	/* The last unit takes anything above it. */
	ASSERT_STR_EQ(ur_fmt_bytes(b, sizeof(b), 4096.0 * (1ull << 50)),
		      "4096 PiB");
}

static void test_rates(void)
{
	ASSERT_STR_EQ(ur_fmt_bps(b, sizeof(b), 0), "0 bit/s");
	ASSERT_STR_EQ(ur_fmt_bps(b, sizeof(b), 999), "999 bit/s");
	/* 999.7 kbit/s rounds to 1000: shown one unit up. */
	ASSERT_STR_EQ(ur_fmt_bps(b, sizeof(b), 999700), "1.00 Mbit/s");
	ASSERT_STR_EQ(ur_fmt_bps(b, sizeof(b), 12.34e9), "12.3 Gbit/s");
	ASSERT_STR_EQ(ur_fmt_bps(b, sizeof(b), 100e9), "100 Gbit/s");
	ASSERT_STR_EQ(ur_fmt_Bps(b, sizeof(b), 117.0 * (1 << 20)),
		      "117 MiB/s");
	ASSERT_STR_EQ(ur_fmt_Bps(b, sizeof(b), 10), "10 B/s");
}

static void test_ns(void)
{
	ASSERT_STR_EQ(ur_fmt_ns(b, sizeof(b), 850), "850 ns");
	ASSERT_STR_EQ(ur_fmt_ns(b, sizeof(b), 12345), "12.3 us");
	ASSERT_STR_EQ(ur_fmt_ns(b, sizeof(b), 4.56e6), "4.56 ms");
	ASSERT_STR_EQ(ur_fmt_ns(b, sizeof(b), 1.5e9), "1.50 s");
	ASSERT_STR_EQ(ur_fmt_ns(b, sizeof(b), 59.9e9), "59.9 s");
	ASSERT_STR_EQ(ur_fmt_ns(b, sizeof(b), 125e9), "2 min 05 s");
	ASSERT_STR_EQ(ur_fmt_ns(b, sizeof(b), 3725e9), "1 h 02 min");
	ASSERT_STR_EQ(ur_fmt_ns(b, sizeof(b), -5), "? s");
}

static void test_progress(void)
{
	char p[128];

	ASSERT_STR_EQ(ur_fmt_progress(p, sizeof(p), 0, 10, 2000000000ull),
		      "0% done, 2.00 s elapsed, time left unknown");
	/* A quarter in 3 s: three quarters left at that pace, 9 s. */
	ASSERT_STR_EQ(ur_fmt_progress(p, sizeof(p), 25, 100, 3000000000ull),
		      "25% done, 3.00 s elapsed, ~9.00 s left");
	ASSERT_STR_EQ(ur_fmt_progress(p, sizeof(p), 1, 3, 60000000000ull),
		      "33% done, 1 min 00 s elapsed, ~2 min 00 s left");
	ASSERT_STR_EQ(ur_fmt_progress(p, sizeof(p), 10, 10, 5000000ull),
		      "100% done, 5.00 ms elapsed");
	/* More done than planned (an estimate that was low) is done. */
	ASSERT_STR_EQ(ur_fmt_progress(p, sizeof(p), 12, 10, 5000000ull),
		      "100% done, 5.00 ms elapsed");
	ASSERT_STR_EQ(ur_fmt_progress(p, sizeof(p), 5, 0, 5000000ull),
		      "0% done, 5.00 ms elapsed, time left unknown");
	ASSERT(!strchr(p, '\n') && !strchr(p, '\r'));
}

static const struct ur_test_case tests[] = {
	{ "bytes", test_bytes },
	{ "rates", test_rates },
	{ "ns", test_ns },
	{ "progress", test_progress },
	{ NULL, NULL },
};
UR_TEST_MAIN(tests)

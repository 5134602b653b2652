// SPDX-License-Identifier: MIT
/*
 * uroce-stat reads the counters file of this build (include/uroce/stat.h)
 * and of the build before the device table grew (format 4, 96 device
 * counters; its layout is copied below from stat.h at version 4), and
 * names a file of any other format instead of showing it. Each case
 * writes files for this process's own pid (alive, so not stale) and runs
 * the uroce-stat of $UROCE_STAT_BIN on them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <uroce/stat.h>

#include "ur_test.h"

/* include/uroce/stat.h at UROCE_STAT_VERSION 4. */
struct v4_qp {
	uint32_t qpn, type, state, dest_qpn;
	uint64_t cc_rate_bps;
	uint64_t rate_limit_bps;
	uint64_t v[32];
	uint32_t n_paths;
	uint32_t cc_window;
	struct {
		uint16_t sport, weight;
		uint32_t losses, ecn, late, downs, probes;
		uint64_t packets;
	} paths[16];
};

struct v4_file {
	uint64_t magic;
	uint32_t version, pid;
	char dev[64], addr[64], cc[16];
	uint64_t seq;
	uint64_t time_ns;
	uint32_t n_dev, n_qpc, n_qps, qps_total;
	char dev_names[96][32];
	char qp_names[32][32];
	uint64_t dev_v[96];
	struct v4_qp qps[256];
};

static char path_v4[128], path_v5[128];

static void cleanup(void)
{
	if (path_v4[0])
		unlink(path_v4);
	if (path_v5[0])
		unlink(path_v5);
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	ASSERT(f != NULL);
	ASSERT_EQ(fwrite(p, 1, n, f), n);
	ASSERT_EQ(fclose(f), 0);
}

/* Fill either layout: @nd device counters named c<i> with value 1000 + i,
 * and one QP whose counter q<k> holds 7 * (k + 1). */
#define FILL(F, VERSION, DEV, ND)                                            \
	do {                                                                 \
		(F)->magic = UROCE_STAT_MAGIC;                               \
		(F)->version = (VERSION);                                    \
		(F)->pid = (uint32_t)getpid();                               \
		snprintf((F)->dev, sizeof((F)->dev), "%s", (DEV));           \
		snprintf((F)->addr, sizeof((F)->addr), "127.0.0.1");         \
		snprintf((F)->cc, sizeof((F)->cc), "dcqcn");                 \
		(F)->n_dev = (ND);                                           \
		(F)->n_qpc = 3;                                              \
		(F)->n_qps = 1;                                              \
		(F)->qps_total = 1;                                          \
		for (unsigned int i = 0; i < (ND); i++) {                    \
			snprintf((F)->dev_names[i], 32, "c%u", i);           \
			(F)->dev_v[i] = 1000 + i;                            \
		}                                                            \
		for (unsigned int k = 0; k < 3; k++) {                       \
			snprintf((F)->qp_names[k], 32, "q%u", k);            \
			(F)->qps[0].v[k] = 7 * (k + 1);                      \
		}                                                            \
		(F)->qps[0].qpn = 0x123456;                                  \
		(F)->qps[0].type = 2;                                        \
		(F)->qps[0].state = 3;                                       \
		(F)->qps[0].dest_qpn = 0x654321;                             \
		(F)->qps[0].n_paths = 1;                                     \
	} while (0)

/* uroce-stat's output (stdout and stderr) and exit status for our pid. */
static int run_stat(const char *args, char *out, size_t cap)
{
	const char *bin = getenv("UROCE_STAT_BIN");
	char cmd[512];
	FILE *p;
	size_t n;
	int st;

	ASSERT(bin != NULL);
	snprintf(cmd, sizeof(cmd), "%s -p %d %s 2>&1", bin, (int)getpid(), args);
	p = popen(cmd, "r");
	ASSERT(p != NULL);
	n = fread(out, 1, cap - 1, p);
	out[n] = 0;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void setup_paths(const char *tag)
{
	snprintf(path_v4, sizeof(path_v4), "/dev/shm/" UROCE_STAT_PREFIX "%d-v4%s",
		 (int)getpid(), tag);
	snprintf(path_v5, sizeof(path_v5), "/dev/shm/" UROCE_STAT_PREFIX "%d-v5%s",
		 (int)getpid(), tag);
	atexit(cleanup);
}

/* A format-4 file and a current one side by side: both shown, every
 * counter with its value; the current one with more than 96. */
static void test_old_and_new(void)
{
	struct v4_file *a = calloc(1, sizeof(*a));
	struct uroce_stat_file *b = calloc(1, sizeof(*b));
	static char out[1 << 20];
	char want[128];

	ASSERT(a != NULL && b != NULL);
	ASSERT_EQ(UROCE_STAT_VERSION, 5);
	ASSERT_GT(UROCE_STAT_MAX_DEV, 96);
	setup_paths("a");
	FILL(a, 4, "oldd", 96u);
	FILL(b, UROCE_STAT_VERSION, "newd", (unsigned int)UROCE_STAT_MAX_DEV);
	write_file(path_v4, a, sizeof(*a));
	write_file(path_v5, b, sizeof(*b));
	ASSERT_EQ(run_stat("-a", out, sizeof(out)), 0);
	ASSERT(strstr(out, "another build") == NULL);
	snprintf(want, sizeof(want), "uroce-%d-v4a: pid %d dev oldd addr "
		 "127.0.0.1 cc dcqcn qps 1\n", (int)getpid(), (int)getpid());
	ASSERT(strstr(out, want) != NULL);
	snprintf(want, sizeof(want), "uroce-%d-v5a: pid %d dev newd addr "
		 "127.0.0.1 cc dcqcn qps 1\n", (int)getpid(), (int)getpid());
	ASSERT(strstr(out, want) != NULL);
	/* The last counter of each table, and the QP's after the device's
	 * (the QP names and values follow the device table in the file). */
	ASSERT(strstr(out, "c95 1095") != NULL);
	snprintf(want, sizeof(want), "c%u %u", UROCE_STAT_MAX_DEV - 1,
		 1000 + UROCE_STAT_MAX_DEV - 1);
	ASSERT(strstr(out, want) != NULL);
	ASSERT(strstr(out, "qp 0x123456 RC RTS -> 0x654321") != NULL);
	ASSERT(strstr(out, "q0 7  q1 14  q2 21") != NULL);
	/* The old file has no 97th counter. */
	{
		const char *o = strstr(out, "dev oldd"), *n = strstr(out, "dev newd");

		ASSERT(o && n);
		if (o < n)
			ASSERT(memmem(o, (size_t)(n - o), "c96 ", 4) == NULL);
		else
			ASSERT(strstr(o, "c96 ") == NULL);
	}
	cleanup();
	free(a);
	free(b);
}

/* A file of format 4 but the current size, and one of the current format
 * but format 4's size: neither is read as the other; both are named. */
static void test_mismatch_named(void)
{
	struct uroce_stat_file *b = calloc(1, sizeof(*b));
	static char out[1 << 16];

	ASSERT(b != NULL);
	setup_paths("b");
	FILL(b, 4, "mix1", 96u);
	write_file(path_v4, b, sizeof(*b));
	FILL(b, UROCE_STAT_VERSION, "mix2", 96u);
	write_file(path_v5, b, sizeof(struct v4_file));
	ASSERT_EQ(run_stat("", out, sizeof(out)), 1);
	ASSERT(strstr(out, "counters format 4, ") != NULL);
	ASSERT(strstr(out, "counters format 5, ") != NULL);
	ASSERT(strstr(out, "dev mix") == NULL);
	cleanup();
	free(b);
}

static const struct ur_test_case tests[] = {
	{ "old_and_new", test_old_and_new },
	{ "mismatch_named", test_mismatch_named },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

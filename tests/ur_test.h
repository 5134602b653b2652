/* SPDX-License-Identifier: MIT */
/*
 * Tiny in-tree test harness (in the spirit of libuv's test/task.h and
 * picoquic_t.c): assertions print both operands, and a name->function table
 * lets one case run alone: `test_x NAME`. Seeded tests print their seed.
 */
#ifndef UR_TEST_H
#define UR_TEST_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern unsigned long long ur_test_seed;

#define UR_FAIL(...)                                                         \
	do {                                                                 \
		fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);              \
		fprintf(stderr, __VA_ARGS__);                                \
		fprintf(stderr, " (seed %llu)\n", ur_test_seed);             \
		exit(1);                                                     \
	} while (0)

#define ASSERT(x)                                                            \
	do {                                                                 \
		if (!(x))                                                    \
			UR_FAIL("assertion failed: %s", #x);                 \
	} while (0)

#define UR_ASSERT_OP(a, op, b, type, fmt)                                    \
	do {                                                                 \
		type _a = (type)(a), _b = (type)(b);                         \
		if (!(_a op _b))                                             \
			UR_FAIL("%s %s %s: %" fmt " vs %" fmt, #a, #op, #b,  \
				_a, _b);                                     \
	} while (0)

#define ASSERT_EQ(a, b) UR_ASSERT_OP(a, ==, b, long long, "lld")
#define ASSERT_NE(a, b) UR_ASSERT_OP(a, !=, b, long long, "lld")
#define ASSERT_LT(a, b) UR_ASSERT_OP(a, <, b, long long, "lld")
#define ASSERT_LE(a, b) UR_ASSERT_OP(a, <=, b, long long, "lld")
#define ASSERT_GT(a, b) UR_ASSERT_OP(a, >, b, long long, "lld")
#define ASSERT_GE(a, b) UR_ASSERT_OP(a, >=, b, long long, "lld")
#define ASSERT_EQ_U64(a, b) UR_ASSERT_OP(a, ==, b, unsigned long long, "llx")
#define ASSERT_STR_EQ(a, b)                                                  \
	do {                                                                 \
		const char *_a = (a), *_b = (b);                             \
		if (strcmp(_a, _b))                                          \
			UR_FAIL("%s == %s: \"%s\" vs \"%s\"", #a, #b, _a,    \
				_b);                                         \
	} while (0)
/* Every one of @n bytes at @p is @v (memory an attack must not touch). */
static inline bool ur_test_all(const void *p, unsigned char v, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != v)
			return false;
	return true;
}

#define ASSERT_MEM_EQ(a, b, n)                                               \
	do {                                                                 \
		const unsigned char *_a = (const void *)(a),                 \
				    *_b = (const void *)(b);                 \
		size_t _n = (n);                                             \
		for (size_t _i = 0; _i < _n; _i++)                           \
			if (_a[_i] != _b[_i])                                \
				UR_FAIL("%s == %s: differ at byte %zu: "     \
					"0x%02x vs 0x%02x",                  \
					#a, #b, _i, _a[_i], _b[_i]);         \
	} while (0)

struct ur_test_case {
	const char *name;
	void (*fn)(void);
};

/*
 * Each test file defines `static const struct ur_test_case tests[] = {...,
 * {NULL, NULL}};` and then `UR_TEST_MAIN(tests)`. Environment UR_SEED sets
 * the seed; otherwise it is taken from the clock and printed.
 */
int ur_test_main(int argc, char **argv, const struct ur_test_case *tests);
#define UR_TEST_MAIN(tbl)                                                    \
	int main(int argc, char **argv)                                      \
	{                                                                    \
		return ur_test_main(argc, argv, tbl);                        \
	}
/* The same for a test that needs the command @cmd: without it, says so
 * and returns 77 (ctest's SKIP_RETURN_CODE). */
#define UR_TEST_MAIN_NEEDS(tbl, cmd)                                         \
	int main(int argc, char **argv)                                      \
	{                                                                    \
		if (system("command -v " cmd " >/dev/null 2>&1") != 0) {     \
			printf("SKIP: " cmd " is not installed\n");          \
			return 77;                                           \
		}                                                            \
		return ur_test_main(argc, argv, tbl);                        \
	}

/*
 * A folder of golden captures: $UROCE_GOLDEN_DIR, else @def (a path
 * relative to the build's test folder, such as "../shared/wire/rxe");
 * fails the test if it is missing. Returns it and sets *@pcaps to the
 * number of .pcap files in it.
 */
const char *ur_test_golden_dir(const char *def, int *pcaps);
/* @dir/@name opened for reading; fails the test if it cannot be. */
FILE *ur_test_fopen_in(const char *dir, const char *name);

#endif

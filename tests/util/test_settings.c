// SPDX-License-Identifier: MIT
/*
 * The settings table and its one parser (src/util/settings.c): numbers,
 * ranges, on/off words and choices; what a refusal says; that every
 * setting the code reads has a sane row.
 */
#include <errno.h>
#include <stdlib.h>

#include "ur_settings.h"
#include "ur_test.h"

/* parse NAME TEXT: the return code, the value in *v, the reason in why. */
static char why[256];
static int parse(const char *name, const char *text, unsigned long long *v)
{
	const struct ur_setting *s = ur_setting_find(name);

	ASSERT(s != NULL);
	why[0] = 0;
	return ur_setting_parse(s, text, v, why, sizeof(why));
}

static void test_uint(void)
{
	unsigned long long v = 0;

	ASSERT_EQ(parse("UROCE_SHM_RING_KB", "64", &v), 0);
	ASSERT_EQ(v, 64);
	ASSERT_EQ(parse("UROCE_SHM_RING_KB", "0x100", &v), 0);
	ASSERT_EQ(v, 256);
	ASSERT_EQ(parse("UROCE_SHM_RING_KB", "1", &v), -ERANGE);
	ASSERT_STR_EQ(why, "UROCE_SHM_RING_KB=1: out of range; allowed: "
			   "64..262144 (default 8192)");
	ASSERT_EQ(parse("UROCE_SHM_RING_KB", "abc", &v), -EINVAL);
	ASSERT_STR_EQ(why, "UROCE_SHM_RING_KB=abc: not a number; allowed: "
			   "64..262144 (default 8192)");
	/* strtoull would take -3 as 2^64-3. */
	ASSERT_EQ(parse("UROCE_SHM_RING_KB", "-3", &v), -EINVAL);
	ASSERT_EQ(parse("UROCE_SHM_RING_KB", " 64", &v), -EINVAL);
	ASSERT_EQ(parse("UROCE_SHM_RING_KB", "64k", &v), -EINVAL);
	ASSERT_EQ(parse("UROCE_SHM_RING_KB", "99999999999999999999999", &v), -ERANGE);
	ASSERT_EQ(parse("UROCE_PORT", "0", &v), -ERANGE);
	ASSERT_STR_EQ(why, "UROCE_PORT=0: out of range; allowed: 1..65535 "
			   "(default 4791)");
	ASSERT_EQ(parse("UROCE_PORT", "65536", &v), -ERANGE);
	ASSERT_EQ(parse("UROCE_PORT", "65535", &v), 0);
	ASSERT_EQ(v, 65535);
	/* A default in words. */
	ASSERT_EQ(parse("UROCE_TX_WINDOW", "70000", &v), -ERANGE);
	ASSERT_STR_EQ(why, "UROCE_TX_WINDOW=70000: out of range; allowed: "
			   "0..65536 (default 0 (512 on loopback, else 256))");
}

static void test_bool_choice(void)
{
	unsigned long long v = 7;

	ASSERT_EQ(parse("UROCE_GSO", "0", &v), 0);
	ASSERT_EQ(v, 0);
	ASSERT_EQ(parse("UROCE_GSO", "yes", &v), 0);
	ASSERT_EQ(v, 1);
	ASSERT_EQ(parse("UROCE_GSO", "OFF", &v), 0);
	ASSERT_EQ(v, 0);
	ASSERT_EQ(parse("UROCE_GSO", "2", &v), -EINVAL);
	ASSERT_STR_EQ(why, "UROCE_GSO=2: not 0 or 1; allowed: 0|1 (default 1)");
	ASSERT_EQ(parse("UROCE_ICRC", "strict", &v), 0);
	ASSERT_EQ(v, 1);
	ASSERT_EQ(parse("UROCE_ICRC", "off", &v), 0);
	ASSERT_EQ(v, 2);
	ASSERT_EQ(parse("UROCE_ICRC", "stric", &v), -EINVAL);
	ASSERT_STR_EQ(why, "UROCE_ICRC=stric: not one of the choices; allowed: "
			   "auto|strict|off (default auto)");
	ASSERT_EQ(parse("UROCE_CC", "none", &v), 0);
	ASSERT_EQ(v, 0);
	ASSERT_EQ(parse("UROCE_CC", "dcqc", &v), -EINVAL);
	ASSERT_STR_EQ(why, "UROCE_CC=dcqc: not one of the choices; allowed: "
			   "none|dcqcn|swift|predict|auto (default auto)");
}

/* From the environment: unset and empty give the default (1), a bad
 * value the default and a negative errno; the check names every bad one. */
static void test_env(void)
{
	unsigned long long v;

	unsetenv("UROCE_SHM_RING_KB");
	ASSERT_EQ(ur_setting_get("UROCE_SHM_RING_KB", &v), 1);
	ASSERT_EQ(v, 8192);
	setenv("UROCE_SHM_RING_KB", "", 1);
	ASSERT_EQ(ur_setting_get("UROCE_SHM_RING_KB", &v), 1);
	setenv("UROCE_SHM_RING_KB", "128", 1);
	ASSERT_EQ(ur_setting_get("UROCE_SHM_RING_KB", &v), 0);
	ASSERT_EQ(v, 128);
	ASSERT_EQ(ur_settings_check(UR_SCOPE_DEVICE), 0);
	setenv("UROCE_SHM_RING_KB", "1", 1);
	ASSERT_EQ(ur_setting_get("UROCE_SHM_RING_KB", &v), -ERANGE);
	ASSERT_EQ(v, 8192);
	ASSERT_EQ(ur_setting_val("UROCE_SHM_RING_KB"), 8192);
	ASSERT_EQ(ur_settings_check(UR_SCOPE_DEVICE), -EINVAL);
	/* Not a collectives setting: their check passes. */
	ASSERT_EQ(ur_settings_check(UR_SCOPE_COLL), 0);
	unsetenv("UROCE_SHM_RING_KB");
	setenv("UROCE_COLL_QP_TIMEOUT", "32", 1);
	ASSERT_EQ(ur_settings_check(UR_SCOPE_COLL), -EINVAL);
	unsetenv("UROCE_COLL_QP_TIMEOUT");
	ASSERT_EQ(ur_setting_get("UROCE_NO_SUCH", &v), -ENOENT);
}

/* Every row is usable: a UROCE_ name, a doc, a default in range, choices
 * for a choice, and no name twice. */
static void test_table(void)
{
	char a[96], w[256];
	unsigned long long v;

	ASSERT_GT(ur_settings_count, 30);
	for (size_t i = 0; i < ur_settings_count; i++) {
		const struct ur_setting *s = &ur_settings[i];

		ASSERT(!strncmp(s->name, "UROCE_", 6));
		ASSERT(s->doc && *s->doc);
		ASSERT(s->scope != 0);
		ASSERT(ur_setting_find(s->name) == s);
		if (s->kind == UR_SET_UINT) {
			ASSERT_LE(s->min, s->def);
			ASSERT_LE(s->def, s->max);
			snprintf(a, sizeof(a), "%llu", s->def);
			ASSERT_EQ(ur_setting_parse(s, a, &v, w, sizeof(w)), 0);
		}
		if (s->kind == UR_SET_BOOL)
			ASSERT_LE(s->def, 1);
		if (s->kind == UR_SET_CHOICE)
			ASSERT(s->choices && strchr(s->choices, '|'));
	}
}

static const struct ur_test_case tests[] = {
	{ "uint", test_uint },
	{ "bool_choice", test_bool_choice },
	{ "env", test_env },
	{ "table", test_table },
	{ NULL, NULL },
};
UR_TEST_MAIN(tests)

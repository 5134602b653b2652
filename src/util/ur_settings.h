/* SPDX-License-Identifier: MIT */
/*
 * Every UROCE_* environment setting, in one table (settings.c): name, kind,
 * range or choices, default and a one-line doc. Every layer reads its
 * settings through these functions, so a bad value is refused the same way
 * everywhere, naming the setting and what it allows, and the README's
 * settings table and uroce(7) are printed from the same rows
 * (uroce-settings --markdown / --man; ctest settings_doc).
 */
#ifndef UR_SETTINGS_H
#define UR_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

enum ur_set_kind {
	UR_SET_UINT,   /* decimal (or 0x hex) in [min, max] */
	UR_SET_BOOL,   /* 0|1 (also n|y, no|yes, off|on, false|true) */
	UR_SET_CHOICE, /* one of choices ("a|b|c"); the value is its index */
	UR_SET_TEXT,   /* free text (an address, a name), checked by its user */
	UR_SET_FAMILY, /* a prefix (UROCE_DCQCN_<NAME>) checked by its user */
};

/* Who reads a setting, and so when a bad value is refused. */
enum ur_set_scope {
	UR_SCOPE_DEVICE = 1 << 0, /* libibverbs: the device does not open */
	UR_SCOPE_CM = 1 << 1,     /* librdmacm: no event channel or id */
	UR_SCOPE_COLL = 1 << 2,   /* liburoce_coll: no communicator */
	UR_SCOPE_TOOL = 1 << 3,   /* uroce-run, uroce-launch, the python binding */
};

struct ur_setting {
	const char *name;
	enum ur_set_kind kind;
	enum ur_set_scope scope;
	unsigned long long min, max, def; /* CHOICE: def is an index */
	const char *choices;              /* CHOICE; FAMILY: what it allows */
	const char *def_doc; /* the default in words, when not just def */
	const char *doc;     /* one line */
};

extern const struct ur_setting ur_settings[];
extern const size_t ur_settings_count;

const struct ur_setting *ur_setting_find(const char *name);

/**
 * ur_setting_parse - Parse @text as a value of @s
 * @s:    the setting's row
 * @text: the value as given
 * @out:  the number, 0/1, or the choice's index
 * @why:  on error, "UROCE_X=text: <what is wrong>; allowed: <range>
 *        (default <d>)"
 * @len:  size of @why
 *
 * Returns 0, or -EINVAL (not a number, not a choice) or -ERANGE.
 */
int ur_setting_parse(const struct ur_setting *s, const char *text,
		     unsigned long long *out, char *why, size_t len);

/*
 * ur_setting_get - The value of setting @name from the environment: 1 and
 * the default when it is unset or empty, 0 when set, or a negative errno
 * (with the default in @out) after saying why on stderr.
 */
int ur_setting_get(const char *name, unsigned long long *out);
/* The value, or the default when unset or bad (bad: said on stderr). */
unsigned long long ur_setting_val(const char *name);
/* A TEXT setting's value; NULL when unset or empty. */
const char *ur_setting_str(const char *name);
/* "a..b", "0|1" or the choices: what @s allows. */
void ur_setting_allowed(const struct ur_setting *s, char *buf, size_t len);

/*
 * ur_settings_check - Check every setting of @scopes that the environment
 * sets, saying on stderr why each bad one is refused. Returns 0 or -EINVAL.
 */
int ur_settings_check(unsigned int scopes);

#endif

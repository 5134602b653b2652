// SPDX-License-Identifier: MIT
/*
 * uroce-settings: every UROCE_* setting from the one table
 * (src/util/settings.c): with the values this environment sets, checked as
 * the libraries will check them, or as the README's markdown table or
 * uroce(7)'s roff (scripts/settings-doc.sh writes both; ctest settings_doc
 * fails when they differ from the table).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ur_settings.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: uroce-settings [--markdown | --man]\n"
		"Every UROCE_* setting: name, what it allows, its default, and\n"
		"the value this environment gives it, checked as uroce checks it.\n"
		"  --markdown   the README's settings table\n"
		"  --man        the SETTINGS section of uroce(7), in roff\n"
		"  -h, --help   this help\n"
		"Exit status: 0; 1 when the environment sets a bad value (each is\n"
		"named with what it allows); 2 for a bad argument.\n");
}

static const char *const scope_name[] = { "device", "rdma_cm", "collectives",
					   "tools" };

/* Who reads it: "device, rdma_cm". */
static const char *scope_of(const struct ur_setting *s)
{
	static char buf[64];
	size_t o = 0;

	buf[0] = 0;
	for (int i = 0; i < 4; i++)
		if (s->scope & (1u << i))
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s",
					      o ? ", " : "", scope_name[i]);
	return buf;
}

static void name_of(const struct ur_setting *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", s->name,
		 s->kind == UR_SET_FAMILY
			 ? (!strcmp(s->name, "UROCE_IP_") ? "<r>" : "<NAME>")
			 : "");
}

static void allowed_of(const struct ur_setting *s, char *buf, size_t len)
{
	if (s->kind == UR_SET_FAMILY)
		snprintf(buf, len, "%s", s->choices ? s->choices : "per name");
	else if (s->kind == UR_SET_TEXT)
		snprintf(buf, len, "%s", s->choices ? s->choices : "text");
	else
		ur_setting_allowed(s, buf, len);
}

static void default_of(const struct ur_setting *s, char *buf, size_t len)
{
	const char *c = s->choices;

	if (s->def_doc) {
		snprintf(buf, len, "%s", s->def_doc);
	} else if (s->kind == UR_SET_FAMILY) {
		snprintf(buf, len, "per name");
	} else if (s->kind == UR_SET_TEXT) {
		snprintf(buf, len, "unset");
	} else if (s->kind == UR_SET_CHOICE) {
		for (unsigned long long i = 0; i < s->def && c; i++)
			c = (c = strchr(c, '|')) ? c + 1 : NULL;
		snprintf(buf, len, "%.*s", c ? (int)strcspn(c, "|") : 0, c ? c : "");
	} else {
		snprintf(buf, len, "%llu", s->def);
	}
}

/* Markdown cell text: '|' and '<' would end the cell or start a tag. */
static void md(const char *t)
{
	for (; *t; t++)
		if (*t == '|')
			fputs("\\|", stdout);
		else if (*t == '<')
			fputs("&lt;", stdout);
		else
			putchar(*t);
}

/* roff text: backslashes and a leading dot or quote are taken as requests. */
static void roff(const char *t)
{
	if (*t == '.' || *t == '\'')
		fputs("\\&", stdout);
	for (; *t; t++)
		if (*t == '\\')
			fputs("\\e", stdout);
		else if (*t == '-')
			fputs("\\-", stdout);
		else
			putchar(*t);
}

static void print_markdown(void)
{
	char n[64], a[96], d[96];

	printf("| setting | allowed | default | read by | meaning |\n");
	printf("|---|---|---|---|---|\n");
	for (size_t i = 0; i < ur_settings_count; i++) {
		const struct ur_setting *s = &ur_settings[i];

		name_of(s, n, sizeof(n));
		allowed_of(s, a, sizeof(a));
		default_of(s, d, sizeof(d));
		printf("| `%s` | ", n);
		md(a);
		printf(" | ");
		md(d);
		printf(" | %s | ", scope_of(s));
		md(s->doc);
		printf(" |\n");
	}
}

static void print_man(void)
{
	char n[64], a[96], d[96];

	for (size_t i = 0; i < ur_settings_count; i++) {
		const struct ur_setting *s = &ur_settings[i];

		name_of(s, n, sizeof(n));
		allowed_of(s, a, sizeof(a));
		default_of(s, d, sizeof(d));
		printf(".TP\n.B ");
		roff(n);
		printf("\n");
		roff(s->doc);
		printf(".\nAllowed: ");
		roff(a);
		printf("; default: ");
		roff(d);
		printf("; read by: %s.\n", scope_of(s));
	}
}

static int print_env(void)
{
	char n[64], a[96], d[96], why[256];
	unsigned long long v;
	int bad = 0;

	for (size_t i = 0; i < ur_settings_count; i++) {
		const struct ur_setting *s = &ur_settings[i];
		const char *val = s->kind == UR_SET_FAMILY ? NULL : getenv(s->name);

		name_of(s, n, sizeof(n));
		allowed_of(s, a, sizeof(a));
		default_of(s, d, sizeof(d));
		printf("%-24s %-17s %-18s default %s", n, scope_of(s), a, d);
		if (val && *val) {
			if (ur_setting_parse(s, val, &v, why, sizeof(why))) {
				printf("  BAD: %s", why);
				fprintf(stderr, "uroce-settings: %s\n", why);
				bad = 1;
			} else {
				printf("  set: %s", val);
			}
		}
		printf("\n");
	}
	return bad;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "markdown", no_argument, NULL, 'm' },
		{ "man", no_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int mode = 0, c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
		case 'M':
			mode = c;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uroce-settings: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (mode == 'm')
		print_markdown();
	else if (mode == 'M')
		print_man();
	else
		return print_env();
	return 0;
}

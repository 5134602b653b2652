/* SPDX-License-Identifier: MIT */
#include "ur_test.h"

#include <dirent.h>
#include <string.h>
#include <time.h>

unsigned long long ur_test_seed;

int ur_test_main(int argc, char **argv, const struct ur_test_case *tests)
{
	const char *s = getenv("UR_SEED");
	int ran = 0;

	if (s) {
		ur_test_seed = strtoull(s, NULL, 0);
	} else {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ur_test_seed = (unsigned long long)ts.tv_sec * 1000003ull ^
			       (unsigned long long)ts.tv_nsec;
	}
	printf("seed %llu (set UR_SEED to repeat)\n", ur_test_seed);
	for (const struct ur_test_case *t = tests; t->name; t++) {
		if (argc > 1) {
			int want = 0;

			for (int i = 1; i < argc; i++)
				want |= !strcmp(argv[i], t->name);
			if (!want)
				continue;
		}
		printf("  %-40s ", t->name);
		fflush(stdout);
		t->fn();
		printf("ok\n");
		ran++;
	}
	if (!ran) {
		fprintf(stderr, "no test matched\n");
		return 1;
	}
	printf("%d passed, 0 failed\n", ran);
	return 0;
}

const char *ur_test_golden_dir(const char *def, int *pcaps)
{
	const char *dir = getenv("UROCE_GOLDEN_DIR");
	struct dirent *de;
	DIR *dp;

	if (!dir)
		dir = def;
	dp = opendir(dir);
	if (!dp)
		UR_FAIL("golden capture dir %s is missing: shared/ must sit "
			"beside the clone (set UROCE_GOLDEN_DIR)", dir);
	*pcaps = 0;
	while ((de = readdir(dp)))
		*pcaps += strstr(de->d_name, ".pcap") != NULL;
	closedir(dp);
	return dir;
}

FILE *ur_test_fopen_in(const char *dir, const char *name)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		UR_FAIL("cannot open %s", path);
	return f;
}

// SPDX-License-Identifier: MIT
/*
 * UROCE_LOG / UROCE_LOG_FILE (ur_log.h). Each line is one write(), so lines
 * of threads and of processes sharing a file do not interleave. The
 * timestamp is wall-clock time (CLOCK_REALTIME), for lining up with other
 * logs and captures; protocol time stays with the engine (ur_now()).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ur_log.h"
#include "ur_settings.h"

atomic_int ur__log_level = -1;
static int log_fd = 2;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static const char *const level_name[] = { "ERROR", "WARN", "INFO", "DEBUG" };

/* UROCE_LOG_FILE with "%p" replaced by the process ID. */
static void open_file(const char *spec)
{
	char path[4096];
	size_t o = 0;
	int fd;

	for (const char *p = spec; *p && o + 24 < sizeof(path); p++) {
		if (p[0] == '%' && p[1] == 'p') {
			o += (size_t)snprintf(path + o, sizeof(path) - o, "%d", (int)getpid());
			p++;
		} else {
			path[o++] = *p;
		}
	}
	path[o] = 0;
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		fprintf(stderr, "uroce: UROCE_LOG_FILE=%s: cannot open %s: %m; "
			"logging to stderr\n", spec, path);
	else
		log_fd = fd;
}

static void init_once(void)
{
	const struct ur_setting *s = ur_setting_find("UROCE_LOG");
	const char *file = ur_setting_str("UROCE_LOG_FILE");
	const char *v = ur_setting_str("UROCE_LOG");
	unsigned long long lvl = s->def;
	char why[8];

	/* A bad UROCE_LOG is refused where the settings are checked (a device
	 * opens, a communicator is made), which says why: quiet here. */
	if (v && ur_setting_parse(s, v, &lvl, why, sizeof(why)))
		lvl = s->def;

	if (file)
		open_file(file);
	atomic_store(&ur__log_level, (int)lvl);
}

int ur__log_init(void)
{
	pthread_once(&log_once, init_once);
	return atomic_load(&ur__log_level);
}

void ur__log(enum ur_log_level lvl, const char *fmt, ...)
{
	char line[1024], host[64] = "?";
	struct timespec ts;
	va_list ap;
	size_t o;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gethostname(host, sizeof(host) - 1);
	n = snprintf(line, sizeof(line), "[%lld.%06ld] [%s:%d:%ld] uroce %-5s ",
		     (long long)ts.tv_sec, ts.tv_nsec / 1000, host, (int)getpid(),
		     (long)syscall(SYS_gettid), level_name[lvl & 3]);
	o = n > 0 ? (size_t)n : 0;
	va_start(ap, fmt);
	n = vsnprintf(line + o, sizeof(line) - o, fmt, ap);
	va_end(ap);
	o = n < 0 ? o : o + (size_t)n >= sizeof(line) - 1 ? sizeof(line) - 2 : o + (size_t)n;
	line[o++] = '\n';
	if (write(log_fd, line, o) < 0)
		return;
}

/* SPDX-License-Identifier: MIT */
/*
 * One log for every layer, like rdma-core's VERBS_LOG_LEVEL and UCX's
 * UCX_LOG_LEVEL: UROCE_LOG=error|warn|info|debug (default warn) and
 * UROCE_LOG_FILE (default stderr; "%p" becomes the process ID). Lines carry
 * a timestamp, host, pid and thread. Off costs a load and a compare: the
 * level is checked before anything is formatted.
 *
 * error and warn: what a program should hear about (few); info: device
 * opening, QP and rdma_cm connection steps, error completions; debug: the
 * device scan and per-step detail.
 */
#ifndef UR_LOG_H
#define UR_LOG_H

#include <stdatomic.h>

enum ur_log_level {
	UR_LOG_ERROR = 0, /* the order of UROCE_LOG's choices in settings.c */
	UR_LOG_WARN = 1,
	UR_LOG_INFO = 2,
	UR_LOG_DEBUG = 3,
};

extern atomic_int ur__log_level; /* -1 until the first check reads UROCE_LOG */
int ur__log_init(void);
void ur__log(enum ur_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static inline int ur_log_on(enum ur_log_level lvl)
{
	int cur = atomic_load_explicit(&ur__log_level, memory_order_relaxed);

	if (cur < 0)
		cur = ur__log_init();
	return (int)lvl <= cur;
}

#define ur_log(lvl, ...)                                                     \
	do {                                                                 \
		if (ur_log_on(lvl))                                          \
			ur__log(lvl, __VA_ARGS__);                           \
	} while (0)

#endif

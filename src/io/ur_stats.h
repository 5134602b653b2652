/* SPDX-License-Identifier: MIT */
/* src/io/stats.c: the counters file for uroce-stat (include/uroce/stat.h). */
#ifndef UR_STATS_H
#define UR_STATS_H

#include <stdbool.h>
#include <stdint.h>

struct ur_engine;

void ur__stats_open(struct ur_engine *e, const char *devname);
/* Copy the counters if the last copy is older than the period; returns
 * when the engine should call again (UINT64_MAX: only when busy). */
uint64_t ur__stats_publish(struct ur_engine *e, uint64_t now);
void ur__stats_close(struct ur_engine *e);
/* UROCE_STATS=1: the device counters on stderr, when the context closes
 * (ur__stats_dump) or at exit for those still open (ur__stats_track). */
void ur__stats_dump(const struct ur_engine *e);
void ur__stats_track(struct ur_engine *e, bool open);

#endif

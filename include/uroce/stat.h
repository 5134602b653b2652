/* SPDX-License-Identifier: MIT */
/*
 * The counters file of a running uroce device context (docs/cc.md
 * "Counters"): /dev/shm/uroce-<pid>-<devname>, written by the engine
 * (src/io/stats.c) about every 10 ms while it is busy and removed when the
 * context closes; read by uroce-stat. Self-describing: counter names travel
 * with the values. A writer makes `seq` odd while it updates the file; a
 * reader retries until it sees the same even value before and after.
 */
#ifndef UROCE_STAT_H
#define UROCE_STAT_H

#include <stdint.h>

#define UROCE_STAT_MAGIC 0x31545345434f5255ull /* "UROCEST1" */
/* 2: per-path counters of spraying QPs; 3: 96 device counters; 4: per-path
 * late notices, take-outs, probes; 5: 256 device counters (the layout of 4
 * with a larger table: uroce-stat reads both) */
#define UROCE_STAT_VERSION 5
#define UROCE_STAT_PREFIX "uroce-"
#define UROCE_STAT_NAME_LEN 32
#define UROCE_STAT_MAX_DEV 256  /* device counters (96 in version 4) */
#define UROCE_STAT_MAX_QPC 32   /* per-QP counters */
#define UROCE_STAT_MAX_QPS 256  /* QPs listed (the first ones found) */
#define UROCE_STAT_MAX_PATHS 16 /* a spraying QP's source ports */

struct uroce_stat_qp {
	uint32_t qpn, type, state, dest_qpn;
	uint64_t cc_rate_bps;   /* congestion control's rate (DCQCN; Swift pacing below one packet), 0 = not limited */
	uint64_t rate_limit_bps; /* configured limit, 0 = none */
	uint64_t v[UROCE_STAT_MAX_QPC];
	/* Spraying (docs/wire.md "Spraying"): per source port, its weight,
	 * the requests sent on it, the losses, ECN marks and late notices
	 * that named it, the times it was taken out of the spray (downs) and
	 * the probes sent on it while out. n_paths 1: the QP's own port only
	 * (paths[] unused). */
	uint32_t n_paths;
	uint32_t cc_window;     /* packets a window-based algorithm (Swift, predict) lets be in flight, 0 = no window */
	struct uroce_stat_path {
		uint16_t sport, weight;
		uint32_t losses, ecn, late, downs, probes;
		uint64_t packets;
	} paths[UROCE_STAT_MAX_PATHS];
};

struct uroce_stat_file {
	uint64_t magic;
	uint32_t version, pid;
	char dev[64], addr[64], cc[16];
	uint64_t seq;           /* odd while being written */
	uint64_t time_ns;       /* CLOCK_MONOTONIC of the snapshot */
	uint32_t n_dev, n_qpc, n_qps, qps_total;
	char dev_names[UROCE_STAT_MAX_DEV][UROCE_STAT_NAME_LEN];
	char qp_names[UROCE_STAT_MAX_QPC][UROCE_STAT_NAME_LEN];
	uint64_t dev_v[UROCE_STAT_MAX_DEV];
	struct uroce_stat_qp qps[UROCE_STAT_MAX_QPS];
};

#endif

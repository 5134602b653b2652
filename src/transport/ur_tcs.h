/* SPDX-License-Identifier: MIT */
/*
 * Traffic classes and the transmit scheduler of a device, pure
 * (docs/ports-classes.md "Traffic classes").
 *
 * A QP's priority (0..7) comes from its AV as a RoCE NIC maps it: trust
 * DSCP (mlx5's default) takes DSCP >> 3, the top 3 bits of the GRH
 * traffic class; trust PCP takes the service level. The scheduler shares
 * the device's rate limit (the token bucket of UROCE_RATE_LIMIT_MBPS)
 * between the priorities as ETS does (IEEE 802.1Qaz): classes configured
 * as dedicated go first (strict priority, the higher number first), the
 * others share what is left by weight, work conserving, and a class may
 * be given a minimum rate that it gets ahead of all of them.
 *
 * uroce makes a packet only when it may leave (the requester asks its
 * pacer first, ur_cc.c), so the "queue" of a class is its QPs that asked
 * and were told to wait: the decisions are
 *   - ur_tcs_may: may a packet of @prio leave now, and if not, when to
 *     ask again;
 *   - ur_tcs_sent: it left; charge the device's bucket and the class;
 *   - ur_tcs_backlog: a QP of the class is held, or has nothing more to
 *     send (below).
 * A class goes first by the headroom it has over the device's bucket: the
 * bucket's "empty at" time t may run ahead of now by head[prio] before a
 * packet of that class waits. Weighted classes have no headroom (they
 * leave while t <= now), dedicated ones 64 KiB each step up the ladder,
 * a class under its minimum rate one step above every dedicated one. The
 * device's long-run rate stays the limit: every byte moves t.
 *
 * Weights: each weighted class has a service count in bytes scaled by
 * (largest weight / its weight); a class may send while its count is
 * within one quantum of the smallest count among the other weighted
 * classes that are backlogged. The transport says which are: a QP enters
 * its class's backlog when told to wait and leaves it when it has nothing
 * more to send (ur_tcs_backlog), so a QP that goes quiet for a while (its
 * timer late on a busy host, a full batch, a window waiting for ACKs)
 * keeps its share. A class that is not backlogged when it sends or
 * enters the backlog sent less than its share (a ping-pong, a class back
 * from idle): it keeps half a quantum of credit, no more (start-time fair
 * queueing). Bytes sent under a minimum rate are not counted: the
 * minimum comes first, the rest is shared by weight (as HTB's rate and
 * borrowing).
 *
 * Several threads may send on one device: ur_tcs_may and ur_tcs_sent take
 * a spinlock of the scheduler's (only when classes are configured; the
 * no-classes path is the device bucket's atomic, as before).
 */
#ifndef UR_TCS_H
#define UR_TCS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UR_TC_N 8
#define UR_TC_WEIGHT_MAX 100
/* Headroom a dedicated class has per step over the device's bucket. */
#define UR_TCS_HEAD_BYTES 65536u
/* A weighted class may be this far ahead (scaled bytes) of the others:
 * at least this, else a quarter of the device's bucket. */
#define UR_TCS_QUANTUM 16384u
/* A backlogged class that does not ask this long has gone: at least this,
 * else twice the bucket's time. */
#define UR_TCS_ACTIVE_NS 1000000ull

enum ur_tc_trust { UR_TC_TRUST_DSCP = 0, UR_TC_TRUST_PCP = 1 };

struct ur_tcs_cfg {
	uint8_t trust;                /* enum ur_tc_trust */
	uint8_t strict;               /* bit p: priority p is dedicated */
	uint32_t weight[UR_TC_N];     /* ETS weight of each other priority */
	uint64_t min_bps[UR_TC_N];    /* minimum rate, 0 = none */
};

/* The scheduler's state of one priority (its counters are the device's
 * tx_prio<N>_*, counted by the transport). */
struct ur_tcs_class {
	uint64_t vt;       /* service: bytes * wmax / weight (weighted) */
	uint64_t seen;     /* last asked or sent */
	uint64_t min_t;    /* the minimum rate's bucket is empty at */
	uint64_t head_ns;  /* headroom over the device's bucket */
	uint64_t min_burst_ns;
	uint32_t nq;       /* QPs of the class backlogged (ur_tcs_backlog) */
};

struct ur_tcs {
	bool on;           /* classes configured (else the device bucket alone) */
	struct ur_tcs_cfg cfg;
	uint64_t bps;      /* the device's limit (0: none, nothing to share) */
	uint64_t burst_ns; /* its bucket, in time at the rate */
	uint64_t t;        /* the device's bucket is empty at */
	uint32_t wmax;
	uint64_t quantum;  /* a weighted class may be this far ahead */
	uint64_t active_ns; /* a backlogged class that does not ask this long has gone */
	struct ur_tcs_class c[UR_TC_N];
	atomic_flag lock;
};

/* The priority of a QP whose AV has @tos (GRH traffic class) and @sl. */
static inline unsigned int ur_tc_prio(uint8_t trust, uint8_t tos, uint8_t sl)
{
	return trust == UR_TC_TRUST_PCP ? (sl & 7u) : (unsigned int)(tos >> 5);
}

/* The default configuration: trust DSCP, no dedicated class, weights 1,
 * no minimum (classes off). */
void ur_tcs_cfg_default(struct ur_tcs_cfg *cfg);
/* Whether @cfg asks for any scheduling (a dedicated class, a weight that
 * differs, a minimum). */
bool ur_tcs_cfg_active(const struct ur_tcs_cfg *cfg);

/*
 * Parsers of the settings' values, for the host (0 or -EINVAL; @why says
 * what is allowed). A list of priorities "5" or "5,6" (0..7, each once);
 * weights "w0,w1,..." (1..8 values 1..100, the missing ones 1); minimum
 * rates "m0,m1,..." in Mbit/s (1..8 values 0..400000, the missing ones 0).
 */
int ur_tcs_parse_prios(const char *text, uint8_t *mask, char *why, size_t len);
int ur_tcs_parse_weights(const char *text, uint32_t *w, char *why, size_t len);
int ur_tcs_parse_mins(const char *text, uint64_t *bps, char *why, size_t len);

/* Set up @s for a device limited to @bps with a bucket of @burst bytes
 * (0: none; then nothing is shared and ur_tcs_may always says yes). */
void ur_tcs_init(struct ur_tcs *s, const struct ur_tcs_cfg *cfg, uint64_t bps,
		 uint64_t burst);

/* May a packet of @bytes of priority @prio leave at @now? If not, *when
 * is the time to ask again. */
bool ur_tcs_may(struct ur_tcs *s, unsigned int prio, uint32_t bytes,
		uint64_t now, uint64_t *when);
/* A QP of @prio was told to wait (@on; the caller counts it once) or ran
 * out of packets to send, or went away, after that (!@on). */
void ur_tcs_backlog(struct ur_tcs *s, unsigned int prio, bool on,
		    uint64_t now);
/* A packet of @prio left at @now. */
void ur_tcs_sent(struct ur_tcs *s, unsigned int prio, uint32_t bytes,
		 uint64_t now);

#endif

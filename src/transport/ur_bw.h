/* SPDX-License-Identifier: MIT */
/*
 * A delivery-rate sampler and pacer for selective repeat on a lossy path
 * (ur_bw.c; issue 33), after TCP BBR (Cardwell et al., "BBR:
 * Congestion-Based Congestion Control", ACM Queue 2016;
 * draft-cheng-iccrg-delivery-rate-estimation). Pure: PSNs, send and
 * delivery events and `now` in; a pacing rate and a bound on the packets
 * past the receiver's known frontier out. Random loss is not a signal to
 * it: it paces at the max-filtered delivery rate, so that a window's worth
 * of packets does not stand in the bottleneck's queue ahead of every NAK
 * and resend.
 */
#ifndef UR_BW_H
#define UR_BW_H

#include <stdbool.h>
#include <stdint.h>

#include "ur_cc.h" /* struct ur_win_min */

#define UR_BW_SLOTS 256   /* send records, by PSN mod this */
#define UR_BW_ROUNDS 10   /* the max filter's window in round trips (BBR) */

struct ur_bw_slot {
	uint32_t psn;
	bool used, resent;
	bool app;            /* sent while app-limited (ur__bw_app_limited) */
	uint64_t t;          /* first send */
	uint64_t delivered;  /* the QP's delivered count then, packets */
	uint64_t dtime;      /* when that count last moved */
	uint64_t first;      /* the send time of the packet that moved it */
};

enum ur_bw_mode { UR_BW_STARTUP, UR_BW_DRAIN, UR_BW_PROBE };

struct ur_bw {
	bool started;        /* front is meaningful */
	uint8_t mode;        /* enum ur_bw_mode */
	uint8_t cycle;       /* PROBE's phase (gain table in ur_bw.c) */
	uint8_t full_cnt;    /* rounds without 25 % growth (STARTUP) */
	uint8_t fslot;       /* rmax's slot for this round */
	uint32_t front;      /* PSNs before it arrived (or were reported lost) */
	uint32_t pkt_bytes;  /* the largest packet sent */
	uint64_t delivered;  /* packets the front passed */
	uint64_t dtime, first;
	uint64_t next_round; /* a round ends when this much is delivered */
	uint64_t rounds;
	uint64_t cycle_at;   /* when PROBE's phase began */
	double full_bw;      /* pkts/ns: STARTUP's plateau test */
	double rmax[UR_BW_ROUNDS]; /* the largest sample of each round, pkts/ns */
	struct ur_win_min min_rtt;
	uint64_t samples;
	/* App-limited (BBR, draft-cheng-iccrg-delivery-rate-estimation
	 * 3.4): the delivered count up to which the packets in flight were
	 * sent with nothing more to send; 0: not app-limited. */
	uint64_t app_limited;
	double startup_rate; /* pkts/ns: STARTUP's pacing never falls (BBR) */
	struct ur_bw_slot slot[UR_BW_SLOTS];
};

void ur__bw_init(struct ur_bw *b);
/* A request of @bytes with @psn left (@resend: not its first send). */
void ur__bw_sent(struct ur_bw *b, uint32_t psn, uint32_t bytes, bool resend,
		 uint64_t now);
/* Every PSN before @front arrived or was reported lost (a cumulative ACK,
 * a hole report's held request): the delivered count moves with it, and
 * the newest PSN passed gives a rate sample and an RTT sample. */
void ur__bw_front(struct ur_bw *b, uint32_t front, uint64_t now);
/* The send queue ran empty with @inflight packets past the front: the
 * samples of what was sent until they are delivered are app-limited. */
void ur__bw_app_limited(struct ur_bw *b, uint32_t inflight);
/* The peer reported a loss and the pacer starts: a STARTUP that has a
 * rate drains to it at once (ur_cc.c ur__cc_bw_on). */
void ur__bw_lossy(struct ur_bw *b);
/* The pacing rate in bits/s (0: no estimate yet). */
uint64_t ur__bw_rate(const struct ur_bw *b);
/* Packets that may be in flight past the front (UINT32_MAX: no bound). */
uint32_t ur__bw_cap(const struct ur_bw *b);
/* The max-filtered delivery rate (bits/s) and the least RTT (ns). */
double ur__bw_max_bps(const struct ur_bw *b);
uint64_t ur__bw_min_rtt(const struct ur_bw *b);
/* The state machine's clock (PROBE's phases, DRAIN's end) with @beyond
 * packets in flight past the front. */
void ur__bw_tick(struct ur_bw *b, uint32_t beyond, uint64_t now);

#endif

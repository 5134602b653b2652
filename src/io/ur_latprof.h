/* SPDX-License-Identifier: MIT */
/*
 * Where one small message's time goes (cmake -DUROCE_LATPROF=ON; without
 * it every mark compiles to nothing). Each thread time-stamps its critical
 * path with the TSC: a receive call that returned data, the poll that then
 * found a completion, the next post, its sendmsg, that call's return. Each
 * whole sequence is one sample per interval, and stages in between are
 * timed from the sequence's start (the first packet of the datagram only).
 * Medians and 90th percentiles go to stderr at exit, with the time of an
 * empty poll (a spinning poller's loop).
 */
#ifndef UR_LATPROF_H
#define UR_LATPROF_H

enum ur_lp {
	UR_LP_RX,   /* a receive call returned data */
	UR_LP_CQE,  /* a poll found a completion */
	UR_LP_POST, /* a post began */
	UR_LP_SEND, /* the post's sendmsg is called */
	UR_LP_SENT, /* and returned */
};

enum ur_lp_stage {
	/* after UR_LP_RX */
	UR_LPS_ICRC,      /* the first packet's ICRC checked */
	UR_LPS_CLASSIFIED, /* its QP found and locked */
	UR_LPS_PROCESSED, /* the transport ran it */
	UR_LPS_DELIVERED, /* the QP unlocked, the packet done */
	UR_LPS_DRAINED,   /* every packet of the receive delivered */
	/* after UR_LP_POST */
	UR_LPS_POSTED,    /* the transport made the packets */
	UR_LPS_FLUSH,     /* the batch starts leaving (ACKs adopted) */
	UR_LPS_NUM
};

#ifdef UR_LATPROF
void ur__lp_mark(enum ur_lp m);
void ur__lp_stage(enum ur_lp_stage s);
void ur__lp_poll(int empty);
#define UR_LP_MARK(m) ur__lp_mark(m)
#define UR_LP_STAGE(s) ur__lp_stage(s)
#define UR_LP_POLL(empty) ur__lp_poll(empty)
#else
#define UR_LP_MARK(m) ((void)0)
#define UR_LP_STAGE(s) ((void)0)
#define UR_LP_POLL(empty) ((void)0)
#endif

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Congestion control: the reaction point's algorithm is a const ops table
 * (one algorithm per file, as picoquic's newreno.c / cubic.c): cc_none.c,
 * cc_dcqcn.c, cc_swift.c. Pure like the rest of the transport: events and
 * `now` in, a rate (and, for a window-based algorithm, a window) out. The glue (per-QP state, the token-bucket pacer, the
 * notification point that sends CNPs) is ur_cc.c; docs/cc.md.
 *
 * A rate of 0 means "not limited": with no ECN marks an algorithm never
 * throttles, so a QP sends at whatever the path takes.
 */
#ifndef UR_CC_H
#define UR_CC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ur_cc_algo {
	UR_CC_NONE = 0, UR_CC_DCQCN = 1, UR_CC_SWIFT = 2,
	UR_CC_PREDICT = 3, /* Swift's window on a predicted delay (cc_predict.c) */
	/* DCQCN whose timers K and T are at least the QP's smoothed RTT
	 * (cc_dcqcn.c); it measures the RTT, so it asks for ACKs as Swift
	 * does: between uroce ends (UROCE_CC=auto) only. */
	UR_CC_DCQCN_RTT = 4,
};
/* UROCE_CC=auto, the setting's fifth choice: a device mode, not an
 * algorithm (DCQCN, then cc_auto_algo with a uroce peer; ur_cc_neg.c). */
#define UR_CC_CHOICE_AUTO 4
/* Swift's target on the engine (src/verbs/cc.c), where the RTT is the
 * hosts': + 1.0 x the base RTT + 4 mean deviations (test_cc_swift
 * wire_stall; bench/results/2026-12-07-cc4.md) ... */
#define UR_CC_ENGINE_TARGET_BASE_MILLI 1000
#define UR_CC_ENGINE_JITTER_K 4
#define UR_CC_ENGINE_STANDING_MILLI 500
/* ... whose target is taken from a base, the least RTT of 10 s (BBR's
 * min_rtt window); a fabric's Swift has none (BASE_WIN_MS). */
#define UR_CC_ENGINE_BASE_WIN_MS 10000

/*
 * Parameters: X(ENV_SUFFIX, field, default, min, max, source). Every one is
 * settable per device (env UROCE_DCQCN_<ENV_SUFFIX>) and per QP
 * (uroce_qp_set_cc). The default column is the default profile ("uroce",
 * written for a 100 Gbit/s link; ur_cc.c has the other profiles); its
 * sources and measurements are in docs/cc.md.
 */
#define UR_CC_PARAMS(X)                                                      \
	X(G_RECIP, g_recip, 256, 1, 65536, "paper: g = 1/256")               \
	X(ALPHA_TIMER_US, alpha_timer_us, 55, 1, 131071, "paper: K = 55 us") \
	X(RATE_TIMER_US, rate_timer_us, 10, 1, 10000000,                     \
	  "measured: T = 10 us, about an RTT (mlx5: 300 us)")                \
	X(BYTE_COUNTER, byte_counter, 65536, 1024, 1073741824,               \
	  "measured: B = 64 KiB (paper: 10 MB)")                             \
	X(F, f, 2, 1, 64, "measured: F = 2 (paper: 5)")                      \
	X(AI_MBPS, ai_mbps, 2000, 1, 100000,                                 \
	  "measured: 2 % of the link (mlx5: 5 Mb/s)")                        \
	X(HAI_MBPS, hai_mbps, 10000, 1, 100000,                              \
	  "measured: 10 % of the link (mlx5: 50 Mb/s)")                      \
	X(MIN_RATE_MBPS, min_rate_mbps, 1000, 1, 100000,                     \
	  "1 % of the link, as HPCC's DCQCN (mlx5: 1 Mb/s)")                 \
	X(MIN_DEC_PCT, min_dec_pct, 50, 0, 100,                              \
	  "mlx5 rpg_min_dec_fac = 50 %")                                     \
	X(INITIAL_ALPHA, initial_alpha, 1024, 0, 1024,                       \
	  "paper: alpha = 1 (x/1024); mlx5 initial_alpha_value 1023")        \
	X(CNP_INTERVAL_US, cnp_interval_us, 10, 0, 1000000,                  \
	  "measured: N = 10 us (paper: 50 us)")                              \
	X(FIRST_CNP_MBPS, first_cnp_mbps, 5000, 0, 1000000,                  \
	  "measured: 5 % of the link (mlx5: 0, the current rate)")

/*
 * Swift's parameters (Kumar et al., "Swift: Delay is Simple and Effective
 * for Congestion Control in the Datacenter", SIGCOMM 2020, Algorithm 1),
 * same columns; env UROCE_SWIFT_<ENV_SUFFIX>, uroce-sim `swift_<field>`.
 * Fractions are in thousandths so that every row stays an integer.
 * Sources and measurements: docs/cc.md "Swift".
 */
#define UR_CC_SWIFT_PARAMS(X)                                                \
	X(TARGET_US, target_us, 25, 1, 1000000,                              \
	  "swept: base RTT across pods ~15 us; 15 cuts on it, 25 = 50") \
	X(AI_MILLI, ai_milli, 1000, 1, 1000000,                              \
	  "paper: ai, +1 packet per RTT below target")                       \
	X(BETA_MILLI, beta_milli, 800, 1, 1000,                              \
	  "paper: beta = 0.8 (cut (delay - target) / delay x beta)")        \
	X(MAX_MDF_MILLI, max_mdf_milli, 500, 1, 999,                         \
	  "paper: max_mdf = 0.5, at most half per RTT")                      \
	X(MIN_CWND_MILLI, min_cwnd_milli, 10, 1, 1000000,                    \
	  "paper: cwnd may fall below 1 packet (then paced); 0.01 packet")   \
	X(INIT_CWND, init_cwnd, 8, 1, 65536,                                 \
	  "measured: 8 packets; 64 senders x 8 x 4 KiB = 2 MiB, a third of a switch queue") \
	X(BASE_WIN_MS, base_win_ms, 0, 0, 3600000,                           \
	  "paper: 0, the whole RTT against a target every QP shares (a 10 s base let a latecomer behind a standing queue starve the first); the engine: 10000, BBR's min_rtt window") \
	X(SLOW_START, slow_start, 1, 0, 1,                                   \
	  "RFC 5681 3.1: +1 packet per packet ACKed until a cut or an RTT SS_EXIT x target above the least") \
	X(PRED_MILLI, pred_milli, 1000, 0, 1000,                             \
	  "predict: weight of the predicted delay (0: Swift's decisions, features traced)") \
	X(JITTER_K, jitter_k, 0, 0, 64,                                      \
	  "ours: target + k x RTT mean deviation (RFC 6298 rttvar); 0: fixed (the engine: 4)") \
	X(ECN_CUT_MILLI, ecn_cut_milli, 0, 0, 999,                           \
	  "ours: a CNP cuts cwnd by this much, once per RTT; 0: CNPs ignored") \
	X(SS_EXIT_MILLI, ss_exit_milli, 250, 1, 1000,                        \
	  "measured (k=16 WebSearch): slow start ends at a quarter of the target (was half)") \
	X(FIRST_MSG_PKTS, first_msg_pkts, 25, 0, 65536,                      \
	  "measured (as Homa's unscheduled bytes): a QP's first message of <= 25 packets (100 KiB) goes whole; 64 x 25 x 4 KiB fit a 6 MB queue; 0: off") \
	X(TARGET_BASE_MILLI, target_base_milli, 0, 0, 100000,                \
	  "ours: target + this x the base RTT (a host's RTT is its own, not the fabric's); 0: fixed (the engine: 1000)") \
	X(STANDING_MILLI, standing_milli, 0, 0, 4000,                        \
	  "ours (Copa's standing RTT): the delay is the least RTT of the last this x srtt; 0: each sample (the engine: 500)") \
	X(LATE_MILLI, late_milli, 0, 0, 100000,                              \
	  "ours: the RTT ends at the kernel's receive time and the target + this x the host's own lateness (mean + 4 deviations of an ACK's wait for the engine): the queue that keeps the port busy while the sender sleeps; 0: the RTT ends when the engine takes the ACK") \
	X(AUTO_RTT_US, auto_rtt_us, 20, 0, 1000000,                          \
	  "ours: auto's dcqcn-rtt hands a QP to Swift when the hello's round trip is below this: a fabric's (the simulator's idle 12 us), where Swift's delay signal is the queue's; this VM's hosts answer in 140 us-9 ms; 0: never")

/* The DCQCN fields first, in the order of the public struct uroce_cc_params
 * (include/uroce/uroce.h), which is a prefix of this one; Swift's follow. */
struct ur_cc_params {
	uint32_t algo; /* enum ur_cc_algo */
#define UR_CC_X(env, f, def, lo, hi, src) uint32_t f;
	UR_CC_PARAMS(UR_CC_X)
	UR_CC_SWIFT_PARAMS(UR_CC_X)
#undef UR_CC_X
};

/* One row per parameter: name, where it lives, range, default, source. */
struct ur_cc_param_info {
	const char *env;     /* suffix of UROCE_DCQCN_ (UROCE_SWIFT_) */
	const char *field;
	size_t off;          /* offsetof(struct ur_cc_params, field) */
	uint32_t def, min, max; /* def: the default profile at 100 Gbit/s */
	const char *source;
};
extern const struct ur_cc_param_info ur_cc_param_table[];
extern const unsigned int ur_cc_param_count;
extern const struct ur_cc_param_info ur_cc_swift_param_table[];
extern const unsigned int ur_cc_swift_param_count;

/*
 * Profiles: named rows of DCQCN values (docs/cc.md "Profiles"), tables of
 * values, not code paths. A profile that scales gives its rates (AI, HAI,
 * min rate, first-CNP rate) for a link of UR_CC_REF_MBPS; they follow the
 * link's rate where the host knows it (ur_cc_profile_apply). The first row
 * is the default.
 */
#define UR_CC_REF_MBPS 100000u
struct ur_cc_profile {
	const char *name;
	bool scales;             /* rates given per UR_CC_REF_MBPS of link */
	struct ur_cc_params p;   /* algo unused */
	const char *doc;
};
extern const struct ur_cc_profile ur_cc_profiles[];
extern const unsigned int ur_cc_profile_count;
/* The profile called @name, or NULL. */
const struct ur_cc_profile *ur_cc_profile_find(const char *name);
/* Set every DCQCN field of @p (not algo, nor Swift's) from @prof for a link of
 * @link_mbps (0: unknown: a profile that scales keeps its timers and
 * counters but takes mlx5's absolute rates, which suit any link). */
void ur_cc_profile_apply(struct ur_cc_params *p,
			 const struct ur_cc_profile *prof, uint64_t link_mbps);
/* Defaults (DCQCN on): the default profile for a link of unknown rate,
 * and Swift's default column. */
void ur_cc_params_default(struct ur_cc_params *p);
/* 0, or -ERANGE with the offending row (of either table) in *bad
 * (-EINVAL: unknown algo). */
int ur_cc_params_check(const struct ur_cc_params *p,
		       const struct ur_cc_param_info **bad);

/* A windowed rate estimator (bits per second). */
struct ur_rate_est {
	uint64_t start, bytes;
	double bps;
};

/*
 * A windowed minimum in two halves: the least sample since @start and the
 * least of the window before. A base that no longer occurs (a longer
 * route) is gone between one and two windows after its last sample; a
 * constant-space cousin of Nichols' filter (Linux lib/win_minmax.c).
 * Swift's and dcqcn-rtt's base RTT.
 */
struct ur_win_min {
	uint64_t cur, prev, start; /* ns; 0: no sample */
};

static inline void ur__win_min_add(struct ur_win_min *m, uint64_t win,
				   uint64_t v, uint64_t now)
{
	if (!m->cur || now - m->start >= win) {
		m->prev = m->cur;
		m->cur = v;
		m->start = now;
	} else if (v < m->cur) {
		m->cur = v;
	}
}

static inline uint64_t ur__win_min(const struct ur_win_min *m)
{
	return m->prev && m->prev < m->cur ? m->prev : m->cur;
}

/* DCQCN reaction point state (cc_dcqcn.c). Rates in bits per second. */
struct ur_dcqcn {
	bool active;        /* the limiter is engaged (after a CNP) */
	double rc, rt;      /* current and target rate */
	double alpha;
	double line;        /* the most the path delivered (0: unknown) */
	uint64_t alpha_next, rate_next; /* timer deadlines while active */
	uint32_t t_stage, b_stage;      /* timer / byte counter events since the cut */
	uint64_t bytes;     /* toward the byte counter */
	struct ur_rate_est sent, acked;
	double srtt;        /* dcqcn-rtt: smoothed RTT, ns (0: none yet) */
	uint64_t cut_at;    /* dcqcn-rtt: when the rate was last cut */
	struct ur_win_min base; /* dcqcn-rtt: the base RTT (cc_dcqcn.c) */
	uint64_t rtt;       /* dcqcn-rtt: the latest sample (the trace's) */
};

/* Swift sender state (cc_swift.c). Windows in packets. */
struct ur_swift {
	double cwnd;
	uint64_t rtt;        /* the latest RTT sample, ns (0: none yet) */
	uint64_t last_cut;   /* when cwnd last decreased */
	bool cut_once;       /* last_cut is meaningful */
	uint32_t pkt_bytes;  /* the largest packet sent: pacing's unit */
	uint32_t retx;       /* timeouts in a row (paper: retransmit_cnt) */
	struct ur_win_min base; /* the base RTT (cc_swift.c base_rtt) */
	bool ss;             /* slow start: no cut, delay < target / 4 yet */
	uint64_t rtt_min;    /* the least RTT since init: slow start's exit */
	/* RFC 6298 2.3: smoothed RTT and mean deviation, ns (JITTER_K). */
	double srtt, mdev;
	/* STANDING_MILLI: the least RTT of this window and of the one
	 * before (cc_swift.c delay_rtt). */
	struct ur_win_min standing;
	bool msg_seen;       /* the QP's first message was given PSNs */
	/* The ACKs' wait in the host (cc->late): RFC 6298-style mean and
	 * mean deviation, ns (LATE_MILLI). */
	double late_avg, late_dev;
};

/*
 * The predictor's features (cc_predict.c), one row per RTT sample; the
 * model (cc_predict_model.h, generated by bench/cc_predict_train.py) maps
 * them to the queueing delay UR_PRED_HORIZON RTTs ahead.
 */
enum {
	UR_PRED_F_DELAY,   /* queueing delay now, us (RTT - base) */
	UR_PRED_F_GRAD,    /* its change per RTT, us (smoothed) */
	UR_PRED_F_CWND,    /* window, packets */
	UR_PRED_F_RATE,    /* window / RTT, Gbit/s */
	UR_PRED_F_ECN,     /* CNPs per RTT sample (smoothed) */
	UR_PRED_F_BASE,    /* base RTT, us */
	UR_PRED_NF
};
/* Swift's trace columns (cc_swift.c sw_features). */
enum {
	UR_SWIFT_T_DELAY,  /* delay compared with the target, us */
	UR_SWIFT_T_TARGET, /* the target, us */
	UR_SWIFT_T_CWND,   /* window, packets */
	UR_SWIFT_T_RTT,    /* the sample, us */
	UR_SWIFT_T_BASE,   /* base RTT, us */
	UR_SWIFT_T_MDEV,   /* RTT mean deviation, us */
	UR_SWIFT_T_LATE,   /* the ACK's wait in the host, us (cc->late) */
	UR_SWIFT_T_N
};
/* dcqcn-rtt's trace columns (cc_dcqcn.c dq_features). */
enum {
	UR_DCQCN_T_RATE,   /* RC, Gbit/s (0: the limiter is off) */
	UR_DCQCN_T_RTT,    /* the sample, us */
	UR_DCQCN_T_SRTT,   /* smoothed RTT, us */
	UR_DCQCN_T_BASE,   /* base RTT, us */
	UR_DCQCN_T_STRETCH, /* the RTT K and T follow, us */
	UR_DCQCN_T_ALPHA,
	UR_DCQCN_T_N
};
/* The most columns a trace line has (ur_cc_ops.features). */
#define UR_CC_TRACE_NF 8
_Static_assert((int)UR_SWIFT_T_N <= UR_CC_TRACE_NF &&
		       (int)UR_PRED_NF <= UR_CC_TRACE_NF &&
		       (int)UR_DCQCN_T_N <= UR_CC_TRACE_NF, "trace columns");
/* A node of the model's tree (cc_predict_model.h): feature < 0 is a leaf. */
struct ur_pred_node {
	int feature;
	double threshold;    /* f[feature] <= threshold: left, else right */
	int left, right;
	double value;        /* a leaf's change of the delay, us */
};
struct ur_pred {
	double f[UR_PRED_NF];
	double prev_delay;   /* us, at prev_t */
	uint64_t prev_t;
	uint32_t cnps;       /* since the last RTT sample */
	double pred;         /* the last prediction, us */
	bool fresh;          /* f[] is from this ACK's sample */
	uint64_t samples;
};

struct ur_cc {
	const struct ur_cc_ops *ops;
	struct ur_cc_params p;
	uint64_t cuts;      /* rate (or window) decreases */
	/* With on_delay: how long the ACK of the sample waited in the host
	 * before the transport saw it (0: not known; ur__cc_delay). */
	uint64_t late;
	union {
		struct ur_dcqcn dcqcn;
		struct {
			struct ur_swift swift;
			struct ur_pred pred; /* predict only */
		};
	} u;
};

struct ur_cc_ops {
	const char *name;
	void (*init)(struct ur_cc *cc, uint64_t now);
	void (*on_sent)(struct ur_cc *cc, uint32_t bytes, uint64_t now);
	void (*on_ack)(struct ur_cc *cc, uint32_t bytes, uint64_t now);
	void (*on_cnp)(struct ur_cc *cc, uint64_t now);
	/* Run the timers that expired by @now; returns the next deadline
	 * (UINT64_MAX: none). */
	uint64_t (*on_timer)(struct ur_cc *cc, uint64_t now);
	/* Allowed rate in bits/s, 0 = unlimited. */
	uint64_t (*rate)(const struct ur_cc *cc);
	/* Optional (NULL: the algorithm is rate-based and does not use it).
	 * An ACK moved the oldest unacknowledged PSN by @pkts; @rtt_ns is
	 * the round trip of the newest PSN it covers, from its first send
	 * (0: none measured, e.g. every covered PSN was sent again). */
	void (*on_delay)(struct ur_cc *cc, uint32_t pkts, uint64_t rtt_ns,
			 uint64_t now);
	/* A loss: @timeout for the retransmission timer, else a NAK. */
	void (*on_loss)(struct ur_cc *cc, bool timeout, uint64_t now);
	/* Packets that may be in flight (>= 1). */
	uint32_t (*window)(const struct ur_cc *cc);
	/* Optional: the requester gave PSNs to a message of @pkts packets. */
	void (*on_msg)(struct ur_cc *cc, uint32_t pkts);
	/* Optional: the features of the latest RTT sample into @f (at most
	 * UR_CC_TRACE_NF); returns how many, 0 when this ACK had no sample.
	 * Read by a host's trace (ur_dev.cc_trace) for offline training. */
	unsigned int (*features)(const struct ur_cc *cc, double *f);
};

/* auto's Swift on a fabric's RTT (ur_cc.c ur__cc_auto_pick): @p's
 * algorithm and what it changes of the device's Swift parameters. */
void ur_cc_auto_swift(struct ur_cc_params *p);

extern const struct ur_cc_ops ur_cc_none_ops;
extern const struct ur_cc_ops ur_cc_dcqcn_ops;
extern const struct ur_cc_ops ur_cc_dcqcn_rtt_ops;
extern const struct ur_cc_ops ur_cc_swift_ops;
extern const struct ur_cc_ops ur_cc_predict_ops;
/* Swift's halves, shared with predict (cc_swift.c): take an RTT sample
 * (false: none ever, no decision), the queueing delay in ns, and the
 * window's reaction to a delay. */
bool ur__swift_sample(struct ur_cc *cc, uint64_t rtt, uint64_t now);
double ur__swift_delay(const struct ur_cc *cc);
void ur__swift_react(struct ur_cc *cc, uint32_t pkts, double delay,
		     uint64_t now);
/* The target the delay is held to, ns (TARGET_US + JITTER_K x mdev), and
 * a CNP's cut (ECN_CUT_MILLI; 0: none). */
double ur__swift_target(const struct ur_cc *cc);
void ur__swift_cnp(struct ur_cc *cc, uint64_t now);
void ur__swift_msg(struct ur_cc *cc, uint32_t pkts);
const struct ur_cc_ops *ur_cc_ops_of(uint32_t algo);
/* Set up @cc with @p (already checked) and its algorithm's ops. */
void ur_cc_init(struct ur_cc *cc, const struct ur_cc_params *p, uint64_t now);

/* Rate estimator helper (ur_cc.c). */
void ur__rate_est_add(struct ur_rate_est *e, uint32_t bytes, uint64_t now);
/* Its rate at @now (bits/s; 0: nothing measured yet). */
double ur__rate_est_bps(const struct ur_rate_est *e, uint64_t now);

/*
 * Token bucket: at most @burst bytes at once, then @bps. `t` is when the
 * bucket is empty; a packet may leave while t <= now.
 */
struct ur_pacer {
	uint64_t bps;       /* 0 = unlimited */
	uint64_t burst;     /* bytes */
	uint64_t t;
};
bool ur_pacer_ok(const struct ur_pacer *pc, uint64_t now, uint64_t *when);
void ur_pacer_sent(struct ur_pacer *pc, uint32_t bytes, uint64_t now);

#endif

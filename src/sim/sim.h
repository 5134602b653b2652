/* SPDX-License-Identifier: MIT */
/*
 * uroce-sim: a packet-level discrete-event simulator that runs the real
 * transport (src/transport) on simulated hosts (docs/sim.md).
 *
 * Time is uint64 nanoseconds. Events ordered by (time, insertion order)
 * (two heaps, one sequence), one seeded generator: the same configuration
 * and seed give the same run, event for event.
 *
 * The simulator is a transport host like src/io: each simulated host is a
 * struct ur_dev whose ops put packets on its NIC's egress queue; links,
 * switches (shared buffer, egress FIFOs, RED/ECN, PFC, ECMP) carry the real
 * IB bytes the transport built.
 */
#ifndef UR_SIM_H
#define UR_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ur_cc.h"

struct sim;

enum sim_topo { SIM_TOPO_FATTREE, SIM_TOPO_LEAFSPINE, SIM_TOPO_RAIL };
/* Selective repeat (docs/transport.md) on the simulated QPs: auto = on
 * for spray/adaptive, off (plain go-back-N RoCEv2) for single. */
enum sim_sr { SIM_SR_AUTO, SIM_SR_ON, SIM_SR_OFF };
/* The event queue (sim_evq.c): a calendar for the near future, or binary
 * heaps alone (the same order; kept to check the calendar against). */
enum sim_evq { SIM_EVQ_CALENDAR, SIM_EVQ_HEAP };

/* Load balancing of a host's packets over the fabric's paths. */
enum sim_lb {
	SIM_LB_SINGLE,   /* one UDP source port per QP (today's RoCE) */
	SIM_LB_SPRAY,    /* K source ports per QP, equal weights (ur_mp.c) */
	SIM_LB_ADAPTIVE, /* K ports weighted by losses and ECN marks (ur_mp.c) */
};
enum sim_work {
	SIM_WORK_NONE, SIM_WORK_RING, SIM_WORK_ALLTOALL, SIM_WORK_PERM,
	SIM_WORK_INCAST, SIM_WORK_TRACE, SIM_WORK_POISSON,
};

/* A flow-size distribution: "bytes percentile" points, piecewise linear
 * (sim_cdf.c; bench/workloads/README.md). */
#define SIM_CDF_MAX 64
struct sim_cdf {
	uint32_t n;
	double x[SIM_CDF_MAX], y[SIM_CDF_MAX]; /* bytes, percentile 0..100 */
};
/* Read @f (named @name in errors, "NAME:LINE: ..."); 0 or -1 with @err. */
int sim_cdf_read(struct sim_cdf *c, FILE *f, const char *name, char *err,
		 size_t n);
double sim_cdf_mean(const struct sim_cdf *c);      /* bytes */
double sim_cdf_at(const struct sim_cdf *c, double bytes); /* 0..1 */
/* Inverse transform: the size at quantile @u in [0,1), at least 1 byte. */
uint64_t sim_cdf_draw(const struct sim_cdf *c, double u);

/* FCT slowdown buckets by flow size (decimal: <10 KB, 10-100 KB,
 * 100 KB-1 MB, 1-10 MB, >= 10 MB). */
#define SIM_NBUCKETS 5
extern const char *const sim_bucket_names[SIM_NBUCKETS];

#define SIM_MAX_LINKCFG 64
#define SIM_MAX_KEYLINES 64

/* A failed (rate 0) or degraded link between two named nodes, or a
 * failed one that comes back (restore). */
struct sim_linkcfg {
	char a[16], b[16];
	uint64_t bps;      /* 0: failed (or restored) */
	double loss;
	uint64_t at_ns;    /* fail ... at=US: up until then (0: from the start);
			    * restore ... at=US: down until then */
	bool restore;      /* restore A B at=US: an earlier fail ends */
	int line;          /* config line, for errors */
};

struct sim_cfg {
	uint64_t seed;
	/* topology */
	uint32_t topo;             /* enum sim_topo */
	uint32_t k;                /* fat-tree arity (k^3/4 hosts) */
	uint32_t leaves, spines, hosts_per_leaf; /* leaf-spine */
	uint32_t rails, rail_groups; /* rail: NICs per server, groups of
				      * hosts_per_leaf servers (one leaf per
				      * group and rail) */
	uint64_t host_bps, fabric_bps;
	uint64_t link_delay_ns;
	double link_loss;          /* every link (Bernoulli per packet) */
	struct sim_linkcfg links[SIM_MAX_LINKCFG];
	uint32_t n_links;
	uint64_t reroute_ns;       /* a failure (restore) at=T is routed around
				    * (taken back into the routes) at T + this */
	/* switches */
	uint64_t buffer_bytes;     /* shared buffer per switch */
	double dt_alpha;           /* dynamic threshold of a queue (no PFC) */
	bool ecn;
	uint32_t kmin, kmax;       /* bytes */
	double pmax;
	bool pfc;
	uint32_t pfc_xoff, pfc_xon, pfc_headroom; /* bytes per ingress port+prio */
	/* hosts and transport */
	uint32_t mtu;
	struct ur_cc_params cc;    /* algo + DCQCN fields set one by one
				    * (dcqcn_<field>, or written here) */
	uint32_t cc_profile;       /* dcqcn_profile: row of ur_cc_profiles */
	uint32_t cc_set;           /* fields set by dcqcn_<field> (bit = row) */
	uint32_t swift_set;        /* ... by swift_<field> (bit = row) */
	uint32_t window;           /* send window, packets */
	uint8_t timeout;           /* IBTA timeout code */
	uint32_t nic_queue;        /* NIC egress bytes before back-pressure */
	/* load balancing */
	uint32_t lb;               /* enum sim_lb */
	uint32_t paths;            /* K source ports per QP (spray/adaptive) */
	uint32_t sr;               /* enum sim_sr: the transport's selective repeat */
	uint64_t reseq_ns;         /* its reorder window: a gap is NAKed then */
	/* workload */
	uint32_t work;             /* enum sim_work */
	uint64_t bytes;            /* per message (ring: the whole vector) */
	uint32_t chunks;           /* ring: pipelined chunks per step */
	uint32_t ranks;            /* hosts taking part (0: all) */
	bool random_placement;     /* ring/alltoall rank -> host shuffled */
	uint32_t incast_senders;
	uint32_t iterations;       /* alltoall rounds */
	char trace[256];
	char cdf[256];             /* poisson: flow-size CDF file */
	bool qp_per_flow;          /* a flow takes an idle QP of its pair or a new one */
	bool cc_auto;              /* cc=auto: Swift on the fabric's RTT (sim_host.c) */
	char cc_trace[256];        /* predictor features per RTT sample (docs/sim.md) */
	char queue_trace[256];     /* the switch queues at each sample (docs/sim.md) */
	double load;               /* poisson: offered load, fraction of host_bps */
	uint64_t arrive_ns;        /* poisson: arrivals during [0, arrive_ns) */
	uint32_t max_flows;        /* poisson: at most this many (0: no limit) */
	/* run */
	uint64_t end_ns;           /* stop here (0: when the workload ends) */
	bool progress;             /* progress lines on stderr */
	double progress_s;         /* wall seconds between them (default 2) */
	uint64_t sample_ns;        /* queue sampling period for the CSV */
	uint32_t evq;              /* enum sim_evq */
	/* where each key was last set by sim_cfg_load(), so that checks
	 * across keys (sim_create, sim_workload) can name the line */
	char file[256];
	struct {
		char key[24];
		int line;
	} keylines[SIM_MAX_KEYLINES];
	uint32_t n_keylines;
};

/* Defaults: 100 Gb/s, 1 us links, 4 KiB MTU, DCQCN, ECN and PFC on. */
void sim_cfg_default(struct sim_cfg *c);
/* The DCQCN parameters the hosts get: the profile for host_gbps, then
 * the fields set one by one (a key, or a field of c->cc written with
 * another value than sim_cfg_default's). */
void sim_cfg_cc(const struct sim_cfg *c, struct ur_cc_params *out);
/* Parse "key value" lines (# comments). Returns 0, or -1 with a message
 * naming @path and the line in @err. Settings that are each valid but
 * inconsistent together (an odd k, pfc_xon above pfc_xoff, a failure that
 * disconnects a host, ranks beyond the topology...) are refused later by
 * sim_create()/sim_workload(), whose message then starts with "@path:LINE:"
 * of the key (the latest of the keys involved) that the file set. */
int sim_cfg_load(struct sim_cfg *c, const char *path, char *err, size_t n);
/* One "key value" setting (the CLI's --set); -1 with @err. */
int sim_cfg_set(struct sim_cfg *c, const char *key, const char *val,
		char *err, size_t n);

/* A flow: one message from src to dst (an RDMA WRITE with immediate). */
struct sim_flow {
	uint32_t src, dst;
	uint64_t bytes;
	uint64_t t_start;     /* earliest start */
	uint64_t t_post, t_done; /* posted; last byte received (0: not yet) */
	uint32_t deps;        /* flows (ring) or tags (trace) that must finish
			       * first; bit 31: t_start is then a delay */
	uint32_t child;       /* flow that waits for this one (UINT32_MAX) */
	uint32_t tag;         /* trace tag=N (UINT32_MAX: none) */
	uint32_t next_pend;   /* per-QP list of flows waiting for a slot */
};

struct sim_result {
	uint64_t hosts, switches, qps, flows, flows_done;
	uint64_t t_first, t_last;      /* first post, last completion (ns) */
	double fct_mean_us, fct_p50_us, fct_p99_us;
	double slow_p50, slow_p99;     /* FCT / ideal FCT, every flow */
	struct {
		uint64_t n;
		double p50, p99;
	} slow[SIM_NBUCKETS];          /* ... per size bucket */
	double jain;                   /* Jain index of flows' bytes/FCT
					* (flows >= 1 MB if any) */
	double queue_p50_kb, queue_p99_kb; /* sampled non-empty switch queues */
	uint64_t queue_samples;
	double offered_load;           /* workload bytes / (hosts x rate x span
					* of the posts): poisson's check */
	double host_util;              /* mean host-link tx utilisation */
	double fabric_util;            /* mean switch-switch link utilisation */
	double max_link_util;
	uint64_t drops, ecn_marks, pause_frames, retransmits, timeouts;
	uint64_t cnps, nak_seq;
	uint64_t sr_held, sr_naks;     /* selective repeat: requests held,
					* selective NAKs sent */
	uint64_t sprayed;              /* requests sent over a QP's paths
					* other than its own port (ur_mp.c) */
	uint64_t path_losses, path_ecn; /* feedback the paths got (ur_mp.c) */
	uint64_t path_late;
	uint64_t offpath;              /* packets dropped as not from a QP's
					* peer (rx_drop_offpath): 0 unless the
					* simulator's addresses are wrong */
	uint64_t paused_ns;            /* summed over ports */
	uint64_t max_queue;            /* bytes */
	uint64_t events, hops;
	double wall_s, cpu_s;          /* wall clock; user+system CPU time */
	uint64_t max_rss_kb;
};

struct sim *sim_create(const struct sim_cfg *c, char *err, size_t n);
void sim_destroy(struct sim *s);
/* Build the workload's flows (from the config, or the trace file);
 * 0 or -1 with @err. */
int sim_workload(struct sim *s, char *err, size_t n);
/* Read a trace ("start_ns src dst bytes [tag=N] [after=N,...]" lines,
 * docs/sim.md) from @f, adding its flows; errors name cfg.trace and the
 * line. sim_workload() calls it for `workload trace`; fuzz/ feeds it. */
int sim_trace_read(struct sim *s, FILE *f, char *err, size_t n);
/* Add one flow by hand (tests); returns its index. */
uint32_t sim_add_flow(struct sim *s, uint32_t src, uint32_t dst,
		      uint64_t bytes, uint64_t t_start);
/* Run until the workload is done, the queue is empty, or @until. */
void sim_run(struct sim *s, uint64_t until);
void sim_result(struct sim *s, struct sim_result *r);
uint64_t sim_now(const struct sim *s);
uint32_t sim_hosts(const struct sim *s);
const struct sim_flow *sim_flows(const struct sim *s, uint32_t *n);
/* Flow @f's FCT over its ideal FCT (docs/sim.md "Output"); 0 if not done. */
double sim_flow_slowdown(const struct sim *s, uint32_t f);

/* Output (sim_out.c). */
void sim_print_result(const struct sim_result *r, FILE *f);
int sim_write_csv(struct sim *s, const char *prefix);

/* Introspection for tests: a node by name ("h0", "e1", "a2", "c3") and
 * the egress port of @node towards @peer; -1 if none. */
int sim_node_by_name(const struct sim *s, const char *name);
int sim_port_to(const struct sim *s, int node, int peer);
uint64_t sim_port_tx_bytes(const struct sim *s, int node, int port);
/* The node at the other end of @node's @port. */
int sim_port_peer(const struct sim *s, int node, int port);
/* Lose the @n-th packet (from 1) @node's @port transmits (0: none), as a
 * test's fault injector would. */
void sim_port_drop_nth(struct sim *s, int node, int port, uint64_t n);
/* Host @h's device counters (the transport's). */
const struct ur_counters *sim_host_counters(const struct sim *s, uint32_t h);
uint64_t sim_port_max_queue(const struct sim *s, int node, int port);
/* Queue-length trace of one egress port (time, bytes) at every change. */
void sim_trace_port(struct sim *s, int node, int port,
		    void (*fn)(void *arg, uint64_t t, uint32_t bytes),
		    void *arg);
/* ECMP: the egress port switch @node picks for a UDP source port towards
 * host @dst from host @src (the fabric's hash of the 5-tuple). */
int sim_ecmp_port(const struct sim *s, int node, uint32_t src, uint32_t dst,
		  uint16_t sport);
/* Current DCQCN rate (bits/s, 0 = unlimited) of host @src's QP to @dst. */
uint64_t sim_qp_rate(const struct sim *s, uint32_t src, uint32_t dst);
/* Payload bytes host @src's QP to @dst has transmitted so far (0: none). */
uint64_t sim_qp_tx_bytes(const struct sim *s, uint32_t src, uint32_t dst);
/* dcqcn-rtt's smoothed RTT (ns, 0: none or another algorithm) of host
 * @src's QP to @dst. */
uint64_t sim_qp_srtt(const struct sim *s, uint32_t src, uint32_t dst);

#endif

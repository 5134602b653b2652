/* SPDX-License-Identifier: MIT */
/* Internals of the simulator shared by its files (not installed). */
#ifndef UR_SIM_PRIV_H
#define UR_SIM_PRIV_H

#include "sim.h"
#include "ur_evheap.h"
#include "ur_transport.h"

#define SIM_NPRIO 2     /* 0: requests (data), 1: ACK/NAK/CNP (strict) */
#define SIM_MAXK 16     /* source ports per QP when spraying */
#define SIM_WIRE_OVH 66 /* Eth 14 + FCS 4 + IPv4 20 + UDP 8 + preamble/IFG 20 */
#define SIM_NONE UINT32_MAX
#define SIM_MAX_PORTS 1024 /* per node (sim__route's candidates) */

enum sim_ev_type {
	SIM_EV_ARRIVE,   /* ptr: packet, arriving at pkt->in; arg: its node */
	SIM_EV_TXDONE,   /* ptr: port finished serialising */
	SIM_EV_PFC,      /* ptr: upstream egress port; arg: prio | on << 8 */
	SIM_EV_QPTIMER,  /* ptr: sim_qp */
	SIM_EV_FLOW,     /* arg: flow index, start time reached */
	SIM_EV_SAMPLE,   /* periodic queue sampling */
	SIM_EV_LINK,     /* arg: fail line index (| SIM_LINK_REROUTE) */
};
#define SIM_LINK_REROUTE (1u << 31)

struct sim_port;

struct sim_pkt {
	struct ur_pktbuf b;
	struct sim_pkt *next;
	struct sim_port *in;  /* where it arrives / arrived (PFC accounting) */
	uint64_t t0;          /* left the sender's NIC queue */
	uint32_t src, dst;    /* host ids */
	uint8_t prio, big, accounted;
	uint8_t data[];
};

struct sim_node;

struct sim_qent {
	struct sim_pkt *p;
	struct sim_port *in;  /* its ingress, if accounted in the buffer */
	uint32_t len;
};

struct sim_queue {
	struct sim_qent *a;
	uint32_t head, n, cap; /* a[(head + i) & (cap - 1)], i < n */
};

struct sim_port {
	struct sim_node *node;
	struct sim_port *peer;
	uint64_t bps;
	uint32_t delay;
	uint16_t idx;
	bool up;
	uint32_t peer_node;   /* peer->node->id, for the arrival event */
	double loss;
	/* egress: a ring per priority of what start_tx needs, so that it
	 * only writes to the packet it sends (a read was a cache miss) */
	struct sim_queue q[SIM_NPRIO];
	uint32_t qbytes[SIM_NPRIO];
	/* Serialising until busy_until. Its end (SIM_EV_TXDONE) is pushed
	 * only when there is something to do then (txpend): a packet waits,
	 * or the host has QPs blocked; txseq is the sequence number it was
	 * given when the packet started, so that it runs in the same order
	 * among the events of that instant whenever it is pushed. */
	uint64_t busy_until, txseq;
	bool txpend;
	bool paused[SIM_NPRIO];     /* by the peer's PFC */
	uint64_t paused_at[SIM_NPRIO];
	/* ingress (this port's bytes in the switch buffer) */
	uint32_t in_bytes[SIM_NPRIO];
	bool pause_sent[SIM_NPRIO];
	/* stats */
	uint64_t tx_bytes, tx_pkts, drops, marks, pause_frames, paused_ns;
	uint64_t drop_nth;           /* sim_port_drop_nth (tests) */
	uint32_t qmax;
	void (*trace)(void *arg, uint64_t t, uint32_t bytes);
	void *trace_arg;
};

enum sim_kind { SIM_HOST, SIM_EDGE, SIM_AGG, SIM_CORE };

struct sim_node {
	uint32_t id;          /* node index */
	uint32_t hid;         /* host id (hosts) */
	uint8_t kind;
	uint16_t nports;
	struct sim_port *ports;
	uint32_t *nbr;        /* node at the other end of each port, SIM_NONE
			       * if the link is down: routing reads these,
			       * not the ports (a cache line each) */
	uint64_t buf_used;
	uint32_t salt;        /* ECMP hash seed */
	uint64_t drops;
	struct sim_host *host;
	char name[12];
};

struct sim_qp {
	struct ur_qp qp;
	struct sim_host *h;
	struct sim_qp *peer;
	struct sim_qp *bnext;  /* NIC scheduler's blocked list */
	struct sim_qp *next_conn; /* qp_per_flow: the pair's other QPs */
	uint64_t armed;        /* timer event pending at (UINT64_MAX none) */
	uint32_t peer_hid;
	uint32_t pend_head, pend_tail; /* flows waiting for a send slot */
	uint32_t outstanding;
	bool blocked;
	bool nic_spray;        /* lb spray/adaptive without selective repeat */
	uint8_t rr;            /* ... the NIC's round robin over the ports */
};

struct sim_host {
	struct ur_dev dev;
	struct sim *s;
	struct sim_node *node;
	struct ur_cq cq;
	struct sim_qp *cur;         /* QP the transport is running for */
	struct sim_qp *bhead, *btail;
	uint32_t id;
	uint32_t nqps;
	struct sim_qp **qps;        /* by qpn - SIM_QPN0 */
	uint32_t capqps;
};

#define SIM_QPN0 0x100

struct sim_pool {
	struct sim_pkt *free[2];
	uint32_t cap[2];
	uint64_t live, peak, allocated;
	void **slabs;
	size_t nslabs, capslabs;
};

/* Trace tags (sim_work.c): a tag is done when its flows all are. */
#define SIM_TAG_MAX ((1u << 26) - 1)
#define SIM_DEPS_REL (1u << 31) /* sim_flow.deps: start_ns counts from
				 * when the last dependency arrived */
struct sim_tag {
	uint32_t left;      /* its flows not done yet */
	uint32_t waiters;   /* head of its list in sim.wait (SIM_NONE) */
	int closed;         /* trace line that first waited for it (0) */
};

/* sim_evq.c: the near future in 1 ns buckets (one instant each, in
 * sequence order), a ring of nb of them from base. */
struct sim_cal_bucket {
	struct ur_ev *a;
	uint32_t head, n, cap;      /* events a[head..n) */
};

struct sim_cal {
	struct sim_cal_bucket *b;
	uint64_t *bits;             /* non-empty buckets */
	uint32_t nb, mask;          /* 0: evq heap (no calendar) */
	uint64_t base;              /* no bucketed event is earlier */
	size_t n;
};

struct sim {
	struct sim_cfg c;
	struct sim_cal cal;         /* packets, ports, PFC within nb ns */
	struct ur_evheap heap;      /* packets, ports, PFC beyond the
				     * calendar (all of them: evq heap) */
	struct ur_evheap slow;      /* QP timers and flow starts: one per QP
				     * or flow, mostly far off; apart, they
				     * do not deepen the packets' heap. One
				     * sequence (heap.seq) orders both. */
	uint64_t now, rng;
	uint64_t cur_seq;           /* sequence number of the running event */
	uint64_t events, hops;
	struct sim_node *nodes;
	uint32_t nnodes, nhosts;
	uint32_t *host_node;        /* host id -> node index */
	uint32_t *nbrs;             /* every node's nbr, one block */
	uint8_t *dist;              /* [host][node] hops to the host */
	struct sim_host *hosts;
	FILE *cc_trace;             /* cfg.cc_trace, open (NULL: none) */
	FILE *queue_trace;          /* cfg.queue_trace, open (NULL: none) */
	struct sim_pool pool;
	struct ur_mr mr;            /* one region, same keys on every host */
	uint8_t *buf;
	uint8_t *rxbuf;             /* a received packet made whole (deliver) */
	/* connections: open addressing on (a << 32 | b) */
	uint64_t *ckey;
	struct sim_qp **cval;
	size_t ccap, ncon;
	/* workload */
	struct sim_flow *flows;
	uint32_t nflows, capflows, flows_done;
	struct sim_tag *tags;
	uint32_t ntags;
	struct { uint32_t flow, next; } *wait;
	uint32_t nwait, capwait;
	uint64_t t_first, t_last;
	/* stats */
	uint64_t drops, timeouts_seen;
	uint32_t reroutes;             /* timed failures routed around */
	double progress_next;          /* wall seconds after wall0 */
	uint64_t bytes_total;          /* the workload's, for the estimate */
	double wall0;
	uint64_t *qhist;               /* sampled queue bytes, 1 KiB bins */
	uint64_t gen_ns;               /* poisson: the arrivals' span */
};

/* sim_evq.c */
int sim__evq_init(struct sim *s);
void sim__evq_fini(struct sim *s);
void sim__push(struct sim *s, uint64_t t, uint32_t type, void *ptr,
	       uint32_t arg);
/* Schedule with a sequence number taken earlier (ur_evheap_reserve on
 * s->heap): it runs where it would have had it been pushed then. */
void sim__push_seq(struct sim *s, uint64_t t, uint64_t seq, uint32_t type,
		   void *ptr, uint32_t arg);
/* The earliest event into *@out, if there is one no later than @end. */
bool sim__evq_pop(struct sim *s, uint64_t end, struct ur_ev *out);
bool sim__evq_empty(const struct sim *s);

/* sim_core.c */
uint64_t sim__rand(struct sim *s);
double sim__frand(struct sim *s);
struct sim_pkt *sim__pkt_get(struct sim *s, uint32_t len);
void sim__pkt_put(struct sim *s, struct sim_pkt *p);

/* sim_net.c */
void sim__port_enqueue(struct sim *s, struct sim_port *pt, struct sim_pkt *p);
/* Push @pt's end of serialisation if it is busy and it is not pushed yet
 * (a packet waits, a QP blocked on it). */
void sim__port_wake(struct sim *s, struct sim_port *pt);
void sim__arrive(struct sim *s, struct sim_pkt *p, uint32_t node);
void sim__txdone(struct sim *s, struct sim_port *pt);
void sim__pfc(struct sim *s, struct sim_port *pt, uint32_t arg);
uint32_t sim__hash(const struct ur_ipudp *p, uint32_t salt);
int sim__route(const struct sim *s, const struct sim_node *n, uint32_t dst,
		const struct ur_ipudp *path);
void sim__host_addr(uint32_t hid, uint8_t ip[4]);
uint32_t sim__addr_host(const uint8_t ip[4]);

/* sim_topo.c */
/* The line of the config file that last set @key (0: not from a file). */
int sim__cfg_line(const struct sim_cfg *c, const char *key);
/* "FILE:LINE: " for the latest line that set one of the keys (a NULL-ended
 * list), or "" if none came from a file; returns @buf. */
const char *sim__cfg_where(const struct sim_cfg *c, char *buf, size_t n, ...);
int sim__topo_build(struct sim *s, char *err, size_t n);
/* SIM_EV_LINK: a timed failure happens, or is routed around. */
void sim__link_event(struct sim *s, uint32_t arg);
/* sim_cfg.c: the next line of @f (numbered in *@ln) with text once its '#'
 * comment and leading blanks are gone, *@p at its first character: 1, or 0
 * at the end of the file, or -1 with "NAME:LINE: line longer..." in @err if
 * it does not fit in @cap bytes (trace and CDF readers). */
int sim__line(FILE *f, char *line, size_t cap, int *ln, char **p,
	      const char *name, char *err, size_t n);

/* sim_host.c */
int sim__hosts_init(struct sim *s, char *err, size_t n);
void sim__hosts_fini(struct sim *s);
struct sim_qp *sim__conn(struct sim *s, uint32_t a, uint32_t b);
struct sim_qp *sim__conn_find(const struct sim *s, uint32_t a, uint32_t b);
void sim__host_rx(struct sim *s, struct sim_host *h, struct sim_pkt *p);
void sim__host_txdone(struct sim *s, struct sim_host *h);
void sim__qp_timer(struct sim *s, struct sim_qp *q);
void sim__flow_start(struct sim *s, uint32_t f);

/* sim_core.c: the flow's FCT with the fabric to itself (docs/sim.md). */
uint64_t sim__ideal_ns(const struct sim *s, const struct sim_flow *f);

#endif

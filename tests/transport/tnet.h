/* SPDX-License-Identifier: MIT */
/*
 * A deterministic in-memory network for transport tests: nodes are struct
 * ur_dev instances whose ops put packets into one queue ordered by delivery
 * time on a virtual clock; a seeded fault injector loses, duplicates,
 * delays and reorders packets.
 */
#ifndef TNET_H
#define TNET_H

struct ur_txq;

#include "ur_evheap.h"
#include "ur_transport.h"

#define TNET_MAX_NODES 4
#define TNET_MAX_QPS 64
#define TNET_MAX_MRS 64
#define TNET_RX_BATCH 16 /* tnet.txq: packets delivered per receive batch */

struct tnet;

struct tnode {
	struct tnet *net;
	int id;               /* address 10.0.0.(id+1) */
	struct ur_dev dev;
	struct ur_qp *qps[TNET_MAX_QPS];
	struct ur_mr *mrs[TNET_MAX_MRS];
	int n_qps, n_mrs;
	struct ur_srq *srqs[4]; /* found by ur_srq.srqn (XRC) */
	uint32_t next_key;
	int cq_events, qp_events;
	int last_qp_event;
	int pkt_budget;       /* <0: unlimited; else buffers left */
	uint64_t link_free;   /* the bottleneck link is busy until then */
	struct ur_txq *txq;   /* tnet.txq: packets made, not yet sent */
};

struct tpkt {
	uint64_t at, seq;
	int dst;
	uint32_t len;
	struct ur_ipudp path;
	uint8_t *data;
	bool hello;           /* an encryption negotiation MAD to QP1 */
};

struct tfault {
	double loss, dup, reorder; /* probabilities */
	uint64_t delay_ns;          /* base one-way delay */
	uint64_t jitter_ns;         /* extra random delay when reordering */
	/* Drop every packet whose opcode is @drop_opcode (if set) once
	 * @drop_count times. */
	int drop_opcode, drop_count;
	/* Then drop the next @drop_again copies of the last packet dropped
	 * so (its resends: same opcode and PSN). */
	int drop_again;
	uint32_t drop_psn;         /* set by tnet: the PSN dropped last */
	/* Drop this many encryption negotiation MADs (ur_crypt_neg.c);
	 * @hello_loss: the probability of losing one. */
	int drop_hellos;
	double hello_loss;
	double ce; /* mark this fraction of ECN-capable packets CE (a switch) */
	/* A bottleneck link per sending node (0: infinitely fast): packets
	 * leave one after the other at @rate_bps; one that would wait longer
	 * than @queue_ns is tail-dropped. */
	uint64_t rate_bps, queue_ns;
	/* Paths (spraying): a packet whose UDP source port is path[i].sport
	 * takes path[i]'s extra one-way delay (a FIFO: fixed per path) and
	 * is lost with its probability (1: a dead path, a silent drop); with
	 * a rate, it queues for its own link (no limit: a deep queue). */
	struct tpath {
		uint16_t sport;
		uint64_t delay_ns;
		double loss;
		uint64_t rate_bps; /* 0: no bottleneck; else a FIFO link */
		uint64_t free;     /* (tnet) that link is busy until then */
		/* Several ports on one link (ECMP hashed them there): 0, its
		 * own; else it queues on path[link - 1]'s link (its rate,
		 * queue and loss), after its own delay. */
		uint8_t link;
		uint64_t queue_ns; /* 0: no limit; else tail drop beyond */
		uint64_t tail_drops; /* (tnet) */
		/* With rx_ifs: the receiving host finds this link's
		 * interface dead from then (ur_dev_ops.rx_if_ok; 0: never),
		 * as a bonded port's engine does a silent rail. */
		uint64_t rx_dead_at;
		/* Sends by node 1 (the receiver) from this port refused from
		 * then (a firewall rule on that host: EPERM; 0: never):
		 * dropped, and its host knows interface @refuse_if (a path
		 * index + 1) dead from the first (its rx_dead_at), as a
		 * bonded port's engine does a rail it cannot send by. Node
		 * 0's ports may be the same numbers: they pass. */
		uint64_t tx_refuse_at;
		uint8_t refuse_if;
		/* Node 0's host hears nothing by this link from then (0:
		 * never) while it hears the others: ur_dev_ops.path_quiet
		 * for node 0's ports on it, as a bonded port's engine finds
		 * a rail silent (udp.c bond_silent). */
		uint64_t quiet_at;
		/* (tnet, with rx_silence) node 1's last arrival by this
		 * link, and the arrival count then */
		uint64_t rx_at, rx_mark;
	} path[20];
	unsigned int npaths;
	/* A host that is not scheduled (a loaded machine): node
	 * @stall_node runs nothing for @stall_ns of every @stall_every_ns
	 * (0: never); what reaches it meanwhile waits in its socket and is
	 * received, in order, when it wakes, before its timers run (as
	 * the engine drains before it walks its timers). */
	int stall_node;
	uint64_t stall_every_ns, stall_ns;
	/* Deliver a path's packets with ur_rxinfo.rx_if = its link's path
	 * index + 1 (the interface it came in by, on a bonded port). */
	bool rx_ifs;
	/* With rx_ifs: node 1's host calls a link's interface dead as a
	 * bonded port's engine calls a rail silent (udp.c bond_silent):
	 * nothing by it for 2 ms after its last arrival while at least 16
	 * came by the others, one of them within 8 ms. */
	bool rx_silence;
	uint64_t rx_total, rx_last; /* (tnet) node 1's arrivals, the last */
};

struct tnet {
	uint64_t now;
	uint64_t rng;
	uint64_t seq;
	struct tfault f;
	struct tnode nodes[TNET_MAX_NODES];
	int n_nodes;
	struct ur_evheap q;  /* packets in flight (struct tpkt), by (at, seq) */
	uint64_t delivered, dropped, hellos;
	/* Deliver as the engine does when it places a WRITE's middle
	 * packets during the ICRC check (ur_qp_rx_place): payload copied to
	 * its destination first, the packet then handed over pointing
	 * there. place_bad: the share of those that fail the check, which
	 * leave garbage where they were placed and are dropped. */
	bool place;
	double place_bad;
	uint64_t placed, placed_bad;
	/* Optional tap: called for every packet sent (before faults). */
	void (*tap)(struct tnet *net, const uint8_t *data, uint32_t len,
		    void *arg);
	void *tap_arg;
	uint16_t tap_sport; /* the UDP source port of the packet tapped */
	uint8_t tap_tos;    /* and its IP TOS byte */
	/* Run the engine's transmit policy (ur_txq.h): a node's packets wait
	 * in its queue, where a newer plain ACK replaces an older one, and
	 * leave after each event; packets arriving at one instant are
	 * delivered as one receive batch (TNET_RX_BATCH) before that. */
	bool txq;
	/* With txq: deliver a batch's packets but the last with
	 * ur_rxinfo.ack_later and then send the ACKs owed
	 * (ur_qp_ack_flush), as the engine does. */
	bool ack_later;
};

void tnet_init(struct tnet *net, uint64_t seed, int nodes);
/* Packet @i of those in flight (0 .. net->q.n - 1, in heap order). */
static inline struct tpkt *tnet_queued(const struct tnet *net, size_t i)
{
	return net->q.a[i].ptr;
}
void tnet_fini(struct tnet *net);
uint64_t tnet_rand(struct tnet *net);
/* Random double in [0, 1). */
double tnet_frand(struct tnet *net);

/* Register a memory region on @n over [buf, buf+len). */
struct ur_mr *tnet_mr(struct tnode *n, void *buf, uint64_t len,
		      uint32_t access, uint32_t pdn);
void tnet_mr_del(struct tnode *n, struct ur_mr *mr);

/* QP on node @n, registered for lookup. */
struct ur_qp *tnet_qp(struct tnode *n, uint32_t type, uint32_t pdn,
		      const struct ur_qp_caps *caps, struct ur_cq *scq,
		      struct ur_cq *rcq);
void tnet_qp_del(struct tnode *n, struct ur_qp *qp);

struct tconn_attr {
	uint32_t mtu;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic; /* 0: 16 */
	uint32_t access;
	uint32_t psn_a, psn_b;
	uint8_t tclass_a, tclass_b; /* each QP's AV traffic class (IP TOS) */
};
/* Bring an RC/UC pair to RTS, connected to each other. */
void tnet_connect(struct ur_qp *a, struct ur_qp *b,
		  const struct tconn_attr *ca);
/* Bring a UD QP to RTS with @qkey. */
void tnet_ud_up(struct ur_qp *qp, uint32_t qkey);
void tnet_addr(int node, struct ur_ipudp *ip);
/* What a node's host knows about a datagram from node @from (any number:
 * nodes that do not exist make off-path sources) to node @to. */
void tnet_rxinfo(int from, int to, struct ur_rxinfo *ri);
/* Deliver raw IB bytes to node @to now, as if sent by address @from. */
int tnet_inject(struct tnet *net, int from, int to, const uint8_t *p,
		uint32_t len);

/* Run until nothing is in flight and no timer is pending, or until the
 * virtual clock passes @limit. Returns the number of events processed. */
uint64_t tnet_run(struct tnet *net, uint64_t limit);
/* Advance time, running timers and deliveries until @t. */
void tnet_run_until(struct tnet *net, uint64_t t);

#endif

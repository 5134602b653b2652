/* SPDX-License-Identifier: MIT */
/*
 * Internals of liburoce_coll. Layers, bottom up:
 *   boot.c    TCP rendezvous with rank 0, barrier, failure watch
 *   comm.c    device, PD, CQ, one RC QP per peer, the staging region
 *   p2p.c     chunked RDMA WRITE WITH IMM into the peer's staging slots,
 *             credits, progress, deadline, signature check
 *   regcache.c  registrations of user buffers for zero-copy sends
 *   rails.c   the rails (UROCE_COLL_RAILS): one hidden sub-communicator
 *             per further port or device, and how a message is striped
 *   seg.c     allreduce and all-to-all between ranks of one host through
 *             shared segments (no verbs)
 *   reduce.c  reduction kernels (-O3, vectorised loops)
 *   algo_*.c  the collectives, written as steps of ur__xfer()
 */
#ifndef UR_COLL_INTERNAL_H
#define UR_COLL_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include <infiniband/verbs.h>

#include "uroce/coll.h"
#include "ur_copy.h" /* ur_copy, ur_move, UR_VEC (src/util) */

/* Wire-visible facts shared by all ranks of a job. */
#define UR_COLL_MAGIC 0x75636f6cu /* "ucol" */
#define UR_COLL_VERSION 3

/* Collective kinds, carried in the immediate-data signature. */
#define UR_COLL_KINDS(X)                                                     \
	X(ALLREDUCE, "allreduce")                                            \
	X(REDUCE, "reduce")                                                  \
	X(BROADCAST, "broadcast")                                            \
	X(ALLGATHER, "allgather")                                            \
	X(REDUCESCATTER, "reducescatter")                                    \
	X(ALLTOALL, "alltoall")                                              \
	X(ALLTOALLV, "alltoallv")                                            \
	X(BARRIER, "barrier")                                                \
	X(P2P, "send/recv")
enum ur_coll_kind {
#define X(e, s) UR_C_##e,
	UR_COLL_KINDS(X)
#undef X
	UR_C_MAX
};
extern const char *const ur__coll_kind_name[UR_C_MAX];

/* Algorithms; UROCE_COLL_ALGO names one of these (or "auto"). */
#define UR_ALGOS(X)                                                          \
	X(AUTO, "auto")                                                      \
	X(RING, "ring")                                                      \
	X(RABENSEIFNER, "rabenseifner")                                      \
	X(RECDOUBLING, "recursive_doubling")                                 \
	X(TREE, "tree")                                                      \
	X(BRUCK, "bruck")                                                    \
	X(HALVING, "recursive_halving")                                      \
	X(PAIRWISE, "pairwise")                                              \
	X(DISSEMINATION, "dissemination")                                    \
	X(LOCAL, "local")
enum ur_algo {
#define X(e, s) UR_A_##e,
	UR_ALGOS(X)
#undef X
	UR_A_MAX
};
extern const char *const ur__algo_name[UR_A_MAX];

/* Connection record one rank publishes for each peer (host byte order). */
struct ur_conn_info {
	uint32_t qpn;
	uint32_t psn;
	uint8_t gid[16];
	uint64_t slots_addr;  /* my receive slots for this peer's data */
	uint64_t credit_addr; /* where this peer writes what it consumed */
	uint32_t rkey;
	uint32_t mtu;         /* enum ibv_mtu */
	uint16_t lid;
	uint16_t pad[3];
	/* One copy on one host (p2p.c, CMA): our pid, and a random cookie
	 * at credit_addr + 8 that proves the pid is ours. */
	uint32_t pid;
	uint32_t seg_id;      /* seg.c: our shared segment (0: none) */
	uint64_t cookie;
};

struct ur_boot {
	int rank, size;
	int listen_fd;
	int *fds;     /* rank 0: one per rank (fds[0] = -1); others: fds[0] */
	int nfds;
};

struct ur_peer {
	struct ibv_qp *qp;
	/* Remote side. */
	uint64_t r_slots;
	uint64_t r_credit;
	uint32_t rkey;
	/* Local side, inside comm->region. */
	char *rx;                 /* nslots * slot bytes the peer writes into */
	char *tx;                 /* nslots * slot bytes we write from */
	volatile uint64_t *credit; /* messages of ours the peer consumed */
	uint64_t tx_posted, tx_done;
	uint64_t rx_arrived, rx_consumed;
	uint64_t credit_sent;     /* value of our last credit write */
	int credit_inflight;
	/* Direct receives (p2p.c): where the peer may write our data. */
	volatile struct ur_rtr *rtr; /* UR_RTR_RING records the peer writes */
	uint64_t r_rtr;           /* the peer's mailbox for our records */
	uint64_t rtr_arrived, rtr_used; /* records from the peer */
	uint64_t rtr_sent;        /* records we wrote to the peer */
	int rtr_inflight;
	uint64_t dw_posted, dw_done; /* plain RDMA WRITEs of direct sends */
	uint32_t *rx_imm, *rx_len; /* per slot */
	/* CMA (p2p.c): the peer's pid and cookie; cma 0 untried, 1 works,
	 * -1 not usable (another host, pid namespace or no permission). */
	int cma_pid;
	int cma;
	uint64_t cma_cookie;
	uint32_t seg_id;          /* its shared segment (seg.c), 0: none */
};

/*
 * The progress context of a communicator (nbc.c): a FIFO of requests that
 * one executor at a time runs to completion, in issue order. The executor
 * is the communicator's progress thread (started with the first
 * non-blocking call) or a caller that waits and finds no executor busy.
 */
struct ur_nbc {
	pthread_mutex_t lock;
	pthread_cond_t work;  /* the progress thread: queue non-empty, no executor */
	pthread_cond_t done;  /* waiters: a request completed */
	struct uroce_request *head, *tail;
	int exec;             /* an executor runs a request */
	int waiters;          /* threads sleeping on done */
	int thread_on;        /* progress thread started */
	int no_thread;        /* UROCE_COLL_PROGRESS=0 */
	int stop;
	int inited;
	pthread_t thread;
	int in_group;
	struct uroce_request *ghead, *gtail; /* issued in the open group */
};

struct uroce_comm {
	int rank, size;
	int timeout_ms;
	int gid_index;
	size_t slot;     /* bytes per staging slot */
	unsigned nslots; /* slots per peer and direction */
	unsigned credit_batch; /* consumed messages per credit write */
	enum ur_algo algo_override;
	uint32_t seq;    /* collective call number (signature) */
	int failed;      /* negative errno once broken */
	char err[256];
	const char *last_algo;

	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_comp_channel *chan; /* wakes a blocked waiter */
	unsigned cq_events;  /* events taken, not yet acknowledged */
	uint64_t spin_ns;    /* spin this long without progress, then block */
	uint64_t pspin_ns;   /* the same for the progress thread */
	uint64_t cur_spin_ns; /* the executor's (nbc.c run_head) */
	uint64_t block_ns;   /* longest block before draining ourselves */
	int yield;           /* spin with sched_yield (more ranks than cores) */
	int cpu_shared;      /* more local ranks than CPUs */
	/* A credit is owed but one is still in flight: its (unsolicited)
	 * send completion must wake a waiting rank (progress, ur__xfer). */
	int want_acks;
	int qp_timeout;      /* ibv_qp_attr.timeout (local ACK timeout) */
	int cq_depth;
	char *region;
	size_t region_len;
	struct ibv_mr *mr;
	struct ur_peer *peers;
	struct ur_boot boot;
	uint64_t next_watch_ns;

	/* Registered user buffers (regcache.c). */
	struct ur_reg *regs;
	int nregs;
	uint64_t reg_clock;

	/* Scratch for algorithms that need a second copy. */
	void *scratch;
	size_t scratch_len;

	struct ur_nbc nbc;
	/* Lanes (nbc.c): a communicator's non-blocking collectives go
	 * round-robin to lanes[0] (itself, which also carries the blocking
	 * calls, point-to-point, groups' batches and splits) and nlanes - 1
	 * hidden sub-communicators, each
	 * with its own queue, progress thread, QPs, CQ and slots, so up to
	 * nlanes collectives progress at once. nlanes 0: no lanes (a lane
	 * itself, UROCE_COLL_LANES=1, or no progress thread). */
	struct uroce_comm **lanes;
	int nlanes;
	int want_lanes;      /* UROCE_COLL_LANES, for splits */
	uint64_t lane_next;  /* i-collectives issued: the next goes to lane_next % nlanes */
	struct uroce_comm *owner; /* a lane: the communicator it serves */
	/* Point-to-point message numbers per peer (signatures, nbc.c). */
	uint32_t *p2p_sent, *p2p_rcvd;
	/* Sub-communicators (split.c): the root communicator's bootstrap is
	 * every communicator's failure detector (wboot); a child shares the
	 * parent's device and PD. */
	struct ur_boot *wboot;
	struct uroce_comm *parent;
	int children;
	int port;            /* HCA port (1) */
	uint8_t gid[16];     /* ours, at gid_index */
	uint32_t mtu;        /* enum ibv_mtu, active */
	uint16_t lid;
	int jumbo;           /* offer uroce's jumbo packets */
	int cma;             /* UROCE_COLL_CMA: direct streams by process_vm_writev */
	/* Shared segments between the ranks of one host (seg.c). */
	struct ur_seg *seg;
	uint32_t seg_id;
	int regcache_entries;
	/* Rails (rails.c): rails[0] is the communicator itself (its port),
	 * rails[k] a hidden sub-communicator on the k-th rail's port or
	 * device, with its own QPs, CQ, slots and progress thread; a large
	 * collective of the communicator is striped across them in
	 * proportion to rail_w (nbc.c). nrails 0: one rail, as before. */
	struct uroce_comm **rails;
	uint32_t *rail_w;
	int nrails;
	int own_dev;         /* a rail on another device: ctx and PD are its own */
};

/* A rail as this rank sees it: a device port and its relative weight. */
#define UR_RAILS_MAX 8
struct ur_rail {
	char dev[64];        /* "" : the communicator's device */
	int port;
	uint32_t weight;     /* 0: the port's rate */
};

/* rails.c. Parse UROCE_COLL_RAILS: *n rails (0: "auto", every active port
 * of the communicator's device; 1: "one"); -EINVAL after saying why. */
int ur__rails_parse(const char *v, struct ur_rail *out, int *n, int *is_auto);
/* Collective over c, once c is connected: agree on the rails with every
 * rank and make a sub-communicator for each further one. */
int ur__rails_init(struct uroce_comm *c, const struct ur_rail *list, int n,
		    int is_auto);
int ur__rails_destroy(struct uroce_comm *c);
/* Messages (or alltoall blocks) below this stay on the first rail. */
#define UR_RAIL_MIN (64u << 10)
/* Part k of count elements of es bytes over c's rails: *off and the count;
 * all on rail 0 below UR_RAIL_MIN bytes. */
size_t ur__rail_part(const struct uroce_comm *c, size_t count, size_t es,
		      int k, size_t *off);
/* split.c: a child of c with every rank, on another port or device. */
int ur__run_split_rail(struct uroce_comm *c, struct ibv_context *ctx,
			struct ibv_pd *pd, int port, struct uroce_comm **out);

/* Signature of one message stream: collective, type, op, count, call. */
uint32_t ur__sig(struct uroce_comm *c, enum ur_coll_kind k,
		  enum uroce_dtype dt, enum uroce_redop op, uint64_t count,
		  int root);

/* The same with an explicit call number (point-to-point: per pair). */
uint32_t ur__sig_seq(uint32_t seq, enum ur_coll_kind k, enum uroce_dtype dt,
		      enum uroce_redop op, uint64_t count, int root);

/* UR_X_LOCAL: buf = src, copied in slot-sized pieces between the other
 * streams' progress (a rank's own block of an all-to-all, peer = rank),
 * so that the peers' offers and first writes do not wait for it. */
enum ur_xop_kind { UR_X_SEND, UR_X_RECV, UR_X_RECV_REDUCE, UR_X_LOCAL };

/* Sends of at least this many bytes go from a registered user buffer. */
#define UR_ZC_MIN 65536
/* Plain (not reducing) streams of at least this many bytes may be written
 * straight into the receiver's buffer, which it offers first (ur_rtr). */
#define UR_DIRECT_MIN (256u << 10)
/* Between ranks of one host (UROCE_COLL_CMA), slot chunks of at least
 * this many bytes go by process_vm_writev into the receiver's slot. */
#define UR_CMA_MIN (16u << 10)
/* With CMA (one copy into the offered buffer, against two through a
 * slot) plain streams go direct from this size. Every rank decides from
 * its own UROCE_COLL_CMA: set it alike. */
#define UR_DIRECT_MIN_CMA (64u << 10)
#define ur__direct_min(c) ((c)->cma ? UR_DIRECT_MIN_CMA : UR_DIRECT_MIN)
/* Allreduce by recursive doubling up to this many bytes per rank with
 * CMA from 4 ranks (algo.c). */
#define UR_RD_CMA_MAX (1u << 20)

/* A receiver's offer for one direct stream, written into the sender's
 * mailbox (a ring of UR_RTR_RING) by an RDMA WRITE WITH IMMEDIATE. addr 0:
 * no registered buffer, use the staging slots. */
struct ur_rtr {
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	uint32_t sig;
	uint64_t pad;
};
#define UR_RTR_RING 4

/* One stream of a step: bytes to or from one peer, chunked into slots. */
struct ur_xop {
	int kind;
	int peer;
	char *buf;
	size_t bytes;
	uint32_t sig;
	/* UR_X_RECV_REDUCE: buf = src op data, so that an out-of-place
	 * collective needs no copy of its input first (NULL: src is buf). */
	const char *src;
	/* progress */
	size_t off;
	uint64_t msgs, nmsgs;
	uint32_t lkey;   /* send straight from buf (0: through a tx slot) */
	uint64_t tx_end; /* zero copy: done once the peer's tx_done gets here */
	int direct;      /* the peer's side of this stream is a plain
			  * stream too: an offer (ur_rtr) is exchanged.
			  * UR_DIRECT_SIZED: only from UR_DIRECT_MIN bytes
			  * (both ends' sizes come from one count);
			  * UR_DIRECT_ALWAYS: at any size, with a buffer
			  * from UR_DIRECT_MIN (per-pair user counts, as in
			  * alltoallv, may disagree; the offer's length
			  * then names the mismatch) */
	int mode;        /* direct stream: X_OFFER, X_DIRECT or X_SLOTS */
	uint64_t raddr;  /* direct send: the receiver's buffer */
	uint32_t rkey;
};
enum { UR_X_OFFER, UR_X_DIRECT, UR_X_SLOTS };
enum { UR_DIRECT_SIZED = 1, UR_DIRECT_ALWAYS = 2 };

static inline void ur__xop(struct ur_xop *x, int kind, int peer, void *buf,
			    size_t bytes, uint32_t sig)
{
	/* ur__xfer sets the progress fields; callers may set direct. */
	*x = (struct ur_xop){ .kind = kind, .peer = peer, .buf = buf,
			      .bytes = bytes, .sig = sig };
}

/* Run the streams concurrently until all are done (or the comm fails). */
int ur__xfer(struct uroce_comm *c, struct ur_xop *ops, int nops,
	      enum uroce_dtype dt, enum uroce_redop op);
/* Convenience: one send and/or one receive (peer -1 = none). */
int ur__sendrecv(struct uroce_comm *c, int speer, const void *sbuf,
		  size_t sbytes, int rpeer, void *rbuf, size_t rbytes,
		  int rkind, uint32_t sig, enum uroce_dtype dt,
		  enum uroce_redop op);
/* One send and one reducing receive into rbuf of rsrc op data. */
int ur__sendrecv_reduce(struct uroce_comm *c, int speer, const void *sbuf,
			 size_t sbytes, int rpeer, void *rbuf,
			 const void *rsrc, size_t rbytes, uint32_t sig,
			 enum uroce_dtype dt, enum uroce_redop op);
int ur__fail(struct uroce_comm *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void *ur__scratch(struct uroce_comm *c, size_t len);
uint64_t ur__now_ns(void);

/* p2p.c: may we process_vm_writev/readv peer p (tried once)? */
int ur__cma_ok(struct uroce_comm *c, struct ur_peer *p);
/* p2p.c: takes the completions; the first peer whose message or offer
 * of collective call seq waits unconsumed (-1: none), or a negative
 * errno. Messages of later calls may wait: a peer that finished the
 * call before us has started the next one. */
int ur__stray(struct uroce_comm *c, uint32_t seq);
/* p2p.c: fail c when a rank's bootstrap connection closed (every 2 ms). */
int ur__check_alive(struct uroce_comm *c, uint64_t now);

/* seg.c: allreduce and all-to-all through shared segments between the
 * ranks of one host, up to UROCE_COLL_SEG_KB per rank (all-to-all with
 * CMA at any size). create: at setup (ours, if UROCE_COLL_CMA); use:
 * whether a call of this many bytes per rank, in blocks of block bytes
 * (all-to-all; 0 otherwise), takes the path (collective at its first
 * call in range: the ranks agree). */
int ur__seg_create(struct uroce_comm *c);
/* Map peer i's segment as we connect to it; unlink ours once every rank
 * has (after the setup's barrier). */
void ur__seg_connect(struct uroce_comm *c, int i);
void ur__seg_unlink(struct uroce_comm *c);
void ur__seg_free(struct uroce_comm *c);
int ur__seg_use(struct uroce_comm *c, size_t bytes, size_t block);
int ur__seg_allreduce(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
		       size_t count, enum uroce_dtype dt, enum uroce_redop op,
		       uint32_t sig);
int ur__seg_alltoall(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
		      size_t count, enum uroce_dtype dt, uint32_t sig);

/* The collectives themselves, run by the executor (nbc.c) in issue order. */
int ur__run_allreduce(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
		       size_t count, enum uroce_dtype dt, enum uroce_redop op);
int ur__run_reduce(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
		    size_t count, enum uroce_dtype dt, enum uroce_redop op,
		    int root);
int ur__run_broadcast(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
		       size_t count, enum uroce_dtype dt, int root);
int ur__run_allgather(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
		       size_t sendcount, enum uroce_dtype dt);
int ur__run_reduce_scatter(struct uroce_comm *c, const void *sendbuf,
			    void *recvbuf, size_t recvcount, enum uroce_dtype dt,
			    enum uroce_redop op);
int ur__run_alltoall(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
		      size_t count, enum uroce_dtype dt);
int ur__run_alltoallv(struct uroce_comm *c, const void *sendbuf,
		       const size_t *sendcounts, const size_t *sdispls,
		       void *recvbuf, const size_t *recvcounts,
		       const size_t *rdispls, enum uroce_dtype dt);
int ur__run_barrier(struct uroce_comm *c);

/* nbc.c */
int ur__nbc_init(struct uroce_comm *c);
/* Waits for every issued request, stops the progress thread. */
void ur__nbc_fini(struct uroce_comm *c);
/* A barrier run at once by a caller that owns the communicator (no
 * executor, no request pending): sub-communicator teardown. */
int ur__nbc_barrier_now(struct uroce_comm *c);

/* split.c: the lanes of a new communicator (collective over it), made by
 * splits of it; comm.c: their teardown */
int ur__lanes_init(struct uroce_comm *c);
int ur__lanes_destroy(struct uroce_comm *c);

/* split.c: the child's half of comm setup (comm.c) */
int ur__comm_setup(struct uroce_comm *c);
int ur__comm_connect(struct uroce_comm *c, int i, const struct ur_conn_info *mine,
		      const struct ur_conn_info *rem);
int ur__conn_info(struct uroce_comm *c, int i, struct ur_conn_info *out);
void ur__comm_free(struct uroce_comm *c);
int ur__run_split(struct uroce_comm *c, int color, int key,
		   struct uroce_comm **out);

/* boot.c */
int ur__boot_exchange(struct ur_boot *b, const char *addr, int port,
		       int timeout_ms, const void *mine, size_t len,
		       void *table);
int ur__boot_barrier(struct ur_boot *b, int timeout_ms);
/* 0 while every bootstrap peer is alive, -EPIPE (with *who) when one closed. */
int ur__boot_watch(struct ur_boot *b, int *who);
void ur__boot_abort(struct ur_boot *b);
void ur__boot_close(struct ur_boot *b);

/* reduce.c: dst[i] = dst[i] op src[i]; finish applies avg's division. */
void ur__reduce(void *dst, const void *src, size_t count,
		 enum uroce_dtype dt, enum uroce_redop op);
/* dst[i] = a[i] op src[i]; a may be dst, else neither input overlaps dst. */
void ur__reduce3(void *dst, const void *a, const void *src, size_t count,
		  enum uroce_dtype dt, enum uroce_redop op);
void ur__reduce_finish(void *buf, size_t count, enum uroce_dtype dt,
			enum uroce_redop op, int nranks);

float ur__half_to_float(uint16_t h);
uint16_t ur__float_to_half(float f);
float ur__bf16_to_float(uint16_t h);
uint16_t ur__float_to_bf16(float f);

/* regcache.c */
int ur__reg_init(struct uroce_comm *c, int entries);
void ur__reg_fini(struct uroce_comm *c);
/* remote: also writable by peers (a direct receive lands in it). */
struct ibv_mr *ur__reg_find(struct uroce_comm *c, const void *buf, size_t len,
			     int remote);
void ur__reg_hint(struct uroce_comm *c, const void *buf, size_t len,
		   int remote);

/* Algorithm selection (algo.c). From 4 ranks, allgather takes Bruck's
 * algorithm up to UR_BRUCK_MAX bytes per rank, and reduce-scatter
 * recursive halving up to the UR_HALVING_* bytes of input (all ranks'
 * blocks), at a power of two of ranks or not. */
#define UR_BRUCK_MAX (64u << 10)
#define UR_HALVING_POW2_MAX (16u << 20)
#define UR_HALVING_MAX (256u << 10)
enum ur_algo ur__pick(struct uroce_comm *c, enum ur_coll_kind k,
		       size_t bytes);

/* Do two non-empty byte ranges share a byte? */
static inline int ur__overlaps(const void *a, size_t alen, const void *b,
				size_t blen)
{
	const char *x = a, *y = b;

	return alen && blen && x < y + blen && y < x + alen;
}

/* Blocks of a vector of count elements split into n parts. */
static inline size_t ur__blk_off(size_t count, int n, int i)
{
	size_t q = count / n, r = count % n;
	return (size_t)i * q + ((size_t)i < r ? (size_t)i : r);
}
static inline size_t ur__blk_len(size_t count, int n, int i)
{
	return count / n + ((size_t)i < count % n ? 1 : 0);
}

/* Building blocks shared by several collectives (algo_ring.c etc). */
/* Reduce-scatter of in (const) into buf (may be in): the blocks of buf
 * that a step reduces are written, the others are left alone. */
int ur__ring_reduce_scatter(struct uroce_comm *c, char *buf, const char *in,
			     size_t count, int shift, uint32_t sig,
			     enum uroce_dtype dt, enum uroce_redop op);
int ur__ring_allgather_blocks(struct uroce_comm *c, char *buf, size_t count,
			       int shift, uint32_t sig, enum uroce_dtype dt);
/* Reduce-scatter of n blocks of bcount elements by recursive halving:
 * block r of buf holds the reduction at rank r (coll_reduce.c). */
int ur__halving_reduce_scatter(struct uroce_comm *c, char *buf, const char *in,
				size_t bcount, uint32_t sig, enum uroce_dtype dt,
				enum uroce_redop op);
#endif

/* SPDX-License-Identifier: MIT */
/*
 * uroce transport layer: the NIC's protocol engine, pure (sans-I/O).
 *
 * Packets and `now` (nanoseconds, any epoch, monotonic) go in; packets,
 * completions and the next timer deadline come out through struct
 * ur_dev_ops. Nothing here touches sockets, threads or the clock, so the
 * same code runs over UDP, in deterministic tests and in the simulator.
 *
 * Not thread-safe: the host (verbs layer + engine, or the simulator)
 * serialises calls per QP (qp->lock is for the host's use) and per device
 * table. The CQ ring has its own small spinlock because QPs that share a CQ
 * may be driven from different threads.
 *
 * Values of enum ur_wc_status / ur_wc_opcode / ur_wr_opcode / access flags
 * equal the libibverbs ones so the verbs layer converts by cast (it checks
 * this with static asserts); this layer never includes <infiniband/verbs.h>.
 */
#ifndef UR_TRANSPORT_H
#define UR_TRANSPORT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ur_cc.h"
#include "ur_tcs.h"
#include "ur_wire.h"

struct ur_dev;
struct ur_qp;
struct ur_cq;
struct ur_srq;
struct ur_recv_wr;
struct ur_send_wr;
struct ur_qp_attr;

/* ---- memory regions ----------------------------------------------------- */
enum ur_access { /* == enum ibv_access_flags */
	UR_ACCESS_LOCAL_WRITE = 1,
	UR_ACCESS_REMOTE_WRITE = 2,
	UR_ACCESS_REMOTE_READ = 4,
	UR_ACCESS_REMOTE_ATOMIC = 8,
	UR_ACCESS_MW_BIND = 16,
	UR_ACCESS_ZERO_BASED = 32,
	UR_ACCESS_ON_DEMAND = 64,
	UR_ACCESS_HUGETLB = 128,
	UR_ACCESS_FLUSH_GLOBAL = 1 << 8,
	UR_ACCESS_FLUSH_PERSISTENT = 1 << 9,
};

/* What a key names: a region, or a memory window (== enum ibv_mw_type). */
enum ur_key_type { UR_KEY_MR = 0, UR_KEY_MW1 = 1, UR_KEY_MW2 = 2 };

struct ur_mr {
	uint64_t iova;      /* address the keys are valid for */
	uint8_t *host;      /* host pointer for iova */
	uint64_t length;
	uint32_t lkey, rkey;
	uint32_t access;    /* enum ur_access */
	uint32_t pdn;       /* owning PD; rkeys are scoped by PD */
	void *owner;        /* the host's object (e.g. struct ibv_mr) */
	/*
	 * Memory windows (IBTA 10.6.7) are keys too: same struct, same
	 * table. A window has no lkey; its iova/host/length/access/rkey
	 * describe the current binding and change only in the transport
	 * (BIND_MW, LOCAL_INV, SEND_WITH_INV), under mw_lock, so the host's
	 * lookup must find a window by the index part of the key (key >> 8)
	 * whatever its key byte. The host creates a window with type
	 * UR_KEY_MW1/2, rkey, pdn and an empty binding (length 0).
	 */
	uint32_t type;         /* enum ur_key_type */
	atomic_uint nbound;    /* region: windows bound to it */
	atomic_flag mw_lock;
	bool mw_valid;         /* window: bound, not invalidated */
	uint32_t mw_qpn;       /* type 2 window: usable through this QP only */
	struct ur_mr *mw_mr;   /* window: the region it is bound to */
};

/*
 * Check that [va, va+len) is inside @mr, that it belongs to @pdn and grants
 * @access. Returns 0 and the host pointer in *out, or -EACCES (key/PD/access)
 * / -ERANGE (bounds).
 */
int ur_mr_check(const struct ur_mr *mr, uint32_t pdn, uint64_t va,
		uint64_t len, uint32_t access, uint8_t **out);
/*
 * Remote access through @rkey by @qp (IBTA 10.6.7.2, C9-88): a region in
 * the QP's PD, or a bound window in it (a type 2 window only through the
 * QP that bound it), granting @access over [va, va+len). Same returns as
 * ur_mr_check. Takes the key's mw_lock; call under the host's table lock.
 */
int ur_rkey_check(struct ur_qp *qp, uint32_t rkey, uint64_t va, uint64_t len,
		  uint32_t access, uint8_t **out);

/* ---- completions ---------------------------------------------------------- */
enum ur_wc_status { /* == enum ibv_wc_status */
	UR_WC_SUCCESS, UR_WC_LOC_LEN_ERR, UR_WC_LOC_QP_OP_ERR,
	UR_WC_LOC_EEC_OP_ERR, UR_WC_LOC_PROT_ERR, UR_WC_WR_FLUSH_ERR,
	UR_WC_MW_BIND_ERR, UR_WC_BAD_RESP_ERR, UR_WC_LOC_ACCESS_ERR,
	UR_WC_REM_INV_REQ_ERR, UR_WC_REM_ACCESS_ERR, UR_WC_REM_OP_ERR,
	UR_WC_RETRY_EXC_ERR, UR_WC_RNR_RETRY_EXC_ERR, UR_WC_LOC_RDD_VIOL_ERR,
	UR_WC_REM_INV_RD_REQ_ERR, UR_WC_REM_ABORT_ERR, UR_WC_INV_EECN_ERR,
	UR_WC_INV_EEC_STATE_ERR, UR_WC_FATAL_ERR, UR_WC_RESP_TIMEOUT_ERR,
	UR_WC_GENERAL_ERR, UR_WC_TM_ERR, UR_WC_TM_RNDV_INCOMPLETE,
};
/* "success", "transport retry counter exceeded", ... as ibv_wc_status_str()
 * names them (for tools and the simulator, which have no libibverbs). */
const char *ur_wc_status_name(uint32_t status);
enum ur_wc_opcode { /* == enum ibv_wc_opcode */
	UR_WC_SEND, UR_WC_RDMA_WRITE, UR_WC_RDMA_READ, UR_WC_COMP_SWAP,
	UR_WC_FETCH_ADD, UR_WC_BIND_MW, UR_WC_LOCAL_INV, UR_WC_TSO,
	UR_WC_FLUSH, UR_WC_ATOMIC_WRITE = 9,
	UR_WC_RECV = 1 << 7, UR_WC_RECV_RDMA_WITH_IMM,
};
enum ur_wc_flags { /* == enum ibv_wc_flags */
	UR_WC_GRH = 1 << 0, UR_WC_WITH_IMM = 1 << 1,
	UR_WC_WITH_INV = 1 << 3,
};

struct ur_cqe {
	uint64_t wr_id;
	uint32_t status;    /* enum ur_wc_status */
	uint32_t opcode;    /* enum ur_wc_opcode */
	uint32_t byte_len;
	uint32_t imm_data;  /* network order, as ibv_wc.imm_data; or invalidated rkey */
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags;  /* enum ur_wc_flags */
	uint32_t vendor_err;
	uint8_t sl;         /* UD receive: RoCE packet type, see ur__ud_rx */
	uint64_t ts;        /* completion `now` */
};

/*
 * Where a queue's rings come from: the host's allocator (a parent domain's,
 * ibv_alloc_parent_domain) when it gives one, else calloc. alloc returns
 * the buffer, NULL (failure: -ENOMEM) or UR_ALLOC_DEFAULT (use calloc);
 * free gets back only what alloc gave. Called from the thread that
 * creates, resizes or destroys the queue, never from the engine.
 */
enum ur_ring_kind { UR_RING_QP = 1, UR_RING_CQ, UR_RING_SRQ };
#define UR_ALLOC_DEFAULT ((void *)-1)
#define UR_RING_ALIGN 64 /* what alloc is asked for: a cache line */
struct ur_alloc {
	void *(*alloc)(void *arg, size_t size, size_t align, uint32_t kind);
	void (*free)(void *arg, void *ptr, uint32_t kind);
	void *arg;
};
/* A zeroed ring of @size bytes (*custom: it came from @a), or NULL. */
void *ur__ring_alloc(const struct ur_alloc *a, size_t size, uint32_t kind,
		     bool *custom);
void ur__ring_free(const struct ur_alloc *a, void *p, uint32_t kind,
		   bool custom);

struct ur_cq {
	atomic_flag lock;
	uint32_t cqe;       /* capacity */
	uint32_t head, tail;  /* free-running; count = tail - head */
	struct ur_cqe *ring;  /* owned by creator */
	bool armed, armed_solicited; /* ibv_req_notify_cq */
	bool overflow;
	void *owner;
	const struct ur_alloc *alloc; /* the ring's allocator, NULL: calloc */
	bool ring_custom;             /* the ring came from alloc */
};
int ur_cq_init(struct ur_cq *cq, uint32_t cqe); /* allocates ring */
/* The same with the ring (and those of later resizes) from @alloc. */
int ur_cq_init_alloc(struct ur_cq *cq, uint32_t cqe,
		     const struct ur_alloc *alloc);
void ur_cq_fini(struct ur_cq *cq);
int ur_cq_resize(struct ur_cq *cq, uint32_t cqe);
/* Drop every entry of QP @qpn (in order, the rest kept); returns how many.
 * Hosts call it when a QP goes to RESET, as mlx4/mlx5 providers do.
 * Thread-safe. */
int ur_cq_clean(struct ur_cq *cq, uint32_t qpn);
/* Poll up to n entries; returns how many. Thread-safe. */
int ur_cq_poll(struct ur_cq *cq, struct ur_cqe *out, int n);
/* Whether the CQ holds entries: a hint, read without the lock. */
bool ur_cq_nonempty(const struct ur_cq *cq);
void ur_cq_arm(struct ur_cq *cq, bool solicited_only);
/* Add a completion made by the host itself (raw packet QPs, whose frames
 * never pass through the transport). -ENOSPC when the CQ is full (the
 * entry is dropped and the CQ marked overflowed); *@fire says whether an
 * armed CQ should now raise its completion event. Thread-safe. */
int ur_cq_add(struct ur_cq *cq, const struct ur_cqe *e, bool *fire);

/* ---- work requests ------------------------------------------------------ */
enum ur_wr_opcode { /* == enum ibv_wr_opcode */
	UR_WR_RDMA_WRITE, UR_WR_RDMA_WRITE_WITH_IMM, UR_WR_SEND,
	UR_WR_SEND_WITH_IMM, UR_WR_RDMA_READ, UR_WR_ATOMIC_CMP_AND_SWP,
	UR_WR_ATOMIC_FETCH_AND_ADD, UR_WR_LOCAL_INV, UR_WR_BIND_MW,
	UR_WR_SEND_WITH_INV, UR_WR_TSO, UR_WR_DRIVER1, UR_WR_FLUSH = 14,
	UR_WR_ATOMIC_WRITE = 15,
};
enum ur_send_flags { /* == enum ibv_send_flags */
	UR_SEND_FENCE = 1, UR_SEND_SIGNALED = 2, UR_SEND_SOLICITED = 4,
	UR_SEND_INLINE = 8,
};

struct ur_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* Where a UD send goes (from an address handle). */
struct ur_ah {
	struct ur_ipudp path;  /* dst, src, tos/ttl; sport filled per QP */
	uint32_t dqpn;     /* from the WR */
	uint32_t qkey;     /* from the WR */
};

/*
 * A send WR as the host hands it over. With UR_SEND_INLINE the SGE
 * addresses are host pointers whose bytes the transport copies into the
 * queue slot at post time, so the caller's buffer is free when post returns.
 * The host sets UR_SEND_SIGNALED itself for sq_sig_all QPs.
 */
struct ur_send_wr {
	uint64_t wr_id;
	uint32_t opcode;    /* enum ur_wr_opcode */
	uint32_t flags;     /* enum ur_send_flags */
	uint32_t imm_data;  /* network order; or rkey for SEND_WITH_INV */
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add, swap; /* atomics (ATOMIC_WRITE data comes via sg_list) */
	/* BIND_MW: bind the window named by rkey (any key byte) with the new
	 * key new_rkey to [addr, addr+length) of the region bind_lkey names
	 * (length 0: unbind). LOCAL_INV: imm_data is the key to invalidate. */
	struct {
		uint32_t new_rkey, lkey, access;
		uint64_t addr, length;
	} bind;
	const struct ur_sge *sg_list;
	uint32_t num_sge;
	const struct ur_ah *ah; /* UD */
	uint32_t remote_qpn, remote_qkey; /* UD */
	uint32_t xrc_srqn;  /* XRC INI: the remote XRC SRQ (the XRCETH) */
};

struct ur_recv_wr {
	uint64_t wr_id;
	const struct ur_sge *sg_list;
	uint32_t num_sge;
};

/* ---- shared receive queues (IBTA 10.2.9, 11.2.3) ------------------------ */
enum ur_srq_attr_mask { UR_SRQ_MAX_WR = 1, UR_SRQ_LIMIT = 2 }; /* == ibv */

/*
 * A receive queue shared by QPs (ur_qp_create_ex). A QP takes the head WQE
 * when a SEND (or WRITE_WITH_IMM) needs one, so the QPs may be driven from
 * different threads: the ring has its own spinlock, like the CQ. Posting
 * never blocks on a QP. When a take leaves fewer than @limit WQEs (limit
 * armed, != 0), the transport disarms it and reports
 * UR_EVENT_SRQ_LIMIT_REACHED once through ops->qp_event with the QP that
 * took the WQE (its ->srq is the SRQ).
 */
struct ur_srq {
	atomic_flag lock;
	uint32_t max_wr, max_sge; /* ring slots, SGEs per WQE */
	uint32_t limit;          /* armed limit, 0 = not armed */
	uint32_t head, tail;     /* free-running; count = tail - head */
	uint32_t pdn;
	/* XRC SRQ (IBTA XRC annex): its XRC domain (0: an ordinary SRQ), its
	 * number (the XRCETH names it) and the CQ its receives complete
	 * on; the host sets them after ur_srq_init. */
	uint32_t xrcd;
	uint32_t srqn;
	struct ur_cq *cq;
	struct ur_srq_priv *priv; /* the ring (private) */
	void *owner;             /* host object */
	const struct ur_alloc *alloc; /* the ring's allocator, NULL: calloc */
};
int ur_srq_init(struct ur_srq *srq, uint32_t pdn, uint32_t max_wr,
		uint32_t max_sge, uint32_t limit);
/* The same with the ring (and those of later resizes) from @alloc. */
int ur_srq_init_alloc(struct ur_srq *srq, uint32_t pdn, uint32_t max_wr,
		      uint32_t max_sge, uint32_t limit,
		      const struct ur_alloc *alloc);
void ur_srq_fini(struct ur_srq *srq);
/* -EINVAL bad WR (too many SGEs), -ENOMEM full. Thread-safe. */
int ur_srq_post_recv(struct ur_srq *srq, const struct ur_recv_wr *wr);
/* UR_SRQ_MAX_WR grows the ring (never below the WQEs queued: -EINVAL);
 * UR_SRQ_LIMIT arms (or, with 0, disarms) the limit; a limit above
 * max_wr is -EINVAL. Thread-safe. */
int ur_srq_modify(struct ur_srq *srq, uint32_t max_wr, uint32_t limit,
		  uint32_t mask);
/* WQEs currently queued. */
uint32_t ur_srq_count(struct ur_srq *srq);

/* ---- queue pairs ------------------------------------------------------- */
enum ur_qp_type { UR_QPT_RC = 2, UR_QPT_UC = 3, UR_QPT_UD = 4 }; /* == ibv */
/*
 * XRC (IBTA XRC annex) is RC with the receive side split off: an initiator
 * (INI) QP is an RC requester whose requests name the remote XRC SRQ
 * (XRCETH, ur_send_wr.xrc_srqn), a target (TGT) QP an RC responder with
 * no queue of its own that takes each request's receive WQE, PD (for the
 * remote key) and CQ from the XRC SRQ its XRCETH names, which must belong
 * to the TGT's XRC domain. Both are UR_QPT_RC QPs with qp->xrc set; their
 * packets use the XRC opcodes (0xA0 | RC).
 */
enum ur_xrc_role { UR_XRC_NONE, UR_XRC_INI, UR_XRC_TGT };
enum ur_qp_state { /* == enum ibv_qp_state */
	UR_QPS_RESET, UR_QPS_INIT, UR_QPS_RTR, UR_QPS_RTS, UR_QPS_SQD,
	UR_QPS_SQE, UR_QPS_ERR,
};
enum ur_async_event { /* == enum ibv_event_type where one exists */
	UR_EVENT_CQ_ERR = 0, UR_EVENT_QP_FATAL = 1, UR_EVENT_QP_REQ_ERR = 2,
	UR_EVENT_QP_ACCESS_ERR = 3, UR_EVENT_COMM_EST = 4,
	UR_EVENT_SQ_DRAINED = 5, UR_EVENT_QP_LAST_WQE_REACHED = 16,
	UR_EVENT_SRQ_LIMIT_REACHED = 15,
};

/* Capabilities requested at create time; queues are sized by these. */
struct ur_qp_caps {
	uint32_t max_send_wr, max_recv_wr;
	uint32_t max_send_sge, max_recv_sge;
	uint32_t max_inline_data;
	const struct ur_alloc *alloc; /* the rings' allocator, NULL: calloc */
};

/* Everything modify_qp can set; which fields apply is given by a mask. */
enum ur_qp_attr_mask { /* == enum ibv_qp_attr_mask */
	UR_QP_STATE = 1 << 0, UR_QP_CUR_STATE = 1 << 1,
	UR_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2, UR_QP_ACCESS_FLAGS = 1 << 3,
	UR_QP_PKEY_INDEX = 1 << 4, UR_QP_PORT = 1 << 5, UR_QP_QKEY = 1 << 6,
	UR_QP_AV = 1 << 7, UR_QP_PATH_MTU = 1 << 8, UR_QP_TIMEOUT = 1 << 9,
	UR_QP_RETRY_CNT = 1 << 10, UR_QP_RNR_RETRY = 1 << 11,
	UR_QP_RQ_PSN = 1 << 12, UR_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	UR_QP_ALT_PATH = 1 << 14, UR_QP_MIN_RNR_TIMER = 1 << 15,
	UR_QP_SQ_PSN = 1 << 16, UR_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
	UR_QP_PATH_MIG_STATE = 1 << 18, UR_QP_CAP = 1 << 19,
	UR_QP_DEST_QPN = 1 << 20, UR_QP_RATE_LIMIT = 1 << 25,
};

struct ur_qp_attr {
	uint32_t qp_state, cur_qp_state;
	uint32_t qp_access_flags;
	uint16_t pkey_index;
	uint8_t port_num;
	uint32_t qkey;
	struct ur_ipudp path; /* AV: dst/src address, tos (traffic class), ttl */
	uint32_t path_mtu;    /* bytes: 256..4096 */
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint32_t rq_psn, sq_psn, dest_qp_num;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	uint8_t sq_draining;
	uint32_t rate_limit;  /* kbps, 0 = unlimited */
	uint8_t sl;           /* AV service level: the priority under trust PCP */
};

/* Per-QP counters (the host publishes them, e.g. uroce-stat). */
#define UR_QP_COUNTERS(X)                                                    \
	X(tx_packets) X(tx_bytes) X(rx_packets) X(rx_bytes)                  \
	X(tx_retransmit) X(rx_nak_seq) X(rx_nak_rnr) X(rx_nak_other)         \
	X(rx_duplicate) X(rx_out_of_seq) X(tx_cnp) X(rx_cnp) X(rx_ecn_ce)    \
	X(cc_cuts) X(tx_paced) X(rx_sr_held) X(tx_sr_nak) X(tx_sr_resend)   \
	X(tx_sr_probe) X(tx_reask)

struct ur_qp_counters {
#define UR_X(n) uint64_t n;
	UR_QP_COUNTERS(UR_X)
#undef UR_X
};

/*
 * The transport's QP. The host embeds it in its own QP object. Internals
 * are private to src/transport (see ur_qp_priv.h); the host reads only the
 * fields below the "public" comment.
 */
struct ur_qp {
	/* public, read-only for the host */
	uint32_t qpn;
	uint32_t type;      /* enum ur_qp_type */
	uint32_t state;     /* enum ur_qp_state */
	uint32_t pdn;
	struct ur_qp_caps caps;
	struct ur_cq *send_cq, *recv_cq;
	struct ur_srq *srq; /* receives come from here (ur_qp_create_ex); on
			     * an XRC TGT, the SRQ of the latest request */
	uint8_t xrc;        /* enum ur_xrc_role */
	uint32_t xrcd;      /* XRC TGT: its XRC domain */
	struct ur_dev *dev;
	void *owner;        /* host object */
	void *io_priv;      /* the I/O host's per-QP state (lock, timer) */
	uint16_t sport;     /* UDP source port put in pktbuf.path.sport of every
			     * packet; ur_qp_create sets ur_rocev2_sport(qpn),
			     * the host may override (ECMP entropy) */
	uint64_t deadline;  /* next timer, UINT64_MAX = none */
	struct ur_qp_counters cnt; /* written under the QP's lock */
	/* The protocol that drives the QP (struct ur_proto_ops): RoCEv2
	 * from ur_qp_create on; ur_iw_conn_new (ur_iw.h) makes it iWARP,
	 * its connection in @proto_conn (NULL: RoCEv2). */
	const struct ur_proto_ops *proto;
	void *proto_conn;
	/* private: everything else */
	struct ur_qp_priv *priv;
};

/*
 * What differs between the protocols a QP can speak (docs/architecture.md
 * "Protocols"): the framing (datagrams with a BTH, or a byte stream of
 * MPA FPDUs), the reliability (our PSNs, ACKs and retransmission, or the
 * stream's: TCP), the connection (CM MADs on QP1, or MPA in the stream)
 * and what the device reports for them. What is shared (WQE and SGE
 * structures, CQs and CQEs, the key table and its checks, windows) is
 * not in here. The verbs entry points (ur_qp_post_send, ur_qp_post_recv,
 * ur_qp_modify) go through a QP's table when it is not RoCEv2.
 */
enum ur_framing { UR_FRAMING_DATAGRAM, UR_FRAMING_STREAM };
enum ur_reliability { UR_REL_PSN, UR_REL_LLP };
enum ur_connection { UR_CONN_CM_MAD, UR_CONN_MPA };
struct ur_proto_ops {
	const char *name;        /* "rocev2", "iwarp" */
	uint8_t transport;       /* == enum ibv_transport_type */
	uint8_t node_type;       /* == enum ibv_node_type */
	uint8_t framing;         /* enum ur_framing */
	uint8_t reliability;     /* enum ur_reliability */
	uint8_t connection;      /* enum ur_connection */
	int (*post_send)(struct ur_qp *qp, const struct ur_send_wr *wr,
			 uint64_t now);
	int (*post_recv)(struct ur_qp *qp, const struct ur_recv_wr *wr);
	int (*modify)(struct ur_qp *qp, const struct ur_qp_attr *attr,
		      uint32_t mask, uint64_t now);
	/* Stream protocols: bytes in, bytes out (the host's socket). */
	int (*stream_rx)(struct ur_qp *qp, const uint8_t *p, size_t n,
			 uint64_t now);
	size_t (*stream_tx_peek)(struct ur_qp *qp, const uint8_t **p);
	void (*stream_tx_done)(struct ur_qp *qp, size_t n, uint64_t now);
};
extern const struct ur_proto_ops ur_proto_rocev2, ur_proto_iwarp;

/* ---- the device: what a host plugs in ---------------------------------- */
/* A packet buffer lent by the host: room for the IB part (BTH..ICRC). */
struct ur_pktbuf {
	uint8_t *data;
	uint32_t len;        /* bytes written, including the 4-byte ICRC slot */
	uint32_t cap;
	struct ur_ipudp path; /* filled by the transport: dst/src/sport/tos */
	void *host_priv;
	/* Zero copy, only for a host that sets ur_dev.tx_ext: the payload is
	 * not in @data but at @ext (registered memory) and @data holds the
	 * headers, then pad and ICRC slot; the BTH (opcode, pad count) and
	 * @len give the lengths. The host reads @ext before the QP lock is
	 * released (memory cannot be deregistered meanwhile). NULL: none. */
	const uint8_t *ext;
	/* The sending QP's io_priv (NULL for packets of no QP): lets the
	 * host find its per-QP state without a table lookup. */
	void *qp_io;
};

struct ur_dev_ops {
	/* A buffer with cap >= len, or NULL when the host is out (back-pressure:
	 * the transport stops and retries on the next progress call). */
	struct ur_pktbuf *(*pkt_alloc)(void *host, uint32_t len);
	/* Hand a filled packet to the host for transmission (takes ownership).
	 * The host computes the ICRC (it knows the IP header). */
	void (*pkt_send)(void *host, struct ur_pktbuf *pkt);
	/* A CQE was added to a CQ that was armed (ibv_req_notify_cq). */
	void (*cq_event)(void *host, struct ur_cq *cq);
	/* Async event on a QP (fatal error, last WQE reached, ...). */
	void (*qp_event)(void *host, struct ur_qp *qp, enum ur_async_event ev);
	/* Key lookup; NULL if absent. Called under the host's table lock. */
	const struct ur_mr *(*mr_lookup)(void *host, uint32_t key);
	/* Host's QP lookup by QPN for incoming packets. */
	struct ur_qp *(*qp_lookup)(void *host, uint32_t qpn);
	/* XRC SRQ lookup by number for an XRC TGT QP's requests (NULL
	 * op, or NULL: no such SRQ). Called with the QP's lock held. */
	struct ur_srq *(*srq_lookup)(void *host, uint32_t srqn);
	/* Spraying (optional; NULL: every path works): may packets leave
	 * from UDP source port @sport? A bonded port's host says no while
	 * that port's interface is down or refuses our sends. Asked at
	 * most every 250 us per spraying QP, under the QP's lock. */
	bool (*path_ok)(void *host, uint16_t sport, uint64_t now);
	/* Optional (NULL: not known): @sport's interface hears nothing
	 * while the others hear. A fact, not a verdict: the peer's runs
	 * and stalls make it true of working rails (ur_mp.c weighs it). */
	bool (*path_quiet)(void *host, uint16_t sport, uint64_t now);
	/* Receiving (optional; NULL: not known): does interface @rx_if
	 * (ur_rxinfo.rx_if) still receive? A bonded port's host says no
	 * while it is down, has gone silent, or refuses our sends by it.
	 * Asked under the QP's lock, while a gap waits (ur_sr.c). */
	bool (*rx_if_ok)(void *host, unsigned int rx_if, uint64_t now);
};

/* Receive-side metadata the host knows about an incoming datagram. */
struct ur_rxinfo {
	/* src/dst address, ports, tos (ECN). path.src must be the address
	 * the datagram came from (the original sender's, also when a sibling
	 * process forwarded it): an RC or UC QP takes packets only from the
	 * address of its AV (ur_qp_rx, counter rx_drop_offpath). */
	struct ur_ipudp path;
	bool icrc_checked;     /* host verified the ICRC (raw socket / sim) */
	/* More packets of this receive batch follow, and the host calls
	 * ur_qp_ack_flush() on the QP once the batch is delivered: the ACK a
	 * request asks for may wait for it, and a later one supersedes it
	 * (ACKs are cumulative, 9.7.5.1.2), so one ACK is made per batch. */
	bool ack_later;
	/* When the host's kernel received the datagram, on the clock of
	 * `now` (0: not known). An ACK's RTT ends here, not when the engine
	 * got to it: a host's own scheduling is not the path's delay
	 * (Swift's NIC timestamps, section 3.1; ur_cc.c ur__cc_delay). */
	uint64_t rx_ns;
	/* The host's interface the datagram came in by, plus one (0: not
	 * known): a bonded port's, for ur_dev_ops.rx_if_ok. */
	uint8_t rx_if;
};

#define UR_COUNTERS(X)                                                       \
	X(rx_packets) X(rx_bytes) X(tx_packets) X(tx_bytes)                  \
	X(rx_drop_malformed) X(rx_drop_icrc) X(rx_drop_no_qp)                \
	X(rx_drop_bad_state) X(rx_drop_qkey) X(rx_drop_pkey)                 \
	X(rx_drop_psn) X(rx_duplicate) X(rx_out_of_seq)                      \
	X(tx_retransmit) X(tx_timeouts) X(rx_nak_seq) X(rx_nak_rnr)          \
	X(rx_nak_other) X(tx_nak_seq) X(tx_nak_rnr) X(tx_nak_other)          \
	X(rx_unverified_icrc) X(rx_cnp) X(rx_drop_opcode)                    \
	X(rx_drop_no_recv) X(cq_overflow)                                    \
	X(tx_cnp) X(rx_ecn_ce) X(cc_cuts) X(tx_paced)                        \
	X(tx_drop_io) X(rx_sr_held) X(rx_sr_drop) X(tx_sr_nak)               \
	X(rx_sr_nak) X(tx_sr_resend) X(tx_ack_coalesced) X(tx_held)          \
	X(rx_ack_deferred) X(tx_connected) X(rx_placed) X(poll_late)       \
	X(poll_handover) X(tx_shm) X(rx_shm) X(tx_drop_shm)                  \
	X(rx_drop_offpath) X(rx_drop_dup_rd) X(rx_drop_fwd_full)             \
	X(tx_sealed) X(rx_opened) X(rx_drop_auth) X(rx_drop_replay)          \
	X(tx_crypt_hello) X(rx_crypt_hello) X(crypt_neg_timeout)             \
	X(rx_sr_spurious) X(tx_sr_renak) X(tx_sr_probe) X(tx_reask)          \
	X(tx_sr_late) X(rx_sr_late)                                          \
	X(tx_sr_hello) X(rx_sr_hello) X(sr_neg_timeout)                      \
	X(tx_prio0_pkts) X(tx_prio1_pkts) X(tx_prio2_pkts) X(tx_prio3_pkts)   \
	X(tx_prio4_pkts) X(tx_prio5_pkts) X(tx_prio6_pkts) X(tx_prio7_pkts)   \
	X(tx_prio0_bytes) X(tx_prio1_bytes) X(tx_prio2_bytes)                \
	X(tx_prio3_bytes) X(tx_prio4_bytes) X(tx_prio5_bytes)                \
	X(tx_prio6_bytes) X(tx_prio7_bytes)                                  \
	X(tx_prio0_held) X(tx_prio1_held) X(tx_prio2_held) X(tx_prio3_held)  \
	X(tx_prio4_held) X(tx_prio5_held) X(tx_prio6_held) X(tx_prio7_held)  \
	X(tx_cc_hello) X(rx_cc_hello) X(cc_neg_timeout) X(cc_auto_switched) \
	X(eng_timer_walks) X(cc_switch_probe) X(rx_sr_heard)                 \
	X(eng_wakes) X(eng_kicks) X(pin_peers)                               \
	X(tx_sr_hole) X(rx_sr_hole) X(cc_auto_swift)                         \
	X(rx_icrc_id_solved) X(mp_path_out) X(mp_path_back)

/* tx_prio<N>_pkts, _bytes: packets sent of priority N as the device maps
 * the AV (ur_tc_prio: by default DSCP>>3, the IP TOS byte's top 3 bits,
 * the GRH traffic class; docs/wire.md "Traffic classes"); _held: times
 * the transmit scheduler told a QP of priority N to wait
 * (docs/ports-classes.md). Each group is 8 counters in priority order. */
struct ur_counters {
#define UR_X(n) uint64_t n;
	UR_COUNTERS(UR_X)
#undef UR_X
};

/*
 * Selective repeat, a uroce extension negotiated per QP (docs/transport.md
 * "Selective repeat", docs/wire.md "Extensions"). Off unless enabled; with
 * it a QP marks its requests with UR_BTH_EXT_SR, and its responder holds
 * requests that arrive ahead of the expected PSN from a requester that
 * marks them, executing them in PSN order once the gap fills, and asks for
 * a missing PSN alone (a NAK carrying the bit). A peer that does not mark
 * (any standard RoCEv2 device) sees plain go-back-N.
 */
struct ur_sr_params {
	uint32_t enable;     /* 0: off (standard RoCEv2), 1: on, offered on
			      * every request; UR_SR_AUTO: on once the peer
			      * showed it is a uroce QP with it (its hello,
			      * ur_sr_neg.c, or its marked packets); until
			      * then, and towards a standard peer, nothing
			      * on the wire differs from plain RoCEv2 */
	uint32_t window;     /* request PSNs ahead of the expected one that
			      * the responder holds (1..65536; 0 = 256) */
	uint32_t reorder_ns; /* a gap with later requests held is NAKed once
			      * it is this old (0: at once) */
	uint32_t pool_pkts;  /* device level: packets held over all QPs
			      * (0 = 8192); read when the pool is created */
	uint32_t peer_known; /* 1: the peer is known to hold out-of-order
			      * requests (agreed out of band, as the
			      * simulator's hosts are): spraying need not
			      * wait for its first answer */
	uint32_t pace;       /* 1: a one-path requester paces at its
			      * delivery rate once the peer reports a loss
			      * (ur_bw.h; UROCE_SR_PACE), 0: never (the
			      * default) */
};
#define UR_SR_AUTO 2
/* enable 1, window 256, reorder 20 us, pool 8192. */
void ur_sr_params_default(struct ur_sr_params *p);
struct ur_sr_pool;

struct ur_dev {
	const struct ur_dev_ops *ops;
	void *host;
	bool tx_ext;          /* the host sends payloads from pktbuf.ext */
	/* Bumped whenever a key stops covering memory it covered (a region
	 * deregistered or re-registered, a window unbound or invalidated):
	 * host pointers resolved earlier are checked again before use. */
	_Atomic uint64_t key_gen;
	struct ur_counters cnt;
	uint32_t max_mtu;     /* active MTU, bytes */
	/* Congestion control defaults for new QPs (ur_cc.h; all zero: the
	 * defaults, DCQCN on) and the device-wide rate limit (bits/s, 0 =
	 * none; burst bytes, 0 = default), a token bucket shared by all QPs. */
	struct ur_cc_params cc;
	uint64_t rate_bps, rate_burst;
	_Atomic uint64_t rate_t;
	/* Traffic classes (ur_tcs.h): the priority map, and with classes
	 * configured (tcs.on) the scheduler that shares rate_bps between
	 * them in place of rate_t. Set by the host with ur_dev_set_tcs. */
	struct ur_tcs tcs;
	/* Selective repeat defaults for new QPs (all zero: off), and the
	 * buffer of held requests shared by the device's QPs, created on
	 * first use; ur_dev_fini frees it. */
	struct ur_sr_params sr;
	struct ur_sr_pool *_Atomic sr_pool;
	/* ...and the one for jumbo packets, whose slots take the largest
	 * jumbo size our link carries: created at the first jumbo packet
	 * held, so a device that never holds one pays nothing. */
	struct ur_sr_pool *_Atomic sr_pool_jumbo;
	/* Jumbo packets (ur_qp_set_jumbo): the largest payload the link
	 * carries in one datagram beyond 4096, 8192 or 16384 (0: none; set by
	 * the host), and what new RC QPs do with them: 0 off, 1 offer them
	 * to every peer, UR_JUMBO_AUTO (the default, UROCE_JUMBO) offer them
	 * once the peer is known to be uroce. */
	uint32_t jumbo_max;
	uint8_t jumbo_default;
	/* Encryption of new RC/UC QPs (ur_qp_set_crypt; set by the host
	 * from UROCE_CRYPT*): the algorithm (0: none) and the key. */
	uint8_t crypt_alg;
	uint8_t crypt_key[32];
	/* The policy (enum ur_crypt_policy; with crypt_alg set) and how the
	 * host sends a negotiation MAD to QP1 of @dst (the QP's AV). NULL:
	 * no negotiation; then require seals from the start with keys of
	 * the sender's session id alone, and allow stays plain. */
	uint8_t crypt_policy;
	void (*crypt_hello_send)(struct ur_dev *dev, struct ur_qp *qp,
				 const struct ur_ipudp *dst,
				 const uint8_t *mad);
	/* How the host sends a selective-repeat hello (ur_sr_neg.c) to QP1
	 * of @dst; NULL: QPs with enable = UR_SR_AUTO learn the peer only
	 * from its marked packets. */
	void (*sr_hello_send)(struct ur_dev *dev, struct ur_qp *qp,
			      const struct ur_ipudp *dst, const uint8_t *mad);
	/* UROCE_CC=auto (ur_cc_neg.c): new RC QPs start with cc (DCQCN)
	 * and switch to cc_auto_algo once the peer's hello shows a uroce
	 * QP in auto mode; the host sends the hello to QP1 of @dst with
	 * cc_hello_send (NULL: no negotiation, cc stays). */
	bool cc_auto;
	uint32_t cc_auto_algo;
	void (*cc_hello_send)(struct ur_dev *dev, struct ur_qp *qp,
			      const struct ur_ipudp *dst, const uint8_t *mad);
	/* The send window of new RC QPs in request PSNs (0: 256). The host
	 * raises it where the path has room, e.g. on loopback. */
	uint32_t tx_window;
	/* Spraying (ur_qp_set_paths): the source ports new RC QPs with
	 * selective repeat spread their requests over (1: none; the host
	 * opens them). */
	uint8_t paths;
	/* UR_MP_RUNS: new requests per turn of the spray (UROCE_SPRAY_RUN;
	 * 0: UR_MP_RUN). */
	uint8_t spray_run;
	/* Optional: called with an algorithm's features after each RTT
	 * sample (ur_cc_ops.features; the predictor's training data, which
	 * the simulator writes with `cc_trace FILE`). NULL: none. */
	void (*cc_trace)(struct ur_dev *dev, const struct ur_qp *qp,
			 const double *f, unsigned int n, uint64_t now);
};

/* Free what the transport allocated for the device (the selective-repeat
 * pool), after its last QP was destroyed. */
void ur_dev_fini(struct ur_dev *dev);
/* Traffic classes (docs/ports-classes.md): the priority map and the
 * scheduler's configuration, after rate_bps and rate_burst are set. */
void ur_dev_set_tcs(struct ur_dev *dev, const struct ur_tcs_cfg *cfg);

/*
 * Receive, step 1 (device level, no QP lock): decode one UDP payload (the IB
 * part BTH..ICRC), drop and count malformed or foreign packets, and find the
 * destination QP with ops->qp_lookup. Returns 0 with *qp set, or -errno (the
 * reason it was dropped; already counted in dev->cnt).
 */
int ur_dev_rx_classify(struct ur_dev *dev, const uint8_t *buf, size_t len,
		       const struct ur_rxinfo *ri, struct ur_pkt *pkt,
		       struct ur_qp **qp);
/*
 * Multicast (IBTA 10.5): a UD send to QPN 0xFFFFFF goes to every QP the
 * host attached to the group its destination address names. The host
 * checks the datagram with ur_dev_rx_mcast_classify (decode, P_Key, a UD
 * opcode to UR_MCAST_QPN; 0 or -errno, counted like ur_dev_rx_classify)
 * and hands @pkt to ur_qp_rx of each attached QP (the Q_Key is checked
 * there, per QP).
 */
#define UR_MCAST_QPN 0xffffffu
int ur_dev_rx_mcast_classify(struct ur_dev *dev, const uint8_t *buf,
			     size_t len, const struct ur_rxinfo *ri,
			     struct ur_pkt *pkt);
/* Receive, step 2 (host holds the QP's lock): run the packet through the
 * QP's responder/completer. An RC or UC QP drops (rx_drop_offpath) what
 * does not come from its peer's address (@ri->path.src against the AV's
 * dst; no @ri: dropped too). The UDP source port is not checked: senders
 * vary it for ECMP entropy (docs/security.md). */
void ur_qp_rx(struct ur_qp *qp, const struct ur_pkt *pkt,
	      const struct ur_rxinfo *ri, uint64_t now);
/*
 * Between the steps (QP lock held, ICRC not yet checked): where the payload
 * of the raw packet @buf would be written if it is the next in-sequence RC
 * RDMA WRITE MIDDLE packet of the WRITE in progress and not its last bytes;
 * else NULL. The host may then copy the payload there while it checks the
 * ICRC (one pass over the bytes instead of two) and deliver the packet with
 * pkt->payload pointing there: the responder sees its data in place and
 * does not copy it. A packet that then fails its check leaves bytes only
 * where this WRITE has yet to write: the responder writes in PSN order,
 * so the retransmission overwrites them before the last byte lands.
 */
uint8_t *ur_qp_rx_place(const struct ur_qp *qp, const uint8_t *buf,
			size_t len, const struct ur_rxinfo *ri);
/* Whether the QP holds an ACK that a packet delivered with ri->ack_later
 * asked for; ur_qp_ack_flush() sends it (QP lock held). Anything else the
 * QP sends first sends it, so packets keep the order they would have had. */
bool ur_qp_ack_owed(const struct ur_qp *qp);
void ur_qp_ack_flush(struct ur_qp *qp);
/* Both steps, for single-threaded hosts (tests, simulator). */
int ur_dev_rx(struct ur_dev *dev, const uint8_t *buf, size_t len,
	      const struct ur_rxinfo *ri, uint64_t now);

/* QP lifecycle (host allocates the struct ur_qp; the transport its queues). */
int ur_qp_create(struct ur_dev *dev, struct ur_qp *qp, uint32_t type,
		 uint32_t qpn, uint32_t pdn, const struct ur_qp_caps *caps,
		 struct ur_cq *send_cq, struct ur_cq *recv_cq);
/* The same with a shared receive queue (NULL: none). With an SRQ the QP
 * has no receive queue of its own: caps->max_recv_wr is ignored,
 * ur_qp_post_recv() fails with -EINVAL, and entering ERR reports
 * UR_EVENT_QP_LAST_WQE_REACHED (11.6.2: no further WQE will be taken). */
int ur_qp_create_ex(struct ur_dev *dev, struct ur_qp *qp, uint32_t type,
		    uint32_t qpn, uint32_t pdn, const struct ur_qp_caps *caps,
		    struct ur_cq *send_cq, struct ur_cq *recv_cq,
		    struct ur_srq *srq);
/*
 * XRC QPs (see enum ur_xrc_role). INI: a send queue by @caps, completions
 * on @send_cq, no receive queue. TGT: no send queue, no CQ; @xrcd its XRC
 * domain, @caps->max_recv_sge the most SGEs an XRC SRQ of the device
 * holds. Otherwise as ur_qp_create (type RC).
 */
int ur_qp_create_xrc(struct ur_dev *dev, struct ur_qp *qp,
		     enum ur_xrc_role role, uint32_t qpn, uint32_t pdn,
		     const struct ur_qp_caps *caps, struct ur_cq *send_cq,
		     uint32_t xrcd);
void ur_qp_destroy(struct ur_qp *qp);
/* IBTA 10.3 / 11.2.4.2: validates the transition and the attribute mask
 * for it; -EINVAL on a wrong mask or state. Moving to ERR flushes. */
int ur_qp_modify(struct ur_qp *qp, const struct ur_qp_attr *attr,
		 uint32_t mask, uint64_t now);
void ur_qp_query(const struct ur_qp *qp, struct ur_qp_attr *attr);

/* Post: validate and enqueue (-EINVAL bad WR, -ENOMEM queue full,
 * -EINVAL wrong state), then try to transmit. */
int ur_qp_post_send(struct ur_qp *qp, const struct ur_send_wr *wr,
		    uint64_t now);
int ur_qp_post_recv(struct ur_qp *qp, const struct ur_recv_wr *wr);
/* Transmit what the window and the host's buffers allow. */
void ur_qp_progress(struct ur_qp *qp, uint64_t now);
/* Request PSNs sent and not yet acknowledged (RC; 0 for other types). */
uint32_t ur_qp_unacked(const struct ur_qp *qp);
/* The first request PSN never sent (RC; 0 for other types), and how many
 * PSNs below such a mark are still unacknowledged now: those in flight
 * before a post, counted after ACKs that arrived during the post. */
uint32_t ur_qp_psn_next(const struct ur_qp *qp);
uint32_t ur_qp_unacked_below(const struct ur_qp *qp, uint32_t psn_next);
/* Run expired timers (retransmit, RNR wait, ACK coalescing). Updates
 * qp->deadline. */
void ur_qp_timer(struct ur_qp *qp, uint64_t now);

/* RoCEv2 UDP source port of a QP, as Linux rxe derives it: 0xC000 plus a
 * 14-bit multiplicative hash of the QPN. */
static inline uint16_t ur_rocev2_sport(uint32_t qpn)
{
	return (uint16_t)(0xc000 | ((qpn * 0x61C88647u) >> (32 - 14)));
}

/* Send window of an RC QP in packets (PSNs), default 256; -EINVAL if 0
 * or >= 2^23. */
int ur_qp_set_tx_window(struct ur_qp *qp, uint32_t pkts);

/*
 * Congestion control and shaping (ur_cc.c, docs/cc.md). A QP starts with
 * its device's dev->cc; ur_qp_set_cc replaces them (-ERANGE/-EINVAL, see
 * ur_cc_params_check). ur_qp_set_rate_limit: kbps (0 = none) and burst
 * bytes (0 = default); UR_QP_RATE_LIMIT in ur_qp_modify does the same.
 * ur_qp_cc_rate: the algorithm's current rate in bits/s, 0 = not limited;
 * ur_qp_cc_window: the packets a window-based algorithm (Swift, predict)
 * lets be in flight, 0 = no window; ur_qp_cc_srtt: the smoothed RTT in ns
 * that dcqcn-rtt scales its timers by, 0 = none yet or another algorithm.
 */
int ur_qp_set_cc(struct ur_qp *qp, const struct ur_cc_params *p, uint64_t now);
void ur_qp_get_cc(const struct ur_qp *qp, struct ur_cc_params *p);
int ur_qp_set_rate_limit(struct ur_qp *qp, uint32_t kbps, uint32_t burst);
uint64_t ur_qp_cc_rate(const struct ur_qp *qp);
uint32_t ur_qp_cc_window(const struct ur_qp *qp);
uint64_t ur_qp_cc_srtt(const struct ur_qp *qp);

/*
 * Selective repeat of a QP (RC only; -EINVAL otherwise or on a bad value).
 * A QP starts with its device's dev->sr. Enable it on both ends of a
 * connection before traffic flows; turning it off again is allowed at any
 * time (held requests stay until executed or the QP resets).
 * ur_qp_sr_state: bit 0 = enabled, bit 1 = the peer's answers carried the
 * extension bit (it holds our requests), bit 2 = the peer's requests did,
 * bit 3 = negotiated (UR_SR_AUTO: the peer's hello or answer arrived).
 */
int ur_qp_set_sr(struct ur_qp *qp, const struct ur_sr_params *p);
/*
 * The selective-repeat hello (ur_sr_neg.c, docs/wire.md "Selective repeat
 * negotiation"): a QP with enable = UR_SR_AUTO sends it to the peer's QP1
 * when it goes INIT->RTR and resends it until the peer answers or
 * UR_SR_NEG_NS passes; a standard peer ignores a vendor-class MAD. The
 * host hands a MAD of class UR_MGMT_CLASS_UROCE whose attribute is
 * UR_SR_HELLO_ATTR (ur_sr_hello_parse says so) to ur_qp_sr_hello_rx of
 * the QP it names (0, or -errno: not for this QP, counted).
 */
#define UR_SR_HELLO_ATTR 0xFF02
#define UR_SR_HELLO_LEN 256
#define UR_SR_NEG_NS 300000000ull
struct ur_sr_hello {
	bool answer;
	uint32_t src_qpn, dst_qpn;
};
int ur_sr_hello_parse(const uint8_t *mad, size_t len, struct ur_sr_hello *h);
int ur_qp_sr_hello_rx(struct ur_qp *qp, const uint8_t *mad, size_t len,
		      const struct ur_rxinfo *ri, uint64_t now);
void ur_qp_get_sr(const struct ur_qp *qp, struct ur_sr_params *p);
/*
 * The congestion-control hello (ur_cc_neg.c, docs/wire.md "Congestion
 * control negotiation"): an RC QP of a device with cc_auto sends it as the
 * selective-repeat hello goes (same layout, attribute UR_CC_HELLO_ATTR,
 * magic "UrCc"); the host hands such a MAD to ur_qp_cc_hello_rx of the QP
 * it names (0, or -errno: not for this QP, counted).
 */
#define UR_CC_HELLO_ATTR 0xFF03
#define UR_CC_NEG_NS 300000000ull
int ur_cc_hello_parse(const uint8_t *mad, size_t len, struct ur_sr_hello *h);
int ur_qp_cc_hello_rx(struct ur_qp *qp, const uint8_t *mad, size_t len,
		      const struct ur_rxinfo *ri, uint64_t now);
/* 1: the QP chose its algorithm with its peer (UROCE_CC=auto and the
 * peer's hello came), 0: not (yet), or not in auto mode. */
bool ur_qp_cc_negotiated(const struct ur_qp *qp);
uint32_t ur_qp_sr_state(const struct ur_qp *qp);
/* Whether the QP's responder has seen the peer's requests come from more
 * than one UDP source port (the peer sprays, docs/wire.md "Spraying"). */
bool ur_qp_rx_sprayed(const struct ur_qp *qp);

/*
 * Jumbo packets of an RC QP (docs/wire.md "Extensions"): with it on at both
 * ends, each over a link that carries them (dev->jumbo_max), SENDs and
 * WRITEs travel in 8 or 16 KiB packets (the largest both links carry) once
 * the peer's answers said it takes them (path MTU 4096 only; READ
 * responses keep the path MTU). @on: 0 off, 1 offer them on every
 * request, UR_JUMBO_AUTO offer them only once the peer is known to be a
 * uroce QP (its selective-repeat or congestion-control hello, or its
 * marked packets), so that a standard peer sees plain RoCEv2. Selective
 * repeat holds and resends jumbo packets like any (ur_sr.c). -EINVAL for
 * a QP that is not RC (or is XRC), or @on above UR_JUMBO_AUTO.
 * ur_qp_jumbo_state: bit 0 = enabled, bit 1 = the peer's answers named a
 * size (our requests use it), bit 2 = the peer's requests did, bit 3 =
 * negotiated (UR_JUMBO_AUTO); bits 8.. = the size our SENDs and WRITEs
 * use, in KiB (0: the path MTU).
 */
#define UR_JUMBO_AUTO 2
/* The least jumbo size a link must carry for UR_JUMBO_AUTO (ur_qp.c). */
#define UR_JUMBO_AUTO_MIN 16384u
int ur_qp_set_jumbo(struct ur_qp *qp, unsigned int on);
uint32_t ur_qp_jumbo_state(const struct ur_qp *qp);

/*
 * Spraying (docs/wire.md "Spraying"): an RC QP with selective repeat sends
 * its requests over @k UDP source ports (the entropy ECMP hashes, A17.3),
 * in a weighted round robin (ur_mp.c), once the peer's answers showed
 * it holds out-of-order requests (selective repeat on both ends); before
 * that, and towards a standard peer, from its own port only. Answers keep
 * the QP's port. @sports: ports the host can send from, the QP's own first
 * (k = 1: off). @flags: UR_MP_OBLIVIOUS keeps the weights equal (plain
 * round robin, the baseline the simulator compares against); otherwise
 * losses and ECN marks move traffic between the paths. UR_MP_RUNS: each
 * turn of the round robin takes a run of up to UR_MP_RUN new requests
 * (a host that sends a run from one socket as one GSO send: per packet,
 * one veth carried 0.60 Gbit/s sprayed over 8 ports against 4.24 on
 * one, bench/results/2026-12-07-spray4.md). -EINVAL: not RC,
 * selective repeat off, k outside 1..UR_MP_MAX, unknown flags.
 */
#define UR_MP_MAX 16
#define UR_MP_OBLIVIOUS 1u
#define UR_MP_RUNS 2u
#define UR_MP_RUN 32
int ur_qp_set_paths(struct ur_qp *qp, const uint16_t *sports, unsigned int k,
		    unsigned int flags);
/* What a spraying QP sent and learnt per path (uroce-stat, the simulator). */
struct ur_mp_path_cnt {
	uint64_t packets;  /* requests sent, resends included */
	uint32_t losses;   /* NAKs and timeouts that named it */
	uint32_t ecn;      /* CNPs that named it */
	uint32_t late;     /* late notices that named it (ur_sr.c) */
	uint32_t downs;    /* times it was taken out of the spray */
	uint32_t probes;   /* requests sent on it while it was out */
};
/* Path @i's port, weight (0: out of the spray, ur_mp.c) and counters;
 * -EINVAL when @i >= ur_qp_paths().
 * A QP on its own port only has path 0: weight 1, packets = every packet
 * the QP sent. */
int ur_qp_path_info(const struct ur_qp *qp, unsigned int i, uint16_t *sport,
		    unsigned int *weight, struct ur_mp_path_cnt *cnt);
unsigned int ur_qp_paths(const struct ur_qp *qp);
/* The source port of path @i of a QP whose own port is @base: spread over
 * the 14 bits rxe's ports vary (0xC000 | hash), the simulator's too. */
static inline uint16_t ur_mp_sport(uint16_t base, unsigned int i)
{
	return (uint16_t)(0xc000 | ((base + i * 0x2f1bu) & 0x3fff));
}
/*
 * Encryption of an RC or UC QP (ur_crypt.c; docs/wire.md "Encryption"):
 * @alg an enum ur_crypt_alg (ur_crypt.h; UR_CRYPT_NONE turns it off),
 * @key the administrator's UR_CRYPT_KEY_LEN-byte key, from which each
 * direction's key is derived with the session id the sender picks, the
 * algorithm and both ends' GIDs (the AV) and QPNs. With it on, every
 * packet the QP sends is sealed and every packet it takes must verify:
 * anything else is dropped and counted (rx_drop_auth, rx_drop_replay)
 * and changes nothing. Set it on both ends before traffic flows; a reset
 * or INIT->RTR starts a new session. -EINVAL for a UD QP, an unknown
 * algorithm, or selective repeat on (they refuse each other; jumbo
 * packets are sealed like any); -EOPNOTSUPP if libgcrypt lacks the
 * algorithm.
 * ur_qp_crypt_state: bit 0 = on, bit 1 = a packet of the peer's session
 * verified, bits 8..15 = the algorithm.
 */
int ur_qp_set_crypt(struct ur_qp *qp, unsigned int alg, const uint8_t *key);
uint32_t ur_qp_crypt_state(const struct ur_qp *qp);
/*
 * Negotiation (ur_crypt_neg.c, docs/wire.md "Encryption negotiation"): a
 * QP of a device with crypt_policy and crypt_hello_send negotiates at
 * INIT->RTR. The host hands each negotiation MAD it receives on QP1
 * (ur_crypt_hello_parse says which) to ur_dev_crypt_hello_rx (single-
 * threaded hosts: finds the QP) or, with the QP's lock held, to
 * ur_qp_crypt_hello_rx. ur_qp_crypt_neg: enum ur_crypt_neg.
 */
int ur_dev_crypt_hello_rx(struct ur_dev *dev, const uint8_t *mad, size_t len,
			  const struct ur_rxinfo *ri, uint64_t now);
int ur_qp_crypt_hello_rx(struct ur_qp *qp, const uint8_t *mad, size_t len,
			 const struct ur_rxinfo *ri, uint64_t now);
uint32_t ur_qp_crypt_neg(const struct ur_qp *qp);

/* Timeout code -> nanoseconds: 4.096 us * 2^t (IBTA 11.2.4.2); 0 = infinite. */
uint64_t ur_timeout_ns(uint8_t code);

#endif

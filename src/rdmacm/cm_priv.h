/* SPDX-License-Identifier: MIT */
/*
 * uroce librdmacm: private objects. The protocol core (cm_proto.c, struct
 * cm_core) does no I/O: it is driven by cma.c, which gives it struct
 * cm_ops and the time. One global lock (cm.lock) guards every ID, channel
 * and device: connection management is not a hot path, and one lock keeps
 * the receive handler (engine thread), the timer thread and the
 * application's calls simple to reason about.
 */
#ifndef CM_PRIV_H
#define CM_PRIV_H

#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdbool.h>
#include <stdint.h>

#include "ur_cm_mad.h"

/* uroce_gsi_rx_fn answers (include/uroce/uroce.h). */
enum { UR_GSI_CONSUMED = 0, UR_GSI_BROADCAST = -1 };

#define CM_EXPORT __attribute__((visibility("default")))
#define cm_container_of(ptr, type, member)                                   \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* rdma_cm service IDs (Annex A11): 0x0000000001 | port space | port. */
#define CMA_SID_PREFIX 0x0000000001000000ull
#define CMA_UDP_QKEY 0x01234567u   /* RDMA_UDP_QKEY of librdmacm */
/* What rxe puts in its REQ/REP: CM response timeouts 20 (4.3 s), 15 CM
 * retries, packet lifetime 18 + 1 for the ACK timeout, ack delay 15. */
#define CM_RESPONSE_TIMEOUT 20
#define CM_MAX_RETRIES 15
#define CM_MAX_PORTS 8 /* as the verbs layer's UROCE_PORTS */
#define CM_PACKET_LIFETIME 18
#define CM_TARGET_ACK_DELAY 15
#define CM_ACK_TIMEOUT 19 /* ur_cm_ack_timeout(15, 18), our REQ's field */
/* RTR min_rnr_timer: 0 means 655.36 ms (9.7.5.2.8), as the Linux IB CM
 * sets it. Programs that post a receive only after their own send
 * completes rely on that much slack with the usual RNR retry of 5. */
#define CM_MIN_RNR_TIMER 0
#define CM_MRA_TIMEOUT 23          /* ~34 s: "the user has not accepted yet" */
/* A REQ whose port nobody listens on waits this long for its listener
 * before REJ "invalid service ID", looking every CM_PARK_POLL_NS; at most
 * CM_MAX_PARKED wait at once (more are rejected at once). */
#define CM_LISTEN_WAIT_MS 100
#define CM_PARK_POLL_NS 1000000ull
#define CM_MAX_PARKED 64
/* Connection requests a listener holds unanswered (REQ_RCVD: its user has
 * not accepted or rejected them yet) when rdma_listen's backlog is 0 or
 * less; beyond its backlog a REQ is dropped and counted (rx_req_dropped),
 * as a full accept queue drops a TCP SYN: a flood of REQs costs a bounded
 * number of IDs, events and per-REQ work, and the sender retries. */
#define CM_DEFAULT_BACKLOG 1024

struct cm_core;
struct cm_id;
struct cm_event;

/* A device as the CM sees it: an open context whose QP1 is ours. */
/* One port of a device (a device with several ports is several cm_devs
 * on one context: docs/ports-classes.md "Ports"). */
struct cm_dev {
	struct cm_core *core;
	struct ibv_context *verbs;
	uint8_t port_num;
	struct ibv_pd *pd;            /* default PD (rdma_create_ep, QPs) */
	int slot;                     /* the engine's slot on its address */
	int ngid;
	union ibv_gid gid[8];
	struct sockaddr_storage addr[8]; /* GID i as an IP address */
	__be64 guid;
	enum ibv_mtu mtu;
	uint32_t max_rd_atom;
	bool iwarp;                   /* IBV_TRANSPORT_IWARP: iw_cm.c */
};

struct cm_chan {
	struct rdma_event_channel ch;
	struct cm_event *head, **tail;
	int nids;
	int readers;  /* threads inside rdma_get_cm_event (cm.lock) */
	bool dead;    /* destroyed while one was: left to them (cma.c) */
};

struct cm_event {
	struct rdma_cm_event ev;
	struct cm_event *next;
	struct cm_id *owner;
	uint8_t pdata[UR_MAD_LEN];
};

/* rdma_cm ID states, with the IB CM states folded in (IBTA 12.9.6). */
#define CM_STATES(X)                                                         \
	X(IDLE) X(BOUND) X(ADDR_RESOLVED) X(ROUTE_RESOLVED) X(LISTEN)        \
	X(REQ_SENT) X(REP_RCVD) X(REQ_RCVD) X(REP_SENT) X(ESTABLISHED)       \
	X(DREQ_SENT) X(DISCONNECTED) X(SIDR_REQ_SENT) X(SIDR_REQ_RCVD)       \
	X(ERROR)
enum cm_state {
#define CM_X(n) CMS_##n,
	CM_STATES(CM_X)
#undef CM_X
};

/* A multicast group an ID joined (cma.c, rdma_join_multicast). */
struct cm_mc {
	struct cm_mc *next;
	struct sockaddr_storage addr;
	union ibv_gid mgid;
	void *context;                /* the join's, in its event */
	bool attached;                /* the ID's QP is attached to it */
};

struct cm_id {
	struct rdma_cm_id id;
	struct cm_id *next;           /* cm_core.ids */
	struct cm_mc *mc;             /* multicast groups joined */
	struct cm_dev *dev;
	struct cm_chan *chan;
	bool sync;                    /* no user channel: calls block */
	enum cm_state state;
	int port_fd;                  /* the port reservation (unix socket) */
	bool bound;                   /* has a local port */
	int events;                   /* handed out, not yet acked */
	bool destroying;
	pthread_cond_t cond;
	struct cm_id *listen;         /* passive: the listener it came from */
	int backlog;                  /* a listener's: rdma_listen's */
	bool passive;
	bool own_cqs;                 /* rdma_create_qp made the CQs */
	struct ibv_qp_init_attr_ex *qp_init; /* rdma_create_ep on a listener */
	struct ibv_sa_path_rec path;
	/* options */
	uint8_t tos;
	bool tos_set;
	uint8_t ack_timeout;
	bool ack_timeout_set;
	bool afonly;
	/* IB CM */
	uint32_t local_id, remote_id;
	uint64_t tid, service_id;
	uint32_t remote_qpn, local_qpn;
	/* rq_psn is ours: random, sent as the Starting PSN of our REQ or
	 * REP (Linux rdma_cm's seq_num); sq_psn is the peer's Starting PSN.
	 * So the active side sends from the REP's PSN and the passive side
	 * from the REQ's, as Linux's CM does (docs/rdmacm.md). */
	uint32_t sq_psn, rq_psn;
	uint32_t qkey;                /* UD */
	uint8_t resp_res, init_depth; /* ours: max_dest_rd_atomic / max_rd_atomic */
	uint8_t retry_cnt, rnr_retry, mtu;
	uint8_t timeout;              /* RTS ACK timeout from the exchange */
	uint8_t flow_label_hi;
	uint32_t flow_label;
	struct sockaddr_storage peer; /* the peer's QP1 address */
	uint8_t mad[UR_MAD_LEN];      /* last REQ/REP/DREQ/SIDR_REQ, resent */
	uint64_t deadline, give_up;   /* ns; 0 = no timer */
	int resends;
	/* iWARP (iw_cm.c): the listener's TCP socket, or a request's
	 * connection until rdma_accept hands it to the QP (-1: none); the
	 * MPA Request read from it; the number that names this ID to the
	 * stream's news (IDs may be gone by then). */
	int iw_fd;
	uint8_t *iw_req;
	size_t iw_req_len;
	uint64_t iw_cookie;
};

/* A REQ that found no listener on its port, held for a moment in case the
 * listener is about to appear (cm_proto.c, park_req). */
struct cm_parked {
	struct cm_parked *next;
	struct cm_dev *dev;
	struct sockaddr_storage src;  /* the sender's address (port 0) */
	bool from_sibling;
	uint64_t since;
	uint8_t mad[UR_MAD_LEN];
};

static inline struct cm_id *to_cid(struct rdma_cm_id *id)
{
	return cm_container_of(id, struct cm_id, id);
}

/*
 * What the protocol core needs from around it. cma.c gives the real ones
 * (the engine's QP1, event channels, ibv_modify_qp, getrandom, the timer
 * thread); tests/rdmacm/test_cm_core.c records and fakes them.
 */
struct cm_ops {
	/* Send @mad to @peer's QP1; @slot names the owner of the comm ID
	 * we answer when the peer shares our address. 0 or -errno. */
	int (*send_mad)(struct cm_core *k, struct cm_dev *dev,
			const struct sockaddr_storage *peer, uint8_t slot,
			const uint8_t *mad);
	/* Queue an event for @c's user; *@out (if set) to add parameters. */
	int (*queue_event)(struct cm_core *k, struct cm_id *c,
			   enum rdma_cm_event_type type, int status,
			   const uint8_t *pdata, size_t plen,
			   struct cm_event **out);
	/* ibv_modify_qp() on @c's QP: 0 or -errno. */
	int (*modify_qp)(struct cm_core *k, struct cm_id *c,
			 struct ibv_qp_attr *a, int mask);
	/* A new ID for a REQ to listener @l (on @l's channel). */
	struct cm_id *(*id_new)(struct cm_core *k, struct cm_id *l,
				enum ibv_qp_type qpt);
	/* Does another process on @local's address listen on @port? */
	bool (*has_listener)(struct cm_core *k, uint16_t ps,
			     const struct sockaddr *local, uint16_t port);
	uint32_t (*random)(struct cm_core *k); /* comm IDs, PSNs */
	/* A deadline was set: call cm__run_timers() by then. */
	void (*timer_kick)(struct cm_core *k);
};

/* The protocol core: every ID and held REQ, the timeouts, the counters. */
struct cm_core {
	const struct cm_ops *ops;
	struct cm_id *ids;
	struct cm_parked *parked;     /* REQs waiting for their listener */
	int nparked;
	uint64_t timeout_ns;          /* UROCE_CM_TIMEOUT_MS, default 5000 */
	uint64_t resend_ns;           /* UROCE_CM_RESEND_MS, default 1000 */
	/* counters (docs/rdmacm.md) */
	uint64_t rx_mads, rx_malformed, rx_unknown_id, rx_stale, tx_mads, resent;
	uint64_t rx_req_dropped;      /* beyond a listener's backlog */
};

struct cm_global {
	pthread_mutex_t lock;
	pthread_cond_t timer_cond;
	bool timer_started;
	struct cm_core core;
	int ndevs;
	struct cm_dev *devs;
	bool devs_open;
	uint16_t udp_port;
	bool iwarp;                   /* the devices are iWARP (UROCE_IWARP) */
};
extern struct cm_global cm;

/* cma.c */
uint64_t cm__now(void);
int cm__devs_open(void);      /* cm.lock held */
struct cm_dev *cm__dev_by_ip(const struct sockaddr *sa, int *gid_index);
/* cm_proto.c: the core (cm.lock held by the caller) */
int cm__rx(struct cm_dev *dev, const uint8_t *mad, size_t len,
	   const struct sockaddr *src, bool from_sibling, uint64_t now);
uint64_t cm__run_timers(struct cm_core *k, uint64_t now);
int cm__connect(struct cm_id *c, const struct rdma_conn_param *p,
		uint64_t now);
int cm__establish(struct cm_id *c);
int cm__accept(struct cm_id *c, const struct rdma_conn_param *p, uint64_t now);
int cm__reject(struct cm_id *c, const void *pd, uint8_t plen);
int cm__disconnect(struct cm_id *c, uint64_t now);
void cm__notify_established(struct cm_id *c);
void cm__tell_peer(struct cm_id *c, uint64_t now);
int cm__send_req(struct cm_id *c, const struct rdma_conn_param *p,
		 uint64_t now);
int cm__send_rep(struct cm_id *c, const struct rdma_conn_param *p,
		 uint64_t now);
int cm__send_rtu(struct cm_id *c);
int cm__send_rej(struct cm_id *c, uint16_t reason, const void *pd,
		  uint8_t plen);
int cm__send_dreq(struct cm_id *c, uint64_t now);
int cm__send_sidr_req(struct cm_id *c, const struct rdma_conn_param *p,
		      uint64_t now);
int cm__send_sidr_rep(struct cm_id *c, int status, const void *pd,
		       uint8_t plen);
uint32_t cm__alloc_local_id(const struct cm_dev *dev);
int cm__modify_qp(struct cm_id *c, enum ibv_qp_state s);
int cm__init_qp_attr(struct cm_id *c, struct ibv_qp_attr *a, int *mask);
/* iw_cm.c: rdma_cm on iWARP devices (TCP + MPA), cm.lock held */
bool cm__is_iw(const struct cm_id *c);
int cm__iw_listen(struct cm_id *c, int backlog);
int cm__iw_connect(struct cm_id *c, const struct rdma_conn_param *p);
int cm__iw_accept(struct cm_id *c, const struct rdma_conn_param *p);
int cm__iw_reject(struct cm_id *c, const void *pd, uint8_t plen);
int cm__iw_disconnect(struct cm_id *c);
void cm__iw_destroy(struct cm_id *c);
/* addr.c */
int cm__port_reserve(struct cm_id *c, const struct sockaddr *sa, bool any);
int cm__port_listen(struct cm_id *c);
bool cm__port_has_listener(uint16_t ps, const struct sockaddr *local,
			    uint16_t port);
void cm__port_release(struct cm_id *c);
int cm__route_src(const struct sockaddr *dst, struct sockaddr_storage *src);
/* cm_sa.c (pure) */
uint16_t cm__sa_port(const struct sockaddr *sa);
void cm__sa_set_port(struct sockaddr *sa, uint16_t port);
bool cm__sa_is_any(const struct sockaddr *sa);
bool cm__sa_is_loopback(const struct sockaddr *sa); /* 127/8, ::1 */
socklen_t cm__sa_len(const struct sockaddr *sa);
void cm__gid_from_sa(union ibv_gid *gid, const struct sockaddr *sa);
/* The index of @c's source GID on its device (0 if none matches). */
int cm__gid_index(const struct cm_id *c);
void cm__sa_from_gid(struct sockaddr_storage *ss, const union ibv_gid *gid);

#endif

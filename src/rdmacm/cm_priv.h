/* SPDX-License-Identifier: MIT */
/*
 * uroce librdmacm: private objects. One global lock (cm.lock) guards every
 * ID, channel and device here: connection management is not a hot path,
 * and one lock keeps the receive handler (engine thread), the timer thread
 * and the application's calls simple to reason about.
 */
#ifndef CM_PRIV_H
#define CM_PRIV_H

#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdbool.h>
#include <stdint.h>

#include "cm_mad.h"

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
#define CM_ACK_TIMEOUT 19
#define CM_TARGET_ACK_DELAY 15
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

/* A device as the CM sees it: an open context whose QP1 is ours. */
struct cm_dev {
	struct ibv_context *verbs;
	struct ibv_pd *pd;            /* default PD (rdma_create_ep, QPs) */
	int slot;                     /* the engine's slot on its address */
	int ngid;
	union ibv_gid gid[8];
	struct sockaddr_storage addr[8]; /* GID i as an IP address */
	__be64 guid;
	enum ibv_mtu mtu;
	uint32_t max_rd_atom;
};

struct cm_chan {
	struct rdma_event_channel ch;
	struct cm_event *head, **tail;
	int nids;
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

struct cm_id {
	struct rdma_cm_id id;
	struct cm_id *next;           /* cm.ids */
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
	uint32_t sq_psn, rq_psn;
	uint32_t qkey;                /* UD */
	uint8_t resp_res, init_depth; /* ours: max_dest_rd_atomic / max_rd_atomic */
	uint8_t retry_cnt, rnr_retry, mtu, timeout;
	uint8_t flow_label_hi;
	uint32_t flow_label;
	struct sockaddr_storage peer; /* the peer's QP1 address */
	uint8_t mad[UR_MAD_LEN];      /* last REQ/REP/DREQ/SIDR_REQ, resent */
	uint64_t deadline, give_up;   /* ns; 0 = no timer */
	int resends;
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

struct cm_global {
	pthread_mutex_t lock;
	pthread_cond_t timer_cond;
	bool timer_started;
	struct cm_id *ids;
	struct cm_parked *parked;     /* REQs waiting for their listener */
	int nparked;
	int ndevs;
	struct cm_dev *devs;
	bool devs_open;
	uint64_t timeout_ns;          /* UROCE_CM_TIMEOUT_MS, default 5000 */
	uint64_t resend_ns;           /* UROCE_CM_RESEND_MS, default 1000 */
	uint16_t udp_port;
	/* counters (docs/rdmacm.md) */
	uint64_t rx_mads, rx_malformed, rx_unknown_id, rx_stale, tx_mads, resent;
};
extern struct cm_global cm;

/* cma.c */
uint64_t __cm_now(void);
int __cm_devs_open(void);      /* cm.lock held */
struct cm_dev *__cm_dev_by_ip(const struct sockaddr *sa, int *gid_index);
int __cm_queue_event(struct cm_id *c, enum rdma_cm_event_type type,
		     int status, const uint8_t *pdata, size_t plen,
		     struct cm_event **out);
void __cm_timer_kick(void);
struct cm_id *__cm_id_new(struct cm_chan *chan, void *context,
			  enum rdma_port_space ps, enum ibv_qp_type qpt);
/* cm_proto.c */
int __cm_gsi_rx(void *arg, const uint8_t *mad, size_t len,
		const struct sockaddr *src, bool from_sibling);
int __cm_send_req(struct cm_id *c, const struct rdma_conn_param *p);
int __cm_send_rep(struct cm_id *c, const struct rdma_conn_param *p);
int __cm_send_rtu(struct cm_id *c);
int __cm_send_rej(struct cm_id *c, uint16_t reason, const void *pd,
		  uint8_t plen);
int __cm_send_dreq(struct cm_id *c);
int __cm_send_sidr_req(struct cm_id *c, const struct rdma_conn_param *p);
int __cm_send_sidr_rep(struct cm_id *c, int status, const void *pd,
		       uint8_t plen);
uint64_t __cm_run_timers(uint64_t now);
uint32_t __cm_alloc_local_id(const struct cm_dev *dev);
int __cm_modify_qp(struct cm_id *c, enum ibv_qp_state s);
int __cm_init_qp_attr(struct cm_id *c, struct ibv_qp_attr *a, int *mask);
/* addr.c */
int __cm_port_reserve(struct cm_id *c, const struct sockaddr *sa, bool any);
int __cm_port_listen(struct cm_id *c);
bool __cm_port_has_listener(uint16_t ps, const struct sockaddr *local,
			    uint16_t port);
void __cm_port_release(struct cm_id *c);
int __cm_route_src(const struct sockaddr *dst, struct sockaddr_storage *src);
uint16_t __cm_sa_port(const struct sockaddr *sa);
void __cm_sa_set_port(struct sockaddr *sa, uint16_t port);
bool __cm_sa_is_any(const struct sockaddr *sa);
bool __cm_sa_is_loopback(const struct sockaddr *sa); /* 127/8, ::1 */
socklen_t __cm_sa_len(const struct sockaddr *sa);
void __cm_gid_from_sa(union ibv_gid *gid, const struct sockaddr *sa);
void __cm_sa_from_gid(struct sockaddr_storage *ss, const union ibv_gid *gid);

#endif

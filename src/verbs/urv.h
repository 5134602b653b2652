/* SPDX-License-Identifier: MIT */
/*
 * uroce verbs layer: private objects of the drop-in libibverbs.so.1.
 *
 * Every ibverbs object the application sees is embedded in one of ours and
 * found again with a to_*() container_of helper, as rdma-core providers do
 * (providers/rxe/rxe.h). Internal functions return 0 or -errno; only the
 * exported ibv_* functions convert to the ibverbs conventions.
 */
#ifndef URV_H
#define URV_H

#include <errno.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <uroce/uroce.h>

#include "ur_engine.h"
#include "ur_transport.h"

#define urv_container_of(ptr, type, member)                                  \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define URV_EXPORT __attribute__((visibility("default")))

/* Device limits we advertise (docs/verbs.md). */
enum {
	URV_MAX_GID = 64,
	URV_MAX_QP_WR = 16384,
	URV_MAX_SGE = 16,
	URV_MAX_CQE = 1 << 20,
	URV_MAX_INLINE = 256,
	URV_MAX_RD_ATOM = 128,
	URV_MAX_QP = 1 << 16,
	URV_MAX_CQ = 1 << 16,
	URV_MAX_MR = 1 << 20,
	URV_MAX_PD = 1 << 16,
	URV_MAX_AH = 1 << 16,
	URV_MAX_SRQ = 1 << 16,
	URV_MAX_SRQ_WR = 16384,
	URV_MAX_RWQ_IND_LOG = 12, /* RSS indirection tables of up to 4096 WQs */
	URV_MAX_MCAST_GRP = 1024,  /* advertised, not enforced */
	URV_MAX_MCAST_QP = 64,
	URV_PP_RATE_MIN_KBPS = 1,         /* packet pacing (docs/cc.md) */
	URV_PP_RATE_MAX_KBPS = 100000000, /* 100 Gbit/s */
	URV_VENDOR_ID = 0xffffff, /* as rxe: no OUI */
	URV_VENDOR_PART_ID = 0x5552, /* "UR" */
	URV_ROCE_PORT = 4791,
	URV_MAX_PORTS = 8, /* UROCE_PORTS entries */
};

/* Device memory (ibv_alloc_dm): host memory of the library, at most this
 * much per device in a process (docs/verbs.md "Device memory"). */
#define URV_MAX_DM_SIZE ((size_t)4 << 20)
#define URV_DM_MAX_LOG_ALIGN 30

/*
 * ABI image of rdma-core 44's struct verbs_device (libibverbs/driver.h,
 * which is not installed). Nothing outside reads past .device except
 * provider libraries' verbs_get_device(dev)->ops checks (e.g.
 * mlx5dv_is_supported), which must see a pointer that is not theirs.
 */
struct verbs_device {
	struct ibv_device device; /* must be first */
	const void *ops;
	atomic_int refcount;
	struct {
		void *next, *prev;
	} entry;
	void *sysfs;
	uint64_t core_support;
};

/* Same for struct verbs_cq / verbs_qp: the ibv object and its _ex form. */
struct urv_gid {
	union ibv_gid gid;
	struct sockaddr_storage addr; /* the IP address behind it */
};

/* A port: an interface or an address, with its own GID table, MTU and
 * link state (docs/ports-classes.md "Ports"). Port N is ports[N - 1]. */
struct urv_port {
	char ifname[IF_NAMESIZE];
	unsigned int ifindex;   /* 0 when the address names no local interface */
	uint32_t if_mtu;        /* interface MTU, bytes */
	bool if_loopback;       /* traffic stays on this machine (lo) */
	bool if_is_lo;          /* the interface is lo (its link never drops) */
	enum ibv_mtu active_mtu;
	int num_gids;
	struct urv_gid gids[URV_MAX_GID];
};

struct urv_device {
	struct verbs_device vdev;
	__be64 guid;
	int nports;             /* 1, or as many as UROCE_PORTS names */
	struct urv_port ports[URV_MAX_PORTS];
	atomic_size_t dm_used; /* device memory allocated, bytes */
};

/* Port @n (1-based) of @dev, or NULL if it has none of that number. */
static inline struct urv_port *urv__port(struct urv_device *dev, unsigned int n)
{
	return n >= 1 && n <= (unsigned int)dev->nports ? &dev->ports[n - 1]
							: NULL;
}

struct urv_event {
	struct urv_event *next;
	struct ibv_async_event ev;    /* async queue */
	struct ibv_cq *cq;            /* completion channel queue */
};

/* A FIFO of events behind a pollable eventfd (EFD_SEMAPHORE). */
struct urv_evq {
	pthread_mutex_t lock;
	struct urv_event *head, **tail;
	int fd;
};

/* A node of the lists that ibv_import_* search (import.c). */
struct urv_link {
	struct urv_link *prev, *next;
};

struct urv_context {
	struct urv_link link; /* live contexts, found by their cmd_fd */
	dev_t cmd_dev;        /* cmd_fd's identity (a memfd of its own) */
	ino_t cmd_ino;
	struct verbs_context vctx;
	struct urv_device *dev;
	struct ur_engine *eng; /* port 1's: the keys, QPNs and QP1 */
	/* Each port's engine (peng[0] == eng); a port's opens with its
	 * first QP (port_lock). */
	struct ur_engine *peng[URV_MAX_PORTS];
	pthread_mutex_t port_lock;
	/* Each port's link as this context last saw it (port.c): a change
	 * is an async event. */
	struct ur_link_watch *link_watch;
	atomic_bool port_down[URV_MAX_PORTS];
	uint16_t udp_port;
	struct urv_evq async;
	atomic_int npd, ncq, nqp; /* live objects: close_device refuses if any */
	struct urv_raw_ctx *raw;  /* raw packet QPs' port and flows (raw.c) */
};

struct urv_td {
	struct ibv_td td;
	atomic_int users; /* parent domains on it: dealloc is EBUSY */
};

/*
 * A PD, or a parent domain (ibv_alloc_parent_domain): the same protection
 * domain (same pdn, so keys and QPs of either mix freely) with a thread
 * domain and the allocator of the rings of QPs, CQs and SRQs created on it.
 */
struct urv_pd {
	struct ibv_pd pd;
	uint32_t pdn;
	atomic_int users; /* MRs, QPs, AHs, SRQs, CQs, parent domains on it */
	struct urv_pd *parent; /* parent domain: the PD it extends */
	struct urv_td *td;     /* parent domain: its thread domain, or NULL */
	struct ur_alloc ring_alloc; /* .alloc NULL: calloc */
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size,
		       size_t alignment, uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
		     uint64_t resource_type);
	void *pd_context;
	struct urv_link link;     /* importable PDs (not parents, not imports) */
	struct urv_pd *imported;  /* ibv_import_pd: the PD it names */
};

struct urv_dm;

struct urv_mr {
	struct ibv_mr mr;
	struct ur_mr umr;
	bool locked; /* mlock() succeeded */
	unsigned int access; /* as registered (ibv_rereg_mr keeps it) */
	bool odp;            /* IBV_ACCESS_ON_DEMAND: nothing pinned */
	struct urv_dm *dm;   /* ibv_reg_dm_mr: the device memory it maps */
	struct urv_mr *imported; /* ibv_import_mr: the region it names */
	atomic_int imports;  /* ibv_import_mr of it: dereg is EBUSY */
};

/* Device memory: a shared anonymous mapping of the library (what a
 * software NIC has as its own memory), reached by the application only
 * through ibv_memcpy_to/from_dm and DM MRs. */
struct urv_dm {
	struct ibv_dm dm;
	uint8_t *base;      /* start, aligned as asked */
	size_t length;      /* as allocated */
	void *map;          /* the whole mapping (alignment slack included) */
	size_t map_len;
	bool locked;        /* mlock() succeeded */
	atomic_int users;   /* DM MRs and imports of it: free is EBUSY */
	struct urv_link link;   /* importable DMs */
	struct urv_dm *imported; /* ibv_import_dm: the DM it names */
};

struct urv_mw {
	struct ibv_mw mw;
	struct ur_mr key; /* the window's key and binding (transport) */
};

struct urv_comp_channel {
	struct ibv_comp_channel ch;
	struct urv_evq q;
	atomic_int ncq;
};

struct urv_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
	struct ur_cq ucq;
	struct urv_context *ctx;
	/* The engine a spinning poll drains: its last QP's port's (the
	 * other ports' engine threads deliver their QPs' completions). */
	struct ur_engine *_Atomic eng;
	atomic_int nqp;              /* QPs using it */
	uint32_t comp_events_reported; /* under cq.mutex */
	uint64_t wc_flags;           /* ibv_create_cq_ex wc_flags */
	struct urv_pd *pd;           /* the parent domain it was created on */
	struct ur_cqe cur;           /* current entry for the _ex poll API */
};

/* One WR being built between ibv_wr_start() and ibv_wr_complete(). */
struct urv_wr_pending {
	struct ur_send_wr wr;
	struct ur_sge sge[URV_MAX_SGE];
	struct ur_ah ah;
	uint8_t *inl; /* inline data copy */
};

struct urv_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	struct ur_qp uqp;
	struct urv_context *ctx;
	struct ur_engine *eng; /* its port's (ctx->eng until INIT moves it) */
	uint8_t port_num;      /* 1 until ibv_modify_qp sets IBV_QP_PORT */
	uint32_t sq_sig_all;
	uint32_t async_events_reported; /* under qp.mutex */
	/* ibv_qp_ex builder state (single poster by contract). */
	struct urv_wr_pending *pend;
	size_t npend, cap_pend;
	int wr_err; /* first error seen while building, -errno */
	uint8_t inl_buf[URV_MAX_INLINE];
	struct urv_xrcd *xrcd; /* XRC TGT: its domain */
	atomic_int opens;      /* XRC TGT: ibv_open_qp handles besides ours */
	/* iWARP (iwarp.c): whom the stream's news go to (librdmacm). */
	uroce_iw_fn iw_fn;
	void *iw_arg;
};
/* iwarp.c */
bool urv__dev_is_iwarp(const struct urv_device *dev);
int urv__iw_qp_init(struct urv_qp *qp);
void urv__iw_qp_fini(struct urv_qp *qp);

/* An XRC domain (xrc.c): its number, shared by the opens of one file. */
struct xrcd_file;
struct urv_xrcd {
	struct ibv_xrcd xrcd;
	uint32_t xrcdn;
	struct xrcd_file *file; /* NULL: private (fd -1) */
	atomic_int users;       /* XRC SRQs and TGT QPs: close is EBUSY */
};

struct urv_srq {
	struct ibv_srq srq;
	struct ur_srq usrq;
	struct urv_context *ctx;
	atomic_int nqp;                 /* QPs attached: destroy is EBUSY */
	uint32_t async_events_reported; /* under srq.mutex */
	struct urv_xrcd *xrcd;          /* an XRC SRQ's domain, or NULL */
	struct urv_cq *cq;              /* an XRC SRQ's CQ */
};

struct urv_ah {
	struct ibv_ah ah;
	struct ur_ah uah;
	uint8_t port_num; /* a UD QP of another port refuses it */
};

static inline struct urv_device *to_udev(struct ibv_device *d)
{
	return urv_container_of(d, struct urv_device, vdev.device);
}
static inline struct urv_context *to_uctx(struct ibv_context *c)
{
	return urv_container_of(c, struct urv_context, vctx.context);
}
static inline struct urv_pd *to_upd(struct ibv_pd *pd)
{
	return urv_container_of(pd, struct urv_pd, pd);
}
static inline struct urv_td *to_utd(struct ibv_td *td)
{
	return urv_container_of(td, struct urv_td, td);
}
static inline struct urv_mr *to_umr(struct ibv_mr *mr)
{
	return urv_container_of(mr, struct urv_mr, mr);
}
static inline struct urv_dm *to_udm(struct ibv_dm *dm)
{
	return urv_container_of(dm, struct urv_dm, dm);
}
static inline struct urv_mw *to_umw(struct ibv_mw *mw)
{
	return urv_container_of(mw, struct urv_mw, mw);
}
static inline struct urv_cq *to_ucq(struct ibv_cq *cq)
{
	return urv_container_of(cq, struct urv_cq, cq);
}
static inline struct urv_cq *to_ucq_ex(struct ibv_cq_ex *cq)
{
	return urv_container_of(cq, struct urv_cq, cq_ex);
}
static inline struct urv_qp *to_uqp(struct ibv_qp *qp)
{
	return urv_container_of(qp, struct urv_qp, qp);
}
static inline struct urv_qp *to_uqp_ex(struct ibv_qp_ex *qp)
{
	return urv_container_of(qp, struct urv_qp, qp_ex);
}
static inline struct urv_srq *to_usrq(struct ibv_srq *srq)
{
	return urv_container_of(srq, struct urv_srq, srq);
}
static inline struct urv_xrcd *to_uxrcd(struct ibv_xrcd *x)
{
	return urv_container_of(x, struct urv_xrcd, xrcd);
}
static inline struct urv_ah *to_uah(struct ibv_ah *ah)
{
	return urv_container_of(ah, struct urv_ah, ah);
}
static inline struct urv_comp_channel *to_uch(struct ibv_comp_channel *ch)
{
	return urv_container_of(ch, struct urv_comp_channel, ch);
}

/* Set errno from a -errno and return NULL / -1 (API boundary helpers). */
/* An ibv_recv_wr as the transport takes it (the SGE layouts match). */
static inline int urv_recv_wr(const struct ibv_recv_wr *wr,
			      struct ur_recv_wr *u)
{
	if (wr->num_sge < 0 || (wr->num_sge && !wr->sg_list))
		return -EINVAL;
	u->wr_id = wr->wr_id;
	u->sg_list = (const struct ur_sge *)wr->sg_list;
	u->num_sge = (uint32_t)wr->num_sge;
	return 0;
}

static inline void *urv_err_ptr(int neg)
{
	errno = -neg;
	return NULL;
}
static inline int urv_err_int(int neg)
{
	errno = -neg;
	return -1;
}

/* device.c */
bool urv__is_our_context(struct ibv_context *ctx);
/* cc.c: congestion control and pacing (docs/cc.md) */
int urv__cc_dev_init(struct ur_dev *dev);
/* Encryption policy and key from UROCE_CRYPT* (crypt.c). */
int urv__crypt_dev_init(struct ur_dev *dev);
int urv__crypt_key_load(const char *path, uint8_t key[32]);
int urv__modify_qp_rate_limit(struct ibv_qp *qp,
			       struct ibv_qp_rate_limit_attr *attr);
int urv__gid_to_addr(const union ibv_gid *gid, struct ur_ipudp *p, bool dst);
int urv__find_gid(const struct urv_port *port, const uint8_t ip[16], bool v6);
void urv__gid_from_ip(union ibv_gid *gid, const uint8_t ip[16], bool v6);
/* The engine of port @port_num of @ctx, opened at its first use. */
int urv__port_engine(struct urv_context *ctx, unsigned int port_num,
		      struct ur_engine **out);
/* port.c: each port's link state from rtnetlink; a change raises
 * IBV_EVENT_PORT_ERR / IBV_EVENT_PORT_ACTIVE on the context. */
int urv__link_watch_start(struct urv_context *ctx);
void urv__link_watch_stop(struct urv_context *ctx);
/* qp.c: RoCEv2 address vector -> IP path (-EINVAL without a GRH). */
int urv__ah_to_path(struct urv_context *ctx, const struct ibv_ah_attr *ah,
		     struct ur_ipudp *p);

/* events.c */
int urv__evq_init(struct urv_evq *q);
void urv__evq_fini(struct urv_evq *q);
void urv__evq_push(struct urv_evq *q, struct urv_event *e);
/* Blocking (per the fd's O_NONBLOCK) pop; -EAGAIN when non-blocking. */
int urv__evq_pop(struct urv_evq *q, struct urv_event **out);
/* Drop queued events matching @match; returns how many. */
int urv__evq_drop(struct urv_evq *q, bool (*match)(struct urv_event *, void *),
		   void *arg);
extern const struct ur_engine_host_ops urv__host_ops;

/* query.c / cq.c / qp.c / ah.c: context ops. */
int urv__query_port(struct ibv_context *ctx, uint8_t port,
		     struct ibv_port_attr *attr, size_t attr_len);
int urv__query_device_ex(struct ibv_context *ctx,
			  const struct ibv_query_device_ex_input *in,
			  struct ibv_device_attr_ex *attr, size_t attr_size);
int urv__query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *v);
int urv__poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int urv__req_notify_cq(struct ibv_cq *cq, int solicited_only);
struct ibv_cq_ex *urv__create_cq_ex(struct ibv_context *ctx,
				     struct ibv_cq_init_attr_ex *attr);
struct ibv_qp *urv__create_qp_ex(struct ibv_context *ctx,
				  struct ibv_qp_init_attr_ex *attr);
int urv__post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad);
int urv__post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad);
/* srq.c */
int urv__post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad);
struct ibv_srq *urv__create_srq_ex(struct ibv_context *ctx,
				    struct ibv_srq_init_attr_ex *attr);
void urv__qp_ex_init(struct urv_qp *qp, uint64_t send_ops_flags);
/* xrc.c: the XRC context ops (open/close XRCD, SRQ number, open QP). */
void urv__xrc_ops(struct verbs_context *vctx);
/* mr.c */
int urv__advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		    uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge);
/* import.c: the lists ibv_import_* search, and unimporting */
void urv__share_ctx(struct urv_context *ctx, bool add);
void urv__share_pd(struct urv_pd *pd, bool add);
void urv__share_dm(struct urv_dm *dm, bool add);
/* Drop one user of a PD / DM; the last one frees an import (whose
 * handle the application holds as one user until it unimports). */
void urv__pd_put(struct urv_pd *pd);
void urv__dm_put(struct urv_dm *dm);
void urv__unimport_mr(struct urv_mr *mr);
/* dm.c: device memory (verbs_context ops) */
struct ibv_dm *urv__alloc_dm(struct ibv_context *ctx,
			     struct ibv_alloc_dm_attr *attr);
int urv__free_dm(struct ibv_dm *dm);
struct ibv_mr *urv__reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm,
			      uint64_t offset, size_t length,
			      unsigned int access);
/* domain.c: thread and parent domains (verbs_context ops) */
struct ibv_td *urv__alloc_td(struct ibv_context *ctx,
			     struct ibv_td_init_attr *attr);
int urv__dealloc_td(struct ibv_td *td);
struct ibv_pd *urv__alloc_parent_domain(struct ibv_context *ctx,
					struct ibv_parent_domain_init_attr *attr);
int urv__dealloc_parent_domain(struct urv_pd *pd);
/* The rings' allocator of objects created on @pd: NULL for calloc. */
static inline const struct ur_alloc *urv__pd_ring_alloc(struct urv_pd *pd)
{
	return pd->ring_alloc.alloc ? &pd->ring_alloc : NULL;
}
/* mw.c */
struct ibv_mw *urv__alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int urv__dealloc_mw(struct ibv_mw *mw);
int urv__bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind);
int urv__bind_wr(struct ibv_qp *qp, struct ibv_mw *mw, uint32_t rkey,
		  const struct ibv_mw_bind_info *bi, struct ur_send_wr *u);
void urv__qp_ex_fini(struct urv_qp *qp);

/* raw.c: raw packet QPs, flow steering, WQs and RSS (docs/verbs.md
 * "Raw packet QPs"). The QP functions return a positive errno. */
struct ibv_qp *urv__raw_create_qp(struct ibv_context *ctx,
				  struct ibv_qp_init_attr_ex *attr);
int urv__raw_destroy_qp(struct ibv_qp *qp);
int urv__raw_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int urv__raw_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      struct ibv_qp_init_attr *init_attr);
int urv__raw_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		       struct ibv_send_wr **bad);
int urv__raw_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad);
void urv__raw_ctx_fini(struct urv_context *ctx);
struct ibv_flow *urv__create_flow(struct ibv_qp *qp, struct ibv_flow_attr *attr);
int urv__destroy_flow(struct ibv_flow *flow);
struct ibv_wq *urv__create_wq(struct ibv_context *ctx,
			      struct ibv_wq_init_attr *attr);
int urv__modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr);
int urv__destroy_wq(struct ibv_wq *wq);
struct ibv_rwq_ind_table *
urv__create_rwq_ind_table(struct ibv_context *ctx,
			  struct ibv_rwq_ind_table_init_attr *attr);
int urv__destroy_rwq_ind_table(struct ibv_rwq_ind_table *t);

/* route.c: the smallest MTU among the non-loopback interfaces that the
 * main routing table's routes of @family leave by; 0 if none. */
uint32_t urv__route_mtu(int family);

#endif

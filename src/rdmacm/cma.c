// SPDX-License-Identifier: MIT
/*
 * librdmacm.so.1 over uroce: the rdma_cm API (rdma/rdma_cma.h of rdma-core
 * 44) on top of our own IB CM (cm_proto.c), which speaks CM MADs on QP1 of
 * each uroce device. Event channels are eventfds with a queue behind them;
 * an ID without a channel is synchronous (its calls wait for their event,
 * as librdmacm's ucma_complete()). Retransmissions run on one timer thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_verbs.h>
#include <uroce/uroce.h>

#include "cm_priv.h"
#include "ur_log.h"
#include "ur_settings.h"

struct cm_global cm = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.timer_cond = PTHREAD_COND_INITIALIZER,
};
static pthread_once_t cm_once = PTHREAD_ONCE_INIT;
static const struct cm_ops cm_ops;

uint64_t cm__now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Settings are checked where devices open (cm__devs_open): a bad one
 * fails every call that needs a device, saying why. */
static void cm_init(void)
{
	cm.core.ops = &cm_ops;
	cm.core.timeout_ns = ur_setting_val("UROCE_CM_TIMEOUT_MS") * 1000000ull;
	cm.core.resend_ns = ur_setting_val("UROCE_CM_RESEND_MS") * 1000000ull;
	cm.udp_port = (uint16_t)ur_setting_val("UROCE_PORT");
}

static void cm_global_init(void)
{
	pthread_once(&cm_once, cm_init);
}

/* ---- timer thread ------------------------------------------------------- */
static void *timer_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&cm.lock);
	for (;;) {
		uint64_t next = cm__run_timers(&cm.core, cm__now());

		if (next == UINT64_MAX) {
			pthread_cond_wait(&cm.timer_cond, &cm.lock);
		} else {
			struct timespec ts;
			uint64_t now = cm__now(), d = next > now ? next - now : 0;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			d += (uint64_t)ts.tv_nsec;
			ts.tv_sec += (time_t)(d / 1000000000ull);
			ts.tv_nsec = (long)(d % 1000000000ull);
			pthread_cond_timedwait(&cm.timer_cond, &cm.lock, &ts);
		}
	}
	return NULL;
}

/* A message with a deadline was sent (cm.lock held). */
static void timer_kick(struct cm_core *k)
{
	(void)k;
	if (!cm.timer_started) {
		pthread_condattr_t ca;
		pthread_attr_t ta;
		pthread_t t;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_destroy(&cm.timer_cond);
		pthread_cond_init(&cm.timer_cond, &ca);
		pthread_attr_init(&ta);
		pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
		if (!pthread_create(&t, &ta, timer_main, NULL))
			cm.timer_started = true;
		pthread_attr_destroy(&ta);
	}
	pthread_cond_signal(&cm.timer_cond);
}

/* ---- devices ------------------------------------------------------------ */
/* A MAD on QP1 of device @arg: the engine's callback (uroce_gsi_attach),
 * on whichever thread drains the engine's socket. */
static int gsi_rx(void *arg, const uint8_t *mad, size_t len,
		  const struct sockaddr *src, bool from_sibling)
{
	int ret;

	pthread_mutex_lock(&cm.lock);
	ret = cm__rx(arg, mad, len, src, from_sibling, cm__now());
	pthread_mutex_unlock(&cm.lock);
	return ret;
}

/* Open every uroce device once; they stay open while the library is loaded
 * (as librdmacm's). cm.lock held. */
int cm__devs_open(void)
{
	struct ibv_device **list;
	int n;

	if (cm.devs_open)
		return 0;
	if (ur_settings_check(UR_SCOPE_CM))
		return -EINVAL;
	list = ibv_get_device_list(&n);
	if (!list)
		return -ENODEV;
	/* A cm_dev per port: each port has its addresses and its QP1. */
	cm.devs = calloc((size_t)n * CM_MAX_PORTS + 1, sizeof(*cm.devs));
	if (!cm.devs) {
		ibv_free_device_list(list);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		struct ibv_device_attr da;
		struct ibv_context *verbs = ibv_open_device(list[i]);
		struct ibv_pd *pd;
		int slot, nports = 0;

		if (!verbs)
			continue;
		pd = ibv_alloc_pd(verbs);
		slot = uroce_context_slot(verbs);
		if (!pd || slot < 0 || ibv_query_device(verbs, &da)) {
			if (pd)
				ibv_dealloc_pd(pd);
			ibv_close_device(verbs);
			continue;
		}
		for (uint8_t p = 1; p <= da.phys_port_cnt && p <= CM_MAX_PORTS; p++) {
			struct cm_dev *d = &cm.devs[cm.ndevs];
			struct ibv_port_attr pa;

			memset(d, 0, sizeof(*d));
			if (ibv_query_port(verbs, p, &pa))
				continue;
			d->verbs = verbs;
			d->port_num = p;
			d->pd = pd;
			d->core = &cm.core;
			d->mtu = pa.active_mtu;
			d->max_rd_atom = (uint32_t)da.max_qp_rd_atom;
			d->guid = ibv_get_device_guid(list[i]);
			d->slot = slot;
			d->iwarp = list[i]->transport_type == IBV_TRANSPORT_IWARP;
			cm.iwarp |= d->iwarp;
			for (int g = 0; g < pa.gid_tbl_len && d->ngid < 8; g++) {
				if (ibv_query_gid(verbs, p, g, &d->gid[d->ngid]))
					break;
				/* The zero GID: past the port's addresses. */
				if (!d->gid[d->ngid].global.interface_id &&
				    !d->gid[d->ngid].global.subnet_prefix)
					break;
				cm__sa_from_gid(&d->addr[d->ngid], &d->gid[d->ngid]);
				d->ngid++;
			}
			if (uroce_gsi_attach_port(verbs, p, gsi_rx, d))
				continue;
			cm.ndevs++;
			nports++;
		}
		if (!nports) {
			ibv_dealloc_pd(pd);
			ibv_close_device(verbs);
		}
	}
	ibv_free_device_list(list);
	cm.devs_open = true;
	return cm.ndevs ? 0 : -ENODEV;
}

static bool same_ip(const struct sockaddr *a, const struct sockaddr_storage *b)
{
	if (a->sa_family != b->ss_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
}

struct cm_dev *cm__dev_by_ip(const struct sockaddr *sa, int *gid_index)
{
	for (int i = 0; i < cm.ndevs; i++)
		for (int g = 0; g < cm.devs[i].ngid; g++)
			if (same_ip(sa, &cm.devs[i].addr[g])) {
				if (gid_index)
					*gid_index = g;
				return &cm.devs[i];
			}
	return NULL;
}

CM_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **l;
	int n = 0;

	cm_global_init();
	pthread_mutex_lock(&cm.lock);
	cm__devs_open();
	l = calloc((size_t)cm.ndevs + 1, sizeof(*l));
	/* A context once, whatever its ports. */
	for (int i = 0; l && i < cm.ndevs; i++)
		if (!n || l[n - 1] != cm.devs[i].verbs)
			l[n++] = cm.devs[i].verbs;
	if (num_devices)
		*num_devices = l ? n : 0;
	pthread_mutex_unlock(&cm.lock);
	if (!l)
		errno = ENOMEM;
	return l;
}

CM_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

/* ---- event channels ------------------------------------------------------ */
static struct cm_chan *chan_new(void)
{
	struct cm_chan *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return NULL;
	ch->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (ch->ch.fd < 0) {
		free(ch);
		return NULL;
	}
	ch->tail = &ch->head;
	return ch;
}

static void chan_free(struct cm_chan *ch)
{
	while (ch->head) {
		struct cm_event *e = ch->head;

		ch->head = e->next;
		free(e);
	}
	close(ch->ch.fd);
	free(ch);
}

CM_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cm_chan *ch;

	cm_global_init();
	pthread_mutex_lock(&cm.lock);
	if (cm__devs_open()) {
		pthread_mutex_unlock(&cm.lock);
		errno = ENODEV;
		return NULL;
	}
	pthread_mutex_unlock(&cm.lock);
	ch = chan_new();
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	return &ch->ch;
}

/*
 * A program may destroy a channel while another of its threads waits in
 * rdma_get_cm_event on it (rping does, at exit). With the kernel's rdma_cm
 * that read stays blocked; here the waiter may wake on a count whose event
 * was purged with its ID, and must not find the channel freed (rping's
 * client crashed in 1 of about 40 runs) nor return an error (rping exits
 * 255 on one). So a channel with a waiter is only marked: the waiter parks.
 */
CM_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cm_chan *ch;
	bool busy;

	if (!channel)
		return;
	ch = cm_container_of(channel, struct cm_chan, ch);
	pthread_mutex_lock(&cm.lock);
	busy = ch->readers > 0;
	ch->dead = true;
	pthread_mutex_unlock(&cm.lock);
	if (!busy)
		chan_free(ch);
}

static int queue_event(struct cm_core *k, struct cm_id *c,
		       enum rdma_cm_event_type type, int status,
		       const uint8_t *pdata, size_t plen, struct cm_event **out)
{
	struct cm_event *e = calloc(1, sizeof(*e));
	uint64_t one = 1;

	if (!e)
		return -ENOMEM;
	e->owner = c;
	e->ev.id = &c->id;
	e->ev.listen_id = type == RDMA_CM_EVENT_CONNECT_REQUEST && c->listen
				  ? &c->listen->id : NULL;
	e->ev.event = type;
	e->ev.status = status;
	/* UROCE_LOG=info: the connection steps as the program sees them. */
	ur_log(UR_LOG_INFO, "rdma_cm: id %p: %s, status %d",
	       (void *)&c->id, rdma_event_str(type), status);
	if (pdata && plen) {
		if (plen > sizeof(e->pdata))
			plen = sizeof(e->pdata);
		memcpy(e->pdata, pdata, plen);
		e->ev.param.conn.private_data = e->pdata;
		e->ev.param.conn.private_data_len = (uint8_t)plen;
	}
	c->events++;
	*c->chan->tail = e;
	c->chan->tail = &e->next;
	if (write(c->chan->ch.fd, &one, sizeof(one)) < 0)
		(void)0;
	if (out)
		*out = e;
	return 0;
}

CM_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel,
				struct rdma_cm_event **event)
{
	struct cm_chan *ch;

	if (!channel || !event) {
		errno = EINVAL;
		return -1;
	}
	ch = cm_container_of(channel, struct cm_chan, ch);
	pthread_mutex_lock(&cm.lock);
	ch->readers++;
	pthread_mutex_unlock(&cm.lock);
	for (;;) {
		struct cm_event *e;
		uint64_t v;
		int err = 0;

		if (read(ch->ch.fd, &v, sizeof(v)) < 0) {
			if (errno == EINTR)
				continue;
			err = errno; /* EAGAIN on a non-blocking channel */
		}
		pthread_mutex_lock(&cm.lock);
		if (ch->dead) {
			/* Destroyed while we waited: wait on, as a read of
			 * the kernel's channel would (rdma_destroy_event_channel). */
			pthread_mutex_unlock(&cm.lock);
			for (;;)
				pause();
		}
		e = err ? NULL : ch->head;
		if (e) {
			ch->head = e->next;
			if (!ch->head)
				ch->tail = &ch->head;
		}
		if (e || err)
			ch->readers--;
		pthread_mutex_unlock(&cm.lock);
		if (err) {
			errno = err;
			return -1;
		}
		if (e) {
			*event = &e->ev;
			return 0;
		}
		/* The event's ID was destroyed: its count is stale. */
	}
}

CM_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cm_event *e;

	if (!event) {
		errno = EINVAL;
		return -1;
	}
	e = cm_container_of(event, struct cm_event, ev);
	pthread_mutex_lock(&cm.lock);
	e->owner->events--;
	pthread_cond_broadcast(&e->owner->cond);
	pthread_mutex_unlock(&cm.lock);
	free(e);
	return 0;
}

/* ---- IDs ------------------------------------------------------------------ */
static struct cm_id *id_new(struct cm_chan *chan, void *context,
			    enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct cm_id *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (!chan) {
		chan = chan_new();
		if (!chan) {
			free(c);
			return NULL;
		}
		c->sync = true;
	}
	c->chan = chan;
	chan->nids++;
	c->port_fd = -1;
	c->iw_fd = -1;
	pthread_cond_init(&c->cond, NULL);
	c->id.channel = &chan->ch;
	c->id.context = context;
	c->id.ps = ps;
	c->id.qp_type = qpt;
	c->next = cm.core.ids;
	cm.core.ids = c;
	return c;
}

/* ---- the core's surroundings (struct cm_ops) ------------------------------ */
static struct cm_id *op_id_new(struct cm_core *k, struct cm_id *l,
			       enum ibv_qp_type qpt)
{
	(void)k;
	return id_new(l->chan, l->id.context, l->id.ps, qpt);
}

static int op_send_mad(struct cm_core *k, struct cm_dev *dev,
		       const struct sockaddr_storage *peer, uint8_t slot,
		       const uint8_t *mad)
{
	(void)k;
	return -uroce_gsi_send_port(dev->verbs, dev->port_num,
				    (const struct sockaddr *)peer, slot, mad,
				    UR_MAD_LEN);
}

static int op_modify_qp(struct cm_core *k, struct cm_id *c,
			struct ibv_qp_attr *a, int mask)
{
	(void)k;
	return -ibv_modify_qp(c->id.qp, a, mask);
}

static bool op_has_listener(struct cm_core *k, uint16_t ps,
			    const struct sockaddr *local, uint16_t port)
{
	(void)k;
	return cm__port_has_listener(ps, local, port);
}

static uint32_t op_random(struct cm_core *k)
{
	uint32_t v;

	(void)k;
	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint32_t)cm__now() * 2654435761u;
	return v;
}

static const struct cm_ops cm_ops = {
	.send_mad = op_send_mad,
	.queue_event = queue_event,
	.modify_qp = op_modify_qp,
	.id_new = op_id_new,
	.has_listener = op_has_listener,
	.random = op_random,
	.timer_kick = timer_kick,
};

static int cm_err(int ret)
{
	if (ret < 0) {
		errno = -ret;
		return -1;
	}
	return 0;
}

static enum ibv_qp_type ps_qp_type(enum rdma_port_space ps)
{
	return ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD
						       : IBV_QPT_RC;
}

static int create_id(struct rdma_event_channel *channel,
		     struct rdma_cm_id **id, void *context,
		     enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct cm_id *c;
	int ret;

	if (!id)
		return cm_err(-EINVAL);
	if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB &&
	    ps != RDMA_PS_IPOIB)
		return cm_err(-EINVAL);
	cm_global_init();
	pthread_mutex_lock(&cm.lock);
	ret = cm__devs_open();
	c = ret ? NULL
		: id_new(channel ? cm_container_of(channel, struct cm_chan,
							ch)
				      : NULL,
			      context, ps, qpt);
	pthread_mutex_unlock(&cm.lock);
	if (!c)
		return cm_err(ret ? ret : -ENOMEM);
	*id = &c->id;
	return 0;
}

CM_EXPORT int rdma_create_id(struct rdma_event_channel *channel,
			     struct rdma_cm_id **id, void *context,
			     enum rdma_port_space ps)
{
	return create_id(channel, id, context, ps, ps_qp_type(ps));
}

/* Drop events of @c not yet handed out (cm.lock held). */
static void purge_events(struct cm_id *c)
{
	struct cm_event **pp = &c->chan->head, *e;

	c->chan->tail = &c->chan->head;
	while ((e = *pp)) {
		if (e->owner == c) {
			*pp = e->next;
			c->events--;
			free(e);
			continue;
		}
		c->chan->tail = &e->next;
		pp = &e->next;
	}
}

static void ack_stored_event(struct cm_id *c)
{
	if (c->id.event) {
		rdma_ack_cm_event(c->id.event);
		c->id.event = NULL;
	}
}

/* The ID behind @id with cm.lock held, its stored event acked first if
 * @ack; NULL (and no lock) if @id is NULL. */
static struct cm_id *lock_id(struct rdma_cm_id *id, bool ack)
{
	struct cm_id *c;

	if (!id)
		return NULL;
	c = to_cid(id);
	if (ack)
		ack_stored_event(c);
	pthread_mutex_lock(&cm.lock);
	return c;
}

static int unlock_err(int ret)
{
	pthread_mutex_unlock(&cm.lock);
	return cm_err(ret);
}

/*
 * A process that exits with connections up: on Linux the kernel destroys
 * its IDs and the CM sends DREQs and REJs, so a peer learns at once.
 * Ours live in the process: send them (once; nobody is left to resend)
 * before the devices close. Skipped if another thread holds the lock.
 */
__attribute__((destructor)) static void cm_exit(void)
{
	if (pthread_mutex_trylock(&cm.lock))
		return;
	for (struct cm_id *c = cm.core.ids; c; c = c->next)
		if (!c->destroying)
			cm__tell_peer(c, cm__now());
	pthread_mutex_unlock(&cm.lock);
}

/* ---- multicast ------------------------------------------------------------ */
/*
 * rdma_join_multicast(_ex) / rdma_leave_multicast on RoCE: the MGID is the
 * group's IP address as a GID (IPv4-mapped for IPv4, as Linux's
 * cma_iboe_set_mgid makes it for RoCEv2), there is no SA to ask, and the
 * join completes at once with RDMA_CM_EVENT_MULTICAST_JOIN, whose UD
 * parameters address the group (QPN 0xFFFFFF, the ID's Q_Key, an AH to
 * the MGID) and whose private_data is the join's context, as librdmacm's.
 * A full member's QP (if it has one) is attached to the group
 * (ibv_attach_mcast), outside cm.lock: the engine's receive path takes
 * cm.lock under its own locks (QP1).
 */
#define CM_MCAST_QPN 0xffffffu /* a UD send to a group (IBTA 10.5) */
static int sync_wait(struct cm_id *c);

static bool sa_is_mcast(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return IN_MULTICAST(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	return sa->sa_family == AF_INET6 &&
	       IN6_IS_ADDR_MULTICAST(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

static int join(struct rdma_cm_id *id, struct sockaddr *addr, uint32_t flags,
		void *context)
{
	struct cm_mc *m, **pp;
	struct cm_event *e;
	struct cm_id *c;
	int ret = 0;

	if (!id || !addr || !sa_is_mcast(addr))
		return cm_err(-EINVAL);
	if (flags != RDMA_MC_JOIN_FLAG_FULLMEMBER &&
	    flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return cm_err(-EINVAL);
	m = calloc(1, sizeof(*m));
	if (!m)
		return cm_err(-ENOMEM);
	memcpy(&m->addr, addr, cm__sa_len(addr));
	cm__gid_from_sa(&m->mgid, addr);
	m->context = context;
	c = lock_id(id, true);
	/* A UD ID with an address on a device (bound or resolved). */
	if (!c->dev || id->qp_type != IBV_QPT_UD ||
	    addr->sa_family != id->route.addr.src_addr.sa_family)
		ret = -EINVAL;
	for (struct cm_mc *o = c->mc; !ret && o; o = o->next)
		if (same_ip(addr, &o->addr))
			ret = -EADDRINUSE;
	if (ret) {
		free(m);
		return unlock_err(ret);
	}
	m->next = c->mc;
	c->mc = m;
	pthread_mutex_unlock(&cm.lock);

	if (flags == RDMA_MC_JOIN_FLAG_FULLMEMBER && id->qp) {
		ret = ibv_attach_mcast(id->qp, &m->mgid, 0);
		if (ret) {
			pthread_mutex_lock(&cm.lock);
			for (pp = &c->mc; *pp != m; pp = &(*pp)->next)
				;
			*pp = m->next;
			pthread_mutex_unlock(&cm.lock);
			free(m);
			return cm_err(-ret);
		}
		m->attached = true;
	}
	pthread_mutex_lock(&cm.lock);
	ret = queue_event(&cm.core, c, RDMA_CM_EVENT_MULTICAST_JOIN, 0, NULL,
			  0, &e);
	if (!ret) {
		struct rdma_ud_param *ud = &e->ev.param.ud;

		ud->private_data = context;
		ud->qp_num = CM_MCAST_QPN;
		ud->qkey = c->qkey ? c->qkey : CMA_UDP_QKEY;
		ud->ah_attr.is_global = 1;
		ud->ah_attr.port_num = c->dev->port_num;
		ud->ah_attr.grh.dgid = m->mgid;
		ud->ah_attr.grh.sgid_index = (uint8_t)cm__gid_index(c);
		ud->ah_attr.grh.hop_limit = 1; /* IP multicast's default TTL */
		ud->ah_attr.grh.traffic_class = c->tos;
	}
	pthread_mutex_unlock(&cm.lock);
	if (ret)
		return cm_err(ret);
	return sync_wait(c);
}

CM_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
				  void *context)
{
	return join(id, addr, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

CM_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
				     struct rdma_cm_join_mc_attr_ex *attr,
				     void *context)
{
	if (!attr || (attr->comp_mask & ~(uint32_t)(RDMA_CM_JOIN_MC_ATTR_ADDRESS |
						    RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS)) ||
	    !(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS))
		return cm_err(-EINVAL);
	return join(id, attr->addr,
		    (attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS)
			    ? attr->join_flags
			    : RDMA_MC_JOIN_FLAG_FULLMEMBER,
		    context);
}

CM_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cm_mc *m, **pp;
	struct cm_id *c;

	if (!id || !addr)
		return cm_err(-EINVAL);
	c = lock_id(id, false);
	for (pp = &c->mc; *pp && !same_ip(addr, &(*pp)->addr); pp = &(*pp)->next)
		;
	m = *pp;
	if (!m)
		return unlock_err(-EADDRNOTAVAIL);
	*pp = m->next;
	pthread_mutex_unlock(&cm.lock);
	if (m->attached && id->qp)
		(void)ibv_detach_mcast(id->qp, &m->mgid, 0);
	free(m);
	return 0;
}

/* The groups an ID still has when it goes (outside cm.lock). */
static void leave_all(struct cm_id *c)
{
	while (c->mc) {
		struct cm_mc *m = c->mc;

		c->mc = m->next;
		if (m->attached && c->id.qp)
			(void)ibv_detach_mcast(c->id.qp, &m->mgid, 0);
		free(m);
	}
}

CM_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cm_id *c, **pp;

	c = lock_id(id, true);
	if (!c)
		return cm_err(-EINVAL);
	c->destroying = true;
	if (cm__is_iw(c))
		cm__iw_destroy(c); /* TCP: no message to send */
	else
		cm__tell_peer(c, cm__now());
	c->deadline = 0;
	purge_events(c);
	while (c->events > 0)
		pthread_cond_wait(&c->cond, &cm.lock);
	for (pp = &cm.core.ids; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	for (struct cm_id *o = cm.core.ids; o; o = o->next)
		if (o->listen == c)
			o->listen = NULL;
	c->chan->nids--;
	pthread_mutex_unlock(&cm.lock);
	leave_all(c);
	cm__port_release(c);
	if (c->sync)
		chan_free(c->chan);
	free(c->qp_init);
	pthread_cond_destroy(&c->cond);
	free(c);
	return 0;
}

/* Synchronous IDs: wait for the operation's event (librdmacm's
 * ucma_complete): kept in id->event until the next call. */
static int sync_wait(struct cm_id *c)
{
	struct rdma_cm_event *ev;

	if (!c->sync)
		return 0;
	if (rdma_get_cm_event(c->id.channel, &ev))
		return -1;
	c->id.event = ev;
	if (ev->status) {
		if (ev->event == RDMA_CM_EVENT_REJECTED)
			errno = ECONNREFUSED;
		else
			errno = ev->status < 0 ? -ev->status : ev->status;
		return -1;
	}
	return 0;
}

static void set_src(struct cm_id *c, struct cm_dev *dev, int gid)
{
	c->dev = dev;
	c->id.verbs = dev->verbs;
	c->id.port_num = dev->port_num;
	if (!c->id.pd)
		c->id.pd = dev->pd;
	c->id.route.addr.addr.ibaddr.sgid = dev->gid[gid];
	c->id.route.addr.addr.ibaddr.pkey = htons(UR_DEFAULT_PKEY);
}

static int bind_locked(struct cm_id *c, const struct sockaddr *addr)
{
	struct cm_dev *dev = NULL;
	int gid = 0, ret;
	bool any;

	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	if (c->state != CMS_IDLE || c->bound)
		return -EINVAL;
	any = cm__sa_is_any(addr);
	if (!any) {
		dev = cm__dev_by_ip(addr, &gid);
		/* As Linux: a loopback address binds with no device yet
		 * (libfabric's verbs provider probes 127.0.0.1 and drops
		 * the whole provider if that fails). */
		if (!dev && !cm__sa_is_loopback(addr))
			return -EADDRNOTAVAIL;
	}
	memset(&c->id.route.addr.src_storage, 0, sizeof(struct sockaddr_storage));
	memcpy(&c->id.route.addr.src_storage, addr, cm__sa_len(addr));
	ret = cm__port_reserve(c, addr, any);
	if (ret)
		return ret;
	if (dev)
		set_src(c, dev, gid);
	c->state = CMS_BOUND;
	return 0;
}

CM_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	int ret;

	if (!id || !addr)
		return cm_err(-EINVAL);
	pthread_mutex_lock(&cm.lock);
	ret = bind_locked(to_cid(id), addr);
	return unlock_err(ret);
}

/* Pick our address for @dst: the routing table's source if it is one of
 * our devices' addresses, else the only device (UROCE_IP). */
static int pick_src(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	struct sockaddr_storage r;

	if (!cm__route_src(dst, &r) && cm__dev_by_ip((struct sockaddr *)&r,
						       NULL)) {
		*src = r;
	} else if (cm.ndevs == 1) {
		for (int g = 0; g < cm.devs[0].ngid; g++)
			if (cm.devs[0].addr[g].ss_family == dst->sa_family) {
				*src = cm.devs[0].addr[g];
				goto found;
			}
		return -EADDRNOTAVAIL;
	} else {
		return -ENETUNREACH;
	}
found:
	cm__sa_set_port((struct sockaddr *)src, 0);
	return 0;
}

CM_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				struct sockaddr *dst_addr, int timeout_ms)
{
	struct cm_id *c;
	struct sockaddr_storage src;
	int ret = 0;

	(void)timeout_ms; /* resolution is local and immediate */
	if (!dst_addr ||
	    (dst_addr->sa_family != AF_INET && dst_addr->sa_family != AF_INET6))
		return cm_err(-EINVAL);
	c = lock_id(id, true);
	if (!c)
		return cm_err(-EINVAL);
	if (!c->bound) {
		if (src_addr && src_addr->sa_family) {
			memset(&src, 0, sizeof(src));
			memcpy(&src, src_addr, cm__sa_len(src_addr));
		} else {
			ret = pick_src(dst_addr, &src);
		}
		if (!ret)
			ret = bind_locked(c, (struct sockaddr *)&src);
	} else if (!c->dev) {
		ret = -EINVAL; /* bound to a wildcard: which device? */
	}
	if (!ret && c->id.route.addr.src_addr.sa_family != dst_addr->sa_family)
		ret = -EAFNOSUPPORT;
	if (ret)
		return unlock_err(ret);
	memset(&c->id.route.addr.dst_storage, 0, sizeof(struct sockaddr_storage));
	memcpy(&c->id.route.addr.dst_storage, dst_addr, cm__sa_len(dst_addr));
	cm__gid_from_sa(&c->id.route.addr.addr.ibaddr.dgid, dst_addr);
	c->peer = c->id.route.addr.dst_storage;
	cm__sa_set_port((struct sockaddr *)&c->peer, 0);
	c->state = CMS_ADDR_RESOLVED;
	queue_event(&cm.core, c, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, 0, NULL);
	pthread_mutex_unlock(&cm.lock);
	return sync_wait(c);
}

CM_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cm_id *c;

	(void)timeout_ms;
	c = lock_id(id, true);
	if (!c)
		return cm_err(-EINVAL);
	if (c->state != CMS_ADDR_RESOLVED)
		return unlock_err(-EINVAL);
	c->path.sgid = c->id.route.addr.addr.ibaddr.sgid;
	c->path.dgid = c->id.route.addr.addr.ibaddr.dgid;
	c->path.pkey = htons(UR_DEFAULT_PKEY);
	c->path.hop_limit = 64;
	c->path.traffic_class = c->tos;
	c->path.mtu = c->dev->mtu;
	c->path.mtu_selector = 2; /* exactly */
	c->path.packet_life_time = CM_ACK_TIMEOUT - 1;
	c->path.reversible = 1;
	c->path.numb_path = 1;
	c->id.route.path_rec = &c->path;
	c->id.route.num_paths = 1;
	c->state = CMS_ROUTE_RESOLVED;
	queue_event(&cm.core, c, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, 0,
		    NULL);
	pthread_mutex_unlock(&cm.lock);
	return sync_wait(c);
}

CM_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cm_id *c;
	int ret = 0;

	c = lock_id(id, false);
	if (!c)
		return cm_err(-EINVAL);
	c->backlog = backlog; /* requests held unanswered (over_backlog) */
	if (!c->bound) {
		struct sockaddr_in any = { .sin_family = AF_INET };

		ret = bind_locked(c, (struct sockaddr *)&any);
	}
	if (!ret && c->state != CMS_BOUND)
		ret = -EINVAL;
	/* Whether the devices are iWARP (cm.iwarp) for a wildcard listener;
	 * no device is no error here, as before. */
	if (!ret)
		(void)cm__devs_open();
	if (!ret)
		ret = cm__port_listen(c);
	if (!ret && cm__is_iw(c))
		ret = cm__iw_listen(c, backlog);
	if (!ret)
		c->state = CMS_LISTEN;
	if (!ret && cm.core.parked)
		timer_kick(&cm.core); /* a REQ that came a moment early */
	return unlock_err(ret);
}

CM_EXPORT int rdma_connect(struct rdma_cm_id *id,
			   struct rdma_conn_param *conn_param)
{
	struct cm_id *c;
	int ret;

	c = lock_id(id, true);
	if (!c)
		return cm_err(-EINVAL);
	ret = cm__is_iw(c) ? cm__iw_connect(c, conn_param)
			   : cm__connect(c, conn_param, cm__now());
	pthread_mutex_unlock(&cm.lock);
	if (ret)
		return cm_err(ret);
	return sync_wait(c);
}

CM_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	struct cm_id *c;

	c = lock_id(id, false);
	if (!c)
		return cm_err(-EINVAL);
	return unlock_err(cm__establish(c));
}

CM_EXPORT int rdma_accept(struct rdma_cm_id *id,
			  struct rdma_conn_param *conn_param)
{
	struct cm_id *c;
	bool sidr;
	int ret;

	c = lock_id(id, true);
	if (!c)
		return cm_err(-EINVAL);
	sidr = c->state == CMS_SIDR_REQ_RCVD;
	ret = cm__is_iw(c) ? cm__iw_accept(c, conn_param)
			   : cm__accept(c, conn_param, cm__now());
	if (sidr || ret)
		return unlock_err(ret);
	pthread_mutex_unlock(&cm.lock);
	return sync_wait(c);
}

static int reject(struct rdma_cm_id *id, const void *pd, uint8_t plen)
{
	struct cm_id *c;
	int ret;

	c = lock_id(id, true);
	if (!c)
		return cm_err(-EINVAL);
	ret = cm__is_iw(c) ? cm__iw_reject(c, pd, plen)
			   : cm__reject(c, pd, plen);
	return unlock_err(ret);
}

CM_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			  uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len);
}

CM_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			      uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len);
}

CM_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cm_id *c;
	int ret = 0;

	c = lock_id(id, true);
	if (!c)
		return cm_err(-EINVAL);
	ret = cm__is_iw(c) ? cm__iw_disconnect(c)
			   : cm__disconnect(c, cm__now());
	return unlock_err(ret);
}

CM_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct cm_id *c;

	c = lock_id(id, false);
	if (!c)
		return cm_err(-EINVAL);
	if (event == IBV_EVENT_COMM_EST)
		cm__notify_established(c);
	pthread_mutex_unlock(&cm.lock);
	return 0;
}

CM_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id,
				struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	int ret;

	if (!id || !qp_attr || !qp_attr_mask)
		return cm_err(-EINVAL);
	pthread_mutex_lock(&cm.lock);
	ret = cm__init_qp_attr(to_cid(id), qp_attr, qp_attr_mask);
	return unlock_err(ret);
}

CM_EXPORT int rdma_get_request(struct rdma_cm_id *listen,
			       struct rdma_cm_id **id)
{
	struct cm_id *l, *c;
	struct rdma_cm_event *ev;
	struct cm_chan *ch;

	if (!listen || !id)
		return cm_err(-EINVAL);
	l = to_cid(listen);
	if (!l->sync)
		return cm_err(-EINVAL);
	for (;;) {
		if (rdma_get_cm_event(listen->channel, &ev))
			return -1;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && !ev->status)
			break;
		rdma_ack_cm_event(ev);
	}
	c = to_cid(ev->id);
	/* The new ID gets its own channel, as a synchronous ID. */
	ch = chan_new();
	pthread_mutex_lock(&cm.lock);
	if (ch) {
		c->chan->nids--;
		c->chan = ch;
		ch->nids++;
		c->id.channel = &ch->ch;
		c->sync = true;
	}
	pthread_mutex_unlock(&cm.lock);
	c->id.event = ev;
	if (l->qp_init) {
		struct ibv_qp_init_attr_ex a = *l->qp_init;

		a.pd = listen->pd ? listen->pd : c->id.pd;
		if (rdma_create_qp_ex(&c->id, &a)) {
			int err = errno;

			rdma_reject(&c->id, NULL, 0);
			rdma_destroy_id(&c->id);
			errno = err;
			return -1;
		}
	}
	*id = &c->id;
	return 0;
}

CM_EXPORT int rdma_migrate_id(struct rdma_cm_id *id,
			      struct rdma_event_channel *channel)
{
	struct cm_id *c;
	struct cm_chan *to, *from;
	struct cm_event **pp, *e, *moved = NULL, **mt = &moved;

	if (!id)
		return cm_err(-EINVAL);
	c = to_cid(id);
	to = channel ? cm_container_of(channel, struct cm_chan, ch) : chan_new();
	if (!to)
		return cm_err(-ENOMEM);
	pthread_mutex_lock(&cm.lock);
	from = c->chan;
	/* Move the ID's queued events along. */
	pp = &from->head;
	from->tail = &from->head;
	while ((e = *pp)) {
		if (e->owner == c) {
			uint64_t v;

			*pp = e->next;
			e->next = NULL;
			*mt = e;
			mt = &e->next;
			if (read(from->ch.fd, &v, sizeof(v)) < 0)
				(void)0;
			continue;
		}
		from->tail = &e->next;
		pp = &e->next;
	}
	for (e = moved; e; e = moved) {
		uint64_t one = 1;

		moved = e->next;
		e->next = NULL;
		*to->tail = e;
		to->tail = &e->next;
		if (write(to->ch.fd, &one, sizeof(one)) < 0)
			(void)0;
	}
	from->nids--;
	to->nids++;
	c->chan = to;
	c->id.channel = &to->ch;
	pthread_mutex_unlock(&cm.lock);
	if (c->sync && from != to)
		chan_free(from);
	c->sync = !channel;
	return 0;
}

/* ---- QPs ------------------------------------------------------------------ */
static void destroy_cqs(struct cm_id *c)
{
	if (!c->own_cqs)
		return;
	if (c->id.send_cq && c->id.send_cq != c->id.recv_cq)
		ibv_destroy_cq(c->id.send_cq);
	if (c->id.recv_cq)
		ibv_destroy_cq(c->id.recv_cq);
	if (c->id.send_cq_channel)
		ibv_destroy_comp_channel(c->id.send_cq_channel);
	if (c->id.recv_cq_channel)
		ibv_destroy_comp_channel(c->id.recv_cq_channel);
	c->id.send_cq = c->id.recv_cq = NULL;
	c->id.send_cq_channel = c->id.recv_cq_channel = NULL;
	c->own_cqs = false;
}

/* librdmacm's ucma_create_cqs: a CQ and a channel per direction, for
 * the rdma_verbs.h helpers (rdma_get_send_comp/rdma_get_recv_comp). */
static int create_cqs(struct cm_id *c, uint32_t send_size, uint32_t recv_size)
{
	struct ibv_context *v = c->id.verbs;

	c->own_cqs = true;
	c->id.recv_cq_channel = ibv_create_comp_channel(v);
	c->id.send_cq_channel = ibv_create_comp_channel(v);
	if (!c->id.recv_cq_channel || !c->id.send_cq_channel)
		goto err;
	c->id.recv_cq = ibv_create_cq(v, (int)(recv_size ? recv_size : 1),
				      &c->id, c->id.recv_cq_channel, 0);
	c->id.send_cq = ibv_create_cq(v, (int)(send_size ? send_size : 1),
				      &c->id, c->id.send_cq_channel, 0);
	if (!c->id.recv_cq || !c->id.send_cq)
		goto err;
	return 0;
err:
	destroy_cqs(c);
	return -ENOMEM;
}

CM_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id,
				struct ibv_qp_init_attr_ex *attr)
{
	struct cm_id *c;
	struct ibv_qp *qp;
	struct ibv_qp_attr a;
	int mask, ret;

	if (!id || !attr || !id->verbs)
		return cm_err(-EINVAL);
	c = to_cid(id);
	if (id->qp)
		return cm_err(-EINVAL);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = id->pd;
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
	}
	if (!attr->pd || attr->pd->context != id->verbs)
		return cm_err(-EINVAL);
	if (!attr->qp_type)
		attr->qp_type = id->qp_type;
	if (!attr->srq)
		attr->srq = id->srq;
	if (!attr->send_cq && !attr->recv_cq) {
		ret = create_cqs(c, attr->cap.max_send_wr, attr->cap.max_recv_wr);
		if (ret)
			return cm_err(ret);
		attr->send_cq = id->send_cq;
		attr->recv_cq = id->recv_cq;
	} else if (!attr->send_cq || !attr->recv_cq) {
		return cm_err(-EINVAL);
	}
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp) {
		ret = -errno;
		goto err_cqs;
	}
	id->qp = qp;
	id->pd = attr->pd;
	/* Ready to post receives (and, unconnected, sends). */
	pthread_mutex_lock(&cm.lock);
	a.qp_state = IBV_QPS_INIT;
	ret = cm__init_qp_attr(c, &a, &mask);
	if (!ret)
		ret = -ibv_modify_qp(qp, &a, mask);
	if (!ret && id->qp_type == IBV_QPT_UD) {
		ret = cm__modify_qp(c, IBV_QPS_RTR);
		if (!ret)
			ret = cm__modify_qp(c, IBV_QPS_RTS);
	}
	pthread_mutex_unlock(&cm.lock);
	if (ret)
		goto err_qp;
	return 0;
err_qp:
	id->qp = NULL;
	ibv_destroy_qp(qp);
err_cqs:
	destroy_cqs(c);
	return cm_err(ret);
}

CM_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex a;
	int ret;

	if (!id || !qp_init_attr)
		return cm_err(-EINVAL);
	memset(&a, 0, sizeof(a));
	memcpy(&a, qp_init_attr, sizeof(*qp_init_attr));
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd ? pd : id->pd;
	ret = rdma_create_qp_ex(id, &a);
	if (!ret) {
		qp_init_attr->send_cq = a.send_cq;
		qp_init_attr->recv_cq = a.recv_cq;
		qp_init_attr->srq = a.srq;
		qp_init_attr->qp_type = a.qp_type;
		qp_init_attr->cap = a.cap;
	}
	return ret;
}

CM_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (!id || !id->qp)
		return;
	ibv_destroy_qp(id->qp);
	id->qp = NULL;
	destroy_cqs(to_cid(id));
}

CM_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id,
				 struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;

	if (!id || !attr || !id->verbs)
		return cm_err(-EINVAL);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = id->pd;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	srq = ibv_create_srq_ex(id->verbs, attr);
	if (!srq)
		return -1;
	id->srq = srq;
	return 0;
}

CM_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			      struct ibv_srq_init_attr *attr)
{
	struct ibv_srq *srq;

	if (!id || !attr || !(pd ? pd : id->pd))
		return cm_err(-EINVAL);
	srq = ibv_create_srq(pd ? pd : id->pd, attr);
	if (!srq)
		return -1;
	id->srq = srq;
	return 0;
}

CM_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id && id->srq) {
		ibv_destroy_srq(id->srq);
		id->srq = NULL;
	}
}

/* ---- endpoints (rdma_verbs.h style) ------------------------------------ */
CM_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
			     struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cid;
	struct cm_id *c;
	int ret;

	if (!id || !res)
		return cm_err(-EINVAL);
	ret = create_id(NULL, &cid, NULL, (enum rdma_port_space)res->ai_port_space,
			(enum ibv_qp_type)res->ai_qp_type);
	if (ret)
		return ret;
	c = to_cid(cid);
	if (res->ai_flags & RAI_PASSIVE) {
		ret = rdma_bind_addr(cid, res->ai_src_addr);
	} else {
		ret = rdma_resolve_addr(cid, res->ai_src_addr, res->ai_dst_addr,
					5000);
		if (!ret)
			ret = rdma_resolve_route(cid, 5000);
	}
	if (ret)
		goto err;
	if (pd)
		cid->pd = pd;
	if (qp_init_attr) {
		if (res->ai_flags & RAI_PASSIVE) {
			c->qp_init = calloc(1, sizeof(*c->qp_init));
			if (!c->qp_init) {
				errno = ENOMEM;
				ret = -1;
				goto err;
			}
			memcpy(c->qp_init, qp_init_attr, sizeof(*qp_init_attr));
		} else {
			ret = rdma_create_qp(cid, pd, qp_init_attr);
			if (ret)
				goto err;
		}
	}
	*id = cid;
	return 0;
err:
	ret = errno;
	rdma_destroy_id(cid);
	errno = ret;
	return -1;
}

CM_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	rdma_destroy_qp(id);
	rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

/* ---- misc ------------------------------------------------------------------ */
CM_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
			      void *optval, size_t optlen)
{
	struct cm_id *c;

	if (!id || !optval)
		return cm_err(-EINVAL);
	c = to_cid(id);
	if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH)
		return 0; /* our route is the IP route */
	if (level != RDMA_OPTION_ID)
		return cm_err(-ENOSYS);
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		if (optlen != sizeof(uint8_t))
			return cm_err(-EINVAL);
		c->tos = *(uint8_t *)optval;
		c->tos_set = true;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
		return optlen == sizeof(int) ? 0 : cm_err(-EINVAL);
	case RDMA_OPTION_ID_AFONLY:
		if (optlen != sizeof(int))
			return cm_err(-EINVAL);
		c->afonly = *(int *)optval != 0;
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (optlen != sizeof(uint8_t))
			return cm_err(-EINVAL);
		c->ack_timeout = *(uint8_t *)optval;
		c->ack_timeout_set = true;
		return 0;
	default:
		return cm_err(-ENOSYS);
	}
}

CM_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return id ? htons(cm__sa_port(&id->route.addr.src_addr)) : 0;
}

CM_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return id ? htons(cm__sa_port(&id->route.addr.dst_addr)) : 0;
}

CM_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned int)event < sizeof(names) / sizeof(names[0]))
		return names[event];
	return "UNKNOWN EVENT";
}

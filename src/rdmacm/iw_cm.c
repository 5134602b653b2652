// SPDX-License-Identifier: MIT
/*
 * rdma_cm on an iWARP device (UROCE_IWARP=1), as Linux's iw_cm does it for
 * siw: the connection is a TCP connection to the rdma_cm port (the TCP
 * port is the port space's port), then the MPA Request and Reply (RFC
 * 5044 7, RFC 6581) carry the private data of rdma_connect and
 * rdma_accept/rdma_reject. No CM MADs, no path records.
 *
 * One thread (started with the first listener or connect) waits in epoll
 * on the listeners, on the connections a listener accepted until their
 * MPA Request is whole (then RDMA_CM_EVENT_CONNECT_REQUEST), and on the
 * connects in progress (then the QP gets its socket: uroce_iw_connect).
 * From there the engine's stream thread runs the connection and tells us
 * (iw_news) that it is established, rejected, failed or disconnected.
 * Everything here runs under cm.lock; IDs are named by a cookie in what
 * outlives them (epoll, stream news).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uroce/uroce.h>

#include "cm_priv.h"
#include "ur_iwarp.h"
#include "ur_log.h"

#define IW_REQ_MAX (UR_MPA_RR_LEN + UR_MPA_PD_MAX)
#define IW_PD_MAX (UR_MPA_PD_MAX - UR_MPA_V2_LEN)
/* A connection whose MPA Request is not whole by then is closed (siw
 * waits as long: MPAREQ_TIMEOUT). */
#define IW_REQ_TIMEOUT_NS (10ull * 1000000000ull)

enum iw_kind { IW_LISTEN, IW_INCOMING, IW_CONNECTING };

/* A socket the thread waits on. */
struct iw_sock {
	struct iw_sock *next;
	uint64_t key;     /* epoll's data */
	enum iw_kind kind;
	int fd;
	uint64_t cookie;  /* its ID (listener, or the connecting ID) */
	size_t have;      /* incoming: Request bytes so far */
	uint64_t since;   /* incoming: accepted at (cm__now) */
	uint8_t buf[IW_REQ_MAX];
	/* connecting: the Request's private data and IRD/ORD */
	uint8_t pd[IW_PD_MAX];
	uint8_t pd_len, ird, ord;
};

static struct {
	int ep;
	bool started;
	struct iw_sock *socks;
	uint64_t next_key, next_cookie;
} iw = { .ep = -1 };

bool cm__is_iw(const struct cm_id *c)
{
	return c->dev ? c->dev->iwarp : cm.iwarp;
}

static struct cm_id *id_by_cookie(uint64_t cookie)
{
	for (struct cm_id *c = cm.core.ids; c; c = c->next)
		if (c->iw_cookie == cookie && !c->destroying)
			return c;
	return NULL;
}

static uint64_t cookie_of(struct cm_id *c)
{
	if (!c->iw_cookie)
		c->iw_cookie = ++iw.next_cookie;
	return c->iw_cookie;
}

static void sock_free(struct iw_sock *s, bool close_fd)
{
	for (struct iw_sock **pp = &iw.socks; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	epoll_ctl(iw.ep, EPOLL_CTL_DEL, s->fd, NULL);
	if (close_fd)
		close(s->fd);
	free(s);
}

static void *iw_main(void *arg);

static struct iw_sock *sock_add(enum iw_kind kind, int fd, uint64_t cookie,
				uint32_t events)
{
	struct iw_sock *s = calloc(1, sizeof(*s));
	struct epoll_event ev = { .events = events };

	if (!s)
		return NULL;
	if (iw.ep < 0) {
		iw.ep = epoll_create1(EPOLL_CLOEXEC);
		if (iw.ep < 0) {
			free(s);
			return NULL;
		}
	}
	if (!iw.started) {
		pthread_attr_t ta;
		pthread_t t;

		pthread_attr_init(&ta);
		pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
		iw.started = !pthread_create(&t, &ta, iw_main, NULL);
		pthread_attr_destroy(&ta);
		if (!iw.started) {
			free(s);
			return NULL;
		}
	}
	s->kind = kind;
	s->fd = fd;
	s->cookie = cookie;
	s->key = ++iw.next_key;
	ev.data.u64 = s->key;
	if (epoll_ctl(iw.ep, EPOLL_CTL_ADD, fd, &ev)) {
		free(s);
		return NULL;
	}
	s->next = iw.socks;
	iw.socks = s;
	return s;
}

/* ---- the stream's news (engine stream thread, no lock held) ------------- */
static void iw_news(void *arg, enum uroce_iw_event ev, int err,
		    const void *pd, size_t pd_len)
{
	uint64_t cookie = (uint64_t)(uintptr_t)arg;
	const struct cm_ops *ops = cm.core.ops;
	struct cm_id *c;

	pthread_mutex_lock(&cm.lock);
	c = id_by_cookie(cookie);
	if (!c) {
		pthread_mutex_unlock(&cm.lock);
		return;
	}
	if (pd_len > UR_MAD_LEN)
		pd_len = UR_MAD_LEN;
	switch (ev) {
	case UROCE_IW_ESTABLISHED:
		c->state = CMS_ESTABLISHED;
		/* The active side hears the Reply's private data. */
		ops->queue_event(&cm.core, c, RDMA_CM_EVENT_ESTABLISHED, 0,
				 c->passive ? NULL : pd,
				 c->passive ? 0 : pd_len, NULL);
		break;
	case UROCE_IW_REJECTED:
		c->state = CMS_ERROR;
		ops->queue_event(&cm.core, c, RDMA_CM_EVENT_REJECTED,
				 -ECONNREFUSED, pd, pd_len, NULL);
		break;
	case UROCE_IW_FAILED:
		c->state = CMS_ERROR;
		ops->queue_event(&cm.core, c,
				 err == -ETIMEDOUT ? RDMA_CM_EVENT_UNREACHABLE
						   : RDMA_CM_EVENT_CONNECT_ERROR,
				 err ? err : -ECONNRESET, NULL, 0, NULL);
		break;
	case UROCE_IW_DISCONNECTED:
		c->state = CMS_DISCONNECTED;
		ops->queue_event(&cm.core, c, RDMA_CM_EVENT_DISCONNECTED, 0,
				 NULL, 0, NULL);
		break;
	}
	pthread_mutex_unlock(&cm.lock);
}

/* ---- the thread ----------------------------------------------------------- */
static void on_accept(struct iw_sock *l)
{
	int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct iw_sock *s;

	if (fd < 0)
		return;
	s = sock_add(IW_INCOMING, fd, l->cookie, EPOLLIN);
	if (!s)
		close(fd);
	else
		s->since = cm__now();
}

/* A whole MPA Request on a listener's connection: a new ID and its
 * RDMA_CM_EVENT_CONNECT_REQUEST with the Request's private data. */
static void on_request(struct iw_sock *s, const struct ur_mpa_rr *rr,
		       size_t used)
{
	struct sockaddr_storage la, ra;
	socklen_t ll = sizeof(la), rl = sizeof(ra);
	struct cm_id *l = id_by_cookie(s->cookie), *c;
	struct cm_event *ev = NULL;
	struct cm_dev *dev;
	int gid = 0;

	if (!l || l->state != CMS_LISTEN ||
	    getsockname(s->fd, (struct sockaddr *)&la, &ll) ||
	    getpeername(s->fd, (struct sockaddr *)&ra, &rl)) {
		sock_free(s, true);
		return;
	}
	dev = cm__dev_by_ip((struct sockaddr *)&la, &gid);
	c = dev ? cm.core.ops->id_new(&cm.core, l, IBV_QPT_RC) : NULL;
	if (!c) {
		sock_free(s, true);
		return;
	}
	c->iw_req = malloc(used);
	if (!c->iw_req) {
		sock_free(s, true);
		return;
	}
	memcpy(c->iw_req, s->buf, used);
	c->iw_req_len = used;
	c->listen = l;
	c->passive = true;
	c->dev = dev;
	c->id.verbs = dev->verbs;
	c->id.port_num = dev->port_num;
	c->id.pd = dev->pd;
	c->id.route.addr.addr.ibaddr.sgid = dev->gid[gid];
	memcpy(&c->id.route.addr.src_storage, &la, ll);
	memcpy(&c->id.route.addr.dst_storage, &ra, rl);
	cm__gid_from_sa(&c->id.route.addr.addr.ibaddr.dgid,
			(struct sockaddr *)&ra);
	c->state = CMS_REQ_RCVD;
	c->iw_fd = s->fd;
	cookie_of(c);
	sock_free(s, false); /* the ID has the socket now */
	cm.core.ops->queue_event(&cm.core, c, RDMA_CM_EVENT_CONNECT_REQUEST, 0,
				 rr->pd, rr->pd_len, &ev);
	if (ev) {
		/* The initiator's IRD/ORD, as rdma_cm reports them. */
		ev->ev.param.conn.responder_resources =
			(uint8_t)(rr->ord > 255 ? 255 : rr->ord);
		ev->ev.param.conn.initiator_depth =
			(uint8_t)(rr->ird > 255 ? 255 : rr->ird);
	}
}

static void on_incoming(struct iw_sock *s)
{
	struct ur_mpa_rr rr;
	size_t used = 0;
	ssize_t r;

	r = recv(s->fd, s->buf + s->have, sizeof(s->buf) - s->have,
		 MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		sock_free(s, true);
		return;
	}
	s->have += (size_t)r;
	switch (ur_mpa_rr_decode(s->buf, s->have, &rr, &used)) {
	case UR_IW_OK:
		/* The initiator sends nothing before our Reply (RFC 5044
		 * 7.1.2): more bytes than the Request are an error. */
		if (rr.reply || used != s->have)
			sock_free(s, true);
		else
			on_request(s, &rr, used);
		break;
	case UR_IW_MORE:
		if (s->have == sizeof(s->buf))
			sock_free(s, true);
		break;
	default:
		sock_free(s, true); /* not MPA: siw just closes too */
		break;
	}
}

static void on_connected(struct iw_sock *s)
{
	struct cm_id *c = id_by_cookie(s->cookie);
	int err = 0, ret;
	socklen_t l = sizeof(err);

	if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &l))
		err = errno;
	if (!c) {
		sock_free(s, true);
		return;
	}
	if (err || !c->id.qp) {
		sock_free(s, true);
		c->state = CMS_ERROR;
		/* No listener: the TCP RST is iWARP's reject (iw_cm says
		 * -ECONNREFUSED in a REJECTED event). */
		cm.core.ops->queue_event(&cm.core, c,
					 err == ECONNREFUSED
						 ? RDMA_CM_EVENT_REJECTED
						 : RDMA_CM_EVENT_UNREACHABLE,
					 err ? -err : -EINVAL, NULL, 0, NULL);
		return;
	}
	epoll_ctl(iw.ep, EPOLL_CTL_DEL, s->fd, NULL);
	ret = uroce_iw_connect(c->id.qp, s->fd, s->pd, s->pd_len, s->ird,
			       s->ord, iw_news, (void *)(uintptr_t)s->cookie);
	sock_free(s, ret != 0);
	if (ret) {
		c->state = CMS_ERROR;
		cm.core.ops->queue_event(&cm.core, c,
					 RDMA_CM_EVENT_CONNECT_ERROR, -ret,
					 NULL, 0, NULL);
	}
}

static void *iw_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct epoll_event ev[16];
		bool waiting = false;
		uint64_t now;
		int n;

		pthread_mutex_lock(&cm.lock);
		for (struct iw_sock *s = iw.socks; s; s = s->next)
			waiting |= s->kind == IW_INCOMING;
		pthread_mutex_unlock(&cm.lock);
		/* Look at the Requests still coming once a second. */
		n = epoll_wait(iw.ep, ev, 16, waiting ? 1000 : -1);
		if (n < 0 && errno != EINTR)
			return NULL;
		pthread_mutex_lock(&cm.lock);
		now = cm__now();
		for (struct iw_sock *s = iw.socks, *nx; s; s = nx) {
			nx = s->next;
			if (s->kind == IW_INCOMING &&
			    now - s->since > IW_REQ_TIMEOUT_NS)
				sock_free(s, true);
		}
		for (int i = 0; i < n; i++) {
			struct iw_sock *s;

			for (s = iw.socks; s; s = s->next)
				if (s->key == ev[i].data.u64)
					break;
			if (!s)
				continue; /* closed meanwhile */
			if (s->kind == IW_LISTEN)
				on_accept(s);
			else if (s->kind == IW_INCOMING)
				on_incoming(s);
			else
				on_connected(s);
		}
		pthread_mutex_unlock(&cm.lock);
	}
	return NULL;
}

/* ---- the API's iWARP side (cm.lock held) ---------------------------------- */
int cm__iw_listen(struct cm_id *c, int backlog)
{
	const struct sockaddr *sa = &c->id.route.addr.src_addr;
	int fd, one = 1;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->sa_family == AF_INET6 && c->afonly)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, sa, cm__sa_len(sa)) ||
	    listen(fd, backlog > 0 ? backlog : CM_DEFAULT_BACKLOG)) {
		int e = errno;

		close(fd);
		return -e;
	}
	if (!sock_add(IW_LISTEN, fd, cookie_of(c), EPOLLIN)) {
		close(fd);
		return -ENOMEM;
	}
	c->iw_fd = fd;
	return 0;
}

int cm__iw_connect(struct cm_id *c, const struct rdma_conn_param *p)
{
	const struct sockaddr *src = &c->id.route.addr.src_addr;
	const struct sockaddr *dst = &c->id.route.addr.dst_addr;
	struct sockaddr_storage b;
	struct iw_sock *s;
	int fd;

	if (c->state != CMS_ROUTE_RESOLVED || !c->id.qp ||
	    c->id.qp_type != IBV_QPT_RC)
		return -EINVAL;
	if (p && p->private_data_len && !p->private_data)
		return -EINVAL;
	fd = socket(dst->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0)
		return -errno;
	/* From our device's address; the port is TCP's own choice, made
	 * at connect() knowing the destination (a port picked at bind()
	 * may collide with the previous connection's TIME_WAIT). */
	setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &(int){1},
		   sizeof(int));
	memset(&b, 0, sizeof(b));
	memcpy(&b, src, cm__sa_len(src));
	cm__sa_set_port((struct sockaddr *)&b, 0);
	if (bind(fd, (struct sockaddr *)&b, cm__sa_len(src)) ||
	    (connect(fd, dst, cm__sa_len(dst)) && errno != EINPROGRESS)) {
		int e = errno;

		close(fd);
		return -e;
	}
	s = sock_add(IW_CONNECTING, fd, cookie_of(c), EPOLLOUT);
	if (!s) {
		close(fd);
		return -ENOMEM;
	}
	if (p) {
		s->pd_len = p->private_data_len;
		if (p->private_data_len)
			memcpy(s->pd, p->private_data, p->private_data_len);
		s->ird = p->responder_resources;
		s->ord = p->initiator_depth;
	} else {
		s->ird = s->ord = 1;
	}
	c->state = CMS_REQ_SENT;
	return 0;
}

int cm__iw_accept(struct cm_id *c, const struct rdma_conn_param *p)
{
	uint8_t ird = 1, ord = 1;
	int ret;

	if (c->state != CMS_REQ_RCVD || c->iw_fd < 0 || !c->id.qp)
		return -EINVAL;
	if (p && p->private_data_len && !p->private_data)
		return -EINVAL;
	if (p) {
		ird = p->responder_resources;
		ord = p->initiator_depth;
	}
	ret = uroce_iw_accept(c->id.qp, c->iw_fd, c->iw_req, c->iw_req_len,
			      p ? p->private_data : NULL,
			      p ? p->private_data_len : 0, ird, ord, iw_news,
			      (void *)(uintptr_t)cookie_of(c));
	if (ret)
		return -ret;
	c->iw_fd = -1; /* the QP's */
	c->state = CMS_REP_SENT;
	return 0;
}

int cm__iw_reject(struct cm_id *c, const void *pd, uint8_t plen)
{
	struct ur_mpa_rr req, rep;
	uint8_t b[IW_REQ_MAX];
	size_t used;
	int n;

	if (c->state != CMS_REQ_RCVD || c->iw_fd < 0)
		return -EINVAL;
	/* The Reply with R (RFC 5044 7.1.2), in the Request's revision;
	 * then the connection closes. */
	if (ur_mpa_rr_decode(c->iw_req, c->iw_req_len, &req, &used) != UR_IW_OK)
		return -EINVAL;
	memset(&rep, 0, sizeof(rep));
	rep.reply = true;
	rep.rev = req.rev;
	rep.v2 = req.v2;
	rep.flags = UR_MPA_F_REJECT;
	rep.pd = pd;
	rep.pd_len = pd ? plen : 0;
	n = ur_mpa_rr_encode(b, sizeof(b), &rep);
	if (n > 0 && send(c->iw_fd, b, (size_t)n, MSG_NOSIGNAL) < 0)
		(void)0;
	close(c->iw_fd);
	c->iw_fd = -1;
	c->state = CMS_IDLE;
	return n < 0 ? n : 0;
}

int cm__iw_disconnect(struct cm_id *c)
{
	if (!c->id.qp)
		return -EINVAL;
	switch (c->state) {
	case CMS_ESTABLISHED:
	case CMS_REP_SENT:
	case CMS_REQ_SENT:
		c->state = CMS_DREQ_SENT; /* DISCONNECTED with the peer's FIN */
		return -uroce_iw_disconnect(c->id.qp);
	case CMS_DISCONNECTED:
	case CMS_ERROR:
		(void)uroce_iw_disconnect(c->id.qp);
		return 0;
	default:
		return -EINVAL;
	}
}

void cm__iw_destroy(struct cm_id *c)
{
	for (struct iw_sock *s = iw.socks, *n; s; s = n) {
		n = s->next;
		if (c->iw_cookie && s->cookie == c->iw_cookie)
			sock_free(s, s->fd != c->iw_fd);
	}
	if (c->iw_fd >= 0)
		close(c->iw_fd); /* a listener's, or a request never answered */
	c->iw_fd = -1;
	free(c->iw_req);
	c->iw_req = NULL;
}

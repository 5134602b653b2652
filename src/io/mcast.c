// SPDX-License-Identifier: MIT
/*
 * Multicast groups (IBTA 10.5; RoCEv2 carries them as IP multicast to UDP
 * 4791, Annex A17.4): the UD QPs attached to each group, and a socket per
 * group that receives its datagrams. The device's receive socket is bound
 * to its unicast address and so never sees a datagram to a group: each
 * group's socket is bound to the group address and the device's port and
 * joins the group on the device's interface (IP_ADD_MEMBERSHIP,
 * IPV6_JOIN_GROUP), with SO_REUSEADDR so that every process of this
 * machine attached to the group gets its own copy. Sending needs nothing:
 * our sockets are bound to the device's address, which names the
 * interface a multicast datagram leaves by (no multicast route needed,
 * also on lo in an empty network namespace), and IP_MULTICAST_LOOP (on
 * by default) gives this machine's members their copy.
 *
 * Locks: the group list changes under rx_lock and qp_lock (write), so a
 * drain (rx_lock) or a delivery (qp_lock read) never sees a group go.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ur_io_priv.h"

struct ur_mcast_grp {
	struct ur_mcast_grp *next;
	bool v6;
	uint8_t addr[16]; /* IPv4 in the first 4 bytes */
	int fd;
	unsigned int nqp, cap;
	struct ur_qp **qps;
};

static bool grp_is(const struct ur_mcast_grp *g, bool v6, const uint8_t *a)
{
	return g->v6 == v6 && !memcmp(g->addr, a, v6 ? 16 : 4);
}

/* The interface that holds our address (IPv6 joins name it by index). */
static unsigned int local_ifindex(const struct ur_engine *e)
{
	struct ifaddrs *ifa, *i;
	unsigned int idx = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i && !idx; i = i->ifa_next) {
		const struct sockaddr *sa = i->ifa_addr;

		if (!sa || sa->sa_family != e->cfg.addr.ss_family)
			continue;
		if (sa->sa_family == AF_INET6
			    ? !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr,
				      e->local.src, 16)
			    : !memcmp(&((const struct sockaddr_in *)sa)->sin_addr,
				      e->local.src, 4))
			idx = if_nametoindex(i->ifa_name);
	}
	freeifaddrs(ifa);
	return idx;
}

static int grp_open(struct ur_engine *e, struct ur_mcast_grp *g)
{
	struct sockaddr_storage ss = { 0 };
	struct epoll_event ev = { .events = EPOLLIN };
	int fd, one = 1, sz = 1 << 20, ret;
	socklen_t len;

	fd = socket(g->v6 ? AF_INET6 : AF_INET,
		    SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)))
		goto err_errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (g->v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		struct ipv6_mreq mr = { 0 };

		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		/* the destination (which group) and the traffic class (ECN) */
		setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one));
		setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof(one));
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(e->cfg.port);
		memcpy(&s6->sin6_addr, g->addr, 16);
		len = sizeof(*s6);
		if (bind(fd, (struct sockaddr *)&ss, len))
			goto err_errno;
		memcpy(&mr.ipv6mr_multiaddr, g->addr, 16);
		mr.ipv6mr_interface = local_ifindex(e);
		if (!mr.ipv6mr_interface) {
			ret = -ENODEV;
			goto err;
		}
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &mr,
			       sizeof(mr)))
			goto err_errno;
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		struct ip_mreqn mr = { 0 };

		setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
		setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
		s4->sin_family = AF_INET;
		s4->sin_port = htons(e->cfg.port);
		memcpy(&s4->sin_addr, g->addr, 4);
		len = sizeof(*s4);
		if (bind(fd, (struct sockaddr *)&ss, len))
			goto err_errno;
		memcpy(&mr.imr_multiaddr, g->addr, 4);
		memcpy(&mr.imr_address, e->local.src, 4); /* our interface */
		if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr,
			       sizeof(mr)))
			goto err_errno;
	}
	/* Both of the engine's sleeps: only its thread drains groups. */
	ev.data.fd = fd;
	if (epoll_ctl(e->ep_fd, EPOLL_CTL_ADD, fd, &ev) ||
	    epoll_ctl(e->ep_timer_fd, EPOLL_CTL_ADD, fd, &ev))
		goto err_errno;
	g->fd = fd;
	return 0;
err_errno:
	ret = -errno;
err:
	close(fd);
	return ret;
}

static void grp_close(struct ur_engine *e, struct ur_mcast_grp *g)
{
	epoll_ctl(e->ep_fd, EPOLL_CTL_DEL, g->fd, NULL);
	epoll_ctl(e->ep_timer_fd, EPOLL_CTL_DEL, g->fd, NULL);
	close(g->fd); /* leaves the group */
	free(g->qps);
	free(g);
}

int ur_engine_mcast_attach(struct ur_engine *e, struct ur_qp *qp, bool v6,
			   const uint8_t *grp)
{
	struct ur_mcast_grp *g;
	int ret = 0;

	if (v6 != e->local.v6)
		return -EAFNOSUPPORT; /* a group of the device's family */
	pthread_mutex_lock(&e->rx_lock);
	pthread_rwlock_wrlock(&e->qp_lock);
	for (g = e->mcast; g && !grp_is(g, v6, grp); g = g->next)
		;
	if (!g) {
		g = calloc(1, sizeof(*g));
		if (!g) {
			ret = -ENOMEM;
			goto out;
		}
		g->v6 = v6;
		memcpy(g->addr, grp, v6 ? 16 : 4);
		ret = grp_open(e, g);
		if (ret) {
			free(g);
			goto out;
		}
		g->next = e->mcast;
		e->mcast = g;
	}
	for (unsigned int i = 0; i < g->nqp; i++)
		if (g->qps[i] == qp)
			goto out; /* attached already: fine, as Linux's uverbs */
	if (g->nqp == g->cap) {
		unsigned int cap = g->cap ? 2 * g->cap : 4;
		struct ur_qp **n = realloc(g->qps, cap * sizeof(*n));

		if (!n) {
			ret = -ENOMEM;
			goto out;
		}
		g->qps = n;
		g->cap = cap;
	}
	g->qps[g->nqp++] = qp;
out:
	pthread_rwlock_unlock(&e->qp_lock);
	pthread_mutex_unlock(&e->rx_lock);
	return ret;
}

/* Detach @qp from @g (qp_lock write-held); true if it was attached. The
 * group goes with its last QP. */
static bool grp_detach(struct ur_engine *e, struct ur_mcast_grp **pg,
		       struct ur_qp *qp)
{
	struct ur_mcast_grp *g = *pg;

	for (unsigned int i = 0; i < g->nqp; i++) {
		if (g->qps[i] != qp)
			continue;
		g->qps[i] = g->qps[--g->nqp];
		if (!g->nqp) {
			*pg = g->next;
			grp_close(e, g);
		}
		return true;
	}
	return false;
}

int ur_engine_mcast_detach(struct ur_engine *e, struct ur_qp *qp, bool v6,
			   const uint8_t *grp)
{
	struct ur_mcast_grp **pg;
	int ret = -EINVAL;

	pthread_mutex_lock(&e->rx_lock);
	pthread_rwlock_wrlock(&e->qp_lock);
	for (pg = &e->mcast; *pg; pg = &(*pg)->next)
		if (grp_is(*pg, v6, grp)) {
			if (grp_detach(e, pg, qp))
				ret = 0;
			break;
		}
	pthread_rwlock_unlock(&e->qp_lock);
	pthread_mutex_unlock(&e->rx_lock);
	return ret;
}

void ur__mcast_qp_gone(struct ur_engine *e, struct ur_qp *qp)
{
	struct ur_mcast_grp **pg = &e->mcast;

	while (*pg) {
		struct ur_mcast_grp *g = *pg;

		if (!grp_detach(e, pg, qp) || *pg == g)
			pg = &g->next;
	}
}

void ur__mcast_close(struct ur_engine *e)
{
	while (e->mcast) {
		struct ur_mcast_grp *g = e->mcast;

		e->mcast = g->next;
		grp_close(e, g);
	}
}

int ur__mcast_drain(struct ur_engine *e, uint64_t now)
{
	int n = 0;

	for (struct ur_mcast_grp *g = e->mcast; g; g = g->next)
		n += ur__udp_drain_fd(e, g->fd, now);
	return n;
}

void ur__mcast_deliver(struct ur_engine *e, const uint8_t *buf, size_t len,
		       const struct ur_rxinfo *ri, uint64_t now)
{
	struct ur_mcast_grp *g;
	struct ur_pkt pkt;

	pthread_rwlock_rdlock(&e->qp_lock);
	if (ur_dev_rx_mcast_classify(&e->dev, buf, len, ri, &pkt))
		goto out;
	for (g = e->mcast; g && !grp_is(g, ri->path.v6, ri->path.dst);
	     g = g->next)
		;
	if (!g) {
		e->dev.cnt.rx_drop_no_qp++;
		goto out;
	}
	/* A copy for each attached QP; its Q_Key and state are its own. */
	for (unsigned int i = 0; i < g->nqp; i++) {
		ur_engine_qp_lock(g->qps[i]);
		ur_qp_rx(g->qps[i], &pkt, ri, now);
		ur_engine_qp_unlock(g->qps[i]);
	}
out:
	pthread_rwlock_unlock(&e->qp_lock);
}

// SPDX-License-Identifier: MIT
/*
 * Addresses: rdma_getaddrinfo, the routing-table source of a destination,
 * and rdma_cm ports. A port is reserved across every process on the host by
 * binding the abstract unix name uroce-cm/<udp port>/<ps>/<addr>/<port>
 * ("*" for a wildcard bind): the kernel refuses a second bind and frees the
 * name when the process dies. A listener also listen()s on it, which is how
 * a process that receives a REQ for a port it does not serve learns that a
 * sibling does (connect() succeeds) or that nobody does (ECONNREFUSED: the
 * CM answers REJ "invalid service ID").
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cm_priv.h"

/* The source address the routing table picks for @dst. */
int cm__route_src(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	struct sockaddr_storage d;
	socklen_t len = sizeof(*src);
	int fd, ret = 0;

	memcpy(&d, dst, cm__sa_len(dst));
	if (!cm__sa_port((struct sockaddr *)&d))
		cm__sa_set_port((struct sockaddr *)&d, 9);
	fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&d, cm__sa_len(dst)) ||
	    getsockname(fd, (struct sockaddr *)src, &len))
		ret = -errno;
	close(fd);
	return ret;
}

static socklen_t port_name(struct sockaddr_un *un, uint16_t ps,
			   const struct sockaddr *sa, bool any, uint16_t port)
{
	char ip[INET6_ADDRSTRLEN] = "*";
	int n;

	if (!any && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr,
			  ip, sizeof(ip));
	else if (!any)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
			  ip, sizeof(ip));
	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	n = snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1,
		     "uroce-cm/%u/%u/%s/%u", cm.udp_port, ps, ip, port);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* A socket for the port's name @un (its length in @len): the listener binds
 * it, a prober connects to it. */
static int port_socket(struct sockaddr_un *un, socklen_t *len, uint16_t ps,
		       const struct sockaddr *sa, bool any, uint16_t port)
{
	*len = port_name(un, ps, sa, any, port);
	return socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
}

static int try_bind(uint16_t ps, const struct sockaddr *sa, bool any,
		    uint16_t port)
{
	struct sockaddr_un un;
	socklen_t len;
	int fd = port_socket(&un, &len, ps, sa, any, port);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&un, len)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/**
 * cm__port_reserve() - give @c the local port of @sa (0: an ephemeral
 * one, written back into c->id.route.addr.src_addr).
 */
int cm__port_reserve(struct cm_id *c, const struct sockaddr *sa, bool any)
{
	uint16_t ps = (uint16_t)c->id.ps, port = cm__sa_port(sa);
	int fd = -EADDRINUSE;

	if (port) {
		fd = try_bind(ps, sa, any, port);
	} else {
		uint32_t r;

		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = (uint32_t)cm__now();
		/* Linux's default ip_local_port_range. */
		for (int i = 0; i < 1000 && fd < 0; i++) {
			port = (uint16_t)(32768 + (r + (uint32_t)i * 7919) %
							  28232);
			fd = try_bind(ps, sa, any, port);
		}
	}
	if (fd < 0)
		return fd == -EADDRINUSE ? -EADDRINUSE : fd;
	c->port_fd = fd;
	c->bound = true;
	cm__sa_set_port(&c->id.route.addr.src_addr, port);
	return 0;
}

int cm__port_listen(struct cm_id *c)
{
	return listen(c->port_fd, 8) ? -errno : 0;
}

void cm__port_release(struct cm_id *c)
{
	if (c->port_fd >= 0)
		close(c->port_fd);
	c->port_fd = -1;
	c->bound = false;
}

static bool has_listener(uint16_t ps, const struct sockaddr *local, bool any,
			 uint16_t port)
{
	struct sockaddr_un un;
	socklen_t len;
	int fd = port_socket(&un, &len, ps, local, any, port);
	bool yes;

	if (fd < 0)
		return false;
	yes = !connect(fd, (struct sockaddr *)&un, len) || errno == EAGAIN ||
	      errno == EINPROGRESS;
	close(fd);
	return yes;
}

/* Does any process on this host listen on @port at @local (or wildcard)? */
bool cm__port_has_listener(uint16_t ps, const struct sockaddr *local,
			    uint16_t port)
{
	return has_listener(ps, local, false, port) ||
	       has_listener(ps, local, true, port);
}

/* ---- rdma_getaddrinfo ------------------------------------------------------ */
static struct sockaddr *dup_sa(const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr *p = calloc(1, sizeof(struct sockaddr_storage));

	if (p)
		memcpy(p, sa, len);
	return p;
}

CM_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}

/* Copy @len bytes of @sa into *@to (a NULL @sa copies nothing). */
static int copy_sa(struct sockaddr **to, socklen_t *to_len,
		   const struct sockaddr *sa, socklen_t len)
{
	if (!sa || !len || *to)
		return 0;
	*to = dup_sa(sa, len);
	if (!*to)
		return -ENOMEM;
	*to_len = len;
	return 0;
}

/* No node and no service: the addresses are the hints' own (as rdma-core's
 * librdmacm, which libfabric's verbs provider relies on for a source it
 * already has). */
static int rai_from_hints(const struct rdma_addrinfo *hints,
			  struct rdma_addrinfo **res)
{
	const struct sockaddr *a = hints->ai_src_addr ? hints->ai_src_addr
						      : hints->ai_dst_addr;
	struct rdma_addrinfo *r;

	if (!a || (a->sa_family != AF_INET && a->sa_family != AF_INET6) ||
	    (hints->ai_family && hints->ai_family != a->sa_family)) {
		errno = EINVAL;
		return -1;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		goto nomem;
	r->ai_flags = hints->ai_flags;
	r->ai_family = a->sa_family;
	r->ai_qp_type = hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
	r->ai_port_space = hints->ai_port_space ? hints->ai_port_space
			   : (r->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP
							  : RDMA_PS_TCP);
	if (copy_sa(&r->ai_src_addr, &r->ai_src_len, hints->ai_src_addr,
		    hints->ai_src_len) ||
	    copy_sa(&r->ai_dst_addr, &r->ai_dst_len, hints->ai_dst_addr,
		    hints->ai_dst_len))
		goto nomem;
	*res = r;
	return 0;
nomem:
	rdma_freeaddrinfo(r);
	errno = ENOMEM;
	return -1;
}

/**
 * rdma_getaddrinfo() - IP only (no AF_IB, no route/connect data): node and
 * service through getaddrinfo(3); RAI_PASSIVE gives a source address,
 * otherwise a destination (and the hints' source if any); neither node nor
 * service: the hints' source and destination. Returns 0, an
 * EAI_* code from getaddrinfo, or -1 with errno.
 */
CM_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
			       const struct rdma_addrinfo *hints,
			       struct rdma_addrinfo **res)
{
	struct addrinfo ah = { 0 }, *ai = NULL;
	struct rdma_addrinfo *r;
	bool passive = hints && (hints->ai_flags & RAI_PASSIVE);
	int ret;

	if (!res || (!node && !service && !hints)) {
		errno = EINVAL;
		return -1;
	}
	if (hints && hints->ai_family == AF_IB) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	if (!node && !service)
		return rai_from_hints(hints, res);
	ah.ai_family = hints && hints->ai_family ? hints->ai_family : AF_UNSPEC;
	ah.ai_socktype = SOCK_STREAM;
	if (passive)
		ah.ai_flags |= AI_PASSIVE;
	if (hints && (hints->ai_flags & RAI_NUMERICHOST))
		ah.ai_flags |= AI_NUMERICHOST;
	/* A wildcard listener serves both families: prefer IPv4's. */
	if (passive && !node && ah.ai_family == AF_UNSPEC)
		ah.ai_family = AF_INET;
	ret = getaddrinfo(node, service, &ah, &ai);
	if (ret)
		return ret;
	r = calloc(1, sizeof(*r));
	if (!r)
		goto nomem;
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_family = ai->ai_family;
	r->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type
						    : IBV_QPT_RC;
	r->ai_port_space = hints && hints->ai_port_space
				   ? hints->ai_port_space
				   : (r->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP
								  : RDMA_PS_TCP);
	if (passive) {
		r->ai_src_addr = dup_sa(ai->ai_addr, ai->ai_addrlen);
		r->ai_src_len = ai->ai_addrlen;
		if (!r->ai_src_addr)
			goto nomem;
	} else {
		r->ai_dst_addr = dup_sa(ai->ai_addr, ai->ai_addrlen);
		r->ai_dst_len = ai->ai_addrlen;
		if (!r->ai_dst_addr)
			goto nomem;
	}
	/* What the lookup did not give comes from the hints. */
	if (hints && (copy_sa(&r->ai_src_addr, &r->ai_src_len,
			      hints->ai_src_addr, hints->ai_src_len) ||
		      copy_sa(&r->ai_dst_addr, &r->ai_dst_len,
			      hints->ai_dst_addr, hints->ai_dst_len)))
		goto nomem;
	if (node && ai->ai_canonname) {
		char *cn = strdup(ai->ai_canonname);

		if (passive)
			r->ai_src_canonname = cn;
		else
			r->ai_dst_canonname = cn;
	}
	freeaddrinfo(ai);
	*res = r;
	return 0;
nomem:
	if (ai)
		freeaddrinfo(ai);
	rdma_freeaddrinfo(r);
	errno = ENOMEM;
	return -1;
}

/* SPDX-License-Identifier: MIT */
/*
 * Pinned peers: a receive socket per spraying peer's address.
 *
 * Processes that share an address all bind UDP 4791 with SO_REUSEPORT, and
 * the kernel picks one of their sockets per flow by a hash of the 4-tuple
 * (fwd.c): the source port counts. A peer that sprays (docs/wire.md
 * "Spraying") sends one QP's requests from K ports, so some of them reach
 * the QP's process and the others a sibling that forwards them, later by
 * as long as that sibling takes to run (milliseconds on a loaded host).
 * The responder then sees those ports' requests late and NAKs them:
 * bench/cc_wire.sh's receiver runs three processes on one address, and
 * with 8 paths its senders resent 12,473 packets against 245 with one; a
 * capture at the receiver's interface showed no request out of order
 * there, and every PSN the responder NAKed had arrived 0.2-23 ms before
 * the NAK (median 4 ms). One process on an address: 2 resends either way
 * (bench/results/2026-12-07-spray5.md).
 *
 * A socket of the group connected to the peer's address and port 0 takes
 * that address's datagrams from every port: connected sockets score above
 * the group's unconnected ones in the kernel's lookup (udp4_lib_lookup2;
 * port 0 matches any source port), and the group's hash never picks one
 * (reuseport_select_sock_by_hash). So once a QP's process sees a sibling
 * forward it a sprayed request, it pins the peer's address: from then on
 * all of that peer's datagrams reach one socket whatever their port, ours,
 * or the first sibling's that pinned it (the lookup takes the first of
 * equal scores), which forwards them all alike. Either way one QP's ports
 * no longer arrive by two routes. At most UR_IO_PIN_MAX peers; the
 * sockets live as long as the engine. Engine state under rx_lock.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "ur_io_priv.h"
#include "ur_log.h"

static bool pinned(const struct ur_engine *e, const struct ur_ipudp *path)
{
	size_t n = path->v6 ? 16 : 4;

	for (unsigned int i = 0; i < e->npin; i++)
		if (e->pin[i].v6 == path->v6 &&
		    !memcmp(e->pin[i].addr, path->src, n))
			return true;
	return false;
}

void ur__pin_peer(struct ur_engine *e, const struct ur_ipudp *path)
{
	struct sockaddr_storage sa;
	struct epoll_event ev = {.events = EPOLLIN};
	socklen_t len;
	int fd;

	if (e->npin >= UR_IO_PIN_MAX || pinned(e, path))
		return;
	memset(&sa, 0, sizeof(sa));
	if (path->v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;

		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, path->src, 16);
		len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;

		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, path->src, 4);
		len = sizeof(*s4);
	}
	/* Remembered even if it fails: tried once per peer. */
	e->pin[e->npin].v6 = path->v6;
	memcpy(e->pin[e->npin].addr, path->src, path->v6 ? 16 : 4);
	e->pin[e->npin].fd = -1;
	e->npin++;
	if (e->pin_ep < 0) {
		e->pin_ep = epoll_create1(EPOLL_CLOEXEC);
		if (e->pin_ep < 0)
			return;
		ev.data.fd = e->pin_ep;
		if (epoll_ctl(e->ep_fd, EPOLL_CTL_ADD, e->pin_ep, &ev)) {
			close(e->pin_ep);
			e->pin_ep = -1;
			return;
		}
	}
	/* The rx socket's options (buffers, GRO, TOS), connected. */
	fd = ur__udp_open_rx(e);
	if (fd < 0)
		return;
	ev.data.fd = fd;
	if (connect(fd, (struct sockaddr *)&sa, len) ||
	    epoll_ctl(e->pin_ep, EPOLL_CTL_ADD, fd, &ev)) {
		close(fd);
		return;
	}
	e->pin[e->npin - 1].fd = fd;
	__atomic_fetch_add(&e->dev.cnt.pin_peers, 1, __ATOMIC_RELAXED);
	if (ur_log_on(UR_LOG_INFO)) {
		char ip[INET6_ADDRSTRLEN];

		if (!inet_ntop(path->v6 ? AF_INET6 : AF_INET, path->src, ip,
			       sizeof(ip)))
			ip[0] = 0;
		ur_log(UR_LOG_INFO,
		       "slot %u: %s sprays: its datagrams pinned to one socket",
		       (unsigned int)e->slot, ip);
	}
}

int ur__pin_drain(struct ur_engine *e, uint64_t now)
{
	struct epoll_event ev[UR_IO_PIN_MAX];
	int n, total = 0;

	if (e->pin_ep < 0)
		return 0;
	/* Only the sockets that hold something: one system call. */
	n = epoll_wait(e->pin_ep, ev, UR_IO_PIN_MAX, 0);
	for (int i = 0; i < n; i++)
		total += ur__udp_drain_fd(e, ev[i].data.fd, now);
	return total;
}

void ur__pin_close(struct ur_engine *e)
{
	for (unsigned int i = 0; i < e->npin; i++)
		if (e->pin[i].fd >= 0)
			close(e->pin[i].fd);
	e->npin = 0;
	if (e->pin_ep >= 0)
		close(e->pin_ep);
	e->pin_ep = -1;
}

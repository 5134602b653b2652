/* SPDX-License-Identifier: MIT */
/*
 * Sibling forwarding. Processes that share an address all bind UDP 4791 with
 * SO_REUSEPORT, and the kernel picks one of them per flow. A QPN carries its
 * owner's slot in bits 16..23; a packet that reached the wrong process is
 * passed to the owner over an abstract unix datagram socket named after the
 * address and the slot. Binding that name is also how a process claims its
 * slot: the kernel frees it when the process dies.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "ur_io_priv.h"

static socklen_t slot_name(const struct ur_engine *e, uint8_t slot,
			   struct sockaddr_un *un)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	int n;

	inet_ntop(e->local.v6 ? AF_INET6 : AF_INET, e->local.src, ip,
		  sizeof(ip));
	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	n = snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1,
		     "uroce/%u/%s/%u", e->cfg.port, ip, slot);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

int __ur_fwd_open(struct ur_engine *e)
{
	struct sockaddr_un un;
	uint8_t start;
	int fd;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (getrandom(&start, 1, 0) != 1)
		start = (uint8_t)getpid();
	for (int i = 0; i < 255; i++) {
		/* Slots 1..255: slot 0 would allow QPNs 0 and 1 (QP0/QP1). */
		uint8_t slot = (uint8_t)(1 + (start + i) % 255);
		socklen_t len = slot_name(e, slot, &un);

		if (!bind(fd, (struct sockaddr *)&un, len)) {
			e->slot = slot;
			return fd;
		}
		if (errno != EADDRINUSE)
			break;
	}
	close(fd);
	return -EADDRINUSE;
}

int __ur_fwd_to(struct ur_engine *e, uint8_t slot, const uint8_t *buf,
		size_t len, const struct ur_rxinfo *ri)
{
	struct sockaddr_un un;
	socklen_t ulen = slot_name(e, slot, &un);
	struct iovec iov[2] = {
		{ .iov_base = (void *)ri, .iov_len = sizeof(*ri) },
		{ .iov_base = (void *)buf, .iov_len = len },
	};
	struct msghdr mh = {
		.msg_name = &un, .msg_namelen = ulen,
		.msg_iov = iov, .msg_iovlen = 2,
	};

	if (sendmsg(e->fwd_fd, &mh, MSG_DONTWAIT) < 0) {
		/* No such process (it died): like a packet to a dead host. */
		e->dev.cnt.rx_drop_no_qp++;
		return -errno;
	}
	return 0;
}

int __ur_fwd_drain(struct ur_engine *e, uint64_t now)
{
	int n = 0;

	for (;;) {
		struct ur_rxinfo ri;
		struct iovec iov[2] = {
			{ .iov_base = &ri, .iov_len = sizeof(ri) },
			{ .iov_base = e->rxbuf[0], .iov_len = sizeof(e->rxbuf[0]) },
		};
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
		ssize_t r = recvmsg(e->fwd_fd, &mh, MSG_DONTWAIT);

		if (r < 0)
			break;
		if ((size_t)r < sizeof(ri)) {
			e->dev.cnt.rx_drop_malformed++;
			continue;
		}
		__ur_engine_deliver(e, e->rxbuf[0], (size_t)r - sizeof(ri),
				    &ri, now, true);
		n++;
	}
	return n;
}

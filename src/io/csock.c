// SPDX-License-Identifier: MIT
/*
 * Connected transmit sockets, and the IPv4 IDs they send.
 *
 * For a datagram from an unconnected socket the kernel looks up the route
 * again (about 0.5 us of a 6 us one-way latency on loopback); a connected
 * socket keeps it. So a connected QP (RC, UC) sends from a socket of its
 * own, bound to its source port and connected to its peer's 4791.
 *
 * The ICRC covers the IPv4 ID (A17.3.3), and a connected socket numbers its
 * datagrams from a per-socket counter that starts at a random value, not 0
 * as an unconnected DF socket does. We learn the counter when we connect:
 * three probes to our own address, with software transmit timestamps on,
 * come back on the error queue as the frames the kernel sent, IP header
 * included. They also show how a GSO send moves the counter (by one, or by
 * its segment count: kernels differ, 2026 patches change it); segment i of
 * a send carries the send's ID + i either way. From then on every send
 * on the socket takes its lock and is numbered (ur__csock_begin/_end). A
 * send that fails after the kernel may have used an ID retires the socket
 * and its QP goes back to the unconnected one, as does a socket whose
 * probes do not come back as expected. UROCE_CONNECT=0 keeps every QP
 * unconnected, and so does UROCE_ICRC=strict: a strict receiver accepts
 * only IDs an unconnected socket sends (icrc.c).
 */
#include <errno.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ur_io_priv.h"

/* Frames on the error queue start with the link header: none, or 14
 * bytes of Ethernet on lo. */
static const size_t probe_hdr_at[] = { 0, 14 };

/* The IPv4 ID of the probe the error queue of @fd holds, from @self to
 * @self; -1 if there is none. */
static int probe_id_read(int fd, const struct sockaddr_in *self)
{
	uint8_t f[256];
	char ctl[256];
	struct iovec iov = { f, sizeof(f) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	ssize_t r = recvmsg(fd, &mh, MSG_ERRQUEUE | MSG_DONTWAIT);
	size_t n = sizeof(probe_hdr_at) / sizeof(*probe_hdr_at);

	for (size_t i = 0; r > 0 && i < n; i++) {
		const uint8_t *h = f + probe_hdr_at[i];

		/* IPv4 without options, UDP, from and to @self. */
		if ((size_t)r < probe_hdr_at[i] + 28 || h[0] != 0x45 ||
		    h[9] != IPPROTO_UDP || memcmp(h + 12, &self->sin_addr, 4) ||
		    memcmp(h + 16, &self->sin_addr, 4) ||
		    memcmp(h + 22, &self->sin_port, 2))
			continue;
		return h[4] << 8 | h[5];
	}
	return -1;
}

/* Send a probe of @nseg one-byte segments (a GSO send if more than one)
 * to @self and return the ID the kernel gave it, or -1. */
static int probe_id(int fd, const struct sockaddr_in *self, unsigned int nseg)
{
	char pay[2] = { 0 };
	uint16_t seg = 1;
	union {
		char b[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { pay, nseg };
	struct msghdr mh = { .msg_name = (void *)self, .msg_namelen = sizeof(*self),
			     .msg_iov = &iov, .msg_iovlen = 1 };

	if (nseg > 1) {
		struct cmsghdr *c;

		mh.msg_control = ctl.b;
		mh.msg_controllen = sizeof(ctl.b);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_UDP;
		c->cmsg_type = UDP_SEGMENT;
		c->cmsg_len = CMSG_LEN(sizeof(seg));
		memcpy(CMSG_DATA(c), &seg, sizeof(seg));
	}
	if (sendmsg(fd, &mh, 0) != (ssize_t)nseg)
		return -1;
	return probe_id_read(fd, self);
}

/* Learn @cs's next ID and how GSO sends advance it (see the top). */
static bool calibrate(struct ur_csock *cs, const struct sockaddr_in *self,
		      int sport_fd)
{
	int on = SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE, off = 0;
	int a, b, c;
	char sink[8];

	if (setsockopt(cs->fd, SOL_SOCKET, SO_TIMESTAMPING, &on, sizeof(on)))
		return false;
	a = probe_id(cs->fd, self, 1);
	b = a < 0 ? -1 : probe_id(cs->fd, self, 2);
	c = b < 0 ? -1 : probe_id(cs->fd, self, 1);
	setsockopt(cs->fd, SOL_SOCKET, SO_TIMESTAMPING, &off, sizeof(off));
	/* The probes land on the unconnected socket of the port (ours, or a
	 * sibling's: the port is SO_REUSEPORT); nobody else reads it. */
	while (recv(sport_fd, sink, sizeof(sink), MSG_DONTWAIT) >= 0)
		;
	if (c < 0 || b != ((a + 1) & 0xffff))
		return false;
	if (c == ((b + 1) & 0xffff))
		cs->per_seg = false;
	else if (c == ((b + 2) & 0xffff))
		cs->per_seg = true;
	else
		return false;
	cs->next_id = (uint16_t)(c + 1);
	return true;
}

struct ur_csock *ur__csock_open(struct ur_engine *e, int sport_fd,
				 uint16_t sport, const struct ur_ipudp *path)
{
	struct ur_csock *cs = calloc(1, sizeof(*cs));
	struct sockaddr_storage to;
	socklen_t len;

	if (!cs)
		return NULL;
	cs->fd = ur__udp_open_tx(e, sport);
	if (cs->fd < 0)
		goto fail;
	cs->v6 = path->v6;
	memcpy(cs->dst, path->dst, sizeof(cs->dst));
	cs->fallback_fd = sport_fd;
	ur__udp_fill_dst(&to, path, e->cfg.port, &len);
	if (connect(cs->fd, (struct sockaddr *)&to, len))
		goto fail;
	if (!cs->v6) {
		struct sockaddr_in self = { .sin_family = AF_INET,
					    .sin_port = htons(sport) };

		memcpy(&self.sin_addr, e->local.src, 4);
		if (!calibrate(cs, &self, sport_fd))
			goto fail;
	}
	pthread_mutex_init(&cs->lock, NULL);
	return cs;
fail:
	if (cs->fd >= 0)
		close(cs->fd);
	free(cs);
	return NULL;
}

void ur__csock_close(struct ur_csock *cs)
{
	if (!cs)
		return;
	close(cs->fd);
	pthread_mutex_destroy(&cs->lock);
	free(cs);
}

bool ur__csock_begin(struct ur_csock *cs, uint16_t *id)
{
	pthread_mutex_lock(&cs->lock);
	if (atomic_load_explicit(&cs->dead, memory_order_relaxed)) {
		pthread_mutex_unlock(&cs->lock);
		return false;
	}
	*id = cs->next_id;
	return true;
}

void ur__csock_sent(struct ur_csock *cs, int err, unsigned int nseg)
{
	switch (err) {
	case 0:
		cs->next_id = (uint16_t)(cs->next_id + (cs->per_seg ? nseg : 1));
		break;
	/* Refused before the kernel built the datagram: no ID used. */
	case EAGAIN:
	case ECONNREFUSED: /* an ICMP error reported on this send */
	case EMSGSIZE:
	case ENETUNREACH:
	case EHOSTUNREACH:
		break;
	default:
		atomic_store(&cs->dead, true);
	}
}

void ur__csock_end(struct ur_csock *cs)
{
	pthread_mutex_unlock(&cs->lock);
}

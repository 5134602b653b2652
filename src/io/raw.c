// SPDX-License-Identifier: MIT
/*
 * The raw Ethernet port (ur_raw.h): AF_PACKET, SOCK_RAW, every EtherType,
 * bound to one interface. Frames go out whole, as the work request built
 * them; frames that arrive are handed to the callback from a thread of
 * the port's own, which sleeps in poll() on the socket and an eventfd
 * that ur_raw_close rings.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ur_log.h"
#include "ur_raw.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23 /* Linux 4.20 */
#endif

/* The largest frame received whole: a 64 KiB loopback MTU, its Ethernet
 * header and a VLAN tag. */
enum { RAW_RX_BUF = 65536 + 18 };

struct ur_raw {
	int fd, stop_fd;
	unsigned int ifindex;
	ur_raw_rx_fn fn;
	void *arg;
	pthread_t thread;
	pid_t pid;         /* the process the thread runs in */
	atomic_bool stop;
	atomic_uint_fast64_t truncated;
	uint8_t buf[RAW_RX_BUF];
};

static void *raw_main(void *p)
{
	struct ur_raw *r = p;
	struct pollfd pfd[2] = {
		{ .fd = r->fd, .events = POLLIN },
		{ .fd = r->stop_fd, .events = POLLIN },
	};

	for (;;) {
		struct sockaddr_ll from;
		socklen_t flen = sizeof(from);
		ssize_t n;

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			ur_log(UR_LOG_ERROR, "raw port: poll: %s", strerror(errno));
			break;
		}
		if (pfd[1].revents)
			break;
		/* Drain what is there, then sleep again. */
		while (!atomic_load(&r->stop)) {
			n = recvfrom(r->fd, r->buf, sizeof(r->buf),
				     MSG_DONTWAIT | MSG_TRUNC,
				     (struct sockaddr *)&from, &flen);
			if (n < 0)
				break;
			/* Without PACKET_IGNORE_OUTGOING (old kernels) the
			 * socket also sees what this machine sends. */
			if (from.sll_pkttype == PACKET_OUTGOING)
				continue;
			if ((size_t)n > sizeof(r->buf)) {
				atomic_fetch_add(&r->truncated, 1);
				continue;
			}
			r->fn(r->arg, r->buf, (size_t)n);
		}
	}
	return NULL;
}

int ur_raw_open(unsigned int ifindex, ur_raw_rx_fn fn, void *arg,
		struct ur_raw **out)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET };
	struct ur_raw *r;
	int one = 1, rcvbuf = 8 << 20, ret;

	if (!ifindex)
		return -ENODEV;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->ifindex = ifindex;
	r->fn = fn;
	r->arg = arg;
	r->stop_fd = -1;
	r->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (r->fd < 0) {
		ret = -errno;
		if (ret == -EPERM || ret == -EACCES) {
			ur_log(UR_LOG_ERROR, "raw packet QP: an AF_PACKET socket "
			       "needs CAP_NET_RAW (run as root or grant it)");
			ret = -EPERM;
		} else {
			ur_log(UR_LOG_ERROR, "raw packet QP: AF_PACKET socket: %s",
			       strerror(-ret));
		}
		goto err_free;
	}
	/* A burst of frames waits here while the thread copies: 8 MiB,
	 * as the UDP sockets (FORCE needs CAP_NET_ADMIN, else rmem_max). */
	if (setsockopt(r->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)))
		(void)setsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
				 sizeof(rcvbuf));
	/* Our own frames are not received back on this socket (4.20+). */
	(void)setsockopt(r->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one,
			 sizeof(one));
	/* Nothing passes until the layer above names what it wants. */
	ret = ur_raw_filter(r, NULL, 0, false);
	if (ret)
		goto err_close;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = (int)ifindex;
	if (bind(r->fd, (struct sockaddr *)&sll, sizeof(sll))) {
		ret = -errno;
		ur_log(UR_LOG_ERROR, "raw packet QP: bind to interface %u: %s",
		       ifindex, strerror(errno));
		goto err_close;
	}
	r->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (r->stop_fd < 0) {
		ret = -errno;
		goto err_close;
	}
	r->pid = getpid();
	ret = -pthread_create(&r->thread, NULL, raw_main, r);
	if (ret)
		goto err_close;
	*out = r;
	return 0;

err_close:
	if (r->stop_fd >= 0)
		close(r->stop_fd);
	close(r->fd);
err_free:
	free(r);
	return ret;
}

void ur_raw_close(struct ur_raw *r)
{
	uint64_t one = 1;

	if (!r)
		return;
	if (r->pid != getpid()) {
		/* A forked child closing what it inherited: the thread stayed
		 * in the parent, whose sockets these copies must not stop. */
		close(r->stop_fd);
		close(r->fd);
		free(r);
		return;
	}
	atomic_store(&r->stop, true);
	if (write(r->stop_fd, &one, sizeof(one)) < 0)
		(void)0;
	pthread_join(r->thread, NULL);
	{
		struct tpacket_stats st;
		socklen_t len = sizeof(st);

		/* tp_packets counts the drops too (af_packet.c). */
		if (!getsockopt(r->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len))
			ur_log(UR_LOG_DEBUG, "raw port: %u frames reached the "
			       "socket, %u of them dropped (buffer full)",
			       st.tp_packets, st.tp_drops);
	}
	close(r->stop_fd);
	close(r->fd);
	free(r);
}

int ur_raw_sendv(struct ur_raw *r, const struct iovec *iov, int n, size_t len)
{
	struct sockaddr_ll to = { .sll_family = AF_PACKET };
	struct msghdr msg = { .msg_name = &to, .msg_namelen = sizeof(to),
			      .msg_iov = (struct iovec *)iov,
			      .msg_iovlen = (size_t)n };
	uint8_t hdr[ETH_HLEN];
	size_t got = 0;

	if (len < ETH_HLEN)
		return -EINVAL;
	/* The header may span buffers: gather it for the address. */
	for (int i = 0; i < n && got < ETH_HLEN; i++) {
		size_t c = iov[i].iov_len < ETH_HLEN - got ? iov[i].iov_len
							   : ETH_HLEN - got;

		memcpy(hdr + got, iov[i].iov_base, c);
		got += c;
	}
	to.sll_ifindex = (int)r->ifindex;
	memcpy(&to.sll_protocol, hdr + 12, 2); /* the frame's EtherType */
	to.sll_halen = ETH_ALEN;
	memcpy(to.sll_addr, hdr, ETH_ALEN);
	if (sendmsg(r->fd, &msg, 0) < 0)
		return -errno;
	return 0;
}

static uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/*
 * A classic BPF program over the frame (offset 0 is the destination MAC):
 * per pattern, the first four bytes and then the last two, masked and
 * compared; a match jumps to the accepting return at the end, a mismatch
 * to the next pattern; after the last one, drop.
 */
int ur_raw_filter(struct ur_raw *r, const struct ur_raw_match *m, int n,
		  bool all)
{
	struct sock_filter prog[6 * UR_RAW_FILTER_MAX + 2];
	struct sock_fprog fp = { .filter = prog };
	unsigned int k = 0, last;

	if (all || n > UR_RAW_FILTER_MAX) {
		prog[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, UINT32_MAX);
	} else {
		last = 6 * (unsigned int)n; /* the drop; the accept follows */
		for (int i = 0; i < n; i++) {
			uint32_t mhi = be32_at(m[i].mask), vhi = be32_at(m[i].mac);
			uint32_t mlo = (uint32_t)m[i].mask[4] << 8 | m[i].mask[5];
			uint32_t vlo = (uint32_t)m[i].mac[4] << 8 | m[i].mac[5];
			unsigned int next = 6 * (unsigned int)(i + 1);

			prog[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0);
			prog[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, mhi);
			prog[k] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
				vhi & mhi, 0, (uint8_t)(next - k - 1));
			k++;
			prog[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 4);
			prog[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, mlo);
			prog[k] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
				vlo & mlo, (uint8_t)(last + 1 - k - 1),
				(uint8_t)(next - k - 1));
			k++;
		}
		prog[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);
		prog[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, UINT32_MAX);
	}
	fp.len = (unsigned short)k;
	if (setsockopt(r->fd, SOL_SOCKET, SO_ATTACH_FILTER, &fp, sizeof(fp)))
		return -errno;
	return 0;
}

uint64_t ur_raw_truncated(const struct ur_raw *r)
{
	return atomic_load(&r->truncated);
}

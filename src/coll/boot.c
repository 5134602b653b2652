/* SPDX-License-Identifier: MIT */
/*
 * Bootstrap without a service of our own: rank 0 listens on
 * MASTER_ADDR:MASTER_PORT, every other rank connects and sends its
 * connection records (one per peer); rank 0 gathers the size x size table
 * and sends it back to everyone. The TCP connections stay open for the
 * communicator's lifetime: a rank that dies closes them (the kernel does),
 * which is how the others learn about it quickly (ur__boot_watch), and a
 * rank that fails aborts them so the failure cascades through rank 0.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "coll_internal.h"

struct ur_hello {
	uint32_t magic;
	uint32_t version;
	uint32_t rank;
	uint32_t size;
	uint64_t len;
};

uint64_t ur__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int wait_fd(int fd, short ev, uint64_t deadline)
{
	for (;;) {
		uint64_t now = ur__now_ns();
		struct pollfd p = { .fd = fd, .events = ev };
		int r;

		if (now >= deadline)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)((deadline - now) / 1000000 + 1));
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* Moves all len bytes (send when out, else receive) before the deadline;
 * a receive that meets the peer's close fails with -EPIPE. */
static int xfer_all(int fd, char *p, size_t len, int out, uint64_t deadline)
{
	while (len) {
		ssize_t n = out ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT)
				: recv(fd, p, len, MSG_DONTWAIT);
		if (n == 0 && !out)
			return -EPIPE;
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR) {
				int r = wait_fd(fd, out ? POLLOUT : POLLIN, deadline);
				if (r)
					return r;
				continue;
			}
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_all(int fd, const void *buf, size_t len, uint64_t deadline)
{
	return xfer_all(fd, (char *)buf, len, 1, deadline);
}

static int recv_all(int fd, void *buf, size_t len, uint64_t deadline)
{
	return xfer_all(fd, buf, len, 0, deadline);
}

static int resolve(const char *addr, int port, struct sockaddr_storage *ss,
		   socklen_t *sl)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char ps[16];
	int r;

	snprintf(ps, sizeof(ps), "%d", port);
	r = getaddrinfo(addr, ps, &hints, &res);
	if (r) {
		fprintf(stderr, "uroce_coll: cannot resolve %s: %s\n", addr,
			gai_strerror(r));
		return -EHOSTUNREACH;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*sl = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int listen_on(const char *addr, int port, uint64_t deadline)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int one = 1, fd, r;

	r = resolve(addr, port, &ss, &sl);
	if (r)
		return r;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* The address may belong to another host name of ours: fall back to
	 * the wildcard address of the same family. */
	while (bind(fd, (struct sockaddr *)&ss, sl)) {
		if (errno == EADDRNOTAVAIL) {
			if (ss.ss_family == AF_INET)
				((struct sockaddr_in *)&ss)->sin_addr.s_addr = INADDR_ANY;
			else
				((struct sockaddr_in6 *)&ss)->sin6_addr = in6addr_any;
			continue;
		}
		/* A previous job's port in TIME_WAIT or a slow exit: retry. */
		if (errno == EADDRINUSE && ur__now_ns() < deadline) {
			usleep(50000);
			continue;
		}
		r = -errno;
		fprintf(stderr, "uroce_coll: bind %s:%d: %s\n", addr, port,
			strerror(errno));
		close(fd);
		return r;
	}
	if (listen(fd, 1024)) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

static int connect_to(const char *addr, int port, uint64_t deadline)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int r;

	r = resolve(addr, port, &ss, &sl);
	if (r)
		return r;
	/* Rank 0 may not listen yet: retry until the deadline. */
	for (;;) {
		int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (!connect(fd, (struct sockaddr *)&ss, sl)) {
			nodelay(fd);
			return fd;
		}
		r = -errno;
		close(fd);
		if (ur__now_ns() >= deadline) {
			fprintf(stderr,
				"uroce_coll: cannot connect to rank 0 at %s:%d: %s\n",
				addr, port, strerror(-r));
			return -ETIMEDOUT;
		}
		usleep(20000);
	}
}

int ur__boot_exchange(struct ur_boot *b, const char *addr, int port,
		       int timeout_ms, const void *mine, size_t len,
		       void *table)
{
	uint64_t deadline = ur__now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct ur_hello h = { UR_COLL_MAGIC, UR_COLL_VERSION, (uint32_t)b->rank,
			      (uint32_t)b->size, len };
	size_t total = len * (size_t)b->size;
	int r;

	b->listen_fd = -1;
	b->fds = calloc((size_t)b->size, sizeof(int));
	if (!b->fds)
		return -ENOMEM;
	for (int i = 0; i < b->size; i++)
		b->fds[i] = -1;
	b->nfds = b->size;

	if (b->rank != 0) {
		int fd = connect_to(addr, port, deadline);
		if (fd < 0)
			return fd;
		b->fds[0] = fd;
		r = send_all(fd, &h, sizeof(h), deadline);
		if (!r)
			r = send_all(fd, mine, len, deadline);
		if (!r)
			r = recv_all(fd, table, total, deadline);
		if (r)
			fprintf(stderr, "uroce_coll: rank %d: rendezvous with rank 0 failed: %s\n",
				b->rank, strerror(-r));
		return r;
	}

	memcpy(table, mine, len);
	if (b->size == 1)
		return 0;
	b->listen_fd = listen_on(addr, port, deadline);
	if (b->listen_fd < 0)
		return b->listen_fd;
	for (int got = 1; got < b->size;) {
		struct ur_hello ph;
		int fd;

		r = wait_fd(b->listen_fd, POLLIN, deadline);
		if (r) {
			fprintf(stderr, "uroce_coll: rank 0: only %d of %d ranks arrived at %s:%d\n",
				got, b->size, addr, port);
			return r;
		}
		fd = accept4(b->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		nodelay(fd);
		r = recv_all(fd, &ph, sizeof(ph), deadline);
		if (r || ph.magic != UR_COLL_MAGIC) {
			close(fd); /* a stray connection: ignore it */
			continue;
		}
		if (ph.version != UR_COLL_VERSION || ph.size != (uint32_t)b->size ||
		    ph.rank == 0 || ph.rank >= (uint32_t)b->size || ph.len != len ||
		    b->fds[ph.rank] >= 0) {
			fprintf(stderr,
				"uroce_coll: rank 0: bad hello (rank %u size %u version %u; we have size %d)\n",
				ph.rank, ph.size, ph.version, b->size);
			close(fd);
			return -EPROTO;
		}
		r = recv_all(fd, (char *)table + len * ph.rank, len, deadline);
		if (r) {
			close(fd);
			return r;
		}
		b->fds[ph.rank] = fd;
		got++;
	}
	close(b->listen_fd);
	b->listen_fd = -1;
	for (int i = 1; i < b->size; i++) {
		r = send_all(b->fds[i], table, total, deadline);
		if (r)
			return r;
	}
	return 0;
}

/* Everyone sends a byte to rank 0, which answers when all have arrived. */
int ur__boot_barrier(struct ur_boot *b, int timeout_ms)
{
	uint64_t deadline = ur__now_ns() + (uint64_t)timeout_ms * 1000000ull;
	char ch = 'B';
	int r;

	if (b->size == 1)
		return 0;
	if (b->rank != 0) {
		r = send_all(b->fds[0], &ch, 1, deadline);
		if (!r)
			r = recv_all(b->fds[0], &ch, 1, deadline);
		if (!r && ch != 'B')
			r = -ECONNABORTED;
		return r;
	}
	for (int i = 1; i < b->size; i++) {
		r = recv_all(b->fds[i], &ch, 1, deadline);
		if (!r && ch != 'B')
			r = -ECONNABORTED;
		if (r)
			return r;
	}
	for (int i = 1; i < b->size; i++) {
		r = send_all(b->fds[i], &ch, 1, deadline);
		if (r)
			return r;
	}
	return 0;
}

int ur__boot_watch(struct ur_boot *b, int *who)
{
	struct pollfd p[b->size > 0 ? b->size : 1];
	int n = 0, map[b->size > 0 ? b->size : 1];

	for (int i = 0; i < b->nfds; i++) {
		if (b->fds[i] < 0)
			continue;
		p[n].fd = b->fds[i];
		p[n].events = POLLIN;
		p[n].revents = 0;
		map[n++] = i;
	}
	if (!n || poll(p, (nfds_t)n, 0) <= 0)
		return 0;
	for (int i = 0; i < n; i++) {
		char ch;
		ssize_t got;

		if (!p[i].revents)
			continue;
		got = recv(p[i].fd, &ch, 1, MSG_PEEK | MSG_DONTWAIT);
		/* A barrier byte ('B') is fine; EOF, an error or an abort
		 * ('A') means that rank is gone or gave up. */
		if (got == 0 || (got < 0 && errno != EAGAIN) ||
		    (got == 1 && ch == 'A')) {
			*who = map[i];
			return -EPIPE;
		}
	}
	return 0;
}

void ur__boot_abort(struct ur_boot *b)
{
	char ch = 'A';

	for (int i = 0; i < b->nfds; i++) {
		if (b->fds[i] < 0)
			continue;
		(void)!send(b->fds[i], &ch, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		shutdown(b->fds[i], SHUT_RDWR);
	}
}

void ur__boot_close(struct ur_boot *b)
{
	if (b->listen_fd >= 0)
		close(b->listen_fd);
	b->listen_fd = -1;
	for (int i = 0; i < b->nfds; i++)
		if (b->fds[i] >= 0)
			close(b->fds[i]);
	free(b->fds);
	b->fds = NULL;
	b->nfds = 0;
}

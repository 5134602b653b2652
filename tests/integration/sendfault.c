// SPDX-License-Identifier: MIT
/*
 * LD_PRELOAD shim for capture.sh: makes some UDP sendmmsg() calls go
 * partly, as the kernel does when a later message fails (it returns the
 * count sent and drops the error). Every UR_SENDFAULT_EVERY-th sendmmsg
 * of two or more datagrams (default 4) sends only the first and returns
 * 1. Every other such fault also fails the next sendmsg on that socket
 * with EAGAIN, sending nothing: a failure that uses no IPv4 ID. The
 * engine must then number what it sends next as the kernel does, which
 * the capture's ICRC check sees. At exit the counts go to stderr, so the
 * test knows faults were made.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

typedef int (*sendmmsg_fn)(int, struct mmsghdr *, unsigned int, int);
typedef ssize_t (*sendmsg_fn)(int, const struct msghdr *, int);

static atomic_uint calls, partial, eagain;
static atomic_int fail_fd = -1;

static int is_udp(int fd)
{
	int type = 0;
	socklen_t len = sizeof(type);

	return !getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) &&
	       type == SOCK_DGRAM;
}

static unsigned int every(void)
{
	const char *v = getenv("UR_SENDFAULT_EVERY");
	int n = v ? atoi(v) : 4;

	return n > 0 ? (unsigned int)n : 4;
}

int sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags)
{
	static sendmmsg_fn real;

	if (!real)
		real = (sendmmsg_fn)dlsym(RTLD_NEXT, "sendmmsg");
	if (n >= 2 && is_udp(fd) && (atomic_fetch_add(&calls, 1) + 1) % every() == 0) {
		int r = real(fd, v, 1, flags);

		if (r == 1 && atomic_fetch_add(&partial, 1) % 2 == 0)
			atomic_store(&fail_fd, fd);
		return r;
	}
	return real(fd, v, n, flags);
}

ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	static sendmsg_fn real;
	int want = fd;

	if (!real)
		real = (sendmsg_fn)dlsym(RTLD_NEXT, "sendmsg");
	if (atomic_compare_exchange_strong(&fail_fd, &want, -1)) {
		atomic_fetch_add(&eagain, 1);
		errno = EAGAIN;
		return -1;
	}
	return real(fd, m, flags);
}

__attribute__((destructor)) static void report(void)
{
	if (atomic_load(&calls))
		fprintf(stderr, "sendfault: partial=%u eagain=%u\n",
			atomic_load(&partial), atomic_load(&eagain));
}

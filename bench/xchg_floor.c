// SPDX-License-Identifier: MIT
/*
 * xchg-floor: what the kernel alone costs a 2-rank exchange over loopback.
 *
 * Two processes, pinned to CPUs 0 and 1, each send BYTES to the other and
 * receive BYTES from it per iteration, both at once, non-blocking: the
 * bytes of one 2-rank alltoall of 2 x BYTES. Over TCP (one connection, as
 * Open MPI's TCP BTL), or over UDP with GSO sends of SEG-byte segments, as
 * many as fit in one datagram of 65000 bytes, to a UDP_GRO receiver (the
 * system calls uroce makes, without uroce). No uroce code runs: the figure
 * is the floor that the kernel's path puts under each transport.
 *
 *   xchg-floor tcp|udp [-b BYTES] [-s SEG] [-n ITERS]
 * Prints "median_us p10_us" per exchange (iterations after 10 warm-ups).
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#define WARMUP 10
#define UDP_MAX 65000 /* one datagram: IPv4 total length minus headers */

static size_t g_bytes = 512 * 1024;
static int g_seg = 16384, g_iters = 300;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void pin(int cpu)
{
	if (bench_pin(cpu))
		die("sched_setaffinity");
}

/* One GSO datagram of up to UDP_MAX bytes (whole segments) from @p. */
static ssize_t udp_send(int fd, const struct sockaddr_in *to, const char *p,
			size_t left)
{
	size_t max = (size_t)(UDP_MAX / g_seg) * (size_t)g_seg;
	uint16_t seg = (uint16_t)g_seg;
	union {
		char b[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { (void *)p, left < max ? left : max };
	struct msghdr mh = { .msg_name = (void *)to, .msg_namelen = sizeof(*to),
			     .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = ctl.b,
			     .msg_controllen = sizeof(ctl.b) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

	c->cmsg_level = SOL_UDP;
	c->cmsg_type = UDP_SEGMENT;
	c->cmsg_len = CMSG_LEN(sizeof(seg));
	memcpy(CMSG_DATA(c), &seg, sizeof(seg));
	return sendmsg(fd, &mh, MSG_DONTWAIT);
}

/* Exchange g_bytes each way per iteration; rank 0 prints the figures.
 * @to: the peer's address (UDP), NULL for a connected TCP socket. */
static void side(int fd, const struct sockaddr_in *to, int rank)
{
	char *sb = malloc(g_bytes), *rb = malloc(to ? 65536 : g_bytes);
	double *t = malloc(sizeof(*t) * (size_t)g_iters);

	if (!sb || !rb || !t)
		die("malloc");
	memset(sb, rank + 1, g_bytes);
	for (int i = -WARMUP; i < g_iters; i++) {
		double t0 = bench_now_us(), moved = t0;
		size_t so = 0, ro = 0;

		while (so < g_bytes || ro < g_bytes) {
			size_t before = so + ro;
			ssize_t r;

			if (so < g_bytes) {
				r = to ? udp_send(fd, to, sb + so, g_bytes - so)
				       : send(fd, sb + so, g_bytes - so,
					      MSG_DONTWAIT);
				if (r > 0)
					so += (size_t)r;
			}
			if (ro < g_bytes) {
				r = recv(fd, to ? rb : rb + ro,
					 to ? 65536 : g_bytes - ro, MSG_DONTWAIT);
				if (r > 0)
					ro += (size_t)r;
			}
			if (so + ro != before) {
				moved = bench_now_us();
			} else if (bench_now_us() - moved > 2e6) {
				/* UDP: a datagram the receive buffer dropped */
				fprintf(stderr, "xchg-floor: no progress for 2 s "
					"(datagrams lost?)\n");
				exit(1);
			}
		}
		if (i >= 0)
			t[i] = bench_now_us() - t0;
	}
	if (rank == 0) {
		qsort(t, (size_t)g_iters, sizeof(*t), bench_cmp_dbl);
		printf("%.1f %.1f\n", t[g_iters / 2], t[g_iters / 10]);
	}
	free(sb);
	free(rb);
	free(t);
}

static void run_tcp(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0), s;
	pid_t p;

	if (l < 0 || bind(l, (void *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (void *)&a, &al))
		die("tcp listen");
	p = fork();
	if (p == 0) {
		int c = socket(AF_INET, SOCK_STREAM, 0);

		pin(1);
		if (c < 0 || connect(c, (void *)&a, sizeof(a)))
			die("connect");
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		side(c, NULL, 1);
		_exit(0);
	}
	pin(0);
	s = accept(l, NULL, NULL);
	if (s < 0)
		die("accept");
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	side(s, NULL, 0);
	waitpid(p, NULL, 0);
}

static int udp_socket(struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0), sz = 8 << 20, one = 1;
	socklen_t al = sizeof(*a);

	*a = (struct sockaddr_in){ .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd < 0)
		die("socket");
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) ||
	    bind(fd, (void *)a, sizeof(*a)) || getsockname(fd, (void *)a, &al))
		die("udp socket");
	return fd;
}

static void run_udp(void)
{
	struct sockaddr_in a0, a1;
	int f0 = udp_socket(&a0), f1 = udp_socket(&a1);
	pid_t p = fork();

	if (p == 0) {
		pin(1);
		side(f1, &a0, 1);
		_exit(0);
	}
	pin(0);
	side(f0, &a1, 0);
	waitpid(p, NULL, 0);
}

static void usage(void)
{
	fprintf(stderr, "usage: xchg-floor tcp|udp [-b BYTES] [-s SEG] [-n ITERS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int c;

	if (argc < 2 || (strcmp(argv[1], "tcp") && strcmp(argv[1], "udp")))
		usage();
	optind = 2;
	while ((c = getopt(argc, argv, "b:s:n:")) != -1) {
		switch (c) {
		case 'b':
			g_bytes = strtoul(optarg, NULL, 0);
			break;
		case 's':
			g_seg = atoi(optarg);
			break;
		case 'n':
			g_iters = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (!g_bytes || g_iters < 10 || g_seg < 512 || g_seg > UDP_MAX)
		usage();
	if (!strcmp(argv[1], "tcp"))
		run_tcp();
	else
		run_udp();
	return 0;
}

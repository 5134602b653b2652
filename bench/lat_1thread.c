// SPDX-License-Identifier: MIT
/*
 * lat-1thread: the cost of one message, one way, with no scheduler in it.
 *
 * One thread plays both ends of a ping-pong: two RC QPs of one device
 * context (SEND of 8 bytes, each side posts, then polls until its peer's
 * message arrives), or with --udp two plain UDP sockets on the same
 * address (sendto, then spin on recv). With --udp-uroce, plain sockets
 * make the system calls uroce makes for such a message and nothing else:
 * one sendmsg of a two-segment UDP GSO datagram (the SEND and the ACK it
 * carries along to the peer, one iovec each) from a transmit socket set
 * up as uroce's (connected to the peer, as an RC QP's), one recvmsg (source address, cmsg buffer) on one shared
 * receive socket with IP_RECVTOS and UDP_GRO: the kernel's part of
 * uroce's path, a floor for it. Every step runs on one CPU in
 * order, so the figure is the CPU path of a message through the stack,
 * free of the wake-up and preemption noise of a two-process test on a
 * shared 2-core machine. bench/run.sh prints both and their ratio.
 *
 *   lat-1thread [--udp | --udp-uroce] [-n ITERS] [-a ADDR]
 *       (ADDR for the UDP modes; default 127.0.0.14)
 * Prints "median_us p10_us p90_us" per one-way message.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rc_connect.h"
#include "bench_util.h"

#define DEPTH 16

struct side {
	struct urt_rc_end e;
	int unreaped; /* signaled SENDs not yet polled */
};

static void die(const char *what)
{
	fprintf(stderr, "lat-1thread: %s failed\n", what);
	exit(1);
}

static void side_init(struct ibv_context *ctx, struct ibv_pd *pd,
		      struct side *s)
{
	if (urt_rc_end_init(ctx, pd, &s->e, DEPTH, DEPTH, 4 * DEPTH,
			    IBV_ACCESS_LOCAL_WRITE))
		die("creating a QP, its CQ and buffer");
}

static void side_connect(struct ibv_context *ctx, struct side *s, uint32_t dqpn)
{
	struct urt_rc_conn c = { .dqpn = dqpn, .psn = 1, .rd_atomic = 1 };

	if (urt_rc_connect(ctx, s->e.qp, &c))
		die("connecting the QPs");
}

static void post_recv(struct side *s)
{
	struct ibv_sge sge = { (uintptr_t)s->e.buf, 64, s->e.mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(s->e.qp, &wr, &bad))
		die("ibv_post_recv");
}

static void post_send8(struct side *s)
{
	struct ibv_sge sge = { (uintptr_t)s->e.buf + 1024, 8, s->e.mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (ibv_post_send(s->e.qp, &wr, &bad))
		die("ibv_post_send");
	s->unreaped++;
}

/* Poll until a receive completes (send completions are reaped on the way);
 * or, with @recv false, until no send is left unreaped beyond @keep. */
static void poll_side(struct side *s, bool recv, int keep)
{
	struct ibv_wc wc[8];

	for (;;) {
		int n = ibv_poll_cq(s->e.cq, 8, wc);
		bool got = false;

		if (n < 0)
			die("ibv_poll_cq");
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "lat-1thread: %s\n",
					ibv_wc_status_str(wc[i].status));
				exit(1);
			}
			if (wc[i].opcode == IBV_WC_RECV)
				got = true;
			else
				s->unreaped--;
		}
		if (recv ? got : (s->unreaped <= keep || n == 0))
			return;
	}
}

static void run_verbs(int iters, double *lat)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct side a = { 0 }, b = { 0 };

	if (!list || !list[0])
		die("ibv_get_device_list (no device)");
	ctx = ibv_open_device(list[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd)
		die("ibv_open_device");
	side_init(ctx, pd, &a);
	side_init(ctx, pd, &b);
	side_connect(ctx, &a, b.e.qp->qp_num);
	side_connect(ctx, &b, a.e.qp->qp_num);
	for (int i = 0; i < DEPTH; i++) {
		post_recv(&a);
		post_recv(&b);
	}
	for (int i = 0; i < iters; i++) {
		double t0 = bench_now_us();

		post_send8(&a);
		poll_side(&b, true, 0);
		post_recv(&b);
		post_send8(&b);
		poll_side(&a, true, 0);
		post_recv(&a);
		/* Keep the send queues from filling; inside the timed span,
		 * as an application's reaping would be. */
		poll_side(&a, false, DEPTH / 4);
		poll_side(&b, false, DEPTH / 4);
		lat[i] = (bench_now_us() - t0) / 2;
	}
	urt_rc_end_fini(&a.e);
	urt_rc_end_fini(&b.e);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
}

static void run_udp(int iters, double *lat, const char *addr)
{
	int fa = socket(AF_INET, SOCK_DGRAM, 0), fb = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET }, sb;
	socklen_t len = sizeof(sa);
	char buf[128] = { 0 };

	if (fa < 0 || fb < 0 || inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		die("socket/address");
	sb = sa;
	if (bind(fa, (void *)&sa, sizeof(sa)) || bind(fb, (void *)&sb, sizeof(sb)) ||
	    getsockname(fa, (void *)&sa, &len) ||
	    getsockname(fb, (void *)&sb, &len))
		die("bind");
	/* 70 bytes: an 8-byte RoCEv2 SEND (BTH 12 + payload 8 + ICRC 4) is
	 * smaller; the size hardly matters on loopback. */
	for (int i = 0; i < iters; i++) {
		double t0 = bench_now_us();

		if (sendto(fa, buf, 70, 0, (void *)&sb, sizeof(sb)) < 0)
			die("sendto");
		while (recv(fb, buf, sizeof(buf), MSG_DONTWAIT) < 0)
			;
		if (sendto(fb, buf, 70, 0, (void *)&sa, sizeof(sa)) < 0)
			die("sendto");
		while (recv(fa, buf, sizeof(buf), MSG_DONTWAIT) < 0)
			;
		lat[i] = (bench_now_us() - t0) / 2;
	}
	close(fa);
	close(fb);
}

/* A socket on @addr (any port) with the options uroce's I/O layer sets
 * (src/io/udp.c): DF, TOS ECT(0); a receive socket also 8 MiB of buffer,
 * IP_RECVTOS and UDP_GRO. */
static int uroce_like_socket(const char *addr, bool rx, struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	int one = 1, pmtu = IP_PMTUDISC_DO, tos = 2, sz = 8 << 20;
	socklen_t len = sizeof(*sa);

	*sa = (struct sockaddr_in){ .sin_family = AF_INET };
	if (fd < 0 || inet_pton(AF_INET, addr, &sa->sin_addr) != 1)
		die("socket/address");
	if (setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) ||
	    setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)))
		die("setsockopt");
	if (rx) {
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
		if (setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) ||
		    setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one)))
			die("setsockopt");
	}
	if (bind(fd, (void *)sa, sizeof(*sa)) || getsockname(fd, (void *)sa, &len))
		die("bind");
	return fd;
}

/* One uroce-shaped datagram from @fd to @to: a 24-byte SEND (BTH 12,
 * payload 8, ICRC 4) and a 20-byte ACK (BTH, AETH, ICRC) in one GSO send. */
static void send_uroce_like(int fd, const struct sockaddr_in *to, char *pkt)
{
	uint16_t seg = 24;
	union {
		char b[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov[2] = { { pkt, 24 }, { pkt + 32, 20 } };
	struct msghdr mh = { .msg_name = (void *)to,
			     .msg_namelen = to ? sizeof(*to) : 0,
			     .msg_iov = iov, .msg_iovlen = 2,
			     .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

	c->cmsg_level = SOL_UDP;
	c->cmsg_type = UDP_SEGMENT;
	c->cmsg_len = CMSG_LEN(sizeof(seg));
	memcpy(CMSG_DATA(c), &seg, sizeof(seg));
	if (sendmsg(fd, &mh, 0) != 44)
		die("sendmsg (UDP_SEGMENT)");
}

/* Spin on recvmsg (source address and cmsgs, as uroce receives) until the
 * datagram is in. */
static void recv_uroce_like(int fd, char *buf, size_t cap)
{
	struct sockaddr_storage from;
	char ctl[256];
	struct iovec iov = { buf, cap };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	do {
		mh.msg_name = &from;
		mh.msg_namelen = sizeof(from);
		mh.msg_control = ctl;
		mh.msg_controllen = sizeof(ctl);
	} while (recvmsg(fd, &mh, MSG_DONTWAIT) < 0);
}

static void run_udp_uroce(int iters, double *lat, const char *addr)
{
	struct sockaddr_in rx, ta, tb;
	int frx = uroce_like_socket(addr, true, &rx);
	int fa = uroce_like_socket(addr, false, &ta);
	int fb = uroce_like_socket(addr, false, &tb);
	char pkt[64] = { 0 }, buf[2048];

	/* An RC QP sends from a socket connected to its peer (csock.c). */
	if (connect(fa, (void *)&rx, sizeof(rx)) || connect(fb, (void *)&rx, sizeof(rx)))
		die("connect");
	for (int i = 0; i < iters; i++) {
		double t0 = bench_now_us();

		send_uroce_like(fa, NULL, pkt);
		recv_uroce_like(frx, buf, sizeof(buf));
		send_uroce_like(fb, NULL, pkt);
		recv_uroce_like(frx, buf, sizeof(buf));
		lat[i] = (bench_now_us() - t0) / 2;
	}
	close(frx);
	close(fa);
	close(fb);
}

static void usage(void)
{
	fprintf(stderr, "usage: lat-1thread [--udp | --udp-uroce] [-n ITERS] [-a IPV4_ADDR]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "udp", no_argument, NULL, 'u' },
		{ "udp-uroce", no_argument, NULL, 'U' },
		{ "iters", required_argument, NULL, 'n' },
		{ "addr", required_argument, NULL, 'a' },
		{ 0 }
	};
	const char *addr = "127.0.0.14";
	int iters = 20000, c;
	int udp = 0;
	double *lat;

	while ((c = getopt_long(argc, argv, "uUn:a:", opts, NULL)) != -1) {
		switch (c) {
		case 'u': udp = 1; break;
		case 'U': udp = 2; break;
		case 'n': iters = atoi(optarg); break;
		case 'a': addr = optarg; break;
		default: usage();
		}
	}
	if (optind != argc || iters < 10 || iters > 10000000)
		usage();
	lat = calloc((size_t)iters, sizeof(*lat));
	if (!lat)
		die("calloc");
	if (udp == 1)
		run_udp(iters, lat, addr);
	else if (udp == 2)
		run_udp_uroce(iters, lat, addr);
	else
		run_verbs(iters, lat);
	qsort(lat, (size_t)iters, sizeof(*lat), bench_cmp_dbl);
	printf("%.2f %.2f %.2f\n", lat[iters / 2], lat[iters / 10],
	       lat[iters * 9 / 10]);
	free(lat);
	return 0;
}

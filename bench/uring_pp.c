// SPDX-License-Identifier: MIT
/*
 * uring-pp: a bare UDP ping-pong over loopback, to ask whether io_uring's
 * multishot receive would shorten a spinning poller's one-way path (issue
 * 37). Two processes, one datagram each way per iteration, the receiver
 * spinning as sockperf --nonblocked and a spinning ibv_poll_cq do:
 *
 *   recv   recvmsg(MSG_DONTWAIT) per turn of the spin (a system call even
 *          when nothing came: what uroce's poller does), sendmsg to answer
 *   uring  one IORING_OP_RECVMSG with IORING_RECV_MULTISHOT and a
 *          provided-buffer ring, armed once; the spin reads the completion
 *          ring in memory (no system call while nothing came; the kernel
 *          receives in task work it signals to the spinning task)
 *   coop   the same with IORING_SETUP_COOP_TASKRUN | TASKRUN_FLAG: no
 *          signal; the spin enters the kernel (io_uring_enter GETEVENTS)
 *          only once the ring's flag says task work waits
 *   defer  IORING_SETUP_DEFER_TASKRUN: task work runs only inside
 *          io_uring_enter, so every turn is a system call, as in recv
 * -u sends through the ring too (IORING_OP_SENDMSG, one io_uring_enter),
 * else sendmsg. No uroce code runs; raw system calls (no liburing).
 *
 *   uring-pp recv|uring|coop|defer [-u] [-s BYTES] [-n ITERS] [-p] [-r]
 * -p pins the two processes to CPUs 0 and 1. Prints
 * "median_one_way_us p10_us" (half the round trip, after 1000 warm-ups).
 * -r streams ITERS datagrams one way instead (sendmmsg of 32; recv mode
 * receives with recvmmsg of 32) and prints the receiver's M datagrams/s.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

#define WARMUP 1000
#define NBUF 256     /* provided buffers (a power of 2; the ring fits a page) */
#define BUFSZ 2048
#define UD_SEND 1    /* user_data of a send's completion */

enum mode { M_RECV, M_URING, M_COOP, M_DEFER };

static enum mode g_mode;
static int g_usend, g_pin, g_rate, g_iters = 20000;
static size_t g_size = 64;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

struct ring {
	int fd;
	unsigned *sq_head, *sq_tail, *sq_mask, *sq_flags, *sq_array;
	unsigned *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	struct io_uring_buf_ring *br;
	char *bufs;
	unsigned setup_flags;
	struct msghdr rmsg, smsg;
	struct iovec siov;
};

static int enter(struct ring *r, unsigned submit, unsigned flags)
{
	return (int)syscall(__NR_io_uring_enter, r->fd, submit, 0, flags, NULL,
			    0);
}

static void ring_init(struct ring *r, unsigned flags)
{
	struct io_uring_params p;
	size_t sq_sz, cq_sz;
	char *sq, *cq;

	memset(&p, 0, sizeof(p));
	p.flags = flags | IORING_SETUP_CQSIZE;
	p.cq_entries = 4096; /* a stream's completions wait here, not overflow */
	r->setup_flags = flags;
	r->fd = (int)syscall(__NR_io_uring_setup, 64, &p);
	if (r->fd < 0)
		die("io_uring_setup");
	sq_sz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	cq_sz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP)
		sq_sz = cq_sz = sq_sz > cq_sz ? sq_sz : cq_sz;
	sq = mmap(NULL, sq_sz, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	if (sq == MAP_FAILED)
		die("mmap sq");
	cq = sq;
	if (!(p.features & IORING_FEAT_SINGLE_MMAP)) {
		cq = mmap(NULL, cq_sz, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_CQ_RING);
		if (cq == MAP_FAILED)
			die("mmap cq");
	}
	r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		       IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED)
		die("mmap sqes");
	r->sq_head = (unsigned *)(sq + p.sq_off.head);
	r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
	r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	r->sq_flags = (unsigned *)(sq + p.sq_off.flags);
	r->sq_array = (unsigned *)(sq + p.sq_off.array);
	r->cq_head = (unsigned *)(cq + p.cq_off.head);
	r->cq_tail = (unsigned *)(cq + p.cq_off.tail);
	r->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);

	/* The provided-buffer ring (IORING_REGISTER_PBUF_RING, 5.19+). */
	r->br = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	r->bufs = mmap(NULL, NBUF * BUFSZ, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (r->br == MAP_FAILED || r->bufs == MAP_FAILED)
		die("mmap bufs");
	struct io_uring_buf_reg reg = { .ring_addr = (uintptr_t)r->br,
					.ring_entries = NBUF, .bgid = 0 };
	if (syscall(__NR_io_uring_register, r->fd, IORING_REGISTER_PBUF_RING,
		    &reg, 1) < 0)
		die("IORING_REGISTER_PBUF_RING");
	for (unsigned i = 0; i < NBUF; i++) {
		struct io_uring_buf *b = &r->br->bufs[i];

		b->addr = (uintptr_t)(r->bufs + (size_t)i * BUFSZ);
		b->len = BUFSZ;
		b->bid = (uint16_t)i;
	}
	atomic_store_explicit((_Atomic uint16_t *)&r->br->tail, NBUF,
			      memory_order_release);
}

static struct io_uring_sqe *sqe_get(struct ring *r)
{
	unsigned t = *r->sq_tail, i = t & *r->sq_mask;
	struct io_uring_sqe *e = &r->sqes[i];

	memset(e, 0, sizeof(*e));
	r->sq_array[i] = i;
	return e;
}

static void sqe_push(struct ring *r)
{
	atomic_store_explicit((_Atomic unsigned *)r->sq_tail, *r->sq_tail + 1,
			      memory_order_release);
}

static void arm_recv(struct ring *r, int fd)
{
	struct io_uring_sqe *e = sqe_get(r);

	/* The buffer then holds io_uring_recvmsg_out, the name, the payload. */
	memset(&r->rmsg, 0, sizeof(r->rmsg));
	r->rmsg.msg_namelen = sizeof(struct sockaddr_in);
	e->opcode = IORING_OP_RECVMSG;
	e->fd = fd;
	e->addr = (uintptr_t)&r->rmsg;
	e->len = 1;
	e->ioprio = IORING_RECV_MULTISHOT;
	e->flags = IOSQE_BUFFER_SELECT;
	e->buf_group = 0;
	sqe_push(r);
	if (enter(r, 1, 0) < 0)
		die("io_uring_enter (arm)");
}

/* The next receive completion's payload length, spinning; re-arms the
 * multishot receive when the kernel ended it (no IORING_CQE_F_MORE). */
static int uring_wait(struct ring *r, int fd)
{
	for (;;) {
		unsigned h = *r->cq_head;
		unsigned t = atomic_load_explicit((_Atomic unsigned *)r->cq_tail,
						  memory_order_acquire);

		if (h == t) {
			unsigned f = atomic_load_explicit(
				(_Atomic unsigned *)r->sq_flags,
				memory_order_relaxed);

			if (g_mode == M_DEFER || (f & IORING_SQ_CQ_OVERFLOW) ||
			    (g_mode == M_COOP && (f & IORING_SQ_TASKRUN)))
				enter(r, 0, IORING_ENTER_GETEVENTS);
			continue;
		}
		struct io_uring_cqe c = r->cqes[h & *r->cq_mask];

		atomic_store_explicit((_Atomic unsigned *)r->cq_head, h + 1,
				      memory_order_release);
		if (c.user_data == UD_SEND)
			continue;
		if (!(c.flags & IORING_CQE_F_MORE))
			arm_recv(r, fd);
		if (c.res < 0) {
			if (c.res == -ENOBUFS)
				continue;
			errno = -c.res;
			die("recvmsg (multishot)");
		}
		unsigned bid = c.flags >> IORING_CQE_BUFFER_SHIFT;
		struct io_uring_recvmsg_out *o =
			(void *)(r->bufs + (size_t)bid * BUFSZ);
		int len = (int)o->payloadlen;
		/* Give the buffer back at the ring's tail. */
		uint16_t bt = r->br->tail;
		struct io_uring_buf *b = &r->br->bufs[bt & (NBUF - 1)];

		b->addr = (uintptr_t)(r->bufs + (size_t)bid * BUFSZ);
		b->len = BUFSZ;
		b->bid = (uint16_t)bid;
		atomic_store_explicit((_Atomic uint16_t *)&r->br->tail,
				      (uint16_t)(bt + 1), memory_order_release);
		return len;
	}
}

static void uring_send(struct ring *r, int fd, char *p, size_t n)
{
	struct io_uring_sqe *e = sqe_get(r);

	r->siov.iov_base = p;
	r->siov.iov_len = n;
	memset(&r->smsg, 0, sizeof(r->smsg));
	r->smsg.msg_iov = &r->siov;
	r->smsg.msg_iovlen = 1;
	e->opcode = IORING_OP_SENDMSG;
	e->fd = fd;
	e->addr = (uintptr_t)&r->smsg;
	e->len = 1;
	e->user_data = UD_SEND;
	sqe_push(r);
	if (enter(r, 1, 0) < 0)
		die("io_uring_enter (send)");
}

static void pin(int cpu)
{
	if (bench_pin(cpu))
		die("sched_setaffinity");
}

static int sock_pair_end(uint16_t port, uint16_t peer)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);

	if (fd < 0)
		die("socket");
	a.sin_port = htons(port);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)))
		die("bind");
	a.sin_port = htons(peer);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	return fd;
}

static int recv_wait(int fd, char *buf)
{
	for (;;) {
		ssize_t n = recv(fd, buf, BUFSZ, MSG_DONTWAIT);

		if (n >= 0)
			return (int)n;
		if (errno != EAGAIN)
			die("recv");
	}
}

/* -r: @first streams g_iters datagrams in sendmmsg calls of 32, then
 * 1-byte end marks; the other side receives (recvmmsg of 32 in recv mode)
 * and prints the datagrams received per second (the first to the last). */
static void rate_send(int fd)
{
	static char msg[BUFSZ];
	struct mmsghdr mm[32];
	struct iovec iov = { .iov_base = msg, .iov_len = g_size };

	memset(mm, 0, sizeof(mm));
	for (int i = 0; i < 32; i++) {
		mm[i].msg_hdr.msg_iov = &iov;
		mm[i].msg_hdr.msg_iovlen = 1;
	}
	usleep(100000); /* the receiver armed */
	for (int sent = 0; sent < g_iters;) {
		int k = g_iters - sent < 32 ? g_iters - sent : 32;
		int n = sendmmsg(fd, mm, (unsigned)k, 0);

		if (n < 0 && errno != EAGAIN && errno != ENOBUFS)
			die("sendmmsg");
		sent += n > 0 ? n : 0;
	}
	iov.iov_len = 1;
	for (int i = 0; i < 200; i++) {
		usleep(500);
		(void)send(fd, msg, 1, 0);
	}
}

static void rate_recv(int fd, struct ring *r)
{
	static char bufs[32][BUFSZ];
	struct mmsghdr mm[32];
	struct iovec iov[32];
	double t0 = 0, t1 = 0;
	long got = 0;

	memset(mm, 0, sizeof(mm));
	for (int i = 0; i < 32; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = BUFSZ;
		mm[i].msg_hdr.msg_iov = &iov[i];
		mm[i].msg_hdr.msg_iovlen = 1;
	}
	for (;;) {
		int lens[32], n = 0;

		if (g_mode == M_RECV) {
			n = recvmmsg(fd, mm, 32, MSG_DONTWAIT, NULL);
			if (n < 0 && errno != EAGAIN)
				die("recvmmsg");
			for (int i = 0; i < n; i++)
				lens[i] = (int)mm[i].msg_len;
		} else {
			lens[0] = uring_wait(r, fd);
			n = 1;
		}
		for (int i = 0; i < n; i++) {
			if (lens[i] == 1) {
				printf("%.4f\n", got / (t1 - t0));
				return;
			}
			if (!got)
				t0 = bench_now_us();
			got++;
			t1 = bench_now_us();
		}
	}
}

/* One side: @first sends first. Returns nothing; the first side prints. */
static void side(int fd, int first)
{
	static char buf[BUFSZ], msg[BUFSZ];
	struct ring r;
	unsigned fl = 0;
	double *rtt = NULL, t0 = 0;
	int total = WARMUP + g_iters;

	if (g_pin)
		pin(first ? 0 : 1);
	if (g_mode == M_COOP)
		fl = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
	if (g_mode == M_DEFER)
		fl = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	if (g_mode != M_RECV || g_usend) {
		ring_init(&r, fl);
		if (g_mode != M_RECV)
			arm_recv(&r, fd);
	}
	if (g_rate) {
		int big = 8 << 20;

		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
		if (first)
			rate_send(fd);
		else
			rate_recv(fd, &r);
		return;
	}
	if (first)
		rtt = calloc((size_t)g_iters, sizeof(*rtt));
	memset(msg, 0xab, sizeof(msg));
	for (int i = 0; i < total; i++) {
		if (first) {
			t0 = bench_now_us();
			if (g_usend)
				uring_send(&r, fd, msg, g_size);
			else if (send(fd, msg, g_size, 0) < 0)
				die("send");
		}
		int n = g_mode == M_RECV ? recv_wait(fd, buf) : uring_wait(&r, fd);

		if ((size_t)n != g_size) {
			fprintf(stderr, "got %d bytes\n", n);
			exit(1);
		}
		if (first) {
			if (i >= WARMUP)
				rtt[i - WARMUP] = bench_now_us() - t0;
		} else if (g_usend) {
			uring_send(&r, fd, msg, g_size);
		} else if (send(fd, msg, g_size, 0) < 0) {
			die("send");
		}
	}
	if (first) {
		qsort(rtt, (size_t)g_iters, sizeof(*rtt), bench_cmp_dbl);
		printf("%.3f %.3f\n", rtt[g_iters / 2] / 2, rtt[g_iters / 10] / 2);
	}
}

int main(int argc, char **argv)
{
	static const char *names[] = { "recv", "uring", "coop", "defer" };
	uint16_t base = (uint16_t)(20000 + getpid() % 20000);
	int o, a, b, st;
	pid_t kid;

	while ((o = getopt(argc, argv, "us:n:pr")) != -1) {
		switch (o) {
		case 'u': g_usend = 1; break;
		case 's': g_size = bench_parse_size(optarg); break;
		case 'n': g_iters = atoi(optarg); break;
		case 'p': g_pin = 1; break;
		case 'r': g_rate = 1; break;
		default: goto usage;
		}
	}
	if (optind >= argc || g_size == 0 || g_size > BUFSZ - 64 || g_iters < 10)
		goto usage;
	for (o = 0; o < 4; o++)
		if (!strcmp(argv[optind], names[o]))
			break;
	if (o == 4)
		goto usage;
	g_mode = (enum mode)o;
	a = sock_pair_end(base, (uint16_t)(base + 1));
	b = sock_pair_end((uint16_t)(base + 1), base);
	kid = fork();
	if (kid < 0)
		die("fork");
	if (kid == 0) {
		close(a);
		side(b, 0);
		fflush(stdout);
		_exit(0);
	}
	close(b);
	side(a, 1);
	waitpid(kid, &st, 0);
	return 0;
usage:
	fprintf(stderr, "usage: uring-pp recv|uring|coop|defer [-u] [-s BYTES] "
			"[-n ITERS] [-p] [-r]\n");
	return 2;
}

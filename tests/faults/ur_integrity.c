// SPDX-License-Identifier: MIT
/*
 * ur_integrity: move a lot of data over one RC QP with SENDs, WRITEs, READs
 * and atomics, and prove that every byte and every atomic result is right
 * and that no completion was lost or doubled. Public verbs API only; run
 * with build/bin/uroce-run (or any libibverbs). Server/client over a TCP
 * side channel, like ibv_rc_pingpong:
 *
 *   UROCE_IP=A ur_integrity [-p PORT] [-g GIDX]               # server
 *   UROCE_IP=B ur_integrity [-p PORT] [-g GIDX] [-m MIB] ... A   # client
 *
 * Per round (W = window bytes) the client WRITEs W bytes into the server,
 * then a control SEND "WDONE r"; SENDs W bytes as data messages; runs A
 * atomics (FETCH_ADD on NCNT counters, a chain of CMP_SWAPs); waits for
 * the server's "READY r" (the server verified the WRITE window and filled
 * its READ window) and READs W bytes back and checks them. Every byte is
 * a function of (seed, stream, absolute offset). Every WR is signaled and
 * completions must come back with consecutive wr_ids; every receive too.
 * At the end the server checks the counters and the CAS word.
 *
 * Exit 0 when everything verified; 1 on a mismatch or an error completion
 * (with --expect-error: 0 when the QP failed with RETRY_EXC_ERR, printing
 * how long after the last good completion).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define NCNT 8
#define CTRL_WDONE 1u
#define CTRL_DATA 2u
#define CTRL_READY 3u
#define CTRL_DONE 4u
#define CTRL_FIN 5u
#define IMM(t, v) htonl((t) << 24 | ((v) & 0xffffff))
#define RQ_SLOTS 128

struct params {
	uint64_t seed;
	uint32_t rounds, window, msg, atomics;
};

struct peer {
	uint32_t qpn, psn;
	union ibv_gid gid;
	uint64_t wbuf, rdbuf, atom;
	uint32_t wkey, rdkey, akey;
	struct params p;
};

static struct {
	const char *server;
	int port, gidx, timeout, retry, depth;
	uint64_t mib;
	struct params p;
	bool expect_error, no_read;
} opt = { .port = 18600, .gidx = 0, .timeout = 14, .retry = 7,
	  .depth = 32, .mib = 300,
	  .p = { .seed = 1, .window = 8u << 20, .msg = 65536, .atomics = 256 } };

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *scq, *rcq;
static struct ibv_qp *qp;
static uint8_t *wbuf, *rdbuf, *rqbuf, *lbuf, *expect, *sbuf;
static uint64_t *atom, *fetched;
static struct ibv_mr *wmr, *rdmr, *rqmr, *lmr, *amr, *fmr, *smr;
static uint64_t send_posted, send_done, recv_posted, recv_done;
static uint64_t moved_send, moved_write, moved_read, n_atomic;
static double t_last_good;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
	fprintf(stderr, "ur_integrity: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "ur_integrity: FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The bytes of stream @s at absolute offset @off (8-aligned), @len bytes. */
static void pattern(uint8_t *dst, uint32_t s, uint64_t off, uint32_t len)
{
	uint64_t base = opt.p.seed * 0x100000001b3ull ^ (uint64_t)s << 56;

	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t w = mix(base ^ ((off + i) >> 3));

		memcpy(dst + i, &w, 8);
	}
}

static void check(const uint8_t *got, uint32_t s, uint64_t off, uint32_t len,
		  const char *what)
{
	pattern(expect, s, off, len);
	if (memcmp(got, expect, len)) {
		uint32_t i = 0;

		while (got[i] == expect[i])
			i++;
		fail("%s: byte %" PRIu64 " is 0x%02x, expected 0x%02x (seed %" PRIu64 ")",
		     what, off + i, got[i], expect[i], opt.p.seed);
	}
}

static uint64_t cas_val(uint64_t k)
{
	return mix(opt.p.seed * 31 + k) | 1;
}

/* ---- side channel -------------------------------------------------------- */
static void xfer(int fd, void *buf, size_t len, bool out)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = out ? write(fd, p, len) : read(fd, p, len);

		if (n <= 0)
			die("side channel");
		p += n;
		len -= (size_t)n;
	}
}

static int side_channel(void)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char port[16];
	int fd, one = 1;

	snprintf(port, sizeof(port), "%d", opt.port);
	if (opt.server) {
		if (getaddrinfo(opt.server, port, &hints, &res))
			die("getaddrinfo");
		for (int i = 0; i < 100; i++) {
			fd = socket(AF_INET, SOCK_STREAM, 0);
			if (!connect(fd, res->ai_addr, res->ai_addrlen))
				break;
			close(fd);
			fd = -1;
			usleep(100000);
		}
		freeaddrinfo(res);
		if (fd < 0)
			die("connect");
		return fd;
	}
	{
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_port = htons((uint16_t)opt.port) };
		int l = socket(AF_INET, SOCK_STREAM, 0);

		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1))
			die("listen");
		fd = accept(l, NULL, NULL);
		close(l);
		if (fd < 0)
			die("accept");
		return fd;
	}
}

/* ---- verbs --------------------------------------------------------------- */
static struct ibv_mr *reg(void *p, size_t len)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, p, len, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ |
				       IBV_ACCESS_REMOTE_ATOMIC);
	if (!mr)
		die("ibv_reg_mr");
	return mr;
}

static void *zalloc(size_t len)
{
	void *p;

	if (posix_memalign(&p, 4096, len))
		die("memory");
	memset(p, 0, len);
	return p;
}

static void setup(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr ia = { 0 };
	uint32_t w = opt.p.window, m = opt.p.msg;

	if (!list || !list[0])
		die("no RDMA device");
	ctx = ibv_open_device(list[0]);
	if (!ctx)
		die("ibv_open_device");
	ibv_free_device_list(list);
	pd = ibv_alloc_pd(ctx);
	scq = ibv_create_cq(ctx, 4096, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, 4096, NULL, NULL, 0);
	if (!pd || !scq || !rcq)
		die("pd/cq");
	wbuf = zalloc(w);
	rdbuf = zalloc(w);
	lbuf = zalloc(w > m ? w : m);
	expect = zalloc(w > m ? w : m);
	rqbuf = zalloc((size_t)RQ_SLOTS * m);
	atom = zalloc(4096);
	fetched = zalloc(sizeof(uint64_t) * 4096);
	sbuf = zalloc((size_t)opt.depth * m);
	smr = reg(sbuf, (size_t)opt.depth * m);
	wmr = reg(wbuf, w);
	rdmr = reg(rdbuf, w);
	lmr = reg(lbuf, w > m ? w : m);
	rqmr = reg(rqbuf, (size_t)RQ_SLOTS * m);
	amr = reg(atom, 4096);
	fmr = reg(fetched, sizeof(uint64_t) * 4096);
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 1024;
	ia.cap.max_recv_wr = RQ_SLOTS;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &ia);
	if (!qp)
		die("ibv_create_qp");
}

static void connect_qp(const struct peer *me, const struct peer *rem)
{
	struct ibv_port_attr pa;
	struct ibv_qp_attr a = { 0 };

	if (ibv_query_port(ctx, 1, &pa))
		die("ibv_query_port");
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = pa.active_mtu;
	a.dest_qp_num = rem->qpn;
	a.rq_psn = rem->psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = rem->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)opt.gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = me->psn;
	a.timeout = (uint8_t)opt.timeout;
	a.retry_cnt = (uint8_t)opt.retry;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
}

static void post_recv(void)
{
	uint64_t id = recv_posted++;
	struct ibv_sge sge = { (uintptr_t)(rqbuf + (id % RQ_SLOTS) * opt.p.msg),
			       opt.p.msg, rqmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		die("ibv_post_recv");
}

static void wc_error(const struct ibv_wc *wc, const char *q)
{
	double dt = now_s() - t_last_good;

	if (opt.expect_error && wc->status == IBV_WC_RETRY_EXC_ERR) {
		printf("dead peer: %s wr_id %" PRIu64 " %s %.1f ms after the last good completion\n",
		       q, wc->wr_id, ibv_wc_status_str(wc->status), dt * 1e3);
		fflush(stdout);
		exit(0);
	}
	fail("%s completion wr_id %" PRIu64 ": %s (%d)", q, wc->wr_id,
	     ibv_wc_status_str(wc->status), wc->status);
}

/* Reap send completions; each must be the next wr_id. Block until at most
 * @left are outstanding. */
static void reap_send(uint64_t left)
{
	struct ibv_wc wc[32];

	while (send_posted - send_done > left) {
		int n = ibv_poll_cq(scq, 32, wc);

		if (n < 0)
			die("ibv_poll_cq");
		for (int i = 0; i < n; i++) {
			if (wc[i].status)
				wc_error(&wc[i], "send");
			if (wc[i].wr_id != send_done)
				fail("send completion wr_id %" PRIu64 ", expected %" PRIu64
				     " (lost or doubled)", wc[i].wr_id, send_done);
			send_done++;
			t_last_good = now_s();
		}
	}
}

static void post_send(struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	reap_send((uint64_t)opt.depth - 1);
	wr->wr_id = send_posted++;
	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(qp, wr, &bad))
		die("ibv_post_send");
}

/* Next receive completion (in wr_id order); returns its slot. */
static uint8_t *next_recv(struct ibv_wc *out)
{
	for (;;) {
		int n = ibv_poll_cq(rcq, 1, out);

		if (n < 0)
			die("ibv_poll_cq");
		if (!n) {
			/* Keep the send queue moving while we wait. */
			struct ibv_wc wc;

			if (send_posted != send_done &&
			    ibv_poll_cq(scq, 1, &wc) == 1) {
				if (wc.status)
					wc_error(&wc, "send");
				if (wc.wr_id != send_done)
					fail("send completion wr_id %" PRIu64
					     ", expected %" PRIu64, wc.wr_id, send_done);
				send_done++;
				t_last_good = now_s();
			}
			continue;
		}
		if (out->status)
			wc_error(out, "recv");
		if (out->wr_id != recv_done)
			fail("recv completion wr_id %" PRIu64 ", expected %" PRIu64
			     " (lost or doubled)", out->wr_id, recv_done);
		recv_done++;
		t_last_good = now_s();
		return rqbuf + (out->wr_id % RQ_SLOTS) * opt.p.msg;
	}
}

static void send_ctrl(uint32_t type, uint32_t v)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND_WITH_IMM, .num_sge = 0,
				  .imm_data = IMM(type, v) };

	post_send(&wr);
}

/* ---- the two sides -------------------------------------------------------- */
static void client(const struct peer *rem)
{
	const struct params *p = &opt.p;
	uint64_t cas_k = 0, fadd_k[NCNT] = { 0 }, data_seq = 0, fadd_n = 0;
	uint32_t per = p->window / p->msg;
	double t0 = now_s();

	for (uint32_t r = 0; r < p->rounds; r++) {
		uint64_t base = (uint64_t)r * p->window;
		uint32_t nat = p->atomics, fi = 0;
		struct ibv_wc wc;
		uint8_t *slot;

		/* WRITE the window. lbuf holds the pattern for this round. */
		pattern(lbuf, 'W', base, p->window);
		for (uint32_t i = 0; i < per; i++) {
			struct ibv_sge sge = { (uintptr_t)(lbuf + i * p->msg), p->msg, lmr->lkey };
			struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_WRITE,
				.sg_list = &sge, .num_sge = 1,
				.wr.rdma = { rem->wbuf + i * p->msg, rem->wkey } };

			post_send(&wr);
			moved_write += p->msg;
		}
		send_ctrl(CTRL_WDONE, r);
		/* Atomics, interleaved with the data SENDs below. */
		for (uint32_t i = 0; i < per || nat; i++) {
			if (i < per) {
				/* A ring of depth slots: the WR that used this
				 * slot was posted >= depth WRs ago, and at most
				 * depth - 1 are outstanding after the reap. */
				uint8_t *sd = sbuf + (data_seq % (uint64_t)opt.depth) * p->msg;
				struct ibv_sge sge = { (uintptr_t)sd, p->msg, smr->lkey };
				struct ibv_send_wr wr = { .opcode = IBV_WR_SEND_WITH_IMM,
					.sg_list = &sge, .num_sge = 1,
					.imm_data = IMM(CTRL_DATA, data_seq) };

				reap_send((uint64_t)opt.depth - 1);
				pattern(sd, 'S', data_seq * p->msg, p->msg);
				post_send(&wr);
				data_seq++;
				moved_send += p->msg;
			}
			for (int k = 0; k < 2 && nat; k++, nat--) {
				struct ibv_sge sge = { (uintptr_t)&fetched[fi], 8, fmr->lkey };
				struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1 };

				if (nat & 1) {
					wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
					wr.wr.atomic.remote_addr = rem->atom + NCNT * 8;
					wr.wr.atomic.compare_add = cas_val(cas_k);
					wr.wr.atomic.swap = cas_val(cas_k + 1);
					wr.wr.atomic.rkey = rem->akey;
					fetched[fi + 2048] = cas_val(cas_k++);
				} else {
					uint32_t c = (uint32_t)(fadd_n++ % NCNT);

					wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
					wr.wr.atomic.remote_addr = rem->atom + c * 8;
					wr.wr.atomic.compare_add = 1;
					wr.wr.atomic.rkey = rem->akey;
					fetched[fi + 2048] = fadd_k[c]++;
				}
				post_send(&wr);
				n_atomic++;
				fi++;
			}
		}
		reap_send(0);
		for (uint32_t i = 0; i < fi; i++)
			if (fetched[i] != fetched[i + 2048])
				fail("round %u atomic %u returned 0x%" PRIx64 ", expected 0x%" PRIx64,
				     r, i, fetched[i], fetched[i + 2048]);
		/* READY r: the server checked the WRITE window. */
		slot = next_recv(&wc);
		(void)slot;
		post_recv();
		if (!(wc.wc_flags & IBV_WC_WITH_IMM) ||
		    ntohl(wc.imm_data) != (CTRL_READY << 24 | (r & 0xffffff)))
			fail("expected READY %u, got imm 0x%x", r, ntohl(wc.imm_data));
		for (uint32_t i = 0; i < per && !opt.no_read; i++) {
			struct ibv_sge sge = { (uintptr_t)(lbuf + i * p->msg), p->msg, lmr->lkey };
			struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_READ,
				.sg_list = &sge, .num_sge = 1,
				.wr.rdma = { rem->rdbuf + i * p->msg, rem->rdkey } };

			post_send(&wr);
			moved_read += p->msg;
		}
		reap_send(0);
		if (!opt.no_read)
			check(lbuf, 'R', base, p->window, "READ");
	}
	send_ctrl(CTRL_DONE, p->rounds);
	reap_send(0);
	{
		struct ibv_wc wc;

		next_recv(&wc);
		if (ntohl(wc.imm_data) >> 24 != CTRL_FIN)
			fail("expected FIN");
	}
	{
		double dt = now_s() - t0;
		uint64_t tot = moved_send + moved_write + moved_read;

		printf("moved %.1f MiB in %.2f s = %.1f Mbit/s: SEND %" PRIu64 " MiB, WRITE %" PRIu64
		       " MiB, READ %" PRIu64 " MiB, %" PRIu64 " atomics; %" PRIu64
		       " send + %" PRIu64 " recv completions in order; all verified\n",
		       tot / 1048576.0, dt, tot * 8 / dt / 1e6, moved_send >> 20,
		       moved_write >> 20, moved_read >> 20, n_atomic, send_done, recv_done);
	}
}

static void server(void)
{
	const struct params *p = &opt.p;
	uint64_t data_seq = 0, fadd = 0, cas = 0;

	for (;;) {
		struct ibv_wc wc;
		uint8_t *slot = next_recv(&wc);
		uint32_t imm = ntohl(wc.imm_data), type = imm >> 24, v = imm & 0xffffff;

		post_recv();
		if (!(wc.wc_flags & IBV_WC_WITH_IMM))
			fail("receive without immediate");
		switch (type) {
		case CTRL_DATA:
			if (v != (data_seq & 0xffffff) || wc.byte_len != p->msg)
				fail("data message %u (%u bytes), expected %" PRIu64,
				     v, wc.byte_len, data_seq);
			check(slot, 'S', data_seq * p->msg, p->msg, "SEND");
			data_seq++;
			moved_send += p->msg;
			break;
		case CTRL_WDONE:
			check(wbuf, 'W', (uint64_t)v * p->window, p->window, "WRITE");
			moved_write += p->window;
			memset(wbuf, 0, p->window);
			pattern(rdbuf, 'R', (uint64_t)v * p->window, p->window);
			send_ctrl(CTRL_READY, v);
			break;
		case CTRL_DONE:
			fadd = (uint64_t)p->rounds * (p->atomics / 2);
			cas = (uint64_t)p->rounds * (p->atomics - p->atomics / 2);
			for (int c = 0; c < NCNT; c++) {
				uint64_t want = fadd / NCNT + ((uint64_t)c < fadd % NCNT);

				if (atom[c] != want)
					fail("counter %d is %" PRIu64 ", expected %" PRIu64,
					     c, atom[c], want);
			}
			if (atom[NCNT] != cas_val(cas))
				fail("CAS word 0x%" PRIx64 ", expected 0x%" PRIx64,
				     atom[NCNT], cas_val(cas));
			send_ctrl(CTRL_FIN, 0);
			reap_send(0);
			printf("server: verified %" PRIu64 " MiB SENT, %" PRIu64
			       " MiB WRITTEN, %" PRIu64 " FETCH_ADD + %" PRIu64
			       " CMP_SWAP results; %" PRIu64 " recv completions in order\n",
			       moved_send >> 20, moved_write >> 20, fadd, cas, recv_done);
			return;
		default:
			fail("unexpected control message 0x%x", imm);
		}
	}
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "port", 1, 0, 'p' }, { "gid-idx", 1, 0, 'g' },
		{ "mib", 1, 0, 'm' }, { "size", 1, 0, 's' },
		{ "window", 1, 0, 'w' }, { "atomics", 1, 0, 'a' },
		{ "seed", 1, 0, 'S' }, { "timeout", 1, 0, 't' },
		{ "retry", 1, 0, 'r' }, { "depth", 1, 0, 'd' },
		{ "expect-error", 0, 0, 'E' }, { "no-read", 0, 0, 'N' }, { 0 } };
	struct peer me = { 0 }, rem;
	int c, fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "p:g:m:s:w:a:S:t:r:d:E", lo, NULL)) != -1) {
		switch (c) {
		case 'p': opt.port = atoi(optarg); break;
		case 'g': opt.gidx = atoi(optarg); break;
		case 'm': opt.mib = strtoull(optarg, NULL, 0); break;
		case 's': opt.p.msg = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'w': opt.p.window = (uint32_t)strtoul(optarg, NULL, 0) << 20; break;
		case 'a': opt.p.atomics = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'S': opt.p.seed = strtoull(optarg, NULL, 0); break;
		case 't': opt.timeout = atoi(optarg); break;
		case 'r': opt.retry = atoi(optarg); break;
		case 'd': opt.depth = atoi(optarg); break;
		case 'E': opt.expect_error = true; break;
		case 'N': opt.no_read = true; break;
		default:
			fprintf(stderr, "usage: %s [-p port] [-g gid] [-m MiB] [-s msg] [-w windowMiB] "
				"[-a atomics/round] [-S seed] [-t timeout] [-r retry] [-d depth] "
				"[--expect-error] [--no-read] [server]\n", argv[0]);
			return 2;
		}
	}
	if (optind < argc)
		opt.server = argv[optind];
	if (opt.no_read) /* no READ stream: the window is written and sent */
		opt.mib = opt.mib * 3 / 2;
	if (opt.p.msg < 64 || opt.p.msg % 8 || opt.p.window % opt.p.msg ||
	    opt.p.atomics > 2048 || opt.depth < 1 || opt.depth > 512)
		fail("bad sizes");
	/* Three streams of one window per round. */
	opt.p.rounds = (uint32_t)((opt.mib << 20) / (3ull * opt.p.window));
	if (!opt.p.rounds)
		opt.p.rounds = 1;
	setup();
	me.qpn = qp->qp_num;
	me.psn = (uint32_t)(mix(opt.p.seed ^ (uintptr_t)qp) & 0xffffff);
	if (ibv_query_gid(ctx, 1, opt.gidx, &me.gid))
		die("ibv_query_gid");
	me.wbuf = (uintptr_t)wbuf;
	me.rdbuf = (uintptr_t)rdbuf;
	me.atom = (uintptr_t)atom;
	me.wkey = wmr->rkey;
	me.rdkey = rdmr->rkey;
	me.akey = amr->rkey;
	me.p = opt.p;
	fd = side_channel();
	xfer(fd, &me, sizeof(me), true);
	xfer(fd, &rem, sizeof(rem), false);
	if (!opt.server) { /* the client's parameters rule */
		opt.p = rem.p;
		atom[NCNT] = cas_val(0);
	}
	connect_qp(&me, &rem);
	for (int i = 0; i < RQ_SLOTS - 1; i++)
		post_recv();
	/* Both RTR/RTS before anything is sent. */
	xfer(fd, &c, 1, true);
	xfer(fd, &c, 1, false);
	t_last_good = now_s();
	/* A QP stays until its peer is done with it: a send completes only
	 * when the ACK arrives, and a lost ACK is answered again only while
	 * the responder's QP lives (the server's FIN, the client's DONE). The
	 * client, done with both, shuts its end of the TCP connection; the
	 * server waits for that, then closes; the client waits for the
	 * close. A failure exits, which closes the connection too. */
	if (opt.server) {
		client(&rem);
		shutdown(fd, SHUT_WR);
	} else {
		server();
	}
	while (read(fd, &c, 1) > 0)
		;
	close(fd);
	ibv_destroy_qp(qp);
	ibv_close_device(ctx);
	return 0;
}

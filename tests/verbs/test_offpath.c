// SPDX-License-Identifier: MIT
/*
 * Off-path injection against a real pair (issue 34, docs/security.md): a
 * victim V (this process, UROCE_IP=127.0.0.2) and its peer P (a child
 * process, 127.0.0.3) connected by RC; an attacker on 127.0.0.9 that knows
 * every QPN, PSN, rkey and address and builds its packets with the
 * project's codec (valid ICRCs, as test_cm_replay's fake peer):
 *
 *   WRITE at V's expected PSN with V's rkey, SEND, FETCH_ADD, a WRITE with
 *   a bad rkey, a READ "behind" the expected PSN for 64 KiB (reflection
 *   to P), then a flood of remote-access NAKs over the whole PSN space in
 *   strides of 128 and ACKs, while V streams WRITEs to P.
 *
 * Nothing is placed or answered, V's QP stays RTS, V's and P's own
 * traffic goes on, and V's counters (read from its stat file, as
 * uroce-stat does) show rx_drop_offpath. Controls from P's address (on
 * another UDP port: the port is not checked): a duplicate READ outside
 * the responder's window is dropped (rx_drop_dup_rd), and a WRITE at the
 * expected PSN lands, so the checks above could have failed.
 *
 * Variants (CMake): the pair over shared memory (UROCE_SHM=1: its records
 * carry the sender's address), and P on V's own address
 * (OFFPATH_PEER_IP=127.0.0.2: sibling forwarding keeps the source).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <uroce/stat.h>

#include "ur_test.h"
#include "ur_wire.h"

#define V_IP "127.0.0.2"
/* P's address; OFFPATH_PEER_IP=127.0.0.2 puts P on V's address: the two
 * processes share it (SO_REUSEPORT) and a packet the kernel hands to the
 * other one is forwarded with its original source (docs/engine.md). */
static const char *p_ip(void)
{
	const char *ip = getenv("OFFPATH_PEER_IP");

	return ip && *ip ? ip : "127.0.0.3";
}
#define EVIL_IP "127.0.0.9"
#define BUF (1u << 20)
#define SRC (BUF / 2) /* V's stream comes from here */
#define STREAM 2000
#define ACC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |              \
	     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

struct info {
	uint32_t qpn, psn, rkey;
	uint64_t addr;
	union ibv_gid gid;
};

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct info me, peer;
};

static uint16_t port(void)
{
	const char *p = getenv("UROCE_PORT");

	return p ? (uint16_t)atoi(p) : 4791;
}

static void xfer(int fd, void *p, size_t n, bool out)
{
	ssize_t r = out ? write(fd, p, n) : read(fd, p, n);

	if (r != (ssize_t)n)
		UR_FAIL("%s on the side channel: %zd (%s)", out ? "write" : "read",
			r, strerror(errno));
}

static void end_open(struct end *e, int sock, uint32_t psn)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 256, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr qa;

	ASSERT(l && l[0]);
	e->ctx = ibv_open_device(l[0]);
	ASSERT(e->ctx);
	ibv_free_device_list(l);
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, 1024, NULL, NULL, 0);
	ASSERT(e->pd && e->cq);
	e->buf = aligned_alloc(4096, BUF);
	ASSERT(e->buf);
	memset(e->buf, 0, BUF);
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF, ACC);
	ASSERT(e->mr);
	ia.send_cq = ia.recv_cq = e->cq;
	e->qp = ibv_create_qp(e->pd, &ia);
	ASSERT(e->qp);
	memset(&e->me, 0, sizeof(e->me));
	e->me.qpn = e->qp->qp_num;
	e->me.psn = psn;
	e->me.rkey = e->mr->rkey;
	e->me.addr = (uintptr_t)e->buf;
	ASSERT_EQ(ibv_query_gid(e->ctx, 1, 0, &e->me.gid), 0);
	xfer(sock, &e->me, sizeof(e->me), true);
	xfer(sock, &e->peer, sizeof(e->peer), false);

	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	qa.qp_access_flags = ACC;
	ASSERT_EQ(ibv_modify_qp(e->qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = IBV_MTU_1024;
	qa.dest_qp_num = e->peer.qpn;
	qa.rq_psn = e->peer.psn;
	qa.max_dest_rd_atomic = 4;
	qa.min_rnr_timer = 1;
	qa.ah_attr.is_global = 1;
	qa.ah_attr.port_num = 1;
	qa.ah_attr.grh.hop_limit = 64;
	qa.ah_attr.grh.dgid = e->peer.gid;
	ASSERT_EQ(ibv_modify_qp(e->qp, &qa, IBV_QP_STATE | IBV_QP_AV |
				IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER), 0);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	qa.timeout = 14;
	qa.retry_cnt = 7;
	qa.rnr_retry = 7;
	qa.sq_psn = psn;
	qa.max_rd_atomic = 4;
	ASSERT_EQ(ibv_modify_qp(e->qp, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT |
				IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC), 0);
}

static int post(struct end *e, enum ibv_wr_opcode op, uint64_t id,
		uint32_t off, uint32_t len, uint64_t raddr, uint64_t add)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + off, len, e->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = e->peer.rkey;
		wr.wr.atomic.compare_add = add;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = e->peer.rkey;
	}
	return ibv_post_send(e->qp, &wr, &bad);
}

/* The next completion within 10 s; its status must be success. */
static struct ibv_wc wait_wc(struct end *e)
{
	struct ibv_wc wc;
	time_t t0 = time(NULL);
	int n;

	while ((n = ibv_poll_cq(e->cq, 1, &wc)) == 0)
		if (time(NULL) - t0 > 10)
			UR_FAIL("no completion within 10 s");
	ASSERT_EQ(n, 1);
	if (wc.status != IBV_WC_SUCCESS)
		UR_FAIL("wr_id %llu completed with status %d (%s)",
			(unsigned long long)wc.wr_id, wc.status,
			ibv_wc_status_str(wc.status));
	return wc;
}

static enum ibv_qp_state qp_state(struct end *e)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	ASSERT_EQ(ibv_query_qp(e->qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

/* ---- the peer, P ------------------------------------------------------ */
static void peer_main(int sock, uint32_t psn)
{
	struct end e = { 0 };
	char cmd;

	setenv("UROCE_IP", p_ip(), 1);
	end_open(&e, sock, psn);
	for (;;) {
		xfer(sock, &cmd, 1, false);
		if (cmd == 'q')
			break;
		/* P's own traffic to V: a WRITE, a SEND, a FETCH_ADD, a
		 * READ: 4 request PSNs. */
		memset(e.buf, 0x5c, 1024);
		ASSERT_EQ(post(&e, IBV_WR_RDMA_WRITE, 1, 0, 1024,
			       e.peer.addr + 8192, 0), 0);
		ASSERT_EQ(post(&e, IBV_WR_SEND, 2, 0, 64, 0, 0), 0);
		ASSERT_EQ(post(&e, IBV_WR_ATOMIC_FETCH_AND_ADD, 3, 2048, 8,
			       e.peer.addr + 16384, 7), 0);
		ASSERT_EQ(post(&e, IBV_WR_RDMA_READ, 4, 4096, 1024,
			       e.peer.addr + 8192, 0), 0);
		for (int i = 1; i <= 4; i++)
			ASSERT_EQ(wait_wc(&e).wr_id, i);
		ASSERT_MEM_EQ(e.buf + 4096, e.buf, 1024);
		ASSERT_EQ(qp_state(&e), IBV_QPS_RTS);
		xfer(sock, &cmd, 1, true);
	}
	_exit(0);
}

/* ---- the attacker ------------------------------------------------------ */
struct evil {
	int fd;
	uint8_t src[4];
	uint16_t sport;
};

static void evil_open(struct evil *ev, const char *ip, uint16_t sport)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(sport) };
	int pmtu = IP_PMTUDISC_DO; /* DF and IP ID 0, as the ICRC assumes */

	inet_pton(AF_INET, ip, &a.sin_addr);
	memcpy(ev->src, &a.sin_addr, 4);
	ev->sport = sport;
	ev->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ASSERT_GE(ev->fd, 0);
	setsockopt(ev->fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	ASSERT_EQ(bind(ev->fd, (struct sockaddr *)&a, sizeof(a)), 0);
}

/* Send @x (opcode, dqpn, psn and the headers it needs) to V with a valid
 * ICRC for the IP/UDP headers the kernel puts on. */
static void evil_send(const struct evil *ev, struct ur_pkt *x,
		      const void *pl, uint32_t pl_len)
{
	uint8_t buf[2048];
	struct ur_ipudp path = { .sport = ev->sport, .dport = port(),
				 .ttl = 64, .ip_frag = 0x4000 };
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons(port()) };
	int n;

	x->h.pkey = 0xffff;
	x->h.ackreq = true;
	n = ur_pkt_encode(buf, sizeof(buf), x, pl, pl_len);
	ASSERT_GT(n, 0);
	memcpy(path.src, ev->src, 4);
	inet_pton(AF_INET, V_IP, path.dst);
	inet_pton(AF_INET, V_IP, &to.sin_addr);
	ur_icrc_store(buf + n - 4, ur_icrc(&path, buf, (size_t)n - 4));
	while (sendto(ev->fd, buf, (size_t)n, 0, (struct sockaddr *)&to,
		      sizeof(to)) != n)
		ASSERT(errno == EAGAIN || errno == ENOBUFS || errno == EINTR);
}

struct flood {
	struct evil ev;
	uint32_t qpn;
	atomic_bool stop;
	atomic_ulong sent, sweeps;
};

/* NAK remote access error for every 128th PSN of the space, and an ACK
 * for each, again and again until told to stop. */
static void *flood_main(void *arg)
{
	struct flood *f = arg;

	while (!atomic_load(&f->stop)) {
		for (uint32_t p = 0; p <= UR_PSN_MASK && !atomic_load(&f->stop);
		     p += 128) {
			struct ur_pkt x = { .h = { .opcode = UR_OP_RC_ACKNOWLEDGE,
						   .dqpn = f->qpn, .psn = p } };

			x.aeth.syndrome = ur_aeth_nak(UR_NAK_REM_ACCESS_ERR);
			evil_send(&f->ev, &x, NULL, 0);
			x.aeth.syndrome = ur_aeth_ack(0x1f);
			x.h.psn = ur_psn_add(p, 64);
			evil_send(&f->ev, &x, NULL, 0);
			atomic_fetch_add(&f->sent, 2);
		}
		atomic_fetch_add(&f->sweeps, 1);
	}
	return NULL;
}

/* ---- V's counters, from its stat file ---------------------------------- */
static uint64_t counter(struct end *e, const char *name)
{
	char path[256];
	struct uroce_stat_file *f;
	uint64_t v = UINT64_MAX, s0, s1;
	int fd;

	/* The engine copies them every 10 ms: let the last ones land. */
	usleep(60 * 1000);
	snprintf(path, sizeof(path), "/dev/shm/" UROCE_STAT_PREFIX "%d-%s",
		 (int)getpid(), ibv_get_device_name(e->ctx->device));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		UR_FAIL("%s: %s", path, strerror(errno));
	f = mmap(NULL, sizeof(*f), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	ASSERT(f != MAP_FAILED);
	do {
		s0 = atomic_load((_Atomic uint64_t *)&f->seq);
		for (uint32_t i = 0; i < f->n_dev && i < UROCE_STAT_MAX_DEV; i++)
			if (!strcmp(f->dev_names[i], name))
				v = f->dev_v[i];
		s1 = atomic_load((_Atomic uint64_t *)&f->seq);
	} while ((s0 & 1) || s0 != s1);
	munmap(f, sizeof(*f));
	if (v == UINT64_MAX)
		UR_FAIL("no counter %s in %s", name, path);
	return v;
}

/* The counter once it shows @want (the engine's copy lags by about
 * 10 ms, more on a loaded machine), or what it shows after 5 s. */
static uint64_t counter_wait(struct end *e, const char *name, uint64_t want)
{
	uint64_t v = counter(e, name);

	for (int i = 0; i < 80 && v != want; i++)
		v = counter(e, name);
	return v;
}

static void t_offpath(void)
{
	uint32_t vpsn = (uint32_t)(ur_test_seed & UR_PSN_MASK);
	uint32_t ppsn = (uint32_t)(ur_test_seed >> 24 & UR_PSN_MASK);
	struct end v = { 0 };
	struct evil ev, ctl;
	struct flood fl = { 0 };
	struct ur_pkt x;
	uint8_t data[1024];
	uint64_t tx0, off0, drop_icrc0, dup0, wvals;
	struct ibv_sge rs;
	struct ibv_recv_wr rw = { .wr_id = 77, .sg_list = &rs, .num_sge = 1 },
			   *bad;
	struct ibv_wc wc;
	pthread_t th;
	int sv[2], status;
	uint32_t done = 0, posted = 0;
	pid_t child;
	char cmd = 'w';

	ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		close(sv[0]);
		peer_main(sv[1], ppsn);
	}
	close(sv[1]);
	setenv("UROCE_IP", V_IP, 1);
	end_open(&v, sv[0], vpsn);
	rs = (struct ibv_sge){ (uintptr_t)v.buf + 32768, 1024, v.mr->lkey };
	ASSERT_EQ(ibv_post_recv(v.qp, &rw, &bad), 0);
	tx0 = counter(&v, "tx_packets");
	off0 = counter(&v, "rx_drop_offpath");
	drop_icrc0 = counter(&v, "rx_drop_icrc");
	ASSERT_EQ(off0, 0);

	/* 1. Requests from 127.0.0.9 at V's expected PSN (P's first). */
	evil_open(&ev, EVIL_IP, 0xc001); /* a RoCEv2-like source port */
	memset(data, 0xee, sizeof(data));
	x = (struct ur_pkt){ .h = { .opcode = UR_OP_RC_RDMA_WRITE_ONLY,
				    .dqpn = v.me.qpn, .psn = ppsn },
			     .reth = { v.me.addr, v.me.rkey, 1024 } };
	evil_send(&ev, &x, data, 1024);
	x = (struct ur_pkt){ .h = { .opcode = UR_OP_RC_SEND_ONLY,
				    .dqpn = v.me.qpn, .psn = ppsn } };
	evil_send(&ev, &x, data, 64);
	x = (struct ur_pkt){ .h = { .opcode = UR_OP_RC_FETCH_ADD,
				    .dqpn = v.me.qpn, .psn = ppsn },
			     .atm = { v.me.addr + 16384, v.me.rkey, 1, 0 } };
	evil_send(&ev, &x, NULL, 0);
	x = (struct ur_pkt){ .h = { .opcode = UR_OP_RC_RDMA_WRITE_ONLY,
				    .dqpn = v.me.qpn, .psn = ppsn },
			     .reth = { v.me.addr, v.me.rkey ^ 0x00ff0000, 1024 } };
	evil_send(&ev, &x, data, 1024);
	/* A READ half the space "behind": 64 KiB of responses to P. */
	x = (struct ur_pkt){ .h = { .opcode = UR_OP_RC_RDMA_READ_REQUEST,
				    .dqpn = v.me.qpn,
				    .psn = ur_psn_add(ppsn, UR_PSN_MASK - 1000) },
			     .reth = { v.me.addr, v.me.rkey, 65536 } };
	evil_send(&ev, &x, NULL, 0);
	ASSERT_EQ(counter_wait(&v, "rx_drop_offpath", 5), 5);
	ASSERT_EQ(counter(&v, "rx_drop_icrc"), drop_icrc0);
	ASSERT_EQ(counter(&v, "tx_packets"), tx0); /* nothing answered */
	ASSERT(ur_test_all(v.buf, 0, BUF));
	ASSERT_EQ(ibv_poll_cq(v.cq, 1, &wc), 0);
	ASSERT_EQ(qp_state(&v), IBV_QPS_RTS);

	/* 2. The same READ from P's address (another UDP port): it passes
	 * the address check, and is outside the responder's window. */
	evil_open(&ctl, p_ip(), (uint16_t)(port() + 1));
	dup0 = counter(&v, "rx_drop_dup_rd");
	evil_send(&ctl, &x, NULL, 0);
	ASSERT_EQ(counter_wait(&v, "rx_drop_dup_rd", dup0 + 1), dup0 + 1);
	ASSERT_EQ(counter(&v, "tx_packets"), tx0);
	ASSERT_EQ(qp_state(&v), IBV_QPS_RTS);

	/* 3. V streams 4 KiB WRITEs to P under a NAK and ACK flood that
	 * sweeps the PSN space at least once. */
	fl.ev = ev;
	fl.qpn = v.me.qpn;
	ASSERT_EQ(pthread_create(&th, NULL, flood_main, &fl), 0);
	while (done < STREAM || atomic_load(&fl.sweeps) < 2) {
		/* 64 WRITEs of 4 packets in flight: 256 PSNs, more than
		 * the flood's stride. A slot is reused 128 posts later. */
		while (posted - done < 64) {
			uint32_t o = (posted % 128) * 4096;

			memset(v.buf + SRC + o, (int)(posted & 0xff), 4096);
			ASSERT_EQ(post(&v, IBV_WR_RDMA_WRITE, posted, SRC + o,
				       4096, v.peer.addr + o, 0), 0);
			posted++;
		}
		ASSERT_EQ(wait_wc(&v).wr_id, done);
		done++;
	}
	atomic_store(&fl.stop, true);
	pthread_join(th, NULL);
	while (done < posted)
		ASSERT_EQ(wait_wc(&v).wr_id, done++);
	ASSERT_EQ(qp_state(&v), IBV_QPS_RTS);
	/* What P holds is what V wrote last: READ it back. */
	ASSERT_EQ(post(&v, IBV_WR_RDMA_READ, 1u << 30, 0, 65536,
		       v.peer.addr, 0), 0);
	ASSERT_EQ(wait_wc(&v).wr_id, 1u << 30);
	ASSERT_MEM_EQ(v.buf, v.buf + SRC, 65536);
	memset(v.buf, 0, 65536);
	wvals = counter(&v, "rx_drop_offpath");
	fprintf(stderr, "flood: %lu packets, %lu sweeps, %llu dropped "
		"off-path, %u WRITEs\n", (unsigned long)atomic_load(&fl.sent),
		(unsigned long)atomic_load(&fl.sweeps),
		(unsigned long long)wvals, posted);
	/* The kernel may drop part of a flood; most of it got through. */
	ASSERT_GE(wvals, 5 + atomic_load(&fl.sent) / 10);

	/* 4. P's own traffic to V goes on. */
	xfer(sv[0], &cmd, 1, true);
	xfer(sv[0], &cmd, 1, false);
	wc = wait_wc(&v);
	ASSERT_EQ(wc.wr_id, 77);
	ASSERT_EQ(wc.byte_len, 64);
	/* Exactly what P did, nothing of the attacker's. */
	ASSERT(ur_test_all(v.buf, 0, 8192));
	ASSERT(ur_test_all(v.buf + 8192, 0x5c, 1024));
	ASSERT(ur_test_all(v.buf + 9216, 0, 16384 - 9216));
	ASSERT_EQ(v.buf[16384], 7); /* FETCH_ADD by P alone */
	ASSERT(ur_test_all(v.buf + 16385, 0, 32768 - 16385));
	ASSERT(ur_test_all(v.buf + 32768, 0x5c, 64));
	ASSERT(ur_test_all(v.buf + 32768 + 64, 0, SRC - 32768 - 64));
	ASSERT_EQ(qp_state(&v), IBV_QPS_RTS);

	/* 5. The control: a WRITE at V's expected PSN (P used 4) from P's
	 * address lands, so only the address kept the first one out. */
	x = (struct ur_pkt){ .h = { .opcode = UR_OP_RC_RDMA_WRITE_ONLY,
				    .dqpn = v.me.qpn,
				    .psn = ur_psn_add(ppsn, 4) },
			     .reth = { v.me.addr + 49152, v.me.rkey, 1024 } };
	evil_send(&ctl, &x, data, 1024);
	for (int i = 0; i < 200 && !ur_test_all(v.buf + 49152, 0xee, 1024); i++)
		usleep(10 * 1000);
	ASSERT(ur_test_all(v.buf + 49152, 0xee, 1024));

	cmd = 'q';
	xfer(sv[0], &cmd, 1, true);
	ASSERT_EQ(waitpid(child, &status, 0), child);
	ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ibv_destroy_qp(v.qp);
	ibv_dereg_mr(v.mr);
	ibv_destroy_cq(v.cq);
	ibv_dealloc_pd(v.pd);
	ibv_close_device(v.ctx);
	free(v.buf);
	close(ev.fd);
	close(ctl.fd);
}

static const struct ur_test_case tests[] = {
	{ "offpath", t_offpath },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

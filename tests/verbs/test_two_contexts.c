// SPDX-License-Identifier: MIT
/*
 * A device opened twice in one process (UCX does, and Open MPI through it)
 * is one NIC with two contexts: one engine, one socket on the address, so
 * no packet is handed to the wrong context and forwarded (docs/engine.md
 * "Processes sharing an address"). Checks, on UROCE_IP and UROCE_PORT (set
 * by ctest; run it in a network namespace of its own or on a free port):
 *  - after both opens, this process has one UDP socket on <addr>:<port>;
 *  - 200 WRITEs of 4 KiB from a QP of context 1 to a QP of context 2 land;
 *  - a WRITE with a bad rkey raises IBV_EVENT_QP_ACCESS_ERR on context 2
 *    (the responder's), none on context 1;
 *  - a child forked while both are open opens the device, and its WRITE
 *    completes on a completion channel (its own engine thread took the ACK):
 *    it gets an engine of its own (the parent's threads are not in it);
 *  - context 1 closes, and context 2 still moves data (the engine lives as
 *    long as any context of it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rc_connect.h"

#define ACC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)

static void die(const char *what, int err)
{
	fprintf(stderr, "test_two_contexts: %s failed (%s)\n", what,
		strerror(err ? err : errno));
	exit(1);
}

/* Sockets in /proc/net/udp bound to UROCE_IP:UROCE_PORT (IPv4). */
static int sockets_on_port(void)
{
	const char *ip = getenv("UROCE_IP"), *port = getenv("UROCE_PORT");
	char want[32], line[512];
	struct in_addr a;
	FILE *f = fopen("/proc/net/udp", "r");
	int n = 0;

	if (!ip || !port || inet_pton(AF_INET, ip, &a) != 1 || !f)
		die("UROCE_IP, UROCE_PORT (IPv4) and /proc/net/udp", EINVAL);
	/* /proc shows the address as the host-order print of its bytes. */
	snprintf(want, sizeof(want), "%08X:%04X", a.s_addr, atoi(port));
	while (fgets(line, sizeof(line), f))
		if (strstr(line, want))
			n++;
	fclose(f);
	return n;
}

static void wait_wc(struct ibv_cq *cq, enum ibv_wc_status want, int n)
{
	struct ibv_wc wc;

	for (int got = 0; got < n;) {
		int r = ibv_poll_cq(cq, 1, &wc);

		if (r < 0)
			die("ibv_poll_cq", EIO);
		if (r == 0)
			continue;
		if (wc.status != want) {
			fprintf(stderr, "test_two_contexts: status %s, want %s\n",
				ibv_wc_status_str(wc.status),
				ibv_wc_status_str(want));
			exit(1);
		}
		got++;
	}
}

static void write_n(struct urt_rc_end *from, struct urt_rc_end *to, int n,
		    uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)from->buf, 4096, from->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)to->buf, .rkey = rkey },
	}, *bad;

	for (int i = 0; i < n; i++) {
		memset(from->buf, i & 0xff, 4096);
		wr.wr_id = (uint64_t)i;
		if (ibv_post_send(from->qp, &wr, &bad))
			die("ibv_post_send", errno);
		wait_wc(from->cq, rkey == to->mr->rkey ? IBV_WC_SUCCESS
						       : IBV_WC_REM_ACCESS_ERR, 1);
		if (rkey == to->mr->rkey &&
		    memcmp(from->buf, to->buf, 4096))
			die("the WRITE's data", EIO);
	}
}

static void pair(struct ibv_context *c1, struct ibv_pd *p1,
		 struct ibv_context *c2, struct ibv_pd *p2,
		 struct urt_rc_end *a, struct urt_rc_end *b)
{
	struct urt_rc_conn ca = { .psn = 7, .access = ACC, .rd_atomic = 1 };
	struct urt_rc_conn cb = ca;

	if (urt_rc_end_init(c1, p1, a, 64, 64, 128, ACC) ||
	    urt_rc_end_init(c2, p2, b, 64, 64, 128, ACC))
		die("QPs", errno);
	ca.dqpn = b->qp->qp_num;
	cb.dqpn = a->qp->qp_num;
	if (urt_rc_connect(c1, a->qp, &ca) || urt_rc_connect(c2, b->qp, &cb))
		die("connect", errno);
}

/*
 * In a forked child: a WRITE between two QPs of a fresh context, waited
 * for on a completion channel, never polled before the event: only the
 * child's own engine thread can take the ACK. (A child that reused the
 * parent's engine, whose thread stayed behind, waited forever.)
 */
static int child_blocking(struct ibv_device *d)
{
	struct ibv_context *c = ibv_open_device(d);
	struct ibv_pd *pd = c ? ibv_alloc_pd(c) : NULL;
	struct ibv_comp_channel *ch = c ? ibv_create_comp_channel(c) : NULL;
	struct ibv_cq *cq = ch ? ibv_create_cq(c, 16, NULL, ch, 0) : NULL;
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qa = pd && cq ? ibv_create_qp(pd, &ia) : NULL;
	struct ibv_qp *qb = qa ? ibv_create_qp(pd, &ia) : NULL;
	char *buf = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr = qb && buf != MAP_FAILED
				    ? ibv_reg_mr(pd, buf, 8192, ACC) : NULL;
	struct urt_rc_conn ca = { .psn = 3, .access = ACC, .rd_atomic = 1 };
	struct urt_rc_conn cb = ca;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct pollfd pfd;
	struct ibv_cq *ecq;
	struct ibv_wc wc;
	void *ectx;

	if (!mr)
		return 2;
	ca.dqpn = qb->qp_num;
	cb.dqpn = qa->qp_num;
	if (urt_rc_connect(c, qa, &ca) || urt_rc_connect(c, qb, &cb) ||
	    ibv_req_notify_cq(cq, 0))
		return 3;
	memset(buf, 0x77, 4096);
	sge = (struct ibv_sge){ (uintptr_t)buf, 4096, mr->lkey };
	wr.sg_list = &sge;
	wr.wr.rdma.remote_addr = (uintptr_t)buf + 4096;
	wr.wr.rdma.rkey = mr->rkey;
	if (ibv_post_send(qa, &wr, &bad))
		return 4;
	pfd = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	/* 20 s: a generous bound on a loaded machine. A child that reused
	 * the parent's engine waits forever; so did one forked while the
	 * parent's engine thread was still starting (ASan's allocator lock
	 * held at fork: ur_engine_open now waits for its thread). */
	if (poll(&pfd, 1, 20000) != 1 || ibv_get_cq_event(ch, &ecq, &ectx))
		return 5; /* no engine thread took the ACK */
	ibv_ack_cq_events(ecq, 1);
	if (ibv_poll_cq(cq, 1, &wc) != 1 || wc.status != IBV_WC_SUCCESS ||
	    memcmp(buf, buf + 4096, 4096))
		return 6;
	return 0;
}

static bool async_ready(struct ibv_context *c, int ms)
{
	struct pollfd p = { .fd = c->async_fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *c1, *c2;
	struct ibv_pd *p1, *p2;
	struct urt_rc_end a, b, x, y;
	struct ibv_async_event ev;
	int socks;

	if (!list || !list[0])
		die("ibv_get_device_list", ENODEV);
	c1 = ibv_open_device(list[0]);
	c2 = ibv_open_device(list[0]);
	if (!c1 || !c2 || c1 == c2)
		die("two ibv_open_device", errno);
	socks = sockets_on_port();
	printf("sockets on the address's port after two opens: %d\n", socks);
	if (socks != 1)
		die("one socket on the address", EEXIST);
	/* A forked child (pyverbs' rdma_cm tests fork their two sides),
	 * before the parent registers memory: registered pages are
	 * MADV_DONTFORK, as with rdma-core, and a child must not use them. */
	{
		pid_t pid = fork();
		int st;

		if (pid == 0)
			_exit(child_blocking(list[0]));
		if (pid < 0 || waitpid(pid, &st, 0) != pid ||
		    !WIFEXITED(st) || WEXITSTATUS(st))
			die("the forked child's WRITE, waited for on a channel",
			    ECHILD);
		printf("ok: a forked child opens the device; its WRITE completes on a channel\n");
	}

	p1 = ibv_alloc_pd(c1);
	p2 = ibv_alloc_pd(c2);
	if (!p1 || !p2)
		die("ibv_alloc_pd", errno);

	pair(c1, p1, c2, p2, &a, &b);
	write_n(&a, &b, 200, b.mr->rkey);
	printf("ok: 200 WRITEs of 4 KiB from context 1 to context 2\n");

	/* A bad rkey: the responder's QP (context 2) reports the access
	 * error asynchronously, the requester gets REM_ACCESS_ERR. */
	write_n(&a, &b, 1, b.mr->rkey ^ 0x5a5a00);
	if (!async_ready(c2, 5000) || ibv_get_async_event(c2, &ev))
		die("an async event on context 2", ETIMEDOUT);
	if (ev.event_type != IBV_EVENT_QP_ACCESS_ERR || ev.element.qp != b.qp)
		die("IBV_EVENT_QP_ACCESS_ERR on context 2's QP", EINVAL);
	ibv_ack_async_event(&ev);
	if (async_ready(c1, 100))
		die("no async event on context 1", EEXIST);
	printf("ok: the access error went to context 2 only\n");

	/* Context 1 goes; context 2's engine stays. */
	urt_rc_end_fini(&a);
	urt_rc_end_fini(&b);
	ibv_dealloc_pd(p1);
	if (ibv_close_device(c1))
		die("ibv_close_device(context 1)", errno);
	pair(c2, p2, c2, p2, &x, &y);
	write_n(&x, &y, 50, y.mr->rkey);
	printf("ok: context 2 moves data after context 1 closed\n");
	urt_rc_end_fini(&x);
	urt_rc_end_fini(&y);
	ibv_dealloc_pd(p2);
	ibv_close_device(c2);
	ibv_free_device_list(list);
	return 0;
}

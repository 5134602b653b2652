/* SPDX-License-Identifier: MIT */
/*
 * Connect an RC QP to a QP of the same device (GID 0 both ends): INIT, RTR,
 * RTS with the attributes the loopback tests and bench/lat_1thread use;
 * and make one end of such a pair. Header-only so that tests and
 * benchmarks share it without a library.
 */
#ifndef UR_RC_CONNECT_H
#define UR_RC_CONNECT_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

struct urt_rc_conn {
	uint32_t dqpn;
	uint32_t psn;        /* both directions */
	unsigned int access; /* remote access flags at INIT */
	uint8_t rd_atomic;   /* max_rd_atomic and max_dest_rd_atomic */
};

/* 0, or the errno of the step that failed. */
static inline int urt_rc_connect(struct ibv_context *ctx, struct ibv_qp *qp,
				 const struct urt_rc_conn *c)
{
	struct ibv_qp_attr qa;
	int rc;

	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	qa.qp_access_flags = c->access;
	rc = ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			   IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (rc)
		return rc;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = IBV_MTU_1024;
	qa.dest_qp_num = c->dqpn;
	qa.rq_psn = c->psn;
	qa.max_dest_rd_atomic = c->rd_atomic;
	qa.min_rnr_timer = 1;
	qa.ah_attr.is_global = 1;
	qa.ah_attr.port_num = 1;
	qa.ah_attr.grh.hop_limit = 1;
	if (ibv_query_gid(ctx, 1, 0, &qa.ah_attr.grh.dgid))
		return errno ? errno : EINVAL;
	rc = ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_AV |
			   IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc)
		return rc;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	qa.timeout = 14;
	qa.retry_cnt = 7;
	qa.rnr_retry = 7;
	qa.sq_psn = c->psn;
	qa.max_rd_atomic = c->rd_atomic;
	return ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* One end of a loopback pair: an RC QP with its own CQ (@cqe entries) and
 * a registered 4 KiB buffer (@access). 0, or -1 with whatever it made left
 * in @e for urt_rc_end_fini. */
struct urt_rc_end {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char *buf;
};

static inline int urt_rc_end_init(struct ibv_context *ctx, struct ibv_pd *pd,
				  struct urt_rc_end *e, uint32_t send_wr,
				  uint32_t recv_wr, int cqe, int access)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = recv_wr,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	memset(e, 0, sizeof(*e));
	e->cq = ibv_create_cq(ctx, cqe, NULL, NULL, 0);
	if (!e->cq)
		return -1;
	ia.send_cq = ia.recv_cq = e->cq;
	e->qp = ibv_create_qp(pd, &ia);
	e->buf = calloc(1, 4096);
	if (!e->qp || !e->buf)
		return -1;
	e->mr = ibv_reg_mr(pd, e->buf, 4096, access);
	return e->mr ? 0 : -1;
}

static inline void urt_rc_end_fini(struct urt_rc_end *e)
{
	if (e->qp)
		ibv_destroy_qp(e->qp);
	if (e->cq)
		ibv_destroy_cq(e->cq);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

/* Poll @cq for one completion for up to @secs seconds: 1 (in @wc), 0 on
 * timeout, or ibv_poll_cq's negative error. */
static inline int urt_poll_wait(struct ibv_cq *cq, struct ibv_wc *wc, int secs)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n != 0)
			return n;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > secs)
			return 0;
	}
}

/* The value of counter @name in the counters line that UROCE_STATS=1
 * prints at ibv_close_device (@out: the captured stderr); 0 when absent,
 * as counters left at 0 are not printed. */
static inline long urt_counter(const char *out, const char *name)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), " %s=", name);
	p = strstr(out, key);
	return p ? strtol(p + strlen(key), NULL, 10) : 0;
}

/* Run this program again as "@name --child [@arg]" with UROCE_STATS=1 and
 * its stderr captured in @out (the counters line comes at
 * ibv_close_device); 0 when it exited 0 and printed its counters, else -1
 * (what it printed is in @out). */
static inline int urt_child_counters(const char *name, const char *arg,
				     char *out, size_t cap)
{
	size_t len = 0;
	int fd[2], st;
	ssize_t r;
	pid_t pid;

	if (pipe(fd))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(fd[1], 2);
		close(fd[0]);
		setenv("UROCE_STATS", "1", 1);
		execl("/proc/self/exe", name, "--child", arg, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	while (len < cap - 1 &&
	       (r = read(fd[0], out + len, cap - 1 - len)) > 0)
		len += (size_t)r;
	out[len] = 0;
	close(fd[0]);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) || !strstr(out, "counters:"))
		return -1;
	return 0;
}

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Connect an RC QP to a QP of the same device (GID 0 both ends): INIT, RTR,
 * RTS with the attributes the loopback tests and bench/lat_1thread use.
 * Header-only so that tests and benchmarks share it without a library.
 */
#ifndef UR_RC_CONNECT_H
#define UR_RC_CONNECT_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

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

#endif

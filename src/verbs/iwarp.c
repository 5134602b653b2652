// SPDX-License-Identifier: MIT
/*
 * The iWARP device's QPs (UROCE_IWARP=1, docs/verbs.md "iWARP"): an RC QP
 * gets its iWARP connection when it is made (IDLE: receives posted before
 * rdma_connect are kept), and our librdmacm gives it its role and its TCP
 * socket (uroce_iw_connect/accept); the engine's stream thread then moves
 * its bytes (src/io/stream.c).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include "urv.h"
#include "ur_iw.h"
#include <uroce/uroce.h>

bool urv__dev_is_iwarp(const struct urv_device *dev)
{
	return dev->vdev.device.transport_type == IBV_TRANSPORT_IWARP;
}

int urv__iw_qp_init(struct urv_qp *qp)
{
	struct ur_iw_cfg cfg;
	struct ur_iw_conn *c;

	ur_iw_cfg_siw(&cfg, false);
	cfg.idle = true;
	return ur_iw_conn_new(&qp->uqp, &cfg, ur_now(), &c);
}

void urv__iw_qp_fini(struct urv_qp *qp)
{
	if (qp->uqp.proto_conn) {
		ur_iw_conn_free(qp->uqp.proto_conn);
		qp->uqp.proto_conn = NULL;
		qp->uqp.proto = &ur_proto_rocev2;
	}
}

/* The stream thread's news, as the application's events. */
static void iw_news(void *arg, enum ur_stream_ev ev, int err,
		    const uint8_t *pd, size_t pd_len)
{
	struct urv_qp *qp = arg;
	enum uroce_iw_event e;

	switch (ev) {
	case UR_STREAM_UP:
		e = UROCE_IW_ESTABLISHED;
		break;
	case UR_STREAM_FAILED:
		e = err == -ECONNREFUSED ? UROCE_IW_REJECTED : UROCE_IW_FAILED;
		break;
	default:
		e = UROCE_IW_DISCONNECTED;
		break;
	}
	if (qp->iw_fn)
		qp->iw_fn(qp->iw_arg, e, err, pd, pd_len);
}

static int iw_cfg(struct ur_iw_cfg *cfg, int fd, bool initiator,
		  uint8_t ird, uint8_t ord)
{
	int mss = 0;
	socklen_t l = sizeof(mss);

	ur_iw_cfg_siw(cfg, initiator);
	/* The MULPDU follows the connection's MSS (RFC 5044 8). */
	if (!getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &l) && mss >= 64)
		cfg->emss = (uint32_t)mss;
	cfg->pol.ird = ird ? ird : 1;
	cfg->pol.ord = ord;
	if (cfg->pol.ird > UR_IW_IRQ_MAX)
		cfg->pol.ird = UR_IW_IRQ_MAX;
	if (cfg->pol.ord > UR_IW_IRQ_MAX)
		cfg->pol.ord = UR_IW_IRQ_MAX;
	cfg->mpa_timeout_ns = 10ull * 1000000000ull; /* MPA Request/Reply */
	return 0;
}

static struct urv_qp *iw_qp(struct ibv_qp *ibqp)
{
	struct urv_qp *qp;

	if (!ibqp || !urv__is_our_context(ibqp->context) ||
	    ibqp->qp_type != IBV_QPT_RC)
		return NULL;
	qp = to_uqp(ibqp);
	return qp->uqp.proto_conn ? qp : NULL;
}

URV_EXPORT int uroce_iw_connect(struct ibv_qp *ibqp, int fd, const void *pd,
				uint8_t pd_len, uint8_t ird, uint8_t ord,
				uroce_iw_fn fn, void *arg)
{
	struct urv_qp *qp = iw_qp(ibqp);
	struct ur_iw_cfg cfg;
	int ret;

	if (!qp || fd < 0)
		return EINVAL;
	iw_cfg(&cfg, fd, true, ird, ord);
	cfg.pd = pd;
	cfg.pd_len = pd_len;
	qp->iw_fn = fn;
	qp->iw_arg = arg;
	ur_engine_qp_lock(&qp->uqp);
	ret = ur_iw_start(qp->uqp.proto_conn, &cfg, ur_now());
	ur_engine_qp_unlock(&qp->uqp);
	if (!ret)
		ret = ur_engine_stream_attach(qp->eng, &qp->uqp, fd, iw_news,
					      qp);
	return -ret;
}

URV_EXPORT int uroce_iw_accept(struct ibv_qp *ibqp, int fd, const void *req,
			       size_t req_len, const void *pd, uint8_t pd_len,
			       uint8_t ird, uint8_t ord, uroce_iw_fn fn,
			       void *arg)
{
	struct urv_qp *qp = iw_qp(ibqp);
	struct ur_iw_conn *c;
	struct ur_iw_cfg cfg;
	uint64_t now;
	int ret;

	if (!qp || fd < 0 || (!req && req_len))
		return EINVAL;
	iw_cfg(&cfg, fd, false, ird, ord);
	qp->iw_fn = fn;
	qp->iw_arg = arg;
	c = qp->uqp.proto_conn;
	ur_engine_qp_lock(&qp->uqp);
	now = ur_now();
	ret = ur_iw_start(c, &cfg, now);
	if (!ret)
		ret = ur_iw_rx(c, req, req_len, now);
	if (!ret && ur_iw_state(c) != UR_IWS_REQ_RCVD)
		ret = -EPROTO; /* not a whole Request, or more */
	if (!ret)
		ret = ur_iw_accept(c, pd, pd_len, now);
	if (ret == 1)
		ret = 0; /* our policy refused it: the Reply with R goes */
	ur_engine_qp_unlock(&qp->uqp);
	if (!ret)
		ret = ur_engine_stream_attach(qp->eng, &qp->uqp, fd, iw_news,
					      qp);
	return -ret;
}

URV_EXPORT int uroce_iw_disconnect(struct ibv_qp *ibqp)
{
	struct urv_qp *qp = iw_qp(ibqp);

	if (!qp)
		return EINVAL;
	ur_engine_stream_shutdown(&qp->uqp);
	return 0;
}

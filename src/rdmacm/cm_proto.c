// SPDX-License-Identifier: MIT
/*
 * The IB connection manager protocol (IBTA vol. 1 ch. 12) under rdma_cm
 * (Annex A11): building REQ/REP/RTU/REJ/MRA/DREQ/DREP and SIDR messages,
 * the receive dispatch for MADs that reach our QP1, the retransmission
 * timers, and what the rdma_cm calls do to a connection (connect, accept,
 * reject, disconnect). Sans-I/O: MADs, events and QP changes leave
 * through the core's ops (struct cm_ops), time comes in as @now, and
 * randomness from ops->random; cma.c supplies the real ones and holds
 * cm.lock around every call, tests/rdmacm/test_cm_core.c fakes them.
 *
 * Connection (12.9.6):  active  REQ_SENT --REP--> REP_RCVD --RTU--> ESTABLISHED
 *                       passive REQ_RCVD --accept/REP--> REP_SENT --RTU--> ESTABLISHED
 * Release:  DREQ_SENT --DREP--> DISCONNECTED;  ESTABLISHED --DREQ/DREP--> DISCONNECTED
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_priv.h"

static uint32_t rand32(struct cm_core *k)
{
	return k->ops->random(k);
}

static struct cm_id *find_local(struct cm_core *k, uint32_t local_id)
{
	for (struct cm_id *c = k->ids; c; c = c->next)
		if (c->local_id == local_id && c->state != CMS_IDLE)
			return c;
	return NULL;
}

/* A comm ID carries our slot in bits 16..23, as QPNs do (docs/rdmacm.md). */
uint32_t cm__alloc_local_id(const struct cm_dev *dev)
{
	uint32_t id;

	do {
		id = (rand32(dev->core) & 0xff00ffffu) |
		     ((uint32_t)dev->slot << 16);
	} while (!id || find_local(dev->core, id));
	return id;
}

static int send_mad(struct cm_dev *dev, const struct sockaddr_storage *peer,
		    const uint8_t *mad)
{
	uint16_t attr = ur_cm_mad_attr(mad);
	/* The owner of the comm ID we answer (for a peer on our address). */
	uint8_t slot = ur_cm_has(attr, CMF_REMOTE_COMM_ID)
			       ? (uint8_t)(ur_cm_get(mad, CMF_REMOTE_COMM_ID) >> 16)
			       : 0;

	dev->core->tx_mads++;
	return dev->core->ops->send_mad(dev->core, dev, peer, slot, mad);
}

/* Send the message kept in c->mad and retransmit it until answered. */
static int send_armed(struct cm_id *c, uint64_t now)
{
	struct cm_core *k = c->dev->core;

	c->deadline = now + k->resend_ns;
	c->give_up = now + k->timeout_ns;
	c->resends = 0;
	k->ops->timer_kick(k);
	send_mad(c->dev, &c->peer, c->mad);
	return 0; /* a lost MAD is retried */
}

static void stop_timer(struct cm_id *c)
{
	c->deadline = c->give_up = 0;
}

static void put_pdata(uint8_t *mad, size_t skip, const void *pd, size_t plen)
{
	size_t len;
	uint8_t *p = ur_cm_blob(mad, CMB_PDATA, &len);

	if (pd && plen && p && skip + plen <= len)
		memcpy(p + skip, pd, plen);
}

int cm__gid_index(const struct cm_id *c)
{
	for (int i = 0; i < c->dev->ngid; i++)
		if (!memcmp(&c->dev->gid[i], &c->id.route.addr.addr.ibaddr.sgid,
			    sizeof(union ibv_gid)))
			return i;
	return 0;
}

/* RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH (or no parameters) mean the
 * device's maximum, as in librdmacm's rdma_connect(); rdma_connect() has
 * refused larger values already. */
static uint8_t rd_or_max(const struct rdma_conn_param *p, bool resp,
			 uint32_t max)
{
	uint8_t v = p ? (resp ? p->responder_resources : p->initiator_depth)
		      : RDMA_MAX_RESP_RES;

	return v == RDMA_MAX_RESP_RES || v > max ? (uint8_t)max : v;
}

/* ---- active side ------------------------------------------------------- */
int cm__send_req(struct cm_id *c, const struct rdma_conn_param *p, uint64_t now)
{
	uint8_t *m = c->mad, *pd;
	struct cma_hdr h = { 0 };
	const struct sockaddr *src = &c->id.route.addr.src_addr;
	const struct sockaddr *dst = &c->id.route.addr.dst_addr;
	uint16_t sport = cm__sa_port(src), dport = cm__sa_port(dst);
	size_t len;

	if (p && p->private_data_len > 92 - CMA_HDR_LEN)
		return -EINVAL;
	c->local_id = cm__alloc_local_id(c->dev);
	c->remote_id = 0; /* until the REP */
	c->tid = (uint64_t)c->dev->slot << 32 | c->local_id;
	c->service_id = CMA_SID_PREFIX | (uint64_t)c->id.ps << 16 | dport;
	c->local_qpn = c->id.qp ? c->id.qp->qp_num : (p ? p->qp_num : 0);
	/* Our receive PSN: the peer sends from it (Linux's CM puts
	 * rdma_cm's seq_num in the REQ and uses it as the RQ PSN). */
	c->rq_psn = rand32(c->dev->core) & 0xffffff;
	c->resp_res = rd_or_max(p, true, c->dev->max_rd_atom);
	c->init_depth = rd_or_max(p, false, c->dev->max_rd_atom);
	c->retry_cnt = p ? (p->retry_count > 7 ? 7 : p->retry_count) : 7;
	c->rnr_retry = p ? (p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count) : 7;
	c->mtu = (uint8_t)c->dev->mtu;
	c->timeout = CM_ACK_TIMEOUT; /* until the REP's target ACK delay */
	/* Linux rdma_cm's RoCE flow label: a hash of the two ports. */
	c->flow_label = ((uint32_t)sport * 31 + dport) & 0xfffff;

	ur_cm_mad_init(m, UR_CM_ATTR_REQ, c->tid);
	ur_cm_set(m, CMF_LOCAL_COMM_ID, c->local_id);
	ur_cm_set(m, CMF_SERVICE_ID, c->service_id);
	ur_cm_set(m, CMF_LOCAL_CA_GUID, be64toh(c->dev->guid));
	ur_cm_set(m, CMF_LOCAL_QKEY, 0);
	ur_cm_set(m, CMF_LOCAL_QPN, c->local_qpn);
	ur_cm_set(m, CMF_RESP_RES, c->resp_res);
	ur_cm_set(m, CMF_INIT_DEPTH, c->init_depth);
	ur_cm_set(m, CMF_REMOTE_CM_TIMEOUT, CM_RESPONSE_TIMEOUT);
	ur_cm_set(m, CMF_SERVICE_TYPE, c->id.qp_type == IBV_QPT_UC ? 1 : 0);
	ur_cm_set(m, CMF_FLOW_CTRL, p ? p->flow_control & 1 : 0);
	ur_cm_set(m, CMF_STARTING_PSN, c->rq_psn);
	ur_cm_set(m, CMF_LOCAL_CM_TIMEOUT, CM_RESPONSE_TIMEOUT);
	ur_cm_set(m, CMF_RETRY_COUNT, c->retry_cnt);
	ur_cm_set(m, CMF_PKEY, UR_DEFAULT_PKEY);
	ur_cm_set(m, CMF_PATH_MTU, c->mtu);
	ur_cm_set(m, CMF_RNR_RETRY, c->rnr_retry);
	ur_cm_set(m, CMF_MAX_CM_RETRIES, CM_MAX_RETRIES);
	ur_cm_set(m, CMF_SRQ, c->id.srq || (c->id.qp && c->id.qp->srq) ||
				     (!c->id.qp && p && p->srq));
	ur_cm_set(m, CMF_P_LOCAL_LID, 0xffff);
	ur_cm_set(m, CMF_P_REMOTE_LID, 0xffff);
	memcpy(ur_cm_blob(m, CMB_P_LOCAL_GID, &len),
	       &c->id.route.addr.addr.ibaddr.sgid, 16);
	memcpy(ur_cm_blob(m, CMB_P_REMOTE_GID, &len),
	       &c->id.route.addr.addr.ibaddr.dgid, 16);
	ur_cm_set(m, CMF_P_FLOW_LABEL, c->flow_label);
	ur_cm_set(m, CMF_P_TCLASS, c->tos);
	ur_cm_set(m, CMF_P_HOP_LIMIT, 64);
	/* RDMA_OPTION_ID_ACK_TIMEOUT changes the QP's timeout only, as on
	 * Linux: the REQ always carries the path's. */
	ur_cm_set(m, CMF_P_ACK_TIMEOUT, CM_ACK_TIMEOUT);

	h.ip_version = src->sa_family == AF_INET6 ? 6 : 4;
	h.port = sport;
	if (h.ip_version == 4) {
		memcpy(h.src, &((const struct sockaddr_in *)src)->sin_addr, 4);
		memcpy(h.dst, &((const struct sockaddr_in *)dst)->sin_addr, 4);
	} else {
		memcpy(h.src, &((const struct sockaddr_in6 *)src)->sin6_addr, 16);
		memcpy(h.dst, &((const struct sockaddr_in6 *)dst)->sin6_addr, 16);
	}
	pd = ur_cm_blob(m, CMB_PDATA, &len);
	ur_cma_hdr_put(pd, &h);
	if (p)
		put_pdata(m, CMA_HDR_LEN, p->private_data, p->private_data_len);
	c->state = CMS_REQ_SENT;
	return send_armed(c, now);
}

int cm__send_rtu(struct cm_id *c)
{
	uint8_t m[UR_MAD_LEN];

	ur_cm_mad_init(m, UR_CM_ATTR_RTU, c->tid);
	ur_cm_set(m, CMF_LOCAL_COMM_ID, c->local_id);
	ur_cm_set(m, CMF_REMOTE_COMM_ID, c->remote_id);
	return send_mad(c->dev, &c->peer, m);
}

int cm__send_sidr_req(struct cm_id *c, const struct rdma_conn_param *p,
		      uint64_t now)
{
	uint8_t *m = c->mad;
	struct cma_hdr h = { 0 };
	const struct sockaddr *src = &c->id.route.addr.src_addr;
	const struct sockaddr *dst = &c->id.route.addr.dst_addr;
	size_t len;

	if (p && p->private_data_len > 216 - CMA_HDR_LEN)
		return -EINVAL;
	c->local_id = cm__alloc_local_id(c->dev);
	c->tid = (uint64_t)c->dev->slot << 32 | c->local_id;
	c->service_id = CMA_SID_PREFIX | (uint64_t)c->id.ps << 16 |
			cm__sa_port(dst);
	ur_cm_mad_init(m, UR_CM_ATTR_SIDR_REQ, c->tid);
	ur_cm_set(m, CMF_LOCAL_COMM_ID, c->local_id);
	ur_cm_set(m, CMF_PKEY, UR_DEFAULT_PKEY);
	ur_cm_set(m, CMF_SERVICE_ID, c->service_id);
	h.ip_version = src->sa_family == AF_INET6 ? 6 : 4;
	h.port = cm__sa_port(src);
	if (h.ip_version == 4) {
		memcpy(h.src, &((const struct sockaddr_in *)src)->sin_addr, 4);
		memcpy(h.dst, &((const struct sockaddr_in *)dst)->sin_addr, 4);
	} else {
		memcpy(h.src, &((const struct sockaddr_in6 *)src)->sin6_addr, 16);
		memcpy(h.dst, &((const struct sockaddr_in6 *)dst)->sin6_addr, 16);
	}
	ur_cma_hdr_put(ur_cm_blob(m, CMB_PDATA, &len), &h);
	if (p)
		put_pdata(m, CMA_HDR_LEN, p->private_data, p->private_data_len);
	c->state = CMS_SIDR_REQ_SENT;
	return send_armed(c, now);
}

/* ---- passive side ------------------------------------------------------- */
int cm__send_rep(struct cm_id *c, const struct rdma_conn_param *p, uint64_t now)
{
	uint8_t *m = c->mad;

	if (p && p->private_data_len > 196)
		return -EINVAL;
	ur_cm_mad_init(m, UR_CM_ATTR_REP, c->tid);
	ur_cm_set(m, CMF_LOCAL_COMM_ID, c->local_id);
	ur_cm_set(m, CMF_REMOTE_COMM_ID, c->remote_id);
	ur_cm_set(m, CMF_LOCAL_QKEY, 0);
	ur_cm_set(m, CMF_LOCAL_QPN, c->local_qpn);
	ur_cm_set(m, CMF_STARTING_PSN, c->rq_psn);
	ur_cm_set(m, CMF_RESP_RES, c->resp_res);
	ur_cm_set(m, CMF_INIT_DEPTH, c->init_depth);
	ur_cm_set(m, CMF_TARGET_ACK_DELAY, CM_TARGET_ACK_DELAY);
	ur_cm_set(m, CMF_FLOW_CTRL, p ? p->flow_control & 1 : 0);
	ur_cm_set(m, CMF_RNR_RETRY,
		 p ? (p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count) : 7);
	ur_cm_set(m, CMF_SRQ, c->id.srq || (c->id.qp && c->id.qp->srq) ||
				     (!c->id.qp && p && p->srq));
	ur_cm_set(m, CMF_LOCAL_CA_GUID, be64toh(c->dev->guid));
	if (p)
		put_pdata(m, 0, p->private_data, p->private_data_len);
	c->state = CMS_REP_SENT;
	return send_armed(c, now);
}

int cm__send_sidr_rep(struct cm_id *c, int status, const void *pd,
		       uint8_t plen)
{
	uint8_t m[UR_MAD_LEN];

	if (plen > 136)
		return -EINVAL;
	ur_cm_mad_init(m, UR_CM_ATTR_SIDR_REP, c->tid);
	ur_cm_set(m, CMF_REMOTE_COMM_ID, c->remote_id);
	ur_cm_set(m, CMF_SIDR_STATUS, (uint64_t)status);
	ur_cm_set(m, CMF_QPN, status ? 0 : c->local_qpn);
	ur_cm_set(m, CMF_SERVICE_ID, c->service_id);
	ur_cm_set(m, CMF_QKEY, status ? 0 : c->qkey);
	put_pdata(m, 0, pd, plen);
	c->state = CMS_DISCONNECTED;
	return send_mad(c->dev, &c->peer, m);
}

static int send_rej_raw(struct cm_dev *dev, const struct sockaddr_storage *peer,
			uint64_t tid, uint32_t local_id, uint32_t remote_id,
			int msg, uint16_t reason, const void *pd, uint8_t plen)
{
	uint8_t m[UR_MAD_LEN];

	ur_cm_mad_init(m, UR_CM_ATTR_REJ, tid);
	ur_cm_set(m, CMF_LOCAL_COMM_ID, local_id);
	ur_cm_set(m, CMF_REMOTE_COMM_ID, remote_id);
	ur_cm_set(m, CMF_MSG_REJECTED, (uint64_t)msg);
	ur_cm_set(m, CMF_REJ_REASON, reason);
	put_pdata(m, 0, pd, plen);
	return send_mad(dev, peer, m);
}

int cm__send_rej(struct cm_id *c, uint16_t reason, const void *pd,
		  uint8_t plen)
{
	int msg = c->state == CMS_REQ_RCVD ? CM_MSG_REQ
		  : c->state == CMS_REP_RCVD ? CM_MSG_REP : CM_MSG_OTHER;

	if (plen > 148)
		return -EINVAL;
	stop_timer(c);
	c->state = CMS_ERROR;
	return send_rej_raw(c->dev, &c->peer, c->tid, c->local_id,
			    c->remote_id, msg, reason, pd, plen);
}

static void send_mra(struct cm_id *c)
{
	uint8_t m[UR_MAD_LEN];

	ur_cm_mad_init(m, UR_CM_ATTR_MRA, c->tid);
	ur_cm_set(m, CMF_LOCAL_COMM_ID, c->local_id);
	ur_cm_set(m, CMF_REMOTE_COMM_ID, c->remote_id);
	ur_cm_set(m, CMF_MSG_MRAED, CM_MSG_REQ);
	ur_cm_set(m, CMF_SERVICE_TIMEOUT, CM_MRA_TIMEOUT);
	send_mad(c->dev, &c->peer, m);
}

int cm__send_dreq(struct cm_id *c, uint64_t now)
{
	uint8_t *m = c->mad;

	ur_cm_mad_init(m, UR_CM_ATTR_DREQ, c->tid);
	ur_cm_set(m, CMF_LOCAL_COMM_ID, c->local_id);
	ur_cm_set(m, CMF_REMOTE_COMM_ID, c->remote_id);
	ur_cm_set(m, CMF_REMOTE_QPN, c->remote_qpn);
	c->state = CMS_DREQ_SENT;
	return send_armed(c, now);
}

static void send_drep(struct cm_dev *dev, const struct sockaddr_storage *peer,
		      uint64_t tid, uint32_t local_id, uint32_t remote_id)
{
	uint8_t m[UR_MAD_LEN];

	ur_cm_mad_init(m, UR_CM_ATTR_DREP, tid);
	ur_cm_set(m, CMF_LOCAL_COMM_ID, local_id);
	ur_cm_set(m, CMF_REMOTE_COMM_ID, remote_id);
	send_mad(dev, peer, m);
}

/* ---- QP attributes from the exchanged messages (ucma init_qp_attr) ------- */
/*
 * What Linux's CM hands out (ib_cm_init_qp_attr, then rdma_cm's
 * rdma_init_qp_attr): docs/rdmacm.md has the table, field by field.
 * Before a connection exists an RC QP gets no remote access; once the
 * REQ or REP is known, remote writes, and reads and atomics only if we
 * grant responder resources (cm_init_qp_init_attr).
 */
int cm__init_qp_attr(struct cm_id *c, struct ibv_qp_attr *a, int *mask)
{
	enum ibv_qp_state s = a->qp_state;
	bool ud = c->id.qp_type == IBV_QPT_UD;
	bool known = c->state == CMS_REQ_SENT || c->state == CMS_REQ_RCVD ||
		     c->state == CMS_REP_RCVD || c->state == CMS_REP_SENT ||
		     c->state == CMS_ESTABLISHED;
	/* RTR and RTS need the peer's REQ or REP. */
	bool exchanged = known && c->state != CMS_REQ_SENT;

	memset(a, 0, sizeof(*a));
	a->qp_state = s;
	switch (s) {
	case IBV_QPS_INIT:
		a->pkey_index = 0;
		a->port_num = c->dev->port_num;
		if (ud) {
			a->qkey = c->qkey ? c->qkey : CMA_UDP_QKEY;
			*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				IBV_QP_QKEY;
			return 0;
		}
		if (known) {
			a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
			if (c->resp_res)
				a->qp_access_flags |= IBV_ACCESS_REMOTE_READ |
						      IBV_ACCESS_REMOTE_ATOMIC;
		}
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			IBV_QP_ACCESS_FLAGS;
		return 0;
	case IBV_QPS_RTR:
		if (ud) {
			*mask = IBV_QP_STATE;
			return 0;
		}
		if (!exchanged)
			return -EINVAL;
		a->ah_attr.is_global = 1;
		a->ah_attr.port_num = c->dev->port_num;
		a->ah_attr.grh.dgid = c->id.route.addr.addr.ibaddr.dgid;
		a->ah_attr.grh.sgid_index = (uint8_t)cm__gid_index(c);
		a->ah_attr.grh.hop_limit = 64;
		a->ah_attr.grh.traffic_class = c->tos;
		a->ah_attr.grh.flow_label = c->flow_label;
		a->path_mtu = (enum ibv_mtu)c->mtu;
		a->dest_qp_num = c->remote_qpn;
		a->rq_psn = c->rq_psn;
		a->max_dest_rd_atomic = c->resp_res;
		a->min_rnr_timer = CM_MIN_RNR_TIMER;
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		return 0;
	case IBV_QPS_RTS:
		a->sq_psn = c->sq_psn;
		if (ud) {
			*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
			return 0;
		}
		if (!exchanged)
			return -EINVAL;
		/* rdma_set_option(ACK_TIMEOUT) replaces the CM's value. */
		a->timeout = c->ack_timeout_set ? c->ack_timeout : c->timeout;
		a->retry_cnt = c->retry_cnt;
		a->rnr_retry = c->rnr_retry;
		a->max_rd_atomic = c->init_depth;
		*mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			IBV_QP_MAX_QP_RD_ATOMIC;
		return 0;
	case IBV_QPS_ERR:
	case IBV_QPS_RESET:
		*mask = IBV_QP_STATE;
		return 0;
	default:
		return -EINVAL;
	}
}

/* Move the ID's QP to @s with the CM's attributes. Before RTR an RC QP is
 * moved INIT->INIT first, so that it takes the remote access that the
 * exchange grants (librdmacm's ucma_modify_qp_rtr does the same). */
int cm__modify_qp(struct cm_id *c, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };
	int mask, ret;

	if (!c->id.qp)
		return 0;
	if (s == IBV_QPS_RTR && c->id.qp_type != IBV_QPT_UD) {
		ret = cm__modify_qp(c, IBV_QPS_INIT);
		if (ret)
			return ret;
	}
	ret = cm__init_qp_attr(c, &a, &mask);
	if (ret)
		return ret;
	return c->dev->core->ops->modify_qp(c->dev->core, c, &a, mask);
}

/* ---- receive ------------------------------------------------------------- */
static void conn_event(struct cm_id *c, enum rdma_cm_event_type type,
		       int status, const uint8_t *mad, size_t skip,
		       size_t max_len)
{
	struct cm_event *e;
	size_t len = 0;
	const uint8_t *pd = mad ? ur_cm_blob(mad, CMB_PDATA, &len) : NULL;

	if (pd) {
		pd += skip;
		len -= skip;
		if (max_len && len > max_len)
			len = max_len;
	}
	if (c->dev->core->ops->queue_event(c->dev->core, c, type, status, pd, len,
					   &e))
		return;
	e->ev.param.conn.responder_resources = c->resp_res;
	e->ev.param.conn.initiator_depth = c->init_depth;
	e->ev.param.conn.retry_count = c->retry_cnt;
	e->ev.param.conn.rnr_retry_count = c->rnr_retry;
	e->ev.param.conn.qp_num = c->remote_qpn;
}

static struct cm_id *find_listener(struct cm_dev *dev, uint16_t ps,
				   uint16_t port, const struct sockaddr *local)
{
	for (struct cm_id *l = dev->core->ids; l; l = l->next) {
		const struct sockaddr *la = &l->id.route.addr.src_addr;

		if (l->state != CMS_LISTEN || l->id.ps != ps ||
		    cm__sa_port(la) != port)
			continue;
		if (cm__sa_is_any(la))
			return l;
		if (l->dev != dev || la->sa_family != local->sa_family)
			continue;
		if (la->sa_family == AF_INET &&
		    ((const struct sockaddr_in *)la)->sin_addr.s_addr ==
			    ((const struct sockaddr_in *)local)->sin_addr.s_addr)
			return l;
		if (la->sa_family == AF_INET6 &&
		    !memcmp(&((const struct sockaddr_in6 *)la)->sin6_addr,
			    &((const struct sockaddr_in6 *)local)->sin6_addr, 16))
			return l;
	}
	return NULL;
}

static void sa_from_hdr(struct sockaddr_storage *ss, const struct cma_hdr *h,
			const uint8_t *ip, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (h->ip_version == 4) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, ip, 4);
		s4->sin_port = htons(port);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, ip, 16);
		s6->sin6_port = htons(port);
	}
}

/* Nobody listens on the service of a REQ: REJ "invalid service ID"
 * (12.6.7), SIDR REP "unsupported" for a SIDR REQ (12.11.2). */
static void reject_no_listener(struct cm_dev *dev, const uint8_t *mad,
			       const struct sockaddr_storage *src)
{
	uint32_t rid = (uint32_t)ur_cm_get(mad, CMF_LOCAL_COMM_ID);

	if (ur_cm_mad_attr(mad) == UR_CM_ATTR_SIDR_REQ) {
		struct cm_id tmp = { .dev = dev, .peer = *src,
				     .tid = ur_cm_mad_tid(mad), .remote_id = rid,
				     .service_id = ur_cm_get(mad, CMF_SERVICE_ID) };

		cm__send_sidr_rep(&tmp, CM_SIDR_UNSUPPORTED, NULL, 0);
	} else {
		send_rej_raw(dev, src, ur_cm_mad_tid(mad), 0, rid, CM_MSG_REQ,
			     CM_REJ_INVALID_SERVICE_ID, NULL, 0);
	}
}

static bool same_ip(const struct sockaddr_storage *a, const struct sockaddr *b)
{
	if (a->ss_family != b->sa_family)
		return false;
	if (b->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
}

static bool is_our_addr(const struct cm_dev *dev,
			const struct sockaddr_storage *sa)
{
	for (int i = 0; i < dev->ngid; i++)
		if (same_ip(sa, (const struct sockaddr *)&dev->addr[i]))
			return true;
	return false;
}

/*
 * Our own REQ, back from the address we share with its listener (the
 * kernel, or a sibling without a CM, handed it to us) after it was
 * answered. While it waits for its REP it goes on like any REQ; after
 * that it is a stale copy, and a REJ for it would name our live comm ID.
 */
static bool own_stale_req(struct cm_dev *dev, const uint8_t *mad,
			  const struct sockaddr_storage *src)
{
	struct cm_id *c = find_local(dev->core,
				     (uint32_t)ur_cm_get(mad, CMF_LOCAL_COMM_ID));

	return c && !c->passive && c->dev == dev &&
	       c->state != CMS_REQ_SENT && c->state != CMS_SIDR_REQ_SENT &&
	       same_ip(src, &c->id.route.addr.src_addr);
}

/*
 * A REQ for a port nobody listens on yet is held for CM_LISTEN_WAIT_MS
 * before it is rejected: a program may send its REQ a moment before its
 * peer's rdma_listen() (perftest -R: the server listens only after an
 * exchange whose last message the client has just received). The timer
 * thread looks for the listener every CM_PARK_POLL_NS (parked_try).
 * Return 0 if held (or already held), else a negative errno.
 */
static int park_req(struct cm_dev *dev, const uint8_t *mad,
		    const struct sockaddr_storage *src, bool from_sibling,
		    uint64_t now)
{
	struct cm_core *k = dev->core;
	uint32_t rid = (uint32_t)ur_cm_get(mad, CMF_LOCAL_COMM_ID);
	struct cm_parked *p;

	for (p = k->parked; p; p = p->next)
		if (p->dev == dev && (uint32_t)ur_cm_get(p->mad, CMF_LOCAL_COMM_ID) ==
					     rid &&
		    !memcmp(&p->src, src, sizeof(*src)))
			return 0; /* a retransmission of a held REQ */
	if (k->nparked >= CM_MAX_PARKED)
		return -ENOSPC;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->dev = dev;
	p->src = *src;
	p->from_sibling = from_sibling;
	p->since = now;
	memcpy(p->mad, mad, UR_MAD_LEN);
	p->next = k->parked;
	k->parked = p;
	k->nparked++;
	k->ops->timer_kick(k);
	return 0;
}

static int rx_req(struct cm_dev *dev, const uint8_t *mad,
		  const struct sockaddr_storage *src, bool from_sibling,
		  uint64_t now);

/* A held REQ: true to keep holding it. */
static bool parked_try(struct cm_parked *p, uint64_t now)
{
	uint64_t sid = ur_cm_get(p->mad, CMF_SERVICE_ID);
	uint16_t ps = (uint16_t)(sid >> 16), port = (uint16_t)sid;
	struct sockaddr_storage local;
	struct cma_hdr h;
	size_t len;

	if (ur_cma_hdr_get(ur_cm_blob(p->mad, CMB_PDATA, &len), &h) ||
	    own_stale_req(p->dev, p->mad, &p->src))
		return false; /* (the header was checked when it arrived) */
	sa_from_hdr(&local, &h, h.dst, port);
	if (find_listener(p->dev, ps, port, (struct sockaddr *)&local)) {
		rx_req(p->dev, p->mad, &p->src, p->from_sibling, now);
		return false;
	}
	if (p->dev->core->ops->has_listener(p->dev->core, ps,
					    (struct sockaddr *)&local, port)) {
		/* A sibling on the address listens now. A REQ that the
		 * kernel gave us from our own address goes back to the
		 * address as it came (same 4-tuple: the same process gets
		 * it and, seeing the listener, passes it on). Any other is
		 * left to the sender's retransmission: forwarded from here
		 * it would carry our address as its source. */
		if (!p->from_sibling && is_our_addr(p->dev, &p->src))
			send_mad(p->dev, &p->src, p->mad);
		return false;
	}
	if (now - p->since < CM_LISTEN_WAIT_MS * 1000000ull)
		return true;
	reject_no_listener(p->dev, p->mad, &p->src);
	return false;
}

static uint64_t run_parked(struct cm_core *k, uint64_t now)
{
	struct cm_parked **pp = &k->parked, *p;
	uint64_t next = UINT64_MAX;

	while ((p = *pp)) {
		if (parked_try(p, now)) {
			next = now + CM_PARK_POLL_NS;
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		k->nparked--;
		free(p);
	}
	return next;
}

/* Whether listener @l holds as many unanswered requests as its backlog
 * allows (CM_DEFAULT_BACKLOG when rdma_listen was given 0 or less). */
static bool over_backlog(const struct cm_core *k, const struct cm_id *l)
{
	int max = l->backlog > 0 ? l->backlog : CM_DEFAULT_BACKLOG, n = 0;

	for (const struct cm_id *c = k->ids; c; c = c->next)
		if (c->listen == l && (c->state == CMS_REQ_RCVD ||
				       c->state == CMS_SIDR_REQ_RCVD) &&
		    ++n >= max)
			return true;
	return false;
}

/* REQ or SIDR_REQ: find the listener and make the new ID. */
static int rx_req(struct cm_dev *dev, const uint8_t *mad,
		  const struct sockaddr_storage *src, bool from_sibling,
		  uint64_t now)
{
	struct cm_core *k = dev->core;
	uint16_t attr = ur_cm_mad_attr(mad);
	bool sidr = attr == UR_CM_ATTR_SIDR_REQ;
	uint32_t rid = (uint32_t)ur_cm_get(mad, CMF_LOCAL_COMM_ID);
	uint64_t sid = ur_cm_get(mad, CMF_SERVICE_ID);
	uint16_t ps = (uint16_t)(sid >> 16), port = (uint16_t)sid;
	struct sockaddr_storage local, remote;
	struct cma_hdr h;
	struct cm_id *l, *c;
	bool cma;
	size_t len;

	if (ur_cma_hdr_get(ur_cm_blob(mad, CMB_PDATA, &len), &h)) {
		k->rx_malformed++;
		return UR_GSI_CONSUMED;
	}
	/* A retransmitted REQ (12.9.6): answer from the state it left. */
	for (c = k->ids; c; c = c->next) {
		if (c->remote_id != rid || !c->passive || c->dev != dev ||
		    memcmp(&c->peer, src, sizeof(*src)))
			continue;
		if (c->state == CMS_REP_SENT)
			send_mad(dev, &c->peer, c->mad);
		else if (c->state == CMS_REQ_RCVD && !sidr)
			send_mra(c);
		return UR_GSI_CONSUMED;
	}
	if (own_stale_req(dev, mad, src)) {
		k->rx_stale++;
		return UR_GSI_CONSUMED;
	}
	sa_from_hdr(&local, &h, h.dst, port);
	sa_from_hdr(&remote, &h, h.src, h.port);
	cma = (sid >> 24) == (CMA_SID_PREFIX >> 24);
	l = cma ? find_listener(dev, ps, port, (struct sockaddr *)&local) : NULL;
	if (!l) {
		/* Someone else on the address listens: they get it (a MAD
		 * from a sibling was sent to all of them). Nobody does (yet):
		 * held for a moment, then every CM that saw it answers;
		 * duplicate REJs are harmless. */
		if (cma && k->ops->has_listener(k, ps,
						(struct sockaddr *)&local, port))
			return from_sibling ? UR_GSI_CONSUMED : UR_GSI_BROADCAST;
		if (!cma || park_req(dev, mad, src, from_sibling, now))
			reject_no_listener(dev, mad, src);
		return UR_GSI_CONSUMED;
	}
	if (over_backlog(k, l)) {
		k->rx_req_dropped++;
		return UR_GSI_CONSUMED; /* the peer retries, or gives up */
	}
	c = k->ops->id_new(k, l, sidr ? IBV_QPT_UD
				      : (ur_cm_get(mad, CMF_SERVICE_TYPE) == 1
						 ? IBV_QPT_UC : IBV_QPT_RC));
	if (!c)
		return UR_GSI_CONSUMED; /* the peer retries */
	c->sync = l->sync;
	c->dev = dev;
	c->id.verbs = dev->verbs;
	c->id.pd = l->id.pd ? l->id.pd : dev->pd;
	c->id.port_num = dev->port_num;
	c->listen = l;
	c->passive = true;
	c->tos = l->tos;
	c->peer = *src;
	c->remote_id = rid;
	c->local_id = cm__alloc_local_id(dev);
	c->tid = ur_cm_mad_tid(mad);
	c->service_id = sid;
	memcpy(&c->id.route.addr.src_storage, &local, sizeof(local));
	memcpy(&c->id.route.addr.dst_storage, &remote, sizeof(remote));
	cm__gid_from_sa(&c->id.route.addr.addr.ibaddr.sgid,
			 (struct sockaddr *)&local);
	cm__gid_from_sa(&c->id.route.addr.addr.ibaddr.dgid,
			 (struct sockaddr *)&remote);
	c->id.route.addr.addr.ibaddr.pkey = htons(UR_DEFAULT_PKEY);
	c->id.route.path_rec = &c->path;
	c->id.route.num_paths = 1;
	c->path.sgid = c->id.route.addr.addr.ibaddr.sgid;
	c->path.dgid = c->id.route.addr.addr.ibaddr.dgid;
	c->path.pkey = htons(UR_DEFAULT_PKEY);
	c->path.hop_limit = 64;
	if (sidr) {
		c->state = CMS_SIDR_REQ_RCVD;
		c->qkey = CMA_UDP_QKEY;
		conn_event(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0, mad,
			   CMA_HDR_LEN, 0);
		return UR_GSI_CONSUMED;
	}
	c->remote_qpn = (uint32_t)ur_cm_get(mad, CMF_LOCAL_QPN);
	/* The REQ's Starting PSN is where the active side expects us to
	 * start sending (Linux's CM: the passive side's sq_psn). */
	c->sq_psn = (uint32_t)ur_cm_get(mad, CMF_STARTING_PSN);
	/* Ours, sent in the REP; chosen now, as a user who moves the QP
	 * itself (rdma_init_qp_attr) does so before rdma_accept(). */
	c->rq_psn = rand32(c->dev->core) & 0xffffff;
	/* Linux takes the REQ's MTU as it is; we never go above our own
	 * link's (a larger one would fail modify_qp). */
	c->mtu = (uint8_t)ur_cm_get(mad, CMF_PATH_MTU);
	if (c->mtu > dev->mtu || c->mtu < IBV_MTU_256)
		c->mtu = (uint8_t)dev->mtu;
	c->retry_cnt = (uint8_t)ur_cm_get(mad, CMF_RETRY_COUNT);
	c->rnr_retry = (uint8_t)ur_cm_get(mad, CMF_RNR_RETRY);
	/* Packet lifetime = the REQ's ACK timeout - 1, and the QP's timeout
	 * that lifetime + 1 (cm_format_paths_from_req, cm_init_av_by_path). */
	c->timeout = (uint8_t)ur_cm_get(mad, CMF_P_ACK_TIMEOUT);
	if (!c->timeout)
		c->timeout = 1;
	c->tos = (uint8_t)ur_cm_get(mad, CMF_P_TCLASS);
	c->flow_label = (uint32_t)ur_cm_get(mad, CMF_P_FLOW_LABEL);
	c->path.mtu = (enum ibv_mtu)c->mtu;
	c->path.flow_label = htonl(c->flow_label);
	/* Seen from here: the peer's initiator depth bounds our responder
	 * resources and vice versa (rdma_cm's CONNECT_REQUEST convention). */
	c->resp_res = (uint8_t)ur_cm_get(mad, CMF_INIT_DEPTH);
	c->init_depth = (uint8_t)ur_cm_get(mad, CMF_RESP_RES);
	c->state = CMS_REQ_RCVD;
	conn_event(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0, mad, CMA_HDR_LEN, 0);
	return UR_GSI_CONSUMED;
}

static void rx_rep(struct cm_id *c, const uint8_t *mad)
{
	uint8_t rr = (uint8_t)ur_cm_get(mad, CMF_RESP_RES);
	uint8_t id = (uint8_t)ur_cm_get(mad, CMF_INIT_DEPTH);

	if (c->state == CMS_ESTABLISHED || c->state == CMS_REP_RCVD) {
		if (c->state == CMS_ESTABLISHED)
			cm__send_rtu(c); /* our RTU was lost */
		return;
	}
	if (c->state != CMS_REQ_SENT)
		return;
	stop_timer(c);
	c->remote_id = (uint32_t)ur_cm_get(mad, CMF_LOCAL_COMM_ID);
	c->remote_qpn = (uint32_t)ur_cm_get(mad, CMF_LOCAL_QPN);
	/* We send from the REP's Starting PSN (Linux: cm_rep_handler). */
	c->sq_psn = (uint32_t)ur_cm_get(mad, CMF_STARTING_PSN);
	c->rnr_retry = (uint8_t)ur_cm_get(mad, CMF_RNR_RETRY);
	/* The REP's values replace ours, as Linux's CM does: the passive
	 * side chose them from our REQ. Never above what we have. */
	c->init_depth = rr > c->dev->max_rd_atom ? (uint8_t)c->dev->max_rd_atom
						 : rr;
	c->resp_res = id > c->dev->max_rd_atom ? (uint8_t)c->dev->max_rd_atom
					       : id;
	c->timeout = ur_cm_ack_timeout((uint8_t)ur_cm_get(mad, CMF_TARGET_ACK_DELAY),
				     CM_PACKET_LIFETIME);
	c->state = CMS_REP_RCVD;
	if (!c->id.qp) {
		/* The user moves the QP and calls rdma_establish(). */
		conn_event(c, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, mad, 0, 0);
		return;
	}
	if (cm__modify_qp(c, IBV_QPS_RTR) || cm__modify_qp(c, IBV_QPS_RTS)) {
		cm__send_rej(c, CM_REJ_CONSUMER_DEFINED, NULL, 0);
		cm__modify_qp(c, IBV_QPS_ERR);
		conn_event(c, RDMA_CM_EVENT_CONNECT_ERROR, -EINVAL, NULL, 0, 0);
		return;
	}
	cm__send_rtu(c);
	c->state = CMS_ESTABLISHED;
	conn_event(c, RDMA_CM_EVENT_ESTABLISHED, 0, mad, 0, 0);
}

/* @c's exchange is over (no more resends): now in @state, with @type. */
static void finish(struct cm_id *c, enum cm_state state,
		   enum rdma_cm_event_type type, const uint8_t *mad)
{
	stop_timer(c);
	c->state = state;
	conn_event(c, type, 0, mad, 0, 0);
}

static void rx_rej(struct cm_id *c, const uint8_t *mad)
{
	uint16_t reason = (uint16_t)ur_cm_get(mad, CMF_REJ_REASON);

	if (c->state != CMS_REQ_SENT && c->state != CMS_REP_SENT &&
	    c->state != CMS_REP_RCVD && c->state != CMS_ESTABLISHED)
		return;
	stop_timer(c);
	c->state = CMS_ERROR;
	cm__modify_qp(c, IBV_QPS_ERR);
	conn_event(c, RDMA_CM_EVENT_REJECTED, reason, mad, 0, 0);
}

static void rx_dreq(struct cm_id *c, const uint8_t *mad)
{
	/* A DREQ names our QP in its Remote QPN; Linux's CM ignores one that
	 * does not, without an answer. */
	if (c->local_qpn &&
	    (uint32_t)ur_cm_get(mad, CMF_REMOTE_QPN) != c->local_qpn) {
		c->dev->core->rx_stale++;
		return;
	}
	/* Answered at once (Linux answers when the user disconnects). */
	send_drep(c->dev, &c->peer, ur_cm_mad_tid(mad), c->local_id,
		  c->remote_id);
	if (c->state != CMS_ESTABLISHED && c->state != CMS_REP_SENT &&
	    c->state != CMS_DREQ_SENT)
		return;
	/* The QP is left alone, as Linux does: the peer's last SENDs may
	 * still be completing; rdma_disconnect() moves it to ERR. */
	finish(c, CMS_DISCONNECTED, RDMA_CM_EVENT_DISCONNECTED, mad);
}

static void rx_sidr_rep(struct cm_id *c, const uint8_t *mad)
{
	int status = (int)ur_cm_get(mad, CMF_SIDR_STATUS);
	struct cm_event *e;
	size_t len;
	const uint8_t *pd = ur_cm_blob(mad, CMB_PDATA, &len);

	if (c->state != CMS_SIDR_REQ_SENT)
		return;
	stop_timer(c);
	c->state = status ? CMS_ERROR : CMS_ESTABLISHED;
	if (c->dev->core->ops->queue_event(c->dev->core, c,
					   status ? RDMA_CM_EVENT_UNREACHABLE
						  : RDMA_CM_EVENT_ESTABLISHED,
					   status, pd, len, &e))
		return;
	e->ev.param.ud.qp_num = (uint32_t)ur_cm_get(mad, CMF_QPN);
	e->ev.param.ud.qkey = (uint32_t)ur_cm_get(mad, CMF_QKEY);
	e->ev.param.ud.ah_attr.is_global = 1;
	e->ev.param.ud.ah_attr.port_num = c->dev->port_num;
	e->ev.param.ud.ah_attr.grh.dgid = c->id.route.addr.addr.ibaddr.dgid;
	e->ev.param.ud.ah_attr.grh.sgid_index = (uint8_t)cm__gid_index(c);
	e->ev.param.ud.ah_attr.grh.hop_limit = 64;
	e->ev.param.ud.ah_attr.grh.traffic_class = c->tos;
}

/*
 * Does @mad come from @c's peer? Once we know the peer's comm ID, its
 * messages carry it as their local comm ID; a MAD that names our comm ID
 * but not the peer's is a stale or misrouted copy (Linux's CM matches
 * both IDs likewise). A REJ of a REQ may come before we know the peer's
 * ID, and only means something while our REQ waits for an answer
 * (12.6.7, 12.9.6): a REJ for a late copy of our REQ, from a process
 * without the listener, must not tear down the connection its REP made.
 */
static bool from_peer(const struct cm_id *c, uint16_t attr,
		      const uint8_t *mad)
{
	if (attr == UR_CM_ATTR_REJ &&
	    ur_cm_get(mad, CMF_MSG_REJECTED) == CM_MSG_REQ)
		return c->state == CMS_REQ_SENT;
	if (attr == UR_CM_ATTR_SIDR_REP)
		return true; /* SIDR has no comm IDs, only the request ID */
	return !c->remote_id ||
	       (uint32_t)ur_cm_get(mad, CMF_LOCAL_COMM_ID) == c->remote_id;
}

/**
 * cm__rx() - a MAD arrived on QP1 of @dev from @src at @now.
 * Return: UR_GSI_CONSUMED, a sibling slot, or UR_GSI_BROADCAST (see
 * uroce_gsi_attach()).
 */
int cm__rx(struct cm_dev *dev, const uint8_t *mad, size_t len,
	   const struct sockaddr *src, bool from_sibling, uint64_t now)
{
	struct cm_core *k = dev->core;
	struct sockaddr_storage peer = { 0 };
	uint16_t attr;
	uint32_t rcid;
	struct cm_id *c;
	int ret = UR_GSI_CONSUMED;

	memcpy(&peer, src, cm__sa_len(src));
	cm__sa_set_port((struct sockaddr *)&peer, 0);
	k->rx_mads++;
	if (!ur_cm_mad_valid(mad, len)) {
		k->rx_malformed++;
		return ret;
	}
	attr = ur_cm_mad_attr(mad);
	if (attr == UR_CM_ATTR_REQ || attr == UR_CM_ATTR_SIDR_REQ)
		return rx_req(dev, mad, &peer, from_sibling, now);
	rcid = (uint32_t)ur_cm_get(mad, CMF_REMOTE_COMM_ID);
	c = rcid ? find_local(k, rcid) : NULL;
	if (c && c->dev != dev)
		c = NULL;
	if (!c && (uint8_t)(rcid >> 16) != dev->slot) {
		/* Its owner shares our address: forward it there, unless a
		 * sibling did already (then every process got a copy, and
		 * the owner answers its own). */
		if (!from_sibling && rcid)
			ret = (uint8_t)(rcid >> 16);
		return ret;
	}
	if (c && !from_peer(c, attr, mad)) {
		k->rx_stale++;
		c = NULL; /* not for this connection: as if unknown */
	} else if (!c) {
		k->rx_unknown_id++;
	}
	if (!c) {
		/* A DREQ for a connection we no longer have: DREP (12.9.7). */
		if (attr == UR_CM_ATTR_DREQ)
			send_drep(dev, &peer, ur_cm_mad_tid(mad), rcid,
				  (uint32_t)ur_cm_get(mad, CMF_LOCAL_COMM_ID));
		return ret;
	}
	switch (attr) {
	case UR_CM_ATTR_REP:
		rx_rep(c, mad);
		break;
	case UR_CM_ATTR_RTU:
		if (c->state == CMS_REP_SENT)
			finish(c, CMS_ESTABLISHED, RDMA_CM_EVENT_ESTABLISHED,
			       mad);
		break;
	case UR_CM_ATTR_REJ:
		rx_rej(c, mad);
		break;
	case UR_CM_ATTR_MRA:
		if (c->state == CMS_REQ_SENT || c->state == CMS_REP_SENT) {
			uint64_t t = 4096ull << ur_cm_get(mad, CMF_SERVICE_TIMEOUT);

			c->deadline = now + t + k->resend_ns;
			c->give_up = c->deadline + k->timeout_ns;
		}
		break;
	case UR_CM_ATTR_DREQ:
		rx_dreq(c, mad);
		break;
	case UR_CM_ATTR_DREP:
		if (c->state == CMS_DREQ_SENT)
			finish(c, CMS_DISCONNECTED, RDMA_CM_EVENT_DISCONNECTED,
			       mad);
		break;
	case UR_CM_ATTR_SIDR_REP:
		rx_sidr_rep(c, mad);
		break;
	default:
		break;
	}
	return ret;
}

/* ---- timers ---------------------------------------------------------------- */
static void timed_out(struct cm_id *c)
{
	enum cm_state s = c->state;

	stop_timer(c);
	switch (s) {
	case CMS_REQ_SENT:
	case CMS_REP_SENT:
		cm__send_rej(c, CM_REJ_TIMEOUT, NULL, 0);
		cm__modify_qp(c, IBV_QPS_ERR);
		conn_event(c, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0, 0);
		break;
	case CMS_SIDR_REQ_SENT:
		c->state = CMS_ERROR;
		conn_event(c, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0, 0);
		break;
	case CMS_DREQ_SENT:
		c->state = CMS_DISCONNECTED;
		conn_event(c, RDMA_CM_EVENT_DISCONNECTED, -ETIMEDOUT, NULL, 0,
			   0);
		break;
	default:
		break;
	}
}

/**
 * cm__run_timers() - resend what is due at @now, give up what timed out,
 * and look for the listeners of held REQs.
 * Return: when to run again (UINT64_MAX: nothing pending).
 */
uint64_t cm__run_timers(struct cm_core *k, uint64_t now)
{
	uint64_t next = k->parked ? run_parked(k, now) : UINT64_MAX;

	for (struct cm_id *c = k->ids; c; c = c->next) {
		if (!c->deadline)
			continue;
		if (c->deadline <= now) {
			if (now >= c->give_up) {
				timed_out(c);
				continue;
			}
			k->resent++;
			c->resends++;
			send_mad(c->dev, &c->peer, c->mad);
			c->deadline = now + k->resend_ns;
			if (c->deadline > c->give_up)
				c->deadline = c->give_up;
		}
		if (c->deadline && c->deadline < next)
			next = c->deadline;
	}
	return next;
}

/* ---- what the rdma_cm calls do to a connection ----------------------------- */
/* librdmacm's ucma_valid_param(): on RDMA_PS_TCP, an ID without a QP
 * needs the parameters (they carry the QPN), and the read depths must
 * not exceed the device's. */
static int valid_param(const struct cm_id *c, const struct rdma_conn_param *p)
{
	if (c->id.ps != RDMA_PS_TCP)
		return 0;
	if (!p)
		return c->id.qp ? 0 : -EINVAL;
	if ((p->responder_resources != RDMA_MAX_RESP_RES &&
	     p->responder_resources > c->dev->max_rd_atom) ||
	    (p->initiator_depth != RDMA_MAX_INIT_DEPTH &&
	     p->initiator_depth > c->dev->max_rd_atom))
		return -EINVAL;
	return 0;
}

/* rdma_connect() on a resolved ID: REQ, or SIDR REQ for UD. */
int cm__connect(struct cm_id *c, const struct rdma_conn_param *p, uint64_t now)
{
	int ret;

	if (c->state != CMS_ROUTE_RESOLVED)
		return -EINVAL;
	ret = valid_param(c, p);
	if (ret)
		return ret;
	if (c->id.qp_type == IBV_QPT_UD)
		return cm__send_sidr_req(c, p, now);
	return cm__send_req(c, p, now);
}

/* rdma_establish(): the user moved the QP after CONNECT_RESPONSE. */
int cm__establish(struct cm_id *c)
{
	if (c->state != CMS_REP_RCVD)
		return -EINVAL;
	cm__send_rtu(c);
	c->state = CMS_ESTABLISHED;
	return 0;
}

/*
 * rdma_accept(): a SIDR REP for UD; for a connection the QP to RTR and
 * RTS, then the REP (librdmacm's rdma_accept): the user's depths, or
 * (RDMA_MAX_*) the REQ's bounded by the device. The accept's RNR retry
 * count goes into the REP for the peer; ours stays the REQ's.
 */
int cm__accept(struct cm_id *c, const struct rdma_conn_param *p, uint64_t now)
{
	int ret;

	if (c->state == CMS_SIDR_REQ_RCVD) {
		c->local_qpn = c->id.qp ? c->id.qp->qp_num : (p ? p->qp_num : 0);
		return cm__send_sidr_rep(c, CM_SIDR_SUCCESS,
					 p ? p->private_data : NULL,
					 p ? p->private_data_len : 0);
	}
	if (c->state != CMS_REQ_RCVD)
		return -EINVAL;
	ret = valid_param(c, p);
	if (ret)
		return ret;
	if (p && p->responder_resources != RDMA_MAX_RESP_RES)
		c->resp_res = p->responder_resources;
	if (p && p->initiator_depth != RDMA_MAX_INIT_DEPTH)
		c->init_depth = p->initiator_depth;
	if (c->resp_res > c->dev->max_rd_atom)
		c->resp_res = (uint8_t)c->dev->max_rd_atom;
	if (c->init_depth > c->dev->max_rd_atom)
		c->init_depth = (uint8_t)c->dev->max_rd_atom;
	c->local_qpn = c->id.qp ? c->id.qp->qp_num : (p ? p->qp_num : 0);
	ret = cm__modify_qp(c, IBV_QPS_RTR);
	if (!ret)
		ret = cm__modify_qp(c, IBV_QPS_RTS);
	if (!ret)
		ret = cm__send_rep(c, p, now);
	if (ret) {
		cm__send_rej(c, CM_REJ_NO_QP, NULL, 0);
		cm__modify_qp(c, IBV_QPS_ERR);
	}
	return ret;
}

/* rdma_reject(): REJ "consumer defined", or SIDR REP "reject". */
int cm__reject(struct cm_id *c, const void *pd, uint8_t plen)
{
	if (c->state == CMS_SIDR_REQ_RCVD)
		return cm__send_sidr_rep(c, CM_SIDR_REJECT, pd, plen);
	if (c->state == CMS_REQ_RCVD)
		return cm__send_rej(c, CM_REJ_CONSUMER_DEFINED, pd, plen);
	return -EINVAL;
}

/* rdma_disconnect(): the QP to ERR and, if connected, a DREQ. */
int cm__disconnect(struct cm_id *c, uint64_t now)
{
	switch (c->state) {
	case CMS_ESTABLISHED:
	case CMS_REP_SENT:
		cm__modify_qp(c, IBV_QPS_ERR);
		return cm__send_dreq(c, now);
	case CMS_DREQ_SENT:
	case CMS_DISCONNECTED:
		cm__modify_qp(c, IBV_QPS_ERR);
		return 0;
	default:
		return -EINVAL;
	}
}

/* rdma_notify(COMM_EST): data arrived before the RTU (12.9.6). */
void cm__notify_established(struct cm_id *c)
{
	if (c->state != CMS_REP_SENT)
		return;
	c->deadline = 0;
	c->state = CMS_ESTABLISHED;
	c->dev->core->ops->queue_event(c->dev->core, c,
				       RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0,
				       NULL);
}

/* The ID is going (rdma_destroy_id, or the process exits): tell the peer
 * that the connection or request is gone (12.9.6), as Linux's
 * ib_destroy_cm_id does. */
void cm__tell_peer(struct cm_id *c, uint64_t now)
{
	switch (c->state) {
	case CMS_ESTABLISHED:
		cm__send_dreq(c, now);
		break;
	case CMS_REQ_SENT:
	case CMS_REP_SENT:
	case CMS_REP_RCVD:
		cm__send_rej(c, CM_REJ_TIMEOUT, NULL, 0);
		break;
	case CMS_REQ_RCVD:
		cm__send_rej(c, CM_REJ_CONSUMER_DEFINED, NULL, 0);
		break;
	case CMS_SIDR_REQ_RCVD:
		cm__send_sidr_rep(c, CM_SIDR_REJECT, NULL, 0);
		break;
	default:
		break;
	}
}

// SPDX-License-Identifier: MIT
/*
 * Management datagrams on QP1: the common MAD header (IBTA vol. 1 13.4.3),
 * the common part of uroce's vendor hellos, and a decoded view of a Communication Manager message (IBTA 12.6) for
 * the packet printer and uroce-decode. The CM layout itself is the table
 * in cm_mad.c.
 */
#include <errno.h>
#include <string.h>

#include "ur_cm_mad.h"

#define MAD_HDR_LEN 24

/**
 * ur_mad_decode() - the common MAD header (IBTA 13.4.3).
 * Return: 0, or -EBADMSG when @len is shorter than a MAD.
 */
int ur_mad_decode(const uint8_t *mad, size_t len, struct ur_mad_hdr *h)
{
	memset(h, 0, sizeof(*h));
	if (len < UR_MAD_LEN)
		return -EBADMSG;
	h->base_version = mad[0];
	h->mgmt_class = mad[1];
	h->class_version = mad[2];
	h->method = mad[3];
	h->status = ur_get16(mad + 4);
	h->class_specific = ur_get16(mad + 6);
	h->tid = ur_get64(mad + 8);
	h->attr_id = ur_get16(mad + 16);
	h->attr_mod = ur_get32(mad + 20);
	return 0;
}

void ur_hello_put(uint8_t *mad, const struct ur_hello *h)
{
	mad[0] = 1; /* base version */
	mad[1] = UR_MGMT_CLASS_UROCE;
	mad[2] = 1; /* class version */
	mad[3] = 3; /* Send */
	ur_put64(mad + 8, h->tid);
	ur_put16(mad + 16, h->attr);
	ur_put32(mad + UR_HELLO_MAGIC, h->magic);
	mad[UR_HELLO_VER] = 1;
	mad[UR_HELLO_FLAGS] = h->answer ? UR_HELLO_FLAG_ANSWER : 0;
	ur_put32(mad + UR_HELLO_SRC_QPN, h->src_qpn);
	ur_put32(mad + UR_HELLO_DST_QPN, h->dst_qpn);
}

int ur_hello_get(const uint8_t *mad, size_t len, struct ur_hello *h)
{
	if (len < UR_MAD_LEN || mad[0] != 1 || mad[1] != UR_MGMT_CLASS_UROCE ||
	    mad[2] != 1 || mad[3] != 3 || ur_get16(mad + 16) != h->attr ||
	    ur_get32(mad + UR_HELLO_MAGIC) != h->magic ||
	    mad[UR_HELLO_VER] != 1)
		return -EBADMSG;
	h->answer = mad[UR_HELLO_FLAGS] & UR_HELLO_FLAG_ANSWER;
	h->src_qpn = ur_get32(mad + UR_HELLO_SRC_QPN) & UR_PSN_MASK;
	h->dst_qpn = ur_get32(mad + UR_HELLO_DST_QPN) & UR_PSN_MASK;
	h->tid = ur_get64(mad + 8);
	return 0;
}

/**
 * ur_cm_decode() - a CM MAD's common fields, read through the CM codec's
 * table (cm_mad.c), so that the layout lives in one place.
 * Return: 0; -EBADMSG if truncated; -EINVAL if not a CM MAD or an
 * attribute we do not know (m->name is NULL then).
 */
int ur_cm_decode(const uint8_t *mad, size_t len, struct ur_cm_msg *m)
{
	uint16_t attr;
	size_t plen;
	int ret;

	memset(m, 0, sizeof(*m));
	ret = ur_mad_decode(mad, len, &m->mad);
	if (ret)
		return ret;
	attr = m->mad.attr_id;
	if (m->mad.mgmt_class != UR_MGMT_CLASS_CM || m->mad.base_version != 1 ||
	    !ur_cm_attr_name(attr))
		return -EINVAL;
	m->name = ur_cm_attr_name(attr);
	/* SIDR: the Request ID stands in for the comm ID. */
	m->local_comm_id = (uint32_t)ur_cm_get(mad, CMF_LOCAL_COMM_ID);
	m->remote_comm_id = (uint32_t)ur_cm_get(mad, CMF_REMOTE_COMM_ID);
	if (attr == UR_CM_ATTR_SIDR_REP)
		m->local_comm_id = m->remote_comm_id, m->remote_comm_id = 0;
	m->service_id = ur_cm_get(mad, CMF_SERVICE_ID);
	m->local_qpn = (uint32_t)(ur_cm_get(mad, CMF_LOCAL_QPN) |
				  ur_cm_get(mad, CMF_REMOTE_QPN) |
				  ur_cm_get(mad, CMF_QPN));
	m->starting_psn = (uint32_t)ur_cm_get(mad, CMF_STARTING_PSN);
	m->local_qkey = (uint32_t)(ur_cm_get(mad, CMF_LOCAL_QKEY) |
				   ur_cm_get(mad, CMF_QKEY));
	m->resp_resources = (uint8_t)ur_cm_get(mad, CMF_RESP_RES);
	m->initiator_depth = (uint8_t)ur_cm_get(mad, CMF_INIT_DEPTH);
	m->qp_type = (uint8_t)ur_cm_get(mad, CMF_SERVICE_TYPE);
	m->retry_cnt = (uint8_t)ur_cm_get(mad, CMF_RETRY_COUNT);
	m->path_mtu = (uint8_t)ur_cm_get(mad, CMF_PATH_MTU);
	m->rnr_retry = (uint8_t)ur_cm_get(mad, CMF_RNR_RETRY);
	m->timeout = (uint8_t)ur_cm_get(mad, CMF_P_ACK_TIMEOUT);
	m->rej_reason = (uint16_t)(ur_cm_get(mad, CMF_REJ_REASON) |
				   ur_cm_get(mad, CMF_SIDR_STATUS));
	m->private_data = ur_cm_blob(mad, CMB_PDATA, &plen);
	m->private_len = (uint32_t)plen;
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * Management datagrams on QP1: the common MAD header (IBTA vol. 1 13.4.3)
 * and the Communication Manager messages (IBTA 12.6). Field offsets are in
 * one table, relative to the start of the MAD (the 24-byte MAD header is
 * followed by the 232-byte CM message).
 */
#include <errno.h>
#include <string.h>

#include "ur_wire.h"

#define MAD_HDR_LEN 24
#define CM_DATA(x) (MAD_HDR_LEN + (x)) /* offset within the CM message */
#define NONE 0                         /* no such field in this message */

/* Where each field of struct ur_cm_msg lives in one CM message type. */
struct cm_layout {
	uint16_t attr;
	const char *name;
	uint8_t local_comm_id, remote_comm_id;
	uint8_t service_id;  /* 64 bits */
	uint8_t qpn;         /* 24 bits, local QPN (REQ/REP/SIDR_REP), remote (DREQ) */
	uint8_t psn;         /* 24 bits */
	uint8_t qkey;        /* 32 bits */
	uint8_t private_data;
	uint8_t private_len;
};

static const struct cm_layout cm_layouts[] = {
	{ /* IBTA 12.6.5 */
		.attr = UR_CM_ATTR_REQ, .name = "REQ",
		.local_comm_id = CM_DATA(0), .service_id = CM_DATA(8),
		.qkey = CM_DATA(28), .qpn = CM_DATA(32), .psn = CM_DATA(44),
		.private_data = CM_DATA(140), .private_len = 92,
	},
	{ /* IBTA 12.6.6 */
		.attr = UR_CM_ATTR_MRA, .name = "MRA",
		.local_comm_id = CM_DATA(0), .remote_comm_id = CM_DATA(4),
		.private_data = CM_DATA(10), .private_len = 222,
	},
	{ /* IBTA 12.6.7 */
		.attr = UR_CM_ATTR_REJ, .name = "REJ",
		.local_comm_id = CM_DATA(0), .remote_comm_id = CM_DATA(4),
		.private_data = CM_DATA(84), .private_len = 148,
	},
	{ /* IBTA 12.6.8 */
		.attr = UR_CM_ATTR_REP, .name = "REP",
		.local_comm_id = CM_DATA(0), .remote_comm_id = CM_DATA(4),
		.qkey = CM_DATA(8), .qpn = CM_DATA(12), .psn = CM_DATA(20),
		.private_data = CM_DATA(36), .private_len = 196,
	},
	{ /* IBTA 12.6.9 */
		.attr = UR_CM_ATTR_RTU, .name = "RTU",
		.local_comm_id = CM_DATA(0), .remote_comm_id = CM_DATA(4),
		.private_data = CM_DATA(8), .private_len = 224,
	},
	{ /* IBTA 12.6.10 */
		.attr = UR_CM_ATTR_DREQ, .name = "DREQ",
		.local_comm_id = CM_DATA(0), .remote_comm_id = CM_DATA(4),
		.qpn = CM_DATA(8),
		.private_data = CM_DATA(12), .private_len = 220,
	},
	{ /* IBTA 12.6.11 */
		.attr = UR_CM_ATTR_DREP, .name = "DREP",
		.local_comm_id = CM_DATA(0), .remote_comm_id = CM_DATA(4),
		.private_data = CM_DATA(8), .private_len = 224,
	},
	{ /* IBTA 12.11.1: Request ID stands in for the comm ID. */
		.attr = UR_CM_ATTR_SIDR_REQ, .name = "SIDR_REQ",
		.local_comm_id = CM_DATA(0), .service_id = CM_DATA(8),
		.private_data = CM_DATA(16), .private_len = 216,
	},
	{ /* IBTA 12.11.2 */
		.attr = UR_CM_ATTR_SIDR_REP, .name = "SIDR_REP",
		.local_comm_id = CM_DATA(0), .qpn = CM_DATA(8),
		.service_id = CM_DATA(12), .qkey = CM_DATA(20),
		.private_data = CM_DATA(96), .private_len = 136,
	},
};

/* REQ bit fields (IBTA 12.6.5), relative to the CM message. */
#define REQ_RESP_RESOURCES 35 /* low byte of the QPN word */
#define REQ_INIT_DEPTH 39
#define REQ_SERVICE_TYPE 43   /* bits 2:1 */
#define REQ_RETRY_COUNT 47    /* bits 2:0 */
#define REQ_MTU_RNR 50        /* MTU 7:4, RNR retry 2:0 */
#define REQ_PRI_ACK_TIMEOUT 95 /* primary path local ACK timeout, 7:3 */
/* REP (IBTA 12.6.8). */
#define REP_RESP_RESOURCES 24
#define REP_INIT_DEPTH 25
#define REP_RNR_RETRY 27      /* bits 7:5 */
/* REJ (IBTA 12.6.7). */
#define REJ_REASON 10
/* SIDR_REP status (IBTA 12.11.2). */
#define SIDR_REP_STATUS 4

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

/**
 * ur_cm_decode() - decode a CM MAD via the layout table.
 * Return: 0; -EBADMSG if truncated; -EINVAL if not a CM MAD or an
 * attribute we do not know (m->name is NULL then).
 */
int ur_cm_decode(const uint8_t *mad, size_t len, struct ur_cm_msg *m)
{
	const struct cm_layout *l = NULL;
	const uint8_t *d = mad + MAD_HDR_LEN;
	int ret;

	memset(m, 0, sizeof(*m));
	ret = ur_mad_decode(mad, len, &m->mad);
	if (ret)
		return ret;
	if (m->mad.mgmt_class != UR_MGMT_CLASS_CM || m->mad.base_version != 1)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(cm_layouts) / sizeof(cm_layouts[0]); i++)
		if (cm_layouts[i].attr == m->mad.attr_id)
			l = &cm_layouts[i];
	if (!l)
		return -EINVAL;

	m->name = l->name;
	if (l->local_comm_id != NONE)
		m->local_comm_id = ur_get32(mad + l->local_comm_id);
	if (l->remote_comm_id != NONE)
		m->remote_comm_id = ur_get32(mad + l->remote_comm_id);
	if (l->service_id != NONE)
		m->service_id = ur_get64(mad + l->service_id);
	if (l->qpn != NONE)
		m->local_qpn = ur_get24(mad + l->qpn);
	if (l->psn != NONE)
		m->starting_psn = ur_get24(mad + l->psn);
	if (l->qkey != NONE)
		m->local_qkey = ur_get32(mad + l->qkey);
	m->private_data = mad + l->private_data;
	m->private_len = l->private_len;

	switch (l->attr) {
	case UR_CM_ATTR_REQ:
		m->resp_resources = d[REQ_RESP_RESOURCES];
		m->initiator_depth = d[REQ_INIT_DEPTH];
		m->qp_type = (d[REQ_SERVICE_TYPE] >> 1) & 3;
		m->retry_cnt = d[REQ_RETRY_COUNT] & 7;
		m->path_mtu = d[REQ_MTU_RNR] >> 4;
		m->rnr_retry = d[REQ_MTU_RNR] & 7;
		m->timeout = d[REQ_PRI_ACK_TIMEOUT] >> 3;
		break;
	case UR_CM_ATTR_REP:
		m->resp_resources = d[REP_RESP_RESOURCES];
		m->initiator_depth = d[REP_INIT_DEPTH];
		m->rnr_retry = d[REP_RNR_RETRY] >> 5;
		break;
	case UR_CM_ATTR_REJ:
		m->rej_reason = ur_get16(d + REJ_REASON);
		break;
	case UR_CM_ATTR_SIDR_REP:
		m->rej_reason = d[SIDR_REP_STATUS];
		break;
	default:
		break;
	}
	return 0;
}

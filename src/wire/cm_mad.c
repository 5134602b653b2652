// SPDX-License-Identifier: MIT
/*
 * IB CM message codec: one table row per (message, field), IBTA vol. 1
 * 12.6.5 (REQ) .. 12.6.11 (DREP), 12.11 (SIDR). Offsets are relative to the
 * CM message (MAD byte 24); a field is `width` bits ending `shift` bits
 * above the least significant bit of the big-endian unit at `off` that is
 * just wide enough to hold it.
 */
#include <errno.h>
#include <string.h>

#include "ur_cm_mad.h"

struct cm_fdesc {
	uint16_t attr;
	uint8_t field;
	uint8_t off;
	uint8_t shift, width;
};

#define F(a, f, o, s, w)                                                     \
	{ .attr = UR_CM_ATTR_##a, .field = CMF_##f, .off = o, .shift = s,    \
	  .width = w }

static const struct cm_fdesc cm_fields[] = {
	/* REQ, 12.6.5 */
	F(REQ, LOCAL_COMM_ID, 0, 0, 32),
	F(REQ, SERVICE_ID, 8, 0, 64),
	F(REQ, LOCAL_CA_GUID, 16, 0, 64),
	F(REQ, LOCAL_QKEY, 28, 0, 32),
	F(REQ, LOCAL_QPN, 32, 8, 24),
	F(REQ, RESP_RES, 35, 0, 8),
	F(REQ, INIT_DEPTH, 39, 0, 8),
	F(REQ, REMOTE_CM_TIMEOUT, 43, 3, 5),
	F(REQ, SERVICE_TYPE, 43, 1, 2),
	F(REQ, FLOW_CTRL, 43, 0, 1),
	F(REQ, STARTING_PSN, 44, 8, 24),
	F(REQ, LOCAL_CM_TIMEOUT, 47, 3, 5),
	F(REQ, RETRY_COUNT, 47, 0, 3),
	F(REQ, PKEY, 48, 0, 16),
	F(REQ, PATH_MTU, 50, 4, 4),
	F(REQ, RNR_RETRY, 50, 0, 3),
	F(REQ, MAX_CM_RETRIES, 51, 4, 4),
	F(REQ, SRQ, 51, 3, 1),
	F(REQ, P_LOCAL_LID, 52, 0, 16),
	F(REQ, P_REMOTE_LID, 54, 0, 16),
	F(REQ, P_FLOW_LABEL, 88, 12, 20),
	F(REQ, P_RATE, 91, 0, 6),
	F(REQ, P_TCLASS, 92, 0, 8),
	F(REQ, P_HOP_LIMIT, 93, 0, 8),
	F(REQ, P_SL, 94, 4, 4),
	F(REQ, P_SUBNET_LOCAL, 94, 3, 1),
	F(REQ, P_ACK_TIMEOUT, 95, 3, 5),
	/* MRA, 12.6.6 */
	F(MRA, LOCAL_COMM_ID, 0, 0, 32),
	F(MRA, REMOTE_COMM_ID, 4, 0, 32),
	F(MRA, MSG_MRAED, 8, 6, 2),
	F(MRA, SERVICE_TIMEOUT, 9, 3, 5),
	/* REJ, 12.6.7 */
	F(REJ, LOCAL_COMM_ID, 0, 0, 32),
	F(REJ, REMOTE_COMM_ID, 4, 0, 32),
	F(REJ, MSG_REJECTED, 8, 6, 2),
	F(REJ, REJ_INFO_LEN, 9, 1, 7),
	F(REJ, REJ_REASON, 10, 0, 16),
	/* REP, 12.6.8 */
	F(REP, LOCAL_COMM_ID, 0, 0, 32),
	F(REP, REMOTE_COMM_ID, 4, 0, 32),
	F(REP, LOCAL_QKEY, 8, 0, 32),
	F(REP, LOCAL_QPN, 12, 8, 24),
	F(REP, STARTING_PSN, 20, 8, 24),
	F(REP, RESP_RES, 24, 0, 8),
	F(REP, INIT_DEPTH, 25, 0, 8),
	F(REP, TARGET_ACK_DELAY, 26, 3, 5),
	F(REP, FAILOVER, 26, 1, 2),
	F(REP, FLOW_CTRL, 26, 0, 1),
	F(REP, RNR_RETRY, 27, 5, 3),
	F(REP, SRQ, 27, 4, 1),
	F(REP, LOCAL_CA_GUID, 28, 0, 64),
	/* RTU, 12.6.9 */
	F(RTU, LOCAL_COMM_ID, 0, 0, 32),
	F(RTU, REMOTE_COMM_ID, 4, 0, 32),
	/* DREQ, 12.6.10 */
	F(DREQ, LOCAL_COMM_ID, 0, 0, 32),
	F(DREQ, REMOTE_COMM_ID, 4, 0, 32),
	F(DREQ, REMOTE_QPN, 8, 8, 24),
	/* DREP, 12.6.11 */
	F(DREP, LOCAL_COMM_ID, 0, 0, 32),
	F(DREP, REMOTE_COMM_ID, 4, 0, 32),
	/* SIDR_REQ, 12.11.1: the Request ID plays the local comm ID */
	F(SIDR_REQ, LOCAL_COMM_ID, 0, 0, 32),
	F(SIDR_REQ, PKEY, 4, 0, 16),
	F(SIDR_REQ, SERVICE_ID, 8, 0, 64),
	/* SIDR_REP, 12.11.2: Request ID echoed in REMOTE_COMM_ID's place */
	F(SIDR_REP, REMOTE_COMM_ID, 0, 0, 32),
	F(SIDR_REP, SIDR_STATUS, 4, 0, 8),
	F(SIDR_REP, SIDR_INFO_LEN, 5, 0, 8),
	F(SIDR_REP, QPN, 8, 8, 24),
	F(SIDR_REP, SERVICE_ID, 12, 0, 64),
	F(SIDR_REP, QKEY, 20, 0, 32),
};

struct cm_bdesc {
	uint16_t attr;
	uint8_t blob;
	uint8_t off, len;
};

static const struct cm_bdesc cm_blobs[] = {
	{ UR_CM_ATTR_REQ, CMB_P_LOCAL_GID, 56, 16 },
	{ UR_CM_ATTR_REQ, CMB_P_REMOTE_GID, 72, 16 },
	{ UR_CM_ATTR_REQ, CMB_PDATA, 140, 92 },
	{ UR_CM_ATTR_MRA, CMB_PDATA, 10, 222 },
	{ UR_CM_ATTR_REJ, CMB_ARI, 12, 72 },
	{ UR_CM_ATTR_REJ, CMB_PDATA, 84, 148 },
	{ UR_CM_ATTR_REP, CMB_PDATA, 36, 196 },
	{ UR_CM_ATTR_RTU, CMB_PDATA, 8, 224 },
	{ UR_CM_ATTR_DREQ, CMB_PDATA, 12, 220 },
	{ UR_CM_ATTR_DREP, CMB_PDATA, 8, 224 },
	{ UR_CM_ATTR_SIDR_REQ, CMB_PDATA, 16, 216 },
	{ UR_CM_ATTR_SIDR_REP, CMB_PDATA, 96, 136 },
};

static const char *const cm_attr_names[] = {
	[UR_CM_ATTR_REQ - UR_CM_ATTR_REQ] = "REQ",
	[UR_CM_ATTR_MRA - UR_CM_ATTR_REQ] = "MRA",
	[UR_CM_ATTR_REJ - UR_CM_ATTR_REQ] = "REJ",
	[UR_CM_ATTR_REP - UR_CM_ATTR_REQ] = "REP",
	[UR_CM_ATTR_RTU - UR_CM_ATTR_REQ] = "RTU",
	[UR_CM_ATTR_DREQ - UR_CM_ATTR_REQ] = "DREQ",
	[UR_CM_ATTR_DREP - UR_CM_ATTR_REQ] = "DREP",
	[UR_CM_ATTR_SIDR_REQ - UR_CM_ATTR_REQ] = "SIDR_REQ",
	[UR_CM_ATTR_SIDR_REP - UR_CM_ATTR_REQ] = "SIDR_REP",
};

static const char *const cm_field_names[] = {
#define CM_X(n) #n,
	CM_FIELDS(CM_X)
#undef CM_X
};

const char *ur_cm_attr_name(uint16_t attr)
{
	if (attr < UR_CM_ATTR_REQ || attr > UR_CM_ATTR_SIDR_REP)
		return NULL;
	return cm_attr_names[attr - UR_CM_ATTR_REQ];
}

const char *ur_cm_field_name(enum cm_field f)
{
	return f < CMF_NUM ? cm_field_names[f] : "?";
}

void ur_cm_mad_init(uint8_t *mad, uint16_t attr, uint64_t tid)
{
	memset(mad, 0, UR_MAD_LEN);
	mad[0] = 1; /* base version */
	mad[1] = UR_MGMT_CLASS_CM;
	mad[2] = CM_CLASS_VERSION;
	mad[3] = CM_METHOD_SEND;
	ur_put64(mad + 8, tid);
	ur_put16(mad + 16, attr);
}

uint16_t ur_cm_mad_attr(const uint8_t *mad)
{
	return ur_get16(mad + 16);
}

uint64_t ur_cm_mad_tid(const uint8_t *mad)
{
	return ur_get64(mad + 8);
}

bool ur_cm_mad_valid(const uint8_t *mad, size_t len)
{
	return len >= UR_MAD_LEN && mad[0] == 1 &&
	       mad[1] == UR_MGMT_CLASS_CM && ur_cm_attr_name(ur_cm_mad_attr(mad));
}

static const struct cm_fdesc *find(uint16_t attr, enum cm_field f)
{
	for (size_t i = 0; i < sizeof(cm_fields) / sizeof(cm_fields[0]); i++)
		if (cm_fields[i].attr == attr && cm_fields[i].field == f)
			return &cm_fields[i];
	return NULL;
}

bool ur_cm_has(uint16_t attr, enum cm_field f)
{
	return find(attr, f) != NULL;
}

/* Size in bytes of the big-endian unit holding a field. */
static unsigned int unit_bytes(const struct cm_fdesc *d)
{
	unsigned int bits = d->shift + d->width;

	return bits <= 8 ? 1 : bits <= 16 ? 2 : bits <= 32 ? 4 : 8;
}

static uint64_t load(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static void store(uint8_t *p, unsigned int n, uint64_t v)
{
	for (unsigned int i = n; i-- > 0; v >>= 8)
		p[i] = (uint8_t)v;
}

int ur_cm_set(uint8_t *mad, enum cm_field f, uint64_t v)
{
	const struct cm_fdesc *d = find(ur_cm_mad_attr(mad), f);
	uint8_t *p;
	uint64_t mask, u;
	unsigned int n;

	if (!d)
		return -EINVAL;
	p = mad + CM_MAD_HDR_LEN + d->off;
	n = unit_bytes(d);
	mask = d->width == 64 ? ~0ull : ((1ull << d->width) - 1) << d->shift;
	u = load(p, n);
	u = (u & ~mask) | ((v << d->shift) & mask);
	store(p, n, u);
	return 0;
}

uint64_t ur_cm_get(const uint8_t *mad, enum cm_field f)
{
	const struct cm_fdesc *d = find(ur_cm_mad_attr(mad), f);
	uint64_t u;

	if (!d)
		return 0;
	u = load(mad + CM_MAD_HDR_LEN + d->off, unit_bytes(d)) >> d->shift;
	return d->width == 64 ? u : u & ((1ull << d->width) - 1);
}

uint8_t *ur_cm_blob(const uint8_t *mad, enum cm_blob b, size_t *len)
{
	uint16_t attr = ur_cm_mad_attr(mad);

	for (size_t i = 0; i < sizeof(cm_blobs) / sizeof(cm_blobs[0]); i++)
		if (cm_blobs[i].attr == attr && cm_blobs[i].blob == b) {
			*len = cm_blobs[i].len;
			return (uint8_t *)mad + CM_MAD_HDR_LEN + cm_blobs[i].off;
		}
	*len = 0;
	return NULL;
}

/* rdma_cm header (Annex A11 / Linux cma_hdr): version 0, IP version in the
 * high nibble, the active side's port, then two 16-byte addresses with IPv4
 * in their last 4 bytes. */
void ur_cma_hdr_put(uint8_t *p, const struct cma_hdr *h)
{
	memset(p, 0, CMA_HDR_LEN);
	p[0] = 0;
	p[1] = (uint8_t)(h->ip_version << 4);
	ur_put16(p + 2, h->port);
	if (h->ip_version == 4) {
		memcpy(p + 4 + 12, h->src, 4);
		memcpy(p + 20 + 12, h->dst, 4);
	} else {
		memcpy(p + 4, h->src, 16);
		memcpy(p + 20, h->dst, 16);
	}
}

int ur_cma_hdr_get(const uint8_t *p, struct cma_hdr *h)
{
	memset(h, 0, sizeof(*h));
	if (p[0] != 0)
		return -EPROTO;
	h->ip_version = p[1] >> 4;
	h->port = ur_get16(p + 2);
	if (h->ip_version == 4) {
		memcpy(h->src, p + 4 + 12, 4);
		memcpy(h->dst, p + 20 + 12, 4);
	} else if (h->ip_version == 6) {
		memcpy(h->src, p + 4, 16);
		memcpy(h->dst, p + 20, 16);
	} else {
		return -EPROTO;
	}
	return 0;
}

/**
 * ur_cm_ack_timeout() - the Local ACK Timeout of a path (the REQ field, IBTA 12.7):
 * twice the packet lifetime plus the target's ACK delay, as the exponents
 * of 4.096 us that the fields carry; what Linux's CM computes
 * (cm_ack_timeout) for the REQ and, on the active side, for the QP.
 */
uint8_t ur_cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_lifetime)
{
	int t = packet_lifetime + 1;

	if (t >= ca_ack_delay)
		t += ca_ack_delay >= t - 1;
	else
		t = ca_ack_delay + (t >= ca_ack_delay - 1);
	return (uint8_t)(t > 31 ? 31 : t);
}

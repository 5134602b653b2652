/* SPDX-License-Identifier: MIT */
/*
 * IB CM messages (IBTA vol. 1 12.6, 12.11): the one CM codec of uroce.
 * librdmacm writes and reads its MADs with it, the wire decoder
 * (ur_cm_decode, uroce-decode) reads through it. Every field is a row of
 * a table (message, byte offset, bit position, width), so the encoder and
 * decoder cannot disagree. The MAD header (13.4.3) comes first; offsets
 * below are relative to the 232-byte CM message that follows it, as in
 * the spec's figures.
 */
#ifndef UR_CM_MAD_H
#define UR_CM_MAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ur_wire.h"

#define CM_MAD_HDR_LEN 24
#define CM_CLASS_VERSION 2
#define CM_METHOD_SEND 0x03

/* Fields: name, and for each message where it exists (attr, offset, bit
 * shift within the big-endian unit, width in bits). */
#define CM_FIELDS(X)                                                         \
	X(LOCAL_COMM_ID)  X(REMOTE_COMM_ID) X(SERVICE_ID) X(LOCAL_CA_GUID)   \
	X(LOCAL_QKEY)     X(LOCAL_QPN)      X(RESP_RES)   X(INIT_DEPTH)      \
	X(REMOTE_CM_TIMEOUT) X(SERVICE_TYPE) X(FLOW_CTRL) X(STARTING_PSN)    \
	X(LOCAL_CM_TIMEOUT) X(RETRY_COUNT)  X(PKEY)       X(PATH_MTU)        \
	X(RNR_RETRY)      X(MAX_CM_RETRIES) X(SRQ)        X(P_LOCAL_LID)     \
	X(P_REMOTE_LID)   X(P_FLOW_LABEL)   X(P_RATE)     X(P_TCLASS)        \
	X(P_HOP_LIMIT)    X(P_SL)           X(P_SUBNET_LOCAL)                \
	X(P_ACK_TIMEOUT)  X(TARGET_ACK_DELAY) X(FAILOVER) X(REMOTE_QPN)     \
	X(MSG_REJECTED)   X(REJ_INFO_LEN)   X(REJ_REASON) X(MSG_MRAED)       \
	X(SERVICE_TIMEOUT) X(SIDR_STATUS)   X(SIDR_INFO_LEN) X(QPN)         \
	X(QKEY)

enum cm_field {
#define CM_X(n) CMF_##n,
	CM_FIELDS(CM_X)
#undef CM_X
	CMF_NUM
};

/* Byte ranges (not integers): GIDs, private data, REJ ARI. */
enum cm_blob { CMB_P_LOCAL_GID, CMB_P_REMOTE_GID, CMB_ARI, CMB_PDATA };

/* REJ reasons (IBTA table 112) and MRA/REJ message codes (12.6.6/12.6.7). */
enum {
	CM_REJ_NO_QP = 1,
	CM_REJ_TIMEOUT = 4,
	CM_REJ_INVALID_COMM_ID = 6,
	CM_REJ_INVALID_SERVICE_ID = 8,
	CM_REJ_STALE_CONN = 10,
	CM_REJ_CONSUMER_DEFINED = 28,
	CM_MSG_REQ = 0, CM_MSG_REP = 1, CM_MSG_OTHER = 2,
	CM_SIDR_SUCCESS = 0, CM_SIDR_UNSUPPORTED = 1, CM_SIDR_REJECT = 2,
};

/* Start a MAD: zeroes it and writes the MAD header. */
void ur_cm_mad_init(uint8_t *mad, uint16_t attr, uint64_t tid);
uint16_t ur_cm_mad_attr(const uint8_t *mad);
uint64_t ur_cm_mad_tid(const uint8_t *mad);
/* Field access by table; -EINVAL (set) / 0 (get) when @mad's message has no
 * such field. */
int ur_cm_set(uint8_t *mad, enum cm_field f, uint64_t v);
uint64_t ur_cm_get(const uint8_t *mad, enum cm_field f);
bool ur_cm_has(uint16_t attr, enum cm_field f);
/* Byte ranges: pointer into the MAD and its size, NULL if absent. */
uint8_t *ur_cm_blob(const uint8_t *mad, enum cm_blob b, size_t *len);
const char *ur_cm_attr_name(uint16_t attr);
const char *ur_cm_field_name(enum cm_field f);
/* A received MAD we can parse: a CM class MAD of a known attribute. */
bool ur_cm_mad_valid(const uint8_t *mad, size_t len);

/* The Local ACK Timeout exponent of a path (cm_mad.c). */
uint8_t ur_cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_lifetime);

/* rdma_cm's private-data header in REQ and SIDR_REQ (36 bytes). */
#define CMA_HDR_LEN 36
struct cma_hdr {
	uint8_t ip_version; /* 4 or 6 */
	uint16_t port;      /* the active side's port */
	uint8_t src[16], dst[16]; /* IPv4 in the first 4 bytes */
};
void ur_cma_hdr_put(uint8_t *p, const struct cma_hdr *h);
int ur_cma_hdr_get(const uint8_t *p, struct cma_hdr *h);

#endif

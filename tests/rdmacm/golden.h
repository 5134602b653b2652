/* SPDX-License-Identifier: MIT */
/*
 * The golden rxe captures (shared/wire/rxe/, *.pcap) for the rdma_cm tests:
 * a minimal classic-pcap reader (Ethernet + IPv4 + UDP) that returns every
 * RoCEv2 packet (golden_frames) or only the 256-byte MADs sent to QP1
 * (golden_load), in capture order.
 */
#ifndef CM_GOLDEN_H
#define CM_GOLDEN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include "ur_cm_mad.h"

#define GOLDEN_MAX 16
struct golden_mad {
	uint8_t mad[UR_MAD_LEN];
	uint8_t src[4], dst[4];
};

/* One RoCEv2 packet: the IB part from the BTH to the ICRC. */
#define GOLDEN_IB_MAX 2048
struct golden_frame {
	uint8_t ib[GOLDEN_IB_MAX];
	size_t len;
	uint8_t src[4], dst[4];
	uint16_t sport, dport;
};

/* A uroce selective-repeat hello (docs/wire.md "Selective repeat
 * negotiation": vendor class 0x0A, method Send, attribute 0xFF02, magic
 * "UrSr"). A Linux host without an agent for the class (rxe's) drops it
 * unanswered, so the fake rxe peers pass over it. */
static inline int golden_is_sr_hello(const uint8_t *mad)
{
	return mad[0] == 1 && mad[1] == 0x0A && mad[2] == 1 && mad[3] == 0x03 &&
	       mad[16] == 0xFF && mad[17] == 0x02 && mad[24] == 'U' &&
	       mad[25] == 'r' && mad[26] == 'S' && mad[27] == 'r';
}

/* uroce's congestion-control hello (UROCE_CC=auto;
 * docs/wire.md "Congestion control negotiation"): attribute 0xFF03,
 * magic "UrCc". */
static inline int golden_is_cc_hello(const uint8_t *mad)
{
	return mad[0] == 1 && mad[1] == 0x0A && mad[2] == 1 && mad[3] == 0x03 &&
	       mad[16] == 0xFF && mad[17] == 0x03 && mad[24] == 'U' &&
	       mad[25] == 'r' && mad[26] == 'C' && mad[27] == 'c';
}

/* Either hello: what a standard peer's MAD layer drops unanswered. */
static inline int golden_is_uroce_hello(const uint8_t *mad)
{
	return golden_is_sr_hello(mad) || golden_is_cc_hello(mad);
}

/* Up to @max packets of capture @name (in $UROCE_GOLDEN_DIR); returns how
 * many, or -1 when the file cannot be read. */
static inline int golden_frames(const char *name, struct golden_frame *out,
				int max)
{
	const char *dir = getenv("UROCE_GOLDEN_DIR");
	char path[512];
	uint8_t hdr[24], rec[16], *frame;
	FILE *f;
	int n = 0;

	if (name[0] == '/')
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "%s/%s", dir ? dir : ".", name);
	f = fopen(path, "rb");
	if (!f || fread(hdr, 1, sizeof(hdr), f) != sizeof(hdr))
		return f ? (fclose(f), -1) : -1;
	frame = malloc(65536);
	while (frame && n < max && fread(rec, 1, sizeof(rec), f) == sizeof(rec)) {
		uint32_t len = rec[8] | rec[9] << 8 | (uint32_t)rec[10] << 16 |
			       (uint32_t)rec[11] << 24;
		size_t ihl;

		if (len > 65536 || fread(frame, 1, len, f) != len)
			break;
		if (len < 14 + 20 + 8 + 12 + 4 || frame[12] != 0x08 ||
		    frame[13] != 0x00 || frame[23] != 17)
			continue;
		ihl = (size_t)(frame[14] & 0xf) * 4;
		if (ihl < 20 || len < 14 + ihl + 8 + 16 ||
		    len - 14 - ihl - 8 > GOLDEN_IB_MAX)
			continue;
		memcpy(out[n].src, frame + 26, 4);
		memcpy(out[n].dst, frame + 30, 4);
		out[n].sport = ur_get16(frame + 14 + ihl);
		out[n].dport = ur_get16(frame + 14 + ihl + 2);
		out[n].len = len - 14 - ihl - 8;
		memcpy(out[n].ib, frame + 14 + ihl + 8, out[n].len);
		n++;
	}
	free(frame);
	fclose(f);
	return n;
}

/* The MADs (UD SENDs to QP 1) of capture @name, at most GOLDEN_MAX. */
static inline int golden_load(const char *name, struct golden_mad *out)
{
	static struct golden_frame fr[256];
	int n = golden_frames(name, fr, 256), m = 0;

	for (int i = 0; i < n && m < GOLDEN_MAX; i++) {
		if (fr[i].len < 20 + UR_MAD_LEN || ur_get24(fr[i].ib + 5) != 1)
			continue;
		memcpy(out[m].mad, fr[i].ib + 20, UR_MAD_LEN);
		memcpy(out[m].src, fr[i].src, 4);
		memcpy(out[m].dst, fr[i].dst, 4);
		m++;
	}
	return n < 0 ? -1 : m;
}

/* GID @b of CM MAD @mad := the IPv4-mapped GID of dotted @ip. */
static inline void golden_set_gid(uint8_t *mad, enum cm_blob b, const char *ip)
{
	size_t len;
	uint8_t *g = ur_cm_blob(mad, b, &len);

	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	inet_pton(AF_INET, ip, g + 12);
}

/* rxe's golden REQ @golden readdressed from @from to @to (GIDs and the
 * rdma_cm header): 0, or -1 if it has no rdma_cm header. */
static inline int golden_readdress_req(uint8_t *req, const uint8_t *golden,
				       const char *from, const char *to)
{
	struct cma_hdr h;
	size_t len;

	memcpy(req, golden, UR_MAD_LEN);
	golden_set_gid(req, CMB_P_LOCAL_GID, from);
	golden_set_gid(req, CMB_P_REMOTE_GID, to);
	if (ur_cma_hdr_get(ur_cm_blob(req, CMB_PDATA, &len), &h))
		return -1;
	inet_pton(AF_INET, from, h.src);
	inet_pton(AF_INET, to, h.dst);
	ur_cma_hdr_put(ur_cm_blob(req, CMB_PDATA, &len), &h);
	return 0;
}

/* What our REQ @ours must be: rxe's @golden with the fields that differ
 * per connection (TID, comm ID, GUID, QPN, PSN, MTU, flow label, GIDs,
 * the rdma_cm header's addresses and port) taken from @ours. */
static inline void golden_expect_req(uint8_t *exp, const uint8_t *golden,
				     const uint8_t *ours)
{
	static const enum cm_field per_conn[] = {
		CMF_LOCAL_COMM_ID, CMF_LOCAL_CA_GUID, CMF_LOCAL_QPN,
		CMF_STARTING_PSN, CMF_PATH_MTU, CMF_P_FLOW_LABEL,
	};
	static const enum cm_blob blobs[] = { CMB_P_LOCAL_GID,
					      CMB_P_REMOTE_GID };
	size_t len, l2;

	memcpy(exp, golden, UR_MAD_LEN);
	ur_put64(exp + 8, ur_cm_mad_tid(ours));
	for (size_t i = 0; i < sizeof(per_conn) / sizeof(per_conn[0]); i++)
		ur_cm_set(exp, per_conn[i], ur_cm_get(ours, per_conn[i]));
	for (size_t i = 0; i < 2; i++)
		memcpy(ur_cm_blob(exp, blobs[i], &len),
		       ur_cm_blob(ours, blobs[i], &l2), 16);
	memcpy(ur_cm_blob(exp, CMB_PDATA, &len),
	       ur_cm_blob(ours, CMB_PDATA, &l2), CMA_HDR_LEN);
}

/* What our REP @ours must be: rxe's @golden with our comm ID, QPN,
 * Starting PSN and GUID. */
static inline void golden_expect_rep(uint8_t *exp, const uint8_t *golden,
				     const uint8_t *ours)
{
	static const enum cm_field per_conn[] = {
		CMF_LOCAL_COMM_ID, CMF_LOCAL_QPN, CMF_STARTING_PSN,
		CMF_LOCAL_CA_GUID,
	};

	memcpy(exp, golden, UR_MAD_LEN);
	for (size_t i = 0; i < sizeof(per_conn) / sizeof(per_conn[0]); i++)
		ur_cm_set(exp, per_conn[i], ur_cm_get(ours, per_conn[i]));
}

#endif

// SPDX-License-Identifier: MIT
/*
 * The CM codec (src/wire/cm_mad.c) against Linux rxe's CM MADs (golden
 * captures rdma_cm_rping.pcap and rdma_cm_send_lat.pcap): the table and
 * the wire decoder's view of it (ur_cm_decode) agree, re-encoding the
 * decoded fields rebuilds each MAD byte for byte (so the table covers
 * every byte rxe sets), and the constants our CM puts in REQ/REP are the
 * ones rxe sends. test_wire places the bytes by hand (IBTA's figures).
 */
#include <errno.h>

#include "cm_priv.h"
#include "golden.h"
#include "ur_test.h"

static const char *const captures[] = { "rdma_cm_rping.pcap",
					"rdma_cm_send_lat.pcap" };

static int load_all(struct golden_mad *m)
{
	int n = 0;

	for (size_t i = 0; i < 2; i++) {
		int k = golden_load(captures[i], m + n);

		ASSERT_GT(k, 0);
		n += k;
	}
	return n;
}

static void t_golden_decode(void)
{
	struct golden_mad g[2 * GOLDEN_MAX];
	int n = load_all(g);

	ASSERT_EQ(n, 15); /* 5 + 10 CM MADs */
	for (int i = 0; i < n; i++) {
		const uint8_t *m = g[i].mad;
		struct ur_cm_msg w;
		uint16_t attr = ur_cm_mad_attr(m);

		ASSERT(ur_cm_mad_valid(m, UR_MAD_LEN));
		ASSERT_EQ(ur_cm_decode(m, UR_MAD_LEN, &w), 0);
		ASSERT_STR_EQ(ur_cm_attr_name(attr), w.name);
		ASSERT_EQ_U64(ur_cm_get(m, CMF_LOCAL_COMM_ID), w.local_comm_id);
		if (ur_cm_has(attr, CMF_REMOTE_COMM_ID))
			ASSERT_EQ_U64(ur_cm_get(m, CMF_REMOTE_COMM_ID),
				      w.remote_comm_id);
		if (attr == UR_CM_ATTR_REQ) {
			ASSERT_EQ_U64(ur_cm_get(m, CMF_SERVICE_ID), w.service_id);
			ASSERT_EQ(ur_cm_get(m, CMF_LOCAL_QPN), w.local_qpn);
			ASSERT_EQ(ur_cm_get(m, CMF_STARTING_PSN), w.starting_psn);
			ASSERT_EQ(ur_cm_get(m, CMF_RESP_RES), w.resp_resources);
			ASSERT_EQ(ur_cm_get(m, CMF_INIT_DEPTH), w.initiator_depth);
			ASSERT_EQ(ur_cm_get(m, CMF_PATH_MTU), w.path_mtu);
			ASSERT_EQ(ur_cm_get(m, CMF_SERVICE_TYPE), w.qp_type);
			ASSERT_EQ(ur_cm_get(m, CMF_RETRY_COUNT), w.retry_cnt);
			ASSERT_EQ(ur_cm_get(m, CMF_RNR_RETRY), w.rnr_retry);
			ASSERT_EQ(ur_cm_get(m, CMF_P_ACK_TIMEOUT), w.timeout);
		}
		if (attr == UR_CM_ATTR_REP) {
			ASSERT_EQ(ur_cm_get(m, CMF_LOCAL_QPN), w.local_qpn);
			ASSERT_EQ(ur_cm_get(m, CMF_STARTING_PSN), w.starting_psn);
			ASSERT_EQ(ur_cm_get(m, CMF_RESP_RES), w.resp_resources);
			ASSERT_EQ(ur_cm_get(m, CMF_INIT_DEPTH), w.initiator_depth);
			ASSERT_EQ(ur_cm_get(m, CMF_RNR_RETRY), w.rnr_retry);
		}
		if (attr == UR_CM_ATTR_DREQ)
			ASSERT_EQ(ur_cm_get(m, CMF_REMOTE_QPN), w.local_qpn);
	}
}

/* Rebuild each MAD from the fields our table knows: nothing rxe sets may be
 * outside the table. */
static void t_golden_reencode(void)
{
	struct golden_mad g[2 * GOLDEN_MAX];
	int n = load_all(g);

	for (int i = 0; i < n; i++) {
		const uint8_t *m = g[i].mad;
		uint8_t r[UR_MAD_LEN];
		uint16_t attr = ur_cm_mad_attr(m);

		ur_cm_mad_init(r, attr, ur_cm_mad_tid(m));
		for (int f = 0; f < CMF_NUM; f++)
			if (ur_cm_has(attr, (enum cm_field)f))
				ASSERT_EQ(ur_cm_set(r, (enum cm_field)f,
						   ur_cm_get(m, (enum cm_field)f)),
					  0);
		for (int b = CMB_P_LOCAL_GID; b <= CMB_PDATA; b++) {
			size_t la, lb;
			uint8_t *pa = ur_cm_blob(m, (enum cm_blob)b, &la);
			uint8_t *pb = ur_cm_blob(r, (enum cm_blob)b, &lb);

			ASSERT_EQ(la, lb);
			if (pa)
				memcpy(pb, pa, la);
		}
		ASSERT_MEM_EQ(r, m, UR_MAD_LEN);
	}
}

/* The values our CM writes (src/rdmacm/cm_priv.h) are rxe's. */
static void t_golden_constants(void)
{
	struct golden_mad g[GOLDEN_MAX];
	int n = golden_load("rdma_cm_rping.pcap", g);
	const uint8_t *req = g[0].mad, *rep = g[1].mad, *rtu = g[2].mad;
	const uint8_t *dreq = g[3].mad, *drep = g[4].mad;
	struct cma_hdr h;
	size_t len;
	uint64_t sid;

	ASSERT_EQ(n, 5);
	ASSERT_EQ(ur_cm_mad_attr(req), UR_CM_ATTR_REQ);
	ASSERT_EQ(req[2], CM_CLASS_VERSION);
	ASSERT_EQ(req[3], CM_METHOD_SEND);
	ASSERT_EQ(ur_cm_get(req, CMF_REMOTE_CM_TIMEOUT), CM_RESPONSE_TIMEOUT);
	ASSERT_EQ(ur_cm_get(req, CMF_LOCAL_CM_TIMEOUT), CM_RESPONSE_TIMEOUT);
	ASSERT_EQ(ur_cm_get(req, CMF_MAX_CM_RETRIES), CM_MAX_RETRIES);
	ASSERT_EQ(ur_cm_get(req, CMF_P_ACK_TIMEOUT), CM_ACK_TIMEOUT);
	ASSERT_EQ(ur_cm_get(req, CMF_PKEY), 0xffff);
	ASSERT_EQ(ur_cm_get(req, CMF_P_LOCAL_LID), 0xffff);
	ASSERT_EQ(ur_cm_get(req, CMF_P_REMOTE_LID), 0xffff);
	ASSERT_EQ(ur_cm_get(req, CMF_P_HOP_LIMIT), 64);
	ASSERT_EQ(ur_cm_get(req, CMF_LOCAL_QKEY), 0);
	/* Service ID: RDMA IP CM, port space TCP (Annex A11). */
	sid = ur_cm_get(req, CMF_SERVICE_ID);
	ASSERT_EQ_U64(sid >> 16, 0x0000000001060000ull >> 16);
	ASSERT_EQ(sid & 0xffff, 7174); /* rping's default port */
	/* rdma_cm header: version 0, IPv4, client port, the two addresses. */
	ASSERT_EQ(ur_cma_hdr_get(ur_cm_blob(req, CMB_PDATA, &len), &h), 0);
	ASSERT_EQ(h.ip_version, 4);
	ASSERT_MEM_EQ(h.src, g[0].src, 4);
	ASSERT_MEM_EQ(h.dst, g[0].dst, 4);
	/* Flow label = (sport * 31 + dport) mod 2^20, as we compute it. */
	ASSERT_EQ(ur_cm_get(req, CMF_P_FLOW_LABEL),
		  ((uint32_t)h.port * 31 + (sid & 0xffff)) & 0xfffff);
	/* GIDs are the IPv4-mapped addresses. */
	{
		uint8_t gid[16] = { [10] = 0xff, [11] = 0xff };

		memcpy(gid + 12, g[0].src, 4);
		ASSERT_MEM_EQ(ur_cm_blob(req, CMB_P_LOCAL_GID, &len), gid, 16);
		memcpy(gid + 12, g[0].dst, 4);
		ASSERT_MEM_EQ(ur_cm_blob(req, CMB_P_REMOTE_GID, &len), gid, 16);
	}
	/* REP: Q_Key 0, ACK delay 15, RNR retry 7; comm IDs cross over. */
	ASSERT_EQ(ur_cm_get(rep, CMF_LOCAL_QKEY), 0);
	ASSERT_EQ(ur_cm_get(rep, CMF_TARGET_ACK_DELAY), CM_TARGET_ACK_DELAY);
	ASSERT_EQ(ur_cm_get(rep, CMF_RNR_RETRY), 7);
	ASSERT_EQ(ur_cm_get(rep, CMF_REMOTE_COMM_ID),
		  ur_cm_get(req, CMF_LOCAL_COMM_ID));
	/* One transaction ID for REQ, REP, RTU, DREQ, DREP of a connection
	 * the active side opened and closed. */
	ASSERT_EQ_U64(ur_cm_mad_tid(rep), ur_cm_mad_tid(req));
	ASSERT_EQ_U64(ur_cm_mad_tid(rtu), ur_cm_mad_tid(req));
	ASSERT_EQ_U64(ur_cm_mad_tid(dreq), ur_cm_mad_tid(req));
	ASSERT_EQ_U64(ur_cm_mad_tid(drep), ur_cm_mad_tid(req));
	ASSERT_EQ(ur_cm_get(dreq, CMF_REMOTE_QPN), ur_cm_get(rep, CMF_LOCAL_QPN));
	ASSERT_EQ(ur_cm_get(drep, CMF_LOCAL_COMM_ID),
		  ur_cm_get(rep, CMF_LOCAL_COMM_ID));
}

static void t_cma_hdr_roundtrip(void)
{
	struct cma_hdr a = { .ip_version = 6, .port = 0xbeef }, b;
	uint8_t buf[CMA_HDR_LEN];

	for (int i = 0; i < 16; i++) {
		a.src[i] = (uint8_t)i;
		a.dst[i] = (uint8_t)(0xf0 + i);
	}
	ur_cma_hdr_put(buf, &a);
	ASSERT_EQ(ur_cma_hdr_get(buf, &b), 0);
	ASSERT_MEM_EQ(&a, &b, sizeof(a));
	buf[0] = 1; /* unknown rdma_cm version */
	ASSERT_NE(ur_cma_hdr_get(buf, &b), 0);
}

static void t_malformed(void)
{
	uint8_t m[UR_MAD_LEN];

	ur_cm_mad_init(m, UR_CM_ATTR_REQ, 1);
	ASSERT(ur_cm_mad_valid(m, UR_MAD_LEN));
	ASSERT(!ur_cm_mad_valid(m, UR_MAD_LEN - 1));
	m[1] = 0x04; /* not the CM class */
	ASSERT(!ur_cm_mad_valid(m, UR_MAD_LEN));
	ur_cm_mad_init(m, 0x0019, 1); /* past SIDR_REP */
	ASSERT(!ur_cm_mad_valid(m, UR_MAD_LEN));
	ASSERT_EQ(ur_cm_set(m, CMF_LOCAL_QPN, 1), -EINVAL);
	ur_cm_mad_init(m, UR_CM_ATTR_RTU, 1);
	ASSERT_EQ(ur_cm_set(m, CMF_SERVICE_ID, 1), -EINVAL);
	ASSERT_EQ(ur_cm_get(m, CMF_SERVICE_ID), 0);
}

/*
 * The Local ACK Timeout as Linux's CM computes it (cm_ack_timeout): the
 * path's packet lifetime + 1, raised to the CA's ACK delay, plus one
 * where the two are within one of each other, at most 31. rxe's REQ
 * (ACK delay 15, lifetime 18) carries 19.
 */
static void t_ack_timeout(void)
{
	static const struct { uint8_t delay, life, want; } v[] = {
		{ 15, 18, 19 }, { 15, 16, 17 }, { 15, 14, 16 }, { 15, 13, 16 },
		{ 15, 12, 15 }, { 20, 10, 20 }, { 20, 18, 21 }, { 0, 0, 2 },
		{ 31, 31, 31 }, { 0, 30, 31 },
	};
	struct golden_mad g[GOLDEN_MAX];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		ASSERT_EQ(ur_cm_ack_timeout(v[i].delay, v[i].life), v[i].want);
	ASSERT_EQ(golden_load("rdma_cm_rping.pcap", g), 5);
	ASSERT_EQ_U64(ur_cm_get(g[0].mad, CMF_P_ACK_TIMEOUT),
		      ur_cm_ack_timeout((uint8_t)ur_cm_get(g[1].mad,
							CMF_TARGET_ACK_DELAY),
				      18));
}

static const struct ur_test_case tests[] = {
	{ "golden_decode", t_golden_decode },
	{ "golden_reencode", t_golden_reencode },
	{ "golden_constants", t_golden_constants },
	{ "cma_hdr_roundtrip", t_cma_hdr_roundtrip },
	{ "malformed", t_malformed },
	{ "ack_timeout", t_ack_timeout },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

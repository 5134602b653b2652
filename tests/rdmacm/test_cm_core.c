// SPDX-License-Identifier: MIT
/*
 * The CM protocol core (src/rdmacm/cm_proto.c) on virtual time, without
 * sockets, threads or a device: fake ops record the MADs it sends, the
 * events it queues and the QP changes it asks for. Linux rxe's golden
 * exchange (rdma_cm_rping.pcap) is replayed on both sides: our REP, RTU,
 * DREQ and DREP must be rxe's byte for byte once the per-connection
 * fields are copied, and every QP attribute must be what Linux's CM sets
 * (docs/rdmacm.md). Also: resends and the give-up on virtual time, an
 * MRA's extension, a REQ held for a listener, crossing DREQs, a DREQ for
 * another QP. Comm IDs and PSNs come from a generator seeded by the test's
 * printed seed (UR_SEED repeats a run).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_priv.h"
#include "golden.h"
#include "ur_test.h"

#define MS 1000000ull
#define US_IP "127.0.0.2"
#define PEER_IP "127.0.0.3"
#define SVC_PORT 7174

/* ---- the fake surroundings ------------------------------------------------ */
#define MAX_REC 64
static struct {
	uint8_t mad[MAX_REC][UR_MAD_LEN];
	int nmad;
	struct { enum rdma_cm_event_type type; int status; struct cm_id *c;
		 size_t plen; } ev[MAX_REC];
	struct cm_event evs[MAX_REC];
	int nev;
	struct { struct ibv_qp_attr a; int mask; } qp[MAX_REC];
	int nqp;
	int kicks;
	bool listener_elsewhere;
	uint64_t rng;
} F;

static struct cm_core K;
static struct cm_dev D;
static struct ibv_qp QP = { .qp_num = 0x0a1b2c };
static struct golden_mad g[GOLDEN_MAX];

static int f_send(struct cm_core *k, struct cm_dev *dev,
		  const struct sockaddr_storage *peer, uint8_t slot,
		  const uint8_t *mad)
{
	(void)k, (void)dev, (void)peer, (void)slot;
	ASSERT_LT(F.nmad, MAX_REC);
	memcpy(F.mad[F.nmad++], mad, UR_MAD_LEN);
	return 0;
}

static int f_event(struct cm_core *k, struct cm_id *c,
		   enum rdma_cm_event_type type, int status,
		   const uint8_t *pdata, size_t plen, struct cm_event **out)
{
	(void)k, (void)pdata;
	ASSERT_LT(F.nev, MAX_REC);
	F.ev[F.nev].type = type;
	F.ev[F.nev].status = status;
	F.ev[F.nev].c = c;
	F.ev[F.nev].plen = plen;
	if (out)
		*out = &F.evs[F.nev];
	F.nev++;
	return 0;
}

static int f_modify(struct cm_core *k, struct cm_id *c, struct ibv_qp_attr *a,
		    int mask)
{
	(void)k, (void)c;
	ASSERT_LT(F.nqp, MAX_REC);
	F.qp[F.nqp].a = *a;
	F.qp[F.nqp].mask = mask;
	F.nqp++;
	return 0;
}

static struct cm_id *f_id_new(struct cm_core *k, struct cm_id *l,
			      enum ibv_qp_type qpt)
{
	struct cm_id *c = calloc(1, sizeof(*c));

	ASSERT(c);
	c->id.ps = l->id.ps;
	c->id.qp_type = qpt;
	c->next = k->ids;
	k->ids = c;
	return c;
}

static bool f_listener(struct cm_core *k, uint16_t ps,
		       const struct sockaddr *local, uint16_t port)
{
	(void)k, (void)ps, (void)local, (void)port;
	return F.listener_elsewhere;
}

static uint32_t f_random(struct cm_core *k)
{
	(void)k;
	F.rng ^= F.rng << 13;
	F.rng ^= F.rng >> 7;
	F.rng ^= F.rng << 17;
	return (uint32_t)(F.rng >> 16);
}

static void f_kick(struct cm_core *k)
{
	(void)k;
	F.kicks++;
}

static const struct cm_ops fake_ops = {
	.send_mad = f_send, .queue_event = f_event, .modify_qp = f_modify,
	.id_new = f_id_new, .has_listener = f_listener, .random = f_random,
	.timer_kick = f_kick,
};

static void sa4(struct sockaddr_storage *ss, const char *ip, uint16_t port)
{
	struct sockaddr_in *s = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	s->sin_family = AF_INET;
	s->sin_port = htons(port);
	inet_pton(AF_INET, ip, &s->sin_addr);
}

/* Free what the last test left: its IDs and held REQs. */
static void teardown(void)
{
	while (K.ids) {
		struct cm_id *c = K.ids;

		K.ids = c->next;
		free(c);
	}
	while (K.parked) {
		struct cm_parked *p = K.parked;

		K.parked = p->next;
		free(p);
	}
}

/* A fresh core with one device on US_IP (slot 3, MTU 4096, 16 reads). */
static void setup(void)
{
	teardown();
	memset(&F, 0, sizeof(F));
	F.rng = ur_test_seed | 1;
	memset(&K, 0, sizeof(K));
	K.ops = &fake_ops;
	K.timeout_ns = 5000 * MS;
	K.resend_ns = 1000 * MS;
	memset(&D, 0, sizeof(D));
	D.core = &K;
	D.slot = 3;
	D.ngid = 1;
	D.mtu = IBV_MTU_4096;
	D.max_rd_atom = 16;
	sa4(&D.addr[0], US_IP, 0);
	cm__gid_from_sa(&D.gid[0], (struct sockaddr *)&D.addr[0]);
	ASSERT_EQ(golden_load("rdma_cm_rping.pcap", g), 5);
}

static struct cm_id *new_id(enum cm_state st)
{
	struct cm_id *c = calloc(1, sizeof(*c));

	ASSERT(c);
	c->dev = &D;
	c->state = st;
	c->id.ps = RDMA_PS_TCP;
	c->id.qp_type = IBV_QPT_RC;
	c->next = K.ids;
	K.ids = c;
	return c;
}

static struct cm_id *listener(uint16_t port)
{
	struct cm_id *l = new_id(CMS_LISTEN);

	sa4(&l->id.route.addr.src_storage, US_IP, port);
	return l;
}

/* An RC ID routed from US_IP to PEER_IP:@port, with a QP. */
static struct cm_id *active(uint16_t port)
{
	struct cm_id *c = new_id(CMS_ROUTE_RESOLVED);

	sa4(&c->id.route.addr.src_storage, US_IP, 40000);
	sa4(&c->id.route.addr.dst_storage, PEER_IP, port);
	cm__gid_from_sa(&c->id.route.addr.addr.ibaddr.sgid,
			&c->id.route.addr.src_addr);
	cm__gid_from_sa(&c->id.route.addr.addr.ibaddr.dgid,
			&c->id.route.addr.dst_addr);
	sa4(&c->peer, PEER_IP, 0);
	c->id.qp = &QP;
	return c;
}

static void rx(const uint8_t *mad, uint64_t now)
{
	struct sockaddr_storage src;

	sa4(&src, PEER_IP, 4791);
	ASSERT_EQ(cm__rx(&D, mad, UR_MAD_LEN, (struct sockaddr *)&src, false,
			 now),
		  UR_GSI_CONSUMED);
}

/* rxe's golden REQ, from PEER_IP to our SVC_PORT. */
static void golden_req(uint8_t *req)
{
	ASSERT_EQ(golden_readdress_req(req, g[0].mad, PEER_IP, US_IP), 0);
}

/* ---- passive: rxe's REQ, our accept ----------------------------------------- */
static void t_passive_golden(void)
{
	uint8_t req[UR_MAD_LEN], exp[UR_MAD_LEN], m[UR_MAD_LEN];
	struct rdma_conn_param cp = { .responder_resources = 1,
				      .initiator_depth = 1,
				      .rnr_retry_count = 7 };
	const uint8_t *rep;
	struct cm_id *c;

	setup();
	listener(SVC_PORT);
	golden_req(req);
	rx(req, 0);
	ASSERT_EQ(F.nev, 1);
	ASSERT_EQ(F.ev[0].type, RDMA_CM_EVENT_CONNECT_REQUEST);
	ASSERT_EQ(F.ev[0].plen, 92 - CMA_HDR_LEN); /* the user's part */
	c = F.ev[0].c;
	ASSERT_EQ(c->state, CMS_REQ_RCVD);
	ASSERT_EQ(F.nmad, 0);
	c->id.qp = &QP;
	ASSERT_EQ(cm__accept(c, &cp, 10 * MS), 0);

	/* INIT -> INIT with the access the REQ grants, RTR, RTS. */
	ASSERT_EQ(F.nqp, 3);
	ASSERT_EQ(F.qp[0].a.qp_state, IBV_QPS_INIT);
	ASSERT_EQ(F.qp[0].a.qp_access_flags,
		  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC);
	ASSERT_EQ(F.qp[1].a.qp_state, IBV_QPS_RTR);
	ASSERT_EQ(F.qp[2].a.qp_state, IBV_QPS_RTS);

	/* Our REP = rxe's REP, except the per-connection fields. */
	ASSERT_EQ(F.nmad, 1);
	rep = F.mad[0];
	golden_expect_rep(exp, g[1].mad, rep);
	ASSERT_MEM_EQ(rep, exp, UR_MAD_LEN);
	ASSERT_EQ_U64(ur_cm_get(rep, CMF_LOCAL_QPN), QP.qp_num);
	ASSERT_EQ_U64(ur_cm_get(rep, CMF_LOCAL_COMM_ID) >> 16 & 0xff, D.slot);

	/* PSNs as Linux's CM: send from the REQ's, receive from the REP's. */
	ASSERT_EQ_U64(F.qp[2].a.sq_psn, ur_cm_get(req, CMF_STARTING_PSN));
	ASSERT_EQ_U64(F.qp[1].a.rq_psn, ur_cm_get(rep, CMF_STARTING_PSN));
	ASSERT_EQ_U64(F.qp[1].a.dest_qp_num, ur_cm_get(req, CMF_LOCAL_QPN));
	ASSERT_EQ_U64(F.qp[1].a.path_mtu, ur_cm_get(req, CMF_PATH_MTU));
	ASSERT_EQ(F.qp[1].a.max_dest_rd_atomic, 1);
	ASSERT_EQ(F.qp[1].a.min_rnr_timer, 0);
	ASSERT_EQ_U64(F.qp[2].a.timeout, ur_cm_get(req, CMF_P_ACK_TIMEOUT));
	ASSERT_EQ_U64(F.qp[2].a.retry_cnt, ur_cm_get(req, CMF_RETRY_COUNT));
	ASSERT_EQ_U64(F.qp[2].a.rnr_retry, ur_cm_get(req, CMF_RNR_RETRY));
	ASSERT_EQ(F.qp[2].a.max_rd_atomic, 1);

	/* The REQ again: the same REP, once. */
	rx(req, 20 * MS);
	ASSERT_EQ(F.nmad, 2);
	ASSERT_MEM_EQ(F.mad[1], rep, UR_MAD_LEN);
	/* Unanswered, the REP is resent on the timer. */
	ASSERT_EQ(cm__run_timers(&K, 500 * MS), 1010 * MS);
	ASSERT_EQ(F.nmad, 2);
	cm__run_timers(&K, 1010 * MS);
	ASSERT_EQ(F.nmad, 3);
	ASSERT_MEM_EQ(F.mad[2], rep, UR_MAD_LEN);

	/* rxe's RTU: ESTABLISHED, no more resends. */
	memcpy(m, g[2].mad, UR_MAD_LEN);
	ur_cm_set(m, CMF_REMOTE_COMM_ID, c->local_id);
	rx(m, 1100 * MS);
	ASSERT_EQ(c->state, CMS_ESTABLISHED);
	ASSERT_EQ(F.ev[F.nev - 1].type, RDMA_CM_EVENT_ESTABLISHED);
	ASSERT_EQ(cm__run_timers(&K, 9000 * MS), UINT64_MAX);
	ASSERT_EQ(F.nmad, 3);

	/* A DREQ for another QP is ignored (Linux's cm_dreq_handler). */
	memcpy(m, g[3].mad, UR_MAD_LEN);
	ur_cm_set(m, CMF_REMOTE_COMM_ID, c->local_id);
	ur_cm_set(m, CMF_REMOTE_QPN, QP.qp_num ^ 1);
	rx(m, 1200 * MS);
	ASSERT_EQ(F.nmad, 3);
	ASSERT_EQ(c->state, CMS_ESTABLISHED);
	/* rxe's DREQ: our DREP = rxe's, and DISCONNECTED. */
	ur_cm_set(m, CMF_REMOTE_QPN, QP.qp_num);
	rx(m, 1300 * MS);
	ASSERT_EQ(F.nmad, 4);
	memcpy(exp, g[4].mad, UR_MAD_LEN);
	ur_cm_set(exp, CMF_LOCAL_COMM_ID, c->local_id);
	ASSERT_MEM_EQ(F.mad[3], exp, UR_MAD_LEN);
	ASSERT_EQ(c->state, CMS_DISCONNECTED);
	ASSERT_EQ(F.ev[F.nev - 1].type, RDMA_CM_EVENT_DISCONNECTED);
	teardown();
}

/* ---- active: our REQ, rxe's REP ------------------------------------------- */
static void t_active_golden(void)
{
	struct rdma_conn_param cp = { .responder_resources = 1,
				      .initiator_depth = 1, .retry_count = 7,
				      .rnr_retry_count = 7 };
	uint8_t exp[UR_MAD_LEN], rep[UR_MAD_LEN], m[UR_MAD_LEN];
	const uint8_t *req;
	struct cm_id *c;

	setup();
	c = active(SVC_PORT);
	ASSERT_EQ(cm__connect(c, &cp, 0), 0);
	ASSERT_EQ(c->state, CMS_REQ_SENT);
	ASSERT_EQ(F.nmad, 1);
	ASSERT_GE(F.kicks, 1);
	req = F.mad[0];
	/* Our REQ = rxe's REQ, except the per-connection fields. */
	golden_expect_req(exp, g[0].mad, req);
	ASSERT_MEM_EQ(req, exp, UR_MAD_LEN);
	ASSERT_EQ_U64(ur_cm_get(req, CMF_LOCAL_QPN), QP.qp_num);

	/* rxe's REP: RTR and RTS as Linux's CM, then our RTU = rxe's. */
	memcpy(rep, g[1].mad, UR_MAD_LEN);
	ur_put64(rep + 8, ur_cm_mad_tid(req));
	ur_cm_set(rep, CMF_REMOTE_COMM_ID, c->local_id);
	rx(rep, 30 * MS);
	ASSERT_EQ(c->state, CMS_ESTABLISHED);
	ASSERT_EQ(F.ev[F.nev - 1].type, RDMA_CM_EVENT_ESTABLISHED);
	ASSERT_EQ(F.nqp, 3);
	ASSERT_EQ(F.qp[0].a.qp_state, IBV_QPS_INIT);
	ASSERT_EQ(F.qp[1].a.qp_state, IBV_QPS_RTR);
	ASSERT_EQ(F.qp[2].a.qp_state, IBV_QPS_RTS);
	ASSERT_EQ_U64(F.qp[2].a.sq_psn, ur_cm_get(rep, CMF_STARTING_PSN));
	ASSERT_EQ_U64(F.qp[1].a.rq_psn, ur_cm_get(req, CMF_STARTING_PSN));
	ASSERT_EQ_U64(F.qp[1].a.dest_qp_num, ur_cm_get(rep, CMF_LOCAL_QPN));
	ASSERT_EQ_U64(F.qp[1].a.max_dest_rd_atomic,
		      ur_cm_get(rep, CMF_INIT_DEPTH));
	ASSERT_EQ_U64(F.qp[2].a.max_rd_atomic, ur_cm_get(rep, CMF_RESP_RES));
	ASSERT_EQ(F.qp[2].a.timeout,
		  ur_cm_ack_timeout((uint8_t)ur_cm_get(rep, CMF_TARGET_ACK_DELAY),
				    CM_PACKET_LIFETIME));
	ASSERT_EQ(F.qp[2].a.retry_cnt, 7);
	ASSERT_EQ_U64(F.qp[2].a.rnr_retry, ur_cm_get(rep, CMF_RNR_RETRY));
	ASSERT_EQ(F.nmad, 2);
	memcpy(exp, g[2].mad, UR_MAD_LEN);
	ur_put64(exp + 8, ur_cm_mad_tid(req));
	ur_cm_set(exp, CMF_LOCAL_COMM_ID, c->local_id);
	ASSERT_MEM_EQ(F.mad[1], exp, UR_MAD_LEN);
	/* rxe's REP again (our RTU lost): the RTU again. */
	rx(rep, 40 * MS);
	ASSERT_EQ(F.nmad, 3);
	ASSERT_MEM_EQ(F.mad[2], exp, UR_MAD_LEN);

	/* Our DREQ = rxe's; rxe's DREP ends it. */
	ASSERT_EQ(cm__disconnect(c, 100 * MS), 0);
	ASSERT_EQ(F.qp[F.nqp - 1].a.qp_state, IBV_QPS_ERR);
	ASSERT_EQ(F.nmad, 4);
	memcpy(exp, g[3].mad, UR_MAD_LEN);
	ur_put64(exp + 8, ur_cm_mad_tid(req));
	ur_cm_set(exp, CMF_LOCAL_COMM_ID, c->local_id);
	ASSERT_MEM_EQ(F.mad[3], exp, UR_MAD_LEN);
	memcpy(m, g[4].mad, UR_MAD_LEN);
	ur_put64(m + 8, ur_cm_mad_tid(req));
	ur_cm_set(m, CMF_REMOTE_COMM_ID, c->local_id);
	rx(m, 110 * MS);
	ASSERT_EQ(c->state, CMS_DISCONNECTED);
	ASSERT_EQ(F.ev[F.nev - 1].type, RDMA_CM_EVENT_DISCONNECTED);
	ASSERT_EQ(F.ev[F.nev - 1].status, 0);
	ASSERT_EQ(cm__run_timers(&K, 60000 * MS), UINT64_MAX);
	teardown();
}

/* Nobody answers: resends every resend_ns, then REJ "timeout" and
 * UNREACHABLE at give-up; an MRA pushes the deadline out. */
static void t_timers(void)
{
	struct rdma_conn_param cp = { .retry_count = 7 };
	uint8_t m[UR_MAD_LEN];
	struct cm_id *c;
	uint64_t t;

	setup();
	c = active(SVC_PORT);
	ASSERT_EQ(cm__connect(c, &cp, 0), 0);
	for (t = 1000 * MS; t < 5000 * MS; t += 1000 * MS) {
		ASSERT_EQ(cm__run_timers(&K, t), t + 1000 * MS);
		ASSERT_EQ(F.nmad, (int)(t / (1000 * MS)) + 1);
		ASSERT_MEM_EQ(F.mad[F.nmad - 1], F.mad[0], UR_MAD_LEN);
	}
	ASSERT_EQ(F.nev, 0);
	ASSERT_EQ(cm__run_timers(&K, 5000 * MS), UINT64_MAX);
	ASSERT_EQ(F.nmad, 6);
	ASSERT_EQ(ur_cm_mad_attr(F.mad[5]), UR_CM_ATTR_REJ);
	ASSERT_EQ(ur_cm_get(F.mad[5], CMF_REJ_REASON), CM_REJ_TIMEOUT);
	ASSERT_EQ(F.nev, 1);
	ASSERT_EQ(F.ev[0].type, RDMA_CM_EVENT_UNREACHABLE);
	ASSERT_EQ(F.ev[0].status, -ETIMEDOUT);
	ASSERT_EQ(K.resent, 4);

	/* An MRA (service timeout 23: 4.096 us << 23 = 34 s) while the REQ
	 * waits: no resend and no give-up until then. */
	setup();
	c = active(SVC_PORT);
	ASSERT_EQ(cm__connect(c, &cp, 0), 0);
	ur_cm_mad_init(m, UR_CM_ATTR_MRA, ur_cm_mad_tid(F.mad[0]));
	ur_cm_set(m, CMF_LOCAL_COMM_ID, 0x11223344);
	ur_cm_set(m, CMF_REMOTE_COMM_ID, c->local_id);
	ur_cm_set(m, CMF_MSG_MRAED, CM_MSG_REQ);
	ur_cm_set(m, CMF_SERVICE_TIMEOUT, 23);
	rx(m, 100 * MS);
	ASSERT_EQ(cm__run_timers(&K, 6000 * MS),
		  100 * MS + (4096ull << 23) + 1000 * MS);
	ASSERT_EQ(F.nmad, 1);
	ASSERT_EQ(F.nev, 0);
	teardown();
}

/* A REQ for a port nobody listens on is held: REJ "invalid service ID"
 * after CM_LISTEN_WAIT_MS; one whose listener appears meanwhile gets it. */
static void t_held_req(void)
{
	uint8_t req[UR_MAD_LEN];

	setup();
	golden_req(req);
	rx(req, 0);
	ASSERT_EQ(F.nmad, 0);
	ASSERT_EQ(K.nparked, 1);
	ASSERT_EQ(cm__run_timers(&K, 50 * MS), 50 * MS + CM_PARK_POLL_NS);
	ASSERT_EQ(F.nmad, 0);
	rx(req, 60 * MS); /* a retransmission joins the held one */
	ASSERT_EQ(K.nparked, 1);
	cm__run_timers(&K, CM_LISTEN_WAIT_MS * MS);
	ASSERT_EQ(F.nmad, 1);
	ASSERT_EQ(ur_cm_mad_attr(F.mad[0]), UR_CM_ATTR_REJ);
	ASSERT_EQ(ur_cm_get(F.mad[0], CMF_REJ_REASON), CM_REJ_INVALID_SERVICE_ID);
	ASSERT_EQ(ur_cm_get(F.mad[0], CMF_MSG_REJECTED), CM_MSG_REQ);
	ASSERT_EQ_U64(ur_cm_get(F.mad[0], CMF_REMOTE_COMM_ID),
		      ur_cm_get(req, CMF_LOCAL_COMM_ID));
	ASSERT_EQ(K.nparked, 0);

	setup();
	golden_req(req);
	rx(req, 0);
	listener(SVC_PORT);
	cm__run_timers(&K, 10 * MS);
	ASSERT_EQ(F.nmad, 0);
	ASSERT_EQ(F.nev, 1);
	ASSERT_EQ(F.ev[0].type, RDMA_CM_EVENT_CONNECT_REQUEST);
	ASSERT_EQ(K.nparked, 0);

	/* Another process on the address listens: not ours to answer. */
	setup();
	F.listener_elsewhere = true;
	golden_req(req);
	{
		struct sockaddr_storage src;

		sa4(&src, PEER_IP, 4791);
		ASSERT_EQ(cm__rx(&D, req, UR_MAD_LEN, (struct sockaddr *)&src,
				 false, 0),
			  UR_GSI_BROADCAST);
	}
	ASSERT_EQ(F.nmad, 0);
	teardown();
}

/* A flood of REQs (issue 34): a listener with backlog 8 whose user
 * answers none holds 8 and drops the rest, counted, with no ID, event or
 * MAD each; a retransmission of a held one is still answered (MRA); once
 * the user rejects one, the next REQ is taken. The same flood against
 * backlog 0 stops at CM_DEFAULT_BACKLOG. */
static void t_req_flood(void)
{
	uint8_t req[UR_MAD_LEN];
	struct cm_id *l, *c;
	int ids = 0;

	setup();
	l = listener(SVC_PORT);
	l->backlog = 8;
	golden_req(req);
	for (uint32_t i = 0; i < 5000; i++) {
		ur_cm_set(req, CMF_LOCAL_COMM_ID, 0x1000 + i);
		rx(req, i * 1000);
	}
	ASSERT_EQ(F.nev, 8);
	ASSERT_EQ(F.nmad, 0);
	ASSERT_EQ(K.rx_req_dropped, 5000 - 8);
	for (c = K.ids; c; c = c->next)
		ids += c->listen == l;
	ASSERT_EQ(ids, 8);
	/* The first REQ again: its ID answers with an MRA, nothing new. */
	ur_cm_set(req, CMF_LOCAL_COMM_ID, 0x1000);
	rx(req, 10 * MS);
	ASSERT_EQ(F.nmad, 1);
	ASSERT_EQ(ur_cm_mad_attr(F.mad[0]), UR_CM_ATTR_MRA);
	ASSERT_EQ(K.rx_req_dropped, 5000 - 8);
	/* The user answers one (here: as a reject would leave it). */
	F.ev[0].c->state = CMS_DISCONNECTED;
	ur_cm_set(req, CMF_LOCAL_COMM_ID, 0x9000);
	rx(req, 11 * MS);
	ASSERT_EQ(F.nev, 9);
	ur_cm_set(req, CMF_LOCAL_COMM_ID, 0x9001);
	rx(req, 12 * MS);
	ASSERT_EQ(F.nev, 9);
	ASSERT_EQ(K.rx_req_dropped, 5000 - 8 + 1);

	/* Backlog 0: the default bound (events beyond the fake's record are
	 * counted through the IDs instead). */
	setup();
	l = listener(SVC_PORT);
	golden_req(req);
	F.nev = 0;
	for (uint32_t i = 0; i < CM_DEFAULT_BACKLOG + 300; i++) {
		ur_cm_set(req, CMF_LOCAL_COMM_ID, 0x100000 + i);
		if (F.nev == MAX_REC - 1)
			F.nev = 0; /* the fake keeps the last few only */
		rx(req, i * 1000);
	}
	ids = 0;
	for (c = K.ids; c; c = c->next)
		ids += c->listen == l;
	ASSERT_EQ(ids, CM_DEFAULT_BACKLOG);
	ASSERT_EQ(K.rx_req_dropped, 300);
	teardown();
}

/* Both ends disconnect at once: each answers the other's DREQ with a
 * DREP, and the user sees one DISCONNECTED. */
static void t_crossing_dreq(void)
{
	struct rdma_conn_param cp = { .retry_count = 7, .rnr_retry_count = 7 };
	uint8_t rep[UR_MAD_LEN], m[UR_MAD_LEN];
	struct cm_id *c;
	int nev;

	setup();
	c = active(SVC_PORT);
	ASSERT_EQ(cm__connect(c, &cp, 0), 0);
	memcpy(rep, g[1].mad, UR_MAD_LEN);
	ur_put64(rep + 8, ur_cm_mad_tid(F.mad[0]));
	ur_cm_set(rep, CMF_REMOTE_COMM_ID, c->local_id);
	rx(rep, MS);
	ASSERT_EQ(c->state, CMS_ESTABLISHED);
	ASSERT_EQ(cm__disconnect(c, 2 * MS), 0);
	ASSERT_EQ(c->state, CMS_DREQ_SENT);
	nev = F.nev;
	memcpy(m, g[3].mad, UR_MAD_LEN); /* rxe's DREQ, as if from the peer */
	ur_cm_mad_init(m, UR_CM_ATTR_DREQ, 0x77);
	ur_cm_set(m, CMF_LOCAL_COMM_ID, ur_cm_get(rep, CMF_LOCAL_COMM_ID));
	ur_cm_set(m, CMF_REMOTE_COMM_ID, c->local_id);
	ur_cm_set(m, CMF_REMOTE_QPN, QP.qp_num);
	rx(m, 3 * MS);
	ASSERT_EQ(ur_cm_mad_attr(F.mad[F.nmad - 1]), UR_CM_ATTR_DREP);
	ASSERT_EQ_U64(ur_cm_mad_tid(F.mad[F.nmad - 1]), 0x77);
	ASSERT_EQ(c->state, CMS_DISCONNECTED);
	ASSERT_EQ(F.nev, nev + 1);
	ASSERT_EQ(F.ev[nev].type, RDMA_CM_EVENT_DISCONNECTED);
	/* The peer's DREP for ours changes nothing more; no resends. */
	memcpy(m, g[4].mad, UR_MAD_LEN);
	ur_put64(m + 8, ur_cm_mad_tid(F.mad[0]));
	ur_cm_set(m, CMF_REMOTE_COMM_ID, c->local_id);
	rx(m, 4 * MS);
	ASSERT_EQ(F.nev, nev + 1);
	ASSERT_EQ(cm__run_timers(&K, 10000 * MS), UINT64_MAX);
	teardown();
}

static const struct ur_test_case tests[] = {
	{ "passive_golden", t_passive_golden },
	{ "active_golden", t_active_golden },
	{ "timers", t_timers },
	{ "held_req", t_held_req },
	{ "crossing_dreq", t_crossing_dreq },
	{ "req_flood", t_req_flood },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

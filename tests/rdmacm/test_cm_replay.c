// SPDX-License-Identifier: MIT
/*
 * A fake Linux rxe peer replays the golden rdma_cm exchange
 * (shared/wire/rxe/rdma_cm_rping.pcap) against our librdmacm, over UDP on
 * loopback: rxe's REQ/RTU/DREQ (addresses patched) must get our REP/DREP,
 * and our REQ/RTU/DREQ must equal rxe's byte for byte once the fields that
 * differ per connection (comm IDs, QPN, PSN, GUID, GIDs, ports, MTU, flow
 * label, TID) are copied over. Also: a retransmitted REQ gets the same REP,
 * a REQ for a port nobody listens on gets REJ "invalid service ID" (after
 * waiting a moment for a listener that may be about to appear), malformed
 * MADs get no answer, and MADs that name our comm ID but not our peer's
 * leave an established connection alone.
 *
 * Environment (set by CMake): UROCE_IP=127.0.0.2 (our side), UROCE_PORT
 * (a test port; the fake peer is 127.0.0.3 on the same port).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cm_priv.h"
#include "golden.h"
#include "ur_test.h"

#define US "127.0.0.2"
#define PEER "127.0.0.3"
#define SVC_PORT 7174

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint16_t udp_port(void)
{
	const char *p = getenv("UROCE_PORT");

	return p ? (uint16_t)atoi(p) : 4791;
}

/* ---- the fake rxe peer: raw UD SENDs to/from QP1 ------------------------ */
static int fake_fd = -1;
static uint32_t fake_psn = 100;

static void fake_open(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(udp_port()) };
	int pmtu = IP_PMTUDISC_DO;

	if (fake_fd >= 0)
		return;
	inet_pton(AF_INET, PEER, &a.sin_addr);
	fake_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ASSERT_GE(fake_fd, 0);
	setsockopt(fake_fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	ASSERT_EQ(bind(fake_fd, (struct sockaddr *)&a, sizeof(a)), 0);
}

static void fake_send(const uint8_t *mad)
{
	uint8_t buf[512];
	struct ur_pkt pkt = {
		.h = { .opcode = UR_OP_UD_SEND_ONLY, .pkey = 0xffff,
		       .dqpn = 1, .ackreq = true, .psn = fake_psn++ },
		.deth = { .qkey = UR_GSI_QKEY, .sqpn = 1 },
	};
	struct ur_ipudp path = { .sport = udp_port(), .dport = udp_port(),
				 .ttl = 64, .ip_frag = 0x4000 };
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons(udp_port()) };
	int n = ur_pkt_encode(buf, sizeof(buf), &pkt, mad, UR_MAD_LEN);

	ASSERT_GT(n, 0);
	inet_pton(AF_INET, PEER, path.src);
	inet_pton(AF_INET, US, path.dst);
	inet_pton(AF_INET, US, &to.sin_addr);
	ur_icrc_store(buf + n - 4, ur_icrc(&path, buf, (size_t)n - 4));
	ASSERT_EQ(sendto(fake_fd, buf, (size_t)n, 0, (struct sockaddr *)&to,
			 sizeof(to)), n);
}

/* Next MAD for us within @ms, checked as a valid UD SEND to QP1 with the
 * GSI Q_Key, UDP source port 55410 (0xC000 | hash(QPN 1), as rxe) and a correct ICRC. */
static bool fake_recv_any(uint8_t *mad, int ms)
{
	uint8_t buf[2048];
	struct pollfd p = { .fd = fake_fd, .events = POLLIN };
	struct sockaddr_in from;
	socklen_t flen = sizeof(from);
	struct ur_pkt pkt;
	struct ur_ipudp path = { .dport = udp_port(), .ttl = 64,
				 .ip_frag = 0x4000 };
	ssize_t n;

	if (poll(&p, 1, ms) != 1)
		return false;
	n = recvfrom(fake_fd, buf, sizeof(buf), 0, (struct sockaddr *)&from,
		     &flen);
	ASSERT_GT(n, 0);
	ASSERT_EQ(ur_pkt_decode(buf, (size_t)n, &pkt), UR_DEC_OK);
	ASSERT_EQ(pkt.h.opcode, UR_OP_UD_SEND_ONLY);
	ASSERT_EQ(pkt.h.dqpn, 1);
	ASSERT(pkt.h.ackreq);
	ASSERT_EQ_U64(pkt.deth.qkey, UR_GSI_QKEY);
	ASSERT_EQ(pkt.deth.sqpn, 1);
	ASSERT_EQ(pkt.payload_len, UR_MAD_LEN);
	ASSERT_EQ(ntohs(from.sin_port), 55410); /* rxe's QP1 port in the capture */
	path.sport = ntohs(from.sin_port);
	inet_pton(AF_INET, US, path.src);
	inet_pton(AF_INET, PEER, path.dst);
	ASSERT_EQ_U64(ur_icrc(&path, buf, (size_t)n - 4),
		      ur_icrc_load(buf + n - 4));
	memcpy(mad, pkt.payload, UR_MAD_LEN);
	return true;
}

/* The same, passing over uroce's hellos (vendor class 0x0A, method Send:
 * docs/wire.md "Selective repeat negotiation", "Congestion control
 * negotiation"), which
 * Linux's MAD layer drops without an answer when no agent registered the
 * class, as on an rxe host. Everything else must be the capture's. */
static unsigned int sr_hellos;

static bool fake_recv(uint8_t *mad, int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000;

	for (;;) {
		uint64_t t = now_ns();

		if (!fake_recv_any(mad, t < end ? (int)((end - t) / 1000000) : 0))
			return false;
		if (!golden_is_uroce_hello(mad))
			return true;
		sr_hellos++;
	}
}


static void set_tid(uint8_t *mad, uint64_t tid)
{
	ur_put64(mad + 8, tid);
}

static struct golden_mad g[GOLDEN_MAX];

static void load_golden(void)
{
	ASSERT_EQ(golden_load("rdma_cm_rping.pcap", g), 5);
}

/* ---- passive: our listener, rxe's REQ ------------------------------------ */
struct server {
	pthread_t t;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	enum rdma_cm_event_type seen[8];
	int nseen;
	int status;
	struct ibv_qp_attr qa; /* the QP once established */
};

static void *server_main(void *arg)
{
	struct server *s = arg;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id = NULL;

	while (s->nseen < 8 && !rdma_get_cm_event(s->ch, &ev)) {
		enum rdma_cm_event_type t = ev->event;

		s->seen[s->nseen++] = t;
		if (t == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct ibv_qp_init_attr qa = {
				.cap = { .max_send_wr = 4, .max_recv_wr = 4,
					 .max_send_sge = 1, .max_recv_sge = 1 },
				.qp_type = IBV_QPT_RC,
			};
			struct rdma_conn_param cp = {
				.responder_resources = 1, .initiator_depth = 1,
				.rnr_retry_count = 7,
			};

			id = ev->id;
			rdma_ack_cm_event(ev);
			if (rdma_create_qp(id, NULL, &qa) || rdma_accept(id, &cp))
				s->status = errno;
			continue;
		}
		rdma_ack_cm_event(ev);
		if (t == RDMA_CM_EVENT_ESTABLISHED && id) {
			struct ibv_qp_init_attr ia;

			ibv_query_qp(id->qp, &s->qa, 0x1fffff, &ia);
		}
		if (t == RDMA_CM_EVENT_DISCONNECTED)
			break;
	}
	if (id) {
		rdma_destroy_qp(id);
		rdma_destroy_id(id);
	}
	return NULL;
}

/* rxe's golden REQ, readdressed from the fake peer to us. */
static void golden_req(uint8_t *req)
{
	ASSERT_EQ(golden_readdress_req(req, g[0].mad, PEER, US), 0);
}

/*
 * The passive side's QP as Linux's CM sets it up (ib_cm_init_qp_attr and
 * librdmacm's rdma_accept; docs/rdmacm.md has the table): it sends from
 * the REQ's Starting PSN and receives from its REP's; timeout, retry and
 * RNR retry counts, traffic class and flow label are the REQ's; the
 * depths are rdma_accept()'s (1, 1).
 */
static void check_passive_qp(const struct ibv_qp_attr *a, const uint8_t *req,
			     const uint8_t *rep)
{
	ASSERT_EQ(a->qp_state, IBV_QPS_RTS);
	ASSERT_EQ_U64(a->sq_psn, ur_cm_get(req, CMF_STARTING_PSN));
	ASSERT_EQ_U64(a->rq_psn, ur_cm_get(rep, CMF_STARTING_PSN));
	ASSERT_NE(a->sq_psn, a->rq_psn);
	ASSERT_EQ_U64(a->dest_qp_num, ur_cm_get(req, CMF_LOCAL_QPN));
	ASSERT_EQ_U64(a->path_mtu, ur_cm_get(req, CMF_PATH_MTU)); /* 1024 */
	ASSERT_EQ_U64(a->timeout, ur_cm_get(req, CMF_P_ACK_TIMEOUT));
	ASSERT_EQ_U64(a->retry_cnt, ur_cm_get(req, CMF_RETRY_COUNT));
	ASSERT_EQ_U64(a->rnr_retry, ur_cm_get(req, CMF_RNR_RETRY));
	ASSERT_EQ(a->min_rnr_timer, 0);
	ASSERT_EQ(a->max_rd_atomic, 1);
	ASSERT_EQ(a->max_dest_rd_atomic, 1);
	ASSERT_EQ(a->qp_access_flags, IBV_ACCESS_REMOTE_WRITE |
					      IBV_ACCESS_REMOTE_READ |
					      IBV_ACCESS_REMOTE_ATOMIC);
	ASSERT_EQ_U64(a->ah_attr.grh.traffic_class, ur_cm_get(req, CMF_P_TCLASS));
	ASSERT_EQ_U64(a->ah_attr.grh.flow_label, ur_cm_get(req, CMF_P_FLOW_LABEL));
}

/*
 * The active side's: it sends from the REP's Starting PSN and receives
 * from its REQ's; RNR retry and depths are the REP's; the ACK timeout
 * comes from the REP's target ACK delay and our packet lifetime
 * (cm_rep_handler); the retry count is rdma_connect()'s.
 */
static void check_active_qp(const struct ibv_qp_attr *a, const uint8_t *req,
			    const uint8_t *rep, uint8_t retry)
{
	ASSERT_EQ(a->qp_state, IBV_QPS_RTS);
	ASSERT_EQ_U64(a->sq_psn, ur_cm_get(rep, CMF_STARTING_PSN));
	ASSERT_EQ_U64(a->rq_psn, ur_cm_get(req, CMF_STARTING_PSN));
	ASSERT_EQ_U64(a->dest_qp_num, ur_cm_get(rep, CMF_LOCAL_QPN));
	ASSERT_EQ_U64(a->path_mtu, ur_cm_get(req, CMF_PATH_MTU));
	ASSERT_EQ(a->timeout,
		  ur_cm_ack_timeout((uint8_t)ur_cm_get(rep, CMF_TARGET_ACK_DELAY),
				  CM_PACKET_LIFETIME));
	ASSERT_EQ(a->timeout, 19); /* as rxe's QP gets it from rxe's REP */
	ASSERT_EQ(a->retry_cnt, retry);
	ASSERT_EQ_U64(a->rnr_retry, ur_cm_get(rep, CMF_RNR_RETRY));
	ASSERT_EQ(a->min_rnr_timer, 0);
	ASSERT_EQ_U64(a->max_rd_atomic, ur_cm_get(rep, CMF_RESP_RES));
	ASSERT_EQ_U64(a->max_dest_rd_atomic, ur_cm_get(rep, CMF_INIT_DEPTH));
	ASSERT_EQ(a->qp_access_flags,
		  IBV_ACCESS_REMOTE_WRITE |
			  (ur_cm_get(rep, CMF_INIT_DEPTH)
				   ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC
				   : 0));
}

static void t_passive(void)
{
	struct server s = { 0 };
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(SVC_PORT) };
	uint8_t req[UR_MAD_LEN], rep[UR_MAD_LEN], rep2[UR_MAD_LEN];
	uint8_t m[UR_MAD_LEN], exp[UR_MAD_LEN];
	uint32_t ours;

	load_golden();
	fake_open();
	inet_pton(AF_INET, US, &a.sin_addr);
	s.ch = rdma_create_event_channel();
	ASSERT(s.ch);
	ASSERT_EQ(rdma_create_id(s.ch, &s.listen, NULL, RDMA_PS_TCP), 0);
	ASSERT_EQ(rdma_bind_addr(s.listen, (struct sockaddr *)&a), 0);
	ASSERT_EQ(rdma_listen(s.listen, 4), 0);
	ASSERT_EQ(pthread_create(&s.t, NULL, server_main, &s), 0);

	/* Malformed MADs: not the CM class, unknown attribute. No answer. */
	memcpy(m, g[0].mad, UR_MAD_LEN);
	m[1] = 0x04;
	fake_send(m);
	memcpy(m, g[0].mad, UR_MAD_LEN);
	ur_put16(m + 16, 0x0030);
	fake_send(m);
	ASSERT(!fake_recv(m, 300));

	/* rxe's REQ, from the fake address to ours. */
	golden_req(req);
	fake_send(req);
	ASSERT(fake_recv(rep, 3000));
	ASSERT_EQ(ur_cm_mad_attr(rep), UR_CM_ATTR_REP);
	/* Our REP = rxe's REP, except the per-connection fields. */
	golden_expect_rep(exp, g[1].mad, rep);
	ASSERT_MEM_EQ(rep, exp, UR_MAD_LEN);
	ours = (uint32_t)ur_cm_get(rep, CMF_LOCAL_COMM_ID);
	ASSERT_NE(ours, 0);
	ASSERT_NE(ur_cm_get(rep, CMF_LOCAL_QPN), 0);

	/* A retransmitted REQ gets the same REP. */
	fake_send(req);
	ASSERT(fake_recv(rep2, 3000));
	ASSERT_MEM_EQ(rep2, rep, UR_MAD_LEN);

	/* rxe's RTU, then rxe's DREQ: our DREP = rxe's DREP. */
	memcpy(m, g[2].mad, UR_MAD_LEN);
	ur_cm_set(m, CMF_REMOTE_COMM_ID, ours);
	fake_send(m);
	memcpy(m, g[3].mad, UR_MAD_LEN);
	ur_cm_set(m, CMF_REMOTE_COMM_ID, ours);
	ur_cm_set(m, CMF_REMOTE_QPN, ur_cm_get(rep, CMF_LOCAL_QPN));
	fake_send(m);
	ASSERT(fake_recv(m, 3000));
	memcpy(exp, g[4].mad, UR_MAD_LEN);
	ur_cm_set(exp, CMF_LOCAL_COMM_ID, ours);
	ASSERT_MEM_EQ(m, exp, UR_MAD_LEN);

	pthread_join(s.t, NULL);
	ASSERT_EQ(s.status, 0);
	check_passive_qp(&s.qa, req, rep);
	ASSERT_EQ(s.nseen, 3);
	ASSERT_EQ(s.seen[0], RDMA_CM_EVENT_CONNECT_REQUEST);
	ASSERT_EQ(s.seen[1], RDMA_CM_EVENT_ESTABLISHED);
	ASSERT_EQ(s.seen[2], RDMA_CM_EVENT_DISCONNECTED);

	/* A REQ for a port nobody listens on: REJ, invalid service ID. */
	ur_cm_set(req, CMF_SERVICE_ID, 0x0000000001060000ull | 7999);
	ur_cm_set(req, CMF_LOCAL_COMM_ID, 0x12345678);
	fake_send(req);
	ASSERT(fake_recv(m, 3000));
	ASSERT_EQ(ur_cm_mad_attr(m), UR_CM_ATTR_REJ);
	ASSERT_EQ_U64(ur_cm_get(m, CMF_REMOTE_COMM_ID), 0x12345678);
	ASSERT_EQ(ur_cm_get(m, CMF_MSG_REJECTED), CM_MSG_REQ);
	ASSERT_EQ(ur_cm_get(m, CMF_REJ_REASON), CM_REJ_INVALID_SERVICE_ID);
	ASSERT_EQ_U64(ur_cm_mad_tid(m), ur_cm_mad_tid(req));

	rdma_destroy_id(s.listen);
	rdma_destroy_event_channel(s.ch);
}

/* ---- active: our REQ to the fake rxe ------------------------------------ */
struct client {
	pthread_t t;
	struct rdma_cm_id *id;
	int connect_ret, connect_errno;
	enum rdma_cm_event_type last;
	int last_status;
};

/* rdma_connect, as a program would (the test plays rxe's side). */
static void client_connect(struct client *c)
{
	struct rdma_conn_param cp = {
		.responder_resources = 1, .initiator_depth = 1,
		.retry_count = 7, .rnr_retry_count = 7,
	};

	c->connect_ret = rdma_connect(c->id, &cp);
	c->connect_errno = errno;
}

static void *connect_main(void *arg)
{
	client_connect(arg);
	return NULL;
}

/* Connect, then disconnect and keep the last event. */
static void *client_main(void *arg)
{
	struct client *c = arg;
	struct rdma_cm_event *ev;

	client_connect(c);
	if (c->connect_ret)
		return NULL;
	rdma_disconnect(c->id);
	if (!rdma_get_cm_event(c->id->channel, &ev)) {
		c->last = ev->event;
		c->last_status = ev->status;
		rdma_ack_cm_event(ev);
	}
	return NULL;
}

/* An RC ID with a QP, routed to the fake rxe peer; @fn runs on a thread. */
static void client_start(struct client *c, void *(*fn)(void *))
{
	struct sockaddr_in dst = { .sin_family = AF_INET,
				   .sin_port = htons(SVC_PORT) };
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	load_golden();
	fake_open();
	inet_pton(AF_INET, PEER, &dst.sin_addr);
	ASSERT_EQ(rdma_create_id(NULL, &c->id, NULL, RDMA_PS_TCP), 0);
	ASSERT_EQ(rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&dst, 2000), 0);
	ASSERT_EQ(rdma_resolve_route(c->id, 2000), 0);
	ASSERT_EQ(rdma_create_qp(c->id, NULL, &qa), 0);
	ASSERT_EQ(pthread_create(&c->t, NULL, fn, c), 0);
}

static void t_active(void)
{
	struct client c = { 0 };
	uint8_t req[UR_MAD_LEN], m[UR_MAD_LEN], exp[UR_MAD_LEN], rep[UR_MAD_LEN];
	size_t len;
	uint32_t ours;

	client_start(&c, client_main);

	ASSERT(fake_recv(req, 3000));
	ASSERT_EQ(ur_cm_mad_attr(req), UR_CM_ATTR_REQ);
	/* Our REQ = rxe's REQ, except the per-connection fields. */
	golden_expect_req(exp, g[0].mad, req);
	ASSERT_MEM_EQ(req, exp, UR_MAD_LEN);
	{
		struct cma_hdr h;
		uint8_t ip[4];

		ASSERT_EQ(ur_cma_hdr_get(ur_cm_blob(req, CMB_PDATA, &len), &h), 0);
		ASSERT_EQ(h.ip_version, 4);
		inet_pton(AF_INET, US, ip);
		ASSERT_MEM_EQ(h.src, ip, 4);
		inet_pton(AF_INET, PEER, ip);
		ASSERT_MEM_EQ(h.dst, ip, 4);
		ASSERT_EQ(ur_cm_get(req, CMF_P_FLOW_LABEL),
			  ((uint32_t)h.port * 31 + SVC_PORT) & 0xfffff);
	}
	ours = (uint32_t)ur_cm_get(req, CMF_LOCAL_COMM_ID);

	/* rxe's REP; our RTU = rxe's RTU. */
	memcpy(rep, g[1].mad, UR_MAD_LEN);
	set_tid(rep, ur_cm_mad_tid(req));
	ur_cm_set(rep, CMF_REMOTE_COMM_ID, ours);
	fake_send(rep);
	ASSERT(fake_recv(m, 3000));
	memcpy(exp, g[2].mad, UR_MAD_LEN);
	set_tid(exp, ur_cm_mad_tid(req));
	ur_cm_set(exp, CMF_LOCAL_COMM_ID, ours);
	ASSERT_MEM_EQ(m, exp, UR_MAD_LEN);

	/* Our DREQ = rxe's DREQ; rxe's DREP ends it. */
	ASSERT(fake_recv(m, 3000));
	memcpy(exp, g[3].mad, UR_MAD_LEN);
	set_tid(exp, ur_cm_mad_tid(req));
	ur_cm_set(exp, CMF_LOCAL_COMM_ID, ours);
	ASSERT_MEM_EQ(m, exp, UR_MAD_LEN);
	memcpy(m, g[4].mad, UR_MAD_LEN);
	set_tid(m, ur_cm_mad_tid(req));
	ur_cm_set(m, CMF_REMOTE_COMM_ID, ours);
	fake_send(m);

	pthread_join(c.t, NULL);
	ASSERT_EQ(c.connect_ret, 0);
	ASSERT_EQ(c.last, RDMA_CM_EVENT_DISCONNECTED);
	ASSERT_EQ(c.last_status, 0);
	rdma_destroy_qp(c.id);
	rdma_destroy_id(c.id);
}

/* Nobody answers: rdma_connect gives UNREACHABLE within the CM timeout. */
static void t_unreachable(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct sockaddr_in dst = { .sin_family = AF_INET,
				   .sin_port = htons(SVC_PORT) };
	struct rdma_conn_param cp = { .retry_count = 7, .qp_num = 0x123 };
	uint64_t t0;
	uint8_t m[UR_MAD_LEN];
	int nreq = 0;

	fake_open();
	inet_pton(AF_INET, PEER, &dst.sin_addr);
	ASSERT(ch);
	ASSERT_EQ(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	ASSERT_EQ(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
	ASSERT_EQ(rdma_get_cm_event(ch, &ev), 0);
	ASSERT_EQ(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_ack_cm_event(ev);
	ASSERT_EQ(rdma_resolve_route(id, 2000), 0);
	ASSERT_EQ(rdma_get_cm_event(ch, &ev), 0);
	ASSERT_EQ(ev->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
	rdma_ack_cm_event(ev);
	t0 = now_ns();
	ASSERT_EQ(rdma_connect(id, &cp), 0);
	/* The fake peer swallows the REQ and its retransmissions. */
	while (fake_recv(m, 200) || now_ns() - t0 < 1500000000ull)
		if (ur_cm_mad_attr(m) == UR_CM_ATTR_REQ)
			nreq++;
	ASSERT_GE(nreq, 2); /* UROCE_CM_RESEND_MS=500 */
	ASSERT_EQ(rdma_get_cm_event(ch, &ev), 0);
	ASSERT_EQ(ev->event, RDMA_CM_EVENT_UNREACHABLE);
	ASSERT_EQ(ev->status, -ETIMEDOUT);
	ASSERT_LE((now_ns() - t0) / 1000000, 3500); /* UROCE_CM_TIMEOUT_MS */
	rdma_ack_cm_event(ev);
	/* The REQ's peer is told: REJ "timeout". */
	while (fake_recv(m, 300))
		if (ur_cm_mad_attr(m) == UR_CM_ATTR_REJ)
			break;
	ASSERT_EQ(ur_cm_mad_attr(m), UR_CM_ATTR_REJ);
	ASSERT_EQ(ur_cm_get(m, CMF_REJ_REASON), CM_REJ_TIMEOUT);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* The golden REQ as rxe would send it from the fake peer to our @port. */
static void peer_req(uint8_t *req, uint16_t port, uint32_t comm_id)
{
	golden_req(req);
	ur_cm_set(req, CMF_SERVICE_ID, 0x0000000001060000ull | port);
	ur_cm_set(req, CMF_LOCAL_COMM_ID, comm_id);
	set_tid(req, 0x4200000000ull | comm_id);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	ASSERT_EQ(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

/*
 * MADs that name our comm ID but are not from our peer leave an
 * established connection alone (12.6.7, 12.9.6). The first is what broke
 * perftest -R on a shared address: a late copy of our own REQ reached a
 * process whose listener was gone, and its REJ "invalid service ID" (a REJ
 * of the REQ, no local comm ID) flushed our live QP.
 */
static void t_stale(void)
{
	struct client c = { 0 };
	uint8_t req[UR_MAD_LEN], rep[UR_MAD_LEN], m[UR_MAD_LEN];
	struct rdma_cm_event *ev;
	uint32_t ours, peer;
	uint64_t tid;

	client_start(&c, connect_main);
	ASSERT(fake_recv(req, 3000));
	ASSERT_EQ(ur_cm_mad_attr(req), UR_CM_ATTR_REQ);
	ours = (uint32_t)ur_cm_get(req, CMF_LOCAL_COMM_ID);
	tid = ur_cm_mad_tid(req);
	memcpy(rep, g[1].mad, UR_MAD_LEN);
	set_tid(rep, tid);
	ur_cm_set(rep, CMF_REMOTE_COMM_ID, ours);
	peer = (uint32_t)ur_cm_get(rep, CMF_LOCAL_COMM_ID);
	fake_send(rep);
	ASSERT(fake_recv(m, 3000));
	ASSERT_EQ(ur_cm_mad_attr(m), UR_CM_ATTR_RTU);
	pthread_join(c.t, NULL);
	ASSERT_EQ(c.connect_ret, 0);
	ASSERT_EQ(qp_state(c.id->qp), IBV_QPS_RTS);
	{
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		ASSERT_EQ(ibv_query_qp(c.id->qp, &a, 0x1fffff, &ia), 0);
		check_active_qp(&a, req, rep, 7);
	}

	/* REJ "invalid service ID" of our REQ, from a process without the
	 * listener (no local comm ID): the REQ was answered long ago. */
	memset(m, 0, sizeof(m));
	ur_cm_mad_init(m, UR_CM_ATTR_REJ, tid);
	ur_cm_set(m, CMF_REMOTE_COMM_ID, ours);
	ur_cm_set(m, CMF_MSG_REJECTED, CM_MSG_REQ);
	ur_cm_set(m, CMF_REJ_REASON, CM_REJ_INVALID_SERVICE_ID);
	fake_send(m);
	ASSERT(!fake_recv(m, 100));
	ASSERT_EQ(qp_state(c.id->qp), IBV_QPS_RTS);
	/* A REJ, a duplicate REP and a DREP from a comm ID that is not our
	 * peer's. */
	ur_cm_set(m, CMF_LOCAL_COMM_ID, peer ^ 0x5a);
	ur_cm_set(m, CMF_MSG_REJECTED, CM_MSG_OTHER);
	ur_cm_set(m, CMF_REJ_REASON, CM_REJ_CONSUMER_DEFINED);
	fake_send(m);
	memcpy(m, rep, UR_MAD_LEN);
	ur_cm_set(m, CMF_LOCAL_COMM_ID, peer ^ 0x5a);
	fake_send(m);
	memcpy(m, g[4].mad, UR_MAD_LEN);
	set_tid(m, tid);
	ur_cm_set(m, CMF_LOCAL_COMM_ID, peer ^ 0x5a);
	ur_cm_set(m, CMF_REMOTE_COMM_ID, ours);
	fake_send(m);
	/* A DREQ from a stranger gets a DREP (12.9.7), as a DREQ for an
	 * unknown connection does, and leaves ours up. */
	memcpy(m, g[3].mad, UR_MAD_LEN);
	set_tid(m, tid);
	ur_cm_set(m, CMF_LOCAL_COMM_ID, peer ^ 0x5a);
	ur_cm_set(m, CMF_REMOTE_COMM_ID, ours);
	fake_send(m);
	ASSERT(fake_recv(m, 3000));
	ASSERT_EQ(ur_cm_mad_attr(m), UR_CM_ATTR_DREP); /* no RTU: dup REP ignored */
	ASSERT_EQ_U64(ur_cm_get(m, CMF_REMOTE_COMM_ID), peer ^ 0x5a);
	ASSERT(!fake_recv(m, 200));
	ASSERT_EQ(qp_state(c.id->qp), IBV_QPS_RTS);

	/* The real peer's duplicate REP still gets the RTU again, and the
	 * connection ends as usual. */
	fake_send(rep);
	ASSERT(fake_recv(m, 3000));
	ASSERT_EQ(ur_cm_mad_attr(m), UR_CM_ATTR_RTU);
	ASSERT_EQ(rdma_disconnect(c.id), 0);
	ASSERT(fake_recv(m, 3000));
	ASSERT_EQ(ur_cm_mad_attr(m), UR_CM_ATTR_DREQ);
	memcpy(m, g[4].mad, UR_MAD_LEN);
	set_tid(m, tid);
	ur_cm_set(m, CMF_LOCAL_COMM_ID, peer);
	ur_cm_set(m, CMF_REMOTE_COMM_ID, ours);
	fake_send(m);
	ASSERT_EQ(rdma_get_cm_event(c.id->channel, &ev), 0);
	ASSERT_EQ(ev->event, RDMA_CM_EVENT_DISCONNECTED);
	ASSERT_EQ(ev->status, 0);
	rdma_ack_cm_event(ev);
	rdma_destroy_qp(c.id);
	rdma_destroy_id(c.id);
}

/* Next event on @ch within @ms, or -1. */
static int next_event(struct rdma_event_channel *ch, int ms,
		      struct rdma_cm_event **ev)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };

	if (poll(&p, 1, ms) != 1)
		return -1;
	ASSERT_EQ(rdma_get_cm_event(ch, ev), 0);
	return (int)(*ev)->event;
}

/*
 * A REQ that comes a moment before its listener (perftest -R: the server
 * listens after an exchange that the client's REQ may overtake) is held
 * and delivered to the listener, not rejected; a REQ whose listener never
 * comes gets REJ "invalid service ID" after the wait.
 */
static void t_late_listener(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(SVC_PORT + 1) };
	struct rdma_event_channel *ch;
	struct rdma_cm_id *l, *id;
	struct rdma_cm_event *ev;
	uint8_t req[UR_MAD_LEN], m[UR_MAD_LEN];
	uint64_t t0;

	load_golden();
	fake_open();
	inet_pton(AF_INET, US, &a.sin_addr);
	ch = rdma_create_event_channel();
	ASSERT(ch);
	ASSERT_EQ(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP), 0);
	ASSERT_EQ(rdma_bind_addr(l, (struct sockaddr *)&a), 0);

	peer_req(req, SVC_PORT + 1, 0x2468ace0);
	fake_send(req);
	ASSERT(!fake_recv(m, 20)); /* held, not rejected */
	ASSERT_EQ(rdma_listen(l, 4), 0);
	ASSERT_EQ(next_event(ch, 2000, &ev), RDMA_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;
	rdma_ack_cm_event(ev);
	ASSERT_EQ(rdma_reject(id, NULL, 0), 0);
	ASSERT(fake_recv(m, 3000));
	ASSERT_EQ(ur_cm_mad_attr(m), UR_CM_ATTR_REJ);
	ASSERT_EQ_U64(ur_cm_get(m, CMF_REMOTE_COMM_ID), 0x2468ace0);
	ASSERT_EQ(ur_cm_get(m, CMF_REJ_REASON), CM_REJ_CONSUMER_DEFINED);
	rdma_destroy_id(id);

	/* Nobody ever listens on SVC_PORT + 2: REJ after the wait, once
	 * (a retransmitted REQ joins the one held). */
	peer_req(req, SVC_PORT + 2, 0x13579bdf);
	t0 = now_ns();
	fake_send(req);
	fake_send(req);
	ASSERT(fake_recv(m, 3000));
	ASSERT_GE((now_ns() - t0) / 1000000, CM_LISTEN_WAIT_MS - 5);
	ASSERT_EQ(ur_cm_mad_attr(m), UR_CM_ATTR_REJ);
	ASSERT_EQ_U64(ur_cm_get(m, CMF_REMOTE_COMM_ID), 0x13579bdf);
	ASSERT_EQ(ur_cm_get(m, CMF_REJ_REASON), CM_REJ_INVALID_SERVICE_ID);
	ASSERT(!fake_recv(m, 300));
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
}

static const struct ur_test_case tests[] = {
	{ "passive", t_passive },
	{ "active", t_active },
	{ "unreachable", t_unreachable },
	{ "stale", t_stale },
	{ "late_listener", t_late_listener },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

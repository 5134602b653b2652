// SPDX-License-Identifier: MIT
/*
 * The iWARP connection core (src/transport/iw_conn.c) on two connections
 * joined by an in-memory byte pipe that cuts each direction's stream at
 * random points (seeded: UR_SEED= replays): MPA set-up, every RDMAP
 * operation from 0 bytes to several MULPDUs with CRC and markers on and
 * off, the Terminate of each error and the completions on both sides, and
 * a responder fed the initiator's stream of real siw captures, whose
 * answers must be the ones siw gave. Built again with UR_IW_TSHARK
 * (test_iw_conn_tshark): one connection's bytes, cut by MSS into TCP
 * segments of a pcap, read back by tshark.
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include "ur_iw.h"
#include "ur_rand.h"
#include "../wire/tcp_pcap.h"
#include "ur_test.h"

#ifdef UR_IW_TSHARK /* this file's other cases are not run there */
#pragma GCC diagnostic ignored "-Wunused-function"
#endif

#define NMR 8
#define BUF (1u << 20)
#define ACC (UR_ACCESS_LOCAL_WRITE | UR_ACCESS_REMOTE_WRITE |                \
	     UR_ACCESS_REMOTE_READ)

struct side {
	struct ur_dev dev;
	struct ur_qp qp;
	struct ur_cq scq, rcq;
	struct ur_mr mr[NMR];
	int nmr;
	uint8_t *buf;        /* registered: mr[0], STag 0x100 | side */
	struct ur_iw_conn *c;
	int events[32];
};

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
	if (!rng)
		rng = ur_test_seed * 0x9E3779B97F4A7C15ull | 1;
	return n ? (uint32_t)(ur_rand_next(&rng) % n) : 0;
}

static const struct ur_mr *mr_lookup(void *host, uint32_t key)
{
	struct side *s = host;

	for (int i = 0; i < s->nmr; i++)
		if (s->mr[i].rkey == key || s->mr[i].lkey == key)
			return &s->mr[i];
	return NULL;
}

static void qp_event(void *host, struct ur_qp *qp, enum ur_async_event ev)
{
	struct side *s = host;

	(void)qp;
	s->events[ev & 31]++;
}

static int cq_events;

static void cq_event(void *host, struct ur_cq *cq)
{
	(void)host;
	(void)cq;
	cq_events++;
}

static const struct ur_dev_ops ops = {
	.mr_lookup = mr_lookup, .qp_event = qp_event, .cq_event = cq_event,
};

static struct ur_mr *add_mr(struct side *s, uint32_t stag, uint8_t *p,
			    uint64_t len, uint32_t access)
{
	struct ur_mr *m = &s->mr[s->nmr++];

	*m = (struct ur_mr){.iova = (uintptr_t)p, .host = p, .length = len,
			    .lkey = stag, .rkey = stag, .access = access,
			    .pdn = 1, .type = UR_KEY_MR};
	return m;
}

static uint32_t depth = 64; /* max_send_wr and max_recv_wr of new sides */

static void side_init(struct side *s, int id)
{
	struct ur_qp_caps caps = {.max_send_wr = depth, .max_recv_wr = depth,
				  .max_send_sge = 4, .max_recv_sge = 4,
				  .max_inline_data = 64};

	memset(s, 0, sizeof(*s));
	s->dev.ops = &ops;
	s->dev.host = s;
	ASSERT_EQ(ur_cq_init(&s->scq, 256), 0);
	ASSERT_EQ(ur_cq_init(&s->rcq, 256), 0);
	ASSERT_EQ(ur_qp_create(&s->dev, &s->qp, UR_QPT_RC, 0x10 + (uint32_t)id,
			       1, &caps, &s->scq, &s->rcq), 0);
	s->buf = calloc(1, BUF);
	ASSERT(s->buf);
	add_mr(s, 0x100u | (uint32_t)id, s->buf, BUF, ACC);
}

static void side_fini(struct side *s)
{
	ur_iw_conn_free(s->c);
	ur_qp_destroy(&s->qp);
	ur_cq_fini(&s->scq);
	ur_cq_fini(&s->rcq);
	free(s->buf);
}

/* Move bytes both ways in random pieces until neither side has any;
 * @tap (if set) sees each piece as the TCP segment that carried it. */
static uint64_t now = 1000;
static void (*tap)(int d, const uint8_t *p, size_t n);

static void pump(struct side *a, struct side *b)
{
	for (int idle = 0; idle < 2;) {
		idle++;
		for (int d = 0; d < 2; d++) {
			struct side *from = d ? b : a, *to = d ? a : b;
			const uint8_t *p;
			size_t n = ur_iw_tx_peek(from->c, &p), k;

			if (!n)
				continue;
			idle = 0;
			/* a TCP segment, a bit of one, or a big batch */
			switch (rnd(4)) {
			case 0: k = 1 + rnd(7); break;
			case 1: k = 1448; break;
			case 2: k = 1 + rnd(9000); break;
			default: k = n; break;
			}
			if (k < n)
				n = k;
			if (tap) { /* the host writes all it has, TCP cuts it */
				n = ur_iw_tx_peek(from->c, &p);
				for (size_t o = 0; o < n; o += 1448)
					tap(d, p + o, n - o < 1448 ? n - o : 1448);
			}
			(void)ur_iw_rx(to->c, p, n, now);
			ur_iw_tx_done(from->c, n, now);
			now += 1000;
		}
	}
}

static void cfg_of(struct ur_iw_cfg *cfg, bool init, bool crc, bool markers)
{
	ur_iw_cfg_siw(cfg, init);
	cfg->pol.crc_required = crc;
	cfg->pol.markers = markers;
	cfg->pol.ird = cfg->pol.ord = 4;
}

static void connect2(struct side *a, struct side *b, bool crc, bool markers)
{
	struct ur_iw_cfg ca, cb;
	static const uint8_t pda[] = "rdma_cm's private data, initiator";
	static const uint8_t pdb[] = "and the responder's";

	side_init(a, 0);
	side_init(b, 1);
	cfg_of(&ca, true, crc, markers);
	cfg_of(&cb, false, false, markers);
	ca.pd = pda;
	ca.pd_len = sizeof(pda);
	ASSERT_EQ(ur_iw_conn_new(&a->qp, &ca, now, &a->c), 0);
	ASSERT_EQ(ur_iw_conn_new(&b->qp, &cb, now, &b->c), 0);
	pump(a, b);
	ASSERT_EQ(ur_iw_state(b->c), UR_IWS_REQ_RCVD);
	ASSERT_EQ(ur_iw_peer_rr(b->c)->pd_len, sizeof(pda));
	ASSERT_MEM_EQ(ur_iw_peer_rr(b->c)->pd, pda, sizeof(pda));
	ASSERT_EQ(ur_iw_accept(b->c, pdb, sizeof(pdb), now), 0);
	pump(a, b);
	ASSERT_EQ(ur_iw_state(a->c), UR_IWS_RTS);
	ASSERT_EQ(ur_iw_state(b->c), UR_IWS_RTS);
	ASSERT_EQ(a->qp.state, UR_QPS_RTS);
	ASSERT_EQ(ur_iw_peer_rr(a->c)->pd_len, sizeof(pdb));
	ASSERT_MEM_EQ(ur_iw_peer_rr(a->c)->pd, pdb, sizeof(pdb));
	ASSERT_EQ(ur_iw_neg(a->c)->crc, crc);
	ASSERT_EQ(ur_iw_neg(b->c)->crc, crc);
	ASSERT_EQ(ur_iw_neg(a->c)->markers_tx, markers);
	ASSERT_EQ(ur_iw_neg(b->c)->markers_rx, markers);
	ASSERT_EQ(ur_iw_neg(a->c)->ord, 4);
	ASSERT_EQ(ur_iw_neg(b->c)->ird, 4);
}

/* Both still up, else say who terminated and why. */
static void both_up(struct side *a, struct side *b, const char *what)
{
	for (int i = 0; i < 2; i++) {
		struct side *s = i ? b : a;
		const struct ur_iw_term_info *t = ur_iw_term_sent(s->c);

		if (ur_iw_state(s->c) != UR_IWS_RTS)
			UR_FAIL("%s: side %d in %s, err %d, its Terminate %d "
				"(%u %u 0x%02x)", what, i,
				ur_iw_state_name(ur_iw_state(s->c)),
				ur_iw_error(s->c), t->valid, t->layer, t->etype,
				t->ecode);
	}
}

static struct ur_cqe one_cqe(struct ur_cq *cq)
{
	struct ur_cqe e[2];

	ASSERT_EQ(ur_cq_poll(cq, e, 2), 1);
	return e[0];
}

/* The next of several. */
static struct ur_cqe next_cqe(struct ur_cq *cq)
{
	struct ur_cqe e;

	ASSERT_EQ(ur_cq_poll(cq, &e, 1), 1);
	return e;
}

static void no_cqe(struct ur_cq *cq)
{
	struct ur_cqe e;

	ASSERT_EQ(ur_cq_poll(cq, &e, 1), 0);
}

static int post(struct side *s, uint32_t op, uint64_t id, uint32_t off,
		uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t flags,
		uint32_t imm)
{
	/* two SGEs when the buffer allows: the gather path too */
	uint32_t h = op == UR_WR_RDMA_READ ? len : len / 3;
	struct ur_sge sg[2] = {
		{(uintptr_t)s->buf + off, h, s->mr[0].lkey},
		{(uintptr_t)s->buf + off + h, len - h, s->mr[0].lkey},
	};
	struct ur_send_wr wr = {
		.wr_id = id, .opcode = op, .flags = flags | UR_SEND_SIGNALED,
		.imm_data = imm, .remote_addr = raddr, .rkey = rkey,
		.sg_list = sg, .num_sge = op == UR_WR_RDMA_READ ? 1 : 2,
	};

	return ur_iw_post_send(s->c, &wr, now);
}

static void post_recv(struct side *s, uint64_t id, uint32_t off, uint32_t len)
{
	struct ur_sge sg = {(uintptr_t)s->buf + off, len, s->mr[0].lkey};
	struct ur_recv_wr wr = {.wr_id = id, .sg_list = &sg, .num_sge = 1};

	ASSERT_EQ(ur_iw_post_recv(s->c, &wr, now), 0);
}

static void fill(uint8_t *p, uint32_t n)
{
	(void)rnd(1);
	for (uint32_t i = 0; i < n; i++)
		p[i] = (uint8_t)ur_rand_next(&rng);
}

static uint32_t pick_len(uint32_t mulpdu)
{
	static const int32_t d[] = {0, 1, -1, 0, 7};

	switch (rnd(6)) {
	case 0: return 0;
	case 1: return 1 + rnd(64);
	case 2: return mulpdu - 18 + (uint32_t)d[rnd(5)];
	case 3: return 3 * (mulpdu - 14) + rnd(3);
	case 4: return 65536 + rnd(5000);
	default: return rnd(5 * mulpdu);
	}
}

/* Every operation, both directions, content checked. */
static void run_ops(bool crc, bool markers)
{
	struct side a, b;
	uint32_t mulpdu = ur_mpa_mulpdu(1448, markers);

	connect2(&a, &b, crc, markers);
	for (int round = 0; round < 24; round++) {
		struct side *x = rnd(2) ? &b : &a, *y = x == &a ? &b : &a;
		uint32_t len = pick_len(mulpdu), op = rnd(4);
		uint32_t so = rnd(4096), ro = 256u << 10 | rnd(4096);
		struct ur_cqe e;

		fill(x->buf + so, len);
		fill(y->buf + ro, len);
		if (getenv("UR_IW_TRACE"))
			printf("round %d: %c op %u len %u\n", round,
			       x == &a ? 'a' : 'b', op, len);
		if (op == 0 || op == 1) { /* SEND, solicited or with invalidate */
			uint32_t flags = op ? 0 : UR_SEND_SOLICITED;
			uint32_t wop = op ? UR_WR_SEND_WITH_INV : UR_WR_SEND;

			post_recv(y, 77, ro, len + rnd(100));
			ASSERT_EQ(post(x, wop, 5, so, len, 0, 0, flags,
				       0xabcd00), 0);
			pump(&a, &b);
			both_up(&a, &b, "SEND");
			e = one_cqe(&x->scq);
			ASSERT_EQ(e.status, UR_WC_SUCCESS);
			ASSERT_EQ(e.opcode, UR_WC_SEND);
			e = one_cqe(&y->rcq);
			ASSERT_EQ(e.status, UR_WC_SUCCESS);
			ASSERT_EQ(e.wr_id, 77);
			ASSERT_EQ(e.byte_len, len);
			ASSERT_EQ(e.wc_flags, op ? UR_WC_WITH_INV : 0);
			ASSERT_EQ(e.imm_data, op ? 0xabcd00 : 0);
			ASSERT_MEM_EQ(y->buf + ro, x->buf + so, len);
		} else if (op == 2) {
			ASSERT_EQ(post(x, UR_WR_RDMA_WRITE, 6, so, len,
				       (uintptr_t)y->buf + ro, y->mr[0].rkey,
				       0, 0), 0);
			pump(&a, &b);
			both_up(&a, &b, "WRITE");
			e = one_cqe(&x->scq);
			ASSERT_EQ(e.status, UR_WC_SUCCESS);
			ASSERT_EQ(e.opcode, UR_WC_RDMA_WRITE);
			no_cqe(&y->rcq);
			ASSERT_MEM_EQ(y->buf + ro, x->buf + so, len);
		} else {
			/* several READs outstanding, up to the ORD (4) */
			uint32_t k = 1 + rnd(6);

			if (len > 200000 / k)
				len = 200000 / k;
			for (uint32_t i = 0; i < k; i++)
				ASSERT_EQ(post(x, UR_WR_RDMA_READ, 100 + i,
					       so + i * len, len,
					       (uintptr_t)y->buf + ro + i * len,
					       y->mr[0].rkey, 0, 0), 0);
			pump(&a, &b);
			both_up(&a, &b, "READ");
			for (uint32_t i = 0; i < k; i++) {
				e = next_cqe(&x->scq);
				ASSERT_EQ(e.status, UR_WC_SUCCESS);
				ASSERT_EQ(e.opcode, UR_WC_RDMA_READ);
				ASSERT_EQ(e.wr_id, 100 + i);
				ASSERT_EQ(e.byte_len, len);
			}
			ASSERT_MEM_EQ(x->buf + so, y->buf + ro, (size_t)k * len);
		}
		ASSERT_EQ(ur_iw_state(a.c), UR_IWS_RTS);
		ASSERT_EQ(ur_iw_state(b.c), UR_IWS_RTS);
	}
	ASSERT_EQ(ur_iw_counters(a.c)->tx_term + ur_iw_counters(b.c)->tx_term, 0);
	side_fini(&a);
	side_fini(&b);
}

static void test_ops_plain(void) { run_ops(false, false); }
static void test_ops_crc(void) { run_ops(true, false); }
static void test_ops_markers(void) { run_ops(true, true); }

/* Inline data, the fence and unsupported opcodes. */
/* A queue takes max_send_wr / max_recv_wr WQEs, not its slot count (a
 * power of two, so that the free-running indices wrap cleanly): depth 3
 * takes three, refuses a fourth, and takes three again once they are done,
 * round after round across the slots. */
static void test_queue_depth(void)
{
	struct side a, b;
	uint32_t id = 1;

	depth = 3;
	connect2(&a, &b, false, false);
	depth = 64;
	for (int round = 0; round < 5; round++) {
		struct ur_sge rs = {(uintptr_t)b.buf, 8, b.mr[0].lkey};
		struct ur_recv_wr rw = {.wr_id = 99, .sg_list = &rs,
					.num_sge = 1};

		for (int i = 0; i < 3; i++)
			post_recv(&b, id + (uint32_t)i, 0, 8);
		ASSERT_EQ(ur_iw_post_recv(b.c, &rw, now), -ENOMEM);
		for (int i = 0; i < 3; i++)
			ASSERT_EQ(post(&a, UR_WR_SEND, id + (uint32_t)i, 0, 8,
				       0, 0, 0, 0), 0);
		ASSERT_EQ(post(&a, UR_WR_SEND, 99, 0, 8, 0, 0, 0, 0),
			  -ENOMEM);
		pump(&a, &b);
		for (int i = 0; i < 3; i++) {
			ASSERT_EQ(next_cqe(&b.rcq).wr_id, id + (uint32_t)i);
			ASSERT_EQ(next_cqe(&a.scq).wr_id, id + (uint32_t)i);
		}
		no_cqe(&b.rcq);
		no_cqe(&a.scq);
		id += 3;
	}
	side_fini(&a);
	side_fini(&b);
}

static void test_post_rules(void)
{
	struct side a, b;
	uint8_t msg[40] = "inline bytes, the caller's buffer reused";
	struct ur_sge sg = {(uintptr_t)msg, sizeof(msg), 0};
	struct ur_send_wr wr = {.wr_id = 1, .opcode = UR_WR_SEND,
				.flags = UR_SEND_INLINE | UR_SEND_SIGNALED,
				.sg_list = &sg, .num_sge = 1};
	struct ur_cqe e;

	connect2(&a, &b, false, false);
	/* the QP's own entry points reach the connection (ur_proto_iwarp) */
	ASSERT(a.qp.proto == &ur_proto_iwarp);
	ASSERT_EQ(a.qp.proto->transport, 1);
	ASSERT_EQ(a.qp.proto->node_type, 4);
	{
		struct ur_sge rs = {(uintptr_t)b.buf, 100, b.mr[0].lkey};
		struct ur_recv_wr rw = {.wr_id = 9, .sg_list = &rs,
					.num_sge = 1};

		ASSERT_EQ(ur_qp_post_recv(&b.qp, &rw), 0);
	}
	ASSERT_EQ(ur_qp_post_send(&a.qp, &wr, now), 0);
	memset(msg, 0, sizeof(msg));
	pump(&a, &b);
	e = one_cqe(&b.rcq);
	ASSERT_EQ(e.byte_len, 40);
	ASSERT_MEM_EQ(b.buf, "inline bytes", 12);
	one_cqe(&a.scq);
	/* solicited event (RFC 5040 SEND with SE): a CQ armed for
	 * solicited completions fires for it only */
	ur_cq_arm(&b.rcq, true);
	cq_events = 0;
	post_recv(&b, 10, 0, 100);
	post_recv(&b, 11, 0, 100);
	ASSERT_EQ(post(&a, UR_WR_SEND, 3, 0, 8, 0, 0, 0, 0), 0);
	pump(&a, &b);
	ASSERT_EQ(cq_events, 0);
	ASSERT_EQ(post(&a, UR_WR_SEND, 4, 0, 8, 0, 0, UR_SEND_SOLICITED, 0), 0);
	pump(&a, &b);
	ASSERT_EQ(cq_events, 1);
	ASSERT_EQ(next_cqe(&b.rcq).wr_id, 10);
	ASSERT_EQ(one_cqe(&b.rcq).wr_id, 11);
	ASSERT_EQ(next_cqe(&a.scq).wr_id, 3);
	ASSERT_EQ(one_cqe(&a.scq).wr_id, 4);
	/* SEND with Invalidate ends a type 2 window of the receiver's PD
	 * (as on RoCE): WRITEs through it work before, not after */
	{
		struct ur_mr *w = add_mr(&b, 0x5501, b.buf + 65536, 4096,
					 UR_ACCESS_REMOTE_WRITE);

		w->type = UR_KEY_MW2;
		w->lkey = 0x5501;
		w->mw_valid = true;
		w->mw_qpn = b.qp.qpn;
		w->mw_mr = &b.mr[0];
		atomic_store(&b.mr[0].nbound, 1);
		ASSERT_EQ(post(&a, UR_WR_RDMA_WRITE, 5, 0, 16,
			       (uintptr_t)b.buf + 65536, 0x5501, 0, 0), 0);
		post_recv(&b, 12, 0, 100);
		ASSERT_EQ(post(&a, UR_WR_SEND_WITH_INV, 6, 0, 8, 0, 0, 0,
			       0x5501), 0);
		pump(&a, &b);
		ASSERT_EQ(one_cqe(&b.rcq).wc_flags, UR_WC_WITH_INV);
		ASSERT(!w->mw_valid);
		/* the check a WRITE through it now meets (rx_write) */
		ASSERT_EQ(ur_rkey_check(&b.qp, 0x5501, (uintptr_t)b.buf + 65536,
					16, UR_ACCESS_REMOTE_WRITE, NULL), -EACCES);
		ASSERT_EQ(next_cqe(&a.scq).wr_id, 5);
		ASSERT_EQ(one_cqe(&a.scq).wr_id, 6);
		ASSERT_EQ(ur_iw_state(b.c), UR_IWS_RTS);
	}
	wr.flags = 0;
	wr.opcode = UR_WR_RDMA_WRITE_WITH_IMM;
	ASSERT_EQ(ur_iw_post_send(a.c, &wr, now), -EOPNOTSUPP);
	wr.opcode = UR_WR_ATOMIC_FETCH_AND_ADD;
	ASSERT_EQ(ur_iw_post_send(a.c, &wr, now), -EOPNOTSUPP);
	/* a fenced WRITE waits for the READ before it (RFC 5040 5.5) */
	memset(a.buf + 8192, 0x5a, 100);
	ASSERT_EQ(post(&a, UR_WR_RDMA_READ, 20, 4096, 100,
		       (uintptr_t)b.buf + 8192, b.mr[0].rkey, 0, 0), 0);
	memset(b.buf + 8192, 0x11, 100);
	ASSERT_EQ(post(&a, UR_WR_RDMA_WRITE, 21, 4096, 100,
		       (uintptr_t)b.buf + 8192, b.mr[0].rkey, UR_SEND_FENCE,
		       0), 0);
	pump(&a, &b);
	ASSERT_EQ(next_cqe(&a.scq).wr_id, 20);
	ASSERT_EQ(one_cqe(&a.scq).wr_id, 21);
	ASSERT(ur_test_all(b.buf + 8192, 0x11, 100));
	ASSERT(ur_test_all(a.buf + 4096, 0x11, 100));
	/* ERR from the application (rdma_disconnect): flush, then close */
	post_recv(&a, 30, 0, 8);
	ASSERT_EQ(ur_iw_state(a.c), UR_IWS_RTS);
	{
		struct ur_qp_attr at = {.qp_state = UR_QPS_RTR};

		ASSERT_EQ(ur_qp_modify(&a.qp, &at, UR_QP_STATE, now), -EINVAL);
		at.qp_state = UR_QPS_ERR;
		ASSERT_EQ(ur_qp_modify(&a.qp, &at, UR_QP_STATE, now), 0);
	}
	ASSERT_EQ(one_cqe(&a.rcq).status, UR_WC_WR_FLUSH_ERR);
	ASSERT(ur_iw_want_close(a.c));
	ASSERT_EQ(a.qp.state, UR_QPS_ERR);
	side_fini(&a);
	side_fini(&b);
}

/* The peer that caused it: its Terminate, its error, its flushes. */
struct term_case {
	const char *name;
	uint8_t layer, etype, ecode;
};

static void expect_term(struct side *from, struct side *to,
			const struct term_case *tc)
{
	const struct ur_iw_term_info *s = ur_iw_term_sent(from->c);
	const struct ur_iw_term_info *r = ur_iw_term_rcvd(to->c);

	printf("  %s: layer %u etype %u code 0x%02x\n", tc->name, s->layer,
	       s->etype, s->ecode);
	ASSERT(s->valid && r->valid);
	ASSERT_EQ(s->layer, tc->layer);
	ASSERT_EQ(s->etype, tc->etype);
	ASSERT_EQ(s->ecode, tc->ecode);
	ASSERT_EQ(r->layer, tc->layer);
	ASSERT_EQ(r->etype, tc->etype);
	ASSERT_EQ(r->ecode, tc->ecode);
	ASSERT_EQ(ur_iw_state(from->c), UR_IWS_ERROR);
	ASSERT_EQ(ur_iw_state(to->c), UR_IWS_ERROR);
	ASSERT(ur_iw_want_close(from->c) && ur_iw_want_close(to->c));
	ASSERT_EQ(from->qp.state, UR_QPS_ERR);
	ASSERT_EQ(to->qp.state, UR_QPS_ERR);
}

static void test_terminates(void)
{
	static const struct term_case tcs[] = {
		{"WRITE to an unknown STag", 1, 1, 0x00},
		{"WRITE past the region", 1, 1, 0x01},
		{"WRITE without remote write", 0, 1, 0x02},
		{"READ of an unknown STag", 0, 1, 0x00},
		{"READ past the region", 0, 1, 0x01},
		{"SEND with no receive posted", 1, 2, 0x02},
		{"SEND longer than the receive", 1, 2, 0x05},
		{"SEND into a receive with a bad lkey", 0, 2, 0x07},
	};

	for (unsigned int i = 0; i < sizeof(tcs) / sizeof(tcs[0]); i++) {
		struct side a, b;
		struct ur_cqe e;
		uint64_t rb;

		connect2(&a, &b, rnd(2), false);
		rb = (uintptr_t)b.buf;
		add_mr(&b, 0x777, b.buf, 4096, UR_ACCESS_REMOTE_READ);
		post_recv(&a, 50, 0, 64); /* flushes on a */
		if (i == 7) {
			struct ur_sge sg = {(uintptr_t)b.buf, 64, 0xdead};
			struct ur_recv_wr wr = {.wr_id = 60, .sg_list = &sg,
						.num_sge = 1};

			ASSERT_EQ(ur_iw_post_recv(b.c, &wr, now), 0);
		} else if (i != 5) {
			post_recv(&b, 60, 0, 64); /* flushes on b, or short */
		}
		switch (i) {
		case 0: post(&a, UR_WR_RDMA_WRITE, 1, 0, 64, 0x1000, 0xbad0aa, 0, 0); break;
		case 1: post(&a, UR_WR_RDMA_WRITE, 1, 0, 64, rb + BUF - 10, b.mr[0].rkey, 0, 0); break;
		case 2: post(&a, UR_WR_RDMA_WRITE, 1, 0, 64, rb, 0x777, 0, 0); break;
		case 3: post(&a, UR_WR_RDMA_READ, 1, 0, 64, 0x1000, 0xbad0aa, 0, 0); break;
		case 4: post(&a, UR_WR_RDMA_READ, 1, 0, 64, rb + 4050, 0x777, 0, 0); break;
		case 5: post(&a, UR_WR_SEND, 1, 0, 64, 0, 0, 0, 0); break;
		case 6: post(&a, UR_WR_SEND, 1, 0, 100, 0, 0, 0, 0); break;
		case 7: post(&a, UR_WR_SEND, 1, 0, 10, 0, 0, 0, 0); break;
		}
		/* a WQE behind it still waiting for its answer flushes (a
		 * WRITE or SEND behind it has left: it completes) */
		post(&a, UR_WR_RDMA_READ, 2, 8192, 8, rb, b.mr[0].rkey, 0, 0);
		pump(&a, &b);
		expect_term(&b, &a, &tcs[i]);
		e = next_cqe(&a.scq);
		ASSERT_EQ(e.wr_id, 1);
		/* siw: a WRITE or SEND that left completes; the READ the
		 * Terminate names fails with the remote error. */
		ASSERT_EQ(e.status, i == 3 || i == 4 ? UR_WC_REM_ACCESS_ERR
						     : UR_WC_SUCCESS);
		e = one_cqe(&a.scq);
		ASSERT_EQ(e.wr_id, 2);
		ASSERT_EQ(e.status, UR_WC_WR_FLUSH_ERR);
		e = one_cqe(&a.rcq);
		ASSERT_EQ(e.status, UR_WC_WR_FLUSH_ERR);
		if (i != 5) {
			e = one_cqe(&b.rcq);
			ASSERT_EQ(e.wr_id, 60);
			ASSERT_EQ(e.status, i == 7 ? UR_WC_LOC_PROT_ERR
						   : UR_WC_WR_FLUSH_ERR);
		}
		ASSERT_EQ(b.events[tcs[i].etype == 1 ? UR_EVENT_QP_ACCESS_ERR
						     : UR_EVENT_QP_FATAL], 1);
		ASSERT_EQ(a.events[UR_EVENT_QP_FATAL], 1);
		/* a WQE posted in error flushes at once */
		ASSERT_EQ(post(&a, UR_WR_SEND, 3, 0, 8, 0, 0, 0, 0), 0);
		ASSERT_EQ(one_cqe(&a.scq).status, UR_WC_WR_FLUSH_ERR);
		side_fini(&a);
		side_fini(&b);
	}
}

/* A peer that breaks the rules the core enforces on itself: raw FPDUs
 * after a real set-up. */
static uint8_t raw[8192];
static size_t raw_len;

/* Frame one segment into raw[]; the test hands raw[] over in one call (a
 * peer's burst: our answers cannot leave in between). */
static void raw_send(struct side *to, struct ur_mpa_tx *tx,
		     const struct ur_ddp_seg *s, uint32_t len)
{
	uint8_t hdr[64], pl[1024] = {0};
	int hl = ur_ddp_encode_hdr(hdr, sizeof(hdr), s);
	int n;

	(void)to;
	ASSERT_GT(hl, 0);
	n = ur_mpa_tx_frame(tx, raw + raw_len, sizeof(raw) - raw_len, hdr,
			    (size_t)hl, pl, len);
	ASSERT_GT(n, 0);
	raw_len += (size_t)n;
}

static void test_peer_violations(void)
{
	for (int i = 0; i < 4; i++) {
		struct side a, b;
		struct ur_mpa_tx tx;
		struct ur_ddp_seg s = {.last = true};
		const struct ur_iw_term_info *t;

		connect2(&a, &b, false, false);
		ur_mpa_tx_init(&tx, false, false);
		raw_len = 0;
		post_recv(&b, 1, 0, 100);
		switch (i) {
		case 0: /* READ Requests beyond the IRD (4) */
			for (uint32_t k = 1; k <= 5; k++) {
				s = (struct ur_ddp_seg){
					.opcode = UR_RDMAP_READ_REQ, .last = true,
					.qn = 1, .msn = k,
					.rreq = {.sink_stag = 1, .size = 8,
						 .src_stag = b.mr[0].rkey,
						 .src_to = (uintptr_t)b.buf}};
				raw_send(&b, &tx, &s, 0);
			}
			break;
		case 1: /* SEND with the wrong MSN */
			s = (struct ur_ddp_seg){.opcode = UR_RDMAP_SEND,
						.last = true, .msn = 2};
			raw_send(&b, &tx, &s, 10);
			break;
		case 2: /* second segment with a wrong MO */
			s = (struct ur_ddp_seg){.opcode = UR_RDMAP_SEND,
						.msn = 1};
			raw_send(&b, &tx, &s, 10);
			s.mo = 11;
			s.last = true;
			raw_send(&b, &tx, &s, 10);
			break;
		case 3: /* a READ Response nobody asked for */
			s = (struct ur_ddp_seg){.opcode = UR_RDMAP_READ_RESP,
						.last = true, .stag = 0x101};
			raw_send(&b, &tx, &s, 10);
			break;
		}
		ur_iw_rx(b.c, raw, raw_len, now);
		t = ur_iw_term_sent(b.c);
		printf("  case %d: layer %u etype %u code 0x%02x\n", i,
		       t->layer, t->etype, t->ecode);
		ASSERT(t->valid);
		ASSERT_EQ(t->layer, 1);
		ASSERT_EQ(t->etype, i == 3 ? 1 : 2);
		ASSERT_EQ(t->ecode, i == 0 ? 0x02 : i == 1 ? 0x03 : i == 2 ? 0x04 : 0x00);
		ASSERT_EQ(one_cqe(&b.rcq).status, UR_WC_WR_FLUSH_ERR);
		side_fini(&a);
		side_fini(&b);
	}
}

/* Set-up variants: reject with private data, markers refused by siw's
 * policy, RTR (RFC 6581 peer-to-peer), a broken Request, a timeout. */
static void test_mpa(void)
{
	struct side a, b;
	struct ur_iw_cfg ca, cb;
	static const uint8_t why[] = "connection rejected by server";

	/* reject */
	side_init(&a, 0);
	side_init(&b, 1);
	ur_iw_cfg_siw(&ca, true);
	ur_iw_cfg_siw(&cb, false);
	ASSERT_EQ(ur_iw_conn_new(&a.qp, &ca, now, &a.c), 0);
	ASSERT_EQ(ur_iw_conn_new(&b.qp, &cb, now, &b.c), 0);
	pump(&a, &b);
	ASSERT_EQ(ur_iw_reject(b.c, why, sizeof(why) - 1, now), 0);
	pump(&a, &b);
	ASSERT_EQ(ur_iw_state(a.c), UR_IWS_CLOSED);
	ASSERT_EQ(ur_iw_error(a.c), -ECONNREFUSED);
	ASSERT_EQ(ur_iw_peer_rr(a.c)->pd_len, sizeof(why) - 1);
	ASSERT_MEM_EQ(ur_iw_peer_rr(a.c)->pd, why, sizeof(why) - 1);
	ASSERT(ur_iw_want_close(b.c));
	side_fini(&a);
	side_fini(&b);

	/* markers asked, siw's policy refuses (R) */
	side_init(&a, 0);
	side_init(&b, 1);
	ur_iw_cfg_siw(&ca, true);
	ca.pol.markers = true;
	ASSERT_EQ(ur_iw_conn_new(&a.qp, &ca, now, &a.c), 0);
	ASSERT_EQ(ur_iw_conn_new(&b.qp, &cb, now, &b.c), 0);
	pump(&a, &b);
	ASSERT_EQ(ur_iw_accept(b.c, NULL, 0, now), 1);
	pump(&a, &b);
	ASSERT_EQ(ur_iw_error(a.c), -ECONNREFUSED);
	ASSERT_EQ(ur_iw_state(b.c), UR_IWS_CLOSED);
	side_fini(&a);
	side_fini(&b);

	/* RTR: WRITE and READ as the Reply picks */
	for (int r = 0; r < 2; r++) {
		side_init(&a, 0);
		side_init(&b, 1);
		ur_iw_cfg_siw(&ca, true);
		ca.p2p = true;
		ca.rtr_write = r == 0;
		ca.rtr_read = true;
		ASSERT_EQ(ur_iw_conn_new(&a.qp, &ca, now, &a.c), 0);
		ASSERT_EQ(ur_iw_conn_new(&b.qp, &cb, now, &b.c), 0);
		pump(&a, &b);
		ASSERT_EQ(ur_iw_accept(b.c, NULL, 0, now), 0);
		ASSERT_EQ(ur_iw_state(b.c), UR_IWS_RTR_WAIT);
		post_recv(&b, 1, 0, 16);
		ASSERT_EQ(post(&a, UR_WR_SEND, 2, 0, 16, 0, 0, 0, 0), 0);
		pump(&a, &b);
		ASSERT_EQ(ur_iw_neg(b.c)->rtr, r == 0 ? UR_RTR_WRITE : UR_RTR_READ);
		ASSERT_EQ(ur_iw_state(b.c), UR_IWS_RTS);
		ASSERT_EQ(ur_iw_state(a.c), UR_IWS_RTS);
		ASSERT_EQ(one_cqe(&b.rcq).byte_len, 16);
		ASSERT_EQ(one_cqe(&a.scq).status, UR_WC_SUCCESS);
		side_fini(&a);
		side_fini(&b);
	}

	/* garbage instead of a Request: no Reply, closed */
	side_init(&b, 1);
	cb.mpa_timeout_ns = 5000000000ull;
	ASSERT_EQ(ur_iw_conn_new(&b.qp, &cb, now, &b.c), 0);
	ASSERT_EQ(ur_iw_rx(b.c, (const uint8_t *)"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
			   27, now), -EPROTO);
	ASSERT_EQ(ur_iw_state(b.c), UR_IWS_CLOSED);
	{
		const uint8_t *p;

		ASSERT_EQ(ur_iw_tx_peek(b.c, &p), 0);
	}
	side_fini(&b);
	/* nothing at all: the MPA timer */
	side_init(&b, 1);
	ASSERT_EQ(ur_iw_conn_new(&b.qp, &cb, now, &b.c), 0);
	ASSERT_EQ_U64(ur_iw_deadline(b.c), now + 5000000000ull);
	ur_iw_timer(b.c, now + 4999999999ull);
	ASSERT_EQ(ur_iw_state(b.c), UR_IWS_REQ_WAIT);
	ur_iw_timer(b.c, now + 5000000000ull);
	ASSERT_EQ(ur_iw_error(b.c), -ETIMEDOUT);
	side_fini(&b);
}

/* ---- siw captures: the initiator's stream into our responder -------------- */
struct cap {
	uint8_t *d[2];       /* 0: client -> server, 1: server -> client */
	uint32_t len[2];
	uint32_t isn[2];
	uint16_t cport;
};

static void cap_load(const char *name, struct cap *c)
{
	char err[PCAP_ERRBUF_SIZE], path[512];
	int n;
	const char *dir = ur_test_golden_dir("../shared/wire/siw", &n);
	struct pcap_pkthdr *h;
	const uint8_t *p;
	pcap_t *pc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	pc = pcap_open_offline(path, err);
	if (!pc)
		UR_FAIL("%s: %s", path, err);
	memset(c, 0, sizeof(*c));
	c->d[0] = calloc(1, 1 << 20);
	c->d[1] = calloc(1, 1 << 20);
	while (pcap_next_ex(pc, &h, &p) == 1) {
		const uint8_t *ip = p + 14, *tcp = ip + (ip[0] & 15) * 4;
		uint32_t iplen = ur_get16(ip + 2), thl = (tcp[12] >> 4) * 4u;
		uint32_t dlen = iplen - (uint32_t)(tcp - ip) - thl;
		uint32_t seq = ur_get32(tcp + 4), off;
		uint16_t sport = ur_get16(tcp);
		int d;

		if (tcp[13] & 0x02) { /* SYN: the client's comes first */
			d = !c->cport ? 0 : sport != c->cport;
			if (!c->cport)
				c->cport = sport;
			c->isn[d] = seq;
			continue;
		}
		if (!dlen)
			continue;
		d = sport != c->cport;
		off = seq - c->isn[d] - 1;
		ASSERT_LE(off + dlen, 1u << 20);
		memcpy(c->d[d] + off, tcp + thl, dlen);
		if (off + dlen > c->len[d])
			c->len[d] = off + dlen;
	}
	pcap_close(pc);
}

/* Feed the client's stream to our responder (stock siw's settings, the
 * MRs and receives the server application had), in random pieces, and
 * compare what we send with what the server sent, up to @upto bytes
 * (0: all), skipping @skip_off..+4 (a field siw fills otherwise). */
static void replay(const char *name, uint32_t feed, uint32_t upto,
		   uint32_t skip_off, int recvs, uint32_t expect_state,
		   uint32_t send_at)
{
	struct cap cp;
	struct side b;
	struct ur_iw_cfg cb;
	const uint8_t *p;
	size_t n;
	uint32_t at = 0, rr_end;

	printf("  %s\n", name);
	cap_load(name, &cp);
	side_init(&b, 1);
	ur_iw_cfg_siw(&cb, false);
	ASSERT_EQ(ur_iw_conn_new(&b.qp, &cb, now, &b.c), 0);
	for (int i = 0; i < recvs; i++)
		post_recv(&b, (uint64_t)i, (uint32_t)i * 4096, 4096);
	if (!feed)
		feed = cp.len[0];
	/* The initiator sends nothing between its Request and our Reply
	 * (RFC 5044 7.1.2): pieces never straddle the Request's end. */
	rr_end = cp.len[0] >= (uint32_t)UR_MPA_RR_LEN
			 ? (uint32_t)UR_MPA_RR_LEN + ur_get16(cp.d[0] + 18)
			 : cp.len[0];
	while (at < feed) {
		uint32_t k = 1 + rnd(300);

		if (k > feed - at)
			k = feed - at;
		if (at < rr_end && at + k > rr_end)
			k = rr_end - at;
		ur_iw_rx(b.c, cp.d[0] + at, k, now);
		at += k;
		if (ur_iw_state(b.c) == UR_IWS_REQ_RCVD)
			ASSERT_EQ(ur_iw_accept(b.c, NULL, 0, now), 0);
	}
	n = ur_iw_tx_peek(b.c, &p);
	printf("    streams %u and %u bytes, we: %s, %zu bytes out\n", cp.len[0],
	       cp.len[1], ur_iw_state_name(ur_iw_state(b.c)), n);
	if (!upto)
		upto = cp.len[1];
	ASSERT_EQ(n, upto);
	for (uint32_t i = 0; i < upto; i++)
		if (p[i] != cp.d[1][i] && (i < skip_off || i >= skip_off + 4))
			UR_FAIL("%s: our byte %u is 0x%02x, siw's 0x%02x", name,
				i, p[i], cp.d[1][i]);
	ASSERT_EQ(ur_iw_state(b.c), expect_state);
	if (send_at) { /* the client's first SEND, in our receive */
		struct ur_cqe e = one_cqe(&b.rcq);
		uint32_t len = ur_get16(cp.d[0] + send_at) - UR_DDP_UNTAGGED_LEN;

		ASSERT_EQ(e.status, UR_WC_SUCCESS);
		ASSERT_EQ(e.byte_len, len);
		ASSERT_MEM_EQ(b.buf, cp.d[0] + send_at + 2 + UR_DDP_UNTAGGED_LEN,
			      len);
	}
	side_fini(&b);
	free(cp.d[0]);
	free(cp.d[1]);
}

static void test_siw_replay(void)
{
	/* the Terminates, byte for byte: Reply (24) + Terminate FPDU */
	replay("terminate_write_bad_stag.pcap", 0, 0, 0, 1, UR_IWS_ERROR, 0);
	/* siw rebuilds the copied READ Request with its MSN field holding
	 * the read size (64); we copy the Request as it came (MSN 1):
	 * offset 24 + 2 (length) + 18 (DDP) + 6 (control, seg len) + 10
	 * (the copied header's MSN field). Last: where the client's first
	 * SEND starts in its stream (0: none to check). */
	replay("terminate_read_bad_stag.pcap", 0, 0, 24 + 2 + 18 + 6 + 10, 1,
	       UR_IWS_ERROR, 0);
	/* the Replies siw gave: plain, CRC echoed, WRITE RTR picked; and
	 * the client's first SEND, which must take a receive and leave
	 * the connection up (feed: Request + RTR + first SEND) */
	replay("rping_verify.pcap", 24 + 40, 24, 0, 1, UR_IWS_RTS, 24);
	replay("crc_rping_verify.pcap", 24 + 40, 24, 0, 1, UR_IWS_RTS, 24);
	replay("p2p_rping_verify.pcap", 24 + 20 + 40, 24, 0, 1, UR_IWS_RTS,
	       24 + 20);
	replay("reject_no_listener.pcap", 0, 0, 0, 0, UR_IWS_REQ_WAIT, 0);
}

#ifdef UR_IW_TSHARK
/* ---- Wireshark reads what two cores say to each other ------------------ */
static char path[256];
static struct ur_tcp_pcap tp;

static void segment(int d, uint8_t flags, const uint8_t *data, size_t len)
{
	ur_tcp_pcap_segment(&tp, d, flags, data, len);
}

static void tap_pcap(int d, const uint8_t *p, size_t n)
{
	segment(d, 0x18, p, n); /* PSH+ACK */
}

/* Count lines of @cmd's output that contain @what (or, with @fields, the
 * comma-separated values of its one field). */
static int tshark_count(const char *args, const char *what, bool fields)
{
	char cmd[1024], line[16384];
	int n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "tshark -n -r %s --disable-heuristic rpcrdma_iwarp %s 2>/dev/null",
		 path, args);
	f = popen(cmd, "r");
	ASSERT(f);
	while (fgets(line, sizeof(line), f)) {
		if (!fields) {
			n += strstr(line, what) != NULL;
			continue;
		}
		line[strcspn(line, "\n")] = 0;
		if (!*line)
			continue;
		n++;
		for (char *c = line; *c; c++)
			n += *c == ',';
	}
	ASSERT_EQ(pclose(f), 0);
	return n;
}

/*
 * A whole connection with CRC between two cores, every operation (SEND, SE,
 * with invalidate, WRITE and READ of several segments, zero-length ones),
 * ended by a Terminate: tshark must decode the MPA Request and Reply, find
 * every FPDU we framed, call every CRC good and mark nothing malformed.
 */
static void test_tshark(void)
{
	pcap_t *dead = pcap_open_dead(DLT_EN10MB, 65535);
	struct side a, b;
	uint64_t fpdus;
	int got, good, bad, malformed, rr;

	snprintf(path, sizeof(path), "/tmp/uroce-iw-conn-%d.pcap", (int)getpid());
	ur_tcp_pcap_init(&tp, pcap_dump_open(dead, path));
	ASSERT(tp.dump);
	segment(0, 0x02, NULL, 0);
	segment(1, 0x12, NULL, 0);
	segment(0, 0x10, NULL, 0);
	tap = tap_pcap;
	connect2(&a, &b, true, false);
	fill(a.buf, 65536);
	fill(b.buf + 65536, 65536);
	post_recv(&b, 1, 131072, 8192);
	post_recv(&b, 2, 131072, 8192);
	post_recv(&b, 3, 131072, 8192);
	ASSERT_EQ(post(&a, UR_WR_SEND, 1, 0, 16, 0, 0, 0, 0), 0);
	ASSERT_EQ(post(&a, UR_WR_SEND, 2, 0, 5000, 0, 0, UR_SEND_SOLICITED, 0), 0);
	ASSERT_EQ(post(&a, UR_WR_SEND_WITH_INV, 3, 0, 0, 0, 0, 0, 0x1234), 0);
	ASSERT_EQ(post(&a, UR_WR_RDMA_WRITE, 4, 0, 10000,
		       (uintptr_t)b.buf, b.mr[0].rkey, 0, 0), 0);
	ASSERT_EQ(post(&a, UR_WR_RDMA_WRITE, 5, 0, 0,
		       (uintptr_t)b.buf, b.mr[0].rkey, 0, 0), 0);
	ASSERT_EQ(post(&a, UR_WR_RDMA_READ, 6, 20000, 6000,
		       (uintptr_t)b.buf + 65536, b.mr[0].rkey, 0, 0), 0);
	ASSERT_EQ(post(&a, UR_WR_RDMA_READ, 7, 30000, 0,
		       (uintptr_t)b.buf + 65536, b.mr[0].rkey, 0, 0), 0);
	pump(&a, &b);
	ASSERT_MEM_EQ(a.buf + 20000, b.buf + 65536, 6000);
	ASSERT_MEM_EQ(b.buf, a.buf, 10000);
	ASSERT_EQ(post(&a, UR_WR_RDMA_WRITE, 8, 0, 64, 0x1000, 0xbad0aa, 0, 0), 0);
	pump(&a, &b);
	ASSERT(ur_iw_term_sent(b.c)->valid);
	segment(1, 0x11, NULL, 0);
	segment(0, 0x11, NULL, 0);
	tap = NULL;
	pcap_dump_close(tp.dump);
	pcap_close(dead);
	fpdus = ur_iw_counters(a.c)->tx_fpdus + ur_iw_counters(b.c)->tx_fpdus;
	side_fini(&a);
	side_fini(&b);

	rr = tshark_count("-Y iwarp_mpa.rev -T fields -e iwarp_mpa.rev", NULL, true);
	got = tshark_count("-Y iwarp_ddp -T fields -E occurrence=a "
			   "-e iwarp_mpa.ulpdulength", NULL, true);
	good = tshark_count("-V", "(Good CRC32)", false);
	bad = tshark_count("-V", "Bad CRC32", false);
	malformed = tshark_count("-V", "Malformed", false);
	printf("[%d MPA Request/Reply, %d of %llu FPDUs, %d good CRC32c, "
	       "%d bad, %d malformed] ", rr, got, (unsigned long long)fpdus,
	       good, bad, malformed);
	ASSERT_EQ(rr, 2);
	ASSERT_EQ(got, fpdus);
	ASSERT_EQ(good, fpdus);
	ASSERT_EQ(bad, 0);
	ASSERT_EQ(malformed, 0);
	unlink(path);
}

static const struct ur_test_case tests[] = {
	{"tshark_iw_conn", test_tshark},
	{NULL, NULL},
};

UR_TEST_MAIN_NEEDS(tests, "tshark")
#else
static const struct ur_test_case tests[] = {
	{"ops_plain", test_ops_plain},
	{"ops_crc", test_ops_crc},
	{"ops_markers", test_ops_markers},
	{"post_rules", test_post_rules},
	{"queue_depth", test_queue_depth},
	{"terminates", test_terminates},
	{"peer_violations", test_peer_violations},
	{"mpa", test_mpa},
	{"siw_replay", test_siw_replay},
	{NULL, NULL},
};

UR_TEST_MAIN(tests)
#endif

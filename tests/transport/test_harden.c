// SPDX-License-Identifier: MIT
/*
 * Off-path injection (docs/security.md): packets crafted with the wire
 * codec and delivered to a connected pair (a = 10.0.0.1, b = 10.0.0.2) from
 * an address that is not the peer's (10.0.0.9), then the checks that stand
 * behind the address check: ACKs/NAKs only for PSNs in flight, duplicate
 * READs only inside the responder's kept resources. Each case shows the
 * same packet from the peer's address taking effect, so a check that
 * stops nothing fails it. Seeded: the PSNs start where the seed says.
 */
#include "tfix.h"

#include <string.h>

#define EVIL 8 /* node number of 10.0.0.9: nobody's peer */

/* Encode one request or answer; returns its length (ICRC slot zero: the
 * in-memory network takes packets as checked). */
static uint32_t craft(uint8_t *buf, uint8_t opcode, uint32_t dqpn,
		      uint32_t psn, const struct ur_pkt *x, const void *pl,
		      uint32_t pl_len)
{
	struct ur_pkt p = x ? *x : (struct ur_pkt){ 0 };
	int n;

	p.h.opcode = opcode;
	p.h.pkey = 0xffff;
	p.h.dqpn = dqpn;
	p.h.psn = psn & UR_PSN_MASK;
	p.h.ackreq = true;
	n = ur_pkt_encode(buf, 8192, &p, pl, pl_len);
	ASSERT_GT(n, 0);
	return (uint32_t)n;
}

static uint32_t nak_pkt(uint8_t *buf, uint32_t dqpn, uint32_t psn,
			enum ur_nak_code code)
{
	struct ur_pkt x = { .aeth = { .syndrome = ur_aeth_nak(code) } };

	return craft(buf, UR_OP_RC_ACKNOWLEDGE, dqpn, psn, &x, NULL, 0);
}

static struct tconn_attr conn(uint8_t max_dest_rd_atomic)
{
	uint64_t r = ur_test_seed * 0x9E3779B97F4A7C15ull;

	/* Anywhere in the PSN space, now and then just before the wrap. */
	return (struct tconn_attr){
		.mtu = 1024, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.min_rnr_timer = 1, .access = ACC_ALL,
		.max_dest_rd_atomic = max_dest_rd_atomic,
		.psn_a = (r & 1) ? (uint32_t)(UR_PSN_MASK - (r >> 40 & 7))
				 : (uint32_t)(r >> 8) & UR_PSN_MASK,
		.psn_b = (uint32_t)(r >> 32) & UR_PSN_MASK };
}

/* WRITE, SEND, atomic, bad-rkey WRITE, duplicate READ, NAK and ACK from
 * 10.0.0.9 with the right QPNs, PSNs and keys: nothing happens. */
static void t_offpath(void)
{
	struct tconn_attr ca = conn(0);
	struct ur_counters *ca_cnt, *cb_cnt;
	static uint8_t pkt[8192], data[512];
	struct ur_pkt x = { 0 };
	uint32_t psn = ca.psn_a, len, bq, aq;
	uint64_t txb;
	struct tfix f;

	tfix_init(&f, UR_QPT_RC, &ca);
	ca_cnt = &f.net.nodes[0].dev.cnt;
	cb_cnt = &f.net.nodes[1].dev.cnt;
	bq = f.b.qp->qpn;
	aq = f.a.qp->qpn;
	memset(data, 0xaa, sizeof(data));
	memset(f.b.buf, 0, 4096);
	ASSERT_EQ(tfix_recv(&f.b, 7, 1024, 512), 0);

	/* WRITE at b's expected PSN with b's rkey. */
	x.reth = (struct ur_reth){ (uintptr_t)f.b.buf, f.b.mr->rkey, 512 };
	len = craft(pkt, UR_OP_RC_RDMA_WRITE_ONLY, bq, psn, &x, data, 512);
	ASSERT_EQ(tnet_inject(&f.net, EVIL, 1, pkt, len), 0);
	ASSERT_EQ(cb_cnt->rx_drop_offpath, 1);
	/* SEND into b's posted receive. */
	len = craft(pkt, UR_OP_RC_SEND_ONLY, bq, psn, NULL, data, 256);
	ASSERT_EQ(tnet_inject(&f.net, EVIL, 1, pkt, len), 0);
	/* FETCH_ADD on b's memory. */
	x.atm = (struct ur_atmeth){ (uintptr_t)f.b.buf + 2048, f.b.mr->rkey,
				    5, 0 };
	len = craft(pkt, UR_OP_RC_FETCH_ADD, bq, psn, &x, NULL, 0);
	ASSERT_EQ(tnet_inject(&f.net, EVIL, 1, pkt, len), 0);
	/* A bad rkey at the expected PSN (fatal from the peer). */
	x.reth.rkey ^= 0x5a5a0000;
	len = craft(pkt, UR_OP_RC_RDMA_WRITE_ONLY, bq, psn, &x, data, 512);
	ASSERT_EQ(tnet_inject(&f.net, EVIL, 1, pkt, len), 0);
	/* A READ "behind": half the PSN space would count as duplicate. */
	x.reth = (struct ur_reth){ (uintptr_t)f.b.buf, f.b.mr->rkey, TBUF };
	len = craft(pkt, UR_OP_RC_RDMA_READ_REQUEST, bq, psn - 1000, &x,
		    NULL, 0);
	txb = cb_cnt->tx_packets;
	ASSERT_EQ(tnet_inject(&f.net, EVIL, 1, pkt, len), 0);
	ASSERT_EQ(cb_cnt->tx_packets, txb);
	ASSERT_EQ(cb_cnt->rx_drop_offpath, 5);
	ASSERT(ur_test_all(f.b.buf, 0, 4096));
	tfix_no_cqe(&f.b.rcq);
	ASSERT_EQ(f.b.qp->state, UR_QPS_RTS);
	ASSERT_EQ(cb_cnt->tx_nak_other + cb_cnt->tx_nak_seq, 0);

	/* a's WRITE in flight (1 ms each way); a NAK flood and an ACK for
	 * it from 10.0.0.9. */
	f.net.f.delay_ns = 1000000;
	tfix_fill(f.a.buf, 512, 3);
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, 512,
			    (uintptr_t)f.b.buf, f.b.mr->rkey, UR_SEND_SIGNALED),
		  0);
	for (uint32_t p = 0; p <= UR_PSN_MASK; p += 128) {
		len = nak_pkt(pkt, aq, p, UR_NAK_REM_ACCESS_ERR);
		ASSERT_EQ(tnet_inject(&f.net, EVIL, 0, pkt, len), 0);
	}
	len = nak_pkt(pkt, aq, ca.psn_b, UR_NAK_REM_ACCESS_ERR);
	ASSERT_EQ(tnet_inject(&f.net, EVIL, 0, pkt, len), 0);
	x.aeth = (struct ur_aeth){ ur_aeth_ack(UR_AETH_CREDIT_INVALID), 1 };
	len = craft(pkt, UR_OP_RC_ACKNOWLEDGE, aq, psn, &x, NULL, 0);
	ASSERT_EQ(tnet_inject(&f.net, EVIL, 0, pkt, len), 0);
	ASSERT_EQ(ca_cnt->rx_drop_offpath, (1u << 24) / 128 + 2);
	tfix_no_cqe(&f.a.scq);
	ASSERT_EQ(f.a.qp->state, UR_QPS_RTS);
	/* The pair's own traffic goes on. */
	ASSERT_EQ(tfix_run_ok(&f, &f.a.scq).wr_id, 1);
	ASSERT_MEM_EQ(f.b.buf, f.a.buf, 512);
	ASSERT_EQ(f.a.qp->state, UR_QPS_RTS);
	ASSERT_EQ(f.b.qp->state, UR_QPS_RTS);

	/* The control: the same kind of WRITE from a's address lands. */
	psn = ur_psn_add(psn, 1);
	x.reth = (struct ur_reth){ (uintptr_t)f.b.buf + 3072, f.b.mr->rkey, 512 };
	len = craft(pkt, UR_OP_RC_RDMA_WRITE_ONLY, bq, psn, &x, data, 512);
	ASSERT_EQ(tnet_inject(&f.net, 0, 1, pkt, len), 0);
	ASSERT(ur_test_all(f.b.buf + 3072, 0xaa, 512));
	tfix_fini(&f);
}

/* The requester's completer takes an ACK or NAK only for a PSN in flight
 * (9.7.5.2), even from the peer's address. */
static void t_ack_in_flight(void)
{
	struct tconn_attr ca = conn(0);
	static uint8_t pkt[256];
	struct ur_counters *c;
	uint32_t base = ca.psn_a, len, aq, n = 0;
	uint64_t dup, never;
	struct tfix f;

	tfix_init(&f, UR_QPT_RC, &ca);
	c = &f.net.nodes[0].dev.cnt;
	aq = f.a.qp->qpn;
	/* Idle: nothing in flight, so nothing to acknowledge. */
	len = nak_pkt(pkt, aq, base, UR_NAK_REM_ACCESS_ERR);
	ASSERT_EQ(tnet_inject(&f.net, 1, 0, pkt, len), 0);
	ASSERT_EQ(c->rx_drop_psn, 1);
	ASSERT_EQ(f.a.qp->state, UR_QPS_RTS);

	/* Three 1 KiB WRITEs in flight: PSNs base .. base+2. */
	f.net.f.delay_ns = 1000000;
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, (uint64_t)i,
				    (uint32_t)i * 1024, 1024,
				    (uintptr_t)f.b.buf + (uint32_t)i * 1024,
				    f.b.mr->rkey, UR_SEND_SIGNALED), 0);
	ASSERT_EQ(ur_qp_unacked(f.a.qp), 3);
	dup = c->rx_duplicate;
	never = c->rx_drop_psn;
	/* A remote-access NAK for every 128th PSN but those in flight. */
	for (uint32_t p = 0; p <= UR_PSN_MASK; p += 128) {
		uint32_t q = ur_psn_add(base, p + 3);

		if (ur_psn_diff(q, base) >= 0 && ur_psn_diff(q, base) < 3)
			continue;
		len = nak_pkt(pkt, aq, q, UR_NAK_REM_ACCESS_ERR);
		ASSERT_EQ(tnet_inject(&f.net, 1, 0, pkt, len), 0);
		n++;
	}
	/* Just outside both ends, and ACKs too. */
	len = nak_pkt(pkt, aq, base - 1, UR_NAK_REM_ACCESS_ERR);
	ASSERT_EQ(tnet_inject(&f.net, 1, 0, pkt, len), 0);
	len = nak_pkt(pkt, aq, base + 3, UR_NAK_INV_REQ);
	ASSERT_EQ(tnet_inject(&f.net, 1, 0, pkt, len), 0);
	len = craft(pkt, UR_OP_RC_ACKNOWLEDGE, aq, base + 3,
		    &(struct ur_pkt){ .aeth = { ur_aeth_ack(0x1f), 9 } },
		    NULL, 0);
	ASSERT_EQ(tnet_inject(&f.net, 1, 0, pkt, len), 0);
	n += 3;
	ASSERT_EQ(c->rx_duplicate - dup + c->rx_drop_psn - never, n);
	ASSERT_GE(c->rx_duplicate - dup, 1);
	ASSERT_GE(c->rx_drop_psn - never, 2);
	ASSERT_EQ(ur_qp_unacked(f.a.qp), 3);
	tfix_no_cqe(&f.a.scq);
	ASSERT_EQ(f.a.qp->state, UR_QPS_RTS);
	ASSERT_EQ(c->rx_nak_other, 0);

	/* An ACK inside the window is taken: base acknowledged. */
	len = craft(pkt, UR_OP_RC_ACKNOWLEDGE, aq, base,
		    &(struct ur_pkt){ .aeth = { ur_aeth_ack(0x1f), 1 } },
		    NULL, 0);
	ASSERT_EQ(tnet_inject(&f.net, 1, 0, pkt, len), 0);
	ASSERT_EQ(ur_qp_unacked(f.a.qp), 2);
	ASSERT_EQ(tfix_cqe(&f.a.scq).wr_id, 0);
	/* The control: a NAK for a PSN in flight ends the QP as IBTA says. */
	len = nak_pkt(pkt, aq, base + 2, UR_NAK_REM_ACCESS_ERR);
	ASSERT_EQ(tnet_inject(&f.net, 1, 0, pkt, len), 0);
	ASSERT_EQ(c->rx_nak_other, 1);
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_SUCCESS); /* base+1 */
	ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_REM_ACCESS_ERR);
	ASSERT_EQ(f.a.qp->state, UR_QPS_ERR);
	tfix_fini(&f);
}

struct capr {
	int n;
	uint32_t len[8];
	uint8_t pkt[8][64];
};

static void tap_reads(struct tnet *net, const uint8_t *d, uint32_t len,
		      void *arg)
{
	struct capr *c = arg;

	(void)net;
	if (d[0] == UR_OP_RC_RDMA_READ_REQUEST && c->n < 8 &&
	    len <= sizeof(c->pkt[0])) {
		memcpy(c->pkt[c->n], d, len);
		c->len[c->n++] = len;
	}
}

/* b answers what b sent for one injected request. */
static uint64_t answers(struct tfix *f, const uint8_t *p, uint32_t len)
{
	uint64_t before = f->net.nodes[1].dev.cnt.tx_packets;

	ASSERT_EQ(tnet_inject(&f->net, 0, 1, p, len), 0);
	return f->net.nodes[1].dev.cnt.tx_packets - before;
}

/* A duplicate READ is served again only inside one of the last
 * max_dest_rd_atomic READ/atomics b executed, for part of its range
 * (9.7.5.1.5); older ones, or more than was asked, get nothing. */
static void t_dup_read_window(void)
{
	struct tconn_attr ca = conn(2);
	struct ur_counters *cb;
	struct capr c = { 0 };
	static uint8_t p[64];
	struct ur_pkt d;
	uint32_t len, epsn;
	uint64_t drops;
	struct tfix f;

	tfix_init(&f, UR_QPT_RC, &ca);
	cb = &f.net.nodes[1].dev.cnt;
	tfix_fill(f.b.buf, TBUF, 5);
	f.net.tap = tap_reads;
	f.net.tap_arg = &c;
	/* Four READs of 2 KiB (2 response PSNs each at MTU 1024). */
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_READ, (uint64_t)i,
				    (uint32_t)i * 2048, 2048,
				    (uintptr_t)f.b.buf + (uint32_t)i * 2048,
				    f.b.mr->rkey, UR_SEND_SIGNALED), 0);
		ASSERT_EQ(tfix_run_ok(&f, &f.a.scq).wr_id, i);
	}
	f.net.tap = NULL;
	ASSERT_EQ(c.n, 4);
	ASSERT_MEM_EQ(f.a.buf, f.b.buf, 4 * 2048);
	epsn = ur_psn_add(ca.psn_a, 8);
	drops = cb->rx_drop_dup_rd;

	/* The last two are kept: each served again, in full. */
	ASSERT_EQ(answers(&f, c.pkt[3], c.len[3]), 2);
	ASSERT_EQ(answers(&f, c.pkt[2], c.len[2]), 2);
	ASSERT_EQ(cb->rx_drop_dup_rd, drops);
	/* The rest of the last one, from its second response. */
	memcpy(p, c.pkt[3], c.len[3]);
	ASSERT_EQ(ur_pkt_decode(p, c.len[3], &d), UR_DEC_OK);
	d.reth.va += 1024;
	d.reth.len = 1024;
	len = craft(p, UR_OP_RC_RDMA_READ_REQUEST, f.b.qp->qpn,
		    d.h.psn + 1, &d, NULL, 0);
	ASSERT_EQ(answers(&f, p, len), 1);
	/* The first two are gone: nothing. */
	ASSERT_EQ(answers(&f, c.pkt[0], c.len[0]), 0);
	ASSERT_EQ(answers(&f, c.pkt[1], c.len[1]), 0);
	ASSERT_EQ(cb->rx_drop_dup_rd, drops + 2);
	/* Kept PSN, but more than it asked (a larger or another range, or
	 * another key): nothing. */
	d.reth.va -= 1024;
	d.reth.len = 64 * 1024;
	len = craft(p, UR_OP_RC_RDMA_READ_REQUEST, f.b.qp->qpn, d.h.psn, &d,
		    NULL, 0);
	ASSERT_EQ(answers(&f, p, len), 0);
	d.reth.len = 2048;
	d.reth.va += 2048;
	len = craft(p, UR_OP_RC_RDMA_READ_REQUEST, f.b.qp->qpn, d.h.psn, &d,
		    NULL, 0);
	ASSERT_EQ(answers(&f, p, len), 0);
	/* Half the PSN space behind, a valid key for all of b's buffer. */
	d.reth.va = (uintptr_t)f.b.buf;
	d.reth.len = TBUF;
	len = craft(p, UR_OP_RC_RDMA_READ_REQUEST, f.b.qp->qpn,
		    epsn - (1u << 23), &d, NULL, 0);
	ASSERT_EQ(answers(&f, p, len), 0);
	len = craft(p, UR_OP_RC_RDMA_READ_REQUEST, f.b.qp->qpn, epsn - 9, &d,
		    NULL, 0);
	ASSERT_EQ(answers(&f, p, len), 0);
	ASSERT_EQ(cb->rx_drop_dup_rd, drops + 6);
	ASSERT_EQ(f.b.qp->state, UR_QPS_RTS);
	ASSERT_EQ(f.a.qp->state, UR_QPS_RTS);
	/* The answers reach a as stale responses: nothing completes. */
	tnet_run(&f.net, f.net.now + 1000000000ull);
	tfix_no_cqe(&f.a.scq);
	/* Both go on. */
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_READ, 9, 0, 4096,
			    (uintptr_t)f.b.buf + 8192, f.b.mr->rkey,
			    UR_SEND_SIGNALED), 0);
	ASSERT_EQ(tfix_run_ok(&f, &f.a.scq).wr_id, 9);
	ASSERT_MEM_EQ(f.a.buf, f.b.buf + 8192, 4096);
	tfix_fini(&f);
}

/* An atomic no longer kept is not answered (nor executed again). */
static void t_dup_atomic_window(void)
{
	struct tconn_attr ca = conn(1);
	static uint8_t p[64];
	struct ur_counters *cb;
	uint64_t v, before;
	uint32_t len;
	struct ur_pkt x = { 0 };
	struct tfix f;

	tfix_init(&f, UR_QPT_RC, &ca);
	cb = &f.net.nodes[1].dev.cnt;
	memset(f.b.buf, 0, 64);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(tfix_send(&f.a, UR_WR_ATOMIC_FETCH_AND_ADD,
				    (uint64_t)i, 0, 8, (uintptr_t)f.b.buf,
				    f.b.mr->rkey, UR_SEND_SIGNALED), 0);
		tfix_run_ok(&f, &f.a.scq);
	}
	memcpy(&v, f.b.buf, 8);
	x.atm = (struct ur_atmeth){ (uintptr_t)f.b.buf, f.b.mr->rkey, 1, 0 };
	/* The second is kept: answered, not executed. */
	before = cb->tx_packets;
	len = craft(p, UR_OP_RC_FETCH_ADD, f.b.qp->qpn, ca.psn_a + 1, &x,
		    NULL, 0);
	ASSERT_EQ(tnet_inject(&f.net, 0, 1, p, len), 0);
	ASSERT_EQ(cb->tx_packets, before + 1);
	/* The first is not: dropped and counted. */
	len = craft(p, UR_OP_RC_FETCH_ADD, f.b.qp->qpn, ca.psn_a, &x, NULL, 0);
	ASSERT_EQ(tnet_inject(&f.net, 0, 1, p, len), 0);
	ASSERT_EQ(cb->tx_packets, before + 1);
	ASSERT_EQ(cb->rx_drop_dup_rd, 1);
	ASSERT_MEM_EQ(f.b.buf, &v, 8);
	ASSERT_EQ(f.b.qp->state, UR_QPS_RTS);
	tfix_fini(&f);
}

/* UC takes no ACKs, but its requests are checked the same way. */
static void t_offpath_uc(void)
{
	struct tconn_attr ca = conn(0);
	static uint8_t pkt[2048], data[256];
	struct ur_pkt x = { 0 };
	uint32_t len;
	struct tfix f;

	tfix_init(&f, UR_QPT_UC, &ca);
	memset(data, 0xaa, sizeof(data));
	memset(f.b.buf, 0, 4096);
	x.reth = (struct ur_reth){ (uintptr_t)f.b.buf, f.b.mr->rkey, 256 };
	len = craft(pkt, UR_OP_UC_RDMA_WRITE_ONLY, f.b.qp->qpn, ca.psn_a, &x,
		    data, 256);
	ASSERT_EQ(tnet_inject(&f.net, EVIL, 1, pkt, len), 0);
	ASSERT_EQ(f.net.nodes[1].dev.cnt.rx_drop_offpath, 1);
	ASSERT(ur_test_all(f.b.buf, 0, 4096));
	/* From a's address it lands. */
	ASSERT_EQ(tnet_inject(&f.net, 0, 1, pkt, len), 0);
	ASSERT(ur_test_all(f.b.buf, 0xaa, 256));
	ASSERT_EQ(f.b.qp->state, UR_QPS_RTS);
	tfix_fini(&f);
}

static const struct ur_test_case tests[] = {
	{ "offpath_uc", t_offpath_uc },
	{ "offpath", t_offpath },
	{ "ack_in_flight", t_ack_in_flight },
	{ "dup_read_window", t_dup_read_window },
	{ "dup_atomic_window", t_dup_atomic_window },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

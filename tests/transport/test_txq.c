// SPDX-License-Identifier: MIT
/*
 * The transmit policy (ur_txq.h) on its own and in a network: plain ACKs
 * that a newer one supersedes, what orders a queue, adopting a queue into
 * another, the doorbell-hold rule, the busy QP's ACK backlog, and a
 * transfer over the in-memory network with the engine's batching (tnet.txq)
 * under loss. Seeded (the loss pattern).
 */
#include "tfix.h"
#include "ur_txq.h"

#include <stdlib.h>
#include <string.h>

static struct ur_txq *txq_new(void)
{
	struct ur_txq *q = calloc(1, sizeof(*q));

	ASSERT(q);
	return q;
}

/* Put a packet made with the codec into @q as a host would: @route, the
 * destination 10.0.0.@dst. */
static struct ur_txq_slot *put(struct ur_txq *q, void *host, int route,
			       uint8_t dst, const struct ur_pkt *p,
			       uint32_t pl_len, struct ur_counters *cnt)
{
	static const uint8_t pl[4096];
	struct ur_pktbuf *b = ur_txq_alloc(q, host, 8192);
	struct ur_txq_slot *s;
	int n;

	ASSERT(b);
	s = b->host_priv;
	n = ur_pkt_encode(b->data, b->cap, p, pl, pl_len);
	ASSERT_GT(n, 0);
	b->len = (uint32_t)n;
	b->path.dst[0] = 10;
	b->path.dst[3] = dst;
	s->route = route;
	ur_txq_commit(q, b, cnt);
	return s;
}

static struct ur_pkt ack_of(uint32_t dqpn, uint32_t psn, uint8_t syndrome)
{
	return (struct ur_pkt){
		.h = { .opcode = UR_OP_RC_ACKNOWLEDGE, .pkey = 0xffff,
		       .dqpn = dqpn, .psn = psn },
		.aeth = { .syndrome = syndrome, .msn = psn },
	};
}

static unsigned int ready(const struct ur_txq *q)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < q->used; i++)
		n += q->slot[i].ready;
	return n;
}

static void coalesce(void)
{
	struct ur_txq *q = txq_new();
	struct ur_counters cnt = { 0 };
	struct ur_pkt a1 = ack_of(0x11, 5, ur_aeth_ack(31));
	struct ur_pkt a2 = ack_of(0x11, 9, ur_aeth_ack(31));
	struct ur_pkt other_qp = ack_of(0x12, 9, ur_aeth_ack(31));
	struct ur_pkt nak = ack_of(0x11, 10, ur_aeth_nak(UR_NAK_PSN_SEQ_ERR));
	struct ur_txq_slot *s1, *s2, *s3, *s4, *s5, *s6;
	int host;

	s1 = put(q, &host, 3, 2, &a1, 0, &cnt);
	ASSERT(!q->ordered); /* a plain ACK may wait */
	s2 = put(q, &host, 3, 2, &a2, 0, &cnt);
	/* The newer ACK of the same QP to the same peer replaces the older
	 * (9.7.5.1.2: cumulative). */
	ASSERT(!s1->ready && s2->ready);
	ASSERT_EQ(cnt.tx_ack_coalesced, 1);
	/* Not another QP's, another route's, another peer's... */
	s3 = put(q, &host, 3, 2, &other_qp, 0, &cnt);
	s4 = put(q, &host, 4, 2, &a2, 0, &cnt);
	s5 = put(q, &host, 3, 7, &a2, 0, &cnt);
	ASSERT(s2->ready && s3->ready && s4->ready && s5->ready);
	ASSERT_EQ(cnt.tx_ack_coalesced, 1);
	/* ... nor one with other BTH byte-4 bits (BECN, extensions). */
	a2.h.becn = true;
	s6 = put(q, &host, 3, 2, &a2, 0, &cnt);
	ASSERT(s2->ready && s6->ready);
	/* A NAK replaces nothing and orders the queue. */
	put(q, &host, 3, 2, &nak, 0, &cnt);
	ASSERT(s6->ready && q->ordered);
	ASSERT_EQ(cnt.tx_ack_coalesced, 1);
	ASSERT_EQ(ready(q), 6);
	ur_txq_reset(q);
	ASSERT(!ur_txq_pending(q) && !q->ordered);
	free(q);
}

static void order_and_full(void)
{
	struct ur_txq *q = txq_new();
	struct ur_counters cnt = { 0 };
	struct ur_pkt w = { .h = { .opcode = UR_OP_RC_RDMA_WRITE_MIDDLE,
				   .pkey = 0xffff, .dqpn = 0x11 } };
	int host;

	put(q, &host, 3, 2, &w, 1024, &cnt);
	ASSERT(ur_txq_ordered(q) && ur_txq_single(q));
	ASSERT(ur_txq_alloc(q, &host, UR_TXQ_PKT_MAX + 1) == NULL);
	for (unsigned int i = 1; i < UR_TXQ_SLOTS - 1; i++)
		put(q, &host, 3, 2, &w, 64, &cnt);
	/* The last slot: commit says full, and nothing more is handed out. */
	{
		struct ur_pktbuf *b = ur_txq_alloc(q, &host, 100);

		ASSERT(b);
		b->len = (uint32_t)ur_pkt_encode(b->data, b->cap, &w, NULL, 0);
		ASSERT(ur_txq_commit(q, b, &cnt));
	}
	ASSERT(ur_txq_alloc(q, &host, 100) == NULL);
	free(q);
}

static void adopt(void)
{
	struct ur_txq *from = txq_new(), *to = txq_new();
	struct ur_counters cnt = { 0 };
	struct ur_pkt w = { .h = { .opcode = UR_OP_RC_RDMA_WRITE_MIDDLE,
				   .pkey = 0xffff, .dqpn = 0x11, .psn = 7 } };
	struct ur_pkt a = ack_of(0x11, 5, ur_aeth_ack(31));
	static uint8_t payload[512];
	struct ur_txq_slot *s;
	struct ur_txq_parts x;
	int host;

	/* A zero-copy packet: headers, then pad + ICRC after them, payload
	 * elsewhere; adopting copies it in (the memory may go after). */
	s = put(from, &host, 3, 2, &w, 0, &cnt);
	memset(payload, 0x5a, sizeof(payload));
	s->pb.ext = payload;
	s->pb.len += sizeof(payload);
	put(from, &host, 3, 2, &a, 0, &cnt);
	s = put(from, &host, 3, 2, &a, 0, &cnt); /* supersedes the first */
	ASSERT_EQ(ur_txq_adopt(to, from), 2);
	ASSERT(!ur_txq_pending(from) && to->ordered);
	ASSERT(to->slot[0].pb.ext == NULL && to->slot[0].pb.data == to->slot[0].data);
	x = ur_txq_parts(&to->slot[0].pb);
	ASSERT_EQ(x.payload, sizeof(payload));
	ASSERT(ur_test_all(to->slot[0].data + x.hdr, 0x5a, sizeof(payload)));
	ASSERT_EQ(ur_bth_psn(to->slot[0].data), 7);
	ASSERT(to->slot[1].pb.host_priv == &to->slot[1]);
	ASSERT_EQ(ur_bth_psn(to->slot[1].data), 5);
	(void)s;
	free(from);
	free(to);
}

static void hold_rule(void)
{
	/* Both this post and the last made one packet, and
	 * UR_TXQ_HOLD_INFLIGHT PSNs will be in flight: hold. A ping-pong
	 * (nothing unacknowledged at its post) never holds. */
	ASSERT(ur_txq_hold_due(true, true, UR_TXQ_HOLD_INFLIGHT - 1, 0));
	ASSERT(!ur_txq_hold_due(true, true, UR_TXQ_HOLD_INFLIGHT - 2, 0));
	ASSERT(!ur_txq_hold_due(true, true, 0, 0));
	ASSERT(!ur_txq_hold_due(false, true, 1000, 0));
	ASSERT(!ur_txq_hold_due(true, false, 1000, 0));
	/* Held packets are not on the wire and bring no ACK: only sent ones
	 * count, so a batch never waits with nothing in flight. */
	ASSERT(ur_txq_hold_due(true, true, UR_TXQ_HOLD_INFLIGHT - 1 + 10, 10));
	ASSERT(!ur_txq_hold_due(true, true, UR_TXQ_HOLD_INFLIGHT - 2 + 10, 10));
	ASSERT(!ur_txq_hold_due(true, true, 20, 20));
	ASSERT(!ur_txq_hold_due(true, true, 3, 5)); /* inconsistent: no */
	ASSERT(UR_TXQ_HOLD_INFLIGHT >= 2);
	ASSERT(UR_TXQ_HOLD_MAX <= UR_TXQ_SLOTS);
}

/* A held batch outlives an ACK's unlock only while enough PSNs are on
 * the wire to bring another ACK: never with nothing sent in flight, never
 * once full, never when empty. */
static void hold_keep_rule(void)
{
	const unsigned int t = UR_TXQ_HOLD_INFLIGHT;

	ASSERT(ur_txq_hold_keep(t + 5, 5));
	ASSERT(!ur_txq_hold_keep(t + 4, 5));
	ASSERT(!ur_txq_hold_keep(5, 5)); /* all held, none sent */
	ASSERT(!ur_txq_hold_keep(1000, 0));
	ASSERT(!ur_txq_hold_keep(1000, UR_TXQ_HOLD_MAX));
	for (uint32_t unacked = 0; unacked < 200; unacked++)
		for (unsigned int held = 0; held <= UR_TXQ_SLOTS; held++)
			if (ur_txq_hold_keep(unacked, held))
				ASSERT(held < UR_TXQ_HOLD_MAX &&
				       unacked - held >= t);
}

/*
 * The policy as a host runs it, against a peer that acknowledges whatever
 * reached it each round: a poster streams one-packet messages, an ACK
 * unlocks the QP between posts, and when the poster stops (it polls) the
 * held batch leaves at the latest at the ACK of what was in flight, with
 * no timer: one round after the last post, and no batch larger than a GSO
 * send.
 */
static void hold_drains_by_acks(void)
{
	for (unsigned int posts = 1; posts < 300; posts += 7) {
		uint32_t wire = 0; /* sent, unacknowledged */
		unsigned int held = 0, sent = 0, rounds = 0, biggest = 0;
		bool last_small = false;

		for (unsigned int p = 0; p < posts; p++) {
			if (ur_txq_hold_due(true, last_small, wire + held,
					    held)) {
				ASSERT(wire > 0); /* an ACK is owed */
				held++;
				if (held == UR_TXQ_HOLD_MAX) {
					wire += held, sent += held;
					biggest = held > biggest ? held : biggest;
					held = 0;
				}
			} else {
				/* sent at once, after what is held */
				wire += held + 1, sent += held + 1;
				held = 0;
			}
			last_small = true;
			if (p % 3 == 2) { /* an ACK of half the wire */
				wire /= 2;
				if (held && !ur_txq_hold_keep(wire + held, held)) {
					wire += held, sent += held;
					biggest = held > biggest ? held : biggest;
					held = 0;
				}
			}
		}
		/* The poster stops; only ACKs come (each of all that reached
		 * the peer), no poll, no timer. */
		while (held && rounds < 100) {
			wire = 0;
			rounds++;
			if (!ur_txq_hold_keep(wire + held, held)) {
				sent += held;
				held = 0;
			}
		}
		ASSERT_EQ(held, 0);
		ASSERT(rounds <= 1);
		ASSERT_EQ(sent, posts);
		ASSERT(biggest <= UR_TXQ_HOLD_MAX);
	}
}

static void may_place(void)
{
	uint8_t b[64] = { 0 };

	b[0] = UR_OP_RC_RDMA_WRITE_MIDDLE;
	ASSERT(ur_rx_may_place(b, sizeof(b)));
	ASSERT(!ur_rx_may_place(b, UR_BTH_LEN + UR_ICRC_LEN - 1));
	b[0] = UR_OP_RC_RDMA_WRITE_LAST;
	ASSERT(!ur_rx_may_place(b, sizeof(b)));
	b[0] = UR_OP_RC_SEND_MIDDLE;
	ASSERT(!ur_rx_may_place(b, sizeof(b)));
}

/* The ACK backlog: plain ACKs only, bounded, run in order through the QP's
 * receive path by the lock's holder. */
static void ackq(void)
{
	struct tfix f;
	struct ur_ackq *aq = calloc(1, sizeof(*aq));
	struct ur_rxinfo ri;
	uint8_t buf[64];
	struct ur_pkt a;
	int n;

	ASSERT(aq);
	tfix_init(&f, UR_QPT_RC, NULL);
	tnet_rxinfo(1, 0, &ri);
	/* Four one-packet WRITEs from a, held in flight (nothing runs). */
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, (uint64_t)i, 0, 64,
				    (uintptr_t)f.b.buf, f.b.mr->rkey,
				    UR_SEND_SIGNALED), 0);
	ASSERT_EQ(ur_qp_unacked(f.a.qp), 4);
	/* Not a plain ACK: refused (a NAK must not wait). */
	a = ack_of(f.a.qp->qpn, f.ca.psn_a, ur_aeth_nak(UR_NAK_PSN_SEQ_ERR));
	n = ur_pkt_encode(buf, sizeof(buf), &a, NULL, 0);
	ASSERT(!ur_ackq_push(aq, buf, (size_t)n, &ri));
	/* ACKs of PSN psn_a+1, then +3 (cumulative). */
	a = ack_of(f.a.qp->qpn, f.ca.psn_a + 1, ur_aeth_ack(31));
	n = ur_pkt_encode(buf, sizeof(buf), &a, NULL, 0);
	ASSERT(ur_ackq_push(aq, buf, (size_t)n, &ri));
	a = ack_of(f.a.qp->qpn, f.ca.psn_a + 3, ur_aeth_ack(31));
	n = ur_pkt_encode(buf, sizeof(buf), &a, NULL, 0);
	ASSERT(ur_ackq_push(aq, buf, (size_t)n, &ri));
	ASSERT(!ur_ackq_empty(aq));
	ASSERT_EQ(ur_qp_unacked(f.a.qp), 4); /* nothing ran yet */
	ASSERT_EQ(ur_ackq_run(aq, f.a.qp, f.net.now), 2);
	ASSERT(ur_ackq_empty(aq));
	ASSERT_EQ(ur_qp_unacked(f.a.qp), 0);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(tfix_cqe(&f.a.scq).status, UR_WC_SUCCESS);
	/* Bounded: the ring takes UR_ACKQ_LEN, then refuses. */
	for (int i = 0; i < UR_ACKQ_LEN; i++)
		ASSERT(ur_ackq_push(aq, buf, (size_t)n, &ri));
	ASSERT(!ur_ackq_push(aq, buf, (size_t)n, &ri));
	ASSERT_EQ(ur_ackq_run(aq, f.a.qp, f.net.now), UR_ACKQ_LEN);
	tfix_fini(&f);
	free(aq);
}

/* ACK packets on the wire from b (the responder). */
static void count_acks(struct tnet *net, const uint8_t *d, uint32_t len,
		       void *arg)
{
	(void)net;
	if (len >= UR_BTH_LEN && ur_bth_opcode(d) == UR_OP_RC_ACKNOWLEDGE)
		++*(uint64_t *)arg;
}

/* A stream of small WRITEs over the in-memory network (200 at once, each
 * a one-packet message the responder acknowledges), with and without the
 * engine's transmit policy; @loss: the share of packets lost; @later: the
 * engine's ACKs owed to the batch's end (tnet.ack_later); @bidir: b streams
 * the same to a meanwhile, so its requests and the ACKs it owes interleave.
 * The data arrives either way; with the policy, b sends one ACK per QP per
 * receive batch instead of one per message. *made: the packets b made. */
static uint64_t write_run(bool txq, bool later, bool bidir, double loss,
			  uint64_t *coalesced, uint64_t *made)
{
	enum { N = 200, LEN = 512 };
	struct tfix f;
	uint64_t acks = 0;

	tfix_init(&f, UR_QPT_RC, NULL);
	f.net.txq = txq;
	f.net.ack_later = later;
	f.net.f.loss = loss;
	f.net.tap = count_acks;
	f.net.tap_arg = &acks;
	tfix_fill(f.a.buf, N * LEN, (uint32_t)ur_test_seed);
	tfix_fill(f.b.buf + N * LEN, N * LEN, (uint32_t)ur_test_seed + 1);
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, (uint64_t)i,
				    (uint32_t)(i * LEN), LEN,
				    (uintptr_t)f.b.buf + (uint64_t)i * LEN,
				    f.b.mr->rkey, UR_SEND_SIGNALED), 0);
		if (bidir)
			ASSERT_EQ(tfix_send(&f.b, UR_WR_RDMA_WRITE, (uint64_t)i,
					    (uint32_t)((N + i) * LEN), LEN,
					    (uintptr_t)f.a.buf +
						    (uint64_t)(N + i) * LEN,
					    f.a.mr->rkey, UR_SEND_SIGNALED), 0);
	}
	tnet_run(&f.net, f.net.now + 10ull * 1000 * 1000 * 1000);
	for (int s = 0; s < (bidir ? 2 : 1); s++)
		for (int i = 0; i < N; i++) {
			struct ur_cqe e = tfix_cqe(s ? &f.b.scq : &f.a.scq);

			ASSERT_EQ(e.status, UR_WC_SUCCESS);
			ASSERT_EQ(e.wr_id, (uint64_t)i);
		}
	ASSERT_MEM_EQ(f.b.buf, f.a.buf, N * LEN);
	if (bidir)
		ASSERT_MEM_EQ(f.a.buf + N * LEN, f.b.buf + N * LEN, N * LEN);
	if (loss == 0) { /* nothing went twice, nor waited for a timer */
		ASSERT_EQ(f.a.node->dev.cnt.tx_timeouts +
				  f.b.node->dev.cnt.tx_timeouts, 0);
		ASSERT_EQ(f.a.node->dev.cnt.tx_retransmit +
				  f.b.node->dev.cnt.tx_retransmit, 0);
	}
	*coalesced = f.b.node->dev.cnt.tx_ack_coalesced;
	*made = f.b.node->dev.cnt.tx_packets;
	tfix_fini(&f);
	return acks;
}

static void network(void)
{
	uint64_t c_plain, c_txq, c_loss, m;
	uint64_t plain = write_run(false, false, false, 0, &c_plain, &m);
	uint64_t txq = write_run(true, false, false, 0, &c_txq, &m);
	uint64_t lossy = write_run(true, false, false, 0.02, &c_loss, &m);

	printf("  ACKs for 200 WRITEs of 512 B: %llu sent without the policy, "
	       "%llu with (%llu coalesced); %llu under 2%% loss (%llu "
	       "coalesced)\n",
	       (unsigned long long)plain, (unsigned long long)txq,
	       (unsigned long long)c_txq, (unsigned long long)lossy,
	       (unsigned long long)c_loss);
	ASSERT_EQ(c_plain, 0);
	ASSERT_GT(c_txq, 0);
	ASSERT_LT(txq, plain);
}

/* ACKs owed to the receive batch's end (ur_rxinfo.ack_later): the same
 * ACKs on the wire as when each request's ACK is made and then superseded
 * in the queue, but only those are made; with b streaming too, its
 * requests and the ACKs it owes keep their order (no retransmission on a
 * loss-free network). Under loss the data still arrives. */
static void ack_later(void)
{
	uint64_t c_made, c_owed, c, made_q, made_l, m;
	uint64_t q = write_run(true, false, false, 0, &c_made, &made_q);
	uint64_t l = write_run(true, true, false, 0, &c_owed, &made_l);

	printf("  200 WRITEs: %llu ACKs sent of %llu made, %llu when owed to "
	       "the batch's end (%llu made)\n", (unsigned long long)q,
	       (unsigned long long)made_q, (unsigned long long)l,
	       (unsigned long long)made_l);
	ASSERT_EQ(l, q);
	ASSERT_EQ(c_owed, c_made);
	ASSERT_GT(made_q, q);   /* superseded ones were made */
	ASSERT_EQ(made_l, l);   /* b made nothing but the ACKs it sent */
	(void)write_run(true, true, true, 0, &c, &m);
	(void)write_run(true, true, false, 0.05, &c, &m);
	(void)write_run(true, true, true, 0.05, &c, &m);
}

static const struct ur_test_case tests[] = {
	{ "coalesce", coalesce },
	{ "order_and_full", order_and_full },
	{ "adopt", adopt },
	{ "hold_rule", hold_rule },
	{ "hold_keep_rule", hold_keep_rule },
	{ "hold_drains_by_acks", hold_drains_by_acks },
	{ "may_place", may_place },
	{ "ackq", ackq },
	{ "network", network },
	{ "ack_later", ack_later },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

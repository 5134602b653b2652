// SPDX-License-Identifier: MIT
/*
 * UROCE_CC=auto on virtual time (src/transport/ur_cc_neg.c, docs/cc.md
 * "Between uroce ends: auto"): two negotiating ends hello each other going RTR
 * and both switch their requesters to Swift; against an end that does
 * not negotiate (a standard peer, or a uroce device with another
 * UROCE_CC) the QP stays DCQCN, its hellos go unanswered and it gives up,
 * and every RoCE packet on the wire is byte for byte that of two DCQCN
 * ends; with every hello lost both stay DCQCN.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tfix.h"
#include "ur_cc.h"
#include "ur_qp_priv.h"
#include "ur_test.h"

struct neg_run {
	struct tfix f;
	uint64_t hash;  /* FNV-1a over the RoCE packets both sent */
	uint64_t pkts;
};

static bool drop_hellos;

static void setup(struct ur_dev *dev, int node, void *arg)
{
	const bool *autom = arg;

	if (drop_hellos)
		((struct tnode *)dev->host)->net->f.drop_hellos = 1 << 30;
	dev->cc_auto = autom[node];
	dev->cc_auto_algo = UR_CC_SWIFT;
}

/* The bytes, but a RETH's address relative to the target buffer (each
 * fixture's buffers lie elsewhere) and no ICRC (it covers that address). */
static void tap(struct tnet *net, const uint8_t *d, uint32_t len, void *arg)
{
	struct neg_run *r = arg;
	struct ur_pkt pkt;
	uint8_t c[UR_BTH_LEN + 8];
	uint32_t skip = 0;

	(void)net;
	if (ur_pkt_decode(d, len, &pkt) != UR_DEC_OK)
		return;
	if (pkt.mask & UR_HDR_RETH) {
		const uint8_t *t = pkt.h.dqpn == r->f.b.qp->qpn ? r->f.b.buf
							       : r->f.a.buf;

		memcpy(c, d, UR_BTH_LEN);
		ur_put64(c + UR_BTH_LEN, pkt.reth.va - (uintptr_t)t);
		skip = sizeof(c);
	}
	for (uint32_t i = 0; i + UR_ICRC_LEN < len; i++)
		r->hash = (r->hash ^ (i < skip ? c[i] : d[i])) * 0x100000001b3ull;
	r->pkts++;
}

/* a and b connected (auto or not), 50 us for the hellos, then a WRITE of
 * 256 KiB each way. */
static void neg_run(struct neg_run *r, bool auto_a, bool auto_b)
{
	bool autom[2] = { auto_a, auto_b };

	memset(r, 0, sizeof(*r));
	r->hash = 0xcbf29ce484222325ull;
	tfix_init_dev(&r->f, UR_QPT_RC, NULL, setup, autom);
	r->f.net.tap = tap;
	r->f.net.tap_arg = r;
	tfix_fill(r->f.a.buf, TBUF, (uint32_t)ur_test_seed);
	tfix_fill(r->f.b.buf, TBUF, (uint32_t)ur_test_seed + 7);
	tnet_run(&r->f.net, r->f.net.now + 50000);
	ASSERT_EQ(tfix_send(&r->f.a, UR_WR_RDMA_WRITE, 1, 0, 262144,
			    (uintptr_t)r->f.b.buf, r->f.b.mr->rkey,
			    UR_SEND_SIGNALED), 0);
	ASSERT_EQ(tfix_send(&r->f.b, UR_WR_RDMA_WRITE, 2, 262144, 262144,
			    (uintptr_t)r->f.a.buf + 262144, r->f.a.mr->rkey,
			    UR_SEND_SIGNALED), 0);
	tfix_run_ok(&r->f, &r->f.a.scq);
	tfix_cqe(&r->f.b.scq);
	/* past the negotiation's end (300 ms): a QP left alone gave up */
	tnet_run(&r->f.net, r->f.net.now + 400ull * 1000 * 1000);
	ASSERT_EQ(memcmp(r->f.a.buf, r->f.b.buf, 262144), 0);
	ASSERT_EQ(memcmp(r->f.a.buf + 262144, r->f.b.buf + 262144, 262144), 0);
}

static uint32_t algo(const struct ur_qp *qp)
{
	return qp->priv->cc.cc.p.algo;
}

static void test_negotiate(void)
{
	struct neg_run plain, r;

	/* Neither negotiates: DCQCN, no hello; the reference bytes. */
	neg_run(&plain, false, false);
	ASSERT_EQ(algo(plain.f.a.qp), UR_CC_DCQCN);
	ASSERT_EQ_U64(plain.f.net.hellos, 0);
	tfix_fini(&plain.f);

	/* Both: Swift on both requesters, one hello and one answer. */
	neg_run(&r, true, true);
	printf("  both auto: hellos %llu (a sent %llu, b %llu; took %llu, "
	       "%llu), a %s b %s, windows %u %u\n",
	       (unsigned long long)r.f.net.hellos,
	       (unsigned long long)r.f.a.node->dev.cnt.tx_cc_hello,
	       (unsigned long long)r.f.b.node->dev.cnt.tx_cc_hello,
	       (unsigned long long)r.f.a.node->dev.cnt.rx_cc_hello,
	       (unsigned long long)r.f.b.node->dev.cnt.rx_cc_hello,
	       r.f.a.qp->priv->cc.cc.ops->name, r.f.b.qp->priv->cc.cc.ops->name,
	       ur_qp_cc_window(r.f.a.qp), ur_qp_cc_window(r.f.b.qp));
	ASSERT_EQ(algo(r.f.a.qp), UR_CC_SWIFT);
	ASSERT_EQ(algo(r.f.b.qp), UR_CC_SWIFT);
	ASSERT(ur_qp_cc_negotiated(r.f.a.qp));
	ASSERT(ur_qp_cc_negotiated(r.f.b.qp));
	ASSERT_GT(ur_qp_cc_window(r.f.a.qp), 0);
	ASSERT_GE(r.f.a.node->dev.cnt.rx_cc_hello, 1);
	ASSERT_GE(r.f.b.node->dev.cnt.rx_cc_hello, 1);
	ASSERT_EQ_U64(r.f.a.node->dev.cnt.cc_auto_switched, 1);
	ASSERT_EQ_U64(r.f.b.node->dev.cnt.cc_auto_switched, 1);
	ASSERT_EQ_U64(r.f.a.node->dev.cnt.cc_neg_timeout +
			      r.f.b.node->dev.cnt.cc_neg_timeout, 0);
	/* Both hellos and both answers, no resend: tnet connects its QPs
	 * at the network's time (it connected them at 0 with the clock at
	 * 1 ms, and every first resend went at once: 8). */
	ASSERT_EQ_U64(r.f.net.hellos, 4);
	/* The owner's choice ends the negotiation for that QP. */
	{
		struct ur_cc_params p = r.f.a.qp->priv->cc.cc.p;

		p.algo = UR_CC_NONE;
		ASSERT_EQ(ur_qp_set_cc(r.f.a.qp, &p, r.f.net.now), 0);
		ASSERT(!ur_qp_cc_negotiated(r.f.a.qp));
	}
	tfix_fini(&r.f);

	/* One end does not negotiate, either side: DCQCN both ways, and
	 * every RoCE packet is that of two DCQCN ends; the hellos (to QP1,
	 * not RoCE data) go unanswered, resent, then given up. */
	for (int side = 0; side < 2; side++) {
		struct tnode *asker;

		neg_run(&r, side == 0, side == 1);
		asker = side ? r.f.b.node : r.f.a.node;
		ASSERT_EQ(algo(r.f.a.qp), UR_CC_DCQCN);
		ASSERT_EQ(algo(r.f.b.qp), UR_CC_DCQCN);
		ASSERT_EQ_U64(r.hash, plain.hash);
		ASSERT_EQ_U64(r.pkts, plain.pkts);
		ASSERT_GE(r.f.net.hellos, 3);
		ASSERT_EQ_U64(asker->dev.cnt.rx_cc_hello, 0);
		ASSERT_EQ_U64(asker->dev.cnt.cc_neg_timeout, 1);
		ASSERT_EQ_U64(r.f.a.node->dev.cnt.cc_auto_switched +
				      r.f.b.node->dev.cnt.cc_auto_switched, 0);
		tfix_fini(&r.f);
	}

	/* Every hello lost: both stay DCQCN (correct, as with a standard
	 * peer). */
	drop_hellos = true;
	neg_run(&r, true, true);
	ASSERT_EQ(algo(r.f.a.qp), UR_CC_DCQCN);
	ASSERT_EQ(algo(r.f.b.qp), UR_CC_DCQCN);
	ASSERT_EQ_U64(r.hash, plain.hash);
	ASSERT_EQ_U64(r.f.a.node->dev.cnt.cc_neg_timeout +
			      r.f.b.node->dev.cnt.cc_neg_timeout, 2);
	tfix_fini(&r.f);
	drop_hellos = false;
}

/* The hello's bytes: the common part (mad.c) with attribute 0xFF03 and
 * magic "UrCc"; the selective-repeat parser refuses it and the reverse. */
static void test_hello(void)
{
	uint8_t mad[UR_SR_HELLO_LEN] = { 0 };
	struct ur_sr_hello h;

	ur_hello_put(mad, &(struct ur_hello){ .attr = UR_CC_HELLO_ATTR,
					      .magic = 0x55724363u,
					      .answer = true, .src_qpn = 0x123,
					      .dst_qpn = 0x456 });
	ASSERT_EQ(mad[16], 0xFF);
	ASSERT_EQ(mad[17], 0x03);
	ASSERT_EQ(memcmp(mad + 24, "UrCc", 4), 0);
	ASSERT_EQ(ur_cc_hello_parse(mad, sizeof(mad), &h), 0);
	ASSERT(h.answer);
	ASSERT_EQ(h.src_qpn, 0x123u);
	ASSERT_EQ(h.dst_qpn, 0x456u);
	ASSERT_EQ(ur_sr_hello_parse(mad, sizeof(mad), &h), -EBADMSG);
	ASSERT_EQ(ur_cc_hello_parse(mad, 255, &h), -EBADMSG);
	mad[17] = 0x02;
	ASSERT_EQ(ur_cc_hello_parse(mad, sizeof(mad), &h), -EBADMSG);
}


/*
 * The switch comes mid-transfer (issue 44: auto's sporadic timeouts).
 * DCQCN paces a stream under ECN marks; the hellos are late (the first
 * ones lost), and the QP switches to UROCE_CC_AUTO's algorithm while it
 * sends. Per seed: a one-way delay of 20-200 us and a marking rate of
 * 1-50 % of the packets, 2 or 3 lost hellos, a 2 Gbit/s port that drops
 * nothing. The oldest unacknowledged PSN must never stand still for 2 ms
 * (an RTT is < 0.5 ms plus the port's queue) in the 6 ms after the
 * switch, and the transport timer (4.2 ms here) must never fire: nothing
 * is lost. Without ur__cc_ack_wanted plain DCQCN stood still in 42-45 of
 * 64 seeds and dcqcn-rtt in 4 (a pacer near the 1 Mbit/s floor holds
 * AckReqs, every 64 or 8 PSNs, further apart than the timer); without the
 * probe at the switch (strand_check) Swift stranded in 6-7 of 64 (its
 * first window, 8, full of DCQCN's PSNs that ask for no ACK).
 */
static uint32_t mid_algo;
static int mid_drop;

static void setup_mid(struct ur_dev *dev, int node, void *arg)
{
	(void)node;
	(void)arg;
	dev->cc_auto = mid_algo != UR_CC_DCQCN; /* DCQCN: a standard peer's */
	dev->cc_auto_algo = mid_algo;
	((struct tnode *)dev->host)->net->f.drop_hellos = mid_drop;
}

/* The longest time (ns) a's oldest unacknowledged PSN stood still with
 * PSNs outstanding, 64 KiB WRITEs kept 8 deep until @after past a's
 * switch (or @limit). */
static uint64_t mid_run(struct tfix *f, uint64_t after, uint64_t limit)
{
	struct ur_qp_priv *p = f->a.qp->priv;
	uint64_t end = f->net.now + limit, since = f->net.now, worst = 0;
	uint32_t last = p->comp.psn;
	int inflight = 0, n;
	struct ur_cqe e[16];

	while (f->net.now < end) {
		while (inflight < 8) {
			ASSERT_EQ(tfix_send(&f->a, UR_WR_RDMA_WRITE, 1, 0, 65536,
					    (uintptr_t)f->b.buf, f->b.mr->rkey,
					    UR_SEND_SIGNALED), 0);
			inflight++;
		}
		tnet_run_until(&f->net, f->net.now + 20000);
		if (p->comp.psn != last || p->comp.psn == p->req.psn_max) {
			last = p->comp.psn;
			since = f->net.now;
		}
		if (f->net.now - since > worst)
			worst = f->net.now - since;

		while ((n = ur_cq_poll(&f->a.scq, e, 16)) > 0) {
			for (int i = 0; i < n; i++)
				ASSERT_EQ(e[i].status, UR_WC_SUCCESS);
			inflight -= n;
		}
		if (ur_qp_cc_negotiated(f->a.qp) && end > f->net.now + after)
			end = f->net.now + after;
	}
	return worst;
}

static void test_midflight(void)
{
	static const uint32_t algos[] = { UR_CC_DCQCN, UR_CC_DCQCN_RTT, UR_CC_SWIFT,
					  UR_CC_PREDICT };
	unsigned long long seed0 = ur_test_seed;
	/* timeout 10: the transport timer at 4.2 ms, not 67 */
	const struct tconn_attr ca = {
		.mtu = 1024, .timeout = 10, .retry_cnt = 7, .rnr_retry = 7,
		.min_rnr_timer = 1, .access = ACC_ALL,
		.psn_a = 100, .psn_b = 0xfffff0 };

	for (unsigned int k = 0; k < 4; k++) {
		uint64_t worst = 0, to = 0, stuck = 0, sent = 0, probes = 0;

		for (unsigned int i = 0; i < 64; i++) {
			struct tfix f;
			uint64_t w;

			ur_test_seed = seed0 + i;
			mid_algo = algos[k];
			mid_drop = 2 + (int)(ur_test_seed % 2);
			tfix_init_dev(&f, UR_QPT_RC, &ca, setup_mid, NULL);
			f.net.f.delay_ns = 20000 + tnet_rand(&f.net) % 180000;
			f.net.f.ce = 0.01 + tnet_frand(&f.net) * 0.49;

			/* a 2 Gbit/s port: few packets, a cheap test */
			f.net.txq = true; /* the engine's transmit policy */
			f.net.ack_later = true; /* and its ACKs per batch */
			f.net.f.rate_bps = 2000000000;
			f.net.f.queue_ns = 1000000000; /* no drops */
			/* 6 ms past the switch (the timer is 4.2 ms); plain
			 * DCQCN, which never switches, 12 ms */
			w = mid_run(&f, 6000000, algos[k] == UR_CC_DCQCN
							? 12000000 : 30000000);
			ASSERT_EQ(f.a.qp->priv->cc.cc.p.algo, algos[k]);
			if (w > worst)
				worst = w;
			if (w >= 2000000)
				stuck++;
			to += f.a.node->dev.cnt.tx_timeouts +
			      f.a.node->dev.cnt.tx_sr_probe;
			sent += f.a.node->dev.cnt.tx_packets;
			probes += f.a.node->dev.cnt.cc_switch_probe;
			/* hellos only */
			ASSERT_EQ_U64(f.net.dropped, algos[k] == UR_CC_DCQCN
						     ? 0 : (uint64_t)mid_drop);
			tfix_fini(&f);
		}
		printf("  %s: 64 seeds from %llu: longest stand-still %.2f ms, "
		       "%llu seeds stuck >= 2 ms, %llu timer expiries, %llu "
		       "probes at the switch, %llu packets\n",
		       ur_cc_ops_of(algos[k])->name, seed0, worst / 1e6,
		       (unsigned long long)stuck, (unsigned long long)to,
		       (unsigned long long)probes, (unsigned long long)sent);
		ASSERT_EQ_U64(stuck, 0);
		ASSERT_EQ_U64(to, 0);
	}
	ur_test_seed = seed0;
}

/*
 * auto's choice by the hello's round trip (ur_cc.c ur__cc_auto_pick):
 * UROCE_CC_AUTO dcqcn-rtt, both ends auto. Per seed a one-way delay of
 * 1-9 us (a fabric's: the answer comes within AUTO_RTT_US, 20 us, and
 * both requesters go to Swift) or 11-300 us (a host's: both stay
 * dcqcn-rtt). In a quarter of the seeds the first hello is lost: its
 * sender resends, cannot tell which of the two an answer is to, and
 * measures nothing (dcqcn-rtt at any delay); the other end measures.
 * Then a WRITE each way arrives whole under what was chosen.
 */
static uint64_t rtt_delay;
static int rtt_drop;

/* What @qp must run: dcqcn-rtt on a host's delay or after a resent
 * hello; Swift on a fabric's with nothing lost. With the first hello
 * lost and one hello sent, it depends on which was lost (its own: no
 * answer to measure; the peer's: its answer came): @got either. */
static uint32_t rtt_want(bool fabric, const struct ur_qp *qp, uint32_t got)
{
	if (!fabric || qp->priv->cc.hellos_asked > 1)
		return UR_CC_DCQCN_RTT;
	if (!rtt_drop)
		return UR_CC_SWIFT;
	return got == UR_CC_SWIFT ? UR_CC_SWIFT : UR_CC_DCQCN_RTT;
}

static void setup_rtt(struct ur_dev *dev, int node, void *arg)
{
	struct tnet *net = ((struct tnode *)dev->host)->net;

	(void)node;
	(void)arg;
	dev->cc_auto = true;
	dev->cc_auto_algo = UR_CC_DCQCN_RTT;
	net->f.delay_ns = rtt_delay;
	net->f.drop_hellos = rtt_drop;
}

static void test_auto_rtt(void)
{
	unsigned long long seed0 = ur_test_seed;
	unsigned int n_swift = 0, n_rtt = 0, n_split = 0;

	for (unsigned int i = 0; i < 64; i++) {
		struct tfix f;
		uint64_t r;
		bool fabric;
		uint32_t want, want_a, want_b;

		ur_test_seed = seed0 + i;
		r = ur_test_seed * 0x9e3779b97f4a7c15ull >> 20;
		fabric = r % 2;
		rtt_delay = fabric ? 1000 + (r >> 1) % 8000
				   : 11000 + (r >> 1) % 289000;
		rtt_drop = (r >> 40) % 4 == 0; /* the first hello lost */
		tfix_init_dev(&f, UR_QPT_RC, NULL, setup_rtt, NULL);
		tfix_fill(f.a.buf, TBUF, (uint32_t)ur_test_seed);
		tfix_fill(f.b.buf, TBUF, (uint32_t)ur_test_seed + 7);
		/* the hellos, a resent one's answer included (1 ms) */
		tnet_run(&f.net, f.net.now + 4000000);
		want_a = rtt_want(fabric, f.a.qp, algo(f.a.qp));
		want_b = rtt_want(fabric, f.b.qp, algo(f.b.qp));
		ASSERT(ur_qp_cc_negotiated(f.a.qp));
		ASSERT(ur_qp_cc_negotiated(f.b.qp));
		ASSERT_EQ(algo(f.a.qp), want_a);
		ASSERT_EQ(algo(f.b.qp), want_b);
		ASSERT_EQ_U64(f.a.node->dev.cnt.cc_auto_swift +
				      f.b.node->dev.cnt.cc_auto_swift,
			      (want_a == UR_CC_SWIFT) + (want_b == UR_CC_SWIFT));
		ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1, 0, 262144,
				    (uintptr_t)f.b.buf, f.b.mr->rkey,
				    UR_SEND_SIGNALED), 0);
		ASSERT_EQ(tfix_send(&f.b, UR_WR_RDMA_WRITE, 2, 262144, 262144,
				    (uintptr_t)f.a.buf + 262144, f.a.mr->rkey,
				    UR_SEND_SIGNALED), 0);
		tfix_run_ok(&f, &f.a.scq);
		tfix_cqe(&f.b.scq);
		ASSERT_EQ(memcmp(f.a.buf, f.b.buf, 262144), 0);
		ASSERT_EQ(memcmp(f.a.buf + 262144, f.b.buf + 262144, 262144),
			  0);
		/* one decision */
		ASSERT_EQ(algo(f.a.qp), want_a);
		ASSERT_EQ(algo(f.b.qp), want_b);
		want = want_a == want_b ? want_a : UR_CC_NONE;
		if (want == UR_CC_SWIFT)
			n_swift++;
		else if (want == UR_CC_DCQCN_RTT)
			n_rtt++;
		else
			n_split++;
		tfix_fini(&f);
	}
	printf("  64 seeds from %llu: %u both Swift, %u both dcqcn-rtt, %u "
	       "one each\n", seed0, n_swift, n_rtt, n_split);
	ASSERT_GT(n_swift, 0);
	ASSERT_GT(n_rtt, 0);
	ur_test_seed = seed0;
	rtt_drop = 0;
}

static const struct ur_test_case tests[] = {
	{ "negotiate", test_negotiate },
	{ "hello", test_hello },
	{ "midflight", test_midflight },
	{ "auto_rtt", test_auto_rtt },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

// SPDX-License-Identifier: MIT
/*
 * Jumbo packets (docs/wire.md "Extensions") on the virtual network: the
 * negotiation (a QP that offers them to a standard peer, in either
 * direction, stays plain RoCEv2 at the path MTU; the bit shows on answers
 * only where both ends enabled them), byte-exact SENDs, WRITEs and READs
 * once they are in use, go-back-N over jumbo packets, the responder's
 * size check, and the send window in jumbo packets. With selective
 * repeat: the default negotiation (UR_JUMBO_AUTO with UR_SR_AUTO: on
 * between uroce ends, byte for byte plain RoCEv2 towards a standard one),
 * held jumbo packets, selective resends of one, and random loss,
 * duplication and reordering over many seeds, every resend the size of
 * the packet it repeats.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tfix.h"
#include "ur_qp_priv.h"

#define MSG (256u * 1024) /* 64 packets at 4096, 16 jumbo ones */

struct wire {
	struct tfix_bits b;  /* the jumbo bit on the wire */
	uint64_t jumbo[2];   /* request packets with more than 4096 bytes */
	uint64_t max_len[2]; /* largest payload of a request */
	/* a's requests not yet ACKed by b, as the wire shows them: never
	 * more than a knows of, so at most a's send window. */
	uint32_t req_psn, acked_psn, max_out;
};

struct jrun {
	struct tfix f;
	struct wire w;
};

static void tap(struct tnet *net, const uint8_t *d, uint32_t len, void *arg)
{
	struct jrun *r = arg;
	struct ur_pkt pkt;
	int from;

	(void)net;
	if (!tfix_tap_count(&r->f, &r->w.b, UR_BTH_EXT_JUMBO, d, len, &pkt,
			    &from))
		UR_FAIL("a packet on the wire does not decode");
	if (pkt.mask & UR_OPF_REQ) {
		r->w.jumbo[from] += pkt.payload_len > 4096;
		if (pkt.payload_len > r->w.max_len[from])
			r->w.max_len[from] = pkt.payload_len;
	}
	if (from == 1 && (pkt.mask & UR_OPF_ACK) &&
	    ur_psn_diff(pkt.h.psn, r->w.acked_psn) > 0)
		r->w.acked_psn = pkt.h.psn;
	if (from == 0 && (pkt.mask & UR_OPF_REQ)) {
		uint32_t out;

		if (ur_psn_diff(pkt.h.psn, r->w.req_psn) > 0)
			r->w.req_psn = pkt.h.psn;
		out = (uint32_t)ur_psn_diff(r->w.req_psn, r->w.acked_psn);
		if (out > r->w.max_out)
			r->w.max_out = out;
	}
}

static void run_init(struct jrun *r, bool ja, bool jb, uint32_t max_a,
		     uint32_t max_b)
{
	struct tconn_attr ca = {
		.mtu = 4096, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.min_rnr_timer = 1, .max_rd_atomic = 4, .access = ACC_ALL,
		.psn_a = 100, .psn_b = 0xfffff0,
	};

	memset(r, 0, sizeof(*r));
	tfix_init(&r->f, UR_QPT_RC, &ca);
	r->f.net.tap = tap;
	r->f.net.tap_arg = r;
	r->f.net.f.delay_ns = 2000;
	r->f.a.node->dev.jumbo_max = max_a; /* what each link carries */
	r->f.b.node->dev.jumbo_max = max_b;
	if (ja)
		ASSERT_EQ(ur_qp_set_jumbo(r->f.a.qp, true), 0);
	if (jb)
		ASSERT_EQ(ur_qp_set_jumbo(r->f.b.qp, true), 0);
	tfix_fill(r->f.a.buf, TBUF, (uint32_t)ur_test_seed);
	tfix_fill(r->f.b.buf, TBUF, (uint32_t)ur_test_seed + 7);
	r->w.req_psn = r->w.acked_psn = ca.psn_a - 1;
}

/* a WRITEs MSG bytes to b and b to a (offset @off in the senders' buffers,
 * @dst in the receivers'); both must land, byte for byte. */
static void writes_f(struct tfix *f, uint32_t off, uint32_t dst)
{

	ASSERT_EQ(tfix_send(&f->a, UR_WR_RDMA_WRITE, 1, off, MSG,
			    (uintptr_t)f->b.buf + dst, f->b.mr->rkey,
			    UR_SEND_SIGNALED), 0);
	ASSERT_EQ(tfix_send(&f->b, UR_WR_RDMA_WRITE, 2, off, MSG,
			    (uintptr_t)f->a.buf + dst, f->a.mr->rkey,
			    UR_SEND_SIGNALED), 0);
	tfix_run_ok(f, &f->a.scq);
	/* The network is idle: b's is there too. */
	ASSERT_EQ(tfix_cqe(&f->b.scq).status, UR_WC_SUCCESS);
	ASSERT_MEM_EQ(f->b.buf + dst, f->a.buf + off, MSG);
	ASSERT_MEM_EQ(f->a.buf + dst, f->b.buf + off, MSG);
}

static void writes(struct jrun *r, uint32_t off, uint32_t dst)
{
	writes_f(&r->f, off, dst);
}

/* Who enables them and what each link carries decide the size, in both
 * directions: the largest size both links carry, only where both QPs
 * enabled them; otherwise the path MTU and no bit on any answer. */
static void t_negotiate(void)
{
	static const struct {
		bool ja, jb;
		uint32_t ma, mb, size; /* links' jumbo_max; expected size */
	} c[] = {
		{ false, false, 16384, 16384, 0 },
		{ true, false, 16384, 16384, 0 },
		{ false, true, 16384, 16384, 0 },
		{ true, true, 16384, 16384, 16384 },
		{ true, true, 16384, 8192, 8192 },
		{ true, true, 8192, 16384, 8192 },
		{ true, true, 8192, 8192, 8192 },
		{ true, true, 0, 16384, 0 },
		{ true, true, 0, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint32_t want = c[i].size, bits;
		struct jrun r;

		run_init(&r, c[i].ja, c[i].jb, c[i].ma, c[i].mb);
		writes(&r, 0, MSG);             /* the first offers */
		writes(&r, 2 * MSG, 3 * MSG);   /* the second may use them */
		printf("  a %s (link %u), b %s (link %u): requests with a bit "
		       "%llu/%llu, answers %llu/%llu, jumbo packets %llu + %llu, "
		       "largest %llu\n", c[i].ja ? "on" : "off", c[i].ma,
		       c[i].jb ? "on" : "off", c[i].mb,
		       (unsigned long long)(r.w.b.req_bit[0] + r.w.b.req_bit[1]),
		       (unsigned long long)(r.w.b.req[0] + r.w.b.req[1]),
		       (unsigned long long)(r.w.b.ans_bit[0] + r.w.b.ans_bit[1]),
		       (unsigned long long)(r.w.b.ans[0] + r.w.b.ans[1]),
		       (unsigned long long)r.w.jumbo[0],
		       (unsigned long long)r.w.jumbo[1],
		       (unsigned long long)(r.w.max_len[0] > r.w.max_len[1]
						    ? r.w.max_len[0]
						    : r.w.max_len[1]));
		/* Requests offer only from an enabled QP on a jumbo link. */
		ASSERT_EQ_U64(r.w.b.req_bit[0],
			      c[i].ja && c[i].ma ? r.w.b.req[0] : 0);
		ASSERT_EQ_U64(r.w.b.req_bit[1],
			      c[i].jb && c[i].mb ? r.w.b.req[1] : 0);
		if (want) {
			/* Answers take them; the second round is packets of
			 * that size in both directions. */
			ASSERT(r.w.b.ans_bit[0] > 0 && r.w.b.ans_bit[1] > 0);
			ASSERT_EQ_U64(r.w.jumbo[0], MSG / want);
			ASSERT_EQ_U64(r.w.jumbo[1], MSG / want);
			ASSERT_EQ_U64(r.w.max_len[0], want);
			ASSERT_EQ_U64(r.w.max_len[1], want);
			bits = 7 | (want / 1024) << 8;
			ASSERT_EQ(ur_qp_jumbo_state(r.f.a.qp), bits);
			ASSERT_EQ(ur_qp_jumbo_state(r.f.b.qp), bits);
		} else {
			/* A standard peer (or link) never sees an answer with
			 * a bit, nor a packet above the path MTU. */
			ASSERT_EQ_U64(r.w.b.ans_bit[0] + r.w.b.ans_bit[1], 0);
			ASSERT_EQ_U64(r.w.jumbo[0] + r.w.jumbo[1], 0);
			ASSERT_EQ(ur_qp_jumbo_state(r.f.a.qp) & ~1u, 0);
			ASSERT_EQ(ur_qp_jumbo_state(r.f.b.qp) & ~1u, 0);
		}
		ASSERT_EQ_U64(r.f.a.qp->cnt.tx_retransmit +
				      r.f.b.qp->cnt.tx_retransmit, 0);
		tfix_fini(&r.f);
	}
}

/* SENDs (with immediate) into several receive SGEs, and a READ, once jumbo
 * packets are in use: READ responses keep the path MTU. */
static void t_send_read(void)
{
	struct jrun r;
	struct tfix *f = &r.f;
	struct ur_cqe e;
	uint64_t before;

	run_init(&r, true, true, UR_JUMBO_MTU, UR_JUMBO_MTU);
	writes(&r, 0, MSG);
	ASSERT_EQ(ur_qp_jumbo_state(f->a.qp), 7 | 16 << 8);
	/* A SEND of MSG + 100 bytes (ragged last packet) into a receive
	 * of two SGEs. */
	{
		struct ur_sge sge[2] = {
			{ (uintptr_t)f->b.buf + MSG, 5000, f->b.mr->lkey },
			{ (uintptr_t)f->b.buf + 2 * MSG, MSG, f->b.mr->lkey },
		};
		struct ur_recv_wr rw = { .wr_id = 9, .sg_list = sge,
					 .num_sge = 2 };

		ASSERT_EQ(ur_qp_post_recv(f->b.qp, &rw), 0);
	}
	before = r.w.jumbo[0];
	ASSERT_EQ(tfix_send(&f->a, UR_WR_SEND, 3, 0, MSG + 100, 0, 0,
			    UR_SEND_SIGNALED), 0);
	tfix_run_ok(f, &f->a.scq);
	e = tfix_cqe(&f->b.rcq);
	ASSERT_EQ(e.status, UR_WC_SUCCESS);
	ASSERT_EQ(e.byte_len, MSG + 100);
	ASSERT_MEM_EQ(f->b.buf + MSG, f->a.buf, 5000);
	ASSERT_MEM_EQ(f->b.buf + 2 * MSG, f->a.buf + 5000, MSG + 100 - 5000);
	ASSERT_EQ_U64(r.w.jumbo[0] - before, (MSG + 100) / UR_JUMBO_MTU);
	/* A READ of MSG + 4 bytes from b. */
	ASSERT_EQ(tfix_send(&f->a, UR_WR_RDMA_READ, 4, 3 * MSG, MSG + 4,
			    (uintptr_t)f->b.buf + 4 * MSG, f->b.mr->rkey,
			    UR_SEND_SIGNALED), 0);
	tfix_run_ok(f, &f->a.scq);
	ASSERT_MEM_EQ(f->a.buf + 3 * MSG, f->b.buf + 4 * MSG, MSG + 4);
	ASSERT_EQ(f->a.qp->state, UR_QPS_RTS);
	tfix_fini(&r.f);
}

/* One jumbo MIDDLE lost: go-back-N resends from it, in jumbo packets, and
 * the data lands whole. */
static void t_loss(void)
{
	struct jrun r;

	run_init(&r, true, true, UR_JUMBO_MTU, UR_JUMBO_MTU);
	writes(&r, 0, MSG);
	r.f.net.f.drop_opcode = UR_OP_RC_RDMA_WRITE_MIDDLE;
	r.f.net.f.drop_count = 1;
	writes(&r, 2 * MSG, 3 * MSG);
	printf("  one jumbo MIDDLE lost: %llu packets sent again\n",
	       (unsigned long long)(r.f.a.qp->cnt.tx_retransmit +
				    r.f.b.qp->cnt.tx_retransmit));
	ASSERT(r.f.a.qp->cnt.tx_retransmit + r.f.b.qp->cnt.tx_retransmit > 0);
	tfix_fini(&r.f);
}

/* Jumbo packets under a rate limit of 1 Gbit/s with a 32 KiB bucket (two
 * jumbo packets): the writes land, no faster than the rate allows. */
static void t_paced(void)
{
	struct jrun r;
	uint64_t t0, ns;

	run_init(&r, true, true, UR_JUMBO_MTU, UR_JUMBO_MTU);
	writes(&r, 0, MSG);
	ASSERT_EQ(ur_qp_set_rate_limit(r.f.a.qp, 1000000, 32768), 0);
	ASSERT_EQ(ur_qp_set_rate_limit(r.f.b.qp, 1000000, 32768), 0);
	t0 = r.f.net.now;
	writes(&r, 2 * MSG, 3 * MSG);
	ns = r.f.net.now - t0;
	printf("  %u bytes each way at 1 Gbit/s: %.1f us (%llu jumbo packets)\n",
	       MSG, ns / 1e3, (unsigned long long)r.w.jumbo[0]);
	ASSERT_EQ_U64(r.w.jumbo[0], MSG / UR_JUMBO_MTU);
	/* 256 KiB at 1 Gbit/s is 2.1 ms, less the 32 KiB bucket and the
	 * last packet (one leaves whenever the pacer is not in debt): the
	 * 4 times larger packets must not let more through than that. */
	ASSERT(ns >= (MSG - 32768 - UR_JUMBO_MTU) * 8ull);
	ASSERT(ns < MSG * 8ull + 500000);
	tfix_fini(&r.f);
}

/* A responder that stopped taking jumbo packets NAKs one (invalid
 * request, 9.7.5.2.4): the requester gets an error completion, nothing is
 * written past what the check let through. */
static void t_responder_checks(void)
{
	struct jrun r;
	struct ur_cqe e;

	run_init(&r, true, true, UR_JUMBO_MTU, UR_JUMBO_MTU);
	writes(&r, 0, MSG);
	ASSERT_EQ(ur_qp_set_jumbo(r.f.b.qp, false), 0);
	ASSERT_EQ(tfix_send(&r.f.a, UR_WR_RDMA_WRITE, 5, 0, MSG,
			    (uintptr_t)r.f.b.buf + 5 * MSG, r.f.b.mr->rkey,
			    UR_SEND_SIGNALED), 0);
	tnet_run(&r.f.net, r.f.net.now + 10ull * 1000 * 1000 * 1000);
	e = tfix_cqe(&r.f.a.scq);
	ASSERT_EQ(e.status, UR_WC_REM_INV_REQ_ERR);
	tfix_fini(&r.f);
}

/* Jumbo packets and selective repeat go together, in either order; UD
 * has neither; 0, 1 and UR_JUMBO_AUTO only. */
static void t_params(void)
{
	struct jrun r;
	struct ur_sr_params sp;

	run_init(&r, true, false, UR_JUMBO_MTU, UR_JUMBO_MTU);
	ur_sr_params_default(&sp);
	ASSERT_EQ(ur_qp_set_sr(r.f.a.qp, &sp), 0);
	ASSERT_EQ(ur_qp_set_sr(r.f.b.qp, &sp), 0);
	ASSERT_EQ(ur_qp_set_jumbo(r.f.b.qp, true), 0);
	ASSERT_EQ(ur_qp_set_jumbo(r.f.b.qp, UR_JUMBO_AUTO), 0);
	ASSERT_EQ(ur_qp_jumbo_state(r.f.b.qp), 1u | 8u);
	ASSERT_EQ(ur_qp_set_jumbo(r.f.b.qp, UR_JUMBO_AUTO + 1), -EINVAL);
	ASSERT_EQ(ur_qp_set_jumbo(r.f.a.qp, false), 0);
	ASSERT_EQ(ur_qp_jumbo_state(r.f.a.qp), 0);
	tfix_fini(&r.f);
	tfix_init(&r.f, UR_QPT_UD, NULL);
	ASSERT_EQ(ur_qp_set_jumbo(r.f.a.qp, true), -EINVAL);
	ASSERT_EQ(ur_qp_set_jumbo(r.f.a.qp, UR_JUMBO_AUTO), -EINVAL);
	tfix_fini(&r.f);
}

/* ---- with selective repeat ------------------------------------------- */

/* What a tap keeps of a's requests by PSN: a resend must be the packet it
 * repeats (same opcode and size), a jumbo one included. */
struct psn_log {
	uint8_t op[1u << 16];
	uint32_t len[1u << 16];
	uint8_t seen[1u << 16];
};

struct srrun {
	struct tfix f;
	struct tfix_bits jb, sb;  /* the jumbo bits, the SR bit */
	uint64_t hash[2];         /* FNV-1a of what a, b sent (auto run) */
	uint64_t jumbo[2];        /* requests above 4096 bytes */
	uint64_t resent_jumbo;    /* a's jumbo requests seen a second time */
	uint64_t resent_diff;     /* ...and resends unlike their first copy */
	struct psn_log *log;
};

static void sr_tap(struct tnet *net, const uint8_t *d, uint32_t len,
		   void *arg)
{
	struct srrun *r = arg;
	struct ur_pkt pkt;
	int from;

	(void)net;
	if (!tfix_tap_count(&r->f, &r->jb, UR_BTH_EXT_JUMBO, d, len, &pkt,
			    &from))
		UR_FAIL("a packet on the wire does not decode");
	tfix_tap_count(&r->f, &r->sb, UR_BTH_EXT_SR, d, len, &pkt, &from);
	/* The bytes as a standard peer compares them (tfix_wire_hash), as
	 * test_sr's sr_negotiate_auto. */
	r->hash[from] = tfix_wire_hash(r->hash[from], d, len, &pkt,
				       from ? r->f.a.buf : r->f.b.buf);
	if (!(pkt.mask & UR_OPF_REQ))
		return;
	r->jumbo[from] += pkt.payload_len > 4096;
	if (from == 0 && r->log) {
		uint32_t k = pkt.h.psn & 0xffff;

		if (r->log->seen[k]) {
			r->resent_jumbo += pkt.payload_len > 4096;
			r->resent_diff += r->log->op[k] != pkt.h.opcode ||
					  r->log->len[k] != pkt.payload_len;
		} else {
			r->log->seen[k] = 1;
			r->log->op[k] = pkt.h.opcode;
			r->log->len[k] = pkt.payload_len;
		}
	}
}

/* Each device as a host sets it up by default: selective repeat and
 * jumbo packets negotiated (mode 2), offered (1) or off (0); links that
 * carry 16 KiB. */
static bool g_drop_hellos;

static void auto_setup(struct ur_dev *dev, int node, void *arg)
{
	const int *mode = arg;

	if (g_drop_hellos)
		((struct tnode *)dev->host)->net->f.drop_hellos = 1 << 30;
	memset(&dev->sr, 0, sizeof(dev->sr));
	dev->jumbo_max = UR_JUMBO_MTU;
	dev->jumbo_default = (uint8_t)mode[node];
	if (mode[node]) {
		ur_sr_params_default(&dev->sr);
		dev->sr.enable = (uint32_t)mode[node];
	}
}

static void sr_init(struct srrun *r, int mode_a, int mode_b)
{
	int mode[2] = { mode_a, mode_b };
	struct tconn_attr ca = {
		.mtu = 4096, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.min_rnr_timer = 1, .max_rd_atomic = 4, .access = ACC_ALL,
		.psn_a = 0xfffff0, .psn_b = 77,
	};

	memset(r, 0, sizeof(*r));
	r->hash[0] = r->hash[1] = 0xcbf29ce484222325ull;
	tfix_init_dev(&r->f, UR_QPT_RC, &ca, auto_setup, mode);
	r->f.net.tap = sr_tap;
	r->f.net.tap_arg = r;
	r->f.net.f.delay_ns = 2000;
	tfix_fill(r->f.a.buf, TBUF, (uint32_t)ur_test_seed);
	tfix_fill(r->f.b.buf, TBUF, (uint32_t)ur_test_seed + 7);
	/* The hellos' round trip (a connection's set-up takes one). */
	tnet_run(&r->f.net, r->f.net.now + 50000);
}

/*
 * The default between two hosts (UROCE_SR=auto, UROCE_JUMBO=auto): two
 * uroce ends learn of each other by the selective-repeat hello and then
 * use both, 16 KiB packets held and resent selectively (two MIDDLEs lost:
 * two packets sent again). Against a standard end, either way, every
 * packet on the wire is byte for byte what two standard ends send: no
 * bit, no packet above 4096. Hellos lost: both stay plain, the same bytes.
 */
static void t_sr_auto(void)
{
	struct srrun plain, r;

	sr_init(&plain, 0, 0);
	plain.f.net.f.drop_opcode = UR_OP_RC_RDMA_WRITE_MIDDLE;
	plain.f.net.f.drop_count = 2;
	writes_f(&plain.f, 0, MSG);
	ASSERT_EQ_U64(plain.jb.req_bit[0] + plain.jb.req_bit[1] +
			      plain.jb.ans_bit[0] + plain.jb.ans_bit[1], 0);
	ASSERT_EQ_U64(plain.jumbo[0] + plain.jumbo[1], 0);

	sr_init(&r, 2, 2);
	writes_f(&r.f, 0, MSG); /* the first offers */
	r.f.net.f.drop_opcode = UR_OP_RC_RDMA_WRITE_MIDDLE;
	r.f.net.f.drop_count = 2;
	writes_f(&r.f, 2 * MSG, 3 * MSG);
	printf("  both auto: jumbo state %#x %#x, SR state %#x %#x, jumbo "
	       "packets %llu + %llu, held %llu, resent %llu\n",
	       ur_qp_jumbo_state(r.f.a.qp), ur_qp_jumbo_state(r.f.b.qp),
	       ur_qp_sr_state(r.f.a.qp), ur_qp_sr_state(r.f.b.qp),
	       (unsigned long long)r.jumbo[0], (unsigned long long)r.jumbo[1],
	       (unsigned long long)(r.f.a.qp->cnt.rx_sr_held +
				    r.f.b.qp->cnt.rx_sr_held),
	       (unsigned long long)(r.f.a.qp->cnt.tx_retransmit +
				    r.f.b.qp->cnt.tx_retransmit));
	ASSERT_EQ(ur_qp_jumbo_state(r.f.a.qp), 15u | 16u << 8);
	ASSERT_EQ(ur_qp_jumbo_state(r.f.b.qp), 15u | 16u << 8);
	ASSERT_EQ(ur_qp_sr_state(r.f.a.qp), 15u);
	ASSERT_EQ(ur_qp_sr_state(r.f.b.qp), 15u);
	/* The second round's, and the two resends (all MIDDLEs). */
	ASSERT_EQ_U64(r.jumbo[0] + r.jumbo[1], 2 * MSG / UR_JUMBO_MTU + 2);
	/* The two lost MIDDLEs, each sent again alone (selectively), and
	 * the packets after them held meanwhile, in the jumbo pool. */
	ASSERT_EQ_U64(r.f.a.qp->cnt.tx_retransmit +
			      r.f.b.qp->cnt.tx_retransmit, 2);
	ASSERT_EQ_U64(r.f.a.qp->cnt.tx_sr_resend +
			      r.f.b.qp->cnt.tx_sr_resend, 2);
	ASSERT_GT(r.f.a.qp->cnt.rx_sr_held + r.f.b.qp->cnt.rx_sr_held, 0);
	ASSERT(atomic_load(&r.f.a.node->dev.sr_pool_jumbo) ||
	       atomic_load(&r.f.b.node->dev.sr_pool_jumbo));
	tfix_fini(&r.f);

	for (int side = 0; side < 2; side++) {
		sr_init(&r, side ? 0 : 2, side ? 2 : 0);
		r.f.net.f.drop_opcode = UR_OP_RC_RDMA_WRITE_MIDDLE;
		r.f.net.f.drop_count = 2;
		writes_f(&r.f, 0, MSG);
		ASSERT_EQ_U64(r.hash[0], plain.hash[0]);
		ASSERT_EQ_U64(r.hash[1], plain.hash[1]);
		ASSERT_EQ_U64(r.jb.req[0], plain.jb.req[0]);
		ASSERT_EQ_U64(r.jb.req[1], plain.jb.req[1]);
		ASSERT_EQ_U64(r.jumbo[0] + r.jumbo[1], 0);
		ASSERT_EQ(ur_qp_jumbo_state(side ? r.f.b.qp : r.f.a.qp),
			  1u | 8u);
		tfix_fini(&r.f);
	}
	g_drop_hellos = true;
	sr_init(&r, 2, 2);
	r.f.net.f.drop_opcode = UR_OP_RC_RDMA_WRITE_MIDDLE;
	r.f.net.f.drop_count = 2;
	writes_f(&r.f, 0, MSG);
	g_drop_hellos = false;
	ASSERT_EQ_U64(r.hash[0], plain.hash[0]);
	ASSERT_EQ_U64(r.hash[1], plain.hash[1]);
	tfix_fini(&r.f);
	tfix_fini(&plain.f);
}

/*
 * Random loss, duplication and reordering with selective repeat and
 * jumbo packets on both QPs (links of 8 or 16 KiB, random gap timers and
 * send windows), at many seeds: WRITEs and SENDs of random sizes both
 * ways land byte for byte, and every resend of one of a's requests is the
 * packet it repeats (opcode and size, 16 KiB ones included). Over all
 * cases, jumbo packets were held, resent, and hole reports sent.
 */
#define SR_CASES 60
#define SR_OPS 6
static void t_sr_faults(void)
{
	uint64_t held = 0, jumbo_held = 0, resent_jumbo = 0, holes = 0;
	uint64_t saved = ur_test_seed;
	struct psn_log *log = calloc(1, sizeof(*log));
	int n = getenv("UR_JUMBO_CASES") ? atoi(getenv("UR_JUMBO_CASES"))
					 : SR_CASES;

	ASSERT(log != NULL);
	for (int c = 0; c < n; c++) {
		uint64_t seed = saved * 1000003ull + (uint64_t)c;
		struct srrun r;
		struct tnet *net;
		struct ur_sr_params sp;
		struct ur_cqe e;

		ur_test_seed = seed;
		sr_init(&r, 0, 0);
		memset(log, 0, sizeof(*log));
		net = &r.f.net;
		r.f.a.node->dev.jumbo_max = tnet_rand(net) & 1 ? 16384 : 8192;
		r.f.b.node->dev.jumbo_max = tnet_rand(net) & 1 ? 16384 : 8192;
		ur_sr_params_default(&sp);
		sp.reorder_ns = (uint32_t)(tnet_rand(net) % 40000);
		ASSERT_EQ(ur_qp_set_sr(r.f.a.qp, &sp), 0);
		ASSERT_EQ(ur_qp_set_sr(r.f.b.qp, &sp), 0);
		ASSERT_EQ(ur_qp_set_jumbo(r.f.a.qp, 1), 0);
		ASSERT_EQ(ur_qp_set_jumbo(r.f.b.qp, 1), 0);
		ASSERT_EQ(ur_qp_set_tx_window(r.f.a.qp,
					      16 + (uint32_t)(tnet_rand(net) % 240)), 0);
		/* Settle the size first (one WRITE each way, no faults). */
		writes_f(&r.f, 0, MSG);
		r.log = log;
		net->f.loss = 0.04 * tnet_frand(net);
		net->f.dup = 0.03 * tnet_frand(net);
		net->f.reorder = 0.2 * tnet_frand(net);
		net->f.jitter_ns = tnet_rand(net) % 30000;
		for (int i = 0; i < SR_OPS; i++) {
			uint32_t len = 1 + (uint32_t)(tnet_rand(net) % (3 * MSG));
			uint32_t off = (uint32_t)(tnet_rand(net) % 4096);
			/* apart from every source byte */
			uint32_t dst = 4 * MSG + (uint32_t)(tnet_rand(net) % MSG);
			uint32_t fl = i == SR_OPS - 1 ? UR_SEND_SIGNALED : 0;
			bool send = i == 2;

			if (send) {
				ASSERT_EQ(tfix_recv(&r.f.b, 50, dst, len), 0);
				ASSERT_EQ(tfix_recv(&r.f.a, 51, dst, len), 0);
			}
			ASSERT_EQ(tfix_send(&r.f.a, send ? UR_WR_SEND
							 : UR_WR_RDMA_WRITE,
					    10 + (uint64_t)i, off, len,
					    (uintptr_t)r.f.b.buf + dst,
					    r.f.b.mr->rkey, fl), 0);
			ASSERT_EQ(tfix_send(&r.f.b, send ? UR_WR_SEND
							 : UR_WR_RDMA_WRITE,
					    20 + (uint64_t)i, off, len,
					    (uintptr_t)r.f.a.buf + dst,
					    r.f.a.mr->rkey, fl), 0);
			tnet_run(net, net->now + 60ull * 1000 * 1000 * 1000);
			if (send) {
				ASSERT_EQ(tfix_cqe(&r.f.b.rcq).status,
					  UR_WC_SUCCESS);
				ASSERT_EQ(tfix_cqe(&r.f.a.rcq).status,
					  UR_WC_SUCCESS);
			}
			ASSERT_MEM_EQ(r.f.b.buf + dst, r.f.a.buf + off, len);
			ASSERT_MEM_EQ(r.f.a.buf + dst, r.f.b.buf + off, len);
		}
		e = tfix_cqe(&r.f.a.scq);
		ASSERT_EQ(e.status, UR_WC_SUCCESS);
		e = tfix_cqe(&r.f.b.scq);
		ASSERT_EQ(e.status, UR_WC_SUCCESS);
		ASSERT_EQ(r.f.a.qp->state, UR_QPS_RTS);
		ASSERT_EQ(r.f.b.qp->state, UR_QPS_RTS);
		ASSERT_GT(r.jumbo[0], 0);
		ASSERT_EQ_U64(r.resent_diff, 0);
		held += r.f.a.qp->cnt.rx_sr_held + r.f.b.qp->cnt.rx_sr_held;
		jumbo_held += atomic_load(&r.f.a.node->dev.sr_pool_jumbo) != NULL;
		jumbo_held += atomic_load(&r.f.b.node->dev.sr_pool_jumbo) != NULL;
		resent_jumbo += r.resent_jumbo;
		holes += r.f.a.node->dev.cnt.tx_sr_hole +
			 r.f.b.node->dev.cnt.tx_sr_hole;
		tfix_fini(&r.f);
	}
	ur_test_seed = saved;
	free(log);
	printf("  %d cases: %llu requests held (jumbo pool used on %llu "
	       "devices), %llu jumbo requests of a's resent, %llu hole "
	       "reports\n", n, (unsigned long long)held,
	       (unsigned long long)jumbo_held,
	       (unsigned long long)resent_jumbo, (unsigned long long)holes);
	if (n >= SR_CASES) {
		ASSERT_GT(held, 0);
		ASSERT_GT(jumbo_held, 0);
		ASSERT_GT(resent_jumbo, 0);
		ASSERT_GT(holes, 0);
	}
}

/* A new QP pair made after the devices' send window was set to @dev_win
 * (0: the default), replacing the fixture's (same CQs and memory). */
static void new_pair(struct jrun *r, uint32_t dev_win, bool jumbo)
{
	struct ur_qp_caps caps = {
		.max_send_wr = 256, .max_recv_wr = 256,
		.max_send_sge = 4, .max_recv_sge = 4, .max_inline_data = 256,
	};
	struct tside *s[2] = { &r->f.a, &r->f.b };

	for (int i = 0; i < 2; i++) {
		s[i]->node->dev.tx_window = dev_win;
		s[i]->qp = tnet_qp(s[i]->node, UR_QPT_RC, 1, &caps, &s[i]->scq,
				   &s[i]->rcq);
	}
	tnet_connect(r->f.a.qp, r->f.b.qp, &r->f.ca);
	if (jumbo) {
		ASSERT_EQ(ur_qp_set_jumbo(r->f.a.qp, true), 0);
		ASSERT_EQ(ur_qp_set_jumbo(r->f.b.qp, true), 0);
	}
}

/* The send window: 8 MiB of WRITEs over a 10 ms link, so that a always
 * waits for ACKs (after one write that settles the jumbo size). Requests
 * outstanding peak at exactly the window: 256 by default, the device's for
 * new QPs, the QP's own when set, and never more than 4 MiB, so jumbo
 * packets of 16 KiB get 256 out of 512. */
static void t_window(void)
{
	static const struct {
		uint32_t dev_win, qp_win;
		bool jumbo;
		uint32_t want;
	} c[] = {
		{ 0, 0, false, 256 },
		{ 512, 0, false, 512 },
		{ 512, 0, true, 256 },
		{ 512, 100, false, 100 },
		{ 0, 1024, false, 1024 },
		{ 0, 1024, true, 256 },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct jrun r;

		run_init(&r, false, false, UR_JUMBO_MTU, UR_JUMBO_MTU);
		new_pair(&r, c[i].dev_win, c[i].jumbo);
		if (c[i].qp_win)
			ASSERT_EQ(ur_qp_set_tx_window(r.f.a.qp, c[i].qp_win), 0);
		/* One write first: jumbo sizes are learned from b's answers. */
		ASSERT_EQ(tfix_send(&r.f.a, UR_WR_RDMA_WRITE, 9, 0, MSG,
				    (uintptr_t)r.f.b.buf, r.f.b.mr->rkey,
				    UR_SEND_SIGNALED), 0);
		tfix_run_ok(&r.f, &r.f.a.scq);
		r.w.max_out = 0;
		r.f.net.f.delay_ns = 10ull * 1000 * 1000;
		for (uint64_t k = 0; k < 8; k++)
			ASSERT_EQ(tfix_send(&r.f.a, UR_WR_RDMA_WRITE, k,
					    (uint32_t)(k & 1) << 20, 1u << 20,
					    (uintptr_t)r.f.b.buf + (k & 1) * (1u << 20),
					    r.f.b.mr->rkey,
					    k == 7 ? UR_SEND_SIGNALED : 0), 0);
		tfix_run_ok(&r.f, &r.f.a.scq);
		ASSERT_MEM_EQ(r.f.b.buf, r.f.a.buf, TBUF);
		printf("  device window %u, QP window %u, jumbo %d: %u requests "
		       "out at most\n", c[i].dev_win, c[i].qp_win, c[i].jumbo,
		       r.w.max_out);
		ASSERT_EQ(r.w.max_out, c[i].want);
		ASSERT_EQ_U64(r.w.jumbo[0] > 0, c[i].jumbo);
		tfix_fini(&r.f);
	}
}

static const struct ur_test_case tests[] = {
	{ "jumbo_negotiate", t_negotiate },
	{ "jumbo_send_read", t_send_read },
	{ "jumbo_loss", t_loss },
	{ "jumbo_paced", t_paced },
	{ "jumbo_responder_checks", t_responder_checks },
	{ "jumbo_params", t_params },
	{ "jumbo_window", t_window },
	{ "jumbo_sr_auto", t_sr_auto },
	{ "jumbo_sr_faults", t_sr_faults },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

// SPDX-License-Identifier: MIT
/* Unit tests of the wire layer: tables, PSN, AETH, codec, CRC, totality. */
#include <errno.h>
#include <zlib.h>

#include "ur_test.h"
#include "ur_wire.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64*, seeded from the harness seed. */
	if (!rng_state)
		rng_state = ur_test_seed * 0x9e3779b97f4a7c15ull | 1;
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static void fill_random(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

struct op_row {
	const char *name;
	uint8_t val;
};
static const struct op_row all_ops[] = {
#define UR_X(n, v) {#n, v},
	UR_OPCODES(UR_X)
#undef UR_X
};
#define NUM_OPS (sizeof(all_ops) / sizeof(all_ops[0]))

static const uint8_t eth_len[UR_ETH_NUM] = {
	[UR_ETH_RETH] = UR_RETH_LEN,	 [UR_ETH_AETH] = UR_AETH_LEN,
	[UR_ETH_ATMETH] = UR_ATMETH_LEN, [UR_ETH_ATMACK] = UR_ATMACK_LEN,
	[UR_ETH_IMMDT] = UR_IMMDT_LEN,	 [UR_ETH_IETH] = UR_IETH_LEN,
	[UR_ETH_DETH] = UR_DETH_LEN,	 [UR_ETH_FETH] = UR_FETH_LEN,
	[UR_ETH_XRCETH] = UR_XRCETH_LEN,
};

static void test_opcode_table(void)
{
	int valid = 0;

	for (int op = 0; op < 256; op++)
		valid += ur_opcode_info((uint8_t)op) != NULL;
	ASSERT_EQ(valid, NUM_OPS);
	ASSERT_EQ(NUM_OPS, 63); /* 40 + the 23 XRC opcodes */
	ASSERT_STR_EQ(ur_opcode_name(0x15), "UNKNOWN");
	ASSERT_EQ(ur_pkt_hdr_len(0x15), 0);

	for (size_t i = 0; i < NUM_OPS; i++) {
		const struct ur_opcode_info *info = ur_opcode_info(all_ops[i].val);
		uint8_t covered[64] = {0};
		unsigned sum = UR_BTH_LEN;

		ASSERT(info);
		ASSERT_STR_EQ(info->name, all_ops[i].name);
		ASSERT_EQ(ur_pkt_hdr_len(all_ops[i].val), info->hdr_len);
		for (int e = 0; e < UR_ETH_NUM; e++) {
			bool present = info->mask & (1u << e);

			if (!present) {
				ASSERT_EQ(info->off[e], 0);
				continue;
			}
			ASSERT_GE(info->off[e], UR_BTH_LEN);
			ASSERT_LE(info->off[e] + eth_len[e], info->hdr_len);
			for (int b = info->off[e]; b < info->off[e] + eth_len[e]; b++) {
				ASSERT_EQ(covered[b], 0); /* no overlap */
				covered[b] = 1;
			}
			sum += eth_len[e];
		}
		ASSERT_EQ(sum, info->hdr_len); /* headers tile BTH..hdr_len */
		if (info->fixed_payload)
			ASSERT(info->mask & UR_HDR_PAYLOAD);
		/* Requests vs responses. */
		ASSERT((info->mask & UR_OPF_REQ) == 0 ||
		       (info->mask & UR_OPF_ACK) == 0);
		if ((info->mask & UR_OPF_ONLY) == UR_OPF_ONLY)
			ASSERT(!(info->mask & UR_OPF_MIDDLE));
	}
	/* Spot checks against IBTA table 38 / A17.9. */
	ASSERT_EQ(ur_opcode_info(UR_OP_RC_FLUSH)->off[UR_ETH_FETH], 12);
	ASSERT_EQ(ur_opcode_info(UR_OP_RC_FLUSH)->off[UR_ETH_RETH], 16);
	ASSERT_EQ(ur_opcode_info(UR_OP_RC_ATOMIC_WRITE)->fixed_payload, 8);
	ASSERT_EQ(ur_opcode_info(UR_OP_CNP)->fixed_payload, 16);
	ASSERT_EQ(ur_opcode_info(UR_OP_UD_SEND_ONLY_IMM)->off[UR_ETH_IMMDT], 20);
	ASSERT_EQ(ur_opcode_info(UR_OP_RC_RDMA_WRITE_ONLY_IMM)->hdr_len, 32);
	ASSERT_EQ(ur_opcode_info(UR_OP_RC_ATOMIC_ACKNOWLEDGE)->hdr_len, 24);
	ASSERT_EQ(ur_opcode_info(UR_OP_RC_COMPARE_SWAP)->hdr_len, 40);
	ASSERT_STR_EQ(ur_opcode_name(0x81), "CNP");
	/* XRC (table 38, prefix 101b): XRCETH right after the BTH of a
	 * request, before RETH/AtomicETH/ImmDt/IETH; none on responses. */
	ASSERT_STR_EQ(ur_opcode_name(0xa4), "XRC_SEND_ONLY");
	ASSERT_STR_EQ(ur_opcode_name(0xb5), "UNKNOWN");
	ASSERT_EQ(ur_opcode_info(UR_OP_XRC_SEND_ONLY)->off[UR_ETH_XRCETH], 12);
	ASSERT_EQ(ur_opcode_info(UR_OP_XRC_SEND_ONLY)->hdr_len, 16);
	ASSERT_EQ(ur_opcode_info(UR_OP_XRC_SEND_ONLY_IMM)->off[UR_ETH_IMMDT], 16);
	ASSERT_EQ(ur_opcode_info(UR_OP_XRC_RDMA_WRITE_ONLY_IMM)->off[UR_ETH_RETH], 16);
	ASSERT_EQ(ur_opcode_info(UR_OP_XRC_RDMA_WRITE_ONLY_IMM)->off[UR_ETH_IMMDT], 32);
	ASSERT_EQ(ur_opcode_info(UR_OP_XRC_COMPARE_SWAP)->hdr_len, 44);
	ASSERT_EQ(ur_opcode_info(UR_OP_XRC_SEND_ONLY_INV)->off[UR_ETH_IETH], 16);
	ASSERT_EQ(ur_opcode_info(UR_OP_XRC_RDMA_READ_REQUEST)->hdr_len, 32);
	ASSERT_EQ(ur_opcode_info(UR_OP_XRC_ACKNOWLEDGE)->hdr_len, 16);
	ASSERT(!(ur_opcode_info(UR_OP_XRC_ACKNOWLEDGE)->mask & UR_HDR_XRCETH));
	ASSERT(!(ur_opcode_info(UR_OP_XRC_RDMA_READ_RESPONSE_MIDDLE)->mask &
		 UR_HDR_XRCETH));
	for (size_t i = 0; i < NUM_OPS; i++) {
		uint8_t op = all_ops[i].val;
		const struct ur_opcode_info *x, *rc;

		if (!ur_op_is_xrc(op))
			continue;
		/* Each XRC opcode mirrors the RC one in its low five bits,
		 * with the XRCETH exactly on its requests. */
		x = ur_opcode_info(op);
		rc = ur_opcode_info(ur_op_xrc_to_rc(op));
		ASSERT(rc);
		ASSERT_EQ(ur_op_xrc(ur_op_xrc_to_rc(op)), op);
		ASSERT_EQ(x->mask & ~(uint32_t)UR_HDR_XRCETH, rc->mask);
		ASSERT_EQ(!!(x->mask & UR_HDR_XRCETH), !!(x->mask & UR_OPF_REQ));
		ASSERT_EQ(x->hdr_len, rc->hdr_len +
				      ((x->mask & UR_HDR_XRCETH) ? UR_XRCETH_LEN : 0));
		ASSERT_STR_EQ(x->name + 1, rc->name); /* "XRC_.." / "RC_.." */
	}
}

static void test_psn(void)
{
	ASSERT_EQ(ur_psn_add(0xffffff, 1), 0);
	ASSERT_EQ(ur_psn_add(0xfffffe, 5), 3);
	ASSERT_EQ(ur_psn_diff(0, 0xffffff), 1);
	ASSERT_EQ(ur_psn_diff(0xffffff, 0), -1);
	ASSERT_EQ(ur_psn_diff(5, 5), 0);
	ASSERT_EQ(ur_psn_diff(0x7fffff, 0), 0x7fffff);
	ASSERT_EQ(ur_psn_diff(0x800000, 0), -0x800000);
	ASSERT_EQ(ur_psn_cmp(2, 0xfffffe), 1);
	ASSERT_EQ(ur_psn_cmp(0xfffffe, 2), -1);
	ASSERT_EQ(ur_psn_cmp(7, 7), 0);
	for (int i = 0; i < 100000; i++) {
		uint32_t a = (uint32_t)rnd() & UR_PSN_MASK;
		uint32_t n = (uint32_t)rnd() % 0x7fffff + 1;
		uint32_t b = ur_psn_add(a, n);

		ASSERT_EQ(ur_psn_diff(b, a), n);
		ASSERT_EQ(ur_psn_cmp(a, b), -1);
		ASSERT_EQ(ur_psn_cmp(b, a), 1);
	}
}

static void test_aeth(void)
{
	char s[32];

	ASSERT_EQ(ur_rnr_timer_us(0), 655360);
	ASSERT_EQ(ur_rnr_timer_us(1), 10);
	ASSERT_EQ(ur_rnr_timer_us(12), 640);
	ASSERT_EQ(ur_rnr_timer_us(14), 1280);
	ASSERT_EQ(ur_rnr_timer_us(31), 491520);
	for (int c = 2; c < 32; c++)
		ASSERT_GT(ur_rnr_timer_us((uint8_t)c),
			  ur_rnr_timer_us((uint8_t)(c - 1)));
	ASSERT_EQ(ur_credit_count(0), 0);
	ASSERT_EQ(ur_credit_count(5), 6);
	ASSERT_EQ(ur_credit_count(30), 32768);
	ASSERT_EQ(ur_credit_count(UR_AETH_CREDIT_INVALID), UINT32_MAX);
	for (int c = 1; c < 31; c++)
		ASSERT_GT(ur_credit_count((uint8_t)c),
			  ur_credit_count((uint8_t)(c - 1)));
	ASSERT_EQ(ur_aeth_ack(0x1f), 0x1f);
	ASSERT_EQ(ur_aeth_rnr_nak(12), 0x2c);
	ASSERT_EQ(ur_aeth_nak(UR_NAK_PSN_SEQ_ERR), 0x60);
	ASSERT_EQ(ur_aeth_nak(UR_NAK_REM_OP_ERR), 0x63);
	ASSERT_EQ(ur_aeth_kind(0x2c), UR_AETH_RNR_NAK);
	ASSERT_EQ(ur_aeth_value(0x2c), 12);
	ASSERT_STR_EQ(ur_aeth_str(0x1f, s, sizeof(s)), "ACK");
	ASSERT_STR_EQ(ur_aeth_str(0x60, s, sizeof(s)), "NAK(PSN_SEQ_ERR)");
	ASSERT_STR_EQ(ur_aeth_str(0x62, s, sizeof(s)), "NAK(REM_ACCESS_ERR)");
	ASSERT_STR_EQ(ur_aeth_str(0x21, s, sizeof(s)), "RNR_NAK(10us)");
	ASSERT_STR_EQ(ur_aeth_str(0x7f, s, sizeof(s)), "NAK(0x1f)");
	ASSERT_STR_EQ(ur_aeth_str(0x40, s, sizeof(s)), "RSVD(0x40)");
}

/* A payload length the opcode accepts. */
static uint32_t valid_payload_len(const struct ur_opcode_info *info)
{
	static const uint32_t pmtu[] = {256, 512, 1024, 2048, 4096};

	if (!(info->mask & UR_HDR_PAYLOAD))
		return 0;
	if (info->fixed_payload)
		return info->fixed_payload;
	if ((info->mask & (UR_OPF_FIRST | UR_OPF_LAST)) == UR_OPF_FIRST ||
	    (info->mask & UR_OPF_MIDDLE))
		return pmtu[rnd() % 5];
	return (uint32_t)(rnd() % 1500);
}

static void random_pkt(uint8_t opcode, struct ur_pkt *p)
{
	memset(p, 0, sizeof(*p));
	p->h.opcode = opcode;
	p->h.se = rnd() & 1;
	p->h.mig = rnd() & 1;
	p->h.fecn = rnd() & 1;
	p->h.becn = rnd() & 1;
	p->h.ackreq = rnd() & 1;
	p->h.pkey = (uint16_t)rnd();
	p->h.dqpn = (uint32_t)rnd() & 0xffffff;
	p->h.psn = (uint32_t)rnd() & UR_PSN_MASK;
	p->reth = (struct ur_reth){rnd(), (uint32_t)rnd(), (uint32_t)rnd()};
	p->aeth = (struct ur_aeth){(uint8_t)rnd(), (uint32_t)rnd() & 0xffffff};
	p->atm = (struct ur_atmeth){rnd(), (uint32_t)rnd(), rnd(), rnd()};
	p->atmack = rnd();
	p->imm = (uint32_t)rnd();
	p->ieth = (uint32_t)rnd();
	p->deth = (struct ur_deth){(uint32_t)rnd(), (uint32_t)rnd() & 0xffffff};
	p->feth = (struct ur_feth){(uint8_t)(rnd() & 3), (uint8_t)(rnd() & 15)};
	p->xrc_srqn = (uint32_t)rnd() & 0xffffff;
}

static void test_roundtrip(void)
{
	static uint8_t buf[8192], buf2[8192], payload[4096];

	for (int iter = 0; iter < 200; iter++) {
		for (size_t i = 0; i < NUM_OPS; i++) {
			const struct ur_opcode_info *info =
				ur_opcode_info(all_ops[i].val);
			struct ur_pkt in, out;
			uint32_t plen = valid_payload_len(info);
			int n, n2;

			random_pkt(all_ops[i].val, &in);
			fill_random(payload, plen);
			n = ur_pkt_encode(buf, sizeof(buf), &in, payload, plen);
			ASSERT_GT(n, 0);
			ASSERT_EQ(n, info->hdr_len + plen + ((4 - plen % 4) % 4) + 4);
			ASSERT_EQ(ur_pkt_decode(buf, (size_t)n, &out), UR_DEC_OK);
			ASSERT(out.info == info);
			ASSERT_EQ(out.h.opcode, in.h.opcode);
			ASSERT_EQ(out.h.se, in.h.se);
			ASSERT_EQ(out.h.mig, in.h.mig);
			ASSERT_EQ(out.h.fecn, in.h.fecn);
			ASSERT_EQ(out.h.becn, in.h.becn);
			ASSERT_EQ(out.h.ackreq, in.h.ackreq);
			ASSERT_EQ(out.h.pkey, in.h.pkey);
			ASSERT_EQ(out.h.dqpn, in.h.dqpn);
			ASSERT_EQ(out.h.psn, in.h.psn);
			ASSERT_EQ(out.h.pad, (4 - plen % 4) % 4);
			ASSERT_EQ(out.payload_len, plen);
			ASSERT_MEM_EQ(out.payload, payload, plen);
			if (info->mask & UR_HDR_RETH) {
				ASSERT_EQ_U64(out.reth.va, in.reth.va);
				ASSERT_EQ(out.reth.rkey, in.reth.rkey);
				ASSERT_EQ(out.reth.len, in.reth.len);
			}
			if (info->mask & UR_HDR_XRCETH) {
				ASSERT_EQ(out.xrc_srqn, in.xrc_srqn);
				/* reserved byte zero, then the number */
				ASSERT_EQ(buf[UR_BTH_LEN], 0);
				ASSERT_EQ(ur_get24(buf + UR_BTH_LEN + 1),
					  in.xrc_srqn);
			} else {
				ASSERT_EQ(out.xrc_srqn, 0);
			}
			if (info->mask & UR_HDR_AETH) {
				ASSERT_EQ(out.aeth.syndrome, in.aeth.syndrome);
				ASSERT_EQ(out.aeth.msn, in.aeth.msn);
			}
			if (info->mask & UR_HDR_ATMETH) {
				ASSERT_EQ_U64(out.atm.va, in.atm.va);
				ASSERT_EQ(out.atm.rkey, in.atm.rkey);
				ASSERT_EQ_U64(out.atm.swap_add, in.atm.swap_add);
				ASSERT_EQ_U64(out.atm.compare, in.atm.compare);
			}
			if (info->mask & UR_HDR_ATMACK)
				ASSERT_EQ_U64(out.atmack, in.atmack);
			if (info->mask & UR_HDR_IMMDT)
				ASSERT_EQ(out.imm, in.imm);
			if (info->mask & UR_HDR_IETH)
				ASSERT_EQ(out.ieth, in.ieth);
			if (info->mask & UR_HDR_DETH) {
				ASSERT_EQ(out.deth.qkey, in.deth.qkey);
				ASSERT_EQ(out.deth.sqpn, in.deth.sqpn);
			}
			if (info->mask & UR_HDR_FETH) {
				ASSERT_EQ(out.feth.sel_level, in.feth.sel_level);
				ASSERT_EQ(out.feth.placement, in.feth.placement);
			}
			/* Decoded view re-encodes to the same bytes. */
			n2 = ur_pkt_encode(buf2, sizeof(buf2), &out,
					   out.payload, out.payload_len);
			ASSERT_EQ(n2, n);
			ASSERT_MEM_EQ(buf2, buf, (size_t)n);
			/* Too small a buffer. */
			ASSERT_EQ(ur_pkt_encode(buf2, (size_t)n - 1, &in, payload,
						plen), -ENOSPC);
		}
	}
}

static void test_encode_errors(void)
{
	uint8_t buf[256];
	struct ur_pkt p = {0};
	int n;

	p.h.opcode = 0x15;
	ASSERT_EQ(ur_pkt_encode(buf, sizeof(buf), &p, NULL, 0), -EINVAL);
	p.h.opcode = UR_OP_RC_ACKNOWLEDGE;
	ASSERT_EQ(ur_pkt_encode(buf, sizeof(buf), &p, buf, 4), -EINVAL);
	p.h.opcode = UR_OP_RC_ATOMIC_WRITE;
	ASSERT_EQ(ur_pkt_encode(buf, sizeof(buf), &p, buf, 4), -EINVAL);
	/* A CNP with its reserved bytes left to the encoder. */
	p.h.opcode = UR_OP_CNP;
	p.h.becn = true;
	p.h.pkey = 0xffff;
	p.h.dqpn = 0xd2;
	n = ur_pkt_encode(buf, sizeof(buf), &p, NULL, 0);
	ASSERT_EQ(n, 32);
	for (int i = 12; i < 28; i++)
		ASSERT_EQ(buf[i], 0);
	ASSERT_EQ(buf[0], 0x81);
	ASSERT_EQ(buf[4], 0x40);
}

static void test_crc32(void)
{
	static uint8_t buf[8192 + 16];
	const char *check = "123456789";

	ASSERT_EQ(ur_crc32(0, check, 9), 0xcbf43926u);
	ASSERT_EQ(ur_crc32(0, NULL, 0), 0);
	if (__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1"))
		ASSERT_STR_EQ(ur_crc32_impl(), "pclmul");
	fill_random(buf, sizeof(buf));
	for (int i = 0; i < 9000; i++) {
		/* Each width the CPU has: 128-bit lanes, then VPCLMULQDQ's
		 * 256- and 512-bit loops. */
		unsigned int bits = ur_crc32_vec_bits(128u << (i % 3));
		size_t align = rnd() % 16;
		size_t len = i < 900 ? (size_t)i / 3 : rnd() % 8192;
		uint32_t seed = (i & 1) ? (uint32_t)rnd() : 0;
		uint32_t z = (uint32_t)crc32(seed, buf + align, (uInt)len);
		uint32_t fast, slow, chained;
		size_t cut = len ? rnd() % len : 0;

		ur_crc32_force_portable(false);
		fast = ur_crc32(seed, buf + align, len);
		chained = ur_crc32(ur_crc32(seed, buf + align, cut),
				   buf + align + cut, len - cut);
		ur_crc32_force_portable(true);
		ASSERT_STR_EQ(ur_crc32_impl(), "slice8");
		slow = ur_crc32(seed, buf + align, len);
		ur_crc32_force_portable(false);
		if (fast != z || slow != z || chained != z)
			UR_FAIL("len %zu align %zu: zlib %08x pclmul-%u %08x "
				"slice8 %08x chained %08x", len, align, z, bits,
				fast, slow, chained);
	}
	ur_crc32_vec_bits(512);
}

/* ur_crc32_copy: the CRC of ur_crc32, and exactly @len bytes copied (the
 * folding loop stores most of them, memcpy the head and the tail), with
 * both back ends, at any length and alignment of either side. */
static void test_crc32_copy(void)
{
	static uint8_t src[20000 + 32], dst[20000 + 64];

	fill_random(src, sizeof(src));
	for (int i = 0; i < 6000; i++) {
		bool portable = i & 1;
		unsigned int bits = ur_crc32_vec_bits(128u << (i / 2 % 3));
		size_t sa = rnd() % 32, da = rnd() % 32;
		size_t len = i < 1200 ? (size_t)i / 4 : rnd() % 20000;
		uint32_t seed = (i & 2) ? (uint32_t)rnd() : 0, want, got;

		memset(dst, 0xa5, sizeof(dst));
		want = (uint32_t)crc32(seed, src + sa, (uInt)len); /* zlib */
		ur_crc32_force_portable(portable);
		got = ur_crc32_copy(seed, dst + da, src + sa, len);
		ur_crc32_force_portable(false);
		if (got != want || memcmp(dst + da, src + sa, len))
			UR_FAIL("len %zu src+%zu dst+%zu %s-%u: crc %08x want %08x, copy %s",
				len, sa, da, portable ? "slice8" : "pclmul", bits,
				got, want, memcmp(dst + da, src + sa, len) ? "differs" : "same");
		for (size_t k = 0; k < da; k++)
			ASSERT_EQ(dst[k], 0xa5);
		for (size_t k = da + len; k < sizeof(dst); k++)
			ASSERT_EQ(dst[k], 0xa5);
	}
	ur_crc32_vec_bits(512);
}

static void mk_ipudp(struct ur_ipudp *ip, bool v6)
{
	memset(ip, 0, sizeof(*ip));
	ip->v6 = v6;
	fill_random(ip->src, v6 ? 16 : 4);
	fill_random(ip->dst, v6 ? 16 : 4);
	ip->sport = (uint16_t)rnd();
	ip->dport = UR_ROCEV2_PORT;
	ip->tos = (uint8_t)rnd();
	ip->ttl = (uint8_t)rnd();
	ip->ip_id = (uint16_t)rnd();
	ip->ip_frag = 0x4000;
	ip->flow_label = (uint32_t)rnd() & 0xfffff;
}

/* Builds the real IP + UDP header bytes @ip describes, as a kernel would. */
static size_t build_hdrs(uint8_t *h, const struct ur_ipudp *ip, size_t ib_len)
{
	size_t udp_len = 8 + ib_len + 4, l;

	if (!ip->v6) {
		h[0] = 0x45;
		h[1] = ip->tos;
		ur_put16(h + 2, (uint16_t)(20 + udp_len));
		ur_put16(h + 4, ip->ip_id);
		ur_put16(h + 6, ip->ip_frag);
		h[8] = ip->ttl;
		h[9] = 17;
		ur_put16(h + 10, (uint16_t)rnd()); /* any checksum */
		memcpy(h + 12, ip->src, 4);
		memcpy(h + 16, ip->dst, 4);
		l = 20;
	} else {
		ur_put32(h, 0x60000000u | ((uint32_t)ip->tos << 20) |
				    ip->flow_label);
		ur_put16(h + 4, (uint16_t)udp_len);
		h[6] = 17;
		h[7] = ip->ttl;
		memcpy(h + 8, ip->src, 16);
		memcpy(h + 24, ip->dst, 16);
		l = 40;
	}
	ur_put16(h + l, ip->sport);
	ur_put16(h + l + 2, ip->dport);
	ur_put16(h + l + 4, (uint16_t)udp_len);
	ur_put16(h + l + 6, (uint16_t)rnd()); /* any checksum */
	return l + 8;
}

static void test_icrc(void)
{
	static uint8_t ib[2048];
	uint8_t h[64];

	for (int i = 0; i < 2000; i++) {
		bool v6 = i & 1;
		struct ur_ipudp ip, ip2;
		size_t ib_len = 12 + 4 * (rnd() % 400), hl;
		uint32_t a, b;

		mk_ipudp(&ip, v6);
		fill_random(ib, ib_len);
		hl = build_hdrs(h, &ip, ib_len);
		a = ur_icrc(&ip, ib, ib_len);
		b = ur_icrc_raw(h, hl, v6, ib, ib_len);
		ASSERT_EQ(a, b);
		/* Masked fields do not matter... */
		ip2 = ip;
		ip2.tos ^= 0xff;
		ip2.ttl ^= 0x55;
		ip2.flow_label ^= 0x12345;
		ib[4] ^= 0xc0; /* FECN, BECN */
		ASSERT_EQ(ur_icrc(&ip2, ib, ib_len), a);
		ib[4] ^= 0xc0;
		/* ...the others do. */
		ip2 = ip;
		if (v6)
			ip2.src[15] ^= 1;
		else
			ip2.ip_id ^= 1;
		ASSERT_NE(ur_icrc(&ip2, ib, ib_len), a);
		ib[5] ^= 1;
		ASSERT_NE(ur_icrc(&ip, ib, ib_len), a);
		ib[5] ^= 1;
		/* Zero-copy transmit: headers, payload elsewhere, zero pad. */
		{
			size_t hdr = 12 + 4 * (rnd() % 8), pad = rnd() % 4, pl;

			if (hdr + pad <= ib_len) {
				pl = ib_len - hdr - pad;
				memset(ib + hdr + pl, 0, pad);
				ASSERT_EQ(ur_icrc_split(&ip, ib, hdr, ib + hdr, pl, pad),
					  ur_icrc(&ip, ib, ib_len));
			}
		}
		/* Receive placement: checked and copied in one pass (the
		 * pad above may have changed the packet: a is stale). */
		{
			static uint8_t out[2048];
			size_t hdr = 12 + 4 * (rnd() % 8);

			if (hdr <= ib_len) {
				ASSERT_EQ(ur_icrc_copy(&ip, ib, ib_len, hdr, out),
					  ur_icrc(&ip, ib, ib_len));
				ASSERT_EQ(memcmp(out, ib + hdr, ib_len - hdr), 0);
			}
		}
	}
	ASSERT_EQ(ur_icrc_raw(h, 27, false, ib, 12), 0);
	/* A GSO run: one flow, IDs 0..39 then random ones; the pseudo
	 * header's memo leaves the ID out and corrects for it. */
	{
		struct ur_ipudp ip;
		size_t ib_len = sizeof(ib), hl;

		mk_ipudp(&ip, false);
		fill_random(ib, sizeof(ib));
		for (int i = 0; i < 80; i++) {
			ip.ip_id = i < 40 ? (uint16_t)i : (uint16_t)rnd();
			hl = build_hdrs(h, &ip, ib_len);
			ASSERT_EQ(ur_icrc(&ip, ib, ib_len),
				  ur_icrc_raw(h, hl, false, ib, ib_len));
		}
	}
}

/*
 * A receiver that assumes ID 0 and DF recovers any sender's ID and DF
 * from the ICRC, at any length up to a jumbo packet; a packet with one
 * changed bit or byte is (almost never) explained by an ID.
 */
static void test_icrc_fix_id(void)
{
	static uint8_t ib[16384 + 64];
	int explained = 0, n = 3000;

	for (int i = 0; i < n; i++) {
		struct ur_ipudp ip, q;
		/* Half from a few lengths, more than the solver keeps per
		 * thread: its kept systems are hit and replaced. */
		size_t ib_len = i % 2 ? 12 + 4 * (rnd() % (sizeof(ib) / 4 - 3)) :
					28 + 1024 * (rnd() % 12), at;
		uint32_t want;

		mk_ipudp(&ip, false);
		ip.ip_frag = (rnd() & 1) ? 0x4000 : 0;
		fill_random(ib, ib_len);
		want = ur_icrc(&ip, ib, ib_len);
		q = ip;
		q.ip_id = 0;
		q.ip_frag = 0x4000;
		if (!ur_icrc_fix_ipv4_id(&q, ib_len, ur_icrc(&q, ib, ib_len) ^ want) ||
		    q.ip_id != ip.ip_id || q.ip_frag != ip.ip_frag)
			UR_FAIL("len %zu: ID 0x%04x/0x%04x recovered as 0x%04x/0x%04x",
				ib_len, ip.ip_id, ip.ip_frag, q.ip_id, q.ip_frag);
		/* Change the IB part outside the masked BTH byte 4. */
		at = rnd() % ib_len;
		if (at == 4)
			at = 5;
		ib[at] ^= (uint8_t)(1 + rnd() % 255);
		q = ip;
		q.ip_id = 0;
		q.ip_frag = 0x4000;
		explained += ur_icrc_fix_ipv4_id(&q, ib_len,
						 ur_icrc(&q, ib, ib_len) ^ want);
	}
	/* 17 unknown bits in a 32-bit CRC: chance 2^-15 each, about 0.1 in
	 * 3000; more than 2 would mean the solver accepts too much. */
	ASSERT_LE(explained, 2);
	/* IPv6 has no ID: nothing to recover; an unchanged ICRC is fine. */
	{
		struct ur_ipudp ip;

		mk_ipudp(&ip, true);
		ASSERT(!ur_icrc_fix_ipv4_id(&ip, 100, 1));
		ASSERT(ur_icrc_fix_ipv4_id(&(struct ur_ipudp){ .ip_id = 7 }, 100, 0));
	}
}

static void expect(const uint8_t *buf, size_t len, enum ur_decode_err want)
{
	struct ur_pkt p;
	enum ur_decode_err got = ur_pkt_decode(buf, len, &p);

	if (got != want)
		UR_FAIL("opcode 0x%02x len %zu: got \"%s\", want \"%s\"",
			len ? buf[0] : 0, len, ur_decode_strerror(got),
			ur_decode_strerror(want));
}

static int enc(uint8_t *buf, uint8_t op, uint32_t plen)
{
	static uint8_t payload[4096];
	struct ur_pkt p = {0};

	p.h.opcode = op;
	p.h.pkey = 0xffff;
	return ur_pkt_encode(buf, 8192, &p, payload, plen);
}

static void test_decode_errors(void)
{
	static uint8_t b[8192];
	int n;

	ASSERT_STR_EQ(ur_decode_strerror(UR_DEC_OK), "ok");
	ASSERT_STR_EQ(ur_decode_strerror(UR_DEC_BAD_LENGTH),
		      "length contradicts headers");
	ASSERT_STR_EQ(ur_decode_strerror((enum ur_decode_err)99), "unknown error");
	n = enc(b, UR_OP_RC_SEND_ONLY, 0);
	ASSERT_EQ(n, 16);
	expect(b, 16, UR_DEC_OK);
	expect(b, 15, UR_DEC_TRUNCATED);
	expect(b, 0, UR_DEC_TRUNCATED);
	expect(b, 18, UR_DEC_BAD_LENGTH); /* not whole words */
	b[0] = 0x15;
	expect(b, 16, UR_DEC_UNKNOWN_OPCODE);
	b[0] = 0xff;
	expect(b, 16, UR_DEC_UNKNOWN_OPCODE);
	b[0] = UR_OP_RC_SEND_ONLY;
	b[1] |= 1;
	expect(b, 16, UR_DEC_BAD_TVER);
	b[1] = 0x30; /* pad 3, no payload */
	expect(b, 16, UR_DEC_BAD_LENGTH);
	/* Header longer than the packet. */
	n = enc(b, UR_OP_RC_RDMA_READ_REQUEST, 0);
	ASSERT_EQ(n, 32);
	expect(b, 32, UR_DEC_OK);
	expect(b, 28, UR_DEC_TRUNCATED);
	expect(b, 36, UR_DEC_BAD_LENGTH); /* a read request has no payload */
	n = enc(b, UR_OP_RC_ACKNOWLEDGE, 0);
	expect(b, 20, UR_DEC_OK);
	expect(b, 24, UR_DEC_BAD_LENGTH);
	/* Fixed payloads. */
	n = enc(b, UR_OP_CNP, 16);
	ASSERT_EQ(n, 32);
	expect(b, 32, UR_DEC_OK);
	expect(b, 28, UR_DEC_BAD_LENGTH);
	expect(b, 36, UR_DEC_BAD_LENGTH);
	n = enc(b, UR_OP_RC_ATOMIC_WRITE, 8);
	ASSERT_EQ(n, 40);
	expect(b, 40, UR_DEC_OK);
	expect(b, 44, UR_DEC_BAD_LENGTH);
	/* RETH-less middle packets carry exactly one PMTU, unpadded. */
	n = enc(b, UR_OP_RC_RDMA_WRITE_MIDDLE, 1024);
	expect(b, (size_t)n, UR_DEC_OK);
	expect(b, (size_t)n - 4, UR_DEC_BAD_LENGTH);
	n = enc(b, UR_OP_RC_SEND_MIDDLE, 100);
	expect(b, (size_t)n, UR_DEC_BAD_LENGTH);
	n = enc(b, UR_OP_RC_RDMA_READ_RESPONSE_FIRST, 256);
	expect(b, (size_t)n, UR_DEC_OK);
	b[1] |= 0x10;
	expect(b, (size_t)n, UR_DEC_BAD_LENGTH);
	/* LAST may be short. */
	n = enc(b, UR_OP_UC_SEND_LAST, 5);
	ASSERT_EQ(n, 24);
	expect(b, 24, UR_DEC_OK);
}

static void test_decode_total(void)
{
	static uint8_t b[4200], v[4200];

	/* Random garbage of every small length, and longer. */
	for (int i = 0; i < 200000; i++) {
		size_t len = i < 100000 ? rnd() % 64 : rnd() % 4200;
		struct ur_pkt p;
		enum ur_decode_err e;

		fill_random(b, len);
		if (i & 1)
			b[1] &= 0xcf; /* tver 0 half the time */
		e = ur_pkt_decode(b, len, &p);
		ASSERT_LT((unsigned)e, UR_DEC_NUM);
		if (e == UR_DEC_OK) {
			/* A sealed packet's trailer sits between payload
			 * and pad (docs/wire.md "Encryption"). */
			ASSERT(p.payload + p.payload_len +
				       (p.trailer ? UR_CRYPT_TRAILER_LEN : 0) +
				       p.h.pad + 4 == b + len);
			ASSERT(!p.trailer || (ur_bth_ext_crypt(b) &&
					      p.trailer == p.payload +
							   p.payload_len));
			ASSERT(p.info);
		}
	}
	/* Valid packets, mutated and truncated. */
	for (int i = 0; i < 20000; i++) {
		uint8_t op = all_ops[rnd() % NUM_OPS].val;
		const struct ur_opcode_info *info = ur_opcode_info(op);
		struct ur_pkt in, p;
		uint32_t plen = valid_payload_len(info);
		int n;
		size_t cut;

		random_pkt(op, &in);
		fill_random(v, plen);
		n = ur_pkt_encode(b, sizeof(b), &in, v, plen);
		ASSERT_GT(n, 0);
		cut = rnd() % (size_t)n;
		if (cut < (size_t)info->hdr_len + 4)
			ASSERT_EQ(ur_pkt_decode(b, cut, &p), UR_DEC_TRUNCATED);
		else
			ASSERT_LT((unsigned)ur_pkt_decode(b, cut, &p),
				  UR_DEC_NUM);
		for (int m = 0; m < 4; m++)
			b[rnd() % (size_t)n] ^= (uint8_t)(1u << (rnd() % 8));
		ASSERT_LT((unsigned)ur_pkt_decode(b, (size_t)n, &p), UR_DEC_NUM);
	}
}

/* CM REQ as an IBTA 12.6.5 reader would lay it out. */
static void test_cm(void)
{
	uint8_t mad[256] = {0};
	struct ur_cm_msg m;
	struct ur_mad_hdr h;
	char cls[96];

	mad[0] = 1;
	mad[1] = UR_MGMT_CLASS_CM;
	mad[2] = 2;
	mad[3] = 0x03;
	ur_put64(mad + 8, 0x1122334455667788ull);
	ur_put16(mad + 16, UR_CM_ATTR_REQ);
	ur_put32(mad + 24, 0xdeadbeef);			  /* local comm ID */
	ur_put64(mad + 32, 0x0000000001064e21ull);	  /* service ID */
	ur_put32(mad + 52, UR_GSI_QKEY);		  /* Q_Key */
	ur_put32(mad + 56, (0x000123u << 8) | 4);	  /* QPN | resp res */
	mad[63] = 3;					  /* initiator depth */
	mad[67] = 0 << 1;				  /* RC */
	ur_put32(mad + 68, (0xabcdefu << 8) | (16 << 3) | 7); /* PSN */
	mad[74] = (3 << 4) | 7;				  /* MTU 1024, RNR */
	mad[119] = 14 << 3;				  /* ACK timeout */
	mad[164] = 0xaa;				  /* private data */
	ASSERT_EQ(ur_cm_decode(mad, 256, &m), 0);
	ASSERT_STR_EQ(m.name, "REQ");
	ASSERT_EQ(m.local_comm_id, 0xdeadbeef);
	ASSERT_EQ_U64(m.service_id, 0x0000000001064e21ull);
	ASSERT_EQ(m.local_qkey, UR_GSI_QKEY);
	ASSERT_EQ(m.local_qpn, 0x123);
	ASSERT_EQ(m.resp_resources, 4);
	ASSERT_EQ(m.initiator_depth, 3);
	ASSERT_EQ(m.starting_psn, 0xabcdef);
	ASSERT_EQ(m.retry_cnt, 7);
	ASSERT_EQ(m.path_mtu, 3);
	ASSERT_EQ(m.rnr_retry, 7);
	ASSERT_EQ(m.timeout, 14);
	ASSERT_EQ(m.qp_type, 0);
	ASSERT_EQ(m.private_len, 92);
	ASSERT_EQ(m.private_data[0], 0xaa);
	ASSERT_EQ_U64(m.mad.tid, 0x1122334455667788ull);
	/* Errors. */
	ASSERT_EQ(ur_cm_decode(mad, 255, &m), -EBADMSG);
	ASSERT_EQ(ur_mad_decode(mad, 10, &h), -EBADMSG);
	ur_put16(mad + 16, 0x0099);
	ASSERT_EQ(ur_cm_decode(mad, 256, &m), -EINVAL);
	ASSERT(m.name == NULL);
	mad[1] = 0x01;
	ASSERT_EQ(ur_cm_decode(mad, 256, &m), -EINVAL);
	/* Every attribute has a name; REJ reason; DREQ remote QPN. */
	mad[1] = UR_MGMT_CLASS_CM;
	for (uint16_t a = UR_CM_ATTR_REQ; a <= UR_CM_ATTR_SIDR_REP; a++) {
		ur_put16(mad + 16, a);
		ASSERT_EQ(ur_cm_decode(mad, 256, &m), 0);
		ASSERT(m.name);
		ASSERT_LE(m.private_data + m.private_len, mad + 256);
	}
	ur_put16(mad + 16, UR_CM_ATTR_REJ);
	ur_put16(mad + 34, 28);
	ASSERT_EQ(ur_cm_decode(mad, 256, &m), 0);
	ASSERT_EQ(m.rej_reason, 28);
	ASSERT_STR_EQ(m.name, "REJ");

	/* The README-style class line of a QP1 packet. */
	{
		uint8_t pkt[512];
		struct ur_pkt p = {0}, d;
		int n;

		ur_put16(mad + 16, UR_CM_ATTR_RTU);
		p.h.opcode = UR_OP_UD_SEND_ONLY;
		p.h.dqpn = 1;
		p.deth.qkey = UR_GSI_QKEY;
		p.deth.sqpn = 1;
		n = ur_pkt_encode(pkt, sizeof(pkt), &p, mad, 256);
		ASSERT_EQ(ur_pkt_decode(pkt, (size_t)n, &d), UR_DEC_OK);
		ASSERT_STR_EQ(ur_pkt_class_str(&d, cls, sizeof(cls)),
			      "UD SEND_ONLY QP1 MAD class=0x07 CM RTU Send");
		p.h.opcode = UR_OP_RC_ACKNOWLEDGE;
		p.aeth.syndrome = ur_aeth_rnr_nak(3);
		n = ur_pkt_encode(pkt, sizeof(pkt), &p, NULL, 0);
		ASSERT_EQ(ur_pkt_decode(pkt, (size_t)n, &d), UR_DEC_OK);
		ASSERT_STR_EQ(ur_pkt_class_str(&d, cls, sizeof(cls)),
			      "RC ACKNOWLEDGE [RNR_NAK]");
		p.aeth.syndrome = ur_aeth_nak(UR_NAK_PSN_SEQ_ERR);
		ur_pkt_encode(pkt, sizeof(pkt), &p, NULL, 0);
		ur_pkt_decode(pkt, (size_t)n, &d);
		ASSERT_STR_EQ(ur_pkt_class_str(&d, cls, sizeof(cls)),
			      "RC ACKNOWLEDGE [NAK(PSN_SEQ_ERR)]");
		p.h.opcode = UR_OP_XRC_ACKNOWLEDGE;
		n = ur_pkt_encode(pkt, sizeof(pkt), &p, NULL, 0);
		ASSERT_EQ(ur_pkt_decode(pkt, (size_t)n, &d), UR_DEC_OK);
		ASSERT_STR_EQ(ur_pkt_class_str(&d, cls, sizeof(cls)),
			      "XRC ACKNOWLEDGE [NAK(PSN_SEQ_ERR)]");
		p.h.opcode = UR_OP_XRC_SEND_ONLY;
		p.xrc_srqn = 0x123456;
		n = ur_pkt_encode(pkt, sizeof(pkt), &p, "abc", 3);
		ASSERT_EQ(ur_pkt_decode(pkt, (size_t)n, &d), UR_DEC_OK);
		ASSERT_EQ(d.xrc_srqn, 0x123456);
		ASSERT_EQ(d.payload_len, 3);
		ASSERT_MEM_EQ(d.payload, "abc", 3);
		ASSERT_STR_EQ(ur_pkt_class_str(&d, cls, sizeof(cls)),
			      "XRC SEND_ONLY");
		/* An XRC request cut inside its XRCETH is truncated. */
		ASSERT_EQ(ur_pkt_decode(pkt, UR_BTH_LEN + UR_ICRC_LEN, &d),
			  UR_DEC_TRUNCATED);
		p.h.opcode = UR_OP_CNP;
		n = ur_pkt_encode(pkt, sizeof(pkt), &p, NULL, 0);
		ASSERT_EQ(ur_pkt_decode(pkt, (size_t)n, &d), UR_DEC_OK);
		ASSERT_STR_EQ(ur_pkt_class_str(&d, cls, sizeof(cls)), "CNP");
	}
}

/* ur_ip_same: the peer check's address compare (IPv4, IPv6, and an
 * IPv4-mapped IPv6 address equal to its IPv4 form, both ways). */
static void test_ip_same(void)
{
	uint8_t v4[16] = { 127, 0, 0, 3 }, v4b[16] = { 127, 0, 0, 9 };
	uint8_t mapped[16] = { [10] = 0xff, [11] = 0xff, 127, 0, 0, 3 };
	uint8_t compat[16] = { [12] = 127, 0, 0, 3 }; /* ::127.0.0.3 */
	uint8_t v6[16] = { 0xfd, 0, [15] = 3 }, v6b[16] = { 0xfd, 0, [15] = 4 };

	ASSERT(ur_ip_same(false, v4, false, v4));
	ASSERT(!ur_ip_same(false, v4, false, v4b));
	ASSERT(ur_ip_same(true, mapped, false, v4));
	ASSERT(ur_ip_same(false, v4, true, mapped));
	ASSERT(!ur_ip_same(true, mapped, false, v4b));
	ASSERT(!ur_ip_same(true, compat, false, v4));
	ASSERT(!ur_ip_same(false, v4, true, compat));
	ASSERT(ur_ip_same(true, v6, true, v6));
	ASSERT(!ur_ip_same(true, v6, true, v6b));
	ASSERT(!ur_ip_same(true, v6, false, v6));
	ASSERT(ur_ip_same(true, mapped, true, mapped));
}

static const struct ur_test_case tests[] = {
	{"opcode_table", test_opcode_table},
	{"ip_same", test_ip_same},
	{"psn", test_psn},
	{"aeth", test_aeth},
	{"roundtrip", test_roundtrip},
	{"encode_errors", test_encode_errors},
	{"crc32", test_crc32},
	{"crc32_copy", test_crc32_copy},
	{"icrc", test_icrc},
	{"icrc_fix_id", test_icrc_fix_id},
	{"decode_errors", test_decode_errors},
	{"decode_total", test_decode_total},
	{"cm", test_cm},
	{NULL, NULL},
};

UR_TEST_MAIN(tests)

// SPDX-License-Identifier: MIT
/*
 * Flow steering rules and the RSS hash of raw packet QPs
 * (src/verbs/flow_match.c), without sockets: frames are built here, byte
 * by byte, and the Toeplitz hash is checked against the published vectors
 * of Microsoft's "Verifying the RSS Hash Calculation".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "ur_test.h"
#include "urv_flow.h"

/* The key of the Microsoft verification suite. */
static const uint8_t ms_key[40] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
	0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
	0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
	0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

/* IPv4 rows: destination, source, the hash over the two addresses and
 * the hash with the TCP ports as well. */
static const struct {
	const char *dst, *src;
	uint16_t dport, sport;
	uint32_t h_ip, h_tcp;
} ms_v4[] = {
	{ "161.142.100.80", "66.9.149.187", 1766, 2794, 0x323e8fc2, 0x51ccc178 },
	{ "65.69.140.83", "199.92.111.2", 4739, 14230, 0xd718262a, 0xc626b0ea },
	{ "12.22.207.184", "24.19.198.95", 38024, 12898, 0xd2d0a5de, 0x5c2b394a },
	{ "209.142.163.6", "38.27.205.30", 2217, 48228, 0x82989176, 0xafc7327f },
	{ "202.188.127.2", "153.39.163.191", 1303, 44251, 0x5d1809c5, 0x10e828a2 },
};

/* IPv6 rows of the same suite. */
static const struct {
	const char *dst, *src;
	uint16_t dport, sport;
	uint32_t h_ip, h_tcp;
} ms_v6[] = {
	{ "3ffe:2501:200:3::1", "3ffe:2501:200:1fff::7", 1766, 2794,
	  0x2cc18cd5, 0x40207d3d },
	{ "ff02::1", "3ffe:501:8::260:97ff:fe40:efab", 4739, 14230,
	  0x0f0c461c, 0xdde51bbf },
	{ "fe80::200:f8ff:fe21:67cf", "3ffe:1900:4545:3:200:f8ff:fe21:67cf",
	  38024, 44251, 0x4b61e985, 0x02d1feef },
};

enum { FRAME_MAX = 128 };

struct frame {
	uint8_t b[FRAME_MAX];
	size_t len;
};

static const uint8_t dmac[6] = { 0x01, 0x50, 0x56, 0x19, 0x20, 0xa7 };
static const uint8_t smac[6] = { 0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8 };

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Ethernet (optionally 802.1Q), IPv4, then TCP or UDP with the ports. */
static void frame_v4(struct frame *f, bool vlan, const char *src,
		     const char *dst, uint8_t proto, uint16_t sport,
		     uint16_t dport)
{
	size_t o = 12;

	memset(f, 0, sizeof(*f));
	memcpy(f->b, dmac, 6);
	memcpy(f->b + 6, smac, 6);
	if (vlan) {
		put16(f->b + o, 0x8100);
		put16(f->b + o + 2, 0x2007); /* priority 1, VLAN 7 */
		o += 4;
	}
	put16(f->b + o, 0x0800);
	o += 2;
	f->b[o] = 0x45;
	f->b[o + 1] = 0x10;              /* TOS */
	f->b[o + 6] = 0x40;              /* DF */
	f->b[o + 8] = 64;                /* TTL */
	f->b[o + 9] = proto;
	inet_pton(AF_INET, src, f->b + o + 12);
	inet_pton(AF_INET, dst, f->b + o + 16);
	o += 20;
	put16(f->b + o, sport);
	put16(f->b + o + 2, dport);
	f->len = o + (proto == IPPROTO_TCP ? 20 : 8);
}

static void frame_v6(struct frame *f, const char *src, const char *dst,
		     uint8_t proto, uint16_t sport, uint16_t dport)
{
	memset(f, 0, sizeof(*f));
	memcpy(f->b, dmac, 6);
	memcpy(f->b + 6, smac, 6);
	put16(f->b + 12, 0x86dd);
	f->b[14] = 0x6a;  /* version 6, traffic class 0xa5 */
	f->b[15] = 0x5b;  /* ... flow label 0xb1234 */
	f->b[16] = 0x12;
	f->b[17] = 0x34;
	f->b[20] = proto;
	f->b[21] = 64;
	inet_pton(AF_INET6, src, f->b + 22);
	inet_pton(AF_INET6, dst, f->b + 38);
	put16(f->b + 54, sport);
	put16(f->b + 56, dport);
	f->len = 54 + (proto == IPPROTO_TCP ? 20 : 8);
}

/* An ibv_flow_attr and its specs, laid out as ibv_create_flow takes them. */
struct rule_buf {
	struct ibv_flow_attr attr;
	uint8_t specs[512];
	size_t used;
};

static void rule_init(struct rule_buf *r, enum ibv_flow_attr_type type)
{
	memset(r, 0, sizeof(*r));
	r->attr.type = type;
	r->attr.port = 1;
}

static void *rule_add(struct rule_buf *r, uint32_t type, uint16_t size)
{
	/* Every spec type starts with these two fields (4-byte aligned). */
	struct {
		enum ibv_flow_spec_type type;
		uint16_t size;
	} *h = (void *)(r->specs + r->used);
	void *s = h;

	h->type = (enum ibv_flow_spec_type)type;
	h->size = size;
	r->used += size;
	r->attr.num_of_specs++;
	r->attr.size = (uint16_t)(sizeof(r->attr) + r->used);
	return s;
}

static struct ibv_flow_spec_eth *add_eth(struct rule_buf *r, uint16_t type)
{
	struct ibv_flow_spec_eth *s = rule_add(r, IBV_FLOW_SPEC_ETH, sizeof(*s));

	memcpy(s->val.dst_mac, dmac, 6);
	memset(s->mask.dst_mac, 0xff, 6);
	s->val.ether_type = htons(type);
	s->mask.ether_type = 0xffff;
	return s;
}

static bool rule_matches(struct rule_buf *rb, const struct frame *f)
{
	struct urv_flow_rule r;
	struct urv_frame fr;

	ASSERT_EQ(urv__flow_rule_parse(&rb->attr, &r), 0);
	ASSERT(urv__frame_parse(f->b, f->len, &fr));
	return urv__flow_match(&r, &fr);
}

static void t_toeplitz_ms_vectors(void)
{
	for (size_t i = 0; i < sizeof(ms_v4) / sizeof(ms_v4[0]); i++) {
		struct urv_frame fr;
		struct frame f;
		uint8_t in[36];
		size_t n;

		frame_v4(&f, false, ms_v4[i].src, ms_v4[i].dst, IPPROTO_TCP,
			 ms_v4[i].sport, ms_v4[i].dport);
		ASSERT(urv__frame_parse(f.b, f.len, &fr));
		n = urv__rss_input(&fr, IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4,
				   in);
		ASSERT_EQ(n, 8);
		ASSERT_EQ_U64(urv__toeplitz(ms_key, sizeof(ms_key), in, n),
			      ms_v4[i].h_ip);
		n = urv__rss_input(&fr, IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
					       IBV_RX_HASH_SRC_PORT_TCP |
					       IBV_RX_HASH_DST_PORT_TCP, in);
		ASSERT_EQ(n, 12);
		ASSERT_EQ_U64(urv__toeplitz(ms_key, sizeof(ms_key), in, n),
			      ms_v4[i].h_tcp);
		/* UDP port fields do not apply to a TCP segment. */
		n = urv__rss_input(&fr, IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
					       IBV_RX_HASH_SRC_PORT_UDP, in);
		ASSERT_EQ(n, 8);
	}
	for (size_t i = 0; i < sizeof(ms_v6) / sizeof(ms_v6[0]); i++) {
		const uint64_t ip6 = IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6;
		struct urv_frame fr;
		struct frame f;
		uint8_t in[36];
		size_t n;

		frame_v6(&f, ms_v6[i].src, ms_v6[i].dst, IPPROTO_TCP,
			 ms_v6[i].sport, ms_v6[i].dport);
		ASSERT(urv__frame_parse(f.b, f.len, &fr));
		n = urv__rss_input(&fr, ip6, in);
		ASSERT_EQ(n, 32);
		ASSERT_EQ_U64(urv__toeplitz(ms_key, sizeof(ms_key), in, n),
			      ms_v6[i].h_ip);
		n = urv__rss_input(&fr, ip6 | IBV_RX_HASH_SRC_PORT_TCP |
					       IBV_RX_HASH_DST_PORT_TCP, in);
		ASSERT_EQ(n, 36);
		ASSERT_EQ_U64(urv__toeplitz(ms_key, sizeof(ms_key), in, n),
			      ms_v6[i].h_tcp);
	}
	/* Nothing asked, nothing hashed. */
	ASSERT_EQ_U64(urv__toeplitz(ms_key, sizeof(ms_key), NULL, 0), 0);
}

static void t_eth_spec(void)
{
	struct ibv_flow_spec_eth *eth;
	struct rule_buf rb;
	struct frame f;

	frame_v4(&f, false, "1.1.1.1", "2.2.2.2", IPPROTO_UDP, 1234, 5678);
	rule_init(&rb, IBV_FLOW_ATTR_NORMAL);
	eth = add_eth(&rb, 0x0800);
	ASSERT(rule_matches(&rb, &f));
	/* A mask covering part of the source MAC: only those bits count. */
	memcpy(eth->val.src_mac, smac, 6);
	memcpy(eth->mask.src_mac, smac, 6);
	ASSERT(rule_matches(&rb, &f));
	f.b[6] ^= 0x04; /* a bit the mask (0x24) covers */
	ASSERT(!rule_matches(&rb, &f));
	f.b[6] ^= 0x04;
	f.b[6] ^= 0x01; /* one it does not */
	ASSERT(rule_matches(&rb, &f));
	f.b[6] ^= 0x01;
	/* Another EtherType, another destination. */
	eth->val.ether_type = htons(0x86dd);
	ASSERT(!rule_matches(&rb, &f));
	eth->val.ether_type = htons(0x0800);
	f.b[5] ^= 0xff;
	ASSERT(!rule_matches(&rb, &f));
	f.b[5] ^= 0xff;
	/* The VLAN tag: only a tagged frame with that TCI matches; the
	 * EtherType is the one after the tag. */
	eth->val.vlan_tag = htons(0x0007);
	eth->mask.vlan_tag = htons(0x0fff);
	ASSERT(!rule_matches(&rb, &f));
	frame_v4(&f, true, "1.1.1.1", "2.2.2.2", IPPROTO_UDP, 1234, 5678);
	ASSERT(rule_matches(&rb, &f));
	eth->val.vlan_tag = htons(0x0008);
	ASSERT(!rule_matches(&rb, &f));
	/* Cut short: no Ethernet header, no frame. */
	{
		struct urv_frame fr;

		ASSERT(!urv__frame_parse(f.b, 13, &fr));
	}
}

static void t_ip_and_ports(void)
{
	struct ibv_flow_spec_ipv4_ext *ip4;
	struct ibv_flow_spec_tcp_udp *l4;
	struct rule_buf rb;
	struct frame f;

	frame_v4(&f, false, "1.1.1.1", "2.2.2.2", IPPROTO_UDP, 1234, 5678);
	rule_init(&rb, IBV_FLOW_ATTR_NORMAL);
	add_eth(&rb, 0x0800);
	ip4 = rule_add(&rb, IBV_FLOW_SPEC_IPV4_EXT, sizeof(*ip4));
	inet_pton(AF_INET, "1.1.1.1", &ip4->val.src_ip);
	inet_pton(AF_INET, "2.2.2.2", &ip4->val.dst_ip);
	ip4->mask.src_ip = ip4->mask.dst_ip = 0xffffffff;
	ip4->val.proto = IPPROTO_UDP;
	ip4->mask.proto = 0xff;
	ip4->val.flags = 2; /* DF */
	ip4->mask.flags = 7;
	ip4->val.ttl = 64;
	ip4->mask.ttl = 0xff;
	l4 = rule_add(&rb, IBV_FLOW_SPEC_UDP, sizeof(*l4));
	l4->val.src_port = htons(1234);
	l4->val.dst_port = htons(5678);
	l4->mask.src_port = l4->mask.dst_port = 0xffff;
	ASSERT(rule_matches(&rb, &f));
	/* Each field on its own turns the verdict. */
	frame_v4(&f, false, "1.1.1.9", "2.2.2.2", IPPROTO_UDP, 1234, 5678);
	ASSERT(!rule_matches(&rb, &f));
	frame_v4(&f, false, "1.1.1.1", "2.2.2.9", IPPROTO_UDP, 1234, 5678);
	ASSERT(!rule_matches(&rb, &f));
	frame_v4(&f, false, "1.1.1.1", "2.2.2.2", IPPROTO_UDP, 1235, 5678);
	ASSERT(!rule_matches(&rb, &f));
	frame_v4(&f, false, "1.1.1.1", "2.2.2.2", IPPROTO_UDP, 1234, 5679);
	ASSERT(!rule_matches(&rb, &f));
	/* TCP with the same ports is not UDP (protocol and L4 spec). */
	frame_v4(&f, false, "1.1.1.1", "2.2.2.2", IPPROTO_TCP, 1234, 5678);
	ASSERT(!rule_matches(&rb, &f));
	ip4->mask.proto = 0;
	ASSERT(!rule_matches(&rb, &f));
	/* A later fragment has no ports to match. */
	frame_v4(&f, false, "1.1.1.1", "2.2.2.2", IPPROTO_UDP, 1234, 5678);
	f.b[21] = 0x10;
	ASSERT(!rule_matches(&rb, &f));
	frame_v4(&f, false, "1.1.1.1", "2.2.2.2", IPPROTO_UDP, 1234, 5678);
	f.b[22] = 63; /* TTL */
	ASSERT(!rule_matches(&rb, &f));
}

static void t_ipv6_spec(void)
{
	struct ibv_flow_spec_ipv6 *ip6;
	struct ibv_flow_spec_tcp_udp *l4;
	struct rule_buf rb;
	struct frame f;
	const char *src = "a0a1::a2a3:a4a5:a6a7:a8a9";
	const char *dst = "b0b1::b2b3:b4b5:b6b7:b8b9";

	frame_v6(&f, src, dst, IPPROTO_TCP, 1234, 5678);
	rule_init(&rb, IBV_FLOW_ATTR_NORMAL);
	add_eth(&rb, 0x86dd);
	ip6 = rule_add(&rb, IBV_FLOW_SPEC_IPV6, sizeof(*ip6));
	inet_pton(AF_INET6, src, ip6->val.src_ip);
	inet_pton(AF_INET6, dst, ip6->val.dst_ip);
	memset(ip6->mask.src_ip, 0xff, 16);
	memset(ip6->mask.dst_ip, 0xff, 16);
	ip6->val.next_hdr = IPPROTO_TCP;
	ip6->mask.next_hdr = 0xff;
	ip6->val.flow_label = htonl(0xb1234);
	ip6->mask.flow_label = htonl(0xfffff);
	ip6->val.traffic_class = 0xa5;
	ip6->mask.traffic_class = 0xff;
	l4 = rule_add(&rb, IBV_FLOW_SPEC_TCP, sizeof(*l4));
	l4->val.dst_port = htons(5678);
	l4->mask.dst_port = 0xffff;
	ASSERT(rule_matches(&rb, &f));
	ip6->val.flow_label = htonl(0xb1235);
	ASSERT(!rule_matches(&rb, &f));
	ip6->val.flow_label = htonl(0xb1234);
	ip6->val.traffic_class = 0xa4;
	ASSERT(!rule_matches(&rb, &f));
	ip6->val.traffic_class = 0xa5;
	frame_v6(&f, src, "b0b1::1", IPPROTO_TCP, 1234, 5678);
	ASSERT(!rule_matches(&rb, &f));
	frame_v6(&f, src, dst, IPPROTO_UDP, 1234, 5678);
	ASSERT(!rule_matches(&rb, &f));
	/* An IPv6 rule never matches an IPv4 frame. */
	frame_v4(&f, false, "1.1.1.1", "2.2.2.2", IPPROTO_TCP, 1234, 5678);
	ASSERT(!rule_matches(&rb, &f));
}

static void t_rule_errors(void)
{
	struct urv_flow_rule r;
	struct rule_buf rb;
	struct ibv_flow_spec_tcp_udp *l4;

	rule_init(&rb, IBV_FLOW_ATTR_NORMAL);
	ASSERT_EQ(urv__flow_rule_parse(&rb.attr, &r), 0); /* no spec: all */
	rb.attr.port = 2;
	ASSERT_EQ(urv__flow_rule_parse(&rb.attr, &r), -EINVAL);
	rb.attr.port = 1;
	rb.attr.flags = IBV_FLOW_ATTR_FLAGS_EGRESS;
	ASSERT_EQ(urv__flow_rule_parse(&rb.attr, &r), -EOPNOTSUPP);
	rb.attr.flags = 0;
	rule_add(&rb, IBV_FLOW_SPEC_VXLAN_TUNNEL, sizeof(struct ibv_flow_spec_tunnel));
	ASSERT_EQ(urv__flow_rule_parse(&rb.attr, &r), -EOPNOTSUPP);
	rule_init(&rb, IBV_FLOW_ATTR_NORMAL);
	rule_add(&rb, IBV_FLOW_SPEC_ETH | IBV_FLOW_SPEC_INNER,
		 sizeof(struct ibv_flow_spec_eth));
	ASSERT_EQ(urv__flow_rule_parse(&rb.attr, &r), -EOPNOTSUPP);
	rule_init(&rb, IBV_FLOW_ATTR_NORMAL);
	rule_add(&rb, IBV_FLOW_SPEC_ETH, sizeof(struct ibv_flow_spec_eth) - 4);
	ASSERT_EQ(urv__flow_rule_parse(&rb.attr, &r), -EINVAL);
	rule_init(&rb, IBV_FLOW_ATTR_NORMAL);
	l4 = rule_add(&rb, IBV_FLOW_SPEC_TCP, sizeof(*l4));
	(void)l4;
	rule_add(&rb, IBV_FLOW_SPEC_UDP, sizeof(*l4));
	ASSERT_EQ(urv__flow_rule_parse(&rb.attr, &r), -EINVAL);
	/* Default and sniffer rules take no specs. */
	rule_init(&rb, IBV_FLOW_ATTR_SNIFFER);
	ASSERT_EQ(urv__flow_rule_parse(&rb.attr, &r), 0);
	add_eth(&rb, 0x0800);
	ASSERT_EQ(urv__flow_rule_parse(&rb.attr, &r), -EINVAL);
}

static const struct ur_test_case tests[] = {
	{ "toeplitz_ms_vectors", t_toeplitz_ms_vectors },
	{ "eth_spec", t_eth_spec },
	{ "ip_and_ports", t_ip_and_ports },
	{ "ipv6_spec", t_ipv6_spec },
	{ "rule_errors", t_rule_errors },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

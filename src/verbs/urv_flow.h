/* SPDX-License-Identifier: MIT */
/*
 * Flow steering and receive-side scaling for raw packet QPs: which QP a
 * received Ethernet frame belongs to. Pure (no I/O, no locks): a frame's
 * bytes in, a verdict out, so the rules are unit-tested on their own
 * (tests/verbs/test_flow_match.c). The sockets are src/io/raw.c's; the
 * objects and the dispatch are src/verbs/raw.c's.
 */
#ifndef URV_FLOW_H
#define URV_FLOW_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A received frame's headers, found by urv__frame_parse. Pointers into
 * the frame; NULL when the layer is absent or cut short. */
struct urv_frame {
	const uint8_t *eth;  /* destination MAC, source MAC */
	const uint8_t *type; /* the EtherType after any 802.1Q tag (2 bytes) */
	const uint8_t *vlan; /* the tag's TCI (2 bytes) when tagged */
	const uint8_t *ip4;  /* IPv4 header (20 bytes or more) */
	const uint8_t *ip6;  /* IPv6 fixed header (40 bytes) */
	const uint8_t *l4;   /* TCP or UDP header: ports, at least 4 bytes */
	uint8_t l4_proto;    /* IPPROTO_TCP / IPPROTO_UDP when l4 is set */
};

/* Which layers a rule names (bits of urv_flow_rule.have). */
enum {
	URV_FLOW_ETH = 1 << 0,
	URV_FLOW_IPV4 = 1 << 1,
	URV_FLOW_IPV6 = 1 << 2,
	URV_FLOW_TCP = 1 << 3,
	URV_FLOW_UDP = 1 << 4,
};

/* One ibv_flow_attr, checked and kept as value/mask pairs per layer (the
 * plain IPv4 spec is kept as an IPv4 "ext" one with the rest masked out). */
struct urv_flow_rule {
	enum ibv_flow_attr_type type;
	uint16_t priority;
	unsigned int have;
	struct ibv_flow_eth_filter eth_val, eth_mask;
	struct ibv_flow_ipv4_ext_filter ip4_val, ip4_mask;
	struct ibv_flow_ipv6_filter ip6_val, ip6_mask;
	struct ibv_flow_tcp_udp_filter l4_val, l4_mask;
};

/* Parse @attr and the specs that follow it. 0, -EINVAL (malformed: a spec
 * size that does not fit, two specs of a layer, a port other than 1) or
 * -EOPNOTSUPP (a spec type or flag uroce does not match on: tunnels, inner
 * headers, ESP, MPLS, actions; egress rules). */
int urv__flow_rule_parse(const struct ibv_flow_attr *attr,
			 struct urv_flow_rule *r);

/* Find the headers of frame @f (@len bytes). False when it is shorter than
 * an Ethernet header. */
bool urv__frame_parse(const uint8_t *f, size_t len, struct urv_frame *fr);

/* Whether every layer @r names is in @fr with the masked values equal. A
 * rule of another type than IBV_FLOW_ATTR_NORMAL matches every frame
 * (the caller decides when a default or sniffer rule applies). */
bool urv__flow_match(const struct urv_flow_rule *r, const struct urv_frame *fr);

/* Multicast or broadcast destination (the I/G bit). */
static inline bool urv__frame_is_mcast(const struct urv_frame *fr)
{
	return fr->eth[0] & 1;
}

/* The RSS hash fields uroce computes (IBV_RX_HASH_*). */
#define URV_RSS_FIELDS                                                        \
	(IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_IPV6 |  \
	 IBV_RX_HASH_DST_IPV6 | IBV_RX_HASH_SRC_PORT_TCP |                    \
	 IBV_RX_HASH_DST_PORT_TCP | IBV_RX_HASH_SRC_PORT_UDP |                \
	 IBV_RX_HASH_DST_PORT_UDP)
enum { URV_RSS_KEY_LEN = 40 }; /* Toeplitz key: 320 bits, as the NICs take */

/* The bytes the hash runs over, in the Microsoft RSS order: source
 * address, destination address, source port, destination port, each only
 * when @fields asks for it and the frame has it. Returns the count (at
 * most 36). */
size_t urv__rss_input(const struct urv_frame *fr, uint64_t fields,
		      uint8_t out[36]);

/* The Toeplitz hash of @in under @key (Microsoft "RSS hashing functions"). */
uint32_t urv__toeplitz(const uint8_t *key, size_t key_len, const uint8_t *in,
		       size_t n);

#endif

// SPDX-License-Identifier: MIT
/*
 * Flow steering rules and the RSS hash, in software (urv_flow.h). A rule
 * is value/mask pairs per layer, as the ibv_flow_spec_* structs carry
 * them; a frame matches when (field & mask) == (value & mask) for every
 * field of every layer the rule names, as a NIC's steering tables compare.
 * Field values in the specs are in network byte order, as on the wire, so
 * most fields compare byte for byte with the frame.
 */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "urv_flow.h"

enum {
	ETH_HLEN_ = 14,
	VLAN_HLEN_ = 4,
	IP4_HLEN_MIN = 20,
	IP6_HLEN = 40,
	ETHERTYPE_IP4 = 0x0800,
	ETHERTYPE_IP6 = 0x86dd,
	ETHERTYPE_VLAN = 0x8100,
	ETHERTYPE_QINQ = 0x88a8,
};

static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* (a & m) == (v & m) over @n bytes. */
static bool masked_eq(const void *a, const void *v, const void *m, size_t n)
{
	const uint8_t *pa = a, *pv = v, *pm = m;

	for (size_t i = 0; i < n; i++)
		if ((pa[i] ^ pv[i]) & pm[i])
			return false;
	return true;
}

static bool masked_eq8(uint8_t a, uint8_t v, uint8_t m)
{
	return ((a ^ v) & m) == 0;
}

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* ---- rules ------------------------------------------------------------- */

/* One row per spec type uroce matches on: its size and the layer bit. */
static const struct spec_row {
	uint32_t type;
	uint16_t size;
	unsigned int layer;
} spec_rows[] = {
	{ IBV_FLOW_SPEC_ETH, sizeof(struct ibv_flow_spec_eth), URV_FLOW_ETH },
	{ IBV_FLOW_SPEC_IPV4, sizeof(struct ibv_flow_spec_ipv4), URV_FLOW_IPV4 },
	{ IBV_FLOW_SPEC_IPV4_EXT, sizeof(struct ibv_flow_spec_ipv4_ext),
	  URV_FLOW_IPV4 },
	{ IBV_FLOW_SPEC_IPV6, sizeof(struct ibv_flow_spec_ipv6), URV_FLOW_IPV6 },
	{ IBV_FLOW_SPEC_TCP, sizeof(struct ibv_flow_spec_tcp_udp), URV_FLOW_TCP },
	{ IBV_FLOW_SPEC_UDP, sizeof(struct ibv_flow_spec_tcp_udp), URV_FLOW_UDP },
};

static const struct spec_row *spec_row(uint32_t type)
{
	for (size_t i = 0; i < sizeof(spec_rows) / sizeof(spec_rows[0]); i++)
		if (spec_rows[i].type == type)
			return &spec_rows[i];
	return NULL;
}

static void take_spec(struct urv_flow_rule *r, const struct ibv_flow_spec *s)
{
	switch (s->hdr.type) {
	case IBV_FLOW_SPEC_ETH:
		r->eth_val = s->eth.val;
		r->eth_mask = s->eth.mask;
		break;
	case IBV_FLOW_SPEC_IPV4:
		r->ip4_val.src_ip = s->ipv4.val.src_ip;
		r->ip4_val.dst_ip = s->ipv4.val.dst_ip;
		r->ip4_mask.src_ip = s->ipv4.mask.src_ip;
		r->ip4_mask.dst_ip = s->ipv4.mask.dst_ip;
		break;
	case IBV_FLOW_SPEC_IPV4_EXT:
		r->ip4_val = s->ipv4_ext.val;
		r->ip4_mask = s->ipv4_ext.mask;
		break;
	case IBV_FLOW_SPEC_IPV6:
		r->ip6_val = s->ipv6.val;
		r->ip6_mask = s->ipv6.mask;
		break;
	default: /* TCP, UDP */
		r->l4_val = s->tcp_udp.val;
		r->l4_mask = s->tcp_udp.mask;
		break;
	}
}

int urv__flow_rule_parse(const struct ibv_flow_attr *attr,
			 struct urv_flow_rule *r)
{
	const uint8_t *p = (const uint8_t *)(attr + 1);

	memset(r, 0, sizeof(*r));
	if (attr->comp_mask || attr->port != 1)
		return -EINVAL;
	if (attr->flags & ~(uint32_t)(IBV_FLOW_ATTR_FLAGS_DONT_TRAP |
				      IBV_FLOW_ATTR_FLAGS_EGRESS))
		return -EINVAL;
	if (attr->flags) /* a copy to the kernel too; transmit rules */
		return -EOPNOTSUPP;
	switch (attr->type) {
	case IBV_FLOW_ATTR_NORMAL:
		break;
	case IBV_FLOW_ATTR_ALL_DEFAULT:
	case IBV_FLOW_ATTR_MC_DEFAULT:
	case IBV_FLOW_ATTR_SNIFFER:
		if (attr->num_of_specs)
			return -EINVAL; /* they take every frame of a kind */
		break;
	default:
		return -EINVAL;
	}
	r->type = attr->type;
	r->priority = attr->priority;
	for (unsigned int i = 0; i < attr->num_of_specs; i++) {
		/* Specs follow each other 4-byte aligned; the union has
		 * pointers (8): copy each into one before reading it. */
		struct ibv_flow_spec spec;
		const struct ibv_flow_spec *s = &spec;
		const struct spec_row *row;

		memcpy(&spec.hdr, p, sizeof(spec.hdr));
		if (s->hdr.size < sizeof(s->hdr))
			return -EINVAL;
		row = spec_row(s->hdr.type);
		if (!row)
			return -EOPNOTSUPP;
		if (s->hdr.size != row->size)
			return -EINVAL;
		memcpy(&spec, p, row->size);
		if (r->have & row->layer)
			return -EINVAL; /* a layer named twice */
		if ((row->layer & (URV_FLOW_IPV4 | URV_FLOW_IPV6)) &&
		    (r->have & (URV_FLOW_IPV4 | URV_FLOW_IPV6)))
			return -EINVAL;
		if ((row->layer & (URV_FLOW_TCP | URV_FLOW_UDP)) &&
		    (r->have & (URV_FLOW_TCP | URV_FLOW_UDP)))
			return -EINVAL;
		r->have |= row->layer;
		take_spec(r, s);
		p += s->hdr.size;
	}
	return 0;
}

/* ---- frames ------------------------------------------------------------ */

bool urv__frame_parse(const uint8_t *f, size_t len, struct urv_frame *fr)
{
	size_t off = ETH_HLEN_;
	uint16_t type;

	memset(fr, 0, sizeof(*fr));
	if (len < ETH_HLEN_)
		return false;
	fr->eth = f;
	fr->type = f + 12;
	type = get_be16(fr->type);
	if ((type == ETHERTYPE_VLAN || type == ETHERTYPE_QINQ) &&
	    len >= ETH_HLEN_ + VLAN_HLEN_) {
		fr->vlan = f + 14;
		fr->type = f + 16;
		type = get_be16(fr->type);
		off += VLAN_HLEN_;
	}
	if (type == ETHERTYPE_IP4 && len >= off + IP4_HLEN_MIN &&
	    f[off] >> 4 == 4) {
		size_t ihl = (size_t)(f[off] & 0xf) * 4;

		if (ihl < IP4_HLEN_MIN || len < off + ihl)
			return true;
		fr->ip4 = f + off;
		/* A later fragment carries no ports. */
		if (get_be16(f + off + 6) & 0x1fff)
			return true;
		fr->l4_proto = f[off + 9];
		off += ihl;
	} else if (type == ETHERTYPE_IP6 && len >= off + IP6_HLEN &&
		   f[off] >> 4 == 6) {
		fr->ip6 = f + off;
		fr->l4_proto = f[off + 6]; /* extension headers are not walked */
		off += IP6_HLEN;
	} else {
		return true;
	}
	if ((fr->l4_proto == IPPROTO_TCP || fr->l4_proto == IPPROTO_UDP) &&
	    len >= off + 4)
		fr->l4 = f + off;
	else
		fr->l4_proto = 0;
	return true;
}

static bool match_eth(const struct urv_flow_rule *r, const struct urv_frame *fr)
{
	const struct ibv_flow_eth_filter *v = &r->eth_val, *m = &r->eth_mask;

	if (!masked_eq(fr->eth, v->dst_mac, m->dst_mac, 6) ||
	    !masked_eq(fr->eth + 6, v->src_mac, m->src_mac, 6) ||
	    !masked_eq(fr->type, &v->ether_type, &m->ether_type, 2))
		return false;
	if (all_zero(&m->vlan_tag, 2))
		return true;
	return fr->vlan && masked_eq(fr->vlan, &v->vlan_tag, &m->vlan_tag, 2);
}

static bool match_ip4(const struct urv_flow_rule *r, const struct urv_frame *fr)
{
	const struct ibv_flow_ipv4_ext_filter *v = &r->ip4_val, *m = &r->ip4_mask;
	const uint8_t *h = fr->ip4;

	return h && masked_eq(h + 12, &v->src_ip, &m->src_ip, 4) &&
	       masked_eq(h + 16, &v->dst_ip, &m->dst_ip, 4) &&
	       masked_eq8(h[9], v->proto, m->proto) &&
	       masked_eq8(h[1], v->tos, m->tos) &&
	       masked_eq8(h[8], v->ttl, m->ttl) &&
	       masked_eq8(h[6] >> 5, v->flags, m->flags);
}

static bool match_ip6(const struct urv_flow_rule *r, const struct urv_frame *fr)
{
	const struct ibv_flow_ipv6_filter *v = &r->ip6_val, *m = &r->ip6_mask;
	const uint8_t *h = fr->ip6;
	uint32_t fl;

	if (!h)
		return false;
	fl = (uint32_t)(h[1] & 0xf) << 16 | (uint32_t)h[2] << 8 | h[3];
	return masked_eq(h + 8, v->src_ip, m->src_ip, 16) &&
	       masked_eq(h + 24, v->dst_ip, m->dst_ip, 16) &&
	       ((fl ^ be32toh(v->flow_label)) & be32toh(m->flow_label)) == 0 &&
	       masked_eq8(h[6], v->next_hdr, m->next_hdr) &&
	       masked_eq8((uint8_t)((h[0] & 0xf) << 4 | h[1] >> 4),
			  v->traffic_class, m->traffic_class) &&
	       masked_eq8(h[7], v->hop_limit, m->hop_limit);
}

static bool match_l4(const struct urv_flow_rule *r, const struct urv_frame *fr)
{
	uint8_t proto = (r->have & URV_FLOW_TCP) ? IPPROTO_TCP : IPPROTO_UDP;

	return fr->l4 && fr->l4_proto == proto &&
	       masked_eq(fr->l4, &r->l4_val.src_port, &r->l4_mask.src_port, 2) &&
	       masked_eq(fr->l4 + 2, &r->l4_val.dst_port, &r->l4_mask.dst_port, 2);
}

bool urv__flow_match(const struct urv_flow_rule *r, const struct urv_frame *fr)
{
	if (r->type != IBV_FLOW_ATTR_NORMAL)
		return true;
	if ((r->have & URV_FLOW_ETH) && !match_eth(r, fr))
		return false;
	if ((r->have & URV_FLOW_IPV4) && !match_ip4(r, fr))
		return false;
	if ((r->have & URV_FLOW_IPV6) && !match_ip6(r, fr))
		return false;
	if ((r->have & (URV_FLOW_TCP | URV_FLOW_UDP)) && !match_l4(r, fr))
		return false;
	return true;
}

/* ---- RSS --------------------------------------------------------------- */

size_t urv__rss_input(const struct urv_frame *fr, uint64_t fields,
		      uint8_t out[36])
{
	size_t n = 0;

	if (fr->ip4) {
		if (fields & IBV_RX_HASH_SRC_IPV4) {
			memcpy(out + n, fr->ip4 + 12, 4);
			n += 4;
		}
		if (fields & IBV_RX_HASH_DST_IPV4) {
			memcpy(out + n, fr->ip4 + 16, 4);
			n += 4;
		}
	} else if (fr->ip6) {
		if (fields & IBV_RX_HASH_SRC_IPV6) {
			memcpy(out + n, fr->ip6 + 8, 16);
			n += 16;
		}
		if (fields & IBV_RX_HASH_DST_IPV6) {
			memcpy(out + n, fr->ip6 + 24, 16);
			n += 16;
		}
	}
	if (fr->l4) {
		bool tcp = fr->l4_proto == IPPROTO_TCP;
		uint64_t src = tcp ? IBV_RX_HASH_SRC_PORT_TCP : IBV_RX_HASH_SRC_PORT_UDP;
		uint64_t dst = tcp ? IBV_RX_HASH_DST_PORT_TCP : IBV_RX_HASH_DST_PORT_UDP;

		if (fields & src) {
			memcpy(out + n, fr->l4, 2);
			n += 2;
		}
		if (fields & dst) {
			memcpy(out + n, fr->l4 + 2, 2);
			n += 2;
		}
	}
	return n;
}

/* Bit @i of the key, most significant bit of byte 0 first; 0 past its end. */
static unsigned int key_bit(const uint8_t *key, size_t key_len, size_t i)
{
	return i / 8 < key_len ? (key[i / 8] >> (7 - i % 8)) & 1 : 0;
}

/*
 * For each set bit of the input, most significant first, XOR in the 32
 * key bits that start at that bit's position: a window sliding one key
 * bit per input bit.
 */
uint32_t urv__toeplitz(const uint8_t *key, size_t key_len, const uint8_t *in,
		       size_t n)
{
	uint32_t hash = 0, window = 0;
	size_t next = 32;

	for (size_t i = 0; i < 32; i++)
		window = window << 1 | key_bit(key, key_len, i);
	for (size_t i = 0; i < n; i++) {
		for (int b = 7; b >= 0; b--) {
			if (in[i] >> b & 1)
				hash ^= window;
			window = window << 1 | key_bit(key, key_len, next++);
		}
	}
	return hash;
}

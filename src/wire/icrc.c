// SPDX-License-Identifier: MIT
/*
 * RoCEv2 invariant CRC (IBTA Annex A17.3.3, vol. 1 7.8.1).
 *
 * CRC-32 over: 8 bytes of ones standing for the LRH, the IP header, the UDP
 * header, then BTH .. payload + pad. The fields that routers may change are
 * replaced by ones: IPv4 TOS, TTL, header checksum; IPv6 traffic class,
 * flow label, hop limit; the UDP checksum; BTH byte 4 (FECN, BECN, resv6).
 * The result is stored in the packet least significant byte first.
 */
#include <string.h>

#include "ur_wire.h"

#define IPV4_HDR_LEN 20
#define IPV6_HDR_LEN 40
#define UDP_HDR_LEN 8
#define IPPROTO_UDP_NUM 17

static const uint8_t lrh_ones[8] = {0xff, 0xff, 0xff, 0xff,
				    0xff, 0xff, 0xff, 0xff};

/* Masks one IPv4 header (TOS, TTL, checksum) in place (A17.3.3). */
static void mask_ipv4(uint8_t *h)
{
	h[1] = 0xff;
	h[8] = 0xff;
	h[10] = 0xff;
	h[11] = 0xff;
}

/* Masks the first 4 bytes of an IPv6 header: keeps only the version. */
static void mask_ipv6(uint8_t *h)
{
	h[0] |= 0x0f;
	h[1] = 0xff;
	h[2] = 0xff;
	h[3] = 0xff;
	h[7] = 0xff; /* hop limit */
}

/* The IB part: BTH with byte 4 masked, then everything after it. A short
 * part (an ACK, a small message) is masked whole, so that one CRC call
 * folds it. (A longer masked copy of a big packet's start measured slower:
 * the rest then ends in a byte-at-a-time tail.) */
static uint32_t crc_ib(uint32_t crc, const uint8_t *ib, size_t ib_len)
{
	uint8_t head[64];
	size_t n = ib_len <= sizeof(head) ? ib_len : UR_BTH_LEN;

	memcpy(head, ib, n);
	if (n > 4)
		head[4] = 0xff;
	crc = ur_crc32(crc, head, n);
	return n < ib_len ? ur_crc32(crc, ib + n, ib_len - n) : crc;
}

/* The CRC change of one IPv4 header bit, for a pseudo header followed by
 * nothing: bits 0..15 of the ID (LSB first), then DF (frag 0x4000). */
#define PSEUDO4_LEN (8 + IPV4_HDR_LEN + UDP_HDR_LEN)
#define PSEUDO4_ID 12 /* the ID's offset: after the LRH stand-in, 4 bytes */
#define ID_BITS 17
static uint32_t id_basis[ID_BITS];

/* After crc32.c's (constructor 101): ur_crc32 must be ready. */
__attribute__((constructor(102))) static void id_basis_init(void)
{
	/* Bit k of the 16-bit ID sits in byte PSEUDO4_ID + 1 - k / 8 (big
	 * endian); DF is bit 6 of the byte after it. */
	uint8_t z[PSEUDO4_LEN] = { 0 };
	uint32_t c0 = ur_crc32(0, z, sizeof(z));

	for (int k = 0; k < ID_BITS; k++) {
		size_t at = k < 16 ? PSEUDO4_ID + 1 - (size_t)k / 8 : PSEUDO4_ID + 2;

		z[at] = (uint8_t)(k < 16 ? 1u << (k % 8) : 0x40);
		id_basis[k] = ur_crc32(0, z, sizeof(z)) ^ c0;
		z[at] = 0;
	}
}

/* The masked pseudo header (A17.3.3) for an IB part of @ib_len, into @h;
 * returns its length. */
static size_t pseudo_hdr(uint8_t *h, const struct ur_ipudp *ip, size_t ib_len)
{
	size_t udp_len = UDP_HDR_LEN + ib_len + UR_ICRC_LEN;
	uint8_t *u;

	memcpy(h, lrh_ones, sizeof(lrh_ones));
	if (!ip->v6) {
		uint8_t *v4 = h + 8;

		v4[0] = 0x45;
		v4[1] = ip->tos;
		ur_put16(v4 + 2, (uint16_t)(IPV4_HDR_LEN + udp_len));
		ur_put16(v4 + 4, ip->ip_id);
		ur_put16(v4 + 6, ip->ip_frag);
		v4[8] = ip->ttl;
		v4[9] = IPPROTO_UDP_NUM;
		ur_put16(v4 + 10, 0);
		memcpy(v4 + 12, ip->src, 4);
		memcpy(v4 + 16, ip->dst, 4);
		mask_ipv4(v4);
		u = v4 + IPV4_HDR_LEN;
	} else {
		uint8_t *v6 = h + 8;

		ur_put32(v6, 0x60000000u | ((uint32_t)ip->tos << 20) |
				     (ip->flow_label & 0xfffff));
		ur_put16(v6 + 4, (uint16_t)udp_len);
		v6[6] = IPPROTO_UDP_NUM;
		v6[7] = ip->ttl;
		memcpy(v6 + 8, ip->src, 16);
		memcpy(v6 + 24, ip->dst, 16);
		mask_ipv6(v6);
		u = v6 + IPV6_HDR_LEN;
	}
	ur_put16(u, ip->sport);
	ur_put16(u + 2, ip->dport);
	ur_put16(u + 4, (uint16_t)udp_len);
	ur_put16(u + 6, 0xffff);
	return (size_t)(u + UDP_HDR_LEN - h);
}

/*
 * The CRC of the pseudo header for an IB part of @ib_len, then of the
 * first @n bytes of that part at @ib. The pseudo header and up to
 * HEAD_IB bytes of the part (BTH byte 4 masked) are laid side by side and
 * folded in one pass: for an ACK or a short message that is the whole
 * packet, and one pass costs less than two (a 20-byte ACK: 55 -> 31 ns
 * on this machine, against a per-thread memo of pseudo-header CRCs,
 * which this replaced).
 */
#define HEAD_IB 256
static uint32_t crc_start(const struct ur_ipudp *ip, size_t ib_len,
			  const uint8_t *ib, size_t n)
{
	uint8_t b[8 + IPV6_HDR_LEN + UDP_HDR_LEN + HEAD_IB];
	size_t hl = pseudo_hdr(b, ip, ib_len), k = n;
	uint32_t crc;

	/* A longer part continues in place; the first pass then ends on a
	 * 16-byte fold boundary, so that only the last has a tail. */
	if (k > HEAD_IB)
		k = HEAD_IB - ((hl + HEAD_IB) & 15);

	memcpy(b + hl, ib, k);
	if (k > 4)
		b[hl + 4] = 0xff;
	crc = ur_crc32(0, b, hl + k);
	return k < n ? ur_crc32(crc, ib + k, n - k) : crc;
}

/**
 * ur_icrc() - ICRC of an IB part, given the IP/UDP fields it will travel with.
 * @ip: addresses, ports, and for IPv4 the ID and flags.
 * @ib: BTH .. payload + pad (no ICRC).
 * @ib_len: its length.
 *
 * Lengths in the IP and UDP headers are derived from @ib_len plus the ICRC.
 *
 * Return: the ICRC, to be written with ur_icrc_store().
 */
uint32_t ur_icrc(const struct ur_ipudp *ip, const uint8_t *ib, size_t ib_len)
{
	return crc_start(ip, ib_len, ib, ib_len);
}

uint32_t ur_icrc_copy(const struct ur_ipudp *ip, const uint8_t *ib,
		      size_t ib_len, size_t hdr_len, uint8_t *dst)
{
	uint32_t crc = crc_start(ip, ib_len, ib, hdr_len);

	return ur_crc32_copy(crc, dst, ib + hdr_len, ib_len - hdr_len);
}

uint32_t ur_icrc_split(const struct ur_ipudp *ip, const uint8_t *hdr,
		       size_t hdr_len, const uint8_t *payload,
		       size_t payload_len, size_t pad)
{
	static const uint8_t zero[4];
	uint32_t crc = crc_start(ip, hdr_len + payload_len + pad, hdr, hdr_len);

	crc = ur_crc32(crc, payload, payload_len);
	return ur_crc32(crc, zero, pad & 3);
}

/*
 * GF(2) arithmetic on CRC-32 values, bit-reflected as the CRC keeps them
 * (bit 31 is x^0): a * b mod P, and x^(8n) mod P, which is what appending
 * n zero bytes multiplies a CRC difference by.
 */
#define CRC32_POLY_REFLECTED 0xedb88320u

static uint32_t gf2_mulmod(uint32_t a, uint32_t b)
{
	uint32_t p = 0;

	for (uint32_t m = 1u << 31; m; m >>= 1) {
		if (a & m)
			p ^= b;
		b = (b & 1) ? (b >> 1) ^ CRC32_POLY_REFLECTED : b >> 1;
	}
	return p;
}

static uint32_t x_pow_8n(size_t n)
{
	uint32_t r = 1u << 31, sq = 1u << 23; /* x^0, x^8 */

	for (; n; n >>= 1) {
		if (n & 1)
			r = gf2_mulmod(r, sq);
		sq = gf2_mulmod(sq, sq);
	}
	return r;
}

/**
 * ur_icrc_fix_ipv4_id() - find the IPv4 ID and DF flag an ICRC was made with.
 * @ip: the fields the ICRC was computed with; on success its ip_id and the
 *	DF bit of ip_frag are set to the ones that make it match.
 * @ib_len: length of the IB part (no ICRC).
 * @delta: the computed ICRC XOR the packet's.
 *
 * A plain UDP socket does not show the ID and flags, and they are the only
 * IPv4 fields under the ICRC it cannot see (A17.3.3 masks TOS, TTL and the
 * checksum). The CRC is affine, so changing them changes the ICRC by a
 * linear function of their 17 bits: solve it. Any sender's intact packet
 * (rxe's IDs too) has a solution; a packet changed elsewhere has one with
 * probability 2^-15.
 *
 * Return: true (and @ip updated) if some ID and DF explain @delta.
 */
/*
 * The system ur_icrc_fix_ipv4_id() solves depends on the length alone, and
 * building it (x^(8n) and 17 products) costs over a microsecond: each
 * thread keeps the last few, in row echelon form, each row tagged with the
 * header bits it combines. A receiver sees few lengths (full-MTU packets,
 * ACKs, a message's last packet).
 */
#define ID_SYS_N 8
struct id_system {
	size_t ib_len;
	bool ready;
	uint32_t row[ID_BITS], tag[ID_BITS], pivot[ID_BITS];
};
static __thread struct id_system id_sys[ID_SYS_N];

static const struct id_system *id_system(size_t ib_len)
{
	struct id_system *s = &id_sys[(ib_len ^ ib_len >> 3) % ID_SYS_N];
	/* A difference in the pseudo header is carried through the ib_len
	 * bytes that follow it under the CRC. */
	uint32_t shift;

	if (s->ready && s->ib_len == ib_len)
		return s;
	s->ready = false;
	shift = x_pow_8n(ib_len);
	for (int i = 0; i < ID_BITS; i++) {
		s->row[i] = gf2_mulmod(id_basis[i], shift);
		s->tag[i] = 1u << i;
		for (int j = 0; j < i; j++)
			if (s->row[i] & s->pivot[j]) {
				s->row[i] ^= s->row[j];
				s->tag[i] ^= s->tag[j];
			}
		if (!s->row[i])
			return NULL; /* cannot happen: the basis is independent */
		s->pivot[i] = s->row[i] & -s->row[i];
	}
	s->ib_len = ib_len;
	s->ready = true;
	return s;
}

bool ur_icrc_fix_ipv4_id(struct ur_ipudp *ip, size_t ib_len, uint32_t delta)
{
	const struct id_system *s;
	uint32_t sol = 0;

	if (ip->v6)
		return false;
	if (!delta)
		return true;
	s = id_system(ib_len);
	if (!s)
		return false;
	for (int i = 0; i < ID_BITS; i++) {
		/* Without branches: which rows apply is data, not a pattern. */
		uint32_t m = -(uint32_t)((delta & s->pivot[i]) != 0);

		delta ^= s->row[i] & m;
		sol ^= s->tag[i] & m;
	}
	if (delta)
		return false;
	ip->ip_id ^= (uint16_t)sol;
	if (sol & (1u << 16))
		ip->ip_frag ^= 0x4000;
	return true;
}

/**
 * ur_icrc_raw() - ICRC over captured IP + UDP header bytes.
 * @ip_hdr: start of the IPv4 or IPv6 header.
 * @ip_udp_len: bytes from @ip_hdr to the end of the UDP header (IPv4
 *	options and IPv6 extension headers included).
 * @v6: IPv6.
 * @ib: BTH .. payload + pad (no ICRC).
 * @ib_len: its length.
 *
 * Return: the ICRC as ur_icrc_load() reads it from the packet, or 0 when
 * @ip_udp_len is too short to hold the headers.
 */
uint32_t ur_icrc_raw(const uint8_t *ip_hdr, size_t ip_udp_len, bool v6,
		     const uint8_t *ib, size_t ib_len)
{
	uint8_t h[64];
	size_t fixed = v6 ? IPV6_HDR_LEN : IPV4_HDR_LEN;
	uint32_t crc;

	if (ip_udp_len < fixed + UDP_HDR_LEN)
		return 0;
	crc = ur_crc32(0, lrh_ones, sizeof(lrh_ones));
	/* Fixed IP header, masked. */
	memcpy(h, ip_hdr, fixed);
	if (v6)
		mask_ipv6(h);
	else
		mask_ipv4(h);
	crc = ur_crc32(crc, h, fixed);
	/* IPv4 options / IPv6 extension headers travel unmasked. */
	crc = ur_crc32(crc, ip_hdr + fixed, ip_udp_len - fixed - UDP_HDR_LEN);
	/* UDP header with the checksum masked. */
	memcpy(h, ip_hdr + ip_udp_len - UDP_HDR_LEN, UDP_HDR_LEN);
	h[6] = 0xff;
	h[7] = 0xff;
	crc = ur_crc32(crc, h, UDP_HDR_LEN);
	return crc_ib(crc, ib, ib_len);
}

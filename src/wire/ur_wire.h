/* SPDX-License-Identifier: MIT */
/*
 * uroce wire layer: the RoCEv2 codec (IBTA vol. 1 ch. 9 base and extended
 * transport headers, Annex A17 RoCEv2 encapsulation and ICRC).
 *
 * Pure: no I/O, no clock, no allocation. Headers are read and written with
 * explicit big-endian accessors; no struct is ever overlaid on wire bytes.
 */
#ifndef UR_WIRE_H
#define UR_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define UR_ROCEV2_PORT 4791
#define UR_BTH_LEN 12
#define UR_RETH_LEN 16
#define UR_AETH_LEN 4
#define UR_ATMETH_LEN 28
#define UR_ATMACK_LEN 8
#define UR_IMMDT_LEN 4
#define UR_IETH_LEN 4
#define UR_DETH_LEN 8
#define UR_FETH_LEN 4
#define UR_XRCETH_LEN 4
#define UR_ICRC_LEN 4
#define UR_CNP_PAYLOAD_LEN 16 /* reserved bytes after a CNP's BTH (A17.9) */
/* Byte 0 of those, on a CNP with the selective-repeat bit only (a
 * negotiated extension, docs/wire.md "Spraying"): a late notice, not a
 * CE mark. */
#define UR_CNP_LATE 0x01
/* ... or a path notice: a request came on the UDP source port in bytes
 * 2-3 (big-endian) after that port was silent, or first. */
#define UR_CNP_HEARD 0x02
/* ... or: that port went silent while others delivered (a gap NAKed
 * without waiting for it). */
#define UR_CNP_SILENT 0x04
/* ... or a hole report: the BTH PSN and the PSNs after it, bytes 4-5
 * (big-endian) in all, are lost; the requester resends them (ur_sr.c
 * "holes"). */
#define UR_CNP_HOLE 0x08
#define UR_GSI_QKEY 0x80010000u
#define UR_DEFAULT_PKEY 0xffff

/* ---- big-endian load/store ------------------------------------------- */
static inline uint16_t ur_get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}
static inline uint32_t ur_get24(const uint8_t *p)
{
	return ((uint32_t)p[0] << 16) | ((uint32_t)p[1] << 8) | p[2];
}
static inline uint32_t ur_get32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	       ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t ur_get64(const uint8_t *p)
{
	return ((uint64_t)ur_get32(p) << 32) | ur_get32(p + 4);
}
static inline void ur_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static inline void ur_put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}
static inline void ur_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}
static inline void ur_put64(uint8_t *p, uint64_t v)
{
	ur_put32(p, (uint32_t)(v >> 32));
	ur_put32(p + 4, (uint32_t)v);
}

/* ---- opcodes (IBTA vol. 1 table 38; CNP from Annex A17.9.2) ----------- */
/*
 * XRC (IBTA 9.2, table 38, transport prefix 101b) mirrors RC opcode for
 * opcode in its low five bits: XRC = 0xA0 | RC. Requests carry an XRCETH
 * right after the BTH; responses and acknowledgements do not.
 */
#define UR_OP_XRC_BASE 0xa0
static inline uint8_t ur_op_xrc(uint8_t rc_op) { return (uint8_t)(UR_OP_XRC_BASE | (rc_op & 0x1f)); }
static inline bool ur_op_is_xrc(uint8_t op) { return (op >> 5) == (UR_OP_XRC_BASE >> 5); }
/* The RC opcode an XRC one mirrors. */
static inline uint8_t ur_op_xrc_to_rc(uint8_t op) { return op & 0x1f; }
#define UR_OPCODES(X)                                                        \
	X(RC_SEND_FIRST, 0x00)                                               \
	X(RC_SEND_MIDDLE, 0x01)                                              \
	X(RC_SEND_LAST, 0x02)                                                \
	X(RC_SEND_LAST_IMM, 0x03)                                            \
	X(RC_SEND_ONLY, 0x04)                                                \
	X(RC_SEND_ONLY_IMM, 0x05)                                            \
	X(RC_RDMA_WRITE_FIRST, 0x06)                                         \
	X(RC_RDMA_WRITE_MIDDLE, 0x07)                                        \
	X(RC_RDMA_WRITE_LAST, 0x08)                                          \
	X(RC_RDMA_WRITE_LAST_IMM, 0x09)                                      \
	X(RC_RDMA_WRITE_ONLY, 0x0a)                                          \
	X(RC_RDMA_WRITE_ONLY_IMM, 0x0b)                                      \
	X(RC_RDMA_READ_REQUEST, 0x0c)                                        \
	X(RC_RDMA_READ_RESPONSE_FIRST, 0x0d)                                 \
	X(RC_RDMA_READ_RESPONSE_MIDDLE, 0x0e)                                \
	X(RC_RDMA_READ_RESPONSE_LAST, 0x0f)                                  \
	X(RC_RDMA_READ_RESPONSE_ONLY, 0x10)                                  \
	X(RC_ACKNOWLEDGE, 0x11)                                              \
	X(RC_ATOMIC_ACKNOWLEDGE, 0x12)                                       \
	X(RC_COMPARE_SWAP, 0x13)                                             \
	X(RC_FETCH_ADD, 0x14)                                                \
	X(RC_SEND_LAST_INV, 0x16)                                            \
	X(RC_SEND_ONLY_INV, 0x17)                                            \
	X(RC_FLUSH, 0x1c)                                                    \
	X(RC_ATOMIC_WRITE, 0x1d)                                             \
	X(UC_SEND_FIRST, 0x20)                                               \
	X(UC_SEND_MIDDLE, 0x21)                                              \
	X(UC_SEND_LAST, 0x22)                                                \
	X(UC_SEND_LAST_IMM, 0x23)                                            \
	X(UC_SEND_ONLY, 0x24)                                                \
	X(UC_SEND_ONLY_IMM, 0x25)                                            \
	X(UC_RDMA_WRITE_FIRST, 0x26)                                         \
	X(UC_RDMA_WRITE_MIDDLE, 0x27)                                        \
	X(UC_RDMA_WRITE_LAST, 0x28)                                          \
	X(UC_RDMA_WRITE_LAST_IMM, 0x29)                                      \
	X(UC_RDMA_WRITE_ONLY, 0x2a)                                          \
	X(UC_RDMA_WRITE_ONLY_IMM, 0x2b)                                      \
	X(UD_SEND_ONLY, 0x64)                                                \
	X(UD_SEND_ONLY_IMM, 0x65)                                            \
	X(XRC_SEND_FIRST, 0xa0)                                              \
	X(XRC_SEND_MIDDLE, 0xa1)                                             \
	X(XRC_SEND_LAST, 0xa2)                                               \
	X(XRC_SEND_LAST_IMM, 0xa3)                                           \
	X(XRC_SEND_ONLY, 0xa4)                                               \
	X(XRC_SEND_ONLY_IMM, 0xa5)                                           \
	X(XRC_RDMA_WRITE_FIRST, 0xa6)                                        \
	X(XRC_RDMA_WRITE_MIDDLE, 0xa7)                                       \
	X(XRC_RDMA_WRITE_LAST, 0xa8)                                         \
	X(XRC_RDMA_WRITE_LAST_IMM, 0xa9)                                     \
	X(XRC_RDMA_WRITE_ONLY, 0xaa)                                         \
	X(XRC_RDMA_WRITE_ONLY_IMM, 0xab)                                     \
	X(XRC_RDMA_READ_REQUEST, 0xac)                                       \
	X(XRC_RDMA_READ_RESPONSE_FIRST, 0xad)                                \
	X(XRC_RDMA_READ_RESPONSE_MIDDLE, 0xae)                               \
	X(XRC_RDMA_READ_RESPONSE_LAST, 0xaf)                                 \
	X(XRC_RDMA_READ_RESPONSE_ONLY, 0xb0)                                 \
	X(XRC_ACKNOWLEDGE, 0xb1)                                             \
	X(XRC_ATOMIC_ACKNOWLEDGE, 0xb2)                                      \
	X(XRC_COMPARE_SWAP, 0xb3)                                            \
	X(XRC_FETCH_ADD, 0xb4)                                               \
	X(XRC_SEND_LAST_INV, 0xb6)                                           \
	X(XRC_SEND_ONLY_INV, 0xb7)                                           \
	X(CNP, 0x81)

enum ur_opcode {
#define UR_X(name, val) UR_OP_##name = val,
	UR_OPCODES(UR_X)
#undef UR_X
};

/* Which extension headers follow the BTH (bit set). */
enum ur_hdr_mask {
	UR_HDR_RETH = 1u << 0,
	UR_HDR_AETH = 1u << 1,
	UR_HDR_ATMETH = 1u << 2,
	UR_HDR_ATMACK = 1u << 3,
	UR_HDR_IMMDT = 1u << 4,
	UR_HDR_IETH = 1u << 5,
	UR_HDR_DETH = 1u << 6,
	UR_HDR_FETH = 1u << 7,
	UR_HDR_XRCETH = 1u << 8,  /* bit == enum ur_eth index, as above */
	UR_HDR_PAYLOAD = 1u << 9, /* the opcode may carry payload */
	/* Opcode classification bits (not headers). */
	UR_OPF_REQ = 1u << 16,    /* a request (vs. a response/ack) */
	UR_OPF_SEND = 1u << 17,
	UR_OPF_WRITE = 1u << 18,
	UR_OPF_READ = 1u << 19,   /* read request */
	UR_OPF_READ_RESP = 1u << 20,
	UR_OPF_ATOMIC = 1u << 21,
	UR_OPF_ACK = 1u << 22,
	UR_OPF_FIRST = 1u << 23,
	UR_OPF_MIDDLE = 1u << 24,
	UR_OPF_LAST = 1u << 25,
	UR_OPF_ONLY = UR_OPF_FIRST | UR_OPF_LAST,
	UR_OPF_IMM = 1u << 26,
	UR_OPF_INV = 1u << 27,
	UR_OPF_FLUSH = 1u << 28,
	UR_OPF_ATOMIC_WRITE = 1u << 29,
	UR_OPF_CNP = 1u << 30,
};

enum ur_eth { /* extension header index into ur_opcode_info.off[] */
	UR_ETH_RETH,
	UR_ETH_AETH,
	UR_ETH_ATMETH,
	UR_ETH_ATMACK,
	UR_ETH_IMMDT,
	UR_ETH_IETH,
	UR_ETH_DETH,
	UR_ETH_FETH,
	UR_ETH_XRCETH,
	UR_ETH_NUM,
};

struct ur_opcode_info {
	const char *name;   /* e.g. "RC_SEND_ONLY" */
	uint32_t mask;      /* enum ur_hdr_mask bits */
	uint8_t hdr_len;    /* BTH + all extension headers */
	uint8_t off[UR_ETH_NUM]; /* offset from BTH start; 0 = absent */
	uint8_t fixed_payload; /* exact payload length where fixed, else 0 */
	bool valid;
};

/* Table lookup; returns NULL for an opcode that is not defined. */
const struct ur_opcode_info *ur_opcode_info(uint8_t opcode);
const char *ur_opcode_name(uint8_t opcode); /* "UNKNOWN(0xNN)"-safe */

/* ---- BTH accessors (IBTA 9.2) ---------------------------------------- */
static inline uint8_t ur_bth_opcode(const uint8_t *b) { return b[0]; }
static inline bool ur_bth_se(const uint8_t *b) { return b[1] & 0x80; }
static inline bool ur_bth_mig(const uint8_t *b) { return b[1] & 0x40; }
static inline uint8_t ur_bth_pad(const uint8_t *b) { return (b[1] >> 4) & 3; }
static inline uint8_t ur_bth_tver(const uint8_t *b) { return b[1] & 0xf; }
static inline uint16_t ur_bth_pkey(const uint8_t *b) { return ur_get16(b + 2); }
static inline bool ur_bth_fecn(const uint8_t *b) { return b[4] & 0x80; }
static inline bool ur_bth_becn(const uint8_t *b) { return b[4] & 0x40; }
static inline uint32_t ur_bth_dqpn(const uint8_t *b) { return ur_get24(b + 5); }
static inline bool ur_bth_ackreq(const uint8_t *b) { return b[8] & 0x80; }
static inline uint32_t ur_bth_psn(const uint8_t *b) { return ur_get24(b + 9); }
/*
 * uroce extension (docs/wire.md "Extensions"): bit 5 of BTH byte 4, the
 * first of the six reserved bits after FECN/BECN. Set only on QPs where
 * selective repeat was enabled locally; the ICRC masks the whole byte, and
 * a standard peer ignores reserved bits. On a request: "the requester can
 * repeat selectively". On an ACK/NAK/READ response/atomic ACK: "the
 * responder holds out-of-order requests of this QP"; a NAK (PSN sequence
 * error) carrying it asks for that one PSN only.
 */
#define UR_BTH_EXT_SR 0x20
static inline bool ur_bth_ext_sr(const uint8_t *b) { return b[4] & UR_BTH_EXT_SR; }

/*
 * uroce extension, jumbo packets (docs/wire.md "Extensions"): bits 4 and 3
 * of BTH byte 4, one per packet size. On a request: "this requester can
 * send packets of that size"; on an answer: "this responder takes them".
 * Only between two QPs that enabled it, each over a link whose MTU
 * carries such a datagram: FIRST and MIDDLE packets of SENDs and WRITEs
 * then carry the largest size both ends named instead of the path MTU
 * (READ responses keep the path MTU).
 */
/* Encryption (docs/wire.md "Encryption"): the packet is sealed, a trailer
 * (session id, sequence number, GCM tag) follows its ciphertext. */
#define UR_BTH_EXT_CRYPT 0x04
#define UR_CRYPT_TRAILER_LEN 32 /* session id 8, sequence 8, tag 16 */
static inline bool ur_bth_ext_crypt(const uint8_t *b) { return b[4] & UR_BTH_EXT_CRYPT; }
#define UR_BTH_EXT_JUMBO16K 0x10
#define UR_BTH_EXT_JUMBO8K 0x08
#define UR_BTH_EXT_JUMBO (UR_BTH_EXT_JUMBO16K | UR_BTH_EXT_JUMBO8K)
#define UR_JUMBO_MTU 16384u /* the largest */
/* The sizes and their bits, largest first. */
static const struct {
	uint32_t size;
	uint8_t bit;
} ur_jumbo_sizes[] = {
	{ 16384, UR_BTH_EXT_JUMBO16K },
	{ 8192, UR_BTH_EXT_JUMBO8K },
};
#define UR_JUMBO_SIZES (sizeof(ur_jumbo_sizes) / sizeof(ur_jumbo_sizes[0]))
static inline uint8_t ur_bth_ext_jumbo(const uint8_t *b) { return b[4] & UR_BTH_EXT_JUMBO; }
/* The bits for the sizes that fit in @max bytes of payload. */
static inline uint8_t ur_jumbo_bits(uint32_t max)
{
	uint8_t bits = 0;

	for (unsigned int i = 0; i < UR_JUMBO_SIZES; i++)
		if (max >= ur_jumbo_sizes[i].size)
			bits |= ur_jumbo_sizes[i].bit;
	return bits;
}
/* The bit of a jumbo packet size (0: not one). */
static inline uint8_t ur_jumbo_bit(uint32_t size)
{
	for (unsigned int i = 0; i < UR_JUMBO_SIZES; i++)
		if (size == ur_jumbo_sizes[i].size)
			return ur_jumbo_sizes[i].bit;
	return 0;
}
/* The largest size among @bits (0: none). */
static inline uint32_t ur_jumbo_size(uint8_t bits)
{
	for (unsigned int i = 0; i < UR_JUMBO_SIZES; i++)
		if (bits & ur_jumbo_sizes[i].bit)
			return ur_jumbo_sizes[i].size;
	return 0;
}

/* Decoded view of a BTH (for encoders and printers). */
struct ur_bth {
	uint8_t opcode;
	bool se, mig, fecn, becn, ackreq;
	uint8_t pad, tver;
	uint16_t pkey;
	uint32_t dqpn, psn;
};
void ur_bth_encode(uint8_t *p, const struct ur_bth *h);
void ur_bth_decode(const uint8_t *p, struct ur_bth *h);

struct ur_reth { uint64_t va; uint32_t rkey; uint32_t len; };
struct ur_atmeth { uint64_t va; uint32_t rkey; uint64_t swap_add; uint64_t compare; };
struct ur_deth { uint32_t qkey; uint32_t sqpn; };
struct ur_aeth { uint8_t syndrome; uint32_t msn; };
struct ur_feth { uint8_t sel_level; uint8_t placement; };

/*
 * Extension header codecs (IBTA 9.3). Encoders write every byte of the
 * header, reserved bits as zero; decoders ignore reserved bits.
 */
void ur_reth_encode(uint8_t *p, const struct ur_reth *r);
void ur_reth_decode(const uint8_t *p, struct ur_reth *r);
void ur_atmeth_encode(uint8_t *p, const struct ur_atmeth *a);
void ur_atmeth_decode(const uint8_t *p, struct ur_atmeth *a);
void ur_deth_encode(uint8_t *p, const struct ur_deth *d);
void ur_deth_decode(const uint8_t *p, struct ur_deth *d);
void ur_aeth_encode(uint8_t *p, const struct ur_aeth *a);
void ur_aeth_decode(const uint8_t *p, struct ur_aeth *a);
void ur_feth_encode(uint8_t *p, const struct ur_feth *f);
void ur_feth_decode(const uint8_t *p, struct ur_feth *f);
/* XRCETH (IBTA 9.3, XRC annex): 8 reserved bits, then the 24-bit number
 * of the XRC SRQ the request is for. */
static inline uint32_t ur_xrceth_srqn(const uint8_t *p) { return ur_get24(p + 1); }
static inline void ur_xrceth_put(uint8_t *p, uint32_t srqn)
{
	p[0] = 0;
	ur_put24(p + 1, srqn & 0xffffffu);
}

/* ---- AETH syndrome (IBTA 9.7.5.1.2, table 43/44/45) --------------------- */
enum ur_aeth_kind { UR_AETH_ACK = 0, UR_AETH_RNR_NAK = 1, UR_AETH_RSVD = 2,
		    UR_AETH_NAK = 3 };
enum ur_nak_code {
	UR_NAK_PSN_SEQ_ERR = 0,
	UR_NAK_INV_REQ = 1,
	UR_NAK_REM_ACCESS_ERR = 2,
	UR_NAK_REM_OP_ERR = 3,
	UR_NAK_INV_RD_REQ = 4,
};
#define UR_AETH_CREDIT_INVALID 0x1f
static inline enum ur_aeth_kind ur_aeth_kind(uint8_t syn) { return (enum ur_aeth_kind)(syn >> 5); }
static inline uint8_t ur_aeth_value(uint8_t syn) { return syn & 0x1f; }
uint8_t ur_aeth_ack(uint8_t credits);      /* credits: 5-bit code */
uint8_t ur_aeth_rnr_nak(uint8_t timer);    /* timer: 5-bit code */
uint8_t ur_aeth_nak(enum ur_nak_code code);
/* RNR NAK timer code -> microseconds (IBTA table 45); code 0 = 655.36 ms. */
uint32_t ur_rnr_timer_us(uint8_t code);
/* Credit code (table 44) -> number of messages; 0x1f -> UINT32_MAX. */
uint32_t ur_credit_count(uint8_t code);
const char *ur_aeth_str(uint8_t syn, char *buf, size_t len); /* "ACK", "NAK(PSN_SEQ_ERR)"... */

/* ---- PSN arithmetic: 24 bits, the only place it lives (IBTA 9.7.1) ----- */
#define UR_PSN_MASK 0xffffffu
static inline uint32_t ur_psn_add(uint32_t psn, uint32_t n) { return (psn + n) & UR_PSN_MASK; }
/* Signed distance a - b in the 24-bit space: <0 if a is before b. */
static inline int32_t ur_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}
static inline int ur_psn_cmp(uint32_t a, uint32_t b)
{
	int32_t d = ur_psn_diff(a, b);
	return (d > 0) - (d < 0);
}

/* ---- RoCEv2 encapsulation and ICRC (Annex A17.3.3) ------------------------ */
/*
 * The IP/UDP headers that the ICRC covers. The I/O layer fills what the
 * kernel will put on (or did put on) the wire; for IPv4 the ID and flags
 * matter (see docs/wire.md).
 */
struct ur_ipudp {
	bool v6;
	uint8_t src[16], dst[16]; /* IPv4 in the first 4 bytes */
	uint16_t sport, dport;
	uint8_t tos;      /* masked by the ICRC; kept for building headers */
	uint8_t ttl;      /* masked */
	uint16_t ip_id;   /* IPv4 identification */
	uint16_t ip_frag; /* IPv4 flags + fragment offset, 0x4000 = DF */
	uint32_t flow_label; /* IPv6; masked */
};

/*
 * Whether two addresses of struct ur_ipudp (src or dst) name the same host:
 * IPv4 in the first 4 bytes, or IPv6; an IPv4-mapped IPv6 address
 * (::ffff:a.b.c.d, RFC 4291 2.5.5.2) equals its IPv4 form, as RoCEv2 GIDs
 * carry IPv4 addresses that way (Annex A17).
 */
static inline bool ur_ip_same(bool v6a, const uint8_t *a, bool v6b,
			      const uint8_t *b)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (v6a && !v6b && !memcmp(a, mapped, 12))
		return !memcmp(a + 12, b, 4);
	if (!v6a && v6b && !memcmp(b, mapped, 12))
		return !memcmp(a, b + 12, 4);
	return v6a == v6b && !memcmp(a, b, v6a ? 16 : 4);
}

/*
 * ICRC over the IB part (BTH..payload+pad, without the trailing ICRC) of a
 * packet whose IP/UDP headers are described by @ip. Returns the value as
 * stored on the wire: little-endian bytes, i.e. put with ur_icrc_store().
 */
uint32_t ur_icrc(const struct ur_ipudp *ip, const uint8_t *ib, size_t ib_len);
/* The same for an IB part in two pieces (zero-copy transmit): @hdr (BTH
 * and extension headers, at least the BTH), @payload, then @pad zero
 * bytes (0..3). */
uint32_t ur_icrc_split(const struct ur_ipudp *ip, const uint8_t *hdr,
		       size_t hdr_len, const uint8_t *payload,
		       size_t payload_len, size_t pad);
/* ur_icrc() that also copies the IB part's bytes from @hdr_len on to @dst:
 * the payload, checked and placed in one pass (the receive path). */
uint32_t ur_icrc_copy(const struct ur_ipudp *ip, const uint8_t *ib,
		      size_t ib_len, size_t hdr_len, uint8_t *dst);
/* The IPv4 ID and DF flag that make an ICRC match, which a plain UDP socket
 * does not show: true and @ip updated if some do; @delta is the ICRC
 * computed with @ip XOR the packet's (see icrc.c). */
bool ur_icrc_fix_ipv4_id(struct ur_ipudp *ip, size_t ib_len, uint32_t delta);
/* Same, but over real IPv4/IPv6 + UDP header bytes as captured. */
uint32_t ur_icrc_raw(const uint8_t *ip_hdr, size_t ip_udp_len, bool v6,
		     const uint8_t *ib, size_t ib_len);
static inline void ur_icrc_store(uint8_t *p, uint32_t icrc)
{
	p[0] = (uint8_t)icrc; p[1] = (uint8_t)(icrc >> 8);
	p[2] = (uint8_t)(icrc >> 16); p[3] = (uint8_t)(icrc >> 24);
}
static inline uint32_t ur_icrc_load(const uint8_t *p)
{
	return p[0] | (p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
/* CRC-32 (IEEE, zlib-compatible) with a run-time chosen implementation. */
uint32_t ur_crc32(uint32_t crc, const void *buf, size_t len);
/* ur_crc32() that also copies @buf to @dst (no overlap), in one pass over
 * the bytes where the CPU allows (VPCLMULQDQ). */
uint32_t ur_crc32_copy(uint32_t crc, void *dst, const void *buf, size_t len);
const char *ur_crc32_impl(void); /* "pclmul" or "slice8" */
void ur_crc32_force_portable(bool on); /* tests compare both */
/* The carry-less back end's widest registers: at most @max bits (128,
 * 256, 512) and what the CPU has; returns the width now in use (0 where
 * that back end is unavailable). Tests and benches compare them. */
unsigned int ur_crc32_vec_bits(unsigned int max);

/* ---- decoded packet view ---------------------------------------------- */
#define UR_DECODE_ERRORS(X)                                                  \
	X(OK, "ok")                                                          \
	X(TRUNCATED, "truncated")                                            \
	X(UNKNOWN_OPCODE, "unknown opcode")                                  \
	X(BAD_TVER, "bad transport version")                                 \
	X(BAD_LENGTH, "length contradicts headers")                          \
	X(BAD_ICRC, "bad ICRC")                                              \
	X(NOT_ROCEV2, "not RoCEv2")

enum ur_decode_err {
#define UR_X(n, s) UR_DEC_##n,
	UR_DECODE_ERRORS(UR_X)
#undef UR_X
	UR_DEC_NUM
};
const char *ur_decode_strerror(enum ur_decode_err e);

/* A decoded IB transport packet. Pointers point into the caller's buffer. */
struct ur_pkt {
	const uint8_t *bth;     /* start of the IB part */
	const struct ur_opcode_info *info;
	struct ur_bth h;
	uint32_t mask;          /* copy of info->mask */
	struct ur_reth reth;
	struct ur_aeth aeth;
	struct ur_atmeth atm;
	uint64_t atmack;
	uint32_t imm;           /* ImmDt, host order of the wire value */
	uint32_t ieth;          /* rkey to invalidate */
	struct ur_deth deth;
	struct ur_feth feth;
	uint32_t xrc_srqn;      /* XRCETH: the XRC SRQ number */
	const uint8_t *payload;
	uint32_t payload_len;   /* without pad (and trailer) */
	const uint8_t *trailer; /* a sealed packet's (UR_BTH_EXT_CRYPT), or NULL */
	uint32_t icrc;          /* as read from the packet */
};

/*
 * Decode the IB part (BTH .. ICRC) of a RoCEv2 UDP payload. Total: any input
 * gives UR_DEC_OK or a precise error, never a read outside [buf, buf+len).
 * ICRC is not checked here (needs the IP/UDP headers): see ur_icrc().
 */
enum ur_decode_err ur_pkt_decode(const uint8_t *buf, size_t len,
				 struct ur_pkt *pkt);

/*
 * Encode: write BTH + extension headers from @pkt (h, and the fields its
 * opcode needs) into @buf, then copy @payload, pad to 4 bytes and set the
 * pad count. Pad bytes and the ICRC space are zeroed; compute the ICRC
 * with ur_icrc() and put it with ur_icrc_store(). A CNP may pass
 * payload NULL/0 to get its 16 reserved zero bytes. Returns the total
 * length including the ICRC, or a negative errno (-EINVAL unknown opcode,
 * payload on an opcode without one, wrong fixed payload length; -ENOSPC).
 * Reserved header bits are written as zero; decoding then re-encoding a
 * packet reproduces it byte for byte when its reserved bits were zero.
 */
int ur_pkt_encode(uint8_t *buf, size_t cap, const struct ur_pkt *pkt,
		  const void *payload, uint32_t payload_len);
/* Header-only length for an opcode (BTH + extension headers), 0 if unknown. */
size_t ur_pkt_hdr_len(uint8_t opcode);

/*
 * One-line class of a decoded packet, the form the golden README histograms
 * use: "RC SEND_ONLY", "RC ACKNOWLEDGE [NAK(PSN_SEQ_ERR)]",
 * "UD SEND_ONLY QP1 MAD class=0x07 CM REQ Send". Returns @buf.
 */
const char *ur_pkt_class_str(const struct ur_pkt *pkt, char *buf, size_t len);

/* ---- management datagrams: IB CM over QP1 (IBTA 13.4, 12.6) ------------ */
#define UR_MAD_LEN 256
#define UR_MGMT_CLASS_CM 0x07
enum ur_cm_attr {
	UR_CM_ATTR_REQ = 0x0010,
	UR_CM_ATTR_MRA = 0x0011,
	UR_CM_ATTR_REJ = 0x0012,
	UR_CM_ATTR_REP = 0x0013,
	UR_CM_ATTR_RTU = 0x0014,
	UR_CM_ATTR_DREQ = 0x0015,
	UR_CM_ATTR_DREP = 0x0016,
	UR_CM_ATTR_SIDR_REQ = 0x0017,
	UR_CM_ATTR_SIDR_REP = 0x0018,
};
struct ur_mad_hdr {
	uint8_t base_version, mgmt_class, class_version, method;
	uint16_t status, class_specific;
	uint64_t tid;
	uint16_t attr_id;
	uint32_t attr_mod;
};
/*
 * uroce's vendor hellos on QP1 (docs/wire.md "Encryption negotiation",
 * "Selective repeat negotiation"): a MAD of vendor class 0x0A (range 1,
 * IBTA 13.4.4), method Send, whose attribute says which; bytes 24..39 are
 * the same in every hello: magic, version 1, flags, the sender's and the
 * receiver's QPNs. What follows is the hello's own.
 */
#define UR_MGMT_CLASS_UROCE 0x0A
#define UR_HELLO_FLAG_ANSWER 0x01
enum { UR_HELLO_MAGIC = 24, UR_HELLO_VER = 28, UR_HELLO_FLAGS = 29,
       UR_HELLO_SRC_QPN = 32, UR_HELLO_DST_QPN = 36, UR_HELLO_OWN = 40 };
struct ur_hello {
	uint16_t attr;
	uint32_t magic;
	bool answer;
	uint32_t src_qpn, dst_qpn; /* 24 bits */
	uint64_t tid;
};
/* Writes the common part of a hello into @mad (UR_MAD_LEN bytes, zeroed
 * by the caller). */
void ur_hello_put(uint8_t *mad, const struct ur_hello *h);
/* 0 if @mad (@len bytes) is a hello of @h->attr and @h->magic (the
 * common fields into @h), else -EBADMSG. */
int ur_hello_get(const uint8_t *mad, size_t len, struct ur_hello *h);

/* Decoded CM message: the common fields of REQ/REP/RTU/REJ/DREQ/DREP. */
struct ur_cm_msg {
	struct ur_mad_hdr mad;
	const char *name;       /* "REQ", "REP", ... or NULL */
	uint32_t local_comm_id, remote_comm_id;
	uint64_t service_id;    /* REQ */
	uint32_t local_qpn;     /* REQ, REP, SIDR_REP; DREQ: remote QPN */
	uint32_t starting_psn;  /* REQ, REP */
	uint32_t local_qkey;    /* REQ */
	uint8_t resp_resources, initiator_depth;
	/* REQ: path MTU code, transport service type (0 RC, 1 UC),
	 * primary path local ACK timeout, retry count, RNR retry count;
	 * REP: rnr_retry. */
	uint8_t path_mtu, qp_type, timeout, retry_cnt, rnr_retry;
	uint16_t rej_reason;    /* REJ reason; SIDR_REP status */
	const uint8_t *private_data;
	uint32_t private_len;
};
int ur_mad_decode(const uint8_t *mad, size_t len, struct ur_mad_hdr *h);
/* Returns 0, or -EINVAL if not a CM MAD / -EBADMSG if truncated. */
int ur_cm_decode(const uint8_t *mad, size_t len, struct ur_cm_msg *m);

#endif

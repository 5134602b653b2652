/* SPDX-License-Identifier: MIT */
/*
 * uroce wire layer, iWARP part: MPA (RFC 5044, with the RFC 6581 enhanced
 * connection set-up), DDP (RFC 5041) and RDMAP (RFC 5040) over a TCP byte
 * stream, and CRC32c (Castagnoli, RFC 3720 B.4).
 *
 * Pure like the rest of uroce_wire: no sockets, no clock, no allocation.
 * Bytes in, decoded views out; headers are read and written with explicit
 * big-endian accessors (ur_get32() ...), never overlaid structs. Where Linux
 * siw and the RFCs differ, both are offered and the caller picks (see
 * docs/wire.md "iWARP").
 */
#ifndef UR_IWARP_H
#define UR_IWARP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ur_wire.h"

/* ---- CRC32c (Castagnoli, reflected 0x82f63b78) -------------------------- */
/* Chains like zlib's crc32(): start with 0, feed pieces in order. */
uint32_t ur_crc32c(uint32_t crc, const void *buf, size_t len);
const char *ur_crc32c_impl(void); /* "sse42" or "slice8" */
void ur_crc32c_force_portable(bool on); /* tests compare both */

/* ---- errors: each one a Terminate the transport can send ----------------
 * name, text, Terminate layer, error type, error code (RFC 5040 7;
 * RFC 5044 and RFC 6581 for the LLP layer). OK and MORE are not errors.
 */
#define UR_IW_ERRORS(X)                                                      \
	X(OK, "ok", 0, 0, 0)                                                 \
	X(MORE, "need more bytes", 0, 0, 0)                                  \
	X(BAD_KEY, "MPA key is neither Request nor Reply", 2, 0, 0x04)       \
	X(BAD_REV, "MPA Rev is not 1 or 2", 2, 0, 0x04)                      \
	X(PD_TOO_LONG, "MPA PD_Length over 512", 2, 0, 0x04)                 \
	X(BAD_V2, "enhanced MPA without the IRD/ORD word", 2, 0, 0x04)       \
	X(REFUSED, "MPA markers or CRC refused", 2, 0, 0x04)                 \
	X(BAD_IRD, "MPA IRD/ORD insufficient", 2, 0, 0x06)                   \
	X(NO_RTR, "MPA no RTR in common", 2, 0, 0x07)                        \
	X(BAD_LEN, "ULPDU length over the receive limit", 2, 0, 0x03)        \
	X(BAD_CRC, "MPA CRC32c mismatch", 2, 0, 0x02)                        \
	X(BAD_MARKER, "MPA marker does not point at the FPDU", 2, 0, 0x03)   \
	X(SHORT_HDR, "ULPDU shorter than its DDP/RDMAP header", 1, 0, 0x00)  \
	X(BAD_DDP_VER_T, "DDP version is not 1 (tagged)", 1, 1, 0x04)        \
	X(BAD_DDP_VER_U, "DDP version is not 1 (untagged)", 1, 2, 0x06)      \
	X(BAD_RDMAP_VER, "RDMAP version is not 1", 0, 2, 0x05)               \
	X(BAD_OPCODE, "unknown opcode or wrong tagged flag", 0, 2, 0x06)     \
	X(BAD_QN, "untagged queue number not the opcode's", 1, 2, 0x01)      \
	X(BAD_BODY, "READ Request or Terminate body malformed", 0, 2, 0xff)

enum ur_iw_err {
#define UR_X(n, s, l, t, c) UR_IW_##n,
	UR_IW_ERRORS(UR_X)
#undef UR_X
	UR_IW_NUM
};
const char *ur_iw_strerror(enum ur_iw_err e);
/* The Terminate that reports @e (RFC 5040 7): layer, error type, code. */
void ur_iw_err_term(enum ur_iw_err e, uint8_t *layer, uint8_t *etype,
		    uint8_t *ecode);

/* ---- MPA Request/Reply (RFC 5044, RFC 6581) ------------------------ */
#define UR_MPA_KEY_LEN 16
#define UR_MPA_RR_LEN 20 /* key, flags, Rev, PD_Length */
#define UR_MPA_PD_MAX 512 /* RFC 5044 Request/Reply frame */
#define UR_MPA_V2_LEN 4 /* the RFC 6581 IRD/ORD word */
#define UR_MPA_F_MARKERS 0x80
#define UR_MPA_F_CRC 0x40
#define UR_MPA_F_REJECT 0x20
#define UR_MPA_F_ENHANCED 0x10 /* RFC 6581: IRD/ORD word in the PD */
#define UR_MPA_F_SIW_GSO 0x08  /* siw's own; never sent by stock siw */
#define UR_MPA_IRD_ORD_MAX 0x3fff
#define UR_MPA_REV1 1
#define UR_MPA_REV2 2

/* RTR message the initiator sends in P2P mode (RFC 6581). */
enum ur_mpa_rtr { UR_RTR_NONE, UR_RTR_WRITE, UR_RTR_READ, UR_RTR_SEND };

struct ur_mpa_rr {
	bool reply;          /* key "MPA ID Rep Frame" */
	uint8_t flags;       /* the whole flags byte, reserved bits too */
	uint8_t rev;
	bool v2;             /* Rev 2 + enhanced: the IRD/ORD word is there */
	bool p2p;            /* word: peer-to-peer */
	bool rtr_send, rtr_write, rtr_read; /* zero-length RTRs offered/picked */
	uint16_t ird, ord;   /* 14 bits each */
	const uint8_t *pd;   /* ULP private data after the word (decode) */
	uint16_t pd_len;
};

/*
 * Decode a Request or Reply at the start of @b. UR_IW_OK with *@used the
 * frame length (20 + PD_Length), UR_IW_MORE when @len is short of it, or
 * the error. rr->pd points into @b.
 */
enum ur_iw_err ur_mpa_rr_decode(const uint8_t *b, size_t len,
				struct ur_mpa_rr *rr, size_t *used);
/*
 * Encode @rr (key from rr->reply; with rr->v2 the word goes first and the
 * enhanced flag is set) and rr->pd_len bytes of rr->pd. Returns the frame
 * length, -EINVAL (PD too long, IRD/ORD over 14 bits), -ENOSPC.
 */
int ur_mpa_rr_encode(uint8_t *b, size_t cap, const struct ur_mpa_rr *rr);

/* What a responder supports and what its application accepts with. */
struct ur_mpa_policy {
	bool crc_required;   /* siw: false ("mpa_crc_required") */
	bool crc_strict;     /* refuse a peer's CRC when we do not want it */
	bool markers;        /* siw: false, refuses M; true: sends them when
	                      * asked (RFC 5044: M asks the peer to send) and
	                      * a responder asks for them in return */
	bool relaxed_ird;    /* siw: true, adjust instead of refusing */
	uint16_t ird, ord;   /* the accepting application's */
	uint16_t ird_max, ord_max; /* device limits (siw: 128) */
};

/* The outcome of a negotiation, for the transport to configure its QP. */
struct ur_mpa_conn {
	bool crc, markers_rx, markers_tx;
	uint16_t ird, ord;   /* this side's */
	enum ur_mpa_rtr rtr; /* P2P: the RTR the initiator will send */
	enum ur_iw_err term; /* why refused (a Terminate's LLP code) */
};

/*
 * The responder's answer to @req under @pol, as siw 6.1 gives it: the
 * Reply to send (@rep, no ULP private data) and the connection (@conn).
 * Returns 0 when accepted, 1 when the Reply rejects (R set: markers asked
 * for, CRC refused, IRD/ORD unsatisfiable without relaxed negotiation),
 * or -EPROTO when the request earns no Reply at all (wrong key, Rev over
 * 2, a Reply), as siw then just closes the connection.
 */
int ur_mpa_answer(const struct ur_mpa_rr *req, const struct ur_mpa_policy *pol,
		  struct ur_mpa_rr *rep, struct ur_mpa_conn *conn);
/*
 * The initiator's check of @rep against its @req: 0 and @conn, or a
 * negative errno (-ECONNREFUSED on R, markers or CRC refused; -EPROTO
 * wrong version or no enhanced reply to an enhanced request; -ENOMEM IRD
 * insufficient, -ENOENT no RTR in common) with conn->term the Terminate.
 */
int ur_mpa_check_reply(const struct ur_mpa_rr *req, const struct ur_mpa_rr *rep,
		       const struct ur_mpa_policy *pol, struct ur_mpa_conn *conn);

/* ---- FPDU framing (RFC 5044) -------------------------------------- */
#define UR_MPA_LEN_LEN 2
#define UR_MPA_CRC_LEN 4
#define UR_MPA_MARKER_LEN 4
#define UR_MPA_MARKER_INTERVAL 512 /* RFC 5044 5 */
#define UR_MPA_ULPDU_MAX 65535
#define UR_MPA_FPDU_MAX (2 + 65535 + 3 + 4)

/* Pad after length + ULPDU to a multiple of 4 (markers not counted). */
static inline unsigned int ur_mpa_pad(uint32_t ulpdu_len)
{
	return (4 - ((ulpdu_len + UR_MPA_LEN_LEN) & 3)) & 3;
}
/* Largest ULPDU in one segment of @emss bytes (RFC 5044 "MULPDU"). */
uint32_t ur_mpa_mulpdu(uint32_t emss, bool markers);

/* One FPDU the deframer found; ulpdu points into the deframer's buffer. */
struct ur_mpa_fpdu {
	const uint8_t *ulpdu;
	uint16_t ulpdu_len;
	uint8_t pad;
	uint32_t crc;        /* as received (LSB first on the wire) */
	bool crc_checked;    /* CRC negotiated: verified */
	uint32_t markers;    /* markers removed from this FPDU */
	uint64_t stream_off; /* stream offset of its ULPDU Length field */
};

struct ur_mpa_rx {
	bool crc, markers;
	uint16_t ulpdu_max;  /* receive limit; larger lengths are BAD_LEN */
	enum ur_iw_err err;  /* sticky: after an error the stream is lost */
	uint64_t pos;        /* FPDU stream offset (markers counted) */
	uint64_t fpdu_start; /* stream offset of the current ULPDU Length */
	uint32_t have, need; /* FPDU bytes held (markers removed), wanted */
	uint32_t reg;        /* running CRC32c register */
	uint32_t fpdu_markers;
	uint8_t mk[4];
	uint8_t mk_have;
	bool in_marker;
	uint64_t fpdus, crc_ok, markers_seen;
	uint64_t errors[UR_IW_NUM]; /* counted once per stream */
	uint8_t buf[UR_MPA_FPDU_MAX + 1]; /* one FPDU, markers removed */
};

/* @crc, @markers as negotiated for this direction; the stream offset 0 is
 * the first byte after the MPA Request/Reply (RFC 5044 5: markers count
 * from there). */
void ur_mpa_rx_init(struct ur_mpa_rx *rx, bool crc, bool markers);
/*
 * Feed stream bytes. Consumes up to the end of one FPDU: UR_IW_OK with
 * *@fp (valid until the next call) and *@used bytes taken, UR_IW_MORE when
 * all of @n went in without completing one, or an error (counted, and
 * returned again by every later call).
 */
enum ur_iw_err ur_mpa_rx_feed(struct ur_mpa_rx *rx, const uint8_t *p, size_t n,
			      size_t *used, struct ur_mpa_fpdu *fp);

struct ur_mpa_tx {
	bool crc, markers;
	uint64_t pos;        /* FPDU stream offset of the next byte */
};
void ur_mpa_tx_init(struct ur_mpa_tx *tx, bool crc, bool markers);
/* Bytes ur_mpa_tx_frame() will write for a ULPDU of @ulpdu_len now. */
size_t ur_mpa_tx_len(const struct ur_mpa_tx *tx, uint32_t ulpdu_len);
/*
 * Frame one ULPDU given as two pieces (a header and a payload) into @out:
 * length, ULPDU, zero pad, CRC32c (0 when not negotiated) and markers where
 * the stream needs them. Returns the bytes written, -EINVAL (ULPDU over
 * 65535), -ENOSPC.
 */
int ur_mpa_tx_frame(struct ur_mpa_tx *tx, uint8_t *out, size_t cap,
		    const uint8_t *hdr, size_t hdr_len, const uint8_t *payload,
		    size_t payload_len);

/* ---- DDP / RDMAP (RFC 5041 4, RFC 5040 4) --------------------------------- */
#define UR_DDP_TAGGED_LEN 14   /* control 2 + STag 4 + TO 8 */
#define UR_DDP_UNTAGGED_LEN 18 /* control 2 + RsvdULP 4 + QN, MSN, MO */
#define UR_RDMAP_RREQ_LEN 28   /* READ Request body (RFC 5040 4) */
#define UR_DDP_F_TAGGED 0x80
#define UR_DDP_F_LAST 0x40
#define UR_DDP_VERSION 1
#define UR_RDMAP_VERSION 1
#define UR_DDP_QN_SEND 0
#define UR_DDP_QN_READ 1
#define UR_DDP_QN_TERM 2
#define UR_RTR_STAG 0x00000001u /* siw's zero-length WRITE RTR */

/* name, opcode, tagged, untagged queue (-1 tagged), fixed body, payload,
 * invalidate STag, solicited event (RFC 5040 4). */
#define UR_RDMAP_OPCODES(X)                                                  \
	X(WRITE, 0, true, -1, 0, true, false, false)                         \
	X(READ_REQ, 1, false, UR_DDP_QN_READ, UR_RDMAP_RREQ_LEN, false,      \
	  false, false)                                                      \
	X(READ_RESP, 2, true, -1, 0, true, false, false)                     \
	X(SEND, 3, false, UR_DDP_QN_SEND, 0, true, false, false)             \
	X(SEND_INV, 4, false, UR_DDP_QN_SEND, 0, true, true, false)          \
	X(SEND_SE, 5, false, UR_DDP_QN_SEND, 0, true, false, true)           \
	X(SEND_SE_INV, 6, false, UR_DDP_QN_SEND, 0, true, true, true)        \
	X(TERMINATE, 7, false, UR_DDP_QN_TERM, 0, false, false, false)

enum ur_rdmap_op {
#define UR_X(n, v, t, q, b, p, i, s) UR_RDMAP_##n = v,
	UR_RDMAP_OPCODES(UR_X)
#undef UR_X
};
#define UR_RDMAP_NUM_OPS 8

struct ur_rdmap_op_info {
	const char *name;
	uint8_t opcode;
	bool tagged;
	int8_t qn;           /* untagged queue, -1 for tagged */
	uint8_t body_len;    /* fixed RDMAP body after the DDP header */
	bool payload;
	bool inval;          /* RsvdULP carries the STag to invalidate */
	bool se;
};
/* NULL for opcodes 8..15 (RFC 7306 extensions: not supported). */
const struct ur_rdmap_op_info *ur_rdmap_op(uint8_t opcode);

struct ur_rdmap_rreq {   /* READ Request body (RFC 5040 4) */
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t size;
	uint32_t src_stag;
	uint64_t src_to;
};

/* A decoded DDP segment (one ULPDU). */
struct ur_ddp_seg {
	const struct ur_rdmap_op_info *op;
	uint8_t opcode;
	bool tagged, last;
	uint32_t stag;       /* tagged: sink STag */
	uint64_t to;         /* tagged: tagged offset */
	uint32_t inv_stag;   /* untagged RsvdULP: Invalidate STag (else 0) */
	uint32_t qn, msn, mo;
	struct ur_rdmap_rreq rreq;
	const uint8_t *body; /* after the DDP header (Terminate: its body) */
	uint32_t body_len;
	const uint8_t *payload; /* data (WRITE, READ_RESP, SEND*) */
	uint32_t payload_len;
};

static inline size_t ur_ddp_hdr_len(bool tagged)
{
	return tagged ? UR_DDP_TAGGED_LEN : UR_DDP_UNTAGGED_LEN;
}
/* Decode one ULPDU (what ur_mpa_fpdu.ulpdu holds). Total, bounds-checked. */
enum ur_iw_err ur_ddp_decode(const uint8_t *u, size_t len, struct ur_ddp_seg *s);
/*
 * Write the DDP/RDMAP header of @s (op from s->opcode, version 1, reserved
 * zero) and its fixed body (READ Request) into @b. Returns the header
 * length, the payload follows (ur_mpa_tx_frame takes it separately);
 * -EINVAL for an unknown opcode, -ENOSPC.
 */
int ur_ddp_encode_hdr(uint8_t *b, size_t cap, const struct ur_ddp_seg *s);

/*
 * Cut a message of @msg_len bytes into DDP segments of at most @mulpdu
 * ULPDU bytes (siw: one TCP MSS per FPDU): the @i-th segment's header
 * fields (TO or MO advanced, L on the last) and payload range. Returns
 * the number of segments (1 for an empty message), 0 when @mulpdu leaves
 * no room for payload.
 */
uint32_t ur_ddp_cut(const struct ur_ddp_seg *msg, uint32_t msg_len,
		    uint32_t mulpdu, uint32_t i, struct ur_ddp_seg *seg,
		    uint32_t *off, uint32_t *len);

/* ---- Terminate (RFC 5040 4) --------------------------------------------- */
#define UR_TERM_LAYER_RDMAP 0
#define UR_TERM_LAYER_DDP 1
#define UR_TERM_LAYER_LLP 2
/*
 * siw declares the Terminate Control as C bit-fields; on little-endian
 * hosts it sends layer in the low nibble of byte 0, error type in the high
 * one, and M/D/R as 0x01/0x02/0x04 of byte 2 (RFC: 0x80/0x40/0x20).
 */
enum ur_term_layout { UR_TERM_RFC, UR_TERM_SIW };

struct ur_iw_term {
	uint8_t layer, etype, ecode;
	bool m, d, r;        /* segment length valid, DDP, RDMAP header copied */
	uint16_t rsvd;       /* the 13 reserved bits as read */
	bool has_seg_len;    /* the 2-byte DDP Segment Length is present */
	uint16_t seg_len;
	const uint8_t *ddp_hdr;   /* copy of the terminated DDP header */
	uint8_t ddp_hdr_len;      /* 0, 14 or 18 */
	const uint8_t *rdma_hdr;  /* copy of the READ Request body */
	uint8_t rdma_hdr_len;     /* 0 or 28 */
	const uint8_t *extra;     /* bytes the flags do not account for */
	uint32_t extra_len;
};

/* Decode a Terminate body (after its 18-byte untagged header). */
enum ur_iw_err ur_iw_term_decode(const uint8_t *b, size_t len,
				 enum ur_term_layout lay, struct ur_iw_term *t);
/* Encode (the copies are taken from t->ddp_hdr/rdma_hdr, extra after):
 * the body length, or -ENOSPC / -EINVAL. */
int ur_iw_term_encode(uint8_t *b, size_t cap, enum ur_term_layout lay,
		      const struct ur_iw_term *t);
/* "DDP", "tagged buffer", "invalid STag" for a Terminate's fields. */
const char *ur_iw_term_layer_name(uint8_t layer);
const char *ur_iw_term_etype_name(uint8_t layer, uint8_t etype);
const char *ur_iw_term_ecode_name(uint8_t layer, uint8_t etype, uint8_t ecode);

#endif

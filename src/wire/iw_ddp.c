// SPDX-License-Identifier: MIT
/*
 * DDP segments (RFC 5041 4) carrying RDMAP messages (RFC 5040 4): the opcode
 * table, the tagged and untagged headers, the READ Request body, cutting a
 * message into segments, and the Terminate message with its error tables
 * (RFC 5040 4, 7).
 *
 * ULPDU = DDP control (T, L, version) | RDMAP control (version, opcode) |
 *   tagged:   STag (4) | TO (8)                              -> 14 bytes
 *   untagged: RsvdULP (4) | QN (4) | MSN (4) | MO (4)        -> 18 bytes
 * then the RDMAP body (READ Request, Terminate) or the payload.
 */
#include <errno.h>
#include <string.h>

#include "ur_iwarp.h"

#define DDP_VER_MASK 0x03
#define RDMAP_VER_SHIFT 6
#define RDMAP_OP_MASK 0x0f

static const struct ur_rdmap_op_info ops[16] = {
#define UR_X(n, v, t, q, b, p, i, s)                                         \
	[v] = {.name = #n, .opcode = v, .tagged = t, .qn = q, .body_len = b,  \
	       .payload = p, .inval = i, .se = s},
	UR_RDMAP_OPCODES(UR_X)
#undef UR_X
};

const struct ur_rdmap_op_info *ur_rdmap_op(uint8_t opcode)
{
	return opcode < 16 && ops[opcode].name ? &ops[opcode] : NULL;
}

enum ur_iw_err ur_ddp_decode(const uint8_t *u, size_t len, struct ur_ddp_seg *s)
{
	size_t hl;

	memset(s, 0, sizeof(*s));
	if (len < 2)
		return UR_IW_SHORT_HDR;
	s->tagged = u[0] & UR_DDP_F_TAGGED;
	s->last = u[0] & UR_DDP_F_LAST;
	s->opcode = u[1] & RDMAP_OP_MASK;
	hl = ur_ddp_hdr_len(s->tagged);
	if (len < hl)
		return UR_IW_SHORT_HDR;
	/* RFC 5041: a version error is reported per buffer model. */
	if ((u[0] & DDP_VER_MASK) != UR_DDP_VERSION)
		return s->tagged ? UR_IW_BAD_DDP_VER_T : UR_IW_BAD_DDP_VER_U;
	if (u[1] >> RDMAP_VER_SHIFT != UR_RDMAP_VERSION)
		return UR_IW_BAD_RDMAP_VER;
	s->op = ur_rdmap_op(s->opcode);
	/* RFC 5040 7: an opcode in the wrong buffer model is unexpected. */
	if (!s->op || s->op->tagged != s->tagged)
		return UR_IW_BAD_OPCODE;
	if (s->tagged) {
		s->stag = ur_get32(u + 2);
		s->to = ur_get64(u + 6);
	} else {
		s->inv_stag = ur_get32(u + 2);
		s->qn = ur_get32(u + 6);
		s->msn = ur_get32(u + 10);
		s->mo = ur_get32(u + 14);
		if (s->qn != (uint32_t)s->op->qn)
			return UR_IW_BAD_QN;
	}
	s->body = u + hl;
	s->body_len = (uint32_t)(len - hl);
	if (s->opcode == UR_RDMAP_READ_REQ) {
		const uint8_t *b = s->body;

		/* RFC 5040 4: one segment of exactly the body. */
		if (s->body_len != UR_RDMAP_RREQ_LEN || !s->last || s->mo)
			return UR_IW_BAD_BODY;
		s->rreq.sink_stag = ur_get32(b);
		s->rreq.sink_to = ur_get64(b + 4);
		s->rreq.size = ur_get32(b + 12);
		s->rreq.src_stag = ur_get32(b + 16);
		s->rreq.src_to = ur_get64(b + 20);
	} else if (s->opcode == UR_RDMAP_TERMINATE) {
		if (!s->last || s->mo || s->body_len < 4)
			return UR_IW_BAD_BODY;
	} else {
		s->payload = s->body;
		s->payload_len = s->body_len;
	}
	return UR_IW_OK;
}

int ur_ddp_encode_hdr(uint8_t *b, size_t cap, const struct ur_ddp_seg *s)
{
	const struct ur_rdmap_op_info *op = ur_rdmap_op(s->opcode);
	size_t hl;

	if (!op)
		return -EINVAL;
	hl = ur_ddp_hdr_len(op->tagged) + op->body_len;
	if (cap < hl)
		return -ENOSPC;
	b[0] = (uint8_t)((op->tagged ? UR_DDP_F_TAGGED : 0) |
			 (s->last ? UR_DDP_F_LAST : 0) | UR_DDP_VERSION);
	b[1] = (uint8_t)(UR_RDMAP_VERSION << RDMAP_VER_SHIFT | op->opcode);
	if (op->tagged) {
		ur_put32(b + 2, s->stag);
		ur_put64(b + 6, s->to);
	} else {
		ur_put32(b + 2, op->inval ? s->inv_stag : 0);
		ur_put32(b + 6, (uint32_t)op->qn);
		ur_put32(b + 10, s->msn);
		ur_put32(b + 14, s->mo);
	}
	if (op->opcode == UR_RDMAP_READ_REQ) {
		uint8_t *r = b + UR_DDP_UNTAGGED_LEN;

		ur_put32(r, s->rreq.sink_stag);
		ur_put64(r + 4, s->rreq.sink_to);
		ur_put32(r + 12, s->rreq.size);
		ur_put32(r + 16, s->rreq.src_stag);
		ur_put64(r + 20, s->rreq.src_to);
	}
	return (int)hl;
}

/* RFC 5041: each segment carries its TO (tagged) or MO (untagged),
 * the last one L; siw fills every segment but the last to the MULPDU. */
uint32_t ur_ddp_cut(const struct ur_ddp_seg *msg, uint32_t msg_len,
		    uint32_t mulpdu, uint32_t i, struct ur_ddp_seg *seg,
		    uint32_t *off, uint32_t *len)
{
	const struct ur_rdmap_op_info *op = ur_rdmap_op(msg->opcode);
	uint32_t hl, per, n;

	if (!op)
		return 0;
	hl = (uint32_t)ur_ddp_hdr_len(op->tagged) + op->body_len;
	if (mulpdu <= hl)
		return 0;
	per = mulpdu - hl;
	n = msg_len ? (msg_len + per - 1) / per : 1;
	if (i >= n)
		return n;
	*seg = *msg;
	*off = i * per;
	*len = msg_len - *off < per ? msg_len - *off : per;
	seg->last = i == n - 1;
	if (op->tagged)
		seg->to = msg->to + *off;
	else
		seg->mo = msg->mo + *off;
	return n;
}

/* ---- Terminate ----------------------------------------------------------- */
#define TERM_RFC_M 0x80
#define TERM_RFC_D 0x40
#define TERM_RFC_R 0x20
#define TERM_SIW_M 0x01
#define TERM_SIW_D 0x02
#define TERM_SIW_R 0x04

enum ur_iw_err ur_iw_term_decode(const uint8_t *b, size_t len,
				 enum ur_term_layout lay, struct ur_iw_term *t)
{
	size_t at = 4;

	memset(t, 0, sizeof(*t));
	if (len < 4)
		return UR_IW_BAD_BODY;
	if (lay == UR_TERM_SIW) {
		t->layer = b[0] & 0x0f;
		t->etype = b[0] >> 4;
		t->m = b[2] & TERM_SIW_M;
		t->d = b[2] & TERM_SIW_D;
		t->r = b[2] & TERM_SIW_R;
		t->rsvd = (uint16_t)(((b[2] >> 3) << 8) | b[3]);
	} else {
		t->layer = b[0] >> 4;
		t->etype = b[0] & 0x0f;
		t->m = b[2] & TERM_RFC_M;
		t->d = b[2] & TERM_RFC_D;
		t->r = b[2] & TERM_RFC_R;
		t->rsvd = (uint16_t)(((b[2] & 0x1f) << 8) | b[3]);
	}
	t->ecode = b[1];
	/* RFC 5040 4: the DDP Segment Length field is there whenever a
	 * header is copied (valid only with M), then the DDP header, then
	 * the RDMAP header of a READ Request. */
	if (t->m || t->d || t->r) {
		if (len < at + 2)
			return UR_IW_BAD_BODY;
		t->has_seg_len = true;
		t->seg_len = ur_get16(b + at);
		at += 2;
	}
	if (t->d) {
		size_t hl;

		if (len < at + 1)
			return UR_IW_BAD_BODY;
		hl = ur_ddp_hdr_len(b[at] & UR_DDP_F_TAGGED);
		if (len < at + hl)
			return UR_IW_BAD_BODY;
		t->ddp_hdr = b + at;
		t->ddp_hdr_len = (uint8_t)hl;
		at += hl;
	}
	if (t->r) {
		if (len < at + UR_RDMAP_RREQ_LEN)
			return UR_IW_BAD_BODY;
		t->rdma_hdr = b + at;
		t->rdma_hdr_len = UR_RDMAP_RREQ_LEN;
		at += UR_RDMAP_RREQ_LEN;
	}
	t->extra = b + at;
	t->extra_len = (uint32_t)(len - at);
	return UR_IW_OK;
}

int ur_iw_term_encode(uint8_t *b, size_t cap, enum ur_term_layout lay,
		      const struct ur_iw_term *t)
{
	bool seg = t->m || t->d || t->r;
	size_t len = 4 + (seg ? 2 : 0) + (t->d ? t->ddp_hdr_len : 0) +
		     (t->r ? t->rdma_hdr_len : 0) + t->extra_len;
	size_t at = 4;

	if (t->layer > 15 || t->etype > 15 || t->rsvd > 0x1fff ||
	    (t->d && !t->ddp_hdr) || (t->r && !t->rdma_hdr))
		return -EINVAL;
	if (cap < len)
		return -ENOSPC;
	if (lay == UR_TERM_SIW) {
		b[0] = (uint8_t)(t->etype << 4 | t->layer);
		b[2] = (uint8_t)((t->m ? TERM_SIW_M : 0) | (t->d ? TERM_SIW_D : 0) |
				 (t->r ? TERM_SIW_R : 0) | ((t->rsvd >> 8) << 3));
	} else {
		b[0] = (uint8_t)(t->layer << 4 | t->etype);
		b[2] = (uint8_t)((t->m ? TERM_RFC_M : 0) | (t->d ? TERM_RFC_D : 0) |
				 (t->r ? TERM_RFC_R : 0) | (t->rsvd >> 8));
	}
	b[1] = t->ecode;
	b[3] = (uint8_t)t->rsvd;
	if (seg) {
		ur_put16(b + at, t->seg_len);
		at += 2;
	}
	if (t->d) {
		memcpy(b + at, t->ddp_hdr, t->ddp_hdr_len);
		at += t->ddp_hdr_len;
	}
	if (t->r) {
		memcpy(b + at, t->rdma_hdr, t->rdma_hdr_len);
		at += t->rdma_hdr_len;
	}
	if (t->extra_len)
		memcpy(b + at, t->extra, t->extra_len);
	return (int)len;
}

/* RFC 5040 7 (layers, RDMAP, DDP from RFC 5041), RFC 5044 and RFC 6581
 * (LLP = MPA). One row per (layer, type, code). */
static const struct {
	uint8_t layer, etype;
	int16_t ecode; /* -1: the error type's own row */
	const char *name;
} term_names[] = {
	{0, 0, -1, "local catastrophic"},
	{0, 1, -1, "remote protection"},
	{0, 2, -1, "remote operation"},
	{0, 1, 0x00, "invalid STag"},
	{0, 1, 0x01, "base or bounds violation"},
	{0, 1, 0x02, "access rights violation"},
	{0, 1, 0x03, "STag not associated with RDMAP stream"},
	{0, 1, 0x04, "TO wrap"},
	{0, 1, 0x09, "STag cannot be invalidated"},
	{0, 1, 0xff, "unspecified"},
	{0, 2, 0x05, "invalid RDMAP version"},
	{0, 2, 0x06, "unexpected opcode"},
	{0, 2, 0x07, "catastrophic error, localized to RDMAP stream"},
	{0, 2, 0x08, "catastrophic error, global"},
	{0, 2, 0x09, "STag cannot be invalidated"},
	{0, 2, 0xff, "unspecified"},
	{1, 0, -1, "local catastrophic"},
	{1, 1, -1, "tagged buffer"},
	{1, 2, -1, "untagged buffer"},
	{1, 3, -1, "reserved for the LLP"},
	{1, 1, 0x00, "invalid STag"},
	{1, 1, 0x01, "base or bounds violation"},
	{1, 1, 0x02, "STag not associated with DDP stream"},
	{1, 1, 0x03, "TO wrap"},
	{1, 1, 0x04, "invalid DDP version"},
	{1, 2, 0x01, "invalid QN"},
	{1, 2, 0x02, "invalid MSN, no buffer available"},
	{1, 2, 0x03, "invalid MSN, MSN range is not valid"},
	{1, 2, 0x04, "invalid MO"},
	{1, 2, 0x05, "DDP message too long for available buffer"},
	{1, 2, 0x06, "invalid DDP version"},
	{2, 0, -1, "MPA"},
	{2, 0, 0x01, "TCP connection closed, terminated or lost"},
	{2, 0, 0x02, "MPA CRC error"},
	{2, 0, 0x03, "MPA marker and ULPDU length mismatch"},
	{2, 0, 0x04, "invalid MPA Request or Reply"},
	{2, 0, 0x05, "local catastrophic"},
	{2, 0, 0x06, "insufficient IRD resources"},
	{2, 0, 0x07, "no matching RTR model"},
};

const char *ur_iw_term_layer_name(uint8_t layer)
{
	static const char *const names[] = {"RDMAP", "DDP", "LLP"};

	return layer < 3 ? names[layer] : "reserved";
}

static const char *term_lookup(uint8_t layer, uint8_t etype, int ecode)
{
	for (size_t i = 0; i < sizeof(term_names) / sizeof(term_names[0]); i++)
		if (term_names[i].layer == layer && term_names[i].etype == etype &&
		    term_names[i].ecode == ecode)
			return term_names[i].name;
	return "reserved";
}

const char *ur_iw_term_etype_name(uint8_t layer, uint8_t etype)
{
	return term_lookup(layer, etype, -1);
}

/* A catastrophic error type has one code, 0 (RFC 5040 7). */
const char *ur_iw_term_ecode_name(uint8_t layer, uint8_t etype, uint8_t ecode)
{
	if (etype == 0 && layer < 2)
		return ecode ? "reserved" : "unspecified";
	return term_lookup(layer, etype, ecode);
}

// SPDX-License-Identifier: MIT
/*
 * MPA connection set-up: the Request/Reply frames (RFC 5044) with the
 * RFC 6581 enhanced set-up (Rev 2, IRD/ORD word), and the negotiation as a
 * pure function: what a responder answers, what an initiator accepts, with
 * the choices Linux siw 6.1 makes (siw_cm.c; recorded in
 * shared/wire/siw/README.md).
 */
#include <errno.h>
#include <string.h>

#include "ur_iwarp.h"

static const struct {
	const char *text;
	uint8_t layer, etype, ecode;
} errs[UR_IW_NUM] = {
#define UR_X(n, s, l, t, c) [UR_IW_##n] = {s, l, t, c},
	UR_IW_ERRORS(UR_X)
#undef UR_X
};

const char *ur_iw_strerror(enum ur_iw_err e)
{
	return (unsigned int)e < UR_IW_NUM ? errs[e].text : "?";
}

void ur_iw_err_term(enum ur_iw_err e, uint8_t *layer, uint8_t *etype,
		    uint8_t *ecode)
{
	if ((unsigned int)e >= UR_IW_NUM)
		e = UR_IW_BAD_BODY;
	*layer = errs[e].layer;
	*etype = errs[e].etype;
	*ecode = errs[e].ecode;
}

static const char key_req[UR_MPA_KEY_LEN] = "MPA ID Req Frame";
static const char key_rep[UR_MPA_KEY_LEN] = "MPA ID Rep Frame";

/* RFC 6581: |P2P|SEND-RTR| IRD(14) | WRITE-RTR|READ-RTR| ORD(14) | */
#define V2_P2P 0x80000000u
#define V2_RTR_SEND 0x40000000u
#define V2_RTR_WRITE 0x00008000u
#define V2_RTR_READ 0x00004000u

enum ur_iw_err ur_mpa_rr_decode(const uint8_t *b, size_t len,
				struct ur_mpa_rr *rr, size_t *used)
{
	uint16_t pd_len;

	memset(rr, 0, sizeof(*rr));
	*used = 0;
	/* The key decides before the length: a wrong stream fails early. */
	if (len < UR_MPA_KEY_LEN) {
		if (memcmp(b, key_req, len) && memcmp(b, key_rep, len))
			return UR_IW_BAD_KEY;
		return UR_IW_MORE;
	}
	if (!memcmp(b, key_rep, UR_MPA_KEY_LEN))
		rr->reply = true;
	else if (memcmp(b, key_req, UR_MPA_KEY_LEN))
		return UR_IW_BAD_KEY;
	if (len < UR_MPA_RR_LEN)
		return UR_IW_MORE;
	rr->flags = b[16];
	rr->rev = b[17];
	pd_len = ur_get16(b + 18);
	/* RFC 5044: Rev 1; RFC 6581: Rev 2 (siw also takes 0; we do not). */
	if (rr->rev != UR_MPA_REV1 && rr->rev != UR_MPA_REV2)
		return UR_IW_BAD_REV;
	if (pd_len > UR_MPA_PD_MAX)
		return UR_IW_PD_TOO_LONG;
	if (len < (size_t)UR_MPA_RR_LEN + pd_len)
		return UR_IW_MORE;
	rr->pd = b + UR_MPA_RR_LEN;
	rr->pd_len = pd_len;
	if (rr->rev == UR_MPA_REV2 && (rr->flags & UR_MPA_F_ENHANCED)) {
		uint32_t w;

		if (pd_len < UR_MPA_V2_LEN)
			return UR_IW_BAD_V2;
		w = ur_get32(rr->pd);
		rr->v2 = true;
		rr->p2p = w & V2_P2P;
		rr->rtr_send = w & V2_RTR_SEND;
		rr->rtr_write = w & V2_RTR_WRITE;
		rr->rtr_read = w & V2_RTR_READ;
		rr->ird = (w >> 16) & UR_MPA_IRD_ORD_MAX;
		rr->ord = w & UR_MPA_IRD_ORD_MAX;
		rr->pd += UR_MPA_V2_LEN;
		rr->pd_len -= UR_MPA_V2_LEN;
	}
	*used = UR_MPA_RR_LEN + (size_t)pd_len;
	return UR_IW_OK;
}

int ur_mpa_rr_encode(uint8_t *b, size_t cap, const struct ur_mpa_rr *rr)
{
	size_t pd = rr->pd_len + (rr->v2 ? UR_MPA_V2_LEN : 0);
	uint8_t flags = rr->flags;

	if (pd > UR_MPA_PD_MAX || rr->ird > UR_MPA_IRD_ORD_MAX ||
	    rr->ord > UR_MPA_IRD_ORD_MAX || (rr->v2 && rr->rev != UR_MPA_REV2))
		return -EINVAL;
	if (cap < UR_MPA_RR_LEN + pd)
		return -ENOSPC;
	if (rr->v2)
		flags |= UR_MPA_F_ENHANCED;
	memcpy(b, rr->reply ? key_rep : key_req, UR_MPA_KEY_LEN);
	b[16] = flags;
	b[17] = rr->rev;
	ur_put16(b + 18, (uint16_t)pd);
	b += UR_MPA_RR_LEN;
	if (rr->v2) {
		uint32_t w = ((uint32_t)rr->ird << 16) | rr->ord;

		w |= (rr->p2p ? V2_P2P : 0) | (rr->rtr_send ? V2_RTR_SEND : 0) |
		     (rr->rtr_write ? V2_RTR_WRITE : 0) |
		     (rr->rtr_read ? V2_RTR_READ : 0);
		ur_put32(b, w);
		b += UR_MPA_V2_LEN;
	}
	if (rr->pd_len)
		memcpy(b, rr->pd, rr->pd_len);
	return (int)(UR_MPA_RR_LEN + pd);
}

static uint16_t min16(uint16_t a, uint16_t b)
{
	return a < b ? a : b;
}

/*
 * Responder (siw_proc_mpareq + siw_accept): the Reply copies the Request's
 * flags and Rev with the Reply key; markers are refused with R (RFC 5044
 * lets a responder refuse them); CRC is used when either side asks
 * (RFC 5044: when either side asks) unless strict.
 */
int ur_mpa_answer(const struct ur_mpa_rr *req, const struct ur_mpa_policy *pol,
		  struct ur_mpa_rr *rep, struct ur_mpa_conn *conn)
{
	bool reject = false;

	memset(rep, 0, sizeof(*rep));
	memset(conn, 0, sizeof(*conn));
	if (req->reply || (req->rev != UR_MPA_REV1 && req->rev != UR_MPA_REV2) ||
	    (req->rev == UR_MPA_REV2 && (req->flags & UR_MPA_F_ENHANCED) &&
	     !req->v2)) {
		conn->term = req->reply ? UR_IW_BAD_KEY
			     : req->rev == UR_MPA_REV2 ? UR_IW_BAD_V2 : UR_IW_BAD_REV;
		return -EPROTO;
	}
	rep->reply = true;
	rep->rev = req->rev;
	rep->flags = req->flags & (UR_MPA_F_CRC | UR_MPA_F_ENHANCED);
	rep->v2 = req->v2;
	if ((req->flags & UR_MPA_F_MARKERS) && !pol->markers) {
		reject = true;
		conn->term = UR_IW_REFUSED;
	}
	if (req->flags & UR_MPA_F_CRC) {
		if (!pol->crc_required && pol->crc_strict) {
			reject = true;
			conn->term = UR_IW_REFUSED;
			rep->flags &= (uint8_t)~UR_MPA_F_CRC;
		}
	} else if (pol->crc_required) {
		rep->flags |= UR_MPA_F_CRC;
	}
	if (pol->markers && (req->flags & UR_MPA_F_MARKERS))
		rep->flags |= UR_MPA_F_MARKERS;
	conn->crc = rep->flags & UR_MPA_F_CRC;
	conn->markers_tx = req->flags & UR_MPA_F_MARKERS && pol->markers;
	conn->markers_rx = conn->markers_tx;
	conn->ird = pol->ird;
	conn->ord = pol->ord;
	if (req->v2) {
		/* The peer's IRD bounds our ORD, its ORD is the least IRD
		 * we need (RFC 6581), both within the device limits. */
		uint16_t ord_cap = min16(req->ird, pol->ord_max);
		uint16_t ird_need = min16(req->ord, pol->ird_max);

		if (conn->ord > ord_cap) {
			if (!pol->relaxed_ird)
				reject = true;
			conn->ord = ord_cap;
		}
		if (conn->ird < ird_need) {
			if (!pol->relaxed_ird)
				reject = true;
			conn->ird = ird_need;
		}
		if (reject && !conn->term)
			conn->term = UR_IW_BAD_IRD;
		rep->ird = conn->ird;
		rep->ord = conn->ord;
		/* RFC 6581: pick one RTR the initiator offered; siw
		 * prefers WRITE, then READ, and WRITE when none is named
		 * (it never takes a zero-length SEND: no receive posted). */
		if (req->p2p) {
			rep->p2p = true;
			if (req->rtr_write || !req->rtr_read) {
				rep->rtr_write = true;
				conn->rtr = UR_RTR_WRITE;
			} else {
				rep->rtr_read = true;
				conn->rtr = UR_RTR_READ;
			}
		}
	}
	if (reject) {
		rep->flags |= UR_MPA_F_REJECT;
		return 1;
	}
	return 0;
}

/* Initiator (siw_proc_mpareply). */
int ur_mpa_check_reply(const struct ur_mpa_rr *req, const struct ur_mpa_rr *rep,
		       const struct ur_mpa_policy *pol, struct ur_mpa_conn *conn)
{
	memset(conn, 0, sizeof(*conn));
	conn->ird = pol->ird;
	conn->ord = pol->ord;
	if (!rep->reply || (rep->rev != UR_MPA_REV1 && rep->rev != UR_MPA_REV2)) {
		conn->term = rep->reply ? UR_IW_BAD_REV : UR_IW_BAD_KEY;
		return -EPROTO;
	}
	if (rep->flags & UR_MPA_F_REJECT)
		return -ECONNREFUSED;
	if (((rep->flags & UR_MPA_F_MARKERS) && !pol->markers) ||
	    (pol->crc_required && !(rep->flags & UR_MPA_F_CRC)) ||
	    (pol->crc_strict && !pol->crc_required &&
	     (rep->flags & UR_MPA_F_CRC))) {
		conn->term = UR_IW_REFUSED;
		return -ECONNREFUSED;
	}
	conn->crc = rep->flags & UR_MPA_F_CRC;
	conn->markers_rx = (req->flags & UR_MPA_F_MARKERS) && pol->markers;
	conn->markers_tx = (rep->flags & UR_MPA_F_MARKERS) && pol->markers;
	if (!req->v2)
		return 0;
	if (!rep->v2) {
		conn->term = UR_IW_BAD_V2;
		return -EPROTO;
	}
	/* Relaxed: only an ORD beyond what the device can take fails. */
	if ((conn->ird < rep->ord &&
	     (!pol->relaxed_ird || rep->ord > pol->ird_max)) ||
	    (conn->ord > rep->ird && !pol->relaxed_ird)) {
		conn->ird = rep->ord;
		conn->ord = rep->ird;
		conn->term = UR_IW_BAD_IRD;
		return -ENOMEM;
	}
	conn->ird = rep->ord;
	conn->ord = rep->ird;
	if (req->p2p && (req->rtr_write || req->rtr_read)) {
		bool w = req->rtr_write && rep->rtr_write;
		bool r = req->rtr_read && rep->rtr_read;

		if (!w && !r) {
			conn->term = UR_IW_NO_RTR;
			return -ENOENT;
		}
		conn->rtr = w ? UR_RTR_WRITE : UR_RTR_READ;
	}
	return 0;
}

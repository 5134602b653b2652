// SPDX-License-Identifier: MIT
/*
 * Whole-packet decode and encode of the IB part of a RoCEv2 UDP payload:
 * BTH, the extension headers the opcode table names, payload, pad, ICRC.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ur_wire.h"

static const char *const decode_errs[UR_DEC_NUM] = {
#define UR_X(n, s) [UR_DEC_##n] = s,
	UR_DECODE_ERRORS(UR_X)
#undef UR_X
};

const char *ur_decode_strerror(enum ur_decode_err e)
{
	if ((unsigned)e >= UR_DEC_NUM)
		return "unknown error";
	return decode_errs[e];
}

/*
 * FIRST and MIDDLE packets carry exactly one path MTU of payload and no pad
 * (IBTA 9.7.6.1.3, C9-xx); the MTU is one of 256..4096, or 8192 or 16384
 * between uroce QPs that negotiated jumbo packets (the responder checks
 * the size against its QP).
 */
static bool is_pmtu(uint32_t n)
{
	return n == 256 || n == 512 || n == 1024 || n == 2048 || n == 4096 ||
	       ur_jumbo_bit(n);
}

/**
 * ur_pkt_decode() - decode the IB part of a RoCEv2 UDP payload.
 * @buf: first byte of the BTH.
 * @len: bytes up to and including the ICRC.
 * @pkt: filled on UR_DEC_OK (partially otherwise).
 *
 * Return: UR_DEC_OK, or the first inconsistency found.
 */
enum ur_decode_err ur_pkt_decode(const uint8_t *buf, size_t len,
				 struct ur_pkt *pkt)
{
	const struct ur_opcode_info *info;
	size_t body;

	memset(pkt, 0, sizeof(*pkt));
	pkt->bth = buf;
	if (len < UR_BTH_LEN + UR_ICRC_LEN)
		return UR_DEC_TRUNCATED;
	ur_bth_decode(buf, &pkt->h);
	info = ur_opcode_info(pkt->h.opcode);
	if (!info)
		return UR_DEC_UNKNOWN_OPCODE;
	pkt->info = info;
	pkt->mask = info->mask;
	if (pkt->h.tver != 0) /* IBTA 9.2: TVer is 0 */
		return UR_DEC_BAD_TVER;
	if (len < (size_t)info->hdr_len + UR_ICRC_LEN)
		return UR_DEC_TRUNCATED;
	/* Headers are whole words and the pad rounds the payload up to one. */
	if (len & 3)
		return UR_DEC_BAD_LENGTH;
	body = len - info->hdr_len - UR_ICRC_LEN;
	if (pkt->h.pad > body)
		return UR_DEC_BAD_LENGTH;
	pkt->payload = buf + info->hdr_len;
	pkt->payload_len = (uint32_t)(body - pkt->h.pad);
	pkt->icrc = ur_icrc_load(buf + len - UR_ICRC_LEN);
	if (ur_bth_ext_crypt(buf)) {
		/* Sealed (docs/wire.md "Encryption"): the trailer follows the
		 * payload, before the pad; the checks below are the
		 * payload's. */
		if (pkt->payload_len < UR_CRYPT_TRAILER_LEN)
			return UR_DEC_BAD_LENGTH;
		pkt->payload_len -= UR_CRYPT_TRAILER_LEN;
		pkt->trailer = pkt->payload + pkt->payload_len;
		body -= UR_CRYPT_TRAILER_LEN;
	}

	if (!(info->mask & UR_HDR_PAYLOAD) && body)
		return UR_DEC_BAD_LENGTH;
	if (info->fixed_payload && pkt->payload_len != info->fixed_payload)
		return UR_DEC_BAD_LENGTH;
	if ((info->mask & (UR_OPF_FIRST | UR_OPF_MIDDLE | UR_OPF_LAST)) ==
		    UR_OPF_FIRST ||
	    (info->mask & UR_OPF_MIDDLE)) {
		if (pkt->h.pad || !is_pmtu(pkt->payload_len))
			return UR_DEC_BAD_LENGTH;
	}

	if (info->mask & UR_HDR_RETH)
		ur_reth_decode(buf + info->off[UR_ETH_RETH], &pkt->reth);
	if (info->mask & UR_HDR_AETH)
		ur_aeth_decode(buf + info->off[UR_ETH_AETH], &pkt->aeth);
	if (info->mask & UR_HDR_ATMETH)
		ur_atmeth_decode(buf + info->off[UR_ETH_ATMETH], &pkt->atm);
	if (info->mask & UR_HDR_ATMACK)
		pkt->atmack = ur_get64(buf + info->off[UR_ETH_ATMACK]);
	if (info->mask & UR_HDR_IMMDT)
		pkt->imm = ur_get32(buf + info->off[UR_ETH_IMMDT]);
	if (info->mask & UR_HDR_IETH)
		pkt->ieth = ur_get32(buf + info->off[UR_ETH_IETH]);
	if (info->mask & UR_HDR_DETH)
		ur_deth_decode(buf + info->off[UR_ETH_DETH], &pkt->deth);
	if (info->mask & UR_HDR_FETH)
		ur_feth_decode(buf + info->off[UR_ETH_FETH], &pkt->feth);
	if (info->mask & UR_HDR_XRCETH)
		pkt->xrc_srqn = ur_xrceth_srqn(buf + info->off[UR_ETH_XRCETH]);
	return UR_DEC_OK;
}

/**
 * ur_pkt_encode() - see ur_wire.h. Allocation-free; @payload may overlap
 * @buf (it is moved, not copied).
 */
int ur_pkt_encode(uint8_t *buf, size_t cap, const struct ur_pkt *pkt,
		  const void *payload, uint32_t payload_len)
{
	const struct ur_opcode_info *info = ur_opcode_info(pkt->h.opcode);
	struct ur_bth h;
	uint32_t pad;
	size_t total;

	if (!info)
		return -EINVAL;
	if (!(info->mask & UR_HDR_PAYLOAD) && payload_len)
		return -EINVAL;
	/* A CNP's reserved bytes may be left to us: they are zeros. */
	if (info->fixed_payload && !(payload_len == 0 && !payload &&
				     (info->mask & UR_OPF_CNP)) &&
	    payload_len != info->fixed_payload)
		return -EINVAL;
	if (payload_len > UINT32_MAX - 64)
		return -EINVAL;
	pad = (4 - (payload_len & 3)) & 3;
	total = (size_t)info->hdr_len + payload_len + pad + UR_ICRC_LEN;
	if (info->fixed_payload && !payload_len)
		total += info->fixed_payload;
	if (total > cap)
		return -ENOSPC;

	/* Payload first: it may live where the headers go. */
	if (payload_len)
		memmove(buf + info->hdr_len, payload, payload_len);
	else if (info->fixed_payload)
		memset(buf + info->hdr_len, 0, info->fixed_payload);
	memset(buf + total - UR_ICRC_LEN - pad, 0, pad + UR_ICRC_LEN);

	h = pkt->h;
	h.pad = (uint8_t)pad;
	ur_bth_encode(buf, &h);
	if (info->mask & UR_HDR_RETH)
		ur_reth_encode(buf + info->off[UR_ETH_RETH], &pkt->reth);
	if (info->mask & UR_HDR_AETH)
		ur_aeth_encode(buf + info->off[UR_ETH_AETH], &pkt->aeth);
	if (info->mask & UR_HDR_ATMETH)
		ur_atmeth_encode(buf + info->off[UR_ETH_ATMETH], &pkt->atm);
	if (info->mask & UR_HDR_ATMACK)
		ur_put64(buf + info->off[UR_ETH_ATMACK], pkt->atmack);
	if (info->mask & UR_HDR_IMMDT)
		ur_put32(buf + info->off[UR_ETH_IMMDT], pkt->imm);
	if (info->mask & UR_HDR_IETH)
		ur_put32(buf + info->off[UR_ETH_IETH], pkt->ieth);
	if (info->mask & UR_HDR_DETH)
		ur_deth_encode(buf + info->off[UR_ETH_DETH], &pkt->deth);
	if (info->mask & UR_HDR_FETH)
		ur_feth_encode(buf + info->off[UR_ETH_FETH], &pkt->feth);
	if (info->mask & UR_HDR_XRCETH)
		ur_xrceth_put(buf + info->off[UR_ETH_XRCETH], pkt->xrc_srqn);
	return (int)total;
}

/* IBTA 13.4.5: MAD method names for the README-style class line. */
static const char *mad_method_name(uint8_t method)
{
	switch (method) {
	case 0x01: return "Get";
	case 0x02: return "Set";
	case 0x03: return "Send";
	case 0x05: return "Trap";
	case 0x06: return "Report";
	case 0x07: return "TrapRepress";
	case 0x81: return "GetResp";
	case 0x86: return "ReportResp";
	default: return "Method";
	}
}

const char *ur_pkt_class_str(const struct ur_pkt *pkt, char *buf, size_t len)
{
	const char *name = pkt->info ? pkt->info->name : "UNKNOWN";
	const char *us = strchr(name, '_');
	int n;

	/* "RC_SEND_ONLY" -> "RC SEND_ONLY", "XRC_SEND_ONLY" -> "XRC SEND_ONLY" */
	if (us && ((us - name) == 2 || !strncmp(name, "XRC_", 4)))
		n = snprintf(buf, len, "%.*s %s", (int)(us - name), name,
			     us + 1);
	else
		n = snprintf(buf, len, "%s", name);
	if (n < 0 || (size_t)n >= len)
		return buf;
	if (pkt->mask & UR_HDR_AETH && (pkt->h.opcode == UR_OP_RC_ACKNOWLEDGE ||
					pkt->h.opcode == UR_OP_XRC_ACKNOWLEDGE)) {
		char a[32];

		if (ur_aeth_kind(pkt->aeth.syndrome) == UR_AETH_RNR_NAK)
			snprintf(a, sizeof(a), "RNR_NAK");
		else
			ur_aeth_str(pkt->aeth.syndrome, a, sizeof(a));
		snprintf(buf + n, len - (size_t)n, " [%s]", a);
	} else if ((pkt->mask & UR_HDR_DETH) && pkt->h.dqpn == 1) {
		struct ur_mad_hdr m;
		struct ur_cm_msg cm;

		if (ur_mad_decode(pkt->payload, pkt->payload_len, &m))
			snprintf(buf + n, len - (size_t)n, " QP1 bad MAD");
		else if (!ur_cm_decode(pkt->payload, pkt->payload_len, &cm) &&
			 cm.name)
			snprintf(buf + n, len - (size_t)n,
				 " QP1 MAD class=0x%02x CM %s %s", m.mgmt_class,
				 cm.name, mad_method_name(m.method));
		else
			snprintf(buf + n, len - (size_t)n,
				 " QP1 MAD class=0x%02x attr=0x%04x %s",
				 m.mgmt_class, m.attr_id,
				 mad_method_name(m.method));
	}
	return buf;
}

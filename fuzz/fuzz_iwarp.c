// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the iWARP receive path of the wire layer (ur_iwarp.h).
 * Byte 0 picks the set-up: bit 0 CRC, bit 1 markers, bit 2 the stream
 * opens with an MPA Request/Reply, bits 3-7 how the stream is cut into
 * "TCP segments". The rest is the stream. MPA frames must re-encode to
 * their bytes; every FPDU the deframer yields goes through the DDP/RDMAP
 * and Terminate decoders, and re-framing it must deframe to the same ULPDU;
 * header fields must survive encode/decode.
 */
#include <stdlib.h>
#include <string.h>

#include "ur_iwarp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_seg(const struct ur_mpa_fpdu *fp, bool crc, bool markers)
{
	static uint8_t hdr[64], out[UR_MPA_FPDU_MAX + 1024], tb[600];
	static struct ur_mpa_rx rx;
	struct ur_ddp_seg s, s2;
	struct ur_mpa_fpdu f2;
	struct ur_mpa_tx tx;
	size_t used;
	int n, hl;

	/* Re-framed, the ULPDU comes back unchanged. */
	ur_mpa_tx_init(&tx, crc, markers);
	tx.pos = fp->stream_off & 508;
	n = ur_mpa_tx_frame(&tx, out, sizeof(out), fp->ulpdu, fp->ulpdu_len,
			    NULL, 0);
	if (n < 0)
		abort();
	ur_mpa_rx_init(&rx, crc, markers);
	rx.pos = fp->stream_off & 508;
	if (ur_mpa_rx_feed(&rx, out, (size_t)n, &used, &f2) != UR_IW_OK ||
	    used != (size_t)n || f2.ulpdu_len != fp->ulpdu_len ||
	    memcmp(f2.ulpdu, fp->ulpdu, fp->ulpdu_len))
		abort();

	if (ur_ddp_decode(fp->ulpdu, fp->ulpdu_len, &s) != UR_IW_OK)
		return;
	if (s.payload && (s.payload < fp->ulpdu ||
			  s.payload + s.payload_len > fp->ulpdu + fp->ulpdu_len))
		abort();
	hl = ur_ddp_encode_hdr(hdr, sizeof(hdr), &s);
	if (hl <= 0)
		abort();
	/* Our header and the original body decode to the same fields. */
	memcpy(out, hdr, (size_t)hl);
	memcpy(out + hl, s.body + (hl - (int)ur_ddp_hdr_len(s.tagged)),
	       s.body_len - (uint32_t)(hl - (int)ur_ddp_hdr_len(s.tagged)));
	if (ur_ddp_decode(out, ur_ddp_hdr_len(s.tagged) + s.body_len, &s2) !=
		    UR_IW_OK ||
	    s2.op != s.op || s2.last != s.last || s2.stag != s.stag ||
	    s2.to != s.to || s2.msn != s.msn || s2.mo != s.mo ||
	    s2.qn != s.qn || memcmp(&s2.rreq, &s.rreq, sizeof(s.rreq)))
		abort();
	if (s.opcode == UR_RDMAP_TERMINATE) {
		for (int lay = 0; lay < 2; lay++) {
			struct ur_iw_term t;

			if (ur_iw_term_decode(s.body, s.body_len,
					      (enum ur_term_layout)lay,
					      &t) != UR_IW_OK)
				continue;
			(void)ur_iw_term_ecode_name(t.layer, t.etype, t.ecode);
			n = ur_iw_term_encode(tb, sizeof(tb),
					      (enum ur_term_layout)lay, &t);
			if (s.body_len <= sizeof(tb) &&
			    (n != (int)s.body_len || memcmp(tb, s.body, s.body_len)))
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ur_mpa_rx rx;
	bool crc, markers;
	uint32_t cut;
	size_t at = 1;

	if (size < 1)
		return 0;
	crc = data[0] & 1;
	markers = data[0] & 2;
	cut = (data[0] >> 3) + 1u;
	if (data[0] & 4) {
		struct ur_mpa_rr rr, a;
		struct ur_mpa_conn c;
		uint8_t b[UR_MPA_RR_LEN + UR_MPA_PD_MAX];
		struct ur_mpa_policy pol = {.relaxed_ird = true, .ird = 1,
					    .ord = 1, .ird_max = 128,
					    .ord_max = 128};
		size_t used;

		if (ur_mpa_rr_decode(data + 1, size - 1, &rr, &used) != UR_IW_OK)
			return 0;
		if (ur_mpa_rr_encode(b, sizeof(b), &rr) != (int)used ||
		    memcmp(b, data + 1, used))
			abort();
		if (ur_mpa_answer(&rr, &pol, &a, &c) >= 0)
			(void)ur_mpa_check_reply(&rr, &a, &pol, &c);
		crc = crc || (rr.flags & UR_MPA_F_CRC);
		at += used;
	}
	ur_mpa_rx_init(&rx, crc, markers);
	while (at < size) {
		struct ur_mpa_fpdu fp;
		size_t n = size - at, used;
		enum ur_iw_err e;

		if (n > cut * 37)
			n = cut * 37;
		e = ur_mpa_rx_feed(&rx, data + at, n, &used, &fp);
		if (used > n)
			abort();
		at += used;
		if (e == UR_IW_OK)
			check_seg(&fp, crc, markers);
		else if (e != UR_IW_MORE)
			break;
	}
	return 0;
}

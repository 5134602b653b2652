// SPDX-License-Identifier: MIT
/*
 * Unit tests of the iWARP wire layer (ur_iwarp.h): CRC32c vectors, MPA
 * Request/Reply round trips and every malformed case, the negotiation
 * rules, FPDU framing with and without CRC and markers over random segment
 * boundaries, DDP/RDMAP headers, message cutting and the Terminate.
 */
#include <errno.h>

#include "ur_iwarp.h"
#include "ur_test.h"

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static void seed(void)
{
	rng = ur_test_seed * 2654435761u | 1;
}

/* ---- CRC32c --------------------------------------------------------------- */
static void check_vectors(void)
{
	uint8_t b[32];

	/* RFC 3720 B.4 */
	memset(b, 0, 32);
	ASSERT_EQ_U64(ur_crc32c(0, b, 32), 0x8a9136aa);
	memset(b, 0xff, 32);
	ASSERT_EQ_U64(ur_crc32c(0, b, 32), 0x62a8ab43);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	ASSERT_EQ_U64(ur_crc32c(0, b, 32), 0x46dd794e);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)(31 - i);
	ASSERT_EQ_U64(ur_crc32c(0, b, 32), 0x113fdb5c);
	/* The CRC-32C check value. */
	ASSERT_EQ_U64(ur_crc32c(0, "123456789", 9), 0xe3069283);
	ASSERT_EQ_U64(ur_crc32c(0, NULL, 0), 0);
}

static void test_crc32c(void)
{
	static uint8_t buf[4096 + 8];

	check_vectors();
	printf("[%s] ", ur_crc32c_impl());
	ur_crc32c_force_portable(true);
	ASSERT_STR_EQ(ur_crc32c_impl(), "slice8");
	check_vectors();
	ur_crc32c_force_portable(false);
	/* Both back ends agree at every length, offset and split. */
	seed();
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd(256);
	for (int t = 0; t < 300; t++) {
		size_t off = rnd(8), len = rnd(4096), cut = len ? rnd((uint32_t)len) : 0;
		uint32_t a, b, c;

		a = ur_crc32c(0, buf + off, len);
		c = ur_crc32c(ur_crc32c(0, buf + off, cut), buf + off + cut,
			      len - cut);
		ur_crc32c_force_portable(true);
		b = ur_crc32c(0, buf + off, len);
		ur_crc32c_force_portable(false);
		ASSERT_EQ_U64(a, b);
		ASSERT_EQ_U64(a, c);
	}
	/* Not the ICRC's CRC-32. */
	ASSERT_NE(ur_crc32c(0, "123456789", 9), ur_crc32(0, "123456789", 9));
}

/* ---- MPA Request/Reply ------------------------------------------------------ */
static void test_mpa_rr_roundtrip(void)
{
	static const char pd[] = "connection rejected by server";
	uint8_t b[UR_MPA_RR_LEN + UR_MPA_PD_MAX + 4];
	struct ur_mpa_rr rr = {.reply = true,
			       .flags = UR_MPA_F_REJECT | UR_MPA_F_ENHANCED,
			       .rev = 2, .v2 = true, .ird = 1, .ord = 1,
			       .pd = (const uint8_t *)pd, .pd_len = 29};
	struct ur_mpa_rr d;
	size_t used;
	int n = ur_mpa_rr_encode(b, sizeof(b), &rr);

	/* README: reject_mpa.pcap frame 6, PD_Length 33. */
	ASSERT_EQ(n, 20 + 33);
	ASSERT_MEM_EQ(b, "MPA ID Rep Frame", 16);
	ASSERT_EQ(b[16], 0x30);
	ASSERT_EQ(b[17], 2);
	ASSERT_EQ(ur_get16(b + 18), 33);
	ASSERT_EQ(ur_get32(b + 20), 0x00010001);
	ASSERT_EQ(ur_mpa_rr_decode(b, (size_t)n, &d, &used), UR_IW_OK);
	ASSERT_EQ(used, (size_t)n);
	ASSERT(d.reply && d.v2 && !d.p2p);
	ASSERT_EQ(d.ird, 1);
	ASSERT_EQ(d.ord, 1);
	ASSERT_EQ(d.pd_len, 29);
	ASSERT_MEM_EQ(d.pd, pd, 29);
	/* Every prefix asks for more; the frame plus more stops at its end. */
	for (int k = 0; k < n; k++)
		ASSERT_EQ(ur_mpa_rr_decode(b, (size_t)k, &d, &used), UR_IW_MORE);
	ASSERT_EQ(ur_mpa_rr_decode(b, sizeof(b), &d, &used), UR_IW_OK);
	ASSERT_EQ(used, (size_t)n);

	/* The P2P word of p2p_rping_verify: 0x8001c001. */
	rr = (struct ur_mpa_rr){.rev = 2, .v2 = true, .p2p = true,
				.rtr_write = true, .rtr_read = true, .ird = 1,
				.ord = 1};
	n = ur_mpa_rr_encode(b, sizeof(b), &rr);
	ASSERT_EQ(n, 24);
	ASSERT_EQ(b[16], UR_MPA_F_ENHANCED);
	ASSERT_EQ(ur_get32(b + 20), 0x8001c001);
	ASSERT_EQ(ur_mpa_rr_decode(b, (size_t)n, &d, &used), UR_IW_OK);
	ASSERT(!d.reply && d.p2p && d.rtr_write && d.rtr_read && !d.rtr_send);
	/* Rev 1: no word, PD opaque. */
	rr = (struct ur_mpa_rr){.rev = 1, .flags = UR_MPA_F_CRC,
				.pd = (const uint8_t *)"abc", .pd_len = 3};
	n = ur_mpa_rr_encode(b, sizeof(b), &rr);
	ASSERT_EQ(ur_mpa_rr_decode(b, (size_t)n, &d, &used), UR_IW_OK);
	ASSERT(!d.v2);
	ASSERT_EQ(d.pd_len, 3);
	/* Encoder refusals. */
	rr.pd_len = UR_MPA_PD_MAX + 1;
	ASSERT_EQ(ur_mpa_rr_encode(b, sizeof(b), &rr), -EINVAL);
	rr = (struct ur_mpa_rr){.rev = 2, .v2 = true, .ird = 0x4000};
	ASSERT_EQ(ur_mpa_rr_encode(b, sizeof(b), &rr), -EINVAL);
	rr.ird = 1;
	ASSERT_EQ(ur_mpa_rr_encode(b, 23, &rr), -ENOSPC);
}

static void test_mpa_rr_malformed(void)
{
	uint8_t b[UR_MPA_RR_LEN + 600];
	struct ur_mpa_rr rr = {.rev = 2, .v2 = true, .ird = 1, .ord = 1}, d;
	size_t used;
	int n = ur_mpa_rr_encode(b, sizeof(b), &rr);

	ASSERT_EQ(n, 24);
	/* Bad key, as soon as a byte shows it. */
	b[3] ^= 1;
	ASSERT_EQ(ur_mpa_rr_decode(b, 4, &d, &used), UR_IW_BAD_KEY);
	ASSERT_EQ(ur_mpa_rr_decode(b, (size_t)n, &d, &used), UR_IW_BAD_KEY);
	b[3] ^= 1;
	memcpy(b, "MPA ID Xyz Frame", 16);
	ASSERT_EQ(ur_mpa_rr_decode(b, (size_t)n, &d, &used), UR_IW_BAD_KEY);
	memcpy(b, "MPA ID Req Frame", 16);
	/* Rev 0 and 3. */
	b[17] = 0;
	ASSERT_EQ(ur_mpa_rr_decode(b, (size_t)n, &d, &used), UR_IW_BAD_REV);
	b[17] = 3;
	ASSERT_EQ(ur_mpa_rr_decode(b, (size_t)n, &d, &used), UR_IW_BAD_REV);
	b[17] = 2;
	/* PD_Length over 512, even before the bytes arrive. */
	ur_put16(b + 18, 513);
	ASSERT_EQ(ur_mpa_rr_decode(b, 20, &d, &used), UR_IW_PD_TOO_LONG);
	ur_put16(b + 18, 512);
	ASSERT_EQ(ur_mpa_rr_decode(b, 20, &d, &used), UR_IW_MORE);
	/* Enhanced with fewer than 4 PD bytes. */
	ur_put16(b + 18, 3);
	ASSERT_EQ(ur_mpa_rr_decode(b, 23, &d, &used), UR_IW_BAD_V2);
	/* Each error names its Terminate: LLP (2), MPA (0), code 0x04. */
	{
		uint8_t l, t, c;

		ur_iw_err_term(UR_IW_BAD_KEY, &l, &t, &c);
		ASSERT_EQ(l, 2);
		ASSERT_EQ(t, 0);
		ASSERT_EQ(c, 0x04);
		ur_iw_err_term(UR_IW_BAD_CRC, &l, &t, &c);
		ASSERT_EQ(c, 0x02);
		ur_iw_err_term(UR_IW_BAD_QN, &l, &t, &c);
		ASSERT_EQ(l, 1);
		ASSERT_EQ(t, 2);
		ASSERT_EQ(c, 0x01);
		ASSERT_STR_EQ(ur_iw_term_ecode_name(l, t, c), "invalid QN");
		ur_iw_err_term(UR_IW_BAD_OPCODE, &l, &t, &c);
		ASSERT_STR_EQ(ur_iw_term_ecode_name(l, t, c),
			      "unexpected opcode");
		ur_iw_err_term(UR_IW_BAD_IRD, &l, &t, &c);
		ASSERT_STR_EQ(ur_iw_term_ecode_name(l, t, c),
			      "insufficient IRD resources");
	}
}

/* ---- negotiation ------------------------------------------------------------ */
static const struct ur_mpa_policy siw_pol = {
	.relaxed_ird = true, .ird = 1, .ord = 1, .ird_max = 128, .ord_max = 128};

static void test_mpa_answer(void)
{
	struct ur_mpa_rr req = {.rev = 2, .v2 = true, .flags = UR_MPA_F_ENHANCED,
				.ird = 1, .ord = 1};
	struct ur_mpa_rr rep;
	struct ur_mpa_conn c, ci;
	struct ur_mpa_policy pol = siw_pol;

	/* Stock: the Reply mirrors. */
	ASSERT_EQ(ur_mpa_answer(&req, &pol, &rep, &c), 0);
	ASSERT(rep.reply && rep.v2 && !c.crc && rep.flags == UR_MPA_F_ENHANCED);
	ASSERT_EQ(rep.ird, 1);
	ASSERT_EQ(rep.ord, 1);
	ASSERT_EQ(ur_mpa_check_reply(&req, &rep, &pol, &ci), 0);
	/* CRC asked: used (RFC 5044: either side). */
	req.flags |= UR_MPA_F_CRC;
	ASSERT_EQ(ur_mpa_answer(&req, &pol, &rep, &c), 0);
	ASSERT(c.crc && (rep.flags & UR_MPA_F_CRC));
	/* ... unless the responder is strict about not using it. */
	pol.crc_strict = true;
	ASSERT_EQ(ur_mpa_answer(&req, &pol, &rep, &c), 1);
	ASSERT(rep.flags & UR_MPA_F_REJECT);
	ASSERT(!(rep.flags & UR_MPA_F_CRC));
	ASSERT_EQ(c.term, UR_IW_REFUSED);
	pol.crc_strict = false;
	/* A responder that requires CRC adds C; the initiator then uses it. */
	req.flags &= (uint8_t)~UR_MPA_F_CRC;
	pol.crc_required = true;
	ASSERT_EQ(ur_mpa_answer(&req, &pol, &rep, &c), 0);
	ASSERT(c.crc);
	ASSERT_EQ(ur_mpa_check_reply(&req, &rep, &siw_pol, &ci), 0);
	ASSERT(ci.crc);
	pol.crc_required = false;
	/* An initiator that requires CRC refuses a Reply without it. */
	pol.crc_required = true;
	ASSERT_EQ(ur_mpa_answer(&req, &siw_pol, &rep, &c), 0);
	ASSERT_EQ(ur_mpa_check_reply(&req, &rep, &pol, &ci), -ECONNREFUSED);
	pol.crc_required = false;
	/* Markers: refused with R (siw has none). */
	req.flags |= UR_MPA_F_MARKERS;
	ASSERT_EQ(ur_mpa_answer(&req, &pol, &rep, &c), 1);
	ASSERT(!(rep.flags & UR_MPA_F_MARKERS) && (rep.flags & UR_MPA_F_REJECT));
	ASSERT_EQ(ur_mpa_check_reply(&req, &rep, &pol, &ci), -ECONNREFUSED);
	/* A responder that supports them agrees. */
	pol.markers = true;
	ASSERT_EQ(ur_mpa_answer(&req, &pol, &rep, &c), 0);
	ASSERT(c.markers_rx && c.markers_tx && (rep.flags & UR_MPA_F_MARKERS));
	/* A Reply with M makes a marker-less initiator give up (README). */
	ASSERT_EQ(ur_mpa_check_reply(&req, &rep, &siw_pol, &ci), -ECONNREFUSED);
	pol.markers = false;
	req.flags &= (uint8_t)~UR_MPA_F_MARKERS;

	/* Relaxed IRD/ORD: our ORD at most the peer's IRD, our IRD at least
	 * its ORD, each within 128 (README 2). */
	req.ird = 4;
	req.ord = 200;
	pol.ird = 1;
	pol.ord = 16;
	ASSERT_EQ(ur_mpa_answer(&req, &pol, &rep, &c), 0);
	ASSERT_EQ(c.ord, 4);
	ASSERT_EQ(c.ird, 128);
	ASSERT_EQ(rep.ird, 128);
	ASSERT_EQ(rep.ord, 4);
	/* Not relaxed: refused, Terminate "insufficient IRD". */
	pol.relaxed_ird = false;
	ASSERT_EQ(ur_mpa_answer(&req, &pol, &rep, &c), 1);
	ASSERT_EQ(c.term, UR_IW_BAD_IRD);
	pol.relaxed_ird = true;
	/* Initiator: a Reply ORD beyond the device's IRD fails even relaxed. */
	req.ird = 1;
	req.ord = 1;
	rep = (struct ur_mpa_rr){.reply = true, .rev = 2, .v2 = true,
				 .flags = UR_MPA_F_ENHANCED, .ird = 1,
				 .ord = 129};
	ASSERT_EQ(ur_mpa_check_reply(&req, &rep, &siw_pol, &ci), -ENOMEM);
	ASSERT_EQ(ci.term, UR_IW_BAD_IRD);
	/* An enhanced Request answered without the word. */
	rep.v2 = false;
	rep.flags = 0;
	ASSERT_EQ(ur_mpa_check_reply(&req, &rep, &siw_pol, &ci), -EPROTO);

	/* RTR: WRITE preferred, then READ, WRITE when none named. */
	req.p2p = true;
	req.rtr_write = req.rtr_read = true;
	ASSERT_EQ(ur_mpa_answer(&req, &pol, &rep, &c), 0);
	ASSERT(rep.p2p && rep.rtr_write && !rep.rtr_read);
	ASSERT_EQ(c.rtr, UR_RTR_WRITE);
	ASSERT_EQ(ur_mpa_check_reply(&req, &rep, &pol, &ci), 0);
	ASSERT_EQ(ci.rtr, UR_RTR_WRITE);
	req.rtr_write = false;
	ASSERT_EQ(ur_mpa_answer(&req, &pol, &rep, &c), 0);
	ASSERT(rep.rtr_read && !rep.rtr_write);
	ASSERT_EQ(c.rtr, UR_RTR_READ);
	req.rtr_read = false;
	ASSERT_EQ(ur_mpa_answer(&req, &pol, &rep, &c), 0);
	ASSERT_EQ(c.rtr, UR_RTR_WRITE);
	/* Initiator offered READ only, the Reply picked WRITE: no match. */
	req.rtr_read = true;
	rep.rtr_read = false;
	rep.rtr_write = true;
	ASSERT_EQ(ur_mpa_check_reply(&req, &rep, &pol, &ci), -ENOENT);
	ASSERT_EQ(ci.term, UR_IW_NO_RTR);
	/* No Reply at all: a Reply as Request, Rev 3. */
	rep.reply = true;
	ASSERT_EQ(ur_mpa_answer(&rep, &pol, &rep, &c), -EPROTO);
	req.rev = 3;
	ASSERT_EQ(ur_mpa_answer(&req, &pol, &rep, &c), -EPROTO);
	ASSERT_EQ(c.term, UR_IW_BAD_REV);
}

/* ---- FPDU framing ------------------------------------------------------------ */
#define STREAM 200000

/* Markers sit at every 512th stream byte, reserved 0, FPDUPTR back to
 * the length field of the FPDU they are in (0 before one): checked here
 * from the FPDU starts the framer reported, independently of the rx. */
static void check_markers(const uint8_t *s, size_t len, const size_t *starts,
			  int nstarts)
{
	int f = 0;

	for (size_t m = 0; m < len; m += UR_MPA_MARKER_INTERVAL) {
		while (f + 1 < nstarts && starts[f + 1] <= m)
			f++;
		ASSERT_EQ(ur_get16(s + m), 0);
		if (starts[f] == m) /* the marker opens an FPDU */
			ASSERT_EQ(ur_get16(s + m + 2), 0);
		else if (starts[f] < m) {
			size_t lenpos = starts[f];

			/* a marker opening the FPDU moves its length by 4 */
			if (lenpos % UR_MPA_MARKER_INTERVAL == 0)
				lenpos += 4;
			ASSERT_EQ(ur_get16(s + m + 2), m - lenpos);
		}
	}
}

static void roundtrip(bool crc, bool markers, int msgs)
{
	static uint8_t stream[STREAM], ulp[70000];
	static size_t starts[4096], lens[4096];
	static uint32_t ul[4096];
	static struct ur_mpa_rx rx;
	struct ur_mpa_tx tx;
	size_t at = 0;
	int n = 0, got = 0;

	ur_mpa_tx_init(&tx, crc, markers);
	for (int i = 0; i < msgs && n < 4096; i++) {
		uint32_t len = rnd(8) ? rnd(3000) : rnd(65536);
		uint32_t h = len < 20 ? len : 1 + rnd(20);
		size_t want = ur_mpa_tx_len(&tx, len);
		int w;

		if (at + want > STREAM)
			break;
		if (markers && want > 0xffff) {
			/* its last marker could not point back to it: refused,
			 * and a ULPDU that fits is sent in its place */
			ASSERT_EQ(ur_mpa_tx_frame(&tx, stream + at, STREAM - at,
						  ulp, h, ulp + h, len - h),
				  -EMSGSIZE);
			len = 60000;
			want = ur_mpa_tx_len(&tx, len);
			if (at + want > STREAM)
				break;
		}
		for (uint32_t k = 0; k < len; k++)
			ulp[k] = (uint8_t)(k * 7 + (uint32_t)i);
		starts[n] = at;
		w = ur_mpa_tx_frame(&tx, stream + at, STREAM - at, ulp, h, ulp + h,
				    len - h);
		ASSERT_EQ(w, (int)want);
		ASSERT_EQ(w % 4, 0);
		ASSERT_EQ(tx.pos, at + (size_t)w);
		lens[n] = (size_t)w;
		ul[n++] = len;
		at += (size_t)w;
	}
	if (markers)
		check_markers(stream, at, starts, n);
	ur_mpa_rx_init(&rx, crc, markers);
	for (size_t p = 0; p < at;) {
		size_t l = 1 + rnd(rnd(3) ? 9 : 2000), used;
		struct ur_mpa_fpdu fp;
		enum ur_iw_err e;

		if (l > at - p)
			l = at - p;
		e = ur_mpa_rx_feed(&rx, stream + p, l, &used, &fp);
		p += used;
		if (e == UR_IW_MORE) {
			ASSERT_EQ(used, l);
			continue;
		}
		ASSERT_EQ(e, UR_IW_OK);
		ASSERT_LT(got, n);
		ASSERT_EQ(fp.ulpdu_len, ul[got]);
		ASSERT_EQ(fp.crc_checked, crc);
		for (uint32_t k = 0; k < fp.ulpdu_len; k++)
			if (fp.ulpdu[k] != (uint8_t)(k * 7 + (uint32_t)got))
				UR_FAIL("FPDU %d byte %u", got, k);
		if (crc)
			ASSERT_NE(fp.crc, 0);
		else
			ASSERT_EQ(fp.crc, 0);
		got++;
	}
	ASSERT_EQ(got, n);
	ASSERT_EQ(rx.fpdus, (uint64_t)n);
	ASSERT_EQ(rx.have, 0);
	if (markers)
		ASSERT_EQ(rx.markers_seen, (at + 511) / 512);
	(void)lens;
}

static void test_fpdu_roundtrip(void)
{
	seed();
	for (int c = 0; c < 4; c++)
		for (int r = 0; r < 3; r++)
			roundtrip(c & 1, c & 2, 400);
}

static void test_fpdu_markers_edges(void)
{
	/* FPDUs of every size 0..600 after every 4-aligned stream offset in
	 * a 512 window: markers before the length, in the ULPDU, before the
	 * pad, before the CRC, right after an FPDU. */
	static uint8_t s[4096], ulp[700];
	static struct ur_mpa_rx rx;

	for (uint32_t k = 0; k < sizeof(ulp); k++)
		ulp[k] = (uint8_t)k;
	for (uint32_t off = 0; off < 512; off += 4) {
		for (uint32_t len = 0; len < 600; len += 1 + len / 16) {
			struct ur_mpa_tx tx;
			struct ur_mpa_fpdu fp;
			size_t used;
			int w;

			ur_mpa_tx_init(&tx, true, true);
			tx.pos = off;
			w = ur_mpa_tx_frame(&tx, s, sizeof(s), ulp, 0, ulp, len);
			ASSERT_GT(w, 0);
			ur_mpa_rx_init(&rx, true, true);
			rx.pos = off;
			ASSERT_EQ(ur_mpa_rx_feed(&rx, s, (size_t)w, &used, &fp),
				  UR_IW_OK);
			ASSERT_EQ(used, (size_t)w);
			ASSERT_EQ(fp.ulpdu_len, len);
			ASSERT_EQ(fp.markers, (uint32_t)(w - (int)(2 + len +
						ur_mpa_pad(len) + 4)) / 4);
			ASSERT_MEM_EQ(fp.ulpdu, ulp, len);
		}
	}
}

static void frame_one(uint8_t *s, size_t cap, size_t *len, bool crc,
		      bool markers, uint32_t ulen)
{
	static uint8_t u[2048];
	struct ur_mpa_tx tx;
	int w;

	for (uint32_t i = 0; i < ulen; i++)
		u[i] = (uint8_t)(i + 1);
	ur_mpa_tx_init(&tx, crc, markers);
	w = ur_mpa_tx_frame(&tx, s, cap, u, 0, u, ulen);
	ASSERT_GT(w, 0);
	*len = (size_t)w;
}

static enum ur_iw_err feed_all(struct ur_mpa_rx *rx, const uint8_t *s, size_t n)
{
	struct ur_mpa_fpdu fp;
	enum ur_iw_err e = UR_IW_MORE;

	for (size_t at = 0, used; at < n; at += used) {
		e = ur_mpa_rx_feed(rx, s + at, n - at, &used, &fp);
		if (e != UR_IW_OK && e != UR_IW_MORE)
			return e;
		if (!used)
			break;
	}
	return e;
}

static void test_fpdu_malformed(void)
{
	static uint8_t s[4096];
	static struct ur_mpa_rx rx;
	size_t n;

	/* Bad CRC: each flipped bit of the covered part, and of the CRC. */
	frame_one(s, sizeof(s), &n, true, false, 37);
	for (size_t bit = 0; bit < n * 8; bit += 5) {
		if (bit / 8 < 2)
			continue; /* the length: BAD_LEN or MORE, below */
		s[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		ur_mpa_rx_init(&rx, true, false);
		ASSERT_EQ(feed_all(&rx, s, n), UR_IW_BAD_CRC);
		ASSERT_EQ(rx.errors[UR_IW_BAD_CRC], 1);
		/* Sticky: the stream is lost, the error stays. */
		ASSERT_EQ(feed_all(&rx, s, n), UR_IW_BAD_CRC);
		ASSERT_EQ(rx.errors[UR_IW_BAD_CRC], 1);
		s[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	/* Without CRC negotiated the same bytes pass. */
	s[10] ^= 1;
	ur_mpa_rx_init(&rx, false, false);
	ASSERT_EQ(feed_all(&rx, s, n), UR_IW_OK);
	s[10] ^= 1;
	/* Bad length: over the receive limit. */
	ur_mpa_rx_init(&rx, true, false);
	rx.ulpdu_max = 36;
	ASSERT_EQ(feed_all(&rx, s, n), UR_IW_BAD_LEN);
	ASSERT_EQ(rx.errors[UR_IW_BAD_LEN], 1);
	/* Short: everything but the last byte is just "more". */
	ur_mpa_rx_init(&rx, true, false);
	ASSERT_EQ(feed_all(&rx, s, n - 1), UR_IW_MORE);
	ASSERT_EQ(rx.fpdus, 0);
	ASSERT_EQ(feed_all(&rx, s + n - 1, 1), UR_IW_OK);
	/* Bad marker: FPDUPTR off by 4, reserved bits set. */
	frame_one(s, sizeof(s), &n, false, true, 1200);
	ASSERT_EQ(ur_get16(s + 2), 0);
	ASSERT_EQ(ur_get16(s + 512 + 2), 512 - 4);
	s[512 + 3] ^= 4;
	ur_mpa_rx_init(&rx, false, true);
	ASSERT_EQ(feed_all(&rx, s, n), UR_IW_BAD_MARKER);
	ASSERT_EQ(rx.errors[UR_IW_BAD_MARKER], 1);
	s[512 + 3] ^= 4;
	s[1024] = 0x80;
	ur_mpa_rx_init(&rx, false, true);
	ASSERT_EQ(feed_all(&rx, s, n), UR_IW_BAD_MARKER);
	s[1024] = 0;
	ur_mpa_rx_init(&rx, false, true);
	ASSERT_EQ(feed_all(&rx, s, n), UR_IW_OK);
	/* A marker-less stream read as marked breaks at the first marker. */
	frame_one(s, sizeof(s), &n, false, false, 40);
	ur_mpa_rx_init(&rx, false, true);
	ASSERT_EQ(feed_all(&rx, s, n), UR_IW_BAD_MARKER);
	/* Encoder limits. */
	{
		struct ur_mpa_tx tx;

		ur_mpa_tx_init(&tx, false, false);
		ASSERT_EQ(ur_mpa_tx_frame(&tx, s, sizeof(s), s, 0, NULL, 65536),
			  -EINVAL);
		ASSERT_EQ(ur_mpa_tx_frame(&tx, s, 10, s, 8, NULL, 0), -ENOSPC);
	}
}

static void test_mulpdu(void)
{
	/* README 5: MSS 1448 -> FPDU 1448, ULPDU 1442. */
	ASSERT_EQ(ur_mpa_mulpdu(1448, false), 1442);
	ASSERT_EQ(ur_mpa_mulpdu(1460, false), 1454);
	ASSERT_EQ(ur_mpa_mulpdu(1449, false), 1442);
	ASSERT_EQ(ur_mpa_mulpdu(1448, true), 1448 - 6 - 12);
	ASSERT_EQ(ur_mpa_mulpdu(6, false), 0);
	/* Every FPDU at the MULPDU fits the EMSS, with markers too. */
	for (uint32_t emss = 64; emss < 9000; emss += 13)
		for (int m = 0; m < 2; m++) {
			uint32_t u = ur_mpa_mulpdu(emss, m);
			struct ur_mpa_tx tx;

			ur_mpa_tx_init(&tx, true, m);
			for (tx.pos = 0; tx.pos < 512; tx.pos += 4)
				ASSERT_LE(ur_mpa_tx_len(&tx, u), emss);
		}
}

/* ---- DDP / RDMAP -------------------------------------------------------------- */
static void test_ddp_roundtrip(void)
{
	uint8_t b[256];

	seed();
	for (uint8_t op = 0; op < UR_RDMAP_NUM_OPS; op++) {
		const struct ur_rdmap_op_info *oi = ur_rdmap_op(op);
		struct ur_ddp_seg s = {0}, d;
		int hl;

		ASSERT(oi);
		ASSERT_EQ(oi->opcode, op);
		s.opcode = op;
		s.last = true;
		s.stag = 0xb33c8e00u;
		s.to = 0x5594bd91f540ull;
		s.inv_stag = oi->inval ? 0x12345600u : 0;
		s.msn = 1 + rnd(100);
		s.rreq = (struct ur_rdmap_rreq){0xde60ee00u, 0x5594ee754540ull,
						64, 0xe9ed5300u,
						0x5594bd922b70ull};
		hl = ur_ddp_encode_hdr(b, sizeof(b), &s);
		ASSERT_EQ(hl, (int)ur_ddp_hdr_len(oi->tagged) + oi->body_len);
		/* DDP control 0xc1/0x41, RDMAP 0x40 | op (README 6). */
		ASSERT_EQ(b[0], oi->tagged ? 0xc1 : 0x41);
		ASSERT_EQ(b[1], 0x40 | op);
		memset(b + hl, 0xab, 8);
		if (op == UR_RDMAP_TERMINATE)
			memset(b + hl, 0, 4);
		ASSERT_EQ(ur_ddp_decode(b, (size_t)hl + (oi->payload || op == UR_RDMAP_TERMINATE ? 8 : 0),
					&d), UR_IW_OK);
		ASSERT_EQ(d.op, oi);
		ASSERT_EQ(d.tagged, oi->tagged);
		ASSERT(d.last);
		if (oi->tagged) {
			ASSERT_EQ(d.stag, s.stag);
			ASSERT_EQ_U64(d.to, s.to);
		} else {
			ASSERT_EQ(d.qn, (uint32_t)oi->qn);
			ASSERT_EQ(d.msn, s.msn);
			ASSERT_EQ(d.inv_stag, s.inv_stag);
		}
		if (oi->payload)
			ASSERT_EQ(d.payload_len, 8);
		if (op == UR_RDMAP_READ_REQ)
			ASSERT_MEM_EQ(&d.rreq, &s.rreq, sizeof(s.rreq));
	}
	ASSERT(!ur_rdmap_op(8));
	ASSERT(!ur_rdmap_op(15));
	ASSERT_STR_EQ(ur_rdmap_op(UR_RDMAP_SEND_SE_INV)->name, "SEND_SE_INV");
	ASSERT(ur_rdmap_op(UR_RDMAP_SEND_SE_INV)->se &&
	       ur_rdmap_op(UR_RDMAP_SEND_SE_INV)->inval);
}

static void test_ddp_malformed(void)
{
	uint8_t b[64];
	struct ur_ddp_seg s = {.opcode = UR_RDMAP_SEND, .last = true, .msn = 1},
			  d;
	int hl = ur_ddp_encode_hdr(b, sizeof(b), &s);

	ASSERT_EQ(hl, 18);
	ASSERT_EQ(ur_ddp_decode(b, 1, &d), UR_IW_SHORT_HDR);
	ASSERT_EQ(ur_ddp_decode(b, 17, &d), UR_IW_SHORT_HDR);
	ASSERT_EQ(ur_ddp_decode(b, 18, &d), UR_IW_OK);
	b[0] = 0x42; /* DDP version 2 */
	ASSERT_EQ(ur_ddp_decode(b, 18, &d), UR_IW_BAD_DDP_VER_U);
	b[0] = 0x41;
	b[1] = 0x83; /* RDMAP version 2 */
	ASSERT_EQ(ur_ddp_decode(b, 18, &d), UR_IW_BAD_RDMAP_VER);
	b[1] = 0x48; /* opcode 8 */
	ASSERT_EQ(ur_ddp_decode(b, 18, &d), UR_IW_BAD_OPCODE);
	b[1] = 0x40; /* WRITE in an untagged segment */
	ASSERT_EQ(ur_ddp_decode(b, 18, &d), UR_IW_BAD_OPCODE);
	b[1] = 0x43;
	ur_put32(b + 6, 1); /* SEND on the READ queue */
	ASSERT_EQ(ur_ddp_decode(b, 18, &d), UR_IW_BAD_QN);
	ur_put32(b + 6, 0);
	/* Tagged: version error of the tagged model; SEND tagged. */
	s = (struct ur_ddp_seg){.opcode = UR_RDMAP_WRITE, .last = true};
	hl = ur_ddp_encode_hdr(b, sizeof(b), &s);
	ASSERT_EQ(hl, 14);
	ASSERT_EQ(ur_ddp_decode(b, 13, &d), UR_IW_SHORT_HDR);
	b[0] = 0xc0;
	ASSERT_EQ(ur_ddp_decode(b, 14, &d), UR_IW_BAD_DDP_VER_T);
	b[0] = 0xc1;
	b[1] = 0x43;
	ASSERT_EQ(ur_ddp_decode(b, 14, &d), UR_IW_BAD_OPCODE);
	/* READ Request: body exactly 28, last. */
	s = (struct ur_ddp_seg){.opcode = UR_RDMAP_READ_REQ, .last = true};
	hl = ur_ddp_encode_hdr(b, sizeof(b), &s);
	ASSERT_EQ(hl, 46);
	ASSERT_EQ(ur_ddp_decode(b, 46, &d), UR_IW_OK);
	ASSERT_EQ(ur_ddp_decode(b, 45, &d), UR_IW_BAD_BODY);
	ASSERT_EQ(ur_ddp_decode(b, 47, &d), UR_IW_BAD_BODY);
	b[0] = 0x01;
	ASSERT_EQ(ur_ddp_decode(b, 46, &d), UR_IW_BAD_BODY);
	/* Terminate: at least its control word. */
	s = (struct ur_ddp_seg){.opcode = UR_RDMAP_TERMINATE, .last = true};
	hl = ur_ddp_encode_hdr(b, sizeof(b), &s);
	ASSERT_EQ(ur_ddp_decode(b, (size_t)hl + 3, &d), UR_IW_BAD_BODY);
	ASSERT_EQ(ur_ddp_encode_hdr(b, 10, &s), -ENOSPC);
	s.opcode = 9;
	ASSERT_EQ(ur_ddp_encode_hdr(b, sizeof(b), &s), -EINVAL);
}

static void test_ddp_cut(void)
{
	struct ur_ddp_seg msg = {.opcode = UR_RDMAP_WRITE, .stag = 0xa0b66500,
				 .to = 0x56468f4d4000ull};
	struct ur_ddp_seg seg;
	uint32_t off, len, mul = ur_mpa_mulpdu(1448, false);
	static const uint32_t tagged[] = {1428, 1428, 1240},
			      untagged[] = {1424, 1424, 1248};

	/* README 5, write_bw: 1428 + 1428 + 1240, TO +0x594, +0xb28. */
	for (uint32_t i = 0; i < 3; i++) {
		ASSERT_EQ(ur_ddp_cut(&msg, 4096, mul, i, &seg, &off, &len), 3);
		ASSERT_EQ(len, tagged[i]);
		ASSERT_EQ_U64(seg.to, msg.to + 0x594 * i);
		ASSERT_EQ(seg.last, i == 2);
	}
	msg = (struct ur_ddp_seg){.opcode = UR_RDMAP_SEND, .msn = 3};
	for (uint32_t i = 0; i < 3; i++) {
		ASSERT_EQ(ur_ddp_cut(&msg, 4096, mul, i, &seg, &off, &len), 3);
		ASSERT_EQ(len, untagged[i]);
		ASSERT_EQ(seg.mo, 1424 * i);
		ASSERT_EQ(seg.msn, 3);
	}
	/* Zero length (the RTR WRITE): one last segment. */
	msg = (struct ur_ddp_seg){.opcode = UR_RDMAP_WRITE, .stag = UR_RTR_STAG};
	ASSERT_EQ(ur_ddp_cut(&msg, 0, mul, 0, &seg, &off, &len), 1);
	ASSERT(seg.last);
	ASSERT_EQ(len, 0);
	ASSERT_EQ(ur_ddp_cut(&msg, 100, 14, 0, &seg, &off, &len), 0);
}

static void test_terminate(void)
{
	/* The two Terminates of the captures (README 9). */
	static const uint8_t w[] = {0x11, 0x00, 0x03, 0x00, 0x00, 0x40, 0xc1,
				    0x40, 0x00, 0xba, 0xd0, 0xaa, 0, 0, 0, 0,
				    0, 0, 0x10, 0x00};
	uint8_t r[70] = {0x10, 0x00, 0x07, 0x00, 0x00, 0x00, 0x41, 0x41};
	uint8_t out[96];
	struct ur_iw_term t;

	ASSERT_EQ(ur_iw_term_decode(w, sizeof(w), UR_TERM_SIW, &t), UR_IW_OK);
	ASSERT_EQ(t.layer, 1);
	ASSERT_EQ(t.etype, 1);
	ASSERT_EQ(t.ecode, 0);
	ASSERT(t.m && t.d && !t.r);
	ASSERT_EQ(t.seg_len, 64);
	ASSERT_EQ(t.ddp_hdr_len, 14);
	ASSERT_EQ(t.extra_len, 0);
	ASSERT_STR_EQ(ur_iw_term_etype_name(t.layer, t.etype), "tagged buffer");
	ASSERT_EQ(ur_iw_term_encode(out, sizeof(out), UR_TERM_SIW, &t),
		  (int)sizeof(w));
	ASSERT_MEM_EQ(out, w, sizeof(w));
	/* Read as RFC 5040 lays it out: no header copies, reserved 0x300. */
	ASSERT_EQ(ur_iw_term_decode(w, sizeof(w), UR_TERM_RFC, &t), UR_IW_OK);
	ASSERT(!t.m && !t.d && !t.r);
	ASSERT_EQ(t.rsvd, 0x300);
	ASSERT_EQ(t.extra_len, 16);
	ASSERT_EQ(ur_iw_term_encode(out, sizeof(out), UR_TERM_RFC, &t),
		  (int)sizeof(w));
	ASSERT_MEM_EQ(out, w, sizeof(w));

	ASSERT_EQ(ur_iw_term_decode(r, 4 + 2 + 46, UR_TERM_SIW, &t), UR_IW_OK);
	ASSERT_EQ(t.layer, UR_TERM_LAYER_RDMAP);
	ASSERT_STR_EQ(ur_iw_term_etype_name(t.layer, t.etype),
		      "remote protection");
	ASSERT(t.m && t.d && t.r);
	ASSERT_EQ(t.ddp_hdr_len, 18);
	ASSERT_EQ(t.rdma_hdr_len, 28);
	ASSERT_EQ(ur_iw_term_decode(r, 4 + 2 + 45, UR_TERM_SIW, &t),
		  UR_IW_BAD_BODY);
	ASSERT_EQ(ur_iw_term_decode(r, 3, UR_TERM_SIW, &t), UR_IW_BAD_BODY);
	/* The RFC layout of the same fields: 0x10 = layer DDP (RFC) vs layer
	 * RDMAP / remote protection (siw). */
	t = (struct ur_iw_term){.layer = 0, .etype = 1, .ecode = 0, .m = true,
				.d = true, .r = true, .has_seg_len = true,
				.ddp_hdr = r + 6, .ddp_hdr_len = 18,
				.rdma_hdr = r + 24, .rdma_hdr_len = 28};
	ASSERT_EQ(ur_iw_term_encode(out, sizeof(out), UR_TERM_RFC, &t), 52);
	ASSERT_EQ(out[0], 0x01);
	ASSERT_EQ(out[2], 0xe0);
	ASSERT_EQ(ur_iw_term_encode(out, sizeof(out), UR_TERM_SIW, &t), 52);
	ASSERT_EQ(out[0], 0x10);
	ASSERT_EQ(out[2], 0x07);
	ASSERT_EQ(ur_iw_term_encode(out, 51, UR_TERM_SIW, &t), -ENOSPC);
	t.layer = 16;
	ASSERT_EQ(ur_iw_term_encode(out, sizeof(out), UR_TERM_SIW, &t), -EINVAL);
	ASSERT_STR_EQ(ur_iw_term_ecode_name(1, 2, 0x05),
		      "DDP message too long for available buffer");
	ASSERT_STR_EQ(ur_iw_term_ecode_name(0, 2, 0x42), "reserved");
	ASSERT_STR_EQ(ur_iw_term_layer_name(2), "LLP");
}

static void test_strerror(void)
{
	for (int e = 0; e < UR_IW_NUM; e++)
		ASSERT(strlen(ur_iw_strerror((enum ur_iw_err)e)) > 1);
	ASSERT_STR_EQ(ur_iw_strerror(UR_IW_NUM), "?");
}

static const struct ur_test_case tests[] = {
	{"crc32c", test_crc32c},
	{"mpa_rr_roundtrip", test_mpa_rr_roundtrip},
	{"mpa_rr_malformed", test_mpa_rr_malformed},
	{"mpa_answer", test_mpa_answer},
	{"fpdu_roundtrip", test_fpdu_roundtrip},
	{"fpdu_markers_edges", test_fpdu_markers_edges},
	{"fpdu_malformed", test_fpdu_malformed},
	{"mulpdu", test_mulpdu},
	{"ddp_roundtrip", test_ddp_roundtrip},
	{"ddp_malformed", test_ddp_malformed},
	{"ddp_cut", test_ddp_cut},
	{"terminate", test_terminate},
	{"strerror", test_strerror},
	{NULL, NULL},
};

UR_TEST_MAIN(tests)

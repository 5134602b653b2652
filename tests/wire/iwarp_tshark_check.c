// SPDX-License-Identifier: MIT
/*
 * Cross-check of the iWARP encoder with Wireshark's iwarp_mpa and
 * iwarp_ddp_rdmap dissectors: a synthetic TCP connection (handshake, an
 * MPA Request asking for CRC, the Reply our negotiation gives, then FPDUs
 * of every RDMAP opcode built by ur_ddp_encode_hdr/ur_ddp_cut/
 * ur_mpa_tx_frame, one whose CRC travels in the next TCP segment and two
 * sharing one)
 * with valid IPv4 and TCP checksums. tshark must find every FPDU with the
 * fields we wrote, call every CRC good, and mark nothing malformed.
 * Exits 77 (ctest "skipped") only when tshark is not installed.
 */
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ur_iwarp.h"
#include "tcp_pcap.h"
#include "ur_test.h"

#define MAX_FPDU 32

static char path[256];
static struct ur_tcp_pcap tp;

struct want {
	uint16_t ulen;
	uint8_t op;
	bool tagged, last;
	uint32_t stag, qn, msn, mo;
	uint64_t to;
};
static struct want wants[MAX_FPDU];
static int nwant;

static void segment(int d, uint8_t flags, const uint8_t *data, size_t len)
{
	ur_tcp_pcap_segment(&tp, d, flags, data, len);
}

/* Frame one segment with @tx and remember what tshark should show. */
static size_t fpdu(struct ur_mpa_tx *tx, uint8_t *out, const struct ur_ddp_seg *s,
		   const uint8_t *pl, size_t pl_len)
{
	uint8_t hdr[64];
	int hl = ur_ddp_encode_hdr(hdr, sizeof(hdr), s);
	int n;
	struct want *w = &wants[nwant++];

	ASSERT_GT(hl, 0);
	ASSERT_LE(nwant, MAX_FPDU);
	n = ur_mpa_tx_frame(tx, out, 2048, hdr, (size_t)hl, pl, pl_len);
	ASSERT_GT(n, 0);
	*w = (struct want){(uint16_t)(hl + (int)pl_len), s->opcode,
			   ur_rdmap_op(s->opcode)->tagged, s->last, s->stag,
			   s->qn, s->msn, s->mo, s->to};
	w->qn = ur_rdmap_op(s->opcode)->tagged ? 0 : (uint32_t)ur_rdmap_op(s->opcode)->qn;
	return (size_t)n;
}

static void build(void)
{
	static uint8_t msg[4096], b[4096];
	pcap_t *dead = pcap_open_dead(DLT_EN10MB, 65535);
	struct ur_mpa_rr req = {.rev = 2, .v2 = true, .flags = UR_MPA_F_CRC,
				.ird = 1, .ord = 1}, rep;
	struct ur_mpa_policy pol = {.relaxed_ird = true, .ird = 1, .ord = 1,
				    .ird_max = 128, .ord_max = 128};
	struct ur_mpa_conn c;
	struct ur_mpa_tx tx[2];
	struct ur_ddp_seg m, s;
	uint32_t n, off, len, mul = ur_mpa_mulpdu(1448, false);
	size_t k, k2;
	int r;

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 13);
	snprintf(path, sizeof(path), "/tmp/uroce_iwarp_tshark_%d.pcap",
		 (int)getpid());
	ur_tcp_pcap_init(&tp, pcap_dump_open(dead, path));
	ASSERT(tp.dump);
	segment(0, 0x02, NULL, 0);
	segment(1, 0x12, NULL, 0);
	segment(0, 0x10, NULL, 0);
	r = ur_mpa_rr_encode(b, sizeof(b), &req);
	ASSERT_GT(r, 0);
	segment(0, 0x18, b, (size_t)r);
	ASSERT_EQ(ur_mpa_answer(&req, &pol, &rep, &c), 0);
	ASSERT(c.crc);
	r = ur_mpa_rr_encode(b, sizeof(b), &rep);
	segment(1, 0x18, b, (size_t)r);
	ur_mpa_tx_init(&tx[0], c.crc, false);
	ur_mpa_tx_init(&tx[1], c.crc, false);

	/* c>s: a 4096-byte WRITE cut at the MULPDU of MSS 1448. */
	m = (struct ur_ddp_seg){.opcode = UR_RDMAP_WRITE, .stag = 0xa0b66500,
				.to = 0x56468f4d4000ull};
	n = ur_ddp_cut(&m, sizeof(msg), mul, 0, &s, &off, &len);
	ASSERT_EQ(n, 3);
	for (uint32_t i = 0; i < n; i++) {
		ur_ddp_cut(&m, sizeof(msg), mul, i, &s, &off, &len);
		k = fpdu(&tx[0], b, &s, msg + off, len);
		ASSERT_EQ(k, i < 2 ? 1448 : 2 + 14 + 1240 + 4);
		segment(0, 0x18, b, k);
	}
	/* SENDs of every kind, MSN counting; the second one cut across two
	 * segments, the last two sharing one. */
	for (uint8_t op = UR_RDMAP_SEND; op <= UR_RDMAP_SEND_SE_INV; op++) {
		s = (struct ur_ddp_seg){.opcode = op, .last = true,
					.msn = 1u + op - UR_RDMAP_SEND,
					.inv_stag = 0x12345600u};
		k = fpdu(&tx[0], b, &s, msg, 10u + op);
		if (op == UR_RDMAP_SEND_INV) {
			/* Its CRC alone in the next segment, as in siw's
			 * read_bw.pcap frames 43-44: Wireshark 4.0 cannot
			 * resync when an FPDU's header itself is split. */
			segment(0, 0x18, b, k - 4);
			segment(0, 0x18, b + k - 4, 4);
		} else if (op == UR_RDMAP_SEND_SE) {
			s.opcode = UR_RDMAP_SEND_SE_INV;
			s.msn++;
			k2 = fpdu(&tx[0], b + k, &s, msg, 16);
			segment(0, 0x18, b, k + k2);
			break;
		} else {
			segment(0, 0x18, b, k);
		}
	}
	/* A READ Request and its two Response segments. */
	s = (struct ur_ddp_seg){.opcode = UR_RDMAP_READ_REQ, .last = true,
				.msn = 1,
				.rreq = {0x633dbb00, 0x559be5735000ull, 2000,
					 0x3511ea00, 0x5597baf01000ull}};
	k = fpdu(&tx[0], b, &s, NULL, 0);
	segment(0, 0x18, b, k);
	m = (struct ur_ddp_seg){.opcode = UR_RDMAP_READ_RESP, .stag = 0x633dbb00,
				.to = 0x559be5735000ull};
	for (uint32_t i = 0; i < 2; i++) {
		ASSERT_EQ(ur_ddp_cut(&m, 2000, mul, i, &s, &off, &len), 2);
		k = fpdu(&tx[1], b, &s, msg + off, len);
		segment(1, 0x18, b, k);
	}
	/* A Terminate (RFC layout): DDP, tagged buffer, invalid STag, with
	 * the offending WRITE header. */
	{
		uint8_t whdr[UR_DDP_TAGGED_LEN], body[64];
		struct ur_ddp_seg w = {.opcode = UR_RDMAP_WRITE, .last = true,
				       .stag = 0x00bad0aa, .to = 0x1000};
		struct ur_iw_term t = {.layer = UR_TERM_LAYER_DDP, .etype = 1,
				       .ecode = 0, .m = true, .d = true,
				       .seg_len = 64, .ddp_hdr = whdr,
				       .ddp_hdr_len = UR_DDP_TAGGED_LEN};
		int bl;

		ASSERT_EQ(ur_ddp_encode_hdr(whdr, sizeof(whdr), &w), 14);
		bl = ur_iw_term_encode(body, sizeof(body), UR_TERM_RFC, &t);
		ASSERT_EQ(bl, 20);
		s = (struct ur_ddp_seg){.opcode = UR_RDMAP_TERMINATE,
					.last = true, .msn = 1};
		k = fpdu(&tx[1], b, &s, body, (size_t)bl);
		segment(1, 0x18, b, k);
	}
	segment(0, 0x11, NULL, 0);
	segment(1, 0x11, NULL, 0);
	pcap_dump_close(tp.dump);
	pcap_close(dead);
}

static bool tflag(const char *v)
{
	return !strcmp(v, "1") || !strcasecmp(v, "True");
}

/* Split @s at commas into @out (tshark's -E occurrence=a lists). */
static int split(char *s, char **out, int max)
{
	int n = 0;

	while (n < max && (out[n] = strsep(&s, ",")))
		n++;
	return n;
}

static void test_tshark(void)
{
	char cmd[1024], line[8192];
	int got = 0, good = 0, bad = 0, malformed = 0;
	FILE *f;

	build();
	snprintf(cmd, sizeof(cmd),
		 "tshark -n -r %s --disable-heuristic rpcrdma_iwarp -Y iwarp_ddp "
		 "-T fields -E separator=\\; -E occurrence=a "
		 "-e iwarp_mpa.ulpdulength -e iwarp_rdma.opcode "
		 "-e iwarp_ddp.tagged_flag -e iwarp_ddp.last_flag "
		 "-e iwarp_ddp.stag -e iwarp_ddp.tagged_offset -e iwarp_ddp.qn "
		 "-e iwarp_ddp.msn -e iwarp_ddp.mo 2>/dev/null",
		 path);
	f = popen(cmd, "r");
	ASSERT(f);
	while (fgets(line, sizeof(line), f)) {
		char *fld[9] = {0}, *t = line, *v[9][MAX_FPDU];
		int nv[9], nf = 0, ntag = 0, nunt = 0;

		line[strcspn(line, "\n")] = 0;
		while (nf < 9 && (fld[nf] = strsep(&t, ";")))
			nf++;
		ASSERT_EQ(nf, 9);
		for (int i = 0; i < 9; i++)
			nv[i] = *fld[i] ? split(fld[i], v[i], MAX_FPDU) : 0;
		/* Tagged fields list only tagged FPDUs, untagged only the
		 * others: walk them with their own indexes. */
		for (int i = 0; i < nv[0]; i++) {
			struct want *w = &wants[got];

			ASSERT_LT(got, nwant);
			if (strtoul(v[0][i], NULL, 0) != w->ulen ||
			    strtoul(v[1][i], NULL, 0) != w->op ||
			    tflag(v[2][i]) != w->tagged ||
			    tflag(v[3][i]) != w->last)
				UR_FAIL("FPDU %d: tshark says len %s op %s T %s L "
					"%s, we wrote %u %u %d %d", got, v[0][i],
					v[1][i], v[2][i], v[3][i], w->ulen, w->op,
					w->tagged, w->last);
			if (w->tagged) {
				ASSERT_LT(ntag, nv[4]);
				ASSERT_EQ_U64(strtoull(v[4][ntag], NULL, 0), w->stag);
				ASSERT_EQ_U64(strtoull(v[5][ntag], NULL, 0), w->to);
				ntag++;
			} else {
				ASSERT_LT(nunt, nv[6]);
				ASSERT_EQ(strtoul(v[6][nunt], NULL, 0), w->qn);
				ASSERT_EQ(strtoul(v[7][nunt], NULL, 0), w->msn);
				ASSERT_EQ(strtoul(v[8][nunt], NULL, 0), w->mo);
				nunt++;
			}
			got++;
		}
	}
	ASSERT_EQ(pclose(f), 0);
	ASSERT_EQ(got, nwant);

	/* Every CRC good, nothing malformed. */
	snprintf(cmd, sizeof(cmd),
		 "tshark -n -r %s --disable-heuristic rpcrdma_iwarp -V "
		 "2>/dev/null", path);
	f = popen(cmd, "r");
	ASSERT(f);
	while (fgets(line, sizeof(line), f)) {
		good += strstr(line, "(Good CRC32)") != NULL;
		bad += strstr(line, "Bad CRC32") != NULL;
		malformed += strstr(line, "Malformed") != NULL;
	}
	ASSERT_EQ(pclose(f), 0);
	printf("[%d FPDUs, %d good CRC32c, %d bad, %d malformed] ", got, good,
	       bad, malformed);
	ASSERT_EQ(bad, 0);
	ASSERT_EQ(malformed, 0);
	ASSERT_EQ(good, nwant);
	unlink(path);
}

static const struct ur_test_case tests[] = {
	{"tshark_iwarp", test_tshark},
	{NULL, NULL},
};

UR_TEST_MAIN_NEEDS(tests, "tshark")

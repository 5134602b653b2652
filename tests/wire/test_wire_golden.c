// SPDX-License-Identifier: MIT
/*
 * Golden test: every packet of every capture of real Linux rxe traffic in
 * shared/wire/rxe decodes, its ICRC recomputes (from the raw headers and
 * from header fields), it re-encodes to identical bytes, its CM MADs decode,
 * and the per-opcode counts match the README histograms. The IPv4 ID and DF
 * flag a receiver's UDP socket does not show are recovered from the ICRC
 * (rxe's IDs vary), and no ID explains a packet with a changed byte.
 */
#include <pcap/pcap.h>

#include "ur_test.h"
#include "ur_wire.h"

#define MAX_CLASSES 32

struct hist {
	char name[96];
	int count;
};

struct file_expect {
	char file[64];
	int total;
	int nclass;
	struct hist h[MAX_CLASSES];
};

static struct file_expect expects[32];
static int nexpects;
static const char *dir;

static void hist_add(struct hist *h, int *n, const char *name, int count)
{
	for (int i = 0; i < *n; i++)
		if (!strcmp(h[i].name, name)) {
			h[i].count += count;
			return;
		}
	ASSERT_LT(*n, MAX_CLASSES);
	snprintf(h[*n].name, sizeof(h[*n].name), "%s", name);
	h[*n].count = count;
	(*n)++;
}

/* README.md: "### f.pcap", then "f.pcap: N ICRC ok", then "  count  class". */
static void parse_readme(void)
{
	char line[512];
	struct file_expect *cur = NULL;
	bool in_code = false;
	FILE *f = ur_test_fopen_in(dir, "README.md");

	while (fgets(line, sizeof(line), f)) {
		char name[96];
		int count, consumed;

		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "```", 3)) {
			in_code = !in_code;
			continue;
		}
		if (!strncmp(line, "## ", 3))
			cur = NULL;
		if (!strncmp(line, "### ", 4) && strstr(line, ".pcap")) {
			ASSERT_LT(nexpects, 32);
			cur = &expects[nexpects++];
			snprintf(cur->file, sizeof(cur->file), "%.63s", line + 4);
			continue;
		}
		if (!cur || !in_code)
			continue;
		if (sscanf(line, "%*[^:]: %d ICRC ok", &count) == 1 &&
		    strstr(line, cur->file) == line) {
			cur->total = count;
		} else if (sscanf(line, " %d %n", &count, &consumed) == 1 &&
			   line[0] == ' ') {
			snprintf(name, sizeof(name), "%s", line + consumed);
			hist_add(cur->h, &cur->nclass, name, count);
		}
	}
	fclose(f);
}

static void fill_ipudp(struct ur_ipudp *ip, const uint8_t *l3, bool v6,
		       const uint8_t *udp)
{
	memset(ip, 0, sizeof(*ip));
	ip->v6 = v6;
	if (!v6) {
		ip->tos = l3[1];
		ip->ip_id = ur_get16(l3 + 4);
		ip->ip_frag = ur_get16(l3 + 6);
		ip->ttl = l3[8];
		memcpy(ip->src, l3 + 12, 4);
		memcpy(ip->dst, l3 + 16, 4);
	} else {
		uint32_t w = ur_get32(l3);

		ip->tos = (uint8_t)(w >> 20);
		ip->flow_label = w & 0xfffff;
		ip->ttl = l3[7];
		memcpy(ip->src, l3 + 8, 16);
		memcpy(ip->dst, l3 + 24, 16);
	}
	ip->sport = ur_get16(udp);
	ip->dport = ur_get16(udp + 2);
}

struct file_stats {
	int total;
	int ids_solved;    /* IPv4 packets whose ID, not 0, was recovered */
	int cm;
	int cm_req;
	int nclass;
	struct hist h[MAX_CLASSES];
};

/*
 * What a receiver on a UDP socket does: compute the ICRC assuming ID 0 and
 * DF, then recover the real ID and flag from the difference. A byte of
 * the IB part changed (one per packet, position and bits from the frame
 * number) must find no ID.
 */
static void check_id_recovery(const char *file, int frame,
			      const struct ur_ipudp *ip, const uint8_t *ib,
			      size_t ib_len, uint32_t icrc,
			      struct file_stats *st)
{
	static uint8_t bad[16384];
	struct ur_ipudp q = *ip;
	size_t at;

	q.ip_id = 0;
	q.ip_frag = 0x4000;
	if (!ur_icrc_fix_ipv4_id(&q, ib_len, ur_icrc(&q, ib, ib_len) ^ icrc) ||
	    q.ip_id != ip->ip_id || q.ip_frag != ip->ip_frag)
		UR_FAIL("%s frame %d: recovered ID 0x%04x frag 0x%04x, sent "
			"0x%04x 0x%04x", file, frame, q.ip_id, q.ip_frag,
			ip->ip_id, ip->ip_frag);
	st->ids_solved += ip->ip_id != 0;
	ASSERT_LE(ib_len, sizeof(bad));
	memcpy(bad, ib, ib_len);
	at = (size_t)frame * 7919u % ib_len;
	if (at == 4) /* BTH byte 4 is masked: the ICRC ignores it */
		at++;
	bad[at] ^= (uint8_t)(1u << (frame % 8));
	q.ip_id = 0;
	q.ip_frag = 0x4000;
	if (ur_icrc_fix_ipv4_id(&q, ib_len, ur_icrc(&q, bad, ib_len) ^ icrc))
		UR_FAIL("%s frame %d: byte %zu changed, yet ID 0x%04x matches",
			file, frame, at, q.ip_id);
}

static void check_packet(const char *file, int frame, const uint8_t *d,
			 size_t caplen, struct file_stats *st)
{
	static uint8_t re[16384];
	const uint8_t *l3 = d + 14, *udp, *ib;
	uint16_t et = ur_get16(d + 12);
	size_t l3len, iplen, ib_len;
	struct ur_ipudp ip;
	struct ur_pkt p;
	enum ur_decode_err e;
	bool v6;
	char cls[128];
	int n;

	ASSERT_GE(caplen, 14);
	while (et == 0x8100 || et == 0x88a8) {
		et = ur_get16(l3 + 2);
		l3 += 4;
	}
	l3len = caplen - (size_t)(l3 - d);
	v6 = et == 0x86dd;
	if (!v6 && et != 0x0800)
		UR_FAIL("%s frame %d: ethertype 0x%04x", file, frame, et);
	iplen = v6 ? 40 : (size_t)(l3[0] & 0xf) * 4;
	ASSERT_GE(l3len, iplen + 8);
	ASSERT_EQ(v6 ? l3[6] : l3[9], 17);
	udp = l3 + iplen;
	if (ur_get16(udp + 2) != UR_ROCEV2_PORT)
		UR_FAIL("%s frame %d: UDP port %u", file, frame, ur_get16(udp + 2));
	ib = udp + 8;
	ib_len = ur_get16(udp + 4) - 8u;
	ASSERT_LE(ib_len, l3len - iplen - 8); /* captured in full (-s 0) */

	e = ur_pkt_decode(ib, ib_len, &p);
	if (e != UR_DEC_OK)
		UR_FAIL("%s frame %d: decode: %s", file, frame,
			ur_decode_strerror(e));
	/* ICRC, two ways. */
	if (ur_icrc_raw(l3, iplen + 8, v6, ib, ib_len - 4) != p.icrc)
		UR_FAIL("%s frame %d: ICRC (raw) %08x vs captured %08x", file,
			frame, ur_icrc_raw(l3, iplen + 8, v6, ib, ib_len - 4),
			p.icrc);
	fill_ipudp(&ip, l3, v6, udp);
	if (ur_icrc(&ip, ib, ib_len - 4) != p.icrc)
		UR_FAIL("%s frame %d: ICRC (fields) %08x vs captured %08x", file,
			frame, ur_icrc(&ip, ib, ib_len - 4), p.icrc);
	if (!v6)
		check_id_recovery(file, frame, &ip, ib, ib_len - 4, p.icrc, st);
	/* Re-encode to identical bytes. */
	n = ur_pkt_encode(re, sizeof(re), &p, p.payload, p.payload_len);
	if (n != (int)ib_len)
		UR_FAIL("%s frame %d: re-encoded %d bytes, captured %zu", file,
			frame, n, ib_len);
	ur_icrc_store(re + n - 4, ur_icrc(&ip, re, (size_t)n - 4));
	for (size_t i = 0; i < ib_len; i++)
		if (re[i] != ib[i])
			UR_FAIL("%s frame %d: re-encoded byte %zu: 0x%02x vs "
				"0x%02x", file, frame, i, re[i], ib[i]);
	/* CM MADs on QP1. */
	if ((p.mask & UR_HDR_DETH) && p.h.dqpn == 1) {
		struct ur_cm_msg cm;

		ASSERT_EQ(p.deth.qkey, UR_GSI_QKEY);
		if (ur_cm_decode(p.payload, p.payload_len, &cm))
			UR_FAIL("%s frame %d: CM decode failed", file, frame);
		ASSERT(cm.name);
		st->cm++;
		if (cm.mad.attr_id == UR_CM_ATTR_REQ) {
			/* RDMA IP CM service ID, PS_TCP (IBTA A11.2). */
			if ((cm.service_id & ~0xffffull) != 0x0000000001060000ull)
				UR_FAIL("%s frame %d: REQ service ID 0x%016llx",
					file, frame,
					(unsigned long long)cm.service_id);
			ASSERT_NE(cm.service_id & 0xffff, 0);
			ASSERT_NE(cm.local_qpn, 0);
			ASSERT_EQ(cm.qp_type, 0); /* RC */
			st->cm_req++;
		}
		if (cm.mad.attr_id == UR_CM_ATTR_REP)
			ASSERT_NE(cm.local_qpn, 0);
	}
	ur_pkt_class_str(&p, cls, sizeof(cls));
	hist_add(st->h, &st->nclass, cls, 1);
	st->total++;
}

static void check_file(const struct file_expect *x)
{
	char path[512], err[PCAP_ERRBUF_SIZE];
	struct file_stats st = {0};
	struct pcap_pkthdr *ph;
	const u_char *data;
	pcap_t *pc;
	int frame = 0, r;

	snprintf(path, sizeof(path), "%s/%s", dir, x->file);
	pc = pcap_open_offline(path, err);
	if (!pc)
		UR_FAIL("%s: %s", path, err);
	ASSERT_EQ(pcap_datalink(pc), DLT_EN10MB);
	while ((r = pcap_next_ex(pc, &ph, &data)) == 1)
		check_packet(x->file, ++frame, data, ph->caplen, &st);
	ASSERT_EQ(r, PCAP_ERROR_BREAK);
	pcap_close(pc);

	if (st.total != x->total)
		UR_FAIL("%s: %d packets, README says %d", x->file, st.total,
			x->total);
	for (int i = 0; i < x->nclass; i++) {
		int got = 0;

		for (int j = 0; j < st.nclass; j++)
			if (!strcmp(st.h[j].name, x->h[i].name))
				got = st.h[j].count;
		if (got != x->h[i].count)
			UR_FAIL("%s: \"%s\": %d, README says %d", x->file,
				x->h[i].name, got, x->h[i].count);
	}
	ASSERT_EQ(st.nclass, x->nclass);
	if (strstr(x->file, "rdma_cm")) {
		ASSERT_GE(st.cm, 5);
		ASSERT_GE(st.cm_req, 1);
	}
	printf("[%s: %d pkts, %d classes, %d CM, %d IPv4 IDs recovered] ",
	       x->file, st.total, st.nclass, st.cm, st.ids_solved);
}

static void setup(void)
{
	int pcaps;

	if (nexpects)
		return;
	dir = ur_test_golden_dir("../shared/wire/rxe", &pcaps);
	parse_readme();
	ASSERT_GE(pcaps, 13);
	ASSERT_EQ(nexpects, pcaps); /* every capture is described */
}

static void test_readme(void)
{
	setup();
	for (int i = 0; i < nexpects; i++) {
		ASSERT_GT(expects[i].total, 0);
		ASSERT_GT(expects[i].nclass, 0);
	}
}

static void test_all_captures(void)
{
	setup();
	for (int i = 0; i < nexpects; i++)
		check_file(&expects[i]);
}

static const struct ur_test_case tests[] = {
	{"readme", test_readme},
	{"all_captures", test_all_captures},
	{NULL, NULL},
};

UR_TEST_MAIN(tests)

// SPDX-License-Identifier: MIT
/*
 * Cross-check with an independent decoder: write a pcap holding one packet
 * per opcode, built by our encoder and wrapped in Ethernet/IPv4/UDP with a
 * correct ICRC, and compare what tshark reads back (opcode, destination QP,
 * PSN, and the RETH's address and key: on an XRC request they follow the
 * XRCETH, so they land right only if both sides agree on where it ends). Exits 77 (ctest "skipped") only when tshark is not installed.
 */
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ur_test.h"
#include "ur_wire.h"

static const uint8_t all_ops[] = {
#define UR_X(n, v) v,
	UR_OPCODES(UR_X)
#undef UR_X
};
#define NUM_OPS (sizeof(all_ops) / sizeof(all_ops[0]))

static char pcap_path[256];

static uint32_t qpn_of(size_t i) { return 0x000100u + (uint32_t)i * 0x111; }
static uint32_t psn_of(size_t i) { return (0xfffff0u + (uint32_t)i * 7) & UR_PSN_MASK; }

/* One frame: Ethernet + IPv4 (DF, ID 0) + UDP (checksum 0) + IB + ICRC. */
static size_t build_frame(uint8_t *f, size_t i)
{
	static const uint8_t mac_a[6] = {0x52, 0x54, 0, 0x77, 0, 2};
	static const uint8_t mac_b[6] = {0x52, 0x54, 0, 0x77, 0, 3};
	static uint8_t payload[256];
	const struct ur_opcode_info *info = ur_opcode_info(all_ops[i]);
	struct ur_ipudp ip = {0};
	struct ur_pkt p = {0};
	uint8_t *ipv4 = f + 14, *udp = ipv4 + 20, *ib = udp + 8;
	uint32_t plen = 0;
	int n;

	if (info->mask & UR_HDR_PAYLOAD)
		plen = info->fixed_payload ? info->fixed_payload : 256;
	memset(payload, 0x5a, sizeof(payload));
	p.h.opcode = all_ops[i];
	p.h.pkey = 0xffff;
	p.h.dqpn = qpn_of(i);
	p.h.psn = psn_of(i);
	p.h.ackreq = true;
	p.h.becn = all_ops[i] == UR_OP_CNP;
	p.reth = (struct ur_reth){0x1000, 0x1234, plen};
	p.aeth = (struct ur_aeth){ur_aeth_ack(UR_AETH_CREDIT_INVALID), 7};
	p.deth = (struct ur_deth){0x11111111, 0x22};
	p.xrc_srqn = 0xabcdef;
	n = ur_pkt_encode(ib, 2048, &p, plen ? payload : NULL, plen);
	ASSERT_GT(n, 0);

	memcpy(f, mac_b, 6);
	memcpy(f + 6, mac_a, 6);
	ur_put16(f + 12, 0x0800);
	ip.src[0] = 10, ip.src[1] = 77, ip.src[3] = 2;
	ip.dst[0] = 10, ip.dst[1] = 77, ip.dst[3] = 3;
	ip.sport = 49152;
	ip.dport = UR_ROCEV2_PORT;
	ip.ttl = 64;
	ip.ip_frag = 0x4000;
	memset(ipv4, 0, 28);
	ipv4[0] = 0x45;
	ur_put16(ipv4 + 2, (uint16_t)(28 + n));
	ur_put16(ipv4 + 6, ip.ip_frag);
	ipv4[8] = ip.ttl;
	ipv4[9] = 17;
	memcpy(ipv4 + 12, ip.src, 4);
	memcpy(ipv4 + 16, ip.dst, 4);
	{
		uint32_t sum = 0;

		for (int k = 0; k < 20; k += 2)
			sum += ur_get16(ipv4 + k);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		ur_put16(ipv4 + 10, (uint16_t)~sum);
	}
	ur_put16(udp, ip.sport);
	ur_put16(udp + 2, ip.dport);
	ur_put16(udp + 4, (uint16_t)(8 + n));
	ur_icrc_store(ib + n - 4, ur_icrc(&ip, ib, (size_t)n - 4));
	/* Our own ICRC checker agrees with itself over the raw bytes. */
	ASSERT_EQ(ur_icrc_raw(ipv4, 28, false, ib, (size_t)n - 4),
		  ur_icrc_load(ib + n - 4));
	return 14 + 28 + (size_t)n;
}

static void test_tshark(void)
{
	static uint8_t frame[4096];
	pcap_t *dead = pcap_open_dead(DLT_EN10MB, 65535);
	pcap_dumper_t *w;
	char cmd[512], line[4096];
	FILE *f;
	size_t i = 0;

	snprintf(pcap_path, sizeof(pcap_path), "/tmp/uroce_tshark_%d.pcap",
		 (int)getpid());
	w = pcap_dump_open(dead, pcap_path);
	ASSERT(w);
	for (size_t k = 0; k < NUM_OPS; k++) {
		struct pcap_pkthdr h = {0};

		h.ts.tv_sec = 1700000000;
		h.ts.tv_usec = (long)k;
		h.caplen = h.len = (bpf_u_int32)build_frame(frame, k);
		pcap_dump((u_char *)w, &h, frame);
	}
	pcap_dump_close(w);
	pcap_close(dead);

	snprintf(cmd, sizeof(cmd),
		 "tshark -n -r %s -T fields "
		 "-E separator=, -E occurrence=l -e infiniband.bth.opcode "
		 "-e infiniband.bth.destqp -e infiniband.bth.psn "
		 "-e infiniband.reth.va -e infiniband.reth.r_key "
		 "-e infiniband.vendor 2>/dev/null",
		 pcap_path);
	f = popen(cmd, "r");
	ASSERT(f);
	while (fgets(line, sizeof(line), f)) {
		const struct ur_opcode_info *info;
		char *fld[6] = {0}, *t = line;
		long op, qp, psn; /* tshark prints the QPN in hex */
		int nf = 0;

		line[strcspn(line, "\n")] = 0;
		/* strsep keeps the empty fields of headers a frame lacks */
		while (nf < 6 && (fld[nf] = strsep(&t, ",")))
			nf++;
		if (nf < 3 || sscanf(fld[0], "%li", &op) != 1 ||
		    sscanf(fld[1], "%li", &qp) != 1 ||
		    sscanf(fld[2], "%li", &psn) != 1)
			UR_FAIL("tshark line %zu: \"%s\"", i + 1, line);
		ASSERT_LT(i, NUM_OPS);
		info = ur_opcode_info(all_ops[i]);
		/* tshark 4.0 predates FLUSH and ATOMIC WRITE (IBTA 1.5): it
		 * names them but does not parse their headers. */
		if (!ur_op_is_xrc(all_ops[i]) &&
		    (info->mask & (UR_HDR_RETH | UR_OPF_FLUSH |
				   UR_OPF_ATOMIC_WRITE)) == UR_HDR_RETH &&
		    (nf < 5 || strtoull(fld[3], NULL, 0) != 0x1000 ||
		     strtoull(fld[4], NULL, 0) != 0x1234))
			UR_FAIL("frame %zu (%s): tshark's RETH: \"%s\"", i + 1,
				ur_opcode_name(all_ops[i]), line);
		/*
		 * XRC: tshark 4.0 names the opcodes (table 38) but shows what
		 * follows the BTH as unparsed bytes. They must start with the
		 * XRCETH (reserved 0, SRQ 0xabcdef) on a request, then the
		 * RETH, and with the AETH on an answer: no XRCETH there.
		 */
		if (ur_op_is_xrc(all_ops[i])) {
			const char *v = nf == 6 ? fld[5] : "";
			const char *want = (info->mask & UR_OPF_REQ) ? "00abcdef"
					   : (info->mask & UR_HDR_AETH) ? "1f000007"
									 : "5a5a5a5a";

			if (strncmp(v, want, 8) ||
			    ((info->mask & UR_HDR_RETH) &&
			     strncmp(v + 8, "000000000000100000001234", 24)))
				UR_FAIL("frame %zu (%s): bytes after the BTH "
					"\"%.40s\", want %s...", i + 1,
					ur_opcode_name(all_ops[i]), v, want);
		}
		if (op != all_ops[i] || qp != qpn_of(i) || psn != psn_of(i))
			UR_FAIL("frame %zu (%s): tshark says opcode %ld qp 0x%lx "
				"psn %ld, we wrote %u 0x%x %u",
				i + 1, ur_opcode_name(all_ops[i]), op, qp, psn,
				all_ops[i], qpn_of(i), psn_of(i));
		i++;
	}
	ASSERT_EQ(pclose(f), 0);
	ASSERT_EQ(i, NUM_OPS);
	unlink(pcap_path);
}

static const struct ur_test_case tests[] = {
	{"tshark_fields", test_tshark},
	{NULL, NULL},
};

UR_TEST_MAIN_NEEDS(tests, "tshark")

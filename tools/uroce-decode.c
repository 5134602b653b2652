// SPDX-License-Identifier: MIT
/*
 * uroce-decode: print and verify the RoCEv2 packets (UDP port 4791) of pcap
 * or pcapng captures with the uroce wire codec, one line per packet, ICRC
 * checked (IBTA Annex A17.3.3).
 *
 * A datagram captured on the sending host before segmentation (a UDP GSO
 * run on lo or on a device with segmentation offload) holds several
 * packets of one size, the last maybe shorter: it is split at the size
 * for which every segment decodes and its ICRC verifies over the headers
 * the kernel gives each segment (lengths, IPv4 ID + k), and printed as
 * frames N.1, N.2, ...
 *
 * Exit status: 0 when every RoCEv2 packet decodes and its ICRC verifies,
 * 1 otherwise (the first bad packet is named) or when a file holds no
 * RoCEv2 packet, 2 on usage or I/O errors.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ur_wire.h"

#ifndef DLT_LINUX_SLL2
#define DLT_LINUX_SLL2 276
#endif
#ifndef DLT_IPV4
#define DLT_IPV4 228
#endif
#ifndef DLT_IPV6
#define DLT_IPV6 229
#endif

#define ETH_P_IPV4 0x0800
#define ETH_P_IPV6 0x86dd
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88a8

struct opts {
	bool quiet;
	bool verbose_payload;
};

struct hist {
	char name[128];
	unsigned count;
};

struct stats {
	unsigned ok, bad, other, gso;
	unsigned nclass;
	struct hist h[64];
};

static bool nothing; /* a file without RoCEv2 packets */

static struct {
	bool have;
	char file[256];
	unsigned frame;
	char reason[160];
} first_bad;

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"Usage: %s [OPTIONS] FILE.pcap...\n"
		"Decode the RoCEv2 packets (UDP destination port %d) of pcap or\n"
		"pcapng captures and verify every ICRC (IBTA Annex A17).\n"
		"Link types: Ethernet (with VLAN tags), Linux cooked v1/v2, raw IP;\n"
		"IPv4 and IPv6.\n"
		"\n"
		"One line per packet: frame, time since the first frame, addresses,\n"
		"opcode, destination QP, PSN, BTH flags (SE, A = AckReq, F/B = FECN/\n"
		"BECN, M, pad), extension headers (RETH, AETH, AtomicETH, ImmDt, IETH,\n"
		"DETH, FETH, CM message on QP1), payload length and ICRC ok/BAD.\n"
		"\n"
		"Options:\n"
		"  -q, --quiet     summary only: per-file counts per opcode class\n"
		"  -x, --hex       also dump the first 32 payload bytes\n"
		"  -h, --help      this text\n"
		"\n"
		"A UDP GSO batch captured on the sending host is split into its\n"
		"packets (frames N.1, N.2, ...).\n"
		"\n"
		"Exit status: 0 all RoCEv2 packets decode and verify; 1 a packet is\n"
		"bad (the first one is named on stderr) or a file has no RoCEv2\n"
		"packet; 2 usage or unreadable file.\n",
		argv0, UR_ROCEV2_PORT);
}

static void hist_add(struct stats *st, const char *name)
{
	for (unsigned i = 0; i < st->nclass; i++)
		if (!strcmp(st->h[i].name, name)) {
			st->h[i].count++;
			return;
		}
	if (st->nclass < sizeof(st->h) / sizeof(st->h[0])) {
		snprintf(st->h[st->nclass].name, sizeof(st->h[0].name), "%s",
			 name);
		st->h[st->nclass++].count = 1;
	}
}

static int hist_cmp(const void *a, const void *b)
{
	const struct hist *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void note_bad(const char *file, unsigned frame, const char *reason)
{
	if (first_bad.have)
		return;
	first_bad.have = true;
	snprintf(first_bad.file, sizeof(first_bad.file), "%s", file);
	first_bad.frame = frame;
	snprintf(first_bad.reason, sizeof(first_bad.reason), "%s", reason);
}

/* Extension headers, in the order they sit on the wire. */
static void print_ext(const struct ur_pkt *p)
{
	char a[48];

	if (p->mask & UR_HDR_FETH)
		printf(" FETH[sel=%u plt=%u]", p->feth.sel_level,
		       p->feth.placement);
	if (p->mask & UR_HDR_DETH)
		printf(" DETH[qkey=0x%08x srcqp=0x%06x]", p->deth.qkey,
		       p->deth.sqpn);
	if (p->mask & UR_HDR_RETH)
		printf(" RETH[va=0x%016llx rkey=0x%08x len=%u]",
		       (unsigned long long)p->reth.va, p->reth.rkey,
		       p->reth.len);
	if (p->mask & UR_HDR_ATMETH)
		printf(" AtomicETH[va=0x%016llx rkey=0x%08x swap_add=0x%llx "
		       "cmp=0x%llx]",
		       (unsigned long long)p->atm.va, p->atm.rkey,
		       (unsigned long long)p->atm.swap_add,
		       (unsigned long long)p->atm.compare);
	if (p->mask & UR_HDR_AETH)
		printf(" AETH[%s msn=%u]",
		       ur_aeth_str(p->aeth.syndrome, a, sizeof(a)), p->aeth.msn);
	if (p->mask & UR_HDR_ATMACK)
		printf(" AtomicAckETH[orig=0x%llx]",
		       (unsigned long long)p->atmack);
	if (p->mask & UR_HDR_IMMDT)
		printf(" imm=0x%08x", p->imm);
	if (p->mask & UR_HDR_IETH)
		printf(" IETH[rkey=0x%08x]", p->ieth);
	if ((p->mask & UR_HDR_DETH) && p->h.dqpn == 1) {
		struct ur_cm_msg cm;
		struct ur_mad_hdr m;

		if (!ur_cm_decode(p->payload, p->payload_len, &cm)) {
			printf(" CM %s tid=0x%llx lcid=0x%08x", cm.name,
			       (unsigned long long)cm.mad.tid, cm.local_comm_id);
			if (cm.remote_comm_id)
				printf(" rcid=0x%08x", cm.remote_comm_id);
			if (cm.service_id)
				printf(" sid=0x%016llx",
				       (unsigned long long)cm.service_id);
			if (cm.local_qpn)
				printf(" qpn=0x%06x", cm.local_qpn);
			if (cm.mad.attr_id == UR_CM_ATTR_REQ ||
			    cm.mad.attr_id == UR_CM_ATTR_REP)
				printf(" spsn=%u", cm.starting_psn);
		} else if (!ur_mad_decode(p->payload, p->payload_len, &m)) {
			printf(" MAD class=0x%02x method=0x%02x attr=0x%04x",
			       m.mgmt_class, m.method, m.attr_id);
		}
	}
}

/*
 * Finds the IP header inside a frame of the given link type. Returns its
 * offset or -1 when the frame carries no IP.
 */
static long l3_offset(int dlt, const uint8_t *d, size_t len)
{
	size_t off;
	uint16_t et;

	switch (dlt) {
	case DLT_EN10MB:
		if (len < 14)
			return -1;
		et = ur_get16(d + 12);
		off = 14;
		while ((et == ETH_P_8021Q || et == ETH_P_8021AD) &&
		       len >= off + 4) {
			et = ur_get16(d + off + 2);
			off += 4;
		}
		break;
	case DLT_LINUX_SLL:
		if (len < 16)
			return -1;
		et = ur_get16(d + 14);
		off = 16;
		break;
	case DLT_LINUX_SLL2:
		if (len < 20)
			return -1;
		et = ur_get16(d);
		off = 20;
		break;
	case DLT_RAW:
	case DLT_IPV4:
	case DLT_IPV6:
		if (len < 1)
			return -1;
		et = (d[0] >> 4) == 6 ? ETH_P_IPV6 : ETH_P_IPV4;
		off = 0;
		break;
	default:
		return -1;
	}
	if (et != ETH_P_IPV4 && et != ETH_P_IPV6)
		return -1;
	return (long)off;
}

/* One decoded packet's line (the address part is printed already). */
static void print_pkt(const struct ur_pkt *p, bool icrc_ok,
		      const struct opts *o)
{
	if (o->quiet)
		return;
	printf("%s qp=0x%06x psn=%u", p->info->name, p->h.dqpn, p->h.psn);
	if (p->h.se || p->h.ackreq || p->h.fecn || p->h.becn || p->h.mig ||
	    p->h.pad) {
		char fl[40];
		int n = snprintf(fl, sizeof(fl), "%s%s%s%s%s",
				 p->h.se ? " SE" : "", p->h.ackreq ? " A" : "",
				 p->h.fecn ? " FECN" : "",
				 p->h.becn ? " BECN" : "", p->h.mig ? " M" : "");

		if (p->h.pad)
			snprintf(fl + n, sizeof(fl) - (size_t)n, " pad=%u",
				 p->h.pad);
		printf(" [%s]", fl + 1);
	}
	if (p->h.pkey != UR_DEFAULT_PKEY)
		printf(" pkey=0x%04x", p->h.pkey);
	print_ext(p);
	printf(" len=%u icrc=%s\n", p->payload_len, icrc_ok ? "ok" : "BAD");
	if (o->verbose_payload && p->payload_len) {
		printf("   ");
		for (uint32_t i = 0; i < p->payload_len && i < 32; i++)
			printf(" %02x", p->payload[i]);
		printf("\n");
	}
}

static void count_ok(const struct ur_pkt *p, struct stats *st)
{
	char cls[128];

	hist_add(st, ur_pkt_class_str(p, cls, sizeof(cls)));
	st->ok++;
}

/*
 * Segment @k (@n bytes at @ib) of a GSO batch whose IP and UDP headers
 * (@hl bytes at @ip) are the batch's: does it decode, and does its ICRC
 * verify over the headers the kernel gives it (its own lengths, and for
 * IPv4 the batch's ID + @k)? @hdr is scratch for those headers.
 */
static bool seg_ok(const uint8_t *ip, size_t hl, bool v6, const uint8_t *ib,
		   size_t n, unsigned k, uint8_t *hdr, struct ur_pkt *p)
{
	if (hl > 64 || n < UR_BTH_LEN + UR_ICRC_LEN ||
	    ur_pkt_decode(ib, n, p) != UR_DEC_OK)
		return false;
	memcpy(hdr, ip, hl);
	if (v6) {
		ur_put16(hdr + 4, (uint16_t)(8 + n));
	} else {
		ur_put16(hdr + 2, (uint16_t)(hl + n));
		ur_put16(hdr + 4, (uint16_t)(ur_get16(ip + 4) + k));
	}
	ur_put16(hdr + hl - 8 + 4, (uint16_t)(8 + n));
	return ur_icrc_raw(hdr, hl, v6, ib, n - UR_ICRC_LEN) == p->icrc;
}

/*
 * The segment size of a GSO batch of @len bytes, or 0 if it is none: a
 * size at which the first and the last segment verify. Tried: the batch
 * cut into 2..64 equal parts, then one full-PMTU packet of the first
 * opcode (256 B .. 16 KiB payload) with a shorter last one.
 */
static size_t gso_seg(const uint8_t *ip, size_t hl, bool v6, const uint8_t *ib,
		      size_t len)
{
	size_t hlen = ur_pkt_hdr_len(ib[0]), cand[80];
	unsigned nc = 0;
	uint8_t hdr[64];
	struct ur_pkt p;

	for (size_t n = 2; n <= 64; n++)
		if (len % n == 0)
			cand[nc++] = len / n;
	for (size_t pmtu = 256; hlen && pmtu <= 16384; pmtu *= 2)
		cand[nc++] = hlen + pmtu + UR_ICRC_LEN;
	for (unsigned i = 0; i < nc; i++) {
		size_t s = cand[i], last = len % s ? len % s : s;
		unsigned nseg = (unsigned)((len + s - 1) / s);

		if (s >= len || nseg < 2)
			continue;
		if (seg_ok(ip, hl, v6, ib, s, 0, hdr, &p) &&
		    seg_ok(ip, hl, v6, ib + len - last, last, nseg - 1, hdr, &p))
			return s;
	}
	return 0;
}

static void process(const char *file, unsigned frame, double t, int dlt,
		    const uint8_t *d, size_t caplen, size_t wirelen,
		    const struct opts *o, struct stats *st)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN], why[160];
	const uint8_t *ip, *udp, *ib;
	long off = l3_offset(dlt, d, caplen);
	size_t iplen, avail, ib_len, hl, seg;
	struct ur_pkt p;
	enum ur_decode_err e;
	bool v6;
	uint32_t icrc;

	if (off < 0) {
		st->other++;
		return;
	}
	ip = d + off;
	avail = caplen - (size_t)off;
	if (avail < 20) {
		st->other++;
		return;
	}
	v6 = (ip[0] >> 4) == 6;
	if (v6) {
		/* No extension headers: RoCEv2 senders do not use them. */
		if (avail < 48 || ip[6] != 17) {
			st->other++;
			return;
		}
		iplen = 40;
	} else {
		iplen = (size_t)(ip[0] & 0xf) * 4;
		if ((ip[0] >> 4) != 4 || iplen < 20 || ip[9] != 17 ||
		    avail < iplen + 8) {
			st->other++;
			return;
		}
		if (ur_get16(ip + 6) & 0x1fff) { /* a later fragment */
			st->other++;
			return;
		}
	}
	udp = ip + iplen;
	if (ur_get16(udp + 2) != UR_ROCEV2_PORT) {
		st->other++;
		return;
	}
	ib = udp + 8;
	inet_ntop(v6 ? AF_INET6 : AF_INET, v6 ? ip + 8 : ip + 12, src,
		  sizeof(src));
	inet_ntop(v6 ? AF_INET6 : AF_INET, v6 ? ip + 24 : ip + 16, dst,
		  sizeof(dst));
	/* Frame N, or N.k for segment k of a GSO batch. */
#define PREFIX(k)                                                            \
	do {                                                                 \
		if (o->quiet)                                                \
			break;                                               \
		if (k)                                                       \
			printf("%u.%u ", frame, k);                          \
		else                                                         \
			printf("%u ", frame);                                \
		printf("%.6f %s:%u -> %s:%u ", t, src, ur_get16(udp), dst,   \
		       ur_get16(udp + 2));                                   \
	} while (0)
	hl = iplen + 8;
	if (ur_get16(udp + 4) < 8 || caplen < wirelen ||
	    ur_get16(udp + 4) > avail - iplen) {
		snprintf(why, sizeof(why), "truncated capture or bad UDP length");
		PREFIX(0);
		goto bad;
	}
	ib_len = ur_get16(udp + 4) - 8u;
	e = ur_pkt_decode(ib, ib_len, &p);
	if (e == UR_DEC_OK &&
	    ur_icrc_raw(ip, hl, v6, ib, ib_len - UR_ICRC_LEN) == p.icrc) {
		PREFIX(0);
		print_pkt(&p, true, o);
		count_ok(&p, st);
		return;
	}
	/* Not one packet: a GSO batch from the sending host? */
	seg = gso_seg(ip, hl, v6, ib, ib_len);
	if (seg) {
		unsigned k = 0;

		st->gso++;
		for (size_t at = 0; at < ib_len; at += seg, k++) {
			size_t n = ib_len - at < seg ? ib_len - at : seg;
			uint8_t hdr[64];
			struct ur_pkt q;

			PREFIX(k + 1);
			if (!seg_ok(ip, hl, v6, ib + at, n, k, hdr, &q)) {
				snprintf(why, sizeof(why),
					 "GSO segment %u of %zu bytes: no packet "
					 "or bad ICRC", k + 1, n);
				goto bad;
			}
			print_pkt(&q, true, o);
			count_ok(&q, st);
		}
		return;
	}
	PREFIX(0);
	if (e != UR_DEC_OK) {
		snprintf(why, sizeof(why), "%s (opcode 0x%02x)",
			 ur_decode_strerror(e), ib_len ? ib[0] : 0);
		goto bad;
	}
	icrc = ur_icrc_raw(ip, hl, v6, ib, ib_len - UR_ICRC_LEN);
	print_pkt(&p, false, o);
	snprintf(why, sizeof(why), "bad ICRC (0x%08x, expected 0x%08x)",
		 p.icrc, icrc);
	note_bad(file, frame, why);
	st->bad++;
	return;
bad:
	if (!o->quiet)
		printf("BAD: %s\n", why);
	note_bad(file, frame, why);
	st->bad++;
#undef PREFIX
}

static int run_file(const char *file, const struct opts *o)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *ph;
	const u_char *data;
	struct stats st;
	unsigned frame = 0;
	double t0 = 0;
	pcap_t *pc;
	int dlt, r;

	memset(&st, 0, sizeof(st));
	pc = pcap_open_offline(file, err);
	if (!pc) {
		fprintf(stderr, "uroce-decode: %s: %s\n", file, err);
		return 2;
	}
	dlt = pcap_datalink(pc);
	if (dlt != DLT_EN10MB && dlt != DLT_LINUX_SLL && dlt != DLT_LINUX_SLL2 &&
	    dlt != DLT_RAW && dlt != DLT_IPV4 && dlt != DLT_IPV6) {
		fprintf(stderr, "uroce-decode: %s: unsupported link type %s\n",
			file, pcap_datalink_val_to_name(dlt));
		pcap_close(pc);
		return 2;
	}
	while ((r = pcap_next_ex(pc, &ph, &data)) == 1) {
		double t = (double)ph->ts.tv_sec + ph->ts.tv_usec / 1e6;

		if (!frame)
			t0 = t;
		process(file, ++frame, t - t0, dlt, data, ph->caplen, ph->len,
			o, &st);
	}
	if (r == PCAP_ERROR) {
		fprintf(stderr, "uroce-decode: %s: %s\n", file, pcap_geterr(pc));
		pcap_close(pc);
		return 2;
	}
	pcap_close(pc);
	if (!st.ok && !st.bad) {
		fprintf(stderr, "uroce-decode: %s: no RoCEv2 packet (UDP "
			"destination port %d) in %u frames\n", file,
			UR_ROCEV2_PORT, frame);
		nothing = true;
	}
	if (o->quiet) {
		printf("%s: %u ICRC ok, %u bad, %u not RoCEv2", file, st.ok,
		       st.bad, st.other);
		if (st.gso)
			printf(" (%u GSO batches split)", st.gso);
		printf("\n");
		qsort(st.h, st.nclass, sizeof(st.h[0]), hist_cmp);
		for (unsigned i = 0; i < st.nclass; i++)
			printf("%8u  %s\n", st.h[i].count, st.h[i].name);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"quiet", no_argument, NULL, 'q'},
		{"hex", no_argument, NULL, 'x'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct opts o = {0};
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "qxh", longopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			o.quiet = true;
			break;
		case 'x':
			o.verbose_payload = true;
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr, argv[0]);
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		int r = run_file(argv[i], &o);

		if (r > rc)
			rc = r;
	}
	if (rc)
		return rc;
	if (first_bad.have) {
		fprintf(stderr, "uroce-decode: %s: frame %u: %s\n",
			first_bad.file, first_bad.frame, first_bad.reason);
		return 1;
	}
	return nothing ? 1 : 0;
}

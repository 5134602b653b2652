// SPDX-License-Identifier: MIT
/*
 * Codec benchmark: encode, decode and ICRC of RoCEv2 packets with a
 * 4096-byte payload, and CRC-32 back ends against zlib's crc32() over the
 * same bytes in the same run. Prints medians of several repetitions. Two
 * more ICRC rows: the packets of a GSO run (IPv4 ID 0..31, as the engine
 * sends them) and a 16-byte ACK (BTH + AETH), in ns per packet.
 *
 * Usage: codec-bench [REPS] [PACKETS_PER_REP]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "ur_wire.h"

#define PAYLOAD 4096

static volatile uint32_t sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

enum job { ENCODE, DECODE, ICRC, ALL, CRC_BEST, CRC_V256, CRC_V128,
	   CRC_SLICE8, CRC_ZLIB, ICRC_GSO, ICRC_ACK, NJOBS };
static const char *const job_names[NJOBS] = {
	[ENCODE] = "encode",
	[DECODE] = "decode",
	[ICRC] = "icrc",
	[ALL] = "encode+icrc+decode",
	[CRC_BEST] = "crc32 best",
	[CRC_V256] = "crc32 <= 256-bit",
	[CRC_V128] = "crc32 128-bit",
	[CRC_SLICE8] = "crc32 slice8",
	[CRC_ZLIB] = "zlib crc32()",
	[ICRC_GSO] = "icrc, GSO run",
	[ICRC_ACK] = "icrc, 16-byte ACK",
};

static uint8_t payload[PAYLOAD], pkt[PAYLOAD + 128], ack[16];
static struct ur_pkt tmpl;
static struct ur_ipudp ip;
static int pkt_len;

/* Seconds for @n rounds of @j. */
static double run(enum job j, long n)
{
	struct ur_pkt d;
	uint32_t acc = 0;
	double t = now();

	ur_crc32_force_portable(j == CRC_SLICE8);
	ur_crc32_vec_bits(j == CRC_V128 ? 128 : j == CRC_V256 ? 256 : 512);
	for (long i = 0; i < n; i++) {
		switch (j) {
		case ENCODE:
			tmpl.h.psn = (uint32_t)i & UR_PSN_MASK;
			acc += (uint32_t)ur_pkt_encode(pkt, sizeof(pkt), &tmpl,
						       payload, PAYLOAD);
			break;
		case DECODE:
			acc += ur_pkt_decode(pkt, (size_t)pkt_len, &d) +
			       d.payload_len;
			break;
		case ICRC:
			acc += ur_icrc(&ip, pkt, (size_t)pkt_len - 4);
			break;
		case ALL:
			tmpl.h.psn = (uint32_t)i & UR_PSN_MASK;
			ur_pkt_encode(pkt, sizeof(pkt), &tmpl, payload, PAYLOAD);
			ur_icrc_store(pkt + pkt_len - 4,
				      ur_icrc(&ip, pkt, (size_t)pkt_len - 4));
			acc += ur_pkt_decode(pkt, (size_t)pkt_len, &d) + d.icrc;
			break;
		case CRC_BEST:
		case CRC_V256:
		case CRC_V128:
		case CRC_SLICE8:
			acc += ur_crc32(0, pkt, (size_t)pkt_len - 4);
			break;
		case CRC_ZLIB:
			acc += (uint32_t)crc32(0, pkt, (uInt)pkt_len - 4);
			break;
		case ICRC_GSO: {
			struct ur_ipudp g = ip;

			g.ip_id = (uint16_t)(i & 31);
			acc += ur_icrc(&g, pkt, (size_t)pkt_len - 4);
			break;
		}
		case ICRC_ACK:
			acc += ur_icrc(&ip, ack, sizeof(ack));
			break;
		default:
			break;
		}
	}
	t = now() - t;
	ur_crc32_force_portable(false);
	ur_crc32_vec_bits(512);
	sink = acc;
	return t;
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 7;
	long n = argc > 2 ? atol(argv[2]) : 100000;
	double med[NJOBS], bytes;

	if (reps < 1 || n < 1) {
		fprintf(stderr, "usage: %s [REPS] [PACKETS_PER_REP]\n", argv[0]);
		return 2;
	}
	for (int i = 0; i < PAYLOAD; i++)
		payload[i] = (uint8_t)(i * 131 + 7);
	tmpl.h.opcode = UR_OP_RC_RDMA_WRITE_ONLY;
	tmpl.h.pkey = 0xffff;
	tmpl.h.dqpn = 0x11;
	tmpl.h.ackreq = true;
	tmpl.reth = (struct ur_reth){0x7f0000001000ull, 0x1234, PAYLOAD};
	ip.src[0] = 10, ip.src[3] = 1;
	ip.dst[0] = 10, ip.dst[3] = 2;
	ip.sport = 49152;
	ip.dport = UR_ROCEV2_PORT;
	ip.ip_frag = 0x4000;
	pkt_len = ur_pkt_encode(pkt, sizeof(pkt), &tmpl, payload, PAYLOAD);
	for (size_t i = 0; i < sizeof(ack); i++)
		ack[i] = (uint8_t)(i * 29 + 3);
	ack[0] = UR_OP_RC_ACKNOWLEDGE;
	ur_icrc_store(pkt + pkt_len - 4, ur_icrc(&ip, pkt, (size_t)pkt_len - 4));
	bytes = (double)pkt_len - 4;

	for (int j = 0; j < NJOBS; j++) {
		double t[64];
		int r = reps > 64 ? 64 : reps;

		run((enum job)j, n / 10 + 1); /* warm up */
		for (int k = 0; k < r; k++)
			t[k] = run((enum job)j, n);
		qsort(t, (size_t)r, sizeof(t[0]), cmp_d);
		med[j] = t[r / 2];
	}
	printf("uroce codec bench: RC_RDMA_WRITE_ONLY, %d-byte payload, "
	       "%d-byte IB part; %ld packets x %d reps, medians; crc32 best = %s, %u-bit\n",
	       PAYLOAD, pkt_len, n, reps, ur_crc32_impl(), ur_crc32_vec_bits(512));
	for (int j = 0; j < ICRC_GSO; j++)
		printf("  %-20s %8.2f Mpkt/s %8.2f GB/s\n", job_names[j],
		       n / med[j] / 1e6, n * bytes / med[j] / 1e9);
	for (int j = ICRC_GSO; j < NJOBS; j++)
		printf("  %-20s %8.1f ns/packet\n", job_names[j], med[j] / n * 1e9);
	printf("  crc32 %s / zlib crc32() = %.2fx (4 KiB buffers)\n",
	       ur_crc32_impl(), med[CRC_ZLIB] / med[CRC_BEST]);
	printf("  crc32 slice8 / zlib crc32() = %.2fx\n",
	       med[CRC_ZLIB] / med[CRC_SLICE8]);
	return 0;
}

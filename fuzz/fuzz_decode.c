// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the IB part of a RoCEv2 packet (BTH .. ICRC) as
 * arbitrary bytes. Decode must be total; ICRC and CM decode must stay in
 * bounds; a packet that decodes must re-encode to the same bytes, reserved
 * bits aside.
 */
#include <stdlib.h>
#include <string.h>

#include "ur_wire.h"

/* Reserved bits (BTH resv6/resv7, DETH resv8, FETH resv26, XRCETH's first
 * byte) the encoder zeroes. */
static void clear_reserved(uint8_t *b, const struct ur_pkt *p)
{
	b[4] &= 0xc0;
	b[8] &= 0x80;
	if (p->mask & UR_HDR_DETH)
		b[p->info->off[UR_ETH_DETH] + 4] = 0;
	if (p->mask & UR_HDR_XRCETH)
		b[p->info->off[UR_ETH_XRCETH]] = 0;
	if (p->mask & UR_HDR_FETH) {
		uint8_t *f = b + p->info->off[UR_ETH_FETH];

		f[0] = f[1] = f[2] = 0;
		f[3] &= 0x3f;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t re[70000], want[70000];
	struct ur_ipudp ip = {0};
	struct ur_pkt p;
	struct ur_cm_msg cm;
	enum ur_decode_err e;
	int n;

	e = ur_pkt_decode(data, size, &p);
	if ((unsigned)e >= UR_DEC_NUM)
		abort();
	/* ICRC over anything, both ways; the IP header is the input's head. */
	ip.v6 = size & 1;
	(void)ur_icrc(&ip, data, size);
	/* The receive placement's check-and-copy: the same ICRC, and
	 * exactly the bytes after the BTH copied. */
	if (size >= UR_BTH_LEN && size <= sizeof(re)) {
		size_t n = size - UR_BTH_LEN;

		if (ur_icrc_copy(&ip, data, size, UR_BTH_LEN, re) !=
			    ur_icrc(&ip, data, size) ||
		    memcmp(re, data + UR_BTH_LEN, n))
			abort();
	}
	/* The IPv4 ID recovery the receive check uses: whatever ID it finds
	 * must make the ICRC match. */
	if (!ip.v6 && size >= 4) {
		uint32_t want = ur_icrc_load(data + size - 4);

		ip.ip_frag = 0x4000;
		if (ur_icrc_fix_ipv4_id(&ip, size - 4,
					ur_icrc(&ip, data, size - 4) ^ want) &&
		    ur_icrc(&ip, data, size - 4) != want)
			abort();
		ip.ip_id = 0;
		ip.ip_frag = 0;
	}
	(void)ur_icrc_raw(data, size < 48 ? size : 48, size & 1,
			  data + (size < 48 ? size : 48),
			  size - (size < 48 ? size : 48));
	(void)ur_cm_decode(data, size, &cm);
	if (e != UR_DEC_OK)
		return 0;
	/* A sealed packet's trailer sits between payload and pad. */
	if (p.payload + p.payload_len +
		    (p.trailer ? UR_CRYPT_TRAILER_LEN : 0) + p.h.pad +
		    UR_ICRC_LEN != data + size ||
	    (p.trailer && (!ur_bth_ext_crypt(data) ||
			   p.trailer != p.payload + p.payload_len)))
		abort();
	if ((p.mask & UR_HDR_DETH) && p.h.dqpn == 1)
		(void)ur_cm_decode(p.payload, p.payload_len, &cm);
	{
		char cls[128];

		(void)ur_pkt_class_str(&p, cls, sizeof(cls));
	}
	/* Round trip: the pad bytes and ICRC are not the encoder's business;
	 * nor is sealing (the transport's, fuzz_crypt). */
	if (size > sizeof(want) || p.trailer)
		return 0;
	n = ur_pkt_encode(re, sizeof(re), &p, p.payload, p.payload_len);
	if (n != (int)size)
		abort();
	memcpy(want, data, size);
	clear_reserved(want, &p);
	memset(want + size - UR_ICRC_LEN - p.h.pad, 0, p.h.pad + UR_ICRC_LEN);
	if (memcmp(re, want, size))
		abort();
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* TCP segments into a pcap for the iWARP tshark checks (tcp_pcap.h). */
#include "tcp_pcap.h"

#include <stdlib.h>
#include <string.h>

#include "ur_wire.h"

static uint16_t csum_fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static uint32_t csum_add(uint32_t s, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += ur_get16(p + i);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	return s;
}

void ur_tcp_pcap_init(struct ur_tcp_pcap *t, pcap_dumper_t *dump)
{
	t->dump = dump;
	t->seq[0] = 0x10000000u;
	t->seq[1] = 0x20000000u;
	t->frames = 0;
}

void ur_tcp_pcap_segment(struct ur_tcp_pcap *t, int d, uint8_t flags,
			 const uint8_t *data, size_t len)
{
	static const uint8_t mac[2][6] = {{0x52, 0x54, 0, 0x77, 0, 2},
					  {0x52, 0x54, 0, 0x77, 0, 3}};
	static uint8_t f[2048];
	uint8_t *ip = f + 14, *tcp = ip + 20, pseudo[12];
	struct pcap_pkthdr h = {0};
	uint32_t s;

	if (len > sizeof(f) - 54)
		abort(); /* a test cuts its segments smaller */
	memcpy(f, mac[!d], 6);
	memcpy(f + 6, mac[d], 6);
	ur_put16(f + 12, 0x0800);
	memset(ip, 0, 40);
	ip[0] = 0x45;
	ur_put16(ip + 2, (uint16_t)(40 + len));
	ur_put16(ip + 4, (uint16_t)t->frames);
	ur_put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 6;
	ip[12] = 10, ip[13] = 77, ip[15] = d ? 3 : 2;
	ip[16] = 10, ip[17] = 77, ip[19] = d ? 2 : 3;
	ur_put16(ip + 10, csum_fold(csum_add(0, ip, 20)));
	ur_put16(tcp, d ? 7174 : 40000);
	ur_put16(tcp + 2, d ? 40000 : 7174);
	ur_put32(tcp + 4, t->seq[d]);
	ur_put32(tcp + 8, (flags & 0x10) ? t->seq[!d] : 0);
	tcp[12] = 5 << 4;
	tcp[13] = flags;
	ur_put16(tcp + 14, 65535);
	if (len)
		memcpy(tcp + 20, data, len);
	memcpy(pseudo, ip + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = 6;
	ur_put16(pseudo + 10, (uint16_t)(20 + len));
	s = csum_add(csum_add(0, pseudo, 12), tcp, 20 + len);
	ur_put16(tcp + 16, csum_fold(s));
	t->seq[d] += (uint32_t)len + ((flags & 0x03) ? 1 : 0);
	h.ts.tv_sec = 1700000000;
	h.ts.tv_usec = ++t->frames;
	h.caplen = h.len = (bpf_u_int32)(54 + len);
	pcap_dump((u_char *)t->dump, &h, f);
}

/* SPDX-License-Identifier: MIT */
/*
 * TCP segments between two fixed endpoints written to a pcap, with valid
 * IPv4 and TCP checksums and running sequence numbers, so that tshark
 * reassembles the stream (the iWARP tshark checks). Side 0 is
 * 10.77.0.2:40000 (the initiator), side 1 10.77.0.3:7174.
 */
#ifndef UR_TCP_PCAP_H
#define UR_TCP_PCAP_H

#include <pcap/pcap.h>
#include <stddef.h>
#include <stdint.h>

struct ur_tcp_pcap {
	pcap_dumper_t *dump;
	uint32_t seq[2];
	int frames;
};

void ur_tcp_pcap_init(struct ur_tcp_pcap *t, pcap_dumper_t *dump);
/* One segment from side d with TCP flags and len bytes of data. */
void ur_tcp_pcap_segment(struct ur_tcp_pcap *t, int d, uint8_t flags,
			 const uint8_t *data, size_t len);

#endif

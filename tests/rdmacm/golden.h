/* SPDX-License-Identifier: MIT */
/*
 * The CM MADs of the golden rxe captures (shared/wire/rxe/rdma_cm_*.pcap):
 * a minimal classic-pcap reader (Ethernet + IPv4 + UDP 4791) that returns
 * the 256-byte MADs sent to QP1, in capture order.
 */
#ifndef CM_GOLDEN_H
#define CM_GOLDEN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ur_wire.h"

#define GOLDEN_MAX 16
struct golden_mad {
	uint8_t mad[UR_MAD_LEN];
	uint8_t src[4], dst[4];
};

static inline int golden_load(const char *name, struct golden_mad *out)
{
	const char *dir = getenv("UROCE_GOLDEN_DIR");
	char path[512];
	uint8_t hdr[24], rec[16], *frame;
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : ".", name);
	f = fopen(path, "rb");
	if (!f || fread(hdr, 1, sizeof(hdr), f) != sizeof(hdr))
		return f ? (fclose(f), -1) : -1;
	frame = malloc(65536);
	while (frame && fread(rec, 1, sizeof(rec), f) == sizeof(rec)) {
		uint32_t len = rec[8] | rec[9] << 8 | (uint32_t)rec[10] << 16 |
			       (uint32_t)rec[11] << 24;
		const uint8_t *ib;

		if (len > 65536 || fread(frame, 1, len, f) != len)
			break;
		if (len < 42 + 20 + UR_MAD_LEN || frame[12] != 0x08 ||
		    frame[13] != 0x00 || frame[23] != 17)
			continue;
		ib = frame + 42;
		if (ur_get24(ib + 5) != 1 || n == GOLDEN_MAX)
			continue;
		memcpy(out[n].mad, ib + 20, UR_MAD_LEN);
		memcpy(out[n].src, frame + 26, 4);
		memcpy(out[n].dst, frame + 30, 4);
		n++;
	}
	free(frame);
	fclose(f);
	return n;
}

#endif

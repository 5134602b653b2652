// SPDX-License-Identifier: MIT
/*
 * AETH syndrome helpers (IBTA vol. 1 9.7.5.1.2): table 43 (syndrome
 * layout), table 44 (end-to-end credit codes), table 45 (RNR NAK timer).
 */
#include <stdio.h>

#include "ur_wire.h"

/* IBTA table 45: RNR NAK timer field -> minimum delay in microseconds. */
static const uint32_t rnr_timer_us[32] = {
	[0] = 655360, [1] = 10,	      [2] = 20,	      [3] = 30,
	[4] = 40,     [5] = 60,	      [6] = 80,	      [7] = 120,
	[8] = 160,    [9] = 240,      [10] = 320,     [11] = 480,
	[12] = 640,   [13] = 960,     [14] = 1280,    [15] = 1920,
	[16] = 2560,  [17] = 3840,    [18] = 5120,    [19] = 7680,
	[20] = 10240, [21] = 15360,   [22] = 20480,   [23] = 30720,
	[24] = 40960, [25] = 61440,   [26] = 81920,   [27] = 122880,
	[28] = 163840, [29] = 245760, [30] = 327680,  [31] = 491520,
};

/* IBTA table 44: credit count code -> number of messages (0x1f: invalid). */
static const uint32_t credit_count[32] = {
	[0] = 0,      [1] = 1,	     [2] = 2,	    [3] = 3,
	[4] = 4,      [5] = 6,	     [6] = 8,	    [7] = 12,
	[8] = 16,     [9] = 24,	     [10] = 32,     [11] = 48,
	[12] = 64,    [13] = 96,     [14] = 128,    [15] = 192,
	[16] = 256,   [17] = 384,    [18] = 512,    [19] = 768,
	[20] = 1024,  [21] = 1536,   [22] = 2048,   [23] = 3072,
	[24] = 4096,  [25] = 6144,   [26] = 8192,   [27] = 12288,
	[28] = 16384, [29] = 24576,  [30] = 32768,  [31] = UINT32_MAX,
};

/* IBTA table 43: NAK codes. */
static const char *const nak_names[32] = {
	[UR_NAK_PSN_SEQ_ERR] = "PSN_SEQ_ERR",
	[UR_NAK_INV_REQ] = "INV_REQ",
	[UR_NAK_REM_ACCESS_ERR] = "REM_ACCESS_ERR",
	[UR_NAK_REM_OP_ERR] = "REM_OP_ERR",
	[UR_NAK_INV_RD_REQ] = "INV_RD_REQ",
};

uint8_t ur_aeth_ack(uint8_t credits)
{
	return (uint8_t)((UR_AETH_ACK << 5) | (credits & 0x1f));
}

uint8_t ur_aeth_rnr_nak(uint8_t timer)
{
	return (uint8_t)((UR_AETH_RNR_NAK << 5) | (timer & 0x1f));
}

uint8_t ur_aeth_nak(enum ur_nak_code code)
{
	return (uint8_t)((UR_AETH_NAK << 5) | ((unsigned)code & 0x1f));
}

uint32_t ur_rnr_timer_us(uint8_t code)
{
	return rnr_timer_us[code & 0x1f];
}

uint32_t ur_credit_count(uint8_t code)
{
	return credit_count[code & 0x1f];
}

const char *ur_aeth_str(uint8_t syn, char *buf, size_t len)
{
	uint8_t v = ur_aeth_value(syn);

	switch (ur_aeth_kind(syn)) {
	case UR_AETH_ACK:
		snprintf(buf, len, "ACK");
		break;
	case UR_AETH_RNR_NAK:
		snprintf(buf, len, "RNR_NAK(%uus)", ur_rnr_timer_us(v));
		break;
	case UR_AETH_NAK:
		if (nak_names[v])
			snprintf(buf, len, "NAK(%s)", nak_names[v]);
		else
			snprintf(buf, len, "NAK(0x%02x)", v);
		break;
	default:
		snprintf(buf, len, "RSVD(0x%02x)", syn);
		break;
	}
	return buf;
}

// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: a CM MAD as uroce's librdmacm reads it from QP1
 * (src/rdmacm/cm_mad.c): any 256 bytes (shorter inputs are zero-padded,
 * as a short MAD is dropped before). The validity check, every field and
 * byte range of every message, and the rdma_cm header must stay inside
 * the MAD; writing back what was read must leave the MAD unchanged.
 * The same MAD also goes to the readers of uroce's vendor-class hellos
 * (selective repeat, congestion control, encryption) that share QP1 with
 * the CM.
 */
#include <stdlib.h>
#include <string.h>

#include "ur_cm_mad.h"
#include "ur_crypt.h"
#include "ur_transport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *mad = malloc(UR_MAD_LEN), copy[UR_MAD_LEN];
	uint16_t attr;
	size_t len;
	struct cma_hdr h;

	if (!mad)
		return 0;
	memset(mad, 0, UR_MAD_LEN);
	memcpy(mad, data, size < UR_MAD_LEN ? size : UR_MAD_LEN);
	{
		struct ur_sr_hello sh;
		struct ur_crypt_hello ch;

		/* Given the input's own length: a short hello is refused. */
		(void)ur_sr_hello_parse(data, size, &sh);
		(void)ur_cc_hello_parse(data, size, &sh);
		(void)ur_crypt_hello_parse(data, size, &ch);
	}
	(void)ur_cm_mad_valid(mad, size);
	attr = ur_cm_mad_attr(mad);
	(void)ur_cm_attr_name(attr);
	memcpy(copy, mad, UR_MAD_LEN);
	for (int f = 0; f < CMF_NUM; f++) {
		uint64_t v = ur_cm_get(mad, (enum cm_field)f);

		(void)ur_cm_field_name((enum cm_field)f);
		if (ur_cm_has(attr, (enum cm_field)f) &&
		    ur_cm_set(mad, (enum cm_field)f, v))
			abort();
	}
	if (memcmp(copy, mad, UR_MAD_LEN))
		abort(); /* a field's read and write disagree */
	for (int b = CMB_P_LOCAL_GID; b <= CMB_PDATA; b++) {
		uint8_t *p = ur_cm_blob(mad, (enum cm_blob)b, &len);

		if (p && (p < mad || p + len > mad + UR_MAD_LEN))
			abort();
		if (p && b == CMB_PDATA && len >= CMA_HDR_LEN &&
		    !ur_cma_hdr_get(p, &h)) {
			uint8_t re[CMA_HDR_LEN];

			/* The header's fields round-trip (reserved bytes
			 * aside, which the writer zeroes). */
			ur_cma_hdr_put(re, &h);
			if (ur_cma_hdr_get(re, &h))
				abort();
		}
	}
	free(mad);
	return 0;
}

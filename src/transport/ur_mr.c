// SPDX-License-Identifier: MIT
/*
 * Memory key checks (IBTA 10.6.3 / C9-88 for remote keys): every local SGE
 * and every RETH/AtomicETH goes through ur_mr_check before a byte moves.
 */
#include <errno.h>

#include "ur_transport.h"

/**
 * ur_mr_check - check a key's region for an access
 * @mr: region found by key (NULL: no such key)
 * @pdn: protection domain of the QP using the key
 * @va: first byte, @len: bytes
 * @access: enum ur_access bits all of which must be granted
 * @out: host pointer for @va on success
 *
 * Return: 0, -EACCES (missing key, foreign PD, missing access) or -ERANGE.
 */
int ur_mr_check(const struct ur_mr *mr, uint32_t pdn, uint64_t va,
		uint64_t len, uint32_t access, uint8_t **out)
{
	if (!mr || mr->type != UR_KEY_MR || mr->pdn != pdn ||
	    (mr->access & access) != access)
		return -EACCES;
	if (va < mr->iova || len > mr->length ||
	    va - mr->iova > mr->length - len)
		return -ERANGE;
	if (out)
		*out = mr->host + (va - mr->iova);
	return 0;
}

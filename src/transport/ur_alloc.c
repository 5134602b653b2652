// SPDX-License-Identifier: MIT
/*
 * Queue rings from the host's allocator (struct ur_alloc): a parent
 * domain's alloc/free callbacks for the QPs, CQs and SRQs created on it,
 * calloc for everything else and whenever the callback asks for the
 * default (UR_ALLOC_DEFAULT).
 */
#include <stdlib.h>
#include <string.h>

#include "ur_transport.h"

void *ur__ring_alloc(const struct ur_alloc *a, size_t size, uint32_t kind,
		     bool *custom)
{
	void *p;

	*custom = false;
	if (a && a->alloc) {
		p = a->alloc(a->arg, size, UR_RING_ALIGN, kind);
		if (p != UR_ALLOC_DEFAULT) {
			/* The callback should zero it (rdma-core's contract);
			 * a ring must start empty whoever wrote the callback. */
			if (p) {
				memset(p, 0, size);
				*custom = true;
			}
			return p;
		}
	}
	return calloc(1, size);
}

void ur__ring_free(const struct ur_alloc *a, void *p, uint32_t kind,
		   bool custom)
{
	if (!p)
		return;
	if (custom)
		a->free(a->arg, p, kind);
	else
		free(p);
}

/* SPDX-License-Identifier: MIT */
/*
 * uroce extensions to libibverbs (in the spirit of mlx5dv.h): functions only
 * our drop-in libibverbs.so.1 exports, at the version node UROCE_1.0.
 * Check at run time with dlsym() if the binary may also run on real
 * rdma-core.
 */
#ifndef UROCE_UROCE_H
#define UROCE_UROCE_H

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * uroce_query_icrc_mode - How incoming ICRCs are checked on a context
 * @context: an open uroce device context
 *
 * Returns a static string ("raw": the engine sees IP headers and verifies
 * every ICRC; "udp-csum": it relies on the UDP checksum), or NULL with errno
 * set (EINVAL: not a uroce context).
 */
const char *uroce_query_icrc_mode(struct ibv_context *context);

#ifdef __cplusplus
}
#endif

#endif

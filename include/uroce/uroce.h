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
#include <stdbool.h>
#include <sys/socket.h>

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

/*
 * Private to uroce's librdmacm (src/rdmacm): QP1 of a context. The handler
 * gets each received MAD (256 bytes) with the sender's address and UDP port
 * and returns 0 (consumed), a slot (1..255) of a sibling process on the
 * same address to forward it to, or -1 (forward to every sibling); a MAD
 * forwarded by a sibling (@from_sibling) is never forwarded again. A NULL
 * @fn detaches (and waits for a running handler). Return 0 or an errno.
 */
typedef int (*uroce_gsi_rx_fn)(void *arg, const uint8_t *mad, size_t len,
			       const struct sockaddr *src, bool from_sibling);
int uroce_gsi_attach(struct ibv_context *context, uroce_gsi_rx_fn fn,
		     void *arg);
/* @slot: the sibling process the MAD is for when @dst is the context's own
 * address (0: unknown). */
int uroce_gsi_send(struct ibv_context *context, const struct sockaddr *dst,
		   uint8_t slot, const void *mad, size_t len);
/* The context's slot on its address (1..255), or -1 with errno. */
int uroce_context_slot(struct ibv_context *context);

#ifdef __cplusplus
}
#endif

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Bulk copies without glibc's rep movsb (copy.c), for every layer that
 * moves payloads: the shared-memory path (io), placement on receive, the
 * collectives' staging slots. No RDMA in here: liburoce_coll links it and
 * still runs on any NIC.
 */
#ifndef UR_COPY_H
#define UR_COPY_H

#include <stddef.h>

/* Bulk loops are built for AVX2 and for the baseline, and the loader picks
 * one by CPU (an ifunc). gcc only, and not under ASan, whose runtime is not
 * up yet when the loader runs resolvers. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
	!defined(__SANITIZE_ADDRESS__)
#define UR_VEC __attribute__((target_clones("avx2", "default")))
#else
#define UR_VEC
#endif

/* memcpy and memmove for bulk data. */
void ur_copy(void *restrict dst, const void *restrict src, size_t n);
void ur_move(void *dst, const void *src, size_t n);
/* ur_copy that bypasses the cache (copy.c): for destinations nobody reads
 * soon, which callers take to be those of copies or messages of at least
 * UR_STREAM_MIN bytes. */
#define UR_STREAM_MIN (1u << 20)
void ur_copy_stream(void *restrict dst, const void *restrict src, size_t n);

#endif

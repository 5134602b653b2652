/* SPDX-License-Identifier: MIT */
/*
 * The raw Ethernet port of a device context (src/io/raw.c): an AF_PACKET
 * socket on the device's interface and a thread that hands each frame
 * received there to the layer above. It carries raw packet QPs
 * (IBV_QPT_RAW_PACKET); which QP a frame is for is decided above it
 * (src/verbs/raw.c, flow rules in src/verbs/flow_match.c).
 */
#ifndef UR_RAW_H
#define UR_RAW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct ur_raw;

/* Called on the port's thread, one frame at a time, in arrival order. */
typedef void (*ur_raw_rx_fn)(void *arg, const uint8_t *frame, size_t len);

/* Open the port on interface @ifindex and start its thread. Frames this
 * socket sends itself are not handed back. -EPERM without CAP_NET_RAW
 * (logged), -ENODEV for ifindex 0. */
int ur_raw_open(unsigned int ifindex, ur_raw_rx_fn fn, void *arg,
		struct ur_raw **out);
/* Stop the thread (after this no callback runs) and close the socket. */
void ur_raw_close(struct ur_raw *r);
/* Put one whole frame of @len bytes, gathered from @iov (Ethernet header
 * first), on the wire: 0 or -errno (-EMSGSIZE for a frame longer than the
 * interface takes, -EINVAL for one shorter than an Ethernet header). */
int ur_raw_sendv(struct ur_raw *r, const struct iovec *iov, int n, size_t len);
/* A destination MAC address pattern: a frame matches when
 * (destination & mask) == (mac & mask). */
struct ur_raw_match {
	uint8_t mac[6], mask[6];
};
enum { UR_RAW_FILTER_MAX = 32 }; /* patterns a kernel filter holds */

/* Let only frames whose destination matches one of @m (@n of them) reach
 * the socket, or every frame when @all (or @n is over UR_RAW_FILTER_MAX).
 * The kernel drops the rest before they are queued, so the machine's
 * other traffic on the interface costs the port nothing. At open no frame
 * passes. 0 or -errno. */
int ur_raw_filter(struct ur_raw *r, const struct ur_raw_match *m, int n,
		  bool all);
/* Frames received and not handed up (longer than the receive buffer). */
uint64_t ur_raw_truncated(const struct ur_raw *r);

#endif

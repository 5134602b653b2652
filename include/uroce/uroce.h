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
 * Every incoming ICRC is checked; the IPv4 ID and DF flag it covers, which
 * a UDP socket does not show, are recovered from it. Returns a static
 * string naming what a packet that fails is (UROCE_ICRC): "auto" (dropped),
 * "strict" (dropped, and so is one whose ID is not one uroce sends) or
 * "off" (delivered, counted as rx_unverified_icrc); or NULL with errno set
 * (EINVAL: not a uroce context).
 */
const char *uroce_query_icrc_mode(struct ibv_context *context);

/*
 * Congestion control (docs/cc.md). DCQCN is on by default; every parameter
 * can be set per device (environment UROCE_CC=dcqcn|none,
 * UROCE_DCQCN_PROFILE=uroce|mlx5 for a whole set, UROCE_DCQCN_<NAME> for
 * one, e.g. UROCE_DCQCN_RATE_TIMER_US) and per QP here. A profile is a
 * table of values (docs/cc.md "Profiles"): to give one QP another profile,
 * write its values into the struct. Ranges and the default profile's
 * values (for 100 Gbit/s; a device that does not know its link's rate uses
 * mlx5's rates) are in the comments: (min..max, default).
 */
/* Swift (UROCE_CC_SWIFT) and predict (UROCE_CC_PREDICT: Swift's window on
 * a predicted delay) take their parameters from the device
 * (UROCE_SWIFT_<NAME>): the fields below are DCQCN's. */
enum uroce_cc_algo {
	UROCE_CC_NONE = 0, UROCE_CC_DCQCN = 1, UROCE_CC_SWIFT = 2,
	UROCE_CC_PREDICT = 3
};

struct uroce_cc_params {
	uint32_t algo;            /* enum uroce_cc_algo */
	uint32_t g_recip;         /* G_RECIP: g = 1/g_recip (1..65536, 256) */
	uint32_t alpha_timer_us;  /* ALPHA_TIMER_US: K (1..131071, 55) */
	uint32_t rate_timer_us;   /* RATE_TIMER_US: T (1..10000000, 10) */
	uint32_t byte_counter;    /* BYTE_COUNTER: B (1024..2^30, 65536) */
	uint32_t f;               /* F: fast recovery stages (1..64, 2) */
	uint32_t ai_mbps;         /* AI_MBPS: additive increase (1..100000, 1000) */
	uint32_t hai_mbps;        /* HAI_MBPS: hyper increase (1..100000, 5000) */
	uint32_t min_rate_mbps;   /* MIN_RATE_MBPS (1..100000, 1000) */
	uint32_t min_dec_pct;     /* MIN_DEC_PCT: a cut keeps >= this % (0..100, 50) */
	uint32_t initial_alpha;   /* INITIAL_ALPHA: x/1024 (0..1024, 1024) */
	uint32_t cnp_interval_us; /* CNP_INTERVAL_US: receiver side (0..1000000, 10) */
	uint32_t first_cnp_mbps;  /* FIRST_CNP_MBPS: 0 = the measured rate (0..1000000, 5000) */
};

/**
 * uroce_qp_query_cc - A QP's congestion-control parameters
 * @qp: a uroce QP
 * @params: filled on success
 *
 * Returns 0 or an errno (EINVAL: not a uroce QP).
 */
int uroce_qp_query_cc(struct ibv_qp *qp, struct uroce_cc_params *params);
/**
 * uroce_qp_set_cc - Replace a QP's congestion-control parameters
 * @qp: a uroce QP
 * @params: all fields (start from uroce_qp_query_cc)
 *
 * Restarts the QP's rate limiter. Returns 0, EINVAL (not a uroce QP,
 * unknown algorithm) or ERANGE (a parameter out of range: a message naming
 * it and its range goes to stderr).
 */
int uroce_qp_set_cc(struct ibv_qp *qp, const struct uroce_cc_params *params);

/*
 * Selective repeat, a uroce wire extension (docs/wire.md "Extensions",
 * docs/transport.md "Selective repeat"). Off by default (UROCE_SR=0).
 * Negotiated (UROCE_SR=auto, enable 2): a QP sends a hello MAD to its peer's QP1 and
 * uses selective repeat (and spraying, UROCE_PATHS) only once a uroce
 * peer answered; towards rxe or a hardware RNIC it speaks plain go-back-N
 * RoCEv2, byte for byte. Enabled on both ends of an RC connection, a
 * receiver keeps requests that arrive out of order and the sender repeats
 * only what was lost. enable 1 (UROCE_SR=1) offers it to every peer (one
 * reserved BTH bit on our requests, which standard peers ignore); 0
 * (UROCE_SR=0) turns it off. UROCE_SR_WINDOW, UROCE_SR_REORDER_US tune it.
 */
struct uroce_sr_params {
	uint32_t enable;      /* 0 off, 1 on, 2 negotiated */
	uint32_t window;      /* PSNs held ahead of the expected one (1..65536, 0 = 256) */
	uint32_t reorder_ns;  /* a gap is NAKed once this old (0: at once) */
	uint32_t pool_pkts;   /* ignored per QP (device: UROCE_SR_POOL) */
};
/**
 * uroce_qp_query_sr - A QP's selective-repeat parameters and state
 * @qp: a uroce QP
 * @params: filled on success
 * @state: if not NULL: bit 0 enabled, bit 1 the peer holds our requests,
 *         bit 2 the peer's requests offer it, bit 3 negotiated (the
 *         peer's hello arrived)
 *
 * Returns 0 or EINVAL (not a uroce QP).
 */
int uroce_qp_query_sr(struct ibv_qp *qp, struct uroce_sr_params *params,
		      uint32_t *state);
/**
 * uroce_qp_set_sr - Enable, disable or tune selective repeat on an RC QP
 * @qp: a uroce RC QP (before it carries traffic, on both ends)
 * @params: all fields (start from uroce_qp_query_sr)
 *
 * Returns 0 or EINVAL (not a uroce RC QP, a value out of range).
 */
int uroce_qp_set_sr(struct ibv_qp *qp, const struct uroce_sr_params *params);

/**
 * uroce_qp_set_jumbo - Offer jumbo packets on an RC QP: 2 negotiated, 1
 * always, 0 never
 * @qp: a uroce RC QP (before it carries traffic, on both ends)
 * @on: 0, 1 or 2
 *
 * A uroce extension (docs/wire.md "Jumbo packets"). With it on at both
 * ends and a path MTU of 4096, SENDs and WRITEs travel in 16 KiB packets
 * over links that carry them (loopback), or 8 KiB (9000-byte Ethernet),
 * once the peer's answers said it takes them; a standard peer never says
 * so. 2 (the default, UROCE_JUMBO=auto, on links that carry them) offers
 * them only once the peer has shown it is uroce (its selective-repeat or
 * congestion-control hello), so that a standard peer sees exactly plain
 * RoCEv2; 1 offers them on every request (a reserved bit set towards any
 * peer). Selective repeat holds and resends jumbo packets.
 *
 * Returns 0 or EINVAL (not a uroce RC QP, @on not 0, 1 or 2).
 */
int uroce_qp_set_jumbo(struct ibv_qp *qp, int on);
/**
 * uroce_qp_query_jumbo - Jumbo packets of a QP
 * @qp: a uroce QP
 * @state: bit 0 enabled, bit 1 the peer takes them (our SENDs and WRITEs
 *         use them), bit 2 the peer's requests offer them, bit 3
 *         negotiated (@on 2 in uroce_qp_set_jumbo); bits 8..15 the
 *         packet size our SENDs and WRITEs use, in KiB (0: the path MTU)
 *
 * Returns 0 or EINVAL (not a uroce QP).
 */
int uroce_qp_query_jumbo(struct ibv_qp *qp, uint32_t *state);

/**
 * uroce_context_set_poller_stays - Say that the context's pollers stay
 * @context: a uroce device context
 * @on: 1: a thread that polls a CQ of this context keeps polling it, or
 *      blocks on its completion channel (ibv_req_notify_cq first), until
 *      its next completion; 0 (the default): it may go and wait elsewhere
 *      after a completion, e.g. spin on memory for an RDMA WRITE.
 *
 * While a thread polls, it receives for the context itself and the
 * engine thread keeps off the socket. By default a poller that often
 * comes back late after a completion hands the socket back to the engine
 * thread at each completion (a wake-up), since only the engine would place
 * a WRITE it may be spinning on. A program whose pollers stay (the
 * collectives library) spares those wake-ups; one that promises it wrongly
 * sees such WRITEs land up to about a millisecond (the engine thread's next
 * look) late. Counter poll_handover counts the hand-overs.
 *
 * Returns 0 or EINVAL (not a uroce context, @on not 0 or 1).
 */
int uroce_context_set_poller_stays(struct ibv_context *context, int on);

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
/* The same on port @port_num of a device with several ports (the two
 * above are port 1's): each port has its QP1 on its own address; attaching
 * opens the port's engine. EINVAL: no such port. */
int uroce_gsi_attach_port(struct ibv_context *context, uint8_t port_num,
			  uroce_gsi_rx_fn fn, void *arg);
int uroce_gsi_send_port(struct ibv_context *context, uint8_t port_num,
			const struct sockaddr *dst, uint8_t slot,
			const void *mad, size_t len);
/*
 * iWARP (docs/rdmacm.md "iWARP"): how our librdmacm hands a QP of an
 * iWARP device (UROCE_IWARP=1: IBV_TRANSPORT_IWARP) its connection. @fd is
 * a connected TCP socket; on success it is the QP's from then on (closed
 * with it). The initiator's MPA Request carries @pd; the responder gets
 * the initiator's Request bytes read so far (@req: at least the whole
 * Request) and answers with an MPA Reply carrying @pd. @ird/@ord: the
 * application's responder resources and initiator depth (RFC 6581). @fn
 * hears, on the stream's thread, that the connection is established,
 * rejected by the peer (its Reply's private data), failed (-errno), or
 * disconnected (the stream ended). 0 or an errno value.
 */
enum uroce_iw_event {
	UROCE_IW_ESTABLISHED,
	UROCE_IW_REJECTED,
	UROCE_IW_FAILED,
	UROCE_IW_DISCONNECTED,
};
typedef void (*uroce_iw_fn)(void *arg, enum uroce_iw_event ev, int err,
			    const void *pd, size_t pd_len);
int uroce_iw_connect(struct ibv_qp *qp, int fd, const void *pd,
		     uint8_t pd_len, uint8_t ird, uint8_t ord, uroce_iw_fn fn,
		     void *arg);
int uroce_iw_accept(struct ibv_qp *qp, int fd, const void *req,
		    size_t req_len, const void *pd, uint8_t pd_len, uint8_t ird,
		    uint8_t ord, uroce_iw_fn fn, void *arg);
/* rdma_disconnect: WQEs flush, TCP's FIN follows the last bytes;
 * UROCE_IW_DISCONNECTED comes with the peer's FIN. */
int uroce_iw_disconnect(struct ibv_qp *qp);

/* The context's slot on its address (1..255), or -1 with errno; every
 * port of a device has port 1's. */
int uroce_context_slot(struct ibv_context *context);

/*
 * Parent domains (ibv_alloc_parent_domain): the resource_type their alloc
 * and free callbacks receive. The upper 32 bits are uroce's driver id
 * (0x5552, "UR": uroce has no kernel driver, so none of the kernel's
 * rdma_driver_id values), the lower the kind of ring: a QP's send or
 * receive queue, a CQ, an SRQ. Buffers are asked with 64-byte alignment.
 */
#define UROCE_RES_TYPE_BASE ((uint64_t)0x5552 << 32)
#define UROCE_RES_TYPE_QP (UROCE_RES_TYPE_BASE | 1)
#define UROCE_RES_TYPE_CQ (UROCE_RES_TYPE_BASE | 2)
#define UROCE_RES_TYPE_SRQ (UROCE_RES_TYPE_BASE | 3)

#ifdef __cplusplus
}
#endif

#endif

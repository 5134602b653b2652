/* SPDX-License-Identifier: MIT */
/*
 * uroce transport, iWARP part: one RDMAP/DDP/MPA connection (RFC 5040,
 * 5041, 5044, 6581) over a reliable byte stream, pure like the rest of the
 * transport.
 *
 * TCP stream bytes and `now` go in (any segmentation), stream bytes come
 * out (the host writes them to its socket and says how many it wrote),
 * completions go to the QP's CQs and payloads are placed into registered
 * memory. No socket, no clock, no thread here.
 *
 * What the protocols share with RoCE is shared code: the WQE and SGE
 * structures, the CQ and its entries (struct ur_cqe, ur__cq_push), the
 * key table and its checks (ur_rkey_check: an iWARP STag is the rkey,
 * ur__sge_resolve for local keys), window invalidation (ur__mw_invalidate).
 * What differs is here: framing (MPA FPDUs, DDP segments), reliability
 * (TCP's: no PSN, no ACK, no retransmission; a send WQE completes once the
 * host has handed its last byte to TCP, as siw does) and the connection
 * (the MPA Request/Reply carrying the ULP's private data).
 *
 * The host creates the struct ur_qp (ur_qp_create: QPN, PD, CQs, caps) and
 * a connection on it; from then on it posts through ur_iw_post_send/recv.
 * Not thread-safe: the host serialises the calls of one connection.
 */
#ifndef UR_IW_H
#define UR_IW_H

#include "ur_iwarp.h"
#include "ur_transport.h"

enum ur_iw_state {
	UR_IWS_REQ_WAIT,  /* responder: waiting for the MPA Request */
	UR_IWS_REQ_RCVD,  /* responder: Request in, the host accepts/rejects */
	UR_IWS_REP_WAIT,  /* initiator: Request sent, waiting for the Reply */
	UR_IWS_RTR_WAIT,  /* responder: accepted, waiting for the RTR (6581) */
	UR_IWS_RTS,       /* connected: data moves */
	UR_IWS_ERROR,     /* Terminate sent or received, or the stream lost */
	UR_IWS_CLOSED,    /* refused or rejected: no RDMAP at all */
	UR_IWS_IDLE,      /* made with cfg.idle: no role yet (ur_iw_start) */
};
const char *ur_iw_state_name(uint32_t state);

struct ur_iw_cfg {
	bool initiator;
	/* Both roles: CRC and markers wanted/accepted, IRD/ORD of the
	 * application, device limits, relaxed negotiation (siw's defaults
	 * in ur_iw_cfg_siw). */
	struct ur_mpa_policy pol;
	/* Initiator: offer RTR (RFC 6581 peer-to-peer) with these types. */
	bool p2p, rtr_write, rtr_read;
	/* Private data of the Request (initiator); the responder's goes
	 * with ur_iw_accept/reject. */
	const uint8_t *pd;
	uint16_t pd_len;
	/* Terminate Control layout of what we send and how we read the
	 * peer's (docs/wire.md "iWARP": siw's bit-fields or RFC 5040). */
	enum ur_term_layout term_layout;
	uint32_t emss;          /* TCP MSS: the MULPDU (RFC 5044 8) */
	uint32_t tx_max;        /* stream bytes held for the host, at most
	                         * about this many (0: 256 KiB) */
	uint64_t mpa_timeout_ns; /* Request/Reply wait (0: none) */
	/* ur_iw_conn_new only: make the connection IDLE, with no role
	 * yet. A QP of an iWARP device exists before rdma_cm knows which
	 * side it is and takes receives then (rping posts one before
	 * rdma_connect); ur_iw_start gives the role later. */
	bool idle;
};
/* siw 6.1's settings: no CRC asked, none refused, no markers, relaxed
 * IRD/ORD, limits 128, siw's Terminate layout, MSS 1448. */
void ur_iw_cfg_siw(struct ur_iw_cfg *cfg, bool initiator);

#define UR_IW_IRQ_MAX 128 /* READ Requests held (siw's max_qp_rd_atom) */

/* What a Terminate said (sent or received), for the host and the tests. */
struct ur_iw_term_info {
	bool valid;
	uint8_t layer, etype, ecode;
};

#define UR_IW_COUNTERS(X)                                                    \
	X(tx_fpdus) X(rx_fpdus) X(tx_bytes) X(rx_bytes) X(rx_placed)         \
	X(tx_term) X(rx_term) X(rx_discarded)

struct ur_iw_counters {
#define UR_X(n) uint64_t n;
	UR_IW_COUNTERS(UR_X)
#undef UR_X
};

struct ur_iw_conn;

/* A connection on @qp (an RC QP with no SRQ; -EINVAL otherwise, -ENOMEM).
 * An initiator's Request is ready to send at once (ur_iw_tx_peek). The QP
 * is iWARP from then on (qp->proto = &ur_proto_iwarp): ur_qp_post_send,
 * ur_qp_post_recv and ur_qp_modify reach this connection. Free the
 * connection before the QP; the QP is RoCEv2 again after. */
int ur_iw_conn_new(struct ur_qp *qp, const struct ur_iw_cfg *cfg,
		   uint64_t now, struct ur_iw_conn **out);
void ur_iw_conn_free(struct ur_iw_conn *c);
/* An IDLE connection takes its role: @cfg as for ur_iw_conn_new (its
 * tx_max is the one the connection was made with). 0, or -EINVAL when
 * not IDLE or @cfg is wrong. Receives posted while IDLE are kept, sends
 * wait for RTS. */
int ur_iw_start(struct ur_iw_conn *c, const struct ur_iw_cfg *cfg,
		uint64_t now);

uint32_t ur_iw_state(const struct ur_iw_conn *c);
/* The negotiated connection (valid from RTR_WAIT/RTS on). */
const struct ur_mpa_conn *ur_iw_neg(const struct ur_iw_conn *c);
/* The peer's Request or Reply (valid from REQ_RCVD / after the Reply):
 * its decoded fields and its ULP private data (after the 6581 word). */
const struct ur_mpa_rr *ur_iw_peer_rr(const struct ur_iw_conn *c);
/* Terminate we sent / the peer sent. */
const struct ur_iw_term_info *ur_iw_term_sent(const struct ur_iw_conn *c);
const struct ur_iw_term_info *ur_iw_term_rcvd(const struct ur_iw_conn *c);
const struct ur_iw_counters *ur_iw_counters(const struct ur_iw_conn *c);
/* Why the connection failed (0 while it has not): -ECONNREFUSED (a Reply
 * with R, or ours), -EPROTO, -ETIMEDOUT, -ECONNRESET (Terminate, FIN). */
int ur_iw_error(const struct ur_iw_conn *c);

/* Responder in REQ_RCVD (the Request's fields and private data in
 * ur_iw_peer_rr): accept with private data @pd, the IRD/ORD being the
 * policy's (cfg.pol) as RFC 6581 adjusts them, or reject (an MPA Reply
 * with R and @pd, then the host closes). 0, -EINVAL (wrong state, PD too
 * long), or 1 when the policy itself refuses the Request (markers, CRC,
 * IRD/ORD: the Reply with R is queued). */
int ur_iw_accept(struct ur_iw_conn *c, const uint8_t *pd, uint16_t pd_len,
		 uint64_t now);
int ur_iw_reject(struct ur_iw_conn *c, const uint8_t *pd, uint16_t pd_len,
		 uint64_t now);

/* Stream bytes in. 0, or the error the connection is now in (the host
 * then writes out what ur_iw_tx_peek still has, and closes). */
int ur_iw_rx(struct ur_iw_conn *c, const uint8_t *p, size_t n, uint64_t now);
/* Bytes waiting for the socket: a pointer and a length (0: none). */
size_t ur_iw_tx_peek(const struct ur_iw_conn *c, const uint8_t **p);
/* The host wrote @n of them: send WQEs whose last byte went complete. */
void ur_iw_tx_done(struct ur_iw_conn *c, size_t n, uint64_t now);
/* Whether the host should close once the bytes are out (error, reject). */
bool ur_iw_want_close(const struct ur_iw_conn *c);
/* The TCP connection ended (FIN, RST, error) or the host gives up:
 * WQEs flush, state ERROR (CLOSED before RTS). */
void ur_iw_close(struct ur_iw_conn *c, uint64_t now);
/* MPA timeout; the next deadline (UINT64_MAX: none). */
void ur_iw_timer(struct ur_iw_conn *c, uint64_t now);
uint64_t ur_iw_deadline(const struct ur_iw_conn *c);

/*
 * Posting, as ur_qp_post_send/recv. iWARP carries RDMA WRITE, READ, SEND
 * (UR_SEND_SOLICITED: SEND with SE) and SEND_WITH_INV (imm_data: the
 * STag); immediate data, atomics, memory-window binds and local
 * invalidation have no iWARP wire form here: -EOPNOTSUPP. A READ has one
 * SGE (siw's max_sge_rd) and needs an ORD above 0: -EINVAL otherwise.
 * WQEs posted in ERROR/CLOSED flush at once.
 */
int ur_iw_post_send(struct ur_iw_conn *c, const struct ur_send_wr *wr,
		    uint64_t now);
int ur_iw_post_recv(struct ur_iw_conn *c, const struct ur_recv_wr *wr,
		    uint64_t now);

#endif

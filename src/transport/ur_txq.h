/* SPDX-License-Identifier: MIT */
/*
 * Transmit policy, pure: the queue a host's thread fills with the packets
 * the transport makes until the host sends them, and the rules for which
 * packets may wait, merge or leave first. The UDP engine, the shared-memory
 * path, the simulator and the transport tests all run it; a host only turns
 * a queue into system calls (or events) and then calls ur_txq_reset().
 *
 * - A plain ACK waiting in a queue is replaced by a newer one of the same
 *   QP to the same peer by the same route: ACKs are cumulative (9.7.5.1.2).
 * - Anything else makes the queue "ordered": it must leave before its QP's
 *   lock is released, or a later PSN from another thread could pass it.
 * - Doorbell holds: a QP that streams one-packet messages with many PSNs in
 *   flight keeps them (ur_txq_hold_due) and sends them together.
 * - ACKs that find their QP's lock taken wait in the QP's ur_ackq for the
 *   holder (as a socket's backlog does for a busy socket).
 */
#ifndef UR_TXQ_H
#define UR_TXQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ur_transport.h"

#define UR_TXQ_SLOTS 64
/* Largest IB part a queue holds: a jumbo packet + headers + ICRC. A slot
 * is that big; only the bytes written are touched. */
#define UR_TXQ_PKT_MAX (UR_JUMBO_MTU + 256)
/* Doorbell holds: a QP holds a post's packet when it streams one-packet
 * messages and this many PSNs, this post's and those sent before it, are
 * unacknowledged; it keeps them while this many sent ones are ... */
#define UR_TXQ_HOLD_INFLIGHT 4
/* ... and sends them once this many wait (one UDP GSO send). */
#define UR_TXQ_HOLD_MAX 32
/* Plain ACKs a busy QP keeps for its lock's holder (ur_ackq). */
#define UR_ACKQ_LEN 16

struct ur_txq_slot {
	struct ur_pktbuf pb;
	void *host;   /* the host (device) that made it */
	void *conn;   /* the host's connection for it (a connected socket) */
	int route;    /* the host's socket: only packets of one route merge */
	bool ready;   /* made, not yet sent nor superseded */
	uint8_t data[UR_TXQ_PKT_MAX];
};

struct ur_txq {
	unsigned int used; /* slots handed out */
	bool ordered;      /* holds a packet whose order on the wire matters */
	struct ur_txq_slot slot[UR_TXQ_SLOTS];
};

/* The largest plain ACK: sealed, with the encryption trailer. */
#define UR_ACK_MAX (UR_BTH_LEN + UR_AETH_LEN + UR_CRYPT_TRAILER_LEN + UR_ICRC_LEN)

/* An ACK that only acknowledges (9.7.5.1), no NAK: a later one of the same
 * QP supersedes it. Sealed or not (docs/wire.md "Encryption": the AETH is
 * additional data, readable; the QP verifies it before use). */
static inline bool ur_pkt_is_plain_ack(const uint8_t *d, size_t len)
{
	size_t want = UR_BTH_LEN + UR_AETH_LEN + UR_ICRC_LEN;

	if (len >= UR_BTH_LEN && ur_bth_ext_crypt(d))
		want += UR_CRYPT_TRAILER_LEN;
	return len == want && ur_bth_opcode(d) == UR_OP_RC_ACKNOWLEDGE &&
	       ur_aeth_kind(d[UR_BTH_LEN]) == UR_AETH_ACK;
}

/* A slot for a packet of @len bytes made for @host, or NULL: too big, or
 * the queue is full (the host sends it and asks again). */
struct ur_pktbuf *ur_txq_alloc(struct ur_txq *q, void *host, uint32_t len);
/* The host has routed @pb (its slot's route and conn are set): the packet
 * waits to be sent. A plain ACK replaces an older one it supersedes
 * (counted in @cnt->tx_ack_coalesced); anything else orders the queue.
 * Returns whether the queue is now full. */
bool ur_txq_commit(struct ur_txq *q, struct ur_pktbuf *pb,
		   struct ur_counters *cnt);
/* Append @from's waiting packets to @to (payloads copied into @to's
 * slots); what does not fit stays in @from. Returns how many @to holds. */
unsigned int ur_txq_adopt(struct ur_txq *to, struct ur_txq *from);
/* After the host sent (or dropped) everything. */
void ur_txq_reset(struct ur_txq *q);

static inline bool ur_txq_pending(const struct ur_txq *q)
{
	return q && q->used;
}

static inline bool ur_txq_ordered(const struct ur_txq *q)
{
	return q && q->used && q->ordered;
}

/* The queue is one packet (a post that made a one-packet message). */
static inline bool ur_txq_single(const struct ur_txq *q)
{
	return q && q->used == 1 && q->slot[0].ready;
}

/* A zero-copy packet's pieces (ur_dev.tx_ext): headers in pb->data, the
 * payload at pb->ext, then pad + ICRC in pb->data after the headers. */
struct ur_txq_parts {
	uint32_t hdr, payload, pad;
};
struct ur_txq_parts ur_txq_parts(const struct ur_pktbuf *pb);
/* Bring a zero-copy payload into the packet's own buffer (a slot has room
 * for a whole packet), for paths that need it in one piece. */
void ur_txq_linearize(struct ur_pktbuf *pb);

/*
 * Doorbell holds. A post normally sends at once (latency). A QP that
 * streams small messages (this post and the previous one each made one
 * packet: @small, @last_small) with at least UR_TXQ_HOLD_INFLIGHT PSNs
 * sent and unacknowledged holds the packet instead: the peer is busy with
 * those in flight, and held ones leave together, at the latest when the
 * ACK of those comes (ur_txq_hold_keep) or the QP's timer. @unacked: PSNs
 * unacknowledged before this post, @held of them held (made, not sent:
 * they bring no ACK; counting them let a batch wait with nothing on the
 * wire until the retransmission timer, a spurious timeout). A READ
 * request spans its whole response in PSNs, and a lone READ held for its
 * own span would wait for the timer, since nothing else is due back.
 */
static inline bool ur_txq_hold_due(bool small, bool last_small,
				   uint32_t unacked, unsigned int held)
{
	return small && last_small && unacked >= held &&
	       unacked - held + 1 >= UR_TXQ_HOLD_INFLIGHT;
}

/*
 * Whether a held batch may stay held past an unlock that made nothing of
 * its own to send (a thread that took an ACK or ran a timer): @unacked
 * PSNs are unacknowledged, @held of them are the held packets (one PSN
 * each, never sent). While UR_TXQ_HOLD_INFLIGHT of the others are on the
 * wire the peer still owes an ACK for them (or the retransmission timer
 * comes), whose unlock looks again; the poster adds to the batch
 * meanwhile. Flushing at every ACK instead clocked the batches by the
 * ACKs: a streaming requester sent about 4 packets per datagram, and the
 * responder woke and answered once per datagram.
 */
static inline bool ur_txq_hold_keep(uint32_t unacked, unsigned int held)
{
	return held && held < UR_TXQ_HOLD_MAX &&
	       unacked >= held + UR_TXQ_HOLD_INFLIGHT;
}

/*
 * ACKs that arrived while another thread held their QP's lock: the
 * receiver leaves them here instead of waiting, and the holder runs them
 * before it releases the lock. One producer at a time, one consumer (the
 * lock holder); indices count up, slot = index % UR_ACKQ_LEN.
 */
struct ur_ackq {
	_Atomic uint32_t head, tail;
	struct ur_ackq_ent {
		uint8_t d[UR_ACK_MAX];
		uint32_t len;
		struct ur_rxinfo ri;
	} ent[UR_ACKQ_LEN];
};

/* Leave a plain ACK for the holder; false: not a plain ACK, or full. */
bool ur_ackq_push(struct ur_ackq *a, const uint8_t *buf, size_t len,
		  const struct ur_rxinfo *ri);
static inline bool ur_ackq_empty(struct ur_ackq *a)
{
	return atomic_load_explicit(&a->head, memory_order_relaxed) ==
	       atomic_load_explicit(&a->tail, memory_order_relaxed);
}
/* Run what waits through @qp's receive path (its lock held); how many. */
unsigned int ur_ackq_run(struct ur_ackq *a, struct ur_qp *qp, uint64_t now);

/* Receive: whether a packet's payload may be placed during the host's ICRC
 * check (ur_qp_rx_place then decides where, under the QP lock): only the
 * middle packets of an RC RDMA WRITE. */
static inline bool ur_rx_may_place(const uint8_t *buf, size_t len)
{
	return len >= UR_BTH_LEN + UR_ICRC_LEN &&
	       ur_bth_opcode(buf) == UR_OP_RC_RDMA_WRITE_MIDDLE;
}

#endif

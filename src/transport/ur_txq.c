// SPDX-License-Identifier: MIT
/* Transmit policy (ur_txq.h): the queue of made, unsent packets, ACK
 * coalescing, doorbell holds and the busy QP's ACK backlog. Pure. */
#include <string.h>

#include "ur_txq.h"

struct ur_pktbuf *ur_txq_alloc(struct ur_txq *q, void *host, uint32_t len)
{
	struct ur_txq_slot *s;

	if (len > UR_TXQ_PKT_MAX || q->used == UR_TXQ_SLOTS)
		return NULL;
	s = &q->slot[q->used++];
	s->host = host;
	s->conn = NULL;
	s->route = -1;
	s->ready = false;
	s->pb.data = s->data;
	s->pb.cap = UR_TXQ_PKT_MAX;
	s->pb.len = 0;
	memset(&s->pb.path, 0, sizeof(s->pb.path));
	s->pb.host_priv = s;
	s->pb.ext = NULL;
	s->pb.qp_io = NULL;
	return &s->pb;
}

/* Whether waiting ACK @o is superseded by @s: same QP, peer, route and
 * BTH byte 4 (BECN and the extension bits: docs/wire.md). */
static bool supersedes(const struct ur_txq_slot *s, const struct ur_txq_slot *o)
{
	return o->ready && o->route == s->route && o->host == s->host &&
	       ur_pkt_is_plain_ack(o->pb.data, o->pb.len) &&
	       ur_bth_dqpn(o->pb.data) == ur_bth_dqpn(s->pb.data) &&
	       o->pb.data[4] == s->pb.data[4] &&
	       o->pb.path.v6 == s->pb.path.v6 &&
	       !memcmp(o->pb.path.dst, s->pb.path.dst, sizeof(o->pb.path.dst));
}

bool ur_txq_commit(struct ur_txq *q, struct ur_pktbuf *pb,
		   struct ur_counters *cnt)
{
	struct ur_txq_slot *s = pb->host_priv;

	s->ready = true;
	/* A plain ACK may leave late (a stale one is ignored, 9.7.5.1.2);
	 * requests and responses carrying data may not pass one another. */
	if (!ur_pkt_is_plain_ack(pb->data, pb->len)) {
		q->ordered = true;
	} else {
		for (unsigned int i = (unsigned int)(s - q->slot); i-- > 0;) {
			if (supersedes(s, &q->slot[i])) {
				q->slot[i].ready = false;
				cnt->tx_ack_coalesced++;
				break;
			}
		}
	}
	return q->used == UR_TXQ_SLOTS;
}

struct ur_txq_parts ur_txq_parts(const struct ur_pktbuf *pb)
{
	struct ur_txq_parts x = {
		.hdr = (uint32_t)ur_pkt_hdr_len(ur_bth_opcode(pb->data)),
		.pad = ur_bth_pad(pb->data),
	};

	x.payload = pb->len - x.hdr - x.pad - UR_ICRC_LEN;
	return x;
}

void ur_txq_linearize(struct ur_pktbuf *pb)
{
	struct ur_txq_parts x;

	if (!pb->ext)
		return;
	x = ur_txq_parts(pb);
	memmove(pb->data + x.hdr + x.payload, pb->data + x.hdr,
		x.pad + UR_ICRC_LEN);
	memcpy(pb->data + x.hdr, pb->ext, x.payload);
	pb->ext = NULL;
}

unsigned int ur_txq_adopt(struct ur_txq *to, struct ur_txq *from)
{
	unsigned int i;

	if (!from || !from->used)
		return to->used;
	for (i = 0; i < from->used && to->used < UR_TXQ_SLOTS; i++) {
		struct ur_txq_slot *f = &from->slot[i], *t;

		if (!f->ready)
			continue;
		/* The payload is copied: @from's memory may be reused, and
		 * @to may leave after the QP lock (and the region) are gone. */
		ur_txq_linearize(&f->pb);
		t = &to->slot[to->used++];
		t->pb = f->pb;
		t->pb.data = t->data;
		t->pb.host_priv = t;
		memcpy(t->data, f->data, f->pb.len);
		t->host = f->host;
		t->route = f->route;
		t->conn = f->conn;
		t->ready = true;
		f->ready = false;
	}
	to->ordered |= from->ordered;
	if (i == from->used)
		ur_txq_reset(from);
	return to->used;
}

void ur_txq_reset(struct ur_txq *q)
{
	for (unsigned int i = 0; i < q->used; i++)
		q->slot[i].ready = false;
	q->used = 0;
	q->ordered = false;
}

bool ur_ackq_push(struct ur_ackq *a, const uint8_t *buf, size_t len,
		  const struct ur_rxinfo *ri)
{
	uint32_t h = atomic_load_explicit(&a->head, memory_order_relaxed);
	uint32_t t = atomic_load_explicit(&a->tail, memory_order_acquire);
	struct ur_ackq_ent *e = &a->ent[h % UR_ACKQ_LEN];

	if (!ur_pkt_is_plain_ack(buf, len) || h - t >= UR_ACKQ_LEN)
		return false;
	memcpy(e->d, buf, len); /* a plain ACK: len <= sizeof(e->d) */
	e->len = (uint32_t)len;
	e->ri = *ri;
	atomic_store_explicit(&a->head, h + 1, memory_order_release);
	/* Against the holder's unlock, then look (the host's release): one
	 * of the two sees the other. */
	atomic_thread_fence(memory_order_seq_cst);
	return true;
}

unsigned int ur_ackq_run(struct ur_ackq *a, struct ur_qp *qp, uint64_t now)
{
	uint32_t t = atomic_load_explicit(&a->tail, memory_order_relaxed);
	uint32_t h = atomic_load_explicit(&a->head, memory_order_acquire);
	unsigned int n = h - t;

	for (; t != h; t++) {
		struct ur_ackq_ent *e = &a->ent[t % UR_ACKQ_LEN];
		struct ur_pkt pkt;

		if (ur_pkt_decode(e->d, e->len, &pkt) == UR_DEC_OK)
			ur_qp_rx(qp, &pkt, &e->ri, now);
	}
	atomic_store_explicit(&a->tail, t, memory_order_release);
	return n;
}

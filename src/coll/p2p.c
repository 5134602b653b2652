/* SPDX-License-Identifier: MIT */
/*
 * Point-to-point streams over RC QPs. Each ordered pair of ranks has
 * nslots staging slots at the receiver; the sender copies a chunk into its
 * own tx slot (or, for a large stream from a registered buffer, sends
 * straight from it) and RDMA-WRITEs it WITH IMMEDIATE into the same slot
 * index at the receiver. The immediate carries the call's signature, so a peer in a
 * different collective, type, op or count is caught on its first message.
 * The receiver copies (or reduces) the slot into the destination and
 * returns a credit: an inline RDMA WRITE WITH IMMEDIATE of its consumed
 * count into the sender's credit word (the immediate wakes a sender that
 * sleeps on its completion channel), once per half window. A sender may
 * have nslots messages not yet consumed (credit) and not yet completed (tx
 * slot reuse).
 *
 * Messages per stream = max(1, ceil(bytes / slot)), so empty streams still
 * exchange one message and keep both sides in step.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "coll_internal.h"

int ur__repost_recv(struct uroce_comm *c, int peer);

enum { WR_DATA = 1, WR_CREDIT = 2, WR_DIRECT = 3, WR_RTR = 4 };

/* Immediate of a credit write: collective nibble 0xf, which no signature
 * carries (UR_C_MAX < 15). Credits carry an immediate so that they wake a
 * sender blocked on the completion channel. */
#define UR_CREDIT_IMM 0xffffffffu
/* Immediate of a direct-receive offer (collective nibble 0xf as well). */
#define UR_RTR_IMM 0xfffffffeu

/*
 * Signature layout: bits 0..7 call number, 8..11 collective, 12..15
 * dtype, 16..18 op, 19..31 hash of (count, root).
 */
uint32_t ur__sig(struct uroce_comm *c, enum ur_coll_kind k,
		  enum uroce_dtype dt, enum uroce_redop op, uint64_t count,
		  int root)
{
	return ur__sig_seq(c->seq, k, dt, op, count, root);
}

uint32_t ur__sig_seq(uint32_t seq, enum ur_coll_kind k, enum uroce_dtype dt,
		      enum uroce_redop op, uint64_t count, int root)
{
	uint64_t h = count * 0x9E3779B97F4A7C15ull ^ (uint64_t)(root + 1) * 0xC2B2AE3D27D4EB4Full;

	h ^= h >> 29;
	h *= 0xBF58476D1CE4E5B9ull;
	h ^= h >> 32;
	return (seq & 0xff) | ((uint32_t)k & 0xf) << 8 |
	       ((uint32_t)dt & 0xf) << 12 | ((uint32_t)op & 7) << 16 |
	       (uint32_t)(h & 0x1fff) << 19;
}

static int sig_mismatch(struct uroce_comm *c, int peer, uint32_t got,
			uint32_t want)
{
	unsigned gk = (got >> 8) & 0xf, wk = (want >> 8) & 0xf;
	unsigned gd = (got >> 12) & 0xf, wd = (want >> 12) & 0xf;
	const char *gks = gk < UR_C_MAX ? ur__coll_kind_name[gk] : "?";

	/* Point-to-point messages number per pair, not per call. */
	if (gk != wk && (gk == UR_C_P2P || wk == UR_C_P2P))
		return ur__fail(c, -EPROTO, "mismatch: rank %d %s, we %s",
				 peer, gk == UR_C_P2P ? "sent us a point-to-point message" : "called a collective",
				 wk == UR_C_P2P ? "expect a point-to-point message from it" : "called a collective");
	if (gk == UR_C_P2P && (got & 0xff) != (want & 0xff))
		return ur__fail(c, -EPROTO,
				 "mismatch: rank %d sent point-to-point message #%u to us, we expect #%u",
				 peer, got & 0xff, want & 0xff);
	if (gk == UR_C_P2P && gd == wd)
		return ur__fail(c, -EPROTO,
				 "mismatch in send/recv: rank %d uses a different count or tag", peer);

	if ((got & 0xff) != (want & 0xff))
		return ur__fail(c, -EPROTO,
				 "mismatch: rank %d is at collective call #%u, we are at #%u (%s); a rank skipped or added a call",
				 peer, got & 0xff, want & 0xff, ur__coll_kind_name[wk]);
	if (gk != wk)
		return ur__fail(c, -EPROTO, "mismatch: rank %d called %s, we called %s",
				 peer, gks, ur__coll_kind_name[wk]);
	if (gd != wd)
		return ur__fail(c, -EPROTO, "mismatch in %s: rank %d uses type %s, we use %s",
				 gks, peer, uroce_dtype_name(gd), uroce_dtype_name(wd));
	if (((got >> 16) & 7) != ((want >> 16) & 7))
		return ur__fail(c, -EPROTO, "mismatch in %s: rank %d uses op %s, we use %s",
				 gks, peer, uroce_redop_name((got >> 16) & 7),
				 uroce_redop_name((want >> 16) & 7));
	return ur__fail(c, -EPROTO, "mismatch in %s: rank %d uses a different count (or root)",
			 gks, peer);
}

static int post_credit(struct uroce_comm *c, int peer)
{
	struct ur_peer *p = &c->peers[peer];
	uint64_t val = p->rx_consumed;
	struct ibv_sge sge = { .addr = (uintptr_t)&val, .length = 8, .lkey = c->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = (uint64_t)peer << 8 | WR_CREDIT,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED,
		.imm_data = htonl(UR_CREDIT_IMM),
		.wr.rdma = { .remote_addr = p->r_credit, .rkey = p->rkey },
	};
	struct ibv_send_wr *bad;
	int r = ibv_post_send(p->qp, &wr, &bad);

	if (r)
		return ur__fail(c, -r, "posting a credit to rank %d: %s", peer, strerror(r));
	p->credit_sent = val;
	p->credit_inflight = 1;
	return 0;
}

/* Poll completions; returns how many were handled or a negative error. */
static int progress(struct uroce_comm *c)
{
	struct ibv_wc wc[32];
	int n = ibv_poll_cq(c->cq, 32, wc);

	if (n < 0)
		return ur__fail(c, -EIO, "ibv_poll_cq failed");
	for (int i = 0; i < n; i++) {
		struct ibv_wc *w = &wc[i];
		int peer = (w->opcode & IBV_WC_RECV) ? (int)w->wr_id : (int)(w->wr_id >> 8);

		if (peer < 0 || peer >= c->size)
			return ur__fail(c, -EIO, "completion with bad wr_id %llx",
					 (unsigned long long)w->wr_id);
		if (w->status != IBV_WC_SUCCESS)
			return ur__fail(c, -ECONNRESET,
					 "QP to rank %d failed: %s (vendor err %u); the peer died or is unreachable",
					 peer, ibv_wc_status_str(w->status), w->vendor_err);
		struct ur_peer *p = &c->peers[peer];
		if (w->opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
		    ntohl(w->imm_data) == UR_CREDIT_IMM) {
			/* The credit word is written; just recycle the receive. */
			int r = ur__repost_recv(c, peer);
			if (r)
				return ur__fail(c, r, "reposting a receive for rank %d", peer);
		} else if (w->opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
			   ntohl(w->imm_data) == UR_RTR_IMM) {
			/* An offer is in the mailbox; send_direct reads it. */
			if (++p->rtr_arrived - p->rtr_used > UR_RTR_RING)
				return ur__fail(c, -EPROTO, "rank %d overran its offers", peer);
			int r = ur__repost_recv(c, peer);
			if (r)
				return ur__fail(c, r, "reposting a receive for rank %d", peer);
		} else if (w->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
			unsigned s = (unsigned)(p->rx_arrived % c->nslots);
			if (p->rx_arrived - p->rx_consumed >= c->nslots)
				return ur__fail(c, -EPROTO, "rank %d overran its credits", peer);
			p->rx_imm[s] = ntohl(w->imm_data);
			p->rx_len[s] = w->byte_len;
			p->rx_arrived++;
			int r = ur__repost_recv(c, peer);
			if (r)
				return ur__fail(c, r, "reposting a receive for rank %d", peer);
		} else if ((w->wr_id & 0xff) == WR_DATA) {
			p->tx_done++;
		} else if ((w->wr_id & 0xff) == WR_CREDIT) {
			p->credit_inflight = 0;
		} else if ((w->wr_id & 0xff) == WR_DIRECT) {
			p->dw_done++;
		} else if ((w->wr_id & 0xff) == WR_RTR) {
			p->rtr_inflight--;
		}
	}
	/* Credits coalesce: at most one in flight per peer, with the latest
	 * consumed count, and only once half the window is unreported (a
	 * credit is a packet, an ACK and two completions). A blocked sender
	 * has the whole window outstanding, so its credit always comes. */
	for (int i = 0; i < c->size; i++) {
		struct ur_peer *p = &c->peers[i];
		if (i == c->rank ||
		    p->rx_consumed - p->credit_sent < c->credit_batch)
			continue;
		if (p->credit_inflight) {
			c->want_acks = 1; /* its completion lets us post */
			continue;
		}
		int r = post_credit(c, i);
		if (r)
			return r;
	}
	return n;
}

/*
 * Direct streams. The receiver offers its registered buffer (ur_rtr) as
 * soon as the stream starts; the sender waits for the offer, then RDMA
 * WRITEs the data straight into it, slot-sized pieces without immediate,
 * and ends with an empty WRITE WITH IMMEDIATE (the signature) through the
 * usual slot and credit accounting: RC places writes in order, so its
 * completion at the receiver means the data is there. No staging copy at
 * either end. An offer without a buffer (addr 0), or a sender without a
 * registered buffer, falls back to the staging slots; a receiver tells
 * the two apart by the length of the first message (data is never empty).
 */
static int post_offer(struct uroce_comm *c, struct ur_xop *x)
{
	struct ur_peer *p = &c->peers[x->peer];
	struct ibv_mr *mr = x->bytes >= ur__direct_min(c) ?
			    ur__reg_find(c, x->buf, x->bytes, 1) : NULL;
	struct ur_rtr rec = {
		.addr = mr ? (uint64_t)(uintptr_t)x->buf : 0,
		.len = x->bytes,
		.rkey = mr ? mr->rkey : 0,
		.sig = x->sig,
	};
	struct ibv_sge sge = { .addr = (uintptr_t)&rec, .length = sizeof(rec),
			       .lkey = c->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = (uint64_t)x->peer << 8 | WR_RTR,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED,
		.imm_data = htonl(UR_RTR_IMM),
		.wr.rdma = { .remote_addr = p->r_rtr + (p->rtr_sent % UR_RTR_RING) * sizeof(rec),
			     .rkey = p->rkey },
	};
	struct ibv_send_wr *bad;
	int r;

	if (p->rtr_inflight >= UR_RTR_RING)
		return 0; /* the mailbox slot may still be unread */
	r = ibv_post_send(p->qp, &wr, &bad);
	if (r)
		return ur__fail(c, -r, "posting an offer to rank %d: %s", x->peer, strerror(r));
	p->rtr_sent++;
	p->rtr_inflight++;
	x->mode = UR_X_SLOTS; /* we take what comes; see recv_some */
	return 1;
}

/*
 * One copy on one host (UROCE_COLL_CMA): a direct stream to a rank of this
 * host is written by process_vm_writev(2) straight from our buffer into
 * the offered one, one kernel copy, instead of an RDMA WRITE that the
 * engines copy twice (into a shared-memory lane and out of it) in
 * packets. The peer's pid is tried once: its cookie must read back from
 * its credit line (ur__conn_info), which another host, another pid
 * namespace or a missing ptrace permission (CMA's rule) fails; the stream
 * then takes the RDMA path.
 */
int ur__cma_ok(struct uroce_comm *c, struct ur_peer *p)
{
	if (!p->cma) {
		uint64_t v = 0;
		struct iovec l = { &v, sizeof(v) };
		struct iovec r = { (void *)(uintptr_t)(p->r_credit + 8), sizeof(v) };

		p->cma = c->cma && p->cma_pid > 0 && p->cma_cookie &&
			 process_vm_readv(p->cma_pid, &l, 1, &r, 1, 0) == (ssize_t)sizeof(v) &&
			 v == p->cma_cookie ? 1 : -1;
	}
	return p->cma > 0;
}

/* Take the receiver's offer: direct if it has a buffer and so do we
 * (registered, or CMA to a rank of this host). */
static int take_offer(struct uroce_comm *c, struct ur_xop *x)
{
	struct ur_peer *p = &c->peers[x->peer];
	volatile struct ur_rtr *v;

	if (p->rtr_arrived == p->rtr_used)
		return 0;
	v = &p->rtr[p->rtr_used++ % UR_RTR_RING];
	if (v->sig != x->sig)
		return sig_mismatch(c, x->peer, v->sig, x->sig);
	if (v->len != x->bytes)
		return ur__fail(c, -EPROTO,
				 "mismatch in %s: rank %d expects %llu bytes, we send %zu (counts differ?)",
				 ur__coll_kind_name[(x->sig >> 8) & 0xf], x->peer,
				 (unsigned long long)v->len, x->bytes);
	x->mode = v->addr && (ur__cma_ok(c, p) || x->lkey) ? UR_X_DIRECT : UR_X_SLOTS;
	x->raddr = v->addr;
	x->rkey = v->rkey;
	if (x->mode == UR_X_DIRECT)
		x->nmsgs = 1; /* the closing empty write */
	return 1;
}

/* Direct send: the data pieces, then the closing message (send_some). */
static int send_direct(struct uroce_comm *c, struct ur_xop *x, int *acks)
{
	struct ur_peer *p = &c->peers[x->peer];
	int moved = 0;

	/* CMA: a slot-sized piece per call, so that the other streams of
	 * the step (offers, receives) move in between. */
	if (x->off < x->bytes && p->cma > 0) {
		size_t len = x->bytes - x->off < c->slot ? x->bytes - x->off : c->slot;
		struct iovec l = { x->buf + x->off, len };
		struct iovec r = { (void *)(uintptr_t)(x->raddr + x->off), len };
		ssize_t n = process_vm_writev(p->cma_pid, &l, 1, &r, 1, 0);

		if (n > 0) {
			x->off += (size_t)n;
			/* No retransmission reads our buffer: the stream
			 * ends with its closing message, not its ACK. */
			if (x->off == x->bytes)
				x->lkey = 0;
			return 1;
		}
		if (!x->lkey)
			return ur__fail(c, n < 0 ? -errno : -EIO,
					 "writing to rank %d (process_vm_writev): %s",
					 x->peer, n < 0 ? strerror(errno) : "nothing written");
		p->cma = -1; /* the rest by RDMA */
	}
	while (x->off < x->bytes) {
		if (p->tx_posted - p->tx_done + p->dw_posted - p->dw_done >= c->nslots) {
			*acks = 1;
			return moved;
		}
		size_t len = x->bytes - x->off < c->slot ? x->bytes - x->off : c->slot;
		struct ibv_sge sge = { .addr = (uintptr_t)(x->buf + x->off),
				       .length = (uint32_t)len, .lkey = x->lkey };
		struct ibv_send_wr wr = {
			.wr_id = (uint64_t)x->peer << 8 | WR_DIRECT,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = x->raddr + x->off, .rkey = x->rkey },
		};
		struct ibv_send_wr *bad;
		int r = ibv_post_send(p->qp, &wr, &bad);

		if (r)
			return ur__fail(c, -r, "posting a write to rank %d: %s", x->peer, strerror(r));
		p->dw_posted++;
		x->off += len;
		moved = 1;
	}
	return moved;
}

/* *acks: set when the stream waits for its own send completions (slot
 * reuse), which only a full CQ arm wakes for. */
static int send_some(struct uroce_comm *c, struct ur_xop *x, int *acks)
{
	struct ur_peer *p = &c->peers[x->peer];
	int moved = 0;

	if (x->direct && x->mode == UR_X_OFFER) {
		moved = take_offer(c, x);
		if (moved <= 0)
			return moved;
	}
	if (x->mode == UR_X_DIRECT) {
		int r = send_direct(c, x, acks);
		if (r < 0)
			return r;
		moved |= r;
		if (x->off < x->bytes)
			return moved; /* window full; taking the offer counts */
	}
	while (x->msgs < x->nmsgs) {
		uint64_t credit = __atomic_load_n((const uint64_t *)p->credit, __ATOMIC_ACQUIRE);
		if (p->tx_posted - credit >= c->nslots)
			break;
		if (p->tx_posted - p->tx_done + p->dw_posted - p->dw_done >= c->nslots) {
			*acks = 1;
			break;
		}
		unsigned s = (unsigned)(p->tx_posted % c->nslots);
		size_t len = x->bytes - x->off < c->slot ? x->bytes - x->off : c->slot;
		char *slot = p->tx + (size_t)s * c->slot;
		uint64_t raddr = p->r_slots + (uint64_t)s * c->slot;
		/* CMA: the chunk straight into the receiver's slot, announced
		 * by an empty message (cma_slot). */
		int cma = !x->direct && len >= UR_CMA_MIN && ur__cma_ok(c, p);
		if (cma) {
			struct iovec l = { x->buf + x->off, len };
			struct iovec rv = { (void *)(uintptr_t)raddr, len };

			cma = process_vm_writev(p->cma_pid, &l, 1, &rv, 1, 0) == (ssize_t)len;
			if (!cma)
				p->cma = -1; /* this chunk and the rest by RDMA */
		}
		int copy = !cma && !x->lkey && x->mode != UR_X_DIRECT && len;
		/* Zero copy: straight from the caller's registered buffer. */
		struct ibv_sge sge = {
			.addr = x->lkey ? (uintptr_t)(x->buf + x->off) : (uintptr_t)slot,
			.length = (uint32_t)len,
			.lkey = x->lkey ? x->lkey : c->mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = (uint64_t)x->peer << 8 | WR_DATA,
			.sg_list = &sge,
			.num_sge = len && !cma ? 1 : 0,
			.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
			.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED,
			.imm_data = htonl(x->sig),
			.wr.rdma = { .remote_addr = raddr, .rkey = p->rkey },
		};
		struct ibv_send_wr *bad;

		if (copy) /* not zero copy, not empty (a barrier has no buffer) */
			ur_copy(slot, x->buf + x->off, len);
		int r = ibv_post_send(p->qp, &wr, &bad);
		if (r)
			return ur__fail(c, -r, "posting a write to rank %d: %s", x->peer, strerror(r));
		p->tx_posted++;
		if (!cma) /* a retransmission reads it */
			x->tx_end = p->tx_posted;
		x->off += len;
		x->msgs++;
		moved = 1;
	}
	return moved;
}

/* A zero-copy send is over once the peer acknowledged it: until then a
 * retransmission still reads the caller's buffer. */
static int xop_done(struct uroce_comm *c, const struct ur_xop *x, int *acks)
{
	if (x->msgs < x->nmsgs)
		return 0;
	if (x->kind != UR_X_SEND || !x->lkey || c->peers[x->peer].tx_done >= x->tx_end)
		return 1;
	*acks = 1;
	return 0;
}

static int recv_some(struct uroce_comm *c, struct ur_xop *x,
		     enum uroce_dtype dt, enum uroce_redop op)
{
	struct ur_peer *p = &c->peers[x->peer];
	size_t es = uroce_dtype_size(dt);
	int moved = 0;

	if (x->direct && x->mode == UR_X_OFFER) {
		moved = post_offer(c, x);
		if (moved <= 0)
			return moved;
	}
	while (x->msgs < x->nmsgs && p->rx_arrived > p->rx_consumed) {
		unsigned s = (unsigned)(p->rx_consumed % c->nslots);
		size_t len = x->bytes - x->off < c->slot ? x->bytes - x->off : c->slot;
		const char *slot = p->rx + (size_t)s * c->slot;

		if (p->rx_imm[s] != x->sig)
			return sig_mismatch(c, x->peer, p->rx_imm[s], x->sig);
		if (x->direct && !x->off && !p->rx_len[s]) {
			/* The sender wrote it all into our buffer. */
			p->rx_consumed++;
			x->off = x->bytes;
			x->msgs = x->nmsgs;
			return 1;
		}
		/* Empty where data was due: the sender wrote the slot by
		 * CMA (send_some), only ever for a chunk this large. */
		int cma_slot = !p->rx_len[s] && !x->direct && len >= UR_CMA_MIN && c->cma;
		if (p->rx_len[s] != len && !cma_slot)
			return ur__fail(c, -EPROTO,
					 "mismatch in %s: rank %d sent %u bytes, we expect %zu (counts differ?)",
					 ur__coll_kind_name[(x->sig >> 8) & 0xf], x->peer,
					 p->rx_len[s], len);
		if (!len)
			; /* an empty stream may have no buffer */
		else if (x->kind == UR_X_RECV_REDUCE && x->src)
			ur__reduce3(x->buf + x->off, x->src + x->off, slot,
				     len / es, dt, op);
		else if (x->kind == UR_X_RECV_REDUCE)
			ur__reduce(x->buf + x->off, slot, len / es, dt, op);
		else
			ur_copy(x->buf + x->off, slot, len);
		p->rx_consumed++;
		x->off += len;
		x->msgs++;
		moved = 1;
	}
	return moved;
}

/* One slot-sized piece of a local copy per pass of ur__xfer: the remote
 * streams' offers, writes and receives move in between. Large copies
 * bypass the cache, as a whole-block copy would (ur_copy_stream). */
static int local_some(struct uroce_comm *c, struct ur_xop *x)
{
	size_t len = x->bytes - x->off < c->slot ? x->bytes - x->off : c->slot;

	if (x->bytes >= UR_STREAM_MIN)
		ur_copy_stream(x->buf + x->off, x->src + x->off, len);
	else if (len)
		ur_copy(x->buf + x->off, x->src + x->off, len);
	x->off += len;
	x->msgs++;
	return 1;
}

/* A collective message of call seq (not point-to-point) waits unconsumed:
 * in the first one of a stream (data, or an offer). */
static int stray_sig(uint32_t sig, uint32_t seq)
{
	return (sig & 0xff) == (seq & 0xff) && ((sig >> 8) & 0xf) != UR_C_P2P;
}

int ur__stray(struct uroce_comm *c, uint32_t seq)
{
	int e = progress(c);

	if (e < 0)
		return e;
	for (int i = 0; i < c->size; i++) {
		struct ur_peer *p = &c->peers[i];

		if (i == c->rank)
			continue;
		if (p->rx_arrived != p->rx_consumed &&
		    stray_sig(p->rx_imm[p->rx_consumed % c->nslots], seq))
			return i;
		if (p->rtr_arrived != p->rtr_used &&
		    stray_sig(p->rtr[p->rtr_used % UR_RTR_RING].sig, seq))
			return i;
	}
	return -1;
}

int ur__check_alive(struct uroce_comm *c, uint64_t now)
{
	int who = -1;

	if (now < c->next_watch_ns)
		return 0;
	c->next_watch_ns = now + 2000000; /* every 2 ms */
	/* A sub-communicator watches its root's sockets: ranks of the root. */
	if (ur__boot_watch(c->wboot, &who))
		return ur__fail(c, -EPIPE,
				 who == 0 && c->wboot->rank != 0 ?
				 "rank 0's bootstrap connection closed: a rank died or failed" :
				 "rank %d died or failed (its bootstrap connection closed)", who);
	return 0;
}

/*
 * Nothing moved since `last`: keep spinning for spin_ns, then arm the CQ,
 * poll once more (a completion may have raced the arming) and sleep on the
 * channel until a completion event or block_ns. Data and credits are
 * solicited; unless a sender waits for its own completions (acks), the arm
 * is solicited-only, so the ACKs of our writes (a send completion each)
 * do not wake us for nothing: with more ranks than cores every wake-up
 * costs a context switch that a peer needed. The engine thread drains
 * the socket while we sleep; if it is not looking (it leaves the socket to
 * a thread that spun recently), the timeout makes us drain it ourselves.
 */
static int wait_idle(struct uroce_comm *c, uint64_t now, uint64_t last,
		     int acks)
{
	struct pollfd pfd = { .fd = c->chan->fd, .events = POLLIN };
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)c->block_ns };
	struct ibv_cq *cq;
	void *ctx;
	int n;

	if (now - last < c->cur_spin_ns) {
		/* The rank we wait for, or our engine, may need this core
		 * to move our data (comm.c, wait_params). */
		if (c->yield)
			sched_yield();
		return 0;
	}
	if (ibv_req_notify_cq(c->cq, !acks))
		return ur__fail(c, -EIO, "ibv_req_notify_cq failed");
	n = progress(c);
	if (n)
		return n;
	n = ppoll(&pfd, 1, &ts, NULL);
	if (n > 0 && (pfd.revents & POLLIN)) {
		if (ibv_get_cq_event(c->chan, &cq, &ctx))
			return ur__fail(c, -EIO, "ibv_get_cq_event failed");
		if (++c->cq_events >= 256) {
			ibv_ack_cq_events(c->cq, c->cq_events);
			c->cq_events = 0;
		}
	}
	return 0;
}

int ur__xfer(struct uroce_comm *c, struct ur_xop *ops, int nops,
	      enum uroce_dtype dt, enum uroce_redop op)
{
	uint64_t timeout = (uint64_t)c->timeout_ms * 1000000ull;
	uint64_t last = ur__now_ns();

	/* A lane fails with its communicator (and the other way round,
	 * ur__fail). */
	if (!c->failed && c->owner && __atomic_load_n(&c->owner->failed, __ATOMIC_ACQUIRE)) {
		memcpy(c->err, c->owner->err, sizeof(c->err));
		c->failed = c->owner->failed;
	}
	if (c->failed)
		return c->failed;
	for (int i = 0; i < nops; i++) {
		ops[i].off = 0;
		ops[i].msgs = 0;
		ops[i].nmsgs = ops[i].bytes ? (ops[i].bytes + c->slot - 1) / c->slot : 1;
		ops[i].lkey = 0;
		if (ops[i].kind == UR_X_SEND && ops[i].bytes >= UR_ZC_MIN) {
			struct ibv_mr *mr = ur__reg_find(c, ops[i].buf, ops[i].bytes, 0);
			ops[i].lkey = mr ? mr->lkey : 0;
		}
		ops[i].tx_end = 0;
		/* Both ends decide alike: the stream's size and the caller's
		 * word that the peer's side is plain too. */
		if ((ops[i].direct == UR_DIRECT_SIZED &&
		     ops[i].bytes < ur__direct_min(c)) ||
		    ops[i].kind == UR_X_RECV_REDUCE || ops[i].kind == UR_X_LOCAL)
			ops[i].direct = 0;
		ops[i].mode = UR_X_OFFER;
	}
	for (;;) {
		int pending = 0, moved = 0, acks = 0, r;

		for (int i = 0; i < nops; i++) {
			struct ur_xop *x = &ops[i];
			int blocked = 0;

			if (xop_done(c, x, &acks))
				continue;
			pending = 1;
			if (x->msgs == x->nmsgs)
				continue;
			/* Streams to/from the same peer run in list order. */
			for (int j = 0; j < i && !blocked; j++)
				blocked = ops[j].peer == x->peer &&
					  (ops[j].kind == UR_X_SEND) == (x->kind == UR_X_SEND) &&
					  ops[j].msgs < ops[j].nmsgs;
			if (blocked)
				continue;
			r = x->kind == UR_X_SEND ? send_some(c, x, &acks) :
			    x->kind == UR_X_LOCAL ? local_some(c, x) :
						    recv_some(c, x, dt, op);
			if (r < 0)
				return r;
			moved |= r;
		}
		if (!pending)
			return 0;
		c->want_acks = 0;
		r = progress(c);
		if (r < 0)
			return r;
		uint64_t now = ur__now_ns();
		if (moved || r > 0) {
			last = now;
		} else {
			if (now - last > timeout)
				return ur__fail(c, -ETIMEDOUT,
						 "no progress for %d ms in %s (UROCE_COLL_TIMEOUT_MS); a peer is stuck or dead",
						 c->timeout_ms, ur__coll_kind_name[(ops[0].sig >> 8) & 0xf]);
			r = wait_idle(c, now, last, acks | c->want_acks);
			if (r < 0)
				return r;
			if (r > 0)
				last = ur__now_ns();
		}
		r = ur__check_alive(c, now);
		if (r)
			return r;
	}
}

/* One send and/or one receive (peer -1 = none); @rsrc: see ur_xop.src. */
static int sendrecv(struct uroce_comm *c, int speer, const void *sbuf,
		    size_t sbytes, int rpeer, void *rbuf, const void *rsrc,
		    size_t rbytes, int rkind, uint32_t sig, enum uroce_dtype dt,
		    enum uroce_redop op)
{
	struct ur_xop x[2];
	int n = 0;

	if (speer >= 0)
		ur__xop(&x[n++], UR_X_SEND, speer, (void *)sbuf, sbytes, sig);
	if (rpeer >= 0) {
		ur__xop(&x[n], rkind, rpeer, rbuf, rbytes, sig);
		x[n++].src = rsrc;
	}
	/* A plain exchange step is the same step at the peer: its receive
	 * from us is plain too, so our send may be direct. */
	if (speer >= 0 && rpeer >= 0 && rkind == UR_X_RECV)
		x[0].direct = x[1].direct = UR_DIRECT_SIZED;
	return ur__xfer(c, x, n, dt, op);
}

int ur__sendrecv(struct uroce_comm *c, int speer, const void *sbuf,
		  size_t sbytes, int rpeer, void *rbuf, size_t rbytes,
		  int rkind, uint32_t sig, enum uroce_dtype dt,
		  enum uroce_redop op)
{
	return sendrecv(c, speer, sbuf, sbytes, rpeer, rbuf, NULL, rbytes,
			rkind, sig, dt, op);
}

int ur__sendrecv_reduce(struct uroce_comm *c, int speer, const void *sbuf,
			 size_t sbytes, int rpeer, void *rbuf,
			 const void *rsrc, size_t rbytes, uint32_t sig,
			 enum uroce_dtype dt, enum uroce_redop op)
{
	return sendrecv(c, speer, sbuf, sbytes, rpeer, rbuf, rsrc, rbytes,
			UR_X_RECV_REDUCE, sig, dt, op);
}

/* SPDX-License-Identifier: MIT */
/*
 * Private state of a transport QP and the internal interface between the
 * transport's modules (requester, responder, completer, UD, CQ). Nothing
 * outside src/transport includes this.
 *
 * Queues are rings indexed by free-running uint32_t counters; a slot is
 * (index % capacity). All memory is allocated at QP create and sized by the
 * requested caps; the per-packet path never allocates.
 */
#ifndef UR_QP_PRIV_H
#define UR_QP_PRIV_H

#include <errno.h>
#include <stddef.h>

#include <stdatomic.h>

#include "ur_bw.h"
#include "ur_crypt.h"
#include "ur_transport.h"

#define UR_DEFAULT_TX_WINDOW 256 /* outstanding request PSNs */
/* ...and at most this many bytes of them: a jumbo QP's window shrinks. */
#define UR_TX_WINDOW_BYTES (4u << 20)
#define UR_ACKREQ_EVERY 64       /* AckReq at least this often in a message */

#define ur_container_of(ptr, type, member)                                   \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* A local scatter/gather element, resolved to a host pointer once checked. */
struct ur_qsge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
	uint8_t *host; /* valid once the WQE's SGEs are resolved */
};

/* Send queue entry. */
struct ur_swqe {
	uint64_t wr_id;
	uint8_t opcode;   /* enum ur_wr_opcode */
	uint8_t flags;    /* enum ur_send_flags */
	bool resolved;    /* SGEs checked and mapped (at key_gen) */
	bool done;        /* completed (successfully or not) */
	uint8_t status;   /* enum ur_wc_status, valid when done */
	/* An atomic's answer came while an older READ/atomic was unanswered
	 * (ur_comp.c do_passed): kept in @answer, not asked for again. */
	bool answered;
	uint32_t imm;     /* network order, or IETH rkey (host order) */
	uint32_t rkey;
	uint64_t remote_addr;
	uint64_t compare_add, swap;
	/* BIND_MW: rkey = the window's key, imm = the new key, remote_addr /
	 * compare_add = address / length, swap = lkey | access << 32. */
	uint32_t num_sge;
	uint32_t length;  /* total payload bytes */
	uint32_t first_psn;
	uint32_t npkts;   /* PSNs this WQE occupies */
	uint32_t mtu;     /* payload per packet, fixed when PSNs are assigned */
	/* UD destination */
	uint32_t ud_dqpn, ud_qkey;
	uint32_t xrc_srqn; /* XRC INI: the XRCETH of its requests */
	struct ur_ipudp ud_path;
	uint64_t key_gen; /* ur_dev.key_gen when the SGEs were resolved */
	uint64_t answer;  /* the original value, host order, if answered */
};

/* Receive queue entry. */
struct ur_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t length;  /* total of the SGEs */
};

/*
 * A responder resource (max_dest_rd_atomic of them, IBTA 9.5.4; rxe's
 * struct resp_res): one per READ or atomic executed, the last ones kept. A
 * duplicate READ is served again (9.7.5.1.5) only inside a kept READ: the
 * requester retries only READs still outstanding, at most its
 * max_rd_atomic, which it sets no higher than our max_dest_rd_atomic; a
 * duplicate atomic is answered from its saved result, never executed
 * twice. Anything older is dropped, not answered.
 */
struct ur_rd_res {
	bool valid;
	bool read;
	uint32_t psn;       /* the request's PSN */
	uint32_t last_psn;  /* READ: its last response PSN */
	uint64_t orig;      /* atomic: the original value */
	uint64_t va;        /* READ: what it asked for */
	uint32_t rkey, len;
	uint32_t pdn;       /* READ: the PD its key was checked in */
};

/* Requester (ur_req.c). */
struct ur_req {
	uint32_t idx;       /* WQE being transmitted */
	uint32_t pkt;       /* next packet index within it */
	uint32_t assigned;  /* WQEs before this index have PSNs */
	uint32_t psn_next;  /* PSN for the next new WQE */
	uint32_t psn_max;   /* first PSN never sent (for counting retransmits) */
	uint32_t rd_outstanding; /* READ/atomics assigned and not done */
	uint32_t window;    /* send window in PSNs */
	bool rnr_wait;      /* paused until rnr_deadline */
	uint64_t rnr_deadline;
	/* Selective repeat: a PSN asked for by a selective NAK that found
	 * no transmit buffer; sent before anything new. */
	bool sr_resend;
	uint32_t sr_resend_psn;
	bool ackreq;        /* set AckReq on the next packet (ur__req_probe) */
	bool ackreq_out;    /* ackreq_psn: the last PSN sent with AckReq */
	uint32_t ackreq_psn;
	/* ur__req_probe found no buffer, or a resend waiting for one: it
	 * goes at the next progress call, after that resend. */
	bool probe_pending;
	/* A WQE's memory lost its key between packets: the next progress
	 * call fails it (local protection error) at top level. */
	bool key_err;
	uint32_t key_err_idx;
};

/* Completer (ur_comp.c). */
struct ur_comp {
	uint32_t psn;       /* oldest unacknowledged PSN */
	uint64_t rto_deadline; /* UINT64_MAX: not armed */
	uint8_t retry_left, rnr_left;
	bool drained_sent;  /* SQ_DRAINED reported */
	/* READ responses that arrived ahead of psn, kept: bit i is psn + i
	 * (1 <= i < 64); only for the READ at the head of the send queue. */
	uint64_t rd_seen;
	/* The head READ/atomic was asked for again from rd_ask_psn (one
	 * request, no go-back-N); not again for the same gap. */
	bool rd_asked;
	uint32_t rd_ask_psn;
	/* Responses or ACKs for later requests were dropped while the head
	 * READ/atomic was unfinished: go back to them once it completes. */
	bool rd_beyond;
	/* The newest ACK among them (beyond_psn, valid if beyond_ack): it
	 * is taken again once the head completes, instead of a round trip. */
	bool beyond_ack;
	uint32_t beyond_psn, beyond_max; /* beyond_max: the newest dropped */
	/* A request sent to recover (the head READ/atomic asked again, or a
	 * probe for the ACK): sent again at ask_at (0: none) unless the
	 * oldest unacknowledged PSN moves; ask_rtt smooths the time from a
	 * first ask to its answer (ns, 0: no sample), ask_n counts repeats. */
	uint64_t ask_at, ask_t;
	uint32_t ask_psn;   /* the oldest unacknowledged PSN when asked */
	uint32_t ask_rtt;
	uint8_t ask_n;
	bool ask_probe;     /* a probe went in this receive: time it */
	/* Selective repeat: this timeout run sent a probe (the oldest and
	 * the newest unacknowledged PSN) instead of going back N; the next
	 * timeout without progress goes back N. */
	bool sr_probed;
	/* The device refused the QP a transmit buffer at held_at (0: not
	 * held): the timer does not run while the QP waits its turn. */
	uint64_t held_at;
	/* Selective repeat's tail probe (ur_comp.c "tail"): the newest PSN
	 * again with AckReq at tail_at (0: none) unless the oldest
	 * unacknowledged one (tail_psn then) moves; lossy: a selective NAK
	 * came since everything was last acknowledged. */
	bool lossy;
	uint32_t tail_psn, nak_psn; /* nak_psn: the last selective NAK's */
	uint64_t tail_at;
};

enum ur_resp_cur { UR_CUR_NONE, UR_CUR_SEND, UR_CUR_WRITE };

/* Responder (ur_resp.c). */
struct ur_resp {
	uint32_t psn;       /* expected PSN (ePSN) */
	uint32_t msn;       /* 24-bit message sequence number */
	bool nak_sent;      /* one NAK per sequence error (9.7.5.1.2) */
	bool dup_acked;     /* a duplicate was re-ACKed since the last new one */
	/* The packet being run came with ur_rxinfo.ack_later; an ACK owed
	 * (made at the batch's end, or before anything else this QP sends)
	 * for ack_psn, with the MSN of then. */
	bool ack_later, ack_owed;
	uint32_t ack_psn, ack_msn;
	bool uc_drop;       /* UC: drop until the next FIRST/ONLY */
	uint8_t cur;        /* enum ur_resp_cur: multi-packet message in progress */
	uint32_t off;       /* bytes of the current message so far */
	uint8_t *wr_host;   /* WRITE: host pointer of the next byte */
	uint32_t wr_left;   /* WRITE: bytes still expected */
	uint32_t wr_len;    /* WRITE: DMA length from the RETH */
	uint32_t wr_rkey;   /* WRITE: the RETH's key and the next byte's VA, */
	uint64_t wr_va;     /* to check wr_host again after key_gen moved */
	bool rwqe_taken;    /* the head RQ WQE belongs to the message */
	/* ur_dev.key_gen when wr_host, the head RQ WQE's SGEs and rd_host
	 * were resolved. */
	uint64_t wr_gen, rwqe_gen, rd_gen;
	/* READ response job; normally finished at once, or continued by
	 * progress when the host is out of packet buffers. */
	bool rd_active;
	const uint8_t *rd_host;
	uint32_t rd_len, rd_off, rd_psn, rd_first_psn;
	uint32_t rd_rkey;
	uint64_t rd_va;
	/* READ/atomic resources, max_dest_rd_atomic entries (>= 1), a ring
	 * in execution order. */
	struct ur_rd_res *res;
	uint32_t n_res, res_next;
};

/* Congestion control and shaping of a QP (ur_cc.c). */
#define UR_CC_STAMPS 64 /* send times kept for RTT samples (ur_cc.c) */
/* A delay-based algorithm asks for an ACK at least every this many PSNs:
 * an RTT sample each (RoCE coalesces ACKs to AckReq, 9.7.5.1.1). */
#define UR_CC_ACK_EVERY 8
/* Payloads up to this many bytes are copied into the packet even where
 * the host takes them by reference (ur_dev.tx_ext; ur_xmit.c). */
#define UR_TX_EXT_MIN 256

struct ur_qp_cc {
	struct ur_cc cc;
	/* First-send times of PSNs, for ops->on_delay (bit i of stamped:
	 * stamp[i] holds one). */
	struct {
		uint32_t psn;
		uint64_t t;
	} stamp[UR_CC_STAMPS];
	uint64_t stamped;
	uint64_t ack_rx;          /* the ACK being handled: its rx_ns (0: now) */
	struct ur_pacer pace;     /* min(algorithm rate, limit_bps) */
	uint64_t limit_bps, limit_burst; /* UR_QP_RATE_LIMIT */
	uint64_t last_cnp;        /* notification point */
	bool cnp_sent;
	uint8_t tcs_in;           /* in the backlog of priority tcs_in - 1
				   * of the device's scheduler (ur_tcs.h) */
	bool wait;                /* the pacer holds the requester ... */
	uint64_t wait_until;      /* ... until then */
	uint64_t late_ns;         /* how late the host woke from such waits:
				   * the largest lately, decaying (bw_burst) */
	/* UROCE_CC=auto (ur_cc_neg.c): the QP negotiates its algorithm;
	 * the peer's hello came (peer_uroce); a hello is out (neg_pending). */
	bool cc_auto, peer_uroce, neg_pending;
	uint64_t hello_at, hello_gap, give_up_at;
	uint32_t hellos_sent;
	uint32_t hellos_asked;    /* hellos sent (not answers) ... */
	uint64_t hello_sent_at;   /* ... the last one when */
	/* Selective repeat's pacer at the delivery rate (ur_bw.h): on once
	 * the peer reported a loss (bw_lossy) and while no CE CNP said the
	 * fabric marks congestion (bw_ecn): ur__cc_bw_on. Allocated at the
	 * first send of a QP whose setting asks for it (UROCE_SR_PACE):
	 * 12 KiB of send records in every QP took a 128-host all-to-all
	 * in uroce-sim from 85 to 251 MB. */
	struct ur_bw *bw;
	bool bw_lossy, bw_ecn;
};

/* A request held by a selective-repeat responder (ur_sr.c): the packet's
 * bytes (BTH .. ICRC) in a slot of the device's pool. */
struct ur_sr_slot {
	struct ur_sr_slot *next;  /* the QP's held list, by PSN; or free list */
	/* The QP's held list again, by arrival time (ur_sr.c "oldest"). */
	struct ur_sr_slot *anext, *aprev;
	uint32_t psn, len;
	uint32_t span;            /* PSNs it takes (a READ: its responses') */
	bool jumbo;               /* from the device's jumbo pool (ur_sr.c) */
	uint64_t t;               /* arrival */
	uint8_t data[];
};

/* Selective repeat of a QP (ur_sr.c). */
struct ur_sr {
	struct ur_sr_params p;    /* p.enable: this QP may use it */
	/* responder */
	bool rx_peer;             /* requests carry the bit: echo it */
	bool draining;
	bool gbn_sent;            /* a plain NAK for this ePSN (could not hold) */
	struct ur_sr_slot *held;  /* requests ahead of ePSN, sorted by PSN */
	struct ur_sr_slot *held_last; /* its last (highest PSN) */
	/* The same requests by arrival, oldest first: the gap timer's and
	 * ur__sr_filled's oldest arrival without a walk of the list. */
	struct ur_sr_slot *arr_first, *arr_last;
	uint32_t nheld;
	uint64_t gap_deadline;    /* NAK the gap at ePSN then; UINT64_MAX none */
	uint32_t reorder_min;     /* p.reorder_ns as set: the gap timer's floor */
	/* The selective NAK in flight (ur_sr.c "renak"): for which ePSN,
	 * when, whether it was repeated; the NAK-to-resend time seen. */
	bool nak_live, nak_again;
	uint32_t nak_psn, nak_repeats;
	uint64_t nak_t;
	uint32_t nak_rtt;         /* smoothed, ns; 0: no sample yet */
	uint64_t fill_t;          /* the latest NAK or report whose resend came */
	uint32_t nak_top;         /* the highest PSN held at the first NAK */
	/* PSNs selectively NAKed lately, by PSN % UR_SR_NAKED (PSN + 1; 0:
	 * none): one that then comes in twice was late, not lost
	 * (ur__sr_duplicate). */
#define UR_SR_NAKED 256
	uint32_t *naked; /* made at the first selective NAK (most QPs send none) */
	uint64_t nak_t0;          /* the first NAK for nak_psn (nak_t: the last) */
	/* Hole reports (ur_sr.c "holes"): while a selective NAK for ePSN is
	 * out, the PSNs missing beyond it, once lost, go in hole reports;
	 * by PSN % UR_SR_NAKED, when (0: not reported). hole_cur: every
	 * PSN from ePSN to its PSN is held or reported (NULL: none yet). */
	struct ur_sr_rep {
		uint32_t psn1;    /* PSN + 1; 0: none */
		uint32_t top;     /* the highest PSN held then */
		uint64_t t;
	} *rep;
	struct ur_sr_slot *hole_cur;
	/* The paths marked requests came over (their UDP source ports, a
	 * sprayed requester's paths): the highest PSN and the last arrival
	 * on each. A path is a FIFO, so ePSN is lost once every path still
	 * delivering has delivered a later PSN (ur_sr.c "gap"). */
#define UR_SR_PATHS 16
	struct ur_sr_path {
		uint16_t sport;
		bool used;
		uint32_t max_psn;
		uint64_t last_t;
		bool told;        /* a silent notice went since it was heard */
		bool gone;        /* its interface stopped receiving (rx_if_ok) */
		uint8_t rx_if;    /* the interface it came in by (ur_rxinfo) */
	} path[UR_SR_PATHS];
	uint64_t if_poll_at;      /* rx_if_ok asked again from then */
	uint64_t if_probe_at;     /* our ports tried again from then */
	uint32_t late_pkts;       /* requests since the last late notice */
	uint64_t path_new_t;      /* when a path was last seen first */
	uint64_t rx_last;         /* the last marked request's arrival */
	bool sprayed;             /* requests came over more than one port */
	/* requester */
	bool tx_peer;             /* answers carry the bit */
	/* Negotiation (UR_SR_AUTO, ur_sr_neg.c): the peer said it holds
	 * out-of-order requests; our hellos until it did or we gave up. */
	bool peer_ok;
	bool neg_pending;
	uint32_t hellos_sent;
	uint64_t hello_at, hello_gap, give_up_at;
};

/* Jumbo packets of an RC QP (ur_qp_set_jumbo): UR_BTH_EXT_JUMBO bits,
 * already limited to what our own link carries. */
struct ur_jumbo {
	uint8_t enable;           /* 0, 1 or UR_JUMBO_AUTO */
	uint8_t rx_peer;          /* sizes the peer's requests offer: answer so */
	uint8_t tx_peer;          /* sizes the peer's answers take: send the
				   * largest */
};

/* Spraying (ur_qp_set_paths, ur_mp.c): requests go over these ports in a
 * weighted round robin; the weights follow losses, ECN marks and ACKs per
 * path (fixed with UR_MP_OBLIVIOUS). */
struct ur_mp {
	uint8_t k;                /* 1 (or 0): off */
	bool oblivious;           /* weights stay equal (UR_MP_OBLIVIOUS) */
	/* UR_MP_RUNS: new requests left in the run on run_path (0: per
	 * packet); run: its length, 1 without the flag */
	uint8_t run, run_left, run_path;
	uint32_t ring;            /* psn_path entries, a power of two */
	uint16_t sport[UR_MP_MAX];
	uint8_t w[UR_MP_MAX];     /* weights, 1..64 (share >> MP_SHARE_SHIFT) */
	/* Rates (ur_mp.c "Weights from delivered rates"): per interval of
	 * about a round trip, the requests each path delivered, its
	 * smallest round trip sampled from requests that reached the
	 * peer's head (the ones a cumulative ACK times truly), and whether
	 * it was found queued deeper than the others (late notice, loss,
	 * CE, or its samples). */
	uint32_t share[UR_MP_MAX];
	uint32_t dlv[UR_MP_MAX];
	uint32_t rtt_min[UR_MP_MAX]; /* ns; 0: no sample yet */
	uint32_t rtt_s[UR_MP_MAX];   /* ns, this interval's; 0: none */
	uint16_t hot;
	uint8_t lates[UR_MP_MAX]; /* late notices this interval */
	uint64_t iv_at;           /* this interval began */
	uint32_t *psn_t;          /* send time of request PSN % ring (ns,
				   * low 32 bits) */
	int16_t cur[UR_MP_MAX];   /* smooth weighted round robin */
	uint32_t ans_next;        /* answers: plain round robin (ur_xmit.c) */
	/* Out of the spray (docs/wire.md "Spraying", "A path that fails"):
	 * MP_DOWN_LOSS (losses named it again and again while other paths
	 * delivered) and MP_DOWN_HOST (the host says so: ur_dev_ops
	 * path_ok); a down path carries only probes. */
	uint8_t down[UR_MP_MAX];
	uint8_t miss[UR_MP_MAX];  /* losses since it last delivered */
	uint16_t went_down;       /* paths to take out at the next tick */
	uint16_t came_back;       /* paths back in since the last tick */
	uint32_t probe_gap[UR_MP_MAX]; /* ns; doubles while it stays down */
	uint64_t probe_at[UR_MP_MAX];
	uint64_t credit_at[UR_MP_MAX]; /* it last delivered (an ACK said) */
	/* A probe not acknowledged within 1.5 round trips + 0.5 ms was lost:
	 * it goes again on a path that is up (a hole the peer might NAK
	 * only after its gap timer, which reordering widens). */
	uint16_t probe_out;       /* paths with a probe in flight */
	uint32_t probe_psn[UR_MP_MAX];
	uint64_t probe_sent[UR_MP_MAX];
	uint64_t deadline;        /* the next probe to give up on */
	/* The peer names the ports it hears (path notices): a probe is
	 * then a copy of a request that also leaves on a live path, and
	 * the notice, not an ACK, puts its path back. */
	bool heard_peer;
	int8_t copy_to;           /* the copy being sent goes here, or -1 */
	/* One request at a time is timed to its ACK: the round trip. */
	bool rtt_on;
	uint32_t rtt_psn;
	uint64_t rtt_at, srtt;
	uint64_t now;             /* as of the last tick */
	uint64_t poll_at;         /* ask the host again */
	struct ur_mp_path_cnt cnt[UR_MP_MAX];
	/* path of request PSN % ring; MP_RESENT: a resend (no sample) */
	uint8_t psn_path[];
};
struct ur_mp *ur__mp_new(const uint16_t *sports, unsigned int k,
			 unsigned int flags, unsigned int run, uint32_t window);
/* The path of request @psn (remembered for the feedback below); a
 * @resend avoids the path its original took. */
unsigned int ur__mp_pick(struct ur_mp *mp, uint32_t psn, bool resend);
/* @psn was lost (a NAK or a timeout named it): its path loses weight. */
void ur__mp_loss(struct ur_mp *mp, uint32_t psn);
/* A CNP named @psn as CE-marked (docs/wire.md "Spraying"): its path
 * loses a quarter of its weight. */
void ur__mp_ecn(struct ur_mp *mp, uint32_t psn);
/* A late notice named @psn (ur_sr.c): its path loses a quarter. */
void ur__mp_late(struct ur_mp *mp, uint32_t psn);
/* The peer heard a request on port @sport (a path notice, ur_sr.c). */
void ur__mp_heard(struct ur_mp *mp, uint16_t sport);
/* The peer stopped hearing port @sport while others delivered. */
void ur__mp_silent(struct ur_qp *qp, uint16_t sport, uint64_t now);
/* ur_sr.c: a port of the peer's came by an interface that stopped
 * receiving while a gap waited for it (and was not heard since). */
bool ur__sr_if_gone(const struct ur_qp *qp);
/* An ACK covered @n requests from @psn: their paths gain weight. */
void ur__mp_acked(struct ur_mp *mp, uint32_t psn, uint32_t n);
/* Time passes for a spraying QP (after a packet, at its timer): ask the
 * host which paths work, take out the paths that went down (what they
 * carry that is not yet acknowledged is sent again on the others). */
void ur__mp_tick(struct ur_qp *qp, uint64_t now);
/* The port for an answer (ACK, NAK, READ response): round robin over the
 * paths that are up. */
uint16_t ur__mp_ans_sport(struct ur_mp *mp);
/* One direction's key of an encrypted QP (ur_crypt.c): a libgcrypt GCM
 * handle keyed for (session id, epoch), and the IV's fixed part. */
struct gcry_cipher_handle;
struct ur_crypt_key {
	struct gcry_cipher_handle *hd;
	uint64_t sid, epoch;
	uint8_t salt[4];
	bool valid;
};

/* Encryption of an RC/UC QP (ur_qp_set_crypt, docs/wire.md "Encryption"). */
struct ur_qp_crypt {
	uint8_t alg;              /* enum ur_crypt_alg; 0: plain */
	uint8_t ikm[UR_CRYPT_KEY_LEN]; /* the administrator's key */
	uint64_t tx_sid, tx_seq;  /* our session id, next sequence number */
	struct ur_crypt_key tx;
	/* Receive: the peer's session id once a packet under it verified
	 * (rx_locked); the keys of two epochs; the replay window. */
	bool rx_locked, rx_any;
	uint64_t rx_sid, rx_top;
	struct ur_crypt_key rx[2];
	uint64_t rx_win[UR_CRYPT_REPLAY_WIN / 64];
	uint8_t *buf;             /* opened payloads land here, never in place */
	uint32_t buf_cap;
	/* Negotiation (ur_crypt_neg.c): kept across ur__crypt_free. */
	uint8_t policy;           /* enum ur_crypt_policy */
	uint8_t neg;              /* enum ur_crypt_neg */
	bool have_peer, confirmed;
	uint8_t nonce_l[UR_CRYPT_NONCE_LEN], nonce_p[UR_CRYPT_NONCE_LEN];
	uint64_t hello_at, give_up_at, hello_gap;
	uint32_t hellos_sent;
};

struct ur_qp_priv {
	struct ur_qp_attr attr;
	uint32_t sq_cap, rq_cap;  /* slots (caps.max_*_wr) */
	uint32_t sq_head, sq_tail; /* head: oldest not completed */
	uint32_t rq_head, rq_tail;
	struct ur_swqe *sq;
	struct ur_qsge *sq_sge;   /* sq_cap * caps.max_send_sge */
	uint8_t *sq_inline;       /* sq_cap * caps.max_inline_data */
	struct ur_rwqe *rq;
	struct ur_qsge *rq_sge;   /* rq_cap * caps.max_recv_sge */
	uint8_t ring_custom;      /* UR_QR_* bits: from caps.alloc */
	bool en_sqd_notify;
	struct ur_req req;
	struct ur_comp comp;
	struct ur_resp resp;
	struct ur_qp_cc cc;
	struct ur_sr sr;
	struct ur_jumbo jumbo;
	struct ur_mp *mp; /* spraying (ur_qp_set_paths); NULL: one port */
	struct ur_qp_crypt crypt;
};

/* The states in which a QP takes packets in: RTR onwards, until an error
 * or a reset (the QP state machine, 10.3). */
static inline bool ur_state_receives(uint32_t state)
{
	return state == UR_QPS_RTR || state == UR_QPS_RTS ||
	       state == UR_QPS_SQD;
}

/*
 * Whether a packet to connected QP @qp (RC, UC) comes from its peer: the
 * source address is the AV's destination (IBTA 9.6 header validation: a
 * connected QP takes packets from its peer's port only; RoCEv2's GIDs are
 * the IP addresses, Annex A17). Without it anyone who guesses a QPN and
 * PSN could inject (docs/security.md). A host that gives no rxinfo gets
 * nothing in.
 */
static inline bool ur__from_peer(const struct ur_qp *qp,
				 const struct ur_rxinfo *ri)
{
	const struct ur_ipudp *av = &qp->priv->attr.path;

	return ri && ur_ip_same(ri->path.v6, ri->path.src, av->v6, av->dst);
}

static inline struct ur_qp_priv *ur_priv(const struct ur_qp *qp)
{
	return qp->priv;
}

static inline struct ur_swqe *ur_swqe_at(const struct ur_qp *qp, uint32_t i)
{
	return &qp->priv->sq[i % qp->priv->sq_cap];
}

static inline struct ur_qsge *ur_swqe_sge(const struct ur_qp *qp, uint32_t i)
{
	return &qp->priv->sq_sge[(size_t)(i % qp->priv->sq_cap) *
				 (qp->caps.max_send_sge ? qp->caps.max_send_sge : 1)];
}

static inline uint8_t *ur_swqe_inline(const struct ur_qp *qp, uint32_t i)
{
	return &qp->priv->sq_inline[(size_t)(i % qp->priv->sq_cap) *
				    qp->caps.max_inline_data];
}

static inline struct ur_rwqe *ur_rwqe_at(const struct ur_qp *qp, uint32_t i)
{
	return &qp->priv->rq[i % qp->priv->rq_cap];
}

static inline struct ur_qsge *ur_rwqe_sge(const struct ur_qp *qp, uint32_t i)
{
	return &qp->priv->rq_sge[(size_t)(i % qp->priv->rq_cap) *
				 (qp->caps.max_recv_sge ? qp->caps.max_recv_sge : 1)];
}

static inline uint32_t ur_qp_mtu(const struct ur_qp *qp)
{
	uint32_t m = qp->priv->attr.path_mtu;

	if (!m || (qp->dev->max_mtu && m > qp->dev->max_mtu))
		m = qp->dev->max_mtu ? qp->dev->max_mtu : 1024;
	return m;
}

/* Payload per packet of a new SEND or WRITE: jumbo once negotiated, on a
 * path at the largest standard MTU. */
static inline uint32_t ur_qp_req_mtu(const struct ur_qp *qp)
{
	uint32_t m = ur_qp_mtu(qp);
	const struct ur_jumbo *j = &qp->priv->jumbo;

	return j->enable && j->tx_peer && m == 4096 ? ur_jumbo_size(j->tx_peer)
						    : m;
}

/* Packets a message of @len bytes needs at @mtu (a zero-length one takes 1). */
static inline uint32_t ur_npkts(uint32_t len, uint32_t mtu)
{
	return len ? (len + mtu - 1) / mtu : 1;
}

/* ImmDt travels as the bytes of the network-order value (ibv imm_data). */
static inline void ur_imm_put(uint8_t *p, uint32_t net)
{
	const uint8_t *b = (const uint8_t *)&net;

	p[0] = b[0]; p[1] = b[1]; p[2] = b[2]; p[3] = b[3];
}

static inline uint32_t ur_imm_net(uint32_t host_order)
{
	uint32_t net;
	uint8_t *b = (uint8_t *)&net;

	ur_put32(b, host_order);
	return net;
}

#define UR_CNT(qp, name) ((qp)->dev->cnt.name++)

/* ur_xmit.c: build and send one packet. */
struct ur_txhdr {
	uint8_t opcode;
	bool se, ackreq, becn;
	bool no_sr;         /* an answer that must not carry UR_BTH_EXT_SR */
	bool resend;        /* a request sent before (spraying: best path) */
	uint32_t dqpn, psn;
	struct ur_reth reth;
	struct ur_atmeth atm;
	struct ur_aeth aeth;
	struct ur_deth deth;
	uint64_t atmack;
	uint32_t imm_net;   /* ImmDt, network order */
	uint32_t ieth;
	uint32_t xrc_srqn;  /* XRCETH, on an XRC request */
};
/* The wire opcode of RC opcode @op on @qp: its XRC twin on an XRC QP
 * (IBTA table 38: same low five bits, prefix 101b). */
static inline uint8_t ur__op(const struct ur_qp *qp, uint8_t op)
{
	return qp->xrc ? ur_op_xrc(op) : op;
}
/* A buffer for @opcode with @payload_len bytes; the payload goes at
 * ur__tx_payload(). NULL when the host is out of buffers. */
/* Encryption (ur_crypt.c). Seal: the packet in @b has its headers
 * (@hdr_len bytes) written and its payload in place or at b->ext; writes
 * the ciphertext and the trailer after the headers, clears b->ext.
 * Open: 0 with @out the packet with its plaintext payload (in the QP's
 * buffer), -EBADMSG if it does not verify, -EALREADY for a replay. */
void ur__crypt_seal(struct ur_qp *qp, struct ur_pktbuf *b, uint32_t hdr_len,
		    uint32_t payload_len);
int ur__crypt_open(struct ur_qp *qp, const struct ur_pkt *pkt,
		   struct ur_pkt *out);
/* A fresh session: new id, sequence 0, the peer's session forgotten
 * (RESET, INIT->RTR). */
void ur__crypt_reset(struct ur_qp *qp);
void ur__crypt_free(struct ur_qp *qp);
/* Size the open buffer for the QP's largest payload (4096 bytes, 16 KiB
 * with jumbo packets on); 0 or -ENOMEM. */
int ur__crypt_buf(struct ur_qp *qp);
void ur__crypt_gid16(bool v6, const uint8_t *a, uint8_t out[16]);
/* Negotiation (ur_crypt_neg.c): start at INIT->RTR; the timer resends
 * the hello and gives up. */
void ur__crypt_neg_start(struct ur_qp *qp, uint64_t now);
void ur__crypt_neg_timer(struct ur_qp *qp, uint64_t now);
static inline bool ur__crypt_pending(const struct ur_qp *qp)
{
	return qp->priv->crypt.neg == UR_CRYPT_NEG_PENDING;
}
static inline uint32_t ur__crypt_overhead(const struct ur_qp *qp)
{
	return qp->priv->crypt.alg ? UR_CRYPT_TRAILER : 0;
}

struct ur_pktbuf *ur__tx_alloc(struct ur_qp *qp, uint8_t opcode,
				uint32_t payload_len);
uint8_t *ur__tx_payload(struct ur_pktbuf *b, uint8_t opcode);
/* Fill the payload: a reference to @src when the host sends from memory
 * it does not own (ur_dev.tx_ext), else a copy. */
void ur__tx_payload_from(struct ur_qp *qp, struct ur_pktbuf *b,
			  uint8_t opcode, const uint8_t *src, uint32_t len);
/* Write the headers of @h into @b (payload already in place), set the
 * length and the path (NULL: the QP's AV), hand it to the host. */
void ur__tx_send(struct ur_qp *qp, struct ur_pktbuf *b,
		  const struct ur_txhdr *h, uint32_t payload_len,
		  const struct ur_ipudp *path);
/* Send an ACK/NAK with @syndrome for @psn (responder). */
void ur__tx_ack(struct ur_qp *qp, uint8_t syndrome, uint32_t psn);
/* The same, without the selective-repeat bit (a plain go-back-N NAK). */
void ur__tx_ack_plain(struct ur_qp *qp, uint8_t syndrome, uint32_t psn);
void ur__tx_probe_ack(struct ur_qp *qp, uint16_t sport);
/* Send the ACK owed (resp.ack_owed), if any. */
void ur__tx_ack_owed(struct ur_qp *qp);

/* ur_cq.c */
void ur__cq_push(struct ur_qp *qp, struct ur_cq *cq, const struct ur_cqe *e,
		  bool solicited);

/* Whether a key was invalidated since @seen (then @seen moves on): memory
 * resolved before must be looked up again (10.6.3: an access through an
 * invalid key fails, it never reaches memory the key no longer covers). */
static inline bool ur__keys_moved(const struct ur_qp *qp, uint64_t *seen)
{
	uint64_t g = atomic_load_explicit(&qp->dev->key_gen,
					  memory_order_acquire);

	if (g == *seen)
		return false;
	*seen = g;
	return true;
}

/* ur_req.c: the SGEs of send WQE @idx, checked again if a key moved since
 * they were resolved: 0, or -EACCES (a local protection error). */
int ur__wqe_keys(struct ur_qp *qp, uint32_t idx, struct ur_swqe *wqe);

/* ur_qp.c */
void ur__qp_error(struct ur_qp *qp, uint64_t now);
void ur__qp_update_deadline(struct ur_qp *qp);
/*
 * A negotiation hello's resends (selective repeat, congestion control,
 * encryption: ur_*_neg.c): the first 1 ms after the hello, the gap
 * doubling up to 64 ms. ur__hello_first schedules the first;
 * ur__hello_again is true when one is due (and schedules the next).
 */
#define UR_HELLO_FIRST_NS 1000000ull    /* 1 ms */
#define UR_HELLO_MAX_GAP_NS 64000000ull /* 64 ms */
static inline void ur__hello_first(uint64_t *at, uint64_t *gap, uint64_t now)
{
	*gap = UR_HELLO_FIRST_NS;
	*at = now + *gap;
}

int ur__hello_parse_ids(uint16_t attr, uint32_t magic, const uint8_t *mad,
			size_t len, struct ur_sr_hello *h);
static inline bool ur__hello_again(uint64_t *at, uint64_t *gap, uint64_t now)
{
	if (now < *at)
		return false;
	*gap = *gap * 2 < UR_HELLO_MAX_GAP_NS ? *gap * 2 : UR_HELLO_MAX_GAP_NS;
	*at = now + *gap;
	return true;
}
int ur__sge_resolve(struct ur_qp *qp, struct ur_qsge *sge, uint32_t n,
		     uint32_t access);
/* Copy @len bytes at @off of the message into / out of resolved SGEs. */
int ur__sge_copy_in(struct ur_qsge *sge, uint32_t n, uint32_t off,
		     const uint8_t *src, uint32_t len);
void ur__sge_copy_out(const struct ur_qsge *sge, uint32_t n, uint32_t off,
		       uint8_t *dst, uint32_t len);
/* Where @len bytes at @off of the message lie, if in one SGE; else NULL. */
const uint8_t *ur__sge_span(const struct ur_qsge *sge, uint32_t n,
			     uint32_t off, uint32_t len);
void ur__recv_complete(struct ur_qp *qp, uint32_t status, uint32_t opcode,
			uint32_t byte_len, uint32_t imm, uint32_t flags,
			uint32_t src_qp, bool solicited, uint64_t now);
/* The same with a service level for the completion (UD receives). */
void ur__recv_complete_sl(struct ur_qp *qp, uint32_t status, uint32_t opcode,
			   uint32_t byte_len, uint32_t imm, uint32_t flags,
			   uint32_t src_qp, uint8_t sl, bool solicited,
			   uint64_t now);

/* ur_req.c */
bool ur__wr_allowed(uint32_t qp_type, uint32_t opcode);
bool ur__wr_is_rd_atomic(uint32_t opcode);
bool ur__wr_is_local(uint32_t opcode); /* BIND_MW, LOCAL_INV */
uint32_t ur__wr_wc_opcode(uint32_t opcode);
void ur__wqe_done(struct ur_qp *qp, struct ur_swqe *wqe, uint32_t status);
void ur__req_progress(struct ur_qp *qp, uint64_t now);
void ur__req_go_back(struct ur_qp *qp, uint32_t psn);
int ur__req_resend_one(struct ur_qp *qp, uint32_t idx, uint32_t psn,
			uint64_t now);
uint32_t ur__req_cursor_psn(const struct ur_qp *qp);
void ur__sq_complete(struct ur_qp *qp, uint64_t now);
void ur__req_reset(struct ur_qp *qp);

/* ur_comp.c */
void ur__comp_rx(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now);
void ur__comp_timer(struct ur_qp *qp, uint64_t now);
void ur__comp_arm(struct ur_qp *qp, uint64_t now);
void ur__comp_held(struct ur_qp *qp, uint64_t now);
void ur__comp_unheld(struct ur_qp *qp, uint64_t now);
void ur__comp_sent(struct ur_qp *qp, uint64_t now);

/* ur_resp.c */
void ur__resp_rx(struct ur_qp *qp, const struct ur_pkt *pkt,
		  const struct ur_rxinfo *ri, uint64_t now);
void ur__resp_progress(struct ur_qp *qp, uint64_t now);

/* ur_sr.c: selective repeat */
/* Our requests carry UR_BTH_EXT_SR: enabled outright, or negotiated and
 * the peer has shown it is a uroce QP with selective repeat (its hello or
 * its marked packets): a standard peer never sees the bit. */
static inline bool ur__sr_offer(const struct ur_qp *qp)
{
	const struct ur_sr *sr = &qp->priv->sr;

	return sr->p.enable == 1 ||
	       (sr->p.enable == UR_SR_AUTO &&
		(sr->peer_ok || sr->p.peer_known || sr->rx_peer ||
		 sr->tx_peer));
}
/* Our requests offer jumbo packets (the UR_BTH_EXT_JUMBO bits our link
 * carries): enabled outright, or negotiated (the default) and the peer has
 * shown it is a uroce QP: its selective-repeat or congestion-control
 * hello, or its packets marked with either extension. A standard peer
 * (rxe, an RNIC) never sees the bits, as with UR_SR_AUTO. */
static inline bool ur__jumbo_offer(const struct ur_qp *qp)
{
	const struct ur_qp_priv *p = qp->priv;

	return p->jumbo.enable == 1 ||
	       (p->jumbo.enable == UR_JUMBO_AUTO &&
		(p->sr.peer_ok || p->sr.p.peer_known || p->sr.rx_peer ||
		 p->sr.tx_peer || p->cc.peer_uroce || p->jumbo.rx_peer ||
		 p->jumbo.tx_peer));
}
/* Negotiation (ur_sr_neg.c): start at INIT->RTR; the timer resends. */
void ur__sr_neg_start(struct ur_qp *qp, uint64_t now);
void ur__sr_neg_timer(struct ur_qp *qp, uint64_t now);
/* UROCE_CC=auto (ur_cc_neg.c): hello the peer going INIT->RTR; resend,
 * give up; ur__cc_switch: a new algorithm for the QP (ur_cc.c). */
void ur__cc_neg_start(struct ur_qp *qp, uint64_t now);
void ur__cc_neg_timer(struct ur_qp *qp, uint64_t now);
void ur__cc_switch(struct ur_qp *qp, const struct ur_cc_params *p,
		   uint64_t now);
/* auto: dcqcn-rtt hands the QP to Swift on a fabric's hello @rtt (ur_cc.c). */
void ur__cc_auto_pick(struct ur_qp *qp, uint64_t rtt, uint64_t now);
static inline bool ur__sr_marked(const struct ur_qp *qp, const struct ur_pkt *pkt)
{
	return qp->priv->sr.p.enable && qp->type == UR_QPT_RC &&
	       ur_bth_ext_sr(pkt->bth);
}
/* A marked request came over UDP source port @sport (responder). */
void ur__sr_path_seen(struct ur_qp *qp, uint16_t sport, uint8_t rx_if,
		      uint32_t psn, uint64_t now);
/* Hold request @pkt, @d PSNs ahead of ePSN (responder). */
void ur__sr_hold(struct ur_qp *qp, const struct ur_pkt *pkt, uint32_t d,
		  uint64_t now);
/* Execute the held requests that are now in order. */
void ur__sr_drain(struct ur_qp *qp, uint64_t now);
/* A duplicate of request @psn arrived (responder). */
void ur__sr_duplicate(struct ur_qp *qp, uint32_t psn, uint64_t now);
/* The request at ePSN arrived, not NAKed, behind held ones: a measure of
 * the reordering (responder). */
void ur__sr_filled(struct ur_qp *qp, uint64_t now);
void ur__sr_resent(struct ur_qp *qp, uint32_t psn, uint64_t now);
void ur__sr_timer(struct ur_qp *qp, uint64_t now);
/* Return every held request to the pool (error, reset, destroy). */
void ur__sr_release(struct ur_qp *qp);
/* Requester: resend the one request packet at @psn (a selective NAK). */
void ur__req_resend_psn(struct ur_qp *qp, uint32_t psn, uint64_t now);
void ur__req_resend_hole(struct ur_qp *qp, uint32_t psn, uint32_t n,
			 uint64_t now);
/* Selective repeat: the newest PSN sent again, with AckReq. */
void ur__req_probe(struct ur_qp *qp, uint64_t now);
/* Spraying: a copy of the newest request sent (ur_mp.c probes); 0, or
 * -ENOENT when nothing is in flight. */
int ur__req_copy_newest(struct ur_qp *qp, uint64_t now);
/* ur_resp.c: run one request through the responder's state machine. */
void ur__resp_run(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now);

/* ur_srq.c: true when the QP has a receive WQE at rq_head, taking one
 * from its SRQ if needed. */
bool ur__rq_ready(struct ur_qp *qp);

/* ur_mw.c: memory windows; 0 or -EINVAL. */
int ur__mw_bind(struct ur_qp *qp, uint32_t mw_key, uint32_t new_rkey,
		 uint32_t lkey, uint64_t addr, uint64_t length,
		 uint32_t access);
int ur__mw_invalidate(struct ur_qp *qp, uint32_t key);

/* ur_cc.c */
void ur__cc_qp_init(struct ur_qp *qp, uint64_t now);
void ur__cc_qp_reset(struct ur_qp *qp);
/* The priority of @qp's packets to @path (NULL: its AV), ur_tc_prio. */
static inline unsigned int ur__qp_prio(const struct ur_qp *qp,
				       const struct ur_ipudp *path)
{
	return ur_tc_prio(qp->dev->tcs.cfg.trust,
			  path ? path->tos : qp->priv->attr.path.tos,
			  qp->priv->attr.sl);
}
bool ur__cc_may_send(struct ur_qp *qp, unsigned int prio, uint64_t now);
/* The requester has nothing (more) to send, or the QP goes: it leaves its
 * class's backlog (ur_tcs_backlog). */
void ur__cc_idle(struct ur_qp *qp);
/* The requester sent all it has: the delivery-rate samples of what is in
 * flight are app-limited (ur_bw.h). */
void ur__cc_sq_empty(struct ur_qp *qp);
/* The requester runs: the end of a pacer's wait (how late it woke). */
void ur__cc_woke(struct ur_qp *qp, uint64_t now);
void ur__cc_sent(struct ur_qp *qp, unsigned int prio, uint32_t bytes, uint32_t psn, bool resend,
		 uint64_t now);
/* The oldest unacknowledged PSN moved from @from by @pkts. */
void ur__cc_acked(struct ur_qp *qp, uint32_t from, uint32_t pkts,
		  uint64_t now);
/* The same, for a delay-based algorithm: the RTT sample (ops->on_delay). */
void ur__cc_delay(struct ur_qp *qp, uint32_t from, uint32_t pkts,
		  uint64_t now);
/* A loss (ops->on_loss): the retransmission timer, or a NAK. */
void ur__cc_loss(struct ur_qp *qp, bool timeout, uint64_t now);
/* Packets the algorithm lets be in flight (UINT32_MAX: no window). */
uint32_t ur__cc_window(const struct ur_qp *qp);
/* Selective repeat's delivery-rate pacer is on (ur_cc.c). */
bool ur__cc_bw_on(const struct ur_qp *qp);
/* A paced requester asks for an ACK on every packet when its pacer holds
 * AckReqs apart for half the transport timer or more (ur_cc.c). */
bool ur__cc_ack_wanted(const struct ur_qp *qp);
/* The requester gave PSNs to a message of @pkts packets (ops->on_msg). */
void ur__cc_msg(struct ur_qp *qp, uint32_t pkts);
void ur__cc_rx_cnp(struct ur_qp *qp, const struct ur_pkt *pkt, uint64_t now);
void ur__cc_rx_ce(struct ur_qp *qp, uint32_t psn, uint64_t now);

/* ur_ud.c */
void ur__ud_rx(struct ur_qp *qp, const struct ur_pkt *pkt,
		const struct ur_rxinfo *ri, uint64_t now);
void ur__ud_grh(uint8_t *grh, const struct ur_rxinfo *ri, uint32_t ib_len);

#endif

/* SPDX-License-Identifier: MIT */
/* Private to src/io: the engine's objects. */
#ifndef UR_IO_PRIV_H
#define UR_IO_PRIV_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>

#include "ur_engine.h"
#include "ur_txq.h"
#include "ur_settings.h" /* every UROCE_* setting (src/util/settings.c) */

/* Largest IB part we send or accept (a transmit queue's slot). */
#define UR_IO_MAX_PKT UR_TXQ_PKT_MAX
#define UR_IO_RX_BATCH 16
#define UR_IO_RX_BUF 65536  /* a UDP GRO run of datagrams */
#define UR_IO_KEY_QUARANTINE 4096 /* deregistered keys not reused */
#define UR_IO_FWD_TURN 256 /* packets from one sibling connection per drain */
#define UR_IO_RX_TURN 64 /* full receive batches per drain */
/* Segments per UDP GSO send (IP IDs 0..31): as many as a doorbell hold
 * sends together (ur_txq_hold_due). */
#define UR_IO_GSO_MAX_SEGS UR_TXQ_HOLD_MAX
#define UR_IO_HELD_QPS 8 /* QPs a thread's next poll sends the held batches of */
#define UR_IO_OWE_QPS 8 /* QPs owing an ACK at a receive batch's end */
#define UR_IO_RX_KEEP 32 /* packets of one QP delivered under one lock */
#define UR_IO_SLOT_SHIFT 16   /* QPN = slot << 16 | random 16 bits */
/* An application that polled within this window drains the socket itself. */
#define UR_IO_APP_POLL_NS 100000ull
#define UR_IO_APP_LEAVES_NS 20000ull /* poll again later than this: left */
/* A poller holds the ACKs it made this long for the caller's next post to
 * carry (same system call) before an empty poll sends them alone. */
#define UR_IO_ACK_HOLD_NS 5000ull
#define UR_IO_APP_LEFT_MAX 4   /* saturating count of late returns ... */
#define UR_IO_APP_LEFT_HAND 3  /* ... from which the engine takes the socket */
/* How often the engine looks whether the application still spins: each
 * look is a wake-up that takes a core from a spinning program. */
#define UR_IO_APP_RECHECK_NS 1000000ull
/* The engine thread yields after a drain while an application thread
 * polled this recently on the same CPU (engine_main). */
#define UR_IO_APP_YIELD_NS 2000000ull
/* Bytes of a receive batch delivered between reads of the clock. */
#define UR_IO_NOW_BYTES 65536u
/* A poller that found rx_lock taken this many times in a row, by the
 * engine thread on the same core, yields the core to it at each further
 * try (ur_engine_poll). */
#define UR_IO_POLL_BUSY_YIELD 16
/* A busy engine looks for new siblings this often (one accept4 each); a
 * sleeping one is woken by the listener. */
#define UR_IO_ACCEPT_NS 1000000ull

/* A tiny chained hash from a 32-bit key to a pointer. */
struct ur_map_node {
	uint32_t key;
	void *val;
	struct ur_map_node *next;
};
struct ur_map {
	struct ur_map_node **b;
	uint32_t nb; /* power of two */
	uint32_t n;
};
int ur__map_init(struct ur_map *m, uint32_t nb);
void ur__map_fini(struct ur_map *m);
void *ur__map_get(const struct ur_map *m, uint32_t key);
int ur__map_put(struct ur_map *m, uint32_t key, void *val); /* -EEXIST */
void *ur__map_del(struct ur_map *m, uint32_t key);

/* Engine per-QP state, hung on qp->io_priv. */
struct ur_eqp {
	pthread_mutex_t lock;
	struct ur_qp *qp;
	struct ur_engine *e;
	int tx_fd;       /* socket bound to the QP's UDP source port */
	uint16_t sport;
	/* Spraying (ur_qp_set_paths): the further ports it holds, [0] = sport */
	uint16_t mp_sport[UR_MP_MAX];
	uint8_t mp_k;
	/* Its connected socket, opened at its first packet (QP lock) if the
	 * QP is connected; NULL if none could be (cs_tried). */
	struct ur_csock *cs;
	bool cs_tried;
	/* Doorbell batching: small requests of a QP that streams them with
	 * many in flight wait here (QP lock) and leave together, before
	 * anything else the QP sends (ur_engine_qp_unlock); NULL until the
	 * QP first holds one. */
	struct tx_batch *held;
	bool last_small;  /* the previous post made one small packet */
	/* PSNs unacknowledged when the lock was taken: in flight before a
	 * post, which a READ request's own response span must not count;
	 * and the first PSN never sent then, to count those of them still
	 * unacknowledged after the ACKs the post's unlock ran (post_holds). */
	uint32_t unacked_at_lock, psn_at_lock;
	/* Plain ACKs that arrived while another thread held the lock (a post
	 * in its system call): the receiver leaves them here instead of
	 * waiting, and whoever holds the lock runs them before releasing it
	 * (ur_ackq, the transport's). One producer at a time (rx_lock). */
	struct ur_ackq acks;
	/* iWARP: the QP's TCP stream (stream.c), NULL for RoCE. */
	struct ur_stream *stream;
};
struct ur_stream;
/* stream.c: write what the QP's connection holds (QP lock held). */
void ur__stream_kick(struct ur_stream *s, uint64_t now);
void ur__stream_free(struct ur_stream *s);
/* A thread spinning in ibv_poll_cq on an empty @cq reads the sockets of
 * the connected streams that complete into it (stream.c). */
void ur__stream_poll(struct ur_engine *e, const struct ur_cq *cq);
/* ur_engine_qp_lock if the QP lock is free (engine.c). */
bool ur__qp_trylock(struct ur_qp *qp);

/* engine.c, for the application's poll path (poll.c): wake a sleeping
 * engine thread; send the poll batch if its oldest ACK waited long enough
 * (rx_lock held). */
void ur__engine_wake(struct ur_engine *e);
void ur__poll_tx_flush_held(struct ur_engine *e, uint64_t now);
/* A post was held for its thread's next poll (poll.c). */
void ur__poll_posting(struct ur_engine *e);

/* keys.c: the memory key table (port 1's engine's, e->keys). */
uint32_t ur__rand32(void);
const struct ur_mr *ur__key_get(struct ur_engine *e, uint32_t key);
int ur__key_user_set(struct ur_engine *k, struct ur_engine *e, bool on);

/*
 * A connected QP's own transmit socket (csock.c): bound to its source port,
 * connected to its peer; IPv4 datagrams are numbered by next_id under the
 * lock (ur__csock_begin, _sent for each send, _end).
 */
struct ur_csock {
	pthread_mutex_t lock;
	int fd;
	int fallback_fd;   /* the port's unconnected socket, once retired */
	bool v6;
	uint8_t dst[16];
	uint16_t next_id;  /* IPv4 ID of the next send's first segment */
	bool per_seg;      /* a GSO send moves the counter by its segments */
	atomic_bool dead;  /* retired: a send may have used an unknown ID */
};
/* At most this many per engine: each is a file descriptor of the
 * application's process. */
#define UR_IO_CSOCK_MAX 64
#define UR_IO_PIN_MAX 16 /* spraying peers' addresses pinned (pin.c) */

/* A source-port socket, shared by the QPs that hash to the same port. */
struct ur_sport_sock {
	int fd;
	int refs;
};

/* recvmmsg's vectors, kept armed between polls: an empty poll (most of a
 * spinning application's) then costs the system call alone. */
struct ur_rxv {
	struct mmsghdr msg[UR_IO_RX_BATCH];
	struct iovec iov[UR_IO_RX_BATCH];
	struct sockaddr_storage from[UR_IO_RX_BATCH];
	char ctl[UR_IO_RX_BATCH][192]; /* pktinfo, tos, GRO, timestamp */
};

/* What an ICRC mismatch means (UROCE_ICRC, icrc.c). */
enum ur_icrc_policy { UR_ICRC_AUTO, UR_ICRC_STRICT, UR_ICRC_OFF };

#define UR_BOND_MAX 8
struct ur_engine {
	struct ur_dev dev;
	/* iWARP streams of this engine's QPs (stream.c), for pollers */
	pthread_mutex_t stream_lock;
	struct ur_stream *streams;
	atomic_int nstreams;
	struct ur_engine_cfg cfg;
	struct ur_ipudp local;  /* our address, as the ICRC sees it */
	int rx_fd;              /* UDP <addr>:<port>, SO_REUSEPORT */
	int fwd_fd;             /* unix seqpacket listener: claims our slot */
	int fwd_id_fd;          /* bound to our build's name (fwd.c) */
	int fwd_out[256];       /* connections to siblings, by slot: what
				 * the kernel gave us for them */
	/* Our own packets to siblings (to_sibling), on connections of their
	 * own: a flood that lands here for a sibling (anyone can send it)
	 * must not fill the queue our own ACKs and requests wait in. */
	int fwd_own[256];
	pthread_mutex_t fwd_lock; /* fwd_out, fwd_own: any thread may send */
	int fwd_in[512];        /* connections from siblings (two each) */
	int fwd_nin;
	uint64_t fwd_accept_at; /* last accept4 of a busy engine (drain_all) */
	/* Peers whose datagrams one socket takes from every port (pin.c),
	 * under rx_lock; pin_ep holds their sockets, in ep_fd. */
	struct ur_pin {
		bool v6;
		uint8_t addr[16];
		int fd; /* -1: tried and failed */
	} pin[UR_IO_PIN_MAX];
	unsigned int npin;
	int pin_ep;
	int ev_fd;              /* eventfd: wake the engine thread */
	int ep_fd;
	int ep_timer_fd;        /* only the wake-up eventfd: timers alone */
	atomic_uint_fast64_t last_poll; /* when an app thread last spun */
	atomic_uint_fast64_t prev_poll; /* previous empty poll */
	uint8_t slot;           /* this process's slot on the address */
	pthread_t thread;
	atomic_bool stop;
	sem_t up;            /* posted once the thread first sleeps */
	bool up_said;         /* engine thread only */
	atomic_uint_fast64_t sleep_until; /* engine thread's wake-up time */
	atomic_bool timer_dirty;  /* a QP timer moved earlier since the scan */
	atomic_uint scanning;     /* walks of the QP table under way */
	/* Earliest QP deadline known (a hint: the engine thread stays the
	 * one that never misses a timer); a spinning poller runs due timers
	 * itself rather than wait for the engine thread to be scheduled. */
	atomic_uint_fast64_t next_deadline;
	/* When a poll last returned completions, and how long (smoothed) the
	 * poller then took to poll again: a program that leaves after its
	 * completion (to spin on memory) hands the socket back at once. */
	atomic_uint_fast64_t comp_at;
	atomic_int comp_left; /* 0..UR_IO_APP_LEFT_MAX: recent polls came late */
	/* The application says its pollers keep polling (or block on a
	 * channel) until their next completion: no hand-over at completions
	 * (uroce_context_set_poller_stays). */
	atomic_bool poller_stays;
	atomic_int drain_cpu; /* where the engine thread last took rx_lock */
	atomic_int poll_cpu;  /* where an application thread last polled */

	pthread_mutex_t rx_lock;   /* one thread drains the sockets at a time */
	struct tx_batch *poll_tx;  /* ACKs made by polling threads (rx_lock) */
	/* When its oldest waiting ACK was made, or 0 (written under rx_lock;
	 * the engine thread reads it to plan its sleep: poll_tx_mark). */
	atomic_uint_fast64_t poll_tx_at;
	pthread_rwlock_t qp_lock;  /* qps + sports */
	/* A QP enters under qp_lock (write) and leaves under rx_lock and
	 * qp_lock (write): read under either (a delivery, under rx_lock,
	 * takes no table lock per packet; map.c). */
	struct ur_map qps;         /* qpn -> struct ur_qp */
	struct ur_map sports;      /* sport -> struct ur_sport_sock */
	/* Spraying: the further source ports are shared by the QPs of a
	 * group (qpn mod UR_MP_GROUPS), path i of group g leaving from
	 * ur_mp_sport(mp_base[g], i); 0 until a QP of g first sprays
	 * (qp_lock). So a device holds at most UR_MP_GROUPS x (paths - 1)
	 * of them, not that many per QP (engine.c paths_open). */
#define UR_MP_GROUPS 4
	uint16_t mp_base[UR_MP_GROUPS];
	struct ur_map srqs;        /* XRC SRQ number -> struct ur_srq (as qps) */
	struct ur_mcast_grp *mcast; /* groups (mcast.c; rx_lock and qp_lock) */
	pthread_rwlock_t mr_lock;
	struct ur_map mrs;         /* key -> struct ur_mr */
	/* The engine whose key table and mr_lock this one uses: itself, or
	 * its device's port 1 (cfg.keys); that one bumps the key_gen of the
	 * engines that use its table (key_users, under its mr_lock). */
	struct ur_engine *keys;
	struct ur_engine *key_users[8];
	/* The key indexes of the last UR_IO_KEY_QUARANTINE keys that died
	 * (mr_lock): not handed out again meanwhile, since a peer may still
	 * hold the old rkey (docs/security.md). */
	uint32_t key_dead[UR_IO_KEY_QUARANTINE];
	uint32_t key_dead_next;

	/* QP1 (gsi.c): the CM's MAD handler, called under rx_lock */
	ur_gsi_rx_fn gsi_fn;
	void *gsi_arg;
	pthread_mutex_t gsi_lock; /* gsi_fd, gsi_psn */
	int gsi_fd;
	int gsi_bfd[UR_BOND_MAX]; /* a bonded port's: one per interface */
	uint16_t gsi_sport;
	uint32_t gsi_psn;

	/* rx buffers, used under rx_lock */
	uint8_t (*rxbuf)[UR_IO_RX_BUF];
	struct ur_rxv *rxv;         /* their recvmmsg vectors */
	/* A spinning poller receives one datagram per system call (recvmsg)
	 * until two polls in a row find data, then batches (recvmmsg) until
	 * one finds at most one: a lone datagram costs recvmmsg a second,
	 * failing receive. The engine thread always batches (rx_call). */
	bool rx_batch;
	bool rx_hit;                /* the last single receive found one */
	uint64_t rx_real_off;       /* CLOCK_REALTIME - CLOCK_MONOTONIC (udp.c) */
	bool rx_stamps;             /* SO_TIMESTAMPNS is on (ur_engine_rx_stamps) */
	/* What the last receive brought and is not delivered yet: a poll
	 * returns as soon as its CQ has an entry (an ACK riding behind a
	 * reply waits for the next poll, off the latency path). Datagram
	 * rx_i of rx_n, from byte rx_off (0: not started; then rx_ri,
	 * rx_gso and the next segment index rx_k are set). */
	int rx_n, rx_i;
	size_t rx_off;
	uint16_t rx_k;
	/* The IPv4 ID and flags the run's next packet is checked with first:
	 * packet k carries rx_id0 + k (rx_deliver). */
	uint16_t rx_id0, rx_frag;
	int rx_gso;
	struct ur_rxinfo rx_ri;
	enum ur_icrc_policy icrc; /* UROCE_ICRC */
	bool csock_on;            /* connected QPs get a connected socket */
	uint8_t bond_n;           /* a bonded port's interfaces (cfg.bond) */
	char bond_if[UR_BOND_MAX][16];
	/* Their link state (udp.c, bond_up): up and running when last
	 * looked at, at most UR_BOND_CHECK_NS ago. */
	atomic_bool bond_up[UR_BOND_MAX];
	_Atomic uint64_t bond_seen[UR_BOND_MAX];
	/* What arrives on each (udp.c, bond_heard: the IP_PKTINFO
	 * interface of each datagram): when it last did, the arrivals on
	 * all of them then, and how many arrive on the others between two
	 * of its own (x16, smoothed). An interface that hears nothing
	 * while the others hear many times that has gone silent. */
	unsigned int bond_ifindex[UR_BOND_MAX];
	_Atomic uint64_t bond_rx_at[UR_BOND_MAX];
	_Atomic uint64_t bond_rx_mark[UR_BOND_MAX];
	_Atomic uint32_t bond_rx_ratio[UR_BOND_MAX];
	_Atomic uint64_t bond_rx_total;
	_Atomic uint64_t bond_rx_last; /* the latest of bond_rx_at */
	/* When a send by it last failed for a reason of the host's own (a
	 * firewall rule, no route, no device: udp.c, ur__bond_if_sent), 0 once
	 * one succeeded again. */
	_Atomic uint64_t bond_fail_at[UR_BOND_MAX];
	atomic_int ncsock;        /* how many are open (UR_IO_CSOCK_MAX) */
	/* The same-host path (shm.c, UROCE_SHM=1): our receive lanes, and the
	 * receivers we send to; NULL when off. */
	struct ur_shm *shm;
	struct ur_shm_peers *shm_peers;
};

/* icrc.c: the receive ICRC check and what a mismatch means (UROCE_ICRC). */
enum ur_icrc_policy ur__icrc_policy_env(void);
const char *ur__icrc_policy_name(enum ur_icrc_policy p);
/* Check the ICRC in the last 4 bytes of @buf against @path (ip_id: the
 * packet's index in its GRO run); @path gets the IPv4 ID and DF flag that
 * verified it. *verified: it did. Returns whether to deliver it. @place,
 * if not NULL: where the payload after the BTH goes (ur_qp_rx_place),
 * copied there in the same pass, whatever the outcome. *solved counts the
 * packets whose ID had to be recovered from the ICRC. */
bool ur__icrc_check(enum ur_icrc_policy pol, struct ur_ipudp *path,
		     const uint8_t *buf, size_t len, bool *verified,
		     uint8_t *place, uint64_t *solved);

/* csock.c */
struct ur_csock *ur__csock_open(struct ur_engine *e, int sport_fd,
				 uint16_t sport, const struct ur_ipudp *path);
void ur__csock_close(struct ur_csock *cs);
/* Lock @cs and give the ID of its next send; false (unlocked) if retired. */
bool ur__csock_begin(struct ur_csock *cs, uint16_t *id);
/* After a send of @nseg segments that failed with @err (0: sent), lock
 * held: the ID of the next one, or retire @cs (an ID may be lost). */
void ur__csock_sent(struct ur_csock *cs, int err, unsigned int nseg);
/* Unlock @cs. */
void ur__csock_end(struct ur_csock *cs);

/* udp.c */
void ur__udp_fill_dst(struct sockaddr_storage *ss, const struct ur_ipudp *p,
		       uint16_t port, socklen_t *len);
int ur__udp_open_rx(struct ur_engine *e);
int ur__udp_open_tx(const struct ur_engine *e, uint16_t sport);
/* Not-ECT by default (the GSI's MADs; ur__udp_open_tx's send ECT(0)). */
int ur__udp_open_tx_plain(const struct ur_engine *e, uint16_t sport);
/* A socket of @sport that leaves by bonded interface @ifi (QP1's MADs). */
int ur__udp_open_tx_if(const struct ur_engine *e, uint16_t sport,
		       unsigned int ifi);
/* A bonded interface @i is up and no send by it failed (udp.c); what a
 * send by it gave (0 or an errno), as for the data path's sends. */
bool ur__bond_if_ok(struct ur_engine *e, unsigned int i);
void ur__bond_if_sent(struct ur_engine *e, unsigned int i, int err);
void ur__udp_rx_init(struct ur_engine *e); /* arms e->rxv */
/* @flush: send what each receive batch made (the engine thread). @stop:
 * return once this CQ has an entry, leaving the rest of the batch for the
 * next drain (or ur__udp_rx_rest); NULL: deliver everything. */
int ur__udp_drain(struct ur_engine *e, int fd, uint64_t now, bool flush,
		   const struct ur_cq *stop);
/* Drain another receive socket of the engine (a multicast group's):
 * delivered at once, ACKs flushed; rx_lock held. */
int ur__udp_drain_fd(struct ur_engine *e, int fd, uint64_t now);
/* mcast.c: multicast groups. A QP that goes leaves its groups (qp_lock
 * write-held); close frees them all; drain reads the groups' sockets
 * (rx_lock held); deliver hands a datagram to a group's QPs. */
struct ur_mcast_grp;
void ur__mcast_qp_gone(struct ur_engine *e, struct ur_qp *qp);
void ur__mcast_close(struct ur_engine *e);
int ur__mcast_drain(struct ur_engine *e, uint64_t now);
void ur__mcast_deliver(struct ur_engine *e, const uint8_t *buf, size_t len,
		       const struct ur_rxinfo *ri, uint64_t now);
/* Deliver what a stopped drain left; rx_lock held. */
void ur__udp_rx_rest(struct ur_engine *e, uint64_t now);
struct tx_batch;
/* A thread's context (udp.c): the only thread-local state of the engine. */
struct ur_tctx {
	struct tx_batch *tx;  /* where the packets this thread makes go */
	struct tx_batch *own; /* its own batch, made at first use */
	bool polling;         /* in ur_engine_poll: ACKs wait in poll_tx */
	bool in_gsi;          /* in the CM's MAD handler (gsi.c) */
	unsigned int lock_busy; /* polls in a row that found rx_lock taken */
	/* The QPs whose held batches this thread's posts added to since
	 * its last poll of that engine, which sends them (held_note). */
	struct ur_engine *held_e;
	unsigned int nheld;
	uint32_t held_qpn[UR_IO_HELD_QPS];
	/* The QPs that owe an ACK since this thread delivered with
	 * ack_later (ur__engine_owed_flush sends them). */
	unsigned int nowe;
	uint32_t owe_qpn[UR_IO_OWE_QPS];
	/* The QP this thread keeps locked between packets of one receive
	 * batch (engine.c rx_keep_end), its deadline before the first of
	 * them, and how many it took. */
	struct ur_qp *rx_qp;
	uint64_t rx_before;
	unsigned int rx_kept;
};
struct ur_tctx *ur__thread(void);
/* Send what @b holds (NULL or empty: nothing). */
void ur__tx_flush(struct tx_batch *b);
/* @populate: make its pages resident now (ur__populate); a QP's batch of
 * held small posts stays lazy, as it touches one page per slot at most. */
struct tx_batch *ur__tx_batch_new(bool populate);
/* Buffers the data path writes: mapped and made resident at once. */
void *ur__buf_new(size_t len);
void ur__buf_free(void *p, size_t len);
void ur__tx_batch_free(struct tx_batch *b);
bool ur__tx_pending(const struct tx_batch *b);
/* @b holds packets other than plain ACKs. */
bool ur__tx_ordered_pending(const struct tx_batch *b);
/* Append @from's packets to @to (what does not fit stays in @from). */
void ur__tx_adopt(struct tx_batch *to, struct tx_batch *from);
/* Whether @b is one packet. */
bool ur__tx_single(const struct tx_batch *b);
/* How many packets @b holds. */
unsigned int ur__tx_count(const struct tx_batch *b);
/* Move @cur's packets to the end of *@held (allocated on first use;
 * payloads copied); returns how many *@held holds. */
unsigned int ur__tx_hold(struct tx_batch *cur, struct tx_batch **held);
/* Send @held, then @cur after it, in one flush. */
void ur__tx_flush_after(struct tx_batch *held, struct tx_batch *cur);
struct ur_pktbuf *ur__eng_pkt_alloc(void *host, uint32_t len);
void ur__eng_pkt_send(void *host, struct ur_pktbuf *pb);
/* ur_dev_ops.path_ok: a bonded port's interface of @sport is up and does
 * not refuse our sends. */
bool ur__eng_path_ok(void *host, uint16_t sport, uint64_t now);
/* ur_dev_ops.path_quiet: its interface hears nothing while others do. */
bool ur__eng_path_quiet(void *host, uint16_t sport, uint64_t now);
/* ur_dev_ops.rx_if_ok: a bonded port's interface ur_rxinfo.rx_if - 1
 * still receives. */
bool ur__eng_rx_if_ok(void *host, unsigned int rx_if, uint64_t now);
/* fwd.c */
int ur__fwd_open(struct ur_engine *e);
void ur__fwd_close(struct ur_engine *e);
/* @own: a packet we made (to_sibling), not one we received. */
int ur__fwd_to(struct ur_engine *e, uint8_t slot, const uint8_t *buf,
		size_t len, const struct ur_rxinfo *ri, bool own);
int ur__fwd_drain(struct ur_engine *e, uint64_t now);
void ur__pin_peer(struct ur_engine *e, const struct ur_ipudp *path);
int ur__pin_drain(struct ur_engine *e, uint64_t now);
void ur__pin_close(struct ur_engine *e);
void ur__fwd_accept(struct ur_engine *e);
void ur__fwd_all(struct ur_engine *e, const uint8_t *buf, size_t len,
		  const struct ur_rxinfo *ri);
int ur__fwd_once(const struct ur_engine *e, uint8_t slot, const uint8_t *buf,
		  size_t len, const struct ur_rxinfo *ri);
/* shm.c */
struct iovec;
struct ur_shm_peer;
int ur__shm_open(struct ur_engine *e); /* after the slot is claimed */
void ur__shm_close(struct ur_engine *e);
int ur__shm_fifo_fd(const struct ur_engine *e);
/* The lane to the engine at @path->dst, @slot, or NULL: UDP. */
struct ur_shm_peer *ur__shm_peer(struct ur_engine *e,
				  const struct ur_ipudp *path, uint8_t slot);
void ur__shm_put(struct ur_engine *e, struct ur_shm_peer *p,
		  const struct ur_ipudp *path, const struct iovec *iov, int niov);
/* Deliver what the lanes hold (rx_lock held): how many packets. @stop:
 * return once this CQ has an entry (the rest waits for the next drain). */
int ur__shm_drain(struct ur_engine *e, uint64_t now, const struct ur_cq *stop);
/* Append one packet (its IB part in @iov; the ICRC's 4 bytes are carried
 * but not computed); dropped and counted if the lane is full or its
 * receiver gone. */
/* The engine thread is about to sleep: true if it must not (data came). */
bool ur__shm_sleep(struct ur_engine *e);
void ur__shm_awake(struct ur_engine *e);
/* gsi.c */
void ur__gsi_rx(struct ur_engine *e, const uint8_t *buf, size_t len,
		 struct ur_rxinfo *ri, bool from_sibling);
/* engine.c */
/* Send the ACKs owed by the QPs this thread delivered to with
 * ur_rxinfo.ack_later: the end of a receive batch. */
void ur__engine_owed_flush(struct ur_engine *e);
void ur__engine_deliver(struct ur_engine *e, const uint8_t *buf, size_t len,
			 struct ur_rxinfo *ri, uint64_t now, bool from_sibling);
uint64_t ur__engine_run_timers(struct ur_engine *e, uint64_t now);

#endif

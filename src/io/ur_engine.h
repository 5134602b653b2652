/* SPDX-License-Identifier: MIT */
/*
 * uroce I/O layer: the engine that plays the NIC for one device context.
 *
 * It owns the UDP sockets, a thread that receives packets and runs timers,
 * and implements struct ur_dev_ops for the pure transport. The verbs layer
 * above creates QPs/MRs/CQs and registers them here; it must hold
 * ur_engine_qp_lock() around every ur_qp_* call it makes itself.
 *
 * Processes share a device (same IP) as they share a NIC: every process binds
 * UDP 4791 on the address with SO_REUSEPORT; a QPN carries the owning
 * process's slot in its top 8 bits, and a packet the kernel hands to the
 * wrong process is forwarded to its owner over an abstract unix socket (see
 * docs/engine.md).
 */
#ifndef UR_ENGINE_H
#define UR_ENGINE_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "ur_transport.h"

struct ur_engine;

/* Callbacks into the layer above (verbs). */
struct ur_engine_host_ops {
	void (*cq_event)(void *host, struct ur_cq *cq);
	void (*qp_event)(void *host, struct ur_qp *qp, enum ur_async_event ev);
};

struct ur_engine_cfg {
	struct sockaddr_storage addr; /* the device's address (v4 or v6) */
	uint16_t port;                /* UDP port; 4791 unless testing */
	uint32_t mtu;                 /* active path MTU in bytes (256..4096) */
	uint32_t jumbo_max;           /* largest jumbo payload the link carries (dev.jumbo_max) */
	const char *name;             /* device name, for the counters file */
	/* A device's further port (docs/ports-classes.md "Ports"): the
	 * engine of its port 1, whose key table this one uses (NULL: its
	 * own), and the slot to claim on this address, so that the QPNs
	 * port 1's engine hands out name this process here too (0: any). */
	struct ur_engine *keys;
	uint8_t slot;
	const struct ur_engine_host_ops *host_ops;
	void *host;
	/* A bonded port (UROCE_BOND, docs/ports-classes.md "Bonded port"):
	 * comma-separated interfaces; a transmit socket of source port p
	 * leaves by interface p mod n (SO_BINDTODEVICE), so a sprayed QP's
	 * paths, one source port each, spread over them. NULL: none. */
	const char *bond;
};

/* Monotonic clock in nanoseconds: the only clock in the project. */
uint64_t ur_now(void);
/* The wall clock (CLOCK_REALTIME) in nanoseconds, for the verbs that
 * report it (completion wallclock timestamps); never for timers. */
uint64_t ur_now_real(void);

int ur_engine_open(const struct ur_engine_cfg *cfg, struct ur_engine **out);
void ur_engine_close(struct ur_engine *e);
struct ur_dev *ur_engine_dev(struct ur_engine *e);
/* Receive timestamps on the engine's socket (rxinfo rx_ns; udp.c). */
int ur_engine_rx_stamps(struct ur_engine *e);

/* A fresh unpredictable QPN owned by this process on this address. */
uint32_t ur_engine_alloc_qpn(struct ur_engine *e);
/* Make the QP reachable for incoming packets / remove it (waits until the
 * engine thread no longer uses it). */
int ur_engine_qp_add(struct ur_engine *e, struct ur_qp *qp);
void ur_engine_qp_del(struct ur_engine *e, struct ur_qp *qp);
/* An XRC SRQ: give it an unpredictable number (srq->srqn, 24 bits, not
 * 0) by which XRC TGT QPs find it (ur_dev_ops.srq_lookup) / remove it
 * (waits until no receive uses it). */
int ur_engine_srq_add(struct ur_engine *e, struct ur_srq *srq);
void ur_engine_srq_del(struct ur_engine *e, struct ur_srq *srq);
/* Attach a UD QP to the multicast group at IP address @grp (IPv4 in 4
 * bytes or IPv6, the device's family; -EAFNOSUPPORT otherwise): its
 * datagrams to QPN 0xFFFFFF reach the QP (mcast.c). Attached already: 0.
 * Detach: -EINVAL if it was not attached. */
int ur_engine_mcast_attach(struct ur_engine *e, struct ur_qp *qp, bool v6,
			   const uint8_t *grp);
int ur_engine_mcast_detach(struct ur_engine *e, struct ur_qp *qp, bool v6,
			   const uint8_t *grp);
/* The QP of @qpn in this engine, or NULL. */
struct ur_qp *ur_engine_qp_get(struct ur_engine *e, uint32_t qpn);
void ur_engine_qp_lock(struct ur_qp *qp);
void ur_engine_qp_unlock(struct ur_qp *qp);
/* End a post made under ur_engine_qp_lock(): run the QP, send what it
 * made in one system call (with the ACKs the last poll deferred when
 * @sends, so that a reply and the ACK of the request leave together),
 * unlock, and re-arm the QP's timer. A receive post passes false (and any
 * @now): it only unlocks; the ACKs wait for the next send, poll or engine
 * pass instead of costing a system call of their own before the reply. */
void ur_engine_qp_post_unlock(struct ur_engine *e, struct ur_qp *qp, bool sends,
			      uint64_t now);
/* After a modify (with the QP lock released): the same, lock included. */
void ur_engine_qp_kick(struct ur_engine *e, struct ur_qp *qp);
/* A connected QP now sends to @path, QP @dqpn: open the same-host path to
 * that device now (shm.c), so that its setup costs (milliseconds) fall on
 * the connection, not on the first messages. Nothing when UROCE_SHM is
 * off or the peer is not on this machine. */
void ur_engine_peer_hint(struct ur_engine *e, const struct ur_ipudp *path,
			 uint32_t dqpn);

/*
 * iWARP (stream.c): @fd, a connected TCP socket, carries @qp's stream from
 * now on (the QP's iWARP connection started: ur_iw_start; the engine owns
 * the socket and closes it with the QP). A thread of the stream's own
 * reads it into the connection and writes what the connection holds; @fn
 * hears, on that thread and without the QP lock, that the connection came
 * up (RTS), failed before (@err, and the peer's private data when it
 * rejected us), or went down after (the stream ended).
 */
enum ur_stream_ev { UR_STREAM_UP, UR_STREAM_FAILED, UR_STREAM_DOWN };
typedef void (*ur_stream_fn)(void *arg, enum ur_stream_ev ev, int err,
			     const uint8_t *pd, size_t pd_len);
int ur_engine_stream_attach(struct ur_engine *e, struct ur_qp *qp, int fd,
			    ur_stream_fn fn, void *arg);
/* rdma_disconnect: WQEs flush, the last bytes leave, then TCP's FIN;
 * UR_STREAM_DOWN follows when the peer's FIN comes. */
void ur_engine_stream_shutdown(struct ur_qp *qp);

/* Memory keys: a fresh unpredictable key, and the key table. A memory
 * window (mr->type UR_KEY_MW1/2) gets an rkey only. Deleting a region that
 * windows are bound to fails with -EBUSY. */
int ur_engine_mr_add(struct ur_engine *e, struct ur_mr *mr); /* sets keys */
int ur_engine_mr_del(struct ur_engine *e, struct ur_mr *mr);
/* ibv_rereg_mr: take iova/host/length/access/pdn from @upd, keeping the
 * keys, once no request uses the region; -EBUSY while windows are bound. */
int ur_engine_mr_update(struct ur_engine *e, struct ur_mr *mr,
			const struct ur_mr *upd);
const struct ur_mr *ur_engine_mr_find(struct ur_engine *e, uint32_t key);

/* Progress from an application thread (ibv_poll_cq on an empty @cq): it
 * returns once @cq has an entry, the rest of what it received waiting for
 * the next poll. Returns the time it read, for ur_engine_poll_done. */
uint64_t ur_engine_poll(struct ur_engine *e, const struct ur_cq *cq);
/* An application thread stops spinning (it armed a CQ to block on its
 * channel): the engine resumes receiving at once. True if it was left the
 * socket to a poller until now (and was woken). */
bool ur_engine_app_blocks(struct ur_engine *e);
/* The application's pollers keep polling, or block on a completion
 * channel, until their next completion (uroce_context_set_poller_stays):
 * no hand-over of the socket at completions. */
void ur_engine_set_poller_stays(struct ur_engine *e, bool on);
/* After ur_engine_poll, what the caller's poll returned (@got CQEs);
 * @now: what ur_engine_poll returned (one clock read per poll). */
void ur_engine_poll_done(struct ur_engine *e, int got, uint64_t now);

/*
 * QP1 (GSI, src/io/gsi.c): MADs for the connection manager. The handler
 * runs on whichever thread drains the socket (rx_lock held; it must not
 * call ur_engine_poll) and returns UR_GSI_CONSUMED, a sibling's slot to
 * forward the MAD to, or UR_GSI_BROADCAST (forward to every sibling on the
 * address). A MAD that came from a sibling is never forwarded again.
 * Without a handler every MAD is broadcast.
 */
enum { UR_GSI_CONSUMED = 0, UR_GSI_BROADCAST = -1 };
typedef int (*ur_gsi_rx_fn)(void *arg, const uint8_t *mad, size_t len,
			    const struct ur_rxinfo *ri, bool from_sibling);
void ur_engine_set_gsi_handler(struct ur_engine *e, ur_gsi_rx_fn fn, void *arg);
int ur_engine_gsi_send(struct ur_engine *e, const struct ur_ipudp *dst,
		       uint8_t slot, const void *mad, size_t len);
/* This process's slot on the address (1..255). */
uint8_t ur_engine_slot(const struct ur_engine *e);

/*
 * Link state (link.c): a thread reads rtnetlink's link messages and calls
 * @fn with each interface's index and whether it is up with a carrier (a
 * state it already reported is reported again; the caller keeps the
 * last). -errno if the socket cannot be opened.
 */
struct ur_link_watch;
typedef void (*ur_link_fn)(void *arg, unsigned int ifindex, bool up);
int ur_link_watch_open(ur_link_fn fn, void *arg, struct ur_link_watch **out);
void ur_link_watch_close(struct ur_link_watch *w);
/* Whether interface @ifindex is up and running now (true if unknown). */
bool ur_link_is_up(unsigned int ifindex);

/* What an incoming ICRC mismatch means: UROCE_ICRC, "auto", "strict" or
 * "off" (src/io/icrc.c). */
const char *ur_engine_icrc_mode(const struct ur_engine *e);

#endif

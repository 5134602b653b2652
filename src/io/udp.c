/* SPDX-License-Identifier: MIT */
/*
 * The UDP backend: the only file that sends and receives RoCEv2 datagrams.
 *
 * Sending: packets the transport hands over are batched per thread and
 * leave with sendmmsg() from the socket bound to the QP's source port. The
 * sockets are unconnected and set IP_PMTUDISC_DO, so Linux sends DF with IP
 * ID 0: we then know every byte the ICRC covers (docs/wire.md). A connected
 * QP's packets leave from its own connected socket instead (csock.c), whose
 * IDs we number.
 *
 * Receiving: recvmmsg() on the socket bound to <addr>:4791. A plain UDP
 * socket does not show the IP ID and DF flag; the engine checks the ICRC
 * assuming what uroce peers send and, on a mismatch, recovers them from the
 * ICRC (icrc.c), so that Linux rxe's packets (ID != 0) verify too.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ur_io_priv.h"
#include "ur_latprof.h"

/*
 * The receive calls, made with syscall(2): glibc's wrappers are
 * cancellation points and switch asynchronous cancellation on and off
 * around each call (__pthread_enable/disable_asynccancel: 6.6 % of a thread
 * spinning on its CQ in ib_send_lat -s 8, whose empty polls are one
 * receive call each). ibv_poll_cq is no cancellation point in rdma-core
 * either. (Sends keep the wrappers: tests/integration/sendfault.c
 * interposes them.)
 */
static inline ssize_t ur_sys_recvmsg(int fd, struct msghdr *mh, int flags)
{
	return syscall(SYS_recvmsg, fd, mh, flags);
}

static inline int ur_sys_recvmmsg(int fd, struct mmsghdr *v, unsigned int n,
				  int flags)
{
	return (int)syscall(SYS_recvmmsg, fd, v, n, flags, NULL);
}

/*
 * Every socket sends UR_IO_SOCK_TOS unless a datagram says otherwise: the
 * TOS of a request under congestion control (ECT(0), traffic class 0), so
 * that the common datagram needs no IP_TOS cmsg (one less thing for the
 * kernel to parse per send; flush adds the cmsg only for other values).
 */
#define UR_IO_SOCK_TOS 2

static int set_common(int fd, bool v6, int tos)
{
	int one = 1, pmtu = IP_PMTUDISC_DO;

	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)))
		return -errno;
	if (v6) {
		int p6 = IPV6_PMTUDISC_DO;

		setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &p6, sizeof(p6));
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos)))
			return -errno;
		return 0;
	}
	if (setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) ||
	    setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)))
		return -errno;
	return 0;
}

/* Bound to one unicast address, a socket receives only datagrams to that
 * address: no IP_PKTINFO cmsg needed to learn it (rxinfo_of fills it). */
static bool bound_to_any(const struct sockaddr_storage *sa)
{
	if (sa->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_MULTICAST(a);
	}
	uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);

	return a == INADDR_ANY || IN_MULTICAST(a) || a == INADDR_BROADCAST;
}

static int open_bound(const struct ur_engine *e, uint16_t port, int ifi, bool rx,
		      int tos)
{
	struct sockaddr_storage sa = e->cfg.addr;
	bool v6 = sa.ss_family == AF_INET6;
	socklen_t len;
	int fd, ret, one = 1;

	fd = socket(sa.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	ret = set_common(fd, v6, tos);
	if (ret)
		goto err;
	if (v6) {
		((struct sockaddr_in6 *)&sa)->sin6_port = htons(port);
		len = sizeof(struct sockaddr_in6);
	} else {
		((struct sockaddr_in *)&sa)->sin_port = htons(port);
		len = sizeof(struct sockaddr_in);
	}
	if (rx) {
		int sz = 8 << 20;

		/* Big buffers: a window of 4 KiB packets must fit. FORCE
		 * works where we have CAP_NET_ADMIN; otherwise rmem_max. */
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
		if (v6) {
			/* (a bonded port: which interface it came in by) */
			if (bound_to_any(&sa) || e->bond_n)
				setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO,
					   &one, sizeof(one));
			setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one,
				   sizeof(one));
		} else {
			if (bound_to_any(&sa) || e->bond_n)
				setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one,
					   sizeof(one));
			setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
		}
		/* Best effort: fewer, larger receives (split in rx_deliver). */
		setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
	} else {
		int sz = 4 << 20, small = 4096;

		if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
			setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		/* Nobody sends to a source port; keep its queue tiny. */
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
		/* A bonded port: source port p leaves by interface p mod n
		 * (or @ifi, for QP1's MADs). */
		if (e->bond_n) {
			const char *ifn = e->bond_if[ifi >= 0 ? (unsigned int)ifi
							      : port % e->bond_n];

			if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifn,
				       (socklen_t)strlen(ifn) + 1)) {
				ret = -errno;
				goto err;
			}
		}
	}
	if (bind(fd, (struct sockaddr *)&sa, len)) {
		ret = -errno;
		goto err;
	}
	return fd;
err:
	close(fd);
	return ret;
}

int ur__udp_open_rx(struct ur_engine *e)
{
	return open_bound(e, e->cfg.port, -1, true, UR_IO_SOCK_TOS);
}

int ur__udp_open_tx(const struct ur_engine *e, uint16_t sport)
{
	return open_bound(e, sport, -1, false, UR_IO_SOCK_TOS);
}

int ur__udp_open_tx_plain(const struct ur_engine *e, uint16_t sport)
{
	return open_bound(e, sport, -1, false, 0);
}

int ur__udp_open_tx_if(const struct ur_engine *e, uint16_t sport,
		       unsigned int ifi)
{
	return open_bound(e, sport, (int)ifi, false, 0);
}

/* ---- transmit: a per-thread batch --------------------------------------- */
/*
 * Packets handed over by the transport wait in a per-thread batch until the
 * caller flushes (end of a post, of a receive burst, of a timer run).
 * Consecutive packets to the same destination from the same socket leave as
 * one UDP GSO send (UDP_SEGMENT): the kernel cuts the buffer back into the
 * same datagrams and gives segment i the IP ID base + i, where base is 0 for
 * our unconnected DF sockets and the socket's counter for a connected one
 * (csock.c). The ICRC covers the ID, so it is computed here, once the
 * packet's place in its GSO run is known.
 */
#define UR_IO_GSO_MAX_BYTES 65000 /* IPv4 total length minus IP/UDP headers */

/* A transmit queue (the transport's ur_txq: what may wait, merge or leave
 * first) and the system-call vectors that send it. A slot's route is the
 * socket it leaves from, its conn the connected socket (csock.c) or NULL. */
struct tx_batch {
	struct ur_txq q;
	struct mmsghdr msg[UR_TXQ_SLOTS];
	int msg_fd[UR_TXQ_SLOTS];
	unsigned int msg_npkt[UR_TXQ_SLOTS]; /* packets in the GSO run */
	uint16_t msg_sport[UR_TXQ_SLOTS]; /* (a bonded port's interface) */
	struct ur_engine *msg_e[UR_TXQ_SLOTS];
	/* Per packet: headers, payload in registered memory, pad + ICRC. */
	struct iovec iov[3 * UR_TXQ_SLOTS];
	struct sockaddr_storage to[UR_TXQ_SLOTS];
	/* UDP_SEGMENT, then IP_TOS / IPV6_TCLASS (ECN bits of the run) */
	char ctl[UR_TXQ_SLOTS][CMSG_SPACE(sizeof(uint16_t)) +
			       CMSG_SPACE(sizeof(int))];
};

static atomic_bool gso_broken; /* the kernel refused UDP_SEGMENT once */
static pthread_once_t gso_once = PTHREAD_ONCE_INIT;

/*
 * A thread's context: the batch the packets it makes go to (its own, or an
 * engine's poll batch while it polls), and what the engine needs to know
 * of it. The only thread-local state of the engine; the functions that
 * send take their batch as an argument.
 */
static __thread struct ur_tctx tctx;
static pthread_key_t tctx_key;
static pthread_once_t tctx_once = PTHREAD_ONCE_INIT;

/* A thread's batch is freed when the thread exits. */
static void tctx_free(void *p)
{
	ur__tx_batch_free(p);
}

static void tctx_key_init(void)
{
	pthread_key_create(&tctx_key, tctx_free);
}

struct ur_tctx *ur__thread(void)
{
	return &tctx;
}

/* The batch this thread's packets go to, made at its first packet (a
 * thread that only polls never needs one of its own). */
static struct tx_batch *thread_tx(void)
{
	struct ur_tctx *t = &tctx;

	if (__builtin_expect(!t->tx, 0)) {
		if (!t->own) {
			pthread_once(&tctx_once, tctx_key_init);
			t->own = ur__tx_batch_new(true);
			if (t->own)
				pthread_setspecific(tctx_key, t->own);
		}
		t->tx = t->own;
	}
	return t->tx;
}

static inline struct ur_engine *slot_engine(const struct ur_txq_slot *s)
{
	return s->host;
}

/* UROCE_GSO=0 sends every packet on its own (e.g. for captures on lo,
 * where a GSO run is seen as one large datagram). */
static void gso_env(void)
{
	if (!ur_setting_val("UROCE_GSO"))
		atomic_store(&gso_broken, true);
}

void ur__udp_fill_dst(struct sockaddr_storage *ss, const struct ur_ipudp *p,
		       uint16_t port, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (p->v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		memcpy(&s6->sin6_addr, p->dst, 16);
		*len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		memcpy(&s4->sin_addr, p->dst, 4);
		*len = sizeof(*s4);
	}
}

/*
 * Whether @b may join the GSO run that @a starts (one cmsg, @a's TOS for
 * all). A Not-ECT packet may join an ECT run and leaves ECN-capable: the
 * ACK a reply carries along to its peer in a ping-pong, one datagram
 * through the stack instead of two. Receivers take CE only from requests
 * (ur_qp_rx), so an ECT ACK changes nothing but being marked, not dropped.
 * An ECT packet never joins a Not-ECT run.
 */
static bool same_run(const struct ur_txq_slot *a, const struct ur_txq_slot *b)
{
	return a->route == b->route && a->host == b->host &&
	       a->pb.path.v6 == b->pb.path.v6 &&
	       !memcmp(a->pb.path.dst, b->pb.path.dst, sizeof(a->pb.path.dst)) &&
	       (a->pb.path.tos == b->pb.path.tos ||
		(((a->pb.path.tos ^ b->pb.path.tos) & ~3u) == 0 &&
		 (b->pb.path.tos & 3u) == 0));
}

/* A bonded port's interface of source port @sport (UR_BOND_MAX: none). */
static unsigned int bond_if_of(const struct ur_engine *e, uint16_t sport)
{
	/* the 4791 socket (a port's fallback) is bound to no interface */
	return sport && sport != e->cfg.port ? sport % e->bond_n : UR_BOND_MAX;
}

/* Message @i failed with @err: it is lost, as on a wire (EAGAIN, ENOBUFS,
 * ECONNREFUSED, ...), and the transport's timers recover; on a bonded
 * port an error of the host's own fails its interface (ur__bond_if_sent). */
/* Message @i's send went through (@err 0) or failed: on a bonded port,
 * what it says of its interface (ur__bond_if_sent). */
static void bond_sent(struct tx_batch *b, unsigned int i, int err)
{
	struct ur_engine *e = b->msg_e[i];

	if (e->bond_n)
		ur__bond_if_sent(e, bond_if_of(e, b->msg_sport[i]), err);
}

static void send_failed(struct tx_batch *b, unsigned int i, int err)
{
	bond_sent(b, i, err);
	if (b->msg_npkt[i] > 1 &&
	    (err == EIO || err == EINVAL || err == ENOPROTOOPT))
		atomic_store(&gso_broken, true); /* no GSO on this path */
	b->msg_e[i]->dev.cnt.tx_drop_io += b->msg_npkt[i];
}

/* Send message @i alone; 0 or the errno it failed with (counted). */
static int send_one(struct tx_batch *b, unsigned int i)
{
	ssize_t r;

	UR_LP_MARK(UR_LP_SEND);
	do
		r = sendmsg(b->msg_fd[i], &b->msg[i].msg_hdr, 0);
	while (r < 0 && errno == EINTR);
	UR_LP_MARK(UR_LP_SENT);
	if (r >= 0) {
		bond_sent(b, i, 0);
		return 0;
	}
	send_failed(b, i, errno);
	return errno;
}

static void send_msgs(struct tx_batch *b, unsigned int from, unsigned int to)
{
	unsigned int i = from;

	while (i < to) {
		unsigned int run = 1;
		int n;

		while (i + run < to && b->msg_fd[i + run] == b->msg_fd[i])
			run++;
		/* One message: sendmsg skips sendmmsg's per-call work. */
		if (run == 1) {
			send_one(b, i++);
			continue;
		}
		UR_LP_MARK(UR_LP_SEND);
		n = sendmmsg(b->msg_fd[i], &b->msg[i], run, 0);
		UR_LP_MARK(UR_LP_SENT);
		if (n > 0) {
			bond_sent(b, i, 0);
			i += (unsigned int)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		send_failed(b, i, errno);
		i++;
	}
}

/*
 * Fresh anonymous memory, made resident in one system call. On some
 * virtual machines (this project's CI: a paravirtualised guest) the first
 * write to a page costs about 10 us, 2.5 ms per MiB, against about 0.2 ms
 * per MiB for MADV_POPULATE_WRITE (Linux 5.14). Left to the data path,
 * those faults fell on the first transfers that reached further into the
 * receive buffers or a send batch than any before: a collective's first
 * calls at a larger size took several times a later call. Best effort:
 * an older kernel faults the pages in as they are used.
 */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
void *ur__buf_new(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	(void)madvise(p, len, MADV_POPULATE_WRITE);
	return p;
}

void ur__buf_free(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}

struct tx_batch *ur__tx_batch_new(bool populate)
{
	void *p;

	pthread_once(&gso_once, gso_env);
	if (populate)
		return ur__buf_new(sizeof(struct tx_batch));
	/* A QP's batch of held small posts (ur__tx_hold) writes a header
	 * page per slot at most: fresh pages cost nothing until written. */
	p = mmap(NULL, sizeof(struct tx_batch), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void ur__tx_batch_free(struct tx_batch *b)
{
	if (b)
		ur__buf_free(b, sizeof(*b));
}

bool ur__tx_pending(const struct tx_batch *b)
{
	return b && ur_txq_pending(&b->q);
}

bool ur__tx_ordered_pending(const struct tx_batch *b)
{
	return b && ur_txq_ordered(&b->q);
}

bool ur__tx_single(const struct tx_batch *b)
{
	return b && ur_txq_single(&b->q);
}

unsigned int ur__tx_count(const struct tx_batch *b)
{
	return b ? b->q.used : 0;
}

/* The ICRC of a packet, written into its slot; @x: its pieces when its
 * payload is zero-copy, else NULL. */
static void icrc_put(struct ur_pktbuf *pb, const struct ur_txq_parts *x)
{
	if (!x) {
		ur_icrc_store(pb->data + pb->len - UR_ICRC_LEN,
			      ur_icrc(&pb->path, pb->data, pb->len - UR_ICRC_LEN));
		return;
	}
	ur_icrc_store(pb->data + x->hdr + x->pad,
		      ur_icrc_split(&pb->path, pb->data, x->hdr, pb->ext,
				    x->payload, x->pad));
}

/*
 * Append @from's packets (the ACKs a poll deferred) to @to, so that they
 * leave in the same system call as what it made: the pingpong case, where
 * the answer to a message is posted right after its completion. ACKs are
 * small; copying them costs less than a second sendmmsg.
 */
void ur__tx_adopt(struct tx_batch *to, struct tx_batch *from)
{
	if (to && from)
		(void)ur_txq_adopt(&to->q, &from->q);
}

unsigned int ur__tx_hold(struct tx_batch *cur, struct tx_batch **held)
{
	if (!*held)
		*held = ur__tx_batch_new(false);
	if (!*held)
		return 0; /* the caller's flush sends them */
	return ur_txq_adopt(&(*held)->q, &cur->q);
}

void ur__tx_flush_after(struct tx_batch *held, struct tx_batch *cur)
{
	ur__tx_adopt(held, cur); /* what does not fit stays, and leaves next */
	ur__tx_flush(held);
	ur__tx_flush(cur);
}

/*
 * A packet to a sibling process on our own address goes straight to its
 * unix socket: through UDP the kernel may hand it to any process bound to
 * the address, and if that one is exiting the packet is lost (an ACK to a
 * peer that is still waiting for it, say).
 */
static bool to_sibling(struct ur_txq_slot *s)
{
	struct ur_engine *e = slot_engine(s);
	struct ur_pktbuf *pb = &s->pb;
	struct ur_rxinfo ri = { .icrc_checked = true };
	uint32_t dqpn = ur_bth_dqpn(pb->data);
	uint8_t slot = (uint8_t)(dqpn >> UR_IO_SLOT_SHIFT);

	if (dqpn <= 1 || slot == e->slot || pb->path.v6 != e->local.v6 ||
	    memcmp(pb->path.dst, e->local.src, e->local.v6 ? 16 : 4))
		return false;
	pb->path.ip_id = 0;
	ur_txq_linearize(pb);
	icrc_put(pb, NULL);
	ri.path = pb->path;
	ur__fwd_to(e, slot, pb->data, pb->len, &ri, true);
	return true;
}

/*
 * A packet to a device of this machine that takes it by shared memory
 * (shm.c): the same IB part, without the kernel, and without its ICRC:
 * memory does not corrupt what it carries, and the receiver takes shm
 * packets as checked (ur_rxinfo.icrc_checked), as it takes a sibling's.
 * QP1's MADs stay on UDP (the CM's exchange is visible on the wire).
 */
void ur_engine_peer_hint(struct ur_engine *e, const struct ur_ipudp *path,
			 uint32_t dqpn)
{
	if (e->shm_peers && dqpn > 1)
		(void)ur__shm_peer(e, path, (uint8_t)(dqpn >> UR_IO_SLOT_SHIFT));
}

static bool to_shm(struct ur_txq_slot *s)
{
	struct ur_engine *e = slot_engine(s);
	struct ur_pktbuf *pb = &s->pb;
	uint32_t dqpn = ur_bth_dqpn(pb->data);
	struct ur_shm_peer *p;
	struct iovec iov[3];
	int n = 1;

	if (!e->shm_peers || dqpn <= 1)
		return false;
	p = ur__shm_peer(e, &pb->path, (uint8_t)(dqpn >> UR_IO_SLOT_SHIFT));
	if (!p)
		return false;
	if (pb->ext) {
		struct ur_txq_parts x = ur_txq_parts(pb);

		iov[0] = (struct iovec){ pb->data, x.hdr };
		iov[1] = (struct iovec){ (void *)pb->ext, x.payload };
		iov[2] = (struct iovec){ pb->data + x.hdr, x.pad + UR_ICRC_LEN };
		n = 3;
	} else {
		iov[0] = (struct iovec){ pb->data, pb->len };
	}
	ur__shm_put(e, p, &pb->path, iov, n);
	return true;
}

/*
 * Send messages [@from, @to) of a connected socket, numbered from its
 * next ID under its lock: in one sendmmsg where they are several. The
 * first that fails is sent again alone to learn its error (sendmmsg
 * reports none once some went; an error that comes after the kernel took
 * an ID, such as a GSO send it refuses, comes again); the rest were
 * numbered as if it had gone, and are lost as on a wire. Unlocks @cs.
 */
static void csock_send(struct tx_batch *b, struct ur_csock *cs,
		       unsigned int from, unsigned int to)
{
	unsigned int i = from;

	while (i < to) {
		int n = 0, err;

		if (to - i > 1) {
			UR_LP_MARK(UR_LP_SEND);
			n = sendmmsg(b->msg_fd[i], &b->msg[i], to - i, 0);
			UR_LP_MARK(UR_LP_SENT);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				n = 0;
		}
		for (unsigned int k = i; k < i + (unsigned int)n; k++) {
			ur__csock_sent(cs, 0, b->msg_npkt[k]);
			b->msg_e[k]->dev.cnt.tx_connected++;
		}
		i += (unsigned int)n;
		if (i == to)
			break;
		err = send_one(b, i);
		ur__csock_sent(cs, err, b->msg_npkt[i]);
		if (!err) {
			b->msg_e[i]->dev.cnt.tx_connected++;
			i++;
			continue;
		}
		for (i++; i < to; i++)
			b->msg_e[i]->dev.cnt.tx_drop_io += b->msg_npkt[i];
	}
	ur__csock_end(cs);
}

void ur__tx_flush(struct tx_batch *b)
{
	struct ur_txq *q = b ? &b->q : NULL;
	unsigned int i, n = 0, v = 0, sent = 0, held_from = 0;
	bool gso = !atomic_load(&gso_broken);
	struct ur_csock *held = NULL; /* locked: its messages from held_from */
	uint16_t held_id = 0;         /* the ID of its next message */

	if (!q || !q->used)
		return;
	UR_LP_STAGE(UR_LPS_FLUSH);
	/* Packets for devices that take shared memory leave by it, those
	 * for other siblings on our own address by unix socket. */
	for (i = 0; i < q->used; i++)
		if (q->slot[i].ready &&
		    (to_shm(&q->slot[i]) || to_sibling(&q->slot[i])))
			q->slot[i].ready = false;
	for (i = 0; i < q->used;) {
		struct ur_txq_slot *first = &q->slot[i];
		struct ur_engine *fe = slot_engine(first);
		struct msghdr *mh;
		unsigned int k, j = i, bytes = 0;
		socklen_t alen;
		struct ur_csock *cs = first->conn;
		uint16_t id0 = 0;

		if (!first->ready) {
			i++;
			continue;
		}
		if (held && cs != held) {
			csock_send(b, held, held_from, n);
			held = NULL;
			sent = n;
		}
		if (cs && cs != held) {
			/* Numbered under its lock, message after message,
			 * until a message for another socket; what was made
			 * before leaves first. */
			send_msgs(b, sent, n);
			sent = n;
			if (ur__csock_begin(cs, &held_id)) {
				held = cs;
				held_from = n;
			} else {
				cs = NULL; /* retired: the port's socket */
			}
		}
		if (cs)
			id0 = held_id;
		/* A GSO run: same socket and destination, equal sizes except
		 * a shorter last one. */
		while (j < q->used && q->slot[j].ready &&
		       same_run(first, &q->slot[j]) &&
		       j - i < (gso ? UR_IO_GSO_MAX_SEGS : 1) &&
		       bytes + q->slot[j].pb.len <= UR_IO_GSO_MAX_BYTES &&
		       q->slot[j].pb.len <= first->pb.len) {
			bytes += q->slot[j].pb.len;
			if (q->slot[j++].pb.len < first->pb.len)
				break;
		}
		mh = &b->msg[n].msg_hdr;
		memset(&b->msg[n], 0, sizeof(b->msg[n]));
		mh->msg_iov = &b->iov[v];
		for (k = i; k < j; k++) {
			struct ur_pktbuf *pb = &q->slot[k].pb;
			struct ur_txq_parts x;

			pb->path.ip_id = (uint16_t)(id0 + k - i);
			if (!pb->ext) {
				icrc_put(pb, NULL);
				b->iov[v++] = (struct iovec){ pb->data, pb->len };
				continue;
			}
			/* Zero copy: the kernel gathers the payload from the
			 * registered memory (GSO cuts the run by size, not
			 * by iovec). */
			x = ur_txq_parts(pb);
			icrc_put(pb, &x);
			b->iov[v++] = (struct iovec){ pb->data, x.hdr };
			b->iov[v++] = (struct iovec){ (void *)pb->ext,
						      x.payload };
			b->iov[v++] = (struct iovec){ pb->data + x.hdr,
						      x.pad + UR_ICRC_LEN };
		}
		if (!cs) {
			ur__udp_fill_dst(&b->to[n], &first->pb.path,
					  fe->cfg.port, &alen);
			mh->msg_name = &b->to[n];
			mh->msg_namelen = alen;
		}
		mh->msg_iovlen = (size_t)(&b->iov[v] - mh->msg_iov);
		b->msg_npkt[n] = j - i;
		b->msg_sport[n] = first->pb.path.sport;
		mh->msg_control = b->ctl[n];
		if (j - i > 1) {
			struct cmsghdr *c = (void *)b->ctl[n];
			uint16_t seg = (uint16_t)first->pb.len;

			c->cmsg_level = SOL_UDP;
			c->cmsg_type = UDP_SEGMENT;
			c->cmsg_len = CMSG_LEN(sizeof(seg));
			memcpy(CMSG_DATA(c), &seg, sizeof(seg));
			mh->msg_controllen = CMSG_SPACE(sizeof(seg));
		}
		if (first->pb.path.tos != UR_IO_SOCK_TOS) {
			/* Per run: requests carry ECT(0) (docs/cc.md), which
			 * is the socket's default; ACKs are Not-ECT. */
			struct cmsghdr *c = (void *)(b->ctl[n] + mh->msg_controllen);
			int tos = first->pb.path.tos;
			bool v6 = first->pb.path.v6;

			c->cmsg_level = v6 ? IPPROTO_IPV6 : IPPROTO_IP;
			c->cmsg_type = v6 ? IPV6_TCLASS : IP_TOS;
			c->cmsg_len = CMSG_LEN(sizeof(tos));
			memcpy(CMSG_DATA(c), &tos, sizeof(tos));
			mh->msg_controllen += CMSG_SPACE(sizeof(tos));
		}
		if (!mh->msg_controllen)
			mh->msg_control = NULL;
		b->msg_e[n] = fe;
		b->msg_fd[n] = first->route;
		if (first->conn && !cs) /* retired since the packets were made */
			b->msg_fd[n] = ((struct ur_csock *)first->conn)->fallback_fd;
		if (cs)
			held_id = (uint16_t)(held_id + (cs->per_seg ? j - i : 1));
		n++;
		i = j;
	}
	if (held) {
		csock_send(b, held, held_from, n);
		sent = n;
	}
	send_msgs(b, sent, n);
	ur_txq_reset(q);
}

struct ur_pktbuf *ur__eng_pkt_alloc(void *host, uint32_t len)
{
	struct tx_batch *b = thread_tx();
	struct ur_pktbuf *pb;

	if (!b)
		return NULL; /* no memory for this thread's batch */
	pb = ur_txq_alloc(&b->q, host, len);
	if (!pb && len <= UR_TXQ_PKT_MAX) {
		ur__tx_flush(b);
		pb = ur_txq_alloc(&b->q, host, len);
	}
	return pb;
}

/* The connected socket for a packet of @q to @p->dst, opened at the QP's
 * first packet (we hold its lock); NULL: the port's unconnected socket. */
static struct ur_csock *csock_of(struct ur_engine *e, struct ur_eqp *q,
				 const struct ur_ipudp *p)
{
	struct ur_csock *cs = q->cs;

	if (!cs && !q->cs_tried) {
		q->cs_tried = true;
		/* Not to our own address: siblings there are reached by
		 * unix socket (to_sibling). */
		if (!e->csock_on || (q->qp->type != UR_QPT_RC &&
				     q->qp->type != UR_QPT_UC) ||
		    (p->v6 == e->local.v6 &&
		     !memcmp(p->dst, e->local.src, p->v6 ? 16 : 4)))
			return NULL;
		if (atomic_fetch_add(&e->ncsock, 1) >= UR_IO_CSOCK_MAX ||
		    !(cs = q->cs = ur__csock_open(e, q->tx_fd, q->sport, p))) {
			atomic_fetch_sub(&e->ncsock, 1);
			return NULL;
		}
	}
	if (!cs || atomic_load_explicit(&cs->dead, memory_order_relaxed) ||
	    cs->v6 != p->v6 || memcmp(cs->dst, p->dst, p->v6 ? 16 : 4))
		return NULL;
	return cs;
}

/*
 * A bonded port's interface @i: up and running (IFF_UP, IFF_RUNNING: the
 * carrier, at both ends of a veth), looked at again at most every
 * UR_BOND_CHECK_NS. A link that goes down costs the packets of one such
 * interval; a link that drops silently is the transport's (ur_mp.c).
 */
#define UR_BOND_CHECK_NS 2000000ull
static bool bond_up(struct ur_engine *e, unsigned int i, uint64_t now)
{
	uint64_t seen = atomic_load_explicit(&e->bond_seen[i], memory_order_relaxed);

	if (now - seen >= UR_BOND_CHECK_NS &&
	    atomic_compare_exchange_strong(&e->bond_seen[i], &seen, now)) {
		struct ifreq ifr = { 0 };
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		bool up = true; /* cannot tell: as before */

		memcpy(ifr.ifr_name, e->bond_if[i], sizeof(e->bond_if[i]));
		if (fd >= 0 && !ioctl(fd, SIOCGIFFLAGS, &ifr))
			up = (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING);
		if (fd >= 0)
			close(fd);
		atomic_store_explicit(&e->bond_up[i], up, memory_order_relaxed);
	}
	return atomic_load_explicit(&e->bond_up[i], memory_order_relaxed);
}

/*
 * A bonded interface that drops everything (a switch port or cable that
 * fails silently, iptables DROP) keeps its flags: only what arrives shows
 * it. Each datagram's interface (IP_PKTINFO) is noted; interface @i is
 * silent when nothing arrived on it for UR_BOND_QUIET_NS while another
 * one heard within that time (it works now) and the others had at least
 * four times as many arrivals as they usually have between two of its
 * own, and at least UR_BOND_QUIET_MIN: a peer that sprays answers and
 * requests over every interface keeps each one heard, and a quiet QP,
 * with nothing arriving anywhere, makes none silent. Both conditions
 * matter: a peer that sprays in runs (UR_MP_RUNS) or GRO's merged
 * datagrams leave one interface without arrivals for 2 ms while the
 * other has 4 (with 4 the flags flapped every few ms in a plain transfer,
 * and each flap took a working path out); and an interface called silent
 * while the other one then stopped hearing too (integration_bond, link 2
 * dropping) stayed silent with nothing left to clear it: this host sent
 * only by the dead link, its peer had nothing to answer, and the QP ran
 * out of retries. An interface never heard is silent once 32 datagrams
 * came by the others (a rail dropping from the start; also a peer that is
 * not bonded and reaches us by one interface only: we then send by the
 * others, and probe it). Arrivals are timed by the kernel's stamps and
 * the quiet by the latest arrival on any interface, not by when the
 * engine reads them: on a loaded machine the engine fell 2 ms behind,
 * read one interface's datagrams before the other's and called that
 * one silent (every 10-30 ms in a plain transfer at load 12).
 */
#define UR_BOND_QUIET_NS 2000000ull
#define UR_BOND_QUIET_MIN 16
static unsigned int bond_heard(struct ur_engine *e, unsigned int ifindex,
			       uint64_t now)
{
	for (unsigned int i = 0; i < e->bond_n; i++) {
		uint64_t t, prev;
		uint32_t r, between;

		if (e->bond_ifindex[i] != ifindex)
			continue;
		t = atomic_fetch_add_explicit(&e->bond_rx_total, 1,
					      memory_order_relaxed);
		prev = atomic_exchange_explicit(&e->bond_rx_mark[i], t + 1,
						memory_order_relaxed);
		between = t - prev > 1024 ? 1024 : (uint32_t)(t - prev);
		r = atomic_load_explicit(&e->bond_rx_ratio[i], memory_order_relaxed);
		r = r - r / 8 + between * 2; /* x16, 1/8 of the new sample */
		atomic_store_explicit(&e->bond_rx_ratio[i], r, memory_order_relaxed);
		atomic_store_explicit(&e->bond_rx_at[i], now, memory_order_relaxed);
		if (now > atomic_load_explicit(&e->bond_rx_last,
					       memory_order_relaxed))
			atomic_store_explicit(&e->bond_rx_last, now,
					      memory_order_relaxed);
		return i;
	}
	return UR_BOND_MAX;
}

/*
 * A send by a bonded interface that the host itself refused: a firewall
 * rule (EPERM: iptables DROP in OUTPUT), no route or no device by it.
 * Its packets are lost as surely as on a cut cable, and this is known at
 * once, where silence (above) takes the peer's answers to show: with one
 * ACK per 64 KiB WRITE, 16 of them on the other interface took 20-30 ms
 * (bench/bond.sh, iptables DROP). The interface then counts as failed
 * until a send by it goes through (the transport's probes, a plain ACK
 * every ms, try it), or UR_BOND_FAIL_NS after the last error if nothing
 * tries (with 4 ms the path came back between two probes and was taken
 * out again, its requests sent twice). Not ENOBUFS or EAGAIN: a full
 * queue is congestion, not a failure.
 */
#define UR_BOND_FAIL_NS 50000000ull

static void bond_if_err(struct ur_engine *e, unsigned int i, int err)
{
	uint64_t now;

	if (err != EPERM && err != ENETDOWN && err != ENETUNREACH &&
	    err != EHOSTUNREACH && err != ENODEV && err != ENXIO)
		return;
	now = ur_now();
	atomic_store_explicit(&e->bond_fail_at[i], now ? now : 1,
			      memory_order_relaxed);
}

static bool bond_failing(struct ur_engine *e, unsigned int i, uint64_t now)
{
	uint64_t at = atomic_load_explicit(&e->bond_fail_at[i],
					   memory_order_relaxed);

	return at && (int64_t)(now - at) < (int64_t)UR_BOND_FAIL_NS;
}

bool ur__bond_if_ok(struct ur_engine *e, unsigned int i)
{
	uint64_t now = ur_now();

	return bond_up(e, i, now) && !bond_failing(e, i, now);
}

/* A send by interface @i (bond_if_of; UR_BOND_MAX: none) went through
 * (@err 0: the mark clears, read first so that the hot path writes
 * nothing) or failed with @err (bond_if_err). */
void ur__bond_if_sent(struct ur_engine *e, unsigned int i, int err)
{
	if (i >= e->bond_n)
		return;
	if (err)
		bond_if_err(e, i, err);
	else if (atomic_load_explicit(&e->bond_fail_at[i], memory_order_relaxed))
		atomic_store_explicit(&e->bond_fail_at[i], 0,
				      memory_order_relaxed);
}

/* Has an interface other than @i heard lately? Its arrivals are timed
 * by the kernel, and read up to milliseconds later on a loaded machine:
 * within 4 x UR_BOND_QUIET_NS of @now (with 1 x, an interface found
 * silent came back and went again as the engine fell behind). */
static bool bond_other_hears(struct ur_engine *e, unsigned int i, uint64_t now)
{
	for (unsigned int j = 0; j < e->bond_n; j++) {
		uint64_t at = atomic_load_explicit(&e->bond_rx_at[j],
						   memory_order_relaxed);

		if (j != i && at &&
		    (int64_t)(now - at) < 4 * (int64_t)UR_BOND_QUIET_NS)
			return true;
	}
	return false;
}

static bool bond_silent(struct ur_engine *e, unsigned int i, uint64_t now)
{
	uint64_t at = atomic_load_explicit(&e->bond_rx_at[i], memory_order_relaxed);
	uint64_t last = atomic_load_explicit(&e->bond_rx_last, memory_order_relaxed);
	uint64_t others, need;

	if (at && (int64_t)(last - at) < (int64_t)UR_BOND_QUIET_NS)
		return false;
	if (!bond_other_hears(e, i, now))
		return false;
	if (!at) /* never heard: silent once the others have heard some */
		return atomic_load_explicit(&e->bond_rx_total,
					    memory_order_relaxed) >= 32;
	others = atomic_load_explicit(&e->bond_rx_total, memory_order_relaxed) -
		 atomic_load_explicit(&e->bond_rx_mark[i], memory_order_relaxed);
	need = atomic_load_explicit(&e->bond_rx_ratio[i], memory_order_relaxed) / 4;
	return others >= (need > UR_BOND_QUIET_MIN ? need : UR_BOND_QUIET_MIN);
}

/* Interface @i is up, its sends go through and it hears while another
 * does: rx_if_ok's answer. */
static bool bond_live(struct ur_engine *e, unsigned int i, uint64_t now)
{
	return bond_up(e, i, now) && !bond_failing(e, i, now) &&
	       !bond_silent(e, i, now);
}

/* ur_dev_ops.path_ok: the facts only (down, or our sends refused).
 * Silence is path_quiet's, which the transport weighs: counted here it
 * took 3-29 working paths a 5 s run out of the receiver's answers
 * (bench/bond.sh, equal rails: one rail quiet 2-12 ms while the other
 * heard 16-100 datagrams, the sender's runs and stalls). */
bool ur__eng_path_ok(void *host, uint16_t sport, uint64_t now)
{
	struct ur_engine *e = host;
	unsigned int i;

	if (!e->bond_n)
		return true;
	i = sport % e->bond_n;
	return bond_up(e, i, now) && !bond_failing(e, i, now);
}

/* ur_dev_ops.path_quiet: @sport's interface hears nothing while the
 * others hear (bond_silent). */
bool ur__eng_path_quiet(void *host, uint16_t sport, uint64_t now)
{
	struct ur_engine *e = host;

	return e->bond_n && bond_silent(e, sport % e->bond_n, now);
}

/* ur_dev_ops.rx_if_ok: interface @rx_if - 1 (rxinfo_of) is up, not
 * silent and not refusing our sends; a rail that drops everything is
 * found so both ways (bench/bond.sh rdrop). */
bool ur__eng_rx_if_ok(void *host, unsigned int rx_if, uint64_t now)
{
	struct ur_engine *e = host;
	unsigned int i = rx_if - 1;

	return !rx_if || i >= e->bond_n || bond_live(e, i, now);
}

/* A packet of a bonded port whose path's interface is down, or silent,
 * leaves by the QP's next path on an interface that is neither (its
 * source port picks the socket, and so the interface; the ICRC is
 * computed at flush, after). The transport keeps its packets off such
 * paths itself once it knows (ur_dev_ops.path_ok); this catches what it
 * sent before, such as a QP's first requests from its own port. A plain
 * ACK on a silent interface goes as it is: it is the transport's probe
 * (ur__tx_probe_ack), or costs nothing lost. */
static bool bond_ok(struct ur_engine *e, unsigned int i, uint64_t now,
		    bool ack)
{
	return bond_up(e, i, now) &&
	       (ack || (!bond_failing(e, i, now) && !bond_silent(e, i, now)));
}

static void bond_reroute(struct ur_engine *e, const struct ur_eqp *q,
			 struct ur_pktbuf *pb)
{
	struct ur_ipudp *p = &pb->path;
	uint64_t now = ur_now();
	unsigned int n = e->bond_n, at = 0;

	if (bond_ok(e, p->sport % n, now,
		    ur_pkt_is_plain_ack(pb->data, pb->len)))
		return;
	for (unsigned int j = 0; j < q->mp_k; j++)
		if (q->mp_sport[j] == p->sport)
			at = j;
	for (unsigned int k = 1; k < q->mp_k; k++) {
		uint16_t s = q->mp_sport[(at + k) % q->mp_k];

		if (bond_ok(e, s % n, now, false)) {
			p->sport = s;
			return;
		}
	}
}

void ur__eng_pkt_send(void *host, struct ur_pktbuf *pb)
{
	struct ur_engine *e = host;
	struct ur_txq_slot *s = pb->host_priv;
	struct tx_batch *b = tctx.tx; /* the one ur__eng_pkt_alloc used */
	struct ur_sport_sock *ss = NULL;
	struct ur_ipudp *p = &pb->path;
	const struct ur_eqp *q = pb->qp_io;

	/* Fill what the kernel will put in the IP/UDP headers; the ICRC is
	 * computed at flush time, when the IP ID is known. */
	p->v6 = e->local.v6;
	memcpy(p->src, e->local.src, sizeof(p->src));
	p->dport = e->cfg.port;
	p->ip_frag = 0x4000; /* DF */
	s->conn = NULL;
	if (e->bond_n && q && q->mp_k > 1)
		bond_reroute(e, q, pb);
	if (q && p->sport == q->sport) {
		/* The QP's own port: its socket, without the table lock (we
		 * are called under the QP's lock, and a QP's port lives as
		 * long as the QP); its connected one if it has one for this
		 * destination. */
		struct ur_csock *cs = csock_of(e, pb->qp_io, p);

		s->route = cs ? cs->fd : q->tx_fd;
		s->conn = cs;
	} else {
		if (p->sport) {
			pthread_rwlock_rdlock(&e->qp_lock);
			ss = ur__map_get(&e->sports, p->sport);
			pthread_rwlock_unlock(&e->qp_lock);
		}
		if (!ss)
			p->sport = e->cfg.port; /* falls back to the 4791 socket */
		s->route = ss ? ss->fd : e->rx_fd;
	}
	if (ur_txq_commit(&b->q, pb, &e->dev.cnt)) {
		/* Full in the middle of a QP's burst (a message of more
		 * packets than the batch holds): what the QP holds from its
		 * earlier posts (doorbell batching) was made first and leaves
		 * first, as at its unlock, or the peer sees a PSN gap and
		 * NAKs (9.7.4.1.3). We hold the QP's lock. */
		if (q && q->held && ur__tx_pending(q->held))
			ur__tx_flush_after(q->held, b);
		else
			ur__tx_flush(b);
	}
}

/* ---- receive ------------------------------------------------------------- */
static void parse_cmsg(struct msghdr *mh, struct ur_ipudp *p, int *gso,
		       unsigned int *ifindex, uint64_t *rx_real)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == SOL_SOCKET &&
		    c->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;

			memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			*rx_real = (uint64_t)ts.tv_sec * 1000000000ull +
				   (uint64_t)ts.tv_nsec;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			memcpy(p->dst, &pi.ipi_addr, 4);
			*ifindex = (unsigned int)pi.ipi_ifindex;
		} else if (c->cmsg_level == IPPROTO_IP &&
			   c->cmsg_type == IP_TOS) {
			p->tos = *(uint8_t *)CMSG_DATA(c);
		} else if (c->cmsg_level == IPPROTO_IPV6 &&
			   c->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			memcpy(p->dst, &pi.ipi6_addr, 16);
			*ifindex = pi.ipi6_ifindex;
		} else if (c->cmsg_level == SOL_UDP &&
			   c->cmsg_type == UDP_GRO) {
			memcpy(gso, CMSG_DATA(c), sizeof(*gso));
		} else if (c->cmsg_level == IPPROTO_IPV6 &&
			   c->cmsg_type == IPV6_TCLASS) {
			int tc;

			memcpy(&tc, CMSG_DATA(c), sizeof(tc));
			p->tos = (uint8_t)tc;
		}
	}
}

/* Build the rxinfo of a datagram from its source address and cmsgs. */
static void rxinfo_of(struct ur_engine *e, const struct sockaddr_storage *from,
		      struct msghdr *mh, struct ur_rxinfo *ri, int *gso,
		      uint64_t now)
{
	struct ur_ipudp *p = &ri->path;
	unsigned int ifindex = 0;
	uint64_t real = 0;

	memset(ri, 0, sizeof(*ri));
	p->v6 = from->ss_family == AF_INET6;
	memcpy(p->dst, e->local.src, sizeof(p->dst));
	if (p->v6) {
		const struct sockaddr_in6 *s6 = (const void *)from;

		memcpy(p->src, &s6->sin6_addr, 16);
		p->sport = ntohs(s6->sin6_port);
	} else {
		const struct sockaddr_in *s4 = (const void *)from;

		memcpy(p->src, &s4->sin_addr, 4);
		p->sport = ntohs(s4->sin_port);
	}
	p->dport = e->cfg.port;
	p->ip_id = 0;
	p->ip_frag = 0x4000;
	parse_cmsg(mh, p, gso, &ifindex, &real);
	/* CLOCK_REALTIME to the engine's CLOCK_MONOTONIC (the offset read
	 * with the batch's clock); never after now. */
	if (real > e->rx_real_off && real - e->rx_real_off <= now)
		ri->rx_ns = real - e->rx_real_off;
	if (e->bond_n && ifindex) {
		unsigned int i = bond_heard(e, ifindex,
					    ri->rx_ns ? ri->rx_ns : now);

		ri->rx_if = i < e->bond_n ? (uint8_t)(i + 1) : 0;
	}
}

/* (Re)arm receive slot @i: the kernel overwrote the name and control
 * lengths with what it filled. */
static void rx_arm(struct ur_engine *e, int i)
{
	struct ur_rxv *v = e->rxv;
	struct msghdr *mh = &v->msg[i].msg_hdr;

	mh->msg_namelen = sizeof(v->from[i]);
	mh->msg_controllen = sizeof(v->ctl[i]);
}

void ur__udp_rx_init(struct ur_engine *e)
{
	struct ur_rxv *v = e->rxv;

	for (int i = 0; i < UR_IO_RX_BATCH; i++) {
		struct msghdr *mh = &v->msg[i].msg_hdr;

		v->iov[i].iov_base = e->rxbuf[i];
		v->iov[i].iov_len = sizeof(e->rxbuf[i]);
		mh->msg_name = &v->from[i];
		mh->msg_iov = &v->iov[i];
		mh->msg_iovlen = 1;
		mh->msg_control = v->ctl[i];
		rx_arm(e, i);
	}
}

/* One receive system call into the armed slots: how many datagrams. */
/*
 * The kernel's receive time of each datagram (rxinfo rx_ns), for a device
 * whose Swift ends an ACK's RTT there (UROCE_SWIFT_LATE_MILLI): only then,
 * since it turns on the kernel's stamping of every packet and adds a cmsg
 * to each receive.
 */
int ur_engine_rx_stamps(struct ur_engine *e)
{
	int one = 1;

	if (setsockopt(e->rx_fd, SOL_SOCKET, SO_TIMESTAMPNS, &one,
		       sizeof(one)))
		return -errno;
	__atomic_store_n(&e->rx_stamps, true, __ATOMIC_RELAXED);
	return 0;
}

/* The kernel stamps datagrams on CLOCK_REALTIME (SO_TIMESTAMPNS); the
 * engine's clock is CLOCK_MONOTONIC: their offset as of this receive.
 * Only with stamps on: the two clock reads were 2 of the 5 per message of
 * a spinning poller (ib_send_lat -s 8), for a cmsg that never came. */
static void rx_clock_off(struct ur_engine *e)
{
	uint64_t mono;

	if (!__atomic_load_n(&e->rx_stamps, __ATOMIC_RELAXED))
		return;
	mono = ur_now();
	e->rx_real_off = ur_now_real() - mono;
}

static int rx_call(struct ur_engine *e, int fd, bool batch)
{
	struct ur_rxv *v = e->rxv;
	ssize_t r;

	if (batch) {
		int n = ur_sys_recvmmsg(fd, v->msg, UR_IO_RX_BATCH, MSG_DONTWAIT);

		if (n <= 1)
			e->rx_batch = false;
		if (n > 0) {
			UR_LP_MARK(UR_LP_RX);
			rx_clock_off(e);
		}
		return n;
	}
	r = ur_sys_recvmsg(fd, &v->msg[0].msg_hdr, MSG_DONTWAIT);
	if (r < 0) {
		e->rx_hit = false;
		return -1;
	}
	UR_LP_MARK(UR_LP_RX);
	rx_clock_off(e);
	v->msg[0].msg_len = (unsigned int)r;
	e->rx_batch = e->rx_hit;
	e->rx_hit = true;
	return 1;
}

/* Whether the @len bytes at @p, cut every @seg bytes, are plain ACKs. */
static bool only_acks(const uint8_t *p, size_t len, size_t seg)
{
	for (size_t off = 0; off < len; off += seg)
		if (!ur_pkt_is_plain_ack(p + off, len - off < seg ? len - off : seg))
			return false;
	return true;
}

/*
 * Deliver the datagrams of the last receive, from where the previous call
 * stopped. With UDP_GRO the kernel may hand us several datagrams of one
 * flow glued together, with their common size in a cmsg: they are split
 * back. Packet k of a run most likely left as segment k of one GSO send,
 * so its IP ID is tried as k (or, once a packet of the run was solved for
 * its ID, as that ID plus the packets since) when the ICRC is checked. Returns
 * false when it stopped early: @stop has an entry and all that is left
 * is plain ACKs at the end of the last datagram. Anything else is
 * delivered, since a program may be waiting for it without polling (the
 * data of an RDMA WRITE).
 */
static bool rx_deliver(struct ur_engine *e, uint64_t now,
		       const struct ur_cq *stop)
{
	struct ur_rxv *v = e->rxv;
	size_t since = 0; /* bytes delivered since @now was read */

	while (e->rx_i < e->rx_n) {
		int i = e->rx_i;
		struct msghdr *mh = &v->msg[i].msg_hdr;
		size_t len = v->msg[i].msg_len, seg;

		/* A batch of large datagrams takes a while (milliseconds
		 * under a sanitizer): what it arms is timed from the clock
		 * as it goes, read again every UR_IO_NOW_BYTES, not from
		 * the receive call's. */
		if (since >= UR_IO_NOW_BYTES) {
			now = ur_now();
			since = 0;
		}
		since += len - e->rx_off;
		if (e->rx_off == 0) {
			if (mh->msg_flags & MSG_TRUNC) {
				e->dev.cnt.rx_drop_malformed++;
				rx_arm(e, i);
				e->rx_i++;
				continue;
			}
			e->rx_gso = 0;
			rxinfo_of(e, &v->from[i], mh, &e->rx_ri, &e->rx_gso,
				  now);
			rx_arm(e, i);
			e->rx_k = 0;
			e->rx_id0 = 0;
			e->rx_frag = e->rx_ri.path.ip_frag;
		}
		seg = e->rx_gso > 0 ? (size_t)e->rx_gso : len;
		while (e->rx_off < len) {
			struct ur_rxinfo r = e->rx_ri;
			size_t off = e->rx_off;
			size_t l = len - off < seg ? len - off : seg;

			r.path.ip_id = (uint16_t)(e->rx_id0 + e->rx_k++);
			r.path.ip_frag = e->rx_frag;
			e->rx_off += l;
			/* The batch's last packet answers at once: the ACK
			 * owed by earlier ones of its QP goes with it. */
			r.ack_later = e->rx_off < len || i + 1 < e->rx_n;
			ur__engine_deliver(e, e->rxbuf[i] + off, l, &r, now,
					    false);
			/* A connected socket numbers its datagrams from a
			 * counter of its own (docs/wire.md): once a packet
			 * showed the run's IDs, the next ones verify at the
			 * first try instead of each being solved for. Not
			 * when strict, which accepts GSO indices alone. */
			if (r.icrc_checked && !e->rx_ri.icrc_checked &&
			    e->icrc != UR_ICRC_STRICT) {
				e->rx_id0 = (uint16_t)(r.path.ip_id -
						       (e->rx_k - 1));
				e->rx_frag = r.path.ip_frag;
			}
			if (stop && e->rx_off < len && i + 1 == e->rx_n &&
			    ur_cq_nonempty(stop) &&
			    only_acks(e->rxbuf[i] + e->rx_off, len - e->rx_off,
				      seg)) {
				ur__engine_owed_flush(e);
				return false;
			}
		}
		e->rx_i++;
		e->rx_off = 0;
	}
	ur__engine_owed_flush(e);
	return true;
}

int ur__udp_drain_fd(struct ur_engine *e, int fd, uint64_t now)
{
	int total = 0;

	if (!rx_deliver(e, now, NULL))
		return 0;
	for (int turn = 0; turn < UR_IO_RX_TURN; turn++) {
		int n = rx_call(e, fd, true);

		if (n <= 0)
			break;
		e->rx_n = n;
		e->rx_i = 0;
		e->rx_off = 0;
		total += n;
		rx_deliver(e, ur_now(), NULL);
		ur__tx_flush(ur__thread()->tx);
		if (n < UR_IO_RX_BATCH)
			break;
	}
	return total;
}

void ur__udp_rx_rest(struct ur_engine *e, uint64_t now)
{
	rx_deliver(e, now, NULL);
}

int ur__udp_drain(struct ur_engine *e, int fd, uint64_t now, bool flush,
		   const struct ur_cq *stop)
{
	/* Only a poller that keeps polling (no late return lately) receives
	 * one datagram at a time: one that goes away after its completion
	 * (to spin on memory) must not leave datagrams queued behind it, nor
	 * must the engine thread, which it counts on meanwhile. */
	bool single_ok = !flush && atomic_load(&e->comp_left) == 0;
	int total = 0;

	if (!rx_deliver(e, now, stop) || (stop && ur_cq_nonempty(stop)))
		return 0;
	if (e->shm) {
		total = ur__shm_drain(e, now, stop);
		if (flush && total)
			ur__tx_flush(ur__thread()->tx);
		if (stop && ur_cq_nonempty(stop))
			return total;
	}
	/* A bounded turn: a socket that a flood keeps full must not keep
	 * the caller from its siblings' connections (fwd.c) and timers. */
	for (int turn = 0; turn < UR_IO_RX_TURN; turn++) {
		bool batch = e->rx_batch || !single_ok, done;
		int n = rx_call(e, fd, batch);

		if (n <= 0)
			break;
		/* The clock after the receive, for a single receive too:
		 * the poll's, read before its lock and this call, can be
		 * milliseconds old on a loaded host (preempted), and an ACK
		 * timed from it measured an RTT shorter than the path's, or
		 * none at all: a requester's send stamped after that clock
		 * read came back "before" it (the wire bed's Swift took 1 ns
		 * as its base RTT). A vDSO clock read is tens of ns. */
		now = ur_now();
		e->rx_n = n;
		e->rx_i = 0;
		e->rx_off = 0;
		total += n;
		done = rx_deliver(e, now, stop);
		UR_LP_STAGE(UR_LPS_DRAINED);
		/* One coalesced ACK per QP per receive batch, not one per
		 * packet, and none held while the socket stays busy. */
		if (flush)
			ur__tx_flush(ur__thread()->tx);
		/* A single receive returns at once: the caller may be
		 * waiting for just this datagram. */
		if (!done || !batch || n < UR_IO_RX_BATCH)
			break;
	}
	return total;
}

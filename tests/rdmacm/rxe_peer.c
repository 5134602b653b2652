// SPDX-License-Identifier: MIT
/*
 * rxe_peer: plays one side of a golden Linux rxe capture, the CM exchange
 * and the RC traffic after it, against an unmodified program on uroce.
 *
 *   rxe_peer CAPTURE active|passive OUR_IP UROCE_IP
 *
 * "active" plays the side that sent the REQ (rping -c in
 * rdma_cm_rping.pcap) against a uroce passive side (rping -s), "passive"
 * the other way round. Our packets are the capture's, with what differs
 * per connection put in: uroce's comm ID, QPN and Starting PSN, our GIDs
 * and addresses, and the rkey and address that uroce's program sent for
 * its buffers. Every packet of the uroce side in the capture must come
 * from uroce, checked field by field: opcode, destination QPN, PSN, RETH,
 * payload length and (where the data is the program's, not an address)
 * the payload, and the ICRC. PSNs follow Linux's CM: each side sends from
 * the Starting PSN of the other side's REQ or REP, so an implementation
 * that sends from its own (the failure in shared/wire/interop/) fails
 * here at the first data packet.
 *
 * uroce may coalesce ACKs where rxe sent one per packet: an ACK the
 * capture shows is satisfied by any ACK from uroce that covers its PSN.
 * An RNR NAK makes us resend after a moment, as a requester would; any
 * other NAK fails. A capture may hold several connections (perftest -R
 * makes one for its exchange and one for the test): each has its own
 * comm IDs, QPNs and PSNs. Environment: UROCE_PORT (the UDP port of both sides),
 * UROCE_GOLDEN_DIR (where CAPTURE is, unless it is a path).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ur_cm_mad.h"
#include "golden.h"

#define MAX_FRAMES 512
#define WAIT_MS 5000
#define REQ_RETRY_MS 300 /* our REQ is resent until the listener is up */
#define CROSSED_MS 1000
#define RING_INFO_LEN 16 /* rping's struct rping_rdma_info: buf, rkey, size */

static struct golden_frame fr[MAX_FRAMES];
static bool done[MAX_FRAMES]; /* uroce sent it ahead of its turn */
static int nfr;

#define MAX_CONNS 4

/* One connection of the capture: what we play keeps the capture's comm
 * ID, QPN and Starting PSN; uroce's are learned from its REQ or REP. */
struct conn {
	uint32_t act_comm_cap, pas_comm_cap;
	uint32_t our_comm, our_qpn_cap, our_spsn;
	uint32_t their_qpn_cap, their_spsn_cap;
	uint32_t their_comm, their_qpn, their_spsn;
	uint64_t tid;               /* the REQ's TID */
	uint64_t their_dreq_tid;
	int req_frame;
	uint32_t acked;             /* highest PSN of ours that uroce ACKed */
	bool any_acked;
	uint32_t next_their_req;    /* next PSN expected of uroce's requests */
	bool their_req_started;
	uint32_t owed;              /* highest PSN whose ACK is still owed */
	int owed_frame;
	bool dreq_sent;
	bool crossed;               /* uroce's DREQ crossed ours */
};

static struct {
	bool active;                /* we play the REQ's sender */
	uint8_t our_ip[4], uroce_ip[4], cap_us[4];
	uint16_t port, data_sport;
	int fd, data_fd;
	struct conn conn[MAX_CONNS];
	int nconn;
	/* buffer descriptors (rping's): the capture's and uroce's */
	struct { uint64_t va_cap, va; uint32_t rkey_cap, rkey; } key[8];
	int nkey;
	int checked, sent, extra_acks, dups, rnr, crossed, drep_skipped;
	int sr_hellos;
} P;

static void fail(int frame, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rxe_peer: FAIL at capture frame %d: ", frame + 1);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool from_us(const struct golden_frame *f)
{
	return memcmp(f->src, P.cap_us, 4) == 0;
}

static bool is_mad(const uint8_t *ib)
{
	return ur_bth_dqpn(ib) == 1;
}

static uint8_t *mad_of(uint8_t *ib)
{
	return ib + 20; /* BTH + DETH */
}

/* RXE_PEER_TRACE=1: one line per packet, sent (>) or received (<). */
static void trace(const char *dir, const uint8_t *ib)
{
	static int on = -1;

	if (on < 0)
		on = getenv("RXE_PEER_TRACE") != NULL;
	if (!on)
		return;
	if (is_mad(ib))
		fprintf(stderr, "%s MAD %s local 0x%x remote 0x%x\n", dir,
			ur_cm_attr_name(ur_cm_mad_attr(ib + 20)),
			(unsigned)ur_cm_get(ib + 20, CMF_LOCAL_COMM_ID),
			(unsigned)ur_cm_get(ib + 20, CMF_REMOTE_COMM_ID));
	else
		fprintf(stderr, "%s %s qpn 0x%x psn %u\n", dir,
			ur_opcode_name(ib[0]), ur_bth_dqpn(ib), ur_bth_psn(ib));
}

/* ---- sending ------------------------------------------------------------- */
static void send_ib(int fd, uint16_t sport, uint8_t *ib, size_t len)
{
	struct ur_ipudp path = { .sport = sport, .dport = P.port, .ttl = 64,
				 .ip_frag = 0x4000 };
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons(P.port) };

	memcpy(path.src, P.our_ip, 4);
	memcpy(path.dst, P.uroce_ip, 4);
	memcpy(&to.sin_addr, P.uroce_ip, 4);
	ur_icrc_store(ib + len - 4, ur_icrc(&path, ib, len - 4));
	trace(">", ib);
	if (sendto(fd, ib, len, 0, (struct sockaddr *)&to, sizeof(to)) !=
	    (ssize_t)len) {
		perror("rxe_peer: sendto");
		exit(1);
	}
	P.sent++;
}

static void set_gid(uint8_t *mad, enum cm_blob b, const uint8_t *ip)
{
	size_t len;
	uint8_t *g = ur_cm_blob(mad, b, &len);

	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	memcpy(g + 12, ip, 4);
}

/* ---- connections --------------------------------------------------------- */
/* The connection of a capture MAD: by the comm IDs it names. */
static struct conn *conn_of_mad(const uint8_t *m)
{
	uint32_t l = (uint32_t)ur_cm_get(m, CMF_LOCAL_COMM_ID);
	uint32_t r = (uint32_t)ur_cm_get(m, CMF_REMOTE_COMM_ID);

	for (int c = 0; c < P.nconn; c++) {
		struct conn *k = &P.conn[c];

		if (l == k->act_comm_cap || l == k->pas_comm_cap ||
		    r == k->act_comm_cap || r == k->pas_comm_cap)
			return k;
	}
	return NULL;
}

/* The connection of a capture data packet: by its destination QPN. */
static struct conn *conn_of_qpn(uint32_t qpn_cap)
{
	for (int c = 0; c < P.nconn; c++)
		if (P.conn[c].our_qpn_cap == qpn_cap ||
		    P.conn[c].their_qpn_cap == qpn_cap)
			return &P.conn[c];
	return NULL;
}

/* The connection a packet from uroce is for: by the QPN it names. */
static struct conn *conn_of_ours(uint32_t qpn)
{
	for (int c = 0; c < P.nconn; c++)
		if (P.conn[c].our_qpn_cap == qpn)
			return &P.conn[c];
	return NULL;
}

/* Our MAD of frame @i, with its connection's fields. */
static void send_mad(int i)
{
	uint8_t ib[GOLDEN_IB_MAX], *m = mad_of(ib);
	struct conn *k;
	uint16_t attr;

	memcpy(ib, fr[i].ib, fr[i].len);
	attr = ur_cm_mad_attr(m);
	k = conn_of_mad(m);
	if (!k)
		fail(i, "capture MAD of no connection");
	switch (attr) {
	case UR_CM_ATTR_REQ: {
		struct cma_hdr h;
		size_t len;

		set_gid(m, CMB_P_LOCAL_GID, P.our_ip);
		set_gid(m, CMB_P_REMOTE_GID, P.uroce_ip);
		if (ur_cma_hdr_get(ur_cm_blob(m, CMB_PDATA, &len), &h))
			fail(i, "capture REQ without an rdma_cm header");
		memcpy(h.src, P.our_ip, 4);
		memcpy(h.dst, P.uroce_ip, 4);
		ur_cma_hdr_put(ur_cm_blob(m, CMB_PDATA, &len), &h);
		break;
	}
	case UR_CM_ATTR_REP:
	case UR_CM_ATTR_RTU:
		ur_cm_set(m, CMF_REMOTE_COMM_ID, k->their_comm);
		ur_put64(m + 8, k->tid);
		break;
	case UR_CM_ATTR_DREP:
		ur_cm_set(m, CMF_REMOTE_COMM_ID, k->their_comm);
		ur_put64(m + 8, k->their_dreq_tid);
		break;
	case UR_CM_ATTR_DREQ:
		/* Its own TID (Linux's cm_form_tid), as captured. */
		ur_cm_set(m, CMF_REMOTE_COMM_ID, k->their_comm);
		ur_cm_set(m, CMF_REMOTE_QPN, k->their_qpn);
		k->dreq_sent = true;
		break;
	default:
		fail(i, "capture MAD %s not replayed", ur_cm_attr_name(attr));
	}
	send_ib(P.fd, P.port, ib, fr[i].len);
}

/* A PSN of connection @k in the capture, in this run. Our requests (and
 * uroce's responses to them) count from uroce's Starting PSN, uroce's
 * requests from ours, which is the capture's. */
static uint32_t map_psn(const struct conn *k, uint32_t psn, bool our_stream)
{
	return our_stream ? ur_psn_add(psn, (k->their_spsn - k->their_spsn_cap) &
						    UR_PSN_MASK)
			  : psn;
}

static bool map_key(uint64_t va_cap, uint32_t rkey_cap, uint64_t *va,
		    uint32_t *rkey)
{
	for (int n = 0; n < P.nkey; n++)
		if (P.key[n].rkey_cap == rkey_cap &&
		    va_cap >= P.key[n].va_cap) {
			*va = P.key[n].va + (va_cap - P.key[n].va_cap);
			*rkey = P.key[n].rkey;
			return true;
		}
	return false;
}

/* Our data packet of frame @i: uroce's QPN, the mapped PSN and keys. */
static void send_data(int i)
{
	uint8_t ib[GOLDEN_IB_MAX];
	struct ur_pkt pkt;
	struct conn *k;

	memcpy(ib, fr[i].ib, fr[i].len);
	if (ur_pkt_decode(ib, fr[i].len, &pkt) != UR_DEC_OK)
		fail(i, "capture packet does not decode");
	k = conn_of_qpn(pkt.h.dqpn);
	if (!k || !k->their_qpn)
		fail(i, "capture packet to QPN 0x%x of no connection", pkt.h.dqpn);
	ur_put24(ib + 5, k->their_qpn);
	ur_put24(ib + 9, map_psn(k, pkt.h.psn, pkt.mask & UR_OPF_REQ));
	if (pkt.mask & UR_HDR_RETH) {
		uint64_t va;
		uint32_t rkey;
		uint8_t *reth = ib + pkt.info->off[UR_ETH_RETH];

		if (!map_key(pkt.reth.va, pkt.reth.rkey, &va, &rkey))
			fail(i, "no rkey of uroce's program for capture rkey 0x%x",
			     pkt.reth.rkey);
		ur_put64(reth, va);
		ur_put32(reth + 8, rkey);
	}
	send_ib(P.data_fd, P.data_sport, ib, fr[i].len);
}

/* ---- receiving ----------------------------------------------------------- */
struct rx {
	uint8_t buf[4096];
	size_t len;
	struct ur_pkt pkt;
};

static bool recv_pkt(struct rx *r, int ms, int frame)
{
	struct pollfd p = { .fd = P.fd, .events = POLLIN };
	struct sockaddr_in from;
	socklen_t flen = sizeof(from);
	struct ur_ipudp path = { .dport = P.port, .ttl = 64, .ip_frag = 0x4000 };
	uint32_t delta;
	ssize_t n;

	if (poll(&p, 1, ms) != 1)
		return false;
	n = recvfrom(P.fd, r->buf, sizeof(r->buf), 0, (struct sockaddr *)&from,
		     &flen);
	if (n < 16)
		fail(frame, "short datagram (%zd bytes)", n);
	r->len = (size_t)n;
	if (memcmp(&from.sin_addr, P.uroce_ip, 4))
		fail(frame, "datagram from %s, not uroce",
		     inet_ntoa(from.sin_addr));
	if (ur_pkt_decode(r->buf, r->len, &r->pkt) != UR_DEC_OK)
		fail(frame, "uroce's packet does not decode");
	path.sport = ntohs(from.sin_port);
	memcpy(path.src, P.uroce_ip, 4);
	memcpy(path.dst, P.our_ip, 4);
	/* A UDP socket hides the IPv4 ID: uroce's connected sockets number
	 * theirs, so recover it from the ICRC as uroce's engine does. */
	delta = ur_icrc(&path, r->buf, r->len - 4) ^
		ur_icrc_load(r->buf + r->len - 4);
	if (delta && !ur_icrc_fix_ipv4_id(&path, r->len - 4, delta))
		fail(frame, "bad ICRC on uroce's %s",
		     ur_opcode_name(r->pkt.h.opcode));
	trace("<", r->buf);
	return true;
}

static bool covered(const struct conn *k, uint32_t psn)
{
	return k->any_acked && ur_psn_cmp(k->acked, psn) >= 0;
}

/* An ACK or NAK from uroce for our requests. Returns its connection if it
 * is an ACK (noted); an RNR NAK resends our packet at its PSN. */
static struct conn *take_ack(const struct rx *r, int frame)
{
	const struct ur_pkt *a = &r->pkt;
	enum ur_aeth_kind kind = ur_aeth_kind(a->aeth.syndrome);
	struct conn *k = conn_of_ours(a->h.dqpn);

	if (!k)
		fail(frame, "ACK to QPN 0x%x, none of ours", a->h.dqpn);
	if (kind == UR_AETH_ACK) {
		if (!k->any_acked || ur_psn_cmp(a->h.psn, k->acked) > 0)
			k->acked = a->h.psn;
		k->any_acked = true;
		return k;
	}
	if (kind == UR_AETH_RNR_NAK) {
		/* Resend ours at that PSN after the RNR delay. */
		for (int i = 0; i < nfr; i++) {
			if (!from_us(&fr[i]) || is_mad(fr[i].ib) ||
			    conn_of_qpn(ur_bth_dqpn(fr[i].ib)) != k ||
			    !(ur_opcode_info(fr[i].ib[0])->mask & UR_OPF_REQ) ||
			    map_psn(k, ur_bth_psn(fr[i].ib), true) != a->h.psn)
				continue;
			usleep(ur_rnr_timer_us(ur_aeth_value(a->aeth.syndrome)));
			send_data(i);
			P.rnr++;
			return NULL;
		}
		fail(frame, "RNR NAK for PSN %u that we never sent", a->h.psn);
	}
	fail(frame, "NAK syndrome 0x%02x (PSN %u) from uroce; our requests "
	     "start at its Starting PSN %u", a->aeth.syndrome, a->h.psn,
	     k->their_spsn);
	return NULL;
}

/* Learn uroce's connection fields from its REQ or REP. */
static void learn(struct conn *k, const uint8_t *m, int i)
{
	k->their_comm = (uint32_t)ur_cm_get(m, CMF_LOCAL_COMM_ID);
	k->their_qpn = (uint32_t)ur_cm_get(m, CMF_LOCAL_QPN);
	k->their_spsn = (uint32_t)ur_cm_get(m, CMF_STARTING_PSN);
	if (!k->their_comm || !k->their_qpn)
		fail(i, "uroce's %s has no comm ID or QPN",
		     ur_cm_attr_name(ur_cm_mad_attr(m)));
}

static void check_mad(int i, struct conn *k, const struct rx *r)
{
	const uint8_t *want = mad_of(fr[i].ib), *m = r->pkt.payload;
	uint16_t attr = ur_cm_mad_attr(want);

	if (r->pkt.h.dqpn != 1 || r->pkt.payload_len != UR_MAD_LEN)
		fail(i, "expected a MAD (%s), got %s to QPN 0x%x",
		     ur_cm_attr_name(attr), ur_opcode_name(r->pkt.h.opcode),
		     r->pkt.h.dqpn);
	if (ur_cm_mad_attr(m) != attr)
		fail(i, "expected %s, got %s (comm IDs 0x%llx/0x%llx)",
		     ur_cm_attr_name(attr), ur_cm_attr_name(ur_cm_mad_attr(m)),
		     (unsigned long long)ur_cm_get(m, CMF_LOCAL_COMM_ID),
		     (unsigned long long)ur_cm_get(m, CMF_REMOTE_COMM_ID));
	switch (attr) {
	case UR_CM_ATTR_REQ:
		learn(k, m, i);
		k->tid = ur_cm_mad_tid(m);
		break;
	case UR_CM_ATTR_REP:
		if (ur_cm_get(m, CMF_REMOTE_COMM_ID) != k->our_comm)
			fail(i, "REP for comm ID 0x%llx, ours is 0x%x",
			     (unsigned long long)ur_cm_get(m, CMF_REMOTE_COMM_ID),
			     k->our_comm);
		learn(k, m, i);
		break;
	case UR_CM_ATTR_DREQ:
		if (ur_cm_get(m, CMF_REMOTE_QPN) != k->our_qpn_cap)
			fail(i, "DREQ names QPN 0x%llx, ours is 0x%x",
			     (unsigned long long)ur_cm_get(m, CMF_REMOTE_QPN),
			     k->our_qpn_cap);
		k->their_dreq_tid = ur_cm_mad_tid(m);
		/* fall through */
	default:
		if (ur_cm_get(m, CMF_REMOTE_COMM_ID) != k->our_comm ||
		    ur_cm_get(m, CMF_LOCAL_COMM_ID) != k->their_comm)
			fail(i, "%s with comm IDs 0x%llx/0x%llx",
			     ur_cm_attr_name(attr),
			     (unsigned long long)ur_cm_get(m, CMF_LOCAL_COMM_ID),
			     (unsigned long long)ur_cm_get(m, CMF_REMOTE_COMM_ID));
		break;
	}
}

/* uroce's data packet @r against capture frame @i. */
static void check_data(int i, struct conn *k, const struct rx *r)
{
	struct ur_pkt want;
	const struct ur_pkt *got = &r->pkt;
	uint32_t psn;

	ur_pkt_decode(fr[i].ib, fr[i].len, &want);
	psn = map_psn(k, want.h.psn, !(want.mask & UR_OPF_REQ));
	if (got->h.opcode != want.h.opcode)
		fail(i, "expected %s, got %s (PSN %u)",
		     ur_opcode_name(want.h.opcode),
		     ur_opcode_name(got->h.opcode), got->h.psn);
	if (got->h.dqpn != k->our_qpn_cap)
		fail(i, "%s to QPN 0x%x, expected 0x%x",
		     ur_opcode_name(got->h.opcode), got->h.dqpn, k->our_qpn_cap);
	if (got->h.psn != psn)
		fail(i, "%s with PSN %u, expected %u (our Starting PSN %u + %d)",
		     ur_opcode_name(got->h.opcode), got->h.psn, psn,
		     k->our_spsn, ur_psn_diff(psn, k->our_spsn));
	/* BTH byte 4's six reserved bits (uroce's extension bits, docs/wire.md
	 * "Extensions"): a standard peer gets them as rxe sends them. */
	if ((got->bth[4] & 0x3f) != (want.bth[4] & 0x3f))
		fail(i, "%s with BTH byte 4 reserved bits 0x%02x, expected 0x%02x",
		     ur_opcode_name(got->h.opcode), got->bth[4] & 0x3f,
		     want.bth[4] & 0x3f);
	if (got->payload_len != want.payload_len)
		fail(i, "%s with %u payload bytes, expected %u",
		     ur_opcode_name(got->h.opcode), got->payload_len,
		     want.payload_len);
	if (want.mask & UR_HDR_RETH) {
		/* Their READ or WRITE to our buffers: the capture's keys. */
		if (got->reth.va != want.reth.va ||
		    got->reth.rkey != want.reth.rkey ||
		    got->reth.len != want.reth.len)
			fail(i, "RETH va 0x%llx rkey 0x%x len %u, expected "
			     "0x%llx 0x%x %u",
			     (unsigned long long)got->reth.va, got->reth.rkey,
			     got->reth.len, (unsigned long long)want.reth.va,
			     want.reth.rkey, want.reth.len);
	}
	if ((want.mask & UR_OPF_SEND) && want.payload_len == RING_INFO_LEN &&
	    ur_get32(got->payload + 12) == ur_get32(want.payload + 12) &&
	    P.nkey < 8) {
		/* A program naming its buffer (rping: address, rkey, size):
		 * the capture's address and rkey mean uroce's from now on. */
		P.key[P.nkey].va_cap = ur_get64(want.payload);
		P.key[P.nkey].rkey_cap = ur_get32(want.payload + 8);
		P.key[P.nkey].va = ur_get64(got->payload);
		P.key[P.nkey].rkey = ur_get32(got->payload + 8);
		P.nkey++;
	} else if ((want.mask & (UR_OPF_WRITE | UR_OPF_READ_RESP)) &&
		   memcmp(got->payload, want.payload, want.payload_len)) {
		/* rping's data: the same pattern on every host. */
		fail(i, "%s payload differs from the capture's",
		     ur_opcode_name(got->h.opcode));
	}
	if (want.mask & UR_OPF_REQ) {
		if (k->their_req_started &&
		    ur_psn_cmp(got->h.psn, k->next_their_req) < 0)
			fail(i, "request PSN went back");
		k->next_their_req = ur_psn_add(got->h.psn, 1);
		k->their_req_started = true;
	}
}

/* Is @r a copy of a request of uroce's that we matched already? */
static bool retransmission(const struct rx *r)
{
	struct conn *k = conn_of_ours(r->pkt.h.dqpn);

	return k && (r->pkt.mask & UR_OPF_REQ) && k->their_req_started &&
	       ur_psn_cmp(r->pkt.h.psn, k->next_their_req) < 0;
}

/* A packet that came while we waited for an ACK, kept for the next wait. */
static struct rx pending;
static bool have_pending;

static bool next_pkt(struct rx *r, int ms, int frame)
{
	if (have_pending) {
		*r = pending;
		have_pending = false;
		return true;
	}
	/* uroce's hellos to QP1 (docs/wire.md "Selective repeat
	 * negotiation", "Congestion control negotiation": UROCE_CC=auto sends
	 * one) are dropped unanswered, as Linux's MAD layer
	 * drops a vendor class no agent registered on an rxe host: counted,
	 * never checked against the capture. */
	while (recv_pkt(r, ms, frame)) {
		if (r->pkt.h.dqpn != 1 || r->pkt.payload_len != UR_MAD_LEN ||
		    !golden_is_uroce_hello(r->pkt.payload))
			return true;
		P.sr_hellos++;
	}
	return false;
}

/* Is REJ @m "no listener yet" for a REQ of ours that waits for its REP? */
static bool early_rej(const struct rx *r)
{
	const uint8_t *m = r->pkt.payload;

	if (r->pkt.h.dqpn != 1 || ur_cm_mad_attr(m) != UR_CM_ATTR_REJ ||
	    ur_cm_get(m, CMF_REJ_REASON) != CM_REJ_INVALID_SERVICE_ID)
		return false;
	for (int c = 0; c < P.nconn; c++)
		if (P.conn[c].our_comm == ur_cm_get(m, CMF_REMOTE_COMM_ID) &&
		    !P.conn[c].their_comm)
			return true;
	return false;
}

/*
 * Both ends disconnect at once: uroce's DREQ crosses ours. Linux's CM
 * answers it with a DREP (cm_dreq_handler in DREQ_SENT), and so do we;
 * uroce still owes the DREP for ours.
 */
static bool crossing_dreq(int i, const struct rx *r)
{
	const uint8_t *m = r->pkt.payload;
	uint8_t ib[GOLDEN_IB_MAX];

	if (ur_cm_mad_attr(m) != UR_CM_ATTR_DREQ)
		return false;
	for (int c = 0; c < P.nconn; c++) {
		struct conn *k = &P.conn[c];

		if (!k->dreq_sent || k->our_comm != ur_cm_get(m, CMF_REMOTE_COMM_ID))
			continue;
		if (ur_cm_get(m, CMF_LOCAL_COMM_ID) != k->their_comm ||
		    ur_cm_get(m, CMF_REMOTE_QPN) != k->our_qpn_cap)
			fail(i, "crossing DREQ with comm ID 0x%llx, QPN 0x%llx",
			     (unsigned long long)ur_cm_get(m, CMF_LOCAL_COMM_ID),
			     (unsigned long long)ur_cm_get(m, CMF_REMOTE_QPN));
		/* Our REQ's or REP's BTH and DETH, a DREP after them. */
		for (int j = 0; j < nfr; j++)
			if (from_us(&fr[j]) && is_mad(fr[j].ib)) {
				memcpy(ib, fr[j].ib, fr[j].len);
				break;
			}
		ur_cm_mad_init(mad_of(ib), UR_CM_ATTR_DREP, ur_cm_mad_tid(m));
		ur_cm_set(mad_of(ib), CMF_LOCAL_COMM_ID, k->our_comm);
		ur_cm_set(mad_of(ib), CMF_REMOTE_COMM_ID, k->their_comm);
		send_ib(P.fd, P.port, ib, 20 + UR_MAD_LEN + 4);
		k->crossed = true;
		P.crossed++;
		return true;
	}
	return false;
}

/*
 * A MAD of another connection's exchange may overtake the one expected
 * (perftest's two connections end at once): if it is uroce's next MAD of
 * its own connection in the capture, check it there and mark that frame.
 */
static bool mad_ahead(int i, const struct rx *r)
{
	const uint8_t *m = r->pkt.payload;
	uint16_t attr = ur_cm_mad_attr(m);

	if (attr == ur_cm_mad_attr(mad_of(fr[i].ib)) &&
	    conn_of_mad(mad_of(fr[i].ib))->our_comm ==
		    ur_cm_get(m, CMF_REMOTE_COMM_ID))
		return false;
	for (int j = i + 1; j < nfr && j < i + 16; j++) {
		struct conn *k;

		if (from_us(&fr[j]) || !is_mad(fr[j].ib) || done[j] ||
		    ur_cm_mad_attr(mad_of(fr[j].ib)) != attr)
			continue;
		k = conn_of_mad(mad_of(fr[j].ib));
		if (!k || k->our_comm != ur_cm_get(m, CMF_REMOTE_COMM_ID))
			continue;
		check_mad(j, k, r);
		done[j] = true;
		P.checked++;
		return true;
	}
	return false;
}

/* Wait for the packet of capture frame @i from uroce. An ACK may come
 * later than rxe sent it (coalesced with a later one): if uroce sends
 * something else first, the ACK is owed until the end. */
static void expect(int i)
{
	const uint8_t *ib = fr[i].ib;
	bool ack = !is_mad(ib) && ib[0] == UR_OP_RC_ACKNOWLEDGE;
	struct conn *k = is_mad(ib) ? conn_of_mad(mad_of(fr[i].ib))
				    : conn_of_qpn(ur_bth_dqpn(ib));
	uint32_t want;
	uint64_t t0 = now_ms(), last_req = t0;
	struct rx r;

	if (!k)
		fail(i, "capture packet of no connection");
	want = ack ? map_psn(k, ur_bth_psn(ib), true) : 0;
	if (ack && covered(k, want))
		return;
	for (;;) {
		uint64_t now = now_ms();

		/* After a crossing DREQ uroce's program may have gone before
		 * it read ours: its DREP is not owed then (a Linux peer has
		 * its DISCONNECTED from uroce's DREQ already). */
		if (is_mad(ib) && k->crossed && now - t0 > CROSSED_MS &&
		    ur_cm_mad_attr(mad_of(fr[i].ib)) == UR_CM_ATTR_DREP) {
			P.drep_skipped++;
			return;
		}
		if (now - t0 > WAIT_MS)
			fail(i, "nothing from uroce for %d ms (waiting for %s)",
			     WAIT_MS, is_mad(ib) ? ur_cm_attr_name(ur_cm_mad_attr(
							    mad_of(fr[i].ib)))
						: ur_opcode_name(ib[0]));
		/* Until the REP, our REQ is resent: the listener may not be
		 * up yet (it answers REJ "invalid service ID" meanwhile). */
		if (P.active && !k->their_comm && now - last_req > REQ_RETRY_MS) {
			send_mad(k->req_frame);
			last_req = now;
		}
		if (!next_pkt(&r, 50, i))
			continue;
		if (early_rej(&r))
			continue;
		if (r.pkt.h.opcode == UR_OP_RC_ACKNOWLEDGE) {
			struct conn *a = take_ack(&r, i);

			if (a == k && ack && covered(k, want))
				break;
			if (!ack)
				P.extra_acks++;
			continue;
		}
		if (retransmission(&r)) {
			P.dups++;
			continue;
		}
		if (ack) {
			pending = r;
			have_pending = true;
			k->owed = want;
			k->owed_frame = i;
			return;
		}
		if (r.pkt.h.dqpn == 1 &&
		    (crossing_dreq(i, &r) || mad_ahead(i, &r)))
			continue;
		if (is_mad(ib))
			check_mad(i, k, &r);
		else
			check_data(i, k, &r);
		break;
	}
	P.checked++;
}

/* ---- setup --------------------------------------------------------------- */
static int bind_udp(const uint8_t *ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int pmtu = IP_PMTUDISC_DO; /* DF and IP ID 0, as the ICRC assumes */
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	memcpy(&a.sin_addr, ip, 4);
	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The capture's connections, from its REQs and REPs. */
static void find_conns(void)
{
	for (int i = 0; i < nfr; i++) {
		const uint8_t *m = mad_of(fr[i].ib);
		uint16_t attr;

		if (!is_mad(fr[i].ib))
			continue;
		attr = ur_cm_mad_attr(m);
		if (attr == UR_CM_ATTR_REQ && !conn_of_mad(m)) {
			struct conn *k = &P.conn[P.nconn];

			if (P.nconn == MAX_CONNS)
				fail(i, "more than %d connections", MAX_CONNS);
			P.nconn++;
			k->act_comm_cap = (uint32_t)ur_cm_get(m, CMF_LOCAL_COMM_ID);
			k->req_frame = i;
			k->owed_frame = -1;
			if (P.nconn == 1) /* who we are: the first REQ's side */
				memcpy(P.cap_us, P.active ? fr[i].src : fr[i].dst, 4);
			if (P.active) {
				k->our_comm = k->act_comm_cap;
				k->our_qpn_cap = (uint32_t)ur_cm_get(m, CMF_LOCAL_QPN);
				k->our_spsn = (uint32_t)ur_cm_get(m, CMF_STARTING_PSN);
				k->tid = ur_cm_mad_tid(m);
			} else {
				k->their_qpn_cap = (uint32_t)ur_cm_get(m, CMF_LOCAL_QPN);
				k->their_spsn_cap = (uint32_t)ur_cm_get(m, CMF_STARTING_PSN);
			}
		} else if (attr == UR_CM_ATTR_REP) {
			struct conn *k = conn_of_mad(m);

			if (!k)
				fail(i, "REP without its REQ");
			k->pas_comm_cap = (uint32_t)ur_cm_get(m, CMF_LOCAL_COMM_ID);
			if (P.active) {
				k->their_qpn_cap = (uint32_t)ur_cm_get(m, CMF_LOCAL_QPN);
				k->their_spsn_cap = (uint32_t)ur_cm_get(m, CMF_STARTING_PSN);
			} else {
				k->our_comm = k->pas_comm_cap;
				k->our_qpn_cap = (uint32_t)ur_cm_get(m, CMF_LOCAL_QPN);
				k->our_spsn = (uint32_t)ur_cm_get(m, CMF_STARTING_PSN);
			}
		}
	}
	if (!P.nconn) {
		fprintf(stderr, "rxe_peer: the capture has no REQ\n");
		exit(2);
	}
}

static void setup(const char *role, const char *ours, const char *theirs)
{
	const char *port = getenv("UROCE_PORT");

	P.active = !strcmp(role, "active");
	if (!P.active && strcmp(role, "passive")) {
		fprintf(stderr, "rxe_peer: role must be active or passive, not '%s'\n",
			role);
		exit(2);
	}
	if (inet_pton(AF_INET, ours, P.our_ip) != 1 ||
	    inet_pton(AF_INET, theirs, P.uroce_ip) != 1) {
		fprintf(stderr, "rxe_peer: addresses must be IPv4\n");
		exit(2);
	}
	P.port = port ? (uint16_t)atoi(port) : 4791;
	find_conns();
	P.fd = bind_udp(P.our_ip, P.port);
	if (P.fd < 0) {
		perror("rxe_peer: bind");
		exit(2);
	}
	/* Data from the capture's UDP source port, as rxe sent it. */
	for (int i = 0; i < nfr; i++)
		if (from_us(&fr[i]) && !is_mad(fr[i].ib)) {
			P.data_sport = fr[i].sport;
			break;
		}
	P.data_fd = bind_udp(P.our_ip, P.data_sport);
	if (P.data_fd < 0) {
		P.data_fd = P.fd;
		P.data_sport = P.port;
	}
}

/* uroce's last ACKs and any late packet: nothing but ACKs, and the ACKs
 * still owed must have come. */
static void drain(void)
{
	uint64_t t0 = now_ms();
	struct rx r;

	for (;;) {
		bool owing = false;

		for (int c = 0; c < P.nconn; c++)
			owing |= P.conn[c].owed_frame >= 0 &&
				 !covered(&P.conn[c], P.conn[c].owed);
		if (!next_pkt(&r, 200, nfr - 1)) {
			if (!owing || now_ms() - t0 > WAIT_MS)
				break;
			continue;
		}
		if (r.pkt.h.opcode == UR_OP_RC_ACKNOWLEDGE)
			take_ack(&r, nfr - 1);
		else if (!retransmission(&r) && r.pkt.h.dqpn != 1)
			fail(nfr - 1, "%s after the end",
			     ur_opcode_name(r.pkt.h.opcode));
	}
	for (int c = 0; c < P.nconn; c++)
		if (P.conn[c].owed_frame >= 0 &&
		    !covered(&P.conn[c], P.conn[c].owed))
			fail(P.conn[c].owed_frame, "no ACK for PSN %u",
			     P.conn[c].owed);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: rxe_peer CAPTURE active|passive OUR_IP UROCE_IP\n");
		return 2;
	}
	nfr = golden_frames(argv[1], fr, MAX_FRAMES);
	if (nfr <= 0) {
		fprintf(stderr, "rxe_peer: cannot read %s\n", argv[1]);
		return 2;
	}
	setup(argv[2], argv[3], argv[4]);
	for (int i = 0; i < nfr; i++) {
		if (done[i])
			continue;
		if (!from_us(&fr[i]))
			expect(i);
		else if (is_mad(fr[i].ib))
			send_mad(i);
		else
			send_data(i);
	}
	drain();
	printf("rxe_peer: %s side of %s: %d connection(s), %d packets sent, "
	       "%d of uroce's checked (%d extra ACKs, %d retransmissions, %d "
	       "RNR resends, %d crossing DREQs, %d DREPs not sent after one; "
	       "%d uroce hellos dropped unanswered)\n",
	       P.active ? "active" : "passive", argv[1], P.nconn, P.sent,
	       P.checked, P.extra_acks, P.dups, P.rnr, P.crossed,
	       P.drep_skipped, P.sr_hellos);
	for (int c = 0; c < P.nconn; c++)
		printf("  connection %d: uroce's Starting PSN %u, ours %u\n", c,
		       P.conn[c].their_spsn, P.conn[c].our_spsn);
	return 0;
}

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
 * other NAK fails. Environment: UROCE_PORT (the UDP port of both sides),
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

#include "cm_mad.h"
#include "golden.h"

#define MAX_FRAMES 512
#define WAIT_MS 5000
#define REQ_RETRY_MS 300 /* our REQ is resent until the listener is up */
#define RING_INFO_LEN 16 /* rping's struct rping_rdma_info: buf, rkey, size */

static struct golden_frame fr[MAX_FRAMES];
static int nfr;

static struct {
	bool active;                /* we play the REQ's sender */
	uint8_t our_ip[4], uroce_ip[4], cap_us[4];
	uint16_t port, data_sport;
	int fd, data_fd;
	uint32_t our_qpn_cap, their_qpn_cap, their_qpn;
	uint32_t our_comm, their_comm;
	uint32_t our_spsn, their_spsn_cap, their_spsn;
	uint64_t tid;               /* the connection's TID */
	uint64_t their_dreq_tid;
	uint32_t acked;             /* highest PSN of ours that uroce ACKed */
	bool any_acked;
	/* rping's buffer descriptors: the capture's and uroce's */
	struct { uint64_t va_cap, va; uint32_t rkey_cap, rkey; } key[8];
	int nkey;
	int checked, sent, extra_acks, dups, rnr;
	int req_frame;
	uint32_t next_their_req; /* next PSN expected of uroce's requests */
	bool their_req_started;
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
	uint8_t *g = __cm_blob(mad, b, &len);

	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	memcpy(g + 12, ip, 4);
}

/* Our MAD of frame @i, with this connection's fields. */
static void send_mad(int i)
{
	uint8_t ib[GOLDEN_IB_MAX], *m = mad_of(ib);
	uint16_t attr;

	memcpy(ib, fr[i].ib, fr[i].len);
	attr = __cm_mad_attr(m);
	switch (attr) {
	case UR_CM_ATTR_REQ: {
		struct cma_hdr h;
		size_t len;

		set_gid(m, CMB_P_LOCAL_GID, P.our_ip);
		set_gid(m, CMB_P_REMOTE_GID, P.uroce_ip);
		if (__cma_hdr_get(__cm_blob(m, CMB_PDATA, &len), &h))
			fail(i, "capture REQ without an rdma_cm header");
		memcpy(h.src, P.our_ip, 4);
		memcpy(h.dst, P.uroce_ip, 4);
		__cma_hdr_put(__cm_blob(m, CMB_PDATA, &len), &h);
		break;
	}
	case UR_CM_ATTR_REP:
	case UR_CM_ATTR_RTU:
	case UR_CM_ATTR_DREP:
		__cm_set(m, CMF_REMOTE_COMM_ID, P.their_comm);
		break;
	case UR_CM_ATTR_DREQ:
		__cm_set(m, CMF_REMOTE_COMM_ID, P.their_comm);
		__cm_set(m, CMF_REMOTE_QPN, P.their_qpn);
		break;
	default:
		fail(i, "capture MAD %s not replayed", __cm_attr_name(attr));
	}
	if (attr != UR_CM_ATTR_REQ)
		ur_put64(m + 8, attr == UR_CM_ATTR_DREP ? P.their_dreq_tid
							  : P.tid);
	send_ib(P.fd, P.port, ib, fr[i].len);
}

/* A PSN of the capture in this run. Our requests (and uroce's responses
 * to them) count from uroce's Starting PSN, uroce's requests from ours,
 * which is the capture's. */
static uint32_t map_psn(uint32_t psn, bool our_stream)
{
	return our_stream ? ur_psn_add(psn, (P.their_spsn - P.their_spsn_cap) &
						   UR_PSN_MASK)
			  : psn;
}

static bool map_key(uint64_t va_cap, uint32_t rkey_cap, uint64_t *va,
		    uint32_t *rkey)
{
	for (int k = 0; k < P.nkey; k++)
		if (P.key[k].rkey_cap == rkey_cap &&
		    va_cap >= P.key[k].va_cap) {
			*va = P.key[k].va + (va_cap - P.key[k].va_cap);
			*rkey = P.key[k].rkey;
			return true;
		}
	return false;
}

/* Our data packet of frame @i: uroce's QPN, the mapped PSN and keys. */
static void send_data(int i, uint8_t *ib, size_t *len)
{
	struct ur_pkt pkt;
	const struct ur_opcode_info *info;

	memcpy(ib, fr[i].ib, fr[i].len);
	*len = fr[i].len;
	if (ur_pkt_decode(ib, *len, &pkt) != UR_DEC_OK)
		fail(i, "capture packet does not decode");
	info = pkt.info;
	ur_put24(ib + 5, P.their_qpn);
	ur_put24(ib + 9, map_psn(pkt.h.psn, pkt.mask & UR_OPF_REQ));
	if (pkt.mask & UR_HDR_RETH) {
		uint64_t va;
		uint32_t rkey;
		uint8_t *reth = ib + info->off[UR_ETH_RETH];

		if (!map_key(pkt.reth.va, pkt.reth.rkey, &va, &rkey))
			fail(i, "no rkey of uroce's program for capture rkey 0x%x",
			     pkt.reth.rkey);
		ur_put64(reth, va);
		ur_put32(reth + 8, rkey);
	}
	send_ib(P.data_fd, P.data_sport, ib, *len);
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
	return true;
}

/* An ACK or NAK from uroce for our requests. Returns true if it is an ACK
 * (noted); an RNR NAK resends our packet at its PSN. */
static bool take_ack(const struct rx *r, int frame)
{
	const struct ur_pkt *k = &r->pkt;
	enum ur_aeth_kind kind = ur_aeth_kind(k->aeth.syndrome);

	if (k->h.dqpn != P.our_qpn_cap)
		fail(frame, "ACK to QPN 0x%x, ours is 0x%x", k->h.dqpn,
		     P.our_qpn_cap);
	if (kind == UR_AETH_ACK) {
		if (!P.any_acked || ur_psn_cmp(k->h.psn, P.acked) > 0)
			P.acked = k->h.psn;
		P.any_acked = true;
		return true;
	}
	if (kind == UR_AETH_RNR_NAK) {
		/* Resend ours at that PSN after the RNR delay. */
		for (int i = 0; i < nfr; i++) {
			uint8_t ib[GOLDEN_IB_MAX];
			size_t len;

			if (!from_us(&fr[i]) || is_mad(fr[i].ib) ||
			    !(ur_opcode_info(fr[i].ib[0])->mask & UR_OPF_REQ) ||
			    map_psn(ur_bth_psn(fr[i].ib), true) != k->h.psn)
				continue;
			usleep(ur_rnr_timer_us(ur_aeth_value(k->aeth.syndrome)));
			send_data(i, ib, &len);
			P.rnr++;
			return false;
		}
		fail(frame, "RNR NAK for PSN %u that we never sent", k->h.psn);
	}
	fail(frame, "NAK syndrome 0x%02x (PSN %u) from uroce; expected PSN "
	     "%u onwards", k->aeth.syndrome, k->h.psn,
	     map_psn(P.their_spsn_cap, true));
	return false;
}

/* Learn uroce's connection fields from its REQ or REP. */
static void learn(const uint8_t *m, int i)
{
	P.their_comm = (uint32_t)__cm_get(m, CMF_LOCAL_COMM_ID);
	P.their_qpn = (uint32_t)__cm_get(m, CMF_LOCAL_QPN);
	P.their_spsn = (uint32_t)__cm_get(m, CMF_STARTING_PSN);
	if (!P.their_comm || !P.their_qpn)
		fail(i, "uroce's %s has no comm ID or QPN",
		     __cm_attr_name(__cm_mad_attr(m)));
}

static void check_mad(int i, const struct rx *r)
{
	const uint8_t *want = mad_of(fr[i].ib), *m = r->pkt.payload;
	uint16_t attr = __cm_mad_attr(want);

	if (r->pkt.h.dqpn != 1 || r->pkt.payload_len != UR_MAD_LEN)
		fail(i, "expected a MAD (%s), got %s to QPN 0x%x",
		     __cm_attr_name(attr), ur_opcode_name(r->pkt.h.opcode),
		     r->pkt.h.dqpn);
	if (__cm_mad_attr(m) != attr)
		fail(i, "expected %s, got %s", __cm_attr_name(attr),
		     __cm_attr_name(__cm_mad_attr(m)));
	switch (attr) {
	case UR_CM_ATTR_REQ:
		learn(m, i);
		P.tid = __cm_mad_tid(m);
		break;
	case UR_CM_ATTR_REP:
		if (__cm_get(m, CMF_REMOTE_COMM_ID) != P.our_comm)
			fail(i, "REP for comm ID 0x%llx",
			     (unsigned long long)__cm_get(m, CMF_REMOTE_COMM_ID));
		learn(m, i);
		break;
	case UR_CM_ATTR_DREQ:
		if (__cm_get(m, CMF_REMOTE_QPN) != P.our_qpn_cap)
			fail(i, "DREQ names QPN 0x%llx, ours is 0x%x",
			     (unsigned long long)__cm_get(m, CMF_REMOTE_QPN),
			     P.our_qpn_cap);
		P.their_dreq_tid = __cm_mad_tid(m);
		/* fall through */
	default:
		if (__cm_get(m, CMF_REMOTE_COMM_ID) != P.our_comm ||
		    __cm_get(m, CMF_LOCAL_COMM_ID) != P.their_comm)
			fail(i, "%s with comm IDs 0x%llx/0x%llx",
			     __cm_attr_name(attr),
			     (unsigned long long)__cm_get(m, CMF_LOCAL_COMM_ID),
			     (unsigned long long)__cm_get(m, CMF_REMOTE_COMM_ID));
		break;
	}
}

/* uroce's data packet @r against capture frame @i. */
static void check_data(int i, const struct rx *r)
{
	struct ur_pkt want;
	const struct ur_pkt *got = &r->pkt;
	uint32_t psn;

	ur_pkt_decode(fr[i].ib, fr[i].len, &want);
	psn = map_psn(want.h.psn, !(want.mask & UR_OPF_REQ));
	if (got->h.opcode != want.h.opcode)
		fail(i, "expected %s, got %s (PSN %u)",
		     ur_opcode_name(want.h.opcode),
		     ur_opcode_name(got->h.opcode), got->h.psn);
	if (got->h.dqpn != P.our_qpn_cap)
		fail(i, "%s to QPN 0x%x, ours is 0x%x",
		     ur_opcode_name(got->h.opcode), got->h.dqpn, P.our_qpn_cap);
	if (got->h.psn != psn)
		fail(i, "%s with PSN %u, expected %u (our Starting PSN %u + %d)",
		     ur_opcode_name(got->h.opcode), got->h.psn, psn,
		     P.our_spsn, ur_psn_diff(psn, P.our_spsn));
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
	    !P.active) {
		/* uroce's rping client names its buffer: map the capture's
		 * address and rkey to it. The size must agree. */
		if (ur_get32(got->payload + 12) != ur_get32(want.payload + 12))
			fail(i, "buffer size %u, the capture's %u",
			     ur_get32(got->payload + 12),
			     ur_get32(want.payload + 12));
		if (P.nkey < 8) {
			P.key[P.nkey].va_cap = ur_get64(want.payload);
			P.key[P.nkey].rkey_cap = ur_get32(want.payload + 8);
			P.key[P.nkey].va = ur_get64(got->payload);
			P.key[P.nkey].rkey = ur_get32(got->payload + 8);
			P.nkey++;
		}
	} else if ((want.mask & (UR_OPF_WRITE | UR_OPF_READ_RESP)) &&
		   memcmp(got->payload, want.payload, want.payload_len)) {
		/* rping's data: the same pattern on every host. */
		fail(i, "%s payload differs from the capture's",
		     ur_opcode_name(got->h.opcode));
	}
	if (want.mask & UR_OPF_REQ) {
		if (P.their_req_started &&
		    ur_psn_cmp(got->h.psn, P.next_their_req) < 0)
			fail(i, "request PSN went back");
		P.next_their_req = ur_psn_add(got->h.psn, 1);
		P.their_req_started = true;
	}
}

/* Is @r a copy of a request of uroce's that we matched already? */
static bool retransmission(const struct rx *r)
{
	return r->pkt.h.dqpn != 1 && (r->pkt.mask & UR_OPF_REQ) &&
	       P.their_req_started &&
	       ur_psn_cmp(r->pkt.h.psn, P.next_their_req) < 0;
}

/* A packet that came while we waited for an ACK, kept for the next wait. */
static struct rx pending;
static bool have_pending;
static uint32_t owed; /* highest PSN of ours whose ACK is still owed */
static int owed_frame = -1;

static bool next_pkt(struct rx *r, int ms, int frame)
{
	if (have_pending) {
		*r = pending;
		have_pending = false;
		return true;
	}
	return recv_pkt(r, ms, frame);
}

static bool covered(uint32_t psn)
{
	return P.any_acked && ur_psn_cmp(P.acked, psn) >= 0;
}

/* Wait for the packet of capture frame @i from uroce. An ACK may come
 * later than rxe sent it (coalesced with a later one): if uroce sends
 * something else first, the ACK is owed until the end. */
static void expect(int i)
{
	const uint8_t *ib = fr[i].ib;
	bool ack = !is_mad(ib) && ib[0] == UR_OP_RC_ACKNOWLEDGE;
	uint32_t want = ack ? map_psn(ur_bth_psn(ib), true) : 0;
	uint64_t t0 = now_ms(), last_req = t0;
	struct rx r;

	if (ack && covered(want))
		return;
	for (;;) {
		uint64_t now = now_ms();

		if (now - t0 > WAIT_MS)
			fail(i, "nothing from uroce for %d ms (waiting for %s)",
			     WAIT_MS, is_mad(ib) ? __cm_attr_name(__cm_mad_attr(
							    mad_of(fr[i].ib)))
						: ur_opcode_name(ib[0]));
		/* Until the REP, our REQ is resent: the listener may not be
		 * up yet (it answers REJ "invalid service ID" meanwhile). */
		if (P.active && !P.their_comm && now - last_req > REQ_RETRY_MS) {
			send_mad(P.req_frame);
			last_req = now;
		}
		if (!next_pkt(&r, 50, i))
			continue;
		if (r.pkt.h.dqpn == 1 &&
		    __cm_mad_attr(r.pkt.payload) == UR_CM_ATTR_REJ &&
		    P.active && !P.their_comm &&
		    __cm_get(r.pkt.payload, CMF_REJ_REASON) ==
			    CM_REJ_INVALID_SERVICE_ID)
			continue; /* no listener yet */
		if (r.pkt.h.opcode == UR_OP_RC_ACKNOWLEDGE) {
			if (take_ack(&r, i) && ack && covered(want))
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
			owed = want;
			owed_frame = i;
			return;
		}
		if (is_mad(ib))
			check_mad(i, &r);
		else
			check_data(i, &r);
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

static void setup(const char *role, const char *ours, const char *theirs)
{
	const char *port = getenv("UROCE_PORT");
	int req = -1, rep = -1;

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
	for (int i = 0; i < nfr; i++) {
		if (!is_mad(fr[i].ib))
			continue;
		if (__cm_mad_attr(mad_of(fr[i].ib)) == UR_CM_ATTR_REQ && req < 0)
			req = i;
		if (__cm_mad_attr(mad_of(fr[i].ib)) == UR_CM_ATTR_REP && rep < 0)
			rep = i;
	}
	if (req < 0 || rep < 0) {
		fprintf(stderr, "rxe_peer: the capture has no REQ and REP\n");
		exit(2);
	}
	memcpy(P.cap_us, P.active ? fr[req].src : fr[rep].src, 4);
	P.req_frame = req;
	{
		const uint8_t *ours_m = mad_of(fr[P.active ? req : rep].ib);
		const uint8_t *theirs_m = mad_of(fr[P.active ? rep : req].ib);

		P.our_comm = (uint32_t)__cm_get(ours_m, CMF_LOCAL_COMM_ID);
		P.our_qpn_cap = (uint32_t)__cm_get(ours_m, CMF_LOCAL_QPN);
		P.our_spsn = (uint32_t)__cm_get(ours_m, CMF_STARTING_PSN);
		P.their_qpn_cap = (uint32_t)__cm_get(theirs_m, CMF_LOCAL_QPN);
		P.their_spsn_cap = (uint32_t)__cm_get(theirs_m, CMF_STARTING_PSN);
		if (P.active)
			P.tid = __cm_mad_tid(ours_m);
	}
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
		uint8_t ib[GOLDEN_IB_MAX];
		size_t len;

		if (!from_us(&fr[i]))
			expect(i);
		else if (is_mad(fr[i].ib))
			send_mad(i);
		else
			send_data(i, ib, &len);
	}
	/* uroce's last ACKs and any late packet: nothing but ACKs, and the
	 * ACKs still owed must have come. */
	{
		struct rx r;
		uint64_t t0 = now_ms();

		for (;;) {
			if (!next_pkt(&r, 200, nfr - 1)) {
				if (owed_frame < 0 || covered(owed) ||
				    now_ms() - t0 > WAIT_MS)
					break;
				continue;
			}
			if (r.pkt.h.opcode == UR_OP_RC_ACKNOWLEDGE)
				take_ack(&r, nfr - 1);
			else if (!retransmission(&r) && r.pkt.h.dqpn != 1)
				fail(nfr - 1, "%s after the end",
				     ur_opcode_name(r.pkt.h.opcode));
		}
		if (owed_frame >= 0 && !covered(owed))
			fail(owed_frame, "no ACK for PSN %u", owed);
	}
	printf("rxe_peer: %s side of %s: %d packets sent, %d of uroce's "
	       "checked (%d extra ACKs, %d retransmissions, %d RNR resends); "
	       "uroce's Starting PSN %u, ours %u\n",
	       P.active ? "active" : "passive", argv[1], P.sent, P.checked,
	       P.extra_acks, P.dups, P.rnr, P.their_spsn, P.our_spsn);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * QP1, the General Services Interface (IBTA vol. 1 13.5): the endpoint the
 * connection manager's MADs travel through. It is not a transport QP: a
 * MAD is a UD SEND_ONLY with Q_Key 0x80010000 from and to QP 1, so the
 * engine sends it directly and hands received ones to a handler that the
 * layer above registers (src/rdmacm).
 *
 * QPN 1 carries no slot, so a MAD that the kernel gave to the wrong process
 * on a shared address is routed by the handler's answer: consumed, forward
 * to one slot (the CM puts its slot in its comm IDs), or forward to every
 * sibling (a REQ for a service another process listens on).
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>

#include "ur_crypt.h"
#include "ur_io_priv.h"

/* This thread runs the handler: it drains the socket, rx_lock held. */
#define UR_GSI_FLUSH_TRIES 20

void ur_engine_set_gsi_handler(struct ur_engine *e, ur_gsi_rx_fn fn, void *arg)
{
	pthread_mutex_lock(&e->rx_lock); /* not while a MAD is being handled */
	e->gsi_arg = arg;
	e->gsi_fn = fn;
	pthread_mutex_unlock(&e->rx_lock);
}

uint8_t ur_engine_slot(const struct ur_engine *e)
{
	return e->slot;
}

/*
 * A uroce negotiation MAD (docs/wire.md "Encryption negotiation",
 * "Selective repeat negotiation"): to the QP it names, under the QP's
 * lock, as a packet to that QP would go; to the sibling whose slot the
 * QPN carries if not ours.
 */
static void crypt_hello_rx(struct ur_engine *e, const uint8_t *buf,
			   size_t len, const uint8_t *mad, size_t mlen,
			   struct ur_rxinfo *ri, bool from_sibling)
{
	struct ur_crypt_hello h;
	struct ur_sr_hello sh;
	struct ur_qp *qp;
	uint8_t slot;
	bool sr = false, cc = false;

	if (ur_crypt_hello_parse(mad, mlen, &h)) {
		if (!ur_sr_hello_parse(mad, mlen, &sh)) {
			sr = true;
		} else if (!ur_cc_hello_parse(mad, mlen, &sh)) {
			cc = true;
		} else {
			e->dev.cnt.rx_drop_malformed++;
			return;
		}
		h.dst_qpn = sh.dst_qpn;
	}
	slot = (uint8_t)(h.dst_qpn >> UR_IO_SLOT_SHIFT);
	if (slot != e->slot) {
		if (from_sibling)
			e->dev.cnt.rx_drop_no_qp++;
		else
			ur__fwd_to(e, slot, buf, len, ri, false);
		return;
	}
	pthread_rwlock_rdlock(&e->qp_lock);
	qp = ur__map_get(&e->qps, h.dst_qpn);
	if (qp && (qp->type == UR_QPT_RC || qp->type == UR_QPT_UC)) {
		ur_engine_qp_lock(qp);
		if (sr)
			(void)ur_qp_sr_hello_rx(qp, mad, mlen, ri, ur_now());
		else if (cc)
			(void)ur_qp_cc_hello_rx(qp, mad, mlen, ri, ur_now());
		else
			(void)ur_qp_crypt_hello_rx(qp, mad, mlen, ri, ur_now());
		ur_engine_qp_unlock(qp);
		ur_engine_qp_kick(e, qp); /* its timer moved, it may send */
	} else {
		e->dev.cnt.rx_drop_no_qp++;
	}
	pthread_rwlock_unlock(&e->qp_lock);
}

/* Called from ur__engine_deliver for DestQP 1 (rx_lock held). */
void ur__gsi_rx(struct ur_engine *e, const uint8_t *buf, size_t len,
		 struct ur_rxinfo *ri, bool from_sibling)
{
	struct ur_pkt pkt;
	int to;

	if (ur_pkt_decode(buf, len, &pkt) != UR_DEC_OK ||
	    pkt.h.opcode != UR_OP_UD_SEND_ONLY || pkt.payload_len < UR_MAD_LEN) {
		e->dev.cnt.rx_drop_malformed++;
		return;
	}
	if (pkt.deth.qkey != UR_GSI_QKEY) {
		e->dev.cnt.rx_drop_qkey++;
		return;
	}
	e->dev.cnt.rx_packets++;
	e->dev.cnt.rx_bytes += len;
	ur__thread()->in_gsi = true;
	if (pkt.payload[1] == UR_MGMT_CLASS_UROCE) {
		crypt_hello_rx(e, buf, len, pkt.payload, pkt.payload_len, ri,
			       from_sibling);
		ur__thread()->in_gsi = false;
		return;
	}
	to = e->gsi_fn ? e->gsi_fn(e->gsi_arg, pkt.payload, pkt.payload_len,
				   ri, from_sibling)
		       : UR_GSI_BROADCAST;
	ur__thread()->in_gsi = false;
	if (from_sibling || to == UR_GSI_CONSUMED)
		return; /* a forwarded MAD is never forwarded again */
	if (to == UR_GSI_BROADCAST)
		ur__fwd_all(e, buf, len, ri);
	else if (to > 0 && to < 256 && to != e->slot)
		ur__fwd_to(e, (uint8_t)to, buf, len, ri, false);
	else
		e->dev.cnt.rx_drop_no_qp++;
}

/*
 * ACKs that a polling thread deferred leave before a MAD: a DREQ must not
 * overtake the ACK of the peer's last SEND. Never by waiting for rx_lock:
 * the CM sends under its own lock, and the thread that holds rx_lock to
 * drain the socket takes the CM's lock to hand it a MAD (or is this very
 * thread, answering a MAD from the handler). A thread that drains sent
 * what was deferred before it started (drain_all, ur_engine_poll), so a
 * few tries to catch one that has the lock but not yet flushed suffice.
 */
static void flush_before_mad(struct ur_engine *e)
{
	if (ur__thread()->in_gsi) {
		/* our batch: what we deferred so far */
		ur__tx_flush(ur__thread()->tx);
		return;
	}
	for (int i = 0; ur__tx_pending(e->poll_tx); i++) {
		if (!pthread_mutex_trylock(&e->rx_lock)) {
			ur__tx_flush(e->poll_tx);
			pthread_mutex_unlock(&e->rx_lock);
			return;
		}
		if (i == UR_GSI_FLUSH_TRIES)
			return;
		sched_yield();
	}
}

/*
 * A bonded port's MAD leaves by every interface that is up and whose
 * last send did not fail (by all if none is): the one its source port
 * would pick may be the rail that drops everything, and before any
 * traffic nothing tells which one does (integration_bond, a rail dead
 * at connect time: the REQ, its resends and so the connection failed
 * when it was the one). The CM takes the copies as it takes its own
 * resends (12.9.6: a REQ answered from the state it left, a REP by a
 * fresh RTU); the hellos are answered once each. 0 if one left.
 */
static int bond_send(struct ur_engine *e, const uint8_t *buf, size_t n,
		     const struct sockaddr_storage *ss, socklen_t slen)
{
	unsigned int ok = 0;
	int ret = -ENETDOWN;

	for (unsigned int i = 0; i < e->bond_n; i++)
		if (ur__bond_if_ok(e, i))
			ok |= 1u << i;
	if (!ok)
		ok = (1u << e->bond_n) - 1;
	for (unsigned int i = 0; i < e->bond_n; i++) {
		int fd, err = 0;

		if (!(ok & 1u << i))
			continue;
		pthread_mutex_lock(&e->gsi_lock);
		if (e->gsi_bfd[i] < 0)
			e->gsi_bfd[i] = ur__udp_open_tx_if(e, e->gsi_sport, i);
		fd = e->gsi_bfd[i];
		pthread_mutex_unlock(&e->gsi_lock);
		if (fd < 0) {
			ret = fd;
			continue;
		}
		if (sendto(fd, buf, n, 0, (const struct sockaddr *)ss, slen) < 0)
			err = errno;
		ur__bond_if_sent(e, i, err);
		if (!err)
			ret = 0;
		else if (ret)
			ret = -err;
	}
	return ret;
}

/**
 * ur_engine_gsi_send() - send one MAD from QP1 to QP1 of @dst.
 * @dst: the peer's address (dst, v6); source, ports and IP fields are ours
 * @slot: the sibling the MAD is for when @dst is our own address (0: unknown)
 *
 * As Linux rxe: UDP source port ur_rocev2_sport(1), AckReq set, a PSN
 * counting the MADs this engine sent, TTL 64, DF. To a sibling on our own
 * address the MAD goes straight to its unix socket: every MAD between
 * processes of one address has the same UDP 4-tuple, so the kernel queues
 * them all at one process, and one that exits drops what it had queued.
 * Return: 0 or a negative errno (the MAD is lost; the CM retries).
 */
int ur_engine_gsi_send(struct ur_engine *e, const struct ur_ipudp *dst,
		       uint8_t slot, const void *mad, size_t len)
{
	uint8_t buf[UR_BTH_LEN + UR_DETH_LEN + UR_MAD_LEN + UR_ICRC_LEN];
	struct ur_pkt pkt = {
		.h = { .opcode = UR_OP_UD_SEND_ONLY, .pkey = UR_DEFAULT_PKEY,
		       .dqpn = 1, .ackreq = true },
		.deth = { .qkey = UR_GSI_QKEY, .sqpn = 1 },
	};
	struct ur_ipudp path = e->local;
	struct sockaddr_storage ss = { 0 };
	socklen_t slen;
	int n, fd;

	if (len != UR_MAD_LEN || dst->v6 != e->local.v6)
		return -EINVAL;
	flush_before_mad(e);
	pthread_mutex_lock(&e->gsi_lock);
	if (e->gsi_fd < 0) {
		uint16_t p = ur_rocev2_sport(1);

		/* SO_REUSEPORT: every process on the address sends from
		 * the same port, as the one QP1 of a NIC would. */
		e->gsi_fd = ur__udp_open_tx_plain(e, p);
		e->gsi_sport = p;
	}
	fd = e->gsi_fd;
	pkt.h.psn = e->gsi_psn;
	e->gsi_psn = (e->gsi_psn + 1) & 0xffffff;
	pthread_mutex_unlock(&e->gsi_lock);
	if (fd < 0)
		return fd;
	n = ur_pkt_encode(buf, sizeof(buf), &pkt, mad, UR_MAD_LEN);
	if (n < 0)
		return n;
	memcpy(path.dst, dst->dst, sizeof(path.dst));
	path.sport = e->gsi_sport;
	path.dport = e->cfg.port;
	path.ttl = 64;
	path.tos = 0;
	path.ip_id = 0;
	path.ip_frag = 0x4000;
	ur_icrc_store(buf + n - UR_ICRC_LEN,
		      ur_icrc(&path, buf, (size_t)n - UR_ICRC_LEN));
	if (slot && slot != e->slot &&
	    !memcmp(path.dst, path.src, path.v6 ? 16 : 4)) {
		struct ur_rxinfo ri = { .path = path, .icrc_checked = true };

		if (!ur__fwd_once(e, slot, buf, (size_t)n, &ri))
			goto sent;
	}
	if (path.v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(e->cfg.port);
		memcpy(&s6->sin6_addr, path.dst, 16);
		slen = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(e->cfg.port);
		memcpy(&s4->sin_addr, path.dst, 4);
		slen = sizeof(*s4);
	}
	if (e->bond_n) {
		int ret = bond_send(e, buf, (size_t)n, &ss, slen);

		if (ret)
			return ret;
	} else if (sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&ss,
			  slen) < 0) {
		return -errno;
	}
sent:
	e->dev.cnt.tx_packets++;
	e->dev.cnt.tx_bytes += (uint64_t)n;
	return 0;
}

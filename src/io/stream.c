// SPDX-License-Identifier: MIT
/*
 * The engine's TCP: the byte stream of an iWARP QP (RFC 5044 MPA over
 * TCP). The socket comes connected (rdma_cm makes it) with the QP's
 * connection started (ur_iw_start); from then on a thread of the
 * stream's own plays the NIC's part for it: it reads what TCP delivers
 * into the transport (stream_rx), writes what the transport holds
 * (stream_tx_peek/stream_tx_done), runs the MPA timeout and says when the
 * connection comes up, fails or goes down. An application thread that
 * posts writes the stream itself (ur_engine_qp_post_unlock), as it sends
 * RoCE packets itself; only what TCP cannot take at once waits for the
 * thread (POLLOUT). TCP is the reliability: no timers besides MPA's.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ur_io_priv.h"
#include "ur_iw.h"
#include "ur_log.h"

#define STREAM_RX_BUF (256u * 1024u)
#define STREAM_RX_TURN 16 /* reads per wake-up before writes get a turn */

struct ur_stream {
	struct ur_stream *next; /* e->streams (e->stream_lock) */
	struct ur_engine *e;
	struct ur_qp *qp;
	int fd, ev_fd;
	pthread_t th;
	atomic_bool stop;
	atomic_bool want_out; /* TCP's buffer was full: wait for POLLOUT */
	atomic_bool live;     /* RTS and not ended: pollers may read it */
	atomic_bool eof;      /* read side ended (FIN, RST, error) */
	bool wr_shut;
	bool up, told_end;
	ur_stream_fn fn;
	void *arg;
	uint8_t *buf;
};

/* Write what the connection holds until TCP takes no more (QP lock). */
static void stream_flush(struct ur_stream *s, uint64_t now)
{
	const struct ur_proto_ops *ops = s->qp->proto;

	for (;;) {
		const uint8_t *p;
		size_t n = ops->stream_tx_peek(s->qp, &p);
		ssize_t w;

		if (!n || s->wr_shut) {
			atomic_store(&s->want_out, false);
			return;
		}
		w = send(s->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0) {
			ops->stream_tx_done(s->qp, (size_t)w, now);
			continue;
		}
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			atomic_store(&s->want_out, true);
			return;
		}
		if (w < 0 && errno == EINTR)
			continue;
		/* The peer is gone: what is left can never leave. */
		ur_iw_close(s->qp->proto_conn, now);
		s->wr_shut = true;
		atomic_store(&s->want_out, false);
		return;
	}
}

void ur__stream_kick(struct ur_stream *s, uint64_t now)
{
	stream_flush(s, now);
	if (atomic_load(&s->want_out)) {
		uint64_t one = 1;

		if (write(s->ev_fd, &one, sizeof(one)) < 0)
			(void)0;
	}
}

/* Read what TCP holds into the connection (QP lock held): true when the
 * stream ended, which the stream's thread then reports. */
static bool stream_read(struct ur_stream *s, uint64_t now)
{
	for (int i = 0; i < STREAM_RX_TURN; i++) {
		ssize_t r = recv(s->fd, s->buf, STREAM_RX_BUF, MSG_DONTWAIT);

		if (r > 0) {
			s->qp->proto->stream_rx(s->qp, s->buf, (size_t)r, now);
			if ((size_t)r < STREAM_RX_BUF)
				return false;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return false;
		s->eof = true; /* FIN (0) or RST */
		ur_iw_close(s->qp->proto_conn, now);
		return true;
	}
	return false;
}

/* What happened during one locked step, told after the unlock. */
struct stream_news {
	enum ur_stream_ev ev;
	int err;
	uint8_t pd[UR_MPA_PD_MAX];
	size_t pd_len;
	bool any;
};

static void stream_step(struct ur_stream *s, short revents,
			struct stream_news *n)
{
	struct ur_iw_conn *c = s->qp->proto_conn;
	uint64_t now = ur_now();
	uint32_t st;

	if (!s->eof && (revents & (POLLIN | POLLHUP | POLLERR)))
		stream_read(s, now);
	if (ur_iw_deadline(c) <= now)
		ur_iw_timer(c, now);
	stream_flush(s, now);
	if (ur_iw_want_close(c) && !s->wr_shut &&
	    !s->qp->proto->stream_tx_peek(s->qp, &(const uint8_t *){NULL})) {
		/* Terminate, reject or ERR: the last bytes are out, FIN. */
		shutdown(s->fd, SHUT_WR);
		s->wr_shut = true;
	}
	st = ur_iw_state(c);
	if (!s->up && !s->told_end && st == UR_IWS_RTS) {
		const struct ur_mpa_rr *rr = ur_iw_peer_rr(c);

		s->up = true;
		atomic_store(&s->live, true);
		n->ev = UR_STREAM_UP;
		n->any = true;
		if (rr && rr->reply && rr->pd_len) { /* the accept's data */
			n->pd_len = rr->pd_len < sizeof(n->pd) ? rr->pd_len
							       : sizeof(n->pd);
			memcpy(n->pd, rr->pd, n->pd_len);
		}
	} else if (!s->up && !s->told_end &&
		   (st == UR_IWS_CLOSED || st == UR_IWS_ERROR)) {
		const struct ur_mpa_rr *rr = ur_iw_peer_rr(c);

		s->told_end = true;
		n->ev = UR_STREAM_FAILED;
		n->err = ur_iw_error(c);
		if (rr && rr->reply && (rr->flags & UR_MPA_F_REJECT) &&
		    rr->pd_len) {
			n->pd_len = rr->pd_len < sizeof(n->pd) ? rr->pd_len
							       : sizeof(n->pd);
			memcpy(n->pd, rr->pd, n->pd_len);
			n->err = -ECONNREFUSED;
		}
		n->any = true;
	} else if (s->up && !s->told_end && s->eof) {
		s->told_end = true;
		atomic_store(&s->live, false);
		n->ev = UR_STREAM_DOWN;
		n->err = ur_iw_error(c);
		n->any = true;
	}
}

static void *stream_main(void *arg)
{
	struct ur_stream *s = arg;
	struct stream_news *n = malloc(sizeof(*n));

	bool first = true; /* a step before any wait: an accept's RTS */

	if (!n)
		return NULL;
	while (!atomic_load(&s->stop)) {
		struct pollfd p[2] = {
			{ .fd = s->fd }, { .fd = s->ev_fd, .events = POLLIN },
		};
		uint64_t dl, now;
		int tmo = -1;

		if (!s->eof)
			p[0].events |= POLLIN;
		if (atomic_load(&s->want_out))
			p[0].events |= POLLOUT;
		if (!p[0].events)
			p[0].fd = -1; /* ended: wait for the QP's destruction */
		ur_engine_qp_lock(s->qp);
		dl = ur_iw_deadline(s->qp->proto_conn);
		ur_engine_qp_unlock(s->qp);
		now = ur_now();
		if (dl != UINT64_MAX)
			tmo = dl > now ? (int)((dl - now) / 1000000u + 1) : 0;
		if (first)
			p[0].revents = p[1].revents = 0;
		else if (poll(p, 2, tmo) < 0 && errno != EINTR)
			break;
		first = false;
		if (p[1].revents & POLLIN) {
			uint64_t v;

			if (read(s->ev_fd, &v, sizeof(v)) < 0)
				(void)0;
		}
		if (atomic_load(&s->stop))
			break;
		memset(n, 0, offsetof(struct stream_news, pd));
		n->pd_len = 0;
		n->any = false;
		ur_engine_qp_lock(s->qp);
		stream_step(s, p[0].revents, n);
		ur_engine_qp_unlock(s->qp);
		if (n->any && s->fn)
			s->fn(s->arg, n->ev, n->err, n->pd, n->pd_len);
	}
	free(n);
	return NULL;
}

void ur__stream_poll(struct ur_engine *e, const struct ur_cq *cq)
{
	uint64_t now = ur_now();

	if (pthread_mutex_trylock(&e->stream_lock))
		return;
	for (struct ur_stream *s = e->streams; s; s = s->next) {
		bool ended;

		if ((s->qp->recv_cq != cq && s->qp->send_cq != cq) ||
		    !atomic_load(&s->live) || !ur__qp_trylock(s->qp))
			continue;
		ended = !s->eof && stream_read(s, now);
		stream_flush(s, now);
		ur_engine_qp_unlock(s->qp);
		if (ended || atomic_load(&s->want_out)) {
			uint64_t one = 1; /* the thread reports, or waits */

			if (write(s->ev_fd, &one, sizeof(one)) < 0)
				(void)0;
		}
	}
	pthread_mutex_unlock(&e->stream_lock);
}

int ur_engine_stream_attach(struct ur_engine *e, struct ur_qp *qp, int fd,
			    ur_stream_fn fn, void *arg)
{
	struct ur_eqp *q = qp->io_priv;
	struct ur_stream *s;
	int one = 1;

	if (!q || !qp->proto_conn || q->stream)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->buf = malloc(STREAM_RX_BUF);
	s->ev_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!s->buf || s->ev_fd < 0) {
		if (s->ev_fd >= 0)
			close(s->ev_fd);
		free(s->buf);
		free(s);
		return -ENOMEM;
	}
	/* FPDUs leave as they are framed: no Nagle wait (siw sets it too). */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	s->e = e;
	s->qp = qp;
	s->fd = fd;
	s->fn = fn;
	s->arg = arg;
	ur_engine_qp_lock(qp);
	q->stream = s;
	stream_flush(s, ur_now()); /* the Request or Reply */
	ur_engine_qp_unlock(qp);
	if (pthread_create(&s->th, NULL, stream_main, s)) {
		ur_engine_qp_lock(qp);
		q->stream = NULL;
		ur_engine_qp_unlock(qp);
		close(s->ev_fd);
		free(s->buf);
		free(s);
		return -EAGAIN;
	}
	pthread_mutex_lock(&e->stream_lock);
	s->next = e->streams;
	e->streams = s;
	atomic_fetch_add(&e->nstreams, 1);
	pthread_mutex_unlock(&e->stream_lock);
	return 0;
}

void ur_engine_stream_shutdown(struct ur_qp *qp)
{
	struct ur_eqp *q = qp->io_priv;
	uint64_t one = 1;

	if (!q || !q->stream)
		return;
	ur_engine_qp_lock(qp);
	ur_iw_close(qp->proto_conn, ur_now()); /* the WQEs flush */
	stream_flush(q->stream, ur_now());
	if (!q->stream->wr_shut) {
		shutdown(q->stream->fd, SHUT_WR);
		q->stream->wr_shut = true;
	}
	ur_engine_qp_unlock(qp);
	if (write(q->stream->ev_fd, &one, sizeof(one)) < 0)
		(void)0;
}

/* The QP goes (ur_engine_qp_del, QP lock not held): stop the thread and
 * close the socket (RST if bytes are unread, as a closed socket does). */
void ur__stream_free(struct ur_stream *s)
{
	uint64_t one = 1;

	if (!s)
		return;
	pthread_mutex_lock(&s->e->stream_lock); /* no poller uses it after */
	for (struct ur_stream **pp = &s->e->streams; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			atomic_fetch_sub(&s->e->nstreams, 1);
			break;
		}
	pthread_mutex_unlock(&s->e->stream_lock);
	atomic_store(&s->stop, true);
	if (write(s->ev_fd, &one, sizeof(one)) < 0)
		(void)0;
	pthread_join(s->th, NULL);
	close(s->fd);
	close(s->ev_fd);
	free(s->buf);
	free(s);
}

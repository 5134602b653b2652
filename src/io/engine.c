/* SPDX-License-Identifier: MIT */
/*
 * The engine: one per device context, it plays the NIC. A thread receives
 * packets, runs the transport's timers and sleeps in epoll until the next
 * deadline; application threads transmit directly when they post, and
 * receive inline when they poll an empty CQ (whoever holds rx_lock drains
 * the socket, so packets of a QP are processed in arrival order).
 */
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "ur_copy.h"
#include "ur_io_priv.h"
#include "ur_latprof.h"
#include "ur_stats.h"

uint64_t ur_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t ur_now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- dev ops: the transport's view of the engine ------------------------ */
static void eng_cq_event(void *host, struct ur_cq *cq)
{
	struct ur_engine *e = host;

	if (e->cfg.host_ops && e->cfg.host_ops->cq_event)
		e->cfg.host_ops->cq_event(e->cfg.host, cq);
}

static void eng_qp_event(void *host, struct ur_qp *qp, enum ur_async_event ev)
{
	struct ur_engine *e = host;

	if (e->cfg.host_ops && e->cfg.host_ops->qp_event)
		e->cfg.host_ops->qp_event(e->cfg.host, qp, ev);
}

/* Called by the transport under ur_engine_qp_lock(), which also read-holds
 * mr_lock: a region cannot be deregistered while a QP is using it. */
static const struct ur_mr *eng_mr_lookup(void *host, uint32_t key)
{
	struct ur_engine *e = host;

	return ur__key_get(e, key);
}

/* Called from ur__engine_deliver, rx_lock held: no QP leaves the table
 * meanwhile (ur_engine_qp_del takes rx_lock first), and one that enters
 * it is published whole (map.c), so the table needs no lock of its own. */
static struct ur_qp *eng_qp_lookup(void *host, uint32_t qpn)
{
	struct ur_engine *e = host;

	return ur__map_get(&e->qps, qpn);
}

/* Called by an XRC TGT's responder, from ur__engine_deliver (rx_lock
 * held): an SRQ cannot go while a request uses it (ur_engine_srq_del takes
 * rx_lock). */
static struct ur_srq *eng_srq_lookup(void *host, uint32_t srqn)
{
	struct ur_engine *e = host;

	return ur__map_get(&e->srqs, srqn);
}

static const struct ur_dev_ops engine_dev_ops = {
	.pkt_alloc = ur__eng_pkt_alloc,
	.pkt_send = ur__eng_pkt_send,
	.cq_event = eng_cq_event,
	.qp_event = eng_qp_event,
	.mr_lookup = eng_mr_lookup,
	.qp_lookup = eng_qp_lookup,
	.srq_lookup = eng_srq_lookup,
	.path_ok = ur__eng_path_ok,
	.path_quiet = ur__eng_path_quiet,
	.rx_if_ok = ur__eng_rx_if_ok,
};

/* ---- receive path ------------------------------------------------------- */
static void timer_moved(struct ur_engine *e, uint64_t before, uint64_t after);
static bool qp_trylock(struct ur_eqp *q);
static void backlog_run(struct ur_qp *qp, struct ur_eqp *q);
static void unlock_flush(struct ur_eqp *q);

/*
 * A receive batch's packets of one QP are delivered under one take of its
 * lock (mutex, key table read lock, backlog, flush: about ten atomic
 * operations per packet): a delivery that more packets of the batch follow
 * (ur_rxinfo.ack_later) keeps the QP locked in its thread's context, and
 * the next delivery to another QP, or to QP1 or a group, the batch's last
 * packet, UR_IO_RX_KEEP packets, or the batch's end (ur__engine_owed_flush)
 * releases it; one QP lock at a time. A poster of that QP waits for the
 * run (or leaves its ACKs in the backlog), as it waited for each packet.
 */
static void rx_keep_end(struct ur_engine *e, struct ur_tctx *tc)
{
	struct ur_qp *qp = tc->rx_qp;

	if (!qp)
		return;
	tc->rx_qp = NULL;
	ur_engine_qp_unlock(qp);
	timer_moved(e, tc->rx_before, qp->deadline);
}

/* Unlock @qp, locked by this delivery or kept from an earlier one. */
static void rx_unlock(struct ur_engine *e, struct ur_tctx *tc,
		      struct ur_qp *qp)
{
	if (tc->rx_qp == qp)
		rx_keep_end(e, tc);
	else
		ur_engine_qp_unlock(qp);
}

/*
 * The middle packet of an RDMA WRITE to one of our QPs may have its payload
 * copied to its destination during the ICRC check (ur_qp_rx_place): one
 * pass over the bytes instead of a check, then a copy. On success the QP
 * is locked until the packet is delivered (rx_lock keeps it in the table),
 * or was kept locked from the previous packet (rx_keep_end).
 */
static struct ur_qp *place_begin(struct ur_engine *e, struct ur_tctx *tc,
				 const uint8_t *buf, size_t len,
				 const struct ur_rxinfo *ri, uint8_t **place)
{
	struct ur_qp *qp;
	struct ur_eqp *q;

	qp = ur__map_get(&e->qps, ur_bth_dqpn(buf));
	q = qp ? qp->io_priv : NULL;
	if (!q)
		return NULL;
	if (tc->rx_qp != qp) {
		rx_keep_end(e, tc);
		if (!qp_trylock(q))
			return NULL;
	}
	*place = ur_qp_rx_place(qp, buf, len, ri);
	if (*place)
		return qp;
	if (tc->rx_qp != qp)
		ur_engine_qp_unlock(qp);
	return NULL;
}

/* @qp (locked) owes an ACK until the receive batch ends: listed by QPN
 * (it may be gone by then), or sent now when the list is full. */
static void owe_note(struct ur_qp *qp)
{
	struct ur_tctx *tc = ur__thread();

	for (unsigned int i = 0; i < tc->nowe; i++)
		if (tc->owe_qpn[i] == qp->qpn)
			return;
	if (tc->nowe < UR_IO_OWE_QPS)
		tc->owe_qpn[tc->nowe++] = qp->qpn;
	else
		ur_qp_ack_flush(qp);
}

/*
 * The batch's last packet left @qp (locked) owing: it was no request (the
 * peer's ACK riding behind its SEND, in a ping-pong), so its own ACK did
 * not replace the owed one. Made now, under this lock, rather than by
 * ur__engine_owed_flush taking the QP table and this lock once more
 * (about 10 atomic operations on a spinning poller's path per message).
 */
static void owe_pay(struct ur_qp *qp)
{
	struct ur_tctx *tc = ur__thread();

	ur_qp_ack_flush(qp);
	for (unsigned int i = 0; i < tc->nowe; i++)
		if (tc->owe_qpn[i] == qp->qpn) {
			tc->owe_qpn[i] = tc->owe_qpn[--tc->nowe];
			return;
		}
}

/* At a receive batch's end, rx_lock held (the QP table without its lock,
 * as in ur__engine_deliver). */
void ur__engine_owed_flush(struct ur_engine *e)
{
	struct ur_tctx *tc = ur__thread();
	unsigned int n;

	rx_keep_end(e, tc);
	n = tc->nowe;
	if (!n)
		return;
	tc->nowe = 0;
	for (unsigned int i = 0; i < n; i++) {
		struct ur_qp *qp = ur__map_get(&e->qps, tc->owe_qpn[i]);

		if (!qp)
			continue;
		ur_engine_qp_lock(qp);
		ur_qp_ack_flush(qp);
		ur_engine_qp_unlock(qp);
	}
	/* As deliver: sent while rx_lock is held (before a destroy). */
	if (!tc->polling)
		ur__tx_flush(tc->tx);
}

void ur__engine_deliver(struct ur_engine *e, const uint8_t *buf, size_t len,
			 struct ur_rxinfo *ri, uint64_t now, bool from_sibling)
{
	struct ur_tctx *tc = ur__thread();
	struct ur_qp *qp, *placed = NULL;
	uint8_t *place = NULL;
	struct ur_pkt pkt;
	bool pin = false;

	if (len < UR_BTH_LEN + UR_ICRC_LEN) {
		e->dev.cnt.rx_drop_malformed++;
		return;
	}
	if (!from_sibling) {
		uint32_t dqpn = ur_bth_dqpn(buf);
		uint8_t slot = (uint8_t)(dqpn >> UR_IO_SLOT_SHIFT);

		if (dqpn > 1 && dqpn != UR_MCAST_QPN && slot == e->slot &&
		    ur_rx_may_place(buf, len))
			placed = place_begin(e, tc, buf, len, ri, &place);
		if (ri->icrc_checked) {
			/* From shared memory (shm.c): no wire, no ICRC. */
			if (place)
				ur_copy(place, buf + UR_BTH_LEN,
				       len - UR_BTH_LEN - UR_ICRC_LEN);
		} else if (!ur__icrc_check(e->icrc, &ri->path, buf, len,
					    &ri->icrc_checked, place,
					    &e->dev.cnt.rx_icrc_id_solved)) {
			e->dev.cnt.rx_drop_icrc++;
			if (placed)
				rx_unlock(e, tc, placed);
			return;
		}
		UR_LP_STAGE(UR_LPS_ICRC);
		/* Unverified packets are counted once, by the transport's
		 * classification (also for those forwarded to a sibling). */
		if (dqpn > 1 && dqpn != UR_MCAST_QPN && slot != e->slot) {
			ur__fwd_to(e, slot, buf, len, ri, false);
			return;
		}
	}
	if (ur_bth_dqpn(buf) == UR_MCAST_QPN) {
		/* Every process on the group gets its own copy (mcast.c):
		 * none is forwarded. */
		rx_keep_end(e, tc); /* it locks the group's QPs */
		ur__mcast_deliver(e, buf, len, ri, now);
		return;
	}
	if (ur_bth_dqpn(buf) == 1) {
		rx_keep_end(e, tc); /* the CM may modify any QP */
		ur__gsi_rx(e, buf, len, ri, from_sibling);
		return;
	}
	/* The QP table without its lock: every caller holds rx_lock, which
	 * ur_engine_qp_del takes before it removes a QP (eng_qp_lookup). */
	if (!ur_dev_rx_classify(&e->dev, buf, len, ri, &pkt, &qp)) {
		struct ur_eqp *q = qp->io_priv;
		bool kept = tc->rx_qp == qp;
		uint64_t before;

		if (placed) {
			/* Locked since place_begin (the same QPN), or kept;
			 * the responder finds the data in place. */
			pkt.payload = place;
			e->dev.cnt.rx_placed++;
		} else if (!kept) {
			rx_keep_end(e, tc); /* one QP lock at a time */
			if (q && qp_trylock(q)) {
				/* locked */
			} else if (q && ur_ackq_push(&q->acks, buf, len, ri)) {
				/* A post holds the QP (in its system call,
				 * most likely): it runs the ACK at its unlock,
				 * and this thread goes on with the next packet
				 * instead of waiting. Unless it unlocked
				 * meanwhile. */
				e->dev.cnt.rx_ack_deferred++;
				if (qp_trylock(q))
					ur_engine_qp_unlock(qp);
				goto out;
			} else {
				ur_engine_qp_lock(qp);
			}
		}
		if (kept) {
			before = tc->rx_before;
		} else {
			before = qp->deadline;
			tc->rx_kept = 0;
		}
		UR_LP_STAGE(UR_LPS_CLASSIFIED);
		ur_qp_rx(qp, &pkt, ri, now);
		UR_LP_STAGE(UR_LPS_PROCESSED);
		/* A sibling forwarded a request of a peer that sprays: its
		 * other ports may come straight here (pin.c). */
		pin = from_sibling && ur_qp_rx_sprayed(qp);
		if (ur_qp_ack_owed(qp)) {
			if (ri->ack_later)
				owe_note(qp);
			else
				owe_pay(qp);
		}
		if (q && ri->ack_later && ++tc->rx_kept < UR_IO_RX_KEEP) {
			/* What this packet made leaves now, as at an unlock:
			 * a resend it asked for must not wait past a later
			 * packet's ACK that completes its WQE, whose buffer
			 * the application may free at once (coll_lab nfq
			 * under ASan: a kept run's stale resend read freed
			 * memory). */
			unlock_flush(q);
			tc->rx_qp = qp; /* more of the batch follow */
			tc->rx_before = before;
		} else {
			tc->rx_qp = NULL;
			ur_engine_qp_unlock(qp);
			timer_moved(e, before, qp->deadline);
		}
		/* The engine thread sends the ACK while rx_lock is held: a
		 * completion the application already sees must not be
		 * followed by an ibv_destroy_qp that closes the port before
		 * the ACK left. A polling thread defers it (ur_engine_poll);
		 * ur_engine_qp_del flushes what it deferred. */
out:
		if (!ur__thread()->polling)
			ur__tx_flush(ur__thread()->tx);
	} else if (placed) {
		rx_unlock(e, tc, placed); /* dropped, and counted */
	}
	if (pin)
		ur__pin_peer(e, &ri->path);
	UR_LP_STAGE(UR_LPS_DELIVERED);
}

/* Run expired QP timers; return the earliest remaining deadline. */
uint64_t ur__engine_run_timers(struct ur_engine *e, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	/* Before the walk reads a deadline (timer_moved's look). */
	atomic_fetch_add(&e->scanning, 1);
	__atomic_fetch_add(&e->dev.cnt.eng_timer_walks, 1, __ATOMIC_RELAXED);
	pthread_rwlock_rdlock(&e->qp_lock);
	for (uint32_t i = 0; i < e->qps.nb; i++) {
		for (struct ur_map_node *n = e->qps.b[i]; n; n = n->next) {
			struct ur_qp *qp = n->val;

			if (qp->deadline <= now) {
				ur_engine_qp_lock(qp);
				/* What the timer arms again is timed from
				 * now, not from before a wait for the lock. */
				ur_qp_timer(qp, ur_now());
				ur_engine_qp_unlock(qp);
			}
			if (qp->deadline < next)
				next = qp->deadline;
		}
	}
	ur__tx_flush(ur__thread()->tx); /* before a QP can be destroyed (see deliver) */
	pthread_rwlock_unlock(&e->qp_lock);
	atomic_store(&e->next_deadline, next);
	atomic_fetch_sub(&e->scanning, 1);
	return next;
}

/* Send what polling threads deferred; rx_lock held. */
static void flush_poll_tx(struct ur_engine *e)
{
	if (ur__tx_pending(e->poll_tx))
		ur__tx_flush(e->poll_tx);
	atomic_store_explicit(&e->poll_tx_at, 0, memory_order_relaxed);
}

/* When the engine thread sends what the poll batch holds (UINT64_MAX:
 * nothing waits). */
static uint64_t ack_due(struct ur_engine *e)
{
	uint64_t at = atomic_load(&e->poll_tx_at);

	return at ? at + UR_IO_APP_RECHECK_NS : UINT64_MAX;
}

/* Flush the poll batch if its oldest ACK waited long enough; rx_lock held. */
void ur__poll_tx_flush_held(struct ur_engine *e, uint64_t now)
{
	if (ur__tx_pending(e->poll_tx) &&
	    now - atomic_load_explicit(&e->poll_tx_at, memory_order_relaxed) >=
		    UR_IO_ACK_HOLD_NS)
		flush_poll_tx(e);
}

/* Accept new sibling connections, at most every UR_IO_ACCEPT_NS (a system
 * call; a new sibling is rare and waits in the backlog), or at once after
 * the listener woke the engine (fwd_accept_at = 0). Engine thread only. */
static void accept_due(struct ur_engine *e, uint64_t now)
{
	if (now - e->fwd_accept_at >= UR_IO_ACCEPT_NS) {
		ur__fwd_accept(e);
		e->fwd_accept_at = now;
	}
}

static int drain_all(struct ur_engine *e)
{
	struct ur_tctx *tc = ur__thread();
	struct tx_batch *prev;
	uint64_t now;
	int n;

	pthread_mutex_lock(&e->rx_lock);
	/* The clock after the lock, which may have been held for long: a
	 * timer armed from a stale clock fires early (tx_timeouts on a
	 * loss-free network under ASan). */
	now = ur_now();
	atomic_store(&e->drain_cpu, sched_getcpu());
	flush_poll_tx(e);
	/* In the poll batch, so that the ACKs of a receive batch coalesce
	 * and ur_engine_qp_del finds any still unsent. */
	prev = tc->tx;
	tc->tx = e->poll_tx;
	tc->polling = true;
	n = ur__udp_drain(e, e->rx_fd, now, true, NULL);
	tc->polling = false;
	tc->tx = prev;
	if (e->mcast)
		n += ur__mcast_drain(e, now);
	/* New siblings: only the engine thread looks, and not at every
	 * batch. The listener wakes a sleeping engine (engine_main). */
	accept_due(e, now);
	n += ur__fwd_drain(e, now);
	n += ur__pin_drain(e, now);
	pthread_mutex_unlock(&e->rx_lock);
	return n;
}

/* @next, or earlier if ACKs a poll left are due (poll_tx_mark); one that
 * the engine thread could not send yet (rx_lock was taken) is tried again
 * a hold period later, not in a busy loop. */
static uint64_t ack_bound(struct ur_engine *e, uint64_t next, uint64_t now)
{
	uint64_t due = ack_due(e);

	if (due <= now)
		due = now + UR_IO_ACK_HOLD_NS;
	return due < next ? due : next;
}

static void *engine_main(void *arg)
{
	struct ur_engine *e = arg;
	bool scan = true;

	while (!atomic_load(&e->stop)) {
		uint64_t now = ur_now(), next, polled;
		struct epoll_event ev[4];
		struct timespec ts, *tsp = NULL;
		bool app_polls;
		int got, epfd;

		/* While an application thread polls its CQ it drains the
		 * socket itself (ur_engine_poll); the engine then only runs
		 * timers, so the two do not race for each packet and the
		 * poller pays no thread wake-up. */
		polled = atomic_load(&e->last_poll);
		/* (polled may be a little after now: the poller is ahead) */
		app_polls = polled && (polled > now ||
				       now - polled < UR_IO_APP_POLL_NS);
		got = app_polls ? 0 : drain_all(e);
		if (app_polls && !pthread_mutex_trylock(&e->rx_lock)) {
			/* The poller drains sibling connections, but only
			 * the engine accepts new ones. What a poll left
			 * undelivered waits at most until this look. */
			now = ur_now();
			accept_due(e, now);
			ur__udp_rx_rest(e, now);
			if (e->mcast) /* pollers drain the device socket only */
				got = ur__mcast_drain(e, now);
			/* ACKs a poll left that nobody sent since. */
			if (ack_due(e) <= now)
				flush_poll_tx(e);
			else
				ur__poll_tx_flush_held(e, now);
			pthread_mutex_unlock(&e->rx_lock);
		}
		{
			uint64_t t = ur_now(), nd = atomic_load(&e->next_deadline);

			/* Walk the QP table only when a deadline is due or a
			 * timer moved earlier since the last walk: not at each
			 * receive batch of a busy engine. */
			if (scan || atomic_exchange(&e->timer_dirty, false) ||
			    nd <= t)
				next = ur__engine_run_timers(e, t);
			else
				next = nd;
			scan = false;
		}
		{
			uint64_t s = ur__stats_publish(e, ur_now());

			if (s < next)
				next = s; /* uroce-stat sees the last counts */
		}
		ur__tx_flush(ur__thread()->tx);
		/* An application thread that polled lately on this CPU (not
		 * within UR_IO_APP_POLL_NS, or it would drain itself) may be
		 * waiting for it, both bound to one core as MPI-style
		 * launchers bind: what we just delivered may be the
		 * completion it waits for (a collective's offer, say), which
		 * it should act on before we receive the rest of a long
		 * stream. */
		if (got && polled && now - polled < UR_IO_APP_YIELD_NS &&
		    sched_getcpu() == atomic_load(&e->poll_cpu))
			sched_yield();
		if (got)
			continue;
		if (app_polls && next > now + UR_IO_APP_RECHECK_NS)
			next = now + UR_IO_APP_RECHECK_NS; /* look again then */
		epfd = app_polls ? e->ep_timer_fd : e->ep_fd;
		next = ack_bound(e, next, now);
		atomic_store(&e->sleep_until, next);
		if (atomic_exchange(&e->timer_dirty, false)) {
			/* A timer moved while we scanned: scan again. */
			atomic_store(&e->sleep_until, 0);
			scan = true;
			continue;
		}
		next = ack_bound(e, next, now); /* after publishing sleep_until */
		now = ur_now();
		if (next != UINT64_MAX) {
			uint64_t d = next > now ? next - now : 0;

			ts.tv_sec = (time_t)(d / 1000000000ull);
			ts.tv_nsec = (long)(d % 1000000000ull);
			tsp = &ts;
		}
		/* Producers on this machine ring our FIFO only while we
		 * sleep on it: say so, then look at the lanes once more. */
		if (epfd == e->ep_fd && e->shm && ur__shm_sleep(e)) {
			atomic_store(&e->sleep_until, 0);
			continue;
		}
		if (!e->up_said) { /* ur_engine_open waits for this */
			e->up_said = true;
			sem_post(&e->up);
		}
		int n = epoll_pwait2(epfd, ev, 4, tsp, NULL);

		/* Each return is a wake-up: a packet, a kick (eng_kicks) or
		 * a deadline. */
		__atomic_fetch_add(&e->dev.cnt.eng_wakes, 1, __ATOMIC_RELAXED);
		if (epfd == e->ep_fd && e->shm)
			ur__shm_awake(e);

		for (int i = 0; i < n; i++) {
			if (ev[i].data.fd == e->ev_fd) {
				uint64_t v;

				if (read(e->ev_fd, &v, sizeof(v)) < 0)
					(void)0;
			} else if (ev[i].data.fd == e->fwd_fd) {
				e->fwd_accept_at = 0; /* at the next drain */
			}
		}
		atomic_store(&e->sleep_until, 0);
	}
	ur__tx_flush(ur__thread()->tx);
	return NULL;
}

void ur__engine_wake(struct ur_engine *e)
{
	uint64_t one = 1;

	__atomic_fetch_add(&e->dev.cnt.eng_kicks, 1, __ATOMIC_RELAXED);
	if (write(e->ev_fd, &one, sizeof(one)) < 0)
		(void)0;
}

/*
 * A QP's timer moved earlier (any thread may arm one: a post, or a poll
 * that processed an ACK). Dekker-style with the engine loop: we publish
 * timer_dirty, then read sleep_until; the engine publishes sleep_until,
 * then reads timer_dirty. One of the two sees the other, so the engine
 * never sleeps past a deadline it did not scan.
 */
static void timer_moved(struct ur_engine *e, uint64_t before, uint64_t after)
{
	uint64_t sleep, nd;

	if (after >= before)
		return;
	/* A deadline no earlier than the known earliest changes nothing:
	 * the engine wakes by then and walks. Marking it dirty anyway made
	 * a streaming poster's engine thread walk the QP table at every post
	 * (43 000 walks per 200 000 64 B WRITEs, a core busy beside the
	 * poster). Unless a walk is under way: it may have read this QP's
	 * deadline before the change and store a later earliest. */
	atomic_thread_fence(memory_order_seq_cst); /* the QP's deadline first */
	nd = atomic_load(&e->next_deadline);
	if (after >= nd && !atomic_load(&e->scanning))
		return;
	/* lowered to @after */
	while (after < nd &&
	       !atomic_compare_exchange_weak(&e->next_deadline, &nd, after))
		;
	atomic_store(&e->timer_dirty, true);
	sleep = atomic_load(&e->sleep_until);
	if (sleep && after < sleep)
		ur__engine_wake(e);
}

/* ---- lifecycle ------------------------------------------------------------ */
/* An on/off setting that is on unless set to 0. */
static bool env_is_0(const char *name)
{
	return !ur_setting_val(name);
}


static int bond_parse(struct ur_engine *e, const char *v);

int ur_engine_open(const struct ur_engine_cfg *cfg, struct ur_engine **out)
{
	struct ur_engine *e;
	struct epoll_event ev = { .events = EPOLLIN };
	int ret = -ENOMEM;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	atomic_store(&e->drain_cpu, -1);
	atomic_store(&e->poll_cpu, -1);
	e->cfg = *cfg;
	e->keys = e;
	if (!e->cfg.port)
		e->cfg.port = UR_ROCEV2_PORT;
	e->rx_fd = e->fwd_fd = e->ev_fd = e->ep_fd = e->gsi_fd = -1;
	e->pin_ep = -1;
	e->fwd_id_fd = -1;
	for (int i = 0; i < UR_BOND_MAX; i++)
		e->gsi_bfd[i] = -1;
	e->ep_timer_fd = -1;
	pthread_mutex_init(&e->gsi_lock, NULL);
	for (int i = 0; i < 256; i++)
		e->fwd_out[i] = e->fwd_own[i] = -1;
	e->local.v6 = cfg->addr.ss_family == AF_INET6;
	if (e->local.v6)
		memcpy(e->local.src,
		       &((const struct sockaddr_in6 *)&cfg->addr)->sin6_addr, 16);
	else
		memcpy(e->local.src,
		       &((const struct sockaddr_in *)&cfg->addr)->sin_addr, 4);
	e->dev.ops = &engine_dev_ops;
	e->dev.host = e;
	/* Payloads go from registered memory straight to sendmmsg (the
	 * kernel's copy is the only one); UROCE_ZCOPY=0 copies them first. */
	e->dev.tx_ext = !env_is_0("UROCE_ZCOPY");
	e->dev.max_mtu = cfg->mtu ? cfg->mtu : 1024;
	e->dev.jumbo_max = cfg->jumbo_max;
	pthread_mutex_init(&e->rx_lock, NULL);
	pthread_mutex_init(&e->fwd_lock, NULL);
	pthread_mutex_init(&e->stream_lock, NULL);
	pthread_rwlock_init(&e->qp_lock, NULL);
	pthread_rwlock_init(&e->mr_lock, NULL);
	if (ur__map_init(&e->qps, 1024) || ur__map_init(&e->sports, 256) ||
	    ur__map_init(&e->mrs, 1024) || ur__map_init(&e->srqs, 64))
		goto err;
	e->rxbuf = ur__buf_new(UR_IO_RX_BATCH * sizeof(*e->rxbuf));
	e->rxv = calloc(1, sizeof(*e->rxv));
	e->icrc = ur__icrc_policy_env();
	/* A strict receiver takes only the IDs of unconnected sockets: a
	 * strict deployment keeps to them (csock.c). */
	e->csock_on = e->icrc != UR_ICRC_STRICT && !env_is_0("UROCE_CONNECT");
	ret = bond_parse(e, cfg->bond);
	if (ret)
		goto err;
	e->poll_tx = ur__tx_batch_new(true);
	if (!e->rxbuf || !e->rxv || !e->poll_tx)
		goto err;
	ur__udp_rx_init(e);
	ret = e->fwd_fd = ur__fwd_open(e);
	if (ret < 0)
		goto err;
	ret = e->rx_fd = ur__udp_open_rx(e);
	if (ret < 0)
		goto err;
	/* A bonded port times each interface's arrivals by the kernel's
	 * stamps (udp.c, bond_heard): best effort, else when read. */
	if (e->bond_n)
		(void)ur_engine_rx_stamps(e);
	/* UROCE_SHM=1: devices of this machine and network namespace that
	 * also set it exchange packets by shared memory (shm.c). Where that
	 * cannot be set up, UDP carries everything. */
	{
		if (ur_setting_val("UROCE_SHM") && ur__shm_open(e) < 0)
			fprintf(stderr, "uroce: UROCE_SHM=1 but no shared-memory lanes: UDP only\n");
	}
	e->ev_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	e->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (e->ev_fd < 0 || e->ep_fd < 0) {
		ret = -errno;
		goto err;
	}
	ev.data.fd = e->rx_fd;
	epoll_ctl(e->ep_fd, EPOLL_CTL_ADD, e->rx_fd, &ev);
	ev.data.fd = e->fwd_fd;
	epoll_ctl(e->ep_fd, EPOLL_CTL_ADD, e->fwd_fd, &ev);
	ev.data.fd = e->ev_fd;
	epoll_ctl(e->ep_fd, EPOLL_CTL_ADD, e->ev_fd, &ev);
	if (e->shm) {
		ev.data.fd = ur__shm_fifo_fd(e);
		epoll_ctl(e->ep_fd, EPOLL_CTL_ADD, ev.data.fd, &ev);
		ev.data.fd = e->ev_fd;
	}
	e->ep_timer_fd = epoll_create1(EPOLL_CLOEXEC);
	if (e->ep_timer_fd < 0) {
		ret = -errno;
		goto err;
	}
	epoll_ctl(e->ep_timer_fd, EPOLL_CTL_ADD, e->ev_fd, &ev);
	ev.data.fd = e->fwd_fd; /* a new sibling connects: accept it */
	epoll_ctl(e->ep_timer_fd, EPOLL_CTL_ADD, e->fwd_fd, &ev);
	if (cfg->keys) {
		ret = ur__key_user_set(cfg->keys, e, true);
		if (ret)
			goto err;
		e->keys = cfg->keys;
	}
	ur__stats_open(e, cfg->name);
	/* The device is open once its engine sleeps in epoll: a program
	 * that forks right after opening (pyverbs' rdma_cm tests do) must
	 * not copy a thread half-way through its start, which may hold a
	 * lock the child then finds taken forever (ASan's allocator: a
	 * forked child's engine hung in 1 of 40 loaded runs). */
	if (sem_init(&e->up, 0, 0)) {
		ret = -errno;
		goto err;
	}
	ret = -pthread_create(&e->thread, NULL, engine_main, e);
	if (ret) {
		sem_destroy(&e->up);
		goto err;
	}
	while (sem_wait(&e->up) && errno == EINTR)
		;
	sem_destroy(&e->up);
	ur__stats_track(e, true);
	*out = e;
	return 0;
err:
	e->thread = 0;
	ur_engine_close(e);
	return ret < 0 ? ret : -ENOMEM;
}

void ur_engine_close(struct ur_engine *e)
{
	if (!e)
		return;
	ur__stats_track(e, false);
	if (e->thread) {
		atomic_store(&e->stop, true);
		ur__engine_wake(e);
		pthread_join(e->thread, NULL);
	}
	ur__stats_close(e);
	ur__stats_dump(e);
	if (e->keys && e->keys != e)
		ur__key_user_set(e->keys, e, false);
	if (e->poll_tx) {
		flush_poll_tx(e);
		ur__tx_batch_free(e->poll_tx);
	}
	ur__tx_flush(ur__thread()->tx);
	for (uint32_t i = 0; e->sports.b && i < e->sports.nb; i++)
		for (struct ur_map_node *n = e->sports.b[i]; n; n = n->next) {
			struct ur_sport_sock *s = n->val;

			close(s->fd);
			free(s);
		}
	if (e->rx_fd >= 0)
		close(e->rx_fd);
	if (e->gsi_fd >= 0)
		close(e->gsi_fd);
	for (int i = 0; i < UR_BOND_MAX; i++)
		if (e->gsi_bfd[i] >= 0)
			close(e->gsi_bfd[i]);
	pthread_mutex_destroy(&e->gsi_lock);
	ur__shm_close(e);
	ur__fwd_close(e);
	ur__pin_close(e);
	if (e->fwd_fd >= 0)
		close(e->fwd_fd);
	/* Our name after our slot: a sibling never sees the slot alone. */
	if (e->fwd_id_fd >= 0)
		close(e->fwd_id_fd);
	if (e->ev_fd >= 0)
		close(e->ev_fd);
	if (e->ep_fd >= 0)
		close(e->ep_fd);
	if (e->ep_timer_fd >= 0)
		close(e->ep_timer_fd);
	ur__mcast_close(e);
	ur_dev_fini(&e->dev); /* the selective-repeat pool, if any */
	ur__map_fini(&e->qps);
	ur__map_fini(&e->srqs);
	ur__map_fini(&e->sports);
	ur__map_fini(&e->mrs);
	ur__buf_free(e->rxbuf, UR_IO_RX_BATCH * sizeof(*e->rxbuf));
	free(e->rxv);
	pthread_mutex_destroy(&e->rx_lock);
	pthread_mutex_destroy(&e->fwd_lock);
	pthread_mutex_destroy(&e->stream_lock);
	pthread_rwlock_destroy(&e->qp_lock);
	pthread_rwlock_destroy(&e->mr_lock);
	free(e);
}

struct ur_dev *ur_engine_dev(struct ur_engine *e)
{
	return &e->dev;
}

const char *ur_engine_icrc_mode(const struct ur_engine *e)
{
	return ur__icrc_policy_name(e->icrc);
}

/* ---- XRC SRQs ------------------------------------------------------------ */
int ur_engine_srq_add(struct ur_engine *e, struct ur_srq *srq)
{
	uint32_t n;
	int ret;

	pthread_rwlock_wrlock(&e->qp_lock);
	do {
		n = ur__rand32() & 0xffffff; /* the XRCETH's 24 bits */
	} while (!n || ur__map_get(&e->srqs, n));
	ret = ur__map_put(&e->srqs, n, srq);
	if (!ret)
		srq->srqn = n;
	pthread_rwlock_unlock(&e->qp_lock);
	return ret;
}

void ur_engine_srq_del(struct ur_engine *e, struct ur_srq *srq)
{
	/* rx_lock waits out any request using it (a delivery reads the
	 * table under rx_lock alone), the write lock any other reader. */
	pthread_mutex_lock(&e->rx_lock);
	pthread_rwlock_wrlock(&e->qp_lock);
	if (ur__map_get(&e->srqs, srq->srqn) == srq)
		ur__map_del(&e->srqs, srq->srqn);
	pthread_rwlock_unlock(&e->qp_lock);
	pthread_mutex_unlock(&e->rx_lock);
}

/* ---- QPs ---------------------------------------------------------------- */
struct ur_qp *ur_engine_qp_get(struct ur_engine *e, uint32_t qpn)
{
	struct ur_qp *qp;

	pthread_rwlock_rdlock(&e->qp_lock);
	qp = ur__map_get(&e->qps, qpn);
	pthread_rwlock_unlock(&e->qp_lock);
	return qp;
}

uint32_t ur_engine_alloc_qpn(struct ur_engine *e)
{
	uint32_t qpn;

	pthread_rwlock_rdlock(&e->qp_lock);
	do {
		qpn = ((uint32_t)e->slot << UR_IO_SLOT_SHIFT) |
		      (ur__rand32() & 0xffff);
	} while (ur__map_get(&e->qps, qpn));
	pthread_rwlock_unlock(&e->qp_lock);
	return qpn;
}

/*
 * A bonded port (cfg.bond, UROCE_BOND): 2..UR_BOND_MAX interfaces, each
 * named once. Connected sockets would pin a QP's own port to the route
 * the kernel picks; a bonded port's sockets pick their interface instead.
 */
static int bond_parse(struct ur_engine *e, const char *v)
{
	const char *p = v;

	e->bond_n = 0;
	if (!v || !*v)
		return 0;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char name[16];

		if (!len || len >= sizeof(name) || e->bond_n == UR_BOND_MAX)
			goto bad;
		memcpy(name, p, len);
		name[len] = 0;
		if (!if_nametoindex(name)) {
			fprintf(stderr, "uroce: UROCE_BOND=%s: %s is not an interface here\n", v, name);
			goto bad;
		}
		for (unsigned int i = 0; i < e->bond_n; i++)
			if (!strcmp(e->bond_if[i], name))
				goto bad;
		e->bond_ifindex[e->bond_n] = if_nametoindex(name);
		memcpy(e->bond_if[e->bond_n++], name, len + 1);
		if (!end)
			break;
		p = end + 1;
	}
	if (e->bond_n < 2)
		goto bad;
	for (unsigned int i = 0; i < e->bond_n; i++)
		atomic_store(&e->bond_up[i], true);
	e->csock_on = false;
	return 0;
bad:
	fprintf(stderr, "uroce: UROCE_BOND=%s refused; allowed: 2..%d interface names, "
		"comma-separated, each once, with UROCE_IP (the bonded port's address)\n",
		v, UR_BOND_MAX);
	e->bond_n = 0;
	return -EINVAL;
}

/* Find or open the socket for a source port (qp_lock write-held). On a
 * bonded port the port found keeps *sport's interface (p mod bond_n). */
static int sport_get(struct ur_engine *e, uint16_t *sport)
{
	unsigned int n = e->bond_n ? e->bond_n : 1;

	for (unsigned int i = 0; i < 64 * n; i++) {
		uint16_t p = (uint16_t)(0xc000 | ((*sport + i) & 0x3fff));
		struct ur_sport_sock *s;
		int fd;

		if (p % n != *sport % n)
			continue;
		s = ur__map_get(&e->sports, p);

		if (s) {
			s->refs++;
			*sport = p;
			return s->fd;
		}
		fd = ur__udp_open_tx(e, p);
		if (fd < 0)
			continue; /* taken by a foreign socket: next port */
		s = malloc(sizeof(*s));
		if (!s || ur__map_put(&e->sports, p, s)) {
			free(s);
			close(fd);
			return -ENOMEM;
		}
		s->fd = fd;
		s->refs = 1;
		*sport = p;
		return fd;
	}
	return -EADDRINUSE;
}

static void sport_put(struct ur_engine *e, uint16_t sport)
{
	struct ur_sport_sock *s = ur__map_get(&e->sports, sport);

	if (s && --s->refs == 0) {
		ur__map_del(&e->sports, sport);
		close(s->fd);
		free(s);
	}
}

/* Spraying: the device's further source ports for an RC QP with selective
 * repeat (qp_lock write-held); the QP keeps its own port if none opens.
 * They are its group's (mp_base): with spraying on by default, a socket
 * per path and QP would put a job of 200 QPs over 1024 descriptors.
 * Four groups still give QPs different ports, so that the fabric's hash
 * does not put every QP's further paths on the same links. */
static void paths_open(struct ur_engine *e, struct ur_eqp *q)
{
	struct ur_qp *qp = q->qp;
	unsigned int k = e->dev.paths;
	uint16_t *base = &e->mp_base[qp->qpn % UR_MP_GROUPS];

	q->mp_sport[0] = q->sport;
	q->mp_k = 1;
	/* A bonded port sprays over at least one path per interface. */
	if (k < e->bond_n)
		k = e->bond_n;
	if (k < 2 || qp->type != UR_QPT_RC || !(ur_qp_sr_state(qp) & 1))
		return;
	if (k > UR_MP_MAX)
		k = UR_MP_MAX;
	if (!*base)
		*base = q->sport; /* the group's first QP: a port of its own */
	for (unsigned int i = 1; i < k; i++) {
		uint16_t p = ur_mp_sport(*base, i);

		/* Path i by interface (sport + i) mod n: each in turn. */
		if (e->bond_n)
			while (p % e->bond_n != (q->sport + i) % e->bond_n)
				p = (uint16_t)(0xc000 | ((p + 1) & 0x3fff));

		if (sport_get(e, &p) < 0)
			continue;
		/* Another QP's own port may be one of the group's. */
		for (unsigned int j = 0; j < q->mp_k && p; j++)
			if (q->mp_sport[j] == p) {
				sport_put(e, p);
				p = 0;
			}
		if (p)
			q->mp_sport[q->mp_k++] = p;
	}
	if (ur_qp_set_paths(qp, q->mp_sport, q->mp_k, UR_MP_RUNS)) {
		while (q->mp_k > 1)
			sport_put(e, q->mp_sport[--q->mp_k]);
	}
}

static void paths_close(struct ur_engine *e, struct ur_eqp *q)
{
	for (unsigned int i = 1; i < q->mp_k; i++)
		sport_put(e, q->mp_sport[i]);
	q->mp_k = 1;
}

int ur_engine_qp_add(struct ur_engine *e, struct ur_qp *qp)
{
	struct ur_eqp *q = calloc(1, sizeof(*q));
	uint16_t sport = qp->sport ? qp->sport : ur_rocev2_sport(qp->qpn);
	int ret;

	if (!q)
		return -ENOMEM;
	pthread_mutex_init(&q->lock, NULL);
	q->qp = qp;
	q->e = e;
	pthread_rwlock_wrlock(&e->qp_lock);
	ret = q->tx_fd = sport_get(e, &sport);
	if (ret >= 0) {
		q->sport = sport;
		qp->sport = sport;
		qp->io_priv = q;
		paths_open(e, q);
		ret = ur__map_put(&e->qps, qp->qpn, qp);
		if (ret) {
			paths_close(e, q);
			sport_put(e, sport);
		}
	}
	pthread_rwlock_unlock(&e->qp_lock);
	if (ret) {
		qp->io_priv = NULL;
		pthread_mutex_destroy(&q->lock);
		free(q);
	}
	return ret;
}

void ur_engine_qp_del(struct ur_engine *e, struct ur_qp *qp)
{
	struct ur_eqp *q = qp->io_priv;

	if (q && q->stream) { /* its thread takes the QP lock: first */
		ur__stream_free(q->stream);
		q->stream = NULL;
	}

	/* The receive lock first (the engine's order), held to the end: no
	 * receive can make an ACK for this QP between the flush of deferred
	 * ACKs and the close of its port (the application may see the
	 * completion of a SEND before its ACK was made, and destroy the QP). */
	pthread_mutex_lock(&e->rx_lock);
	ur__udp_rx_rest(e, ur_now()); /* none left for a QP about to go */
	flush_poll_tx(e);
	/* The write lock waits out any timer using the QP. */
	pthread_rwlock_wrlock(&e->qp_lock);
	if (ur__map_get(&e->qps, qp->qpn) == qp)
		ur__map_del(&e->qps, qp->qpn);
	ur__mcast_qp_gone(e, qp);
	if (q) {
		if (q->held) /* before its port closes */
			ur__tx_flush(q->held);
		if (q->cs) {
			ur__csock_close(q->cs);
			atomic_fetch_sub(&e->ncsock, 1);
		}
		paths_close(e, q);
		sport_put(e, q->sport);
	}
	pthread_rwlock_unlock(&e->qp_lock);
	pthread_mutex_unlock(&e->rx_lock);
	if (q) {
		pthread_mutex_destroy(&q->lock);
		ur__tx_batch_free(q->held);
		free(q);
	}
	qp->io_priv = NULL;
}

void ur_engine_qp_lock(struct ur_qp *qp)
{
	struct ur_eqp *q = qp->io_priv;

	/* Lock order: QP, then the MR table (read). Deregistration takes
	 * the MR table alone, so it waits for every QP using a key. */
	if (q) {
		pthread_mutex_lock(&q->lock);
		pthread_rwlock_rdlock(&q->e->keys->mr_lock);
		backlog_run(qp, q); /* ACKs that came first go first */
		q->unacked_at_lock = ur_qp_unacked(qp);
		q->psn_at_lock = ur_qp_psn_next(qp);
	}
}

/* ur_engine_qp_lock if the QP lock is free; false if it is held. */
static bool qp_trylock(struct ur_eqp *q)
{
	if (pthread_mutex_trylock(&q->lock))
		return false;
	pthread_rwlock_rdlock(&q->e->keys->mr_lock);
	backlog_run(q->qp, q);
	return true;
}

bool ur__qp_trylock(struct ur_qp *qp)
{
	struct ur_eqp *q = qp->io_priv;

	return q && qp_trylock(q);
}

/* Run the ACKs left while the lock was held (ur_ackq); QP lock held. */
static void backlog_run(struct ur_qp *qp, struct ur_eqp *q)
{
	uint64_t before;

	if (ur_ackq_empty(&q->acks))
		return;
	before = qp->deadline;
	ur_ackq_run(&q->acks, qp, ur_now());
	timer_moved(q->e, before, qp->deadline);
}

/*
 * What the QP made leaves before its lock does. A QP's packets leave in the
 * order it made them: another thread taking the lock next (a post, a timer,
 * a poll) must not send later PSNs before these, or the peer sees a
 * sequence error and go-back-N resends (9.7.4.1.3). Only plain ACKs from a
 * polling thread wait; held requests leave first, whoever unlocks, except
 * after an unlock that sends nothing of this QP's while enough PSNs are on
 * the wire to bring another ACK (ur_txq_hold_keep).
 */
static void unlock_flush(struct ur_eqp *q)
{
	struct ur_tctx *tc = ur__thread();

	if (q && q->held && ur__tx_pending(q->held) &&
	    (ur__tx_ordered_pending(tc->tx) ||
	     !ur_txq_hold_keep(ur_qp_unacked(q->qp), ur__tx_count(q->held))))
		ur__tx_flush_after(q->held, tc->tx);
	else if (!tc->polling || ur__tx_ordered_pending(tc->tx))
		ur__tx_flush(tc->tx);
}

/* Release what ur_engine_qp_lock took, then take the lock back for ACKs
 * left meanwhile by a receiver that found it held: nobody else may. */
static void qp_locks_release(struct ur_eqp *q)
{
	if (!q)
		return;
	for (;;) {
		pthread_rwlock_unlock(&q->e->keys->mr_lock);
		pthread_mutex_unlock(&q->lock);
		atomic_thread_fence(memory_order_seq_cst); /* ur_ackq_push */
		if (ur_ackq_empty(&q->acks) ||
		    !qp_trylock(q)) /* which runs them */
			return;
		unlock_flush(q);
	}
}

void ur_engine_qp_unlock(struct ur_qp *qp)
{
	struct ur_eqp *q = qp->io_priv;

	if (q)
		backlog_run(qp, q);
	unlock_flush(q);
	qp_locks_release(q);
}

/* Whether this thread's next poll of @e will send a batch @qpn holds
 * (held_flush), and the note that makes it so. A thread that posts to
 * several QPs in turn before it polls (ib_write_bw -q 4) holds on each;
 * only the last one was remembered, and the others' batches waited for
 * an ACK, or for the retransmission timer when none was due (below). */
static bool held_room(const struct ur_tctx *tc, const struct ur_engine *e,
		      uint32_t qpn)
{
	if (tc->held_e != e || tc->nheld < UR_IO_HELD_QPS)
		return true;
	for (unsigned int i = 0; i < tc->nheld; i++)
		if (tc->held_qpn[i] == qpn)
			return true;
	return false;
}

static void held_note(struct ur_tctx *tc, struct ur_engine *e, uint32_t qpn)
{
	if (tc->held_e != e) { /* another engine's wait for their ACKs */
		tc->held_e = e;
		tc->nheld = 0;
	}
	for (unsigned int i = 0; i < tc->nheld; i++)
		if (tc->held_qpn[i] == qpn)
			return;
	if (tc->nheld < UR_IO_HELD_QPS)
		tc->held_qpn[tc->nheld++] = qpn;
}

/*
 * Doorbell batching (the rule is the transport's: ur_txq_hold_due): a post
 * of a QP that streams one-packet messages with PSNs in flight holds
 * its packet in the QP's held batch, and up to UR_IO_GSO_MAX_SEGS of them
 * leave as one GSO send, a system call per 32 messages instead of one each
 * (perftest's bandwidth tests post one WR per call). The batch leaves when
 * full, before anything else the QP sends, when the posting thread next
 * polls (held_flush: its burst ended), or at an ACK that leaves too few
 * PSNs on the wire to bring another (ur_txq_hold_keep).
 *
 * The rule sees the PSNs in flight when the post took the lock. ACKs that
 * a receiver left in the backlog meanwhile run at the post's unlock
 * (backlog_run) and may have answered all of them: the batch then has no
 * ACK coming and leaves at the thread's next poll. Counted after those
 * ACKs instead, a streaming ib_write_bw -s 64 held less and sent 2-7x
 * more datagrams (0.03-0.15 instead of 0.07-0.27 M msg/s, 4 interleaved
 * pairs); so such a hold is kept only while that poll is sure to send it
 * (held_room), and a QP beyond the thread's list sends at once.
 */
static bool post_holds(struct ur_qp *qp)
{
	struct ur_eqp *q = qp->io_priv;
	struct ur_tctx *tc = ur__thread();
	struct tx_batch *cur = tc->tx;
	bool small = ur__tx_single(cur);
	unsigned int held = ur__tx_count(q->held), n;
	bool hold = ur_txq_hold_due(small, q->last_small, q->unacked_at_lock,
				    held);

	q->last_small = small;
	if (hold && !held_room(tc, q->e, qp->qpn) &&
	    !ur_txq_hold_due(small, true,
			     ur_qp_unacked_below(qp, q->psn_at_lock), held))
		hold = false; /* no ACK due, and no poll would send it */
	if (!hold)
		return false;
	n = ur__tx_hold(cur, &q->held); /* 0: no memory for the batch */
	if (n) {
		q->e->dev.cnt.tx_held++;
		held_note(tc, q->e, qp->qpn);
		ur__poll_posting(q->e);
	}
	/* Full: the unlock sends what is held (this packet included). */
	return n && n < UR_IO_GSO_MAX_SEGS;
}

void ur_engine_qp_post_unlock(struct ur_engine *e, struct ur_qp *qp, bool sends,
			      uint64_t now)
{
	struct ur_eqp *q = qp->io_priv;

	if (!sends) {
		/* A receive makes nothing to send (an RNR NAKed requester
		 * retries on its own timer, 9.7.5.2.8), and arms no timer. */
		ur_engine_qp_unlock(qp);
		return;
	}
	if (qp->proto_conn) {
		/* A stream protocol: its bytes go to TCP, not the UDP path. */
		if (q && q->stream)
			ur__stream_kick(q->stream, now);
		ur_engine_qp_unlock(qp);
		return;
	}
	UR_LP_STAGE(UR_LPS_POSTED);
	if (q)
		backlog_run(qp, q);
	ur_qp_progress(qp, now);
	if (q && post_holds(qp)) {
		qp_locks_release(q); /* held: nothing to send now */
		timer_moved(e, UINT64_MAX, qp->deadline);
		return;
	}
	/* The ACKs deferred by the last poll go after our request, in the
	 * same system call (the unlock flushes). */
	if (ur__tx_pending(e->poll_tx) &&
	    !pthread_mutex_trylock(&e->rx_lock)) {
		ur__tx_adopt(ur__thread()->tx, e->poll_tx);
		if (!ur__tx_pending(e->poll_tx))
			atomic_store_explicit(&e->poll_tx_at, 0,
					      memory_order_relaxed);
		pthread_mutex_unlock(&e->rx_lock);
	}
	ur_engine_qp_unlock(qp);
	/* The post may have armed the timer already, so compare with
	 * "none", not with the deadline before the post. */
	timer_moved(e, UINT64_MAX, qp->deadline);
}

void ur_engine_qp_kick(struct ur_engine *e, struct ur_qp *qp)
{
	ur_engine_qp_lock(qp);
	ur_engine_qp_post_unlock(e, qp, true, ur_now());
}


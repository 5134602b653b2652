/* SPDX-License-Identifier: MIT */
/*
 * The application's side of the engine: a thread polling a CQ receives
 * inline (whoever holds rx_lock drains the socket), sends what its posts
 * held, and tells the engine whether it spins (then the engine leaves the
 * socket to it) or comes back late (then the engine takes the socket
 * over). The engine thread's loop is engine.c; docs/engine.md.
 */
#include <sched.h>

#include "ur_io_priv.h"

/*
 * A poll left ACKs in the poll batch (rx_lock held). The caller's next post
 * or poll sends them; if neither comes (a program that polled once, got its
 * completion and went on to other things), the engine thread does a recheck
 * period later (ack_due), waking up for it if it planned to sleep longer:
 * otherwise they waited for the next packet or timer, and the peer for its
 * retransmission timeout. A thread that spins on its CQ, whose engine looks
 * that often anyway, never pays a wake-up. Dekker with engine_main:
 * poll_tx_at then sleep_until here, the reverse there.
 */
static void poll_tx_mark(struct ur_engine *e, uint64_t now)
{
	uint64_t sleep;

	atomic_store(&e->poll_tx_at, now);
	sleep = atomic_load(&e->sleep_until);
	if (sleep && now + UR_IO_APP_RECHECK_NS < sleep)
		ur__engine_wake(e);
}

/*
 * The thread that held small posts polls a CQ: its burst of posts ended
 * (it waits for a completion now), so the held batch leaves at once
 * instead of at the next ACK, which may be what the poll waits for. By
 * QPN: the QP may have gone meanwhile. A QP locked by another thread is
 * left to that thread's unlock.
 */
static void held_flush(struct ur_engine *e, struct ur_tctx *tc)
{
	unsigned int n = tc->nheld;

	tc->held_e = NULL;
	tc->nheld = 0;
	pthread_rwlock_rdlock(&e->qp_lock);
	for (unsigned int i = 0; i < n; i++) {
		struct ur_qp *qp = ur__map_get(&e->qps, tc->held_qpn[i]);

		if (qp && ur__qp_trylock(qp)) {
			struct ur_eqp *q = qp->io_priv;

			if (q->held)
				ur__tx_flush_after(q->held, tc->tx);
			ur_engine_qp_unlock(qp);
		}
	}
	pthread_rwlock_unlock(&e->qp_lock);
}

uint64_t ur_engine_poll(struct ur_engine *e, const struct ur_cq *cq)
{
	uint64_t now = ur_now(), prev = atomic_exchange(&e->prev_poll, now);
	struct ur_tctx *tc = ur__thread();
	struct tx_batch *prev_tx;

	if (tc->held_e == e)
		held_flush(e, tc);
	/* Two empty polls within 10 us: a thread is spinning on its CQ. An
	 * event-driven program polls once and then blocks, and must not keep
	 * the engine from receiving for it. */
	if (now - prev < 10000) {
		int cpu = sched_getcpu();

		atomic_store(&e->last_poll, now);
		if (atomic_load_explicit(&e->poll_cpu, memory_order_relaxed) != cpu)
			atomic_store(&e->poll_cpu, cpu);
	}
	/* iWARP: the QPs' TCP streams (no rx_lock: each has its QP lock). */
	if (atomic_load_explicit(&e->nstreams, memory_order_relaxed))
		ur__stream_poll(e, cq);
	if (pthread_mutex_trylock(&e->rx_lock)) {
		/* Another thread drains, usually the engine thread, and it
		 * sends what the ACKs it takes let out (up to a window). If
		 * it last ran on this core, it waits for this core: spinning
		 * here took half a core from it (ib_write_bw -b 1 MiB doubled
		 * with the yield). A short hold (a timer, a look at the
		 * socket), or a holder on another core, is waited out
		 * without a system call. */
		if (++tc->lock_busy >= UR_IO_POLL_BUSY_YIELD &&
		    sched_getcpu() == atomic_load(&e->drain_cpu))
			sched_yield();
		return now;
	}
	tc->lock_busy = 0;
	/* ACKs made here wait in the engine's poll batch until the caller
	 * has its completion: they leave with its next post (in the same
	 * system call), or alone once held UR_IO_ACK_HOLD_NS, or from the
	 * engine thread; not on the latency path. */
	ur__poll_tx_flush_held(e, now);
	prev_tx = tc->tx;
	tc->tx = e->poll_tx;
	tc->polling = true;
	ur__udp_drain(e, e->rx_fd, now, false, cq);
	if (e->fwd_nin) /* a system call per poll only when siblings exist */
		ur__fwd_drain(e, now);
	if (e->npin)
		ur__pin_drain(e, now);
	tc->polling = false;
	tc->tx = prev_tx;
	if (!atomic_load_explicit(&e->poll_tx_at, memory_order_relaxed) &&
	    ur__tx_pending(e->poll_tx))
		poll_tx_mark(e, now);
	pthread_mutex_unlock(&e->rx_lock);
	/* Due timers (a paced send, a retransmission): on 2 CPUs with this
	 * thread spinning, the engine thread may wait milliseconds for one. */
	if (atomic_load(&e->next_deadline) <= now)
		ur__engine_run_timers(e, now);
	return now;
}

/* A saturating count, not an average: one preemption of a spinning poller
 * (milliseconds, on 2 CPUs) must not hand the socket to the engine thread
 * for the next several completions, each paying a wake-up. */
static void comp_left_step(struct ur_engine *e, bool left)
{
	int c = atomic_load(&e->comp_left);

	if (left ? c < UR_IO_APP_LEFT_MAX : c > 0)
		atomic_store(&e->comp_left, left ? c + 1 : c - 1);
}

void ur_engine_poll_done(struct ur_engine *e, int got, uint64_t now)
{
	uint64_t at = atomic_load(&e->comp_at);

	if (got == 0) {
		bool pending = ur__tx_pending(e->poll_tx);

		/* e.g. ib_write_lat: a WRITE makes no completion and the
		 * program spins on memory after this poll; ACKs held past
		 * UR_IO_ACK_HOLD_NS leave now rather than wait for a post. */
		if (pending && !pthread_mutex_trylock(&e->rx_lock)) {
			ur__poll_tx_flush_held(e, now);
			pthread_mutex_unlock(&e->rx_lock);
		}
		if (at) {
			bool late = now - at > UR_IO_APP_LEAVES_NS;

			if (late)
				__atomic_fetch_add(&e->dev.cnt.poll_late, 1,
						   __ATOMIC_RELAXED);
			comp_left_step(e, late);
			atomic_store(&e->comp_at, 0);
		}
		return;
	}
	if (at) /* no empty poll since the last completion: it stayed */
		comp_left_step(e, false);
	atomic_store(&e->comp_at, now);
	/* A poller that, after a completion, usually comes back only later
	 * (it spins on memory until the peer's next WRITE) must not keep the
	 * engine thread off the socket meanwhile. Each hand-over wakes the
	 * engine thread, which is waste for a poller that only came back late
	 * because it was descheduled (ranks outnumbering cores) or found its
	 * data already placed; a program whose pollers stay says so. */
	if (atomic_load(&e->comp_left) >= UR_IO_APP_LEFT_HAND &&
	    !atomic_load_explicit(&e->poller_stays, memory_order_relaxed) &&
	    ur_engine_app_blocks(e))
		__atomic_fetch_add(&e->dev.cnt.poll_handover, 1,
				   __ATOMIC_RELAXED);
}

/*
 * A post of this engine's device was held for its thread's next poll
 * (engine.c post_holds: a burst of small posts). A poller that posts such
 * a burst after its completion (ib_write_bw: a completion per 100 WRITEs
 * frees 100 slots, and refilling them takes longer than
 * UR_IO_APP_LEAVES_NS) is busy for this engine, not away spinning on
 * memory, and is known to poll again (held_flush). Counted as late, it
 * handed the socket to the engine thread at nearly every completion:
 * 3,401 hand-overs (engine wake-ups that took the core from the poller)
 * per 400,000 64-byte WRITEs.
 */
void ur__poll_posting(struct ur_engine *e)
{
	if (atomic_load_explicit(&e->comp_at, memory_order_relaxed)) {
		atomic_store(&e->comp_at, 0);
		comp_left_step(e, false);
	}
}

bool ur_engine_app_blocks(struct ur_engine *e)
{
	if (!atomic_exchange(&e->last_poll, 0))
		return false;
	atomic_store(&e->prev_poll, 0);
	ur__engine_wake(e); /* it may sleep on timers alone (app_polls) */
	return true;
}

void ur_engine_set_poller_stays(struct ur_engine *e, bool on)
{
	atomic_store(&e->poller_stays, on);
}

/* SPDX-License-Identifier: MIT */
/*
 * Non-blocking operations, point-to-point and groups: the progress
 * context of a communicator.
 *
 * Every operation, blocking or not, becomes a request in the FIFO of one
 * of the communicator's lanes. A lane is the communicator itself (lane 0)
 * or a hidden sub-communicator with its own QPs, CQ and staging slots
 * (split.c, made with the communicator); the k-th non-blocking collective
 * of a communicator goes to lane k mod nlanes, at every rank alike, and
 * blocking collectives, point-to-point, groups' batches and splits go to
 * lane 0. One executor
 * per lane at a time takes the head and runs it to completion with the
 * same code the blocking calls always ran (steps of ur__xfer, chunked and
 * pipelined through the staging slots), so operations of one lane
 * complete in issue order at every rank, which is what keeps their
 * signatures and message counts in step, while the lanes progress
 * together: several collectives of one communicator are in flight at once.
 *
 * The executor is either the communicator's progress thread, started with
 * the first non-blocking call, or a caller that waits (uroce_wait,
 * uroce_test without a progress thread, every blocking call) and finds no
 * executor busy: a blocking call on an idle communicator runs in the
 * caller's thread, as it did before, with no hand-off. The progress thread
 * sleeps on a condition variable while the queue is empty (no CPU), and
 * inside an operation waits the way every rank waits (spin, then sleep on
 * the completion channel), so an application that sleeps or computes
 * still gets its operations done.
 *
 * Point-to-point messages are streams to one peer whose signature carries
 * a per-pair message number and the tag: sends and receives between two
 * ranks match in issue order, and a different tag or count is an error,
 * not a reordering. Between a group's start and end, non-blocking
 * operations are held back; at the end, each run of consecutive sends and
 * receives becomes one request whose streams all progress at once (one
 * ur__xfer), so exchanges that would deadlock one by one do not.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_internal.h"
#include "ur_settings.h"

enum ur_req_kind {
	R_ALLREDUCE, R_REDUCE, R_BROADCAST, R_ALLGATHER, R_REDUCESCATTER,
	R_ALLTOALL, R_ALLTOALLV, R_BARRIER, R_P2P, R_BATCH, R_SPLIT
};

enum { S_GROUP, S_QUEUED, S_DONE };

struct uroce_request {
	struct uroce_request *next; /* the queue, or the open group */
	struct uroce_comm *c;
	int kind;
	int state;
	int result;
	const void *sbuf;
	void *rbuf;
	size_t count;
	enum uroce_dtype dt;
	enum uroce_redop op;
	int root;    /* p2p: the peer */
	int tag;
	int send;
	size_t *v;   /* alltoallv: counts and displacements (4 x size) */
	struct uroce_request **items; /* batch: its sends and receives */
	int nitems;
	int color, key;
	struct uroce_comm **out;
	uroce_notify_fn notify; /* uroce_request_notify */
	void *notify_arg;
};

/* A completion callback to make once the lock is dropped. */
struct ur_note {
	uroce_notify_fn fn;
	void *arg;
	int result;
};

int ur__nbc_init(struct uroce_comm *c)
{
	struct ur_nbc *q = &c->nbc;

	if (pthread_mutex_init(&q->lock, NULL))
		return -ENOMEM;
	if (pthread_cond_init(&q->work, NULL)) {
		pthread_mutex_destroy(&q->lock);
		return -ENOMEM;
	}
	if (pthread_cond_init(&q->done, NULL)) {
		pthread_cond_destroy(&q->work);
		pthread_mutex_destroy(&q->lock);
		return -ENOMEM;
	}
	q->no_thread = !ur_setting_val("UROCE_COLL_PROGRESS");
	/* Lanes need a progress thread each: without threads, a wait runs
	 * only its own lane, and ranks waiting in different orders would
	 * each run a different lane. */
	c->want_lanes = q->no_thread ? 1 : (int)ur_setting_val("UROCE_COLL_LANES");
	q->inited = 1;
	return 0;
}

/* A batch of point-to-point streams, all in flight at once. */
static int run_p2p(struct uroce_comm *c, struct uroce_request **it, int n)
{
	struct ur_xop *x;
	int e;

	if (c->failed)
		return c->failed;
	x = calloc((size_t)n, sizeof(*x));
	if (!x)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		struct uroce_request *r = it[i];
		size_t bytes = r->count * uroce_dtype_size(r->dt);
		uint32_t seq = r->send ? c->p2p_sent[r->root]++ : c->p2p_rcvd[r->root]++;
		uint32_t sig = ur__sig_seq(seq, UR_C_P2P, r->dt, UROCE_SUM, r->count,
					    r->tag);

		ur__xop(&x[i], r->send ? UR_X_SEND : UR_X_RECV, r->root,
			 r->send ? (void *)r->sbuf : r->rbuf, bytes, sig);
		/* Both ends are plain streams: large ones go straight into
		 * the receiver's buffer when it is registered. */
		x[i].direct = UR_DIRECT_SIZED;
		ur__reg_hint(c, x[i].buf, bytes, !r->send);
	}
	c->last_algo = "p2p";
	e = ur__xfer(c, x, n, UROCE_UINT8, UROCE_SUM);
	free(x);
	return e;
}

static void enqueue(struct uroce_comm *c, struct uroce_request *r);
static void kick(struct uroce_comm *c);
static void wait_locked(struct uroce_comm *c, struct uroce_request *r);

static int run_one(struct uroce_comm *c, struct uroce_request *r)
{
	int n = c->size;

	switch (r->kind) {
	case R_ALLREDUCE:
		return ur__run_allreduce(c, r->sbuf, r->rbuf, r->count, r->dt, r->op);
	case R_REDUCE:
		return ur__run_reduce(c, r->sbuf, r->rbuf, r->count, r->dt, r->op, r->root);
	case R_BROADCAST:
		return ur__run_broadcast(c, r->sbuf, r->rbuf, r->count, r->dt, r->root);
	case R_ALLGATHER:
		return ur__run_allgather(c, r->sbuf, r->rbuf, r->count, r->dt);
	case R_REDUCESCATTER:
		return ur__run_reduce_scatter(c, r->sbuf, r->rbuf, r->count, r->dt, r->op);
	case R_ALLTOALL:
		return ur__run_alltoall(c, r->sbuf, r->rbuf, r->count, r->dt);
	case R_ALLTOALLV:
		return ur__run_alltoallv(c, r->sbuf, r->v, r->v + n, r->rbuf, r->v + 2 * n,
					 r->v + 3 * n, r->dt);
	case R_BARRIER:
		return ur__run_barrier(c);
	case R_P2P:
		return run_p2p(c, &r, 1);
	case R_BATCH:
		return run_p2p(c, r->items, r->nitems);
	case R_SPLIT: {
		int e = ur__run_split(c, r->color, r->key, r->out);
		/* Every member of the new communicator makes its lanes. */
		if (!e && *r->out)
			e = ur__lanes_init(*r->out);
		if (e && *r->out) {
			ur__comm_free(*r->out);
			*r->out = NULL;
			__atomic_fetch_sub(&c->children, 1, __ATOMIC_ACQ_REL);
		}
		return e;
	}
	}
	return -EINVAL;
}

/*
 * Part k of r for rail k (rails.c): a contiguous part of every vector, or
 * of every block of an all-to-all, as an alltoallv with the blocks'
 * parts (allgather too: every peer gets the same part of our input).
 * src: r's input, or its copy when r is in place and blocks move.
 */
static int rail_part(struct uroce_comm *c, const struct uroce_request *r,
		     const char *src, int k, struct uroce_request *p)
{
	int n = c->size;
	size_t es = uroce_dtype_size(r->dt), off, cnt;

	*p = *r;
	p->next = NULL;
	p->notify = NULL;
	p->v = NULL;
	p->state = S_QUEUED;
	switch (r->kind) {
	case R_ALLREDUCE: case R_REDUCE: case R_BROADCAST:
		cnt = ur__rail_part(c, r->count, es, k, &off);
		p->count = cnt;
		/* A non-root's buffer of broadcast or reduce may be NULL. */
		p->sbuf = r->sbuf ? (const char *)r->sbuf + off * es : NULL;
		p->rbuf = r->rbuf ? (char *)r->rbuf + off * es : NULL;
		return 0;
	case R_ALLTOALL: case R_ALLGATHER: case R_ALLTOALLV:
		break;
	default:
		return -EINVAL;
	}
	p->v = malloc(sizeof(size_t) * 4 * (size_t)n);
	if (!p->v)
		return -ENOMEM;
	p->kind = R_ALLTOALLV;
	p->sbuf = src;
	for (int j = 0; j < n; j++) {
		size_t *sc = p->v, *sd = p->v + n, *rc = p->v + 2 * n, *rd = p->v + 3 * n;

		if (r->kind == R_ALLTOALLV) {
			sc[j] = ur__rail_part(c, r->v[j], es, k, &off);
			sd[j] = r->v[n + j] + off;
			rc[j] = ur__rail_part(c, r->v[2 * n + j], es, k, &off);
			rd[j] = r->v[3 * n + j] + off;
			continue;
		}
		sc[j] = rc[j] = ur__rail_part(c, r->count, es, k, &off);
		sd[j] = (r->kind == R_ALLGATHER ? 0 : (size_t)j * r->count) + off;
		rd[j] = (size_t)j * r->count + off;
	}
	return 0;
}

/* Is r striped over c's rails? Every rank decides alike: from counts
 * that are the same at every rank (alltoallv: always, each pair's block
 * split by its own count). */
static int striped(struct uroce_comm *c, const struct uroce_request *r)
{
	size_t es = uroce_dtype_size(r->dt);

	if (c->nrails <= 1)
		return 0;
	switch (r->kind) {
	case R_ALLREDUCE: case R_REDUCE: case R_BROADCAST:
	case R_ALLTOALL: case R_ALLGATHER:
		return r->count * es >= UR_RAIL_MIN;
	case R_ALLTOALLV:
		return 1;
	default:
		return 0;
	}
}

/* The input bytes of an all-to-all or allgather (to copy when in place). */
static size_t in_extent(const struct uroce_comm *c, const struct uroce_request *r,
			size_t es, size_t *rext)
{
	int n = c->size;
	size_t ext = 0;

	*rext = 0;
	if (r->kind == R_ALLTOALLV) {
		for (int j = 0; j < n; j++) {
			if (r->v[j] && (r->v[n + j] + r->v[j]) * es > ext)
				ext = (r->v[n + j] + r->v[j]) * es;
			if (r->v[2 * n + j] && (r->v[3 * n + j] + r->v[2 * n + j]) * es > *rext)
				*rext = (r->v[3 * n + j] + r->v[2 * n + j]) * es;
		}
		return ext;
	}
	if (r->kind == R_ALLTOALL || r->kind == R_ALLGATHER) {
		*rext = r->count * es * (size_t)n;
		return r->kind == R_ALLTOALL ? *rext : r->count * es;
	}
	return 0;
}

/*
 * r striped over the rails: part k queued on rail k (its progress thread
 * runs it), part 0 run here, then every part waited for. Each rail runs
 * its parts in the order the communicator's executor queues them, the
 * same at every rank, so the parts of one collective meet on every rail.
 */
static int run_rails(struct uroce_comm *c, struct uroce_request *r)
{
	int nr = c->nrails, e = 0, queued = 0;
	size_t es = uroce_dtype_size(r->dt), rext, ext = in_extent(c, r, es, &rext);
	struct uroce_request *parts = calloc((size_t)nr, sizeof(*parts));
	const char *src = r->sbuf;
	char *copy = NULL;

	if (!parts)
		return ur__fail(c, -ENOMEM, "rails: out of memory");
	/* In place, blocks that one rail sends would be overwritten by
	 * another rail's receive: the parts read a copy of the input. */
	if (ext && ur__overlaps(r->sbuf, ext, r->rbuf, rext)) {
		copy = malloc(ext);
		if (!copy) {
			free(parts);
			return ur__fail(c, -ENOMEM, "rails: out of memory");
		}
		ur_copy(copy, r->sbuf, ext);
		src = copy;
	}
	for (int k = 0; k < nr; k++) {
		e = rail_part(c, r, src, k, &parts[k]);
		if (e) {
			e = ur__fail(c, e, "rails: out of memory");
			nr = k; /* queue none; free what was made */
			break;
		}
	}
	for (int k = 1; k < nr && !e; k++) {
		struct uroce_comm *rc = c->rails[k];

		pthread_mutex_lock(&rc->nbc.lock);
		enqueue(rc, &parts[k]);
		kick(rc);
		pthread_mutex_unlock(&rc->nbc.lock);
		queued = k + 1;
	}
	if (!e)
		e = run_one(c, &parts[0]);
	/* Every queued part is waited for, failed or not: it is ours. */
	for (int k = 1; k < queued; k++) {
		struct uroce_comm *rc = c->rails[k];

		pthread_mutex_lock(&rc->nbc.lock);
		wait_locked(rc, &parts[k]);
		pthread_mutex_unlock(&rc->nbc.lock);
		if (!e)
			e = parts[k].result;
	}
	for (int k = 0; k < nr; k++)
		free(parts[k].v);
	free(parts);
	free(copy);
	if (!e)
		c->last_algo = c->rails[1]->last_algo; /* part 0 may be empty */
	return e;
}

static int run(struct uroce_comm *c, struct uroce_request *r)
{
	return striped(c, r) ? run_rails(c, r) : run_one(c, r);
}

/* Lock held. A batch is ours: its items are the caller's. */
static void finish(struct uroce_request *r, int e)
{
	if (r->kind == R_BATCH) {
		for (int i = 0; i < r->nitems; i++) {
			r->items[i]->result = e;
			r->items[i]->state = S_DONE;
		}
		free(r->items);
		free(r);
		return;
	}
	r->result = e;
	r->state = S_DONE;
}

/*
 * Lock held: complete r, wake the waiters, and make the completion
 * callbacks of r (a batch: of its items) with the lock dropped. Once r is
 * done a waiter may free it, so the callbacks are copied first.
 */
static void complete(struct ur_nbc *q, struct uroce_request *r, int e)
{
	struct ur_note one, *notes = &one;
	int n = 0;

	if (r->kind == R_BATCH) {
		int want = 0;
		for (int i = 0; i < r->nitems; i++)
			want += r->items[i]->notify != NULL;
		notes = want ? malloc(sizeof(*notes) * (size_t)want) : NULL;
		for (int i = 0; notes && i < r->nitems; i++)
			if (r->items[i]->notify)
				notes[n++] = (struct ur_note){ r->items[i]->notify,
							       r->items[i]->notify_arg, e };
		/* Out of memory: the callbacks are made under the lock. */
		for (int i = 0; !notes && i < r->nitems; i++)
			if (r->items[i]->notify)
				r->items[i]->notify(r->items[i]->notify_arg, e);
	} else if (r->notify) {
		one = (struct ur_note){ r->notify, r->notify_arg, e };
		n = 1;
	}
	finish(r, e);
	if (q->waiters)
		pthread_cond_broadcast(&q->done);
	if (n) {
		pthread_mutex_unlock(&q->lock);
		for (int i = 0; i < n; i++)
			notes[i].fn(notes[i].arg, notes[i].result);
		pthread_mutex_lock(&q->lock);
	}
	if (notes != &one)
		free(notes);
}

/* Lock held, no executor, queue not empty: become the executor for the
 * head request (the lock is dropped while it runs). The progress thread
 * (by_thread) spins for its own time before it sleeps. */
static void run_head(struct uroce_comm *c, int by_thread)
{
	struct ur_nbc *q = &c->nbc;
	struct uroce_request *r = q->head;
	int e;

	q->head = r->next;
	if (!q->head)
		q->tail = NULL;
	q->exec = 1;
	c->cur_spin_ns = by_thread ? c->pspin_ns : c->spin_ns;
	pthread_mutex_unlock(&q->lock);
	e = run(c, r);
	if (c->owner) /* a lane: the communicator's last algorithm */
		__atomic_store_n(&c->owner->last_algo, c->last_algo, __ATOMIC_RELAXED);
	pthread_mutex_lock(&q->lock);
	q->exec = 0;
	complete(q, r, e);
	if (q->head && q->thread_on)
		pthread_cond_signal(&q->work);
}

static void *progress_main(void *arg)
{
	struct uroce_comm *c = arg;
	struct ur_nbc *q = &c->nbc;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		if (q->head && !q->exec) {
			run_head(c, 1);
			continue;
		}
		if (q->stop)
			break;
		pthread_cond_wait(&q->work, &q->lock);
		/* Woken by an i-call: let its thread run first. If it waits at
		 * once it runs the operation itself, without the two hand-offs
		 * (us, then its wake-up) that doubled a 4 KiB iallreduce +
		 * wait; if it computes or sleeps, we get the core back. */
		pthread_mutex_unlock(&q->lock);
		sched_yield();
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* Lock held. */
static void enqueue(struct uroce_comm *c, struct uroce_request *r)
{
	struct ur_nbc *q = &c->nbc;

	r->next = NULL;
	r->state = S_QUEUED;
	if (q->tail)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
}

/* Lock held: a non-blocking request is queued; wake or start the thread. */
static void kick(struct uroce_comm *c)
{
	struct ur_nbc *q = &c->nbc;

	if (q->no_thread)
		return;
	if (!q->thread_on) {
		if (pthread_create(&q->thread, NULL, progress_main, c)) {
			/* Without a thread, waits still progress. */
			fprintf(stderr, "uroce_coll: rank %d: no progress thread; operations progress in wait/test only\n",
				c->rank);
			q->no_thread = 1;
			return;
		}
		q->thread_on = 1;
	}
	if (!q->exec)
		pthread_cond_signal(&q->work);
}

/* Lock held: until r is done, run the queue ourselves or sleep. */
static void wait_locked(struct uroce_comm *c, struct uroce_request *r)
{
	struct ur_nbc *q = &c->nbc;

	while (r->state != S_DONE) {
		if (!q->exec && q->head) {
			run_head(c, 0);
		} else {
			q->waiters++;
			pthread_cond_wait(&q->done, &q->lock);
			q->waiters--;
		}
	}
}

void ur__nbc_fini(struct uroce_comm *c)
{
	struct ur_nbc *q = &c->nbc;

	if (!q->inited)
		return;
	pthread_mutex_lock(&q->lock);
	while (q->head || q->exec) {
		if (!q->exec) {
			run_head(c, 0);
		} else {
			q->waiters++;
			pthread_cond_wait(&q->done, &q->lock);
			q->waiters--;
		}
	}
	q->stop = 1;
	if (q->thread_on)
		pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->lock);
	if (q->thread_on) {
		pthread_join(q->thread, NULL);
		q->thread_on = 0;
	}
}

int ur__nbc_barrier_now(struct uroce_comm *c)
{
	return ur__run_barrier(c);
}

static void req_free(struct uroce_request *r)
{
	if (!r)
		return;
	free(r->v);
	free(r);
}

/*
 * The lane of a new operation of kind k: non-blocking collectives
 * round-robin (every rank counts the same calls: MPI never matches a
 * blocking collective with a non-blocking one), everything else on the
 * communicator itself. So a blocking call takes exactly the path it took
 * before there were lanes.
 */
static struct uroce_comm *lane_of(struct uroce_comm *c, int k, int nonblocking)
{
	if (!c->nlanes || !nonblocking || k == R_P2P || k == R_BATCH || k == R_SPLIT)
		return c;
	return c->lanes[__atomic_fetch_add(&c->lane_next, 1, __ATOMIC_RELAXED) %
			(uint64_t)c->nlanes];
}

/*
 * Issue t: with req NULL, run it and wait (the blocking calls), else
 * queue a copy and hand it out. Inside a group the copy waits for
 * uroce_group_end (on the communicator, whatever its lane); a blocking
 * call there would wait for itself.
 */
static int issue(struct uroce_comm *c, struct uroce_request *t,
		 uroce_request_t **req)
{
	struct ur_nbc *q = &c->nbc, *lq;
	struct uroce_request *r;
	int group;

	pthread_mutex_lock(&q->lock);
	group = q->in_group;
	pthread_mutex_unlock(&q->lock);
	if (group && !req) {
		free(t->v);
		return -EINVAL;
	}
	t->c = lane_of(c, t->kind, req != NULL);
	lq = &t->c->nbc;
	if (!req) {
		pthread_mutex_lock(&lq->lock);
		enqueue(t->c, t);
		wait_locked(t->c, t);
		pthread_mutex_unlock(&lq->lock);
		free(t->v);
		return t->result;
	}
	*req = NULL;
	r = malloc(sizeof(*r));
	if (!r) {
		free(t->v);
		return -ENOMEM;
	}
	*r = *t;
	if (group) {
		pthread_mutex_lock(&q->lock);
		r->state = S_GROUP;
		r->next = NULL;
		if (q->gtail)
			q->gtail->next = r;
		else
			q->ghead = r;
		q->gtail = r;
		pthread_mutex_unlock(&q->lock);
	} else {
		pthread_mutex_lock(&lq->lock);
		enqueue(r->c, r);
		kick(r->c);
		pthread_mutex_unlock(&lq->lock);
	}
	*req = r;
	return 0;
}

static int check(const struct uroce_comm *c, enum uroce_dtype dt,
		 enum uroce_redop op, int root)
{
	if (!c)
		return -EINVAL;
	int f = __atomic_load_n(&c->failed, __ATOMIC_RELAXED);
	if (f)
		return f;
	if ((unsigned)dt >= UROCE_DTYPE_MAX || (unsigned)op >= UROCE_REDOP_MAX ||
	    root < 0 || root >= c->size)
		return -EINVAL;
	return 0;
}

#define REQ(k) (struct uroce_request){ .kind = (k), .sbuf = sendbuf, .rbuf = recvbuf, \
				       .count = count, .dt = dt }

/* Issue @t, a collective with a send and a receive buffer on every rank
 * (allreduce, allgather, reduce-scatter, all-to-all), after the checks. */
static int issue_both(uroce_comm_t *c, struct uroce_request *t,
		      enum uroce_redop op, uroce_request_t **req)
{
	int e = check(c, t->dt, op, 0);

	if (e)
		return e;
	if (t->count && (!t->sbuf || !t->rbuf))
		return -EINVAL;
	t->op = op;
	return issue(c, t, req);
}

int uroce_iallreduce(uroce_comm_t *c, const void *sendbuf, void *recvbuf,
		     size_t count, enum uroce_dtype dt, enum uroce_redop op,
		     uroce_request_t **req)
{
	struct uroce_request t = REQ(R_ALLREDUCE);

	return issue_both(c, &t, op, req);
}

int uroce_allreduce(uroce_comm_t *c, const void *sendbuf, void *recvbuf,
		    size_t count, enum uroce_dtype dt, enum uroce_redop op)
{
	return uroce_iallreduce(c, sendbuf, recvbuf, count, dt, op, NULL);
}

int uroce_ireduce(uroce_comm_t *c, const void *sendbuf, void *recvbuf,
		  size_t count, enum uroce_dtype dt, enum uroce_redop op,
		  int root, uroce_request_t **req)
{
	struct uroce_request t = REQ(R_REDUCE);
	int e = check(c, dt, op, root);

	if (e)
		return e;
	if (count && (!sendbuf || (c->rank == root && !recvbuf)))
		return -EINVAL;
	t.op = op;
	t.root = root;
	return issue(c, &t, req);
}

int uroce_reduce(uroce_comm_t *c, const void *sendbuf, void *recvbuf,
		 size_t count, enum uroce_dtype dt, enum uroce_redop op, int root)
{
	return uroce_ireduce(c, sendbuf, recvbuf, count, dt, op, root, NULL);
}

int uroce_ibroadcast(uroce_comm_t *c, const void *sendbuf, void *recvbuf,
		     size_t count, enum uroce_dtype dt, int root,
		     uroce_request_t **req)
{
	struct uroce_request t = REQ(R_BROADCAST);
	int e = check(c, dt, UROCE_SUM, root);

	if (e)
		return e;
	if (count && (!recvbuf || (c->rank == root && !sendbuf)))
		return -EINVAL;
	t.root = root;
	return issue(c, &t, req);
}

int uroce_broadcast(uroce_comm_t *c, const void *sendbuf, void *recvbuf,
		    size_t count, enum uroce_dtype dt, int root)
{
	return uroce_ibroadcast(c, sendbuf, recvbuf, count, dt, root, NULL);
}

int uroce_iallgather(uroce_comm_t *c, const void *sendbuf, void *recvbuf,
		     size_t count, enum uroce_dtype dt, uroce_request_t **req)
{
	struct uroce_request t = REQ(R_ALLGATHER);

	return issue_both(c, &t, UROCE_SUM, req);
}

int uroce_allgather(uroce_comm_t *c, const void *sendbuf, void *recvbuf,
		    size_t sendcount, enum uroce_dtype dt)
{
	return uroce_iallgather(c, sendbuf, recvbuf, sendcount, dt, NULL);
}

int uroce_ireduce_scatter(uroce_comm_t *c, const void *sendbuf, void *recvbuf,
			  size_t count, enum uroce_dtype dt,
			  enum uroce_redop op, uroce_request_t **req)
{
	struct uroce_request t = REQ(R_REDUCESCATTER);

	return issue_both(c, &t, op, req);
}

int uroce_reduce_scatter(uroce_comm_t *c, const void *sendbuf, void *recvbuf,
			 size_t recvcount, enum uroce_dtype dt,
			 enum uroce_redop op)
{
	return uroce_ireduce_scatter(c, sendbuf, recvbuf, recvcount, dt, op, NULL);
}

int uroce_ialltoall(uroce_comm_t *c, const void *sendbuf, void *recvbuf,
		    size_t count, enum uroce_dtype dt, uroce_request_t **req)
{
	struct uroce_request t = REQ(R_ALLTOALL);

	return issue_both(c, &t, UROCE_SUM, req);
}

int uroce_alltoall(uroce_comm_t *c, const void *sendbuf, void *recvbuf,
		   size_t count, enum uroce_dtype dt)
{
	return uroce_ialltoall(c, sendbuf, recvbuf, count, dt, NULL);
}

int uroce_ialltoallv(uroce_comm_t *c, const void *sendbuf,
		     const size_t *sendcounts, const size_t *sdispls,
		     void *recvbuf, const size_t *recvcounts,
		     const size_t *rdispls, enum uroce_dtype dt,
		     uroce_request_t **req)
{
	size_t count = 0;
	struct uroce_request t = REQ(R_ALLTOALLV);
	int e = check(c, dt, UROCE_SUM, 0), n;

	if (e)
		return e;
	if (!sendcounts || !sdispls || !recvcounts || !rdispls)
		return -EINVAL;
	/* The arrays are copied: the caller may reuse them at once. */
	n = c->size;
	t.v = malloc(sizeof(size_t) * 4 * (size_t)n);
	if (!t.v)
		return -ENOMEM;
	memcpy(t.v, sendcounts, sizeof(size_t) * (size_t)n);
	memcpy(t.v + n, sdispls, sizeof(size_t) * (size_t)n);
	memcpy(t.v + 2 * n, recvcounts, sizeof(size_t) * (size_t)n);
	memcpy(t.v + 3 * n, rdispls, sizeof(size_t) * (size_t)n);
	return issue(c, &t, req);
}

int uroce_alltoallv(uroce_comm_t *c, const void *sendbuf,
		    const size_t *sendcounts, const size_t *sdispls,
		    void *recvbuf, const size_t *recvcounts,
		    const size_t *rdispls, enum uroce_dtype dt)
{
	return uroce_ialltoallv(c, sendbuf, sendcounts, sdispls, recvbuf,
				recvcounts, rdispls, dt, NULL);
}

int uroce_ibarrier(uroce_comm_t *c, uroce_request_t **req)
{
	struct uroce_request t = { .kind = R_BARRIER };
	int e = check(c, UROCE_UINT8, UROCE_SUM, 0);

	return e ? e : issue(c, &t, req);
}

int uroce_barrier(uroce_comm_t *c)
{
	return uroce_ibarrier(c, NULL);
}

static int p2p(uroce_comm_t *c, int send, const void *sbuf, void *rbuf,
	       size_t count, enum uroce_dtype dt, int peer, int tag,
	       uroce_request_t **req)
{
	struct uroce_request t = { .kind = R_P2P, .sbuf = sbuf, .rbuf = rbuf,
				   .count = count, .dt = dt, .root = peer,
				   .tag = tag, .send = send };
	int e = check(c, dt, UROCE_SUM, peer < 0 ? 0 : peer);

	if (e)
		return e;
	/* A rank's message to itself would be a copy; none of the
	 * collectives needs one from here. */
	if (peer < 0 || peer == c->rank || tag < 0 || (count && !sbuf && !rbuf))
		return -EINVAL;
	return issue(c, &t, req);
}

int uroce_isend(uroce_comm_t *c, const void *buf, size_t count,
		enum uroce_dtype dt, int peer, int tag, uroce_request_t **req)
{
	return p2p(c, 1, buf, NULL, count, dt, peer, tag, req);
}

int uroce_irecv(uroce_comm_t *c, void *buf, size_t count, enum uroce_dtype dt,
		int peer, int tag, uroce_request_t **req)
{
	return p2p(c, 0, NULL, buf, count, dt, peer, tag, req);
}

int uroce_send(uroce_comm_t *c, const void *buf, size_t count,
	       enum uroce_dtype dt, int peer, int tag)
{
	return p2p(c, 1, buf, NULL, count, dt, peer, tag, NULL);
}

int uroce_recv(uroce_comm_t *c, void *buf, size_t count, enum uroce_dtype dt,
	       int peer, int tag)
{
	return p2p(c, 0, NULL, buf, count, dt, peer, tag, NULL);
}

int uroce_group_start(uroce_comm_t *c)
{
	int e = 0;

	if (!c)
		return -EINVAL;
	pthread_mutex_lock(&c->nbc.lock);
	if (c->nbc.in_group)
		e = -EINVAL; /* no nesting */
	else
		c->nbc.in_group = 1;
	pthread_mutex_unlock(&c->nbc.lock);
	return e;
}

/* Queue the group: each run of consecutive sends and receives as one
 * batch, collectives as themselves (on the lanes they were given when
 * issued), in issue order. */
int uroce_group_end(uroce_comm_t *c)
{
	struct ur_nbc *q;
	struct uroce_request *r, *next;
	int e = 0;

	if (!c)
		return -EINVAL;
	q = &c->nbc;
	pthread_mutex_lock(&q->lock);
	if (!q->in_group) {
		pthread_mutex_unlock(&q->lock);
		return -EINVAL;
	}
	r = q->ghead;
	q->ghead = q->gtail = NULL;
	q->in_group = 0;
	while (r) {
		if (r->kind != R_P2P && r->c != c) {
			/* Another lane (lock order: the communicator, then
			 * a lane). */
			struct ur_nbc *lq = &r->c->nbc;
			next = r->next;
			pthread_mutex_lock(&lq->lock);
			enqueue(r->c, r);
			kick(r->c);
			pthread_mutex_unlock(&lq->lock);
			r = next;
			continue;
		}
		if (r->kind != R_P2P) {
			next = r->next;
			enqueue(c, r);
			r = next;
			continue;
		}
		int n = 0;
		for (struct uroce_request *s = r; s && s->kind == R_P2P; s = s->next)
			n++;
		struct uroce_request *b = calloc(1, sizeof(*b));
		struct uroce_request **it = calloc((size_t)n, sizeof(*it));
		if (!b || !it) {
			free(b);
			free(it);
			/* Fail these requests rather than lose them. */
			for (int i = 0; i < n; i++, r = next) {
				next = r->next;
				complete(q, r, e = -ENOMEM);
			}
			continue;
		}
		b->kind = R_BATCH;
		b->c = c;
		b->items = it;
		b->nitems = n;
		for (int i = 0; i < n; i++, r = next) {
			next = r->next;
			it[i] = r;
			r->state = S_QUEUED;
		}
		enqueue(c, b);
	}
	if (q->head)
		kick(c);
	pthread_mutex_unlock(&q->lock);
	return e;
}

int uroce_test(uroce_request_t **req, int *done)
{
	struct uroce_request *r;
	struct ur_nbc *q;
	int e;

	if (!req || !done)
		return -EINVAL;
	r = *req;
	if (!r) {
		*done = 1;
		return 0;
	}
	q = &r->c->nbc;
	pthread_mutex_lock(&q->lock);
	if (r->state == S_GROUP) {
		pthread_mutex_unlock(&q->lock);
		return -EINVAL;
	}
	/* Without a progress thread, testing progresses: it runs the next
	 * queued operation if nobody else does. */
	if (r->state != S_DONE && !q->thread_on && !q->exec && q->head)
		run_head(r->c, 0);
	*done = r->state == S_DONE;
	pthread_mutex_unlock(&q->lock);
	if (!*done)
		return 0;
	e = r->result;
	req_free(r);
	*req = NULL;
	return e;
}

int uroce_wait(uroce_request_t **req)
{
	struct uroce_request *r;
	struct ur_nbc *q;
	int e;

	if (!req)
		return -EINVAL;
	r = *req;
	if (!r)
		return 0;
	q = &r->c->nbc;
	pthread_mutex_lock(&q->lock);
	if (r->state == S_GROUP) {
		/* It would wait for itself: end the group first. */
		pthread_mutex_unlock(&q->lock);
		return -EINVAL;
	}
	wait_locked(r->c, r);
	pthread_mutex_unlock(&q->lock);
	e = r->result;
	req_free(r);
	*req = NULL;
	return e;
}

int uroce_request_notify(uroce_request_t *r, uroce_notify_fn fn, void *arg)
{
	struct ur_nbc *q;
	int now;

	if (!r || !fn)
		return -EINVAL;
	q = &r->c->nbc;
	pthread_mutex_lock(&q->lock);
	if (r->notify) {
		pthread_mutex_unlock(&q->lock);
		return -EINVAL;
	}
	/* Kept even when the request is already complete (called below,
	 * at once): a second callback is refused either way. */
	now = r->state == S_DONE;
	r->notify = fn;
	r->notify_arg = arg;
	pthread_mutex_unlock(&q->lock);
	if (now)
		fn(arg, r->result);
	return 0;
}

int uroce_waitall(int n, uroce_request_t **reqs)
{
	int first = 0;

	if (n < 0 || (n && !reqs))
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		int e = uroce_wait(&reqs[i]);
		if (e && !first)
			first = e;
	}
	return first;
}

int uroce_comm_split(uroce_comm_t *c, int color, int key, uroce_comm_t **out)
{
	struct uroce_request t = { .kind = R_SPLIT, .color = color, .key = key,
				   .out = out };
	int e;

	if (!out)
		return -EINVAL;
	*out = NULL;
	e = check(c, UROCE_UINT8, UROCE_SUM, 0);
	if (e)
		return e;
	if (color < 0 && color != UROCE_UNDEFINED)
		return -EINVAL;
	return issue(c, &t, NULL);
}

int uroce_comm_split_ranks(uroce_comm_t *c, const int *ranks, int n,
			   uroce_comm_t **out)
{
	int key = -1;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!c || n < 1 || n > c->size || !ranks)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		if (ranks[i] < 0 || ranks[i] >= c->size)
			return -EINVAL;
		for (int j = 0; j < i; j++)
			if (ranks[j] == ranks[i])
				return -EINVAL;
		if (ranks[i] == c->rank)
			key = i;
	}
	return uroce_comm_split(c, key < 0 ? UROCE_UNDEFINED : 0, key < 0 ? 0 : key, out);
}

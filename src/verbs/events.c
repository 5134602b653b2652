// SPDX-License-Identifier: MIT
/*
 * Event delivery: completion channels and the async event queue.
 *
 * Each queue is a FIFO plus an eventfd whose count is 1 while the FIFO
 * holds events and 0 when it is empty, changed only under the queue's
 * lock, so the fd polls readable exactly while events wait, also after a
 * destroy dropped some (as the kernel's uverbs event files, which drop a
 * destroyed object's events from their list). A reader waits in poll()
 * and pops under the lock; an application that made the fd O_NONBLOCK
 * gets EAGAIN. The engine thread pushes from the host ops.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "urv.h"

int urv__evq_init(struct urv_evq *q)
{
	q->fd = eventfd(0, EFD_CLOEXEC);
	if (q->fd < 0)
		return -errno;
	pthread_mutex_init(&q->lock, NULL);
	q->head = NULL;
	q->tail = &q->head;
	return 0;
}

void urv__evq_fini(struct urv_evq *q)
{
	struct urv_event *e, *n;

	for (e = q->head; e; e = n) {
		n = e->next;
		free(e);
	}
	close(q->fd);
	pthread_mutex_destroy(&q->lock);
}

/* Under q->lock: the count follows the FIFO (0 -> 1 at the first event,
 * 1 -> 0 when the last goes; a read of 1 never blocks). */
static void evq_mark(struct urv_evq *q, bool was_empty)
{
	uint64_t v = 1;

	if (was_empty && q->head) {
		if (write(q->fd, &v, sizeof(v)) != sizeof(v))
			(void)0; /* overflow is not reachable: the count is 0 */
	} else if (!was_empty && !q->head) {
		if (read(q->fd, &v, sizeof(v)) != sizeof(v))
			(void)0; /* the count was 1, under our lock */
	}
}

void urv__evq_push(struct urv_evq *q, struct urv_event *e)
{
	bool was_empty;

	e->next = NULL;
	pthread_mutex_lock(&q->lock);
	was_empty = !q->head;
	*q->tail = e;
	q->tail = &e->next;
	evq_mark(q, was_empty);
	pthread_mutex_unlock(&q->lock);
}

int urv__evq_pop(struct urv_evq *q, struct urv_event **out)
{
	struct pollfd p = { .fd = q->fd, .events = POLLIN };
	struct urv_event *e;

	for (;;) {
		pthread_mutex_lock(&q->lock);
		e = q->head;
		if (e) {
			q->head = e->next;
			if (!q->head)
				q->tail = &q->head;
			evq_mark(q, false);
		}
		pthread_mutex_unlock(&q->lock);
		if (e) {
			*out = e;
			return 0;
		}
		{
			int fl = fcntl(q->fd, F_GETFL);

			if (fl >= 0 && (fl & O_NONBLOCK))
				return -EAGAIN;
		}
		/* Another reader may take what woke us: then wait again.
		 * A signal ends the wait with EINTR, as the kernel's read. */
		if (poll(&p, 1, -1) < 0)
			return -errno;
	}
}

int urv__evq_drop(struct urv_evq *q, bool (*match)(struct urv_event *, void *),
		   void *arg)
{
	struct urv_event **pp, *e;
	bool was_empty;
	int n = 0;

	pthread_mutex_lock(&q->lock);
	was_empty = !q->head;
	for (pp = &q->head; (e = *pp);) {
		if (match(e, arg)) {
			*pp = e->next;
			free(e);
			n++;
		} else {
			pp = &e->next;
		}
	}
	q->tail = &q->head;
	for (e = q->head; e; e = e->next)
		q->tail = &e->next;
	evq_mark(q, was_empty); /* empty now: the fd stops polling readable */
	pthread_mutex_unlock(&q->lock);
	return n;
}

/* ---- host ops called by the engine thread ------------------------------ */

static void urv_cq_event(void *host, struct ur_cq *ucq)
{
	struct urv_cq *cq = ucq->owner;
	struct urv_event *e = NULL;

	if (!cq || !cq->cq.channel)
		return;
	e = calloc(1, sizeof(*e));
	if (!e)
		return; /* Lost wakeup on OOM; the CQ still holds the CQEs. */
	e->cq = &cq->cq;
	urv__evq_push(&to_uch(cq->cq.channel)->q, e);
}

/* @host is the device's shared engine entry (device.c): the event goes to
 * the context the QP was created in. */
static void urv_qp_event(void *host, struct ur_qp *uqp, enum ur_async_event type)
{
	struct urv_qp *qp = uqp->owner;
	struct urv_context *ctx;
	struct urv_event *e;

	(void)host;
	if (!qp)
		return;
	ctx = to_uctx(qp->qp.context);
	e = calloc(1, sizeof(*e));
	if (!e)
		return;
	e->ev.event_type = (enum ibv_event_type)type;
	if (type == UR_EVENT_SRQ_LIMIT_REACHED && uqp->srq)
		e->ev.element.srq = &((struct urv_srq *)uqp->srq->owner)->srq;
	else if (type == UR_EVENT_CQ_ERR)
		e->ev.element.cq = uqp->send_cq ?
			&((struct urv_cq *)uqp->send_cq->owner)->cq : NULL;
	else
		e->ev.element.qp = &qp->qp;
	urv__evq_push(&ctx->async, e);
}

const struct ur_engine_host_ops urv__host_ops = {
	.cq_event = urv_cq_event,
	.qp_event = urv_qp_event,
};

/* ---- completion channels ---------------------------------------------- */

URV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct urv_comp_channel *ch;
	int ret;

	if (!urv__is_our_context(context))
		return urv_err_ptr(-EINVAL);
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return urv_err_ptr(-ENOMEM);
	ret = urv__evq_init(&ch->q);
	if (ret) {
		free(ch);
		return urv_err_ptr(ret);
	}
	ch->ch.context = context;
	ch->ch.fd = ch->q.fd;
	ch->ch.refcnt = 0;
	return &ch->ch;
}

URV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct urv_comp_channel *ch = to_uch(channel);

	if (atomic_load(&ch->ncq))
		return EBUSY;
	urv__evq_fini(&ch->q);
	free(ch);
	return 0;
}

URV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel,
				struct ibv_cq **cq, void **cq_context)
{
	struct urv_event *e = NULL;
	struct urv_cq *ucq;
	int ret;

	ret = urv__evq_pop(&to_uch(channel)->q, &e);
	if (ret)
		return urv_err_int(ret);
	*cq = e->cq;
	*cq_context = e->cq->cq_context;
	ucq = to_ucq(e->cq);
	pthread_mutex_lock(&ucq->cq.mutex);
	ucq->comp_events_reported++;
	pthread_mutex_unlock(&ucq->cq.mutex);
	free(e);
	return 0;
}

URV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* ---- async events ------------------------------------------------------ */

URV_EXPORT int ibv_get_async_event(struct ibv_context *context,
				   struct ibv_async_event *event)
{
	struct urv_event *e = NULL;
	int ret;

	if (!urv__is_our_context(context))
		return urv_err_int(-EINVAL);
	ret = urv__evq_pop(&to_uctx(context)->async, &e);
	if (ret)
		return urv_err_int(ret);
	*event = e->ev;
	switch (event->event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED: {
		struct urv_qp *qp = to_uqp(event->element.qp);

		pthread_mutex_lock(&qp->qp.mutex);
		qp->async_events_reported++;
		pthread_mutex_unlock(&qp->qp.mutex);
		break;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED: {
		struct urv_srq *srq = to_usrq(event->element.srq);

		pthread_mutex_lock(&srq->srq.mutex);
		srq->async_events_reported++;
		pthread_mutex_unlock(&srq->srq.mutex);
		break;
	}
	default:
		break;
	}
	free(e);
	return 0;
}

URV_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	switch (event->event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED: {
		struct ibv_qp *qp = event->element.qp;

		pthread_mutex_lock(&qp->mutex);
		qp->events_completed++;
		pthread_cond_signal(&qp->cond);
		pthread_mutex_unlock(&qp->mutex);
		break;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED: {
		struct ibv_srq *srq = event->element.srq;

		pthread_mutex_lock(&srq->mutex);
		srq->events_completed++;
		pthread_cond_signal(&srq->cond);
		pthread_mutex_unlock(&srq->mutex);
		break;
	}
	default:
		break;
	}
}

// SPDX-License-Identifier: MIT
/*
 * Event delivery: completion channels and the async event queue.
 *
 * Each queue is a FIFO plus an eventfd in semaphore mode: one count per
 * queued event, so the fd polls readable exactly while events wait, and a
 * blocking read() is the "wait" of ibv_get_cq_event()/ibv_get_async_event()
 * (an application that made the fd O_NONBLOCK gets EAGAIN, as with the
 * kernel's uverbs event files). The engine thread pushes from the host ops.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "urv.h"

int urv__evq_init(struct urv_evq *q)
{
	q->fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
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

void urv__evq_push(struct urv_evq *q, struct urv_event *e)
{
	uint64_t one = 1;

	e->next = NULL;
	pthread_mutex_lock(&q->lock);
	*q->tail = e;
	q->tail = &e->next;
	/* Under the lock so a concurrent drop cannot see the count lag. */
	if (write(q->fd, &one, sizeof(one)) != sizeof(one)) {
		/* Counter overflow is not reachable (2^64-2 events). */
	}
	pthread_mutex_unlock(&q->lock);
}

int urv__evq_pop(struct urv_evq *q, struct urv_event **out)
{
	uint64_t v;
	struct urv_event *e = NULL;

	for (;;) {
		if (read(q->fd, &v, sizeof(v)) != sizeof(v))
			return errno == EAGAIN ? -EAGAIN : -errno;
		pthread_mutex_lock(&q->lock);
		e = q->head;
		if (e) {
			q->head = e->next;
			if (!q->head)
				q->tail = &q->head;
		}
		pthread_mutex_unlock(&q->lock);
		if (e) {
			*out = e;
			return 0;
		}
		/* The event was dropped by a destroy after we were woken. */
	}
}

int urv__evq_drop(struct urv_evq *q, bool (*match)(struct urv_event *, void *),
		   void *arg)
{
	struct urv_event **pp, *e;
	int n = 0;

	pthread_mutex_lock(&q->lock);
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
	/* Leave the fd count: a reader that wakes for a dropped event finds
	 * the queue short and waits again (see urv__evq_pop). */
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

// SPDX-License-Identifier: MIT
/*
 * XRC domains and the XRC context ops: ibv_open_xrcd/ibv_close_xrcd,
 * ibv_get_srq_num and ibv_open_qp (all verbs_context ops: the inline
 * wrappers of <infiniband/verbs.h> call them). XRC SRQs are made in srq.c,
 * XRC INI and TGT QPs in qp.c; the protocol is the transport's
 * (ur_qp_create_xrc, docs/transport.md "XRC").
 *
 * A domain is a number, process-wide, since the contexts of one process
 * share their device's engine and so its SRQ numbers. As the kernel does
 * (uverbs' xrcd table), opens that name the same file (inode) share one
 * domain: O_CREAT makes it when absent, O_EXCL refuses it when present,
 * and fd -1 makes a private one.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "urv.h"

/* A domain opened through a file: the inode names it. */
struct xrcd_file {
	struct xrcd_file *next;
	dev_t dev;
	ino_t ino;
	uint32_t xrcdn;
	int refs;
};

static pthread_mutex_t xrcd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xrcd_file *xrcd_files;
static uint32_t xrcd_next = 1; /* 0: "not XRC" in struct ur_srq */

static struct ibv_xrcd *urv_open_xrcd(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *attr)
{
	struct xrcd_file *f = NULL;
	struct urv_xrcd *x;
	struct stat st;
	int fd = -1, oflags = 0;

	if (!urv__is_our_context(context) || !attr ||
	    (attr->comp_mask & ~(uint32_t)(IBV_XRCD_INIT_ATTR_FD |
					   IBV_XRCD_INIT_ATTR_OFLAGS)))
		return urv_err_ptr(-EINVAL);
	if (attr->comp_mask & IBV_XRCD_INIT_ATTR_FD)
		fd = attr->fd;
	if (attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS)
		oflags = attr->oflags;
	if (oflags & ~(O_CREAT | O_EXCL))
		return urv_err_ptr(-EINVAL);
	if (fd >= 0 && fstat(fd, &st))
		return urv_err_ptr(-EBADF);
	x = calloc(1, sizeof(*x));
	if (!x)
		return urv_err_ptr(-ENOMEM);
	pthread_mutex_lock(&xrcd_lock);
	if (fd >= 0) {
		for (f = xrcd_files; f; f = f->next)
			if (f->dev == st.st_dev && f->ino == st.st_ino)
				break;
		if (f && (oflags & O_EXCL)) {
			pthread_mutex_unlock(&xrcd_lock);
			free(x);
			return urv_err_ptr(-EEXIST);
		}
		if (!f && !(oflags & O_CREAT)) {
			pthread_mutex_unlock(&xrcd_lock);
			free(x);
			return urv_err_ptr(-ENOENT);
		}
		if (!f) {
			f = calloc(1, sizeof(*f));
			if (!f) {
				pthread_mutex_unlock(&xrcd_lock);
				free(x);
				return urv_err_ptr(-ENOMEM);
			}
			f->dev = st.st_dev;
			f->ino = st.st_ino;
			f->xrcdn = xrcd_next++;
			f->next = xrcd_files;
			xrcd_files = f;
		}
		f->refs++;
		x->xrcdn = f->xrcdn;
		x->file = f;
	} else {
		x->xrcdn = xrcd_next++;
	}
	pthread_mutex_unlock(&xrcd_lock);
	x->xrcd.context = context;
	return &x->xrcd;
}

static int urv_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct urv_xrcd *x = to_uxrcd(ibxrcd);

	if (atomic_load(&x->users))
		return EBUSY; /* SRQs or TGT QPs still in it */
	pthread_mutex_lock(&xrcd_lock);
	if (x->file && --x->file->refs == 0) {
		struct xrcd_file **pp = &xrcd_files;

		while (*pp != x->file)
			pp = &(*pp)->next;
		*pp = x->file->next;
		free(x->file);
	}
	pthread_mutex_unlock(&xrcd_lock);
	free(x);
	return 0;
}

static int urv_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct urv_srq *srq = to_usrq(ibsrq);

	if (!srq_num)
		return EINVAL;
	if (!srq->xrcd)
		return EINVAL; /* only XRC SRQs are numbered */
	*srq_num = srq->usrq.srqn;
	return 0;
}

/*
 * ibv_open_qp: another handle on an XRC TGT QP of the same domain. The
 * kernel makes a new object that shares the QP; here the handle is the
 * QP's own (qp_context of the first), counted so that the QP goes with
 * the last ibv_destroy_qp. Only QPs of this process are found: its engine
 * holds them.
 */
static struct ibv_qp *urv_open_qp(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr)
{
	const uint32_t need = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			      IBV_QP_OPEN_ATTR_TYPE;
	struct ur_qp *uqp;
	struct urv_qp *qp;

	if (!urv__is_our_context(context) || !attr ||
	    (attr->comp_mask & need) != need ||
	    (attr->comp_mask & ~(need | IBV_QP_OPEN_ATTR_CONTEXT)) ||
	    !attr->xrcd)
		return urv_err_ptr(-EINVAL);
	if (attr->qp_type != IBV_QPT_XRC_RECV)
		return urv_err_ptr(-EINVAL);
	uqp = ur_engine_qp_get(to_uctx(context)->eng, attr->qp_num);
	if (!uqp || uqp->xrc != UR_XRC_TGT ||
	    uqp->xrcd != to_uxrcd(attr->xrcd)->xrcdn)
		return urv_err_ptr(-ENOENT);
	qp = uqp->owner;
	atomic_fetch_add(&qp->opens, 1);
	return &qp->qp;
}

void urv__xrc_ops(struct verbs_context *vctx)
{
	vctx->open_xrcd = urv_open_xrcd;
	vctx->close_xrcd = urv_close_xrcd;
	vctx->get_srq_num = urv_get_srq_num;
	vctx->open_qp = urv_open_qp;
}

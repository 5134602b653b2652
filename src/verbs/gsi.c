// SPDX-License-Identifier: MIT
/*
 * QP1 for uroce's own librdmacm (include/uroce/uroce.h, node UROCE_1.0):
 * the connection manager sends and receives its MADs through the engine of
 * a device context, so that its comm IDs carry the same slot as the QPs it
 * connects. Not for applications.
 */
#include <errno.h>
#include <string.h>

#include "urv.h"
#include <uroce/uroce.h>

/* One handler per engine (a context's port); the engine holds a pointer
 * to the entry. */
struct gsi_hook {
	struct ibv_context *ctx;
	uint8_t port_num;
	uroce_gsi_rx_fn fn;
	void *arg;
};
#define GSI_MAX_HOOKS 64
static struct gsi_hook gsi_hooks[GSI_MAX_HOOKS];
static pthread_mutex_t gsi_hooks_lock = PTHREAD_MUTEX_INITIALIZER;

static int gsi_trampoline(void *arg, const uint8_t *mad, size_t len,
			  const struct ur_rxinfo *ri, bool from_sibling)
{
	struct gsi_hook *h = arg;
	struct sockaddr_storage ss = { 0 };

	if (ri->path.v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(ri->path.sport);
		memcpy(&s6->sin6_addr, ri->path.src, 16);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(ri->path.sport);
		memcpy(&s4->sin_addr, ri->path.src, 4);
	}
	return h->fn ? h->fn(h->arg, mad, len, (struct sockaddr *)&ss,
			     from_sibling)
		     : UR_GSI_BROADCAST;
}

URV_EXPORT int uroce_gsi_attach_port(struct ibv_context *context,
				     uint8_t port_num, uroce_gsi_rx_fn fn,
				     void *arg)
{
	struct gsi_hook *h = NULL;
	struct ur_engine *e;
	int ret;

	if (!context || !urv__is_our_context(context) ||
	    !urv__port(to_uctx(context)->dev, port_num))
		return EINVAL;
	ret = urv__port_engine(to_uctx(context), port_num, &e);
	if (ret)
		return -ret;
	pthread_mutex_lock(&gsi_hooks_lock);
	for (int i = 0; i < GSI_MAX_HOOKS && !h; i++)
		if (gsi_hooks[i].ctx == context &&
		    gsi_hooks[i].port_num == port_num)
			h = &gsi_hooks[i];
	for (int i = 0; i < GSI_MAX_HOOKS && !h && fn; i++)
		if (!gsi_hooks[i].ctx)
			h = &gsi_hooks[i];
	if (!h) {
		pthread_mutex_unlock(&gsi_hooks_lock);
		return fn ? ENOMEM : 0;
	}
	if (fn) {
		h->ctx = context;
		h->port_num = port_num;
		h->arg = arg;
		h->fn = fn;
		ur_engine_set_gsi_handler(e, gsi_trampoline, h);
	} else {
		/* Returns once no MAD is being handled (rx_lock). */
		ur_engine_set_gsi_handler(e, NULL, NULL);
		memset(h, 0, sizeof(*h));
	}
	pthread_mutex_unlock(&gsi_hooks_lock);
	return 0;
}

URV_EXPORT int uroce_gsi_attach(struct ibv_context *context,
				uroce_gsi_rx_fn fn, void *arg)
{
	return uroce_gsi_attach_port(context, 1, fn, arg);
}

URV_EXPORT int uroce_gsi_send_port(struct ibv_context *context,
				   uint8_t port_num,
				   const struct sockaddr *dst, uint8_t slot,
				   const void *mad, size_t len)
{
	struct ur_ipudp p = { 0 };
	struct ur_engine *e;
	int ret;

	if (!context || !urv__is_our_context(context) || !dst ||
	    !urv__port(to_uctx(context)->dev, port_num))
		return EINVAL;
	if (dst->sa_family == AF_INET6) {
		p.v6 = true;
		memcpy(p.dst, &((const struct sockaddr_in6 *)dst)->sin6_addr, 16);
	} else if (dst->sa_family == AF_INET) {
		memcpy(p.dst, &((const struct sockaddr_in *)dst)->sin_addr, 4);
	} else {
		return EAFNOSUPPORT;
	}
	ret = urv__port_engine(to_uctx(context), port_num, &e);
	if (ret)
		return -ret;
	return -ur_engine_gsi_send(e, &p, slot, mad, len);
}

URV_EXPORT int uroce_gsi_send(struct ibv_context *context,
			      const struct sockaddr *dst, uint8_t slot,
			      const void *mad, size_t len)
{
	return uroce_gsi_send_port(context, 1, dst, slot, mad, len);
}

URV_EXPORT int uroce_context_slot(struct ibv_context *context)
{
	if (!context || !urv__is_our_context(context)) {
		errno = EINVAL;
		return -1;
	}
	return ur_engine_slot(to_uctx(context)->eng);
}

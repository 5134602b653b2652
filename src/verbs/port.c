// SPDX-License-Identifier: MIT
/*
 * Port state (docs/ports-classes.md "Ports"): each context follows its
 * ports' interfaces through the io layer's rtnetlink watch. A port whose
 * interface goes down (or loses its carrier) is IBV_PORT_DOWN and raises
 * IBV_EVENT_PORT_ERR on the context's async queue; back up, it is
 * IBV_PORT_ACTIVE with IBV_EVENT_PORT_ACTIVE (IBTA 11.6.3.1, unaffiliated
 * events), as rxe reports its netdev's state. A port bound to an address
 * of no local interface, or on lo, is always active.
 */
#include <stdlib.h>

#include "ur_log.h"
#include "urv.h"

static void port_event(struct urv_context *ctx, unsigned int port_num,
		       bool up)
{
	struct urv_event *e = calloc(1, sizeof(*e));

	ur_log(UR_LOG_INFO, "%s port %u: link %s", ctx->dev->vdev.device.name,
	       port_num, up ? "up: ACTIVE" : "down: DOWN");
	if (!e)
		return;
	e->ev.event_type = up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR;
	e->ev.element.port_num = (int)port_num;
	urv__evq_push(&ctx->async, e);
}

static void link_changed(void *arg, unsigned int ifindex, bool up)
{
	struct urv_context *ctx = arg;

	for (int p = 0; p < ctx->dev->nports; p++) {
		if (ctx->dev->ports[p].ifindex != ifindex)
			continue;
		/* Messages repeat a state (an address change, a flag other
		 * than the link's): only a change is an event. */
		if (atomic_exchange(&ctx->port_down[p], !up) == !up)
			continue;
		port_event(ctx, (unsigned int)p + 1, up);
	}
}

int urv__link_watch_start(struct urv_context *ctx)
{
	bool any = false;
	int ret = 0;

	for (int p = 0; p < ctx->dev->nports; p++)
		any |= ctx->dev->ports[p].ifindex && !ctx->dev->ports[p].if_is_lo;
	/* Subscribed first, then the state now: a change in between is
	 * seen by the read, and its message is then no change. A port on lo
	 * (or on no interface) never goes down: no thread for it. */
	if (any)
		ret = ur_link_watch_open(link_changed, ctx, &ctx->link_watch);
	for (int p = 0; p < ctx->dev->nports && !ret; p++)
		atomic_store(&ctx->port_down[p],
			     !ur_link_is_up(ctx->dev->ports[p].ifindex));
	return ret;
}

void urv__link_watch_stop(struct urv_context *ctx)
{
	ur_link_watch_close(ctx->link_watch);
	ctx->link_watch = NULL;
}

/* SPDX-License-Identifier: MIT */
/*
 * Rails: a communicator over several ports of its device, or several
 * devices, of every host (UROCE_COLL_RAILS). Rail 0 is the communicator
 * itself; each further rail is a hidden sub-communicator made by a split
 * with every rank (split.c) whose QPs live on that rail's port: its own
 * QPs, CQ, staging slots and progress thread. A large collective is cut
 * into one part per rail in proportion to the rails' weights (nbc.c,
 * run_rails), every part runs on its rail at once, and the collective is
 * done when every part is. Every rank takes the same rails and weights:
 * the fewest rails any rank has, each rail's smallest weight.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_internal.h"

/* What a rank tells the others about its rails. */
struct rail_rec {
	uint32_t n;
	uint32_t w[UR_RAILS_MAX];
};

static int bad(const char *v, const char *why)
{
	fprintf(stderr, "uroce_coll: UROCE_COLL_RAILS=%s: %s; allowed: auto (every active "
		"port of the device), one (its first port only), or a comma-separated list "
		"of at most %d DEV[:PORT][@WEIGHT] (a device name, a port number 1..255, "
		"a relative weight 1..1000000)\n", v, why, UR_RAILS_MAX);
	return -EINVAL;
}

static int parse_num(const char *s, size_t len, unsigned long max, unsigned long *out)
{
	char buf[16], *end;

	if (!len || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	if (buf[0] < '0' || buf[0] > '9')
		return -EINVAL;
	*out = strtoul(buf, &end, 10);
	return *end || !*out || *out > max ? -EINVAL : 0;
}

int ur__rails_parse(const char *v, struct ur_rail *out, int *n, int *is_auto)
{
	const char *p = v;

	*n = 0;
	*is_auto = 0;
	if (!v || !*v || !strcmp(v, "auto")) {
		*is_auto = 1;
		return 0;
	}
	if (!strcmp(v, "one")) {
		*n = 1;
		memset(out, 0, sizeof(*out));
		out->port = 1;
		return 0;
	}
	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *colon = memchr(p, ':', len), *at = memchr(p, '@', len);
		size_t dlen = colon ? (size_t)(colon - p) : at ? (size_t)(at - p) : len;
		struct ur_rail *r = &out[*n];
		unsigned long x;

		if (*n == UR_RAILS_MAX)
			return bad(v, "too many rails");
		if (!dlen || dlen >= sizeof(r->dev))
			return bad(v, "an entry without a device name");
		if (colon && at && at < colon)
			return bad(v, "a weight before the port");
		memset(r, 0, sizeof(*r));
		memcpy(r->dev, p, dlen);
		r->port = 1;
		if (colon) {
			size_t plen = (at ? (size_t)(at - colon) : (size_t)(p + len - colon)) - 1;
			if (parse_num(colon + 1, plen, 255, &x))
				return bad(v, "a port that is not 1..255");
			r->port = (int)x;
		}
		if (at) {
			if (parse_num(at + 1, (size_t)(p + len - at) - 1, 1000000, &x))
				return bad(v, "a weight that is not 1..1000000");
			r->weight = (uint32_t)x;
		}
		for (int i = 0; i < *n; i++)
			if (!strcmp(out[i].dev, r->dev) && out[i].port == r->port)
				return bad(v, "a rail named twice");
		(*n)++;
		if (!end)
			break;
		p = end + 1;
		if (!*p)
			return bad(v, "an empty entry");
	}
	return 0;
}

/* A port's rate in Mbit/s from its speed and width (IBTA 14.2.5.6). */
static uint32_t port_rate(struct ibv_context *ctx, int port)
{
	static const struct { uint8_t code; uint32_t mbps; } speed[] = {
		{ 1, 2500 }, { 2, 5000 }, { 4, 10000 }, { 8, 10000 },
		{ 16, 14000 }, { 32, 25000 }, { 64, 50000 }, { 128, 100000 },
	};
	static const struct { uint8_t code; uint32_t lanes; } width[] = {
		{ 1, 1 }, { 2, 4 }, { 4, 8 }, { 8, 12 }, { 16, 2 },
	};
	struct ibv_port_attr pa;
	uint32_t s = 0, w = 0;

	if (ibv_query_port(ctx, (uint8_t)port, &pa))
		return 0;
	for (size_t i = 0; i < sizeof(speed) / sizeof(speed[0]); i++)
		if (speed[i].code == pa.active_speed)
			s = speed[i].mbps;
	for (size_t i = 0; i < sizeof(width) / sizeof(width[0]); i++)
		if (width[i].code == pa.active_width)
			w = width[i].lanes;
	return s && w ? s * w : 1;
}

static int port_active(struct ibv_context *ctx, int port)
{
	struct ibv_port_attr pa;

	return !ibv_query_port(ctx, (uint8_t)port, &pa) && pa.state == IBV_PORT_ACTIVE;
}

static struct ibv_context *open_named(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n = 0;

	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

int ur__rails_init(struct uroce_comm *c, const struct ur_rail *list, int n,
		    int is_auto)
{
	struct ur_rail auto_list[UR_RAILS_MAX];
	struct rail_rec mine = { 0 }, *all;
	const char *me = ibv_get_device_name(c->ctx->device);
	int e = 0;

	if (is_auto) {
		struct ibv_device_attr da;

		list = auto_list;
		n = 0;
		if (ibv_query_device(c->ctx, &da))
			da.phys_port_cnt = 1;
		for (int p = 1; p <= da.phys_port_cnt && n < UR_RAILS_MAX; p++) {
			if (p != c->port && !port_active(c->ctx, p))
				continue;
			memset(&auto_list[n], 0, sizeof(auto_list[n]));
			auto_list[n++].port = p;
		}
	}
	/* Each rank's count and weights; all ranks take the same. */
	mine.n = (uint32_t)n;
	for (int k = 0; k < n; k++)
		mine.w[k] = list[k].weight ? list[k].weight :
			    port_rate(c->ctx, list[k].port);
	if (c->size == 1)
		return 0;
	all = calloc((size_t)c->size, sizeof(*all));
	if (!all)
		return ur__fail(c, -ENOMEM, "rails: out of memory");
	e = ur__run_allgather(c, &mine, all, sizeof(mine), UROCE_UINT8);
	if (e) {
		free(all);
		return e;
	}
	for (int i = 0; i < c->size; i++)
		if (all[i].n < mine.n)
			mine.n = all[i].n;
	for (uint32_t k = 0; k < mine.n; k++)
		for (int i = 0; i < c->size; i++)
			if (all[i].w[k] < mine.w[k])
				mine.w[k] = all[i].w[k];
	free(all);
	if (mine.n <= 1)
		return 0;
	c->rails = calloc(mine.n, sizeof(*c->rails));
	c->rail_w = calloc(mine.n, sizeof(*c->rail_w));
	if (!c->rails || !c->rail_w)
		return ur__fail(c, -ENOMEM, "rails: out of memory");
	c->rails[0] = c;
	c->rail_w[0] = mine.w[0];
	c->nrails = 1;
	for (uint32_t k = 1; k < mine.n; k++) {
		const struct ur_rail *r = &list[k];
		struct ibv_context *ctx = c->ctx;
		struct ibv_pd *pd = c->pd;
		struct uroce_comm *sub;
		int own = r->dev[0] && strcmp(r->dev, me);

		/* Every rank splits, even one whose rail cannot open: the
		 * others wait in the split's allgathers, and a failure there
		 * fails them all (ur__fail). */
		if (own) {
			ctx = open_named(r->dev);
			pd = ctx ? ibv_alloc_pd(ctx) : NULL;
			if (!pd) {
				if (ctx)
					ibv_close_device(ctx);
				return ur__fail(c, -ENODEV, "rail %u: cannot open device %s",
						 k, r->dev);
			}
		}
		e = ur__run_split_rail(c, ctx, pd, r->port, &sub);
		if (e) {
			if (own) {
				ibv_dealloc_pd(pd);
				ibv_close_device(ctx);
			}
			return e;
		}
		/* Not a child the caller destroys: c's teardown does. */
		__atomic_fetch_sub(&c->children, 1, __ATOMIC_ACQ_REL);
		sub->owner = c;
		sub->own_dev = own;
		c->rails[k] = sub;
		c->rail_w[k] = mine.w[k];
		c->nrails = (int)k + 1;
	}
	return 0;
}

size_t ur__rail_part(const struct uroce_comm *c, size_t count, size_t es,
		      int k, size_t *off)
{
	unsigned __int128 sum = 0, below = 0;

	if (count * es < UR_RAIL_MIN) {
		*off = 0;
		return k ? 0 : count;
	}
	for (int i = 0; i < c->nrails; i++) {
		sum += c->rail_w[i];
		if (i < k)
			below += c->rail_w[i];
	}
	*off = (size_t)(count * below / sum);
	return (size_t)(count * (below + c->rail_w[k]) / sum) - *off;
}

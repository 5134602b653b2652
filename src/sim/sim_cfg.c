// SPDX-License-Identifier: MIT
/*
 * Configuration: defaults and a "key value" text format, one setting per
 * line, '#' starts a comment. Every error names the file and line.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_priv.h"

void sim_cfg_default(struct sim_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->seed = 1;
	c->progress_s = 2;
	c->topo = SIM_TOPO_FATTREE;
	c->k = 4;
	c->leaves = 4;
	c->spines = 2;
	c->hosts_per_leaf = 4;
	c->rails = 8;
	c->rail_groups = 2;
	c->host_bps = 100000000000ull;
	c->fabric_bps = 100000000000ull;
	c->link_delay_ns = 1000;
	c->buffer_bytes = 12u << 20;
	c->dt_alpha = 1.0;
	c->ecn = true;
	c->kmin = 100 << 10;
	c->kmax = 400 << 10;
	c->pmax = 0.2;
	c->pfc = true;
	c->pfc_xoff = 128 << 10;
	c->pfc_xon = 96 << 10;
	c->pfc_headroom = 48 << 10;
	c->mtu = 4096;
	ur_cc_params_default(&c->cc);
	c->cc.algo = UR_CC_DCQCN;
	c->window = 256;
	c->timeout = 10; /* 4.2 ms */
	c->nic_queue = 16 << 10;
	c->lb = SIM_LB_SINGLE;
	c->paths = 8;
	c->reseq_ns = 50000;
	c->work = SIM_WORK_NONE;
	c->bytes = 1 << 20;
	c->chunks = 1;
	c->incast_senders = 8;
	c->iterations = 1;
	c->load = 0.5;
	c->arrive_ns = 1000000;
	c->sample_ns = 10000;
}

void sim_cfg_cc(const struct sim_cfg *c, struct ur_cc_params *out)
{
	struct ur_cc_params def;

	ur_cc_params_default(&def);
	*out = c->cc; /* Swift's fields as set (swift_<field>) */
	ur_cc_profile_apply(out, &ur_cc_profiles[c->cc_profile],
			    c->host_bps / 1000000);
	for (unsigned int i = 0; i < ur_cc_param_count; i++) {
		size_t off = ur_cc_param_table[i].off;
		uint32_t v = *(const uint32_t *)((const char *)&c->cc + off);

		if ((c->cc_set & (1u << i)) ||
		    v != *(const uint32_t *)((const char *)&def + off))
			*(uint32_t *)((char *)out + off) = v;
	}
}

/* A whole number (K, M, G suffixes), times @scale: "0.3" Gb/s is 3e8
 * bit/s, "2.5" hosts is refused (-1), not cut to 2. */
static int num_scaled(const char *v, double scale, uint64_t *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (errno || end == v || d < 0)
		return -1;
	switch (toupper((unsigned char)*end)) {
	case 'K': d *= 1024; end++; break;
	case 'M': d *= 1024 * 1024; end++; break;
	case 'G': d *= 1024.0 * 1024 * 1024; end++; break;
	}
	d *= scale;
	if (*end || d != (double)(uint64_t)d || d >= 18446744073709551615.0)
		return -1;
	*out = (uint64_t)d;
	return 0;
}

static int num(const char *v, uint64_t *out)
{
	return num_scaled(v, 1, out);
}

static int onoff(const char *v, bool *out)
{
	if (!strcmp(v, "on") || !strcmp(v, "1") || !strcmp(v, "yes"))
		*out = true;
	else if (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "no"))
		*out = false;
	else
		return -1;
	return 0;
}

static int pick(const char *v, const char *const *names, uint32_t n,
		uint32_t *out)
{
	for (uint32_t i = 0; i < n; i++)
		if (names[i] && !strcmp(v, names[i])) {
			*out = i;
			return 0;
		}
	return -1;
}

static const char *const topo_names[] = { "fattree", "leafspine", "rail" };
static const char *const lb_names[] = { "single", "spray", "adaptive" };
static const char *const sr_names[] = { "auto", "on", "off" };
static const char *const evq_names[] = { "calendar", "heap" };
static const char *const work_names[] = { "none", "ring", "alltoall",
					  "permutation", "incast", "trace",
					  "poisson" };

int sim_cfg_set(struct sim_cfg *c, const char *key, const char *val,
		char *err, size_t n)
{
	uint64_t u = 0;
	bool b;
	int bad = 0;

#define U(name, field, scale)                                              \
	if (!strcmp(key, name)) {                                          \
		bad = num_scaled(val, (double)(scale), &u);                \
		c->field = (__typeof__(c->field))u;                        \
		goto done;                                                 \
	}
#define D(name, field)                                                     \
	if (!strcmp(key, name)) {                                          \
		char *e;                                                   \
		c->field = strtod(val, &e);                                \
		bad = *e != 0 || e == val;                                 \
		goto done;                                                 \
	}
#define B(name, field)                                                     \
	if (!strcmp(key, name)) {                                          \
		bad = onoff(val, &b);                                      \
		c->field = b;                                              \
		goto done;                                                 \
	}
	U("seed", seed, 1)
	U("k", k, 1)
	U("leaves", leaves, 1)
	U("spines", spines, 1)
	U("hosts_per_leaf", hosts_per_leaf, 1)
	U("rails", rails, 1)
	U("rail_groups", rail_groups, 1)
	U("host_gbps", host_bps, 1000000000ull)
	U("fabric_gbps", fabric_bps, 1000000000ull)
	U("link_delay_ns", link_delay_ns, 1)
	D("link_loss", link_loss)
	U("buffer_kb", buffer_bytes, 1024)
	D("dt_alpha", dt_alpha)
	B("ecn", ecn)
	U("kmin_kb", kmin, 1024)
	U("kmax_kb", kmax, 1024)
	D("pmax", pmax)
	B("pfc", pfc)
	U("pfc_xoff_kb", pfc_xoff, 1024)
	U("pfc_xon_kb", pfc_xon, 1024)
	U("pfc_headroom_kb", pfc_headroom, 1024)
	U("mtu", mtu, 1)
	U("window", window, 1)
	U("timeout", timeout, 1)
	U("nic_queue_kb", nic_queue, 1024)
	U("paths", paths, 1)
	U("reseq_us", reseq_ns, 1000)
	U("bytes", bytes, 1)
	U("chunks", chunks, 1)
	U("ranks", ranks, 1)
	U("incast_senders", incast_senders, 1)
	U("iterations", iterations, 1)
	U("end_us", end_ns, 1000)
	U("reroute_us", reroute_ns, 1000)
	U("sample_us", sample_ns, 1000)
	D("load", load)
	U("arrive_us", arrive_ns, 1000)
	U("max_flows", max_flows, 1)
	B("progress", progress)
	B("qp_per_flow", qp_per_flow)
	if (!strcmp(key, "topology")) {
		bad = pick(val, topo_names, 3, &c->topo);
		goto done;
	}
	if (!strcmp(key, "lb")) {
		bad = pick(val, lb_names, 3, &c->lb);
		goto done;
	}
	if (!strcmp(key, "sr")) {
		bad = pick(val, sr_names, 3, &c->sr);
		goto done;
	}
	if (!strcmp(key, "evq")) {
		bad = pick(val, evq_names, 2, &c->evq);
		goto done;
	}
	if (!strcmp(key, "workload")) {
		bad = pick(val, work_names, 7, &c->work);
		goto done;
	}
	if (!strcmp(key, "cc")) {
		/* auto also picks Swift on a fabric's RTT (sim_host.c,
		 * ur_cc.c ur__cc_auto_pick); dcqcn-rtt is that algorithm
		 * alone. */
		c->cc_auto = !strcmp(val, "auto");
		if (!strcmp(val, "dcqcn"))
			c->cc.algo = UR_CC_DCQCN;
		/* auto: what UROCE_CC=auto runs once the hello found a
		 * uroce peer, and every simulated host is one (its default
		 * UROCE_CC_AUTO, dcqcn-rtt; the hello's one RTT under DCQCN
		 * is not simulated). */
		else if (!strcmp(val, "dcqcn-rtt") || !strcmp(val, "auto"))
			c->cc.algo = UR_CC_DCQCN_RTT;
		else if (!strcmp(val, "swift"))
			c->cc.algo = UR_CC_SWIFT;
		else if (!strcmp(val, "predict"))
			c->cc.algo = UR_CC_PREDICT;
		else if (!strcmp(val, "none"))
			c->cc.algo = UR_CC_NONE;
		else
			bad = 1;
		goto done;
	}
	if (!strcmp(key, "placement")) {
		if (!strcmp(val, "random"))
			c->random_placement = true;
		else if (!strcmp(val, "linear"))
			c->random_placement = false;
		else
			bad = 1;
		goto done;
	}
	if (!strcmp(key, "trace")) {
		snprintf(c->trace, sizeof(c->trace), "%s", val);
		goto done;
	}
	if (!strcmp(key, "cc_trace")) {
		snprintf(c->cc_trace, sizeof(c->cc_trace), "%s", val);
		goto done;
	}
	if (!strcmp(key, "queue_trace")) {
		snprintf(c->queue_trace, sizeof(c->queue_trace), "%s", val);
		goto done;
	}
	if (!strcmp(key, "cdf")) {
		snprintf(c->cdf, sizeof(c->cdf), "%s", val);
		goto done;
	}
	if (!strcmp(key, "fail") || !strcmp(key, "degrade") ||
	    !strcmp(key, "restore")) {
		struct sim_linkcfg *l;
		char a[32], bn[32];
		double gbps = 0, loss = 0, at = 0;
		int k, used = 0;

		if (c->n_links == SIM_MAX_LINKCFG) {
			snprintf(err, n, "too many fail/degrade/restore lines (max %d)",
				 SIM_MAX_LINKCFG);
			return -1;
		}
		l = &c->links[c->n_links];
		memset(l, 0, sizeof(*l));
		k = sscanf(val, "%31s %31s %n", a, bn, &used);
		if (k == 2 && key[0] == 'r' && !val[used]) {
			k = 0; /* restore needs its time */
		} else if (k == 2 && key[0] != 'd' && val[used]) {
			/* fail A B at=US, restore A B at=US */
			char *e;

			errno = 0;
			if (strncmp(val + used, "at=", 3) ||
			    !isdigit((unsigned char)val[used + 3]))
				k = 0;
			else
				at = strtod(val + used + 3, &e);
			if (k && (errno || at > 1e12 || *e ||
				  (key[0] == 'r' && !(at >= 0.001))))
				k = 0;
		} else if (k == 2) {
			k = sscanf(val, "%31s %31s %lf %lf", a, bn, &gbps, &loss);
		}
		if (k < 2 || strlen(a) >= sizeof(l->a) || strlen(bn) >= sizeof(l->b) ||
		    (key[0] == 'd' && (k < 3 || gbps <= 0 || loss < 0 || loss >= 1))) {
			snprintf(err, n, "%s: expected '%s'", key,
				 key[0] == 'f'   ? "fail NODE NODE [at=US]"
				 : key[0] == 'r' ? "restore NODE NODE at=US (US > 0)"
						 : "degrade NODE NODE GBPS [LOSS]");
			return -1;
		}
		l->at_ns = (uint64_t)(at * 1000);
		strcpy(l->a, a);
		strcpy(l->b, bn);
		l->bps = key[0] == 'd' ? (uint64_t)(gbps * 1e9) : 0;
		l->restore = key[0] == 'r';
		l->loss = loss;
		c->n_links++;
		goto done;
	}
	if (!strcmp(key, "dcqcn_profile")) {
		const struct ur_cc_profile *pr = ur_cc_profile_find(val);

		bad = !pr;
		if (pr)
			c->cc_profile = (uint32_t)(pr - ur_cc_profiles);
		goto done;
	}
	if (!strncmp(key, "swift_", 6)) {
		for (unsigned int i = 0; i < ur_cc_swift_param_count; i++) {
			const struct ur_cc_param_info *pi =
				&ur_cc_swift_param_table[i];

			if (strcmp(key + 6, pi->field))
				continue;
			bad = num(val, &u) || u < pi->min || u > pi->max;
			if (!bad) {
				*(uint32_t *)((char *)&c->cc + pi->off) = (uint32_t)u;
				c->swift_set |= 1u << i;
			}
			goto done;
		}
	}
	if (!strncmp(key, "dcqcn_", 6)) {
		for (unsigned int i = 0; i < ur_cc_param_count; i++) {
			const struct ur_cc_param_info *pi = &ur_cc_param_table[i];

			if (strcmp(key + 6, pi->field))
				continue;
			bad = num(val, &u) || u < pi->min || u > pi->max;
			if (!bad) {
				*(uint32_t *)((char *)&c->cc + pi->off) = (uint32_t)u;
				c->cc_set |= 1u << i;
			}
			goto done;
		}
	}
	snprintf(err, n, "unknown key '%s'", key);
	return -1;
done:
	if (bad) {
		snprintf(err, n, "bad value '%s' for '%s'", val, key);
		return -1;
	}
	/* Set here, not by a file line (sim_cfg_load records it after). */
	for (uint32_t i = 0; i < c->n_keylines; i++)
		if (!strcmp(c->keylines[i].key, key)) {
			c->keylines[i] = c->keylines[--c->n_keylines];
			break;
		}
	if (!strcmp(key, "mtu") && c->mtu != 1024 && c->mtu != 2048 &&
	    c->mtu != 4096 && c->mtu != 512 && c->mtu != 256) {
		snprintf(err, n, "mtu must be 256..4096, a power of two");
		return -1;
	}
	if (!strcmp(key, "load") && !(c->load > 0 && c->load <= 1)) {
		snprintf(err, n, "load must be above 0 and at most 1 (a fraction of host_gbps)");
		return -1;
	}
	if ((!strcmp(key, "host_gbps") && !c->host_bps) ||
	    (!strcmp(key, "fabric_gbps") && !c->fabric_bps)) {
		snprintf(err, n, "%s must be above 0 (Gb/s, e.g. 0.3)", key);
		return -1;
	}
	if (!strcmp(key, "paths") && (c->paths < 1 || c->paths > SIM_MAXK)) {
		snprintf(err, n, "paths must be 1..%d", SIM_MAXK);
		return -1;
	}
	return 0;
#undef U
#undef D
#undef B
}

int sim_cfg_load(struct sim_cfg *c, const char *path, char *err, size_t n)
{
	FILE *f = fopen(path, "r");
	char line[512], msg[256];
	int ln = 0;

	if (!f) {
		snprintf(err, n, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (strcmp(c->file, path)) {
		/* Lines recorded so far belong to another file. */
		c->n_keylines = 0;
		snprintf(c->file, sizeof(c->file), "%s", path);
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *key, *val, *hash = strchr(line, '#');

		ln++;
		if (hash)
			*hash = 0;
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			continue;
		key = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		if (*p)
			*p++ = 0;
		while (isspace((unsigned char)*p))
			p++;
		val = p;
		for (p = val + strlen(val); p > val && isspace((unsigned char)p[-1]);)
			*--p = 0;
		if (!*val) {
			snprintf(err, n, "%s:%d: '%s' needs a value", path, ln, key);
			fclose(f);
			return -1;
		}
		if (sim_cfg_set(c, key, val, msg, sizeof(msg))) {
			snprintf(err, n, "%s:%d: %s", path, ln, msg);
			fclose(f);
			return -1;
		}
		if (!strcmp(key, "fail") || !strcmp(key, "degrade") ||
		    !strcmp(key, "restore"))
			c->links[c->n_links - 1].line = ln;
		else if (strlen(key) < sizeof(c->keylines[0].key) &&
			 c->n_keylines < SIM_MAX_KEYLINES) {
			strcpy(c->keylines[c->n_keylines].key, key);
			c->keylines[c->n_keylines++].line = ln;
		}
	}
	fclose(f);
	return 0;
}

int sim__line(FILE *f, char *line, size_t cap, int *ln, char **p,
	       const char *name, char *err, size_t n)
{
	while (fgets(line, (int)cap, f)) {
		char *h = strchr(line, '#'), *q = line;

		++*ln;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, n, "%s:%d: line longer than %zu characters",
				 name, *ln, cap - 2);
			return -1;
		}
		if (h)
			*h = 0;
		while (isspace((unsigned char)*q))
			q++;
		if (*q) {
			*p = q;
			return 1;
		}
	}
	return 0;
}

int sim__cfg_line(const struct sim_cfg *c, const char *key)
{
	for (uint32_t i = 0; i < c->n_keylines; i++)
		if (!strcmp(c->keylines[i].key, key))
			return c->keylines[i].line;
	return 0;
}

const char *sim__cfg_where(const struct sim_cfg *c, char *buf, size_t n, ...)
{
	const char *key;
	int line = 0;
	va_list ap;

	va_start(ap, n);
	while ((key = va_arg(ap, const char *))) {
		int l = sim__cfg_line(c, key);

		if (l > line)
			line = l;
	}
	va_end(ap);
	if (line)
		snprintf(buf, n, "%s:%d: ", c->file, line);
	else if (n)
		buf[0] = 0;
	return buf;
}

// SPDX-License-Identifier: MIT
/*
 * Congestion control and shaping at the verbs boundary (docs/cc.md): the
 * device's parameters from the environment (UROCE_CC, UROCE_DCQCN_PROFILE,
 * UROCE_DCQCN_<NAME>,
 * UROCE_RATE_LIMIT_MBPS, UROCE_RATE_BURST_BYTES), per-QP parameters
 * (uroce_qp_set_cc, include/uroce/uroce.h) and packet pacing
 * (ibv_modify_qp_rate_limit). The device's settings are read through the
 * settings table (src/util/settings.c), which ibv_open_device checked; the
 * DCQCN family is parsed the same way with the ranges of
 * ur_cc_param_table. Out-of-range values are refused with a message that
 * names the parameter and its range.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uroce/uroce.h>

#include "ur_log.h"
#include "ur_settings.h"
#include "urv.h"

/* The public struct mirrors the transport's DCQCN part field by field
 * (Swift's fields follow it in the transport's and are per device only:
 * the public struct keeps its size, so programs built earlier still work). */
_Static_assert(sizeof(struct uroce_cc_params) <= sizeof(struct ur_cc_params),
	       "cc params");
_Static_assert(offsetof(struct uroce_cc_params, algo) ==
		       offsetof(struct ur_cc_params, algo), "algo");
#define UR_CC_X(env, f, def, lo, hi, src)                                    \
	_Static_assert(offsetof(struct uroce_cc_params, f) ==                \
			       offsetof(struct ur_cc_params, f), #f);
UR_CC_PARAMS(UR_CC_X)
#undef UR_CC_X
_Static_assert((int)UROCE_CC_DCQCN == (int)UR_CC_DCQCN &&
		       (int)UROCE_CC_NONE == (int)UR_CC_NONE &&
		       (int)UROCE_CC_SWIFT == (int)UR_CC_SWIFT &&
		       (int)UROCE_CC_PREDICT == (int)UR_CC_PREDICT,
	       "algo values");

static void say_range(const char *who, const struct ur_cc_param_info *r,
		      unsigned long long v)
{
	fprintf(stderr,
		"uroce: %s%s=%llu out of range: %s must be in [%u, %u] "
		"(default %u)\n",
		who, r->env, v, r->env, r->min, r->max, r->def);
}

/* A DCQCN parameter, UROCE_DCQCN_<NAME> (or Swift's, UROCE_SWIFT_<NAME>):
 * a family whose rows live with the algorithm (ur_cc_param_table,
 * ur_cc_swift_param_table), parsed like every other setting (1: unset; 0:
 * set; -errno: refused, said on stderr). */
static int cc_env(const char *prefix, const struct ur_cc_param_info *r,
		  unsigned long long *out)
{
	char name[64], why[256];
	struct ur_setting row = { .name = name, .kind = UR_SET_UINT,
				  .min = r->min, .max = r->max, .def = r->def };
	const char *v;
	int rc;

	snprintf(name, sizeof(name), "%s%s", prefix, r->env);
	v = getenv(name);
	if (!v || !*v)
		return 1;
	rc = ur_setting_parse(&row, v, out, why, sizeof(why));
	if (rc)
		fprintf(stderr, "uroce: %s\n", why);
	return rc;
}

/*
 * UROCE_CC_TRACE=FILE: one line per RTT sample of a QP whose algorithm
 * traces (Swift, predict): "t_ns qpn f0 f1 ...", the columns of
 * ur_cc.h UR_SWIFT_T_* (Swift) or UR_PRED_F_* (predict), as uroce-sim's
 * cc_trace. For looking at a window over time on a real wire; one file
 * per process (%p is the process ID), lines from every device.
 */
static FILE *cc_trace_file;

static void cc_trace(struct ur_dev *dev, const struct ur_qp *qp,
		     const double *f, unsigned int nf, uint64_t now)
{
	(void)dev;
	fprintf(cc_trace_file, "%llu %u", (unsigned long long)now, qp->qpn);
	for (unsigned int i = 0; i < nf; i++)
		fprintf(cc_trace_file, " %.4g", f[i]);
	fputc('\n', cc_trace_file);
}

static int cc_trace_init(struct ur_dev *dev)
{
	const char *v = ur_setting_str("UROCE_CC_TRACE");
	char path[4096];
	const char *p;
	size_t n = 0;

	if (!v)
		return 0;
	if (!cc_trace_file) {
		for (p = v; *p && n + 24 < sizeof(path); p++) {
			if (p[0] == '%' && p[1] == 'p') {
				n += (size_t)snprintf(path + n, sizeof(path) - n,
						      "%d", (int)getpid());
				p++;
			} else {
				path[n++] = *p;
			}
		}
		path[n] = 0;
		cc_trace_file = fopen(path, "a");
		if (!cc_trace_file) {
			fprintf(stderr, "uroce: UROCE_CC_TRACE=%s: %s\n", path,
				strerror(errno));
			return -errno;
		}
		setvbuf(cc_trace_file, NULL, _IOLBF, 0);
	}
	dev->cc_trace = cc_trace;
	return 0;
}

/* A selective-repeat hello (ur_sr_neg.c) or congestion-control hello
 * (ur_cc_neg.c) of @qp to QP1 of the peer (the transport calls this with
 * the QP's lock held), as the encryption hello goes (crypt.c). */
static void sr_hello_send(struct ur_dev *dev, struct ur_qp *qp,
			  const struct ur_ipudp *dst, const uint8_t *mad)
{
	(void)qp;
	(void)ur_engine_gsi_send(dev->host, dst, 0, mad, UR_SR_HELLO_LEN);
}

/* Selective repeat (include/uroce/uroce.h): off (UROCE_SR=0), negotiated
 * with the peer (auto, the default) or offered to every peer (1). */
static int sr_dev_init(struct ur_dev *dev)
{
	struct ur_sr_params p;
	unsigned long long v;

	ur_sr_params_default(&p);
	if (p.window < dev->tx_window)
		p.window = dev->tx_window; /* hold what the sender may send */
	p.enable = (uint32_t)ur_setting_val("UROCE_SR");
	if (ur_setting_get("UROCE_SR_WINDOW", &v) == 0)
		p.window = (uint32_t)v;
	if (ur_setting_get("UROCE_SR_REORDER_US", &v) == 0)
		p.reorder_ns = (uint32_t)(v * 1000);
	if (ur_setting_get("UROCE_SR_POOL", &v) == 0)
		p.pool_pkts = (uint32_t)v;
	p.pace = (uint32_t)ur_setting_val("UROCE_SR_PACE");
	dev->sr = p;
	dev->sr_hello_send = p.enable == UR_SR_AUTO ? sr_hello_send : NULL;
	/* Spraying over UROCE_PATHS source ports (docs/wire.md "Spraying"):
	 * it reorders packets, so only with selective repeat. */
	dev->paths = (uint8_t)ur_setting_val("UROCE_PATHS");
	dev->spray_run = (uint8_t)ur_setting_val("UROCE_SPRAY_RUN");
	if (dev->paths > 1 && !p.enable) {
		fprintf(stderr, "uroce: UROCE_PATHS=%u needs selective "
			"repeat, not UROCE_SR=0 (spraying reorders packets; "
			"go-back-N would resend a window each time)\n",
			dev->paths);
		return -EINVAL;
	}
	return 0;
}

/* One list setting of the traffic classes (UROCE_TC_*): parsed by the
 * transport's parser, refused with its name and what it allows. */
static int tc_env(const char *name,
		  int (*parse)(const char *, void *, char *, size_t), void *out)
{
	const char *v = ur_setting_str(name);
	char why[160];

	if (!v)
		return 0;
	if (parse(v, out, why, sizeof(why))) {
		fprintf(stderr, "uroce: %s=%s: not allowed; allowed: %s\n", name,
			v, why);
		return -EINVAL;
	}
	return 0;
}

static int parse_prios(const char *t, void *o, char *why, size_t len)
{
	return ur_tcs_parse_prios(t, o, why, len);
}

static int parse_weights(const char *t, void *o, char *why, size_t len)
{
	return ur_tcs_parse_weights(t, o, why, len);
}

static int parse_mins(const char *t, void *o, char *why, size_t len)
{
	return ur_tcs_parse_mins(t, o, why, len);
}

/* Traffic classes (docs/ports-classes.md): the priority map and the
 * transmit scheduler over the device's rate limit. */
static int tc_dev_init(struct ur_dev *dev)
{
	struct ur_tcs_cfg cfg;
	unsigned long long v;
	int rc;

	ur_tcs_cfg_default(&cfg);
	if (ur_setting_get("UROCE_TC_TRUST", &v) == 0)
		cfg.trust = (uint8_t)v; /* choices "dscp|pcp", in enum order */
	rc = tc_env("UROCE_TC_STRICT", parse_prios, &cfg.strict);
	if (!rc)
		rc = tc_env("UROCE_TC_WEIGHTS", parse_weights, cfg.weight);
	if (!rc)
		rc = tc_env("UROCE_TC_MIN_MBPS", parse_mins, cfg.min_bps);
	if (rc)
		return rc;
	if (ur_tcs_cfg_active(&cfg) && !dev->rate_bps)
		ur_log(UR_LOG_INFO, "traffic classes: no UROCE_RATE_LIMIT_MBPS, "
		       "nothing to share: classes are only counted");
	ur_dev_set_tcs(dev, &cfg);
	return 0;
}

int urv__cc_dev_init(struct ur_dev *dev)
{
	struct ur_cc_params p;
	unsigned long long v;
	int rc;

	/* ibv_open_device checked every device setting (ur_settings_check):
	 * the values read here are good. */
	ur_cc_params_default(&p);
	/* A host's RTT is its own (wake-ups, batching) and jitters by
	 * milliseconds on a loaded machine: Swift's target follows the base
	 * RTT and the jitter here (docs/cc.md "Swift on the engine"); the
	 * simulator, which has neither, keeps the table's 0. */
	p.target_base_milli = UR_CC_ENGINE_TARGET_BASE_MILLI;
	p.jitter_k = UR_CC_ENGINE_JITTER_K;
	p.standing_milli = UR_CC_ENGINE_STANDING_MILLI;
	p.base_win_ms = UR_CC_ENGINE_BASE_WIN_MS;
	/* choices "none|dcqcn|swift|predict|auto": the first four in enum
	 * order; auto (the default: docs/cc.md "Between uroce ends") is
	 * DCQCN until the peer's hello shows a uroce QP in auto mode, then
	 * UROCE_CC_AUTO's algorithm, dcqcn-rtt or Swift (ur_cc_neg.c). */
	v = ur_setting_val("UROCE_CC");
	dev->cc_auto = v == UR_CC_CHOICE_AUTO;
	dev->cc_auto_algo = ur_setting_val("UROCE_CC_AUTO") ? UR_CC_SWIFT
							   : UR_CC_DCQCN_RTT;
	dev->cc_hello_send = dev->cc_auto ? sr_hello_send : NULL;
	p.algo = dev->cc_auto ? UR_CC_DCQCN : (uint32_t)v;
	/* A profile, then single fields over it. The engine does not know
	 * the link's rate: a profile that scales applies as written for
	 * 100 Gbit/s, its first cut from the measured rate (docs/cc.md). The
	 * setting's choices are the profile table's names, in order. */
	if (ur_setting_get("UROCE_DCQCN_PROFILE", &v) == 0 &&
	    v < ur_cc_profile_count)
		ur_cc_profile_apply(&p, &ur_cc_profiles[v], 0);
	for (unsigned int i = 0; i < ur_cc_param_count; i++) {
		const struct ur_cc_param_info *r = &ur_cc_param_table[i];

		rc = cc_env("UROCE_DCQCN_", r, &v);
		if (rc < 0)
			return rc;
		if (rc == 0)
			*(uint32_t *)((char *)&p + r->off) = (uint32_t)v;
	}
	for (unsigned int i = 0; i < ur_cc_swift_param_count; i++) {
		const struct ur_cc_param_info *r = &ur_cc_swift_param_table[i];

		rc = cc_env("UROCE_SWIFT_", r, &v);
		if (rc < 0)
			return rc;
		if (rc == 0)
			*(uint32_t *)((char *)&p + r->off) = (uint32_t)v;
	}
	dev->cc = p;
	/* Swift's RTT to the kernel's receive time (docs/cc.md, LATE_MILLI) */
	if (p.late_milli && ur_engine_rx_stamps(dev->host))
		fprintf(stderr, "uroce: no receive timestamps: Swift's RTT "
			"ends when the engine takes an ACK\n");
	rc = cc_trace_init(dev);
	if (rc)
		return rc;
	if (ur_setting_get("UROCE_RATE_LIMIT_MBPS", &v) == 0)
		dev->rate_bps = v * 1000000ull;
	if (ur_setting_get("UROCE_RATE_BURST_BYTES", &v) == 0)
		dev->rate_burst = v;
	rc = tc_dev_init(dev);
	if (rc)
		return rc;
	/* The send window of new RC QPs (0: the device's default). */
	if (ur_setting_get("UROCE_TX_WINDOW", &v) == 0 && v)
		dev->tx_window = (uint32_t)v;
	rc = sr_dev_init(dev);
	if (rc)
		return rc;
	/* Jumbo packets (include/uroce/uroce.h): UROCE_JUMBO 0 off, 1
	 * offered to all, auto negotiated with a uroce peer. */
	dev->jumbo_default = (uint8_t)ur_setting_val("UROCE_JUMBO");
	/* Encryption (UROCE_CRYPT*, src/verbs/crypt.c). */
	return urv__crypt_dev_init(dev);
}

/* A QP of ours that runs the RoCE transport (not a raw packet QP). */
static bool our_qp(struct ibv_qp *qp)
{
	return qp && urv__is_our_context(qp->context) &&
	       qp->qp_type != IBV_QPT_RAW_PACKET;
}

URV_EXPORT int uroce_qp_query_cc(struct ibv_qp *ibqp,
				 struct uroce_cc_params *params)
{
	struct ur_cc_params p;

	if (!our_qp(ibqp) || !params)
		return EINVAL;
	ur_engine_qp_lock(&to_uqp(ibqp)->uqp);
	ur_qp_get_cc(&to_uqp(ibqp)->uqp, &p);
	ur_engine_qp_unlock(&to_uqp(ibqp)->uqp);
	memcpy(params, &p, sizeof(*params)); /* the public prefix */
	return 0;
}

URV_EXPORT int uroce_qp_set_cc(struct ibv_qp *ibqp,
			       const struct uroce_cc_params *params)
{
	const struct ur_cc_param_info *bad;
	struct ur_cc_params p;
	int rc;

	if (!our_qp(ibqp) || !params)
		return EINVAL;
	/* Swift's fields (not in the public struct) stay the QP's. */
	ur_engine_qp_lock(&to_uqp(ibqp)->uqp);
	ur_qp_get_cc(&to_uqp(ibqp)->uqp, &p);
	ur_engine_qp_unlock(&to_uqp(ibqp)->uqp);
	memcpy(&p, params, sizeof(*params));
	rc = ur_cc_params_check(&p, &bad);
	if (rc == -ERANGE && bad)
		say_range("uroce_qp_set_cc: ", bad,
			  *(const uint32_t *)((const char *)&p + bad->off));
	else if (rc)
		fprintf(stderr, "uroce: uroce_qp_set_cc: algo %u unknown "
			"(0 = none, 1 = dcqcn, 2 = swift, 3 = predict, 4 = dcqcn-rtt)\n", p.algo);
	if (rc)
		return -rc;
	ur_engine_qp_lock(&to_uqp(ibqp)->uqp);
	rc = ur_qp_set_cc(&to_uqp(ibqp)->uqp, &p, ur_now());
	ur_engine_qp_unlock(&to_uqp(ibqp)->uqp);
	return -rc;
}

/* The public struct is a prefix of the transport's (whose peer_known an
 * application does not set: the peer shows it by its answers). */
static void sr_to_user(struct uroce_sr_params *u, const struct ur_sr_params *p)
{
	u->enable = p->enable;
	u->window = p->window;
	u->reorder_ns = p->reorder_ns;
	u->pool_pkts = p->pool_pkts;
}

URV_EXPORT int uroce_qp_query_sr(struct ibv_qp *ibqp,
				 struct uroce_sr_params *params,
				 uint32_t *state)
{
	struct ur_sr_params p;
	uint32_t st;

	if (!our_qp(ibqp) || !params)
		return EINVAL;
	ur_engine_qp_lock(&to_uqp(ibqp)->uqp);
	ur_qp_get_sr(&to_uqp(ibqp)->uqp, &p);
	st = ur_qp_sr_state(&to_uqp(ibqp)->uqp);
	ur_engine_qp_unlock(&to_uqp(ibqp)->uqp);
	sr_to_user(params, &p);
	if (state)
		*state = st;
	return 0;
}

URV_EXPORT int uroce_qp_set_sr(struct ibv_qp *ibqp,
			       const struct uroce_sr_params *params)
{
	struct ur_sr_params p;
	int rc;

	if (!our_qp(ibqp) || !params)
		return EINVAL;
	ur_engine_qp_lock(&to_uqp(ibqp)->uqp);
	/* The fields past the public prefix stay the QP's (its device's
	 * UROCE_SR_PACE). */
	ur_qp_get_sr(&to_uqp(ibqp)->uqp, &p);
	p = (struct ur_sr_params){
		.enable = params->enable, .window = params->window,
		.reorder_ns = params->reorder_ns, .pool_pkts = params->pool_pkts,
		.pace = p.pace,
	};
	rc = ur_qp_set_sr(&to_uqp(ibqp)->uqp, &p);
	ur_engine_qp_unlock(&to_uqp(ibqp)->uqp);
	return -rc;
}

URV_EXPORT int uroce_qp_set_jumbo(struct ibv_qp *ibqp, int on)
{
	int rc;

	if (!our_qp(ibqp) || on < 0 || on > UR_JUMBO_AUTO)
		return EINVAL;
	ur_engine_qp_lock(&to_uqp(ibqp)->uqp);
	rc = ur_qp_set_jumbo(&to_uqp(ibqp)->uqp, (unsigned int)on);
	ur_engine_qp_unlock(&to_uqp(ibqp)->uqp);
	return -rc;
}

URV_EXPORT int uroce_qp_query_jumbo(struct ibv_qp *ibqp, uint32_t *state)
{
	if (!our_qp(ibqp) || !state)
		return EINVAL;
	ur_engine_qp_lock(&to_uqp(ibqp)->uqp);
	*state = ur_qp_jumbo_state(&to_uqp(ibqp)->uqp);
	ur_engine_qp_unlock(&to_uqp(ibqp)->uqp);
	return 0;
}

/* Packet pacing: ibv_modify_qp_rate_limit (kbps, burst bytes). */
int urv__modify_qp_rate_limit(struct ibv_qp *ibqp,
			       struct ibv_qp_rate_limit_attr *attr)
{
	struct urv_qp *qp = to_uqp(ibqp);

	if (ibqp->qp_type == IBV_QPT_RAW_PACKET)
		return EOPNOTSUPP; /* pacing is the transport's */
	if (!attr || (attr->rate_limit &&
		      (attr->rate_limit < URV_PP_RATE_MIN_KBPS ||
		       attr->rate_limit > URV_PP_RATE_MAX_KBPS)))
		return EINVAL;
	if (attr->max_burst_sz > (1u << 30))
		return EINVAL;
	ur_engine_qp_lock(&qp->uqp);
	ur_qp_set_rate_limit(&qp->uqp, attr->rate_limit, attr->max_burst_sz);
	ur_engine_qp_unlock(&qp->uqp);
	ur_engine_qp_kick(qp->eng, &qp->uqp);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * Congestion control and shaping at the verbs boundary (docs/cc.md): the
 * device's parameters from the environment (UROCE_CC, UROCE_DCQCN_<NAME>,
 * UROCE_RATE_LIMIT_MBPS, UROCE_RATE_BURST_BYTES), per-QP parameters
 * (uroce_qp_set_cc, include/uroce/uroce.h) and packet pacing
 * (ibv_modify_qp_rate_limit). Out-of-range values are rejected with a
 * message that names the parameter and its range.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uroce/uroce.h>

#include "urv.h"

/* The public struct mirrors the transport's field by field. */
_Static_assert(sizeof(struct uroce_cc_params) == sizeof(struct ur_cc_params),
	       "cc params");
_Static_assert(offsetof(struct uroce_cc_params, algo) ==
		       offsetof(struct ur_cc_params, algo), "algo");
#define UR_CC_X(env, f, def, lo, hi, src)                                    \
	_Static_assert(offsetof(struct uroce_cc_params, f) ==                \
			       offsetof(struct ur_cc_params, f), #f);
UR_CC_PARAMS(UR_CC_X)
#undef UR_CC_X
_Static_assert((int)UROCE_CC_DCQCN == (int)UR_CC_DCQCN &&
		       (int)UROCE_CC_NONE == (int)UR_CC_NONE,
	       "algo values");

static void say_range(const char *who, const struct ur_cc_param_info *r,
		      unsigned long long v)
{
	fprintf(stderr,
		"uroce: %s%s=%llu out of range: %s must be in [%u, %u] "
		"(default %u)\n",
		who, r->env, v, r->env, r->min, r->max, r->def);
}

/* Parse a decimal value; -EINVAL with a message if it is not a number. */
static int env_u64(const char *name, unsigned long long *out)
{
	const char *v = getenv(name);
	char *end;

	if (!v || !*v)
		return 1;
	errno = 0;
	*out = strtoull(v, &end, 0);
	if (errno || *end || *v == '-') {
		fprintf(stderr, "uroce: %s=\"%s\" is not a number\n", name, v);
		return -EINVAL;
	}
	return 0;
}

/* env_u64, and a value above @max is -ERANGE with a message (@note says
 * what 0 or the bound means). */
static int env_bounded(const char *name, unsigned long long max,
		       const char *note, unsigned long long *out)
{
	int rc = env_u64(name, out);

	if (rc == 0 && *out > max) {
		fprintf(stderr, "uroce: %s=%llu out of range: must be in "
			"[0, %llu] (%s)\n", name, *out, max, note);
		return -ERANGE;
	}
	return rc;
}

/* Selective repeat (include/uroce/uroce.h): off unless UROCE_SR=1. */
static int sr_dev_init(struct ur_dev *dev)
{
	static const struct {
		const char *name;
		size_t off;
		unsigned long long lo, hi, scale;
	} k[] = {
		{ "UROCE_SR", offsetof(struct ur_sr_params, enable), 0, 1, 1 },
		{ "UROCE_SR_WINDOW", offsetof(struct ur_sr_params, window), 1, 65536, 1 },
		{ "UROCE_SR_REORDER_US", offsetof(struct ur_sr_params, reorder_ns), 0, 4000000, 1000 },
		{ "UROCE_SR_POOL", offsetof(struct ur_sr_params, pool_pkts), 1, 1u << 20, 1 },
	};
	struct ur_sr_params p;
	unsigned long long v;
	int rc;

	ur_sr_params_default(&p);
	p.enable = 0;
	if (p.window < dev->tx_window)
		p.window = dev->tx_window; /* hold what the sender may send */
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		rc = env_u64(k[i].name, &v);
		if (rc < 0)
			return rc;
		if (rc > 0)
			continue;
		if (v < k[i].lo || v > k[i].hi) {
			fprintf(stderr, "uroce: %s=%llu out of range: must be in "
				"[%llu, %llu]\n", k[i].name, v, k[i].lo, k[i].hi);
			return -ERANGE;
		}
		*(uint32_t *)((char *)&p + k[i].off) = (uint32_t)(v * k[i].scale);
	}
	dev->sr = p;
	return 0;
}

int __urv_cc_dev_init(struct ur_dev *dev)
{
	const char *algo = getenv("UROCE_CC");
	struct ur_cc_params p;
	unsigned long long v;
	int rc;

	ur_cc_params_default(&p);
	if (algo && *algo) {
		if (!strcmp(algo, "none") || !strcmp(algo, "0")) {
			p.algo = UR_CC_NONE;
		} else if (!strcmp(algo, "dcqcn") || !strcmp(algo, "1")) {
			p.algo = UR_CC_DCQCN;
		} else {
			fprintf(stderr, "uroce: UROCE_CC=\"%s\": must be "
				"\"dcqcn\" or \"none\"\n", algo);
			return -EINVAL;
		}
	}
	for (unsigned int i = 0; i < ur_cc_param_count; i++) {
		const struct ur_cc_param_info *r = &ur_cc_param_table[i];
		char name[64];

		snprintf(name, sizeof(name), "UROCE_DCQCN_%s", r->env);
		rc = env_u64(name, &v);
		if (rc < 0)
			return rc;
		if (rc > 0)
			continue;
		if (v < r->min || v > r->max) {
			say_range("UROCE_DCQCN_", r, v);
			return -ERANGE;
		}
		*(uint32_t *)((char *)&p + r->off) = (uint32_t)v;
	}
	dev->cc = p;
	rc = env_bounded("UROCE_RATE_LIMIT_MBPS", 400000, "0 = none", &v);
	if (rc < 0)
		return rc;
	if (!rc)
		dev->rate_bps = v * 1000000ull;
	rc = env_bounded("UROCE_RATE_BURST_BYTES", 1u << 30,
			 "0 = 200 us at the rate", &v);
	if (rc < 0)
		return rc;
	if (!rc)
		dev->rate_burst = v;
	/* The send window of new RC QPs (0: the device's default). */
	rc = env_bounded("UROCE_TX_WINDOW", 65536, "0 = default", &v);
	if (rc < 0)
		return rc;
	if (!rc && v)
		dev->tx_window = (uint32_t)v;
	rc = sr_dev_init(dev);
	if (rc)
		return rc;
	/* Jumbo packets (include/uroce/uroce.h): off unless UROCE_JUMBO=1. */
	rc = env_bounded("UROCE_JUMBO", 1, "1 = on", &v);
	if (rc < 0)
		return rc;
	if (!rc)
		dev->jumbo_default = v;
	/* Encryption (UROCE_CRYPT*, src/verbs/crypt.c). */
	return urv__crypt_dev_init(dev);
}

static bool our_qp(struct ibv_qp *qp)
{
	return qp && __urv_is_our_context(qp->context);
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
	memcpy(params, &p, sizeof(*params));
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
	memcpy(&p, params, sizeof(p));
	rc = ur_cc_params_check(&p, &bad);
	if (rc == -ERANGE && bad)
		say_range("uroce_qp_set_cc: ", bad,
			  *(const uint32_t *)((const char *)&p + bad->off));
	else if (rc)
		fprintf(stderr, "uroce: uroce_qp_set_cc: algo %u unknown "
			"(0 = none, 1 = dcqcn)\n", p.algo);
	if (rc)
		return -rc;
	ur_engine_qp_lock(&to_uqp(ibqp)->uqp);
	rc = ur_qp_set_cc(&to_uqp(ibqp)->uqp, &p, ur_now());
	ur_engine_qp_unlock(&to_uqp(ibqp)->uqp);
	return -rc;
}

_Static_assert(sizeof(struct uroce_sr_params) == sizeof(struct ur_sr_params),
	       "sr params");

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
	memcpy(params, &p, sizeof(*params));
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
	memcpy(&p, params, sizeof(p));
	ur_engine_qp_lock(&to_uqp(ibqp)->uqp);
	rc = ur_qp_set_sr(&to_uqp(ibqp)->uqp, &p);
	ur_engine_qp_unlock(&to_uqp(ibqp)->uqp);
	return -rc;
}

URV_EXPORT int uroce_qp_set_jumbo(struct ibv_qp *ibqp, int on)
{
	int rc;

	if (!our_qp(ibqp) || (on != 0 && on != 1))
		return EINVAL;
	ur_engine_qp_lock(&to_uqp(ibqp)->uqp);
	rc = ur_qp_set_jumbo(&to_uqp(ibqp)->uqp, on);
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
int __urv_modify_qp_rate_limit(struct ibv_qp *ibqp,
			       struct ibv_qp_rate_limit_attr *attr)
{
	struct urv_qp *qp = to_uqp(ibqp);

	if (!attr || (attr->rate_limit &&
		      (attr->rate_limit < URV_PP_RATE_MIN_KBPS ||
		       attr->rate_limit > URV_PP_RATE_MAX_KBPS)))
		return EINVAL;
	if (attr->max_burst_sz > (1u << 30))
		return EINVAL;
	ur_engine_qp_lock(&qp->uqp);
	ur_qp_set_rate_limit(&qp->uqp, attr->rate_limit, attr->max_burst_sz);
	ur_engine_qp_unlock(&qp->uqp);
	ur_engine_qp_kick(qp->ctx->eng, &qp->uqp);
	return 0;
}

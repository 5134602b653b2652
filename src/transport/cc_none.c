// SPDX-License-Identifier: MIT
/*
 * No congestion control (UROCE_CC=none): CNPs are counted and ignored, the
 * rate is never limited by the algorithm (a configured rate limit still
 * applies).
 */
#include "ur_cc.h"

static void none_init(struct ur_cc *cc, uint64_t now)
{
	(void)cc;
	(void)now;
}

static void none_bytes(struct ur_cc *cc, uint32_t bytes, uint64_t now)
{
	(void)cc;
	(void)bytes;
	(void)now;
}

static void none_cnp(struct ur_cc *cc, uint64_t now)
{
	(void)cc;
	(void)now;
}

static uint64_t none_timer(struct ur_cc *cc, uint64_t now)
{
	(void)cc;
	(void)now;
	return UINT64_MAX;
}

static uint64_t none_rate(const struct ur_cc *cc)
{
	(void)cc;
	return 0;
}

const struct ur_cc_ops ur_cc_none_ops = {
	.name = "none",
	.init = none_init,
	.on_sent = none_bytes,
	.on_ack = none_bytes,
	.on_cnp = none_cnp,
	.on_timer = none_timer,
	.rate = none_rate,
};

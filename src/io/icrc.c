// SPDX-License-Identifier: MIT
/*
 * Receive ICRC policy (docs/wire.md "ICRC on a UDP socket").
 *
 * A plain UDP socket hides the IPv4 ID, which the ICRC covers. uroce
 * senders use DF and ID 0 (or the segment index in a GSO run), so their
 * packets verify under that assumption; other RoCEv2 senders (rxe, NICs)
 * put a real ID there and cannot be verified. UROCE_ICRC picks what a
 * mismatch means:
 *
 *   off     accept, count rx_unverified_icrc (the UDP checksum is all we have)
 *   auto    (default) learn per source address: after UR_ICRC_LEARN
 *           consecutive verified packets the peer is a uroce sender and
 *           a mismatch is a corrupted packet: dropped, rx_drop_icrc.
 *           Before that, mismatches are accepted as unverified (and reset
 *           the run). UR_ICRC_FORGET consecutive mismatches from a learnt
 *           peer forget it (the address now belongs to another stack).
 *   strict  every mismatch is dropped (uroce-only deployments)
 *
 * A receive GRO run need not line up with the sender's GSO run (a packet
 * before it was lost or reordered), so for a sender that verified before,
 * a packet that fails under its GRO index and 0 is tried with every GSO
 * segment index (0..UR_IO_GSO_MAX_SEGS-1) before it counts as a mismatch.
 *
 * IPv6 has no ID: its ICRC is always fully known, so under auto/strict an
 * IPv6 mismatch is always a drop. The table is used under the engine's
 * rx_lock only.
 */
#include <stdlib.h>
#include <string.h>

#include "ur_io_priv.h"

#define UR_ICRC_PEERS 256   /* slots; a collision evicts (relearn) */
#define UR_ICRC_LEARN 16
#define UR_ICRC_FORGET 64

struct ur_icrc_peer {
	uint8_t addr[16];
	bool used, v6;
	uint16_t ok_run;     /* consecutive verified while learning */
	uint16_t bad_run;    /* consecutive mismatches once learnt */
	bool uroce;
	bool seen_ok;        /* verified at least once */
};

struct ur_icrc_learn {
	enum ur_icrc_policy policy;
	struct ur_icrc_peer peers[UR_ICRC_PEERS];
};

enum ur_icrc_policy __ur_icrc_policy_env(void)
{
	const char *s = getenv("UROCE_ICRC");

	if (!s || !*s || !strcmp(s, "auto"))
		return UR_ICRC_AUTO;
	if (!strcmp(s, "strict"))
		return UR_ICRC_STRICT;
	if (!strcmp(s, "off"))
		return UR_ICRC_OFF;
	return UR_ICRC_AUTO;
}

const char *__ur_icrc_policy_name(enum ur_icrc_policy p)
{
	return p == UR_ICRC_STRICT ? "strict" : p == UR_ICRC_OFF ? "off" : "auto";
}

struct ur_icrc_learn *__ur_icrc_learn_new(enum ur_icrc_policy p)
{
	struct ur_icrc_learn *l = calloc(1, sizeof(*l));

	if (l)
		l->policy = p;
	return l;
}

void __ur_icrc_learn_free(struct ur_icrc_learn *l)
{
	free(l);
}

static struct ur_icrc_peer *peer_of(struct ur_icrc_learn *l,
				    const struct ur_ipudp *p)
{
	uint32_t h = 2166136261u;
	size_t n = p->v6 ? 16 : 4;
	struct ur_icrc_peer *e;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p->src[i]) * 16777619u;
	e = &l->peers[h % UR_ICRC_PEERS];
	if (!e->used || e->v6 != p->v6 || memcmp(e->addr, p->src, n)) {
		memset(e, 0, sizeof(*e));
		e->used = true;
		e->v6 = p->v6;
		memcpy(e->addr, p->src, n);
	}
	return e;
}

bool __ur_icrc_accept(struct ur_icrc_learn *l, const struct ur_ipudp *path,
		      bool verified)
{
	struct ur_icrc_peer *e;

	if (!l || l->policy == UR_ICRC_OFF)
		return true;
	if (l->policy == UR_ICRC_STRICT || path->v6)
		return verified;
	e = peer_of(l, path);
	if (verified) {
		e->seen_ok = true;
		e->bad_run = 0;
		if (!e->uroce && ++e->ok_run >= UR_ICRC_LEARN)
			e->uroce = true;
		return true;
	}
	if (!e->uroce) {
		e->ok_run = 0;
		return true;
	}
	if (++e->bad_run >= UR_ICRC_FORGET) {
		e->uroce = false;
		e->ok_run = 0;
		e->bad_run = 0;
		return true;
	}
	return false;
}

bool __ur_icrc_would_drop(struct ur_icrc_learn *l, const struct ur_ipudp *path)
{
	if (!l || l->policy == UR_ICRC_OFF || path->v6)
		return false;
	/* Also while learning a sender that verified before (a uroce peer
	 * whose GRO run was cut), but not for rxe/NICs that never do. */
	return l->policy == UR_ICRC_STRICT || peer_of(l, path)->seen_ok;
}

bool __ur_icrc_search(const struct ur_ipudp *path, const uint8_t *buf,
		      size_t len, uint32_t want)
{
	struct ur_ipudp p = *path;

	/* A receive GRO run need not line up with the sender's GSO run (a
	 * packet lost or reordered before it): try every segment index. */
	for (uint16_t id = 1; id < UR_IO_GSO_MAX_SEGS; id++) {
		p.ip_id = id;
		if (ur_icrc(&p, buf, len - UR_ICRC_LEN) == want)
			return true;
	}
	return false;
}

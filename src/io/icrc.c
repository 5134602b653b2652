// SPDX-License-Identifier: MIT
/*
 * Receive ICRC check (docs/wire.md "What uroce checks on receive").
 *
 * A plain UDP socket hides the IPv4 ID and DF flag, which the ICRC covers.
 * The check first assumes what uroce senders use (the packet's index in
 * its GRO run as the ID, or 0, with DF), and on a mismatch recovers the ID
 * and flag from the ICRC itself (ur_icrc_fix_ipv4_id): an intact packet of
 * any sender (uroce, Linux rxe, a NIC) verifies, and a packet changed
 * anywhere else matches by chance once in 2^15. UROCE_ICRC picks what is
 * delivered:
 *
 *   auto    (default) a packet that no ID explains is dropped (rx_drop_icrc)
 *   strict  also one whose ID is not one an unconnected uroce socket sends
 *           (a GSO segment index, DF): uroce-only deployments, all strict
 *           (a strict engine keeps its QPs off connected sockets, csock.c)
 *   off     nothing is dropped; mismatches count as rx_unverified_icrc
 *
 * IPv6 has no ID: its ICRC is always fully known.
 */
#include <stdlib.h>
#include <string.h>

#include "ur_io_priv.h"

enum ur_icrc_policy ur__icrc_policy_env(void)
{
	/* The choices' order in settings.c: auto|strict|off. */
	static const enum ur_icrc_policy by_index[] = { UR_ICRC_AUTO,
							UR_ICRC_STRICT,
							UR_ICRC_OFF };
	unsigned long long i = ur_setting_val("UROCE_ICRC");

	return i < 3 ? by_index[i] : UR_ICRC_AUTO;
}

const char *ur__icrc_policy_name(enum ur_icrc_policy p)
{
	return p == UR_ICRC_STRICT ? "strict" : p == UR_ICRC_OFF ? "off" : "auto";
}

bool ur__icrc_check(enum ur_icrc_policy pol, struct ur_ipudp *path,
		     const uint8_t *buf, size_t len, bool *verified,
		     uint8_t *place, uint64_t *solved)
{
	size_t n = len - UR_ICRC_LEN;
	uint32_t want = ur_icrc_load(buf + n);
	uint32_t got = place ? ur_icrc_copy(path, buf, n, UR_BTH_LEN, place) :
			       ur_icrc(path, buf, n);

	*verified = got == want;
	if (!*verified) {
		/* The mismatch path only: what a uroce peer sends verifies
		 * above. */
		struct ur_ipudp p = *path;

		++*solved;
		if (ur_icrc_fix_ipv4_id(&p, n, got ^ want) &&
		    (pol != UR_ICRC_STRICT ||
		     (p.ip_id < UR_IO_GSO_MAX_SEGS && p.ip_frag == 0x4000))) {
			*path = p;
			*verified = true;
		}
	}
	return *verified || pol == UR_ICRC_OFF;
}

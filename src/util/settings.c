// SPDX-License-Identifier: MIT
/*
 * The table of every UROCE_* setting and its one parser (ur_settings.h).
 * A new setting is a row here; its documentation (README, uroce(7)) is
 * printed from the row by uroce-settings.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ur_settings.h"

#define DEV UR_SCOPE_DEVICE
#define CM UR_SCOPE_CM
#define COLL UR_SCOPE_COLL
#define TOOL UR_SCOPE_TOOL

/* Rows in the order the documentation lists them. */
const struct ur_setting ur_settings[] = {
	/* Devices and addresses. */
	{ .name = "UROCE_IP", .kind = UR_SET_TEXT, .scope = DEV,
	  .def_doc = "one device per interface that is up",
	  .doc = "one device uroce0 with this address (IPv4 or IPv6, an address of this machine) at GID index 0" },
	{ .name = "UROCE_PORTS", .kind = UR_SET_TEXT, .scope = DEV,
	  .def_doc = "one port per device",
	  .doc = "one device uroce0 with a port per entry: interface names or IP addresses, comma-separated, at most 8; port N is the N-th, with its own GIDs, sockets, MTU, link state and counters (docs/ports-classes.md); UROCE_IP is then ignored" },
	{ .name = "UROCE_BOND", .kind = UR_SET_TEXT, .scope = DEV,
	  .def_doc = "none",
	  .doc = "a bonded port: with UROCE_IP, the interfaces (2..8, comma-separated) over which its QPs' sprayed packets leave, path i by interface i mod n; needs UROCE_SR=1 at both ends (docs/ports-classes.md)" },
	{ .name = "UROCE_PORT", .kind = UR_SET_UINT, .scope = DEV | CM,
	  .min = 1, .max = 65535, .def = 4791,
	  .doc = "UDP port; anything but 4791 is for tests only and not interoperable" },
	{ .name = "UROCE_LOG", .kind = UR_SET_CHOICE,
	  .scope = DEV | CM | COLL, .choices = "error|warn|info|debug", .def = 1,
	  .doc = "log level: info traces device opening, QP and rdma_cm connection steps and error completions; debug adds the device scan" },
	{ .name = "UROCE_LOG_FILE", .kind = UR_SET_TEXT, .scope = DEV | CM | COLL,
	  .def_doc = "stderr",
	  .doc = "write the log to this file (appended; %p is the process ID)" },
	{ .name = "UROCE_VIEW", .kind = UR_SET_BOOL, .scope = TOOL, .def = 1,
	  .doc = "uroce-run shows the program the device view (/dev/infiniband, /sys/class/infiniband): docs/verbs.md" },
	{ .name = "UROCE_VIEW_DIR", .kind = UR_SET_TEXT, .scope = TOOL,
	  .def_doc = "written by uroce-view",
	  .doc = "the device view's directory (uroce-run sets it)" },
	/* Transport (read when a device opens). */
	{ .name = "UROCE_CC", .kind = UR_SET_CHOICE, .scope = DEV,
	  .choices = "none|dcqcn|swift|predict|auto", .def = 4,
	  .doc = "congestion control: DCQCN (ECN marks, a rate), Swift (measured delay, a window), predict (Swift's window on the delay a trained model predicts two RTTs ahead), or auto (the default): UROCE_CC_AUTO's algorithm towards a uroce peer in auto mode (negotiated by a hello to its QP1), DCQCN towards any other: docs/cc.md" },
	{ .name = "UROCE_CC_AUTO", .kind = UR_SET_CHOICE, .scope = DEV,
	  .choices = "dcqcn-rtt|swift", .def = 0,
	  .doc = "what UROCE_CC=auto runs between two uroce ends: DCQCN with its timers K and T at least the measured RTT (dcqcn-rtt; Swift with no base RTT when the hello's round trip is below UROCE_SWIFT_AUTO_RTT_US, 20 us: a fabric's), or Swift: docs/cc.md" },
	{ .name = "UROCE_CC_TRACE", .kind = UR_SET_TEXT, .scope = DEV,
	  .doc = "write a line per RTT sample of each Swift, predict or dcqcn-rtt QP to this file (%p is the process ID): time, QP number, delay, target, window, RTT, base, deviation, the ACK's wait in the host (Swift; dcqcn-rtt: rate, RTT, srtt, base, K and T; docs/cc.md \"Tracing\")" },
	{ .name = "UROCE_DCQCN_PROFILE", .kind = UR_SET_CHOICE, .scope = DEV,
	  .choices = "uroce|mlx5",
	  .doc = "DCQCN parameters as a set: uroce (measured in uroce-sim), mlx5 (firmware defaults, to match a hardware peer); UROCE_DCQCN_<NAME> still sets one: docs/cc.md" },
	{ .name = "UROCE_DCQCN_", .kind = UR_SET_FAMILY, .scope = DEV,
	  .choices = "per parameter", .def_doc = "per parameter",
	  .doc = "DCQCN parameters UROCE_DCQCN_<NAME>, each with its range: docs/cc.md" },
	{ .name = "UROCE_SWIFT_", .kind = UR_SET_FAMILY, .scope = DEV,
	  .choices = "per parameter", .def_doc = "per parameter",
	  .doc = "Swift parameters UROCE_SWIFT_<NAME> (TARGET_US, AI_MILLI, BETA_MILLI, MAX_MDF_MILLI, MIN_CWND_MILLI, INIT_CWND, BASE_WIN_MS, SLOW_START, PRED_MILLI, JITTER_K, ECN_CUT_MILLI, SS_EXIT_MILLI, FIRST_MSG_PKTS, TARGET_BASE_MILLI, STANDING_MILLI, LATE_MILLI, AUTO_RTT_US; also predict's), each with its range: docs/cc.md" },
	{ .name = "UROCE_RATE_LIMIT_MBPS", .kind = UR_SET_UINT, .scope = DEV,
	  .max = 400000, .def_doc = "0 (none)",
	  .doc = "a rate limit shared by the context's QPs: docs/cc.md" },
	{ .name = "UROCE_RATE_BURST_BYTES", .kind = UR_SET_UINT, .scope = DEV,
	  .max = 1u << 30, .def_doc = "0 (4 ms at the rate, at least 64 KiB)",
	  .doc = "burst of the rate limit" },
	{ .name = "UROCE_TC_TRUST", .kind = UR_SET_CHOICE, .scope = DEV,
	  .choices = "dscp|pcp",
	  .doc = "traffic classes: a QP's priority (0..7) is its traffic class's DSCP >> 3 (dscp, mlx5's default) or its AV's service level (pcp): docs/ports-classes.md" },
	{ .name = "UROCE_TC_STRICT", .kind = UR_SET_TEXT, .scope = DEV,
	  .choices = "priorities 0..7, e.g. 5 or 5,6", .def_doc = "none",
	  .doc = "traffic classes: the dedicated priorities, sent first under UROCE_RATE_LIMIT_MBPS (strict priority): docs/ports-classes.md" },
	{ .name = "UROCE_TC_WEIGHTS", .kind = UR_SET_TEXT, .scope = DEV,
	  .choices = "1..8 weights 1..100, priority 0 first", .def_doc = "1 each",
	  .doc = "traffic classes: ETS weights with which the other priorities share the rate limit: docs/ports-classes.md" },
	{ .name = "UROCE_TC_MIN_MBPS", .kind = UR_SET_TEXT, .scope = DEV,
	  .choices = "1..8 rates 0..400000, priority 0 first", .def_doc = "0 each",
	  .doc = "traffic classes: a minimum rate per priority, served before the dedicated ones: docs/ports-classes.md" },
	{ .name = "UROCE_TX_WINDOW", .kind = UR_SET_UINT, .scope = DEV,
	  .max = 65536, .def_doc = "0 (512 on loopback, else 256)",
	  .doc = "send window of new RC QPs in packets (at most 4 MiB in flight): docs/transport.md" },
	{ .name = "UROCE_SR", .kind = UR_SET_CHOICE, .scope = DEV,
	  .choices = "0|1|auto", .def = 2,
	  .doc = "selective repeat of RC QPs: auto (the default) negotiates it with a uroce peer (a standard peer sees plain RoCEv2), 1 offers it to every peer, 0 off (go-back-N only): docs/wire.md, bench/results/2026-12-07-loss.md" },
	{ .name = "UROCE_SR_WINDOW", .kind = UR_SET_UINT, .scope = DEV,
	  .min = 1, .max = 65536, .def = 256,
	  .def_doc = "256, at least the send window",
	  .doc = "selective repeat: packets the receiver holds out of order" },
	{ .name = "UROCE_SR_REORDER_US", .kind = UR_SET_UINT, .scope = DEV,
	  .max = 4000000, .def = 20,
	  .doc = "selective repeat: how long a gap may wait before it is NAKed" },
	{ .name = "UROCE_SR_PACE", .kind = UR_SET_CHOICE, .scope = DEV,
	  .choices = "0|1", .def = 0,
	  .doc = "selective repeat on one port, 1: once the peer reports a loss and no ECN CNP came, pace at the max-filtered delivery rate with at most 2 x its bandwidth-delay product past what the peer has (as TCP BBR), instead of a whole window into the bottleneck's queue (in virtual time 0.82 of the link at 5 % loss against 0.71; on this VM's bed it lost, so off by default); 0: off: docs/transport.md \"Pacing at the delivery rate\"" },
	{ .name = "UROCE_SR_POOL", .kind = UR_SET_UINT, .scope = DEV,
	  .min = 1, .max = 1u << 20, .def = 8192,
	  .doc = "selective repeat: packets buffered per device" },
	{ .name = "UROCE_PATHS", .kind = UR_SET_UINT, .scope = DEV,
	  .min = 1, .max = 16, .def = 1,
	  .doc = "an RC QP with selective repeat sprays its requests over this many UDP source ports once the peer holds reordered requests (a uroce peer; a standard peer sees one port), for ECMP fabrics that hash ports (e.g. 8); 1: its own port only (the default: on one path, spraying by default caused needless resends: docs/wire.md \"Spraying\")" },
	{ .name = "UROCE_SPRAY_RUN", .kind = UR_SET_UINT, .scope = DEV,
	  .min = 1, .max = 64, .def = 32,
	  .doc = "a spraying QP's new requests per turn of its paths (one GSO send each); 1: a path per request, which takes a cut ECMP link over faster but breaks every batched send (one path with the CPU the bottleneck: far slower): docs/wire.md \"Spraying\"" },
	{ .name = "UROCE_JUMBO", .kind = UR_SET_CHOICE, .scope = DEV,
	  .choices = "0|1|auto", .def = 2,
	  .doc = "jumbo packets between uroce RC QPs: auto (the default) negotiates 16 KiB packets with a uroce peer on links that carry them (loopback; a standard peer sees plain RoCEv2); 1 offers them to every peer, and 8 KiB ones on 9000-byte Ethernet too (not by default: they changed the congestion bed's drops and fairness, docs/cc.md); 0 off: docs/wire.md \"Jumbo packets\"" },
	{ .name = "UROCE_CRYPT", .kind = UR_SET_CHOICE, .scope = DEV,
	  .choices = "off|allow|require",
	  .doc = "encryption of RC/UC QPs: allow negotiates and falls back to plain, require refuses plain peers: docs/security.md" },
	{ .name = "UROCE_CRYPT_KEY", .kind = UR_SET_TEXT, .scope = DEV,
	  .def_doc = "none",
	  .doc = "encryption: the file holding the 32-byte administrator key (owner-only: chmod 600)" },
	{ .name = "UROCE_CRYPT_ALG", .kind = UR_SET_TEXT, .scope = DEV,
	  .def_doc = "aes-256-gcm",
	  .doc = "encryption: aes-256-gcm or sm4-gcm" },
	/* The engine (read when a device opens). */
	{ .name = "UROCE_IWARP", .kind = UR_SET_BOOL, .scope = DEV,
	  .doc = "every device speaks iWARP (RDMAP/DDP/MPA over TCP, as siw) instead of RoCEv2: transport iWARP, node RNIC, RC QPs connected by rdma_cm over TCP (docs/verbs.md \"iWARP\")" },
	{ .name = "UROCE_SHM", .kind = UR_SET_BOOL, .scope = DEV,
	  .doc = "devices of this machine and network namespace that also set it exchange packets through shared memory (uroce-launch sets it): docs/engine.md" },
	{ .name = "UROCE_SHM_RING_KB", .kind = UR_SET_UINT, .scope = DEV,
	  .min = 64, .max = 256 * 1024, .def = 8192,
	  .doc = "size of each shared-memory lane in KiB (rounded up to a power of two)" },
	{ .name = "UROCE_GSO", .kind = UR_SET_BOOL, .scope = DEV, .def = 1,
	  .doc = "send runs of packets as UDP GSO batches (0: one datagram each)" },
	{ .name = "UROCE_ZCOPY", .kind = UR_SET_BOOL, .scope = DEV, .def = 1,
	  .doc = "send payloads straight from registered memory (0: copy first)" },
	{ .name = "UROCE_CONNECT", .kind = UR_SET_BOOL, .scope = DEV, .def = 1,
	  .doc = "a connected UDP socket per peer (0: one unconnected socket)" },
	{ .name = "UROCE_ICRC", .kind = UR_SET_CHOICE, .scope = DEV,
	  .choices = "auto|strict|off",
	  .doc = "a packet whose ICRC fails is dropped (auto), dropped with those whose IPv4 ID uroce does not send (strict), or delivered and counted (off): docs/security.md" },
	{ .name = "UROCE_STATS", .kind = UR_SET_BOOL, .scope = DEV,
	  .doc = "print the device counters at close, and at exit for contexts never closed (live: uroce-stat)" },
	{ .name = "UROCE_STAT_FILE", .kind = UR_SET_BOOL, .scope = DEV, .def = 1,
	  .doc = "write the counters to /dev/shm/uroce-<pid>-<dev> for uroce-stat" },
	/* rdma_cm (librdmacm). */
	{ .name = "UROCE_CM_TIMEOUT_MS", .kind = UR_SET_UINT, .scope = CM,
	  .min = 1, .max = 3600000, .def = 5000,
	  .doc = "rdma_cm: a connection step that gets no answer this long fails" },
	{ .name = "UROCE_CM_RESEND_MS", .kind = UR_SET_UINT, .scope = CM,
	  .min = 1, .max = 600000, .def = 1000,
	  .doc = "rdma_cm: interval between resends of an unanswered CM MAD" },
	/* Collectives (liburoce_coll), read when a communicator is made. */
	{ .name = "UROCE_COLL_ALGO", .kind = UR_SET_TEXT, .scope = COLL,
	  .def_doc = "chosen by size",
	  .doc = "collectives: the algorithm (ring, rabenseifner, recursive_doubling, tree, bruck, ...): docs/collectives.md" },
	{ .name = "UROCE_COLL_DEV", .kind = UR_SET_TEXT, .scope = COLL,
	  .def_doc = "the first device", .doc = "collectives: the device" },
	{ .name = "UROCE_COLL_GID", .kind = UR_SET_UINT, .scope = COLL,
	  .max = 255, .doc = "collectives: the GID index" },
	{ .name = "UROCE_COLL_TIMEOUT_MS", .kind = UR_SET_UINT, .scope = COLL,
	  .min = 1, .max = 86400000, .def = 30000,
	  .doc = "collectives: no progress this long fails the collective" },
	{ .name = "UROCE_COLL_SLOT_KB", .kind = UR_SET_UINT, .scope = COLL,
	  .min = 1, .max = 64 * 1024, .def = 256,
	  .doc = "collectives: size of an eager slot in KiB" },
	{ .name = "UROCE_COLL_SLOTS", .kind = UR_SET_UINT, .scope = COLL,
	  .min = 1, .max = 1024, .def = 8,
	  .doc = "collectives: eager slots per peer" },
	{ .name = "UROCE_COLL_SPIN_US", .kind = UR_SET_UINT, .scope = COLL,
	  .max = 10000000, .def = 1000,
	  .def_doc = "1000; 30 with more local ranks than CPUs",
	  .doc = "collectives: how long a waiting rank polls before it blocks" },
	{ .name = "UROCE_COLL_PROGRESS_SPIN_US", .kind = UR_SET_UINT, .scope = COLL,
	  .max = 10000000, .def = 1000,
	  .def_doc = "UROCE_COLL_SPIN_US; 30 with more local ranks than CPUs",
	  .doc = "collectives: how long the progress thread polls before it blocks: docs/collectives.md" },
	{ .name = "UROCE_COLL_YIELD", .kind = UR_SET_BOOL, .scope = COLL, .def = 1,
	  .doc = "collectives: yield the CPU between polls" },
	{ .name = "UROCE_COLL_BLOCK_US", .kind = UR_SET_UINT, .scope = COLL,
	  .min = 1, .max = 1000, .def = 200,
	  .doc = "collectives: longest single block while waiting" },
	{ .name = "UROCE_COLL_QP_TIMEOUT", .kind = UR_SET_UINT, .scope = COLL,
	  .min = 1, .max = 31, .def = 14,
	  .doc = "collectives: local ACK timeout exponent (4.096 us * 2^n)" },
	{ .name = "UROCE_COLL_REGCACHE", .kind = UR_SET_UINT, .scope = COLL,
	  .max = 1u << 20, .def = 16, .def_doc = "16 on uroce, 0 elsewhere",
	  .doc = "collectives: registrations cached by address (0: off)" },
	{ .name = "UROCE_COLL_JUMBO", .kind = UR_SET_BOOL, .scope = COLL,
	  .def = 1, .def_doc = "1 on uroce, 0 elsewhere",
	  .doc = "collectives: offer jumbo packets on every QP" },
	{ .name = "UROCE_COLL_CMA", .kind = UR_SET_BOOL, .scope = COLL,
	  .def = 0, .def_doc = "UROCE_SHM's value",
	  .doc = "collectives: a direct stream between ranks of one host is one process_vm_writev into the receiver's buffer: docs/collectives.md" },
	{ .name = "UROCE_COLL_SEG_KB", .kind = UR_SET_UINT, .scope = COLL,
	  .max = 262144, .def = 16384,
	  .doc = "collectives: with UROCE_COLL_CMA, allreduce and all-to-all up to this many KiB per rank go through shared segments, no messages, and all-to-all at any size once its blocks reach 32 KiB (0: off; set alike on every rank): docs/collectives.md" },
	{ .name = "UROCE_COLL_PROGRESS", .kind = UR_SET_BOOL, .scope = COLL,
	  .def = 1,
	  .doc = "collectives: a progress thread per communicator runs non-blocking operations (0: wait and test drive them): docs/collectives.md" },
	{ .name = "UROCE_COLL_LANES", .kind = UR_SET_UINT, .scope = COLL,
	  .min = 1, .max = 8, .def = 2,
	  .doc = "collectives: how many collectives of one communicator progress at once (each lane its own QPs and staging slots; 1: one after another): docs/collectives.md" },
	{ .name = "UROCE_COLL_RAILS", .kind = UR_SET_TEXT, .scope = COLL,
	  .def_doc = "auto",
	  .doc = "collectives: the rails a communicator stripes large collectives over, one set of QPs per rail: auto (every active port of its device), one (port 1 only), or DEV[:PORT][@WEIGHT],... (the first is the communicator's own; weights are relative, default the port's rate): docs/collectives.md" },
	{ .name = "UROCE_COLL_LIB", .kind = UR_SET_TEXT, .scope = TOOL,
	  .def_doc = "liburoce_coll.so.0",
	  .doc = "python binding: the collectives library to load" },
	{ .name = "UROCE_IP_", .kind = UR_SET_FAMILY, .scope = TOOL,
	  .choices = "an address",
	  .def_doc = "127.0.1.<r+1> on this machine, the host's address on others",
	  .doc = "uroce-launch: UROCE_IP_<r> is rank r's address" },
	{ .name = "UROCE_TEST_NETNS", .kind = UR_SET_BOOL, .scope = TOOL,
	  .def = 1,
	  .doc = "the test suite: each ctest test in a network namespace of its own, so that parallel runs on one machine do not collide (0: on the machine's network): docs/testing.md" },
};
const size_t ur_settings_count = sizeof(ur_settings) / sizeof(ur_settings[0]);

static const char *const bool_words[][2] = {
	{ "0", "1" }, { "n", "y" }, { "no", "yes" }, { "off", "on" },
	{ "false", "true" },
};

const struct ur_setting *ur_setting_find(const char *name)
{
	for (size_t i = 0; i < ur_settings_count; i++)
		if (!strcmp(ur_settings[i].name, name))
			return &ur_settings[i];
	return NULL;
}

void ur_setting_allowed(const struct ur_setting *s, char *buf, size_t len)
{
	switch (s->kind) {
	case UR_SET_UINT:
		snprintf(buf, len, "%llu..%llu", s->min, s->max);
		break;
	case UR_SET_BOOL:
		snprintf(buf, len, "0|1");
		break;
	case UR_SET_CHOICE:
		snprintf(buf, len, "%s", s->choices);
		break;
	default:
		snprintf(buf, len, "text");
		break;
	}
}

/* The default as the documentation and the messages show it. */
static void say_default(const struct ur_setting *s, char *buf, size_t len)
{
	const char *c = s->choices;

	if (s->def_doc) {
		snprintf(buf, len, "%s", s->def_doc);
	} else if (s->kind == UR_SET_CHOICE) {
		for (unsigned long long i = 0; i < s->def && c; i++) {
			c = strchr(c, '|');
			c = c ? c + 1 : NULL;
		}
		snprintf(buf, len, "%.*s", c ? (int)strcspn(c, "|") : 0, c ? c : "");
	} else {
		snprintf(buf, len, "%llu", s->def);
	}
}

static int refuse(const struct ur_setting *s, const char *text, int err,
		  const char *what, char *why, size_t len)
{
	char allowed[96], def[96];

	ur_setting_allowed(s, allowed, sizeof(allowed));
	say_default(s, def, sizeof(def));
	snprintf(why, len, "%s=%s: %s; allowed: %s (default %s)", s->name,
		 text, what, allowed, def);
	return err;
}

int ur_setting_parse(const struct ur_setting *s, const char *text,
		     unsigned long long *out, char *why, size_t len)
{
	const char *c;
	char *end;
	size_t n;

	switch (s->kind) {
	case UR_SET_UINT:
		/* strtoull takes "-3" as a huge number: refuse signs first. */
		if (!isdigit((unsigned char)*text))
			return refuse(s, text, -EINVAL, "not a number", why, len);
		errno = 0;
		*out = strtoull(text, &end, 0);
		if (errno == ERANGE)
			return refuse(s, text, -ERANGE, "out of range", why, len);
		if (errno || *end)
			return refuse(s, text, -EINVAL, "not a number", why, len);
		if (*out < s->min || *out > s->max)
			return refuse(s, text, -ERANGE, "out of range", why, len);
		return 0;
	case UR_SET_BOOL:
		for (size_t i = 0; i < sizeof(bool_words) / sizeof(bool_words[0]); i++)
			for (int v = 0; v < 2; v++)
				if (!strcasecmp(text, bool_words[i][v])) {
					*out = (unsigned long long)v;
					return 0;
				}
		return refuse(s, text, -EINVAL, "not 0 or 1", why, len);
	case UR_SET_CHOICE:
		c = s->choices;
		for (unsigned long long i = 0; c; i++) {
			n = strcspn(c, "|");
			if (strlen(text) == n && !strncmp(text, c, n)) {
				*out = i;
				return 0;
			}
			c = c[n] ? c + n + 1 : NULL;
		}
		return refuse(s, text, -EINVAL, "not one of the choices", why, len);
	default:
		*out = 0;
		return 0;
	}
}

int ur_setting_get(const char *name, unsigned long long *out)
{
	const struct ur_setting *s = ur_setting_find(name);
	const char *v = getenv(name);
	char why[256];
	int rc;

	if (!s) { /* a row is missing: a bug, said loudly */
		fprintf(stderr, "uroce: internal: %s is not in the settings table\n", name);
		*out = 0;
		return -ENOENT;
	}
	*out = s->def;
	if (!v || !*v)
		return 1;
	rc = ur_setting_parse(s, v, out, why, sizeof(why));
	if (rc) {
		fprintf(stderr, "uroce: %s\n", why);
		*out = s->def;
	}
	return rc;
}

unsigned long long ur_setting_val(const char *name)
{
	unsigned long long v;

	ur_setting_get(name, &v);
	return v;
}

const char *ur_setting_str(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

int ur_settings_check(unsigned int scopes)
{
	unsigned long long v;
	int bad = 0;

	for (size_t i = 0; i < ur_settings_count; i++) {
		const struct ur_setting *s = &ur_settings[i];

		if (!(s->scope & scopes) || s->kind == UR_SET_TEXT ||
		    s->kind == UR_SET_FAMILY)
			continue;
		if (ur_setting_get(s->name, &v) < 0)
			bad = -EINVAL;
	}
	return bad;
}

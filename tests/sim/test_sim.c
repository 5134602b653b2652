// SPDX-License-Identifier: MIT
/*
 * uroce-sim at small scale: determinism, DCQCN fair share on one
 * bottleneck, ECMP max path load vs balls into bins, incast queue growth vs
 * arithmetic, PFC losslessness, config and trace errors with line numbers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"
#include "ur_test.h"

static struct sim *mk(struct sim_cfg *c)
{
	char err[256];
	struct sim *s = sim_create(c, err, sizeof(err));

	if (!s)
		UR_FAIL("sim_create: %s", err);
	if (sim_workload(s, err, sizeof(err)))
		UR_FAIL("sim_workload: %s", err);
	return s;
}

/* The small adaptive all-to-all the determinism checks run (k=4, 16
 * hosts, random placement), and a fold of its flows' completion times. */
static void a2a_cfg(struct sim_cfg *c, uint32_t bytes)
{
	sim_cfg_default(c);
	c->k = 4;
	c->work = SIM_WORK_ALLTOALL;
	c->bytes = bytes;
	c->lb = SIM_LB_ADAPTIVE;
	c->random_placement = true;
}

static uint64_t flows_fold(struct sim *s)
{
	uint32_t n;
	const struct sim_flow *f = sim_flows(s, &n);
	uint64_t sum = 0;

	for (uint32_t j = 0; j < n; j++)
		sum = sum * 31 + f[j].t_done;
	return sum;
}

/* Same seed, same everything; another seed, a different run. */
static void test_deterministic(void)
{
	uint64_t t_last[3], events[3];
	uint64_t sum[3];

	for (int i = 0; i < 3; i++) {
		struct sim_cfg c;
		struct sim_result r;
		struct sim *s;

		a2a_cfg(&c, 32 << 10);
		c.seed = i < 2 ? 7 : 8;
		s = mk(&c);
		sim_run(s, UINT64_MAX);
		sim_result(s, &r);
		ASSERT_EQ(r.flows_done, r.flows);
		/* one RC QP per host per peer: 16 hosts x 15 peers */
		ASSERT_EQ_U64(r.qps, 16 * 15);
		sum[i] = flows_fold(s);
		t_last[i] = r.t_last;
		events[i] = r.events;
		sim_destroy(s);
	}
	ASSERT_EQ_U64(t_last[0], t_last[1]);
	ASSERT_EQ_U64(events[0], events[1]);
	ASSERT_EQ_U64(sum[0], sum[1]);
	ASSERT(sum[0] != sum[2]);
}

/* The calendar queue (evq calendar, the default) pops events in exactly
 * the order of the binary heaps (evq heap): the same events, hops and
 * per-flow completions, bit for bit. A sprayed all-to-all with loss,
 * PFC, ECN and a link that fails and is rerouted mid-run; and with a
 * 100 us link delay, whose arrivals lie beyond the calendar (they go to
 * the heap beside it) while the ports' ends of serialisation do not. */
static void test_evq_same_order(void)
{
	static const uint64_t delay[2] = { 1000, 100000 };
	char err[256];

	for (int d = 0; d < 2; d++) {
		uint64_t sum[2], ev[2], hops[2], retx[2], last[2];

		for (int q = 0; q < 2; q++) {
			struct sim_cfg c;
			struct sim_result r;
			struct sim *s;

			a2a_cfg(&c, 48 << 10);
			c.link_delay_ns = delay[d];
			c.timeout = 8;
			c.evq = q ? SIM_EVQ_HEAP : SIM_EVQ_CALENDAR;
			ASSERT_EQ(sim_cfg_set(&c, "degrade", "a0 c0 100 0.01",
					      err, sizeof(err)), 0);
			ASSERT_EQ(sim_cfg_set(&c, "fail", "a2 c1 at=20", err,
					      sizeof(err)), 0);
			ASSERT_EQ(sim_cfg_set(&c, "reroute_us", "10", err,
					      sizeof(err)), 0);
			s = mk(&c);
			sim_run(s, UINT64_MAX);
			sim_result(s, &r);
			ASSERT_EQ(r.flows_done, r.flows);
			sum[q] = flows_fold(s);
			ev[q] = r.events;
			hops[q] = r.hops;
			retx[q] = r.retransmits;
			last[q] = r.t_last;
			printf("delay %lu ns evq %s: %lu events, %lu hops, "
			       "%lu retransmits, completion %.1f us\n",
			       (unsigned long)delay[d], q ? "heap" : "calendar",
			       (unsigned long)ev[q], (unsigned long)hops[q],
			       (unsigned long)retx[q],
			       (r.t_last - r.t_first) / 1e3);
			sim_destroy(s);
		}
		ASSERT_GT(retx[0], 0); /* the loss and the failure did bite */
		ASSERT_EQ_U64(ev[0], ev[1]);
		ASSERT_EQ_U64(hops[0], hops[1]);
		ASSERT_EQ_U64(retx[0], retx[1]);
		ASSERT_EQ_U64(last[0], last[1]);
		ASSERT_EQ_U64(sum[0], sum[1]);
	}
	ASSERT(sim_cfg_set(&(struct sim_cfg){ 0 }, "evq", "ladder", err,
			   sizeof(err)) < 0);
}

/* Two long DCQCN flows through one bottleneck (a leaf-spine with
 * one spine, 25 Gb/s, the paper's marking Kmin 5 KB, Kmax 200 KB, Pmax 1 %;
 * both senders behind leaf 0, the receiver behind leaf 1; the second flow
 * starts 1 ms later): over the last part of the run each gets
 * close to half, and together they fill the link. Twice: mlx5's profile
 * with the paper's timers (K = T = 55 us) and R_AI = 40 Mb/s (with mlx5's
 * own 300 us and 5 Mb/s recovery takes far longer), the default
 * profile as it is, its rates scaled to the 25 Gb/s hosts, and that
 * profile under dcqcn-rtt (what two uroce ends run on hosts whose RTT
 * is their own), whose K and T follow the RTT the simulated transport
 * measures from its ACKs, and cc=auto, which on this fabric's RTT is
 * Swift (ur_cc.c ur__cc_auto_pick): no srtt of dcqcn-rtt's. */
enum fair_mode { FAIR_MLX5, FAIR_UROCE, FAIR_RTT, FAIR_AUTO, FAIR_SWIFT };

static void fair_run(enum fair_mode mode)
{
	static const char *const names[] = { "dcqcn mlx5 + paper timers",
					      "dcqcn uroce", "dcqcn-rtt",
					      "auto (Swift here)",
					      "swift (plain)" };
	bool mlx5 = mode == FAIR_MLX5;
	struct sim_cfg c;
	struct sim *s;
	uint64_t a0, b0, a1, b1, t0 = 40000000, t1 = 60000000, sa, sb;
	double x, y, jain;
	char err[256];

	sim_cfg_default(&c);
	c.topo = SIM_TOPO_LEAFSPINE;
	c.leaves = 2;
	c.spines = 1;
	c.hosts_per_leaf = 2;
	c.pfc = false; /* only ECN/DCQCN acts */
	c.buffer_bytes = 8 << 20;
	c.host_bps = c.fabric_bps = 25000000000ull;
	c.kmin = 5 << 10;
	c.kmax = 200 << 10;
	c.pmax = 0.01;
	if (mlx5) {
		c.cc_profile = (uint32_t)(ur_cc_profile_find("mlx5") -
					  ur_cc_profiles);
		c.cc.rate_timer_us = 55;
		c.cc.ai_mbps = 40;
		c.cc.hai_mbps = 200;
	}
	if (mode == FAIR_RTT || mode == FAIR_AUTO) {
		ASSERT_EQ(sim_cfg_set(&c, "cc", mode == FAIR_AUTO ? "auto"
								 : "dcqcn-rtt",
				      err, sizeof(err)), 0);
		ASSERT_EQ(c.cc.algo, UR_CC_DCQCN_RTT);
		ASSERT_EQ(c.cc_auto, mode == FAIR_AUTO);
	}
	/* Plain Swift: the second flow comes 1 ms into the first's queue
	 * (a 10 s base taken behind it: 24.6 against 0.0 Gb/s, cc9). */
	if (mode == FAIR_SWIFT)
		ASSERT_EQ(sim_cfg_set(&c, "cc", "swift", err, sizeof(err)), 0);
	s = mk(&c);
	sim_add_flow(s, 0, 2, 1u << 30, 0);
	sim_add_flow(s, 1, 2, 1u << 30, 1000000);
	sim_run(s, t0);
	a0 = sim_qp_tx_bytes(s, 0, 2);
	b0 = sim_qp_tx_bytes(s, 1, 2);
	sim_run(s, t1);
	a1 = sim_qp_tx_bytes(s, 0, 2);
	b1 = sim_qp_tx_bytes(s, 1, 2);
	x = (double)(a1 - a0) * 8 / ((t1 - t0) / 1e9) / 1e9;
	y = (double)(b1 - b0) * 8 / ((t1 - t0) / 1e9) / 1e9;
	jain = (x + y) * (x + y) / (2 * (x * x + y * y));
	sa = sim_qp_srtt(s, 0, 2);
	sb = sim_qp_srtt(s, 1, 2);
	printf("%s: flow A %.1f Gb/s, flow B %.1f Gb/s, Jain %.3f, rates %.1f / %.1f, srtt %.1f / %.1f us\n",
	       names[mode], x, y, jain, sim_qp_rate(s, 0, 2) / 1e9,
	       sim_qp_rate(s, 1, 2) / 1e9, sa / 1e3, sb / 1e3);
	/* dcqcn-rtt is less fair here: 11.4 / 6.6 Gb/s (Jain 0.935), and
	 * A ~12 against B ~7 over 200 ms (docs/results.md "The default in
	 * the simulator"); the bound guards that, it is not the target. */
	ASSERT(jain > (mode == FAIR_RTT ? 0.9 : 0.95));
	ASSERT(x + y > 15); /* of 25 Gb/s of wire, ~24.6 of payload */
	if (mode == FAIR_RTT) {
		/* Four 1 us hops each way and at most Kmax (200 KB, 64 us
		 * at 25 Gb/s) of queue: the srtt lies between. */
		ASSERT(sa >= 8000 && sa < 200000);
		ASSERT(sb >= 8000 && sb < 200000);
	} else {
		ASSERT_EQ_U64(sa, 0); /* DCQCN measures no RTT */
	}
	sim_destroy(s);
}

static void test_dcqcn_fair(void)
{
	fair_run(FAIR_MLX5);
	fair_run(FAIR_UROCE);
	fair_run(FAIR_RTT);
	fair_run(FAIR_AUTO);
	fair_run(FAIR_SWIFT);
}

/* dcqcn_profile picks a row of ur_cc_profiles; its rates follow host_gbps
 * whichever key comes first, and a dcqcn_<field> key still sets one field
 * over it. Rate keys take fractions of a Gb/s. */
static void test_cc_profile(void)
{
	struct ur_cc_params p;
	struct sim_cfg c;
	char err[256];

	sim_cfg_default(&c);
	sim_cfg_cc(&c, &p);
	ASSERT_EQ(p.algo, UR_CC_DCQCN);
	ASSERT_EQ(p.rate_timer_us, 10);
	ASSERT_EQ(p.first_cnp_mbps, 5000); /* 100 Gb/s hosts */
	ASSERT_EQ(sim_cfg_set(&c, "dcqcn_ai_mbps", "7", err, sizeof(err)), 0);
	ASSERT_EQ(sim_cfg_set(&c, "dcqcn_profile", "mlx5", err, sizeof(err)), 0);
	sim_cfg_cc(&c, &p);
	ASSERT_EQ(p.rate_timer_us, 300);
	ASSERT_EQ(p.hai_mbps, 50);
	ASSERT_EQ(p.ai_mbps, 7);
	ASSERT_EQ(sim_cfg_set(&c, "dcqcn_profile", "uroce", err, sizeof(err)), 0);
	ASSERT_EQ(sim_cfg_set(&c, "host_gbps", "25", err, sizeof(err)), 0);
	sim_cfg_cc(&c, &p);
	ASSERT_EQ(p.hai_mbps, 2500);
	ASSERT_EQ(p.min_rate_mbps, 250);
	ASSERT_EQ(p.first_cnp_mbps, 1250);
	ASSERT_EQ(p.ai_mbps, 7);
	/* dcqcn-rtt takes the same profile and fields (the engine's auto
	 * does too: verbs/cc.c). */
	ASSERT_EQ(sim_cfg_set(&c, "cc", "dcqcn-rtt", err, sizeof(err)), 0);
	sim_cfg_cc(&c, &p);
	ASSERT_EQ(p.algo, UR_CC_DCQCN_RTT);
	ASSERT_EQ(p.hai_mbps, 2500);
	ASSERT_EQ(p.ai_mbps, 7);
	ASSERT_EQ(ur_cc_params_check(&p, NULL), 0);
	ASSERT_EQ(sim_cfg_set(&c, "cc", "dcqcn-rt", err, sizeof(err)), -1);
	ASSERT_EQ(sim_cfg_set(&c, "cc", "dcqcn", err, sizeof(err)), 0);
	ASSERT_EQ(sim_cfg_set(&c, "dcqcn_profile", "dctcp", err, sizeof(err)), -1);
	ASSERT(strstr(err, "dcqcn_profile") != NULL);
	/* Rates below 1 Gb/s, scaled before they become whole bits per
	 * second; a fraction of a whole quantity and a zero rate refused
	 * (0.3 once became 0, and a division by it). */
	ASSERT_EQ(sim_cfg_set(&c, "fabric_gbps", "0.3", err, sizeof(err)), 0);
	ASSERT_EQ(c.fabric_bps, 300000000ull);
	ASSERT_EQ(sim_cfg_set(&c, "buffer_kb", "1.5", err, sizeof(err)), 0);
	ASSERT_EQ(c.buffer_bytes, 1536);
	ASSERT_EQ(sim_cfg_set(&c, "fabric_gbps", "0", err, sizeof(err)), -1);
	ASSERT(strstr(err, "fabric_gbps must be above 0") != NULL);
	ASSERT_EQ(sim_cfg_set(&c, "k", "2.5", err, sizeof(err)), -1);
	ASSERT(strstr(err, "'k'") != NULL);
}

/* ECMP: N flows hashed over M equal paths (a leaf's M spine uplinks). The
 * most loaded path over many trials matches balls into bins (uniform
 * random bins, same N and M). */
static void test_ecmp_bins(void)
{
	const uint32_t nflows = 32, trials = 400;
	struct sim_cfg c;
	struct sim *s;
	uint64_t rng = 12345;
	double hash_max = 0, ideal_max = 0;
	int leaf;
	uint32_t m;

	sim_cfg_default(&c);
	c.topo = SIM_TOPO_LEAFSPINE;
	c.leaves = 2;
	c.spines = 8;
	c.hosts_per_leaf = 32;
	c.pfc = false;
	m = c.spines;
	s = mk(&c);
	leaf = sim_node_by_name(s, "e0");
	ASSERT(leaf >= 0);
	for (uint32_t t = 0; t < trials; t++) {
		uint32_t load[64] = { 0 }, ideal[64] = { 0 }, mx = 0, mi = 0;

		for (uint32_t f = 0; f < nflows; f++) {
			int p;

			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			p = sim_ecmp_port(s, leaf, f, 32 + f,
					  (uint16_t)(0xc000 | (rng & 0x3fff)));
			ASSERT(p >= 32 && p < 32 + (int)m); /* an uplink */
			load[p - 32]++;
			ideal[(rng >> 20) % m]++;
		}
		for (uint32_t i = 0; i < m; i++) {
			mx = load[i] > mx ? load[i] : mx;
			mi = ideal[i] > mi ? ideal[i] : mi;
		}
		hash_max += mx;
		ideal_max += mi;
	}
	hash_max /= trials;
	ideal_max /= trials;
	printf("ecmp: %u flows over %u paths: mean max load %.2f (balls into bins %.2f, perfect %.1f)\n",
	       nflows, m, hash_max, ideal_max, (double)nflows / m);
	ASSERT(fabs(hash_max - ideal_max) / ideal_max < 0.08);
	ASSERT(hash_max > (double)nflows / m + 1); /* collisions do happen */
	sim_destroy(s);
}

struct qtrace {
	uint64_t t_half;
	uint32_t at_half, max;
};

static void on_q(void *arg, uint64_t t, uint32_t bytes)
{
	struct qtrace *q = arg;

	if (t <= q->t_half)
		q->at_half = bytes;
	if (bytes > q->max)
		q->max = bytes;
}

/* Incast: N senders at line rate into one 100 Gb/s port; no PFC, no ECN,
 * no CC, room for everything. The queue grows at (N-1) x line rate while
 * all send: when they finish it holds (N-1) x what one sent. */
static void test_incast_queue(void)
{
	const uint32_t n = 4, bytes = 256 << 10, mtu = 4096;
	struct sim_cfg c;
	struct sim *s;
	struct qtrace q = { 0 };
	uint32_t pkts = bytes / mtu;
	double pkt_len = mtu + 12 + 16 + 4 + 4; /* BTH RETH ImmDt ICRC (first/only carry more) */
	double wire = pkt_len + 66, t_all, expect;
	int leaf, port;

	sim_cfg_default(&c);
	c.topo = SIM_TOPO_LEAFSPINE;
	c.leaves = 1;
	c.spines = 1;
	c.hosts_per_leaf = n + 1;
	c.pfc = false;
	c.ecn = false;
	c.cc.algo = UR_CC_NONE;
	c.buffer_bytes = 64 << 20;
	c.dt_alpha = 100;
	c.link_delay_ns = 500;
	c.work = SIM_WORK_INCAST;
	c.incast_senders = n;
	c.bytes = bytes;
	s = mk(&c);
	leaf = sim_node_by_name(s, "e0");
	port = sim_port_to(s, leaf, sim_node_by_name(s, "h0"));
	/* Each sender puts one packet on the wire every wire*8/100 ns. */
	t_all = pkts * wire * 8 / 100.0;
	q.t_half = (uint64_t)(t_all / 2) + 1000; /* + first packet's way */
	sim_trace_port(s, leaf, port, on_q, &q);
	sim_run(s, UINT64_MAX);
	expect = (n - 1) * pkt_len * pkts; /* n x sent - 1 x drained */
	printf("incast: max queue %u B (arithmetic %.0f), at T/2 %u B (%.0f)\n",
	       q.max, expect, q.at_half, expect / 2);
	ASSERT(fabs(q.max - expect) / expect < 0.05);
	ASSERT(fabs(q.at_half - expect / 2) / (expect / 2) < 0.10);
	sim_destroy(s);
}

/* PFC: a 16-to-1 incast through a small buffer drops nothing with PFC on,
 * and drops without it. */
static void test_pfc_lossless(void)
{
	for (int pfc = 1; pfc >= 0; pfc--) {
		struct sim_cfg c;
		struct sim_result r;
		struct sim *s;

		sim_cfg_default(&c);
		c.k = 4;
		c.topo = SIM_TOPO_LEAFSPINE;
		c.leaves = 2;
		c.spines = 2;
		c.hosts_per_leaf = 9;
		c.buffer_bytes = 1 << 20;
		c.pfc = pfc;
		c.pfc_xoff = 20 << 10;
		c.pfc_xon = 10 << 10;
		c.pfc_headroom = 24 << 10;
		c.cc.algo = UR_CC_NONE;
		c.ecn = false;
		c.work = SIM_WORK_INCAST;
		c.incast_senders = 16;
		c.bytes = 512 << 10;
		c.timeout = 8;
		s = mk(&c);
		sim_run(s, UINT64_MAX);
		sim_result(s, &r);
		printf("pfc %s: drops %lu pause frames %lu retransmits %lu done %lu/%lu\n",
		       pfc ? "on" : "off", (unsigned long)r.drops,
		       (unsigned long)r.pause_frames,
		       (unsigned long)r.retransmits, (unsigned long)r.flows_done,
		       (unsigned long)r.flows);
		ASSERT_EQ(r.flows_done, r.flows);
		if (pfc) {
			ASSERT_EQ(r.drops, 0);
			ASSERT_EQ(r.retransmits, 0);
			ASSERT_GT(r.pause_frames, 0);
		} else {
			ASSERT_GT(r.drops, 0);
		}
		sim_destroy(s);
	}
}

/* Swift (issue 44): a 16-to-1 incast of 1 MiB each without PFC, where
 * the send window alone (256 packets, 16 MiB in all) overruns the 6 MiB a
 * queue may take: cc none drops, Swift's window (32 packets at the start,
 * then cut by the measured delay) drops nothing and finishes sooner. The
 * verdict is the simulator's, on virtual time: the same on any machine. */
static void test_swift_incast(void)
{
	struct sim_result r[2];
	char err[256];

	for (int i = 0; i < 2; i++) {
		struct sim_cfg c;
		struct sim *s;

		sim_cfg_default(&c);
		c.topo = SIM_TOPO_LEAFSPINE;
		c.leaves = 2;
		c.spines = 2;
		c.hosts_per_leaf = 9;
		c.pfc = false;
		c.work = SIM_WORK_INCAST;
		c.incast_senders = 16;
		c.bytes = 1 << 20;
		ASSERT_EQ(sim_cfg_set(&c, "cc", i ? "swift" : "none", err,
				      sizeof(err)), 0);
		s = mk(&c);
		sim_run(s, UINT64_MAX);
		sim_result(s, &r[i]);
		printf("%s: drops %lu retransmits %lu fct mean %.1f us max queue %lu B\n",
		       i ? "swift" : "none", (unsigned long)r[i].drops,
		       (unsigned long)r[i].retransmits, r[i].fct_mean_us,
		       (unsigned long)r[i].max_queue);
		ASSERT_EQ(r[i].flows_done, r[i].flows);
		sim_destroy(s);
	}
	ASSERT_GT(r[0].drops, 0);
	ASSERT_EQ(r[1].drops, 0);
	ASSERT_EQ(r[1].retransmits, 0);
	ASSERT(r[1].fct_mean_us < r[0].fct_mean_us);
}

/* swift_<field> sets one of Swift's parameters; out of range is refused
 * with the key named. */
static void test_swift_keys(void)
{
	struct ur_cc_params p;
	struct sim_cfg c;
	char err[256];

	sim_cfg_default(&c);
	ASSERT_EQ(sim_cfg_set(&c, "cc", "swift", err, sizeof(err)), 0);
	ASSERT_EQ(sim_cfg_set(&c, "swift_target_us", "40", err, sizeof(err)), 0);
	ASSERT_EQ(sim_cfg_set(&c, "dcqcn_profile", "mlx5", err, sizeof(err)), 0);
	sim_cfg_cc(&c, &p);
	ASSERT_EQ(p.algo, UR_CC_SWIFT);
	ASSERT_EQ(p.target_us, 40);
	ASSERT_EQ(p.beta_milli, 800);
	ASSERT_EQ(ur_cc_params_check(&p, NULL), 0);
	ASSERT_EQ(sim_cfg_set(&c, "swift_beta_milli", "1001", err, sizeof(err)), -1);
	ASSERT(strstr(err, "swift_beta_milli") != NULL);
	ASSERT_EQ(sim_cfg_set(&c, "swift_nope", "1", err, sizeof(err)), -1);
	ASSERT(strstr(err, "swift_nope") != NULL);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ASSERT(f);
	fputs(text, f);
	fclose(f);
}

/* A bad config or trace names its line. */
static void test_errors(void)
{
	char cfg[] = "/tmp/ur_sim_cfgXXXXXX", tr[] = "/tmp/ur_sim_trXXXXXX";
	char err[512];
	struct sim_cfg c;
	struct sim *s;

	close(mkstemp(cfg));
	close(mkstemp(tr));
	sim_cfg_default(&c);
	write_file(cfg, "# comment\ntopology fattree\nk 4\nlb sprya\n");
	ASSERT_EQ(sim_cfg_load(&c, cfg, err, sizeof(err)), -1);
	ASSERT(strstr(err, ":4:"));
	sim_cfg_default(&c);
	write_file(cfg, "k 4\n\nfail e0 c3\n");
	ASSERT_EQ(sim_cfg_load(&c, cfg, err, sizeof(err)), 0);
	ASSERT(!sim_create(&c, err, sizeof(err)));
	ASSERT(strstr(err, ":3: no link"));
	sim_cfg_default(&c);
	write_file(cfg, "k 4\nfail a0 c0\nfail h0 e0\n");
	ASSERT_EQ(sim_cfg_load(&c, cfg, err, sizeof(err)), 0);
	ASSERT(!sim_create(&c, err, sizeof(err)));
	ASSERT(strstr(err, ":3: failed links disconnect"));
	/* Keys that are each valid but inconsistent together: the error
	 * names the line of the key that made them so. */
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "topology fattree\nk 5\n", ":2: fat-tree: k must be even" },
		{ "topology leafspine\nleaves 4\nspines 0\n", ":3: leaf-spine" },
		{ "topology rail\nspines 0\n", ":2: rail" },
		{ "topology leafspine\nleaves 1100\n", ":2: a switch with 1100 ports" },
		{ "k 4\nfail h0 e0 at=50\n", ":2: failed links disconnect" },
		{ "pfc_xoff_kb 64\n# xon\npfc_xon_kb 100\n", ":3: pfc_xon" },
		{ "k 4\npfc_headroom_kb 4000\n", ":2: pfc:" },
		{ "kmax_kb 50\nmtu 1024\n", ":1: kmin" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sim_cfg_default(&c);
		write_file(cfg, bad[i].text);
		ASSERT_EQ(sim_cfg_load(&c, cfg, err, sizeof(err)), 0);
		ASSERT(!sim_create(&c, err, sizeof(err)));
		if (!strstr(err, bad[i].want) || strncmp(err, cfg, strlen(cfg)))
			UR_FAIL("case %zu: '%s' lacks '%s'", i, err, bad[i].want);
	}
	/* A workload beyond the topology names its line too; the same
	 * setting from the command line (sim_cfg_set) names none. */
	sim_cfg_default(&c);
	write_file(cfg, "k 4\nworkload ring\nranks 17\n");
	ASSERT_EQ(sim_cfg_load(&c, cfg, err, sizeof(err)), 0);
	s = sim_create(&c, err, sizeof(err));
	ASSERT(s);
	ASSERT_EQ(sim_workload(s, err, sizeof(err)), -1);
	ASSERT(strstr(err, ":3: ring: ranks"));
	sim_destroy(s);
	ASSERT_EQ(sim_cfg_set(&c, "ranks", "20", err, sizeof(err)), 0);
	s = sim_create(&c, err, sizeof(err));
	ASSERT(s);
	ASSERT_EQ(sim_workload(s, err, sizeof(err)), -1);
	ASSERT(strstr(err, ":2: ring: ranks")); /* the workload line */
	sim_destroy(s);
	sim_cfg_default(&c);
	write_file(cfg, "k 4\nworkload incast\n\nincast_senders 16\n");
	ASSERT_EQ(sim_cfg_load(&c, cfg, err, sizeof(err)), 0);
	s = sim_create(&c, err, sizeof(err));
	ASSERT(s);
	ASSERT_EQ(sim_workload(s, err, sizeof(err)), -1);
	ASSERT(strstr(err, ":4: incast"));
	sim_destroy(s);
	/* Trace lines: wrong field count, host out of range, a negative
	 * number, source = destination, zero bytes, bad dependencies, an
	 * over-long line. */
	static const struct {
		const char *text, *want;
	} badtr[] = {
		{ "# t src dst bytes\n0 1 2 4096\n100 3 99 4096\n", ":3: host out of range" },
		{ "0 1 2\n", ":1: expected" },
		{ "0 1 2 4096 7\n", ":1: expected" },
		{ "\n\n-5 1 2 4096\n", ":3: negative" },
		{ "0 1 2 4096\n0 4 4 4096\n", ":2: source equals" },
		{ "0 1 2 0\n", ":1: bytes must be" },
		/* dependencies: a tag waited for before it has a flow, a
		 * tag that gains a flow after a line waited for it (a
		 * cycle could follow), a bad field */
		{ "0 1 2 4096 after=3\n", ":1: after=3: no earlier line" },
		{ "0 1 2 4096 tag=3\n0 2 1 4096 after=3\n0 4 5 4096 tag=3\n",
		  ":3: tag=3 after line 2" },
		{ "0 1 2 4096 tag=7 after=7\n", ":1: after=7: no earlier" },
		{ "0 1 2 4096 tag=x\n", ":1: expected tag=N" },
	};
	for (size_t i = 0; i <= sizeof(badtr) / sizeof(badtr[0]); i++) {
		char longline[400];

		if (i == sizeof(badtr) / sizeof(badtr[0])) {
			memset(longline, ' ', sizeof(longline));
			strcpy(longline + 300, "0 1 2 4096\n");
			write_file(tr, longline);
		} else {
			write_file(tr, badtr[i].text);
		}
		sim_cfg_default(&c);
		snprintf(c.trace, sizeof(c.trace), "%s", tr);
		c.work = SIM_WORK_TRACE;
		s = sim_create(&c, err, sizeof(err));
		ASSERT(s);
		ASSERT_EQ(sim_workload(s, err, sizeof(err)), -1);
		if (!strstr(err, i < sizeof(badtr) / sizeof(badtr[0])
					 ? badtr[i].want : ":1: line longer"))
			UR_FAIL("trace case %zu: '%s'", i, err);
		sim_destroy(s);
	}
	unlink(cfg);
	unlink(tr);
}

/* A trace runs; a failed core link is routed around and a degraded link
 * still carries traffic. */
static void test_trace_and_failures(void)
{
	char tr[] = "/tmp/ur_sim_trXXXXXX";
	struct sim_cfg c;
	struct sim_result r;
	struct sim *s;
	char err[256];

	close(mkstemp(tr));
	write_file(tr, "0 0 15 65536\n1000 4 11 131072\n2000 8 3 4096\n");
	sim_cfg_default(&c);
	snprintf(c.trace, sizeof(c.trace), "%s", tr);
	c.work = SIM_WORK_TRACE;
	ASSERT_EQ(sim_cfg_set(&c, "fail", "a0 c0", err, sizeof(err)), 0);
	ASSERT_EQ(sim_cfg_set(&c, "degrade", "a1 c2 10 0.001", err, sizeof(err)), 0);
	s = mk(&c);
	sim_run(s, UINT64_MAX);
	sim_result(s, &r);
	ASSERT_EQ(r.flows_done, 3);
	ASSERT_EQ(sim_port_tx_bytes(s, sim_node_by_name(s, "a0"),
				    sim_port_to(s, sim_node_by_name(s, "a0"),
						sim_node_by_name(s, "c0"))), 0);
	sim_destroy(s);
	unlink(tr);
}

/* Hops from host @a to host @b along the ECMP choices for UDP source port
 * @sport (-1 if the walk does not arrive within 8 hops). */
static int walk(const struct sim *s, uint32_t a, uint32_t b, uint16_t sport)
{
	char name[16];
	int n, hops = 0;

	snprintf(name, sizeof(name), "h%u", a);
	n = sim_node_by_name(s, name);
	snprintf(name, sizeof(name), "h%u", b);
	while (n != sim_node_by_name(s, name) && hops < 8) {
		int p = sim_ecmp_port(s, n, a, b, sport);

		if (p < 0)
			return -1;
		n = sim_port_peer(s, n, p);
		hops++;
	}
	return hops < 8 ? hops : -1;
}

static uint64_t link_bytes(const struct sim *s, const char *a, const char *b)
{
	int x = sim_node_by_name(s, a), y = sim_node_by_name(s, b);

	return sim_port_tx_bytes(s, x, sim_port_to(s, x, y));
}

/* Rail-optimised fabric: 2 groups of 4 servers with 8 NICs each (64
 * hosts, 16 rail leaves, 2 spines). NIC i of a server is on its group's
 * leaf of rail i; the same rail in the same group is one leaf away, another
 * rail or group crosses a spine. A flow between two NICs of one rail of
 * a group never reaches a spine; one between two rails of one server
 * does. An all-to-all completes and a seed replays it. */
static void test_rail(void)
{
	struct sim_cfg c;
	struct sim_result r;
	struct sim *s;
	char err[256], tr[] = "/tmp/ur_sim_trXXXXXX";
	uint64_t t_last = 0, events = 0;

	sim_cfg_default(&c);
	ASSERT_EQ(sim_cfg_set(&c, "topology", "rail", err, sizeof(err)), 0);
	s = mk(&c);
	ASSERT_EQ(sim_hosts(s), 64);
	sim_result(s, &r);
	ASSERT_EQ_U64(r.switches, 18);
	/* h13 = server 1 (group 0), NIC 5: leaf e5; h37 = server 4 (group 1),
	 * NIC 5: leaf e13 */
	ASSERT(sim_port_to(s, sim_node_by_name(s, "h13"),
			   sim_node_by_name(s, "e5")) >= 0);
	ASSERT(sim_port_to(s, sim_node_by_name(s, "h37"),
			   sim_node_by_name(s, "e13")) >= 0);
	for (uint16_t sport = 1000; sport < 1016; sport++) {
		ASSERT_EQ(walk(s, 13, 29, sport), 2);  /* rail 5, group 0 */
		ASSERT_EQ(walk(s, 13, 37, sport), 4);  /* rail 5, groups 0, 1 */
		ASSERT_EQ(walk(s, 8, 9, sport), 4);    /* one server, rails 0, 1 */
		ASSERT_EQ(walk(s, 0, 63, sport), 4);
	}
	sim_destroy(s);

	close(mkstemp(tr));
	write_file(tr, "0 0 8 1048576\n0 1 2 1048576\n");
	sim_cfg_default(&c);
	ASSERT_EQ(sim_cfg_set(&c, "topology", "rail", err, sizeof(err)), 0);
	snprintf(c.trace, sizeof(c.trace), "%s", tr);
	c.work = SIM_WORK_TRACE;
	s = mk(&c);
	sim_run(s, UINT64_MAX);
	sim_result(s, &r);
	ASSERT_EQ(r.flows_done, 2);
	/* h0 -> h8 (rail 0) stays on e0; h1 -> h2 goes e1 -> spine -> e2 */
	ASSERT_EQ_U64(link_bytes(s, "e0", "c0") + link_bytes(s, "e0", "c1"), 0);
	ASSERT(link_bytes(s, "e0", "h8") >= 1048576);
	ASSERT(link_bytes(s, "e1", "c0") + link_bytes(s, "e1", "c1") >= 1048576);
	ASSERT(link_bytes(s, "c0", "e2") + link_bytes(s, "c1", "e2") >= 1048576);
	sim_destroy(s);
	unlink(tr);

	for (int i = 0; i < 2; i++) {
		sim_cfg_default(&c);
		ASSERT_EQ(sim_cfg_set(&c, "topology", "rail", err, sizeof(err)), 0);
		ASSERT_EQ(sim_cfg_set(&c, "rails", "4", err, sizeof(err)), 0);
		c.work = SIM_WORK_ALLTOALL;
		c.bytes = 16 << 10;
		c.lb = SIM_LB_SPRAY;
		s = mk(&c);
		ASSERT_EQ(sim_hosts(s), 32);
		sim_run(s, UINT64_MAX);
		sim_result(s, &r);
		ASSERT_EQ_U64(r.flows_done, 32 * 31);
		ASSERT_EQ_U64(r.drops, 0);
		if (i) {
			ASSERT_EQ_U64(r.t_last, t_last);
			ASSERT_EQ_U64(r.events, events);
		}
		t_last = r.t_last;
		events = r.events;
		sim_destroy(s);
	}
}

/* Two sprayed 4 MiB flows across a 2-leaf, 2-spine fabric (h0 -> h4,
 * h1 -> h5), from a trace file @tr names (a mkstemp template). */
static void two_flows(struct sim_cfg *c, char *tr)
{
	close(mkstemp(tr));
	write_file(tr, "0 0 4 4194304\n0 1 5 4194304\n");
	sim_cfg_default(c);
	c->topo = SIM_TOPO_LEAFSPINE;
	c->leaves = 2;
	c->spines = 2;
	c->lb = SIM_LB_SPRAY;
	snprintf(c->trace, sizeof(c->trace), "%s", tr);
	c->work = SIM_WORK_TRACE;
}

/* A link that fails mid-run: from at=T it loses every packet (those
 * sprayed onto it before the switches reroute are dropped and resent);
 * reroute_us later no more is routed onto it; every flow still arrives,
 * with the same result for the same seed. */
static void test_midrun_failure(void)
{
	uint64_t t_last[2];

	for (int i = 0; i < 2; i++) {
		struct sim_cfg c;
		struct sim_result r;
		struct sim *s;
		char err[256], tr[] = "/tmp/ur_sim_trXXXXXX";
		uint64_t dead, live;

		two_flows(&c, tr);
		ASSERT_EQ(sim_cfg_set(&c, "fail", "e0 c0 at=x", err, sizeof(err)), -1);
		ASSERT_EQ(sim_cfg_set(&c, "fail", "e0 c0 5", err, sizeof(err)), -1);
		ASSERT_EQ(sim_cfg_set(&c, "fail", "e0 c0 at=100", err, sizeof(err)), 0);
		ASSERT_EQ(sim_cfg_set(&c, "reroute_us", "20", err, sizeof(err)), 0);
		s = mk(&c);
		sim_run(s, 99000);
		ASSERT(link_bytes(s, "e0", "c0") > 0);
		sim_run(s, 130000);
		dead = link_bytes(s, "e0", "c0");
		live = link_bytes(s, "e0", "c1");
		sim_run(s, UINT64_MAX);
		sim_result(s, &r);
		unlink(tr);
		ASSERT_EQ_U64(r.flows_done, 2);
		ASSERT(r.drops > 0);
		ASSERT(r.retransmits > 0);
		ASSERT_EQ_U64(link_bytes(s, "e0", "c0"), dead);
		ASSERT(link_bytes(s, "e0", "c1") > live + 4194304);
		t_last[i] = r.t_last;
		sim_destroy(s);
	}
	ASSERT_EQ_U64(t_last[0], t_last[1]);
}

/* A failed link that comes back: sprayed leaf-spine flows lose what
 * crosses e0-c0 from 100 us, are routed around it from 120 us, the link
 * carries packets again from 250 us and is back in the routes at 270 us;
 * a link failed from the start and restored carries nothing before its
 * restore and traffic after. restore needs an earlier fail and a time. */
static void test_link_restore(void)
{
	uint64_t t_last[2];
	char err[256];

	for (int i = 0; i < 3; i++) {
		struct sim_cfg c;
		struct sim_result r;
		struct sim *s;
		char tr[] = "/tmp/ur_sim_trXXXXXX";
		uint64_t dead;

		two_flows(&c, tr);
		ASSERT_EQ(sim_cfg_set(&c, "restore", "e0 c0", err, sizeof(err)), -1);
		ASSERT_EQ(sim_cfg_set(&c, "restore", "e0 c0 at=0", err, sizeof(err)), -1);
		ASSERT_EQ(sim_cfg_set(&c, "restore", "e0 c0 5", err, sizeof(err)), -1);
		ASSERT_EQ(sim_cfg_set(&c, "fail", i < 2 ? "e0 c0 at=100" : "c0 e0",
				      err, sizeof(err)), 0);
		ASSERT_EQ(sim_cfg_set(&c, "restore", "e0 c0 at=250", err, sizeof(err)), 0);
		ASSERT_EQ(sim_cfg_set(&c, "reroute_us", "20", err, sizeof(err)), 0);
		s = mk(&c);
		if (i < 2) {
			sim_run(s, 99000);
			ASSERT(link_bytes(s, "e0", "c0") > 0);
		}
		sim_run(s, 130000);
		dead = link_bytes(s, "e0", "c0");
		ASSERT(i < 2 || dead == 0);
		sim_run(s, 249000);
		ASSERT_EQ_U64(link_bytes(s, "e0", "c0"), dead);
		sim_run(s, UINT64_MAX);
		sim_result(s, &r);
		unlink(tr);
		ASSERT_EQ_U64(r.flows_done, 2);
		/* back in use: a quarter of the sprayed bytes at least */
		ASSERT(link_bytes(s, "e0", "c0") > dead + 1048576);
		ASSERT(i == 2 || r.retransmits > 0);
		if (i < 2)
			t_last[i] = r.t_last;
		sim_destroy(s);
	}
	ASSERT_EQ_U64(t_last[0], t_last[1]);
	{
		struct sim_cfg c;
		struct sim *s;

		/* a restore before its link's failure restores nothing */
		sim_cfg_default(&c);
		c.topo = SIM_TOPO_LEAFSPINE;
		c.leaves = 2;
		c.spines = 2;
		ASSERT_EQ(sim_cfg_set(&c, "restore", "e0 c0 at=50", err, sizeof(err)), 0);
		ASSERT_EQ(sim_cfg_set(&c, "fail", "e0 c0 at=100", err, sizeof(err)), 0);
		s = sim_create(&c, err, sizeof(err));
		ASSERT(!s);
		ASSERT(strstr(err, "restore e0 c0: no fail of that link before it"));
	}
}

/* Spraying uses the transport's selective repeat, not a NIC reorder
 * buffer: requests that arrive early are held by the real responder; a
 * lossy core link costs a few selective retransmissions where go-back-N
 * (sr off) resends windows; lossless spraying resends nothing; single
 * path stays plain RoCEv2. */
static void test_spray_selective_repeat(void)
{
	static const struct { uint32_t lb, sr; double loss; } runs[] = {
		{ SIM_LB_SPRAY, SIM_SR_AUTO, 0 },
		{ SIM_LB_SPRAY, SIM_SR_AUTO, 0.01 },
		{ SIM_LB_SPRAY, SIM_SR_OFF, 0.01 },
		{ SIM_LB_SINGLE, SIM_SR_AUTO, 0.01 },
	};
	struct sim_result r[4];
	char err[256];

	for (int i = 0; i < 4; i++) {
		struct sim_cfg c;
		struct sim *s;

		sim_cfg_default(&c);
		c.k = 4;
		c.work = SIM_WORK_ALLTOALL;
		c.bytes = 64 << 10;
		c.random_placement = true;
		c.lb = runs[i].lb;
		c.sr = runs[i].sr;
		c.timeout = 8;
		if (runs[i].loss) {
			char v[64];

			snprintf(v, sizeof(v), "a0 c0 100 %g", runs[i].loss);
			ASSERT_EQ(sim_cfg_set(&c, "degrade", v, err, sizeof(err)), 0);
			snprintf(v, sizeof(v), "a2 c1 100 %g", runs[i].loss);
			ASSERT_EQ(sim_cfg_set(&c, "degrade", v, err, sizeof(err)), 0);
		}
		s = mk(&c);
		sim_run(s, UINT64_MAX);
		sim_result(s, &r[i]);
		printf("lb %u sr %u loss %g: completion %.1f us, sprayed %lu, retransmits %lu, "
		       "held %lu, selective NAKs %lu, NAKs %lu, timeouts %lu\n",
		       runs[i].lb, runs[i].sr, runs[i].loss,
		       (r[i].t_last - r[i].t_first) / 1e3, (unsigned long)r[i].sprayed,
		       (unsigned long)r[i].retransmits,
		       (unsigned long)r[i].sr_held, (unsigned long)r[i].sr_naks,
		       (unsigned long)r[i].nak_seq, (unsigned long)r[i].timeouts);
		ASSERT_EQ(r[i].flows_done, r[i].flows);
		/* Sprayed over UDP source ports, from the peer's address. */
		ASSERT_EQ(r[i].offpath, 0);
		sim_destroy(s);
	}
	ASSERT_GT(r[0].sprayed, 0); /* from the first request: peer known */
	ASSERT_GT(r[0].sr_held, 0);
	ASSERT_EQ(r[0].retransmits, 0);
	ASSERT_GT(r[1].sr_naks, 0);
	ASSERT(r[1].retransmits * 4 < r[2].retransmits);
	ASSERT_EQ(r[2].sr_held, 0);
	ASSERT_EQ(r[3].sr_held, 0);
	ASSERT_EQ(r[3].sr_naks, 0);
}

/* The transport timer does not run while a QP waits its turn at its own
 * NIC (ur_comp.c "held"): every host of a k=4 fat-tree sends 64 KiB to
 * each of the 15 others, single path, timer 65 us (timeout 4); a QP's
 * first packets leave at once, its last one (the only one asking for an
 * ACK) some 90 us later, behind the other 14 QPs. Without loss: no
 * timeout, nothing resent (before: 229 timeouts, 1,125 packets resent).
 * With 5 % loss on a core-facing link both ways: every flow done, the
 * timer only for real (tail) losses. */
static void test_timer_held_at_nic(void)
{
	for (int loss = 0; loss < 2; loss++) {
		struct sim_cfg c;
		struct sim_result r;
		char err[256];
		struct sim *s;

		sim_cfg_default(&c);
		c.k = 4;
		c.work = SIM_WORK_ALLTOALL;
		c.bytes = 64 << 10;
		c.lb = SIM_LB_SINGLE;
		c.timeout = 4;
		if (loss) {
			ASSERT_EQ(sim_cfg_set(&c, "degrade", "e0 a0 100 0.05",
					      err, sizeof(err)), 0);
			ASSERT_EQ(sim_cfg_set(&c, "degrade", "a0 e0 100 0.05",
					      err, sizeof(err)), 0);
		}
		s = mk(&c);
		sim_run(s, UINT64_MAX);
		sim_result(s, &r);
		printf("loss %s: completion %.1f us, drops %lu, NAKs %lu, "
		       "timeouts %lu, retransmits %lu\n", loss ? "5 %" : "none",
		       (r.t_last - r.t_first) / 1e3, (unsigned long)r.drops,
		       (unsigned long)r.nak_seq, (unsigned long)r.timeouts,
		       (unsigned long)r.retransmits);
		ASSERT_EQ(r.flows_done, r.flows);
		ASSERT_EQ_U64(r.flows, 16 * 15);
		if (!loss) {
			ASSERT_EQ_U64(r.drops, 0);
			ASSERT_EQ_U64(r.timeouts, 0);
			ASSERT_EQ_U64(r.retransmits, 0);
		} else {
			ASSERT_GT(r.drops, 0);
			ASSERT_GT(r.retransmits, 0);
			ASSERT(r.timeouts <= r.drops);
		}
		sim_destroy(s);
	}
}

/* Unequal paths (2:1): h0 -> h1 over a leaf-spine with two spines, one
 * uplink at 50 Gb/s and the other degraded to 25, 8 source ports. The
 * transport's spraying (ur_mp.c) drives the simulator: `spray` keeps the
 * ports' weights equal, so the slow uplink gets the share the hash gave
 * its ports; `adaptive` moves traffic off it on the path feedback (here
 * the selective NAKs of late packets, without PFC or congestion
 * control). With DCQCN and ECN, CNPs name the marked request's PSN, and
 * so its path. */
static double fast_share(struct sim *s)
{
	int e0 = sim_node_by_name(s, "e0");
	uint64_t fast = sim_port_tx_bytes(s, e0, sim_port_to(s, e0,
				sim_node_by_name(s, "c0")));
	uint64_t slow = sim_port_tx_bytes(s, e0, sim_port_to(s, e0,
				sim_node_by_name(s, "c1")));

	return (double)fast / (double)(fast + slow);
}

static void unequal(struct sim_cfg *c, uint32_t lb, bool dcqcn)
{
	char err[256];

	sim_cfg_default(c);
	c->seed = 1;
	ASSERT_EQ(sim_cfg_set(c, "topology", "leafspine", err, sizeof(err)), 0);
	c->leaves = 2;
	c->spines = 2;
	c->hosts_per_leaf = 1;
	ASSERT_EQ(sim_cfg_set(c, "fabric_gbps", "50", err, sizeof(err)), 0);
	ASSERT_EQ(sim_cfg_set(c, "degrade", "e0 c1 25", err, sizeof(err)), 0);
	if (dcqcn) {
		ASSERT_EQ(sim_cfg_set(c, "kmin_kb", "10", err, sizeof(err)), 0);
		ASSERT_EQ(sim_cfg_set(c, "kmax_kb", "100", err, sizeof(err)), 0);
	} else {
		ASSERT_EQ(sim_cfg_set(c, "cc", "none", err, sizeof(err)), 0);
		ASSERT_EQ(sim_cfg_set(c, "pfc", "off", err, sizeof(err)), 0);
	}
	c->lb = lb;
}

static void test_adaptive_unequal(void)
{
	struct sim_result r[3];
	double share[2];

	for (int i = 0; i < 3; i++) {
		struct sim_cfg c;
		struct sim *s;

		unequal(&c, i == 0 ? SIM_LB_SPRAY : SIM_LB_ADAPTIVE, i == 2);
		s = mk(&c);
		sim_add_flow(s, 0, 1, (i == 2 ? 1 : 16) << 20, 0);
		sim_run(s, UINT64_MAX);
		sim_result(s, &r[i]);
		ASSERT_EQ(r[i].flows_done, 1);
		if (i < 2)
			share[i] = fast_share(s);
		printf("%s%s: completion %.1f us, fast path share %.3f, "
		       "path losses %lu, path ECN %lu, late %lu\n",
		       i ? "adaptive" : "spray",
		       i == 2 ? " dcqcn" : "", (r[i].t_last - r[i].t_first) / 1e3,
		       i < 2 ? share[i] : 0, (unsigned long)r[i].path_losses,
		       (unsigned long)r[i].path_ecn,
		       (unsigned long)r[i].path_late);
		sim_destroy(s);
	}
	/* The slow path's requests come late (late notices, ur_sr.c) or
	 * are lost: either moves weight off it. */
	ASSERT_GT(r[1].path_losses + r[1].path_late, 0);
	ASSERT(share[1] > share[0] + 0.01);
	ASSERT(r[1].t_last - r[1].t_first < r[0].t_last - r[0].t_first);
	ASSERT_GT(r[2].cnps, 0);
	ASSERT_GT(r[2].path_ecn, 0);
}

/* Poisson workloads (bench/workloads/): the sizes drawn follow the CDF
 * file, the bytes offered are the load asked for, and a short run at
 * k=4 is the same run for the same seed, every flow no faster than its
 * ideal FCT. */
static void poisson_gen(const char *file, double load, uint32_t flows,
			uint64_t seed)
{
	struct sim_cfg c;
	struct sim_result r;
	struct sim_cdf cdf;
	const struct sim_flow *f;
	struct sim *s;
	char err[256];
	uint32_t n;
	FILE *fp;

	sim_cfg_default(&c);
	c.k = 4;
	c.work = SIM_WORK_POISSON;
	c.load = load;
	c.seed = seed;
	c.max_flows = flows;
	c.arrive_ns = 10000000000ull; /* the flow count ends it */
	snprintf(c.cdf, sizeof(c.cdf), "%s/bench/workloads/%s", UR_SOURCE_DIR,
		 file);
	fp = fopen(c.cdf, "r");
	ASSERT(fp != NULL);
	ASSERT_EQ(sim_cdf_read(&cdf, fp, c.cdf, err, sizeof(err)), 0);
	fclose(fp);
	s = mk(&c);
	f = sim_flows(s, &n);
	ASSERT_EQ(n, flows);
	/* the empirical CDF at each of the file's points: within 4 standard
	 * errors of a binomial at n = 50000 (<= 0.9 points) */
	for (uint32_t i = 1; i + 1 < cdf.n; i++) {
		uint32_t le = 0;

		for (uint32_t j = 0; j < n; j++)
			le += f[j].bytes <= (uint64_t)cdf.x[i];
		ASSERT(fabs(100.0 * le / n - cdf.y[i]) < 0.9);
	}
	sim_result(s, &r);
	printf("%s load %.2f seed %lu: %u flows, offered %.4f\n", file, load,
	       (unsigned long)seed, n, r.offered_load);
	/* heavy tails: the mean of 50000 sizes is within 3 % (WebSearch's
	 * CV is ~2, FB_Hadoop's ~5.5: 4 standard errors are 3.6 % / 9.8 %;
	 * FB_Hadoop gets the wider bound) */
	ASSERT(fabs(r.offered_load / load - 1) <
	       (strstr(file, "hadoop") ? 0.10 : 0.04));
	for (uint32_t j = 0; j < n; j++)
		ASSERT(f[j].src != f[j].dst && f[j].dst < 16);
	sim_destroy(s);
}

static void test_poisson(void)
{
	uint64_t sum[3] = { 0 }, qs[3] = { 0 };
	double sp99[3] = { 0 };

	poisson_gen("websearch.cdf", 0.5, 50000, 1);
	poisson_gen("websearch.cdf", 0.3, 50000, 2);
	poisson_gen("fb_hadoop.cdf", 0.7, 50000, 3);
	for (int i = 0; i < 3; i++) {
		struct sim_cfg c;
		struct sim_result r;
		const struct sim_flow *f;
		struct sim *s;
		uint32_t n;

		sim_cfg_default(&c);
		c.k = 4;
		c.work = SIM_WORK_POISSON;
		c.load = 0.5;
		c.arrive_ns = 300000;
		c.seed = i < 2 ? 5 : 6;
		snprintf(c.cdf, sizeof(c.cdf), "%s/bench/workloads/fb_hadoop.cdf",
			 UR_SOURCE_DIR);
		s = mk(&c);
		sim_run(s, UINT64_MAX);
		sim_result(s, &r);
		ASSERT_GT(r.flows, 100);
		ASSERT_EQ(r.flows_done, r.flows);
		f = sim_flows(s, &n);
		for (uint32_t j = 0; j < n; j++) {
			sum[i] = sum[i] * 31 + f[j].t_done;
			/* the ideal FCT is a lower bound */
			ASSERT(sim_flow_slowdown(s, j) >= 1);
		}
		ASSERT(r.slow[0].n + r.slow[1].n + r.slow[2].n + r.slow[3].n +
		       r.slow[4].n == r.flows);
		ASSERT(r.slow[0].p50 >= 1 && r.slow[0].p99 >= r.slow[0].p50);
		ASSERT_GT(r.queue_samples, 0);
		ASSERT(r.jain > 0 && r.jain <= 1);
		qs[i] = r.queue_samples;
		sp99[i] = r.slow_p99;
		printf("seed %lu: %lu flows, slowdown p50 %.2f p99 %.2f, queue p99 %.0f KB\n",
		       (unsigned long)c.seed, (unsigned long)r.flows, r.slow_p50,
		       r.slow_p99, r.queue_p99_kb);
		sim_destroy(s);
	}
	ASSERT_EQ_U64(sum[0], sum[1]);
	ASSERT_EQ_U64(qs[0], qs[1]);
	ASSERT(sp99[0] == sp99[1]);
	ASSERT(sum[0] != sum[2]);
}

/* CDF files: errors name the line; a good file's mean and draws. */
static void test_cdf_errors(void)
{
	static const struct {
		const char *text, *err;
	} bad[] = {
		{ "0 0\n10 50\n", ":2: needs at least two points" },
		{ "# c\n5 10\n10 100\n", ":2: the first point's percentile" },
		{ "0 0\n10 50\n5 100\n", ":3: bytes and percentile must both" },
		{ "0 0\n10 50\n20 50\n", ":3: bytes and percentile must both" },
		{ "0 0\nabc\n", ":2: expected 'bytes percentile'" },
		{ "0 0\n10 50 7\n", ":2: expected" },
		{ "0 0\n10 150\n", ":2: bytes must be 0..2^31" },
	};
	struct sim_cdf c;
	char err[256], text[] = "# size pct\n0 0\n1000 50 # half\n3000 100\n";
	FILE *f;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f = fmemopen((void *)bad[i].text, strlen(bad[i].text), "r");
		ASSERT(f != NULL);
		ASSERT_EQ(sim_cdf_read(&c, f, "x.cdf", err, sizeof(err)), -1);
		fclose(f);
		if (!strstr(err, bad[i].err))
			UR_FAIL("'%s': got '%s', want '%s'", bad[i].text, err,
				bad[i].err);
	}
	f = fmemopen(text, strlen(text), "r");
	ASSERT_EQ(sim_cdf_read(&c, f, "x.cdf", err, sizeof(err)), 0);
	fclose(f);
	ASSERT_EQ(c.n, 3);
	/* trapezoids: 500 * 0.5 + 2000 * 0.5 */
	ASSERT(fabs(sim_cdf_mean(&c) - 1250) < 1e-9);
	ASSERT_EQ(sim_cdf_draw(&c, 0.25), 500);
	ASSERT_EQ(sim_cdf_draw(&c, 0.75), 2000);
	ASSERT_EQ(sim_cdf_draw(&c, 0), 1);
	ASSERT(fabs(sim_cdf_at(&c, 2000) - 0.75) < 1e-9);
	{
		struct sim_cfg cfg;

		sim_cfg_default(&cfg);
		ASSERT_EQ(sim_cfg_set(&cfg, "load", "0", err, sizeof(err)), -1);
		ASSERT(strstr(err, "load") != NULL);
		ASSERT_EQ(sim_cfg_set(&cfg, "load", "1.5", err, sizeof(err)), -1);
		ASSERT_EQ(sim_cfg_set(&cfg, "load", "0.7", err, sizeof(err)), 0);
		ASSERT_EQ(sim_cfg_set(&cfg, "workload", "poisson", err,
				      sizeof(err)), 0);
		ASSERT_EQ(cfg.work, SIM_WORK_POISSON);
	}
}

/* Every flow's FCT is at least its ideal (sim__ideal_ns is a lower bound:
 * the slowdown's denominator never overstates). */
static void test_ideal_bound(void)
{
	struct sim_cfg c;
	struct sim_result r;
	struct sim *s;

	sim_cfg_default(&c);
	c.k = 4;
	c.cc.algo = UR_CC_NONE;
	s = mk(&c);
	/* one at a time on the fabric: one byte, one MTU and a bit, 1 MB
	 * across pods (6 hops), 50 KB under one edge switch (2 hops) */
	sim_add_flow(s, 0, 15, 1, 0);
	sim_add_flow(s, 1, 14, 4097, 100000);
	sim_add_flow(s, 2, 13, 1000000, 200000);
	sim_add_flow(s, 4, 5, 50000, 400000);
	sim_run(s, UINT64_MAX);
	sim_result(s, &r);
	ASSERT_EQ(r.flows_done, 4);
	for (uint32_t j = 0; j < 4; j++) {
		printf("alone: flow %u slowdown %.3f\n", j,
		       sim_flow_slowdown(s, j));
		ASSERT(sim_flow_slowdown(s, j) >= 1);
	}
	/* alone, a flow takes its ideal time plus the transport's headers
	 * the ideal leaves out (RETH, ImmDt): within 5 % */
	ASSERT(r.slow_p99 < 1.05);
	sim_destroy(s);
}


/* qp_per_flow: a 4 KiB flow posted 1 us after an 8 MiB one of the same
 * pair waits for it on the pair's one RC QP (in order), and goes at once
 * on a QP of its own; a flow posted after both are done reuses an idle
 * QP (two pairs of QPs, not three). */
static void test_qp_per_flow(void)
{
	for (int on = 0; on < 2; on++) {
		struct sim_cfg c;
		struct sim_result r;
		struct sim *s;
		char err[256], tr[] = "/tmp/ur_sim_trXXXXXX";
		const struct sim_flow *f;
		uint32_t n;

		close(mkstemp(tr));
		write_file(tr, "0 0 4 8388608\n1000 0 4 4096\n"
			       "5000000 0 4 4096\n");
		sim_cfg_default(&c);
		c.topo = SIM_TOPO_LEAFSPINE;
		c.leaves = 2;
		c.spines = 2;
		snprintf(c.trace, sizeof(c.trace), "%s", tr);
		c.work = SIM_WORK_TRACE;
		ASSERT_EQ(sim_cfg_set(&c, "qp_per_flow", on ? "on" : "off",
				      err, sizeof(err)), 0);
		s = mk(&c);
		sim_run(s, UINT64_MAX);
		sim_result(s, &r);
		unlink(tr);
		f = sim_flows(s, &n);
		ASSERT_EQ(n, 3);
		ASSERT_EQ_U64(r.flows_done, 3);
		if (on) {
			ASSERT(f[1].t_done < f[0].t_done);
			ASSERT(sim_flow_slowdown(s, 1) < 3);
			ASSERT_EQ_U64(r.qps, 4);
		} else {
			ASSERT(f[1].t_done > f[0].t_done);
			ASSERT(sim_flow_slowdown(s, 1) > 50);
			ASSERT_EQ_U64(r.qps, 2);
		}
		sim_destroy(s);
	}
}

static const struct ur_test_case tests[] = {
	{ "deterministic", test_deterministic },
	{ "evq_same_order", test_evq_same_order },
	{ "dcqcn_fair", test_dcqcn_fair },
	{ "cc_profile", test_cc_profile },
	{ "ecmp_bins", test_ecmp_bins },
	{ "incast_queue", test_incast_queue },
	{ "pfc_lossless", test_pfc_lossless },
	{ "swift_incast", test_swift_incast },
	{ "swift_keys", test_swift_keys },
	{ "errors", test_errors },
	{ "trace_and_failures", test_trace_and_failures },
	{ "rail", test_rail },
	{ "midrun_failure", test_midrun_failure },
	{ "link_restore", test_link_restore },
	{ "spray_selective_repeat", test_spray_selective_repeat },
	{ "timer_held_at_nic", test_timer_held_at_nic },
	{ "adaptive_unequal", test_adaptive_unequal },
	{ "poisson", test_poisson },
	{ "ideal_bound", test_ideal_bound },
	{ "cdf_errors", test_cdf_errors },
	{ "qp_per_flow", test_qp_per_flow },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

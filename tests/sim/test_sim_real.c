// SPDX-License-Identifier: MIT
/*
 * The simulator against the transport tests' network (tests/transport
 * tnet): the same RDMA WRITE with immediate, host 0 to host 1 at 100 Gb/s,
 * run by uroce-sim (h0 - switch - h1, two 1 us links, no congestion
 * control, no PFC or ECN) and by tnet (one 2 us hop behind a sender link
 * of the same rate), once without loss and once with its second packet
 * (PSN 1, a WRITE middle) lost. Both run the one transport, so the
 * requester's packets, its retransmissions, the responder's NAKs and the
 * completion must agree; what differs is only the fabric: the switch's
 * store and forward (one packet's serialisation, added to tnet's delay)
 * and the wire's overheads (tnet's rate counts IB bytes only: scaled).
 * tnet's sender link queues all the transport sends, so the sim's NIC
 * queue is made as deep (nic_queue_kb 2048): with the default 16 KiB the
 * NIC's back-pressure keeps the transport from making packets the wire
 * cannot take yet, and go-back-N then resends 19 packets, not 255.
 * Tolerances: packets and retransmissions within 3 + 3 %, completion
 * within 3 %.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "tfix.h"

#define LEN (1u << 20)
#define WIRE_OVH 66 /* Eth 14 + FCS 4 + IPv4 20 + UDP 8 + preamble/IFG 20 */

struct run {
	uint64_t fct_ns, req_pkts, retx, naks;
};

static void sim_side(bool lose, struct run *out)
{
	struct sim_cfg c;
	struct sim *s;
	struct sim_result r;
	const struct sim_flow *f;
	char err[256];
	uint32_t n;
	int h0;

	sim_cfg_default(&c);
	c.topo = SIM_TOPO_LEAFSPINE;
	c.leaves = 1;
	c.spines = 1;
	c.hosts_per_leaf = 2;
	c.cc.algo = UR_CC_NONE;
	c.ecn = false;
	c.pfc = false;
	/* tnet's sender queues whatever the transport sends (its link has no
	 * back-pressure): the NIC queue as deep, so the transport sends the
	 * same packets at the same times */
	c.nic_queue = 2u << 20;
	s = sim_create(&c, err, sizeof(err));
	if (!s)
		UR_FAIL("sim_create: %s", err);
	ASSERT_EQ(sim_workload(s, err, sizeof(err)), 0);
	sim_add_flow(s, 0, 1, LEN, 0);
	h0 = sim_node_by_name(s, "h0");
	if (lose)
		sim_port_drop_nth(s, h0, 0, 2);
	sim_run(s, UINT64_MAX);
	sim_result(s, &r);
	ASSERT_EQ_U64(r.flows_done, 1);
	ASSERT_EQ_U64(r.drops, lose ? 1 : 0);
	f = sim_flows(s, &n);
	out->fct_ns = f[0].t_done - f[0].t_post;
	out->req_pkts = sim_host_counters(s, 0)->tx_packets;
	out->retx = sim_host_counters(s, 0)->tx_retransmit;
	out->naks = sim_host_counters(s, 1)->tx_nak_seq;
	sim_destroy(s);
}

static void tnet_side(bool lose, struct run *out)
{
	struct tfix f;
	struct tconn_attr ca = {
		.mtu = 4096, .timeout = 10, .retry_cnt = 7, .rnr_retry = 7,
		.min_rnr_timer = 1, .access = ACC_ALL,
	};
	struct ur_cqe e;
	uint64_t t0;

	tfix_init(&f, UR_QPT_RC, &ca);
	ASSERT_EQ(ur_qp_set_tx_window(f.a.qp, 256), 0);
	/* the sim's two hops: 2 x 1 us, and the switch's store and forward
	 * of one full packet (4 KiB + BTH 12 + ICRC 4 + the wire's 66) */
	f.net.f.delay_ns = 2000 + (4096 + 16 + WIRE_OVH) * 8 / 100;
	/* tnet's link counts IB bytes only: its rate is the share of a full
	 * packet's wire bytes that are IB bytes */
	f.net.f.rate_bps = (uint64_t)(100e9 * (4096 + 16) /
				      (4096 + 16 + WIRE_OVH));
	f.net.f.queue_ns = 1000000000ull;
	if (lose) {
		f.net.f.drop_opcode = UR_OP_RC_RDMA_WRITE_MIDDLE;
		f.net.f.drop_count = 1;
	}
	ASSERT_EQ(tfix_recv(&f.b, 1, 0, 0), 0);
	t0 = f.net.now;
	ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE_WITH_IMM, 1, 0, LEN,
			    (uintptr_t)f.b.buf, f.b.mr->rkey, UR_SEND_SIGNALED),
		  0);
	/* the receiver's completion is the flow's end, as in the sim */
	while (ur_cq_poll(&f.b.rcq, &e, 1) == 0) {
		ASSERT(f.net.now - t0 < 100000000ull);
		tnet_run_until(&f.net, f.net.now + 20);
	}
	ASSERT_EQ(e.status, UR_WC_SUCCESS);
	out->fct_ns = f.net.now - t0;
	tnet_run(&f.net, f.net.now + 1000000000ull);
	ASSERT_EQ(ur_cq_poll(&f.a.scq, &e, 1), 1);
	ASSERT_EQ(e.status, UR_WC_SUCCESS);
	ASSERT_EQ_U64(f.net.dropped, lose ? 1 : 0);
	out->req_pkts = f.net.nodes[0].dev.cnt.tx_packets;
	out->retx = f.net.nodes[0].dev.cnt.tx_retransmit;
	out->naks = f.net.nodes[1].dev.cnt.tx_nak_seq;
	tfix_fini(&f);
}

static bool near(uint64_t a, uint64_t b, double rel, uint64_t abs_)
{
	uint64_t d = a > b ? a - b : b - a;

	return d <= abs_ + rel * (double)(a > b ? a : b);
}

static void compare(bool lose)
{
	struct run sr, tr;

	sim_side(lose, &sr);
	tnet_side(lose, &tr);
	printf("%s: sim fct %.2f us, %lu requester packets, %lu retransmitted, %lu NAKs; tnet fct %.2f us, %lu, %lu, %lu\n",
	       lose ? "PSN 1 lost" : "no loss", sr.fct_ns / 1e3,
	       (unsigned long)sr.req_pkts, (unsigned long)sr.retx,
	       (unsigned long)sr.naks, tr.fct_ns / 1e3,
	       (unsigned long)tr.req_pkts, (unsigned long)tr.retx,
	       (unsigned long)tr.naks);
	/* 1 MiB in 4 KiB packets: 256 requests at least */
	ASSERT(sr.req_pkts >= LEN / 4096 && tr.req_pkts >= LEN / 4096);
	ASSERT_EQ_U64(sr.naks, tr.naks);
	ASSERT(near(sr.req_pkts, tr.req_pkts, 0.03, 3));
	ASSERT(near(sr.retx, tr.retx, 0.03, 3));
	ASSERT(near(sr.fct_ns, tr.fct_ns, 0.03, 0));
	if (lose)
		ASSERT(sr.retx > 0 && sr.naks == 1);
	else
		ASSERT(sr.retx == 0 && sr.naks == 0);
}

static void test_no_loss(void)
{
	compare(false);
}

static void test_one_loss(void)
{
	compare(true);
}

static const struct ur_test_case tests[] = {
	{ "no_loss", test_no_loss },
	{ "one_loss", test_one_loss },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

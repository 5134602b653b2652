// SPDX-License-Identifier: MIT
/*
 * Spraying weights (src/transport/ur_mp.c, docs/wire.md "Spraying") on
 * the virtual network: eight source ports that ECMP hashed onto two links
 * of different rates (tnet's shared path links, each a FIFO with a
 * tbf-like 20 ms queue), one RC QP with selective repeat, 256 requests
 * in flight, 64 KiB WRITEs. Its goodput after 100 ms (measured over the
 * next 100 ms) must reach 0.88 of the two links' sum whichever way the
 * ports fell, which needs each port's share to follow what its link
 * delivers: with main's weights (late notices a quarter off, one up per
 * 32 delivered, capped at 64: all equal here) it is 0.87 (5 ports on 300
 * Mbit/s, 3 on 150), 0.52 (3 on 300, 5 on 150) and 0.79 (5:3 on two
 * equal links). Seeds 1..60 gave 0.92-0.94, 0.90-0.97 and 0.93-0.95
 * (issue 33 asks 0.9; the assertion leaves a margin for other seeds).
 * The seed (printed; UR_SEED= replays it) picks which ports share a link.
 */
#include <stdio.h>
#include <string.h>

#include "tfix.h"

#define MSG (64u * 1024)
#define NPORTS_MAX 16u
#define WRS 250u /* 15.6 MiB: about 300 ms at 450 Mbit/s */

static unsigned int NPORTS = 8;
#define RUNS_RECOVER_MS 100
static unsigned int MP_FLAGS; /* UR_MP_RUNS: as the engine sprays */
static long long MIN_PCT = 88; /* of the links' sum (percent) */
static uint64_t STALL_NS;     /* the responder's host stalls so long ... */
#define STALL_EVERY_NS 20000000ull /* ... in every 20 ms */
static uint64_t spurious, sr_naks; /* the responder's, last run */
static uint32_t REORDER_NS; /* the gap timer (0: the default) */
static bool RX_IFS; /* the receiver's host names a link's interface dead */
/* ... only once a send of its own by that link is refused (bench/bond.sh
 * rdrop: DROP both ways at the receiver), its answers sprayed too */
static bool REFUSE;
/* ... or, with SILENT, by silence alone (tfault.rx_silence), its answers
 * sprayed and lost on the rail too: no send is refused */
static bool SILENT;
static uint64_t outs, backs, resends; /* the requester's, last run */

struct mp_watch {
	uint32_t a_qpn, b_qpn;
	uint32_t ack_psn;
	const uint16_t *sp;
	uint64_t req[2];       /* requests per link */
	uint64_t reqs, moves;  /* requests; ones on another port than the last */
	uint16_t last;
	const uint8_t *link_of; /* port -> link */
};

static void tap_mp(struct tnet *net, const uint8_t *d, uint32_t len,
		   void *arg)
{
	struct mp_watch *w = arg;
	struct ur_pkt pkt;

	if (ur_pkt_decode(d, len, &pkt) != UR_DEC_OK)
		return;
	if (pkt.h.dqpn == w->b_qpn && (pkt.mask & UR_OPF_REQ)) {
		for (unsigned int i = 0; i < NPORTS; i++)
			if (net->tap_sport == w->sp[i])
				w->req[w->link_of[i]]++;
		w->reqs++;
		w->moves += net->tap_sport != w->last;
		w->last = net->tap_sport;
	} else if (pkt.h.dqpn == w->a_qpn &&
		   pkt.h.opcode == UR_OP_RC_ACKNOWLEDGE) {
		w->ack_psn = pkt.h.psn;
	}
}

/* @fast ports (of NPORTS) on a link of @r0 Mbit/s, the rest on one of @r1;
 * which ones, the seed's choice. Returns goodput / (r0 + r1). */
static uint64_t cut_at; /* ns after the start: link 0 drops everything */
static int restore_ms;  /* ... then works again: back within this */
static int recover_ms;  /* the ACKs at 0.9 of the other link from */
static double min10;    /* the least 10 ms of the first 60, of its rate */

static double rates(unsigned int fast, uint64_t r0, uint64_t r1)
{
	struct tfix f;
	struct ur_sr_params sp;
	struct mp_watch w = { 0 };
	uint16_t port[NPORTS_MAX];
	uint8_t link_of[NPORTS_MAX];
	uint64_t t0, t1;
	uint32_t psn0;
	double mbit, ratio;
	char map[NPORTS_MAX + 1];

	tfix_init(&f, UR_QPT_RC, NULL);
	f.net.f.delay_ns = 20000;
	ur_sr_params_default(&sp);
	if (REORDER_NS)
		sp.reorder_ns = REORDER_NS;
	f.net.f.rx_ifs = RX_IFS;
	f.net.f.rx_silence = SILENT;
	ASSERT_EQ(ur_qp_set_sr(f.a.qp, &sp), 0);
	ASSERT_EQ(ur_qp_set_sr(f.b.qp, &sp), 0);
	/* a random choice of @fast ports for link 0 */
	memset(link_of, 1, sizeof(link_of));
	for (unsigned int n = 0; n < fast;) {
		unsigned int i = (unsigned int)(tnet_rand(&f.net) % NPORTS);

		if (link_of[i]) {
			link_of[i] = 0;
			n++;
		}
	}
	/* paths 0 and 1 are the two links (their ports: the first port on
	 * each); every port queues on its link's path */
	for (unsigned int i = 0; i < NPORTS; i++) {
		port[i] = ur_mp_sport(ur_rocev2_sport(f.a.qp->qpn), i);
		map[i] = link_of[i] ? 's' : 'F';
	}
	map[NPORTS] = 0;
	f.net.f.npaths = 2 + NPORTS;
	for (unsigned int l = 0; l < 2; l++) {
		f.net.f.path[l].sport = 0; /* a link only: no port of its own */
		f.net.f.path[l].rate_bps = (l ? r1 : r0) * 1000000;
		f.net.f.path[l].queue_ns = 20000000; /* tbf latency 20ms */
	}
	for (unsigned int i = 0; i < NPORTS; i++) {
		f.net.f.path[2 + i].sport = port[i];
		f.net.f.path[2 + i].link = (uint8_t)(link_of[i] + 1);
	}
	ASSERT_EQ(ur_qp_set_paths(f.a.qp, port, NPORTS, MP_FLAGS), 0);
	if (REFUSE || SILENT) {
		/* the receiver's ports, one on each rail as the sender's
		 * (its answers' own paths: no rate, no queue; SILENT: lost
		 * while the rail is cut) */
		uint16_t bport[NPORTS_MAX];

		for (unsigned int i = 0; i < NPORTS; i++) {
			bport[i] = ur_mp_sport(ur_rocev2_sport(f.b.qp->qpn), i);
			f.net.f.path[2 + NPORTS + i].sport = bport[i];
		}
		f.net.f.npaths = 2 + 2 * NPORTS;
		ASSERT_EQ(ur_qp_set_paths(f.b.qp, bport, NPORTS, MP_FLAGS), 0);
	}
	f.net.f.stall_node = 1;
	f.net.f.stall_every_ns = STALL_EVERY_NS;
	f.net.f.stall_ns = STALL_NS;
	w.a_qpn = f.a.qp->qpn;
	w.b_qpn = f.b.qp->qpn;
	w.sp = port;
	w.link_of = link_of;
	f.net.tap = tap_mp;
	f.net.tap_arg = &w;
	for (uint32_t i = 0; i < WRS; i++)
		ASSERT_EQ(tfix_send(&f.a, UR_WR_RDMA_WRITE, 1000 + i, 0, MSG,
				    (uintptr_t)f.b.buf + MSG, f.b.mr->rkey,
				    UR_SEND_SIGNALED), 0);
	if (cut_at) {
		/* link 0 drops everything from cut_at: ACK progress in 2 ms
		 * bins, then the other link's share 60-160 ms after */
		uint64_t c = f.net.now + cut_at;

		tnet_run_until(&f.net, c);
		f.net.f.path[0].loss = 1.0;
		/* a bonded port's engine: nothing by it for 2 ms while the
		 * other link hears (udp.c bond_silent); or, with REFUSE,
		 * once the receiver's own send by it is refused */
		if (!REFUSE && !SILENT)
			f.net.f.path[0].rx_dead_at = c + 2000000;
		for (unsigned int i = 0; SILENT && i < NPORTS; i++)
			if (!link_of[i])
				f.net.f.path[2 + NPORTS + i].loss = 1.0;
		for (unsigned int i = 0; REFUSE && i < NPORTS; i++) {
			if (link_of[i])
				continue;
			f.net.f.path[2 + NPORTS + i].tx_refuse_at = c;
			f.net.f.path[2 + NPORTS + i].refuse_if = 1;
		}
		int32_t bins[30];
		/* link 1 alone, 2 ms: its rate in 1 KiB PSNs */
		double full = (double)r1 * 1e6 / 8 / 1024 * 0.002;

		printf("  PSNs acked per 2 ms after the cut:");
		for (int b = 0; b < 30; b++) {
			psn0 = w.ack_psn;
			tnet_run_until(&f.net, c + (uint64_t)(b + 1) * 2000000);
			bins[b] = ur_psn_diff(w.ack_psn, psn0);
			printf(" %d", bins[b]);
		}
		/* recovered: from the end of the last bin with under half
		 * of link 1's rate */
		recover_ms = 0;
		for (int b = 0; b < 30; b++)
			if (bins[b] < 0.5 * full)
				recover_ms = 2 * (b + 1);
		min10 = 1e9;
		for (int k = 0; k < 6; k++) {
			int32_t s = 0;

			for (int b = 5 * k; b < 5 * k + 5; b++)
				s += bins[b];
			if (s / (5 * full) < min10)
				min10 = s / (5 * full);
		}
		printf("\n  recovered %d ms after the cut; the least 10 ms "
		       "bin of the first 60 at %.2f of the link's rate\n",
		       recover_ms, min10);
	}
	/* 100 ms to settle, then 100 ms measured (the transfer lasts 220
	 * ms at 600 Mbit/s) */
	if (!cut_at)
		tnet_run_until(&f.net, f.net.now + 100000000);
	t0 = f.net.now;
	psn0 = w.ack_psn;
	tnet_run_until(&f.net, t0 + 100000000);
	t1 = f.net.now;
	mbit = (double)ur_psn_diff(w.ack_psn, psn0) * 1024 * 8 /
	       (double)(t1 - t0) * 1000;
	ratio = mbit / (double)(cut_at ? r1 : r0 + r1);
	if (cut_at) {
		/* link 0 works again: how long until it carries half its
		 * rate (18 of its 1 KiB requests per ms at 300 Mbit/s) in a
		 * 2 ms bin */
		uint64_t r = f.net.now, q;
		int ms = 0;

		f.net.f.path[0].loss = 0;
		f.net.f.path[0].rx_dead_at = 0;
		for (unsigned int i = 0; REFUSE && i < NPORTS; i++)
			f.net.f.path[2 + NPORTS + i].tx_refuse_at = 0;
		for (unsigned int i = 0; SILENT && i < NPORTS; i++)
			f.net.f.path[2 + NPORTS + i].loss = 0;
		do {
			q = w.req[0];
			ms += 2;
			tnet_run_until(&f.net, r + (uint64_t)ms * 1000000);
		} while (w.req[0] - q < 2 * r0 * 1000000 / 8 / 1024 / 1000 / 2 &&
			 ms < 200);
		restore_ms = ms;
		printf("  link 0 restored: at half its rate %d ms after\n", ms);
	}
	tnet_run(&f.net, 20ull * 1000 * 1000 * 1000);
	for (uint32_t i = 0; i < WRS; i++) {
		struct ur_cqe e = tfix_cqe(&f.a.scq);

		ASSERT_EQ(e.status, UR_WC_SUCCESS);
		ASSERT_EQ(e.wr_id, 1000 + i);
	}
	ASSERT_MEM_EQ(f.b.buf + MSG, f.a.buf, MSG);
	ASSERT_EQ(f.a.qp->state, UR_QPS_RTS);
	printf("  ports %s (F: %llu, s: %llu Mbit/s): %.0f Mbit/s, %.2f of "
	       "the sum; requests %llu:%llu, %.1f a run; tail drops "
	       "%llu/%llu; weights",
	       map, (unsigned long long)r0, (unsigned long long)r1, mbit,
	       ratio, (unsigned long long)w.req[0],
	       (unsigned long long)w.req[1],
	       (double)w.reqs / (double)(w.moves ? w.moves : 1),
	       (unsigned long long)f.net.f.path[0].tail_drops,
	       (unsigned long long)f.net.f.path[1].tail_drops);
	for (unsigned int i = 0; i < NPORTS; i++) {
		struct ur_mp_path_cnt pc;
		unsigned int wt;
		uint16_t sport;

		ASSERT_EQ(ur_qp_path_info(f.a.qp, i, &sport, &wt, &pc), 0);
		printf(" %u", wt);
	}
	spurious = f.b.qp->dev->cnt.rx_sr_spurious;
	sr_naks = f.b.qp->dev->cnt.tx_sr_nak;
	outs = f.a.qp->dev->cnt.mp_path_out;
	backs = f.a.qp->dev->cnt.mp_path_back;
	resends = f.a.qp->dev->cnt.tx_retransmit;
	printf("\n  selective NAKs %llu (spurious %llu), resends %llu, paths "
	       "taken out %llu, brought back %llu\n",
	       (unsigned long long)sr_naks, (unsigned long long)spurious,
	       (unsigned long long)resends, (unsigned long long)outs,
	       (unsigned long long)backs);
	/* UR_MP_RUNS: runs of UR_MP_RUN less what resends and probes
	 * break; without it, a port per request */
	if (!(MP_FLAGS & UR_MP_RUNS))
		ASSERT_GE(2 * w.moves, w.reqs);
	else if (!cut_at) /* a run stops while a path is out */
		ASSERT_GE(w.reqs, 8 * w.moves);
	tfix_fini(&f);
	return ratio;
}

/* 300 + 150 Mbit/s links, five ports on the fast one and three on the
 * slow one, then the other way round. */
static void t_unequal(void)
{
	double a = rates(5, 300, 150), b = rates(3, 300, 150);

	ASSERT_GE((long long)(a * 100), MIN_PCT); /* percent of the sum */
	ASSERT_GE((long long)(b * 100), MIN_PCT);
}

/* Two 300 Mbit/s links, the ports split 5:3 and 3:5 (the seed says
 * which): the same test where the weights should end up by port count. */
static void t_equal(void)
{
	double a = rates(5, 300, 300), b = rates(3, 300, 300);

	ASSERT_GE((long long)(a * 100), MIN_PCT); /* percent of the sum */
	ASSERT_GE((long long)(b * 100), MIN_PCT);
}

/*
 * Sixteen ports (bench/multipath_cut.sh's UROCE_PATHS=16) hashed onto two
 * 300 Mbit/s links, eight on each; 60 ms in, link 0 drops everything
 * (a failure inside the fabric: no host sees it). Its ports are taken
 * out; 60-160 ms after the cut the QP must move at 0.5 of the other
 * link's rate, with no error and every byte in place. Seeds 1..40 gave
 * 0.57-1.04 of it, median 0.98 (without taking a port out when it was
 * lost and silent for 2 round trips, ur_mp.c rates_update: 0.42-0.90,
 * median 0.75: at the floor weight its few requests were each lost and
 * held the window).
 */
static void cut16(unsigned int recover_max)
{
	double a;

	NPORTS = 16;
	cut_at = 60000000;
	a = rates(8, 300, 300);
	NPORTS = 8;
	cut_at = 0;
	ASSERT_GE((long long)(a * 100), 50); /* percent of link 1's rate */
	/* Its ports are probed with copies of requests that left on link
	 * 1 too, every 8 ms at most, and the peer's path notice puts them
	 * back. Seeds 1..60: 2-18 ms, median 10, and link 1 at 0.98-0.99
	 * of its rate during the cut (probes that held the window, their
	 * gaps growing to 256 ms: 16-146 ms, 34 seeds over 40; 0.85-1.01,
	 * median 0.95). */
	ASSERT_LE(restore_ms, 50);
	/* The peer names the cut ports when it NAKs a gap without waiting
	 * for them (silent path notices): out at once, their requests sent
	 * again. Seeds 1..60: 6-8 ms (with losses alone taking them out:
	 * 8-18, median 14). */
	ASSERT_LE(recover_ms, recover_max);
}

static void t_cut16(void)
{
	cut16(16);
}

/* The same with runs of UR_MP_RUN (32) requests per turn (UR_MP_RUNS,
 * what the engine asks for: a run leaves as one GSO send). Seeds 1..60:
 * 0.86-0.90 of the sum (unequal), 0.89-0.90 (equal); with runs of 16
 * 0.89-0.94 and 0.90-0.94, of 64 0.75-0.82 (unequal). */
static void t_runs_unequal(void)
{
	MP_FLAGS = UR_MP_RUNS;
	MIN_PCT = 85;
	t_unequal();
	MIN_PCT = 88;
	MP_FLAGS = 0;
}

static void t_runs_equal(void)
{
	MP_FLAGS = UR_MP_RUNS;
	MIN_PCT = 85;
	t_equal();
	MIN_PCT = 88;
	MP_FLAGS = 0;
}

/* mp_cut16 with the engine's runs (spray4 had 9 seeds of 60 at
 * 0.00-0.34 of the other link before the silent path notices). A run
 * stops while a path is out, so the QP sprays per request then; the
 * last 2 ms bin below half the link's rate comes later than per request
 * (seeds 1..60: 6-60 ms, median 22, runs of 16 median 18: single dips of
 * a bin or two after the first 10 ms), but link 1 carries 0.5 of its
 * rate at least (0.95-0.98 of it over the cut). */
static void t_runs_cut16(void)
{
	MP_FLAGS = UR_MP_RUNS;
	cut16(RUNS_RECOVER_MS);
	MP_FLAGS = 0;
}

/*
 * Two equal links, the engine's runs, and the responder's host not
 * scheduled for 3 ms in every 20 (a loaded machine: what arrives waits
 * in its socket and comes in one go; bench/multipath.sh at load 10-14
 * heard nothing for 2-4 ms at a time). Nothing is lost, so a selective
 * NAK is spurious. Before the shared silence stopped counting towards a
 * path's (ur_sr.c ur__sr_path_seen), the first arrival after each stall
 * found every path idle and NAKed, and each late original then taken
 * for the resend NAKed the next PSN: seeds 1..60 made 75-347 spurious
 * NAKs and 0.68-0.87 of the sum. Seeds 1..80 now: none, 0.89-0.93.
 */
static void t_runs_stall(void)
{
	double a;

	MP_FLAGS = UR_MP_RUNS;
	STALL_NS = 3000000;
	a = rates(4, 300, 300);
	STALL_NS = 0;
	MP_FLAGS = 0;
	ASSERT_LE(spurious, 2);
	ASSERT_GE((long long)(a * 100), 80); /* percent of the sum */
}

/*
 * A bonded port's two rails (one port each, as the engine opens them),
 * 300 Mbit/s each, the gap timer at 5 ms (bench/bond.sh), runs of
 * UR_MP_RUN: rail 0 drops everything at the receiver (bench/bond.sh
 * rdrop, silent for the sender), whose host finds its interface dead 2
 * ms later (ur_dev_ops.rx_if_ok). The port that came by it is named in a
 * silent notice then, and the sender takes the path out and sends its
 * requests again on the other: every 10 ms of the first 60 after the cut
 * brings ACKs for 0.7 of rail 1's rate at least (issue 45: the other
 * rail's rate within 10 ms). Without the host's word the port
 * is named after path_idle(), 4 x the gap timer: 20 ms, and the sender
 * stands still from when its window fills. Seeds 1..60: the least 10 ms
 * of the first 60 after the cut at 0.87-0.90 of rail 1's rate (without
 * the host's word, as on main: 0.00-0.04).
 */
static void t_cut_bond(void)
{
	double a;

	NPORTS = 2;
	MP_FLAGS = UR_MP_RUNS;
	REORDER_NS = 5000000;
	RX_IFS = true;
	cut_at = 60000000;
	a = rates(1, 300, 300);
	cut_at = 0;
	RX_IFS = false;
	REORDER_NS = 0;
	MP_FLAGS = 0;
	NPORTS = 8;
	ASSERT_GE((long long)(a * 100), 50); /* percent of rail 1's rate */
	ASSERT_GE((long long)(min10 * 100), 70);
	ASSERT_LE(restore_ms, 50);
}

/*
 * The same cut as bench/bond.sh rdrop makes it: the receiver drops
 * everything by rail 0 both ways, and its host learns that only when a
 * send of its own by the rail is refused (udp.c bond_if_err), not by
 * silence. The receiver sprays its answers too. Once the sender's
 * window is full behind the first request lost, the receiver, its gap
 * open, sends nothing (its ACK waits for ePSN), so it tries its ports
 * with a plain ACK when a gap first waits for a port (ur_sr.c
 * ifs_probe): the refusal names the port at once, not after
 * path_idle() (20 ms), and the least 10 ms bin stays near rail 1's
 * rate. Seeds 1..60: see bench/results/2026-12-07-path10.md.
 */
static void t_cut_bond_refused(void)
{
	NPORTS = 2;
	MP_FLAGS = UR_MP_RUNS;
	REORDER_NS = 5000000;
	RX_IFS = true;
	REFUSE = true;
	cut_at = 60000000;
	(void)rates(1, 300, 300);
	cut_at = 0;
	REFUSE = false;
	RX_IFS = false;
	REORDER_NS = 0;
	MP_FLAGS = 0;
	NPORTS = 8;
	ASSERT_GE((long long)(min10 * 100), 70);
	/* The rail back after the restore: the receiver named its port
	 * silent, so the first probe copy heard again is news (ur_sr.c
	 * ur__sr_path_seen, told). By path_idle() alone (main), which had
	 * grown to 200 ms with the cut's NAK round trips while the copies
	 * came every 8 ms, it came back in 34 ms in half the seeds and
	 * not within 200 in the others; now 22-28 ms (seeds 1..60). */
	ASSERT_LE(restore_ms, 50);
}

/* Four 64 KiB WRITEs, run until all four completed (each checked),
 * then @idle_ns with nothing owed. */
static void burst4(struct tfix *f, uint32_t *id, uint64_t idle_ns)
{
	uint64_t end;

	for (uint32_t i = 0; i < 4; i++)
		ASSERT_EQ(tfix_send(&f->a, UR_WR_RDMA_WRITE, *id + i, 0, MSG,
				    (uintptr_t)f->b.buf + MSG, f->b.mr->rkey,
				    UR_SEND_SIGNALED), 0);
	end = f->net.now + 500000000ull;
	for (uint32_t i = 0; i < 4; i++) {
		struct ur_cqe e;

		while (!ur_cq_poll(&f->a.scq, &e, 1)) {
			ASSERT(f->net.now < end);
			tnet_run_until(&f->net, f->net.now + 250000);
		}
		ASSERT_EQ(e.status, UR_WC_SUCCESS);
		ASSERT_EQ(e.wr_id, *id + i);
	}
	*id += 4;
	tnet_run_until(&f->net, f->net.now + idle_ns);
}

/*
 * A bonded port's rail that fails silently (no refused send) while the
 * requester owes now and then nothing (bursts of four WRITEs, 1 ms apart,
 * as ib_write_bw's iterations): its host finds the rail quiet 2 ms after
 * the cut (path_quiet) and the path goes out. It comes back once the
 * host hears the rail again, not whenever nothing is owed: put back so,
 * it took a burst's requests and was taken out again each time (bench
 * traces: `mp up` between two messages, then a window of 256 resent).
 * Main: one take-out per burst of the cut (20 of 20); this: 1. After
 * the restore (the host hears it) the rail carries requests again.
 */
static void t_quiet_back(void)
{
	struct tfix f;
	struct ur_sr_params sp;
	struct mp_watch w = { 0 };
	static const uint8_t link_of[2] = { 0, 1 };
	uint16_t port[2];
	uint32_t id = 1;
	uint64_t outs0, outs_cut, req0;

	tfix_init(&f, UR_QPT_RC, NULL);
	f.net.f.delay_ns = 20000;
	ur_sr_params_default(&sp);
	sp.reorder_ns = 5000000;
	ASSERT_EQ(ur_qp_set_sr(f.a.qp, &sp), 0);
	ASSERT_EQ(ur_qp_set_sr(f.b.qp, &sp), 0);
	f.net.f.npaths = 4;
	for (unsigned int l = 0; l < 2; l++) {
		port[l] = ur_mp_sport(ur_rocev2_sport(f.a.qp->qpn), l);
		f.net.f.path[l].rate_bps = 300000000;
		f.net.f.path[l].queue_ns = 20000000;
		f.net.f.path[2 + l].sport = port[l];
		f.net.f.path[2 + l].link = (uint8_t)(l + 1);
	}
	ASSERT_EQ(ur_qp_set_paths(f.a.qp, port, 2, UR_MP_RUNS), 0);
	w.a_qpn = f.a.qp->qpn;
	w.b_qpn = f.b.qp->qpn;
	w.sp = port;
	w.link_of = link_of;
	NPORTS = 2;
	f.net.tap = tap_mp;
	f.net.tap_arg = &w;
	for (int b = 0; b < 4; b++)
		burst4(&f, &id, 1000000);
	ASSERT_EQ(f.a.qp->dev->cnt.mp_path_out, 0);
	ASSERT_GE(w.req[0], 1);
	/* link 0 drops everything; node 0's host finds it quiet 2 ms on */
	f.net.f.path[0].loss = 1.0;
	f.net.f.path[0].quiet_at = f.net.now + 2000000;
	outs0 = f.a.qp->dev->cnt.mp_path_out;
	for (int b = 0; b < 20; b++)
		burst4(&f, &id, 1000000);
	outs_cut = f.a.qp->dev->cnt.mp_path_out - outs0;
	/* restored: heard again */
	f.net.f.path[0].loss = 0;
	f.net.f.path[0].quiet_at = 0;
	req0 = w.req[0];
	for (int b = 0; b < 10; b++)
		burst4(&f, &id, 1000000);
	printf("  taken out %llu times in the cut's 20 bursts; %llu requests "
	       "by link 0 in the 10 after the restore; out/back %llu/%llu\n",
	       (unsigned long long)outs_cut,
	       (unsigned long long)(w.req[0] - req0),
	       (unsigned long long)f.a.qp->dev->cnt.mp_path_out,
	       (unsigned long long)f.a.qp->dev->cnt.mp_path_back);
	NPORTS = 8;
	ASSERT_GE(outs_cut, 1);
	ASSERT_LE(outs_cut, 2);
	/* half of the 10 bursts' 2,560 requests would be 1,280 */
	ASSERT_GE(w.req[0] - req0, 400);
	ASSERT_MEM_EQ(f.b.buf + MSG, f.a.buf, MSG);
	ASSERT_EQ(f.a.qp->state, UR_QPS_RTS);
	tfix_fini(&f);
}

/*
 * A rail that fails silently both ways (a cut between the hosts: no send
 * is refused), the receiver's answers sprayed: its host calls the rail's
 * interface dead by silence alone, as udp.c bond_silent counts it
 * (tfault.rx_silence: 2 ms without an arrival while 16 came by the
 * other), and names its port in a silent notice; the sender takes the
 * path out. Issue 45: the other rail's rate within 10 ms; the rail back
 * after the restore. Seeds 1..60: where the rail that carried ePSN was
 * the last to deliver, the sender's window full, nothing came by either
 * rail and the gap waited for path_idle() (20 ms): ACKs back at half the
 * rail's rate 26 ms after the cut, the least 10 ms at 0.00 (29 seeds;
 * main); with the receiver not waiting once every port is quiet for the
 * gap timer (ur_sr.c gap_arm): 10 ms, 0.70; the other 31 seeds 12 ms,
 * 0.87 either way. Restore 24-28 ms (main: 28-32).
 */
static void t_cut_bond_silent(void)
{
	NPORTS = 2;
	MP_FLAGS = UR_MP_RUNS;
	REORDER_NS = 5000000;
	RX_IFS = true;
	SILENT = true;
	cut_at = 60000000;
	(void)rates(1, 300, 300);
	cut_at = 0;
	SILENT = false;
	RX_IFS = false;
	REORDER_NS = 0;
	MP_FLAGS = 0;
	NPORTS = 8;
	ASSERT_GE((long long)(min10 * 100), 60);
	ASSERT_LE(recover_ms, 12);
	ASSERT_LE(restore_ms, 50);
}

static const struct ur_test_case tests[] = {
	{ "mp_cut_bond_silent", t_cut_bond_silent },
	{ "mp_quiet_back", t_quiet_back },
	{ "mp_cut_bond_refused", t_cut_bond_refused },
	{ "mp_runs_stall", t_runs_stall },
	{ "mp_cut_bond", t_cut_bond },
	{ "mp_cut16", t_cut16 },
	{ "mp_runs_cut16", t_runs_cut16 },
	{ "mp_runs_rates_unequal", t_runs_unequal },
	{ "mp_runs_rates_equal", t_runs_equal },
	{ "mp_rates_unequal", t_unequal },
	{ "mp_rates_equal", t_equal },
	{ NULL, NULL },
};

UR_TEST_MAIN(tests)

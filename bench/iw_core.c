// SPDX-License-Identifier: MIT
/*
 * The iWARP connection core's own cost: two connections joined in memory
 * (the whole stream handed over at once, as a socket with room would),
 * WRITEs of 64 KiB and 1 MiB (framing, CRC32c when on, placement) and an
 * 8-byte SEND ping-pong (post, frame, deframe, complete, both ways).
 * No sockets, no TCP: an upper bound for what the protocol leaves of a
 * core, not a network figure. Medians of REPS repetitions.
 *
 * Usage: iw-core-bench [REPS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "ur_iw.h"

#define BUF (2u << 20)

struct side {
	struct ur_dev dev;
	struct ur_qp qp;
	struct ur_cq scq, rcq;
	struct ur_mr mr;
	uint8_t *buf;
	struct ur_iw_conn *c;
};

static const struct ur_mr *lookup(void *host, uint32_t key)
{
	struct side *s = host;

	return key == s->mr.rkey ? &s->mr : NULL;
}

static const struct ur_dev_ops ops = {.mr_lookup = lookup};

static void side_init(struct side *s, int id, bool init, bool crc)
{
	struct ur_qp_caps caps = {.max_send_wr = 256, .max_recv_wr = 256,
				  .max_send_sge = 1, .max_recv_sge = 1};
	struct ur_iw_cfg cfg;

	memset(s, 0, sizeof(*s));
	s->dev.ops = &ops;
	s->dev.host = s;
	s->buf = aligned_alloc(4096, BUF);
	memset(s->buf, id, BUF);
	s->mr = (struct ur_mr){.iova = (uintptr_t)s->buf, .host = s->buf,
			       .length = BUF, .lkey = 0x100u + id,
			       .rkey = 0x100u + id, .pdn = 1, .type = UR_KEY_MR,
			       .access = 7};
	if (ur_cq_init(&s->scq, 1024) || ur_cq_init(&s->rcq, 1024) ||
	    ur_qp_create(&s->dev, &s->qp, UR_QPT_RC, 1, 1, &caps, &s->scq,
			 &s->rcq))
		abort();
	ur_iw_cfg_siw(&cfg, init);
	cfg.pol.crc_required = crc;
	cfg.tx_max = 4u << 20;
	if (ur_iw_conn_new(&s->qp, &cfg, 0, &s->c))
		abort();
}

static void side_fini(struct side *s)
{
	ur_iw_conn_free(s->c);
	ur_qp_destroy(&s->qp);
	ur_cq_fini(&s->scq);
	ur_cq_fini(&s->rcq);
	free(s->buf);
}

static void pump(struct side *a, struct side *b)
{
	for (bool more = true; more;) {
		more = false;
		for (int d = 0; d < 2; d++) {
			struct side *f = d ? b : a, *t = d ? a : b;
			const uint8_t *p;
			size_t n = ur_iw_tx_peek(f->c, &p);

			if (!n)
				continue;
			more = true;
			ur_iw_rx(t->c, p, n, 0);
			ur_iw_tx_done(f->c, n, 0);
		}
	}
}

static void post(struct side *s, uint32_t op, uint32_t len, struct side *peer)
{
	struct ur_sge sg = {(uintptr_t)s->buf, len, s->mr.lkey};
	struct ur_send_wr wr = {.opcode = op, .flags = UR_SEND_SIGNALED,
				.remote_addr = (uintptr_t)peer->buf,
				.rkey = peer->mr.rkey, .sg_list = &sg,
				.num_sge = 1};

	if (ur_iw_post_send(s->c, &wr, 0))
		abort();
}

static void post_recv(struct side *s)
{
	struct ur_sge sg = {(uintptr_t)s->buf + BUF / 2, 64, s->mr.lkey};
	struct ur_recv_wr wr = {.sg_list = &sg, .num_sge = 1};

	if (ur_iw_post_recv(s->c, &wr, 0))
		abort();
}

static void one(struct ur_cq *cq)
{
	struct ur_cqe e;

	if (ur_cq_poll(cq, &e, 1) != 1 || e.status)
		abort();
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_dbl);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 9;
	double *t = calloc((size_t)reps, sizeof(*t));

	if (reps < 1 || !t)
		return 2;
	printf("CRC32c: %s\n", ur_crc32c_impl());
	printf("%-24s %10s %12s\n", "iWARP core (in memory)", "CRC32c", "median");
	for (int crc = 0; crc < 2; crc++) {
		struct side a, b;

		side_init(&a, 0, true, crc);
		side_init(&b, 1, false, crc);
		pump(&a, &b);
		ur_iw_accept(b.c, NULL, 0, 0);
		pump(&a, &b);
		for (uint32_t len = 64u << 10; len <= (1u << 20); len <<= 4) {
			int n = len > (64u << 10) ? 64 : 1024;

			for (int r = 0; r < reps; r++) {
				double t0 = bench_now_us();

				for (int i = 0; i < n; i++) {
					post(&a, UR_WR_RDMA_WRITE, len, &b);
					pump(&a, &b);
					one(&a.scq);
				}
				t[r] = (double)len * n * 8 / (bench_now_us() - t0) / 1e3;
			}
			printf("WRITE %-18s %10s %8.1f Gb/s\n",
			       len > (64u << 10) ? "1 MiB" : "64 KiB",
			       crc ? "on" : "off", median(t, reps));
		}
		for (int r = 0; r < reps; r++) {
			int n = 20000;
			double t0 = bench_now_us();

			for (int i = 0; i < n; i++) {
				post_recv(&b);
				post_recv(&a);
				post(&a, UR_WR_SEND, 8, &b);
				pump(&a, &b);
				one(&b.rcq);
				post(&b, UR_WR_SEND, 8, &a);
				pump(&a, &b);
				one(&a.rcq);
				one(&a.scq);
				one(&b.scq);
			}
			t[r] = (bench_now_us() - t0) * 1e3 / n;
		}
		printf("%-24s %10s %8.0f ns\n", "8 B SEND round trip",
		       crc ? "on" : "off", median(t, reps));
		side_fini(&a);
		side_fini(&b);
	}
	free(t);
	return 0;
}

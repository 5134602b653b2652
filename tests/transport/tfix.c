// SPDX-License-Identifier: MIT
#include "tfix.h"

#include <stdlib.h>
#include <string.h>

void tfix_side(struct tfix *f, struct tside *s, int node, uint32_t cq_depth)
{
	s->node = &f->net.nodes[node];
	ASSERT_EQ(ur_cq_init(&s->scq, cq_depth), 0);
	ASSERT_EQ(ur_cq_init(&s->rcq, cq_depth), 0);
	s->buf = calloc(1, TBUF);
	ASSERT(s->buf);
	s->mr = tnet_mr(s->node, s->buf, TBUF, ACC_ALL, 1);
}

static void side_init(struct tfix *f, struct tside *s, int node, uint32_t type)
{
	struct ur_qp_caps caps = {
		.max_send_wr = 256, .max_recv_wr = 256,
		.max_send_sge = 4, .max_recv_sge = 4, .max_inline_data = 256,
	};

	tfix_side(f, s, node, 1024);
	s->qp = tnet_qp(s->node, type, 1, &caps, &s->scq, &s->rcq);
}

void tfix_init(struct tfix *f, uint32_t type, const struct tconn_attr *ca)
{
	tfix_init_dev(f, type, ca, NULL, NULL);
}

void tfix_init_dev(struct tfix *f, uint32_t type, const struct tconn_attr *ca,
		   void (*setup)(struct ur_dev *dev, int node, void *arg),
		   void *arg)
{
	memset(f, 0, sizeof(*f));
	tnet_init(&f->net, ur_test_seed, 2);
	for (int i = 0; setup && i < 2; i++)
		setup(&f->net.nodes[i].dev, i, arg);
	side_init(f, &f->a, 0, type);
	side_init(f, &f->b, 1, type);
	f->ca = ca ? *ca : (struct tconn_attr){
		.mtu = 1024, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.min_rnr_timer = 1, .access = ACC_ALL,
		.psn_a = 100, .psn_b = 0xfffff0 };
	if (type != UR_QPT_UD)
		tnet_connect(f->a.qp, f->b.qp, &f->ca);
}

void tfix_fini(struct tfix *f)
{
	struct tside *ss[2] = { &f->a, &f->b };

	tnet_fini(&f->net);
	for (int i = 0; i < 2; i++) {
		ur_cq_fini(&ss[i]->scq);
		ur_cq_fini(&ss[i]->rcq);
		free(ss[i]->buf);
	}
}

struct ur_cqe tfix_cqe(struct ur_cq *cq)
{
	struct ur_cqe e[2];
	int n = ur_cq_poll(cq, e, 1);

	if (n != 1)
		UR_FAIL("expected a CQE, got none");
	return e[0];
}

void tfix_no_cqe(struct ur_cq *cq)
{
	struct ur_cqe e;

	if (ur_cq_poll(cq, &e, 1))
		UR_FAIL("unexpected CQE wr_id %llu status %u",
			(unsigned long long)e.wr_id, e.status);
}

int tfix_send(struct tside *s, uint32_t opcode, uint64_t wr_id,
	      uint32_t off, uint32_t len, uint64_t raddr, uint32_t rkey,
	      uint32_t flags)
{
	struct ur_sge sge = { (uintptr_t)(s->buf + off), len, s->mr->lkey };
	struct ur_send_wr wr = {
		.wr_id = wr_id, .opcode = opcode, .flags = flags,
		.remote_addr = raddr, .rkey = rkey,
		.sg_list = &sge, .num_sge = 1,
	};

	return ur_qp_post_send(s->qp, &wr, s->node->net->now);
}

int tfix_recv(struct tside *s, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ur_sge sge = { (uintptr_t)(s->buf + off), len, s->mr->lkey };
	struct ur_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };

	return ur_qp_post_recv(s->qp, &wr);
}

void tfix_fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (uint32_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

bool tfix_tap_count(const struct tfix *f, struct tfix_bits *w, uint8_t bit,
		    const uint8_t *d, uint32_t len, struct ur_pkt *pkt,
		    int *from)
{
	bool set = d[4] & bit;

	if (ur_pkt_decode(d, len, pkt) != UR_DEC_OK)
		return false;
	*from = pkt->h.dqpn == f->b.qp->qpn ? 0 : 1;
	if (pkt->mask & UR_OPF_REQ) {
		w->req[*from]++;
		w->req_bit[*from] += set;
	} else {
		w->ans[*from]++;
		w->ans_bit[*from] += set;
	}
	return true;
}

uint64_t tfix_wire_hash(uint64_t h, const uint8_t *d, uint32_t len,
			const struct ur_pkt *pkt, const void *buf)
{
	uint8_t c[UR_BTH_LEN + 8];
	uint32_t skip = (pkt->mask & UR_HDR_RETH) ? sizeof(c) : 0;

	if (skip) {
		memcpy(c, d, UR_BTH_LEN);
		ur_put64(c + UR_BTH_LEN, pkt->reth.va - (uintptr_t)buf);
	}
	for (uint32_t i = 0; i + UR_ICRC_LEN < len; i++)
		h = (h ^ (i < skip ? c[i] : d[i])) * 0x100000001b3ull;
	return h;
}

struct ur_cqe tfix_run_ok(struct tfix *f, struct ur_cq *cq)
{
	struct ur_cqe e;

	tnet_run(&f->net, f->net.now + 10ull * 1000 * 1000 * 1000);
	e = tfix_cqe(cq);
	if (e.status != UR_WC_SUCCESS)
		UR_FAIL("wr_id %llu completed with status %u",
			(unsigned long long)e.wr_id, e.status);
	return e;
}

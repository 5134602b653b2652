// SPDX-License-Identifier: MIT
/*
 * What rdma-core's suite does not check of device memory, parent domains
 * and thread domains (RC QPs in one process over real UDP on UROCE_IP):
 *  - dm_errors: every documented error of ibv_alloc_dm, ibv_memcpy_to/
 *    from_dm, ibv_reg_dm_mr and ibv_free_dm (comp_mask, sizes, the
 *    device's budget, alignment, the range, access, EBUSY);
 *  - dm_remote: a DM MR (at an offset of its DM) as the target of RDMA
 *    WRITE, READ, compare-and-swap and fetch-and-add from a peer, as the
 *    local SGE of a READ, and a request past its end (REM_ACCESS_ERR).
 */
#include <errno.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "rc_connect.h"
#include "ur_test.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;

static void wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		ASSERT_GE(n, 0);
		if (n == 1)
			return;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			UR_FAIL("no completion within 10 s");
	}
}

static void expect(struct ibv_cq *cq, enum ibv_wc_status status)
{
	struct ibv_wc wc;

	wait_wc(cq, &wc);
	if (wc.status != status)
		UR_FAIL("wr_id %llu: got %s, want %s",
			(unsigned long long)wc.wr_id,
			ibv_wc_status_str(wc.status), ibv_wc_status_str(status));
}

struct side {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

static void make_side(struct side *s, struct ibv_pd *on)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	s->cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	ASSERT(s->cq);
	ia.send_cq = ia.recv_cq = s->cq;
	s->qp = ibv_create_qp(on, &ia);
	ASSERT(s->qp);
}

static void connect_pair(struct side *a, struct side *b)
{
	struct urt_rc_conn c = {
		.psn = 0, .rd_atomic = 4,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
	};

	c.dqpn = b->qp->qp_num;
	ASSERT_EQ(urt_rc_connect(ctx, a->qp, &c), 0);
	c.dqpn = a->qp->qp_num;
	ASSERT_EQ(urt_rc_connect(ctx, b->qp, &c), 0);
}

static void free_side(struct side *s)
{
	ASSERT_EQ(ibv_destroy_qp(s->qp), 0);
	ASSERT_EQ(ibv_destroy_cq(s->cq), 0);
}

static void post(struct side *s, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	ASSERT_EQ(ibv_post_send(s->qp, wr, &bad), 0);
}

static uint64_t max_dm(void)
{
	struct ibv_device_attr_ex a;

	ASSERT_EQ(ibv_query_device_ex(ctx, NULL, &a), 0);
	return a.max_dm_size;
}

static void t_dm_errors(void)
{
	struct ibv_alloc_dm_attr at = { .length = 4096 };
	uint64_t max = max_dm();
	uint8_t buf[64], back[64];
	struct ibv_dm *dm, *big;
	struct ibv_mr *mr;

	ASSERT_GT(max, 4096);
	at.comp_mask = 1;
	errno = 0;
	ASSERT(!ibv_alloc_dm(ctx, &at));
	ASSERT_EQ(errno, EINVAL);
	at.comp_mask = 0;
	at.length = 0;
	ASSERT(!ibv_alloc_dm(ctx, &at));
	ASSERT_EQ(errno, EINVAL);
	at.length = max + 1;
	ASSERT(!ibv_alloc_dm(ctx, &at));
	ASSERT_EQ(errno, EINVAL);
	at.length = 4096;
	at.log_align_req = 31;
	ASSERT(!ibv_alloc_dm(ctx, &at));
	ASSERT_EQ(errno, EINVAL);
	at.log_align_req = 21; /* a 2 MiB aligned start */
	dm = ibv_alloc_dm(ctx, &at);
	ASSERT(dm);
	ASSERT(dm->comp_mask & IBV_DM_MASK_HANDLE);
	/* The rest of the device's budget: one byte more does not fit. */
	at.log_align_req = 0;
	at.length = max - 4096 + 1;
	ASSERT(!ibv_alloc_dm(ctx, &at));
	ASSERT_EQ(errno, ENOMEM);
	at.length = max - 4096;
	big = ibv_alloc_dm(ctx, &at);
	ASSERT(big);
	ASSERT_EQ(ibv_free_dm(big), 0);

	/* A new DM reads as zeros; copies in 4-byte granules, in range. */
	memset(back, 0xff, sizeof(back));
	ASSERT_EQ(ibv_memcpy_from_dm(back, dm, 4032, 64), 0);
	ASSERT(ur_test_all(back, 0, sizeof(back)));
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 1);
	ASSERT_EQ(ibv_memcpy_to_dm(dm, 4032, buf, 64), 0);
	ASSERT_EQ(ibv_memcpy_from_dm(back, dm, 4032, 64), 0);
	ASSERT_MEM_EQ(back, buf, 64);
	ASSERT_EQ(ibv_memcpy_to_dm(dm, 4036, buf, 64), EFAULT);
	ASSERT_EQ(ibv_memcpy_from_dm(back, dm, 4096, 4), EFAULT);
	ASSERT_EQ(ibv_memcpy_from_dm(back, dm, UINT64_MAX - 3, 8), EFAULT);
	ASSERT_EQ(ibv_memcpy_to_dm(dm, 2, buf, 4), EINVAL);
	ASSERT_EQ(ibv_memcpy_from_dm(back, dm, 4, 6), EINVAL);
	ASSERT_EQ(ibv_memcpy_to_dm(dm, 4096, buf, 0), 0);

	/* Registration: zero based only, DM access bits only, in range. */
	mr = ibv_reg_dm_mr(pd, dm, 0, 4096, IBV_ACCESS_LOCAL_WRITE);
	ASSERT(!mr);
	ASSERT_EQ(errno, EINVAL);
	mr = ibv_reg_dm_mr(pd, dm, 0, 4096, IBV_ACCESS_ZERO_BASED |
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	ASSERT(!mr);
	ASSERT_EQ(errno, EINVAL);
	mr = ibv_reg_dm_mr(pd, dm, 0, 4096, IBV_ACCESS_ZERO_BASED |
			   IBV_ACCESS_REMOTE_WRITE);
	ASSERT(!mr);
	ASSERT_EQ(errno, EINVAL);
	mr = ibv_reg_dm_mr(pd, dm, 4, 4096, IBV_ACCESS_ZERO_BASED);
	ASSERT(!mr);
	ASSERT_EQ(errno, EINVAL);
	mr = ibv_reg_dm_mr(pd, dm, 4096, 0, IBV_ACCESS_ZERO_BASED);
	ASSERT(mr);
	ASSERT_EQ(ibv_dereg_mr(mr), 0);
	mr = ibv_reg_dm_mr(pd, dm, 1024, 3072, IBV_ACCESS_ZERO_BASED |
			   IBV_ACCESS_LOCAL_WRITE);
	ASSERT(mr);
	ASSERT(mr->addr == NULL);
	ASSERT_EQ(mr->length, 3072);
	/* It cannot move elsewhere, nor stop being zero based. */
	ASSERT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, buf,
			       sizeof(buf), 0), IBV_REREG_MR_ERR_INPUT);
	ASSERT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			       IBV_ACCESS_LOCAL_WRITE), IBV_REREG_MR_ERR_INPUT);
	ASSERT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			       IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE |
			       IBV_ACCESS_REMOTE_READ), 0);
	ASSERT_EQ(ibv_free_dm(dm), EBUSY);
	ASSERT_EQ(ibv_dealloc_pd(pd), EBUSY);
	ASSERT_EQ(ibv_dereg_mr(mr), 0);
	ASSERT_EQ(ibv_free_dm(dm), 0);
}

#define DM_LEN 8192
#define MR_OFF 1024 /* the DM MR starts here in its DM */

static void t_dm_remote(void)
{
	const unsigned int acc = IBV_ACCESS_ZERO_BASED |
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	struct ibv_alloc_dm_attr at = { .length = DM_LEN, .log_align_req = 3 };
	struct ibv_dm *dm_a, *dm_b;
	struct ibv_mr *mr_a, *mr_b, *mr_h;
	struct side a, b;
	uint8_t *host, back[MR_OFF + 16];
	uint64_t v;

	dm_a = ibv_alloc_dm(ctx, &at);
	dm_b = ibv_alloc_dm(ctx, &at);
	ASSERT(dm_a && dm_b);
	mr_a = ibv_reg_dm_mr(pd, dm_a, MR_OFF, 4096, acc);
	mr_b = ibv_reg_dm_mr(pd, dm_b, 0, DM_LEN, acc);
	ASSERT(mr_a && mr_b);
	host = aligned_alloc(4096, 4096);
	ASSERT(host);
	for (int i = 0; i < 4096; i++)
		host[i] = (uint8_t)(i ^ 0x5a);
	mr_h = ibv_reg_mr(pd, host, 4096, IBV_ACCESS_LOCAL_WRITE);
	ASSERT(mr_h);
	make_side(&a, pd);
	make_side(&b, pd);
	connect_pair(&a, &b);

	/* b WRITEs 512 host bytes to offset 16 of a's DM MR. */
	{
		struct ibv_sge sge = { (uintptr_t)host, 512, mr_h->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 1, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = 16, .rkey = mr_a->rkey },
		};

		post(&b, &wr);
		expect(b.cq, IBV_WC_SUCCESS);
	}
	ASSERT_EQ(ibv_memcpy_from_dm(back, dm_a, MR_OFF + 16, 512), 0);
	ASSERT_MEM_EQ(back, host, 512);
	/* Nothing before the MR's start was written. */
	ASSERT_EQ(ibv_memcpy_from_dm(back, dm_a, 0, MR_OFF + 16), 0);
	ASSERT(ur_test_all(back, 0, MR_OFF + 16));

	/* b READs them back into its own DM MR (a DM MR as the local SGE). */
	{
		struct ibv_sge sge = { 100 * 8, 512, mr_b->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 2, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = 16, .rkey = mr_a->rkey },
		};

		post(&b, &wr);
		expect(b.cq, IBV_WC_SUCCESS);
	}
	ASSERT_EQ(ibv_memcpy_from_dm(back, dm_b, 800, 512), 0);
	ASSERT_MEM_EQ(back, host, 512);

	/* Atomics on the 8 bytes at offset 2048 of a's DM MR; the old value
	 * lands in b's DM MR. */
	v = 41;
	ASSERT_EQ(ibv_memcpy_to_dm(dm_a, MR_OFF + 2048, &v, 8), 0);
	{
		struct ibv_sge sge = { 0, 8, mr_b->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 3, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_ATOMIC_CMP_AND_SWP,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.atomic = { .remote_addr = 2048, .compare_add = 41,
				       .swap = 1000, .rkey = mr_a->rkey },
		};

		post(&b, &wr);
		expect(b.cq, IBV_WC_SUCCESS);
		ASSERT_EQ(ibv_memcpy_from_dm(&v, dm_b, 0, 8), 0);
		ASSERT_EQ(v, 41);
		wr.wr_id = 4;
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.compare_add = 24;
		post(&b, &wr);
		expect(b.cq, IBV_WC_SUCCESS);
		ASSERT_EQ(ibv_memcpy_from_dm(&v, dm_b, 0, 8), 0);
		ASSERT_EQ(v, 1000);
	}
	ASSERT_EQ(ibv_memcpy_from_dm(&v, dm_a, MR_OFF + 2048, 8), 0);
	ASSERT_EQ(v, 1024);

	/* Past the end of a's DM MR (but inside its DM): refused. */
	{
		struct ibv_sge sge = { (uintptr_t)host, 64, mr_h->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 5, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = 4096 - 32,
				     .rkey = mr_a->rkey },
		};

		post(&b, &wr);
		expect(b.cq, IBV_WC_REM_ACCESS_ERR);
	}
	ASSERT_EQ(ibv_memcpy_from_dm(back, dm_a, MR_OFF + 4096 - 32, 64), 0);
	ASSERT(ur_test_all(back, 0, 64));

	free_side(&a);
	free_side(&b);
	ASSERT_EQ(ibv_dereg_mr(mr_a), 0);
	ASSERT_EQ(ibv_dereg_mr(mr_b), 0);
	ASSERT_EQ(ibv_dereg_mr(mr_h), 0);
	ASSERT_EQ(ibv_free_dm(dm_a), 0);
	ASSERT_EQ(ibv_free_dm(dm_b), 0);
	free(host);
}

static void setup(void)
{
	struct ibv_device **list;

	if (ctx)
		return;
	list = ibv_get_device_list(NULL);
	ASSERT(list && list[0]);
	ctx = ibv_open_device(list[0]);
	ASSERT(ctx);
	ibv_free_device_list(list);
	pd = ibv_alloc_pd(ctx);
	ASSERT(pd);
}

static void t_dm_errors_run(void)
{
	setup();
	t_dm_errors();
}

static void t_dm_remote_run(void)
{
	setup();
	t_dm_remote();
}

static const struct ur_test_case tests[] = {
	{ "dm_errors", t_dm_errors_run },
	{ "dm_remote", t_dm_remote_run },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	setenv("UROCE_IP", "127.0.0.65", 0);
	return ur_test_main(argc, argv, tests);
}

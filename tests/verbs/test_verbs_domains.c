// SPDX-License-Identifier: MIT
/*
 * What rdma-core's suite does not check of device memory, parent domains
 * and thread domains (RC QPs in one process over real UDP on UROCE_IP):
 *  - dm_errors: every documented error of ibv_alloc_dm, ibv_memcpy_to/
 *    from_dm, ibv_reg_dm_mr and ibv_free_dm (comp_mask, sizes, the
 *    device's budget, alignment, the range, access, EBUSY);
 *  - dm_remote: a DM MR (at an offset of its DM) as the target of RDMA
 *    WRITE, READ, compare-and-swap and fetch-and-add from a peer, as the
 *    local SGE of a READ, and a request past its end (REM_ACCESS_ERR);
 *  - parent_domain: the errors of ibv_alloc_td/ibv_alloc_parent_domain,
 *    EBUSY of every dealloc in use; the allocator called for each ring of
 *    a QP, SRQ and CQ created on the parent domain (resource types,
 *    alignment, pd_context), each buffer freed once at destroy and at an
 *    SRQ/CQ resize, IBV_ALLOCATOR_USE_DEFAULT and a failing allocator
 *    (ENOMEM); a QP on the parent domain and one on its PD exchange a
 *    WRITE through an MR of the other (one protection domain);
 *  - huge_mr: a 4 KiB region inside a 2 MiB huge page is kept from fork
 *    (MADV_DONTFORK widened to the huge page: "dc" in smaps) until its
 *    deregistration (checked only where a huge page can be mapped);
 *  - timestamps: ibv_query_rt_values_ex's raw clock, and both timestamps
 *    of a completion, fall between clock reads taken around the request
 *    (completion timestamp: the raw clock; wallclock: CLOCK_REALTIME);
 *    an unknown comp_mask bit is EINVAL;
 *  - import: ibv_import_device through a dup of a context's cmd_fd (a fd
 *    of no context: EOPNOTSUPP, a bad one EINVAL), ibv_import_pd/mr/dm by
 *    handle (unknown: EINVAL), the originals EBUSY while imported, a QP
 *    of the imported context WRITEs with the imported MR's lkey into the
 *    original's rkey, a DM written through its import reads back through
 *    the original.
 */
#include <errno.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include <uroce/uroce.h>

#include "rc_connect.h"
#include "ur_test.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;

static void wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int n = urt_poll_wait(cq, wc, 10);

	ASSERT_GE(n, 0);
	if (n == 0)
		UR_FAIL("no completion within 10 s");
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

/* ---- parent domains ------------------------------------------------------ */

enum { ALLOC_OWN, ALLOC_DEFAULT, ALLOC_FAIL };

struct pd_log {
	int mode;
	int live;          /* buffers given and not freed back */
	int allocs[4];     /* by resource type & 0xf */
	int frees;
	bool bad;          /* a call we did not expect */
	struct ibv_pd *pd; /* the parent domain the calls must name */
};

static void *log_alloc(struct ibv_pd *ibpd, void *pd_context, size_t size,
		       size_t align, uint64_t type)
{
	struct pd_log *l = pd_context;
	void *p = NULL;

	if ((l->pd && ibpd != l->pd) || (type >> 32) != 0x5552 ||
	    (type & 0xffffffff) < 1 || (type & 0xffffffff) > 3 || !size ||
	    (align & (align - 1)) || align < sizeof(void *))
		l->bad = true;
	if (l->mode == ALLOC_DEFAULT)
		return IBV_ALLOCATOR_USE_DEFAULT;
	if (l->mode == ALLOC_FAIL)
		return NULL;
	if (posix_memalign(&p, align, size))
		return NULL;
	memset(p, 0xee, size); /* uroce must clear it */
	l->allocs[type & 3]++;
	l->live++;
	return p;
}

static void log_free(struct ibv_pd *ibpd, void *pd_context, void *ptr,
		     uint64_t type)
{
	struct pd_log *l = pd_context;

	if (l->mode != ALLOC_OWN || !ptr || ibpd != l->pd)
		l->bad = true;
	l->frees++;
	l->live--;
	free(ptr);
}

static struct ibv_pd *parent_of(struct pd_log *l, struct ibv_td *td)
{
	struct ibv_parent_domain_init_attr pa = {
		.pd = pd, .td = td,
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
		.alloc = log_alloc, .free = log_free, .pd_context = l,
	};

	l->pd = ibv_alloc_parent_domain(ctx, &pa);
	return l->pd;
}

static struct ibv_cq_ex *cq_on(struct ibv_pd *on)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 64, .wc_flags = IBV_WC_STANDARD_FLAGS,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD, .parent_domain = on,
	};

	return ibv_create_cq_ex(ctx, &ca);
}

static void t_parent_domain(void)
{
	struct ibv_parent_domain_init_attr pa = { .pd = pd };
	struct ibv_td_init_attr ta = { .comp_mask = 1 };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 32, .max_sge = 1 } };
	struct pd_log l = { .mode = ALLOC_OWN };
	struct ibv_pd *par, *bare;
	struct ibv_td *td;
	struct ibv_srq *srq;
	struct ibv_cq_ex *cq;
	struct ibv_mr *mr_par, *mr_pd;
	struct side a, b;
	uint8_t *buf;

	/* Thread domains. */
	errno = 0;
	ASSERT(!ibv_alloc_td(ctx, &ta));
	ASSERT_EQ(errno, EINVAL);
	ta.comp_mask = 0;
	td = ibv_alloc_td(ctx, &ta);
	ASSERT(td);

	/* Parent domain errors; one without allocators. */
	pa.pd = NULL;
	ASSERT(!ibv_alloc_parent_domain(ctx, &pa));
	ASSERT_EQ(errno, EINVAL);
	pa.pd = pd;
	pa.comp_mask = 1 << 2;
	ASSERT(!ibv_alloc_parent_domain(ctx, &pa));
	ASSERT_EQ(errno, EINVAL);
	pa.comp_mask = 0;
	bare = ibv_alloc_parent_domain(ctx, &pa);
	ASSERT(bare);
	pa.pd = bare; /* not of a parent domain */
	ASSERT(!ibv_alloc_parent_domain(ctx, &pa));
	ASSERT_EQ(errno, EINVAL);
	/* A CQ on a plain PD is refused; on an allocator-less parent domain
	 * its ring is the library's. */
	ASSERT(!cq_on(pd));
	ASSERT_EQ(errno, EINVAL);
	cq = cq_on(bare);
	ASSERT(cq);
	ASSERT_EQ(ibv_dealloc_pd(bare), EBUSY);
	ASSERT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
	ASSERT_EQ(ibv_dealloc_pd(bare), 0);

	/* With allocators and the TD: every ring from the callbacks. */
	par = parent_of(&l, td);
	ASSERT(par);
	ASSERT_EQ(ibv_dealloc_td(td), EBUSY);
	ASSERT_EQ(ibv_dealloc_pd(pd), EBUSY);
	cq = cq_on(par);
	ASSERT(cq);
	ASSERT_EQ(l.allocs[UROCE_RES_TYPE_CQ & 3], 1);
	ASSERT_EQ(ibv_resize_cq(ibv_cq_ex_to_cq(cq), 128), 0);
	ASSERT_EQ(l.allocs[UROCE_RES_TYPE_CQ & 3], 2);
	ASSERT_EQ(l.frees, 1);
	srq = ibv_create_srq(par, &sa);
	ASSERT(srq);
	ASSERT_EQ(l.allocs[UROCE_RES_TYPE_SRQ & 3], 2); /* WQEs, SGEs */
	{
		struct ibv_srq_attr m = { .max_wr = 64 };

		ASSERT_EQ(ibv_modify_srq(srq, &m, IBV_SRQ_MAX_WR), 0);
		ASSERT_EQ(l.allocs[UROCE_RES_TYPE_SRQ & 3], 4);
		ASSERT_EQ(l.frees, 3);
	}
	make_side(&a, par);
	ASSERT_GE(l.allocs[UROCE_RES_TYPE_QP & 3], 4); /* SQ, RQ, their SGEs */
	make_side(&b, pd);
	ASSERT_EQ(ibv_dealloc_pd(par), EBUSY);
	ASSERT(!l.bad);

	/* One protection domain: a's QP (parent domain) WRITEs through an
	 * MR of the PD, b's QP (PD) through an MR of the parent domain. */
	buf = aligned_alloc(4096, 8192);
	ASSERT(buf);
	memset(buf, 0, 8192);
	memset(buf, 0x3c, 256);
	mr_par = ibv_reg_mr(par, buf, 4096, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_WRITE);
	mr_pd = ibv_reg_mr(pd, buf + 4096, 4096, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE);
	ASSERT(mr_par && mr_pd);
	connect_pair(&a, &b);
	{
		struct ibv_sge sge = { (uintptr_t)buf, 256, mr_par->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 7, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = (uintptr_t)buf + 4096,
				     .rkey = mr_pd->rkey },
		};

		post(&a, &wr);
		expect(a.cq, IBV_WC_SUCCESS);
		ASSERT(ur_test_all(buf + 4096, 0x3c, 256));
		sge = (struct ibv_sge){ (uintptr_t)buf + 4096, 128,
					mr_pd->lkey };
		wr.wr.rdma.remote_addr = (uintptr_t)buf + 1024;
		wr.wr.rdma.rkey = mr_par->rkey;
		post(&b, &wr);
		expect(b.cq, IBV_WC_SUCCESS);
		ASSERT(ur_test_all(buf + 1024, 0x3c, 128));
	}
	free_side(&a);
	free_side(&b);
	ASSERT_EQ(ibv_destroy_srq(srq), 0);
	ASSERT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
	ASSERT_EQ(ibv_dereg_mr(mr_par), 0);
	ASSERT_EQ(ibv_dereg_mr(mr_pd), 0);
	ASSERT_EQ(l.live, 0); /* every buffer given back, once */
	ASSERT(!l.bad);
	ASSERT_EQ(ibv_dealloc_pd(par), 0);
	free(buf);

	/* USE_DEFAULT: the library's rings, the callbacks never free. */
	l = (struct pd_log){ .mode = ALLOC_DEFAULT };
	par = parent_of(&l, NULL);
	ASSERT(par);
	make_side(&a, par);
	srq = ibv_create_srq(par, &sa);
	ASSERT(srq);
	ASSERT_EQ(ibv_destroy_srq(srq), 0);
	free_side(&a);
	ASSERT_EQ(l.frees, 0);
	ASSERT(!l.bad);
	ASSERT_EQ(ibv_dealloc_pd(par), 0);

	/* A failing allocator: nothing is created, ENOMEM. */
	l = (struct pd_log){ .mode = ALLOC_FAIL };
	par = parent_of(&l, NULL);
	ASSERT(par);
	errno = 0;
	ASSERT(!ibv_create_srq(par, &sa));
	ASSERT_EQ(errno, ENOMEM);
	ASSERT(!cq_on(par));
	ASSERT_EQ(errno, ENOMEM);
	ASSERT_EQ(ibv_dealloc_pd(par), 0);
	ASSERT_EQ(ibv_dealloc_td(td), 0);
}

/* ---- huge pages ---------------------------------------------------------- */

/* Whether the mapping holding @p has the VmFlag @flag (smaps). */
static bool vm_flag(const void *p, const char *flag)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false, has = false;

	ASSERT(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx ", &s, &e) == 2 && strchr(line, '-') <
		    strchr(line, ' ')) {
			in = (uintptr_t)p >= s && (uintptr_t)p < e;
		} else if (in && !strncmp(line, "VmFlags:", 8)) {
			char want[8];

			snprintf(want, sizeof(want), " %s", flag);
			has = strstr(line, want) != NULL;
			break;
		}
	}
	fclose(f);
	return has;
}

static void t_huge_mr(void)
{
	const size_t huge = (size_t)2 << 20;
	uint8_t *m = mmap(NULL, huge, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	struct ibv_mr *mr;

	if (m == MAP_FAILED) {
		printf("(no free 2 MiB huge page: not checked) ");
		return;
	}
	m[0] = 1;
	ASSERT(!vm_flag(m, "dc"));
	mr = ibv_reg_mr(pd, m + 8192, 4096, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_HUGETLB);
	ASSERT(mr);
	ASSERT(vm_flag(m, "dc"));
	ASSERT_EQ(ibv_dereg_mr(mr), 0);
	ASSERT(!vm_flag(m, "dc"));
	ASSERT_EQ(munmap(m, huge), 0);
}

/* ---- timestamps ---------------------------------------------------------- */

static uint64_t raw_clock(void)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };

	ASSERT_EQ(ibv_query_rt_values_ex(ctx, &v), 0);
	ASSERT_EQ(v.comp_mask, IBV_VALUES_MASK_RAW_CLOCK);
	ASSERT_EQ(v.raw_clock.tv_sec, 0); /* as libmlx5: the count in nsec */
	return (uint64_t)v.raw_clock.tv_nsec;
}

static uint64_t real_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void t_timestamps(void)
{
	struct ibv_values_ex bad = { .comp_mask = IBV_VALUES_MASK_RESERVED };
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS |
			IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
	};
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_device_attr_ex da;
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_cq_ex *cq;
	struct side a, b;
	struct ibv_mr *mr;
	uint64_t t0, t1, r0, r1, ts, wall;
	uint8_t *buf;
	struct timespec st, now;
	int ret;

	ASSERT_EQ(ibv_query_rt_values_ex(ctx, &bad), EINVAL);
	ASSERT_EQ(ibv_query_device_ex(ctx, NULL, &da), 0);
	ASSERT_EQ(da.hca_core_clock, 1000000); /* kHz: ns ticks */
	cq = ibv_create_cq_ex(ctx, &ca);
	ASSERT(cq);
	a.cq = ibv_cq_ex_to_cq(cq);
	ia.send_cq = ia.recv_cq = a.cq;
	a.qp = ibv_create_qp(pd, &ia);
	ASSERT(a.qp);
	make_side(&b, pd);
	connect_pair(&a, &b);
	buf = aligned_alloc(4096, 4096);
	ASSERT(buf);
	mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	ASSERT(mr);

	t0 = raw_clock();
	r0 = real_ns();
	{
		struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 9, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = (uintptr_t)buf + 2048,
				     .rkey = mr->rkey },
		};

		post(&a, &wr);
	}
	clock_gettime(CLOCK_MONOTONIC, &st);
	while ((ret = ibv_start_poll(cq, &pa)) == ENOENT) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - st.tv_sec > 10)
			UR_FAIL("no completion within 10 s");
	}
	ASSERT_EQ(ret, 0);
	ASSERT_EQ(cq->status, IBV_WC_SUCCESS);
	ts = ibv_wc_read_completion_ts(cq);
	wall = ibv_wc_read_completion_wallclock_ns(cq);
	ibv_end_poll(cq);
	t1 = raw_clock();
	r1 = real_ns();
	ASSERT(t0 <= ts && ts <= t1);
	/* 1 ms of slack: the two clocks are read one after the other. */
	ASSERT(r0 - 1000000 <= wall && wall <= r1 + 1000000);

	free_side(&a);
	free_side(&b);
	ASSERT_EQ(ibv_dereg_mr(mr), 0);
	free(buf);
}

/* ---- importing ----------------------------------------------------------- */

static void t_import(void)
{
	struct ibv_alloc_dm_attr at = { .length = 4096 };
	struct ibv_context *ctx2;
	struct ibv_pd *pd2, *other;
	struct ibv_mr *mr, *mr2;
	struct ibv_dm *dm, *dm2;
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct side a, b;
	uint8_t *buf, back[64];
	int fd, nul;

	errno = 0;
	ASSERT(!ibv_import_device(-1));
	ASSERT_EQ(errno, EINVAL);
	nul = open("/dev/null", O_RDWR);
	ASSERT_GE(nul, 0);
	ASSERT(!ibv_import_device(nul));
	ASSERT_EQ(errno, EOPNOTSUPP);
	close(nul);
	fd = dup(ctx->cmd_fd);
	ASSERT_GE(fd, 0);
	ctx2 = ibv_import_device(fd);
	ASSERT(ctx2);
	ASSERT(ctx2 != ctx && ctx2->device == ctx->device);
	ASSERT_EQ(ctx2->cmd_fd, fd); /* it owns the fd now */

	/* PD and MR by handle; unknown handles. */
	buf = aligned_alloc(4096, 8192);
	ASSERT(buf);
	memset(buf, 0, 8192);
	memset(buf, 0x77, 128);
	mr = ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	ASSERT(mr);
	ASSERT(!ibv_import_pd(ctx2, pd->handle + 1));
	ASSERT_EQ(errno, EINVAL);
	pd2 = ibv_import_pd(ctx2, pd->handle);
	ASSERT(pd2);
	ASSERT_EQ(pd2->handle, pd->handle);
	ASSERT(pd2->context == ctx2);
	ASSERT(!ibv_import_mr(pd2, mr->handle + 1));
	ASSERT_EQ(errno, EINVAL);
	other = ibv_alloc_pd(ctx2);
	ASSERT(other);
	ASSERT(!ibv_import_mr(other, mr->handle)); /* another PD's region */
	ASSERT_EQ(errno, EINVAL);
	mr2 = ibv_import_mr(pd2, mr->handle);
	ASSERT(mr2);
	ASSERT_EQ(mr2->lkey, mr->lkey);
	ASSERT_EQ(mr2->rkey, mr->rkey);
	ASSERT_EQ(mr2->length, 8192);
	ASSERT_EQ(ibv_dereg_mr(mr), EBUSY);
	ASSERT_EQ(ibv_dealloc_pd(pd), EBUSY);

	/* A QP of the imported context, on the imported PD, WRITEs with
	 * the imported lkey into the original rkey. */
	b.cq = ibv_create_cq(ctx2, 16, NULL, NULL, 0);
	ASSERT(b.cq);
	ia.send_cq = ia.recv_cq = b.cq;
	b.qp = ibv_create_qp(pd2, &ia);
	ASSERT(b.qp);
	make_side(&a, pd);
	connect_pair(&a, &b);
	{
		struct ibv_sge sge = { (uintptr_t)buf, 128, mr2->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 11, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = (uintptr_t)buf + 4096,
				     .rkey = mr->rkey },
		};

		post(&b, &wr);
		expect(b.cq, IBV_WC_SUCCESS);
	}
	ASSERT(ur_test_all(buf + 4096, 0x77, 128));
	/* Unimported while its QP lives (as rdma-core allows): the QP's
	 * destroy still finds it. */
	ibv_unimport_mr(mr2);
	ibv_unimport_pd(pd2);
	free_side(&a);
	free_side(&b);

	/* Device memory by handle. */
	dm = ibv_alloc_dm(ctx, &at);
	ASSERT(dm);
	ASSERT(!ibv_import_dm(ctx2, dm->handle + 1000));
	ASSERT_EQ(errno, EINVAL);
	dm2 = ibv_import_dm(ctx2, dm->handle);
	ASSERT(dm2);
	ASSERT_EQ(ibv_memcpy_to_dm(dm2, 64, buf, 64), 0);
	ASSERT_EQ(ibv_memcpy_from_dm(back, dm, 64, 64), 0);
	ASSERT_MEM_EQ(back, buf, 64);
	ASSERT_EQ(ibv_free_dm(dm), EBUSY);
	mr2 = ibv_reg_dm_mr(other, dm2, 0, 4096, IBV_ACCESS_ZERO_BASED);
	ASSERT(mr2);
	ibv_unimport_dm(dm2); /* its DM MR still holds it */
	ASSERT_EQ(ibv_free_dm(dm), EBUSY);
	ASSERT_EQ(ibv_dereg_mr(mr2), 0);
	ASSERT_EQ(ibv_free_dm(dm), 0);

	ASSERT_EQ(ibv_dealloc_pd(other), 0);
	ASSERT_EQ(ibv_dereg_mr(mr), 0);
	ASSERT_EQ(ibv_close_device(ctx2), 0);
	ASSERT_EQ(fcntl(fd, F_GETFD), -1); /* closed with its context */
	free(buf);
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

static void t_parent_domain_run(void)
{
	setup();
	t_parent_domain();
}

static void t_huge_mr_run(void)
{
	setup();
	t_huge_mr();
}

static void t_timestamps_run(void)
{
	setup();
	t_timestamps();
}

static void t_import_run(void)
{
	setup();
	t_import();
}

static const struct ur_test_case tests[] = {
	{ "dm_errors", t_dm_errors_run },
	{ "dm_remote", t_dm_remote_run },
	{ "parent_domain", t_parent_domain_run },
	{ "huge_mr", t_huge_mr_run },
	{ "timestamps", t_timestamps_run },
	{ "import", t_import_run },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	setenv("UROCE_IP", "127.0.0.65", 0);
	return ur_test_main(argc, argv, tests);
}

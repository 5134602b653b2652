/* SPDX-License-Identifier: MIT */
/*
 * NCCL's IB transport (net_ib) asks a verbs device a fixed set of
 * questions before and while it moves data. NCCL needs a GPU to run, but
 * that transport is plain verbs: this program asks the same questions in
 * the same order, through the same entry points, and checks each answer
 * against what NCCL accepts (docs/verbs.md, "NCCL (net_ib)"). The NCCL
 * file and function each step follows is named in a comment; the code is
 * our own.
 *
 *   nccl_probe [-n NDEVS] [-g GID] [-x]
 *
 * -n: how many device ports NCCL would keep after NCCL_IB_HCA filtering;
 * -g: the address (IPv4 or IPv6) of the GID that NCCL's selection must
 * pick on the first kept device, under NCCL_IB_GID_INDEX,
 * NCCL_IB_ADDR_FAMILY and NCCL_IB_ROCE_VERSION_NUM as set in the
 * environment. Runs under uroce-run (the sysfs reads need the device
 * view). -x: the selected GID is not GID 0, which uroce does not serve:
 * expect the RTR transition to be refused with EOPNOTSUPP (NCCL then
 * fails the connection at once instead of timing out). Prints "ok"/"FAIL" per check and exits 0 only if all passed.
 */

#include <arpa/inet.h>
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <limits.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fails;
static int expect_refused; /* -x */

#define CHECK(cond, ...)                                      \
	do {                                                  \
		if (cond) {                                   \
			printf("ok   ");                      \
		} else {                                      \
			printf("FAIL ");                      \
			fails++;                              \
		}                                             \
		printf(__VA_ARGS__);                          \
		printf("\n");                                 \
	} while (0)

/*
 * The entry points, looked up as NCCL's ibvsymbols.cc (buildIbvSymbols)
 * does: dlvsym(..., "IBVERBS_1.1") for the required ones (one missing and
 * NCCL disables IB entirely), a version of their own for the optional ones.
 */
static struct {
	struct ibv_device **(*get_device_list)(int *);
	void (*free_device_list)(struct ibv_device **);
	const char *(*get_device_name)(struct ibv_device *);
	struct ibv_context *(*open_device)(struct ibv_device *);
	int (*close_device)(struct ibv_context *);
	int (*get_async_event)(struct ibv_context *, struct ibv_async_event *);
	void (*ack_async_event)(struct ibv_async_event *);
	int (*query_device)(struct ibv_context *, struct ibv_device_attr *);
	int (*query_port)(struct ibv_context *, uint8_t, struct ibv_port_attr *);
	int (*query_gid)(struct ibv_context *, uint8_t, int, union ibv_gid *);
	int (*query_qp)(struct ibv_qp *, struct ibv_qp_attr *, int,
			struct ibv_qp_init_attr *);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *);
	int (*dealloc_pd)(struct ibv_pd *);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *, void *, size_t, int);
	struct ibv_mr *(*reg_mr_iova2)(struct ibv_pd *, void *, size_t,
				       uint64_t, unsigned int);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *, uint64_t, size_t,
					uint64_t, int, int);
	int (*dereg_mr)(struct ibv_mr *);
	struct ibv_cq *(*create_cq)(struct ibv_context *, int, void *,
				    struct ibv_comp_channel *, int);
	int (*destroy_cq)(struct ibv_cq *);
	struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *);
	int (*modify_qp)(struct ibv_qp *, struct ibv_qp_attr *, int);
	int (*destroy_qp)(struct ibv_qp *);
	int (*fork_init)(void);
	const char *(*event_type_str)(enum ibv_event_type);
	int (*query_ece)(struct ibv_qp *, struct ibv_ece *);
	int (*set_ece)(struct ibv_qp *, struct ibv_ece *);
	void *query_port_speed;
} ibv;

static int load_symbols(void)
{
	static const struct {
		const char *name, *version;
		size_t off;
		int required;
	} syms[] = {
#define REQ(f) { "ibv_" #f, "IBVERBS_1.1", offsetof(__typeof__(ibv), f), 1 }
#define OPT(f, v) { "ibv_" #f, v, offsetof(__typeof__(ibv), f), 0 }
		REQ(get_device_list), REQ(free_device_list),
		REQ(get_device_name), REQ(open_device), REQ(close_device),
		REQ(get_async_event), REQ(ack_async_event),
		REQ(query_device), REQ(query_port), REQ(query_gid),
		REQ(query_qp), REQ(alloc_pd), REQ(dealloc_pd), REQ(reg_mr),
		OPT(reg_mr_iova2, "IBVERBS_1.8"),
		OPT(reg_dmabuf_mr, "IBVERBS_1.12"), REQ(dereg_mr),
		REQ(create_cq), REQ(destroy_cq), REQ(create_qp),
		REQ(modify_qp), REQ(destroy_qp), REQ(fork_init),
		REQ(event_type_str), OPT(query_ece, "IBVERBS_1.10"),
		OPT(set_ece, "IBVERBS_1.10"),
		OPT(query_port_speed, "IBVERBS_1.16"),
#undef REQ
#undef OPT
	};
	void *h = dlopen("libibverbs.so.1", RTLD_NOW);
	int missing = 0;

	if (!h) {
		printf("FAIL dlopen libibverbs.so.1: %s\n", dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *p = dlvsym(h, syms[i].name, syms[i].version);

		memcpy((char *)&ibv + syms[i].off, &p, sizeof(p));
		if (!p && syms[i].required)
			missing++;
		if (!p && syms[i].required)
			printf("FAIL %s@%s absent\n", syms[i].name, syms[i].version);
	}
	CHECK(missing == 0, "every symbol NCCL requires resolves at IBVERBS_1.1");
	/* uroce's reg_mr_iova2 is what turns RELAXED_ORDERING on in NCCL
	 * (init.cc ncclIbRelaxedOrderingCapable); the dmabuf probe and ECE
	 * need their symbols to give an answer at all. */
	CHECK(ibv.reg_mr_iova2 && ibv.reg_dmabuf_mr && ibv.query_ece && ibv.set_ece,
	      "ibv_reg_mr_iova2@1.8, ibv_reg_dmabuf_mr@1.12, ibv_query/set_ece@1.10 resolve");
	printf("info ibv_query_port_speed@IBVERBS_1.16 %s (absent: NCCL uses active_speed x active_width)\n",
	       ibv.query_port_speed ? "present" : "absent");
	return missing ? -1 : 0;
}

/* NCCL's ibvcore.h port attributes: rdma-core's plus active_speed_ex. */
struct nccl_port_attr {
	struct ibv_port_attr base;
	uint32_t active_speed_ex;
};

/*
 * NCCL's ibvwrap.cc wrap_ibv_query_port asks the context op first with its
 * own (larger) struct and does not clear it: whatever the provider leaves
 * in active_speed_ex is taken as the speed when non-zero (init.cc
 * ncclIbInitDevices). rdma-core zeroes the bytes it does not know.
 */
static int query_port_nccl(struct ibv_context *ctx, struct nccl_port_attr *a)
{
	struct verbs_context *vctx = verbs_get_ctx_op(ctx, query_port);

	memset(a, 0xa5, sizeof(*a));
	if (vctx && vctx->query_port(ctx, 1, &a->base, sizeof(*a)) == 0)
		return 0;
	memset(a, 0, sizeof(*a));
	return ibv.query_port(ctx, 1, &a->base);
}

/* init.cc ncclIbSpeed / ncclIbWidth: lowest set bit indexes a table. */
static int lowest_bit(int v, int max)
{
	int i = 0;

	while (i < max && !(v & (1 << i)))
		i++;
	return i;
}

static int port_mbps(const struct ibv_port_attr *a, uint32_t speed_ex)
{
	static const int widths[] = { 1, 4, 8, 12, 2 };
	static const int speeds[] = { 2500, 5000, 10000, 10000, 14000,
				      25000, 50000, 100000, 200000 };
	int s = speed_ex ? (int)speed_ex : a->active_speed;

	return speeds[lowest_bit(s, 8)] * widths[lowest_bit(a->active_width, 4)];
}

/*
 * NCCL_IB_HCA as init.cc ncclIbInitDevices reads it (matchIfList in
 * socket/utils): a comma list of name[:port], a leading '^' excludes, a
 * leading '=' asks for exact names instead of prefixes.
 */
static int hca_selected(const char *name, int port)
{
	const char *env = getenv("NCCL_IB_HCA");
	int not = 0, exact = 0, match = 0;
	char buf[256], *save = NULL;

	if (!env || !*env)
		return 1;
	if (*env == '^')
		not = 1, env++;
	if (*env == '=')
		exact = 1, env++;
	snprintf(buf, sizeof(buf), "%s", env);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(t, ':');
		int p = -1;

		if (colon) {
			*colon = 0;
			p = atoi(colon + 1);
		}
		if ((exact ? strcmp(name, t) == 0 : strncmp(name, t, strlen(t)) == 0) &&
		    (p == -1 || p == port))
			match = 1;
	}
	return match ^ not;
}

/* ---- GID selection: connect.cc ncclIbGetGidIndex ------------------------ */

static int gid_family(const union ibv_gid *g)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	return memcmp(g->raw, v4mapped, 12) == 0 ? AF_INET : AF_INET6;
}

/* connect.cc validGid: configured (not ::, not bare fe80::) and not link-local. */
static int gid_valid(const union ibv_gid *g)
{
	static const uint8_t zero[16];
	int linklocal = g->raw[0] == 0xfe && g->raw[1] == 0x80 &&
			memcmp(g->raw + 2, zero, 6) == 0;

	return memcmp(g->raw, zero, 16) != 0 && !linklocal;
}

static int types_reads;

/*
 * connect.cc ncclIbRoceGetVersionNum: read
 * /sys/class/infiniband/<dev>/ports/<p>/gid_attrs/types/<i>. NCCL fails
 * the connection when open() fails; a read() EINVAL means "not mapped",
 * version unchanged.
 */
static int roce_version(const char *dev, int i, int *version)
{
	char path[PATH_MAX], buf[16] = { 0 };
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/gid_attrs/types/%d",
		 dev, i);
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		printf("FAIL open %s: %s (NCCL fails the connection)\n", path,
		       strerror(errno));
		fails++;
		return -1;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	types_reads++;
	if (n < 0)
		return errno == EINVAL ? 0 : -1;
	if (!strncmp(buf, "IB/RoCE v1", 10) || !strncmp(buf, "RoCE v1", 7))
		*version = 1;
	else if (!strncmp(buf, "RoCE v2", 7))
		*version = 2;
	return 0;
}

static int select_gid(struct ibv_context *ctx, const char *dev, int tbl_len)
{
	const char *e = getenv("NCCL_IB_GID_INDEX");
	const char *fam = getenv("NCCL_IB_ADDR_FAMILY");
	const char *ver = getenv("NCCL_IB_ROCE_VERSION_NUM");
	int want_fam = fam && !strcmp(fam, "AF_INET6") ? AF_INET6 : AF_INET;
	int want_ver = ver ? atoi(ver) : 2;
	int idx = 0;

	if (e && atoi(e) >= 0)
		return atoi(e);
	/* The candidate replaces the current index when it is of the asked
	 * family and the current one is not, or when both are of that family,
	 * the candidate is valid and has the asked RoCE version while the
	 * current one does not (or is not valid). No NCCL_IB_ADDR_RANGE. */
	for (int c = 1; c < tbl_len; c++) {
		union ibv_gid cur, cand;
		int vcur = -1, vcand = -1;

		if (ibv.query_gid(ctx, 1, idx, &cur) || ibv.query_gid(ctx, 1, c, &cand))
			return -1;
		if (gid_family(&cand) != gid_family(&cur) && gid_family(&cand) == want_fam) {
			idx = c;
			continue;
		}
		if (gid_family(&cand) != want_fam || !gid_valid(&cand))
			continue;
		if (roce_version(dev, idx, &vcur) || roce_version(dev, c, &vcand))
			return -1;
		if ((vcur != vcand || !gid_valid(&cur)) && vcand == want_ver)
			idx = c;
	}
	return idx;
}

static void gid_str(const union ibv_gid *g, char *s, size_t len)
{
	if (gid_family(g) == AF_INET)
		inet_ntop(AF_INET, g->raw + 12, s, len);
	else
		inet_ntop(AF_INET6, g->raw, s, len);
}

/* ---- one NCCL connection: connect.cc, p2p.cc ----------------------------- */

enum { NET_IB_MAX_REQUESTS = 256, NBYTES = 1 << 20 };

static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			return 0;
	}
}

/* connect.cc ncclIbQpInit, ncclIbQpRtr (Ethernet link layer), ncclIbQpRts. */
static int qp_to_rts(struct ibv_qp *qp, int access, uint32_t dest_qpn,
		     const union ibv_gid *dgid, int sgid_index, enum ibv_mtu mtu,
		     int tc)
{
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0; /* NCCL_IB_PKEY */
	a.port_num = 1;
	a.qp_access_flags = access;
	rc = ibv.modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_ACCESS_FLAGS);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.flow_label = 0;
	a.ah_attr.grh.sgid_index = sgid_index;
	a.ah_attr.grh.hop_limit = 255;
	a.ah_attr.grh.traffic_class = tc;
	a.ah_attr.sl = 0;
	a.ah_attr.src_path_bits = 0;
	a.ah_attr.port_num = 1;
	rc = ibv.modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 20;	  /* NCCL_IB_TIMEOUT */
	a.retry_cnt = 7; /* NCCL_IB_RETRY_CNT */
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	a.sq_psn = 0;
	return ibv.modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					    IBV_QP_MAX_QP_RD_ATOMIC);
}

/* ECE answers NCCL takes (ibvwrap.cc IBV_INT_CHECK_RET_ERRNO_OPTIONAL):
 * 0, or ENOTSUP/EOPNOTSUPP for "not supported"; anything else is fatal. */
static int ece_ok(int rc)
{
	return rc == 0 || rc == ENOTSUP || rc == EOPNOTSUPP;
}

static void connection(struct ibv_context *ctx, struct ibv_pd *pd,
		       const struct nccl_port_attr *pa, int gid_index)
{
	/* reg.cc ncclIbRegMrDmaBufInternal: these flags, plus RELAXED_ORDERING
	 * when ibv_reg_mr_iova2 exists (NCCL_IB_PCI_RELAXED_ORDERING=2). */
	const int flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	char *sbuf = aligned_alloc(4096, NBYTES), *rbuf = aligned_alloc(4096, NBYTES);
	struct ibv_mr *smr = NULL, *rmr = NULL;
	struct ibv_cq *scq = NULL, *rcq = NULL;
	struct ibv_qp *sqp = NULL, *rqp = NULL;
	struct ibv_qp_init_attr ia;
	struct ibv_ece ece;
	union ibv_gid gid;
	struct ibv_wc wc;
	int rc, ece_supported = 0;

	for (int i = 0; i < NBYTES; i++)
		sbuf[i] = (char)(i * 7 + 3);
	memset(rbuf, 0, NBYTES);
	smr = ibv.reg_mr_iova2(pd, sbuf, NBYTES, (uintptr_t)sbuf,
			       flags | IBV_ACCESS_RELAXED_ORDERING);
	CHECK(smr != NULL, "ibv_reg_mr_iova2(LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ|REMOTE_ATOMIC|RELAXED_ORDERING): %s",
	      smr ? "registered" : strerror(errno));
	rmr = ibv.reg_mr(pd, rbuf, NBYTES, flags);
	CHECK(rmr != NULL, "ibv_reg_mr(LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ|REMOTE_ATOMIC): %s",
	      rmr ? "registered" : strerror(errno));
	/* connect.cc: send CQ NET_IB_MAX_REQUESTS entries per QP, receive CQ
	 * twice that; no completion channel. */
	scq = ibv.create_cq(ctx, NET_IB_MAX_REQUESTS, NULL, NULL, 0);
	rcq = ibv.create_cq(ctx, 2 * NET_IB_MAX_REQUESTS, NULL, NULL, 0);
	CHECK(scq && rcq, "ibv_create_cq(%d) and ibv_create_cq(%d)", NET_IB_MAX_REQUESTS,
	      2 * NET_IB_MAX_REQUESTS);
	if (!smr || !rmr || !scq || !rcq)
		goto out;
	/* connect.cc ncclIbQpCreate: the sender's QP has no receive queue. */
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = scq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 2 * NET_IB_MAX_REQUESTS;
	ia.cap.max_recv_wr = 0;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = 0; /* NCCL_IB_USE_INLINE=0 */
	sqp = ibv.create_qp(pd, &ia);
	CHECK(sqp != NULL, "ibv_create_qp(RC, send_wr %d, recv_wr 0, 1 SGE, inline 0): %s",
	      2 * NET_IB_MAX_REQUESTS, sqp ? "created" : strerror(errno));
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = rcq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 2 * NET_IB_MAX_REQUESTS;
	ia.cap.max_recv_wr = NET_IB_MAX_REQUESTS;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	rqp = ibv.create_qp(pd, &ia);
	CHECK(rqp != NULL, "ibv_create_qp(RC, send_wr %d, recv_wr %d): %s", 2 * NET_IB_MAX_REQUESTS,
	      NET_IB_MAX_REQUESTS, rqp ? "created" : strerror(errno));
	if (!sqp || !rqp)
		goto out;

	/* connect.cc ncclIbSenderQpsCreate: INIT, then ibv_query_ece; the
	 * receiver sets what the sender reported (ncclIbReceiverQpsCreateToRts)
	 * and the sender sets the receiver's reduced ECE (ncclIbSenderQpsToRts). */
	memset(&ece, 0, sizeof(ece));
	rc = ibv.query_ece(sqp, &ece);
	CHECK(ece_ok(rc), "ibv_query_ece: %d (%s): NCCL reads %s", rc, rc ? strerror(rc) : "ok",
	      rc == 0 ? "supported" : ece_ok(rc) ? "not supported" : "a fatal error");
	ece_supported = rc == 0;
	if (ece_supported) {
		rc = ibv.set_ece(rqp, &ece);
		CHECK(ece_ok(rc), "ibv_set_ece: %d", rc);
	}

	if (ibv.query_gid(ctx, 1, gid_index, &gid)) {
		CHECK(0, "ibv_query_gid(%d)", gid_index);
		goto out;
	}
	/* Both ends of this connection are the same port: the RTR MTU is
	 * min(local, remote) active_mtu, i.e. active_mtu. */
	rc = qp_to_rts(sqp, IBV_ACCESS_REMOTE_WRITE, rqp->qp_num, &gid, gid_index,
		       pa->base.active_mtu, 0);
	if (expect_refused) {
		CHECK(rc == EOPNOTSUPP, "QP INIT/RTR with source GID %d: %s (EOPNOTSUPP expected: only GID 0 is served)",
		      gid_index, rc ? strerror(rc) : "accepted");
		goto out;
	}
	CHECK(rc == 0, "sender QP INIT/RTR/RTS (access REMOTE_WRITE, mtu %d, GRH sgid %d hop 255, timeout 20, retry 7, rnr 7, rd_atomic 1): %s",
	      pa->base.active_mtu, gid_index, rc ? strerror(rc) : "ok");
	rc = rc ? rc : qp_to_rts(rqp, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
					      IBV_ACCESS_REMOTE_READ,
				 sqp->qp_num, &gid, gid_index, pa->base.active_mtu, 0);
	CHECK(rc == 0, "receiver QP INIT/RTR/RTS (access REMOTE_WRITE|REMOTE_ATOMIC|REMOTE_READ): %s",
	      rc ? strerror(rc) : "ok");
	if (rc)
		goto out;

	/* p2p.cc: the receiver posts receives without SGEs (the data comes by
	 * RDMA WRITE); the sender posts unsignaled RDMA WRITEs and ends with a
	 * signaled RDMA WRITE WITH IMM carrying the size. Two sends: the
	 * payload in the WITH_IMM itself (one request), and the payload in a
	 * WRITE followed by a zero-length WITH_IMM (adaptive routing form). */
	for (int round = 0; round < 2; round++) {
		struct ibv_recv_wr rwr = { .wr_id = 100 + round }, *bad_r;
		struct ibv_send_wr wr[2], *bad_s;
		struct ibv_sge sge = { .addr = (uintptr_t)sbuf, .length = NBYTES,
				       .lkey = smr->lkey };
		uint32_t size = round ? NBYTES : NBYTES / 2;
		int n = 0, same;

		sge.length = size;
		memset(rbuf, 0, NBYTES);
		memset(wr, 0, sizeof(wr));
		rc = ibv_post_recv(rqp, &rwr, &bad_r);
		if (rc) {
			CHECK(0, "ibv_post_recv (no SGE): %s", strerror(rc));
			break;
		}
		if (round) {
			wr[0].opcode = IBV_WR_RDMA_WRITE;
			wr[0].sg_list = &sge;
			wr[0].num_sge = 1;
			wr[0].wr.rdma.remote_addr = (uintptr_t)rbuf;
			wr[0].wr.rdma.rkey = rmr->rkey;
			wr[0].next = &wr[1];
			n = 1;
		} else {
			wr[0].sg_list = &sge;
			wr[0].num_sge = 1;
		}
		wr[n].wr_id = 200 + round;
		wr[n].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr[n].imm_data = htobe32(size);
		wr[n].send_flags = IBV_SEND_SIGNALED;
		wr[n].wr.rdma.remote_addr = (uintptr_t)rbuf + (round ? size : 0);
		wr[n].wr.rdma.rkey = rmr->rkey;
		rc = ibv_post_send(sqp, wr, &bad_s);
		if (rc) {
			CHECK(0, "ibv_post_send: %s", strerror(rc));
			break;
		}
		if (!poll_one(scq, &wc)) {
			CHECK(0, "no send completion in 10 s");
			break;
		}
		CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE &&
			      wc.wr_id == 200u + round,
		      "send completion: status %s opcode %d wr_id %llu",
		      ibv_wc_status_str(wc.status), wc.opcode, (unsigned long long)wc.wr_id);
		if (!poll_one(rcq, &wc)) {
			CHECK(0, "no receive completion in 10 s");
			break;
		}
		same = memcmp(sbuf, rbuf, size) == 0;
		CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
			      (wc.wc_flags & IBV_WC_WITH_IMM) && be32toh(wc.imm_data) == size &&
			      wc.wr_id == 100u + round && same,
		      "%s: receive completion %s opcode %d imm %u wr_id %llu byte_len %u, %u bytes %s",
		      round ? "WRITE + zero-length WRITE_WITH_IMM" : "WRITE_WITH_IMM",
		      ibv_wc_status_str(wc.status), wc.opcode, be32toh(wc.imm_data),
		      (unsigned long long)wc.wr_id, wc.byte_len, size,
		      same ? "identical" : "DIFFER");
	}
	/* The async thread's QP query (common.cc ncclIbAsyncThreadMain). */
	{
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qia;

		rc = ibv.query_qp(sqp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN, &qia);
		CHECK(rc == 0 && qa.qp_state == IBV_QPS_RTS, "ibv_query_qp(STATE|SQ_PSN|RQ_PSN): state %d",
		      rc ? -1 : (int)qa.qp_state);
	}
out:
	if (sqp)
		ibv.destroy_qp(sqp);
	if (rqp)
		ibv.destroy_qp(rqp);
	if (scq)
		ibv.destroy_cq(scq);
	if (rcq)
		ibv.destroy_cq(rcq);
	if (smr)
		ibv.dereg_mr(smr);
	if (rmr)
		ibv.dereg_mr(rmr);
	free(sbuf);
	free(rbuf);
}

/* ---- one device: init.cc ncclIbInitDevices, gdr.cc ----------------------- */

static void device(struct ibv_context *ctx, const char *name,
		   const struct nccl_port_attr *pa, const char *want_gid)
{
	char path[PATH_MAX], *real, gs[INET6_ADDRSTRLEN];
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	union ibv_gid gid;
	int gi, fl;

	/* init.cc ncclIbGetPciPath, xml.cc ncclTopoFillNet/ncclTopoGetSubsystem:
	 * realpath of .../device, its last characters overwritten, then
	 * realpath(<that>/subsystem); not "pci" = a NIC without PCI device,
	 * attached to the first CPU (rxe has no device link at all). */
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device", name);
	real = realpath(path, NULL);
	CHECK(real != NULL, "realpath(%s) = %s", path, real ? real : strerror(errno));
	if (real) {
		size_t n = strlen(real);
		char sub[PATH_MAX + 16], *s;

		real[n - 1] = '0';
		real[n - 3] = real[n - 4] = '0';
		snprintf(sub, sizeof(sub), "%s/subsystem", real);
		s = realpath(sub, NULL);
		CHECK(!s || strcmp(strrchr(s, '/') + 1, "pci") != 0,
		      "NCCL's PCI path %s: subsystem %s: not PCI, NIC attached to the CPU", real,
		      s ? s : "absent");
		free(s);
		free(real);
	}

	types_reads = 0;
	gi = select_gid(ctx, name, pa->base.gid_tbl_len);
	CHECK(gi >= 0 && ibv.query_gid(ctx, 1, gi, &gid) == 0, "GID selection: index %d (%d types files read)",
	      gi, types_reads);
	if (gi < 0)
		return;
	gid_str(&gid, gs, sizeof(gs));
	if (want_gid)
		CHECK(strcmp(gs, want_gid) == 0, "selected GID %d is %s (expected %s)", gi, gs, want_gid);
	else
		printf("info selected GID %d is %s\n", gi, gs);

	pd = ibv.alloc_pd(ctx);
	CHECK(pd != NULL, "ibv_alloc_pd");
	if (!pd)
		return;
	/* gdr.cc ncclIbDmaBufSupport: offset 0, length 0, fd -1. EOPNOTSUPP or
	 * EPROTONOSUPPORT = no dmabuf (host memory only); any other errno (EBADF
	 * on a capable device) = NCCL would register dmabufs here. */
	errno = 0;
	mr = ibv.reg_dmabuf_mr(pd, 0, 0, 0, -1, 0);
	CHECK(mr == NULL && (errno == EOPNOTSUPP || errno == EPROTONOSUPPORT),
	      "ibv_reg_dmabuf_mr(fd -1): %s, errno %d (%s): NCCL reads no dmabuf support",
	      mr ? "registered" : "NULL", errno, strerror(errno));
	if (mr)
		ibv.dereg_mr(mr);

	connection(ctx, pd, pa, gi);
	ibv.dealloc_pd(pd);

	/* common.cc ncclIbAsyncThreadMain blocks in ibv_get_async_event; with
	 * the fd non-blocking an idle device answers EAGAIN. */
	fl = fcntl(ctx->async_fd, F_GETFL);
	if (fl >= 0 && fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) == 0) {
		struct ibv_async_event ev;
		int rc = ibv.get_async_event(ctx, &ev);

		CHECK(rc == -1 && errno == EAGAIN, "ibv_get_async_event on an idle device: %d %s", rc,
		      rc ? strerror(errno) : "an event");
		if (rc == 0)
			ibv.ack_async_event(&ev);
		fcntl(ctx->async_fd, F_SETFL, fl);
	} else {
		CHECK(0, "async_fd %d is a pollable fd", ctx->async_fd);
	}
	CHECK(ibv.event_type_str(IBV_EVENT_GID_CHANGE) != NULL, "ibv_event_type_str(GID_CHANGE) = %s",
	      ibv.event_type_str(IBV_EVENT_GID_CHANGE));
}

int main(int argc, char **argv)
{
	const char *want_gid = NULL;
	int want_devs = -1, ndev = 0, kept = 0, opt, done = 0;
	struct ibv_device **list;

	while ((opt = getopt(argc, argv, "n:g:x")) != -1) {
		if (opt == 'x')
			expect_refused = 1;
		else if (opt == 'n')
			want_devs = atoi(optarg);
		else if (opt == 'g')
			want_gid = optarg;
		else {
			fprintf(stderr, "usage: %s [-n NDEVS] [-g GID] [-x]\n", argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (load_symbols())
		return 1;
	ibv.fork_init(); /* init.cc: result ignored */
	list = ibv.get_device_list(&ndev);
	CHECK(list != NULL && ndev > 0, "ibv_get_device_list: %d device(s)", ndev);
	for (int d = 0; list && d < ndev; d++) {
		const char *name = ibv.get_device_name(list[d]);
		struct ibv_context *ctx = ibv.open_device(list[d]);
		struct ibv_device_attr da;
		struct nccl_port_attr pa;
		int mbps;

		/* init.cc: a device that does not open is warned about and
		 * skipped; -n counts what is left. */
		if (!ctx) {
			printf("info %s: ibv_open_device: %s (NCCL skips it)\n", name, strerror(errno));
			continue;
		}
		memset(&da, 0, sizeof(da));
		CHECK(ibv.query_device(ctx, &da) == 0 && da.phys_port_cnt == 1,
		      "%s: ibv_query_device: phys_port_cnt %d max_qp %d max_qp_wr %d sys_image_guid %016llx",
		      name, da.phys_port_cnt, da.max_qp, da.max_qp_wr,
		      (unsigned long long)be64toh(da.sys_image_guid));
		CHECK(da.max_qp_wr >= 2 * NET_IB_MAX_REQUESTS && da.max_qp > 0 && da.max_cqe >= 2 * NET_IB_MAX_REQUESTS,
		      "%s: max_qp_wr %d and max_cqe %d hold NCCL's %d-entry queues", name, da.max_qp_wr,
		      da.max_cqe, 2 * NET_IB_MAX_REQUESTS);
		CHECK(query_port_nccl(ctx, &pa) == 0, "%s: query_port (NCCL's %zu-byte attributes)", name,
		      sizeof(pa));
		CHECK(pa.active_speed_ex == 0, "%s: active_speed_ex beyond rdma-core 44's struct is %#x (must be cleared)",
		      name, pa.active_speed_ex);
		mbps = port_mbps(&pa.base, pa.active_speed_ex);
		CHECK(pa.base.state == IBV_PORT_ACTIVE && pa.base.link_layer == IBV_LINK_LAYER_ETHERNET &&
			      mbps > 0,
		      "%s: port 1 %s, link layer %d (Ethernet), active_mtu %d, speed %d width %d -> NCCL speed %d Mb/s, gid_tbl_len %d",
		      name, ibv_port_state_str(pa.base.state), pa.base.link_layer, pa.base.active_mtu,
		      pa.base.active_speed, pa.base.active_width, mbps, pa.base.gid_tbl_len);
		if (!hca_selected(name, 1)) {
			printf("info %s: not selected by NCCL_IB_HCA\n", name);
			ibv.close_device(ctx);
			continue;
		}
		kept++;
		if (!done++)
			device(ctx, name, &pa, want_gid);
		ibv.close_device(ctx);
	}
	if (want_devs >= 0)
		CHECK(kept == want_devs, "NCCL keeps %d device port(s) (expected %d, NCCL_IB_HCA=%s)", kept,
		      want_devs, getenv("NCCL_IB_HCA") ? getenv("NCCL_IB_HCA") : "");
	if (list)
		ibv.free_device_list(list);
	printf("nccl_probe: %d check(s) failed: %s\n", fails, fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}

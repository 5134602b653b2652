/* SPDX-License-Identifier: MIT */
/*
 * Communicator setup: rank/size from the caller or the launcher's env,
 * device and GID, one RC QP per peer (full mesh), one registered region
 * holding every peer's staging slots and credit words, rendezvous, connect.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>
#include <pthread.h>

#include "coll_internal.h"
#include "ur_log.h"
#include "ur_settings.h"

const char *const ur__coll_kind_name[UR_C_MAX] = {
#define X(e, s) [UR_C_##e] = s,
	UR_COLL_KINDS(X)
#undef X
};

const char *const ur__algo_name[UR_A_MAX] = {
#define X(e, s) [UR_A_##e] = s,
	UR_ALGOS(X)
#undef X
};

static int env_int(const char *const *names, int def)
{
	for (; *names; names++) {
		const char *v = getenv(*names);
		if (v && *v)
			return atoi(v);
	}
	return def;
}

static const char *const rank_vars[] = { "RANK", "OMPI_COMM_WORLD_RANK",
					 "PMI_RANK", "SLURM_PROCID", NULL };
static const char *const size_vars[] = { "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE",
					 "PMI_SIZE", "SLURM_NTASKS", NULL };

int ur__fail(struct uroce_comm *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (c->failed)
		return c->failed;
	c->failed = err < 0 ? err : -EIO;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	fprintf(stderr, "uroce_coll: rank %d: %s\n", c->rank, c->err);
	/* A lane's failure is its communicator's (uroce_comm_strerror). */
	if (c->owner && !c->owner->failed) {
		memcpy(c->owner->err, c->err, sizeof(c->err));
		__atomic_store_n(&c->owner->failed, c->failed, __ATOMIC_RELEASE);
	}
	/* Tell everyone through the bootstrap sockets (rank 0 relays by
	 * failing in turn), so nobody waits for the timeout. */
	ur__boot_abort(c->wboot);
	return c->failed;
}

void *ur__scratch(struct uroce_comm *c, size_t len)
{
	if (len > c->scratch_len) {
		void *p = realloc(c->scratch, len);
		if (!p)
			return NULL;
		c->scratch = p;
		c->scratch_len = len;
	}
	return c->scratch ? c->scratch : (c->scratch = malloc(1));
}

static int parse_algo(enum ur_algo *out)
{
	const char *v = ur_setting_str("UROCE_COLL_ALGO");

	*out = UR_A_AUTO;
	if (!v || !*v)
		return 0;
	for (int i = 0; i < UR_A_MAX; i++)
		if (!strcmp(v, ur__algo_name[i])) {
			*out = (enum ur_algo)i;
			return 0;
		}
	fprintf(stderr, "uroce_coll: unknown UROCE_COLL_ALGO=%s; valid:", v);
	for (int i = 0; i < UR_A_MAX; i++)
		fprintf(stderr, " %s", ur__algo_name[i]);
	fprintf(stderr, "\n");
	return -EINVAL;
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list || !n) {
		fprintf(stderr, "uroce_coll: no RDMA device (run under uroce-run/uroce-launch?)\n");
		if (list)
			ibv_free_device_list(list);
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		if (name && strcmp(ibv_get_device_name(list[i]), name))
			continue;
		ctx = ibv_open_device(list[i]);
		break;
	}
	if (!ctx)
		fprintf(stderr, "uroce_coll: cannot open device %s\n",
			name ? name : ibv_get_device_name(list[0]));
	ibv_free_device_list(list);
	return ctx;
}

/*
 * Hybrid polling. A waiting rank spins on its CQ (the spinning thread
 * drains the socket itself, no wake-ups) for spin_ns without progress, then
 * arms the CQ and sleeps on the completion channel for at most block_ns
 * before draining again itself. The spin yields between polls: on uroce
 * each rank has an engine thread too, so even one rank per core is more
 * threads than cores, and the thread that needs the core (an engine, the
 * rank we wait for) gets it. The spin is long (1 ms) because on uroce no
 * completion is not no work: the poller receives the data of a 256 KiB
 * slot, or of a direct stream that completes once at its end, for hundreds
 * of microseconds before its completion shows.
 */
static const char *const local_vars[] = { "LOCAL_WORLD_SIZE",
					  "OMPI_COMM_WORLD_LOCAL_SIZE",
					  "MPI_LOCALNRANKS", NULL };

/* The spins (a blocked rank's, the progress thread's) when local ranks
 * outnumber CPUs. */
#define UR_PSPIN_SHARED_NS 30000ull

static void wait_params(struct uroce_comm *c)
{
	unsigned long long v;
	int shared = env_int(local_vars, 1) > sysconf(_SC_NPROCESSORS_ONLN);

	/* Ranges in settings.c, checked by uroce_comm_init. */
	c->yield = (int)ur_setting_val("UROCE_COLL_YIELD");
	/* A blocked rank's spin, with more local ranks than CPUs: short for
	 * the same reason as the progress thread's below. 4 ranks on 2
	 * CPUs, 1 ms against 30 us: allreduce 1.2-17.9x, alltoall
	 * 1.0-19x from 64 KiB to 16 MiB (docs/collectives.md). */
	if (ur_setting_get("UROCE_COLL_SPIN_US", &v) == 0)
		c->spin_ns = v * 1000;
	else
		c->spin_ns = shared ? UR_PSPIN_SHARED_NS : v * 1000;
	c->cur_spin_ns = c->spin_ns;
	c->cpu_shared = shared;
	/*
	 * The progress thread runs while the application computes or
	 * sleeps. With a core per rank its spin costs nobody and keeps the
	 * socket drained; with more ranks on this machine than CPUs (4 on
	 * 2) a long spin takes the core from the rank beside it, which has
	 * the work the spin waits for, and no spin pays a wake-up for every
	 * step of the collective. A short spin (UR_PSPIN_SHARED_NS, a step's
	 * usual gap) does neither: 4 ranks on 2 CPUs, 1 MiB iallreduce with
	 * sleeping compute, overlap with a spin of 1 ms / 30 us / 0: quiet
	 * 90 / 95 / 80 % (medians of 8 runs), at load 7-13 91-94 / 98.5-99.7
	 * / 96-99.3 % (3 runs) (docs/collectives.md).
	 */
	if (ur_setting_get("UROCE_COLL_PROGRESS_SPIN_US", &v) == 0)
		c->pspin_ns = v * 1000;
	else
		c->pspin_ns = shared ? UR_PSPIN_SHARED_NS : c->spin_ns;
	/* Local ACK timeout 4.096 us * 2^t: a lost ACK stalls a stream this
	 * long, and 8 times this without an ACK breaks the QP. */
	c->qp_timeout = (int)ur_setting_val("UROCE_COLL_QP_TIMEOUT");
	/* At most 1 ms (settings.c): the failure watch runs every 2 ms. */
	c->block_ns = ur_setting_val("UROCE_COLL_BLOCK_US") * 1000;
}

static int qp_connect(struct uroce_comm *c, struct ur_peer *p,
		      const struct ur_conn_info *mine,
		      const struct ur_conn_info *rem, int port)
{
	struct ibv_qp_attr a;
	int r;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = (uint8_t)port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	r = ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (r)
		return -r;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)(mine->mtu < rem->mtu ? mine->mtu : rem->mtu);
	a.dest_qp_num = rem->qpn;
	a.rq_psn = rem->psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, rem->gid, 16);
	a.ah_attr.grh.sgid_index = (uint8_t)c->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.dlid = rem->lid;
	a.ah_attr.port_num = (uint8_t)port;
	r = ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (r)
		return -r;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = (uint8_t)c->qp_timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = mine->psn;
	a.max_rd_atomic = 1;
	r = ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			  IBV_QP_MAX_QP_RD_ATOMIC);
	return -r;
}

/*
 * A uroce extension (include/uroce/uroce.h), looked up at run time: this
 * library links the public verbs API only, and a real NIC's rdma-core has
 * no such symbol (NULL). The program links libibverbs, so the function
 * stays loaded after the handle is closed.
 */
static void *uroce_ext(const char *name)
{
	void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *f = h ? dlsym(h, name) : NULL;

	if (h)
		dlclose(h);
	return f;
}

/*
 * uroce's jumbo packets (docs/wire.md "Extensions"): offered on every QP of
 * a communicator on uroce devices. Every rank runs this same code, and the
 * transport sends them only once the peer's answers say it takes them.
 * UROCE_COLL_JUMBO=0: off.
 */
static void offer_jumbo(struct ibv_qp *qp)
{
	int (*set)(struct ibv_qp *, int) =
		(int (*)(struct ibv_qp *, int))uroce_ext("uroce_qp_set_jumbo");

	if (set && set(qp, 1))
		fprintf(stderr, "uroce_coll: jumbo packets not offered "
			"(selective repeat is on)\n");
}

/*
 * Every wait of this library polls the CQ, or arms it and blocks on the
 * channel, until a completion: data, credits and offers all arrive as
 * WRITE WITH IMMEDIATE, never as a plain WRITE watched in memory. On uroce
 * that spares the engine thread a wake-up at completions after which a
 * rank comes back late because it was descheduled (more ranks than cores):
 * 4 ranks on 2 CPUs, 1 MiB allreduce 1.28x and alltoall 1.25x as fast
 * (docs/collectives.md "Waiting").
 */
static void pollers_stay(struct ibv_context *ctx)
{
	int (*set)(struct ibv_context *, int) =
		(int (*)(struct ibv_context *, int))uroce_ext(
			"uroce_context_set_poller_stays");

	if (set)
		set(ctx, 1);
}

static int post_recvs(struct uroce_comm *c, int peer, unsigned n)
{
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)peer, .num_sge = 0 };
	struct ibv_recv_wr *bad;

	for (unsigned i = 0; i < n; i++) {
		int r = ibv_post_recv(c->peers[peer].qp, &wr, &bad);
		if (r)
			return -r;
	}
	return 0;
}

int ur__repost_recv(struct uroce_comm *c, int peer);
int ur__repost_recv(struct uroce_comm *c, int peer)
{
	return post_recvs(c, peer, 1);
}

void ur__comm_free(struct uroce_comm *c)
{
	/* Rails and lanes first: they borrow our device and PD. */
	for (int i = 1; i < c->nrails; i++)
		if (c->rails[i])
			ur__comm_free(c->rails[i]);
	free(c->rails);
	free(c->rail_w);
	c->rails = NULL;
	c->nrails = 0;
	for (int i = 1; i < c->nlanes; i++)
		if (c->lanes[i])
			ur__comm_free(c->lanes[i]);
	free(c->lanes);
	c->lanes = NULL;
	c->nlanes = 0;
	ur__nbc_fini(c);
	if (c->peers) {
		for (int i = 0; i < c->size; i++) {
			if (c->peers[i].qp)
				ibv_destroy_qp(c->peers[i].qp);
			free(c->peers[i].rx_imm);
			free(c->peers[i].rx_len);
		}
		free(c->peers);
	}
	ur__reg_fini(c);
	ur__seg_free(c);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->region)
		munmap(c->region, c->region_len);
	if (c->cq) {
		if (c->cq_events)
			ibv_ack_cq_events(c->cq, c->cq_events);
		ibv_destroy_cq(c->cq);
	}
	if (c->chan)
		ibv_destroy_comp_channel(c->chan);
	/* A sub-communicator borrows its parent's device and PD, but for a
	 * rail on another device (rails.c). */
	if (!c->parent || c->own_dev) {
		if (c->pd)
			ibv_dealloc_pd(c->pd);
		if (c->ctx)
			ibv_close_device(c->ctx);
	}
	if (!c->parent)
		ur__boot_close(&c->boot);
	if (c->nbc.inited) {
		pthread_mutex_destroy(&c->nbc.lock);
		pthread_cond_destroy(&c->nbc.work);
		pthread_cond_destroy(&c->nbc.done);
	}
	free(c->p2p_sent);
	free(c->p2p_rcvd);
	free(c->scratch);
	free(c);
}

/*
 * Everything of a communicator below the rendezvous, given its device,
 * PD, rank, size and slot parameters: CQ and channel, the staging region,
 * one RC QP per peer (not yet connected), the progress context. Shared by
 * uroce_comm_init and the split (split.c).
 */
int ur__comm_setup(struct uroce_comm *c)
{
	int r = ur__nbc_init(c);

	if (r)
		return r;
	c->cq_depth = (int)(c->size * (2 * c->nslots + 4 + 2 * UR_RTR_RING) + 16);
	c->chan = ibv_create_comp_channel(c->ctx);
	c->cq = c->chan ? ibv_create_cq(c->ctx, c->cq_depth, NULL, c->chan, 0) : NULL;
	c->peers = calloc((size_t)c->size, sizeof(*c->peers));
	c->p2p_sent = calloc((size_t)c->size, sizeof(uint32_t));
	c->p2p_rcvd = calloc((size_t)c->size, sizeof(uint32_t));
	if (!c->cq || !c->peers || !c->p2p_sent || !c->p2p_rcvd) {
		fprintf(stderr, "uroce_coll: out of resources (CQ)\n");
		return -ENOMEM;
	}

	/* Per peer: rx slots, tx slots, a 64-byte credit line, then the
	 * mailbox for the peer's direct-receive offers (p2p.c). */
	size_t per = 2 * c->slot * c->nslots + 64 + UR_RTR_RING * sizeof(struct ur_rtr);
	c->region_len = per * (size_t)c->size;
	/* Zeroed and resident at once (MAP_POPULATE): on a paravirtualised
	 * VM a page's first write costs ~10 us, so a memset of the 4 MiB per
	 * peer took ~10 ms per peer, and untouched slots would fault in the
	 * first transfers (mlock in ibv_reg_mr populates too, where
	 * RLIMIT_MEMLOCK allows). */
	c->region = mmap(NULL, c->region_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (c->region == MAP_FAILED) {
		c->region = NULL;
		return -ENOMEM;
	}
	c->mr = ibv_reg_mr(c->pd, c->region, c->region_len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!c->mr) {
		fprintf(stderr, "uroce_coll: ibv_reg_mr(%zu): %s\n", c->region_len,
			strerror(errno));
		return errno ? -errno : -ENOMEM;
	}

	for (int i = 0; i < c->size; i++) {
		struct ur_peer *p = &c->peers[i];
		char *base = c->region + per * (size_t)i;

		p->rx = base;
		p->tx = base + c->slot * c->nslots;
		p->credit = (volatile uint64_t *)(base + 2 * c->slot * c->nslots);
		p->rtr = (volatile struct ur_rtr *)(base + 2 * c->slot * c->nslots + 64);
		p->rx_imm = calloc(c->nslots, sizeof(uint32_t));
		p->rx_len = calloc(c->nslots, sizeof(uint32_t));
		if (!p->rx_imm || !p->rx_len)
			return -ENOMEM;
		if (i == c->rank)
			continue;
		struct ibv_qp_init_attr qa = {
			.send_cq = c->cq,
			.recv_cq = c->cq,
			.qp_type = IBV_QPT_RC,
			.sq_sig_all = 1,
			.cap = { .max_send_wr = c->nslots + 4 + UR_RTR_RING,
				 .max_recv_wr = c->nslots + 4 + UR_RTR_RING,
				 .max_send_sge = 1,
				 .max_recv_sge = 1,
				 .max_inline_data = 64 },
		};
		p->qp = ibv_create_qp(c->pd, &qa);
		if (!p->qp) {
			fprintf(stderr, "uroce_coll: ibv_create_qp: %s\n", strerror(errno));
			return errno ? -errno : -ENOMEM;
		}
		if (c->jumbo)
			offer_jumbo(p->qp);
	}
	return ur__seg_create(c);
}

/* My connection record for peer i. */
int ur__conn_info(struct uroce_comm *c, int i, struct ur_conn_info *out)
{
	struct ur_peer *p = &c->peers[i];
	uint32_t psn;

	memset(out, 0, sizeof(*out));
	if (i == c->rank)
		return 0;
	if (getrandom(&psn, sizeof(psn), 0) != sizeof(psn))
		psn = (uint32_t)ur__now_ns();
	out->qpn = p->qp->qp_num;
	out->psn = psn & 0xffffff;
	memcpy(out->gid, c->gid, 16);
	out->slots_addr = (uint64_t)(uintptr_t)p->rx;
	out->credit_addr = (uint64_t)(uintptr_t)p->credit;
	out->rkey = c->mr->rkey;
	out->mtu = c->mtu;
	out->lid = c->lid;
	/* The cookie lives in the credit line, after the credit word. */
	out->pid = (uint32_t)getpid();
	if (getrandom(&out->cookie, sizeof(out->cookie), 0) != sizeof(out->cookie))
		out->cookie = ur__now_ns() ^ (uint64_t)out->qpn << 40;
	memcpy((char *)(uintptr_t)p->credit + 8, &out->cookie, sizeof(out->cookie));
	out->seg_id = c->seg_id;
	return 0;
}

/* Connect the QP to peer i from both records and post its receives. */
int ur__comm_connect(struct uroce_comm *c, int i, const struct ur_conn_info *mine,
		      const struct ur_conn_info *rem)
{
	struct ur_peer *p = &c->peers[i];
	int r;

	p->r_slots = rem->slots_addr;
	p->r_credit = rem->credit_addr;
	p->r_rtr = rem->credit_addr + 64; /* same layout on every rank */
	p->rkey = rem->rkey;
	p->cma_pid = (int)rem->pid;
	p->cma_cookie = rem->cookie;
	p->cma = 0;
	p->seg_id = rem->seg_id;
	ur__seg_connect(c, i);
	r = qp_connect(c, p, mine, rem, c->port);
	if (!r)
		r = post_recvs(c, i, c->nslots + 2 + UR_RTR_RING);
	if (r)
		fprintf(stderr, "uroce_coll: rank %d: connecting QP to rank %d: %s\n",
			c->rank, i, strerror(-r));
	return r;
}

int uroce_comm_init(uroce_comm_t **out, const struct uroce_comm_attr *attr)
{
	struct uroce_comm_attr at = { .gid_index = -1 };
	struct ur_conn_info *mine = NULL, *table = NULL;
	struct ur_rail rails[UR_RAILS_MAX];
	int nrails, rails_auto;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct uroce_comm *c;
	const char *addr;
	int r, mport;
	unsigned long long v;
	bool on_uroce;

	if (!out)
		return -EINVAL;
	*out = NULL;
	/* Every UROCE_COLL_* setting is checked first: a bad value is
	 * refused, naming it and its range (src/util/settings.c). */
	if (ur_settings_check(UR_SCOPE_COLL))
		return -EINVAL;
	if (attr)
		at = *attr;
	if (at.size <= 0) {
		at.rank = env_int(rank_vars, -1);
		at.size = env_int(size_vars, -1);
		if (at.rank < 0 && at.size < 0) {
			at.rank = 0; /* a single process: a job of one */
			at.size = 1;
		}
	}
	if (at.size <= 0 || at.rank < 0 || at.rank >= at.size) {
		fprintf(stderr, "uroce_coll: bad rank %d / size %d (set RANK and WORLD_SIZE)\n",
			at.rank, at.size);
		return -EINVAL;
	}
	addr = at.master_addr ? at.master_addr : getenv("MASTER_ADDR");
	if (!addr || !*addr)
		addr = "127.0.0.1";
	mport = at.master_port ? at.master_port : env_int((const char *const[]){ "MASTER_PORT", NULL }, 29500);
	if (at.gid_index < 0)
		at.gid_index = (int)ur_setting_val("UROCE_COLL_GID");
	if (at.timeout_ms <= 0)
		at.timeout_ms = (int)ur_setting_val("UROCE_COLL_TIMEOUT_MS");
	if (!at.dev_name)
		at.dev_name = ur_setting_str("UROCE_COLL_DEV");
	/* The rails: the first listed is the communicator's own port. */
	r = ur__rails_parse(ur_setting_str("UROCE_COLL_RAILS"), rails, &nrails,
			    &rails_auto);
	if (r)
		return r;
	if (nrails && rails[0].dev[0])
		at.dev_name = rails[0].dev;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->rank = at.rank;
	c->size = at.size;
	c->gid_index = at.gid_index;
	c->timeout_ms = at.timeout_ms;
	c->boot.rank = at.rank;
	c->boot.size = at.size;
	c->boot.listen_fd = -1;
	c->wboot = &c->boot;
	c->port = nrails ? rails[0].port : 1;
	c->last_algo = "none";
	c->slot = (size_t)ur_setting_val("UROCE_COLL_SLOT_KB") * 1024;
	c->nslots = (unsigned)ur_setting_val("UROCE_COLL_SLOTS");
	c->credit_batch = c->nslots / 2 ? c->nslots / 2 : 1;
	wait_params(c);
	r = parse_algo(&c->algo_override);
	if (r) {
		free(c);
		return r;
	}

	c->ctx = open_dev(at.dev_name);
	if (!c->ctx) {
		r = -ENODEV;
		goto err;
	}
	pollers_stay(c->ctx);
	if (ibv_query_port(c->ctx, (uint8_t)c->port, &pa) ||
	    ibv_query_gid(c->ctx, (uint8_t)c->port, c->gid_index, &gid)) {
		fprintf(stderr, "uroce_coll: cannot query port/GID %d\n", c->gid_index);
		r = -ENODEV;
		goto err;
	}
	memcpy(c->gid, gid.raw, 16);
	c->mtu = (uint32_t)pa.active_mtu;
	c->lid = pa.lid;
	c->pd = ibv_alloc_pd(c->ctx);
	if (!c->pd) {
		r = -ENOMEM;
		goto err;
	}
	/* Caching registrations by address is safe on uroce only (regcache.c). */
	on_uroce = !strncmp(ibv_get_device_name(c->ctx->device), "uroce", 5);
	c->regcache_entries = ur_setting_get("UROCE_COLL_REGCACHE", &v) == 0
				      ? (int)v : on_uroce ? 16 : 0;
	r = ur__reg_init(c, c->regcache_entries);
	if (r)
		goto err;
	c->jumbo = ur_setting_get("UROCE_COLL_JUMBO", &v) == 0 ? (int)v : on_uroce;
	/* One copy between the ranks of one host when they were asked to
	 * share memory (UROCE_SHM, uroce-launch's default): not on the UDP
	 * path, which stands for ranks on different machines. */
	c->cma = ur_setting_get("UROCE_COLL_CMA", &v) == 0 ? (int)v :
		 ur_setting_val("UROCE_SHM") != 0;
	r = ur__comm_setup(c);
	if (r)
		goto err;
	mine = calloc((size_t)c->size, sizeof(*mine));
	table = calloc((size_t)c->size * (size_t)c->size, sizeof(*table));
	if (!mine || !table) {
		r = -ENOMEM;
		goto err;
	}
	for (int i = 0; i < c->size; i++)
		ur__conn_info(c, i, &mine[i]);

	r = ur__boot_exchange(&c->boot, addr, mport, c->timeout_ms, mine,
			       sizeof(*mine) * (size_t)c->size, table);
	if (r)
		goto err;
	for (int i = 0; i < c->size; i++) {
		if (i == c->rank)
			continue;
		r = ur__comm_connect(c, i, &mine[i], &table[(size_t)i * c->size + c->rank]);
		if (r)
			goto err;
	}
	/* Nobody writes before every QP is at least RTR. */
	r = ur__boot_barrier(&c->boot, c->timeout_ms);
	if (r) {
		fprintf(stderr, "uroce_coll: rank %d: bootstrap barrier: %s\n",
			c->rank, strerror(-r));
		goto err;
	}
	/* Every rank has mapped our segment (or never will). */
	ur__seg_unlink(c);
	free(mine);
	free(table);
	mine = NULL;
	table = NULL;
	r = ur__rails_init(c, rails, nrails, rails_auto);
	if (r)
		goto err;
	/* With rails, every collective takes every rail rather than a lane
	 * of its own (docs/collectives.md "Rails"). */
	if (c->nrails > 1)
		c->want_lanes = 1;
	r = ur__lanes_init(c);
	if (r)
		goto err;
	ur_log(UR_LOG_INFO, "collectives: rank %d of %d on %s port %d (GID %d), "
	       "%d rail(s), rank 0 at %s:%d", c->rank, c->size,
	       ibv_get_device_name(c->ctx->device), c->port, c->gid_index,
	       c->nrails > 1 ? c->nrails : 1, addr, mport);
	*out = c;
	return 0;
err:
	free(mine);
	free(table);
	ur__comm_free(c);
	return r;
}

/* Let our last credit writes complete while every peer is still here to
 * acknowledge them. */
static void drain_credits(struct uroce_comm *c)
{
	for (int i = 0; i < 1000; i++) {
		struct ibv_wc wc[16];
		int busy = 0;
		for (int p = 0; p < c->size; p++)
			busy |= c->peers[p].credit_inflight;
		if (!busy)
			break;
		int n = ibv_poll_cq(c->cq, 16, wc);
		for (int k = 0; k < n; k++)
			if ((wc[k].wr_id >> 8) < (uint64_t)c->size &&
			    (wc[k].wr_id & 0xff) == 2)
				c->peers[wc[k].wr_id >> 8].credit_inflight = 0;
		if (n <= 0)
			usleep(100);
	}
}

/*
 * After every request of c and of its lanes (or rails) finished: each
 * hidden sub-communicator's own barrier says every member is done
 * writing to us on it, then it goes. subs[0] is c itself.
 */
static int subs_destroy(struct uroce_comm *c, struct uroce_comm **subs,
			int n)
{
	int r = 0;

	for (int i = 1; i < n; i++) {
		struct uroce_comm *k = subs[i];

		ur__nbc_fini(k);
		if (!k->failed && !c->failed) {
			int e = ur__nbc_barrier_now(k);
			if (!e)
				drain_credits(k);
			if (e && !r)
				r = e;
		}
		ur__comm_free(k);
		subs[i] = NULL;
	}
	return r;
}

int ur__lanes_destroy(struct uroce_comm *c)
{
	return subs_destroy(c, c->lanes, c->nlanes);
}

/* The rails (rails.c). */
int ur__rails_destroy(struct uroce_comm *c)
{
	return subs_destroy(c, c->rails, c->nrails);
}

int uroce_comm_destroy(uroce_comm_t *c)
{
	int r = 0;

	if (!c)
		return 0;
	if (__atomic_load_n(&c->children, __ATOMIC_ACQUIRE)) {
		fprintf(stderr, "uroce_coll: rank %d: uroce_comm_destroy: %d sub-communicators still exist; destroy them first\n",
			c->rank, c->children);
		return -EBUSY;
	}
	/* Every request issued finishes first (their buffers are the
	 * caller's until then). */
	ur__nbc_fini(c);
	r = ur__lanes_destroy(c);
	{
		int e = ur__rails_destroy(c);
		r = r ? r : e;
	}
	if (c->parent) {
		/* A sub-communicator has no sockets: its own barrier says
		 * every member is done writing to us. */
		if (!c->failed) {
			int e = ur__nbc_barrier_now(c);
			r = r ? r : e;
		}
		if (!c->failed)
			drain_credits(c);
		__atomic_fetch_sub(&c->parent->children, 1, __ATOMIC_ACQ_REL);
		ur__comm_free(c);
		return r;
	}
	/* First let our last credit writes complete, while every peer is
	 * still here to acknowledge them; then wait for everyone, so that
	 * no rank tears down a QP a peer still writes to (their last
	 * credits, their last data). In the other order a rank that left
	 * the barrier first could exit under our credit write, which then
	 * timed out against a closed port. */
	if (!c->failed) {
		drain_credits(c);
		int e = ur__boot_barrier(&c->boot, c->timeout_ms);
		r = r ? r : e;
	}
	ur__comm_free(c);
	return r;
}

int uroce_comm_rank(const uroce_comm_t *c)
{
	return c->rank;
}

int uroce_comm_size(const uroce_comm_t *c)
{
	return c->size;
}

const char *uroce_comm_strerror(const uroce_comm_t *c)
{
	return c->failed ? c->err : "no error";
}

const char *uroce_comm_last_algo(const uroce_comm_t *c)
{
	return c->last_algo;
}

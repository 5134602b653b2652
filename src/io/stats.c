// SPDX-License-Identifier: MIT
/*
 * Counters for other processes (uroce-stat): the engine copies the device's
 * and every QP's counters into /dev/shm/uroce-<pid>-<devname> (layout:
 * include/uroce/stat.h) at most every UR_STATS_PERIOD_NS, from its own
 * thread, and removes the file at close. The transport keeps counting in
 * dev->cnt and qp->cnt as before; this is a periodic copy, so the hot path
 * is unchanged. Files of dead processes are removed when a context opens.
 * UROCE_STAT_FILE=0 disables the file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <uroce/stat.h>

#include "ur_io_priv.h"
#include "ur_stats.h"

#define UR_STATS_PERIOD_NS 10000000ull /* 10 ms */

static const char *const dev_names[] = {
#define UR_X(n) #n,
	UR_COUNTERS(UR_X)
#undef UR_X
};
static const char *const qp_names[] = {
#define UR_X(n) #n,
	UR_QP_COUNTERS(UR_X)
#undef UR_X
};
_Static_assert(sizeof(dev_names) / sizeof(dev_names[0]) <= UROCE_STAT_MAX_DEV,
	       "device counters");
_Static_assert(sizeof(qp_names) / sizeof(qp_names[0]) <= UROCE_STAT_MAX_QPC,
	       "QP counters");

/* Engines are not ours to extend (src/io is the lead's): a small table. */
struct ur_stats {
	struct ur_engine *e;
	struct uroce_stat_file *f;
	char path[128];
	uint64_t last, last_sum;
};

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ur_stats *stats_tab[64];

static struct ur_stats *find(struct ur_engine *e)
{
	for (unsigned int i = 0; i < 64; i++)
		if (stats_tab[i] && stats_tab[i]->e == e)
			return stats_tab[i];
	return NULL;
}

/* Remove the files of processes that died without closing. */
static void clean_stale(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		int pid;
		char path[300];

		if (sscanf(de->d_name, UROCE_STAT_PREFIX "%d-", &pid) != 1 ||
		    pid <= 0)
			continue;
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "/dev/shm/%s", de->d_name);
		unlink(path);
	}
	closedir(d);
}

void ur__stats_open(struct ur_engine *e, const char *devname)
{
	bool on = ur_setting_val("UROCE_STAT_FILE");
	struct ur_stats *s;
	struct uroce_stat_file *f;
	unsigned int slot;
	int fd;

	if (!on)
		return;
	clean_stale();
	s = calloc(1, sizeof(*s));
	if (!s)
		return;
	s->e = e;
	snprintf(s->path, sizeof(s->path), "/dev/shm/" UROCE_STAT_PREFIX "%d-%s",
		 (int)getpid(), devname && *devname ? devname : "uroce");
	/* Two contexts on one device in one process: add the slot. */
	if (access(s->path, F_OK) == 0) {
		size_t n = strlen(s->path);

		snprintf(s->path + n, sizeof(s->path) - n, ".%u", e->slot);
	}
	fd = open(s->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, sizeof(*f))) {
		if (fd >= 0) {
			close(fd);
			unlink(s->path);
		}
		free(s);
		return;
	}
	f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (f == MAP_FAILED) {
		unlink(s->path);
		free(s);
		return;
	}
	f->version = UROCE_STAT_VERSION;
	f->pid = (uint32_t)getpid();
	snprintf(f->dev, sizeof(f->dev), "%s", devname ? devname : "");
	if (e->cfg.addr.ss_family == AF_INET6)
		inet_ntop(AF_INET6,
			  &((const struct sockaddr_in6 *)&e->cfg.addr)->sin6_addr,
			  f->addr, sizeof(f->addr));
	else
		inet_ntop(AF_INET,
			  &((const struct sockaddr_in *)&e->cfg.addr)->sin_addr,
			  f->addr, sizeof(f->addr));
	f->n_dev = sizeof(dev_names) / sizeof(dev_names[0]);
	f->n_qpc = sizeof(qp_names) / sizeof(qp_names[0]);
	for (unsigned int i = 0; i < f->n_dev; i++)
		snprintf(f->dev_names[i], UROCE_STAT_NAME_LEN, "%s", dev_names[i]);
	for (unsigned int i = 0; i < f->n_qpc; i++)
		snprintf(f->qp_names[i], UROCE_STAT_NAME_LEN, "%s", qp_names[i]);
	__atomic_store_n(&f->magic, UROCE_STAT_MAGIC, __ATOMIC_RELEASE);
	s->f = f;
	pthread_mutex_lock(&stats_lock);
	for (slot = 0; slot < 64 && stats_tab[slot]; slot++)
		;
	if (slot < 64)
		stats_tab[slot] = s;
	pthread_mutex_unlock(&stats_lock);
	if (slot == 64) {
		munmap(f, sizeof(*f));
		unlink(s->path);
		free(s);
	}
}

static void fill_qp(struct uroce_stat_qp *o, struct ur_qp *qp)
{
	struct ur_qp_attr a;

	ur_engine_qp_lock(qp);
	ur_qp_query(qp, &a);
	o->qpn = qp->qpn;
	o->type = qp->type;
	o->state = qp->state;
	o->dest_qpn = a.dest_qp_num;
	o->cc_rate_bps = qp->priv ? ur_qp_cc_rate(qp) : 0;
	o->cc_window = qp->priv ? ur_qp_cc_window(qp) : 0;
	o->rate_limit_bps = (uint64_t)a.rate_limit * 1000;
	{
		const uint64_t *v = (const uint64_t *)&qp->cnt;

		for (unsigned int i = 0; i < sizeof(qp_names) / sizeof(qp_names[0]); i++)
			o->v[i] = v[i];
	}
	o->n_paths = qp->priv ? ur_qp_paths(qp) : 1;
	for (unsigned int i = 0; o->n_paths > 1 && i < o->n_paths &&
				 i < UROCE_STAT_MAX_PATHS; i++) {
		struct uroce_stat_path *op = &o->paths[i];
		struct ur_mp_path_cnt pc;
		unsigned int w;

		ur_qp_path_info(qp, i, &op->sport, &w, &pc);
		op->weight = (uint16_t)w;
		op->packets = pc.packets;
		op->losses = pc.losses;
		op->ecn = pc.ecn;
		op->late = pc.late;
		op->downs = pc.downs;
		op->probes = pc.probes;
	}
	ur_engine_qp_unlock(qp);
}

uint64_t ur__stats_publish(struct ur_engine *e, uint64_t now)
{
	struct ur_stats *s;
	struct uroce_stat_file *f;
	const uint64_t *dv = (const uint64_t *)&e->dev.cnt;
	uint64_t sum;
	uint32_t n = 0, total = 0;
	struct ur_cc_params cc;

	pthread_mutex_lock(&stats_lock);
	s = find(e);
	pthread_mutex_unlock(&stats_lock);
	if (!s)
		return UINT64_MAX;
	sum = e->dev.cnt.tx_packets + e->dev.cnt.rx_packets;
	if (now - s->last < UR_STATS_PERIOD_NS)
		return sum != s->last_sum ? s->last + UR_STATS_PERIOD_NS
					  : UINT64_MAX;
	s->last = now;
	s->last_sum = sum;
	f = s->f;
	__atomic_add_fetch(&f->seq, 1, __ATOMIC_ACQ_REL); /* odd: writing */
	f->time_ns = now;
	for (unsigned int i = 0; i < f->n_dev; i++)
		f->dev_v[i] = dv[i];
	cc = e->dev.cc;
	/* auto: each QP's algorithm is its peer's answer (ur_cc_neg.c);
	 * a QP under Swift shows its window (cwnd). */
	snprintf(f->cc, sizeof(f->cc), "%s",
		 e->dev.cc_auto ? "auto"
				: ur_cc_ops_of(cc.g_recip ? cc.algo
							  : UR_CC_DCQCN)->name);
	pthread_rwlock_rdlock(&e->qp_lock);
	for (uint32_t i = 0; i < e->qps.nb; i++)
		for (struct ur_map_node *m = e->qps.b[i]; m; m = m->next) {
			total++;
			if (n < UROCE_STAT_MAX_QPS)
				fill_qp(&f->qps[n++], m->val);
		}
	pthread_rwlock_unlock(&e->qp_lock);
	f->n_qps = n;
	f->qps_total = total;
	__atomic_add_fetch(&f->seq, 1, __ATOMIC_ACQ_REL); /* even: done */
	return UINT64_MAX;
}

void ur__stats_close(struct ur_engine *e)
{
	struct ur_stats *s = NULL;

	pthread_mutex_lock(&stats_lock);
	for (unsigned int i = 0; i < 64; i++)
		if (stats_tab[i] && stats_tab[i]->e == e) {
			s = stats_tab[i];
			stats_tab[i] = NULL;
		}
	pthread_mutex_unlock(&stats_lock);
	if (!s)
		return;
	unlink(s->path);
	munmap(s->f, sizeof(*s->f));
	free(s);
}

/* ---- UROCE_STATS=1: the counters on stderr ----------------------------- */
static bool stats_on(void)
{
	return ur_setting_val("UROCE_STATS") != 0;
}

/* UROCE_STATS=1: print the device counters when the context closes. */
void ur__stats_dump(const struct ur_engine *e)
{
	char buf[2048];
	size_t o;

	if (!stats_on())
		return;
	o = (size_t)snprintf(buf, sizeof(buf), "uroce: slot %u counters:", e->slot);
#define UR_X(n)                                                              \
	if (e->dev.cnt.n && o < sizeof(buf))                                 \
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, " %s=%llu", #n,  \
				      (unsigned long long)e->dev.cnt.n);
	UR_COUNTERS(UR_X)
#undef UR_X
	if (o > sizeof(buf) - 2)
		o = sizeof(buf) - 2;
	buf[o++] = '\n';
	/* One write: processes sharing a pipe (mpirun's ranks) do not
	 * interleave their lines. */
	if (write(STDERR_FILENO, buf, o) < 0)
		return;
}

/*
 * Contexts still open at exit print their counters too (UROCE_STATS): MPI
 * libraries and librdmacm's device list often never close theirs, and a
 * test must see what their traffic moved. The engine threads still run,
 * so the figures are a moment's snapshot.
 */
static pthread_mutex_t stats_open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ur_engine *stats_open[64];
static pthread_once_t stats_exit_once = PTHREAD_ONCE_INIT;

static void stats_at_exit(void)
{
	pthread_mutex_lock(&stats_open_lock);
	for (size_t i = 0; i < sizeof(stats_open) / sizeof(stats_open[0]); i++)
		if (stats_open[i])
			ur__stats_dump(stats_open[i]);
	pthread_mutex_unlock(&stats_open_lock);
}

static void stats_exit_register(void)
{
	atexit(stats_at_exit);
}

void ur__stats_track(struct ur_engine *e, bool open)
{
	if (!stats_on())
		return;
	pthread_once(&stats_exit_once, stats_exit_register);
	pthread_mutex_lock(&stats_open_lock);
	for (size_t i = 0; i < sizeof(stats_open) / sizeof(stats_open[0]); i++)
		if (stats_open[i] == (open ? NULL : e)) {
			stats_open[i] = open ? e : NULL;
			break;
		}
	pthread_mutex_unlock(&stats_open_lock);
}

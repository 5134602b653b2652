// SPDX-License-Identifier: MIT
/*
 * uroce-stat: the counters of every running uroce device context, as
 * `rdma statistic show` / `ethtool -S` show a NIC's. Each context publishes
 * them in /dev/shm/uroce-<pid>-<devname> (include/uroce/stat.h).
 *
 *   uroce-stat                 device and QP counters (non-zero ones)
 *   uroce-stat -a              all counters
 *   uroce-stat -w [-i 0.5]     every interval: rates per second
 *   uroce-stat -w --csv        per QP: time,pid,dev,qpn,tx/rx bit/s, DCQCN
 *                              rate, CNPs (for plots)
 * Only processes of its own network namespace, unless --all-netns.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uroce/stat.h>
#include "ur_units.h"

#define MAX_FILES 64

struct snap {
	char name[256];
	struct uroce_stat_file f; /* a consistent copy */
};

static bool opt_all, opt_csv, opt_all_netns;
static int opt_pid, other_netns; /* processes left out: another netns */
static const char *opt_dev;

static void usage(FILE *o)
{
	fprintf(o,
"Usage: uroce-stat [OPTIONS]\n"
"Show the counters of every running uroce process (device and per QP).\n"
"\n"
"  -a, --all            show counters that are zero too\n"
"  -p, --pid PID        only this process\n"
"  -d, --dev NAME       only this device (e.g. uroce0)\n"
"  -w, --watch          repeat every interval and print rates per second\n"
"  -i, --interval SEC   interval for --watch (default 1, e.g. 0.1)\n"
"  -c, --count N        stop after N intervals\n"
"      --all-netns      also processes of other network namespaces (by\n"
"                       default only this one's, as `rdma` shows only its\n"
"                       namespace's devices; /dev/shm is shared)\n"
"      --csv            with --watch: one CSV row per QP and interval:\n"
"                       time_s,pid,dev,addr,qpn,tx_bps,rx_bps,cc_rate_bps,\n"
"                       tx_cnp,rx_cnp,rx_ecn_ce,tx_retransmit\n"
"  -h, --help           this help\n"
"\n"
"Files: /dev/shm/uroce-<pid>-<dev>, written by each device context about\n"
"every 10 ms while it is busy; those of dead processes are ignored.\n");
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Counters formats this uroce-stat reads: the current one (stat.h) and
 * version 4, whose layout is the same but for the device table's size
 * (UROCE_STAT_V4_MAX_DEV), so a process of the build before the table
 * grew is still shown. Everything in a file lies in the order of struct
 * uroce_stat_file: the header up to the names, the device names, the QP
 * counters' names, the device values, then the QPs.
 */
#define UROCE_STAT_V4_MAX_DEV 96
#define HDR_BYTES offsetof(struct uroce_stat_file, dev_names)
#define QPC_NAMES_BYTES sizeof(((struct uroce_stat_file *)0)->qp_names)
#define QPS_BYTES sizeof(((struct uroce_stat_file *)0)->qps)

static size_t layout_size(uint32_t max_dev)
{
	return HDR_BYTES + max_dev * (UROCE_STAT_NAME_LEN + sizeof(uint64_t)) +
	       QPC_NAMES_BYTES + QPS_BYTES;
}

/* The device table's size of a format we read (0: one we do not). */
static uint32_t format_dev_max(uint32_t version, size_t size)
{
	if (version == UROCE_STAT_VERSION && size == sizeof(struct uroce_stat_file))
		return UROCE_STAT_MAX_DEV;
	if (version == 4 && size == layout_size(UROCE_STAT_V4_MAX_DEV))
		return UROCE_STAT_V4_MAX_DEV;
	return 0;
}

/* Unpack a file of @max_dev device counters into the current layout. */
static void unpack(struct uroce_stat_file *out, const unsigned char *in,
		   uint32_t max_dev)
{
	size_t nb = max_dev * (size_t)UROCE_STAT_NAME_LEN;

	if (max_dev == UROCE_STAT_MAX_DEV) {
		memcpy(out, in, sizeof(*out));
		return;
	}
	memset(out, 0, sizeof(*out));
	memcpy(out, in, HDR_BYTES);
	in += HDR_BYTES;
	memcpy(out->dev_names, in, nb);
	in += nb;
	memcpy(out->qp_names, in, QPC_NAMES_BYTES);
	in += QPC_NAMES_BYTES;
	memcpy(out->dev_v, in, max_dev * sizeof(uint64_t));
	in += max_dev * sizeof(uint64_t);
	memcpy(out->qps, in, QPS_BYTES);
}

/* A counters file of another uroce build (its layout or format differs):
 * say so, rather than skip it in silence (the header's first 16 bytes are
 * the same in every format: magic, version, pid). */
static bool other_build(int fd, const char *path, const struct stat *st)
{
	struct { uint64_t magic; uint32_t version, pid; } h;

	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    h.magic != UROCE_STAT_MAGIC)
		return false;
	if (format_dev_max(h.version, (size_t)st->st_size))
		return false;
	fprintf(stderr, "uroce-stat: %s: pid %u is a uroce of another build "
		"(counters format %u, %lld bytes; this uroce-stat reads format "
		"%u, %zu bytes, and 4, %zu bytes): skipped\n", path, h.pid,
		h.version, (long long)st->st_size, UROCE_STAT_VERSION,
		sizeof(struct uroce_stat_file),
		layout_size(UROCE_STAT_V4_MAX_DEV));
	return true;
}

/* Copy a file's contents consistently (seqlock). */
static int read_one(const char *path, struct uroce_stat_file *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	static unsigned char raw[sizeof(struct uroce_stat_file)];
	const struct uroce_stat_file *f;
	struct { uint64_t magic; uint32_t version, pid; } h;
	uint32_t max_dev;
	struct stat st;
	size_t size;
	int ret = -1;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || other_build(fd, path, &st) ||
	    pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    h.magic != UROCE_STAT_MAGIC ||
	    !(max_dev = format_dev_max(h.version, (size_t)st.st_size))) {
		close(fd);
		return -1;
	}
	size = (size_t)st.st_size;
	f = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (f == MAP_FAILED)
		return -1;
	/* seq lies in the header, the same place in every format. */
	for (int tries = 0; tries < 1000; tries++) {
		uint64_t s1 = __atomic_load_n(&f->seq, __ATOMIC_ACQUIRE), s2;

		if (s1 & 1) {
			usleep(50);
			continue;
		}
		memcpy(raw, f, size);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&f->seq, __ATOMIC_ACQUIRE);
		if (s1 == s2) {
			ret = 0;
			break;
		}
	}
	munmap((void *)f, size);
	if (ret)
		return ret;
	unpack(out, raw, max_dev);
	if (out->magic != UROCE_STAT_MAGIC || out->version != h.version ||
	    out->n_dev > max_dev || out->n_qpc > UROCE_STAT_MAX_QPC ||
	    out->n_qps > UROCE_STAT_MAX_QPS)
		ret = -1;
	return ret;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct snap *)a)->name,
		      ((const struct snap *)b)->name);
}

/* Is @pid in our network namespace? Unknown (no permission to read its
 * /proc entry) counts as yes: shown rather than hidden. */
static bool same_netns(int pid)
{
	char p[64], mine[64], its[64];
	ssize_t a, b;

	snprintf(p, sizeof(p), "/proc/%d/ns/net", pid);
	a = readlink("/proc/self/ns/net", mine, sizeof(mine));
	b = readlink(p, its, sizeof(its));
	if (a <= 0 || b <= 0)
		return true;
	return a == b && !memcmp(mine, its, (size_t)a);
}

/* Every live process's file of our network namespace (all with
 * --all-netns), sorted by name. */
static int scan(struct snap *s, int max)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *de;
	int n = 0;

	other_netns = 0;
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		char path[300];
		int pid;

		if (sscanf(de->d_name, UROCE_STAT_PREFIX "%d-", &pid) != 1 ||
		    pid <= 0)
			continue;
		if (kill(pid, 0) && errno == ESRCH)
			continue; /* stale: its process is gone */
		if (opt_pid && pid != opt_pid)
			continue;
		if (!opt_all_netns && !same_netns(pid)) {
			other_netns++;
			continue;
		}
		snprintf(path, sizeof(path), "/dev/shm/%s", de->d_name);
		if (read_one(path, &s[n].f))
			continue;
		if (opt_dev && strcmp(opt_dev, s[n].f.dev))
			continue;
		snprintf(s[n].name, sizeof(s[n].name), "%s", de->d_name);
		n++;
	}
	closedir(d);
	qsort(s, (size_t)n, sizeof(*s), cmp_name);
	return n;
}

static const char *qpt(uint32_t t)
{
	return t == 2 ? "RC" : t == 3 ? "UC" : t == 4 ? "UD" : "?";
}

static const char *qps(uint32_t s)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS",
					 "SQD", "SQE", "ERR" };

	return s < 7 ? n[s] : "?";
}

static void print_rate(const char *what, uint64_t bps)
{
	char b[UR_UNITS_LEN];

	if (bps)
		printf(" %s %s", what, ur_fmt_bps(b, sizeof(b), (double)bps));
	else
		printf(" %s -", what);
}

/* A counter's rate in the watch view: bytes in human units, the rest
 * (packets, events) as a plain number per second. */
static void print_per_s(const char *name, uint64_t d, double dt)
{
	size_t l = strlen(name);
	char b[UR_UNITS_LEN];

	if (l > 6 && !strcmp(name + l - 6, "_bytes"))
		printf(" %s %s", name, ur_fmt_Bps(b, sizeof(b), d / dt));
	else
		printf(" %s %.0f", name, d / dt);
}

/* What was looked for and not found, on stderr. */
static void none_found(void)
{
	if (opt_pid || opt_dev) {
		fprintf(stderr, "uroce-stat: no running uroce process");
		if (opt_pid)
			fprintf(stderr, " with pid %d", opt_pid);
		if (opt_dev)
			fprintf(stderr, "%s device %s", opt_pid ? " and" : " with",
				opt_dev);
		fprintf(stderr, "\n");
	} else {
		fprintf(stderr, "uroce-stat: no running uroce process found\n");
	}
	if (other_netns)
		fprintf(stderr, "uroce-stat: %d counters file(s) of processes in "
			"other network namespaces left out (--all-netns shows "
			"them)\n", other_netns);
}

static void show(const struct snap *s, int n)
{
	for (int i = 0; i < n; i++) {
		const struct uroce_stat_file *f = &s[i].f;
		int col = 0;

		printf("%s: pid %u dev %s addr %s cc %s qps %u\n", s[i].name,
		       f->pid, f->dev, f->addr, f->cc, f->qps_total);
		for (uint32_t k = 0; k < f->n_dev; k++) {
			if (!opt_all && !f->dev_v[k])
				continue;
			printf("%s%s %" PRIu64, col++ % 4 ? "  " : "    ",
			       f->dev_names[k], f->dev_v[k]);
			if (col % 4 == 0)
				printf("\n");
		}
		if (col % 4)
			printf("\n");
		for (uint32_t q = 0; q < f->n_qps; q++) {
			const struct uroce_stat_qp *p = &f->qps[q];

			printf("  qp 0x%06x %s %s -> 0x%06x", p->qpn, qpt(p->type),
			       qps(p->state), p->dest_qpn);
			print_rate("cc", p->cc_rate_bps);
			if (p->cc_window)
				printf(" cwnd %u", p->cc_window);
			print_rate("limit", p->rate_limit_bps);
			printf("\n");
			col = 0;
			for (uint32_t k = 0; k < f->n_qpc; k++) {
				if (!opt_all && !p->v[k])
					continue;
				printf("%s%s %" PRIu64,
				       col++ % 4 ? "  " : "      ",
				       f->qp_names[k], p->v[k]);
				if (col % 4 == 0)
					printf("\n");
			}
			if (col % 4)
				printf("\n");
			for (uint32_t k = 0; p->n_paths > 1 && k < p->n_paths &&
					     k < UROCE_STAT_MAX_PATHS; k++)
				printf("      path %u sport %u weight %u packets %"
				       PRIu64 " losses %u ecn %u late %u downs %u"
				       " probes %u\n", k,
				       p->paths[k].sport, p->paths[k].weight,
				       p->paths[k].packets, p->paths[k].losses,
				       p->paths[k].ecn, p->paths[k].late,
				       p->paths[k].downs, p->paths[k].probes);
		}
	}
}

static int qidx(const struct uroce_stat_file *f, const char *name)
{
	for (uint32_t k = 0; k < f->n_qpc; k++)
		if (!strcmp(f->qp_names[k], name))
			return (int)k;
	return -1;
}

static const struct snap *prev_of(const struct snap *p, int np,
				  const struct snap *s)
{
	for (int i = 0; i < np; i++)
		if (!strcmp(p[i].name, s->name))
			return &p[i];
	return NULL;
}

static const struct uroce_stat_qp *prev_qp(const struct uroce_stat_file *f,
					   uint32_t qpn)
{
	for (uint32_t q = 0; q < f->n_qps; q++)
		if (f->qps[q].qpn == qpn)
			return &f->qps[q];
	return NULL;
}

static void watch_rates(const struct snap *p, int np, const struct snap *s,
			int n, double t, double dt)
{
	for (int i = 0; i < n; i++) {
		const struct snap *o = prev_of(p, np, &s[i]);
		const struct uroce_stat_file *f = &s[i].f;
		int itx = qidx(f, "tx_bytes"), irx = qidx(f, "rx_bytes");
		int icnp = qidx(f, "tx_cnp"), ircnp = qidx(f, "rx_cnp");
		int ice = qidx(f, "rx_ecn_ce"), irt = qidx(f, "tx_retransmit");

		if (!o)
			continue;
		if (opt_csv) {
			for (uint32_t q = 0; q < f->n_qps; q++) {
				const struct uroce_stat_qp *c = &f->qps[q];
				const struct uroce_stat_qp *b =
					prev_qp(&o->f, c->qpn);

				if (!b || itx < 0 || irx < 0)
					continue;
				printf("%.3f,%u,%s,%s,0x%06x,%.0f,%.0f,%" PRIu64
				       ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
				       ",%" PRIu64 "\n",
				       t, f->pid, f->dev, f->addr, c->qpn,
				       (c->v[itx] - b->v[itx]) * 8 / dt,
				       (c->v[irx] - b->v[irx]) * 8 / dt,
				       c->cc_rate_bps, c->v[icnp], c->v[ircnp],
				       c->v[ice], c->v[irt]);
			}
			continue;
		}
		printf("%s (per second):", s[i].name);
		for (uint32_t k = 0; k < f->n_dev; k++) {
			uint64_t d = f->dev_v[k] - o->f.dev_v[k];

			if (d || opt_all)
				print_per_s(f->dev_names[k], d, dt);
		}
		printf("\n");
		for (uint32_t q = 0; q < f->n_qps; q++) {
			const struct uroce_stat_qp *c = &f->qps[q];
			const struct uroce_stat_qp *b = prev_qp(&o->f, c->qpn);

			if (!b)
				continue;
			printf("  qp 0x%06x", c->qpn);
			print_rate("cc", c->cc_rate_bps);
			for (uint32_t k = 0; k < f->n_qpc; k++) {
				uint64_t d = c->v[k] - b->v[k];

				if (d || opt_all)
					print_per_s(f->qp_names[k], d, dt);
			}
			printf("\n");
		}
	}
	fflush(stdout);
}

static int bad_arg(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "uroce-stat: %s '%s': expected %s\n", opt, val, want);
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "pid", required_argument, NULL, 'p' },
		{ "dev", required_argument, NULL, 'd' },
		{ "watch", no_argument, NULL, 'w' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'c' },
		{ "csv", no_argument, NULL, 'C' },
		{ "all-netns", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct snap a[MAX_FILES], b[MAX_FILES];
	struct snap *cur = a, *prev = b;
	double interval = 1, t0, tp;
	bool watch = false;
	long count = -1;
	int c, n, np;

	while ((c = getopt_long(argc, argv, "ap:d:wi:c:h", lo, NULL)) != -1) {
		char *end = NULL;

		switch (c) {
		case 'a': opt_all = true; break;
		case 'p':
			errno = 0;
			opt_pid = (int)strtol(optarg, &end, 10);
			if (errno || *end || opt_pid <= 0)
				return bad_arg("-p/--pid", optarg,
					       "a process ID (a positive integer)");
			break;
		case 'd': opt_dev = optarg; break;
		case 'w': watch = true; break;
		case 'i':
			interval = strtod(optarg, &end);
			if (*end || !(interval >= 0.001 && interval <= 3600))
				return bad_arg("-i/--interval", optarg,
					       "seconds from 0.001 to 3600");
			break;
		case 'c':
			errno = 0;
			count = strtol(optarg, &end, 10);
			if (errno || *end || count <= 0)
				return bad_arg("-c/--count", optarg,
					       "a positive number of intervals");
			break;
		case 'C': opt_csv = true; break;
		case 'N': opt_all_netns = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uroce-stat: unexpected argument '%s'\n",
			argv[optind]);
		return 2;
	}
	if (!watch && (opt_csv || count >= 0)) {
		fprintf(stderr, "uroce-stat: %s needs -w/--watch\n",
			opt_csv ? "--csv" : "-c/--count");
		return 2;
	}
	if (!watch) {
		n = scan(a, MAX_FILES);
		if (!n) {
			none_found();
			return 1;
		}
		show(a, n);
		return 0;
	}
	/* A monitor: with nothing running yet it waits for processes. */
	if (opt_csv)
		printf("time_s,pid,dev,addr,qpn,tx_bps,rx_bps,cc_rate_bps,tx_cnp,"
		       "rx_cnp,rx_ecn_ce,tx_retransmit\n");
	t0 = tp = mono();
	np = scan(prev, MAX_FILES);
	while (count < 0 || count-- > 0) {
		double now, next = tp + interval;
		struct snap *tmp;

		while ((now = mono()) < next)
			usleep((useconds_t)((next - now) * 1e6) + 1);
		n = scan(cur, MAX_FILES);
		watch_rates(prev, np, cur, n, now - t0, now - tp);
		tp = now;
		tmp = prev;
		prev = cur;
		cur = tmp;
		np = n;
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * uroce-coll-perf: collective bandwidth, nccl-tests style.
 *   uroce-launch -n 4 uroce-coll-perf -b 8 -e 64M -f 2 -o allreduce -d float -c 1
 * Size is the largest buffer in bytes (nccl-tests' convention): the vector
 * for allreduce/reduce/broadcast, the gathered output for allgather, the
 * input for reducescatter, the whole send buffer for alltoall(v).
 * algbw = size / time; busbw = algbw * factor: allreduce 2(n-1)/n,
 * allgather/reducescatter/alltoall(v) (n-1)/n, broadcast/reduce 1.
 * Time is the slowest rank's average per iteration.
 * The table on stdout is for programs (nccl-tests' columns, unchanged);
 * progress lines, for people, go to stderr: after each size with -P, else
 * when 2 s have passed since the last one.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "uroce/coll.h"
#include "ur_units.h"

enum op { ALLREDUCE, REDUCE, BROADCAST, ALLGATHER, REDUCESCATTER, ALLTOALL, ALLTOALLV, NOPS };
static const char *const op_names[NOPS] = { "allreduce", "reduce", "broadcast", "allgather",
					    "reducescatter", "alltoall", "alltoallv" };

struct cfg {
	size_t minb, maxb;
	double factor;
	long step;
	int iters, warmup, check, root, inplace, calls, progress;
	enum op op;
	enum uroce_dtype dt;
	enum uroce_redop redop;
};

/* A size with an optional K/M/G suffix; false if @s is not one. */
static bool parse_size(const char *s, size_t *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || v < 0)
		return false;
	switch (*end) {
	case 'G': case 'g': v *= 1024; /* fall through */
	case 'M': case 'm': v *= 1024; /* fall through */
	case 'K': case 'k': v *= 1024; end++; break;
	default: break;
	}
	if ((*end == 'B' || *end == 'b') && end[1] == 0)
		end++;
	if (*end || v > (double)(1ull << 40))
		return false;
	*out = (size_t)v;
	return true;
}

static bool parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return end != s && !*end && !errno && *out >= lo && *out <= hi;
}

/* Under uroce-launch every rank parses the same arguments: only rank 0
 * (or a rank-less run) says what is wrong. */
static int arg_error(const char *fmt, ...)
{
	const char *r = getenv("RANK");
	va_list ap;

	if (r && atoi(r) != 0)
		return 2;
	fprintf(stderr, "uroce-coll-perf: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (--help lists the options)\n");
	return 2;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: uroce-launch -n N uroce-coll-perf [options]\n"
		"  -b, --minbytes SIZE   smallest size (default 32M; K/M/G suffixes)\n"
		"  -e, --maxbytes SIZE   largest size (default 32M)\n"
		"  -f, --stepfactor F    multiply the size by F (default 2)\n"
		"  -i, --stepbytes N     or add N bytes\n"
		"  -n, --iters N         timed iterations (default 20)\n"
		"  -w, --warmup_iters N  warm-up iterations (default 5)\n"
		"  -o, --op NAME         allreduce reduce broadcast allgather reducescatter\n"
		"                        alltoall alltoallv (default allreduce)\n"
		"  -d, --datatype T      float32 float64 float16 bfloat16 int32 int64 uint8\n"
		"  -R, --redop OP        sum prod min max avg (default sum)\n"
		"  -r, --root N          root of reduce/broadcast (default 0)\n"
		"  -c, --check 0/1       check results (default 0)\n"
		"  -I, --inplace         in place instead of out of place\n"
		"  -C, --call_times      also print each call's time on rank 0 (warm-up first)\n"
		"  -P, --progress        a progress line (stderr) after every size; without it,\n"
		"                        one every 2 s of a long run\n"
		"  -h, --help\n"
		"Algorithm: UROCE_COLL_ALGO=ring|rabenseifner|recursive_doubling|tree|bruck|\n"
		"  recursive_halving|... (docs/collectives.md)\n");
}

/* The size after @sz: at least one byte more. */
static size_t next_size(const struct cfg *c, size_t sz)
{
	size_t nx = c->step ? sz + (size_t)c->step
			    : sz ? (size_t)(sz * c->factor) : 1;

	return nx > sz ? nx : sz + 1;
}

/* A size's share of the run, for the time-left estimate: its calls, each
 * a fixed cost (~the time 64 KiB takes) plus its bytes. */
static double size_work(const struct cfg *c, size_t sz)
{
	return (double)(c->warmup + c->iters + 2 * c->check + 1) *
	       ((double)sz + 65536);
}

/* Integer-valued inputs keep sums exact in every float type we check. */
static double input(int rank, size_t i)
{
	return (double)((rank * 7 + (long)(i % 1000003) * 13) % 9) - 4;
}

static double combine(enum uroce_redop op, double a, double b)
{
	switch (op) {
	case UROCE_PROD: return a * b;
	case UROCE_MIN: return a < b ? a : b;
	case UROCE_MAX: return a > b ? a : b;
	default: return a + b;
	}
}

/* uint8 holds the inputs -4..-1 as 252..255: reduce what the buffers
 * hold, in uint8 arithmetic (sums and products wrap; avg divides the
 * wrapped sum). */
static double expect_reduced_u8(const struct cfg *c, int n, size_t i)
{
	uint8_t v = (uint8_t)(int)input(0, i);

	for (int r = 1; r < n; r++) {
		uint8_t x = (uint8_t)(int)input(r, i);

		switch (c->redop) {
		case UROCE_PROD: v = (uint8_t)(v * x); break;
		case UROCE_MIN: v = x < v ? x : v; break;
		case UROCE_MAX: v = x > v ? x : v; break;
		default: v = (uint8_t)(v + x); break;
		}
	}
	return c->redop == UROCE_AVG ? (double)(v / n) : v;
}

static double expect_reduced(const struct cfg *c, int n, size_t i)
{
	double v = input(0, i);

	if (c->dt == UROCE_UINT8)
		return expect_reduced_u8(c, n, i);
	for (int r = 1; r < n; r++)
		v = combine(c->redop, v, input(r, i));
	if (c->redop == UROCE_AVG)
		v = c->dt >= UROCE_INT32 ? trunc(v / n) : v / n;
	return v;
}

static size_t cnt_v(size_t base, int src, int dst)
{
	return base ? base - 1 + (size_t)((src + dst) % 3) : 0;
}

struct bufs {
	char *send, *recv;
	size_t scount, rcount; /* elements */
	size_t *sc, *sd, *rc, *rd;
};

static void setup(const struct cfg *c, int n, int rank, size_t count, struct bufs *b)
{
	size_t es = uroce_dtype_size(c->dt);

	switch (c->op) {
	case ALLREDUCE: case REDUCE: case BROADCAST:
		b->scount = b->rcount = count; break;
	case ALLGATHER:
		b->scount = count; b->rcount = count * n; break;
	case REDUCESCATTER:
		b->scount = count * n; b->rcount = count; break;
	case ALLTOALL:
		b->scount = b->rcount = count * n; break;
	case ALLTOALLV: {
		size_t so = 0, ro = 0;
		for (int j = 0; j < n; j++) {
			b->sc[j] = cnt_v(count, rank, j); b->sd[j] = so; so += b->sc[j];
			b->rc[j] = cnt_v(count, j, rank); b->rd[j] = ro; ro += b->rc[j];
		}
		b->scount = so; b->rcount = ro;
		break;
	}
	default: break;
	}
	for (size_t i = 0; i < b->scount; i++)
		uroce_dtype_set(c->dt, b->send, i, c->op == ALLTOALL || c->op == ALLTOALLV ?
				(double)((rank * 5 + (long)i) % 7) : input(rank, i));
	memset(b->recv, 0, b->rcount * es);
	if (c->inplace)
		memcpy(c->op == ALLGATHER ? b->recv + (size_t)rank * count * es : b->recv,
		       b->send, b->scount * es);
}

static int run(uroce_comm_t *comm, const struct cfg *c, size_t count, struct bufs *b)
{
	int rank = uroce_comm_rank(comm);
	size_t es = uroce_dtype_size(c->dt);
	const char *s = b->send;
	char *r = b->recv;

	if (c->inplace) {
		s = r;
		if (c->op == ALLGATHER)
			s = r + (size_t)rank * count * es;
		if (c->op == REDUCESCATTER) {
			s = b->send;
			r = b->send + (size_t)rank * count * es;
		}
	}
	switch (c->op) {
	case ALLREDUCE: return uroce_allreduce(comm, s, r, count, c->dt, c->redop);
	case REDUCE: return uroce_reduce(comm, s, r, count, c->dt, c->redop, c->root);
	case BROADCAST: return uroce_broadcast(comm, s, r, count, c->dt, c->root);
	case ALLGATHER: return uroce_allgather(comm, s, r, count, c->dt);
	case REDUCESCATTER: return uroce_reduce_scatter(comm, s, r, count, c->dt, c->redop);
	case ALLTOALL: return uroce_alltoall(comm, s, r, count, c->dt);
	case ALLTOALLV: return uroce_alltoallv(comm, s, b->sc, b->sd, r, b->rc, b->rd, c->dt);
	default: return -EINVAL;
	}
}

static long check(uroce_comm_t *comm, const struct cfg *c, size_t count, struct bufs *b)
{
	int n = uroce_comm_size(comm), rank = uroce_comm_rank(comm);
	size_t es = uroce_dtype_size(c->dt);
	const char *out = b->recv;
	double tol = c->dt == UROCE_FLOAT16 ? 1e-2 : c->dt == UROCE_BFLOAT16 ? 4e-2 :
		     c->dt == UROCE_FLOAT32 ? 1e-6 : 0;
	long wrong = 0;

	if (c->inplace && c->op == REDUCESCATTER)
		out = b->send + (size_t)rank * count * es;
	for (size_t i = 0; i < b->rcount; i++) {
		double want, got;

		switch (c->op) {
		case ALLREDUCE: want = expect_reduced(c, n, i); break;
		case REDUCE:
			if (rank != c->root)
				return 0;
			want = expect_reduced(c, n, i);
			break;
		case BROADCAST: want = input(c->root, i); break;
		case ALLGATHER: want = input((int)(i / count), i % count); break;
		case REDUCESCATTER: want = expect_reduced(c, n, (size_t)rank * count + i); break;
		case ALLTOALL: {
			int src = (int)(i / count);
			want = (double)((src * 5 + (long)(rank * count + i % count)) % 7);
			break;
		}
		case ALLTOALLV: {
			int src = 0;
			while (src + 1 < n && b->rd[src + 1] <= i)
				src++;
			size_t off = 0;
			for (int j = 0; j < rank; j++)
				off += cnt_v(count, src, j);
			want = (double)((src * 5 + (long)(off + i - b->rd[src])) % 7);
			break;
		}
		default: want = 0;
		}
		if (c->dt == UROCE_FLOAT16 || c->dt == UROCE_BFLOAT16 || c->dt == UROCE_UINT8 ||
		    c->dt == UROCE_INT32) {
			char tmp[8];
			uroce_dtype_set(c->dt, tmp, 0, want);
			if (c->dt >= UROCE_INT32 || c->redop != UROCE_PROD)
				want = uroce_dtype_get(c->dt, tmp, 0);
		}
		got = uroce_dtype_get(c->dt, out, i);
		if (fabs(got - want) > tol * (fabs(want) > 1 ? fabs(want) : 1) * n) {
			if (wrong++ < 3)
				fprintf(stderr, "rank %d: %s %s count %zu: element %zu is %g, want %g\n",
					rank, op_names[c->op], uroce_dtype_name(c->dt), count, i,
					got, want);
		}
	}
	return wrong;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "minbytes", 1, 0, 'b' }, { "maxbytes", 1, 0, 'e' },
		{ "stepfactor", 1, 0, 'f' }, { "stepbytes", 1, 0, 'i' },
		{ "iters", 1, 0, 'n' }, { "warmup_iters", 1, 0, 'w' },
		{ "op", 1, 0, 'o' }, { "datatype", 1, 0, 'd' }, { "redop", 1, 0, 'R' },
		{ "root", 1, 0, 'r' }, { "check", 1, 0, 'c' }, { "inplace", 0, 0, 'I' },
		{ "call_times", 0, 0, 'C' }, { "progress", 0, 0, 'P' },
		{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
	struct cfg c = { .minb = 32u << 20, .maxb = 32u << 20, .factor = 2,
			 .iters = 20, .warmup = 5, .op = ALLREDUCE,
			 .dt = UROCE_FLOAT32, .redop = UROCE_SUM };
	uroce_comm_t *comm;
	int ch, e, n, rank;
	long wrong_total = 0;

	while ((ch = getopt_long(argc, argv, "b:e:f:i:n:w:o:d:R:r:c:ICPh", opts, NULL)) != -1) {
		long v;
		char *end;

		switch (ch) {
		case 'b':
			if (!parse_size(optarg, &c.minb))
				return arg_error("-b/--minbytes '%s': expected a size in bytes (K, M, G suffixes)", optarg);
			break;
		case 'e':
			if (!parse_size(optarg, &c.maxb))
				return arg_error("-e/--maxbytes '%s': expected a size in bytes (K, M, G suffixes)", optarg);
			break;
		case 'f':
			c.factor = strtod(optarg, &end);
			if (end == optarg || *end || !(c.factor > 1))
				return arg_error("-f/--stepfactor '%s': expected a number above 1", optarg);
			break;
		case 'i':
			if (!parse_int(optarg, 1, 1l << 40, &c.step))
				return arg_error("-i/--stepbytes '%s': expected a positive number of bytes", optarg);
			break;
		case 'n':
			if (!parse_int(optarg, 1, 1000000000, &v))
				return arg_error("-n/--iters '%s': expected a positive number of iterations", optarg);
			c.iters = (int)v;
			break;
		case 'w':
			if (!parse_int(optarg, 0, 1000000000, &v))
				return arg_error("-w/--warmup_iters '%s': expected a number of iterations (0 or more)", optarg);
			c.warmup = (int)v;
			break;
		case 'r':
			if (!parse_int(optarg, 0, 1 << 30, &v))
				return arg_error("-r/--root '%s': expected a rank (0 or more)", optarg);
			c.root = (int)v;
			break;
		case 'c':
			if (!parse_int(optarg, 0, 1, &v))
				return arg_error("-c/--check '%s': expected 0 or 1", optarg);
			c.check = (int)v;
			break;
		case 'I': c.inplace = 1; break;
		case 'C': c.calls = 1; break;
		case 'P': c.progress = 1; break;
		case 'o': {
			int k;
			for (k = 0; k < NOPS && strcmp(optarg, op_names[k]); k++)
				;
			if (k == NOPS)
				return arg_error("-o/--op '%s': expected allreduce, reduce, broadcast, allgather, reducescatter, alltoall or alltoallv", optarg);
			c.op = (enum op)k;
			break;
		}
		case 'd':
			if ((e = uroce_dtype_parse(optarg)) < 0)
				return arg_error("-d/--datatype '%s': expected float32, float64, float16, bfloat16, int32, int64 or uint8", optarg);
			c.dt = (enum uroce_dtype)e;
			break;
		case 'R':
			if ((e = uroce_redop_parse(optarg)) < 0)
				return arg_error("-R/--redop '%s': expected sum, prod, min, max or avg", optarg);
			c.redop = (enum uroce_redop)e;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc)
		return arg_error("unexpected argument '%s'", argv[optind]);
	if (c.minb > c.maxb)
		return arg_error("-b/--minbytes %zu is above -e/--maxbytes %zu",
				 c.minb, c.maxb);
	e = uroce_comm_init(&comm, NULL);
	if (e) {
		fprintf(stderr, "uroce-coll-perf: init failed: %s\n", strerror(-e));
		return 1;
	}
	n = uroce_comm_size(comm);
	rank = uroce_comm_rank(comm);
	if (c.root >= n) {
		fprintf(stderr, "uroce-coll-perf: root %d >= %d ranks\n", c.root, n);
		return 2;
	}
	size_t es = uroce_dtype_size(c.dt);
	double bus = c.op == ALLREDUCE ? 2.0 * (n - 1) / n :
		     (c.op == REDUCE || c.op == BROADCAST) ? 1.0 : (double)(n - 1) / n;
	/* Room for the largest size plus alltoallv's skew. */
	size_t cap = c.maxb + (size_t)n * 3 * es + 64;
	struct bufs b = { malloc(cap), malloc(cap), 0, 0, calloc(n, sizeof(size_t)),
			  calloc(n, sizeof(size_t)), calloc(n, sizeof(size_t)),
			  calloc(n, sizeof(size_t)) };
	if (!b.send || !b.recv || !b.sc || !b.sd || !b.rc || !b.rd) {
		fprintf(stderr, "uroce-coll-perf: out of memory\n");
		return 1;
	}
	if (rank == 0) {
		printf("# uroce-coll-perf: %s, %d ranks, type %s, redop %s, root %d, %s, iters %d, warmup %d\n",
		       op_names[c.op], n, uroce_dtype_name(c.dt), uroce_redop_name(c.redop),
		       c.root, c.inplace ? "in place" : "out of place", c.iters, c.warmup);
		printf("#%11s %12s %9s %6s %5s %12s %9s %9s %7s %s\n", "size", "count", "type",
		       "redop", "root", "time(us)", "algbw", "busbw", "#wrong", "algo");
		printf("#%11s %12s %9s %6s %5s %12s %9s %9s %7s\n", "(B)", "(elements)", "", "",
		       "", "", "(GB/s)", "(GB/s)", "");
	}
	double work_total = 0, work_done = 0, t_start = now_s(), t_told = t_start;
	int nsizes = 0, isize = 0;

	for (size_t sz = c.minb; sz <= c.maxb; sz = next_size(&c, sz)) {
		work_total += size_work(&c, sz);
		nsizes++;
	}
	for (size_t sz = c.minb; sz <= c.maxb;) {
		size_t div = (c.op == ALLREDUCE || c.op == REDUCE || c.op == BROADCAST) ? 1 : (size_t)n;
		size_t count = sz / es / div;
		long wrong = 0;

		setup(&c, n, rank, count, &b);
		if (c.check) {
			e = run(comm, &c, count, &b);
			if (!e)
				wrong = check(comm, &c, count, &b);
			setup(&c, n, rank, count, &b);
		}
		double *ct = c.calls ? calloc((size_t)(c.warmup + c.iters), sizeof(*ct)) : NULL;
		for (int i = 0; !e && i < c.warmup; i++) {
			double a = now_s();

			e = run(comm, &c, count, &b);
			if (ct)
				ct[i] = (now_s() - a) * 1e6;
		}
		if (!e)
			e = uroce_barrier(comm);
		double t0 = now_s();
		for (int i = 0; !e && i < c.iters; i++) {
			double a = ct ? now_s() : 0;

			e = run(comm, &c, count, &b);
			if (ct)
				ct[c.warmup + i] = (now_s() - a) * 1e6;
		}
		double t[2] = { (now_s() - t0) / c.iters * 1e6, (double)wrong };
		const char *algo = uroce_comm_last_algo(comm);
		if (!e)
			e = uroce_allreduce(comm, t, t, 2, UROCE_FLOAT64, UROCE_MAX);
		if (e) {
			fprintf(stderr, "uroce-coll-perf: rank %d: %s failed: %s\n", rank,
				op_names[c.op], uroce_comm_strerror(comm));
			return 1;
		}
		wrong_total += (long)t[1];
		size_t bytes = count * es * div;
		if (rank == 0) {
			double alg = t[0] > 0 ? bytes / t[0] / 1e3 : 0;
			char w[24] = "N/A";
			if (c.check)
				snprintf(w, sizeof(w), "%ld", (long)t[1]);
			printf("%12zu %12zu %9s %6s %5d %12.1f %9.4f %9.4f %7s %s\n", bytes, count,
			       uroce_dtype_name(c.dt), uroce_redop_name(c.redop),
			       (c.op == REDUCE || c.op == BROADCAST) ? c.root : -1, t[0], alg,
			       alg * bus, w, algo);
			if (ct) {
				printf("# calls of %zu B (us, rank 0; %d warm-up, then %d timed):",
				       bytes, c.warmup, c.iters);
				for (int i = 0; i < c.warmup + c.iters; i++)
					printf(" %.1f", ct[i]);
				printf("\n");
			}
			fflush(stdout);
		}
		free(ct);
		work_done += size_work(&c, sz);
		isize++;
		if (rank == 0 && isize < nsizes &&
		    (c.progress || now_s() - t_told >= 2)) {
			char a[UR_UNITS_LEN], p[128];

			t_told = now_s();
			fprintf(stderr, "uroce-coll-perf: size %s done (%d of %d): %s\n",
				ur_fmt_bytes(a, sizeof(a), (double)bytes), isize, nsizes,
				ur_fmt_progress(p, sizeof(p), work_done, work_total,
						(uint64_t)((t_told - t_start) * 1e9)));
		}
		sz = next_size(&c, sz);
	}
	if (rank == 0)
		printf("# Out of bounds values : %ld %s\n", wrong_total, wrong_total ? "FAILED" : "OK");
	uroce_comm_destroy(comm);
	free(b.send);
	free(b.recv);
	free(b.sc);
	free(b.sd);
	free(b.rc);
	free(b.rd);
	return wrong_total ? 1 : 0;
}

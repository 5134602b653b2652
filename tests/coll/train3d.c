/* SPDX-License-Identifier: MIT */
/*
 * A toy training step on 8 ranks, data x tensor x pipeline parallel
 * (2 x 2 x 2), built from sub-communicators; written once and compiled
 * twice: train3d (uroce, under uroce-launch) and train3d_mpi (Open MPI,
 * -DUR_USE_MPI, under mpirun). Each rank writes every buffer it ends with
 * to DIR/RANK; tests/coll/train3d.sh compares the two runs byte for byte.
 *   train3d DIR
 * Rank r: tp = r % 2, pp = (r / 2) % 2, dp = r / 4. Groups by split: TP
 * (same dp, pp), PP (same dp, tp), DP (same pp, tp), and an expert group
 * of the 4 ranks of a pipeline stage (MoE all-to-all). Values are small
 * integers in float32, so sums are exact in any order and both libraries
 * must agree bit for bit.
 * Forward: stage 0 computes a TP-partial activation, TP allreduce, MoE
 * all-to-all in the expert group, sends it to stage 1 (PP group, a send
 * and a receive in one group); stage 1 TP-allgathers what it received,
 * computes a gradient, sends it back. Backward: every rank's weight
 * gradient is DP-allreduced without blocking while the "backward compute"
 * runs, then TP reduce-scattered; a TP broadcast and a PP barrier end it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H 1536 /* activation elements per rank */

#ifdef UR_USE_MPI
#include <mpi.h>
typedef MPI_Comm comm_t;
typedef MPI_Request req_t;
static comm_t world(int *argc, char ***argv)
{
	MPI_Init(argc, argv);
	return MPI_COMM_WORLD;
}
static int rank_of(comm_t c) { int r; MPI_Comm_rank(c, &r); return r; }
static int size_of(comm_t c) { int n; MPI_Comm_size(c, &n); return n; }
static comm_t split(comm_t c, int color, int key)
{
	comm_t s;
	MPI_Comm_split(c, color, key, &s);
	return s;
}
static int allreduce(comm_t c, float *s, float *d, size_t n)
{
	/* MPI names in place explicitly. */
	return MPI_Allreduce(s == d ? MPI_IN_PLACE : s, d, (int)n, MPI_FLOAT, MPI_SUM, c);
}
static int iallreduce(comm_t c, float *s, float *d, size_t n, req_t *q)
{
	return MPI_Iallreduce(s, d, (int)n, MPI_FLOAT, MPI_SUM, c, q);
}
static int wait_req(req_t *q) { return MPI_Wait(q, MPI_STATUS_IGNORE); }
static int alltoall(comm_t c, float *s, float *d, size_t n)
{
	return MPI_Alltoall(s, (int)n, MPI_FLOAT, d, (int)n, MPI_FLOAT, c);
}
static int allgather(comm_t c, float *s, float *d, size_t n)
{
	return MPI_Allgather(s, (int)n, MPI_FLOAT, d, (int)n, MPI_FLOAT, c);
}
static int reduce_scatter(comm_t c, float *s, float *d, size_t n)
{
	return MPI_Reduce_scatter_block(s, d, (int)n, MPI_FLOAT, MPI_SUM, c);
}
static int bcast(comm_t c, float *b, size_t n, int root)
{
	return MPI_Bcast(b, (int)n, MPI_FLOAT, root, c);
}
static int sendrecv(comm_t c, float *s, float *d, size_t n, int peer, int tag)
{
	return MPI_Sendrecv(s, (int)n, MPI_FLOAT, peer, tag, d, (int)n, MPI_FLOAT,
			    peer, tag, c, MPI_STATUS_IGNORE);
}
static int barrier(comm_t c) { return MPI_Barrier(c); }
static void fini(comm_t w) { (void)w; MPI_Finalize(); }
static void drop(comm_t *c) { MPI_Comm_free(c); }
#else
#include <uroce/coll.h>
typedef uroce_comm_t *comm_t;
typedef uroce_request_t *req_t;
static comm_t world(int *argc, char ***argv)
{
	comm_t c;
	(void)argc;
	(void)argv;
	if (uroce_comm_init(&c, NULL))
		exit(1);
	return c;
}
static int rank_of(comm_t c) { return uroce_comm_rank(c); }
static int size_of(comm_t c) { return uroce_comm_size(c); }
static comm_t split(comm_t c, int color, int key)
{
	comm_t s = NULL;
	if (uroce_comm_split(c, color, key, &s) || !s) {
		fprintf(stderr, "train3d: split failed: %s\n", uroce_comm_strerror(c));
		exit(1);
	}
	return s;
}
static int allreduce(comm_t c, float *s, float *d, size_t n)
{
	return uroce_allreduce(c, s, d, n, UROCE_FLOAT32, UROCE_SUM);
}
static int iallreduce(comm_t c, float *s, float *d, size_t n, req_t *q)
{
	return uroce_iallreduce(c, s, d, n, UROCE_FLOAT32, UROCE_SUM, q);
}
static int wait_req(req_t *q) { return uroce_wait(q); }
static int alltoall(comm_t c, float *s, float *d, size_t n)
{
	return uroce_alltoall(c, s, d, n, UROCE_FLOAT32);
}
static int allgather(comm_t c, float *s, float *d, size_t n)
{
	return uroce_allgather(c, s, d, n, UROCE_FLOAT32);
}
static int reduce_scatter(comm_t c, float *s, float *d, size_t n)
{
	return uroce_reduce_scatter(c, s, d, n, UROCE_FLOAT32, UROCE_SUM);
}
static int bcast(comm_t c, float *b, size_t n, int root)
{
	return uroce_broadcast(c, b, b, n, UROCE_FLOAT32, root);
}
/* A pipeline exchange: both directions in one group. */
static int sendrecv(comm_t c, float *s, float *d, size_t n, int peer, int tag)
{
	req_t q[2];
	int e = uroce_group_start(c);

	if (!e)
		e = uroce_isend(c, s, n, UROCE_FLOAT32, peer, tag, &q[0]);
	if (!e)
		e = uroce_irecv(c, d, n, UROCE_FLOAT32, peer, tag, &q[1]);
	if (uroce_group_end(c) || e)
		return -1;
	return uroce_waitall(2, q);
}
static int barrier(comm_t c) { return uroce_barrier(c); }
static void fini(comm_t w) { uroce_comm_destroy(w); }
static void drop(comm_t *c) { uroce_comm_destroy(*c); }
#endif

static FILE *out;
static int failed;

static void check(int e, const char *what)
{
	if (e) {
		fprintf(stderr, "train3d: %s failed (%d)\n", what, e);
		failed = 1;
	}
}

static void dump(const char *name, const float *b, size_t n)
{
	fprintf(out, "%s %zu\n", name, n);
	fwrite(b, sizeof(float), n, out);
	fputc('\n', out);
}

/* Small integers: products and sums of a few stay exact in float32. */
static float val(int a, int b, size_t i)
{
	return (float)((int)((a * 31 + b * 17 + (int)(i % 613) * 7) % 29) - 14);
}

int main(int argc, char **argv)
{
	comm_t w = world(&argc, &argv);
	int r = rank_of(w), n = size_of(w);
	char path[512];

	if (argc < 2 || n != 8) {
		if (!r)
			fprintf(stderr, "usage: train3d DIR (8 ranks, have %d)\n", n);
		fini(w);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/%d", argv[1], r);
	out = fopen(path, "wb");
	if (!out) {
		perror(path);
		return 1;
	}
	int tp = r % 2, pp = (r / 2) % 2, dp = r / 4;
	comm_t tpc = split(w, dp * 2 + pp, tp);
	comm_t ppc = split(w, dp * 2 + tp, pp);
	comm_t dpc = split(w, pp * 2 + tp, dp);
	comm_t epc = split(w, pp, -r); /* reversed: key order matters */
	int ne = size_of(epc);

	float *x = malloc(H * 4), *y = malloc(H * 4), *moe = malloc(H * 4);
	float *wire = malloc(H * 4), *gath = malloc(2 * H * 4);
	float *grad = malloc(H * 4), *wg = malloc(H * 4), *wgs = malloc(H * 4);
	float *shard = malloc(H / 2 * 4), *rcv = malloc(H * 4);
	req_t q;

	for (size_t i = 0; i < H; i++) {
		x[i] = val(dp, 1, i);                   /* a micro-batch per DP replica */
		y[i] = x[i] * val(tp, pp + 3, i) / 2;   /* TP-partial product */
	}
	memset(rcv, 0, H * 4);
	memset(gath, 0, 2 * H * 4);
	/* Forward, stage 0: TP allreduce, MoE all-to-all in the expert group,
	 * activation to stage 1. Stage 1 the same, on what it will receive. */
	check(allreduce(tpc, y, y, H), "tp allreduce");
	dump("tp_allreduce", y, H);
	check(alltoall(epc, y, moe, H / (size_t)ne), "moe alltoall");
	dump("moe_alltoall", moe, H);
	for (size_t i = 0; i < H; i++)
		wire[i] = moe[i] + (float)pp;
	check(sendrecv(ppc, wire, rcv, H, 1 - rank_of(ppc), 5), "pp exchange");
	dump("pp_received", rcv, H);
	check(allgather(tpc, rcv, gath, H), "tp allgather");
	dump("tp_allgather", gath, 2 * H);
	/* Backward: a gradient from what arrived, back along the pipeline. */
	for (size_t i = 0; i < H; i++)
		grad[i] = gath[i] - gath[H + i] + val(r, 2, i);
	check(sendrecv(ppc, grad, rcv, H, 1 - rank_of(ppc), 6), "pp gradient");
	dump("pp_gradient", rcv, H);
	for (size_t i = 0; i < H; i++)
		wg[i] = rcv[i] * val(tp, 4, i) + y[i];
	/* Data-parallel gradient reduction overlapping the rest of backward. */
	check(iallreduce(dpc, wg, wgs, H, &q), "dp iallreduce");
	float acc = 0;
	for (size_t i = 0; i < H; i++)
		acc += x[i] * (float)(i % 3);
	check(wait_req(&q), "dp wait");
	dump("dp_allreduce", wgs, H);
	check(reduce_scatter(tpc, wgs, shard, H / 2), "tp reduce_scatter");
	dump("tp_reduce_scatter", shard, H / 2);
	shard[0] += acc;
	check(bcast(tpc, shard, H / 2, 1), "tp broadcast");
	dump("tp_broadcast", shard, H / 2);
	check(barrier(ppc), "pp barrier");
	fprintf(out, "ranks tp %d pp %d dp %d ep %d/%d\n", rank_of(tpc), rank_of(ppc),
		rank_of(dpc), rank_of(epc), ne);
	fclose(out);
	drop(&epc);
	drop(&dpc);
	drop(&ppc);
	drop(&tpc);
	free(x); free(y); free(moe); free(wire); free(gath); free(grad);
	free(wg); free(wgs); free(shard); free(rcv);
	fini(w);
	return failed;
}

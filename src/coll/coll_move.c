/* SPDX-License-Identifier: MIT */
/*
 * Data-movement collectives: allgather (ring, Bruck), reduce-scatter (ring,
 * recursive halving: coll_reduce.c), all-to-all(v) (pairwise exchange),
 * barrier (dissemination).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coll_internal.h"

int ur__begin(struct uroce_comm *c, enum uroce_dtype dt, enum uroce_redop op,
	       int root);
int ur__begin_sr(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
		  size_t count, enum uroce_dtype dt, enum uroce_redop op);

/*
 * Bruck's allgather: in step k (distance d = 2^k) rank r sends the blocks
 * it holds, r .. r+d-1, to r-d and receives r+d .. r+2d-1 from r+d (fewer
 * in the last step when n is not a power of two): ceil(log2 n) steps for
 * any n. A scratch copy keeps the blocks in that rotated order, so that
 * every message is one contiguous piece; they are rotated into place at
 * the end. Meant for small results, where the two copies cost less than
 * the ring's extra n-1-ceil(log2 n) round trips.
 */
static int bruck_allgather(struct uroce_comm *c, char *recvbuf, size_t bytes,
			   uint32_t sig, enum uroce_dtype dt)
{
	int n = c->size, r = c->rank;
	char *tmp = ur__scratch(c, bytes * (size_t)n);

	if (!tmp)
		return -ENOMEM;
	ur_copy(tmp, recvbuf + (size_t)r * bytes, bytes);
	for (int d = 1; d < n; d *= 2) {
		size_t cnt = (size_t)(d < n - d ? d : n - d);
		int e = ur__sendrecv(c, (r - d + n) % n, tmp, cnt * bytes, (r + d) % n,
				      tmp + (size_t)d * bytes, cnt * bytes, UR_X_RECV, sig,
				      dt, UROCE_SUM);
		if (e)
			return e;
	}
	/* tmp holds blocks r .. n-1, then 0 .. r-1 */
	ur_copy(recvbuf + (size_t)r * bytes, tmp, (size_t)(n - r) * bytes);
	ur_copy(recvbuf, tmp + (size_t)(n - r) * bytes, (size_t)r * bytes);
	return 0;
}

int ur__run_allgather(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
		    size_t sendcount, enum uroce_dtype dt)
{
	int e = ur__begin_sr(c, sendbuf, recvbuf, sendcount, dt, UROCE_SUM);
	size_t es = uroce_dtype_size(dt), bytes = sendcount * es;
	enum ur_algo algo;
	char *mine;
	uint32_t sig;

	if (e || !sendcount)
		return e;
	sig = ur__sig(c, UR_C_ALLGATHER, dt, UROCE_SUM, sendcount, 0);
	algo = ur__pick(c, UR_C_ALLGATHER, bytes);
	c->last_algo = ur__algo_name[algo];
	mine = (char *)recvbuf + (size_t)c->rank * bytes;
	if (mine != sendbuf)
		ur_move(mine, sendbuf, bytes);
	if (c->size == 1)
		return 0;
	if (algo == UR_A_BRUCK)
		return bruck_allgather(c, recvbuf, bytes, sig, dt);
	ur__reg_hint(c, recvbuf, bytes * (size_t)c->size, 1);
	return ur__ring_allgather_blocks(c, recvbuf, sendcount * (size_t)c->size,
					  -1, sig, dt);
}

int ur__run_reduce_scatter(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
			 size_t recvcount, enum uroce_dtype dt,
			 enum uroce_redop op)
{
	int e = ur__begin_sr(c, sendbuf, recvbuf, recvcount, dt, op), n;
	size_t es = uroce_dtype_size(dt), bytes = recvcount * es;
	enum ur_algo algo;
	uint32_t sig;
	char *work;

	if (e || !recvcount)
		return e;
	n = c->size;
	sig = ur__sig(c, UR_C_REDUCESCATTER, dt, op, recvcount, 0);
	algo = ur__pick(c, UR_C_REDUCESCATTER, bytes);
	c->last_algo = ur__algo_name[algo];
	/* Reduce into scratch, reading sendbuf (const, and it may hold
	 * recvbuf: in place); only our block is copied out at the end. */
	work = ur__scratch(c, bytes * (size_t)n);
	if (!work)
		return -ENOMEM;
	ur__reg_hint(c, sendbuf, bytes * (size_t)n, 0);
	ur__reg_hint(c, work, bytes * (size_t)n, 0);
	if (algo == UR_A_HALVING)
		e = ur__halving_reduce_scatter(c, work, sendbuf, recvcount, sig, dt, op);
	else
		e = ur__ring_reduce_scatter(c, work, sendbuf, recvcount * (size_t)n, -1,
					     sig, dt, op);
	if (e)
		return e;
	ur__reduce_finish(work + (size_t)c->rank * bytes, recvcount, dt, op, n);
	ur_move(recvbuf, work + (size_t)c->rank * bytes, bytes);
	return 0;
}

/*
 * Pairwise exchange: in step k rank r sends its block for r+k and receives
 * the block from r-k; the n-1 steps all run at once (one ur__xfer). Each
 * pair's signature carries that pair's count, so alltoallv catches a
 * sendcounts/recvcounts disagreement.
 */
static int pairwise(struct uroce_comm *c, enum ur_coll_kind k, const char *sbuf,
		    const size_t *scnt, const size_t *sdsp, char *rbuf,
		    const size_t *rcnt, const size_t *rdsp, enum uroce_dtype dt)
{
	int n = c->size, r = c->rank;
	size_t es = uroce_dtype_size(dt), extent = 0;
	const char *src = sbuf;

	for (int i = 0; i < n; i++)
		if (scnt[i] && (sdsp[i] + scnt[i]) * es > extent)
			extent = (sdsp[i] + scnt[i]) * es;
	/* In place (or overlapping): a step would overwrite blocks that a
	 * later step still has to send. */
	size_t rext = 0;
	for (int i = 0; i < n; i++)
		if (rcnt[i] && (rdsp[i] + rcnt[i]) * es > rext)
			rext = (rdsp[i] + rcnt[i]) * es;
	if (ur__overlaps(sbuf, extent, rbuf, rext)) {
		char *tmp = ur__scratch(c, extent);
		if (!tmp)
			return -ENOMEM;
		ur_copy(tmp, sbuf, extent);
		src = tmp;
	}
	if (scnt[r] != rcnt[r])
		return ur__fail(c, -EINVAL, "alltoallv: sendcounts[%d]=%zu != recvcounts[%d]=%zu",
				 r, scnt[r], r, rcnt[r]);
	if (n == 1) {
		if (scnt[r])
			ur_copy(rbuf + rdsp[r] * es, src + sdsp[r] * es, scnt[r] * es);
		return 0;
	}
	ur__reg_hint(c, src, extent, 0);
	ur__reg_hint(c, rbuf, rext, 1);
	/* All steps at once: one step per peer pair, listed in pairwise
	 * order (rank r first serves r+1 and r-1, and so on), so that each
	 * peer's streams start staggered, but no step waits for the one before
	 * it (n-2 fewer round trips, and the ranks that are slow to arrive
	 * don't hold up the others). */
	struct ur_xop *x = malloc(sizeof(*x) * (2 * (size_t)(n - 1) + 1));
	int nx = 0, e;

	if (!x)
		return -ENOMEM;
	for (int s = 1; s < n; s++) {
		int to = (r + s) % n, from = (r - s + n) % n;

		ur__xop(&x[nx++], UR_X_SEND, to, (char *)src + sdsp[to] * es, scnt[to] * es,
			 ur__sig(c, k, dt, UROCE_SUM, scnt[to], 0));
		ur__xop(&x[nx++], UR_X_RECV, from, rbuf + rdsp[from] * es, rcnt[from] * es,
			 ur__sig(c, k, dt, UROCE_SUM, rcnt[from], 0));
		/* alltoall: one count for every pair, so both ends see the
		 * same size and small streams skip the offer's round trip. */
		x[nx - 2].direct = x[nx - 1].direct =
			k == UR_C_ALLTOALL ? UR_DIRECT_SIZED : UR_DIRECT_ALWAYS;
	}
	/* Our own block last, in pieces between the others' progress: the
	 * offers go out first, and the peers write while we copy. */
	ur__xop(&x[nx], UR_X_LOCAL, r, rbuf + rdsp[r] * es, scnt[r] * es, 0);
	x[nx++].src = src + sdsp[r] * es;
	e = ur__xfer(c, x, nx, dt, UROCE_SUM);
	free(x);
	return e;
}

int ur__run_alltoall(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
		   size_t count, enum uroce_dtype dt)
{
	int e = ur__begin_sr(c, sendbuf, recvbuf, count, dt, UROCE_SUM), n;
	size_t *v;

	if (e || !count)
		return e;
	n = c->size;
	if (ur__seg_use(c, (size_t)n * count * uroce_dtype_size(dt), count * uroce_dtype_size(dt))) {
		c->last_algo = "shared_segment";
		return ur__seg_alltoall(c, sendbuf, recvbuf, count, dt,
					ur__sig(c, UR_C_ALLTOALL, dt, UROCE_SUM, count, 0));
	}
	c->last_algo = ur__algo_name[ur__pick(c, UR_C_ALLTOALL, count * uroce_dtype_size(dt))];
	v = malloc(sizeof(size_t) * 2 * (size_t)n);
	if (!v)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		v[i] = count;
		v[n + i] = (size_t)i * count;
	}
	e = pairwise(c, UR_C_ALLTOALL, sendbuf, v, v + n, recvbuf, v, v + n, dt);
	free(v);
	return e;
}

int ur__run_alltoallv(struct uroce_comm *c, const void *sendbuf,
		    const size_t *sendcounts, const size_t *sdispls,
		    void *recvbuf, const size_t *recvcounts,
		    const size_t *rdispls, enum uroce_dtype dt)
{
	int e = ur__begin(c, dt, UROCE_SUM, 0);

	if (e)
		return e;
	if (!sendcounts || !sdispls || !recvcounts || !rdispls)
		return -EINVAL;
	c->last_algo = ur__algo_name[ur__pick(c, UR_C_ALLTOALLV, 0)];
	return pairwise(c, UR_C_ALLTOALLV, sendbuf, sendcounts, sdispls, recvbuf,
			recvcounts, rdispls, dt);
}

/* Dissemination: ceil(log2 n) rounds of empty messages to r + 2^k. */
int ur__run_barrier(struct uroce_comm *c)
{
	int e = ur__begin(c, UROCE_UINT8, UROCE_SUM, 0), n;
	uint32_t sig;

	if (e)
		return e;
	n = c->size;
	sig = ur__sig(c, UR_C_BARRIER, UROCE_UINT8, UROCE_SUM, 0, 0);
	c->last_algo = ur__algo_name[ur__pick(c, UR_C_BARRIER, 0)];
	for (int k = 1; k < n && !e; k <<= 1)
		e = ur__sendrecv(c, (c->rank + k) % n, NULL, 0, (c->rank - k + n) % n,
				  NULL, 0, UR_X_RECV, sig, UROCE_UINT8, UROCE_SUM);
	return e;
}

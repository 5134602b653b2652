/* SPDX-License-Identifier: MIT */
/*
 * Reducing collectives and broadcast: allreduce (ring, Rabenseifner,
 * recursive doubling, tree), reduce (tree, ring), broadcast (tree,
 * scatter + ring allgather), and reduce-scatter's recursive halving.
 */
#include <errno.h>
#include <string.h>

#include "coll_internal.h"

int ur__begin(struct uroce_comm *c, enum uroce_dtype dt, enum uroce_redop op,
	       int root);
int ur__begin_sr(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
		  size_t count, enum uroce_dtype dt, enum uroce_redop op);
int ur__begin(struct uroce_comm *c, enum uroce_dtype dt, enum uroce_redop op,
	       int root)
{
	if (!c)
		return -EINVAL;
	if (c->failed)
		return c->failed;
	if ((unsigned)dt >= UROCE_DTYPE_MAX || (unsigned)op >= UROCE_REDOP_MAX ||
	    root < 0 || root >= c->size)
		return -EINVAL;
	c->seq++;
	return 0;
}

/* ur__begin for a collective from sendbuf to recvbuf on count elements
 * (root 0): -EINVAL when count is not 0 but a buffer is missing. */
int ur__begin_sr(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
		  size_t count, enum uroce_dtype dt, enum uroce_redop op)
{
	int e = ur__begin(c, dt, op, 0);

	if (e)
		return e;
	if (count && (!sendbuf || !recvbuf))
		return -EINVAL;
	return 0;
}

/* Rank layout for the power-of-two core: ranks below 2*rem pair up, the
 * even one folds its data into the odd one and sits out. */
struct pof2 {
	int p2, rem, newrank;
};

static struct pof2 pof2_of(int n, int r)
{
	struct pof2 p = { 1, 0, 0 };

	while (p.p2 * 2 <= n)
		p.p2 *= 2;
	p.rem = n - p.p2;
	if (r < 2 * p.rem)
		p.newrank = (r % 2) ? r / 2 : -1;
	else
		p.newrank = r - p.rem;
	return p;
}

static int real_rank(const struct pof2 *p, int nr)
{
	return nr < p->rem ? nr * 2 + 1 : nr + p->rem;
}

/* The even rank of a pair sends in; the odd one reduces it with its in
 * into buf (in may be buf). */
static int fold_in(struct uroce_comm *c, const struct pof2 *p, char *buf,
		   const char *in, size_t bytes, uint32_t sig,
		   enum uroce_dtype dt, enum uroce_redop op)
{
	int r = c->rank;

	if (r >= 2 * p->rem)
		return 0;
	if (r % 2 == 0)
		return ur__sendrecv(c, r + 1, in, bytes, -1, NULL, 0, 0, sig, dt, op);
	return ur__sendrecv_reduce(c, -1, NULL, 0, r - 1, buf, in, bytes, sig,
				    dt, op);
}

static int fold_out(struct uroce_comm *c, const struct pof2 *p, char *buf,
		    size_t bytes, uint32_t sig, enum uroce_dtype dt)
{
	int r = c->rank;

	if (r >= 2 * p->rem)
		return 0;
	if (r % 2 == 1)
		return ur__sendrecv(c, r - 1, buf, bytes, -1, NULL, 0, 0, sig, dt, UROCE_SUM);
	return ur__sendrecv(c, -1, NULL, 0, r + 1, buf, bytes, UR_X_RECV, sig, dt, UROCE_SUM);
}

static int allreduce_recdoubling(struct uroce_comm *c, char *buf, size_t count,
				 uint32_t sig, enum uroce_dtype dt, enum uroce_redop op)
{
	size_t bytes = count * uroce_dtype_size(dt);
	struct pof2 p = pof2_of(c->size, c->rank);
	char *tmp = ur__scratch(c, bytes);
	int e;

	if (!tmp)
		return -ENOMEM;
	ur__reg_hint(c, tmp, bytes, 0);
	e = fold_in(c, &p, buf, buf, bytes, sig, dt, op);
	for (int mask = 1; !e && p.newrank >= 0 && mask < p.p2; mask <<= 1) {
		int peer = real_rank(&p, p.newrank ^ mask);
		/* Send a snapshot: the receive reduces into buf meanwhile. */
		ur_copy(tmp, buf, bytes);
		e = ur__sendrecv(c, peer, tmp, bytes, peer, buf, bytes,
				  UR_X_RECV_REDUCE, sig, dt, op);
	}
	return e ? e : fold_out(c, &p, buf, bytes, sig, dt);
}

/* Where block b of the power-of-two core starts, in bytes: the allreduce
 * splits its vector into p2 blocks; reduce-scatter gives each virtual rank
 * the blocks (of blen bytes) of the real ranks it stands for, from
 * core_off(v) to core_off(v + 1): two for a folded pair, one otherwise. */
struct core_blocks {
	const struct pof2 *p;
	size_t count, es; /* allreduce: count elements of es bytes */
	size_t blen;      /* reduce-scatter: bytes per real rank (0: allreduce) */
};

static size_t core_off(const struct core_blocks *bl, int b)
{
	if (bl->blen)
		return (size_t)(b < bl->p->rem ? 2 * b : b + bl->p->rem) * bl->blen;
	return ur__blk_off(bl->count, bl->p->p2, b) * bl->es;
}

/*
 * Reduce-scatter by recursive halving over the core's blocks, after the
 * fold: each step keeps the half of the current range that holds this
 * rank's block, reducing the peer's copy of it into buf, and gives the
 * other half away. src is read where a rank first reduces (the caller's
 * input; buf for a rank that folded its pair in). Returns with *lo = the
 * block this rank holds reduced (its new rank).
 */
static int halving(struct uroce_comm *c, const struct core_blocks *bl, char *buf,
		   const char *src, int *lo, uint32_t sig, enum uroce_dtype dt,
		   enum uroce_redop op)
{
	const struct pof2 *p = bl->p;
	int nb = p->p2, e = 0;

	*lo = 0;
#define OFF(b) core_off(bl, (b))
	for (int mask = p->p2 / 2; !e && p->newrank >= 0 && mask >= 1; mask >>= 1) {
		int peer = real_rank(p, p->newrank ^ mask), half = nb / 2;
		int keep = (p->newrank & mask) ? *lo + half : *lo;
		int give = (p->newrank & mask) ? *lo : *lo + half;

		e = ur__sendrecv_reduce(c, peer, src + OFF(give),
					 OFF(give + half) - OFF(give), peer,
					 buf + OFF(keep), src + OFF(keep),
					 OFF(keep + half) - OFF(keep), sig, dt, op);
		src = buf;
		*lo = keep;
		nb = half;
	}
#undef OFF
	return e;
}

/*
 * Rabenseifner: reduce-scatter by recursive halving, then allgather by
 * recursive doubling, over p2 blocks; the fold handles the other ranks.
 * The first reduction of a rank reads in (the caller's input), the later
 * ones buf: an out-of-place call needs no copy first.
 */
static int allreduce_rabenseifner(struct uroce_comm *c, char *buf, const char *in,
				  size_t count, uint32_t sig, enum uroce_dtype dt,
				  enum uroce_redop op)
{
	size_t es = uroce_dtype_size(dt);
	struct pof2 p = pof2_of(c->size, c->rank);
	struct core_blocks bl = { .p = &p, .count = count, .es = es };
	int lo = 0, nb = 1, e;

#define OFF(b) core_off(&bl, (b))
	e = fold_in(c, &p, buf, in, count * es, sig, dt, op);
	/* the odd rank reduced into buf; the even one is out */
	if (!e)
		e = halving(c, &bl, buf, c->rank < 2 * p.rem ? buf : in, &lo, sig, dt, op);
	for (int mask = 1; !e && p.newrank >= 0 && mask < p.p2; mask <<= 1) {
		int peer = real_rank(&p, p.newrank ^ mask);
		int theirs = (p.newrank & mask) ? lo - nb : lo + nb;

		e = ur__sendrecv(c, peer, buf + OFF(lo), OFF(lo + nb) - OFF(lo), peer,
				  buf + OFF(theirs), OFF(theirs + nb) - OFF(theirs),
				  UR_X_RECV, sig, dt, op);
		lo = lo < theirs ? lo : theirs;
		nb *= 2;
	}
#undef OFF
	return e ? e : fold_out(c, &p, buf, count * es, sig, dt);
}

/*
 * Reduce-scatter by recursive halving, for reduce_scatter's n blocks of
 * bcount elements: rank r must end with block r. Each virtual rank of the
 * core answers for its real ranks' blocks (core_off), so every step halves
 * a contiguous range as in Rabenseifner. The odd rank of a pair hands the
 * even one its block at the end. buf (n blocks) receives the reductions,
 * in (const) is read where a rank first reduces.
 */
int ur__halving_reduce_scatter(struct uroce_comm *c, char *buf, const char *in,
				size_t bcount, uint32_t sig, enum uroce_dtype dt,
				enum uroce_redop op)
{
	size_t bytes = bcount * uroce_dtype_size(dt);
	struct pof2 p = pof2_of(c->size, c->rank);
	struct core_blocks bl = { .p = &p, .blen = bytes };
	int r = c->rank, lo, e;

	e = fold_in(c, &p, buf, in, bytes * (size_t)c->size, sig, dt, op);
	if (!e)
		e = halving(c, &bl, buf, r < 2 * p.rem ? buf : in, &lo, sig, dt, op);
	if (e || r >= 2 * p.rem)
		return e;
	if (r % 2 == 1)
		return ur__sendrecv(c, r - 1, buf + (size_t)(r - 1) * bytes, bytes, -1,
				     NULL, 0, 0, sig, dt, op);
	return ur__sendrecv(c, -1, NULL, 0, r + 1, buf + (size_t)r * bytes, bytes,
			     UR_X_RECV, sig, dt, op);
}

/* Binomial tree reduce into buf at root (buf is every rank's accumulator). */
static int reduce_tree(struct uroce_comm *c, char *buf, size_t count, int root,
		       uint32_t sig, enum uroce_dtype dt, enum uroce_redop op)
{
	int n = c->size, vr = (c->rank - root + n) % n;
	size_t bytes = count * uroce_dtype_size(dt);

	for (int mask = 1; mask < n; mask <<= 1) {
		if (vr & mask)
			return ur__sendrecv(c, (vr - mask + root) % n, buf, bytes, -1,
					     NULL, 0, 0, sig, dt, op);
		if (vr + mask < n) {
			int e = ur__sendrecv(c, -1, NULL, 0, (vr + mask + root) % n, buf,
					      bytes, UR_X_RECV_REDUCE, sig, dt, op);
			if (e)
				return e;
		}
	}
	return 0;
}

/* Binomial tree broadcast: receive from the parent, send to all children
 * at once. */
static int bcast_tree(struct uroce_comm *c, char *buf, size_t bytes, int root,
		      uint32_t sig, enum uroce_dtype dt)
{
	int n = c->size, vr = (c->rank - root + n) % n, mask = 1, nx = 0, e;
	struct ur_xop x[32];

	while (mask < n) {
		if (vr & mask) {
			e = ur__sendrecv(c, -1, NULL, 0, (vr - mask + root) % n, buf, bytes,
					  UR_X_RECV, sig, dt, UROCE_SUM);
			if (e)
				return e;
			break;
		}
		mask <<= 1;
	}
	for (mask >>= 1; mask > 0; mask >>= 1)
		if (vr + mask < n)
			ur__xop(&x[nx++], UR_X_SEND, (vr + mask + root) % n, buf, bytes, sig);
	return nx ? ur__xfer(c, x, nx, dt, UROCE_SUM) : 0;
}

/* Large broadcast: root scatters n blocks, then a ring allgather. */
static int bcast_ring(struct uroce_comm *c, char *buf, size_t count, int root,
		      uint32_t sig, enum uroce_dtype dt)
{
	int n = c->size, r = c->rank, nx = 0, e;
	size_t es = uroce_dtype_size(dt);
	struct ur_xop *x = ur__scratch(c, sizeof(*x) * (size_t)n);

	if (!x)
		return -ENOMEM;
	if (r == root) {
		for (int i = 0; i < n; i++)
			if (i != root)
				ur__xop(&x[nx++], UR_X_SEND, i,
					 buf + ur__blk_off(count, n, i) * es,
					 ur__blk_len(count, n, i) * es, sig);
	} else {
		ur__xop(&x[nx++], UR_X_RECV, root, buf + ur__blk_off(count, n, r) * es,
			 ur__blk_len(count, n, r) * es, sig);
	}
	e = ur__xfer(c, x, nx, dt, UROCE_SUM);
	return e ? e : ur__ring_allgather_blocks(c, buf, count, -1, sig, dt);
}

int ur__run_allreduce(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
		    size_t count, enum uroce_dtype dt, enum uroce_redop op)
{
	int e = ur__begin_sr(c, sendbuf, recvbuf, count, dt, op);
	size_t bytes = count * uroce_dtype_size(dt);
	const char *in = sendbuf;
	enum ur_algo a;
	uint32_t sig;

	if (e || !count)
		return e;
	/* Ranks of one host, small and medium sizes: shared segments, no
	 * messages (seg.c). */
	if (ur__seg_use(c, bytes, 0)) {
		c->last_algo = "shared_segment";
		return ur__seg_allreduce(c, sendbuf, recvbuf, count, dt, op,
					 ur__sig(c, UR_C_ALLREDUCE, dt, op, count, 0));
	}
	sig = ur__sig(c, UR_C_ALLREDUCE, dt, op, count, 0);
	a = ur__pick(c, UR_C_ALLREDUCE, bytes);
	c->last_algo = ur__algo_name[a];
	/* The ring and Rabenseifner read sendbuf where they first reduce
	 * (no copy of the whole input); the others work in recvbuf. */
	if ((a != UR_A_RING && a != UR_A_RABENSEIFNER) || c->size == 1 ||
	    (sendbuf != recvbuf && ur__overlaps(sendbuf, bytes, recvbuf, bytes))) {
		ur_move(recvbuf, sendbuf, bytes);
		in = recvbuf;
	}
	ur__reg_hint(c, recvbuf, bytes, 1);
	if (in != recvbuf)
		ur__reg_hint(c, in, bytes, 0);
	switch (a) {
	case UR_A_LOCAL:
		break;
	case UR_A_RECDOUBLING:
		e = allreduce_recdoubling(c, recvbuf, count, sig, dt, op);
		break;
	case UR_A_RABENSEIFNER:
		e = allreduce_rabenseifner(c, recvbuf, in, count, sig, dt, op);
		break;
	case UR_A_TREE:
		e = reduce_tree(c, recvbuf, count, 0, sig, dt, op);
		if (!e)
			e = bcast_tree(c, recvbuf, bytes, 0, sig, dt);
		break;
	default:
		e = ur__ring_reduce_scatter(c, recvbuf, in, count, 0, sig, dt, op);
		if (!e)
			e = ur__ring_allgather_blocks(c, recvbuf, count, 0, sig, dt);
		break;
	}
	if (!e)
		ur__reduce_finish(recvbuf, count, dt, op, c->size);
	return e;
}

int ur__run_reduce(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
		 size_t count, enum uroce_dtype dt, enum uroce_redop op, int root)
{
	int e = ur__begin(c, dt, op, root), n;
	size_t es = uroce_dtype_size(dt), bytes = count * es;
	const char *in;
	enum ur_algo a;
	uint32_t sig;
	char *work;

	if (e)
		return e;
	if (count && (!sendbuf || (c->rank == root && !recvbuf)))
		return -EINVAL;
	if (!count)
		return 0;
	n = c->size;
	sig = ur__sig(c, UR_C_REDUCE, dt, op, count, root);
	a = ur__pick(c, UR_C_REDUCE, bytes);
	c->last_algo = ur__algo_name[a];
	if (c->rank == root) {
		work = recvbuf;
	} else {
		/* Non-roots accumulate in scratch (room for the xop list of the
		 * ring's gather too). */
		work = ur__scratch(c, bytes + 64);
		if (!work)
			return -ENOMEM;
	}
	/* The ring reads sendbuf where it first reduces; the tree works in
	 * place. */
	in = sendbuf;
	if (a != UR_A_RING ||
	    (work != in && ur__overlaps(work, bytes, in, bytes))) {
		ur_move(work, sendbuf, bytes);
		in = work;
	}
	ur__reg_hint(c, work, bytes, 0);
	if (in != work)
		ur__reg_hint(c, in, bytes, 0);
	if (a == UR_A_TREE) {
		e = reduce_tree(c, work, count, root, sig, dt, op);
	} else if (a == UR_A_RING) {
		/* Ring reduce-scatter, then everyone sends its block to root. */
		e = ur__ring_reduce_scatter(c, work, in, count, 0, sig, dt, op);
		if (!e && c->rank != root) {
			int b = (c->rank + 1) % n;
			e = ur__sendrecv(c, root, work + ur__blk_off(count, n, b) * es,
					  ur__blk_len(count, n, b) * es, -1, NULL, 0, 0, sig,
					  dt, op);
		} else if (!e) {
			struct ur_xop x[n];
			int nx = 0;
			for (int i = 0; i < n; i++) {
				int b = (i + 1) % n;
				if (i != root)
					ur__xop(&x[nx++], UR_X_RECV, i,
						 work + ur__blk_off(count, n, b) * es,
						 ur__blk_len(count, n, b) * es, sig);
			}
			e = ur__xfer(c, x, nx, dt, op);
		}
	}
	if (!e && c->rank == root)
		ur__reduce_finish(recvbuf, count, dt, op, n);
	return e;
}

int ur__run_broadcast(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
		    size_t count, enum uroce_dtype dt, int root)
{
	int e = ur__begin(c, dt, UROCE_SUM, root);
	size_t bytes = count * uroce_dtype_size(dt);
	enum ur_algo a;
	uint32_t sig;

	if (e)
		return e;
	if (count && (!recvbuf || (c->rank == root && !sendbuf)))
		return -EINVAL;
	if (!count)
		return 0;
	sig = ur__sig(c, UR_C_BROADCAST, dt, UROCE_SUM, count, root);
	a = ur__pick(c, UR_C_BROADCAST, bytes);
	c->last_algo = ur__algo_name[a];
	if (c->rank == root)
		ur_move(recvbuf, sendbuf, bytes);
	ur__reg_hint(c, recvbuf, bytes, 1);
	if (a == UR_A_TREE)
		e = bcast_tree(c, recvbuf, bytes, root, sig, dt);
	else if (a == UR_A_RING)
		e = bcast_ring(c, recvbuf, count, root, sig, dt);
	return e;
}

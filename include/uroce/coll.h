/* SPDX-License-Identifier: MIT */
/*
 * uroce collectives: allreduce, reduce, broadcast, allgather, reduce-scatter,
 * all-to-all(v) and barrier over RDMA verbs (RC QPs, RDMA WRITE with
 * immediate into pre-registered staging buffers). Built only on the public
 * verbs API, so it runs on uroce (through uroce-run/uroce-launch) and on a
 * real RoCE/IB NIC through the system rdma-core.
 *
 * Every function returns 0 or a negative errno; uroce_comm_strerror() gives
 * a human readable reason for the last failure. Once a collective fails
 * (peer died, timeout, mismatched arguments, QP error) the communicator is
 * broken and every later call fails with the same error.
 *
 * In place (NCCL conventions): allreduce/reduce/alltoall/broadcast
 * sendbuf == recvbuf; allgather sendbuf == recvbuf + rank * sendcount;
 * reduce-scatter recvbuf == sendbuf + rank * recvcount (in elements).
 * Counts are in elements, any value from 0; buffers need no alignment.
 */
#ifndef UROCE_COLL_H
#define UROCE_COLL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define UROCE_COLL_EXPORT __attribute__((visibility("default")))
#else
#define UROCE_COLL_EXPORT
#endif

typedef struct uroce_comm uroce_comm_t;

enum uroce_dtype {
	UROCE_FLOAT32,
	UROCE_FLOAT64,
	UROCE_FLOAT16,
	UROCE_BFLOAT16,
	UROCE_INT32,
	UROCE_INT64,
	UROCE_UINT8,
	UROCE_DTYPE_MAX
};

enum uroce_redop {
	UROCE_SUM,
	UROCE_PROD,
	UROCE_MIN,
	UROCE_MAX,
	UROCE_AVG, /* sum, then divided by the rank count (ints: truncating) */
	UROCE_REDOP_MAX
};

/* Explicit initialisation. Unset fields (0/NULL) fall back to the env. */
struct uroce_comm_attr {
	int rank;                /* 0..size-1 */
	int size;                /* number of ranks; 0: take rank/size from env */
	const char *master_addr; /* rank 0's rendezvous address (IPv4/host) */
	int master_port;         /* TCP port rank 0 listens on */
	const char *dev_name;    /* NULL: first device */
	int gid_index;           /* -1: UROCE_COLL_GID or 0 */
	int timeout_ms;          /* 0: UROCE_COLL_TIMEOUT_MS or 30000 */
};

/*
 * uroce_comm_init - create a communicator: open the device, create one RC
 * QP per peer, rendezvous over TCP with rank 0 and connect.
 * @attr: NULL or partially filled: rank/size from RANK/WORLD_SIZE,
 * OMPI_COMM_WORLD_RANK/_SIZE or SLURM_PROCID/SLURM_NTASKS; rendezvous
 * MASTER_ADDR/MASTER_PORT (default 127.0.0.1:29500).
 * Collective over all ranks. On failure *comm is NULL and the reason has
 * been printed to stderr.
 */
UROCE_COLL_EXPORT int uroce_comm_init(uroce_comm_t **comm, const struct uroce_comm_attr *attr);
UROCE_COLL_EXPORT int uroce_comm_destroy(uroce_comm_t *comm);
UROCE_COLL_EXPORT int uroce_comm_rank(const uroce_comm_t *comm);
UROCE_COLL_EXPORT int uroce_comm_size(const uroce_comm_t *comm);
UROCE_COLL_EXPORT const char *uroce_comm_strerror(const uroce_comm_t *comm);
/* Name of the algorithm the last collective ran ("ring", ...). */
UROCE_COLL_EXPORT const char *uroce_comm_last_algo(const uroce_comm_t *comm);

UROCE_COLL_EXPORT size_t uroce_dtype_size(enum uroce_dtype dt);
UROCE_COLL_EXPORT const char *uroce_dtype_name(enum uroce_dtype dt);
UROCE_COLL_EXPORT const char *uroce_redop_name(enum uroce_redop op);
/* Parse "float32"/"f32"/"float", ...; -1 if unknown. */
UROCE_COLL_EXPORT int uroce_dtype_parse(const char *s);
UROCE_COLL_EXPORT int uroce_redop_parse(const char *s);
/* Element i of buf as double / store v (rounded to nearest even; ints
 * truncate) into element i. No alignment needed. For tests and tools. */
UROCE_COLL_EXPORT double uroce_dtype_get(enum uroce_dtype dt, const void *buf,
					 size_t i);
UROCE_COLL_EXPORT void uroce_dtype_set(enum uroce_dtype dt, void *buf, size_t i,
				       double v);

UROCE_COLL_EXPORT int uroce_allreduce(uroce_comm_t *comm, const void *sendbuf, void *recvbuf,
		    size_t count, enum uroce_dtype dt, enum uroce_redop op);
/* recvbuf is only used at root. */
UROCE_COLL_EXPORT int uroce_reduce(uroce_comm_t *comm, const void *sendbuf, void *recvbuf,
		 size_t count, enum uroce_dtype dt, enum uroce_redop op,
		 int root);
/* sendbuf is only read at root; every rank receives into recvbuf. */
UROCE_COLL_EXPORT int uroce_broadcast(uroce_comm_t *comm, const void *sendbuf, void *recvbuf,
		    size_t count, enum uroce_dtype dt, int root);
/* recvbuf holds size * sendcount elements, rank i's at i * sendcount. */
UROCE_COLL_EXPORT int uroce_allgather(uroce_comm_t *comm, const void *sendbuf, void *recvbuf,
		    size_t sendcount, enum uroce_dtype dt);
/* sendbuf holds size * recvcount elements; rank i gets block i reduced. */
UROCE_COLL_EXPORT int uroce_reduce_scatter(uroce_comm_t *comm, const void *sendbuf,
			 void *recvbuf, size_t recvcount, enum uroce_dtype dt,
			 enum uroce_redop op);
/* count elements to and from each rank (block i goes to/comes from i). */
UROCE_COLL_EXPORT int uroce_alltoall(uroce_comm_t *comm, const void *sendbuf, void *recvbuf,
		   size_t count, enum uroce_dtype dt);
/* Counts and displacements in elements, one per rank, as MPI_Alltoallv. */
UROCE_COLL_EXPORT int uroce_alltoallv(uroce_comm_t *comm, const void *sendbuf,
		    const size_t *sendcounts, const size_t *sdispls,
		    void *recvbuf, const size_t *recvcounts,
		    const size_t *rdispls, enum uroce_dtype dt);
UROCE_COLL_EXPORT int uroce_barrier(uroce_comm_t *comm);

/*
 * Non-blocking operations. Each i-call checks its arguments (-EINVAL, or
 * the communicator's error once it is broken), queues the operation and
 * sets *req; the buffers (not the alltoallv arrays, which are copied)
 * belong to the library until the request completes. Every rank must
 * issue a communicator's collectives in the same order, each blocking on
 * every rank or non-blocking on every rank (as MPI requires), and the
 * sends and receives between any two ranks in the same order. A
 * communicator has UROCE_COLL_LANES lanes (default 2): the k-th
 * non-blocking collective runs on lane k mod lanes, everything else on
 * lane 0; each lane runs its operations one at a time in issue order, the
 * lanes at once, so collectives on different lanes complete in any order.
 * A progress thread per lane, started with its first i-call, runs them
 * while the caller computes or sleeps (UROCE_COLL_PROGRESS=0: no thread
 * and one lane; then uroce_wait and uroce_test progress). The blocking
 * calls above are the same operations followed by a wait, run in the
 * caller's thread when nothing else is queued. docs/collectives.md.
 */
typedef struct uroce_request uroce_request_t;

/* *req NULL counts as complete. On completion the request is freed, *req
 * set to NULL and the operation's result returned; uroce_test returns 0
 * with *done 0 while it runs. uroce_waitall returns the first error and
 * completes (and frees) every request. */
UROCE_COLL_EXPORT int uroce_test(uroce_request_t **req, int *done);
UROCE_COLL_EXPORT int uroce_wait(uroce_request_t **req);
UROCE_COLL_EXPORT int uroce_waitall(int n, uroce_request_t **reqs);

/*
 * Completion callback (a framework's future, e.g. PyTorch's DDP hook):
 * fn(arg, result) is called once, when the request completes, by the
 * thread that completed it (the progress thread, or a thread waiting or
 * testing), with no lock of the library held; at once by the caller if
 * the request is already complete. The request stays the caller's: a
 * uroce_wait or uroce_test still frees it (and returns at once after
 * the call), and may be made from fn itself. fn must not wait for another
 * request of the communicator. -EINVAL if fn is NULL or one is already set.
 */
typedef void (*uroce_notify_fn)(void *arg, int result);
UROCE_COLL_EXPORT int uroce_request_notify(uroce_request_t *req,
					   uroce_notify_fn fn, void *arg);

UROCE_COLL_EXPORT int uroce_iallreduce(uroce_comm_t *comm, const void *sendbuf, void *recvbuf,
		    size_t count, enum uroce_dtype dt, enum uroce_redop op,
		    uroce_request_t **req);
UROCE_COLL_EXPORT int uroce_ireduce(uroce_comm_t *comm, const void *sendbuf, void *recvbuf,
		 size_t count, enum uroce_dtype dt, enum uroce_redop op,
		 int root, uroce_request_t **req);
UROCE_COLL_EXPORT int uroce_ibroadcast(uroce_comm_t *comm, const void *sendbuf, void *recvbuf,
		    size_t count, enum uroce_dtype dt, int root,
		    uroce_request_t **req);
UROCE_COLL_EXPORT int uroce_iallgather(uroce_comm_t *comm, const void *sendbuf, void *recvbuf,
		    size_t sendcount, enum uroce_dtype dt, uroce_request_t **req);
UROCE_COLL_EXPORT int uroce_ireduce_scatter(uroce_comm_t *comm, const void *sendbuf,
			 void *recvbuf, size_t recvcount, enum uroce_dtype dt,
			 enum uroce_redop op, uroce_request_t **req);
UROCE_COLL_EXPORT int uroce_ialltoall(uroce_comm_t *comm, const void *sendbuf, void *recvbuf,
		   size_t count, enum uroce_dtype dt, uroce_request_t **req);
UROCE_COLL_EXPORT int uroce_ialltoallv(uroce_comm_t *comm, const void *sendbuf,
		    const size_t *sendcounts, const size_t *sdispls,
		    void *recvbuf, const size_t *recvcounts,
		    const size_t *rdispls, enum uroce_dtype dt,
		    uroce_request_t **req);
UROCE_COLL_EXPORT int uroce_ibarrier(uroce_comm_t *comm, uroce_request_t **req);

/*
 * Point-to-point: count elements to or from peer (never the caller
 * itself), tag >= 0. Messages between two ranks match in issue order; the
 * receive's count and tag must equal the send's (a difference fails the
 * communicator, naming it; there is no wildcard and no matching out of
 * order). A send under 256 KiB that fits the peer's free staging slots
 * completes before the receive is posted; a larger one is written straight
 * into the receive buffer, so it waits for the receive: an exchange in
 * both directions needs both sides in one group (as in NCCL).
 */
UROCE_COLL_EXPORT int uroce_send(uroce_comm_t *comm, const void *buf, size_t count,
	       enum uroce_dtype dt, int peer, int tag);
UROCE_COLL_EXPORT int uroce_recv(uroce_comm_t *comm, void *buf, size_t count,
	       enum uroce_dtype dt, int peer, int tag);
UROCE_COLL_EXPORT int uroce_isend(uroce_comm_t *comm, const void *buf, size_t count,
		enum uroce_dtype dt, int peer, int tag, uroce_request_t **req);
UROCE_COLL_EXPORT int uroce_irecv(uroce_comm_t *comm, void *buf, size_t count,
		enum uroce_dtype dt, int peer, int tag, uroce_request_t **req);

/*
 * Groups (NCCL's ncclGroupStart/End): i-calls between start and end are
 * held and queued at the end, in order; each run of consecutive sends and
 * receives becomes one operation whose streams all progress together.
 * Blocking calls, waits on the group's requests and nesting are -EINVAL
 * inside a group.
 */
UROCE_COLL_EXPORT int uroce_group_start(uroce_comm_t *comm);
UROCE_COLL_EXPORT int uroce_group_end(uroce_comm_t *comm);

/*
 * Sub-communicators, bootstrapped through the parent (no new rendezvous):
 * collective over the parent. Ranks with the same color >= 0 form one,
 * ordered by key, then parent rank; UROCE_UNDEFINED gets *newcomm NULL.
 * split_ranks: ranks[i] becomes rank i (every parent rank passes the same
 * list; ranks not in it get NULL). Destroy sub-communicators (collective
 * over their members) before their parent. A failure in any communicator
 * of a job breaks all of them.
 */
#define UROCE_UNDEFINED (-1)
UROCE_COLL_EXPORT int uroce_comm_split(uroce_comm_t *comm, int color, int key,
		     uroce_comm_t **newcomm);
UROCE_COLL_EXPORT int uroce_comm_split_ranks(uroce_comm_t *comm, const int *ranks, int n,
			   uroce_comm_t **newcomm);

#ifdef __cplusplus
}
#endif
#endif

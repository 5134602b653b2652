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

#ifdef __cplusplus
}
#endif
#endif

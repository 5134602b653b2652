// SPDX-License-Identifier: MIT
/*
 * What uroce's librdmacm does not do: ECE and rsockets. Each fails with EOPNOTSUPP in its own
 * convention (-1/NULL with errno set) so binaries that import them load and
 * fail cleanly (docs/rdmacm.md). The export list comes from
 * src/verbs/gen-map.sh (src/rdmacm/librdmacm.map).
 */
#include <errno.h>
#include <stdarg.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#define CM_EXPORT __attribute__((visibility("default")))

/* Fail an int/ssize_t-returning call. */
#define FAIL_INT(ret_t)                                                      \
	do {                                                                 \
		errno = EOPNOTSUPP;                                          \
		return (ret_t)-1;                                            \
	} while (0)
#define FAIL_PTR()                                                           \
	do {                                                                 \
		errno = EOPNOTSUPP;                                          \
		return NULL;                                                 \
	} while (0)

CM_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece) { FAIL_INT(int); }
CM_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece) { FAIL_INT(int); }

/* ---- rsockets ------------------------------------------------------------ */
CM_EXPORT int rsocket(int domain, int type, int protocol) { FAIL_INT(int); }
CM_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen) { FAIL_INT(int); }
CM_EXPORT int rlisten(int socket, int backlog) { FAIL_INT(int); }
CM_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen) { FAIL_INT(int); }
CM_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen) { FAIL_INT(int); }
CM_EXPORT int rshutdown(int socket, int how) { FAIL_INT(int); }
CM_EXPORT int rclose(int socket) { FAIL_INT(int); }
CM_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags) { FAIL_INT(ssize_t); }
CM_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			    struct sockaddr *src_addr, socklen_t *addrlen) { FAIL_INT(ssize_t); }
CM_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags) { FAIL_INT(ssize_t); }
CM_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags) { FAIL_INT(ssize_t); }
CM_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			  const struct sockaddr *dest_addr, socklen_t addrlen) { FAIL_INT(ssize_t); }
CM_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags) { FAIL_INT(ssize_t); }
CM_EXPORT ssize_t rread(int socket, void *buf, size_t count) { FAIL_INT(ssize_t); }
CM_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt) { FAIL_INT(ssize_t); }
CM_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count) { FAIL_INT(ssize_t); }
CM_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt) { FAIL_INT(ssize_t); }
CM_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout) { FAIL_INT(int); }
CM_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds,
		      fd_set *exceptfds, struct timeval *timeout) { FAIL_INT(int); }
CM_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen) { FAIL_INT(int); }
CM_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen) { FAIL_INT(int); }
CM_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval,
			  socklen_t optlen) { FAIL_INT(int); }
CM_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval,
			  socklen_t *optlen) { FAIL_INT(int); }
CM_EXPORT int rfcntl(int socket, int cmd, ...) { FAIL_INT(int); }
CM_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags,
		       off_t offset) { FAIL_INT(off_t); }
CM_EXPORT int riounmap(int socket, void *buf, size_t len) { FAIL_INT(int); }
CM_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset,
			  int flags) { FAIL_INT(size_t); }

// SPDX-License-Identifier: MIT
/*
 * librdmacm.so.1 stub. The connection manager is not implemented yet: every
 * call fails with EOPNOTSUPP in its own convention (-1/NULL with errno set),
 * so rping, ucmatose, perftest's -R mode and pyverbs.cmid load and fail
 * cleanly instead of reaching rdma-core's librdmacm, which would need the
 * kernel's rdma_cm and rdma-core's libibverbs. rdma_event_str() is real.
 * The export list comes from src/verbs/gen-map.sh (src/rdmacm/librdmacm.map).
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

CM_EXPORT struct rdma_event_channel *rdma_create_event_channel(void) { FAIL_PTR(); }
CM_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel) {}
CM_EXPORT int rdma_create_id(struct rdma_event_channel *channel,
			     struct rdma_cm_id **id, void *context,
			     enum rdma_port_space ps) { FAIL_INT(int); }
CM_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
			     struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr) { FAIL_INT(int); }
CM_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id) {}
CM_EXPORT int rdma_destroy_id(struct rdma_cm_id *id) { FAIL_INT(int); }
CM_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr) { FAIL_INT(int); }
CM_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				struct sockaddr *dst_addr, int timeout_ms) { FAIL_INT(int); }
CM_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms) { FAIL_INT(int); }
CM_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr) { FAIL_INT(int); }
CM_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id,
				struct ibv_qp_init_attr_ex *qp_init_attr) { FAIL_INT(int); }
CM_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id) {}
CM_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			      struct ibv_srq_init_attr *attr) { FAIL_INT(int); }
CM_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id,
				 struct ibv_srq_init_attr_ex *attr) { FAIL_INT(int); }
CM_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id) {}
CM_EXPORT int rdma_connect(struct rdma_cm_id *id,
			   struct rdma_conn_param *conn_param) { FAIL_INT(int); }
CM_EXPORT int rdma_establish(struct rdma_cm_id *id) { FAIL_INT(int); }
CM_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog) { FAIL_INT(int); }
CM_EXPORT int rdma_get_request(struct rdma_cm_id *listen,
			       struct rdma_cm_id **id) { FAIL_INT(int); }
CM_EXPORT int rdma_accept(struct rdma_cm_id *id,
			  struct rdma_conn_param *conn_param) { FAIL_INT(int); }
CM_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			  uint8_t private_data_len) { FAIL_INT(int); }
CM_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			      uint8_t private_data_len) { FAIL_INT(int); }
CM_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event) { FAIL_INT(int); }
CM_EXPORT int rdma_disconnect(struct rdma_cm_id *id) { FAIL_INT(int); }
CM_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
				  void *context) { FAIL_INT(int); }
CM_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id,
				   struct sockaddr *addr) { FAIL_INT(int); }
CM_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
				     struct rdma_cm_join_mc_attr_ex *mc_join_attr,
				     void *context) { FAIL_INT(int); }
CM_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel,
				struct rdma_cm_event **event) { FAIL_INT(int); }
CM_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event) { FAIL_INT(int); }
CM_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id) { return 0; }
CM_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id) { return 0; }
CM_EXPORT struct ibv_context **rdma_get_devices(int *num_devices) { FAIL_PTR(); }
CM_EXPORT void rdma_free_devices(struct ibv_context **list) {}
CM_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
			      void *optval, size_t optlen) { FAIL_INT(int); }
CM_EXPORT int rdma_migrate_id(struct rdma_cm_id *id,
			      struct rdma_event_channel *channel) { FAIL_INT(int); }
CM_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
			       const struct rdma_addrinfo *hints,
			       struct rdma_addrinfo **res)
{
	/* rdma_getaddrinfo returns -1 with errno, as getaddrinfo's RDMA twin. */
	FAIL_INT(int);
}
CM_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res) {}
CM_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
				int *qp_attr_mask) { FAIL_INT(int); }
CM_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece) { FAIL_INT(int); }
CM_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece) { FAIL_INT(int); }

CM_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned int)event < sizeof(names) / sizeof(names[0]))
		return names[event];
	return "UNKNOWN EVENT";
}

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

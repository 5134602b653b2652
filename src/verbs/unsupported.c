// SPDX-License-Identifier: MIT
/*
 * Exported verbs uroce does not implement (docs/verbs.md lists them). Each
 * fails with EOPNOTSUPP in the function's own convention: NULL + errno, -1 +
 * errno, or the error code returned. They exist so that every binary built
 * against rdma-core 44 loads (src/verbs/gen-map.sh, tests/verbs/abi_load.sh).
 *
 * The IBVERBS_PRIVATE_34 symbols are the provider interface (libmlx5,
 * libefa and pyverbs' provider modules import them). We load no providers,
 * so driver registration is a no-op and the command wrappers fail. Their
 * prototypes live in rdma-core's uninstalled driver.h; the argument lists
 * are irrelevant to a stub that ignores them (SysV x86-64 / AArch64 callers
 * clean up their own arguments), so they are declared here without any.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "urv.h"

/* ---- public API --------------------------------------------------------- */

URV_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

URV_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

URV_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
					    size_t length, uint64_t iova, int fd,
					    int access)
{
	return urv_err_ptr(-EOPNOTSUPP);
}

URV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp,
					  enum ibv_wr_opcode op, uint32_t flags)
{
	return 0; /* no in-order data placement guarantee is advertised */
}

URV_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
					   struct ibv_ah_attr *attr,
					   uint8_t eth_mac[6], uint16_t *vid)
{
	/* The kernel routes our UDP packets: no L2 resolution needed. */
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

/* Old provider registration (ibv_register_driver@IBVERBS_1.1, hidden in
 * rdma-core): no-op, we load no providers. */
void urv__register_driver(const char *name, void *init_func);
__asm__(".symver urv__register_driver, ibv_register_driver@IBVERBS_1.1");
URV_EXPORT void urv__register_driver(const char *name, void *init_func)
{
}

/* ---- IBVERBS_PRIVATE_34: the provider interface --------------------------- */

URV_EXPORT bool verbs_allow_disassociate_destroy;

#define URV_PRIV_INT(name)                                                   \
	int name(void);                                                      \
	URV_EXPORT int name(void)                                            \
	{                                                                    \
		errno = EOPNOTSUPP;                                          \
		return EOPNOTSUPP;                                           \
	}
#define URV_PRIV_PTR(name)                                                   \
	void *name(void);                                                    \
	URV_EXPORT void *name(void)                                          \
	{                                                                    \
		errno = EOPNOTSUPP;                                          \
		return NULL;                                                 \
	}
#define URV_PRIV_VOID(name)                                                  \
	void name(void);                                                     \
	URV_EXPORT void name(void)                                           \
	{                                                                    \
	}

URV_PRIV_VOID(verbs_register_driver_34)
URV_PRIV_VOID(verbs_set_ops)
URV_PRIV_VOID(verbs_init_cq)
URV_PRIV_VOID(verbs_uninit_context)
URV_PRIV_VOID(__verbs_log)
URV_PRIV_PTR(verbs_open_device)
URV_PRIV_PTR(_verbs_init_and_alloc_context)
URV_PRIV_INT(execute_ioctl)

unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link);
URV_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link)
{
	return num_attrs;
}

int ibv_read_ibdev_sysfs_file(void);
URV_EXPORT int ibv_read_ibdev_sysfs_file(void)
{
	errno = EOPNOTSUPP; /* our devices have no sysfs directory */
	return -1;
}

URV_PRIV_INT(ibv_cmd_advise_mr)
URV_PRIV_INT(ibv_cmd_alloc_dm)
URV_PRIV_INT(ibv_cmd_alloc_mw)
URV_PRIV_INT(ibv_cmd_alloc_pd)
URV_PRIV_INT(ibv_cmd_attach_mcast)
URV_PRIV_INT(ibv_cmd_close_xrcd)
URV_PRIV_INT(ibv_cmd_create_ah)
URV_PRIV_INT(ibv_cmd_create_counters)
URV_PRIV_INT(ibv_cmd_create_cq)
URV_PRIV_INT(ibv_cmd_create_cq_ex)
URV_PRIV_INT(ibv_cmd_create_flow)
URV_PRIV_INT(ibv_cmd_create_flow_action_esp)
URV_PRIV_INT(ibv_cmd_create_qp)
URV_PRIV_INT(ibv_cmd_create_qp_ex)
URV_PRIV_INT(ibv_cmd_create_qp_ex2)
URV_PRIV_INT(ibv_cmd_create_rwq_ind_table)
URV_PRIV_INT(ibv_cmd_create_srq)
URV_PRIV_INT(ibv_cmd_create_srq_ex)
URV_PRIV_INT(ibv_cmd_create_wq)
URV_PRIV_INT(ibv_cmd_dealloc_mw)
URV_PRIV_INT(ibv_cmd_dealloc_pd)
URV_PRIV_INT(ibv_cmd_dereg_mr)
URV_PRIV_INT(ibv_cmd_destroy_ah)
URV_PRIV_INT(ibv_cmd_destroy_counters)
URV_PRIV_INT(ibv_cmd_destroy_cq)
URV_PRIV_INT(ibv_cmd_destroy_flow)
URV_PRIV_INT(ibv_cmd_destroy_flow_action)
URV_PRIV_INT(ibv_cmd_destroy_qp)
URV_PRIV_INT(ibv_cmd_destroy_rwq_ind_table)
URV_PRIV_INT(ibv_cmd_destroy_srq)
URV_PRIV_INT(ibv_cmd_destroy_wq)
URV_PRIV_INT(ibv_cmd_detach_mcast)
URV_PRIV_INT(ibv_cmd_free_dm)
URV_PRIV_INT(ibv_cmd_get_context)
URV_PRIV_INT(ibv_cmd_modify_cq)
URV_PRIV_INT(ibv_cmd_modify_flow_action_esp)
URV_PRIV_INT(ibv_cmd_modify_qp)
URV_PRIV_INT(ibv_cmd_modify_qp_ex)
URV_PRIV_INT(ibv_cmd_modify_srq)
URV_PRIV_INT(ibv_cmd_modify_wq)
URV_PRIV_INT(ibv_cmd_open_qp)
URV_PRIV_INT(ibv_cmd_open_xrcd)
URV_PRIV_INT(ibv_cmd_poll_cq)
URV_PRIV_INT(ibv_cmd_post_recv)
URV_PRIV_INT(ibv_cmd_post_send)
URV_PRIV_INT(ibv_cmd_post_srq_recv)
URV_PRIV_INT(ibv_cmd_query_context)
URV_PRIV_INT(ibv_cmd_query_device_any)
URV_PRIV_INT(ibv_cmd_query_mr)
URV_PRIV_INT(ibv_cmd_query_port)
URV_PRIV_INT(ibv_cmd_query_qp)
URV_PRIV_INT(ibv_cmd_query_srq)
URV_PRIV_INT(ibv_cmd_read_counters)
URV_PRIV_INT(ibv_cmd_reg_dm_mr)
URV_PRIV_INT(ibv_cmd_reg_dmabuf_mr)
URV_PRIV_INT(ibv_cmd_reg_mr)
URV_PRIV_INT(ibv_cmd_req_notify_cq)
URV_PRIV_INT(ibv_cmd_rereg_mr)
URV_PRIV_INT(ibv_cmd_resize_cq)

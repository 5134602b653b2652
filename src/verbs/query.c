// SPDX-License-Identifier: MIT
/*
 * Device, port, GID and P_Key queries. The attributes describe what the
 * engine and transport really do; docs/verbs.md lists them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "urv.h"
#include "urv_flow.h"
#include "ur_iw.h"

#undef ibv_query_port

/* rxe-like capabilities, minus what we do not implement (SRQ resize,
 * memory management extensions). */
#define URV_DEVICE_CAP_FLAGS                                                 \
	(IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR |                \
	 IBV_DEVICE_CHANGE_PHY_PORT | IBV_DEVICE_UD_AV_PORT_ENFORCE |         \
	 IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SYS_IMAGE_GUID |           \
	 IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_MEM_WINDOW |                  \
	 IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_XRC)

static void fill_device_attr(struct urv_device *dev, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "uroce 0.1");
	a->node_guid = dev->guid;
	a->sys_image_guid = dev->guid;
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 0xfffff000;
	a->vendor_id = URV_VENDOR_ID;
	a->vendor_part_id = URV_VENDOR_PART_ID;
	a->hw_ver = 0;
	a->max_qp = URV_MAX_QP;
	a->max_qp_wr = URV_MAX_QP_WR;
	a->device_cap_flags = URV_DEVICE_CAP_FLAGS;
	a->max_sge = URV_MAX_SGE;
	a->max_sge_rd = URV_MAX_SGE;
	a->max_cq = URV_MAX_CQ;
	a->max_cqe = URV_MAX_CQE;
	a->max_mr = URV_MAX_MR;
	a->max_pd = URV_MAX_PD;
	a->max_mw = URV_MAX_MR;
	a->max_qp_rd_atom = URV_MAX_RD_ATOM;
	a->max_ee_rd_atom = 0;
	a->max_res_rd_atom = URV_MAX_RD_ATOM * URV_MAX_QP;
	a->max_qp_init_rd_atom = URV_MAX_RD_ATOM;
	a->max_ee_init_rd_atom = 0;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_ah = URV_MAX_AH;
	a->max_raw_ethy_qp = URV_MAX_QP; /* raw packet QPs (raw.c) */
	/* Multicast (mcast.c): the engine's group list has no fixed size. */
	a->max_mcast_grp = URV_MAX_MCAST_GRP;
	a->max_mcast_qp_attach = URV_MAX_MCAST_QP;
	a->max_total_mcast_qp_attach = URV_MAX_MCAST_GRP * URV_MAX_MCAST_QP;
	a->max_srq = URV_MAX_SRQ;
	a->max_srq_wr = URV_MAX_SRQ_WR;
	a->max_srq_sge = URV_MAX_SGE;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = (uint8_t)dev->nports;
	if (urv__dev_is_iwarp(dev)) {
		/* As siw reports itself (siw_query_device): RC only, no
		 * atomics, SRQ, windows, multicast or raw QPs here, READ
		 * with one SGE, 128 READs each way. */
		a->device_cap_flags = IBV_DEVICE_PORT_ACTIVE_EVENT |
				      IBV_DEVICE_SYS_IMAGE_GUID;
		a->max_sge_rd = 1;
		a->max_qp_rd_atom = UR_IW_IRQ_MAX;
		a->max_qp_init_rd_atom = UR_IW_IRQ_MAX;
		a->max_res_rd_atom = UR_IW_IRQ_MAX * URV_MAX_QP;
		a->atomic_cap = IBV_ATOMIC_NONE;
		a->max_mw = 0;
		a->max_ah = 0;
		a->max_raw_ethy_qp = 0;
		a->max_mcast_grp = 0;
		a->max_mcast_qp_attach = 0;
		a->max_total_mcast_qp_attach = 0;
		a->max_srq = 0;
		a->max_srq_wr = 0;
		a->max_srq_sge = 0;
	}
}

URV_EXPORT int ibv_query_device(struct ibv_context *context,
				struct ibv_device_attr *device_attr)
{
	if (!urv__is_our_context(context) || !device_attr)
		return EINVAL;
	fill_device_attr(to_uctx(context)->dev, device_attr);
	return 0;
}

int urv__query_device_ex(struct ibv_context *ctx,
			  const struct ibv_query_device_ex_input *in,
			  struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;

	if (in && in->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	fill_device_attr(to_uctx(ctx)->dev, &a.orig_attr);
	a.device_cap_flags_ex = a.orig_attr.device_cap_flags;
	/* Completion timestamps are the engine's monotonic ns clock. */
	a.completion_timestamp_mask = UINT64_MAX;
	a.hca_core_clock = 1000000; /* kHz: 1 tick = 1 ns */
	a.phys_port_cnt_ex = (uint32_t)to_uctx(ctx)->dev->nports;
	a.max_dm_size = URV_MAX_DM_SIZE; /* host memory (dm.c) */
	/* Nothing is ever pinned: every region can be on-demand, explicit
	 * or implicit (docs/verbs.md "Memory"), XRC's as RC's. */
	a.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	a.odp_caps.per_transport_caps.rc_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
	a.xrc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_WRITE |
			 IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC |
			 IBV_ODP_SUPPORT_SRQ_RECV;
	a.odp_caps.per_transport_caps.uc_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_SRQ_RECV;
	a.odp_caps.per_transport_caps.ud_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		IBV_ODP_SUPPORT_SRQ_RECV;
	/* Packet pacing: a token bucket per QP (docs/cc.md). */
	a.packet_pacing_caps.qp_rate_limit_min = URV_PP_RATE_MIN_KBPS;
	a.packet_pacing_caps.qp_rate_limit_max = URV_PP_RATE_MAX_KBPS;
	a.packet_pacing_caps.supported_qpts =
		1u << IBV_QPT_RC | 1u << IBV_QPT_UC | 1u << IBV_QPT_UD;
	/* Receive-side scaling over raw packet QPs (raw.c): Toeplitz over
	 * addresses and ports; no checksum, VLAN or FCS offloads
	 * (raw_packet_caps 0). */
	a.rss_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
	a.rss_caps.max_rwq_indirection_tables = URV_MAX_QP;
	a.rss_caps.max_rwq_indirection_table_size = 1u << URV_MAX_RWQ_IND_LOG;
	a.rss_caps.rx_hash_fields_mask = URV_RSS_FIELDS;
	a.rss_caps.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
	a.max_wq_type_rq = URV_MAX_QP;
	if (attr_size > sizeof(a))
		attr_size = sizeof(a);
	memset(attr, 0, attr_size);
	memcpy(attr, &a, attr_size);
	return 0;
}

/*
 * ibv_query_rt_values_ex: the completion timestamp clock now. As libmlx5
 * gives its cycle counter, the raw clock is the count in tv_nsec with
 * tv_sec 0; here the count is ns of CLOCK_MONOTONIC (hca_core_clock
 * 1 GHz), so ibv_wc_read_completion_ts values compare with it directly.
 */
int urv__query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *v)
{
	if (!urv__is_our_context(ctx) || !v ||
	    (v->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK))
		return EINVAL;
	if (v->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		v->raw_clock.tv_sec = 0;
		v->raw_clock.tv_nsec = (long)ur_now();
	}
	return 0;
}

static void fill_port_attr(struct urv_context *ctx, unsigned int port_num,
			   struct ibv_port_attr *a)
{
	const struct urv_port *port = &ctx->dev->ports[port_num - 1];
	/* The state the link watch last told (port.c). */
	bool down = atomic_load(&ctx->port_down[port_num - 1]);

	memset(a, 0, sizeof(*a));
	a->state = down ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = port->active_mtu;
	/* A fixed-size table as rxe has; entries past the addresses are
	 * empty (ibv_query_gid_ex: ENODATA, ibv_query_gid: zero GID). */
	a->gid_tbl_len = URV_MAX_GID;
	a->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	a->max_msg_sz = 1u << 31;
	a->pkey_tbl_len = 1;
	a->max_vl_num = 1;
	a->active_width = 1;       /* 1X, as rxe */
	a->active_speed = 1 << 5;  /* EDR, as rxe */
	a->phys_state = down ? 3 : 5; /* Disabled, LinkUp (as rxe) */
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
}

int urv__query_port(struct ibv_context *ctx, uint8_t port,
		     struct ibv_port_attr *attr, size_t attr_len)
{
	struct ibv_port_attr a;

	if (!urv__port(to_uctx(ctx)->dev, port))
		return EINVAL;
	fill_port_attr(to_uctx(ctx), port, &a);
	/* A caller built against newer headers passes a larger struct (NCCL's
	 * ibvcore.h adds active_speed_ex and does not clear it): as rdma-core's
	 * __lib_query_port, zero what we do not know rather than leave it. */
	if (attr_len > sizeof(a)) {
		memset((char *)attr + sizeof(a), 0, attr_len - sizeof(a));
		attr_len = sizeof(a);
	}
	memcpy(attr, &a, attr_len);
	return 0;
}

/* The IBVERBS_1.1 entry point takes the pre-"flags" layout. */
struct _compat_ibv_port_attr {
	char bytes[offsetof(struct ibv_port_attr, flags)];
};

URV_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			      struct _compat_ibv_port_attr *port_attr)
{
	if (!urv__is_our_context(context))
		return EINVAL;
	return urv__query_port(context, port_num,
				(struct ibv_port_attr *)port_attr,
				sizeof(*port_attr));
}

URV_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num,
			     int index, union ibv_gid *gid)
{
	struct urv_port *port;

	if (!urv__is_our_context(context) ||
	    !(port = urv__port(to_uctx(context)->dev, port_num)))
		return urv_err_int(-EINVAL);
	if (index < 0 || index >= URV_MAX_GID)
		return urv_err_int(-EINVAL);
	if (index >= port->num_gids) { /* empty entry, as rdma-core reports it */
		memset(gid, 0, sizeof(*gid));
		return 0;
	}
	*gid = port->gids[index].gid;
	return 0;
}

static void fill_gid_entry(struct urv_port *port, unsigned int port_num, int i,
			   struct ibv_gid_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->gid = port->gids[i].gid;
	e->gid_index = i;
	e->port_num = port_num;
	e->gid_type = IBV_GID_TYPE_ROCE_V2;
	e->ndev_ifindex = port->ifindex;
}

URV_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
				 uint32_t gid_index, struct ibv_gid_entry *entry,
				 uint32_t flags, size_t entry_size)
{
	struct urv_port *port;

	if (!urv__is_our_context(context) || !entry || flags ||
	    entry_size < sizeof(*entry))
		return EINVAL;
	if (port_num > 255 ||
	    !(port = urv__port(to_uctx(context)->dev, port_num)))
		return EINVAL;
	if (gid_index >= URV_MAX_GID)
		return EINVAL;
	if (gid_index >= (uint32_t)port->num_gids)
		return ENODATA;
	fill_gid_entry(port, port_num, gid_index, entry);
	return 0;
}

URV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context,
					struct ibv_gid_entry *entries,
					size_t max_entries, uint32_t flags,
					size_t entry_size)
{
	struct urv_device *dev;
	size_t n = 0;

	if (!urv__is_our_context(context) || flags ||
	    entry_size < sizeof(*entries))
		return -EINVAL;
	dev = to_uctx(context)->dev;
	for (int p = 0; p < dev->nports; p++)
		n += (size_t)dev->ports[p].num_gids;
	/* As the kernel: the array must hold every valid entry, of every
	 * port. */
	if (max_entries < n)
		return -EINVAL;
	if (n && !entries)
		return -EINVAL;
	n = 0;
	for (int p = 0; p < dev->nports; p++)
		for (int i = 0; i < dev->ports[p].num_gids; i++)
			fill_gid_entry(&dev->ports[p], (unsigned int)p + 1, i,
				       (struct ibv_gid_entry *)
				       ((char *)entries + n++ * entry_size));
	return (ssize_t)n;
}

/* rdma-core driver.h's enum ibv_gid_type_sysfs. */
enum urv_gid_type_sysfs {
	URV_GID_TYPE_SYSFS_IB_ROCE_V1,
	URV_GID_TYPE_SYSFS_ROCE_V2,
};

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, enum urv_gid_type_sysfs *type);
URV_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
				  unsigned int index,
				  enum urv_gid_type_sysfs *type)
{
	struct urv_port *port;

	if (!urv__is_our_context(context) || !type ||
	    !(port = urv__port(to_uctx(context)->dev, port_num)))
		return urv_err_int(-EINVAL);
	if (index >= (unsigned int)port->num_gids)
		return urv_err_int(-ENODATA);
	*type = URV_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

URV_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num,
			      int index, __be16 *pkey)
{
	if (!urv__is_our_context(context) || index != 0 ||
	    !urv__port(to_uctx(context)->dev, port_num))
		return urv_err_int(-EINVAL);
	*pkey = htobe16(0xffff);
	return 0;
}

URV_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num,
				  __be16 pkey)
{
	if (!urv__is_our_context(context) ||
	    !urv__port(to_uctx(context)->dev, port_num))
		return urv_err_int(-EINVAL);
	/* The default P_Key, full or limited member, is index 0. */
	if ((be16toh(pkey) & 0x7fff) == 0x7fff)
		return 0;
	return urv_err_int(-ENOENT);
}

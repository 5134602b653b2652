// SPDX-License-Identifier: MIT
/*
 * ibv_attach_mcast / ibv_detach_mcast: a UD QP joins or leaves a multicast
 * group (IBTA 10.5, 11.3). On RoCEv2 the MGID is the group's IP address as
 * a GID (IPv4-mapped for an IPv4 group, as Linux's rdma_cm makes it from
 * the address: cma_iboe_set_mgid) and the LID is unused; the engine's
 * mcast.c joins the IP group on the device's interface. Sending to a group
 * is an ordinary UD send to an AH whose DGID is the MGID, remote QPN
 * 0xFFFFFF.
 */
#include <errno.h>
#include <string.h>

#include "urv.h"

/* The group's IP address from the MGID; -EINVAL if it is no multicast
 * address (IPv4 224/4 mapped, or IPv6 ff00::/8). */
static int mgid_to_ip(const union ibv_gid *gid, bool *v6, uint8_t ip[16])
{
	struct ur_ipudp p;

	urv__gid_to_addr(gid, &p, true);
	/* 224.0.0.0/4 (first byte 1110xxxx), or ff00::/8 */
	if (p.v6 ? p.dst[0] != 0xff : (p.dst[0] & 0xf0) != 0xe0)
		return -EINVAL;
	*v6 = p.v6;
	memcpy(ip, p.dst, 16);
	return 0;
}

static int mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, bool attach)
{
	struct urv_qp *qp;
	uint8_t ip[16];
	bool v6;
	int ret;

	if (!ibqp || !gid || !urv__is_our_context(ibqp->context))
		return EINVAL;
	if (ibqp->qp_type != IBV_QPT_UD)
		return EINVAL; /* only UD QPs take multicast (10.5) */
	ret = mgid_to_ip(gid, &v6, ip);
	if (ret)
		return -ret;
	qp = to_uqp(ibqp);
	ret = attach ? ur_engine_mcast_attach(qp->eng, &qp->uqp, v6, ip)
		     : ur_engine_mcast_detach(qp->eng, &qp->uqp, v6, ip);
	return -ret;
}

URV_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
				uint16_t lid)
{
	(void)lid; /* no LIDs on RoCE */
	return mcast(qp, gid, true);
}

URV_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
				uint16_t lid)
{
	(void)lid;
	return mcast(qp, gid, false);
}

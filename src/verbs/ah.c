// SPDX-License-Identifier: MIT
/*
 * Address handles (UD). On RoCEv2 an AH is a destination IP address taken
 * from the GRH's DGID, and a UD receive buffer starts with 40 bytes that
 * hold the GRH, or for IPv4 the IPv4 header in its last 20 bytes (as on
 * rxe and mlx5), which ibv_init_ah_from_wc() reads back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "urv.h"

URV_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd,
					struct ibv_ah_attr *attr)
{
	struct urv_ah *ah;
	int ret;

	if (!pd || !attr || !urv__is_our_context(pd->context))
		return urv_err_ptr(-EINVAL);
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return urv_err_ptr(-ENOMEM);
	ret = urv__ah_to_path(to_uctx(pd->context), attr, &ah->uah.path);
	if (ret) {
		free(ah);
		return urv_err_ptr(ret);
	}
	ah->port_num = attr->port_num ? attr->port_num : 1;
	ah->ah.context = pd->context;
	ah->ah.pd = pd;
	atomic_fetch_add(&to_upd(pd)->users, 1);
	return &ah->ah;
}

URV_EXPORT int ibv_destroy_ah(struct ibv_ah *ibah)
{
	urv__pd_put(to_upd(ibah->pd));
	free(to_uah(ibah));
	return 0;
}

URV_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
				   struct ibv_wc *wc, struct ibv_grh *grh,
				   struct ibv_ah_attr *ah_attr)
{
	const uint8_t *raw = (const uint8_t *)grh;
	struct urv_port *port;
	uint8_t sip[16] = { 0 }, dip[16] = { 0 };
	bool v6;
	int idx;

	if (!urv__is_our_context(context) || !wc || !grh || !ah_attr ||
	    !(port = urv__port(to_uctx(context)->dev, port_num)))
		return urv_err_int(-EINVAL);
	if (!(wc->wc_flags & IBV_WC_GRH))
		return urv_err_int(-EINVAL); /* RoCE needs the GRH */
	memset(ah_attr, 0, sizeof(*ah_attr));
	/* IPv4 header in bytes 20..39: version nibble 4, IHL 5. */
	v6 = raw[20] != 0x45;
	if (v6) {
		memcpy(sip, grh->sgid.raw, 16);
		memcpy(dip, grh->dgid.raw, 16);
		ah_attr->grh.traffic_class =
			(uint8_t)(be32toh(grh->version_tclass_flow) >> 20);
		ah_attr->grh.flow_label =
			be32toh(grh->version_tclass_flow) & 0xfffff;
	} else {
		memcpy(sip, raw + 20 + 12, 4);
		memcpy(dip, raw + 20 + 16, 4);
		ah_attr->grh.traffic_class = raw[21];
	}
	urv__gid_from_ip(&ah_attr->grh.dgid, sip, v6);
	idx = urv__find_gid(port, dip, v6);
	if (idx < 0)
		return urv_err_int(-ENOENT);
	ah_attr->grh.sgid_index = (uint8_t)idx;
	ah_attr->grh.hop_limit = 0xff;
	ah_attr->is_global = 1;
	ah_attr->port_num = port_num;
	ah_attr->dlid = 0;
	ah_attr->sl = wc->sl;
	return 0;
}

URV_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd,
						struct ibv_wc *wc,
						struct ibv_grh *grh,
						uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (!pd || ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}

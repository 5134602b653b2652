// SPDX-License-Identifier: MIT
/*
 * uroce-devinfo: list uroce devices and their attributes through the
 * public verbs API (as ibv_devinfo -v does), plus what only uroce knows:
 * how incoming ICRCs are checked (uroce_query_icrc_mode, include/uroce).
 *
 *   uroce-devinfo [-d DEV] [-v] [-l]
 */
#include <arpa/inet.h>
#include <endian.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <uroce/uroce.h>

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"Usage: %s [options]\n"
		"  -d, --ib-dev=DEV   only this device (default: all)\n"
		"  -l, --list         list device names only\n"
		"  -v, --verbose      print all device capabilities\n"
		"  -h, --help         this help\n"
		"Environment: UROCE_IP=ADDR gives one device for ADDR; without it\n"
		"every interface that is up is a device.\n", argv0);
}

static const char *mtu_str(enum ibv_mtu m)
{
	switch (m) {
	case IBV_MTU_256: return "256";
	case IBV_MTU_512: return "512";
	case IBV_MTU_1024: return "1024";
	case IBV_MTU_2048: return "2048";
	case IBV_MTU_4096: return "4096";
	default: return "invalid";
	}
}

static void print_guid(const char *label, __be64 g)
{
	uint64_t v = be64toh(g);

	printf("\t%-24s%04x:%04x:%04x:%04x\n", label, (unsigned)(v >> 48) & 0xffff,
	       (unsigned)(v >> 32) & 0xffff, (unsigned)(v >> 16) & 0xffff,
	       (unsigned)v & 0xffff);
}

static void print_gid(const union ibv_gid *gid, char *buf, size_t len)
{
	static const uint8_t v4pfx[12] = { [10] = 0xff, [11] = 0xff };

	if (!memcmp(gid->raw, v4pfx, sizeof(v4pfx))) {
		char a[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, gid->raw + 12, a, sizeof(a));
		snprintf(buf, len, "::ffff:%s", a);
	} else {
		inet_ntop(AF_INET6, gid->raw, buf, (socklen_t)len);
	}
}

static int show_device(struct ibv_device *dev, int verbose)
{
	struct ibv_device_attr_ex dx;
	struct ibv_device_attr *d = &dx.orig_attr;
	struct ibv_context *ctx;
	const char *icrc;
	int ret = 0;

	ctx = ibv_open_device(dev);
	if (!ctx) {
		fprintf(stderr, "%s: ibv_open_device: %m\n", ibv_get_device_name(dev));
		return 1;
	}
	ret = ibv_query_device_ex(ctx, NULL, &dx);
	if (ret) {
		fprintf(stderr, "%s: ibv_query_device_ex: %s\n",
			ibv_get_device_name(dev), strerror(ret));
		goto out;
	}
	icrc = uroce_query_icrc_mode(ctx);

	printf("hca_id:\t%s\n", ibv_get_device_name(dev));
	printf("\t%-24s%s\n", "transport:",
	       dev->transport_type == IBV_TRANSPORT_IB ? "InfiniBand (RoCEv2)" : "other");
	printf("\t%-24s%s\n", "fw_ver:", d->fw_ver);
	print_guid("node_guid:", d->node_guid);
	print_guid("sys_image_guid:", d->sys_image_guid);
	printf("\t%-24s0x%x\n", "vendor_id:", d->vendor_id);
	printf("\t%-24s%u\n", "vendor_part_id:", d->vendor_part_id);
	printf("\t%-24s%s\n", "icrc_mode:", icrc ? icrc : "unknown");
	printf("\t%-24s%u\n", "phys_port_cnt:", d->phys_port_cnt);
	if (verbose) {
		printf("\t%-24s%d\n", "max_qp:", d->max_qp);
		printf("\t%-24s%d\n", "max_qp_wr:", d->max_qp_wr);
		printf("\t%-24s0x%08x\n", "device_cap_flags:", d->device_cap_flags);
		printf("\t%-24s%d\n", "max_sge:", d->max_sge);
		printf("\t%-24s%d\n", "max_cq:", d->max_cq);
		printf("\t%-24s%d\n", "max_cqe:", d->max_cqe);
		printf("\t%-24s%d\n", "max_mr:", d->max_mr);
		printf("\t%-24s%d\n", "max_pd:", d->max_pd);
		printf("\t%-24s%d\n", "max_qp_rd_atom:", d->max_qp_rd_atom);
		printf("\t%-24s%d\n", "max_qp_init_rd_atom:", d->max_qp_init_rd_atom);
		printf("\t%-24s%s\n", "atomic_cap:",
		       d->atomic_cap == IBV_ATOMIC_HCA ? "ATOMIC_HCA" :
		       d->atomic_cap == IBV_ATOMIC_GLOB ? "ATOMIC_GLOB" : "ATOMIC_NONE");
		printf("\t%-24s%d\n", "max_ah:", d->max_ah);
		printf("\t%-24s%d\n", "max_srq:", d->max_srq);
		printf("\t%-24s%u\n", "max_pkeys:", d->max_pkeys);
		printf("\t%-24s%llu kHz\n", "hca_core_clock:",
		       (unsigned long long)dx.hca_core_clock);
	}

	for (uint8_t port = 1; port <= d->phys_port_cnt; port++) {
		struct ibv_port_attr pa;
		struct ibv_gid_entry *gids;
		ssize_t n;

		if (ibv_query_port(ctx, port, &pa)) {
			fprintf(stderr, "ibv_query_port %u failed\n", port);
			ret = 1;
			continue;
		}
		printf("\t\tport:\t%u\n", port);
		printf("\t\t\t%-20s%s\n", "state:", ibv_port_state_str(pa.state));
		printf("\t\t\t%-20s%s\n", "max_mtu:", mtu_str(pa.max_mtu));
		printf("\t\t\t%-20s%s\n", "active_mtu:", mtu_str(pa.active_mtu));
		printf("\t\t\t%-20s%s\n", "link_layer:",
		       pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand");
		printf("\t\t\t%-20s0x%x\n", "max_msg_sz:", pa.max_msg_sz);
		if (verbose) {
			printf("\t\t\t%-20s0x%08x\n", "port_cap_flags:", pa.port_cap_flags);
			printf("\t\t\t%-20s%u\n", "pkey_tbl_len:", pa.pkey_tbl_len);
		}
		printf("\t\t\t%-20s%d\n", "gid_tbl_len:", pa.gid_tbl_len);
		gids = calloc(pa.gid_tbl_len > 0 ? (size_t)pa.gid_tbl_len : 1,
			      sizeof(*gids));
		if (!gids) {
			ret = 1;
			continue;
		}
		n = ibv_query_gid_table(ctx, gids, (size_t)pa.gid_tbl_len, 0);
		for (ssize_t i = 0; i < n; i++) {
			char buf[64];

			print_gid(&gids[i].gid, buf, sizeof(buf));
			printf("\t\t\tGID[%3u]:\t\t%s, %s\n", gids[i].gid_index, buf,
			       gids[i].gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2" :
			       "other");
		}
		free(gids);
	}
	printf("\n");
out:
	ibv_close_device(ctx);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "list", no_argument, NULL, 'l' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *want = NULL;
	struct ibv_device **list;
	int verbose = 0, list_only = 0, num, c, ret = 0, found = 0;

	while ((c = getopt_long(argc, argv, "d:lvh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': want = optarg; break;
		case 'l': list_only = 1; break;
		case 'v': verbose = 1; break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
	}
	if (optind < argc) {
		usage(stderr, argv[0]);
		return 2;
	}

	list = ibv_get_device_list(&num);
	if (!list) {
		perror("ibv_get_device_list");
		return 1;
	}
	if (list_only)
		printf("%d HCA%s found:\n", num, num == 1 ? "" : "s");
	for (int i = 0; i < num; i++) {
		if (want && strcmp(want, ibv_get_device_name(list[i])))
			continue;
		found++;
		if (list_only)
			printf("\t%s\n", ibv_get_device_name(list[i]));
		else
			ret |= show_device(list[i], verbose);
	}
	if (!num && !list_only)
		printf("No uroce devices found\n");
	if (want && !found) {
		fprintf(stderr, "IB device '%s' wasn't found\n", want);
		ret = 1;
	}
	ibv_free_device_list(list);
	return ret;
}

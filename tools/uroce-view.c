// SPDX-License-Identifier: MIT
/*
 * uroce-view: write the device view of this environment's uroce devices
 * and print its directory (uroce-run exports it as UROCE_VIEW_DIR for
 * liburoce_view.so, src/view/view.c).
 *
 * The tree mirrors what Linux shows for an rxe device, built from the
 * public verbs API (as ibv_devinfo sees the devices):
 *   dev/infiniband/<dev_name>, rdma_cm       -> /dev/null (an rw char device)
 *   sys/class/infiniband/<name>/             node_type, node_guid, ports/1/...
 *       ports/1/gids/<i>, gid_attrs/types/<i> ("RoCE v2"), gid_attrs/ndevs/<i>
 *       device/net/<ifname> -> /sys/class/net/<ifname> (each port's)
 *   sys/class/infiniband_verbs/<dev_name>/   ibdev, abi_version, dev
 * Only GID entries that hold an address get files: clients read a missing
 * types/<i> as an unused entry, as Linux's EINVAL for an empty one.
 *
 * The directory is named after a hash of its contents, so processes with
 * the same devices share one and nothing accumulates per process: it is
 * written under a temporary name and renamed into place whole.
 *
 *   uroce-view [-q]
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <infiniband/verbs.h>

enum { ENT_DIR, ENT_FILE, ENT_LINK };

struct ent {
	int type;
	char path[160];
	char data[96]; /* file contents (a newline is added) or link target */
};

struct tree {
	struct ent *e;
	size_t n, cap;
	uint64_t hash;
};

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"Usage: %s [options]\n"
		"Writes the /dev/infiniband and /sys/class/infiniband view of the\n"
		"uroce devices of this environment (UROCE_IP, ...) and prints its\n"
		"directory; uroce-run uses it as UROCE_VIEW_DIR.\n"
		"  -q, --quiet   print nothing on errors (exit status only)\n"
		"  -h, --help    this help\n"
		"Environment: XDG_RUNTIME_DIR (the view goes to\n"
		"$XDG_RUNTIME_DIR/uroce-view, else /tmp/uroce-$UID/).\n", argv0);
}

static void fnv(uint64_t *h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		*h ^= b[i];
		*h *= 0x100000001b3ull;
	}
}

__attribute__((format(printf, 4, 5)))
static int add(struct tree *t, int type, const char *data, const char *fmt, ...)
{
	struct ent *e;
	va_list ap;
	int n;

	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		struct ent *ne = realloc(t->e, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		t->e = ne;
		t->cap = cap;
	}
	e = &t->e[t->n];
	memset(e, 0, sizeof(*e));
	e->type = type;
	va_start(ap, fmt);
	n = vsnprintf(e->path, sizeof(e->path), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(e->path) ||
	    (data && strlen(data) >= sizeof(e->data)))
		return -ENAMETOOLONG;
	if (data)
		strcpy(e->data, data);
	fnv(&t->hash, e, sizeof(*e));
	t->n++;
	return 0;
}

static void guid_str(__be64 g, char *buf, size_t len)
{
	uint64_t v = be64toh(g);

	snprintf(buf, len, "%04x:%04x:%04x:%04x", (unsigned)(v >> 48) & 0xffff,
		 (unsigned)(v >> 32) & 0xffff, (unsigned)(v >> 16) & 0xffff,
		 (unsigned)v & 0xffff);
}

static void gid_str(const union ibv_gid *g, char *buf, size_t len)
{
	size_t o = 0;

	for (int i = 0; i < 16; i += 2)
		o += (size_t)snprintf(buf + o, len - o, "%s%02x%02x", i ? ":" : "",
				      g->raw[i], g->raw[i + 1]);
}

/* ports/<p>/rate as the kernel prints it ("2.5 Gb/sec (1X SDR)"). */
static void rate_str(const struct ibv_port_attr *pa, char *buf, size_t len)
{
	static const struct { int speed; const char *name; double gbps; } sp[] = {
		{ 1, "SDR", 2.5 }, { 2, "DDR", 5 }, { 4, "QDR", 10 },
		{ 8, "FDR10", 10.3125 }, { 16, "FDR", 14.0625 },
		{ 32, "EDR", 25.78125 }, { 64, "HDR", 50 }, { 128, "NDR", 100 },
	};
	static const struct { int width; int n; } wd[] = {
		{ 1, 1 }, { 2, 4 }, { 4, 8 }, { 8, 12 }, { 16, 2 },
	};
	const char *name = "SDR";
	double g = 2.5;
	int w = 1;

	for (size_t i = 0; i < sizeof(sp) / sizeof(sp[0]); i++)
		if (sp[i].speed == pa->active_speed) {
			name = sp[i].name;
			g = sp[i].gbps;
		}
	for (size_t i = 0; i < sizeof(wd) / sizeof(wd[0]); i++)
		if (wd[i].width == pa->active_width)
			w = wd[i].n;
	snprintf(buf, len, "%g Gb/sec (%dX %s)", g * w, w, name);
}

static const char *state_str(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_DOWN: return "1: DOWN";
	case IBV_PORT_INIT: return "2: INIT";
	case IBV_PORT_ARMED: return "3: ARMED";
	case IBV_PORT_ACTIVE: return "4: ACTIVE";
	case IBV_PORT_ACTIVE_DEFER: return "5: ACTIVE_DEFER";
	default: return "0: NOP";
	}
}

/* The interfaces behind a device's ports, each once (a dual-port NIC has
 * both netdevs under its PCI device's net/). */
struct netdevs {
	char name[8][IF_NAMESIZE];
	int n;
};

static void netdev_add(struct netdevs *nd, const char *ifn)
{
	for (int i = 0; i < nd->n; i++)
		if (!strcmp(nd->name[i], ifn))
			return;
	if (nd->n < 8)
		snprintf(nd->name[nd->n++], IF_NAMESIZE, "%s", ifn);
}

static int add_port(struct tree *t, struct ibv_context *ctx, const char *dn,
		    uint8_t port, struct netdevs *nd)
{
	const char *cls = "sys/class/infiniband";
	struct ibv_port_attr pa;
	char buf[96];
	int ret;

	if (ibv_query_port(ctx, port, &pa))
		return -errno;
	ret = add(t, ENT_DIR, NULL, "%s/%s/ports/%u", cls, dn, port) ?:
	      add(t, ENT_DIR, NULL, "%s/%s/ports/%u/gids", cls, dn, port) ?:
	      add(t, ENT_DIR, NULL, "%s/%s/ports/%u/gid_attrs", cls, dn, port) ?:
	      add(t, ENT_DIR, NULL, "%s/%s/ports/%u/gid_attrs/types", cls, dn, port) ?:
	      add(t, ENT_DIR, NULL, "%s/%s/ports/%u/gid_attrs/ndevs", cls, dn, port) ?:
	      add(t, ENT_DIR, NULL, "%s/%s/ports/%u/pkeys", cls, dn, port) ?:
	      add(t, ENT_FILE, "0xffff", "%s/%s/ports/%u/pkeys/0", cls, dn, port) ?:
	      add(t, ENT_FILE, state_str(pa.state), "%s/%s/ports/%u/state", cls, dn, port) ?:
	      add(t, ENT_FILE, pa.state == IBV_PORT_ACTIVE ? "5: LinkUp" : "3: Disabled",
		  "%s/%s/ports/%u/phys_state", cls, dn, port) ?:
	      add(t, ENT_FILE, pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" :
		  "InfiniBand", "%s/%s/ports/%u/link_layer", cls, dn, port) ?:
	      add(t, ENT_FILE, "0x0", "%s/%s/ports/%u/lid", cls, dn, port) ?:
	      add(t, ENT_FILE, "0", "%s/%s/ports/%u/lid_mask_count", cls, dn, port) ?:
	      add(t, ENT_FILE, "0x0", "%s/%s/ports/%u/sm_lid", cls, dn, port) ?:
	      add(t, ENT_FILE, "0", "%s/%s/ports/%u/sm_sl", cls, dn, port);
	if (ret)
		return ret;
	snprintf(buf, sizeof(buf), "0x%08x", pa.port_cap_flags);
	ret = add(t, ENT_FILE, buf, "%s/%s/ports/%u/cap_mask", cls, dn, port);
	rate_str(&pa, buf, sizeof(buf));
	ret = ret ?: add(t, ENT_FILE, buf, "%s/%s/ports/%u/rate", cls, dn, port);
	for (int i = 0; !ret && i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry ge;
		char ifn[IF_NAMESIZE] = "";

		if (ibv_query_gid_ex(ctx, port, (uint32_t)i, &ge, 0))
			continue; /* an empty entry (ENODATA) */
		gid_str(&ge.gid, buf, sizeof(buf));
		ret = add(t, ENT_FILE, buf, "%s/%s/ports/%u/gids/%d", cls, dn, port, i) ?:
		      add(t, ENT_FILE, ge.gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2" :
			  "IB/RoCE v1", "%s/%s/ports/%u/gid_attrs/types/%d", cls, dn,
			  port, i);
		if (!ret && ge.ndev_ifindex && if_indextoname(ge.ndev_ifindex, ifn)) {
			ret = add(t, ENT_FILE, ifn, "%s/%s/ports/%u/gid_attrs/ndevs/%d",
				  cls, dn, port, i);
			netdev_add(nd, ifn);
		}
	}
	return ret;
}

static int add_device(struct tree *t, struct ibv_device *dev)
{
	const char *dn = ibv_get_device_name(dev);
	const char *cls = "sys/class/infiniband";
	struct ibv_device_attr da;
	struct ibv_context *ctx;
	struct netdevs nd = { .n = 0 };
	char buf[96];
	int ret;

	if (strchr(dn, '/') || strchr(dev->dev_name, '/'))
		return -EINVAL;
	/* A device that cannot be opened (its address not usable yet, e.g. a
	 * tentative IPv6 address) cannot be opened by the program either:
	 * leave it out rather than lose the view of every other device. */
	ctx = ibv_open_device(dev);
	if (!ctx)
		return 0;
	if (ibv_query_device(ctx, &da)) {
		ret = -errno;
		goto out;
	}
	ret = add(t, ENT_DIR, NULL, "%s/%s", cls, dn) ?:
	      add(t, ENT_FILE, "1: CA", "%s/%s/node_type", cls, dn) ?:
	      add(t, ENT_FILE, da.fw_ver, "%s/%s/fw_ver", cls, dn) ?:
	      add(t, ENT_DIR, NULL, "%s/%s/ports", cls, dn);
	guid_str(da.node_guid, buf, sizeof(buf));
	ret = ret ?: add(t, ENT_FILE, buf, "%s/%s/node_guid", cls, dn);
	guid_str(da.sys_image_guid, buf, sizeof(buf));
	ret = ret ?: add(t, ENT_FILE, buf, "%s/%s/sys_image_guid", cls, dn);
	for (uint8_t p = 1; !ret && p <= da.phys_port_cnt; p++)
		ret = add_port(t, ctx, dn, p, &nd);
	if (ret)
		goto out;
	snprintf(buf, sizeof(buf), "uroce %s", dn);
	ret = add(t, ENT_FILE, buf, "%s/%s/node_desc", cls, dn);
	/* The netdevs, as a PCI NIC shows them (rdma-core's tests look
	 * here): every port's; the parent is port 1's. */
	if (!ret && nd.n)
		ret = add(t, ENT_FILE, nd.name[0], "%s/%s/parent", cls, dn) ?:
		      add(t, ENT_DIR, NULL, "%s/%s/device", cls, dn) ?:
		      add(t, ENT_DIR, NULL, "%s/%s/device/net", cls, dn);
	for (int i = 0; !ret && i < nd.n; i++) {
		snprintf(buf, sizeof(buf), "/sys/class/net/%s", nd.name[i]);
		ret = add(t, ENT_LINK, buf, "%s/%s/device/net/%s", cls, dn,
			  nd.name[i]);
	}
	ret = ret ?:
	      add(t, ENT_DIR, NULL, "sys/class/infiniband_verbs/%s", dev->dev_name) ?:
	      add(t, ENT_FILE, dn, "sys/class/infiniband_verbs/%s/ibdev", dev->dev_name) ?:
	      add(t, ENT_FILE, "2", "sys/class/infiniband_verbs/%s/abi_version",
		  dev->dev_name) ?:
	      add(t, ENT_FILE, "1:3", "sys/class/infiniband_verbs/%s/dev", dev->dev_name) ?:
	      /* Any rw character device passes a client's stat + access. */
	      add(t, ENT_LINK, "/dev/null", "dev/infiniband/%s", dev->dev_name);
out:
	ibv_close_device(ctx);
	return ret;
}

static int write_ent(const char *root, const struct ent *e)
{
	char p[PATH_MAX];
	int fd, ret = 0;

	if ((size_t)snprintf(p, sizeof(p), "%s/%s", root, e->path) >= sizeof(p))
		return -ENAMETOOLONG;
	switch (e->type) {
	case ENT_DIR:
		return mkdir(p, 0755) && errno != EEXIST ? -errno : 0;
	case ENT_LINK:
		return symlink(e->data, p) ? -errno : 0;
	default:
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
		if (fd < 0)
			return -errno;
		if (dprintf(fd, "%s\n", e->data) < 0)
			ret = -EIO;
		close(fd);
		return ret;
	}
}

static int rm_ent(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

/* A directory only we own (not a link someone else planted). */
static int own_dir(const char *p)
{
	struct stat st;

	if (mkdir(p, 0700) && errno != EEXIST)
		return -errno;
	if (lstat(p, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
	    (st.st_mode & 0022))
		return -EPERM;
	return 0;
}

static int base_dir(char *buf, size_t len)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	struct stat st;

	if (x && x[0] == '/' && !stat(x, &st) && S_ISDIR(st.st_mode) &&
	    !access(x, W_OK))
		snprintf(buf, len, "%s/uroce-view", x);
	else
		snprintf(buf, len, "/tmp/uroce-%u", (unsigned)getuid());
	return own_dir(buf);
}

static int build(struct tree *t)
{
	struct ibv_device **list;
	int n, ret;

	t->hash = 0xcbf29ce484222325ull;
	ret = add(t, ENT_DIR, NULL, "dev") ?:
	      add(t, ENT_DIR, NULL, "dev/infiniband") ?:
	      add(t, ENT_LINK, "/dev/null", "dev/infiniband/rdma_cm") ?:
	      add(t, ENT_DIR, NULL, "sys") ?:
	      add(t, ENT_DIR, NULL, "sys/class") ?:
	      add(t, ENT_DIR, NULL, "sys/class/infiniband") ?:
	      add(t, ENT_DIR, NULL, "sys/class/infiniband_verbs") ?:
	      add(t, ENT_FILE, "6", "sys/class/infiniband_verbs/abi_version");
	if (ret)
		return ret;
	list = ibv_get_device_list(&n);
	if (!list)
		return -errno;
	for (int i = 0; !ret && i < n; i++)
		ret = add_device(t, list[i]);
	ibv_free_device_list(list);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	char base[PATH_MAX - 64], dir[PATH_MAX], tmp[PATH_MAX];
	struct tree t = { 0 };
	int c, ret, quiet = 0;

	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case 'q': quiet = 1; break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr, argv[0]);
		return 2;
	}
	ret = base_dir(base, sizeof(base));
	if (ret) {
		if (!quiet)
			fprintf(stderr, "uroce-view: %s: %s\n", base, strerror(-ret));
		return 1;
	}
	ret = build(&t);
	if (ret) {
		if (!quiet)
			fprintf(stderr, "uroce-view: %s\n", strerror(-ret));
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/view-%016llx", base,
		 (unsigned long long)t.hash);
	if (access(dir, F_OK)) {
		snprintf(tmp, sizeof(tmp), "%s/.tmp-%ld", base, (long)getpid());
		nftw(tmp, rm_ent, 16, FTW_DEPTH | FTW_PHYS); /* a stale one */
		ret = mkdir(tmp, 0755) ? -errno : 0;
		for (size_t i = 0; !ret && i < t.n; i++)
			ret = write_ent(tmp, &t.e[i]);
		/* Another process may have put the same tree in place first. */
		if (!ret && rename(tmp, dir) && errno != ENOTEMPTY && errno != EEXIST)
			ret = -errno;
		nftw(tmp, rm_ent, 16, FTW_DEPTH | FTW_PHYS);
		if (ret) {
			if (!quiet)
				fprintf(stderr, "uroce-view: %s: %s\n", dir,
					strerror(-ret));
			free(t.e);
			return 1;
		}
	}
	printf("%s\n", dir);
	free(t.e);
	return 0;
}

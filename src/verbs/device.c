// SPDX-License-Identifier: MIT
/*
 * Devices and contexts.
 *
 * A uroce device is an IP address (or a set of them) seen as a RoCEv2 HCA:
 * UROCE_IP=a.b.c.d (or an IPv6 address) gives exactly one device "uroce0";
 * without it, every interface that is up and has an address becomes one,
 * as an rxe device bound to that netdev (uroce0, uroce1, ... in
 * if_nameindex() order). The list is built once per process and devices
 * live until exit, so pointers from ibv_get_device_list() stay valid.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uroce/uroce.h>

#include "ur_log.h"
#include "ur_settings.h"
#include "urv.h"

/* The send window of new RC QPs on a loopback interface: no switch buffer
 * to overflow and a receiver that keeps up, so twice the default lets a
 * bulk WRITE stream on through the ACK round trip (docs/transport.md). */
#define URV_LOOPBACK_TX_WINDOW 512

/* Marker for verbs_device.ops: identifies our devices. */
static const char urv_dev_ops_marker[] = "uroce";

static pthread_once_t urv_scan_once = PTHREAD_ONCE_INIT;
static struct urv_device **urv_devs;
static int urv_ndevs;
static uint16_t urv_udp_port = URV_ROCE_PORT;

void urv__gid_from_ip(union ibv_gid *gid, const uint8_t ip[16], bool v6)
{
	memset(gid, 0, sizeof(*gid));
	if (v6) {
		memcpy(gid->raw, ip, 16);
	} else {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(gid->raw + 12, ip, 4);
	}
}

static bool gid_is_v4mapped(const union ibv_gid *gid)
{
	static const uint8_t pfx[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(gid->raw, pfx, sizeof(pfx));
}

/* Fill the dst (or src) address of @p from a RoCEv2 GID. */
int urv__gid_to_addr(const union ibv_gid *gid, struct ur_ipudp *p, bool dst)
{
	uint8_t *a = dst ? p->dst : p->src;
	bool v6 = !gid_is_v4mapped(gid);

	memset(a, 0, 16);
	if (v6)
		memcpy(a, gid->raw, 16);
	else
		memcpy(a, gid->raw + 12, 4);
	p->v6 = v6;
	return 0;
}

int urv__find_gid(const struct urv_port *port, const uint8_t ip[16], bool v6)
{
	union ibv_gid g;

	urv__gid_from_ip(&g, ip, v6);
	for (int i = 0; i < port->num_gids; i++)
		if (!memcmp(&port->gids[i].gid, &g, sizeof(g)))
			return i;
	return -1;
}

static void sa_to_ip(const struct sockaddr *sa, uint8_t ip[16], bool *v6)
{
	memset(ip, 0, 16);
	if (sa->sa_family == AF_INET6) {
		memcpy(ip, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		*v6 = true;
	} else {
		memcpy(ip, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		*v6 = false;
	}
}

static void add_gid(struct urv_port *port, const struct sockaddr *sa)
{
	struct urv_gid *g;
	uint8_t ip[16];
	bool v6;

	if (port->num_gids >= URV_MAX_GID)
		return;
	g = &port->gids[port->num_gids++];
	memset(&g->addr, 0, sizeof(g->addr));
	memcpy(&g->addr, sa, sa->sa_family == AF_INET6 ?
	       sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
	sa_to_ip(sa, ip, &v6);
	urv__gid_from_ip(&g->gid, ip, v6);
}

/*
 * As rxe: the largest IB MTU that fits the interface MTU after the worst
 * case headers (IPv6 40 + UDP 8 + BTH 12 + RETH/AtomicETH 28 + ICRC 4,
 * rounded up to 80 as RXE_MAX_HDR_LENGTH), clamped to 256..4096.
 */
static enum ibv_mtu mtu_from_if(uint32_t if_mtu)
{
	uint32_t room = if_mtu > 80 ? if_mtu - 80 : 0;

	if (room >= 4096)
		return IBV_MTU_4096;
	if (room >= 2048)
		return IBV_MTU_2048;
	if (room >= 1024)
		return IBV_MTU_1024;
	if (room >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

static uint32_t if_mtu_of(const char *ifname, bool *loopback)
{
	struct ifreq ifr;
	int fd, mtu = 1500;

	*loopback = false;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 1500;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (!ioctl(fd, SIOCGIFMTU, &ifr))
		mtu = ifr.ifr_mtu;
	if (!ioctl(fd, SIOCGIFFLAGS, &ifr))
		*loopback = ifr.ifr_flags & IFF_LOOPBACK;
	close(fd);
	return mtu > 0 ? (uint32_t)mtu : 1500;
}

/* FNV-1a over GID 0: stable across runs, distinct per address. */
static __be64 guid_from_gid(const union ibv_gid *gid)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (int i = 0; i < 16; i++) {
		h ^= gid->raw[i];
		h *= 0x100000001b3ull;
	}
	/* Locally administered EUI-64 style first octet. */
	h = (h & ~(0xffull << 56)) | (0x02ull << 56);
	return htobe64(h);
}

static struct urv_device *new_device(int idx)
{
	struct urv_device *dev = calloc(1, sizeof(*dev));
	struct ibv_device *d;

	if (!dev)
		return NULL;
	d = &dev->vdev.device;
	dev->vdev.ops = urv_dev_ops_marker;
	atomic_init(&dev->vdev.refcount, 1);
	/* UROCE_IWARP=1: every device speaks iWARP, as siw's devices do
	 * (docs/verbs.md "iWARP"). */
	if (ur_setting_val("UROCE_IWARP")) {
		d->node_type = IBV_NODE_RNIC;
		d->transport_type = IBV_TRANSPORT_IWARP;
	} else {
		d->node_type = IBV_NODE_CA;
		d->transport_type = IBV_TRANSPORT_IB;
	}
	snprintf(d->name, sizeof(d->name), "uroce%d", idx);
	snprintf(d->dev_name, sizeof(d->dev_name), "uverbs_uroce%d", idx);
	snprintf(d->dev_path, sizeof(d->dev_path),
		 "/sys/class/infiniband_verbs/uverbs_uroce%d", idx);
	snprintf(d->ibdev_path, sizeof(d->ibdev_path),
		 "/sys/class/infiniband/uroce%d", idx);
	return dev;
}

/* A loopback address (127/8, ::1): its traffic never leaves lo. */
static bool addr_is_loopback(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
	return a->ss_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

static void finish_port(struct urv_port *port)
{
	port->if_mtu = port->ifname[0]
			       ? if_mtu_of(port->ifname, &port->if_loopback)
			       : 1500;
	port->if_is_lo = port->if_loopback;
	/* Another address on lo (a host's /32 behind ECMP uplinks) leaves by
	 * the routes' interfaces: their smallest MTU, not lo's 64 KiB, or
	 * every request is larger than the paths carry (issue 33). */
	if (port->if_loopback && !addr_is_loopback(&port->gids[0].addr)) {
		uint32_t m = urv__route_mtu(port->gids[0].addr.ss_family);

		if (m) {
			port->if_mtu = m;
			port->if_loopback = false;
		}
	}
	port->active_mtu = mtu_from_if(port->if_mtu);
}

static void finish_device(struct urv_device *dev)
{
	for (int p = 0; p < dev->nports; p++)
		finish_port(&dev->ports[p]);
	dev->guid = guid_from_gid(&dev->ports[0].gids[0].gid);
}

static int push_dev(struct urv_device *dev)
{
	struct urv_device **n = realloc(urv_devs, (urv_ndevs + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	urv_devs = n;
	urv_devs[urv_ndevs++] = dev;
	return 0;
}

static bool same_ip(const struct sockaddr *a, const struct sockaddr_storage *b)
{
	uint8_t x[16], y[16];
	bool vx, vy;

	if (a->sa_family != b->ss_family)
		return false;
	sa_to_ip(a, x, &vx);
	sa_to_ip((const struct sockaddr *)b, y, &vy);
	return !memcmp(x, y, 16);
}

/* @a lies in the IPv4 subnet of interface address @i (127.0.0.2 on lo). */
static bool in_subnet(const struct ifaddrs *i, const struct sockaddr_storage *a)
{
	uint32_t x, y, m;

	if (a->ss_family != AF_INET || !i->ifa_addr || !i->ifa_netmask ||
	    i->ifa_addr->sa_family != AF_INET)
		return false;
	x = ((const struct sockaddr_in *)a)->sin_addr.s_addr;
	y = ((const struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
	m = ((const struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr;
	return (x & m) == (y & m);
}

static bool parse_ip(const char *ip, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, ip, &((struct sockaddr_in *)ss)->sin_addr) == 1)
		ss->ss_family = AF_INET;
	else if (inet_pton(AF_INET6, ip,
			   &((struct sockaddr_in6 *)ss)->sin6_addr) == 1)
		ss->ss_family = AF_INET6;
	else
		return false;
	return true;
}

/* A port on address @ss: the interface that has the address, else one
 * whose subnet has it. */
static void port_from_ip(struct urv_port *port, struct sockaddr_storage *ss,
			 struct ifaddrs *ifa)
{
	for (int pass = 0; pass < 2 && !port->ifname[0]; pass++)
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		if (i->ifa_addr && (pass ? in_subnet(i, ss) :
				    same_ip(i->ifa_addr, ss))) {
			snprintf(port->ifname, sizeof(port->ifname), "%s",
				 i->ifa_name);
			port->ifindex = if_nametoindex(i->ifa_name);
			if (ss->ss_family == AF_INET6)
				((struct sockaddr_in6 *)ss)->sin6_scope_id =
					((struct sockaddr_in6 *)i->ifa_addr)->sin6_scope_id;
			break;
		}
	}
	add_gid(port, (struct sockaddr *)ss);
}

/* A port on interface @name: its addresses, IPv4 first, so GID 0 is IPv4
 * where the interface has one. */
static void port_from_if(struct urv_port *port, const char *name,
			 unsigned int index, struct ifaddrs *ifa)
{
	snprintf(port->ifname, sizeof(port->ifname), "%s", name);
	port->ifindex = index;
	for (int fam = 0; fam < 2; fam++)
		for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
			if (i->ifa_addr && !strcmp(i->ifa_name, name) &&
			    i->ifa_addr->sa_family == (fam ? AF_INET6 : AF_INET))
				add_gid(port, i->ifa_addr);
}

static void scan_env_ip(const char *ip, struct ifaddrs *ifa)
{
	struct sockaddr_storage ss;
	struct urv_device *dev;

	if (!parse_ip(ip, &ss)) {
		fprintf(stderr, "uroce: UROCE_IP=%s is not an IP address\n", ip);
		return;
	}
	dev = new_device(0);
	if (!dev)
		return;
	dev->nports = 1;
	port_from_ip(&dev->ports[0], &ss, ifa);
	finish_device(dev);
	if (push_dev(dev))
		free(dev);
}

/*
 * UROCE_PORTS=a,b,...: one device uroce0 whose port N is the N-th entry,
 * an interface name (its addresses are the port's GIDs) or an IP address
 * (one GID). A bad list makes no device, and says why.
 */
static void scan_env_ports(const char *list, struct ifaddrs *ifa)
{
	struct urv_device *dev = new_device(0);
	char buf[512], *save = NULL, *tok;
	const char *why = NULL;

	if (!dev)
		return;
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok && !why;
	     tok = strtok_r(NULL, ",", &save)) {
		struct sockaddr_storage ss;
		struct urv_port *port;
		unsigned int idx;

		if (dev->nports == URV_MAX_PORTS) {
			why = "more entries than ports allowed";
			break;
		}
		port = &dev->ports[dev->nports];
		if (parse_ip(tok, &ss)) {
			port_from_ip(port, &ss, ifa);
		} else if ((idx = if_nametoindex(tok))) {
			port_from_if(port, tok, idx, ifa);
			if (!port->num_gids)
				why = "an interface without an address";
		} else {
			why = "neither an IP address nor an interface";
		}
		for (int p = 0; p < dev->nports && !why; p++)
			if (!memcmp(&dev->ports[p].gids[0].gid, &port->gids[0].gid,
				    sizeof(union ibv_gid)))
				why = "the address of an earlier port";
		if (!why)
			dev->nports++;
		else
			fprintf(stderr, "uroce: UROCE_PORTS=%s: \"%s\" is %s; "
				"allowed: 1 to %d interface names or IP "
				"addresses, comma-separated, each a port\n",
				list, tok, why, URV_MAX_PORTS);
	}
	if (!why && !dev->nports) {
		why = "empty";
		fprintf(stderr, "uroce: UROCE_PORTS=%s is empty; allowed: 1 to %d "
			"interface names or IP addresses, comma-separated\n",
			list, URV_MAX_PORTS);
	}
	if (why) {
		free(dev);
		return;
	}
	finish_device(dev);
	if (push_dev(dev))
		free(dev);
}

static void scan_ifaces(struct ifaddrs *ifa)
{
	struct if_nameindex *ni = if_nameindex();

	if (!ni)
		return;
	for (struct if_nameindex *n = ni; n->if_index; n++) {
		struct urv_device *dev;
		bool up = false;

		for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
			if (!strcmp(i->ifa_name, n->if_name) &&
			    (i->ifa_flags & IFF_UP))
				up = true;
		if (!up)
			continue;
		dev = new_device(urv_ndevs);
		if (!dev)
			break;
		dev->nports = 1;
		port_from_if(&dev->ports[0], n->if_name, n->if_index, ifa);
		if (!dev->ports[0].num_gids) { /* no address: nothing to bind */
			free(dev);
			continue;
		}
		finish_device(dev);
		if (push_dev(dev)) {
			free(dev);
			break;
		}
	}
	if_freenameindex(ni);
}

/* A port's address (GID 0) as text, for messages. */
static void port_ip(const struct urv_port *port, char *ip, size_t len)
{
	const struct sockaddr_storage *a = &port->gids[0].addr;

	snprintf(ip, len, "?");
	if (a->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr,
			  ip, (socklen_t)len);
	else if (a->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr,
			  ip, (socklen_t)len);
}

static void urv_scan(void)
{
	const char *ip = ur_setting_str("UROCE_IP");
	const char *ports = ur_setting_str("UROCE_PORTS");
	const struct ur_setting *ps = ur_setting_find("UROCE_PORT");
	const char *port = getenv("UROCE_PORT");
	struct ifaddrs *ifa = NULL;
	unsigned long long v;
	char why[8];

	/* A bad UROCE_PORT is refused when a device opens (ur_settings_check
	 * says why there); listing devices stays quiet. */
	if (port && *port && !ur_setting_parse(ps, port, &v, why, sizeof(why)))
		urv_udp_port = (uint16_t)v;
	if (getifaddrs(&ifa))
		ifa = NULL;
	if (ports && *ports && ip && *ip)
		fprintf(stderr, "uroce: UROCE_PORTS and UROCE_IP are both set: "
			"UROCE_PORTS names the ports, UROCE_IP is ignored\n");
	if (ports && *ports)
		scan_env_ports(ports, ifa);
	else if (ip && *ip)
		scan_env_ip(ip, ifa);
	else
		scan_ifaces(ifa);
	if (ifa)
		freeifaddrs(ifa);
	ur_log(UR_LOG_DEBUG, "device scan: %d device(s) (%s)", urv_ndevs,
	       ports && *ports ? "UROCE_PORTS" : ip ? "UROCE_IP"
						   : "every interface that is up");
	for (int i = 0; i < urv_ndevs && ur_log_on(UR_LOG_DEBUG); i++) {
		for (int p = 0; p < urv_devs[i]->nports; p++) {
			const struct urv_port *port = &urv_devs[i]->ports[p];
			char a[INET6_ADDRSTRLEN];

			port_ip(port, a, sizeof(a));
			ur_log(UR_LOG_DEBUG, "device %s port %d: %s on %s "
			       "(MTU %u%s), %d GID(s)",
			       urv_devs[i]->vdev.device.name, p + 1, a,
			       port->ifindex ? port->ifname : "no interface",
			       port->if_mtu, port->if_loopback ? ", loopback" : "",
			       port->num_gids);
		}
	}
}

URV_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list;

	pthread_once(&urv_scan_once, urv_scan);
	list = calloc(urv_ndevs + 1, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < urv_ndevs; i++)
		list[i] = &urv_devs[i]->vdev.device;
	if (num_devices)
		*num_devices = urv_ndevs;
	return list;
}

URV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

URV_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

URV_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	for (int i = 0; i < urv_ndevs; i++)
		if (&urv_devs[i]->vdev.device == device)
			return i;
	return -1;
}

URV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	return to_udev(device)->guid;
}

bool urv__is_our_context(struct ibv_context *ctx)
{
	return ctx && ctx->abi_compat == __VERBS_ABI_IS_EXTENDED &&
	       ctx->device && to_udev(ctx->device)->vdev.ops == urv_dev_ops_marker;
}

static const struct ibv_context_ops urv_ctx_ops = {
	.poll_cq = urv__poll_cq,
	.req_notify_cq = urv__req_notify_cq,
	.post_send = urv__post_send,
	.post_recv = urv__post_recv,
	.post_srq_recv = urv__post_srq_recv,
	.alloc_mw = urv__alloc_mw,
	.dealloc_mw = urv__dealloc_mw,
	.bind_mw = urv__bind_mw,
};

/* ibv_open_device() only returns NULL: say why on stderr, once (ibv_devinfo
 * and the pingpongs print just "Failed to open device"). */
static void open_failed(struct urv_device *dev, unsigned int port_num,
			uint16_t port, int err)
{
	static atomic_bool told;
	char ip[INET6_ADDRSTRLEN], pn[24] = "";

	if (atomic_exchange(&told, true))
		return;
	port_ip(&dev->ports[port_num - 1], ip, sizeof(ip));
	if (dev->nports > 1)
		snprintf(pn, sizeof(pn), " port %u", port_num);
	fprintf(stderr, "uroce: cannot open %s%s on %s UDP port %u: %s%s\n",
		dev->vdev.device.name, pn, ip, port, strerror(-err),
		err == -EADDRNOTAVAIL ? " (not an address of this machine or "
					"network namespace: check UROCE_IP or UROCE_PORTS)"
		: err == -EADDRINUSE && port_num > 1
			? " (port 1's slot is taken on this address)"
		: err == -EADDRINUSE ? " (the port is held by a program that is "
				       "not uroce, or by another user's uroce)"
		: err == -EPROTO ? " (a uroce of another build shares the "
				   "address: the line above names it)"
				     : "");
}

/*
 * One engine per device and UDP port in a process, shared by every context
 * that opens it, as a NIC is shared by its contexts: QPNs, keys, counters
 * and the receive socket are the device's; PDs keep contexts apart. A
 * second engine on the address would join its SO_REUSEPORT group, take a
 * share of the peers' flows and forward them to the first over a unix
 * socket, dropping them whenever that one is behind: UCX opens the device
 * twice, and a 2-rank Open MPI 16 MiB allreduce over it lost 16,000 to
 * 19,000 packets a run that way (rx_drop_fwd_full), each a go-back-N.
 */
#define URV_SHARED_MAX 64
struct urv_shared_eng {
	const struct urv_device *dev;
	unsigned int port_num; /* the device's port (1..) */
	pid_t pid; /* a forked child opens its own: the threads stay behind */
	uint16_t port;
	int refs;
	struct ur_engine *eng;
};
static struct urv_shared_eng shared_eng[URV_SHARED_MAX];
static pthread_mutex_t shared_eng_lock = PTHREAD_MUTEX_INITIALIZER;

/* The device's engine in this process, opened by the first context
 * (shared_eng_lock held). The engine's host is the table entry, which
 * outlives any one context: events find their context through their QP. */
static int engine_get(struct urv_device *dev, unsigned int port_num,
		      uint16_t port, struct ur_engine_cfg *cfg,
		      struct ur_engine **out)
{
	struct urv_shared_eng *free_slot = NULL;
	int ret;

	for (int i = 0; i < URV_SHARED_MAX; i++) {
		struct urv_shared_eng *s = &shared_eng[i];

		if (s->refs && s->dev == dev && s->port == port &&
		    s->port_num == port_num && s->pid == getpid()) {
			s->refs++;
			*out = s->eng;
			return 0;
		}
		if ((!s->refs || s->pid != getpid()) && !free_slot)
			free_slot = s; /* a parent's entry, in a child: free */
	}
	if (!free_slot)
		return -EMFILE;
	cfg->host = free_slot;
	ret = ur_engine_open(cfg, out);
	if (ret)
		return ret;
	ur_engine_dev(*out)->tx_window =
		dev->ports[port_num - 1].if_loopback ? URV_LOOPBACK_TX_WINDOW : 0;
	ret = urv__cc_dev_init(ur_engine_dev(*out));
	if (ret) {
		ur_engine_close(*out);
		return ret;
	}
	*free_slot = (struct urv_shared_eng){ .dev = dev, .pid = getpid(),
					      .port_num = port_num,
					      .port = port, .refs = 1,
					      .eng = *out };
	return 0;
}

static void engine_put(struct ur_engine *eng)
{
	pthread_mutex_lock(&shared_eng_lock);
	for (int i = 0; i < URV_SHARED_MAX; i++) {
		struct urv_shared_eng *s = &shared_eng[i];

		if (s->refs && s->eng == eng && s->pid == getpid()) {
			if (--s->refs == 0) {
				ur_engine_close(eng);
				memset(s, 0, sizeof(*s));
			}
			break;
		}
	}
	pthread_mutex_unlock(&shared_eng_lock);
}

/*
 * The engine of port @port_num of @ctx: each port has its own (its address,
 * sockets, counters file "<dev>:<port>" past port 1), opened at the port's
 * first QP so that a program using one port of a device holds no socket on
 * the others' addresses (it would take a share of their flows). Further
 * ports use port 1's keys and slot (docs/ports-classes.md "Ports").
 */
int urv__port_engine(struct urv_context *ctx, unsigned int port_num,
		      struct ur_engine **out)
{
	struct urv_device *dev = ctx->dev;
	struct urv_port *port = urv__port(dev, port_num);
	struct ur_engine_cfg cfg = { 0 };
	char name[IBV_SYSFS_NAME_MAX + 8];
	int ret = 0;

	if (!port)
		return -EINVAL;
	pthread_mutex_lock(&ctx->port_lock);
	if (ctx->peng[port_num - 1])
		goto out;
	if (port_num == 1)
		snprintf(name, sizeof(name), "%s", dev->vdev.device.name);
	else
		snprintf(name, sizeof(name), "%s:%u", dev->vdev.device.name,
			 port_num);
	cfg.addr = port->gids[0].addr;
	cfg.port = ctx->udp_port;
	cfg.mtu = 128u << port->active_mtu;
	/* The largest jumbo packet that fits with IPv6/UDP, BTH, RETH,
	 * ImmDt and ICRC (128 bytes): 16 KiB on loopback, 8 KiB on
	 * 9000-byte Ethernet. */
	cfg.jumbo_max = port->if_mtu > 128
				? ur_jumbo_size(ur_jumbo_bits(port->if_mtu - 128))
				: 0;
	cfg.name = name;
	cfg.host_ops = &urv__host_ops;
	/* A bonded port: the device UROCE_IP makes (its address, on lo or
	 * any interface, reachable over every bonded one). */
	if (port_num == 1 && ur_setting_str("UROCE_IP") && !ur_setting_str("UROCE_PORTS"))
		cfg.bond = ur_setting_str("UROCE_BOND");
	if (port_num > 1) {
		cfg.keys = ctx->peng[0];
		cfg.slot = ur_engine_slot(ctx->peng[0]);
	}
	pthread_mutex_lock(&shared_eng_lock);
	ret = engine_get(dev, port_num, ctx->udp_port, &cfg,
			 &ctx->peng[port_num - 1]);
	pthread_mutex_unlock(&shared_eng_lock);
	if (ret) {
		open_failed(dev, port_num, ctx->udp_port, ret);
		ur_log(UR_LOG_INFO, "%s port %u: engine not opened: %s",
		       dev->vdev.device.name, port_num, strerror(-ret));
		goto out;
	}
	if (ur_log_on(UR_LOG_INFO)) {
		char a[INET6_ADDRSTRLEN], pn[24] = "";

		port_ip(port, a, sizeof(a));
		if (dev->nports > 1)
			snprintf(pn, sizeof(pn), " port %u", port_num);
		ur_log(UR_LOG_INFO, "%s%s: opened on %s UDP port %u (path MTU %u)",
		       dev->vdev.device.name, pn, a, ctx->udp_port, cfg.mtu);
	}
out:
	if (!ret)
		*out = ctx->peng[port_num - 1];
	pthread_mutex_unlock(&ctx->port_lock);
	return ret;
}

URV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct urv_device *dev = to_udev(device);
	struct urv_context *ctx;
	struct ibv_context *c;
	struct stat st;
	int ret;

	if (!device || dev->vdev.ops != urv_dev_ops_marker)
		return urv_err_ptr(-EINVAL);
	/* Every device setting is checked before anything opens: a bad value
	 * is refused, naming the setting and what it allows (settings.c). */
	ret = ur_settings_check(UR_SCOPE_DEVICE);
	if (ret) {
		ur_log(UR_LOG_INFO, "%s: not opened: a bad setting (above)",
		       device->name);
		return urv_err_ptr(ret);
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return urv_err_ptr(-ENOMEM);
	ctx->dev = dev;
	ctx->udp_port = urv_udp_port;
	ret = urv__evq_init(&ctx->async);
	if (ret)
		goto err_free;

	c = &ctx->vctx.context;
	c->device = device;
	c->ops = urv_ctx_ops;
	/* No kernel, so no uverbs command fd: an empty memfd of its own,
	 * which programs may dup() and ibv_import_device recognizes by its
	 * inode (import.c); /dev/null where memfds are refused. */
	c->cmd_fd = memfd_create("uroce-context", MFD_CLOEXEC);
	if (c->cmd_fd < 0)
		c->cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	else if (!fstat(c->cmd_fd, &st)) {
		ctx->cmd_dev = st.st_dev;
		ctx->cmd_ino = st.st_ino;
	}
	c->async_fd = ctx->async.fd;
	c->num_comp_vectors = 1;
	pthread_mutex_init(&c->mutex, NULL);
	c->abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->vctx.sz = sizeof(ctx->vctx);
	ctx->vctx.query_port = urv__query_port;
	ctx->vctx.query_device_ex = urv__query_device_ex;
	ctx->vctx.create_cq_ex = urv__create_cq_ex;
	ctx->vctx.create_qp_ex = urv__create_qp_ex;
	ctx->vctx.create_srq_ex = urv__create_srq_ex;
	urv__xrc_ops(&ctx->vctx);
	ctx->vctx.advise_mr = urv__advise_mr;
	ctx->vctx.modify_qp_rate_limit = urv__modify_qp_rate_limit;
	ctx->vctx.ibv_create_flow = urv__create_flow;
	ctx->vctx.ibv_destroy_flow = urv__destroy_flow;
	ctx->vctx.create_wq = urv__create_wq;
	ctx->vctx.modify_wq = urv__modify_wq;
	ctx->vctx.destroy_wq = urv__destroy_wq;
	ctx->vctx.create_rwq_ind_table = urv__create_rwq_ind_table;
	ctx->vctx.destroy_rwq_ind_table = urv__destroy_rwq_ind_table;
	ctx->vctx.alloc_dm = urv__alloc_dm;
	ctx->vctx.free_dm = urv__free_dm;
	ctx->vctx.reg_dm_mr = urv__reg_dm_mr;
	ctx->vctx.alloc_td = urv__alloc_td;
	ctx->vctx.dealloc_td = urv__dealloc_td;
	ctx->vctx.alloc_parent_domain = urv__alloc_parent_domain;
	ctx->vctx.query_rt_values = urv__query_rt_values;

	pthread_mutex_init(&ctx->port_lock, NULL);
	ret = urv__port_engine(ctx, 1, &ctx->eng);
	if (ret)
		goto err_evq;
	ret = urv__link_watch_start(ctx);
	if (ret) {
		ur_log(UR_LOG_INFO, "%s: no link watch: %s", device->name,
		       strerror(-ret));
		goto err_eng;
	}
	urv__share_ctx(ctx, true); /* ibv_import_device finds it */
	return c;

err_eng:
	engine_put(ctx->eng);
err_evq:
	if (c->cmd_fd >= 0)
		close(c->cmd_fd);
	urv__evq_fini(&ctx->async);
err_free:
	free(ctx);
	return urv_err_ptr(ret);
}

URV_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct urv_context *ctx = to_uctx(context);

	urv__raw_ctx_fini(ctx);
	urv__share_ctx(ctx, false);
	urv__link_watch_stop(ctx);
	/* Port 1's last: the others use its key table until they close. */
	for (int p = URV_MAX_PORTS - 1; p >= 0; p--)
		if (ctx->peng[p])
			engine_put(ctx->peng[p]);
	pthread_mutex_destroy(&ctx->port_lock);
	if (context->cmd_fd >= 0)
		close(context->cmd_fd);
	urv__evq_fini(&ctx->async);
	pthread_mutex_destroy(&context->mutex);
	free(ctx);
	return 0;
}

URV_EXPORT int uroce_context_set_poller_stays(struct ibv_context *context,
					      int on)
{
	if (!context || !urv__is_our_context(context) || (on != 0 && on != 1))
		return EINVAL;
	ur_engine_set_poller_stays(to_uctx(context)->eng, on);
	return 0;
}

URV_EXPORT const char *uroce_query_icrc_mode(struct ibv_context *context)
{
	if (!urv__is_our_context(context))
		return urv_err_ptr(-EINVAL);
	return ur_engine_icrc_mode(to_uctx(context)->eng);
}

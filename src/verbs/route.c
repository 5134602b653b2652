// SPDX-License-Identifier: MIT
/*
 * The MTU of the way out. A host whose address sits on `lo` (a /32 that
 * data-centre hosts announce, with ECMP uplinks) sends through the uplinks,
 * not through lo: the device's MTU is the smallest MTU among the
 * interfaces that the main table's routes leave by (every next hop of a
 * multipath route), as rxe's is its netdev's. Read with one rtnetlink
 * dump (RTM_GETROUTE, rtnetlink(7)); no privilege needed.
 */
#include <errno.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "urv.h"

#define ROUTE_MAX_IF 64

struct if_set {
	int idx[ROUTE_MAX_IF];
	int n;
};

static void if_add(struct if_set *s, int idx)
{
	for (int i = 0; i < s->n; i++)
		if (s->idx[i] == idx)
			return;
	if (s->n < ROUTE_MAX_IF && idx > 0)
		s->idx[s->n++] = idx;
}

/* The egress interfaces of one route message of the main table. */
static void route_ifs(const struct nlmsghdr *h, struct if_set *s)
{
	const struct rtmsg *rt = NLMSG_DATA(h);
	int len = (int)RTM_PAYLOAD(h);

	if (rt->rtm_table != RT_TABLE_MAIN || rt->rtm_type != RTN_UNICAST)
		return;
	for (const struct rtattr *a = RTM_RTA(rt); RTA_OK(a, len);
	     a = RTA_NEXT(a, len)) {
		if (a->rta_type == RTA_OIF &&
		    RTA_PAYLOAD(a) >= sizeof(int)) {
			int idx;

			memcpy(&idx, RTA_DATA(a), sizeof(idx));
			if_add(s, idx);
		} else if (a->rta_type == RTA_MULTIPATH) {
			const struct rtnexthop *nh = RTA_DATA(a);
			int left = (int)RTA_PAYLOAD(a);

			while (left >= (int)sizeof(*nh) && nh->rtnh_len >= sizeof(*nh) &&
			       nh->rtnh_len <= left) {
				if_add(s, nh->rtnh_ifindex);
				left -= RTNH_ALIGN(nh->rtnh_len);
				nh = RTNH_NEXT(nh);
			}
		}
	}
}

/* Dump the routes of @family; 0 with @s filled, or -errno. */
static int dump_routes(int family, struct if_set *s)
{
	struct {
		struct nlmsghdr h;
		struct rtmsg r;
	} req = {
		.h = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg)),
		       .nlmsg_type = RTM_GETROUTE,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1 },
		.r = { .rtm_family = (unsigned char)family },
	};
	char buf[16384] __attribute__((aligned(NLMSG_ALIGNTO)));
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (send(fd, &req, req.h.nlmsg_len, 0) < 0) {
		ret = -errno;
		goto out;
	}
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n < 0) {
			ret = -errno;
			goto out;
		}
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, (unsigned int)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE)
				goto out;
			if (h->nlmsg_type == NLMSG_ERROR) {
				ret = -EIO;
				goto out;
			}
			if (h->nlmsg_type == RTM_NEWROUTE)
				route_ifs(h, s);
		}
	}
out:
	close(fd);
	return ret;
}

uint32_t urv__route_mtu(int family)
{
	struct if_set s = { .n = 0 };
	uint32_t best = 0;
	int fd;

	if (dump_routes(family, &s) || !s.n)
		return 0;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	for (int i = 0; i < s.n; i++) {
		struct ifreq ifr;

		memset(&ifr, 0, sizeof(ifr));
		if (!if_indextoname((unsigned int)s.idx[i], ifr.ifr_name) ||
		    ioctl(fd, SIOCGIFFLAGS, &ifr) || (ifr.ifr_flags & IFF_LOOPBACK) ||
		    ioctl(fd, SIOCGIFMTU, &ifr) || ifr.ifr_mtu <= 0)
			continue;
		if (!best || (uint32_t)ifr.ifr_mtu < best)
			best = (uint32_t)ifr.ifr_mtu;
	}
	close(fd);
	return best;
}

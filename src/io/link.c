// SPDX-License-Identifier: MIT
/*
 * Link state for ports (docs/ports-classes.md "Ports"): a thread reads
 * rtnetlink's link group (RTMGRP_LINK) and reports each interface's
 * index and whether it is up with a carrier (IFF_UP and IFF_LOWER_UP,
 * what rxe's port state follows through the netdev). IFF_LOWER_UP is the
 * carrier itself; IFF_RUNNING (the operational state) follows it up to a
 * second later, through the kernel's link watch, and a port read as down
 * meanwhile would make programs started with the link refuse it. An
 * interface that goes down makes an RTM_NEWLINK without IFF_UP or
 * IFF_LOWER_UP; one that is deleted an RTM_DELLINK.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "ur_engine.h"

struct ur_link_watch {
	int fd;
	int stop_fd[2]; /* a pipe: close wakes the thread */
	pthread_t thread;
	ur_link_fn fn;
	void *arg;
};

#ifndef IFF_LOWER_UP
#define IFF_LOWER_UP 0x10000 /* linux/if.h; net/if.h stops at 16 bits */
#endif

static bool flags_up(unsigned int flags)
{
	return (flags & IFF_UP) && (flags & IFF_LOWER_UP);
}

/* One RTM_GETLINK: SIOCGIFFLAGS returns 16 bits of flags, without
 * IFF_LOWER_UP. */
bool ur_link_is_up(unsigned int ifindex)
{
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
	} req = { .h = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETLINK,
			 .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1 },
		  .i = { .ifi_family = AF_UNSPEC, .ifi_index = (int)ifindex } };
	char buf[32768] __attribute__((aligned(NLMSG_ALIGNTO)));
	bool up = true;
	ssize_t n;
	int fd;

	if (!ifindex)
		return true; /* an address of no interface */
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return true;
	if (send(fd, &req, sizeof(req), 0) == (ssize_t)sizeof(req) &&
	    (n = recv(fd, buf, sizeof(buf), 0)) > 0) {
		size_t len = (size_t)n;

		for (const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
		     NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			const struct ifinfomsg *ifi = NLMSG_DATA(h);

			if (h->nlmsg_type == RTM_NEWLINK &&
			    h->nlmsg_len >= NLMSG_LENGTH(sizeof(*ifi)) &&
			    ifi->ifi_index == (int)ifindex)
				up = flags_up(ifi->ifi_flags);
			else if (h->nlmsg_type == NLMSG_ERROR)
				up = false; /* no such interface (any more) */
		}
	}
	close(fd);
	return up;
}

static void link_msgs(struct ur_link_watch *w, const char *buf, size_t len)
{
	for (const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
	     NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
		const struct ifinfomsg *ifi = NLMSG_DATA(h);

		if (h->nlmsg_type != RTM_NEWLINK && h->nlmsg_type != RTM_DELLINK)
			continue;
		if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)) || ifi->ifi_index <= 0)
			continue;
		w->fn(w->arg, (unsigned int)ifi->ifi_index,
		      h->nlmsg_type == RTM_NEWLINK && flags_up(ifi->ifi_flags));
	}
}

/* Messages were lost (ENOBUFS: a burst of link changes outran the
 * socket): report every interface as it is now, from a dump. */
static void link_resync(struct ur_link_watch *w, char *buf, size_t size)
{
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
	} req = { .h = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETLINK,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			 .nlmsg_seq = 1 },
		  .i = { .ifi_family = AF_UNSPEC } };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	bool done = false;

	if (fd < 0)
		return;
	if (send(fd, &req, sizeof(req), 0) != (ssize_t)sizeof(req))
		done = true;
	while (!done) {
		ssize_t n = recv(fd, buf, size, 0);
		size_t len;

		if (n <= 0)
			break;
		len = (size_t)n;
		for (const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
		     NLMSG_OK(h, len); h = NLMSG_NEXT(h, len))
			done |= h->nlmsg_type == NLMSG_DONE ||
				h->nlmsg_type == NLMSG_ERROR;
		link_msgs(w, buf, (size_t)n);
	}
	close(fd);
}

static void *link_main(void *arg)
{
	struct ur_link_watch *w = arg;
	char buf[32768] __attribute__((aligned(NLMSG_ALIGNTO)));

	for (;;) {
		struct pollfd p[2] = { { .fd = w->fd, .events = POLLIN },
				       { .fd = w->stop_fd[0], .events = POLLIN } };
		ssize_t n;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		n = recv(w->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0) {
			int err = errno;

			if (err == ENOBUFS)
				link_resync(w, buf, sizeof(buf));
			if (err == EAGAIN || err == EINTR || err == ENOBUFS)
				continue;
			break;
		}
		link_msgs(w, buf, (size_t)n);
	}
	return NULL;
}

int ur_link_watch_open(ur_link_fn fn, void *arg, struct ur_link_watch **out)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK,
				  .nl_groups = RTMGRP_LINK };
	struct ur_link_watch *w = calloc(1, sizeof(*w));
	int ret;

	if (!w)
		return -ENOMEM;
	w->fn = fn;
	w->arg = arg;
	w->stop_fd[0] = w->stop_fd[1] = -1;
	w->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (w->fd < 0 || bind(w->fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    pipe2(w->stop_fd, O_CLOEXEC)) {
		ret = -errno;
		goto err;
	}
	ret = -pthread_create(&w->thread, NULL, link_main, w);
	if (ret)
		goto err;
	*out = w;
	return 0;
err:
	if (w->fd >= 0)
		close(w->fd);
	if (w->stop_fd[0] >= 0) {
		close(w->stop_fd[0]);
		close(w->stop_fd[1]);
	}
	free(w);
	return ret;
}

void ur_link_watch_close(struct ur_link_watch *w)
{
	if (!w)
		return;
	close(w->stop_fd[1]);
	pthread_join(w->thread, NULL);
	close(w->stop_fd[0]);
	close(w->fd);
	free(w);
}

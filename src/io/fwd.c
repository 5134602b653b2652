/* SPDX-License-Identifier: MIT */
/*
 * Sibling forwarding. Processes that share an address all bind UDP 4791 with
 * SO_REUSEPORT, and the kernel picks one of them per flow. A QPN carries its
 * owner's slot in bits 16..23; a packet that reached the wrong process is
 * passed to the owner over a unix SOCK_SEQPACKET connection to the abstract
 * name uroce/<port>/<addr>/<slot>. Listening on that name is also how a
 * process claims its slot: the kernel frees it when the process dies.
 *
 * SEQPACKET, not DGRAM: a datagram socket's queue is capped at
 * net.unix.max_dgram_qlen (10 by default) messages, which a burst of one
 * message's packets overflows; a connected pair is bounded only by bytes.
 *
 * Builds meet here: two checkouts, or an installed uroce and a build tree,
 * may run on one address. Siblings pass each other raw ur_rxinfo structs
 * and read slots out of QPNs, so only builds that agree on that (the
 * sibling protocol, UR_FWD_PROTO, and the struct's size) may share an
 * address. Before it claims a slot, a process binds a second name that
 * says who it is, uroce/<port>/<addr>/id/<pid>/<proto>/<build>; after the
 * claim it reads every sibling's name from /proc/net/unix (the kernel's
 * list of this namespace's unix sockets: nothing for a sibling to answer,
 * and no layout to agree on) and refuses to open, naming the process,
 * when one speaks another protocol. A sibling without a name (a build
 * from before the names, or one whose pid we cannot see from our PID
 * namespace) is taken to speak protocol 1, as every build before the
 * names did.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "ur_io_priv.h"
#include "ur_log.h"

/* The sibling protocol: what siblings pass each other (a struct ur_rxinfo
 * then the packet, fwd_to) and how a QPN names its owner's slot
 * (UR_IO_SLOT_SHIFT). Bump it when either changes. The struct's size is
 * part of the name too, so a change the number misses still refuses. */
#define UR_FWD_PROTO 1
#define UR_FWD_PROTO_UNNAMED 1 /* what every build before the names spoke */
#ifndef UROCE_BUILD
#define UROCE_BUILD "unknown"
#endif
/* A test build may claim another protocol (scripts/two-builds.sh). */
#ifdef UROCE_FWD_PROTO_OVERRIDE
#undef UR_FWD_PROTO
#define UR_FWD_PROTO UROCE_FWD_PROTO_OVERRIDE
#endif

static void addr_text(const struct ur_engine *e, char *ip, size_t n)
{
	if (!inet_ntop(e->local.v6 ? AF_INET6 : AF_INET, e->local.src, ip,
		       (socklen_t)n))
		snprintf(ip, n, "?");
}

/* This build's protocol as it appears in names: "<proto>.<rxinfo size>". */
static void proto_text(char *buf, size_t n)
{
	snprintf(buf, n, "%u.%zu", (unsigned)UR_FWD_PROTO,
		 sizeof(struct ur_rxinfo));
}

static socklen_t slot_name(const struct ur_engine *e, uint8_t slot,
			   struct sockaddr_un *un)
{
	char ip[INET6_ADDRSTRLEN];
	int n;

	addr_text(e, ip, sizeof(ip));
	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	n = snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1,
		     "uroce/%u/%s/%u", e->cfg.port, ip, slot);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static void big_sndbuf(int fd)
{
	int sz = 4 << 20;

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
}

static int seqpacket(void)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
			0);

	if (fd >= 0)
		big_sndbuf(fd);
	return fd;
}

/*
 * Only a process of our own user is a sibling. Abstract unix names have no
 * permissions, and a forwarded packet comes with the rxinfo the sibling
 * says it had: its source address is what an RC QP checks against its
 * peer's (ur_qp_rx), so a stranger must not forward, nor take a slot's
 * packets.
 */
static bool same_user(int fd)
{
	struct ucred c;
	socklen_t l = sizeof(c);

	return !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &l) &&
	       l == sizeof(c) && c.uid == geteuid();
}

/*
 * Our name: uroce/<port>/<addr>/id/<pid>/<proto>/<build>, bound (not
 * listening) for as long as the engine lives. The build text keeps to
 * [A-Za-z0-9._+-], so that /proc/net/unix shows it as one field.
 */
static int id_bind(struct ur_engine *e)
{
	char ip[INET6_ADDRSTRLEN], proto[32], build[64];
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	int fd, n;

	snprintf(build, sizeof(build), "%s", UROCE_BUILD);
	for (char *c = build; *c; c++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789._+-", *c))
			*c = '_';
	addr_text(e, ip, sizeof(ip));
	proto_text(proto, sizeof(proto));
	n = snprintf(un.sun_path + 1, sizeof(un.sun_path) - 1,
		     "uroce/%u/%s/id/%d/%s/%s", e->cfg.port, ip, (int)getpid(),
		     proto, build);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&un,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* Whether a process listens on @slot, and its pid (0 when it is not
 * visible from our PID namespace) and uid. */
static bool slot_owner(const struct ur_engine *e, uint8_t slot, pid_t *pid,
		       uid_t *uid)
{
	struct sockaddr_un un;
	socklen_t len = slot_name(e, slot, &un), l;
	struct ucred c;
	int fd = seqpacket();
	bool there = false;

	if (fd < 0)
		return false;
	l = sizeof(c);
	/* A listener's credentials come with the connection at once: it
	 * need not accept (a busy sibling answers nothing here). */
	if (!connect(fd, (struct sockaddr *)&un, len) &&
	    !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &l) &&
	    l == sizeof(c)) {
		there = true;
		*pid = c.pid;
		*uid = c.uid;
	}
	close(fd);
	return there;
}

/* The name of process @pid on the address (@pfx): its protocol and build
 * text, false if it has none. */
static bool find_id(const char *pfx, pid_t pid, char *proto, size_t pn,
		    char *build, size_t bn)
{
	char id[112], text[512], fmt[32];
	bool found = false;
	size_t il;
	FILE *g;

	il = (size_t)snprintf(id, sizeof(id), "%sid/%d/", pfx, (int)pid);
	g = fopen("/proc/net/unix", "re");
	if (!g)
		return false;
	snprintf(fmt, sizeof(fmt), "%%%zu[^/]/%%%zus", pn - 1, bn - 1);
	while (!found && fgets(text, sizeof(text), g)) {
		char *n = strrchr(text, ' ');

		if (!n || strncmp(n + 1, id, il))
			continue;
		n += 1 + il;
		n[strcspn(n, "\n")] = 0;
		found = sscanf(n, fmt, proto, build) == 2;
	}
	fclose(g);
	return found;
}

/*
 * Every sibling on our address speaks our protocol: 0, or -EPROTO after
 * an error line that names the first one that does not (its pid, build
 * and protocol) and the address (-EADDRINUSE: another user's, which the
 * kernel would not let share the UDP port). /proc/net/unix lists
 * abstract names as "@name" in its last field.
 */
static int check_siblings(struct ur_engine *e)
{
	char ip[INET6_ADDRSTRLEN], pfx[80], mine[32], line[512];
	bool seen[256] = { false };
	size_t pl;
	FILE *f;
	int ret = 0;

	addr_text(e, ip, sizeof(ip));
	proto_text(mine, sizeof(mine));
	pl = (size_t)snprintf(pfx, sizeof(pfx), "@uroce/%u/%s/", e->cfg.port,
			      ip);
	f = fopen("/proc/net/unix", "re");
	if (!f) {
		ur_log(UR_LOG_DEBUG, "%s port %u: no /proc/net/unix (%s): "
		       "siblings' builds not checked", ip, e->cfg.port,
		       strerror(errno));
		return 0;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		char *name = strrchr(line, ' '), *end;
		char proto[32] = "", build[64] = "";
		unsigned long slot;
		uid_t uid = 0;
		pid_t pid = 0;
		bool found = false;

		if (!name || strncmp(name + 1, pfx, pl))
			continue;
		name += 1 + pl;
		name[strcspn(name, "\n")] = 0;
		slot = strtoul(name, &end, 10);
		if (end == name || *end || slot < 1 || slot > 255 ||
		    slot == e->slot || seen[slot])
			continue;
		seen[slot] = true;
		if (!slot_owner(e, (uint8_t)slot, &pid, &uid))
			continue; /* gone since, or not listening yet */
		if (uid != geteuid()) {
			ur_log(UR_LOG_ERROR, "%s UDP port %u is in use by pid "
			       "%d, a uroce of another user (uid %u): it cannot "
			       "be shared; use another UROCE_IP or UROCE_PORT",
			       ip, e->cfg.port, (int)pid, (unsigned)uid);
			ret = -EADDRINUSE;
			break;
		}
		/* Its own name: a second pass over the list. A process that
		 * exits may lose its name a moment before its slot (the kernel
		 * closes its sockets in turn): a slot without a name counts
		 * only if it stays. */
		if (pid)
			found = find_id(pfx, pid, proto, sizeof(proto), build,
					sizeof(build));
		for (int i = 0; !found && pid && i < 3; i++) {
			pid_t p2 = 0;
			uid_t u2;

			usleep(20000);
			if (!slot_owner(e, (uint8_t)slot, &p2, &u2) || p2 != pid)
				break;
			found = find_id(pfx, pid, proto, sizeof(proto), build,
					sizeof(build));
		}
		if (!found) {
			pid_t p2 = 0;
			uid_t u2;

			if (pid && (!slot_owner(e, (uint8_t)slot, &p2, &u2) ||
				    p2 != pid))
				continue; /* it went */
			if (UR_FWD_PROTO == UR_FWD_PROTO_UNNAMED) {
				ur_log(UR_LOG_WARN, "%s port %u: pid %d (slot "
				       "%lu) does not say its build (a uroce "
				       "from before builds named themselves, "
				       "or in another PID namespace): taken to "
				       "speak sibling protocol %u, as this one "
				       "does", ip, e->cfg.port, (int)pid, slot,
				       UR_FWD_PROTO_UNNAMED);
				continue;
			}
			ur_log(UR_LOG_ERROR, "%s UDP port %u is in use by pid %d "
			       "(slot %lu), a uroce from before builds named "
			       "themselves, which speaks sibling protocol %u; "
			       "this is uroce %s with protocol %s: different "
			       "builds cannot share an address (use another "
			       "UROCE_IP or UROCE_PORT, or the same build)", ip,
			       e->cfg.port, (int)pid, slot,
			       UR_FWD_PROTO_UNNAMED, UROCE_BUILD, mine);
			ret = -EPROTO;
			break;
		}
		if (!strcmp(proto, mine)) {
			ur_log(UR_LOG_DEBUG, "%s port %u: sharing with pid %d "
			       "(uroce %s, slot %lu)", ip, e->cfg.port, (int)pid,
			       build, slot);
			continue;
		}
		ur_log(UR_LOG_ERROR, "%s UDP port %u is in use by pid %d, uroce "
		       "%s speaking sibling protocol %s; this is uroce %s with "
		       "protocol %s: different builds cannot share an address "
		       "(use another UROCE_IP or UROCE_PORT, or the same build)",
		       ip, e->cfg.port, (int)pid, build, proto, UROCE_BUILD,
		       mine);
		ret = -EPROTO;
	}
	fclose(f);
	return ret;
}

int ur__fwd_open(struct ur_engine *e)
{
	struct sockaddr_un un;
	uint8_t start;
	int fd, ret;

	/* Named before the claim, so that a sibling that sees our slot also
	 * sees who we are. */
	ret = id_bind(e);
	if (ret < 0 && ret != -EADDRINUSE)
		return ret;
	e->fwd_id_fd = ret < 0 ? -1 : ret;
	fd = seqpacket();
	if (fd < 0)
		return -errno;
	if (getrandom(&start, 1, 0) != 1)
		start = (uint8_t)getpid();
	for (int i = 0; i < (e->cfg.slot ? 1 : 255); i++) {
		/* Slots 1..255: slot 0 would allow QPNs 0 and 1 (QP0/QP1).
		 * A device's further port takes its port 1's slot. */
		uint8_t slot = e->cfg.slot ? e->cfg.slot
					   : (uint8_t)(1 + (start + i) % 255);
		socklen_t len = slot_name(e, slot, &un);

		if (!bind(fd, (struct sockaddr *)&un, len)) {
			if (listen(fd, 64))
				break;
			e->slot = slot;
			/* After the claim: of two builds that open at once,
			 * the later check sees the other. */
			ret = check_siblings(e);
			if (ret) {
				close(fd);
				return ret;
			}
			return fd;
		}
		if (errno != EADDRINUSE)
			break;
	}
	close(fd);
	return -EADDRINUSE;
}

void ur__fwd_close(struct ur_engine *e)
{
	for (int i = 0; i < 256; i++) {
		if (e->fwd_out[i] >= 0)
			close(e->fwd_out[i]);
		if (e->fwd_own[i] >= 0)
			close(e->fwd_own[i]);
	}
	for (int i = 0; i < e->fwd_nin; i++)
		close(e->fwd_in[i]);
	e->fwd_nin = 0;
}

/*
 * The connection to @slot, made if need be. With @spare (a broadcast that
 * tries every slot) a failed connect keeps its unconnected socket in
 * *spare for the next slot: most slots have no process, and a socket made
 * and closed per slot cost ~2 ms per broadcast on 255 slots (~0.5 ms so).
 */
static int out_conn(struct ur_engine *e, int *tab, uint8_t slot, int *spare)
{
	struct sockaddr_un un;
	socklen_t len;
	int fd;

	if (tab[slot] >= 0)
		return tab[slot];
	if (spare && *spare >= 0) {
		fd = *spare;
		*spare = -1;
	} else {
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC |
				     SOCK_NONBLOCK, 0);
		if (fd < 0)
			return -errno;
	}
	len = slot_name(e, slot, &un);
	if (connect(fd, (struct sockaddr *)&un, len)) {
		int err = -errno;

		/* ECONNREFUSED/ENOENT: nobody there, the socket is unused. */
		if (spare && (err == -ECONNREFUSED || err == -ENOENT))
			*spare = fd;
		else
			close(fd);
		return err;
	}
	if (!same_user(fd)) {
		close(fd);
		return -EPERM;
	}
	big_sndbuf(fd);
	tab[slot] = fd;
	return fd;
}

int ur__fwd_to(struct ur_engine *e, uint8_t slot, const uint8_t *buf,
		size_t len, const struct ur_rxinfo *ri, bool own)
{
	int *tab = own ? e->fwd_own : e->fwd_out;
	struct iovec iov[2] = {
		{ .iov_base = (void *)ri, .iov_len = sizeof(*ri) },
		{ .iov_base = (void *)buf, .iov_len = len },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

	pthread_mutex_lock(&e->fwd_lock);
	for (int attempt = 0; attempt < 2; attempt++) {
		int fd = out_conn(e, tab, slot, NULL);

		if (fd < 0)
			break; /* no such process: a packet to a dead host */
		if (sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) {
			pthread_mutex_unlock(&e->fwd_lock);
			return 0;
		}
		if (errno == EAGAIN) {
			/* The sibling is behind: dropped, as by a switch,
			 * and counted apart from packets for no QP at all. */
			pthread_mutex_unlock(&e->fwd_lock);
			e->dev.cnt.rx_drop_fwd_full++;
			return -EAGAIN;
		}
		/* The sibling died (and maybe another took its slot). */
		close(fd);
		tab[slot] = -1;
	}
	pthread_mutex_unlock(&e->fwd_lock);
	e->dev.cnt.rx_drop_no_qp++;
	return -EHOSTUNREACH;
}

void ur__fwd_accept(struct ur_engine *e)
{
	for (;;) {
		int fd = accept4(e->fwd_fd, NULL, NULL,
				 SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct epoll_event ev = { .events = EPOLLIN };

		if (fd < 0)
			return;
		if (!same_user(fd) ||
		    e->fwd_nin == (int)(sizeof(e->fwd_in) / sizeof(e->fwd_in[0]))) {
			close(fd);
			continue;
		}
		e->fwd_in[e->fwd_nin++] = fd;
		ev.data.fd = fd;
		epoll_ctl(e->ep_fd, EPOLL_CTL_ADD, fd, &ev);
	}
}

int ur__fwd_drain(struct ur_engine *e, uint64_t now)
{
	int n = 0;

	/* Siblings' packets land in rxbuf[0]: first deliver what a stopped
	 * poll left there (udp.c, rx_deliver). */
	ur__udp_rx_rest(e, now);
	for (int i = 0; i < e->fwd_nin; i++) {
		/* A bounded turn each: a connection a flood keeps full (see
		 * fwd_own) must not starve the others; epoll reports the
		 * rest. */
		for (int k = 0; k < UR_IO_FWD_TURN; k++) {
			struct ur_rxinfo ri;
			struct iovec iov[2] = {
				{ .iov_base = &ri, .iov_len = sizeof(ri) },
				{ .iov_base = e->rxbuf[0],
				  .iov_len = sizeof(e->rxbuf[0]) },
			};
			struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
			ssize_t r = recvmsg(e->fwd_in[i], &mh, MSG_DONTWAIT);

			if (r == 0 || (r < 0 && errno != EAGAIN &&
				       errno != EINTR)) {
				/* The sibling closed its end. */
				epoll_ctl(e->ep_fd, EPOLL_CTL_DEL, e->fwd_in[i],
					  NULL);
				close(e->fwd_in[i]);
				e->fwd_in[i--] = e->fwd_in[--e->fwd_nin];
				break;
			}
			if (r < 0)
				break;
			if ((size_t)r < sizeof(ri)) {
				e->dev.cnt.rx_drop_malformed++;
				continue;
			}
			ri.ack_later = false; /* the sender's batch, not ours */
			ur__engine_deliver(e, e->rxbuf[0],
					    (size_t)r - sizeof(ri), &ri, now,
					    true);
			n++;
		}
	}
	return n;
}

/*
 * Forward a packet to every sibling on the address (a QP1 MAD whose owner
 * the receiver cannot tell, e.g. a CM REQ for a service another process
 * listens on). Slots without a process fail to connect at once.
 */
void ur__fwd_all(struct ur_engine *e, const uint8_t *buf, size_t len,
		  const struct ur_rxinfo *ri)
{
	struct iovec iov[2] = {
		{ .iov_base = (void *)ri, .iov_len = sizeof(*ri) },
		{ .iov_base = (void *)buf, .iov_len = len },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	int spare = -1;

	pthread_mutex_lock(&e->fwd_lock);
	for (int slot = 1; slot < 256; slot++) {
		int fd;

		if (slot == e->slot)
			continue;
		fd = out_conn(e, e->fwd_out, (uint8_t)slot, &spare);
		if (fd < 0)
			continue;
		if (sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
		    errno != EAGAIN) {
			close(fd);
			e->fwd_out[slot] = -1;
		}
	}
	pthread_mutex_unlock(&e->fwd_lock);
	if (spare >= 0)
		close(spare);
}

/*
 * Deliver one packet to a sibling over a connection of its own, from any
 * thread (the cached connections belong to the receive path): used for QP1
 * MADs to a process on our own address (see gsi.c).
 */
int ur__fwd_once(const struct ur_engine *e, uint8_t slot, const uint8_t *buf,
		  size_t len, const struct ur_rxinfo *ri)
{
	struct iovec iov[2] = {
		{ .iov_base = (void *)ri, .iov_len = sizeof(*ri) },
		{ .iov_base = (void *)buf, .iov_len = len },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	struct sockaddr_un un;
	socklen_t ulen = slot_name(e, slot, &un);
	int fd = seqpacket(), ret = 0;

	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&un, ulen))
		ret = -errno;
	else if (!same_user(fd))
		ret = -EPERM;
	else if (sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

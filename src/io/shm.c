/* SPDX-License-Identifier: MIT */
/*
 * The same-host path (UROCE_SHM=1): packets between uroce devices of one
 * machine and one network namespace go through shared memory instead of
 * the kernel's UDP stack, as a NIC loops traffic between its own ports
 * without a wire. The transport sees the same packets (the IB part, with
 * the addresses and TOS the IP/UDP headers would carry), except that the
 * ICRC is neither computed nor checked: nothing crosses a wire (udp.c,
 * to_shm). QP1's MADs stay on UDP.
 *
 * Each receiving engine owns a file /dev/shm/uroce-<netns>-<port>-<addr>-<slot>
 * (mode 0600): a control page, then UR_SHM_LANES single-producer rings. A
 * sending engine claims one lane of each receiver it talks to (its pid in
 * the lane's owner word) and reserves the lane's pages with fallocate, so
 * that a full /dev/shm refuses the lane instead of raising SIGBUS later.
 * The netns inode in the name keeps devices in different namespaces on
 * UDP, where the fault-injection switch sees their packets.
 *
 * A ring that is full drops the packet (counted tx_drop_shm), as a full
 * queue on a wire would; the transport retransmits. A receiving engine
 * thread about to sleep publishes `sleeping` and looks at its lanes once
 * more; a producer that publishes a record and then sees `sleeping` writes
 * a byte to the receiver's FIFO, which its epoll watches (Dekker: one of
 * the two sees the other). A spinning poller drains the lanes itself, as
 * it drains the socket.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "ur_copy.h"
#include "ur_io_priv.h"

#define UR_SHM_DIR "/dev/shm"
#define UR_SHM_MAGIC 0x316d73656372756full /* "uroces m1" */
#define UR_SHM_VERSION 1
#define UR_SHM_LANES 8
/* A lane holds more than a QP's window (UR_TX_WINDOW_BYTES) of requests
 * plus the responses and ACKs that share it. UROCE_SHM_RING_KB sets it
 * (tests make it smaller than a window to see drops recovered). */
#define UR_SHM_RING_DEFAULT (8u << 20)
#define UR_SHM_RING_MIN (64u << 10)
#define UR_SHM_RING_MAX (256u << 20)
#define UR_SHM_CTL 8192 /* control page + lane control blocks */
#define UR_SHM_REC 32   /* record header */
#define UR_SHM_WRAP 0xffffffffu
/* A producer looks for a receiver that was not there this long ago. */
#define UR_SHM_RETRY_NS 50000000ull

/* The control page. Native layout: both sides are this build (magic,
 * version and sizes are checked at open). */
struct shm_ctl {
	uint64_t magic;
	uint32_t version, lanes, ring;
	int32_t pid;          /* the receiver */
	atomic_int sleeping;  /* its engine thread sleeps in epoll */
	atomic_int closed;    /* it is gone: producers let go */
};

/* One lane's control block: the producer's and the consumer's words on
 * separate cache lines. */
struct shm_lane {
	atomic_int owner;          /* producer pid, 0: free */
	_Atomic uint64_t head;     /* bytes published */
	char pad[64 - sizeof(atomic_int) - sizeof(uint64_t) - 4];
	_Atomic uint64_t tail;     /* bytes consumed */
	char pad2[64 - sizeof(uint64_t)];
};

_Static_assert(sizeof(struct shm_lane) == 128, "lane control block");
_Static_assert(4096 + UR_SHM_LANES * sizeof(struct shm_lane) <= UR_SHM_CTL,
	       "control area");

/* A record: its header, then the IB part. */
struct shm_rec {
	uint32_t len;      /* IB part bytes, or UR_SHM_WRAP: go to offset 0 */
	uint16_t sport;
	uint8_t tos;
	uint8_t v6;
	uint8_t src[16];
	uint32_t rsvd[2];
};

_Static_assert(sizeof(struct shm_rec) == UR_SHM_REC, "record header");

struct ur_shm {
	uint8_t *map;
	size_t len;
	uint32_t ring;
	int fifo_fd;
	char name[128];
	bool mapped[UR_SHM_LANES]; /* lane's ring in our page tables */
};

/* A receiver this engine sends to (its lane), or knows to have none. */
struct ur_shm_peer {
	bool v6;
	uint8_t addr[16];
	uint8_t slot;
	bool ok;
	uint64_t retry_at;    /* !ok: look again from then */
	pthread_mutex_t lock; /* one producer per lane: our threads take turns */
	uint8_t *map;
	size_t len;
	uint32_t ring;
	int fd, fifo_fd, lane;
	uint64_t tail_seen;   /* the consumer's tail as last read */
};

#define UR_SHM_PEERS 64
struct ur_shm_peers {
	pthread_mutex_t add_lock;
	_Atomic unsigned int n;
	struct ur_shm_peer p[UR_SHM_PEERS];
};

static size_t shm_len(uint32_t ring)
{
	return UR_SHM_CTL + (size_t)UR_SHM_LANES * ring;
}

static struct shm_ctl *ctl_of(uint8_t *map)
{
	return (struct shm_ctl *)map;
}

static struct shm_lane *lane_of(uint8_t *map, int i)
{
	return (struct shm_lane *)(map + 4096 + (size_t)i * sizeof(struct shm_lane));
}

static uint8_t *ring_of(uint8_t *map, int i, uint32_t ring)
{
	return map + UR_SHM_CTL + (size_t)i * ring;
}

/* A power of two, so that byte counts wrap cleanly. */
static uint32_t ring_env(void)
{
	/* 64..262144 KiB, default 8192 (UR_SHM_RING_DEFAULT): settings.c. */
	unsigned long long kb = ur_setting_val("UROCE_SHM_RING_KB");
	uint32_t r = UR_SHM_RING_MIN;

	while (r < UR_SHM_RING_MAX && (uint64_t)r < (uint64_t)kb << 10)
		r <<= 1;
	return r;
}

static uint32_t rec_size(uint32_t len)
{
	return (UR_SHM_REC + len + 63u) & ~63u;
}

static int shm_name(char *buf, size_t cap, uint16_t port, bool v6,
		    const uint8_t *addr, uint8_t slot)
{
	static unsigned long ns_ino;
	char ip[INET6_ADDRSTRLEN];
	struct stat st;

	if (!ns_ino) {
		if (stat("/proc/self/ns/net", &st))
			return -errno;
		ns_ino = (unsigned long)st.st_ino;
	}
	if (!inet_ntop(v6 ? AF_INET6 : AF_INET, addr, ip, sizeof(ip)))
		return -EINVAL;
	snprintf(buf, cap, UR_SHM_DIR "/uroce-%lu-%u-%s-%u", ns_ino, port, ip,
		 slot);
	return 0;
}

static bool pid_gone(int32_t pid)
{
	return pid > 0 && kill(pid, 0) && errno == ESRCH;
}

/* Files of receivers that died without closing (a killed rank). */
static void sweep(void)
{
	DIR *d = opendir(UR_SHM_DIR);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[300];
		struct shm_ctl c;
		int fd;

		if (strncmp(de->d_name, "uroce-", 6) ||
		    strstr(de->d_name, ".fifo"))
			continue;
		snprintf(path, sizeof(path), UR_SHM_DIR "/%s", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (pread(fd, &c, sizeof(c), 0) == (ssize_t)sizeof(c) &&
		    c.magic == UR_SHM_MAGIC && pid_gone(c.pid)) {
			unlink(path);
			strcat(path, ".fifo");
			unlink(path);
		}
		close(fd);
	}
	closedir(d);
}

int ur__shm_open(struct ur_engine *e)
{
	struct ur_shm *s;
	char fifo[140];
	int fd, ret;

	s = calloc(1, sizeof(*s));
	e->shm_peers = calloc(1, sizeof(*e->shm_peers));
	if (!s || !e->shm_peers) {
		free(s);
		return -ENOMEM;
	}
	pthread_mutex_init(&e->shm_peers->add_lock, NULL);
	s->fifo_fd = -1;
	s->ring = ring_env();
	s->len = shm_len(s->ring);
	ret = shm_name(s->name, sizeof(s->name), e->cfg.port, e->local.v6,
		       e->local.src, e->slot);
	if (ret)
		goto err;
	sweep();
	/* Our slot is ours (fwd.c): a file under its name is a dead one's. */
	unlink(s->name);
	snprintf(fifo, sizeof(fifo), "%s.fifo", s->name);
	unlink(fifo);
	fd = open(s->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		goto err;
	}
	if (ftruncate(fd, (off_t)s->len) ||
	    fallocate(fd, 0, 0, UR_SHM_CTL)) {
		ret = -errno;
		close(fd);
		goto err_unlink;
	}
	s->map = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (s->map == MAP_FAILED) {
		ret = -errno;
		s->map = NULL;
		goto err_unlink;
	}
	/* Read and write: a FIFO with no writer left would report EOF to
	 * epoll at every wait. */
	if (mkfifo(fifo, 0600) ||
	    (s->fifo_fd = open(fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0) {
		ret = -errno;
		goto err_unlink;
	}
	ctl_of(s->map)->lanes = UR_SHM_LANES;
	ctl_of(s->map)->ring = s->ring;
	ctl_of(s->map)->version = UR_SHM_VERSION;
	ctl_of(s->map)->pid = (int32_t)getpid();
	atomic_store(&ctl_of(s->map)->closed, 0);
	/* Last: a producer takes the file only with its magic. */
	__atomic_store_n(&ctl_of(s->map)->magic, UR_SHM_MAGIC, __ATOMIC_RELEASE);
	e->shm = s;
	return 0;
err_unlink:
	unlink(fifo);
	unlink(s->name);
err:
	if (s->map)
		munmap(s->map, s->len);
	if (s->fifo_fd >= 0)
		close(s->fifo_fd);
	free(s);
	return ret;
}

int ur__shm_fifo_fd(const struct ur_engine *e)
{
	return e->shm ? e->shm->fifo_fd : -1;
}

void ur__shm_close(struct ur_engine *e)
{
	struct ur_shm_peers *ps = e->shm_peers;
	struct ur_shm *s = e->shm;

	if (ps) {
		for (unsigned int i = 0; i < atomic_load(&ps->n); i++) {
			struct ur_shm_peer *p = &ps->p[i];

			if (!p->map)
				continue;
			atomic_store(&lane_of(p->map, p->lane)->owner, 0);
			munmap(p->map, p->len);
			close(p->fd);
			close(p->fifo_fd);
			pthread_mutex_destroy(&p->lock);
		}
		pthread_mutex_destroy(&ps->add_lock);
		free(ps);
		e->shm_peers = NULL;
	}
	if (!s)
		return;
	atomic_store(&ctl_of(s->map)->closed, 1);
	unlink(s->name);
	strcat(s->name, ".fifo");
	unlink(s->name);
	munmap(s->map, s->len);
	close(s->fifo_fd);
	free(s);
	e->shm = NULL;
}

/* ---- producer ------------------------------------------------------------ */
/* Open @p's receiver and claim a lane; false if it has none for us. */
/*
 * Wake the receiver's engine thread if it sleeps in epoll. Dekker with
 * ur__shm_sleep: what we published (a head, a lane's owner), then the flag.
 */
static void wake(const struct ur_shm_peer *p)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&ctl_of(p->map)->sleeping, memory_order_relaxed) &&
	    atomic_exchange(&ctl_of(p->map)->sleeping, 0)) {
		if (write(p->fifo_fd, "", 1) < 0)
			(void)0; /* full: it has bytes to wake on already */
	}
}

static bool peer_attach(struct ur_engine *e, struct ur_shm_peer *p)
{
	char name[128], fifo[140];
	struct shm_ctl *c;
	struct stat st;
	int fd, me = (int)getpid();

	if (shm_name(name, sizeof(name), e->cfg.port, p->v6, p->addr, p->slot))
		return false;
	fd = open(name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	/* Its size says its ring size; the header must agree. */
	if (fstat(fd, &st) || st.st_uid != geteuid() ||
	    (size_t)st.st_size <= UR_SHM_CTL)
		goto err_fd;
	p->len = (size_t)st.st_size;
	p->ring = (uint32_t)((p->len - UR_SHM_CTL) / UR_SHM_LANES);
	if (p->ring < UR_SHM_RING_MIN || p->ring > UR_SHM_RING_MAX ||
	    (p->ring & (p->ring - 1)) || shm_len(p->ring) != p->len)
		goto err_fd;
	p->map = mmap(NULL, p->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p->map == MAP_FAILED)
		goto err_fd;
	c = ctl_of(p->map);
	if (__atomic_load_n(&c->magic, __ATOMIC_ACQUIRE) != UR_SHM_MAGIC ||
	    c->version != UR_SHM_VERSION || c->lanes != UR_SHM_LANES ||
	    c->ring != p->ring || atomic_load(&c->closed))
		goto err_map;
	p->lane = -1;
	for (int i = 0; i < UR_SHM_LANES && p->lane < 0; i++) {
		struct shm_lane *l = lane_of(p->map, i);
		int cur = atomic_load(&l->owner);

		/* A dead producer's lane is taken over as it stands: what
		 * it published is whole (head moves after the record). */
		if ((cur == 0 || pid_gone(cur)) &&
		    atomic_compare_exchange_strong(&l->owner, &cur, me))
			p->lane = i;
	}
	if (p->lane < 0)
		goto err_map;
	if (fallocate(fd, 0, (off_t)(ring_of(p->map, p->lane, p->ring) - p->map),
		      p->ring))
		goto err_lane;
	/* Map the whole ring now: faulting its 4 KiB pages in one by one as
	 * the first megabytes pass costs tens of ms over the first hundreds
	 * of messages. Best effort (Linux 5.14+). */
	(void)madvise(ring_of(p->map, p->lane, p->ring), p->ring,
		      MADV_POPULATE_WRITE);
	snprintf(fifo, sizeof(fifo), "%s.fifo", name);
	p->fifo_fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (p->fifo_fd < 0)
		goto err_lane;
	p->fd = fd;
	p->tail_seen = atomic_load(&lane_of(p->map, p->lane)->tail);
	wake(p); /* to map our lane (ur__shm_drain) now */
	return true;
err_lane:
	atomic_store(&lane_of(p->map, p->lane)->owner, 0);
err_map:
	munmap(p->map, p->len);
err_fd:
	p->map = NULL;
	close(fd);
	return false;
}

static void peer_detach(struct ur_shm_peer *p)
{
	munmap(p->map, p->len);
	close(p->fd);
	close(p->fifo_fd);
	p->map = NULL;
}

static bool peer_is(const struct ur_shm_peer *p, bool v6, const uint8_t *a,
		    uint8_t slot)
{
	return p->v6 == v6 && p->slot == slot && !memcmp(p->addr, a, v6 ? 16 : 4);
}

struct ur_shm_peer *ur__shm_peer(struct ur_engine *e,
				  const struct ur_ipudp *path, uint8_t slot)
{
	struct ur_shm_peers *ps = e->shm_peers;
	struct ur_shm_peer *p = NULL;
	unsigned int n = atomic_load_explicit(&ps->n, memory_order_acquire);

	for (unsigned int i = 0; i < n; i++)
		if (peer_is(&ps->p[i], path->v6, path->dst, slot)) {
			p = &ps->p[i];
			break;
		}
	if (p && p->ok)
		return p;
	if (p && ur_now() < p->retry_at)
		return NULL;
	pthread_mutex_lock(&ps->add_lock);
	if (!p) {
		n = atomic_load(&ps->n);
		if (n == UR_SHM_PEERS) {
			pthread_mutex_unlock(&ps->add_lock);
			return NULL;
		}
		p = &ps->p[n];
		memset(p, 0, sizeof(*p));
		p->v6 = path->v6;
		memcpy(p->addr, path->dst, path->v6 ? 16 : 4);
		p->slot = slot;
		pthread_mutex_init(&p->lock, NULL);
		atomic_store_explicit(&ps->n, n + 1, memory_order_release);
	}
	pthread_mutex_lock(&p->lock);
	if (!p->ok) {
		p->ok = peer_attach(e, p);
		if (!p->ok)
			p->retry_at = ur_now() + UR_SHM_RETRY_NS;
	}
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_unlock(&ps->add_lock);
	return p->ok ? p : NULL;
}

void ur__shm_put(struct ur_engine *e, struct ur_shm_peer *p,
		  const struct ur_ipudp *path, const struct iovec *iov, int niov)
{
	struct shm_lane *l;
	struct shm_rec r = { 0 };
	uint64_t head;
	uint32_t len = 0, need, pos, wrap = 0;
	uint8_t *ring, *d;

	for (int i = 0; i < niov; i++)
		len += (uint32_t)iov[i].iov_len;
	need = rec_size(len);
	pthread_mutex_lock(&p->lock);
	if (!p->ok || atomic_load_explicit(&ctl_of(p->map)->closed,
					   memory_order_relaxed)) {
		/* The receiver left: look for a new one later. */
		if (p->ok)
			peer_detach(p);
		p->ok = false;
		p->retry_at = ur_now() + UR_SHM_RETRY_NS;
		pthread_mutex_unlock(&p->lock);
		e->dev.cnt.tx_drop_shm++;
		return;
	}
	l = lane_of(p->map, p->lane);
	ring = ring_of(p->map, p->lane, p->ring);
	head = atomic_load_explicit(&l->head, memory_order_relaxed);
	pos = (uint32_t)(head & (p->ring - 1));
	if (pos + need > p->ring)
		wrap = p->ring - pos;
	if (head + wrap + need - p->tail_seen > p->ring) {
		p->tail_seen = atomic_load_explicit(&l->tail,
						    memory_order_acquire);
		if (head + wrap + need - p->tail_seen > p->ring) {
			pthread_mutex_unlock(&p->lock);
			e->dev.cnt.tx_drop_shm++; /* full: lost, as on a wire */
			return;
		}
	}
	if (wrap) {
		memcpy(ring + pos, &(uint32_t){ UR_SHM_WRAP }, sizeof(uint32_t));
		head += wrap;
		pos = 0;
	}
	r.len = len;
	r.sport = path->sport;
	r.tos = path->tos;
	r.v6 = path->v6;
	memcpy(r.src, path->src, sizeof(r.src));
	memcpy(ring + pos, &r, sizeof(r));
	d = ring + pos + UR_SHM_REC;
	for (int i = 0; i < niov; i++) {
		ur_copy(d, iov[i].iov_base, iov[i].iov_len);
		d += iov[i].iov_len;
	}
	atomic_store_explicit(&l->head, head + need, memory_order_release);
	pthread_mutex_unlock(&p->lock);
	e->dev.cnt.tx_shm++;
	wake(p);
}

/* ---- consumer (rx_lock held) ---------------------------------------------- */
static bool lanes_pending(const struct ur_shm *s)
{
	for (int i = 0; i < UR_SHM_LANES; i++) {
		struct shm_lane *l = lane_of(s->map, i);

		if (atomic_load_explicit(&l->head, memory_order_acquire) !=
		    atomic_load_explicit(&l->tail, memory_order_relaxed))
			return true;
	}
	return false;
}

int ur__shm_drain(struct ur_engine *e, uint64_t now, const struct ur_cq *stop)
{
	struct ur_shm *s = e->shm;
	size_t since = 0;
	int n = 0;

	for (int i = 0; i < UR_SHM_LANES; i++) {
		struct shm_lane *l = lane_of(s->map, i);
		uint8_t *ring = ring_of(s->map, i, s->ring);
		uint64_t t = atomic_load_explicit(&l->tail, memory_order_relaxed);
		uint64_t h = atomic_load_explicit(&l->head, memory_order_acquire);

		/* A new producer: its lane is allocated (peer_attach), so
		 * map all of it at once, as it did on its side. It woke us
		 * for this when it attached, before its first packet. */
		if (!s->mapped[i] &&
		    atomic_load_explicit(&l->owner, memory_order_acquire)) {
			(void)madvise(ring, s->ring, MADV_POPULATE_READ);
			s->mapped[i] = true;
		}
		while (t != h) {
			uint32_t pos = (uint32_t)(t & (s->ring - 1));
			struct shm_rec r;
			struct ur_rxinfo ri = { 0 };

			/* Records start 64-byte aligned: a wrap marker fits. */
			if (h - t > s->ring || (pos & 63)) {
				t = h; /* a broken producer: skip what it wrote */
				e->dev.cnt.rx_drop_malformed++;
				break;
			}
			memcpy(&r.len, ring + pos, sizeof(r.len));
			if (r.len == UR_SHM_WRAP) {
				t += s->ring - pos;
				continue;
			}
			memcpy(&r, ring + pos, sizeof(r));
			if (r.len > UR_IO_MAX_PKT ||
			    pos + UR_SHM_REC + r.len > s->ring ||
			    rec_size(r.len) > h - t) {
				t = h;
				e->dev.cnt.rx_drop_malformed++;
				break;
			}
			if (since >= UR_IO_NOW_BYTES) {
				now = ur_now();
				since = 0;
				/* Room for the producer as we go. */
				atomic_store_explicit(&l->tail, t,
						      memory_order_release);
			}
			since += r.len;
			ri.path.v6 = r.v6 != 0;
			memcpy(ri.path.src, r.src, sizeof(r.src));
			memcpy(ri.path.dst, e->local.src, sizeof(ri.path.dst));
			ri.path.sport = r.sport;
			ri.path.dport = e->cfg.port;
			ri.path.tos = r.tos;
			ri.path.ip_frag = 0x4000;
			ri.icrc_checked = true; /* not computed: to_shm */
			e->dev.cnt.rx_shm++;
			ur__engine_deliver(e, ring + pos + UR_SHM_REC, r.len,
					    &ri, now, false);
			t += rec_size(r.len);
			n++;
			/* A poller returns with its completion; what
			 * is left waits for its next poll (or the
			 * engine thread's drain). */
			if (stop && ur_cq_nonempty(stop)) {
				atomic_store_explicit(&l->tail, t,
						      memory_order_release);
				return n;
			}
		}
		atomic_store_explicit(&l->tail, t, memory_order_release);
	}
	return n;
}

bool ur__shm_sleep(struct ur_engine *e)
{
	struct shm_ctl *c = ctl_of(e->shm->map);

	atomic_store(&c->sleeping, 1);
	atomic_thread_fence(memory_order_seq_cst);
	if (!lanes_pending(e->shm))
		return false;
	atomic_store(&c->sleeping, 0);
	return true;
}

void ur__shm_awake(struct ur_engine *e)
{
	char buf[64];

	atomic_store(&ctl_of(e->shm->map)->sleeping, 0);
	while (read(e->shm->fifo_fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf))
		;
}

/* SPDX-License-Identifier: MIT */
/*
 * Shared segments between the ranks of one host: allreduce and all-to-all
 * up to UROCE_COLL_SEG_KB (16 MiB) per rank with no verbs, no engine thread and
 * no packet in the path.
 *
 * Every communicator whose ranks may share memory (UROCE_COLL_CMA, i.e.
 * uroce-launch's shared-memory default) makes one POSIX shared-memory
 * segment per rank: a header (a progress word, a futex word, the
 * signature of the call) and two data areas of UROCE_COLL_SEG_KB, used
 * by alternate calls. Each rank opens every peer's segment (named by the
 * peer's pid and a random id from its connection record) as it connects,
 * and unlinks its own name after the barrier that ends the setup (the
 * mappings stay), so a rank that dies later leaves no name behind. The
 * first collective in range agrees, by a two-element allreduce over the
 * verbs, that every rank mapped every peer (a rank on another host
 * cannot) and takes CMA: only then the path is used.
 *
 * Allreduce of B bytes at n ranks, in the call's area:
 *   1. copy the n-1 blocks of our input that peers reduce into our area;
 *      publish phase 1 (progress word = 2k+1)
 *   2. wait for every peer's phase 1; reduce our block from our input and
 *      the peers' areas, write it to our output and into our area;
 *      publish phase 2
 *   3. wait for every peer's phase 2; copy their blocks into our output.
 * From UR_SEG_CMA_MIN blocks with CMA, step 1 only publishes our input
 * and output, step 2 reads the peers' inputs by process_vm_readv and
 * writes our block into their outputs by process_vm_writev, and step 3
 * only waits.
 * Two synchronisations and 2 B + B(n-1)/n bytes copied per rank, against
 * log2 n or 2(n-1) steps of messages through two engines. All-to-all is
 * one synchronisation: copy the blocks for the peers into our area,
 * publish, copy ours out of theirs; from UR_SEG_CMA_MIN, publish our
 * output, write our blocks into theirs, publish again, wait. Either way
 * a rank serves each peer as soon as that peer has published, not after
 * a barrier of all (seg_each_ready), and copies its own block while it
 * waits: with more ranks than CPUs a barrier needs every rank to have
 * run, which costs a sleep and a wake-up per rank sharing the core.
 *
 * Two areas make the next call safe without a third synchronisation: a
 * rank writes area a again only in call k+2, after it saw every peer's
 * phase 1 of call k+1, which each peer publishes after it finished
 * reading call k.
 *
 * Waiting spins on the progress words for the communicator's spin time
 * (30 us with more local ranks than CPUs, yielding) while every rank on
 * our CPU either gets it from our yield (same scheduling group) or is
 * neither one we wait for nor has work left (seg_may_spin), then sleeps on
 * our futex word, which a rank that publishes rings for every peer that
 * said it sleeps: no thread is woken for nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "coll_internal.h"
#include "ur_settings.h"

#define UR_SEG_MAGIC 0x75736567636f6c31ull /* "usegcol1" */
#define UR_SEG_HDR 4096u
/* Blocks from this size go by process_vm_writev when every peer takes it
 * (per-call medians, A/B: 2 ranks 64 KiB all-to-all 5 us against 10 through
 * the areas, 256 KiB allreduce 25 against 35; 4 ranks: 16 KiB blocks 33
 * against 30 us, 64 KiB blocks 70 against 99). */
#define UR_SEG_CMA_MIN (32u << 10)
/* With CMA, allreduce reads a peer's input in pieces of this size and
 * reduces each while it is in the cache. */
#define UR_SEG_READ_CHUNK (64u << 10)

struct ur_seg_hdr {
	uint64_t magic;
	uint32_t id;
	uint32_t pad;
	uint64_t cap;        /* bytes per data area */
	uint32_t sig[2];     /* the call's signature, per area */
	uint64_t addr[2];    /* with CMA: the call's output, per area */
	uint64_t in[2];      /* with CMA: the call's input, per area */
	uint64_t flag;       /* progress: 2k+1, 2k+2 for call k */
	int32_t cpu;         /* the CPU we last started a call on */
	uint32_t waiting;    /* threads of ours waiting for peers */
	uint32_t group;      /* our scheduling group (seg_group) */
	char pad2[64 - 20];
	uint32_t bell;       /* futex word: rung by publishers */
	uint32_t sleepers;   /* threads of ours asleep on bell */
};

struct ur_seg {
	int state;           /* 0 untried, 1 on, -1 off, 2 agreeing */
	int none;            /* ours could not be made: agree on off */
	int cma;             /* every peer takes process_vm_writev */
	size_t cap;          /* agreed bytes per rank (<= every area) */
	size_t len;          /* our mapping */
	char name[64];       /* our name while it is linked ("" after) */
	char **map;          /* every rank's segment (map[rank]: ours) */
	size_t *maplen;
	int *todo;           /* all-to-all: the peers not served yet */
	char *chunk;         /* allreduce with CMA: a peer's piece, read */
	uint64_t calls;
};

static struct ur_seg_hdr *hdr(const struct uroce_comm *c, int i)
{
	return (struct ur_seg_hdr *)c->seg->map[i];
}

static char *area(const struct uroce_comm *c, int i, int a)
{
	return c->seg->map[i] + UR_SEG_HDR + (size_t)a * hdr(c, i)->cap;
}

/*
 * Which scheduling group we are in: the ranks of one group hand their CPU
 * to each other by sched_yield. With autogroups (the kernel's default for
 * desktops and this VM) every session is one group, scheduled as a unit
 * against the others, and a yield only reaches tasks of its own group; a
 * cgroup with the CPU controller is another wall. So the session (when
 * autogroups are on) and the cgroup path, hashed (FNV-1a).
 */
static uint32_t seg_group(void)
{
	uint32_t h = 2166136261u;
	char buf[512];
	size_t m = 0;
	FILE *f;

	f = fopen("/proc/sys/kernel/sched_autogroup_enabled", "r");
	if (f) {
		if (fgetc(f) == '1')
			m = (size_t)snprintf(buf, sizeof(buf), "sid %d ", (int)getsid(0));
		fclose(f);
	}
	f = fopen("/proc/self/cgroup", "r");
	if (f) {
		m += fread(buf + m, 1, sizeof(buf) - 1 - m, f);
		fclose(f);
	}
	for (size_t i = 0; i < m; i++)
		h = (h ^ (uint8_t)buf[i]) * 16777619u;
	return h;
}

static void seg_name(char *out, size_t len, uint32_t pid, uint32_t id)
{
	snprintf(out, len, "/uroce-coll-%u-%08x", pid, id);
}

int ur__seg_create(struct uroce_comm *c)
{
	size_t cap = (size_t)ur_setting_val("UROCE_COLL_SEG_KB") << 10;
	struct ur_seg *s;
	struct ur_seg_hdr *h;
	int fd;

	c->seg_id = 0;
	if (!c->cma || !cap || c->size < 2)
		return 0;
	s = calloc(1, sizeof(*s));
	if (s) {
		s->map = calloc((size_t)c->size, sizeof(*s->map));
		s->maplen = calloc((size_t)c->size, sizeof(*s->maplen));
		s->todo = calloc((size_t)c->size, sizeof(*s->todo));
		s->chunk = malloc(UR_SEG_READ_CHUNK);
	}
	if (!s || !s->map || !s->maplen || !s->todo || !s->chunk) {
		if (s) {
			free(s->map);
			free(s->maplen);
			free(s->todo);
			free(s->chunk);
		}
		free(s);
		return -ENOMEM;
	}
	c->seg = s;
	s->len = UR_SEG_HDR + 2 * cap;
	/* The id only has to differ from our other communicators' (the pid
	 * names the process); 0 means no segment. */
	do {
		if (getrandom(&c->seg_id, sizeof(c->seg_id), 0) != sizeof(c->seg_id))
			c->seg_id = (uint32_t)ur__now_ns();
	} while (!c->seg_id);
	seg_name(s->name, sizeof(s->name), (uint32_t)getpid(), c->seg_id);
	fd = shm_open(s->name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		goto off;
	if (ftruncate(fd, (off_t)s->len)) {
		close(fd);
		shm_unlink(s->name);
		goto off;
	}
	s->map[c->rank] = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (s->map[c->rank] == MAP_FAILED) {
		s->map[c->rank] = NULL;
		shm_unlink(s->name);
		goto off;
	}
	s->maplen[c->rank] = s->len;
	h = hdr(c, c->rank);
	h->id = c->seg_id;
	h->cap = cap;
	h->group = seg_group();
	__atomic_store_n(&h->magic, UR_SEG_MAGIC, __ATOMIC_RELEASE);
	return 0;
off:
	/* No segment: the ranks agree on the verbs path at first use. */
	s->name[0] = 0;
	s->none = 1;
	c->seg = s;
	c->seg_id = 0;
	return 0;
}

static void seg_unlink(struct ur_seg *s)
{
	if (s->name[0])
		shm_unlink(s->name);
	s->name[0] = 0;
}

void ur__seg_free(struct uroce_comm *c)
{
	struct ur_seg *s = c->seg;

	if (!s)
		return;
	seg_unlink(s);
	for (int i = 0; s->map && i < c->size; i++)
		if (s->map[i])
			munmap(s->map[i], s->maplen[i]);
	free(s->map);
	free(s->maplen);
	free(s->todo);
	free(s->chunk);
	free(s);
	c->seg = NULL;
}

/* Map peer i's segment; 0 or a negative errno (another host: -ENOENT). */
static int seg_open(struct uroce_comm *c, int i)
{
	struct ur_peer *p = &c->peers[i];
	struct ur_seg_hdr *h;
	struct stat st;
	char name[64];
	void *m;
	int fd;

	if (!p->seg_id || p->cma_pid <= 0)
		return -ENOENT;
	seg_name(name, sizeof(name), (uint32_t)p->cma_pid, p->seg_id);
	fd = shm_open(name, O_RDWR, 0);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || (size_t)st.st_size < UR_SEG_HDR) {
		close(fd);
		return -EINVAL;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -errno;
	h = m;
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != UR_SEG_MAGIC ||
	    h->id != p->seg_id || UR_SEG_HDR + 2 * h->cap > (size_t)st.st_size) {
		munmap(m, (size_t)st.st_size);
		return -EINVAL;
	}
	c->seg->map[i] = m;
	c->seg->maplen[i] = (size_t)st.st_size;
	return 0;
}

void ur__seg_connect(struct uroce_comm *c, int i)
{
	if (c->seg && !c->seg->none && i != c->rank && !c->seg->map[i])
		seg_open(c, i); /* not there: the ranks agree on off later */
}

void ur__seg_unlink(struct uroce_comm *c)
{
	if (c->seg)
		seg_unlink(c->seg);
}

/*
 * First use: open every peer's segment, then agree with every rank (an
 * allreduce MIN over the verbs) on the largest size all can hold; 0 if
 * any rank cannot, and the path stays off.
 */
static void seg_agree(struct uroce_comm *c)
{
	struct ur_seg *s = c->seg;
	int64_t v[2] = { s->none ? 0 : (int64_t)hdr(c, c->rank)->cap, 1 };
	int64_t cap = v[0];
	int e;

	for (int i = 0; i < c->size && cap; i++)
		if (i != c->rank && !s->map[i] && seg_open(c, i))
			cap = 0;
	for (int i = 0; i < c->size && cap; i++)
		if (hdr(c, i)->cap < (uint64_t)cap)
			cap = (int64_t)hdr(c, i)->cap;
	for (int i = 0; i < c->size; i++)
		if (i != c->rank && !ur__cma_ok(c, &c->peers[i]))
			v[1] = 0;
	v[0] = cap;
	s->state = 2;
	e = ur__run_allreduce(c, v, v, 2, UROCE_INT64, UROCE_MIN);
	cap = v[0];
	/* Every rank has opened ours now (or never will): the name can go. */
	seg_unlink(s);
	if (e || cap <= 0) {
		s->state = -1;
		return;
	}
	s->cap = (size_t)cap;
	s->cma = v[1] > 0;
	s->state = 1;
}

int ur__seg_use(struct uroce_comm *c, size_t bytes, size_t block)
{
	struct ur_seg *s = c->seg;
	/* All-to-all blocks of UR_SEG_CMA_MIN go straight into the peers'
	 * outputs and need no area (an overlapping input is copied aside),
	 * so with CMA any size goes: 64 MiB, 2 ranks, against the verbs
	 * (coll6 results). */
	int any = block >= UR_SEG_CMA_MIN;

	if (!s || s->state == -1 || s->state == 2 || !bytes || c->nrails > 1 ||
	    c->algo_override != UR_A_AUTO)
		return 0;
	/* Every rank decides from the same sizes and, once agreed, cap and
	 * CMA. */
	if (!s->state) {
		if (!any && bytes > ((size_t)ur_setting_val("UROCE_COLL_SEG_KB") << 10))
			return 0;
		seg_agree(c);
	}
	return s->state == 1 && (bytes <= s->cap || (any && s->cma));
}

static long futex(uint32_t *w, int op, uint32_t v, const struct timespec *ts)
{
	return syscall(SYS_futex, w, op, v, ts, NULL, 0);
}

/* Publish our progress and ring every peer asleep on its bell. */
static void seg_publish(struct uroce_comm *c, uint64_t v)
{
	__atomic_store_n(&hdr(c, c->rank)->flag, v, __ATOMIC_SEQ_CST);
	for (int i = 0; i < c->size; i++) {
		struct ur_seg_hdr *h = hdr(c, i);

		if (i == c->rank || !__atomic_load_n(&h->sleepers, __ATOMIC_SEQ_CST))
			continue;
		__atomic_fetch_add(&h->bell, 1, __ATOMIC_SEQ_CST);
		futex(&h->bell, FUTEX_WAKE, INT_MAX, NULL);
	}
}

static int seg_at(struct uroce_comm *c, int i, uint64_t v)
{
	return __atomic_load_n(&hdr(c, i)->flag, __ATOMIC_SEQ_CST) >= v;
}

/* Every peer's progress word reached v (any == NULL), or one of the m
 * peers in any's. */
static int seg_all_at(struct uroce_comm *c, uint64_t v, const int *any, int m)
{
	for (int t = 0; any && t < m; t++)
		if (seg_at(c, any[t], v))
			return 1;
	if (any)
		return 0;
	for (int i = 0; i < c->size; i++)
		if (i != c->rank && !seg_at(c, i, v))
			return 0;
	return 1;
}

/*
 * May we spin while waiting for v? A rank on our CPU in our scheduling
 * group (seg_group) gets the CPU from our sched_yield whenever it has
 * work, as mpirun's ranks hand it to each other: the spin costs it nothing
 * and saves both a sleep and a wake-up (uroce-launch keeps ranks that
 * share CPUs in its session for this: 4 ranks on 2 CPUs, all-to-all
 * per-call medians 64 KiB 28 -> 17.6 us, 256 KiB 58 -> 34, 1 MiB 239-261
 * -> 204-211; coll9 results). Another group's rank does not get it (a
 * yield stays in the group, and the group runs on until its share is
 * used): then not while that rank is one we wait for, or still has work of
 * its own (not waiting). A spin in that case made a 4-rank all-to-all on 2
 * CPUs at 64 KiB 62 us a call with 30 us and 1.9 ms with 1 ms, against 32
 * us asleep at once. Waiting only for ranks on other CPUs while ours wait
 * too, a spin costs nobody and saves a wake-up from another CPU, which
 * waits for the woken rank's turn on a busy CPU (a futex ping-pong across
 * the 2 CPUs at load 13: over 3 ms a round trip; on one CPU 2.8 us).
 */
static int seg_may_spin(struct uroce_comm *c, uint64_t v, const int *any, int m)
{
	const struct ur_seg_hdr *me = hdr(c, c->rank);

	for (int i = 0; i < c->size; i++) {
		const struct ur_seg_hdr *h = hdr(c, i);

		if (i == c->rank || __atomic_load_n(&h->cpu, __ATOMIC_RELAXED) != me->cpu)
			continue;
		if (c->yield && h->group == me->group)
			continue;
		if (!__atomic_load_n(&h->waiting, __ATOMIC_RELAXED))
			return 0;
		if (!any && !seg_at(c, i, v))
			return 0;
		for (int t = 0; any && t < m; t++)
			if (any[t] == i)
				return 0;
	}
	return 1;
}

static int seg_wait_in(struct uroce_comm *c, uint64_t v, enum ur_coll_kind k,
		       const int *any, int m)
{
	struct ur_seg_hdr *me = hdr(c, c->rank);
	uint64_t start = ur__now_ns(), timeout = (uint64_t)c->timeout_ms * 1000000ull;
	const struct timespec ts = { 0, 1000000 }; /* 1 ms: the failure watch */

	for (;;) {
		uint64_t now;
		int e;

		if (seg_all_at(c, v, any, m))
			return 0;
		now = ur__now_ns();
		if (now - start < c->cur_spin_ns && seg_may_spin(c, v, any, m)) {
			if (c->yield)
				sched_yield();
			continue;
		}
		__atomic_fetch_add(&me->sleepers, 1, __ATOMIC_SEQ_CST);
		uint32_t b = __atomic_load_n(&me->bell, __ATOMIC_SEQ_CST);
		if (!seg_all_at(c, v, any, m))
			futex(&me->bell, FUTEX_WAIT, b, &ts);
		__atomic_fetch_sub(&me->sleepers, 1, __ATOMIC_SEQ_CST);
		/* No message of this call may come: one that does is from a
		 * peer in another collective (or with a count on the other
		 * side of UROCE_COLL_SEG_KB), which would wait for us until
		 * the timeout. (A peer done before us may have sent the
		 * next call's.) */
		e = ur__stray(c, c->seq);
		if (e >= 0)
			return ur__fail(c, -EPROTO,
					 "mismatch in %s: rank %d sent a message while we run it through shared segments (another collective, or a count on the other side of UROCE_COLL_SEG_KB)",
					 ur__coll_kind_name[k], e);
		if (e < -1)
			return e;
		now = ur__now_ns();
		if (now - start > timeout)
			return ur__fail(c, -ETIMEDOUT,
					 "no progress for %d ms in %s (UROCE_COLL_TIMEOUT_MS); a peer is stuck or dead",
					 c->timeout_ms, ur__coll_kind_name[k]);
		e = ur__check_alive(c, now);
		if (e)
			return e;
	}
}

/* Wait until every peer's progress word (any == NULL), or one of the m
 * peers in any's, reaches v: spin while seg_may_spin, then sleep. */
static int seg_wait_on(struct uroce_comm *c, uint64_t v, enum ur_coll_kind k,
		       const int *any, int m)
{
	struct ur_seg_hdr *me = hdr(c, c->rank);
	int e;

	__atomic_fetch_add(&me->waiting, 1, __ATOMIC_SEQ_CST);
	e = seg_wait_in(c, v, k, any, m);
	__atomic_fetch_sub(&me->waiting, 1, __ATOMIC_SEQ_CST);
	return e;
}

static int seg_wait(struct uroce_comm *c, uint64_t v, enum ur_coll_kind k)
{
	return seg_wait_on(c, v, k, NULL, 0);
}

/* One kernel copy of len bytes between our memory at mine and peer i's
 * at its address theirs: process_vm_writev into it (put) or
 * process_vm_readv from it. */
static int seg_cma(struct uroce_comm *c, int i, int put, void *mine, uint64_t theirs,
		   size_t len, enum ur_coll_kind k)
{
	struct iovec l = { mine, len };
	struct iovec r = { (void *)(uintptr_t)theirs, len };

	while (len) {
		ssize_t w = put ? process_vm_writev(c->peers[i].cma_pid, &l, 1, &r, 1, 0) :
			process_vm_readv(c->peers[i].cma_pid, &l, 1, &r, 1, 0);

		if (w <= 0)
			return ur__fail(c, w < 0 ? -errno : -EIO, "%s: %s with rank %d: %s",
					 ur__coll_kind_name[k],
					 put ? "process_vm_writev" : "process_vm_readv", i,
					 w < 0 ? strerror(errno) : "moved nothing");
		l.iov_base = (char *)l.iov_base + w;
		l.iov_len -= (size_t)w;
		r.iov_base = (char *)r.iov_base + w;
		r.iov_len -= (size_t)w;
		len -= (size_t)w;
	}
	return 0;
}

/* One process_vm_writev of len bytes at src into peer i's output at off. */
static int seg_put(struct uroce_comm *c, int i, int a, size_t off,
		   const void *src, size_t len, enum ur_coll_kind k)
{
	return seg_cma(c, i, 1, (void *)src, hdr(c, i)->addr[a] + off, len, k);
}

/* Start call k: its area and progress values; fails on a broken comm. */
static int seg_begin(struct uroce_comm *c, uint64_t *k)
{
	if (!c->failed && c->owner && __atomic_load_n(&c->owner->failed, __ATOMIC_ACQUIRE)) {
		memcpy(c->err, c->owner->err, sizeof(c->err));
		c->failed = c->owner->failed;
	}
	if (c->failed)
		return c->failed;
	/* For seg_may_spin: where we run, with the ranks bound (uroce-launch
	 * binds by default) the CPU we wait on. */
	__atomic_store_n(&hdr(c, c->rank)->cpu, sched_getcpu(), __ATOMIC_RELAXED);
	*k = c->seg->calls++;
	return 0;
}

/* Every peer's call in this area must be ours (type, op, count, call). */
static int seg_check(struct uroce_comm *c, int a, uint32_t sig, enum ur_coll_kind k)
{
	for (int i = 0; i < c->size; i++)
		if (i != c->rank && hdr(c, i)->sig[a] != sig)
			return ur__fail(c, -EPROTO,
					 "mismatch in %s: rank %d's call differs (type, op, count or order)",
					 ur__coll_kind_name[k], i);
	return 0;
}

/* Reduce our block (len elements at byte off) into out: our input, then
 * each peer's in rank order (the same order on every path, so the
 * result is the same bit for bit), from the peers' areas. */
static void seg_reduce_areas(struct uroce_comm *c, int a, const char *in, char *out,
			     size_t off, size_t len, enum uroce_dtype dt, enum uroce_redop op)
{
	int first = 1;

	for (int i = 0; i < c->size; i++) {
		if (i == c->rank)
			continue;
		if (first)
			ur__reduce3(out + off, in + off, area(c, i, a) + off, len, dt, op);
		else
			ur__reduce(out + off, area(c, i, a) + off, len, dt, op);
		first = 0;
	}
}

/* The same, reading the peers' inputs by process_vm_readv, a piece of
 * UR_SEG_READ_CHUNK at a time for every peer: the piece and our output's
 * stay in the cache while they are reduced. The peers no longer copy
 * their input into the area before they publish (per-call medians, busbw
 * against the areas: 4 ranks on 2 CPUs 256 KiB 3.88 against 2.34 GB/s,
 * 2 ranks 1 MiB 10.9 against 5.6; coll8 results). */
static int seg_reduce_read(struct uroce_comm *c, int a, const char *in, char *out,
			   size_t off, size_t len, enum uroce_dtype dt, enum uroce_redop op)
{
	size_t es = uroce_dtype_size(dt), step = UR_SEG_READ_CHUNK / es;
	char *buf = c->seg->chunk;
	int e;

	for (size_t o = 0; o < len; o += step) {
		size_t m = len - o < step ? len - o : step, at = off + o * es;
		int first = 1;

		for (int i = 0; i < c->size; i++) {
			if (i == c->rank)
				continue;
			e = seg_cma(c, i, 0, buf, hdr(c, i)->in[a] + at, m * es, UR_C_ALLREDUCE);
			if (e)
				return e;
			if (first)
				ur__reduce3(out + at, in + at, buf, m, dt, op);
			else
				ur__reduce(out + at, buf, m, dt, op);
			first = 0;
		}
	}
	return 0;
}

int ur__seg_allreduce(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
		       size_t count, enum uroce_dtype dt, enum uroce_redop op,
		       uint32_t sig)
{
	int n = c->size, r = c->rank, a, e, cma;
	size_t es = uroce_dtype_size(dt);
	const char *in = sendbuf;
	char *out = recvbuf, *mine;
	uint64_t k;

	e = seg_begin(c, &k);
	if (e)
		return e;
	a = (int)(k & 1);
	if (in != out && ur__overlaps(in, count * es, out, count * es)) {
		ur_move(out, in, count * es);
		in = out;
	}
	mine = area(c, r, a);
	/* Blocks of UR_SEG_CMA_MIN: each rank reads its block of the peers'
	 * inputs, which they publish, and writes its reduced block straight
	 * into the peers' outputs (one kernel copy each way instead of two
	 * copies through the areas). */
	cma = c->seg->cma && count / (size_t)n * es >= UR_SEG_CMA_MIN;
	for (int i = 0; !cma && i < n; i++)
		if (i != r)
			ur_copy(mine + ur__blk_off(count, n, i) * es,
				in + ur__blk_off(count, n, i) * es, ur__blk_len(count, n, i) * es);
	hdr(c, r)->in[a] = (uint64_t)(uintptr_t)in;
	hdr(c, r)->addr[a] = (uint64_t)(uintptr_t)out;
	hdr(c, r)->sig[a] = sig;
	seg_publish(c, 2 * k + 1);
	e = seg_wait(c, 2 * k + 1, UR_C_ALLREDUCE);
	if (!e)
		e = seg_check(c, a, sig, UR_C_ALLREDUCE);
	if (e)
		return e;
	/* Our block: our input first (it may be the output, in place), then
	 * the peers' in rank order. */
	size_t off = ur__blk_off(count, n, r) * es, len = ur__blk_len(count, n, r);
	e = cma ? seg_reduce_read(c, a, in, out, off, len, dt, op) :
		(seg_reduce_areas(c, a, in, out, off, len, dt, op), 0);
	if (e)
		return e;
	ur__reduce_finish(out + off, len, dt, op, n);
	if (cma) {
		/* A peer's input is read at our block only by us, and we are
		 * done reading it: in place, writing our block into its
		 * output overwrites nothing another rank still reads. */
		for (int i = 0; i < n; i++)
			if (i != r && (e = seg_put(c, i, a, off, out + off, len * es,
						   UR_C_ALLREDUCE)))
				return e;
	} else {
		ur_copy(mine + off, out + off, len * es);
	}
	seg_publish(c, 2 * k + 2);
	e = seg_wait(c, 2 * k + 2, UR_C_ALLREDUCE);
	if (e || cma)
		return e;
	for (int i = 0; i < n; i++)
		if (i != r)
			ur_copy(out + ur__blk_off(count, n, i) * es,
				area(c, i, a) + ur__blk_off(count, n, i) * es,
				ur__blk_len(count, n, i) * es);
	return 0;
}

/* Peer i's call in this area must be ours too. */
static int seg_check_one(struct uroce_comm *c, int i, int a, uint32_t sig, enum ur_coll_kind k)
{
	if (hdr(c, i)->sig[a] != sig)
		return ur__fail(c, -EPROTO,
				 "mismatch in %s: rank %d's call differs (type, op, count or order)",
				 ur__coll_kind_name[k], i);
	return 0;
}

/* Our own block of an all-to-all: from 512 KiB the copy bypasses the
 * cache (p2p.c's from UR_STREAM_MIN): it runs beside the kernel's copy of
 * a peer's block into our output, and the output is not read again in the
 * call (2 ranks, 2 MiB on both cores at once: 102 us against 123; 1 MiB
 * all-to-all, 512 KiB blocks, per-call medians 55.5 -> 51.4 us, vader 53.6,
 * but 256 KiB blocks 20.0 -> 25.1). */
#define UR_SEG_STREAM_MIN (512u << 10)

static void seg_own(char *dst, const char *src, size_t b)
{
	if (dst == src)
		return;
	if (b >= UR_SEG_STREAM_MIN)
		ur_copy_stream(dst, src, b);
	else
		ur_copy(dst, src, b);
}

/*
 * Serve each peer as soon as it has published call k (progress 2k+1),
 * not once all have: serve(c, i, ...) moves the block between us and
 * peer i. The peers not served yet are tried in turn, starting after
 * us (not all at rank 0 at once); when none is ready, own (our own
 * block, called once; the caller makes sure it was) fills the wait, and
 * only then do we sleep, until one of them is ready. With more ranks than CPUs this is what keeps a
 * core busy: a rank moves what it can while the peers it waits for have
 * not run yet, instead of a barrier that needs all of them first.
 */
static int seg_each_ready(struct uroce_comm *c, uint64_t k, int a, uint32_t sig,
			  int (*serve)(struct uroce_comm *, int, void *), void *arg,
			  void (*own)(void *))
{
	int n = c->size, r = c->rank, m = 0, e;
	int *todo = c->seg->todo;

	for (int j = 1; j < n; j++)
		todo[m++] = (r + j) % n;
	while (m) {
		int left = 0;

		for (int t = 0; t < m; t++) {
			int i = todo[t];

			if (!seg_at(c, i, 2 * k + 1)) {
				todo[left++] = i;
				continue;
			}
			e = seg_check_one(c, i, a, sig, UR_C_ALLTOALL);
			if (!e)
				e = serve(c, i, arg);
			if (e)
				return e;
		}
		if (left && left == m) {
			if (own) {
				own(arg);
				own = NULL;
			} else if ((e = seg_wait_on(c, 2 * k + 1, UR_C_ALLTOALL, todo, m))) {
				return e;
			}
		}
		m = left;
	}
	return 0;
}

struct seg_a2a {
	const char *src;     /* the blocks for the peers */
	char *out;
	size_t b;            /* bytes per block */
	int a;               /* the call's area */
	int r;               /* our rank */
	int own;             /* our own block is in place */
};

static int a2a_put(struct uroce_comm *c, int i, void *arg)
{
	struct seg_a2a *x = arg;

	return seg_put(c, i, x->a, (size_t)c->rank * x->b, x->src + (size_t)i * x->b, x->b,
		       UR_C_ALLTOALL);
}

static int a2a_get(struct uroce_comm *c, int i, void *arg)
{
	struct seg_a2a *x = arg;

	ur_copy(x->out + (size_t)i * x->b, area(c, i, x->a) + (size_t)c->rank * x->b, x->b);
	return 0;
}

static void a2a_own(void *arg)
{
	struct seg_a2a *x = arg;

	if (!x->own)
		seg_own(x->out + (size_t)x->r * x->b, x->src + (size_t)x->r * x->b, x->b);
	x->own = 1;
}

int ur__seg_alltoall(struct uroce_comm *c, const void *sendbuf, void *recvbuf,
		      size_t count, enum uroce_dtype dt, uint32_t sig)
{
	int n = c->size, r = c->rank, a, e;
	size_t b = count * uroce_dtype_size(dt);
	const char *in = sendbuf;
	char *out = recvbuf, *mine;
	struct seg_a2a x;
	uint64_t k;

	e = seg_begin(c, &k);
	if (e)
		return e;
	a = (int)(k & 1);
	x = (struct seg_a2a){ in, out, b, a, r, 0 };
	/* Blocks of UR_SEG_CMA_MIN: each rank writes its blocks straight
	 * into the peers' outputs, which they publish first (one kernel copy
	 * instead of two). The choice is the same at every rank (size and
	 * the agreed CMA). A rank whose output overlaps its input copies
	 * its input into its area first and sends from there: the peers
	 * write into its output once it has published. */
	if (c->seg->cma && b >= UR_SEG_CMA_MIN) {
		char *aside = NULL;

		if (ur__overlaps(in, (size_t)n * b, out, (size_t)n * b)) {
			/* Only we read it: beyond the area, private memory. */
			mine = (size_t)n * b <= c->seg->cap ? area(c, r, a) :
				(aside = malloc((size_t)n * b));
			if (!mine)
				return ur__fail(c, -ENOMEM, "alltoall: out of memory for a copy of the input");
			ur_copy(mine, in, (size_t)n * b);
			x.src = mine;
		}
		hdr(c, r)->addr[a] = (uint64_t)(uintptr_t)out;
		hdr(c, r)->sig[a] = sig;
		seg_publish(c, 2 * k + 1);
		e = seg_each_ready(c, k, a, sig, a2a_put, &x, a2a_own);
		if (!e) {
			/* Done writing into the peers: they need not wait for
			 * our own block, which (if no peer was late) we copy
			 * while we wait for theirs. */
			seg_publish(c, 2 * k + 2);
			a2a_own(&x);
			e = seg_wait(c, 2 * k + 2, UR_C_ALLTOALL);
		}
		free(aside);
		return e;
	}
	mine = area(c, r, a);
	for (int i = 0; i < n; i++)
		if (i != r)
			ur_copy(mine + (size_t)i * b, in + (size_t)i * b, b);
	hdr(c, r)->sig[a] = sig;
	seg_publish(c, 2 * k + 1);
	/* Every other block of the input is in our area now: the output
	 * may overlap the input, and then our own block moves first (the
	 * peers' blocks could land on it). */
	if (ur__overlaps(in, (size_t)n * b, out, (size_t)n * b)) {
		ur_move(out + (size_t)r * b, in + (size_t)r * b, b);
		return seg_each_ready(c, k, a, sig, a2a_get, &x, NULL);
	}
	e = seg_each_ready(c, k, a, sig, a2a_get, &x, a2a_own);
	if (!e)
		a2a_own(&x);
	return e;
}

// SPDX-License-Identifier: MIT
/*
 * uroce-nfq - NFQUEUE fault injector and switch egress port for the test lab.
 *
 * Runs in the lab's switch namespace; tests/lab/netns.sh steers forwarded
 * RoCEv2 packets (UDP 4791) to it with -j NFQUEUE --queue-bypass. Each packet
 * goes through these stages, in order:
 *
 *   loss -> corrupt (+ UDP checksum fix) -> egress queue (rate, tail drop,
 *   RED/ECN marking) -> delay (+ jitter) -> reorder hold -> verdict -> dup
 *
 * Delay and reordering work because nf_queue verdicts may be issued in any
 * order: we keep the packet id and send NF_ACCEPT later. A duplicate is a
 * copy sent through a raw socket after the original is accepted (NFQUEUE
 * itself cannot emit two packets for one). The program is single-threaded:
 * one poll() loop over the queue socket and a timerfd armed for the next due
 * release, so verdicts never race.
 *
 * With --ce-mark the queue copies each packet only up to its headers
 * (HDR_COPY bytes) and marks CE by giving the packet a firewall mark that
 * an iptables ECN rule turns into CE after the verdict: no packet crosses
 * to user space and back whole (bench/cc_wire.sh, docs/cc.md "The
 * NFQUEUE bed at 1 Gbit/s").
 *
 * IPv4 only; other packets pass untouched (but still through the queue).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

#include <libnetfilter_queue/libnetfilter_queue.h>

#include "ur_wire.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif
#ifndef NETLINK_NO_ENOBUFS
#define NETLINK_NO_ENOBUFS 5
#endif

/* IPv4 (up to 60) + UDP + BTH: what --ce-mark copies of each packet. */
#define HDR_COPY 128

struct nfq_opts {
	unsigned queue;
	uint64_t seed;
	double loss, dup, corrupt, fix_csum, reorder; /* probabilities 0..1 */
	bool scramble_id;
	bool no_batch; /* one verdict per packet (the old way, to compare) */
	uint32_t ce_mark; /* mark CE through this fwmark (0: rewrite the packet) */
	uint64_t delay_ns, jitter_ns;
	unsigned reorder_gap;
	uint64_t reorder_timeout_ns;
	double rate_mbps;
	uint64_t limit, kmin, kmax;
	double pmax;
	const char *report;
	uint64_t report_interval_ns;
	unsigned maxlen;
	bool verbose;
};

struct pkt {
	uint32_t id;
	uint32_t len;
	uint8_t *data;     /* owned copy; NULL when untouched and not duplicated */
	bool modified;     /* verdict carries data */
	bool ce;           /* --ce-mark: the verdict carries the mark */
	bool dup;
	bool hold;         /* reorder: park at release time */
	unsigned wait;     /* reorder: releases still to let pass */
	uint64_t seq;      /* arrival order, breaks release-time ties */
	uint64_t t_depart; /* leaves the egress queue */
	uint64_t t_release;
	uint64_t deadline; /* reorder: release anyway at this time */
	struct pkt *next;  /* egress FIFO or held list */
};

struct nfq_stats {
	uint64_t packets, bytes, lost, tail_dropped, marked, duplicated;
	uint64_t corrupted, fixed, reordered, delayed, max_queue;
	uint64_t ids_set, stamped;
	uint64_t batches; /* batch verdicts sent */
};

struct nfq_lab {
	struct nfq_opts o;
	struct nfq_handle *h;
	struct nfq_q_handle *qh;
	int fd, tfd, rawfd, tsfd;
	FILE *report;
	uint64_t rng;
	uint64_t t0, seq;
	/*
	 * Accepted and not told the kernel yet: every packet up to
	 * batch_id (batch_n of them), in one batch verdict (NFQNL_MSG_
	 * VERDICT_BATCH accepts all queued ids <= batch_id). Only while
	 * packets leave in arrival order (no reorder hold, no duplicates):
	 * then no lower id is still ours. One system call per release
	 * turn instead of one per packet (at 1 Gbit/s, ~120k a second).
	 */
	bool batch_ok;
	uint32_t batch_id, batch_n;
	/* --ce-mark and no stage that needs the payload: the kernel copies
	 * HDR_COPY bytes of each packet, its length is its IP header's. */
	bool hdr_only;
	/* Egress queue accounting: FIFO by departure time. */
	struct pkt *fifo_head, *fifo_tail;
	uint64_t qbytes, link_free, last_release, last_row;
	/*
	 * The queue's clock: the latest arrival (the kernel's stamp when it
	 * gave one) or, once the netlink socket is empty, now. Never goes back.
	 */
	uint64_t qnow;
	/* Min-heap of packets waiting for their release time. */
	struct pkt **heap;
	size_t nheap, capheap;
	struct pkt *held;
	struct nfq_stats st;
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	stop_flag = sig;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* splitmix64: tiny, seedable, good enough for fault decisions. */
static uint64_t rng_next(struct nfq_lab *lab)
{
	uint64_t z = (lab->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rng_unit(struct nfq_lab *lab)
{
	return (double)(rng_next(lab) >> 11) * (1.0 / 9007199254740992.0);
}

static bool chance(struct nfq_lab *lab, double p)
{
	return p > 0 && rng_unit(lab) < p;
}

/* --- checksums ----------------------------------------------------------- */

static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void ip_fix_csum(uint8_t *ip, size_t ihl)
{
	put16(ip + 10, 0);
	put16(ip + 10, csum_fold(csum_add(0, ip, ihl)));
}

static void udp_fix_csum(uint8_t *ip, size_t ihl, size_t udp_len)
{
	uint8_t *udp = ip + ihl;
	uint8_t pseudo[4] = { 0, IPPROTO_UDP, udp_len >> 8, udp_len & 0xff };
	uint32_t sum;
	uint16_t c;

	put16(udp + 6, 0);
	sum = csum_add(0, ip + 12, 8); /* saddr, daddr */
	sum = csum_add(sum, pseudo, 4);
	sum = csum_add(sum, udp, udp_len);
	c = csum_fold(sum);
	put16(udp + 6, c ? c : 0xffff); /* RFC 768: 0 means "no checksum" */
}

/*
 * ipv4_udp - locate the UDP header of an unfragmented IPv4 packet.
 * Returns the IP header length and sets *udp_len, or 0 if not IPv4 UDP.
 */
static size_t ipv4_udp(const uint8_t *p, size_t len, size_t *udp_len)
{
	size_t ihl;

	if (len < 20 || p[0] >> 4 != 4)
		return 0;
	ihl = (size_t)(p[0] & 0xf) * 4;
	if (ihl < 20 || len < ihl + 8 || p[9] != IPPROTO_UDP)
		return 0;
	if (get16(p + 6) & 0x3fff) /* MF or fragment offset */
		return 0;
	*udp_len = get16(p + ihl + 4);
	if (*udp_len < 8 || ihl + *udp_len > len)
		return 0;
	return ihl;
}

/* --- release machinery --------------------------------------------------- */

static bool pkt_before(const struct pkt *a, const struct pkt *b)
{
	if (a->t_release != b->t_release)
		return a->t_release < b->t_release;
	return a->seq < b->seq;
}

static int heap_reserve(struct nfq_lab *lab)
{
	if (lab->nheap == lab->capheap) {
		size_t cap = lab->capheap ? lab->capheap * 2 : 1024;
		struct pkt **n = realloc(lab->heap, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		lab->heap = n;
		lab->capheap = cap;
	}
	return 0;
}

/* Caller has reserved room with heap_reserve(). */
static void heap_push(struct nfq_lab *lab, struct pkt *p)
{
	size_t i;

	i = lab->nheap++;
	while (i > 0 && pkt_before(p, lab->heap[(i - 1) / 2])) {
		lab->heap[i] = lab->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	lab->heap[i] = p;
}

static struct pkt *heap_pop(struct nfq_lab *lab)
{
	struct pkt *top = lab->heap[0], *last = lab->heap[--lab->nheap];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < lab->nheap) {
		if (c + 1 < lab->nheap && pkt_before(lab->heap[c + 1], lab->heap[c]))
			c++;
		if (!pkt_before(lab->heap[c], last))
			break;
		lab->heap[i] = lab->heap[c];
		i = c;
	}
	if (lab->nheap)
		lab->heap[i] = last;
	return top;
}

static void report_row(struct nfq_lab *lab, uint64_t now, bool force)
{
	if (!lab->report)
		return;
	if (!force && now - lab->last_row < lab->o.report_interval_ns)
		return;
	lab->last_row = now;
	fprintf(lab->report, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
		(now - lab->t0) / 1000, lab->qbytes, lab->st.marked,
		lab->st.tail_dropped);
}

static void egress_drain(struct nfq_lab *lab, uint64_t now)
{
	bool changed = false;

	while (lab->fifo_head && lab->fifo_head->t_depart <= now) {
		struct pkt *p = lab->fifo_head;

		lab->qbytes -= p->len;
		lab->fifo_head = p->next;
		p->next = NULL;
		changed = true;
	}
	if (!lab->fifo_head)
		lab->fifo_tail = NULL;
	if (changed)
		report_row(lab, now, false);
}

static void send_dup(struct nfq_lab *lab, const struct pkt *p)
{
	struct sockaddr_in dst = { .sin_family = AF_INET };

	if (p->len < 20 || p->data[0] >> 4 != 4)
		return;
	memcpy(&dst.sin_addr, p->data + 16, 4);
	if (sendto(lab->rawfd, p->data, p->len, 0, (struct sockaddr *)&dst,
		   sizeof(dst)) == (ssize_t)p->len)
		lab->st.duplicated++;
	else if (lab->o.verbose)
		fprintf(stderr, "uroce-nfq: dup send: %s\n", strerror(errno));
}

static void verdict(struct nfq_lab *lab, uint32_t id, uint32_t v,
		    uint32_t len, const uint8_t *data)
{
	if (nfq_set_verdict(lab->qh, id, v, len, data) < 0 && lab->o.verbose)
		fprintf(stderr, "uroce-nfq: verdict %u: %s\n", id, strerror(errno));
}

static void pkt_free(struct pkt *p)
{
	free(p->data);
	free(p);
}

static void release(struct nfq_lab *lab, struct pkt *p, bool count);

/* A non-held release lets each parked packet count one more passer-by. */
static void held_tick(struct nfq_lab *lab)
{
	struct pkt **pp = &lab->held;

	while (*pp) {
		struct pkt *h = *pp;

		if (--h->wait == 0) {
			*pp = h->next;
			release(lab, h, false);
		} else {
			pp = &h->next;
		}
	}
}

static void batch_flush(struct nfq_lab *lab)
{
	if (!lab->batch_n)
		return;
	if (nfq_set_verdict_batch(lab->qh, lab->batch_id, NF_ACCEPT) < 0 &&
	    lab->o.verbose)
		fprintf(stderr, "uroce-nfq: batch verdict %u: %s\n",
			lab->batch_id, strerror(errno));
	lab->st.batches++;
	lab->batch_n = 0;
}

static void release(struct nfq_lab *lab, struct pkt *p, bool count)
{
	if (lab->batch_ok && !p->modified && !p->ce) {
		lab->batch_id = p->id;
		lab->batch_n++;
		pkt_free(p);
		return;
	}
	batch_flush(lab); /* the lower ids first */
	if (p->ce && !p->modified) {
		if (nfq_set_verdict2(lab->qh, p->id, NF_ACCEPT, lab->o.ce_mark,
				     0, NULL) < 0 && lab->o.verbose)
			fprintf(stderr, "uroce-nfq: verdict %u: %s\n", p->id,
				strerror(errno));
	} else {
		verdict(lab, p->id, NF_ACCEPT, p->modified ? p->len : 0,
			p->modified ? p->data : NULL);
	}
	if (p->dup)
		send_dup(lab, p);
	pkt_free(p);
	if (count)
		held_tick(lab);
}

/*
 * Releases what is due at `now`. The egress FIFO must have been drained to
 * `now` first: a packet's t_release >= t_depart, and it shares `next`.
 */
static void release_due(struct nfq_lab *lab, uint64_t now)
{
	struct pkt **pp;

	while (lab->nheap && lab->heap[0]->t_release <= now) {
		struct pkt *p = heap_pop(lab);

		if (p->hold) {
			p->hold = false;
			p->wait = lab->o.reorder_gap;
			p->deadline = now + lab->o.reorder_timeout_ns;
			p->next = lab->held;
			lab->held = p;
			lab->st.reordered++;
			continue;
		}
		release(lab, p, true);
	}
	for (pp = &lab->held; *pp;) {
		struct pkt *h = *pp;

		if (h->deadline <= now) {
			*pp = h->next;
			release(lab, h, false);
		} else {
			pp = &h->next;
		}
	}
	batch_flush(lab);
}

/* The socket is empty: the queue's clock catches up with now. */
static void run_due(struct nfq_lab *lab, uint64_t now)
{
	if (now > lab->qnow)
		lab->qnow = now;
	egress_drain(lab, lab->qnow);
	release_due(lab, now);
}

/*
 * When the packet reached the switch. The kernel stamps it on ingress
 * (CLOCK_REALTIME; stamping is on while tsfd holds SO_TIMESTAMP) and it
 * waits in the NFQUEUE until we run: after a stall of a few ms on a busy
 * host, a batch taken as arriving "now" would fill the emulated queue by
 * the ms of drain the port had meanwhile (up to 70 kB at 100 Mbit/s per
 * 5.6 ms measured), and marks would follow the stall, not the senders.
 */
static uint64_t arrival_ns(struct nfq_lab *lab, struct nfq_data *nfa,
			   uint64_t now)
{
	struct timespec rt;
	struct timeval tv;
	int64_t lag;
	uint64_t t = now;

	if (nfq_get_timestamp(nfa, &tv) == 0 &&
	    !clock_gettime(CLOCK_REALTIME, &rt)) {
		lag = ((int64_t)rt.tv_sec - tv.tv_sec) * 1000000000ll +
		      rt.tv_nsec - (int64_t)tv.tv_usec * 1000;
		/* A stamp from the future or older than 1 s is not ours. */
		if (lag >= 0 && lag < 1000000000ll && (uint64_t)lag < now) {
			t = now - (uint64_t)lag;
			lab->st.stamped++;
		}
	}
	if (t < lab->qnow)
		t = lab->qnow;
	lab->qnow = t;
	return t;
}

static void arm_timer(struct nfq_lab *lab)
{
	struct itimerspec its = { 0 };
	uint64_t next = UINT64_MAX;
	struct pkt *h;

	if (lab->nheap)
		next = lab->heap[0]->t_release;
	for (h = lab->held; h; h = h->next)
		if (h->deadline < next)
			next = h->deadline;
	if (lab->report && lab->fifo_head && lab->fifo_head->t_depart < next)
		next = lab->fifo_head->t_depart;
	if (next != UINT64_MAX) {
		its.it_value.tv_sec = next / 1000000000ull;
		its.it_value.tv_nsec = next % 1000000000ull;
		if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
			its.it_value.tv_nsec = 1;
	}
	timerfd_settime(lab->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* --- per-packet stages ---------------------------------------------------- */

static int pkt_own(struct pkt *p, const uint8_t *payload)
{
	if (p->data)
		return 0;
	p->data = malloc(p->len);
	if (!p->data)
		return -ENOMEM;
	memcpy(p->data, payload, p->len);
	return 0;
}

/*
 * A random IPv4 ID, as Linux rxe and NICs send (uroce sends 0 or a GSO
 * segment index), and the ICRC recomputed for it, as such a sender would
 * have (A17.3.3: the ICRC covers the ID). The kernel hands GSO packets to
 * the queue cut into their datagrams: one RoCEv2 packet each.
 */
static int stage_scramble_id(struct nfq_lab *lab, struct pkt *p,
			     const uint8_t *payload)
{
	size_t ihl, udp_len;
	uint8_t *ib;
	int err;

	ihl = ipv4_udp(payload, p->len, &udp_len);
	if (!ihl || udp_len < 8 + UR_BTH_LEN + UR_ICRC_LEN)
		return 0;
	err = pkt_own(p, payload);
	if (err)
		return err;
	put16(p->data + 4, (uint16_t)rng_next(lab));
	ib = p->data + ihl + 8;
	ur_icrc_store(ib + udp_len - 8 - UR_ICRC_LEN,
		      ur_icrc_raw(p->data, ihl + 8, false, ib,
				  udp_len - 8 - UR_ICRC_LEN));
	if (get16(p->data + ihl + 6))
		udp_fix_csum(p->data, ihl, udp_len);
	ip_fix_csum(p->data, ihl);
	p->modified = true;
	lab->st.ids_set++;
	return 0;
}

static int stage_corrupt(struct nfq_lab *lab, struct pkt *p, const uint8_t *payload)
{
	size_t ihl, udp_len, off;
	int err;

	ihl = ipv4_udp(payload, p->len, &udp_len);
	if (!ihl || udp_len <= 8)
		return 0;
	err = pkt_own(p, payload);
	if (err)
		return err;
	off = ihl + 8 + rng_next(lab) % (udp_len - 8);
	p->data[off] ^= (uint8_t)(1 + rng_next(lab) % 255);
	p->modified = true;
	lab->st.corrupted++;
	/* A zero checksum (rxe) is not checked by the kernel: nothing to fix. */
	if (get16(p->data + ihl + 6) && chance(lab, lab->o.fix_csum)) {
		udp_fix_csum(p->data, ihl, udp_len);
		lab->st.fixed++;
	}
	return 0;
}

/* RED on the instantaneous queue, as DCQCN switches mark (kmin/kmax/pmax). */
static double red_prob(const struct nfq_opts *o, uint64_t q)
{
	if (!o->kmax || q < o->kmin)
		return 0;
	if (q >= o->kmax)
		return 1;
	return o->pmax * (double)(q - o->kmin) / (double)(o->kmax - o->kmin);
}

static int stage_ecn(struct nfq_lab *lab, struct pkt *p, const uint8_t *payload)
{
	const uint8_t *ip = p->data ? p->data : payload;
	size_t ihl;
	int err;

	if (p->len < 20 || ip[0] >> 4 != 4)
		return 0;
	if ((ip[1] & 3) == 0 || (ip[1] & 3) == 3) /* Not-ECT or already CE */
		return 0;
	if (!chance(lab, red_prob(&lab->o, lab->qbytes)))
		return 0;
	if (lab->o.ce_mark && !p->data) {
		p->ce = true; /* the ECN rule sets CE and the IP checksum */
		lab->st.marked++;
		return 0;
	}
	err = pkt_own(p, payload);
	if (err)
		return err;
	ihl = (size_t)(p->data[0] & 0xf) * 4;
	if (ihl < 20 || ihl > p->len)
		return 0;
	p->data[1] |= 3;
	ip_fix_csum(p->data, ihl);
	p->modified = true;
	lab->st.marked++;
	return 0;
}

static void egress_enqueue(struct nfq_lab *lab, struct pkt *p, uint64_t now)
{
	/* Serialization time at the port rate: bits / (Mbit/s) = us. */
	uint64_t tx = (uint64_t)((double)p->len * 8000.0 / lab->o.rate_mbps);
	uint64_t start = lab->link_free > now ? lab->link_free : now;

	p->t_depart = start + tx;
	lab->link_free = p->t_depart;
	lab->qbytes += p->len;
	if (lab->qbytes > lab->st.max_queue)
		lab->st.max_queue = lab->qbytes;
	if (lab->fifo_tail)
		lab->fifo_tail->next = p;
	else
		lab->fifo_head = p;
	lab->fifo_tail = p;
	report_row(lab, now, false);
}

static bool needs_pkt(const struct nfq_opts *o)
{
	return o->delay_ns || o->jitter_ns || o->reorder > 0 || o->rate_mbps > 0;
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *nfmsg,
		     struct nfq_data *nfa, void *arg)
{
	struct nfq_lab *lab = arg;
	struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
	unsigned char *payload = NULL;
	struct pkt *p;
	uint64_t now = now_ns(), arr, t;
	int len, err;

	if (!ph)
		return 0;
	len = nfq_get_payload(nfa, &payload);
	if (len < 0)
		len = 0;
	p = calloc(1, sizeof(*p));
	if (!p) {
		verdict(lab, ntohl(ph->packet_id), NF_ACCEPT, 0, NULL);
		return 0;
	}
	p->id = ntohl(ph->packet_id);
	p->len = (uint32_t)len;
	/* Headers only: the packet's length is its IPv4 total length. */
	if (lab->hdr_only && len >= 20 && payload[0] >> 4 == 4 &&
	    get16(payload + 2) > len)
		p->len = get16(payload + 2);
	p->seq = lab->seq++;
	lab->st.packets++;
	lab->st.bytes += p->len;
	arr = arrival_ns(lab, nfa, now);
	egress_drain(lab, arr);

	if (chance(lab, lab->o.loss)) {
		lab->st.lost++;
		goto drop;
	}
	if (lab->o.rate_mbps > 0 && lab->qbytes + p->len > lab->o.limit) {
		lab->st.tail_dropped++;
		report_row(lab, arr, false);
		goto drop;
	}
	if (lab->o.scramble_id && (err = stage_scramble_id(lab, p, payload)))
		goto accept;
	if (chance(lab, lab->o.corrupt) && (err = stage_corrupt(lab, p, payload)))
		goto accept;
	if (lab->o.rate_mbps > 0 && (err = stage_ecn(lab, p, payload)))
		goto accept;
	if (chance(lab, lab->o.dup)) {
		if (pkt_own(p, payload))
			goto accept;
		p->dup = true;
	}
	if (!needs_pkt(&lab->o)) {
		release(lab, p, true);
		batch_flush(lab);
		return 0;
	}

	if (heap_reserve(lab))
		goto accept;
	t = arr;
	if (lab->o.rate_mbps > 0) {
		egress_enqueue(lab, p, arr);
		t = p->t_depart;
	}
	if (lab->o.delay_ns || lab->o.jitter_ns) {
		int64_t j = 0;

		if (lab->o.jitter_ns)
			j = (int64_t)(rng_next(lab) % (2 * lab->o.jitter_ns + 1)) -
			    (int64_t)lab->o.jitter_ns;
		if (j < 0 && (uint64_t)-j > lab->o.delay_ns)
			j = -(int64_t)lab->o.delay_ns;
		t += lab->o.delay_ns + j;
		lab->st.delayed++;
	}
	/* Jitter never reorders (a link is FIFO); --reorder does. */
	if (t < lab->last_release)
		t = lab->last_release;
	lab->last_release = t;
	p->t_release = t;
	p->hold = chance(lab, lab->o.reorder);
	heap_push(lab, p);
	/* Not beyond the queue's clock: a packet leaves the FIFO first. */
	release_due(lab, lab->qnow);
	return 0;

accept:
	verdict(lab, p->id, NF_ACCEPT, 0, NULL);
	pkt_free(p);
	return 0;
drop:
	verdict(lab, p->id, NF_DROP, 0, NULL);
	pkt_free(p);
	return 0;
}

/* --- setup ---------------------------------------------------------------- */

static int lab_open(struct nfq_lab *lab)
{
	int one = 1;

	lab->h = nfq_open();
	if (!lab->h)
		return -errno ? -errno : -EIO;
	/* Harmless failures on current kernels; required on old ones. */
	nfq_unbind_pf(lab->h, AF_INET);
	nfq_bind_pf(lab->h, AF_INET);
	lab->qh = nfq_create_queue(lab->h, lab->o.queue, on_packet, lab);
	if (!lab->qh) {
		fprintf(stderr, "uroce-nfq: cannot bind queue %u (in use?)\n",
			lab->o.queue);
		goto err_close;
	}
	if (nfq_set_mode(lab->qh, NFQNL_COPY_PACKET,
			 lab->hdr_only ? HDR_COPY : 0xffff) < 0)
		goto err_queue;
	nfq_set_queue_maxlen(lab->qh, lab->o.maxlen);
	/* Fail open: if we fall behind, the kernel accepts instead of stalling. */
	if (nfq_set_queue_flags(lab->qh, NFQA_CFG_F_FAIL_OPEN,
				NFQA_CFG_F_FAIL_OPEN) < 0)
		fprintf(stderr, "uroce-nfq: warning: fail-open not supported\n");
	lab->fd = nfq_fd(lab->h);
	nfnl_rcvbufsiz(nfq_nfnlh(lab->h), 16 << 20);
	setsockopt(lab->fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof(one));

	lab->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (lab->tfd < 0)
		goto err_queue;
	/* Any socket asking for SO_TIMESTAMP turns on ingress stamping. */
	lab->tsfd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (lab->tsfd >= 0)
		setsockopt(lab->tsfd, SOL_SOCKET, SO_TIMESTAMP, &one, sizeof(one));
	lab->rawfd = -1;
	if (lab->o.dup > 0) {
		lab->rawfd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
		if (lab->rawfd < 0)
			goto err_timer;
	}
	return 0;

err_timer:
	if (lab->tsfd >= 0)
		close(lab->tsfd);
	close(lab->tfd);
err_queue:
	nfq_destroy_queue(lab->qh);
err_close:
	nfq_close(lab->h);
	return -EIO;
}

static void lab_close(struct nfq_lab *lab)
{
	if (lab->rawfd >= 0)
		close(lab->rawfd);
	if (lab->tsfd >= 0)
		close(lab->tsfd);
	close(lab->tfd);
	nfq_destroy_queue(lab->qh);
	nfq_close(lab->h);
	free(lab->heap);
}

/* Accept everything still held: a destroyed queue would drop it. */
static void flush_all(struct nfq_lab *lab)
{
	lab->fifo_head = lab->fifo_tail = NULL;
	lab->qbytes = 0;
	while (lab->nheap)
		release(lab, heap_pop(lab), false);
	while (lab->held) {
		struct pkt *h = lab->held;

		lab->held = h->next;
		release(lab, h, false);
	}
	batch_flush(lab);
}

static void print_summary(const struct nfq_lab *lab)
{
	const struct nfq_stats *s = &lab->st;

	printf("uroce-nfq: packets=%" PRIu64 " bytes=%" PRIu64
	       " dropped=%" PRIu64 " lost=%" PRIu64 " tail_dropped=%" PRIu64
	       " marked=%" PRIu64 " duplicated=%" PRIu64 " corrupted=%" PRIu64
	       " fixed=%" PRIu64 " reordered=%" PRIu64 " delayed=%" PRIu64
	       " max_queue_bytes=%" PRIu64 " seed=%" PRIu64 " ids_set=%" PRIu64
	       " stamped=%" PRIu64 " verdict_batches=%" PRIu64 "\n",
	       s->packets, s->bytes, s->lost + s->tail_dropped, s->lost,
	       s->tail_dropped, s->marked, s->duplicated, s->corrupted, s->fixed,
	       s->reordered, s->delayed, s->max_queue, lab->o.seed, s->ids_set,
	       s->stamped, s->batches);
	fflush(stdout);
}

static int run(struct nfq_lab *lab)
{
	static char buf[256 * 1024] __attribute__((aligned));
	struct pollfd pfd[2] = {
		{ .fd = lab->fd, .events = POLLIN },
		{ .fd = lab->tfd, .events = POLLIN },
	};
	uint64_t ticks;
	ssize_t n;

	while (!stop_flag) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[1].revents & POLLIN)
			(void)!read(lab->tfd, &ticks, sizeof(ticks));
		if (pfd[0].revents & POLLIN) {
			/* Drain the socket; each recv can hold several packets. */
			while ((n = recv(lab->fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
				nfq_handle_packet(lab->h, buf, (int)n);
			if (n < 0 && errno != EAGAIN && errno != EINTR &&
			    errno != ENOBUFS)
				return -errno;
		}
		run_due(lab, now_ns());
		arm_timer(lab);
	}
	return 0;
}

/* --- options -------------------------------------------------------------- */

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
"Usage: %s [OPTIONS]\n"
"NFQUEUE fault injector / switch egress port for the uroce test lab.\n"
"Run it in the switch namespace and steer packets to it with\n"
"  iptables -A FORWARD -p udp --dport 4791 -j NFQUEUE --queue-num N --queue-bypass\n"
"(tests/lab/netns.sh nfq does both). Stages, in order: loss, IP ID,\n"
"corrupt, egress queue (rate/limit/ECN), delay, reorder, verdict, dup.\n"
"\n"
"  -q, --queue N             NFQUEUE number (default 0)\n"
"  -s, --seed N              random seed (default 1)\n"
"      --loss PCT            drop PCT %% of packets\n"
"      --dup PCT             duplicate PCT %% (copy re-sent via raw socket)\n"
"      --corrupt PCT         flip one UDP payload byte in PCT %% of packets\n"
"      --fix-csum PCT        recompute the UDP checksum of PCT %% of the\n"
"                            corrupted packets (default 0: the receiver's\n"
"                            kernel drops them; checksum 0 is never checked)\n"
"      --scramble-id         give every packet a random IPv4 ID, as Linux\n"
"                            rxe and NICs send (the ICRC covers it)\n"
"  -d, --delay-us US         hold every packet US microseconds\n"
"  -j, --jitter-us US        add uniform +-US jitter (order is preserved)\n"
"      --reorder PCT         hold PCT %% of packets until --reorder-gap later\n"
"                            packets have been released\n"
"      --reorder-gap N       packets to let pass (default 1)\n"
"      --reorder-timeout-us US  release a held packet anyway (default 10000)\n"
"  -r, --rate MBPS           egress port rate in Mbit/s (enables the queue)\n"
"      --ce-mark MARK        mark CE by setting fwmark MARK for an\n"
"                            iptables rule after the verdict, e.g.\n"
"                              iptables -t mangle -A POSTROUTING -m mark\n"
"                              --mark MARK -j ECN --ecn-ip-ect 3\n"
"                            (with no --corrupt, --dup or --scramble-id the\n"
"                            kernel then copies only the headers)\n"
"      --no-batch            a verdict per packet (default: packets that\n"
"                            leave unchanged and in order share one batch\n"
"                            verdict per release turn)\n"
"  -l, --limit BYTES         queue limit, tail drop above (default 262144)\n"
"      --kmin BYTES          RED: start ECN marking at this queue depth\n"
"      --kmax BYTES          RED: mark every ECT packet at this depth\n"
"      --pmax P              RED: marking probability at kmax, 0..1 (default 1)\n"
"      --report FILE         CSV time_us,queue_bytes,marks,drops over time\n"
"      --report-interval-us US  minimum spacing of CSV rows (default 1000)\n"
"      --maxlen N            kernel queue length in packets (default 16384)\n"
"  -v, --verbose             log send/verdict errors\n"
"  -h, --help                this text\n"
"\n"
"On SIGINT/SIGTERM all held packets are accepted and a summary line\n"
"(packets, bytes, dropped, marked, duplicated, corrupted, fixed,\n"
"reordered, ...) is printed to stdout. \"uroce-nfq: ready\" on stderr\n"
"means the queue is bound. IPv4 only; other packets pass unmodified.\n",
		argv0);
}

enum {
	OPT_LOSS = 256, OPT_DUP, OPT_CORRUPT, OPT_FIX, OPT_REORDER, OPT_GAP,
	OPT_RTMO, OPT_KMIN, OPT_KMAX, OPT_PMAX, OPT_REPORT, OPT_RINT, OPT_MAXLEN,
	OPT_SCRAMBLE_ID,
	OPT_NO_BATCH, OPT_CE_MARK,
};

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_pct(const char *s, double *out)
{
	double v;
	int err = parse_double(s, 0, 100, &v);

	if (!err)
		*out = v / 100.0;
	return err;
}

static const char *opt_name(const struct option *lopts, int c)
{
	for (; lopts->name; lopts++)
		if (lopts->val == c)
			return lopts->name;
	return "?";
}

static int parse_args(int argc, char **argv, struct nfq_opts *o)
{
	static const struct option lopts[] = {
		{ "queue", required_argument, NULL, 'q' },
		{ "seed", required_argument, NULL, 's' },
		{ "loss", required_argument, NULL, OPT_LOSS },
		{ "dup", required_argument, NULL, OPT_DUP },
		{ "corrupt", required_argument, NULL, OPT_CORRUPT },
		{ "fix-csum", required_argument, NULL, OPT_FIX },
		{ "scramble-id", no_argument, NULL, OPT_SCRAMBLE_ID },
		{ "no-batch", no_argument, NULL, OPT_NO_BATCH },
		{ "ce-mark", required_argument, NULL, OPT_CE_MARK },
		{ "delay-us", required_argument, NULL, 'd' },
		{ "jitter-us", required_argument, NULL, 'j' },
		{ "reorder", required_argument, NULL, OPT_REORDER },
		{ "reorder-gap", required_argument, NULL, OPT_GAP },
		{ "reorder-timeout-us", required_argument, NULL, OPT_RTMO },
		{ "rate", required_argument, NULL, 'r' },
		{ "limit", required_argument, NULL, 'l' },
		{ "kmin", required_argument, NULL, OPT_KMIN },
		{ "kmax", required_argument, NULL, OPT_KMAX },
		{ "pmax", required_argument, NULL, OPT_PMAX },
		{ "report", required_argument, NULL, OPT_REPORT },
		{ "report-interval-us", required_argument, NULL, OPT_RINT },
		{ "maxlen", required_argument, NULL, OPT_MAXLEN },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t v;
	int c, err = 0;

	*o = (struct nfq_opts){
		.seed = 1, .reorder_gap = 1, .reorder_timeout_ns = 10000000,
		.limit = 262144, .pmax = 1.0, .report_interval_ns = 1000000,
		.maxlen = 16384,
	};
	while ((c = getopt_long(argc, argv, "q:s:d:j:r:l:vh", lopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			err = parse_u64(optarg, UINT16_MAX, &v);
			o->queue = (unsigned)v;
			break;
		case 's':
			err = parse_u64(optarg, UINT64_MAX, &o->seed);
			break;
		case OPT_LOSS: err = parse_pct(optarg, &o->loss); break;
		case OPT_DUP: err = parse_pct(optarg, &o->dup); break;
		case OPT_CORRUPT: err = parse_pct(optarg, &o->corrupt); break;
		case OPT_FIX: err = parse_pct(optarg, &o->fix_csum); break;
		case OPT_SCRAMBLE_ID: o->scramble_id = true; break;
		case OPT_NO_BATCH: o->no_batch = true; break;
		case OPT_CE_MARK:
			err = parse_u64(optarg, UINT32_MAX, &v);
			o->ce_mark = (uint32_t)v;
			break;
		case OPT_REORDER: err = parse_pct(optarg, &o->reorder); break;
		case 'd':
			err = parse_u64(optarg, 60000000, &v);
			o->delay_ns = v * 1000;
			break;
		case 'j':
			err = parse_u64(optarg, 60000000, &v);
			o->jitter_ns = v * 1000;
			break;
		case OPT_GAP:
			err = parse_u64(optarg, 1000000, &v);
			if (!err && !v)
				err = -EINVAL;
			o->reorder_gap = (unsigned)v;
			break;
		case OPT_RTMO:
			err = parse_u64(optarg, 60000000, &v);
			o->reorder_timeout_ns = v * 1000;
			break;
		case 'r': err = parse_double(optarg, 0.001, 1e6, &o->rate_mbps); break;
		case 'l': err = parse_u64(optarg, UINT32_MAX, &o->limit); break;
		case OPT_KMIN: err = parse_u64(optarg, UINT32_MAX, &o->kmin); break;
		case OPT_KMAX: err = parse_u64(optarg, UINT32_MAX, &o->kmax); break;
		case OPT_PMAX: err = parse_double(optarg, 0, 1, &o->pmax); break;
		case OPT_REPORT: o->report = optarg; break;
		case OPT_RINT:
			err = parse_u64(optarg, 60000000, &v);
			o->report_interval_ns = v * 1000;
			break;
		case OPT_MAXLEN:
			err = parse_u64(optarg, 1u << 24, &v);
			if (!err && !v)
				err = -EINVAL;
			o->maxlen = (unsigned)v;
			break;
		case 'v': o->verbose = true; break;
		case 'h':
			usage(stdout, argv[0]);
			exit(0);
		default:
			usage(stderr, argv[0]);
			return -EINVAL;
		}
		if (err) {
			fprintf(stderr, "%s: bad value '%s' for --%s\n", argv[0],
				optarg, opt_name(lopts, c));
			usage(stderr, argv[0]);
			return err;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
		usage(stderr, argv[0]);
		return -EINVAL;
	}
	if ((o->kmin || o->kmax) && (!o->rate_mbps || o->kmax <= o->kmin)) {
		fprintf(stderr, "%s: --kmin/--kmax need --rate and kmin < kmax\n",
			argv[0]);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct nfq_lab lab = { .fd = -1, .tfd = -1, .rawfd = -1 };
	struct sigaction sa = { .sa_handler = on_signal };
	int err;

	if (parse_args(argc, argv, &lab.o))
		return 2;
	lab.rng = lab.o.seed;
	if (lab.o.report) {
		lab.report = fopen(lab.o.report, "w");
		if (!lab.report) {
			fprintf(stderr, "uroce-nfq: %s: %s\n", lab.o.report,
				strerror(errno));
			return 1;
		}
		fprintf(lab.report, "time_us,queue_bytes,marks,drops\n");
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	lab.batch_ok = !lab.o.no_batch && lab.o.reorder <= 0 && lab.o.dup <= 0;
	lab.hdr_only = lab.o.ce_mark && lab.o.corrupt <= 0 && lab.o.dup <= 0 &&
		       !lab.o.scramble_id;
	err = lab_open(&lab);
	if (err) {
		fprintf(stderr, "uroce-nfq: setup failed: %s (root? NFQUEUE?)\n",
			strerror(-err));
		return 1;
	}
	lab.t0 = now_ns();
	fprintf(stderr, "uroce-nfq: ready queue %u seed %" PRIu64 "\n",
		lab.o.queue, lab.o.seed);

	err = run(&lab);
	if (err)
		fprintf(stderr, "uroce-nfq: %s\n", strerror(-err));
	flush_all(&lab);
	if (lab.report) {
		egress_drain(&lab, now_ns());
		report_row(&lab, now_ns(), true);
		fclose(lab.report);
	}
	print_summary(&lab);
	lab_close(&lab);
	return err ? 1 : 0;
}

// SPDX-License-Identifier: MIT
/*
 * Latency marks (ur_latprof.h), built only with -DUROCE_LATPROF=ON. A
 * thread keeps its sequence's marks and stages to itself and adds them to
 * the shared table, under a lock, once the sequence is whole (at the
 * sendmsg's return): a receive that made no completion is not counted.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "ur_latprof.h"

#define LP_MAX 400000 /* samples per series */

enum { IV_RX_CQE, IV_CQE_POST, IV_POST_SEND, IV_SEND, IV_WAIT, IV_NUM };

static const char *const iv_name[IV_NUM] = {
	"receive -> completion found", "completion -> next post",
	"post -> sendmsg", "sendmsg", "sendmsg returned -> next receive",
};
static const char *const stage_name[UR_LPS_NUM] = {
	"ICRC checked", "QP found and locked", "transport ran it",
	"packet done", "whole receive delivered", "packets made",
	"batch leaves",
};

struct series {
	uint32_t v[LP_MAX];
	uint32_t n;
};

static struct series iv[IV_NUM], stage[UR_LPS_NUM], empty_poll;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double tsc_per_us;

static __thread uint64_t at[UR_LP_SENT + 1], last_sent, last_empty;
static __thread uint64_t st[UR_LPS_NUM]; /* stages of this sequence */
static __thread int next;      /* the mark expected next */
static __thread unsigned seen; /* stages recorded in this sequence */

static void add(struct series *s, uint64_t d)
{
	if (s->n < LP_MAX)
		s->v[s->n++] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
}

void ur__lp_mark(enum ur_lp m)
{
	uint64_t t = __rdtsc();

	if (m == UR_LP_RX) {
		/* A receive that made no completion yet gives way to the
		 * next one; once a completion was found, the sequence runs
		 * on to its sendmsg. */
		if (next == UR_LP_RX || next == UR_LP_CQE) {
			at[UR_LP_RX] = t;
			seen = 0;
			next = UR_LP_CQE;
		}
		return;
	}
	if ((int)m != next)
		return;
	at[m] = t;
	next = m + 1;
	if (m != UR_LP_SENT)
		return;
	pthread_mutex_lock(&lock);
	add(&iv[IV_RX_CQE], at[UR_LP_CQE] - at[UR_LP_RX]);
	add(&iv[IV_CQE_POST], at[UR_LP_POST] - at[UR_LP_CQE]);
	add(&iv[IV_POST_SEND], at[UR_LP_SEND] - at[UR_LP_POST]);
	add(&iv[IV_SEND], at[UR_LP_SENT] - at[UR_LP_SEND]);
	if (last_sent)
		add(&iv[IV_WAIT], at[UR_LP_RX] - last_sent);
	for (int i = 0; i < UR_LPS_NUM; i++)
		if (seen & (1u << i))
			add(&stage[i], st[i]);
	pthread_mutex_unlock(&lock);
	last_sent = t;
	next = UR_LP_RX;
}

void ur__lp_stage(enum ur_lp_stage s)
{
	uint64_t from;

	if (next == UR_LP_CQE && s <= UR_LPS_DRAINED)
		from = at[UR_LP_RX];
	else if (next == UR_LP_SEND && s > UR_LPS_DRAINED)
		from = at[UR_LP_POST];
	else
		return;
	if (seen & (1u << s))
		return; /* the first packet's, the first batch's */
	seen |= 1u << s;
	st[s] = __rdtsc() - from;
}

void ur__lp_poll(int empty)
{
	uint64_t t = __rdtsc();

	if (empty && last_empty) {
		pthread_mutex_lock(&lock);
		add(&empty_poll, t - last_empty);
		pthread_mutex_unlock(&lock);
	}
	last_empty = empty ? t : 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void print(const char *what, struct series *s)
{
	if (!s->n)
		return;
	qsort(s->v, s->n, sizeof(s->v[0]), cmp_u32);
	fprintf(stderr, "  %-34s %8u  %7.3f  %7.3f\n", what, s->n,
		s->v[s->n / 2] / tsc_per_us, s->v[s->n * 9 / 10] / tsc_per_us);
}

static void report(void)
{
	if (!iv[IV_SEND].n && !empty_poll.n)
		return;
	fprintf(stderr, "uroce latprof, pid %d (us)\n  %-34s %8s  %7s  %7s\n",
		(int)getpid(), "", "samples", "p50", "p90");
	for (int i = 0; i < IV_NUM; i++)
		print(iv_name[i], &iv[i]);
	fprintf(stderr, " from the receive:\n");
	for (int i = 0; i <= UR_LPS_DRAINED; i++)
		print(stage_name[i], &stage[i]);
	fprintf(stderr, " from the post:\n");
	for (int i = UR_LPS_DRAINED + 1; i < UR_LPS_NUM; i++)
		print(stage_name[i], &stage[i]);
	print("empty poll (one spin)", &empty_poll);
}

/* The TSC's rate against CLOCK_MONOTONIC over 20 ms at load. */
__attribute__((constructor)) static void latprof_init(void)
{
	struct timespec a, b;
	uint64_t t0;
	double ns;

	clock_gettime(CLOCK_MONOTONIC, &a);
	t0 = __rdtsc();
	do {
		clock_gettime(CLOCK_MONOTONIC, &b);
		ns = (double)(b.tv_sec - a.tv_sec) * 1e9 +
		     (double)(b.tv_nsec - a.tv_nsec);
	} while (ns < 20e6);
	tsc_per_us = (double)(__rdtsc() - t0) / (ns / 1e3);
	atexit(report);
}

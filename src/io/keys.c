/* SPDX-License-Identifier: MIT */
/*
 * A device context's memory keys: the table that maps an lkey/rkey to its
 * region or window, shared by the engines of a multi-port device (port
 * 1's engine holds it, e->keys), with the quarantine that keeps a stale
 * key from reaching new memory.
 *
 * Keys are IB style: a 24-bit index (key >> 8, never 0) that the table is
 * indexed by, and a key byte. A region's lkey and rkey are one key. A
 * memory window is found by its index alone: the transport changes its
 * key byte at each bind and checks the whole key under the window's lock.
 */
#include <errno.h>
#include <sys/random.h>

#include "ur_io_priv.h"

/* 32 random bits (keys, QP numbers); the clock if getrandom fails. */
uint32_t ur__rand32(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint32_t)ur_now() * 2654435761u;
	return v;
}

/* A key's region or window (mr_lock held); a region's whole key must
 * match, a window's key byte is checked by the transport. */
const struct ur_mr *ur__key_get(struct ur_engine *e, uint32_t key)
{
	const struct ur_mr *k = ur__map_get(&e->keys->mrs, key >> 8);

	if (k && k->type == UR_KEY_MR && k->lkey != key)
		return NULL;
	return k;
}

/* Keys stopped covering memory they covered: every QP that uses the
 * table looks its regions up again, on every port (mr_lock held). */
static void key_gen_bump(struct ur_engine *e)
{
	atomic_fetch_add(&e->dev.key_gen, 1);
	for (unsigned int i = 0; i < sizeof(e->key_users) / sizeof(e->key_users[0]); i++)
		if (e->key_users[i])
			atomic_fetch_add(&e->key_users[i]->dev.key_gen, 1);
}

/* A further port's engine starts / stops using @k's key table. */
int ur__key_user_set(struct ur_engine *k, struct ur_engine *e, bool on)
{
	int ret = on ? -EMFILE : 0;

	pthread_rwlock_wrlock(&k->mr_lock);
	for (unsigned int i = 0; i < sizeof(k->key_users) / sizeof(k->key_users[0]); i++) {
		if (on && !k->key_users[i]) {
			k->key_users[i] = e;
			ret = 0;
			break;
		}
		if (!on && k->key_users[i] == e)
			k->key_users[i] = NULL;
	}
	pthread_rwlock_unlock(&k->mr_lock);
	return ret;
}

/* Whether key index @idx died lately (mr_lock held). */
static bool key_dead(const struct ur_engine *e, uint32_t idx)
{
	for (uint32_t i = 0; i < UR_IO_KEY_QUARANTINE; i++)
		if (e->key_dead[i] == idx)
			return true;
	return false;
}

int ur_engine_mr_add(struct ur_engine *e, struct ur_mr *mr)
{
	uint32_t key;
	int ret;

	e = e->keys;

	pthread_rwlock_wrlock(&e->mr_lock);
	do {
		/* 32 random bits, but not an index that died lately: a
		 * stale rkey (a peer's, or a forged guess of a freed one)
		 * must not reach new memory (10.6.3). */
		key = ur__rand32();
		ret = key >> 8 && !key_dead(e, key >> 8)
			      ? ur__map_put(&e->mrs, key >> 8, mr)
			      : -EEXIST;
	} while (ret == -EEXIST);
	if (!ret) {
		mr->rkey = key;
		mr->lkey = mr->type == UR_KEY_MR ? key : 0;
	}
	pthread_rwlock_unlock(&e->mr_lock);
	return ret;
}

int ur_engine_mr_del(struct ur_engine *e, struct ur_mr *mr)
{
	int ret = 0;

	e = e->keys;

	/* The write lock waits for any access through the key to finish;
	 * binds happen under the read lock, so nbound is stable here. */
	pthread_rwlock_wrlock(&e->mr_lock);
	if (atomic_load(&mr->nbound))
		ret = -EBUSY; /* windows are bound to the region */
	else
		ur__map_del(&e->mrs, mr->rkey >> 8);
	if (!ret)
		e->key_dead[e->key_dead_next++ % UR_IO_KEY_QUARANTINE] =
			mr->rkey >> 8;
	/* QPs that resolved the region earlier look it up again. */
	if (!ret)
		key_gen_bump(e);
	pthread_rwlock_unlock(&e->mr_lock);
	return ret;
}

int ur_engine_mr_update(struct ur_engine *e, struct ur_mr *mr,
			const struct ur_mr *upd)
{
	int ret = 0;

	e = e->keys;

	/* Under the write lock no request is using the region. */
	pthread_rwlock_wrlock(&e->mr_lock);
	if (atomic_load(&mr->nbound)) {
		ret = -EBUSY;
	} else {
		mr->iova = upd->iova;
		mr->host = upd->host;
		mr->length = upd->length;
		mr->access = upd->access;
		mr->pdn = upd->pdn;
		key_gen_bump(e);
	}
	pthread_rwlock_unlock(&e->mr_lock);
	return ret;
}

const struct ur_mr *ur_engine_mr_find(struct ur_engine *e, uint32_t key)
{
	const struct ur_mr *mr;

	e = e->keys;

	pthread_rwlock_rdlock(&e->mr_lock);
	mr = ur__key_get(e, key);
	pthread_rwlock_unlock(&e->mr_lock);
	return mr;
}

// SPDX-License-Identifier: MIT
/*
 * Handle tables: a stream or event handle is (type, generation, index),
 * never a pointer, so a destroyed or foreign handle is recognised instead
 * of dereferenced. References taken by get() keep an object alive across a
 * concurrent destroy. A slot's generation only grows, for the life of the
 * process: vnpu_finalize() invalidates every handle but keeps the
 * generations, so no handle of an earlier session names an object of a
 * later one.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define IDX_BITS 24
#define GEN_BITS 24

static uintptr_t encode(enum rt_handle_type type, uint32_t gen, uint32_t idx)
{
	return (uintptr_t)((uint64_t)type << 56 |
			   (uint64_t)(gen & ((1u << GEN_BITS) - 1))
				   << IDX_BITS |
			   (idx + 1));
}

static struct rt_hslot *lookup(struct rt_handles *t, const void *h)
{
	uint64_t v = (uintptr_t)h;
	uint32_t idx = (uint32_t)(v & ((1u << IDX_BITS) - 1));
	uint32_t gen = (uint32_t)(v >> IDX_BITS) & ((1u << GEN_BITS) - 1);
	struct rt_hslot *s;

	if ((v >> 56) != t->type || (v >> 48 & 0xff) || idx == 0 ||
	    idx > t->n)
		return NULL;
	s = &t->slots[idx - 1];
	if (!s->live || (s->gen & ((1u << GEN_BITS) - 1)) != gen)
		return NULL;
	return s;
}

void rt_handles_init(struct rt_handles *t, enum rt_handle_type type)
{
	if (t->type)
		return; /* a later session: the generations stay */
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->released, NULL);
	t->type = type;
	t->free_head = UINT32_MAX;
}

/* A slot whose generation would wrap is retired instead of freed, so that
 * no old handle can ever name a new object (lock held). */
static void slot_release(struct rt_handles *t, uint32_t idx)
{
	struct rt_hslot *s = &t->slots[idx];

	s->live = false;
	s->obj = NULL;
	if (((s->gen + 1) & ((1u << GEN_BITS) - 1)) != 0) {
		s->next_free = t->free_head;
		t->free_head = idx;
	}
}

void rt_handles_invalidate(struct rt_handles *t)
{
	pthread_mutex_lock(&t->lock);
	t->free_head = UINT32_MAX;
	for (uint32_t i = t->n; i-- > 0;) {
		t->slots[i].refs = 0;
		slot_release(t, i);
	}
	pthread_mutex_unlock(&t->lock);
}

void *rt_handle_add(struct rt_handles *t, void *obj)
{
	struct rt_hslot *s;
	uint32_t idx;
	void *h = NULL;

	pthread_mutex_lock(&t->lock);
	if (t->free_head != UINT32_MAX) {
		idx = t->free_head;
		t->free_head = t->slots[idx].next_free;
	} else {
		if (t->n == t->cap) {
			uint32_t cap = t->cap ? t->cap * 2 : 64;
			struct rt_hslot *n;

			if (cap >= (1u << IDX_BITS))
				goto out;
			n = realloc(t->slots, cap * sizeof(*n));
			if (!n)
				goto out;
			t->slots = n;
			t->cap = cap;
		}
		idx = t->n++;
		t->slots[idx].gen = 0;
	}
	s = &t->slots[idx];
	s->obj = obj;
	s->refs = 0;
	s->live = true;
	s->gen++;
	h = (void *)encode(t->type, s->gen, idx);
out:
	pthread_mutex_unlock(&t->lock);
	return h;
}

void *rt_handle_get(struct rt_handles *t, const void *h)
{
	struct rt_hslot *s;
	void *obj = NULL;

	pthread_mutex_lock(&t->lock);
	s = lookup(t, h);
	if (s) {
		s->refs++;
		obj = s->obj;
	}
	pthread_mutex_unlock(&t->lock);
	return obj;
}

void rt_handle_put(struct rt_handles *t, const void *h)
{
	uint32_t idx = (uint32_t)((uintptr_t)h & ((1u << IDX_BITS) - 1)) - 1;

	pthread_mutex_lock(&t->lock);
	if (idx < t->n && t->slots[idx].refs && --t->slots[idx].refs == 0)
		pthread_cond_broadcast(&t->released);
	pthread_mutex_unlock(&t->lock);
}

void *rt_handle_remove(struct rt_handles *t, const void *h)
{
	struct rt_hslot *s;
	void *obj;
	uint32_t idx;

	pthread_mutex_lock(&t->lock);
	s = lookup(t, h);
	if (!s) {
		pthread_mutex_unlock(&t->lock);
		return NULL;
	}
	idx = (uint32_t)(s - t->slots);
	s->live = false;
	while (t->slots[idx].refs)
		pthread_cond_wait(&t->released, &t->lock);
	obj = t->slots[idx].obj;
	slot_release(t, idx);
	pthread_mutex_unlock(&t->lock);
	return obj;
}

void rt_handles_drain(struct rt_handles *t, void (*fn)(void *obj))
{
	for (uint32_t i = 0; i < t->n; i++) {
		void *obj;

		pthread_mutex_lock(&t->lock);
		obj = t->slots[i].live ? t->slots[i].obj : NULL;
		t->slots[i].live = false;
		t->slots[i].obj = NULL;
		pthread_mutex_unlock(&t->lock);
		if (obj)
			fn(obj);
	}
}

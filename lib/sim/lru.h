/* lru: a cache of blocks in least-recently-used order, as each of kvgen's
 * simulated engines (accelerator memory) and pools (host memory, disk)
 * keeps one.  Owns the blocks it holds (chain, engine hash, parent, local
 * hash), their order of use and the map from chain to block.  It never
 * evicts by itself: the simulation stores a request's blocks, then pops the
 * least recently used while it holds more than its capacity, and publishes
 * each one it popped as a removal. */
#ifndef KV_LRU_H
#define KV_LRU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/table.h"

/* What the cache holds of a block: what the index and the events need. */
struct kv_lru_block {
	uint64_t chain, ehash, parent, local;
};

#define KV_LRU_NONE UINT32_MAX

struct kv_lru_node {
	struct kv_lru_block b;
	uint32_t prev, next;        /* towards the most, the least recently used; KV_LRU_NONE ends */
};

struct kv_lru_ent {
	uint64_t key;               /* the chain */
	uint32_t idx;
};
KV_TABLE_DEFINE(kv_lru_map, struct kv_lru_ent)

struct kv_lru {
	struct kv_lru_map map;
	struct kv_lru_node *nodes;  /* used ones are linked from head to tail, free ones from free_head */
	size_t capnodes, used;
	uint32_t free_head, head, tail, count, capacity;
};

void kv_lru_init(struct kv_lru *l, uint32_t capacity);
void kv_lru_free(struct kv_lru *l);
/* Makes the block of chain the most recently used; false when not held
 * (below: inline). */
static inline bool kv_lru_touch(struct kv_lru *l, uint64_t chain);
/* Adds a block as the most recently used; its chain must not be held. */
void kv_lru_insert(struct kv_lru *l, const struct kv_lru_block *b);
/* Takes the least recently used block out into *out; false when empty. */
bool kv_lru_pop(struct kv_lru *l, struct kv_lru_block *out);

/* Holds more than its capacity: the caller pops until it does not. */
static inline bool kv_lru_over(const struct kv_lru *l)
{
	return l->count > l->capacity;
}

/* The list operations are inline because kvgen looks up every block of
 * every request in up to three caches: a call each costs it measurably. */
static inline void kv_lru_unlink(struct kv_lru *l, uint32_t i)
{
	struct kv_lru_node *n = &l->nodes[i];
	if (n->prev != KV_LRU_NONE)
		l->nodes[n->prev].next = n->next;
	else
		l->head = n->next;
	if (n->next != KV_LRU_NONE)
		l->nodes[n->next].prev = n->prev;
	else
		l->tail = n->prev;
}

static inline void kv_lru_push_front(struct kv_lru *l, uint32_t i)
{
	struct kv_lru_node *n = &l->nodes[i];
	n->prev = KV_LRU_NONE;
	n->next = l->head;
	if (l->head != KV_LRU_NONE)
		l->nodes[l->head].prev = i;
	l->head = i;
	if (l->tail == KV_LRU_NONE)
		l->tail = i;
}

static inline bool kv_lru_touch(struct kv_lru *l, uint64_t chain)
{
	struct kv_lru_ent *e = kv_lru_map_find(&l->map, chain);
	if (!e)
		return false;
	if (l->head != e->idx) {
		kv_lru_unlink(l, e->idx);
		kv_lru_push_front(l, e->idx);
	}
	return true;
}

#endif

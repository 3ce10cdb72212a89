#include "sim/lru.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

void kv_lru_init(struct kv_lru *l, uint32_t capacity)
{
	memset(l, 0, sizeof *l);
	l->free_head = l->head = l->tail = KV_LRU_NONE;
	l->capacity = capacity;
}

void kv_lru_free(struct kv_lru *l)
{
	kv_lru_map_free(&l->map);
	free(l->nodes);
}

void kv_lru_insert(struct kv_lru *l, const struct kv_lru_block *b)
{
	uint32_t i;
	if (l->free_head != KV_LRU_NONE) {
		i = l->free_head;
		l->free_head = l->nodes[i].next;
	} else {
		l->nodes = kv_xgrow(l->nodes, &l->capnodes, l->used + 1, sizeof *l->nodes);
		i = (uint32_t)l->used++;
	}
	l->nodes[i] = (struct kv_lru_node){ *b, KV_LRU_NONE, KV_LRU_NONE };
	kv_lru_push_front(l, i);
	bool added;
	kv_lru_map_upsert(&l->map, b->chain, &added)->idx = i;
	l->count++;
}

bool kv_lru_pop(struct kv_lru *l, struct kv_lru_block *out)
{
	if (l->tail == KV_LRU_NONE)
		return false;
	uint32_t i = l->tail;
	*out = l->nodes[i].b;
	kv_lru_unlink(l, i);
	kv_lru_map_remove(&l->map, out->chain);
	l->nodes[i].next = l->free_head;
	l->free_head = i;
	l->count--;
	return true;
}

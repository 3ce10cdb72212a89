/* kvgen's LRU caches under random operations, against a plain array in
 * order of use (most recent first); and the edge cases: empty, full,
 * eviction order, touching what is already newest, a chain popped and
 * stored again, chain 0, slots reused. */
#include <string.h>

#include "sim/lru.h"
#include "unit.h"

static struct kv_lru_block block(uint64_t chain)
{
	/* the other fields differ from the chain and from each other, so that
	 * a pop that mixed blocks up would show */
	return (struct kv_lru_block){ chain, chain * 7 + 1, chain + 1000, ~chain };
}

static bool same(const struct kv_lru_block *a, const struct kv_lru_block *b)
{
	return a->chain == b->chain && a->ehash == b->ehash && a->parent == b->parent && a->local == b->local;
}

/* The cache's list from newest to oldest is exactly want[0..n), its links
 * agree both ways, and count says n. */
static bool order_is(const struct kv_lru *l, const struct kv_lru_block *want, size_t n)
{
	if (l->count != n)
		return false;
	uint32_t i = l->head, prev = KV_LRU_NONE;
	for (size_t k = 0; k < n; k++) {
		if (i == KV_LRU_NONE || l->nodes[i].prev != prev || !same(&l->nodes[i].b, &want[k]))
			return false;
		prev = i;
		i = l->nodes[i].next;
	}
	return i == KV_LRU_NONE && l->tail == prev;
}

/* The reference: blocks in order of use, newest first. */
struct ref {
	struct kv_lru_block v[64];
	size_t n;
};

static bool ref_touch(struct ref *r, uint64_t chain)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].chain == chain) {
			struct kv_lru_block b = r->v[i];
			memmove(&r->v[1], &r->v[0], i * sizeof r->v[0]);
			r->v[0] = b;
			return true;
		}
	return false;
}

static void ref_insert(struct ref *r, struct kv_lru_block b)
{
	memmove(&r->v[1], &r->v[0], r->n * sizeof r->v[0]);
	r->v[0] = b;
	r->n++;
}

static bool ref_pop(struct ref *r, struct kv_lru_block *out)
{
	if (r->n == 0)
		return false;
	*out = r->v[--r->n];
	return true;
}

/* What kvgen does with a cache: look a block up, store it when missing,
 * evict down to the capacity; now and then a pop on its own. */
static void matches_reference(void)
{
	enum { CAPACITY = 12, KEYS = 40 };
	struct kv_lru l;
	struct ref r = { .n = 0 };
	kv_lru_init(&l, CAPACITY);
	uint64_t pops = 0;
	for (int op = 0; op < 200000; op++) {
		/* keys 0..KEYS-1: key 0 is the table's side slot */
		uint64_t chain = unit_rand() % KEYS;
		int what = (int)(unit_rand() % 8);
		if (what < 6) {
			bool held = ref_touch(&r, chain);
			ASSERT(kv_lru_touch(&l, chain) == held);
			if (!held) {
				struct kv_lru_block b = block(chain);
				kv_lru_insert(&l, &b);
				ref_insert(&r, b);
			}
			while (r.n > CAPACITY) {
				struct kv_lru_block got, want;
				ASSERT(kv_lru_over(&l));
				ASSERT(kv_lru_pop(&l, &got) && ref_pop(&r, &want));
				ASSERT(same(&got, &want));
				pops++;
			}
			ASSERT(!kv_lru_over(&l));
		} else {
			struct kv_lru_block got, want;
			bool had = ref_pop(&r, &want);
			ASSERT(kv_lru_pop(&l, &got) == had);
			ASSERT(!had || same(&got, &want));
		}
		ASSERT(order_is(&l, r.v, r.n));
		/* a slot freed by a pop is reused: never more than ever held at once */
		ASSERT(l.used <= CAPACITY + 1);
	}
	ASSERT(pops > 10000);
	kv_lru_free(&l);
}

static void empty(void)
{
	struct kv_lru l;
	struct kv_lru_block out;
	kv_lru_init(&l, 4);
	ASSERT(!kv_lru_pop(&l, &out));
	ASSERT(!kv_lru_touch(&l, 0));
	ASSERT(!kv_lru_touch(&l, 5));
	ASSERT(!kv_lru_over(&l));
	ASSERT(order_is(&l, NULL, 0));
	kv_lru_free(&l);
	/* capacity 0 (kvgen's --disk-capacity 0 is no disk): one block is over */
	kv_lru_init(&l, 0);
	ASSERT(!kv_lru_over(&l));
	struct kv_lru_block b = block(3);
	kv_lru_insert(&l, &b);
	ASSERT(kv_lru_over(&l));
	ASSERT(kv_lru_pop(&l, &out) && same(&out, &b));
	ASSERT(!kv_lru_over(&l));
	ASSERT(!kv_lru_pop(&l, &out));
	ASSERT(!kv_lru_touch(&l, 3));
	kv_lru_free(&l);
}

/* Full at capacity, over one beyond; eviction takes the least recently
 * used, where touching counts as use and storing does too. */
static void eviction_order(void)
{
	struct kv_lru l;
	kv_lru_init(&l, 5);
	for (uint64_t c = 1; c <= 5; c++) {
		struct kv_lru_block b = block(c);
		kv_lru_insert(&l, &b);
	}
	ASSERT(!kv_lru_over(&l));
	ASSERT(kv_lru_touch(&l, 2));
	ASSERT(kv_lru_touch(&l, 4));
	ASSERT(kv_lru_touch(&l, 1));
	struct kv_lru_block six = block(6);
	kv_lru_insert(&l, &six);
	ASSERT(kv_lru_over(&l));
	const struct kv_lru_block want[] = { block(6), block(1), block(4), block(2), block(5), block(3) };
	ASSERT(order_is(&l, want, 6));
	static const uint64_t evicted[] = { 3, 5, 2, 4, 1, 6 };
	for (size_t k = 0; k < 6; k++) {
		struct kv_lru_block out;
		ASSERT(kv_lru_pop(&l, &out));
		struct kv_lru_block want_k = block(evicted[k]);
		ASSERT_EQ_U64(out.chain, evicted[k]);
		ASSERT(same(&out, &want_k));
		ASSERT(!kv_lru_over(&l));
	}
	ASSERT(!kv_lru_touch(&l, 6));
	ASSERT_EQ_U64(l.count, 0);
	kv_lru_free(&l);
}

/* Touching the newest, or one block again and again, changes nothing;
 * the only block is head and tail at once. */
static void touch_again(void)
{
	struct kv_lru l;
	kv_lru_init(&l, 3);
	struct kv_lru_block a = block(10), b = block(20);
	kv_lru_insert(&l, &a);
	ASSERT(kv_lru_touch(&l, 10));
	ASSERT(order_is(&l, &a, 1));
	kv_lru_insert(&l, &b);
	for (int k = 0; k < 3; k++)
		ASSERT(kv_lru_touch(&l, 20));
	ASSERT(order_is(&l, (struct kv_lru_block[]){ b, a }, 2));
	ASSERT(kv_lru_touch(&l, 10));
	ASSERT(kv_lru_touch(&l, 10));
	ASSERT(order_is(&l, (struct kv_lru_block[]){ a, b }, 2));
	struct kv_lru_block out;
	ASSERT(kv_lru_pop(&l, &out) && same(&out, &b));
	ASSERT(order_is(&l, &a, 1));
	kv_lru_free(&l);
}

/* A chain popped can be stored again (with other contents), blocks that
 * share an engine hash are still two, and chain 0 is a chain like any. */
static void stored_again(void)
{
	struct kv_lru l;
	kv_lru_init(&l, 2);
	struct kv_lru_block zero = block(0), one = block(1), out;
	struct kv_lru_block twin = { 2, one.ehash, 0, 0 };
	kv_lru_insert(&l, &zero);
	kv_lru_insert(&l, &one);
	kv_lru_insert(&l, &twin);
	ASSERT(kv_lru_pop(&l, &out) && same(&out, &zero));
	ASSERT(!kv_lru_touch(&l, 0));
	struct kv_lru_block zero2 = { 0, 5, 6, 7 };
	kv_lru_insert(&l, &zero2);
	ASSERT(kv_lru_touch(&l, 1));
	ASSERT(order_is(&l, (struct kv_lru_block[]){ one, zero2, twin }, 3));
	ASSERT(kv_lru_pop(&l, &out) && same(&out, &twin));
	ASSERT(kv_lru_pop(&l, &out) && same(&out, &zero2));
	ASSERT(kv_lru_pop(&l, &out) && same(&out, &one));
	ASSERT(!kv_lru_pop(&l, &out));
	kv_lru_free(&l);
}

/* Slots freed by pops are taken again before the array grows: a cache
 * that cycles through many chains keeps as many slots as it held at once,
 * and its map shrinks back when it empties. */
static void slots_reused(void)
{
	struct kv_lru l;
	kv_lru_init(&l, 1000);
	for (uint64_t c = 1; c <= 1000; c++) {
		struct kv_lru_block b = block(c * 0x9e3779b97f4a7c15ull);
		kv_lru_insert(&l, &b);
	}
	for (uint64_t c = 1001; c <= 50000; c++) {
		struct kv_lru_block b = block(c * 0x9e3779b97f4a7c15ull), out;
		kv_lru_insert(&l, &b);
		ASSERT(kv_lru_pop(&l, &out));
		ASSERT_EQ_U64(out.chain, (c - 1000) * 0x9e3779b97f4a7c15ull);
	}
	ASSERT_EQ_U64(l.used, 1001);
	ASSERT(kv_lru_touch(&l, 49001 * 0x9e3779b97f4a7c15ull));
	ASSERT(!kv_lru_touch(&l, 49000 * 0x9e3779b97f4a7c15ull));
	struct kv_lru_block out;
	for (uint64_t c = 49002; c <= 50000; c++)
		ASSERT(kv_lru_pop(&l, &out) && out.chain == c * 0x9e3779b97f4a7c15ull);
	ASSERT(kv_lru_pop(&l, &out) && out.chain == 49001 * 0x9e3779b97f4a7c15ull);
	ASSERT(!kv_lru_pop(&l, &out));
	ASSERT_EQ_U64(kv_lru_map_count(&l.map), 0);
	ASSERT(l.map.homes <= 64);
	kv_lru_free(&l);
}

int main(void)
{
	RUN(matches_reference);
	RUN(empty);
	RUN(eviction_order);
	RUN(touch_again);
	RUN(stored_again);
	RUN(slots_reused);
	return unit_done();
}

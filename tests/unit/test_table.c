/* The hash table's iteration, const lookup, remove-if and sorted keys
 * (base/table.h), under random operations against a plain array of what it
 * should hold, with clusters that run past the last home. */
/* Growth in steps from 16 homes on (base/table.h): 16, 20, 24, 28, 32, 40, ... */
#define KV_TABLE_FINE 16
#define KV_TABLE_STEP 4
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/table.h"
#include "unit.h"

struct item {
	uint64_t key;
	uint64_t value;
	uint32_t visits;          /* times remove_if's predicate saw it */
};
KV_TABLE_DEFINE(items, struct item)

enum { KEYS = 2000 };

/* The reference: which keys are there, with which value. */
struct model {
	bool present[KEYS];
	uint64_t value[KEYS];
};

static size_t model_count(const struct model *md)
{
	size_t n = 0;
	for (int k = 0; k < KEYS; k++)
		n += md->present[k];
	return n;
}

/* Every entry exactly once, at its position, in order, key 0's last;
 * false at the first difference from the model. */
static bool iteration_matches(const struct items *t, const struct model *md)
{
	static unsigned seen[KEYS];
	memset(seen, 0, sizeof seen);
	size_t n = 0, last = 0;
	bool zero_seen = false;
	KV_TABLE_EACH(items, t, pos) {
		const struct item *e = items_at_const(t, pos);
		if (pos > t->cap || (pos < t->cap && t->slots[pos].key == 0) || (pos == t->cap && !t->has_zero))
			return false;
		if (e->key >= KEYS || !md->present[e->key] || e->value != md->value[e->key] || zero_seen)
			return false;
		if (n && pos <= last)
			return false;
		if (e->key == 0 && pos != t->cap)
			return false;
		zero_seen = e->key == 0;
		seen[e->key]++;
		last = pos;
		n++;
	}
	for (int k = 0; k < KEYS; k++)
		if (seen[k] != (md->present[k] ? 1u : 0u))
			return false;
	return n == model_count(md) && n == items_count(t);
}

/* Every key of the model found, by both lookups, with its value; the others not. */
static bool lookups_match(struct items *t, const struct model *md)
{
	for (int k = 0; k < KEYS; k++) {
		const struct item *c = items_find_const(t, (uint64_t)k);
		struct item *e = items_find(t, (uint64_t)k);
		if ((const struct item *)e != c || (c != NULL) != md->present[k] || (c && c->value != md->value[k]))
			return false;
	}
	return true;
}

struct pick {
	uint64_t mod, rest;       /* entries whose value % mod == rest go */
	size_t calls;
};

static bool picked(struct item *e, void *arg)
{
	struct pick *p = arg;
	p->calls++;
	e->visits++;
	return e->value % p->mod == p->rest;
}

/* remove_if against the model: the predicate sees each entry once, exactly
 * the picked ones go, the rest is found as before. */
static bool remove_if_matches(struct items *t, struct model *md, uint64_t mod, uint64_t rest)
{
	KV_TABLE_EACH(items, t, pos)
		items_at(t, pos)->visits = 0;
	size_t before = items_count(t), want = 0;
	struct pick p = { mod, rest, 0 };
	for (int k = 0; k < KEYS; k++)
		if (md->present[k] && md->value[k] % mod == rest) {
			md->present[k] = false;
			want++;
		}
	size_t got = items_remove_if(t, picked, &p);
	if (got != want || p.calls != before)
		return false;
	KV_TABLE_EACH(items, t, pos)
		if (items_at(t, pos)->visits != 1)
			return false;
	/* the shrinking rule of remove: below 10% load, never under 64 homes */
	if (t->homes > 64 && 10 * t->n < t->homes)
		return false;
	return lookups_match(t, md) && iteration_matches(t, md);
}

static void matches_model_under_random_operations(void)
{
	static struct model md;
	memset(&md, 0, sizeof md);
	struct items t = { 0 };
	for (int op = 0; op < 60000; op++) {
		/* small keys: clusters, key 0 in its side slot */
		uint64_t k = unit_rand() % KEYS;
		int what = (int)(unit_rand() % 100);
		if (what < 55) {
			bool added;
			struct item *e = items_upsert(&t, k, &added);
			ASSERT(added == !md.present[k]);
			e->value = md.value[k] = unit_rand() % 1000;
			md.present[k] = true;
		} else if (what < 90) {
			ASSERT(items_remove(&t, k) == md.present[k]);
			md.present[k] = false;
		} else if (what < 99) {
			const struct item *c = items_find_const(&t, k);
			ASSERT((c != NULL) == md.present[k]);
			ASSERT(!c || c->value == md.value[k]);
		} else {
			uint64_t mod = 1 + unit_rand() % 4;
			ASSERT(remove_if_matches(&t, &md, mod, unit_rand() % mod));
		}
		if (op % 997 == 0)
			ASSERT(iteration_matches(&t, &md));
	}
	ASSERT(iteration_matches(&t, &md));
	ASSERT(lookups_match(&t, &md));
	/* everything goes at once: the table shrinks back */
	ASSERT(remove_if_matches(&t, &md, 1, 0));
	ASSERT_EQ_U64(items_count(&t), 0);
	ASSERT(t.homes <= 64);
	items_free(&t);
}

/* Keys whose home is one of the last of 64 homes: their cluster runs past
 * the last home into the slots after it. */
static size_t last_home_keys(uint64_t *keys, size_t want)
{
	size_t n = 0;
	for (uint64_t k = 1; n < want; k++)
		if (kv_table_home(k, 64) >= 61)
			keys[n++] = k;
	return n;
}

static void remove_if_past_the_last_home(void)
{
	/* every mixture of removed and kept entries in a cluster of 8 at the end */
	for (unsigned mask = 0; mask < 256; mask++) {
		struct items t = { 0 };
		uint64_t keys[8];
		size_t n = last_home_keys(keys, 8);
		bool added;
		/* fill to 45 entries: 64 homes, kept however many go */
		for (uint64_t k = 1000; items_count(&t) < 37; k++)
			if (kv_table_home(k, 64) >= 8 && kv_table_home(k, 64) < 50)
				items_upsert(&t, k, &added)->value = 1;
		for (size_t i = 0; i < n; i++)
			items_upsert(&t, keys[i], &added)->value = mask >> i & 1 ? 0 : 1;
		ASSERT_EQ_U64(t.homes, 64);
		/* the cluster does run on: some of its keys sit past the last home */
		bool past = false;
		for (size_t s = 64; s < 68; s++)
			for (size_t i = 0; i < n; i++)
				past |= t.slots[s].key == keys[i];
		ASSERT(past);
		KV_TABLE_EACH(items, &t, pos)
			items_at(&t, pos)->visits = 0;
		struct pick p = { 2, 0, 0 };
		ASSERT_EQ_U64(items_remove_if(&t, picked, &p), (size_t)__builtin_popcount(mask));
		ASSERT_EQ_U64(p.calls, 37 + n);
		for (size_t i = 0; i < n; i++) {
			const struct item *c = items_find_const(&t, keys[i]);
			ASSERT((c == NULL) == (mask >> i & 1));
			ASSERT(!c || c->visits == 1);
		}
		KV_TABLE_EACH(items, &t, pos)
			ASSERT(items_at(&t, pos)->visits == 1 && items_at(&t, pos)->value == 1);
		items_free(&t);
	}
}

static void key_zero_and_empty_tables(void)
{
	struct items t = { 0 };
	struct pick p = { 1, 0, 0 };
	ASSERT(items_next(&t, 0) == items_end(&t));
	ASSERT(items_find_const(&t, 0) == NULL && items_find_const(&t, 5) == NULL);
	ASSERT_EQ_U64(items_remove_if(&t, picked, &p), 0);
	ASSERT_EQ_U64(p.calls, 0);
	bool added;
	items_upsert(&t, 0, &added)->value = 7;
	size_t pos = items_next(&t, 0);
	ASSERT(pos == t.cap && items_at_const(&t, pos)->key == 0 && items_at_const(&t, pos)->value == 7);
	ASSERT(items_next(&t, pos + 1) == items_end(&t));
	items_upsert(&t, 9, &added)->value = 8;
	p = (struct pick){ 2, 1, 0 };   /* odd values: key 0's entry goes, 9's stays */
	ASSERT_EQ_U64(items_remove_if(&t, picked, &p), 1);
	ASSERT_EQ_U64(p.calls, 2);
	ASSERT(items_find_const(&t, 0) == NULL && items_find_const(&t, 9)->value == 8);
	ASSERT_EQ_U64(items_count(&t), 1);
	items_free(&t);
}

/* Keys in ascending order, each with the position of its entry. */
static void sorted_keys_with_positions(void)
{
	static struct model md;
	memset(&md, 0, sizeof md);
	struct items t = { 0 };
	bool added;
	for (int i = 0; i < 3000; i++) {
		uint64_t k = unit_rand() % KEYS;
		if (unit_rand() % 4 == 0) {
			items_remove(&t, k);
			md.present[k] = false;
		} else {
			items_upsert(&t, k, &added)->value = md.value[k] = unit_rand();
			md.present[k] = true;
		}
	}
	struct kv_sorted o = items_sorted(&t);
	ASSERT_EQ_U64(o.n, items_count(&t));
	size_t at = 0;
	for (int k = 0; k < KEYS; k++) {
		if (!md.present[k])
			continue;
		ASSERT(at < o.n && o.keys[at] == (uint64_t)k);
		const struct item *e = items_at_const(&t, o.pos[at]);
		ASSERT(e->key == (uint64_t)k && e->value == md.value[k]);
		at++;
	}
	ASSERT_EQ_U64(at, o.n);
	kv_sorted_free(&o);
	items_free(&t);
}

/* reserve(n) makes the homes that growth reaches for n entries, in one
 * step: the n entries then go in without growing, entries already there
 * stay. */
static void reserve_is_growth_in_one_step(void)
{
	static const size_t counts[] = { 0, 1, 13, 100, 1000, 5000 };
	bool added;
	for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
		size_t n = counts[c];
		struct items grown = { 0 }, reserved = { 0 };
		uint64_t seed = unit_rng;
		for (size_t i = 0; i < n; i++)
			items_upsert(&grown, 1 + unit_rand() % 1000000, &added);
		unit_rng = seed;
		for (size_t i = 0; i < 50 && i < n; i++)
			items_upsert(&reserved, 1 + unit_rand() % 1000000, &added)->value = 7;
		items_reserve(&reserved, n);
		size_t homes = reserved.homes, cap = reserved.cap;
		ASSERT(n == 0 || homes == grown.homes);
		unit_rng = seed;
		for (size_t i = 0; i < 50 && i < n; i++)
			ASSERT(items_find(&reserved, 1 + unit_rand() % 1000000)->value == 7);
		for (size_t i = 50; i < n; i++)
			items_upsert(&reserved, 1 + unit_rand() % 1000000, &added);
		ASSERT_EQ_U64(reserved.homes, homes);
		ASSERT_EQ_U64(reserved.cap, cap);
		ASSERT_EQ_U64(items_count(&reserved), items_count(&grown));
		items_free(&grown);
		items_free(&reserved);
	}
}

int main(void)
{
	RUN(matches_model_under_random_operations);
	RUN(remove_if_past_the_last_home);
	RUN(key_zero_and_empty_tables);
	RUN(sorted_keys_with_positions);
	RUN(reserve_is_growth_in_one_step);
	return unit_done();
}

/* table: open-addressing hash tables keyed by a u64, one definition per
 * entry type (KV_TABLE_DEFINE).  Linear probing that never wraps (slots past
 * the last home take the last clusters), backward-shift deletion, no
 * tombstones; grows in place at 80% load, by doubling while small, then by
 * half the power of two below (kv_table_grown).  Key 0 lives beside the slots (0 marks an empty
 * slot).  Entries move on insert and remove: pointers to them last
 * until the next change of the table.  Tables shrink again below 10% load,
 * and large slot arrays are mapped directly, so that memory goes back to the
 * system when what the table holds goes away. */
#ifndef KV_TABLE_H
#define KV_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/sort.h"
#include "base/util.h"

/* Slot arrays of 1 MiB and more are mmap'ed: freeing them returns the memory. */
void *kv_slots_alloc(size_t bytes);
void kv_slots_free(void *p, size_t bytes);
/* The slots p (oldbytes of them) in an array of bytes (more): the added
 * part zeroed.  A mapped array grows where it is (its pages remapped), so
 * that a table never needs its old and new slots at once. */
void *kv_slots_grow(void *p, size_t oldbytes, size_t bytes);

static inline uint64_t kv_mix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

/* For a function that only prefetches (or looks up to prefetch): GCC takes
 * such a function for one without effects and deletes the calls to it
 * before it would inline them, prefetches and all.  Inlined early, the
 * prefetches stay. */
#define KV_PREFETCHING static inline __attribute__((always_inline))

/* Every position of an entry of table t, of the table type name:
 *     KV_TABLE_EACH(kv_blocks, t, pos) { const struct kv_block *b = kv_blocks_at_const(t, pos); ... }
 * The table must not change meanwhile (remove_if is the way to remove). */
#define KV_TABLE_EACH(name, t, pos) \
	for (size_t pos = name##_next(t, 0); pos != name##_end(t); pos = name##_next(t, pos + 1))

/* A table's keys in ascending order, and the positions of their entries
 * (u32: kv_sort_keys' payload; tables stay far below 2^32 slots). */
struct kv_sorted {
	uint64_t *keys;
	uint32_t *pos;
	size_t n;
};

static inline void kv_sorted_free(struct kv_sorted *s)
{
	free(s->keys);
	free(s->pos);
}

/* A key's home among homes slots: the high half of its mix times homes,
 * so that homes need not be a power of two (large tables grow by half the
 * power of two below, not by doubling: a table of 4.1M entries has 6.3M
 * homes, not 8.4M) and homes follow the mixed keys' order, which lets a
 * table grow where it is (name##_grow). */
__extension__ typedef unsigned __int128 kv_u128_;
static inline size_t kv_table_home(uint64_t key, size_t homes)
{
	return (size_t)(((kv_u128_)kv_mix64(key) * homes) >> 64);
}

/* Tables of fewer homes double: their memory matters little, and some
 * (offloads waiting for their pool) fill and drain again and again.
 * Larger ones grow by 1/KV_TABLE_STEP of the power of two below: half,
 * not a quarter, for a table at 80% load probes several slots, several
 * cache lines (on the cluster capture quarters took 30 to 50% more user
 * time, halves up to 10% more and about as much less system time, zeroing
 * fewer pages).
 * Unit tests set them lower to test the steps on small tables. */
#ifndef KV_TABLE_FINE
#define KV_TABLE_FINE (1u << 22)
#endif
#ifndef KV_TABLE_STEP
#define KV_TABLE_STEP 2
#endif

/* Whether n entries are more than homes homes hold: past 80% load, the
 * table grows (upsert) or is made larger ahead (reserve). */
static inline bool kv_table_over(size_t n, size_t homes)
{
	return 5 * n > 4 * homes;
}

/* The homes after a step of growth: 16, 32, ... 2^22, then 1.5 * 2^22,
 * 2^23, 1.5 * 2^23, ... */
static inline size_t kv_table_grown(size_t homes)
{
	if (homes < KV_TABLE_FINE)
		return 2 * homes;
	size_t p = KV_TABLE_FINE;
	while (2 * p <= homes)
		p *= 2;
	return homes + p / KV_TABLE_STEP;
}

/* Slots past the last home, where the clusters of the last homes run on
 * (probes never wrap around); the last slot stays empty, so that every
 * probe ends at an empty slot without a bound. */
static inline size_t kv_table_slots(size_t homes)
{
	return homes + 32 + homes / 1024;
}

/* The functions of one table all sit on the line that defines it, and
 * cppcheck's whole-program check (make lint) takes them for one: none takes
 * a pointer where another takes a key, which may be 0 (a key of 0 to find
 * would be read as a null pointer passed to it). */
#define KV_TABLE_DEFINE(name, entry_t)                                                       \
	struct name {                                                                            \
		entry_t *slots;                                                                      \
		size_t cap, n;         /* slots (kv_table_slots of homes), entries in them */       \
		size_t homes;                                                                        \
		bool has_zero;                                                                       \
		entry_t zero;                                                                        \
	};                                                                                       \
                                                                                                 \
	static inline size_t name##_count(const struct name *t) { return t->n + t->has_zero; }   \
                                                                                                 \
	static inline void name##_free(struct name *t)                                           \
	{                                                                                        \
		kv_slots_free(t->slots, t->cap * sizeof *t->slots);                                  \
		memset(t, 0, sizeof *t);                                                             \
	}                                                                                        \
                                                                                                 \
	/* A hint that key is about to be looked up: its slot is fetched meanwhile. */           \
	KV_PREFETCHING void name##_prefetch(const struct name *t, uint64_t key)                  \
	{                                                                                        \
		if (t->cap)                                                                          \
			__builtin_prefetch(&t->slots[kv_table_home(key, t->homes)]);                 \
	}                                                                                        \
                                                                                                 \
	/* The same, and the line after the slot: in a well-filled table of wide                 \
	 * slots (kvmatch's blocks: 28 bytes, 53 to 80% full) a probe often runs on              \
	 * into the next line (an insert, and a removal shifting back the slots after            \
	 * the one it empties, most of all). */                                                  \
	KV_PREFETCHING void name##_prefetch_run(const struct name *t, uint64_t key)              \
	{                                                                                        \
		if (!t->cap)                                                                     \
			return;                                                                  \
		const char *s = (const char *)&t->slots[kv_table_home(key, t->homes)];           \
		__builtin_prefetch(s);                                                           \
		__builtin_prefetch(s + 64);                                                      \
	}                                                                                        \
                                                                                                 \
	static inline entry_t *name##_find(struct name *t, uint64_t key)                         \
	{                                                                                        \
		KV_TABLE_FIND_(t, key);                                                              \
	}                                                                                        \
                                                                                                 \
	static inline const entry_t *name##_find_const(const struct name *t, uint64_t key)       \
	{                                                                                        \
		KV_TABLE_FIND_(t, key);                                                              \
	}                                                                                        \
                                                                                                 \
	/* Positions: the slots in order, then the entry of key 0 at cap.  The                   \
	 * position of the first entry at or after pos; name##_end(t) when none                  \
	 * is (KV_TABLE_EACH walks them). */                                                     \
	static inline size_t name##_next(const struct name *t, size_t pos)                       \
	{                                                                                        \
		for (; pos < t->cap; pos++)                                                          \
			if (t->slots[pos].key)                                                           \
				return pos;                                                                  \
		return pos == t->cap && t->has_zero ? t->cap : t->cap + 1;                           \
	}                                                                                        \
                                                                                                 \
	static inline size_t name##_end(const struct name *t)                                    \
	{                                                                                        \
		return t->cap + 1;                                                                   \
	}                                                                                        \
                                                                                                 \
	/* The entry at a position of an entry (the table unchanged since). */                   \
	static inline entry_t *name##_at(struct name *t, size_t pos)                             \
	{                                                                                        \
		return pos < t->cap ? &t->slots[pos] : &t->zero;                                     \
	}                                                                                        \
                                                                                                 \
	static inline const entry_t *name##_at_const(const struct name *t, size_t pos)           \
	{                                                                                        \
		return pos < t->cap ? &t->slots[pos] : &t->zero;                                     \
	}                                                                                        \
                                                                                                 \
	/* The keys in ascending order, with the positions of their entries                      \
	 * (allocated: kv_sorted_free). */                                                       \
	static inline struct kv_sorted name##_sorted(const struct name *t)                       \
	{                                                                                        \
		size_t n = name##_count(t), k = 0;                                                   \
		struct kv_sorted o = { kv_xmalloc((n + 1) * sizeof *o.keys),                         \
					 kv_xmalloc((n + 1) * sizeof *o.pos), n };                               \
		KV_TABLE_EACH(name, t, pos) {                                                        \
			o.keys[k] = name##_at_const(t, pos)->key;                                        \
			o.pos[k++] = (uint32_t)pos;                                                      \
		}                                                                                    \
		kv_sort_keys(o.keys, o.pos, n);                                                      \
		return o;                                                                            \
	}                                                                                        \
                                                                                                 \
	/* Puts e (not in the table) at the first empty slot from slot i on;                     \
	 * false when that would be the last slot, which stays empty. */                         \
	static inline bool name##_place_from(struct name *t, size_t i, const entry_t *e)         \
	{                                                                                        \
		while (t->slots[i].key)                                                              \
			i++;                                                                             \
		if (i == t->cap - 1)                                                                 \
			return false;                                                                    \
		t->slots[i] = *e;                                                                    \
		return true;                                                                         \
	}                                                                                        \
                                                                                                 \
	/* A new slot array for homes homes, the entries moved into it (more                     \
	 * homes, should the last ones' clusters not fit). */                                    \
	static inline void name##_resize(struct name *t, size_t homes)                           \
	{                                                                                        \
		entry_t *old = t->slots;                                                             \
		size_t oldcap = t->cap;                                                              \
		for (;; homes = kv_table_grown(homes)) {                                             \
			t->cap = kv_table_slots(homes);                                                  \
			t->homes = homes;                                                                \
			t->slots = kv_slots_alloc(t->cap * sizeof *t->slots);                            \
			size_t j = 0;                                                                    \
			for (; j < oldcap; j++)                                                          \
				if (old[j].key && !name##_place_from(t, kv_table_home(old[j].key, homes), &old[j])) \
					break;                                                                   \
			if (j == oldcap)                                                                 \
				break;                                                                       \
			kv_slots_free(t->slots, t->cap * sizeof *t->slots);                              \
		}                                                                                    \
		kv_slots_free(old, oldcap * sizeof *old);                                            \
	}                                                                                        \
                                                                                                 \
	/* One step more homes, where the slots are (no second slot array).  The \
	 * entries are taken out from the last slot down, each put back from its  \
	 * new home, which is at or after its old home.  When that is at or after \
	 * the slot it left, every slot its probe passes holds an entry put back  \
	 * already, which stays; else (a cluster longer than its distance from    \
	 * slot 0 grows, near the start) it waits in spill, as does one that      \
	 * would reach the last slot, until all others are placed. */             \
	static inline void name##_grow(struct name *t)                                           \
	{                                                                                        \
		size_t oldcap = t->cap, homes = kv_table_grown(t->homes), nspill = 0, capspill = 0;  \
		entry_t *spill = NULL;                                                               \
		t->cap = kv_table_slots(homes);                                                      \
		t->homes = homes;                                                                    \
		t->slots = kv_slots_grow(t->slots, oldcap * sizeof *t->slots, t->cap * sizeof *t->slots); \
		for (size_t j = oldcap; j-- > 0;) {                                                  \
			if (t->slots[j].key == 0)                                                        \
				continue;                                                                    \
			entry_t e = t->slots[j];                                                         \
			t->slots[j].key = 0;                                                             \
			size_t h = kv_table_home(e.key, homes);                                          \
			if (h >= j && name##_place_from(t, h, &e))                                       \
				continue;                                                                    \
			spill = kv_xgrow(spill, &capspill, nspill + 1, sizeof *spill);                   \
			spill[nspill++] = e;                                                             \
		}                                                                                    \
		for (size_t k = 0; k < nspill; k++)                                                  \
			while (!name##_place_from(t, kv_table_home(spill[k].key, t->homes), &spill[k]))  \
				name##_grow(t);                                                              \
		free(spill);                                                                         \
	}                                                                                        \
                                                                                                 \
	/* Room for n entries in all, for a table about to be filled from a                      \
	 * count known ahead (a snapshot's): the homes that growth would reach                   \
	 * for them, in one step, without those between. */                                      \
	static inline void name##_reserve(struct name *t, size_t n)                              \
	{                                                                                        \
		size_t homes = t->cap ? t->homes : 16;                                               \
		while (kv_table_over(n, homes))                                                      \
			homes = kv_table_grown(homes);                                                   \
		if (!t->cap || homes != t->homes)                                                    \
			name##_resize(t, homes);                                                         \
	}                                                                                        \
                                                                                                 \
	/* Finds key or adds a zeroed entry for it (*added tells which). */                      \
	static inline entry_t *name##_upsert(struct name *t, uint64_t key, bool *added)          \
	{                                                                                        \
		*added = false;                                                                      \
		if (key == 0) {                                                                      \
			if (!t->has_zero) {                                                              \
				memset(&t->zero, 0, sizeof t->zero);                                         \
				t->has_zero = *added = true;                                                 \
			}                                                                                \
			return &t->zero;                                                                 \
		}                                                                                    \
		if (!t->cap)                                                                         \
			name##_resize(t, 16);                                                            \
		else if (kv_table_over(t->n + 1, t->homes))                                          \
			name##_grow(t);                                                                  \
		for (;;) {                                                                           \
			size_t i = kv_table_home(key, t->homes);                                         \
			for (; t->slots[i].key; i++)                                                     \
				if (t->slots[i].key == key)                                                  \
					return &t->slots[i];                                                     \
			if (i < t->cap - 1) {                                                            \
				memset(&t->slots[i], 0, sizeof t->slots[i]);                                 \
				t->slots[i].key = key;                                                       \
				t->n++;                                                                      \
				*added = true;                                                               \
				return &t->slots[i];                                                         \
			}                                                                                \
			name##_grow(t); /* its cluster ran into the last slot */                         \
		}                                                                                    \
	}                                                                                        \
                                                                                                 \
	/* Empties slot i: later members of its cluster shift back so that no                    \
	 * probe breaks (one whose home is at or before the slot emptied). */                    \
	static inline void name##_unslot(struct name *t, size_t i)                               \
	{                                                                                        \
		for (size_t j = i + 1; t->slots[j].key; j++) {                                       \
			if (kv_table_home(t->slots[j].key, t->homes) <= i) {                             \
				t->slots[i] = t->slots[j];                                                   \
				i = j;                                                                       \
			}                                                                                \
		}                                                                                    \
		t->slots[i].key = 0;                                                                 \
		t->n--;                                                                              \
	}                                                                                        \
                                                                                                 \
	/* Below 10% load the table halves its homes (to no fewer than 64). */                   \
	static inline void name##_shrink(struct name *t)                                         \
	{                                                                                        \
		size_t homes = t->homes;                                                             \
		while (homes > 64 && 10 * t->n < homes)                                              \
			homes /= 2;                                                                      \
		if (homes != t->homes)                                                               \
			name##_resize(t, homes < 64 ? 64 : homes);                                       \
	}                                                                                        \
                                                                                                 \
	static inline bool name##_remove(struct name *t, uint64_t key)                           \
	{                                                                                        \
		if (key == 0) {                                                                      \
			bool had = t->has_zero;                                                          \
			t->has_zero = false;                                                             \
			return had;                                                                      \
		}                                                                                    \
		if (!t->cap)                                                                         \
			return false;                                                                    \
		size_t i = kv_table_home(key, t->homes);                                             \
		while (t->slots[i].key != key) {                                                     \
			if (t->slots[i].key == 0)                                                        \
				return false;                                                                \
			i++;                                                                             \
		}                                                                                    \
		name##_unslot(t, i);                                                                 \
		if (t->homes > 64 && 10 * t->n < t->homes)                                           \
			name##_resize(t, t->homes / 2 < 64 ? 64 : t->homes / 2);                         \
		return true;                                                                         \
	}                                                                                        \
                                                                                                 \
	/* Calls gone once for every entry, in no particular order, and removes                  \
	 * those it returns true for (it may change an entry's other fields, not                 \
	 * its key, and must not change the table); returns how many went.  A                    \
	 * removal shifts back only entries after the slot emptied, not yet                      \
	 * seen, into that slot, which is looked at again. */                                    \
	static inline size_t name##_remove_if(struct name *t, bool (*gone)(entry_t *e, void *arg), \
						  void *arg)                                                         \
	{                                                                                        \
		size_t removed = 0;                                                                  \
		if (t->n) {                                                                          \
			for (size_t i = 0; i < t->cap;) {                                                \
				if (t->slots[i].key && gone(&t->slots[i], arg)) {                            \
					name##_unslot(t, i);                                                     \
					removed++;                                                               \
				} else {                                                                     \
					i++;                                                                     \
				}                                                                            \
			}                                                                                \
			name##_shrink(t);                                                                \
		}                                                                                    \
		if (t->has_zero && gone(&t->zero, arg)) {                                            \
			t->has_zero = false;                                                             \
			removed++;                                                                       \
		}                                                                                    \
		return removed;                                                                      \
	}

/* The body of find, for the const and the other variant: the last slot is
 * empty, so the probe needs no bound. */
#define KV_TABLE_FIND_(t, key)                                                               \
	do {                                                                                     \
		if ((key) == 0)                                                                      \
			return (t)->has_zero ? &(t)->zero : NULL;                                        \
		if (!(t)->cap)                                                                       \
			return NULL;                                                                     \
		for (size_t i_ = kv_table_home(key, (t)->homes);; i_++) {                            \
			if ((t)->slots[i_].key == (key))                                                 \
				return &(t)->slots[i_];                                                      \
			if ((t)->slots[i_].key == 0)                                                     \
				return NULL;                                                                 \
		}                                                                                    \
	} while (0)

#endif

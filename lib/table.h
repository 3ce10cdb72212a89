/* table: open-addressing hash tables keyed by a u64, one definition per
 * entry type (KV_TABLE_DEFINE).  Linear probing, backward-shift deletion, no
 * tombstones; grows at 70% load.  Key 0 lives beside the slots (0 marks an
 * empty slot).  Entries move on insert and remove: pointers to them last
 * until the next change of the table.  Tables shrink again below 10% load,
 * and large slot arrays are mapped directly, so that memory goes back to the
 * system when what the table holds goes away.
 *
 * Capacities go 16, 24, 32, 48, 64, ... (2^k and 3 * 2^(k-1)), a step of
 * about sqrt(2), not 2: a table just past a step is half full, not 40%.  So
 * a key's home slot is its hash scaled to the capacity (kv_table_home), not
 * masked; that keeps homes in hash order, which lets a table grow where it
 * is (name##_grow). */
#ifndef KV_TABLE_H
#define KV_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

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

/* A key's home slot in a table of cap slots (cap <= 2^32): the high half of
 * its hash times cap, so that a larger cap never moves a home down. */
static inline size_t kv_table_home(uint64_t key, size_t cap)
{
	return (size_t)((kv_mix64(key) >> 32) * (uint64_t)cap >> 32);
}

/* The capacity after cap (16 for none), and before it (when shrinking). */
static inline size_t kv_table_bigger(size_t cap)
{
	if (!cap)
		return 16;
	if (cap > (size_t)UINT32_MAX / 3 * 2)
		kv_die(KV_EX_SOFTWARE, "a hash table beyond 2^32 slots");
	return cap & (cap - 1) ? cap / 3 * 4 : cap / 2 * 3;
}

static inline size_t kv_table_smaller(size_t cap)
{
	return cap & (cap - 1) ? cap / 3 * 2 : cap / 4 * 3;
}

#define KV_TABLE_DEFINE(name, entry_t)                                                       \
	struct name {                                                                            \
		entry_t *slots;                                                                      \
		size_t cap, n;                                                                       \
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
	static inline void name##_prefetch(const struct name *t, uint64_t key)                   \
	{                                                                                        \
		if (t->cap)                                                                          \
			__builtin_prefetch(&t->slots[kv_table_home(key, t->cap)]);                   \
	}                                                                                        \
                                                                                                 \
	static inline size_t name##_next(const struct name *t, size_t i)                         \
	{                                                                                        \
		return i + 1 == t->cap ? 0 : i + 1;                                                  \
	}                                                                                        \
                                                                                                 \
	static inline entry_t *name##_find(struct name *t, uint64_t key)                         \
	{                                                                                        \
		if (key == 0)                                                                        \
			return t->has_zero ? &t->zero : NULL;                                            \
		if (!t->cap)                                                                         \
			return NULL;                                                                     \
		for (size_t i = kv_table_home(key, t->cap);; i = name##_next(t, i)) {                \
			if (t->slots[i].key == key)                                                      \
				return &t->slots[i];                                                         \
			if (t->slots[i].key == 0)                                                        \
				return NULL;                                                                 \
		}                                                                                    \
	}                                                                                        \
                                                                                                 \
	/* Puts e into its first free slot from its home on. */                                 \
	static inline void name##_place(struct name *t, const entry_t *e)                        \
	{                                                                                        \
		size_t i = kv_table_home(e->key, t->cap);                                            \
		while (t->slots[i].key)                                                              \
			i = name##_next(t, i);                                                           \
		t->slots[i] = *e;                                                                    \
	}                                                                                        \
                                                                                                 \
	static inline void name##_resize(struct name *t, size_t cap)                             \
	{                                                                                        \
		entry_t *old = t->slots;                                                             \
		size_t oldcap = t->cap;                                                              \
		t->slots = kv_slots_alloc(cap * sizeof *t->slots);                                   \
		t->cap = cap;                                                                        \
		for (size_t j = 0; j < oldcap; j++)                                                  \
			if (old[j].key)                                                                  \
				name##_place(t, &old[j]);                                                    \
		kv_slots_free(old, oldcap * sizeof *old);                                            \
	}                                                                                        \
                                                                                                 \
	/* Grows the table where it is, without a second slot array.  Entries   \
	 * after the first empty slot are taken out from the top down and put   \
	 * back from their new home, which scales with the capacity and so lies \
	 * mostly above the slot they leave: each probe then passes only slots  \
	 * taken out before (or added), none of which is emptied later.  The    \
	 * few whose new home is below their slot, those before the first empty \
	 * slot (which may have wrapped around the old end) and any that would  \
	 * wrap around the new end wait in spill until all others are placed. */ \
	static inline void name##_grow(struct name *t)                                           \
	{                                                                                        \
		size_t oldcap = t->cap, cap = kv_table_bigger(oldcap), start = 0, nspill = 0, capspill = 0; \
		entry_t *spill = NULL;                                                               \
		while (t->slots[start].key)                                                          \
			start++;                                                                         \
		t->slots = kv_slots_grow(t->slots, oldcap * sizeof *t->slots, cap * sizeof *t->slots); \
		t->cap = cap;                                                                        \
		for (size_t j = oldcap; j-- > 0;) {                                                  \
			if (t->slots[j].key == 0)                                                        \
				continue;                                                                    \
			entry_t e = t->slots[j];                                                         \
			t->slots[j].key = 0;                                                             \
			size_t i = kv_table_home(e.key, cap);                                            \
			if (j > start && i >= j) {                                                       \
				while (i < cap && t->slots[i].key)                                           \
					i++;                                                                     \
				if (i < cap) {                                                               \
					t->slots[i] = e;                                                         \
					continue;                                                                \
				}                                                                            \
			}                                                                                \
			spill = kv_xgrow(spill, &capspill, nspill + 1, sizeof *spill);                   \
			spill[nspill++] = e;                                                             \
		}                                                                                    \
		for (size_t k = 0; k < nspill; k++)                                                  \
			name##_place(t, &spill[k]);                                                      \
		free(spill);                                                                         \
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
			name##_resize(t, kv_table_bigger(0));                                            \
		else if (10 * (t->n + 1) > 7 * t->cap)                                               \
			name##_grow(t);                                                                  \
		size_t i = kv_table_home(key, t->cap);                                               \
		for (;; i = name##_next(t, i)) {                                                     \
			if (t->slots[i].key == key)                                                      \
				return &t->slots[i];                                                         \
			if (t->slots[i].key == 0)                                                        \
				break;                                                                       \
		}                                                                                    \
		memset(&t->slots[i], 0, sizeof t->slots[i]);                                         \
		t->slots[i].key = key;                                                               \
		t->n++;                                                                              \
		*added = true;                                                                       \
		return &t->slots[i];                                                                 \
	}                                                                                        \
                                                                                                 \
	/* How far slot j is past slot i, going round. */                                        \
	static inline size_t name##_distance(const struct name *t, size_t i, size_t j)           \
	{                                                                                        \
		return j >= i ? j - i : j + t->cap - i;                                              \
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
		size_t i = kv_table_home(key, t->cap);                                               \
		while (t->slots[i].key != key) {                                                     \
			if (t->slots[i].key == 0)                                                        \
				return false;                                                                \
			i = name##_next(t, i);                                                           \
		}                                                                                    \
		/* Shift later members of the cluster back so that no probe breaks. */               \
		for (size_t j = name##_next(t, i); t->slots[j].key; j = name##_next(t, j)) {         \
			size_t home = kv_table_home(t->slots[j].key, t->cap);                            \
			if (name##_distance(t, home, j) >= name##_distance(t, i, j)) {                   \
				t->slots[i] = t->slots[j];                                                   \
				i = j;                                                                       \
			}                                                                                \
		}                                                                                    \
		t->slots[i].key = 0;                                                                 \
		t->n--;                                                                              \
		if (t->cap > 64 && 10 * t->n < t->cap)                                               \
			name##_resize(t, kv_table_smaller(t->cap));                                      \
		return true;                                                                         \
	}

#endif

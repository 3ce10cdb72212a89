/* table: open-addressing hash tables keyed by a u64, one definition per
 * entry type (KV_TABLE_DEFINE).  Linear probing, backward-shift deletion, no
 * tombstones; grows at 80% load.  Key 0 lives beside the slots (0 marks an
 * empty slot).  Entries move on insert and remove: pointers to them last
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

/* The functions of one table all sit on the line that defines it, and
 * cppcheck's whole-program check (make lint) takes them for one: none takes
 * a pointer where another takes a key, which may be 0 (a key of 0 to find
 * would be read as a null pointer passed to it). */
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
	KV_PREFETCHING void name##_prefetch(const struct name *t, uint64_t key)                  \
	{                                                                                        \
		if (t->cap)                                                                          \
			__builtin_prefetch(&t->slots[kv_mix64(key) & (t->cap - 1)]);                 \
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
	static inline void name##_resize(struct name *t, size_t cap)                             \
	{                                                                                        \
		entry_t *old = t->slots;                                                             \
		size_t oldcap = t->cap;                                                              \
		t->slots = kv_slots_alloc(cap * sizeof *t->slots);                                   \
		t->cap = cap;                                                                        \
		for (size_t j = 0; j < oldcap; j++) {                                                \
			if (old[j].key == 0)                                                             \
				continue;                                                                    \
			size_t i = kv_mix64(old[j].key) & (cap - 1);                                     \
			while (t->slots[i].key)                                                          \
				i = (i + 1) & (cap - 1);                                                     \
			t->slots[i] = old[j];                                                            \
		}                                                                                    \
		kv_slots_free(old, oldcap * sizeof *old);                                            \
	}                                                                                        \
                                                                                                 \
	/* Doubles the table where it is, without a second slot array.  Entries \
	 * are taken out in probe order, from just after an empty slot, and put   \
	 * back from their new home: one whose home is in the lower half lands at \
	 * or before the slot it left (every slot between was taken out before    \
	 * it) or, if its cluster wrapped around the old end, in the upper half;  \
	 * one whose home is in the upper half lands there.  So no slot that a    \
	 * placed entry's probe passed is emptied later.  Only an entry that      \
	 * would wrap past the new end, into slots not yet taken out, waits in    \
	 * spill until all others are placed. */                                  \
	static inline void name##_double(struct name *t)                                         \
	{                                                                                        \
		size_t oldcap = t->cap, cap = 2 * oldcap, mask = cap - 1, start = 0, nspill = 0, capspill = 0; \
		entry_t *spill = NULL;                                                               \
		t->slots = kv_slots_grow(t->slots, oldcap * sizeof *t->slots, cap * sizeof *t->slots); \
		t->cap = cap;                                                                        \
		while (t->slots[start].key)                                                          \
			start++;                                                                         \
		for (size_t k = 1; k < oldcap; k++) {                                                \
			size_t j = (start + k) & (oldcap - 1), i;                                        \
			if (t->slots[j].key == 0)                                                        \
				continue;                                                                    \
			entry_t e = t->slots[j];                                                         \
			t->slots[j].key = 0;                                                             \
			for (i = kv_mix64(e.key) & mask; i < cap && t->slots[i].key; i++)               \
				;                                                                            \
			if (i < cap) {                                                                   \
				t->slots[i] = e;                                                             \
				continue;                                                                    \
			}                                                                                \
			spill = kv_xgrow(spill, &capspill, nspill + 1, sizeof *spill);                   \
			spill[nspill++] = e;                                                             \
		}                                                                                    \
		for (size_t k = 0; k < nspill; k++) {                                                \
			size_t i = kv_mix64(spill[k].key) & mask;                                        \
			while (t->slots[i].key)                                                          \
				i = (i + 1) & mask;                                                          \
			t->slots[i] = spill[k];                                                          \
		}                                                                                    \
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
			name##_resize(t, 16);                                                            \
		else if (5 * (t->n + 1) > 4 * t->cap)                                                \
			name##_double(t);                                                                \
		size_t mask = t->cap - 1, i = kv_mix64(key) & mask;                                  \
		for (;; i = (i + 1) & mask) {                                                        \
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
	/* Empties slot i: later members of its cluster shift back so that no                    \
	 * probe breaks (only into slot i or slots after it, up to the cluster's                 \
	 * end). */                                                                              \
	static inline void name##_unslot(struct name *t, size_t i)                               \
	{                                                                                        \
		size_t mask = t->cap - 1;                                                            \
		for (size_t j = (i + 1) & mask; t->slots[j].key; j = (j + 1) & mask) {               \
			size_t home = kv_mix64(t->slots[j].key) & mask;                                  \
			if (((j - home) & mask) >= ((j - i) & mask)) {                                   \
				t->slots[i] = t->slots[j];                                                   \
				i = j;                                                                       \
			}                                                                                \
		}                                                                                    \
		t->slots[i].key = 0;                                                                 \
		t->n--;                                                                              \
	}                                                                                        \
                                                                                                 \
	/* Below 10% load the table halves (to no fewer than 64 slots). */                       \
	static inline void name##_shrink(struct name *t)                                         \
	{                                                                                        \
		size_t cap = t->cap;                                                                 \
		while (cap > 64 && 10 * t->n < cap)                                                  \
			cap /= 2;                                                                        \
		if (cap != t->cap)                                                                   \
			name##_resize(t, cap);                                                           \
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
		size_t mask = t->cap - 1, i = kv_mix64(key) & mask;                                  \
		while (t->slots[i].key != key) {                                                     \
			if (t->slots[i].key == 0)                                                        \
				return false;                                                                \
			i = (i + 1) & mask;                                                              \
		}                                                                                    \
		name##_unslot(t, i);                                                                 \
		if (t->cap > 64 && 10 * t->n < t->cap)                                               \
			name##_resize(t, t->cap / 2);                                                    \
		return true;                                                                         \
	}                                                                                        \
                                                                                                 \
	/* Calls gone once for every entry, in no particular order, and removes                  \
	 * those it returns true for (it may change an entry's other fields, not                 \
	 * its key, and must not change the table); returns how many went.  The                  \
	 * walk starts after an empty slot: a removal then shifts only entries not               \
	 * yet seen, into the slot just emptied, which is looked at again. */                    \
	static inline size_t name##_remove_if(struct name *t, bool (*gone)(entry_t *e, void *arg), \
						  void *arg)                                                         \
	{                                                                                        \
		size_t removed = 0;                                                                  \
		if (t->n) {                                                                          \
			size_t mask = t->cap - 1, start = 0;                                             \
			while (t->slots[start].key)                                                      \
				start++;                                                                     \
			for (size_t k = 1; k < t->cap;) {                                                \
				size_t i = (start + k) & mask;                                               \
				if (t->slots[i].key && gone(&t->slots[i], arg)) {                            \
					name##_unslot(t, i);                                                     \
					removed++;                                                               \
				} else {                                                                     \
					k++;                                                                     \
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

/* The body of find, for the const and the other variant. */
#define KV_TABLE_FIND_(t, key)                                                               \
	do {                                                                                     \
		if ((key) == 0)                                                                      \
			return (t)->has_zero ? &(t)->zero : NULL;                                        \
		if (!(t)->cap)                                                                       \
			return NULL;                                                                     \
		size_t mask_ = (t)->cap - 1, i_ = kv_mix64(key) & mask_;                             \
		for (;; i_ = (i_ + 1) & mask_) {                                                     \
			if ((t)->slots[i_].key == (key))                                                 \
				return &(t)->slots[i_];                                                      \
			if ((t)->slots[i_].key == 0)                                                     \
				return NULL;                                                                 \
		}                                                                                    \
	} while (0)

#endif

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
			__builtin_prefetch(&t->slots[kv_mix64(key) & (t->cap - 1)]);                 \
	}                                                                                        \
                                                                                                 \
	static inline entry_t *name##_find(struct name *t, uint64_t key)                         \
	{                                                                                        \
		if (key == 0)                                                                        \
			return t->has_zero ? &t->zero : NULL;                                            \
		if (!t->cap)                                                                         \
			return NULL;                                                                     \
		size_t mask = t->cap - 1, i = kv_mix64(key) & mask;                                  \
		for (;; i = (i + 1) & mask) {                                                        \
			if (t->slots[i].key == key)                                                      \
				return &t->slots[i];                                                         \
			if (t->slots[i].key == 0)                                                        \
				return NULL;                                                                 \
		}                                                                                    \
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
		/* Shift later members of the cluster back so that no probe breaks. */               \
		for (size_t j = (i + 1) & mask; t->slots[j].key; j = (j + 1) & mask) {               \
			size_t home = kv_mix64(t->slots[j].key) & mask;                                  \
			if (((j - home) & mask) >= ((j - i) & mask)) {                                   \
				t->slots[i] = t->slots[j];                                                   \
				i = j;                                                                       \
			}                                                                                \
		}                                                                                    \
		t->slots[i].key = 0;                                                                 \
		t->n--;                                                                              \
		if (t->cap > 64 && 10 * t->n < t->cap)                                               \
			name##_resize(t, t->cap / 2);                                                    \
		return true;                                                                         \
	}

#endif

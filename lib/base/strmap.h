/* strmap: string keys to small ids, for the names the programs meet
 * (sources, endpoints, hosts, metric families).  A key is a byte string
 * (any bytes, empty too) and a number beside it, 0 for plain strings.
 * Entries get ids 0, 1, 2, ... in order of addition, so that an array
 * beside the map holds what each key names and walking the ids is a
 * deterministic order; each entry also carries a u32 value of its own.
 * Nothing is removed but all at once (kv_strmap_clear).  The map keeps its
 * own copy of each key, or refers to the caller's bytes, which must then
 * outlive the entry.  Built on table.h: the XXH3 hash of each key is a
 * table key, naming the first entry of that hash; entries of one hash are
 * chained. */
#ifndef KV_STRMAP_H
#define KV_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <xxhash.h>

#include "base/table.h"

#define KV_STRMAP_NONE UINT32_MAX

struct kv_strmap_entry {
	const char *key;       /* NUL-terminated when the map copied it */
	size_t len;
	int64_t num;
	uint32_t value;
	uint32_t next;         /* the next entry of the same hash, or KV_STRMAP_NONE */
};

struct kv_strmap_head {
	uint64_t key;          /* the hash of a key */
	uint32_t first;        /* the last entry added with it */
};

KV_TABLE_DEFINE(kv_strmap_heads, struct kv_strmap_head)

struct kv_strmap {
	struct kv_strmap_heads heads;
	struct kv_strmap_entry *v;
	size_t n, cap;
	bool copies;           /* keys are the map's own copies */
};

/* copies: the map copies each key it adds; else it keeps the caller's pointer. */
void kv_strmap_init(struct kv_strmap *m, bool copies);
void kv_strmap_free(struct kv_strmap *m);
/* Empties the map and keeps its memory for what comes next. */
void kv_strmap_clear(struct kv_strmap *m);

/* XXH3 of the key, seeded with its number.  Seed 0 gives unseeded XXH3,
 * which the library computes in fewer steps: plain keys take that way. */
static inline uint64_t kv_strmap_hash(const char *key, size_t len, int64_t num)
{
	return num ? XXH3_64bits_withSeed(key, len, (uint64_t)num) : XXH3_64bits(key, len);
}

/* The id of (key, num) under the hash the caller computed for it; every
 * lookup and addition of one map must hash a key alike (kv_strmap_hash
 * does, and the functions below use it).  For tests that want collisions. */
static inline uint32_t kv_strmap_find_hashed(struct kv_strmap *m, uint64_t hash, const char *key, size_t len,
					     int64_t num)
{
	const struct kv_strmap_head *h = kv_strmap_heads_find(&m->heads, hash);
	for (uint32_t id = h ? h->first : KV_STRMAP_NONE; id != KV_STRMAP_NONE; id = m->v[id].next) {
		const struct kv_strmap_entry *e = &m->v[id];
		if (e->len == len && e->num == num && (len == 0 || memcmp(e->key, key, len) == 0))
			return id;
	}
	return KV_STRMAP_NONE;
}

/* Adds (key, num) with value and returns its id, the next one; when the key
 * is there already, its id, its value left as it was. */
uint32_t kv_strmap_add_hashed(struct kv_strmap *m, uint64_t hash, const char *key, size_t len, int64_t num,
			      uint32_t value);

/* The id of key with number num, or KV_STRMAP_NONE. */
static inline uint32_t kv_strmap_find_num(struct kv_strmap *m, const char *key, size_t len, int64_t num)
{
	return kv_strmap_find_hashed(m, kv_strmap_hash(key, len, num), key, len, num);
}

static inline uint32_t kv_strmap_find(struct kv_strmap *m, const char *key, size_t len)
{
	return kv_strmap_find_num(m, key, len, 0);
}

static inline uint32_t kv_strmap_add_num(struct kv_strmap *m, const char *key, size_t len, int64_t num,
					 uint32_t value)
{
	return kv_strmap_add_hashed(m, kv_strmap_hash(key, len, num), key, len, num, value);
}

static inline uint32_t kv_strmap_add(struct kv_strmap *m, const char *key, size_t len, uint32_t value)
{
	return kv_strmap_add_num(m, key, len, 0, value);
}

static inline size_t kv_strmap_count(const struct kv_strmap *m) { return m->n; }

/* Entry id, for id < kv_strmap_count. */
static inline const struct kv_strmap_entry *kv_strmap_at(const struct kv_strmap *m, uint32_t id)
{
	return &m->v[id];
}

#endif

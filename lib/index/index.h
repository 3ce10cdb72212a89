/* index: the prefix index.  Partitions by (model, tenant) (a LoRA adapter
 * is a partition of its own); in each, blocks keyed by prefix chain with
 * their parent chain, local hash and holder set, and the engine-hash map
 * that names blocks by the hashes engines publish.  A holder is a worker id
 * with a bit per medium; a block exists exactly as long as someone holds it.
 *
 * Holder sets are interned, for all partitions at once: most blocks of a
 * prefix have the same holders, so a block stores only the u32 id of its set
 * (kv_holder_sets).  A set is stored once (its sorted holders), found by the
 * hash of its content, counted by the blocks that have it, and freed, its id
 * taken again, when the last of them has left it (a small one after a while
 * idle, index.c says why).  A change of one block's holders (one worker gains
 * or loses media) goes from set to set through a small direct-mapped cache
 * of transitions, so that the usual change costs a probe of that cache, not
 * a hash or a copy of the set.  A large set that only one block has is
 * changed in place instead of copied.  The empty set (id 0) is never
 * stored: a block without holders is removed. */
#ifndef KV_INDEX_H
#define KV_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/medium.h"
#include "base/table.h"

#define KV_HOLDER(worker, bits) ((uint32_t)(worker) << 3 | (bits))
#define KV_HOLDER_WORKER(h) ((h) >> 3)
#define KV_HOLDER_MEDIA(h) ((h) & 7u)
#define KV_MEDIUM_BIT(m) (1u << (m))
#define KV_MAX_WORKERS (1u << 24)
/* A block's holder count is 16 bits: one more holder is refused (counted in
 * kv_index.refused), never wrapped. */
#define KV_MAX_HOLDERS UINT16_MAX
/* What events may add (kvmatch(1), LIMITS): partitions are never freed and
 * each lookup scans them, so made-up model, tenant or LoRA names must not
 * add them without end; names are copied into every partition. */
#define KV_MAX_PARTITIONS 4096u
#define KV_MAX_PARTITION_NAME 1024u
#define KV_NO_PARTITION UINT32_MAX
/* --expect-blocks at most: a snapshot numbers a partition's blocks in 32
 * bits, so no index kvmatch can write holds more in one partition. */
#define KV_MAX_EXPECT_BLOCKS ((uint64_t)UINT32_MAX)

/* 28 bytes, not 32: the blocks table is the index's largest (packed, at
 * 4-byte alignment; x86-64 and arm64 load such fields as fast).  The set
 * comes right after the key, read with it on every change of holders: an
 * entry's first 12 bytes cross a cache line in 2 of 16 places, its last 4
 * in 6 of them. */
struct __attribute__((packed, aligned(4))) kv_block {
	uint64_t key;          /* prefix chain */
	uint32_t set;          /* its holder set (kv_holder_sets) */
	uint64_t parent;       /* chain of the block before it (KV_CHAIN_ROOT for the first) */
	uint64_t local;
};
_Static_assert(sizeof(struct kv_block) == 28, "kv_block is packed");
KV_TABLE_DEFINE(kv_blocks, struct kv_block)

struct kv_ehash {
	uint64_t key;          /* engine hash */
	uint64_t chain;
};
KV_TABLE_DEFINE(kv_ehashes, struct kv_ehash)

/* Holder lists of sets with two or more holders, in power-of-two size classes. */
struct kv_holder_arena {
	uint32_t *a;
	size_t len, cap;
	uint32_t free[32];     /* per class: offset + 1 of a free list head, 0 if none */
};

/* One holder set, by id. */
struct kv_hset {
	uint64_t hash;         /* of its content: the sum of kv_mix64 of its holders */
	uint64_t refs;         /* blocks that have it; 0 while it is idle or the id is free */
	uint32_t members;      /* the holder itself when n == 1, else its offset in the arena; when free, the next free id */
	uint32_t gen;          /* bumped whenever the id's content changes or the id is freed: cached transitions miss */
	uint16_t n;            /* number of holders; 0 while the id is free */
};

/* Content hash -> set id.  Two sets whose hashes collide are both kept; only
 * the first is found by its hash (the other one is simply not shared). */
struct kv_setid {
	uint64_t key;
	uint32_t id;
	uint32_t pad;
};
KV_TABLE_DEFINE(kv_setids, struct kv_setid)

/* A change of holder set seen before: from + change -> to, and what it did. */
struct kv_transition {
	uint32_t from, from_gen;
	uint32_t change;       /* worker << 4 | media bits << 1 | hold; 0 in an unused entry */
	uint32_t to, to_gen;
	uint8_t media;         /* the media bits that changed */
	int8_t holders;        /* +1: the worker is a new holder, -1: no longer one, 0: neither */
};

#define KV_TRANSITIONS (1u << 14)
/* Sets of more holders are freed as soon as no block has them, and changed
 * in place when only one block has them: no copy of a large set per change. */
#define KV_SET_KEEP_MAX 64

struct kv_holder_sets {
	struct kv_hset *v;     /* by id; v[0] is the empty set */
	size_t n, cap;         /* ids in use or free */
	uint32_t free;         /* first free id, 0 if none */
	size_t live, idle;     /* sets that blocks have; sets that none has, kept a while (index.c) */
	size_t idle_max;       /* idle sets kept at least before they are freed */
	struct kv_holder_arena arena;
	struct kv_setids byhash;
	struct kv_transition *cache; /* KV_TRANSITIONS entries, by a hash of (from, change) */
	uint32_t *scratch;     /* a new set's holders while it is made */
	size_t capscratch;
};

struct kv_partition {
	char *model, *tenant;
	uint32_t block_size;   /* 0 until known */
	struct kv_blocks blocks;
	struct kv_ehashes ehashes;
	uint64_t holdings;     /* (block, worker) pairs */
	uint64_t ehash_mark;   /* engine hashes after the last stale sweep (match.c) */
	bool stale_possible;   /* content expired since that sweep */
};

struct kv_index {
	struct kv_partition *p;
	size_t n, cap;
	struct kv_holder_sets sets;
	uint64_t *held;        /* blocks held per worker and medium: [worker * KV_NMEDIA + medium] */
	size_t capheld;
	uint64_t refused;      /* holders refused: their block had KV_MAX_HOLDERS already */
	/* The first partition's block and engine-hash tables are made for this
	 * many blocks when it is created (kvmatch --expect-blocks), so that no
	 * growth copies them while they fill; 0: every table grows as it fills.
	 * Later partitions grow: the memory taken ahead is never more than the
	 * user asked for. */
	uint64_t expect_blocks;
};

/* Blocks worker w holds in medium m, over all partitions. */
uint64_t kv_index_held(const struct kv_index *ix, uint32_t w, enum kv_medium m);

void kv_index_init(struct kv_index *ix);
void kv_index_free(struct kv_index *ix);
/* The partition of (model, tenant), created on first use. */
uint32_t kv_index_partition(struct kv_index *ix, const char *model, size_t mlen, const char *tenant, size_t tlen);
/* The same for events: KV_NO_PARTITION instead of creating a partition
 * beyond KV_MAX_PARTITIONS, or one with a name longer than KV_MAX_PARTITION_NAME. */
uint32_t kv_index_partition_bounded(struct kv_index *ix, const char *model, size_t mlen, const char *tenant,
				    size_t tlen);
/* -1 when there is no such partition. */
int64_t kv_index_find_partition(const struct kv_index *ix, const char *model, const char *tenant);

/* A block's holders, sorted by worker, and their number: the only way
 * anything outside index.c reads them.  The pointer lasts until the next
 * change of the index. */
static inline const uint32_t *kv_block_holders(const struct kv_index *ix, const struct kv_block *b)
{
	const struct kv_hset *h = &ix->sets.v[b->set];
	return h->n <= 1 ? &h->members : ix->sets.arena.a + h->members;
}
static inline size_t kv_block_nholders(const struct kv_index *ix, const struct kv_block *b)
{
	return ix->sets.v[b->set].n;
}
/* Media bits of worker w in block b (0: not a holder). */
unsigned kv_block_media(const struct kv_index *ix, const struct kv_block *b, uint32_t w);

/* Makes w hold the block in medium m, creating the block; true when that is
 * new.  A new holder of a block that has KV_MAX_HOLDERS is refused: false,
 * and ix->refused counts it. */
bool kv_index_hold(struct kv_index *ix, uint32_t part, uint64_t chain, uint64_t parent, uint64_t local,
		   uint32_t w, enum kv_medium m);
/* kv_index_hold for several workers with one lookup; returns how many were new. */
size_t kv_index_hold_many(struct kv_index *ix, uint32_t part, uint64_t chain, uint64_t parent, uint64_t local,
			  const uint32_t *w, size_t n, enum kv_medium m);
/* w stops holding chain in medium m.  Returns false when it did not hold it;
 * *freed tells whether the block went away (its parent and local returned). */
bool kv_index_release(struct kv_index *ix, uint32_t part, uint64_t chain, uint32_t w, enum kv_medium m,
		      bool *freed, uint64_t *parent, uint64_t *local);
/* kv_index_release for several workers with one lookup; returns how many held it. */
size_t kv_index_release_many(struct kv_index *ix, uint32_t part, uint64_t chain, const uint32_t *w, size_t n,
			     enum kv_medium m, bool *freed, uint64_t *parent, uint64_t *local);
/* Calls back for every block w holds in one of the media of mask, after which
 * w no longer holds it there; returns the number of holdings dropped. */
size_t kv_index_release_all(struct kv_index *ix, uint32_t part, uint32_t w, unsigned mask,
			    void (*freed)(void *arg, uint32_t part, const struct kv_block *b), void *arg);

uint64_t kv_index_blocks(const struct kv_index *ix);
uint64_t kv_index_holdings(const struct kv_index *ix);

#endif

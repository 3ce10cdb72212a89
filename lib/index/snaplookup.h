/* snaplookup: lookups on a loaded snapshot (kv_snap_*), what kvquery runs
 * by the million: blocks are columns, sorted by chain within their
 * partition; a lookup reads the slot of the chain's top bits in the
 * directory built at load, binary-searches the few chains of that slot,
 * then reads the block's set and run at its position. */
#ifndef KV_SNAPLOOKUP_H
#define KV_SNAPLOOKUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "index/snap.h"

/* A block is its position in the block columns (of the whole file: a
 * partition's blocks are its range of them); kv_snap_find's "none". */
#define KV_SNAP_NO_BLOCK UINT64_MAX
/* A block's set (an index into SETS) and run. */
static inline uint32_t kv_snap_block_set(const struct kv_snap *s, uint64_t b)
{
	return s->block_sets[b];
}
static inline unsigned kv_snap_block_run(const struct kv_snap *s, uint64_t b)
{
	return s->runs[b];
}
/* The holders of a block (validated: always in bounds), and their number. */
static inline const uint32_t *kv_snap_holders(const struct kv_snap *s, uint64_t b, size_t *n)
{
	const struct kv_snap_set *st = &s->sets[s->block_sets[b]];
	*n = st->nholders;
	return s->holders + st->holders_first;
}
/* The chain of the block that engine hash i (of EHASHES, in partition
 * part's range) names. */
static inline uint64_t kv_snap_named_chain(const struct kv_snap *s, uint32_t part, uint64_t i)
{
	return s->chains[s->partitions[part].r[KV_RANGE_BLOCKS].first + s->ehash_blocks[i]];
}
/* The chain of a block's parent (KV_CHAIN_ROOT for a first block); needs
 * KV_SNAP_PART_EHASHES read. */
uint64_t kv_snap_parent(const struct kv_snap *s, uint32_t part, uint64_t b);
/* The block of partition part with this chain, or KV_SNAP_NO_BLOCK. */
uint64_t kv_snap_find(const struct kv_snap *s, uint32_t part, uint64_t chain);
/* The chain an engine hash names in a partition (the map kvmatch learned
 * from stored events); false when the snapshot does not know it. */
bool kv_snap_ehash_chain(const struct kv_snap *s, uint32_t part, uint64_t ehash, uint64_t *chain);
/* Lookups ahead: stage 0 fetches the directory slot of chain, stage 1 its
 * chains, set and run (which needs the slot to have arrived). */
void kv_snap_prefetch(const struct kv_snap *s, uint32_t part, uint64_t chain, int stage);
/* -1 when no partition has this model and tenant. */
int64_t kv_snap_partition(const struct kv_snap *s, const char *model, size_t mlen, const char *tenant, size_t tlen);
/* (block, worker) pairs held: each block's set counted. */
uint64_t kv_snap_holdings(const struct kv_snap *s);

#endif

/* snaplookup: lookups on a loaded snapshot (snaplookup.h says what it
 * owns). */
#include "index/snaplookup.h"
#include "index/snap.h"
#include "index/blockhash.h"

#include <stdint.h>
#include <string.h>

uint64_t kv_snap_find(const struct kv_snap *s, uint32_t part, uint64_t chain)
{
	const struct kv_snap_partition *p = &s->partitions[part];
	const uint64_t *c = s->chains + p->r[KV_RANGE_BLOCKS].first;
	size_t n = p->r[KV_RANGE_BLOCKS].count, lo = 0, hi = n;
	if (s->dir && s->dir[part]) {
		uint64_t k = chain >> (64 - s->dirbits[part]);
		lo = s->dir[part][k];
		hi = s->dir[part][k + 1];
		/* a slot holds two chains on average: up to four are counted
		 * without branching on what they hold (a search's branches go
		 * either way, and a mispredicted one cost a lookup as much as
		 * its work), reading only the slot's (kv_snap_prefetch fetches
		 * its first and last) */
		if (hi > lo && hi - lo <= 4) {
			size_t last = hi - lo - 1, below = 0;
			for (size_t i = 0; i < 4; i++)
				below += (i <= last) & (c[lo + (i < last ? i : last)] < chain);
			lo += below;
			hi = lo;
		}
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c[mid] < chain)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && c[lo] == chain ? p->r[KV_RANGE_BLOCKS].first + lo : KV_SNAP_NO_BLOCK;
}

/* The first of n sorted u64 keys, stride bytes apart, not less than key. */
static size_t lower_bound(const void *base, size_t stride, size_t n, uint64_t key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;
		memcpy(&k, (const char *)base + mid * stride, sizeof k);
		if (k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool kv_snap_ehash_chain(const struct kv_snap *s, uint32_t part, uint64_t ehash, uint64_t *chain)
{
	const struct kv_snap_partition *rp = &s->partitions[part];
	const struct kv_snap_range *r = &rp->r[KV_RANGE_EHASHES], *st = &rp->r[KV_RANGE_STALE];
	size_t i = lower_bound(s->ehashes + r->first, sizeof *s->ehashes, r->count, ehash); /* sorted: checked */
	if (i < r->count && s->ehashes[r->first + i] == ehash) {
		*chain = kv_snap_named_chain(s, part, r->first + i);
		return true;
	}
	i = lower_bound(s->stale + st->first, sizeof *s->stale, st->count, ehash);
	if (i < st->count && s->stale[st->first + i].ehash == ehash) {
		*chain = s->stale[st->first + i].chain;
		return true;
	}
	return false;
}

uint64_t kv_snap_parent(const struct kv_snap *s, uint32_t part, uint64_t b)
{
	const struct kv_snap_partition *rp = &s->partitions[part];
	uint32_t parent = s->parents[b];
	if (parent == KV_SNAP_PARENT_ROOT)
		return KV_CHAIN_ROOT;
	if (parent != KV_SNAP_PARENT_ORPHAN)
		return s->chains[rp->r[KV_RANGE_BLOCKS].first + parent];
	/* one orphan record for each block so marked: checked at load */
	const struct kv_snap_range *r = &rp->r[KV_RANGE_ORPHANS];
	uint32_t self = (uint32_t)(b - rp->r[KV_RANGE_BLOCKS].first);
	size_t lo = 0, hi = r->count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->orphans[r->first + mid].block < self)
			lo = mid + 1;
		else
			hi = mid;
	}
	return s->orphans[r->first + lo].parent;
}

void kv_snap_prefetch(const struct kv_snap *s, uint32_t part, uint64_t chain, int stage)
{
	if (!s->dir || !s->dir[part])
		return;
	const uint32_t *d = s->dir[part] + (chain >> (64 - s->dirbits[part]));
	if (stage == 0) {
		__builtin_prefetch(d);
		return;
	}
	/* the chains of the slot (one or two on average, two lines at most),
	 * and the set and run of its first */
	uint64_t at = s->partitions[part].r[KV_RANGE_BLOCKS].first + d[0];
	__builtin_prefetch(&s->chains[at]);
	__builtin_prefetch(&s->block_sets[at]);
	__builtin_prefetch(&s->runs[at]);
	if (d[1] > d[0] + 1)
		__builtin_prefetch(&s->chains[at + (d[1] - d[0]) - 1]);
}

int64_t kv_snap_partition(const struct kv_snap *s, const char *model, size_t mlen, const char *tenant, size_t tlen)
{
	for (size_t i = 0; i < s->npartitions; i++) {
		size_t a, b;
		const char *m = kv_snap_string(s, s->partitions[i].model, &a);
		const char *t = kv_snap_string(s, s->partitions[i].tenant, &b);
		if (a == mlen && b == tlen && memcmp(m, model, a) == 0 && memcmp(t, tenant, b) == 0)
			return (int64_t)i;
	}
	return -1;
}

uint64_t kv_snap_holdings(const struct kv_snap *s)
{
	uint64_t n = 0;
	for (size_t i = 0; i < s->nblocks; i++)
		n += s->sets[s->block_sets[i]].nholders;
	return n;
}

#define _GNU_SOURCE /* qsort_r */
#include "index/snapstate.h"
#include "index/blockhash.h"
#include "base/sort.h"
#include "base/thread.h"
#include "index/snaplookup.h"
#include "index/snapwrite.h"
#include "base/util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* ---- the index's sections ------------------------------------------------ */

static int by_partition_name(const void *x, const void *y, void *ctx)
{
	const struct kv_index *ix = ctx;
	const struct kv_partition *a = &ix->p[*(const uint32_t *)x], *b = &ix->p[*(const uint32_t *)y];
	int c = strcmp(a->model, b->model);
	return c ? c : strcmp(a->tenant, b->tenant);
}

/* 1 + the snapshot position of the partition a worker's registration
 * names (kvquery --shared-pool's candidates), 0 for a worker registered
 * as no engine's, inferred or a pool holder. */
static uint32_t registered_partition(const struct kv_snap_writer *b, const struct kv_index *ix,
				     const struct kv_worker *w)
{
	if (w->inferred || w->pool || !w->model)
		return 0;
	int64_t p = kv_index_find_partition(ix, w->model, w->tenant ? w->tenant : "default");
	return p < 0 ? 0 : b->pmap[p] + 1;
}

static void build_workers(struct kv_snap_writer *b, const struct kv_index *ix, const struct kv_workers *ws)
{
	uint32_t *order = kv_xmalloc((ws->n + 1) * sizeof *order);
	for (uint32_t i = 0; i < ws->n; i++)
		order[i] = i;
	kv_workers_sort(ws, order, ws->n);
	b->wmap = kv_xmalloc((ws->n + 1) * sizeof *b->wmap);
	for (uint32_t k = 0; k < ws->n; k++) {
		const struct kv_worker *w = &ws->v[order[k]];
		b->wmap[order[k]] = k;
		struct kv_snap_worker r = {
			kv_snapw_string(b, w->instance_id), kv_snapw_string(b, w->host),
			w->pool ? 0u : (uint32_t)w->dp_rank, (w->inferred ? 1u : 0u) | (w->pool ? 2u : 0u), w->block_size,
			registered_partition(b, ix, w),
		};
		kv_snapw_add(b, KV_SEC_WORKERS, &r, 1);
	}
	free(order);
}

#define BUILD_AHEAD 16

/* A partition's holder sets, interned: blocks of one prefix mostly share
 * their holders, so each distinct set is written once.  Keyed by the set's
 * XXH3-64 (a collision moves on to the next key: ids are compared by
 * content). */
struct set_entry {
	uint64_t key;
	uint32_t id;
};
KV_TABLE_DEFINE(set_table, struct set_entry)

static bool same_set(const struct kv_snap_writer *b, uint32_t id, const uint32_t *hs, size_t n)
{
	const struct kv_snap_set *st = (const struct kv_snap_set *)b->sec[KV_SEC_SETS].p + id;
	const uint32_t *h = (const uint32_t *)b->sec[KV_SEC_HOLDERS].p + st->holders_first;
	return st->nholders == n && memcmp(h, hs, n * sizeof *hs) == 0;
}

/* The set's id, added in the order sets are first met (canonical). */
static uint32_t intern_set(struct kv_snap_writer *b, struct set_table *t, const uint32_t *hs, size_t n)
{
	uint64_t key = XXH3_64bits(hs, n * sizeof *hs);
	for (;; key = kv_mix64(key + 1)) {
		bool added;
		struct set_entry *e = set_table_upsert(t, key, &added);
		if (added) {
			uint64_t id = kv_snapw_records(b, KV_SEC_SETS), first = kv_snapw_records(b, KV_SEC_HOLDERS);
			struct kv_snap_set st = { (uint32_t)first, (uint32_t)n };
			if (id >= UINT32_MAX || first + n > UINT32_MAX)
				kv_die(KV_EX_SOFTWARE, "snapshot: holder sets beyond 2^32 entries");
			e->id = (uint32_t)id;
			kv_snapw_add(b, KV_SEC_SETS, &st, 1);
			kv_snapw_add(b, KV_SEC_HOLDERS, hs, n);
			return e->id;
		}
		if (same_set(b, e->id, hs, n))
			return e->id;
	}
}

/* The snapshot's set of each live set met in a partition, by the live
 * set's id (NO_SET until met), so that translating, sorting and hashing
 * holders is done once a set, not once a block. */
#define NO_SET UINT32_MAX

/* A block's holders as snapshot workers, sorted (the snapshot's worker
 * order is not the live one). */
static const uint32_t *snapshot_holders(const struct kv_snap_writer *b, const struct kv_index *ix,
					 const struct kv_block *blk, uint32_t **hs, size_t *hcap, size_t *n)
{
	const uint32_t *h = kv_block_holders(ix, blk);
	size_t nh = kv_block_nholders(ix, blk);
	if (nh > *hcap) {
		*hcap = nh;
		*hs = kv_xrealloc(*hs, *hcap * sizeof **hs);
	}
	uint32_t *o = *hs;
	for (size_t k = 0; k < nh; k++)
		o[k] = KV_HOLDER(b->wmap[KV_HOLDER_WORKER(h[k])], KV_HOLDER_MEDIA(h[k]));
	kv_sort_u32(o, nh); /* few holders, mostly in order: its insertion sort */
	*n = nh;
	return o;
}

#define NO_POS UINT32_MAX
#define RUN_UNKNOWN UINT32_MAX
/* Walkers mark the blocks they walk with their number, below RUN_UNKNOWN. */
#define WALKERS 16
#define RUN_WALKED_BY(c) (RUN_UNKNOWN - 1 - (uint32_t)(c))
#define RUN_KNOWN(r) ((r) < RUN_WALKED_BY(WALKERS - 1))

/* What working out runs needs of a block, in one place: following a chain
 * of parents costs one cache miss a block, not three.  Nodes take the place
 * of the blocks' bucket records as those are read (build_blocks). */
struct run_node {
	uint64_t parent_chain;
	uint32_t parent;  /* its position in chain order, NO_POS when not held */
	uint32_t set;
	uint32_t run;
};

/* A partition's block chains in order, and where each prefix of their top
 * bits starts among them: chains are uniform, so a chain is found with a
 * read of the directory and one of the keys (sorting the chains looked for
 * and merging them with the keys took twice the time). */
struct key_dir {
	const uint64_t *keys;
	uint32_t *dir;
	unsigned shift;
};

static struct key_dir key_dir_build(const uint64_t *keys, size_t n)
{
	unsigned bits = 0;
	while (bits < 30 && ((size_t)2 << bits) <= n)
		bits++;
	struct key_dir d = { keys, kv_xcalloc(((size_t)1 << bits) + 1, sizeof *d.dir), 64 - bits };
	for (size_t i = 0; i < n; i++)
		d.dir[bits ? (keys[i] >> d.shift) + 1 : 1]++;
	for (size_t k = 1; k <= (size_t)1 << bits; k++)
		d.dir[k] += d.dir[k - 1];
	return d;
}

static size_t key_slot(const struct key_dir *d, uint64_t chain)
{
	return d->shift < 64 ? (size_t)(chain >> d->shift) : 0;
}

/* The position of chain among the keys, or NO_POS (a binary search within
 * the slot: keys that are not uniform cost a logarithm, not a scan). */
static uint32_t key_find(const struct key_dir *d, uint64_t chain)
{
	size_t k = key_slot(d, chain), lo = d->dir[k], hi = d->dir[k + 1];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->keys[mid] < chain)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->dir[k + 1] && d->keys[lo] == chain ? (uint32_t)lo : NO_POS;
}

/* Where each of n chains (one each cstride bytes) is among the keys, into
 * pos (one each stride bytes): the slots and keys of those ahead fetched
 * meanwhile. */
static void positions_of(const void *chains, size_t cstride, size_t n, const struct key_dir *d, uint32_t *pos,
			 size_t stride)
{
	const char *c = chains;
	for (size_t i = 0; i < n; i++) {
		if (i + 2 * BUILD_AHEAD < n)
			__builtin_prefetch(&d->dir[key_slot(d, *(const uint64_t *)(c + (i + 2 * BUILD_AHEAD) * cstride))]);
		if (i + BUILD_AHEAD < n)
			__builtin_prefetch(&d->keys[d->dir[key_slot(d, *(const uint64_t *)(c + (i + BUILD_AHEAD) * cstride))]]);
		*(uint32_t *)((char *)pos + i * stride) = key_find(d, *(const uint64_t *)(c + i * cstride));
	}
}

/* A block's run from its parent's: one more when the parent is held with
 * the same set (a parent still being walked closes a cycle of chains,
 * which only a hash collision could make: the cycle is cut there). */
static uint32_t run_after(const struct run_node *node, uint32_t b)
{
	uint32_t up = node[b].parent;
	if (up == NO_POS || node[up].set != node[b].set || !RUN_KNOWN(node[up].run))
		return 0;
	return node[up].run + 1;
}

/* One walk up a chain of parents with the same set, to a block whose run
 * is known (or to where the set changes); on the way back down each block
 * walked gets its run. */
struct walker {
	uint32_t *stack;
	size_t depth, cap;
	uint32_t at;      /* the block to look at next (fetched meanwhile) */
	uint32_t set;
	bool busy;
};

static void walker_push(struct walker *w, uint32_t b)
{
	w->stack = kv_xgrow(w->stack, &w->cap, w->depth + 1, sizeof *w->stack);
	w->stack[w->depth++] = b;
}

static void walker_finish(struct walker *w, struct run_node *node)
{
	while (w->depth) {
		uint32_t b = w->stack[--w->depth];
		node[b].run = run_after(node, b);
	}
	w->busy = false;
}

/* One step of walker c: false when it waits for another walker to finish
 * the block it reached. */
static bool walker_step(struct walker *w, uint32_t c, struct run_node *node)
{
	uint32_t x = w->at, r = node[x].run;
	if (w->depth && (node[x].set != w->set || RUN_KNOWN(r) || r == RUN_WALKED_BY(c))) {
		walker_finish(w, node); /* another set, a run known, or a cycle */
		return true;
	}
	if (r != RUN_UNKNOWN)
		return false;
	node[x].run = RUN_WALKED_BY(c);
	walker_push(w, x);
	if (node[x].parent == NO_POS) {
		walker_finish(w, node);
		return true;
	}
	w->at = node[x].parent;
	__builtin_prefetch(&node[w->at]);
	return true;
}

/* Each block's run (kvsnap(5)): how many ancestors just before it are
 * held with its set.  Parents come anywhere in chain order, so a block's
 * ancestors not yet known are walked first, each block once.  Following
 * parents is a cache miss a step: WALKERS walks go on at once, each
 * fetching its next block while the others step, so that the misses
 * overlap.  Runs do not depend on the order blocks are walked in (a
 * cycle, which a hash collision alone could make, is cut where the walks
 * meet it, the same way on every run). */
static void block_runs(struct run_node *node, size_t n)
{
	if (n >= RUN_WALKED_BY(WALKERS))
		kv_die(KV_EX_SOFTWARE, "snapshot: %zu blocks in one partition", n);
	struct walker w[WALKERS] = { 0 };
	for (size_t i = 0; i < n; i++)
		node[i].run = RUN_UNKNOWN;
	size_t next = 0;
	for (;;) {
		bool any = false, moved = false;
		for (uint32_t c = 0; c < WALKERS; c++) {
			while (!w[c].busy && next < n)
				if (node[next++].run == RUN_UNKNOWN) {
					w[c] = (struct walker){ w[c].stack, 0, w[c].cap, (uint32_t)(next - 1),
								node[next - 1].set, true };
					__builtin_prefetch(&node[w[c].at]);
				}
			if (!w[c].busy)
				continue;
			any = true;
			moved |= walker_step(&w[c], c, node);
		}
		if (!any)
			break;
		/* every walker waits for another: they met on a cycle of chains */
		for (uint32_t c = 0; !moved && c < WALKERS; c++)
			if (w[c].busy) {
				walker_finish(&w[c], node);
				moved = true;
			}
	}
	for (uint32_t c = 0; c < WALKERS; c++)
		free(w[c].stack);
}

/* A block's parent as the file says it: its position, or where to find
 * its chain (kvsnap(5)). */
static uint32_t parent_field(struct kv_snap_writer *b, uint32_t pos, uint32_t self, uint64_t parent)
{
	if (pos != NO_POS)
		return pos;
	if (parent == KV_CHAIN_ROOT)
		return KV_SNAP_PARENT_ROOT;
	struct kv_snap_orphan o = { self, 0, parent };
	kv_snapw_add(b, KV_SEC_ORPHANS, &o, 1);
	return KV_SNAP_PARENT_ORPHAN;
}

/* Room for n records more in a section, to write in place. */
static void *section_room(struct kv_snap_writer *b, enum kv_snap_section sec, size_t n)
{
	struct kv_snap_buf *buf = &b->sec[sec];
	kv_snapw_grow(buf, (n + 1) * kv_snap_record_size[sec]); /* never NULL, even for none */
	return buf->p + buf->len;
}

/* A block's set in the snapshot: that of its live set (blk->set), once met. */
static uint32_t block_set(struct kv_snap_writer *b, const struct kv_index *ix, const struct kv_block *blk,
			  uint32_t *met, struct set_table *sets, uint32_t **hs, size_t *hcap)
{
	if (met[blk->set] == NO_SET) {
		size_t nh;
		const uint32_t *h = snapshot_holders(b, ix, blk, hs, hcap, &nh);
		met[blk->set] = intern_set(b, sets, h, nh);
	}
	return met[blk->set];
}

/* ---- a table's entries in key order ----
 * Sorting a table's keys with the positions of their entries and then
 * reading the entries in key order reads the table at random, a cache miss
 * an entry.  Instead what is needed of each entry is moved out in one pass
 * over the table, into buckets by its key's top bits, each small enough to
 * be sorted while in the processor's cache. */

#define BUCKET_RECORDS 2048

struct buckets {
	unsigned bits;
	size_t *first;    /* 2^bits + 1 of them: where each bucket begins */
	size_t largest;   /* records in the largest */
};

static size_t bucket_of(uint64_t key, unsigned bits)
{
	return bits ? (size_t)(key >> (64 - bits)) : 0;
}

/* Buckets for n records (uniform keys: BUCKET_RECORDS or so a bucket), none
 * counted yet. */
static struct buckets buckets_for(size_t n)
{
	struct buckets bk = { 0, NULL, 0 };
	while (bk.bits < 20 && (n >> bk.bits) > BUCKET_RECORDS)
		bk.bits++;
	bk.first = kv_xcalloc(((size_t)1 << bk.bits) + 2, sizeof *bk.first);
	return bk;
}

static void bucket_count(struct buckets *bk, uint64_t key)
{
	bk->first[bucket_of(key, bk->bits) + 1]++;
}

/* Once every key is counted: where each bucket begins, and where its next
 * record goes (returned, to fill the buckets with). */
static size_t *buckets_begin(struct buckets *bk)
{
	size_t nb = (size_t)1 << bk->bits;
	for (size_t k = 1; k <= nb; k++) {
		if (bk->first[k] > bk->largest)
			bk->largest = bk->first[k];
		bk->first[k] += bk->first[k - 1];
	}
	size_t *at = kv_xmalloc((nb + 1) * sizeof *at);
	memcpy(at, bk->first, (nb + 1) * sizeof *at);
	return at;
}

/* Bucket k's records (rec bytes each, key first) copied to copy, their
 * keys into keys sorted, and in order their places in the copy.  The
 * bucket's place is free then: what the caller makes of the records, if
 * no larger a record, can go where they were (or before). */
static size_t bucket_sort(const struct buckets *bk, size_t k, const void *recs, size_t rec, void *copy,
			  uint64_t *keys, uint32_t *order)
{
	size_t lo = bk->first[k], m = bk->first[k + 1] - lo;
	const char *r = copy;
	memcpy(copy, (const char *)recs + lo * rec, m * rec);
	for (size_t j = 0; j < m; j++) {
		memcpy(&keys[j], r + j * rec, sizeof *keys);
		order[j] = (uint32_t)j;
	}
	kv_sort_keys(keys, order, m);
	return m;
}

/* The buckets' records, in kv_slots_alloc's memory, the tables' (small
 * pages: after a run over the captures, the kernel clearing fresh huge
 * pages for them was most of the write's time on the bench's VM; after -i,
 * on warm memory, they had saved 60 ms of faults).  What is made of them
 * goes where they were (the blocks' run nodes, the engine hashes' chains)
 * or straight into its section (the engine hashes and their blocks), not
 * into new memory to fault in.  The sections stay in malloc's memory: from
 * huge pages, their copy into the page cache took twice as long here. */
static void *records_alloc(size_t n, size_t size)
{
	return kv_slots_alloc((n + 1) * size);
}

static void records_free(void *r, size_t n, size_t size)
{
	kv_slots_free(r, (n + 1) * size);
}

/* What the file needs of a block. */
struct block_rec {
	uint64_t chain, parent, local;
	uint32_t set, reserved;
};

static struct block_rec *blocks_in_buckets(const struct kv_blocks *t, struct buckets *bk)
{
	*bk = buckets_for(kv_blocks_count(t));
	KV_TABLE_EACH(kv_blocks, t, pos)
		bucket_count(bk, kv_blocks_at_const(t, pos)->key);
	size_t *at = buckets_begin(bk);
	struct block_rec *r = records_alloc(kv_blocks_count(t), sizeof *r);
	KV_TABLE_EACH(kv_blocks, t, pos) {
		const struct kv_block *blk = kv_blocks_at_const(t, pos);
		r[at[bucket_of(blk->key, bk->bits)]++] = (struct block_rec){ blk->key, blk->parent, blk->local, blk->set, 0 };
	}
	free(at);
	return r;
}

/* A partition's engine hashes in engine-hash order, with the chain each
 * names: what placing them needs of the index, gathered before the blocks'
 * chains are in order.  The keys are where EHASHES has room, the chains
 * where their bucket records were (recs, to free once placed). */
struct ehash_prep {
	uint64_t *keys, *chains;
	size_t n;
	void *recs;
};

struct ehash_rec {
	uint64_t ehash, chain;
};

static struct ehash_prep ehash_gather(struct kv_snap_writer *b, const struct kv_index *ix, uint32_t k)
{
	const struct kv_ehashes *t = &ix->p[kv_snapw_live_partition(b, k)].ehashes;
	size_t n = kv_ehashes_count(t);
	struct buckets bk = buckets_for(n);
	KV_TABLE_EACH(kv_ehashes, t, pos)
		bucket_count(&bk, kv_ehashes_at_const(t, pos)->key);
	size_t *at = buckets_begin(&bk);
	struct ehash_rec *r = records_alloc(n, sizeof *r);
	KV_TABLE_EACH(kv_ehashes, t, pos) {
		const struct kv_ehash *x = kv_ehashes_at_const(t, pos);
		r[at[bucket_of(x->key, bk.bits)]++] = (struct ehash_rec){ x->key, x->chain };
	}
	free(at);
	struct ehash_prep e = { section_room(b, KV_SEC_EHASHES, n), (uint64_t *)r, n, r };
	uint32_t *order = kv_xmalloc((bk.largest + 1) * sizeof *order);
	struct ehash_rec *copy = kv_xmalloc((bk.largest + 1) * sizeof *copy);
	for (size_t q = 0; q < (size_t)1 << bk.bits; q++) {
		size_t lo = bk.first[q], m = bucket_sort(&bk, q, r, sizeof *r, copy, e.keys + lo, order);
		for (size_t j = 0; j < m; j++)
			e.chains[lo + j] = copy[order[j]].chain;
	}
	free(copy);
	free(order);
	free(bk.first);
	return e;
}

/* The engine hashes of a partition in engine-hash order: those naming a
 * block held by the block's position (d: the blocks' chains in order), the
 * others (stale, kept until the next sweep) with their chain.  Writes only
 * their own sections and ranges: it may run beside build_blocks' end. */
static void place_ehashes(struct kv_snap_writer *b, uint32_t k, struct ehash_prep *e, const struct key_dir *d)
{
	uint64_t *keys = e->keys;
	const uint64_t *chains = e->chains;
	size_t n = e->n;
	uint32_t *pos = section_room(b, KV_SEC_EHASH_BLOCKS, n);
	positions_of(chains, sizeof *chains, n, d, pos, sizeof *pos);
	kv_snapw_range_begin(b, k, KV_RANGE_EHASHES);
	kv_snapw_range_begin(b, k, KV_RANGE_STALE);
	size_t named = 0, stale = 0;
	for (size_t i = 0; i < n; i++)
		named += pos[i] != NO_POS;
	struct kv_snap_stale *st = section_room(b, KV_SEC_STALE, n - named);
	named = 0;
	for (size_t i = 0; i < n; i++) { /* those named move down in place */
		if (pos[i] != NO_POS) {
			keys[named] = keys[i];
			pos[named++] = pos[i];
		} else {
			st[stale++] = (struct kv_snap_stale){ keys[i], chains[i] };
		}
	}
	b->sec[KV_SEC_EHASHES].len += named * sizeof *keys;
	b->sec[KV_SEC_EHASH_BLOCKS].len += named * sizeof *pos;
	b->sec[KV_SEC_STALE].len += stale * sizeof *st;
	kv_snapw_range_end(b, k, KV_RANGE_EHASHES);
	kv_snapw_range_end(b, k, KV_RANGE_STALE);
	records_free(e->recs, n, sizeof(struct ehash_rec));
}

/* A partition's engine hashes built on a second thread beside its blocks:
 * gathered and sorted while the blocks are, then placed once the blocks'
 * chains are in order (dir, handed over by build_blocks) while build_blocks
 * works out parents and runs.  On one core the same work is done one after
 * the other: on the bench's cluster index, 680-840 ms of processor time
 * either way, and the second core takes the write's wall time from that
 * to 510-580 ms when the machine is quiet (it took the writer before the
 * buckets from 1.45-1.75 s to 0.96-1.26 s). */
struct ehash_job {
	struct kv_snap_writer *b;
	const struct kv_index *ix;
	uint32_t k;
	pthread_mutex_t lock;
	pthread_cond_t ready;
	const struct key_dir *dir;   /* NULL until the blocks' chains are in order */
};

static void *ehash_thread(void *arg)
{
	struct ehash_job *j = arg;
	struct ehash_prep e = ehash_gather(j->b, j->ix, j->k);
	pthread_mutex_lock(&j->lock);
	while (!j->dir)
		pthread_cond_wait(&j->ready, &j->lock);
	const struct key_dir *d = j->dir;
	pthread_mutex_unlock(&j->lock);
	place_ehashes(j->b, j->k, &e, d);
	return NULL;
}

/* The blocks' chains in order: the engine hashes can be placed. */
static void hand_over(struct ehash_job *j, const struct key_dir *d)
{
	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	j->dir = d;
	pthread_cond_signal(&j->ready);
	pthread_mutex_unlock(&j->lock);
}

/* A partition's blocks (their columns: chains, sets, runs, parents,
 * locals), orphans and holder sets, written in place in their sections
 * (the table read once, in order); d is left with their chains in order,
 * which the engine hashes are placed by. */
static void build_blocks(struct kv_snap_writer *b, const struct kv_index *ix, uint32_t k, struct key_dir *d,
			 struct ehash_job *job)
{
	const struct kv_partition *p = &ix->p[kv_snapw_live_partition(b, k)];
	struct buckets bk;
	struct block_rec *r = blocks_in_buckets(&p->blocks, &bk);
	size_t n = kv_blocks_count(&p->blocks);
	kv_snapw_range_begin(b, k, KV_RANGE_BLOCKS);
	kv_snapw_range_begin(b, k, KV_RANGE_ORPHANS);
	kv_snapw_range_begin(b, k, KV_RANGE_SETS);
	struct set_table sets = { 0 };
	uint32_t *met = kv_xmalloc((ix->sets.n + 1) * sizeof *met);
	memset(met, 0xff, (ix->sets.n + 1) * sizeof *met);
	_Static_assert(sizeof(struct run_node) <= sizeof(struct block_rec), "nodes fit where the records were");
	struct run_node *node = (struct run_node *)r;
	uint64_t *chains = section_room(b, KV_SEC_BLOCKS, n), *locals = section_room(b, KV_SEC_LOCALS, n);
	uint32_t *sets_of = section_room(b, KV_SEC_BLOCK_SETS, n);
	uint32_t *order = kv_xmalloc((bk.largest + 1) * sizeof *order);
	struct block_rec *copy = kv_xmalloc((bk.largest + 1) * sizeof *copy);
	uint32_t *hs = NULL;
	size_t hcap = 0;
	for (size_t q = 0; q < (size_t)1 << bk.bits; q++) {
		size_t lo = bk.first[q], m = bucket_sort(&bk, q, r, sizeof *r, copy, chains + lo, order);
		for (size_t j = 0; j < m; j++) {
			const struct block_rec *x = &copy[order[j]];
			struct kv_block blk = { .key = x->chain, .set = x->set };
			uint32_t set = block_set(b, ix, &blk, met, &sets, &hs, &hcap);
			node[lo + j] = (struct run_node){ x->parent, NO_POS, set, RUN_UNKNOWN };
			sets_of[lo + j] = set;
			locals[lo + j] = x->local;
		}
	}
	free(copy);
	free(order);
	free(hs);
	free(bk.first);
	free(met);
	set_table_free(&sets);
	kv_snapw_range_end(b, k, KV_RANGE_SETS);
	*d = key_dir_build(chains, n);
	hand_over(job, d);
	positions_of(&node[0].parent_chain, sizeof *node, n, d, &node[0].parent, sizeof *node);
	block_runs(node, n);
	uint8_t *runs = section_room(b, KV_SEC_RUNS, n);
	uint32_t *parent_of = section_room(b, KV_SEC_PARENTS, n);
	for (size_t i = 0; i < n; i++) {
		parent_of[i] = parent_field(b, node[i].parent, (uint32_t)i, node[i].parent_chain);
		runs[i] = (uint8_t)(node[i].run < KV_SNAP_RUN_MAX ? node[i].run : KV_SNAP_RUN_MAX);
	}
	b->sec[KV_SEC_BLOCKS].len += n * sizeof *chains;
	b->sec[KV_SEC_BLOCK_SETS].len += n * sizeof *sets_of;
	b->sec[KV_SEC_RUNS].len += n;
	b->sec[KV_SEC_PARENTS].len += n * sizeof *parent_of;
	b->sec[KV_SEC_LOCALS].len += n * sizeof *locals;
	kv_snapw_range_end(b, k, KV_RANGE_BLOCKS);
	kv_snapw_range_end(b, k, KV_RANGE_ORPHANS);
	records_free(r, n, sizeof *r);
}

/* The sections that follow the index's (the matcher's, or a META alone),
 * added once the partitions' orders are set. */
struct tail {
	void (*add)(struct kv_snap_writer *b, const void *arg);
	const void *arg;
};

/* The partitions' order, by name: the snapshot's. */
static void order_partitions(struct kv_snap_writer *b, const struct kv_index *ix)
{
	b->nparts = (uint32_t)ix->n;
	b->porder = kv_xmalloc((ix->n + 1) * sizeof *b->porder);
	b->pmap = kv_xmalloc((ix->n + 1) * sizeof *b->pmap);
	for (uint32_t i = 0; i < ix->n; i++)
		b->porder[i] = i;
	qsort_r(b->porder, ix->n, sizeof *b->porder, by_partition_name, (void *)ix);
	for (uint32_t k = 0; k < ix->n; k++)
		b->pmap[b->porder[k]] = k;
}

/* The partition records, in that order (their ranges set as their
 * sections are built). */
static void add_partitions(struct kv_snap_writer *b, const struct kv_index *ix)
{
	for (uint32_t k = 0; k < ix->n; k++) {
		const struct kv_partition *p = &ix->p[b->porder[k]];
		struct kv_snap_partition rp = { kv_snapw_string(b, p->model), kv_snapw_string(b, p->tenant), p->block_size,
						p->stale_possible ? 1u : 0u, p->ehash_mark, { { 0, 0 } } };
		kv_snapw_add(b, KV_SEC_PARTITIONS, &rp, 1);
	}
}

/* The index's sections: workers, partitions (the content range left to
 * the matcher), their blocks, runs, orphans, holder sets and engine hashes;
 * and the orders they set, which the tail's sections follow.  The tail is
 * added while the second thread places the last partition's engine hashes
 * (the bench's cluster index: the matcher's 25-40 ms off the end): it
 * writes none of their sections, nor their fields of the partition record,
 * and adds no partition record (all are added first, so the strings come
 * in the same order as when each partition's were added before its
 * blocks). */
static void build_index(struct kv_snap_writer *b, const struct kv_index *ix, const struct kv_workers *ws,
			struct tail tail)
{
	order_partitions(b, ix);
	build_workers(b, ix, ws);
	add_partitions(b, ix);
	for (uint32_t k = 0; k < ix->n; k++) {
		struct key_dir d;
		struct ehash_job job = { b, ix, k, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL };
		pthread_t t;
		bool two = kv_thread_start(&t, ehash_thread, &job) == 0;
		build_blocks(b, ix, k, &d, two ? &job : NULL);
		if (two && k + 1 == ix->n) {
			tail.add(b, tail.arg);
			tail.add = NULL;
		}
		if (two) {
			pthread_join(t, NULL);
		} else {
			struct ehash_prep e = ehash_gather(b, ix, k);
			place_ehashes(b, k, &e, &d);
		}
		pthread_mutex_destroy(&job.lock);
		pthread_cond_destroy(&job.ready);
		free(d.dir);
	}
	if (tail.add)
		tail.add(b, tail.arg);
}

static void add_matcher(struct kv_snap_writer *b, const void *m)
{
	kv_match_save(m, b);
}

bool kv_snapstate_save(const char *path, const struct kv_index *ix, const struct kv_workers *ws, const struct kv_match *m,
		   struct kv_err *e)
{
	struct kv_snap_writer b = { 0 };
	build_index(&b, ix, ws, (struct tail){ add_matcher, m });
	return kv_snapw_write(&b, path, e);
}

static void add_meta(struct kv_snap_writer *b, const void *meta)
{
	kv_snapw_add(b, KV_SEC_META, meta, 1);
}

bool kv_snapstate_save_index(const char *path, const struct kv_index *ix, const struct kv_workers *ws,
			 const struct kv_snap_meta *meta, struct kv_err *e)
{
	struct kv_snap_writer b = { 0 };
	build_index(&b, ix, ws, (struct tail){ add_meta, meta });
	return kv_snapw_write(&b, path, e);
}

/* ---- restoring ----------------------------------------------------------- */

/* A partition's engine hashes into the live map. */
static void restore_ehashes(const struct kv_snap *s, uint32_t p, uint32_t live, struct kv_index *ix)
{
	const struct kv_snap_partition *rp = &s->partitions[p];
	const struct kv_snap_range *r = &rp->r[KV_RANGE_EHASHES], *st = &rp->r[KV_RANGE_STALE];
	bool added;
	kv_ehashes_reserve(&ix->p[live].ehashes, kv_ehashes_count(&ix->p[live].ehashes) + r->count + st->count);
	for (uint64_t i = r->first; i < r->first + r->count; i++)
		kv_ehashes_upsert(&ix->p[live].ehashes, s->ehashes[i], &added)->chain = kv_snap_named_chain(s, p, i);
	for (uint64_t i = st->first; i < st->first + st->count; i++)
		kv_ehashes_upsert(&ix->p[live].ehashes, s->stale[i].ehash, &added)->chain = s->stale[i].chain;
}

void kv_snapstate_restore(const struct kv_snap *s, struct kv_index *ix, struct kv_workers *ws, struct kv_match *m)
{
	uint32_t *wid = kv_xmalloc((s->nworkers + 1) * sizeof *wid), *pid = kv_xmalloc((s->npartitions + 1) * sizeof *pid);
	for (size_t i = 0; i < s->nworkers; i++) {
		size_t n, hn;
		const char *inst = kv_snap_string(s, s->workers[i].instance_id, &n);
		const char *host = kv_snap_string(s, s->workers[i].host, &hn);
		char *id = kv_xstrndup(inst, n), *h = hn ? kv_xstrndup(host, hn) : NULL;
		if (s->workers[i].flags & 2) {
			wid[i] = kv_workers_pool_holder(ws, (struct kv_str){ id, n });
		} else {
			wid[i] = kv_workers_add(ws, id, s->workers[i].dp_rank, h, s->workers[i].flags & 1);
		}
		/* Registered and restored workers together beyond KV_MAX_WORKERS:
		 * what the extra ones held is left out (checked below). */
		if (wid[i] != KV_NO_WORKER && !ws->v[wid[i]].block_size)
			ws->v[wid[i]].block_size = s->workers[i].block_size;
		/* a worker registered then, and not in this run's registrations:
		 * its partition stays its own, for the next snapshot */
		if (wid[i] != KV_NO_WORKER && s->workers[i].partition && !ws->v[wid[i]].model) {
			const struct kv_snap_partition *rp = &s->partitions[s->workers[i].partition - 1];
			size_t mn, tn;
			const char *model = kv_snap_string(s, rp->model, &mn), *tenant = kv_snap_string(s, rp->tenant, &tn);
			ws->v[wid[i]].model = kv_xstrndup(model, mn);
			free(ws->v[wid[i]].tenant);
			ws->v[wid[i]].tenant = kv_xstrndup(tenant, tn);
		}
		free(id);
		free(h);
	}
	for (size_t p = 0; p < s->npartitions; p++) {
		size_t mn, tn;
		const char *model = kv_snap_string(s, s->partitions[p].model, &mn);
		const char *tenant = kv_snap_string(s, s->partitions[p].tenant, &tn);
		pid[p] = kv_index_partition(ix, model, mn, tenant, tn);
		if (!ix->p[pid[p]].block_size)
			ix->p[pid[p]].block_size = s->partitions[p].block_size;
		ix->p[pid[p]].ehash_mark = s->partitions[p].ehash_mark;
		ix->p[pid[p]].stale_possible = s->partitions[p].flags & 1;
		const struct kv_snap_partition *rp = &s->partitions[p];
		const struct kv_snap_range *r = &rp->r[KV_RANGE_BLOCKS];
		/* the tables at their size at once: no steps of growth, each
		 * moving every entry (15% of a resumed run's profile) */
		kv_blocks_reserve(&ix->p[pid[p]].blocks, kv_blocks_count(&ix->p[pid[p]].blocks) + r->count);
		for (uint64_t b = r->first; b < r->first + r->count; b++) {
			uint64_t parent = kv_snap_parent(s, (uint32_t)p, b);
			size_t nh;
			const uint32_t *hs = kv_snap_holders(s, b, &nh);
			for (size_t k = 0; k < nh; k++) {
				uint32_t h = hs[k];
				for (int med = 0; med < KV_NMEDIA && wid[KV_HOLDER_WORKER(h)] != KV_NO_WORKER; med++)
					if (KV_HOLDER_MEDIA(h) & KV_MEDIUM_BIT(med))
						kv_index_hold(ix, pid[p], s->chains[b], parent, s->locals[b],
							      wid[KV_HOLDER_WORKER(h)], (enum kv_medium)med);
			}
		}
	}
	for (size_t p = 0; p < s->npartitions; p++)
		restore_ehashes(s, (uint32_t)p, pid[p], ix);
	struct kv_snap_restorer rd = { s, pid, wid };
	kv_match_restore(m, &rd);
	free(wid);
	free(pid);
}


#define _GNU_SOURCE /* qsort_r */
#include "query/query.h"
#include "index/blockhash.h"
#include "base/sort.h"
#include "index/snaplookup.h"
#include "base/table.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- sources ------------------------------------------------------------- */

/* One word of every page of the columns a lookup reads (chains, sets,
 * runs, the directories).  The first lines after a load paid for the
 * first touch of each page they reached (the first 60 of the bench's
 * by-hash lines about 1 us each, which made their p99); touched here, in
 * order, it costs a few loads in flight per page, 0.2 ms for the bench's
 * 4M blocks. */
static void touch_lookup_pages(const struct kv_snap *snap)
{
	enum { PAGE = 4096 };
	uint64_t sum = 0;
	for (size_t i = 0; i < snap->nblocks; i += PAGE / sizeof *snap->chains)
		sum += snap->chains[i];
	for (size_t i = 0; i < snap->nblocks; i += PAGE / sizeof *snap->block_sets)
		sum += snap->block_sets[i];
	for (size_t i = 0; i < snap->nblocks; i += PAGE)
		sum += snap->runs[i];
	for (size_t p = 0; snap->dir && p < snap->ndirs; p++)
		for (size_t k = 0; snap->dir[p] && k <= (size_t)1 << snap->dirbits[p]; k += PAGE / sizeof **snap->dir)
			sum += snap->dir[p][k];
	volatile uint64_t read = sum; /* so that the loads are made */
	(void)read;
}

void kv_qsource_snap(struct kv_qsource *s, const struct kv_snap *snap)
{
	memset(s, 0, sizeof *s);
	touch_lookup_pages(snap);
	s->snap = snap;
	s->nworkers = snap->nworkers;
	s->npartitions = snap->npartitions;
}

void kv_qsource_index(struct kv_qsource *s, const struct kv_index *ix, const struct kv_workers *ws)
{
	memset(s, 0, sizeof *s);
	s->ix = ix;
	s->ws = ws;
	s->nworkers = ws->n;
}

void kv_qsource_free(struct kv_qsource *s)
{
	for (size_t i = 0; i < s->npartitions; i++) {
		free(s->pworkers ? s->pworkers[i] : NULL);
		free(s->pcand ? s->pcand[i] : NULL);
	}
	free(s->pworkers);
	free(s->npworkers);
	free(s->pcand);
	free(s->npcand);
	free(s->live_cand);
	memset(s, 0, sizeof *s);
}

bool kv_qsource_block(const struct kv_qsource *s, uint32_t part, uint64_t chain, struct kv_qblock *qb)
{
	if (s->snap) {
		uint64_t b = kv_snap_find(s->snap, part, chain);
		if (b == KV_SNAP_NO_BLOCK)
			return false;
		qb->h = kv_snap_holders(s->snap, b, &qb->n);
		qb->set = kv_snap_block_set(s->snap, b);
		qb->run = kv_snap_block_run(s->snap, b);
		return true;
	}
	const struct kv_block *b = kv_blocks_find_const(&s->ix->p[part].blocks, chain);
	if (!b)
		return false;
	qb->n = kv_block_nholders(s->ix, b);
	qb->h = kv_block_holders(s->ix, b);
	qb->set = (uintptr_t)qb->h; /* one holder lives in its block: no two blocks share it */
	qb->run = 0;
	return true;
}

void kv_qsource_prefetch(const struct kv_qsource *s, uint32_t part, uint64_t chain, int stage)
{
	if (s->snap)
		kv_snap_prefetch(s->snap, part, chain, stage);
	else if (stage == 0)
		kv_blocks_prefetch(&s->ix->p[part].blocks, chain);
}

const char *kv_qsource_worker(const struct kv_qsource *s, uint32_t w, size_t *len, int64_t *dp)
{
	if (s->snap) {
		*dp = s->snap->workers[w].dp_rank;
		return kv_snap_string(s->snap, s->snap->workers[w].instance_id, len);
	}
	*dp = s->ws->v[w].dp_rank;
	*len = strlen(s->ws->v[w].instance_id);
	return s->ws->v[w].instance_id;
}

bool kv_qsource_is_pool(const struct kv_qsource *s, uint32_t w)
{
	return s->snap ? (s->snap->workers[w].flags & 2) != 0 : s->ws->v[w].pool;
}

/* Distinct workers of a holder stream, sorted, without pool holders. */
static uint32_t *collect_workers(const struct kv_qsource *s, const uint32_t *h, size_t n, size_t *out)
{
	uint32_t *w = kv_xmalloc((n + 1) * sizeof *w);
	for (size_t i = 0; i < n; i++)
		w[i] = KV_HOLDER_WORKER(h[i]);
	kv_sort_u32(w, n);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if ((k == 0 || w[k - 1] != w[i]) && !kv_qsource_is_pool(s, w[i]))
			w[k++] = w[i];
	*out = k;
	return w;
}

const uint32_t *kv_qsource_partition_workers(struct kv_qsource *s, uint32_t part, size_t *n)
{
	size_t np = s->snap ? s->snap->npartitions : s->ix->n;
	if (!s->snap) {
		/* A live index changes between queries: recompute each time. */
		if (s->npartitions) {
			for (size_t i = 0; i < s->npartitions; i++)
				free(s->pworkers[i]);
			free(s->pworkers);
			free(s->npworkers);
			s->pworkers = NULL;
			s->npworkers = NULL;
			s->npartitions = 0;
		}
	}
	if (!s->pworkers) {
		s->pworkers = kv_xcalloc(np + 1, sizeof *s->pworkers);
		s->npworkers = kv_xcalloc(np + 1, sizeof *s->npworkers);
		s->npartitions = np;
	}
	if (!s->pworkers[part]) {
		if (s->snap) {
			const struct kv_snap_partition *p = &s->snap->partitions[part];
			size_t first = 0, count = 0;
			const struct kv_snap_range *r = &p->r[KV_RANGE_SETS];
			if (r->count) {
				const struct kv_snap_set *b = &s->snap->sets[r->first];
				const struct kv_snap_set *e = b + r->count - 1;
				first = b->holders_first;
				count = e->holders_first + e->nholders - first;
			}
			s->pworkers[part] = collect_workers(s, s->snap->holders + first, count, &s->npworkers[part]);
		} else {
			const struct kv_blocks *t = &s->ix->p[part].blocks;
			size_t cap = 0, n2 = 0;
			uint32_t *all = NULL;
			KV_TABLE_EACH(kv_blocks, t, pos) {
				const struct kv_block *b = kv_blocks_at_const(t, pos);
				const uint32_t *h = kv_block_holders(s->ix, b);
				size_t nh = kv_block_nholders(s->ix, b);
				all = kv_xgrow(all, &cap, n2 + nh, sizeof *all);
				memcpy(all + n2, h, nh * sizeof *h);
				n2 += nh;
			}
			s->pworkers[part] = collect_workers(s, all, n2, &s->npworkers[part]);
			free(all);
		}
	}
	*n = s->npworkers[part];
	return s->pworkers[part];
}

/* The workers registered in a partition, in worker order (a snapshot's
 * are numbered in name order, a live index's are sorted). */
static uint32_t *registered_in(const struct kv_qsource *s, uint32_t part, size_t *n)
{
	uint32_t *w = kv_xmalloc((s->nworkers + 1) * sizeof *w);
	size_t k = 0;
	for (uint32_t i = 0; i < s->nworkers; i++) {
		if (s->snap) {
			if (s->snap->workers[i].partition == part + 1)
				w[k++] = i;
			continue;
		}
		const struct kv_worker *wk = &s->ws->v[i];
		const struct kv_partition *p = &s->ix->p[part];
		if (!wk->inferred && !wk->pool && wk->model && strcmp(wk->model, p->model) == 0 &&
		    strcmp(wk->tenant ? wk->tenant : "default", p->tenant) == 0)
			w[k++] = i;
	}
	if (!s->snap)
		kv_workers_sort(s->ws, w, k);
	*n = k;
	return w;
}

const uint32_t *kv_qsource_pool_candidates(struct kv_qsource *s, uint32_t part, size_t *n)
{
	if (!s->snap) {
		free(s->live_cand);
		s->live_cand = registered_in(s, part, n);
		return *n ? s->live_cand : kv_qsource_partition_workers(s, part, n);
	}
	if (!s->pcand) {
		s->pcand = kv_xcalloc(s->npartitions + 1, sizeof *s->pcand);
		s->npcand = kv_xcalloc(s->npartitions + 1, sizeof *s->npcand);
	}
	if (!s->pcand[part])
		s->pcand[part] = registered_in(s, part, &s->npcand[part]);
	*n = s->npcand[part];
	return *n ? s->pcand[part] : kv_qsource_partition_workers(s, part, n);
}

const char *kv_stop_name(enum kv_stop s)
{
	static const char *const names[] = { "end_of_query", "not_in_index", "held_elsewhere", "other_medium",
					     "held_by_pool_only" };
	return names[s <= KV_STOP_POOL_ONLY ? s : 0];
}

/* ---- walking ------------------------------------------------------------- */

/* A worker's walks during one query.  Every run is contiguous from its start;
 * once a run misses a block it has ended for good. */
struct wstate {
	uint32_t epoch;
	uint32_t npu_end, cpu0_end, cpu1_end, disk0_end, disk1_end;
	uint32_t cpu_own;               /* counted cpu blocks the worker holds itself */
	bool npu, cpu0, cpu1, disk0, disk1;  /* alive */
	bool cpu1_started, disk1_started;
	bool done;
	uint32_t stop_at;
	enum kv_stop why;
};

/* Looking up a block costs dependent cache misses (a directory or table
 * slot, then the block record): lookups known ahead are started early.
 * From a live index the walk goes block by block, each looked up
 * LIVE_AHEAD blocks before it is walked; from a snapshot it jumps between
 * checkpoints, the multiples of KV_QUERY_JUMP, looked up a stage every
 * AHEAD_STEP blocks while given local hashes are chained (look_ahead),
 * else all started at once. */
enum { LIVE_AHEAD = 8, KV_QUERY_JUMP = 64, BACK_PROBES = 3, AHEAD_STEP = KV_QUERY_JUMP };

struct kv_querier {
	uint64_t *local, *chains;      /* a token query's local hashes and chains */
	const uint64_t *chain;          /* the query's chains: q->chains, or those given */
	size_t cap;
	struct wstate *w;
	size_t capw;
	uint32_t epoch;
	uint32_t *active, *next;
	size_t capactive;
	struct kv_hit *hits;
	size_t caphits;
	uint64_t first_local;
	struct kv_qblock *ck;           /* the checkpoints read (read_checkpoint): h NULL for one nobody holds */
	size_t nck, capck;
	/* The checkpoints' lookups, in the walk's order (checkpoint_block),
	 * as far as each has gone: its directory slot fetched (the first
	 * slots of them), its records fetched (recs), read into ck (read).
	 * The blocks where the runs they see start (starts), their slots and
	 * then their records fetched (start_slots, start_recs). */
	size_t nseq, slots, recs, read, prev;
	size_t *starts;
	size_t nstarts, start_slots, start_recs, capstarts;
	const struct kv_qsource *src;
};

struct kv_querier *kv_querier_new(void)
{
	return kv_xcalloc(1, sizeof(struct kv_querier));
}

void kv_querier_free(struct kv_querier *q)
{
	if (!q)
		return;
	free(q->local);
	free(q->chains);
	free(q->w);
	free(q->active);
	free(q->next);
	free(q->hits);
	free(q->ck);
	free(q->starts);
	free(q);
}

/* How many blocks a query has: its tokens' blocks, or the hashes given. */
static size_t query_blocks(const struct kv_query *r)
{
	if (r->tokens)
		return r->block_size ? (r->ntokens + r->block_size - 1) / r->block_size : 0;
	return r->chains ? r->nchains : r->nlocals;
}

/* An array that each query writes before it reads it, with room for need
 * elements of size bytes: when it grows (doubling), it is new memory
 * written whole at once, its old contents dropped, so that the pages it
 * grows into are faulted in here, in one pass, rather than one at a time
 * under the query that first reaches them. */
static void *scratch_room(void *p, size_t *cap, size_t need, size_t size)
{
	size_t was = *cap;
	p = kv_xrenew(p, cap, need, size);
	if (*cap != was)
		memset(p, 0, *cap * size);
	return p;
}

void kv_querier_reserve(struct kv_querier *q, const struct kv_qsource *src, const struct kv_query *req)
{
	size_t n = query_blocks(req), nck = n ? (n - 1) / KV_QUERY_JUMP + 2 : 0;
	if (!req->chains && n > q->cap) {
		size_t cap = q->cap;
		q->local = scratch_room(q->local, &cap, n, sizeof *q->local);
		q->chains = scratch_room(q->chains, &q->cap, n, sizeof *q->chains);
	}
	q->ck = scratch_room(q->ck, &q->capck, nck, sizeof *q->ck);
	q->starts = scratch_room(q->starts, &q->capstarts, 2 * nck, sizeof *q->starts);
	if (src->nworkers > q->capw) {
		/* each worker's state is kept between queries (its epoch) */
		q->w = kv_xrealloc(q->w, src->nworkers * sizeof *q->w);
		memset(q->w + q->capw, 0, (src->nworkers - q->capw) * sizeof *q->w);
		q->capw = src->nworkers;
		size_t capactive = q->capactive;
		q->active = scratch_room(q->active, &capactive, q->capw + 1, sizeof *q->active);
		q->next = scratch_room(q->next, &q->capactive, q->capw + 1, sizeof *q->next);
	}
	q->hits = scratch_room(q->hits, &q->caphits, src->nworkers, sizeof *q->hits);
}

static void start_worker(struct wstate *s, uint32_t epoch)
{
	memset(s, 0, sizeof *s);
	s->epoch = epoch;
	s->npu = s->cpu0 = s->disk0 = true;
}

/* Block i, in whose media (bits) the worker has it; own: its own holding
 * (differs from bits with a shared pool).  Returns false once every run
 * ended.  The walks' flags are worked on in locals and stored once: a
 * test of all five flags read back as one word right after their byte
 * stores waited for the stores to retire (a third of a walk's time). */
static inline __attribute__((always_inline)) bool step(struct wstate *s, uint32_t i, unsigned bits, unsigned own)
{
	bool cpu_here = bits & KV_MEDIUM_BIT(KV_CPU), disk_here = bits & KV_MEDIUM_BIT(KV_DISK);
	bool npu = s->npu, cpu0 = s->cpu0, cpu1 = s->cpu1, disk0 = s->disk0, disk1 = s->disk1;
	if (npu) {
		if (bits & KV_MEDIUM_BIT(KV_XPU))
			s->npu_end = i + 1;
		else {
			npu = false;
			cpu1 = s->cpu1_started = true;
			s->cpu1_end = i;
		}
	}
	bool counted_cpu = false;
	if (cpu0) {
		if (cpu_here) {
			s->cpu0_end = i + 1;
			counted_cpu = !npu;
		} else {
			cpu0 = false;
		}
	}
	if (cpu1) {
		if (cpu_here) {
			s->cpu1_end = i + 1;
			counted_cpu = true;
		} else {
			cpu1 = false;
		}
	}
	if (counted_cpu && (own & KV_MEDIUM_BIT(KV_CPU)))
		s->cpu_own++;
	if (disk0) {
		if (disk_here)
			s->disk0_end = i + 1;
		else
			disk0 = false;
	}
	if (!s->disk1_started && !npu && !cpu0 && !cpu1) {
		disk1 = s->disk1_started = true;
		s->disk1_end = i;
	}
	if (disk1) {
		if (disk_here)
			s->disk1_end = i + 1;
		else
			disk1 = false;
	}
	s->npu = npu, s->cpu0 = cpu0, s->cpu1 = cpu1, s->disk0 = disk0, s->disk1 = disk1;
	return npu || cpu0 || cpu1 || disk0 || disk1;
}

static void finish(struct wstate *s, uint32_t i, enum kv_stop why)
{
	s->done = true;
	s->stop_at = i;
	s->why = why;
}

static struct kv_hit to_hit(const struct wstate *s, uint32_t w)
{
	struct kv_hit h = { .worker = w };
	uint32_t cpu1_end = s->cpu1_started ? s->cpu1_end : s->npu_end;
	h.npu_end = s->npu_end;
	h.cpu_end = s->cpu0_end > cpu1_end ? s->cpu0_end : cpu1_end;
	uint32_t from = h.npu_end > h.cpu_end ? h.npu_end : h.cpu_end;
	uint32_t disk1_end = s->disk1_started ? s->disk1_end : from;
	h.disk_end = s->disk0_end > disk1_end ? s->disk0_end : disk1_end;
	h.npu = h.npu_end;
	h.cpu = h.cpu_end > h.npu_end ? h.cpu_end - h.npu_end : 0;
	h.disk = h.disk_end > from ? h.disk_end - from : 0;
	h.cpu_local = s->cpu_own < h.cpu ? s->cpu_own : h.cpu;
	h.cpu_remote = h.cpu - h.cpu_local;
	h.stop_at = s->stop_at;
	h.why = s->why;
	return h;
}

/* The checkpoint a run from block lo jumps to first: the next multiple of
 * KV_QUERY_JUMP.  Every run of a walk jumps between the same checkpoints,
 * so they are fetched once for all the runs (fetch_checkpoints). */
static size_t next_checkpoint(size_t lo)
{
	return (lo / KV_QUERY_JUMP + 1) * KV_QUERY_JUMP;
}

/* The checkpoint a block is, or -1: checkpoint k is block k *
 * KV_QUERY_JUMP, the last one block n - 1 (also when it is a multiple). */
static ptrdiff_t checkpoint_of(size_t j, size_t n)
{
	if (j + 1 == n)
		return (ptrdiff_t)((n - 1) / KV_QUERY_JUMP + 1);
	return j && j % KV_QUERY_JUMP == 0 ? (ptrdiff_t)(j / KV_QUERY_JUMP) : -1;
}

/* The block of the s-th checkpoint a walk reads: block 0, then the
 * multiples of KV_QUERY_JUMP before the last block, then the last. */
static size_t checkpoint_block(size_t s, size_t n)
{
	return s * KV_QUERY_JUMP < n - 1 ? s * KV_QUERY_JUMP : n - 1;
}

/* How many of a query's checkpoints come before block `blocks`. */
static size_t checkpoints_before(size_t blocks, size_t n)
{
	if (blocks == 0)
		return 0;
	if (blocks >= n)
		return n > 1 ? (n - 2) / KV_QUERY_JUMP + 2 : 1;
	return (blocks - 1) / KV_QUERY_JUMP + 1;
}

/* No checkpoint of a query of n blocks looked up yet. */
static void start_checkpoints(struct kv_querier *q, size_t n)
{
	q->nck = 0;
	q->nseq = checkpoints_before(n, n);
	q->slots = q->recs = q->read = q->prev = 0;
	q->nstarts = q->start_slots = q->start_recs = 0;
}

/* One stage of the lookups of checkpoints [from, to). */
static void fetch_checkpoints(const struct kv_querier *q, const struct kv_qsource *src, uint32_t part, size_t n,
			      size_t from, size_t to, int stage)
{
	for (size_t s = from; s < to; s++)
		kv_qsource_prefetch(src, part, q->chain[checkpoint_block(s, n)], stage);
}

/* One stage of the lookups of run starts [from, to). */
static void fetch_starts(const struct kv_querier *q, const struct kv_qsource *src, uint32_t part, size_t from,
			 size_t to, int stage)
{
	for (size_t x = from; x < to; x++)
		kv_qsource_prefetch(src, part, q->chain[q->starts[x]], stage);
}

/* Reads the next checkpoint into q->ck, and notes in q->starts where the
 * run it sees starts when its holders changed since the checkpoint before:
 * the first block of its run and the one before it, where snap_run's
 * search for the run's end looks first (fetch_pair).  False when none is
 * left to read: all read, or one nobody holds (the walk ends there). */
static bool read_checkpoint(struct kv_querier *q, const struct kv_qsource *src, uint32_t part, size_t n)
{
	if (q->read == q->nseq)
		return false;
	size_t j = checkpoint_block(q->read, n);
	size_t k = j ? (size_t)checkpoint_of(j, n) : 0;
	struct kv_qblock *b = &q->ck[k];
	bool held = kv_qsource_block(src, part, q->chain[j], b);
	q->nck = k + 1;
	q->read = held ? q->read + 1 : q->nseq;
	if (!held) {
		b->h = NULL;
		return false;
	}
	if (j == 0)
		return true;
	const struct kv_qblock *p = &q->ck[q->prev ? checkpoint_of(q->prev, n) : 0];
	size_t back = j - q->prev;
	if (b->set != p->set || b->run < back) {
		/* a run that reaches the checkpoint before with another set
		 * is a damaged file's (runs are not checked at load): it
		 * may start at block 0, which has none before it */
		size_t start = j - (b->run < back ? b->run : back);
		if (start > 0)
			q->starts[q->nstarts++] = start - 1;
		q->starts[q->nstarts++] = start;
	}
	q->prev = j;
	return true;
}

/* While given local hashes are chained (blocks [0, chained) so far), each
 * lookup under way goes one stage further if it was fetched a step ago:
 * a checkpoint's slot fetched, then its records, then read (its run start
 * noted), then the run start's slots and their records.  A step is
 * AHEAD_STEP blocks of the chain, longer than a miss takes, so that what
 * a stage reads has arrived (a load that waits for memory stalls the
 * chain once the processor's window is full; half a step was slower): the
 * walk then finds what it reads in cache, but for the last checkpoints. */
static void look_ahead(struct kv_querier *q, const struct kv_qsource *src, uint32_t part, size_t n, size_t chained)
{
	size_t recs = q->recs, start_slots = q->start_slots;
	while (q->read < recs && read_checkpoint(q, src, part, n))
		;
	if (q->read == q->nseq)
		return; /* one nobody holds ends the walk (read_checkpoints fetches the rest) */
	fetch_starts(q, src, part, q->start_recs, start_slots, 1);
	fetch_starts(q, src, part, start_slots, q->nstarts, 0);
	q->start_recs = start_slots;
	q->start_slots = q->nstarts;
	fetch_checkpoints(q, src, part, n, recs, q->slots, 1);
	q->recs = q->slots;
	size_t known = checkpoints_before(chained, n);
	fetch_checkpoints(q, src, part, n, q->slots, known, 0);
	q->slots = known;
}

/* Reads the checkpoints not read yet into q->ck, up to the first one nobody
 * holds (first: block 0, when none was read), and fetches where the runs
 * they see start: what look_ahead left, and all of it for a token query,
 * each stage for all of them at once, so that the walk finds them in cache
 * instead of waiting for two dependent misses at each change of holders. */
static void read_checkpoints(struct kv_querier *q, const struct kv_qsource *src, uint32_t part, size_t n,
			     const struct kv_qblock *first)
{
	if (q->read == 0) {
		q->ck[0] = *first;
		q->nck = q->read = 1;
		q->slots = q->slots > 1 ? q->slots : 1;
		q->recs = q->recs > 1 ? q->recs : 1;
	}
	fetch_checkpoints(q, src, part, n, q->slots, q->nseq, 0);
	fetch_starts(q, src, part, q->start_recs, q->start_slots, 1);
	fetch_checkpoints(q, src, part, n, q->recs, q->nseq, 1);
	q->slots = q->recs = q->nseq;
	while (read_checkpoint(q, src, part, n))
		;
	fetch_starts(q, src, part, q->start_slots, q->nstarts, 0);
	fetch_starts(q, src, part, q->start_slots, q->nstarts, 1);
	q->start_slots = q->start_recs = q->nstarts;
}

/* The chains of blocks [from, to), after the chain of block from - 1. */
static void hash_blocks(struct kv_querier *q, const struct kv_query *r, size_t from, size_t to)
{
	uint64_t parent = from ? q->chains[from - 1] : KV_CHAIN_ROOT;
	if (r->tokens)
		kv_block_hashes(r->tokens + from * r->block_size, r->ntokens - from * r->block_size, r->block_size,
				parent, q->local + from, q->chains + from, to - from);
	else
		kv_chain_hashes(parent, r->locals + from, q->chains + from, to - from);
}

/* The chains, AHEAD_STEP blocks at a time, looking up the checkpoints
 * between (look_ahead): a chain of dependent hashes of given local hashes
 * leaves the memory idle, and the lookups' misses, spaced so that each has
 * arrived when the next stage reads it, overlap it.  From a snapshot only
 * (a live index's walk looks up block by block), and not for tokens:
 * hashing them keeps the processor busy (the local hashes beside the
 * chain), and fetching then made a line slower, not faster. */
static void hash_looking_ahead(struct kv_querier *q, const struct kv_qsource *src, const struct kv_query *r,
			       size_t n)
{
	hash_blocks(q, r, 0, 1);
	look_ahead(q, src, r->part, n, 1);
	for (size_t from = 1; from < n;) {
		size_t to = (from - 1) / AHEAD_STEP * AHEAD_STEP + AHEAD_STEP + 1;
		to = to < n ? to : n;
		hash_blocks(q, r, from, to);
		look_ahead(q, src, r->part, n, to);
		from = to;
	}
}

/* The query's chains in q->chain, and the local hash of its first block
 * (routing's tie-break; 0 for chains given).  Chains or local hashes given
 * are read where they are, not copied. */
static size_t hash_query(struct kv_querier *q, const struct kv_qsource *src, const struct kv_query *r)
{
	size_t n = query_blocks(r);
	q->first_local = 0;
	start_checkpoints(q, n);
	if (r->chains) {
		q->chain = r->chains;
		return n;
	}
	q->chain = q->chains;
	if (n && (r->tokens || !src->snap))
		hash_blocks(q, r, 0, n);
	else if (n)
		hash_looking_ahead(q, src, r, n);
	if (n)
		q->first_local = r->tokens ? q->local[0] : r->locals[0];
	return n;
}

/* Block i, in whose media (bits) the worker has it, and the len - 1
 * blocks after it with the same holders.  Once the first of them is
 * stepped, every walk still alive has its medium in bits and none can
 * start: the others only lengthen the live walks, and count the same own
 * cpu blocks as the first. */
static inline bool step_run(struct wstate *s, uint32_t i, uint32_t len, unsigned bits, unsigned own)
{
	uint32_t own_before = s->cpu_own;
	if (!step(s, i, bits, own))
		return false;
	if (len > 1) {
		uint32_t end = i + len;
		s->npu_end = s->npu ? end : s->npu_end;
		s->cpu0_end = s->cpu0 ? end : s->cpu0_end;
		s->cpu1_end = s->cpu1 ? end : s->cpu1_end;
		s->disk0_end = s->disk0 ? end : s->disk0_end;
		s->disk1_end = s->disk1 ? end : s->disk1_end;
		s->cpu_own += (s->cpu_own - own_before) * (len - 1);
	}
	return true;
}

/* Where a run goes on: the block after it, held or not. */
struct run_end {
	struct kv_qblock next;
	bool held;
};

/* Live index: blocks one by one while they have block i's holders. */
static size_t live_run(const struct kv_querier *q, const struct kv_qsource *src, uint32_t part, size_t i, size_t n,
		       const struct kv_qblock *cur, struct run_end *end)
{
	size_t j = i + 1;
	for (; j < n; j++) {
		if (j + LIVE_AHEAD < n)
			kv_qsource_prefetch(src, part, q->chain[j + LIVE_AHEAD], 0);
		end->held = kv_qsource_block(src, part, q->chain[j], &end->next);
		if (!end->held || end->next.set != cur->set)
			break;
	}
	return j - i;
}

/* Block j as continues() reads it: from what read_checkpoint kept of it
 * when it is a checkpoint read, else looked up. */
static bool block_at(const struct kv_querier *q, const struct kv_qsource *src, uint32_t part, size_t j, size_t n,
		     struct kv_qblock *b)
{
	ptrdiff_t k = checkpoint_of(j, n);
	if (k >= 0 && (size_t)k < q->nck) {
		*b = q->ck[k];
		return b->h != NULL;
	}
	return kv_qsource_block(src, part, q->chain[j], b);
}

/* Where a jump failed: the block where the run most often ends and the
 * one after it, where the next run begins, fetched together. */
static void fetch_pair(const struct kv_querier *q, const struct kv_qsource *src, uint32_t part, size_t last)
{
	for (int stage = 0; stage < 2; stage++) {
		kv_qsource_prefetch(src, part, q->chain[last], stage);
		kv_qsource_prefetch(src, part, q->chain[last + 1], stage);
	}
}

/* Whether block j is held with set, its ancestors back to block lo (held
 * with set) too, by its run; *hi becomes lower when block j tells that the
 * run ends before it: blocks j - run .. j are held with block j's set, so
 * with another set none of them is in lo's run, and with the same set the
 * block before them breaks it. */
static bool continues(const struct kv_querier *q, const struct kv_qsource *src, uint32_t part, size_t lo, size_t j,
		      size_t n, uintptr_t set, size_t *hi)
{
	struct kv_qblock b;
	if (!block_at(q, src, part, j, n, &b))
		return false;
	if (b.set == set && b.run >= j - lo)
		return true;
	size_t first = j - (b.run < j - lo ? b.run : j - lo);   /* the first of block j's run past lo */
	size_t end = b.set == set ? first - 1 : first;
	*hi = end < *hi ? end : *hi;
	return false;
}

/* Snapshot: block i's holders go on through block lo while the next
 * checkpoint (or the last block) is held with them and its run reaches
 * back to lo; where that fails, the run's last block is searched between,
 * where the failed block said the run ends first (a block is in the run
 * exactly when its run reaches back to lo). */
static size_t snap_run(struct kv_querier *q, const struct kv_qsource *src, uint32_t part, size_t i, size_t n,
		       const struct kv_qblock *cur, struct run_end *end)
{
	size_t lo = i, hi = n;
	if (i == 0 && n > 1)
		read_checkpoints(q, src, part, n, cur);
	while (lo + 1 < hi) {
		size_t j = next_checkpoint(lo) < n ? next_checkpoint(lo) : n - 1;
		size_t h = j;
		if (!continues(q, src, part, lo, j, n, cur->set, &h)) {
			hi = h;
			break;
		}
		lo = j;
	}
	/* Most often the run ends just before where the failed block's began,
	 * and the next run begins there; else just before where the run of
	 * the block before it begins, and so on back over a few short runs
	 * (each probe a pair of lookups fetched together), before a binary
	 * search. */
	for (int back = 0; back < BACK_PROBES && lo + 1 < hi; back++) {
		if (hi < n)
			fetch_pair(q, src, part, hi - 1);
		size_t h = hi - 1;
		if (continues(q, src, part, lo, hi - 1, n, cur->set, &h)) {
			lo = hi - 1;
			break;
		}
		bool told = h < hi - 1;
		hi = h;
		if (!told)
			break;   /* nobody holds it: the block says nothing of the runs before it */
	}
	while (lo + 1 < hi) {
		size_t mid = lo + (hi - lo) / 2, h = mid;
		if (continues(q, src, part, lo, mid, n, cur->set, &h))
			lo = mid;
		else
			hi = h;
	}
	if (lo + 1 < n)
		end->held = kv_qsource_block(src, part, q->chain[lo + 1], &end->next);
	return lo + 1 - i;
}

/* The first run without a shared pool: its holders start their walks
 * (q->active, sorted), the only workers that can match.  They all start
 * alike, so each combination of media is stepped once and its state copied
 * to the holders of the run in it (a state names no worker); one that
 * stops is finished as the loop of kv_query_run finishes it.  How many
 * walk on. */
static size_t first_run(struct kv_querier *q, const uint32_t *h, size_t nh, uint32_t len, uint32_t epoch,
			enum kv_stop elsewhere)
{
	struct wstate after[8];
	bool alive[8], stepped[8] = { false };
	size_t keep = 0;
	for (size_t k = 0; k < nh; k++) {
		unsigned own = KV_HOLDER_MEDIA(h[k]);
		if (!stepped[own]) {
			start_worker(&after[own], epoch);
			alive[own] = own && step_run(&after[own], 0, len, own, own);
			if (!alive[own])
				finish(&after[own], 0, own ? KV_STOP_OTHER_MEDIUM : elsewhere);
			stepped[own] = true;
		}
		q->w[KV_HOLDER_WORKER(h[k])] = after[own];
		if (alive[own])
			q->active[keep++] = KV_HOLDER_WORKER(h[k]);
	}
	return keep;
}

static int by_worker_name(const void *a, const void *b, void *ctx)
{
	const struct kv_qsource *s = ctx;
	const struct kv_hit *x = a, *y = b;
	return kv_workers_compare(&s->ws->v[x->worker], &s->ws->v[y->worker]);
}

/* Whether every holder of a block is a pool holder. */
static bool pools_only(const struct kv_qsource *src, const uint32_t *h, size_t nh)
{
	for (size_t k = 0; k < nh; k++)
		if (!kv_qsource_is_pool(src, KV_HOLDER_WORKER(h[k])))
			return false;
	return nh > 0;
}

const struct kv_hit *kv_query_run(struct kv_querier *q, struct kv_qsource *src, const struct kv_query *req,
				  const struct kv_query_opts *o, size_t *nhits, size_t *nblocks)
{
	kv_querier_reserve(q, src, req);
	size_t n = hash_query(q, src, req);
	*nblocks = n;
	q->src = src;
	if (++q->epoch == 0) {
		memset(q->w, 0, q->capw * sizeof *q->w);
		q->epoch = 1;
	}
	uint32_t epoch = q->epoch;
	size_t nactive = 0, ncand = 0;
	const uint32_t *cand = NULL;
	if (o->candidates) {
		cand = o->candidates;
		ncand = o->ncandidates;
	} else if (o->shared_pool) {
		cand = kv_qsource_pool_candidates(src, req->part, &ncand);
	} else if (o->all_workers) {
		cand = kv_qsource_partition_workers(src, req->part, &ncand);
	}
	if (o->shared_pool) {
		for (size_t k = 0; k < ncand; k++) {
			start_worker(&q->w[cand[k]], epoch);
			q->active[nactive++] = cand[k];
		}
	}
	uint32_t i = 0;
	enum kv_stop end_why = KV_STOP_END;
	struct run_end at = { .held = false };
	if (n)
		at.held = kv_qsource_block(src, req->part, q->chain[0], &at.next);
	const struct run_end block0 = at;
	while (i < n && (nactive > 0 || i == 0)) {
		if (!at.held) {
			end_why = KV_STOP_NOT_IN_INDEX;
			break;
		}
		struct kv_qblock cur = at.next;
		at.held = false;
		size_t len = src->snap ? snap_run(q, src, req->part, i, n, &cur, &at) : live_run(q, src, req->part, i, n, &cur, &at);
		size_t nh = cur.n;
		const uint32_t *h = cur.h;
		unsigned pool = 0;
		if (o->shared_pool)
			for (size_t k = 0; k < nh; k++)
				pool |= KV_HOLDER_MEDIA(h[k]) & (KV_MEDIUM_BIT(KV_CPU) | KV_MEDIUM_BIT(KV_DISK));
		enum kv_stop elsewhere = pools_only(src, h, nh) ? KV_STOP_POOL_ONLY : KV_STOP_ELSEWHERE;
		if (i == 0 && !o->shared_pool) {
			nactive = first_run(q, h, nh, (uint32_t)len, epoch, elsewhere);
			i += (uint32_t)len;
			continue;
		}
		/* Active workers and holders are both sorted by worker: walk them together. */
		size_t keep = 0, k = 0;
		for (size_t a = 0; a < nactive; a++) {
			uint32_t w = q->active[a];
			while (k < nh && KV_HOLDER_WORKER(h[k]) < w)
				k++;
			unsigned own = k < nh && KV_HOLDER_WORKER(h[k]) == w ? KV_HOLDER_MEDIA(h[k]) : 0;
			unsigned bits = o->shared_pool ? (own & KV_MEDIUM_BIT(KV_XPU)) | pool : own;
			/* A block held in no medium that counts for the worker (its
			 * fate at the first change of holders, most often) ends its
			 * walks where they are: step() would only start the cpu and
			 * disk walks from block i to end them at once, which to_hit
			 * reads as ending there anyway. */
			if (bits && step_run(&q->w[w], i, (uint32_t)len, bits, own))
				q->next[keep++] = w;
			else
				finish(&q->w[w], i, own ? KV_STOP_OTHER_MEDIUM : elsewhere);
		}
		uint32_t *t = q->active;
		q->active = q->next;
		q->next = t;
		nactive = keep;
		i += (uint32_t)len;
	}
	for (size_t a = 0; a < nactive; a++) {
		struct wstate *s = &q->w[q->active[a]];
		step(s, i, 0, 0);
		finish(s, i, end_why);
	}
	/* The hits, or every candidate (kv_querier_reserve made room for every worker) */
	size_t nh = 0;
	q->hits = scratch_room(q->hits, &q->caphits, ncand, sizeof *q->hits);
	if (cand) {
		for (size_t k = 0; k < ncand; k++) {
			struct wstate *s = &q->w[cand[k]];
			if (s->epoch != epoch) {
				start_worker(s, epoch);
				s->npu = s->cpu0 = s->disk0 = false;
				finish(s, 0, n == 0 ? KV_STOP_END : i == 0 && end_why == KV_STOP_NOT_IN_INDEX ? KV_STOP_NOT_IN_INDEX
													    : KV_STOP_ELSEWHERE);
			}
			struct kv_hit hit = to_hit(s, cand[k]);
			if (o->all_workers || hit.npu + hit.cpu + hit.disk)
				q->hits[nh++] = hit;
		}
	} else {
		/* Without candidates the workers met are those holding block 0. */
		for (size_t k = 0; block0.held && k < block0.next.n; k++) {
			uint32_t w = KV_HOLDER_WORKER(block0.next.h[k]);
			struct kv_hit hit = to_hit(&q->w[w], w);
			if (hit.npu + hit.cpu + hit.disk && !kv_qsource_is_pool(src, w))
				q->hits[nh++] = hit;
		}
	}
	/* snapshot workers are numbered in name order, and the hits came in
	 * worker order (block 0's holders, or the sorted candidates) */
	if (!src->snap)
		qsort_r(q->hits, nh, sizeof *q->hits, by_worker_name, src);
	*nhits = nh;
	return q->hits;
}

/* ---- routing ------------------------------------------------------------- */

double kv_hit_score(const struct kv_hit *h, const struct kv_weights *w)
{
	return w->npu * h->npu + w->cpu * h->cpu + w->disk * h->disk;
}

const struct kv_hit *kv_query_route(const struct kv_hit *hits, size_t n, const struct kv_weights *w,
				    const struct kv_querier *q)
{
	return kv_query_route_penalized(hits, n, w, q, NULL);
}

const struct kv_hit *kv_query_route_penalized(const struct kv_hit *hits, size_t n, const struct kv_weights *w,
					      const struct kv_querier *q, const double *penalty)
{
	const struct kv_hit *best = NULL;
	double best_score = 0;
	uint64_t best_tie = 0;
	for (size_t i = 0; i < n; i++) {
		const struct kv_hit *h = &hits[i];
		double sc = kv_hit_score(h, w) - (penalty ? penalty[h->worker] : 0);
		uint64_t tie = kv_mix64(((uint64_t)h->worker + 1) * 0x9e3779b97f4a7c15ull ^ q->first_local);
		bool better = !best || sc > best_score ||
			      (sc == best_score && (h->npu > best->npu ||
						    (h->npu == best->npu && (h->cpu > best->cpu ||
									     (h->cpu == best->cpu && tie > best_tie)))));
		if (better) {
			best = h;
			best_score = sc;
			best_tie = tie;
		}
	}
	return best;
}

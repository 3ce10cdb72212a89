/* query: prefix lookups against an index (kvquery(1)): per worker the
 * three walks (xpu from block 0; cpu from 0 and from the xpu end; disk from
 * 0 and from the farther of those ends), the exclusive block counts,
 * routing scores, why walks stop (query/answer writes the answers).  The same
 * code answers from a snapshot (kvquery) and from a live index (kvgen), each
 * behind a kv_qsource.  A walk goes by runs of blocks with the same
 * holders: the workers step once per run, not once per block.  From a
 * snapshot, whose blocks say how many ancestors share their holders, the
 * walk checks every KV_QUERY_JUMP-th block and searches back only where the
 * holders changed, so a query costs its hashing, about blocks/KV_QUERY_JUMP
 * lookups plus a few per change of holders, and work per holder of each
 * run; from a live index (kvgen) one lookup per block.  The lookups known
 * ahead are fetched early: while given local hashes are chained, the
 * checkpoints already chained are looked up a stage at a time (directory
 * slot, records, read) and where the runs they see start is fetched; what
 * is left (the last checkpoints; all of a token query's) is fetched
 * together after, each stage for all at once.  The walk stops at
 * the first block nobody holds. */
#ifndef KV_QUERY_H
#define KV_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "index/index.h"
#include "index/snap.h"
#include "index/snaplookup.h"
#include "index/workers.h"

/* Where answers come from: a snapshot or a live index. */
struct kv_qsource {
	const struct kv_snap *snap;
	const struct kv_index *ix;
	const struct kv_workers *ws;
	size_t nworkers;
	/* workers holding anything in each partition (candidates for routing,
	 * shared-pool walks and explanations), computed on first use */
	uint32_t **pworkers;
	size_t *npworkers;
	size_t npartitions;
	/* shared-pool candidates per partition of a snapshot, computed on first use */
	uint32_t **pcand;
	size_t *npcand;
	/* a live index's, computed at each use */
	uint32_t *live_cand;
};

void kv_qsource_snap(struct kv_qsource *s, const struct kv_snap *snap);
void kv_qsource_index(struct kv_qsource *s, const struct kv_index *ix, const struct kv_workers *ws);
void kv_qsource_free(struct kv_qsource *s);
/* A block as walks see it. */
struct kv_qblock {
	const uint32_t *h;    /* holders (worker << 3 | media), sorted; NULL when nobody holds it */
	size_t n;
	uintptr_t set;        /* two blocks have the same only when they have the same holders */
	uint32_t run;         /* ancestors just before it known to be held with its set (0: none known) */
};
/* false when nobody holds the block. */
bool kv_qsource_block(const struct kv_qsource *s, uint32_t part, uint64_t chain, struct kv_qblock *b);
/* A hint that chain is about to be looked up (stages: see kv_snap_prefetch). */
void kv_qsource_prefetch(const struct kv_qsource *s, uint32_t part, uint64_t chain, int stage);
const char *kv_qsource_worker(const struct kv_qsource *s, uint32_t w, size_t *len, int64_t *dp);
/* The workers holding anything in a partition, sorted; pool holders (kvmatch(1)
 * "Pool events") are no workers to answer for and are left out. */
const uint32_t *kv_qsource_partition_workers(struct kv_qsource *s, uint32_t part, size_t *n);
/* The candidates of a --shared-pool answer, sorted, as kv-conductor's
 * newest walk takes them (its registry's pod -> DP table, filtered to the
 * partition's model and tenant): the engine workers registered in the
 * partition, whether they hold anything or not; when none is, the workers
 * holding anything in it (kv_qsource_partition_workers).  Never pool
 * holders. */
const uint32_t *kv_qsource_pool_candidates(struct kv_qsource *s, uint32_t part, size_t *n);
/* Whether w is a pool holder: its blocks count for others under --shared-pool only. */
bool kv_qsource_is_pool(const struct kv_qsource *s, uint32_t w);

/* Why a worker's match stopped where it did (--explain). */
enum kv_stop {
	KV_STOP_END,           /* the query has no more blocks */
	KV_STOP_NOT_IN_INDEX,  /* nobody holds the next block */
	KV_STOP_ELSEWHERE,     /* the next block is held by other workers only */
	KV_STOP_OTHER_MEDIUM,  /* this worker holds it, but in a medium that does not continue its walk */
	KV_STOP_POOL_ONLY,     /* only a pool holder holds it: it counts under --shared-pool */
};
const char *kv_stop_name(enum kv_stop s);

struct kv_hit {
	uint32_t worker;
	uint32_t npu_end, cpu_end, disk_end;
	uint32_t npu, cpu, disk;          /* exclusive block counts */
	uint32_t cpu_local, cpu_remote;   /* shared pool: cpu blocks held by the worker itself, and not */
	uint32_t stop_at;                 /* first block not counted */
	enum kv_stop why;
};

struct kv_query {
	uint32_t part;
	size_t block_size;
	const uint32_t *tokens;           /* tokens, or ... */
	size_t ntokens;
	const uint64_t *locals;           /* ... local hashes (/query_by_hash), or ... */
	size_t nlocals;
	const uint64_t *chains;           /* ... prefix chains (RFC #1403 seq_hashes, resolved) */
	size_t nchains;
};

struct kv_query_opts {
	bool shared_pool;
	bool all_workers;                 /* report every candidate, hits or not (explain, routing) */
	const uint32_t *candidates;       /* the candidates, sorted; NULL: the partition's workers */
	size_t ncandidates;
};

struct kv_querier;

struct kv_querier *kv_querier_new(void);
void kv_querier_free(struct kv_querier *q);
/* Room for a query on src in q's arrays, made before it is answered: what
 * kv_query_run would otherwise grow under its first queries of each size,
 * the new memory faulted in at once (kvquery calls it before --timing's
 * clock starts; kv_query_run calls it too). */
void kv_querier_reserve(struct kv_querier *q, const struct kv_qsource *src, const struct kv_query *req);
/* Answers one query: hits for the workers with any, or every candidate
 * with all_workers, sorted by worker name; valid until the next call. */
const struct kv_hit *kv_query_run(struct kv_querier *q, struct kv_qsource *src, const struct kv_query *req,
				  const struct kv_query_opts *o, size_t *nhits, size_t *nblocks);

struct kv_weights {
	double npu, cpu, disk;
};
#define KV_WEIGHTS_DEFAULT ((struct kv_weights){ 1, 1, 0 })
double kv_hit_score(const struct kv_hit *h, const struct kv_weights *w);
/* The routing choice among hits (every candidate): the highest score, then
 * more xpu blocks, then more cpu blocks, then a rendezvous hash of the worker
 * and the query's first block (deterministic, and it spreads queries with
 * equal scores over the workers).  NULL when there is no candidate. */
const struct kv_hit *kv_query_route(const struct kv_hit *hits, size_t n, const struct kv_weights *w,
				    const struct kv_querier *q);
/* The same, each worker's score less penalty[worker] (kvgen's load term). */
const struct kv_hit *kv_query_route_penalized(const struct kv_hit *hits, size_t n, const struct kv_weights *w,
					      const struct kv_querier *q, const double *penalty);

#endif

/* answer: what kvquery writes for a query, once query.c has found the hits.
 * kv-conductor's /query answer and Mooncake RFC #1403's, byte for byte as
 * those servers serialise them; the route (--route) and the explanation
 * (--explain) as JSON lines; and each of them as rows of an aligned table
 * for people (--format table), under one header.  All through jsonw. */
#ifndef KV_ANSWER_H
#define KV_ANSWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/out.h"
#include "query/query.h"

enum kv_answer_kind {
	KV_ANSWER_CONDUCTOR,  /* kv-conductor's /query */
	KV_ANSWER_RFC,        /* RFC #1403's /query (--api mooncake) */
	KV_ANSWER_ROUTE,      /* the worker chosen (--route) */
	KV_ANSWER_EXPLAIN,    /* every candidate, where its match stopped and why (--explain) */
};

/* How a run's answers are written; zeroed, then set by the caller. */
struct kv_answers {
	struct kv_out *out;
	enum kv_answer_kind kind;
	bool table;                   /* rows for people, not JSON lines */
	bool shared_pool;             /* cpu_local and cpu_remote as walked, the table's LOCAL and REMOTE */
	bool show_routed;             /* explanations say which worker the route chose */
	struct kv_weights weights;    /* of the routes' scores */
	int name_width;               /* the table's instance column: the longest id, at least 8 */
	bool header_done;             /* the table's header is written before its first row */
	char *shown;                  /* an instance id cleaned for the table */
	size_t shown_cap;
};

/* One query's answer. */
struct kv_answer {
	uint64_t number;                  /* the query's number (bad lines count): the table's QUERY */
	const struct kv_qsource *src;
	const char *tenant;               /* the partition's tenant: answers are keyed by it */
	size_t tlen;
	const struct kv_hit *hits;        /* as kv_query_run gave them */
	size_t nhits, nblocks, block_size;
	const struct kv_hit *route;       /* the routing choice among hits (NULL: none, or no routing) */
	const char *instance;             /* RFC #1403's instance_id: its answer names that instance alone (NULL: all) */
};

void kv_answers_write(struct kv_answers *a, const struct kv_answer *q);
/* A query that could not be answered: a null line (a table has no row). */
void kv_answers_write_null(struct kv_answers *a);
void kv_answers_free(struct kv_answers *a);

/* The answer of kv-conductor's /query, byte for byte as it serialises it
 * (serde_json through a Value: compact, every object's keys sorted, every
 * DpBlocks field present):
 * {"<tenant>":{"<instance>":{"DP":{"<rank>":{"cpu_blocks":..,"cpu_local_blocks":..,
 *   "cpu_remote_blocks":..,"disk_blocks":..,"matched_tokens":..,"npu_blocks":..}},
 *   "longest_matched":N}}}.  Without shared_pool, cpu_local = cpu, cpu_remote = 0. */
void kv_query_write_answer(struct kv_out *o, const struct kv_qsource *src, const char *tenant, size_t tlen,
			   const struct kv_hit *hits, size_t n, size_t block_size, bool shared_pool);
/* The answer of Mooncake RFC #1403's /query (Mooncake Conductor, Dynamo's
 * standalone indexer), in tokens, keys sorted as serde_json sorts them:
 * {"<tenant>":{"<instance>":{"CPU":c,"DISK":d,"DP":{"<rank>":t},"GPU":g,"longest_matched":L}}}
 * GPU, CPU and DISK cumulative through each tier (GPU <= CPU <= DISK, the
 * largest of the instance's ranks), DP each rank's matched tokens. */
void kv_query_write_rfc_answer(struct kv_out *o, const struct kv_qsource *src, const char *tenant, size_t tlen,
			       const struct kv_hit *hits, size_t n, size_t block_size);

#endif

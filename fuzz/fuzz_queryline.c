/* libFuzzer harness: kvquery's input lines (kvquery(1) "Queries": /query and
 * /query_by_hash bodies, bare token lists) through the streaming query
 * parser, one parser and one query for all the lines of an input, as
 * kvquery keeps them.  Each accepted query is then answered, routed and
 * written as kvquery does, against a small live index that holds the
 * blocks of tokens 0..31 (block size 16), so that the walks find hits.
 * Each line is parsed from a buffer of its own size, so that a read past
 * its end is caught.  Checked beyond "no crash": a rejected line has a
 * message; an accepted one has tokens or hashes, never both, and its model
 * and tenant when it says it has them. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "index/blockhash.h"
#include "index/index.h"
#include "base/out.h"
#include "query/answer.h"
#include "query/query.h"
#include "query/queryline.h"
#include "index/workers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct world {
	struct kv_index ix;
	struct kv_workers ws;
	struct kv_qsource src;
	struct kv_querier *q;
	uint32_t part;
};

static void world_init(struct world *w)
{
	uint32_t tokens[32];
	uint64_t local[2], chain[2];
	for (uint32_t i = 0; i < 32; i++)
		tokens[i] = i;
	kv_block_hashes(tokens, 32, 16, KV_CHAIN_ROOT, local, chain, 2);
	kv_index_init(&w->ix);
	kv_workers_init(&w->ws);
	w->part = kv_index_partition(&w->ix, "m", 1, "default", 7);
	uint32_t a = kv_workers_add(&w->ws, "node0", 0, "10.0.0.1", false);
	uint32_t b = kv_workers_add(&w->ws, "node1", 1, "10.0.0.2", false);
	kv_index_hold(&w->ix, w->part, chain[0], KV_CHAIN_ROOT, local[0], a, KV_XPU);
	kv_index_hold(&w->ix, w->part, chain[1], chain[0], local[1], a, KV_XPU);
	kv_index_hold(&w->ix, w->part, chain[0], KV_CHAIN_ROOT, local[0], b, KV_CPU);
	kv_index_hold(&w->ix, w->part, chain[1], chain[0], local[1], b, KV_DISK);
	kv_qsource_index(&w->src, &w->ix, &w->ws);
	w->q = kv_querier_new();
}

static void world_free(struct world *w)
{
	kv_querier_free(w->q);
	kv_qsource_free(&w->src);
	kv_workers_free(&w->ws);
	kv_index_free(&w->ix);
}

/* kvquery's answer to a parsed query: every output form, options by line number. */
static void answer(struct world *w, const struct kv_qline *q, unsigned lineno)
{
	struct kv_query req = { w->part, q->has_block_size ? q->block_size : 16, q->by_hash ? NULL : q->tokens,
				q->ntokens, q->by_hash ? q->hashes : NULL, q->nhashes, NULL, 0 };
	struct kv_query_opts o = { .shared_pool = lineno & 1, .all_workers = lineno & 2 };
	size_t nhits, nblocks;
	const struct kv_hit *hits = kv_query_run(w->q, &w->src, &req, &o, &nhits, &nblocks);
	struct kv_weights wt = KV_WEIGHTS_DEFAULT;
	const struct kv_hit *route = kv_query_route(hits, nhits, &wt, w->q);
	if (route && (route < hits || route >= hits + nhits))
		__builtin_trap();
	struct kv_out out;
	kv_out_open_mem(&out);
	const char *tenant = q->has_tenant ? q->tenant : "default";
	kv_query_write_answer(&out, &w->src, tenant, strlen(tenant), hits, nhits, req.block_size, o.shared_pool);
	kv_out_free_mem(&out);
}

static void check_line(struct world *w, struct kv_qparser *p, struct kv_qline *q, const char *line, size_t n,
		       unsigned lineno)
{
	if (!kv_qparse(p, line, n, q)) {
		if (!kv_qparser_error(p)[0])
			__builtin_trap();
		return;
	}
	if ((q->by_hash && q->ntokens) || (!q->by_hash && q->nhashes) || (q->has_model && !q->model) ||
	    (q->has_tenant && !q->tenant) || (q->has_block_size && (q->block_size == 0 || q->block_size > 1u << 20)))
		__builtin_trap();
	answer(w, q, lineno);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct world w;
	world_init(&w);
	struct kv_qparser *p = kv_qparser_new();
	struct kv_qline q = { 0 };
	const char *s = (const char *)data, *end = s + size;
	for (unsigned lineno = 1; s < end; lineno++) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = (size_t)((nl ? nl : end) - s);
		char *line = malloc(n ? n : 1);
		memcpy(line, s, n);
		check_line(&w, p, &q, line, n, lineno);
		free(line);
		s += n + 1;
	}
	free(q.tokens);
	free(q.hashes);
	kv_qparser_free(p);
	world_free(&w);
	return 0;
}

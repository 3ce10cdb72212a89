/* The answers kvquery writes (query/answer.c), byte for byte, in each shape
 * (kvquery(1) "Answer"): kv-conductor's /query, RFC #1403's (--api
 * mooncake), --route and --explain, as JSON lines and as a table, on a
 * small live index whose counts are worked out by hand.  The query has a
 * trailing partial block: it is hashed and walked, and matches nothing,
 * so the tokens answered are whole blocks only. */
#include <stdlib.h>
#include <string.h>

#include "base/out.h"
#include "index/blockhash.h"
#include "index/index.h"
#include "index/workers.h"
#include "query/answer.h"
#include "query/query.h"
#include "unit.h"

#define BS 4
#define FULL 5                     /* complete blocks the index knows */
#define NTOKENS (FULL * BS + 2)    /* the query: five blocks and half of a sixth */
static uint32_t tokens[NTOKENS];
static uint64_t chain[FULL + 1], local[FULL + 1];

struct world {
	struct kv_index ix;
	struct kv_workers ws;
	struct kv_qsource src;
	struct kv_querier *q;
	uint32_t part;
	struct kv_out out;
};

static void hold(struct world *w, uint32_t worker, int from, int to, enum kv_medium m)
{
	for (int i = from; i < to; i++)
		kv_index_hold(&w->ix, w->part, chain[i], i ? chain[i - 1] : KV_CHAIN_ROOT, local[i], worker, m);
}

/* a/0 (worker 0) holds blocks 0-2 in xpu, a/1 blocks 0-1 in cpu, b/0
 * blocks 0-4 on disk; nobody the partial block 5. */
static void world_init(struct world *w)
{
	for (int i = 0; i < NTOKENS; i++)
		tokens[i] = 500 + (uint32_t)i;
	ASSERT_EQ_U64(kv_block_hashes(tokens, NTOKENS, BS, KV_CHAIN_ROOT, local, chain, FULL + 1), FULL + 1);
	kv_index_init(&w->ix);
	kv_workers_init(&w->ws);
	w->part = kv_index_partition(&w->ix, "m", 1, "default", 7);
	kv_workers_add(&w->ws, "a", 0, "h1", false);
	kv_workers_add(&w->ws, "a", 1, "h1", false);
	kv_workers_add(&w->ws, "b", 0, "h2", false);
	hold(w, 0, 0, 3, KV_XPU);
	hold(w, 1, 0, 2, KV_CPU);
	hold(w, 2, 0, FULL, KV_DISK);
	kv_qsource_index(&w->src, &w->ix, &w->ws);
	w->q = kv_querier_new();
	kv_out_open_mem(&w->out);
}

static void world_free(struct world *w)
{
	kv_out_free_mem(&w->out);
	kv_querier_free(w->q);
	kv_qsource_free(&w->src);
	kv_workers_free(&w->ws);
	kv_index_free(&w->ix);
}

/* The text of the answers to the query of ntokens tokens, in shape kind. */
static const char *answered(struct world *w, enum kv_answer_kind kind, bool table, size_t ntokens)
{
	struct kv_answers a = { .out = &w->out, .kind = kind, .table = table, .show_routed = kind == KV_ANSWER_EXPLAIN,
				.weights = KV_WEIGHTS_DEFAULT, .name_width = 8 };
	struct kv_query req = { w->part, BS, tokens, ntokens, NULL, 0, NULL, 0 };
	struct kv_query_opts o = { .all_workers = kind == KV_ANSWER_EXPLAIN || kind == KV_ANSWER_ROUTE };
	size_t nhits, nblocks;
	const struct kv_hit *hits = kv_query_run(w->q, &w->src, &req, &o, &nhits, &nblocks);
	const struct kv_hit *route = kind == KV_ANSWER_ROUTE || kind == KV_ANSWER_EXPLAIN
					     ? kv_query_route(hits, nhits, &a.weights, w->q) : NULL;
	struct kv_answer q = { 7, &w->src, "default", 7, hits, nhits, nblocks, BS, route, NULL };
	w->out.len = 0;
	kv_answers_write(&a, &q);
	kv_answers_free(&a);
	kv_out_putc(&w->out, '\0');
	return w->out.buf;
}

/* a/0 3 xpu blocks (12 tokens), a/1 2 cpu (8), b/0 5 on disk (20, not 22:
 * the partial block matched nothing); keys sorted, every DpBlocks field. */
static void conductor_answer(void)
{
	struct world w;
	world_init(&w);
	ASSERT_EQ_STR(answered(&w, KV_ANSWER_CONDUCTOR, false, NTOKENS),
		      "{\"default\":{\"a\":{\"DP\":{"
		      "\"0\":{\"cpu_blocks\":0,\"cpu_local_blocks\":0,\"cpu_remote_blocks\":0,\"disk_blocks\":0,"
		      "\"matched_tokens\":12,\"npu_blocks\":3},"
		      "\"1\":{\"cpu_blocks\":2,\"cpu_local_blocks\":2,\"cpu_remote_blocks\":0,\"disk_blocks\":0,"
		      "\"matched_tokens\":8,\"npu_blocks\":0}},\"longest_matched\":12},"
		      "\"b\":{\"DP\":{"
		      "\"0\":{\"cpu_blocks\":0,\"cpu_local_blocks\":0,\"cpu_remote_blocks\":0,\"disk_blocks\":5,"
		      "\"matched_tokens\":20,\"npu_blocks\":0}},\"longest_matched\":20}}}\n");
	world_free(&w);
}

/* RFC #1403: tiers cumulative over the instance's ranks (a: GPU 12, CPU
 * max(12, 0 + 8), DISK 12), DP each rank's tokens; complete blocks only, so
 * the query cut to them (as kvquery cuts it) answers the same. */
static void rfc_answer(void)
{
	struct world w;
	world_init(&w);
	const char *want = "{\"default\":{\"a\":{\"CPU\":12,\"DISK\":12,\"DP\":{\"0\":12,\"1\":8},\"GPU\":12,"
			   "\"longest_matched\":12},"
			   "\"b\":{\"CPU\":0,\"DISK\":20,\"DP\":{\"0\":20},\"GPU\":0,\"longest_matched\":20}}}\n";
	ASSERT_EQ_STR(answered(&w, KV_ANSWER_RFC, false, NTOKENS), want);
	ASSERT_EQ_STR(answered(&w, KV_ANSWER_RFC, false, FULL * BS), want);
	world_free(&w);
}

/* Scores with weights 1,1,0: a/0 3, a/1 2, b/0 0 (disk weighs nothing). */
static void route_answer(void)
{
	struct world w;
	world_init(&w);
	ASSERT_EQ_STR(answered(&w, KV_ANSWER_ROUTE, false, NTOKENS),
		      "{\"tenant\":\"default\",\"instance_id\":\"a\",\"dp_rank\":0,\"score\":3,\"matched_tokens\":12,"
		      "\"npu_blocks\":3,\"cpu_blocks\":0,\"disk_blocks\":0}\n");
	world_free(&w);
}

/* Six blocks walked (the partial one too); a/0 and a/1 stop where the
 * next block is held by others only, b/0 where nobody holds it. */
static void explain_answer(void)
{
	struct world w;
	world_init(&w);
	ASSERT_EQ_STR(answered(&w, KV_ANSWER_EXPLAIN, false, NTOKENS),
		      "{\"tenant\":\"default\",\"blocks\":6,\"block_size\":4,\"workers\":["
		      "{\"instance_id\":\"a\",\"dp_rank\":0,\"npu_blocks\":3,\"cpu_blocks\":0,\"disk_blocks\":0,"
		      "\"matched_blocks\":3,\"stopped_at\":3,\"reason\":\"held_elsewhere\",\"routed\":true},"
		      "{\"instance_id\":\"a\",\"dp_rank\":1,\"npu_blocks\":0,\"cpu_blocks\":2,\"disk_blocks\":0,"
		      "\"matched_blocks\":2,\"stopped_at\":2,\"reason\":\"held_elsewhere\",\"routed\":false},"
		      "{\"instance_id\":\"b\",\"dp_rank\":0,\"npu_blocks\":0,\"cpu_blocks\":0,\"disk_blocks\":5,"
		      "\"matched_blocks\":5,\"stopped_at\":5,\"reason\":\"not_in_index\",\"routed\":false}]}\n");
	world_free(&w);
}

/* --format table: one header, then a row per hit, route or candidate. */
static void table_answers(void)
{
	struct world w;
	world_init(&w);
	ASSERT_EQ_STR(answered(&w, KV_ANSWER_CONDUCTOR, true, NTOKENS),
		      "QUERY  INSTANCE   DP   TOKENS   NPU   CPU  DISK\n"
		      "7      a           0       12     3     0     0\n"
		      "7      a           1        8     0     2     0\n"
		      "7      b           0       20     0     0     5\n");
	ASSERT_EQ_STR(answered(&w, KV_ANSWER_ROUTE, true, NTOKENS),
		      "QUERY  ROUTE      DP   TOKENS    SCORE   NPU   CPU  DISK\n"
		      "7      a           0       12        3     3     0     0\n");
	ASSERT_EQ_STR(answered(&w, KV_ANSWER_EXPLAIN, true, NTOKENS),
		      "QUERY  INSTANCE   DP   NPU   CPU  DISK     STOP/BLOCKS REASON\n"
		      "7      a           0     3     0     0       3/6       held_elsewhere (routed)\n"
		      "7      a           1     0     2     0       2/6       held_elsewhere\n"
		      "7      b           0     0     0     5       5/6       not_in_index\n");
	world_free(&w);
}

/* A query that could not be answered: null as a JSON line, nothing in a table. */
static void null_answer(void)
{
	struct kv_out o;
	kv_out_open_mem(&o);
	struct kv_answers a = { .out = &o, .kind = KV_ANSWER_RFC };
	kv_answers_write_null(&a);
	a.table = true;
	kv_answers_write_null(&a);
	kv_out_putc(&o, '\0');
	ASSERT_EQ_STR(o.buf, "null\n");
	kv_out_free_mem(&o);
}

int main(void)
{
	RUN(conductor_answer);
	RUN(rfc_answer);
	RUN(route_answer);
	RUN(explain_answer);
	RUN(table_answers);
	RUN(null_answer);
	return unit_done();
}

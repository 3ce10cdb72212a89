/* The walk rules of kv-conductor's /query, hand-computed, on a live index:
 * holes in xpu filled by cpu, cpu beyond npu, disk from 0 and from the cpu
 * end, middle segments that must not count, the shared pool, routing ties. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "index/blockhash.h"
#include "index/index.h"
#include "query/query.h"
#include "unit.h"
#include "index/workers.h"

#define N 10
static uint32_t tokens[N];   /* block size 1: block i is token i + 100 */
static uint64_t chain[N], local[N];

struct world {
	struct kv_index ix;
	struct kv_workers ws;
	struct kv_qsource src;
	struct kv_querier *q;
	uint32_t part;
};

static void world_init(struct world *w)
{
	for (int i = 0; i < N; i++)
		tokens[i] = 100 + (uint32_t)i;
	kv_block_hashes(tokens, N, 1, KV_CHAIN_ROOT, local, chain, N);
	kv_index_init(&w->ix);
	kv_workers_init(&w->ws);
	w->part = kv_index_partition(&w->ix, "m", 1, "default", 7);
	kv_workers_add(&w->ws, "a", 0, "h1", false);
	kv_workers_add(&w->ws, "a", 1, "h1", false);
	kv_workers_add(&w->ws, "b", 0, "h2", false);
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

/* "xxcc.d" for worker w: block i held in x(pu), c(pu), d(isk), or . nothing;
 * several letters per block as "[xc]". */
static void hold(struct world *w, uint32_t worker, const char *pattern)
{
	int i = 0;
	for (const char *p = pattern; *p && i < N; p++, i++) {
		const char *end = p;
		if (*p == '[')
			end = strchr(p, ']');
		for (const char *c = *p == '[' ? p + 1 : p; c <= end && *c != ']'; c++) {
			enum kv_medium m = *c == 'x' ? KV_XPU : *c == 'c' ? KV_CPU : *c == 'd' ? KV_DISK : KV_UNKNOWN;
			if (m != KV_UNKNOWN)
				kv_index_hold(&w->ix, w->part, chain[i], i ? chain[i - 1] : KV_CHAIN_ROOT, local[i], worker, m);
		}
		p = end;
	}
}

static const struct kv_hit *ask(struct world *w, size_t nblocks, bool shared, bool all, size_t *n)
{
	struct kv_query req = { w->part, 1, tokens, nblocks, NULL, 0, NULL, 0 };
	struct kv_query_opts o = { .shared_pool = shared, .all_workers = all };
	size_t nb;
	return kv_query_run(w->q, &w->src, &req, &o, n, &nb);
}

static const struct kv_hit *of(const struct kv_hit *h, size_t n, uint32_t worker)
{
	for (size_t i = 0; i < n; i++)
		if (h[i].worker == worker)
			return &h[i];
	return NULL;
}

#define EXPECT(h, n, worker, npu_, cpu_, disk_) do { const struct kv_hit *x_ = of(h, n, worker); \
	ASSERT(x_); ASSERT_EQ_U64(x_->npu, npu_); ASSERT_EQ_U64(x_->cpu, cpu_); ASSERT_EQ_U64(x_->disk, disk_); } while (0)

static void xpu_prefix_only(void)
{
	struct world w;
	world_init(&w);
	hold(&w, 0, "xxx.x");
	size_t n;
	const struct kv_hit *h = ask(&w, 5, false, false, &n);
	ASSERT_EQ_U64(n, 1);
	EXPECT(h, n, 0, 3, 0, 0);
	world_free(&w);
}

static void hole_in_xpu_filled_by_cpu(void)
{
	struct world w;
	world_init(&w);
	hold(&w, 0, "xx[c]xx");  /* xpu 0,1,3,4; cpu 2 */
	size_t n;
	const struct kv_hit *h = ask(&w, 5, false, false, &n);
	/* npu_end 2; cpu from npu_end covers block 2 only: 2 + 1 */
	EXPECT(h, n, 0, 2, 1, 0);
	world_free(&w);
}

static void cpu_beyond_npu_from_zero(void)
{
	struct world w;
	world_init(&w);
	hold(&w, 0, "[xc][xc]cccc");  /* cpu 0..5, xpu 0..1 */
	size_t n;
	const struct kv_hit *h = ask(&w, 8, false, false, &n);
	EXPECT(h, n, 0, 2, 4, 0);
	ASSERT_EQ_U64(h[0].stop_at, 6);
	ASSERT(h[0].why == KV_STOP_NOT_IN_INDEX);
	world_free(&w);
}

static void disk_from_zero(void)
{
	struct world w;
	world_init(&w);
	hold(&w, 0, "[xd][d]dd");
	size_t n;
	const struct kv_hit *h = ask(&w, 4, false, false, &n);
	EXPECT(h, n, 0, 1, 0, 3);
	world_free(&w);
}

static void disk_continues_from_cpu_end(void)
{
	struct world w;
	world_init(&w);
	hold(&w, 0, "xccddd.d");
	size_t n;
	const struct kv_hit *h = ask(&w, 8, false, false, &n);
	EXPECT(h, n, 0, 1, 2, 3);
	world_free(&w);
}

static void middle_segment_does_not_count(void)
{
	struct world w;
	world_init(&w);
	hold(&w, 0, "x");
	hold(&w, 2, ".xxx");        /* b holds blocks 1..3 only */
	size_t n;
	const struct kv_hit *h = ask(&w, 4, false, false, &n);
	ASSERT_EQ_U64(n, 1);
	ASSERT(of(h, n, 2) == NULL);
	/* explained, b stopped at block 0, held elsewhere */
	h = ask(&w, 4, false, true, &n);
	ASSERT_EQ_U64(n, 2);
	const struct kv_hit *b = of(h, n, 2);
	ASSERT(b && b->npu == 0 && b->stop_at == 0 && b->why == KV_STOP_ELSEWHERE);
	const struct kv_hit *a = of(h, n, 0);
	ASSERT(a && a->stop_at == 1 && a->why == KV_STOP_ELSEWHERE);
	world_free(&w);
}

static void other_medium_is_explained(void)
{
	struct world w;
	world_init(&w);
	hold(&w, 0, "x.x");
	hold(&w, 1, "xcx");
	size_t n;
	const struct kv_hit *h = ask(&w, 3, false, true, &n);
	const struct kv_hit *a = of(h, n, 0);
	/* a holds block 1 nowhere: elsewhere; a/1 holds block 2 in xpu, past its walks */
	ASSERT(a && a->npu == 1 && a->why == KV_STOP_ELSEWHERE);
	const struct kv_hit *a1 = of(h, n, 1);
	ASSERT(a1 && a1->npu == 1 && a1->cpu == 1 && a1->stop_at == 2 && a1->why == KV_STOP_OTHER_MEDIUM);
	world_free(&w);
}

static void shared_pool_counts_anyones_cpu(void)
{
	struct world w;
	world_init(&w);
	hold(&w, 0, "xx");
	hold(&w, 2, "[xc]cc[c]");
	size_t n;
	const struct kv_hit *h = ask(&w, 5, false, false, &n);
	EXPECT(h, n, 0, 2, 0, 0);
	EXPECT(h, n, 2, 1, 3, 0);
	h = ask(&w, 5, true, false, &n);
	/* a: npu 2, then pool cpu 2..3: 2 remote; b: npu 1, cpu 1..3 all its own */
	EXPECT(h, n, 0, 2, 2, 0);
	const struct kv_hit *a = of(h, n, 0);
	ASSERT_EQ_U64(a->cpu_local, 0);
	ASSERT_EQ_U64(a->cpu_remote, 2);
	EXPECT(h, n, 2, 1, 3, 0);
	ASSERT_EQ_U64(of(h, n, 2)->cpu_local, 3);
	world_free(&w);
}

/* A shared pool's blocks go to the workers registered in the partition:
 * a worker's model is its partition's name whole ("m" is not "mx"). */
static void pool_candidates_by_whole_model(void)
{
	struct world w;
	world_init(&w);
	uint32_t mx = kv_index_partition(&w.ix, "mx", 2, "default", 7);
	uint32_t c = kv_workers_add(&w.ws, "c", 0, "h3", false);
	w.ws.v[0].model = strdup("m");
	w.ws.v[c].model = strdup("mx");
	kv_qsource_free(&w.src);   /* the source sees the workers of when it was made */
	kv_qsource_index(&w.src, &w.ix, &w.ws);
	size_t n;
	const uint32_t *cand = kv_qsource_pool_candidates(&w.src, w.part, &n);
	ASSERT_EQ_U64(n, 1);
	ASSERT_EQ_U64(cand[0], 0);
	cand = kv_qsource_pool_candidates(&w.src, mx, &n);
	ASSERT_EQ_U64(n, 1);
	ASSERT_EQ_U64(cand[0], c);
	world_free(&w);
}

/* The workers that hold a partition's blocks are workers: a pool holder
 * (a decoupled pool's blocks) is none of them. */
static void partition_workers_leave_pools_out(void)
{
	struct world w;
	world_init(&w);
	uint32_t pool = kv_workers_add(&w.ws, "mooncake-daemon-0", -1, NULL, false);
	w.ws.v[pool].pool = true;
	hold(&w, pool, "cc");
	hold(&w, 2, "x");
	kv_qsource_free(&w.src);
	kv_qsource_index(&w.src, &w.ix, &w.ws);
	size_t n;
	const uint32_t *ws = kv_qsource_partition_workers(&w.src, w.part, &n);
	ASSERT_EQ_U64(n, 1);
	ASSERT_EQ_U64(ws[0], 2);
	world_free(&w);
}

static void routing_and_ties(void)
{
	struct world w;
	world_init(&w);
	hold(&w, 0, "xx");
	hold(&w, 1, "ccc");
	hold(&w, 2, "xx");
	size_t n;
	const struct kv_hit *h = ask(&w, 3, false, true, &n);
	struct kv_weights wt = KV_WEIGHTS_DEFAULT;
	const struct kv_hit *r = kv_query_route(h, n, &wt, w.q);
	ASSERT(r && r->worker == 1);                  /* 3 cpu blocks beat 2 npu blocks at weights 1,1,0 */
	wt = (struct kv_weights){ 1, 0.5, 0 };
	r = kv_query_route(h, n, &wt, w.q);
	ASSERT(r && (r->worker == 0 || r->worker == 2)); /* 2 > 1.5; a/0 and b/0 tie */
	const struct kv_hit *again = kv_query_route(h, n, &wt, w.q);
	ASSERT(again == r);                           /* deterministic */
	world_free(&w);
}

static void query_by_local_hashes(void)
{
	struct world w;
	world_init(&w);
	hold(&w, 0, "xxx");
	struct kv_query req = { w.part, 1, NULL, 0, local, 3, NULL, 0 };
	struct kv_query_opts o = { .shared_pool = false };
	size_t n, nb;
	const struct kv_hit *h = kv_query_run(w.q, &w.src, &req, &o, &n, &nb);
	ASSERT_EQ_U64(nb, 3);
	EXPECT(h, n, 0, 3, 0, 0);
	world_free(&w);
}

/* Mooncake RFC #1403's hash standard.  Check values from python3-xxhash, an
 * independent implementation:
 *   local = xxh3_64_intdigest(struct.pack('<%dI' % bs, *block), seed)
 *   seq = local if first else xxh3_64_intdigest(struct.pack('<QQ', prev, local), seed)
 * tests/kvquery.bats computes the same live. */
static void rfc_seq_hashes(void)
{
	uint32_t toks[12];
	uint64_t seq[4];
	for (uint32_t i = 0; i < 12; i++)
		toks[i] = i;
	/* tokens 0..9, block size 4, seed 0: two complete blocks, the partial one left out */
	ASSERT_EQ_U64(kv_rfc_seq_hashes(toks, 10, 4, 0, seq, 4), 2);
	ASSERT_EQ_U64(seq[0], 0xa1d0bd893c9531acull);
	ASSERT_EQ_U64(seq[1], 0xdb33494ff9c294ffull);
	for (uint32_t i = 0; i < 12; i++)
		toks[i] = 100 + i;
	ASSERT_EQ_U64(kv_rfc_seq_hashes(toks, 12, 4, 1337, seq, 4), 3);
	ASSERT_EQ_U64(seq[0], 0x57b89ffc89f07407ull);
	ASSERT_EQ_U64(seq[1], 0x2c31adba03ebb31aull);
	ASSERT_EQ_U64(seq[2], 0x2d9512d5eaba83aeull);
	ASSERT_EQ_U64(kv_rfc_seq_hashes(toks, 3, 4, 1337, seq, 4), 0);
}

/* Blocks of 16 tokens take a path of their own (XXH3 inlined with the
 * length a constant): the same local hashes and chains as libxxhash's own
 * XXH3 (called, not inlined), for full blocks and the partial one after. */
static void sixteen_token_blocks(void)
{
	uint32_t toks[40];
	uint64_t loc[3], ch[3];
	for (uint32_t i = 0; i < 40; i++)
		toks[i] = 1000 + 77 * i;
	ASSERT_EQ_U64(kv_block_hashes(toks, 40, 16, KV_CHAIN_ROOT, loc, ch, 3), 3);
	uint64_t parent = KV_CHAIN_ROOT;
	for (int b = 0; b < 3; b++) {
		size_t len = b < 2 ? 16 : 8;
		ASSERT_EQ_U64(loc[b], XXH3_64bits_withSeed(toks + 16 * b, len * sizeof *toks, KV_HASH_SEED));
		parent = XXH3_64bits_withSeed(&loc[b], sizeof loc[b], parent);
		ASSERT_EQ_U64(ch[b], parent);
	}
}

int main(void)
{
	RUN(xpu_prefix_only);
	RUN(hole_in_xpu_filled_by_cpu);
	RUN(cpu_beyond_npu_from_zero);
	RUN(disk_from_zero);
	RUN(disk_continues_from_cpu_end);
	RUN(middle_segment_does_not_count);
	RUN(other_medium_is_explained);
	RUN(shared_pool_counts_anyones_cpu);
	RUN(pool_candidates_by_whole_model);
	RUN(partition_workers_leave_pools_out);
	RUN(routing_and_ties);
	RUN(query_by_local_hashes);
	RUN(rfc_seq_hashes);
	RUN(sixteen_token_blocks);
	return unit_done();
}

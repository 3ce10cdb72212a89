/* The walk from a snapshot, which jumps over runs of blocks with the same
 * holders, against the walk from the live index it was written from, which
 * looks at every block: random states of long prefixes (runs longer and
 * shorter than a jump, holes, holders changing anywhere, blocks whose
 * parent nobody holds), every query length, each option; every field of
 * every hit must agree.  Also the runs the writer stores, against their
 * definition. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/blockhash.h"
#include "index/index.h"
#include "index/matchstate.h"
#include "query/query.h"
#include "index/snap.h"
#include "index/snapload.h"
#include "index/snaplookup.h"
#include "index/snapstate.h"
#include "unit.h"
#include "index/workers.h"

#define N 700          /* blocks of the prefix: more than ten jumps */
#define WORKERS 5

static uint32_t tokens[N];
static uint64_t chain[N], local[N];

struct world {
	struct kv_index ix;
	struct kv_workers ws;
	struct kv_match m;
	uint32_t part;
};

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng_state >> 33) % n;
}

static void world_init(struct world *w)
{
	for (int i = 0; i < N; i++)
		tokens[i] = 7 + (uint32_t)i;
	kv_block_hashes(tokens, N, 1, KV_CHAIN_ROOT, local, chain, N);
	struct kv_match_opts o = { KV_PENDING_TTL_DEFAULT, KV_OFFLOAD_TTL_DEFAULT, KV_CONTENT_TTL_DEFAULT,
				   KV_MAX_PENDING_DEFAULT, false, 0, NULL, NULL };
	kv_index_init(&w->ix);
	kv_workers_init(&w->ws);
	kv_match_init(&w->m, &w->ix, &w->ws, &o);
	w->part = kv_index_partition(&w->ix, "m", 1, "default", 7);
	for (uint32_t k = 0; k < WORKERS; k++)
		kv_workers_add(&w->ws, k < 3 ? "a" : "b", k, "h", false);
	kv_workers_pool_holder(&w->ws, (struct kv_str){ "pool", 4 });
}

static void world_free(struct world *w)
{
	kv_match_free(&w->m);
	kv_workers_free(&w->ws);
	kv_index_free(&w->ix);
}

/* Holders change at a few random places, so that runs of every length
 * occur, each worker a medium more or less at a time (so that its walks
 * live long and meet every change: xpu to cpu, cpu to disk, ...); some
 * blocks nobody holds. */
static void random_state(struct world *w)
{
	unsigned media[WORKERS + 1] = { 0 };
	for (uint32_t k = 0; k <= WORKERS; k++)
		media[k] = 1 + rnd(7);
	for (size_t i = 0; i < N; i++) {
		if (i > 0 && rnd(30) == 0)
			for (uint32_t k = 0; k <= WORKERS; k++)
				media[k] ^= rnd(2) ? 1u << rnd(3) : 0;
		if (rnd(150) == 0)
			continue; /* a hole: the blocks after it have no parent held */
		for (uint32_t k = 0; k <= WORKERS; k++)
			for (enum kv_medium m = KV_XPU; m <= KV_DISK; m++)
				if (media[k] & KV_MEDIUM_BIT(m))
					kv_index_hold(&w->ix, w->part, chain[i], i ? chain[i - 1] : KV_CHAIN_ROOT, local[i], k, m);
	}
}

static bool load(struct world *w, struct kv_snap *s)
{
	char path[] = "/tmp/kvtools-walk-XXXXXX";
	struct kv_err e = { 0 };
	int fd = mkstemp(path);
	close(fd);
	bool ok = kv_snapstate_save(path, &w->ix, &w->ws, &w->m, &e) && kv_snapr_load(path, s, &e);
	unlink(path);
	if (!ok)
		printf("# %s\n", kv_err_msg(&e));
	kv_err_clear(&e);
	return ok;
}

static bool same_hits(const struct kv_hit *a, size_t na, const struct kv_hit *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (a[i].worker != b[i].worker || a[i].npu_end != b[i].npu_end || a[i].cpu_end != b[i].cpu_end ||
		    a[i].disk_end != b[i].disk_end || a[i].npu != b[i].npu || a[i].cpu != b[i].cpu ||
		    a[i].disk != b[i].disk || a[i].cpu_local != b[i].cpu_local || a[i].cpu_remote != b[i].cpu_remote ||
		    a[i].stop_at != b[i].stop_at || a[i].why != b[i].why)
			return false;
	return true;
}

/* Snapshot workers are sorted by name, live ones are not: the same here,
 * since they were added in name order. */
static void agree(struct world *w, struct kv_snap *s, size_t nblocks, bool shared, bool all, bool by_hash)
{
	struct kv_qsource live, snap;
	kv_qsource_index(&live, &w->ix, &w->ws);
	kv_qsource_snap(&snap, s);
	struct kv_querier *ql = kv_querier_new(), *qs = kv_querier_new();
	struct kv_query req = { (uint32_t)kv_snap_partition(s, "m", 1, "default", 7), 1, tokens, nblocks,
				NULL, 0, NULL, 0 };
	if (by_hash) {
		req.tokens = NULL;
		req.locals = local;
		req.nlocals = nblocks;
	}
	struct kv_query_opts o = { .shared_pool = shared, .all_workers = all };
	size_t nl, ns, bl, bs;
	struct kv_query lreq = req;
	lreq.part = w->part;
	const struct kv_hit *hl = kv_query_run(ql, &live, &lreq, &o, &nl, &bl);
	const struct kv_hit *hs = kv_query_run(qs, &snap, &req, &o, &ns, &bs);
	bool ok = bl == bs && same_hits(hl, nl, hs, ns);
	if (!ok)
		printf("# %zu blocks, shared %d, all %d: %zu hits live, %zu from the snapshot\n", nblocks, shared, all, nl, ns);
	kv_querier_free(ql);
	kv_querier_free(qs);
	kv_qsource_free(&live);
	kv_qsource_free(&snap);
	ASSERT(ok);
}

/* A random world of this seed, and its snapshot loaded. */
static bool random_world(uint64_t seed, struct world *w, struct kv_snap *s)
{
	rng_state = seed;
	world_init(w);
	random_state(w);
	return load(w, s);
}

static void snapshot_walk_agrees_with_live(void)
{
	for (uint64_t seed = 1; seed < 60; seed++) {
		struct world w;
		struct kv_snap s;
		ASSERT(random_world(seed, &w, &s));
		int before = unit_failures + unit_current_failed;
		for (size_t len = 0; len <= N && before == unit_failures + unit_current_failed; len += 1 + rnd(90))
			for (int opt = 0; opt < 8; opt++)
				agree(&w, &s, len, opt & 1, opt & 2, opt & 4);
		agree(&w, &s, N, false, false, false);
		kv_snapr_close(&s);
		world_free(&w);
		ASSERT(!unit_current_failed);
	}
}

/* A block's run: 0 unless its parent is held with the same holders, then
 * the parent's run and one, at most KV_SNAP_RUN_MAX. */
static void runs_follow_their_definition(void)
{
	for (uint64_t seed = 100; seed < 110; seed++) {
		struct world w;
		struct kv_snap s;
		ASSERT(random_world(seed, &w, &s));
		for (size_t i = 0; i < s.nblocks; i++) {
			uint64_t b = i, up = kv_snap_find(&s, 0, kv_snap_parent(&s, 0, b));
			bool held = up != KV_SNAP_NO_BLOCK;
			bool same = held && kv_snap_block_set(&s, up) == kv_snap_block_set(&s, b);
			unsigned want = same ? kv_snap_block_run(&s, up) + 1u : 0;
			ASSERT_EQ_U64(kv_snap_block_run(&s, b), want < KV_SNAP_RUN_MAX ? want : KV_SNAP_RUN_MAX);
			size_t n1, n2;
			const uint32_t *h1 = kv_snap_holders(&s, b, &n1);
			const uint32_t *h2 = held ? kv_snap_holders(&s, up, &n2) : NULL;
			/* sets are interned: the same holders, the same set */
			ASSERT(!held || same == (n1 == n2 && memcmp(h1, h2, n1 * sizeof *h1) == 0));
		}
		kv_snapr_close(&s);
		world_free(&w);
	}
}

/* Walks that begin where others end, over runs longer than a jump. */
static void walks_begin_inside_runs(void)
{
	static const unsigned seq[][3] = { { 1, 4, 4 }, { 1, 2, 4 }, { 3, 4, 6 }, { 2, 4, 1 }, { 5, 4, 2 }, { 1, 6, 4 } };
	for (size_t k = 0; k < sizeof seq / sizeof *seq; k++) {
		struct world w;
		world_init(&w);
		for (size_t i = 0; i < N; i++)
			for (enum kv_medium m = KV_XPU; m <= KV_DISK; m++)
				if (seq[k][i * 3 / N] & KV_MEDIUM_BIT(m))
					kv_index_hold(&w.ix, w.part, chain[i], i ? chain[i - 1] : KV_CHAIN_ROOT, local[i], 0, m);
		struct kv_snap s;
		ASSERT(load(&w, &s));
		for (int opt = 0; opt < 8; opt++)
			agree(&w, &s, N, opt & 1, opt & 2, opt & 4);
		kv_snapr_close(&s);
		world_free(&w);
		ASSERT(!unit_current_failed);
	}
}

/* Runs longer than a block's run count can say (KV_SNAP_RUN_MAX): a jump
 * must never ask a block to vouch for more ancestors than that. */
static void walks_over_runs_longer_than_their_count(void)
{
	static const size_t splits[] = { 256, 300, 450, 600, N - 1 };
	static const unsigned media[][2] = { { 1, 4 }, { 1, 2 }, { 3, 1 }, { 7, 6 } };
	for (size_t k = 0; k < sizeof splits / sizeof *splits; k++)
		for (size_t m2 = 0; m2 < sizeof media / sizeof *media; m2++) {
			struct world w;
			world_init(&w);
			for (size_t i = 0; i < N; i++)
				for (enum kv_medium m = KV_XPU; m <= KV_DISK; m++)
					if (media[m2][i >= splits[k]] & KV_MEDIUM_BIT(m))
						kv_index_hold(&w.ix, w.part, chain[i], i ? chain[i - 1] : KV_CHAIN_ROOT,
							      local[i], 0, m);
			struct kv_snap s;
			ASSERT(load(&w, &s));
			for (size_t len = 250; len <= N; len += 50)
				for (int opt = 0; opt < 8; opt++)
					agree(&w, &s, len, opt & 1, opt & 2, opt & 4);
			kv_snapr_close(&s);
			world_free(&w);
			ASSERT(!unit_current_failed);
		}
}

int main(void)
{
	RUN(snapshot_walk_agrees_with_live);
	RUN(walks_begin_inside_runs);
	RUN(walks_over_runs_longer_than_their_count);
	RUN(runs_follow_their_definition);
	return unit_done();
}

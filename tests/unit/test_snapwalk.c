/* A snapshot's walk (checkpoints every KV_QUERY_JUMP blocks, the runs they
 * see read ahead, searches back where the holders change) answers as the
 * live index's block-by-block walk does: every query length from 1 to past
 * a block nobody holds, over holders that change just before, at and just
 * after checkpoints, several times between two of them, and with the last
 * block on a checkpoint; answered by tokens and by local hashes, the
 * latter also each after a line of other hashes, held with block 0's
 * holders throughout (a line's lookups while its hashes are chained must
 * read its own chains, never the line's before: the other line's block 64
 * would say that the holders did not change). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "index/blockhash.h"
#include "index/index.h"
#include "index/matchstate.h"
#include "index/snap.h"
#include "index/snapload.h"
#include "index/snapstate.h"
#include "query/query.h"
#include "unit.h"
#include "index/workers.h"

#define N 300
#define HOLE 261               /* nobody holds it: walks stop there */
static uint32_t tokens[N];     /* block size 1 */
static uint64_t chain[N], local[N];
static uint64_t other_chain[N], other[N];   /* another prefix, held by workers 0 to 2 in xpu */

/* The media worker w holds block i in (a bit each), changing around the
 * checkpoints 64, 128, 192 and 256. */
static unsigned media(uint32_t w, size_t i)
{
	unsigned x = KV_MEDIUM_BIT(KV_XPU), c = KV_MEDIUM_BIT(KV_CPU), d = KV_MEDIUM_BIT(KV_DISK);
	if (i == HOLE)
		return 0;
	switch (w) {
	case 0: return i < 129 ? x : i < 200 ? c : i < 203 ? d : i < 205 ? c : x | d;
	case 1: return i < 64 ? x : i < 128 ? c : i < 192 ? d : i == 193 ? 0 : c;
	case 2: return i < 63 ? x : i < 65 ? 0 : i < 141 ? c | d : i < 256 ? d : x;
	default: return i < 10 ? 0 : i < 70 ? c : i < 75 ? x : i < 77 ? c : i < 79 ? x : d;
	}
}

static void hold_all(struct kv_index *ix, uint32_t part)
{
	for (size_t i = 0; i < N; i++)
		for (uint32_t w = 0; w < 4; w++)
			for (enum kv_medium m = KV_XPU; m <= KV_DISK; m++)
				if (media(w, i) & KV_MEDIUM_BIT(m))
					kv_index_hold(ix, part, chain[i], i ? chain[i - 1] : KV_CHAIN_ROOT, local[i], w, m);
	for (size_t i = 0; i < N; i++)
		for (uint32_t w = 0; w < 3; w++)
			kv_index_hold(ix, part, other_chain[i], i ? other_chain[i - 1] : KV_CHAIN_ROOT, other[i], w, KV_XPU);
}

static bool same_hits(const struct kv_hit *a, size_t na, const struct kv_hit *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (a[i].worker != b[i].worker || a[i].npu != b[i].npu || a[i].cpu != b[i].cpu || a[i].disk != b[i].disk ||
		    a[i].npu_end != b[i].npu_end || a[i].cpu_end != b[i].cpu_end || a[i].disk_end != b[i].disk_end ||
		    a[i].cpu_local != b[i].cpu_local || a[i].stop_at != b[i].stop_at || a[i].why != b[i].why)
			return false;
	return true;
}

/* Every length, tokens and local hashes, plain, every candidate, shared pool. */
static void walks_agree(struct kv_qsource *live, struct kv_qsource *snap, uint32_t lpart, uint32_t spart)
{
	struct kv_querier *ql = kv_querier_new(), *qs = kv_querier_new();
	for (size_t n = 1; n <= N; n++) {
		for (int how = 0; how < 6; how++) {
			bool by_hash = how & 1;
			struct kv_query_opts o = { .all_workers = how / 2 == 1, .shared_pool = how / 2 == 2 };
			struct kv_query rl = { lpart, 1, by_hash ? NULL : tokens, n, by_hash ? local : NULL, n, NULL, 0 };
			struct kv_query rs = rl;
			rs.part = spart;
			size_t nl, ns, bl, bs;
			const struct kv_hit *hl = kv_query_run(ql, live, &rl, &o, &nl, &bl);
			const struct kv_hit *hs = kv_query_run(qs, snap, &rs, &o, &ns, &bs);
			if (!same_hits(hl, nl, hs, ns))
				printf("# %zu blocks, way %d: the snapshot's walk differs\n", n, how);
			ASSERT(same_hits(hl, nl, hs, ns));
			ASSERT_EQ_U64(bl, bs);
		}
	}
	kv_querier_free(ql);
	kv_querier_free(qs);
}

/* Every length by local hashes, each after a line of as many other hashes
 * on the same querier. */
static void walks_agree_after_others(struct kv_qsource *live, struct kv_qsource *snap, uint32_t lpart,
				     uint32_t spart)
{
	struct kv_querier *ql = kv_querier_new(), *qs = kv_querier_new();
	struct kv_query_opts o = { .all_workers = true };
	for (size_t n = 1; n <= N; n++) {
		struct kv_query rl = { lpart, 1, NULL, 0, local, n, NULL, 0 };
		struct kv_query rs = { spart, 1, NULL, 0, local, n, NULL, 0 };
		struct kv_query decoy = { spart, 1, NULL, 0, other, n, NULL, 0 };
		size_t nl, ns, nd, bl, bs, bd;
		const struct kv_hit *hl = kv_query_run(ql, live, &rl, &o, &nl, &bl);
		kv_query_run(qs, snap, &decoy, &o, &nd, &bd);
		const struct kv_hit *hs = kv_query_run(qs, snap, &rs, &o, &ns, &bs);
		if (!same_hits(hl, nl, hs, ns))
			printf("# %zu blocks after other hashes: the snapshot's walk differs\n", n);
		ASSERT(same_hits(hl, nl, hs, ns));
	}
	kv_querier_free(ql);
	kv_querier_free(qs);
}

/* Every length from the longest down, by tokens and by local hashes, on a
 * querier whose room kv_querier_reserve made for the longest first (as
 * kvquery does before each answer is timed), and again before each query:
 * room made ahead changes no answer. */
static void walks_agree_reserved(struct kv_qsource *live, struct kv_qsource *snap, uint32_t lpart, uint32_t spart)
{
	struct kv_querier *ql = kv_querier_new(), *qs = kv_querier_new();
	struct kv_query_opts o = { .all_workers = true };
	struct kv_query longest = { spart, 1, tokens, N, NULL, 0, NULL, 0 };
	kv_querier_reserve(qs, snap, &longest);
	for (size_t n = N; n >= 1; n--) {
		for (int by_hash = 0; by_hash < 2; by_hash++) {
			struct kv_query rl = { lpart, 1, by_hash ? NULL : tokens, n, by_hash ? local : NULL, n, NULL, 0 };
			struct kv_query rs = rl;
			rs.part = spart;
			size_t nl, ns, bl, bs;
			const struct kv_hit *hl = kv_query_run(ql, live, &rl, &o, &nl, &bl);
			kv_querier_reserve(qs, snap, &rs);
			const struct kv_hit *hs = kv_query_run(qs, snap, &rs, &o, &ns, &bs);
			if (!same_hits(hl, nl, hs, ns))
				printf("# %zu blocks, reserved ahead: the snapshot's walk differs\n", n);
			ASSERT(same_hits(hl, nl, hs, ns));
			ASSERT_EQ_U64(bl, bs);
		}
	}
	kv_querier_free(ql);
	kv_querier_free(qs);
}

static void snapshot_walks_as_live(void)
{
	for (uint32_t i = 0; i < N; i++)
		tokens[i] = 7 + 3 * i;
	kv_block_hashes(tokens, N, 1, KV_CHAIN_ROOT, local, chain, N);
	uint32_t other_tokens[N];
	for (uint32_t i = 0; i < N; i++)
		other_tokens[i] = 1000003 + 5 * i;
	kv_block_hashes(other_tokens, N, 1, KV_CHAIN_ROOT, other, other_chain, N);
	struct kv_index ix;
	struct kv_workers ws;
	struct kv_match m;
	struct kv_match_opts mo = { KV_PENDING_TTL_DEFAULT, KV_OFFLOAD_TTL_DEFAULT, KV_CONTENT_TTL_DEFAULT,
				    KV_MAX_PENDING_DEFAULT, false, 0, NULL, NULL };
	kv_index_init(&ix);
	kv_workers_init(&ws);
	kv_match_init(&m, &ix, &ws, &mo);
	/* named in order: the snapshot numbers its workers by name */
	kv_workers_add(&ws, "a", 0, "h1", false);
	kv_workers_add(&ws, "b", 0, "h2", false);
	kv_workers_add(&ws, "c", 0, "h3", false);
	kv_workers_add(&ws, "d", 0, "h4", false);
	uint32_t part = kv_index_partition(&ix, "m", 1, "default", 7);
	ix.p[part].block_size = 1;
	hold_all(&ix, part);
	char path[] = "/tmp/kvtools-snapwalk-XXXXXX";
	int fd = mkstemp(path);
	ASSERT(fd >= 0);
	close(fd);
	struct kv_err e = { 0 };
	ASSERT(kv_snapstate_save(path, &ix, &ws, &m, &e));
	struct kv_snap s;
	ASSERT(kv_snapr_load(path, &s, &e));
	unlink(path);
	ASSERT(s.dir && s.dir[0]);   /* lookups through the directory, and fetched ahead */
	struct kv_qsource live, snap;
	kv_qsource_index(&live, &ix, &ws);
	kv_qsource_snap(&snap, &s);
	walks_agree(&live, &snap, part, 0);
	walks_agree_after_others(&live, &snap, part, 0);
	walks_agree_reserved(&live, &snap, part, 0);
	kv_qsource_free(&snap);
	kv_qsource_free(&live);
	kv_snapr_close(&s);
	kv_match_free(&m);
	kv_workers_free(&ws);
	kv_index_free(&ix);
}

int main(void)
{
	RUN(snapshot_walks_as_live);
	return unit_done();
}

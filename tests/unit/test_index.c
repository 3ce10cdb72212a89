/* The hash tables and holder sets under random operations, against a
 * plain reference model (sharing, reference counts, id reuse, cached
 * transitions, the holder limit); and the block hash check values. */
/* Growth in steps from 16 homes on (base/table.h): 16, 20, 24, 28, 32, 40, ... */
#define KV_TABLE_FINE 16
#define KV_TABLE_STEP 4
#include <stdlib.h>
#include <string.h>

#include "index/blockhash.h"
#include "index/index.h"
#include "unit.h"


static void table_matches_reference(void)
{
	enum { KEYS = 3000 };
	static bool present[KEYS];
	static uint64_t value[KEYS];
	struct kv_ehashes t = { 0 };
	memset(present, 0, sizeof present);
	for (int op = 0; op < 200000; op++) {
		/* small keys collide in clusters; key 0 takes the side slot */
		uint64_t k = unit_rand() % KEYS;
		int what = (int)(unit_rand() % 3);
		if (what == 0) {
			bool added;
			struct kv_ehash *e = kv_ehashes_upsert(&t, k, &added);
			ASSERT(added == !present[k]);
			e->chain = value[k] = unit_rand();
			present[k] = true;
		} else if (what == 1) {
			ASSERT(kv_ehashes_remove(&t, k) == present[k]);
			present[k] = false;
		} else {
			struct kv_ehash *e = kv_ehashes_find(&t, k);
			ASSERT((e != NULL) == present[k]);
			ASSERT(!e || e->chain == value[k]);
		}
	}
	size_t n = 0;
	for (int k = 0; k < KEYS; k++)
		n += present[k];
	ASSERT_EQ_U64(kv_ehashes_count(&t), n);
	for (int k = 0; k < KEYS; k++)
		ASSERT(!present[k] || kv_ehashes_find(&t, (uint64_t)k));
	/* removing everything shrinks the table again */
	for (int k = 0; k < KEYS; k++)
		kv_ehashes_remove(&t, (uint64_t)k);
	ASSERT_EQ_U64(kv_ehashes_count(&t), 0);
	ASSERT(t.homes <= 64);
	kv_ehashes_free(&t);
}

/* Keys whose home is the last of 16 homes, and some whose home is the first
 * (a cluster longer than its distance from slot 0 when the table grows):
 * growing in place puts each back where a probe finds it. */
static void table_growth_in_place(void)
{
	struct kv_ehashes t = { 0 };
	uint64_t keys[12];
	size_t n = 0;
	for (uint64_t k = 1; n < 5; k++)
		if (kv_table_home(k, 16) == 15)
			keys[n++] = k;
	for (uint64_t k = 1000; n < 9; k++)
		if (kv_table_home(k, 16) == 0)
			keys[n++] = k;
	for (uint64_t k = 5000; n < 12; k++)
		if (kv_table_home(k, 16) > 0 && kv_table_home(k, 16) < 12)
			keys[n++] = k;
	bool added;
	for (size_t i = 0; i < 12; i++)
		kv_ehashes_upsert(&t, keys[i], &added)->chain = keys[i] * 3;
	ASSERT_EQ_U64(t.homes, 16);
	ASSERT(t.slots[16].key != 0); /* the last home's cluster runs past it */
	kv_ehashes_upsert(&t, 77777, &added)->chain = 5;
	ASSERT_EQ_U64(t.homes, 20);
	for (size_t i = 0; i < 12; i++) {
		struct kv_ehash *e = kv_ehashes_find(&t, keys[i]);
		ASSERT(e && e->chain == keys[i] * 3);
	}
	/* removal shifts back across the end too */
	for (size_t i = 0; i < 12; i += 2)
		ASSERT(kv_ehashes_remove(&t, keys[i]));
	for (size_t i = 0; i < 12; i++)
		ASSERT((kv_ehashes_find(&t, keys[i]) != NULL) == (i % 2 == 1));
	ASSERT(kv_ehashes_find(&t, 77777));
	kv_ehashes_free(&t);
}

/* Tables past 1 MiB of slots are mapped and grow by remapping. */
static void big_table_grows_in_place(void)
{
	enum { N = 300000 };
	struct kv_blocks t = { 0 };
	bool added;
	for (uint64_t k = 1; k <= N; k++) {
		struct kv_block *b = kv_blocks_upsert(&t, k * 0x9e3779b97f4a7c15ull, &added);
		ASSERT(added);
		b->local = k;
	}
	ASSERT(t.cap * sizeof *t.slots > (1u << 20));
	for (uint64_t k = 1; k <= N; k++) {
		struct kv_block *b = kv_blocks_find(&t, k * 0x9e3779b97f4a7c15ull);
		ASSERT(b && b->local == k);
	}
	for (uint64_t k = 1; k <= N; k += 3)
		ASSERT(kv_blocks_remove(&t, k * 0x9e3779b97f4a7c15ull));
	for (uint64_t k = 1; k <= N; k++)
		ASSERT((kv_blocks_find(&t, k * 0x9e3779b97f4a7c15ull) != NULL) == (k % 3 != 1));
	kv_blocks_free(&t);
}

/* ---- holders against a reference model ---------------------------------- */

enum { MAXW = 100, MAXC = 60, NPART = 2 };

/* ref[c][w]: media bits of worker w in chain c + 1, which lives in partition c % NPART. */
struct model {
	struct kv_index ix;
	uint32_t part[NPART];
	unsigned ref[MAXC][MAXW];
	int nw, nc;
	uint64_t freed_seen;   /* blocks release_all called back for */
};

static uint32_t part_of(const struct model *md, int c)
{
	return md->part[c % NPART];
}

static bool chain_held(const struct model *md, int c)
{
	for (int w = 0; w < md->nw; w++)
		if (md->ref[c][w])
			return true;
	return false;
}

static struct kv_block *block_of(struct model *md, int c)
{
	return kv_blocks_find(&md->ix.p[part_of(md, c)].blocks, (uint64_t)c + 1);
}

/* Every live set is counted by exactly the blocks that have it; every set
 * that no block has is idle (kept) or on the free list; the live and idle
 * ones hold what their hash says, are findable by it and differ from each
 * other. */
static bool sets_consistent(struct model *md)
{
	const struct kv_holder_sets *s = &md->ix.sets;
	uint64_t *count = calloc(s->n, sizeof *count);
	bool ok = s->v[0].n == 0 && s->v[0].refs == 0;
	for (int c = 0; c < md->nc && ok; c++) {
		struct kv_block *b = block_of(md, c);
		ok = !b || (b->set != 0 && b->set < s->n);
		if (b && ok)
			count[b->set]++;
	}
	size_t live = 0, idle = 0;
	for (uint32_t id = 1; id < s->n && ok; id++) {
		const struct kv_hset *h = &s->v[id];
		ok = h->refs == count[id];
		if (!h->n || !ok)
			continue;
		live += h->refs != 0;
		idle += h->refs == 0;
		const uint32_t *m = h->n == 1 ? &h->members : s->arena.a + h->members;
		uint64_t hash = 0;
		for (unsigned k = 0; k < h->n; k++)
			hash += kv_mix64(m[k]);
		const struct kv_setid *e = kv_setids_find((struct kv_setids *)&s->byhash, h->hash);
		ok = hash == h->hash && e && s->v[e->id].n && s->v[e->id].hash == h->hash;
		for (uint32_t o = id + 1; o < s->n && ok; o++) {
			const struct kv_hset *g = &s->v[o];
			const uint32_t *gm = g->n == 1 ? &g->members : s->arena.a + g->members;
			ok = g->n != h->n || memcmp(gm, m, h->n * sizeof *m) != 0;
		}
	}
	size_t nfree = 0;
	for (uint32_t id = s->free; id && ok && nfree < s->n; id = s->v[id].members, nfree++)
		ok = id < s->n && s->v[id].refs == 0 && s->v[id].n == 0;
	free(count);
	return ok && live == s->live && idle == s->idle && live + idle + nfree + 1 == s->n;
}

static bool block_matches(struct model *md, int c)
{
	struct kv_block *b = block_of(md, c);
	unsigned n = 0;
	for (int w = 0; w < md->nw; w++) {
		n += md->ref[c][w] != 0;
		if (b && kv_block_media(&md->ix, b, (uint32_t)w) != md->ref[c][w])
			return false;
	}
	if ((b != NULL) != (n > 0))
		return false;
	if (!b)
		return true;
	const uint32_t *h = kv_block_holders(&md->ix, b);
	for (unsigned k = 1; k < n; k++)
		if (KV_HOLDER_WORKER(h[k - 1]) >= KV_HOLDER_WORKER(h[k]))
			return false;
	return kv_block_nholders(&md->ix, b) == n;
}

static bool counts_match(struct model *md)
{
	uint64_t holdings[NPART] = { 0 };
	for (int w = 0; w < md->nw; w++)
		for (unsigned m = 0; m < KV_NMEDIA; m++) {
			uint64_t held = 0;
			for (int c = 0; c < md->nc; c++)
				held += (md->ref[c][w] >> m) & 1;
			if (kv_index_held(&md->ix, (uint32_t)w, (enum kv_medium)m) != held)
				return false;
		}
	for (int c = 0; c < md->nc; c++)
		for (int w = 0; w < md->nw; w++)
			holdings[c % NPART] += md->ref[c][w] != 0;
	for (int p = 0; p < NPART; p++)
		if (md->ix.p[md->part[p]].holdings != holdings[p])
			return false;
	return true;
}

static void on_freed(void *arg, uint32_t part, const struct kv_block *b)
{
	struct model *md = arg;
	int c = (int)b->key - 1;
	/* called back once the block has no holders left, before it goes */
	if (part == part_of(md, c) && kv_block_nholders(&md->ix, b) == 0 && !chain_held(md, c))
		md->freed_seen++;
}

static uint32_t pick_workers(struct model *md, uint32_t *w)
{
	uint32_t n = (uint32_t)(unit_rand() % 4) + 1;
	for (uint32_t k = 0; k < n; k++)
		w[k] = (uint32_t)(unit_rand() % (uint64_t)md->nw); /* repeats too */
	return n;
}

/* One random operation, applied to the index and the model; false when
 * what the index says differs from the model. */
static bool random_op(struct model *md, int c)
{
	enum kv_medium m = (enum kv_medium)(unit_rand() % KV_NMEDIA);
	unsigned bit = 1u << m, *r = md->ref[c];
	uint32_t w[4], nw = pick_workers(md, w);
	uint64_t parent, local;
	bool freed;
	switch (unit_rand() % 9) {
	case 0: case 1: case 2: {
		bool fresh = kv_index_hold(&md->ix, part_of(md, c), (uint64_t)c + 1, 0, 0, w[0], m);
		bool want = !(r[w[0]] & bit);
		r[w[0]] |= bit;
		return fresh == want;
	}
	case 3: {
		size_t want = 0;
		for (uint32_t k = 0; k < nw; k++)
			want += !(r[w[k]] & bit), r[w[k]] |= bit;
		return kv_index_hold_many(&md->ix, part_of(md, c), (uint64_t)c + 1, 0, 0, w, nw, m) == want;
	}
	case 4: case 5: {
		bool had = kv_index_release(&md->ix, part_of(md, c), (uint64_t)c + 1, w[0], m, &freed, &parent, &local);
		bool want = r[w[0]] & bit;
		r[w[0]] &= ~bit;
		return had == want && freed == (had && !chain_held(md, c));
	}
	case 6: case 7: {
		bool before = chain_held(md, c);
		size_t want = 0;
		for (uint32_t k = 0; k < nw; k++)
			want += !!(r[w[k]] & bit), r[w[k]] &= ~bit;
		size_t had = kv_index_release_many(&md->ix, part_of(md, c), (uint64_t)c + 1, w, nw, m, &freed, &parent, &local);
		return had == want && freed == (before && !chain_held(md, c));
	}
	default: {
		/* a worker clears one or two media in one partition */
		unsigned mask = bit | (unit_rand() % 2 ? KV_MEDIUM_BIT((m + 1) % KV_NMEDIA) : 0);
		int p = (int)(unit_rand() % NPART);
		size_t want = 0, gone = 0;
		for (int k = p; k < md->nc; k += NPART) {
			bool before = chain_held(md, k);
			want += (md->ref[k][w[0]] & mask) != 0;
			md->ref[k][w[0]] &= ~mask;
			gone += before && !chain_held(md, k);
		}
		uint64_t seen = md->freed_seen;
		size_t dropped = kv_index_release_all(&md->ix, md->part[p], w[0], mask, on_freed, md);
		return dropped == want && md->freed_seen - seen == gone;
	}
	}
}

static void random_holders(int nw, int nc, int ops, size_t idle_max)
{
	static struct model md;
	memset(&md, 0, sizeof md);
	md.nw = nw;
	md.nc = nc;
	kv_index_init(&md.ix);
	md.ix.sets.idle_max = idle_max;
	md.part[0] = kv_index_partition(&md.ix, "m", 1, "t", 1);
	md.part[1] = kv_index_partition(&md.ix, "m", 1, "u", 1);
	for (int op = 0; op < ops; op++) {
		int c = (int)(unit_rand() % (uint64_t)nc);
		ASSERT(random_op(&md, c));
		ASSERT(block_matches(&md, c));
		if (op % 997 == 0) {
			ASSERT(sets_consistent(&md));
			ASSERT(counts_match(&md));
		}
	}
	for (int c = 0; c < nc; c++)
		ASSERT(block_matches(&md, c));
	ASSERT(sets_consistent(&md));
	ASSERT(counts_match(&md));
	kv_index_free(&md.ix);
}

/* Many workers: mostly sets of one block each, those of more than
 * KV_SET_KEEP_MAX holders changed in place. */
static void holders_match_reference(void)
{
	random_holders(MAXW, 50, 100000, 1024);
	random_holders(MAXW, 50, 100000, 0);
}

/* Few workers over many chains: blocks share sets, which are left, kept
 * idle, freed and their ids taken again all the time, so that cached
 * transitions go stale. */
static void shared_sets_match_reference(void)
{
	random_holders(3, MAXC, 200000, 1024);
	random_holders(3, MAXC, 200000, 2);
	random_holders(3, MAXC, 200000, 0);
}

static size_t live_sets(const struct kv_index *ix)
{
	size_t n = 0;
	for (size_t id = 1; id < ix->sets.n; id++)
		n += ix->sets.v[id].refs != 0;
	return n;
}

/* Blocks of the same holders share one set.  One that no block has stays
 * idle, and is taken again; idle sets are freed, their ids taken again. */
static void sets_are_shared(void)
{
	struct kv_index ix;
	kv_index_init(&ix);
	uint32_t p = kv_index_partition(&ix, "m", 1, "t", 1);
	uint32_t w[3] = { 7, 2, 5 };
	for (uint64_t c = 1; c <= 100; c++)
		ASSERT_EQ_U64(kv_index_hold_many(&ix, p, c, 0, 0, w, 3, KV_XPU), 3);
	ASSERT_EQ_U64(live_sets(&ix), 1);
	struct kv_block *b = kv_blocks_find(&ix.p[p].blocks, 1);
	uint32_t all = b->set;
	ASSERT_EQ_U64(ix.sets.v[all].refs, 100);
	ASSERT_EQ_U64(kv_block_nholders(&ix, b), 3);
	ASSERT_EQ_U64(KV_HOLDER_WORKER(kv_block_holders(&ix, b)[0]), 2);
	/* one worker leaves half the blocks: two sets, one id more at most */
	size_t ids = ix.sets.n;
	bool freed;
	uint64_t parent, local;
	for (uint64_t c = 1; c <= 50; c++)
		ASSERT(kv_index_release(&ix, p, c, 5, KV_XPU, &freed, &parent, &local) && !freed);
	ASSERT_EQ_U64(live_sets(&ix), 2);
	ASSERT(ix.sets.n <= ids + 1);
	/* everything goes; the sets stay idle, and the same holders take them again */
	for (uint32_t k = 0; k < 3; k++)
		kv_index_release_all(&ix, p, w[k], KV_MEDIUM_BIT(KV_XPU), NULL, NULL);
	ASSERT_EQ_U64(kv_index_blocks(&ix), 0);
	ASSERT_EQ_U64(live_sets(&ix), 0);
	ASSERT(ix.sets.idle > 0 && ix.sets.live == 0);
	ids = ix.sets.n;
	kv_index_hold_many(&ix, p, 1, 0, 0, w, 3, KV_XPU);
	ASSERT_EQ_U64(kv_blocks_find(&ix.p[p].blocks, 1)->set, all);
	ASSERT_EQ_U64(ix.sets.n, ids);
	kv_index_release_many(&ix, p, 1, w, 3, KV_XPU, &freed, &parent, &local);
	ASSERT(freed);
	/* kept no longer than needed: ids come back, however many sets go by */
	ix.sets.idle_max = 0;
	for (int round = 0; round < 30; round++) {
		w[2] = (uint32_t)(10 + round);
		for (uint64_t c = 1; c <= 100; c++)
			kv_index_hold_many(&ix, p, c, 0, 0, w, 3, (enum kv_medium)(round % KV_NMEDIA));
		for (uint64_t c = 1; c <= 100; c++)
			kv_index_release_many(&ix, p, c, w, 3, (enum kv_medium)(round % KV_NMEDIA), &freed, &parent, &local);
		ASSERT_EQ_U64(live_sets(&ix), 0);
	}
	ASSERT(ix.sets.n < ids + 20); /* 150 sets came and went */
	kv_index_free(&ix);
}

/* A cached transition whose sets were freed and whose ids now name other
 * sets must not be taken. */
static void stale_transitions_miss(void)
{
	struct kv_index ix;
	kv_index_init(&ix);
	ix.sets.idle_max = 0;
	uint32_t p = kv_index_partition(&ix, "m", 1, "t", 1);
	bool freed;
	uint64_t parent, local;
	/* {1} + 2 -> {1, 2}, cached */
	kv_index_hold(&ix, p, 1, 0, 0, 1, KV_XPU);
	kv_index_hold(&ix, p, 2, 0, 0, 1, KV_XPU);
	uint32_t one = kv_blocks_find(&ix.p[p].blocks, 1)->set; /* {1}: still block 2's */
	kv_index_hold(&ix, p, 1, 0, 0, 2, KV_XPU);
	uint32_t one_two = kv_blocks_find(&ix.p[p].blocks, 1)->set;
	kv_index_hold(&ix, p, 2, 0, 0, 2, KV_XPU);
	struct kv_block *b = kv_blocks_find(&ix.p[p].blocks, 2);
	ASSERT_EQ_U64(b->set, one_two);
	ASSERT_EQ_U64(kv_block_nholders(&ix, b), 2);
	/* all sets go, freed; their ids come back for {3}, {3, 4} and {5} */
	kv_index_release_all(&ix, p, 1, 7, NULL, NULL);
	kv_index_release_all(&ix, p, 2, 7, NULL, NULL);
	ASSERT_EQ_U64(live_sets(&ix), 0);
	ASSERT_EQ_U64(ix.sets.idle, 0);
	kv_index_hold(&ix, p, 3, 0, 0, 3, KV_XPU);
	kv_index_hold(&ix, p, 4, 0, 0, 3, KV_XPU);
	kv_index_hold(&ix, p, 4, 0, 0, 4, KV_XPU);
	kv_index_hold(&ix, p, 5, 0, 0, 5, KV_XPU);
	ASSERT_EQ_U64(kv_blocks_find(&ix.p[p].blocks, 4)->set, one_two);
	ASSERT_EQ_U64(kv_blocks_find(&ix.p[p].blocks, 5)->set, one);
	/* the change cached for {1} -> {1, 2}, on what the old ids now name */
	ASSERT(kv_index_hold(&ix, p, 5, 0, 0, 2, KV_XPU));
	b = kv_blocks_find(&ix.p[p].blocks, 5);
	ASSERT_EQ_U64(kv_block_nholders(&ix, b), 2);
	ASSERT_EQ_U64(kv_block_media(&ix, b, 5), KV_MEDIUM_BIT(KV_XPU));
	ASSERT_EQ_U64(kv_block_media(&ix, b, 2), KV_MEDIUM_BIT(KV_XPU));
	ASSERT_EQ_U64(kv_block_media(&ix, b, 1), 0);
	ASSERT(kv_index_release(&ix, p, 4, 4, KV_XPU, &freed, &parent, &local) && !freed);
	b = kv_blocks_find(&ix.p[p].blocks, 4);
	ASSERT_EQ_U64(kv_block_nholders(&ix, b), 1);
	ASSERT_EQ_U64(kv_block_media(&ix, b, 3), KV_MEDIUM_BIT(KV_XPU));
	kv_index_free(&ix);
}

/* A block has KV_MAX_HOLDERS holders at most: one more is refused and
 * counted; one already there may still add a medium.  Two blocks of that
 * many holders share one set. */
static void holder_limit(void)
{
	struct kv_index ix;
	kv_index_init(&ix);
	uint32_t p = kv_index_partition(&ix, "m", 1, "t", 1);
	uint32_t *w = malloc((KV_MAX_HOLDERS + 1) * sizeof *w);
	for (uint32_t k = 0; k <= KV_MAX_HOLDERS; k++)
		w[k] = KV_MAX_HOLDERS - k; /* the last one is worker 0: it would go first */
	for (uint64_t c = 1; c <= 2; c++) {
		ASSERT_EQ_U64(kv_index_hold_many(&ix, p, c, 0, 0, w, KV_MAX_HOLDERS, KV_XPU), KV_MAX_HOLDERS);
		ASSERT_EQ_U64(ix.refused, c - 1);
		ASSERT(!kv_index_hold(&ix, p, c, 0, 0, w[KV_MAX_HOLDERS], KV_CPU));
		ASSERT_EQ_U64(ix.refused, c);
		struct kv_block *b = kv_blocks_find(&ix.p[p].blocks, c);
		ASSERT_EQ_U64(kv_block_nholders(&ix, b), KV_MAX_HOLDERS);
		ASSERT_EQ_U64(kv_block_media(&ix, b, 0), 0);
	}
	ASSERT_EQ_U64(live_sets(&ix), 1);
	ASSERT(kv_index_hold(&ix, p, 1, 0, 0, w[0], KV_CPU));
	ASSERT_EQ_U64(ix.refused, 2);
	ASSERT_EQ_U64(kv_index_holdings(&ix), 2 * KV_MAX_HOLDERS);
	/* one leaves: a place for the one refused */
	bool freed;
	uint64_t parent, local;
	ASSERT(kv_index_release(&ix, p, 2, w[5], KV_XPU, &freed, &parent, &local) && !freed);
	ASSERT(kv_index_hold(&ix, p, 2, 0, 0, w[KV_MAX_HOLDERS], KV_CPU));
	struct kv_block *b = kv_blocks_find(&ix.p[p].blocks, 2);
	ASSERT_EQ_U64(kv_block_nholders(&ix, b), KV_MAX_HOLDERS);
	ASSERT_EQ_U64(KV_HOLDER_WORKER(kv_block_holders(&ix, b)[0]), 0);
	ASSERT_EQ_U64(ix.refused, 2);
	free(w);
	kv_index_free(&ix);
}

static void check_values(void)
{
	uint32_t t[32];
	for (uint32_t i = 0; i < 32; i++)
		t[i] = i;
	uint64_t local[3], chain[3];
	/* values computed independently with python3-xxhash */
	ASSERT_EQ_U64(kv_block_hashes(t, 32, 16, KV_CHAIN_ROOT, local, chain, 3), 2);
	ASSERT_EQ_U64(local[0], 0xd47a8f41c833328aull);
	ASSERT_EQ_U64(chain[0], 0x4220ff8ad7a1a5a2ull);
	ASSERT_EQ_U64(local[1], 0xd43939178abd00dbull);
	ASSERT_EQ_U64(chain[1], 0x57e58ada70ce72c9ull);
	/* a trailing partial block is hashed too */
	ASSERT_EQ_U64(kv_block_hashes(t, 20, 16, KV_CHAIN_ROOT, local, chain, 3), 2);
	ASSERT_EQ_U64(local[1], kv_local_hash(t + 16, 4));
	ASSERT_EQ_U64(kv_block_hashes(t, 20, 0, KV_CHAIN_ROOT, local, chain, 3), 0);
}

/* --expect-blocks: the first partition's tables are made for that many
 * blocks when it is created, and filling them to it moves nothing; later
 * partitions take nothing ahead. */
static void expected_blocks_sized_ahead(void)
{
	struct kv_index ix;
	kv_index_init(&ix);
	ix.expect_blocks = 5000;
	uint32_t p = kv_index_partition(&ix, "m", 1, "t", 1);
	uint32_t q = kv_index_partition(&ix, "n", 1, "t", 1);
	size_t homes = ix.p[p].blocks.homes, ehomes = ix.p[p].ehashes.homes;
	ASSERT(!kv_table_over(5000, homes) && !kv_table_over(5000, ehomes));
	ASSERT(kv_table_over(5000, homes / 2));
	const struct kv_block *first = NULL;
	uint64_t chain = KV_CHAIN_ROOT;
	for (uint64_t i = 1; i <= 5000; i++) {
		uint64_t next = kv_chain_next(chain, i);
		ASSERT(kv_index_hold(&ix, p, next, chain, i, 0, KV_XPU));
		bool added;
		kv_ehashes_upsert(&ix.p[p].ehashes, 1000 + i, &added)->chain = next;
		if (!first)
			first = kv_blocks_find(&ix.p[p].blocks, next);
		chain = next;
	}
	ASSERT_EQ_U64(ix.p[p].blocks.homes, homes);
	ASSERT_EQ_U64(ix.p[p].ehashes.homes, ehomes);
	ASSERT(first == kv_blocks_find(&ix.p[p].blocks, kv_chain_next(KV_CHAIN_ROOT, 1)));
	ASSERT_EQ_U64(ix.p[q].blocks.cap, 0);
	ASSERT_EQ_U64(ix.p[q].ehashes.cap, 0);
	kv_index_free(&ix);
}

int main(void)
{
	RUN(table_matches_reference);
	RUN(table_growth_in_place);
	RUN(big_table_grows_in_place);
	RUN(holders_match_reference);
	RUN(shared_sets_match_reference);
	RUN(sets_are_shared);
	RUN(stale_transitions_miss);
	RUN(holder_limit);
	RUN(check_values);
	RUN(expected_blocks_sized_ahead);
	return unit_done();
}

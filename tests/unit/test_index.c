/* The hash tables and holder lists under random operations, against a
 * plain reference model; and the block hash check values. */
#include <stdlib.h>
#include <string.h>

#include "blockhash.h"
#include "index.h"
#include "sort.h"
#include "unit.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void table_matches_reference(void)
{
	enum { KEYS = 3000 };
	static bool present[KEYS];
	static uint64_t value[KEYS];
	struct kv_ehashes t = { 0 };
	memset(present, 0, sizeof present);
	for (int op = 0; op < 200000; op++) {
		/* small keys collide in clusters; key 0 takes the side slot */
		uint64_t k = next_rand() % KEYS;
		int what = (int)(next_rand() % 3);
		if (what == 0) {
			bool added;
			struct kv_ehash *e = kv_ehashes_upsert(&t, k, &added);
			ASSERT(added == !present[k]);
			e->chain = value[k] = next_rand();
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
	ASSERT(t.cap <= 64);
	kv_ehashes_free(&t);
}

static void holders_match_reference(void)
{
	enum { WORKERS = 40, CHAINS = 50 };
	static unsigned ref[CHAINS][WORKERS];
	memset(ref, 0, sizeof ref);
	struct kv_index ix;
	kv_index_init(&ix);
	uint32_t p = kv_index_partition(&ix, "m", 1, "t", 1);
	for (int op = 0; op < 100000; op++) {
		uint64_t c = next_rand() % CHAINS + 1;
		uint32_t w = (uint32_t)(next_rand() % WORKERS);
		enum kv_medium m = (enum kv_medium)(next_rand() % 3);
		if (next_rand() % 2) {
			bool fresh = kv_index_hold(&ix, p, c, 0, 0, w, m);
			ASSERT(fresh == !(ref[c - 1][w] & (1u << m)));
			ref[c - 1][w] |= 1u << m;
		} else {
			bool freed;
			uint64_t parent, local;
			bool had = kv_index_release(&ix, p, c, w, m, &freed, &parent, &local);
			ASSERT(had == !!(ref[c - 1][w] & (1u << m)));
			ref[c - 1][w] &= ~(1u << m);
			bool any = false;
			for (int k = 0; k < WORKERS; k++)
				any |= ref[c - 1][k] != 0;
			ASSERT(freed == (had && !any));
		}
	}
	uint64_t holdings = 0;
	for (int c = 0; c < CHAINS; c++) {
		struct kv_block *b = kv_blocks_find(&ix.p[p].blocks, (uint64_t)c + 1);
		unsigned n = 0;
		for (int w = 0; w < WORKERS; w++) {
			n += ref[c][w] != 0;
			if (b)
				ASSERT(kv_block_media(&ix, b, (uint32_t)w) == ref[c][w]);
		}
		ASSERT((b != NULL) == (n > 0));
		ASSERT(!b || kv_block_nholders(&ix, b) == n);
		holdings += n;
		if (b) {
			const uint32_t *h = kv_block_holders(&ix, b);
			for (unsigned k = 1; k < n; k++)
				ASSERT(KV_HOLDER_WORKER(h[k - 1]) < KV_HOLDER_WORKER(h[k]));
		}
	}
	ASSERT_EQ_U64(kv_index_holdings(&ix), holdings);
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

static void radix_sort(void)
{
	for (size_t n = 0; n < 5000; n = n * 3 + 1) {
		uint64_t *k = malloc((n + 1) * sizeof *k);
		uint32_t *v = malloc((n + 1) * sizeof *v);
		for (size_t i = 0; i < n; i++) {
			/* some equal keys, some differing only in high digits */
			k[i] = i % 7 == 0 ? 42 : (next_rand() & 0xff00000000000000ull) | (next_rand() % 3);
			v[i] = (uint32_t)i;
		}
		uint64_t *orig = malloc((n + 1) * sizeof *orig);
		memcpy(orig, k, n * sizeof *k);
		kv_sort_keys(k, v, n);
		size_t sorted = 0, kept = 0;
		for (size_t i = 0; i < n; i++) {
			sorted += i == 0 || k[i - 1] <= k[i];
			kept += orig[v[i]] == k[i];
		}
		free(k);
		free(v);
		free(orig);
		ASSERT_EQ_U64(sorted, n);
		ASSERT_EQ_U64(kept, n);
	}
}

int main(void)
{
	RUN(radix_sort);
	RUN(table_matches_reference);
	RUN(holders_match_reference);
	RUN(check_values);
	return unit_done();
}

/* blockhash.h's rules at their boundaries, beside the module (the programs
 * hand it only what they have cut and cleaned, so a fault here can hide
 * behind them): which blocks each hashing counts, and what salts Dynamo's
 * seed. */
#include <stdint.h>
#include <string.h>

#include "index/blockhash.h"
#include "unit.h"

static uint32_t tokens[16];

static void fill(void)
{
	for (uint32_t i = 0; i < 16; i++)
		tokens[i] = 7 * i + 1;
}

/* kv-conductor's chains count a trailing partial block; RFC #1403's and
 * Dynamo's hashes stop at the last complete one, the last one included
 * when the tokens fill it exactly. */
static void complete_blocks_counted(void)
{
	uint64_t local[8], chain[8], seq[8];
	fill();
	for (size_t n = 0; n <= 13; n++) {
		size_t full = n / 4;
		ASSERT_EQ_U64(kv_block_hashes(tokens, n, 4, KV_CHAIN_ROOT, local, chain, 8), (n + 3) / 4);
		ASSERT_EQ_U64(kv_rfc_seq_hashes(tokens, n, 4, KV_HASH_SEED, seq, 8), full);
		ASSERT_EQ_U64(kv_seeded_local_hashes(tokens, n, 4, KV_HASH_SEED, local, 8), full);
	}
	/* max bounds each; a block size of 0 hashes nothing */
	ASSERT_EQ_U64(kv_rfc_seq_hashes(tokens, 16, 4, KV_HASH_SEED, seq, 3), 3);
	ASSERT_EQ_U64(kv_seeded_local_hashes(tokens, 16, 4, KV_HASH_SEED, local, 3), 3);
	ASSERT_EQ_U64(kv_seeded_local_hashes(tokens, 16, 0, KV_HASH_SEED, local, 8), 0);
	ASSERT_EQ_U64(kv_rfc_seq_hashes(tokens, 16, 0, KV_HASH_SEED, seq, 8), 0);
}

/* Without an adapter or namespace Dynamo's local hash is kv_local_hash;
 * an empty name is no name; the adapter and namespace of one name differ. */
static void dynamo_seed_salts(void)
{
	uint64_t local[1];
	fill();
	ASSERT_EQ_U64(kv_dynamo_seed(NULL, NULL), KV_HASH_SEED);
	ASSERT_EQ_U64(kv_dynamo_seed("", NULL), KV_HASH_SEED);
	ASSERT_EQ_U64(kv_dynamo_seed(NULL, ""), KV_HASH_SEED);
	ASSERT_EQ_U64(kv_dynamo_seed("", ""), KV_HASH_SEED);
	ASSERT(kv_dynamo_seed("a", NULL) != KV_HASH_SEED);
	ASSERT(kv_dynamo_seed("a", NULL) != kv_dynamo_seed(NULL, "a"));
	ASSERT_EQ_U64(kv_dynamo_seed("a", ""), kv_dynamo_seed("a", NULL));
	ASSERT_EQ_U64(kv_seeded_local_hashes(tokens, 4, 4, kv_dynamo_seed(NULL, NULL), local, 1), 1);
	ASSERT_EQ_U64(local[0], kv_local_hash(tokens, 4));
}

int main(void)
{
	RUN(complete_blocks_counted);
	RUN(dynamo_seed_salts);
	return unit_done();
}

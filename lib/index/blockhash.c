#include "index/blockhash.h"

#include <string.h>
/* inlined from the library's own header: a query hashes its blocks in a
 * dependent chain, and calls through the shared library cost a quarter of it */
#define XXH_INLINE_ALL
#include <xxhash.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
/* Tokens are hashed as the bytes of a u32 array: little-endian hosts only. */
#error "kvtools hashes token arrays in place and needs a little-endian host"
#endif

/* The rule, once: XXH3-64 seeded KV_HASH_SEED over the tokens' u32 bytes. */
static inline uint64_t local_hash(const uint32_t *tokens, size_t n)
{
	return XXH3_64bits_withSeed(tokens, n * sizeof *tokens, KV_HASH_SEED);
}

uint64_t kv_local_hash(const uint32_t *tokens, size_t n)
{
	return local_hash(tokens, n);
}

uint64_t kv_chain_next(uint64_t parent_chain, uint64_t local)
{
	return XXH3_64bits_withSeed(&local, sizeof local, parent_chain);
}

void kv_chain_hashes(uint64_t parent_chain, const uint64_t *local, uint64_t *chain, size_t n)
{
	for (size_t i = 0; i < n; i++)
		chain[i] = parent_chain = kv_chain_next(parent_chain, local[i]);
}

/* Full blocks of the usual 16 tokens: with the length a constant, the
 * inlined XXH3 drops its dispatch on length and shrinks to its 64-byte
 * path, a third of the instructions a block took (the chain's dependent
 * hashes wait on nothing else then: the local hashes fit beside them). */
static uint64_t block_local_hash(const uint32_t *tokens, size_t len)
{
	if (len == 16)
		return local_hash(tokens, 16);
	return local_hash(tokens, len);
}

size_t kv_block_hashes(const uint32_t *tokens, size_t ntokens, size_t block_size,
		       uint64_t parent_chain, uint64_t *local, uint64_t *chain, size_t max)
{
	size_t n = 0;
	if (block_size == 0)
		return 0;
	for (size_t at = 0; at < ntokens && n < max; at += block_size, n++) {
		size_t len = ntokens - at < block_size ? ntokens - at : block_size;
		local[n] = block_local_hash(tokens + at, len);
		parent_chain = kv_chain_next(parent_chain, local[n]);
		chain[n] = parent_chain;
	}
	return n;
}

size_t kv_rfc_seq_hashes(const uint32_t *tokens, size_t ntokens, size_t block_size, uint64_t seed, uint64_t *seq,
			 size_t max)
{
	size_t n = 0;
	if (block_size == 0)
		return 0;
	for (size_t at = 0; ntokens - at >= block_size && n < max; at += block_size, n++) {
		uint64_t local = XXH3_64bits_withSeed(tokens + at, block_size * sizeof *tokens, seed);
		if (n == 0) {
			seq[n] = local;
			continue;
		}
		uint64_t pair[2] = { seq[n - 1], local }; /* little-endian host: the bytes are LE */
		seq[n] = XXH3_64bits_withSeed(pair, sizeof pair, seed);
	}
	return n;
}

uint64_t kv_dynamo_seed(const char *lora_name, const char *cache_namespace)
{
	uint64_t seed = KV_HASH_SEED;
	/* unsigned adds wrap, as Rust's wrapping_add; the two inner seeds keep
	 * an adapter and a namespace of the same name apart */
	if (lora_name && *lora_name)
		seed += XXH3_64bits_withSeed(lora_name, strlen(lora_name), 0);
	if (cache_namespace && *cache_namespace)
		seed += XXH3_64bits_withSeed(cache_namespace, strlen(cache_namespace), 1);
	return seed;
}

size_t kv_seeded_local_hashes(const uint32_t *tokens, size_t ntokens, size_t block_size, uint64_t seed,
			      uint64_t *local, size_t max)
{
	size_t n = 0;
	if (block_size == 0)
		return 0;
	for (size_t at = 0; ntokens - at >= block_size && n < max; at += block_size, n++)
		local[n] = XXH3_64bits_withSeed(tokens + at, block_size * sizeof *tokens, seed);
	return n;
}

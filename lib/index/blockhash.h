/* blockhash: the index identity of a block, the rule of kv-conductor and
 * Dynamo (kvmatch(1) "Partitions and block identity").  Local hash: XXH3-64, seed 1337, over the block's
 * token ids as u32 little-endian.  Prefix chain: chain(-1) = 1337,
 * chain(i) = XXH3-64 of local(i) as 8 little-endian bytes, seeded with
 * chain(i-1): "this block after exactly this prefix", the key of the index. */
#ifndef KV_BLOCKHASH_H
#define KV_BLOCKHASH_H

#include <stddef.h>
#include <stdint.h>

#define KV_HASH_SEED 1337u
#define KV_CHAIN_ROOT ((uint64_t)1337)

uint64_t kv_local_hash(const uint32_t *tokens, size_t n);
uint64_t kv_chain_next(uint64_t parent_chain, uint64_t local);
/* The chains of n blocks of known local hashes after parent_chain. */
void kv_chain_hashes(uint64_t parent_chain, const uint64_t *local, uint64_t *chain, size_t n);
/* Local hashes and chains of a token sequence in blocks of block_size
 * (a trailing partial block too); returns the number of blocks written. */
size_t kv_block_hashes(const uint32_t *tokens, size_t ntokens, size_t block_size,
		       uint64_t parent_chain, uint64_t *local, uint64_t *chain, size_t max);

/* Mooncake RFC #1403's hash standard (Dynamo's indexer follows it):
 * local(i) = XXH3-64 of block i's tokens as u32 little-endian, seeded with
 * seed; seq(0) = local(0); seq(i) = XXH3-64 of the 16 bytes seq(i-1) LE,
 * local(i) LE, seeded with seed.  The rolling sequence hashes engines that
 * follow it publish.  Complete blocks only, as the RFC's /query counts
 * them; returns the number written. */
size_t kv_rfc_seq_hashes(const uint32_t *tokens, size_t ntokens, size_t block_size, uint64_t seed, uint64_t *seq,
			 size_t max);

/* NVIDIA Dynamo's router (kvquery(1) --hash dynamo): its local block hash
 * is XXH3-64 of the block's tokens as u32 little-endian seeded with
 * kv_dynamo_seed: 1337, plus XXH3-64 (seed 0) of the LoRA adapter's name,
 * plus XXH3-64 (seed 1) of the cache namespace, each added only when given
 * and not empty, modulo 2^64.  Without either it is kv_local_hash. */
uint64_t kv_dynamo_seed(const char *lora_name, const char *cache_namespace);
/* Those local hashes of the complete blocks of a token sequence (Dynamo
 * hashes no trailing partial block); returns the number written. */
size_t kv_seeded_local_hashes(const uint32_t *tokens, size_t ntokens, size_t block_size, uint64_t seed,
			      uint64_t *local, size_t max);

#endif

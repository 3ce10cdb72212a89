/* queryline: one query per line (kvquery(1) "Queries"): a kv-conductor /query body
 * {"model", "block_size", "token_ids", "tenant_id"}, a /query_by_hash body
 * with "block_hashes" (local hashes: JSON numbers read exactly as u64, or hex
 * strings), RFC #1403's fields (lora_name, cache_salt, instance_id, and
 * seq_hashes or block_hash), Dynamo's cache_namespace, or a bare token list, "[1,2,3]" or "1 2 3".
 * Token ids are kv-conductor's i64, cast to u32 as it casts them.  Streaming (yajl):
 * a 12,000-token line is parsed without building a document. */
#ifndef KV_QUERYLINE_H
#define KV_QUERYLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Token ids (or block hashes) in one query, at most: kvgen's longest
 * request, and what keeps one line's hashing arrays in the hundreds of MiB
 * even with block size 1 (kvquery(1), LIMITS). */
#define KV_QUERY_MAX_TOKENS (1u << 24)

struct kv_qline {
	bool by_hash;                /* block_hashes given (local hashes), or ... */
	bool by_seq;                 /* ... seq_hashes or block_hash (RFC #1403: engine sequence hashes) */
	bool has_model, has_tenant, has_block_size;
	char *model, *tenant;        /* valid until the next parse */
	char *lora, *salt, *instance; /* RFC #1403: lora_name, cache_salt, instance_id; NULL when absent or empty */
	char *cache_namespace;       /* Dynamo's router request: cache_namespace; NULL when absent or empty */
	uint64_t block_size;
	uint32_t *tokens;
	size_t ntokens;
	uint64_t *hashes;
	size_t nhashes;
};

struct kv_qparser;

struct kv_qparser *kv_qparser_new(void);
void kv_qparser_free(struct kv_qparser *p);
/* false: not a query, with the reason in kv_qparser_error(). */
bool kv_qparse(struct kv_qparser *p, const char *line, size_t n, struct kv_qline *q);
const char *kv_qparser_error(const struct kv_qparser *p);
/* *to becomes q with every string and array of q copied into memory that
 * alloc(arg, n) gives (n bytes, 8-byte aligned, not moved while *to is
 * used), so that the copy outlives the next parse (query/qlines.h: lines
 * parsed ahead).  Here, beside the struct, so that a field added to it is
 * copied too. */
void kv_qline_copy(const struct kv_qline *q, struct kv_qline *to, void *(*alloc)(void *arg, size_t n), void *arg);

#endif

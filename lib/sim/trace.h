/* trace: request traces in the Mooncake FAST'25 format, one JSON object
 * per line: timestamp (ms from the start), input_length, output_length,
 * hash_ids (prefix block ids, 512 tokens each; equal ids at the same place
 * are a shared prefix).  And the tokens a trace implies: block id i holds
 * tokens derived from (seed, i, position), so equal ids give equal blocks. */
#ifndef KV_TRACE_H
#define KV_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define KV_TRACE_BLOCK 512      /* tokens per trace hash id */
#define KV_TRACE_VOCAB 150000u  /* token ids are below this, like a real tokenizer's */
/* A trace line longer than this is skipped (kvgen(1), LIMITS).  The longest
 * request (2^24 tokens: 32768 hash ids of up to 20 digits) takes 700 KB; a
 * line is parsed into a document, about 25 times its size in memory. */
#define KV_TRACE_MAX_LINE (1u << 20)
/* The latest request time, in ms from the start (about 49.7 days): the
 * simulation's clock (base + time / --speed, in ns) stays within 64 bits
 * and its report windows within 4 Mi even of one second each, whatever one
 * bad line says. */
#define KV_TRACE_MAX_TS_MS 4294967295ull

struct kv_trace_req {
	uint64_t ts_ms;
	uint32_t input_length, output_length;
	uint64_t *hash_ids;
	size_t nids, capids;
};

/* Parses one line; false with the reason in e (65), which the caller
 * says with the line's place. */
bool kv_trace_parse(const char *line, size_t n, struct kv_trace_req *r, struct kv_err *e);
/* The request's prompt tokens: input_length of them, into *tokens (grown). */
size_t kv_trace_tokens(const struct kv_trace_req *r, uint64_t seed, uint32_t **tokens, size_t *cap);

#endif

/* emit: the publishers' side of the wire.  Encodes batches as vLLM (array
 * events up to 0.25 or map events from 0.26; int hashes or 32-byte sha256
 * style bytes), memcache MetaService and the Mooncake master (its own publisher, as
 * tests/fixtures/mooncake-master captured it) publish them,
 * for kvgen's simulated cluster.  The inverse of wire.c. */
#ifndef KV_EMIT_H
#define KV_EMIT_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/event.h"
#include "decode/medium.h"

struct kv_emit_opts {
	bool vllm_map;          /* map events (vLLM 0.26+) instead of arrays */
	bool hash_bytes;        /* 32-byte hashes whose last 8 bytes are the u64 */
	bool mooncake;          /* pool batches as the Mooncake master, else memcache */
};

struct kv_emit_event {
	enum kv_evtype type;
	const char *medium;     /* as engines spell it: "GPU", "CPU", "DISK" */
	const uint64_t *hashes;
	size_t nhashes;
	bool has_parent;
	uint64_t parent;
	const uint32_t *tokens;
	size_t ntokens;
	uint32_t block_size;
};

struct kv_emit_pool_event {
	enum kv_evtype type;
	const char *medium;     /* "cpu", "disk" */
	const uint64_t *hashes;
	size_t nhashes;
	const char *backend_id, *tenant;
	const char *model;      /* memcache only: the Mooncake master names none */
	int64_t ts_ms;
};

/* [ts, [events...], dp_rank] */
void kv_emit_vllm_batch(msgpack_sbuffer *sb, const struct kv_emit_opts *o, double ts, int64_t dp,
			const struct kv_emit_event *ev, size_t n);
/* memcache MetaService: {"events": [...]}, every event in one batch. */
void kv_emit_memcache_batch(msgpack_sbuffer *sb, const struct kv_emit_pool_event *ev, size_t n);

/* The Mooncake master publishes one event per object key, at most 64 a
 * batch: [ts_ms, [...], 0]. */
#define KV_EMIT_MOONCAKE_BATCH 64
/* Where the next batch starts among a request's pool events (their hashes
 * are the object keys), and the last event id given (the master numbers
 * its events from 1, over all batches). */
struct kv_emit_mooncake_pos {
	size_t event, hash;
	uint64_t event_id;
};
/* Encodes the next batch of the events' object keys from pos into sb and
 * moves pos past them; false, sb untouched, when none is left. */
bool kv_emit_mooncake_batch(msgpack_sbuffer *sb, int64_t ts_ms, const struct kv_emit_pool_event *ev, size_t n,
			    struct kv_emit_mooncake_pos *pos);

#endif

/* wire: publisher payloads (MessagePack) to events (kvdecode(1)
 * "Publishers", "Hashes", "Media"): the batch shapes, and which dialect
 * each event of a batch is.  vLLM batches ([ts, events], [ts, events, dp],
 * [ts, dp, events], or a map with "ts") carry vLLM's events (decode/vllm.c);
 * memcache MetaService batches {"events": [...]} and Mooncake master
 * batches [ts_ms, [maps], dp] carry pool events (decode/pool.c).  A payload
 * that cannot be decoded fails as a whole; a bad event is skipped and a bad
 * hash dropped, each noted as an issue, and the rest of the batch survives. */
#ifndef KV_WIRE_H
#define KV_WIRE_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/ctx.h"
#include "decode/event.h"
#include "decode/flexhash.h"

struct kv_wire_opts {
	struct kv_hash_opts hash;
	bool raw_hashes;        /* keep each hash's wire form */
};

#define KV_WIRE_MAX_ISSUES 16
#define KV_WIRE_NOFF 4

struct kv_wire {
	struct kv_wire_opts opts;
	msgpack_zone zone;
	struct kv_event *ev;
	size_t nev, capev;
	/* the events' arrays live here; offsets until the batch is done */
	uint64_t *hashes;
	size_t nh, caph;
	uint32_t *tokens;
	size_t nt, capt;
	struct kv_raw_hash *raw;
	size_t nraw, capraw;
	uint64_t *locals;       /* Dynamo stores: each block's tokens_hash */
	size_t nl, capl;
	size_t *off;            /* per event: KV_WIRE_NOFF offsets, of hashes, tokens, raw forms, locals */
	size_t capoff;
	uint64_t *seen;         /* scratch set for merging pool hashes */
	/* Dynamo: payloads within payloads, rebuilt (JSON as MessagePack, an
	 * envelope's payload sent as an array of bytes); live until the next call */
	struct { uint8_t *p; size_t cap; } inner[2];
	size_t capseen;
	/* results besides the events */
	unsigned nissues;       /* event and hash problems in this payload (all of them) */
	char issues[KV_WIRE_MAX_ISSUES][160];
	unsigned ignored;       /* events of types this decoder does not know */
	char error[160];        /* why the payload failed, when it did */
};

void kv_wire_init(struct kv_wire *w, const struct kv_wire_opts *opts);
void kv_wire_free(struct kv_wire *w);
/* Decodes one payload into w->ev[0..nev).  false: the whole payload failed
 * (w->error).  Events and issues are valid until the next call. */
bool kv_wire_decode(struct kv_wire *w, const struct kv_wire_ctx *ctx, const uint8_t *p, size_t n);

/* Whether a payload has the Mooncake master's shape, [ts_ms as an integer,
 * [...], ...] (vLLM stamps its batches in float seconds); cheap, without
 * decoding, for kvsub's statistics. */
bool kv_wire_is_mooncake_batch(const uint8_t *p, size_t n);

#endif

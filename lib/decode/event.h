/* event: the KV-cache event, the waist of the toolkit.
 * Decoders (wire.c from MessagePack, evjson.c from JSON lines) produce it,
 * kvdecode writes it as a JSON line (evjson.c), kvmatch consumes it.
 * Strings and arrays point into buffers owned by whoever produced the event
 * and live until that producer's next call. */
#ifndef KV_EVENT_H
#define KV_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/medium.h"

struct msgpack_object;   /* extra_keys, from MessagePack input: only its users need <msgpack.h> */

struct kv_str {
	const char *p;
	size_t n;
};

enum kv_format { KV_FMT_VLLM = 0, KV_FMT_MEMCACHE, KV_FMT_MOONCAKE, KV_FMT_DYNAMO };
#define KV_NFORMATS 4
enum kv_evtype { KV_EV_STORED = 0, KV_EV_REMOVED, KV_EV_CLEARED };
enum kv_ts_kind { KV_TS_NONE = 0, KV_TS_SECONDS, KV_TS_MS };

/* Optional fields: set in kv_event.has when the wire carried them. */
enum {
	KV_HAS_PARENT = 1u << 0,        /* parent: a hash, or null (parent_null) */
	KV_HAS_TOKENS = 1u << 1,
	KV_HAS_BLOCK_SIZE = 1u << 2,
	KV_HAS_LORA_ID = 1u << 3,
	KV_HAS_LORA_NAME = 1u << 4,
	KV_HAS_EXTRA_KEYS = 1u << 5,
	KV_HAS_GROUP_IDX = 1u << 6,
	KV_HAS_SPEC_KIND = 1u << 7,
	KV_HAS_SLIDING_WINDOW = 1u << 8,
	KV_HAS_MEDIUM_RAW = 1u << 9,
	KV_HAS_BACKEND_ID = 1u << 10,
	KV_HAS_MODEL_NAME = 1u << 11,
	KV_HAS_TENANT_ID = 1u << 12,
	KV_HAS_EVENT_ID = 1u << 13,
	KV_HAS_OBJECT_KEY = 1u << 14,
	KV_HAS_RAW_HASHES = 1u << 15,
	KV_HAS_LOCALITY = 1u << 16,
	KV_HAS_OWNERSHIP = 1u << 17,
	KV_HAS_BASE_BLOCK_IDX = 1u << 18,
	KV_HAS_ADDITIONAL_SALT = 1u << 19,
	KV_HAS_GROUP_ID = 1u << 20,     /* a pool event's object group, as it came */
	KV_HAS_WORKER_ID = 1u << 21,    /* Dynamo: the RouterEvent's worker_id */
	KV_HAS_TOKENS_HASHES = 1u << 22, /* Dynamo: each stored block's tokens_hash */
	KV_HAS_PUBLISHER_ID = 1u << 23, /* Dynamo: the event plane envelope's publisher_id and sequence */
};

/* A value echoed as it came (event_id is an int on some publishers, a
 * string on others; a Mooncake group_id is an object group's name). */
struct kv_scalar {
	enum { KV_SCALAR_U64, KV_SCALAR_I64, KV_SCALAR_STR } kind;
	uint64_t u;
	int64_t i;
	struct kv_str s;
};

/* A hash as it was on the wire, for --raw-hashes. */
struct kv_raw_hash {
	enum { KV_RAW_UINT, KV_RAW_INT, KV_RAW_BYTES, KV_RAW_STR } kind;
	uint64_t u;
	int64_t i;
	struct kv_str s;       /* bytes or string */
};

struct kv_event {
	/* from the record and the batch */
	struct kv_str src, topic;
	uint64_t recv_ns;
	bool has_seq;
	uint64_t seq;
	bool replayed;
	enum kv_format format;
	enum kv_ts_kind ts_kind;
	double ts;                 /* KV_TS_SECONDS */
	int64_t ts_ms;             /* KV_TS_MS */
	bool has_dp;
	int64_t dp_rank;
	/* the event */
	enum kv_evtype type;
	enum kv_medium medium;
	const uint64_t *hashes;
	size_t nhashes;
	uint32_t has;              /* KV_HAS_* */
	bool parent_null;
	uint64_t parent;
	const uint32_t *tokens;
	size_t ntokens;
	int64_t block_size;
	bool lora_id_null;
	int64_t lora_id;
	int64_t group_idx;         /* vLLM's KV cache group index */
	int64_t sliding_window;
	int64_t base_block_idx;    /* pool events */
	struct kv_str lora_name, spec_kind, medium_raw, backend_id, model_name, tenant_id, object_key;
	struct kv_str locality, ownership;   /* vLLM, as on the wire */
	struct kv_str additional_salt;       /* pool events */
	struct kv_scalar event_id;
	struct kv_scalar group_id;           /* pool events: the object group (Mooncake), as it came */
	const struct msgpack_object *extra_keys;  /* only from wire decoding; JSON input passes extra_json */
	struct kv_str extra_json;          /* extra_keys as JSON text, when read from a JSON line */
	const struct kv_raw_hash *raw_hashes;
	size_t nraw;
	/* Dynamo (kvdecode(1) "Dynamo's event plane"): the worker, each stored
	 * block's local hash (its tokens_hash: kvmatch chains the blocks from
	 * them, as from tokens), and the envelope that carried the event */
	uint64_t worker_id;
	const uint64_t *tokens_hashes;
	size_t ntokens_hashes;
	uint64_t publisher_id, pub_sequence;
	uint8_t hash_forms;        /* KV_HF_* of the hashes on the wire; 0 when not known (JSON input) */
};

const char *kv_format_name(enum kv_format f);
/* The one rule for a dp_rank read from any input: 0 to 2^32-1, what a
 * snapshot stores (kvsnap(5)); a larger one would collide with another
 * rank there.  KV_DP_RANK_RULE says so in messages. */
bool kv_dp_rank_valid(int64_t dp_rank);
#define KV_DP_RANK_RULE "a rank from 0 to 4294967295"

const char *kv_evtype_name(enum kv_evtype t);

#endif

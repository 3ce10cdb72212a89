#include "sim/emit.h"

#include <string.h>
#include <xxhash.h>

static void pack_str(msgpack_packer *pk, const char *s)
{
	msgpack_pack_str_with_body(pk, s, strlen(s));
}

/* vLLM's sha256 block hash as bytes: 24 filler bytes, then the u64 big-endian
 * (its int mode takes the low 64 bits, so both modes name the block alike). */
static void pack_hash(msgpack_packer *pk, const struct kv_emit_opts *o, uint64_t h)
{
	if (!o->hash_bytes) {
		msgpack_pack_uint64(pk, h);
		return;
	}
	uint8_t b[32];
	for (int i = 0; i < 3; i++) {
		uint64_t f = XXH3_64bits_withSeed(&h, sizeof h, (uint64_t)i);
		memcpy(b + 8 * i, &f, 8);
	}
	for (int i = 0; i < 8; i++)
		b[24 + i] = (uint8_t)(h >> (56 - 8 * i));
	msgpack_pack_bin_with_body(pk, b, sizeof b);
}

static void pack_hashes(msgpack_packer *pk, const struct kv_emit_opts *o, const uint64_t *h, size_t n)
{
	msgpack_pack_array(pk, n);
	for (size_t i = 0; i < n; i++)
		pack_hash(pk, o, h[i]);
}

static void pack_tokens(msgpack_packer *pk, const uint32_t *t, size_t n)
{
	msgpack_pack_array(pk, n);
	for (size_t i = 0; i < n; i++)
		msgpack_pack_uint32(pk, t[i]);
}

static void pack_parent(msgpack_packer *pk, const struct kv_emit_opts *o, const struct kv_emit_event *e)
{
	if (e->has_parent)
		pack_hash(pk, o, e->parent);
	else
		msgpack_pack_nil(pk);
}

static void array_event(msgpack_packer *pk, const struct kv_emit_opts *o, const struct kv_emit_event *e)
{
	switch (e->type) {
	case KV_EV_STORED:
		/* tag, block_hashes, parent, token_ids, block_size, lora_id, medium */
		msgpack_pack_array(pk, 7);
		pack_str(pk, "BlockStored");
		pack_hashes(pk, o, e->hashes, e->nhashes);
		pack_parent(pk, o, e);
		pack_tokens(pk, e->tokens, e->ntokens);
		msgpack_pack_uint32(pk, e->block_size);
		msgpack_pack_nil(pk);
		pack_str(pk, e->medium);
		break;
	case KV_EV_REMOVED:
		msgpack_pack_array(pk, 3);
		pack_str(pk, "BlockRemoved");
		pack_hashes(pk, o, e->hashes, e->nhashes);
		pack_str(pk, e->medium);
		break;
	case KV_EV_CLEARED:
		msgpack_pack_array(pk, 1);
		pack_str(pk, "AllBlocksCleared");
		break;
	}
}

/* vLLM 0.26 map events omit fields at their defaults (lora_id None). */
static void map_event(msgpack_packer *pk, const struct kv_emit_opts *o, const struct kv_emit_event *e)
{
	switch (e->type) {
	case KV_EV_STORED:
		msgpack_pack_map(pk, 6);
		pack_str(pk, "type");
		pack_str(pk, "BlockStored");
		pack_str(pk, "block_hashes");
		pack_hashes(pk, o, e->hashes, e->nhashes);
		pack_str(pk, "parent_block_hash");
		pack_parent(pk, o, e);
		pack_str(pk, "token_ids");
		pack_tokens(pk, e->tokens, e->ntokens);
		pack_str(pk, "block_size");
		msgpack_pack_uint32(pk, e->block_size);
		pack_str(pk, "medium");
		pack_str(pk, e->medium);
		break;
	case KV_EV_REMOVED:
		msgpack_pack_map(pk, 3);
		pack_str(pk, "type");
		pack_str(pk, "BlockRemoved");
		pack_str(pk, "block_hashes");
		pack_hashes(pk, o, e->hashes, e->nhashes);
		pack_str(pk, "medium");
		pack_str(pk, e->medium);
		break;
	case KV_EV_CLEARED:
		msgpack_pack_map(pk, 1);
		pack_str(pk, "type");
		pack_str(pk, "AllBlocksCleared");
		break;
	}
}

void kv_emit_vllm_batch(msgpack_sbuffer *sb, const struct kv_emit_opts *o, double ts, int64_t dp,
			const struct kv_emit_event *ev, size_t n)
{
	msgpack_packer pk;
	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 3);
	msgpack_pack_double(&pk, ts);
	msgpack_pack_array(&pk, n);
	for (size_t i = 0; i < n; i++)
		(o->vllm_map ? map_event : array_event)(&pk, o, &ev[i]);
	msgpack_pack_int64(&pk, dp);
}

static void pool_event(msgpack_packer *pk, const struct kv_emit_opts *o, const struct kv_emit_pool_event *e)
{
	static const char *const types[] = { "stored", "removed", "cleared" };
	static const char *const legacy[] = { "BlockStored", "BlockRemoved", "AllBlocksCleared" };
	bool hashes = e->type != KV_EV_CLEARED;
	msgpack_pack_map(pk, (o->mooncake ? 8 : 7) + (hashes ? 1 : 0));
	pack_str(pk, "event_type");
	pack_str(pk, types[e->type]);
	pack_str(pk, "timestamp");
	msgpack_pack_int64(pk, e->ts_ms);
	pack_str(pk, "model_name");
	pack_str(pk, e->model);
	pack_str(pk, "tenant_id");
	pack_str(pk, e->tenant);
	pack_str(pk, "backend_id");
	pack_str(pk, e->backend_id);
	pack_str(pk, "medium");
	pack_str(pk, e->medium);
	pack_str(pk, "dp_rank");
	msgpack_pack_nil(pk);
	if (o->mooncake) {
		pack_str(pk, "type");
		pack_str(pk, legacy[e->type]);
	}
	if (!hashes)
		return;
	/* memcache sends u64 (hashAsInt); the Mooncake master packs int64 */
	pack_str(pk, o->mooncake ? "block_hashes" : "seq_hashes");
	msgpack_pack_array(pk, e->nhashes);
	for (size_t i = 0; i < e->nhashes; i++) {
		if (o->mooncake)
			msgpack_pack_int64(pk, (int64_t)e->hashes[i]);
		else
			msgpack_pack_uint64(pk, e->hashes[i]);
	}
}

void kv_emit_pool_batch(msgpack_sbuffer *sb, const struct kv_emit_opts *o, int64_t ts_ms,
			const struct kv_emit_pool_event *ev, size_t n)
{
	msgpack_packer pk;
	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	if (o->mooncake) {
		msgpack_pack_array(&pk, 3);
		msgpack_pack_int64(&pk, ts_ms);
	} else {
		msgpack_pack_map(&pk, 1);
		pack_str(&pk, "events");
	}
	msgpack_pack_array(&pk, n);
	for (size_t i = 0; i < n; i++)
		pool_event(&pk, o, &ev[i]);
	if (o->mooncake)
		msgpack_pack_int(&pk, 0);
}

#include "sim/emit.h"

#include <inttypes.h>
#include <stdio.h>
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

static void pack_decimal_key(msgpack_packer *pk, uint64_t h)
{
	char key[24];
	int n = snprintf(key, sizeof key, "%" PRIu64, h);
	msgpack_pack_str_with_body(pk, key, (size_t)n);
}

/* memcache MetaService: hashes as u64 (hashAsInt), several an event. */
static void memcache_event(msgpack_packer *pk, const struct kv_emit_pool_event *e)
{
	static const char *const types[] = { "stored", "removed", "cleared" };
	bool hashes = e->type != KV_EV_CLEARED;
	msgpack_pack_map(pk, 7 + (hashes ? 1 : 0));
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
	if (!hashes)
		return;
	pack_str(pk, "seq_hashes");
	msgpack_pack_array(pk, e->nhashes);
	for (size_t i = 0; i < e->nhashes; i++)
		msgpack_pack_uint64(pk, e->hashes[i]);
}

void kv_emit_memcache_batch(msgpack_sbuffer *sb, const struct kv_emit_pool_event *ev, size_t n)
{
	msgpack_packer pk;
	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 1);
	pack_str(&pk, "events");
	msgpack_pack_array(&pk, n);
	for (size_t i = 0; i < n; i++)
		memcache_event(&pk, &ev[i]);
}

static void pack_nil_field(msgpack_packer *pk, const char *key)
{
	pack_str(pk, key);
	msgpack_pack_nil(pk);
}

/* One object key's event as the Mooncake master's publisher writes it with
 * its default flags (RFC #1527's keys, the legacy type and block_hashes,
 * the object key), in its order: the master has no model context, so the
 * model, block size, salt, LoRA and dp_rank are nil, and come from the
 * pool's registration.  The hash is the key's seq hash, u64 in seq_hashes
 * and int64 in block_hashes. */
static void mooncake_event(msgpack_packer *pk, const struct kv_emit_pool_event *e, uint64_t hash, uint64_t id)
{
	static const char *const types[] = { "stored", "removed", "cleared" };
	static const char *const legacy[] = { "BlockStored", "BlockRemoved", "AllBlocksCleared" };
	bool stored = e->type == KV_EV_STORED;
	msgpack_pack_map(pk, stored ? 20 : 17);
	pack_str(pk, "event_id");
	msgpack_pack_uint64(pk, id);
	pack_str(pk, "timestamp");
	msgpack_pack_uint64(pk, (uint64_t)e->ts_ms);
	pack_str(pk, "event_type");
	pack_str(pk, types[e->type]);
	pack_str(pk, "type");
	pack_str(pk, legacy[e->type]);
	pack_nil_field(pk, "model_name");
	pack_nil_field(pk, "block_size");
	pack_nil_field(pk, "additional_salt");
	pack_nil_field(pk, "lora_name");
	pack_str(pk, "tenant_id");
	pack_str(pk, e->tenant);
	pack_str(pk, "backend_id");
	pack_str(pk, e->backend_id);
	pack_nil_field(pk, "group_id");
	pack_str(pk, "medium");
	pack_str(pk, e->medium);
	pack_nil_field(pk, "dp_rank");
	pack_str(pk, "object_key");
	pack_decimal_key(pk, hash);
	pack_str(pk, "seq_hashes");
	msgpack_pack_array(pk, 1);
	msgpack_pack_uint64(pk, hash);
	pack_str(pk, "block_hashes");
	msgpack_pack_array(pk, 1);
	msgpack_pack_int64(pk, (int64_t)hash);
	pack_str(pk, "base_block_idx");
	if (!stored) {
		msgpack_pack_nil(pk);
		return;
	}
	msgpack_pack_uint32(pk, 0);
	pack_nil_field(pk, "parent_hash");
	pack_nil_field(pk, "token_ids");
	pack_nil_field(pk, "parent_block_hash");
}

bool kv_emit_mooncake_batch(msgpack_sbuffer *sb, int64_t ts_ms, const struct kv_emit_pool_event *ev, size_t n,
			    struct kv_emit_mooncake_pos *pos)
{
	/* the object keys left, at most one batch of them */
	size_t left = 0;
	for (size_t i = pos->event; i < n && left < KV_EMIT_MOONCAKE_BATCH; i++)
		if (ev[i].type != KV_EV_CLEARED)
			left += ev[i].nhashes - (i == pos->event ? pos->hash : 0);
	if (left == 0)
		return false;
	size_t count = left < KV_EMIT_MOONCAKE_BATCH ? left : KV_EMIT_MOONCAKE_BATCH;
	msgpack_packer pk;
	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 3);
	msgpack_pack_uint64(&pk, (uint64_t)ts_ms);
	msgpack_pack_array(&pk, count);
	for (size_t k = 0; k < count;) {
		const struct kv_emit_pool_event *e = &ev[pos->event];
		if (e->type == KV_EV_CLEARED || pos->hash >= e->nhashes) {
			pos->event++;
			pos->hash = 0;
			continue;
		}
		mooncake_event(&pk, e, e->hashes[pos->hash++], ++pos->event_id);
		k++;
	}
	msgpack_pack_int(&pk, 0);
	return true;
}

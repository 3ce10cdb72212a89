#include "decode/evjson.h"
#include "base/jsonw.h"
#include "base/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void kv_evjson_init(struct kv_evjson *j)
{
	memset(j, 0, sizeof *j);
	kv_out_open_mem(&j->prefix);
	j->ts_cached = NAN;
}

void kv_evjson_free(struct kv_evjson *j)
{
	kv_out_free_mem(&j->prefix);
	memset(j, 0, sizeof *j);
}

void kv_evjson_record(struct kv_evjson *j, const struct kv_wire_ctx *ctx)
{
	struct jw w;
	j->prefix.len = 0;
	jw_begin(&w, &j->prefix);
	jw_put_lit(&w, "{\"src\":");
	jw_put_str(&w, ctx->src.p, ctx->src.n);
	jw_put_lit(&w, ",\"recv_ns\":");
	jw_put_u64(&w, ctx->recv_ns);
	jw_put_lit(&w, ",\"seq\":");
	if (ctx->has_seq)
		jw_put_u64(&w, ctx->seq);
	else
		jw_put_lit(&w, "null");
	jw_put_lit(&w, ",\"topic\":");
	jw_put_str(&w, ctx->topic.p, ctx->topic.n);
	jw_put_lit(&w, ctx->replayed ? ",\"replayed\":true," : ",\"replayed\":false,");
	jw_end(&w);
}

static void write_ts(struct kv_evjson *j, struct jw *w, const struct kv_event *e)
{
	switch (e->ts_kind) {
	case KV_TS_MS:
		jw_put_ms_as_seconds(w, e->ts_ms);
		return;
	case KV_TS_SECONDS:
		/* A batch's events share its ts: format it once. */
		if (e->ts != j->ts_cached) {
			j->ts_len = (size_t)(jw_double(j->ts_text, e->ts) - j->ts_text);
			j->ts_cached = e->ts;
		}
		jw_put_raw(w, j->ts_text, j->ts_len);
		return;
	default:
		jw_put_lit(w, "null");
	}
}

static inline void opt_str(struct jw *w, const char *key, struct kv_str s)
{
	jw_put_lit(w, key);
	jw_put_str(w, s.p, s.n);
}

static inline void write_scalar(struct jw *w, const char *key, const struct kv_scalar *v)
{
	jw_put_lit(w, key);
	switch (v->kind) {
	case KV_SCALAR_U64: jw_put_u64(w, v->u); return;
	case KV_SCALAR_I64: jw_put_i64(w, v->i); return;
	default: jw_put_str(w, v->s.p, v->s.n);
	}
}

static void write_raw_hashes(struct jw *w, const struct kv_event *e)
{
	jw_put_lit(w, ",\"raw_hashes\":[");
	for (size_t i = 0; i < e->nraw; i++) {
		const struct kv_raw_hash *r = &e->raw_hashes[i];
		if (i)
			jw_put_char(w, ',');
		switch (r->kind) {
		case KV_RAW_UINT: jw_put_u64(w, r->u); break;
		case KV_RAW_INT: jw_put_i64(w, r->i); break;
		case KV_RAW_BYTES: jw_put_hex_str(w, (const uint8_t *)r->s.p, r->s.n); break;
		case KV_RAW_STR: jw_put_str(w, r->s.p, r->s.n); break;
		}
	}
	jw_put_char(w, ']');
}

static const char *const format_keys[] = { "\"format\":\"vllm\",\"ts\":", "\"format\":\"memcache\",\"ts\":",
					   "\"format\":\"mooncake\",\"ts\":", "\"format\":\"dynamo\",\"ts\":" };
static const char *const type_keys[] = { ",\"type\":\"stored\",\"medium\":\"", ",\"type\":\"removed\",\"medium\":\"",
					 ",\"type\":\"cleared\",\"medium\":\"" };

static void write_optional(struct jw *w, const struct kv_event *e)
{
	uint32_t has = e->has;
	if (has & KV_HAS_GROUP_IDX) {
		jw_put_lit(w, ",\"group_idx\":");
		jw_put_i64(w, e->group_idx);
	}
	if (has & KV_HAS_SPEC_KIND)
		opt_str(w, ",\"kv_cache_spec_kind\":", e->spec_kind);
	if (has & KV_HAS_SLIDING_WINDOW) {
		jw_put_lit(w, ",\"kv_cache_spec_sliding_window\":");
		jw_put_i64(w, e->sliding_window);
	}
	if (has & KV_HAS_LOCALITY)
		opt_str(w, ",\"locality\":", e->locality);
	if (has & KV_HAS_OWNERSHIP)
		opt_str(w, ",\"ownership\":", e->ownership);
	if (has & KV_HAS_MEDIUM_RAW)
		opt_str(w, ",\"medium_raw\":", e->medium_raw);
	if (has & KV_HAS_BACKEND_ID)
		opt_str(w, ",\"backend_id\":", e->backend_id);
	if (has & KV_HAS_MODEL_NAME)
		opt_str(w, ",\"model_name\":", e->model_name);
	if (has & KV_HAS_TENANT_ID)
		opt_str(w, ",\"tenant_id\":", e->tenant_id);
	if (has & KV_HAS_EVENT_ID)
		write_scalar(w, ",\"event_id\":", &e->event_id);
	if (has & KV_HAS_GROUP_ID)
		write_scalar(w, ",\"group_id\":", &e->group_id);
	if (has & KV_HAS_OBJECT_KEY)
		opt_str(w, ",\"object_key\":", e->object_key);
	if (has & KV_HAS_BASE_BLOCK_IDX) {
		jw_put_lit(w, ",\"base_block_idx\":");
		jw_put_i64(w, e->base_block_idx);
	}
	if (has & KV_HAS_ADDITIONAL_SALT)
		opt_str(w, ",\"additional_salt\":", e->additional_salt);
	if (has & KV_HAS_WORKER_ID) {
		/* a u64 (Dynamo's instance ids pass 2^53): a string of its digits */
		jw_put_lit(w, ",\"worker_id\":\"");
		jw_put_u64(w, e->worker_id);
		jw_put_char(w, '"');
	}
	if (has & KV_HAS_TOKENS_HASHES) {
		jw_put_lit(w, ",\"tokens_hashes\":[");
		jw_put_hash_list(w, e->tokens_hashes, e->ntokens_hashes);
		jw_put_char(w, ']');
	}
	if (has & KV_HAS_PUBLISHER_ID) {
		jw_put_lit(w, ",\"publisher_id\":");
		jw_put_u64(w, e->publisher_id);
		jw_put_lit(w, ",\"publisher_seq\":");
		jw_put_u64(w, e->pub_sequence);
	}
	if (has & KV_HAS_RAW_HASHES)
		write_raw_hashes(w, e);
}

void kv_evjson_write(struct kv_evjson *j, struct kv_out *o, const struct kv_event *e)
{
	struct jw w;
	jw_begin(&w, o);
	jw_put_raw(&w, j->prefix.buf, j->prefix.len);
	jw_put_lit(&w, format_keys[e->format]);
	write_ts(j, &w, e);
	jw_put_lit(&w, ",\"dp_rank\":");
	if (e->has_dp)
		jw_put_i64(&w, e->dp_rank);
	else
		jw_put_lit(&w, "null");
	jw_put_lit(&w, type_keys[e->type]);
	jw_put_lit(&w, kv_medium_name(e->medium));
	jw_put_lit(&w, "\",\"block_hashes\":[");
	jw_put_hash_list(&w, e->hashes, e->nhashes);
	jw_put_char(&w, ']');
	uint32_t has = e->has;
	if (has & KV_HAS_PARENT) {
		jw_put_lit(&w, ",\"parent\":");
		if (e->parent_null)
			jw_put_lit(&w, "null");
		else
			jw_put_hash(&w, e->parent);
	}
	if (has & KV_HAS_TOKENS) {
		jw_put_lit(&w, ",\"token_ids\":[");
		jw_put_u32_list(&w, e->tokens, e->ntokens);
		jw_put_char(&w, ']');
	}
	if (has & KV_HAS_BLOCK_SIZE) {
		jw_put_lit(&w, ",\"block_size\":");
		jw_put_i64(&w, e->block_size);
	}
	if (has & KV_HAS_LORA_ID) {
		jw_put_lit(&w, ",\"lora_id\":");
		jw_put_i64(&w, e->lora_id);
	}
	if (has & KV_HAS_LORA_NAME)
		opt_str(&w, ",\"lora_name\":", e->lora_name);
	if (has & KV_HAS_EXTRA_KEYS) {
		jw_put_lit(&w, ",\"extra_keys\":");
		if (e->extra_keys) {
			/* through a copy: w's address never escapes, and stays in registers */
			struct jw x = w;
			kv_json_put_msgpack(&x, e->extra_keys);
			w = x;
		} else
			jw_put_raw(&w, e->extra_json.p, e->extra_json.n);
	}
	write_optional(&w, e);
	jw_put_lit(&w, "}\n");
	jw_end(&w);
}

/* The fields every non-event line starts with. */
static void record_line(struct jw *w, const char *type, const struct kv_wire_ctx *ctx, uint64_t record)
{
	jw_put_lit(w, type);
	jw_put_lit(w, ",\"src\":");
	jw_put_str(w, ctx->src.p, ctx->src.n);
	jw_put_lit(w, ",\"seq\":");
	if (ctx->has_seq)
		jw_put_u64(w, ctx->seq);
	else
		jw_put_lit(w, "null");
	jw_put_lit(w, ",\"recv_ns\":");
	jw_put_u64(w, ctx->recv_ns);
	jw_put_lit(w, ",\"record\":");
	jw_put_u64(w, record);
}

void kv_evjson_write_error(struct kv_out *o, const struct kv_wire_ctx *ctx, uint64_t record, const char *msg)
{
	struct jw w;
	jw_begin(&w, o);
	record_line(&w, "{\"type\":\"error\"", ctx, record);
	jw_put_lit(&w, ",\"error\":");
	jw_put_cstr(&w, msg);
	jw_put_lit(&w, "}\n");
	jw_end(&w);
}

void kv_evjson_write_no_events(struct kv_out *o, const struct kv_wire_ctx *ctx, uint64_t record, bool decoded)
{
	struct jw w;
	jw_begin(&w, o);
	record_line(&w, "{\"type\":\"no_events\"", ctx, record);
	jw_put_lit(&w, decoded ? ",\"decoded\":true}\n" : ",\"decoded\":false}\n");
	jw_end(&w);
}

/* The longest JSON text of a map key that is not a string (see below). */
#define KEY_TEXT_MAX 128

/* JSON keys are strings: a key of another type is written as its JSON text,
 * quoted, and cut at KEY_TEXT_MAX bytes.  A key that is a map with map keys
 * is escaped again at each level, which doubles the text per level: uncut, a
 * 1.6 KiB payload made kvdecode take 800 MB. */
static void put_key_text(struct jw *w, const msgpack_object *k)
{
	struct kv_out text;
	struct jw tw;
	kv_out_open_mem(&text);
	jw_begin(&tw, &text);
	kv_json_put_msgpack(&tw, k);
	jw_end(&tw);
	jw_put_str(w, text.buf, text.len < KEY_TEXT_MAX ? text.len : KEY_TEXT_MAX);
	kv_out_free_mem(&text);
}

void kv_json_put_msgpack(struct jw *w, const msgpack_object *v)
{
	switch (v->type) {
	case MSGPACK_OBJECT_NIL:
		jw_put_lit(w, "null");
		return;
	case MSGPACK_OBJECT_BOOLEAN:
		jw_put_lit(w, v->via.boolean ? "true" : "false");
		return;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		jw_put_u64(w, v->via.u64);
		return;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		jw_put_i64(w, v->via.i64);
		return;
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		jw_put_double(w, v->via.f64);
		return;
	case MSGPACK_OBJECT_STR:
		jw_put_str(w, v->via.str.ptr, v->via.str.size);
		return;
	case MSGPACK_OBJECT_BIN:
		jw_put_hex_str(w, (const uint8_t *)v->via.bin.ptr, v->via.bin.size);
		return;
	case MSGPACK_OBJECT_EXT:
		jw_put_hex_str(w, (const uint8_t *)v->via.ext.ptr, v->via.ext.size);
		return;
	case MSGPACK_OBJECT_ARRAY:
		jw_put_char(w, '[');
		for (uint32_t i = 0; i < v->via.array.size; i++) {
			if (i)
				jw_put_char(w, ',');
			kv_json_put_msgpack(w, &v->via.array.ptr[i]);
		}
		jw_put_char(w, ']');
		return;
	case MSGPACK_OBJECT_MAP:
		jw_put_char(w, '{');
		for (uint32_t i = 0; i < v->via.map.size; i++) {
			const msgpack_object *k = &v->via.map.ptr[i].key;
			if (i)
				jw_put_char(w, ',');
			if (k->type == MSGPACK_OBJECT_STR)
				kv_json_put_msgpack(w, k);
			else
				put_key_text(w, k);
			jw_put_char(w, ':');
			kv_json_put_msgpack(w, &v->via.map.ptr[i].val);
		}
		jw_put_char(w, '}');
		return;
	}
	jw_put_lit(w, "null");
}

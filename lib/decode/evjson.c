#include "decode/evjson.h"
#include "base/jsonw.h"
#include "base/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void kv_evjson_init(struct kv_evjson *j)
{
	memset(j, 0, sizeof *j);
	j->ts_cached = NAN;
}

void kv_evjson_free(struct kv_evjson *j)
{
	free(j->prefix);
	memset(j, 0, sizeof *j);
}

static char *lit(char *p, const char *s)
{
	size_t n = strlen(s);
	memcpy(p, s, n);
	return p + n;
}

void kv_evjson_record(struct kv_evjson *j, const struct kv_wire_ctx *ctx)
{
	size_t need = 128 + JW_STR_MAX(ctx->src.n) + JW_STR_MAX(ctx->topic.n);
	j->prefix = kv_xgrow(j->prefix, &j->prefix_cap, need, 1);
	char *p = j->prefix;
	p = lit(p, "{\"src\":");
	p = jw_str(p, ctx->src.p, ctx->src.n);
	p = lit(p, ",\"recv_ns\":");
	p = jw_u64(p, ctx->recv_ns);
	p = lit(p, ",\"seq\":");
	p = ctx->has_seq ? jw_u64(p, ctx->seq) : lit(p, "null");
	p = lit(p, ",\"topic\":");
	p = jw_str(p, ctx->topic.p, ctx->topic.n);
	p = lit(p, ctx->replayed ? ",\"replayed\":true," : ",\"replayed\":false,");
	j->prefix_len = (size_t)(p - j->prefix);
}

static char *write_ts(struct kv_evjson *j, char *p, const struct kv_event *e)
{
	switch (e->ts_kind) {
	case KV_TS_MS:
		return jw_ms_as_seconds(p, e->ts_ms);
	case KV_TS_SECONDS:
		/* A batch's events share its ts: format it once. */
		if (e->ts != j->ts_cached) {
			j->ts_len = (size_t)(jw_double(j->ts_text, e->ts) - j->ts_text);
			j->ts_cached = e->ts;
		}
		memcpy(p, j->ts_text, j->ts_len);
		return p + j->ts_len;
	default:
		return lit(p, "null");
	}
}

static size_t str_bound(const struct kv_event *e)
{
	const struct kv_str *s[] = { &e->lora_name, &e->spec_kind, &e->medium_raw, &e->backend_id,
				     &e->model_name, &e->tenant_id, &e->object_key, &e->event_id.s, &e->group_id.s,
				     &e->locality, &e->ownership, &e->additional_salt };
	size_t n = 0;
	for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
		n += JW_STR_MAX(s[i]->n) + 32;
	for (size_t i = 0; i < e->nraw; i++)
		n += JW_STR_MAX(e->raw_hashes[i].s.n) + JW_I64_MAX + 2;
	return n;
}

static char *opt_str(char *p, const char *key, struct kv_str s)
{
	p = lit(p, key);
	return jw_str(p, s.p, s.n);
}

static char *write_scalar(char *p, const struct kv_scalar *v)
{
	switch (v->kind) {
	case KV_SCALAR_U64: return jw_u64(p, v->u);
	case KV_SCALAR_I64: return jw_i64(p, v->i);
	default: return jw_str(p, v->s.p, v->s.n);
	}
}

static char *write_raw_hashes(char *p, const struct kv_event *e)
{
	p = lit(p, ",\"raw_hashes\":[");
	for (size_t i = 0; i < e->nraw; i++) {
		const struct kv_raw_hash *r = &e->raw_hashes[i];
		if (i)
			*p++ = ',';
		switch (r->kind) {
		case KV_RAW_UINT: p = jw_u64(p, r->u); break;
		case KV_RAW_INT: p = jw_i64(p, r->i); break;
		case KV_RAW_BYTES: p = jw_hex_str(p, (const uint8_t *)r->s.p, r->s.n); break;
		case KV_RAW_STR: p = jw_str(p, r->s.p, r->s.n); break;
		}
	}
	*p++ = ']';
	return p;
}

static const char *const format_keys[] = { "\"format\":\"vllm\",\"ts\":", "\"format\":\"memcache\",\"ts\":",
					   "\"format\":\"mooncake\",\"ts\":" };
static const char *const type_keys[] = { ",\"type\":\"stored\",\"medium\":\"", ",\"type\":\"removed\",\"medium\":\"",
					 ",\"type\":\"cleared\",\"medium\":\"" };

void kv_evjson_write(struct kv_evjson *j, struct kv_out *o, const struct kv_event *e)
{
	size_t bound = j->prefix_len + 768 + e->nhashes * (JW_HASH_MAX + 1) + e->ntokens * 11 + str_bound(e);
	char *p = jw_reserve(o, bound);
	memcpy(p, j->prefix, j->prefix_len);
	p += j->prefix_len;
	p = lit(p, format_keys[e->format]);
	p = write_ts(j, p, e);
	p = lit(p, ",\"dp_rank\":");
	p = e->has_dp ? jw_i64(p, e->dp_rank) : lit(p, "null");
	p = lit(p, type_keys[e->type]);
	p = lit(p, kv_medium_name(e->medium));
	p = lit(p, "\",\"block_hashes\":[");
	for (size_t i = 0; i < e->nhashes; i++) {
		if (i)
			*p++ = ',';
		p = jw_hash(p, e->hashes[i]);
	}
	*p++ = ']';
	uint32_t has = e->has;
	if (has & KV_HAS_PARENT) {
		p = lit(p, ",\"parent\":");
		p = e->parent_null ? lit(p, "null") : jw_hash(p, e->parent);
	}
	if (has & KV_HAS_TOKENS) {
		p = lit(p, ",\"token_ids\":[");
		for (size_t i = 0; i < e->ntokens; i++) {
			if (i)
				*p++ = ',';
			p = jw_u64(p, e->tokens[i]);
		}
		*p++ = ']';
	}
	if (has & KV_HAS_BLOCK_SIZE)
		p = jw_i64(lit(p, ",\"block_size\":"), e->block_size);
	if (has & KV_HAS_LORA_ID)
		p = jw_i64(lit(p, ",\"lora_id\":"), e->lora_id);
	if (has & KV_HAS_LORA_NAME)
		p = opt_str(p, ",\"lora_name\":", e->lora_name);
	if (has & KV_HAS_EXTRA_KEYS) {
		p = lit(p, ",\"extra_keys\":");
		if (e->extra_keys) {
			jw_done(o, p);
			kv_json_write_msgpack(o, e->extra_keys);
			p = jw_reserve(o, bound);
		} else {
			jw_done(o, p);
			kv_out_write(o, e->extra_json.p, e->extra_json.n);
			p = jw_reserve(o, bound);
		}
	}
	if (has & KV_HAS_GROUP_IDX)
		p = jw_i64(lit(p, ",\"group_idx\":"), e->group_idx);
	if (has & KV_HAS_SPEC_KIND)
		p = opt_str(p, ",\"kv_cache_spec_kind\":", e->spec_kind);
	if (has & KV_HAS_SLIDING_WINDOW)
		p = jw_i64(lit(p, ",\"kv_cache_spec_sliding_window\":"), e->sliding_window);
	if (has & KV_HAS_LOCALITY)
		p = opt_str(p, ",\"locality\":", e->locality);
	if (has & KV_HAS_OWNERSHIP)
		p = opt_str(p, ",\"ownership\":", e->ownership);
	if (has & KV_HAS_MEDIUM_RAW)
		p = opt_str(p, ",\"medium_raw\":", e->medium_raw);
	if (has & KV_HAS_BACKEND_ID)
		p = opt_str(p, ",\"backend_id\":", e->backend_id);
	if (has & KV_HAS_MODEL_NAME)
		p = opt_str(p, ",\"model_name\":", e->model_name);
	if (has & KV_HAS_TENANT_ID)
		p = opt_str(p, ",\"tenant_id\":", e->tenant_id);
	if (has & KV_HAS_EVENT_ID)
		p = write_scalar(lit(p, ",\"event_id\":"), &e->event_id);
	if (has & KV_HAS_GROUP_ID)
		p = write_scalar(lit(p, ",\"group_id\":"), &e->group_id);
	if (has & KV_HAS_OBJECT_KEY)
		p = opt_str(p, ",\"object_key\":", e->object_key);
	if (has & KV_HAS_BASE_BLOCK_IDX)
		p = jw_i64(lit(p, ",\"base_block_idx\":"), e->base_block_idx);
	if (has & KV_HAS_ADDITIONAL_SALT)
		p = opt_str(p, ",\"additional_salt\":", e->additional_salt);
	if (has & KV_HAS_RAW_HASHES)
		p = write_raw_hashes(p, e);
	*p++ = '}';
	*p++ = '\n';
	jw_done(o, p);
}

/* The fields every non-event line starts with. */
static char *record_line(char *p, const char *type, const struct kv_wire_ctx *ctx, uint64_t record)
{
	p = lit(p, type);
	p = lit(p, ",\"src\":");
	p = jw_str(p, ctx->src.p, ctx->src.n);
	p = lit(p, ",\"seq\":");
	p = ctx->has_seq ? jw_u64(p, ctx->seq) : lit(p, "null");
	p = lit(p, ",\"recv_ns\":");
	p = jw_u64(p, ctx->recv_ns);
	p = lit(p, ",\"record\":");
	return jw_u64(p, record);
}

void kv_evjson_write_error(struct kv_out *o, const struct kv_wire_ctx *ctx, uint64_t record, const char *msg)
{
	size_t mlen = strlen(msg);
	char *p = jw_reserve(o, 128 + JW_STR_MAX(ctx->src.n) + JW_STR_MAX(mlen));
	p = record_line(p, "{\"type\":\"error\"", ctx, record);
	p = lit(p, ",\"error\":");
	p = jw_str(p, msg, mlen);
	p = lit(p, "}\n");
	jw_done(o, p);
}

void kv_evjson_write_no_events(struct kv_out *o, const struct kv_wire_ctx *ctx, uint64_t record, bool decoded)
{
	char *p = jw_reserve(o, 128 + JW_STR_MAX(ctx->src.n));
	p = record_line(p, "{\"type\":\"no_events\"", ctx, record);
	p = lit(p, decoded ? ",\"decoded\":true}\n" : ",\"decoded\":false}\n");
	jw_done(o, p);
}

/* The longest JSON text of a map key that is not a string (see below). */
#define KEY_TEXT_MAX 128

void kv_json_write_msgpack(struct kv_out *o, const msgpack_object *v)
{
	char *p;
	switch (v->type) {
	case MSGPACK_OBJECT_NIL:
		kv_out_puts(o, "null");
		return;
	case MSGPACK_OBJECT_BOOLEAN:
		kv_out_puts(o, v->via.boolean ? "true" : "false");
		return;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		p = jw_reserve(o, JW_U64_MAX);
		jw_done(o, jw_u64(p, v->via.u64));
		return;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		p = jw_reserve(o, JW_I64_MAX);
		jw_done(o, jw_i64(p, v->via.i64));
		return;
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		p = jw_reserve(o, JW_DOUBLE_MAX);
		jw_done(o, jw_double(p, v->via.f64));
		return;
	case MSGPACK_OBJECT_STR:
		p = jw_reserve(o, JW_STR_MAX(v->via.str.size));
		jw_done(o, jw_str(p, v->via.str.ptr, v->via.str.size));
		return;
	case MSGPACK_OBJECT_BIN:
		p = jw_reserve(o, 2 * (size_t)v->via.bin.size + 2);
		jw_done(o, jw_hex_str(p, (const uint8_t *)v->via.bin.ptr, v->via.bin.size));
		return;
	case MSGPACK_OBJECT_EXT:
		p = jw_reserve(o, 2 * (size_t)v->via.ext.size + 2);
		jw_done(o, jw_hex_str(p, (const uint8_t *)v->via.ext.ptr, v->via.ext.size));
		return;
	case MSGPACK_OBJECT_ARRAY:
		kv_out_putc(o, '[');
		for (uint32_t i = 0; i < v->via.array.size; i++) {
			if (i)
				kv_out_putc(o, ',');
			kv_json_write_msgpack(o, &v->via.array.ptr[i]);
		}
		kv_out_putc(o, ']');
		return;
	case MSGPACK_OBJECT_MAP:
		kv_out_putc(o, '{');
		for (uint32_t i = 0; i < v->via.map.size; i++) {
			const msgpack_object *k = &v->via.map.ptr[i].key;
			if (i)
				kv_out_putc(o, ',');
			if (k->type == MSGPACK_OBJECT_STR) {
				kv_json_write_msgpack(o, k);
			} else {
				/* JSON keys are strings: other keys are written as their JSON
				 * text, quoted, and cut at KEY_TEXT_MAX bytes.  A key that is a
				 * map with map keys is escaped again at each level, which
				 * doubles the text per level: uncut, a 1.6 KiB payload made
				 * kvdecode take 800 MB. */
				struct kv_out tmp;
				kv_out_open_mem(&tmp);
				kv_json_write_msgpack(&tmp, k);
				size_t n = tmp.len < KEY_TEXT_MAX ? tmp.len : KEY_TEXT_MAX;
				p = jw_reserve(o, JW_STR_MAX(n));
				jw_done(o, jw_str(p, tmp.buf, n));
				kv_out_free_mem(&tmp);
			}
			kv_out_putc(o, ':');
			kv_json_write_msgpack(o, &v->via.map.ptr[i].val);
		}
		kv_out_putc(o, '}');
		return;
	}
	kv_out_puts(o, "null");
}

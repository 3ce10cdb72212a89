/* evcheck: an event's trip through its JSON line, for the harnesses of
 * both ends of `kvdecode | kvmatch`: the line written for an event must be
 * one line that the event line reader takes back as the same event (type,
 * format, medium, hashes, tokens, parent, numbers, record fields; strings
 * when they are ASCII, since the writer replaces bytes that are not strict
 * UTF-8).  A difference traps, so that libFuzzer reports the input. */
#ifndef FUZZ_EVCHECK_H
#define FUZZ_EVCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "decode/evjson.h"
#include "base/out.h"

static void evcheck(bool ok)
{
	if (!ok)
		__builtin_trap();
}

static bool evcheck_ascii(struct kv_str s)
{
	for (size_t i = 0; i < s.n; i++)
		if ((unsigned char)s.p[i] >= 0x80)
			return false;
	return true;
}

static void evcheck_str(struct kv_str a, struct kv_str b)
{
	if (!evcheck_ascii(a))
		return;
	evcheck(a.n == b.n);
	for (size_t i = 0; i < a.n; i++)
		evcheck(a.p[i] == b.p[i]);
}

/* Fields of the reader's keys: raw hashes and extra keys are written only. */
#define EVCHECK_READ_BITS (~(uint32_t)(KV_HAS_RAW_HASHES | KV_HAS_EXTRA_KEYS))

static uint64_t evcheck_event_id(const struct kv_scalar *s)
{
	return s->kind == KV_SCALAR_U64 ? s->u : (uint64_t)s->i;
}

/* event_id and group_id: a string, or the same integer. */
static void evcheck_scalar(const struct kv_scalar *a, const struct kv_scalar *b)
{
	evcheck((a->kind == KV_SCALAR_STR) == (b->kind == KV_SCALAR_STR));
	if (a->kind == KV_SCALAR_STR)
		evcheck_str(a->s, b->s);
	else
		evcheck(evcheck_event_id(a) == evcheck_event_id(b));
}

static void evcheck_same(const struct kv_event *a, const struct kv_event *b, const struct kv_wire_ctx *ctx)
{
	evcheck(a->type == b->type && a->format == b->format && a->medium == b->medium);
	evcheck((a->has & EVCHECK_READ_BITS) == (b->has & EVCHECK_READ_BITS));
	evcheck(b->recv_ns == ctx->recv_ns && b->has_seq == ctx->has_seq && b->replayed == ctx->replayed);
	evcheck(!ctx->has_seq || b->seq == ctx->seq);
	evcheck(a->has_dp == b->has_dp && (!a->has_dp || a->dp_rank == b->dp_rank));
	evcheck(a->nhashes == b->nhashes);
	for (size_t i = 0; i < a->nhashes; i++)
		evcheck(a->hashes[i] == b->hashes[i]);
	if (a->has & KV_HAS_TOKENS) {
		evcheck(a->ntokens == b->ntokens);
		for (size_t i = 0; i < a->ntokens; i++)
			evcheck(a->tokens[i] == b->tokens[i]);
	}
	if (a->has & KV_HAS_PARENT)
		evcheck(a->parent_null == b->parent_null && (a->parent_null || a->parent == b->parent));
	evcheck(!(a->has & KV_HAS_BLOCK_SIZE) || a->block_size == b->block_size);
	evcheck(!(a->has & KV_HAS_GROUP_IDX) || a->group_idx == b->group_idx);
	evcheck(!(a->has & KV_HAS_SLIDING_WINDOW) || a->sliding_window == b->sliding_window);
	evcheck(!(a->has & KV_HAS_BASE_BLOCK_IDX) || a->base_block_idx == b->base_block_idx);
	/* (a JSON "lora_id": null has no other written form than a number) */
	evcheck(!(a->has & KV_HAS_LORA_ID) || a->lora_id_null || a->lora_id == b->lora_id);
	if (a->has & KV_HAS_EVENT_ID)
		evcheck_scalar(&a->event_id, &b->event_id);
	if (a->has & KV_HAS_GROUP_ID)
		evcheck_scalar(&a->group_id, &b->group_id);
	evcheck_str(ctx->src, b->src);
	evcheck_str(ctx->topic, b->topic);
	evcheck_str(a->lora_name, b->lora_name);
	evcheck_str(a->spec_kind, b->spec_kind);
	evcheck_str(a->medium_raw, b->medium_raw);
	evcheck_str(a->backend_id, b->backend_id);
	evcheck_str(a->model_name, b->model_name);
	evcheck_str(a->tenant_id, b->tenant_id);
	evcheck_str(a->object_key, b->object_key);
	evcheck_str(a->locality, b->locality);
	evcheck_str(a->ownership, b->ownership);
	evcheck_str(a->additional_salt, b->additional_salt);
}

/* Writes e (of the record ctx) as a line and reads it back with r. */
static void evcheck_roundtrip(struct kv_evjson_reader *r, const struct kv_event *e, const struct kv_wire_ctx *ctx)
{
	struct kv_evjson j;
	struct kv_out o;
	struct kv_event back;
	kv_evjson_init(&j);
	kv_evjson_record(&j, ctx);
	kv_out_open_mem(&o);
	kv_evjson_write(&j, &o, e);
	evcheck(o.len > 0 && o.buf[o.len - 1] == '\n' && memchr(o.buf, '\n', o.len - 1) == NULL);
	evcheck(kv_evjson_parse(r, o.buf, o.len - 1, &back) == KV_EVJSON_EVENT);
	evcheck_same(e, &back, ctx);
	kv_out_free_mem(&o);
	kv_evjson_free(&j);
}

#endif

#include "decode/wireparts.h"
#include "decode/flexhash.h"
#include "decode/medium.h"

#include <stdarg.h>
#include <stdio.h>

void kv_wire_issue(struct kv_wire *w, const char *fmt, ...) KV_PRINTF(2, 3);
void kv_wire_issue(struct kv_wire *w, const char *fmt, ...)
{
	if (w->nissues < KV_WIRE_MAX_ISSUES) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(w->issues[w->nissues], sizeof w->issues[0], fmt, ap);
		va_end(ap);
	}
	w->nissues++;
}

size_t *kv_wire_event_offsets(struct kv_wire *w, size_t k)
{
	return &w->off[KV_WIRE_NOFF * k];
}

void kv_wire_push_hash(struct kv_wire *w, uint64_t h, const msgpack_object *raw)
{
	w->hashes = kv_xgrow(w->hashes, &w->caph, w->nh + 1, sizeof *w->hashes);
	w->hashes[w->nh++] = h;
	if (raw)
		w->ev[w->nev].hash_forms |= (uint8_t)kv_hash_form(raw);
	if (!w->opts.raw_hashes || !raw)
		return;
	w->raw = kv_xgrow(w->raw, &w->capraw, w->nraw + 1, sizeof *w->raw);
	struct kv_raw_hash *r = &w->raw[w->nraw++];
	memset(r, 0, sizeof *r);
	switch (raw->type) {
	case MSGPACK_OBJECT_POSITIVE_INTEGER: r->kind = KV_RAW_UINT; r->u = raw->via.u64; break;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER: r->kind = KV_RAW_INT; r->i = raw->via.i64; break;
	case MSGPACK_OBJECT_BIN: r->kind = KV_RAW_BYTES; r->s = (struct kv_str){ raw->via.bin.ptr, raw->via.bin.size }; break;
	default: r->kind = KV_RAW_STR; r->s = mp_str_of(raw); break;
	}
}

/* Starts event k: its offsets into the shared arrays. */
struct kv_event *kv_wire_new_event(struct kv_wire *w, const struct kv_event *batch)
{
	w->ev = kv_xgrow(w->ev, &w->capev, w->nev + 1, sizeof *w->ev);
	w->off = kv_xgrow(w->off, &w->capoff, KV_WIRE_NOFF * (w->nev + 1), sizeof *w->off);
	struct kv_event *e = &w->ev[w->nev];
	*e = *batch;
	size_t *off = kv_wire_event_offsets(w, w->nev);
	off[0] = w->nh, off[1] = w->nt, off[2] = w->nraw, off[3] = w->nl;
	return e;
}

void kv_wire_keep_event(struct kv_wire *w)
{
	w->nev++;
}

/* Drops what a rejected event pushed. */
void kv_wire_drop_event(struct kv_wire *w)
{
	size_t *off = kv_wire_event_offsets(w, w->nev);
	w->nh = off[0], w->nt = off[1], w->nraw = off[2], w->nl = off[3];
}

void kv_wire_push_local(struct kv_wire *w, uint64_t h)
{
	w->locals = kv_xgrow(w->locals, &w->capl, w->nl + 1, sizeof *w->locals);
	w->locals[w->nl++] = h;
}

/* ---- field decoding ------------------------------------------------------ */

/* Appends the hashes of an array; a bad one is an issue and is dropped. */
bool kv_wire_take_hashes(struct kv_wire *w, size_t k, const char *field, const msgpack_object *o)
{
	if (!mp_present(o))
		return true;
	if (o->type != MSGPACK_OBJECT_ARRAY) {
		kv_wire_issue(w, "event %zu: %s is not an array", k, field);
		return false;
	}
	for (uint32_t i = 0; i < o->via.array.size; i++) {
		uint64_t h;
		const char *why = kv_flexhash(&o->via.array.ptr[i], &w->opts.hash, &h);
		if (why)
			kv_wire_issue(w, "event %zu: %s[%u]: %s", k, field, i, why);
		else
			kv_wire_push_hash(w, h, &o->via.array.ptr[i]);
	}
	return true;
}

bool kv_wire_take_tokens(struct kv_wire *w, size_t k, const msgpack_object *o)
{
	if (o->type != MSGPACK_OBJECT_ARRAY) {
		kv_wire_issue(w, "event %zu: token_ids is not an array", k);
		return false;
	}
	uint32_t n = o->via.array.size;
	w->tokens = kv_xgrow(w->tokens, &w->capt, w->nt + n, sizeof *w->tokens);
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *t = &o->via.array.ptr[i];
		if (t->type != MSGPACK_OBJECT_POSITIVE_INTEGER || t->via.u64 > UINT32_MAX) {
			kv_wire_issue(w, "event %zu: token_ids[%u] is not a token id (0 to 4294967295)", k, i);
			return false;
		}
		w->tokens[w->nt++] = (uint32_t)t->via.u64;
	}
	return true;
}

bool kv_wire_take_int(struct kv_wire *w, size_t k, const char *field, const msgpack_object *o, int64_t *v)
{
	if (mp_get_i64(o, v))
		return true;
	kv_wire_issue(w, "event %zu: %s is not an integer", k, field);
	return false;
}

bool kv_wire_take_str(struct kv_wire *w, size_t k, const char *field, const msgpack_object *o, struct kv_str *s)
{
	if (o->type == MSGPACK_OBJECT_STR) {
		*s = mp_str_of(o);
		return true;
	}
	kv_wire_issue(w, "event %zu: %s is not a string", k, field);
	return false;
}

bool kv_wire_take_medium(struct kv_wire *w, struct kv_event *e, size_t k, const msgpack_object *o)
{
	if (!mp_present(o))
		return true;
	if (!kv_wire_take_str(w, k, "medium", o, &e->medium_raw))
		return false;
	e->has |= KV_HAS_MEDIUM_RAW;
	e->medium = kv_medium_parse(e->medium_raw.p, e->medium_raw.n);
	return true;
}


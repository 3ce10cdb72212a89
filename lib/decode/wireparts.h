/* wireparts: what the publisher dialects share while decoding one payload:
 * MessagePack field readers, the per-payload event arena of struct kv_wire
 * (events, their hashes, tokens and raw hash forms) and the field takers
 * that note a bad field as an issue.  Internal to lib/decode: the dialects
 * (vllm.c, pool.c) and the batch reader (wire.c) use it; everything else
 * uses decode/wire.h. */
#ifndef KV_WIREPARTS_H
#define KV_WIREPARTS_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/util.h"
#include "decode/wire.h"

/* ---- MessagePack fields ---------------------------------------------------- */

static inline bool mp_str_is(const msgpack_object *o, const char *s)
{
	size_t n = strlen(s);
	return o->type == MSGPACK_OBJECT_STR && o->via.str.size == n && memcmp(o->via.str.ptr, s, n) == 0;
}

static inline const msgpack_object *mp_map_get(const msgpack_object *map, const char *key)
{
	for (uint32_t i = 0; i < map->via.map.size; i++)
		if (mp_str_is(&map->via.map.ptr[i].key, key))
			return &map->via.map.ptr[i].val;
	return NULL;
}

static inline bool mp_present(const msgpack_object *o)
{
	return o && o->type != MSGPACK_OBJECT_NIL;
}

static inline struct kv_str mp_str_of(const msgpack_object *o)
{
	return (struct kv_str){ o->via.str.ptr, o->via.str.size };
}

static inline bool mp_is_int(const msgpack_object *o)
{
	return o->type == MSGPACK_OBJECT_POSITIVE_INTEGER || o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER;
}

static inline bool mp_is_number(const msgpack_object *o)
{
	return mp_is_int(o) || o->type == MSGPACK_OBJECT_FLOAT64 || o->type == MSGPACK_OBJECT_FLOAT32;
}

/* An integer field as int64; false for other types or beyond int64. */
static inline bool mp_get_i64(const msgpack_object *o, int64_t *v)
{
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		*v = o->via.i64;
		return true;
	}
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX) {
		*v = (int64_t)o->via.u64;
		return true;
	}
	return false;
}

static inline double mp_as_double(const msgpack_object *o)
{
	switch (o->type) {
	case MSGPACK_OBJECT_POSITIVE_INTEGER: return (double)o->via.u64;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER: return (double)o->via.i64;
	default: return o->via.f64;
	}
}

/* ---- the event arena ------------------------------------------------------- */

/* Notes a problem with an event or a hash; the payload survives it. */
void kv_wire_issue(struct kv_wire *w, const char *fmt, ...) KV_PRINTF(2, 3);
/* Event k's offsets into the shared arrays: hashes, tokens, raw forms. */
size_t *kv_wire_event_offsets(struct kv_wire *w, size_t k);
/* Appends a hash to the event being built (raw: its wire form, or NULL). */
void kv_wire_push_hash(struct kv_wire *w, uint64_t h, const msgpack_object *raw);
/* Appends a block's local hash (a Dynamo tokens_hash) to the event being built. */
void kv_wire_push_local(struct kv_wire *w, uint64_t h);
/* Starts the next event as a copy of the batch's fields. */
struct kv_event *kv_wire_new_event(struct kv_wire *w, const struct kv_event *batch);
/* Ends the event begun by kv_wire_new_event: kept, or dropped with all it pushed. */
void kv_wire_keep_event(struct kv_wire *w);
void kv_wire_drop_event(struct kv_wire *w);

/* ---- field takers: false (and an issue) when the field is bad -------------- */

bool kv_wire_take_hashes(struct kv_wire *w, size_t k, const char *field, const msgpack_object *o);
bool kv_wire_take_tokens(struct kv_wire *w, size_t k, const msgpack_object *o);
bool kv_wire_take_int(struct kv_wire *w, size_t k, const char *field, const msgpack_object *o, int64_t *v);
bool kv_wire_take_str(struct kv_wire *w, size_t k, const char *field, const msgpack_object *o, struct kv_str *s);
bool kv_wire_take_medium(struct kv_wire *w, struct kv_event *e, size_t k, const msgpack_object *o);

#endif

#include "decode/dynamo.h"
#include "decode/flexhash.h"
#include "decode/mpscan.h"
#include "decode/wireparts.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

/* The event plane's frame header: version 1, then the payload's length as
 * a u32 big-endian (lib/runtime/src/transports/event_plane/frame.rs). */
#define FRAME_VERSION 1
#define FRAME_HEADER 5

/* How deep envelopes may nest in each other (an envelope's payload is a
 * RouterEvent; one more level is already not Dynamo's). */
#define MAX_NESTING 2

static bool framed(const uint8_t *p, size_t n)
{
	if (n < FRAME_HEADER || p[0] != FRAME_VERSION)
		return false;
	uint32_t len = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
	return len == n - FRAME_HEADER;
}

static bool json_object_text(const uint8_t *p, size_t n)
{
	size_t i = 0;
	while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
		i++;
	return i < n && p[i] == '{';
}

bool kv_dynamo_is_bytes(const uint8_t *p, size_t n)
{
	return framed(p, n) || json_object_text(p, n);
}

bool kv_dynamo_is_object(const msgpack_object *o)
{
	return o->type == MSGPACK_OBJECT_MAP && ((mp_map_get(o, "worker_id") && mp_map_get(o, "event")) ||
						 (mp_map_get(o, "publisher_id") && mp_map_get(o, "payload")));
}

/* ---- JSON, read as MessagePack ------------------------------------------ */

/* The JetStream queue carries serde_json text.  It is rebuilt as
 * MessagePack, so that one reader serves both: integers exactly (u64 block
 * hashes above 2^63 are plain JSON integers there), from their text. */
static void pack_json(msgpack_packer *pk, const yajl_val v)
{
	if (YAJL_IS_OBJECT(v)) {
		msgpack_pack_map(pk, v->u.object.len);
		for (size_t i = 0; i < v->u.object.len; i++) {
			const char *k = v->u.object.keys[i];
			msgpack_pack_str_with_body(pk, k, strlen(k));
			pack_json(pk, v->u.object.values[i]);
		}
	} else if (YAJL_IS_ARRAY(v)) {
		msgpack_pack_array(pk, v->u.array.len);
		for (size_t i = 0; i < v->u.array.len; i++)
			pack_json(pk, v->u.array.values[i]);
	} else if (YAJL_IS_STRING(v)) {
		msgpack_pack_str_with_body(pk, v->u.string, strlen(v->u.string));
	} else if (YAJL_IS_NUMBER(v)) {
		const char *t = v->u.number.r;
		uint64_t u;
		int64_t i;
		if (t[0] != '-' && kv_parse_u64(t, 0, UINT64_MAX, &u))
			msgpack_pack_uint64(pk, u);
		else if (kv_parse_i64(t, INT64_MIN, 0, &i))
			msgpack_pack_int64(pk, i);
		else
			msgpack_pack_double(pk, strtod(t, NULL));
	} else if (YAJL_IS_TRUE(v)) {
		msgpack_pack_true(pk);
	} else if (YAJL_IS_FALSE(v)) {
		msgpack_pack_false(pk);
	} else {
		msgpack_pack_nil(pk);
	}
}

struct inner_buf {
	uint8_t **p;
	size_t *cap, len;
};

static int inner_write(void *data, const char *buf, size_t len)
{
	struct inner_buf *b = data;
	*b->p = kv_xgrow(*b->p, b->cap, b->len + len, 1);
	memcpy(*b->p + b->len, buf, len);
	b->len += len;
	return 0;
}

/* JSON nests at most as deep as MessagePack may, and has at most as many
 * values: counted on the text before yajl builds a tree of it. */
static bool json_within_limits(const uint8_t *p, size_t n)
{
	uint64_t values = 1;
	unsigned depth = 0;
	bool in_str = false;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = p[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
			continue;
		}
		if (c == '"')
			in_str = true;
		else if (c == '{' || c == '[') {
			if (++depth > kv_payload_limits.max_depth)
				return false;
		} else if (c == '}' || c == ']')
			depth -= depth > 0;
		else if (c == ',' || c == ':')
			values++;
	}
	return values <= kv_payload_limits.max_objects;
}

static bool unpack_json(struct kv_wire *w, int slot, const uint8_t *p, size_t n, msgpack_object *out)
{
	if (!json_within_limits(p, n)) {
		snprintf(w->error, sizeof w->error, "JSON payload over the size limits");
		return false;
	}
	char *text = kv_xmalloc(n + 1);
	memcpy(text, p, n);
	text[n] = 0;
	char why[128];
	yajl_val root = yajl_tree_parse(text, why, sizeof why);
	free(text);
	if (!root) {
		snprintf(w->error, sizeof w->error, "undecodable JSON");
		return false;
	}
	struct inner_buf b = { &w->inner[slot].p, &w->inner[slot].cap, 0 };
	msgpack_packer pk;
	msgpack_packer_init(&pk, &b, inner_write);
	pack_json(&pk, root);
	yajl_tree_free(root);
	size_t used = 0;
	if (msgpack_unpack((const char *)*b.p, b.len, &used, &w->zone, out) < 0) {
		snprintf(w->error, sizeof w->error, "undecodable JSON");
		return false;
	}
	return true;
}

/* ---- the layers ----------------------------------------------------------- */

static bool unpack_bytes(struct kv_wire *w, int slot, const uint8_t *p, size_t n, msgpack_object *out)
{
	if (framed(p, n))
		p += FRAME_HEADER, n -= FRAME_HEADER;
	if (json_object_text(p, n))
		return unpack_json(w, slot, p, n, out);
	size_t size, used = 0;
	enum kv_mp_scan sc = kv_mp_scan(p, n, &kv_payload_limits, &size);
	if (sc != KV_MP_OK) {
		snprintf(w->error, sizeof w->error, "Dynamo payload: %s",
			 sc == KV_MP_SHORT ? "truncated" : kv_mp_scan_strerror(sc));
		return false;
	}
	if (msgpack_unpack((const char *)p, size, &used, &w->zone, out) < 0) {
		snprintf(w->error, sizeof w->error, "undecodable MessagePack");
		return false;
	}
	return true;
}

/* A field of a struct serde wrote with names (a map) or in order (an array). */
static const msgpack_object *field(const msgpack_object *o, const char *name, uint32_t pos)
{
	if (o->type == MSGPACK_OBJECT_MAP)
		return mp_map_get(o, name);
	if (o->type == MSGPACK_OBJECT_ARRAY && pos < o->via.array.size)
		return &o->via.array.ptr[pos];
	return NULL;
}

static bool get_u64(const msgpack_object *o, uint64_t *v)
{
	if (!o || o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return false;
	*v = o->via.u64;
	return true;
}

/* storage_tier (serde snake_case): where the blocks are. */
static bool take_tier(struct kv_wire *w, struct kv_event *e, const msgpack_object *t)
{
	static const struct { const char *name; enum kv_medium m; } tiers[] = {
		{ "device", KV_XPU }, { "host_pinned", KV_CPU }, { "disk", KV_DISK }, { "external", KV_DISK },
	};
	if (!mp_present(t))
		return true;
	if (!kv_wire_take_str(w, 0, "storage_tier", t, &e->medium_raw))
		return false;
	e->has |= KV_HAS_MEDIUM_RAW;
	e->medium = KV_UNKNOWN;
	for (size_t i = 0; i < sizeof tiers / sizeof tiers[0]; i++)
		if (mp_str_is(t, tiers[i].name))
			e->medium = tiers[i].m;
	return true;
}

static bool take_blocks(struct kv_wire *w, struct kv_event *e, const msgpack_object *blocks)
{
	if (!blocks || blocks->type != MSGPACK_OBJECT_ARRAY) {
		kv_wire_issue(w, "event 0: stored.blocks is not an array");
		return false;
	}
	for (uint32_t i = 0; i < blocks->via.array.size; i++) {
		const msgpack_object *b = &blocks->via.array.ptr[i];
		const msgpack_object *bh = field(b, "block_hash", 0), *th = field(b, "tokens_hash", 1);
		uint64_t h, t;
		const char *why = bh ? kv_flexhash(bh, &w->opts.hash, &h) : "missing";
		if (!why)
			why = th ? kv_flexhash(th, &w->opts.hash, &t) : "tokens_hash missing";
		if (why) {
			/* a block without its two hashes breaks the chain after it */
			kv_wire_issue(w, "event 0: blocks[%u]: %s", i, why);
			return false;
		}
		kv_wire_push_hash(w, h, bh);
		kv_wire_push_local(w, t);
	}
	e->has |= KV_HAS_TOKENS_HASHES;
	return true;
}

static bool take_stored(struct kv_wire *w, struct kv_event *e, const msgpack_object *d)
{
	e->type = KV_EV_STORED;
	const msgpack_object *parent = field(d, "parent_hash", 0);
	e->has |= KV_HAS_PARENT;
	e->parent_null = !mp_present(parent);
	if (!e->parent_null) {
		const char *why = kv_flexhash(parent, &w->opts.hash, &e->parent);
		if (why) {
			kv_wire_issue(w, "event 0: parent_hash: %s", why);
			return false;
		}
	}
	/* blocks: the last field, after start_position in later versions */
	const msgpack_object *blocks = d->type == MSGPACK_OBJECT_MAP ? mp_map_get(d, "blocks")
				      : d->type == MSGPACK_OBJECT_ARRAY && d->via.array.size
					      ? &d->via.array.ptr[d->via.array.size - 1] : NULL;
	return take_blocks(w, e, blocks);
}

/* KvCacheEventData, externally tagged: {"stored": {...}}, {"removed":
 * {...}}, "cleared" (a unit variant is its name). */
static bool take_data(struct kv_wire *w, struct kv_event *e, const msgpack_object *data)
{
	if (data && data->type == MSGPACK_OBJECT_STR) {
		if (!mp_str_is(data, "cleared") && !mp_str_is(data, "Cleared")) {
			w->ignored++;
			return false;
		}
		e->type = KV_EV_CLEARED;
		return true;
	}
	if (!data || data->type != MSGPACK_OBJECT_MAP || data->via.map.size != 1) {
		kv_wire_issue(w, "event 0: data is not one of stored, removed, cleared");
		return false;
	}
	const msgpack_object *tag = &data->via.map.ptr[0].key, *v = &data->via.map.ptr[0].val;
	if (mp_str_is(tag, "stored") || mp_str_is(tag, "Stored"))
		return take_stored(w, e, v);
	if (mp_str_is(tag, "removed") || mp_str_is(tag, "Removed")) {
		e->type = KV_EV_REMOVED;
		const msgpack_object *hs = field(v, "block_hashes", 0);
		if (!hs) {
			kv_wire_issue(w, "event 0: removed has no block_hashes");
			return false;
		}
		return kv_wire_take_hashes(w, 0, "block_hashes", hs);
	}
	if (mp_str_is(tag, "cleared") || mp_str_is(tag, "Cleared")) {
		e->type = KV_EV_CLEARED;
		return true;
	}
	w->ignored++;
	return false;
}

/* KvCacheEvent {event_id, data, dp_rank}. */
static bool take_cache_event(struct kv_wire *w, struct kv_event *e, const msgpack_object *ev)
{
	uint64_t id;
	if (get_u64(field(ev, "event_id", 0), &id)) {
		e->event_id = (struct kv_scalar){ .kind = KV_SCALAR_U64, .u = id };
		e->has |= KV_HAS_EVENT_ID;
	}
	const msgpack_object *dp = field(ev, "dp_rank", 2);
	if (mp_present(dp)) {
		if (!kv_wire_take_int(w, 0, "dp_rank", dp, &e->dp_rank))
			return false;
		if (!kv_dp_rank_valid(e->dp_rank)) {
			kv_wire_issue(w, "event 0: dp_rank %lld is not %s", (long long)e->dp_rank, KV_DP_RANK_RULE);
			return false;
		}
		e->has_dp = true;
	}
	return take_data(w, e, field(ev, "data", 1));
}

/* A positional RouterEvent: [worker_id, storage_tier?, residency_domain?,
 * event, ...]: the first map or array after the worker is the event. */
static const msgpack_object *positional_event(const msgpack_object *o, const msgpack_object **tier)
{
	*tier = NULL;
	for (uint32_t i = 1; i < o->via.array.size; i++) {
		const msgpack_object *x = &o->via.array.ptr[i];
		if (x->type == MSGPACK_OBJECT_STR && !*tier)
			*tier = x;
		if (x->type == MSGPACK_OBJECT_MAP || x->type == MSGPACK_OBJECT_ARRAY)
			return x;
	}
	return NULL;
}

static bool router_event(struct kv_wire *w, const struct kv_event *base, const msgpack_object *o)
{
	const msgpack_object *ev, *tier, *domain = NULL;
	if (o->type == MSGPACK_OBJECT_MAP) {
		ev = mp_map_get(o, "event");
		tier = mp_map_get(o, "storage_tier");
		domain = mp_map_get(o, "residency_domain");
	} else if (o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size >= 2) {
		ev = positional_event(o, &tier);
	} else {
		snprintf(w->error, sizeof w->error, "Dynamo payload is no RouterEvent");
		return false;
	}
	uint64_t worker;
	if (!ev || !get_u64(field(o, "worker_id", 0), &worker)) {
		snprintf(w->error, sizeof w->error, "RouterEvent without worker_id and event");
		return false;
	}
	/* A persistent cache owner's blocks belong to no worker
	 * (residency_domain cache_owner): not a worker's event. */
	if (domain && mp_present(domain) && !mp_str_is(domain, "worker")) {
		w->ignored++;
		return true;
	}
	struct kv_event *e = kv_wire_new_event(w, base);
	e->format = KV_FMT_DYNAMO;
	e->medium = KV_XPU;
	e->worker_id = worker;
	e->has |= KV_HAS_WORKER_ID;
	if (take_tier(w, e, tier) && take_cache_event(w, e, ev))
		kv_wire_keep_event(w);
	else
		kv_wire_drop_event(w);
	return true;
}

/* An EventEnvelope (map, or positional [topic, publisher_id, sequence,
 * published_at, payload]): its payload is the RouterEvent, as MessagePack
 * bytes, or (the first event plane's JSON envelope) as an array of bytes
 * of JSON. */
static bool envelope(struct kv_wire *w, struct kv_event *base, const msgpack_object *o, int depth)
{
	const msgpack_object *pub = field(o, "publisher_id", 1), *seq = field(o, "sequence", 2),
			     *at = field(o, "published_at", 3), *pl = field(o, "payload", 4);
	uint64_t ms;
	if (get_u64(pub, &base->publisher_id) && get_u64(seq, &base->pub_sequence))
		base->has |= KV_HAS_PUBLISHER_ID;
	if (get_u64(at, &ms) && ms <= INT64_MAX) {
		base->ts_kind = KV_TS_MS;
		base->ts_ms = (int64_t)ms;
	}
	msgpack_object inner;
	if (pl && (pl->type == MSGPACK_OBJECT_BIN || pl->type == MSGPACK_OBJECT_STR)) {
		const uint8_t *p = (const uint8_t *)(pl->type == MSGPACK_OBJECT_BIN ? pl->via.bin.ptr : pl->via.str.ptr);
		size_t n = pl->type == MSGPACK_OBJECT_BIN ? pl->via.bin.size : pl->via.str.size;
		if (!unpack_bytes(w, 1, p, n, &inner))
			return false;
	} else if (pl && pl->type == MSGPACK_OBJECT_ARRAY) {
		uint32_t n = pl->via.array.size;
		uint8_t *bytes = kv_xmalloc(n ? n : 1);
		for (uint32_t i = 0; i < n; i++) {
			const msgpack_object *b = &pl->via.array.ptr[i];
			if (b->type != MSGPACK_OBJECT_POSITIVE_INTEGER || b->via.u64 > 255) {
				free(bytes);
				snprintf(w->error, sizeof w->error, "envelope payload is not bytes");
				return false;
			}
			bytes[i] = (uint8_t)b->via.u64;
		}
		bool ok = unpack_bytes(w, 1, bytes, n, &inner);
		free(bytes);
		if (!ok)
			return false;
	} else {
		snprintf(w->error, sizeof w->error, "envelope without a payload");
		return false;
	}
	if (depth >= MAX_NESTING || !(inner.type == MSGPACK_OBJECT_MAP || inner.type == MSGPACK_OBJECT_ARRAY)) {
		snprintf(w->error, sizeof w->error, "envelope payload is no RouterEvent");
		return false;
	}
	return router_event(w, base, &inner);
}

static bool is_envelope(const msgpack_object *o)
{
	if (o->type == MSGPACK_OBJECT_MAP)
		return mp_map_get(o, "publisher_id") && mp_map_get(o, "payload");
	/* positional: a topic string, then integers */
	return o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size >= 5 &&
	       o->via.array.ptr[0].type == MSGPACK_OBJECT_STR;
}

bool kv_dynamo_decode_object(struct kv_wire *w, const struct kv_event *base, const msgpack_object *o)
{
	struct kv_event b = *base;
	b.format = KV_FMT_DYNAMO;
	return is_envelope(o) ? envelope(w, &b, o, 1) : router_event(w, &b, o);
}

bool kv_dynamo_decode_bytes(struct kv_wire *w, const struct kv_event *base, const uint8_t *p, size_t n)
{
	msgpack_object o;
	if (!unpack_bytes(w, 0, p, n, &o))
		return false;
	return kv_dynamo_decode_object(w, base, &o);
}

#include "decode/wire.h"
#include "decode/mpscan.h"
#include "base/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

void kv_wire_init(struct kv_wire *w, const struct kv_wire_opts *opts)
{
	memset(w, 0, sizeof *w);
	if (opts)
		w->opts = *opts;
	msgpack_zone_init(&w->zone, 64 * 1024);
}

void kv_wire_free(struct kv_wire *w)
{
	msgpack_zone_destroy(&w->zone);
	free(w->ev);
	free(w->hashes);
	free(w->tokens);
	free(w->raw);
	free(w->off);
	free(w->seen);
	memset(w, 0, sizeof *w);
}

static void issue(struct kv_wire *w, const char *fmt, ...) KV_PRINTF(2, 3);
static void issue(struct kv_wire *w, const char *fmt, ...)
{
	if (w->nissues < KV_WIRE_MAX_ISSUES) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(w->issues[w->nissues], sizeof w->issues[0], fmt, ap);
		va_end(ap);
	}
	w->nissues++;
}

static bool str_is(const msgpack_object *o, const char *s)
{
	size_t n = strlen(s);
	return o->type == MSGPACK_OBJECT_STR && o->via.str.size == n && memcmp(o->via.str.ptr, s, n) == 0;
}

static const msgpack_object *map_get(const msgpack_object *map, const char *key)
{
	for (uint32_t i = 0; i < map->via.map.size; i++)
		if (str_is(&map->via.map.ptr[i].key, key))
			return &map->via.map.ptr[i].val;
	return NULL;
}

static bool present(const msgpack_object *o)
{
	return o && o->type != MSGPACK_OBJECT_NIL;
}

static struct kv_str str_of(const msgpack_object *o)
{
	return (struct kv_str){ o->via.str.ptr, o->via.str.size };
}

static bool is_int(const msgpack_object *o)
{
	return o->type == MSGPACK_OBJECT_POSITIVE_INTEGER || o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER;
}

static bool is_number(const msgpack_object *o)
{
	return is_int(o) || o->type == MSGPACK_OBJECT_FLOAT64 || o->type == MSGPACK_OBJECT_FLOAT32;
}

/* An integer field as int64; false for other types or beyond int64. */
static bool get_i64(const msgpack_object *o, int64_t *v)
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

static double as_double(const msgpack_object *o)
{
	switch (o->type) {
	case MSGPACK_OBJECT_POSITIVE_INTEGER: return (double)o->via.u64;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER: return (double)o->via.i64;
	default: return o->via.f64;
	}
}

/* ---- per-event arrays ---------------------------------------------------- */

static size_t *event_offsets(struct kv_wire *w, size_t k)
{
	return &w->off[3 * k];
}

static void push_hash(struct kv_wire *w, uint64_t h, const msgpack_object *raw)
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
	default: r->kind = KV_RAW_STR; r->s = str_of(raw); break;
	}
}

/* Starts event k: its offsets into the shared arrays. */
static struct kv_event *new_event(struct kv_wire *w, const struct kv_event *batch)
{
	w->ev = kv_xgrow(w->ev, &w->capev, w->nev + 1, sizeof *w->ev);
	w->off = kv_xgrow(w->off, &w->capoff, 3 * (w->nev + 1), sizeof *w->off);
	struct kv_event *e = &w->ev[w->nev];
	*e = *batch;
	size_t *off = event_offsets(w, w->nev);
	off[0] = w->nh, off[1] = w->nt, off[2] = w->nraw;
	return e;
}

static void keep_event(struct kv_wire *w)
{
	w->nev++;
}

/* Drops what a rejected event pushed. */
static void drop_event(struct kv_wire *w)
{
	size_t *off = event_offsets(w, w->nev);
	w->nh = off[0], w->nt = off[1], w->nraw = off[2];
}

/* Points every event at its arrays, now that they no longer move. */
static void fix_pointers(struct kv_wire *w)
{
	for (size_t k = 0; k < w->nev; k++) {
		struct kv_event *e = &w->ev[k];
		size_t *off = event_offsets(w, k);
		size_t hend = k + 1 < w->nev ? off[3] : w->nh;
		size_t tend = k + 1 < w->nev ? off[4] : w->nt;
		size_t rend = k + 1 < w->nev ? off[5] : w->nraw;
		/* An array nothing was pushed to yet is NULL, and NULL + 0 is
		 * undefined behaviour: such events get NULL and a count of 0. */
		e->hashes = w->hashes ? w->hashes + off[0] : NULL;
		e->nhashes = hend - off[0];
		if (e->has & KV_HAS_TOKENS) {
			e->tokens = w->tokens ? w->tokens + off[1] : NULL;
			e->ntokens = tend - off[1];
		}
		if (e->has & KV_HAS_RAW_HASHES) {
			e->raw_hashes = w->raw ? w->raw + off[2] : NULL;
			e->nraw = rend - off[2];
		}
	}
}

/* ---- field decoding ------------------------------------------------------ */

/* Appends the hashes of an array; a bad one is an issue and is dropped. */
static bool take_hashes(struct kv_wire *w, size_t k, const char *field, const msgpack_object *o)
{
	if (!present(o))
		return true;
	if (o->type != MSGPACK_OBJECT_ARRAY) {
		issue(w, "event %zu: %s is not an array", k, field);
		return false;
	}
	for (uint32_t i = 0; i < o->via.array.size; i++) {
		uint64_t h;
		const char *why = kv_flexhash(&o->via.array.ptr[i], &w->opts.hash, &h);
		if (why)
			issue(w, "event %zu: %s[%u]: %s", k, field, i, why);
		else
			push_hash(w, h, &o->via.array.ptr[i]);
	}
	return true;
}

static bool take_tokens(struct kv_wire *w, size_t k, const msgpack_object *o)
{
	if (o->type != MSGPACK_OBJECT_ARRAY) {
		issue(w, "event %zu: token_ids is not an array", k);
		return false;
	}
	uint32_t n = o->via.array.size;
	w->tokens = kv_xgrow(w->tokens, &w->capt, w->nt + n, sizeof *w->tokens);
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *t = &o->via.array.ptr[i];
		if (t->type != MSGPACK_OBJECT_POSITIVE_INTEGER || t->via.u64 > UINT32_MAX) {
			issue(w, "event %zu: token_ids[%u] is not a token id (0 to 4294967295)", k, i);
			return false;
		}
		w->tokens[w->nt++] = (uint32_t)t->via.u64;
	}
	return true;
}

static bool take_int(struct kv_wire *w, size_t k, const char *field, const msgpack_object *o, int64_t *v)
{
	if (get_i64(o, v))
		return true;
	issue(w, "event %zu: %s is not an integer", k, field);
	return false;
}

static bool take_str(struct kv_wire *w, size_t k, const char *field, const msgpack_object *o, struct kv_str *s)
{
	if (o->type == MSGPACK_OBJECT_STR) {
		*s = str_of(o);
		return true;
	}
	issue(w, "event %zu: %s is not a string", k, field);
	return false;
}

static bool take_medium(struct kv_wire *w, struct kv_event *e, size_t k, const msgpack_object *o)
{
	if (!present(o))
		return true;
	if (!take_str(w, k, "medium", o, &e->medium_raw))
		return false;
	e->has |= KV_HAS_MEDIUM_RAW;
	e->medium = kv_medium_parse(e->medium_raw.p, e->medium_raw.n);
	return true;
}

/* ---- vLLM events --------------------------------------------------------- */

enum vf { VF_HASHES, VF_PARENT, VF_TOKENS, VF_BLOCK_SIZE, VF_LORA_ID, VF_MEDIUM, VF_LORA_NAME,
	  VF_EXTRA_KEYS, VF_GROUP_IDX, VF_SPEC_KIND, VF_SLIDING_WINDOW, VF_LOCALITY, VF_OWNERSHIP, VF_N };

static const char *const vf_keys[VF_N] = {
	"block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
	"lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window",
	"locality", "ownership",
};

/* Array order of each event type's fields (vllm/distributed/kv_events.py). */
static const enum vf stored_order[] = { VF_HASHES, VF_PARENT, VF_TOKENS, VF_BLOCK_SIZE, VF_LORA_ID,
					VF_MEDIUM, VF_LORA_NAME, VF_EXTRA_KEYS, VF_GROUP_IDX,
					VF_SPEC_KIND, VF_SLIDING_WINDOW, VF_LOCALITY, VF_OWNERSHIP };
static const enum vf removed_order[] = { VF_HASHES, VF_MEDIUM, VF_GROUP_IDX, VF_LOCALITY, VF_OWNERSHIP };

/* A scalar field of the event: which wire field, its KV_HAS_ bit, where it
 * goes in struct kv_event, and whether it is an integer or a string. */
struct vfield {
	enum vf f;
	uint32_t bit;
	size_t at;
	bool is_str;
};

/* The fields stores and removals both carry. */
static const struct vfield common_fields[] = {
	{ VF_GROUP_IDX, KV_HAS_GROUP_IDX, offsetof(struct kv_event, group_idx), false },
	{ VF_LOCALITY, KV_HAS_LOCALITY, offsetof(struct kv_event, locality), true },
	{ VF_OWNERSHIP, KV_HAS_OWNERSHIP, offsetof(struct kv_event, ownership), true },
};

/* The scalar fields of stores only. */
static const struct vfield stored_fields[] = {
	{ VF_BLOCK_SIZE, KV_HAS_BLOCK_SIZE, offsetof(struct kv_event, block_size), false },
	{ VF_LORA_ID, KV_HAS_LORA_ID, offsetof(struct kv_event, lora_id), false },
	{ VF_SLIDING_WINDOW, KV_HAS_SLIDING_WINDOW, offsetof(struct kv_event, sliding_window), false },
	{ VF_LORA_NAME, KV_HAS_LORA_NAME, offsetof(struct kv_event, lora_name), true },
	{ VF_SPEC_KIND, KV_HAS_SPEC_KIND, offsetof(struct kv_event, spec_kind), true },
};

/* Takes the fields of the table that are present; false (an issue) when one
 * has the wrong type. */
static bool take_vfields(struct kv_wire *w, struct kv_event *e, size_t k, const msgpack_object *f[VF_N],
			 const struct vfield *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const msgpack_object *o = f[t[i].f];
		if (!present(o))
			continue;
		void *to = (char *)e + t[i].at;
		if (t[i].is_str ? !take_str(w, k, vf_keys[t[i].f], o, to) : !take_int(w, k, vf_keys[t[i].f], o, to))
			return false;
		e->has |= t[i].bit;
	}
	return true;
}

static bool vllm_tag(const msgpack_object *tag, enum kv_evtype *t)
{
	if (str_is(tag, "BlockStored"))
		*t = KV_EV_STORED;
	else if (str_is(tag, "BlockRemoved"))
		*t = KV_EV_REMOVED;
	else if (str_is(tag, "AllBlocksCleared"))
		*t = KV_EV_CLEARED;
	else
		return false;
	return true;
}

/* The fields only stores have.  A parent that is not a hash drops the
 * whole event, not just the parent: kept without it, the store would look
 * like one from the root and kvmatch would chain its blocks wrongly. */
static bool vllm_store_fields(struct kv_wire *w, struct kv_event *e, size_t k, const msgpack_object *f[VF_N])
{
	e->has |= KV_HAS_PARENT;
	e->parent_null = !present(f[VF_PARENT]);
	if (!e->parent_null) {
		const char *why = kv_flexhash(f[VF_PARENT], &w->opts.hash, &e->parent);
		if (why) {
			issue(w, "event %zu: parent_block_hash: %s", k, why);
			return false;
		}
	}
	if (present(f[VF_TOKENS])) {
		if (!take_tokens(w, k, f[VF_TOKENS]))
			return false;
		e->has |= KV_HAS_TOKENS;
	}
	if (!take_vfields(w, e, k, f, stored_fields, sizeof stored_fields / sizeof stored_fields[0]))
		return false;
	if (e->has & KV_HAS_BLOCK_SIZE && e->block_size < 0) {
		issue(w, "event %zu: block_size is negative", k);
		return false;
	}
	if (present(f[VF_EXTRA_KEYS])) {
		e->extra_keys = f[VF_EXTRA_KEYS];
		e->has |= KV_HAS_EXTRA_KEYS;
	}
	return true;
}

static bool vllm_fields(struct kv_wire *w, struct kv_event *e, size_t k, const msgpack_object *f[VF_N])
{
	return take_hashes(w, k, "block_hashes", f[VF_HASHES]) && take_medium(w, e, k, f[VF_MEDIUM]) &&
	       (e->type != KV_EV_STORED || vllm_store_fields(w, e, k, f)) &&
	       take_vfields(w, e, k, f, common_fields, sizeof common_fields / sizeof common_fields[0]);
}

static void vllm_event(struct kv_wire *w, const struct kv_event *batch, size_t k, const msgpack_object *o)
{
	const msgpack_object *f[VF_N] = { 0 };
	const msgpack_object *tag = o->type == MSGPACK_OBJECT_ARRAY ? &o->via.array.ptr[0] : map_get(o, "type");
	enum kv_evtype type;
	if (!vllm_tag(tag, &type)) {
		w->ignored++;
		return;
	}
	if (o->type == MSGPACK_OBJECT_ARRAY) {
		const enum vf *order = type == KV_EV_STORED ? stored_order : removed_order;
		size_t norder = type == KV_EV_STORED ? sizeof stored_order / sizeof stored_order[0]
						      : type == KV_EV_REMOVED ? sizeof removed_order / sizeof removed_order[0] : 0;
		for (size_t i = 0; i < norder && i + 1 < o->via.array.size; i++)
			f[order[i]] = &o->via.array.ptr[i + 1];
	} else {
		for (uint32_t i = 0; i < o->via.map.size; i++)
			for (int j = 0; j < VF_N; j++)
				if (str_is(&o->via.map.ptr[i].key, vf_keys[j]))
					f[j] = &o->via.map.ptr[i].val;
	}
	struct kv_event *e = new_event(w, batch);
	e->type = type;
	e->medium = KV_XPU;
	if (type == KV_EV_CLEARED || vllm_fields(w, e, k, f))
		keep_event(w);
	else
		drop_event(w);
}

/* ---- pool events (memcache, Mooncake) ------------------------------------ */

static bool contains_ci(struct kv_str s, const char *needle)
{
	size_t n = strlen(needle);
	for (size_t i = 0; i + n <= s.n; i++)
		if (strncasecmp(s.p + i, needle, n) == 0)
			return true;
	return false;
}

static bool pool_type(const msgpack_object *o, enum kv_evtype *t)
{
	const msgpack_object *v = map_get(o, "event_type");
	if (!v || v->type != MSGPACK_OBJECT_STR)
		v = map_get(o, "type");
	if (!v || v->type != MSGPACK_OBJECT_STR)
		return false;
	struct kv_str s = str_of(v);
	if (contains_ci(s, "stored"))
		*t = KV_EV_STORED;
	else if (contains_ci(s, "removed"))
		*t = KV_EV_REMOVED;
	else if (contains_ci(s, "cleared"))
		*t = KV_EV_CLEARED;
	else
		return false;
	return true;
}

/* Drops repeats (seq_hashes and block_hashes often name the same blocks),
 * keeping the first occurrence in order. */
static void dedup_hashes(struct kv_wire *w, size_t from)
{
	size_t n = w->nh - from, kept = 0;
	if (n < 2)
		return;
	size_t cap = 16;
	while (cap < 2 * n)
		cap *= 2;
	w->seen = kv_xgrow(w->seen, &w->capseen, cap, sizeof *w->seen);
	/* slot value h+1 would overflow for UINT64_MAX: keep a separate flag for it */
	memset(w->seen, 0, cap * sizeof *w->seen);
	bool zero_seen = false;
	for (size_t i = 0; i < n; i++) {
		uint64_t h = w->hashes[from + i];
		bool dup = false;
		if (h == 0) {
			dup = zero_seen;
			zero_seen = true;
		} else {
			size_t s = (size_t)((h * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
			while (w->seen[s] && w->seen[s] != h)
				s = (s + 1) & (cap - 1);
			dup = w->seen[s] == h;
			w->seen[s] = h;
		}
		if (dup)
			continue;
		w->hashes[from + kept] = h;
		if (w->opts.raw_hashes)
			w->raw[w->nraw - n + kept] = w->raw[w->nraw - n + i];
		kept++;
	}
	if (w->opts.raw_hashes)
		w->nraw -= n - kept;
	w->nh = from + kept;
}

static bool pool_strings(struct kv_wire *w, struct kv_event *e, size_t k, const msgpack_object *o)
{
	static const struct { const char *key; uint32_t bit; size_t at; } strs[] = {
		{ "backend_id", KV_HAS_BACKEND_ID, offsetof(struct kv_event, backend_id) },
		{ "model_name", KV_HAS_MODEL_NAME, offsetof(struct kv_event, model_name) },
		{ "tenant_id", KV_HAS_TENANT_ID, offsetof(struct kv_event, tenant_id) },
		{ "object_key", KV_HAS_OBJECT_KEY, offsetof(struct kv_event, object_key) },
		{ "lora_name", KV_HAS_LORA_NAME, offsetof(struct kv_event, lora_name) },
		{ "additional_salt", KV_HAS_ADDITIONAL_SALT, offsetof(struct kv_event, additional_salt) },
	};
	for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
		const msgpack_object *v = map_get(o, strs[i].key);
		if (!present(v))
			continue;
		if (!take_str(w, k, strs[i].key, v, (struct kv_str *)((char *)e + strs[i].at)))
			return false;
		e->has |= strs[i].bit;
	}
	return true;
}

/* An integer or a string, kept as it came; false for other types. */
static bool get_scalar(const msgpack_object *v, struct kv_scalar *out)
{
	if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
		*out = (struct kv_scalar){ .kind = KV_SCALAR_U64, .u = v->via.u64 };
	else if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		*out = (struct kv_scalar){ .kind = KV_SCALAR_I64, .i = v->via.i64 };
	else if (v->type == MSGPACK_OBJECT_STR)
		*out = (struct kv_scalar){ .kind = KV_SCALAR_STR, .s = str_of(v) };
	else
		return false;
	return true;
}

/* A pool event's group_id names the object group the key belongs to (the
 * Mooncake master passes the client's string through, for example
 * "sglang-hicache:<sha256>"), not vLLM's KV cache group index: it is kept as
 * it came and never makes the event bad.  A value that is neither an
 * integer nor a string is left out (kvdecode(1)). */
static void take_group_id(struct kv_event *e, const msgpack_object *v)
{
	if (present(v) && get_scalar(v, &e->group_id))
		e->has |= KV_HAS_GROUP_ID;
}

static bool pool_numbers(struct kv_wire *w, struct kv_event *e, size_t k, const msgpack_object *o)
{
	const msgpack_object *v = map_get(o, "event_id");
	if (present(v)) {
		if (!get_scalar(v, &e->event_id)) {
			issue(w, "event %zu: event_id is neither an integer nor a string", k);
			return false;
		}
		e->has |= KV_HAS_EVENT_ID;
	}
	v = map_get(o, "timestamp");
	if (present(v)) {
		if (!is_number(v)) {
			issue(w, "event %zu: timestamp is not a number", k);
			return false;
		}
		if (get_i64(v, &e->ts_ms)) {
			e->ts_kind = KV_TS_MS;
		} else {
			e->ts_kind = KV_TS_SECONDS;
			e->ts = as_double(v) / 1000.0;
		}
	}
	v = map_get(o, "dp_rank");
	if (present(v)) {
		if (!take_int(w, k, "dp_rank", v, &e->dp_rank))
			return false;
		if (!kv_dp_rank_valid(e->dp_rank)) {
			issue(w, "event %zu: dp_rank %lld is not %s", k, (long long)e->dp_rank, KV_DP_RANK_RULE);
			return false;
		}
		e->has_dp = true;
	}
	v = map_get(o, "block_size");
	if (present(v)) {
		if (!take_int(w, k, "block_size", v, &e->block_size))
			return false;
		if (e->block_size < 0) {
			issue(w, "event %zu: block_size is negative", k);
			return false;
		}
		e->has |= KV_HAS_BLOCK_SIZE;
	}
	v = map_get(o, "base_block_idx");
	if (present(v)) {
		if (!take_int(w, k, "base_block_idx", v, &e->base_block_idx))
			return false;
		e->has |= KV_HAS_BASE_BLOCK_IDX;
	}
	take_group_id(e, map_get(o, "group_id"));
	return true;
}

static bool pool_hashes(struct kv_wire *w, struct kv_event *e, size_t k, const msgpack_object *o)
{
	size_t from = w->nh;
	const msgpack_object *seq = map_get(o, "seq_hashes"), *blk = map_get(o, "block_hashes");
	if (!take_hashes(w, k, "seq_hashes", seq) || !take_hashes(w, k, "block_hashes", blk))
		return false;
	dedup_hashes(w, from);
	/* The key names the block only when the publisher sent no hash list:
	 * the Mooncake master sends an empty seq_hashes for a key its parser
	 * cannot read, and that event has no hash (kvdecode(1) "Hashes").  A key that is no
	 * hash is no error either: the event is kept without hashes. */
	uint64_t h;
	if (!present(seq) && !present(blk) && (e->has & KV_HAS_OBJECT_KEY) && e->type != KV_EV_CLEARED &&
	    kv_hash_from_object_key(e->object_key.p, e->object_key.n, e->format == KV_FMT_MEMCACHE, &h))
		push_hash(w, h, map_get(o, "object_key"));
	/* As for vLLM stores, a parent that is not a hash drops the event. */
	const char *parent_key = "parent_hash";
	const msgpack_object *parent = map_get(o, parent_key);
	if (!present(parent))
		parent = map_get(o, parent_key = "parent_block_hash");
	if (present(parent)) {
		const char *why = kv_flexhash(parent, &w->opts.hash, &e->parent);
		if (why) {
			issue(w, "event %zu: %s: %s", k, parent_key, why);
			return false;
		}
		e->has |= KV_HAS_PARENT;
	}
	const msgpack_object *tokens = map_get(o, "token_ids");
	if (present(tokens)) {
		if (!take_tokens(w, k, tokens))
			return false;
		e->has |= KV_HAS_TOKENS;
	}
	return true;
}

static void pool_event(struct kv_wire *w, const struct kv_event *batch, size_t k, const msgpack_object *o)
{
	enum kv_evtype type;
	if (!pool_type(o, &type)) {
		w->ignored++;
		return;
	}
	struct kv_event *e = new_event(w, batch);
	e->type = type;
	e->medium = KV_UNKNOWN;
	if (take_medium(w, e, k, map_get(o, "medium")) && pool_strings(w, e, k, o) &&
	    pool_numbers(w, e, k, o) && pool_hashes(w, e, k, o))
		keep_event(w);
	else
		drop_event(w);
}

/* ---- batches ------------------------------------------------------------- */

static bool is_vllm_map_event(const msgpack_object *o)
{
	return map_get(o, "type") && !map_get(o, "event_type") && !map_get(o, "seq_hashes") &&
	       !map_get(o, "backend_id");
}

/* batch_ts: the batch's ts element (or NULL); map_batch: events came in a map. */
static void events_of(struct kv_wire *w, const struct kv_event *base, const msgpack_object *events,
		      const msgpack_object *batch_ts, bool map_batch)
{
	for (uint32_t k = 0; k < events->via.array.size; k++) {
		const msgpack_object *o = &events->via.array.ptr[k];
		struct kv_event b = *base;
		bool vllm = (o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size > 0 &&
			     o->via.array.ptr[0].type == MSGPACK_OBJECT_STR) ||
			    (o->type == MSGPACK_OBJECT_MAP && is_vllm_map_event(o));
		if (!vllm && o->type != MSGPACK_OBJECT_MAP) {
			issue(w, "event %u: neither a vLLM event nor a pool event map", k);
			continue;
		}
		b.format = vllm ? KV_FMT_VLLM : map_batch ? KV_FMT_MEMCACHE : KV_FMT_MOONCAKE;
		/* vLLM stamps batches in float seconds, array or map; the Mooncake
		 * master's array batches carry integer milliseconds.  A map batch
		 * with a ts is vLLM's shape (kvdecode(1) "Publishers"), so its ts is seconds
		 * whatever events it holds. */
		if (batch_ts && is_number(batch_ts)) {
			if (b.format == KV_FMT_MOONCAKE && get_i64(batch_ts, &b.ts_ms)) {
				b.ts_kind = KV_TS_MS;
			} else {
				b.ts_kind = KV_TS_SECONDS;
				b.ts = as_double(batch_ts);
			}
		}
		if (vllm)
			vllm_event(w, &b, k, o);
		else
			pool_event(w, &b, k, o);
	}
}

static bool take_batch_dp(struct kv_wire *w, struct kv_event *base, const msgpack_object *dp)
{
	if (!present(dp))
		return true;
	if (!get_i64(dp, &base->dp_rank)) {
		snprintf(w->error, sizeof w->error, "data_parallel_rank is not an integer");
		return false;
	}
	if (!kv_dp_rank_valid(base->dp_rank)) {
		snprintf(w->error, sizeof w->error, "data_parallel_rank %lld is not %s", (long long)base->dp_rank,
			 KV_DP_RANK_RULE);
		return false;
	}
	base->has_dp = true;
	return true;
}

static bool map_batch(struct kv_wire *w, struct kv_event *base, const msgpack_object *root)
{
	const msgpack_object *events = map_get(root, "events");
	const msgpack_object *ts = map_get(root, "ts");
	if (!events || events->type != MSGPACK_OBJECT_ARRAY) {
		snprintf(w->error, sizeof w->error, "map batch without an events array");
		return false;
	}
	if (ts && !take_batch_dp(w, base, map_get(root, "data_parallel_rank")))
		return false;
	events_of(w, base, events, ts, true);
	return true;
}

static bool array_batch(struct kv_wire *w, struct kv_event *base, const msgpack_object *root)
{
	const msgpack_object *a = root->via.array.ptr;
	uint32_t n = root->via.array.size;
	if (n < 2) {
		snprintf(w->error, sizeof w->error, "batch array has %u elements (expected [ts, events, ...])", n);
		return false;
	}
	/* [ts, events, dp] and [ts, events]; tolerated: [ts, dp, events]. */
	int ev = a[1].type == MSGPACK_OBJECT_ARRAY ? 1 : n >= 3 && a[2].type == MSGPACK_OBJECT_ARRAY ? 2 : -1;
	if (ev < 0) {
		snprintf(w->error, sizeof w->error, "batch has no events array");
		return false;
	}
	if (present(&a[0]) && !is_number(&a[0])) {
		snprintf(w->error, sizeof w->error, "batch ts is not a number");
		return false;
	}
	const msgpack_object *dp = ev == 2 ? &a[1] : n >= 3 ? &a[2] : NULL;
	if (!take_batch_dp(w, base, dp))
		return false;
	events_of(w, base, &a[ev], present(&a[0]) ? &a[0] : NULL, false);
	return true;
}

bool kv_wire_is_mooncake_batch(const uint8_t *p, size_t n)
{
	if (n < 2 || !(p[0] >= 0x92 && p[0] <= 0x9f))
		return false;
	uint8_t t = p[1];
	return t <= 0x7f || (t >= 0xcc && t <= 0xd3) || t >= 0xe0;   /* any MessagePack integer */
}

bool kv_wire_decode(struct kv_wire *w, const struct kv_wire_ctx *ctx, const uint8_t *p, size_t n)
{
	w->nev = w->nh = w->nt = w->nraw = 0;
	w->nissues = w->ignored = 0;
	w->error[0] = 0;
	size_t size;
	enum kv_mp_scan sc = kv_mp_scan(p, n, &kv_payload_limits, &size);
	if (sc != KV_MP_OK) {
		snprintf(w->error, sizeof w->error, "%s", sc == KV_MP_SHORT ? "truncated payload" : kv_mp_scan_strerror(sc));
		return false;
	}
	msgpack_zone_clear(&w->zone);
	msgpack_object root;
	size_t used = 0;
	if (msgpack_unpack((const char *)p, size, &used, &w->zone, &root) < 0) {
		snprintf(w->error, sizeof w->error, "undecodable MessagePack");
		return false;
	}
	if (size < n)
		issue(w, "%zu bytes after the batch ignored", n - size);
	struct kv_event base;
	memset(&base, 0, sizeof base);
	base.src = ctx->src;
	base.topic = ctx->topic;
	base.recv_ns = ctx->recv_ns;
	base.has_seq = ctx->has_seq;
	base.seq = ctx->seq;
	base.replayed = ctx->replayed;
	if (w->opts.raw_hashes)
		base.has |= KV_HAS_RAW_HASHES;
	bool ok;
	if (root.type == MSGPACK_OBJECT_MAP)
		ok = map_batch(w, &base, &root);
	else if (root.type == MSGPACK_OBJECT_ARRAY)
		ok = array_batch(w, &base, &root);
	else {
		snprintf(w->error, sizeof w->error, "payload is neither a map nor an array");
		ok = false;
	}
	if (!ok) {
		w->nev = 0;
		return false;
	}
	fix_pointers(w);
	return true;
}

struct kv_wire_ctx kv_wire_ctx_of(const struct kv_event *e)
{
	return (struct kv_wire_ctx){ .src = e->src, .topic = e->topic, .recv_ns = e->recv_ns, .has_seq = e->has_seq,
				     .seq = e->seq, .replayed = e->replayed };
}

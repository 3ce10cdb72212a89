#include "decode/pool.h"
#include "decode/flexhash.h"
#include "decode/wireparts.h"

#include <strings.h>

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
	const msgpack_object *v = mp_map_get(o, "event_type");
	if (!v || v->type != MSGPACK_OBJECT_STR)
		v = mp_map_get(o, "type");
	if (!v || v->type != MSGPACK_OBJECT_STR)
		return false;
	struct kv_str s = mp_str_of(v);
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
		const msgpack_object *v = mp_map_get(o, strs[i].key);
		if (!mp_present(v))
			continue;
		if (!kv_wire_take_str(w, k, strs[i].key, v, (struct kv_str *)((char *)e + strs[i].at)))
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
		*out = (struct kv_scalar){ .kind = KV_SCALAR_STR, .s = mp_str_of(v) };
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
	if (mp_present(v) && get_scalar(v, &e->group_id))
		e->has |= KV_HAS_GROUP_ID;
}

static bool pool_numbers(struct kv_wire *w, struct kv_event *e, size_t k, const msgpack_object *o)
{
	const msgpack_object *v = mp_map_get(o, "event_id");
	if (mp_present(v)) {
		if (!get_scalar(v, &e->event_id)) {
			kv_wire_issue(w, "event %zu: event_id is neither an integer nor a string", k);
			return false;
		}
		e->has |= KV_HAS_EVENT_ID;
	}
	v = mp_map_get(o, "timestamp");
	if (mp_present(v)) {
		if (!mp_is_number(v)) {
			kv_wire_issue(w, "event %zu: timestamp is not a number", k);
			return false;
		}
		if (mp_get_i64(v, &e->ts_ms)) {
			e->ts_kind = KV_TS_MS;
		} else {
			e->ts_kind = KV_TS_SECONDS;
			e->ts = mp_as_double(v) / 1000.0;
		}
	}
	v = mp_map_get(o, "dp_rank");
	if (mp_present(v)) {
		if (!kv_wire_take_int(w, k, "dp_rank", v, &e->dp_rank))
			return false;
		if (!kv_dp_rank_valid(e->dp_rank)) {
			kv_wire_issue(w, "event %zu: dp_rank %lld is not %s", k, (long long)e->dp_rank, KV_DP_RANK_RULE);
			return false;
		}
		e->has_dp = true;
	}
	v = mp_map_get(o, "block_size");
	if (mp_present(v)) {
		if (!kv_wire_take_int(w, k, "block_size", v, &e->block_size))
			return false;
		if (e->block_size < 0) {
			kv_wire_issue(w, "event %zu: block_size is negative", k);
			return false;
		}
		e->has |= KV_HAS_BLOCK_SIZE;
	}
	v = mp_map_get(o, "base_block_idx");
	if (mp_present(v)) {
		if (!kv_wire_take_int(w, k, "base_block_idx", v, &e->base_block_idx))
			return false;
		e->has |= KV_HAS_BASE_BLOCK_IDX;
	}
	take_group_id(e, mp_map_get(o, "group_id"));
	return true;
}

static bool pool_hashes(struct kv_wire *w, struct kv_event *e, size_t k, const msgpack_object *o)
{
	size_t from = w->nh;
	const msgpack_object *seq = mp_map_get(o, "seq_hashes"), *blk = mp_map_get(o, "block_hashes");
	if (!kv_wire_take_hashes(w, k, "seq_hashes", seq) || !kv_wire_take_hashes(w, k, "block_hashes", blk))
		return false;
	dedup_hashes(w, from);
	/* The key names the block only when the publisher sent no hash list:
	 * the Mooncake master sends an empty seq_hashes for a key its parser
	 * cannot read, and that event has no hash (kvdecode(1) "Hashes").  A key that is no
	 * hash is no error either: the event is kept without hashes. */
	uint64_t h;
	if (!mp_present(seq) && !mp_present(blk) && (e->has & KV_HAS_OBJECT_KEY) && e->type != KV_EV_CLEARED &&
	    kv_hash_from_object_key(e->object_key.p, e->object_key.n, e->format == KV_FMT_MEMCACHE, &h))
		kv_wire_push_hash(w, h, mp_map_get(o, "object_key"));
	/* As for vLLM stores, a parent that is not a hash drops the event. */
	const char *parent_key = "parent_hash";
	const msgpack_object *parent = mp_map_get(o, parent_key);
	if (!mp_present(parent))
		parent = mp_map_get(o, parent_key = "parent_block_hash");
	if (mp_present(parent)) {
		const char *why = kv_flexhash(parent, &w->opts.hash, &e->parent);
		if (why) {
			kv_wire_issue(w, "event %zu: %s: %s", k, parent_key, why);
			return false;
		}
		e->has |= KV_HAS_PARENT;
	}
	const msgpack_object *tokens = mp_map_get(o, "token_ids");
	if (mp_present(tokens)) {
		if (!kv_wire_take_tokens(w, k, tokens))
			return false;
		e->has |= KV_HAS_TOKENS;
	}
	return true;
}

void kv_pool_event(struct kv_wire *w, const struct kv_event *batch, size_t k, const msgpack_object *o)
{
	enum kv_evtype type;
	if (!pool_type(o, &type)) {
		w->ignored++;
		return;
	}
	struct kv_event *e = kv_wire_new_event(w, batch);
	e->type = type;
	e->medium = KV_UNKNOWN;
	if (kv_wire_take_medium(w, e, k, mp_map_get(o, "medium")) && pool_strings(w, e, k, o) &&
	    pool_numbers(w, e, k, o) && pool_hashes(w, e, k, o))
		kv_wire_keep_event(w);
	else
		kv_wire_drop_event(w);
}


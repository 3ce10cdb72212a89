#include "decode/vllm.h"
#include "decode/flexhash.h"
#include "decode/wireparts.h"

bool kv_vllm_is_map_event(const msgpack_object *o)
{
	return mp_map_get(o, "type") && !mp_map_get(o, "event_type") && !mp_map_get(o, "seq_hashes") &&
	       !mp_map_get(o, "backend_id");
}

enum vf { VF_HASHES, VF_PARENT, VF_TOKENS, VF_BLOCK_SIZE, VF_LORA_ID, VF_MEDIUM, VF_LORA_NAME,
	  VF_EXTRA_KEYS, VF_GROUP_IDX, VF_SPEC_KIND, VF_SLIDING_WINDOW, VF_LOCALITY, VF_OWNERSHIP,
	  VF_TOKENS_HASHES, VF_N };

static const char *const vf_keys[VF_N] = {
	"block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
	"lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window",
	"locality", "ownership", "tokens_hashes",
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
		if (!mp_present(o))
			continue;
		void *to = (char *)e + t[i].at;
		if (t[i].is_str ? !kv_wire_take_str(w, k, vf_keys[t[i].f], o, to) : !kv_wire_take_int(w, k, vf_keys[t[i].f], o, to))
			return false;
		e->has |= t[i].bit;
	}
	return true;
}

static bool vllm_tag(const msgpack_object *tag, enum kv_evtype *t)
{
	if (mp_str_is(tag, "BlockStored"))
		*t = KV_EV_STORED;
	else if (mp_str_is(tag, "BlockRemoved"))
		*t = KV_EV_REMOVED;
	else if (mp_str_is(tag, "AllBlocksCleared"))
		*t = KV_EV_CLEARED;
	else
		return false;
	return true;
}

/* tokens_hashes (TensorRT-LLM's ZMQ tee, in place of token_ids): each
 * block's local hash, as Dynamo's tokens_hash, a signed i64 on the wire. */
static bool take_tokens_hashes(struct kv_wire *w, struct kv_event *e, size_t k, const msgpack_object *o)
{
	if (o->type != MSGPACK_OBJECT_ARRAY) {
		kv_wire_issue(w, "event %zu: tokens_hashes is not an array", k);
		return false;
	}
	for (uint32_t i = 0; i < o->via.array.size; i++) {
		uint64_t h;
		const char *why = kv_flexhash(&o->via.array.ptr[i], &w->opts.hash, &h);
		if (why) {
			kv_wire_issue(w, "event %zu: tokens_hashes[%u]: %s", k, i, why);
			return false;
		}
		kv_wire_push_local(w, h);
	}
	e->has |= KV_HAS_TOKENS_HASHES;
	return true;
}

/* The fields only stores have.  A parent that is not a hash drops the
 * whole event, not just the parent: kept without it, the store would look
 * like one from the root and kvmatch would chain its blocks wrongly. */
static bool vllm_store_fields(struct kv_wire *w, struct kv_event *e, size_t k, const msgpack_object *f[VF_N])
{
	e->has |= KV_HAS_PARENT;
	e->parent_null = !mp_present(f[VF_PARENT]);
	if (!e->parent_null) {
		const char *why = kv_flexhash(f[VF_PARENT], &w->opts.hash, &e->parent);
		if (why) {
			kv_wire_issue(w, "event %zu: parent_block_hash: %s", k, why);
			return false;
		}
	}
	if (mp_present(f[VF_TOKENS])) {
		if (!kv_wire_take_tokens(w, k, f[VF_TOKENS]))
			return false;
		e->has |= KV_HAS_TOKENS;
	}
	if (mp_present(f[VF_TOKENS_HASHES]) && !take_tokens_hashes(w, e, k, f[VF_TOKENS_HASHES]))
		return false;
	if (!take_vfields(w, e, k, f, stored_fields, sizeof stored_fields / sizeof stored_fields[0]))
		return false;
	if (e->has & KV_HAS_BLOCK_SIZE && e->block_size < 0) {
		kv_wire_issue(w, "event %zu: block_size is negative", k);
		return false;
	}
	if (mp_present(f[VF_EXTRA_KEYS])) {
		e->extra_keys = f[VF_EXTRA_KEYS];
		e->has |= KV_HAS_EXTRA_KEYS;
	}
	return true;
}

static bool vllm_fields(struct kv_wire *w, struct kv_event *e, size_t k, const msgpack_object *f[VF_N])
{
	return kv_wire_take_hashes(w, k, "block_hashes", f[VF_HASHES]) && kv_wire_take_medium(w, e, k, f[VF_MEDIUM]) &&
	       (e->type != KV_EV_STORED || vllm_store_fields(w, e, k, f)) &&
	       take_vfields(w, e, k, f, common_fields, sizeof common_fields / sizeof common_fields[0]);
}

void kv_vllm_event(struct kv_wire *w, const struct kv_event *batch, size_t k, const msgpack_object *o)
{
	const msgpack_object *f[VF_N] = { 0 };
	const msgpack_object *tag = o->type == MSGPACK_OBJECT_ARRAY ? &o->via.array.ptr[0] : mp_map_get(o, "type");
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
				if (mp_str_is(&o->via.map.ptr[i].key, vf_keys[j]))
					f[j] = &o->via.map.ptr[i].val;
	}
	struct kv_event *e = kv_wire_new_event(w, batch);
	e->type = type;
	e->medium = KV_XPU;
	if (type == KV_EV_CLEARED || vllm_fields(w, e, k, f))
		kv_wire_keep_event(w);
	else
		kv_wire_drop_event(w);
}


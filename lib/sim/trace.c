#include "sim/trace.h"
#include "base/table.h"
#include "base/util.h"

#include <jansson.h>

static bool fail(struct kv_err *e, const char *what)
{
	return kv_err_set(e, KV_EX_DATAERR, "%s", what);
}

bool kv_trace_parse(const char *line, size_t n, struct kv_trace_req *r, struct kv_err *e)
{
	json_error_t je;
	json_t *o = json_loadb(line, n, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return fail(e, je.text);
	bool ok = false;
	json_t *ts = json_object_get(o, "timestamp"), *in = json_object_get(o, "input_length");
	json_t *out = json_object_get(o, "output_length"), *ids = json_object_get(o, "hash_ids");
	if (!json_is_object(o))
		fail(e, "expected a JSON object");
	else if (!json_is_integer(ts) || json_integer_value(ts) < 0 ||
		 (uint64_t)json_integer_value(ts) > KV_TRACE_MAX_TS_MS)
		fail(e, "timestamp: expected milliseconds from 0 to 4294967295");
	else if (!json_is_integer(in) || json_integer_value(in) < 0 || json_integer_value(in) > (1 << 24))
		fail(e, "input_length: expected an integer from 0 to 16777216");
	else if (out && (!json_is_integer(out) || json_integer_value(out) < 0 || json_integer_value(out) > (1 << 24)))
		fail(e, "output_length: expected an integer from 0 to 16777216");
	else if (!json_is_array(ids))
		fail(e, "hash_ids: expected an array");
	else if ((uint64_t)json_array_size(ids) * KV_TRACE_BLOCK < (uint64_t)json_integer_value(in))
		fail(e, "hash_ids: fewer blocks than input_length needs");
	else {
		r->ts_ms = (uint64_t)json_integer_value(ts);
		r->input_length = (uint32_t)json_integer_value(in);
		r->output_length = out ? (uint32_t)json_integer_value(out) : 0;
		r->nids = 0;
		ok = true;
		for (size_t i = 0; i < json_array_size(ids); i++) {
			json_t *v = json_array_get(ids, i);
			if (!json_is_integer(v) || json_integer_value(v) < 0) {
				ok = fail(e, "hash_ids: expected non-negative integers");
				break;
			}
			r->hash_ids = kv_xgrow(r->hash_ids, &r->capids, r->nids + 1, sizeof *r->hash_ids);
			r->hash_ids[r->nids++] = (uint64_t)json_integer_value(v);
		}
	}
	json_decref(o);
	return ok;
}

size_t kv_trace_tokens(const struct kv_trace_req *r, uint64_t seed, uint32_t **tokens, size_t *cap)
{
	size_t n = r->input_length;
	*tokens = kv_xgrow(*tokens, cap, n ? n : 1, sizeof **tokens);
	for (size_t i = 0; i < n; i++) {
		uint64_t id = r->hash_ids[i / KV_TRACE_BLOCK];
		uint64_t x = kv_mix64(kv_mix64(id ^ seed) + i % KV_TRACE_BLOCK);
		(*tokens)[i] = (uint32_t)(x % KV_TRACE_VOCAB);
	}
	return n;
}

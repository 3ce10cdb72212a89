/* The reading half of evjson: a yajl streaming parser that fills a kv_event
 * from one JSON line without building a document. */
#include "decode/evjson.h"
#include "decode/flexhash.h"
#include "base/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

enum key {
	K_OTHER, K_SRC, K_RECV_NS, K_SEQ, K_TOPIC, K_REPLAYED, K_FORMAT, K_TS, K_DP_RANK, K_TYPE,
	K_MEDIUM, K_BLOCK_HASHES, K_PARENT, K_TOKEN_IDS, K_BLOCK_SIZE, K_LORA_ID, K_LORA_NAME,
	K_GROUP_IDX, K_SPEC_KIND, K_SLIDING_WINDOW, K_MEDIUM_RAW, K_BACKEND_ID, K_MODEL_NAME,
	K_TENANT_ID, K_EVENT_ID, K_OBJECT_KEY, K_EXTRA_KEYS, K_LOCALITY, K_OWNERSHIP, K_BASE_BLOCK_IDX,
	K_ADDITIONAL_SALT, K_GROUP_ID, K_DECODED, K_WORKER_ID, K_TOKENS_HASHES, K_PUBLISHER_ID,
	K_PUBLISHER_SEQ,
};

_Static_assert(K_PUBLISHER_SEQ < 64, "keys_seen has a bit per key");

static const char *const key_names[] = {
	"", "src", "recv_ns", "seq", "topic", "replayed", "format", "ts", "dp_rank", "type",
	"medium", "block_hashes", "parent", "token_ids", "block_size", "lora_id", "lora_name",
	"group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window", "medium_raw", "backend_id",
	"model_name", "tenant_id", "event_id", "object_key", "extra_keys", "locality", "ownership",
	"base_block_idx", "additional_salt", "group_id", "decoded", "worker_id", "tokens_hashes",
	"publisher_id", "publisher_seq",
};

/* The JSON kinds a value may have: a wrong one is an error, never a value
 * read as 0 or as absent.  null stands for absent where a field may be
 * absent (as nil does on the wire), never for src, recv_ns, topic,
 * replayed, format, type, medium or block_hashes. */
enum jkind { J_NULL = 1, J_BOOL = 2, J_NUM = 4, J_STR = 8, J_ARR = 16, J_MAP = 32 };
#define J_ANY 0 /* a key not listed here: anything */
static const unsigned char key_kinds[] = {
	[K_SRC] = J_STR, [K_RECV_NS] = J_NUM, [K_SEQ] = J_NUM | J_NULL, [K_TOPIC] = J_STR,
	[K_REPLAYED] = J_BOOL, [K_FORMAT] = J_STR, [K_TS] = J_NUM | J_NULL, [K_DP_RANK] = J_NUM | J_NULL,
	[K_TYPE] = J_STR, [K_MEDIUM] = J_STR, [K_BLOCK_HASHES] = J_ARR, [K_PARENT] = J_STR | J_NUM | J_NULL,
	[K_TOKEN_IDS] = J_ARR | J_NULL, [K_BLOCK_SIZE] = J_NUM | J_NULL, [K_LORA_ID] = J_NUM | J_NULL,
	[K_LORA_NAME] = J_STR | J_NULL, [K_GROUP_IDX] = J_NUM | J_NULL, [K_SPEC_KIND] = J_STR | J_NULL,
	[K_SLIDING_WINDOW] = J_NUM | J_NULL, [K_MEDIUM_RAW] = J_STR | J_NULL, [K_BACKEND_ID] = J_STR | J_NULL,
	[K_MODEL_NAME] = J_STR | J_NULL, [K_TENANT_ID] = J_STR | J_NULL, [K_EVENT_ID] = J_NUM | J_STR | J_NULL,
	[K_OBJECT_KEY] = J_STR | J_NULL, [K_LOCALITY] = J_STR | J_NULL, [K_OWNERSHIP] = J_STR | J_NULL,
	[K_BASE_BLOCK_IDX] = J_NUM | J_NULL, [K_ADDITIONAL_SALT] = J_STR | J_NULL,
	[K_WORKER_ID] = J_STR | J_NUM, [K_TOKENS_HASHES] = J_ARR, [K_PUBLISHER_ID] = J_NUM,
	[K_PUBLISHER_SEQ] = J_NUM,
};

struct kv_evjson_reader {
	yajl_handle h;
	struct kv_event *e;
	int depth;
	enum key key;            /* key at depth 1 */
	uint64_t keys_seen;      /* bit k: key k met at depth 1 on this line */
	bool complete;           /* the top-level object ended */
	bool is_error_line;
	bool is_no_events, undecoded;   /* a no_events line, and its "decoded": false */
	bool saw_type;
	bool medium_given;
	char *strings;           /* copies of this line's strings: never moves during a line */
	size_t slen, scap;
	uint64_t *hashes;
	size_t nh, caph;
	uint32_t *tokens;
	size_t nt, capt;
	uint64_t *thashes;       /* Dynamo's tokens_hashes */
	size_t nth, capth;
	char msg[160];
};

static int fail(struct kv_evjson_reader *r, const char *fmt, const char *arg)
{
	if (!r->msg[0])
		snprintf(r->msg, sizeof r->msg, fmt, arg);
	return 0;
}

/* "a number or a string" for a mask of kinds. */
static void kinds_text(unsigned kinds, char *buf, size_t len)
{
	static const char *const names[] = { "null", "a boolean", "a number", "a string", "an array", "an object" };
	size_t at = 0;
	buf[0] = 0;
	for (unsigned k = 1, seen = 0; k <= 6; k++) { /* null last */
		unsigned i = k % 6;
		if (kinds & (1u << i) && at < len)
			at += (size_t)snprintf(buf + at, len - at, "%s%s", seen++ ? " or " : "", names[i]);
	}
}

/* Whether a value of this kind may stand where the parser is: a top-level
 * key's value, or an element of block_hashes (hashes) or token_ids (ids). */
static int kind_ok(struct kv_evjson_reader *r, unsigned kind)
{
	unsigned allowed = J_ANY;
	const char *what = key_names[r->key];
	if (r->depth == 1 && r->key < sizeof key_kinds)
		allowed = key_kinds[r->key];
	else if (r->depth == 2 && r->key == K_BLOCK_HASHES)
		allowed = J_STR | J_NUM, what = "block_hashes[]";
	else if (r->depth == 2 && r->key == K_TOKEN_IDS)
		allowed = J_NUM, what = "token_ids[]";
	else if (r->depth == 2 && r->key == K_TOKENS_HASHES)
		allowed = J_STR | J_NUM, what = "tokens_hashes[]";
	if (allowed == J_ANY || (allowed & kind))
		return 1;
	char want[80], got[16];
	kinds_text(allowed, want, sizeof want);
	kinds_text(kind, got, sizeof got);
	if (!r->msg[0])
		snprintf(r->msg, sizeof r->msg, "%s: expected %s, not %s", what, want, got);
	return 0;
}

static struct kv_str keep_string(struct kv_evjson_reader *r, const unsigned char *s, size_t n)
{
	char *p = r->strings + r->slen;
	memcpy(p, s, n);
	r->slen += n;
	return (struct kv_str){ p, n };
}

static bool parse_u64(const char *s, size_t n, uint64_t *v)
{
	uint64_t x = 0;
	if (n == 0 || n > 20)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		unsigned d = (unsigned)(s[i] - '0');
		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*v = x;
	return true;
}

static bool parse_i64(const char *s, size_t n, int64_t *v)
{
	uint64_t u;
	if (n > 0 && s[0] == '-') {
		if (!parse_u64(s + 1, n - 1, &u) || u > (uint64_t)INT64_MAX + 1)
			return false;
		*v = (int64_t)(0 - u);
		return true;
	}
	if (!parse_u64(s, n, &u) || u > INT64_MAX)
		return false;
	*v = (int64_t)u;
	return true;
}

static int on_null(void *ctx)
{
	struct kv_evjson_reader *r = ctx;
	struct kv_event *e = r->e;
	if (!kind_ok(r, J_NULL))
		return 0;
	if (r->depth != 1)
		return 1;
	switch (r->key) {
	case K_SEQ: e->has_seq = false; break;
	case K_DP_RANK: e->has_dp = false; break;
	case K_TS: e->ts_kind = KV_TS_NONE; break;
	case K_PARENT: e->has |= KV_HAS_PARENT; e->parent_null = true; break;
	case K_LORA_ID: e->has |= KV_HAS_LORA_ID; e->lora_id_null = true; break;
	default: break;
	}
	return 1;
}

static int on_bool(void *ctx, int b)
{
	struct kv_evjson_reader *r = ctx;
	if (!kind_ok(r, J_BOOL))
		return 0;
	if (r->depth == 1 && r->key == K_REPLAYED)
		r->e->replayed = b;
	if (r->depth == 1 && r->key == K_DECODED)
		r->undecoded = !b;
	return 1;
}

static int hash_number(struct kv_evjson_reader *r, const char *s, size_t n, uint64_t *h)
{
	if (!parse_u64(s, n, h))
		return fail(r, "%s: a hash number must be an integer from 0 to 2^64-1", key_names[r->key]);
	return 1;
}

/* An element of block_hashes, or of tokens_hashes (a list of its own). */
static void push_hash(struct kv_evjson_reader *r, uint64_t h)
{
	if (r->key == K_TOKENS_HASHES) {
		r->thashes = kv_xgrow(r->thashes, &r->capth, r->nth + 1, sizeof *r->thashes);
		r->thashes[r->nth++] = h;
		return;
	}
	r->hashes = kv_xgrow(r->hashes, &r->caph, r->nh + 1, sizeof *r->hashes);
	r->hashes[r->nh++] = h;
}

/* worker_id: a u64, as evjson writes it (a string of its digits) or as a
 * number. */
static int set_worker_id(struct kv_evjson_reader *r, const char *s, size_t n)
{
	if (!parse_u64(s, n, &r->e->worker_id))
		return fail(r, "%s: expected an integer from 0 to 2^64-1", "worker_id");
	r->e->has |= KV_HAS_WORKER_ID;
	return 1;
}

/* event_id and group_id: an integer or a string, echoed as it came. */
static int set_scalar_number(struct kv_evjson_reader *r, const char *s, size_t n, struct kv_scalar *v, uint32_t bit)
{
	if (parse_u64(s, n, &v->u))
		v->kind = KV_SCALAR_U64;
	else if (parse_i64(s, n, &v->i))
		v->kind = KV_SCALAR_I64;
	else
		return fail(r, "%s: expected an integer or a string", key_names[r->key]);
	r->e->has |= bit;
	return 1;
}

static int set_scalar_string(struct kv_evjson_reader *r, const unsigned char *s, size_t n, struct kv_scalar *v,
			     uint32_t bit)
{
	v->kind = KV_SCALAR_STR;
	v->s = keep_string(r, s, n);
	r->e->has |= bit;
	return 1;
}

static int on_number(void *ctx, const char *s, size_t n)
{
	struct kv_evjson_reader *r = ctx;
	struct kv_event *e = r->e;
	uint64_t u;
	if (!kind_ok(r, J_NUM))
		return 0;
	if (r->depth == 2 && (r->key == K_BLOCK_HASHES || r->key == K_TOKENS_HASHES)) {
		if (!hash_number(r, s, n, &u))
			return 0;
		push_hash(r, u);
		return 1;
	}
	if (r->depth == 2 && r->key == K_TOKEN_IDS) {
		if (!parse_u64(s, n, &u) || u > UINT32_MAX)
			return fail(r, "%s: token ids are integers from 0 to 4294967295", "token_ids");
		r->tokens = kv_xgrow(r->tokens, &r->capt, r->nt + 1, sizeof *r->tokens);
		r->tokens[r->nt++] = (uint32_t)u;
		return 1;
	}
	if (r->depth != 1)
		return 1;
	int64_t *target = NULL;
	uint32_t bit = 0;
	switch (r->key) {
	case K_RECV_NS:
		if (!parse_u64(s, n, &e->recv_ns))
			return fail(r, "%s: expected an integer of nanoseconds", "recv_ns");
		return 1;
	case K_SEQ:
		if (!parse_u64(s, n, &e->seq))
			return fail(r, "%s: expected an unsigned integer", "seq");
		e->has_seq = true;
		return 1;
	case K_TS: {
		char buf[64];
		if (n >= sizeof buf)
			return fail(r, "%s: not a number", "ts");
		memcpy(buf, s, n);
		buf[n] = 0;
		e->ts = strtod(buf, NULL);
		if (!isfinite(e->ts)) /* 1e999: no double holds it, and JSON has no infinity to write back */
			return fail(r, "%s: beyond the range of a number", "ts");
		e->ts_kind = KV_TS_SECONDS;
		return 1;
	}
	case K_PARENT:
		if (!hash_number(r, s, n, &e->parent))
			return 0;
		e->has |= KV_HAS_PARENT;
		e->parent_null = false;
		return 1;
	case K_EVENT_ID:
		return set_scalar_number(r, s, n, &e->event_id, KV_HAS_EVENT_ID);
	case K_GROUP_ID:
		return set_scalar_number(r, s, n, &e->group_id, KV_HAS_GROUP_ID);
	case K_WORKER_ID:
		return set_worker_id(r, s, n);
	case K_PUBLISHER_ID:
	case K_PUBLISHER_SEQ:
		if (!parse_u64(s, n, r->key == K_PUBLISHER_ID ? &e->publisher_id : &e->pub_sequence))
			return fail(r, "%s: expected an unsigned integer", key_names[r->key]);
		return 1;
	case K_DP_RANK: target = &e->dp_rank; e->has_dp = true; break;
	case K_BLOCK_SIZE: target = &e->block_size; bit = KV_HAS_BLOCK_SIZE; break;
	case K_LORA_ID: target = &e->lora_id; bit = KV_HAS_LORA_ID; e->lora_id_null = false; break;
	case K_GROUP_IDX: target = &e->group_idx; bit = KV_HAS_GROUP_IDX; break;
	case K_SLIDING_WINDOW: target = &e->sliding_window; bit = KV_HAS_SLIDING_WINDOW; break;
	case K_BASE_BLOCK_IDX: target = &e->base_block_idx; bit = KV_HAS_BASE_BLOCK_IDX; break;
	default: return 1;
	}
	if (!parse_i64(s, n, target))
		return fail(r, "%s: expected an integer", key_names[r->key]);
	e->has |= bit;
	if (r->key == K_BLOCK_SIZE && e->block_size < 0)
		return fail(r, "%s: must not be negative", "block_size");
	if (r->key == K_DP_RANK && !kv_dp_rank_valid(e->dp_rank))
		return fail(r, "dp_rank: expected %s", KV_DP_RANK_RULE);
	return 1;
}

static int set_type(struct kv_evjson_reader *r, struct kv_str s)
{
	static const char *const types[] = { "stored", "removed", "cleared" };
	r->saw_type = true;
	for (int t = 0; t < 3; t++)
		if (s.n == strlen(types[t]) && memcmp(s.p, types[t], s.n) == 0) {
			r->e->type = (enum kv_evtype)t;
			return 1;
		}
	if (s.n == 5 && memcmp(s.p, "error", 5) == 0) {
		r->is_error_line = true;
		return 1;
	}
	if (s.n == 9 && memcmp(s.p, "no_events", 9) == 0) {
		r->is_no_events = true;
		return 1;
	}
	return fail(r, "%s: expected stored, removed or cleared", "type");
}

static int set_format(struct kv_evjson_reader *r, struct kv_str s)
{
	for (int f = 0; f < KV_NFORMATS; f++)
		if (s.n == strlen(kv_format_name(f)) && memcmp(s.p, kv_format_name(f), s.n) == 0) {
			r->e->format = (enum kv_format)f;
			return 1;
		}
	return fail(r, "%s: expected vllm, memcache, mooncake or dynamo", "format");
}

static int on_string(void *ctx, const unsigned char *s, size_t n)
{
	struct kv_evjson_reader *r = ctx;
	struct kv_event *e = r->e;
	uint64_t h;
	const char *why;
	if (!kind_ok(r, J_STR))
		return 0;
	if (r->depth == 2 && (r->key == K_BLOCK_HASHES || r->key == K_TOKENS_HASHES)) {
		if ((why = kv_hash_value_str((const char *)s, n, &h))) {
			if (!r->msg[0])
				snprintf(r->msg, sizeof r->msg, "%s: %s", key_names[r->key], why);
			return 0;
		}
		push_hash(r, h);
		return 1;
	}
	if (r->depth != 1)
		return 1;
	struct kv_str *target = NULL;
	uint32_t bit = 0;
	switch (r->key) {
	case K_SRC: e->src = keep_string(r, s, n); return 1;
	case K_TOPIC: e->topic = keep_string(r, s, n); return 1;
	case K_TYPE: return set_type(r, (struct kv_str){ (const char *)s, n });
	case K_FORMAT: return set_format(r, (struct kv_str){ (const char *)s, n });
	case K_MEDIUM:
		e->medium = kv_medium_parse((const char *)s, n);
		r->medium_given = true;
		return 1;
	case K_PARENT:
		if ((why = kv_hash_value_str((const char *)s, n, &e->parent)))
			return fail(r, "parent: %s", why);
		e->has |= KV_HAS_PARENT;
		e->parent_null = false;
		return 1;
	case K_EVENT_ID:
		return set_scalar_string(r, s, n, &e->event_id, KV_HAS_EVENT_ID);
	case K_GROUP_ID:
		return set_scalar_string(r, s, n, &e->group_id, KV_HAS_GROUP_ID);
	case K_WORKER_ID:
		return set_worker_id(r, (const char *)s, n);
	case K_LORA_NAME: target = &e->lora_name; bit = KV_HAS_LORA_NAME; break;
	case K_SPEC_KIND: target = &e->spec_kind; bit = KV_HAS_SPEC_KIND; break;
	case K_MEDIUM_RAW: target = &e->medium_raw; bit = KV_HAS_MEDIUM_RAW; break;
	case K_BACKEND_ID: target = &e->backend_id; bit = KV_HAS_BACKEND_ID; break;
	case K_MODEL_NAME: target = &e->model_name; bit = KV_HAS_MODEL_NAME; break;
	case K_TENANT_ID: target = &e->tenant_id; bit = KV_HAS_TENANT_ID; break;
	case K_OBJECT_KEY: target = &e->object_key; bit = KV_HAS_OBJECT_KEY; break;
	case K_LOCALITY: target = &e->locality; bit = KV_HAS_LOCALITY; break;
	case K_OWNERSHIP: target = &e->ownership; bit = KV_HAS_OWNERSHIP; break;
	case K_ADDITIONAL_SALT: target = &e->additional_salt; bit = KV_HAS_ADDITIONAL_SALT; break;
	default: return 1;
	}
	*target = keep_string(r, s, n);
	e->has |= bit;
	return 1;
}

static int on_map_key(void *ctx, const unsigned char *s, size_t n)
{
	struct kv_evjson_reader *r = ctx;
	if (r->depth != 1)
		return 1;
	r->key = K_OTHER;
	for (size_t k = 1; k < sizeof key_names / sizeof key_names[0]; k++)
		if (n == strlen(key_names[k]) && memcmp(s, key_names[k], n) == 0) {
			r->key = (enum key)k;
			break;
		}
	/* a key twice would be read as its last value without a word */
	if (r->key != K_OTHER && (r->keys_seen >> r->key & 1))
		return fail(r, "%s: given twice", key_names[r->key]);
	r->keys_seen |= (uint64_t)1 << r->key;
	return 1;
}

static int on_start_map(void *ctx)
{
	struct kv_evjson_reader *r = ctx;
	if (r->depth == 0 && r->complete)
		return fail(r, "%s", "more than one JSON value on the line");
	if (r->depth > 0 && !kind_ok(r, J_MAP))
		return 0;
	r->depth++;
	return 1;
}

static int on_end_map(void *ctx)
{
	struct kv_evjson_reader *r = ctx;
	if (--r->depth == 0)
		r->complete = true;
	return 1;
}

static int on_start_array(void *ctx)
{
	struct kv_evjson_reader *r = ctx;
	if (r->depth == 0)
		return fail(r, "%s", "expected a JSON object");
	if (!kind_ok(r, J_ARR))
		return 0;
	r->depth++;
	if (r->depth == 2 && r->key == K_TOKEN_IDS)
		r->e->has |= KV_HAS_TOKENS;
	if (r->depth == 2 && r->key == K_TOKENS_HASHES)
		r->e->has |= KV_HAS_TOKENS_HASHES;
	return 1;
}

static int on_end_array(void *ctx)
{
	struct kv_evjson_reader *r = ctx;
	r->depth--;
	return 1;
}

static const yajl_callbacks callbacks = {
	.yajl_null = on_null,
	.yajl_boolean = on_bool,
	.yajl_number = on_number,
	.yajl_string = on_string,
	.yajl_start_map = on_start_map,
	.yajl_map_key = on_map_key,
	.yajl_end_map = on_end_map,
	.yajl_start_array = on_start_array,
	.yajl_end_array = on_end_array,
};

static void new_handle(struct kv_evjson_reader *r)
{
	if (r->h)
		yajl_free(r->h);
	r->h = yajl_alloc(&callbacks, NULL, r);
	yajl_config(r->h, yajl_allow_multiple_values, 1);
}

struct kv_evjson_reader *kv_evjson_reader_new(void)
{
	struct kv_evjson_reader *r = kv_xcalloc(1, sizeof *r);
	new_handle(r);
	return r;
}

void kv_evjson_reader_free(struct kv_evjson_reader *r)
{
	if (!r)
		return;
	yajl_free(r->h);
	free(r->strings);
	free(r->hashes);
	free(r->tokens);
	free(r->thashes);
	free(r);
}

const char *kv_evjson_error(const struct kv_evjson_reader *r)
{
	return r->msg;
}

enum kv_evjson_status kv_evjson_parse(struct kv_evjson_reader *r, const char *line, size_t n,
				      struct kv_event *e)
{
	memset(e, 0, sizeof *e);
	/* A line without "src" or "topic" names the empty source, as a bare
	 * payload does: never a NULL pointer, which the source tables would
	 * hand to memcpy and memcmp. */
	e->src = e->topic = (struct kv_str){ "", 0 };
	r->e = e;
	r->depth = 0;
	r->key = K_OTHER;
	r->keys_seen = 0;
	r->complete = r->is_error_line = r->saw_type = r->medium_given = false;
	r->is_no_events = r->undecoded = false;
	r->msg[0] = 0;
	r->nh = r->nt = r->nth = r->slen = 0;
	/* Strings are never longer than the line: reserve once, so they never move. */
	r->strings = kv_xgrow(r->strings, &r->scap, n + 1, 1);
	yajl_status st = yajl_parse(r->h, (const unsigned char *)line, n);
	if (st == yajl_status_ok && !r->complete)
		st = yajl_complete_parse(r->h);
	if (st != yajl_status_ok || !r->complete) {
		if (!r->msg[0]) {
			unsigned char *m = st == yajl_status_error ? yajl_get_error(r->h, 0, (const unsigned char *)line, n) : NULL;
			snprintf(r->msg, sizeof r->msg, "%s", m ? (const char *)m : "expected one JSON object");
			if (m)
				yajl_free_error(r->h, m);
			r->msg[strcspn(r->msg, "\n")] = 0;
		}
		/* A failed handle keeps its state: start afresh for the next line. */
		new_handle(r);
		return KV_EVJSON_BAD;
	}
	if (r->is_error_line)
		return KV_EVJSON_ERROR_LINE;
	if (r->is_no_events)
		return r->undecoded ? KV_EVJSON_LOST : KV_EVJSON_NO_EVENTS;
	if (!r->saw_type) {
		snprintf(r->msg, sizeof r->msg, "no \"type\" key");
		return KV_EVJSON_BAD;
	}
	if (!r->medium_given)
		e->medium = e->format == KV_FMT_VLLM || e->format == KV_FMT_DYNAMO ? KV_XPU : KV_UNKNOWN;
	e->hashes = r->hashes;
	e->nhashes = r->nh;
	if (e->has & KV_HAS_TOKENS) {
		e->tokens = r->tokens;
		e->ntokens = r->nt;
	}
	if (e->has & KV_HAS_TOKENS_HASHES) {
		e->tokens_hashes = r->thashes;
		e->ntokens_hashes = r->nth;
	}
	/* the envelope's two numbers come together, as evjson writes them */
	if ((r->keys_seen >> K_PUBLISHER_ID & 1) && (r->keys_seen >> K_PUBLISHER_SEQ & 1))
		e->has |= KV_HAS_PUBLISHER_ID;
	return KV_EVJSON_EVENT;
}

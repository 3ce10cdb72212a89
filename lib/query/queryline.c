#include "query/queryline.h"
#include "decode/flexhash.h"
#include "base/intscan.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

enum qkey { Q_OTHER, Q_MODEL, Q_TENANT, Q_BLOCK_SIZE, Q_TOKENS, Q_HASHES, Q_LORA, Q_SALT, Q_INSTANCE, Q_NAMESPACE };

struct kv_qparser {
	yajl_handle h;
	struct kv_qline *q;
	int depth;
	bool top_array;              /* a bare [1,2,3] */
	enum qkey key;
	enum qkey list;              /* Q_TOKENS or Q_HASHES: yajl has just read that list's '[' */
	unsigned keys_seen;          /* bit k: key k met in the object (aliases are one key) */
	bool saw_tokens;
	size_t captok, caphash;
	char *names[Q_NAMESPACE + 1]; /* the string fields, by key */
	char msg[160];
};

static int fail(struct kv_qparser *p, const char *fmt, const char *arg)
{
	if (!p->msg[0])
		snprintf(p->msg, sizeof p->msg, fmt, arg);
	return 0;
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

/* kv-conductor reads token ids as i64 and hashes them `as u32`: modulo 2^32. */
static int push_token(struct kv_qparser *p, const char *s, size_t n)
{
	uint64_t v;
	bool neg = n > 0 && s[0] == '-';
	if (!parse_u64(s + neg, n - neg, &v) || v > (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
		return fail(p, "%s: token ids are integers from -2^63 to 2^63-1 (i64)", "token_ids");
	if (neg)
		v = 0 - v;
	struct kv_qline *q = p->q;
	if (q->ntokens >= KV_QUERY_MAX_TOKENS)
		return fail(p, "%s: more than 16777216 token ids", "token_ids");
	q->tokens = kv_xgrow(q->tokens, &p->captok, q->ntokens + 1, sizeof *q->tokens);
	q->tokens[q->ntokens++] = (uint32_t)v;
	return 1;
}

static int push_hash(struct kv_qparser *p, uint64_t h)
{
	struct kv_qline *q = p->q;
	if (q->nhashes >= KV_QUERY_MAX_TOKENS)
		return fail(p, "%s: more than 16777216 hashes", "block_hashes");
	q->hashes = kv_xgrow(q->hashes, &p->caphash, q->nhashes + 1, sizeof *q->hashes);
	q->hashes[q->nhashes++] = h;
	return 1;
}

static bool in_list(const struct kv_qparser *p, enum qkey k)
{
	return (p->top_array && p->depth == 1 && k == Q_TOKENS) || (p->depth == 2 && p->key == k);
}

static const char *key_name(enum qkey k)
{
	static const char *const names[] = { "", "model", "tenant_id", "block_size", "token_ids", "block_hashes",
					     "lora_name", "cache_salt", "instance_id", "cache_namespace" };
	return names[k];
}

/* A scalar where the key wants something else. */
static int wrong_type(struct kv_qparser *p)
{
	switch (p->key) {
	case Q_MODEL:
	case Q_TENANT:
	case Q_LORA:
	case Q_SALT:
	case Q_INSTANCE:
	case Q_NAMESPACE: return fail(p, "%s: expected a string", key_name(p->key));
	case Q_BLOCK_SIZE: return fail(p, "%s: expected an integer from 1 to 1048576", "block_size");
	case Q_TOKENS:
	case Q_HASHES: return fail(p, "%s: expected an array", key_name(p->key));
	default: return 1;
	}
}

static int on_number(void *ctx, const char *s, size_t n)
{
	struct kv_qparser *p = ctx;
	uint64_t v;
	if (in_list(p, Q_TOKENS))
		return push_token(p, s, n);
	if (in_list(p, Q_HASHES)) {
		if (!parse_u64(s, n, &v))
			return fail(p, "%s: hashes are integers from 0 to 2^64-1 or hex strings", "block_hashes");
		return push_hash(p, v);
	}
	if (p->depth == 1 && p->key == Q_BLOCK_SIZE) {
		if (!parse_u64(s, n, &v) || v == 0 || v > (1u << 20))
			return fail(p, "%s: expected an integer from 1 to 1048576", "block_size");
		p->q->block_size = v;
		p->q->has_block_size = true;
		return 1;
	}
	if (p->depth == 0)
		return fail(p, "%s", "expected a JSON object, an array or numbers");
	if (p->depth == 1 && !p->top_array)
		return wrong_type(p);
	return 1;
}

static bool is_name(enum qkey k)
{
	return k == Q_MODEL || k == Q_TENANT || k == Q_LORA || k == Q_SALT || k == Q_INSTANCE || k == Q_NAMESPACE;
}

static int on_string(void *ctx, const unsigned char *s, size_t n)
{
	struct kv_qparser *p = ctx;
	if (in_list(p, Q_HASHES)) {
		uint64_t h;
		const char *why = kv_hash_value_str((const char *)s, n, &h);
		if (why)
			return fail(p, "block_hashes: %s", why);
		return push_hash(p, h);
	}
	if (in_list(p, Q_TOKENS))
		return fail(p, "%s: token ids are integers from -2^63 to 2^63-1 (i64)", "token_ids");
	if (p->depth == 1 && is_name(p->key)) {
		/* Names are kept as C strings: "m\u0000x" would be cut to "m" and
		 * answered from another partition than the one asked for. */
		if (memchr(s, 0, n))
			return fail(p, "%s: contains a NUL character", key_name(p->key));
		char **dst = &p->names[p->key];
		free(*dst);
		*dst = kv_xstrndup((const char *)s, n);
		struct kv_qline *q = p->q;
		switch (p->key) {
		case Q_MODEL: q->model = *dst, q->has_model = true; break;
		case Q_TENANT: q->tenant = *dst, q->has_tenant = true; break;
		/* RFC #1403: empty means the base model, no salt, every instance */
		case Q_LORA: q->lora = n ? *dst : NULL; break;
		case Q_SALT: q->salt = n ? *dst : NULL; break;
		/* Dynamo: empty is no namespace, as its router filters it */
		case Q_NAMESPACE: q->cache_namespace = n ? *dst : NULL; break;
		default: q->instance = n ? *dst : NULL; break;
		}
		return 1;
	}
	if (p->depth == 1 && !p->top_array)
		return wrong_type(p);
	return p->depth == 0 ? fail(p, "%s", "expected a JSON object, an array or numbers") : 1;
}

static int on_other(void *ctx)
{
	struct kv_qparser *p = ctx;
	if (in_list(p, Q_HASHES))
		return fail(p, "%s: hashes are integers from 0 to 2^64-1 or hex strings", "block_hashes");
	if (in_list(p, Q_TOKENS))
		return fail(p, "%s: token ids are integers from -2^63 to 2^63-1 (i64)", "token_ids");
	if (p->depth == 1 && !p->top_array)
		return wrong_type(p);
	return p->depth == 0 ? fail(p, "%s", "expected a JSON object, an array or numbers") : 1;
}

static int on_null(void *ctx)
{
	struct kv_qparser *p = ctx;
	/* null model, tenant or block_size: take the default, as when absent */
	if (p->depth == 1 && !p->top_array && (is_name(p->key) || p->key == Q_BLOCK_SIZE))
		return 1;
	return on_other(ctx);
}

static int on_bool(void *ctx, int b)
{
	(void)b;
	return on_other(ctx);
}

static int on_double(void *ctx, double d)
{
	(void)d;
	return on_other(ctx);
}

static int on_map_key(void *ctx, const unsigned char *s, size_t n)
{
	static const struct { const char *name; enum qkey k; } keys[] = {
		{ "model", Q_MODEL }, { "tenant_id", Q_TENANT }, { "block_size", Q_BLOCK_SIZE },
		{ "token_ids", Q_TOKENS }, { "block_hashes", Q_HASHES }, { "seq_hashes", Q_HASHES },
		{ "block_hash", Q_HASHES }, { "lora_name", Q_LORA }, { "cache_salt", Q_SALT },
		{ "instance_id", Q_INSTANCE }, { "cache_namespace", Q_NAMESPACE },
	};
	struct kv_qparser *p = ctx;
	if (p->depth != 1)
		return 1;
	p->key = Q_OTHER;
	const char *name = NULL;
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (n == strlen(keys[i].name) && memcmp(s, keys[i].name, n) == 0)
			p->key = keys[i].k, name = keys[i].name;
	/* twice, or under two aliases: serde refuses it ("duplicate field") */
	if (p->key != Q_OTHER && (p->keys_seen >> p->key & 1))
		return fail(p, "%s: given twice", name);
	p->keys_seen |= 1u << p->key;
	if (p->key == Q_HASHES) {
		p->q->by_hash = true;
		/* kv-conductor's local hashes; else RFC sequence hashes (one field
		 * under its names: block_hashes with seq_hashes is "given twice") */
		p->q->by_seq = n != strlen("block_hashes");
	}
	if (p->key == Q_TOKENS)
		p->saw_tokens = true;
	return 1;
}

static int on_start_map(void *ctx)
{
	struct kv_qparser *p = ctx;
	if (p->top_array)
		return fail(p, "%s", "token_ids: token ids are integers from -2^63 to 2^63-1 (i64)");
	if (p->depth == 1 && p->key != Q_OTHER && !wrong_type(p))
		return 0;
	if (p->depth >= 2 && (p->key == Q_TOKENS || p->key == Q_HASHES))
		return fail(p, "%s: nested values", key_name(p->key));
	p->depth++;
	return 1;
}

static int on_end_map(void *ctx)
{
	struct kv_qparser *p = ctx;
	p->depth--;
	return 1;
}

static int on_start_array(void *ctx)
{
	struct kv_qparser *p = ctx;
	if (p->depth == 0)
		p->top_array = true;
	else if (p->top_array || (p->depth >= 2 && (p->key == Q_TOKENS || p->key == Q_HASHES)))
		return fail(p, "%s: nested values", p->top_array ? "token_ids" : key_name(p->key));
	else if (p->depth == 1 && p->key != Q_TOKENS && p->key != Q_HASHES && p->key != Q_OTHER && !wrong_type(p))
		return 0;
	p->depth++;
	if (in_list(p, Q_TOKENS))
		p->list = Q_TOKENS;
	else if (in_list(p, Q_HASHES))
		p->list = Q_HASHES;
	return 1;
}

static int on_end_array(void *ctx)
{
	struct kv_qparser *p = ctx;
	p->depth--;
	return 1;
}

static const yajl_callbacks callbacks = {
	.yajl_null = on_null,
	.yajl_boolean = on_bool,
	.yajl_double = on_double,
	.yajl_number = on_number,
	.yajl_string = on_string,
	.yajl_start_map = on_start_map,
	.yajl_map_key = on_map_key,
	.yajl_end_map = on_end_map,
	.yajl_start_array = on_start_array,
	.yajl_end_array = on_end_array,
};

struct kv_qparser *kv_qparser_new(void)
{
	return kv_xcalloc(1, sizeof(struct kv_qparser));
}

void kv_qparser_free(struct kv_qparser *p)
{
	if (!p)
		return;
	if (p->h)
		yajl_free(p->h);
	for (size_t i = 0; i < sizeof p->names / sizeof p->names[0]; i++)
		free(p->names[i]);
	free(p);
}

const char *kv_qparser_error(const struct kv_qparser *p)
{
	return p->msg;
}

/* "1 2 3": whitespace-separated decimal token ids. */
static bool parse_plain(struct kv_qparser *p, const char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == ','))
			i++;
		size_t start = i;
		while (i < n && s[i] != ' ' && s[i] != '\t' && s[i] != ',')
			i++;
		if (i > start && !push_token(p, s + start, i - start))
			return false;
	}
	return true;
}

/* Room in an array of values (the line's first list: none in it yet) for
 * as many as the rest of the line, n bytes, can hold (a digit and a comma
 * each), and the 64 kv_intscan_array makes room for ahead of a block it
 * reads, at most KV_QUERY_MAX_TOKENS.  Made before the list is read, in
 * memory of its own, so that the array never grows while it fills: a large
 * one grown by realloc was moved (mremap) under the values already in it,
 * and on this VM the first read of each page moved, the first query's
 * hashing, cost about 3 us (the first 100,000-token line's answer 350 to
 * 600 us, the next ones 40).  Only the pages written become memory. */
static void *room_for_list(void *v, size_t *cap, size_t n, size_t size)
{
	size_t need = n / 2 + 64;
	if (need > KV_QUERY_MAX_TOKENS)
		need = KV_QUERY_MAX_TOKENS;
	return kv_xrenew(v, cap, need, size);
}

/* The elements of the list whose '[' yajl has just read, from s (past the
 * '['), when kv_intscan_array takes them: the offset of the list's ']' in
 * s, or KV_INTSCAN_DECLINED for yajl to read them through the callbacks. */
static size_t scan_list(struct kv_qparser *p, const char *s, size_t n)
{
	struct kv_qline *q = p->q;
	if (p->list == Q_HASHES && q->nhashes == 0)
		q->hashes = room_for_list(q->hashes, &p->caphash, n, sizeof *q->hashes);
	else if (p->list == Q_TOKENS && q->ntokens == 0)
		q->tokens = room_for_list(q->tokens, &p->captok, n, sizeof *q->tokens);
	if (p->list == Q_HASHES) {
		struct kv_u64s out = { q->hashes, q->nhashes, p->caphash };
		size_t end = kv_intscan_array(s, n, KV_INTSCAN_U64_HEX, &out, KV_QUERY_MAX_TOKENS);
		q->hashes = out.v, q->nhashes = out.n, p->caphash = out.cap;
		return end;
	}
	/* cast to u32 as push_token casts them */
	struct kv_u32s out = { q->tokens, q->ntokens, p->captok };
	size_t end = kv_intscan_tokens(s, n, &out, KV_QUERY_MAX_TOKENS);
	q->tokens = out.v, q->ntokens = out.n, p->captok = out.cap;
	return end;
}

/* Just past the next '[' from `at` on that is outside a string, or n;
 * `at` is outside one.  Strings are told by their quotes as yajl tells
 * them wherever yajl has not failed before (escapes skipped).  Never a
 * '[' inside a string: yajl would read that string again from its start
 * at each cut, a time quadratic in its length. */
static size_t next_open_bracket(const char *line, size_t at, size_t n)
{
	bool in_string = false;
	for (size_t i = at; i < n; i++) {
		if (in_string && line[i] == '\\')
			i++;
		else if (line[i] == '"')
			in_string = !in_string;
		else if (line[i] == '[' && !in_string)
			return i + 1;
	}
	return n;
}

/* yajl reads the line in pieces that end at each '[' outside strings, so
 * that the elements of a token or hash list can be read by
 * kv_intscan_array from where the list's '[' was read; yajl is then given
 * the rest from the list's ']' on, so it sees an empty list.  yajl's
 * result does not depend on where its input is cut, and kv_intscan_array
 * takes only what the callbacks would have taken, with the same values. */
static yajl_status feed_json(struct kv_qparser *p, const char *line, size_t n)
{
	size_t at = 0;
	while (at < n) {
		size_t cut = next_open_bracket(line, at, n);
		yajl_status st = yajl_parse(p->h, (const unsigned char *)line + at, cut - at);
		at = cut;
		if (st != yajl_status_ok)
			return st;
		if (p->list != Q_OTHER) {
			size_t end = scan_list(p, line + at, n - at);
			p->list = Q_OTHER;
			if (end != KV_INTSCAN_DECLINED)
				at += end;
		}
	}
	return yajl_status_ok;
}

/* yajl takes \v and \f for blanks; JSON does not (RFC 8259: space, tab,
 * CR and LF alone), nor does kv-conductor (serde_json).  The offset of the
 * first \v or \f when it is outside a string, else n.  Inside a string
 * yajl refuses it already, and when the line goes wrong before it, yajl
 * stops there: telling strings by their quotes is then right wherever it
 * matters. */
static size_t stray_blank_at(const char *line, size_t n)
{
	const char *v = memchr(line, '\v', n), *f = memchr(line, '\f', n);
	const char *first = !v || (f && f < v) ? f : v;
	if (!first)
		return n;
	bool in_string = false;
	for (const char *c = line; c < first; c++) {
		if (*c == '"')
			in_string = !in_string;
		else if (*c == '\\' && in_string)
			c++;
	}
	return in_string ? n : (size_t)(first - line);
}

/* The whole line through yajl; a \v or \f outside a string is given to
 * yajl as \x01, which it refuses wherever it stands outside a string, as
 * JSON refuses those two: its message is then the one any stray control
 * character gets at that point. */
static yajl_status parse_json(struct kv_qparser *p, const char *line, size_t n)
{
	size_t stray = stray_blank_at(line, n);
	yajl_status st = feed_json(p, line, stray);
	if (st == yajl_status_ok && stray < n)
		st = yajl_parse(p->h, (const unsigned char *)"\x01", 1);
	if (st == yajl_status_ok)
		st = yajl_complete_parse(p->h);
	return st;
}

bool kv_qparse(struct kv_qparser *p, const char *line, size_t n, struct kv_qline *q)
{
	uint32_t *tokens = q->tokens;
	uint64_t *hashes = q->hashes;
	memset(q, 0, sizeof *q);
	q->tokens = tokens;
	q->hashes = hashes;
	p->q = q;
	p->msg[0] = 0;
	p->depth = 0;
	p->top_array = false;
	p->saw_tokens = false;
	p->key = Q_OTHER;
	p->list = Q_OTHER;
	p->keys_seen = 0;
	size_t i = 0;
	while (i < n && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i == n) {
		snprintf(p->msg, sizeof p->msg, "empty query");
		return false;
	}
	if (line[i] >= '0' && line[i] <= '9')
		return parse_plain(p, line + i, n - i);
	/* a fresh handle per line: a failed parse leaves yajl in its error state */
	if (p->h)
		yajl_free(p->h);
	p->h = yajl_alloc(&callbacks, NULL, p);
	yajl_status st = parse_json(p, line, n);
	if (st != yajl_status_ok) {
		if (!p->msg[0]) {
			unsigned char *m = yajl_get_error(p->h, 0, (const unsigned char *)line, n);
			snprintf(p->msg, sizeof p->msg, "%s", m ? (const char *)m : "bad JSON");
			if (m)
				yajl_free_error(p->h, m);
			p->msg[strcspn(p->msg, "\n")] = 0;
		}
		return false;
	}
	if (!p->top_array && !p->saw_tokens && !q->by_hash) {
		snprintf(p->msg, sizeof p->msg, "no token_ids or block_hashes");
		return false;
	}
	if (p->saw_tokens && q->by_hash) {
		snprintf(p->msg, sizeof p->msg, "both token_ids and block_hashes");
		return false;
	}
	return true;
}

static char *copy_string(const char *s, void *(*alloc)(void *, size_t), void *arg)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	return memcpy(alloc(arg, n), s, n);
}

void kv_qline_copy(const struct kv_qline *q, struct kv_qline *to, void *(*alloc)(void *arg, size_t n), void *arg)
{
	*to = *q;
	to->model = copy_string(q->model, alloc, arg);
	to->tenant = copy_string(q->tenant, alloc, arg);
	to->lora = copy_string(q->lora, alloc, arg);
	to->salt = copy_string(q->salt, alloc, arg);
	to->instance = copy_string(q->instance, alloc, arg);
	to->cache_namespace = copy_string(q->cache_namespace, alloc, arg);
	to->tokens = q->ntokens ? memcpy(alloc(arg, q->ntokens * sizeof *q->tokens), q->tokens,
					 q->ntokens * sizeof *q->tokens)
				: NULL;
	to->hashes = q->nhashes ? memcpy(alloc(arg, q->nhashes * sizeof *q->hashes), q->hashes,
					 q->nhashes * sizeof *q->hashes)
				: NULL;
}

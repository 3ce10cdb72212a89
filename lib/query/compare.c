#include "query/compare.h"
#include "base/util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *kv_field_name(enum kv_field f)
{
	static const char *const names[KV_NFIELDS] = {
		[KV_F_NPU] = "npu_blocks", [KV_F_CPU] = "cpu_blocks", [KV_F_DISK] = "disk_blocks",
		[KV_F_LOCAL] = "cpu_local_blocks", [KV_F_REMOTE] = "cpu_remote_blocks", [KV_F_TOKENS] = "matched_tokens",
		[KV_F_LONGEST] = "longest_matched", [KV_F_GPU] = "GPU", [KV_F_RCPU] = "CPU", [KV_F_RDISK] = "DISK",
		[KV_F_DP] = "DP",
	};
	return f < KV_NFIELDS ? names[f] : "?";
}

void kv_rows_free(struct kv_rows *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].instance);
	free(r->v);
	*r = (struct kv_rows){ 0 };
}

static struct kv_row *row_add(struct kv_rows *r, const char *instance, size_t len, int64_t dp)
{
	r->v = kv_xgrow(r->v, &r->cap, r->n + 1, sizeof *r->v);
	struct kv_row *w = &r->v[r->n++];
	*w = (struct kv_row){ .instance = kv_xstrndup(instance, len), .len = len, .dp = dp };
	return w;
}

static void set(struct kv_row *w, enum kv_field f, uint64_t v)
{
	w->f[f] = v;
	w->has |= 1u << f;
}

static int row_key_cmp(const char *a, size_t an, int64_t adp, const char *b, size_t bn, int64_t bdp)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	if (c)
		return c;
	if (an != bn)
		return an < bn ? -1 : 1;
	return (adp > bdp) - (adp < bdp);
}

static int by_key(const void *x, const void *y)
{
	const struct kv_row *a = x, *b = y;
	return row_key_cmp(a->instance, a->len, a->dp, b->instance, b->len, b->dp);
}

static void sort_rows(struct kv_rows *r)
{
	if (r->n > 1)
		qsort(r->v, r->n, sizeof *r->v, by_key);
}

const struct kv_row *kv_rows_find(const struct kv_rows *r, const char *instance, size_t len, int64_t dp)
{
	size_t lo = 0, hi = r->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = row_key_cmp(r->v[mid].instance, r->v[mid].len, r->v[mid].dp, instance, len, dp);
		if (!c)
			return &r->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

void kv_rows_of_hits(struct kv_rows *r, const struct kv_qsource *src, const struct kv_hit *hits, size_t n,
		     size_t block_size, bool shared_pool, bool rfc, const char *instance)
{
	size_t want = instance ? strlen(instance) : 0;
	struct kv_row *inst = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct kv_hit *h = &hits[i];
		size_t len;
		int64_t dp;
		const char *name = kv_qsource_worker(src, h->worker, &len, &dp);
		if (instance && (len != want || memcmp(name, instance, len) != 0))
			continue;
		if (!inst || inst->len != len || memcmp(inst->instance, name, len) != 0) {
			inst = row_add(r, name, len, -1);
			set(inst, KV_F_LONGEST, 0);
			if (rfc) {
				set(inst, KV_F_GPU, 0);
				set(inst, KV_F_RCPU, 0);
				set(inst, KV_F_RDISK, 0);
			}
		}
		uint64_t tokens = (uint64_t)(h->npu + h->cpu + h->disk) * block_size;
		size_t at = (size_t)(inst - r->v);
		struct kv_row *w = row_add(r, name, len, dp);
		inst = &r->v[at];
		if (rfc) {
			set(w, KV_F_DP, tokens);
			set(inst, KV_F_GPU, max64(inst->f[KV_F_GPU], (uint64_t)h->npu * block_size));
			set(inst, KV_F_RCPU, max64(inst->f[KV_F_RCPU], (uint64_t)(h->npu + h->cpu) * block_size));
			set(inst, KV_F_RDISK, max64(inst->f[KV_F_RDISK], tokens));
		} else {
			set(w, KV_F_NPU, h->npu);
			set(w, KV_F_CPU, h->cpu);
			set(w, KV_F_DISK, h->disk);
			set(w, KV_F_LOCAL, shared_pool ? h->cpu_local : h->cpu);
			set(w, KV_F_REMOTE, shared_pool ? h->cpu_remote : 0);
			set(w, KV_F_TOKENS, tokens);
		}
		set(inst, KV_F_LONGEST, max64(inst->f[KV_F_LONGEST], tokens));
	}
	sort_rows(r);
}

/* ---- a router's answer --------------------------------------------------- */

static bool why(char *buf, size_t n, const char *fmt, const char *a, const char *b)
{
	snprintf(buf, n, fmt, a, b);
	return false;
}

/* A count of an answer: a JSON integer from 0 to 2^53. */
static bool count(json_t *v, uint64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return false;
	*out = (uint64_t)json_integer_value(v);
	return true;
}

static bool field(json_t *o, const char *key, enum kv_field f, struct kv_row *w, bool required)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return !required;
	uint64_t x;
	if (!count(v, &x))
		return false;
	set(w, f, x);
	return true;
}

/* A DP map's key: a rank as serde writes it, decimal digits. */
static bool rank_of(const char *key, int64_t *dp)
{
	uint64_t v;
	if (!kv_parse_u64(key, 0, UINT32_MAX, &v) || key[0] == '+' || (key[0] == '0' && key[1]))
		return false;
	*dp = (int64_t)v;
	return true;
}

static bool conductor_rank(struct kv_rows *r, const char *inst, size_t len, const char *key, json_t *v, char *w,
			   size_t wn)
{
	int64_t dp;
	if (!rank_of(key, &dp))
		return why(w, wn, "DP key \"%s\" of %s is not a rank", key, inst);
	if (!json_is_object(v))
		return why(w, wn, "DP %s of %s is not an object", key, inst);
	struct kv_row *row = row_add(r, inst, len, dp);
	static const struct { const char *k; enum kv_field f; bool req; } fs[] = {
		{ "npu_blocks", KV_F_NPU, true },         { "cpu_blocks", KV_F_CPU, true },
		{ "disk_blocks", KV_F_DISK, true },       { "cpu_local_blocks", KV_F_LOCAL, false },
		{ "cpu_remote_blocks", KV_F_REMOTE, false }, { "matched_tokens", KV_F_TOKENS, true },
	};
	for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
		if (!field(v, fs[i].k, fs[i].f, row, fs[i].req))
			return why(w, wn, "%s of a DP of %s is missing or not a count", fs[i].k, inst);
	return true;
}

static bool rfc_rank(struct kv_rows *r, const char *inst, size_t len, const char *key, json_t *v, char *w, size_t wn)
{
	int64_t dp;
	uint64_t x;
	if (!rank_of(key, &dp))
		return why(w, wn, "DP key \"%s\" of %s is not a rank", key, inst);
	if (!count(v, &x))
		return why(w, wn, "DP %s of %s is not a count of tokens", key, inst);
	set(row_add(r, inst, len, dp), KV_F_DP, x);
	return true;
}

static bool instance_of(struct kv_rows *r, const char *inst, size_t len, json_t *v, bool rfc, char *w, size_t wn)
{
	if (!json_is_object(v))
		return why(w, wn, "instance %s is not an object%s", inst, "");
	struct kv_row *row = row_add(r, inst, len, -1);
	if (!field(v, "longest_matched", KV_F_LONGEST, row, true))
		return why(w, wn, "longest_matched of %s is missing or not a count%s", inst, "");
	if (rfc && (!field(v, "GPU", KV_F_GPU, row, true) || !field(v, "CPU", KV_F_RCPU, row, true) ||
		    !field(v, "DISK", KV_F_RDISK, row, true)))
		return why(w, wn, "GPU, CPU or DISK of %s is missing or not a count%s", inst, "");
	json_t *dps = json_object_get(v, "DP");
	if (!json_is_object(dps))
		return why(w, wn, "DP of %s is missing or not an object%s", inst, "");
	const char *key;
	json_t *d;
	json_object_foreach(dps, key, d) {
		if (!(rfc ? rfc_rank(r, inst, len, key, d, w, wn) : conductor_rank(r, inst, len, key, d, w, wn)))
			return false;
	}
	return true;
}

bool kv_rows_parse(struct kv_rows *r, const char *body, size_t len, const char *tenant, size_t tlen, bool rfc,
		   char *w, size_t wn)
{
	json_error_t je;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		snprintf(w, wn, "not JSON (%s at byte %d)", je.text, je.position);
		return false;
	}
	bool ok = false;
	char *t = kv_xstrndup(tenant, tlen);
	json_t *inst = json_is_object(root) ? json_object_get(root, t) : NULL;
	json_t *err = json_is_object(root) ? json_object_get(root, "error") : NULL;
	if (!json_is_object(root))
		why(w, wn, "not a JSON object%s%s", "", "");
	else if (json_is_string(err) && !inst)
		why(w, wn, "an error: %s%s", json_string_value(err), "");
	else if (!inst)
		why(w, wn, "no tenant \"%s\" in it%s", t, "");
	else if (!json_is_object(inst))
		why(w, wn, "tenant \"%s\" is not an object%s", t, "");
	else if (json_object_size(root) != 1)
		why(w, wn, "it names another tenant beside \"%s\"%s", t, "");
	else {
		const char *key;
		json_t *v;
		ok = true;
		json_object_foreach(inst, key, v) {
			if (!(ok = instance_of(r, key, strlen(key), v, rfc, w, wn)))
				break;
		}
	}
	free(t);
	json_decref(root);
	sort_rows(r);
	return ok;
}

/* ---- the differences ---------------------------------------------------- */

static size_t add_diff(struct kv_fdiffs *out, const struct kv_row *key, enum kv_field f, uint64_t router,
		       uint64_t kvtools)
{
	out->v = kv_xgrow(out->v, &out->cap, out->n + 1, sizeof *out->v);
	out->v[out->n] = (struct kv_fdiff){ key->instance, key->len, key->dp, f, router, kvtools, KV_NO_FOLLOW };
	return out->n++;
}

static uint64_t val(const struct kv_row *r, enum kv_field f)
{
	return r && (r->has & (1u << f)) ? r->f[f] : 0;
}

/* The differences of one rank (or one instance's own fields): d[f] their
 * indices, SIZE_MAX where equal. */
static void diff_row(const struct kv_row *ra, const struct kv_row *ka, struct kv_fdiffs *out, size_t *d)
{
	const struct kv_row *key = ra ? ra : ka;
	uint32_t has = (ra ? ra->has : 0) | (ka ? ka->has : 0);
	for (int f = 0; f < KV_NFIELDS; f++) {
		d[f] = SIZE_MAX;
		if (!(has & (1u << f)))
			continue;
		/* a router that gives no split (kv-conductor before it had one) is not compared on it */
		if ((f == KV_F_LOCAL || f == KV_F_REMOTE) && !(ra && (ra->has & (1u << f))))
			continue;
		if (val(ra, (enum kv_field)f) != val(ka, (enum kv_field)f))
			d[f] = add_diff(out, key, (enum kv_field)f, val(ra, (enum kv_field)f), val(ka, (enum kv_field)f));
	}
}

static size_t first_of(const size_t *d, const enum kv_field *fs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (d[fs[i]] != SIZE_MAX)
			return d[fs[i]];
	return SIZE_MAX;
}

/* Whether the two sides' counts of a tier can come from one walk of that
 * tier, ending at the same block for both: each side counts the blocks of
 * it past its own upper tiers (base), so a count of 0 only says that the
 * walk ends at or before base, and two counts that differ then follow
 * from the upper tiers (kv-conductor's exclusive partition: npu > cpu > disk). */
static bool same_walk(uint64_t rbase, uint64_t rcount, uint64_t kbase, uint64_t kcount)
{
	if (rcount && kcount)
		return rbase + rcount == kbase + kcount;
	if (rcount)
		return rbase + rcount <= kbase;
	if (kcount)
		return kbase + kcount <= rbase;
	return true;
}

/* Which differences of a rank follow from which (compare.h). */
static void follow_rank(const struct kv_row *ra, const struct kv_row *ka, struct kv_fdiffs *out, const size_t *d)
{
	struct kv_fdiff *v = out->v;
	uint64_t rn = val(ra, KV_F_NPU), kn = val(ka, KV_F_NPU), rc = val(ra, KV_F_CPU), kc = val(ka, KV_F_CPU);
	if (d[KV_F_CPU] != SIZE_MAX && d[KV_F_NPU] != SIZE_MAX && same_walk(rn, rc, kn, kc))
		v[d[KV_F_CPU]].follows = d[KV_F_NPU];
	static const enum kv_field up[] = { KV_F_NPU, KV_F_CPU };
	if (d[KV_F_DISK] != SIZE_MAX && first_of(d, up, 2) != SIZE_MAX &&
	    same_walk(rn + rc, val(ra, KV_F_DISK), kn + kc, val(ka, KV_F_DISK)))
		v[d[KV_F_DISK]].follows = first_of(d, up, 2);
	static const enum kv_field split_from[] = { KV_F_CPU, KV_F_NPU };
	size_t s = first_of(d, split_from, 2);
	if (d[KV_F_LOCAL] != SIZE_MAX)
		v[d[KV_F_LOCAL]].follows = s;
	if (d[KV_F_REMOTE] != SIZE_MAX)
		v[d[KV_F_REMOTE]].follows = s != SIZE_MAX ? s : d[KV_F_LOCAL];
	static const enum kv_field blocks[] = { KV_F_NPU, KV_F_CPU, KV_F_DISK };
	if (d[KV_F_TOKENS] != SIZE_MAX)
		v[d[KV_F_TOKENS]].follows = first_of(d, blocks, 3);
	for (int f = 0; f < KV_NFIELDS; f++)
		if (d[f] != SIZE_MAX && v[d[f]].follows == SIZE_MAX)
			v[d[f]].follows = KV_NO_FOLLOW;
}

/* RFC #1403's tiers are cumulative (GPU <= CPU <= DISK): CPU follows GPU,
 * and DISK the tier above it, when one walk of the lower tier can give
 * both sides' counts (same_walk). */
static void follow_tiers(const struct kv_row *ra, const struct kv_row *ka, struct kv_fdiffs *out, const size_t *d)
{
	struct kv_fdiff *v = out->v;
	uint64_t rg = val(ra, KV_F_GPU), kg = val(ka, KV_F_GPU), rc = val(ra, KV_F_RCPU), kc = val(ka, KV_F_RCPU);
	uint64_t rd = val(ra, KV_F_RDISK), kd = val(ka, KV_F_RDISK);
	if (d[KV_F_RCPU] != SIZE_MAX && d[KV_F_GPU] != SIZE_MAX &&
	    same_walk(rg, rc > rg ? rc - rg : 0, kg, kc > kg ? kc - kg : 0))
		v[d[KV_F_RCPU]].follows = d[KV_F_GPU];
	static const enum kv_field up[] = { KV_F_GPU, KV_F_RCPU };
	size_t first = first_of(d, up, 2);
	if (d[KV_F_RDISK] != SIZE_MAX && first != SIZE_MAX && same_walk(rc, rd > rc ? rd - rc : 0, kc, kd > kc ? kd - kc : 0))
		v[d[KV_F_RDISK]].follows = first;
}

/* A key of both lists and the row each has for it (NULL: none). */
struct pair {
	const struct kv_row *r, *k;
};

static const struct kv_row *key_of(const struct pair *p)
{
	return p->r ? p->r : p->k;
}

/* The keys of two sorted lists of rows, merged. */
static size_t pairs_of(const struct kv_rows *a, const struct kv_rows *b, struct pair *out)
{
	size_t i = 0, j = 0, n = 0;
	while (i < a->n || j < b->n) {
		const struct kv_row *x = i < a->n ? &a->v[i] : NULL, *y = j < b->n ? &b->v[j] : NULL;
		int c = !x ? 1 : !y ? -1 : row_key_cmp(x->instance, x->len, x->dp, y->instance, y->len, y->dp);
		out[n++] = (struct pair){ c <= 0 ? x : NULL, c >= 0 ? y : NULL };
		i += c <= 0;
		j += c >= 0;
	}
	return n;
}

/* The differences of one instance's keys, pairs [p, q): its ranks, then
 * its own fields (its key with dp -1 sorts first), which follow them. */
static void diff_instance(const struct pair *pairs, size_t p, size_t q, struct kv_fdiffs *out)
{
	size_t first = out->n, d[KV_NFIELDS];
	for (size_t k = p; k < q; k++) {
		if (key_of(&pairs[k])->dp < 0)
			continue;
		diff_row(pairs[k].r, pairs[k].k, out, d);
		follow_rank(pairs[k].r, pairs[k].k, out, d);
	}
	if (key_of(&pairs[p])->dp >= 0)
		return;
	size_t ranks_end = out->n;
	diff_row(pairs[p].r, pairs[p].k, out, d);
	/* longest_matched follows the first rank that differs in tokens, else any */
	size_t cause = KV_NO_FOLLOW;
	for (size_t k = first; k < ranks_end && cause == KV_NO_FOLLOW; k++)
		if (out->v[k].field == KV_F_TOKENS || out->v[k].field == KV_F_DP)
			cause = k;
	if (cause == KV_NO_FOLLOW && ranks_end > first)
		cause = first;
	/* RFC #1403's GPU, CPU and DISK are the largest of the ranks per tier:
	 * a rank's tokens may not show them, so they stand alone */
	if (d[KV_F_LONGEST] != SIZE_MAX)
		out->v[d[KV_F_LONGEST]].follows = cause;
	follow_tiers(pairs[p].r, pairs[p].k, out, d);
}

void kv_rows_diff(const struct kv_rows *router, const struct kv_rows *kvtools, struct kv_fdiffs *out)
{
	struct pair *pairs = kv_xmalloc((router->n + kvtools->n + 1) * sizeof *pairs);
	size_t np = pairs_of(router, kvtools, pairs);
	out->n = 0;
	for (size_t p = 0, q; p < np; p = q) {
		const struct kv_row *key = key_of(&pairs[p]);
		for (q = p + 1; q < np; q++) {
			const struct kv_row *o = key_of(&pairs[q]);
			if (o->len != key->len || memcmp(o->instance, key->instance, key->len) != 0)
				break;
		}
		diff_instance(pairs, p, q, out);
	}
	free(pairs);
}

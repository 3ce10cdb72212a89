#include "query/answer.h"
#include "base/jsonw.h"
#include "base/utf8.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

/* ---- kv-conductor's and RFC #1403's answers ------------------------------ */

/* The end of the instance whose hits start at i: hits are sorted by name. */
static size_t instance_end(const struct kv_qsource *src, const struct kv_hit *hits, size_t i, size_t n)
{
	size_t len, l2;
	int64_t dp, d2;
	const char *inst = kv_qsource_worker(src, hits[i].worker, &len, &dp);
	size_t j = i + 1;
	while (j < n) {
		const char *other = kv_qsource_worker(src, hits[j].worker, &l2, &d2);
		/* a snapshot's ranks of one instance most often share its name */
		if (l2 != len || (other != inst && memcmp(other, inst, len) != 0))
			break;
		j++;
	}
	return j;
}

struct rank_key {
	char text[JW_I64_MAX + 1]; /* the rank as serde writes a map key: its decimal digits */
	size_t hit;
};

/* strcmp of two ranks' texts, inline: an answer compares a few for each
 * instance, and the calls to the library's took a tenth of writing it. */
static int rank_text_cmp(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

static int by_rank_text(const void *x, const void *y)
{
	return rank_text_cmp(((const struct rank_key *)x)->text, ((const struct rank_key *)y)->text);
}

/* An instance's ranks in key order.  An instance has a few ranks: they
 * are sorted in place, by insertion, where a malloc and qsort for each
 * instance of each answer took a fifth of writing it. */
enum { FEW_RANKS = 16 };
struct rank_order {
	struct rank_key few[FEW_RANKS];
	struct rank_key *k;
};

static void sort_few_ranks(struct rank_key *k, size_t n)
{
	for (size_t x = 1; x < n; x++) {
		struct rank_key t = k[x];
		size_t y = x;
		for (; y > 0 && rank_text_cmp(k[y - 1].text, t.text) > 0; y--)
			k[y] = k[y - 1];
		k[y] = t;
	}
}

/* The hits [i, j) of one instance in the order of their "DP" keys: sorted
 * as strings ("10" before "2"), as serde_json's map sorts them.  Ranks are
 * distinct within an instance, so any sort gives the same order. */
static const struct rank_key *ranks_in_key_order(struct rank_order *o, const struct kv_qsource *src,
						 const struct kv_hit *hits, size_t i, size_t j)
{
	struct rank_key *k = o->k = j - i <= FEW_RANKS ? o->few : kv_xmalloc((j - i) * sizeof *k);
	for (size_t x = i; x < j; x++) {
		size_t len;
		int64_t dp;
		kv_qsource_worker(src, hits[x].worker, &len, &dp);
		*jw_i64(k[x - i].text, dp) = 0;
		k[x - i].hit = x;
	}
	if (j - i <= FEW_RANKS)
		sort_few_ranks(k, j - i);
	else
		qsort(k, j - i, sizeof *k, by_rank_text);
	return k;
}

static void rank_order_free(struct rank_order *o)
{
	if (o->k != o->few)
		free(o->k);
}

static uint64_t hit_tokens(const struct kv_hit *h, size_t block_size)
{
	return (uint64_t)(h->npu + h->cpu + h->disk) * block_size;
}

/* A rank's key: ,"<rank>": */
static void put_rank_key(struct jw *w, const struct rank_key *k, bool first)
{
	jw_put_lit(w, first ? "\"" : ",\"");
	jw_put_lit(w, k->text);
	jw_put_lit(w, "\":");
}

/* {"<tenant>":{ ... }} around the instances. */
static void open_tenant(struct jw *w, const char *tenant, size_t tlen)
{
	jw_put_char(w, '{');
	jw_put_str(w, tenant, tlen);
	jw_put_lit(w, ":{");
}

static void open_instance(struct jw *w, const struct kv_qsource *src, const struct kv_hit *h, bool first,
			  const char *fields)
{
	size_t len;
	int64_t dp;
	const char *inst = kv_qsource_worker(src, h->worker, &len, &dp);
	if (!first)
		jw_put_char(w, ',');
	jw_put_str(w, inst, len);
	jw_put_lit(w, ":{");
	jw_put_lit(w, fields);
}

/* A count: one digit inline (most of an answer's counts are 0). */
static char *put_count(char *p, uint64_t v)
{
	if (v < 10) {
		*p = (char)('0' + v);
		return p + 1;
	}
	return jw_u64(p, v);
}

/* A rank's block counts, room made once for all of them: six counts and
 * their keys per rank, 64 ranks an answer on the bench's cluster. */
#define DP_CPU "{\"cpu_blocks\":"
#define DP_CPU_LOCAL ",\"cpu_local_blocks\":"
#define DP_CPU_REMOTE ",\"cpu_remote_blocks\":"
#define DP_DISK ",\"disk_blocks\":"
#define DP_TOKENS ",\"matched_tokens\":"
#define DP_NPU ",\"npu_blocks\":"

static void put_dp_blocks(struct jw *w, const struct kv_hit *h, uint64_t tokens, bool shared_pool)
{
	/* the room is that of the keys written below, and six counts */
	char *p = jw_room(w, sizeof(DP_CPU DP_CPU_LOCAL DP_CPU_REMOTE DP_DISK DP_TOKENS DP_NPU "}") + 6 * JW_U64_MAX);
	p = put_count(jw_lit(p, DP_CPU), h->cpu);
	p = put_count(jw_lit(p, DP_CPU_LOCAL), shared_pool ? h->cpu_local : h->cpu);
	p = put_count(jw_lit(p, DP_CPU_REMOTE), shared_pool ? h->cpu_remote : 0);
	p = put_count(jw_lit(p, DP_DISK), h->disk);
	p = put_count(jw_lit(p, DP_TOKENS), tokens);
	p = put_count(jw_lit(p, DP_NPU), h->npu);
	w->p = jw_lit(p, "}");
}

void kv_query_write_answer(struct kv_out *o, const struct kv_qsource *src, const char *tenant, size_t tlen,
			   const struct kv_hit *hits, size_t n, size_t block_size, bool shared_pool)
{
	struct jw w;
	jw_begin(&w, o);
	open_tenant(&w, tenant, tlen);
	for (size_t i = 0, j; i < n; i = j) {
		j = instance_end(src, hits, i, n);
		open_instance(&w, src, &hits[i], i == 0, "\"DP\":{");
		uint64_t longest = 0;
		struct rank_order order;
		const struct rank_key *k = ranks_in_key_order(&order, src, hits, i, j);
		for (size_t x = 0; x < j - i; x++) {
			const struct kv_hit *h = &hits[k[x].hit];
			uint64_t t = hit_tokens(h, block_size);
			longest = t > longest ? t : longest;
			put_rank_key(&w, &k[x], x == 0);
			put_dp_blocks(&w, h, t, shared_pool);
		}
		rank_order_free(&order);
		jw_put_lit(&w, "},\"longest_matched\":");
		jw_put_u64(&w, longest);
		jw_put_char(&w, '}');
	}
	jw_put_lit(&w, "}}\n");
	jw_end(&w);
}

void kv_query_write_rfc_answer(struct kv_out *o, const struct kv_qsource *src, const char *tenant, size_t tlen,
			       const struct kv_hit *hits, size_t n, size_t block_size)
{
	struct jw w;
	jw_begin(&w, o);
	open_tenant(&w, tenant, tlen);
	for (size_t i = 0, j; i < n; i = j) {
		j = instance_end(src, hits, i, n);
		uint64_t gpu = 0, cpu = 0, disk = 0;
		for (size_t x = i; x < j; x++) {
			uint64_t g = (uint64_t)hits[x].npu * block_size, c = g + (uint64_t)hits[x].cpu * block_size;
			uint64_t d = c + (uint64_t)hits[x].disk * block_size;
			gpu = g > gpu ? g : gpu;
			cpu = c > cpu ? c : cpu;
			disk = d > disk ? d : disk;
		}
		open_instance(&w, src, &hits[i], i == 0, "\"CPU\":");
		jw_put_u64(&w, cpu);
		jw_put_lit(&w, ",\"DISK\":");
		jw_put_u64(&w, disk);
		jw_put_lit(&w, ",\"DP\":{");
		struct rank_order order;
		const struct rank_key *k = ranks_in_key_order(&order, src, hits, i, j);
		for (size_t x = 0; x < j - i; x++) {
			put_rank_key(&w, &k[x], x == 0);
			jw_put_u64(&w, hit_tokens(&hits[k[x].hit], block_size));
		}
		rank_order_free(&order);
		jw_put_lit(&w, "},\"GPU\":");
		jw_put_u64(&w, gpu);
		jw_put_lit(&w, ",\"longest_matched\":");
		jw_put_u64(&w, disk > cpu ? disk : cpu > gpu ? cpu : gpu);
		jw_put_char(&w, '}');
	}
	jw_put_lit(&w, "}}\n");
	jw_end(&w);
}

/* RFC #1403's instance_id: the answer names that instance alone (hits are
 * sorted by name, so its ranks are adjacent). */
static void only_instance(const struct kv_answer *q, size_t *first, size_t *count)
{
	size_t want = strlen(q->instance), len;
	int64_t dp;
	*count = 0;
	for (size_t i = 0; i < q->nhits; i++) {
		const char *name = kv_qsource_worker(q->src, q->hits[i].worker, &len, &dp);
		if (len != want || memcmp(name, q->instance, len) != 0)
			continue;
		if (!*count)
			*first = i;
		++*count;
	}
}

static void write_rfc(struct kv_answers *a, const struct kv_answer *q)
{
	size_t first = 0, count = q->nhits;
	if (q->instance)
		only_instance(q, &first, &count);
	kv_query_write_rfc_answer(a->out, q->src, q->tenant, q->tlen, q->hits + first, count, q->block_size);
}

/* ---- routes and explanations --------------------------------------------- */

static void write_route(struct kv_answers *a, const struct kv_answer *q)
{
	const struct kv_hit *h = q->route;
	struct jw w;
	jw_begin(&w, a->out);
	jw_put_lit(&w, "{\"tenant\":");
	jw_put_str(&w, q->tenant, q->tlen);
	if (!h) {
		jw_put_lit(&w, ",\"instance_id\":null}\n");
		jw_end(&w);
		return;
	}
	size_t len;
	int64_t dp;
	const char *inst = kv_qsource_worker(q->src, h->worker, &len, &dp);
	jw_put_lit(&w, ",\"instance_id\":");
	jw_put_str(&w, inst, len);
	jw_put_lit(&w, ",\"dp_rank\":");
	jw_put_i64(&w, dp);
	jw_put_lit(&w, ",\"score\":");
	jw_put_double(&w, kv_hit_score(h, &a->weights));
	jw_put_lit(&w, ",\"matched_tokens\":");
	jw_put_u64(&w, hit_tokens(h, q->block_size));
	jw_put_lit(&w, ",\"npu_blocks\":");
	jw_put_u64(&w, h->npu);
	jw_put_lit(&w, ",\"cpu_blocks\":");
	jw_put_u64(&w, h->cpu);
	jw_put_lit(&w, ",\"disk_blocks\":");
	jw_put_u64(&w, h->disk);
	jw_put_lit(&w, "}\n");
	jw_end(&w);
}

static void put_explained(struct jw *w, const struct kv_answers *a, const struct kv_answer *q, const struct kv_hit *h,
			  bool first)
{
	size_t len;
	int64_t dp;
	const char *inst = kv_qsource_worker(q->src, h->worker, &len, &dp);
	jw_put_lit(w, first ? "{\"instance_id\":" : ",{\"instance_id\":");
	jw_put_str(w, inst, len);
	jw_put_lit(w, ",\"dp_rank\":");
	jw_put_i64(w, dp);
	jw_put_lit(w, ",\"npu_blocks\":");
	jw_put_u64(w, h->npu);
	jw_put_lit(w, ",\"cpu_blocks\":");
	jw_put_u64(w, h->cpu);
	jw_put_lit(w, ",\"disk_blocks\":");
	jw_put_u64(w, h->disk);
	jw_put_lit(w, ",\"matched_blocks\":");
	jw_put_u64(w, h->npu + h->cpu + h->disk);
	jw_put_lit(w, ",\"stopped_at\":");
	jw_put_u64(w, h->stop_at);
	jw_put_lit(w, ",\"reason\":\"");
	jw_put_lit(w, kv_stop_name(h->why));
	jw_put_char(w, '"');
	if (a->show_routed)
		jw_put_lit(w, q->route == h ? ",\"routed\":true" : ",\"routed\":false");
	jw_put_char(w, '}');
}

static void write_explain(struct kv_answers *a, const struct kv_answer *q)
{
	struct jw w;
	jw_begin(&w, a->out);
	jw_put_lit(&w, "{\"tenant\":");
	jw_put_str(&w, q->tenant, q->tlen);
	jw_put_lit(&w, ",\"blocks\":");
	jw_put_u64(&w, q->nblocks);
	jw_put_lit(&w, ",\"block_size\":");
	jw_put_u64(&w, q->block_size);
	jw_put_lit(&w, ",\"workers\":[");
	for (size_t i = 0; i < q->nhits; i++)
		put_explained(&w, a, q, &q->hits[i], i == 0);
	jw_put_lit(&w, "]}\n");
	jw_end(&w);
}

/* ---- the table ----------------------------------------------------------- */

/* An instance id as a table shows it: what could drive the terminal as '?'. */
static const char *shown(struct kv_answers *a, const char *id, size_t *len)
{
	a->shown = kv_xgrow(a->shown, &a->shown_cap, *len + 1, 1);
	*len = kv_printable(a->shown, *len + 1, id, *len);
	return a->shown;
}

static const char *shown_worker(struct kv_answers *a, const struct kv_answer *q, const struct kv_hit *h, size_t *len,
				int64_t *dp)
{
	return shown(a, kv_qsource_worker(q->src, h->worker, len, dp), len);
}

static void table_header(struct kv_answers *a)
{
	if (a->header_done)
		return;
	a->header_done = true;
	if (a->kind == KV_ANSWER_EXPLAIN)
		kv_out_printf(a->out, "%-6s %-*s %4s %5s %5s %5s %15s %s\n", "QUERY", a->name_width, "INSTANCE",
			      "DP", "NPU", "CPU", "DISK", "STOP/BLOCKS", "REASON");
	else if (a->kind == KV_ANSWER_ROUTE)
		kv_out_printf(a->out, "%-6s %-*s %4s %8s %8s %5s %5s %5s\n", "QUERY", a->name_width, "ROUTE",
			      "DP", "TOKENS", "SCORE", "NPU", "CPU", "DISK");
	else if (a->shared_pool)
		kv_out_printf(a->out, "%-6s %-*s %4s %8s %5s %5s %5s %5s %5s\n", "QUERY", a->name_width,
			      "INSTANCE", "DP", "TOKENS", "NPU", "CPU", "DISK", "LOCAL", "REMOTE");
	else
		kv_out_printf(a->out, "%-6s %-*s %4s %8s %5s %5s %5s\n", "QUERY", a->name_width, "INSTANCE", "DP",
			      "TOKENS", "NPU", "CPU", "DISK");
}

static void table_route(struct kv_answers *a, const struct kv_answer *q)
{
	const struct kv_hit *h = q->route;
	size_t len = 1;
	int64_t dp = -1;
	const char *inst = h ? shown_worker(a, q, h, &len, &dp) : "-";
	kv_out_printf(a->out, "%-6llu %-*.*s %4lld %8llu %8.6g %5u %5u %5u\n", (unsigned long long)q->number,
		      a->name_width, (int)len, inst, (long long)dp,
		      (unsigned long long)(h ? hit_tokens(h, q->block_size) : 0),
		      h ? kv_hit_score(h, &a->weights) : 0.0, h ? h->npu : 0, h ? h->cpu : 0, h ? h->disk : 0);
}

static void table_explain(struct kv_answers *a, const struct kv_answer *q)
{
	for (size_t i = 0; i < q->nhits; i++) {
		const struct kv_hit *h = &q->hits[i];
		size_t len;
		int64_t dp;
		const char *inst = shown_worker(a, q, h, &len, &dp);
		kv_out_printf(a->out, "%-6llu %-*.*s %4lld %5u %5u %5u %7u/%-7zu %s%s\n", (unsigned long long)q->number,
			      a->name_width, (int)len, inst, (long long)dp, h->npu, h->cpu, h->disk, h->stop_at,
			      q->nblocks, kv_stop_name(h->why), q->route == h ? " (routed)" : "");
	}
}

static void table_hits(struct kv_answers *a, const struct kv_answer *q)
{
	for (size_t i = 0; i < q->nhits; i++) {
		const struct kv_hit *h = &q->hits[i];
		size_t len;
		int64_t dp;
		const char *inst = shown_worker(a, q, h, &len, &dp);
		if (a->shared_pool)
			kv_out_printf(a->out, "%-6llu %-*.*s %4lld %8llu %5u %5u %5u %5u %5u\n",
				      (unsigned long long)q->number, a->name_width, (int)len, inst, (long long)dp,
				      (unsigned long long)hit_tokens(h, q->block_size), h->npu, h->cpu, h->disk,
				      h->cpu_local, h->cpu_remote);
		else
			kv_out_printf(a->out, "%-6llu %-*.*s %4lld %8llu %5u %5u %5u\n", (unsigned long long)q->number,
				      a->name_width, (int)len, inst, (long long)dp,
				      (unsigned long long)hit_tokens(h, q->block_size), h->npu, h->cpu, h->disk);
	}
}

/* ---- a run's answers ----------------------------------------------------- */

void kv_answers_write(struct kv_answers *a, const struct kv_answer *q)
{
	if (a->table) {
		table_header(a);
		if (a->kind == KV_ANSWER_EXPLAIN)
			table_explain(a, q);
		else if (a->kind == KV_ANSWER_ROUTE)
			table_route(a, q);
		else
			table_hits(a, q);
		return;
	}
	switch (a->kind) {
	case KV_ANSWER_EXPLAIN: write_explain(a, q); break;
	case KV_ANSWER_ROUTE: write_route(a, q); break;
	case KV_ANSWER_RFC: write_rfc(a, q); break;
	case KV_ANSWER_CONDUCTOR:
		kv_query_write_answer(a->out, q->src, q->tenant, q->tlen, q->hits, q->nhits, q->block_size, a->shared_pool);
		break;
	}
}

void kv_answers_write_null(struct kv_answers *a)
{
	if (!a->table)
		kv_out_puts(a->out, "null\n");
}

void kv_answers_free(struct kv_answers *a)
{
	free(a->shown);
	a->shown = NULL;
	a->shown_cap = 0;
}

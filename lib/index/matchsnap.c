/* matchsnap: the matcher's sections of a snapshot (kvsnap(5)), which the
 * matcher owns whole: its event time and options (META), released content
 * per partition, engine offloads, the pending pool in arrival order,
 * sources, and the stream position.  Saved (kv_match_save) once the orders
 * of partitions and workers are set (which they follow), while the last
 * partition's engine hashes are placed (snapstate.c); restored
 * (kv_match_restore) after the index's sections; checked when a file is
 * loaded (kv_match_check_snap, for snapload.c) and dumped (kv_match_dump_snap,
 * for snapdump.c). */
#define _GNU_SOURCE /* qsort_r */
#include "index/matchstate.h"
#include "index/snap.h"
#include "index/snaplookup.h"
#include "index/snapdump.h"
#include "index/snapstate.h"
#include "index/snapwrite.h"
#include "base/err.h"
#include "base/jsonw.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

/* In key order a table's entries lie anywhere: fetch that many ahead. */
#define SAVE_AHEAD 16

/* Content released and kept for a later store, in partition k's range. */
static void save_content(const struct kv_match *m, struct kv_snap_writer *w, uint32_t k)
{
	uint32_t live = kv_snapw_live_partition(w, k);
	kv_snapw_range_begin(w, k, KV_RANGE_CONTENT);
	if (live < m->npm) {
		const struct kv_contents *t = &m->pm[live].content;
		struct kv_sorted o = kv_contents_sorted(t);
		for (size_t i = 0; i < o.n; i++) {
			if (i + SAVE_AHEAD < o.n)
				__builtin_prefetch(kv_contents_at_const(t, o.pos[i + SAVE_AHEAD]));
			const struct kv_content *c = kv_contents_at_const(t, o.pos[i]);
			struct kv_snap_content r = { o.keys[i], c->parent, c->local, c->t };
			kv_snapw_add(w, KV_SEC_CONTENT, &r, 1);
		}
		kv_sorted_free(&o);
	}
	kv_snapw_range_end(w, k, KV_RANGE_CONTENT);
}

/* Engine offloads waiting for a pool, partition k's (the section holds
 * every partition's, each record naming its own). */
static void save_offloads(const struct kv_match *m, struct kv_snap_writer *w, uint32_t k)
{
	uint32_t live = kv_snapw_live_partition(w, k);
	if (live >= m->npm)
		return;
	const struct kv_offloads *t = &m->pm[live].offload;
	struct kv_sorted o = kv_offloads_sorted(t);
	for (size_t i = 0; i < o.n; i++) {
		if (i + SAVE_AHEAD < o.n)
			__builtin_prefetch(kv_offloads_at_const(t, o.pos[i + SAVE_AHEAD]));
		const struct kv_offload *f = kv_offloads_at_const(t, o.pos[i]);
		struct kv_snap_offload r = { k, 0, o.keys[i], f->chain, f->parent, f->local, f->t };
		kv_snapw_add(w, KV_SEC_OFFLOAD, &r, 1);
	}
	kv_sorted_free(&o);
}

/* The pending pool in arrival order, over all partitions: the order its
 * entries expire in, which a resumed run must keep. */
static void save_pending(const struct kv_match *m, struct kv_snap_writer *w)
{
	const struct kv_pending *e;
	for (uint64_t seq = 0; (e = kv_pending_next(&m->pending, &seq)); seq++) {
		struct kv_snap_pending r = { kv_snapw_partition(w, e->part), kv_snapw_worker(w, e->worker), e->ehash, e->t,
					     e->medium, 0 };
		kv_snapw_add(w, KV_SEC_PENDING, &r, 1);
	}
}

static int by_source_name(const void *x, const void *y, void *ctx)
{
	const struct kv_srcstats *s = ctx;
	const struct kv_srcstat *a = &s->v[*(const uint32_t *)x], *b = &s->v[*(const uint32_t *)y];
	/* bytewise over the whole name, as the loader checks (source_after) */
	int c = memcmp(a->src, b->src, a->src_len < b->src_len ? a->src_len : b->src_len);
	return c ? c : (a->src_len > b->src_len) - (a->src_len < b->src_len);
}

static void save_sources(const struct kv_match *m, struct kv_snap_writer *w)
{
	size_t n = m->sources.n;
	uint32_t *order = kv_xmalloc((n + 1) * sizeof *order);
	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	/* sorted by endpoint: up to 65,536 of them (KV_MAX_SOURCES), arriving in
	 * any order, so not by insertion, which took 41 s for them reversed */
	qsort_r(order, n, sizeof *order, by_source_name, (void *)&m->sources);
	for (size_t i = 0; i < n; i++) {
		const struct kv_srcstat *st = &m->sources.v[order[i]];
		/* the record its next event lines may continue (kv_match_record) */
		uint32_t last_record = st->rec == KV_REC_BATCH ? 1 : st->rec == KV_REC_BAD ? 2 : 0;
		struct kv_snap_source r = { kv_snapw_string_n(w, st->src, st->src_len), st->seq.seen, last_record,
					    st->seq.last, st->seq.gaps, st->seq.missing, st->seq.restarts, st->batches,
					    st->last_recv_ns };
		kv_snapw_add(w, KV_SEC_SOURCES, &r, 1);
	}
	free(order);
}

void kv_match_save(const struct kv_match *m, struct kv_snap_writer *w)
{
	struct kv_snap_meta meta = { m->now, m->next_sweep, m->o.pending_ttl_ns, m->o.offload_ttl_ns,
				     m->o.content_ttl_ns, { 0, 0, 0 } };
	kv_snapw_add(w, KV_SEC_META, &meta, 1);
	for (uint32_t k = 0; k < kv_snapw_npartitions(w); k++) {
		save_content(m, w, k);
		save_offloads(m, w, k);
	}
	save_pending(m, w);
	save_sources(m, w);
	if (m->has_position) {
		struct kv_snap_stream st = { m->position, 0 };
		kv_snapw_add(w, KV_SEC_STREAM, &st, 1);
		if (m->stream) {
			struct kv_snap_stream_id id = { kv_snapw_string_n(w, m->stream, m->stream_len), m->stream_created };
			kv_snapw_add(w, KV_SEC_STREAM_ID, &id, 1);
		}
	}
}

/* ---- loading ------------------------------------------------------------- */

static void load_content(struct kv_match *m, const struct kv_snap *s, uint32_t p, uint32_t live)
{
	const struct kv_snap_range *c = &s->partitions[p].r[KV_RANGE_CONTENT];
	bool added;
	for (uint64_t i = c->first; i < c->first + c->count; i++) {
		struct kv_content *k = kv_contents_upsert(&kv_match_partition(m, live)->content, s->content[i].chain, &added);
		k->parent = s->content[i].parent;
		k->local = s->content[i].local;
		k->t = s->content[i].t;
	}
}

static void load_sources(struct kv_match *m, const struct kv_snap *s)
{
	for (size_t i = 0; i < s->nsources; i++) {
		size_t n;
		const char *src = kv_snap_string(s, s->sources[i].src, &n);
		struct kv_srcstat *st = kv_srcstats_get(&m->sources, src, n);
		if (!st)
			break; /* more than KV_MAX_SOURCES (a crafted file): the rest are not kept */
		st->seq.seen = s->sources[i].seen;
		st->seq.last = s->sources[i].last_seq;
		st->seq.gaps = s->sources[i].gaps;
		st->seq.missing = s->sources[i].missing;
		st->seq.restarts = s->sources[i].restarts;
		st->batches = s->sources[i].batches;
		st->last_recv_ns = s->sources[i].last_recv_ns;
		st->rec_seq = st->seq.last;
		st->rec = s->sources[i].last_record == 1 ? KV_REC_BATCH : s->sources[i].last_record == 2 ? KV_REC_BAD : KV_REC_NONE;
	}
}

void kv_match_restore(struct kv_match *m, const struct kv_snap_restorer *r)
{
	const struct kv_snap *s = r->s;
	for (size_t p = 0; p < s->npartitions; p++)
		load_content(m, s, (uint32_t)p, r->partition[p]);
	for (size_t i = 0; i < s->noffload; i++) {
		const struct kv_snap_offload *o = &s->offload[i];
		bool added;
		struct kv_offload *k = kv_offloads_upsert(&kv_match_partition(m, r->partition[o->partition])->offload,
							  o->ehash, &added);
		*k = (struct kv_offload){ o->ehash, o->chain, o->parent, o->local, o->t, 0, false };
	}
	for (size_t i = 0; i < s->npending; i++) {
		const struct kv_snap_pending *p = &s->pending[i];
		if (r->worker[p->worker] != KV_NO_WORKER)
			kv_pending_add(&m->pending, r->partition[p->partition], p->ehash, r->worker[p->worker],
				       (enum kv_medium)p->medium, p->t);
	}
	load_sources(m, s);
	if (s->stream) {
		m->has_position = true;
		m->position = s->stream->last_seq;
	}
	if (s->stream_id) {
		size_t n;
		const char *name = kv_snap_string(s, s->stream_id->name, &n);
		kv_match_set_stream(m, name, n, s->stream_id->created_ns);
	}
	if (s->meta->now_ns > m->now) {
		m->now = s->meta->now_ns;
		m->next_sweep = s->meta->next_sweep_ns;
	}
}

/* ---- checking ------------------------------------------------------------ */

/* Entries are stamped with the event time they arrived at, which never
 * passes the event time reached: a later time would keep an entry past
 * its TTL, or past --max-pending's order, once resumed. */
#define AFTER_NOW(name, i) \
	kv_err_set(e, KV_EX_DATAERR, name " %llu: time after the event time reached", (unsigned long long)(i))

static bool check_content(const struct kv_snap *s, const struct kv_snap_partition *rp, struct kv_err *e)
{
	const struct kv_snap_range *r = &rp->r[KV_RANGE_CONTENT];
	for (uint64_t i = r->first; i < r->first + r->count; i++) {
		if (i > r->first && s->content[i].chain <= s->content[i - 1].chain)
			return kv_err_set(e, KV_EX_DATAERR, "content %llu: out of order", (unsigned long long)i);
		if (s->content[i].t > s->meta->now_ns)
			return AFTER_NOW("content", i);
	}
	return true;
}

/* Records that carry (partition, key) must be in range and sorted by both. */
#define CHECK_KEYED(name, arr, n, keyfield)                                                            \
	for (size_t i = 0; i < (n); i++) {                                                             \
		if ((arr)[i].partition >= s->npartitions)                                            \
			return kv_err_set(e, KV_EX_DATAERR, name " %zu: partition out of range", i);           \
		if (i > 0 && ((arr)[i].partition < (arr)[i - 1].partition ||                       \
			      ((arr)[i].partition == (arr)[i - 1].partition &&                     \
			       (arr)[i].keyfield <= (arr)[i - 1].keyfield)))                       \
			return kv_err_set(e, KV_EX_DATAERR, name " %zu: out of order", i);                      \
	}

/* The latest time the matcher's state holds: when its entries arrived,
 * and when each source's last record did; 0 when it holds none. */
static uint64_t latest_time(const struct kv_snap *s)
{
	uint64_t t = 0;
	for (size_t i = 0; i < s->ncontent; i++)
		t = s->content[i].t > t ? s->content[i].t : t;
	for (size_t i = 0; i < s->noffload; i++)
		t = s->offload[i].t > t ? s->offload[i].t : t;
	if (s->npending) /* in arrival order */
		t = s->pending[s->npending - 1].t > t ? s->pending[s->npending - 1].t : t;
	for (size_t i = 0; i < s->nsources; i++)
		t = s->sources[i].last_recv_ns > t ? s->sources[i].last_recv_ns : t;
	return t;
}

/* The times of META, as a resumed kvmatch would take them (every other
 * time is at or before now_ns, checked with its section): TTLs an option
 * can give; a next sweep within one sweep interval of the event time
 * reached (2^64-1 stopped sweeps for good, offloads and content piling up);
 * and an event time reached that the state's own times vouch for, by the
 * rule a record's time is judged by (kv_time_far_after): a now_ns beyond
 * the latest time held by more than the longest TTL would expire all of it
 * at once, and be written into every later snapshot. */
static bool check_times(const struct kv_snap *s, struct kv_err *e)
{
	const struct kv_snap_meta *m = s->meta;
	static const char *const ttl_names[] = { "pending_ttl_ns", "offload_ttl_ns", "content_ttl_ns" };
	const uint64_t ttl[] = { m->pending_ttl_ns, m->offload_ttl_ns, m->content_ttl_ns };
	for (int i = 0; i < 3; i++)
		if (ttl[i] > KV_TTL_MAX_NS)
			return kv_err_set(e, KV_EX_DATAERR, "META: %s %llu is beyond %llu (10^9 s, the longest TTL kvmatch takes)",
					  ttl_names[i], (unsigned long long)ttl[i], KV_TTL_MAX_NS);
	if (kv_time_far_after(m->next_sweep_ns, m->now_ns, KV_SWEEP_INTERVAL_NS))
		return kv_err_set(e, KV_EX_DATAERR,
				  "META: next_sweep_ns %llu is more than %llu s after the event time reached (now_ns %llu)",
				  (unsigned long long)m->next_sweep_ns, KV_SWEEP_INTERVAL_NS / 1000000000ull,
				  (unsigned long long)m->now_ns);
	uint64_t latest = latest_time(s), limit = kv_time_jump_limit(ttl[0], ttl[1], ttl[2]);
	bool holds = s->ncontent || s->noffload || s->npending || s->nsources;
	if (holds && kv_time_far_after(m->now_ns, latest, limit))
		return kv_err_set(e, KV_EX_DATAERR,
				  "META: now_ns %llu is a suspect time: more than the longest TTL (%g s) after the latest "
				  "time the snapshot holds (%llu)",
				  (unsigned long long)m->now_ns, (double)limit / 1e9, (unsigned long long)latest);
	return true;
}

/* Source i after source i-1 in the order they are saved in (by src,
 * bytewise, as save_sources sorts them), so no source is there twice: two
 * of one name would be one once restored, its counts those of either. */
static bool source_after(const struct kv_snap *s, size_t i)
{
	size_t a, b;
	const char *x = kv_snap_string(s, s->sources[i - 1].src, &a), *y = kv_snap_string(s, s->sources[i].src, &b);
	int c = memcmp(x, y, a < b ? a : b);
	return c < 0 || (c == 0 && a < b);
}

bool kv_match_check_snap(const struct kv_snap *s, struct kv_err *e)
{
	for (size_t p = 0; p < s->npartitions; p++)
		if (!check_content(s, &s->partitions[p], e))
			return false;
	CHECK_KEYED("offload", s->offload, s->noffload, ehash)
	for (size_t i = 0; i < s->noffload; i++)
		if (s->offload[i].t > s->meta->now_ns)
			return AFTER_NOW("offload", i);
	for (size_t i = 0; i < s->npending; i++) {
		const struct kv_snap_pending *p = &s->pending[i];
		if (p->partition >= s->npartitions || p->worker >= s->nworkers || p->medium >= KV_NMEDIA)
			return kv_err_set(e, KV_EX_DATAERR, "pending %zu: out of range", i);
		/* arrival order: an entry's time is the event time it arrived at */
		if (i > 0 && p->t < s->pending[i - 1].t)
			return kv_err_set(e, KV_EX_DATAERR, "pending %zu: out of order", i);
		if (p->t > s->meta->now_ns)
			return AFTER_NOW("pending", i);
	}
	/* a source's last batch arrived at or before the event time reached */
	for (size_t i = 0; i < s->nsources; i++)
		if (!kv_snap_str_ok(s, s->sources[i].src) || s->sources[i].seen > 1 || s->sources[i].last_recv_ns > s->meta->now_ns ||
		    s->sources[i].last_record > 2 || (s->sources[i].last_record && !s->sources[i].seen))
			return kv_err_set(e, KV_EX_DATAERR, "source %zu: bad record", i);
	for (size_t i = 1; i < s->nsources; i++)
		if (!source_after(s, i))
			return kv_err_set(e, KV_EX_DATAERR, "source %zu: out of order or repeated", i);
	if (s->stream_id && !kv_snap_str_ok(s, s->stream_id->name))
		return kv_err_set(e, KV_EX_DATAERR, "stream name: out of range");
	return check_times(s, e);
}

/* ---- dumping ------------------------------------------------------------- */

static void dump_content(const struct kv_snap *s, uint32_t p, struct kv_out *o)
{
	const struct kv_snap_range *r = &s->partitions[p].r[KV_RANGE_CONTENT];
	for (uint64_t i = r->first; i < r->first + r->count; i++) {
		const struct kv_snap_content *c = &s->content[i];
		struct jw w;
		jw_begin(&w, o);
		kv_snap_put_kind_partition(&w, "content", p);
		kv_snap_put_hash_field(&w, ",\"chain\":", c->chain);
		kv_snap_put_hash_field(&w, ",\"parent\":", c->parent);
		kv_snap_put_hash_field(&w, ",\"local\":", c->local);
		kv_snap_put_u64_field(&w, ",\"t\":", c->t);
		jw_put_lit(&w, "}\n");
		jw_end(&w);
	}
}

static void dump_offload(const struct kv_snap_offload *f, struct kv_out *o)
{
	struct jw w;
	jw_begin(&w, o);
	kv_snap_put_kind_partition(&w, "offload", f->partition);
	kv_snap_put_hash_field(&w, ",\"hash\":", f->ehash);
	kv_snap_put_hash_field(&w, ",\"chain\":", f->chain);
	kv_snap_put_u64_field(&w, ",\"t\":", f->t);
	jw_put_lit(&w, "}\n");
	jw_end(&w);
}

static void dump_pending(const struct kv_snap *s, const struct kv_snap_pending *p, struct kv_out *o)
{
	struct jw w;
	jw_begin(&w, o);
	kv_snap_put_kind_partition(&w, "pending", p->partition);
	kv_snap_put_hash_field(&w, ",\"hash\":", p->ehash);
	jw_put_char(&w, ',');
	kv_snap_put_who(&w, s, &s->workers[p->worker]);
	jw_put_lit(&w, ",\"medium\":\"");
	jw_put_lit(&w, kv_medium_name((enum kv_medium)p->medium));
	jw_put_char(&w, '"');
	kv_snap_put_u64_field(&w, ",\"t\":", p->t);
	jw_put_lit(&w, "}\n");
	jw_end(&w);
}

static void dump_source(const struct kv_snap *s, const struct kv_snap_source *r, struct kv_out *o)
{
	struct jw w;
	jw_begin(&w, o);
	jw_put_lit(&w, "{\"kind\":\"source\",\"src\":");
	kv_snap_put_str(&w, s, r->src);
	jw_put_lit(&w, ",\"last_seq\":");
	if (r->seen)
		jw_put_u64(&w, r->last_seq);
	else
		jw_put_lit(&w, "null");
	kv_snap_put_u64_field(&w, ",\"batches\":", r->batches);
	kv_snap_put_u64_field(&w, ",\"last_recv_ns\":", r->last_recv_ns);
	kv_snap_put_u64_field(&w, ",\"gaps\":", r->gaps);
	kv_snap_put_u64_field(&w, ",\"restarts\":", r->restarts);
	jw_put_lit(&w, "}\n");
	jw_end(&w);
}

static void dump_stream(const struct kv_snap *s, struct kv_out *o)
{
	struct jw w;
	jw_begin(&w, o);
	kv_snap_put_u64_field(&w, "{\"kind\":\"stream\",\"last_seq\":", s->stream->last_seq);
	if (s->stream_id) {
		jw_put_lit(&w, ",\"stream\":");
		kv_snap_put_str(&w, s, s->stream_id->name);
		kv_snap_put_u64_field(&w, ",\"created_ns\":", s->stream_id->created_ns);
	}
	jw_put_lit(&w, "}\n");
	jw_end(&w);
}

void kv_match_dump_snap(const struct kv_snap *s, struct kv_out *o)
{
	for (size_t p = 0; p < s->npartitions; p++)
		dump_content(s, (uint32_t)p, o);
	for (size_t i = 0; i < s->noffload; i++)
		dump_offload(&s->offload[i], o);
	for (size_t i = 0; i < s->npending; i++)
		dump_pending(s, &s->pending[i], o);
	for (size_t i = 0; i < s->nsources; i++)
		dump_source(s, &s->sources[i], o);
	if (s->stream)
		dump_stream(s, o);
}

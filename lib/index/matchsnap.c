/* The matcher's sections of a snapshot (kvsnap(5)): its event time and
 * options (META), released content per partition, engine offloads, the
 * pending pool in arrival order, sources, and the stream position; saved
 * once the orders of partitions and workers are set (which they follow),
 * while the last partition's engine hashes are placed (snapstate.c), and
 * loaded after the index's sections. */
#define _GNU_SOURCE /* qsort_r */
#include "index/matchstate.h"
#include "index/snap.h"
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
	return strcmp(s->v[*(const uint32_t *)x].src, s->v[*(const uint32_t *)y].src);
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
		struct kv_snap_source r = { kv_snapw_string(w, st->src), st->seq.seen, last_record,
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
			struct kv_snap_stream_id id = { kv_snapw_string(w, m->stream), m->stream_created };
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

void kv_match_load(struct kv_match *m, const struct kv_snap_reader *r)
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

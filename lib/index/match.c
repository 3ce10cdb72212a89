#include "index/matchstate.h"
#include "index/blockhash.h"
#include "base/optval.h"
#include "base/util.h"
#include "decode/kvcap.h"

#include <stdlib.h>
#include <string.h>

static const char *const state_names[KV_NSTATES] = {
	"received", "parsed", "queued", "offload_cached", "matched", "confirmed", "applied", "dropped",
	"pending_expired",
};
static const char *const reason_names[KV_NREASONS] = {
	"", "non_full_attention", "block_size_mismatch", "no_hashes", "parent_not_found",
	"unknown_backend", "unknown_hash", "duplicate", "decode_error", "max_pending", "source_limit",
	"worker_limit", "partition_limit", "holder_limit", "bad_block_size", "hashes_beyond_tokens",
};

const char *kv_state_name(enum kv_state s) { return s < KV_NSTATES ? state_names[s] : "?"; }
const char *kv_reason_name(enum kv_reason r) { return r < KV_NREASONS ? reason_names[r] : "?"; }

const char *kv_state_mask_parse(const char *s, unsigned *mask)
{
	if (strcmp(s, "all") == 0) {
		*mask = (1u << KV_NSTATES) - 1;
		return NULL;
	}
	*mask = 0;
	if (strcmp(s, "none") == 0)
		return NULL;
	struct kv_span names[KV_NSTATES];
	size_t n;
	const char *why = kv_list_flaw(s, ',', names, KV_NSTATES, &n);
	if (why)
		return why;
	unsigned m = 0;
	for (size_t k = 0; k < n; k++) {
		int found = -1;
		for (int i = 0; i < KV_NSTATES; i++)
			if (strlen(state_names[i]) == names[k].n && memcmp(names[k].p, state_names[i], names[k].n) == 0)
				found = i;
		if (found < 0)
			return "a name that is no state";
		m |= 1u << found;
	}
	*mask = m;
	return NULL;
}

void kv_match_init(struct kv_match *m, struct kv_index *ix, struct kv_workers *ws, const struct kv_match_opts *o)
{
	memset(m, 0, sizeof *m);
	m->ix = ix;
	m->ws = ws;
	m->o = *o;
	kv_srcstats_init(&m->sources);
}

struct kv_match *kv_match_new(struct kv_index *ix, struct kv_workers *ws, const struct kv_match_opts *o)
{
	struct kv_match *m = kv_xmalloc(sizeof *m);
	kv_match_init(m, ix, ws, o);
	return m;
}

static void pmatch_free(struct kv_pmatch *pm)
{
	kv_offloads_free(&pm->offload);
	kv_contents_free(&pm->content);
}

void kv_match_free(struct kv_match *m)
{
	for (size_t i = 0; i < m->npm; i++)
		pmatch_free(&m->pm[i]);
	free(m->pm);
	kv_pending_free(&m->pending);
	kv_srcstats_free(&m->sources);
	free(m->local);
	free(m->chain);
	free(m->targets);
	free(m->srcbuf);
	free(m->expired_by_worker);
	free(m->stream);
	memset(m, 0, sizeof *m);
}

void kv_match_delete(struct kv_match *m)
{
	if (!m)
		return;
	kv_match_free(m);
	free(m);
}

void kv_match_create_registered(struct kv_match *m)
{
	for (size_t i = 0; i < m->ws->n; i++) {
		const struct kv_worker *w = &m->ws->v[i];
		if (w->inferred || !w->model)
			continue;
		const char *tenant = w->tenant ? w->tenant : "default";
		uint32_t part = kv_index_partition_bounded(m->ix, w->model, strlen(w->model), tenant, strlen(tenant));
		if (part != KV_NO_PARTITION && !m->ix->p[part].block_size)
			m->ix->p[part].block_size = w->block_size;
	}
}

struct kv_pmatch *kv_match_partition(struct kv_match *m, uint32_t part)
{
	if (part >= m->npm) {
		size_t cap = m->npm;
		m->pm = kv_xgrow(m->pm, &cap, part + 1, sizeof *m->pm);
		memset(m->pm + m->npm, 0, (cap - m->npm) * sizeof *m->pm);
		m->npm = cap;
	}
	return &m->pm[part];
}

/* ---- evidence per source (--diagnose, --metrics) ------------------------- */

_Static_assert(KV_NREASONS <= KV_SRCDIAG_REASONS, "kv_srcdiag.drops is too small");

static struct kv_srcdiag *cur_diag(struct kv_match *m)
{
	return m->cur ? &m->sources.v[m->cur - 1].d : &m->nodiag;
}

static void count_expired(struct kv_match *m, const uint32_t *workers, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (workers[i] >= m->capexpired) {
			size_t old = m->capexpired;
			m->expired_by_worker = kv_xgrow(m->expired_by_worker, &m->capexpired, workers[i] + 1,
							sizeof *m->expired_by_worker);
			memset(m->expired_by_worker + old, 0, (m->capexpired - old) * sizeof *m->expired_by_worker);
		}
		m->expired_by_worker[workers[i]]++;
	}
}

uint64_t kv_match_expired_for(const struct kv_match *m, uint32_t w)
{
	return w < m->capexpired ? m->expired_by_worker[w] : 0;
}

/* What a source's stores say about it: their hash forms and a sample. */
static void note_hashes(struct kv_srcdiag *d, const struct kv_event *e)
{
	d->hash_forms |= e->hash_forms;
	if (!d->has_sample && e->nhashes) {
		d->sample_hash = e->hashes[0];
		d->has_sample = true;
	}
}

static void note_lag(struct kv_srcdiag *d, const struct kv_event *e)
{
	double ts = e->ts_kind == KV_TS_SECONDS ? e->ts : e->ts_kind == KV_TS_MS ? (double)e->ts_ms / 1e3 : 0;
	if (e->ts_kind == KV_TS_NONE || ts <= 0)
		return;
	double lag = (double)e->recv_ns / 1e9 - ts;
	d->lag_sum += lag;
	d->lag_last = lag;
	if (d->lag_n++ == 0 || lag > d->lag_max)
		d->lag_max = lag;
}

static void note_backend(struct kv_srcdiag *d, const struct kv_event *e)
{
	char id[48];
	if (e->has & KV_HAS_BACKEND_ID)
		snprintf(id, sizeof id, "%.*s", (int)(e->backend_id.n < 47 ? e->backend_id.n : 47), e->backend_id.p);
	else
		id[0] = 0;
	for (unsigned i = 0; i < d->nbackend_ids; i++)
		if (strcmp(d->backend_ids[i], id) == 0)
			return;
	if (d->nbackend_ids < KV_SRCDIAG_BACKENDS)
		memcpy(d->backend_ids[d->nbackend_ids++], id, sizeof id);
}

/* ---- reporting ----------------------------------------------------------- */

struct rep {
	const struct kv_wire_ctx *ctx;
	uint32_t part;
};

static void report(struct kv_match *m, const struct rep *r, enum kv_state state, enum kv_reason reason,
		   const uint64_t *hash, int medium, const uint32_t *workers, size_t nworkers, uint64_t count)
{
	m->st.states[state]++;
	if (state == KV_ST_DROPPED) {
		m->st.reasons[reason]++;
		cur_diag(m)->drops[reason]++;
	} else if (state == KV_ST_PENDING_EXPIRED) {
		count_expired(m, workers, nworkers);
		if (reason == KV_R_MAX_PENDING)
			m->st.max_pending_expired += count;
	}
	if (!(m->o.log_mask & (1u << state)) || !m->o.report)
		return;
	struct kv_report rp = {
		.state = state, .reason = reason, .ctx = r->ctx, .now = m->now,
		.has_hash = hash != NULL, .hash = hash ? *hash : 0,
		.has_medium = medium >= 0, .medium = medium >= 0 ? (enum kv_medium)medium : KV_UNKNOWN,
		.workers = workers, .nworkers = nworkers, .count = count, .partition = r->part,
	};
	m->o.report(m->o.report_arg, &rp);
}

static void drop_hashes(struct kv_match *m, const struct rep *r, const struct kv_event *e, enum kv_reason why,
			const uint32_t *w, size_t nw)
{
	if (e->nhashes == 0) {
		report(m, r, KV_ST_DROPPED, why, NULL, (int)e->medium, w, nw, 0);
		return;
	}
	for (size_t i = 0; i < e->nhashes; i++)
		report(m, r, KV_ST_DROPPED, why, &e->hashes[i], (int)e->medium, w, nw, 0);
}

/* Holders the index refused since `before` (their block had KV_MAX_HOLDERS
 * already): one dropped line for the hash, counting them; false if none. */
static bool note_refused(struct kv_match *m, const struct rep *r, uint64_t before, uint64_t hash, int medium)
{
	uint64_t n = m->ix->refused - before;
	if (n)
		report(m, r, KV_ST_DROPPED, KV_R_HOLDER_LIMIT, &hash, medium, NULL, 0, n);
	return n > 0;
}

/* ---- content: what an engine hash names ----------------------------------- */

struct content {
	uint64_t chain, parent, local;
};

static void content_keep(struct kv_match *m, uint32_t part, uint64_t chain, uint64_t parent, uint64_t local)
{
	bool added;
	struct kv_content *c = kv_contents_upsert(&kv_match_partition(m, part)->content, chain, &added);
	c->parent = parent;
	c->local = local;
	c->t = m->now;
}

static void on_freed(void *arg, uint32_t part, const struct kv_block *b)
{
	content_keep(arg, part, b->key, b->parent, b->local);
}

/* Whether something stamped t is younger than ttl at event time now.
 * Said without t + ttl, which wraps for a t near 2^64 (a recv_ns of
 * 2^64-1 would expire at once). */
static bool live(uint64_t t, uint64_t ttl, uint64_t now)
{
	return now < t || now - t < ttl;
}

/* Whether o is an offload still waiting for its pool (within --offload-ttl). */
static bool offload_live(const struct kv_match *m, const struct kv_offload *o)
{
	return o && live(o->t, m->o.offload_ttl_ns, m->now);
}

/* The content of chain: from the block that holds it, or the content cache. */
static bool chain_content(struct kv_match *m, uint32_t part, uint64_t chain, struct content *c)
{
	struct kv_block *b = kv_blocks_find(&m->ix->p[part].blocks, chain);
	if (b) {
		*c = (struct content){ chain, b->parent, b->local };
		return true;
	}
	struct kv_content *k = kv_contents_find(&kv_match_partition(m, part)->content, chain);
	if (k && live(k->t, m->o.content_ttl_ns, m->now)) {
		*c = (struct content){ chain, k->parent, k->local };
		return true;
	}
	return false;
}

/* What ehash names, from the engine-hash map (block or cached content). */
static bool known_content(struct kv_match *m, uint32_t part, uint64_t ehash, struct content *c)
{
	struct kv_ehash *e = kv_ehashes_find(&m->ix->p[part].ehashes, ehash);
	return e && chain_content(m, part, e->chain, c);
}

/* The chain an engine hash names, for resolving a parent: the mapping of a
 * hash to its chain never changes, so a stale entry still answers. */
static bool chain_of(struct kv_match *m, uint32_t part, uint64_t ehash, uint64_t *chain)
{
	struct kv_ehash *e = kv_ehashes_find(&m->ix->p[part].ehashes, ehash);
	if (e) {
		*chain = e->chain;
		return true;
	}
	struct kv_offload *o = kv_offloads_find(&kv_match_partition(m, part)->offload, ehash);
	if (offload_live(m, o)) {
		*chain = o->chain;
		return true;
	}
	return false;
}

static void learn(struct kv_match *m, uint32_t part, uint64_t ehash, uint64_t chain)
{
	bool added;
	struct kv_ehash *e = kv_ehashes_upsert(&m->ix->p[part].ehashes, ehash, &added);
	if (!added && e->chain != chain)
		kv_match_partition(m, part)->renamed = true;
	e->chain = chain;
}

/* Whether the engine-hash map still names o's chain by o's hash, as it did
 * when o was cached: no name has changed since, and a sweep forgets no name
 * whose offload is live. */
static bool named_already(const struct kv_pmatch *pm, const struct kv_offload *o)
{
	return o->named && !pm->renamed;
}

/* ---- pending pool -------------------------------------------------------- */

/* Reports the entries of one hash leaving the pool, grouped by medium. */
static void report_entries(struct kv_match *m, const struct rep *r, enum kv_state state, enum kv_reason why,
			   uint64_t ehash, const uint32_t *workers, const uint8_t *media, size_t n)
{
	uint32_t *group = kv_xgrow(m->targets, &m->captargets, n ? n : 1, sizeof *m->targets);
	m->targets = group;
	for (unsigned med = 0; med < KV_NMEDIA + 1; med++) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (media[i] == med)
				group[k++] = workers[i];
		if (k)
			report(m, r, state, why, &ehash, (int)med, group, k, k);
	}
}

/* Expires the oldest pending entries of all partitions: those past the
 * TTL, and as many as it takes to get back under --max-pending. */
static void pending_expire(struct kv_match *m)
{
	struct kv_pend_group g;
	while (kv_pending_expire(&m->pending, m->now, m->o.pending_ttl_ns, m->o.max_pending, &g)) {
		struct rep r = { NULL, g.part };
		report_entries(m, &r, KV_ST_PENDING_EXPIRED, g.by_ttl ? KV_R_NONE : KV_R_MAX_PENDING, g.ehash, g.workers,
			       g.media, g.n);
	}
}

/* ---- sweeps of cached content and stale engine hashes --------------------- */

/* What is stamped at or before event time now minus ttl. */
struct too_old {
	uint64_t ttl, now;
};

static bool offload_too_old(struct kv_offload *o, void *arg)
{
	const struct too_old *a = arg;
	return !live(o->t, a->ttl, a->now);
}

static bool content_too_old(struct kv_content *c, void *arg)
{
	const struct too_old *a = arg;
	return !live(c->t, a->ttl, a->now);
}

/* Removes the offloads not confirmed within --offload-ttl and the content
 * kept longer than --content-ttl; returns how many went. */
static size_t expire_cached(struct kv_match *m, struct kv_pmatch *pm)
{
	struct too_old offload = { m->o.offload_ttl_ns, m->now }, content = { m->o.content_ttl_ns, m->now };
	return kv_offloads_remove_if(&pm->offload, offload_too_old, &offload) +
	       kv_contents_remove_if(&pm->content, content_too_old, &content);
}

/* Whether an engine hash still names something: a block, content kept for
 * a later store, or an offload still waiting for its pool. */
static bool names_something(struct kv_match *m, uint32_t part, const struct kv_ehash *e)
{
	struct content c;
	if (chain_content(m, part, e->chain, &c))
		return true;
	struct kv_offload *o = kv_offloads_find(&m->pm[part].offload, e->key);
	return offload_live(m, o);
}

struct names_in {
	struct kv_match *m;
	uint32_t part;
};

static bool names_nothing(struct kv_ehash *e, void *arg)
{
	const struct names_in *in = arg;
	return !names_something(in->m, in->part, e);
}

/* Forgets the engine hashes that name nothing any more. */
static void forget_stale_names(struct kv_match *m, uint32_t part)
{
	struct names_in in = { m, part };
	kv_ehashes_remove_if(&m->ix->p[part].ehashes, names_nothing, &in);
}

static void sweep_partition(struct kv_match *m, uint32_t part)
{
	struct kv_pmatch *pm = kv_match_partition(m, part);
	struct kv_partition *p = &m->ix->p[part];
	/* Every name is learned from a store: one whose offload expired
	 * unconfirmed, or whose released content expired, may name nothing now. */
	size_t gone = expire_cached(m, pm);
	p->stale_possible |= gone > 0;
	/* Look for such names each time the map has doubled since the last look
	 * (which keeps the cost linear), and only when something expired since:
	 * before that, every name names.  So the map holds at most twice the
	 * names in use plus 1024, whether blocks are released (content) or
	 * offloads never confirmed. */
	if (!p->stale_possible || kv_ehashes_count(&p->ehashes) <= 2 * p->ehash_mark + 1024)
		return;
	forget_stale_names(m, part);
	p->ehash_mark = kv_ehashes_count(&p->ehashes);
	p->stale_possible = false;
}

void kv_match_advance(struct kv_match *m, uint64_t t)
{
	if (t <= m->now)
		return;
	m->now = t;
	pending_expire(m);
	if (m->now >= m->next_sweep) {
		for (uint32_t part = 0; part < m->ix->n; part++)
			sweep_partition(m, part);
		uint64_t sweeps = m->now / KV_SWEEP_INTERVAL_NS + 1;
		m->next_sweep = sweeps > UINT64_MAX / KV_SWEEP_INTERVAL_NS ? UINT64_MAX : sweeps * KV_SWEEP_INTERVAL_NS;
	}
}

/* ---- records ------------------------------------------------------------- */

/* A replayed batch (with a seq) at or below what its source already
 * delivered live. */
static bool delivered_before(const struct kv_srcstat *src, const struct kv_wire_ctx *ctx)
{
	return ctx->replayed && src->seq.seen && ctx->seq <= src->seq.last;
}

uint64_t kv_time_jump_limit(uint64_t pending_ttl_ns, uint64_t offload_ttl_ns, uint64_t content_ttl_ns)
{
	uint64_t l = pending_ttl_ns;
	l = offload_ttl_ns > l ? offload_ttl_ns : l;
	return content_ttl_ns > l ? content_ttl_ns : l;
}

bool kv_time_far_after(uint64_t t, uint64_t ref, uint64_t limit)
{
	return t > ref && t - ref > limit;
}

/* The event time a record is taken at (kvmatch(1), Time): its recv_ns,
 * unless that lies beyond the event time reached by more than the longest
 * TTL.  Such a record is suspect (one flipped bit of recv_ns would expire
 * everything pending for good) and is taken at the event time reached,
 * unless the record before it was suspect too and stamped within that
 * limit of it at another time: then all sources moved on (a capture
 * resumed hours later) and event time follows, from the second record. */
uint64_t kv_match_record_time(const struct kv_match *m, uint64_t recv_ns, bool *suspect)
{
	uint64_t limit = kv_time_jump_limit(m->o.pending_ttl_ns, m->o.offload_ttl_ns, m->o.content_ttl_ns);
	uint64_t last = m->jump_ns;
	*suspect = false;
	if (m->now == 0 || !kv_time_far_after(recv_ns, m->now, limit))
		return recv_ns;
	if (last && recv_ns != last && !kv_time_far_after(recv_ns, last, limit) && !kv_time_far_after(last, recv_ns, limit))
		return recv_ns;
	*suspect = true;
	return m->now;
}

/* kv_match_record_time, remembering a suspect record for the next one. */
static uint64_t record_time(struct kv_match *m, uint64_t recv_ns, bool *suspect)
{
	uint64_t t = kv_match_record_time(m, recv_ns, suspect);
	m->jump_ns = *suspect ? recv_ns : 0;
	return t;
}

/* Whether this line is one more of the record just seen: event lines (and
 * kvdecode -e's error lines) carry one event or problem each, and those of
 * one record share its source, seq and receive time.  A capture record
 * arrives whole, so this holds only for its further problems and events. */
static bool continues_record(const struct kv_srcstat *src, const struct kv_wire_ctx *ctx, uint64_t t)
{
	return ctx->has_seq && src->rec != KV_REC_NONE && ctx->seq == src->rec_seq && t == src->last_recv_ns;
}

/* A new record arrived from src: its seq is accounted for (gap, restart),
 * unless it is a replayed batch applied live already. */
static void record_arrives(struct kv_srcstat *src, const struct kv_wire_ctx *ctx, uint64_t t, enum kv_rec_state state)
{
	src->last_recv_ns = t;
	src->rec_seq = ctx->seq;
	src->rec = ctx->has_seq ? state : KV_REC_NONE;
	if (!ctx->has_seq)
		return;
	if (delivered_before(src, ctx))
		src->rec = KV_REC_DUPLICATE;
	else
		kv_seq_observe(&src->seq, ctx->seq);
}

/* The record decoded: one batch, counted once however many lines it has. */
static void count_batch(struct kv_match *m, struct kv_srcstat *src, const struct rep *r, size_t nevents)
{
	m->st.records++;
	src->rec = r->ctx->has_seq ? KV_REC_BATCH : KV_REC_NONE;
	src->batches++;
	src->replayed += r->ctx->replayed;
	report(m, r, KV_ST_RECEIVED, KV_R_NONE, NULL, -1, NULL, 0, nevents);
}

/* The source of a record, and the current source for the evidence of its
 * events; NULL for a source beyond KV_MAX_SOURCES (or none named). */
static struct kv_srcstat *record_source(struct kv_match *m, const struct kv_wire_ctx *ctx, uint64_t t)
{
	struct kv_srcstat *src = kv_srcstats_get(&m->sources, ctx->src.p, ctx->src.n);
	m->cur = src ? (size_t)(src - m->sources.v) + 1 : 0;
	if (src && !src->batches && !src->d.first_ns)
		src->d.first_ns = t;
	return src;
}

/* The record's event time, expiry run up to it. */
static uint64_t take_time(struct kv_match *m, const struct kv_wire_ctx *ctx, bool *suspect)
{
	uint64_t t = record_time(m, ctx->recv_ns, suspect);
	kv_match_advance(m, t);
	return t;
}

/* A line of a record from src: a new record is accounted for, its suspect
 * time counted once however many lines it has. */
static void arrive(struct kv_match *m, struct kv_srcstat *src, const struct kv_wire_ctx *ctx, uint64_t t, bool suspect)
{
	if (continues_record(src, ctx, t))
		return;
	record_arrives(src, ctx, t, KV_REC_BAD);
	src->d.time_jumps += suspect;
	m->st.time_jumps += suspect;
}

/* A record from a JetStream stream at or before the position reached:
 * a consumer restarted after its last acknowledgement delivers it again,
 * and it was applied (or refused) already.  Positions only grow within a
 * stream, which is why one kvmatch reads one stream.  Otherwise the
 * position goes with the record, applied or not, so that a resume after it
 * (kvnats -C --after) starts at the next one. */
bool kv_match_stream_duplicate(struct kv_match *m, const struct kv_wire_ctx *ctx, size_t nevents)
{
	if (!ctx->has_position)
		return false;
	if (m->has_position && ctx->position <= m->position) {
		struct rep r = { ctx, 0 };
		m->cur = 0;
		report(m, &r, KV_ST_DROPPED, KV_R_DUPLICATE, NULL, -1, NULL, 0, nevents);
		return true;
	}
	m->has_position = true;
	m->position = ctx->position;
	return false;
}

void kv_match_set_stream(struct kv_match *m, const char *name, size_t len, uint64_t created_ns)
{
	free(m->stream);
	m->stream = kv_xmalloc(len + 1);
	memcpy(m->stream, name, len);
	m->stream[len] = 0;
	m->stream_len = len;
	m->stream_created = created_ns;
}

enum kv_stream_verdict kv_match_stream_begins(struct kv_match *m, const struct kv_cap_stream *st,
					      struct kv_stream_reached *reached)
{
	*reached = (struct kv_stream_reached){ m->stream, m->stream_len, m->stream_created, m->position };
	bool same = m->stream && m->stream_len == st->name_len && memcmp(m->stream, st->name, st->name_len) == 0 &&
		    m->stream_created == st->created_ns;
	if (!m->has_position) {
		/* no position yet: nothing to compare, the stream is this one */
		reached->stream = NULL;
		kv_match_set_stream(m, st->name, st->name_len, st->created_ns);
		return KV_STREAM_OK;
	}
	if (m->stream && !same)
		return KV_STREAM_OTHER;
	enum kv_stream_verdict v = !m->stream ? KV_STREAM_UNCHECKED : st->after > m->position ? KV_STREAM_GAP :
				   KV_STREAM_OK;
	if (!m->stream)
		kv_match_set_stream(m, st->name, st->name_len, st->created_ns);
	return v;
}

bool kv_match_record(struct kv_match *m, const struct kv_wire_ctx *ctx, size_t nevents)
{
	struct rep r = { ctx, 0 };
	bool suspect;
	uint64_t t = take_time(m, ctx, &suspect);
	struct kv_srcstat *src = record_source(m, ctx, t);
	if (!src) {
		/* A source beyond KV_MAX_SOURCES: its batches are not applied. */
		m->st.records++;
		report(m, &r, KV_ST_DROPPED, KV_R_SOURCE_LIMIT, NULL, -1, NULL, 0, nevents);
		return false;
	}
	arrive(m, src, ctx, t, suspect);
	switch (src->rec) {
	case KV_REC_DUPLICATE:
		report(m, &r, KV_ST_DROPPED, KV_R_DUPLICATE, NULL, -1, NULL, 0, nevents);
		return false;
	case KV_REC_BATCH:
		return true;
	default: /* new, or its first lines were problems */
		count_batch(m, src, &r, nevents);
		return true;
	}
}

void kv_match_lost_record(struct kv_match *m, const struct kv_wire_ctx *ctx)
{
	bool suspect;
	uint64_t t = take_time(m, ctx, &suspect);
	struct kv_srcstat *src = ctx->src.n ? record_source(m, ctx, t) : NULL;
	if (src)
		arrive(m, src, ctx, t, suspect);
}

void kv_match_bad_record(struct kv_match *m, const struct kv_wire_ctx *ctx)
{
	struct rep r = { ctx, 0 };
	bool suspect;
	uint64_t t = take_time(m, ctx, &suspect);
	m->cur = 0; /* record_source names it when there is one */
	struct kv_srcstat *src = ctx->src.n ? record_source(m, ctx, t) : NULL;
	if (src) {
		src->errors++;
		/* The record still arrived: its seq counts, or the next batch would
		 * look like a gap (a replayed one already seen changes nothing). */
		arrive(m, src, ctx, t, suspect);
	}
	report(m, &r, KV_ST_DROPPED, KV_R_DECODE_ERROR, NULL, -1, NULL, 0, 0);
}

/* ---- engine events ------------------------------------------------------- */

/* Whether a KV cache group's kind caches full prefixes.  The list of
 * kvmatch(1) "Engine events", sliding_window_mla included: a sliding-window
 * layer caches its window only, MLA or not. */
static bool main_attention(struct kv_str kind)
{
	static const char *const skipped[] = { "slidingwindow", "slidingwindowmla", "chunkedlocalattention", "mamba",
					       "crossattention", "encoderonlyattention" };
	char norm[64];
	size_t n = 0;
	for (size_t i = 0; i < kind.n && n < sizeof norm - 1; i++)
		if (kind.p[i] != '_')
			norm[n++] = (char)(kind.p[i] | ((kind.p[i] >= 'A' && kind.p[i] <= 'Z') ? 0x20 : 0));
	norm[n] = 0;
	for (size_t i = 0; i < sizeof skipped / sizeof skipped[0]; i++)
		if (strcmp(norm, skipped[i]) == 0)
			return false;
	return true;
}

static const char *or_default(const char *s)
{
	return s ? s : "default";
}

/* The partition an event names (a LoRA adapter's blocks: the adapter's),
 * with the salt of the registration (RFC #1403: both are its identity). */
static uint32_t salted_partition(struct kv_match *m, struct kv_str name, const char *salt, const char *tenant,
				 size_t tlen)
{
	char *full = kv_partition_name(name.p, name.n, salt, salt ? strlen(salt) : 0);
	uint32_t part = kv_index_partition_bounded(m->ix, full, strlen(full), tenant, tlen);
	free(full);
	return part;
}

static uint32_t engine_partition(struct kv_match *m, uint32_t w, const struct kv_event *e)
{
	const struct kv_worker *wk = &m->ws->v[w];
	const char *tenant = or_default(wk->tenant);
	if (e->has & KV_HAS_LORA_NAME)
		return salted_partition(m, e->lora_name, wk->salt, tenant, strlen(tenant));
	const char *model = or_default(wk->model);
	return kv_index_partition_bounded(m->ix, model, strlen(model), tenant, strlen(tenant));
}

static void grow_blocks(struct kv_match *m, size_t n)
{
	if (n <= m->capblocks)
		return;
	size_t cap = m->capblocks;
	m->local = kv_xgrow(m->local, &cap, n, sizeof *m->local);
	cap = m->capblocks;
	m->chain = kv_xgrow(m->chain, &cap, n, sizeof *m->chain);
	m->capblocks = cap;
}

/* How many blocks a store's tokens fill, a trailing partial one included. */
static size_t token_blocks(const struct kv_event *e, size_t bs)
{
	return e->ntokens / bs + (e->ntokens % bs != 0);
}

/* Chains of a store that carries tokens; false when its parent is unknown. */
static bool chains_from_tokens(struct kv_match *m, uint32_t part, const struct kv_event *e, size_t bs,
			       size_t *nblocks, uint64_t *parent)
{
	*parent = KV_CHAIN_ROOT;
	if (!e->parent_null && (e->has & KV_HAS_PARENT) && !chain_of(m, part, e->parent, parent))
		return false;
	size_t want = token_blocks(e, bs);
	if (want > e->nhashes)
		want = e->nhashes;
	grow_blocks(m, want);
	*nblocks = kv_block_hashes(e->tokens, e->ntokens, bs, *parent, m->local, m->chain, want);
	return true;
}

/* Chains of a Dynamo store: its blocks' local hashes come with it (their
 * tokens_hash, XXH3-64 seed 1337 of the tokens, the local hash of
 * kvmatch(1) "Partitions and block identity"), one per engine hash. */
static bool chains_from_locals(struct kv_match *m, uint32_t part, const struct kv_event *e, size_t *nblocks,
			       uint64_t *parent)
{
	*parent = KV_CHAIN_ROOT;
	if (!e->parent_null && (e->has & KV_HAS_PARENT) && !chain_of(m, part, e->parent, parent))
		return false;
	size_t n = e->ntokens_hashes < e->nhashes ? e->ntokens_hashes : e->nhashes;
	grow_blocks(m, n);
	memcpy(m->local, e->tokens_hashes, n * sizeof *m->local);
	kv_chain_hashes(*parent, m->local, m->chain, n);
	*nblocks = n;
	return true;
}

static size_t expected_block_size(struct kv_match *m, uint32_t w, uint32_t part, const struct kv_event *e,
				  bool *mismatch)
{
	uint32_t reg = m->ws->v[w].block_size;
	struct kv_partition *p = &m->ix->p[part];
	uint32_t expect = reg ? reg : p->block_size;
	*mismatch = false;
	if ((e->has & KV_HAS_BLOCK_SIZE) && e->block_size == 0)
		return 0; /* with tokens: no size at all, whatever is registered */
	if (!(e->has & KV_HAS_BLOCK_SIZE)) {
		if (expect)
			return expect;
		return e->nhashes && e->ntokens % e->nhashes == 0 ? e->ntokens / e->nhashes : 0;
	}
	if (expect && (uint64_t)e->block_size != expect) {
		*mismatch = true;
		return 0;
	}
	if (!p->block_size && e->block_size <= UINT32_MAX)
		p->block_size = (uint32_t)e->block_size;
	return (size_t)e->block_size;
}

/* Applies pending pool entries waiting for ehash, now that its content is known. */
static bool match_pending(struct kv_match *m, const struct rep *r, uint32_t part, uint64_t ehash,
			  const struct content *c)
{
	if (!kv_pending_waits(&m->pending, part, ehash))
		return false;
	struct kv_pend_group g;
	kv_pending_take(&m->pending, part, ehash, &g);
	uint64_t refused = m->ix->refused;
	for (size_t i = 0; i < g.n; i++)
		kv_index_hold(m->ix, part, c->chain, c->parent, c->local, g.workers[i], g.media[i]);
	learn(m, part, ehash, c->chain);
	report_entries(m, r, KV_ST_MATCHED, KV_R_NONE, ehash, g.workers, g.media, g.n);
	note_refused(m, r, refused, ehash, -1);
	cur_diag(m)->offload_met += g.n > 0;
	return g.n > 0;
}

/* An engine offload (cpu/disk) block: matched with a waiting pool event, or
 * cached; named: the engine-hash map names c's chain by ehash. */
static void engine_offload_block(struct kv_match *m, const struct rep *r, uint32_t part, uint64_t ehash,
				 const struct content *c, enum kv_medium medium, bool named)
{
	if (match_pending(m, r, part, ehash, c))
		return;
	bool added;
	struct kv_offload *o = kv_offloads_upsert(&kv_match_partition(m, part)->offload, ehash, &added);
	*o = (struct kv_offload){ ehash, c->chain, c->parent, c->local, m->now, (uint32_t)m->cur, named };
	report(m, r, KV_ST_OFFLOAD_CACHED, KV_R_NONE, &ehash, (int)medium, NULL, 0, 0);
}

/* The start of a source's stream, where missing parents are expected. */
#define KV_EARLY_NS (10ull * 1000000000ull)

/* How far ahead the loops over an event's blocks fetch table slots.  A
 * slot found through another (the block an engine hash names) is fetched
 * half as far ahead, once the first slot has arrived. */
#define PREFETCH 8

/* Slots of the engine hashes [from, to) of an event, fetched ahead. */
KV_PREFETCHING void fetch_names(const struct kv_partition *p, const uint64_t *hashes, size_t from,
				size_t to)
{
	for (size_t i = from; i < to; i++)
		kv_ehashes_prefetch(&p->ehashes, hashes[i]);
}

/* What the lookups of hash i of an event of n hashes need next: the slot
 * of the name PREFETCH on (the first ones at i 0: an event starts cold),
 * and the block of the name half as far on, whose slot has arrived. */
KV_PREFETCHING void fetch_named_ahead(const struct kv_partition *p, const uint64_t *hashes, size_t n,
				      size_t i)
{
	if (i == 0)
		fetch_names(p, hashes, 0, n < PREFETCH ? n : PREFETCH);
	if (i + PREFETCH < n)
		kv_ehashes_prefetch(&p->ehashes, hashes[i + PREFETCH]);
	if (i + PREFETCH / 2 < n) {
		const struct kv_ehash *ahead = kv_ehashes_find_const(&p->ehashes, hashes[i + PREFETCH / 2]);
		if (ahead)
			kv_blocks_prefetch_run(&p->blocks, ahead->chain);
	}
}

/* The slots a store of block chain named ehash will touch. */
KV_PREFETCHING void fetch_stored(const struct kv_partition *p, const struct kv_pmatch *pm, uint64_t chain,
				 uint64_t ehash, bool offload)
{
	kv_ehashes_prefetch(&p->ehashes, ehash);
	if (offload)
		kv_offloads_prefetch(&pm->offload, ehash);
	else
		kv_blocks_prefetch_run(&p->blocks, chain);
}

static void engine_stored(struct kv_match *m, const struct rep *r, uint32_t w, uint32_t part, const struct kv_event *e)
{
	enum kv_medium medium = e->medium == KV_UNKNOWN ? KV_XPU : e->medium;
	bool offload = medium != KV_XPU;
	struct kv_srcdiag *d = cur_diag(m);
	note_hashes(d, e);
	*(offload ? &d->offload_blocks : &d->xpu_blocks) += e->nhashes;
	if (e->ntokens > 0 || e->ntokens_hashes > 0) {
		size_t nblocks;
		uint64_t parent;
		bool found;
		if (e->ntokens > 0) {
			bool mismatch;
			size_t bs = expected_block_size(m, w, part, e, &mismatch);
			if (mismatch) {
				d->bs_got = e->block_size;
				d->bs_want = m->ws->v[w].block_size ? m->ws->v[w].block_size : m->ix->p[part].block_size;
				drop_hashes(m, r, e, KV_R_BLOCK_SIZE_MISMATCH, &w, 1);
				return;
			}
			/* Tokens cut into blocks of 0 tokens, or of a size nothing says:
			 * no block can be named. */
			if (!bs) {
				drop_hashes(m, r, e, KV_R_BAD_BLOCK_SIZE, &w, 1);
				return;
			}
			found = chains_from_tokens(m, part, e, bs, &nblocks, &parent);
		} else {
			found = chains_from_locals(m, part, e, &nblocks, &parent);
		}
		if (!found) {
			/* Parents stored before a capture began are never seen: tell those apart. */
			if (live(d->first_ns, KV_EARLY_NS, e->recv_ns))
				d->pnf_early += e->nhashes ? e->nhashes : 1;
			drop_hashes(m, r, e, KV_R_PARENT_NOT_FOUND, &w, 1);
			return;
		}
		struct kv_partition *p = &m->ix->p[part];
		struct kv_pmatch *pm = kv_match_partition(m, part);
		/* Blocks of an event land all over the tables: fetch ahead, the
		 * first ones too (an event starts cold). */
		for (size_t i = 0; i < nblocks && i < PREFETCH; i++)
			fetch_stored(p, pm, m->chain[i], e->hashes[i], offload);
		for (size_t i = 0; i < nblocks; i++) {
			if (i + PREFETCH < nblocks)
				fetch_stored(p, pm, m->chain[i + PREFETCH], e->hashes[i + PREFETCH], offload);
			struct content c = { m->chain[i], i ? m->chain[i - 1] : parent, m->local[i] };
			if (offload) {
				learn(m, part, e->hashes[i], c.chain);
				engine_offload_block(m, r, part, e->hashes[i], &c, medium, true);
				continue;
			}
			uint64_t refused = m->ix->refused;
			kv_index_hold(m->ix, part, c.chain, c.parent, c.local, w, KV_XPU);
			learn(m, part, e->hashes[i], c.chain);
			if (!note_refused(m, r, refused, e->hashes[i], KV_XPU))
				report(m, r, KV_ST_APPLIED, KV_R_NONE, &e->hashes[i], KV_XPU, &w, 1, 0);
		}
		/* Hashes beyond the blocks the tokens fill name no content. */
		for (size_t i = nblocks; i < e->nhashes; i++)
			report(m, r, KV_ST_DROPPED, KV_R_HASHES_BEYOND_TOKENS, &e->hashes[i], (int)medium, &w, 1, 0);
		return;
	}
	/* No tokens (an offload placeholder): the hashes must name known content. */
	struct kv_partition *p = &m->ix->p[part];
	struct kv_pmatch *pm = kv_match_partition(m, part);
	for (size_t i = 0; i < e->nhashes; i++) {
		fetch_named_ahead(p, e->hashes, e->nhashes, i);
		if (offload && i + PREFETCH / 2 < e->nhashes)
			kv_offloads_prefetch(&pm->offload, e->hashes[i + PREFETCH / 2]);
		struct content c;
		bool named = known_content(m, part, e->hashes[i], &c);
		if (!named) {
			struct kv_offload *o = kv_offloads_find(&kv_match_partition(m, part)->offload, e->hashes[i]);
			if (!offload_live(m, o)) {
				report(m, r, KV_ST_DROPPED, KV_R_UNKNOWN_HASH, &e->hashes[i], (int)medium, &w, 1, 0);
				continue;
			}
			c = (struct content){ o->chain, o->parent, o->local };
		}
		if (offload) {
			engine_offload_block(m, r, part, e->hashes[i], &c, medium, named);
			continue;
		}
		uint64_t refused = m->ix->refused;
		kv_index_hold(m->ix, part, c.chain, c.parent, c.local, w, KV_XPU);
		if (!note_refused(m, r, refused, e->hashes[i], KV_XPU))
			report(m, r, KV_ST_APPLIED, KV_R_NONE, &e->hashes[i], KV_XPU, &w, 1, 0);
	}
}

/* w stops holding chain in medium; a freed block leaves its content behind. */
static bool release_chain(struct kv_match *m, uint32_t part, uint64_t chain, uint32_t w, enum kv_medium medium)
{
	uint64_t parent, local;
	bool freed;
	if (!kv_index_release(m->ix, part, chain, w, medium, &freed, &parent, &local))
		return false;
	if (freed)
		content_keep(m, part, chain, parent, local);
	return true;
}


/* What the first pass of a removal found for a hash (engine_removed). */
enum { UNKNOWN, NAMED, OFFLOAD_GONE, NAMED_OFFLOAD_GONE };

/* The block of the i-th hash of a removal, if the first pass named one
 * (engine_removed), and the content slot it leaves behind if freed. */
KV_PREFETCHING void fetch_released(const struct kv_match *m, const struct kv_partition *p,
				   const struct kv_pmatch *pm, size_t i)
{
	if (m->local[i] != NAMED && m->local[i] != NAMED_OFFLOAD_GONE)
		return;
	kv_blocks_prefetch_run(&p->blocks, m->chain[i]);
	kv_contents_prefetch(&pm->content, m->chain[i]);
}

static void engine_removed(struct kv_match *m, const struct rep *r, uint32_t w, uint32_t part, const struct kv_event *e)
{
	enum kv_medium medium = e->medium == KV_UNKNOWN ? KV_XPU : e->medium;
	struct kv_pmatch *pm = kv_match_partition(m, part);
	struct kv_partition *p = &m->ix->p[part];
	/* Two passes, each fetching ahead: names to chains, then the blocks.
	 * The scratch local[] says what the first pass found for each hash. */
	grow_blocks(m, e->nhashes);
	fetch_names(p, e->hashes, 0, e->nhashes < PREFETCH ? e->nhashes : PREFETCH);
	for (size_t i = 0; i < e->nhashes; i++) {
		if (i + PREFETCH < e->nhashes)
			kv_ehashes_prefetch(&p->ehashes, e->hashes[i + PREFETCH]);
		uint64_t h = e->hashes[i];
		/* An offload the engine dropped before any pool confirmed it never
		 * reached a tier; but the block may be held in the medium already,
		 * from an earlier offload a pool confirmed (the engine offloads a
		 * block again when it comes back to its accelerator), and that
		 * holding ends too. */
		bool gone = medium != KV_XPU && kv_offloads_remove(&pm->offload, h);
		struct kv_ehash *eh = kv_ehashes_find(&p->ehashes, h);
		if (eh)
			m->chain[i] = eh->chain, m->local[i] = gone ? NAMED_OFFLOAD_GONE : NAMED;
		else
			m->local[i] = gone ? OFFLOAD_GONE : UNKNOWN;
	}
	/* Blocks, and where their content goes should they be freed, the
	 * first ones fetched before the loop. */
	for (size_t i = 0; i < e->nhashes && i < PREFETCH; i++)
		fetch_released(m, p, pm, i);
	for (size_t i = 0; i < e->nhashes; i++) {
		if (i + PREFETCH < e->nhashes)
			fetch_released(m, p, pm, i + PREFETCH);
		bool named = m->local[i] == NAMED || m->local[i] == NAMED_OFFLOAD_GONE;
		if (named && release_chain(m, part, m->chain[i], w, medium))
			report(m, r, KV_ST_APPLIED, KV_R_NONE, &e->hashes[i], (int)medium, &w, 1, 0);
		else if (m->local[i] == NAMED || m->local[i] == UNKNOWN)
			m->st.unknown_removals++;
	}
}

static void engine_cleared(struct kv_match *m, const struct rep *r, uint32_t w)
{
	uint64_t dropped = 0;
	for (uint32_t part = 0; part < m->ix->n; part++)
		dropped += kv_index_release_all(m->ix, part, w, KV_MEDIUM_BIT(KV_XPU), on_freed, m);
	report(m, r, KV_ST_APPLIED, KV_R_NONE, NULL, KV_XPU, &w, 1, dropped);
}

/* Events of a batch share their source: remember the last lookup. */
static uint32_t worker_of(struct kv_match *m, const struct kv_event *e)
{
	int64_t dp = e->has_dp ? e->dp_rank : -1;
	/* Dynamo names its worker; a source carries many (a NATS subject) */
	if (e->has & KV_HAS_WORKER_ID) {
		m->last_src = (struct kv_str){ NULL, 0 };
		return kv_workers_of_dynamo(m->ws, e->worker_id, dp);
	}
	if (m->last_src.p && e->src.n == m->last_src.n && dp == m->last_dp &&
	    (e->src.p == m->last_src.p || memcmp(e->src.p, m->last_src.p, e->src.n) == 0))
		return m->last_worker;
	m->last_worker = kv_workers_of_source(m->ws, e->src, e->has_dp, e->dp_rank);
	m->srcbuf = kv_xgrow(m->srcbuf, &m->capsrcbuf, e->src.n + 1, 1);
	memcpy(m->srcbuf, e->src.p, e->src.n);
	m->last_src = (struct kv_str){ m->srcbuf, e->src.n };
	m->last_dp = dp;
	return m->last_worker;
}

static void engine_event(struct kv_match *m, const struct kv_event *e)
{
	uint32_t w = worker_of(m, e);
	struct kv_wire_ctx ctx = kv_wire_ctx_of(e);
	cur_diag(m)->engine = true;
	if (w == KV_NO_WORKER) {
		/* No worker could be inferred for it (KV_MAX_INFERRED_WORKERS). */
		struct rep r = { &ctx, KV_NO_PARTITION };
		drop_hashes(m, &r, e, KV_R_WORKER_LIMIT, NULL, 0);
		return;
	}
	if (e->type == KV_EV_CLEARED) {
		/* every partition the worker holds in: its line names none */
		struct rep r = { &ctx, KV_NO_PARTITION };
		engine_cleared(m, &r, w);
		return;
	}
	uint32_t part = engine_partition(m, w, e);
	struct rep r = { &ctx, part };
	if (part == KV_NO_PARTITION) {
		drop_hashes(m, &r, e, KV_R_PARTITION_LIMIT, &w, 1);
		return;
	}
	struct kv_srcdiag *d = cur_diag(m);
	d->engine = true;
	d->worker = w;
	if ((e->has & KV_HAS_SPEC_KIND) && !main_attention(e->spec_kind)) {
		if (!d->spec_kind[0])
			snprintf(d->spec_kind, sizeof d->spec_kind, "%.*s", (int)(e->spec_kind.n < 31 ? e->spec_kind.n : 31),
				 e->spec_kind.p);
		drop_hashes(m, &r, e, KV_R_NON_FULL_ATTENTION, &w, 1);
		return;
	}
	if (e->nhashes == 0) {
		report(m, &r, KV_ST_DROPPED, KV_R_NO_HASHES, NULL, (int)e->medium, &w, 1, 0);
		return;
	}
	if (e->type == KV_EV_STORED)
		engine_stored(m, &r, w, part, e);
	else
		engine_removed(m, &r, w, part, e);
}

/* ---- pool events --------------------------------------------------------- */

static uint32_t pool_partition(struct kv_match *m, const struct kv_event *e, const struct kv_pool_sub *sub)
{
	const char *tenant = sub && sub->tenant ? sub->tenant : "default";
	size_t tlen = strlen(tenant);
	if (e->has & KV_HAS_TENANT_ID) {
		tenant = e->tenant_id.p;
		tlen = e->tenant_id.n;
	}
	if (e->has & KV_HAS_LORA_NAME)
		return salted_partition(m, e->lora_name, sub ? sub->salt : NULL, tenant, tlen);
	/* Without registrations every engine is in model "default": pools must meet them there. */
	const char *model = m->ws->registered && sub && sub->model ? sub->model : "default";
	size_t mlen = strlen(model);
	if (m->ws->registered && (e->has & KV_HAS_MODEL_NAME))
		return salted_partition(m, e->model_name, sub ? sub->salt : NULL, tenant, tlen);
	return kv_index_partition_bounded(m->ix, model, mlen, tenant, tlen);
}

/* The workers a pool event is about; 0 when there are none. */
static size_t pool_targets(struct kv_match *m, const struct kv_event *e, const struct kv_pool_sub *sub)
{
	if (m->o.match_none || (sub && sub->backend == KV_BACKEND_YUANRONG)) {
		uint32_t w;
		if (!kv_workers_pool_worker(m->ws, sub, &w))
			return 0;
		m->targets = kv_xgrow(m->targets, &m->captargets, 1, sizeof *m->targets);
		m->targets[0] = w;
		return 1;
	}
	if (!(e->has & KV_HAS_BACKEND_ID))
		return 0;
	size_t n;
	for (;;) {
		n = kv_workers_on_host(m->ws, e->backend_id, m->targets, m->captargets);
		if (n < m->captargets || m->captargets >= m->ws->n)
			break;
		m->targets = kv_xgrow(m->targets, &m->captargets, m->ws->n + 1, sizeof *m->targets);
	}
	return n;
}

/* A pool whose backend_id names no worker (a decoupled Mooncake daemon,
 * "mooncake-daemon-0") holds the blocks itself: its pool holder is the one
 * target, in the event's partition (kvmatch(1) "Pool events").  0 without a backend_id. */
static size_t pool_holder_target(struct kv_match *m, const struct kv_event *e)
{
	if (!(e->has & KV_HAS_BACKEND_ID) || e->backend_id.n == 0)
		return 0;
	uint32_t w = kv_workers_pool_holder(m->ws, e->backend_id);
	if (w == KV_NO_WORKER)
		return 0;
	m->targets = kv_xgrow(m->targets, &m->captargets, 1, sizeof *m->targets);
	m->targets[0] = w;
	return 1;
}

/* The slots a pool's store of ehash needs once its offload's slot has
 * arrived: the block a live offload names (and the engine-hash map's slot
 * only when the name must be learned again), else the map's slot. */
KV_PREFETCHING void fetch_confirmed(const struct kv_match *m, const struct kv_partition *p,
				    const struct kv_pmatch *pm, uint64_t ehash)
{
	const struct kv_offload *o = kv_offloads_find_const(&pm->offload, ehash);
	if (offload_live(m, o)) {
		kv_blocks_prefetch_run(&p->blocks, o->chain);
		if (named_already(pm, o))
			return;
	}
	kv_ehashes_prefetch(&p->ehashes, ehash);
}

/* Without a live offload, the block the engine-hash map names (its slot
 * fetched by fetch_confirmed). */
KV_PREFETCHING void fetch_confirmed_block(const struct kv_match *m, const struct kv_partition *p,
					  const struct kv_pmatch *pm, uint64_t ehash)
{
	const struct kv_offload *o = kv_offloads_find_const(&pm->offload, ehash);
	if (offload_live(m, o))
		return;
	const struct kv_ehash *eh = kv_ehashes_find_const(&p->ehashes, ehash);
	if (eh)
		kv_blocks_prefetch_run(&p->blocks, eh->chain);
}

/* A pool's stores: a live offload (the usual case, the engine's offload
 * came first) names the block, else the engine-hash map does.  Three
 * stages ahead: the offload's slot, then what it names, then for a hash
 * without one the block the map names. */
static void pool_stored(struct kv_match *m, const struct rep *r, uint32_t part, const struct kv_event *e,
			const uint32_t *t, size_t nt, enum kv_medium medium)
{
	struct kv_pmatch *pm = kv_match_partition(m, part);
	struct kv_partition *p = &m->ix->p[part];
	size_t n = e->nhashes;
	for (size_t i = 0; i < n && i < PREFETCH; i++)
		kv_offloads_prefetch(&pm->offload, e->hashes[i]);
	for (size_t i = 0; i < n && i < PREFETCH / 2; i++)
		fetch_confirmed(m, p, pm, e->hashes[i]);
	for (size_t i = 0; i < n; i++) {
		uint64_t h = e->hashes[i];
		if (i + PREFETCH < n)
			kv_offloads_prefetch(&pm->offload, e->hashes[i + PREFETCH]);
		if (i + PREFETCH / 2 < n)
			fetch_confirmed(m, p, pm, e->hashes[i + PREFETCH / 2]);
		if (i + PREFETCH / 4 < n)
			fetch_confirmed_block(m, p, pm, e->hashes[i + PREFETCH / 4]);
		struct content c;
		struct kv_offload *o = kv_offloads_find(&pm->offload, h);
		bool known = false, named = false;
		if (offload_live(m, o)) {
			c = (struct content){ o->chain, o->parent, o->local };
			if (o->src && o->src <= m->sources.n)
				m->sources.v[o->src - 1].d.offload_met++;
			named = named_already(pm, o);
			kv_offloads_remove(&pm->offload, h);
			known = true;
		} else {
			known = named = known_content(m, part, h, &c);
		}
		if (!known) {
			for (size_t k = 0; k < nt; k++)
				kv_pending_add(&m->pending, part, h, t[k], medium, m->now);
			report(m, r, KV_ST_QUEUED, KV_R_NONE, &h, (int)medium, t, nt, 0);
			continue;
		}
		uint64_t refused = m->ix->refused;
		kv_index_hold_many(m->ix, part, c.chain, c.parent, c.local, t, nt, medium);
		if (!named)
			learn(m, part, h, c.chain);
		report(m, r, KV_ST_CONFIRMED, KV_R_NONE, &h, (int)medium, t, nt, 0);
		note_refused(m, r, refused, h, (int)medium);
	}
	pending_expire(m);
}

static void pool_removed(struct kv_match *m, const struct rep *r, uint32_t part, const struct kv_event *e,
			 const uint32_t *t, size_t nt, enum kv_medium medium)
{
	struct kv_pmatch *pm = kv_match_partition(m, part);
	struct kv_partition *p = &m->ix->p[part];
	fetch_names(p, e->hashes, 0, e->nhashes < PREFETCH ? e->nhashes : PREFETCH);
	for (size_t i = 0; i < e->nhashes; i++) {
		uint64_t h = e->hashes[i];
		if (i + PREFETCH < e->nhashes)
			kv_ehashes_prefetch(&p->ehashes, e->hashes[i + PREFETCH]);
		/* the block of a hash half as far on (its name has arrived), and
		 * where its content goes should it be freed */
		const struct kv_ehash *ahead = i + PREFETCH / 2 < e->nhashes ?
			kv_ehashes_find(&p->ehashes, e->hashes[i + PREFETCH / 2]) : NULL;
		if (ahead) {
			kv_blocks_prefetch_run(&p->blocks, ahead->chain);
			kv_contents_prefetch(&pm->content, ahead->chain);
		}
		kv_offloads_remove(&pm->offload, h);
		bool any = false;
		if (kv_pending_waits(&m->pending, part, h))
			for (size_t k = 0; k < nt; k++)
				any |= kv_pending_remove(&m->pending, part, h, t[k], medium);
		struct kv_ehash *eh = kv_ehashes_find(&p->ehashes, h);
		if (eh) {
			bool freed;
			uint64_t parent, local;
			if (kv_index_release_many(m->ix, part, eh->chain, t, nt, medium, &freed, &parent, &local))
				any = true;
			if (freed)
				content_keep(m, part, eh->chain, parent, local);
		}
		if (any)
			report(m, r, KV_ST_APPLIED, KV_R_NONE, &h, (int)medium, t, nt, 0);
		else
			m->st.unknown_removals++;
	}
}

static void pool_cleared(struct kv_match *m, const struct rep *r, uint32_t part, const uint32_t *t, size_t nt,
			 enum kv_medium medium)
{
	uint64_t dropped = 0;
	for (size_t k = 0; k < nt; k++)
		dropped += kv_index_release_all(m->ix, part, t[k], KV_MEDIUM_BIT(medium), on_freed, m);
	dropped += kv_pending_clear(&m->pending, part, medium, t, nt);
	report(m, r, KV_ST_APPLIED, KV_R_NONE, NULL, (int)medium, t, nt, dropped);
}

static void pool_event(struct kv_match *m, const struct kv_event *e)
{
	const struct kv_pool_sub *sub = kv_workers_pool(m->ws, e->src);
	uint32_t part = pool_partition(m, e, sub);
	struct kv_wire_ctx ctx = kv_wire_ctx_of(e);
	struct rep r = { &ctx, part };
	if (part == KV_NO_PARTITION) {
		cur_diag(m)->pool = true;
		drop_hashes(m, &r, e, KV_R_PARTITION_LIMIT, NULL, 0);
		return;
	}
	/* Pools hold their replicas in host memory unless they say otherwise. */
	enum kv_medium medium = e->medium == KV_UNKNOWN ? KV_CPU : e->medium;
	size_t nt = pool_targets(m, e, sub);
	struct kv_srcdiag *d = cur_diag(m);
	if (nt == 0 && (nt = pool_holder_target(m, e))) {
		/* kept, but the evidence of a backend_id that names no worker stays */
		note_backend(d, e);
		d->pool_held += e->nhashes;
	}
	d->pool = true;
	if (e->type == KV_EV_STORED) {
		note_hashes(d, e);
		d->pool_blocks += e->nhashes;
	}
	if (nt == 0) {
		note_backend(d, e);
		drop_hashes(m, &r, e, KV_R_UNKNOWN_BACKEND, NULL, 0);
		return;
	}
	/* The targets array is scratch that the calls below reuse: keep a copy. */
	uint32_t *t = kv_xmalloc(nt * sizeof *t);
	memcpy(t, m->targets, nt * sizeof *t);
	if (e->type == KV_EV_CLEARED)
		pool_cleared(m, &r, part, t, nt, medium);
	else if (e->nhashes == 0)
		report(m, &r, KV_ST_DROPPED, KV_R_NO_HASHES, NULL, (int)medium, t, nt, 0);
	else if (e->type == KV_EV_STORED)
		pool_stored(m, &r, part, e, t, nt, medium);
	else
		pool_removed(m, &r, part, e, t, nt, medium);
	free(t);
}

void kv_match_event(struct kv_match *m, const struct kv_event *e)
{
	m->st.events++;
	note_lag(cur_diag(m), e);
	if (m->o.log_mask & (1u << KV_ST_PARSED)) {
		struct kv_wire_ctx ctx = kv_wire_ctx_of(e);
		struct rep r = { &ctx, 0 };
		report(m, &r, KV_ST_PARSED, KV_R_NONE, NULL, (int)e->medium, NULL, 0, e->nhashes);
	} else {
		m->st.states[KV_ST_PARSED]++;
	}
	if (e->format == KV_FMT_VLLM || e->format == KV_FMT_DYNAMO)
		engine_event(m, e);
	else
		pool_event(m, e);
	cur_diag(m)->mooncake |= e->format == KV_FMT_MOONCAKE;
}

const struct kv_match_stats *kv_match_statistics(const struct kv_match *m)
{
	return &m->st;
}

const struct kv_srcstats *kv_match_sources(const struct kv_match *m)
{
	return &m->sources;
}

uint64_t kv_match_now(const struct kv_match *m)
{
	return m->now;
}

const struct kv_match_opts *kv_match_options(const struct kv_match *m)
{
	return &m->o;
}

const struct kv_index *kv_match_index(const struct kv_match *m)
{
	return m->ix;
}

const struct kv_workers *kv_match_workers(const struct kv_match *m)
{
	return m->ws;
}

uint64_t kv_match_pending(const struct kv_match *m)
{
	return kv_pending_count(&m->pending);
}

uint64_t kv_match_offloads(const struct kv_match *m)
{
	uint64_t n = 0;
	for (size_t i = 0; i < m->npm; i++)
		n += kv_offloads_count(&m->pm[i].offload);
	return n;
}

uint64_t kv_match_contents(const struct kv_match *m)
{
	uint64_t n = 0;
	for (size_t i = 0; i < m->npm; i++)
		n += kv_contents_count(&m->pm[i].content);
	return n;
}

void kv_match_restore_pending(struct kv_match *m, uint32_t part, uint64_t ehash, uint32_t worker,
			      enum kv_medium medium, uint64_t t)
{
	kv_pending_add(&m->pending, part, ehash, worker, medium, t);
}

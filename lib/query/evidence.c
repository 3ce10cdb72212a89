#include "query/evidence.h"
#include "base/strmap.h"
#include "base/table.h"
#include "base/util.h"
#include "decode/seqtrack.h"
#include "decode/source.h"
#include "index/blockhash.h"
#include "base/endpoint.h"
#include "index/snapload.h"
#include "index/snaplookup.h"

#include <stdlib.h>
#include <string.h>

/* Workers of a copy or of waiting pool stores followed per engine hash. */
#define HOLDERS_FOLLOWED 32u
struct wset {
	uint32_t w[HOLDERS_FOLLOWED];
	uint32_t n;
};

/* kv-conductor's offload/pool state of one engine hash (evidence.h): an
 * offload waiting for its pool (armed), content kept after a placement, the
 * removal that last took a waiting offload, pool stores waiting, and who
 * holds a lower-tier copy (its tier lookup finds one). */
struct hstate {
	uint64_t ehash;
	bool armed, content, took, has_tier_ev;
	struct kv_evrec armed_ev, content_ev, took_rm, took_off, tier_ev;
	struct wset pending, holders;
};

/* A worker asked about, and what last decided its holdings of a block. */
struct watch {
	uint32_t worker;
	bool has[KV_NMEDIA];
	struct kv_decision dec[KV_NMEDIA];
};

/* The engine hashes of a block whose state is followed, at most. */
#define HASHES_FOLLOWED 4u

/* A block asked about, or a block of a prefix before one. */
struct block {
	uint64_t chain;
	bool want;
	uint64_t *ehash;
	size_t nehash, capehash;
	struct kv_evrec *ev;           /* a ring of the last KV_EVIDENCE_EVENTS: ev[head] is the oldest when full */
	uint32_t nev, head;
	uint32_t srcs[KV_EVIDENCE_SOURCES];
	uint32_t nsrcs;
	struct hstate hs[HASHES_FOLLOWED];
	uint32_t nhs;
	struct watch *w;
	size_t nw, capw;
	bool has_stale, has_dropped;
	struct kv_stale stale;
	struct kv_evrec dropped;       /* the last pool removal kv-conductor never read */
};

struct idx_ent {
	uint64_t key;
	uint32_t idx;
};
KV_TABLE_DEFINE(ev_idx, struct idx_ent)

struct wstate {                        /* per worker of ws */
	bool from_snap;                /* a snapshot names it: an event about it counts */
	struct kv_evrec clears[KV_EVIDENCE_CLEARS];
	uint32_t nclears, clears_head;
	uint32_t srcs[KV_EVIDENCE_SOURCES];
	uint32_t nsrcs;
};

struct source {
	struct kv_seqtrack t;
	struct kv_evgap g;
	bool pool;                     /* a pool's: its events decide lower tiers */
};

/* The records of one publisher batch: event lines of one record share its
 * source, seq and receive time, and whether the batch held a top-bit hash
 * is known only at its end. */
struct group {
	bool open, has_seq;
	uint32_t src;
	uint64_t seq, recv_ns;
	bool signed_hash;
	struct stashed { uint32_t block; struct kv_evrec r; } *made; /* Mooncake records, applied at the end */
	size_t nmade, capmade;
};

struct kv_evidence {
	const struct kv_regs *regs;
	struct kv_workers ws;
	struct wstate *w;
	size_t capw;
	struct kv_strmap byname;       /* (instance_id, dp) -> worker, for those the snapshots name */
	struct kv_strmap engine;       /* (src, dp) -> worker an engine event is about */
	struct kv_strmap names;        /* backend ids */
	struct kv_strmap srcnames;     /* sources */
	struct source *src;
	size_t capsrc;
	struct block *b;
	size_t nb, capb;
	struct ev_idx bychain, byehash;
	uint64_t order;
	struct group grp;
	uint64_t bad;
	char first_bad[240];
	uint32_t *tmp;                 /* pool targets */
	size_t captmp;
};

static void workers_reset(struct kv_evidence *ev)
{
	kv_workers_free(&ev->ws);
	kv_workers_init(&ev->ws);
	if (ev->regs)
		kv_workers_register(&ev->ws, ev->regs);
	kv_strmap_clear(&ev->byname);
	kv_strmap_clear(&ev->engine);
	if (ev->w)
		memset(ev->w, 0, ev->capw * sizeof *ev->w);
}

struct kv_evidence *kv_evidence_new(const struct kv_regs *regs)
{
	struct kv_evidence *ev = kv_xcalloc(1, sizeof *ev);
	ev->regs = regs;
	kv_workers_init(&ev->ws);
	kv_strmap_init(&ev->byname, true);
	kv_strmap_init(&ev->engine, true);
	kv_strmap_init(&ev->names, true);
	kv_strmap_init(&ev->srcnames, true);
	workers_reset(ev);
	return ev;
}

static void blocks_free(struct kv_evidence *ev)
{
	for (size_t i = 0; i < ev->nb; i++) {
		free(ev->b[i].ehash);
		free(ev->b[i].ev);
		free(ev->b[i].w);
	}
	ev->nb = 0;
}

void kv_evidence_free(struct kv_evidence *ev)
{
	if (!ev)
		return;
	blocks_free(ev);
	free(ev->b);
	ev_idx_free(&ev->bychain);
	ev_idx_free(&ev->byehash);
	kv_workers_free(&ev->ws);
	kv_strmap_free(&ev->byname);
	kv_strmap_free(&ev->engine);
	kv_strmap_free(&ev->names);
	kv_strmap_free(&ev->srcnames);
	free(ev->w);
	free(ev->src);
	free(ev->grp.made);
	free(ev->tmp);
	free(ev);
}

void kv_evidence_reset(struct kv_evidence *ev)
{
	blocks_free(ev);
	ev_idx_free(&ev->bychain);
	ev_idx_free(&ev->byehash);
	memset(&ev->bychain, 0, sizeof ev->bychain);
	memset(&ev->byehash, 0, sizeof ev->byehash);
	kv_strmap_clear(&ev->names);
	kv_strmap_clear(&ev->srcnames);
	ev->order = 0;
	ev->grp.open = false;
	ev->grp.nmade = 0;
	ev->bad = 0;
	ev->first_bad[0] = 0;
	workers_reset(ev);
}

/* The state of worker w, grown with the workers. */
static struct wstate *wst(struct kv_evidence *ev, uint32_t w)
{
	if (w >= ev->capw) {
		size_t old = ev->capw;
		ev->w = kv_xgrow(ev->w, &ev->capw, (size_t)w + 1, sizeof *ev->w);
		memset(ev->w + old, 0, (ev->capw - old) * sizeof *ev->w);
	}
	return &ev->w[w];
}

void kv_evidence_add_workers(struct kv_evidence *ev, const struct kv_snap *s)
{
	for (size_t i = 0; i < s->nworkers; i++) {
		const struct kv_snap_worker *sw = &s->workers[i];
		size_t n, hn;
		const char *id = kv_snap_string(s, sw->instance_id, &n);
		const char *host = kv_snap_string(s, sw->host, &hn);
		char *name = kv_xstrndup(id, n), *h = hn ? kv_xstrndup(host, hn) : NULL;
		uint32_t w;
		if (sw->flags & 2u) {
			w = kv_workers_pool_holder(&ev->ws, (struct kv_str){ name, n });
		} else {
			w = kv_workers_add(&ev->ws, name, sw->dp_rank, h, sw->flags & 1u);
			/* a worker the registrations name without a host gets the snapshot's, for pool targets */
			if (w != KV_NO_WORKER && h && !ev->ws.v[w].host) {
				ev->ws.v[w].host = kv_xstrdup(h);
				ev->ws.hosts_stale = true;
			}
			if (w != KV_NO_WORKER)
				kv_strmap_add_num(&ev->byname, name, n, sw->dp_rank, w);
		}
		if (w != KV_NO_WORKER)
			wst(ev, w)->from_snap = true;
		free(name);
		free(h);
	}
}

uint32_t kv_evidence_worker(struct kv_evidence *ev, const char *instance, size_t len, int64_t dp)
{
	uint32_t id = kv_strmap_find_num(&ev->byname, instance, len, dp);
	return id == KV_STRMAP_NONE ? UINT32_MAX : kv_strmap_at(&ev->byname, id)->value;
}

const struct kv_worker *kv_evidence_worker_at(const struct kv_evidence *ev, uint32_t w)
{
	return w < ev->ws.n ? &ev->ws.v[w] : NULL;
}

static uint32_t block_of_chain(const struct kv_evidence *ev, uint64_t chain)
{
	const struct idx_ent *e = ev_idx_find_const(&ev->bychain, chain);
	return e ? e->idx : UINT32_MAX;
}

static uint32_t block_of_ehash(const struct kv_evidence *ev, uint64_t ehash)
{
	const struct idx_ent *e = ev_idx_find_const(&ev->byehash, ehash);
	return e ? e->idx : UINT32_MAX;
}

void kv_evidence_block(struct kv_evidence *ev, uint64_t chain, bool want)
{
	bool added;
	struct idx_ent *e = ev_idx_upsert(&ev->bychain, chain, &added);
	if (!added) {
		ev->b[e->idx].want |= want;
		return;
	}
	ev->b = kv_xgrow(ev->b, &ev->capb, ev->nb + 1, sizeof *ev->b);
	memset(&ev->b[ev->nb], 0, sizeof ev->b[ev->nb]);
	ev->b[ev->nb].chain = chain;
	ev->b[ev->nb].want = want;
	e->idx = (uint32_t)ev->nb++;
}

static struct watch *watch_of(struct block *b, uint32_t worker)
{
	for (size_t i = 0; i < b->nw; i++)
		if (b->w[i].worker == worker)
			return &b->w[i];
	return NULL;
}

void kv_evidence_watch(struct kv_evidence *ev, uint64_t chain, uint32_t worker)
{
	uint32_t bi = block_of_chain(ev, chain);
	if (bi == UINT32_MAX || worker == UINT32_MAX)
		return;
	struct block *b = &ev->b[bi];
	if (watch_of(b, worker))
		return;
	b->w = kv_xgrow(b->w, &b->capw, b->nw + 1, sizeof *b->w);
	memset(&b->w[b->nw], 0, sizeof b->w[b->nw]);
	b->w[b->nw++].worker = worker;
}

static void add_ehash(struct kv_evidence *ev, uint32_t blk, uint64_t ehash)
{
	bool added;
	struct idx_ent *e = ev_idx_upsert(&ev->byehash, ehash, &added);
	if (!added)
		return; /* an engine hash names one block: the first one learned */
	e->idx = blk;
	struct block *b = &ev->b[blk];
	b->ehash = kv_xgrow(b->ehash, &b->capehash, b->nehash + 1, sizeof *b->ehash);
	b->ehash[b->nehash++] = ehash;
}

bool kv_evidence_learn(struct kv_evidence *ev, struct kv_snap *s, uint32_t part, struct kv_err *e)
{
	if (!ev->nb)
		return true;
	if (!kv_snapr_read(s, KV_SNAP_PART_ALL, e))
		return false;
	const struct kv_snap_partition *p = &s->partitions[part];
	const struct kv_snap_range *r = &p->r[KV_RANGE_EHASHES];
	for (uint64_t i = r->first; i < r->first + r->count; i++) {
		uint32_t blk = block_of_chain(ev, kv_snap_named_chain(s, part, i));
		if (blk != UINT32_MAX)
			add_ehash(ev, blk, s->ehashes[i]);
	}
	r = &p->r[KV_RANGE_STALE];
	for (uint64_t i = r->first; i < r->first + r->count; i++) {
		uint32_t blk = block_of_chain(ev, s->stale[i].chain);
		if (blk != UINT32_MAX)
			add_ehash(ev, blk, s->stale[i].ehash);
	}
	for (size_t i = 0; i < s->noffload; i++) {
		if (s->offload[i].partition != part)
			continue;
		uint32_t blk = block_of_chain(ev, s->offload[i].chain);
		if (blk != UINT32_MAX)
			add_ehash(ev, blk, s->offload[i].ehash);
	}
	return true;
}

/* ---- who an event is about ---------------------------------------------- */

static bool snap_worker(const struct kv_evidence *ev, uint32_t w)
{
	return w != KV_NO_WORKER && w < ev->capw && ev->w[w].from_snap;
}

/* The worker of a snapshot on the source's host with rank dp, for an
 * event whose own worker no snapshot names (kvquery given no
 * registrations for a registered cluster). */
static uint32_t snap_worker_on_host(const struct kv_evidence *ev, struct kv_str src, int64_t dp)
{
	char host[256];
	long port;
	if (!kv_endpoint_host_port(src.p, src.n, host, sizeof host, &port))
		return KV_NO_WORKER;
	for (size_t i = 0; i < ev->ws.n; i++)
		if (snap_worker(ev, (uint32_t)i) && !ev->ws.v[i].pool && ev->ws.v[i].dp_rank == dp && ev->ws.v[i].host &&
		    strcmp(ev->ws.v[i].host, host) == 0)
			return (uint32_t)i;
	return KV_NO_WORKER;
}

static uint32_t engine_worker(struct kv_evidence *ev, const struct kv_event *e)
{
	int64_t dp = e->has_dp && e->dp_rank >= 0 ? e->dp_rank : 0;
	uint32_t known = kv_strmap_find_num(&ev->engine, e->src.p, e->src.n, dp);
	if (known != KV_STRMAP_NONE)
		return kv_strmap_at(&ev->engine, known)->value;
	uint32_t w = kv_workers_of_source(&ev->ws, e->src, e->has_dp, e->dp_rank);
	if (!snap_worker(ev, w))
		w = snap_worker_on_host(ev, e->src, dp);
	kv_strmap_add_num(&ev->engine, e->src.p, e->src.n, dp, w);
	return w;
}

static size_t pool_targets(struct kv_evidence *ev, const struct kv_event *e, uint32_t *out)
{
	const struct kv_pool_sub *sub = ev->regs ? kv_workers_pool(&ev->ws, e->src) : NULL;
	uint32_t w;
	if (sub && sub->backend == KV_BACKEND_YUANRONG)
		return kv_workers_pool_worker(&ev->ws, sub, &w) && snap_worker(ev, w) ? (out[0] = w, 1) : 0;
	if (!(e->has & KV_HAS_BACKEND_ID))
		return 0;
	size_t n = kv_workers_on_host(&ev->ws, e->backend_id, NULL, 0);
	ev->tmp = kv_xgrow(ev->tmp, &ev->captmp, n + 1, sizeof *ev->tmp);
	n = kv_workers_on_host(&ev->ws, e->backend_id, ev->tmp, n);
	size_t k = 0;
	for (size_t i = 0; i < n && k < KV_EVIDENCE_TARGETS; i++)
		if (snap_worker(ev, ev->tmp[i]))
			out[k++] = ev->tmp[i];
	if (k)
		return k;
	w = kv_workers_pool_holder(&ev->ws, e->backend_id);
	return snap_worker(ev, w) ? (out[0] = w, 1) : 0;
}

static size_t targets_of(struct kv_evidence *ev, const struct kv_event *e, uint32_t *out)
{
	if (e->format == KV_FMT_VLLM) {
		uint32_t w = engine_worker(ev, e);
		return w != KV_NO_WORKER ? (out[0] = w, 1) : 0;
	}
	return pool_targets(ev, e, out);
}

static void add_source(uint32_t *srcs, uint32_t *n, uint32_t src)
{
	for (uint32_t i = 0; i < *n; i++)
		if (srcs[i] == src)
			return;
	if (*n < KV_EVIDENCE_SOURCES)
		srcs[(*n)++] = src;
}

/* ---- kv-conductor's offload/pool matching --------------------------------- */

/* kv-conductor's offload TTL (indexer/mod.rs, OFFLOAD_TTL, 600 s): an
 * offload older than this no longer waits for its pool. */
#define OFFLOAD_TTL_NS (600ull * 1000000000ull)

static bool is_engine(const struct kv_evrec *r)
{
	return r->format == KV_FMT_VLLM;
}

static bool is_offload(const struct kv_evrec *r)
{
	return is_engine(r) && r->type == KV_EV_STORED && (r->medium == KV_CPU || r->medium == KV_DISK);
}

bool kv_evrec_placeholder(const struct kv_evrec *r)
{
	return is_offload(r) && (!(r->flags & KV_EVR_TOKENS) || r->block_size == 0);
}

static struct hstate *hstate_of(struct block *b, uint64_t ehash)
{
	for (uint32_t i = 0; i < b->nhs; i++)
		if (b->hs[i].ehash == ehash)
			return &b->hs[i];
	if (b->nhs == HASHES_FOLLOWED)
		return NULL;
	memset(&b->hs[b->nhs], 0, sizeof b->hs[b->nhs]);
	b->hs[b->nhs].ehash = ehash;
	return &b->hs[b->nhs++];
}

static void wset_add(struct wset *s, uint32_t w)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (s->w[i] == w)
			return;
	if (s->n < HOLDERS_FOLLOWED)
		s->w[s->n++] = w;
}

static void wset_remove(struct wset *s, uint32_t w)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (s->w[i] == w) {
			s->w[i] = s->w[--s->n];
			return;
		}
}

static void wset_add_targets(struct wset *s, const struct kv_evrec *r)
{
	for (uint32_t i = 0; i < r->ntargets && i < KV_EVIDENCE_TARGETS; i++)
		wset_add(s, r->targets[i]);
}

/* An offload met the pool stores waiting for it: kv-conductor places them
 * with its content (ingest_offload_blocks). */
static void confirm_waiting(struct block *b, struct hstate *h, const struct kv_evrec *off)
{
	for (size_t i = 0; i < b->nw; i++)
		for (int m = 0; m < KV_NMEDIA; m++) {
			struct kv_decision *d = &b->w[i].dec[m];
			if (b->w[i].has[m] && d->ev.ehash == off->ehash &&
			    (d->fate == KV_FATE_PENDING || d->fate == KV_FATE_LOST)) {
				d->fate = KV_FATE_CONFIRMED;
				d->offload = *off;
				d->has_offload = true;
				d->has_removal = false;
			}
		}
	for (uint32_t i = 0; i < h->pending.n; i++)
		wset_add(&h->holders, h->pending.w[i]);
	h->pending.n = 0;
}

/* A pool store: placed with a waiting offload's content, content kept, or
 * a copy already placed (ingest_pool_blocks' tier lookup), else it waits. */
static void pool_store(struct hstate *h, const struct kv_evrec *r, struct kv_decision *d)
{
	const struct kv_evrec *from = h->armed ? &h->armed_ev : h->content ? &h->content_ev
				    : h->holders.n && h->has_tier_ev ? &h->tier_ev : NULL;
	if (from || h->holders.n) {
		d->fate = KV_FATE_CONFIRMED;
		if (from) {
			d->offload = *from;
			d->has_offload = true;
			h->tier_ev = *from;
			h->has_tier_ev = true;
		}
		if (h->armed) {
			h->content_ev = h->armed_ev;
			h->content = true;
			h->armed = false;
		}
		wset_add_targets(&h->holders, r);
		return;
	}
	d->fate = h->took ? KV_FATE_LOST : KV_FATE_PENDING;
	if (h->took) {
		d->offload = h->took_off;
		d->removal = h->took_rm;
		d->has_offload = d->has_removal = true;
	}
	wset_add_targets(&h->pending, r);
}

/* What kv-conductor does with event r of engine hash h (indexer/mod.rs at
 * 5246d49): an offload waits for its pool unless pool stores wait for it;
 * a pool store is placed or waits (pool_store); a removal that meets a
 * waiting offload takes it and is not applied (evict_pending_blocks): for
 * a pool removal, for the first worker it names. */
static void transition(struct block *b, struct hstate *h, const struct kv_evrec *r, struct kv_decision *d)
{
	if (h->armed && r->recv_ns > h->armed_ev.recv_ns + OFFLOAD_TTL_NS)
		h->armed = false;
	if (is_offload(r)) {
		if (h->pending.n) {
			confirm_waiting(b, h, r);
			h->content = true;
			h->content_ev = *r;
			h->tier_ev = *r;
			h->has_tier_ev = true;
			h->armed = false;
		} else {
			h->armed = true;
			h->armed_ev = *r;
			h->content = h->took = false;
		}
		return;
	}
	bool pool = !is_engine(r);
	if (pool && r->type == KV_EV_STORED) {
		pool_store(h, r, d);
		return;
	}
	if (r->type != KV_EV_REMOVED)
		return;
	uint32_t first = 0;
	if (h->armed) {
		d->fate = KV_FATE_SWALLOWED;
		d->offload = h->armed_ev;
		d->has_offload = true;
		h->took = true;
		h->took_rm = *r;
		h->took_off = h->armed_ev;
		h->armed = h->content = false;
		if (pool) {
			b->has_stale = true;
			b->stale = (struct kv_stale){ h->took_off, *r };
		}
		first = 1; /* the first worker it names keeps its copy */
	}
	if (!pool)
		return;
	for (uint32_t i = first; i < r->ntargets && i < KV_EVIDENCE_TARGETS; i++) {
		wset_remove(&h->holders, r->targets[i]);
		wset_remove(&h->pending, r->targets[i]);
	}
}

static bool names(const struct kv_evrec *r, uint32_t w)
{
	for (size_t i = 0; i < r->ntargets && i < KV_EVIDENCE_TARGETS; i++)
		if (r->targets[i] == w)
			return true;
	return false;
}

/* The medium whose holdings r decides for the workers it names, or
 * KV_UNKNOWN: an engine's own xpu stores and removals, a pool's cpu and
 * disk ones. */
static enum kv_medium decided_medium(const struct kv_evrec *r)
{
	if (r->type != KV_EV_STORED && r->type != KV_EV_REMOVED)
		return KV_UNKNOWN;
	if (is_engine(r))
		return r->medium == KV_XPU || r->medium == KV_UNKNOWN ? KV_XPU : KV_UNKNOWN;
	return r->medium == KV_CPU || r->medium == KV_DISK ? (enum kv_medium)r->medium : KV_UNKNOWN;
}

static void ring_push(struct block *b, const struct kv_evrec *r)
{
	if (!b->ev)
		b->ev = kv_xmalloc(KV_EVIDENCE_EVENTS * sizeof *b->ev);
	if (b->nev < KV_EVIDENCE_EVENTS) {
		b->ev[b->nev++] = *r;
	} else {
		b->ev[b->head] = *r;
		b->head = (b->head + 1) % KV_EVIDENCE_EVENTS;
	}
}

/* An event about a wanted block, in the order of the stream. */
static void account(struct kv_evidence *ev, uint32_t bi, const struct kv_evrec *r)
{
	struct block *b = &ev->b[bi];
	ring_push(b, r);
	add_source(b->srcs, &b->nsrcs, r->src);
	struct kv_decision d = { .ev = *r };
	struct hstate *h = hstate_of(b, r->ehash);
	if (r->format == KV_FMT_MOONCAKE && (r->flags & KV_EVR_SIGNED_BATCH)) {
		d.fate = KV_FATE_DROPPED;
		if (r->type == KV_EV_REMOVED) {
			b->has_dropped = true;
			b->dropped = *r;
		}
	} else if (h)
		transition(b, h, r, &d);
	enum kv_medium m = decided_medium(r);
	if (m == KV_UNKNOWN)
		return;
	for (size_t i = 0; i < b->nw; i++)
		if (names(r, b->w[i].worker)) {
			b->w[i].dec[m] = d;
			b->w[i].has[m] = true;
		}
}

/* ---- the pass ------------------------------------------------------------ */

static uint32_t source_id(struct kv_evidence *ev, struct kv_str src)
{
	uint32_t id = kv_strmap_add(&ev->srcnames, src.p, src.n, 0);
	if (id >= ev->capsrc) {
		size_t old = ev->capsrc;
		ev->src = kv_xgrow(ev->src, &ev->capsrc, (size_t)id + 1, sizeof *ev->src);
		memset(ev->src + old, 0, (ev->capsrc - old) * sizeof *ev->src);
	}
	return id;
}

/* A Mooncake batch's records are applied at its end, when whether it held
 * a top-bit hash is known. */
static void end_group(struct kv_evidence *ev)
{
	struct group *g = &ev->grp;
	for (size_t i = 0; i < g->nmade; i++) {
		if (g->signed_hash)
			g->made[i].r.flags |= KV_EVR_SIGNED_BATCH;
		account(ev, g->made[i].block, &g->made[i].r);
	}
	g->open = false;
	g->nmade = 0;
	g->signed_hash = false;
}

/* A new publisher batch begins with each capture record, or when the
 * source, seq or receive time of event lines change; its seq is
 * accounted then, once. */
static void begin_group(struct kv_evidence *ev, const struct kv_wire_ctx *c, bool record)
{
	uint32_t src = source_id(ev, c->src);
	struct group *g = &ev->grp;
	if (!record && g->open && g->src == src && g->has_seq == c->has_seq && g->seq == c->seq &&
	    g->recv_ns == c->recv_ns)
		return;
	end_group(ev);
	g->open = true;
	g->has_seq = c->has_seq;
	g->src = src;
	g->seq = c->seq;
	g->recv_ns = c->recv_ns;
	if (!c->has_seq || c->replayed)
		return;
	struct source *s = &ev->src[src];
	uint64_t before = s->t.last;
	if (kv_seq_observe(&s->t, c->seq) == KV_SEQ_GAP) {
		s->g.gaps = s->t.gaps;
		s->g.missing = s->t.missing;
		s->g.before_seq = before;
		s->g.last_seq = c->seq;
		s->g.last_recv_ns = c->recv_ns;
	}
}

static void fill(struct kv_evidence *ev, struct kv_evrec *r, const struct kv_event *e, uint32_t src,
		 const uint32_t *targets, size_t ntargets)
{
	memset(r, 0, sizeof *r);
	r->order = ev->order;
	r->recv_ns = e->recv_ns;
	r->seq = e->seq;
	r->dp = e->has_dp ? e->dp_rank : -1;
	r->block_size = (e->has & KV_HAS_BLOCK_SIZE) ? e->block_size : -1;
	r->src = src;
	r->backend = (e->has & KV_HAS_BACKEND_ID) ? kv_strmap_add(&ev->names, e->backend_id.p, e->backend_id.n, 0)
						 : UINT32_MAX;
	r->type = (uint8_t)e->type;
	r->medium = (uint8_t)e->medium;
	r->format = (uint8_t)e->format;
	r->flags = (uint8_t)((e->has_seq ? KV_EVR_SEQ : 0) | (e->replayed ? KV_EVR_REPLAYED : 0) |
			     ((e->has & KV_HAS_TOKENS) && e->ntokens ? KV_EVR_TOKENS : 0));
	r->ntargets = (uint16_t)(ntargets < UINT16_MAX ? ntargets : UINT16_MAX);
	memcpy(r->targets, targets, (ntargets < KV_EVIDENCE_TARGETS ? ntargets : KV_EVIDENCE_TARGETS) * sizeof *targets);
}

/* The chains of a stored event's blocks, where its parent is a block of a
 * prefix asked about (or none): its engine hashes then name those blocks. */
static void learn(struct kv_evidence *ev, const struct kv_event *e)
{
	if (e->type != KV_EV_STORED || !(e->has & KV_HAS_TOKENS) || !e->ntokens || !e->nhashes)
		return;
	size_t bs = (e->has & KV_HAS_BLOCK_SIZE) && e->block_size > 0 ? (size_t)e->block_size : e->ntokens / e->nhashes;
	if (!bs)
		return;
	uint64_t chain = KV_CHAIN_ROOT;
	if ((e->has & KV_HAS_PARENT) && !e->parent_null) {
		uint32_t p = block_of_ehash(ev, e->parent);
		if (p == UINT32_MAX)
			return;
		chain = ev->b[p].chain;
	}
	for (size_t i = 0; i < e->nhashes && i * bs < e->ntokens; i++) {
		size_t n = e->ntokens - i * bs < bs ? e->ntokens - i * bs : bs;
		chain = kv_chain_next(chain, kv_local_hash(e->tokens + i * bs, n));
		uint32_t blk = block_of_chain(ev, chain);
		if (blk == UINT32_MAX)
			return;
		add_ehash(ev, blk, e->hashes[i]);
	}
}

static void clear_event(struct kv_evidence *ev, const struct kv_event *e, uint32_t src, const uint32_t *t, size_t nt)
{
	for (size_t i = 0; i < nt && i < KV_EVIDENCE_TARGETS; i++) {
		struct wstate *s = wst(ev, t[i]);
		struct kv_evrec *r;
		if (s->nclears < KV_EVIDENCE_CLEARS) {
			r = &s->clears[s->nclears++];
		} else {
			r = &s->clears[s->clears_head];
			s->clears_head = (s->clears_head + 1) % KV_EVIDENCE_CLEARS;
		}
		fill(ev, r, e, src, t, nt);
	}
}

static void one_event(struct kv_evidence *ev, const struct kv_event *e, uint32_t src)
{
	ev->order++;
	if (e->format != KV_FMT_VLLM)
		ev->src[src].pool = true;
	if (e->format == KV_FMT_MOONCAKE)
		for (size_t i = 0; i < e->nhashes; i++)
			if (e->hashes[i] >> 63)
				ev->grp.signed_hash = true;
	uint32_t t[KV_EVIDENCE_TARGETS];
	size_t nt = targets_of(ev, e, t);
	for (size_t i = 0; i < nt && i < KV_EVIDENCE_TARGETS; i++)
		add_source(wst(ev, t[i])->srcs, &wst(ev, t[i])->nsrcs, src);
	if (e->type == KV_EV_CLEARED) {
		clear_event(ev, e, src, t, nt);
		return;
	}
	learn(ev, e);
	for (size_t i = 0; i < e->nhashes; i++) {
		uint32_t blk = block_of_ehash(ev, e->hashes[i]);
		if (blk == UINT32_MAX || !ev->b[blk].want)
			continue;
		struct kv_evrec r;
		fill(ev, &r, e, src, t, nt);
		r.ehash = e->hashes[i];
		if (e->format != KV_FMT_MOONCAKE) {
			account(ev, blk, &r);
			continue;
		}
		struct group *g = &ev->grp;
		g->made = kv_xgrow(g->made, &g->capmade, g->nmade + 1, sizeof *g->made);
		g->made[g->nmade].block = blk;
		g->made[g->nmade++].r = r;
	}
}

static void note_bad(struct kv_evidence *ev, const struct kv_batch *b)
{
	ev->bad++;
	if (!ev->first_bad[0])
		kv_batch_where(b, ev->first_bad, sizeof ev->first_bad);
}

bool kv_evidence_scan(struct kv_evidence *ev, char *const *files, size_t nfiles, struct kv_err *e)
{
	struct kv_source_opts so = { .allow_json = true };
	struct kv_source *s = kv_source_new(files, nfiles, &so);
	struct kv_batch b;
	enum kv_source_status st;
	bool ok = true;
	while ((st = kv_source_next(s, &b, e)) != KV_SOURCE_END && st != KV_SOURCE_STOPPED) {
		if (st == KV_SOURCE_UNOPENED) {
			ok = false;
			break;
		}
		if (b.error) {
			/* a capture still being written ends inside its last record */
			if (!(b.fatal && strncmp(b.error, "truncated", 9) == 0))
				note_bad(ev, &b);
			continue;
		}
		begin_group(ev, &b.ctx, b.kind != KV_IN_JSON);
		for (size_t i = 0; i < b.nev; i++)
			one_event(ev, &b.ev[i], ev->grp.src);
	}
	end_group(ev);
	kv_source_free(s);
	return ok;
}

uint64_t kv_evidence_bad(const struct kv_evidence *ev, const char **first)
{
	*first = ev->first_bad;
	return ev->bad;
}

/* ---- what the pass kept -------------------------------------------------- */

/* A full ring of n records whose oldest is at *head, put in order in place. */
static void unroll(struct kv_evrec *r, uint32_t n, uint32_t *head)
{
	if (!*head)
		return;
	struct kv_evrec *tmp = kv_xmalloc(n * sizeof *tmp);
	memcpy(tmp, r + *head, (n - *head) * sizeof *tmp);
	memcpy(tmp + (n - *head), r, *head * sizeof *tmp);
	memcpy(r, tmp, n * sizeof *tmp);
	free(tmp);
	*head = 0;
}

const struct kv_evrec *kv_evidence_events(struct kv_evidence *ev, uint64_t chain, size_t *n)
{
	uint32_t bi = block_of_chain(ev, chain);
	*n = 0;
	if (bi == UINT32_MAX || !ev->b[bi].nev)
		return NULL;
	struct block *b = &ev->b[bi];
	unroll(b->ev, b->nev, &b->head);
	*n = b->nev;
	return b->ev;
}

const uint64_t *kv_evidence_ehashes(const struct kv_evidence *ev, uint64_t chain, size_t *n)
{
	uint32_t bi = block_of_chain(ev, chain);
	*n = bi == UINT32_MAX ? 0 : ev->b[bi].nehash;
	return bi == UINT32_MAX ? NULL : ev->b[bi].ehash;
}

const struct kv_decision *kv_evidence_decision(const struct kv_evidence *ev, uint64_t chain, uint32_t worker,
					       enum kv_medium m)
{
	uint32_t bi = block_of_chain(ev, chain);
	if (bi == UINT32_MAX || m >= KV_NMEDIA)
		return NULL;
	const struct block *b = &ev->b[bi];
	for (size_t i = 0; i < b->nw; i++)
		if (b->w[i].worker == worker)
			return b->w[i].has[m] ? &b->w[i].dec[m] : NULL;
	return NULL;
}

const struct kv_stale *kv_evidence_stale(const struct kv_evidence *ev, uint64_t chain)
{
	uint32_t bi = block_of_chain(ev, chain);
	return bi != UINT32_MAX && ev->b[bi].has_stale ? &ev->b[bi].stale : NULL;
}

const struct kv_evrec *kv_evidence_dropped_removal(const struct kv_evidence *ev, uint64_t chain)
{
	uint32_t bi = block_of_chain(ev, chain);
	return bi != UINT32_MAX && ev->b[bi].has_dropped ? &ev->b[bi].dropped : NULL;
}

const uint32_t *kv_evidence_block_sources(const struct kv_evidence *ev, uint64_t chain, size_t *n)
{
	uint32_t bi = block_of_chain(ev, chain);
	*n = bi == UINT32_MAX ? 0 : ev->b[bi].nsrcs;
	return bi == UINT32_MAX ? NULL : ev->b[bi].srcs;
}

const struct kv_evrec *kv_evidence_clears(struct kv_evidence *ev, uint32_t w, size_t *n)
{
	if (w >= ev->capw) {
		*n = 0;
		return NULL;
	}
	struct wstate *s = &ev->w[w];
	unroll(s->clears, s->nclears, &s->clears_head);
	*n = s->nclears;
	return s->clears;
}

const uint32_t *kv_evidence_worker_sources(const struct kv_evidence *ev, uint32_t w, size_t *n)
{
	*n = w < ev->capw ? ev->w[w].nsrcs : 0;
	return w < ev->capw ? ev->w[w].srcs : NULL;
}

const char *kv_evidence_source(const struct kv_evidence *ev, uint32_t src, size_t *len)
{
	const struct kv_strmap_entry *e = kv_strmap_at(&ev->srcnames, src);
	*len = e->len;
	return e->key;
}

const struct kv_evgap *kv_evidence_gaps(const struct kv_evidence *ev, uint32_t src)
{
	return &ev->src[src].g;
}

size_t kv_evidence_nsources(const struct kv_evidence *ev)
{
	return kv_strmap_count(&ev->srcnames);
}

bool kv_evidence_pool_source(const struct kv_evidence *ev, uint32_t src)
{
	return ev->src[src].pool;
}

const char *kv_evidence_name(const struct kv_evidence *ev, uint32_t id, size_t *len)
{
	if (id >= kv_strmap_count(&ev->names)) {
		*len = 0;
		return NULL;
	}
	const struct kv_strmap_entry *e = kv_strmap_at(&ev->names, id);
	*len = e->len;
	return e->key;
}

#include "query/classify.h"
#include "base/util.h"
#include "decode/event.h"

#include <string.h>

const char *kv_class_name(enum kv_class c)
{
	static const char *const names[KV_NCLASSES] = {
		[KV_CLASS_NONE] = "none",
		[KV_CLASS_PLACEHOLDER] = "offload_placeholder",
		[KV_CLASS_GPU_REMOVAL] = "gpu_removal_swallowed",
		[KV_CLASS_WALK_MODE] = "walk_mode",
		[KV_CLASS_CONFIRMATION_LOST] = "pool_confirmation_lost",
		[KV_CLASS_POOL_REMOVAL] = "pool_removal_swallowed",
		[KV_CLASS_STALE_OWNERSHIP] = "stale_ownership",
		[KV_CLASS_SIGNED_HASH] = "mooncake_signed_hash",
		[KV_CLASS_BY_HASH_TOKENS] = "by_hash_tokens",
		[KV_CLASS_LAG] = "lag",
		[KV_CLASS_GAP] = "gap",
		[KV_CLASS_UNEXPLAINED] = "unexplained",
	};
	return c < KV_NCLASSES ? names[c] : "unexplained";
}

static void role(struct kv_verdict *v, const struct kv_evrec *r, const char *what)
{
	if (v->nroles < KV_VERDICT_ROLES) {
		v->roles[v->nroles].ev = *r;
		v->roles[v->nroles++].role = what;
	}
}

/* A clear of w after event order o (it undoes what came before). */
static bool cleared_after(struct kv_evidence *ev, uint32_t w, uint64_t o)
{
	size_t n;
	const struct kv_evrec *c = kv_evidence_clears(ev, w, &n);
	for (size_t i = 0; i < n; i++)
		if (c[i].order > o)
			return true;
	return false;
}

/* The known mechanisms, from what kv-conductor made of the last event
 * that decided (w, m) of the block. */
static enum kv_class mechanism(const struct kv_case *c, const struct kv_decision *d, uint32_t w, enum kv_medium m,
			       struct kv_verdict *v)
{
	bool store = d->ev.type == KV_EV_STORED;
	if (d->fate == KV_FATE_DROPPED && store != c->router_more) {
		role(v, &d->ev, store ? "pool_store_dropped" : "pool_removal_dropped");
		return KV_CLASS_SIGNED_HASH;
	}
	if (m == KV_XPU && c->router_more && !store && d->fate == KV_FATE_SWALLOWED &&
	    !cleared_after(c->ev, w, d->ev.order)) {
		role(v, &d->offload, "offload");
		role(v, &d->ev, "removal_swallowed");
		return KV_CLASS_GPU_REMOVAL;
	}
	if (m != KV_XPU && !c->router_more && store && d->fate == KV_FATE_LOST) {
		role(v, &d->offload, "offload");
		role(v, &d->removal, "removal_took_offload");
		role(v, &d->ev, "pool_store_left_pending");
		return KV_CLASS_CONFIRMATION_LOST;
	}
	if (m != KV_XPU && !c->router_more && store && d->fate == KV_FATE_CONFIRMED && d->has_offload &&
	    kv_evrec_placeholder(&d->offload)) {
		role(v, &d->offload, "offload_placeholder");
		role(v, &d->ev, "pool_store");
		return KV_CLASS_PLACEHOLDER;
	}
	if (m != KV_XPU && c->router_more && !store && d->fate == KV_FATE_SWALLOWED) {
		role(v, &d->offload, "offload");
		role(v, &d->ev, "pool_removal_swallowed");
		return KV_CLASS_POOL_REMOVAL;
	}
	return KV_CLASS_NONE;
}

static enum kv_class known_mechanism(const struct kv_case *c, struct kv_verdict *v)
{
	static const enum kv_medium any[] = { KV_XPU, KV_CPU, KV_DISK };
	for (size_t wi = 0; wi < c->nworkers; wi++)
		for (size_t mi = 0; mi < 3; mi++) {
			enum kv_medium m = c->medium == KV_UNKNOWN ? any[mi] : c->medium;
			const struct kv_decision *d = kv_evidence_decision(c->ev, c->chains[c->lo], c->workers[wi], m);
			enum kv_class found = d ? mechanism(c, d, c->workers[wi], m, v) : KV_CLASS_NONE;
			if (found)
				return found;
			if (c->medium != KV_UNKNOWN)
				break;
		}
	/* a copy the router still counts may be anyone's: an ownership-blind
	 * walk counts it for every worker */
	if (c->router_more && c->medium != KV_XPU) {
		const struct kv_stale *st = kv_evidence_stale(c->ev, c->chains[c->lo]);
		const struct kv_evrec *dr = kv_evidence_dropped_removal(c->ev, c->chains[c->lo]);
		if (dr) {
			role(v, dr, "pool_removal_dropped");
			return KV_CLASS_SIGNED_HASH;
		}
		if (st) {
			role(v, &st->offload, "offload");
			role(v, &st->removal, "pool_removal_swallowed");
			return KV_CLASS_POOL_REMOVAL;
		}
	}
	return KV_CLASS_NONE;
}

/* Class 6: a pool removal kv-conductor did not apply, on a block of the
 * range: the copy it kept belongs to a worker the pool removed it from. */
static enum kv_class stale_owner(const struct kv_case *c, struct kv_verdict *v)
{
	for (uint32_t p = c->lo; p < c->hi && p < c->nchains; p++) {
		const struct kv_stale *s = kv_evidence_stale(c->ev, c->chains[p]);
		if (!s)
			continue;
		v->block = p;
		v->events = kv_evidence_events(c->ev, c->chains[p], &v->nevents);
		role(v, &s->offload, "offload");
		role(v, &s->removal, "pool_removal_swallowed");
		return KV_CLASS_STALE_OWNERSHIP;
	}
	return KV_CLASS_NONE;
}

/* ---- lag and gaps ---------------------------------------------------------- */

static const struct kv_snap_source *snap_source(const struct kv_snap *s, const char *src, size_t n)
{
	size_t lo = 0, hi = s->nsources;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2, len;
		const char *t = kv_snap_string(s, s->sources[mid].src, &len);
		int cmp = memcmp(t, src, len < n ? len : n);
		if (!cmp)
			cmp = (len > n) - (len < n);
		if (!cmp)
			return &s->sources[mid];
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

bool kv_event_newer(const struct kv_evidence *ev, const struct kv_snap *s, const struct kv_evrec *r)
{
	size_t n;
	const char *src = kv_evidence_source(ev, r->src, &n);
	const struct kv_snap_source *ss = snap_source(s, src, n);
	if (!ss || !ss->seen)
		return true;
	if (r->recv_ns != ss->last_recv_ns)
		return r->recv_ns > ss->last_recv_ns;
	return (r->flags & KV_EVR_SEQ) && r->seq > ss->last_seq;
}

static bool unseen(const struct kv_case *c, const struct kv_evrec *r)
{
	return kv_event_newer(c->ev, c->snap, r) || r->recv_ns + c->window_ns >= c->sent_ns;
}

static enum kv_class lag(const struct kv_case *c, struct kv_verdict *v)
{
	for (size_t i = 0; i < v->nevents; i++)
		if (unseen(c, &v->events[i]))
			role(v, &v->events[i],
			     kv_event_newer(c->ev, c->snap, &v->events[i]) ? "newer_than_snapshot" : "within_lag_window");
	for (size_t wi = 0; wi < c->nworkers; wi++) {
		size_t nc;
		const struct kv_evrec *cl = kv_evidence_clears(c->ev, c->workers[wi], &nc);
		for (size_t i = 0; i < nc; i++)
			if (unseen(c, &cl[i]))
				role(v, &cl[i], "clear");
	}
	return v->nroles ? KV_CLASS_LAG : KV_CLASS_NONE;
}

static void note_gap(const struct kv_case *c, uint32_t src, struct kv_verdict *v)
{
	if (!kv_evidence_gaps(c->ev, src)->missing)
		return;
	for (size_t i = 0; i < v->ngaps; i++)
		if (v->gaps[i] == src)
			return;
	if (v->ngaps < KV_VERDICT_GAPS)
		v->gaps[v->ngaps++] = src;
}

static enum kv_class gap(const struct kv_case *c, struct kv_verdict *v)
{
	size_t n;
	const uint32_t *s = kv_evidence_block_sources(c->ev, c->chains[c->lo], &n);
	for (size_t i = 0; i < n; i++)
		note_gap(c, s[i], v);
	for (size_t wi = 0; wi < c->nworkers; wi++) {
		s = kv_evidence_worker_sources(c->ev, c->workers[wi], &n);
		for (size_t i = 0; i < n; i++)
			note_gap(c, s[i], v);
	}
	/* a lost pool event names nobody: every pool's gaps count for a lower tier */
	if (c->medium != KV_XPU)
		for (uint32_t src = 0; src < kv_evidence_nsources(c->ev); src++)
			if (kv_evidence_pool_source(c->ev, src))
				note_gap(c, src, v);
	return v->ngaps ? KV_CLASS_GAP : KV_CLASS_NONE;
}

void kv_classify(const struct kv_case *c, struct kv_verdict *v)
{
	memset(v, 0, sizeof *v);
	v->block = c->lo;
	if (!c->have_events) {
		v->cls = c->other_walk ? KV_CLASS_WALK_MODE : KV_CLASS_UNEXPLAINED;
		v->note = c->other_walk ? NULL : "no captures to read the events from (--events)";
		return;
	}
	if (c->lo >= c->nchains) {
		v->cls = KV_CLASS_UNEXPLAINED;
		v->note = "the query has no block there";
		return;
	}
	v->events = kv_evidence_events(c->ev, c->chains[c->lo], &v->nevents);
	if ((v->cls = lag(c, v)))
		return;
	if (c->ownership)
		v->cls = stale_owner(c, v);
	else
		v->cls = known_mechanism(c, v);
	if (v->cls)
		return;
	if (c->other_walk) {
		v->cls = KV_CLASS_WALK_MODE;
		return;
	}
	if ((v->cls = gap(c, v)))
		return;
	v->cls = KV_CLASS_UNEXPLAINED;
	if (!v->nevents)
		v->note = "no event in the captures names this block";
	else if (!c->nworkers)
		v->note = "no event and no snapshot names this worker";
}

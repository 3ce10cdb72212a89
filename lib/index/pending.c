#include "index/pending.h"
#include "index/index.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(KV_MAX_PARTITIONS - 1 <= UINT16_MAX, "kv_pending.part holds every partition id");

#define NO_SEQ UINT64_MAX

void kv_pending_free(struct kv_pendpool *pp)
{
	for (size_t i = 0; i < pp->nparts; i++)
		kv_pend_heads_free(&pp->heads[i]);
	free(pp->heads);
	free(pp->ring);
	free(pp->workers);
	free(pp->media);
	memset(pp, 0, sizeof *pp);
}

static struct kv_pending *slot(struct kv_pendpool *pp, uint64_t seq)
{
	return &pp->ring[seq & (pp->cap - 1)];
}

static void ring_resize(struct kv_pendpool *pp, size_t cap)
{
	struct kv_pending *old = pp->ring;
	size_t oldcap = pp->cap;
	pp->ring = kv_xcalloc(cap, sizeof *pp->ring);
	pp->cap = cap;
	for (uint64_t s = pp->head; s < pp->tail; s++)
		*slot(pp, s) = old[s & (oldcap - 1)];
	free(old);
}

static struct kv_pend_heads *heads_of(struct kv_pendpool *pp, uint32_t part)
{
	if (part >= pp->nparts) {
		size_t cap = pp->nparts;
		pp->heads = kv_xgrow(pp->heads, &cap, part + 1, sizeof *pp->heads);
		memset(pp->heads + pp->nparts, 0, (cap - pp->nparts) * sizeof *pp->heads);
		pp->nparts = cap;
	}
	return &pp->heads[part];
}

bool kv_pending_add(struct kv_pendpool *pp, uint32_t part, uint64_t ehash, uint32_t worker, enum kv_medium medium,
		    uint64_t t)
{
	bool added;
	struct kv_pend_head *h = kv_pend_heads_upsert(heads_of(pp, part), ehash, &added);
	if (!added)
		for (uint64_t s = h->first; s != NO_SEQ; s = slot(pp, s)->next)
			if (slot(pp, s)->worker == worker && slot(pp, s)->medium == medium)
				return false;
	if (pp->tail - pp->head == pp->cap)
		ring_resize(pp, pp->cap ? 2 * pp->cap : 64);
	uint64_t seq = pp->tail++;
	*slot(pp, seq) = (struct kv_pending){ ehash, t, NO_SEQ, worker, (uint16_t)part, (uint8_t)medium, true };
	if (added)
		h->first = seq;
	else
		slot(pp, h->last)->next = seq;
	h->last = seq;
	h->count++;
	pp->alive++;
	return true;
}

/* Which entries of a chain go. */
struct pick {
	enum { ALL, ONE, STAMPED_BY } what;
	uint32_t worker;               /* ONE: the worker's entry in medium */
	unsigned medium;
	uint64_t cutoff;               /* STAMPED_BY: entries stamped at or before it */
};

static bool picked(const struct kv_pending *p, const struct pick *k)
{
	switch (k->what) {
	case ONE: return p->worker == k->worker && p->medium == k->medium;
	case STAMPED_BY: return p->t <= k->cutoff;
	default: return true;
	}
}

/* Room for n taken entries. */
static void taken_room(struct kv_pendpool *pp, size_t n)
{
	if (n <= pp->captaken)
		return;
	size_t cap = pp->captaken;
	pp->workers = kv_xgrow(pp->workers, &cap, n, sizeof *pp->workers);
	cap = pp->captaken;
	pp->media = kv_xgrow(pp->media, &cap, n, sizeof *pp->media);
	pp->captaken = cap;
}

/* Unlinks the entries of ehash in partition part that k picks, keeping
 * their workers and media when keep; returns how many went. */
static size_t unlink_picked(struct kv_pendpool *pp, uint32_t part, uint64_t ehash, const struct pick *k, bool keep)
{
	if (part >= pp->nparts)
		return 0;
	struct kv_pend_heads *heads = &pp->heads[part];
	struct kv_pend_head *h = kv_pend_heads_find(heads, ehash);
	if (!h)
		return 0;
	if (keep)
		taken_room(pp, h->count);
	size_t n = 0;
	uint64_t prev = NO_SEQ;
	for (uint64_t s = h->first; s != NO_SEQ;) {
		struct kv_pending *p = slot(pp, s);
		uint64_t next = p->next;
		if (picked(p, k)) {
			if (keep) {
				pp->workers[n] = p->worker;
				pp->media[n] = p->medium;
			}
			n++;
			p->alive = false;
			pp->alive--;
			h->count--;
			if (prev == NO_SEQ)
				h->first = next;
			else
				slot(pp, prev)->next = next;
			if (h->last == s)
				h->last = prev;
		} else {
			prev = s;
		}
		s = next;
	}
	if (h->count == 0)
		kv_pend_heads_remove(heads, ehash);
	return n;
}

static void fill_group(const struct kv_pendpool *pp, uint32_t part, uint64_t ehash, bool by_ttl, size_t n,
		  struct kv_pend_group *g)
{
	*g = (struct kv_pend_group){ part, ehash, by_ttl, n, pp->workers, pp->media };
}

void kv_pending_take(struct kv_pendpool *pp, uint32_t part, uint64_t ehash, struct kv_pend_group *g)
{
	struct pick k = { .what = ALL };
	fill_group(pp, part, ehash, false, unlink_picked(pp, part, ehash, &k, true), g);
}

bool kv_pending_remove(struct kv_pendpool *pp, uint32_t part, uint64_t ehash, uint32_t worker,
		       enum kv_medium medium)
{
	struct pick k = { .what = ONE, .worker = worker, .medium = medium };
	return unlink_picked(pp, part, ehash, &k, false) > 0;
}

static bool is_one_of(uint32_t w, const uint32_t *workers, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (workers[k] == w)
			return true;
	return false;
}

size_t kv_pending_clear(struct kv_pendpool *pp, uint32_t part, enum kv_medium medium, const uint32_t *workers,
			size_t n)
{
	size_t gone = 0;
	/* The ring holds every partition's entries: one pass for all workers. */
	for (uint64_t s = pp->head; s < pp->tail; s++) {
		struct kv_pending *p = slot(pp, s);
		if (!p->alive || p->part != part || p->medium != medium || !is_one_of(p->worker, workers, n))
			continue;
		gone += kv_pending_remove(pp, part, p->ehash, p->worker, medium);
	}
	return gone;
}

/* Drops the entries gone from the front of the ring; halves it when mostly empty. */
static void ring_trim(struct kv_pendpool *pp)
{
	while (pp->head < pp->tail && !slot(pp, pp->head)->alive)
		pp->head++;
	if (pp->cap > 1024 && 8 * (pp->tail - pp->head) < pp->cap)
		ring_resize(pp, pp->cap / 2);
}

bool kv_pending_expire(struct kv_pendpool *pp, uint64_t now, uint64_t ttl, uint64_t max, struct kv_pend_group *g)
{
	ring_trim(pp);
	if (pp->head == pp->tail)
		return false;
	const struct kv_pending *p = slot(pp, pp->head);
	/* Said without t + ttl, which wraps for a t near 2^64. */
	bool by_ttl = now >= p->t && now - p->t >= ttl;
	if (!by_ttl && pp->alive <= max)
		return false;
	uint32_t part = p->part;
	uint64_t ehash = p->ehash;
	/* by TTL: all as old (now - ttl does not wrap: p->t is that old);
	 * by the bound: this entry and those of its hash before it */
	struct pick k = { .what = STAMPED_BY, .cutoff = by_ttl ? now - ttl : p->t };
	fill_group(pp, part, ehash, by_ttl, unlink_picked(pp, part, ehash, &k, true), g);
	return true;
}

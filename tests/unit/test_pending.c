/* The pending pool (index/pending.h) under random operations against a
 * plain list of entries in arrival order; expiry at the exact TTL boundary
 * (and near 2^64), and the ring as it wraps, grows and shrinks. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "index/pending.h"
#include "unit.h"

/* The reference: every entry ever added, in arrival order. */
struct entry {
	uint32_t part, worker;
	uint64_t ehash, t;
	uint8_t medium;
	bool alive;
};

enum { MODEL_MAX = 40000 };

struct model {
	struct entry v[MODEL_MAX];
	size_t n;
};

static void model_add(struct model *md, struct entry e)
{
	if (md->n == MODEL_MAX)
		abort(); /* the tests add fewer */
	md->v[md->n++] = e;
}

static uint64_t model_alive(const struct model *md)
{
	uint64_t n = 0;
	for (size_t i = 0; i < md->n; i++)
		n += md->v[i].alive;
	return n;
}

static bool model_has(const struct model *md, uint32_t part, uint64_t ehash, uint32_t worker, uint8_t medium)
{
	for (size_t i = 0; i < md->n; i++) {
		const struct entry *e = &md->v[i];
		if (e->alive && e->part == part && e->ehash == ehash && e->worker == worker && e->medium == medium)
			return true;
	}
	return false;
}

static bool model_waits(const struct model *md, uint32_t part, uint64_t ehash)
{
	for (size_t i = 0; i < md->n; i++)
		if (md->v[i].alive && md->v[i].part == part && md->v[i].ehash == ehash)
			return true;
	return false;
}

/* The entries of (part, ehash) stamped at or before cutoff, taken out in
 * arrival order; true when g holds exactly those. */
static bool model_takes(struct model *md, uint32_t part, uint64_t ehash, uint64_t cutoff,
			const struct kv_pend_group *g)
{
	size_t k = 0;
	bool same = g->part == part && g->ehash == ehash;
	for (size_t i = 0; i < md->n; i++) {
		struct entry *e = &md->v[i];
		if (!e->alive || e->part != part || e->ehash != ehash || e->t > cutoff)
			continue;
		e->alive = false;
		same = same && k < g->n && g->workers[k] == e->worker && g->media[k] == e->medium;
		k++;
	}
	return same && k == g->n;
}

/* Expiry as kvmatch(1) says it: the oldest entry past the TTL takes those
 * of its hash as old with it; else, past max entries, the oldest goes with
 * those of its hash stamped no later. */
static bool model_expires(struct model *md, uint64_t now, uint64_t ttl, uint64_t max, bool got,
			  const struct kv_pend_group *g)
{
	const struct entry *oldest = NULL;
	for (size_t i = 0; i < md->n && !oldest; i++)
		if (md->v[i].alive)
			oldest = &md->v[i];
	if (!oldest)
		return !got;
	bool by_ttl = now >= oldest->t && now - oldest->t >= ttl;
	if (!by_ttl && model_alive(md) <= max)
		return !got;
	if (!got || g->by_ttl != by_ttl)
		return false;
	return model_takes(md, oldest->part, oldest->ehash, by_ttl ? now - ttl : oldest->t, g);
}

/* The pool's entries in arrival order are the model's living ones. */
static bool same_entries(const struct kv_pendpool *pp, const struct model *md)
{
	size_t i = 0;
	const struct kv_pending *p;
	for (uint64_t seq = 0; (p = kv_pending_next(pp, &seq)); seq++) {
		while (i < md->n && !md->v[i].alive)
			i++;
		if (i == md->n)
			return false;
		const struct entry *e = &md->v[i++];
		if (p->part != e->part || p->ehash != e->ehash || p->worker != e->worker || p->medium != e->medium ||
		    p->t != e->t)
			return false;
	}
	while (i < md->n && !md->v[i].alive)
		i++;
	return i == md->n && kv_pending_count(pp) == model_alive(md);
}

static uint64_t pick(uint64_t n)
{
	return unit_rand() % n;
}

static void matches_model_under_random_operations(void)
{
	struct kv_pendpool pp = { 0 };
	static struct model md;
	md.n = 0;
	uint64_t now = 1000;
	for (int op = 0; op < 40000; op++) {
		/* few partitions, hashes, workers: long chains, many repeats */
		uint32_t part = (uint32_t)pick(3), worker = (uint32_t)pick(5);
		uint64_t ehash = pick(12);      /* 0 is a hash like any other */
		uint8_t medium = (uint8_t)pick(3);
		int what = (int)pick(100);
		if (what < 45) {
			/* mostly now, sometimes older (a snapshot's entries come back as they were) */
			uint64_t t = pick(10) ? now : now - pick(50);
			bool dup = model_has(&md, part, ehash, worker, medium);
			ASSERT(kv_pending_add(&pp, part, ehash, worker, (enum kv_medium)medium, t) == !dup);
			if (!dup)
				model_add(&md, (struct entry){ part, worker, ehash, t, medium, true });
		} else if (what < 55) {
			ASSERT(kv_pending_waits(&pp, part, ehash) == model_waits(&md, part, ehash));
		} else if (what < 62) {
			struct kv_pend_group g;
			kv_pending_take(&pp, part, ehash, &g);
			ASSERT(model_takes(&md, part, ehash, UINT64_MAX, &g));
		} else if (what < 75) {
			bool had = model_has(&md, part, ehash, worker, medium);
			ASSERT(kv_pending_remove(&pp, part, ehash, worker, (enum kv_medium)medium) == had);
			for (size_t i = 0; i < md.n; i++) {
				struct entry *e = &md.v[i];
				if (e->alive && e->part == part && e->ehash == ehash && e->worker == worker && e->medium == medium)
					e->alive = false;
			}
		} else if (what < 78) {
			uint32_t ws[2] = { worker, (uint32_t)pick(5) };
			size_t want = 0;
			for (size_t i = 0; i < md.n; i++) {
				struct entry *e = &md.v[i];
				if (e->alive && e->part == part && e->medium == medium && (e->worker == ws[0] || e->worker == ws[1])) {
					e->alive = false;
					want++;
				}
			}
			ASSERT_EQ_U64(kv_pending_clear(&pp, part, (enum kv_medium)medium, ws, 2), want);
		} else if (what < 95) {
			now += pick(8);
			uint64_t ttl = 20 + pick(20), max = 10 + pick(60);
			struct kv_pend_group g;
			for (int k = 0; k < 1000; k++) {
				bool got = kv_pending_expire(&pp, now, ttl, max, &g);
				ASSERT(model_expires(&md, now, ttl, max, got, &g));
				if (!got)
					break;
			}
		} else {
			ASSERT(same_entries(&pp, &md));
		}
	}
	ASSERT(same_entries(&pp, &md));
	kv_pending_free(&pp);
}

/* An entry stamped t expires at t + ttl exactly, not a nanosecond before;
 * near 2^64 too, where t + ttl would wrap. */
static void expires_at_the_ttl_boundary(void)
{
	static const uint64_t stamps[] = { 0, 5, 1000000000ull, UINT64_MAX - 15, UINT64_MAX - 10 };
	for (size_t i = 0; i < sizeof stamps / sizeof stamps[0]; i++) {
		uint64_t t = stamps[i], ttl = 10;
		struct kv_pendpool pp = { 0 };
		struct kv_pend_group g;
		ASSERT(kv_pending_add(&pp, 1, 77, 3, KV_CPU, t));
		ASSERT(kv_pending_add(&pp, 1, 77, 4, KV_DISK, t));
		ASSERT(!kv_pending_expire(&pp, t, ttl, 100, &g));
		if (t <= UINT64_MAX - ttl) {
			ASSERT(!kv_pending_expire(&pp, t + ttl - 1, ttl, 100, &g));
			ASSERT(kv_pending_expire(&pp, t + ttl, ttl, 100, &g));
			ASSERT(g.by_ttl && g.part == 1 && g.ehash == 77 && g.n == 2);
			ASSERT(g.workers[0] == 3 && g.media[0] == KV_CPU && g.workers[1] == 4 && g.media[1] == KV_DISK);
			ASSERT(!kv_pending_expire(&pp, t + ttl, ttl, 100, &g));
			ASSERT_EQ_U64(kv_pending_count(&pp), 0);
		} else {
			/* never ttl old before the end of time: it stays */
			ASSERT(!kv_pending_expire(&pp, UINT64_MAX, ttl, 100, &g));
			ASSERT_EQ_U64(kv_pending_count(&pp), 2);
		}
		kv_pending_free(&pp);
	}
	/* an entry stamped after now is not old at all, even with no TTL */
	struct kv_pendpool pp = { 0 };
	struct kv_pend_group g;
	ASSERT(kv_pending_add(&pp, 0, 1, 0, KV_CPU, 50));
	ASSERT(!kv_pending_expire(&pp, 49, 0, 100, &g));
	ASSERT(kv_pending_expire(&pp, 50, 0, 100, &g) && g.by_ttl && g.n == 1);
	kv_pending_free(&pp);
}

/* Over max entries the oldest goes, with the entries of its hash stamped no
 * later, not those stamped after it. */
static void bound_takes_the_oldest(void)
{
	struct kv_pendpool pp = { 0 };
	struct kv_pend_group g;
	ASSERT(kv_pending_add(&pp, 0, 5, 1, KV_CPU, 100));
	ASSERT(kv_pending_add(&pp, 0, 6, 1, KV_CPU, 100));
	ASSERT(kv_pending_add(&pp, 0, 5, 2, KV_CPU, 100));
	ASSERT(kv_pending_add(&pp, 0, 5, 3, KV_CPU, 101));
	ASSERT(!kv_pending_add(&pp, 0, 5, 3, KV_CPU, 102)); /* waits already: the first time stays */
	ASSERT(kv_pending_expire(&pp, 101, 1000, 3, &g));
	ASSERT(!g.by_ttl && g.ehash == 5 && g.n == 2 && g.workers[0] == 1 && g.workers[1] == 2);
	ASSERT(!kv_pending_expire(&pp, 101, 1000, 3, &g));
	ASSERT_EQ_U64(kv_pending_count(&pp), 2);
	kv_pending_free(&pp);
}

/* The ring wraps, grows (from 64 entries, doubling) and halves when mostly
 * empty, keeping arrival order and chains through all of it. */
static void ring_wraps_grows_and_shrinks(void)
{
	struct kv_pendpool pp = { 0 };
	static struct model md;
	md.n = 0;
	struct kv_pend_group g;
	uint64_t t = 1;
	/* 50 in, 40 out (expired): the next ones wrap past the end of 64 slots */
	for (uint32_t i = 0; i < 50; i++, t++) {
		ASSERT(kv_pending_add(&pp, i % 2, i % 7, i, KV_CPU, t));
		model_add(&md, (struct entry){ i % 2, i, i % 7, t, KV_CPU, true });
	}
	ASSERT_EQ_U64(pp.cap, 64);
	while (kv_pending_count(&pp) > 10) {
		ASSERT(kv_pending_expire(&pp, t, 1000, 10, &g));
		ASSERT(model_expires(&md, t, 1000, 10, true, &g));
	}
	for (uint32_t i = 50; i < 100; i++, t++) {
		ASSERT(kv_pending_add(&pp, i % 2, i % 7, i, KV_CPU, t));
		model_add(&md, (struct entry){ i % 2, i, i % 7, t, KV_CPU, true });
	}
	ASSERT(pp.tail > pp.cap && pp.cap == 64);
	ASSERT(same_entries(&pp, &md));
	/* past 64 at once: it grows, wrapped entries moved in order */
	for (uint32_t i = 100; i < 5000; i++, t++) {
		ASSERT(kv_pending_add(&pp, i % 2, i % 7, i, KV_CPU, t));
		model_add(&md, (struct entry){ i % 2, i, i % 7, t, KV_CPU, true });
	}
	ASSERT(pp.cap >= 8192);
	ASSERT(same_entries(&pp, &md));
	for (uint64_t k = 0; k < 7; k++)
		ASSERT(kv_pending_waits(&pp, 0, k) && kv_pending_waits(&pp, 1, k));
	/* nearly all expire, as event time goes on: the ring halves as expiry
	 * reaches the living ones */
	for (uint64_t now = 100; now <= t; now++)
		for (;;) {
			bool got = kv_pending_expire(&pp, now, 20, 1000000, &g);
			ASSERT(model_expires(&md, now, 20, 1000000, got, &g));
			if (!got)
				break;
		}
	ASSERT_EQ_U64(kv_pending_count(&pp), 19);
	ASSERT_EQ_U64(pp.cap, 1024);
	ASSERT(same_entries(&pp, &md));
	kv_pending_free(&pp);
}

int main(void)
{
	RUN(matches_model_under_random_operations);
	RUN(expires_at_the_ttl_boundary);
	RUN(bound_takes_the_oldest);
	RUN(ring_wraps_grows_and_shrinks);
	return unit_done();
}

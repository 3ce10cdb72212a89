#include "index/index.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

static void sets_init(struct kv_holder_sets *s);
static void sets_free(struct kv_holder_sets *s);

void kv_index_init(struct kv_index *ix)
{
	memset(ix, 0, sizeof *ix);
	sets_init(&ix->sets);
}

void kv_index_free(struct kv_index *ix)
{
	for (size_t i = 0; i < ix->n; i++) {
		free(ix->p[i].model);
		free(ix->p[i].tenant);
		kv_blocks_free(&ix->p[i].blocks);
		kv_ehashes_free(&ix->p[i].ehashes);
	}
	free(ix->p);
	sets_free(&ix->sets);
	free(ix->held);
	memset(ix, 0, sizeof *ix);
}

static void count_held(struct kv_index *ix, uint32_t w, unsigned bits, int delta)
{
	size_t need = ((size_t)w + 1) * KV_NMEDIA;
	if (need > ix->capheld) {
		size_t old = ix->capheld;
		ix->held = kv_xgrow(ix->held, &ix->capheld, need, sizeof *ix->held);
		memset(ix->held + old, 0, (ix->capheld - old) * sizeof *ix->held);
	}
	for (unsigned m = 0; m < KV_NMEDIA; m++)
		if (bits & KV_MEDIUM_BIT(m))
			ix->held[(size_t)w * KV_NMEDIA + m] += (uint64_t)(int64_t)delta;
}

uint64_t kv_index_held(const struct kv_index *ix, uint32_t w, enum kv_medium m)
{
	size_t at = (size_t)w * KV_NMEDIA + m;
	return m < KV_NMEDIA && at < ix->capheld ? ix->held[at] : 0;
}

static bool same(const char *s, const char *p, size_t n)
{
	return strlen(s) == n && memcmp(s, p, n) == 0;
}

/* bounded: what events ask for, refused past the limits (index.h). */
static uint32_t partition(struct kv_index *ix, const char *model, size_t mlen, const char *tenant, size_t tlen,
			  bool bounded)
{
	/* Names are C strings from here on (lookups, state lines, the
	 * snapshot): one from the wire ends at its first NUL byte, else it
	 * would never find its own partition again, and a snapshot would hold
	 * two partitions of the same name, which its loader refuses. */
	mlen = strnlen(model, mlen);
	tlen = strnlen(tenant, tlen);
	for (size_t i = 0; i < ix->n; i++)
		if (same(ix->p[i].model, model, mlen) && same(ix->p[i].tenant, tenant, tlen))
			return (uint32_t)i;
	if (bounded && (ix->n >= KV_MAX_PARTITIONS || mlen > KV_MAX_PARTITION_NAME || tlen > KV_MAX_PARTITION_NAME))
		return KV_NO_PARTITION;
	ix->p = kv_xgrow(ix->p, &ix->cap, ix->n + 1, sizeof *ix->p);
	struct kv_partition *p = &ix->p[ix->n];
	memset(p, 0, sizeof *p);
	p->model = kv_xstrndup(model, mlen);
	p->tenant = kv_xstrndup(tenant, tlen);
	if (ix->n == 0 && ix->expect_blocks) {
		kv_blocks_reserve(&p->blocks, ix->expect_blocks);
		kv_ehashes_reserve(&p->ehashes, ix->expect_blocks);
	}
	return (uint32_t)ix->n++;
}

uint32_t kv_index_partition(struct kv_index *ix, const char *model, size_t mlen, const char *tenant, size_t tlen)
{
	return partition(ix, model, mlen, tenant, tlen, false);
}

uint32_t kv_index_partition_bounded(struct kv_index *ix, const char *model, size_t mlen, const char *tenant,
				    size_t tlen)
{
	return partition(ix, model, mlen, tenant, tlen, true);
}

int64_t kv_index_find_partition(const struct kv_index *ix, const char *model, const char *tenant)
{
	for (size_t i = 0; i < ix->n; i++)
		if (strcmp(ix->p[i].model, model) == 0 && strcmp(ix->p[i].tenant, tenant) == 0)
			return (int64_t)i;
	return -1;
}

/* ---- holder lists -------------------------------------------------------- */

static unsigned size_class(size_t n)
{
	unsigned c = 1;
	while ((1u << c) < n)
		c++;
	return c;
}

static uint32_t arena_alloc(struct kv_holder_arena *a, unsigned cls)
{
	if (a->free[cls]) {
		uint32_t off = a->free[cls] - 1;
		a->free[cls] = a->a[off];
		return off;
	}
	size_t need = a->len + (1u << cls);
	if (need > UINT32_MAX)
		kv_die(KV_EX_SOFTWARE, "holder lists beyond 2^32 entries");
	a->a = kv_xgrow(a->a, &a->cap, need, sizeof *a->a);
	uint32_t off = (uint32_t)a->len;
	a->len = need;
	return off;
}

static void arena_release(struct kv_holder_arena *a, uint32_t off, unsigned cls)
{
	a->a[off] = a->free[cls];
	a->free[cls] = off + 1;
}

/* Position of w in the sorted holders, or where it would go. */
static size_t holder_pos(const uint32_t *h, size_t n, uint32_t w, bool *found)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (KV_HOLDER_WORKER(h[mid]) < w)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < n && KV_HOLDER_WORKER(h[lo]) == w;
	return lo;
}

/* ---- holder sets --------------------------------------------------------- */

static void sets_init(struct kv_holder_sets *s)
{
	s->v = kv_xgrow(NULL, &s->cap, 1, sizeof *s->v);
	memset(&s->v[0], 0, sizeof s->v[0]);
	s->n = 1;
	s->idle_max = 1024;
	s->cache = kv_xcalloc(KV_TRANSITIONS, sizeof *s->cache);
}

static void sets_free(struct kv_holder_sets *s)
{
	free(s->v);
	free(s->arena.a);
	kv_setids_free(&s->byhash);
	free(s->cache);
	free(s->scratch);
}

static const uint32_t *members_of(const struct kv_holder_sets *s, uint32_t id)
{
	const struct kv_hset *h = &s->v[id];
	return h->n <= 1 ? &h->members : s->arena.a + h->members;
}

/* The same, to change in place. */
static uint32_t *members_rw(struct kv_holder_sets *s, uint32_t id)
{
	struct kv_hset *h = &s->v[id];
	return h->n <= 1 ? &h->members : s->arena.a + h->members;
}

/* What a holder adds to its set's content hash: a sum, so that a change of
 * one holder changes the hash without a look at the others. */
static uint64_t holder_hash(uint32_t holder)
{
	return kv_mix64(holder);
}

/* A fresh id with no holders and no references. */
static uint32_t set_new_id(struct kv_holder_sets *s)
{
	uint32_t id = s->free;
	if (id) {
		s->free = s->v[id].members;
		return id;
	}
	if (s->n > UINT32_MAX)
		kv_die(KV_EX_SOFTWARE, "holder sets beyond 2^32");
	s->v = kv_xgrow(s->v, &s->cap, s->n + 1, sizeof *s->v);
	id = (uint32_t)s->n++;
	memset(&s->v[id], 0, sizeof s->v[id]);
	return id;
}

/* Makes hash find id, unless another set has that hash already. */
static void set_intern(struct kv_holder_sets *s, uint32_t id)
{
	bool added;
	struct kv_setid *e = kv_setids_upsert(&s->byhash, s->v[id].hash, &added);
	if (added)
		e->id = id;
}

static void set_unintern(struct kv_holder_sets *s, uint32_t id)
{
	struct kv_setid *e = kv_setids_find(&s->byhash, s->v[id].hash);
	if (e && e->id == id)
		kv_setids_remove(&s->byhash, s->v[id].hash);
}

/* A new set of the n (>= 1) sorted holders h, not yet referenced. */
static uint32_t set_create(struct kv_holder_sets *s, const uint32_t *h, size_t n, uint64_t hash)
{
	uint32_t id = set_new_id(s);
	if (n > 1) {
		uint32_t off = arena_alloc(&s->arena, size_class(n));
		memcpy(s->arena.a + off, h, n * sizeof *h);
		s->v[id].members = off;
	} else {
		s->v[id].members = h[0];
	}
	s->v[id].n = (uint16_t)n;
	s->v[id].hash = hash;
	set_intern(s, id);
	s->idle++; /* until set_ref */
	return id;
}

static void set_destroy(struct kv_holder_sets *s, uint32_t id)
{
	struct kv_hset *h = &s->v[id];
	set_unintern(s, id);
	if (h->n > 1)
		arena_release(&s->arena, h->members, size_class(h->n));
	h->n = 0;
	h->gen++;
	h->members = s->free;
	s->free = id;
}

/* Frees every idle set: one pass over the ids. */
static void sets_reclaim(struct kv_holder_sets *s)
{
	for (uint32_t id = 1; id < s->n; id++)
		if (!s->v[id].refs && s->v[id].n)
			set_destroy(s, id);
	s->idle = 0;
}

static void set_ref(struct kv_holder_sets *s, uint32_t id)
{
	if (id && s->v[id].refs++ == 0) {
		s->idle--;
		s->live++;
	}
}

/* A set that no block has any more is freed, its id taken again.  A small
 * one stays a while first, idle: the sets that one block passes through
 * (a pool event's holders added one by one) are left at once and taken
 * again by the next block, and with them their cached transitions (on the
 * cluster capture, 14M cache hits against 30M misses when freed at once,
 * 44M against 17K idle).  Idle sets are freed all together once there are
 * more than idle_max of them and they are the most of all ids, so that the
 * pass over the ids costs two steps at most per set freed. */
static void set_unref(struct kv_holder_sets *s, uint32_t id)
{
	if (!id || --s->v[id].refs)
		return;
	s->live--;
	if (s->v[id].n > KV_SET_KEEP_MAX) {
		set_destroy(s, id);
		return;
	}
	s->idle++;
	if (s->idle > s->idle_max && 2 * s->idle > s->n)
		sets_reclaim(s);
}

/* One worker's change to a set: its holders with the entry of the worker at
 * pos (found: there is one) replaced by holder, or dropped when holder is 0. */
struct edit {
	size_t pos;
	bool found;
	uint32_t holder;
	size_t n;              /* holders after the change */
	uint64_t hash;         /* content hash after the change */
};

/* Whether set id holds exactly what edit e makes of the n holders h. */
static bool set_is_edit(const struct kv_holder_sets *s, uint32_t id, const uint32_t *h, size_t n, const struct edit *e)
{
	if (s->v[id].n != e->n)
		return false;
	const uint32_t *c = members_of(s, id);
	size_t rest = n - e->pos - e->found;
	if (memcmp(c, h, e->pos * sizeof *h) != 0)
		return false;
	if (e->holder && c[e->pos] != e->holder)
		return false;
	return memcmp(c + e->pos + !!e->holder, h + e->pos + e->found, rest * sizeof *h) == 0;
}

/* A new set: what edit e makes of the n holders of set from. */
static uint32_t set_create_edited(struct kv_holder_sets *s, uint32_t from, const struct edit *e)
{
	size_t n = s->v[from].n;
	s->scratch = kv_xgrow(s->scratch, &s->capscratch, n + 1, sizeof *s->scratch);
	const uint32_t *h = members_of(s, from);
	uint32_t *d = s->scratch;
	memcpy(d, h, e->pos * sizeof *h);
	if (e->holder)
		d[e->pos] = e->holder;
	memcpy(d + e->pos + !!e->holder, h + e->pos + e->found, (n - e->pos - e->found) * sizeof *h);
	return set_create(s, d, e->n, e->hash);
}

/* Inserts a holder at pos of a set that only one block has, moving its list
 * to a bigger class when full. */
static void set_insert_in_place(struct kv_holder_sets *s, uint32_t id, size_t pos, uint32_t holder)
{
	struct kv_holder_arena *a = &s->arena;
	size_t n = s->v[id].n;
	unsigned cls = size_class(n + 1);
	if (n == 1 || size_class(n) != cls) {
		uint32_t off = arena_alloc(a, cls);
		const uint32_t *src = members_of(s, id);
		memcpy(a->a + off, src, n * sizeof *src);
		if (n > 1)
			arena_release(a, s->v[id].members, size_class(n));
		s->v[id].members = off;
	}
	uint32_t *h = a->a + s->v[id].members;
	memmove(h + pos + 1, h + pos, (n - pos) * sizeof *h);
	h[pos] = holder;
	s->v[id].n = (uint16_t)(n + 1);
}

/* Drops the holder at pos of a set that only one block has (it keeps one at least). */
static void set_delete_in_place(struct kv_holder_sets *s, uint32_t id, size_t pos)
{
	struct kv_holder_arena *a = &s->arena;
	size_t n = s->v[id].n;
	uint32_t *h = a->a + s->v[id].members;
	memmove(h + pos, h + pos + 1, (n - pos - 1) * sizeof *h);
	n--;
	if (n == 1) {
		uint32_t last = h[0];
		arena_release(a, s->v[id].members, size_class(2));
		s->v[id].members = last;
	} else if (size_class(n) != size_class(n + 1)) {
		uint32_t off = arena_alloc(a, size_class(n));
		memcpy(a->a + off, a->a + s->v[id].members, n * sizeof *h);
		arena_release(a, s->v[id].members, size_class(n + 1));
		s->v[id].members = off;
	}
	s->v[id].n = (uint16_t)n;
}

/* Applies edit e to a set that only one block has: no copy of a set that
 * nothing shares, however large.  Its content changes, so its generation
 * does too: no cached transition of the old content applies to it. */
static void set_edit_in_place(struct kv_holder_sets *s, uint32_t id, const struct edit *e)
{
	set_unintern(s, id);
	if (e->found && e->holder)
		members_rw(s, id)[e->pos] = e->holder;
	else if (e->holder)
		set_insert_in_place(s, id, e->pos, e->holder);
	else
		set_delete_in_place(s, id, e->pos);
	s->v[id].hash = e->hash;
	s->v[id].gen++;
	set_intern(s, id);
}

/* The set that edit e makes of set from, found by its hash, else made: by
 * changing from in place when the one block that has it is the one
 * changing, else as a new set. */
static uint32_t set_after_edit(struct kv_holder_sets *s, uint32_t from, const struct edit *e, bool *in_place)
{
	*in_place = false;
	if (e->n == 0)
		return 0;
	struct kv_setid *known = kv_setids_find(&s->byhash, e->hash);
	if (known && set_is_edit(s, known->id, members_of(s, from), s->v[from].n, e))
		return known->id;
	if (from && s->v[from].refs == 1 && s->v[from].n > KV_SET_KEEP_MAX) {
		set_edit_in_place(s, from, e);
		*in_place = true;
		return from;
	}
	return set_create_edited(s, from, e);
}

static struct kv_transition *transition_slot(const struct kv_holder_sets *s, uint32_t from, uint32_t change)
{
	return &s->cache[kv_mix64((uint64_t)from << 32 | change) & (KV_TRANSITIONS - 1)];
}

/* The cached transition of set from by change, if still valid: neither end
 * has been freed or changed in place since. */
static const struct kv_transition *transition_cached(const struct kv_holder_sets *s, uint32_t from, uint32_t change)
{
	const struct kv_transition *t = transition_slot(s, from, change);
	if (t->change == change && t->from == from && t->from_gen == s->v[from].gen && t->to_gen == s->v[t->to].gen)
		return t;
	return NULL;
}

/* Works out what worker w gaining (hold) or losing the media of bits does
 * to set from: t->to is the set it becomes (from itself when nothing
 * changes, or when from was changed in place).  False when w would be a new
 * holder of a set that has KV_MAX_HOLDERS already. */
static bool set_transition(struct kv_holder_sets *s, uint32_t from, uint32_t w, unsigned bits, bool hold,
			   struct kv_transition *t)
{
	bits = KV_HOLDER_MEDIA(bits);
	uint32_t change = w << 4 | bits << 1 | hold;
	const struct kv_transition *c = transition_cached(s, from, change);
	if (c) {
		*t = *c;
		return true;
	}
	size_t n = s->v[from].n;
	const uint32_t *h = members_of(s, from);
	struct edit e;
	e.pos = holder_pos(h, n, w, &e.found);
	unsigned cur = e.found ? KV_HOLDER_MEDIA(h[e.pos]) : 0, now = hold ? cur | bits : cur & ~bits;
	if (!e.found && now && n == KV_MAX_HOLDERS)
		return false;
	*t = (struct kv_transition){ from, s->v[from].gen, change, from, s->v[from].gen, (uint8_t)(cur ^ now), 0 };
	if (now != cur) {
		t->holders = (int8_t)(!cur ? 1 : !now ? -1 : 0);
		e.holder = now ? KV_HOLDER(w, now) : 0;
		e.n = n + (t->holders > 0) - (t->holders < 0);
		e.hash = s->v[from].hash - (e.found ? holder_hash(h[e.pos]) : 0) + (now ? holder_hash(e.holder) : 0);
		bool in_place;
		t->to = set_after_edit(s, from, &e, &in_place);
		t->to_gen = s->v[t->to].gen;
		if (in_place)
			return true; /* from's old content is gone: nothing to remember */
	}
	*transition_slot(s, from, change) = *t;
	return true;
}

/* ---- holding ------------------------------------------------------------- */

static unsigned media_of(const struct kv_holder_sets *s, uint32_t id, uint32_t w)
{
	bool found;
	const uint32_t *h = members_of(s, id);
	size_t i = holder_pos(h, s->v[id].n, w, &found);
	return found ? KV_HOLDER_MEDIA(h[i]) : 0;
}

unsigned kv_block_media(const struct kv_index *ix, const struct kv_block *b, uint32_t w)
{
	return media_of(&ix->sets, b->set, w);
}

/* w gains (hold) or loses the media of bits in block b; returns the media
 * that changed (0: none, or refused and counted). */
static unsigned change_holder(struct kv_index *ix, struct kv_partition *p, struct kv_block *b, uint32_t w,
			      unsigned bits, bool hold)
{
	struct kv_holder_sets *s = &ix->sets;
	struct kv_transition t;
	if (!set_transition(s, b->set, w, bits, hold, &t)) {
		ix->refused++;
		return 0;
	}
	if (!t.media)
		return 0;
	if (t.to != b->set) {
		set_ref(s, t.to);
		set_unref(s, b->set);
		b->set = t.to;
	}
	count_held(ix, w, t.media, hold ? 1 : -1);
	p->holdings += (uint64_t)(int64_t)t.holders;
	return t.media;
}

/* Makes w hold block b in medium m; true when that is new. */
static bool hold_in(struct kv_index *ix, struct kv_partition *p, struct kv_block *b, uint32_t w, enum kv_medium m)
{
	return change_holder(ix, p, b, w, KV_MEDIUM_BIT(m), true) != 0;
}

static struct kv_block *block_for(struct kv_partition *p, uint64_t chain, uint64_t parent, uint64_t local)
{
	bool added;
	struct kv_block *b = kv_blocks_upsert(&p->blocks, chain, &added);
	if (added) {
		b->parent = parent;
		b->local = local;
	}
	return b;
}

bool kv_index_hold(struct kv_index *ix, uint32_t part, uint64_t chain, uint64_t parent, uint64_t local,
		   uint32_t w, enum kv_medium m)
{
	struct kv_partition *p = &ix->p[part];
	return hold_in(ix, p, block_for(p, chain, parent, local), w, m);
}

size_t kv_index_hold_many(struct kv_index *ix, uint32_t part, uint64_t chain, uint64_t parent, uint64_t local,
			  const uint32_t *w, size_t n, enum kv_medium m)
{
	struct kv_partition *p = &ix->p[part];
	struct kv_block *b = block_for(p, chain, parent, local);
	size_t fresh = 0;
	for (size_t k = 0; k < n; k++)
		fresh += hold_in(ix, p, b, w[k], m);
	return fresh;
}

size_t kv_index_release_many(struct kv_index *ix, uint32_t part, uint64_t chain, const uint32_t *w, size_t n,
			     enum kv_medium m, bool *freed, uint64_t *parent, uint64_t *local)
{
	struct kv_partition *p = &ix->p[part];
	*freed = false;
	struct kv_block *b = kv_blocks_find(&p->blocks, chain);
	if (!b)
		return 0;
	size_t held = 0;
	for (size_t k = 0; k < n; k++)
		held += change_holder(ix, p, b, w[k], KV_MEDIUM_BIT(m), false) != 0;
	if (b->set == 0) {
		*freed = true;
		*parent = b->parent;
		*local = b->local;
		kv_blocks_remove(&p->blocks, chain);
	}
	return held;
}

bool kv_index_release(struct kv_index *ix, uint32_t part, uint64_t chain, uint32_t w, enum kv_medium m,
		      bool *freed, uint64_t *parent, uint64_t *local)
{
	return kv_index_release_many(ix, part, chain, &w, 1, m, freed, parent, local) > 0;
}

struct release_all {
	struct kv_index *ix;
	struct kv_partition *p;
	uint32_t part, w;
	unsigned mask;
	size_t dropped;
	void (*freed)(void *arg, uint32_t part, const struct kv_block *b);
	void *arg;
};

/* Whether block b goes once the worker leaves it. */
static bool released_last(struct kv_block *b, void *arg)
{
	struct release_all *r = arg;
	if (!change_holder(r->ix, r->p, b, r->w, r->mask, false))
		return false;
	r->dropped++;
	if (b->set != 0)
		return false;
	if (r->freed)
		r->freed(r->arg, r->part, b);
	return true;
}

size_t kv_index_release_all(struct kv_index *ix, uint32_t part, uint32_t w, unsigned mask,
			    void (*freed)(void *arg, uint32_t part, const struct kv_block *b), void *arg)
{
	struct release_all r = { ix, &ix->p[part], part, w, mask, 0, freed, arg };
	kv_blocks_remove_if(&ix->p[part].blocks, released_last, &r);
	return r.dropped;
}

uint64_t kv_index_blocks(const struct kv_index *ix)
{
	uint64_t n = 0;
	for (size_t i = 0; i < ix->n; i++)
		n += kv_blocks_count(&ix->p[i].blocks);
	return n;
}

uint64_t kv_index_holdings(const struct kv_index *ix)
{
	uint64_t n = 0;
	for (size_t i = 0; i < ix->n; i++)
		n += ix->p[i].holdings;
	return n;
}

#include "index.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

void kv_index_init(struct kv_index *ix)
{
	memset(ix, 0, sizeof *ix);
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
	free(ix->arena.a);
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

const uint32_t *kv_block_holders(const struct kv_index *ix, const struct kv_block *b)
{
	return b->n <= 1 ? &b->holder : ix->arena.a + b->holder;
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

unsigned kv_block_media(const struct kv_index *ix, const struct kv_block *b, uint32_t w)
{
	bool found;
	const uint32_t *h = kv_block_holders(ix, b);
	size_t i = holder_pos(h, b->n, w, &found);
	return found ? KV_HOLDER_MEDIA(h[i]) : 0;
}

/* Inserts a new holder at position i, moving the list to a bigger class when full. */
static void insert_holder(struct kv_index *ix, struct kv_block *b, size_t i, uint32_t holder)
{
	struct kv_holder_arena *a = &ix->arena;
	if (b->n == 0) {
		b->holder = holder;
		b->n = 1;
		return;
	}
	size_t n = b->n;
	unsigned cls = size_class(n + 1);
	uint32_t old_inline = b->holder;
	if (n == 1 || size_class(n) != cls) {
		uint32_t off = arena_alloc(a, cls);
		const uint32_t *src = n == 1 ? &old_inline : a->a + b->holder;
		memcpy(a->a + off, src, n * sizeof *src);
		if (n > 1)
			arena_release(a, b->holder, size_class(n));
		b->holder = off;
	}
	uint32_t *h = a->a + b->holder;
	memmove(h + i + 1, h + i, (n - i) * sizeof *h);
	h[i] = holder;
	b->n = (uint16_t)(n + 1);
}

static void delete_holder(struct kv_index *ix, struct kv_block *b, size_t i)
{
	struct kv_holder_arena *a = &ix->arena;
	size_t n = b->n;
	if (n == 1) {
		b->n = 0;
		return;
	}
	uint32_t *h = a->a + b->holder;
	memmove(h + i, h + i + 1, (n - i - 1) * sizeof *h);
	n--;
	if (n == 1) {
		uint32_t last = h[0];
		arena_release(a, b->holder, size_class(2));
		b->holder = last;
	} else if (size_class(n) != size_class(n + 1)) {
		uint32_t off = arena_alloc(a, size_class(n));
		memcpy(a->a + off, a->a + b->holder, n * sizeof *h);
		arena_release(a, b->holder, size_class(n + 1));
		b->holder = off;
	}
	b->n = (uint16_t)n;
}

/* ---- holding ------------------------------------------------------------- */

/* Makes w hold block b in medium m; true when that is new. */
static bool hold_in(struct kv_index *ix, struct kv_partition *p, struct kv_block *b, uint32_t w, enum kv_medium m)
{
	bool found;
	uint32_t *h = b->n <= 1 ? &b->holder : ix->arena.a + b->holder;
	size_t i = holder_pos(h, b->n, w, &found);
	unsigned bit = KV_MEDIUM_BIT(m);
	if (found) {
		if (h[i] & bit)
			return false;
		h[i] |= bit;
		count_held(ix, w, bit, 1);
		return true;
	}
	if (b->n == KV_MAX_HOLDERS) {
		ix->refused++;
		return false;
	}
	insert_holder(ix, b, i, KV_HOLDER(w, bit));
	count_held(ix, w, bit, 1);
	p->holdings++;
	return true;
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

/* w stops holding b in medium m; false when it did not. */
static bool release_in(struct kv_index *ix, struct kv_partition *p, struct kv_block *b, uint32_t w, enum kv_medium m)
{
	bool found;
	uint32_t *h = b->n <= 1 ? &b->holder : ix->arena.a + b->holder;
	size_t i = holder_pos(h, b->n, w, &found);
	unsigned bit = KV_MEDIUM_BIT(m);
	if (!found || !(h[i] & bit))
		return false;
	h[i] &= ~bit;
	count_held(ix, w, bit, -1);
	if (KV_HOLDER_MEDIA(h[i]))
		return true;
	delete_holder(ix, b, i);
	p->holdings--;
	return true;
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
		held += release_in(ix, p, b, w[k], m);
	if (b->n == 0) {
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

size_t kv_index_release_all(struct kv_index *ix, uint32_t part, uint32_t w, unsigned mask,
			    void (*freed)(void *arg, uint32_t part, const struct kv_block *b), void *arg)
{
	struct kv_partition *p = &ix->p[part];
	size_t dropped = 0, ngone = 0, capgone = 0;
	uint64_t *gone = NULL;
	/* Remove after the scan: removing shifts (and may shrink) the table. */
	for (size_t s = 0; s <= p->blocks.cap; s++) {
		struct kv_block *b = s < p->blocks.cap ? &p->blocks.slots[s] : p->blocks.has_zero ? &p->blocks.zero : NULL;
		if (!b || (s < p->blocks.cap && b->key == 0))
			continue;
		bool found;
		uint32_t *h = b->n <= 1 ? &b->holder : ix->arena.a + b->holder;
		size_t i = holder_pos(h, b->n, w, &found);
		if (!found || !(h[i] & mask))
			continue;
		dropped++;
		count_held(ix, w, h[i] & mask, -1);
		h[i] &= ~mask;
		if (KV_HOLDER_MEDIA(h[i]))
			continue;
		delete_holder(ix, b, i);
		p->holdings--;
		if (b->n == 0) {
			if (freed)
				freed(arg, part, b);
			gone = kv_xgrow(gone, &capgone, ngone + 1, sizeof *gone);
			gone[ngone++] = b->key;
		}
	}
	for (size_t i = 0; i < ngone; i++)
		kv_blocks_remove(&p->blocks, gone[i]);
	free(gone);
	return dropped;
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

/* kv_sort_keys against qsort: uniform keys (the fast path), small and
 * repeated keys (its fallback), keys alike in their top bits, and sizes
 * around the insertion-sort threshold; values must travel with their keys. */
#include <stdlib.h>

#include "sort.h"
#include "unit.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next64(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct kv { uint64_t k; uint32_t v; };

static int by_key_then_val(const void *a, const void *b)
{
	const struct kv *x = a, *y = b;
	if (x->k != y->k)
		return (x->k > y->k) - (x->k < y->k);
	return (x->v > y->v) - (x->v < y->v);
}

/* Sorted, and the (key, value) pairs are those given. */
static int sorts(uint64_t (*gen)(size_t i), size_t n)
{
	uint64_t *k = malloc((n + 1) * sizeof *k);
	uint32_t *v = malloc((n + 1) * sizeof *v);
	struct kv *ref = malloc((n + 1) * sizeof *ref), *got = malloc((n + 1) * sizeof *got);
	for (size_t i = 0; i < n; i++) {
		k[i] = gen(i);
		v[i] = (uint32_t)i;
		ref[i] = (struct kv){ k[i], v[i] };
	}
	kv_sort_keys(k, v, n);
	int ok = 1;
	for (size_t i = 0; i < n; i++) {
		ok &= i == 0 || k[i - 1] <= k[i];
		got[i] = (struct kv){ k[i], v[i] };
	}
	qsort(ref, n, sizeof *ref, by_key_then_val);
	qsort(got, n, sizeof *got, by_key_then_val);
	for (size_t i = 0; i < n; i++) /* field by field: the struct has padding */
		ok &= ref[i].k == got[i].k && ref[i].v == got[i].v;
	free(k);
	free(v);
	free(ref);
	free(got);
	return ok;
}

static uint64_t uniform(size_t i) { (void)i; return next64(); }
static uint64_t small(size_t i) { (void)i; return next64() % 1000; }
static uint64_t descending(size_t i) { return ~(uint64_t)i; }
static uint64_t top_alike(size_t i) { (void)i; return 0xabcdef0000000000ull | (next64() >> 40); }
static uint64_t few_top_alike(size_t i) { return i % 97 ? next64() : 0x8000000000000000ull | (next64() & 0xffff); }

static void sorts_every_kind_of_keys(void)
{
	static const size_t sizes[] = { 0, 1, 2, 63, 64, 65, 1000, 100000 };
	uint64_t (*const gens[])(size_t) = { uniform, small, descending, top_alike, few_top_alike };
	for (size_t g = 0; g < sizeof gens / sizeof *gens; g++)
		for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
			int ok = sorts(gens[g], sizes[s]);
			if (!ok)
				printf("# keys of kind %zu, %zu of them\n", g, sizes[s]);
			ASSERT(ok);
		}
}

int main(void)
{
	RUN(sorts_every_kind_of_keys);
	return unit_done();
}

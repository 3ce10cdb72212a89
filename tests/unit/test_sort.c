/* kv_sort_keys: equal keys and keys differing in their high digits; and
 * against qsort, uniform keys (the fast path), small and repeated keys (its
 * fallback), keys alike in their top bits, and sizes around the
 * insertion-sort threshold; values must travel with their keys. */
#include <stdlib.h>
#include <string.h>

#include "base/sort.h"
#include "unit.h"

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

static uint64_t uniform(size_t i) { (void)i; return unit_rand(); }
static uint64_t small(size_t i) { (void)i; return unit_rand() % 1000; }
static uint64_t descending(size_t i) { return ~(uint64_t)i; }
static uint64_t top_alike(size_t i) { (void)i; return 0xabcdef0000000000ull | (unit_rand() >> 40); }
static uint64_t few_top_alike(size_t i) { return i % 97 ? unit_rand() : 0x8000000000000000ull | (unit_rand() & 0xffff); }

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

/* Equal keys, and keys that differ only in their high digits: sorted, each
 * value still with its key. */
static void radix_sort(void)
{
	for (size_t n = 0; n < 5000; n = n * 3 + 1) {
		uint64_t *k = malloc((n + 1) * sizeof *k);
		uint32_t *v = malloc((n + 1) * sizeof *v);
		for (size_t i = 0; i < n; i++) {
			/* some equal keys, some differing only in high digits */
			k[i] = i % 7 == 0 ? 42 : (unit_rand() & 0xff00000000000000ull) | (unit_rand() % 3);
			v[i] = (uint32_t)i;
		}
		uint64_t *orig = malloc((n + 1) * sizeof *orig);
		memcpy(orig, k, n * sizeof *k);
		kv_sort_keys(k, v, n);
		size_t sorted = 0, kept = 0;
		for (size_t i = 0; i < n; i++) {
			sorted += i == 0 || k[i - 1] <= k[i];
			kept += orig[v[i]] == k[i];
		}
		free(k);
		free(v);
		free(orig);
		ASSERT_EQ_U64(sorted, n);
		ASSERT_EQ_U64(kept, n);
	}
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static int by_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* kv_sort_u64 and kv_sort_u32 give what qsort gives, for every kind of
 * numbers and sizes on both sides of the insertion-sort threshold. */
static void numbers_as_qsort_orders_them(void)
{
	static const size_t sizes[] = { 0, 1, 2, 63, 64, 65, 1000, 100000 };
	uint64_t (*const gens[])(size_t) = { uniform, small, descending, top_alike, few_top_alike };
	for (size_t g = 0; g < sizeof gens / sizeof *gens; g++)
		for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
			size_t n = sizes[s];
			uint64_t *a = malloc((n + 1) * sizeof *a), *ra = malloc((n + 1) * sizeof *ra);
			uint32_t *b = malloc((n + 1) * sizeof *b), *rb = malloc((n + 1) * sizeof *rb);
			for (size_t i = 0; i < n; i++) {
				ra[i] = a[i] = gens[g](i);
				rb[i] = b[i] = (uint32_t)(a[i] ^ a[i] >> 32);
			}
			kv_sort_u64(a, n);
			kv_sort_u32(b, n);
			qsort(ra, n, sizeof *ra, by_u64);
			qsort(rb, n, sizeof *rb, by_u32);
			int ok = memcmp(a, ra, n * sizeof *a) == 0 && memcmp(b, rb, n * sizeof *b) == 0;
			if (!ok)
				printf("# numbers of kind %zu, %zu of them\n", g, n);
			ASSERT(ok);
			free(a);
			free(ra);
			free(b);
			free(rb);
		}
}

int main(void)
{
	RUN(radix_sort);
	RUN(sorts_every_kind_of_keys);
	RUN(numbers_as_qsort_orders_them);
	return unit_done();
}

#include "base/sort.h"
#include "base/util.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DIGIT 11
#define BUCKETS (1u << DIGIT)

/* Insertion sort that gives up after budget moves: true when done. */
static bool insertion_within(uint64_t *k, uint32_t *v, size_t n, size_t budget)
{
	size_t moves = 0;
	for (size_t i = 1; i < n; i++) {
		uint64_t key = k[i];
		uint32_t val = v[i];
		size_t j = i;
		for (; j > 0 && k[j - 1] > key; j--) {
			if (++moves > budget) {
				k[j] = key; /* where it was moved from: a permutation again */
				v[j] = val;
				return false;
			}
			k[j] = k[j - 1];
			v[j] = v[j - 1];
		}
		k[j] = key;
		v[j] = val;
	}
	return true;
}

/* Where each key's digit at `shift` starts in the pass's output, in count;
 * false when every key has the same digit, and the pass would move nothing. */
static bool digit_starts(const uint64_t *ks, size_t n, unsigned shift, size_t *count)
{
	memset(count, 0, BUCKETS * sizeof *count);
	for (size_t i = 0; i < n; i++)
		count[(ks[i] >> shift) & (BUCKETS - 1)]++;
	if (count[(ks[0] >> shift) & (BUCKETS - 1)] == n)
		return false;
	size_t sum = 0;
	for (size_t b = 0; b < BUCKETS; b++) {
		size_t c = count[b];
		count[b] = sum;
		sum += c;
	}
	return true;
}

/* Stable LSD passes over the digits from bit `from` up: keys and vals end
 * sorted by those bits. */
static void radix_from(uint64_t *keys, uint32_t *vals, size_t n, unsigned from)
{
	uint64_t *k2 = kv_xmalloc(n * sizeof *k2);
	uint32_t *v2 = kv_xmalloc(n * sizeof *v2);
	uint64_t *ks = keys, *kd = k2;
	uint32_t *vs = vals, *vd = v2;
	size_t *count = kv_xmalloc(BUCKETS * sizeof *count);
	for (unsigned shift = from; shift < 64; shift += DIGIT) {
		if (!digit_starts(ks, n, shift, count))
			continue;
		for (size_t i = 0; i < n; i++) {
			size_t at = count[(ks[i] >> shift) & (BUCKETS - 1)]++;
			kd[at] = ks[i];
			vd[at] = vs[i];
		}
		uint64_t *tk = ks;
		ks = kd;
		kd = tk;
		uint32_t *tv = vs;
		vs = vd;
		vd = tv;
	}
	if (ks != keys) {
		memcpy(keys, ks, n * sizeof *keys);
		memcpy(vals, vs, n * sizeof *vals);
	}
	free(count);
	free(k2);
	free(v2);
}

/* The keys the writer sorts are hashes, uniform over 64 bits: sorted by
 * their top 33 bits (3 passes, not 6), they are in order but for the rare
 * keys that share those bits, which an insertion pass puts right.  Keys
 * that are not uniform (small numbers, many alike) make that pass long: past
 * a budget of n moves, the full sort runs instead. */
#define TOP_FROM (64 - 3 * DIGIT)

void kv_sort_keys(uint64_t *keys, uint32_t *vals, size_t n)
{
	if (n < 64) {
		insertion_within(keys, vals, n, SIZE_MAX);
		return;
	}
	radix_from(keys, vals, n, TOP_FROM);
	if (!insertion_within(keys, vals, n, n))
		radix_from(keys, vals, n, 0);
}

#define SMALL 64 /* below this, insertion sort beats the radix passes */

static void insertion_u64(uint64_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint64_t x = v[i];
		size_t j = i;
		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* LSD passes over the low `bits` bits of the numbers, all of them, no payload. */
static void radix_numbers(uint64_t *v, size_t n, unsigned bits)
{
	uint64_t *tmp = kv_xmalloc(n * sizeof *tmp), *src = v, *dst = tmp;
	size_t *count = kv_xmalloc(BUCKETS * sizeof *count);
	for (unsigned shift = 0; shift < bits; shift += DIGIT) {
		if (!digit_starts(src, n, shift, count))
			continue;
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i] >> shift) & (BUCKETS - 1)]++] = src[i];
		uint64_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof *v);
	free(count);
	free(tmp);
}

void kv_sort_u64(uint64_t *v, size_t n)
{
	if (n < SMALL)
		insertion_u64(v, n);
	else
		radix_numbers(v, n, 64);
}

void kv_sort_u32(uint32_t *v, size_t n)
{
	if (n < SMALL) {
		for (size_t i = 1; i < n; i++) {
			uint32_t x = v[i];
			size_t j = i;
			for (; j > 0 && v[j - 1] > x; j--)
				v[j] = v[j - 1];
			v[j] = x;
		}
		return;
	}
	uint64_t *w = kv_xmalloc(n * sizeof *w);
	for (size_t i = 0; i < n; i++)
		w[i] = v[i];
	radix_numbers(w, n, 32);
	for (size_t i = 0; i < n; i++)
		v[i] = (uint32_t)w[i];
	free(w);
}

#include "sort.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define DIGIT 11
#define BUCKETS (1u << DIGIT)

static void insertion(uint64_t *k, uint32_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint64_t key = k[i];
		uint32_t val = v[i];
		size_t j = i;
		for (; j > 0 && k[j - 1] > key; j--) {
			k[j] = k[j - 1];
			v[j] = v[j - 1];
		}
		k[j] = key;
		v[j] = val;
	}
}

void kv_sort_keys(uint64_t *keys, uint32_t *vals, size_t n)
{
	if (n < 64) {
		insertion(keys, vals, n);
		return;
	}
	uint64_t *k2 = kv_xmalloc(n * sizeof *k2);
	uint32_t *v2 = kv_xmalloc(n * sizeof *v2);
	uint64_t *ks = keys, *kd = k2;
	uint32_t *vs = vals, *vd = v2;
	size_t *count = kv_xmalloc(BUCKETS * sizeof *count);
	for (unsigned shift = 0; shift < 64; shift += DIGIT) {
		memset(count, 0, BUCKETS * sizeof *count);
		for (size_t i = 0; i < n; i++)
			count[(ks[i] >> shift) & (BUCKETS - 1)]++;
		/* A digit where every key agrees moves nothing: skip the pass. */
		if (count[(ks[0] >> shift) & (BUCKETS - 1)] == n)
			continue;
		size_t sum = 0;
		for (size_t b = 0; b < BUCKETS; b++) {
			size_t c = count[b];
			count[b] = sum;
			sum += c;
		}
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

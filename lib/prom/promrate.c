#include "prom/promrate.h"
#include "base/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void kv_promrate_init(struct kv_promrate *r)
{
	memset(r, 0, sizeof *r);
}

void kv_promrate_free(struct kv_promrate *r)
{
	free(r->keys);
	free(r->e);
	memset(r, 0, sizeof *r);
}

static double rate_of(const struct kv_promrate *r, const struct kv_promrate_entry *prev,
                      const struct kv_prom_sample *s, uint64_t scrape_ns)
{
	if (!isfinite(prev->value) || !isfinite(s->value) || s->value < prev->value)
		return NAN;
	double dt;
	if (prev->has_ts && s->has_ts)
		dt = ((double)s->ts_ms - (double)prev->ts_ms) / 1e3;
	else
		dt = scrape_ns > r->scrape_ns ? (double)(scrape_ns - r->scrape_ns) / 1e9 : 0;
	if (!(dt > 0))
		return NAN;
	return (s->value - prev->value) / dt;
}

void kv_promrate_update(struct kv_promrate *r, const struct kv_prom_doc *doc, uint64_t scrape_ns, double *rate)
{
	/* merge join: doc->order and r->e are both in key order */
	size_t j = 0;
	for (size_t k = 0; k < doc->nsamples; k++) {
		uint32_t i = doc->order[k];
		const struct kv_prom_sample *s = &doc->samples[i];
		rate[i] = NAN;
		if (!r->have || !s->cumulative)
			continue;
		const unsigned char *key = doc->keys + s->key_off;
		int c = 1;
		while (j < r->n && (c = kv_prom_key_cmp(r->keys + r->e[j].key_off, r->e[j].key_len, key, s->key_len)) < 0)
			j++;
		if (j < r->n && c == 0)
			rate[i] = rate_of(r, &r->e[j], s, scrape_ns);
	}
	/* keep this scrape's cumulative series */
	r->n = r->keys_len = 0;
	for (size_t k = 0; k < doc->nsamples; k++) {
		const struct kv_prom_sample *s = &doc->samples[doc->order[k]];
		if (!s->cumulative)
			continue;
		r->keys = kv_xgrow(r->keys, &r->keys_cap, r->keys_len + s->key_len, 1);
		memcpy(r->keys + r->keys_len, doc->keys + s->key_off, s->key_len);
		r->e = kv_xgrow(r->e, &r->cap, r->n + 1, sizeof *r->e);
		r->e[r->n++] = (struct kv_promrate_entry){ r->keys_len, s->key_len, s->value, s->ts_ms, s->has_ts };
		r->keys_len += s->key_len;
	}
	r->scrape_ns = scrape_ns;
	r->have = true;
}

/* promrate: per-second rates of the cumulative samples (counters and the
 * like, see promtext) of one endpoint, from one scrape to the next.
 *
 * It keeps the previous successful scrape's series (canonical keys, values,
 * times) in key order, and joins the next scrape with it in linear time.  A
 * rate needs the series in both scrapes, a value that did not go down (a
 * lower value is a counter reset: no rate, and the new value is the new
 * base), finite values and a positive time step.  The time step is the
 * difference of the samples' own timestamps when both carry one, else of
 * the two scrape times.  Series absent from a scrape are forgotten, so the
 * memory held is one scrape's worth. */
#ifndef KV_PROMRATE_H
#define KV_PROMRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prom/promtext.h"

struct kv_promrate_entry {
	size_t key_off, key_len;
	double value;
	int64_t ts_ms;
	bool has_ts;
};

struct kv_promrate {
	unsigned char *keys;
	size_t keys_len, keys_cap;
	struct kv_promrate_entry *e;     /* in key order */
	size_t n, cap;
	uint64_t scrape_ns;
	bool have;                       /* holds a previous scrape */
};

void kv_promrate_init(struct kv_promrate *r);
void kv_promrate_free(struct kv_promrate *r);

/* rate[i] for every sample i of doc: per second since the previous scrape,
 * or NAN when there is none (not cumulative, first scrape, reset, ...).
 * scrape_ns: when the scrape completed, on a clock that does not jump.
 * Then doc becomes the previous scrape. */
void kv_promrate_update(struct kv_promrate *r, const struct kv_prom_doc *doc, uint64_t scrape_ns, double *rate);

#endif

/* libFuzzer harness: Prometheus text through the parser, the counter rates
 * and both output forms.  The first byte picks the limits: bit 0 small ones,
 * so that every limit is reached by small inputs.  Checked beyond "no
 * crash": a rejection says "line N: ..." in text kv_printable leaves as it is
 * (it reaches a terminal), an accepted document has its series in strict key order, and
 * a second scrape of the same document has rates of 0 or none. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/out.h"
#include "base/utf8.h"
#include "prom/promout.h"
#include "prom/promrate.h"
#include "prom/promtext.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(struct kv_prom_doc *doc)
{
	struct kv_promrate r;
	double *rate = malloc((doc->nsamples + 1) * sizeof *rate);
	kv_promrate_init(&r);
	for (size_t i = 1; i < doc->nsamples; i++) {
		const struct kv_prom_sample *a = &doc->samples[doc->order[i - 1]], *b = &doc->samples[doc->order[i]];
		if (kv_prom_key_cmp(doc->keys + a->key_off, a->key_len, doc->keys + b->key_off, b->key_len) >= 0)
			__builtin_trap();
	}
	kv_promrate_update(&r, doc, 1000, rate);
	kv_promrate_update(&r, doc, 2000, rate);
	for (size_t i = 0; i < doc->nsamples; i++)
		if (!isnan(rate[i]) && rate[i] != 0)
			__builtin_trap();
	struct kv_out o;
	kv_out_open_mem(&o);
	for (size_t i = 0; i < doc->nsamples; i++)
		kv_promout_json(&o, "http://h:50090/metrics", doc, i, rate[i], 1764500000000000000ull);
	kv_promout_table(&o, "http://h:50090/metrics", doc, rate, NULL);
	kv_out_free_mem(&o);
	kv_promrate_free(&r);
	free(rate);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static const struct kv_prom_limits small = { 200, 12, 24, 4, 32, 6 };
	struct kv_prom_doc doc;
	struct kv_err e = { 0 };
	kv_prom_init(&doc);
	if (kv_prom_parse(&doc, (const char *)data + 1, size - 1, data[0] & 1 ? &small : NULL, &e)) {
		check(&doc);
	} else {
		const char *err = kv_err_msg(&e);
		if (strncmp(err, "line ", 5) != 0 || e.status != KV_EX_DATAERR)
			__builtin_trap();
		/* shown by the one rule: kv_printable leaves it as it is */
		size_t n = strlen(err);
		char *shown = malloc(n + 1);
		if (kv_printable(shown, n + 1, err, n) != n || memcmp(shown, err, n) != 0)
			__builtin_trap();
		free(shown);
	}
	kv_err_clear(&e);
	kv_prom_free(&doc);
	return 0;
}

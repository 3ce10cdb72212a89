/* promout: how kvstat shows samples: one JSON line per sample, or a table
 * per endpoint for a terminal.
 *
 * JSON line: {"endpoint":URL,"metric":NAME,"type":TYPE,"labels":{..},
 * "value":V,"rate":R,"ts":SECONDS}.  value is a JSON number, or the string
 * "+Inf", "-Inf" or "NaN" (JSON has no such numbers); rate is a number or
 * null; ts is the sample's own timestamp when the exposition gave one, else
 * the time of the scrape, in seconds with millisecond precision, and comes
 * last.  Labels are sorted by name.
 *
 * Table: a heading line with the endpoint and counts, then SERIES, VALUE and
 * RATE/s columns; control characters of label values are shown as '?' so
 * that an exporter cannot drive the terminal. */
#ifndef KV_PROMOUT_H
#define KV_PROMOUT_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/out.h"
#include "prom/promtext.h"

/* Whether sample i's metric name matches (match NULL: every sample). */
bool kv_promout_matches(const struct kv_prom_doc *doc, size_t i, const regex_t *match);

void kv_promout_json(struct kv_out *o, const char *endpoint, const struct kv_prom_doc *doc, size_t i,
                     double rate, uint64_t realtime_ns);

/* The table of one endpoint's matching samples, in exposition order. */
void kv_promout_table(struct kv_out *o, const char *endpoint, const struct kv_prom_doc *doc,
                      const double *rates, const regex_t *match);

/* A number as the table shows it: integers in full up to 1e15, else %.6g. */
void kv_promout_number(char *buf, size_t size, double v);

#endif

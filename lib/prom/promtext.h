/* promtext: the Prometheus text exposition format (version 0.0.4), parsed
 * strictly and within bounds.
 *
 * A document is accepted whole or rejected with `line N: reason` at its
 * first malformed line, as Prometheus fails a scrape: metric and label name
 * syntax, label escapes (\\ \" \n only), valid UTF-8 in label values and
 * help texts, values as decimal floats or +Inf/-Inf/NaN, optional integer
 * millisecond timestamps, # HELP and # TYPE lines (one each per name, TYPE
 * before the name's samples), histogram buckets with an `le` label and
 * summary quantiles with a `quantile` label, no duplicate series, and a
 * newline at the end (a cut-off response is rejected, not half-used).
 *
 * Every allocation is bounded by the input's size and the limits below: the
 * document refers to the caller's text (which must outlive it) and copies
 * only label values and help texts that hold escapes.  Each sample also gets
 * a canonical series key (name, then labels sorted by name, each length-
 * prefixed), and the samples' order by key, so that two scrapes can be
 * joined in linear time (promrate) whatever the exporter's label order. */
#ifndef KV_PROMTEXT_H
#define KV_PROMTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/strmap.h"

enum kv_prom_type {
	KV_PROM_UNTYPED,
	KV_PROM_COUNTER,
	KV_PROM_GAUGE,
	KV_PROM_HISTOGRAM,
	KV_PROM_SUMMARY,
};

struct kv_prom_limits {
	size_t max_line;        /* bytes in one line, newline not counted */
	size_t max_name;        /* bytes in a metric or label name */
	size_t max_value;       /* bytes in a label value, as written */
	size_t max_labels;      /* labels on one sample */
	size_t max_samples;     /* samples in one document */
	size_t max_families;    /* names with a # HELP or # TYPE line */
};

#define KV_PROM_MAX_LINE 65536
#define KV_PROM_MAX_NAME 256
#define KV_PROM_MAX_VALUE 4096
#define KV_PROM_MAX_LABELS 64
#define KV_PROM_MAX_SAMPLES 200000
#define KV_PROM_MAX_FAMILIES 20000
#define KV_PROM_LIMITS_DEFAULT { KV_PROM_MAX_LINE, KV_PROM_MAX_NAME, KV_PROM_MAX_VALUE, \
	KV_PROM_MAX_LABELS, KV_PROM_MAX_SAMPLES, KV_PROM_MAX_FAMILIES }

/* A piece of text: in the parsed input, or in the document's own copy. */
struct kv_prom_str {
	const char *p;
	size_t n;
};

struct kv_prom_label {
	struct kv_prom_str name, value;   /* value unescaped */
};

struct kv_prom_family {
	struct kv_prom_str name, help;    /* help unescaped; n 0 when none */
	enum kv_prom_type type;
	bool has_type, has_help, has_samples;
};

struct kv_prom_sample {
	struct kv_prom_str name;
	size_t label0, nlabels;           /* doc->labels[label0 .. label0+nlabels) */
	double value;
	int64_t ts_ms;                    /* the sample's own timestamp, if has_ts */
	bool has_ts;
	/* The family's declared type (untyped without a # TYPE line), and
	 * whether the value only grows (a counter, a histogram's _bucket, _sum
	 * and _count, a summary's _sum and _count, an untyped name ending in
	 * _total): the samples that have a rate. */
	enum kv_prom_type type;
	bool cumulative;
	uint32_t family;                  /* index into doc->families */
	uint64_t line;
	size_t key_off, key_len;          /* canonical series key in doc->keys */
};

struct kv_prom_doc {
	struct kv_prom_sample *samples;
	size_t nsamples, samples_cap;
	struct kv_prom_label *labels;
	size_t nlabels, labels_cap;
	struct kv_prom_family *families;
	size_t nfamilies, families_cap, ndeclared;
	uint32_t *order;                  /* sample indices sorted by series key */
	size_t order_cap;
	unsigned char *keys;
	size_t keys_len, keys_cap;
	/* internal: family name -> its index, and the copy of escaped strings */
	struct kv_strmap names;
	char *arena;
	size_t arena_len, arena_cap;
	uint64_t lines;                   /* lines in the last document */
};

void kv_prom_init(struct kv_prom_doc *doc);
void kv_prom_free(struct kv_prom_doc *doc);

/* Parses text[0..len) into doc (emptied first; its memory is reused).
 * false on the first malformed line or exceeded limit, with
 * "line N: reason" in e, status 65 (doc is then empty).  lim NULL means
 * the defaults. */
bool kv_prom_parse(struct kv_prom_doc *doc, const char *text, size_t len,
                   const struct kv_prom_limits *lim, struct kv_err *e);

const char *kv_prom_type_name(enum kv_prom_type t);

/* Orders two canonical series keys (memcmp order, a prefix first). */
int kv_prom_key_cmp(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen);

/* Valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) and label name ([a-zA-Z_][a-zA-Z0-9_]*). */
bool kv_prom_metric_name_ok(const char *s, size_t n);
bool kv_prom_label_name_ok(const char *s, size_t n);

#endif

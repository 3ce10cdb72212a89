/* metrics: the Prometheus text exposition of kvtools' own counters
 * (--metrics FILE), for node_exporter's textfile collector.  A file is
 * written whole to a temporary name and renamed over the old one, so a
 * scraper never reads half of it; a device or a fifo is written to
 * directly (product.h).  Label values are escaped as the format requires. */
#ifndef KV_METRICS_H
#define KV_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/err.h"
#include "base/product.h"

struct kv_metrics {
	const char *path;
	struct kv_product file;    /* the rewrite under way, while f is open */
	FILE *f;
	uint64_t interval_ns;
	uint64_t next_ns;          /* monotonic time of the next periodic write */
};

#define KV_METRICS_INTERVAL_DEFAULT_NS (5ull * 1000000000ull)

/* interval_ns 0 means the default (5 s). */
void kv_metrics_init(struct kv_metrics *m, const char *path, uint64_t interval_ns);
void kv_metrics_free(struct kv_metrics *m);
/* True when a periodic write is due (every interval of wall time, the first at once). */
bool kv_metrics_due(struct kv_metrics *m);
/* Opens a temporary file beside the path (or the device or fifo it names)
 * to write the samples to; false with `PATH: why` (74) in e. */
bool kv_metrics_begin(struct kv_metrics *m, struct kv_err *e);
/* # HELP and # TYPE of a family ("counter" or "gauge"). */
void kv_metrics_family(struct kv_metrics *m, const char *name, const char *type, const char *help);
/* name{labels} value; labels are name/value pairs ending with NULL, or
 * NULL for none: kv_metrics_sample(m, "x", 1, KV_LABELS("src", s)). */
void kv_metrics_sample(struct kv_metrics *m, const char *name, double value, const char *const *labels);
#define KV_LABELS(...) ((const char *const[]){ __VA_ARGS__, NULL })
/* Renames the file into place (closes a device or fifo); false with
 * `PATH: why` (74) in e when writing failed. */
bool kv_metrics_commit(struct kv_metrics *m, struct kv_err *e);

#endif

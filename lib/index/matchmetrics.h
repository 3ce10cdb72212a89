/* matchmetrics: kvmatch's --metrics, the kvtools_match_* families (events
 * by state, drops by reason, what the index and the matching caches hold,
 * blocks per worker and medium, and per source batches, seq accounting,
 * last batch and lag).  Names and labels are documented in kvmatch(1). */
#ifndef KV_MATCHMETRICS_H
#define KV_MATCHMETRICS_H

#include <stdbool.h>

#include "base/err.h"
#include "index/match.h"
#include "base/metrics.h"

/* Writes the whole file; false when it could not ("PATH: why", 74). */
bool kv_match_write_metrics(const struct kv_match *m, struct kv_metrics *mt, struct kv_err *e);

#endif

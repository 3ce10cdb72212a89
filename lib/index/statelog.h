/* statelog: kvmatch's state lines (kvmatch(1) "State lines"), the JSON form of a
 * matching report, and the final statistics. */
#ifndef KV_STATELOG_H
#define KV_STATELOG_H

#include <stdio.h>

#include "index/index.h"
#include "index/match.h"
#include "base/out.h"
#include "index/workers.h"

/* {"recv_ns":..,"state":..,"hash":..,"medium":..,"workers":[..],"src":..,"seq":..,
 *  "model":..,"tenant":.., plus "reason" (dropped) and "count"} */
void kv_statelog_write(struct kv_out *o, const struct kv_report *r, const struct kv_workers *ws,
		       const struct kv_index *ix);
/* Events by state, drops by reason, and what the index holds. */
void kv_statelog_summary(FILE *f, const struct kv_match *m);
/* Peak resident memory, and per (block, worker) pair held (kvmatch -v). */
void kv_statelog_memory(FILE *f, const struct kv_match *m);

#endif

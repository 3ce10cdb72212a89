/* snapdump: a loaded snapshot as JSON lines (kvmatch --dump, kvsnap(5)
 * EXAMPLES): the index's records here, the matcher's by their owner
 * (kv_match_dump_snap, matchsnap.c) with the pieces of a line below. */
#ifndef KV_SNAPDUMP_H
#define KV_SNAPDUMP_H

#include <stdbool.h>
#include <stdint.h>

#include "base/jsonw.h"
#include "base/out.h"
#include "index/snap.h"

/* Every record as a JSON line, for people and tests (kvmatch --dump). */
void kv_snap_dump(const struct kv_snap *s, struct kv_out *o);

/* Pieces of a dump line: a string of the snapshot; who holds or waits
 * ("instance_id" and "dp_rank", or for a pool holder "pool" and its
 * backend_id, as state lines name it); {"kind":KIND,"partition":p, as
 * every per-partition record begins; a key (with its comma and colon)
 * and a hash or a number. */
void kv_snap_put_str(struct jw *w, const struct kv_snap *s, struct kv_snap_str r);
void kv_snap_put_who(struct jw *w, const struct kv_snap *s, const struct kv_snap_worker *wk);
void kv_snap_put_kind_partition(struct jw *w, const char *kind, uint64_t p);
void kv_snap_put_hash_field(struct jw *w, const char *key, uint64_t h);
void kv_snap_put_u64_field(struct jw *w, const char *key, uint64_t v);

#endif

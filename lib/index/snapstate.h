/* snapstate: live state into a kvsnap snapshot and back (kvmatch -o and
 * -i, kvgen --snapshot).  The index's sections (workers, partitions,
 * blocks with their runs, orphans and holder sets, engine hashes) are
 * built here from the live index; the matcher writes and reads its own
 * (kv_match_save, kv_match_load) through the writer and reader of snap.h.
 * The file itself, and reading it for queries, is snap.h's.  A partition's
 * engine hashes are built on a second thread beside its blocks, the
 * matcher's sections added meanwhile for the last (in turn when no thread
 * can be started): the bytes are the same either way. */
#ifndef KV_SNAPSTATE_H
#define KV_SNAPSTATE_H

#include <stdbool.h>

#include "base/err.h"
#include "index/index.h"
#include "index/match.h"
#include "index/snap.h"
#include "index/workers.h"

/* Writes the state atomically to path; false with `PATH: why` (74) in e
 * on failure. */
bool kv_snap_write(const char *path, const struct kv_index *ix, const struct kv_workers *ws,
		   const struct kv_match *m, struct kv_err *e);
/* The same for an index without a matcher (kvgen's simulated one): meta
 * as given, nothing cached, pending or known of sources. */
bool kv_snap_write_index(const char *path, const struct kv_index *ix, const struct kv_workers *ws,
			 const struct kv_snap_meta *meta, struct kv_err *e);
/* Loads the state into live structures, for resuming (kvmatch -i). */
void kv_snap_restore(const struct kv_snap *s, struct kv_index *ix, struct kv_workers *ws, struct kv_match *m);

#endif

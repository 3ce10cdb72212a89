/* snapstate: live state saved into a kvsnap file (kv_snapstate_save:
 * kvmatch -o, kvgen --snapshot) and restored from a loaded one
 * (kv_snapstate_restore: kvmatch -i).  The index's sections (workers,
 * partitions, blocks with their runs, orphans and holder sets, engine
 * hashes) are built here from the live index, each in its canonical order
 * (kvsnap(5) "Sections"); the matcher saves and restores its own
 * (kv_match_save, kv_match_restore) through the writer of snapwrite.h and
 * the restorer below.  Writing the file is snapwrite.h's, loading it
 * snapload.h's.  A partition's
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
#include "index/snapwrite.h"
#include "index/workers.h"

/* Writes the state atomically to path; false with `PATH: why` (74) in e
 * on failure. */
bool kv_snapstate_save(const char *path, const struct kv_index *ix, const struct kv_workers *ws,
		   const struct kv_match *m, struct kv_err *e);
/* The same for an index without a matcher (kvgen's simulated one): meta
 * as given, nothing cached, pending or known of sources. */
bool kv_snapstate_save_index(const char *path, const struct kv_index *ix, const struct kv_workers *ws,
			 const struct kv_snap_meta *meta, struct kv_err *e);
/* Loads the state into live structures, for resuming (kvmatch -i). */
void kv_snapstate_restore(const struct kv_snap *s, struct kv_index *ix, struct kv_workers *ws, struct kv_match *m);

/* A snapshot being restored into live state: the live partition and worker
 * each of its partitions and workers became (KV_NO_WORKER: one not kept),
 * for the matcher's sections (kv_match_restore). */
struct kv_snap_restorer {
	const struct kv_snap *s;
	const uint32_t *partition;
	const uint32_t *worker;
};

#endif

/* snapload: reading a kvsnap file and checking it (kv_snapr_*): the file,
 * all of it or the parts asked for, into memory of its own (never a
 * mapping: whatever later happens to the path cannot change or cut the
 * bytes in use; a pipe loads too), and every count, offset, index and
 * order of what was read checked before anything uses it, each section's
 * order as kvsnap(5) "Sections" pins it (the matcher's sections by their
 * owner, kv_match_check_snap); the directory lookups use built as the
 * chains are read.  Reading needs nothing of the live index or the
 * matcher. */
#ifndef KV_SNAPLOAD_H
#define KV_SNAPLOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "index/snap.h"

/* The most a snapshot that is not a regular file (a pipe, a device) may
 * say it holds: it has no size of its own to bound what is read
 * (kvsnap(5) "Validation"). */
#define KV_SNAP_MAX_STREAM ((uint64_t)4 << 30)

/* Reads (a regular file, a pipe, a device) and validates the parts asked
 * for (KV_SNAP_PART_*; the header and table always); false with `PATH: why`
 * in e: 66 when the file could not be opened or read (a directory among
 * them), 65 when it could but is not a valid snapshot, and status 0 when
 * a stop signal ended the load (kv_input_stopped).  Of a regular file of
 * 1 MiB and more only those parts are read, and the file stays open for
 * kv_snapr_read; anything else is read whole, never beyond the size its
 * header says, and that at most KV_SNAP_MAX_STREAM when it is not a
 * regular file. */
bool kv_snapr_open(const char *path, unsigned parts, struct kv_snap *s, struct kv_err *e);
/* kv_snapr_open of a path watched for replacements (kvquery --watch): it
 * opens without waiting, and refuses (66) anything but a regular file, so
 * that a fifo or a device put in the snapshot's place neither hangs the
 * program nor is read. */
bool kv_snapr_open_regular(const char *path, unsigned parts, struct kv_snap *s, struct kv_err *e);
/* kv_snapr_open of every part (kvmatch -i, --dump, kvnats --after). */
bool kv_snapr_load(const char *path, struct kv_snap *s, struct kv_err *e);
/* Reads and validates more parts of a snapshot kv_snapr_open loaded (none
 * when they are there already).  A file changed in place since is refused
 * then, when the bytes read do not match the table read at first (65). */
bool kv_snapr_read(struct kv_snap *s, unsigned parts, struct kv_err *e);
/* Validates bytes already in memory (the snapshot takes no ownership, and
 * has no directory: lookups fall back to binary search); false with what
 * is wrong in e (65, no path). */
bool kv_snapr_check(const void *data, size_t size, struct kv_snap *s, struct kv_err *e);
void kv_snapr_close(struct kv_snap *s);

#endif

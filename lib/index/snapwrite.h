/* snapwrite: a kvsnap file being built and written (kv_snapw_*): its
 * sections gathered record by record, and where the live partitions and
 * workers go in it (the builder of the index's sections sets the orders,
 * snapstate.c; the matcher's sections use them, matchsnap.c), then written
 * atomically (temporary file, fsync, rename; a device or a fifo is written
 * to directly, never renamed over: base/product.h).  What the records say
 * is their owners' business; they add them in each section's canonical
 * order (kvsnap(5) "Sections"). */
#ifndef KV_SNAPWRITE_H
#define KV_SNAPWRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/err.h"
#include "index/snap.h"

struct kv_snap_buf {
	char *p;
	size_t len, cap;
};
struct kv_snap_writer {
	struct kv_snap_buf sec[KV_SEC_MAX];
	uint32_t nparts;
	uint32_t *porder;                /* snapshot partition -> live partition */
	uint32_t *pmap;                  /* live partition -> snapshot partition */
	uint32_t *wmap;                  /* live worker -> snapshot worker */
};

/* A zeroed kv_snap_writer is an empty snapshot; kv_snapw_free releases it. */
void kv_snapw_free(struct kv_snap_writer *w);
void kv_snapw_grow(struct kv_snap_buf *b, size_t n);
/* Appends n records to a section (the section's record size each).
 * Inline: the writer appends a record or two at a time, millions of times
 * for a large index, and with the section known at the call the size and
 * the copy are constants. */
static inline void kv_snapw_add(struct kv_snap_writer *w, enum kv_snap_section sec, const void *recs, size_t n)
{
	struct kv_snap_buf *b = &w->sec[sec];
	size_t bytes = n * kv_snap_record_size[sec];
	if (b->cap - b->len < bytes)
		kv_snapw_grow(b, bytes);
	if (bytes)
		memcpy(b->p + b->len, recs, bytes);
	b->len += bytes;
}
/* Records in a section so far. */
uint64_t kv_snapw_records(const struct kv_snap_writer *w, enum kv_snap_section sec);
/* A string (NULL: the empty one) added to the strings. */
struct kv_snap_str kv_snapw_string(struct kv_snap_writer *w, const char *s);
/* A name of n bytes, NUL bytes included: a source read from a capture is
 * its bytes, and cut at a NUL two sources would be written as one. */
struct kv_snap_str kv_snapw_string_n(struct kv_snap_writer *w, const char *s, size_t n);
/* Partition k's range of a kind: the records added to its section between
 * the two calls (the partition record k is in PARTITIONS already). */
void kv_snapw_range_begin(struct kv_snap_writer *w, uint32_t k, enum kv_snap_range_kind kind);
void kv_snapw_range_end(struct kv_snap_writer *w, uint32_t k, enum kv_snap_range_kind kind);
/* The partitions in the snapshot's order: how many, the live id of the
 * k-th, and the snapshot's ids of a live partition and a live worker. */
static inline uint32_t kv_snapw_npartitions(const struct kv_snap_writer *w)
{
	return w->nparts;
}
static inline uint32_t kv_snapw_live_partition(const struct kv_snap_writer *w, uint32_t k)
{
	return w->porder[k];
}
static inline uint32_t kv_snapw_partition(const struct kv_snap_writer *w, uint32_t live)
{
	return w->pmap[live];
}
static inline uint32_t kv_snapw_worker(const struct kv_snap_writer *w, uint32_t live)
{
	return w->wmap[live];
}
/* Writes the sections (one META record among them) atomically to path,
 * and releases w (kv_snapw_free); false with `PATH: why` (74) in e on
 * failure. */
bool kv_snapw_write(struct kv_snap_writer *w, const char *path, struct kv_err *e);

#endif

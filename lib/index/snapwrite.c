/* snapwrite: building a kvsnap file and writing it (snapwrite.h says
 * what it owns; the records are their owners', snapstate.c and
 * matchsnap.c). */
#include "index/snapwrite.h"
#include "index/snap.h"
#include "base/err.h"
#include "base/product.h"
#include "base/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

_Static_assert(sizeof(struct kv_snap_meta) == 64, "meta record");
_Static_assert(sizeof(struct kv_snap_partition) == 128, "partition record");
_Static_assert(sizeof(struct kv_snap_worker) == 32, "worker record");
_Static_assert(sizeof(struct kv_snap_orphan) == 16, "orphan record");
_Static_assert(sizeof(struct kv_snap_set) == 8, "set record");
_Static_assert(sizeof(struct kv_snap_stale) == 16, "stale engine hash record");
_Static_assert(sizeof(struct kv_snap_content) == 32, "content record");
_Static_assert(sizeof(struct kv_snap_offload) == 48, "offload record");
_Static_assert(sizeof(struct kv_snap_pending) == 32, "pending record");
_Static_assert(sizeof(struct kv_snap_source) == 64, "source record");
_Static_assert(sizeof(struct kv_snap_stream_id) == 16, "stream name record");

void kv_snapw_free(struct kv_snap_writer *w)
{
	for (int i = 0; i < KV_SEC_MAX; i++)
		free(w->sec[i].p);
	free(w->porder);
	free(w->pmap);
	free(w->wmap);
	memset(w, 0, sizeof *w);
}

static size_t buf_add(struct kv_snap_buf *b, const void *p, size_t n)
{
	size_t at = b->len;
	b->p = kv_xgrow(b->p, &b->cap, b->len + n, 1);
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	return at;
}

void kv_snapw_grow(struct kv_snap_buf *b, size_t n)
{
	b->p = kv_xgrow(b->p, &b->cap, b->len + n, 1);
}

uint64_t kv_snapw_records(const struct kv_snap_writer *w, enum kv_snap_section sec)
{
	return w->sec[sec].len / kv_snap_record_size[sec];
}

struct kv_snap_str kv_snapw_string(struct kv_snap_writer *w, const char *s)
{
	return kv_snapw_string_n(w, s ? s : "", s ? strlen(s) : 0);
}

struct kv_snap_str kv_snapw_string_n(struct kv_snap_writer *w, const char *s, size_t n)
{
	return (struct kv_snap_str){ (uint32_t)buf_add(&w->sec[KV_SEC_STRINGS], s, n), (uint32_t)n };
}

static struct kv_snap_range *range_of(struct kv_snap_writer *w, uint32_t k, enum kv_snap_range_kind kind)
{
	return &((struct kv_snap_partition *)w->sec[KV_SEC_PARTITIONS].p)[k].r[kind];
}

void kv_snapw_range_begin(struct kv_snap_writer *w, uint32_t k, enum kv_snap_range_kind kind)
{
	range_of(w, k, kind)->first = kv_snapw_records(w, kv_snap_range_section[kind]);
}

void kv_snapw_range_end(struct kv_snap_writer *w, uint32_t k, enum kv_snap_range_kind kind)
{
	struct kv_snap_range *r = range_of(w, k, kind);
	r->count = kv_snapw_records(w, kv_snap_range_section[kind]) - r->first;
}

#define WRITE_CHUNK ((size_t)4 << 20)

static bool write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		/* in pieces: one write of a section of hundreds of MiB copied into
		 * the page cache a third slower here than pieces of 4 MiB */
		ssize_t w = write(fd, c, n < WRITE_CHUNK ? n : WRITE_CHUNK);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = ENOSPC;
			return false;
		}
		c += w;
		n -= (size_t)w;
	}
	return true;
}

static bool write_file(int fd, const struct kv_snap_writer *b)
{
	/* the stream sections only when there is a position (and the stream's
	 * name when it is known): a snapshot of files has the sections it had
	 * before they existed */
	uint32_t nsec = b->sec[KV_SEC_STREAM_ID].len ? KV_SEC_STREAM_ID :
			b->sec[KV_SEC_STREAM].len    ? KV_SEC_STREAM :
						       KV_SEC_STREAM - 1;
	uint64_t off = KV_SNAP_HEADER_SIZE + (uint64_t)nsec * KV_SNAP_TABLE_ENTRY;
	uint8_t table[KV_SNAP_MAX_SECTIONS * KV_SNAP_TABLE_ENTRY] = { 0 };
	static const uint8_t zeros[8];
	for (uint32_t id = 1; id <= nsec; id++) {
		uint8_t *t = table + (id - 1) * KV_SNAP_TABLE_ENTRY;
		uint32_t rs = kv_snap_record_size[id];
		uint64_t count = b->sec[id].len / rs, sum = XXH3_64bits(b->sec[id].p, b->sec[id].len);
		memcpy(t, &id, 4);
		memcpy(t + 4, &rs, 4);
		memcpy(t + 8, &off, 8);
		memcpy(t + 16, &count, 8);
		memcpy(t + 24, &sum, 8);
		off = kv_snap_align8(off + b->sec[id].len);
	}
	uint8_t header[KV_SNAP_HEADER_SIZE] = { 'K', 'V', 'S', 'N', 'A', 'P' };
	uint16_t version = KV_SNAP_VERSION;
	memcpy(header + 6, &version, 2);
	memcpy(header + 8, &nsec, 4);
	memcpy(header + 16, &off, 8);
	uint64_t hsum = kv_snap_header_sum(header, table, nsec);
	memcpy(header + 24, &hsum, 8);
	bool ok = write_all(fd, header, sizeof header) && write_all(fd, table, nsec * KV_SNAP_TABLE_ENTRY);
	for (uint32_t id = 1; ok && id <= nsec; id++)
		ok = write_all(fd, b->sec[id].p, b->sec[id].len) &&
		     write_all(fd, zeros, (size_t)(kv_snap_align8(b->sec[id].len) - b->sec[id].len));
	return ok;
}

bool kv_snapw_write(struct kv_snap_writer *w, const char *path, struct kv_err *e)
{
	if (kv_snapw_records(w, KV_SEC_META) != 1)
		kv_die(KV_EX_SOFTWARE, "snapshot: %llu meta records", (unsigned long long)kv_snapw_records(w, KV_SEC_META));
	struct kv_product f;
	if (!kv_product_open(&f, path, 0, e)) {
		kv_snapw_free(w);
		return false;
	}
	int err = write_file(f.fd, w) ? 0 : errno;
	/* the sections are in the page cache: freed before the disk has
	 * written them, not after (the bench's cluster snapshot: 13-20 ms
	 * of unmapping) */
	kv_snapw_free(w);
	return kv_product_close(&f, err, true, e);
}

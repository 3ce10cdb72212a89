/* snap: the kvsnap snapshot format (kvsnap(5)): its version, sections,
 * records and the loaded view of a file (struct kv_snap), which every
 * module of the snapshot shares.  The jobs are in their own files, by
 * direction (doc/layout.md, "The snapshot, by direction"):
 *   snapwrite.h  kv_snapw_*: sections gathered record by record, written to
 *                a file atomically (temporary file, fsync, rename; a device or
 *                a fifo is written to directly: base/product.h);
 *   snapload.h   kv_snapr_*: a file read into memory of its own and every
 *                count, offset, index and order of what was read checked
 *                before anything uses it;
 *   snaplookup.h kv_snap_*: lookups on a loaded snapshot (what kvquery runs);
 *   snapdump.h   kv_snap_dump: every record as a JSON line;
 *   snapstate.h  kv_snapstate_save / kv_snapstate_restore: the live index and
 *                workers to a file and back, the matcher's sections by
 *                kv_match_save / kv_match_restore (matchsnap.c, which also
 *                checks and dumps them).
 * Little-endian, versioned: a header with magic "KVSNAP", a section table,
 * fixed-size records; each section has an XXH3-64 checksum in its table
 * entry, and the header one over itself and the table, so that a reader
 * can read and check only the sections it uses.  Writers write
 * canonically (every section in its order of kvsnap(5), whatever order the
 * state arrived in; no pointers, no time of writing), so equal state gives
 * equal bytes, and the loader refuses a section out of its order. */
#ifndef KV_SNAP_H
#define KV_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <xxhash.h>

#include "base/err.h"
#include "index/index.h"

/* 3: pool holders (worker flags bit 1), a source's last record state
 * 4: holder sets stored once per partition (SETS), a block names its set
 *    and the run of ancestors it shares that set with; engine hashes in
 *    per-partition ranges
 * 5: a checksum per section (in the table) and over the header and table,
 *    none over the whole file: a reader reads and checks what it uses
 * 6: blocks in columns (chains, sets and runs for lookups; parents and
 *    locals beside the engine hashes, read when those are) */
#define KV_SNAP_VERSION 7
/* The oldest version read: 6, whose files mean the same where no partition
 * name holds a backslash or '#' (kvsnap(5)). */
#define KV_SNAP_VERSION_READ 6

/* The parts of a snapshot a reader reads and checks (kv_snapr_open), each a
 * run of whole sections: what prefix lookups need (META to HOLDERS: the
 * blocks' chains, sets and runs), the blocks' links and the engine hashes
 * (PARENTS to STALE: parents, sequence hashes, dumping and resuming), and
 * the matcher's state with any sections of later versions (CONTENT on). */
#define KV_SNAP_PART_BLOCKS 1u
#define KV_SNAP_PART_EHASHES 2u
#define KV_SNAP_PART_MATCHER 4u
#define KV_SNAP_PART_ALL 7u

/* BLOCKS, BLOCK_SETS, RUNS, PARENTS and LOCALS are columns of the same
 * blocks: a record each, at the same place. */
enum kv_snap_section {
	KV_SEC_META = 1, KV_SEC_STRINGS, KV_SEC_PARTITIONS, KV_SEC_WORKERS, KV_SEC_BLOCKS, KV_SEC_BLOCK_SETS, KV_SEC_RUNS,
	KV_SEC_SETS, KV_SEC_HOLDERS, KV_SEC_PARENTS, KV_SEC_LOCALS, KV_SEC_ORPHANS, KV_SEC_EHASHES, KV_SEC_EHASH_BLOCKS,
	KV_SEC_STALE, KV_SEC_CONTENT, KV_SEC_OFFLOAD, KV_SEC_PENDING, KV_SEC_SOURCES,
	KV_SEC_STREAM,   /* written only when the input came from kvnats -C: readers before it skip it */
	KV_SEC_STREAM_ID, /* and the stream's name and creation time, when known: likewise */
	KV_SEC_MAX
};

/* What a partition has of the sections kept per partition: a range of
 * records each (BLOCKS' range is that of the other block columns too,
 * EHASHES' is EHASH_BLOCKS'). */
enum kv_snap_range_kind { KV_RANGE_BLOCKS, KV_RANGE_ORPHANS, KV_RANGE_SETS, KV_RANGE_EHASHES, KV_RANGE_STALE,
			  KV_RANGE_CONTENT, KV_RANGE_MAX };
struct kv_snap_range { uint64_t first, count; };

/* On-disk records (little-endian, naturally aligned, no padding holes). */
struct kv_snap_meta {
	uint64_t now_ns, next_sweep_ns;
	uint64_t pending_ttl_ns, offload_ttl_ns, content_ttl_ns;
	uint64_t reserved[3];
};
struct kv_snap_str { uint32_t off, len; };
struct kv_snap_partition {
	struct kv_snap_str model, tenant;
	uint32_t block_size, flags;      /* flags bit 0: content expired since the last stale sweep */
	uint64_t ehash_mark;             /* engine hashes after the last stale sweep */
	struct kv_snap_range r[KV_RANGE_MAX];
};
struct kv_snap_worker {
	struct kv_snap_str instance_id, host;
	uint32_t dp_rank, flags;         /* flags bit 0: inferred from a source; bit 1: a pool holder (dp_rank 0) */
	uint32_t block_size;
	uint32_t partition;              /* 1 + the partition its registration names (an engine's); 0: none */
};
/* A block, in columns: BLOCKS its chain (u64), BLOCK_SETS its holders (u32,
 * an index into SETS), RUNS its run (u8, below), PARENTS its parent (u32:
 * the position of the parent block among the partition's, or one of these,
 * with the parent's chain in ORPHANS when nobody holds it), LOCALS its
 * local hash (u64). */
#define KV_SNAP_PARENT_ROOT 0xfffffffeu    /* the first block of a prefix: parent chain 1337 */
#define KV_SNAP_PARENT_ORPHAN 0xffffffffu  /* the parent is not held */
/* RUNS: a byte a block, how many ancestors just before it are held with its
 * set (the parent held with it: its run + 1, else 0), at most KV_SNAP_RUN_MAX. */
#define KV_SNAP_RUN_MAX 255u
struct kv_snap_orphan { uint32_t block, reserved; uint64_t parent; };  /* sorted by block */
/* A set of holders (worker << 3 | media), sorted by worker. */
struct kv_snap_set { uint32_t holders_first, nholders; };
/* EHASHES (u64, sorted in its partition's range) name the blocks at the same
 * place of EHASH_BLOCKS (u32 positions); STALE ones name chains nobody holds. */
struct kv_snap_stale { uint64_t ehash, chain; };
struct kv_snap_content { uint64_t chain, parent, local, t; };
struct kv_snap_offload { uint32_t partition, reserved; uint64_t ehash, chain, parent, local, t; };
struct kv_snap_pending { uint32_t partition, worker; uint64_t ehash, t; uint32_t medium, reserved; };
struct kv_snap_source {
	struct kv_snap_str src;
	uint32_t seen, last_record;      /* last_record: 0 none (or a replayed duplicate), 1 decoded, 2 not decoded */
	uint64_t last_seq, gaps, missing, restarts, batches;
	uint64_t last_recv_ns;           /* of its last batch: event lines that continue it are no new batch */
};

/* Where the input stopped in the JetStream stream it was consumed from,
 * and which stream that is: its name and creation time (kvcap(5)). */
struct kv_snap_stream { uint64_t last_seq, reserved; };
struct kv_snap_stream_id { struct kv_snap_str name; uint64_t created_ns; };

/* A loaded, validated snapshot: views into the file's bytes, read into
 * memory.  The views of a part not read (parts) are NULL, their counts 0. */
struct kv_snap {
	void *data;
	size_t size;
	size_t mapped;      /* data is anonymous memory of this size (0: malloc'ed) */
	unsigned parts;     /* KV_SNAP_PART_* read and checked */
	char *path;         /* not NULL while parts of the file are left to read: its name */
	int fd;             /* and the file, open then */
	unsigned version;   /* of the file's format (KV_SNAP_VERSION_READ to KV_SNAP_VERSION) */
	const struct kv_snap_meta *meta;
	const char *strings;
	size_t nstrings;
	const struct kv_snap_partition *partitions;
	size_t npartitions;
	const struct kv_snap_worker *workers;
	size_t nworkers;
	const uint64_t *chains;          /* the block columns, nblocks records each */
	const uint32_t *block_sets;
	const uint8_t *runs;
	const uint32_t *parents;         /* KV_SNAP_PART_EHASHES */
	const uint64_t *locals;          /* KV_SNAP_PART_EHASHES */
	size_t nblocks;
	const struct kv_snap_orphan *orphans;
	size_t norphans;
	const struct kv_snap_set *sets;
	size_t nsets;
	const uint32_t *holders;
	size_t nholders;
	const uint64_t *ehashes;
	const uint32_t *ehash_blocks;
	size_t nehashes;
	const struct kv_snap_stale *stale;
	size_t nstale;
	const struct kv_snap_content *content;
	size_t ncontent;
	const struct kv_snap_offload *offload;
	size_t noffload;
	const struct kv_snap_pending *pending;
	size_t npending;
	const struct kv_snap_source *sources;
	size_t nsources;
	const struct kv_snap_stream *stream;   /* NULL: no stream position */
	const struct kv_snap_stream_id *stream_id;  /* NULL: the stream not named */
	/* per partition, a directory of where each top-bits prefix of the
	 * chains starts (built by kv_snapr_load, so that a lookup reads one
	 * directory slot and a block or two); NULL: binary search */
	uint32_t **dir;
	unsigned *dirbits;
	size_t ndirs;       /* of dir and dirbits */
	uint64_t range_total[KV_RANGE_MAX];   /* records of each kind of range in the file, read or not */
};

/* The size of one record of each section. */
static const uint32_t kv_snap_record_size[KV_SEC_MAX] = {
	[KV_SEC_META] = sizeof(struct kv_snap_meta),
	[KV_SEC_STRINGS] = 1,
	[KV_SEC_PARTITIONS] = sizeof(struct kv_snap_partition),
	[KV_SEC_WORKERS] = sizeof(struct kv_snap_worker),
	[KV_SEC_BLOCKS] = sizeof(uint64_t),
	[KV_SEC_BLOCK_SETS] = sizeof(uint32_t),
	[KV_SEC_RUNS] = 1,
	[KV_SEC_SETS] = sizeof(struct kv_snap_set),
	[KV_SEC_HOLDERS] = sizeof(uint32_t),
	[KV_SEC_PARENTS] = sizeof(uint32_t),
	[KV_SEC_LOCALS] = sizeof(uint64_t),
	[KV_SEC_ORPHANS] = sizeof(struct kv_snap_orphan),
	[KV_SEC_EHASHES] = sizeof(uint64_t),
	[KV_SEC_EHASH_BLOCKS] = sizeof(uint32_t),
	[KV_SEC_STALE] = sizeof(struct kv_snap_stale),
	[KV_SEC_CONTENT] = sizeof(struct kv_snap_content),
	[KV_SEC_OFFLOAD] = sizeof(struct kv_snap_offload),
	[KV_SEC_PENDING] = sizeof(struct kv_snap_pending),
	[KV_SEC_SOURCES] = sizeof(struct kv_snap_source),
	[KV_SEC_STREAM] = sizeof(struct kv_snap_stream),
	[KV_SEC_STREAM_ID] = sizeof(struct kv_snap_stream_id),
};

/* The section of each kind of per-partition range. */
static const enum kv_snap_section kv_snap_range_section[KV_RANGE_MAX] = {
	[KV_RANGE_BLOCKS] = KV_SEC_BLOCKS, [KV_RANGE_ORPHANS] = KV_SEC_ORPHANS, [KV_RANGE_SETS] = KV_SEC_SETS,
	[KV_RANGE_EHASHES] = KV_SEC_EHASHES, [KV_RANGE_STALE] = KV_SEC_STALE, [KV_RANGE_CONTENT] = KV_SEC_CONTENT,
};

/* The header (magic, version, section count, file size, checksum), a
 * table entry per section, and the most sections a file may have. */
#define KV_SNAP_HEADER_SIZE 32
#define KV_SNAP_TABLE_ENTRY 32
#define KV_SNAP_MAX_SECTIONS 64

/* Sections start on 8-byte boundaries. */
static inline uint64_t kv_snap_align8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

/* The header's checksum: XXH3-64 of its first 24 bytes, then the table. */
static inline uint64_t kv_snap_header_sum(const uint8_t *header, const uint8_t *table, uint32_t nsec)
{
	uint8_t buf[24 + KV_SNAP_MAX_SECTIONS * KV_SNAP_TABLE_ENTRY];
	memcpy(buf, header, 24);
	memcpy(buf + 24, table, (size_t)nsec * KV_SNAP_TABLE_ENTRY);
	return XXH3_64bits(buf, 24 + (size_t)nsec * KV_SNAP_TABLE_ENTRY);
}

/* A string of the snapshot (validated: always in bounds). */
static inline const char *kv_snap_string(const struct kv_snap *s, struct kv_snap_str r, size_t *len)
{
	*len = r.len;
	return s->strings + r.off;
}
/* A string reference within the strings of s (a loaded one's are checked:
 * kv_snap_string trusts them). */
static inline bool kv_snap_str_ok(const struct kv_snap *s, struct kv_snap_str r)
{
	return r.off <= s->nstrings && r.len <= s->nstrings - r.off;
}

#endif

/* snap: the kvsnap snapshot file (kvsnap(5)), both directions,
 * as bytes.  Little-endian, versioned: a header with magic "KVSNAP", a
 * section table, fixed-size records; each section has an XXH3-64 checksum
 * in its table entry, and the header one over itself and the table, so
 * that a reader can read and check only the sections it uses.  A writer
 * gathers the sections record by record and writes them atomically
 * (temporary file, fsync, rename; a device or a fifo is written to
 * directly, never renamed over: base/product.h); what the records say is their owners'
 * business (snapstate.c: the index and its workers; the matcher: its own,
 * kv_match_save), and they write canonically (sorted; no pointers, no time
 * of writing), so equal state gives equal bytes.  Loading reads the file
 * (all of it, or the parts asked for) into memory of its own (never a
 * mapping: whatever later happens to the path cannot change or cut the
 * bytes in use; a pipe loads too) and checks every count, offset and index
 * of what it read before anything uses them; queries then run on those
 * records directly (blocks are columns, sorted by chain within their
 * partition: a lookup reads the slot of the chain's top bits in a
 * directory built at load, binary-searches the few chains of that slot,
 * then reads the block's set and run at its position).  Reading needs
 * nothing of the live index or the matcher. */
#ifndef KV_SNAP_H
#define KV_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/err.h"
#include "base/out.h"
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

/* The parts of a snapshot a reader reads and checks (kv_snap_open), each a
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
	 * chains starts (built by kv_snap_load, so that a lookup reads one
	 * directory slot and a block or two); NULL: binary search */
	uint32_t **dir;
	unsigned *dirbits;
	size_t ndirs;       /* of dir and dirbits */
	uint64_t range_total[KV_RANGE_MAX];   /* records of each kind of range in the file, read or not */
};

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
 * kv_snap_read; anything else is read whole, never beyond the size its
 * header says, and that at most KV_SNAP_MAX_STREAM when it is not a
 * regular file. */
bool kv_snap_open(const char *path, unsigned parts, struct kv_snap *s, struct kv_err *e);
/* kv_snap_open of a path watched for replacements (kvquery --watch): it
 * opens without waiting, and refuses (66) anything but a regular file, so
 * that a fifo or a device put in the snapshot's place neither hangs the
 * program nor is read. */
bool kv_snap_open_regular(const char *path, unsigned parts, struct kv_snap *s, struct kv_err *e);
/* kv_snap_open of every part. */
bool kv_snap_load(const char *path, struct kv_snap *s, struct kv_err *e);
/* Reads and validates more parts of a snapshot kv_snap_open loaded (none
 * when they are there already).  A file changed in place since is refused
 * then, when the bytes read do not match the table read at first (65). */
bool kv_snap_read(struct kv_snap *s, unsigned parts, struct kv_err *e);
/* Validates bytes already in memory (the snapshot takes no ownership, and
 * has no directory: lookups fall back to binary search); false with what
 * is wrong in e (65, no path). */
bool kv_snap_check(const void *data, size_t size, struct kv_snap *s, struct kv_err *e);
void kv_snap_unload(struct kv_snap *s);
/* A string of the snapshot (validated: always in bounds). */
static inline const char *kv_snap_string(const struct kv_snap *s, struct kv_snap_str r, size_t *len)
{
	*len = r.len;
	return s->strings + r.off;
}
/* A block is its position in the block columns (of the whole file: a
 * partition's blocks are its range of them); kv_snap_find's "none". */
#define KV_SNAP_NO_BLOCK UINT64_MAX
/* A block's set (an index into SETS) and run. */
static inline uint32_t kv_snap_block_set(const struct kv_snap *s, uint64_t b)
{
	return s->block_sets[b];
}
static inline unsigned kv_snap_block_run(const struct kv_snap *s, uint64_t b)
{
	return s->runs[b];
}
/* The holders of a block (validated: always in bounds), and their number. */
static inline const uint32_t *kv_snap_holders(const struct kv_snap *s, uint64_t b, size_t *n)
{
	const struct kv_snap_set *st = &s->sets[s->block_sets[b]];
	*n = st->nholders;
	return s->holders + st->holders_first;
}
/* The chain of the block that engine hash i (of EHASHES, in partition
 * part's range) names. */
static inline uint64_t kv_snap_named_chain(const struct kv_snap *s, uint32_t part, uint64_t i)
{
	return s->chains[s->partitions[part].r[KV_RANGE_BLOCKS].first + s->ehash_blocks[i]];
}
/* The chain of a block's parent (KV_CHAIN_ROOT for a first block); needs
 * KV_SNAP_PART_EHASHES read. */
uint64_t kv_snap_parent(const struct kv_snap *s, uint32_t part, uint64_t b);
/* The block of partition part with this chain, or KV_SNAP_NO_BLOCK. */
uint64_t kv_snap_find(const struct kv_snap *s, uint32_t part, uint64_t chain);
/* The chain an engine hash names in a partition (the map kvmatch learned
 * from stored events); false when the snapshot does not know it. */
bool kv_snap_ehash_chain(const struct kv_snap *s, uint32_t part, uint64_t ehash, uint64_t *chain);
/* Lookups ahead: stage 0 fetches the directory slot of chain, stage 1 its
 * chains, set and run (which needs the slot to have arrived). */
void kv_snap_prefetch(const struct kv_snap *s, uint32_t part, uint64_t chain, int stage);
/* -1 when no partition has this model and tenant. */
int64_t kv_snap_partition(const struct kv_snap *s, const char *model, size_t mlen, const char *tenant, size_t tlen);
/* (block, worker) pairs held: each block's set counted. */
uint64_t kv_snap_holdings(const struct kv_snap *s);
/* Every record as a JSON line, for people and tests (kvmatch --dump). */
void kv_snap_dump(const struct kv_snap *s, struct kv_out *o);

/* ---- writing ----
 * A snapshot being built: its sections, and where the live partitions and
 * workers go in it (the builder of the index's sections sets the orders,
 * snapstate.c; the matcher's sections use them). */
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

/* ---- restoring ----
 * A snapshot being loaded into live state: the live partition and worker
 * each of its partitions and workers became (KV_NO_WORKER: one not kept). */
struct kv_snap_reader {
	const struct kv_snap *s;
	const uint32_t *partition;
	const uint32_t *worker;
};

#endif

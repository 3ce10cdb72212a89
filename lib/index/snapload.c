/* snapload: reading a kvsnap file and checking it (snapload.h says what
 * it owns; the matcher's sections are checked by their owner,
 * kv_match_check_snap in matchsnap.c). */
#include "index/snapload.h"
#include "index/snap.h"
#include "index/snaplookup.h"
#include "index/blockhash.h"
#include "index/match.h"
#include "index/workers.h"
#include "base/err.h"
#include "base/input.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

static void release_data(void *d, size_t mapped)
{
	if (mapped)
		munmap(d, mapped);
	else
		free(d);
}

/* A section table entry (kvsnap(5), Layout). */
struct entry {
	uint32_t id, rs;
	uint64_t off, count, sum;
};

static struct entry table_entry(const uint8_t *d, uint32_t i)
{
	const uint8_t *t = d + KV_SNAP_HEADER_SIZE + (size_t)i * KV_SNAP_TABLE_ENTRY;
	struct entry x;
	memcpy(&x.id, t, 4);
	memcpy(&x.rs, t + 4, 4);
	memcpy(&x.off, t + 8, 8);
	memcpy(&x.count, t + 16, 8);
	memcpy(&x.sum, t + 24, 8);
	return x;
}

static uint32_t section_total(const uint8_t *d)
{
	uint32_t nsec;
	memcpy(&nsec, d + 8, 4);
	return nsec;
}

/* The part a section belongs to (those of later versions: the last). */
static unsigned part_of(uint32_t id)
{
	return id <= KV_SEC_HOLDERS ? KV_SNAP_PART_BLOCKS : id <= KV_SEC_STALE ? KV_SNAP_PART_EHASHES : KV_SNAP_PART_MATCHER;
}

/* The header of a file of size bytes: magic, version, section count and
 * size; the rest of the header and the table, once read, by table_ok. */
static bool header_ok(const uint8_t *d, size_t size, struct kv_err *e)
{
	if (size < KV_SNAP_HEADER_SIZE || memcmp(d, "KVSNAP", 6) != 0)
		return kv_err_set(e, KV_EX_DATAERR, "not a kvsnap snapshot");
	uint16_t version;
	uint64_t declared;
	memcpy(&version, d + 6, 2);
	memcpy(&declared, d + 16, 8);
	if (version < KV_SNAP_VERSION_READ)
		return kv_err_set(e, KV_EX_DATAERR,
			    "snapshot version %u is an older format (this kvtools reads versions %u and %u): build it again "
			    "with kvmatch from the captures",
			    version, KV_SNAP_VERSION_READ, KV_SNAP_VERSION);
	if (version > KV_SNAP_VERSION)
		return kv_err_set(e, KV_EX_DATAERR, "snapshot version %u (this kvtools reads versions %u and %u)", version,
				  KV_SNAP_VERSION_READ, KV_SNAP_VERSION);
	if (declared != size)
		return kv_err_set(e, KV_EX_DATAERR, "truncated or padded: %zu bytes, header says %llu", size, (unsigned long long)declared);
	uint32_t nsec = section_total(d);
	if (nsec == 0 || nsec > KV_SNAP_MAX_SECTIONS || KV_SNAP_HEADER_SIZE + (uint64_t)nsec * KV_SNAP_TABLE_ENTRY > size)
		return kv_err_set(e, KV_EX_DATAERR, "bad section count %u", nsec);
	return true;
}

/* The header's checksum and the table: sections in ascending id order,
 * each at the first multiple of 8 after the one before, the file ending at
 * the first after the last; known ones of their record size. */
static bool table_ok(const uint8_t *d, size_t size, struct kv_err *e)
{
	uint32_t nsec = section_total(d);
	uint64_t sum;
	memcpy(&sum, d + 24, 8);
	if (kv_snap_header_sum(d, d + KV_SNAP_HEADER_SIZE, nsec) != sum)
		return kv_err_set(e, KV_EX_DATAERR, "header checksum mismatch (corrupt file)");
	uint64_t at = KV_SNAP_HEADER_SIZE + (uint64_t)nsec * KV_SNAP_TABLE_ENTRY;
	uint32_t prev_id = 0;
	for (uint32_t i = 0; i < nsec; i++) {
		struct entry x = table_entry(d, i);
		if (x.id <= prev_id)
			return kv_err_set(e, KV_EX_DATAERR, "section table out of order at entry %u", i);
		prev_id = x.id;
		if (x.rs == 0 || x.off != at || x.count > (size - x.off) / x.rs)
			return kv_err_set(e, KV_EX_DATAERR, "section %u out of bounds", x.id);
		if (x.id < KV_SEC_MAX && x.rs != kv_snap_record_size[x.id])
			return kv_err_set(e, KV_EX_DATAERR, "section %u has records of %u bytes, expected %u", x.id, x.rs,
				    kv_snap_record_size[x.id]);
		at = kv_snap_align8(x.off + x.count * x.rs);
	}
	if (at != size)
		return kv_err_set(e, KV_EX_DATAERR, "section table does not end at the end of the file");
	return true;
}

/* The checksums of the sections of parts, and their padding zero; sum[i],
 * when given, is table entry i's worked out as its section was read. */
static bool sums_ok(const uint8_t *d, unsigned parts, const uint64_t *sum, struct kv_err *e)
{
	uint32_t nsec = section_total(d);
	for (uint32_t i = 0; i < nsec; i++) {
		struct entry x = table_entry(d, i);
		if (!(part_of(x.id) & parts))
			continue;
		uint64_t len = x.count * x.rs;
		if ((sum ? sum[i] : XXH3_64bits(d + x.off, (size_t)len)) != x.sum)
			return kv_err_set(e, KV_EX_DATAERR, "section %u checksum mismatch (corrupt file)", x.id);
		for (uint64_t k = x.off + len; k < kv_snap_align8(x.off + len); k++)
			if (d[k])
				return kv_err_set(e, KV_EX_DATAERR, "section %u: padding not zero", x.id);
	}
	return true;
}

/* The views of parts and their counts (NULL and 0 for the sections of the
 * others), and what the table says each kind of range covers. */
static void set_views(const uint8_t *d, unsigned parts, struct kv_snap *s)
{
	uint16_t version;
	memcpy(&version, d + 6, 2);
	s->version = version;
	const void *ptr[KV_SEC_MAX] = { 0 };
	uint64_t count[KV_SEC_MAX] = { 0 }, total[KV_SEC_MAX] = { 0 };
	uint32_t nsec = section_total(d);
	for (uint32_t i = 0; i < nsec; i++) {
		struct entry x = table_entry(d, i);
		if (x.id >= KV_SEC_MAX)
			continue; /* a later version's section: skipped */
		total[x.id] = x.count;
		if (part_of(x.id) & parts) {
			ptr[x.id] = d + x.off;
			count[x.id] = x.count;
		}
	}
	for (int k = 0; k < KV_RANGE_MAX; k++)
		s->range_total[k] = total[kv_snap_range_section[k]];
	s->meta = ptr[KV_SEC_META];
	s->strings = ptr[KV_SEC_STRINGS];
	s->nstrings = count[KV_SEC_STRINGS];
	s->partitions = ptr[KV_SEC_PARTITIONS];
	s->npartitions = count[KV_SEC_PARTITIONS];
	s->workers = ptr[KV_SEC_WORKERS];
	s->nworkers = count[KV_SEC_WORKERS];
	s->chains = ptr[KV_SEC_BLOCKS];
	s->block_sets = ptr[KV_SEC_BLOCK_SETS];
	s->runs = ptr[KV_SEC_RUNS];
	s->parents = ptr[KV_SEC_PARENTS];
	s->locals = ptr[KV_SEC_LOCALS];
	s->nblocks = count[KV_SEC_BLOCKS];
	s->orphans = ptr[KV_SEC_ORPHANS];
	s->norphans = count[KV_SEC_ORPHANS];
	s->sets = ptr[KV_SEC_SETS];
	s->nsets = count[KV_SEC_SETS];
	s->holders = ptr[KV_SEC_HOLDERS];
	s->nholders = count[KV_SEC_HOLDERS];
	s->ehashes = ptr[KV_SEC_EHASHES];
	s->ehash_blocks = ptr[KV_SEC_EHASH_BLOCKS];
	s->nehashes = count[KV_SEC_EHASHES];
	s->stale = ptr[KV_SEC_STALE];
	s->nstale = count[KV_SEC_STALE];
	s->content = ptr[KV_SEC_CONTENT];
	s->ncontent = count[KV_SEC_CONTENT];
	s->offload = ptr[KV_SEC_OFFLOAD];
	s->noffload = count[KV_SEC_OFFLOAD];
	s->pending = ptr[KV_SEC_PENDING];
	s->npending = count[KV_SEC_PENDING];
	s->sources = ptr[KV_SEC_SOURCES];
	s->nsources = count[KV_SEC_SOURCES];
	s->stream = count[KV_SEC_STREAM] && ptr[KV_SEC_STREAM] ? ptr[KV_SEC_STREAM] : NULL;
	s->stream_id = count[KV_SEC_STREAM_ID] && ptr[KV_SEC_STREAM_ID] ? ptr[KV_SEC_STREAM_ID] : NULL;
}

/* What the table says of sections alone: those every reader needs are
 * there, META has one record, STREAM at most one, and the sections that go
 * with another have one record each of its (the block columns each one a
 * block). */
static bool counts_ok(const uint8_t *d, struct kv_err *e)
{
	bool have[KV_SEC_MAX] = { 0 };
	uint64_t count[KV_SEC_MAX] = { 0 };
	uint32_t nsec = section_total(d);
	for (uint32_t i = 0; i < nsec; i++) {
		struct entry x = table_entry(d, i);
		if (x.id < KV_SEC_MAX) {
			have[x.id] = true;
			count[x.id] = x.count;
		}
	}
	for (uint32_t id = KV_SEC_META; id <= KV_SEC_LOCALS; id++)
		if (!have[id])
			return kv_err_set(e, KV_EX_DATAERR, "section %u missing", id);
	if (count[KV_SEC_META] != 1)
		return kv_err_set(e, KV_EX_DATAERR, "meta section holds %llu records", (unsigned long long)count[KV_SEC_META]);
	uint64_t nb = count[KV_SEC_BLOCKS];
	if (count[KV_SEC_BLOCK_SETS] != nb || count[KV_SEC_RUNS] != nb || count[KV_SEC_PARENTS] != nb ||
	    count[KV_SEC_LOCALS] != nb || count[KV_SEC_EHASH_BLOCKS] != count[KV_SEC_EHASHES])
		return kv_err_set(e, KV_EX_DATAERR, "block columns or engine-hash blocks do not match blocks or engine hashes");
	if (count[KV_SEC_STREAM] > 1)
		return kv_err_set(e, KV_EX_DATAERR, "stream section holds %llu records", (unsigned long long)count[KV_SEC_STREAM]);
	/* a stream's name goes with a position in it */
	if (count[KV_SEC_STREAM_ID] > count[KV_SEC_STREAM])
		return kv_err_set(e, KV_EX_DATAERR, "stream name section holds %llu records, for %llu positions",
				  (unsigned long long)count[KV_SEC_STREAM_ID], (unsigned long long)count[KV_SEC_STREAM]);
	return true;
}

static const char *const range_name[KV_RANGE_MAX] = { "block", "orphan", "set", "engine hash", "stale engine hash",
							"content" };

static uint64_t section_count(const struct kv_snap *s, enum kv_snap_range_kind k)
{
	return s->range_total[k];
}

/* Each kind of range follows the previous partition's without a gap, and
 * the partitions' ranges cover their section. */
static bool check_ranges(const struct kv_snap *s, struct kv_err *e)
{
	for (int k = 0; k < KV_RANGE_MAX; k++) {
		uint64_t next = 0, total = section_count(s, (enum kv_snap_range_kind)k);
		for (size_t p = 0; p < s->npartitions; p++) {
			const struct kv_snap_range *r = &s->partitions[p].r[k];
			if (r->first != next || r->count > total - next)
				return kv_err_set(e, KV_EX_DATAERR, "partition %zu: %s range out of bounds", p, range_name[k]);
			next += r->count;
		}
		if (next != total)
			return kv_err_set(e, KV_EX_DATAERR, "%ss not covered by partitions", range_name[k]);
	}
	return true;
}

/* A partition's sets: each of 1 to KV_MAX_HOLDERS holders, each a worker of
 * the file with media, sorted by worker, the holder ranges one after the
 * other from *holders (which becomes where they end). */
static bool check_sets(const struct kv_snap *s, const struct kv_snap_range *r, uint64_t *holders, struct kv_err *e)
{
	for (uint64_t i = r->first; i < r->first + r->count; i++) {
		const struct kv_snap_set *st = &s->sets[i];
		if (st->nholders == 0 || st->holders_first != *holders || st->nholders > s->nholders - *holders)
			return kv_err_set(e, KV_EX_DATAERR, "set %llu: holders out of bounds", (unsigned long long)i);
		if (st->nholders > KV_MAX_HOLDERS)
			return kv_err_set(e, KV_EX_DATAERR, "set %llu: more than %u holders", (unsigned long long)i, KV_MAX_HOLDERS);
		const uint32_t *h = s->holders + *holders;
		for (uint32_t k = 0; k < st->nholders; k++) {
			if (KV_HOLDER_WORKER(h[k]) >= s->nworkers || KV_HOLDER_MEDIA(h[k]) == 0)
				return kv_err_set(e, KV_EX_DATAERR, "set %llu: bad holder", (unsigned long long)i);
			if (k > 0 && KV_HOLDER_WORKER(h[k]) <= KV_HOLDER_WORKER(h[k - 1]))
				return kv_err_set(e, KV_EX_DATAERR, "set %llu: holders out of order", (unsigned long long)i);
		}
		*holders += st->nholders;
	}
	return true;
}

/* The top bits of a partition's chains its directory is by (0: none, a
 * partition too small to need one). */
static unsigned dir_bits(uint64_t n)
{
	unsigned bits = 0;
	if (n < 64)
		return 0;
	while (bits < 30 && (2ull << bits) <= n)
		bits++;
	return bits;
}

/* What the checks of the blocks find in their chains and sets, column by
 * column, a piece at a time: so that each piece is checked (and counted
 * into its partition's directory) while it is in the cache, just read
 * (read_summed), not in passes of their own over memory afterwards (which
 * took 8 ms of a 19 ms load of the cluster snapshot).  Per partition: the
 * first block out of order, and the first whose set is not the
 * partition's (count: none); with directories, its blocks counted by slot
 * (dir_bits). */
struct block_scan {
	const struct kv_snap_partition *parts;
	size_t np, p;                    /* p: the partition of the last piece */
	uint64_t *order_bad, *set_bad;
	uint64_t *set_next;              /* the partition's next set not yet met */
	uint64_t *number_bad;            /* the first block with a set numbered out of turn */
	struct kv_snap *dirs;            /* whose directories are counted (NULL: none) */
	bool on;
};

#define HUGE_PAGE ((size_t)2 << 20)
/* What huge_alloc maps for cap bytes: whole huge pages. */
static size_t huge_rounded(size_t cap)
{
	return (cap + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
}

static char *huge_alloc(size_t cap, bool populate, size_t *len);

/* A directory of 2^bits slots and one, zeroed: a large one in memory
 * faulted in at once (huge_alloc), not a page at a time as the scan
 * writes it, which was a fault every 1,024 slots. */
#define DIR_MAPPED ((size_t)1 << 20)
static size_t dir_size(unsigned bits)
{
	return (((size_t)1 << bits) + 1) * sizeof(uint32_t);
}

static uint32_t *dir_alloc(unsigned bits)
{
	size_t len;
	if (dir_size(bits) < DIR_MAPPED)
		return kv_xcalloc(((size_t)1 << bits) + 1, sizeof(uint32_t));
	char *d = huge_alloc(dir_size(bits), true, &len);
	if (!d)
		kv_die(KV_EX_SOFTWARE, "out of memory (%zu bytes)", dir_size(bits));
	return (uint32_t *)(void *)d;
}

static void dir_free(uint32_t *d, unsigned bits)
{
	if (d && dir_size(bits) >= DIR_MAPPED)
		munmap(d, huge_rounded(dir_size(bits)));
	else
		free(d);
}

/* A scan of the blocks of these partitions (their ranges checked), with
 * the directories of dirs when not NULL. */
static void scan_begin(struct block_scan *sc, const struct kv_snap_partition *parts, size_t np, struct kv_snap *dirs)
{
	*sc = (struct block_scan){ parts, np, 0, kv_xmalloc((np + 1) * sizeof *sc->order_bad),
				   kv_xmalloc((np + 1) * sizeof *sc->set_bad), kv_xcalloc(np + 1, sizeof *sc->set_next),
				   kv_xmalloc((np + 1) * sizeof *sc->number_bad), dirs, true };
	for (size_t p = 0; p < np; p++)
		sc->order_bad[p] = sc->set_bad[p] = sc->number_bad[p] = parts[p].r[KV_RANGE_BLOCKS].count;
	if (!dirs)
		return;
	dirs->dir = kv_xcalloc(np + 1, sizeof *dirs->dir);
	dirs->dirbits = kv_xcalloc(np + 1, sizeof *dirs->dirbits);
	dirs->ndirs = np;
	for (size_t p = 0; p < np; p++) {
		unsigned bits = dir_bits(parts[p].r[KV_RANGE_BLOCKS].count);
		dirs->dirbits[p] = bits;
		dirs->dir[p] = bits ? dir_alloc(bits) : NULL;
	}
}

static void scan_end(struct block_scan *sc)
{
	free(sc->order_bad);
	free(sc->set_bad);
	free(sc->set_next);
	free(sc->number_bad);
	memset(sc, 0, sizeof *sc);
}

/* The partition block lo is in, and where its blocks end (the ranges
 * follow one another: checked before a scan begins). */
static const struct kv_snap_range *scan_partition(struct block_scan *sc, uint64_t lo)
{
	if (lo < sc->parts[sc->p].r[KV_RANGE_BLOCKS].first)
		sc->p = 0;
	while (sc->parts[sc->p].r[KV_RANGE_BLOCKS].first + sc->parts[sc->p].r[KV_RANGE_BLOCKS].count <= lo)
		sc->p++;
	return &sc->parts[sc->p].r[KV_RANGE_BLOCKS];
}

/* Chains [from, end) of a partition whose blocks start at c (c[from - 1]
 * read already, from > 0), each marking the end of the slot of its top
 * bits (shift: 64 less those bits) in d: the slot after it, d[slot + 1],
 * gets the position after the chain's, and the last chain of a slot
 * writes last (plain stores: counting blocks per slot, d[slot + 1]++,
 * waited on the store before whenever two chains shared a slot, half the
 * time).  True when one is not after the chain before it. */
static bool mark_slot_ends(uint32_t *d, unsigned shift, const uint64_t *c, uint64_t from, uint64_t end)
{
	bool unordered = false;
	for (uint64_t i = from; i < end; i++) {
		unordered |= c[i] <= c[i - 1];
		d[(c[i] >> shift) + 1] = (uint32_t)(i + 1);
	}
	return unordered;
}

static bool any_unordered(const uint64_t *c, uint64_t from, uint64_t end)
{
	bool unordered = false;
	for (uint64_t i = from; i < end; i++)
		unordered |= c[i] <= c[i - 1];
	return unordered;
}

/* Chains [lo, hi) of the column c (the chain before lo read already). */
static void scan_chains(struct block_scan *sc, const uint64_t *c, uint64_t lo, uint64_t hi)
{
	while (lo < hi) {
		const struct kv_snap_range *r = scan_partition(sc, lo);
		const uint64_t *pc = c + r->first;   /* the partition's */
		uint64_t from = lo - r->first, end = (r->first + r->count < hi ? r->first + r->count : hi) - r->first;
		uint32_t *d = sc->dirs ? sc->dirs->dir[sc->p] : NULL;
		unsigned shift = d ? 64 - sc->dirs->dirbits[sc->p] : 0;
		if (d && from == 0)
			d[(pc[0] >> shift) + 1] = 1;
		from += from == 0;
		/* in order: one test at the end of the piece, not a branch a block */
		bool unordered = d ? mark_slot_ends(d, shift, pc, from, end) : any_unordered(pc, from, end);
		for (uint64_t i = from; unordered && i < end; i++)
			if (pc[i] <= pc[i - 1] && sc->order_bad[sc->p] == r->count)
				sc->order_bad[sc->p] = i;
		lo = r->first + end;
	}
}

/* Sets [lo, hi) of the column set: each of its partition's, and numbered
 * as writers number them, in the order the blocks (in chain order) first
 * have them: a block's set is one met before or the next.  The numbering
 * rides on the range test's pass (one compare a block), so that a file
 * whose equal state could be written in other bytes is refused at no cost
 * of a pass of its own. */
static void scan_sets(struct block_scan *sc, const uint32_t *set, uint64_t lo, uint64_t hi)
{
	while (lo < hi) {
		const struct kv_snap_range *r = scan_partition(sc, lo), *sets = &sc->parts[sc->p].r[KV_RANGE_SETS];
		uint64_t end = r->first + r->count < hi ? r->first + r->count : hi, first = sets->first, count = sets->count;
		uint64_t next = sc->set_next[sc->p], was = next;
		bool out = false, skipped = false;
		for (uint64_t i = lo; i < end; i++) {
			uint64_t k = (uint64_t)set[i] - first;
			out |= k >= count;
			skipped |= k > next;
			next += k == next;
		}
		for (uint64_t i = lo; (out || skipped) && i < end; i++) {
			uint64_t k = (uint64_t)set[i] - first;
			if (k >= count && sc->set_bad[sc->p] == r->count)
				sc->set_bad[sc->p] = i - r->first;
			if (k > was && sc->number_bad[sc->p] == r->count)
				sc->number_bad[sc->p] = i - r->first;
			was += k == was;
		}
		sc->set_next[sc->p] = next;
		lo = end;
	}
}

/* A partition's blocks, as the scan found them: sorted by chain, each with
 * a set of its partition (their parents are checked with the engine
 * hashes, read with them). */
static bool check_blocks(const struct block_scan *sc, size_t p, struct kv_err *e)
{
	const struct kv_snap_range *r = &sc->parts[p].r[KV_RANGE_BLOCKS];
	uint64_t order = sc->order_bad[p], set = sc->set_bad[p], number = sc->number_bad[p];
	if (order < r->count && order <= set && order <= number)
		return kv_err_set(e, KV_EX_DATAERR, "block %llu: blocks out of order", ((unsigned long long)r->first + order));
	if (set < r->count && set <= number)
		return kv_err_set(e, KV_EX_DATAERR, "block %llu: set out of its partition's", ((unsigned long long)r->first + set));
	if (number < r->count)
		return kv_err_set(e, KV_EX_DATAERR, "block %llu: set numbered out of block order",
				  ((unsigned long long)r->first + number));
	if (sc->set_next[p] != sc->parts[p].r[KV_RANGE_SETS].count)
		return kv_err_set(e, KV_EX_DATAERR, "partition %zu: set %llu held by no block", p,
				  (unsigned long long)sc->parts[p].r[KV_RANGE_SETS].first + sc->set_next[p]);
	return true;
}

/* Chains are uniformly distributed, and sorted within a partition: an
 * index by their top bits (about one slot per block) finds any of them in
 * one or two probes.  A binary search would take 22 cache misses at 4M.
 * Partition p's, the end of each slot with blocks marked (the scan), made
 * into where each slot starts: where the last slot before it with blocks
 * ends (0 for none). */
static void finish_directory(struct kv_snap *s, size_t p)
{
	uint32_t *d = s->dir[p];
	for (size_t k = 1; d && k <= (size_t)1 << s->dirbits[p]; k++)
		d[k] = d[k] > d[k - 1] ? d[k] : d[k - 1];
}

static void free_directories(struct kv_snap *s)
{
	for (size_t p = 0; s->dir && p < s->ndirs; p++)
		dir_free(s->dir[p], s->dirbits[p]);
	free(s->dir);
	free(s->dirbits);
	s->dir = NULL;
	s->dirbits = NULL;
	s->ndirs = 0;
}

/* A partition's parents: each one of its blocks or a marker; *orphans
 * counts the blocks marked as orphans. */
static bool check_parents(const struct kv_snap *s, const struct kv_snap_partition *rp, uint64_t *orphans, struct kv_err *e)
{
	const struct kv_snap_range *r = &rp->r[KV_RANGE_BLOCKS];
	const uint32_t *parent = s->parents + r->first;
	uint64_t marked = 0;
	for (uint64_t i = 0; i < r->count; i++) {
		if (parent[i] >= r->count && parent[i] < KV_SNAP_PARENT_ROOT)
			return kv_err_set(e, KV_EX_DATAERR, "block %llu: parent out of bounds", ((unsigned long long)r->first + i));
		marked += parent[i] == KV_SNAP_PARENT_ORPHAN;
	}
	*orphans = marked;
	return true;
}

/* A partition's orphans: one for each block marked so, in block order. */
static bool check_orphans(const struct kv_snap *s, const struct kv_snap_partition *rp, uint64_t marked, struct kv_err *e)
{
	const struct kv_snap_range *r = &rp->r[KV_RANGE_ORPHANS], *blocks = &rp->r[KV_RANGE_BLOCKS];
	const struct kv_snap_orphan *o = s->orphans + r->first;
	if (r->count != marked)
		return kv_err_set(e, KV_EX_DATAERR, "%llu orphans for %llu blocks whose parent is not held",
			    (unsigned long long)r->count, (unsigned long long)marked);
	for (uint64_t i = 0; i < r->count; i++)
		if ((i > 0 && o[i].block <= o[i - 1].block) || o[i].block >= blocks->count ||
		    s->parents[blocks->first + o[i].block] != KV_SNAP_PARENT_ORPHAN)
			return kv_err_set(e, KV_EX_DATAERR, "orphan %llu: not a block whose parent is not held, or out of order",
				    ((unsigned long long)r->first + i));
	return true;
}

/* A partition's engine hashes: those naming blocks and the stale ones each
 * sorted, none in both, every block named one of the partition's. */
static bool check_ehashes(const struct kv_snap *s, const struct kv_snap_partition *rp, struct kv_err *e)
{
	const struct kv_snap_range *r = &rp->r[KV_RANGE_EHASHES], *st = &rp->r[KV_RANGE_STALE];
	const uint64_t *eh = s->ehashes + r->first;
	const struct kv_snap_stale *x = s->stale + st->first;
	for (uint64_t i = 0; i < r->count; i++)
		if ((i > 0 && eh[i] <= eh[i - 1]) || s->ehash_blocks[r->first + i] >= rp->r[KV_RANGE_BLOCKS].count)
			return kv_err_set(e, KV_EX_DATAERR, "engine hash %llu: out of order or naming no block",
				    ((unsigned long long)r->first + i));
	for (uint64_t i = 1; i < st->count; i++)
		if (x[i].ehash <= x[i - 1].ehash)
			return kv_err_set(e, KV_EX_DATAERR, "stale engine hash %llu: out of order", ((unsigned long long)st->first + i));
	for (uint64_t i = 0, j = 0; i < r->count && j < st->count;) {
		if (eh[i] == x[j].ehash)
			return kv_err_set(e, KV_EX_DATAERR, "engine hash %llu: also stale", ((unsigned long long)r->first + i));
		if (eh[i] < x[j].ehash)
			i++;
		else
			j++;
	}
	return true;
}

static bool partitions_in_order(const struct kv_snap *s, size_t p)
{
	const struct kv_snap_partition *q = &s->partitions[p - 1], *rp = &s->partitions[p];
	size_t a, b, c, d;
	const char *ma = kv_snap_string(s, q->model, &a), *mb = kv_snap_string(s, rp->model, &b);
	const char *ta = kv_snap_string(s, q->tenant, &c), *tb = kv_snap_string(s, rp->tenant, &d);
	int cm = memcmp(ma, mb, a < b ? a : b);
	cm = cm ? cm : (a > b) - (a < b);
	int ct = memcmp(ta, tb, c < d ? c : d);
	ct = ct ? ct : (c > d) - (c < d);
	return cm < 0 || (cm == 0 && ct < 0);
}

/* Version 6 joined a name and its salt with '#' and escaped nothing
 * (version 7: kv_partition_name): its names mean the same now unless they
 * hold a '#' (an adapter "x#y" and model "x" with salt "y" were one) or a
 * backslash. */
static bool name_means_the_same(const struct kv_snap *s, const struct kv_snap_partition *rp)
{
	size_t n;
	const char *m = kv_snap_string(s, rp->model, &n);
	return !memchr(m, '#', n) && !memchr(m, '\\', n);
}

/* The partitions' records, sets and blocks (the ranges checked). */
static bool check_scanned(struct kv_snap *s, const struct block_scan *sc, struct kv_err *e)
{
	uint64_t holders = 0;
	for (size_t p = 0; p < s->npartitions; p++) {
		const struct kv_snap_partition *rp = &s->partitions[p];
		if (!kv_snap_str_ok(s, rp->model) || !kv_snap_str_ok(s, rp->tenant))
			return kv_err_set(e, KV_EX_DATAERR, "partition %zu: string out of bounds", p);
		if (rp->flags > 1)
			return kv_err_set(e, KV_EX_DATAERR, "partition %zu: unknown flags", p);
		if (p > 0 && !partitions_in_order(s, p))
			return kv_err_set(e, KV_EX_DATAERR, "partition %zu: partitions out of order", p);
		if (s->version < 7 && !name_means_the_same(s, rp)) {
			size_t n;
			const char *m = kv_snap_string(s, rp->model, &n);
			return kv_err_set(e, KV_EX_DATAERR,
					  "partition %zu: version %u wrote the name '%.*s', which this version reads "
					  "otherwise: build it again with kvmatch from the captures",
					  p, s->version, (int)(n > 200 ? 200 : n), m);
		}
		if (!check_sets(s, &rp->r[KV_RANGE_SETS], &holders, e) || !check_blocks(sc, p, e))
			return false;
		if (sc->dirs)
			finish_directory(s, p);
	}
	if (holders != s->nholders)
		return kv_err_set(e, KV_EX_DATAERR, "holders not covered by sets");
	return true;
}

/* The partitions and what they hold, their blocks as sc found them as
 * they were read (NULL: scanned here); with dirs, each one's directory
 * built too (kv_snapr_open's). */
static bool check_partitions(struct kv_snap *s, const struct block_scan *sc, bool dirs, struct kv_err *e)
{
	if (!check_ranges(s, e))
		return false;
	struct block_scan here;
	if (!sc || !sc->on) {
		scan_begin(&here, s->partitions, s->npartitions, dirs ? s : NULL);
		scan_chains(&here, s->chains, 0, s->nblocks);
		scan_sets(&here, s->block_sets, 0, s->nblocks);
		sc = &here;
	}
	bool ok = check_scanned(s, sc, e);
	if (sc == &here)
		scan_end(&here);
	return ok;
}

/* No more than an index can hold, so that resuming cannot go beyond it
 * (restoring finds each partition by name among those before it: past
 * the bound that would take quadratic time). */
static bool check_limits(const struct kv_snap *s, struct kv_err *e)
{
	if (s->npartitions > KV_MAX_PARTITIONS)
		return kv_err_set(e, KV_EX_DATAERR, "more than %u partitions", KV_MAX_PARTITIONS);
	if (s->nworkers > KV_MAX_WORKERS)
		return kv_err_set(e, KV_EX_DATAERR, "more than %u workers", KV_MAX_WORKERS);
	return true;
}

/* A worker's rank in the writer's order: a pool holder (dp_rank 0 in the
 * file) before the ranks of an instance of its name, as kv_workers_compare
 * sorts them. */
static int64_t order_rank(const struct kv_snap_worker *w)
{
	return w->flags & 2 ? KV_POOL_HOLDER_DP : (int64_t)w->dp_rank;
}

/* Worker i after worker i-1 in the writer's order (instance_id, then
 * rank), so no worker is there twice: two of one name would be one
 * worker once restored, and answers would name it twice.  An instance_id
 * with a NUL would be cut there when restored, so it is refused too. */
static bool worker_in_order(const struct kv_snap *s, size_t i)
{
	size_t a, b;
	const char *x = kv_snap_string(s, s->workers[i].instance_id, &a);
	if (memchr(x, 0, a))
		return false;
	if (i == 0)
		return true;
	const char *y = kv_snap_string(s, s->workers[i - 1].instance_id, &b);
	int c = memcmp(y, x, a < b ? a : b);
	c = c ? c : (b > a) - (b < a);
	return c < 0 || (c == 0 && order_rank(&s->workers[i - 1]) < order_rank(&s->workers[i]));
}

static bool check_workers(const struct kv_snap *s, struct kv_err *e)
{
	for (size_t i = 0; i < s->nworkers; i++) {
		if (!kv_snap_str_ok(s, s->workers[i].instance_id) || !kv_snap_str_ok(s, s->workers[i].host))
			return kv_err_set(e, KV_EX_DATAERR, "worker %zu: string out of bounds", i);
		if (s->workers[i].flags > 2 || (s->workers[i].flags & 2 && s->workers[i].dp_rank))
			return kv_err_set(e, KV_EX_DATAERR, "worker %zu: unknown flags", i);
		if (s->workers[i].partition > s->npartitions || (s->workers[i].partition && s->workers[i].flags))
			return kv_err_set(e, KV_EX_DATAERR, "worker %zu: bad partition", i);
		if (!worker_in_order(s, i))
			return kv_err_set(e, KV_EX_DATAERR, "worker %zu: out of order or repeated", i);
	}
	return true;
}

/* The blocks' links (parents, orphans) and the engine hashes. */
static bool check_links(const struct kv_snap *s, struct kv_err *e)
{
	for (size_t p = 0; p < s->npartitions; p++) {
		uint64_t orphans = 0;
		if (!check_parents(s, &s->partitions[p], &orphans, e) || !check_orphans(s, &s->partitions[p], orphans, e) ||
		    !check_ehashes(s, &s->partitions[p], e))
			return false;
	}
	return true;
}

/* Checks the sections of parts (the header, table and counts checked
 * before, the parts in s->parts too) and adds their views to s, and with
 * dirs the directories of the blocks.  Runs are not checked against the
 * parents: that is a lookup per block, which doubled the load (kvsnap(5)). */
static bool check_parts(const uint8_t *d, unsigned parts, const uint64_t *sum, const struct block_scan *sc, bool dirs,
			struct kv_snap *s, struct kv_err *e)
{
	bool ok = sums_ok(d, parts, sum, e);
	if (ok) {
		set_views(d, s->parts | parts, s);
		if (!(s->parts & KV_SNAP_PART_BLOCKS) && !(parts & KV_SNAP_PART_BLOCKS))
			kv_die(KV_EX_SOFTWARE, "snapshot: a part read before its blocks");
		ok = (!(parts & KV_SNAP_PART_BLOCKS) || (check_limits(s, e) && check_partitions(s, sc, dirs, e) && check_workers(s, e))) &&
		     (!(parts & KV_SNAP_PART_EHASHES) || check_links(s, e)) &&
		     (!(parts & KV_SNAP_PART_MATCHER) || kv_match_check_snap(s, e));
	}
	if (ok)
		s->parts |= parts;
	set_views(d, s->parts, s);
	return ok;
}

bool kv_snapr_check(const void *data, size_t size, struct kv_snap *s, struct kv_err *e)
{
	const uint8_t *d = data;
	memset(s, 0, sizeof *s);
	return header_ok(d, size, e) && table_ok(d, size, e) && counts_ok(d, e) && check_parts(d, KV_SNAP_PART_ALL, NULL, NULL, false, s, e);
}

/* The file (whole, or the parts read) in memory of our own.  Not a
 * mapping: a snapshot being answered from must stay valid whatever happens
 * to its path, and a mapped file truncated or rewritten in place (`: >`,
 * cp, rsync --inplace) is SIGBUS or different bytes under checks already
 * passed; a part read later is checked against the table read at first.
 * Reading also takes what has no size to map: a pipe, /dev/stdin.  A
 * regular file of READ_MAPPED and more is read in parts (open_parts) into
 * anonymous memory of its own; read_stream reads the rest in order, the
 * header first.  s->mapped is that memory's size (0: malloc'ed). */
#define READ_MAPPED ((size_t)1 << 20)

/* Anonymous memory for CAP bytes on 2 MiB boundaries, asking for
 * transparent huge pages and (populate) faulting it in at once (read_at
 * faults in the parts it reads): the kernel zeroing
 * and mapping 4 KiB pages one fault at a time was half of loading a large
 * snapshot (the bench's 10M blocks: 210 -> 95 ms).  Where huge pages are
 * off, MADV_POPULATE_WRITE still faults the small pages in one call (as
 * MAP_POPULATE did); a kernel without it faults them in as read() writes.
 * Without populate, only the pages written are ever memory.
 * *len is the size to unmap; NULL when there is no such memory. */
static char *huge_alloc(size_t cap, bool populate, size_t *len)
{
	size_t n = huge_rounded(cap);
	char *r = mmap(NULL, n + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r == MAP_FAILED)
		return NULL;
	char *a = r + (HUGE_PAGE - (uintptr_t)r % HUGE_PAGE) % HUGE_PAGE;
	if (a > r)
		munmap(r, (size_t)(a - r));
	munmap(a + n, (size_t)(r + HUGE_PAGE - a));
	(void)madvise(a, n, MADV_HUGEPAGE);
	if (populate)
		(void)madvise(a, n, MADV_POPULATE_WRITE);
	*len = n;
	return a;
}

/* Bytes [from, to) of the file into d at the same place: those pages
 * faulted in at once first (huge_alloc says why).  False with errno set on
 * a read error, or 0 when the file is shorter than that. */
static bool read_at(int fd, char *d, size_t mapped, uint64_t from, uint64_t to)
{
	if (kv_stop_signal) { /* a load of gigabytes ends within a piece (kv_input_read) */
		errno = EINTR;
		return false;
	}
	if (mapped && to > from) { /* d starts on a huge page */
		uint64_t a = from & ~(uint64_t)(HUGE_PAGE - 1), z = (to + HUGE_PAGE - 1) & ~(uint64_t)(HUGE_PAGE - 1);
		(void)madvise(d + a, (size_t)((z < mapped ? z : mapped) - a), MADV_POPULATE_WRITE);
	}
	while (from < to) {
		ssize_t r = pread(fd, d + from, (size_t)(to - from), (off_t)from);
		if (r < 0 && errno == EINTR && !kv_stop_signal)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = 0;
			return false;
		}
		from += (uint64_t)r;
	}
	return true;
}

/* Before the blocks' columns are read: when the sections before them
 * (read, entries 0 to upto of the table) have their checksums and hold
 * partitions whose ranges are right, a scan of the blocks as they are read
 * begins (else they are scanned after, by check_partitions, whose checks
 * of those sections come first). */
static void scan_if_sound(const uint8_t *d, const uint64_t *sum, uint32_t upto, struct block_scan *sc, struct kv_snap *s)
{
	for (uint32_t i = 0; i < upto; i++)
		if (sum[i] != table_entry(d, i).sum)
			return;
	struct kv_snap v = { 0 };
	struct kv_err e = { 0 };
	set_views(d, KV_SNAP_PART_BLOCKS, &v);
	if (check_limits(&v, &e) && check_ranges(&v, &e))
		scan_begin(sc, v.partitions, v.npartitions, s);
	kv_err_clear(&e);
}

/* What read_summed does with a piece of a section just read, [at, to) of
 * the file (whole records: pieces end on huge pages, sections start on 8
 * bytes, the block columns' records are 8 and 4 bytes). */
static void scan_piece(struct block_scan *sc, const uint8_t *d, const struct entry *x, uint64_t at, uint64_t to)
{
	uint64_t lo = (at - x->off) / x->rs, hi = (to - x->off) / x->rs;
	if (x->id == KV_SEC_BLOCKS)
		scan_chains(sc, (const uint64_t *)(const void *)(d + x->off), lo, hi);
	else if (x->id == KV_SEC_BLOCK_SETS)
		scan_sets(sc, (const uint32_t *)(const void *)(d + x->off), lo, hi);
}

/* The sections of parts read (read_at) in pieces of READ_CHUNK, each
 * hashed into its section's checksum (sum, by table entry) as soon as it
 * is read, and with sc its blocks scanned: while its bytes are still in
 * the cache, rather than in passes of their own over memory.  False as
 * read_at. */
#define READ_CHUNK ((size_t)256 << 10)
static bool read_summed(int fd, char *d, size_t mapped, unsigned parts, uint64_t *sum, struct block_scan *sc,
			struct kv_snap *s)
{
	const uint8_t *t = (const uint8_t *)d;
	uint32_t nsec = section_total(t);
	XXH3_state_t *st = XXH3_createState();
	if (!st)
		kv_die(KV_EX_SOFTWARE, "out of memory (an XXH3 state)");
	bool ok = true;
	for (uint32_t i = 0; ok && i < nsec; i++) {
		struct entry x = table_entry(t, i);
		if (!(part_of(x.id) & parts))
			continue;
		uint64_t end = x.off + x.count * x.rs, to = kv_snap_align8(end);
		if (sc && x.id == KV_SEC_BLOCKS)
			scan_if_sound(t, sum, i, sc, s);
		bool scan = sc && sc->on && (x.id == KV_SEC_BLOCKS || x.id == KV_SEC_BLOCK_SETS);
		XXH3_64bits_reset(st);
		for (uint64_t at = x.off; ok && at < to;) {
			uint64_t next = (at / READ_CHUNK + 1) * READ_CHUNK;
			next = next < to ? next : to;
			ok = read_at(fd, d, mapped, at, next);
			if (ok && at < end) {
				XXH3_64bits_update(st, d + at, (size_t)((next < end ? next : end) - at));
				if (scan)
					scan_piece(sc, t, &x, at, next < end ? next : end);
			}
			at = next;
		}
		sum[i] = XXH3_64bits_digest(st);
	}
	XXH3_freeState(st);
	return ok;
}

/* An open failure, a directory or a read error is 66, bad contents 65
 * (doc/conventions.md "Exit status"). */
static bool fail_open(struct kv_err *e, const char *path, int errnum)
{
	errno = errnum;
	return kv_err_set_errno(e, KV_EX_NOINPUT, "%s", path);
}

/* A read that failed (errno), a signal stopped (EINTR) or came short (a
 * file cut while read). */
static bool fail_read(struct kv_err *e, const char *path, int errnum)
{
	if (errnum == EINTR && kv_stop_signal)
		return kv_input_stopped(e, path);
	if (errnum == 0)
		return kv_err_set(e, KV_EX_DATAERR, "%s: truncated while read", path);
	return fail_open(e, path, errnum);
}

static bool fail_check(struct kv_err *e, const char *path, struct kv_err *bad)
{
	kv_err_set(e, KV_EX_DATAERR, "%s: %s", path, kv_err_msg(bad));
	kv_err_clear(bad);
	return false;
}

/* The header and table of a regular file, then the parts asked for: each
 * read at its place in memory for the whole file, whose other pages are
 * never touched (so never memory). */
static bool open_parts(int fd, const char *path, size_t size, unsigned parts, struct kv_snap *s, struct kv_err *e)
{
	uint8_t head[KV_SNAP_HEADER_SIZE];
	struct kv_err bad = { 0 };
	if (!read_at(fd, (char *)head, 0, 0, KV_SNAP_HEADER_SIZE))
		return fail_read(e, path, errno);
	if (!header_ok(head, size, &bad))
		return fail_check(e, path, &bad);
	size_t mapped = 0;
	char *d = huge_alloc(size, false, &mapped);
	if (!d)
		d = kv_xmalloc(size);
	s->data = d;
	s->size = size;
	s->mapped = mapped;
	/* the header checked above, not read again: a file rewritten between
	 * two reads would have its table read by a header never checked */
	memcpy(d, head, KV_SNAP_HEADER_SIZE);
	if (!read_at(fd, d, mapped, KV_SNAP_HEADER_SIZE, KV_SNAP_HEADER_SIZE + (uint64_t)section_total(head) * KV_SNAP_TABLE_ENTRY))
		return fail_read(e, path, errno);
	if (!table_ok((const uint8_t *)d, size, &bad) || !counts_ok((const uint8_t *)d, &bad))
		return fail_check(e, path, &bad);
	uint64_t sum[KV_SNAP_MAX_SECTIONS] = { 0 };
	struct block_scan sc = { 0 };
	bool ok = read_summed(fd, d, mapped, parts, sum, &sc, s);
	if (!ok)
		fail_read(e, path, errno);
	else if (!check_parts((const uint8_t *)d, parts, sum, &sc, true, s, &bad))
		ok = fail_check(e, path, &bad);
	scan_end(&sc);
	return ok;
}

/* The size a snapshot's header says the file is. */
static uint64_t declared_size(const uint8_t *head)
{
	uint64_t n;
	memcpy(&n, head + 16, 8);
	return n;
}

/* Memory for a snapshot of size bytes read in order: only the pages read
 * into become memory, so a header that lies costs nothing until the bytes
 * it promised come. */
static void stream_alloc(struct kv_snap *s, uint64_t size)
{
	s->mapped = 0;
	s->data = size >= READ_MAPPED ? huge_alloc((size_t)size, false, &s->mapped) : NULL;
	if (!s->data)
		s->data = kv_xmalloc((size_t)size);
	s->size = (size_t)size;
}

/* Reads bytes [at, to) of s's data from fd, which stands at `at`. */
static bool read_next(int fd, const char *path, struct kv_snap *s, uint64_t at, uint64_t to, struct kv_err *e)
{
	size_t got;
	switch (kv_input_read(fd, (char *)s->data + at, (size_t)(to - at), &got)) {
	case KV_READ_STOPPED: return kv_input_stopped(e, path);
	case KV_READ_ERROR: return fail_open(e, path, errno);
	default: break;
	}
	uint64_t end = at + got;
	if (end < to)
		return kv_err_set(e, KV_EX_DATAERR, "%s: truncated or padded: %llu bytes, header says %llu", path,
				  (unsigned long long)end, (unsigned long long)s->size);
	return true;
}

/* The input ends where its header says: one byte more is a file padded, or
 * one that grew while it was read. */
static bool ends_there(int fd, const char *path, uint64_t size, struct kv_err *e)
{
	char c;
	size_t got;
	switch (kv_input_read(fd, &c, 1, &got)) {
	case KV_READ_STOPPED: return kv_input_stopped(e, path);
	case KV_READ_ERROR: return fail_open(e, path, errno);
	default: break;
	}
	if (got)
		return kv_err_set(e, KV_EX_DATAERR, "%s: truncated or padded: more than %llu bytes, header says %llu", path,
				  (unsigned long long)size, (unsigned long long)size);
	return true;
}

/* Anything but a large regular file, read in order and checked as it comes:
 * the header, as soon as its 32 bytes are in, says how much more may be
 * read (so /dev/zero or `yes` is refused at its first bytes); the table, as
 * soon as it is in, says where each section lies; then the rest, up to the
 * size the header says and not a byte more, and checked whole.  A file
 * that is not a regular one (a pipe, a device) may say at most
 * KV_SNAP_MAX_STREAM bytes: it has no size of its own to bound it. */
static bool read_stream(int fd, const char *path, const struct stat *st, struct kv_snap *s, struct kv_err *e)
{
	bool regular = S_ISREG(st->st_mode);
	uint8_t head[KV_SNAP_HEADER_SIZE];
	size_t got;
	struct kv_err bad = { 0 };
	switch (kv_input_read(fd, head, KV_SNAP_HEADER_SIZE, &got)) {
	case KV_READ_STOPPED: return kv_input_stopped(e, path);
	case KV_READ_ERROR: return fail_open(e, path, errno);
	default: break;
	}
	if (got == 0)
		return kv_err_set(e, KV_EX_DATAERR, "%s: empty file", path);
	uint64_t size = got < KV_SNAP_HEADER_SIZE ? got : regular ? (uint64_t)st->st_size : declared_size(head);
	if (!header_ok(head, (size_t)size, &bad))
		return fail_check(e, path, &bad);
	if (!regular && size > KV_SNAP_MAX_STREAM)
		return kv_err_set(e, KV_EX_DATAERR,
				  "%s: header says %llu bytes: a snapshot that is not a regular file is read up to %llu "
				  "bytes (copy it to a file)",
				  path, (unsigned long long)size, (unsigned long long)KV_SNAP_MAX_STREAM);
	stream_alloc(s, size);
	memcpy(s->data, head, KV_SNAP_HEADER_SIZE);
	uint64_t table_end = KV_SNAP_HEADER_SIZE + (uint64_t)section_total(head) * KV_SNAP_TABLE_ENTRY;
	if (!read_next(fd, path, s, KV_SNAP_HEADER_SIZE, table_end, e))
		return false;
	if (!table_ok(s->data, s->size, &bad) || !counts_ok(s->data, &bad))
		return fail_check(e, path, &bad);
	if (!read_next(fd, path, s, table_end, size, e) || !ends_there(fd, path, size, e))
		return false;
	if (!check_parts(s->data, KV_SNAP_PART_ALL, NULL, NULL, true, s, &bad))
		return fail_check(e, path, &bad);
	return true;
}

/* Opens the file: a blocking open of a fifo waits for its writer, and a
 * signal ends the wait.  With no_wait (a watched path) nothing waits: a
 * fifo or a device put in the snapshot's place is refused, unread. */
static bool open_file(const char *path, bool no_wait, int *fd, struct stat *st, struct kv_err *e)
{
	do
		*fd = open(path, O_RDONLY | O_CLOEXEC | (no_wait ? O_NONBLOCK : 0));
	while (*fd < 0 && errno == EINTR && !kv_stop_signal);
	if (*fd < 0) {
		if (errno == EINTR)
			kv_input_stopped(e, path);
		else
			fail_open(e, path, errno);
		return false;
	}
	int errnum = fstat(*fd, st) != 0 ? errno : S_ISDIR(st->st_mode) ? EISDIR : 0;
	if (!errnum && no_wait && !S_ISREG(st->st_mode)) {
		close(*fd);
		return kv_err_set(e, KV_EX_NOINPUT, "%s: not a regular file (a watched snapshot is replaced by renaming one over it)",
				  path);
	}
	if (errnum) {
		close(*fd);
		return fail_open(e, path, errnum);
	}
	return true;
}

static bool snap_open(const char *path, unsigned parts, bool no_wait, struct kv_snap *s, struct kv_err *e)
{
	memset(s, 0, sizeof *s);
	parts |= KV_SNAP_PART_BLOCKS;
	int fd;
	struct stat st;
	if (!open_file(path, no_wait, &fd, &st, e))
		return false;
	/* a small file is read whole: one read */
	bool partial = S_ISREG(st.st_mode) && (size_t)st.st_size >= READ_MAPPED;
	bool ok = partial ? open_parts(fd, path, (size_t)st.st_size, parts, s, e) : read_stream(fd, path, &st, s, e);
	if (!ok) {
		close(fd);
		release_data(s->data, s->mapped);
		free_directories(s);
		memset(s, 0, sizeof *s);
		return false;
	}
	if (partial && s->parts != KV_SNAP_PART_ALL) {
		s->fd = fd;
		s->path = kv_xstrdup(path);
	} else {
		close(fd);
	}
	return true;
}

bool kv_snapr_open(const char *path, unsigned parts, struct kv_snap *s, struct kv_err *e)
{
	return snap_open(path, parts, false, s, e);
}

bool kv_snapr_open_regular(const char *path, unsigned parts, struct kv_snap *s, struct kv_err *e)
{
	return snap_open(path, parts, true, s, e);
}

bool kv_snapr_load(const char *path, struct kv_snap *s, struct kv_err *e)
{
	return kv_snapr_open(path, KV_SNAP_PART_ALL, s, e);
}

bool kv_snapr_read(struct kv_snap *s, unsigned parts, struct kv_err *e)
{
	parts &= ~s->parts;
	if (!parts)
		return true;
	struct kv_err bad = { 0 };
	const char *path = s->path ? s->path : "snapshot";
	uint64_t sum[KV_SNAP_MAX_SECTIONS] = { 0 };
	if (s->path && !read_summed(s->fd, s->data, s->mapped, parts, sum, NULL, NULL))
		return fail_read(e, path, errno);
	/* the table read at first says what these bytes must be */
	if (!check_parts(s->data, parts, s->path ? sum : NULL, NULL, false, s, &bad)) {
		kv_err_set(e, KV_EX_DATAERR, "%s: %s%s", path, s->path ? "changed since it was loaded: " : "", kv_err_msg(&bad));
		kv_err_clear(&bad);
		return false;
	}
	if (s->parts == KV_SNAP_PART_ALL && s->path) {
		close(s->fd);
		free(s->path);
		s->path = NULL;
	}
	return true;
}

void kv_snapr_close(struct kv_snap *s)
{
	release_data(s->data, s->mapped);
	free_directories(s);
	if (s->path)
		close(s->fd);
	free(s->path);
	memset(s, 0, sizeof *s);
}

/* kvsnap: written canonically, read back, and every corruption refused:
 * each single-byte change, each truncation, and structural damage behind a
 * valid checksum. */
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "index/blockhash.h"
#include "index/index.h"
#include "index/matchstate.h"
#include "index/snap.h"
#include "index/snapstate.h"
#include "unit.h"
#include "index/workers.h"

struct state {
	struct kv_index ix;
	struct kv_workers ws;
	struct kv_match m;
};

static void make_state(struct state *s)
{
	struct kv_match_opts o = { KV_PENDING_TTL_DEFAULT, KV_OFFLOAD_TTL_DEFAULT, KV_CONTENT_TTL_DEFAULT,
				   KV_MAX_PENDING_DEFAULT, false, 0, NULL, NULL };
	kv_index_init(&s->ix);
	kv_workers_init(&s->ws);
	kv_match_init(&s->m, &s->ix, &s->ws, &o);
	uint32_t w0 = kv_workers_add(&s->ws, "w", 0, "10.0.0.5", false);
	uint32_t w1 = kv_workers_add(&s->ws, "v", 1, "10.0.0.6", true);
	uint32_t p = kv_index_partition(&s->ix, "m", 1, "t", 1);
	uint32_t q = kv_index_partition(&s->ix, "a", 1, "t", 1);
	s->ix.p[p].block_size = 16;
	uint64_t chain = KV_CHAIN_ROOT;
	for (uint64_t i = 1; i <= 5; i++) {
		uint64_t next = kv_chain_next(chain, i);
		kv_index_hold(&s->ix, p, next, chain, i, w0, KV_XPU);
		if (i % 2)
			kv_index_hold(&s->ix, p, next, chain, i, w1, KV_CPU);
		bool added;
		kv_ehashes_upsert(&s->ix.p[p].ehashes, 100 + i, &added)->chain = next;
		chain = next;
	}
	kv_index_hold(&s->ix, q, 42, KV_CHAIN_ROOT, 7, w1, KV_DISK);
	kv_match_restore_pending(&s->m, p, 999, w0, KV_DISK, 5);
	bool added;
	struct kv_content *c = kv_contents_upsert(&kv_match_partition(&s->m, q)->content, 77, &added);
	c->parent = 1, c->local = 2, c->t = 3;
	kv_srcstats_get(&s->m.sources, "tcp://x:1", 9)->batches = 4;
	s->m.now = 123456789;
}

static void free_state(struct state *s)
{
	kv_match_free(&s->m);
	kv_workers_free(&s->ws);
	kv_index_free(&s->ix);
}

static uint8_t *write_read(struct state *s, size_t *len)
{
	char path[] = "/tmp/kvtools-snap-XXXXXX";
	int fd = mkstemp(path);
	close(fd);
	if (!kv_snap_write(path, &s->ix, &s->ws, &s->m))
		abort();
	fd = open(path, O_RDONLY);
	*len = (size_t)lseek(fd, 0, SEEK_END);
	uint8_t *b = malloc(*len);
	if (pread(fd, b, *len, 0) != (ssize_t)*len)
		abort();
	close(fd);
	unlink(path);
	return b;
}

static void round_trip(void)
{
	struct state s, t;
	make_state(&s);
	size_t n;
	uint8_t *b = write_read(&s, &n);
	struct kv_snap snap;
	char err[200];
	ASSERT(kv_snap_check(b, n, &snap, err, sizeof err));
	ASSERT_EQ_U64(snap.npartitions, 2);
	ASSERT_EQ_U64(snap.nworkers, 2);
	ASSERT_EQ_U64(snap.nblocks, 6);
	ASSERT_EQ_U64(kv_snap_holdings(&snap), 9);
	ASSERT_EQ_U64(snap.nsets, 3);  /* {w xpu, v cpu}, {w xpu}, {v disk}: each once */
	ASSERT_EQ_U64(snap.npending, 1);
	ASSERT_EQ_U64(snap.ncontent, 1);
	/* partitions and workers sorted by name */
	size_t len;
	ASSERT(memcmp(kv_snap_string(&snap, snap.partitions[0].model, &len), "a", 1) == 0);
	ASSERT(memcmp(kv_snap_string(&snap, snap.workers[0].instance_id, &len), "v", 1) == 0);
	int64_t part = kv_snap_partition(&snap, "m", 1, "t", 1);
	ASSERT(part == 1);
	uint64_t c1 = kv_chain_next(KV_CHAIN_ROOT, 1);
	const struct kv_snap_block *blk = kv_snap_find(&snap, 1, c1);
	size_t nh;
	ASSERT(blk && kv_snap_holders(&snap, blk, &nh) && nh == 2 && blk->local == 1);
	ASSERT(!kv_snap_find(&snap, 1, c1 + 1));
	/* restored state writes the same bytes */
	make_state(&t);
	free_state(&t);
	struct kv_index ix;
	struct kv_workers ws;
	struct kv_match m;
	struct kv_match_opts o = s.m.o;
	kv_index_init(&ix);
	kv_workers_init(&ws);
	kv_match_init(&m, &ix, &ws, &o);
	kv_snap_restore(&snap, &ix, &ws, &m);
	struct state r = { ix, ws, m };
	r.m.ix = &r.ix;
	r.m.ws = &r.ws;
	size_t n2;
	uint8_t *b2 = write_read(&r, &n2);
	ASSERT(n2 == n && memcmp(b, b2, n) == 0);
	free(b2);
	free_state(&r);
	free(b);
	free_state(&s);
}

static void every_byte_and_cut(void)
{
	struct state s;
	make_state(&s);
	size_t n;
	uint8_t *b = write_read(&s, &n);
	struct kv_snap snap;
	char err[200];
	for (size_t i = 0; i < n; i++) {
		for (unsigned flip = 1; flip < 256; flip <<= 1) {
			b[i] ^= (uint8_t)flip;
			ASSERT(!kv_snap_check(b, n, &snap, err, sizeof err));
			b[i] ^= (uint8_t)flip;
		}
	}
	for (size_t cut = 0; cut < n; cut++)
		ASSERT(!kv_snap_check(b, cut, &snap, err, sizeof err));
	ASSERT(kv_snap_check(b, n, &snap, err, sizeof err));
	free(b);
	free_state(&s);
}

/* Damage behind a valid checksum must be caught by the structural checks,
 * or leave a snapshot that is still safe to use (walked here in full). */
static void damage_with_valid_checksum(void)
{
	struct state s;
	make_state(&s);
	size_t n;
	uint8_t *b = write_read(&s, &n);
	struct kv_snap snap;
	char err[200];
	unsigned refused = 0;
	for (size_t i = 0; i + 8 < n; i++) {
		static const uint8_t values[] = { 0x00, 0x01, 0x7f, 0x80, 0xff };
		for (size_t v = 0; v < sizeof values; v++) {
			uint8_t old = b[i];
			if (old == values[v])
				continue;
			b[i] = values[v];
			uint64_t sum = XXH3_64bits(b, n - 8);
			memcpy(b + n - 8, &sum, 8);
			if (!kv_snap_check(b, n, &snap, err, sizeof err)) {
				refused++;
			} else {
				for (size_t p = 0; p < snap.npartitions; p++)
					for (uint64_t k = 0; k < snap.partitions[p].r[KV_RANGE_BLOCKS].count; k++) {
						const struct kv_snap_block *blk = &snap.blocks[snap.partitions[p].r[KV_RANGE_BLOCKS].first + k];
						ASSERT(kv_snap_find(&snap, (uint32_t)p, blk->chain) == blk);
						size_t nh;
						const uint32_t *hs = kv_snap_holders(&snap, blk, &nh);
						for (size_t h = 0; h < nh; h++)
							ASSERT(KV_HOLDER_WORKER(hs[h]) < snap.nworkers);
					}
			}
			b[i] = old;
		}
	}
	uint64_t sum = XXH3_64bits(b, n - 8);
	memcpy(b + n - 8, &sum, 8);
	ASSERT(kv_snap_check(b, n, &snap, err, sizeof err));
	ASSERT(refused > 100);
	free(b);
	free_state(&s);
}

/* Rewrites the checksum after a change to the bytes before it. */
static void reseal(uint8_t *b, size_t n)
{
	uint64_t sum = XXH3_64bits(b, n - 8);
	memcpy(b + n - 8, &sum, 8);
}

/* What format 2 checks behind a valid checksum: pending entries in arrival
 * order over all partitions, no source's last batch after the event time
 * reached, and no more partitions than an index holds. */
static void order_times_and_bounds(void)
{
	struct state s;
	struct kv_snap snap;
	char err[200];
	make_state(&s);
	uint32_t a = (uint32_t)kv_index_find_partition(&s.ix, "a", "t");
	kv_match_restore_pending(&s.m, a, 1000, 0, KV_CPU, 7); /* after the entry of "m" at 5 */
	kv_srcstats_get(&s.m.sources, "tcp://x:1", 9)->last_recv_ns = s.m.now;
	size_t n;
	uint8_t *b = write_read(&s, &n);
	ASSERT(kv_snap_check(b, n, &snap, err, sizeof err));
	/* arrival order, not partition order: "m" (index 1) first, then "a" (0) */
	ASSERT_EQ_U64(snap.npending, 2);
	ASSERT_EQ_U64(snap.pending[0].partition, 1);
	ASSERT_EQ_U64(snap.pending[1].partition, 0);
	ASSERT_EQ_U64(snap.sources[0].last_recv_ns, 123456789);
	size_t pend = (size_t)((const uint8_t *)snap.pending - b), src = (size_t)((const uint8_t *)snap.sources - b);
	uint64_t t = 4;
	memcpy(b + pend + sizeof(struct kv_snap_pending) + offsetof(struct kv_snap_pending, t), &t, 8);
	reseal(b, n);
	ASSERT(!kv_snap_check(b, n, &snap, err, sizeof err));
	ASSERT(strcmp(err, "pending 1: out of order") == 0);
	t = 7;
	memcpy(b + pend + sizeof(struct kv_snap_pending) + offsetof(struct kv_snap_pending, t), &t, 8);
	t = 123456790;
	memcpy(b + src + offsetof(struct kv_snap_source, last_recv_ns), &t, 8);
	reseal(b, n);
	ASSERT(!kv_snap_check(b, n, &snap, err, sizeof err));
	ASSERT(strcmp(err, "source 0: bad record") == 0);
	free(b);
	/* one partition more than KV_MAX_PARTITIONS */
	for (uint32_t i = (uint32_t)s.ix.n; i <= KV_MAX_PARTITIONS; i++) {
		char model[16];
		snprintf(model, sizeof model, "p%u", i);
		kv_index_partition(&s.ix, model, strlen(model), "t", 1);
	}
	b = write_read(&s, &n);
	ASSERT(!kv_snap_check(b, n, &snap, err, sizeof err));
	ASSERT(strcmp(err, "more than 4096 partitions") == 0);
	free(b);
	free_state(&s);
}

/* Two workers that are one in a snapshot (a dp_rank beyond 2^32-1 stored
 * as its low 32 bits, as an old kvmatch wrote it) are refused at load. */
static void repeated_workers(void)
{
	struct state s;
	struct kv_snap snap;
	char err[200];
	make_state(&s);
	kv_workers_add(&s.ws, "w", 1ll << 32, "10.0.0.5", false);
	size_t n;
	uint8_t *b = write_read(&s, &n);
	ASSERT(!kv_snap_check(b, n, &snap, err, sizeof err));
	ASSERT(strcmp(err, "worker 2: out of order or repeated") == 0);
	free(b);
	free_state(&s);
}

/* The stream position: a section of its own, written only when there is
 * one, read back and restored; a file without it has the 16 sections of
 * before, and one with two positions is refused. */
static void stream_position(void)
{
	struct state s, t;
	make_state(&s);
	size_t n, m;
	uint8_t *plain = write_read(&s, &n);
	struct kv_snap snap;
	char err[200];
	uint32_t nsec;
	memcpy(&nsec, plain + 8, 4);
	ASSERT_EQ_U64(nsec, 16);
	ASSERT(kv_snap_check(plain, n, &snap, err, sizeof err) && snap.stream == NULL);
	s.m.has_position = true;
	s.m.position = 4242;
	uint8_t *b = write_read(&s, &m);
	memcpy(&nsec, b + 8, 4);
	ASSERT_EQ_U64(nsec, 17);
	ASSERT(m == n + 24 + 16);
	ASSERT(kv_snap_check(b, m, &snap, err, sizeof err) && snap.stream && snap.stream->last_seq == 4242);
	struct kv_match_opts o = s.m.o;
	kv_index_init(&t.ix);
	kv_workers_init(&t.ws);
	kv_match_init(&t.m, &t.ix, &t.ws, &o);
	kv_snap_restore(&snap, &t.ix, &t.ws, &t.m);
	ASSERT(t.m.has_position && t.m.position == 4242);
	/* two records in the section: refused (count at table entry 17, checksum fixed) */
	uint64_t two = 2, sum;
	memcpy(b + 32 + 16 * 24 + 16, &two, 8);
	sum = XXH3_64bits(b, m - 8);
	memcpy(b + m - 8, &sum, 8);
	ASSERT(!kv_snap_check(b, m, &snap, err, sizeof err));
	free_state(&t);
	free_state(&s);
	free(plain);
	free(b);
}

int main(void)
{
	RUN(round_trip);
	RUN(every_byte_and_cut);
	RUN(damage_with_valid_checksum);
	RUN(order_times_and_bounds);
	RUN(repeated_workers);
	RUN(stream_position);
	return unit_done();
}

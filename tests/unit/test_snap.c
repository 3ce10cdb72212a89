/* kvsnap: written canonically, read back, and every corruption refused:
 * each single-byte change, each truncation, and structural damage behind
 * valid checksums; a large file read in parts, and each part checked when
 * it is read. */
#define _GNU_SOURCE /* pthread_setattr_default_np */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/err.h"
#include "index/blockhash.h"
#include "base/util.h"
#include "index/index.h"
#include "index/matchstate.h"
#include "index/snap.h"
#include "index/snapload.h"
#include "index/snaplookup.h"
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
	struct kv_err e = { 0 };
	if (!kv_snapstate_save(path, &s->ix, &s->ws, &s->m, &e))
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

/* kv_snapr_check, its message (when it fails) in err; a refusal must be 65
 * and say why. */
static bool check_bytes(const void *data, size_t size, struct kv_snap *snap, char *err, size_t errlen)
{
	struct kv_err e = { 0 };
	bool ok = kv_snapr_check(data, size, snap, &e);
	if (ok != !kv_err_any(&e) || (!ok && e.status != KV_EX_DATAERR)) {
		printf("# kv_snapr_check: %s, status %d, \"%s\"\n", ok ? "true" : "false", e.status, kv_err_msg(&e));
		abort();
	}
	snprintf(err, errlen, "%s", kv_err_msg(&e));
	kv_err_clear(&e);
	return ok;
}

static void round_trip(void)
{
	struct state s, t;
	make_state(&s);
	size_t n;
	uint8_t *b = write_read(&s, &n);
	struct kv_snap snap;
	char err[200];
	ASSERT(check_bytes(b, n, &snap, err, sizeof err));
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
	uint64_t blk = kv_snap_find(&snap, 1, c1);
	size_t nh;
	ASSERT(blk != KV_SNAP_NO_BLOCK && kv_snap_holders(&snap, blk, &nh) && nh == 2 && snap.locals[blk] == 1);
	ASSERT(kv_snap_find(&snap, 1, c1 + 1) == KV_SNAP_NO_BLOCK);
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
	kv_snapstate_restore(&snap, &ix, &ws, &m);
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
			ASSERT(!check_bytes(b, n, &snap, err, sizeof err));
			b[i] ^= (uint8_t)flip;
		}
	}
	for (size_t cut = 0; cut < n; cut++)
		ASSERT(!check_bytes(b, cut, &snap, err, sizeof err));
	ASSERT(check_bytes(b, n, &snap, err, sizeof err));
	free(b);
	free_state(&s);
}

/* The header's checksum over its first 24 bytes and the table. */
static void reseal_header(uint8_t *b, size_t n)
{
	uint32_t nsec;
	memcpy(&nsec, b + 8, 4);
	if (nsec > 64 || 32 + (size_t)nsec * 32 > n)
		return;
	uint8_t *buf = malloc(24 + (size_t)nsec * 32);
	memcpy(buf, b, 24);
	memcpy(buf + 24, b + 32, (size_t)nsec * 32);
	uint64_t sum = XXH3_64bits(buf, 24 + (size_t)nsec * 32);
	memcpy(b + 24, &sum, 8);
	free(buf);
}

/* Rewrites the checksums after a change: each section's that lies in the
 * file, then the header's. */
static void reseal(uint8_t *b, size_t n)
{
	uint32_t nsec;
	memcpy(&nsec, b + 8, 4);
	for (uint32_t i = 0; i < nsec && i < 64 && 32 + (size_t)(i + 1) * 32 <= n; i++) {
		uint8_t *t = b + 32 + (size_t)i * 32;
		uint32_t rs;
		uint64_t off, count;
		memcpy(&rs, t + 4, 4);
		memcpy(&off, t + 8, 8);
		memcpy(&count, t + 16, 8);
		if (rs && off <= n && count <= (n - off) / rs) {
			uint64_t sum = XXH3_64bits(b + off, count * rs);
			memcpy(t + 24, &sum, 8);
		}
	}
	reseal_header(b, n);
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
	/* resealing a damaged table can write into sections: each damage
	 * starts from the good bytes */
	uint8_t good[4096];
	ASSERT(n <= sizeof good);
	memcpy(good, b, n);
	for (size_t i = 0; i < n; i++) {
		static const uint8_t values[] = { 0x00, 0x01, 0x7f, 0x80, 0xff };
		for (size_t v = 0; v < sizeof values && (i < 24 || i >= 32); v++) {
			if (good[i] == values[v])
				continue;
			memcpy(b, good, n);
			b[i] = values[v];
			reseal(b, n);
			if (!check_bytes(b, n, &snap, err, sizeof err)) {
				refused++;
			} else {
				for (size_t p = 0; p < snap.npartitions; p++)
					for (uint64_t k = 0; k < snap.partitions[p].r[KV_RANGE_BLOCKS].count; k++) {
						uint64_t blk = snap.partitions[p].r[KV_RANGE_BLOCKS].first + k;
						ASSERT(kv_snap_find(&snap, (uint32_t)p, snap.chains[blk]) == blk);
						size_t nh;
						const uint32_t *hs = kv_snap_holders(&snap, blk, &nh);
						for (size_t h = 0; h < nh; h++)
							ASSERT(KV_HOLDER_WORKER(hs[h]) < snap.nworkers);
					}
			}
		}
	}
	memcpy(b, good, n);
	ASSERT(check_bytes(b, n, &snap, err, sizeof err));
	ASSERT(refused > 100);
	free(b);
	free_state(&s);
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
	ASSERT(check_bytes(b, n, &snap, err, sizeof err));
	/* arrival order, not partition order: "m" (index 1) first, then "a" (0) */
	ASSERT_EQ_U64(snap.npending, 2);
	ASSERT_EQ_U64(snap.pending[0].partition, 1);
	ASSERT_EQ_U64(snap.pending[1].partition, 0);
	ASSERT_EQ_U64(snap.sources[0].last_recv_ns, 123456789);
	size_t pend = (size_t)((const uint8_t *)snap.pending - b), src = (size_t)((const uint8_t *)snap.sources - b);
	uint64_t t = 4;
	memcpy(b + pend + sizeof(struct kv_snap_pending) + offsetof(struct kv_snap_pending, t), &t, 8);
	reseal(b, n);
	ASSERT(!check_bytes(b, n, &snap, err, sizeof err));
	ASSERT(strcmp(err, "pending 1: out of order") == 0);
	t = 7;
	memcpy(b + pend + sizeof(struct kv_snap_pending) + offsetof(struct kv_snap_pending, t), &t, 8);
	t = 123456790;
	memcpy(b + src + offsetof(struct kv_snap_source, last_recv_ns), &t, 8);
	reseal(b, n);
	ASSERT(!check_bytes(b, n, &snap, err, sizeof err));
	ASSERT(strcmp(err, "source 0: bad record") == 0);
	free(b);
	/* one partition more than KV_MAX_PARTITIONS */
	for (uint32_t i = (uint32_t)s.ix.n; i <= KV_MAX_PARTITIONS; i++) {
		char model[16];
		snprintf(model, sizeof model, "p%u", i);
		kv_index_partition(&s.ix, model, strlen(model), "t", 1);
	}
	b = write_read(&s, &n);
	ASSERT(!check_bytes(b, n, &snap, err, sizeof err));
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
	ASSERT(!check_bytes(b, n, &snap, err, sizeof err));
	ASSERT(strcmp(err, "worker 2: out of order or repeated") == 0);
	free(b);
	free_state(&s);
}

/* The stream position: a section of its own, written only when there is
 * one (the last), read back and restored; a file without it has one
 * section fewer, and one with two positions is refused. */
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
	ASSERT_EQ_U64(nsec, KV_SEC_STREAM - 1);
	ASSERT(check_bytes(plain, n, &snap, err, sizeof err) && snap.stream == NULL);
	s.m.has_position = true;
	s.m.position = 4242;
	uint8_t *b = write_read(&s, &m);
	memcpy(&nsec, b + 8, 4);
	ASSERT_EQ_U64(nsec, KV_SEC_STREAM);
	ASSERT(m == n + 32 + 16);
	ASSERT(check_bytes(b, m, &snap, err, sizeof err) && snap.stream && snap.stream->last_seq == 4242);
	struct kv_match_opts o = s.m.o;
	kv_index_init(&t.ix);
	kv_workers_init(&t.ws);
	kv_match_init(&t.m, &t.ix, &t.ws, &o);
	kv_snapstate_restore(&snap, &t.ix, &t.ws, &t.m);
	ASSERT(t.m.has_position && t.m.position == 4242);
	/* two records in the section: refused (count at its table entry, checksums fixed) */
	uint64_t two = 2;
	memcpy(b + 32 + (KV_SEC_STREAM - 1) * 32 + 16, &two, 8);
	reseal(b, m);
	ASSERT(!check_bytes(b, m, &snap, err, sizeof err));
	free_state(&t);
	free_state(&s);
	free(plain);
	free(b);
}

/* The stream's name and creation time beside its position: a section of
 * their own after it, written when known, read back and restored; refused
 * without a position, or naming a string out of bounds. */
static void stream_identity(void)
{
	struct state s, t;
	make_state(&s);
	s.m.has_position = true;
	s.m.position = 4242;
	size_t n, m;
	uint8_t *unnamed = write_read(&s, &n);
	kv_match_set_stream(&s.m, "R3", 2, 1764500000123456789ull);
	uint8_t *b = write_read(&s, &m);
	uint32_t nsec;
	memcpy(&nsec, b + 8, 4);
	ASSERT_EQ_U64(nsec, KV_SEC_STREAM_ID);
	struct kv_snap snap;
	char err[200];
	ASSERT(check_bytes(unnamed, n, &snap, err, sizeof err) && snap.stream && !snap.stream_id);
	ASSERT(check_bytes(b, m, &snap, err, sizeof err) && snap.stream && snap.stream_id);
	size_t len;
	const char *name = kv_snap_string(&snap, snap.stream_id->name, &len);
	ASSERT(len == 2 && memcmp(name, "R3", 2) == 0 && snap.stream_id->created_ns == 1764500000123456789ull);
	struct kv_match_opts o = s.m.o;
	kv_index_init(&t.ix);
	kv_workers_init(&t.ws);
	kv_match_init(&t.m, &t.ix, &t.ws, &o);
	kv_snapstate_restore(&snap, &t.ix, &t.ws, &t.m);
	ASSERT(t.m.has_position && t.m.position == 4242 && strcmp(t.m.stream, "R3") == 0 &&
	       t.m.stream_created == 1764500000123456789ull);
	/* written again from what was restored: the same bytes */
	size_t k;
	uint8_t *again = write_read(&t, &k);
	ASSERT(k == m && memcmp(again, b, m) == 0);
	free(again);
	/* a name without a position: refused (STREAM emptied: its record taken
	 * out, the name's moved up, the table and size made to agree) */
	uint8_t *c = malloc(m);
	memcpy(c, b, m);
	uint8_t *st = c + 32 + (KV_SEC_STREAM - 1) * 32, *id = c + 32 + (KV_SEC_STREAM_ID - 1) * 32;
	uint64_t soff, ioff, zero = 0, size = m - 16;
	memcpy(&soff, st + 8, 8);
	memcpy(&ioff, id + 8, 8);
	ASSERT(ioff == soff + 16 && ioff + 16 == m);
	memmove(c + soff, c + ioff, 16);
	memcpy(id + 8, &soff, 8);
	memcpy(st + 16, &zero, 8);
	memcpy(c + 16, &size, 8);
	reseal(c, size);
	ASSERT(!check_bytes(c, size, &snap, err, sizeof err));
	ASSERT(strcmp(err, "stream name section holds 1 records, for 0 positions") == 0);
	/* a name beyond the strings: refused */
	memcpy(c, b, m);
	uint64_t off;
	memcpy(&off, c + 32 + (KV_SEC_STREAM_ID - 1) * 32 + 8, 8);
	uint32_t far = 1u << 30;
	memcpy(c + off, &far, 4);
	reseal(c, m);
	ASSERT(!check_bytes(c, m, &snap, err, sizeof err) && strstr(err, "stream name"));
	free(c);
	free_state(&t);
	free_state(&s);
	free(unnamed);
	free(b);
}

/* ---- loading: every rule at its boundary --------------------------------- */

/* One event, applied as kvmatch applies an event line: blocks k..k+n-1 of
 * the prompt 1, 2, 3, ... in blocks of 4, named 0xa + k (hash != 0: that
 * one hash instead); pool events name their backend and tenant. */
struct ev {
	const char *src;
	int64_t dp;
	uint64_t t;
	enum kv_evtype type;
	enum kv_medium medium;
	int k, n;
	uint64_t hash;
	const char *backend, *tenant;
	const char *lora;     /* an engine's adapter: a partition of its own */
};

/* A pool's event: its backend_id names the targets, tenant_id the partition. */
static void pool_fields(struct kv_event *e, const struct ev *v)
{
	e->format = KV_FMT_MEMCACHE;
	e->has = KV_HAS_BACKEND_ID;
	e->backend_id = (struct kv_str){ v->backend, strlen(v->backend) };
	if (v->tenant) {
		e->has |= KV_HAS_TENANT_ID;
		e->tenant_id = (struct kv_str){ v->tenant, strlen(v->tenant) };
	}
}

/* An engine's event; a store carries its blocks' tokens and its parent. */
static void engine_fields(struct kv_event *e, const struct ev *v, uint32_t *tokens)
{
	e->format = KV_FMT_VLLM;
	e->has_dp = true;
	e->dp_rank = v->dp;
	if (v->type == KV_EV_STORED) {
		for (int i = 0; i < 4 * v->n; i++)
			tokens[i] = (uint32_t)(4 * v->k + i + 1);
		e->tokens = tokens;
		e->ntokens = 4 * (size_t)v->n;
		e->block_size = 4;
		e->has = KV_HAS_PARENT | KV_HAS_TOKENS | KV_HAS_BLOCK_SIZE;
		e->parent_null = v->k == 0;
		e->parent = 0xa + (uint64_t)v->k - 1;
	}
	if (v->lora) {
		e->has |= KV_HAS_LORA_NAME;
		e->lora_name = (struct kv_str){ v->lora, strlen(v->lora) };
	}
}

static void apply(struct state *s, uint64_t seq, struct ev v)
{
	uint64_t hashes[8];
	uint32_t tokens[32];
	struct kv_event e;
	memset(&e, 0, sizeof e);
	e.src = (struct kv_str){ v.src, strlen(v.src) };
	e.recv_ns = v.t;
	e.has_seq = true;
	e.seq = seq;
	e.type = v.type;
	e.medium = v.medium;
	for (int i = 0; i < v.n; i++)
		hashes[i] = v.hash ? v.hash : 0xa + (uint64_t)(v.k + i);
	e.hashes = hashes;
	e.nhashes = v.hash ? 1 : (size_t)v.n;
	if (v.backend)
		pool_fields(&e, &v);
	else
		engine_fields(&e, &v, tokens);
	struct kv_wire_ctx ctx = kv_wire_ctx_of(&e);
	if (kv_match_record(&s->m, &ctx, 1))
		kv_match_event(&s->m, &e);
}

#define ENG0 "tcp://10.0.0.5:5557"   /* worker 10.0.0.5:5557 dp 0 */
#define ENG1 "tcp://10.0.0.5:5558"   /* worker 10.0.0.5:5557 dp 1 */
#define POOL "tcp://kvs:5557"
#define POOL2 "tcp://kvs2:5557"

/* A state with two or more records in every section, made by events only:
 * 4 blocks of partition default/default (two of them orphans: their
 * parents were released, and are content), sets of one and two holders,
 * a pool holder, held and stale engine hashes, two offloads, pending
 * entries in partition default/t2, three sources; and partition x/default
 * (an adapter's), whose one block is an orphan, right after those of
 * default/default. */
static void rich_state(struct state *s)
{
	struct kv_match_opts o = { KV_PENDING_TTL_DEFAULT, KV_OFFLOAD_TTL_DEFAULT, KV_CONTENT_TTL_DEFAULT,
				   KV_MAX_PENDING_DEFAULT, false, 0, NULL, NULL };
	kv_index_init(&s->ix);
	kv_workers_init(&s->ws);
	kv_match_init(&s->m, &s->ix, &s->ws, &o);
	uint64_t seq = 0;
	apply(s, seq++, (struct ev){ .src = ENG0, .t = 100, .medium = KV_XPU, .k = 0, .n = 6 });
	apply(s, seq++, (struct ev){ .src = ENG1, .dp = 1, .t = 100, .medium = KV_XPU, .k = 0, .n = 1 });
	apply(s, seq++, (struct ev){ .src = ENG0, .t = 101, .type = KV_EV_REMOVED, .medium = KV_XPU, .k = 2, .n = 1 });
	apply(s, seq++, (struct ev){ .src = ENG0, .t = 101, .type = KV_EV_REMOVED, .medium = KV_XPU, .k = 4, .n = 1 });
	apply(s, seq++, (struct ev){ .src = POOL, .t = 102, .medium = KV_CPU, .n = 1, .hash = 0xb, .backend = "10.0.0.5" });
	apply(s, seq++, (struct ev){ .src = ENG0, .t = 103, .medium = KV_CPU, .k = 6, .n = 2 });
	apply(s, seq++, (struct ev){ .src = POOL, .t = 104, .medium = KV_CPU, .n = 1, .hash = 0xd, .backend = "daemon" });
	apply(s, seq++, (struct ev){ .src = POOL, .t = 105, .medium = KV_CPU, .n = 1, .hash = 0x30, .backend = "10.0.0.5" });
	apply(s, seq++, (struct ev){ .src = POOL, .t = 106, .medium = KV_DISK, .n = 1, .hash = 0x31, .backend = "10.0.0.5",
				     .tenant = "t2" });
	apply(s, seq++, (struct ev){ .src = ENG0, .t = 107, .medium = KV_XPU, .k = 0, .n = 2, .lora = "x" });
	apply(s, seq++, (struct ev){ .src = ENG0, .t = 107, .type = KV_EV_REMOVED, .medium = KV_XPU, .k = 0, .n = 1,
				     .lora = "x" });
}


/* The events of one run, each from its source with that source's next seq
 * (a reordering keeps each source's own order: only how the sources
 * interleave changes), all at one event time. */
static void apply_in_order(struct state *s, const struct ev *v, const size_t *order, size_t n)
{
	struct kv_match_opts o = { KV_PENDING_TTL_DEFAULT, KV_OFFLOAD_TTL_DEFAULT, KV_CONTENT_TTL_DEFAULT,
				   KV_MAX_PENDING_DEFAULT, false, 0, NULL, NULL };
	kv_index_init(&s->ix);
	kv_workers_init(&s->ws);
	kv_match_init(&s->m, &s->ix, &s->ws, &o);
	const char *srcs[8];
	uint64_t seqs[8];
	size_t nsrcs = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ev *e = &v[order[i]];
		size_t k = 0;
		while (k < nsrcs && strcmp(srcs[k], e->src) != 0)
			k++;
		if (k == nsrcs) {
			srcs[nsrcs] = e->src;
			seqs[nsrcs++] = 0;
		}
		apply(s, seqs[k]++, *e);
	}
}

/* Equal state gives equal bytes whatever order it arrived in (kvsnap(5)
 * "Sections": every section in its order): workers seen in another order,
 * partitions made in another, blocks stored in another, a pool holder's
 * event before or after the engines' offloads, sources first heard in
 * another order.  (A pool's event before any event of the engine its
 * backend_id names is other state: a pool holder of that name; and one
 * before the offload it confirms leaves an offload record.) */
static void same_bytes_whatever_the_arrival_order(void)
{
	const struct ev v[] = {
		/* 0, 1: ENG0's stores, a prefix in partition default and one of adapter x */
		{ .src = ENG0, .t = 100, .medium = KV_XPU, .k = 0, .n = 4 },
		{ .src = ENG0, .t = 100, .medium = KV_XPU, .k = 20, .n = 2, .lora = "x" },
		/* 2, 3: ENG1 (dp 1): another prefix, and part of ENG0's */
		{ .src = ENG1, .dp = 1, .t = 100, .medium = KV_XPU, .k = 10, .n = 3 },
		{ .src = ENG1, .dp = 1, .t = 100, .medium = KV_XPU, .k = 0, .n = 2 },
		/* 4, 5: the pool's copies of blocks ENG0 offloads to cpu and ENG1 to disk (7, 8) */
		{ .src = POOL, .t = 100, .medium = KV_CPU, .n = 1, .hash = 0xb, .backend = "10.0.0.5" },
		{ .src = POOL, .t = 100, .medium = KV_DISK, .n = 1, .hash = 0x14, .backend = "10.0.0.5" },
		/* 6: a pool holder of its own */
		{ .src = POOL2, .t = 100, .medium = KV_CPU, .n = 1, .hash = 0xc, .backend = "daemon" },
		{ .src = ENG0, .t = 100, .medium = KV_CPU, .k = 1, .n = 1 },
		{ .src = ENG1, .dp = 1, .t = 100, .medium = KV_DISK, .k = 10, .n = 1 },
	};
	static const size_t orders[][9] = {
		{ 0, 1, 7, 2, 3, 8, 4, 5, 6 },   /* engines first, then the pools */
		{ 2, 3, 8, 0, 1, 7, 6, 4, 5 },   /* ENG1 (worker dp 1) before ENG0, the pools in another order */
		{ 2, 0, 3, 1, 6, 7, 4, 8, 5 },   /* the pool holder's event before the offloads, the others between */
		{ 1, 2, 0, 3, 8, 6, 7, 4, 5 },   /* adapter x's partition first, everything interleaved */
	};
	size_t n0 = 0;
	uint8_t *first = NULL;
	for (size_t k = 0; k < sizeof orders / sizeof orders[0]; k++) {
		struct state s;
		apply_in_order(&s, v, orders[k], 9);
		size_t n;
		uint8_t *b = write_read(&s, &n);
		struct kv_snap snap;
		char err[200];
		ASSERT(check_bytes(b, n, &snap, err, sizeof err));
		ASSERT_EQ_U64(snap.nworkers, 3);
		ASSERT_EQ_U64(snap.nsources, 4);
		ASSERT_EQ_U64(snap.npartitions, 2);
		free_state(&s);
		if (!first) {
			first = b, n0 = n;
			continue;
		}
		if (n != n0 || memcmp(b, first, n) != 0)
			printf("# order %zu: %zu bytes, not the %zu of order 0 or not the same\n", k, n, n0);
		ASSERT(n == n0 && memcmp(b, first, n) == 0);
		free(b);
	}
	free(first);
}

/* The index of the first block of partition 0 whose parent is held. */
static size_t held_parent(const struct kv_snap *s)
{
	for (size_t i = 0; i < s->partitions[0].r[KV_RANGE_BLOCKS].count; i++)
		if (s->parents[i] < KV_SNAP_PARENT_ROOT)
			return i;
	abort();
}

/* A set of partition 0 with two holders. */
static size_t pair_set(const struct kv_snap *s)
{
	for (size_t i = 0; i < s->nsets; i++)
		if (s->sets[i].nholders == 2)
			return i;
	abort();
}

/* Damage number k to the records of a checked snapshot (the views are into
 * the bytes), and the message loading must refuse it with, or NULL when it
 * must still load; "" when there is no damage k. */
static const char *damage(int k, struct kv_snap *s, char *msg, size_t n)
{
	uint64_t *chain = (uint64_t *)s->chains;
	uint32_t *bset = (uint32_t *)s->block_sets, *parent = (uint32_t *)s->parents;
	struct kv_snap_set *sets = (struct kv_snap_set *)s->sets;
	uint32_t *holders = (uint32_t *)s->holders;
	struct kv_snap_orphan *orph = (struct kv_snap_orphan *)s->orphans;
	uint64_t *eh = (uint64_t *)s->ehashes;
	uint32_t *ehb = (uint32_t *)s->ehash_blocks;
	struct kv_snap_stale *st = (struct kv_snap_stale *)s->stale;
	struct kv_snap_content *c = (struct kv_snap_content *)s->content;
	struct kv_snap_partition *pt = (struct kv_snap_partition *)s->partitions;
	struct kv_snap_offload *off = (struct kv_snap_offload *)s->offload;
	struct kv_snap_pending *pd = (struct kv_snap_pending *)s->pending;
	struct kv_snap_source *src = (struct kv_snap_source *)s->sources;
	struct kv_snap_worker *w = (struct kv_snap_worker *)s->workers;
	uint32_t nblocks = (uint32_t)pt[0].r[KV_RANGE_BLOCKS].count, nsets = (uint32_t)pt[0].r[KV_RANGE_SETS].count;
	size_t j = held_parent(s), ps = pair_set(s);
	msg[0] = 0;
	switch (k) {
	case 0: chain[1] = chain[0]; return "block 1: blocks out of order";
	case 1: chain[1] = chain[0] + 1; return NULL;
	case 2: bset[0] = nsets; return "block 0: set out of its partition's";
	case 3: bset[0] = nsets - 1; return "block 0: set numbered out of block order";
	case 4: parent[j] = nblocks; snprintf(msg, n, "block %zu: parent out of bounds", j); return msg;
	case 5: parent[j] = KV_SNAP_PARENT_ROOT - 1; snprintf(msg, n, "block %zu: parent out of bounds", j); return msg;
	case 6: parent[j] = KV_SNAP_PARENT_ROOT; return NULL;
	case 7: parent[j] = nblocks - 1 == j ? 0 : nblocks - 1; return NULL;
	case 8: sets[0].nholders = 0; return "set 0: holders out of bounds";
	case 9: holders[sets[ps].holders_first + 1] = holders[sets[ps].holders_first];
		snprintf(msg, n, "set %zu: holders out of order", ps); return msg;
	case 10: holders[sets[ps].holders_first + 1] = KV_HOLDER(s->nworkers, 1);
		snprintf(msg, n, "set %zu: bad holder", ps); return msg;
	case 11: holders[sets[ps].holders_first + 1] = KV_HOLDER(s->nworkers - 1, 1); return NULL;
	case 12: holders[sets[ps].holders_first] &= ~7u; snprintf(msg, n, "set %zu: bad holder", ps); return msg;
	case 13: orph[1].block = orph[0].block;
		return "orphan 1: not a block whose parent is not held, or out of order";
	/* the block one past the partition's is the next partition's orphan */
	case 14: orph[1].block = nblocks; return "orphan 1: not a block whose parent is not held, or out of order";
	case 15: parent[j] = KV_SNAP_PARENT_ORPHAN; return "2 orphans for 3 blocks whose parent is not held";
	case 16: eh[1] = eh[0]; return "engine hash 1: out of order or naming no block";
	case 17: ehb[0] = nblocks; return "engine hash 0: out of order or naming no block";
	case 18: ehb[0] = nblocks - 1; return NULL;
	case 19: st[1].ehash = st[0].ehash; return "stale engine hash 1: out of order";
	case 20: st[0].ehash = eh[1]; return eh[1] < st[1].ehash ? "engine hash 1: also stale" : "(no damage: stale hashes reordered)";
	case 21: c[1].chain = c[0].chain; return "content 1: out of order";
	case 22: pt[0].flags = 2; return "partition 0: unknown flags";
	case 23: pt[1].tenant = pt[0].tenant; return "partition 1: partitions out of order";
	case 24: pt[1].r[KV_RANGE_BLOCKS].first = 1; return "partition 1: block range out of bounds";
	case 25: off[1].ehash = off[0].ehash; return "offload 1: out of order";
	case 26: off[0].partition = (uint32_t)s->npartitions; return "offload 0: partition out of range";
	case 27: off[1].partition = 1; return NULL;
	case 28: pd[0].partition = (uint32_t)s->npartitions; return "pending 0: out of range";
	case 29: pd[0].worker = (uint32_t)s->nworkers; return "pending 0: out of range";
	case 30: pd[0].worker = (uint32_t)s->nworkers - 1; return NULL;
	case 31: pd[0].medium = KV_NMEDIA; return "pending 0: out of range";
	case 32: pd[0].medium = KV_NMEDIA - 1; return NULL;
	case 33: pd[1].t = pd[0].t; return NULL;
	case 34: pd[1].t = pd[0].t - 1; return "pending 1: out of order";
	case 35: src[0].last_recv_ns = s->meta->now_ns; return NULL;
	case 36: src[0].last_recv_ns = s->meta->now_ns + 1; return "source 0: bad record";
	case 37: src[0].seen = 2; return "source 0: bad record";
	case 38: src[0].last_record = 3; return "source 0: bad record";
	case 39: src[0].last_record = 2; return NULL;
	case 40: src[0].last_record = 1, src[0].seen = 0; return "source 0: bad record";
	case 41: w[0].flags = 3; return "worker 0: unknown flags";
	case 42: w[2].dp_rank = 1; return "worker 2: unknown flags";
	case 43: w[1].dp_rank = w[0].dp_rank; return "worker 1: out of order or repeated";
	case 44: w[1].dp_rank = 2; return NULL;
	case 45: c[0].t = s->meta->now_ns; return NULL;
	case 46: c[0].t = s->meta->now_ns + 1; return "content 0: time after the event time reached";
	case 47: off[1].t = s->meta->now_ns; return NULL;
	case 48: off[1].t = s->meta->now_ns + 1; return "offload 1: time after the event time reached";
	case 49: pd[3].t = s->meta->now_ns; return NULL;
	case 50: pd[3].t = s->meta->now_ns + 1; return "pending 3: time after the event time reached";
	case 51: src[1].src = src[0].src; return "source 1: out of order or repeated";
	case 52: { struct kv_snap_source x = src[1]; src[1] = src[2], src[2] = x; }
		return "source 2: out of order or repeated";
	/* partition 0's blocks have sets 0 to 3, one each, in chain order */
	case 53: bset[1] = 2, bset[2] = 1; return "block 1: set numbered out of block order";
	case 54: bset[3] = bset[2]; return "partition 0: set 3 held by no block";
	case 55: bset[2] = bset[1]; return "block 3: set numbered out of block order";
	default: return "";
	}
}

/* Each rule of loading at its boundary: a key repeated (not only one out of
 * order), an index one past its range (and the last one in it), a time one
 * nanosecond past what it may be (and exactly that), behind a valid checksum. */
static void load_refuses_each_fault_at_its_boundary(void)
{
	struct state s;
	struct kv_snap snap;
	char err[200], msg[100];
	rich_state(&s);
	size_t n;
	uint8_t *good = write_read(&s, &n);
	ASSERT(check_bytes(good, n, &snap, err, sizeof err));
	ASSERT_EQ_U64(snap.npartitions, 3);
	ASSERT_EQ_U64(snap.nworkers, 3);
	ASSERT_EQ_U64(snap.partitions[0].r[KV_RANGE_BLOCKS].count, 4);
	ASSERT_EQ_U64(snap.partitions[1].r[KV_RANGE_BLOCKS].count, 0);
	ASSERT_EQ_U64(snap.partitions[2].r[KV_RANGE_BLOCKS].count, 1);
	ASSERT(snap.parents[4] == KV_SNAP_PARENT_ORPHAN);
	ASSERT_EQ_U64(snap.norphans, 3);
	ASSERT_EQ_U64(snap.nsets, 5);
	ASSERT_EQ_U64(snap.nehashes, 5);
	ASSERT_EQ_U64(snap.nstale, 5);
	ASSERT_EQ_U64(snap.ncontent, 3);
	ASSERT_EQ_U64(snap.noffload, 2);
	ASSERT_EQ_U64(snap.npending, 4);
	ASSERT_EQ_U64(snap.nsources, 3);
	ASSERT(snap.workers[2].flags == 2);
	uint8_t *b = malloc(n);
	int k, wrong = -1;
	for (k = 0; wrong < 0; k++) {
		memcpy(b, good, n);
		if (!check_bytes(b, n, &snap, err, sizeof err)) {
			wrong = k;
			break;
		}
		const char *want = damage(k, &snap, msg, sizeof msg);
		if (want && !*want)
			break;
		reseal(b, n);
		bool ok = check_bytes(b, n, &snap, err, sizeof err);
		if (ok != !want || (want && strcmp(err, want) != 0)) {
			printf("# damage %d: %s, expected %s\n", k, ok ? "loaded" : err, want ? want : "to load");
			wrong = k;
		}
	}
	free(b);
	free(good);
	free_state(&s);
	ASSERT(wrong < 0);
	ASSERT_EQ_U64(k, 56);
}

/* What kvmatch -i, kvquery and kvnats --after tell the user: `PATH: why`,
 * 66 for a file that cannot be opened or read, 65 for one that is not a
 * snapshot; a write that cannot be done is 74. */
static void load_and_write_failures_say_path_and_status(void)
{
	char dir[] = "/tmp/kvtools-snaperr-XXXXXX", path[64], want[128];
	ASSERT(mkdtemp(dir) != NULL);
	struct kv_snap snap;
	struct kv_err e = { 0 };

	snprintf(path, sizeof path, "%s/missing", dir);
	ASSERT(!kv_snapr_load(path, &snap, &e));
	snprintf(want, sizeof want, "%s: No such file or directory", path);
	ASSERT_EQ_STR(kv_err_msg(&e), want);
	ASSERT_EQ_U64(e.status, KV_EX_NOINPUT);
	kv_err_clear(&e);

	ASSERT(!kv_snapr_load(dir, &snap, &e));
	snprintf(want, sizeof want, "%s: Is a directory", dir);
	ASSERT_EQ_STR(kv_err_msg(&e), want);
	ASSERT_EQ_U64(e.status, KV_EX_NOINPUT);
	kv_err_clear(&e);

	snprintf(path, sizeof path, "%s/empty", dir);
	close(open(path, O_WRONLY | O_CREAT, 0600));
	ASSERT(!kv_snapr_load(path, &snap, &e));
	snprintf(want, sizeof want, "%s: empty file", path);
	ASSERT_EQ_STR(kv_err_msg(&e), want);
	ASSERT_EQ_U64(e.status, KV_EX_DATAERR);
	kv_err_clear(&e);

	int fd = open(path, O_WRONLY | O_TRUNC);
	ASSERT(write(fd, "KVSNAQ and then some bytes, enough for a header", 48) == 48);
	close(fd);
	ASSERT(!kv_snapr_load(path, &snap, &e));
	snprintf(want, sizeof want, "%s: not a kvsnap snapshot", path);
	ASSERT_EQ_STR(kv_err_msg(&e), want);
	ASSERT_EQ_U64(e.status, KV_EX_DATAERR);
	kv_err_clear(&e);
	unlink(path);

	struct state s;
	make_state(&s);
	snprintf(path, sizeof path, "%s/no/such/dir", dir);
	bool wrote = kv_snapstate_save(path, &s.ix, &s.ws, &s.m, &e);
	free_state(&s);
	ASSERT(!wrote);
	snprintf(want, sizeof want, "%s: No such file or directory", path);
	ASSERT_EQ_STR(kv_err_msg(&e), want);
	ASSERT_EQ_U64(e.status, KV_EX_IOERR);
	kv_err_clear(&e);
	rmdir(dir);
}

/* ---- loading in parts ---------------------------------------------------- */

/* A state of one chain of n blocks, each named by an engine hash: a file
 * of more than 1 MiB, which loading reads in parts. */
static void long_state(struct state *s, uint64_t n)
{
	make_state(s);
	uint32_t p = (uint32_t)kv_index_find_partition(&s->ix, "m", "t");
	uint32_t w = 0;
	uint64_t chain = KV_CHAIN_ROOT;
	for (uint64_t i = 1; i <= n; i++) {
		uint64_t next = kv_chain_next(chain, 1000 + i);
		kv_index_hold(&s->ix, p, next, chain, 1000 + i, w, KV_XPU);
		bool added;
		kv_ehashes_upsert(&s->ix.p[p].ehashes, 5000 + i, &added)->chain = next;
		chain = next;
	}
}

/* A long state written to a new temporary file (path: its mkstemp template). */
static void write_long_state(char *path, uint64_t n)
{
	close(mkstemp(path));
	struct state s;
	long_state(&s, n);
	struct kv_err e = { 0 };
	ASSERT(kv_snapstate_save(path, &s.ix, &s.ws, &s.m, &e));
	free_state(&s);
}

/* The offset in the file of a section's records. */
static uint64_t section_offset(const char *path, uint32_t id)
{
	uint8_t t[32];
	int fd = open(path, O_RDONLY);
	if (pread(fd, t, 32, 32 + 32 * (off_t)(id - 1)) != 32)
		abort();
	close(fd);
	uint64_t off;
	memcpy(&off, t + 8, 8);
	return off;
}

static void flip_byte(const char *path, uint64_t at)
{
	int fd = open(path, O_RDWR);
	uint8_t c;
	if (pread(fd, &c, 1, (off_t)at) != 1)
		abort();
	c ^= 0xff;
	if (pwrite(fd, &c, 1, (off_t)at) != 1)
		abort();
	close(fd);
}

static void expect_refusal(struct kv_err *e, const char *path, const char *why)
{
	char want[256];
	snprintf(want, sizeof want, "%s: %s", path, why);
	ASSERT_EQ_STR(kv_err_msg(e), want);
	ASSERT_EQ_U64(e->status, KV_EX_DATAERR);
	kv_err_clear(e);
}

/* A large file: what lookups need read and checked at open, the engine
 * hashes and the matcher's part when asked, each checked against the table
 * read at open (a damaged part is refused when it is read, not before). */
static void parts_read_when_asked(void)
{
	char path[] = "/tmp/kvtools-parts-XXXXXX";
	struct kv_err e = { 0 };
	write_long_state(path, 60000);
	struct kv_snap snap;
	ASSERT(kv_snapr_open(path, KV_SNAP_PART_BLOCKS, &snap, &e));
	ASSERT_EQ_U64(snap.parts, KV_SNAP_PART_BLOCKS);
	ASSERT(snap.ehashes == NULL && snap.ehash_blocks == NULL && snap.stale == NULL && snap.content == NULL &&
	       snap.pending == NULL && snap.sources == NULL);
	ASSERT_EQ_U64(snap.nblocks, 60006);
	ASSERT_EQ_U64(snap.nehashes, 0);
	ASSERT_EQ_U64(snap.range_total[KV_RANGE_EHASHES], 60005);
	int64_t part = kv_snap_partition(&snap, "m", 1, "t", 1);
	ASSERT(part == 1);
	ASSERT(kv_snap_find(&snap, (uint32_t)part, kv_chain_next(KV_CHAIN_ROOT, 1)) != KV_SNAP_NO_BLOCK);
	ASSERT(snap.parents == NULL && snap.locals == NULL && snap.chains != NULL && snap.block_sets != NULL &&
	       snap.runs != NULL);
	/* the engine hashes, or the blocks' parents, damaged after the open:
	 * refused when read */
	static const uint32_t lazy[] = { KV_SEC_EHASHES, KV_SEC_PARENTS };
	for (size_t k = 0; k < 2; k++) {
		char why[96];
		uint64_t at = section_offset(path, lazy[k]) + 8;
		flip_byte(path, at);
		ASSERT(!kv_snapr_read(&snap, KV_SNAP_PART_EHASHES, &e));
		snprintf(why, sizeof why, "changed since it was loaded: section %u checksum mismatch (corrupt file)", lazy[k]);
		expect_refusal(&e, path, why);
		ASSERT(snap.ehashes == NULL && snap.parents == NULL && snap.parts == KV_SNAP_PART_BLOCKS);
		/* and the whole file refused at once, while the lookup part alone loads */
		struct kv_snap all;
		ASSERT(!kv_snapr_load(path, &all, &e));
		expect_refusal(&e, path, why + strlen("changed since it was loaded: "));
		ASSERT(kv_snapr_open(path, KV_SNAP_PART_BLOCKS, &all, &e));
		kv_snapr_close(&all);
		flip_byte(path, at);
	}
	ASSERT(kv_snapr_read(&snap, KV_SNAP_PART_EHASHES, &e));
	ASSERT(snap.ehashes != NULL && snap.parents != NULL && snap.parts == (KV_SNAP_PART_BLOCKS | KV_SNAP_PART_EHASHES));
	ASSERT(kv_snap_parent(&snap, (uint32_t)part, kv_snap_find(&snap, (uint32_t)part, kv_chain_next(KV_CHAIN_ROOT, 1))) ==
	       KV_CHAIN_ROOT);
	ASSERT_EQ_U64(snap.nehashes, 60005);
	uint64_t chain;
	ASSERT(kv_snap_ehash_chain(&snap, (uint32_t)part, 101, &chain) && chain == kv_chain_next(KV_CHAIN_ROOT, 1));
	/* the last part read: the file is closed */
	ASSERT(snap.path != NULL);
	ASSERT(kv_snapr_read(&snap, KV_SNAP_PART_MATCHER, &e));
	ASSERT(snap.parts == KV_SNAP_PART_ALL && snap.path == NULL && snap.npending == 1 && snap.pending != NULL);
	kv_snapr_close(&snap);
	/* cut after the open: refused when read */
	ASSERT(kv_snapr_open(path, KV_SNAP_PART_BLOCKS, &snap, &e));
	ASSERT(truncate(path, (off_t)section_offset(path, KV_SEC_EHASHES) + 8) == 0);
	ASSERT(!kv_snapr_read(&snap, KV_SNAP_PART_EHASHES, &e));
	expect_refusal(&e, path, "truncated while read");
	kv_snapr_close(&snap);
	unlink(path);
}

/* A section's checksum in the table damaged, the header's made right
 * again: refused by the section's (a part read is checked whole). */
static void section_checksum_damaged(void)
{
	char path[] = "/tmp/kvtools-parts-XXXXXX";
	struct kv_err e = { 0 };
	write_long_state(path, 60000);
	int fd = open(path, O_RDWR);
	uint8_t head[32 + KV_SEC_MAX * 32];
	ASSERT(pread(fd, head, sizeof head, 0) == (ssize_t)sizeof head);
	static const uint32_t ids[] = { KV_SEC_BLOCKS, KV_SEC_BLOCK_SETS, KV_SEC_RUNS, KV_SEC_HOLDERS };
	for (size_t k = 0; k < 4; k++) {
		uint8_t *sum = head + 32 + 32 * (ids[k] - 1) + 24;
		sum[0] ^= 1;
		reseal_header(head, sizeof head);
		ASSERT(pwrite(fd, head, sizeof head, 0) == (ssize_t)sizeof head);
		struct kv_snap snap;
		ASSERT(!kv_snapr_open(path, KV_SNAP_PART_BLOCKS, &snap, &e));
		char why[64];
		snprintf(why, sizeof why, "section %u checksum mismatch (corrupt file)", ids[k]);
		expect_refusal(&e, path, why);
		sum[0] ^= 1;
	}
	reseal_header(head, sizeof head);
	ASSERT(pwrite(fd, head, sizeof head, 0) == (ssize_t)sizeof head);
	close(fd);
	struct kv_snap snap;
	ASSERT(kv_snapr_load(path, &snap, &e));
	kv_snapr_close(&snap);
	unlink(path);
}

/* The section table lists each section once, in ascending id order: an id
 * repeated is refused as one out of order, at that entry, before anything
 * about the repeated section's records is said. */
static void section_table_ids_strictly_ascending(void)
{
	struct state s;
	make_state(&s);
	size_t n;
	uint8_t *good = write_read(&s, &n), *b = malloc(n);
	struct kv_snap snap;
	char err[200];
	bool loaded = check_bytes(good, n, &snap, err, sizeof err), refused = true;
	for (uint32_t at = 1; loaded && refused && at <= 2; at++) {
		memcpy(b, good, n);
		memcpy(b + 32 + 32 * at, b + 32 + 32 * (at - 1), 4);   /* entry at: the id before it */
		reseal_header(b, n);
		char want[64];
		snprintf(want, sizeof want, "section table out of order at entry %u", at);
		refused = !check_bytes(b, n, &snap, err, sizeof err) && strcmp(err, want) == 0;
		if (!refused)
			printf("# entry %u: \"%s\", expected \"%s\"\n", at, err, want);
	}
	free(b);
	free(good);
	free_state(&s);
	ASSERT(loaded);
	ASSERT(refused);
}

static uint8_t *read_file(const char *path, size_t *n)
{
	int fd = open(path, O_RDONLY);
	*n = (size_t)lseek(fd, 0, SEEK_END);
	uint8_t *b = malloc(*n);
	if (pread(fd, b, *n, 0) != (ssize_t)*n)
		abort();
	close(fd);
	return b;
}

static void write_file(const char *path, const uint8_t *b, size_t n)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	if (write(fd, b, n) != (ssize_t)n)
		abort();
	close(fd);
}

/* Block i of the file's bytes b damaged behind valid checksums (its chain
 * made its predecessor's, or its set one past the last partition's, at
 * column), written to path: refused at open, as by the whole-file check. */
static bool block_damage_refused(const char *path, uint8_t *b, size_t n, uint64_t column, bool chain, uint64_t i)
{
	char want[100], err[200];
	struct kv_snap snap;
	struct kv_err e = { 0 };
	if (chain) {
		memcpy(b + column + i * 8, b + column + (i - 1) * 8, 8);
		snprintf(want, sizeof want, "block %llu: blocks out of order", (unsigned long long)i);
	} else {
		uint64_t nsets; /* SETS' count in its table entry: one past the last partition's */
		memcpy(&nsets, b + 32 + 32 * (KV_SEC_SETS - 1) + 16, 8);
		uint32_t none = (uint32_t)nsets;
		memcpy(b + column + i * 4, &none, 4);
		snprintf(want, sizeof want, "block %llu: set out of its partition's", (unsigned long long)i);
	}
	reseal(b, n);
	write_file(path, b, n);
	if (kv_snapr_open(path, KV_SNAP_PART_BLOCKS, &snap, &e)) {
		kv_snapr_close(&snap);
		unit_fail(__FILE__, __LINE__, "a damaged block loaded");
		return false;
	}
	expect_refusal(&e, path, want);
	if (check_bytes(b, n, &snap, err, sizeof err) || strcmp(err, want) != 0) {
		printf("# the whole-file check: \"%s\", expected \"%s\"\n", err, want);
		unit_fail(__FILE__, __LINE__, "the whole-file check differs");
		return false;
	}
	return true;
}

/* A large file's blocks are checked, and their directory built, piece by
 * piece as they are read: every block of a partition after the first (the
 * scan's partition cursor) found through the directory, and a chain out
 * of order or a set not the partition's, behind valid checksums, refused
 * with the message the whole-file check gives, at the first block of a
 * piece (its chain before is in the piece before) and in the middle of
 * one. */
static void blocks_checked_as_read(void)
{
	char path[] = "/tmp/kvtools-scan-XXXXXX";
	struct kv_err e = { 0 };
	write_long_state(path, 60000);
	struct kv_snap snap;
	ASSERT(kv_snapr_open(path, KV_SNAP_PART_BLOCKS, &snap, &e));
	ASSERT(snap.dir && snap.dir[1] && !snap.dir[0]);
	const struct kv_snap_range *r = &snap.partitions[1].r[KV_RANGE_BLOCKS];
	ASSERT_EQ_U64(r->first, 1);
	for (uint64_t b = r->first; b < r->first + r->count; b++) {
		ASSERT(kv_snap_find(&snap, 1, snap.chains[b]) == b);
		ASSERT(snap.chains[b] + 1 == (b + 1 < r->first + r->count ? snap.chains[b + 1] : 0) ||
		       kv_snap_find(&snap, 1, snap.chains[b] + 1) == KV_SNAP_NO_BLOCK);
	}
	ASSERT(kv_snap_find(&snap, 0, snap.chains[0]) == 0);
	/* each slot starts where the chains of the slots before it end */
	size_t nslots = (size_t)1 << snap.dirbits[1];
	uint32_t *starts = calloc(nslots + 1, sizeof *starts);
	for (uint64_t b = r->first; b < r->first + r->count; b++)
		starts[(snap.chains[b] >> (64 - snap.dirbits[1])) + 1]++;
	for (size_t k = 1; k <= nslots; k++)
		starts[k] += starts[k - 1];
	bool same = memcmp(starts, snap.dir[1], (nslots + 1) * sizeof *starts) == 0;
	free(starts);
	ASSERT(same);
	kv_snapr_close(&snap);
	uint64_t chains = section_offset(path, KV_SEC_BLOCKS), sets = section_offset(path, KV_SEC_BLOCK_SETS);
	uint64_t piece = (size_t)256 << 10, edge = ((chains + piece) / piece * piece - chains) / 8;
	ASSERT(edge > 1 && edge + 1000 < 60006);
	size_t n;
	uint8_t *good = read_file(path, &n), *b = malloc(n);
	const uint64_t at[] = { edge, edge + 1000 };
	for (int k = 0; k < 4; k++) {
		memcpy(b, good, n);
		if (!block_damage_refused(path, b, n, k < 2 ? chains : sets, k < 2, at[k % 2]))
			break;
	}
	free(b);
	free(good);
	unlink(path);
}

/* ---- a large partition --------------------------------------------------- */

/* Partition "m" given n prefixes of 10 blocks (uniform chains, each prefix
 * held by one of 7 sets of workers, a prefix in 4 by two more), and 3,000
 * blocks whose chains are the numbers 1 to 3,000 (one bucket of the
 * writer's, its keys not uniform) with parents nobody holds; an engine
 * hash for each block, uniform or small, and 500 stale ones. */
static void large_partition(struct state *s, uint64_t n)
{
	make_state(s);
	uint32_t p = (uint32_t)kv_index_find_partition(&s->ix, "m", "t");
	uint32_t w[4] = { 0, 1, kv_workers_add(&s->ws, "u", 2, NULL, false), kv_workers_add(&s->ws, "x", 3, NULL, false) };
	bool added;
	for (uint64_t k = 0; k < n; k++) {
		uint64_t chain = KV_CHAIN_ROOT;
		for (uint64_t i = 0; i < 10; i++) {
			uint64_t next = kv_chain_next(chain, k * 10 + i + 7);
			for (uint32_t h = 0; h < 3; h++)
				if ((k % 7 + 1) >> h & 1)
					kv_index_hold(&s->ix, p, next, chain, k * 10 + i + 7, w[h], (enum kv_medium)h);
			if (k % 4 == 0 && i >= 5)
				kv_index_hold(&s->ix, p, next, chain, k * 10 + i + 7, w[3], KV_CPU);
			kv_ehashes_upsert(&s->ix.p[p].ehashes, kv_mix64(k * 10 + i + 1), &added)->chain = next;
			chain = next;
		}
	}
	for (uint64_t c = 1; c <= 3000; c++) {
		kv_index_hold(&s->ix, p, c, 0xdead0000 + c, c, w[c % 2], KV_XPU);
		kv_ehashes_upsert(&s->ix.p[p].ehashes, 1000000 + c, &added)->chain = c;
	}
	for (uint64_t c = 1; c <= 500; c++)
		kv_ehashes_upsert(&s->ix.p[p].ehashes, kv_mix64(c << 40), &added)->chain = 0xbeef0000 + c;
}

/* Each block of the partition as the live index has it (its parent, local
 * and number of holders), its set numbered where first met, and each
 * engine hash naming the chain it names live. */
static void same_as_live(const struct kv_snap *snap, uint32_t part, const struct kv_index *ix, uint32_t live)
{
	const struct kv_partition *p = &ix->p[live];
	const struct kv_snap_range *r = &snap->partitions[part].r[KV_RANGE_BLOCKS];
	const struct kv_snap_range *sets = &snap->partitions[part].r[KV_RANGE_SETS];
	ASSERT_EQ_U64(r->count, kv_blocks_count(&p->blocks));
	uint64_t next_set = sets->first;
	for (uint64_t b = r->first; b < r->first + r->count; b++) {
		const struct kv_block *blk = kv_blocks_find_const(&p->blocks, snap->chains[b]);
		ASSERT(blk != NULL);
		ASSERT_EQ_U64(snap->locals[b], blk->local);
		ASSERT_EQ_U64(kv_snap_parent(snap, part, b), blk->parent);
		size_t nh;
		kv_snap_holders(snap, b, &nh);
		ASSERT_EQ_U64(nh, kv_block_nholders(ix, blk));
		ASSERT(snap->block_sets[b] <= next_set);
		if (snap->block_sets[b] == next_set)
			next_set++;
	}
	ASSERT_EQ_U64(next_set, sets->first + sets->count);
	uint64_t named = snap->partitions[part].r[KV_RANGE_EHASHES].count + snap->partitions[part].r[KV_RANGE_STALE].count;
	ASSERT_EQ_U64(named, kv_ehashes_count(&p->ehashes));
	KV_TABLE_EACH(kv_ehashes, &p->ehashes, pos) {
		const struct kv_ehash *e = kv_ehashes_at_const(&p->ehashes, pos);
		uint64_t chain;
		ASSERT(kv_snap_ehash_chain(snap, part, e->key, &chain));
		ASSERT_EQ_U64(chain, e->chain);
	}
}

static void *no_work(void *arg)
{
	return arg;
}

/* A partition of 33,000 blocks (the writer sorts them in buckets of their
 * chains' top bits, one of them not uniform): read back as the live index
 * has it, and written the same when no second thread can be started
 * (every thread asked for a stack larger than memory). */
static void large_partition_written_as_held(void)
{
	char path[] = "/tmp/kvtools-large-XXXXXX";
	close(mkstemp(path));
	struct state s;
	large_partition(&s, 3000);
	struct kv_err e = { 0 };
	ASSERT(kv_snapstate_save(path, &s.ix, &s.ws, &s.m, &e));
	size_t n, n1;
	uint8_t *two = read_file(path, &n);
	struct kv_snap snap;
	ASSERT(kv_snapr_load(path, &snap, &e));
	ASSERT_EQ_U64(snap.nblocks, 33006);
	int64_t part = kv_snap_partition(&snap, "m", 1, "t", 1);
	ASSERT(part >= 0);
	same_as_live(&snap, (uint32_t)part, &s.ix, (uint32_t)kv_index_find_partition(&s.ix, "m", "t"));
	ASSERT(!unit_current_failed);
	ASSERT(snap.partitions[part].r[KV_RANGE_SETS].count >= 8);
	ASSERT_EQ_U64(snap.partitions[part].r[KV_RANGE_ORPHANS].count, 3000);
	ASSERT_EQ_U64(snap.partitions[part].r[KV_RANGE_STALE].count, 500);
	kv_snapr_close(&snap);
	pthread_attr_t big, was;
	ASSERT(pthread_getattr_default_np(&was) == 0);
	pthread_attr_init(&big);
	ASSERT(pthread_attr_setstacksize(&big, (size_t)1 << 60) == 0);
	ASSERT(pthread_setattr_default_np(&big) == 0);
	pthread_t t;
	bool refused = pthread_create(&t, NULL, no_work, NULL) != 0;
	if (!refused)
		pthread_join(t, NULL);
	bool ok = kv_snapstate_save(path, &s.ix, &s.ws, &s.m, &e);
	ASSERT(pthread_setattr_default_np(&was) == 0);
	pthread_attr_destroy(&big);
	pthread_attr_destroy(&was);
	ASSERT(refused && ok);
	uint8_t *one = read_file(path, &n1);
	ASSERT(n1 == n && memcmp(one, two, n) == 0);
	free(one);
	free(two);
	free_state(&s);
	unlink(path);
}

/* ---- times and inputs ----------------------------------------------------- */

/* Writes a u64 at a field of the META record (at offset meta) of the bytes b. */
static void set_meta(uint8_t *b, size_t n, size_t meta, size_t field, uint64_t v)
{
	memcpy(b + meta + field, &v, 8);
	reseal(b, n);
}

/* The times of META are checked as a resumed kvmatch takes them: a next
 * sweep within one sweep interval of the event time reached, TTLs an
 * option can give, and an event time reached that the times the state
 * holds vouch for by the suspect-time rule of records (at most the longest
 * TTL beyond the latest).  2^64-1 stopped sweeps for good, or expired all
 * that was pending at once, and was written into every later snapshot. */
static void times_checked_at_load(void)
{
	struct state s;
	struct kv_snap snap;
	char err[300];
	make_state(&s);
	const uint64_t now = 1764500000000000000u, sweep = (now / KV_SWEEP_INTERVAL_NS + 1) * KV_SWEEP_INTERVAL_NS;
	const uint64_t latest = now - 1000, ttl = KV_OFFLOAD_TTL_DEFAULT; /* the longest of the three */
	s.m.now = now;
	s.m.next_sweep = sweep;
	kv_srcstats_get(&s.m.sources, "tcp://x:1", 9)->last_recv_ns = latest;
	size_t n;
	uint8_t *b = write_read(&s, &n);
	ASSERT(check_bytes(b, n, &snap, err, sizeof err));
	const size_t meta = (size_t)((const uint8_t *)snap.meta - b);
	const size_t now_at = offsetof(struct kv_snap_meta, now_ns), sweep_at = offsetof(struct kv_snap_meta, next_sweep_ns);
	/* next_sweep_ns: at most one interval after now_ns; before it is a sweep due */
	set_meta(b, n, meta, sweep_at, now + KV_SWEEP_INTERVAL_NS);
	ASSERT(check_bytes(b, n, &snap, err, sizeof err));
	set_meta(b, n, meta, sweep_at, 0);
	ASSERT(check_bytes(b, n, &snap, err, sizeof err));
	set_meta(b, n, meta, sweep_at, now + KV_SWEEP_INTERVAL_NS + 1);
	ASSERT(!check_bytes(b, n, &snap, err, sizeof err));
	ASSERT_EQ_STR(err, "META: next_sweep_ns 1764500030000000001 is more than 30 s after the event time reached "
			   "(now_ns 1764500000000000000)");
	set_meta(b, n, meta, sweep_at, UINT64_MAX);
	ASSERT(!check_bytes(b, n, &snap, err, sizeof err));
	set_meta(b, n, meta, sweep_at, sweep);
	/* now_ns: at most the longest TTL after the latest time held (the source's) */
	set_meta(b, n, meta, now_at, latest + ttl);
	ASSERT(check_bytes(b, n, &snap, err, sizeof err));
	set_meta(b, n, meta, now_at, latest + ttl + 1);
	ASSERT(!check_bytes(b, n, &snap, err, sizeof err));
	ASSERT_EQ_STR(err, "META: now_ns 1764500599999999001 is a suspect time: more than the longest TTL (600 s) after "
			   "the latest time the snapshot holds (1764499999999999000)");
	set_meta(b, n, meta, now_at, UINT64_MAX);
	ASSERT(!check_bytes(b, n, &snap, err, sizeof err));
	set_meta(b, n, meta, now_at, now);
	/* a TTL no option gives would make any now_ns pass */
	set_meta(b, n, meta, offsetof(struct kv_snap_meta, content_ttl_ns), KV_TTL_MAX_NS + 1);
	ASSERT(!check_bytes(b, n, &snap, err, sizeof err));
	ASSERT_EQ_STR(err, "META: content_ttl_ns 1000000000000000001 is beyond 1000000000000000000 (10^9 s, the longest "
			   "TTL kvmatch takes)");
	set_meta(b, n, meta, offsetof(struct kv_snap_meta, content_ttl_ns), KV_TTL_MAX_NS);
	ASSERT(check_bytes(b, n, &snap, err, sizeof err));
	free(b);
	/* the entries' times are at or before now_ns: the offload's too */
	bool added;
	uint32_t p = (uint32_t)kv_index_find_partition(&s.ix, "m", "t");
	struct kv_offload *o = kv_offloads_upsert(&kv_match_partition(&s.m, p)->offload, 31, &added);
	*o = (struct kv_offload){ 31, 1, 2, 3, now + 1, 0, false };
	b = write_read(&s, &n);
	ASSERT(!check_bytes(b, n, &snap, err, sizeof err));
	ASSERT_EQ_STR(err, "offload 0: time after the event time reached");
	free(b);
	free_state(&s);
	/* a snapshot that holds no time (kvgen's: the index alone) vouches for none */
	make_state(&s);
	kv_match_free(&s.m);
	struct kv_match_opts mo = kv_match_opts_default();
	kv_match_init(&s.m, &s.ix, &s.ws, &mo);
	s.m.now = UINT64_MAX / 2;
	b = write_read(&s, &n);
	ASSERT(check_bytes(b, n, &snap, err, sizeof err));
	free(b);
	free_state(&s);
}

/* A stop signal ends a load between two pieces read, of a small file read
 * in order or a large one read in parts: status 0 (the status after a
 * signal), the path, and nothing loaded. */
static void load_stopped_by_a_signal(void)
{
	char small[] = "/tmp/kvtools-stop-XXXXXX", large[] = "/tmp/kvtools-stopl-XXXXXX";
	struct state s;
	make_state(&s);
	close(mkstemp(small));
	struct kv_err e = { 0 };
	ASSERT(kv_snapstate_save(small, &s.ix, &s.ws, &s.m, &e));
	free_state(&s);
	write_long_state(large, 60000);
	const char *paths[] = { small, large };
	for (int i = 0; i < 2; i++) {
		struct kv_snap snap;
		char want[128];
		kv_stop_signal = SIGTERM;
		bool ok = kv_snapr_load(paths[i], &snap, &e);
		kv_stop_signal = 0;
		ASSERT(!ok);
		snprintf(want, sizeof want, "%s: loading stopped by a signal", paths[i]);
		ASSERT_EQ_STR(kv_err_msg(&e), want);
		ASSERT_EQ_U64(e.status, KV_EX_OK);
		ASSERT(snap.data == NULL);
		kv_err_clear(&e);
		ASSERT(kv_snapr_load(paths[i], &snap, &e));
		kv_snapr_close(&snap);
		unlink(paths[i]);
	}
}

/* Loads what a child process writes into a pipe (the bytes b, then
 * `extra` bytes of zeros): kv_snapr_load's verdict, its message in e. */
static bool load_from_pipe(const uint8_t *b, size_t n, size_t extra, struct kv_snap *snap, struct kv_err *e)
{
	int fds[2];
	if (pipe(fds) != 0)
		abort();
	pid_t child = fork();
	if (child == 0) {
		close(fds[0]);
		static const uint8_t zeros[4096];
		bool ok = write(fds[1], b, n) == (ssize_t)n;
		for (size_t k = 0; ok && k < extra; k += sizeof zeros)
			ok = write(fds[1], zeros, extra - k < sizeof zeros ? extra - k : sizeof zeros) > 0;
		_exit(0);
	}
	close(fds[1]);
	char path[32];
	snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
	bool ok = kv_snapr_load(path, snap, e);
	close(fds[0]);
	waitpid(child, NULL, 0);
	return ok;
}

/* What is not a regular file is read up to the size its header says (and
 * that at most KV_SNAP_MAX_STREAM), never whole before it is checked: a
 * device of zeros is refused at its first 32 bytes, a header that says too
 * much before anything more is read, a pipe that goes on past its size at
 * the first byte more. */
static void pipes_bounded_by_their_header(void)
{
	struct state s;
	make_state(&s);
	size_t n;
	uint8_t *b = write_read(&s, &n);
	free_state(&s);
	struct kv_snap snap;
	struct kv_err e = { 0 };
	char want[256];
	ASSERT(load_from_pipe(b, n, 0, &snap, &e));
	kv_snapr_close(&snap);
	ASSERT(!load_from_pipe(b, n, 1 << 20, &snap, &e));
	ASSERT(strstr(kv_err_msg(&e), ": truncated or padded: more than ") != NULL);
	kv_err_clear(&e);
	ASSERT(!load_from_pipe(b, n - 1, 0, &snap, &e));
	snprintf(want, sizeof want, ": truncated or padded: %zu bytes, header says %zu", n - 1, n);
	ASSERT(strstr(kv_err_msg(&e), want) != NULL);
	kv_err_clear(&e);
	/* the header of a file of 4 GiB + 8 bytes, then zeros: not read on */
	uint64_t big = KV_SNAP_MAX_STREAM + 8;
	memcpy(b + 16, &big, 8);
	ASSERT(!load_from_pipe(b, 32, 0, &snap, &e));
	ASSERT(strstr(kv_err_msg(&e), ": header says 4294967304 bytes: a snapshot that is not a regular file is read "
				      "up to 4294967296 bytes (copy it to a file)") != NULL);
	ASSERT_EQ_U64(e.status, KV_EX_DATAERR);
	kv_err_clear(&e);
	free(b);
	ASSERT(!kv_snapr_load("/dev/zero", &snap, &e));
	ASSERT_EQ_STR(kv_err_msg(&e), "/dev/zero: not a kvsnap snapshot");
	kv_err_clear(&e);
}

/* What the loader says of the file d (n bytes) with byte i complemented:
 * the header's fields are checked first, in file order; every other byte
 * is covered by a checksum (the header's over itself and the section
 * table, each section's in its table entry) or by zero padding. */
static void flip_message(const uint8_t *d, size_t n, size_t i, char *want, size_t len)
{
	uint8_t f[24];
	memcpy(f, d, sizeof f);
	if (i < sizeof f)
		f[i] ^= 0xff;
	uint16_t version;
	uint32_t nsec;
	uint64_t declared;
	memcpy(&version, f + 6, 2);
	memcpy(&nsec, f + 8, 4);
	memcpy(&declared, f + 16, 8);
	if (i < 6) {
		snprintf(want, len, "not a kvsnap snapshot");
	} else if (i < 8) {
		snprintf(want, len, "snapshot version %u (this kvtools reads versions %u and %u)", version,
			 (unsigned)KV_SNAP_VERSION_READ, (unsigned)KV_SNAP_VERSION);
	} else if (i < 12) {
		snprintf(want, len, "bad section count %u", nsec);
	} else if (i >= 16 && i < 24) {
		snprintf(want, len, "truncated or padded: %zu bytes, header says %llu", n, (unsigned long long)declared);
	} else {
		snprintf(want, len, "header checksum mismatch (corrupt file)");
		memcpy(&nsec, d + 8, 4);
		for (uint32_t k = 0; k < nsec; k++) {
			uint32_t id, rs;
			uint64_t off, cnt;
			memcpy(&id, d + 32 + 32 * k, 4);
			memcpy(&rs, d + 36 + 32 * k, 4);
			memcpy(&off, d + 40 + 32 * k, 8);
			memcpy(&cnt, d + 48 + 32 * k, 8);
			uint64_t end = off + cnt * rs;
			if (i >= off && i < end)
				snprintf(want, len, "section %u checksum mismatch (corrupt file)", id);
			else if (i >= end && i < kv_snap_align8(end))
				snprintf(want, len, "section %u: padding not zero", id);
		}
	}
}

static void cut_message(size_t n, size_t cut, char *want, size_t len)
{
	if (cut == 0)
		snprintf(want, len, "empty file");
	else if (cut < 32)
		snprintf(want, len, "not a kvsnap snapshot");
	else
		snprintf(want, len, "truncated or padded: %zu bytes, header says %zu", cut, n);
}

/* Opened as kvquery opens a snapshot (the lookup part of a regular file):
 * each complemented byte and each cut is refused with status 65 and the
 * exact words of kvsnap(5); kvquery prints them after its name
 * (faults.bats tries a sample of them through the program). */
static void every_byte_and_cut_named(void)
{
	struct state s;
	make_state(&s);
	size_t n;
	uint8_t *b = write_read(&s, &n);
	char path[] = "/tmp/kvtools-snap-XXXXXX";
	close(mkstemp(path));
	char why[200];
	struct kv_err e = { 0 };
	struct kv_snap snap;
	for (size_t i = 0; i < n; i++) {
		b[i] ^= 0xff;
		write_file(path, b, n);
		b[i] ^= 0xff;
		ASSERT(!kv_snapr_open_regular(path, KV_SNAP_PART_BLOCKS, &snap, &e));
		flip_message(b, n, i, why, sizeof why);
		expect_refusal(&e, path, why);
	}
	for (size_t cut = 0; cut < n; cut++) {
		write_file(path, b, cut);
		ASSERT(!kv_snapr_open_regular(path, KV_SNAP_PART_BLOCKS, &snap, &e));
		cut_message(n, cut, why, sizeof why);
		expect_refusal(&e, path, why);
	}
	write_file(path, b, n);
	ASSERT(kv_snapr_open_regular(path, KV_SNAP_PART_BLOCKS, &snap, &e));
	kv_snapr_close(&snap);
	unlink(path);
	free(b);
	free_state(&s);
}

int main(void)
{
	RUN(round_trip);
	RUN(every_byte_and_cut);
	RUN(every_byte_and_cut_named);
	RUN(damage_with_valid_checksum);
	RUN(order_times_and_bounds);
	RUN(repeated_workers);
	RUN(stream_position);
	RUN(stream_identity);
	RUN(same_bytes_whatever_the_arrival_order);
	RUN(load_refuses_each_fault_at_its_boundary);
	RUN(load_and_write_failures_say_path_and_status);
	RUN(parts_read_when_asked);
	RUN(section_checksum_damaged);
	RUN(section_table_ids_strictly_ascending);
	RUN(blocks_checked_as_read);
	RUN(large_partition_written_as_held);
	RUN(times_checked_at_load);
	RUN(load_stopped_by_a_signal);
	RUN(pipes_bounded_by_their_header);
	return unit_done();
}

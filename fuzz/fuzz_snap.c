/* libFuzzer harness: kvsnap snapshots (kvsnap(5)) through
 * kv_snapr_load and its checks, then through every reader of a snapshot
 * that passed them, so that no such snapshot can crash one: kvmatch --dump,
 * kvquery's lookups, answers and routes (per partition, a walk along the
 * snapshot's own chains by local hashes, and a token query), and kvmatch
 * -i's restore into live structures, written again as kvmatch -o would.
 * The first byte picks the options:
 *   bit 0 keep the input's size and checksum fields (else the harness
 *   writes the right ones, so that mutations get past the checksums to the
 *   checks behind them), bit 1 shared pool, bit 2 every worker (explain,
 *   route), bit 3 restore (and write again).
 * Checked beyond "no crash": a rejected snapshot says why; in a loaded one
 * every block is found by its chain and every partition by its name; the
 * restored state, written again, loads (snapcheck.h). */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "index/blockhash.h"
#include "index/index.h"
#include "index/matchstate.h"
#include "memfile.h"
#include "base/out.h"
#include "query/answer.h"
#include "query/query.h"
#include "index/snap.h"
#include "index/snapload.h"
#include "index/snaplookup.h"
#include "index/snapdump.h"
#include "index/snapstate.h"
#include "snapcheck.h"
#include "index/workers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Blocks looked at per partition, and blocks in a walk, so that a large
 * input stays quick. */
#define MAX_SCAN 1024
#define MAX_WALK 64

/* The size field and the checksums a writer would have put there (in
 * anything that holds a 32-byte header): each section's that lies in the
 * input, then the header's over itself and the table (kvsnap(5)). */
static void fix_up(uint8_t *d, size_t n)
{
	if (n < 32)
		return;
	uint64_t size = n;
	memcpy(d + 16, &size, 8);
	uint32_t nsec;
	memcpy(&nsec, d + 8, 4);
	if (nsec > 64 || 32 + (size_t)nsec * 32 > n)
		return;
	for (uint32_t i = 0; i < nsec; i++) {
		uint8_t *t = d + 32 + (size_t)i * 32;
		uint32_t rs;
		uint64_t off, count;
		memcpy(&rs, t + 4, 4);
		memcpy(&off, t + 8, 8);
		memcpy(&count, t + 16, 8);
		if (rs && off <= n && count <= (n - off) / rs) {
			uint64_t sum = XXH3_64bits(d + off, (size_t)(count * rs));
			memcpy(t + 24, &sum, 8);
		}
	}
	uint8_t buf[24 + 64 * 32];
	memcpy(buf, d, 24);
	memcpy(buf + 24, d + 32, (size_t)nsec * 32);
	uint64_t sum = XXH3_64bits(buf, 24 + (size_t)nsec * 32);
	memcpy(d + 24, &sum, 8);
}

static void check_lookups(const struct kv_snap *s, uint32_t p)
{
	const struct kv_snap_partition *rp = &s->partitions[p];
	uint64_t first = rp->r[KV_RANGE_BLOCKS].first;
	for (uint64_t i = 0; i < rp->r[KV_RANGE_BLOCKS].count && i < MAX_SCAN; i++)
		if (kv_snap_find(s, p, s->chains[first + i]) != first + i)
			__builtin_trap();
	size_t mn, tn;
	const char *model = kv_snap_string(s, rp->model, &mn), *tenant = kv_snap_string(s, rp->tenant, &tn);
	if (kv_snap_partition(s, model, mn, tenant, tn) != (int64_t)p)
		__builtin_trap();
}

/* Local hashes along a path of the snapshot's blocks from the root: in a
 * snapshot kvmatch wrote, the query of these hashes finds every block. */
static size_t walk(const struct kv_snap *s, uint32_t p, uint64_t *locals)
{
	const struct kv_snap_partition *rp = &s->partitions[p];
	uint64_t first = rp->r[KV_RANGE_BLOCKS].first;
	uint64_t n_blocks = rp->r[KV_RANGE_BLOCKS].count, at = KV_CHAIN_ROOT;
	size_t n = 0;
	while (n < MAX_WALK) {
		uint64_t i = 0;
		while (i < n_blocks && i < MAX_SCAN && kv_snap_parent(s, p, first + i) != at)
			i++;
		if (i == n_blocks || i == MAX_SCAN)
			break;
		locals[n++] = s->locals[first + i];
		at = s->chains[first + i];
	}
	return n;
}

/* kvquery's answer and route to one query. */
static void ask(struct kv_querier *q, struct kv_qsource *src, const struct kv_query *req,
		const struct kv_query_opts *o, const char *tenant, size_t tlen)
{
	size_t nhits, nblocks;
	const struct kv_hit *hits = kv_query_run(q, src, req, o, &nhits, &nblocks);
	struct kv_weights wt = KV_WEIGHTS_DEFAULT;
	const struct kv_hit *route = kv_query_route(hits, nhits, &wt, q);
	if (route && (route < hits || route >= hits + nhits))
		__builtin_trap();
	struct kv_out out;
	kv_out_open_mem(&out);
	kv_query_write_answer(&out, src, tenant, tlen, hits, nhits, req->block_size, o->shared_pool);
	for (size_t i = 0; i < nhits; i++) {
		size_t len;
		int64_t dp;
		kv_qsource_worker(src, hits[i].worker, &len, &dp);
	}
	kv_out_free_mem(&out);
}

static void queries(const struct kv_snap *s, uint8_t opt)
{
	struct kv_qsource src;
	struct kv_querier *q = kv_querier_new();
	struct kv_query_opts o = { .shared_pool = opt & 2, .all_workers = opt & 4 };
	uint32_t tokens[48];
	uint64_t locals[MAX_WALK];
	for (uint32_t i = 0; i < 48; i++)
		tokens[i] = i;
	kv_qsource_snap(&src, s);
	for (uint32_t p = 0; p < s->npartitions && p < 8; p++) {
		check_lookups(s, p);
		size_t tlen, bs = s->partitions[p].block_size ? s->partitions[p].block_size : 16;
		const char *tenant = kv_snap_string(s, s->partitions[p].tenant, &tlen);
		size_t nwalk = walk(s, p, locals);
		struct kv_query by_hash = { .part = p, .block_size = bs, .locals = locals, .nlocals = nwalk };
		ask(q, &src, &by_hash, &o, tenant, tlen);
		struct kv_query by_tokens = { .part = p, .block_size = bs, .tokens = tokens, .ntokens = 48 };
		ask(q, &src, &by_tokens, &o, tenant, tlen);
	}
	kv_qsource_free(&src);
	kv_querier_free(q);
}

static uint64_t at_least(uint64_t ttl, uint64_t dflt)
{
	return ttl > dflt ? ttl : dflt;
}

/* kvmatch -i: the snapshot into live structures; then kvmatch -o.  With
 * TTLs no shorter than the snapshot's: its event time reached is judged by
 * the longest of them against the times it holds (kvsnap(5) META), and a
 * run resumed with shorter ones, adding nothing, may write a snapshot whose
 * event time its state no longer vouches for. */
static void restore(const struct kv_snap *s)
{
	struct kv_index ix;
	struct kv_workers ws;
	struct kv_match m;
	struct kv_match_opts mo = kv_match_opts_default();
	mo.log_mask = 0;
	mo.pending_ttl_ns = at_least(s->meta->pending_ttl_ns, mo.pending_ttl_ns);
	mo.offload_ttl_ns = at_least(s->meta->offload_ttl_ns, mo.offload_ttl_ns);
	mo.content_ttl_ns = at_least(s->meta->content_ttl_ns, mo.content_ttl_ns);
	kv_index_init(&ix);
	kv_workers_init(&ws);
	kv_match_init(&m, &ix, &ws, &mo);
	kv_snapstate_restore(s, &ix, &ws, &m);
	snapcheck(&ix, &ws, &m);
	kv_match_free(&m);
	kv_workers_free(&ws);
	kv_index_free(&ix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t opt = data[0];
	size_t n = size - 1;
	uint8_t *d = malloc(n ? n : 1);
	memcpy(d, data + 1, n);
	if (!(opt & 1))
		fix_up(d, n);
	const char *path = fuzz_memfile(d, n);
	free(d);
	struct kv_snap s;
	struct kv_err e = { 0 };
	if (!kv_snapr_load(path, &s, &e)) {
		if (!kv_err_any(&e))
			__builtin_trap();
		kv_err_clear(&e);
		return 0;
	}
	struct kv_out out;
	kv_out_open_mem(&out);
	kv_snap_dump(&s, &out);
	kv_out_free_mem(&out);
	queries(&s, opt);
	if (opt & 8)
		restore(&s);
	kv_snapr_close(&s);
	return 0;
}

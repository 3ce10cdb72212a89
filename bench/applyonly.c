/* bench/applyonly.c: kvmatch's matcher alone, the events decoded ahead, so
 * that bench/run can put its rate beside a peer's figure for the same work
 * (Dynamo's positional indexer, fed prepared events: doc/benchmarks.md
 * "What the misses are").  Reads a capture whole, copying every batch out of the
 * decoder's buffers, then feeds the batches to the matcher as kvmatch -q
 * --log none does (registrations and their partitions first, then
 * kv_match_feed, kvmatch's call, per batch) and prints three lines:
 *   apply_ns T            the time of applying all the batches, in ns
 *   blocks B              blocks in the index after them
 *   holdings H            (block, worker) pairs in it
 * Usage: applyonly CAPTURE [REGISTRATIONS]
 * A capture with a record that failed, lost records, problems or
 * extra_keys is refused (exit 65): those take kvmatch's other paths. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/util.h"
#include "decode/source.h"
#include "index/index.h"
#include "index/match.h"
#include "index/matchfeed.h"
#include "index/workers.h"

/* Memory for the decoded batches: chunks handed out in order, freed all
 * at once at the end. */
struct arena {
	char *p;
	size_t left;
	char **chunks;
	size_t nchunks;
};

#define CHUNK ((size_t)64 << 20)

static void *arena_copy(struct arena *a, const void *src, size_t n)
{
	n = (n + 7) & ~(size_t)7;
	if (n > a->left || !a->p) {
		size_t size = n > CHUNK ? n : CHUNK;
		a->p = kv_xmalloc(size);
		a->left = size;
		a->chunks = kv_xrealloc(a->chunks, (a->nchunks + 1) * sizeof *a->chunks);
		a->chunks[a->nchunks++] = a->p;
	}
	void *d = a->p;
	if (src)
		memcpy(d, src, n);
	a->p += n;
	a->left -= n;
	return d;
}

static void arena_free(struct arena *a)
{
	for (size_t i = 0; i < a->nchunks; i++)
		free(a->chunks[i]);
	free(a->chunks);
}

static struct kv_str copy_str(struct arena *a, struct kv_str s)
{
	return (struct kv_str){ s.n ? arena_copy(a, s.p, s.n) : s.p, s.n };
}

static void copy_event(struct arena *a, struct kv_event *e)
{
	if (e->extra_keys || e->raw_hashes)
		kv_die(KV_EX_DATAERR, "an event with extra_keys or raw hashes: not what this probe times");
	struct kv_str *strs[] = { &e->src, &e->topic, &e->lora_name, &e->spec_kind, &e->medium_raw,
				  &e->backend_id, &e->model_name, &e->tenant_id, &e->object_key, &e->locality,
				  &e->ownership, &e->additional_salt, &e->event_id.s, &e->group_id.s, &e->extra_json };
	for (size_t i = 0; i < sizeof strs / sizeof(struct kv_str *); i++)
		*strs[i] = copy_str(a, *strs[i]);
	if (e->nhashes)
		e->hashes = arena_copy(a, e->hashes, e->nhashes * sizeof *e->hashes);
	if (e->ntokens)
		e->tokens = arena_copy(a, e->tokens, e->ntokens * sizeof *e->tokens);
}

/* The batches as kv_match_feed takes them: the record's context and its
 * events, nothing failed, lost or with problems (refused when read). */
static struct kv_batch *read_capture(const char *path, size_t *nbatches, struct arena *a)
{
	char *files[] = { (char *)path };
	struct kv_source_opts so = { .allow_json = false };
	struct kv_source *src = kv_source_new(files, 1, &so);
	struct kv_err e = { 0 };
	struct kv_batch b;
	struct kv_batch *v = NULL;
	size_t n = 0, cap = 0;
	enum kv_source_status st;
	while ((st = kv_source_next(src, &b, &e)) == KV_SOURCE_BATCH) {
		if (b.error || b.lost || b.nissues)
			kv_die(KV_EX_DATAERR, "%s: record %" PRIu64 " failed, was lost or has problems", path, b.record);
		if (n == cap)
			v = kv_xrealloc(v, (cap = cap ? 2 * cap : 4096) * sizeof *v);
		struct kv_batch *c = &v[n++];
		*c = (struct kv_batch){ .file = path, .kind = b.kind, .record = b.record, .ctx = b.ctx, .nev = b.nev };
		c->ctx.src = copy_str(a, b.ctx.src);
		c->ctx.topic = copy_str(a, b.ctx.topic);
		struct kv_event *ev = arena_copy(a, b.ev, b.nev * sizeof *b.ev);
		for (size_t i = 0; i < b.nev; i++)
			copy_event(a, &ev[i]);
		c->ev = ev;
	}
	if (st != KV_SOURCE_END)
		kv_err_exit(&e);
	kv_source_free(src);
	*nbatches = n;
	return v;
}

int main(int argc, char **argv)
{
	kv_set_prog(argv);
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: applyonly CAPTURE [REGISTRATIONS]\n");
		return KV_EX_USAGE;
	}
	struct arena a = { 0 };
	size_t n;
	struct kv_batch *v = read_capture(argv[1], &n, &a);
	struct kv_workers ws;
	struct kv_index ix;
	kv_workers_init(&ws);
	struct kv_err e = { 0 };
	if (argc == 3 && !kv_workers_load(&ws, argv[2], &e))
		kv_err_exit(&e);
	kv_index_init(&ix);
	struct kv_match_opts o = kv_match_opts_default();
	o.log_mask = 0;                  /* --log none */
	struct kv_match *m = kv_match_new(&ix, &ws, &o);
	kv_match_create_registered(m);
	uint64_t t0 = kv_monotonic_ns();
	for (size_t i = 0; i < n; i++)
		kv_match_feed(m, &v[i], NULL);
	uint64_t t1 = kv_monotonic_ns();
	printf("apply_ns %" PRIu64 "\nblocks %" PRIu64 "\nholdings %" PRIu64 "\n", t1 - t0, kv_index_blocks(&ix),
	       kv_index_holdings(&ix));
	kv_match_delete(m);
	kv_index_free(&ix);
	kv_workers_free(&ws);
	free(v);
	arena_free(&a);
	return ferror(stdout) || fflush(stdout) ? KV_EX_IOERR : KV_EX_OK;
}

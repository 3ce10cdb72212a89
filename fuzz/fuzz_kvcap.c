/* libFuzzer harness: a whole input file read as kvdecode and kvmatch read
 * one (lib/source: kvcap captures, concatenated ones, truncation, garbage,
 * bare payload streams with --payload, event JSON lines where kvmatch
 * allows them), every batch handled as kvdecode does (messages, error
 * lines, event lines) and, by option, fed to a matcher as kvmatch feeds it
 * (index/matchfeed.h: stream duplicates, failed and lost records, problem
 * lines, events).
 * The first byte picks the options:
 *   bit 0 --payload, bit 1 JSON lines allowed (kvmatch), bit 2 --decimal-strings,
 *   bit 3 --raw-hashes, bit 4 apply the events to a matcher (kvmatch),
 *   bit 5 with bit 4, write the snapshot at the end (kvmatch -o) and load it
 *   (snapcheck.h).
 * Checked beyond "no crash": a batch with an error has no events, a
 * batch's location message is terminated text, and a snapshot kvmatch
 * writes, whatever its input, loads (kvquery and kvmatch -i accept it). */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "decode/evjson.h"
#include "index/index.h"
#include "index/matchfeed.h"
#include "index/matchstate.h"
#include "memfile.h"
#include "base/out.h"
#include "snapcheck.h"
#include "decode/source.h"
#include "index/statelog.h"
#include "index/workers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct matcher {
	struct kv_index ix;
	struct kv_workers ws;
	struct kv_match m;
	struct kv_out *out;
};

static void on_report(void *arg, const struct kv_report *r)
{
	struct matcher *mt = arg;
	kv_statelog_write(mt->out, r, &mt->ws, &mt->ix);
}

static void matcher_init(struct matcher *mt, struct kv_out *out)
{
	memset(mt, 0, sizeof *mt);
	mt->out = out;
	struct kv_match_opts o = kv_match_opts_default();
	o.log_mask = ~0u;
	o.report = on_report;
	o.report_arg = mt;
	kv_index_init(&mt->ix);
	kv_workers_init(&mt->ws);
	kv_match_init(&mt->m, &mt->ix, &mt->ws, &o);
}

static void matcher_free(struct matcher *mt)
{
	kv_match_free(&mt->m);
	kv_workers_free(&mt->ws);
	kv_index_free(&mt->ix);
}

/* kvdecode's handling of one batch, with -e (error lines). */
static void decode(struct kv_evjson *j, struct kv_out *o, const struct kv_batch *b)
{
	char where[400];
	kv_batch_where(b, where, sizeof where);
	if (memchr(where, 0, sizeof where) == NULL)
		__builtin_trap();
	if (b->error) {
		if (b->nev)
			__builtin_trap();
		kv_evjson_write_error(o, &b->ctx, b->record, b->error);
		return;
	}
	for (unsigned i = 0; i < b->nissues && i < KV_WIRE_MAX_ISSUES; i++)
		kv_evjson_write_error(o, &b->ctx, b->record, b->issues[i]);
	if (b->nev == 0)
		return;
	kv_evjson_record(j, &b->ctx);
	for (size_t i = 0; i < b->nev; i++)
		kv_evjson_write(j, o, &b->ev[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t opt = data[0];
	struct kv_source_opts so = { .payload = opt & 1, .allow_json = opt & 2 };
	so.wire.hash.decimal_strings = opt & 4;
	so.wire.raw_hashes = opt & 8;
	so.stream_headers = opt & 16; /* kvmatch reads the headers that name a stream */
	char *files[] = { (char *)fuzz_memfile(data + 1, size - 1) };
	struct kv_source *src = kv_source_new(files, 1, &so);
	struct kv_out o;
	kv_out_open_mem(&o);
	struct kv_evjson j;
	kv_evjson_init(&j);
	struct matcher mt;
	bool match = opt & 16;
	if (match)
		matcher_init(&mt, &o);
	struct kv_batch b;
	struct kv_err e = { 0 };
	while (kv_source_next(src, &b, &e) == KV_SOURCE_BATCH) {
		if (match)
			kv_match_feed(&mt.m, &b, NULL); /* kvmatch's handling of a batch */
		else
			decode(&j, &o, &b);
		o.len = 0; /* the output is not kept: only its writing is exercised */
	}
	if (match && (opt & 32))
		snapcheck(&mt.ix, &mt.ws, &mt.m);
	if (match)
		matcher_free(&mt);
	kv_evjson_free(&j);
	kv_out_free_mem(&o);
	kv_source_free(src);
	kv_err_clear(&e);
	return 0;
}

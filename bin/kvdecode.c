/* kvdecode: KV-cache event captures (or bare payloads) to JSON lines. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/evjson.h"
#include "base/err.h"
#include "base/input.h"
#include "base/out.h"
#include "base/progress.h"
#include "decode/source.h"
#include "decode/srcstats.h"
#include "base/util.h"

static const char usage[] =
	"Usage: kvdecode [OPTION]... [FILE]...\n"
	"Decode kvcap captures of KV-cache events (vLLM, SGLang, TensorRT-LLM, Dynamo's\n"
	"event plane, memcache, Mooncake) into JSON lines, one event per line.  With no\n"
	"FILE, or when FILE is -, read standard input.\n"
	"\n"
	"  -o, --output FILE       write the JSON lines to FILE\n"
	"  -e, --errors            also write each undecodable record as a {\"type\":\"error\"} line\n"
	"      --payload           the input is bare MessagePack payloads, not a capture\n"
	"      --stats             per-source counts on standard error at the end\n"
	"      --decimal-strings   read hash strings without 0x as decimal, not hex\n"
	"      --raw-hashes        add raw_hashes: each hash as it was on the wire\n"
	"      --progress          a progress line on standard error, even when it is not a\n"
	"                          terminal (then a whole line a second)\n"
	"      --no-progress       no progress line (the default on a terminal is one)\n"
	"  -q, --quiet             no messages about bad records, no progress line (the exit\n"
	"                          status still tells)\n"
	"  -v, --verbose           also report events of unknown types\n"
	"  -h, --help              show this help and exit\n"
	"  -V, --version           show the version and exit\n"
	"\n"
	"Exit status: 0 success, 64 usage, 65 some input could not be decoded (all the\n"
	"rest was), 66 an input could not be opened, 70 internal error (out of memory),\n"
	"74 write error.  See kvdecode(1).\n";

enum { OPT_PAYLOAD = 256, OPT_STATS, OPT_DECIMAL, OPT_RAW };

static const struct option longopts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "errors", no_argument, NULL, 'e' },
	{ "payload", no_argument, NULL, OPT_PAYLOAD },
	{ "stats", no_argument, NULL, OPT_STATS },
	{ "decimal-strings", no_argument, NULL, OPT_DECIMAL },
	{ "raw-hashes", no_argument, NULL, OPT_RAW },
	KV_PROGRESS_OPTIONS,
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

struct options {
	const char *output;
	bool errors, stats;
	int quiet, verbose;
	int progress;            /* --progress 1, --no-progress -1 */
	struct kv_source_opts src;
};

static void parse_options(int argc, char **argv, struct options *o)
{
	int c;
	while ((c = getopt_long(argc, argv, "o:eqvhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': o->output = optarg; break;
		case 'e': o->errors = true; break;
		case OPT_PAYLOAD: o->src.payload = true; break;
		case OPT_STATS: o->stats = true; break;
		case OPT_DECIMAL: o->src.wire.hash.decimal_strings = true; break;
		case OPT_RAW: o->src.wire.raw_hashes = true; break;
		case KV_OPT_PROGRESS: o->progress = 1; break;
		case KV_OPT_NO_PROGRESS: o->progress = -1; break;
		case 'q': o->quiet++; break;
		case 'v': o->verbose++; break;
		case 'h': kv_print_help(usage);
		case 'V': kv_print_version();
		default: kv_try_help();
		}
	}
}

struct run {
	const struct options *o;
	struct kv_out *out;
	struct kv_evjson json;
	struct kv_srcstats stats;
	uint64_t bad;            /* records, events and hashes that could not be decoded */
	struct kv_source *src;
	struct kv_progress progress;
	uint64_t records, events;
};

static void show_progress(struct run *r)
{
	kv_progress_show(&r->progress, kv_source_bytes(r->src), r->records, r->events);
}

/* When input is not ready: what was decoded goes out, and the line says
 * the time that passes. */
static void on_idle(void *arg)
{
	struct run *r = arg;
	kv_out_flush(r->out);
	if (kv_progress_idle_due(&r->progress))
		show_progress(r);
}

static void report(struct run *r, const struct kv_batch *b, const char *what)
{
	char where[400];
	r->bad++;
	if (!r->o->quiet) {
		kv_progress_hide(&r->progress);
		kv_batch_where(b, where, sizeof where);
		kv_warn("%s: %s", where, what);
	}
	if (r->o->errors)
		kv_evjson_write_error(r->out, &b->ctx, b->record, what);
}

static void count(struct run *r, const struct kv_batch *b)
{
	/* a record without a source (a cut capture) is counted under the input's
	 * name, as its messages call it */
	struct kv_srcstat *st = b->ctx.src.n ? kv_srcstats_get(&r->stats, b->ctx.src.p, b->ctx.src.n)
					     : kv_srcstats_get(&r->stats, b->file, strlen(b->file));
	if (!st)
		return; /* beyond the limit: counted by the stats themselves */
	/* An undecodable record still arrived: its seq counts, or the next
	 * batch would look like a gap. */
	if (b->ctx.has_seq)
		kv_seq_observe(&st->seq, b->ctx.seq);
	if (b->error) {
		st->errors++;
		return;
	}
	st->batches++;
	st->replayed += b->ctx.replayed;
	st->ignored += b->ignored;
	st->errors += b->nissues;
	for (size_t i = 0; i < b->nev; i++)
		st->events[b->ev[i].format][b->ev[i].type]++;
}

static void handle(struct run *r, const struct kv_batch *b)
{
	if (r->o->stats)
		count(r, b);
	if (b->error) {
		report(r, b, b->error);
		/* Without -e the record leaves a line all the same: a reader that
		 * counts seq (kvmatch) must not take it for a gap. */
		if (!r->o->errors && !b->fatal)
			kv_evjson_write_no_events(r->out, &b->ctx, b->record, false);
		return;
	}
	for (unsigned i = 0; i < b->nissues && i < KV_WIRE_MAX_ISSUES; i++)
		report(r, b, b->issues[i]);
	if (b->nissues > KV_WIRE_MAX_ISSUES) {
		char more[80];
		snprintf(more, sizeof more, "%u more problems in this record", b->nissues - KV_WIRE_MAX_ISSUES);
		report(r, b, more);
		r->bad += b->nissues - KV_WIRE_MAX_ISSUES - 1;
	}
	if (b->ignored && r->o->verbose) {
		char where[400];
		kv_progress_hide(&r->progress);
		kv_batch_where(b, where, sizeof where);
		kv_warn("%s: %u events of unknown types ignored", where, b->ignored);
	}
	if (b->nev == 0) {
		kv_evjson_write_no_events(r->out, &b->ctx, b->record, true);
		return;
	}
	kv_evjson_record(&r->json, &b->ctx);
	for (size_t i = 0; i < b->nev; i++)
		kv_evjson_write(&r->json, r->out, &b->ev[i]);
	kv_out_flush_if_full(r->out);
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	kv_start(argv);
	parse_options(argc, argv, &o);
	size_t nfiles = (size_t)(argc - optind);
	struct kv_err e = { 0 };
	if (!kv_out_refuse_inputs("-o", o.output, argv + optind, nfiles, &e))
		kv_err_exit(&e);
	struct kv_out out;
	if (!kv_out_open(&out, o.output, &e))
		return kv_err_print(&e);
	kv_install_signals(false);
	struct run r = { .o = &o, .out = &out };
	o.src.idle = on_idle;
	o.src.idle_arg = &r;
	kv_evjson_init(&r.json);
	kv_srcstats_init(&r.stats);
	kv_progress_init(&r.progress, kv_progress_choose(o.progress, o.quiet, !o.output || strcmp(o.output, "-") == 0),
			 "records", "events");
	uint64_t total;
	bool known = kv_inputs_size(argv + optind, nfiles, &total);
	kv_progress_set_total(&r.progress, known, total);
	struct kv_source *src = kv_source_new(argv + optind, nfiles, &o.src);
	r.src = src;
	struct kv_batch b;
	enum kv_source_status st = KV_SOURCE_END;
	int status = KV_EX_OK;
	while (!kv_out_failed(&out) && (st = kv_source_next(src, &b, &e)) != KV_SOURCE_END && st != KV_SOURCE_STOPPED) {
		if (st == KV_SOURCE_UNOPENED) {
			kv_progress_hide(&r.progress);
			status = kv_status_merge(status, kv_err_print(&e));
			continue;
		}
		handle(&r, &b);
		r.records++;
		r.events += b.nev;
		if (kv_progress_due(&r.progress))
			show_progress(&r);
	}
	kv_progress_end(&r.progress, kv_source_bytes(src), r.records, r.events);
	if (st == KV_SOURCE_STOPPED && !o.quiet) {
		const char *product = o.output ? o.output : "-";
		kv_say_stopped(&product, 1);
	}
	if (!kv_out_finish(&out, nfiles && kv_source_open_failures(src) == nfiles, &e))
		status = kv_status_merge(status, kv_err_print(&e));
	if (o.stats)
		kv_srcstats_print(&r.stats, stderr);
	if (r.bad && !kv_out_reader_gone(&out))
		status = kv_status_merge(status, KV_EX_DATAERR);
	kv_source_free(src);
	kv_evjson_free(&r.json);
	kv_srcstats_free(&r.stats);
	return status;
}

/* kvmatch: two-phase matching of engine and pool events into a prefix index. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/diagnose.h"
#include "index/index.h"
#include "index/match.h"
#include "index/matchfeed.h"
#include "index/matchmetrics.h"
#include "base/err.h"
#include "base/input.h"
#include "base/metrics.h"
#include "base/out.h"
#include "base/progress.h"
#include "index/regs.h"
#include "index/snap.h"
#include "index/snapload.h"
#include "index/snapdump.h"
#include "index/snapstate.h"
#include "decode/source.h"
#include "index/statelog.h"
#include "base/util.h"
#include "base/utf8.h"
#include "index/workers.h"

static const char usage[] =
	"Usage: kvmatch [OPTION]... [FILE]...\n"
	"Match KV-cache pool events with engine offload events (two-phase matching)\n"
	"and build the prefix index that routing decisions come from.  FILE holds\n"
	"event JSON lines (from kvdecode) or a kvcap capture; with no FILE, or when\n"
	"FILE is -, read standard input.  State changes are written as JSON lines.\n"
	"\n"
	"  -r, --registrations FILE  workers and pool subscribers (kv-conductor /register bodies)\n"
	"  -o, --output FILE.kvsnap  write the snapshot there at the end of input, on SIGUSR1\n"
	"                            and every --snapshot-every seconds of event time\n"
	"  -i, --input-snapshot FILE.kvsnap  resume from a snapshot\n"
	"      --snapshot-every SECS write the snapshot every SECS of event time\n"
	"      --log STATES          state lines to write: all, none, or a list of received,\n"
	"                            parsed, queued, offload_cached, matched, confirmed, applied,\n"
	"                            dropped, pending_expired (default: matched,confirmed,\n"
	"                            dropped,pending_expired)\n"
	"      --pending-ttl SECS    pool events wait this long for their engine event (60)\n"
	"      --offload-ttl SECS    engine offloads wait this long for a pool (600)\n"
	"      --content-ttl SECS    content of released blocks is kept this long (300)\n"
	"      --max-pending N       at most N pending entries; the oldest expire first (1000000)\n"
	"      --expect-blocks N     make the index's tables for N blocks from the start, so that\n"
	"                            none is copied while it grows (memory is taken ahead)\n"
	"      --match ip|none       pool targets: workers on the event's backend_id host (ip,\n"
	"                            the default), or the pool subscriber's own worker (none)\n"
	"      --backend-serves ID=INSTANCE[,INSTANCE]...  pool events with backend_id ID\n"
	"                            are about these instances (every DP rank); repeatable\n"
	"      --decimal-strings     hash strings without 0x in captures are decimal\n"
	"      --metrics FILE        Prometheus metrics (kvtools_match_*), rewritten every 5 s\n"
	"      --metrics-interval SECS  rewrite the metrics every SECS instead\n"
	"      --diagnose[=text|json]  at the end (and on SIGUSR2) report what looks wrong, with\n"
	"                            the evidence and the likely cause, on standard error\n"
	"      --dump FILE.kvsnap    print a snapshot as JSON lines and exit\n"
	"      --progress            a progress line on standard error, even when it is not a\n"
	"                            terminal (then a whole line a second)\n"
	"      --no-progress         no progress line (the default on a terminal is one)\n"
	"  -q, --quiet               no statistics, no messages about bad input, no progress line\n"
	"  -v, --verbose             more messages\n"
	"  -h, --help                show this help and exit\n"
	"  -V, --version             show the version and exit\n"
	"\n"
	"Exit status: 0 success, 64 usage, 65 bad input (everything else was applied),\n"
	"66 cannot open an input, 70 internal error (out of memory), 74 write error.\n"
	"See kvmatch(1) and kvsnap(5).\n";

enum { OPT_EVERY = 256, OPT_LOG, OPT_PENDING_TTL, OPT_OFFLOAD_TTL, OPT_CONTENT_TTL, OPT_MAX_PENDING, OPT_MATCH,
       OPT_DECIMAL, OPT_DUMP, OPT_METRICS, OPT_METRICS_INTERVAL, OPT_DIAGNOSE, OPT_BACKEND_SERVES,
       OPT_EXPECT_BLOCKS };

static const struct option longopts[] = {
	{ "registrations", required_argument, NULL, 'r' },
	{ "output", required_argument, NULL, 'o' },
	{ "input-snapshot", required_argument, NULL, 'i' },
	{ "snapshot-every", required_argument, NULL, OPT_EVERY },
	{ "log", required_argument, NULL, OPT_LOG },
	{ "pending-ttl", required_argument, NULL, OPT_PENDING_TTL },
	{ "offload-ttl", required_argument, NULL, OPT_OFFLOAD_TTL },
	{ "content-ttl", required_argument, NULL, OPT_CONTENT_TTL },
	{ "max-pending", required_argument, NULL, OPT_MAX_PENDING },
	{ "expect-blocks", required_argument, NULL, OPT_EXPECT_BLOCKS },
	{ "match", required_argument, NULL, OPT_MATCH },
	{ "backend-serves", required_argument, NULL, OPT_BACKEND_SERVES },
	{ "decimal-strings", no_argument, NULL, OPT_DECIMAL },
	{ "dump", required_argument, NULL, OPT_DUMP },
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "metrics-interval", required_argument, NULL, OPT_METRICS_INTERVAL },
	{ "diagnose", optional_argument, NULL, OPT_DIAGNOSE },
	KV_PROGRESS_OPTIONS,
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

struct options {
	const char *regs, *snapshot, *resume, *dump, *metrics;
	bool diagnose;
	enum kv_diag_format diag_format;
	uint64_t every_ns, metrics_ns;
	uint64_t expect_blocks;
	int quiet, verbose;
	int progress;            /* --progress 1, --no-progress -1 */
	struct kv_match_opts match;
	struct kv_source_opts src;
	struct kv_workers *ws;   /* --backend-serves goes straight into the workers */
};

static uint64_t seconds_option(const char *name, const char *arg, bool zero_ok)
{
	uint64_t ns;
	if (!kv_parse_seconds(arg, 1e9, &ns) || (!zero_ok && ns == 0))
		kv_usage_error("%s: '%s' is not a %snumber of seconds", name, arg, zero_ok ? "" : "positive ");
	return ns;
}

/* --diagnose's optional argument: text (the default) or json. */
static enum kv_diag_format diag_format(const char *arg)
{
	if (!arg || strcmp(arg, "text") == 0)
		return KV_DIAG_TEXT;
	if (strcmp(arg, "json") != 0)
		kv_usage_error("--diagnose: '%s' is not text or json", arg);
	return KV_DIAG_JSON;
}

static void parse_options(int argc, char **argv, struct options *o)
{
	int c;
	const char *why;
	o->match = kv_match_opts_default();
	o->src.allow_json = true;
	o->src.stream_headers = true;
	o->src.read_ahead = true;
	while ((c = getopt_long(argc, argv, "r:o:i:qvhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': o->regs = optarg; break;
		case 'o': o->snapshot = optarg; break;
		case 'i': o->resume = optarg; break;
		case OPT_EVERY: o->every_ns = seconds_option("--snapshot-every", optarg, false); break;
		case OPT_LOG:
			if ((why = kv_state_mask_parse(optarg, &o->match.log_mask)))
				kv_usage_error("--log: '%s' is not all, none or a list of states: %s", optarg, why);
			break;
		case OPT_PENDING_TTL: o->match.pending_ttl_ns = seconds_option("--pending-ttl", optarg, false); break;
		case OPT_OFFLOAD_TTL: o->match.offload_ttl_ns = seconds_option("--offload-ttl", optarg, false); break;
		case OPT_CONTENT_TTL: o->match.content_ttl_ns = seconds_option("--content-ttl", optarg, false); break;
		case OPT_MAX_PENDING:
			if (!kv_parse_u64(optarg, 1, UINT32_MAX, &o->match.max_pending))
				kv_usage_error("--max-pending: '%s' is not a count of 1 or more", optarg);
			break;
		case OPT_EXPECT_BLOCKS:
			if (!kv_parse_u64(optarg, 0, KV_MAX_EXPECT_BLOCKS, &o->expect_blocks))
				kv_usage_error("--expect-blocks: '%s' is not a count from 0 to %" PRIu64, optarg,
					       (uint64_t)KV_MAX_EXPECT_BLOCKS);
			break;
		case OPT_MATCH:
			if (strcmp(optarg, "ip") != 0 && strcmp(optarg, "none") != 0)
				kv_usage_error("--match: '%s' is not ip or none", optarg);
			o->match.match_none = strcmp(optarg, "none") == 0;
			break;
		case OPT_BACKEND_SERVES:
			if ((why = kv_workers_add_serves(o->ws, optarg)))
				kv_usage_error("--backend-serves: '%s' is not BACKEND_ID=INSTANCE[,INSTANCE]...: %s", optarg,
					       why);
			break;
		case OPT_DECIMAL: o->src.wire.hash.decimal_strings = true; break;
		case OPT_DUMP: o->dump = optarg; break;
		case OPT_METRICS: o->metrics = optarg; break;
		case OPT_METRICS_INTERVAL: o->metrics_ns = seconds_option("--metrics-interval", optarg, false); break;
		case OPT_DIAGNOSE:
			o->diagnose = true;
			o->diag_format = diag_format(optarg);
			break;
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

/* Options that mean nothing without another one are usage errors, not
 * silently ignored. */
static void check_option_pairs(const struct options *o)
{
	if (o->every_ns && !o->snapshot)
		kv_usage_error("--snapshot-every: no snapshot to write (-o FILE.kvsnap)");
}

/* -o and --metrics may not name an input, nor each other or standard
 * output (the state lines); -i may be -o (resuming a snapshot and writing
 * it back), which is written by rename. */
static void refuse_outputs_over_inputs(const struct options *o, char *const *files, size_t nfiles)
{
	struct kv_err e = { 0 };
	const struct kv_out_name outs[] = { { NULL, "-" }, { "-o", o->snapshot }, { "--metrics", o->metrics } };
	if (!kv_out_refuse_same(outs, sizeof outs / sizeof outs[0], &e) ||
	    !kv_out_refuse_inputs("-o", o->snapshot, files, nfiles, &e) ||
	    !kv_out_refuse_input("-o", o->snapshot, o->regs, &e) ||
	    !kv_out_refuse_inputs("--metrics", o->metrics, files, nfiles, &e) ||
	    !kv_out_refuse_input("--metrics", o->metrics, o->regs, &e) ||
	    !kv_out_refuse_input("--metrics", o->metrics, o->resume, &e))
		kv_err_exit(&e);
}

struct run {
	const struct options *o;
	struct kv_out *out;
	struct kv_index ix;
	struct kv_workers ws;
	struct kv_match *m;
	uint64_t bad;
	int status;                   /* of the failures met so far (kv_status_merge) */
	uint64_t next_snapshot;
	struct kv_metrics metrics;
	bool metrics_failed;
	struct kv_source *src;
	bool resumed_position;        /* -i's snapshot had a stream position: ... */
	uint64_t resumed_at;          /* ... this one */
	struct kv_progress progress;
	uint64_t records, events;
};

static void show_progress(struct run *r)
{
	kv_progress_show(&r->progress, kv_source_bytes(r->src), r->records, r->events);
}

static void on_report(void *arg, const struct kv_report *r)
{
	struct run *run = arg;
	kv_statelog_write(run->out, r, &run->ws, &run->ix);
}

static void write_snapshot(struct run *r);

static void write_metrics(struct run *r)
{
	struct kv_err e = { 0 };
	if (kv_match_write_metrics(r->m, &r->metrics, &e))
		return;
	if (!r->metrics_failed) {
		kv_progress_hide(&r->progress);
		r->status = kv_status_merge(r->status, kv_err_print(&e));
	}
	kv_err_clear(&e);
	r->metrics_failed = true;
}

/* SIGUSR1 writes the snapshot, SIGUSR2 a diagnosis; metrics are written on time. */
static void between_records(struct run *r)
{
	int sig = kv_take_user_signal();
	if (sig == SIGUSR1) {
		write_snapshot(r);
	} else if (sig == SIGUSR2) {
		kv_progress_hide(&r->progress);
		kv_diagnose(r->m, r->o->diag_format, stderr);
	}
	if (r->o->metrics && kv_metrics_due(&r->metrics))
		write_metrics(r);
}

/* When input is not ready or a signal arrived. */
static void on_idle(void *arg)
{
	struct run *r = arg;
	kv_out_flush(r->out);
	between_records(r);
	if (kv_progress_idle_due(&r->progress))
		show_progress(r);
}

static void write_snapshot(struct run *r)
{
	if (!r->o->snapshot)
		return;
	uint64_t t0 = kv_monotonic_ns();
	struct kv_err e = { 0 };
	bool written = kv_snapstate_save(r->o->snapshot, &r->ix, &r->ws, r->m, &e);
	if (!written || (r->o->verbose && !r->o->quiet))
		kv_progress_hide(&r->progress);
	if (!written)
		r->status = kv_status_merge(r->status, kv_err_print(&e));
	else if (r->o->verbose && !r->o->quiet) {
		kv_warn("%s: %" PRIu64 " blocks written in %.1f ms", r->o->snapshot, kv_index_blocks(&r->ix),
			(double)(kv_monotonic_ns() - t0) / 1e6);
	}
}

/* A record that failed or one of its problems: counted, and said unless
 * -q (those past KV_WIRE_MAX_ISSUES have no text: counted only). */
static void problem_seen(void *arg, const struct kv_batch *b, const char *what)
{
	struct run *r = arg;
	char where[400];
	r->bad++;
	if (r->o->quiet || !what)
		return;
	kv_progress_hide(&r->progress);
	kv_batch_where(b, where, sizeof where);
	kv_warn("%s: %s", where, what);
}

/* Periodic snapshots follow event time, so replaying gives the same ones:
 * the state just before the first record at or past each boundary, whatever
 * line of it comes first (an event, a problem, a no_events line).  Event
 * time as kvmatch takes it (a suspect jump does not move it), and no
 * boundary past 2^64-1: UINT64_MAX says there is none. */
static void snapshot_if_due(void *arg, const struct kv_batch *b)
{
	struct run *r = arg;
	bool suspect;
	if (!r->o->every_ns || b->fatal || r->next_snapshot == UINT64_MAX)
		return;
	uint64_t t = kv_match_record_time(r->m, b->ctx.recv_ns, &suspect);
	if (t < r->next_snapshot)
		return;
	if (r->next_snapshot)
		write_snapshot(r);
	uint64_t slot = t / r->o->every_ns + 1;
	r->next_snapshot = slot > UINT64_MAX / r->o->every_ns ? UINT64_MAX : slot * r->o->every_ns;
}

/* "x.kvsnap's position, message 5" or "the position reached, message 5". */
static void position_reached(const struct run *r, uint64_t position, char *buf, size_t n)
{
	if (r->resumed_position && position == r->resumed_at)
		snprintf(buf, n, "%s's position, message %" PRIu64, r->o->resume, position);
	else
		snprintf(buf, n, "the position reached, message %" PRIu64, position);
}

/* A header naming the stream the records after it come from (kvnats -C):
 * another stream than the position reached is in, or a start after it,
 * is said, and 65; another stream's records are not read, since none of
 * them could be told from one applied already by its position. */
static void stream_begins(void *arg, const struct kv_batch *b, enum kv_stream_verdict v,
			  const struct kv_stream_reached *reached)
{
	struct run *r = arg;
	const struct kv_cap_stream *st = b->stream;
	struct kv_stream_reached was = *reached;
	char at[600], when[KV_UTC_NS_LEN], then[KV_UTC_NS_LEN], name[256], reached_name[256];
	position_reached(r, was.position, at, sizeof at);
	/* a name's every byte shown, a NUL among them as any control is */
	kv_printable(name, sizeof name, st->name, st->name_len);
	kv_printable(reached_name, sizeof reached_name, was.stream ? was.stream : "", was.stream_len);
	kv_progress_hide(&r->progress);
	if (v == KV_STREAM_OTHER) {
		r->status = kv_status_merge(r->status, KV_EX_DATAERR);
		kv_source_skip_input(r->src);
		if (!r->o->quiet)
			kv_warn("%s: stream %s created %s is not stream %s created %s, of %s: the positions of two "
				"streams are not comparable; the rest of this input is not read", b->file,
				name, kv_utc_ns(st->created_ns, when), reached_name,
				kv_utc_ns(was.created_ns, then), at);
	} else if (v == KV_STREAM_GAP) {
		r->status = kv_status_merge(r->status, KV_EX_DATAERR);
		if (!r->o->quiet)
			kv_warn("%s: stream %s: this input starts after message %" PRIu64 ", not after %s: messages %"
				PRIu64 " to %" PRIu64 " are missing (kvnats -C --after SNAPSHOT starts right after a "
				"snapshot's position)", b->file, name, st->after, at,
				was.position + 1, st->after);
	} else if (v == KV_STREAM_UNCHECKED && !r->o->quiet) {
		kv_warn("%s: stream %s: %s names no stream (an older kvmatch wrote it): that this input continues "
			"it is not checked", b->file, name, at);
	}
}

static void handle(struct run *r, const struct kv_batch *b)
{
	const struct kv_feed_hooks hooks = { stream_begins, snapshot_if_due, problem_seen, r };
	kv_match_feed(r->m, b, &hooks);
	kv_out_flush_if_full(r->out);
}

static int dump(const char *path)
{
	struct kv_snap s;
	struct kv_err e = { 0 };
	if (!kv_snapr_load(path, &s, &e))
		kv_err_exit(&e);
	struct kv_out out;
	kv_out_open_stdout(&out);
	kv_snap_dump(&s, &out);
	kv_snapr_close(&s);
	return kv_out_close(&out, &e) ? KV_EX_OK : kv_err_print(&e);
}

static void load_state(struct run *r)
{
	if (r->o->regs) {
		struct kv_err e = { 0 };
		if (!kv_workers_load(&r->ws, r->o->regs, &e))
			exit(kv_err_print(&e));
	}
	if (r->o->resume) {
		struct kv_snap s;
		struct kv_err e = { 0 };
		if (!kv_snapr_load(r->o->resume, &s, &e))
			kv_err_exit(&e);
		kv_snapstate_restore(&s, &r->ix, &r->ws, r->m);
		r->resumed_position = s.stream != NULL;
		r->resumed_at = s.stream ? s.stream->last_seq : 0;
		kv_snapr_close(&s);
	}
	kv_match_create_registered(r->m);
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct run r = { .o = &o };
	kv_workers_init(&r.ws);
	o.ws = &r.ws;
	kv_start(argv);
	parse_options(argc, argv, &o);
	check_option_pairs(&o);
	kv_install_signals(true);
	if (o.dump) {
		kv_workers_free(&r.ws);
		return dump(o.dump);
	}
	refuse_outputs_over_inputs(&o, argv + optind, (size_t)(argc - optind));
	/* before anything is read or written: no snapshot of part of the input,
	 * and no input read for a snapshot that cannot be made (the metrics are
	 * a side output: the run goes on without them, kvmatch(1)) */
	struct kv_err e = { 0 };
	if (!kv_out_check_creatable(&o.snapshot, 1, &e) || !kv_inputs_check(argv + optind, (size_t)(argc - optind), &e)) {
		kv_workers_free(&r.ws);
		return kv_err_print(&e);
	}
	struct kv_out out;
	kv_out_open_stdout(&out);
	r.out = &out;
	o.match.report = on_report;
	o.match.report_arg = &r;
	kv_index_init(&r.ix);
	r.ix.expect_blocks = o.expect_blocks;
	r.m = kv_match_new(&r.ix, &r.ws, &o.match);
	if (o.metrics)
		kv_metrics_init(&r.metrics, o.metrics, o.metrics_ns);
	load_state(&r);
	o.src.idle = on_idle;
	o.src.idle_arg = &r;
	/* the state lines go to standard output, unless --log none */
	kv_progress_init(&r.progress, kv_progress_choose(o.progress, o.quiet, o.match.log_mask != 0), "records",
			 "events");
	uint64_t total;
	bool known = kv_inputs_size(argv + optind, (size_t)(argc - optind), &total);
	kv_progress_set_total(&r.progress, known, total);
	struct kv_source *src = kv_source_new(argv + optind, (size_t)(argc - optind), &o.src);
	r.src = src;
	struct kv_batch b;
	enum kv_source_status st = KV_SOURCE_END;
	/* a closed stdout ends the run unless a snapshot is to be written */
	while (!kv_out_ends_work(&out, o.snapshot != NULL) && (st = kv_source_next(src, &b, &e)) != KV_SOURCE_END &&
	       st != KV_SOURCE_STOPPED) {
		if (st == KV_SOURCE_UNOPENED) {
			kv_progress_hide(&r.progress);
			r.status = kv_status_merge(r.status, kv_err_print(&e));
			continue;
		}
		handle(&r, &b);
		between_records(&r);
		r.records += b.stream == NULL;
		r.events += b.nev;
		if (kv_progress_due(&r.progress))
			show_progress(&r);
	}
	kv_progress_end(&r.progress, kv_source_bytes(src), r.records, r.events);
	if (st == KV_SOURCE_STOPPED && !o.quiet) {
		const char *product = o.snapshot ? o.snapshot : "-";
		kv_say_stopped(&product, 1);
	}
	write_snapshot(&r);
	if (!kv_out_close(&out, &e))
		r.status = kv_status_merge(r.status, kv_err_print(&e));
	if (o.metrics) {
		write_metrics(&r);
		kv_metrics_free(&r.metrics);
	}
	if (!o.quiet)
		kv_statelog_summary(stderr, r.m);
	if (!o.quiet && o.verbose)
		kv_statelog_memory(stderr, r.m);
	if (o.diagnose)
		kv_diagnose(r.m, o.diag_format, stderr);
	int status = r.status;
	if (r.bad && !kv_out_reader_gone(&out))
		status = kv_status_merge(status, KV_EX_DATAERR);
	kv_source_free(src);
	kv_match_delete(r.m);
	kv_workers_free(&r.ws);
	kv_index_free(&r.ix);
	return status;
}

/* kvnats: kvcap records into and out of NATS JetStream. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/input.h"
#include "decode/jsmsg.h"
#include "base/jsonw.h"
#include "decode/kvcap.h"
#include "nats/js.h"
#include "base/out.h"
#include "index/workers.h"
#include "index/snap.h"
#include "index/snapload.h"
#include "base/utf8.h"
#include "base/optval.h"
#include "base/progress.h"
#include "base/util.h"

static const char usage[] =
	"Usage: kvnats -P [OPTION]... [FILE]...\n"
	"       kvnats -C [OPTION]...\n"
	"       kvnats -L [OPTION]...\n"
	"Move kvcap records into and out of a NATS JetStream stream.\n"
	"\n"
	"  -P, --produce             publish the records of the captures FILE (default: stdin)\n"
	"  -C, --consume             write the stream's records to stdout as a kvcap stream\n"
	"  -L, --list                list streams, their consumers and their lag\n"
	"  -s, --server URL[,URL]... NATS servers (default: $NATS_URL, else nats://127.0.0.1:4222)\n"
	"      --stream NAME         the stream (default KVTOOLS); its subjects are NAME.>\n"
	"      --retry SECS          retry a publish, or a request the servers did not serve,\n"
	"                            for SECS (default 20: a cluster electing leaders)\n"
	"Producing:\n"
	"  -r, --registrations FILE  put each record's model and tenant in its subject\n"
	"      --replicas N          replicas of a stream kvnats creates (default 1)\n"
	"      --max-age SECS        age limit of a stream kvnats creates (default 604800; 0: none)\n"
	"      --max-bytes N         size limit of a stream kvnats creates (default 1073741824; -1: none)\n"
	"      --dup-window SECS     its duplicate window (default 120)\n"
	"      --progress            a progress line on stderr, even when it is not a terminal\n"
	"                            (then a whole line a second)\n"
	"      --no-progress         no progress line (the default on a terminal is one)\n"
	"Consuming:\n"
	"      --durable NAME        a durable consumer: a restart goes on after what was written\n"
	"      --filter SUBJECT      only the records of SUBJECT (a partition: NAME.MODEL.TENANT.>)\n"
	"      --after FILE.kvsnap   start where the input of that kvmatch snapshot ended\n"
	"      --start-seq N         start at stream sequence N\n"
	"      --start-time NS       start at the first message stored at or after NS (ns since 1970)\n"
	"  -c, --count N             stop after N records\n"
	"      --batch N             records fetched, then acknowledged once written (default 4096)\n"
	"  -f, --follow              wait for new records at the end of the stream\n"
	"      --bare                records as published, without their stream sequence\n"
	"      --wrap                each message, whatever it holds (Dynamo's KV events), is a record\n"
	"                            [time, subject, 0, [subject, message]]\n"
	"      --core SUBJECT        messages of SUBJECT on core NATS, not of a stream (implies --wrap)\n"
	"  -o, --output FILE         write to FILE instead of stdout\n"
	"Listing:\n"
	"      --format table|json   a table (default) or JSON lines\n"
	"\n"
	"  -q, --quiet               no warnings, no statistics and no progress line on stderr\n"
	"  -h, --help                show this help and exit\n"
	"  -V, --version             show the version and exit\n"
	"\n"
	"Exit status: 0 success, 64 usage, 65 bad input (records skipped), 66 cannot open\n"
	"a file or no such stream, 69 server unavailable or a publish lost, 70 internal\n"
	"error (out of memory), 74 write error.\n"
	"See kvnats(1).\n";

enum {
	OPT_STREAM = 256, OPT_REPLICAS, OPT_MAX_AGE, OPT_MAX_BYTES, OPT_DUP_WINDOW, OPT_DURABLE, OPT_FILTER,
	OPT_AFTER, OPT_START_SEQ, OPT_START_TIME, OPT_BARE, OPT_FORMAT, OPT_BATCH, OPT_RETRY, OPT_WRAP, OPT_CORE
};

static const struct option longopts[] = {
	{ "produce", no_argument, NULL, 'P' },
	{ "consume", no_argument, NULL, 'C' },
	{ "list", no_argument, NULL, 'L' },
	{ "server", required_argument, NULL, 's' },
	{ "stream", required_argument, NULL, OPT_STREAM },
	{ "registrations", required_argument, NULL, 'r' },
	{ "replicas", required_argument, NULL, OPT_REPLICAS },
	{ "max-age", required_argument, NULL, OPT_MAX_AGE },
	{ "max-bytes", required_argument, NULL, OPT_MAX_BYTES },
	{ "dup-window", required_argument, NULL, OPT_DUP_WINDOW },
	{ "retry", required_argument, NULL, OPT_RETRY },
	{ "durable", required_argument, NULL, OPT_DURABLE },
	{ "filter", required_argument, NULL, OPT_FILTER },
	{ "after", required_argument, NULL, OPT_AFTER },
	{ "start-seq", required_argument, NULL, OPT_START_SEQ },
	{ "start-time", required_argument, NULL, OPT_START_TIME },
	{ "count", required_argument, NULL, 'c' },
	{ "batch", required_argument, NULL, OPT_BATCH },
	{ "follow", no_argument, NULL, 'f' },
	{ "bare", no_argument, NULL, OPT_BARE },
	{ "wrap", no_argument, NULL, OPT_WRAP },
	{ "core", required_argument, NULL, OPT_CORE },
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, OPT_FORMAT },
	KV_PROGRESS_OPTIONS,
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

#define FETCH_WAIT_MS 1000

struct options {
	char mode;                   /* 'P', 'C' or 'L' */
	const char *servers, *stream, *regs, *output, *after;
	const char *core;            /* --core: a core NATS subject */
	struct kv_js_stream_opts create;
	uint64_t retry_ns;
	struct kv_js_consumer_opts consume;
	bool follow, bare, json, wrap;
	uint64_t count;              /* -C stops after this many records; 0: no limit */
	uint64_t batch;              /* records fetched at a time, acknowledged together once written */
	bool stream_named;           /* -L lists that stream alone */
	int quiet;
	int progress;                /* -P --progress 1, --no-progress -1 */
};

static void set_mode(struct options *o, char m)
{
	if (o->mode && o->mode != m)
		kv_usage_error("-%c and -%c: choose one of -P, -C and -L", o->mode, m);
	o->mode = m;
}

static void set_start(struct options *o, enum kv_js_start s)
{
	if (o->consume.start != KV_JS_START_ALL || o->after)
		kv_usage_error("--after, --start-seq and --start-time: choose one");
	o->consume.start = s;
}

/* Options that belong to one mode are refused in the others. */
static void check_mode(const struct options *o, bool produce_only, bool consume_only, bool list_only, int nfiles)
{
	if (!o->mode)
		kv_usage_error("no mode: -P (produce), -C (consume) or -L (list)");
	if (produce_only && o->mode != 'P')
		kv_usage_error("-r, --replicas, --max-age, --max-bytes and --dup-window go with -P");
	if (consume_only && o->mode != 'C')
		kv_usage_error("--durable, --filter, --after, --start-seq, --start-time, -c, --batch, -f, --bare and -o go with -C");
	if (list_only && o->mode != 'L')
		kv_usage_error("--format goes with -L");
	if (nfiles && o->mode != 'P')
		kv_usage_error("files to read go with -P");
	if (o->progress && o->mode != 'P')
		kv_usage_error("--progress and --no-progress go with -P");
}

static void parse_options(int argc, char **argv, struct options *o)
{
	bool produce_only = false, consume_only = false, list_only = false;
	uint64_t v;
	int64_t i;
	int c;
	struct kv_span servers[64];   /* as many as kv_js_connect takes */
	const char *env = getenv("NATS_URL");
	o->servers = env && *env ? env : "nats://127.0.0.1:4222";
	o->stream = "KVTOOLS";
	o->batch = 4096;
	o->retry_ns = KV_JS_RETRY_NS;
	o->create = (struct kv_js_stream_opts){ .replicas = 1, .max_age_ns = 604800ll * 1000000000ll,
						 .max_bytes = 1ll << 30, .dup_window_ns = 120ll * 1000000000ll };
	while ((c = getopt_long(argc, argv, "PCLs:r:c:fo:qhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'P': case 'C': case 'L': set_mode(o, (char)c); break;
		case 's':
			kv_opt_list("--server", optarg, ',', servers, sizeof servers / sizeof servers[0],
				    "URL[,URL]... (at most 64)");
			o->servers = optarg;
			break;
		case OPT_STREAM:
			if (!kv_js_name_ok(optarg))
				kv_usage_error("--stream: '%s' is not 1 to 255 of A-Z a-z 0-9 _ -", optarg);
			o->stream = optarg;
			o->stream_named = true;
			break;
		case 'r': o->regs = optarg; produce_only = true; break;
		case OPT_REPLICAS:
			if (!kv_parse_u64(optarg, 1, 5, &v))
				kv_usage_error("--replicas: '%s' is not a number from 1 to 5", optarg);
			o->create.replicas = (int64_t)v;
			produce_only = true;
			break;
		case OPT_MAX_AGE:
			if (!kv_parse_seconds(optarg, 1e9, &v))
				kv_usage_error("--max-age: '%s' is not a number of seconds", optarg);
			o->create.max_age_ns = (int64_t)v;
			produce_only = true;
			break;
		case OPT_MAX_BYTES:
			if (!kv_parse_i64(optarg, -1, INT64_MAX, &i) || i == 0)
				kv_usage_error("--max-bytes: '%s' is not a size in bytes (-1: no limit)", optarg);
			o->create.max_bytes = i;
			produce_only = true;
			break;
		case OPT_DUP_WINDOW:
			if (!kv_parse_seconds(optarg, 1e6, &v) || v == 0)
				kv_usage_error("--dup-window: '%s' is not a positive number of seconds", optarg);
			o->create.dup_window_ns = (int64_t)v;
			produce_only = true;
			break;
		case OPT_RETRY:
			if (!kv_parse_seconds(optarg, 86400, &o->retry_ns))
				kv_usage_error("--retry: '%s' is not a number of seconds", optarg);
			break;
		case OPT_DURABLE:
			if (!kv_js_name_ok(optarg))
				kv_usage_error("--durable: '%s' is not 1 to 255 of A-Z a-z 0-9 _ -", optarg);
			o->consume.durable = optarg;
			consume_only = true;
			break;
		case OPT_FILTER:
			kv_opt_name("--filter", optarg, "a subject");
			if (strchr(optarg, ' '))
				kv_usage_error("--filter: '%s' is not a subject: a space", optarg);
			o->consume.filter = optarg;
			consume_only = true;
			break;
		case OPT_AFTER:
			set_start(o, KV_JS_START_SEQ);
			o->after = optarg;
			consume_only = true;
			break;
		case OPT_START_SEQ:
			set_start(o, KV_JS_START_SEQ);
			if (!kv_parse_u64(optarg, 1, UINT64_MAX, &o->consume.start_seq))
				kv_usage_error("--start-seq: '%s' is not a stream sequence (1 or more)", optarg);
			consume_only = true;
			break;
		case OPT_START_TIME:
			set_start(o, KV_JS_START_TIME);
			if (!kv_parse_i64(optarg, 1, INT64_MAX, &o->consume.start_time_ns))
				kv_usage_error("--start-time: '%s' is not nanoseconds since 1970 (1 or more)", optarg);
			consume_only = true;
			break;
		case 'c':
			if (!kv_parse_u64(optarg, 1, UINT64_MAX, &o->count))
				kv_usage_error("-c: '%s' is not a count of 1 or more", optarg);
			consume_only = true;
			break;
		case OPT_BATCH:
			if (!kv_parse_u64(optarg, 1, 100000, &o->batch))
				kv_usage_error("--batch: '%s' is not a number from 1 to 100000", optarg);
			consume_only = true;
			break;
		case 'f': o->follow = true; consume_only = true; break;
		case OPT_BARE: o->bare = true; consume_only = true; break;
		case OPT_WRAP: o->wrap = true; consume_only = true; break;
		case OPT_CORE:
			if (!*optarg || strchr(optarg, ' '))
				kv_usage_error("--core: '%s' is not a subject", optarg);
			o->core = optarg;
			o->wrap = true;
			consume_only = true;
			break;
		case 'o': o->output = optarg; consume_only = true; break;
		case OPT_FORMAT:
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "table") != 0)
				kv_usage_error("--format: '%s' is not table or json", optarg);
			o->json = strcmp(optarg, "json") == 0;
			list_only = true;
			break;
		case KV_OPT_PROGRESS: o->progress = 1; break;
		case KV_OPT_NO_PROGRESS: o->progress = -1; break;
		case 'q': o->quiet++; break;
		case 'h': kv_print_help(usage);
		case 'V': kv_print_version();
		default: kv_try_help();
		}
	}
	check_mode(o, produce_only, consume_only, list_only, argc - optind);
	/* the servers named by the environment are read as -s reads them */
	if (o->servers == env)
		kv_opt_list("NATS_URL", env, ',', servers, sizeof servers / sizeof servers[0], "URL[,URL]... (at most 64)");
	o->consume.stream = o->stream;
	/* before any server is asked, or a durable consumer made or moved */
	if (o->mode == 'C' && (!o->output || strcmp(o->output, "-") == 0) && isatty(STDOUT_FILENO))
		kv_usage_error("refusing to write a binary capture to a terminal (use -o FILE or a pipe)");
}

/* ---- producing ---------------------------------------------------------- */

/* The subject of each source met, by the registrations' partitions; at
 * most this many remembered (emptied when full: a capture of ever new
 * sources costs time, not memory). */
#define SUBJECTS_KEPT 4096

struct subjects {
	const struct options *o;
	struct kv_workers ws;        /* the registrations, looked up as kvmatch does */
	struct { char *src; char *subject; } *v;
	size_t n, cap;
	char *header;
};

static void subjects_forget(struct subjects *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].src);
		free(s->v[i].subject);
	}
	s->n = 0;
}

static const char *subject_of(struct subjects *s, const struct kv_record *rec)
{
	for (size_t i = s->n; i-- > 0;)
		if (strlen(s->v[i].src) == rec->src_len && memcmp(s->v[i].src, rec->src, rec->src_len) == 0)
			return s->v[i].subject;
	if (s->n == SUBJECTS_KEPT)
		subjects_forget(s);
	const char *model = NULL, *tenant = NULL;
	kv_workers_partition_of(&s->ws, (struct kv_str){ rec->src, rec->src_len }, &model, &tenant);
	s->v = kv_xgrow(s->v, &s->cap, s->n + 1, sizeof *s->v);
	s->v[s->n].src = kv_xstrndup(rec->src, rec->src_len);
	s->v[s->n].subject = kv_js_record_subject(s->o->stream, model, tenant, rec->src, rec->src_len);
	return s->v[s->n++].subject;
}

static void subjects_free(struct subjects *s)
{
	subjects_forget(s);
	free(s->v);
	free(s->header);
	kv_workers_free(&s->ws);
}

struct produce {
	const struct options *o;
	struct kv_js *js;
	struct subjects subj;
	struct kv_out packed;        /* a record packed again without its fifth element, a header without its stream */
	msgpack_zone zone;
	uint64_t bad;
	bool lost;
	bool stopped;                /* a stop signal came before the end of an input */
	struct kv_progress progress;
	uint64_t bytes_done;         /* read from the captures finished */
	uint64_t records;            /* records read */
};

static void publish_record(struct produce *p, const struct kv_record *rec)
{
	char id[KV_JS_MSGID_LEN + 1];
	kv_js_msg_id(rec, NULL, 0, id);
	const uint8_t *data = rec->raw;
	size_t n = rec->raw_len;
	if (n == 0 || data[0] != 0x94) {
		/* the message is the record as kvtools writes it, whatever the file held */
		p->packed.len = 0;
		kv_cap_write_record(&p->packed, rec->recv_ns, rec->src, rec->src_len, rec->flags, rec->frames,
				    rec->nframes);
		data = (const uint8_t *)p->packed.buf;
		n = p->packed.len;
	}
	if (!kv_js_publish(p->js, subject_of(&p->subj, rec), id, data, n))
		p->lost = true;
}

static void publish_header(struct produce *p, const struct kv_record *rec)
{
	char id[KV_JS_MSGID_LEN + 1];
	const uint8_t *data = rec->raw;
	size_t n = rec->raw_len;
	/* the header of kvnats -C output: its records go without their
	 * positions, so it goes without the stream they were in */
	p->packed.len = 0;
	if (kv_cap_header_without_stream(data, n, &p->zone, &p->packed)) {
		data = (const uint8_t *)p->packed.buf;
		n = p->packed.len;
	}
	kv_js_msg_id(NULL, data, n, id);
	if (!kv_js_publish(p->js, p->subj.header, id, data, n))
		p->lost = true;
}

/* One capture; false when it could not be opened (e). */
static bool produce_file(struct produce *p, const char *path, struct kv_err *e)
{
	int fd;
	const char *name;
	if (!kv_input_open_named(path, &fd, &name, e))
		return false;
	struct kv_cap_reader r;
	kv_cap_open(&r, fd, name);
	struct kv_record rec;
	enum kv_cap_status st = KV_CAP_RECORD;
	while (!kv_stop_signal && !p->lost && (st = kv_cap_next(&r, &rec)) != KV_CAP_EOF && st != KV_CAP_STOPPED) {
		if (st == KV_CAP_HEADER) {
			publish_header(p, &rec);
		} else if (st == KV_CAP_RECORD) {
			publish_record(p, &rec);
			p->records++;
			if (kv_progress_due(&p->progress))
				kv_progress_show(&p->progress, p->bytes_done + kv_mps_taken(&r.in), p->records, 0);
		} else {
			p->bad++;
			kv_progress_hide(&p->progress);
			if (!p->o->quiet)
				kv_warn("%s: %s%s", name, r.error, st == KV_CAP_SKIP ? "; skipped" : "");
			if (st == KV_CAP_ERROR)
				break;
		}
	}
	p->bytes_done += kv_mps_taken(&r.in);
	if (kv_stop_signal && !p->lost && st != KV_CAP_EOF && st != KV_CAP_ERROR)
		p->stopped = true;
	kv_cap_close(&r);
	kv_input_close(fd);
	return true;
}

static int produce(const struct options *o, struct kv_js *js, char **files, int nfiles)
{
	struct produce p = { .o = o, .js = js, .subj = { .o = o } };
	struct kv_err e = { 0 };
	kv_workers_init(&p.subj.ws);
	if (o->regs && !kv_workers_load(&p.subj.ws, o->regs, &e)) {
		kv_workers_free(&p.subj.ws);
		return kv_err_print(&e);
	}
	p.subj.header = kv_js_header_subject(o->stream);
	kv_js_set_header_subject(js, p.subj.header);
	struct kv_js_stream_opts so = o->create;
	char subjects[300];
	snprintf(subjects, sizeof subjects, "%s.>", o->stream);
	so.name = o->stream;
	so.subjects = subjects;
	bool created;
	if (!kv_js_ensure_stream(js, &so, &created, &e)) {
		subjects_free(&p.subj);
		return kv_err_print(&e);
	}
	if (created && !o->quiet)
		kv_warn("%s: created stream %s (%" PRId64 " replicas)", o->servers, o->stream, so.replicas);
	kv_out_open_mem(&p.packed);
	msgpack_zone_init(&p.zone, 1024);
	int status = KV_EX_OK;
	kv_progress_init(&p.progress, kv_progress_choose(o->progress, o->quiet, false), "records", NULL);
	uint64_t total;
	bool known = kv_inputs_size(files, (size_t)nfiles, &total);
	kv_progress_set_total(&p.progress, known, total);
	if (nfiles == 0 && !produce_file(&p, "-", &e))
		status = kv_status_merge(status, kv_err_print(&e));
	int i = 0;
	for (; i < nfiles && !kv_stop_signal && !p.lost; i++) {
		if (produce_file(&p, files[i], &e))
			continue;
		kv_progress_hide(&p.progress);
		status = kv_status_merge(status, kv_err_print(&e));
	}
	kv_progress_end(&p.progress, p.bytes_done, p.records, 0);
	if ((p.stopped || (kv_stop_signal && i < nfiles && !p.lost)) && !o->quiet) {
		char stream[300];
		snprintf(stream, sizeof stream, "stream %s", o->stream);
		const char *product = stream;
		kv_say_stopped(&product, 1);
	}
	struct kv_js_pub_stats st;
	if (!kv_js_publish_finish(js, &st))
		p.lost = true;
	if (!o->quiet)
		kv_warn("stream %s: records: %" PRIu64 " published, %" PRIu64 " stored, %" PRIu64 " duplicates, %" PRIu64
			" retried, %" PRIu64 " lost; headers: %" PRIu64 " published, %" PRIu64 " stored, %" PRIu64
			" duplicates, %" PRIu64 " retried, %" PRIu64 " lost", o->stream, st.records.published,
			st.records.stored, st.records.duplicates, st.records.retried, st.records.lost, st.headers.published,
			st.headers.stored, st.headers.duplicates, st.headers.retried, st.headers.lost);
	if (p.lost)
		kv_warn("%s: stream %s: %" PRIu64 " records and %" PRIu64 " headers not stored (%s); the rest of the "
			"input was not read", o->servers, o->stream, st.records.lost, st.headers.lost, st.last_error);
	kv_out_free_mem(&p.packed);
	msgpack_zone_destroy(&p.zone);
	subjects_free(&p.subj);
	if (p.lost)
		status = kv_status_merge(status, KV_EX_UNAVAILABLE);
	return kv_status_merge(status, p.bad ? KV_EX_DATAERR : KV_EX_OK);
}

/* ---- consuming ---------------------------------------------------------- */

/* The stream position a kvmatch snapshot recorded, and the stream it is
 * in: where --after starts, and in which stream alone. */
struct snap_position {
	uint64_t last_seq;
	char *stream;                /* its name, NULL when the snapshot does not say */
	uint64_t created_ns;
};

static void position_after(const char *path, struct snap_position *p)
{
	struct kv_snap s;
	struct kv_err e = { 0 };
	if (!kv_snapr_load(path, &s, &e))
		kv_err_exit(&e);
	bool has = s.stream != NULL;
	p->last_seq = has ? s.stream->last_seq : 0;
	if (s.stream_id) {
		size_t n;
		const char *name = kv_snap_string(&s, s.stream_id->name, &n);
		p->stream = kv_xstrndup(name, n);
		p->created_ns = s.stream_id->created_ns;
	}
	kv_snapr_close(&s);
	if (!has)
		kv_die(KV_EX_DATAERR, "%s: the snapshot records no stream position (its input was not kvnats -C, "
			"or an older kvmatch wrote it); rebuild it: kvnats -C | kvmatch -o %s", path, path);
	if (!p->stream)
		kv_die(KV_EX_DATAERR, "%s: the snapshot records no stream its position is in (an older kvnats or "
			"kvmatch made it), so that it cannot be told from a position in another stream; rebuild it: "
			"kvnats -C | kvmatch -o %s", path, path);
}

/* A position belongs to one stream: in another (another name, or one
 * deleted and made again under the name, its sequences anew) it would
 * skip records, or read them twice. */
static bool same_stream(const struct options *o, const struct snap_position *p, const struct kv_js_stream_state *st,
			struct kv_err *e)
{
	char was[KV_UTC_NS_LEN], is[KV_UTC_NS_LEN];
	if (strcmp(p->stream, o->stream) == 0 && p->created_ns == (uint64_t)st->created_ns)
		return true;
	return kv_err_set(e, KV_EX_DATAERR, "%s: its position is in stream %s created %s, not in stream %s created %s: "
			  "the positions of two streams are not comparable", o->after, p->stream,
			  kv_utc_ns(p->created_ns, was), o->stream, kv_utc_ns((uint64_t)st->created_ns, is));
}

struct consume {
	const struct options *o;
	struct kv_out *out;
	msgpack_zone zone;
	bool header_done;
	bool stopped;                /* a stop signal came before the end or -c */
	uint64_t records, skipped;
	uint64_t written;            /* records whose bytes reached the output (flushed) */
	const struct kv_cap_stream *named;  /* the stream the first header names (not with --bare) */
};

/* The output's first header, when the first message is no header: ours,
 * naming the stream unless --bare. */
static void write_own_header(struct consume *c)
{
	if (c->named)
		kv_cap_write_stream_header(c->out, "kvnats " KV_VERSION, kv_realtime_ns(), c->named);
	else
		kv_cap_write_header(c->out, "kvnats " KV_VERSION, kv_realtime_ns());
	c->header_done = true;
}

/* A message that is no kvcap object (Dynamo's KV events, on its JetStream
 * queue or its event plane) as a record of its own: received when the
 * stream stored it (core NATS: now), from its subject, frames [subject,
 * message] (kvnats(1) "Other publishers' messages"). */
static void write_wrapped(struct consume *c, const struct kv_js_msg *m)
{
	struct kv_record rec;
	memset(&rec, 0, sizeof rec);
	size_t sn = strlen(m->subject);
	rec.recv_ns = m->time_ns > 0 ? (uint64_t)m->time_ns : kv_realtime_ns();
	rec.src = m->subject;
	rec.src_len = sn < KV_CAP_MAX_SRC ? sn : KV_CAP_MAX_SRC;
	rec.frames[0] = (struct kv_frame){ (const uint8_t *)m->subject, sn };
	rec.frames[1] = (struct kv_frame){ m->data, m->len };
	rec.nframes = 2;
	if (!c->header_done)
		write_own_header(c);
	c->records++;
	if (c->o->bare || !m->stream_seq)
		kv_cap_write_record(c->out, rec.recv_ns, rec.src, rec.src_len, 0, rec.frames, rec.nframes);
	else
		kv_cap_write_positioned(c->out, &rec, m->stream_seq);
}

static void write_message(struct consume *c, const struct kv_js_msg *m)
{
	if (c->o->wrap) {
		write_wrapped(c, m);
		return;
	}
	struct kv_record rec;
	const char *why = NULL;
	enum kv_cap_status st = kv_cap_classify(m->data, m->len, &c->zone, &rec, &why);
	if (st == KV_CAP_HEADER) {
		/* the first names the stream the positions are of, and after which
		 * message they follow without a gap: what kvmatch checks a resume by */
		if (c->header_done || !c->named || !kv_cap_header_with_stream(m->data, m->len, &c->zone, c->named, c->out))
			kv_out_write(c->out, m->data, m->len);
		c->header_done = true;
		return;
	}
	if (st != KV_CAP_RECORD) {
		c->skipped++;
		if (!c->o->quiet)
			kv_warn("stream %s: message %" PRIu64 ": not a kvcap record (%s); skipped", c->o->stream,
				m->stream_seq, why);
		return;
	}
	if (!c->header_done)
		write_own_header(c);
	c->records++;
	if (c->o->bare)
		kv_out_write(c->out, m->data, m->len);
	else
		kv_cap_write_positioned(c->out, &rec, m->stream_seq);
}

/* Fetches, writes, flushes and acknowledges until the end (the stream's
 * last message for the consumer when kvnats started, unless -f) or a signal. */
static int consume_loop(struct consume *c, struct kv_js_sub *sub, uint64_t end_seq)
{
	struct kv_err e = { 0 };
	bool at_end = false;
	if (!c->o->follow) {
		if (!kv_js_done(sub, end_seq, &at_end, &e))
			return kv_err_print(&e);
		if (at_end)
			return 0;
	}
	for (;;) {
		const struct kv_js_msg *msgs;
		uint64_t left = c->o->count ? c->o->count - c->records : c->o->batch;
		int n;
		if (!kv_js_fetch(sub, (int)(left < c->o->batch ? left : c->o->batch), FETCH_WAIT_MS, &msgs, &n, &e))
			return kv_err_print(&e);
		bool stop = kv_stop_signal != 0;
		/* the end: that last message, or a fetch that found nothing when
		 * nothing up to it is left for the consumer (it was deleted): asked
		 * of the stream's leader, as the consumer's server may be a replica
		 * catching up, and the number a message carries can be behind there */
		if (n == 0 && !stop && !c->o->follow) {
			if (!kv_js_done(sub, end_seq, &at_end, &e))
				return kv_err_print(&e);
		}
		for (int i = 0; i < n; i++) {
			write_message(c, &msgs[i]);
			if (!c->o->follow && msgs[i].stream_seq >= end_seq)
				at_end = true;
		}
		at_end |= c->o->count && c->records >= c->o->count;
		/* with -f and no -c, a signal is how a run ends */
		c->stopped = stop && !at_end && (!c->o->follow || c->o->count);
		bool done = stop || at_end;
		/* only what is written and flushed is acknowledged, and counted
		 * as written */
		if (!kv_out_flush(c->out))
			return 0;
		c->written = c->records;
		if (n > 0 && !kv_js_ack(sub, done, &e))
			return kv_err_print(&e);
		if (done)
			return 0;
	}
}

/* The start option given, for messages: "--start-seq 5". */
static void start_asked(const struct options *o, char *buf, size_t n)
{
	if (o->after)
		snprintf(buf, n, "--after %s", o->after);
	else if (o->consume.start == KV_JS_START_SEQ)
		snprintf(buf, n, "--start-seq %" PRIu64, o->consume.start_seq);
	else
		snprintf(buf, n, "--start-time %" PRId64, o->consume.start_time_ns);
}

/* A start that lies beyond the stream's next message is refused: the
 * messages up to it, when they come, would never be read (JetStream itself
 * would start at the next one instead); and so is a start time to come,
 * since JetStream would start at the next message stored, before that time
 * or not. */
static bool start_in_stream(const struct options *o, const struct kv_js_stream_state *st, struct kv_err *e)
{
	char when[KV_UTC_NS_LEN];
	if (o->consume.start == KV_JS_START_TIME && (uint64_t)o->consume.start_time_ns > kv_realtime_ns())
		return kv_err_set(e, KV_EX_DATAERR, "stream %s: --start-time %" PRId64 " (%s) is still to come: the "
				  "next message stored would be read, before that time or not", o->stream,
				  o->consume.start_time_ns, kv_utc_ns((uint64_t)o->consume.start_time_ns, when));
	if (o->consume.start != KV_JS_START_SEQ || o->consume.start_seq <= st->last + 1)
		return true;
	if (o->after)
		return kv_err_set(e, KV_EX_DATAERR, "%s: its position, message %" PRIu64 ", is beyond the last "
			"message of stream %s, %" PRIu64 ": it was not made from this stream", o->after,
			o->consume.start_seq - 1, o->stream, st->last);
	return kv_err_set(e, KV_EX_DATAERR, "stream %s: --start-seq %" PRIu64 " is beyond its last message, %" PRIu64
			  " (the next one is %" PRIu64 ")", o->stream, o->consume.start_seq, st->last, st->last + 1);
}

/* What kv_js_subscribe did to a durable, on standard error. */
static void say_bound(const struct options *o, const struct kv_js_bind_info *b)
{
	char asked[300];
	if (o->quiet)
		return;
	switch (b->how) {
	case KV_JS_AFTER_ACK:
		if (b->was_after)
			kv_warn("stream %s: durable %s resumes after message %" PRIu64 ", the last it acknowledged",
				o->stream, o->consume.durable, b->was_after);
		else
			kv_warn("stream %s: durable %s starts again: it acknowledged nothing", o->stream,
				o->consume.durable);
		break;
	case KV_JS_MOVED:
		start_asked(o, asked, sizeof asked);
		kv_warn("stream %s: durable %s moved to start after message %" PRIu64 " as %s asks; it would have gone "
			"on after message %" PRIu64, o->stream, o->consume.durable, b->after, asked, b->was_after);
		break;
	default:
		break;
	}
}

/* --core: a core NATS subject, until -c records or a signal. */
static int consume_core(const struct options *o, struct kv_js *js)
{
	struct kv_err e = { 0 };
	struct kv_js_core *sub;
	if (!kv_js_core_subscribe(js, o->core, &sub, &e))
		return kv_err_print(&e);
	struct kv_out out;
	if (!kv_out_open(&out, o->output, &e)) {
		kv_js_core_unsubscribe(sub);
		return kv_err_print(&e);
	}
	struct consume c = { .o = o, .out = &out };
	kv_cap_write_header(&out, "kvnats " KV_VERSION, kv_realtime_ns());
	c.header_done = true;
	int status = 0;
	/* a header at once: a reader sees the capture begin before any event */
	bool ok = kv_out_flush(&out);
	while (ok && !kv_stop_signal && !(o->count && c.records >= o->count)) {
		struct kv_js_msg m;
		bool got;
		if (!kv_js_core_next(sub, 100, &m, &got, &e)) {
			status = kv_err_print(&e);
			break;
		}
		if (got)
			write_message(&c, &m);
		if ((!got || c.records % 64 == 0) && (ok = kv_out_flush(&out)))
			c.written = c.records;
	}
	if (ok && kv_out_flush(&out))
		c.written = c.records;
	kv_js_core_unsubscribe(sub);
	/* without -c, a signal is how --core ends */
	if (kv_stop_signal && o->count && c.records < o->count && !o->quiet) {
		const char *product = o->output ? o->output : "-";
		kv_say_stopped(&product, 1);
	}
	if (!kv_out_close(&out, &e))
		status = kv_status_merge(status, kv_err_print(&e));
	if (!o->quiet)
		kv_warn("subject %s: %" PRIu64 " records written", o->core, c.written);
	return status;
}

static int consume(struct options *o, struct kv_js *js)
{
	struct kv_err e = { 0 };
	struct snap_position snap = { 0 };
	if (o->core)
		return consume_core(o, js);
	if (o->after) {
		if (!kv_out_refuse_input("-o", o->output, o->after, &e))
			kv_err_exit(&e);
		position_after(o->after, &snap);
		o->consume.start_seq = snap.last_seq + 1;
	}
	struct kv_js_sub *sub = NULL;
	struct kv_js_stream_state st;
	struct kv_js_bind_info bound;
	uint64_t end = 0;
	bool ok = kv_js_stream_state(js, o->stream, &st, &e) && (!o->after || same_stream(o, &snap, &st, &e)) &&
		  start_in_stream(o, &st, &e);
	free(snap.stream);
	if (ok && o->consume.start == KV_JS_START_SEQ && st.first > o->consume.start_seq && !o->quiet) {
		char asked[300];
		start_asked(o, asked, sizeof asked);
		kv_warn("stream %s: messages %" PRIu64 " to %" PRIu64 " are gone (the stream's limits): %s starts at "
			"message %" PRIu64 ", its first", o->stream, o->consume.start_seq, st.first - 1, asked, st.first);
	}
	/* the end: the stream's last message for the consumer, as its leader
	 * knows it (the last sequence of the stream's info may come from a
	 * replica that is behind) */
	if (ok && !o->follow)
		ok = kv_js_last_seq(js, o->stream, o->consume.filter, &end, &e);
	if (!ok || !kv_js_subscribe(js, &o->consume, &sub, &bound, &e))
		return kv_err_print(&e);
	say_bound(o, &bound);
	struct kv_out out;
	if (!kv_out_open(&out, o->output, &e)) {
		kv_js_unsubscribe(sub);
		return kv_err_print(&e);
	}
	const struct kv_cap_stream named = { o->stream, strlen(o->stream), (uint64_t)st.created_ns, bound.after };
	struct consume c = { .o = o, .out = &out, .named = o->bare ? NULL : &named };
	msgpack_zone_init(&c.zone, 8192);
	int status = consume_loop(&c, sub, end);
	if (c.stopped && !o->quiet) {
		const char *product = o->output ? o->output : "-";
		kv_say_stopped(&product, 1);
	}
	if (!c.header_done && !kv_out_failed(&out))
		write_own_header(&c);
	if (kv_js_restarts(sub) && !o->quiet)
		kv_warn("stream %s: deliveries lost on the way %" PRIu64 " times: fetched again in order", o->stream,
			kv_js_restarts(sub));
	kv_js_unsubscribe(sub);
	msgpack_zone_destroy(&c.zone);
	if (!kv_out_close(&out, &e))
		status = kv_status_merge(status, kv_err_print(&e));
	if (!o->quiet)
		kv_warn("stream %s: %" PRIu64 " records written, %" PRIu64 " messages skipped", o->stream, c.written,
			c.skipped);
	return kv_status_merge(status, c.skipped ? KV_EX_DATAERR : KV_EX_OK);
}

/* ---- listing ------------------------------------------------------------ */

struct list {
	struct kv_out *out;
	bool json, header_done;
	char *shown[3];              /* names from the server, made printable for the table */
	size_t shown_cap[3];
};

/* A name a server sent, for people: its control bytes and bad UTF-8 as '?'
 * (kv_printable, the rule of every table and message). */
static const char *shown(struct list *l, int slot, const char *name)
{
	size_t n = strlen(name);
	l->shown[slot] = kv_xgrow(l->shown[slot], &l->shown_cap[slot], n + 1, 1);
	kv_printable(l->shown[slot], n + 1, name, n);
	return l->shown[slot];
}

static void table_header(struct list *l)
{
	if (l->header_done)
		return;
	l->header_done = true;
	kv_out_printf(l->out, "%-16s %-16s %-24s %10s %10s %10s\n", "STREAM", "CONSUMER", "SUBJECT", "MESSAGES", "LAG",
		      "UNACKED");
}

static void list_stream(void *arg, const struct kv_js_stream_row *r)
{
	struct list *l = arg;
	if (!l->json) {
		table_header(l);
		for (int i = 0; i < (r->nsubjects ? r->nsubjects : 1); i++)
			kv_out_printf(l->out, "%-16s %-16s %-24s %10" PRIu64 " %10s %10s\n", shown(l, 0, r->name), "-",
				      r->nsubjects ? shown(l, 1, r->subjects[i]) : "-", r->messages, "-", "-");
		return;
	}
	struct jw w;
	jw_begin(&w, l->out);
	jw_put_lit(&w, "{\"stream\":");
	jw_put_cstr(&w, r->name);
	jw_put_lit(&w, ",\"subjects\":[");
	for (int i = 0; i < r->nsubjects; i++) {
		if (i)
			jw_put_char(&w, ',');
		jw_put_cstr(&w, r->subjects[i]);
	}
	jw_put_lit(&w, "],\"messages\":");
	jw_put_u64(&w, r->messages);
	jw_put_lit(&w, ",\"bytes\":");
	jw_put_u64(&w, r->bytes);
	jw_put_lit(&w, ",\"first_seq\":");
	jw_put_u64(&w, r->first_seq);
	jw_put_lit(&w, ",\"last_seq\":");
	jw_put_u64(&w, r->last_seq);
	jw_put_lit(&w, ",\"replicas\":");
	jw_put_i64(&w, r->replicas);
	jw_put_lit(&w, ",\"consumers\":");
	jw_put_i64(&w, r->consumers);
	jw_put_lit(&w, "}\n");
	jw_end(&w);
}

static void list_consumer(void *arg, const struct kv_js_consumer_row *r)
{
	struct list *l = arg;
	if (!l->json) {
		kv_out_printf(l->out, "%-16s %-16s %-24s %10s %10" PRIu64 " %10" PRIu64 "\n", shown(l, 0, r->stream),
			      shown(l, 1, r->name), r->filter ? shown(l, 2, r->filter) : "-", "-", r->pending,
			      r->ack_pending);
		return;
	}
	struct jw w;
	jw_begin(&w, l->out);
	jw_put_lit(&w, "{\"stream\":");
	jw_put_cstr(&w, r->stream);
	jw_put_lit(&w, ",\"consumer\":");
	jw_put_cstr(&w, r->name);
	jw_put_lit(&w, r->durable ? ",\"durable\":true" : ",\"durable\":false");
	jw_put_lit(&w, ",\"filter\":");
	if (r->filter)
		jw_put_cstr(&w, r->filter);
	else
		jw_put_lit(&w, "null");
	jw_put_lit(&w, ",\"lag\":");
	jw_put_u64(&w, r->pending);
	jw_put_lit(&w, ",\"unacked\":");
	jw_put_u64(&w, r->ack_pending);
	jw_put_lit(&w, ",\"delivered_seq\":");
	jw_put_u64(&w, r->delivered);
	jw_put_lit(&w, ",\"ack_floor_seq\":");
	jw_put_u64(&w, r->ack_floor);
	jw_put_lit(&w, "}\n");
	jw_end(&w);
}

static int list(const struct options *o, struct kv_js *js)
{
	struct kv_out out;
	kv_out_open_stdout(&out);
	struct list l = { .out = &out, .json = o->json };
	struct kv_js_lister lister = { list_stream, list_consumer, &l };
	struct kv_err e = { 0 };
	int status = kv_js_list(js, o->stream_named ? o->stream : NULL, &lister, &e) ? KV_EX_OK : kv_err_print(&e);
	for (int i = 0; i < 3; i++)
		free(l.shown[i]);
	if (!kv_out_close(&out, &e))
		status = kv_status_merge(status, kv_err_print(&e));
	return status;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	kv_start(argv);
	parse_options(argc, argv, &o);
	kv_install_signals(false);
	struct kv_js *js = NULL;
	struct kv_err e = { 0 };
	int rc = KV_EX_OK;
	if (!kv_js_connect(&js, o.servers, &e)) {
		rc = kv_err_print(&e);
	} else {
		kv_js_set_retry(js, o.retry_ns);
		rc = o.mode == 'P' ? produce(&o, js, argv + optind, argc - optind) :
		     o.mode == 'C' ? consume(&o, js) : list(&o, js);
	}
	kv_js_close(js);
	return rc;
}

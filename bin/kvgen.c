/* kvgen: a simulated cluster serving a request trace, publishing its KV events. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/input.h"
#include "decode/kvcap.h"
#include "base/lines.h"
#include "base/out.h"
#include "base/progress.h"
#include "sim/sim.h"
#include "sim/trace.h"
#include "base/optval.h"
#include "base/util.h"

static const char usage[] =
	"Usage: kvgen [OPTION]... [TRACE]\n"
	"Simulate an inference cluster serving a request trace (Mooncake FAST'25 JSONL:\n"
	"timestamp, input_length, output_length, hash_ids) and write the KV events it\n"
	"would publish as a kvcap capture.  With no TRACE, or when TRACE is -, read\n"
	"standard input.\n"
	"\n"
	"  -o, --output FILE         write the capture to FILE (default: stdout, not a terminal)\n"
	"  -n, --no-capture          simulate and report only\n"
	"      --workers N           instances (nodes) in the cluster (16)\n"
	"      --dp M                data-parallel ranks per instance (4)\n"
	"      --capacity BLOCKS     accelerator cache per rank, in blocks (16384)\n"
	"      --block-size N        engine block size in tokens, dividing 512 (16)\n"
	"      --pool memcache|mooncake|none  a KV pool per node behind the ranks (none)\n"
	"      --pool-capacity BLOCKS  host memory of each node's pool (262144)\n"
	"      --disk-capacity BLOCKS  disk tier behind it (0: none)\n"
	"      --pool-lag MS         pool events come MS after the engine's; negative: the\n"
	"                            engine's come -MS after the pool's (1)\n"
	"      --pool-backend NAME   pool events name NAME as their backend_id, not their\n"
	"                            node's IP (a decoupled pool: mooncake-daemon-0)\n"
	"      --policy random|round-robin|kv|affinity  routing (kv: cache affinity and\n"
	"                            load, as routers weigh them; affinity: affinity alone)\n"
	"      --weights N,C,D       kv routing weights of npu, cpu, disk blocks (1,1,0)\n"
	"      --load-weight L       kv routing: score less L per prompt block of the\n"
	"                            requests the worker took within --load-window (1;\n"
	"                            0: cache affinity alone)\n"
	"      --load-window SECS    of trace time (20)\n"
	"      --seed N              tokens and random routing (1)\n"
	"      --speed X             compress trace time X times (1)\n"
	"      --vllm-format array|map  vLLM events as arrays (up to 0.25) or maps (0.26+) (array)\n"
	"      --hash-format int|bytes  vLLM block hashes as ints or 32-byte sha256 (int)\n"
	"      --model NAME          model name in events and registrations (llama)\n"
	"      --limit N             serve only the first N requests\n"
	"      --registrations FILE  write the cluster's registrations (for kvmatch -r)\n"
	"      --snapshot FILE       write the simulated index as a kvsnap snapshot\n"
	"      --report FILE         write a JSON report: hit rates per medium, over time\n"
	"      --queries FILE        write each request as a /query line (token_ids)\n"
	"      --queries-by-hash FILE  write each request as a /query_by_hash line\n"
	"      --window SECS         report windows of SECS of trace time (60)\n"
	"      --progress            a progress line on stderr, even when it is not a terminal\n"
	"                            (then a whole line a second)\n"
	"      --no-progress         no progress line (the default on a terminal is one)\n"
	"  -q, --quiet               no summary and no progress line on stderr\n"
	"  -v, --verbose             more messages\n"
	"  -h, --help                show this help and exit\n"
	"  -V, --version             show the version and exit\n"
	"\n"
	"Exit status: 0 success, 64 usage, 65 bad trace lines (the rest was served) or\n"
	"a gzip-compressed trace (use zcat), 66 cannot open the trace, 70 internal error\n"
	"(out of memory), 74 write error.  See kvgen(1).\n";

enum { OPT_WORKERS = 256, OPT_DP, OPT_CAPACITY, OPT_BLOCK_SIZE, OPT_POOL, OPT_POOL_CAPACITY, OPT_DISK_CAPACITY,
       OPT_POOL_LAG, OPT_POLICY, OPT_WEIGHTS, OPT_SEED, OPT_SPEED, OPT_VLLM_FORMAT, OPT_HASH_FORMAT, OPT_MODEL,
       OPT_LIMIT, OPT_REGS, OPT_SNAPSHOT, OPT_REPORT, OPT_WINDOW, OPT_LOAD_WEIGHT, OPT_LOAD_WINDOW, OPT_QUERIES,
       OPT_QUERIES_BY_HASH, OPT_POOL_BACKEND };

static const struct option longopts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "no-capture", no_argument, NULL, 'n' },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "dp", required_argument, NULL, OPT_DP },
	{ "capacity", required_argument, NULL, OPT_CAPACITY },
	{ "block-size", required_argument, NULL, OPT_BLOCK_SIZE },
	{ "pool", required_argument, NULL, OPT_POOL },
	{ "pool-capacity", required_argument, NULL, OPT_POOL_CAPACITY },
	{ "disk-capacity", required_argument, NULL, OPT_DISK_CAPACITY },
	{ "pool-lag", required_argument, NULL, OPT_POOL_LAG },
	{ "pool-backend", required_argument, NULL, OPT_POOL_BACKEND },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "weights", required_argument, NULL, OPT_WEIGHTS },
	{ "load-weight", required_argument, NULL, OPT_LOAD_WEIGHT },
	{ "load-window", required_argument, NULL, OPT_LOAD_WINDOW },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "speed", required_argument, NULL, OPT_SPEED },
	{ "vllm-format", required_argument, NULL, OPT_VLLM_FORMAT },
	{ "hash-format", required_argument, NULL, OPT_HASH_FORMAT },
	{ "model", required_argument, NULL, OPT_MODEL },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "registrations", required_argument, NULL, OPT_REGS },
	{ "snapshot", required_argument, NULL, OPT_SNAPSHOT },
	{ "report", required_argument, NULL, OPT_REPORT },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "queries", required_argument, NULL, OPT_QUERIES },
	{ "queries-by-hash", required_argument, NULL, OPT_QUERIES_BY_HASH },
	KV_PROGRESS_OPTIONS,
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

struct options {
	const char *output, *regs, *snapshot, *report, *queries;
	bool queries_by_hash;
	bool no_capture;
	uint64_t limit;
	int quiet, verbose;
	int progress;                 /* --progress 1, --no-progress -1 */
	struct kv_sim_opts sim;
};

static uint32_t count_option(const char *name, const char *arg, uint64_t min, uint64_t max)
{
	uint64_t v;
	if (!kv_parse_u64(arg, min, max, &v))
		kv_usage_error("%s: '%s' is not a number from %llu to %llu", name, arg, (unsigned long long)min,
			       (unsigned long long)max);
	return (uint32_t)v;
}

static int choice(const char *name, const char *arg, const char *const *names)
{
	for (int i = 0; names[i]; i++)
		if (strcmp(arg, names[i]) == 0)
			return i;
	kv_usage_error("%s: '%s' is not one of the choices (see --help)", name, arg);
}

static void parse_weights(const char *s, struct kv_weights *w)
{
	double v[3];
	kv_opt_numbers("--weights", s, 0, 1e9, v, 3, "three non-negative numbers N,C,D");
	*w = (struct kv_weights){ v[0], v[1], v[2] };
}

/* The outputs of a run, in the order they are named in messages: the
 * capture (standard output unless -o; none with -n) first. */
#define KV_GEN_OUTPUTS 5
struct outputs {
	struct kv_out_name v[KV_GEN_OUTPUTS];
};
static struct outputs outputs(const struct options *o)
{
	const char *capture = o->no_capture ? NULL : o->output ? o->output : "-";
	return (struct outputs){ { { "-o", capture }, { "--registrations", o->regs }, { "--snapshot", o->snapshot },
				   { "--report", o->report },
				   { o->queries_by_hash ? "--queries-by-hash" : "--queries", o->queries } } };
}

static void parse_options(int argc, char **argv, struct options *o)
{
	static const char *const pools[] = { "none", "memcache", "mooncake", NULL };
	static const char *const policies[] = { "random", "round-robin", "kv", "affinity", NULL };
	static const char *const vllm_formats[] = { "array", "map", NULL };
	static const char *const hash_formats[] = { "int", "bytes", NULL };
	struct kv_sim_opts *s = &o->sim;
	*s = (struct kv_sim_opts){ .instances = 16, .dp = 4, .capacity = 16384, .block_size = 16,
				   .pool_capacity = 262144, .policy = KV_POLICY_KV, .weights = KV_WEIGHTS_DEFAULT,
				   .seed = 1, .speed = 1, .pool_lag_ns = 1000000, .model = "llama",
				   .base_ns = 1764547200000000000ull, .window_ns = 60000000000ull,
				   .load_window_ns = KV_SIM_LOAD_WINDOW_DEFAULT, .load_weight = KV_SIM_LOAD_WEIGHT_DEFAULT };
	bool load_weight_given = false;
	int c;
	int64_t lag;
	double speed;
	while ((c = getopt_long(argc, argv, "o:nqvhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': o->output = optarg; break;
		case 'n': o->no_capture = true; break;
		case OPT_WORKERS: s->instances = count_option("--workers", optarg, 1, 65536); break;
		case OPT_DP: s->dp = count_option("--dp", optarg, 1, 256); break;
		case OPT_CAPACITY: s->capacity = count_option("--capacity", optarg, 1, 1u << 30); break;
		case OPT_BLOCK_SIZE:
			s->block_size = count_option("--block-size", optarg, 1, 512);
			if (KV_TRACE_BLOCK % s->block_size)
				kv_usage_error("--block-size: %u does not divide the trace's 512-token blocks", s->block_size);
			break;
		case OPT_POOL: s->pool = (enum kv_pool_kind)choice("--pool", optarg, pools); break;
		case OPT_POOL_CAPACITY: s->pool_capacity = count_option("--pool-capacity", optarg, 1, 1u << 30); break;
		case OPT_DISK_CAPACITY: s->disk_capacity = count_option("--disk-capacity", optarg, 0, 1u << 30); break;
		case OPT_POOL_LAG:
			if (!kv_parse_i64(optarg, -3600000, 3600000, &lag))
				kv_usage_error("--pool-lag: '%s' is not milliseconds within an hour", optarg);
			s->pool_lag_ns = lag * 1000000;
			break;
		case OPT_POOL_BACKEND:
			kv_opt_name("--pool-backend", optarg, "a backend_id");
			s->pool_backend = optarg;
			break;
		case OPT_POLICY: s->policy = (enum kv_policy)choice("--policy", optarg, policies); break;
		case OPT_WEIGHTS: parse_weights(optarg, &s->weights); break;
		case OPT_LOAD_WEIGHT:
			if (!kv_parse_double(optarg, 0, 1e9, &s->load_weight))
				kv_usage_error("--load-weight: '%s' is not a non-negative number", optarg);
			load_weight_given = true;
			break;
		case OPT_LOAD_WINDOW:
			s->load_window_ns = (uint64_t)count_option("--load-window", optarg, 1, 86400) * 1000000000ull;
			break;
		case OPT_SEED: s->seed = count_option("--seed", optarg, 0, UINT32_MAX); break;
		case OPT_SPEED:
			if (!kv_parse_double(optarg, 1e-3, 1e9, &speed))
				kv_usage_error("--speed: '%s' is not a positive number", optarg);
			s->speed = speed;
			break;
		case OPT_VLLM_FORMAT: s->emit.vllm_map = choice("--vllm-format", optarg, vllm_formats) == 1; break;
		case OPT_HASH_FORMAT: s->emit.hash_bytes = choice("--hash-format", optarg, hash_formats) == 1; break;
		case OPT_MODEL:
			kv_opt_name("--model", optarg, "a model name");
			s->model = optarg;
			break;
		case OPT_LIMIT: o->limit = count_option("--limit", optarg, 1, UINT32_MAX); break;
		case OPT_REGS: o->regs = optarg; break;
		case OPT_SNAPSHOT: o->snapshot = optarg; break;
		case OPT_REPORT: o->report = optarg; break;
		case OPT_QUERIES:
		case OPT_QUERIES_BY_HASH:
			o->queries = optarg;
			o->queries_by_hash = c == OPT_QUERIES_BY_HASH;
			break;
		case OPT_WINDOW: s->window_ns = (uint64_t)count_option("--window", optarg, 1, 86400 * 365) * 1000000000ull; break;
		case KV_OPT_PROGRESS: o->progress = 1; break;
		case KV_OPT_NO_PROGRESS: o->progress = -1; break;
		case 'q': o->quiet++; break;
		case 'v': o->verbose++; break;
		case 'h': kv_print_help(usage);
		case 'V': kv_print_version();
		default: kv_try_help();
		}
	}
	s->emit.mooncake = s->pool == KV_POOL_MOONCAKE;
	if (s->pool_backend && s->pool == KV_POOL_NONE)
		kv_usage_error("--pool-backend: no pool (--pool memcache or mooncake)");
	if (load_weight_given && s->load_weight > 0 && s->policy == KV_POLICY_AFFINITY)
		kv_usage_error("--load-weight: --policy affinity weighs cache affinity alone (use --policy kv)");
	if (optind < argc - 1)
		kv_usage_error("one trace at most");
	const char *trace = optind < argc ? argv[optind] : "-";
	struct kv_err e = { 0 };
	if (!kv_out_refuse_same(outputs(o).v, KV_GEN_OUTPUTS, &e) ||
	    !kv_out_refuse_input("-o", o->output, trace, &e) ||
	    !kv_out_refuse_input("--registrations", o->regs, trace, &e) ||
	    !kv_out_refuse_input("--snapshot", o->snapshot, trace, &e) ||
	    !kv_out_refuse_input("--report", o->report, trace, &e) ||
	    !kv_out_refuse_input(o->queries_by_hash ? "--queries-by-hash" : "--queries", o->queries, trace, &e))
		kv_err_exit(&e);
}

/* Writes a side file with fn; false (message given) on failure. */
static bool write_file(const char *path, void (*fn)(const struct kv_sim *, FILE *), const struct kv_sim *s)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		kv_warn_errno("%s", path);
		return false;
	}
	fn(s, f);
	if (ferror(f) | fclose(f)) {
		kv_warn_errno("%s", path);
		return false;
	}
	return true;
}

/* The trace, opened and its first bytes read, so that a compressed file is
 * refused before any output is written. */
struct trace_in {
	int fd;
	const char *name;
	const char *path;             /* as named: "-" for standard input */
	bool size_known;              /* a regular file, of this many bytes */
	uint64_t size;
	unsigned char head[2];
	size_t nhead;
};

/* Reads the first bytes of the trace; a read error is left for the line
 * reader to meet again and report with the file's name. */
static void read_head(struct trace_in *t)
{
	struct kv_reader in;
	kv_reader_init(&in, t->fd);
	size_t got = 1;
	while (t->nhead < sizeof t->head && got > 0 &&
	       kv_reader_fill(&in, t->head + t->nhead, sizeof t->head - t->nhead, &got) == KV_READ_OK)
		t->nhead += got;
}

/* 0, or the exit status when the trace cannot be served at all: it does not
 * open (66), or it is gzip data (65): decoding it as lines would print an
 * error for every line. */
static int open_trace(const char *path, struct trace_in *t)
{
	t->path = path ? path : "-";
	t->nhead = 0;
	struct kv_err e = { 0 };
	if (!kv_input_open_named(t->path, &t->fd, &t->name, &e))
		return kv_err_print(&e);
	t->size_known = kv_input_size(t->path, &t->size);
	read_head(t);
	if (t->nhead == 2 && t->head[0] == 0x1f && t->head[1] == 0x8b) {
		kv_warn("%s: gzip-compressed; decompress it first: zcat %s | %s [OPTION]...", t->name,
			t->fd == STDIN_FILENO ? "FILE" : path, kv_prog);
		kv_input_close(t->fd);
		return KV_EX_DATAERR;
	}
	return KV_EX_OK;
}

static int serve_trace(struct kv_sim *sim, const struct options *o, struct trace_in *t, struct kv_out *out)
{
	const char *name = t->name;
	struct kv_lines l;
	kv_lines_init(&l, t->fd, KV_TRACE_MAX_LINE, t->head, t->nhead);
	struct kv_trace_req req = { 0 };
	struct kv_err e = { 0 };
	char *line;
	size_t n;
	uint64_t served = 0, bad = 0, went_back = 0;
	enum kv_lines_status st = KV_LINE;
	/* the capture failing (a reader gone) ends the run only when no file is to be written besides */
	bool side_files = o->regs || o->snapshot || o->report || o->queries;
	struct kv_progress progress;
	/* the capture on standard output is never a terminal's (refused) */
	kv_progress_init(&progress, kv_progress_choose(o->progress, o->quiet, false), "requests", NULL);
	/* --limit ends the run before the trace does: the bytes to come are not known */
	kv_progress_set_total(&progress, t->size_known && !o->limit, t->size);
	while ((!o->limit || served < o->limit) && !kv_stop_signal && !(out && kv_out_ends_work(out, side_files)) &&
	       (st = kv_lines_next(&l, &line, &n)) != KV_LINES_EOF && st != KV_LINES_STOPPED) {
		if (kv_progress_due(&progress))
			kv_progress_show(&progress, kv_lines_taken(&l), served, 0);
		if (st == KV_LINES_ERROR) {
			kv_progress_hide(&progress);
			kv_warn("%s: %s", name, strerror(l.in.err));
			bad++;
			break;
		}
		if (st == KV_LINE && line[strspn(line, " \t")] == 0)
			continue;
		if (st == KV_LINE_TOO_LONG || !kv_trace_parse(line, n, &req, &e)) {
			kv_progress_hide(&progress);
			kv_warn("%s: line %llu: %s", name, (unsigned long long)l.lineno,
				st == KV_LINE_TOO_LONG ? "longer than 1 MiB" : kv_err_msg(&e));
			kv_err_clear(&e);
			bad++;
			continue;
		}
		if (!kv_sim_request(sim, &req) && !went_back++) {
			kv_progress_hide(&progress);
			kv_warn("%s: line %llu: timestamp %llu ms goes back before the previous request's: served at "
				"the time reached instead, as is every later one that goes back (said once)",
				name, (unsigned long long)l.lineno, (unsigned long long)req.ts_ms);
		}
		served++;
	}
	kv_progress_end(&progress, kv_lines_taken(&l), served, 0);
	/* the signal ended it, not the trace, --limit or a failed capture */
	bool stopped = kv_stop_signal && st != KV_LINES_EOF && st != KV_LINES_ERROR && !(o->limit && served >= o->limit) &&
		       !(out && kv_out_ends_work(out, side_files));
	if (stopped && !o->quiet) {
		struct outputs outs = outputs(o);
		const char *products[KV_GEN_OUTPUTS];
		for (size_t i = 0; i < KV_GEN_OUTPUTS; i++)
			products[i] = outs.v[i].path;
		kv_say_stopped(products, KV_GEN_OUTPUTS);
	}
	free(req.hash_ids);
	kv_lines_free(&l);
	kv_input_close(t->fd);
	return bad ? KV_EX_DATAERR : KV_EX_OK;
}

#define TTY_REFUSAL "refusing to write a binary capture to a terminal (use -o FILE, a pipe or -n)"

int main(int argc, char **argv)
{
	struct options o = { 0 };
	kv_start(argv);
	parse_options(argc, argv, &o);
	bool to_stdout = !o.output || strcmp(o.output, "-") == 0;
	/* before reading the trace, which may be a terminal waiting for input */
	if (!o.no_capture && to_stdout && isatty(STDOUT_FILENO))
		kv_usage_error(TTY_REFUSAL);
	/* what is written at the end must be writable before the simulation runs */
	const char *products[] = { o.regs, o.report, o.snapshot, o.queries };
	struct kv_err e = { 0 };
	if (!kv_out_check_creatable(products, sizeof products / sizeof products[0], &e))
		return kv_err_print(&e);
	struct trace_in trace;
	int opened = open_trace(optind < argc ? argv[optind] : NULL, &trace);
	if (opened)
		return opened;
	struct kv_out out;
	bool capture = !o.no_capture;
	if (capture) {
		if (!kv_out_open(&out, o.output, &e))
			return kv_err_print(&e);
		if (out.tty)
			kv_usage_error(TTY_REFUSAL);
		kv_cap_write_header(&out, "kvgen " KV_VERSION, o.sim.base_ns);
	}
	kv_install_signals(false);
	struct kv_sim *sim = kv_sim_new(&o.sim, capture ? &out : NULL);
	FILE *queries = NULL;
	if (o.queries) {
		if (!(queries = fopen(o.queries, "w")))
			kv_die(KV_EX_IOERR, "%s: %s", o.queries, strerror(errno));
		kv_sim_queries(sim, queries, o.queries_by_hash);
	}
	int status = serve_trace(sim, &o, &trace, capture ? &out : NULL);
	kv_sim_finish(sim);
	if (queries && (ferror(queries) | fclose(queries))) {
		kv_warn_errno("%s", o.queries);
		status = kv_status_merge(status, KV_EX_IOERR);
	}
	if (capture && !kv_out_close(&out, &e))
		status = kv_status_merge(status, kv_err_print(&e));
	if (o.regs && !write_file(o.regs, kv_sim_write_registrations, sim))
		status = kv_status_merge(status, KV_EX_IOERR);
	if (o.report && !write_file(o.report, kv_sim_report, sim))
		status = kv_status_merge(status, KV_EX_IOERR);
	if (o.snapshot && !kv_sim_write_snapshot(sim, o.snapshot, &e))
		status = kv_status_merge(status, kv_err_print(&e));
	if (!o.quiet)
		kv_sim_summary(sim, stderr);
	kv_sim_free(sim);
	return status;
}

/* kvsub: capture KV-cache events from ZMQ publishers into a kvcap stream. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/capture.h"
#include "base/endpoint.h"
#include "decode/kvcap.h"
#include "base/metrics.h"
#include "base/err.h"
#include "base/out.h"
#include "index/regs.h"
#include "base/optval.h"
#include "base/util.h"

static const char usage[] =
	"Usage: kvsub [OPTION]... [ENDPOINT]...\n"
	"Capture KV-cache event messages from ZMQ publishers (vLLM, SGLang, memcache,\n"
	"Mooncake) and write them, byte for byte, as a kvcap stream.\n"
	"\n"
	"  -r, --registrations FILE  also subscribe to every endpoint registered in FILE\n"
	"  -o, --output FILE         write the capture to FILE (default: stdout, not a terminal)\n"
	"  -t, --topic PREFIX        subscribe to topics starting with PREFIX (repeatable;\n"
	"                            default: all topics)\n"
	"  -b, --bind                bind the endpoints instead of connecting to them\n"
	"  -c, --count N             stop after N records\n"
	"  -W, --duration SECS       stop after SECS seconds\n"
	"      --replay SRC=ENDPOINT fill seq gaps of SRC from the vLLM replay socket ENDPOINT\n"
	"      --replay-from N       at start, ask every replay socket for its batches from seq N\n"
	"      --replay-timeout SECS end an ask of a replay after SECS without a reply (default 2)\n"
	"      --replay-retries N    ask again at most N times per gap while replies go missing\n"
	"                            (default 10)\n"
	"      --hwm N               messages queued per endpoint before ZMQ drops (default 100000;\n"
	"                            at most 64 MiB of frames of --max-message)\n"
	"      --max-message BYTES   refuse a frame larger than BYTES (default 1048576, at most\n"
	"                            67108864)\n"
	"      --metrics FILE        Prometheus counters per endpoint, rewritten every 5 s\n"
	"      --metrics-interval SECS  rewrite the metrics every SECS instead\n"
	"  -q, --quiet               no warnings and no statistics on stderr\n"
	"  -v, --verbose             progress on a terminal every second\n"
	"  -h, --help                show this help and exit\n"
	"  -V, --version             show the version and exit\n"
	"\n"
	"Exit status: 0 success (also after SIGINT, SIGTERM or a closed pipe), 64 usage,\n"
	"65 bad registrations, 66 cannot open a file, 69 endpoint unavailable, 70 internal\n"
	"error, 74 write error.\n"
	"See kvsub(1).\n";

enum {
	OPT_REPLAY = 256, OPT_REPLAY_FROM, OPT_REPLAY_TIMEOUT, OPT_REPLAY_RETRIES, OPT_HWM, OPT_MAX_MESSAGE, OPT_METRICS,
	OPT_METRICS_INTERVAL
};

static const struct option longopts[] = {
	{ "registrations", required_argument, NULL, 'r' },
	{ "output", required_argument, NULL, 'o' },
	{ "topic", required_argument, NULL, 't' },
	{ "bind", no_argument, NULL, 'b' },
	{ "count", required_argument, NULL, 'c' },
	{ "duration", required_argument, NULL, 'W' },
	{ "replay", required_argument, NULL, OPT_REPLAY },
	{ "replay-from", required_argument, NULL, OPT_REPLAY_FROM },
	{ "replay-timeout", required_argument, NULL, OPT_REPLAY_TIMEOUT },
	{ "replay-retries", required_argument, NULL, OPT_REPLAY_RETRIES },
	{ "hwm", required_argument, NULL, OPT_HWM },
	{ "max-message", required_argument, NULL, OPT_MAX_MESSAGE },
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "metrics-interval", required_argument, NULL, OPT_METRICS_INTERVAL },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

struct options {
	const char *regs_path;
	const char *output;
	const char *metrics;
	uint64_t metrics_ns;
	const char **topics;
	size_t ntopics;
	const char **replays;        /* SRC=ENDPOINT */
	size_t nreplays;
	uint64_t duration_ns;
	int quiet, verbose;
	struct kv_capture_opts cap;
};

static void parse_options(int argc, char **argv, struct options *o)
{
	uint64_t v;
	struct kv_span key, value;
	int c;
	o->cap.hwm = 100000;
	o->cap.max_message = KV_CAPTURE_MAX_MESSAGE;
	o->cap.replay_timeout_ns = 2000000000ull;
	o->cap.replay_retries = 10;
	o->topics = kv_xcalloc((size_t)argc, sizeof *o->topics);
	o->replays = kv_xcalloc((size_t)argc, sizeof *o->replays);
	while ((c = getopt_long(argc, argv, "r:o:t:bc:W:qvhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'r': o->regs_path = optarg; break;
		case 'o': o->output = optarg; break;
		case 't':
			kv_opt_name("--topic", optarg, "a topic prefix");
			o->topics[o->ntopics++] = optarg;
			break;
		case 'b': o->cap.bind = true; break;
		case 'c':
			if (!kv_parse_u64(optarg, 1, UINT64_MAX, &o->cap.max_records))
				kv_usage_error("-c: '%s' is not a count of 1 or more", optarg);
			break;
		case 'W':
			if (!kv_parse_seconds(optarg, 1e9, &o->duration_ns) || o->duration_ns == 0)
				kv_usage_error("-W: '%s' is not a positive number of seconds", optarg);
			break;
		case OPT_REPLAY:
			kv_opt_pair("--replay", optarg, &key, &value, "SRC=ENDPOINT");
			o->replays[o->nreplays++] = optarg;
			break;
		case OPT_REPLAY_FROM:
			if (!kv_parse_u64(optarg, 0, UINT64_MAX - 1, &o->cap.replay_from))
				kv_usage_error("--replay-from: '%s' is not a sequence number", optarg);
			o->cap.replay_from_set = true;
			break;
		case OPT_REPLAY_TIMEOUT:
			if (!kv_parse_seconds(optarg, 3600, &o->cap.replay_timeout_ns) || o->cap.replay_timeout_ns == 0)
				kv_usage_error("--replay-timeout: '%s' is not a positive number of seconds", optarg);
			break;
		case OPT_REPLAY_RETRIES:
			if (!kv_parse_u64(optarg, 0, 1000, &v))
				kv_usage_error("--replay-retries: '%s' is not a count from 0 to 1000", optarg);
			o->cap.replay_retries = (unsigned)v;
			break;
		case OPT_HWM:
			if (!kv_parse_u64(optarg, 0, 100000000, &v))
				kv_usage_error("--hwm: '%s' is not a count (0 means no limit)", optarg);
			o->cap.hwm = (int)v;
			break;
		case OPT_MAX_MESSAGE:
			if (!kv_parse_u64(optarg, 1, KV_CAP_MAX_RECORD, &o->cap.max_message))
				kv_usage_error("--max-message: '%s' is not a size from 1 to %u bytes", optarg,
					       KV_CAP_MAX_RECORD);
			break;
		case OPT_METRICS: o->metrics = optarg; break;
		case OPT_METRICS_INTERVAL:
			if (!kv_parse_seconds(optarg, 1e9, &o->metrics_ns) || o->metrics_ns == 0)
				kv_usage_error("--metrics-interval: '%s' is not a positive number of seconds", optarg);
			break;
		case 'q': o->quiet++; break;
		case 'v': o->verbose++; break;
		case 'h': kv_print_help(usage);
		case 'V': kv_print_version();
		default: kv_try_help();
		}
	}
	o->cap.topics = o->topics;
	o->cap.ntopics = o->ntopics;
}

/* A connect endpoint whose host is "*" means the KV master service (kvsub(1) "ENVIRONMENT");
 * NULL when it cannot be resolved (the caller skips it). */
static char *resolve_endpoint(const char *url, bool bind, bool quiet)
{
	if (bind || !kv_endpoint_is_wildcard(url))
		return kv_xstrdup(url);
	const char *host = getenv("KVS_MASTER_SERVICE");
	if (host && *host)
		return kv_endpoint_with_host(url, host);
	if (!quiet)
		kv_warn("%s: wildcard host and KVS_MASTER_SERVICE is unset; skipped", url);
	return NULL;
}

static void add_endpoint(struct kv_capture *cap, const struct options *o, const char *url, const char *replay)
{
	char *ep = resolve_endpoint(url, o->cap.bind, o->quiet);
	if (!ep)
		return;
	struct kv_err e = { 0 };
	if (!o->cap.bind && !o->quiet && !kv_endpoint_resolves(ep, &e)) {
		kv_warn("%s; ZeroMQ keeps trying", kv_err_msg(&e));
		kv_err_clear(&e);
	}
	bool ok = kv_capture_add(cap, ep, replay, &e);
	free(ep);
	if (!ok)
		kv_err_exit(&e);
}

static void add_registered(struct kv_capture *cap, const struct options *o)
{
	struct kv_regs regs;
	struct kv_err e = { 0 };
	if (!kv_regs_load(o->regs_path, &regs, &e))
		exit(kv_err_print(&e));
	for (size_t i = 0; i < regs.n; i++) {
		const struct kv_reg *r = &regs.v[i];
		for (int m = 0; m < KV_NMEDIA; m++)
			if (r->medium_ep[m])
				add_endpoint(cap, o, r->medium_ep[m], m == KV_XPU ? r->replay_endpoint : NULL);
		/* An engine's "endpoint" is its HTTP address, not a publisher (kvsub(1) "DESCRIPTION"). */
		if (r->is_pool && r->endpoint)
			add_endpoint(cap, o, r->endpoint, NULL);
	}
	kv_regs_free(&regs);
}

static void add_replays(struct kv_capture *cap, const struct options *o)
{
	struct kv_err e = { 0 };
	for (size_t i = 0; i < o->nreplays; i++) {
		char *src = kv_xstrdup(o->replays[i]), *eq = strchr(src, '=');
		*eq = 0;
		if (!kv_capture_set_replay(cap, src, eq + 1, &e))
			kv_err_exit(&e);
		free(src);
	}
}

/* Opens (and so truncates) the capture file; exits 74 or, for a terminal, 64. */
static void open_output(struct kv_out *out, const char *path)
{
	struct kv_err e = { 0 };
	if (!kv_out_open(out, path, &e))
		kv_err_exit(&e);
	if (out->tty)
		kv_usage_error("refusing to write a binary capture to a terminal (use -o FILE or a pipe)");
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	kv_start(argv);
	parse_options(argc, argv, &o);
	struct kv_err e = { 0 };
	const struct kv_out_name outs[] = { { "-o", o.output ? o.output : "-" }, { "--metrics", o.metrics } };
	if (!kv_out_refuse_same(outs, 2, &e) || !kv_out_refuse_input("-o", o.output, o.regs_path, &e) ||
	    !kv_out_refuse_input("--metrics", o.metrics, o.regs_path, &e))
		kv_err_exit(&e);
	/* From the start: a stop during set-up still ends with a valid, empty capture. */
	kv_install_signals(false);

	/* Every error that can end set-up comes before the output is opened:
	 * -o truncates, and a typo must not wipe yesterday's capture.  The
	 * capture only writes to out once started. */
	struct kv_out out = { .fd = -1 };
	struct kv_capture *cap = kv_capture_new(&out, &o.cap);
	for (int i = optind; i < argc; i++)
		add_endpoint(cap, &o, argv[i], NULL);
	if (o.regs_path)
		add_registered(cap, &o);
	if (kv_capture_count(cap) == 0)
		kv_usage_error("no endpoints to capture from");
	add_replays(cap, &o);
	open_output(&out, o.output);
	/* a slow reader must not make ZeroMQ queue --hwm messages of any size */
	kv_out_nonblocking(&out);

	kv_cap_write_header(&out, "kvsub " KV_VERSION, kv_realtime_ns());
	kv_out_flush(&out);
	kv_capture_start(cap);

	struct kv_metrics metrics;
	if (o.metrics)
		kv_metrics_init(&metrics, o.metrics, o.metrics_ns);
	bool metrics_failed = false;
	uint64_t start = kv_monotonic_ns(), last_progress = start;
	bool progress = o.verbose && !o.quiet && isatty(STDERR_FILENO);
	bool ended = false;   /* by -W, -c or the output failing, not by a signal */
	while (!kv_stop_signal) {
		uint64_t now = kv_monotonic_ns();
		if (o.duration_ns && now - start >= o.duration_ns) {
			ended = true;
			break;
		}
		int timeout = 100;
		if (o.duration_ns && (o.duration_ns - (now - start)) / 1000000 < (uint64_t)timeout)
			timeout = (int)((o.duration_ns - (now - start)) / 1000000) + 1;
		if (!kv_capture_step(cap, timeout)) {
			ended = true;
			break;
		}
		if (o.metrics && kv_metrics_due(&metrics) && !kv_capture_write_metrics(cap, &metrics, &e)) {
			/* said once: the same failure every interval is noise */
			if (!metrics_failed)
				kv_err_print(&e);
			kv_err_clear(&e);
			metrics_failed = true;
		}
		if (progress && now - last_progress >= 1000000000ull) {
			kv_capture_print_progress(cap, stderr);
			last_progress = now;
		}
	}
	if (progress)
		fputc('\n', stderr);
	/* without -W or -c a signal is how a capture ends, not cut short */
	if (!ended && (o.duration_ns || o.cap.max_records) && !o.quiet) {
		const char *product = o.output ? o.output : "-";
		kv_say_stopped(&product, 1);
	}
	kv_capture_finish(cap);
	int status = kv_out_close(&out, &e) ? KV_EX_OK : kv_err_print(&e);
	if (o.metrics) {
		/* a write that failed on the way counts, as in kvmatch */
		if (metrics_failed)
			status = kv_status_merge(status, KV_EX_IOERR);
		if (!kv_capture_write_metrics(cap, &metrics, &e))
			status = kv_status_merge(status, kv_err_print(&e));
		kv_metrics_free(&metrics);
	}
	if (!o.quiet)
		kv_capture_print_stats(cap, stderr);
	kv_capture_free(cap);
	free(o.topics);
	free(o.replays);
	return status;
}

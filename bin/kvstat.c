/* kvstat: scrape the Prometheus metrics of KV stores and engines; JSON lines or a live table. */
#include <getopt.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/fetch.h"
#include "base/err.h"
#include "base/out.h"
#include "prom/promtext.h"
#include "prom/scrapeset.h"
#include "base/optval.h"
#include "base/util.h"

static const char usage[] =
	"Usage: kvstat [OPTION]... ENDPOINT...\n"
	"Scrape the Prometheus metrics of KV stores (Mooncake, memcache) and engines\n"
	"every few seconds, and write one JSON line per sample, with the per-second\n"
	"rate of counters; on a terminal, a table of the kv_store_* metrics instead.\n"
	"ENDPOINT is a URL, or HOST[:PORT][/PATH]: port 50090 (the KV stores' metrics\n"
	"port) and path /metrics when not given.\n"
	"\n"
	"  -i, --interval SECS   scrape every SECS seconds (default 5)\n"
	"  -t, --timeout SECS    give up on a scrape after SECS (default: the interval,\n"
	"                        at most 10)\n"
	"  -m, --match REGEX     only metrics whose name matches the extended regular\n"
	"                        expression (default: all as JSON, ^kv_store_ in a table)\n"
	"  -f, --format FORMAT   json or table (default: table on a terminal, else json)\n"
	"  -o, --output FILE     write to FILE instead of standard output\n"
	"  -c, --count N         stop after N scrape rounds\n"
	"  -W, --duration SECS   stop after SECS seconds\n"
	"  -n, --dry-run         print the URL of each endpoint and exit\n"
	"  -q, --quiet           no messages about failed scrapes\n"
	"  -v, --verbose         report every failed scrape, and statistics at the end\n"
	"  -h, --help            show this help and exit\n"
	"  -V, --version         show the version and exit\n"
	"\n"
	"Exit status: 0 success (also after SIGINT, SIGTERM or a closed pipe), 64 usage,\n"
	"69 stopped by -c or -W without one successful scrape, 70 internal error,\n"
	"74 write error.  See kvstat(1).\n";

static const struct option longopts[] = {
	{ "interval", required_argument, NULL, 'i' },
	{ "timeout", required_argument, NULL, 't' },
	{ "match", required_argument, NULL, 'm' },
	{ "format", required_argument, NULL, 'f' },
	{ "output", required_argument, NULL, 'o' },
	{ "count", required_argument, NULL, 'c' },
	{ "duration", required_argument, NULL, 'W' },
	{ "dry-run", no_argument, NULL, 'n' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

enum format { FORMAT_AUTO, FORMAT_JSON, FORMAT_TABLE };

#define MAX_BODY (16u << 20)               /* bytes of one response */
#define MAX_CONNECT_NS 3000000000ull        /* connect timeout, unless --timeout is shorter */

struct options {
	const char *output;
	const char *match;
	enum format format;
	uint64_t interval_ns, timeout_ns, duration_ns, count;
	bool dry_run;
	int quiet, verbose;
};

static void parse_options(int argc, char **argv, struct options *o)
{
	int c;
	o->interval_ns = 5000000000ull;
	while ((c = getopt_long(argc, argv, "i:t:m:f:o:c:W:nqvhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (!kv_parse_seconds(optarg, 86400, &o->interval_ns) || o->interval_ns < 10000000)
				kv_usage_error("-i: '%s' is not a number of seconds from 0.01 to 86400", optarg);
			break;
		case 't':
			if (!kv_parse_seconds(optarg, 3600, &o->timeout_ns) || o->timeout_ns < 1000000)
				kv_usage_error("-t: '%s' is not a number of seconds from 0.001 to 3600", optarg);
			break;
		case 'm':
			kv_opt_name("--match", optarg, "an extended regular expression");
			o->match = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "json") == 0)
				o->format = FORMAT_JSON;
			else if (strcmp(optarg, "table") == 0)
				o->format = FORMAT_TABLE;
			else
				kv_usage_error("-f: '%s' is not json or table", optarg);
			break;
		case 'o': o->output = optarg; break;
		case 'c':
			if (!kv_parse_u64(optarg, 1, UINT64_MAX, &o->count))
				kv_usage_error("-c: '%s' is not a count of 1 or more", optarg);
			break;
		case 'W':
			if (!kv_parse_seconds(optarg, 1e9, &o->duration_ns) || o->duration_ns == 0)
				kv_usage_error("-W: '%s' is not a positive number of seconds", optarg);
			break;
		case 'n': o->dry_run = true; break;
		case 'q': o->quiet++; break;
		case 'v': o->verbose++; break;
		case 'h': kv_print_help(usage);
		case 'V': kv_print_version();
		default: kv_try_help();
		}
	}
	if (optind == argc)
		kv_usage_error("no endpoints to scrape");
	if (!o->timeout_ns)
		o->timeout_ns = o->interval_ns < 10000000000ull ? o->interval_ns : 10000000000ull;
}

static void compile_match(const char *re, regex_t *rx)
{
	int rc = regcomp(rx, re, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		char msg[200];
		regerror(rc, rx, msg, sizeof msg);
		kv_usage_error("-m: '%s': %s", re, msg);
	}
}

static void add_endpoints(struct kv_scrapeset *set, char **args, int n)
{
	struct kv_err e = { 0 };
	for (int i = 0; i < n; i++) {
		char *url;
		if (!kv_scrape_url(args[i], &url, &e))
			kv_err_exit(&e);
		kv_scrapeset_add(set, url);
		free(url);
	}
}

static int dry_run(struct kv_out *out, const struct kv_scrapeset *set)
{
	struct kv_err e = { 0 };
	for (size_t i = 0; i < set->n; i++) {
		kv_out_puts(out, set->ep[i].url);
		kv_out_putc(out, '\n');
	}
	return kv_out_close(out, &e) ? KV_EX_OK : kv_err_print(&e);
}

/* Scrape rounds until a limit or a signal; true when -c or -W ended them. */
static bool run(const struct options *o, struct kv_scrapeset *set, struct kv_fetch *f, struct kv_out *out)
{
	uint64_t start = kv_monotonic_ns(), next = start;
	bool active = false;
	while (!kv_stop_signal && !kv_out_failed(out)) {
		uint64_t now = kv_monotonic_ns();
		if (o->duration_ns && now - start >= o->duration_ns)
			return true;
		if (!active && now >= next) {
			kv_scrapeset_begin_round(set);
			for (size_t i = 0; i < set->n; i++)
				kv_fetch_start(f, i);
			active = true;
			next = now + o->interval_ns;
		}
		uint64_t until = active ? now + 100000000ull : next;
		if (o->duration_ns && start + o->duration_ns < until)
			until = start + o->duration_ns;
		uint64_t wait = until > now ? (until - now + 999999) / 1000000 : 0;
		kv_fetch_wait(f, wait > 100 ? 100 : (int)wait);
		struct kv_fetch_result r;
		struct kv_err news = { 0 };
		while (kv_fetch_next(f, &r)) {
			if (r.ok)
				kv_scrapeset_ok(set, r.i, r.body, r.len, kv_monotonic_ns(), kv_realtime_ns(), &news);
			else
				kv_scrapeset_fail(set, r.i, r.error, r.kind, &news);
			kv_err_print(&news);
		}
		if (active && kv_fetch_running(f) == 0) {
			active = false;
			kv_scrapeset_end_round(set, kv_realtime_ns());
			if (o->count && set->rounds >= o->count)
				return true;
		}
	}
	return false;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	kv_start(argv);
	parse_options(argc, argv, &o);

	regex_t rx;
	const char *match = o.match;
	if (match)
		compile_match(match, &rx);
	struct kv_out out;
	struct kv_err e = { 0 };
	if (!kv_out_open(&out, o.output, &e))
		return kv_err_print(&e);
	bool table = o.format == FORMAT_TABLE || (o.format == FORMAT_AUTO && out.tty);
	if (!match && table) {
		match = "^kv_store_";
		compile_match(match, &rx);
	}
	struct kv_scrape_opts so = {
		.limits = KV_PROM_LIMITS_DEFAULT, .match = match ? &rx : NULL, .table = table,
		.screen = table && out.tty, .quiet = o.quiet, .verbose = o.verbose, .interval_ns = o.interval_ns,
	};
	struct kv_scrapeset set;
	kv_scrapeset_init(&set, &out, &so);
	add_endpoints(&set, argv + optind, argc - optind);
	if (o.dry_run) {
		int status = dry_run(&out, &set);
		kv_scrapeset_free(&set);
		if (match)
			regfree(&rx);
		return status;
	}

	struct kv_fetch_opts fo = {
		.timeout_ns = o.timeout_ns,
		.connect_timeout_ns = o.timeout_ns < MAX_CONNECT_NS ? o.timeout_ns : MAX_CONNECT_NS,
		.max_body = MAX_BODY, .user_agent = "kvstat/" KV_VERSION,
	};
	struct kv_fetch *f;
	if (!kv_fetch_new(&f, &fo, &e))
		kv_err_exit(&e);
	for (size_t i = 0; i < set.n; i++)
		if (!kv_fetch_add(f, set.ep[i].url, &e))
			kv_err_exit(&e);

	kv_install_signals(false);
	bool limited = run(&o, &set, f, &out);
	kv_fetch_free(f);
	/* without -c or -W a signal is how a run ends, not cut short */
	if (!limited && !kv_out_failed(&out) && (o.count || o.duration_ns) && !o.quiet) {
		const char *product = o.output ? o.output : "-";
		kv_say_stopped(&product, 1);
	}
	int status = kv_out_close(&out, &e) ? KV_EX_OK : kv_err_print(&e);
	if (o.verbose && !o.quiet)
		kv_scrapeset_print_stats(&set, stderr);
	if (status == KV_EX_OK && limited && !kv_scrapeset_any_ok(&set)) {
		if (!o.quiet)
			kv_warn("no scrape succeeded");
		status = kv_status_merge(status, KV_EX_UNAVAILABLE);
	}
	kv_scrapeset_free(&set);
	if (match)
		regfree(&rx);
	return status;
}

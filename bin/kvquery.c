/* kvquery: prefix lookups, routing decisions and explanations from a snapshot. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/input.h"
#include "base/out.h"
#include "query/answer.h"
#include "query/query.h"
#include "query/qlines.h"
#include "query/queryline.h"
#include "query/snapset.h"
#include "index/regs.h"
#include "base/optval.h"
#include "base/sort.h"
#include "base/util.h"
#include "http/post.h"
#include "query/against.h"

static const char usage[] =
	"Usage: kvquery -s FILE.kvsnap [OPTION]... [FILE]...\n"
	"Answer prefix lookups from a kvmatch snapshot, one query per line, in the shape\n"
	"of kv-conductor's /query.  A line is a /query body (token_ids), a /query_by_hash\n"
	"body (block_hashes) or a bare token list ([1,2,3] or 1 2 3).  With no FILE, or\n"
	"when FILE is -, read standard input.\n"
	"\n"
	"  -s, --snapshot FILE.kvsnap  the snapshot to answer from (required); repeated, shards\n"
	"                            whose partitions are disjoint, each query answered by its own\n"
	"  -o, --output FILE         write the answers to FILE\n"
	"      --model NAME          model of queries that name none\n"
	"      --tenant NAME         tenant of queries that name none\n"
	"      --block-size N        block size of queries that name none\n"
	"      --route               name the chosen worker for each query\n"
	"      --weights N,C,D       routing score weights for npu, cpu, disk blocks (1,1,0)\n"
	"      --explain             say for every worker where its match stopped and why\n"
	"      --shared-pool         count cpu and disk blocks held by any worker of the pool\n"
	"      --api conductor|mooncake  answer as kv-conductor's /query (default) or as\n"
	"                            Mooncake RFC #1403's (Mooncake Conductor, Dynamo's indexer)\n"
	"      --hash conductor|dynamo|rfc1403[:SEED]  how token queries are hashed: kv-conductor's\n"
	"                            chain (default), Dynamo's router's local hashes (lora_name\n"
	"                            and cache_namespace in the seed), or RFC #1403's sequence\n"
	"                            hashes (seed 1337)\n"
	"                            looked up among the hashes the engines published\n"
	"      --format json|table   JSON lines (default) or an aligned table for people\n"
	"      --watch               reload the snapshot when it is replaced\n"
	"      --timing              report answer times (hashing and walks) on stderr\n"
	"  -j, --jobs N              parse query lines on N threads ahead of the answers, when\n"
	"                            every FILE is a regular file (default: the processors\n"
	"                            online, at most 8; 0 with --timing); 0 parses each line\n"
	"                            in its turn\n"
	"      --against URL         ask the router at URL each query too, and write how its\n"
	"                            answer differs from kvquery's, and why (one line a query)\n"
	"      --events FILE         with --against: a capture the snapshot was built from\n"
	"                            (kvcap or event JSON lines; repeatable), to explain from\n"
	"  -r, --registrations FILE  with --against: the registrations kvmatch was given\n"
	"      --concurrency N       with --against: requests in flight at most (4)\n"
	"      --rate N              with --against: requests started a second at most (no limit)\n"
	"      --timeout SECS        with --against: a request's time at most (10)\n"
	"      --lag-window SECS     with --against: events this recent may not have reached\n"
	"                            the router yet (2)\n"
	"  -q, --quiet               no messages about bad queries\n"
	"  -v, --verbose             more messages\n"
	"  -h, --help                show this help and exit\n"
	"  -V, --version             show the version and exit\n"
	"\n"
	"Exit status: 0 success, 64 usage, 65 some query could not be answered (its line\n"
	"is null) or a bad snapshot, 66 cannot open an input, 70 internal error (out of\n"
	"memory), 74 write error.  With --against, as diff: 0 the answers agree, 1 every\n"
	"difference explained, 2 a difference unexplained, 69 the router did not answer\n"
	"some query, 70 also libcurl not loaded.  See kvquery(1).\n";

enum { OPT_MODEL = 256, OPT_TENANT, OPT_BLOCK_SIZE, OPT_ROUTE, OPT_WEIGHTS, OPT_EXPLAIN, OPT_SHARED, OPT_FORMAT,
       OPT_WATCH, OPT_TIMING, OPT_API, OPT_HASH, OPT_AGAINST, OPT_EVENTS, OPT_CONCURRENCY, OPT_RATE, OPT_TIMEOUT,
       OPT_LAG_WINDOW };

static const struct option longopts[] = {
	{ "snapshot", required_argument, NULL, 's' },
	{ "output", required_argument, NULL, 'o' },
	{ "model", required_argument, NULL, OPT_MODEL },
	{ "tenant", required_argument, NULL, OPT_TENANT },
	{ "block-size", required_argument, NULL, OPT_BLOCK_SIZE },
	{ "route", no_argument, NULL, OPT_ROUTE },
	{ "weights", required_argument, NULL, OPT_WEIGHTS },
	{ "explain", no_argument, NULL, OPT_EXPLAIN },
	{ "shared-pool", no_argument, NULL, OPT_SHARED },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "watch", no_argument, NULL, OPT_WATCH },
	{ "timing", no_argument, NULL, OPT_TIMING },
	{ "jobs", required_argument, NULL, 'j' },
	{ "api", required_argument, NULL, OPT_API },
	{ "hash", required_argument, NULL, OPT_HASH },
	{ "against", required_argument, NULL, OPT_AGAINST },
	{ "events", required_argument, NULL, OPT_EVENTS },
	{ "registrations", required_argument, NULL, 'r' },
	{ "concurrency", required_argument, NULL, OPT_CONCURRENCY },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "lag-window", required_argument, NULL, OPT_LAG_WINDOW },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

struct options {
	const char **snapshots;      /* -s, in order */
	size_t nsnapshots;
	const char *output, *model, *tenant;
	uint64_t block_size;
	bool route, explain, shared_pool, table, watch, timing;
	bool rfc;                    /* --api mooncake */
	bool rfc_hash;               /* --hash rfc1403 */
	bool dynamo_hash;            /* --hash dynamo */
	uint64_t rfc_seed;
	uint64_t jobs;               /* -j */
	bool jobs_given;
	struct kv_weights weights;
	int quiet, verbose;
	/* --against */
	const char *against, *registrations;
	char **events;
	size_t nevents;
	uint64_t concurrency, timeout_ns, window_ns;
	double rate;
};

/* --against's options; the router's URL is http(s). */
static void parse_against(int c, const char *arg, struct options *o)
{
	switch (c) {
	case OPT_AGAINST:
		if (strncmp(arg, "http://", 7) != 0 && strncmp(arg, "https://", 8) != 0)
			kv_usage_error("--against: '%s' is not an http:// or https:// URL", arg);
		o->against = arg;
		break;
	case OPT_EVENTS: o->events[o->nevents++] = (char *)arg; break;
	case 'r': o->registrations = arg; break;
	case OPT_CONCURRENCY:
		if (!kv_parse_u64(arg, 1, 64, &o->concurrency))
			kv_usage_error("--concurrency: '%s' is not a number from 1 to 64", arg);
		break;
	case OPT_RATE:
		if (!kv_parse_double(arg, 0, 1e6, &o->rate))
			kv_usage_error("--rate: '%s' is not a number of requests a second from 0 to 1000000", arg);
		break;
	case OPT_TIMEOUT:
		if (!kv_parse_seconds(arg, 3600, &o->timeout_ns) || !o->timeout_ns)
			kv_usage_error("--timeout: '%s' is not a number of seconds above 0, at most 3600", arg);
		break;
	case OPT_LAG_WINDOW:
		if (!kv_parse_seconds(arg, 86400, &o->window_ns))
			kv_usage_error("--lag-window: '%s' is not a number of seconds from 0 to 86400", arg);
		break;
	}
}

static void parse_weights(const char *s, struct kv_weights *w)
{
	double v[3];
	kv_opt_numbers("--weights", s, 0, 1e9, v, 3, "three non-negative numbers N,C,D");
	*w = (struct kv_weights){ v[0], v[1], v[2] };
}

/* --hash conductor | dynamo | rfc1403 | rfc1403:SEED (a u64; RFC #1403
 * names no default seed, Dynamo's is kv-conductor's 1337) */
static void parse_hash(const char *s, struct options *o)
{
	o->rfc_hash = strncmp(s, "rfc1403", 7) == 0;
	o->dynamo_hash = strcmp(s, "dynamo") == 0;
	o->rfc_seed = 1337;
	if (strcmp(s, "conductor") == 0 || strcmp(s, "rfc1403") == 0 || o->dynamo_hash)
		return;
	if (!o->rfc_hash || s[7] != ':' || !kv_parse_u64(s + 8, 0, UINT64_MAX, &o->rfc_seed))
		kv_usage_error("--hash: '%s' is not conductor, dynamo, rfc1403 or rfc1403:SEED", s);
}

/* Threads that parse lines ahead unless -j says: one for each processor
 * online, at most DEFAULT_JOBS (beyond, the answers are the limit); none
 * with --timing, whose times are of answers to lines parsed in turn, their
 * numbers in the answering processor's cache (kvquery(1), "Threads"). */
#define DEFAULT_JOBS 8u

static uint64_t default_jobs(bool timing)
{
	if (timing)
		return 0;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : (uint64_t)n < DEFAULT_JOBS ? (uint64_t)n : DEFAULT_JOBS;
}

static void parse_options(int argc, char **argv, struct options *o)
{
	int c;
	o->weights = KV_WEIGHTS_DEFAULT;
	o->snapshots = kv_xcalloc((size_t)argc, sizeof *o->snapshots);
	o->events = kv_xcalloc((size_t)argc, sizeof *o->events);
	o->concurrency = 4;
	o->timeout_ns = 10000000000ull;
	o->window_ns = 2000000000ull;
	while ((c = getopt_long(argc, argv, "s:o:r:j:qvhV", longopts, NULL)) != -1) {
		switch (c) {
		case 's': o->snapshots[o->nsnapshots++] = optarg; break;
		case 'o': o->output = optarg; break;
		case OPT_MODEL:
			kv_opt_name("--model", optarg, "a model name");
			o->model = optarg;
			break;
		case OPT_TENANT:
			kv_opt_name("--tenant", optarg, "a tenant name");
			o->tenant = optarg;
			break;
		case OPT_BLOCK_SIZE:
			if (!kv_parse_u64(optarg, 1, 1 << 20, &o->block_size))
				kv_usage_error("--block-size: '%s' is not a number from 1 to 1048576", optarg);
			break;
		case OPT_ROUTE: o->route = true; break;
		case OPT_WEIGHTS: parse_weights(optarg, &o->weights); break;
		case OPT_EXPLAIN: o->explain = true; break;
		case OPT_SHARED: o->shared_pool = true; break;
		case OPT_FORMAT:
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "table") != 0)
				kv_usage_error("--format: '%s' is not json or table", optarg);
			o->table = strcmp(optarg, "table") == 0;
			break;
		case OPT_WATCH: o->watch = true; break;
		case OPT_TIMING: o->timing = true; break;
		case 'j':
			if (!kv_parse_u64(optarg, 0, KV_QLINES_MAX_JOBS, &o->jobs))
				kv_usage_error("--jobs: '%s' is not a number from 0 to %u", optarg, KV_QLINES_MAX_JOBS);
			o->jobs_given = true;
			break;
		case OPT_API:
			if (strcmp(optarg, "conductor") != 0 && strcmp(optarg, "mooncake") != 0)
				kv_usage_error("--api: '%s' is not conductor or mooncake", optarg);
			o->rfc = strcmp(optarg, "mooncake") == 0;
			break;
		case OPT_HASH: parse_hash(optarg, o); break;
		case OPT_AGAINST:
		case OPT_EVENTS:
		case 'r':
		case OPT_CONCURRENCY:
		case OPT_RATE:
		case OPT_TIMEOUT:
		case OPT_LAG_WINDOW: parse_against(c, optarg, o); break;
		case 'q': o->quiet++; break;
		case 'v': o->verbose++; break;
		case 'h': kv_print_help(usage);
		case 'V': kv_print_version();
		default: kv_try_help();
		}
	}
	if (!o->nsnapshots)
		kv_usage_error("no snapshot (-s FILE.kvsnap)");
	if (o->against && (o->route || o->explain))
		kv_usage_error("--against compares answers: not with --route or --explain");
	if (!o->against && (o->nevents || o->registrations))
		kv_usage_error("--events and --registrations go with --against");
	if (!o->jobs_given)
		o->jobs = default_jobs(o->timing);
	if (o->against && o->jobs_given && o->jobs)
		kv_usage_error("--jobs: --against parses each line in its turn (its batches hold the queries)");
	if (o->against)
		o->jobs = 0;
}

struct run {
	const struct options *o;
	struct kv_out *out;
	struct kv_snapset *snaps;
	struct kv_querier *q;
	uint64_t bad, answered;
	bool stopped;                 /* a stop signal came before the end of an input */
	uint64_t *times;
	size_t ntimes, captimes;
	struct kv_answers answers;
	struct kv_against *against;   /* --against */
};

/* The snapshots, before -o truncates yesterday's answers: a bad one
 * leaves them be (65, 66). */
static void load_snapshots(struct run *r)
{
	struct kv_err e = { 0 };
	for (size_t i = 0; i < kv_snapset_count(r->snaps); i++) {
		uint64_t t0 = kv_monotonic_ns();
		if (!kv_snapset_load(r->snaps, i, &e))
			kv_err_exit(&e);
		if (r->o->verbose) {
			size_t blocks, workers, partitions;
			kv_snapset_sizes(r->snaps, i, &blocks, &workers, &partitions);
			kv_warn("%s: %zu blocks, %zu workers, %zu partitions loaded and checked in %.1f ms",
				kv_snapset_path(r->snaps, i), blocks, workers, partitions,
				(double)(kv_monotonic_ns() - t0) / 1e6);
		}
	}
	r->answers.name_width = kv_snapset_name_width(r->snaps);
}

static void flush_against(void *arg)
{
	struct run *r = arg;
	if (r->against)
		kv_against_flush(r->against); /* its queries point into the snapshot in use */
}

/* --watch: each snapshot replaced since it was loaded is loaded again. */
static void maybe_reload(struct run *r)
{
	for (size_t i = 0; i < kv_snapset_count(r->snaps); i++) {
		struct kv_err e = { 0 };
		int got = kv_snapset_refresh(r->snaps, i, flush_against, r, &e);
		if (got > 0 && r->o->verbose)
			kv_warn("%s: reloaded", kv_snapset_path(r->snaps, i));
		if (got < 0) {
			kv_warn("%s (keeping the snapshot loaded before)", kv_err_msg(&e));
			kv_err_clear(&e);
		}
		if (got > 0)
			r->answers.name_width = kv_snapset_name_width(r->snaps);
	}
}

static void flush_output(void *arg)
{
	struct run *r = arg;
	if (r->against)
		kv_against_flush(r->against);
	kv_out_flush(r->out);
}

static void bad_line(struct run *r, const char *file, uint64_t lineno, const char *why)
{
	r->bad++;
	if (!r->o->quiet)
		kv_warn("%s: line %llu: %s", file, (unsigned long long)lineno, why);
	if (r->against)
		kv_against_bad(r->against, r->answered, why);
	else
		kv_answers_write_null(&r->answers);
}

static void answer(struct run *r, const char *file, uint64_t lineno, const struct kv_qline *q)
{
	r->answered++;
	struct kv_resolved rq;
	const char *why = kv_snapset_resolve(r->snaps, q, &rq);
	if (why) {
		bad_line(r, file, lineno, why);
		return;
	}
	if (r->against) {
		struct kv_against_query aq = { r->answered, rq.src, rq.snap, r->q, &rq.req, q,
					       rq.model, rq.mlen, rq.tenant, rq.tlen };
		kv_against_add(r->against, &aq);
		if (kv_against_due(r->against))
			kv_against_flush(r->against);
		return;
	}
	struct kv_query_opts qo = { .shared_pool = r->o->shared_pool, .all_workers = r->o->explain || r->o->route };
	size_t nhits, nblocks;
	kv_querier_reserve(r->q, rq.src, &rq.req); /* growth is no answer's time */
	uint64_t t0 = r->o->timing ? kv_monotonic_ns() : 0;
	const struct kv_hit *hits = kv_query_run(r->q, rq.src, &rq.req, &qo, &nhits, &nblocks);
	const struct kv_hit *route = r->o->route ? kv_query_route(hits, nhits, &r->o->weights, r->q) : NULL;
	if (r->o->timing) {
		/* the time taken before the array grows: a copy of the times
		 * so far is no part of this answer's (it was the 256th's, 512th's...) */
		uint64_t t = kv_monotonic_ns() - t0;
		r->times = kv_xgrow(r->times, &r->captimes, r->ntimes + 1, sizeof *r->times);
		r->times[r->ntimes++] = t;
	}
	struct kv_answer a = { r->answered, rq.src, rq.tenant, rq.tlen, hits, nhits, nblocks, rq.req.block_size, route,
			       r->o->rfc ? q->instance : NULL };
	kv_answers_write(&r->answers, &a);
	kv_out_end_record(r->out);
	kv_out_flush_if_full(r->out);
}

static void report_timing(struct run *r)
{
	if (!r->ntimes)
		return;
	kv_sort_u64(r->times, r->ntimes);
	size_t p50 = r->ntimes / 2, p99 = (r->ntimes * 99) / 100;
	/* when the output failed, how many of those answers it holds */
	char written[48] = "";
	if (kv_out_failed(r->out))
		snprintf(written, sizeof written, " (%llu written)", (unsigned long long)kv_out_records(r->out));
	fprintf(stderr, "%s: %zu queries answered%s: p50 %.1f us, p99 %.1f us, max %.1f us (hashing and walks)\n",
		kv_prog, r->ntimes, written, r->times[p50] / 1e3, r->times[p99 < r->ntimes ? p99 : r->ntimes - 1] / 1e3,
		r->times[r->ntimes - 1] / 1e3);
}

/* The inputs' lines in order, each answered; their failures merged into
 * *status.  The inputs that could not be opened, counted. */
static unsigned read_inputs(struct run *r, char *const *files, size_t nfiles, int *status)
{
	struct kv_qlines_opts lo = { .jobs = (unsigned)r->o->jobs, .idle = flush_output, .idle_arg = r };
	struct kv_qlines *l = kv_qlines_new(files, nfiles, &lo);
	unsigned jobs = kv_qlines_jobs(l);
	if (r->o->verbose > 1 && jobs)
		kv_warn("query lines parsed ahead on %u thread%s", jobs, jobs == 1 ? "" : "s");
	else if (r->o->verbose > 1)
		kv_warn("query lines parsed in turn");
	unsigned unopened = 0;
	struct kv_qitem it;
	while (!kv_out_failed(r->out) && kv_qlines_next(l, &it)) {
		if (it.kind == KV_QI_STOPPED) {
			r->stopped = true;
			break;
		}
		if (it.kind == KV_QI_UNOPENED) {
			*status = kv_status_merge(*status, kv_err_print(&it.e));
			unopened++;
			continue;
		}
		if (it.kind == KV_QI_READ_ERROR) {
			/* the rest of it is lost: its queries go unanswered, as
			 * kvdecode's records after a read error */
			errno = it.err;
			kv_warn_errno("%s", it.file);
			*status = kv_status_merge(*status, KV_EX_DATAERR);
			continue;
		}
		if (r->o->watch)
			maybe_reload(r);
		/* every line takes its number, a bad one too (the table's and
		 * --against's QUERY column): a line too long did not, and the
		 * queries after it were numbered one short */
		if (it.kind == KV_QI_QUERY) {
			answer(r, it.file, it.lineno, it.q);
			continue;
		}
		r->answered++;
		bad_line(r, it.file, it.lineno, it.kind == KV_QI_TOO_LONG ? "line longer than 256 MiB" : it.why);
	}
	kv_qlines_free(l);
	return unopened;
}

static void free_run(struct run *r)
{
	kv_snapset_free(r->snaps);
	free(r->o->snapshots);
	free(r->o->events);
}

static enum kv_answer_kind answer_kind(const struct options *o)
{
	if (o->explain)
		return KV_ANSWER_EXPLAIN;
	if (o->route)
		return KV_ANSWER_ROUTE;
	return o->rfc ? KV_ANSWER_RFC : KV_ANSWER_CONDUCTOR;
}

/* --against: the router over HTTP (http/post), as query/against sees it. */
struct http {
	struct kv_post *post;
	char *query_url, *by_hash_url;
	struct kv_regs regs;
};

static void http_submit(void *ctx, uint64_t id, const char *path, const char *body, size_t len)
{
	struct http *h = ctx;
	kv_post_submit(h->post, id, strcmp(path, "/query") == 0 ? h->query_url : h->by_hash_url, body, len);
}

static size_t http_busy(void *ctx)
{
	return kv_post_busy(((struct http *)ctx)->post);
}

static void http_wait(void *ctx, int ms)
{
	kv_post_wait(((struct http *)ctx)->post, ms);
}

static bool http_next(void *ctx, struct kv_reply *r)
{
	struct kv_post_result p;
	if (!kv_post_next(((struct http *)ctx)->post, &p))
		return false;
	*r = (struct kv_reply){ p.id, p.failure == KV_POST_OK, p.status, p.body, p.len, kv_post_failure_name(p.failure),
				p.error };
	return true;
}

static char *route_url(const char *base, const char *path)
{
	size_t n = strlen(base);
	while (n > 8 && base[n - 1] == '/')
		n--;
	size_t pn = strlen(path);
	char *u = kv_xmalloc(n + pn + 1);
	memcpy(u, base, n);
	memcpy(u + n, path, pn + 1);
	return u;
}

/* The router's client and the comparison, before any query is read: a
 * capture or registrations that cannot be read stop the run (66, 65). */
static void start_against(struct run *r, struct http *h)
{
	const struct options *o = r->o;
	struct kv_err e = { 0 };
	for (size_t i = 0; i < o->nevents; i++) {
		int fd;
		if (strcmp(o->events[i], "-") == 0)
			kv_usage_error("--events: a capture is read again for each batch of queries: not standard input");
		if (!kv_input_open(o->events[i], &fd, &e))
			kv_err_exit(&e);
		close(fd);
	}
	if (o->registrations && !kv_regs_load(o->registrations, &h->regs, &e))
		kv_err_exit(&e);
	struct kv_post_opts po = { .timeout_ns = o->timeout_ns, .connect_timeout_ns = o->timeout_ns,
				   .max_body = 64u << 20, .concurrency = (unsigned)o->concurrency, .rate = o->rate,
				   .user_agent = "kvquery/" KV_VERSION };
	if (!kv_post_new(&h->post, &po, &e))
		kv_err_exit(&e);
	h->query_url = route_url(o->against, "/query");
	h->by_hash_url = route_url(o->against, "/query_by_hash");
	struct kv_transport t = { h, http_submit, http_busy, http_wait, http_next };
	struct kv_against_opts ao = { .url = o->against, .rfc = o->rfc, .shared_pool = o->shared_pool, .table = o->table,
				      .events = o->events, .nevents = o->nevents,
				      .regs = o->registrations ? &h->regs : NULL, .window_ns = o->window_ns,
				      .quiet = o->quiet };
	r->against = kv_against_new(&ao, &t, r->out);
}

static void stop_against(struct run *r, struct http *h)
{
	kv_against_free(r->against);
	kv_post_free(h->post);
	free(h->query_url);
	free(h->by_hash_url);
	kv_regs_free(&h->regs);
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	kv_start(argv);
	parse_options(argc, argv, &o);
	struct kv_err e = { 0 };
	for (size_t i = 0; i < o.nsnapshots; i++)
		if (!kv_out_refuse_input("-o", o.output, o.snapshots[i], &e))
			kv_err_exit(&e);
	if (!kv_out_refuse_inputs("-o", o.output, argv + optind, (size_t)(argc - optind), &e))
		kv_err_exit(&e);
	struct kv_out out;
	struct run r = { .o = &o, .out = &out };
	r.answers = (struct kv_answers){ .out = &out, .kind = answer_kind(&o), .table = o.table,
					 .shared_pool = o.shared_pool, .show_routed = o.route, .weights = o.weights };
	struct kv_snapset_opts so = { .model = o.model, .tenant = o.tenant, .block_size = o.block_size, .rfc = o.rfc,
				      .rfc_hash = o.rfc_hash, .dynamo_hash = o.dynamo_hash, .rfc_seed = o.rfc_seed };
	r.snaps = kv_snapset_new(o.snapshots, o.nsnapshots, &so);
	/* before the snapshots are read: a signal ends a load of gigabytes, or
	 * of a pipe that waits, as it ends the queries (status 0) */
	kv_install_signals(false);
	load_snapshots(&r);
	if (!kv_out_open(&out, o.output, &e)) {
		free_run(&r);
		return kv_err_print(&e);
	}
	r.q = kv_querier_new();
	struct http http = { 0 };
	if (o.against)
		start_against(&r, &http);
	int status = KV_EX_OK;
	unsigned unopened = read_inputs(&r, argv + optind, (size_t)(argc - optind), &status);
	if (r.stopped && !o.quiet) {
		const char *product = o.output ? o.output : "-";
		kv_say_stopped(&product, 1);
	}
	if (r.against)
		status = kv_status_merge(status, kv_against_finish(r.against));
	if (!kv_out_finish(&out, optind < argc && unopened == (unsigned)(argc - optind), &e))
		status = kv_status_merge(status, kv_err_print(&e));
	if (o.timing)
		report_timing(&r);
	if (r.bad)
		status = kv_status_merge(status, KV_EX_DATAERR);
	free(r.times);
	kv_answers_free(&r.answers);
	kv_querier_free(r.q);
	if (r.against)
		stop_against(&r, &http);
	free_run(&r);
	return status;
}

/* kvquery: prefix lookups, routing decisions and explanations from a snapshot. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/input.h"
#include "index/blockhash.h"
#include "base/lines.h"
#include "base/out.h"
#include "query/answer.h"
#include "query/query.h"
#include "query/queryline.h"
#include "index/regs.h"
#include "index/snap.h"
#include "index/snapload.h"
#include "index/snaplookup.h"
#include "base/optval.h"
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
	"some query.  See kvquery(1).\n";

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

static void parse_options(int argc, char **argv, struct options *o)
{
	int c;
	o->weights = KV_WEIGHTS_DEFAULT;
	o->snapshots = kv_xcalloc((size_t)argc, sizeof *o->snapshots);
	o->events = kv_xcalloc((size_t)argc, sizeof *o->events);
	o->concurrency = 4;
	o->timeout_ns = 10000000000ull;
	o->window_ns = 2000000000ull;
	while ((c = getopt_long(argc, argv, "s:o:r:qvhV", longopts, NULL)) != -1) {
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
}

/* One -s snapshot: a shard when there are several (kvquery(1), Sharding). */
struct shard {
	const char *path;
	struct kv_snap snap;
	struct kv_qsource src;
	struct stat snap_stat;
};

struct run {
	const struct options *o;
	struct kv_out *out;
	struct shard *shards;
	size_t nshards;
	struct shard *cur;       /* the shard that owns the partition of the query answered */
	struct kv_querier *q;
	struct kv_qparser *parser;
	struct kv_qline line;
	uint64_t bad, answered;
	bool stopped;                 /* a stop signal came before the end of an input */
	uint64_t *times;
	size_t ntimes, captimes;
	uint64_t *chains;             /* resolved seq_hashes */
	size_t capchains;
	uint64_t *seq;                /* --hash rfc1403: a token query's sequence hashes */
	size_t capseq;
	struct kv_answers answers;
	struct kv_against *against;   /* --against */
};

/* Partition p of shard sh holds blocks: a partition kvmatch created for
 * a registration alone holds none, and every shard given the same
 * registrations has it. */
static bool holds_blocks(const struct kv_snap *s, int64_t p)
{
	return p >= 0 && s->partitions[p].r[KV_RANGE_BLOCKS].count > 0;
}

/* The shard other than skip whose partition of p's name holds blocks too,
 * or NULL: p of s holds blocks. */
static const struct shard *partition_owner(const struct run *r, const struct shard *skip, const struct kv_snap *s,
					   size_t p)
{
	size_t mn, tn;
	const char *m = kv_snap_string(s, s->partitions[p].model, &mn);
	const char *t = kv_snap_string(s, s->partitions[p].tenant, &tn);
	if (!holds_blocks(s, (int64_t)p))
		return NULL;
	for (size_t i = 0; i < r->nshards; i++)
		if (&r->shards[i] != skip && r->shards[i].snap.data &&
		    holds_blocks(&r->shards[i].snap, kv_snap_partition(&r->shards[i].snap, m, mn, t, tn)))
			return &r->shards[i];
	return NULL;
}

/* Shards answer for disjoint partitions: false with "model/tenant in two
 * snapshots" (65) in e. */
static bool shards_disjoint(const struct run *r, const struct shard *sh, const struct kv_snap *s, struct kv_err *e)
{
	for (size_t p = 0; p < s->npartitions; p++) {
		const struct shard *other = partition_owner(r, sh, s, p);
		if (other) {
			size_t mn, tn;
			const char *m = kv_snap_string(s, s->partitions[p].model, &mn);
			const char *t = kv_snap_string(s, s->partitions[p].tenant, &tn);
			return kv_err_set(e, KV_EX_DATAERR,
					  "%s: partition %.*s/%.*s is in %s too: shards must hold disjoint partitions",
					  sh->path, (int)mn, m, (int)tn, t, other->path);
		}
	}
	return true;
}

static void measure_names(struct run *r)
{
	r->answers.name_width = 8;
	for (size_t k = 0; k < r->nshards; k++)
		for (size_t i = 0; i < r->shards[k].snap.nworkers; i++)
			if ((int)r->shards[k].snap.workers[i].instance_id.len > r->answers.name_width)
				r->answers.name_width = (int)r->shards[k].snap.workers[i].instance_id.len;
}

static int load(struct run *r, struct shard *sh, bool fatal)
{
	struct kv_snap s;
	struct kv_err e = { 0 };
	/* the version before reading it: a change while it is read is seen next time */
	struct stat version = { 0 };
	stat(sh->path, &version);
	/* what lookups need; the engine hashes when a line first needs them.
	 * A reload (--watch) takes a regular file only: a fifo or a device put
	 * in the snapshot's place would hang it or feed it without end. */
	bool ok = fatal ? kv_snapr_open(sh->path, KV_SNAP_PART_BLOCKS, &s, &e)
			: kv_snapr_open_regular(sh->path, KV_SNAP_PART_BLOCKS, &s, &e);
	if (ok && !shards_disjoint(r, sh, &s, &e)) {
		kv_snapr_close(&s);
		ok = false;
	}
	if (!ok) {
		if (!fatal) {
			kv_warn("%s (keeping the snapshot loaded before)", kv_err_msg(&e));
			kv_err_clear(&e);
			return -1;
		}
		kv_err_exit(&e);
	}
	kv_qsource_free(&sh->src);
	kv_snapr_close(&sh->snap);
	sh->snap = s;
	kv_qsource_snap(&sh->src, &sh->snap);
	sh->snap_stat = version;
	measure_names(r);
	return 0;
}

/* Whether the path still names the file as it was at load.  ctime too:
 * a rewrite in place keeps the inode and may keep the size, and mtime can
 * be set back (cp -p, rsync, touch -r); a change of ctime cannot be hidden.
 * A pipe or a device read at start (-s /dev/stdin) is the same file while
 * the path names it: its times change as it is written, not replaced. */
static bool same_version(const struct stat *a, const struct stat *b)
{
	if (a->st_dev == b->st_dev && a->st_ino == b->st_ino && !S_ISREG(a->st_mode) && !S_ISREG(b->st_mode))
		return true;
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* --watch: kvmatch replaces the file by rename, others rewrite it in place;
 * either is a new version.  The snapshot in use is a copy in memory, so it
 * stays whole whatever the file goes through. */
static void maybe_reload(struct run *r, struct shard *sh)
{
	struct stat st;
	if (stat(sh->path, &st) != 0)
		return;
	if (!same_version(&st, &sh->snap_stat)) {
		if (r->against)
			kv_against_flush(r->against); /* its queries point into the snapshot in use */
		if (load(r, sh, false) == 0 && r->o->verbose)
			kv_warn("%s: reloaded", sh->path);
		else
			sh->snap_stat = st; /* a bad file is not retried until it changes again */
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

/* The snapshot holding the only partition of all the snapshots, or NULL. */
static const struct kv_snap *single_partition(const struct run *r)
{
	const struct kv_snap *only = NULL;
	for (size_t i = 0; i < r->nshards; i++) {
		if (r->shards[i].snap.npartitions > 1 || (only && r->shards[i].snap.npartitions))
			return NULL;
		if (r->shards[i].snap.npartitions)
			only = &r->shards[i].snap;
	}
	return only;
}

/* The shard whose partition of that name holds blocks, else the first that
 * has it (registered, empty): r->cur and the partition's index, or -1. */
static void find_partition(struct run *r, struct kv_str model, struct kv_str tenant, int64_t *part)
{
	*part = -1;
	for (size_t i = 0; i < r->nshards; i++) {
		int64_t p = kv_snap_partition(&r->shards[i].snap, model.p, model.n, tenant.p, tenant.n);
		if (p >= 0 && (*part < 0 || holds_blocks(&r->shards[i].snap, p))) {
			r->cur = &r->shards[i];
			*part = p;
		}
		if (holds_blocks(&r->shards[i].snap, p))
			return;
	}
}

/* Model, tenant and block size of a query: its own, the options', or the
 * single partition's; a tenant named nowhere is kv-conductor's "default".
 * The shard that holds the partition answers (r->cur). */
static const char *resolve(struct run *r, const struct kv_qline *q, int64_t *part, size_t *bs)
{
	const struct kv_snap *s = single_partition(r);
	struct kv_str model = { NULL, 0 }, tenant = { NULL, 0 };
	char *name = NULL, *base = NULL, *salt = NULL;
	if (q->has_model || r->o->model) {
		model.p = q->has_model ? q->model : r->o->model, model.n = strlen(model.p);
	} else if (s) {
		/* the partition's own name, unless the query names an adapter or salt of its model */
		model.p = kv_snap_string(s, s->partitions[0].model, &model.n);
		if (r->o->rfc && (q->lora || q->salt) && kv_partition_name_split(model.p, model.n, &base, &salt))
			model.p = base, model.n = strlen(base);
		else
			name = kv_xstrndup(model.p, model.n);
	}
	if (q->has_tenant || r->o->tenant)
		tenant.p = q->has_tenant ? q->tenant : r->o->tenant, tenant.n = strlen(tenant.p);
	else if (s)
		tenant.p = kv_snap_string(s, s->partitions[0].tenant, &tenant.n);
	else
		tenant.p = "default", tenant.n = 7;
	if (!model.p)
		return "no model in the query, no --model, and the snapshot holds several partitions";
	/* RFC #1403: the adapter and the salt are part of the partition's name
	 * (kv-conductor's /query has neither: it ignores them) */
	if (!name && r->o->rfc && (q->lora || q->salt))
		name = kv_partition_name(q->lora ? q->lora : model.p, q->lora ? strlen(q->lora) : model.n, q->salt,
					 q->salt ? strlen(q->salt) : 0);
	else if (!name)
		name = kv_partition_name(model.p, model.n, NULL, 0);
	model.p = name, model.n = strlen(name);
	find_partition(r, model, tenant, part);
	free(name);
	free(base);
	free(salt);
	if (*part < 0)
		return "no such model and tenant in the snapshot (kv-conductor: 404 \"no indexer for model=M tenant=T\")";
	s = &r->cur->snap;
	*bs = q->has_block_size ? q->block_size : r->o->block_size ? r->o->block_size : s->partitions[*part].block_size;
	if (*bs == 0)
		return "no block_size in the query, no --block-size, and none known for the partition";
	return NULL;
}

/* RFC #1403's seq_hashes are the engines' own block hashes: the chains they
 * name are those kvmatch learned from the stored events; the walk ends at
 * the first the snapshot does not know. */
static void resolve_seq_hashes(struct run *r, const uint64_t *hashes, size_t nhashes, struct kv_query *req)
{
	if (nhashes > r->capchains) {
		r->chains = kv_xrealloc(r->chains, nhashes * sizeof *r->chains);
		r->capchains = nhashes;
	}
	size_t n = 0;
	uint64_t parent = KV_CHAIN_ROOT;
	uint64_t b;
	/* a sequence hash names a whole prefix: it must follow the one before */
	while (n < nhashes && kv_snap_ehash_chain(&r->cur->snap, req->part, hashes[n], &r->chains[n]) &&
	       (b = kv_snap_find(&r->cur->snap, req->part, r->chains[n])) != KV_SNAP_NO_BLOCK &&
	       kv_snap_parent(&r->cur->snap, req->part, b) == parent)
		parent = r->chains[n++];
	req->tokens = NULL;
	req->locals = NULL;
	req->nlocals = 0;
	req->chains = r->chains;
	req->nchains = n;
}

/* --hash rfc1403: the query's tokens become the sequence hashes engines
 * following the RFC's standard published, resolved as seq_hashes are. */
static void hash_rfc1403(struct run *r, const struct kv_qline *q, struct kv_query *req)
{
	size_t n = q->ntokens / req->block_size;
	if (n > r->capseq) {
		r->seq = kv_xrealloc(r->seq, n * sizeof *r->seq);
		r->capseq = n;
	}
	n = kv_rfc_seq_hashes(q->tokens, q->ntokens, req->block_size, r->o->rfc_seed, r->seq, n);
	resolve_seq_hashes(r, r->seq, n, req);
}

/* --hash dynamo: the query's tokens become the local hashes Dynamo's router
 * computes (its adapter and cache namespace in the seed), looked up as a
 * /query_by_hash body's are: Dynamo's stores are chained from them. */
static void hash_dynamo(struct run *r, const struct kv_qline *q, struct kv_query *req)
{
	size_t n = q->ntokens / req->block_size;
	if (n > r->capseq) {
		r->seq = kv_xrealloc(r->seq, n * sizeof *r->seq);
		r->capseq = n;
	}
	uint64_t seed = kv_dynamo_seed(q->lora, q->cache_namespace);
	req->locals = r->seq;
	req->nlocals = kv_seeded_local_hashes(q->tokens, q->ntokens, req->block_size, seed, r->seq, n);
	req->tokens = NULL;
	req->ntokens = 0;
}

/* Sequence hashes name chains through the snapshot's engine hashes, read
 * (and checked) when the first line needs them: lines without need only
 * the blocks. */
static bool engine_hashes(struct run *r, const char *file, uint64_t lineno)
{
	struct kv_err e = { 0 };
	if (kv_snapr_read(&r->cur->snap, KV_SNAP_PART_EHASHES, &e))
		return true;
	bad_line(r, file, lineno, kv_err_msg(&e));
	kv_err_clear(&e);
	return false;
}

static void answer(struct run *r, const char *file, uint64_t lineno, const char *text, size_t n)
{
	struct kv_qline *q = &r->line;
	r->answered++;
	if (!kv_qparse(r->parser, text, n, q)) {
		bad_line(r, file, lineno, kv_qparser_error(r->parser));
		return;
	}
	int64_t part;
	size_t bs;
	const char *why = resolve(r, q, &part, &bs);
	if (why) {
		bad_line(r, file, lineno, why);
		return;
	}
	/* the partition's tenant, whole: answers are keyed by it */
	struct kv_str tenant;
	tenant.p = kv_snap_string(&r->cur->snap, r->cur->snap.partitions[part].tenant, &tenant.n);
	struct kv_query req = { (uint32_t)part, bs, q->by_hash ? NULL : q->tokens, q->ntokens,
				q->by_hash && !q->by_seq ? q->hashes : NULL, q->nhashes, NULL, 0 };
	if ((q->by_seq || (r->o->rfc_hash && !q->by_hash)) && !engine_hashes(r, file, lineno))
		return;
	if (q->by_seq)
		resolve_seq_hashes(r, q->hashes, q->nhashes, &req);
	else if (r->o->rfc_hash && !q->by_hash)
		hash_rfc1403(r, q, &req);
	else if (r->o->dynamo_hash && !q->by_hash)
		hash_dynamo(r, q, &req);
	else if (r->o->rfc && !q->by_hash)
		req.ntokens -= req.ntokens % bs; /* RFC #1403: only complete blocks are considered */
	if (r->against) {
		const char *model = q->has_model ? q->model : r->o->model;
		size_t mlen;
		if (!model)
			model = kv_snap_string(&r->cur->snap, r->cur->snap.partitions[part].model, &mlen);
		else
			mlen = strlen(model);
		struct kv_against_query aq = { r->answered, &r->cur->src, &r->cur->snap, r->q, &req, q,
					       model, mlen, tenant.p, tenant.n };
		kv_against_add(r->against, &aq);
		if (kv_against_due(r->against))
			kv_against_flush(r->against);
		return;
	}
	struct kv_query_opts qo = { .shared_pool = r->o->shared_pool, .all_workers = r->o->explain || r->o->route };
	size_t nhits, nblocks;
	uint64_t t0 = r->o->timing ? kv_monotonic_ns() : 0;
	const struct kv_hit *hits = kv_query_run(r->q, &r->cur->src, &req, &qo, &nhits, &nblocks);
	const struct kv_hit *route = r->o->route ? kv_query_route(hits, nhits, &r->o->weights, r->q) : NULL;
	if (r->o->timing) {
		/* the time taken before the array grows: a copy of the times
		 * so far is no part of this answer's (it was the 256th's, 512th's...) */
		uint64_t t = kv_monotonic_ns() - t0;
		r->times = kv_xgrow(r->times, &r->captimes, r->ntimes + 1, sizeof *r->times);
		r->times[r->ntimes++] = t;
	}
	struct kv_answer a = { r->answered, &r->cur->src, tenant.p, tenant.n, hits, nhits, nblocks, bs, route,
			       r->o->rfc ? q->instance : NULL };
	kv_answers_write(&r->answers, &a);
	kv_out_end_record(r->out);
	kv_out_flush_if_full(r->out);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static void report_timing(struct run *r)
{
	if (!r->ntimes)
		return;
	qsort(r->times, r->ntimes, sizeof *r->times, cmp_u64);
	size_t p50 = r->ntimes / 2, p99 = (r->ntimes * 99) / 100;
	/* when the output failed, how many of those answers it holds */
	char written[48] = "";
	if (kv_out_failed(r->out))
		snprintf(written, sizeof written, " (%llu written)", (unsigned long long)kv_out_records(r->out));
	fprintf(stderr, "%s: %zu queries answered%s: p50 %.1f us, p99 %.1f us, max %.1f us (hashing and walks)\n",
		kv_prog, r->ntimes, written, r->times[p50] / 1e3, r->times[p99 < r->ntimes ? p99 : r->ntimes - 1] / 1e3,
		r->times[r->ntimes - 1] / 1e3);
}

/* Reads one input file (or stdin) line by line, merging what its failures
 * call for into *status; false when it cannot be opened. */
static bool read_input(struct run *r, const char *path, int *status)
{
	struct kv_err e = { 0 };
	int fd;
	const char *name;
	if (!kv_input_open_named(path, &fd, &name, &e)) {
		*status = kv_status_merge(*status, kv_err_print(&e));
		return false;
	}
	struct kv_lines l;
	kv_lines_init(&l, fd, 256u << 20, NULL, 0);
	l.in.idle = flush_output;
	l.in.idle_arg = r;
	char *line;
	size_t n;
	enum kv_lines_status st;
	while (!kv_out_failed(r->out) && (st = kv_lines_next(&l, &line, &n)) != KV_LINES_EOF) {
		if (st == KV_LINES_STOPPED) {
			r->stopped = true;
			break;
		}
		if (st == KV_LINES_ERROR) {
			/* the rest of it is lost: its queries go unanswered, as
			 * kvdecode's records after a read error */
			errno = l.in.err;
			kv_warn_errno("%s", name);
			*status = kv_status_merge(*status, KV_EX_DATAERR);
			break;
		}
		for (size_t i = 0; r->o->watch && i < r->nshards; i++)
			maybe_reload(r, &r->shards[i]);
		if (st == KV_LINE_TOO_LONG)
			bad_line(r, name, l.lineno, "line longer than 256 MiB");
		else
			answer(r, name, l.lineno, line, n);
	}
	kv_lines_free(&l);
	kv_input_close(fd);
	return true;
}

static void free_shards(struct run *r)
{
	for (size_t i = 0; i < r->nshards; i++) {
		kv_qsource_free(&r->shards[i].src);
		kv_snapr_close(&r->shards[i].snap);
	}
	free(r->shards);
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
	r.shards = kv_xcalloc(o.nsnapshots, sizeof *r.shards);
	r.nshards = o.nsnapshots;
	/* before the snapshots are read: a signal ends a load of gigabytes, or
	 * of a pipe that waits, as it ends the queries (status 0) */
	kv_install_signals(false);
	/* before -o truncates yesterday's answers: a bad snapshot leaves them be */
	for (size_t i = 0; i < r.nshards; i++) {
		uint64_t t0 = kv_monotonic_ns();
		struct shard *sh = &r.shards[i];
		sh->path = o.snapshots[i];
		load(&r, sh, true);
		if (o.verbose)
			kv_warn("%s: %zu blocks, %zu workers, %zu partitions loaded and checked in %.1f ms", sh->path,
				sh->snap.nblocks, sh->snap.nworkers, sh->snap.npartitions,
				(double)(kv_monotonic_ns() - t0) / 1e6);
	}
	if (!kv_out_open(&out, o.output, &e)) {
		free_shards(&r);
		return kv_err_print(&e);
	}
	r.q = kv_querier_new();
	r.parser = kv_qparser_new();
	struct http http = { 0 };
	if (o.against)
		start_against(&r, &http);
	int status = KV_EX_OK, unopened = 0;
	if (optind == argc)
		read_input(&r, "-", &status);
	int i = optind;
	for (; i < argc && !kv_stop_signal && !kv_out_failed(&out); i++)
		if (!read_input(&r, argv[i], &status))
			unopened++;
	if ((r.stopped || (kv_stop_signal && i < argc && !kv_out_failed(&out))) && !o.quiet) {
		const char *product = o.output ? o.output : "-";
		kv_say_stopped(&product, 1);
	}
	if (r.against)
		status = kv_status_merge(status, kv_against_finish(r.against));
	if (!kv_out_finish(&out, optind < argc && unopened == argc - optind, &e))
		status = kv_status_merge(status, kv_err_print(&e));
	if (o.timing)
		report_timing(&r);
	if (r.bad)
		status = kv_status_merge(status, KV_EX_DATAERR);
	kv_qparser_free(r.parser);
	free(r.line.tokens);
	free(r.line.hashes);
	free(r.times);
	kv_answers_free(&r.answers);
	free(r.chains);
	free(r.seq);
	kv_querier_free(r.q);
	if (r.against)
		stop_against(&r, &http);
	free_shards(&r);
	return status;
}

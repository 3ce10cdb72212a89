#include "index/diagnose.h"
#include "decode/srcstats.h"
#include "index/workers.h"
#include "decode/flexhash.h"
#include "base/jsonw.h"
#include "base/utf8.h"
#include "base/util.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

/* Thresholds (kvmatch(1), DIAGNOSE). */
#define LAG_WARN_S 5.0          /* mean receive-minus-timestamp lag of a source */
#define SILENT_MIN_S 60.0       /* a source is silent after at least this much event time ... */
#define SILENT_FACTOR 10.0      /* ... and this many of its mean intervals between batches */
#define DIFFER_MIN_BLOCKS 16    /* offloads of a source before "never met" says something */

struct diag {
	const struct kv_match *m;
	const struct kv_workers *ws;
	const struct kv_srcstats *sources;
	const struct kv_match_stats *st;
	json_t *findings;
};

/* Strings from the network go into JSON and onto terminals: the one
 * printable rule, which also leaves valid UTF-8 for json_string. */
static json_t *text(const char *s)
{
	char buf[256];
	kv_printable(buf, sizeof buf, s, strlen(s));
	return json_string(buf);
}

static const char *source_name(const struct kv_srcstat *s)
{
	return s->src[0] ? s->src : "-";
}

static const char *worker_name(const struct kv_workers *ws, uint32_t w)
{
	return w < ws->n ? ws->v[w].instance_id : NULL;
}

/* Adds a finding; evidence is a JSON object (taken), message a printf format. */
static void add(struct diag *d, const char *kind, const char *severity, const struct kv_srcstat *src,
		uint32_t worker, json_t *evidence, const char *cause, const char *fmt, ...)
{
	char msg[640];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_t *f = json_object();
	json_object_set_new(f, "finding", json_string(kind));
	json_object_set_new(f, "severity", json_string(severity));
	json_object_set_new(f, "source", src ? text(source_name(src)) : json_null());
	const char *wn = worker_name(d->ws, worker);
	json_object_set_new(f, "worker", wn ? text(wn) : json_null());
	json_object_set_new(f, "evidence", evidence ? evidence : json_object());
	json_object_set_new(f, "message", text(msg));
	json_object_set_new(f, "cause", json_string(cause));
	json_array_append_new(d->findings, f);
}

static uint64_t drops(const struct kv_srcstat *s, enum kv_reason r)
{
	return s->d.drops[r];
}

static unsigned long long ull(uint64_t v)
{
	return (unsigned long long)v;
}

/* "s" or "es" after a count that is not 1. */
static const char *pl(uint64_t n, const char *suffix)
{
	return n == 1 ? "" : suffix;
}

/* ---- per source ---------------------------------------------------------- */

static void decode_errors(struct diag *d, const struct kv_srcstat *s)
{
	if (!s->errors)
		return;
	/* one problem per undecodable record or event: what kvdecode -e writes a line for */
	add(d, "decode_errors", "warning", s, UINT32_MAX, json_pack("{s:I}", "problems", (json_int_t)s->errors),
	    "the publisher speaks a format kvdecode does not know (see its messages about these records), "
	    "or the capture is damaged",
	    "%llu record%s or event%s could not be decoded", ull(s->errors), pl(s->errors, "s"), pl(s->errors, "s"));
}

static void time_jump(struct diag *d, const struct kv_srcstat *s)
{
	if (!s->d.time_jumps)
		return;
	add(d, "time_jump", "warning", s, s->d.worker, json_pack("{s:I}", "records", (json_int_t)s->d.time_jumps),
	    "a recv_ns far in the future (a damaged capture, a flipped bit, a clock that stepped): such a record "
	    "is applied at the event time reached, so that it does not expire everything kvmatch keeps",
	    "%llu record%s stamped beyond the event time reached by more than the longest TTL, and not "
	    "confirmed by the next record", ull(s->d.time_jumps), pl(s->d.time_jumps, "s"));
}

static void restarted(struct diag *d, const struct kv_srcstat *s)
{
	if (!s->seq.restarts)
		return;
	add(d, "restarted", "warning", s, s->d.worker, json_pack("{s:I}", "restarts", (json_int_t)s->seq.restarts),
	    "the publisher process restarted (its seq began again); blocks it held before stay in the index "
	    "unless it sent AllBlocksCleared, so routing may send requests to a cache that is gone",
	    "seq stepped back %llu time%s", ull(s->seq.restarts), pl(s->seq.restarts, "s"));
}

static const char *missed_cause(const struct kv_srcstat *s)
{
	return s->replayed ? "the replay endpoint did not return every missing batch (its buffer is shorter "
			     "than the gap, or the replay timed out)"
			   : "the subscriber fell behind (ZMQ high-water mark) or messages were lost, and no replay "
			     "endpoint recovered them: give kvsub --replay SRC=ENDPOINT (vLLM's replay_endpoint)";
}

/* What a source's missing seqs count: batches, or events for a Mooncake
 * master, which skips one seq for every event its queue dropped (as kvsub
 * and kvdecode --stats say it). */
static const char *missing_what(const struct kv_srcstat *s)
{
	bool events = s->d.mooncake && !s->d.engine;
	return s->seq.missing == 1 ? (events ? "event" : "batch") : (events ? "events" : "batches");
}

static void missed_batches(struct diag *d, const struct kv_srcstat *s)
{
	if (!s->seq.missing)
		return;
	add(d, "missed_batches", "warning", s, s->d.worker,
	    json_pack("{s:I,s:I,s:I}", "missing", (json_int_t)s->seq.missing, "gaps", (json_int_t)s->seq.gaps,
		      "replayed", (json_int_t)s->replayed),
	    missed_cause(s), "%llu %s lost in %llu seq gap%s, %llu replayed", ull(s->seq.missing), missing_what(s),
	    ull(s->seq.gaps), pl(s->seq.gaps, "s"), ull(s->replayed));
}

static void parent_not_found(struct diag *d, const struct kv_srcstat *s)
{
	uint64_t n = drops(s, KV_R_PARENT_NOT_FOUND);
	if (!n)
		return;
	json_t *ev = json_pack("{s:I,s:I,s:I,s:I}", "blocks", (json_int_t)n, "at_start", (json_int_t)s->d.pnf_early,
			       "missing_batches", (json_int_t)s->seq.missing, "replayed", (json_int_t)s->replayed);
	const char *cause, *severity = "warning";
	if (s->seq.missing)
		cause = "events were missed: stores whose parents were in the lost batches cannot be placed; "
			"capture with kvsub --replay SRC=ENDPOINT";
	else if (s->d.pnf_early == n) {
		cause = "the capture began while the engine already held blocks, whose parents were stored before "
			"its first batch: resume from an earlier snapshot (-i), or ignore it if the count stops growing";
		severity = "notice";
	} else
		cause = "parents were released and their content expired before the store arrived (raise "
			"--content-ttl), or the engine publishes stores out of order";
	add(d, "parent_not_found", severity, s, s->d.worker, ev, cause,
	    "%llu block%s dropped because the parent is unknown (%llu in the first 10 s of the stream); "
	    "%llu %s missing, %llu replayed",
	    ull(n), pl(n, "s"), ull(s->d.pnf_early), ull(s->seq.missing), missing_what(s), ull(s->replayed));
}

static void block_size_mismatch(struct diag *d, const struct kv_srcstat *s)
{
	uint64_t n = drops(s, KV_R_BLOCK_SIZE_MISMATCH);
	if (!n)
		return;
	add(d, "block_size_mismatch", "warning", s, s->d.worker,
	    json_pack("{s:I,s:I,s:I}", "blocks", (json_int_t)n, "block_size", (json_int_t)s->d.bs_got, "expected",
		      (json_int_t)s->d.bs_want),
	    "the engine runs with another --block-size than its registration says, or engines of one model "
	    "differ in block size: their blocks cannot be indexed with the others",
	    "%llu block%s dropped: block_size %lld where %lld was expected", ull(n), pl(n, "s"), (long long)s->d.bs_got,
	    (long long)s->d.bs_want);
}

static void non_full_attention(struct diag *d, const struct kv_srcstat *s)
{
	uint64_t n = drops(s, KV_R_NON_FULL_ATTENTION);
	if (!n)
		return;
	json_t *ev = json_pack("{s:I,s:o}", "blocks", (json_int_t)n, "kind", text(s->d.spec_kind));
	add(d, "non_full_attention", "notice", s, s->d.worker, ev,
	    "the model has layers that are not full attention (sliding window, Mamba, ...); like kv-conductor, "
	    "only full-attention groups are indexed, which is expected unless this kind is full attention",
	    "%llu block%s of KV cache groups of kind %s skipped", ull(n), pl(n, "s"), s->d.spec_kind);
}

static void hosts_known(const struct kv_workers *ws, char *buf, size_t n)
{
	size_t at = 0, shown = 0;
	buf[0] = 0;
	for (size_t i = 0; i < ws->n && shown < 4; i++) {
		const char *h = ws->v[i].host;
		if (!h || strstr(buf, h))
			continue;
		int k = snprintf(buf + at, n - at, "%s%s", at ? ", " : "", h);
		if (k < 0 || (size_t)k >= n - at)
			break;
		at += (size_t)k;
		shown++;
	}
}

static void unknown_backend(struct diag *d, const struct kv_srcstat *s)
{
	uint64_t held = s->d.pool_held, n = drops(s, KV_R_UNKNOWN_BACKEND) + held;
	if (!n)
		return;
	json_t *ids = json_array();
	char list[256] = "", hosts[256];
	size_t at = 0;
	bool absent = false;
	for (unsigned i = 0; i < s->d.nbackend_ids; i++) {
		const char *id = s->d.backend_ids[i];
		absent |= !id[0];
		json_array_append_new(ids, id[0] ? text(id) : json_null());
		int k = snprintf(list + at, sizeof list - at, "%s%s", at ? ", " : "", id[0] ? id : "(none)");
		at += k > 0 && (size_t)k < sizeof list - at ? (size_t)k : 0;
	}
	hosts_known(d->ws, hosts, sizeof hosts);
	json_t *ev = json_pack("{s:I,s:o,s:o}", "blocks", (json_int_t)n, "backend_ids", ids, "worker_hosts", text(hosts));
	const char *cause;
	if (kv_match_options(d->m)->match_none)
		cause = "with --match none a pool event goes to its subscriber's own worker, and the registrations "
			"name none for this pool source";
	else if (absent)
		cause = "the pool's events carry no backend_id: the KV store client does not report its address";
	else if (d->ws->n == 0)
		cause = "no worker is known: give the registrations (-r) or the engines' captures too";
	else
		cause = "backend_id is not the Pod IP of an engine: set the KV store client's address to the Pod "
			"IP, or the registrations name other hosts; a decoupled pool (a cache daemon) holds its "
			"blocks itself: they count under kvquery --shared-pool, or name the instances it serves "
			"with kvmatch --backend-serves";
	add(d, "unknown_backend", "warning", s, UINT32_MAX, ev, cause,
	    "%llu pool block%s %s: backend_id %s names no worker (worker hosts: %s)", ull(n), pl(n, "s"),
	    held == n ? "held by the pool itself" : held ? "dropped or held by the pool itself" : "dropped", list,
	    hosts[0] ? hosts : "none");
}

static void silent(struct diag *d, const struct kv_srcstat *s)
{
	if (s->batches < 2 || s->last_recv_ns <= s->d.first_ns)
		return;
	double quiet = (double)(kv_match_now(d->m) - s->last_recv_ns) / 1e9;
	double every = (double)(s->last_recv_ns - s->d.first_ns) / 1e9 / (double)(s->batches - 1);
	if (quiet < SILENT_MIN_S || quiet < SILENT_FACTOR * every)
		return;
	add(d, "silent", "notice", s, s->d.worker,
	    json_pack("{s:f,s:I,s:f}", "silent_seconds", quiet, "batches", (json_int_t)s->batches, "interval_seconds",
		      every),
	    "the publisher stopped, moved, or its host is down, or the subscription was lost (see kvsub's "
	    "messages); an idle engine is silent too",
	    "no batch for the last %.0f s of input, after %llu batches every %.2f s on average", quiet,
	    ull(s->batches), every);
}

static void lag(struct diag *d, const struct kv_srcstat *s)
{
	if (!s->d.lag_n)
		return;
	double mean = s->d.lag_sum / (double)s->d.lag_n;
	if (fabs(mean) < LAG_WARN_S)
		return;
	add(d, "lag", "warning", s, s->d.worker,
	    json_pack("{s:f,s:f,s:I}", "mean_seconds", mean, "max_seconds", s->d.lag_max, "events",
		      (json_int_t)s->d.lag_n),
	    mean > 0 ? "the publisher's queue is backing up (a slow subscriber, the high-water mark), its clock "
		       "runs behind this host's, or the events are replayed (kvpub) from an older capture"
		     : "the publisher's clock runs ahead of this host's",
	    "events arrive %.2f s after their own timestamp on average (at most %.2f s)", mean, s->d.lag_max);
}

static void no_offload_events(struct diag *d, const struct kv_srcstat *s)
{
	uint64_t expired = s->d.worker != UINT32_MAX ? kv_match_expired_for(d->m, s->d.worker) : 0;
	if (!s->d.engine || !expired || s->d.offload_blocks)
		return;
	add(d, "no_offload_events", "warning", s, s->d.worker,
	    json_pack("{s:I,s:I,s:I}", "expired", (json_int_t)expired, "xpu_blocks", (json_int_t)s->d.xpu_blocks,
		      "offload_blocks", (json_int_t)0),
	    "vLLM's MultiConnector does not forward the KV events of the connectors it wraps (unless patched), "
	    "or the offloading connector is off: pool stores never meet an engine offload",
	    "%llu pool entr%s for its worker expired unmatched, and it sent %llu accelerator block%s and no "
	    "offload (cpu/disk) store",
	    ull(expired), expired == 1 ? "y" : "ies", ull(s->d.xpu_blocks), pl(s->d.xpu_blocks, "s"));
}

static bool others_met(const struct kv_srcstats *sources, const struct kv_srcstat *self)
{
	for (size_t i = 0; i < sources->n; i++)
		if (&sources->v[i] != self && sources->v[i].d.offload_met)
			return true;
	return false;
}

static void engine_hashes_differ(struct diag *d, const struct kv_srcstat *s)
{
	if (s->d.offload_blocks < DIFFER_MIN_BLOCKS || s->d.offload_met || !others_met(d->sources, s))
		return;
	char forms[64];
	kv_hash_forms_text(s->d.hash_forms, forms, sizeof forms);
	add(d, "engine_hashes_differ", "warning", s, s->d.worker,
	    json_pack("{s:I,s:I,s:s}", "offload_blocks", (json_int_t)s->d.offload_blocks, "met", (json_int_t)0,
		      "hash_forms", forms),
	    "this engine names blocks differently from the others: another PYTHONHASHSEED (vLLM's builtin "
	    "hash is seeded per process), --prefix-caching-hash-algo, or hash mode",
	    "none of its %llu offloaded blocks met a pool event, while other engines' offloads did",
	    ull(s->d.offload_blocks));
}

/* ---- over all sources ---------------------------------------------------- */

struct totals {
	uint64_t offload_blocks, pool_blocks;
	unsigned engine_forms, pool_forms;
	bool engine_sample, pool_sample;
	uint64_t engine_hash, pool_hash;
};

static struct totals totals_of(const struct kv_srcstats *sources)
{
	struct totals t = { 0 };
	for (size_t i = 0; i < sources->n; i++) {
		const struct kv_srcdiag *s = &sources->v[i].d;
		if (s->engine) {
			t.offload_blocks += s->offload_blocks;
			t.engine_forms |= s->hash_forms;
			if (!t.engine_sample && s->has_sample && s->offload_blocks)
				t.engine_sample = true, t.engine_hash = s->sample_hash;
		}
		if (s->pool) {
			t.pool_blocks += s->pool_blocks;
			t.pool_forms |= s->hash_forms;
			if (!t.pool_sample && s->has_sample)
				t.pool_sample = true, t.pool_hash = s->sample_hash;
		}
	}
	return t;
}

static void hashes_never_meet(struct diag *d)
{
	struct totals t = totals_of(d->sources);
	uint64_t met = d->st->states[KV_ST_MATCHED] + d->st->states[KV_ST_CONFIRMED];
	uint64_t waited = d->st->states[KV_ST_PENDING_EXPIRED] + kv_match_pending(d->m);
	if (!t.offload_blocks || !t.pool_blocks || met || !waited)
		return;
	char ef[64], pf[64], eh[24], ph[24];
	kv_hash_forms_text(t.engine_forms, ef, sizeof ef);
	kv_hash_forms_text(t.pool_forms, pf, sizeof pf);
	snprintf(eh, sizeof eh, "0x%016llx", ull(t.engine_hash));
	snprintf(ph, sizeof ph, "0x%016llx", ull(t.pool_hash));
	add(d, "hashes_never_meet", "warning", NULL, UINT32_MAX,
	    json_pack("{s:I,s:I,s:I,s:s,s:s,s:s,s:s}", "pool_blocks", (json_int_t)t.pool_blocks, "offload_blocks",
		      (json_int_t)t.offload_blocks, "met", (json_int_t)0, "engine_hash_forms", ef, "pool_hash_forms", pf,
		      "engine_sample", eh, "pool_sample", ph),
	    "engines and pools name blocks differently: vLLM's hash in int mode on one side and bytes mode on "
	    "the other, a different hash algorithm, or PYTHONHASHSEED unset on the engines",
	    "%llu pool block%s and %llu engine offload%s, and no hash in common (engine hashes: %s, e.g. %s; "
	    "pool hashes: %s, e.g. %s)",
	    ull(t.pool_blocks), pl(t.pool_blocks, "s"), ull(t.offload_blocks), pl(t.offload_blocks, "s"), ef, eh, pf, ph);
}

static bool publishes(const struct kv_srcstats *sources, uint32_t w)
{
	for (size_t i = 0; i < sources->n; i++)
		if (sources->v[i].d.engine && sources->v[i].d.worker == w)
			return true;
	return false;
}

static void no_engine_events(struct diag *d)
{
	const struct kv_workers *ws = d->ws;
	uint64_t expired = 0, nworkers = 0;
	char list[256] = "";
	size_t at = 0;
	json_t *names = json_array();
	for (uint32_t w = 0; w < ws->n; w++) {
		uint64_t e = kv_match_expired_for(d->m, w);
		if (!e || publishes(d->sources, w))
			continue;
		expired += e;
		nworkers++;
		json_array_append_new(names, text(ws->v[w].instance_id));
		int k = nworkers <= 4 ? snprintf(list + at, sizeof list - at, "%s%s", at ? ", " : "", ws->v[w].instance_id) : 0;
		at += k > 0 && (size_t)k < sizeof list - at ? (size_t)k : 0;
	}
	if (!nworkers) {
		json_decref(names);
		return;
	}
	add(d, "no_engine_events", "warning", NULL, UINT32_MAX,
	    json_pack("{s:I,s:o}", "expired", (json_int_t)expired, "workers", names),
	    "the input lacks these engines' events: capture their endpoints too (kvsub -r with the "
	    "registrations), or their KV events are off (vLLM --kv-events-config)",
	    "%llu pool entr%s for %llu worker%s expired, and %s published no engine event: %s%s", ull(expired),
	    expired == 1 ? "y" : "ies", ull(nworkers), pl(nworkers, "s"), nworkers == 1 ? "it" : "they", list, nworkers > 4 ? ", ..." : "");
}

/* Drops past the bounds of LIMITS in kvmatch(1): sources, workers, partitions, holders. */
static void limit_reached(struct diag *d)
{
	static const enum kv_reason limits[] = { KV_R_SOURCE_LIMIT, KV_R_WORKER_LIMIT, KV_R_PARTITION_LIMIT,
						 KV_R_HOLDER_LIMIT };
	json_t *ev = json_object();
	char list[256] = "";
	size_t at = 0;
	for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
		uint64_t n = d->st->reasons[limits[i]];
		if (!n)
			continue;
		json_object_set_new(ev, kv_reason_name(limits[i]), json_integer((json_int_t)n));
		int k = snprintf(list + at, sizeof list - at, "%s%llu %s", at ? ", " : "", ull(n),
				 kv_reason_name(limits[i]));
		at += k > 0 && (size_t)k < sizeof list - at ? (size_t)k : 0;
	}
	if (!at) {
		json_decref(ev);
		return;
	}
	add(d, "limit_reached", "warning", NULL, UINT32_MAX, ev,
	    "the input names more sources, workers or partitions, or more holders for a block, than kvmatch "
	    "keeps (LIMITS in kvmatch(1)): made-up names (LoRA, model, dp_rank, src) in the input, or a "
	    "cluster beyond the bounds",
	    "events or blocks dropped at kvmatch's bounds: %s", list);
}

/* ---- the report ---------------------------------------------------------- */

static void find(struct diag *d)
{
	static void (*const per_source[])(struct diag *, const struct kv_srcstat *) = {
		decode_errors, time_jump, restarted, missed_batches, parent_not_found, block_size_mismatch, non_full_attention,
		unknown_backend, no_offload_events, engine_hashes_differ, lag, silent,
	};
	for (size_t i = 0; i < d->sources->n; i++)
		for (size_t k = 0; k < sizeof per_source / sizeof per_source[0]; k++)
			per_source[k](d, &d->sources->v[i]);
	hashes_never_meet(d);
	no_engine_events(d);
	limit_reached(d);
}

static void write_text(const struct diag *d, FILE *f)
{
	size_t n = json_array_size(d->findings), nsrc = d->sources->n;
	uint64_t events = d->st->events;
	fprintf(f, "%s: diagnose: %zu finding%s (%zu source%s, %llu event%s)\n", kv_prog, n, pl(n, "s"), nsrc,
		pl(nsrc, "s"), ull(events), pl(events, "s"));
	size_t i;
	json_t *x;
	json_array_foreach(d->findings, i, x) {
		const char *src = json_string_value(json_object_get(x, "source"));
		const char *wk = json_string_value(json_object_get(x, "worker"));
		fprintf(f, "%s: %s: %s", kv_prog, json_string_value(json_object_get(x, "severity")),
			json_string_value(json_object_get(x, "finding")));
		if (src)
			fprintf(f, ": %s", src);
		if (wk)
			fprintf(f, " (worker %s)", wk);
		fprintf(f, ": %s\n%s:   likely cause: %s\n", json_string_value(json_object_get(x, "message")), kv_prog,
			json_string_value(json_object_get(x, "cause")));
	}
}

/* A finding's value as JSON text, through jsonw as every line kvtools
 * writes (the findings are a jansson tree because the text report reads
 * them back): keys in their order, reals as jansson wrote them. */
static void put_value(struct jw *w, json_t *v)
{
	const char *key;
	json_t *x;
	size_t i;
	bool first = true;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		jw_put_char(w, '{');
		json_object_foreach(v, key, x) {
			if (!first)
				jw_put_char(w, ',');
			first = false;
			jw_put_cstr(w, key);
			jw_put_char(w, ':');
			put_value(w, x);
		}
		jw_put_char(w, '}');
		return;
	case JSON_ARRAY:
		jw_put_char(w, '[');
		json_array_foreach(v, i, x) {
			if (i)
				jw_put_char(w, ',');
			put_value(w, x);
		}
		jw_put_char(w, ']');
		return;
	case JSON_STRING: jw_put_str(w, json_string_value(v), json_string_length(v)); return;
	case JSON_INTEGER: jw_put_i64(w, json_integer_value(v)); return;
	case JSON_REAL: jw_put_real(w, json_real_value(v), 17); return;
	case JSON_TRUE: jw_put_lit(w, "true"); return;
	case JSON_FALSE: jw_put_lit(w, "false"); return;
	case JSON_NULL: jw_put_lit(w, "null"); return;
	}
}

static void write_json(const struct diag *d, FILE *f)
{
	struct kv_out line;
	struct jw w;
	kv_out_open_mem(&line);
	jw_begin(&w, &line);
	jw_put_lit(&w, "{\"findings\":");
	put_value(&w, d->findings);
	jw_put_lit(&w, ",\"sources\":");
	jw_put_i64(&w, (int64_t)d->sources->n);
	jw_put_lit(&w, ",\"events\":");
	jw_put_i64(&w, (int64_t)d->st->events);
	jw_put_lit(&w, ",\"event_time_ns\":");
	jw_put_i64(&w, (int64_t)kv_match_now(d->m));
	jw_put_lit(&w, "}\n");
	jw_end(&w);
	fwrite(line.buf, 1, line.len, f);
	kv_out_free_mem(&line);
}

size_t kv_diagnose(const struct kv_match *m, enum kv_diag_format fmt, FILE *f)
{
	struct diag d = { m, kv_match_workers(m), kv_match_sources(m), kv_match_statistics(m), json_array() };
	find(&d);
	if (fmt == KV_DIAG_JSON)
		write_json(&d, f);
	else
		write_text(&d, f);
	fflush(f);
	size_t n = json_array_size(d.findings);
	json_decref(d.findings);
	return n;
}

/* The two-phase matcher's rules (kvmatch(1): Engine events, Pool events;
 * Time, expiry and memory), each pinned at its boundaries: exactly at a
 * TTL, one nanosecond before, in every medium, in both arrival orders,
 * with removals and clears in each medium, and kvquery's walks with
 * --shared-pool on and off.  The matcher is driven as kvmatch drives it
 * (event JSON lines as kvdecode writes them, one record each; event time
 * from their recv_ns) and watched only as users see it: state lines, the
 * index's holders, query walks and snapshots.
 *
 * The cluster of tests/kvmatch.bats: a/0 and a/1 on host 10.0.0.5, b/0 on
 * 10.0.0.6, a memcache pool subscriber; one prompt of 4 blocks of 4
 * tokens (block k: tokens 4k+1..4k+4), which engines name 0xa + k. */
#include <msgpack.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/out.h"
#include "decode/evjson.h"
#include "decode/kvcap.h"
#include "decode/wire.h"
#include "index/blockhash.h"
#include "index/index.h"
#include "index/match.h"
#include "index/regs.h"
#include "index/snap.h"
#include "index/snapload.h"
#include "index/snapstate.h"
#include "index/statelog.h"
#include "index/workers.h"
#include "query/query.h"
#include "unit.h"

#define S(x) ((uint64_t)(x) * 1000000000ull) /* seconds of event time, in ns */

#define E0 "tcp://10.0.0.5:5557" /* a/0 */
#define E1 "tcp://10.0.0.5:5558" /* a/1 */
#define E2 "tcp://10.0.0.6:5557" /* b/0 */
#define HOST_A "10.0.0.5"
#define HOST_B "10.0.0.6"
#define NBLOCKS 12

static const char registrations[] =
	"{\"instance_id\": \"a\", \"type\": \"vLLM\", \"dp_rank\": 0, \"block_size\": 4, \"modelname\": \"m\", "
	"\"medium_endpoints\": {\"npu\": \"" E0 "\"}}\n"
	"{\"instance_id\": \"a\", \"type\": \"vLLM\", \"dp_rank\": 1, \"block_size\": 4, \"modelname\": \"m\", "
	"\"medium_endpoints\": {\"npu\": \"" E1 "\"}}\n"
	"{\"instance_id\": \"b\", \"type\": \"vLLM\", \"dp_rank\": 0, \"block_size\": 4, \"modelname\": \"m\", "
	"\"medium_endpoints\": {\"npu\": \"" E2 "\"}}\n"
	"{\"instance_id\": \"kvs\", \"type\": \"Memcache\", \"dp_rank\": 0, \"block_size\": 4, "
	"\"endpoint\": \"tcp://kvs:5557\", \"store_backend\": \"Memcache\", \"modelname\": \"m\"}\n";

static const char *const medium_name[KV_NMEDIA] = { "xpu", "cpu", "disk" };
static const char medium_letter[KV_NMEDIA] = { 'x', 'c', 'd' };

struct rig {
	struct kv_index ix;
	struct kv_workers ws;
	struct kv_match *m;
	struct kv_evjson_reader *rd;
	struct kv_out log;          /* state lines not looked at yet */
	uint64_t seq;
	uint32_t tokens[4 * NBLOCKS];
	uint64_t name[NBLOCKS];     /* the engine hash of each block */
	uint64_t chain[NBLOCKS];
	const char *model;          /* the model pool events name */
	char hashes[512], states[4096], held[256], walk[64];
};

/* kvmatch's options: its defaults, and every state line but received and parsed. */
static struct kv_match_opts defaults(void)
{
	struct kv_match_opts o = { KV_PENDING_TTL_DEFAULT, KV_OFFLOAD_TTL_DEFAULT, KV_CONTENT_TTL_DEFAULT,
				   KV_MAX_PENDING_DEFAULT, false, 0, NULL, NULL };
	kv_state_mask_parse("queued,offload_cached,matched,confirmed,applied,dropped,pending_expired", &o.log_mask);
	return o;
}

static void on_report(void *arg, const struct kv_report *r)
{
	struct rig *g = arg;
	kv_statelog_write(&g->log, r, &g->ws, &g->ix);
}

static void register_workers(struct kv_workers *ws)
{
	char path[] = "/tmp/kvtools-regs-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, registrations, sizeof registrations - 1) != (ssize_t)(sizeof registrations - 1))
		abort();
	close(fd);
	struct kv_regs regs;
	struct kv_err e = { 0 };
	if (!kv_regs_load(path, &regs, &e))
		abort();
	kv_workers_register(ws, &regs);
	kv_regs_free(&regs);
	unlink(path);
}

/* As kvmatch sets up: index, matcher, then the registrations (-r) and a snapshot (-i). */
static void rig_open_from(struct rig *g, struct kv_match_opts o, const char *resume)
{
	memset(g, 0, sizeof *g);
	kv_workers_init(&g->ws);
	kv_index_init(&g->ix);
	o.report = on_report;
	o.report_arg = g;
	g->m = kv_match_new(&g->ix, &g->ws, &o);
	register_workers(&g->ws);
	if (resume) {
		struct kv_snap s;
		struct kv_err e = { 0 };
		if (!kv_snapr_load(resume, &s, &e)) {
			printf("# %s\n", kv_err_msg(&e));
			abort();
		}
		kv_snapstate_restore(&s, &g->ix, &g->ws, g->m);
		kv_snapr_close(&s);
	}
	kv_out_open_mem(&g->log);
	g->rd = kv_evjson_reader_new();
	uint64_t local[NBLOCKS];
	for (uint32_t i = 0; i < 4 * NBLOCKS; i++)
		g->tokens[i] = i + 1;
	kv_block_hashes(g->tokens, 4 * NBLOCKS, 4, KV_CHAIN_ROOT, local, g->chain, NBLOCKS);
	for (int k = 0; k < NBLOCKS; k++)
		g->name[k] = 0xa + (uint64_t)k;
	g->model = "m";
}

static void rig_open(struct rig *g, struct kv_match_opts o)
{
	rig_open_from(g, o, NULL);
}

static void rig_close(struct rig *g)
{
	kv_evjson_reader_free(g->rd);
	kv_out_free_mem(&g->log);
	kv_match_delete(g->m);
	kv_workers_free(&g->ws);
	kv_index_free(&g->ix);
}

/* One event JSON line, applied as kvmatch applies a line of its input. */
static void feed(struct rig *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *line = malloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(line, (size_t)n + 1, fmt, ap);
	va_end(ap);
	struct kv_event e;
	enum kv_evjson_status st = kv_evjson_parse(g->rd, line, (size_t)n, &e);
	if (st != KV_EVJSON_EVENT && st != KV_EVJSON_NO_EVENTS) {
		printf("# not an event line (%s): %s\n", kv_evjson_error(g->rd), line);
		abort();
	}
	struct kv_wire_ctx ctx = kv_wire_ctx_of(&e);
	size_t nev = st == KV_EVJSON_EVENT;
	if (kv_match_record(g->m, &ctx, nev) && nev)
		kv_match_event(g->m, &e);
	free(line);
}

/* "\"0x...\",..." for the names of blocks k..k+n-1, as kvdecode writes hashes. */
static const char *names(struct rig *g, int k, int n)
{
	size_t at = 0;
	g->hashes[0] = 0;
	for (int i = k; i < k + n; i++)
		at += (size_t)snprintf(g->hashes + at, sizeof g->hashes - at, "%s\"0x%016llx\"", i > k ? "," : "",
				       (unsigned long long)g->name[i]);
	return g->hashes;
}

/* The engine at ep stores blocks k..k+n-1 in medium, with their tokens. */
static void store(struct rig *g, uint64_t t, const char *ep, const char *medium, int k, int n)
{
	char tokens[512] = "", parent[32] = "null";
	for (int i = 4 * k; i < 4 * (k + n); i++)
		snprintf(tokens + strlen(tokens), sizeof tokens - strlen(tokens), "%s%u", i > 4 * k ? "," : "", g->tokens[i]);
	if (k > 0)
		snprintf(parent, sizeof parent, "\"0x%016llx\"", (unsigned long long)g->name[k - 1]);
	feed(g, "{\"src\":\"%s\",\"recv_ns\":%llu,\"seq\":%llu,\"format\":\"vllm\",\"dp_rank\":0,\"type\":\"stored\","
		"\"medium\":\"%s\",\"block_hashes\":[%s],\"parent\":%s,\"token_ids\":[%s],\"block_size\":4}",
	     ep, (unsigned long long)t, (unsigned long long)g->seq++, medium, names(g, k, n), parent, tokens);
}

/* A store of block k without tokens: a name only (vLLM's CPU offload placeholder). */
static void store_name(struct rig *g, uint64_t t, const char *ep, const char *medium, int k)
{
	feed(g, "{\"src\":\"%s\",\"recv_ns\":%llu,\"seq\":%llu,\"format\":\"vllm\",\"dp_rank\":0,\"type\":\"stored\","
		"\"medium\":\"%s\",\"block_hashes\":[%s],\"parent\":null,\"token_ids\":[],\"block_size\":0}",
	     ep, (unsigned long long)t, (unsigned long long)g->seq++, medium, names(g, k, 1));
}

static void removed(struct rig *g, uint64_t t, const char *ep, const char *medium, int k)
{
	feed(g, "{\"src\":\"%s\",\"recv_ns\":%llu,\"seq\":%llu,\"format\":\"vllm\",\"dp_rank\":0,\"type\":\"removed\","
		"\"medium\":\"%s\",\"block_hashes\":[%s]}",
	     ep, (unsigned long long)t, (unsigned long long)g->seq++, medium, names(g, k, 1));
}

/* One removal of blocks k..k+n-1. */
static void removed_n(struct rig *g, uint64_t t, const char *ep, const char *medium, int k, int n)
{
	feed(g, "{\"src\":\"%s\",\"recv_ns\":%llu,\"seq\":%llu,\"format\":\"vllm\",\"dp_rank\":0,\"type\":\"removed\","
		"\"medium\":\"%s\",\"block_hashes\":[%s]}",
	     ep, (unsigned long long)t, (unsigned long long)g->seq++, medium, names(g, k, n));
}

static void cleared(struct rig *g, uint64_t t, const char *ep)
{
	feed(g, "{\"src\":\"%s\",\"recv_ns\":%llu,\"seq\":%llu,\"format\":\"vllm\",\"dp_rank\":0,\"type\":\"cleared\","
		"\"medium\":\"xpu\",\"block_hashes\":[]}",
	     ep, (unsigned long long)t, (unsigned long long)g->seq++);
}

/* The memcache pool's event about block k (k < 0: no hash) for backend
 * (NULL: no backend_id), naming the rig's model (NULL: none). */
static void pool(struct rig *g, uint64_t t, const char *type, const char *medium, int k, const char *backend)
{
	char be[64] = "", model[64] = "";
	if (backend)
		snprintf(be, sizeof be, ",\"backend_id\":\"%s\"", backend);
	if (g->model)
		snprintf(model, sizeof model, ",\"model_name\":\"%s\"", g->model);
	feed(g, "{\"src\":\"tcp://kvs:5557\",\"recv_ns\":%llu,\"seq\":%llu,\"format\":\"memcache\",\"dp_rank\":null,"
		"\"type\":\"%s\",\"medium\":\"%s\",\"block_hashes\":[%s]%s%s}",
	     (unsigned long long)t, (unsigned long long)g->seq++, type, medium, k < 0 ? "" : names(g, k, 1), be,
	     model);
}

/* A record that gave no event (kvdecode's no_events line): event time moves to t. */
static void tick(struct rig *g, uint64_t t)
{
	feed(g, "{\"type\":\"no_events\",\"src\":\"tcp://clock:1\",\"seq\":%llu,\"recv_ns\":%llu,\"record\":1,"
		"\"decoded\":true}",
	     (unsigned long long)g->seq++, (unsigned long long)t);
}

/* ---- what users see ------------------------------------------------------ */

/* The value of "key" in a state line, quotes left out; "" when absent. */
static void field(const char *line, const char *end, const char *key, char *out, size_t n)
{
	char k[32];
	snprintf(k, sizeof k, "\"%s\":", key);
	const char *p = strstr(line, k);
	out[0] = 0;
	if (!p || p > end)
		return;
	p += strlen(k);
	size_t len = strcspn(p, ",}");
	if (*p == '"')
		p++, len = strcspn(p, "\"");
	snprintf(out, n, "%.*s", (int)len, p);
}

/* "a/0,a/1" or "pool:NAME" for the workers of a state line; "-" for none. */
static void workers_of(const char *line, char *out, size_t n)
{
	static const char inst_key[] = "{\"instance_id\":\"", pool_key[] = "{\"pool\":\"", dp_key[] = "\",\"dp_rank\":";
	const char *p = strstr(line, "\"workers\":[") + 11;
	size_t at = 0;
	out[0] = 0;
	for (; *p == '{'; p = strchr(p, '}') + 1, p += *p == ',') {
		bool is_pool = strncmp(p, pool_key, sizeof pool_key - 1) == 0;
		const char *name = p + (is_pool ? sizeof pool_key : sizeof inst_key) - 1;
		int len = (int)strcspn(name, "\"");
		if (is_pool)
			at += (size_t)snprintf(out + at, n - at, "%spool:%.*s", at ? "," : "", len, name);
		else
			at += (size_t)snprintf(out + at, n - at, "%s%.*s/%lld", at ? "," : "", len, name,
					       strtoll(name + len + sizeof dp_key - 1, NULL, 10));
	}
	if (!at)
		snprintf(out, n, "-");
}

/* The state lines written since the last call, one per line as
 * "STATE[:REASON] HASH MEDIUM WORKERS[ n=COUNT]" ("-" for what is absent). */
static const char *states(struct rig *g)
{
	char *text = strndup(g->log.buf ? g->log.buf : "", g->log.len);
	size_t at = 0;
	g->states[0] = 0;
	for (char *line = text, *nl; (nl = strchr(line, '\n')) && at < sizeof g->states; line = nl + 1) {
		char state[32], reason[32], hash[32], medium[16], count[24], workers[256];
		field(line, nl, "state", state, sizeof state);
		field(line, nl, "reason", reason, sizeof reason);
		field(line, nl, "hash", hash, sizeof hash);
		field(line, nl, "medium", medium, sizeof medium);
		field(line, nl, "count", count, sizeof count);
		workers_of(line, workers, sizeof workers);
		if (strcmp(hash, "null") != 0)
			snprintf(hash, sizeof hash, "0x%llx", strtoull(hash, NULL, 16));
		else
			snprintf(hash, sizeof hash, "-");
		at += (size_t)snprintf(g->states + at, sizeof g->states - at, "%s%s%s%s %s %s %s%s%s", at ? "\n" : "", state,
				       reason[0] ? ":" : "", reason, hash, medium[0] ? medium : "-", workers,
				       count[0] ? " n=" : "", count);
	}
	free(text);
	g->log.len = 0;
	return g->states;
}

/* Who holds block k, in which media: "a/0:xc a/1:c" ("" when nobody). */
static const char *held(struct rig *g, int k)
{
	int64_t p = kv_index_find_partition(&g->ix, "m", "default");
	struct kv_block *b = p < 0 ? NULL : kv_blocks_find(&g->ix.p[p].blocks, g->chain[k]);
	size_t at = 0;
	g->held[0] = 0;
	for (size_t i = 0; b && i < kv_block_nholders(&g->ix, b); i++) {
		uint32_t h = kv_block_holders(&g->ix, b)[i];
		const struct kv_worker *w = &g->ws.v[KV_HOLDER_WORKER(h)];
		char media[4] = "";
		for (int m = 0, n = 0; m < KV_NMEDIA; m++)
			if (KV_HOLDER_MEDIA(h) & KV_MEDIUM_BIT(m))
				media[n++] = medium_letter[m];
		if (w->pool)
			at += (size_t)snprintf(g->held + at, sizeof g->held - at, "%spool:%s:%s", at ? " " : "",
					       w->instance_id, media);
		else
			at += (size_t)snprintf(g->held + at, sizeof g->held - at, "%s%s/%lld:%s", at ? " " : "",
					       w->instance_id, (long long)w->dp_rank, media);
	}
	return g->held;
}

/* kvquery's walk of the prompt's first n blocks for worker (instance, dp):
 * "npu/cpu/disk" blocks, with "+R remote" cpu under --shared-pool; "-" when
 * the worker is no hit. */
static const char *walk(struct rig *g, size_t n, bool shared, const char *instance, int64_t dp)
{
	struct kv_qsource src;
	kv_qsource_index(&src, &g->ix, &g->ws);
	struct kv_querier *q = kv_querier_new();
	struct kv_query req = { (uint32_t)kv_index_find_partition(&g->ix, "m", "default"), 4, g->tokens, 4 * n, NULL, 0,
				NULL, 0 };
	struct kv_query_opts o = { .shared_pool = shared };
	size_t nhits, nblocks;
	const struct kv_hit *h = kv_query_run(q, &src, &req, &o, &nhits, &nblocks);
	snprintf(g->walk, sizeof g->walk, "-");
	for (size_t i = 0; i < nhits; i++) {
		const struct kv_worker *w = &g->ws.v[h[i].worker];
		if (strcmp(w->instance_id, instance) != 0 || w->dp_rank != dp)
			continue;
		int len = snprintf(g->walk, sizeof g->walk, "%u/%u/%u", h[i].npu, h[i].cpu, h[i].disk);
		if (h[i].cpu_remote)
			snprintf(g->walk + len, sizeof g->walk - (size_t)len, " +%u remote", h[i].cpu_remote);
	}
	kv_querier_free(q);
	kv_qsource_free(&src);
	return g->walk;
}

/* The state as kvmatch -o writes it, read back as kvquery and kvmatch -i read it. */
static void snapshot(struct rig *g, struct kv_snap *s)
{
	char path[] = "/tmp/kvtools-match-XXXXXX";
	struct kv_err e = { 0 };
	close(mkstemp(path));
	if (!kv_snapstate_save(path, &g->ix, &g->ws, g->m, &e) || !kv_snapr_load(path, s, &e))
		abort();
	unlink(path);
}

/* "a/0:c a/1:c" with the medium's letter, for expectations. */
static const char *both_a(char *buf, int medium)
{
	sprintf(buf, "a/0:%c a/1:%c", medium_letter[medium], medium_letter[medium]);
	return buf;
}

/* ---- matching, in both orders, in every medium ----------------------------- */

/* The engine offloads block 0 (cpu or disk), then the pool stores it (in
 * any medium): every DP rank on the backend's host holds it in the pool's
 * medium; the offload itself makes nobody a holder. */
static void pool_store_after_offload_confirms_in_pool_medium(void)
{
	for (int em = KV_CPU; em <= KV_DISK; em++)
		for (int pm = KV_XPU; pm <= KV_DISK; pm++) {
			struct rig g;
			char want[128];
			rig_open(&g, defaults());
			store(&g, S(100), E0, medium_name[em], 0, 1);
			snprintf(want, sizeof want, "offload_cached 0xa %s -", medium_name[em]);
			ASSERT_EQ_STR(states(&g), want);
			ASSERT_EQ_STR(held(&g, 0), "");
			pool(&g, S(101), "stored", medium_name[pm], 0, HOST_A);
			snprintf(want, sizeof want, "confirmed 0xa %s a/0,a/1", medium_name[pm]);
			ASSERT_EQ_STR(states(&g), want);
			ASSERT_EQ_STR(held(&g, 0), both_a(want, pm));
			rig_close(&g);
		}
}

/* The other order: the pool's store waits (queued) and the offload meets
 * it (matched), in the pool's medium: the same index. */
static void offload_after_pool_store_matches_in_pool_medium(void)
{
	for (int em = KV_CPU; em <= KV_DISK; em++)
		for (int pm = KV_XPU; pm <= KV_DISK; pm++) {
			struct rig g;
			char want[128];
			rig_open(&g, defaults());
			pool(&g, S(100), "stored", medium_name[pm], 0, HOST_A);
			snprintf(want, sizeof want, "queued 0xa %s a/0,a/1", medium_name[pm]);
			ASSERT_EQ_STR(states(&g), want);
			ASSERT_EQ_STR(held(&g, 0), "");
			store(&g, S(101), E0, medium_name[em], 0, 1);
			snprintf(want, sizeof want, "matched 0xa %s a/0,a/1", medium_name[pm]);
			ASSERT_EQ_STR(states(&g), want);
			ASSERT_EQ_STR(held(&g, 0), both_a(want, pm));
			/* matched once: the pool's entries are gone, the offload is not cached */
			struct kv_snap s;
			snapshot(&g, &s);
			ASSERT_EQ_U64(s.npending + s.noffload, 0);
			kv_snapr_close(&s);
			pool(&g, S(102), "stored", "disk", 0, HOST_B);
			ASSERT_EQ_STR(states(&g), "confirmed 0xa disk b/0");
			rig_close(&g);
		}
}

/* Pool stores in two media before the offload: both are matched, each in its own. */
static void pending_entries_of_two_media_match_each_in_its_own(void)
{
	struct rig g;
	rig_open(&g, defaults());
	pool(&g, S(100), "stored", "cpu", 0, HOST_A);
	pool(&g, S(101), "stored", "disk", 0, HOST_A);
	ASSERT_EQ_STR(states(&g), "queued 0xa cpu a/0,a/1\nqueued 0xa disk a/0,a/1");
	store(&g, S(102), E0, "cpu", 0, 1);
	ASSERT_EQ_STR(states(&g), "matched 0xa cpu a/0,a/1\nmatched 0xa disk a/0,a/1");
	ASSERT_EQ_STR(held(&g, 0), "a/0:cd a/1:cd");
	rig_close(&g);
}

/* A pool store of a block the index holds (an engine's xpu store) is
 * confirmed at once, chained where the engine put it. */
static void pool_store_confirms_content_the_index_holds(void)
{
	struct rig g;
	rig_open(&g, defaults());
	store(&g, S(100), E0, "xpu", 0, 2);
	ASSERT_EQ_STR(states(&g), "applied 0xa xpu a/0\napplied 0xb xpu a/0");
	pool(&g, S(101), "stored", "cpu", 1, HOST_A);
	ASSERT_EQ_STR(states(&g), "confirmed 0xb cpu a/0,a/1");
	ASSERT_EQ_STR(held(&g, 0), "a/0:x");
	ASSERT_EQ_STR(held(&g, 1), "a/0:xc a/1:c");
	rig_close(&g);
}

/* An offload chains from its parent's name; an unknown parent drops it. */
static void offload_chains_from_its_parent(void)
{
	struct rig g;
	rig_open(&g, defaults());
	store(&g, S(100), E0, "cpu", 1, 1);
	ASSERT_EQ_STR(states(&g), "dropped:parent_not_found 0xb cpu a/0");
	store(&g, S(101), E0, "xpu", 0, 1);
	store(&g, S(102), E0, "disk", 1, 1);
	pool(&g, S(103), "stored", "disk", 1, HOST_A);
	ASSERT_EQ_STR(states(&g), "applied 0xa xpu a/0\noffload_cached 0xb disk -\nconfirmed 0xb disk a/0,a/1");
	ASSERT_EQ_STR(held(&g, 1), "a/0:d a/1:d");
	rig_close(&g);
}

/* An engine store in an unknown medium is an xpu store; a trailing
 * partial block is a block; what no block can be made of is dropped, named. */
static void engine_store_rules_and_drops(void)
{
	static const char line[] =
		"{\"src\":\"" E0 "\",\"recv_ns\":%llu,\"seq\":%d,\"format\":\"vllm\",\"dp_rank\":0,\"type\":\"stored\","
		"\"medium\":\"%s\",\"block_hashes\":[%s],\"parent\":null,\"token_ids\":[%s],\"block_size\":%s%s}";
	struct rig g;
	rig_open(&g, defaults());
	feed(&g, line, (unsigned long long)S(100), 1, "unknown", "\"0xa\"", "1,2,3,4", "4", "");
	feed(&g, line, (unsigned long long)S(100), 2, "xpu", "\"0xa\",\"0xb\"", "1,2,3,4,5", "4", "");
	feed(&g, line, (unsigned long long)S(100), 3, "xpu", "\"0xa\",\"0xb\"", "1,2,3,4", "4", "");
	feed(&g, line, (unsigned long long)S(100), 4, "xpu", "\"0xa\"", "1,2,3,4,5,6,7,8", "8", "");
	feed(&g, line, (unsigned long long)S(100), 5, "xpu", "\"0xa\"", "1,2,3,4", "0", "");
	feed(&g, line, (unsigned long long)S(100), 6, "cpu", "", "1,2,3,4", "4", "");
	feed(&g, line, (unsigned long long)S(100), 7, "xpu", "\"0xa\"", "1,2,3,4", "4",
	     ",\"kv_cache_spec_kind\":\"sliding_window\"");
	feed(&g, line, (unsigned long long)S(100), 8, "xpu", "\"0xa\"", "1,2,3,4", "4",
	     ",\"kv_cache_spec_kind\":\"mla_attention\"");
	ASSERT_EQ_STR(states(&g), "applied 0xa xpu a/0\n"
				  "applied 0xa xpu a/0\napplied 0xb xpu a/0\n"
				  "applied 0xa xpu a/0\ndropped:hashes_beyond_tokens 0xb xpu a/0\n"
				  "dropped:block_size_mismatch 0xa xpu a/0\n"
				  "dropped:bad_block_size 0xa xpu a/0\n"
				  "dropped:no_hashes - cpu a/0\n"
				  "dropped:non_full_attention 0xa xpu a/0\n"
				  "applied 0xa xpu a/0");
	ASSERT_EQ_STR(held(&g, 0), "a/0:x");
	rig_close(&g);
}

/* ---- targets --------------------------------------------------------------- */

/* IpOnly: every DP rank on the backend_id's host, nobody else's; a
 * backend_id that is no worker's host is a pool holder; no backend_id is
 * dropped; a pool event without a medium is cpu. */
static void pool_targets_the_backend_host(void)
{
	struct rig g;
	rig_open(&g, defaults());
	store(&g, S(100), E0, "xpu", 0, 1);
	states(&g);
	pool(&g, S(101), "stored", "disk", 0, HOST_B);
	pool(&g, S(102), "stored", "cpu", 0, "mooncake-daemon-0");
	pool(&g, S(103), "stored", "cpu", 0, NULL);
	pool(&g, S(104), "stored", "unknown", 0, HOST_A);
	pool(&g, S(105), "stored", "cpu", -1, HOST_A);
	ASSERT_EQ_STR(states(&g), "confirmed 0xa disk b/0\n"
				  "confirmed 0xa cpu pool:mooncake-daemon-0\n"
				  "dropped:unknown_backend 0xa cpu -\n"
				  "confirmed 0xa cpu a/0,a/1\n"
				  "dropped:no_hashes - cpu a/0,a/1");
	ASSERT_EQ_STR(held(&g, 0), "a/0:xc a/1:c b/0:d pool:mooncake-daemon-0:c");
	rig_close(&g);

	/* --backend-serves names the instances a backend_id serves: all their ranks */
	rig_open(&g, defaults());
	ASSERT(!kv_workers_add_serves(&g.ws, "mooncake-daemon-0=a"));
	pool(&g, S(100), "stored", "cpu", 0, "mooncake-daemon-0");
	ASSERT_EQ_STR(states(&g), "queued 0xa cpu a/0,a/1");
	rig_close(&g);
}

/* A pool event meets the offloads of its partition: its own model_name,
 * else its subscriber's registration ("m"); another model's waits. */
static void pool_event_meets_offloads_of_its_partition(void)
{
	struct rig g;
	rig_open(&g, defaults());
	store(&g, S(100), E0, "cpu", 0, 2);
	g.model = "n";
	pool(&g, S(101), "stored", "cpu", 0, HOST_A);
	g.model = NULL;
	pool(&g, S(102), "stored", "cpu", 0, HOST_A);
	g.model = "m";
	pool(&g, S(103), "stored", "cpu", 1, HOST_A);
	ASSERT_EQ_STR(states(&g), "offload_cached 0xa cpu -\noffload_cached 0xb cpu -\nqueued 0xa cpu a/0,a/1\n"
				  "confirmed 0xa cpu a/0,a/1\nconfirmed 0xb cpu a/0,a/1");
	rig_close(&g);
}

/* --match none: the pool subscriber's own worker is the target. */
static void match_none_targets_the_pool_subscriber(void)
{
	struct rig g;
	struct kv_match_opts o = defaults();
	o.match_none = true;
	rig_open(&g, o);
	pool(&g, S(100), "stored", "cpu", 0, HOST_A);
	store(&g, S(101), E0, "cpu", 0, 1);
	ASSERT_EQ_STR(states(&g), "queued 0xa cpu kvs/0\nmatched 0xa cpu kvs/0");
	ASSERT_EQ_STR(held(&g, 0), "kvs/0:c");
	rig_close(&g);
}

/* ---- the pending pool ------------------------------------------------------ */

/* A pending entry lives --pending-ttl of event time: one nanosecond before,
 * the offload still matches; exactly at it, the entry has expired. */
static void pending_entry_expires_exactly_at_pending_ttl(void)
{
	for (int pm = KV_XPU; pm <= KV_DISK; pm++) {
		struct rig g;
		char want[128];
		rig_open(&g, defaults());
		pool(&g, S(100), "stored", medium_name[pm], 0, HOST_A);
		states(&g);
		tick(&g, S(160) - 1);
		ASSERT_EQ_STR(states(&g), "");
		store(&g, S(160) - 1, E0, "cpu", 0, 1);
		snprintf(want, sizeof want, "matched 0xa %s a/0,a/1", medium_name[pm]);
		ASSERT_EQ_STR(states(&g), want);
		rig_close(&g);

		rig_open(&g, defaults());
		pool(&g, S(100), "stored", medium_name[pm], 0, HOST_A);
		states(&g);
		tick(&g, S(160));
		snprintf(want, sizeof want, "pending_expired 0xa %s a/0,a/1 n=2", medium_name[pm]);
		ASSERT_EQ_STR(states(&g), want);
		store(&g, S(160), E0, "cpu", 0, 1);
		ASSERT_EQ_STR(states(&g), "offload_cached 0xa cpu -");
		ASSERT_EQ_STR(held(&g, 0), "");
		rig_close(&g);
	}
}

/* The offload's own record moves event time first: at the TTL it finds the
 * entry expired (with a --pending-ttl of its own). */
static void offload_at_pending_ttl_finds_the_entry_expired(void)
{
	struct rig g;
	struct kv_match_opts o = defaults();
	o.pending_ttl_ns = S(5);
	rig_open(&g, o);
	pool(&g, S(100), "stored", "disk", 0, HOST_A);
	store(&g, S(105), E0, "disk", 0, 1);
	ASSERT_EQ_STR(states(&g), "queued 0xa disk a/0,a/1\npending_expired 0xa disk a/0,a/1 n=2\n"
				  "offload_cached 0xa disk -");
	rig_close(&g);
}

/* The same pool store again waits once per target and medium, from its
 * first arrival: two entries expire, at the first store's TTL. */
static void repeated_pool_store_queues_each_target_once(void)
{
	struct rig g;
	struct kv_snap s;
	rig_open(&g, defaults());
	pool(&g, S(100), "stored", "cpu", 0, HOST_A);
	pool(&g, S(130), "stored", "cpu", 0, HOST_A);
	ASSERT_EQ_STR(states(&g), "queued 0xa cpu a/0,a/1\nqueued 0xa cpu a/0,a/1");
	snapshot(&g, &s);
	ASSERT_EQ_U64(s.npending, 2);
	ASSERT_EQ_U64(s.pending[0].t, S(100));
	ASSERT_EQ_U64(s.pending[1].t, S(100));
	kv_snapr_close(&s);
	tick(&g, S(160));
	ASSERT_EQ_STR(states(&g), "pending_expired 0xa cpu a/0,a/1 n=2");
	tick(&g, S(190));
	ASSERT_EQ_STR(states(&g), "");
	rig_close(&g);
}

/* Expiry by TTL takes every entry of the hash stamped as long ago, no
 * later one: entries of one hash in two media expire each at its time. */
static void pending_entries_expire_each_at_its_own_time(void)
{
	struct rig g;
	rig_open(&g, defaults());
	pool(&g, S(100), "stored", "cpu", 0, HOST_A);
	pool(&g, S(110), "stored", "disk", 0, HOST_A);
	pool(&g, S(110), "stored", "cpu", 0, HOST_B);
	states(&g);
	tick(&g, S(160));
	ASSERT_EQ_STR(states(&g), "pending_expired 0xa cpu a/0,a/1 n=2");
	tick(&g, S(170) - 1);
	ASSERT_EQ_STR(states(&g), "");
	tick(&g, S(170));
	ASSERT_EQ_STR(states(&g), "pending_expired 0xa cpu b/0 n=1\npending_expired 0xa disk a/0,a/1 n=2");
	rig_close(&g);
}

/* Expiry by TTL takes every entry of the hash past it at once: one line. */
static void pending_entries_past_ttl_expire_together(void)
{
	struct rig g;
	rig_open(&g, defaults());
	pool(&g, S(100), "stored", "cpu", 0, HOST_A);
	pool(&g, S(105), "stored", "cpu", 0, HOST_B);
	pool(&g, S(106), "stored", "cpu", 1, HOST_B);
	states(&g);
	tick(&g, S(170));
	ASSERT_EQ_STR(states(&g), "pending_expired 0xa cpu a/0,a/1,b/0 n=3\npending_expired 0xb cpu b/0 n=1");
	rig_close(&g);
}

/* --max-pending N: N entries wait; one more expires the oldest (its hash's
 * entries stamped as early), reason max_pending. */
static void max_pending_expires_the_oldest_past_the_bound(void)
{
	struct rig g;
	struct kv_match_opts o = defaults();
	o.max_pending = 3;
	rig_open(&g, o);
	pool(&g, S(100), "stored", "cpu", 0, HOST_A);
	pool(&g, S(101), "stored", "cpu", 1, HOST_B);
	ASSERT_EQ_STR(states(&g), "queued 0xa cpu a/0,a/1\nqueued 0xb cpu b/0");
	pool(&g, S(102), "stored", "cpu", 2, HOST_B);
	ASSERT_EQ_STR(states(&g), "queued 0xc cpu b/0\npending_expired:max_pending 0xa cpu a/0,a/1 n=2");
	store(&g, S(103), E0, "cpu", 0, 1);
	ASSERT_EQ_STR(states(&g), "offload_cached 0xa cpu -");
	rig_close(&g);
}

/* ---- the offload cache ----------------------------------------------------- */

/* An offload confirms pool stores for --offload-ttl of event time: one
 * nanosecond before, confirmed; exactly at it, queued, even before the
 * periodic sweep (every 30 s) has removed it. */
static void offload_expires_exactly_at_offload_ttl(void)
{
	struct kv_match_opts o = defaults();
	o.offload_ttl_ns = S(10);
	for (int em = KV_CPU; em <= KV_DISK; em++) {
		struct rig g;
		char want[128];
		rig_open(&g, o);
		store(&g, S(31), E0, medium_name[em], 0, 1); /* swept at 31; next sweep at 60 */
		pool(&g, S(41) - 1, "stored", "cpu", 0, HOST_A);
		snprintf(want, sizeof want, "offload_cached 0xa %s -\nconfirmed 0xa cpu a/0,a/1", medium_name[em]);
		ASSERT_EQ_STR(states(&g), want);
		rig_close(&g);

		rig_open(&g, o);
		store(&g, S(31), E0, medium_name[em], 0, 1);
		pool(&g, S(41), "stored", "cpu", 0, HOST_A);
		snprintf(want, sizeof want, "offload_cached 0xa %s -\nqueued 0xa cpu a/0,a/1", medium_name[em]);
		ASSERT_EQ_STR(states(&g), want);
		ASSERT_EQ_STR(held(&g, 0), "");
		rig_close(&g);
	}
}

/* A store without tokens names an offload's content until --offload-ttl. */
static void name_only_store_finds_an_offload_until_offload_ttl(void)
{
	struct kv_match_opts o = defaults();
	o.offload_ttl_ns = S(10);
	struct rig g;
	rig_open(&g, o);
	store(&g, S(31), E0, "cpu", 0, 1);
	store_name(&g, S(41) - 1, E0, "xpu", 0);
	ASSERT_EQ_STR(states(&g), "offload_cached 0xa cpu -\napplied 0xa xpu a/0");
	ASSERT_EQ_STR(held(&g, 0), "a/0:x");
	rig_close(&g);

	rig_open(&g, o);
	store(&g, S(31), E0, "cpu", 0, 1);
	store_name(&g, S(41), E0, "xpu", 0);
	ASSERT_EQ_STR(states(&g), "offload_cached 0xa cpu -\ndropped:unknown_hash 0xa xpu a/0");
	ASSERT_EQ_STR(held(&g, 0), "");
	rig_close(&g);
}

/* The sweep (at multiples of 30 s of event time) removes the offloads that
 * reached --offload-ttl and keeps younger ones, which still confirm. */
static void sweep_removes_offloads_at_offload_ttl_only(void)
{
	for (int extra = 0; extra <= 1; extra++) {
		struct kv_match_opts o = defaults();
		o.offload_ttl_ns = S(40) + (uint64_t)extra;
		struct rig g;
		struct kv_snap s;
		rig_open(&g, o);
		store(&g, S(20), E0, "disk", 0, 1);
		tick(&g, S(60));
		snapshot(&g, &s);
		ASSERT_EQ_U64(s.noffload, (uint64_t)extra);
		kv_snapr_close(&s);
		pool(&g, S(60), "stored", "disk", 0, HOST_A);
		ASSERT_EQ_STR(states(&g), extra ? "offload_cached 0xa disk -\nconfirmed 0xa disk a/0,a/1"
						: "offload_cached 0xa disk -\nqueued 0xa disk a/0,a/1");
		rig_close(&g);
	}
}

/* A pool store takes the offload: the next store of that hash is confirmed
 * from the block it made. */
static void confirmed_offload_is_taken_from_the_cache(void)
{
	struct rig g;
	struct kv_snap s;
	rig_open(&g, defaults());
	store(&g, S(100), E0, "cpu", 0, 1);
	pool(&g, S(101), "stored", "cpu", 0, HOST_A);
	snapshot(&g, &s);
	ASSERT_EQ_U64(s.noffload, 0);
	kv_snapr_close(&s);
	pool(&g, S(102), "stored", "disk", 0, HOST_B);
	ASSERT_EQ_STR(states(&g), "offload_cached 0xa cpu -\nconfirmed 0xa cpu a/0,a/1\nconfirmed 0xa disk b/0");
	ASSERT_EQ_STR(held(&g, 0), "a/0:c a/1:c b/0:d");
	rig_close(&g);
}

/* ---- released content -------------------------------------------------------- */

/* The content of a block nobody holds any more confirms a pool store for
 * --content-ttl after its release: one nanosecond before, confirmed; at
 * it, queued. */
static void released_content_confirms_until_content_ttl(void)
{
	struct kv_match_opts o = defaults();
	o.content_ttl_ns = S(10);
	struct rig g;
	rig_open(&g, o);
	store(&g, S(31), E0, "xpu", 0, 1);
	removed(&g, S(32), E0, "xpu", 0);
	ASSERT_EQ_STR(held(&g, 0), "");
	pool(&g, S(42) - 1, "stored", "cpu", 0, HOST_A);
	ASSERT_EQ_STR(states(&g), "applied 0xa xpu a/0\napplied 0xa xpu a/0\nconfirmed 0xa cpu a/0,a/1");
	ASSERT_EQ_STR(held(&g, 0), "a/0:c a/1:c");
	rig_close(&g);

	rig_open(&g, o);
	store(&g, S(31), E0, "xpu", 0, 1);
	removed(&g, S(32), E0, "xpu", 0);
	pool(&g, S(42), "stored", "cpu", 0, HOST_A);
	ASSERT_EQ_STR(states(&g), "applied 0xa xpu a/0\napplied 0xa xpu a/0\nqueued 0xa cpu a/0,a/1");
	rig_close(&g);
}

/* A removal that frees more blocks than are fetched ahead keeps the
 * content of each (kept once the removal is done), and a pool store of
 * any of them is confirmed from it. */
static void removal_of_many_keeps_every_content(void)
{
	struct rig g;
	rig_open(&g, defaults());
	store(&g, S(31), E0, "xpu", 0, NBLOCKS);
	removed_n(&g, S(32), E0, "xpu", 0, NBLOCKS);
	ASSERT_EQ_STR(held(&g, 0), "");
	ASSERT_EQ_STR(held(&g, NBLOCKS - 1), "");
	states(&g);
	char want[64];
	for (int k = 0; k < NBLOCKS; k++) {
		pool(&g, S(33), "stored", "cpu", k, HOST_A);
		snprintf(want, sizeof want, "confirmed 0x%llx cpu a/0,a/1", (unsigned long long)g.name[k]);
		ASSERT_EQ_STR(states(&g), want);
	}
	ASSERT_EQ_STR(held(&g, NBLOCKS - 1), "a/0:c a/1:c");
	rig_close(&g);
}

/* The sweep keeps content younger than --content-ttl (it still confirms
 * after the sweep) and removes it at the TTL. */
static void sweep_removes_content_at_content_ttl_only(void)
{
	struct kv_match_opts o = defaults();
	o.content_ttl_ns = S(45);
	struct rig g;
	rig_open(&g, o);
	store(&g, S(10), E0, "xpu", 0, 1);
	removed(&g, S(20), E0, "xpu", 0);
	tick(&g, S(60)); /* a sweep, at 40 s of its 45 */
	pool(&g, S(65) - 1, "stored", "cpu", 0, HOST_A);
	ASSERT_EQ_STR(states(&g), "applied 0xa xpu a/0\napplied 0xa xpu a/0\nconfirmed 0xa cpu a/0,a/1");
	rig_close(&g);

	for (int extra = 0; extra <= 1; extra++) {
		struct kv_snap s;
		o.content_ttl_ns = S(40) + (uint64_t)extra;
		rig_open(&g, o);
		store(&g, S(10), E0, "xpu", 0, 1);
		removed(&g, S(20), E0, "xpu", 0);
		tick(&g, S(60) - 1);
		snapshot(&g, &s);
		ASSERT_EQ_U64(s.ncontent, 1);
		kv_snapr_close(&s);
		tick(&g, S(60));
		snapshot(&g, &s);
		ASSERT_EQ_U64(s.ncontent, (uint64_t)extra);
		kv_snapr_close(&s);
		rig_close(&g);
	}
}

/* Engine hashes that name nothing any more are forgotten at a sweep once
 * the map holds more than 1024 (twice the names after the last such sweep,
 * plus 1024); those naming a block, live content or a live offload stay. */
static void stale_names_forgotten_past_1024(void)
{
	for (int over = 0; over <= 1; over++) {
		struct kv_match_opts o = defaults();
		o.offload_ttl_ns = S(10);
		struct rig g;
		struct kv_snap s;
		rig_open(&g, o);
		/* 1021 or 1022 offloads that expire unconfirmed, beside 3 names that
		 * still name something: 1024 names in all, or 1025 */
		size_t n = 1021 + (size_t)over, len = 0;
		char *hashes = malloc(n * 24), *tokens = malloc(n * 4 * 12);
		hashes[0] = tokens[0] = 0;
		for (size_t i = 0; i < n; i++)
			sprintf(hashes + strlen(hashes), "%s\"0x%llx\"", i ? "," : "", 0x10000ull + i);
		for (size_t i = 0; i < 4 * n; i++)
			len += (size_t)sprintf(tokens + len, "%s%zu", i ? "," : "", 1000 + i);
		feed(&g, "{\"src\":\"%s\",\"recv_ns\":%llu,\"seq\":1,\"format\":\"vllm\",\"dp_rank\":0,\"type\":\"stored\","
			 "\"medium\":\"cpu\",\"block_hashes\":[%s],\"parent\":null,\"token_ids\":[%s],\"block_size\":4}",
		     E0, (unsigned long long)S(31), hashes, tokens);
		free(hashes);
		free(tokens);
		store(&g, S(55), E0, "xpu", 0, 1);  /* 0xa: a block */
		store(&g, S(55), E0, "xpu", 1, 1);
		removed(&g, S(55), E0, "xpu", 1);    /* 0xb: released content */
		store(&g, S(55), E0, "disk", 2, 1);  /* 0xc: a live offload */
		tick(&g, S(60));
		snapshot(&g, &s);
		ASSERT_EQ_U64(s.nehashes, 1);
		ASSERT_EQ_U64(s.nstale, over ? 2 : n + 2);
		kv_snapr_close(&s);
		/* what stayed still names: the offload confirms, the content too */
		pool(&g, S(61), "stored", "cpu", 2, HOST_B);
		pool(&g, S(61), "stored", "cpu", 1, HOST_B);
		states(&g);
		ASSERT_EQ_STR(held(&g, 1), "b/0:c");
		ASSERT_EQ_STR(held(&g, 2), "b/0:c");
		rig_close(&g);
	}
}

/* ---- removals and clears ----------------------------------------------------- */

/* A pool removal stops its targets holding the block in its medium only. */
static void pool_removal_releases_its_medium_only(void)
{
	static const char *const left[KV_NMEDIA] = { "a/0:cd a/1:cd b/0:x", "a/0:xd a/1:d b/0:x", "a/0:xc a/1:c b/0:x" };
	for (int pm = KV_XPU; pm <= KV_DISK; pm++) {
		struct rig g;
		char want[128];
		rig_open(&g, defaults());
		store(&g, S(100), E0, "xpu", 0, 1);
		store(&g, S(100), E2, "xpu", 0, 1);
		pool(&g, S(101), "stored", "cpu", 0, HOST_A);
		pool(&g, S(101), "stored", "disk", 0, HOST_A);
		ASSERT_EQ_STR(held(&g, 0), "a/0:xcd a/1:cd b/0:x");
		states(&g);
		pool(&g, S(102), "removed", medium_name[pm], 0, HOST_A);
		snprintf(want, sizeof want, "applied 0xa %s a/0,a/1", medium_name[pm]);
		ASSERT_EQ_STR(states(&g), want);
		ASSERT_EQ_STR(held(&g, 0), left[pm]);
		rig_close(&g);
	}
}

/* A block a pool removal frees leaves its content: a later store is confirmed. */
static void pool_removal_keeps_the_content_it_frees(void)
{
	struct rig g;
	rig_open(&g, defaults());
	store(&g, S(100), E0, "cpu", 0, 1);
	pool(&g, S(101), "stored", "cpu", 0, HOST_A);
	pool(&g, S(102), "removed", "cpu", 0, HOST_A);
	ASSERT_EQ_STR(held(&g, 0), "");
	states(&g);
	pool(&g, S(103), "stored", "disk", 0, HOST_B);
	ASSERT_EQ_STR(states(&g), "confirmed 0xa disk b/0");
	rig_close(&g);
}

/* A pool clear is about its partition (model): another's entries stay. */
static void pool_clear_keeps_other_partitions(void)
{
	struct rig g;
	struct kv_snap s;
	rig_open(&g, defaults());
	g.model = "n";
	pool(&g, S(100), "stored", "cpu", 0, HOST_A);
	g.model = "m";
	pool(&g, S(100), "stored", "cpu", 1, HOST_A);
	pool(&g, S(101), "cleared", "cpu", -1, HOST_A);
	ASSERT_EQ_STR(states(&g), "queued 0xa cpu a/0,a/1\nqueued 0xb cpu a/0,a/1\napplied - cpu a/0,a/1 n=2");
	snapshot(&g, &s);
	ASSERT_EQ_U64(s.npending, 2);
	ASSERT_EQ_U64(s.pending[0].ehash, 0xa);
	kv_snapr_close(&s);
	rig_close(&g);
}

/* A pool removal drops its targets' pending entries in its medium only. */
static void pool_removal_drops_pending_entries_of_its_medium(void)
{
	for (int pm = KV_CPU; pm <= KV_DISK; pm++) {
		struct rig g;
		char want[128];
		int other = pm == KV_CPU ? KV_DISK : KV_CPU;
		rig_open(&g, defaults());
		pool(&g, S(100), "stored", "cpu", 0, HOST_A);
		pool(&g, S(100), "stored", "disk", 0, HOST_A);
		pool(&g, S(100), "stored", medium_name[pm], 0, HOST_B);
		states(&g);
		pool(&g, S(101), "removed", medium_name[pm], 0, HOST_A);
		snprintf(want, sizeof want, "applied 0xa %s a/0,a/1", medium_name[pm]);
		ASSERT_EQ_STR(states(&g), want);
		store(&g, S(102), E0, "cpu", 0, 1);
		snprintf(want, sizeof want, "matched 0xa %s b/0\nmatched 0xa %s a/0,a/1", medium_name[pm], medium_name[other]);
		if (pm == KV_DISK)
			snprintf(want, sizeof want, "matched 0xa cpu a/0,a/1\nmatched 0xa disk b/0");
		ASSERT_EQ_STR(states(&g), want);
		snprintf(want, sizeof want, "a/0:%c a/1:%c b/0:%c", medium_letter[other], medium_letter[other],
			 medium_letter[pm]);
		ASSERT_EQ_STR(held(&g, 0), want);
		rig_close(&g);
	}
}

/* An offload no pool confirmed is forgotten when the engine removes it (in
 * its own medium) or the pool removes it: a later pool store waits. */
static void removed_offload_is_forgotten(void)
{
	for (int em = KV_CPU; em <= KV_DISK; em++)
		for (int by_pool = 0; by_pool <= 1; by_pool++) {
			struct rig g;
			char want[128];
			rig_open(&g, defaults());
			store(&g, S(100), E0, medium_name[em], 0, 1);
			if (by_pool)
				pool(&g, S(101), "removed", "cpu", 0, HOST_A);
			else
				removed(&g, S(101), E0, medium_name[em], 0);
			pool(&g, S(102), "stored", "cpu", 0, HOST_A);
			snprintf(want, sizeof want, "offload_cached 0xa %s -\nqueued 0xa cpu a/0,a/1", medium_name[em]);
			ASSERT_EQ_STR(states(&g), want);
			rig_close(&g);
		}
	/* an xpu removal of that hash leaves the offload */
	struct rig g;
	rig_open(&g, defaults());
	store(&g, S(100), E0, "cpu", 0, 1);
	removed(&g, S(101), E0, "xpu", 0);
	pool(&g, S(102), "stored", "cpu", 0, HOST_A);
	ASSERT_EQ_STR(states(&g), "offload_cached 0xa cpu -\nconfirmed 0xa cpu a/0,a/1");
	rig_close(&g);
}

/* An engine removal stops its own worker holding the block in its medium. */
static void engine_removal_releases_its_worker_in_its_medium(void)
{
	struct rig g;
	rig_open(&g, defaults());
	store(&g, S(100), E0, "xpu", 0, 1);
	pool(&g, S(101), "stored", "cpu", 0, HOST_A);
	pool(&g, S(101), "stored", "disk", 0, HOST_A);
	states(&g);
	removed(&g, S(102), E0, "cpu", 0);
	ASSERT_EQ_STR(held(&g, 0), "a/0:xd a/1:cd");
	removed(&g, S(103), E1, "xpu", 0); /* a/1 holds no xpu: counted, nothing changes */
	ASSERT_EQ_STR(held(&g, 0), "a/0:xd a/1:cd");
	removed(&g, S(104), E1, "disk", 0);
	removed(&g, S(105), E0, "unknown", 0); /* an unknown medium is xpu */
	ASSERT_EQ_STR(states(&g), "applied 0xa cpu a/0\napplied 0xa disk a/1\napplied 0xa xpu a/0");
	ASSERT_EQ_STR(held(&g, 0), "a/0:d a/1:c");
	rig_close(&g);
}

/* kvmatch(1): "A removal stops the worker holding the block in that
 * medium."  That holds too when the engine offloaded the block again after
 * a pool confirmed it (a repeated offload event): the removal forgets the
 * new offload, and the worker stops holding its confirmed copy.
 * FAILS today: engine_removed() takes the removal as the offload's only
 * (OFFLOAD_GONE) and leaves a/0 holding the block in cpu, where the same
 * removal without the repeated offload releases it. */
static void engine_removal_after_repeated_offload_releases_the_confirmed_block(void)
{
	struct rig g;
	char after_removal[256], lines[512];
	rig_open(&g, defaults());
	store(&g, S(100), E0, "cpu", 0, 1);
	pool(&g, S(101), "stored", "cpu", 0, HOST_A);
	store(&g, S(102), E0, "cpu", 0, 1);
	removed(&g, S(103), E0, "cpu", 0);
	snprintf(after_removal, sizeof after_removal, "%s", held(&g, 0));
	pool(&g, S(104), "stored", "cpu", 0, HOST_B);
	snprintf(lines, sizeof lines, "%s", states(&g));
	rig_close(&g); /* before asserting: this test is known to fail */
	ASSERT_EQ_STR(after_removal, "a/1:c");
	ASSERT_EQ_STR(lines, "offload_cached 0xa cpu -\nconfirmed 0xa cpu a/0,a/1\noffload_cached 0xa cpu -\n"
			     "applied 0xa cpu a/0\nconfirmed 0xa cpu b/0");
}

/* An offload's confirmation names its block by the offload's hash again,
 * even when a store since named another block by that hash: an engine
 * removal of the hash then releases the confirmed block, not the other. */
static void confirmed_offload_names_its_block_after_a_rename(void)
{
	struct rig g;
	char confirmed[256], renamed[256], lines[512];
	rig_open(&g, defaults());
	store(&g, S(100), E0, "cpu", 0, 1);
	g.name[1] = g.name[0]; /* block 1 stored under block 0's name */
	store(&g, S(101), E0, "xpu", 1, 1);
	pool(&g, S(102), "stored", "cpu", 0, HOST_A);
	removed(&g, S(103), E0, "cpu", 0);
	snprintf(confirmed, sizeof confirmed, "%s", held(&g, 0));
	snprintf(renamed, sizeof renamed, "%s", held(&g, 1));
	snprintf(lines, sizeof lines, "%s", states(&g));
	rig_close(&g);
	ASSERT_EQ_STR(confirmed, "a/1:c");
	ASSERT_EQ_STR(renamed, "a/0:x");
	ASSERT_EQ_STR(lines, "offload_cached 0xa cpu -\napplied 0xa xpu a/0\nconfirmed 0xa cpu a/0,a/1\n"
			     "applied 0xa cpu a/0");
}

/* AllBlocksCleared drops the worker's xpu holdings, and only those; what
 * nobody holds any more stays known as content. */
static void engine_clear_drops_its_worker_xpu_only(void)
{
	struct rig g;
	rig_open(&g, defaults());
	store(&g, S(100), E0, "xpu", 0, 2);
	store(&g, S(100), E2, "xpu", 0, 1);
	pool(&g, S(101), "stored", "cpu", 0, HOST_A);
	states(&g);
	cleared(&g, S(102), E0);
	ASSERT_EQ_STR(states(&g), "applied - xpu a/0 n=2");
	ASSERT_EQ_STR(held(&g, 0), "a/0:c a/1:c b/0:x");
	ASSERT_EQ_STR(held(&g, 1), "");
	pool(&g, S(103), "stored", "disk", 1, HOST_B);
	ASSERT_EQ_STR(states(&g), "confirmed 0xb disk b/0");
	rig_close(&g);
}

/* A pool clear drops its targets' holdings and pending entries in its
 * medium: nobody else's, no other medium's. */
static void pool_clear_drops_its_targets_in_its_medium(void)
{
	static const char *const left[KV_NMEDIA] = { "a/0:cd a/1:cd b/0:xc", "a/0:xd a/1:xd b/0:xc", "a/0:xc a/1:xc b/0:xc" };
	for (int pm = KV_XPU; pm <= KV_DISK; pm++) {
		struct rig g;
		char want[128];
		rig_open(&g, defaults());
		store(&g, S(100), E0, "xpu", 0, 1);
		store(&g, S(100), E2, "xpu", 0, 1);
		for (int m = KV_XPU; m <= KV_DISK; m++) {
			pool(&g, S(101), "stored", medium_name[m], 0, HOST_A);
			pool(&g, S(101), "stored", medium_name[m], 1, HOST_A);
		}
		pool(&g, S(101), "stored", "cpu", 0, HOST_B);
		pool(&g, S(101), "stored", medium_name[pm], 1, HOST_B);
		ASSERT_EQ_STR(held(&g, 0), "a/0:xcd a/1:xcd b/0:xc");
		states(&g);
		pool(&g, S(102), "cleared", medium_name[pm], -1, HOST_A);
		/* a/0 and a/1 each: a holding of block 0 and a pending entry of 0xb */
		snprintf(want, sizeof want, "applied - %s a/0,a/1 n=4", medium_name[pm]);
		ASSERT_EQ_STR(states(&g), want);
		ASSERT_EQ_STR(held(&g, 0), left[pm]);
		/* the offload meets the entries left, reported medium by medium */
		store(&g, S(103), E0, "cpu", 1, 1);
		want[0] = 0;
		for (int m = KV_XPU; m <= KV_DISK; m++)
			snprintf(want + strlen(want), sizeof want - strlen(want), "%smatched 0xb %s %s", m ? "\n" : "",
				 medium_name[m], m == pm ? "b/0" : "a/0,a/1");
		ASSERT_EQ_STR(states(&g), want);
		rig_close(&g);
	}
}

/* ---- hash 0 --------------------------------------------------------------- */

/* 0 is a hash like any other (tables keep it apart from their slots), in
 * both orders, through a sweep, and from a Mooncake master batch. */
static void hash_zero_is_a_hash_like_any_other(void)
{
	struct rig g;
	rig_open(&g, defaults());
	g.name[0] = 0;
	store(&g, S(20), E0, "cpu", 0, 1);
	tick(&g, S(60)); /* a sweep: the offload is young */
	pool(&g, S(61), "stored", "cpu", 0, HOST_A);
	ASSERT_EQ_STR(states(&g), "offload_cached 0x0 cpu -\nconfirmed 0x0 cpu a/0,a/1");
	pool(&g, S(62), "removed", "cpu", 0, HOST_A);
	ASSERT_EQ_STR(states(&g), "applied 0x0 cpu a/0,a/1");
	pool(&g, S(63), "stored", "disk", 0, HOST_A);
	ASSERT_EQ_STR(states(&g), "confirmed 0x0 disk a/0,a/1");
	rig_close(&g);

	rig_open(&g, defaults());
	g.name[0] = 0;
	pool(&g, S(20), "stored", "disk", 0, HOST_A);
	store(&g, S(21), E0, "cpu", 0, 1);
	ASSERT_EQ_STR(states(&g), "queued 0x0 disk a/0,a/1\nmatched 0x0 disk a/0,a/1");
	ASSERT_EQ_STR(held(&g, 0), "a/0:d a/1:d");
	rig_close(&g);

	struct kv_match_opts o = defaults();
	o.offload_ttl_ns = S(40);
	struct kv_snap s;
	rig_open(&g, o);
	g.name[0] = 0;
	store(&g, S(20), E0, "cpu", 0, 1);
	tick(&g, S(60)); /* a sweep, at the offload's TTL */
	snapshot(&g, &s);
	ASSERT_EQ_U64(s.noffload, 0);
	kv_snapr_close(&s);
	rig_close(&g);
}

/* A Mooncake master event names its block twice (seq_hashes and
 * block_hashes): once each, 0 among them, as kvmatch reads a capture. */
static void mooncake_event_keeps_hash_zero(void)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 3);
	msgpack_pack_uint64(&pk, 100000);
	msgpack_pack_array(&pk, 1);
	msgpack_pack_map(&pk, 5);
	static const char *const keys[] = { "event_type", "backend_id", "medium", "seq_hashes", "block_hashes" };
	msgpack_pack_str_with_body(&pk, keys[0], strlen(keys[0]));
	msgpack_pack_str_with_body(&pk, "stored", 6);
	msgpack_pack_str_with_body(&pk, keys[1], strlen(keys[1]));
	msgpack_pack_str_with_body(&pk, HOST_A, strlen(HOST_A));
	msgpack_pack_str_with_body(&pk, keys[2], strlen(keys[2]));
	msgpack_pack_str_with_body(&pk, "disk", 4);
	for (int k = 3; k <= 4; k++) {
		msgpack_pack_str_with_body(&pk, keys[k], strlen(keys[k]));
		msgpack_pack_array(&pk, 2);
		msgpack_pack_uint64(&pk, 0);
		msgpack_pack_uint64(&pk, 0xb);
	}
	msgpack_pack_uint64(&pk, 0);
	struct kv_wire_opts wo = { 0 };
	struct kv_wire w;
	kv_wire_init(&w, &wo);
	struct kv_wire_ctx ctx = { .src = { "tcp://kvs:5557", 14 }, .recv_ns = S(100), .has_seq = true, .seq = 1 };
	ASSERT(kv_wire_decode(&w, &ctx, (const uint8_t *)sb.data, sb.size));
	ASSERT_EQ_U64(w.nev, 1);
	struct rig g;
	rig_open(&g, defaults());
	if (kv_match_record(g.m, &ctx, w.nev))
		kv_match_event(g.m, &w.ev[0]);
	g.name[0] = 0;
	store(&g, S(101), E0, "cpu", 0, 2);
	ASSERT_EQ_STR(states(&g), "queued 0x0 disk a/0,a/1\nqueued 0xb disk a/0,a/1\n"
				  "matched 0x0 disk a/0,a/1\nmatched 0xb disk a/0,a/1");
	ASSERT_EQ_STR(held(&g, 0), "a/0:d a/1:d");
	rig_close(&g);
	kv_wire_free(&w);
	msgpack_sbuffer_destroy(&sb);
}

/* ---- kvquery's walks over what matching made ----------------------------------- */

/* Per worker, a walk counts its own blocks only; --shared-pool counts
 * anyone's cpu and disk (and a pool holder's), as remote cpu and disk. */
static void shared_pool_counts_anyones_cpu_and_disk(void)
{
	struct rig g;
	rig_open(&g, defaults());
	store(&g, S(100), E0, "xpu", 0, 3);
	removed(&g, S(100), E0, "xpu", 2);
	removed(&g, S(100), E0, "xpu", 1);
	pool(&g, S(101), "stored", "cpu", 1, HOST_B);
	pool(&g, S(101), "stored", "disk", 2, HOST_B);
	ASSERT_EQ_STR(walk(&g, 3, false, "a", 0), "1/0/0");
	ASSERT_EQ_STR(walk(&g, 3, true, "a", 0), "1/1/1 +1 remote");
	ASSERT_EQ_STR(walk(&g, 3, false, "b", 0), "-");
	/* disk from block 0, for a worker that holds something of the
	 * partition (a candidate), under the shared pool only */
	pool(&g, S(102), "stored", "disk", 0, HOST_B);
	store(&g, S(102), E1, "xpu", 3, 1);
	ASSERT_EQ_STR(walk(&g, 3, false, "b", 0), "0/0/1");
	ASSERT_EQ_STR(walk(&g, 3, true, "a", 1), "0/0/1");
	ASSERT_EQ_STR(walk(&g, 3, false, "a", 1), "-");
	rig_close(&g);

	/* a pool holder's blocks count for every worker under the shared pool only */
	rig_open(&g, defaults());
	store(&g, S(100), E0, "xpu", 0, 2);
	pool(&g, S(101), "stored", "cpu", 0, "mooncake-daemon-0");
	pool(&g, S(101), "stored", "cpu", 1, "mooncake-daemon-0");
	removed(&g, S(102), E0, "xpu", 1);
	ASSERT_EQ_STR(walk(&g, 2, false, "a", 0), "1/0/0");
	ASSERT_EQ_STR(walk(&g, 2, true, "a", 0), "1/1/0 +1 remote");
	ASSERT_EQ_STR(walk(&g, 2, false, "mooncake-daemon-0", -1), "-");
	rig_close(&g);
}

/* ---- event time ---------------------------------------------------------- */

/* A record stamped earlier does not turn event time back; one stamped more
 * than the longest TTL ahead is taken at the event time reached, unless the
 * next record confirms the jump. */
static void event_time_moves_forward_within_the_longest_ttl(void)
{
	struct rig g;
	rig_open(&g, defaults());
	pool(&g, S(100), "stored", "cpu", 0, HOST_A);
	tick(&g, S(150));
	tick(&g, S(20));
	tick(&g, S(160) - 1);
	ASSERT_EQ_STR(states(&g), "queued 0xa cpu a/0,a/1");
	rig_close(&g);

	/* 600 s (the offload TTL, the longest) ahead: taken */
	rig_open(&g, defaults());
	pool(&g, S(100), "stored", "cpu", 0, HOST_A);
	tick(&g, S(700));
	ASSERT_EQ_STR(states(&g), "queued 0xa cpu a/0,a/1\npending_expired 0xa cpu a/0,a/1 n=2");
	rig_close(&g);

	/* a nanosecond more: suspect, until the next record confirms it */
	rig_open(&g, defaults());
	pool(&g, S(100), "stored", "cpu", 0, HOST_A);
	tick(&g, S(700) + 1);
	ASSERT_EQ_STR(states(&g), "queued 0xa cpu a/0,a/1");
	tick(&g, S(700) + 2);
	ASSERT_EQ_STR(states(&g), "pending_expired 0xa cpu a/0,a/1 n=2");
	rig_close(&g);
}

/* A replayed batch at or below its source's last seq was applied live. */
static void replayed_batch_already_applied_is_dropped(void)
{
	struct rig g;
	rig_open(&g, defaults());
	static const char line[] =
		"{\"src\":\"" E0 "\",\"recv_ns\":%llu,\"seq\":%d,\"replayed\":%s,\"format\":\"vllm\",\"dp_rank\":0,"
		"\"type\":\"stored\",\"medium\":\"xpu\",\"block_hashes\":[\"0x%x\"],\"parent\":null,\"token_ids\":[%d,2,3,4],"
		"\"block_size\":4}";
	feed(&g, line, (unsigned long long)S(100), 5, "false", 0xa, 1);
	feed(&g, line, (unsigned long long)S(101), 5, "true", 0xe, 9);
	feed(&g, line, (unsigned long long)S(102), 6, "true", 0xf, 9);
	ASSERT_EQ_STR(states(&g), "applied 0xa xpu a/0\ndropped:duplicate - - - n=1\napplied 0xf xpu a/0");
	rig_close(&g);
}

/* Records of a JetStream stream (kvnats -C) at or before the position
 * reached were applied: dropped, as kvmatch drops them before their lines. */
static void stream_position_reached_is_a_duplicate(void)
{
	struct rig g;
	rig_open(&g, defaults());
	struct kv_wire_ctx ctx = { .src = { E0, strlen(E0) }, .recv_ns = S(100), .has_position = true, .position = 7 };
	ASSERT(!kv_match_stream_duplicate(g.m, &ctx, 1));
	ASSERT(kv_match_stream_duplicate(g.m, &ctx, 1));
	ctx.position = 8;
	ASSERT(!kv_match_stream_duplicate(g.m, &ctx, 1));
	ASSERT_EQ_STR(states(&g), "dropped:duplicate - - - n=1");
	rig_close(&g);
}

/* A stream's name is its bytes, a NUL among them included: a header naming
 * "s\0x" continues "s\0x", not "s" (a name cut at the NUL made the same
 * stream's next input another stream's, and "s" the same as "s\0x"). */
static void stream_names_compared_whole(void)
{
	struct rig g;
	rig_open(&g, defaults());
	struct kv_cap_stream st = { "s\0x", 3, 5, 0 }, cut = { "s", 1, 5, 7 };
	struct kv_stream_reached was;
	ASSERT(kv_match_stream_begins(g.m, &st, &was) == KV_STREAM_OK);
	struct kv_wire_ctx ctx = { .src = { E0, strlen(E0) }, .recv_ns = S(100), .has_position = true, .position = 7 };
	ASSERT(!kv_match_stream_duplicate(g.m, &ctx, 1));
	st.after = 7;
	ASSERT(kv_match_stream_begins(g.m, &st, &was) == KV_STREAM_OK);
	ASSERT_EQ_U64(was.stream_len, 3);
	ASSERT(memcmp(was.stream, "s\0x", 3) == 0);
	ASSERT(kv_match_stream_begins(g.m, &cut, &was) == KV_STREAM_OTHER);
	rig_close(&g);
}

/* ---- resuming ---------------------------------------------------------------- */

/* At 150 s: a/0 holds blocks 0 and 1 and releases 1 (0xb: content until
 * 350 s with --content-ttl 200), b/0 offloads block 2 (0xc: until 250 s
 * with --offload-ttl 100), the pool stores 0xd (pending until 210 s); the
 * input goes on to 160 s. */
static void first_half(struct rig *g)
{
	store(g, S(150), E0, "xpu", 0, 2);
	removed(g, S(150), E0, "xpu", 1);
	store(g, S(150), E2, "disk", 2, 1);
	pool(g, S(150), "stored", "cpu", 3, HOST_A);
	tick(g, S(160));
	states(g);
}

/* Each deadline of the first half, met at + off ns: the state lines at the
 * pending entry's, then those at the offload's and the content's. */
static const char *second_half(struct rig *g, int64_t off, char *out, size_t n)
{
	tick(g, S(210) + (uint64_t)off);
	snprintf(out, n, "%s\n--\n", states(g));
	pool(g, S(250) + (uint64_t)off, "stored", "disk", 2, HOST_A);
	pool(g, S(350) + (uint64_t)off, "stored", "cpu", 1, HOST_B);
	snprintf(out + strlen(out), n - strlen(out), "%s", states(g));
	return out;
}

static uint8_t *snapshot_bytes(struct rig *g, const char *path, size_t *len)
{
	struct kv_err e = { 0 };
	if (!kv_snapstate_save(path, &g->ix, &g->ws, g->m, &e))
		abort();
	FILE *f = fopen(path, "rb");
	uint8_t *b = malloc(1 << 16);
	*len = fread(b, 1, 1 << 16, f);
	fclose(f);
	return b;
}

/* Input cut and resumed from the snapshot (kvmatch -i) gives what one run
 * gives: the pending pool, offloads and content keep their times, so each
 * still expires exactly at its TTL, and the final snapshots are equal. */
static void resumed_run_keeps_every_deadline(void)
{
	static const char *const want[2] = {
		"\n--\npending_expired 0xd cpu a/0,a/1 n=2\nconfirmed 0xc disk a/0,a/1\nconfirmed 0xb cpu b/0",
		"pending_expired 0xd cpu a/0,a/1 n=2\n--\nqueued 0xc disk a/0,a/1\n"
		"pending_expired 0xc disk a/0,a/1 n=2\nqueued 0xb cpu b/0",
	};
	struct kv_match_opts o = defaults();
	o.offload_ttl_ns = S(100);
	o.content_ttl_ns = S(200);
	char path[] = "/tmp/kvtools-resume-XXXXXX";
	close(mkstemp(path));
	for (int at = 0; at <= 1; at++) {
		struct rig one, a, b;
		char got[1024];
		size_t n1, n2;
		rig_open(&one, o);
		first_half(&one);
		ASSERT_EQ_STR(second_half(&one, at - 1, got, sizeof got), want[at]);
		uint8_t *whole = snapshot_bytes(&one, path, &n1);
		rig_close(&one);

		rig_open(&a, o);
		first_half(&a);
		struct kv_err e = { 0 };
		if (!kv_snapstate_save(path, &a.ix, &a.ws, a.m, &e))
			abort();
		rig_open_from(&b, o, path);
		b.seq = a.seq;
		rig_close(&a);
		ASSERT_EQ_STR(second_half(&b, at - 1, got, sizeof got), want[at]);
		uint8_t *resumed = snapshot_bytes(&b, path, &n2);
		rig_close(&b);
		ASSERT(n1 == n2 && memcmp(whole, resumed, n1) == 0);
		free(whole);
		free(resumed);
	}
	unlink(path);
}

int main(void)
{
	RUN(pool_store_after_offload_confirms_in_pool_medium);
	RUN(offload_after_pool_store_matches_in_pool_medium);
	RUN(pending_entries_of_two_media_match_each_in_its_own);
	RUN(pool_store_confirms_content_the_index_holds);
	RUN(removal_of_many_keeps_every_content);
	RUN(offload_chains_from_its_parent);
	RUN(engine_store_rules_and_drops);
	RUN(pool_targets_the_backend_host);
	RUN(pool_event_meets_offloads_of_its_partition);
	RUN(match_none_targets_the_pool_subscriber);
	RUN(pending_entry_expires_exactly_at_pending_ttl);
	RUN(offload_at_pending_ttl_finds_the_entry_expired);
	RUN(repeated_pool_store_queues_each_target_once);
	RUN(pending_entries_expire_each_at_its_own_time);
	RUN(pending_entries_past_ttl_expire_together);
	RUN(max_pending_expires_the_oldest_past_the_bound);
	RUN(offload_expires_exactly_at_offload_ttl);
	RUN(name_only_store_finds_an_offload_until_offload_ttl);
	RUN(sweep_removes_offloads_at_offload_ttl_only);
	RUN(confirmed_offload_is_taken_from_the_cache);
	RUN(released_content_confirms_until_content_ttl);
	RUN(sweep_removes_content_at_content_ttl_only);
	RUN(stale_names_forgotten_past_1024);
	RUN(pool_removal_releases_its_medium_only);
	RUN(pool_removal_keeps_the_content_it_frees);
	RUN(pool_clear_keeps_other_partitions);
	RUN(pool_removal_drops_pending_entries_of_its_medium);
	RUN(removed_offload_is_forgotten);
	RUN(engine_removal_releases_its_worker_in_its_medium);
	RUN(engine_removal_after_repeated_offload_releases_the_confirmed_block);
	RUN(confirmed_offload_names_its_block_after_a_rename);
	RUN(engine_clear_drops_its_worker_xpu_only);
	RUN(pool_clear_drops_its_targets_in_its_medium);
	RUN(hash_zero_is_a_hash_like_any_other);
	RUN(mooncake_event_keeps_hash_zero);
	RUN(shared_pool_counts_anyones_cpu_and_disk);
	RUN(event_time_moves_forward_within_the_longest_ttl);
	RUN(replayed_batch_already_applied_is_dropped);
	RUN(stream_position_reached_is_a_duplicate);
	RUN(stream_names_compared_whole);
	RUN(resumed_run_keeps_every_deadline);
	return unit_done();
}

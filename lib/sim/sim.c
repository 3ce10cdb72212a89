#include "sim/sim.h"
#include "sim/lru.h"
#include "index/blockhash.h"
#include "decode/kvcap.h"
#include "index/match.h"
#include "index/regs.h"
#include "index/snapstate.h"
#include "base/jsonw.h"
#include "base/util.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* ---- the cluster --------------------------------------------------------- */

/* A request a rank took: when (trace time), and its prompt blocks. */
struct taken {
	uint64_t t;
	uint64_t blocks;
};

struct rank {
	struct kv_lru xpu;
	char *src;
	uint64_t seq, requests;
	struct taken *recent;      /* requests taken within the load window, a ring */
	size_t rhead, rn, rcap;
	uint64_t active;           /* their prompt blocks: the load term of --policy kv */
};

struct node {
	struct kv_lru cpu, disk;
	char ip[32];
};

/* A record waiting for its time: the pool's batches with a positive
 * --pool-lag, the engines' with a negative one.  Either kind comes a fixed
 * lag after the request, so the queue is in time order. */
struct queued {
	uint64_t recv_ns, seq;
	const char *src;
	uint8_t *payload;
	size_t n;
};

/* Only windows that had a request are kept (in order: trace time never goes
 * back), so that a trace with a gap of years costs nothing. */
struct window {
	uint64_t index;            /* start: index * window_ns */
	uint64_t requests, prompt, hit[KV_NMEDIA];
};

/* One request's worth of events, grown as needed.  Hash lists are kept as
 * offsets while they grow (engine and pool events each in a store of their
 * own), and pointed at once the request is done. */
struct batch {
	struct kv_emit_event *ev;
	size_t nev, capev;
	struct kv_emit_pool_event *pev;
	size_t npev, cappev;
	uint64_t *hashes, *phashes;
	size_t nh, caph, nph, capph;
	size_t *off, *poff;
	size_t capoff, cappoff;
};

struct kv_sim {
	struct kv_sim_opts o;
	struct kv_out *out;
	struct rank *ranks;
	struct node *nodes;
	size_t nranks;
	/* the truth: what a perfect kvmatch would hold */
	struct kv_index ix;
	struct kv_workers ws;
	uint32_t part;
	struct kv_qsource qs;
	struct kv_querier *q;
	uint32_t *candidates;
	double *penalty;           /* per worker, for the kv policy's load term */
	char pool_src[64];
	uint64_t pool_seq;
	uint64_t pool_event_id;    /* the Mooncake master's last event_id */
	struct queued *queue;
	size_t qhead, qn, capq;
	/* scratch */
	uint32_t *tokens;
	size_t captokens;
	uint64_t *local, *chain, *ehash;
	size_t capblocks;
	struct batch b;
	msgpack_sbuffer sb;
	/* accounting */
	uint64_t rng, rr;
	uint64_t requests, prompt, hit[KV_NMEDIA], records, stored_blocks, removed_blocks, pool_events;
	struct window *windows;
	size_t nwindows, capwindows;
	uint64_t last_ns;
	FILE *queries;
	bool queries_by_hash;
};

void kv_sim_queries(struct kv_sim *s, FILE *f, bool by_hash)
{
	s->queries = f;
	s->queries_by_hash = by_hash;
}

/* JSON text built in memory, then written to f as a whole (the caller
 * checks f for errors). */
static void begin_text(struct kv_out *text, struct jw *w)
{
	kv_out_open_mem(text);
	jw_begin(w, text);
}

static void end_text(struct kv_out *text, struct jw *w, FILE *f)
{
	jw_end(w);
	fwrite(text->buf, 1, text->len, f);
	kv_out_free_mem(text);
}

/* The request as a /query or /query_by_hash body, for kvquery. */
static void write_query(struct kv_sim *s, size_t ntokens, size_t nq)
{
	struct kv_out text;
	struct jw w;
	begin_text(&text, &w);
	jw_put_lit(&w, "{\"model\":");
	jw_put_cstr(&w, s->o.model);
	jw_put_lit(&w, ",\"tenant_id\":\"default\",\"block_size\":");
	jw_put_u64(&w, s->o.block_size);
	if (s->queries_by_hash) {
		jw_put_lit(&w, ",\"block_hashes\":[");
		jw_put_u64_list(&w, s->local, nq);
	} else {
		jw_put_lit(&w, ",\"token_ids\":[");
		jw_put_u32_list(&w, s->tokens, ntokens);
	}
	jw_put_lit(&w, "]}\n");
	end_text(&text, &w, s->queries);
}

static const char *const engine_media[] = { "GPU", "CPU", "DISK" };
static const char *const pool_media[] = { "xpu", "cpu", "disk" };

/* 10.0.0.1, 10.0.0.2, ... 10.0.0.250, 10.0.1.1, ...: 250 hosts a /24, none
 * ending in .0 or .255.  Past 256 such subnets (instance 64000 on) the second
 * octet counts on, so that every --workers count has valid addresses while
 * those of smaller clusters stay what captures and tests already hold. */
static void node_ip(char *buf, size_t n, uint32_t i)
{
	snprintf(buf, n, "10.%u.%u.%u", i / 64000, i / 250 % 256, i % 250 + 1);
}

struct kv_sim *kv_sim_new(const struct kv_sim_opts *o, struct kv_out *capture)
{
	struct kv_sim *s = kv_xcalloc(1, sizeof *s);
	s->o = *o;
	s->out = capture;
	s->nranks = (size_t)o->instances * o->dp;
	s->ranks = kv_xcalloc(s->nranks, sizeof *s->ranks);
	s->nodes = kv_xcalloc(o->instances, sizeof *s->nodes);
	kv_index_init(&s->ix);
	kv_workers_init(&s->ws);
	char *part = kv_partition_name(o->model, strlen(o->model), NULL, 0);
	s->part = kv_index_partition(&s->ix, part, strlen(part), "default", 7);
	free(part);
	s->ix.p[s->part].block_size = o->block_size;
	s->candidates = kv_xmalloc(s->nranks * sizeof *s->candidates);
	s->penalty = kv_xcalloc(s->nranks, sizeof *s->penalty);
	for (uint32_t i = 0; i < o->instances; i++) {
		struct node *nd = &s->nodes[i];
		node_ip(nd->ip, sizeof nd->ip, i);
		kv_lru_init(&nd->cpu, o->pool_capacity);
		kv_lru_init(&nd->disk, o->disk_capacity);
		for (uint32_t d = 0; d < o->dp; d++) {
			struct rank *r = &s->ranks[i * o->dp + d];
			char id[32], src[64];
			snprintf(id, sizeof id, "node%u", i);
			snprintf(src, sizeof src, "tcp://%s:%u", nd->ip, 5557 + d);
			r->src = kv_xstrdup(src);
			kv_lru_init(&r->xpu, o->capacity);
			uint32_t w = kv_workers_add(&s->ws, id, d, nd->ip, false);
			s->ws.v[w].block_size = o->block_size;
			s->candidates[i * o->dp + d] = w;
		}
	}
	snprintf(s->pool_src, sizeof s->pool_src, "tcp://kvs-master:5557");
	s->pool_seq = 1; /* memcache and Mooncake count from 1 */
	kv_qsource_index(&s->qs, &s->ix, &s->ws);
	s->q = kv_querier_new();
	s->rng = o->seed ? o->seed : 1;
	msgpack_sbuffer_init(&s->sb);
	return s;
}

void kv_sim_free(struct kv_sim *s)
{
	for (size_t i = 0; i < s->nranks; i++) {
		kv_lru_free(&s->ranks[i].xpu);
		free(s->ranks[i].src);
		free(s->ranks[i].recent);
	}
	free(s->penalty);
	for (uint32_t i = 0; i < s->o.instances; i++) {
		kv_lru_free(&s->nodes[i].cpu);
		kv_lru_free(&s->nodes[i].disk);
	}
	for (size_t i = 0; i < s->qn; i++)
		free(s->queue[(s->qhead + i) % s->capq].payload);
	free(s->queue);
	free(s->ranks);
	free(s->nodes);
	kv_querier_free(s->q);
	kv_qsource_free(&s->qs);
	kv_workers_free(&s->ws);
	kv_index_free(&s->ix);
	free(s->candidates);
	free(s->tokens);
	free(s->local);
	free(s->chain);
	free(s->ehash);
	free(s->b.ev);
	free(s->b.pev);
	free(s->b.hashes);
	free(s->b.phashes);
	free(s->b.off);
	free(s->b.poff);
	free(s->windows);
	msgpack_sbuffer_destroy(&s->sb);
	free(s);
}

/* ---- records ------------------------------------------------------------- */

static void write_record(struct kv_sim *s, uint64_t recv_ns, const char *src, uint64_t seq, const void *payload,
			 size_t n)
{
	if (!s->out)
		return;
	uint8_t seqb[8];
	kv_seq_encode(seq, seqb);
	struct kv_frame f[3] = { { (const uint8_t *)"", 0 }, { seqb, 8 }, { payload, n } };
	kv_cap_write_record(s->out, recv_ns, src, strlen(src), 0, f, 3);
	kv_out_end_record(s->out);
	kv_out_flush_if_full(s->out);
	s->records++;
}

/* Records due by recv_ns go out first, so that the capture is in time order. */
static void flush_queue(struct kv_sim *s, uint64_t upto)
{
	while (s->qn && s->queue[s->qhead].recv_ns <= upto) {
		struct queued *q = &s->queue[s->qhead];
		write_record(s, q->recv_ns, q->src, q->seq, q->payload, q->n);
		free(q->payload);
		s->qhead = (s->qhead + 1) % s->capq;
		s->qn--;
	}
}

static void enqueue(struct kv_sim *s, uint64_t recv_ns, const char *src, uint64_t seq, const void *payload, size_t n)
{
	if (s->qn == s->capq) {
		size_t cap = s->capq ? 2 * s->capq : 64;
		struct queued *q = kv_xmalloc(cap * sizeof *q);
		for (size_t i = 0; i < s->qn; i++)
			q[i] = s->queue[(s->qhead + i) % s->capq];
		free(s->queue);
		s->queue = q;
		s->capq = cap;
		s->qhead = 0;
	}
	struct queued *e = &s->queue[(s->qhead + s->qn++) % s->capq];
	e->recv_ns = recv_ns;
	e->src = src;
	e->seq = seq;
	e->payload = kv_xmalloc(n);
	memcpy(e->payload, payload, n);
	e->n = n;
}

/* ---- events of one request ----------------------------------------------- */

static struct kv_emit_event *add_event(struct batch *b, enum kv_evtype type, enum kv_medium m)
{
	b->ev = kv_xgrow(b->ev, &b->capev, b->nev + 1, sizeof *b->ev);
	b->off = kv_xgrow(b->off, &b->capoff, b->nev + 1, sizeof *b->off);
	struct kv_emit_event *e = &b->ev[b->nev];
	memset(e, 0, sizeof *e);
	e->type = type;
	e->medium = engine_media[m];
	b->off[b->nev++] = b->nh;
	return e;
}

static struct kv_emit_pool_event *add_pool_event(struct batch *b, enum kv_evtype type, enum kv_medium m)
{
	b->pev = kv_xgrow(b->pev, &b->cappev, b->npev + 1, sizeof *b->pev);
	b->poff = kv_xgrow(b->poff, &b->cappoff, b->npev + 1, sizeof *b->poff);
	struct kv_emit_pool_event *e = &b->pev[b->npev];
	memset(e, 0, sizeof *e);
	e->type = type;
	e->medium = pool_media[m];
	b->poff[b->npev++] = b->nph;
	return e;
}

static void add_hash(struct batch *b, uint64_t h)
{
	b->hashes = kv_xgrow(b->hashes, &b->caph, b->nh + 1, sizeof *b->hashes);
	b->hashes[b->nh++] = h;
}

static void add_pool_hash(struct batch *b, uint64_t h)
{
	b->phashes = kv_xgrow(b->phashes, &b->capph, b->nph + 1, sizeof *b->phashes);
	b->phashes[b->nph++] = h;
}

static void settle(struct batch *b)
{
	for (size_t i = 0; i < b->nev; i++) {
		b->ev[i].hashes = b->hashes + b->off[i];
		b->ev[i].nhashes = (i + 1 < b->nev ? b->off[i + 1] : b->nh) - b->off[i];
	}
	for (size_t i = 0; i < b->npev; i++) {
		b->pev[i].hashes = b->phashes + b->poff[i];
		b->pev[i].nhashes = (i + 1 < b->npev ? b->poff[i + 1] : b->nph) - b->poff[i];
	}
}

/* ---- serving ------------------------------------------------------------- */

static void grow_blocks(struct kv_sim *s, size_t n)
{
	if (n <= s->capblocks)
		return;
	s->local = kv_xrealloc(s->local, n * sizeof *s->local);
	s->chain = kv_xrealloc(s->chain, n * sizeof *s->chain);
	s->ehash = kv_xrealloc(s->ehash, n * sizeof *s->ehash);
	s->capblocks = n;
}

static uint64_t next_random(struct kv_sim *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return s->rng;
}

static void hold_node(struct kv_sim *s, uint32_t inst, const struct kv_lru_block *n, enum kv_medium m, bool hold)
{
	for (uint32_t d = 0; d < s->o.dp; d++) {
		uint32_t w = s->candidates[inst * s->o.dp + d];
		if (hold) {
			kv_index_hold(&s->ix, s->part, n->chain, n->parent, n->local, w, m);
		} else {
			bool freed;
			uint64_t p, l;
			kv_index_release(&s->ix, s->part, n->chain, w, m, &freed, &p, &l);
		}
	}
}

/* The rank's cache: blocks past the first miss are stored (runs of new blocks
 * become BlockStored events), hits are touched, the overflow evicted. */
static void serve_xpu(struct kv_sim *s, uint32_t rank, size_t nfull, const uint32_t *tokens)
{
	struct rank *r = &s->ranks[rank];
	uint32_t w = s->candidates[rank];
	struct kv_emit_event *run = NULL;
	for (size_t i = 0; i < nfull; i++) {
		if (kv_lru_touch(&r->xpu, s->chain[i])) {
			run = NULL;
			continue;
		}
		if (!run) {
			run = add_event(&s->b, KV_EV_STORED, KV_XPU);
			run->has_parent = i > 0;
			run->parent = i ? s->ehash[i - 1] : 0;
			run->tokens = tokens + i * s->o.block_size;
			run->block_size = s->o.block_size;
		}
		run->ntokens += s->o.block_size;
		add_hash(&s->b, s->ehash[i]);
		uint64_t parent = i ? s->chain[i - 1] : KV_CHAIN_ROOT;
		kv_lru_insert(&r->xpu, &(struct kv_lru_block){ s->chain[i], s->ehash[i], parent, s->local[i] });
		kv_index_hold(&s->ix, s->part, s->chain[i], parent, s->local[i], w, KV_XPU);
		s->stored_blocks++;
	}
	if (!kv_lru_over(&r->xpu))
		return;
	add_event(&s->b, KV_EV_REMOVED, KV_XPU);
	struct kv_lru_block n;
	while (kv_lru_over(&r->xpu) && kv_lru_pop(&r->xpu, &n)) {
		add_hash(&s->b, n.ehash);
		bool freed;
		uint64_t p, l;
		kv_index_release(&s->ix, s->part, n.chain, w, KV_XPU, &freed, &p, &l);
		s->removed_blocks++;
	}
}

/* Write-through to the node's pool: blocks it lacks are offloaded (an engine
 * offload event and the pool's stored event); what overflows host memory
 * moves to disk, or goes. */
static void serve_pool(struct kv_sim *s, uint32_t rank, size_t nfull)
{
	uint32_t inst = rank / s->o.dp;
	struct node *nd = &s->nodes[inst];
	struct kv_emit_event *offload = NULL;
	for (size_t i = 0; i < nfull; i++) {
		if (kv_lru_touch(&nd->cpu, s->chain[i]))
			continue;
		if (nd->disk.capacity && kv_lru_touch(&nd->disk, s->chain[i]))
			continue;
		if (!offload) {
			/* vLLM's offload event: a placeholder without tokens */
			offload = add_event(&s->b, KV_EV_STORED, KV_CPU);
			add_pool_event(&s->b, KV_EV_STORED, KV_CPU);
		}
		add_hash(&s->b, s->ehash[i]);
		add_pool_hash(&s->b, s->ehash[i]);
		struct kv_lru_block n = { s->chain[i], s->ehash[i], i ? s->chain[i - 1] : KV_CHAIN_ROOT, s->local[i] };
		kv_lru_insert(&nd->cpu, &n);
		hold_node(s, inst, &n, KV_CPU, true);
	}
	struct kv_lru_block n;
	size_t first = s->b.nph;
	bool removed = false, disk_removed = false;
	while (kv_lru_over(&nd->cpu) && kv_lru_pop(&nd->cpu, &n)) {
		hold_node(s, inst, &n, KV_CPU, false);
		if (!removed)
			add_pool_event(&s->b, KV_EV_REMOVED, KV_CPU);
		removed = true;
		add_pool_hash(&s->b, n.ehash);
		if (nd->disk.capacity) {
			kv_lru_insert(&nd->disk, &n);
			hold_node(s, inst, &n, KV_DISK, true);
		}
	}
	/* what left host memory went to disk, if there is one */
	if (removed && nd->disk.capacity) {
		size_t count = s->b.nph - first;
		add_pool_event(&s->b, KV_EV_STORED, KV_DISK);
		for (size_t k = 0; k < count; k++)
			add_pool_hash(&s->b, s->b.phashes[first + k]);
	}
	while (nd->disk.capacity && kv_lru_over(&nd->disk) && kv_lru_pop(&nd->disk, &n)) {
		hold_node(s, inst, &n, KV_DISK, false);
		if (!disk_removed)
			add_pool_event(&s->b, KV_EV_REMOVED, KV_DISK);
		disk_removed = true;
		add_pool_hash(&s->b, n.ehash);
	}
}

/* The load term of each rank before trace time now: the load weight times
 * the prompt blocks of the requests it took within the load window (the
 * blocks it is still busy with, as Dynamo's active blocks and
 * kv-conductor's workload count them). */
static void update_load(struct kv_sim *s, uint64_t now)
{
	for (size_t i = 0; i < s->nranks; i++) {
		struct rank *r = &s->ranks[i];
		while (r->rn && r->recent[r->rhead].t + s->o.load_window_ns <= now) {
			r->active -= r->recent[r->rhead].blocks;
			r->rhead = (r->rhead + 1) % r->rcap;
			r->rn--;
		}
		s->penalty[s->candidates[i]] = s->o.load_weight * (double)r->active;
	}
}

static void note_load(struct kv_sim *s, uint32_t rank, uint64_t now, uint64_t blocks)
{
	struct rank *r = &s->ranks[rank];
	if (r->rn == r->rcap) {
		size_t cap = r->rcap ? 2 * r->rcap : 16;
		struct taken *n = kv_xmalloc(cap * sizeof *n);
		for (size_t i = 0; i < r->rn; i++)
			n[i] = r->recent[(r->rhead + i) % r->rcap];
		free(r->recent);
		r->recent = n;
		r->rcap = cap;
		r->rhead = 0;
	}
	r->recent[(r->rhead + r->rn++) % r->rcap] = (struct taken){ now, blocks };
	r->active += blocks;
}

/* Whether routing weighs load beside cache affinity. */
static bool load_aware(const struct kv_sim *s)
{
	return s->o.policy == KV_POLICY_KV && s->o.load_weight > 0;
}

static uint32_t route(struct kv_sim *s, uint64_t now, size_t nblocks, uint32_t *npu, uint32_t *cpu, uint32_t *disk)
{
	uint32_t rank;
	struct kv_query req = { s->part, s->o.block_size, NULL, 0, s->local, nblocks, NULL, 0 };
	struct kv_query_opts qo = { false, true, s->candidates, s->nranks };
	size_t nh, nb;
	switch (s->o.policy) {
	case KV_POLICY_RANDOM: rank = (uint32_t)(next_random(s) % s->nranks); break;
	case KV_POLICY_ROUND_ROBIN: rank = (uint32_t)(s->rr++ % s->nranks); break;
	default: {
		const struct kv_hit *hits = kv_query_run(s->q, &s->qs, &req, &qo, &nh, &nb);
		if (load_aware(s))
			update_load(s, now);
		const struct kv_hit *best = kv_query_route_penalized(hits, nh, &s->o.weights, s->q,
								      load_aware(s) ? s->penalty : NULL);
		rank = best ? best->worker : 0; /* workers were added in rank order: ids are ranks */
		*npu = best ? best->npu : 0;
		*cpu = best ? best->cpu : 0;
		*disk = best ? best->disk : 0;
		return rank;
	}
	}
	qo.candidates = &s->candidates[rank];
	qo.ncandidates = 1;
	const struct kv_hit *h = kv_query_run(s->q, &s->qs, &req, &qo, &nh, &nb);
	*npu = nh ? h->npu : 0;
	*cpu = nh ? h->cpu : 0;
	*disk = nh ? h->disk : 0;
	return rank;
}

static void account(struct kv_sim *s, uint64_t trace_ns, size_t ntokens, size_t nfull, uint32_t npu, uint32_t cpu,
		    uint32_t disk)
{
	/* the trailing partial block is never stored, so never served */
	uint32_t bs = s->o.block_size, total = npu + cpu + disk;
	if (total > nfull) {
		uint32_t over = total - (uint32_t)nfull;
		uint32_t *last = disk ? &disk : cpu ? &cpu : &npu;
		*last -= over < *last ? over : *last;
	}
	const uint64_t hit[KV_NMEDIA] = { (uint64_t)npu * bs, (uint64_t)cpu * bs, (uint64_t)disk * bs };
	uint64_t wi = s->o.window_ns ? trace_ns / s->o.window_ns : 0;
	if (!s->nwindows || s->windows[s->nwindows - 1].index < wi) {
		s->windows = kv_xgrow(s->windows, &s->capwindows, s->nwindows + 1, sizeof *s->windows);
		s->windows[s->nwindows++] = (struct window){ .index = wi };
	}
	struct window *w = &s->windows[s->nwindows - 1];
	s->requests++;
	w->requests++;
	s->prompt += ntokens;
	w->prompt += ntokens;
	for (int m = 0; m < KV_NMEDIA; m++) {
		s->hit[m] += hit[m];
		w->hit[m] += hit[m];
	}
}

/* Writes the batch in s->sb now when it is due at t, else queues it for its time. */
static void write_or_queue(struct kv_sim *s, uint64_t at, uint64_t t, const char *src, uint64_t seq)
{
	if (at <= t)
		write_record(s, at, src, seq, s->sb.data, s->sb.size);
	else
		enqueue(s, at, src, seq, s->sb.data, s->sb.size);
}

/* The request's batches: the pool's --pool-lag after the engine's.  A
 * negative lag delays the engine's batch instead of back-dating the pool's,
 * so that the pool's events still come first and recv_ns never goes back. */
static void publish(struct kv_sim *s, uint32_t rank, uint64_t t)
{
	int64_t lag = s->o.pool_lag_ns;
	uint64_t pool_t = t + (lag > 0 ? (uint64_t)lag : 0), engine_t = t + (lag < 0 ? (uint64_t)-lag : 0);
	struct node *nd = &s->nodes[rank / s->o.dp];
	for (size_t i = 0; i < s->b.npev; i++) {
		s->b.pev[i].backend_id = s->o.pool_backend ? s->o.pool_backend : nd->ip;
		s->b.pev[i].model = s->o.model;
		s->b.pev[i].tenant = "default";
		s->b.pev[i].ts_ms = (int64_t)(pool_t / 1000000u);
	}
	int64_t ts_ms = (int64_t)(pool_t / 1000000u);
	if (s->b.npev && !s->o.emit.mooncake) {
		kv_emit_memcache_batch(&s->sb, s->b.pev, s->b.npev);
		s->pool_events += s->b.npev;
		write_or_queue(s, pool_t, t, s->pool_src, s->pool_seq++);
	}
	struct kv_emit_mooncake_pos pos = { .event_id = s->pool_event_id };
	while (s->o.emit.mooncake && kv_emit_mooncake_batch(&s->sb, ts_ms, s->b.pev, s->b.npev, &pos))
		write_or_queue(s, pool_t, t, s->pool_src, s->pool_seq++);
	s->pool_events += pos.event_id - s->pool_event_id;
	s->pool_event_id = pos.event_id;
	if (s->b.nev) {
		struct rank *r = &s->ranks[rank];
		kv_emit_vllm_batch(&s->sb, &s->o.emit, (double)engine_t / 1e9, rank % s->o.dp, s->b.ev, s->b.nev);
		write_or_queue(s, engine_t, t, r->src, r->seq++);
	}
}

bool kv_sim_request(struct kv_sim *s, const struct kv_trace_req *req)
{
	uint64_t trace_ns = req->ts_ms * 1000000ull;
	uint64_t t = s->o.base_ns + (uint64_t)((double)trace_ns / s->o.speed);
	bool in_order = t >= s->last_ns;
	if (!in_order)
		t = s->last_ns;
	s->last_ns = t;
	flush_queue(s, t);
	size_t ntokens = kv_trace_tokens(req, s->o.seed, &s->tokens, &s->captokens);
	size_t bs = s->o.block_size, nq = (ntokens + bs - 1) / bs, nfull = ntokens / bs;
	grow_blocks(s, nq ? nq : 1);
	kv_block_hashes(s->tokens, ntokens, bs, KV_CHAIN_ROOT, s->local, s->chain, nq);
	/* Engine block hashes: chained like vLLM's, one seed for every engine
	 * (PYTHONHASHSEED set), a different function from the index's chain. */
	for (size_t i = 0; i < nfull; i++)
		s->ehash[i] = XXH3_64bits_withSeed(s->tokens + i * bs, bs * sizeof *s->tokens,
						   i ? s->ehash[i - 1] : 0x5eedull ^ s->o.seed);
	if (s->queries)
		write_query(s, ntokens, nq);
	uint32_t npu = 0, cpu = 0, disk = 0;
	uint32_t rank = route(s, trace_ns, nq, &npu, &cpu, &disk);
	if (load_aware(s))
		note_load(s, rank, trace_ns, nq);
	account(s, trace_ns, ntokens, nfull, npu, cpu, disk);
	s->ranks[rank].requests++;
	s->b.nev = s->b.npev = s->b.nh = s->b.nph = 0;
	serve_xpu(s, rank, nfull, s->tokens);
	if (s->o.pool != KV_POOL_NONE)
		serve_pool(s, rank, nfull);
	settle(&s->b);
	publish(s, rank, t);
	return in_order;
}

void kv_sim_finish(struct kv_sim *s)
{
	flush_queue(s, UINT64_MAX);
	if (s->out)
		kv_out_flush(s->out);
}

/* ---- outputs ------------------------------------------------------------- */

static void put_field(struct jw *w, const char *key, const char *value)
{
	jw_put_lit(w, key);
	jw_put_cstr(w, value);
}

static void put_number(struct jw *w, const char *key, uint64_t value)
{
	jw_put_lit(w, key);
	jw_put_u64(w, value);
}

void kv_sim_write_registrations(const struct kv_sim *s, FILE *f)
{
	const char *backend = s->o.pool == KV_POOL_MOONCAKE ? "Mooncake" : "Memcache";
	struct kv_out text;
	struct jw w;
	begin_text(&text, &w);
	for (uint32_t i = 0; i < s->o.instances; i++)
		for (uint32_t d = 0; d < s->o.dp; d++) {
			char id[32];
			snprintf(id, sizeof id, "node%u", i);
			put_field(&w, "{\"instance_id\":", id);
			put_number(&w, ",\"type\":\"vLLM\",\"dp_rank\":", d);
			put_number(&w, ",\"block_size\":", s->o.block_size);
			put_field(&w, ",\"modelname\":", s->o.model);
			put_field(&w, ",\"tenant_id\":\"default\",\"medium_endpoints\":{\"npu\":",
				  s->ranks[i * s->o.dp + d].src);
			put_field(&w, "},\"store_backend\":", backend);
			jw_put_lit(&w, "}\n");
		}
	if (s->o.pool != KV_POOL_NONE) {
		/* kv-conductor requires instance_id, type, block_size and dp_rank of a pool too */
		put_field(&w, "{\"instance_id\":\"kvs-master\",\"type\":", backend);
		put_field(&w, ",\"endpoint\":", s->pool_src);
		put_number(&w, ",\"block_size\":", s->o.block_size);
		put_field(&w, ",\"dp_rank\":0,\"store_backend\":", backend);
		put_field(&w, ",\"modelname\":", s->o.model);
		jw_put_lit(&w, ",\"tenant_id\":\"default\"}\n");
	}
	end_text(&text, &w, f);
}

/* The index alone, at the simulation's event time, with the TTLs kvmatch
 * takes by default (nothing is cached, pending or known of sources: the
 * simulation keeps no matcher). */
bool kv_sim_write_snapshot(const struct kv_sim *s, const char *path, struct kv_err *e)
{
	struct kv_snap_meta meta = { .now_ns = s->last_ns, .pending_ttl_ns = KV_PENDING_TTL_DEFAULT,
				     .offload_ttl_ns = KV_OFFLOAD_TTL_DEFAULT, .content_ttl_ns = KV_CONTENT_TTL_DEFAULT };
	return kv_snapstate_save_index(path, &s->ix, &s->ws, &meta, e);
}

static double rate(uint64_t hit, uint64_t total)
{
	return total ? (double)hit / (double)total : 0;
}

static const char *policy_name(enum kv_policy p)
{
	static const char *const names[] = { "random", "round-robin", "kv", "affinity" };
	return names[p <= KV_POLICY_AFFINITY ? p : KV_POLICY_KV];
}

void kv_sim_summary(const struct kv_sim *s, FILE *f)
{
	uint64_t hits = s->hit[0] + s->hit[1] + s->hit[2], lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < s->nranks; i++) {
		lo = s->ranks[i].requests < lo ? s->ranks[i].requests : lo;
		hi = s->ranks[i].requests > hi ? s->ranks[i].requests : hi;
	}
	/* the records the cluster published; when the capture failed (a full
	 * disk, a reader gone), how many of them it holds */
	char written[48] = "";
	if (s->out && kv_out_failed(s->out))
		snprintf(written, sizeof written, " (%llu written)", (unsigned long long)kv_out_records(s->out));
	fprintf(f, "%s: policy %s: %llu requests, %llu prompt tokens, %.1f%% served from cache "
		   "(xpu %.1f%%, cpu %.1f%%, disk %.1f%%); requests per worker %llu to %llu; "
		   "%llu records%s, %llu blocks stored, %llu removed, %llu pool events\n",
		kv_prog, policy_name(s->o.policy), (unsigned long long)s->requests, (unsigned long long)s->prompt,
		100 * rate(hits, s->prompt), 100 * rate(s->hit[0], s->prompt), 100 * rate(s->hit[1], s->prompt),
		100 * rate(s->hit[2], s->prompt), (unsigned long long)(s->nranks ? lo : 0), (unsigned long long)hi,
		(unsigned long long)s->records, written, (unsigned long long)s->stored_blocks,
		(unsigned long long)s->removed_blocks, (unsigned long long)s->pool_events);
}

/* ---- the report: jansson's layout (JSON_INDENT(1), reals of 6 digits),
 * which reports written before kept --------------------------------------- */

struct pretty {
	struct jw w;
	int depth;
	bool first;           /* nothing written yet in the object or array open */
};

static void pretty_next(struct pretty *p)
{
	jw_put_lit(&p->w, p->first ? "\n" : ",\n");
	for (int i = 0; i < p->depth; i++)
		jw_put_char(&p->w, ' ');
	p->first = false;
}

/* The next member: "key": in an object, nothing more in an array (key NULL). */
static void pretty_key(struct pretty *p, const char *key)
{
	pretty_next(p);
	if (key) {
		jw_put_cstr(&p->w, key);
		jw_put_lit(&p->w, ": ");
	}
}

static void pretty_open(struct pretty *p, const char *key, char bracket)
{
	pretty_key(p, key);
	jw_put_char(&p->w, bracket);
	p->depth++;
	p->first = true;
}

static void pretty_close(struct pretty *p, char bracket)
{
	p->depth--;
	if (!p->first) {
		jw_put_char(&p->w, '\n');
		for (int i = 0; i < p->depth; i++)
			jw_put_char(&p->w, ' ');
	}
	jw_put_char(&p->w, bracket);
	p->first = false;
}

static void pretty_real(struct pretty *p, const char *key, double v)
{
	pretty_key(p, key);
	jw_put_real(&p->w, v, 6);
}

static void pretty_int(struct pretty *p, const char *key, uint64_t v)
{
	pretty_key(p, key);
	jw_put_u64(&p->w, v);
}

static void pretty_str(struct pretty *p, const char *key, const char *v)
{
	pretty_key(p, key);
	jw_put_cstr(&p->w, v);
}

static void pretty_hits(struct pretty *p, const uint64_t *hit, uint64_t prompt)
{
	uint64_t total = hit[0] + hit[1] + hit[2];
	pretty_int(p, "xpu_tokens", hit[0]);
	pretty_int(p, "cpu_tokens", hit[1]);
	pretty_int(p, "disk_tokens", hit[2]);
	pretty_int(p, "total_tokens", total);
	pretty_real(p, "hit_rate", rate(total, prompt));
	pretty_real(p, "xpu_rate", rate(hit[0], prompt));
	pretty_real(p, "cpu_rate", rate(hit[1], prompt));
	pretty_real(p, "disk_rate", rate(hit[2], prompt));
}

static void report_cluster(struct pretty *p, const struct kv_sim *s)
{
	const char *pool = s->o.pool == KV_POOL_NONE ? "none" : s->o.pool == KV_POOL_MOONCAKE ? "mooncake" : "memcache";
	pretty_open(p, "cluster", '{');
	pretty_int(p, "instances", s->o.instances);
	pretty_int(p, "dp", s->o.dp);
	pretty_int(p, "capacity", s->o.capacity);
	pretty_int(p, "block_size", s->o.block_size);
	pretty_str(p, "pool", pool);
	pretty_int(p, "pool_capacity", s->o.pool_capacity);
	pretty_int(p, "disk_capacity", s->o.disk_capacity);
	pretty_close(p, '}');
}

static void report_windows(struct pretty *p, const struct kv_sim *s)
{
	pretty_open(p, "windows", '[');
	for (size_t i = 0; i < s->nwindows; i++) {
		const struct window *w = &s->windows[i];
		pretty_open(p, NULL, '{');
		pretty_real(p, "start_s", (double)w->index * ((double)s->o.window_ns / 1e9));
		pretty_int(p, "requests", w->requests);
		pretty_int(p, "prompt_tokens", w->prompt);
		pretty_hits(p, w->hit, w->prompt);
		pretty_close(p, '}');
	}
	pretty_close(p, ']');
}

void kv_sim_report(const struct kv_sim *s, FILE *f)
{
	struct kv_out text;
	struct pretty p = { .first = true };
	begin_text(&text, &p.w);
	jw_put_char(&p.w, '{');
	p.depth = 1;
	pretty_str(&p, "policy", policy_name(s->o.policy));
	pretty_open(&p, "weights", '[');
	pretty_real(&p, NULL, s->o.weights.npu);
	pretty_real(&p, NULL, s->o.weights.cpu);
	pretty_real(&p, NULL, s->o.weights.disk);
	pretty_close(&p, ']');
	pretty_real(&p, "load_weight", load_aware(s) ? s->o.load_weight : 0.0);
	report_cluster(&p, s);
	pretty_int(&p, "requests", s->requests);
	pretty_int(&p, "prompt_tokens", s->prompt);
	pretty_open(&p, "hits", '{');
	pretty_hits(&p, s->hit, s->prompt);
	pretty_close(&p, '}');
	pretty_open(&p, "requests_per_worker", '[');
	for (size_t i = 0; i < s->nranks; i++)
		pretty_int(&p, NULL, s->ranks[i].requests);
	pretty_close(&p, ']');
	report_windows(&p, s);
	pretty_open(&p, "events", '{');
	pretty_int(&p, "records", s->records);
	pretty_int(&p, "blocks_stored", s->stored_blocks);
	pretty_int(&p, "blocks_removed", s->removed_blocks);
	pretty_int(&p, "pool_events", s->pool_events);
	pretty_close(&p, '}');
	pretty_close(&p, '}');
	jw_put_char(&p.w, '\n');
	end_text(&text, &p.w, f);
}

#include "query/against.h"
#include "base/jsonw.h"
#include "base/utf8.h"
#include "base/util.h"
#include "index/blockhash.h"
#include "query/classify.h"
#include "query/compare.h"
#include "query/evidence.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Blocks of a difference named in its output, at most (from where the two
 * counts part), and blocks of a range looked at for an ownership split. */
#define SHOWN_BLOCKS 8u
#define OWNERSHIP_BLOCKS 64u

enum { Q_BAD, Q_SENT, Q_REPLIED, Q_LOST };

/* A query of the batch. */
struct aq {
	uint64_t number;
	int state;
	char *error;                   /* Q_BAD: why kvquery did not answer or ask */
	char *body;
	size_t len;
	const char *path;
	struct kv_rows kv[2];          /* kvquery's answer: [0] its walk, [1] the other walk */
	char *tenant;
	size_t tlen;
	uint64_t *chains;
	uint32_t nblocks;
	size_t block_size;
	bool by_hash;                  /* kv-conductor's /query_by_hash: its matched_tokens count blocks */
	struct kv_qsource *src;
	struct kv_snap *snap;
	uint32_t part;
	/* the router's reply */
	bool answered;
	long status;
	char *reply;
	size_t rlen;
	char *failure, *rerror;
	uint64_t replied_ns;           /* wall time it came */
};

struct kv_against {
	struct kv_against_opts o;
	struct kv_transport t;
	struct kv_out *out;
	struct aq *q;
	size_t n, cap, bytes;
	struct kv_evidence *ev;
	bool events_failed;
	/* the run */
	uint64_t queries, agree, differ, router_errors, bad;
	uint64_t by_class[KV_NCLASSES];
	uint64_t shown_bad_events;
	bool header_done;
};

struct kv_against *kv_against_new(const struct kv_against_opts *o, const struct kv_transport *t, struct kv_out *out)
{
	struct kv_against *a = kv_xcalloc(1, sizeof *a);
	a->o = *o;
	a->t = *t;
	a->out = out;
	a->ev = kv_evidence_new(o->regs);
	return a;
}

static void aq_free(struct aq *q)
{
	free(q->error);
	free(q->body);
	kv_rows_free(&q->kv[0]);
	kv_rows_free(&q->kv[1]);
	free(q->tenant);
	free(q->chains);
	free(q->reply);
	free(q->failure);
	free(q->rerror);
}

void kv_against_free(struct kv_against *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++)
		aq_free(&a->q[i]);
	free(a->q);
	kv_evidence_free(a->ev);
	free(a);
}

static struct aq *new_aq(struct kv_against *a, uint64_t number)
{
	a->q = kv_xgrow(a->q, &a->cap, a->n + 1, sizeof *a->q);
	struct aq *q = &a->q[a->n++];
	memset(q, 0, sizeof *q);
	q->number = number;
	return q;
}

void kv_against_bad(struct kv_against *a, uint64_t number, const char *why)
{
	struct aq *q = new_aq(a, number);
	q->state = Q_BAD;
	q->error = kv_xstrdup(why);
}

bool kv_against_due(const struct kv_against *a)
{
	return a->n >= KV_AGAINST_BATCH || a->bytes >= KV_AGAINST_BATCH_BYTES;
}

/* ---- what the router is asked ------------------------------------------- */

static void put_key_str(struct jw *w, const char *key, const char *s, size_t n)
{
	jw_put_lit(w, key);
	jw_put_str(w, s, n);
}

/* The body of the query for the router's API, as its serde structs take it
 * (kv-conductor's QueryRequest / QueryByHashRequest; RFC #1403's /query and
 * /query_by_hash): NULL with why when that API has no route for it. */
static char *request_body(const struct kv_against *a, const struct kv_against_query *in, size_t *len,
			  const char **path, const char **why)
{
	const struct kv_qline *l = in->line;
	const struct kv_query *rq = in->req;
	if (!a->o.rfc && l->by_seq) {
		*why = "kv-conductor has no query by sequence hashes (seq_hashes): compare it with --api mooncake";
		return NULL;
	}
	if (a->o.rfc && l->by_hash && !l->by_seq) {
		*why = "RFC #1403 has no query by local hashes (block_hashes): send token_ids or seq_hashes";
		return NULL;
	}
	struct kv_out m;
	kv_out_open_mem(&m);
	struct jw w;
	jw_begin(&w, &m);
	put_key_str(&w, "{\"model\":", in->model, in->mlen);
	jw_put_lit(&w, ",\"block_size\":");
	jw_put_u64(&w, rq->block_size);
	put_key_str(&w, ",\"tenant_id\":", in->tenant, in->tlen);
	if (l->by_hash) {
		*path = "/query_by_hash";
		jw_put_lit(&w, a->o.rfc ? ",\"seq_hashes\":[" : ",\"block_hashes\":[");
		jw_put_u64_list(&w, l->hashes, l->nhashes);
	} else {
		*path = "/query";
		jw_put_lit(&w, ",\"token_ids\":[");
		jw_put_u32_list(&w, l->tokens, l->ntokens);
	}
	jw_put_char(&w, ']');
	if (a->o.rfc) {
		if (l->lora)
			put_key_str(&w, ",\"lora_name\":", l->lora, strlen(l->lora));
		if (l->salt)
			put_key_str(&w, ",\"cache_salt\":", l->salt, strlen(l->salt));
		if (l->instance)
			put_key_str(&w, ",\"instance_id\":", l->instance, strlen(l->instance));
	}
	jw_put_char(&w, '}');
	jw_end(&w);
	*len = m.len;
	return m.buf; /* the memory output's buffer, now the caller's */
}

/* The chains of the query's blocks, as kvquery walked them. */
static void query_chains(struct aq *q, const struct kv_query *rq)
{
	size_t n = rq->chains ? rq->nchains
		   : rq->locals ? rq->nlocals
				: (rq->ntokens + rq->block_size - 1) / rq->block_size;
	q->chains = kv_xmalloc((n + 1) * sizeof *q->chains);
	if (rq->chains) {
		memcpy(q->chains, rq->chains, n * sizeof *q->chains);
	} else if (rq->locals) {
		kv_chain_hashes(KV_CHAIN_ROOT, rq->locals, q->chains, n);
	} else {
		uint64_t *locals = kv_xmalloc((n + 1) * sizeof *locals);
		n = kv_block_hashes(rq->tokens, rq->ntokens, rq->block_size, KV_CHAIN_ROOT, locals, q->chains, n);
		free(locals);
	}
	q->nblocks = (uint32_t)n;
}

void kv_against_add(struct kv_against *a, const struct kv_against_query *in)
{
	struct aq *q = new_aq(a, in->number);
	const char *why = NULL;
	q->body = request_body(a, in, &q->len, &q->path, &why);
	if (!q->body) {
		q->state = Q_BAD;
		q->error = kv_xstrdup(why);
		return;
	}
	q->state = Q_SENT;
	a->bytes += q->len;
	q->tenant = kv_xstrndup(in->tenant, in->tlen);
	q->tlen = in->tlen;
	q->block_size = in->req->block_size;
	q->by_hash = !a->o.rfc && in->line->by_hash;
	q->src = in->src;
	q->snap = in->snap;
	q->part = in->req->part;
	query_chains(q, in->req);
	const char *inst = a->o.rfc ? in->line->instance : NULL;
	for (int k = 0; k < 2; k++) {
		bool shared = k ? !a->o.shared_pool : a->o.shared_pool;
		struct kv_query_opts qo = { .shared_pool = shared };
		size_t nhits, nblocks;
		const struct kv_hit *hits = kv_query_run(in->q, in->src, in->req, &qo, &nhits, &nblocks);
		kv_rows_of_hits(&q->kv[k], in->src, hits, nhits, in->req->block_size, shared, a->o.rfc, inst);
	}
}

/* ---- asking ------------------------------------------------------------- */

static void take_reply(struct kv_against *a, const struct kv_reply *r)
{
	if (r->id >= a->n)
		return;
	struct aq *q = &a->q[r->id];
	q->state = Q_REPLIED;
	q->answered = r->answered;
	q->status = r->status;
	q->replied_ns = kv_realtime_ns();
	if (r->answered) {
		q->reply = kv_xmalloc(r->len + 1);
		memcpy(q->reply, r->body, r->len);
		q->reply[r->len] = 0;
		q->rlen = r->len;
	} else {
		q->failure = kv_xstrdup(r->failure);
		q->rerror = kv_xstrdup(r->error);
	}
}

static void ask(struct kv_against *a)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->q[i].state == Q_SENT)
			a->t.submit(a->t.ctx, i, a->q[i].path, a->q[i].body, a->q[i].len);
	struct kv_reply r;
	while (a->t.busy(a->t.ctx) && !kv_stop_signal) {
		a->t.wait(a->t.ctx, 100);
		while (a->t.next(a->t.ctx, &r))
			take_reply(a, &r);
	}
	while (a->t.next(a->t.ctx, &r))
		take_reply(a, &r);
	for (size_t i = 0; i < a->n; i++)
		if (a->q[i].state == Q_SENT)
			a->q[i].state = Q_LOST; /* interrupted before its reply */
}

/* ---- explaining ---------------------------------------------------------- */

/* A difference as the classifier sees it. */
struct explained {
	enum kv_class cls;
	struct kv_verdict v;
	uint32_t lo, hi;               /* blocks where the two counts part */
	bool ownership;
};

static uint64_t row_val(const struct kv_row *r, enum kv_field f)
{
	return r && (r->has & (1u << f)) ? r->f[f] : 0;
}

/* Where the two counts of a field end, in blocks from block 0. */
static void ends(const struct aq *q, const struct kv_fdiff *d, const struct kv_row *r, const struct kv_row *k,
		 uint64_t *re, uint64_t *ke, enum kv_medium *m, bool *ownership)
{
	uint64_t bs = q->block_size ? q->block_size : 1;
	*ownership = false;
	switch (d->field) {
	case KV_F_NPU:
		*m = KV_XPU;
		*re = row_val(r, KV_F_NPU), *ke = row_val(k, KV_F_NPU);
		break;
	case KV_F_CPU:
		*m = KV_CPU;
		*re = row_val(r, KV_F_NPU) + row_val(r, KV_F_CPU), *ke = row_val(k, KV_F_NPU) + row_val(k, KV_F_CPU);
		break;
	case KV_F_DISK:
		*m = KV_DISK;
		*re = row_val(r, KV_F_NPU) + row_val(r, KV_F_CPU) + row_val(r, KV_F_DISK);
		*ke = row_val(k, KV_F_NPU) + row_val(k, KV_F_CPU) + row_val(k, KV_F_DISK);
		break;
	case KV_F_LOCAL:
	case KV_F_REMOTE:
		*m = KV_CPU;
		*ownership = true;
		*re = row_val(k, KV_F_NPU);
		*ke = row_val(k, KV_F_NPU) + row_val(k, KV_F_CPU);
		break;
	case KV_F_GPU: *m = KV_XPU; *re = d->router / bs, *ke = d->kvtools / bs; break;
	case KV_F_RCPU: *m = KV_CPU; *re = d->router / bs, *ke = d->kvtools / bs; break;
	case KV_F_RDISK: *m = KV_DISK; *re = d->router / bs, *ke = d->kvtools / bs; break;
	default:
		*m = KV_UNKNOWN;
		*re = d->router / (q->by_hash ? 1 : bs), *ke = d->kvtools / bs;
		break;
	}
}

/* The blocks where the two counts of d part, [lo, hi) of the query, and the
 * medium they are about; an ownership split is about the cpu range of
 * kvquery's answer. */
static void parting(const struct aq *q, const struct kv_rows *rr, const struct kv_fdiff *d, uint32_t *lo,
		    uint32_t *hi, enum kv_medium *m, bool *ownership)
{
	const struct kv_row *r = kv_rows_find(rr, d->instance, d->len, d->dp);
	const struct kv_row *k = kv_rows_find(&q->kv[0], d->instance, d->len, d->dp);
	uint64_t re, ke;
	ends(q, d, r, k, &re, &ke, m, ownership);
	uint64_t a = *ownership || re < ke ? re : ke, b = *ownership || re < ke ? ke : re;
	*hi = (uint32_t)(b < q->nblocks ? b : q->nblocks);
	*lo = (uint32_t)(a < *hi ? a : *hi);
}

static size_t add_candidate(uint32_t *out, size_t n, size_t max, uint32_t w)
{
	for (size_t k = 0; k < n; k++)
		if (out[k] == w)
			return n;
	if (w != UINT32_MAX && n < max)
		out[n++] = w;
	return n;
}

/* The workers the snapshot says hold block p in medium m (bit of media):
 * an ownership-blind walk counts their copies for every worker. */
static size_t holders(struct kv_against *a, const struct aq *q, uint32_t p, unsigned bit, uint32_t *out, size_t n,
		      size_t max)
{
	struct kv_qblock b;
	if (p >= q->nblocks || !kv_qsource_block(q->src, q->part, q->chains[p], &b))
		return n;
	for (size_t i = 0; i < b.n; i++) {
		if (!(b.h[i] & bit))
			continue;
		size_t len;
		int64_t dp;
		const char *name = kv_qsource_worker(q->src, b.h[i] >> 3, &len, &dp);
		n = add_candidate(out, n, max, kv_evidence_worker(a->ev, name, len, dp));
	}
	return n;
}

/* The workers a difference is about: its rank, or every rank of its
 * instance; for a lower tier, also whoever holds the block there. */
static size_t candidates(struct kv_against *a, const struct aq *q, const struct kv_fdiff *d, const struct kv_rows *rr,
			 uint32_t lo, enum kv_medium m, uint32_t *out, size_t max)
{
	size_t n = 0;
	if (d->dp >= 0) {
		n = add_candidate(out, n, max, kv_evidence_worker(a->ev, d->instance, d->len, d->dp));
		if (m == KV_CPU || m == KV_DISK || m == KV_UNKNOWN)
			n = holders(a, q, lo, m == KV_CPU ? 2u : m == KV_DISK ? 4u : 6u, out, n, max);
		return n;
	}
	const struct kv_rows *sets[] = { &q->kv[0], rr };
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < sets[s]->n && n < max; i++) {
			const struct kv_row *row = &sets[s]->v[i];
			if (row->dp < 0 || row->len != d->len || memcmp(row->instance, d->instance, d->len) != 0)
				continue;
			uint32_t w = kv_evidence_worker(a->ev, d->instance, d->len, row->dp);
			bool seen = false;
			for (size_t k = 0; k < n; k++)
				seen |= out[k] == w;
			if (w != UINT32_MAX && !seen)
				out[n++] = w;
		}
	return n;
}

/* Whether kvquery's other walk (--shared-pool or not) gives the router's value. */
static bool other_walk_agrees(const struct aq *q, const struct kv_fdiff *d)
{
	const struct kv_row *other = kv_rows_find(&q->kv[1], d->instance, d->len, d->dp);
	return row_val(other, d->field) == d->router;
}

/* The class that needs no event: by-hash tokens. */
static enum kv_class by_numbers(const struct aq *q, const struct kv_fdiff *d)
{
	if (q->by_hash && (d->field == KV_F_TOKENS || d->field == KV_F_LONGEST) && d->follows == KV_NO_FOLLOW &&
	    d->router * q->block_size == d->kvtools)
		return KV_CLASS_BY_HASH_TOKENS;
	return KV_CLASS_NONE;
}

static void explain(struct kv_against *a, const struct aq *q, const struct kv_rows *rr, const struct kv_fdiff *d,
		    struct explained *x)
{
	memset(x, 0, sizeof *x);
	x->cls = by_numbers(q, d);
	enum kv_medium m;
	parting(q, rr, d, &x->lo, &x->hi, &m, &x->ownership);
	if (x->cls)
		return;
	uint32_t w[32];
	struct kv_case c = { .ev = a->ev, .snap = q->snap, .workers = w, .medium = m,
			     .router_more = d->router > d->kvtools, .ownership = x->ownership, .chains = q->chains,
			     .nchains = q->nblocks, .lo = x->lo, .hi = x->hi, .sent_ns = q->replied_ns,
			     .window_ns = a->o.window_ns, .have_events = a->o.nevents && !a->events_failed,
			     .other_walk = other_walk_agrees(q, d) };
	if (x->ownership && x->hi - x->lo > OWNERSHIP_BLOCKS)
		c.hi = x->lo + OWNERSHIP_BLOCKS;
	c.nworkers = candidates(a, q, d, rr, x->lo, m, w, 32);
	kv_classify(&c, &x->v);
	x->cls = x->v.cls;
}

/* ---- the captures -------------------------------------------------------- */

/* Whether a query before q of the batch was answered from the same
 * snapshot (and partition): its workers and engine hashes are read once. */
static bool seen_before(const struct kv_against *a, size_t i, bool part)
{
	for (size_t k = 0; k < i; k++) {
		const struct aq *p = &a->q[k];
		if (p->state == Q_REPLIED && p->answered && p->status == 200 && p->snap == a->q[i].snap &&
		    (!part || p->part == a->q[i].part))
			return true;
	}
	return false;
}

/* The blocks the batch's differences name, and one pass over the captures
 * for their events. */
static void gather(struct kv_against *a, struct kv_rows *rr, struct kv_fdiffs *ds, const size_t *first)
{
	kv_evidence_reset(a->ev);
	bool any = false;
	for (size_t i = 0; i < a->n; i++) {
		struct aq *q = &a->q[i];
		if (q->state != Q_REPLIED || !q->answered || q->status != 200)
			continue;
		if (!seen_before(a, i, false))
			kv_evidence_add_workers(a->ev, q->snap);
		uint32_t hi = 0;
		for (size_t k = first[i]; k < first[i + 1]; k++) {
			const struct kv_fdiff *d = &ds->v[k];
			if (d->follows != KV_NO_FOLLOW)
				continue;
			uint32_t lo, top;
			enum kv_medium m;
			bool ownership;
			parting(q, &rr[i], d, &lo, &top, &m, &ownership);
			uint32_t span = ownership ? OWNERSHIP_BLOCKS : SHOWN_BLOCKS;
			for (uint32_t p = lo; p < top && p < lo + span; p++)
				kv_evidence_block(a->ev, q->chains[p], true);
			uint32_t w[32];
			size_t nw = candidates(a, q, d, &rr[i], lo, m, w, 32);
			for (size_t c = 0; c < nw && lo < q->nblocks; c++)
				kv_evidence_watch(a->ev, q->chains[lo], w[c]);
			hi = top > hi ? top : hi;
			any = true;
		}
		for (uint32_t p = 0; p < hi; p++)
			kv_evidence_block(a->ev, q->chains[p], false);
	}
	if (!any)
		return;
	for (size_t i = 0; i < a->n; i++) {
		struct aq *q = &a->q[i];
		struct kv_err e = { 0 };
		if (q->state == Q_REPLIED && q->answered && q->status == 200 && !seen_before(a, i, true) &&
		    !kv_evidence_learn(a->ev, q->snap, q->part, &e)) {
			kv_warn("%s", kv_err_msg(&e));
			kv_err_clear(&e);
		}
	}
	if (!a->o.nevents || a->events_failed)
		return;
	struct kv_err e = { 0 };
	if (!kv_evidence_scan(a->ev, a->o.events, a->o.nevents, &e)) {
		kv_warn("%s (the differences are not explained from events)", kv_err_msg(&e));
		kv_err_clear(&e);
		a->events_failed = true;
	}
	const char *first_bad;
	uint64_t bad = kv_evidence_bad(a->ev, &first_bad);
	if (bad && !a->shown_bad_events && !a->o.quiet)
		kv_warn("%s: a record that could not be decoded, and %llu more, left out of the evidence", first_bad,
			(unsigned long long)(bad - 1));
	a->shown_bad_events += bad;
}

/* ---- writing ------------------------------------------------------------- */

static void put_worker(struct jw *w, const struct kv_worker *wk)
{
	size_t n = strlen(wk->instance_id);
	char *t = kv_xmalloc(n + 24);
	int len = wk->pool ? snprintf(t, n + 24, "%s", wk->instance_id)
			   : snprintf(t, n + 24, "%s/%lld", wk->instance_id, (long long)wk->dp_rank);
	jw_put_str(w, t, (size_t)len);
	free(t);
}


static void put_event(struct kv_against *a, struct jw *w, const struct kv_evrec *r, const char *role,
		      const struct kv_snap *snap, bool first)
{
	size_t n;
	jw_put_lit(w, first ? "{" : ",{");
	if (role) {
		put_key_str(w, "\"role\":", role, strlen(role));
		jw_put_char(w, ',');
	}
	const char *src = kv_evidence_source(a->ev, r->src, &n);
	put_key_str(w, "\"src\":", src, n);
	jw_put_lit(w, ",\"seq\":");
	if (r->flags & KV_EVR_SEQ)
		jw_put_u64(w, r->seq);
	else
		jw_put_lit(w, "null");
	jw_put_lit(w, ",\"recv_ns\":");
	jw_put_u64(w, r->recv_ns);
	jw_put_lit(w, ",\"type\":\"");
	jw_put_lit(w, kv_evtype_name((enum kv_evtype)r->type));
	jw_put_lit(w, "\",\"medium\":\"");
	jw_put_lit(w, kv_medium_name((enum kv_medium)r->medium));
	jw_put_lit(w, "\",\"format\":\"");
	jw_put_lit(w, kv_format_name((enum kv_format)r->format));
	jw_put_lit(w, "\",\"dp_rank\":");
	if (r->dp >= 0)
		jw_put_i64(w, r->dp);
	else
		jw_put_lit(w, "null");
	if (r->type != KV_EV_CLEARED) {
		jw_put_lit(w, ",\"hash\":");
		jw_put_hash(w, r->ehash);
	}
	const char *b = kv_evidence_name(a->ev, r->backend, &n);
	if (b)
		put_key_str(w, ",\"backend_id\":", b, n);
	jw_put_lit(w, ",\"about\":[");
	for (size_t i = 0; i < r->ntargets && i < KV_EVIDENCE_TARGETS; i++) {
		if (i)
			jw_put_char(w, ',');
		put_worker(w, kv_evidence_worker_at(a->ev, r->targets[i]));
	}
	jw_put_char(w, ']');
	if (kv_evrec_placeholder(r))
		jw_put_lit(w, ",\"placeholder\":true");
	if (r->flags & KV_EVR_SIGNED_BATCH)
		jw_put_lit(w, ",\"signed_batch\":true");
	if (kv_event_newer(a->ev, snap, r))
		jw_put_lit(w, ",\"newer_than_snapshot\":true");
	jw_put_char(w, '}');
}

/* The block at position p as the snapshot holds it: who, in which media. */
static void put_held(struct jw *w, const struct aq *q, uint32_t p)
{
	struct kv_qblock b;
	jw_put_lit(w, ",\"held\":[");
	if (kv_qsource_block(q->src, q->part, q->chains[p], &b))
		for (size_t i = 0; i < b.n && i < 16; i++) {
			size_t len;
			int64_t dp;
			const char *name = kv_qsource_worker(q->src, b.h[i] >> 3, &len, &dp);
			char t[160];
			unsigned m = b.h[i] & 7;
			int n = snprintf(t, sizeof t, "%.*s/%lld %s%s%s%s%s", (int)(len < 100 ? len : 100), name,
					 (long long)dp, (m & 1) ? "xpu" : "", (m & 1) && (m & 6) ? "+" : "", (m & 2) ? "cpu" : "",
					 (m & 2) && (m & 4) ? "+" : "", (m & 4) ? "disk" : "");
			if (i)
				jw_put_char(w, ',');
			jw_put_str(w, t, (size_t)n);
		}
	jw_put_char(w, ']');
}

static void put_blocks(struct kv_against *a, struct jw *w, const struct aq *q, const struct explained *x)
{
	jw_put_lit(w, ",\"blocks\":[");
	uint32_t from = x->v.block < x->hi ? x->v.block : x->lo;
	bool first = true;
	for (uint32_t p = from; p < x->hi && p < from + SHOWN_BLOCKS; p++) {
		jw_put_lit(w, first ? "{\"position\":" : ",{\"position\":");
		first = false;
		jw_put_u64(w, p);
		jw_put_lit(w, ",\"chain\":");
		jw_put_hash(w, q->chains[p]);
		size_t ne;
		const uint64_t *eh = kv_evidence_ehashes(a->ev, q->chains[p], &ne);
		jw_put_lit(w, ",\"engine_hashes\":[");
		jw_put_hash_list(w, eh, ne < 8 ? ne : 8);
		jw_put_char(w, ']');
		put_held(w, q, p);
		jw_put_char(w, '}');
	}
	jw_put_char(w, ']');
}

static void put_evidence(struct kv_against *a, struct jw *w, const struct aq *q, const struct explained *x)
{
	const struct kv_verdict *v = &x->v;
	put_blocks(a, w, q, x);
	/* the events that show the class, then the block's last events */
	jw_put_lit(w, ",\"evidence\":[");
	for (size_t i = 0; i < v->nroles; i++)
		put_event(a, w, &v->roles[i].ev, v->roles[i].role, q->snap, i == 0);
	jw_put_lit(w, "],\"events\":[");
	for (size_t i = 0; i < v->nevents; i++)
		put_event(a, w, &v->events[i], NULL, q->snap, i == 0);
	jw_put_char(w, ']');
	if (v->ngaps) {
		jw_put_lit(w, ",\"gaps\":[");
		for (size_t i = 0; i < v->ngaps; i++) {
			size_t n;
			const char *src = kv_evidence_source(a->ev, v->gaps[i], &n);
			const struct kv_evgap *g = kv_evidence_gaps(a->ev, v->gaps[i]);
			put_key_str(w, i ? ",{\"src\":" : "{\"src\":", src, n);
			jw_put_lit(w, ",\"gaps\":");
			jw_put_u64(w, g->gaps);
			jw_put_lit(w, ",\"missing\":");
			jw_put_u64(w, g->missing);
			jw_put_lit(w, ",\"last_gap\":{\"after_seq\":");
			jw_put_u64(w, g->before_seq);
			jw_put_lit(w, ",\"seq\":");
			jw_put_u64(w, g->last_seq);
			jw_put_lit(w, ",\"recv_ns\":");
			jw_put_u64(w, g->last_recv_ns);
			jw_put_lit(w, "}}");
		}
		jw_put_char(w, ']');
	}
	if (v->note)
		put_key_str(w, ",\"note\":", v->note, strlen(v->note));
}

static void put_diff_head(struct jw *w, const struct kv_fdiff *d, bool first)
{
	put_key_str(w, first ? "{\"instance\":" : ",{\"instance\":", d->instance, d->len);
	jw_put_lit(w, ",\"dp\":");
	if (d->dp >= 0)
		jw_put_i64(w, d->dp);
	else
		jw_put_lit(w, "null");
	jw_put_lit(w, ",\"field\":\"");
	jw_put_lit(w, kv_field_name(d->field));
	jw_put_lit(w, "\",\"router\":");
	jw_put_u64(w, d->router);
	jw_put_lit(w, ",\"kvtools\":");
	jw_put_u64(w, d->kvtools);
}

/* The class of a difference: its own, or that of the one it follows. */
static enum kv_class class_of(const struct kv_fdiffs *ds, size_t base, size_t k, const struct explained *xs)
{
	for (size_t hops = 0; ds->v[k].follows != KV_NO_FOLLOW && hops < 16; hops++)
		k = ds->v[k].follows;
	return xs[k - base].cls;
}

static void write_head(struct jw *w, uint64_t number, const char *status)
{
	jw_put_lit(w, "{\"query\":");
	jw_put_u64(w, number);
	jw_put_lit(w, ",\"status\":\"");
	jw_put_lit(w, status);
	jw_put_char(w, '"');
}

static void write_json(struct kv_against *a, const struct aq *q, const struct kv_fdiffs *ds, size_t base, size_t end,
		       const struct explained *xs, const char *rwhy)
{
	struct jw w;
	jw_begin(&w, a->out);
	if (q->state == Q_BAD) {
		write_head(&w, q->number, "bad_query");
		put_key_str(&w, ",\"error\":", q->error, strlen(q->error));
	} else if (q->state == Q_LOST) {
		write_head(&w, q->number, "router_error");
		jw_put_lit(&w, ",\"kind\":\"interrupted\",\"error\":\"interrupted before the router answered\"");
	} else if (!q->answered || rwhy) {
		write_head(&w, q->number, "router_error");
		jw_put_lit(&w, ",\"kind\":\"");
		jw_put_lit(&w, !q->answered ? q->failure : q->status != 200 ? "http_status" : "not_an_answer");
		jw_put_char(&w, '"');
		if (q->answered) {
			jw_put_lit(&w, ",\"http_status\":");
			jw_put_i64(&w, q->status);
		}
		const char *msg = !q->answered ? q->rerror : rwhy;
		put_key_str(&w, ",\"error\":", msg, strlen(msg));
	} else if (end == base) {
		write_head(&w, q->number, "agree");
	} else {
		write_head(&w, q->number, "differ");
		jw_put_lit(&w, ",\"differences\":[");
		for (size_t k = base; k < end; k++) {
			const struct kv_fdiff *d = &ds->v[k];
			put_diff_head(&w, d, k == base);
			jw_put_lit(&w, ",\"class\":\"");
			jw_put_lit(&w, kv_class_name(class_of(ds, base, k, xs)));
			jw_put_char(&w, '"');
			if (d->follows != KV_NO_FOLLOW) {
				jw_put_lit(&w, ",\"follows\":\"");
				jw_put_lit(&w, kv_field_name(ds->v[d->follows].field));
				jw_put_char(&w, '"');
			} else {
				put_evidence(a, &w, q, &xs[k - base]);
			}
			jw_put_char(&w, '}');
		}
		jw_put_char(&w, ']');
	}
	jw_put_lit(&w, "}\n");
	jw_end(&w);
}

/* The evidence of a difference for a person, on one line. */
static void evidence_words(struct kv_against *a, const struct explained *x, char *buf, size_t n)
{
	const struct kv_verdict *v = &x->v;
	int k = snprintf(buf, n, "block %u", v->block);
	for (size_t i = 0; i < v->nroles && (size_t)k < n; i++) {
		const struct kv_evrec *r = &v->roles[i].ev;
		size_t len;
		const char *src = kv_evidence_source(a->ev, r->src, &len);
		k += snprintf(buf + k, n - (size_t)k, "; %s: %s %s seq %llu", v->roles[i].role, kv_evtype_name(r->type),
			      kv_medium_name(r->medium), (unsigned long long)r->seq);
		if ((size_t)k < n)
			k += snprintf(buf + k, n - (size_t)k, " (%.*s)", (int)(len < 80 ? len : 80), src);
	}
	if (v->ngaps && (size_t)k < n) {
		size_t len;
		const char *src = kv_evidence_source(a->ev, v->gaps[0], &len);
		k += snprintf(buf + k, n - (size_t)k, "; %.*s missed %llu seqs", (int)(len < 80 ? len : 80), src,
			      (unsigned long long)kv_evidence_gaps(a->ev, v->gaps[0])->missing);
	}
	if (v->note && (size_t)k < n)
		snprintf(buf + k, n - (size_t)k, "; %s", v->note);
}

static void write_table(struct kv_against *a, const struct aq *q, const struct kv_fdiffs *ds, size_t base, size_t end,
			const struct explained *xs, const char *rwhy)
{
	if (!a->header_done) {
		a->header_done = true;
		kv_out_printf(a->out, "%-6s %-16s %4s %-18s %10s %10s %-22s %s\n", "QUERY", "INSTANCE", "DP", "FIELD",
			      "ROUTER", "KVTOOLS", "CLASS", "EVIDENCE");
	}
	char why[600];
	if (q->state == Q_BAD || q->state == Q_LOST || !q->answered || rwhy) {
		const char *msg = q->state == Q_BAD ? q->error : q->state == Q_LOST ? "interrupted" : !q->answered ? q->rerror : rwhy;
		kv_printable(why, sizeof why, msg, strlen(msg));
		kv_out_printf(a->out, "%-6llu %-16s %4s %-18s %10s %10s %-22s %s\n", (unsigned long long)q->number, "-", "-",
			      "-", "-", "-", q->state == Q_BAD ? "bad_query" : "router_error", why);
		return;
	}
	for (size_t k = base; k < end; k++) {
		const struct kv_fdiff *d = &ds->v[k];
		char inst[64], dp[24], ev[600];
		kv_printable(inst, sizeof inst, d->instance, d->len);
		snprintf(dp, sizeof dp, d->dp >= 0 ? "%lld" : "-", (long long)d->dp);
		if (d->follows != KV_NO_FOLLOW)
			snprintf(ev, sizeof ev, "follows %s", kv_field_name(ds->v[d->follows].field));
		else
			evidence_words(a, &xs[k - base], ev, sizeof ev);
		kv_printable(why, sizeof why, ev, strlen(ev));
		kv_out_printf(a->out, "%-6llu %-16s %4s %-18s %10llu %10llu %-22s %s\n", (unsigned long long)q->number, inst,
			      dp, kv_field_name(d->field), (unsigned long long)d->router, (unsigned long long)d->kvtools,
			      kv_class_name(class_of(ds, base, k, xs)), why);
	}
}

/* ---- a batch ------------------------------------------------------------- */

static void count(struct kv_against *a, const struct aq *q, const struct kv_fdiffs *ds, size_t base, size_t end,
		  const struct explained *xs, const char *rwhy)
{
	if (q->state == Q_BAD) {
		a->bad++;
		return;
	}
	a->queries++;
	if (q->state == Q_LOST || !q->answered || rwhy) {
		a->router_errors++;
		return;
	}
	if (end == base) {
		a->agree++;
		return;
	}
	a->differ++;
	for (size_t k = base; k < end; k++)
		if (ds->v[k].follows == KV_NO_FOLLOW)
			a->by_class[xs[k - base].cls]++;
}

void kv_against_flush(struct kv_against *a)
{
	if (!a->n)
		return;
	ask(a);
	struct kv_rows *rr = kv_xcalloc(a->n, sizeof *rr);
	char **rwhy = kv_xcalloc(a->n, sizeof *rwhy);
	size_t *first = kv_xcalloc(a->n + 1, sizeof *first);
	struct kv_fdiffs ds = { 0 }, one = { 0 };
	for (size_t i = 0; i < a->n; i++) {
		struct aq *q = &a->q[i];
		first[i] = ds.n;
		first[i + 1] = ds.n;
		if (q->state != Q_REPLIED || !q->answered)
			continue;
		char why[512];
		if (q->status != 200) {
			char shown[200];
			size_t n = kv_printable(shown, sizeof shown, q->reply, q->rlen < 160 ? q->rlen : 160);
			snprintf(why, sizeof why, "HTTP %ld%s%.*s%s", q->status, n ? ": " : "", (int)n, shown,
				 q->rlen > 160 ? "..." : "");
			rwhy[i] = kv_xstrdup(why);
			continue;
		}
		if (!kv_rows_parse(&rr[i], q->reply, q->rlen, q->tenant, q->tlen, a->o.rfc, why, sizeof why)) {
			char full[600];
			snprintf(full, sizeof full, "not an answer: %s", why);
			rwhy[i] = kv_xstrdup(full);
			continue;
		}
		kv_rows_diff(&rr[i], &q->kv[0], &one);
		ds.v = kv_xgrow(ds.v, &ds.cap, ds.n + one.n, sizeof *ds.v);
		for (size_t k = 0; k < one.n; k++) {
			ds.v[ds.n + k] = one.v[k];
			if (one.v[k].follows != KV_NO_FOLLOW)
				ds.v[ds.n + k].follows += ds.n;
		}
		ds.n += one.n;
		first[i + 1] = ds.n;
	}
	gather(a, rr, &ds, first);
	struct explained *xs = kv_xcalloc(ds.n + 1, sizeof *xs);
	for (size_t i = 0; i < a->n; i++)
		for (size_t k = first[i]; k < first[i + 1]; k++)
			if (ds.v[k].follows == KV_NO_FOLLOW)
				explain(a, &a->q[i], &rr[i], &ds.v[k], &xs[k]);
	for (size_t i = 0; i < a->n && !kv_out_failed(a->out); i++) {
		if (a->o.table)
			write_table(a, &a->q[i], &ds, first[i], first[i + 1], xs + first[i], rwhy[i]);
		else
			write_json(a, &a->q[i], &ds, first[i], first[i + 1], xs + first[i], rwhy[i]);
		count(a, &a->q[i], &ds, first[i], first[i + 1], xs + first[i], rwhy[i]);
		kv_out_flush_if_full(a->out);
	}
	kv_out_flush(a->out);
	free(xs);
	for (size_t i = 0; i < a->n; i++) {
		kv_rows_free(&rr[i]);
		free(rwhy[i]);
		aq_free(&a->q[i]);
	}
	free(rr);
	free(rwhy);
	free(first);
	free(ds.v);
	free(one.v);
	a->n = 0;
	a->bytes = 0;
}

int kv_against_finish(struct kv_against *a)
{
	kv_against_flush(a);
	uint64_t primary = 0;
	for (int c = 0; c < KV_NCLASSES; c++)
		primary += a->by_class[c];
	if (!a->o.quiet) {
		fprintf(stderr, "%s: %s: %llu queries: %llu agree, %llu differ, %llu not answered by the router", kv_prog,
			a->o.url, (unsigned long long)a->queries, (unsigned long long)a->agree,
			(unsigned long long)a->differ, (unsigned long long)a->router_errors);
		if (a->bad)
			fprintf(stderr, ", %llu not asked (bad queries)", (unsigned long long)a->bad);
		fprintf(stderr, "\n");
		if (primary) {
			fprintf(stderr, "%s: %llu differences:", kv_prog, (unsigned long long)primary);
			for (int c = 1; c < KV_NCLASSES; c++)
				if (a->by_class[c])
					fprintf(stderr, " %s %llu", kv_class_name((enum kv_class)c),
						(unsigned long long)a->by_class[c]);
			fprintf(stderr, "\n");
		}
		if (a->by_class[KV_CLASS_WALK_MODE] * 2 >= primary && a->by_class[KV_CLASS_WALK_MODE])
			fprintf(stderr,
				"%s: %llu of %llu differences are what kvquery answers %s --shared-pool: the router walks "
				"the lower tiers as %s; compare %s --shared-pool\n",
				kv_prog, (unsigned long long)a->by_class[KV_CLASS_WALK_MODE], (unsigned long long)primary,
				a->o.shared_pool ? "without" : "with",
				a->o.shared_pool ? "kv-conductor did before 5246d49 (each worker's own copies)"
						 : "kv-conductor does from 5246d49 on (ownership-blind)",
				a->o.shared_pool ? "without" : "with");
	}
	fflush(stderr);
	if (a->router_errors)
		return KV_EX_UNAVAILABLE;
	if (a->by_class[KV_CLASS_UNEXPLAINED])
		return 2;
	return a->differ ? 1 : 0;
}

#include "index/statelog.h"
#include "base/jsonw.h"
#include "base/util.h"

#include <sys/resource.h>

#include <string.h>

static void put_name(struct jw *w, const char *key, const char *name)
{
	jw_put_lit(w, key);
	jw_put_lit(w, name);
	jw_put_char(w, '"');
}

static void put_workers(struct jw *w, const struct kv_report *r, const struct kv_workers *ws)
{
	jw_put_lit(w, ",\"workers\":[");
	for (size_t i = 0; i < r->nworkers; i++) {
		const struct kv_worker *k = &ws->v[r->workers[i]];
		/* a pool holder is named by its backend_id, and has no dp rank */
		jw_put_lit(w, i ? ",{" : "{");
		jw_put_lit(w, k->pool ? "\"pool\":" : "\"instance_id\":");
		jw_put_cstr(w, k->instance_id);
		if (!k->pool) {
			jw_put_lit(w, ",\"dp_rank\":");
			jw_put_i64(w, k->dp_rank);
		}
		jw_put_char(w, '}');
	}
	jw_put_char(w, ']');
}

void kv_statelog_write(struct kv_out *o, const struct kv_report *r, const struct kv_workers *ws,
		       const struct kv_index *ix)
{
	const struct kv_partition *p = r->partition < ix->n ? &ix->p[r->partition] : NULL;
	struct jw w;
	jw_begin(&w, o);
	jw_put_lit(&w, "{\"recv_ns\":");
	jw_put_u64(&w, r->ctx ? r->ctx->recv_ns : r->now);
	put_name(&w, ",\"state\":\"", kv_state_name(r->state));
	/* pending_expired has a reason only when --max-pending forced it */
	if (r->state == KV_ST_DROPPED || (r->state == KV_ST_PENDING_EXPIRED && r->reason != KV_R_NONE))
		put_name(&w, ",\"reason\":\"", kv_reason_name(r->reason));
	jw_put_lit(&w, ",\"hash\":");
	if (r->has_hash)
		jw_put_hash(&w, r->hash);
	else
		jw_put_lit(&w, "null");
	if (r->has_medium)
		put_name(&w, ",\"medium\":\"", kv_medium_name(r->medium));
	put_workers(&w, r, ws);
	if (r->ctx) {
		jw_put_lit(&w, ",\"src\":");
		jw_put_str(&w, r->ctx->src.p, r->ctx->src.n);
		jw_put_lit(&w, ",\"seq\":");
		if (r->ctx->has_seq)
			jw_put_u64(&w, r->ctx->seq);
		else
			jw_put_lit(&w, "null");
	}
	if (p && r->state != KV_ST_RECEIVED && r->state != KV_ST_PARSED && !(r->state == KV_ST_DROPPED && (r->reason == KV_R_DUPLICATE ||
										   r->reason == KV_R_DECODE_ERROR ||
										   r->reason == KV_R_SOURCE_LIMIT))) {
		jw_put_lit(&w, ",\"model\":");
		jw_put_cstr(&w, p->model);
		jw_put_lit(&w, ",\"tenant\":");
		jw_put_cstr(&w, p->tenant);
	}
	if (r->state == KV_ST_PENDING_EXPIRED || r->state == KV_ST_RECEIVED || r->state == KV_ST_PARSED ||
	    (r->state == KV_ST_APPLIED && !r->has_hash) || r->reason == KV_R_DUPLICATE ||
	    r->reason == KV_R_SOURCE_LIMIT || r->reason == KV_R_HOLDER_LIMIT) {
		jw_put_lit(&w, ",\"count\":");
		jw_put_u64(&w, r->count);
	}
	jw_put_lit(&w, "}\n");
	jw_end(&w);
}

void kv_statelog_summary(FILE *f, const struct kv_match *m)
{
	const struct kv_match_stats *st = kv_match_statistics(m);
	const struct kv_index *ix = kv_match_index(m);
	fprintf(f, "%s: %llu records, %llu events", kv_prog, (unsigned long long)st->records,
		(unsigned long long)st->events);
	for (int s = KV_ST_QUEUED; s < KV_NSTATES; s++)
		fprintf(f, "%s%llu %s", s == KV_ST_QUEUED ? "; " : ", ", (unsigned long long)st->states[s],
			kv_state_name((enum kv_state)s));
	if (st->max_pending_expired)
		fprintf(f, " (%llu entries by --max-pending)", (unsigned long long)st->max_pending_expired);
	if (st->time_jumps)
		fprintf(f, "; %llu records stamped far ahead, taken at the event time reached",
			(unsigned long long)st->time_jumps);
	fputc('\n', f);
	if (st->states[KV_ST_DROPPED]) {
		fprintf(f, "%s: dropped:", kv_prog);
		const char *sep = " ";
		for (int r = 1; r < KV_NREASONS; r++)
			if (st->reasons[r]) {
				fprintf(f, "%s%llu %s", sep, (unsigned long long)st->reasons[r], kv_reason_name((enum kv_reason)r));
				sep = ", ";
			}
		fputc('\n', f);
	}
	fprintf(f, "%s: index: %zu partitions, %zu workers, %llu blocks, %llu holdings; %llu pending, "
		   "%llu offload cached, %llu content cached; %llu removals of unknown blocks\n",
		kv_prog, ix->n, kv_match_workers(m)->n, (unsigned long long)kv_index_blocks(ix),
		(unsigned long long)kv_index_holdings(ix), (unsigned long long)kv_match_pending(m),
		(unsigned long long)kv_match_offloads(m), (unsigned long long)kv_match_contents(m),
		(unsigned long long)st->unknown_removals);
}

void kv_statelog_memory(FILE *f, const struct kv_match *m)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	uint64_t pairs = kv_index_holdings(kv_match_index(m));
	fprintf(f, "%s: memory: peak RSS %.1f MiB, %.1f bytes per held (block, worker)\n", kv_prog,
		(double)ru.ru_maxrss / 1024, pairs ? (double)ru.ru_maxrss * 1024 / (double)pairs : 0.0);
}

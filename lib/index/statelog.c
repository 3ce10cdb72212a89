#include "index/statelog.h"
#include "base/jsonw.h"
#include "base/util.h"

#include <sys/resource.h>

#include <string.h>

static char *lit(char *p, const char *s)
{
	size_t n = strlen(s);
	memcpy(p, s, n);
	return p + n;
}

void kv_statelog_write(struct kv_out *o, const struct kv_report *r, const struct kv_workers *ws,
		       const struct kv_index *ix)
{
	const struct kv_partition *p = r->partition < ix->n ? &ix->p[r->partition] : NULL;
	size_t room = 256 + (r->ctx ? JW_STR_MAX(r->ctx->src.n) : 0) +
		      (p ? JW_STR_MAX(strlen(p->model)) + JW_STR_MAX(strlen(p->tenant)) : 0);
	char *q = jw_reserve(o, room);
	q = jw_u64(lit(q, "{\"recv_ns\":"), r->ctx ? r->ctx->recv_ns : r->now);
	q = lit(lit(lit(q, ",\"state\":\""), kv_state_name(r->state)), "\"");
	/* pending_expired has a reason only when --max-pending forced it */
	if (r->state == KV_ST_DROPPED || (r->state == KV_ST_PENDING_EXPIRED && r->reason != KV_R_NONE))
		q = lit(lit(lit(q, ",\"reason\":\""), kv_reason_name(r->reason)), "\"");
	q = lit(q, ",\"hash\":");
	q = r->has_hash ? jw_hash(q, r->hash) : lit(q, "null");
	if (r->has_medium)
		q = lit(lit(lit(q, ",\"medium\":\""), kv_medium_name(r->medium)), "\"");
	q = lit(q, ",\"workers\":[");
	jw_done(o, q);
	for (size_t i = 0; i < r->nworkers; i++) {
		const struct kv_worker *w = &ws->v[r->workers[i]];
		q = jw_reserve(o, 64 + JW_STR_MAX(strlen(w->instance_id)));
		/* a pool holder is named by its backend_id, and has no dp rank */
		q = lit(q, i ? ",{" : "{");
		q = jw_str(lit(q, w->pool ? "\"pool\":" : "\"instance_id\":"), w->instance_id, strlen(w->instance_id));
		q = lit(w->pool ? q : jw_i64(lit(q, ",\"dp_rank\":"), w->dp_rank), "}");
		jw_done(o, q);
	}
	q = jw_reserve(o, room);
	q = lit(q, "]");
	if (r->ctx) {
		q = jw_str(lit(q, ",\"src\":"), r->ctx->src.p, r->ctx->src.n);
		q = lit(q, ",\"seq\":");
		q = r->ctx->has_seq ? jw_u64(q, r->ctx->seq) : lit(q, "null");
	}
	if (p && r->state != KV_ST_RECEIVED && r->state != KV_ST_PARSED && !(r->state == KV_ST_DROPPED && (r->reason == KV_R_DUPLICATE ||
										   r->reason == KV_R_DECODE_ERROR ||
										   r->reason == KV_R_SOURCE_LIMIT))) {
		q = jw_str(lit(q, ",\"model\":"), p->model, strlen(p->model));
		q = jw_str(lit(q, ",\"tenant\":"), p->tenant, strlen(p->tenant));
	}
	if (r->state == KV_ST_PENDING_EXPIRED || r->state == KV_ST_RECEIVED || r->state == KV_ST_PARSED ||
	    (r->state == KV_ST_APPLIED && !r->has_hash) || r->reason == KV_R_DUPLICATE ||
	    r->reason == KV_R_SOURCE_LIMIT || r->reason == KV_R_HOLDER_LIMIT)
		q = jw_u64(lit(q, ",\"count\":"), r->count);
	jw_done(o, lit(q, "}\n"));
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

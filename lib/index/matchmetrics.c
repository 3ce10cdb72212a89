#include "index/matchmetrics.h"
#include "decode/srcstats.h"
#include "index/index.h"
#include "index/workers.h"

#include <stdio.h>

static void states(const struct kv_match *m, struct kv_metrics *mt)
{
	const struct kv_match_stats *st = kv_match_statistics(m);
	kv_metrics_family(mt, "kvtools_match_records_total", "counter", "Records (batches or event lines) read.");
	kv_metrics_sample(mt, "kvtools_match_records_total", (double)st->records, NULL);
	kv_metrics_family(mt, "kvtools_match_events_total", "counter", "Events read.");
	kv_metrics_sample(mt, "kvtools_match_events_total", (double)st->events, NULL);
	kv_metrics_family(mt, "kvtools_match_states_total", "counter",
			  "State changes: records received, events parsed, blocks in every later state.");
	for (int s = 0; s < KV_NSTATES; s++)
		kv_metrics_sample(mt, "kvtools_match_states_total", (double)st->states[s],
				  KV_LABELS("state", kv_state_name((enum kv_state)s)));
	kv_metrics_family(mt, "kvtools_match_drops_total", "counter", "Blocks or records dropped, by reason.");
	for (int r = 1; r < KV_NREASONS; r++)
		kv_metrics_sample(mt, "kvtools_match_drops_total", (double)st->reasons[r],
				  KV_LABELS("reason", kv_reason_name((enum kv_reason)r)));
	kv_metrics_family(mt, "kvtools_match_unknown_removals_total", "counter",
			  "Removals of blocks the index did not hold.");
	kv_metrics_sample(mt, "kvtools_match_unknown_removals_total", (double)st->unknown_removals, NULL);
}

static void caches(const struct kv_match *m, struct kv_metrics *mt)
{
	kv_metrics_family(mt, "kvtools_match_pending", "gauge", "Pool entries waiting for their engine event.");
	kv_metrics_sample(mt, "kvtools_match_pending", (double)kv_match_pending(m), NULL);
	kv_metrics_family(mt, "kvtools_match_offload_cache", "gauge", "Engine offloads waiting for a pool event.");
	kv_metrics_sample(mt, "kvtools_match_offload_cache", (double)kv_match_offloads(m), NULL);
	kv_metrics_family(mt, "kvtools_match_content_cache", "gauge", "Content of released blocks kept for later stores.");
	kv_metrics_sample(mt, "kvtools_match_content_cache", (double)kv_match_contents(m), NULL);
	const struct kv_index *ix = kv_match_index(m);
	kv_metrics_family(mt, "kvtools_match_blocks", "gauge", "Blocks in the index, per partition.");
	for (size_t i = 0; i < ix->n; i++)
		kv_metrics_sample(mt, "kvtools_match_blocks", (double)kv_blocks_count(&ix->p[i].blocks),
				  KV_LABELS("model", ix->p[i].model, "tenant", ix->p[i].tenant));
}

static void workers(const struct kv_match *m, struct kv_metrics *mt)
{
	const struct kv_workers *ws = kv_match_workers(m);
	const struct kv_index *ix = kv_match_index(m);
	char dp[24];
	kv_metrics_family(mt, "kvtools_match_held_blocks", "gauge", "Blocks a worker holds, per medium.");
	for (uint32_t w = 0; w < ws->n; w++) {
		snprintf(dp, sizeof dp, "%lld", (long long)ws->v[w].dp_rank);
		for (int med = 0; med < KV_NMEDIA; med++) {
			enum kv_medium md = (enum kv_medium)med;
			kv_metrics_sample(mt, "kvtools_match_held_blocks", (double)kv_index_held(ix, w, md),
					  KV_LABELS("worker", ws->v[w].instance_id, "dp_rank", dp, "medium",
						    kv_medium_name(md)));
		}
	}
	kv_metrics_family(mt, "kvtools_match_pending_expired_total", "counter",
			  "Pool entries for a worker that expired without their engine event.");
	for (uint32_t w = 0; w < ws->n; w++) {
		snprintf(dp, sizeof dp, "%lld", (long long)ws->v[w].dp_rank);
		kv_metrics_sample(mt, "kvtools_match_pending_expired_total", (double)kv_match_expired_for(m, w),
				  KV_LABELS("worker", ws->v[w].instance_id, "dp_rank", dp));
	}
}

static void per_source(struct kv_metrics *mt, const struct kv_srcstats *s, const char *name, const char *type,
		       const char *help, size_t at)
{
	kv_metrics_family(mt, name, type, help);
	for (size_t i = 0; i < s->n; i++)
		kv_metrics_sample(mt, name, (double)*(const uint64_t *)((const char *)&s->v[i] + at),
				  KV_LABELS("src", s->v[i].src));
}

static void sources(const struct kv_match *m, struct kv_metrics *mt)
{
	const struct kv_srcstats *s = kv_match_sources(m);
	per_source(mt, s, "kvtools_match_source_batches_total", "counter", "Batches applied, per source.",
		   offsetof(struct kv_srcstat, batches));
	per_source(mt, s, "kvtools_match_source_gaps_total", "counter", "Jumps forward in seq, per source.",
		   offsetof(struct kv_srcstat, seq.gaps));
	per_source(mt, s, "kvtools_match_source_missing_batches_total", "counter", "Batches skipped in seq, per source.",
		   offsetof(struct kv_srcstat, seq.missing));
	per_source(mt, s, "kvtools_match_source_restarts_total", "counter", "Steps back in seq (restarts), per source.",
		   offsetof(struct kv_srcstat, seq.restarts));
	kv_metrics_family(mt, "kvtools_match_source_last_batch_seconds", "gauge",
			  "Receive time of the source's last batch, Unix seconds.");
	for (size_t i = 0; i < s->n; i++)
		kv_metrics_sample(mt, "kvtools_match_source_last_batch_seconds", (double)s->v[i].last_recv_ns / 1e9,
				  KV_LABELS("src", s->v[i].src));
	kv_metrics_family(mt, "kvtools_match_source_lag_seconds", "gauge",
			  "Receive time minus the publisher's timestamp, for the source's last event.");
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].d.lag_n)
			kv_metrics_sample(mt, "kvtools_match_source_lag_seconds", s->v[i].d.lag_last,
					  KV_LABELS("src", s->v[i].src));
	kv_metrics_family(mt, "kvtools_match_event_time_seconds", "gauge",
			  "Event time: the latest receive time read, Unix seconds.");
	kv_metrics_sample(mt, "kvtools_match_event_time_seconds", (double)kv_match_now(m) / 1e9, NULL);
}

bool kv_match_write_metrics(const struct kv_match *m, struct kv_metrics *mt, struct kv_err *e)
{
	if (!kv_metrics_begin(mt, e))
		return false;
	states(m, mt);
	caches(m, mt);
	workers(m, mt);
	sources(m, mt);
	return kv_metrics_commit(mt, e);
}

/* match: two-phase matching (kv-conductor's memcache KvEvent support;
 * kvmatch(1) "Engine events", "Pool events", "Time, expiry and memory").
 * Engine events apply xpu stores and removals to the index and cache
 * engine offload (cpu/disk) events; pool events confirm
 * blocks whose content is known, or wait in the pending pool until the
 * engine's offload event arrives (matched).  All times are event time
 * (recv_ns), so the same input gives the same result, live or replayed.
 * Every state change is reported through a callback.  The matcher's state
 * is its own (index/matchstate.h): callers hold a pointer and use these
 * functions. */
#ifndef KV_MATCH_H
#define KV_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/ctx.h"
#include "decode/event.h"

struct kv_index;
struct kv_workers;
struct kv_srcstats;
struct kv_snap_writer;
struct kv_snap_restorer;
struct kv_snap;
struct kv_out;
struct kv_err;

enum kv_state {
	KV_ST_RECEIVED, KV_ST_PARSED, KV_ST_QUEUED, KV_ST_OFFLOAD_CACHED, KV_ST_MATCHED,
	KV_ST_CONFIRMED, KV_ST_APPLIED, KV_ST_DROPPED, KV_ST_PENDING_EXPIRED, KV_NSTATES
};

enum kv_reason {
	KV_R_NONE, KV_R_NON_FULL_ATTENTION, KV_R_BLOCK_SIZE_MISMATCH, KV_R_NO_HASHES,
	KV_R_PARENT_NOT_FOUND, KV_R_UNKNOWN_BACKEND, KV_R_UNKNOWN_HASH, KV_R_DUPLICATE,
	KV_R_DECODE_ERROR, KV_R_MAX_PENDING, KV_R_SOURCE_LIMIT, KV_R_WORKER_LIMIT, KV_R_PARTITION_LIMIT,
	KV_R_HOLDER_LIMIT, KV_R_BAD_BLOCK_SIZE, KV_R_HASHES_BEYOND_TOKENS, KV_NREASONS
};

const char *kv_state_name(enum kv_state s);
const char *kv_reason_name(enum kv_reason r);
/* "matched,dropped" or "all" or "none" into a mask of states; NULL, or
 * why not: a list flaw (optval.h) or a name that is no state. */
const char *kv_state_mask_parse(const char *s, unsigned *mask);
#define KV_LOG_DEFAULT (1u << KV_ST_MATCHED | 1u << KV_ST_CONFIRMED | 1u << KV_ST_DROPPED | 1u << KV_ST_PENDING_EXPIRED)

/* One state change, as reported. */
struct kv_report {
	enum kv_state state;
	enum kv_reason reason;
	const struct kv_wire_ctx *ctx;   /* the record it came from; NULL for expiry */
	uint64_t now;                    /* event time */
	bool has_hash;
	uint64_t hash;
	bool has_medium;
	enum kv_medium medium;
	const uint32_t *workers;         /* worker ids */
	size_t nworkers;
	uint64_t count;                  /* pending_expired: entries; received: events; applied on clear: holdings */
	uint32_t partition;
};

struct kv_match_opts {
	uint64_t pending_ttl_ns, offload_ttl_ns, content_ttl_ns;
	uint64_t max_pending;
	bool match_none;                 /* pool events target the pool subscriber's own worker */
	unsigned log_mask;               /* states worth reporting */
	void (*report)(void *arg, const struct kv_report *r);
	void *report_arg;
};

#define KV_PENDING_TTL_DEFAULT (60ull * 1000000000ull)
#define KV_OFFLOAD_TTL_DEFAULT (600ull * 1000000000ull)
#define KV_CONTENT_TTL_DEFAULT (300ull * 1000000000ull)
#define KV_MAX_PENDING_DEFAULT 1000000u

/* kvmatch(1)'s options when none is given: the TTLs, --max-pending, pool
 * events matched by host, the states it logs; no report function. */
static inline struct kv_match_opts kv_match_opts_default(void)
{
	return (struct kv_match_opts){ KV_PENDING_TTL_DEFAULT, KV_OFFLOAD_TTL_DEFAULT, KV_CONTENT_TTL_DEFAULT,
				       KV_MAX_PENDING_DEFAULT, false, KV_LOG_DEFAULT, NULL, NULL };
}
/* Cached content and stale engine hashes are swept at this event-time interval. */
#define KV_SWEEP_INTERVAL_NS (30ull * 1000000000ull)

struct kv_match_stats {
	uint64_t states[KV_NSTATES];
	uint64_t reasons[KV_NREASONS];
	uint64_t events, records, unknown_removals;
	uint64_t max_pending_expired;    /* pending entries expired by --max-pending, not by their TTL */
	uint64_t time_jumps;             /* records stamped far beyond event time, taken at it */
};

/* A matcher that applies events to ix, knowing workers by ws (both live
 * as long as it does). */
struct kv_match *kv_match_new(struct kv_index *ix, struct kv_workers *ws, const struct kv_match_opts *o);
void kv_match_delete(struct kv_match *m);
/* kv-conductor creates a partition's indexer when a worker registers: a
 * registered model and tenant is known (answered {"<tenant>": {}}) before
 * any event, with the registration's block size.  Creates those of the
 * registered workers (after any snapshot is restored). */
void kv_match_create_registered(struct kv_match *m);
/* A record arrives: advances event time, tracks its source's seq; false when
 * it is a replayed duplicate of a batch already applied (reported dropped). */
bool kv_match_record(struct kv_match *m, const struct kv_wire_ctx *ctx, size_t nevents);
/* Whether a record read from a JetStream stream (kvnats -C) lies at or
 * before the stream position reached: delivered again, it is reported
 * dropped (duplicate) and none of its lines may be applied.  Called once per
 * record, before its lines; false for a record without a position. */
bool kv_match_stream_duplicate(struct kv_match *m, const struct kv_wire_ctx *ctx, size_t nevents);
/* What a header naming the stream the records after it come from (kvnats
 * -C, kvcap(5)) says against the position reached: */
enum kv_stream_verdict {
	KV_STREAM_OK,         /* its stream, continued (or no position yet: the stream is taken as this one) */
	KV_STREAM_OTHER,      /* another stream (another name, or one made again under the name): its
			       * positions are not comparable with the one reached, and none of its records
			       * may be applied by them */
	KV_STREAM_GAP,        /* its stream, but the records start after a later position than the one
			       * reached: those in between are missing */
	KV_STREAM_UNCHECKED,  /* a position reached in a stream not named (a snapshot of a kvmatch before
			       * streams were named): taken as this one, unchecked */
};
/* The position reached and its stream, for what is said about a verdict
 * (valid until the matcher next changes them). */
struct kv_stream_reached {
	const char *stream;       /* NULL: not named; stream_len bytes, a NUL among them maybe */
	size_t stream_len;
	uint64_t created_ns;
	uint64_t position;
};
struct kv_cap_stream;
enum kv_stream_verdict kv_match_stream_begins(struct kv_match *m, const struct kv_cap_stream *st,
					      struct kv_stream_reached *reached);
/* The stream of the position reached (restored from a snapshot). */
void kv_match_set_stream(struct kv_match *m, const char *name, size_t len, uint64_t created_ns);
void kv_match_event(struct kv_match *m, const struct kv_event *e);
/* A record, or one event of it, that could not be decoded (reported
 * dropped: decode_error); further problems and events of the same record
 * (kvdecode -e lines) belong to it. */
void kv_match_bad_record(struct kv_match *m, const struct kv_wire_ctx *ctx);
/* A record that arrived but gave nothing to apply or to count as a problem
 * (kvdecode's no_events line for an undecodable record): its seq counts. */
void kv_match_lost_record(struct kv_match *m, const struct kv_wire_ctx *ctx);
/* The event time a record stamped recv_ns would be taken at, without
 * taking it: recv_ns, or the event time reached when recv_ns is a suspect
 * jump (*suspect set; kvmatch(1), Time). */
uint64_t kv_match_record_time(const struct kv_match *m, uint64_t recv_ns, bool *suspect);
/* The suspect-time rule (kvmatch(1), Time), for records and for the state
 * a snapshot holds (kvsnap(5), META): a time is suspect when it lies beyond
 * the time it is judged by (the event time reached; the latest time a
 * snapshot holds) by more than the limit, the longest of the three TTLs. */
uint64_t kv_time_jump_limit(uint64_t pending_ttl_ns, uint64_t offload_ttl_ns, uint64_t content_ttl_ns);
bool kv_time_far_after(uint64_t t, uint64_t ref, uint64_t limit);
/* The longest TTL an option takes (10^9 s), and so a snapshot holds. */
#define KV_TTL_MAX_NS (1000000000ull * 1000000000ull)
/* Runs expiry up to event time t (no-op when t is not later than now). */
void kv_match_advance(struct kv_match *m, uint64_t t);

/* What the matcher has done and holds, for summaries, metrics and
 * --diagnose (none of them per block). */
const struct kv_match_stats *kv_match_statistics(const struct kv_match *m);
/* Per source: the last seq, gaps, restarts, and the evidence for --diagnose. */
const struct kv_srcstats *kv_match_sources(const struct kv_match *m);
/* The event time reached. */
uint64_t kv_match_now(const struct kv_match *m);
const struct kv_match_opts *kv_match_options(const struct kv_match *m);
const struct kv_index *kv_match_index(const struct kv_match *m);
const struct kv_workers *kv_match_workers(const struct kv_match *m);
uint64_t kv_match_pending(const struct kv_match *m);
uint64_t kv_match_offloads(const struct kv_match *m);
uint64_t kv_match_contents(const struct kv_match *m);
/* Pending entries for worker w that expired. */
uint64_t kv_match_expired_for(const struct kv_match *m, uint32_t w);

/* The matcher's sections of a snapshot (kvsnap(5): meta, content,
 * offloads, pending entries, sources, stream position), which the matcher
 * owns (matchsnap.c): saved by the matcher through w once the index's are
 * built, restored from r once the index's are (kv_snapstate_save,
 * kv_snapstate_restore); checked in a file being loaded (false with what is
 * wrong in e, 65: kv_snapr_*) and dumped (kv_snap_dump). */
void kv_match_save(const struct kv_match *m, struct kv_snap_writer *w);
void kv_match_restore(struct kv_match *m, const struct kv_snap_restorer *r);
bool kv_match_check_snap(const struct kv_snap *s, struct kv_err *e);
void kv_match_dump_snap(const struct kv_snap *s, struct kv_out *o);

#endif

/* matchstate: the matcher's state behind index/match.h.  For the matcher's
 * own files (match.c applies events to it, matchsnap.c saves, restores,
 * checks and dumps its sections of a snapshot)
 * and for tests and fuzzers that keep a matcher inside their own structs or
 * set a state up by hand; every other caller holds a struct kv_match * from
 * kv_match_new and uses match.h's functions. */
#ifndef KV_MATCHSTATE_H
#define KV_MATCHSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/table.h"
#include "decode/srcstats.h"
#include "index/index.h"
#include "index/match.h"
#include "index/pending.h"
#include "index/workers.h"

/* Engine offloads waiting for a pool confirmation (ehash -> content). */
struct kv_offload {
	uint64_t key;
	uint64_t chain, parent, local, t;
	uint32_t src;                    /* the engine source that offloaded it: index + 1, 0 if unknown */
	bool named;                      /* the engine-hash map named chain by key when it was cached: unless
	                                  * a name changed since (kv_pmatch.renamed), its confirmation need
	                                  * not learn the name again (one probe of the map fewer); false
	                                  * for offloads a snapshot restored */
};
_Static_assert(sizeof(struct kv_offload) == 48, "named sits in the padding after src");
KV_TABLE_DEFINE(kv_offloads, struct kv_offload)

/* Content of blocks no longer held, for a later store (chain -> content). */
struct kv_content {
	uint64_t key;
	uint64_t parent, local, t;
};
KV_TABLE_DEFINE(kv_contents, struct kv_content)

struct kv_pmatch {                       /* matching state of one partition */
	struct kv_offloads offload;
	struct kv_contents content;
	bool renamed;                    /* an engine hash was learned for another chain than it named */
};

struct kv_match {
	struct kv_index *ix;
	struct kv_workers *ws;
	struct kv_match_opts o;
	struct kv_pmatch *pm;            /* parallel to ix->p */
	size_t npm;
	struct kv_pendpool pending;
	uint64_t now;                    /* event time: the largest recv_ns taken (see record_time) */
	bool has_position;               /* input came from a JetStream stream (kvnats -C): ... */
	uint64_t position;               /* ... the sequence of its last record there */
	char *stream;                    /* ... and that stream's name (its bytes, NUL included, stream_len of */
	size_t stream_len;               /*     them) and creation time, when a header named it (NULL: not */
	uint64_t stream_created;         /*     known) */
	uint64_t next_sweep;
	uint64_t jump_ns;                /* recv_ns of the last record if it was suspect, else 0 */
	struct kv_srcstats sources;      /* last seq per source, gaps, restarts, evidence for --diagnose */
	size_t cur;                      /* the source of the record being applied: index + 1, 0 if none */
	struct kv_srcdiag nodiag;        /* where evidence of no known source goes */
	uint64_t *expired_by_worker;     /* pending entries expired, per target worker */
	size_t capexpired;
	struct kv_match_stats st;
	/* scratch */
	uint64_t *local, *chain;
	size_t capblocks;
	uint32_t *targets;
	size_t captargets;
	struct kv_str last_src;          /* the source of the last engine event, and its worker */
	int64_t last_dp;
	uint32_t last_worker;
	char *srcbuf;
	size_t capsrcbuf;
};

/* kv_match_new and kv_match_delete for a matcher kept in place. */
void kv_match_init(struct kv_match *m, struct kv_index *ix, struct kv_workers *ws, const struct kv_match_opts *o);
void kv_match_free(struct kv_match *m);
/* The matching state of a partition, created on first use. */
struct kv_pmatch *kv_match_partition(struct kv_match *m, uint32_t part);
/* Adds a pending entry as it was (snapshot loading, in arrival order). */
void kv_match_restore_pending(struct kv_match *m, uint32_t part, uint64_t ehash, uint32_t worker,
			      enum kv_medium medium, uint64_t t);

#endif

/* classify: why a router's answer differs from kvquery's, from the events
 * about the blocks where they part (kvquery(1) "Classes of difference").
 * The known behaviours of kv-conductor are recognised from what
 * kv-conductor's offload/pool matching made of the last event that decided
 * the worker's holding of that block (query/evidence replays it as the
 * events go): a removal it did not apply, a pool store it left waiting, one
 * placed with an offload placeholder's content, a batch it never read; the
 * events that show it are named with their roles.  Before
 * those: lag (an event about the block the two sides cannot both have seen),
 * and after them, gaps (a source whose seqs skip).  What nothing explains
 * is unexplained, with the events all the same. */
#ifndef KV_CLASSIFY_H
#define KV_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/medium.h"
#include "index/snap.h"
#include "query/evidence.h"

enum kv_class {
	KV_CLASS_NONE = 0,
	KV_CLASS_PLACEHOLDER,          /* 1: the pool's copy keyed by the engine hash of an offload placeholder */
	KV_CLASS_GPU_REMOVAL,          /* 2: an xpu removal swallowed by an offload not yet confirmed */
	KV_CLASS_WALK_MODE,            /* 3: the other lower-tier walk (--shared-pool or not) gives the router's */
	KV_CLASS_CONFIRMATION_LOST,    /* 4: the pool's store after the offload it needed was taken by a removal */
	KV_CLASS_POOL_REMOVAL,         /* 5: a pool removal swallowed by an offload not yet confirmed */
	KV_CLASS_STALE_OWNERSHIP,      /* 6: the same, seen as another cpu_local/cpu_remote split */
	KV_CLASS_SIGNED_HASH,          /* 7: a Mooncake batch with a hash >= 2^63, dropped whole by the router */
	KV_CLASS_BY_HASH_TOKENS,       /* 8: /query_by_hash's matched_tokens in blocks */
	KV_CLASS_LAG,                  /* an event the two sides cannot both have seen yet */
	KV_CLASS_GAP,                  /* a source of the block's events skipped seqs */
	KV_CLASS_UNEXPLAINED,
	KV_NCLASSES
};
const char *kv_class_name(enum kv_class c);
/* The classes a run's exit status counts as explained. */
static inline bool kv_class_explained(enum kv_class c)
{
	return c != KV_CLASS_UNEXPLAINED && c != KV_CLASS_NONE;
}

/* One difference to explain: which side counts more blocks of which medium
 * (KV_UNKNOWN: any), for which workers (those of kv_evidence_worker), and
 * the blocks where the two counts end, positions lo to hi of the query. */
struct kv_case {
	struct kv_evidence *ev;
	const struct kv_snap *snap;    /* the view kvquery answered from (its sources' last records) */
	const uint32_t *workers;       /* candidates: a DP, or every rank of an instance */
	size_t nworkers;
	enum kv_medium medium;
	bool router_more;
	bool ownership;                /* the same blocks, another split of local and remote copies */
	const uint64_t *chains;        /* the query's chains, [0, nchains) */
	uint32_t nchains, lo, hi;
	uint64_t sent_ns;              /* wall time the router was asked */
	uint64_t window_ns;            /* --lag-window */
	bool have_events;              /* captures were read */
	bool other_walk;               /* kvquery's other lower-tier walk gives the router's value */
};

#define KV_VERDICT_ROLES 6
#define KV_VERDICT_GAPS 4
struct kv_verdict {
	enum kv_class cls;
	uint32_t block;                /* the position of the block whose events show it */
	const struct kv_evrec *events; /* that block's events, oldest first */
	size_t nevents;
	/* the events that show it, with what each did */
	struct { struct kv_evrec ev; const char *role; } roles[KV_VERDICT_ROLES];
	size_t nroles;
	uint32_t gaps[KV_VERDICT_GAPS]; /* sources with gaps */
	size_t ngaps;
	const char *note;              /* for people, when there is something to say */
};

void kv_classify(const struct kv_case *c, struct kv_verdict *v);
/* Whether an event is newer than what a snapshot saw of its source. */
bool kv_event_newer(const struct kv_evidence *ev, const struct kv_snap *s, const struct kv_evrec *r);

#endif

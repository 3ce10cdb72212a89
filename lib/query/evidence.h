/* evidence: the events about a few blocks, read from the captures a
 * snapshot was built from (kvquery(1) "Comparing with a router").  The
 * caller names the blocks it asks about by their chains (with the chains of
 * the prefixes before them) and the workers it asks about for each; one
 * pass over the captures (kvcap or event JSON lines, growing ones too:
 * their end so far) then keeps, for each block asked about:
 *
 *   - its last KV_EVIDENCE_EVENTS events (what a person reads first),
 *   - for each worker asked about and each medium, the last event that
 *     decided what the worker holds there (a store or removal by its engine,
 *     or by a pool for it), with what kv-conductor made of it: its
 *     offload/pool matching (motor/kv_conductor/src/indexer/mod.rs at
 *     5246d49: ingest_offload_blocks, ingest_pool_blocks,
 *     evict_pending_blocks) replayed as the events go, so that a removal it
 *     did not apply, a pool store it left waiting, or one it placed with an
 *     offload placeholder's content is known however long ago it came,
 *   - the last pool removal kv-conductor did not apply, and the last it
 *     never read, whoever they were for,
 *   - the sources of its events;
 *
 * and for every worker its AllBlocksCleared events and the sources of events
 * about it, for every source its seq gaps.  A Mooncake event's batch is
 * marked when it holds a hash of the top bit set (kv-conductor's signed
 * decoding drops such a batch whole: it never reaches its matching).
 * Memory is that of the blocks and workers asked about, never of the
 * captures.
 *
 * Engine hashes name blocks: those a snapshot knows (the engine hashes
 * kvmatch learned, stale ones and offloads waiting) are taken from it; one
 * it does not know (a block stored after the snapshot was written) is
 * learned in the pass from the stored event that carries its tokens and
 * whose parent is a block of the same query.  Who an event is about is
 * kvmatch's rule (index/workers: registrations when given, else the
 * worker inferred from the source, else the worker of a snapshot on its
 * host; a pool event's backend_id names the workers on that host, or the
 * pool itself). */
#ifndef KV_EVIDENCE_H
#define KV_EVIDENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "decode/event.h"
#include "index/regs.h"
#include "index/snap.h"
#include "index/workers.h"

/* Events of a block kept to be read, the last ones. */
#define KV_EVIDENCE_EVENTS 16u
/* Workers an event names, kept (a pool event names every DP of a node). */
#define KV_EVIDENCE_TARGETS 16u
/* Clears kept per worker, and sources kept per worker or block. */
#define KV_EVIDENCE_CLEARS 8u
#define KV_EVIDENCE_SOURCES 8u

enum {
	KV_EVR_SEQ = 1u << 0,          /* it has a seq */
	KV_EVR_TOKENS = 1u << 1,       /* a store carrying tokens */
	KV_EVR_SIGNED_BATCH = 1u << 2, /* Mooncake: its batch holds a hash >= 2^63 */
	KV_EVR_REPLAYED = 1u << 3,
};

/* An event about a block (or a worker's clear). */
struct kv_evrec {
	uint64_t order;                /* its place among the events of the pass, from 1 */
	uint64_t recv_ns, seq;
	uint64_t ehash;                /* the engine hash that named the block (0 for a clear) */
	int64_t dp;                    /* the batch's dp_rank, -1 when none */
	int64_t block_size;            /* -1 when the event has none */
	uint32_t src;                  /* kv_evidence_source() names it */
	uint32_t backend;              /* kv_evidence_name() of its backend_id, or UINT32_MAX */
	uint8_t type, medium, format;  /* enum kv_evtype, kv_medium, kv_format */
	uint8_t flags;                 /* KV_EVR_* */
	uint16_t ntargets;             /* workers it names; at most KV_EVIDENCE_TARGETS kept */
	uint32_t targets[KV_EVIDENCE_TARGETS];
};

/* What kv-conductor made of a deciding event. */
enum kv_fate {
	KV_FATE_APPLIED = 0,           /* as kvmatch applies it */
	KV_FATE_DROPPED,               /* never reached its matching (a Mooncake batch with a top-bit hash) */
	KV_FATE_SWALLOWED,             /* a removal that took an offload not yet confirmed, and was not applied */
	KV_FATE_PENDING,               /* a pool store with no offload nor content: it waits */
	KV_FATE_LOST,                  /* the same, after a removal took the offload it needed */
	KV_FATE_CONFIRMED,             /* a pool store placed with an offload's content */
};

struct kv_decision {
	struct kv_evrec ev;            /* the last event deciding (worker, medium) of the block */
	enum kv_fate fate;
	bool has_offload, has_removal;
	struct kv_evrec offload;       /* SWALLOWED, LOST: the offload taken; CONFIRMED: whose content placed it */
	struct kv_evrec removal;       /* LOST: the removal that took the offload */
};

/* The last pool removal kv-conductor did not apply. */
struct kv_stale {
	struct kv_evrec offload, removal;
};

struct kv_evgap {
	uint64_t gaps, missing;        /* seq jumps forward, and the seqs they skipped */
	uint64_t before_seq, last_seq, last_recv_ns; /* the last gap: the seq before it, after it, and when */
};

struct kv_evidence;

/* regs: the registrations kvmatch was given (kvquery -r), or NULL. */
struct kv_evidence *kv_evidence_new(const struct kv_regs *regs);
void kv_evidence_free(struct kv_evidence *ev);
/* Forgets the blocks, workers and everything a pass kept. */
void kv_evidence_reset(struct kv_evidence *ev);
/* The workers a snapshot names, so that events are about them. */
void kv_evidence_add_workers(struct kv_evidence *ev, const struct kv_snap *s);
/* The worker (instance_id, dp_rank) a snapshot named, or UINT32_MAX. */
uint32_t kv_evidence_worker(struct kv_evidence *ev, const char *instance, size_t len, int64_t dp);
const struct kv_worker *kv_evidence_worker_at(const struct kv_evidence *ev, uint32_t w);
/* A block asked about (want) or of a prefix before one, by its chain. */
void kv_evidence_block(struct kv_evidence *ev, uint64_t chain, bool want);
/* A worker whose deciding events of that (wanted) block are to be kept. */
void kv_evidence_watch(struct kv_evidence *ev, uint64_t chain, uint32_t worker);
/* The engine hashes a snapshot's partition knows for the blocks asked
 * about; false with e set (65) when its engine hashes cannot be read. */
bool kv_evidence_learn(struct kv_evidence *ev, struct kv_snap *s, uint32_t part, struct kv_err *e);
/* One pass over the captures.  One that cannot be opened is an error
 * (66, in e); a record that cannot be decoded is left out and counted
 * (kv_evidence_bad); one cut at the end of a file ends it (a live capture
 * being written is). */
bool kv_evidence_scan(struct kv_evidence *ev, char *const *files, size_t nfiles, struct kv_err *e);
uint64_t kv_evidence_bad(const struct kv_evidence *ev, const char **first);

/* What the pass kept of the block of chain. */
const struct kv_evrec *kv_evidence_events(struct kv_evidence *ev, uint64_t chain, size_t *n);
const uint64_t *kv_evidence_ehashes(const struct kv_evidence *ev, uint64_t chain, size_t *n);
/* NULL when no event decided (worker, medium) of the block. */
const struct kv_decision *kv_evidence_decision(const struct kv_evidence *ev, uint64_t chain, uint32_t worker,
					       enum kv_medium m);
const struct kv_stale *kv_evidence_stale(const struct kv_evidence *ev, uint64_t chain);
/* The last pool removal of the block kv-conductor never read (a Mooncake batch with a top-bit hash), or NULL. */
const struct kv_evrec *kv_evidence_dropped_removal(const struct kv_evidence *ev, uint64_t chain);
const uint32_t *kv_evidence_block_sources(const struct kv_evidence *ev, uint64_t chain, size_t *n);
/* A worker's clears (oldest first) and the sources of events about it. */
const struct kv_evrec *kv_evidence_clears(struct kv_evidence *ev, uint32_t w, size_t *n);
const uint32_t *kv_evidence_worker_sources(const struct kv_evidence *ev, uint32_t w, size_t *n);
/* A source's name and gaps; a backend_id's name (NULL for UINT32_MAX). */
const char *kv_evidence_source(const struct kv_evidence *ev, uint32_t src, size_t *len);
const struct kv_evgap *kv_evidence_gaps(const struct kv_evidence *ev, uint32_t src);
/* Sources of the pass, and whether one is a pool's. */
size_t kv_evidence_nsources(const struct kv_evidence *ev);
bool kv_evidence_pool_source(const struct kv_evidence *ev, uint32_t src);
const char *kv_evidence_name(const struct kv_evidence *ev, uint32_t id, size_t *len);
/* Whether an event is an engine's offload without tokens (block_size 0 or none). */
bool kv_evrec_placeholder(const struct kv_evrec *r);

#endif

/* pending: the pending pool of two-phase matching (match.c), pool events
 * for a hash whose content no engine offload has named yet.  An entry is a
 * (partition, engine hash, worker, medium) and the event time it arrived.
 * The entries of every partition live in one ring in arrival order, so that
 * expiry and --max-pending take the oldest of them all; the entries of one
 * engine hash in one partition are chained, so that the offload that names
 * it finds them at once.  Entries leave when matched, removed by a pool,
 * cleared, or expired; the ring drops them from its front (and halves when
 * mostly empty) as expiry reaches them. */
#ifndef KV_PENDING_H
#define KV_PENDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/table.h"
#include "decode/medium.h"

struct kv_pending {
	uint64_t ehash, t;
	uint64_t next;                   /* sequence number of the next entry of this hash, or UINT64_MAX */
	uint32_t worker;
	uint16_t part;                   /* its partition */
	uint8_t medium;
	bool alive;
};

/* The chain of one engine hash in one partition. */
struct kv_pend_head {
	uint64_t key;                    /* engine hash */
	uint64_t first, last;            /* sequence numbers */
	uint32_t count;
};
KV_TABLE_DEFINE(kv_pend_heads, struct kv_pend_head)

struct kv_pendpool {
	struct kv_pending *ring;
	size_t cap;
	uint64_t head, tail;             /* sequence numbers: [head, tail) are in the ring */
	uint64_t alive;
	struct kv_pend_heads *heads;     /* per partition: its chains, by engine hash */
	size_t nparts;
	uint32_t *workers;               /* the entries last taken out (struct kv_pend_group) */
	uint8_t *media;
	size_t captaken;
};

/* Entries of one engine hash taken out together: their workers and media,
 * in arrival order, valid until the pool next changes. */
struct kv_pend_group {
	uint32_t part;
	uint64_t ehash;
	bool by_ttl;                     /* expired: by the TTL, or else by the bound on entries */
	size_t n;
	const uint32_t *workers;
	const uint8_t *media;
};

/* A zeroed kv_pendpool is an empty pool. */
void kv_pending_free(struct kv_pendpool *pp);

static inline uint64_t kv_pending_count(const struct kv_pendpool *pp)
{
	return pp->alive;
}

/* Whether entries of ehash wait in partition part (once per pool event's hash: inline). */
static inline bool kv_pending_waits(const struct kv_pendpool *pp, uint32_t part, uint64_t ehash)
{
	return part < pp->nparts && kv_pend_heads_find_const(&pp->heads[part], ehash) != NULL;
}

/* Adds an entry stamped t; false (nothing added) when worker waits for
 * ehash in that medium already: the first arrival's time stays. */
bool kv_pending_add(struct kv_pendpool *pp, uint32_t part, uint64_t ehash, uint32_t worker, enum kv_medium medium,
		    uint64_t t);
/* Takes out every entry of ehash in partition part, into g (g->n 0: none). */
void kv_pending_take(struct kv_pendpool *pp, uint32_t part, uint64_t ehash, struct kv_pend_group *g);
/* Takes out worker's entry of ehash in medium; false when there was none. */
bool kv_pending_remove(struct kv_pendpool *pp, uint32_t part, uint64_t ehash, uint32_t worker,
		       enum kv_medium medium);
/* Takes out the entries of partition part in medium whose worker is one of
 * workers[0..n); returns how many. */
size_t kv_pending_clear(struct kv_pendpool *pp, uint32_t part, enum kv_medium medium, const uint32_t *workers,
			size_t n);
/* At event time now, takes out the next group of entries to expire, into g:
 * when the oldest entry is ttl old (stamped at or before now - ttl), the
 * entries of its hash as old; else, when more than max entries wait, the
 * oldest entry and those of its hash stamped no later.  false when none is
 * due.  Called until false, it brings the pool within both bounds. */
bool kv_pending_expire(struct kv_pendpool *pp, uint64_t now, uint64_t ttl, uint64_t max, struct kv_pend_group *g);

/* The entries in arrival order (snapshots): the first waiting one at or
 * after sequence number *seq, *seq set to it; NULL after the last.
 *     for (uint64_t seq = 0; (p = kv_pending_next(pp, &seq)); seq++) */
static inline const struct kv_pending *kv_pending_next(const struct kv_pendpool *pp, uint64_t *seq)
{
	if (*seq < pp->head)
		*seq = pp->head;
	for (; *seq < pp->tail; ++*seq) {
		const struct kv_pending *p = &pp->ring[*seq & (pp->cap - 1)];
		if (p->alive)
			return p;
	}
	return NULL;
}

#endif

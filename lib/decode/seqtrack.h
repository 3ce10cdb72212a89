/* seqtrack: per-publisher sequence accounting (kvsub(1) "Sequence numbers").
 * seq advances by one per batch; a jump forward is a gap with missing
 * batches, a step back (or a repeat) is a publisher restart.  Shared by
 * kvsub (live), kvdecode --stats and kvmatch (from captures). */
#ifndef KV_SEQTRACK_H
#define KV_SEQTRACK_H

#include <stdbool.h>
#include <stdint.h>

enum kv_seq_event { KV_SEQ_FIRST, KV_SEQ_NEXT, KV_SEQ_GAP, KV_SEQ_RESTART };

struct kv_seqtrack {
	bool seen;
	uint64_t last;
	uint64_t gaps, missing, restarts;
};

/* What a missing seq stands for, for the statistics: a batch, except from a
 * Mooncake master, which skips one seq per event its queue dropped
 * (per_event): "missing" or "missing events". */
const char *kv_seq_missing_words(bool per_event);

/* Accounts for seq and makes it the last one seen. */
enum kv_seq_event kv_seq_observe(struct kv_seqtrack *t, uint64_t seq);

#endif

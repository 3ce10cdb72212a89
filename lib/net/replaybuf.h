/* replaybuf: the batches a publisher keeps to answer vLLM's replay requests
 * (kvsub(1) "Replay"), one buffer per kvpub PUB socket.  Owns copies of the
 * last `steps` batches published, [topic, seq, payload], at most max_bytes
 * of topic and payload in all, oldest forgotten first, in a ring that grows
 * up to steps entries.  Their seqs always rise: a seq that does not (a
 * publisher restart, a new kvpub --loop pass) empties the buffer first, as
 * a restarted vLLM's is empty.  The replay server (publish) answers a
 * request for start_seq with the kept batches of seq >= start_seq. */
#ifndef KV_REPLAYBUF_H
#define KV_REPLAYBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/kvcap.h"

/* One kept batch: topic and payload in one allocation. */
struct kv_replaybuf_entry {
	uint64_t seq;
	uint8_t *bytes;
	size_t topic_n, payload_n;
};

struct kv_replaybuf {
	size_t steps, max_bytes;
	/* a ring of n entries from head, in kept[alloc] */
	struct kv_replaybuf_entry *kept;
	size_t alloc, head, n, bytes;
	bool seen_seq;
	uint64_t last_seq;
};

/* steps 0 keeps nothing (but still follows the seqs). */
void kv_replaybuf_init(struct kv_replaybuf *b, size_t steps, size_t max_bytes);
void kv_replaybuf_free(struct kv_replaybuf *b);
/* Keeps a copy of a published batch.  A batch larger than max_bytes alone
 * is not kept, and the buffer keeps what it had. */
void kv_replaybuf_keep(struct kv_replaybuf *b, uint64_t seq, struct kv_frame topic, struct kv_frame payload);

static inline size_t kv_replaybuf_count(const struct kv_replaybuf *b)
{
	return b->n;
}

/* The i-th oldest kept batch, i < kv_replaybuf_count(b). */
static inline const struct kv_replaybuf_entry *kv_replaybuf_at(const struct kv_replaybuf *b, size_t i)
{
	return &b->kept[(b->head + i) % b->alloc];
}

static inline struct kv_frame kv_replaybuf_topic(const struct kv_replaybuf_entry *e)
{
	return (struct kv_frame){ e->bytes, e->topic_n };
}

static inline struct kv_frame kv_replaybuf_payload(const struct kv_replaybuf_entry *e)
{
	return (struct kv_frame){ e->bytes + e->topic_n, e->payload_n };
}

#endif

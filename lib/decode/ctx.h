/* ctx: what a record says about the payload it carries (source, topic,
 * receive time, seq, replay, stream position), kept beside the events
 * decoded from it.  Decoders fill it from capture records or event lines;
 * kvmatch accounts records by it.  It names no wire format: events and the
 * matcher need no MessagePack header. */
#ifndef KV_CTX_H
#define KV_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include "decode/event.h"

struct kv_wire_ctx {
	struct kv_str src, topic;
	uint64_t recv_ns;
	bool has_seq;
	uint64_t seq;
	bool replayed;
	bool has_position;      /* the record's JetStream stream sequence (kvnats -C) */
	uint64_t position;
};

/* The context an event line carries (no stream position: only capture
 * records have one). */
static inline struct kv_wire_ctx kv_wire_ctx_of(const struct kv_event *e)
{
	return (struct kv_wire_ctx){ .src = e->src, .topic = e->topic, .recv_ns = e->recv_ns, .has_seq = e->has_seq,
				     .seq = e->seq, .replayed = e->replayed };
}

#endif

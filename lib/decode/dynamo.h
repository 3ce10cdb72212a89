/* dynamo: NVIDIA Dynamo's KV events as its workers send them to its router
 * (kvdecode(1) "Dynamo's event plane"): a RouterEvent {worker_id,
 * storage_tier, residency_domain, event: {event_id, data, dp_rank}}, data
 * one of stored {parent_hash, start_position, blocks: [{block_hash,
 * tokens_hash, mm_extra_info}]}, removed {block_hashes} and cleared.
 * It comes three ways: on the event plane (NATS core or ZMQ) as
 * MessagePack with named fields inside an EventEnvelope {topic,
 * publisher_id, sequence, published_at, payload}, on ZMQ behind a 5-byte
 * frame header (version 1, payload length as u32 big-endian); and on the
 * JetStream queue as JSON.  Every form is accepted wherever it comes. */
#ifndef KV_DYNAMO_H
#define KV_DYNAMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/wire.h"

#include <msgpack.h>

/* Whether payload bytes are Dynamo's before any MessagePack is read: a
 * framed envelope (first byte 1, then the length of the rest) or JSON (a
 * '{', which no MessagePack batch starts with). */
bool kv_dynamo_is_bytes(const uint8_t *p, size_t n);
/* Whether a decoded payload is a Dynamo map: a RouterEvent (worker_id and
 * event) or an envelope (publisher_id and payload). */
bool kv_dynamo_is_object(const msgpack_object *o);
/* Decode a payload of either kind into w's events (a RouterEvent is one
 * event).  false: the payload failed as a whole (w->error). */
bool kv_dynamo_decode_bytes(struct kv_wire *w, const struct kv_event *base, const uint8_t *p, size_t n);
bool kv_dynamo_decode_object(struct kv_wire *w, const struct kv_event *base, const msgpack_object *o);

#endif

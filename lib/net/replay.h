/* replay: vLLM's replay protocol (kvsub(1) "Replay"), both ends.
 * A subscriber sends ["", start_seq] to the publisher's ROUTER; the publisher
 * answers one message per buffered batch with seq >= start_seq, shaped
 * ["", seq, payload] (vLLM up to 0.25) or ["", topic, seq, payload] (0.26+),
 * and ends with seq ff..ff and an empty payload. */
#ifndef KV_REPLAY_H
#define KV_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/kvcap.h"

#define KV_REPLAY_END UINT64_MAX
/* TensorRT-LLM's replay socket, asked for batches it no longer holds,
 * answers with a snapshot instead: this seq (-2 as an i64), its payload the
 * version S (8 bytes big-endian), then a clear and its stores, every batch
 * numbered S, then the end marker. */
#define KV_REPLAY_SNAPSHOT (UINT64_MAX - 1)

enum kv_replay_shape { KV_REPLAY_V025 = 0, KV_REPLAY_V026 = 1 };

/* A reply as read from the wire: kind END, BATCH, SNAPSHOT (the header of
 * TensorRT-LLM's snapshot), or BAD (malformed). */
enum kv_replay_kind { KV_REPLAY_BATCH, KV_REPLAY_END_MARK, KV_REPLAY_SNAPSHOT_MARK, KV_REPLAY_BAD };

struct kv_replay_reply {
	enum kv_replay_kind kind;
	bool has_topic;
	struct kv_frame topic, payload;
	uint64_t seq;
};

/* frames as received by a DEALER (the empty delimiter first). */
void kv_replay_parse_reply(const struct kv_frame *frames, size_t n, struct kv_replay_reply *r);
/* Request frames: ["", start_seq] into req[2], with seq bytes in buf. */
void kv_replay_request(uint64_t start_seq, uint8_t buf[8], struct kv_frame req[2]);
/* A request as read by a ROUTER after the identity frame: false if malformed. */
bool kv_replay_parse_request(const struct kv_frame *frames, size_t n, uint64_t *start_seq);
/* The frames of one reply after the identity, in the given shape, into out[]
 * (seq bytes in buf); returns the frame count, 3 or 4.  The end marker is
 * seq KV_REPLAY_END with an empty payload and, in the 0.26 shape, an empty
 * topic, as vLLM sends it. */
size_t kv_replay_reply(enum kv_replay_shape shape, struct kv_frame topic, uint64_t seq,
		       struct kv_frame payload, uint8_t buf[8], struct kv_frame out[4]);

#endif

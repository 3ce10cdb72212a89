/* vllm: the vLLM publisher's events (vllm/distributed/kv_events.py):
 * BlockStored, BlockRemoved and AllBlocksCleared, as arrays (tag first, the
 * fields in the order of their dataclass) or as maps with a "type".  The
 * batch around them is decode/wire.c's. */
#ifndef KV_VLLM_H
#define KV_VLLM_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>

#include "decode/wire.h"

/* Whether a map is a vLLM event rather than a pool publisher's. */
bool kv_vllm_is_map_event(const msgpack_object *o);
/* Decodes event k of a batch into w (kept, dropped with an issue, or
 * counted as ignored when its tag is none of vLLM's). */
void kv_vllm_event(struct kv_wire *w, const struct kv_event *batch, size_t k, const msgpack_object *o);

#endif

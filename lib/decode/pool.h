/* pool: the KV pools' events (Ascend memcache's MetaService, the Mooncake
 * master; kvdecode(1) "Publishers"): maps with an event_type, the block's
 * hashes as seq_hashes and block_hashes (or only an object key), and the
 * pool's strings and numbers (backend_id, model_name, dp_rank, group_id ...).
 * The batch around them is decode/wire.c's. */
#ifndef KV_POOL_H
#define KV_POOL_H

#include <msgpack.h>
#include <stddef.h>

#include "decode/wire.h"

/* Decodes event k of a batch into w (kept, dropped with an issue, or
 * counted as ignored when its type is none of stored, removed, cleared). */
void kv_pool_event(struct kv_wire *w, const struct kv_event *batch, size_t k, const msgpack_object *o);

#endif

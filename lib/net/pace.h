/* pace: when each record of a capture is due when it is played back
 * (kvpub --speed).  A record stamped recv_ns is due at
 *     base_mono + (recv_ns - base_recv) / speed
 * on the monotonic clock, where the time base (base_recv, base_mono) is the
 * first record played and the moment it was due.  Times therefore never
 * drift however late single records go out.  A record stamped earlier than
 * the one before it is simply due at once (kvsub writes replayed records
 * with their later arrival time, ahead of the message that was held for
 * them); one stamped before the time base starts a new time base, as does
 * kv_pace_rebase (a new capture in a concatenation, a new --loop pass):
 * the next record then goes out right after the previous one, without the
 * pause that separated the captures. */
#ifndef KV_PACE_H
#define KV_PACE_H

#include <stdbool.h>
#include <stdint.h>

struct kv_pace {
	double speed;           /* recorded seconds per played second; 0: no waiting */
	bool based;
	uint64_t base_recv;     /* recv_ns of the record that set the time base */
	uint64_t base_mono;     /* the monotonic time it was due */
	uint64_t last_due;      /* latest due time handed out */
};

/* speed 0 means as fast as possible: every record is due at once. */
void kv_pace_init(struct kv_pace *p, double speed);
/* The next record starts a new time base. */
void kv_pace_rebase(struct kv_pace *p);
/* The monotonic time (ns) at which a record stamped recv_ns is due, now being
 * the current monotonic time; a value <= now means at once. */
uint64_t kv_pace_due(struct kv_pace *p, uint64_t recv_ns, uint64_t now);

#endif

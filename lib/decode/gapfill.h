/* gapfill: one publisher's messages kept in seq order without duplicates
 * while a gap in its seqs is filled by replay (kvsub, kvsub(1) "Replay").
 * Owns the source's seq accounting; the messages held behind a replay,
 * oldest first; the batches a replay brings (only consecutive ones within
 * the seqs asked for, bounded like what is held); which of them fill the
 * gap, written in seq order before what was held; and the live copies of
 * replayed batches that arrive after the replay, dropped as duplicates.
 * It knows no sockets: its owner passes in what arrives, and writes
 * records, asks for replays and hangs them up through kv_gapfill_io. */
#ifndef KV_GAPFILL_H
#define KV_GAPFILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/kvcap.h"
#include "decode/seqtrack.h"

struct kv_gapfill_io {
	void *ctx;
	/* Writes a message in its turn: flags 0 for a live one,
	 * KV_CAP_FLAG_REPLAYED for one a replay brought; parts is its split
	 * (kv_msg_split), without a seq for messages that carry none. */
	void (*write)(void *ctx, uint64_t recv_ns, uint64_t flags, const struct kv_frame *frames, size_t n,
		      const struct kv_msg_parts *parts);
	/* Asks the publisher's replay socket for seqs [lo, hi) (hi UINT64_MAX:
	 * all it has); false when that cannot be done. */
	bool (*ask)(void *ctx, uint64_t lo, uint64_t hi);
	/* The replay asked for is over: no more of its batches are wanted. */
	void (*hang_up)(void *ctx);
};

struct kv_gapfill_msg;

struct kv_gapfill {
	bool may_ask;                /* set by the owner: it has a replay socket to ask */
	size_t max_held, max_bytes;  /* past either, what is held or replayed, the replay ends */
	struct kv_seqtrack seq;
	uint64_t replayed, duplicates;
	/* the replay running: seqs [lo, hi) asked for, the batches it brought */
	bool replaying;
	uint64_t lo, hi;
	struct kv_gapfill_msg *rep;
	size_t nrep, caprep, rep_bytes;
	/* live messages held behind it, oldest at head */
	struct kv_gapfill_msg *held;
	size_t head, nheld, capheld, held_bytes;
	uint64_t no_replay_at;       /* a gap ending here was already replayed once */
	bool dedup;                  /* seqs dedup_lo..dedup_upto came by replay: live copies are duplicates */
	uint64_t dedup_lo, dedup_upto;
	uint8_t *topic;              /* last live topic, for batches a replay brings without one */
	size_t topic_len;
};

void kv_gapfill_init(struct kv_gapfill *g, size_t max_held, size_t max_bytes);
void kv_gapfill_free(struct kv_gapfill *g);

/* A live message: written now, or held while a replay runs.  One that
 * reveals a gap asks for a replay of the gap (once per gap) and waits
 * behind it. */
void kv_gapfill_live(struct kv_gapfill *g, const struct kv_gapfill_io *io, uint64_t recv_ns,
		     const struct kv_frame *frames, size_t n);
/* Asks for seqs [lo, hi) (kvsub --replay-from); false when may_ask is not
 * set, a replay runs already or io->ask failed. */
bool kv_gapfill_ask(struct kv_gapfill *g, const struct kv_gapfill_io *io, uint64_t lo, uint64_t hi);
/* A batch the replay brought, with its topic or NULL (the 0.25 shape:
 * the last live topic is used).  True when that ended the replay (it
 * brought as much as may be held). */
bool kv_gapfill_replayed(struct kv_gapfill *g, const struct kv_gapfill_io *io, uint64_t recv_ns, uint64_t seq,
			 const struct kv_frame *topic, struct kv_frame payload);
/* Ends the replay running (its end marker came, or its time is up):
 * writes the batches that fill the gap, then what waited behind it. */
void kv_gapfill_end_replay(struct kv_gapfill *g, const struct kv_gapfill_io *io);
/* No more replays: ends the one running and writes everything held. */
void kv_gapfill_finish(struct kv_gapfill *g, const struct kv_gapfill_io *io);

static inline bool kv_gapfill_replaying(const struct kv_gapfill *g)
{
	return g->replaying;
}

#endif

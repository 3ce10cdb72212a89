/* gapfill: one publisher's messages kept in seq order without duplicates
 * while a gap in its seqs is filled by replay (kvsub, kvsub(1) "Replay").
 * Owns the source's seq accounting; the messages held behind a replay,
 * oldest first; the batches replays bring (only those within the seqs
 * asked for, rising within one answer, bounded like what is held); the
 * asks again, from the first seq still missing, while a gap remains and
 * each answer brings something new (vLLM's replay socket drops replies
 * when its reader lags); which batches fill the gap, written in seq order
 * before what was held; and the live copies of replayed batches that
 * arrive after the replay, dropped as duplicates.
 * It knows no sockets and no clock: its owner passes in what arrives, ends
 * an answer that takes too long, and writes records, asks for replays and
 * hangs them up through kv_gapfill_io. */
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
	 * all it has); false when that cannot be done.  kv_gapfill_asks says
	 * which ask of the gap it is (1: the first). */
	bool (*ask)(void *ctx, uint64_t lo, uint64_t hi);
	/* The ask running is over: no more of its answer is wanted. */
	void (*hang_up)(void *ctx);
};

struct kv_gapfill_msg;

struct kv_gapfill {
	bool may_ask;                /* set by the owner: it has a replay socket to ask */
	unsigned max_asks;           /* set by the owner: asks per gap, the first included (init: 1) */
	size_t max_held, max_bytes;  /* past either, what is held or replayed, the replay ends */
	struct kv_seqtrack seq;      /* of the records written: last, missing, restarts */
	uint64_t gaps;               /* runs of seqs found missing, whether a replay filled them or not */
	uint64_t replayed, duplicates;
	/* the replay running: seqs [lo, hi) to recover, one ask at a time */
	bool replaying;
	uint64_t lo, hi;
	uint64_t from;               /* where the ask running starts */
	unsigned asks;               /* asks made for this replay */
	bool counted;                /* its missing run is counted in gaps */
	bool answered;               /* the ask running had a reply from `from` on ... */
	uint64_t last_reply;         /* ... the last, which the next must exceed */
	uint64_t held_from;          /* the publisher holds nothing before its first reply */
	bool brought;                /* the ask running brought a batch not had before */
	/* the batches brought, not written yet: rep[0, nsorted) in seq order,
	 * then those of the ask running (rising, none of the former) */
	struct kv_gapfill_msg *rep;
	size_t nrep, nsorted, caprep, rep_bytes;
	/* live messages held behind it, oldest at head */
	struct kv_gapfill_msg *held;
	size_t head, nheld, capheld, held_bytes;
	bool gap_at_set;             /* the live message of seq gap_at has its gap counted (and asked for) */
	uint64_t gap_at;
	bool dedup;                  /* seqs dedup_lo..dedup_upto came by replay: live copies are duplicates */
	uint64_t dedup_lo, dedup_upto;
	uint8_t *topic;              /* last live topic, for batches a replay brings without one */
	size_t topic_len;
};

void kv_gapfill_init(struct kv_gapfill *g, size_t max_held, size_t max_bytes);
void kv_gapfill_free(struct kv_gapfill *g);

/* A live message: written now, or held while a replay runs.  One that
 * reveals a gap counts it, asks for a replay of the gap (once per gap) and
 * waits behind it. */
void kv_gapfill_live(struct kv_gapfill *g, const struct kv_gapfill_io *io, uint64_t recv_ns,
		     const struct kv_frame *frames, size_t n);
/* Asks for seqs [lo, hi) (kvsub --replay-from); false when may_ask is not
 * set, a replay runs already or io->ask failed. */
bool kv_gapfill_ask(struct kv_gapfill *g, const struct kv_gapfill_io *io, uint64_t lo, uint64_t hi);
/* A batch the replay brought, with its topic or NULL (the 0.25 shape:
 * the last live topic is used).  True when that ended the ask running (a
 * reply at or past the end of what was asked: vLLM answers in seq order,
 * so everything before it was sent; or the replay brought as much as may
 * be held), whether or not another ask followed. */
bool kv_gapfill_replayed(struct kv_gapfill *g, const struct kv_gapfill_io *io, uint64_t recv_ns, uint64_t seq,
			 const struct kv_frame *topic, struct kv_frame payload);
/* Ends the ask running (its end marker came, or nothing came for too
 * long): writes the batches that follow the last seq written without a
 * hole, then asks again from the first seq still missing when a gap
 * remains before the live message that waits, this ask brought something
 * new and max_asks allows; else writes all it brought, then what waited. */
void kv_gapfill_end_replay(struct kv_gapfill *g, const struct kv_gapfill_io *io);
/* Ends the replay running without asking again (its time is up). */
void kv_gapfill_give_up(struct kv_gapfill *g, const struct kv_gapfill_io *io);
/* No more replays: ends the one running and writes everything held. */
void kv_gapfill_finish(struct kv_gapfill *g, const struct kv_gapfill_io *io);

static inline bool kv_gapfill_replaying(const struct kv_gapfill *g)
{
	return g->replaying;
}

/* Which ask of the replay running this is: 1 for the first. */
static inline unsigned kv_gapfill_asks(const struct kv_gapfill *g)
{
	return g->asks;
}

#endif

#include "net/gapfill.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

/* A message kept in memory: held behind a replay, or brought by one.  Its
 * frames and their bytes are one allocation, so that a small message costs
 * little whatever KV_CAP_MAX_FRAMES is. */
struct kv_gapfill_msg {
	uint64_t recv_ns;
	struct kv_msg_parts parts;   /* into bytes */
	size_t nframes;
	struct kv_frame *frames;     /* nframes, then their bytes */
};

void kv_gapfill_init(struct kv_gapfill *g, size_t max_held, size_t max_bytes)
{
	memset(g, 0, sizeof *g);
	g->max_held = max_held;
	g->max_bytes = max_bytes;
	g->max_asks = 1;
}

static size_t frame_bytes(const struct kv_frame *frames, size_t n)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += frames[i].n;
	return total;
}

static void store_copy(struct kv_gapfill_msg *s, uint64_t recv_ns, const struct kv_frame *frames, size_t n)
{
	s->recv_ns = recv_ns;
	s->nframes = n;
	s->frames = kv_xmalloc(n * sizeof *s->frames + frame_bytes(frames, n) + 1);
	uint8_t *bytes = (uint8_t *)(s->frames + n);
	for (size_t i = 0; i < n; i++) {
		if (frames[i].n)
			memcpy(bytes, frames[i].p, frames[i].n);
		s->frames[i].p = bytes;
		s->frames[i].n = frames[i].n;
		bytes += frames[i].n;
	}
	kv_msg_split(s->frames, n, &s->parts);
}

static void free_stored(struct kv_gapfill_msg *s)
{
	free(s->frames);
	s->frames = NULL;
}

void kv_gapfill_free(struct kv_gapfill *g)
{
	for (size_t j = 0; j < g->nheld; j++)
		free_stored(&g->held[g->head + j]);
	for (size_t j = 0; j < g->nrep; j++)
		free_stored(&g->rep[j]);
	free(g->held);
	free(g->rep);
	free(g->topic);
}

static void remember_topic(struct kv_gapfill *g, struct kv_frame topic)
{
	if (topic.n == g->topic_len && (topic.n == 0 || memcmp(topic.p, g->topic, topic.n) == 0))
		return;
	free(g->topic);
	g->topic = kv_xmalloc(topic.n ? topic.n : 1);
	if (topic.n)
		memcpy(g->topic, topic.p, topic.n);
	g->topic_len = topic.n;
}

static void count_gap(struct kv_gapfill *g)
{
	if (!g->counted)
		g->gaps++;
	g->counted = true;
}

/* ---- asking ---- */

static bool ask_from(struct kv_gapfill *g, const struct kv_gapfill_io *io, uint64_t from)
{
	g->from = from;
	g->asks++;
	g->answered = g->brought = false;
	g->held_from = from;
	return io->ask(io->ctx, from, g->hi);
}

static bool start_replay(struct kv_gapfill *g, const struct kv_gapfill_io *io, uint64_t lo, uint64_t hi,
			 bool counted)
{
	if (!g->may_ask || g->replaying)
		return false;
	g->lo = lo;
	g->hi = hi;
	g->asks = 0;
	g->counted = counted;
	if (!ask_from(g, io, lo))
		return false;
	g->replaying = true;
	return true;
}

bool kv_gapfill_ask(struct kv_gapfill *g, const struct kv_gapfill_io *io, uint64_t lo, uint64_t hi)
{
	return start_replay(g, io, lo, hi, false);
}

/* ---- writing in order ---- */

/* Delivers one message in order; false when it must wait behind a replay
 * (the caller keeps it).  The live copy of a batch that a replay already
 * brought can arrive after the replay ended (two connections): until the
 * first live seq beyond the replayed range, such a seq is a duplicate, not
 * a publisher restart.  A jump forward is a gap, counted when first seen,
 * whatever a replay then recovers of it. */
static bool deliver(struct kv_gapfill *g, const struct kv_gapfill_io *io, uint64_t recv_ns,
		    const struct kv_frame *frames, size_t n)
{
	if (g->replaying)
		return false;
	struct kv_msg_parts parts;
	kv_msg_split(frames, n, &parts);
	remember_topic(g, parts.topic);
	if (!parts.has_seq) {
		/* [topic, payload] and bare payloads carry no seq: nothing to order */
		io->write(io->ctx, recv_ns, 0, frames, n, &parts);
		return true;
	}
	if (g->dedup) {
		if (parts.seq >= g->dedup_lo && parts.seq <= g->dedup_upto) {
			g->duplicates++;
			return true;
		}
		g->dedup = false;
	}
	bool counted = g->gap_at_set && g->gap_at == parts.seq;
	if (g->seq.seen && parts.seq > g->seq.last + 1 && !counted) {
		g->gaps++;
		g->gap_at_set = true;
		g->gap_at = parts.seq;
		if (start_replay(g, io, g->seq.last + 1, parts.seq, true))
			return false;
	}
	g->gap_at_set = false;
	kv_seq_observe(&g->seq, parts.seq);
	io->write(io->ctx, recv_ns, 0, frames, n, &parts);
	return true;
}

static void drain_held(struct kv_gapfill *g, const struct kv_gapfill_io *io)
{
	while (g->nheld > 0) {
		struct kv_gapfill_msg *s = &g->held[g->head];
		if (!deliver(g, io, s->recv_ns, s->frames, s->nframes))
			return;
		g->held_bytes -= frame_bytes(s->frames, s->nframes);
		free_stored(s);
		g->head++;
		g->nheld--;
	}
	g->head = 0;
}

static void hold(struct kv_gapfill *g, uint64_t recv_ns, const struct kv_frame *frames, size_t n)
{
	if (g->head > 0 && g->head + g->nheld == g->capheld) {
		memmove(g->held, g->held + g->head, g->nheld * sizeof *g->held);
		g->head = 0;
	}
	g->held = kv_xgrow(g->held, &g->capheld, g->head + g->nheld + 1, sizeof *g->held);
	store_copy(&g->held[g->head + g->nheld], recv_ns, frames, n);
	g->nheld++;
	g->held_bytes += frame_bytes(frames, n);
}

/* The seqs a replay is trusted for end before this one: the seq whose gap
 * it fills, or (--replay-from asks for no end) the first live seq that
 * waited behind it; what the live stream brings is never taken from a
 * replay, which could drop it later as a duplicate.  UINT64_MAX while no
 * live seq shows where the publisher is. */
static uint64_t replay_end(const struct kv_gapfill *g)
{
	const struct kv_gapfill_msg *first = g->nheld ? &g->held[g->head] : NULL;
	return first && first->parts.has_seq && first->parts.seq < g->hi ? first->parts.seq : g->hi;
}

static void write_replayed(struct kv_gapfill *g, const struct kv_gapfill_io *io, struct kv_gapfill_msg *s)
{
	uint64_t seq = s->parts.seq;
	kv_seq_observe(&g->seq, seq);
	g->replayed++;
	io->write(io->ctx, s->recv_ns, KV_CAP_FLAG_REPLAYED, s->frames, s->nframes, &s->parts);
	if (!g->dedup)
		g->dedup_lo = seq;
	g->dedup = true;
	g->dedup_upto = seq;
	free_stored(s);
}

/* Drops rep[k, nrep). */
static void drop_rep_from(struct kv_gapfill *g, size_t k)
{
	for (size_t i = k; i < g->nrep; i++) {
		g->rep_bytes -= frame_bytes(g->rep[i].frames, g->rep[i].nframes);
		free_stored(&g->rep[i]);
	}
	g->nrep = g->nsorted = k < g->nrep ? k : g->nrep;
}

/* Drops rep[0, k), written already. */
static void shift_rep(struct kv_gapfill *g, size_t k)
{
	if (k < g->nrep) /* rep is NULL while nothing was ever held */
		memmove(g->rep, g->rep + k, (g->nrep - k) * sizeof *g->rep);
	g->nrep -= k;
	g->nsorted = g->nrep;
}

static int by_seq(const void *a, const void *b)
{
	const struct kv_gapfill_msg *x = a, *y = b;
	return x->parts.seq < y->parts.seq ? -1 : x->parts.seq > y->parts.seq;
}

/* Sorts what the asks brought and keeps only what the replay is trusted
 * for: below replay_end, and, while that is unknown, the batches without
 * a hole from the first (a peer that answers with other seqs cannot make
 * later live messages look like duplicates). */
static void settle_rep(struct kv_gapfill *g)
{
	if (g->nrep > g->nsorted)
		qsort(g->rep, g->nrep, sizeof *g->rep, by_seq);
	g->nsorted = g->nrep;
	uint64_t end = replay_end(g);
	size_t k = 0;
	while (k < g->nrep && g->rep[k].parts.seq < end &&
	       (end != UINT64_MAX || k == 0 || g->rep[k].parts.seq == g->rep[k - 1].parts.seq + 1))
		k++;
	drop_rep_from(g, k);
}

/* Writes, in seq order, the batches brought that can go now: those before
 * floor (the publisher holds nothing more there), then those that follow
 * the last seq written, or floor, without a hole. */
static void write_run(struct kv_gapfill *g, const struct kv_gapfill_io *io, uint64_t floor)
{
	size_t k = 0;
	for (; k < g->nrep; k++) {
		struct kv_gapfill_msg *s = &g->rep[k];
		uint64_t next = g->seq.seen && g->seq.last + 1 > floor ? g->seq.last + 1 : floor;
		if (s->parts.seq >= floor && g->seq.seen && s->parts.seq != next)
			break;
		g->rep_bytes -= frame_bytes(s->frames, s->nframes);
		write_replayed(g, io, s);
	}
	shift_rep(g, k);
}

/* The replay is over: what it brought goes out, holes and all, then what
 * waited behind it.  A run still missing before the live message that
 * waits is a gap (counted once per replay), and that message asks for it
 * no more. */
static void end_of_replay(struct kv_gapfill *g, const struct kv_gapfill_io *io, uint64_t missing)
{
	g->replaying = false;
	uint64_t end = replay_end(g);
	write_run(g, io, UINT64_MAX);
	if (end != UINT64_MAX && (g->seq.missing > missing || (g->seq.seen && g->seq.last + 1 < end)))
		count_gap(g);
	if (g->nheld > 0 && g->held[g->head].parts.has_seq && g->held[g->head].parts.seq == end) {
		g->gap_at_set = true;
		g->gap_at = end;
	}
	drain_held(g, io);
}

/* The ask running is over; asks again while allowed (see
 * kv_gapfill_end_replay). */
static void end_ask(struct kv_gapfill *g, const struct kv_gapfill_io *io, bool again)
{
	if (!g->replaying)
		return;
	io->hang_up(io->ctx);
	uint64_t missing = g->seq.missing;
	settle_rep(g);
	write_run(g, io, g->held_from);
	uint64_t end = replay_end(g);
	if (again && g->brought && g->asks < g->max_asks && end != UINT64_MAX && g->seq.seen &&
	    g->seq.last + 1 < end) {
		count_gap(g);
		if (ask_from(g, io, g->seq.last + 1))
			return;
	}
	end_of_replay(g, io, missing);
}

void kv_gapfill_end_replay(struct kv_gapfill *g, const struct kv_gapfill_io *io)
{
	end_ask(g, io, true);
}

void kv_gapfill_give_up(struct kv_gapfill *g, const struct kv_gapfill_io *io)
{
	end_ask(g, io, false);
}

/* Whether seq is among the batches brought by earlier asks. */
static bool have_sorted(const struct kv_gapfill *g, uint64_t seq)
{
	size_t lo = 0, hi = g->nsorted;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (g->rep[mid].parts.seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < g->nsorted && g->rep[lo].parts.seq == seq;
}

bool kv_gapfill_replayed(struct kv_gapfill *g, const struct kv_gapfill_io *io, uint64_t recv_ns, uint64_t seq,
			 const struct kv_frame *topic, struct kv_frame payload)
{
	/* A replay buffer is batches in seq order from the one asked for:
	 * replies before it, or not above the last one, are no part of it. */
	if (!g->replaying || seq < g->from || (g->answered && seq <= g->last_reply))
		return false;
	if (!g->answered && seq > g->from)
		g->held_from = seq;   /* the publisher no longer holds what came before */
	g->answered = true;
	g->last_reply = seq;
	if (seq >= replay_end(g)) {
		end_ask(g, io, true);
		return true;
	}
	if ((g->seq.seen && seq <= g->seq.last) || have_sorted(g, seq))
		return false;
	uint8_t seqbuf[8];
	kv_seq_encode(seq, seqbuf);
	struct kv_frame rebuilt[3] = {
		topic ? *topic : (struct kv_frame){ g->topic, g->topic_len },
		{ seqbuf, 8 },
		payload,
	};
	g->rep = kv_xgrow(g->rep, &g->caprep, g->nrep + 1, sizeof *g->rep);
	store_copy(&g->rep[g->nrep++], recv_ns, rebuilt, 3);
	g->rep_bytes += frame_bytes(rebuilt, 3);
	g->brought = true;
	/* What a replay brings is bounded like what waits behind it. */
	if (g->nrep >= g->max_held || g->rep_bytes >= g->max_bytes) {
		end_ask(g, io, false);
		return true;
	}
	return false;
}

void kv_gapfill_live(struct kv_gapfill *g, const struct kv_gapfill_io *io, uint64_t recv_ns,
		     const struct kv_frame *frames, size_t n)
{
	if (g->replaying || g->nheld > 0) {
		hold(g, recv_ns, frames, n);
		if (g->replaying && (g->nheld >= g->max_held || g->held_bytes >= g->max_bytes))
			end_ask(g, io, false);
		return;
	}
	if (!deliver(g, io, recv_ns, frames, n))
		hold(g, recv_ns, frames, n);
}

void kv_gapfill_finish(struct kv_gapfill *g, const struct kv_gapfill_io *io)
{
	g->may_ask = false;
	end_ask(g, io, false);
	drain_held(g, io);
}

#include "decode/gapfill.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

/* A message kept in memory: held behind a replay, or brought by one. */
struct kv_gapfill_msg {
	uint64_t recv_ns;
	struct kv_msg_parts parts;   /* into bytes */
	size_t nframes;
	struct kv_frame frames[KV_CAP_MAX_FRAMES];
	uint8_t *bytes;
};

void kv_gapfill_init(struct kv_gapfill *g, size_t max_held, size_t max_bytes)
{
	memset(g, 0, sizeof *g);
	g->max_held = max_held;
	g->max_bytes = max_bytes;
}

static void store_copy(struct kv_gapfill_msg *s, uint64_t recv_ns, const struct kv_frame *frames, size_t n)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += frames[i].n;
	s->recv_ns = recv_ns;
	s->nframes = n;
	s->bytes = kv_xmalloc(total);
	size_t off = 0;
	for (size_t i = 0; i < n; i++) {
		if (frames[i].n)
			memcpy(s->bytes + off, frames[i].p, frames[i].n);
		s->frames[i].p = s->bytes + off;
		s->frames[i].n = frames[i].n;
		off += frames[i].n;
	}
	kv_msg_split(s->frames, n, &s->parts);
}

static void free_stored(struct kv_gapfill_msg *s)
{
	free(s->bytes);
	s->bytes = NULL;
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

bool kv_gapfill_ask(struct kv_gapfill *g, const struct kv_gapfill_io *io, uint64_t lo, uint64_t hi)
{
	if (!g->may_ask || g->replaying || !io->ask(io->ctx, lo, hi))
		return false;
	g->replaying = true;
	g->lo = lo;
	g->hi = hi;
	return true;
}

/* Delivers one message in order; false when it must wait behind a replay
 * (the caller keeps it).  The live copy of a batch that a replay already
 * brought can arrive after the replay ended (two connections): until the
 * first live seq beyond the replayed range, such a seq is a duplicate, not
 * a publisher restart. */
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
	if (g->may_ask && g->seq.seen && parts.seq > g->seq.last + 1 && parts.seq != g->no_replay_at) {
		g->no_replay_at = parts.seq;
		if (kv_gapfill_ask(g, io, g->seq.last + 1, parts.seq))
			return false;
	}
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
		for (size_t i = 0; i < s->nframes; i++)
			g->held_bytes -= s->frames[i].n;
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
	for (size_t i = 0; i < n; i++)
		g->held_bytes += frames[i].n;
}

static int by_seq(const void *a, const void *b)
{
	const struct kv_gapfill_msg *x = a, *y = b;
	return x->parts.seq < y->parts.seq ? -1 : x->parts.seq > y->parts.seq;
}

/* The seqs a replay is trusted for end before this one: the seq whose gap
 * it fills, or (--replay-from asks for no end) the first live seq that
 * waited behind it; what the live stream brings is never taken from a
 * replay, which could drop it later as a duplicate. */
static uint64_t replay_end(const struct kv_gapfill *g)
{
	const struct kv_gapfill_msg *first = g->nheld ? &g->held[g->head] : NULL;
	return first && first->parts.has_seq && first->parts.seq < g->hi ? first->parts.seq : g->hi;
}

void kv_gapfill_end_replay(struct kv_gapfill *g, const struct kv_gapfill_io *io)
{
	if (!g->replaying)
		return;
	io->hang_up(io->ctx);
	g->replaying = false;
	if (g->nrep) /* a replay nobody answered brought nothing, and rep may be NULL */
		qsort(g->rep, g->nrep, sizeof *g->rep, by_seq);
	uint64_t end = replay_end(g);
	for (size_t i = 0; i < g->nrep; i++) {
		struct kv_gapfill_msg *s = &g->rep[i];
		uint64_t seq = s->parts.seq;
		if ((!g->seq.seen || seq > g->seq.last) && seq < end) {
			kv_seq_observe(&g->seq, seq);
			g->replayed++;
			io->write(io->ctx, s->recv_ns, KV_CAP_FLAG_REPLAYED, s->frames, s->nframes, &s->parts);
			if (!g->dedup)
				g->dedup_lo = seq;
			g->dedup = true;
			g->dedup_upto = seq;
		}
		free_stored(s);
	}
	g->nrep = 0;
	g->rep_bytes = 0;
	drain_held(g, io);
}

bool kv_gapfill_replayed(struct kv_gapfill *g, const struct kv_gapfill_io *io, uint64_t recv_ns, uint64_t seq,
			 const struct kv_frame *topic, struct kv_frame payload)
{
	if (!g->replaying || seq < g->lo || seq >= g->hi)
		return false;
	/* A replay buffer is consecutive batches: after the first reply (which
	 * may start later than asked), one that is not the next seq is no
	 * part of it. */
	if (g->nrep > 0 && seq != g->rep[g->nrep - 1].parts.seq + 1)
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
	g->rep_bytes += rebuilt[0].n + rebuilt[1].n + rebuilt[2].n;
	/* What a replay brings is bounded like what waits behind it. */
	if (g->nrep >= g->max_held || g->rep_bytes >= g->max_bytes) {
		kv_gapfill_end_replay(g, io);
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
			kv_gapfill_end_replay(g, io);
		return;
	}
	if (!deliver(g, io, recv_ns, frames, n))
		hold(g, recv_ns, frames, n);
}

void kv_gapfill_finish(struct kv_gapfill *g, const struct kv_gapfill_io *io)
{
	g->may_ask = false;
	kv_gapfill_end_replay(g, io);
	drain_held(g, io);
}

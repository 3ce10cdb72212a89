/* kvsub's gap filling under random traffic (live messages in order, with
 * gaps, repeats, restarts and no seq; replies in and out of order and out
 * of range; end markers, timeouts, refused replays), against a reference
 * model on fixed arrays; and the edge cases: nothing at all, no gap, a gap
 * filled, a replay that starts late or brings nothing, live copies of
 * replayed batches, bounds on what is held and replayed, the held queue
 * wrapping, --replay-from, topics, messages without a seq, finishing. */
#include <string.h>

#include "net/gapfill.h"
#include "unit.h"

enum { MAXF = 3, MAXB = 48, MAXQ = 64, MAXLOG = 2000 };

/* ---- what the gapfill did: records written, replays asked and hung up ---- */

enum { REC_WRITE, REC_ASK, REC_HANG_UP };

struct rec {
	int kind;
	uint64_t recv_ns, flags, lo, hi;
	size_t n, len[MAXF];
	uint8_t data[MAXF][MAXB];
	bool has_seq, seq_frame;
	uint64_t seq;
};

struct log {
	struct rec v[MAXLOG];
	size_t n;
	bool ask_ok;             /* what ask answers: the same for the gapfill and the model */
};

static struct rec *log_add(struct log *l, int kind)
{
	if (l->n == MAXLOG)
		abort();         /* the tests below stay far from it */
	struct rec *r = &l->v[l->n++];
	memset(r, 0, sizeof *r);
	r->kind = kind;
	return r;
}

static void log_write(struct log *l, uint64_t recv_ns, uint64_t flags, const struct kv_frame *f, size_t n,
		      const struct kv_msg_parts *parts)
{
	struct rec *r = log_add(l, REC_WRITE);
	r->recv_ns = recv_ns;
	r->flags = flags;
	r->n = n;
	for (size_t i = 0; i < n; i++) {
		r->len[i] = f[i].n;
		if (f[i].n)
			memcpy(r->data[i], f[i].p, f[i].n);
	}
	r->has_seq = parts->has_seq;
	r->seq_frame = parts->seq_frame;
	r->seq = parts->seq;
}

static void io_write(void *ctx, uint64_t recv_ns, uint64_t flags, const struct kv_frame *f, size_t n,
		     const struct kv_msg_parts *parts)
{
	log_write(ctx, recv_ns, flags, f, n, parts);
}

static bool io_ask(void *ctx, uint64_t lo, uint64_t hi)
{
	struct log *l = ctx;
	struct rec *r = log_add(l, REC_ASK);
	r->lo = lo;
	r->hi = hi;
	r->flags = l->ask_ok;
	return l->ask_ok;
}

static void io_hang_up(void *ctx)
{
	log_add(ctx, REC_HANG_UP);
}

static bool same_rec(const struct rec *a, const struct rec *b)
{
	if (a->kind != b->kind || a->recv_ns != b->recv_ns || a->flags != b->flags || a->lo != b->lo ||
	    a->hi != b->hi || a->n != b->n || a->has_seq != b->has_seq || a->seq_frame != b->seq_frame ||
	    a->seq != b->seq)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->len[i] != b->len[i] || memcmp(a->data[i], b->data[i], a->len[i]) != 0)
			return false;
	return true;
}

static bool same_log(const struct log *a, const struct log *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (!same_rec(&a->v[i], &b->v[i]))
			return false;
	return true;
}

/* ---- messages ---- */

/* Frames by length, not pointer: messages are copied by value. */
struct msg {
	size_t n, len[MAXF];
	uint8_t buf[MAXF][MAXB];
};

static void put_frame(struct msg *m, const void *p, size_t n)
{
	memcpy(m->buf[m->n], p, n);
	m->len[m->n++] = n;
}

static const struct kv_frame *frames(const struct msg *m, struct kv_frame f[MAXF])
{
	for (size_t i = 0; i < m->n; i++)
		f[i] = (struct kv_frame){ m->buf[i], m->len[i] };
	return f;
}

/* [topic, seq, payload], the payload naming the seq. */
static struct msg batch(const char *topic, uint64_t seq)
{
	struct msg m = { 0 };
	uint8_t s[8];
	kv_seq_encode(seq, s);
	char payload[MAXB];
	int n = snprintf(payload, sizeof payload, "batch %llu", (unsigned long long)seq);
	put_frame(&m, topic, strlen(topic));
	put_frame(&m, s, 8);
	put_frame(&m, payload, (size_t)n);
	return m;
}

static struct kv_frame text(const char *s)
{
	return (struct kv_frame){ (const uint8_t *)s, strlen(s) };
}

/* ---- the reference model: the same rules on fixed arrays ---- */

struct rmsg {
	uint64_t recv_ns;
	struct msg m;
	bool has_seq;
	uint64_t seq;
};

struct model {
	size_t max_held, max_bytes;
	unsigned max_asks, asks;
	uint64_t last, seq_gaps, gaps, missing, restarts, replayed, duplicates;
	uint64_t lo, hi, from, last_reply, held_from;   /* the replay running, its ask */
	struct rmsg rep[MAXQ], held[MAXQ];
	size_t nrep, nheld;
	uint64_t gap_at;                   /* the live message of this seq has its gap counted */
	uint64_t dedup_lo, dedup_upto;
	size_t topic_len;
	struct log out;
	bool may_ask, seen, replaying, gap_at_set, dedup, counted, answered, brought;
	uint8_t topic[MAXB];
};

static size_t msg_bytes(const struct msg *m)
{
	size_t b = 0;
	for (size_t i = 0; i < m->n; i++)
		b += m->len[i];
	return b;
}

static size_t total_bytes(const struct rmsg *v, size_t n)
{
	size_t b = 0;
	for (size_t i = 0; i < n; i++)
		b += msg_bytes(&v[i].m);
	return b;
}

/* the message with its frames pointing into itself */
static struct rmsg rmsg_of(uint64_t recv_ns, const struct kv_frame *f, size_t n)
{
	struct rmsg r = { .recv_ns = recv_ns };
	for (size_t i = 0; i < n; i++)
		put_frame(&r.m, f[i].p, f[i].n);
	r.has_seq = n >= 3 && f[1].n == 8;
	for (int i = 0; r.has_seq && i < 8; i++)
		r.seq = r.seq << 8 | f[1].p[i];
	return r;
}

static void m_write(struct model *md, const struct rmsg *r, uint64_t flags)
{
	struct kv_frame f[MAXF] = { { NULL, 0 } };
	struct kv_msg_parts parts;
	kv_msg_split(frames(&r->m, f), r->m.n, &parts);
	log_write(&md->out, r->recv_ns, flags, f, r->m.n, &parts);
}

static void m_observe(struct model *md, uint64_t seq)
{
	if (md->seen && seq > md->last + 1) {
		md->seq_gaps++;
		md->missing += seq - md->last - 1;
	} else if (md->seen && seq <= md->last) {
		md->restarts++;
	}
	md->seen = true;
	md->last = seq;
}

static void m_count_gap(struct model *md)
{
	if (!md->counted)
		md->gaps++;
	md->counted = true;
}

static bool m_ask_from(struct model *md, uint64_t from)
{
	md->from = from;
	md->asks++;
	md->answered = md->brought = false;
	md->held_from = from;
	struct rec *r = log_add(&md->out, REC_ASK);
	r->lo = from;
	r->hi = md->hi;
	r->flags = md->out.ask_ok;
	return md->out.ask_ok;
}

static bool m_start(struct model *md, uint64_t lo, uint64_t hi, bool counted)
{
	if (!md->may_ask || md->replaying)
		return false;
	md->lo = lo;
	md->hi = hi;
	md->asks = 0;
	md->counted = counted;
	if (!m_ask_from(md, lo))
		return false;
	md->replaying = true;
	return true;
}

static bool m_ask(struct model *md, uint64_t lo, uint64_t hi)
{
	return m_start(md, lo, hi, false);
}

/* false: it waits */
static bool m_deliver(struct model *md, const struct rmsg *r)
{
	if (md->replaying)
		return false;
	size_t tn = r->m.n >= 2 ? r->m.len[0] : 0;
	memcpy(md->topic, r->m.buf[0], tn);
	md->topic_len = tn;
	if (!r->has_seq) {
		m_write(md, r, 0);
		return true;
	}
	if (md->dedup && r->seq >= md->dedup_lo && r->seq <= md->dedup_upto) {
		md->duplicates++;
		return true;
	}
	md->dedup = false;
	bool counted = md->gap_at_set && md->gap_at == r->seq;
	if (md->seen && r->seq > md->last + 1 && !counted) {
		md->gaps++;
		md->gap_at_set = true;
		md->gap_at = r->seq;
		if (m_start(md, md->last + 1, r->seq, true))
			return false;
	}
	md->gap_at_set = false;
	m_observe(md, r->seq);
	m_write(md, r, 0);
	return true;
}

static void m_drain(struct model *md)
{
	while (md->nheld && m_deliver(md, &md->held[0])) {
		memmove(&md->held[0], &md->held[1], (md->nheld - 1) * sizeof md->held[0]);
		md->nheld--;
	}
}

static uint64_t m_end_seq(const struct model *md)
{
	return md->nheld && md->held[0].has_seq && md->held[0].seq < md->hi ? md->held[0].seq : md->hi;
}

static void m_remove_rep(struct model *md, size_t k)
{
	memmove(&md->rep[k], &md->rep[k + 1], (md->nrep - k - 1) * sizeof md->rep[0]);
	md->nrep--;
}

/* in seq order, by selection; then only what the replay is trusted for */
static void m_settle(struct model *md)
{
	for (size_t i = 0; i < md->nrep; i++)
		for (size_t j = i + 1; j < md->nrep; j++)
			if (md->rep[j].seq < md->rep[i].seq) {
				struct rmsg t = md->rep[i];
				md->rep[i] = md->rep[j];
				md->rep[j] = t;
			}
	uint64_t end = m_end_seq(md);
	size_t k = 0;
	while (k < md->nrep && md->rep[k].seq < end &&
	       (end != UINT64_MAX || k == 0 || md->rep[k].seq == md->rep[k - 1].seq + 1))
		k++;
	md->nrep = k;
}

static void m_write_run(struct model *md, uint64_t floor)
{
	while (md->nrep) {
		uint64_t seq = md->rep[0].seq, next = md->seen && md->last + 1 > floor ? md->last + 1 : floor;
		if (seq >= floor && md->seen && seq != next)
			return;
		m_observe(md, seq);
		md->replayed++;
		m_write(md, &md->rep[0], KV_CAP_FLAG_REPLAYED);
		if (!md->dedup)
			md->dedup_lo = seq;
		md->dedup = true;
		md->dedup_upto = seq;
		m_remove_rep(md, 0);
	}
}

static void m_end_of_replay(struct model *md, uint64_t missing)
{
	md->replaying = false;
	uint64_t end = m_end_seq(md);
	m_write_run(md, UINT64_MAX);
	if (end != UINT64_MAX && (md->missing > missing || (md->seen && md->last + 1 < end)))
		m_count_gap(md);
	if (md->nheld && md->held[0].has_seq && md->held[0].seq == end) {
		md->gap_at_set = true;
		md->gap_at = end;
	}
	m_drain(md);
}

static void m_end_ask(struct model *md, bool again)
{
	if (!md->replaying)
		return;
	log_add(&md->out, REC_HANG_UP);
	uint64_t missing = md->missing;
	m_settle(md);
	m_write_run(md, md->held_from);
	uint64_t end = m_end_seq(md);
	if (again && md->brought && md->asks < md->max_asks && end != UINT64_MAX && md->seen && md->last + 1 < end) {
		m_count_gap(md);
		if (m_ask_from(md, md->last + 1))
			return;
	}
	m_end_of_replay(md, missing);
}

static void m_end(struct model *md)
{
	m_end_ask(md, true);
}

static void m_give_up(struct model *md)
{
	m_end_ask(md, false);
}

static void m_live(struct model *md, uint64_t recv_ns, const struct kv_frame *f, size_t n)
{
	struct rmsg r = rmsg_of(recv_ns, f, n);
	if (md->replaying || md->nheld) {
		md->held[md->nheld++] = r;
		if (md->replaying && (md->nheld >= md->max_held || total_bytes(md->held, md->nheld) >= md->max_bytes))
			m_give_up(md);
		return;
	}
	if (!m_deliver(md, &r))
		md->held[md->nheld++] = r;
}

static bool m_have(const struct model *md, uint64_t seq)
{
	for (size_t i = 0; i < md->nrep; i++)
		if (md->rep[i].seq == seq)
			return true;
	return false;
}

static bool m_replayed(struct model *md, uint64_t recv_ns, uint64_t seq, const struct kv_frame *topic,
		       struct kv_frame payload)
{
	if (!md->replaying || seq < md->from || (md->answered && seq <= md->last_reply))
		return false;
	if (!md->answered && seq > md->from)
		md->held_from = seq;
	md->answered = true;
	md->last_reply = seq;
	if (seq >= m_end_seq(md)) {
		m_end(md);
		return true;
	}
	if ((md->seen && seq <= md->last) || m_have(md, seq))
		return false;
	uint8_t s[8];
	kv_seq_encode(seq, s);
	struct kv_frame f[3] = { topic ? *topic : (struct kv_frame){ md->topic, md->topic_len }, { s, 8 }, payload };
	md->rep[md->nrep++] = rmsg_of(recv_ns, f, 3);
	md->brought = true;
	if (md->nrep >= md->max_held || total_bytes(md->rep, md->nrep) >= md->max_bytes) {
		m_give_up(md);
		return true;
	}
	return false;
}

static void m_finish(struct model *md)
{
	md->may_ask = false;
	m_give_up(md);
	m_drain(md);
}

/* ---- the two side by side ---- */

struct pair {
	struct kv_gapfill g;
	struct kv_gapfill_io io;
	struct log log;
	struct model md;
};

static struct pair *pair_asks(size_t max_held, size_t max_bytes, bool may_ask, unsigned max_asks)
{
	struct pair *p = calloc(1, sizeof *p);
	kv_gapfill_init(&p->g, max_held, max_bytes);
	p->g.may_ask = may_ask;
	p->g.max_asks = p->md.max_asks = max_asks;
	p->io = (struct kv_gapfill_io){ &p->log, io_write, io_ask, io_hang_up };
	p->md.may_ask = may_ask;
	p->md.max_held = max_held;
	p->md.max_bytes = max_bytes;
	p->log.ask_ok = p->md.out.ask_ok = true;
	return p;
}

/* One ask per gap, as before asks again came in. */
static struct pair *pair_new(size_t max_held, size_t max_bytes, bool may_ask)
{
	return pair_asks(max_held, max_bytes, may_ask, 1);
}

static void pair_free(struct pair *p)
{
	kv_gapfill_free(&p->g);
	free(p);
}

static bool pair_agrees(const struct pair *p)
{
	const struct kv_gapfill *g = &p->g;
	const struct model *md = &p->md;
	return same_log(&p->log, &md->out) && g->seq.seen == md->seen && (!md->seen || g->seq.last == md->last) &&
	       g->seq.gaps == md->seq_gaps && g->gaps == md->gaps && g->seq.missing == md->missing &&
	       g->seq.restarts == md->restarts && g->replayed == md->replayed && g->duplicates == md->duplicates &&
	       g->replaying == md->replaying && (!md->replaying || g->asks == md->asks) && g->nheld == md->nheld &&
	       g->held_bytes == total_bytes(md->held, md->nheld) && g->nrep == md->nrep &&
	       g->rep_bytes == total_bytes(md->rep, md->nrep);
}

static void live(struct pair *p, uint64_t recv_ns, const struct msg *m)
{
	struct kv_frame f[MAXF] = { { NULL, 0 } };
	kv_gapfill_live(&p->g, &p->io, recv_ns, frames(m, f), m->n);
	m_live(&p->md, recv_ns, f, m->n);
}

/* A reply to both: 0 when neither ended its replay for it, 1 when both
 * did, 2 when they disagree. */
static int replayed(struct pair *p, uint64_t recv_ns, uint64_t seq, const char *topic, const char *payload)
{
	struct kv_frame t = topic ? text(topic) : (struct kv_frame){ NULL, 0 };
	bool a = kv_gapfill_replayed(&p->g, &p->io, recv_ns, seq, topic ? &t : NULL, text(payload));
	bool b = m_replayed(&p->md, recv_ns, seq, topic ? &t : NULL, text(payload));
	return a && b ? 1 : a || b ? 2 : 0;
}

/* --replay-from: 0 when neither asked, 1 when both did, 2 when they disagree. */
static int ask(struct pair *p, uint64_t lo, uint64_t hi)
{
	bool a = kv_gapfill_ask(&p->g, &p->io, lo, hi), b = m_ask(&p->md, lo, hi);
	return a && b ? 1 : a || b ? 2 : 0;
}

static void end_replay(struct pair *p)
{
	kv_gapfill_end_replay(&p->g, &p->io);
	m_end(&p->md);
}

static void give_up(struct pair *p)
{
	kv_gapfill_give_up(&p->g, &p->io);
	m_give_up(&p->md);
}

static void finish(struct pair *p)
{
	kv_gapfill_finish(&p->g, &p->io);
	m_finish(&p->md);
}

static void set_ask_ok(struct pair *p, bool ok)
{
	p->log.ask_ok = p->md.out.ask_ok = ok;
}

/* ---- random traffic ---- */

static const char *const topics[] = { "kv@a", "kv@b", "" };

static void matches_reference(void)
{
	static const struct {
		size_t max_held, max_bytes;
	} bounds[] = { { 6, 1 << 20 }, { 40, 300 }, { 2, 1 << 20 }, { 30, 1 << 20 } };
	uint64_t writes = 0, replays = 0, dups = 0, again = 0;
	for (int round = 0; round < 400; round++) {
		struct pair *p = pair_asks(bounds[round % 4].max_held, bounds[round % 4].max_bytes, round % 9 != 0,
					   1 + (unsigned)(round % 5));
		uint64_t pub = unit_rand() % 5, t = 1000;   /* the publisher's last seq */
		const char *topic = topics[0];
		if (unit_rand() % 4 == 0)
			ASSERT(ask(p, unit_rand() % 4, UINT64_MAX) != 2);
		for (int op = 0; op < 300; op++, t++) {
			uint64_t k = unit_rand() % 100;
			if (k < 55) {
				uint64_t j = unit_rand() % 100;
				if (unit_rand() % 20 == 0)
					topic = topics[unit_rand() % 3];
				struct msg m = { 0 };
				if (j < 10) {
					/* no seq: [topic, payload], [payload], a seq frame of 7 bytes */
					size_t shape = unit_rand() % 3;
					if (shape != 1)
						put_frame(&m, topic, strlen(topic));
					if (shape == 2)
						put_frame(&m, "1234567", 7);
					put_frame(&m, "no seq", 6);
				} else if (j < 18 && p->md.dedup) {
					/* a live copy of a batch the replay brought */
					uint64_t w = p->md.dedup_upto - p->md.dedup_lo + 1;
					m = batch(topic, p->md.dedup_lo + unit_rand() % w);
				} else {
					pub = j < 65 ? pub + 1 : j < 80 ? pub + 2 + unit_rand() % 8 :
					      j < 95 ? pub - (pub > 3 ? unit_rand() % 4 : 0) : unit_rand() % 3;
					m = batch(topic, pub);
				}
				live(p, t, &m);
			} else if (k < 85) {
				/* mostly the ask's next batch, or one a little further
				 * (replies dropped); sometimes any seq near it */
				uint64_t seq = p->md.answered ? p->md.last_reply + 1 : p->md.from + unit_rand() % 3;
				if (unit_rand() % 4 == 0)
					seq += 1 + unit_rand() % 3;
				if (unit_rand() % 6 == 0) {
					seq = p->md.from + unit_rand() % 12;
					seq = seq >= 2 ? seq - 2 : seq;
				}
				char payload[MAXB];
				snprintf(payload, sizeof payload, "replayed %llu", (unsigned long long)seq);
				ASSERT(replayed(p, t, seq, unit_rand() % 2 ? "kv@r" : NULL, payload) != 2);
			} else if (k < 92) {
				end_replay(p);
			} else if (k < 93) {
				give_up(p);
			} else if (k < 95) {
				/* --replay-from, here also in mid-stream */
				ASSERT(ask(p, pub > 2 ? pub - unit_rand() % 3 : pub, UINT64_MAX) != 2);
			} else {
				set_ask_ok(p, unit_rand() % 4 != 0);
			}
			ASSERT(pair_agrees(p));
		}
		finish(p);
		ASSERT(pair_agrees(p));
		ASSERT(!p->g.replaying && p->g.nheld == 0 && p->g.nrep == 0);
		const struct rec *prev = NULL;   /* the last ask */
		for (size_t i = 0; i < p->log.n; i++) {
			const struct rec *r = &p->log.v[i];
			writes += r->kind == REC_WRITE;
			if (r->kind != REC_ASK)
				continue;
			/* asked again: the same gap, from further on */
			again += prev && prev->flags && r->hi == prev->hi && r->lo > prev->lo;
			prev = r;
		}
		replays += p->g.replayed;
		dups += p->g.duplicates;
		pair_free(p);
	}
	/* the traffic did what it is for */
	printf("# %llu writes, %llu replayed, %llu duplicates, %llu asks again\n", (unsigned long long)writes,
	       (unsigned long long)replays, (unsigned long long)dups, (unsigned long long)again);
	ASSERT(writes > 50000 && replays > 3000 && dups > 40 && again > 300);
}

/* ---- edge cases, by hand ---- */

/* The seqs (and flags: +1000 for a replayed one) written, in order. */
static bool wrote(const struct pair *p, const uint64_t *want, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < p->log.n; i++) {
		const struct rec *r = &p->log.v[i];
		if (r->kind != REC_WRITE)
			continue;
		uint64_t got = (r->has_seq ? r->seq : 999) + (r->flags & KV_CAP_FLAG_REPLAYED ? 1000 : 0);
		if (k >= n || got != want[k++])
			return false;
	}
	return k == n && pair_agrees(p);
}

static size_t count_kind(const struct pair *p, int kind)
{
	size_t n = 0;
	for (size_t i = 0; i < p->log.n; i++)
		n += p->log.v[i].kind == kind;
	return n;
}

static void live_seq(struct pair *p, uint64_t t, uint64_t seq)
{
	struct msg m = batch("kv@a", seq);
	live(p, t, &m);
}

static void nothing(void)
{
	struct pair *p = pair_new(10, 1000, true);
	end_replay(p);
	ASSERT(replayed(p, 1, 3, NULL, "x") == 0);
	finish(p);
	ASSERT_EQ_U64(p->log.n, 0);
	ASSERT(pair_agrees(p));
	pair_free(p);
}

static void no_gap(void)
{
	struct pair *p = pair_new(10, 1000, true);
	for (uint64_t s = 7; s <= 11; s++)
		live_seq(p, s, s);
	ASSERT(wrote(p, (uint64_t[]){ 7, 8, 9, 10, 11 }, 5));
	ASSERT_EQ_U64(count_kind(p, REC_ASK), 0);
	ASSERT_EQ_U64(p->g.gaps, 0);
	pair_free(p);
}

/* 1 2 5: 3 and 4 are asked for; 5 and 6 wait; the replay's 3 and 4 come
 * first, flagged, and nothing is missing. */
static void gap_filled(void)
{
	struct pair *p = pair_new(10, 1000, true);
	live_seq(p, 1, 1);
	live_seq(p, 2, 2);
	live_seq(p, 3, 5);
	ASSERT(p->g.replaying && p->g.lo == 3 && p->g.hi == 5);
	live_seq(p, 4, 6);
	ASSERT_EQ_U64(p->g.nheld, 2);
	ASSERT(replayed(p, 5, 3, "kv@a", "three") == 0);
	ASSERT(replayed(p, 6, 4, "kv@a", "four") == 0);
	end_replay(p);
	ASSERT(wrote(p, (uint64_t[]){ 1, 2, 1003, 1004, 5, 6 }, 6));
	ASSERT_EQ_U64(p->g.replayed, 2);
	ASSERT_EQ_U64(p->g.gaps, 1);          /* filled, but a gap all the same */
	ASSERT_EQ_U64(p->g.seq.gaps, 0);      /* none left in what was written */
	ASSERT_EQ_U64(p->g.seq.missing, 0);
	ASSERT_EQ_U64(count_kind(p, REC_HANG_UP), 1);
	/* a replayed record is [topic, seq, payload] as the reply gave them */
	const struct rec *r = &p->log.v[4];
	ASSERT(r->kind == REC_WRITE && r->recv_ns == 5 && r->n == 3 && r->len[2] == 5 &&
	       memcmp(r->data[2], "three", 5) == 0);
	pair_free(p);
}

/* Replies before what was asked, or not above the last one, are no part
 * of the answer; one later than asked says the publisher no longer holds
 * what comes before it; one at or past the end of the gap ends the ask
 * (vLLM answers in seq order).  With one ask, a hole (a reply dropped)
 * stays missing. */
static void bad_and_late_replies(void)
{
	struct pair *p = pair_new(10, 1000, true);
	live_seq(p, 1, 1);
	live_seq(p, 2, 6);          /* asks for 2..5 */
	ASSERT(replayed(p, 3, 1, NULL, "before") == 0);
	ASSERT(replayed(p, 3, 3, NULL, "late start") == 0);
	ASSERT(replayed(p, 3, 3, NULL, "again") == 0);
	ASSERT(replayed(p, 3, 5, NULL, "4 dropped") == 0);
	ASSERT(replayed(p, 3, 4, NULL, "not above") == 0);
	ASSERT_EQ_U64(p->g.nrep, 2);
	ASSERT(p->g.replaying);
	ASSERT(replayed(p, 3, 6, NULL, "the live one") == 1);
	ASSERT(!p->g.replaying);
	ASSERT(wrote(p, (uint64_t[]){ 1, 1003, 1005, 6 }, 4));
	ASSERT_EQ_U64(p->g.gaps, 1);
	ASSERT_EQ_U64(p->g.seq.missing, 2);   /* 2, no longer held, and 4 */
	ASSERT_EQ_U64(count_kind(p, REC_ASK), 1);
	pair_free(p);
	/* a first reply past the gap: the publisher holds none of it */
	p = pair_asks(10, 1000, true, 5);
	live_seq(p, 1, 1);
	live_seq(p, 2, 5);
	ASSERT(replayed(p, 3, 7, NULL, "later") == 1);
	ASSERT(wrote(p, (uint64_t[]){ 1, 5 }, 2));
	ASSERT_EQ_U64(p->g.seq.missing, 3);
	ASSERT_EQ_U64(count_kind(p, REC_ASK), 1);
	pair_free(p);
}

/* vLLM's ROUTER drops replies (and the end marker) when its reader lags:
 * each ask ends on the end marker, a reply past the gap or its time, and
 * the gap is asked for again from its first seq still missing, until
 * nothing is. */
static void asks_again_for_dropped_replies(void)
{
	struct pair *p = pair_asks(20, 1 << 20, true, 3);
	live_seq(p, 1, 1);
	live_seq(p, 2, 10);         /* asks for 2..9 */
	live_seq(p, 3, 11);
	ASSERT(replayed(p, 4, 2, NULL, "two") == 0);
	ASSERT(replayed(p, 4, 3, NULL, "three") == 0);
	ASSERT(replayed(p, 4, 6, NULL, "six") == 0);
	ASSERT(replayed(p, 4, 7, NULL, "seven") == 0);
	end_replay(p);              /* its time is up: 2 and 3 go, 6 and 7 wait */
	ASSERT(p->g.replaying && p->g.from == 4 && kv_gapfill_asks(&p->g) == 2);
	ASSERT(wrote(p, (uint64_t[]){ 1, 1002, 1003 }, 3));
	ASSERT(replayed(p, 5, 4, NULL, "four") == 0);
	ASSERT(replayed(p, 5, 5, NULL, "five") == 0);
	ASSERT(replayed(p, 5, 6, NULL, "six again") == 0);
	ASSERT(replayed(p, 5, 8, NULL, "eight") == 0);
	ASSERT_EQ_U64(p->g.nrep, 5);          /* 6 once */
	end_replay(p);              /* 4..8 go; 9 is asked for */
	ASSERT(p->g.replaying && p->g.from == 9 && kv_gapfill_asks(&p->g) == 3);
	ASSERT(replayed(p, 6, 9, NULL, "nine") == 0);
	ASSERT(replayed(p, 6, 10, NULL, "the live one") == 1);
	ASSERT(!p->g.replaying);
	ASSERT(wrote(p, (uint64_t[]){ 1, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 10, 11 }, 11));
	ASSERT_EQ_U64(p->g.gaps, 1);
	ASSERT_EQ_U64(p->g.seq.missing, 0);
	ASSERT_EQ_U64(p->g.replayed, 8);
	ASSERT_EQ_U64(count_kind(p, REC_ASK), 3);
	ASSERT_EQ_U64(count_kind(p, REC_HANG_UP), 3);
	/* the replayed 6 of the first ask was written once, with its own payload */
	ASSERT(p->log.v[9].kind == REC_WRITE && p->log.v[9].seq == 6 && p->log.v[9].len[2] == 3);
	pair_free(p);
}

/* Asking again stops: after max_asks, after an ask that brought nothing
 * new, when the replay is given up, and at the publisher's oldest batch. */
static void asking_again_is_bounded(void)
{
	struct pair *p = pair_asks(20, 1 << 20, true, 2);
	live_seq(p, 1, 1);
	live_seq(p, 2, 10);
	ASSERT(replayed(p, 3, 2, NULL, "two") == 0);
	end_replay(p);
	ASSERT(replayed(p, 4, 3, NULL, "three") == 0);
	end_replay(p);              /* the second and last ask */
	ASSERT(!p->g.replaying);
	ASSERT(wrote(p, (uint64_t[]){ 1, 1002, 1003, 10 }, 4));
	ASSERT_EQ_U64(p->g.gaps, 1);
	ASSERT_EQ_U64(p->g.seq.missing, 6);
	pair_free(p);
	/* nothing new: the publisher holds no more of it */
	p = pair_asks(20, 1 << 20, true, 9);
	live_seq(p, 1, 1);
	live_seq(p, 2, 6);
	ASSERT(replayed(p, 3, 2, NULL, "two") == 0);
	end_replay(p);
	ASSERT(replayed(p, 4, 4, NULL, "four") == 0);  /* 3 no longer held */
	end_replay(p);
	ASSERT(p->g.replaying && p->g.from == 5);
	end_replay(p);              /* brought nothing */
	ASSERT(!p->g.replaying);
	ASSERT(wrote(p, (uint64_t[]){ 1, 1002, 1004, 6 }, 4));
	ASSERT_EQ_U64(count_kind(p, REC_ASK), 3);
	ASSERT_EQ_U64(p->g.seq.missing, 2);
	pair_free(p);
	/* given up by its owner (its time is up) */
	p = pair_asks(20, 1 << 20, true, 9);
	live_seq(p, 1, 1);
	live_seq(p, 2, 6);
	ASSERT(replayed(p, 3, 2, NULL, "two") == 0);
	give_up(p);
	ASSERT(!p->g.replaying);
	ASSERT(wrote(p, (uint64_t[]){ 1, 1002, 6 }, 3));
	ASSERT_EQ_U64(count_kind(p, REC_ASK), 1);
	/* and the next gap is asked for anew */
	live_seq(p, 3, 9);
	ASSERT(p->g.replaying && p->g.lo == 7 && p->g.hi == 9 && kv_gapfill_asks(&p->g) == 1);
	ASSERT_EQ_U64(p->g.gaps, 2);
	pair_free(p);
}

/* A replay that brings nothing (timed out): the message that revealed the
 * gap is written after it, and the gap is not asked for again. */
static void replay_brings_nothing(void)
{
	struct pair *p = pair_new(10, 1000, true);
	live_seq(p, 1, 1);
	live_seq(p, 2, 4);
	live_seq(p, 3, 5);
	end_replay(p);
	ASSERT(wrote(p, (uint64_t[]){ 1, 4, 5 }, 3));
	ASSERT_EQ_U64(count_kind(p, REC_ASK), 1);
	ASSERT_EQ_U64(p->g.seq.missing, 2);
	/* a replay refused by the owner: the message goes at once */
	set_ask_ok(p, false);
	live_seq(p, 4, 9);
	ASSERT(!p->g.replaying);
	ASSERT(wrote(p, (uint64_t[]){ 1, 4, 5, 9 }, 4));
	ASSERT_EQ_U64(count_kind(p, REC_ASK), 2);
	pair_free(p);
}

/* The live copies of replayed batches that come after the replay (here
 * --replay-from's, which reached the subscriber first) are duplicates,
 * until the first live seq beyond them; then a seq in that range again is
 * a restart. */
static void live_copies_after_replay(void)
{
	struct pair *p = pair_new(10, 1000, true);
	ASSERT(ask(p, 2, UINT64_MAX) == 1);
	ASSERT(replayed(p, 1, 2, "kv@a", "two") == 0);
	ASSERT(replayed(p, 1, 3, "kv@a", "three") == 0);
	ASSERT(replayed(p, 1, 4, "kv@a", "four") == 0);
	end_replay(p);
	live_seq(p, 2, 2);
	live_seq(p, 3, 3);
	live_seq(p, 4, 4);
	live_seq(p, 4, 3);
	ASSERT_EQ_U64(p->g.duplicates, 4);
	live_seq(p, 5, 5);
	live_seq(p, 6, 3);
	ASSERT(wrote(p, (uint64_t[]){ 1002, 1003, 1004, 5, 3 }, 5));
	ASSERT_EQ_U64(p->g.duplicates, 4);
	ASSERT_EQ_U64(p->g.seq.restarts, 1);
	pair_free(p);
}

/* Full: a replay ends when as many messages wait as may be held, or when
 * it brought as many or as many bytes. */
static void bounds_end_the_replay(void)
{
	struct pair *p = pair_new(3, 1 << 20, true);
	live_seq(p, 1, 1);
	live_seq(p, 2, 10);
	live_seq(p, 3, 11);
	ASSERT(p->g.replaying);
	live_seq(p, 4, 12);          /* the third held */
	ASSERT(!p->g.replaying);
	ASSERT(wrote(p, (uint64_t[]){ 1, 10, 11, 12 }, 4));
	live_seq(p, 5, 20);
	ASSERT(replayed(p, 6, 13, NULL, "a") == 0);
	ASSERT(replayed(p, 6, 14, NULL, "b") == 0);
	ASSERT(replayed(p, 6, 15, NULL, "c") == 1);   /* the third brought */
	ASSERT(!p->g.replaying);
	ASSERT(wrote(p, (uint64_t[]){ 1, 10, 11, 12, 1013, 1014, 1015, 20 }, 8));
	pair_free(p);
	/* by bytes: each batch here is 4 + 8 + 1 bytes */
	p = pair_new(100, 26, true);
	live_seq(p, 1, 1);
	live_seq(p, 2, 5);
	ASSERT(replayed(p, 3, 2, "kv@a", "x") == 0);
	ASSERT(replayed(p, 3, 3, "kv@a", "y") == 1);
	ASSERT(wrote(p, (uint64_t[]){ 1, 1002, 1003, 5 }, 4));
	pair_free(p);
}

/* The held queue: a held message that reveals a second gap starts a
 * second replay part way through it; more arrive behind, and the queue
 * moves its rest to the front rather than grow without end. */
static void held_queue_wraps(void)
{
	struct pair *p = pair_new(50, 1 << 20, true);
	live_seq(p, 1, 1);
	live_seq(p, 2, 3);           /* asks for 2 */
	live_seq(p, 3, 4);
	live_seq(p, 4, 6);           /* held: its gap is asked for when it comes out */
	for (uint64_t s = 7; s <= 10; s++)
		live_seq(p, s, s);
	ASSERT(replayed(p, 11, 2, NULL, "two") == 0);
	end_replay(p);               /* 2, 3, 4 written; 6 asks for 5 */
	ASSERT(p->g.replaying && p->g.lo == 5 && p->g.hi == 6);
	ASSERT_EQ_U64(p->g.head, 2);
	ASSERT_EQ_U64(p->g.capheld, 8);
	live_seq(p, 11, 11);
	live_seq(p, 12, 12);         /* at the end of the array: moved to the front, not grown */
	ASSERT_EQ_U64(p->g.head, 0);
	ASSERT_EQ_U64(p->g.capheld, 8);
	for (uint64_t s = 13; s <= 30; s++)
		live_seq(p, s, s);
	ASSERT(replayed(p, 31, 5, NULL, "five") == 0);
	end_replay(p);
	uint64_t want[30] = { 1, 1002, 3, 4, 1005 };
	for (uint64_t s = 6; s <= 30; s++)
		want[s - 1] = s;
	ASSERT(wrote(p, want, 30));
	ASSERT_EQ_U64(p->g.nheld, 0);
	pair_free(p);
}

/* --replay-from: everything from a seq on, trusted up to the first live
 * seq that waits behind the replay. */
static void replay_from(void)
{
	struct pair *p = pair_new(10, 1000, true);
	ASSERT(ask(p, 5, UINT64_MAX) == 1);
	ASSERT(ask(p, 5, UINT64_MAX) == 0);    /* one replay at a time */
	live_seq(p, 1, 8);
	for (uint64_t s = 5; s <= 7; s++)
		ASSERT(replayed(p, 2, s, "kv@r", "old") == 0);
	ASSERT(replayed(p, 2, 8, "kv@r", "the live one") == 1);
	ASSERT(wrote(p, (uint64_t[]){ 1005, 1006, 1007, 8 }, 4));
	ASSERT_EQ_U64(p->g.gaps, 0);
	pair_free(p);
	/* replies dropped before the live seq: a gap, asked for again */
	p = pair_asks(20, 1 << 20, true, 3);
	ASSERT(ask(p, 0, UINT64_MAX) == 1);
	for (uint64_t s = 0; s <= 9; s++)
		if (s < 4 || s > 5)
			ASSERT(replayed(p, 1, s, NULL, "old") == 0);
	live_seq(p, 2, 10);
	end_replay(p);
	ASSERT(p->g.replaying && p->g.from == 4 && p->g.gaps == 1);
	ASSERT(replayed(p, 3, 4, NULL, "four") == 0);
	ASSERT(replayed(p, 3, 5, NULL, "five") == 0);
	end_replay(p);
	ASSERT(wrote(p, (uint64_t[]){ 1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 10 }, 11));
	ASSERT_EQ_U64(p->g.gaps, 1);
	ASSERT_EQ_U64(p->g.seq.missing, 0);
	pair_free(p);
	/* ... but while no live seq shows where the publisher is, only the
	 * batches without a hole from the first are trusted, and nothing is
	 * known to be missing */
	p = pair_asks(20, 1 << 20, true, 3);
	ASSERT(ask(p, 0, UINT64_MAX) == 1);
	for (uint64_t s = 0; s <= 9; s++)
		if (s < 4 || s > 5)
			ASSERT(replayed(p, 1, s, NULL, "old") == 0);
	ASSERT(replayed(p, 1, 1000000, NULL, "bogus") == 0);
	end_replay(p);
	ASSERT(!p->g.replaying);
	ASSERT(wrote(p, (uint64_t[]){ 1000, 1001, 1002, 1003 }, 4));
	ASSERT_EQ_U64(p->g.gaps, 0);
	live_seq(p, 2, 10);         /* now a gap: 4..9 */
	ASSERT(p->g.replaying && p->g.lo == 4 && p->g.hi == 10 && p->g.gaps == 1);
	pair_free(p);
	/* without a replay socket, nothing is asked */
	p = pair_new(10, 1000, false);
	ASSERT(ask(p, 5, UINT64_MAX) == 0);
	live_seq(p, 1, 1);
	live_seq(p, 2, 9);
	ASSERT(wrote(p, (uint64_t[]){ 1, 9 }, 2));
	ASSERT_EQ_U64(count_kind(p, REC_ASK), 0);
	pair_free(p);
}

/* A reply without a topic (vLLM 0.25) takes the last live one. */
static void topics_of_replies(void)
{
	struct pair *p = pair_new(10, 1000, true);
	struct msg m = batch("kv@first", 1);
	live(p, 1, &m);
	m = batch("kv@second", 4);
	live(p, 2, &m);
	ASSERT(replayed(p, 3, 2, NULL, "two") == 0);
	ASSERT(replayed(p, 3, 3, "kv@own", "three") == 0);
	end_replay(p);
	ASSERT(wrote(p, (uint64_t[]){ 1, 1002, 1003, 4 }, 4));
	ASSERT(p->log.v[3].len[0] == 9 && memcmp(p->log.v[3].data[0], "kv@second", 9) == 0);
	ASSERT(p->log.v[4].len[0] == 6 && memcmp(p->log.v[4].data[0], "kv@own", 6) == 0);
	pair_free(p);
}

/* Messages without a seq are written in their turn: at once, or behind
 * what waits. */
static void without_seq(void)
{
	struct pair *p = pair_new(10, 1000, true);
	struct msg bare = { 0 };
	put_frame(&bare, "payload", 7);
	live(p, 1, &bare);
	live_seq(p, 2, 1);
	live_seq(p, 3, 3);
	live(p, 4, &bare);
	ASSERT_EQ_U64(p->g.nheld, 2);
	ASSERT(replayed(p, 5, 2, NULL, "two") == 0);
	end_replay(p);
	ASSERT(wrote(p, (uint64_t[]){ 999, 1, 1002, 3, 999 }, 5));
	ASSERT(!p->log.v[0].seq_frame);
	pair_free(p);
}

/* Finishing ends the replay running and writes everything held, asking
 * for no more gaps. */
static void finishing(void)
{
	struct pair *p = pair_new(10, 1000, true);
	live_seq(p, 1, 1);
	live_seq(p, 2, 3);
	live_seq(p, 3, 7);
	live_seq(p, 4, 8);
	ASSERT(replayed(p, 5, 2, NULL, "two") == 0);
	finish(p);
	ASSERT(wrote(p, (uint64_t[]){ 1, 1002, 3, 7, 8 }, 5));
	ASSERT_EQ_U64(count_kind(p, REC_ASK), 1);
	ASSERT(!p->g.may_ask);
	live_seq(p, 6, 20);
	ASSERT(wrote(p, (uint64_t[]){ 1, 1002, 3, 7, 8, 20 }, 6));
	pair_free(p);
}

int main(void)
{
	RUN(matches_reference);
	RUN(nothing);
	RUN(no_gap);
	RUN(gap_filled);
	RUN(bad_and_late_replies);
	RUN(asks_again_for_dropped_replies);
	RUN(asking_again_is_bounded);
	RUN(replay_brings_nothing);
	RUN(live_copies_after_replay);
	RUN(bounds_end_the_replay);
	RUN(held_queue_wraps);
	RUN(replay_from);
	RUN(topics_of_replies);
	RUN(without_seq);
	RUN(finishing);
	return unit_done();
}

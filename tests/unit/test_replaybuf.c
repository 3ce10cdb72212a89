/* kvpub's replay buffer under random batches, against a plain array that
 * appends and then forgets from the front while over its bounds; and the
 * edge cases: empty, full by steps and by bytes, the ring wrapping and
 * growing while wrapped, repeated and falling seqs, batches too large. */
#include <string.h>

#include "net/replaybuf.h"
#include "unit.h"

enum { MAXKEEP = 300, MAXLEN = 40 };

struct ref_entry {
	uint64_t seq;
	uint8_t topic[MAXLEN], payload[MAXLEN];
	size_t topic_n, payload_n;
};

struct ref {
	size_t steps, max_bytes;
	struct ref_entry v[MAXKEEP + 1];
	size_t n;
	bool seen;
	uint64_t last;
};

static size_t ref_bytes(const struct ref *r)
{
	size_t b = 0;
	for (size_t i = 0; i < r->n; i++)
		b += r->v[i].topic_n + r->v[i].payload_n;
	return b;
}

static void ref_forget_first(struct ref *r)
{
	memmove(&r->v[0], &r->v[1], (r->n - 1) * sizeof r->v[0]);
	r->n--;
}

static void ref_keep(struct ref *r, const struct ref_entry *e)
{
	if (r->seen && e->seq <= r->last)
		r->n = 0;
	r->seen = true;
	r->last = e->seq;
	if (r->steps == 0 || e->topic_n + e->payload_n > r->max_bytes)
		return;
	r->v[r->n++] = *e;
	while (r->n > r->steps || ref_bytes(r) > r->max_bytes)
		ref_forget_first(r);
}

static bool same_as_ref(const struct kv_replaybuf *b, const struct ref *r)
{
	if (kv_replaybuf_count(b) != r->n || b->bytes != ref_bytes(r))
		return false;
	for (size_t i = 0; i < r->n; i++) {
		const struct kv_replaybuf_entry *e = kv_replaybuf_at(b, i);
		struct kv_frame t = kv_replaybuf_topic(e), p = kv_replaybuf_payload(e);
		const struct ref_entry *w = &r->v[i];
		if (e->seq != w->seq || t.n != w->topic_n || p.n != w->payload_n ||
		    (t.n && memcmp(t.p, w->topic, t.n) != 0) || (p.n && memcmp(p.p, w->payload, p.n) != 0))
			return false;
		/* seqs rise: a request from a start seq is answered by a suffix */
		if (i && e->seq <= kv_replaybuf_at(b, i - 1)->seq)
			return false;
	}
	return true;
}

static void random_entry(struct ref_entry *e, uint64_t seq, size_t maxlen)
{
	e->seq = seq;
	e->topic_n = (size_t)(unit_rand() % (maxlen / 4 + 1));
	e->payload_n = (size_t)(unit_rand() % (maxlen + 1));
	for (size_t i = 0; i < e->topic_n; i++)
		e->topic[i] = (uint8_t)unit_rand();
	for (size_t i = 0; i < e->payload_n; i++)
		e->payload[i] = (uint8_t)unit_rand();
}

static void keep_both(struct kv_replaybuf *b, struct ref *r, const struct ref_entry *e)
{
	kv_replaybuf_keep(b, e->seq, (struct kv_frame){ e->topic, e->topic_n },
			  (struct kv_frame){ e->payload, e->payload_n });
	ref_keep(r, e);
}

/* Mostly the next seq, sometimes a jump, now and then a repeat or a step
 * back; bounds small enough that both forget often, steps beyond 64 so
 * that the ring grows (also while wrapped: bytes bound it near 64), and
 * steps 0. */
static void matches_reference(void)
{
	static const struct {
		size_t steps, max_bytes;
		unsigned restarts;      /* per 1000 batches */
	} cases[] = { { 1, 30, 60 }, { 5, 200, 60 }, { 64, 4000, 60 }, { 100, 1000, 60 },
		      { 100, 1650, 2 }, { 300, 100000, 2 }, { 0, 50, 60 } };
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct kv_replaybuf b;
		static struct ref r;
		memset(&r, 0, sizeof r);
		r.steps = cases[c].steps;
		r.max_bytes = cases[c].max_bytes;
		kv_replaybuf_init(&b, r.steps, r.max_bytes);
		uint64_t seq = unit_rand() % 3, full_and_wrapped = 0;
		for (int op = 0; op < 30000; op++) {
			uint64_t k = unit_rand() % 1000;
			if (k < cases[c].restarts)
				seq = k % 2 ? seq : seq / 2;
			else
				seq += k < 950 ? 1 : 2 + unit_rand() % 5;
			full_and_wrapped += b.n == b.alloc && b.head != 0;
			struct ref_entry e;
			random_entry(&e, seq, MAXLEN);
			keep_both(&b, &r, &e);
			ASSERT(same_as_ref(&b, &r));
			ASSERT(b.alloc <= (r.steps > 64 ? r.steps : 64));
		}
		/* the case where the ring grows while wrapped came up */
		ASSERT(r.steps != 100 || r.max_bytes != 1650 || full_and_wrapped > 0);
		kv_replaybuf_free(&b);
	}
}

static void keep_seq(struct kv_replaybuf *b, uint64_t seq, size_t n)
{
	static const uint8_t bytes[MAXLEN] = { 0 };
	kv_replaybuf_keep(b, seq, (struct kv_frame){ bytes, 0 }, (struct kv_frame){ bytes, n });
}

static bool seqs_are(const struct kv_replaybuf *b, const uint64_t *want, size_t n)
{
	if (kv_replaybuf_count(b) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (kv_replaybuf_at(b, i)->seq != want[i])
			return false;
	return true;
}

static void empty(void)
{
	struct kv_replaybuf b;
	kv_replaybuf_init(&b, 10, 100);
	ASSERT_EQ_U64(kv_replaybuf_count(&b), 0);
	kv_replaybuf_free(&b);
	/* steps 0 keeps nothing */
	kv_replaybuf_init(&b, 0, 100);
	keep_seq(&b, 1, 5);
	keep_seq(&b, 2, 5);
	ASSERT_EQ_U64(kv_replaybuf_count(&b), 0);
	ASSERT_EQ_U64(b.bytes, 0);
	kv_replaybuf_free(&b);
	/* an empty topic and payload are a batch like any */
	kv_replaybuf_init(&b, 10, 100);
	keep_seq(&b, 0, 0);
	ASSERT(seqs_are(&b, (uint64_t[]){ 0 }, 1));
	ASSERT_EQ_U64(kv_replaybuf_payload(kv_replaybuf_at(&b, 0)).n, 0);
	kv_replaybuf_free(&b);
}

/* Full by steps: the ring wraps and the oldest go first. */
static void full_wraps(void)
{
	struct kv_replaybuf b;
	kv_replaybuf_init(&b, 5, 1000);
	for (uint64_t s = 1; s <= 13; s++)
		keep_seq(&b, s, 3);
	ASSERT(seqs_are(&b, (uint64_t[]){ 9, 10, 11, 12, 13 }, 5));
	ASSERT_EQ_U64(b.alloc, 5);
	ASSERT(b.head != 0);
	ASSERT_EQ_U64(b.bytes, 15);
	kv_replaybuf_free(&b);
}

/* Full by bytes: as many of the oldest go as the new batch needs; one of
 * max_bytes exactly leaves it alone; one larger is not kept, and the
 * buffer keeps what it had. */
static void full_by_bytes(void)
{
	struct kv_replaybuf b;
	kv_replaybuf_init(&b, 100, 20);
	keep_seq(&b, 1, 8);
	keep_seq(&b, 2, 8);
	keep_seq(&b, 3, 4);
	ASSERT(seqs_are(&b, (uint64_t[]){ 1, 2, 3 }, 3));
	keep_seq(&b, 4, 9);
	ASSERT(seqs_are(&b, (uint64_t[]){ 3, 4 }, 2));
	ASSERT_EQ_U64(b.bytes, 13);
	keep_seq(&b, 5, 21);
	ASSERT(seqs_are(&b, (uint64_t[]){ 3, 4 }, 2));
	keep_seq(&b, 6, 20);
	ASSERT(seqs_are(&b, (uint64_t[]){ 6 }, 1));
	ASSERT_EQ_U64(b.bytes, 20);
	kv_replaybuf_free(&b);
}

/* The ring grows only when full; full while wrapped, it is laid out from
 * slot 0 again in order. */
static void grows_while_wrapped(void)
{
	struct kv_replaybuf b;
	kv_replaybuf_init(&b, 1000, 640);
	uint64_t s = 1;
	for (; s <= 64; s++)
		keep_seq(&b, s, 10);
	ASSERT_EQ_U64(b.alloc, 64);
	keep_seq(&b, s++, 10);        /* the first goes for bytes: head moves */
	ASSERT_EQ_U64(b.head, 1);
	ASSERT_EQ_U64(kv_replaybuf_count(&b), 64);
	keep_seq(&b, s++, 0);         /* 64 kept, none to forget: the ring grows */
	ASSERT_EQ_U64(b.alloc, 128);
	ASSERT_EQ_U64(b.head, 0);
	ASSERT_EQ_U64(kv_replaybuf_count(&b), 65);
	for (size_t i = 0; i < 65; i++)
		ASSERT_EQ_U64(kv_replaybuf_at(&b, i)->seq, i + 2);
	kv_replaybuf_free(&b);
	/* and never beyond steps */
	kv_replaybuf_init(&b, 100, 1 << 20);
	for (s = 1; s <= 250; s++)
		keep_seq(&b, s, 1);
	ASSERT_EQ_U64(b.alloc, 100);
	ASSERT_EQ_U64(kv_replaybuf_at(&b, 0)->seq, 151);
	kv_replaybuf_free(&b);
}

/* A seq that does not rise empties the buffer first: a repeat, a step
 * back, and a repeat of a seq that was too large to keep. */
static void repeated_and_falling_seqs(void)
{
	struct kv_replaybuf b;
	kv_replaybuf_init(&b, 10, 100);
	keep_seq(&b, 5, 1);
	keep_seq(&b, 6, 1);
	keep_seq(&b, 6, 2);
	ASSERT(seqs_are(&b, (uint64_t[]){ 6 }, 1));
	ASSERT_EQ_U64(b.bytes, 2);
	keep_seq(&b, 7, 1);
	keep_seq(&b, 9, 1);
	ASSERT(seqs_are(&b, (uint64_t[]){ 6, 7, 9 }, 3));
	keep_seq(&b, 1, 1);
	ASSERT(seqs_are(&b, (uint64_t[]){ 1 }, 1));
	keep_seq(&b, 2, 1);
	keep_seq(&b, 3, 101);
	ASSERT(seqs_are(&b, (uint64_t[]){ 1, 2 }, 2));
	keep_seq(&b, 3, 1);
	ASSERT(seqs_are(&b, (uint64_t[]){ 3 }, 1));
	keep_seq(&b, UINT64_MAX, 1);
	keep_seq(&b, 0, 1);
	ASSERT(seqs_are(&b, (uint64_t[]){ 0 }, 1));
	kv_replaybuf_free(&b);
}

int main(void)
{
	RUN(matches_reference);
	RUN(empty);
	RUN(full_wraps);
	RUN(full_by_bytes);
	RUN(grows_while_wrapped);
	RUN(repeated_and_falling_seqs);
	return unit_done();
}

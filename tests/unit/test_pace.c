/* pace (kvpub's timing) and the publisher side of the replay codec:
 * due times at speed 1, N and max, no drift, records stamped out of order,
 * new time bases; reply frames in both shapes read back by the subscriber's
 * parser, end marker included. */
#include <string.h>

#include "net/pace.h"
#include "net/replay.h"
#include "unit.h"

#define MS 1000000ull
#define T0 1764500000000000000ull

static void speed_one_keeps_recorded_gaps(void)
{
	struct kv_pace p;
	kv_pace_init(&p, 1);
	ASSERT_EQ_U64(kv_pace_due(&p, T0, 5000), 5000);
	ASSERT_EQ_U64(kv_pace_due(&p, T0 + 10 * MS, 5001), 5000 + 10 * MS);
	/* Late records do not shift the ones after them: no drift. */
	ASSERT_EQ_U64(kv_pace_due(&p, T0 + 20 * MS, 5000 + 90 * MS), 5000 + 20 * MS);
	ASSERT_EQ_U64(kv_pace_due(&p, T0 + 100 * MS, 5000 + 91 * MS), 5000 + 100 * MS);
}

static void speed_n_divides_gaps(void)
{
	struct kv_pace p;
	kv_pace_init(&p, 4);
	ASSERT_EQ_U64(kv_pace_due(&p, T0, 0), 0);
	ASSERT_EQ_U64(kv_pace_due(&p, T0 + 100 * MS, 1), 25 * MS);
	kv_pace_init(&p, 0.5);
	ASSERT_EQ_U64(kv_pace_due(&p, T0, 7), 7);
	ASSERT_EQ_U64(kv_pace_due(&p, T0 + 100 * MS, 8), 7 + 200 * MS);
}

static void max_speed_is_always_now(void)
{
	struct kv_pace p;
	kv_pace_init(&p, 0);
	ASSERT_EQ_U64(kv_pace_due(&p, T0, 42), 42);
	ASSERT_EQ_U64(kv_pace_due(&p, T0 + 3600000 * MS, 43), 43);
}

static void earlier_stamp_is_due_at_once(void)
{
	struct kv_pace p;
	kv_pace_init(&p, 1);
	kv_pace_due(&p, T0, 1000);
	kv_pace_due(&p, T0 + 50 * MS, 1000);
	/* kvsub writes replayed records before the held one, stamped later. */
	ASSERT(kv_pace_due(&p, T0 + 20 * MS, 1000 + 50 * MS) <= 1000 + 50 * MS);
	ASSERT_EQ_U64(kv_pace_due(&p, T0 + 60 * MS, 1000 + 50 * MS), 1000 + 60 * MS);
}

static void stamp_before_base_starts_new_base(void)
{
	struct kv_pace p;
	kv_pace_init(&p, 1);
	kv_pace_due(&p, T0 + 3600000 * MS, 1000);
	ASSERT_EQ_U64(kv_pace_due(&p, T0 + 3600000 * MS + 10 * MS, 1000), 1000 + 10 * MS);
	/* A capture from an hour earlier: follows the previous record, no pause. */
	ASSERT_EQ_U64(kv_pace_due(&p, T0, 1000 + 5 * MS), 1000 + 10 * MS);
	ASSERT_EQ_U64(kv_pace_due(&p, T0 + 7 * MS, 1000 + 5 * MS), 1000 + 17 * MS);
}

static void rebase_closes_the_pause(void)
{
	struct kv_pace p;
	kv_pace_init(&p, 1);
	kv_pace_due(&p, T0, 0);
	kv_pace_due(&p, T0 + 10 * MS, 0);
	kv_pace_rebase(&p);
	/* The next capture starts a day later: due right after the last one. */
	ASSERT_EQ_U64(kv_pace_due(&p, T0 + 86400000 * MS, 3 * MS), 10 * MS);
	ASSERT_EQ_U64(kv_pace_due(&p, T0 + 86400000 * MS + 1 * MS, 3 * MS), 11 * MS);
	kv_pace_rebase(&p);
	/* Behind schedule: the new base is now. */
	ASSERT_EQ_U64(kv_pace_due(&p, T0, 500 * MS), 500 * MS);
}

static void replay_reply_round_trip(void)
{
	uint8_t buf[8];
	struct kv_frame f[4];
	struct kv_replay_reply r;
	struct kv_frame topic = { (const uint8_t *)"kv@h", 4 }, payload = { (const uint8_t *)"\x93\x01\x90\x00", 4 };

	size_t n = kv_replay_reply(KV_REPLAY_V025, topic, 77, payload, buf, f);
	ASSERT_EQ_U64(n, 3);
	ASSERT_EQ_U64(f[0].n, 0);
	kv_replay_parse_reply(f, n, &r);
	ASSERT(r.kind == KV_REPLAY_BATCH && !r.has_topic);
	ASSERT_EQ_U64(r.seq, 77);
	ASSERT(r.payload.n == 4 && memcmp(r.payload.p, payload.p, 4) == 0);

	n = kv_replay_reply(KV_REPLAY_V026, topic, 78, payload, buf, f);
	ASSERT_EQ_U64(n, 4);
	kv_replay_parse_reply(f, n, &r);
	ASSERT(r.kind == KV_REPLAY_BATCH && r.has_topic);
	ASSERT(r.topic.n == 4 && memcmp(r.topic.p, "kv@h", 4) == 0);
	ASSERT_EQ_U64(r.seq, 78);
}

static void replay_end_marker_both_shapes(void)
{
	uint8_t buf[8];
	struct kv_frame f[4];
	struct kv_replay_reply r;
	struct kv_frame topic = { (const uint8_t *)"kv", 2 }, payload = { (const uint8_t *)"x", 1 };
	for (int shape = KV_REPLAY_V025; shape <= KV_REPLAY_V026; shape++) {
		size_t n = kv_replay_reply((enum kv_replay_shape)shape, topic, KV_REPLAY_END, payload, buf, f);
		ASSERT_EQ_U64(n, shape == KV_REPLAY_V026 ? 4 : 3);
		ASSERT_EQ_U64(f[n - 1].n, 0);            /* empty payload */
		if (shape == KV_REPLAY_V026)
			ASSERT_EQ_U64(f[1].n, 0);        /* and empty topic, as vLLM */
		for (int i = 0; i < 8; i++)
			ASSERT_EQ_U64(buf[i], 0xff);
		kv_replay_parse_reply(f, n, &r);
		ASSERT(r.kind == KV_REPLAY_END_MARK);
	}
}

int main(void)
{
	RUN(speed_one_keeps_recorded_gaps);
	RUN(speed_n_divides_gaps);
	RUN(max_speed_is_always_now);
	RUN(earlier_stamp_is_due_at_once);
	RUN(stamp_before_base_starts_new_base);
	RUN(rebase_closes_the_pause);
	RUN(replay_reply_round_trip);
	RUN(replay_end_marker_both_shapes);
	return unit_done();
}

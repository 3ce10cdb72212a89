#include "net/replay.h"

static uint64_t be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

void kv_replay_parse_reply(const struct kv_frame *frames, size_t n, struct kv_replay_reply *r)
{
	static const uint8_t none;
	r->kind = KV_REPLAY_BAD;
	r->has_topic = false;
	r->topic.p = &none;
	r->topic.n = 0;
	/* The empty delimiter first, as vLLM sends it to a DEALER. */
	if (n < 3 || frames[0].n != 0)
		return;
	const struct kv_frame *seq = &frames[1], *payload = &frames[2];
	if (n == 4) {
		r->has_topic = true;
		r->topic = frames[1];
		seq = &frames[2];
		payload = &frames[3];
	} else if (n != 3) {
		return;
	}
	if (seq->n != 8)
		return;
	r->seq = be64(seq->p);
	r->payload = *payload;
	r->kind = r->seq == KV_REPLAY_END ? KV_REPLAY_END_MARK
		: r->seq == KV_REPLAY_SNAPSHOT && payload->n == 8 ? KV_REPLAY_SNAPSHOT_MARK : KV_REPLAY_BATCH;
}

void kv_replay_request(uint64_t start_seq, uint8_t buf[8], struct kv_frame req[2])
{
	static const uint8_t none;
	kv_seq_encode(start_seq, buf);
	req[0].p = &none;
	req[0].n = 0;
	req[1].p = buf;
	req[1].n = 8;
}

bool kv_replay_parse_request(const struct kv_frame *frames, size_t n, uint64_t *start_seq)
{
	if (n != 2 || frames[0].n != 0 || frames[1].n != 8)
		return false;
	*start_seq = be64(frames[1].p);
	return true;
}

size_t kv_replay_reply(enum kv_replay_shape shape, struct kv_frame topic, uint64_t seq,
		       struct kv_frame payload, uint8_t buf[8], struct kv_frame out[4])
{
	static const uint8_t none;
	size_t n = 0;
	kv_seq_encode(seq, buf);
	out[n++] = (struct kv_frame){ &none, 0 };
	if (shape == KV_REPLAY_V026)
		out[n++] = seq == KV_REPLAY_END ? (struct kv_frame){ &none, 0 } : topic;
	out[n++] = (struct kv_frame){ buf, 8 };
	out[n++] = seq == KV_REPLAY_END ? (struct kv_frame){ &none, 0 } : payload;
	return n;
}

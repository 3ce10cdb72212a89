/* fakepub: a scripted vLLM-like publisher for the tests.
 * Publishes N messages [topic, seq, payload] on a PUB socket, each payload a
 * valid vLLM batch with one BlockStored, and optionally serves the vLLM replay
 * protocol (both reply shapes).  Seqs in --skip are left out of the live
 * stream but kept for replay, so a subscriber sees a gap it can fill.
 * --log FILE lists every message (topic hex, seq, payload hex), the truth a
 * test compares a capture with.  --mooncake publishes Mooncake master batches
 * instead: [ts_ms, [{"event_type": "stored", "seq_hashes": [h]}], 0].  --replay-bogus SEQ also answers every
 * replay request with a batch of that seq after the real ones (a peer that
 * answers beyond what it was asked).  --replay-snapshot answers every replay
 * request as TensorRT-LLM's replay socket answers one for batches it no
 * longer holds: the snapshot header (seq -2, payload the last seq S as 8
 * bytes big-endian), every batch it published numbered S, the end marker.
 * --buffer N keeps only the last N
 * batches published for replay, as vLLM's buffer_steps does.  --replay-drop
 * K/D answers as vLLM's ROUTER does when its reader lags and its send
 * high-water mark is reached: of each request's replies, the end marker
 * included, K go out, then D are dropped, then K go out, and so on (the
 * first K always go: a new connection's queue is empty).  It is an XPUB
 * socket, so that it can wait (--wait MS at most) until a subscriber has
 * actually subscribed. */
#include <getopt.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "decode/kvcap.h"
#include "net/replay.h"
#include "base/util.h"
#include "arg.h"

struct msg {
	uint64_t seq;
	msgpack_sbuffer payload;
};

struct opts {
	const char *endpoint, *replay, *topic, *log;
	long count, start_seq, skip_lo, skip_hi, restart_at, wait_ms, interval_us, linger_ms, tokens, bogus;
	long buffer, pass, drop;
	int shape;
	bool connect, mooncake, snapshot;
};

static void pack_batch(msgpack_sbuffer *sb, uint64_t seq, long tokens)
{
	msgpack_packer pk;
	msgpack_sbuffer_init(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 3);
	msgpack_pack_double(&pk, 1717000000.0 + (double)seq);
	msgpack_pack_array(&pk, 1);
	msgpack_pack_array(&pk, 6);
	msgpack_pack_str_with_body(&pk, "BlockStored", 11);
	msgpack_pack_array(&pk, 1);
	msgpack_pack_uint64(&pk, 0x1000 + seq);
	msgpack_pack_nil(&pk);
	msgpack_pack_array(&pk, (size_t)tokens);
	for (long i = 0; i < tokens; i++)
		msgpack_pack_uint32(&pk, (uint32_t)(seq * 16 + (uint64_t)i));
	msgpack_pack_int(&pk, (int)tokens);
	msgpack_pack_nil(&pk);
	msgpack_pack_int(&pk, 0);
}

static void pack_mooncake_batch(msgpack_sbuffer *sb, uint64_t seq)
{
	msgpack_packer pk;
	msgpack_sbuffer_init(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 3);
	msgpack_pack_uint64(&pk, 1717000000000ull + seq);
	msgpack_pack_array(&pk, 1);
	msgpack_pack_map(&pk, 2);
	msgpack_pack_str_with_body(&pk, "event_type", 10);
	msgpack_pack_str_with_body(&pk, "stored", 6);
	msgpack_pack_str_with_body(&pk, "seq_hashes", 10);
	msgpack_pack_array(&pk, 1);
	msgpack_pack_uint64(&pk, 0x1000 + seq);
	msgpack_pack_int(&pk, 0);
}

static void hex(FILE *f, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", b[i]);
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

/* Whether the n-th reply (from 0) of a request goes out under --replay-drop. */
static bool passes(const struct opts *o, long n)
{
	return o->drop <= 0 || n % (o->pass + o->drop) < o->pass;
}

static void reply_batch(void *router, zmq_msg_t *id, uint64_t seq, const msgpack_sbuffer *payload,
			const char *topic, int shape)
{
	uint8_t seqb[8];
	kv_seq_encode(seq, seqb);
	zmq_send(router, zmq_msg_data(id), zmq_msg_size(id), ZMQ_SNDMORE);
	zmq_send(router, "", 0, ZMQ_SNDMORE);
	if (shape == 26)
		zmq_send(router, topic, strlen(topic), ZMQ_SNDMORE);
	zmq_send(router, seqb, 8, ZMQ_SNDMORE);
	zmq_send(router, payload->data, payload->size, 0);
}

/* TensorRT-LLM's snapshot reply: the header, then the state at version S. */
static void reply_snapshot(void *router, zmq_msg_t *id, struct msg *msgs, long n, const char *topic, int shape)
{
	uint64_t version = n > 0 ? msgs[n - 1].seq : 0;
	msgpack_sbuffer header = { .size = 8, .data = kv_xmalloc(8), .alloc = 8 };
	kv_seq_encode(version, (uint8_t *)header.data);
	reply_batch(router, id, KV_REPLAY_SNAPSHOT, &header, topic, shape);
	free(header.data);
	for (long i = 0; i < n; i++)
		reply_batch(router, id, version, &msgs[i].payload, topic, shape);
}

static void serve_replay(void *router, struct msg *msgs, long n, const struct opts *o)
{
	const char *topic = o->topic;
	int shape = o->shape;
	zmq_msg_t part[4];
	size_t k = 0;
	while (k < 4) {
		zmq_msg_init(&part[k]);
		if (zmq_msg_recv(&part[k], router, k == 0 ? ZMQ_DONTWAIT : 0) < 0) {
			zmq_msg_close(&part[k]);
			break;
		}
		int more = zmq_msg_more(&part[k]);
		k++;
		if (!more)
			break;
	}
	if (k == 0)
		return;
	struct kv_frame fr[3];
	for (size_t i = 1; i < k && i < 4; i++)
		fr[i - 1] = (struct kv_frame){ zmq_msg_data(&part[i]), zmq_msg_size(&part[i]) };
	uint64_t start;
	if (k == 3 && kv_replay_parse_request(fr, 2, &start)) {
		uint8_t seqb[8];
		long sent = 0;
		if (o->snapshot)
			reply_snapshot(router, &part[0], msgs, n, topic, shape);
		for (long i = o->buffer > 0 && n > o->buffer ? n - o->buffer : 0; i < n && !o->snapshot; i++)
			if (msgs[i].seq >= start && passes(o, sent++))
				reply_batch(router, &part[0], msgs[i].seq, &msgs[i].payload, topic, shape);
		if (o->bogus >= 0 && n > 0 && passes(o, sent++))
			reply_batch(router, &part[0], (uint64_t)o->bogus, &msgs[0].payload, topic, shape);
		/* vLLM 0.26 ends with an empty topic frame, not the publisher's topic */
		if (passes(o, sent)) {
			kv_seq_encode(KV_REPLAY_END, seqb);
			zmq_send(router, zmq_msg_data(&part[0]), zmq_msg_size(&part[0]), ZMQ_SNDMORE);
			zmq_send(router, "", 0, ZMQ_SNDMORE);
			if (shape == 26)
				zmq_send(router, "", 0, ZMQ_SNDMORE);
			zmq_send(router, seqb, 8, ZMQ_SNDMORE);
			zmq_send(router, "", 0, 0);
		}
	}
	for (size_t i = 0; i < k; i++)
		zmq_msg_close(&part[i]);
}

static void poll_replay(void *router, struct msg *msgs, long n, const struct opts *o, long wait_ms)
{
	uint64_t end = kv_monotonic_ns() + (uint64_t)wait_ms * 1000000u;
	do {
		if (router) {
			zmq_pollitem_t it = { .socket = router, .events = ZMQ_POLLIN };
			/* what is waiting, and no wait between messages */
			while (zmq_poll(&it, 1, wait_ms > 0 ? 10 : 0) > 0)
				serve_replay(router, msgs, n, o);
		} else {
			sleep_us(wait_ms > 10 ? 10000 : wait_ms * 1000);
		}
	} while (kv_monotonic_ns() < end);
}

/* Waits until a subscription arrives, or wait_ms passed. */
static void wait_subscriber(void *pub, void *router, struct msg *msgs, const struct opts *o)
{
	uint64_t end = kv_monotonic_ns() + (uint64_t)o->wait_ms * 1000000u;
	while (o->wait_ms > 0 && kv_monotonic_ns() < end) {
		zmq_pollitem_t it = { .socket = pub, .events = ZMQ_POLLIN };
		if (zmq_poll(&it, 1, 10) > 0) {
			char b[256];
			if (zmq_recv(pub, b, sizeof b, 0) > 0 && b[0] == 1)
				break;
		}
		if (router)
			poll_replay(router, msgs, 0, o, 0);
	}
}

/* --replay-drop K/D */
static void drop_pattern(const char *s, long *pass, long *drop)
{
	char buf[64];
	size_t n = strcspn(s, "/");
	if (!s[n] || n >= sizeof buf)
		kv_die(64, "--replay-drop: '%s' is not K/D", s);
	snprintf(buf, sizeof buf, "%.*s", (int)n, s);
	*pass = arg_long(buf);
	*drop = arg_long(s + n + 1);
	if (*pass < 1 || *drop < 0)
		kv_die(64, "--replay-drop: '%s' is not K/D with K >= 1", s);
}

/* --skip LO-HI */
static void skip_range(const char *s, long *lo, long *hi)
{
	char buf[64];
	size_t n = strcspn(s, "-");
	if (!s[n] || n >= sizeof buf)
		kv_die(64, "--skip: '%s' is not LO-HI", s);
	snprintf(buf, sizeof buf, "%.*s", (int)n, s);
	*lo = arg_long(buf);
	*hi = arg_long(s + n + 1);
}

int main(int argc, char **argv)
{
	struct opts o = { .topic = "", .count = 10, .skip_lo = -1, .skip_hi = -1, .restart_at = -1,
			  .wait_ms = 5000, .linger_ms = 500, .shape = 25, .tokens = 16, .bogus = -1 };
	static const struct option lo[] = {
		{ "count", 1, NULL, 'n' }, { "start-seq", 1, NULL, 's' }, { "skip", 1, NULL, 'k' },
		{ "restart-at", 1, NULL, 'R' }, { "replay", 1, NULL, 'r' }, { "shape", 1, NULL, 'S' },
		{ "topic", 1, NULL, 't' }, { "wait", 1, NULL, 'w' }, { "interval-us", 1, NULL, 'i' },
		{ "linger", 1, NULL, 'l' }, { "log", 1, NULL, 'L' }, { "tokens", 1, NULL, 'T' },
		{ "connect", 0, NULL, 'C' }, { "mooncake", 0, NULL, 'M' }, { "replay-bogus", 1, NULL, 'B' },
		{ "replay-snapshot", 0, NULL, 'P' }, { "buffer", 1, NULL, 'b' }, { "replay-drop", 1, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	kv_set_prog(argv);
	while ((c = getopt_long(argc, argv, "n:s:k:R:r:S:t:w:i:l:L:T:CMB:Pb:D:", lo, NULL)) != -1) {
		switch (c) {
		case 'n': o.count = arg_long(optarg); break;
		case 's': o.start_seq = arg_long(optarg); break;
		case 'k': skip_range(optarg, &o.skip_lo, &o.skip_hi); break;
		case 'R': o.restart_at = arg_long(optarg); break;
		case 'r': o.replay = optarg; break;
		case 'S': o.shape = (int)arg_long(optarg); break;
		case 't': o.topic = optarg; break;
		case 'w': o.wait_ms = arg_long(optarg); break;
		case 'i': o.interval_us = arg_long(optarg); break;
		case 'l': o.linger_ms = arg_long(optarg); break;
		case 'L': o.log = optarg; break;
		case 'T': o.tokens = arg_long(optarg); break;
		case 'C': o.connect = true; break;
		case 'M': o.mooncake = true; break;
		case 'B': o.bogus = arg_long(optarg); break;
		case 'P': o.snapshot = true; break;
		case 'b': o.buffer = arg_long(optarg); break;
		case 'D': drop_pattern(optarg, &o.pass, &o.drop); break;
		default: return 64;
		}
	}
	if (optind != argc - 1)
		kv_die(64, "usage: fakepub [options] ENDPOINT");
	o.endpoint = argv[optind];
	void *ctx = zmq_ctx_new();
	void *pub = zmq_socket(ctx, ZMQ_XPUB);
	int hwm = 0;
	zmq_setsockopt(pub, ZMQ_SNDHWM, &hwm, sizeof hwm);
	if ((o.connect ? zmq_connect(pub, o.endpoint) : zmq_bind(pub, o.endpoint)) != 0)
		kv_die(69, "%s: %s", o.endpoint, zmq_strerror(zmq_errno()));
	void *router = NULL;
	if (o.replay) {
		router = zmq_socket(ctx, ZMQ_ROUTER);
		/* no real drops: only those --replay-drop asks for, which a test can count */
		zmq_setsockopt(router, ZMQ_SNDHWM, &hwm, sizeof hwm);
		if (zmq_bind(router, o.replay) != 0)
			kv_die(69, "%s: %s", o.replay, zmq_strerror(zmq_errno()));
	}
	FILE *log = o.log ? fopen(o.log, "w") : NULL;
	struct msg *msgs = kv_xcalloc((size_t)o.count + 1, sizeof *msgs);
	uint64_t seq = (uint64_t)o.start_seq;
	wait_subscriber(pub, router, msgs, &o);
	for (long i = 0; i < o.count; i++) {
		if (i == o.restart_at)
			seq = 0;
		msgs[i].seq = seq;
		if (o.mooncake)
			pack_mooncake_batch(&msgs[i].payload, seq);
		else
			pack_batch(&msgs[i].payload, seq, o.tokens);
		bool skipped = (long)seq >= o.skip_lo && (long)seq <= o.skip_hi;
		if (!skipped) {
			uint8_t seqb[8];
			kv_seq_encode(seq, seqb);
			zmq_send(pub, o.topic, strlen(o.topic), ZMQ_SNDMORE);
			zmq_send(pub, seqb, 8, ZMQ_SNDMORE);
			zmq_send(pub, msgs[i].payload.data, msgs[i].payload.size, 0);
		}
		if (log) {
			hex(log, o.topic, strlen(o.topic));
			fprintf(log, "\t%llu\t", (unsigned long long)seq);
			hex(log, msgs[i].payload.data, msgs[i].payload.size);
			fprintf(log, "\t%s\n", skipped ? "skipped" : "live");
		}
		seq++;
		if (router || o.interval_us)
			poll_replay(router, msgs, i + 1, &o, 0);
		if (o.interval_us)
			sleep_us(o.interval_us);
	}
	if (log)
		fclose(log);
	poll_replay(router, msgs, o.count, &o, o.linger_ms);
	for (long i = 0; i < o.count; i++)
		msgpack_sbuffer_destroy(&msgs[i].payload);
	free(msgs);
	zmq_close(pub);
	if (router)
		zmq_close(router);
	zmq_ctx_term(ctx);
	return 0;
}

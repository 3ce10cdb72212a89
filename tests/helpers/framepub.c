/* framepub: publishes messages of given frame sizes, for kvsub's limits.
 *   framepub [-w MS] [-l MS] ENDPOINT MESSAGE...
 * Each MESSAGE is a comma-separated list of frame sizes in bytes; a size
 * "seq" is an 8-byte big-endian seq frame (0, 1, 2, ... per message), and
 * "N*K" stands for K frames of N bytes.  Frame bytes are 'x'.  Binds a PUB
 * (XPUB) socket on ENDPOINT, waits (-w MS at most, default 5000) until a
 * subscriber has subscribed, sends the messages in order, and gives them
 * up to -l MS (default 500) to leave. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "decode/kvcap.h"
#include "base/util.h"
#include "arg.h"

static long number(const char *s, char **end)
{
	long v = strtol(s, end, 10);
	if (*end == s || v < 0)
		kv_die(64, "bad size near '%s'", s);
	return v;
}

/* Sends one message (a bad spec ends the program). */
static void send_message(void *pub, const char *spec, uint64_t seq, char *buf)
{
	/* Count the frames first: the last one goes without ZMQ_SNDMORE. */
	size_t sizes[KV_CAP_MAX_FRAMES * 2], n = 0;
	bool is_seq[KV_CAP_MAX_FRAMES * 2];
	for (const char *p = spec; *p;) {
		long size = -1, times = 1;
		char *end;
		if (strncmp(p, "seq", 3) == 0)
			end = (char *)p + 3;
		else
			size = number(p, &end);
		if (*end == '*')
			times = number(end + 1, &end);
		if (times < 0 || (size_t)times > sizeof sizes / sizeof sizes[0] - n)
			kv_die(64, "too many frames in '%s'", spec);
		for (long k = 0; k < times; k++) {
			is_seq[n] = size < 0;
			sizes[n++] = size < 0 ? 8 : (size_t)size;
		}
		p = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			kv_die(64, "bad message '%s'", spec);
	}
	for (size_t i = 0; i < n; i++) {
		uint8_t seqb[8];
		kv_seq_encode(seq, seqb);
		const void *data = is_seq[i] ? (const void *)seqb : buf;
		if (zmq_send(pub, data, sizes[i], i + 1 < n ? ZMQ_SNDMORE : 0) < 0)
			kv_die(70, "send: %s", zmq_strerror(zmq_errno()));
	}
}

int main(int argc, char **argv)
{
	long wait_ms = 5000, linger_ms = 500;
	int c;
	kv_set_prog(argv);
	while ((c = getopt(argc, argv, "w:l:")) != -1) {
		switch (c) {
		case 'w': wait_ms = arg_long(optarg); break;
		case 'l': linger_ms = arg_long(optarg); break;
		default: return 64;
		}
	}
	if (optind + 1 >= argc)
		kv_die(64, "usage: framepub [-w MS] [-l MS] ENDPOINT MESSAGE...");
	/* The largest frame any message asks for, in one buffer of 'x'. */
	size_t max = 1;
	for (int i = optind + 1; i < argc; i++)
		for (const char *p = argv[i]; *p; p++)
			if (*p >= '0' && *p <= '9' && (p == argv[i] || p[-1] == ',')) {
				char *end;
				size_t v = (size_t)number(p, &end);
				if (v > max)
					max = v;
			}
	char *buf = kv_xmalloc(max);
	memset(buf, 'x', max);
	void *ctx = zmq_ctx_new();
	void *pub = zmq_socket(ctx, ZMQ_XPUB);
	int hwm = 0;
	zmq_setsockopt(pub, ZMQ_SNDHWM, &hwm, sizeof hwm);
	if (zmq_bind(pub, argv[optind]) != 0)
		kv_die(69, "%s: %s", argv[optind], zmq_strerror(zmq_errno()));
	/* An XPUB socket sees the subscription: send only once someone listens. */
	zmq_pollitem_t it = { .socket = pub, .events = ZMQ_POLLIN };
	if (zmq_poll(&it, 1, wait_ms) > 0) {
		char b[256];
		zmq_recv(pub, b, sizeof b, 0);
	}
	for (int i = optind + 1; i < argc; i++)
		send_message(pub, argv[i], (uint64_t)(i - optind - 1), buf);
	/* Closing waits up to the linger time for what is still queued. */
	int linger = (int)linger_ms;
	zmq_setsockopt(pub, ZMQ_LINGER, &linger, sizeof linger);
	zmq_close(pub);
	zmq_ctx_term(ctx);
	free(buf);
	return 0;
}

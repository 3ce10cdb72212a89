/* replayreq: a vLLM replay client for the tests, written apart from
 * lib/net/replay.c so that it checks kvpub's replies rather than sharing their
 * code.  It connects a DEALER to ENDPOINT, sends vLLM's request
 * ["", start_seq as 8 bytes big-endian] and prints each reply message on a
 * line: its number of frames, then every frame in hex, "-" for an empty
 * one.  It stops after the end marker (the frame before the last is
 * ff ff ff ff ff ff ff ff) and exits 0, or exits 1 when none came within
 * the time limit.
 *   replayreq [-t MS] ENDPOINT START_SEQ
 * With -n N it is a client that does not read: it sends the request N
 * times, reads nothing, and exits after -t MS. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "arg.h"

#define MAX_FRAMES 16

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void print_frame(const zmq_msg_t *m)
{
	const unsigned char *p = zmq_msg_data((zmq_msg_t *)m);
	size_t n = zmq_msg_size((zmq_msg_t *)m);
	putchar(' ');
	if (n == 0)
		putchar('-');
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
}

static bool is_end_seq(const zmq_msg_t *m)
{
	const unsigned char *p = zmq_msg_data((zmq_msg_t *)m);
	if (zmq_msg_size((zmq_msg_t *)m) != 8)
		return false;
	for (int i = 0; i < 8; i++)
		if (p[i] != 0xff)
			return false;
	return true;
}

/* Receives and prints one message; true when it was the end marker. */
static bool take_reply(void *s)
{
	zmq_msg_t part[MAX_FRAMES];
	int n = 0, more = 1;
	while (more) {
		/* past MAX_FRAMES only the count is kept */
		zmq_msg_t extra, *m = n < MAX_FRAMES ? &part[n] : &extra;
		zmq_msg_init(m);
		if (zmq_msg_recv(m, s, 0) < 0)
			kv_die(70, "receive: %s", zmq_strerror(zmq_errno()));
		more = zmq_msg_more(m);
		if (m == &extra)
			zmq_msg_close(m);
		n++;
	}
	int kept = n < MAX_FRAMES ? n : MAX_FRAMES;
	printf("%d", n);
	for (int i = 0; i < kept; i++)
		print_frame(&part[i]);
	putchar('\n');
	fflush(stdout);
	bool end = n >= 2 && n <= MAX_FRAMES && is_end_seq(&part[n - 2]);
	for (int i = 0; i < kept; i++)
		zmq_msg_close(&part[i]);
	return end;
}

int main(int argc, char **argv)
{
	kv_set_prog(argv);
	long limit_ms = 5000, unread = 0;
	int c;
	while ((c = getopt(argc, argv, "t:n:")) != -1) {
		if (c == 't')
			limit_ms = arg_long(optarg);
		else if (c == 'n')
			unread = arg_long(optarg);
		else
			kv_die(64, "usage: replayreq [-t MS] [-n N] ENDPOINT START_SEQ");
	}
	if (argc - optind != 2)
		kv_die(64, "usage: replayreq [-t MS] ENDPOINT START_SEQ");
	unsigned long long start = arg_u64(argv[optind + 1]);
	unsigned char seq[8];
	for (int i = 0; i < 8; i++)
		seq[i] = (unsigned char)(start >> (56 - 8 * i));

	void *ctx = zmq_ctx_new();
	void *s = zmq_socket(ctx, ZMQ_DEALER);
	int zero = 0;
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
	if (zmq_connect(s, argv[optind]) != 0)
		kv_die(64, "%s: %s", argv[optind], zmq_strerror(zmq_errno()));
	for (long i = 0; i < (unread ? unread : 1); i++)
		if (zmq_send(s, "", 0, ZMQ_SNDMORE) < 0 || zmq_send(s, seq, 8, 0) < 0)
			kv_die(70, "send: %s", zmq_strerror(zmq_errno()));
	if (unread) {
		usleep((useconds_t)limit_ms * 1000);
		zmq_close(s);
		zmq_ctx_term(ctx);
		return 0;
	}

	int status = 1;
	long long deadline = now_ms() + limit_ms;
	for (long long left; (left = deadline - now_ms()) > 0;) {
		zmq_pollitem_t item = { .socket = s, .events = ZMQ_POLLIN };
		if (zmq_poll(&item, 1, (long)left) > 0 && take_reply(s)) {
			status = 0;
			break;
		}
	}
	if (status)
		fprintf(stderr, "replayreq: no end marker within %ld ms\n", limit_ms);
	zmq_close(s);
	zmq_ctx_term(ctx);
	return status;
}

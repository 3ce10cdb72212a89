/* capture: live capture from ZMQ publishers into a kvcap stream (kvsub(1)).
 * One SUB socket per endpoint, all polled together, and while a gap is
 * replayed a DEALER socket to the publisher's replay socket; the output,
 * held for a slow reader within bounds; per-endpoint statistics.  Which
 * message is written when (seq order without duplicates, the messages held
 * behind a replay) is each endpoint's gapfill (net/gapfill). */
#ifndef KV_CAPTURE_H
#define KV_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/err.h"
#include "base/out.h"

/* Bytes of records that may wait for a slow reader of a pipe or socket
 * output (kv_out_nonblocking); a message beyond is dropped and counted. */
#define KV_CAPTURE_MAX_HELD (64u << 20)
/* Bytes of frames that ZeroMQ may queue for each socket: its receive
 * high-water mark is at most this divided by max_message (kvsub(1) LIMITS). */
#define KV_CAPTURE_MAX_QUEUED (64u << 20)
/* The default max_message: a mark of 64 messages, few enough wake-ups of
 * ZeroMQ's thread per message (one each 32), and far above a vLLM batch. */
#define KV_CAPTURE_MAX_MESSAGE (1u << 20)
/* After a disconnect, how long ZeroMQ has to say that it reconnects; past
 * it, it dropped the connection for a protocol error (a frame over
 * max_message) and will not, and the capture connects again itself. */
#define KV_CAPTURE_RECONNECT_NS 1000000000ull

struct kv_capture_opts {
	const char *const *topics;   /* subscription prefixes; none means all */
	size_t ntopics;
	bool bind;
	int hwm;                     /* messages ZeroMQ may queue per socket, 0: no count */
	uint64_t max_message;        /* ZMQ_MAXMSGSIZE: the largest frame; 0: KV_CAPTURE_MAX_MESSAGE */
	uint64_t replay_timeout_ns;  /* an ask of a replay ends after this without a reply */
	unsigned replay_retries;     /* asks again per gap after the first */
	bool replay_from_set;
	uint64_t replay_from;
	uint64_t max_records;        /* 0: no limit */
};

struct kv_capture;

struct kv_capture *kv_capture_new(struct kv_out *out, const struct kv_capture_opts *opts);
/* Adds an endpoint (deduplicated).  False, with 64 (ZMQ rejects the
 * endpoint) or 69 (bind failed) and the message in e, when it fails. */
bool kv_capture_add(struct kv_capture *c, const char *endpoint, const char *replay_endpoint, struct kv_err *e);
/* Sets the replay endpoint of an added src; false, with 64 in e, when src
 * is unknown or the replay endpoint is rejected. */
bool kv_capture_set_replay(struct kv_capture *c, const char *src, const char *replay_endpoint, struct kv_err *e);
size_t kv_capture_count(const struct kv_capture *c);
/* Sends the --replay-from requests. */
void kv_capture_start(struct kv_capture *c);
/* Waits up to timeout_ms for messages and handles all that are ready;
 * flushes the output when nothing more is ready.  False once the capture is
 * done (record limit reached or output failed). */
bool kv_capture_step(struct kv_capture *c, int timeout_ms);
/* Writes what pending replays brought and every held message (no more replays). */
void kv_capture_finish(struct kv_capture *c);
uint64_t kv_capture_records(const struct kv_capture *c);
void kv_capture_print_stats(const struct kv_capture *c, FILE *f);
/* One line for a terminal: totals so far. */
void kv_capture_print_progress(const struct kv_capture *c, FILE *f);
void kv_capture_free(struct kv_capture *c);
struct kv_metrics;
/* Writes the per-endpoint counters as kvtools_sub_* metrics (kvsub(1));
 * false with `PATH: why` (74) in e. */
bool kv_capture_write_metrics(const struct kv_capture *c, struct kv_metrics *m, struct kv_err *e);

#endif

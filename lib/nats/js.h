/* js: kvnats's side of NATS JetStream, through libnats (nats.c): the
 * connection, the stream (created when absent), asynchronous publishing
 * with every publish accounted for, pull consumers read in batches and
 * acknowledged once what they delivered is written, and the listing of
 * streams and consumers.
 *
 * No publish is lost silently: each is acknowledged by the stream (stored,
 * or a duplicate of one stored), or is retried one at a time for the retry
 * time (KV_JS_RETRY_NS unless set) and then counted as lost.  Message ids make a
 * retry of a message that was in fact stored a duplicate, not a second copy.
 * No request fails while a cluster recovers: one not served for a reason
 * that may pass (a timeout, no responders, JetStream not available yet) is
 * asked again for the same retry time.  Consumers have as many replicas as
 * their stream, and a durable is consumed by one kvnats at a time.
 *
 * This module is the only user of libnats.  It lives in lib/nats/, outside
 * the sources of libkvtools.a, and only kvnats links it (see the Makefile). */
#ifndef KV_JS_H
#define KV_JS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* How long one publish is retried before it is counted as lost, and a
 * request JetStream did not serve (a cluster electing leaders after a
 * server died) is asked again before it fails, by default. */
#define KV_JS_RETRY_NS (20ull * 1000000000ull)

struct kv_js;

/* Connects to the first server of servers (comma-separated URLs) that
 * answers; false with e (69) when none does.  *js is set either way, for
 * kv_js_close. */
bool kv_js_connect(struct kv_js **js, const char *servers, struct kv_err *e);
void kv_js_close(struct kv_js *js);

struct kv_js_stream_opts {
	const char *name;
	const char *subjects;     /* the one subject filter of the stream: NAME.> */
	int64_t replicas;
	int64_t max_age_ns;       /* 0: no limit */
	int64_t max_bytes;        /* -1: no limit */
	int64_t dup_window_ns;
};

/* Creates the stream unless it exists; false with e (69). */
bool kv_js_ensure_stream(struct kv_js *js, const struct kv_js_stream_opts *o, bool *created, struct kv_err *e);
struct kv_js_stream_state {
	uint64_t first, last;     /* sequences of its first and last message */
	int64_t created_ns;       /* when it was created: with its name, which stream it is (one deleted
				   * and made again under its name is another, its sequences anew) */
	int64_t replicas;
};
/* The state of an existing stream; false with e: 66 (no such stream) or 69.
 * In a cluster the sequences may come from a replica that is behind (one
 * that knows of no leader answers too). */
bool kv_js_stream_state(struct kv_js *js, const char *name, struct kv_js_stream_state *st, struct kv_err *e);
/* The stream sequence of the stream's last message on filter (NULL: any),
 * 0 if none, as the stream's leader knows it; false with e (69). */
bool kv_js_last_seq(struct kv_js *js, const char *stream, const char *filter, uint64_t *seq, struct kv_err *e);

/* ---- publishing ---- */
struct kv_js_pub_counts {
	uint64_t published;       /* publishes started */
	uint64_t stored;          /* acknowledged as new */
	uint64_t duplicates;      /* acknowledged as already stored (message id) */
	uint64_t retried;         /* publishes that had to be retried */
	uint64_t lost;            /* given up after the retry time */
};
/* Records and headers apart: a capture of N records is N records, whatever
 * headers travel with it. */
struct kv_js_pub_stats {
	struct kv_js_pub_counts records, headers;
	char last_error[200];
};

/* How long a publish is retried, and a request asked again (see above). */
void kv_js_set_retry(struct kv_js *js, uint64_t ns);
/* Messages published on subject are counted as headers, the others as
 * records. */
void kv_js_set_header_subject(struct kv_js *js, const char *subject);
/* Publishes data (copied) on subject with the message id; retries as
 * described above.  False once a publish was lost. */
bool kv_js_publish(struct kv_js *js, const char *subject, const char *msg_id, const void *data, size_t n);
/* Waits for every acknowledgement (retrying what needs it) and returns the
 * totals; false when any publish was lost. */
bool kv_js_publish_finish(struct kv_js *js, struct kv_js_pub_stats *st);

/* ---- consuming ---- */
enum kv_js_start { KV_JS_START_ALL, KV_JS_START_SEQ, KV_JS_START_TIME };

struct kv_js_consumer_opts {
	const char *stream;
	const char *durable;      /* NULL: an ephemeral consumer */
	const char *filter;       /* NULL: the whole stream */
	enum kv_js_start start;
	uint64_t start_seq;
	int64_t start_time_ns;
};

struct kv_js_msg {
	const uint8_t *data;
	size_t len;
	uint64_t stream_seq;
	uint64_t pending;         /* messages left for the consumer after this one */
	const char *subject;      /* the subject it was published on */
	int64_t time_ns;          /* when the stream stored it (0 from core NATS: not stored) */
};

struct kv_js_sub;

/* Core NATS (no stream): a subscription to subject (wildcards allowed),
 * and its next message within timeout_ms; false with e (69) when the
 * server is lost, true with *got false when nothing came.  The message
 * lives until the next call. */
struct kv_js_core;
bool kv_js_core_subscribe(struct kv_js *js, const char *subject, struct kv_js_core **sub, struct kv_err *e);
bool kv_js_core_next(struct kv_js_core *sub, int timeout_ms, struct kv_js_msg *msg, bool *got, struct kv_err *e);
void kv_js_core_unsubscribe(struct kv_js_core *sub);

/* How kv_js_subscribe came by the consumer. */
enum kv_js_bound {
	KV_JS_NEW,        /* created: an ephemeral, or a durable that did not exist */
	KV_JS_RESUMED,    /* a durable, bound as it was: it goes on after its last delivery */
	KV_JS_AFTER_ACK,  /* a durable with deliveries never acknowledged, created again after its
			   * last acknowledged message, so that the stream comes in order */
	KV_JS_MOVED,      /* a durable created again at the start asked for, which is not where it
			   * would have gone on */
};
struct kv_js_bind_info {
	enum kv_js_bound how;
	uint64_t was_after;       /* a durable found: the stream sequence it would have gone on after */
	uint64_t after;           /* the stream sequence the consumer delivers after: it hands out every
				   * message it takes after this one, in order */
};

/* Creates or binds the consumer; false with e: 64 (a durable that filters
 * another subject), 66 (no such stream) or 69 (also when another kvnats
 * holds the durable: one kvnats at a time on a durable, for as long as its
 * connection lives).  An existing durable goes on where it is, unless it
 * has deliveries never acknowledged (it is created again after the last one
 * acknowledged) or o asks for another start (it is created again there:
 * moved, never left where it is while another start was asked for). */
bool kv_js_subscribe(struct kv_js *js, const struct kv_js_consumer_opts *o, struct kv_js_sub **sub,
		     struct kv_js_bind_info *info, struct kv_err *e);
/* Whether the consumer has handed out every message it takes up to the
 * stream sequence end_seq: it has nothing pending, and the stream's leader
 * holds none of them after the last one handed out.  The consumer's own
 * count is not enough: its server may be a replica still catching up with
 * the stream (back from a restart), with nothing pending while the leader
 * holds more.  False with e (69). */
bool kv_js_done(struct kv_js_sub *s, uint64_t end_seq, bool *done, struct kv_err *e);
/* Up to max messages, waiting at most timeout_ms for the first; the
 * previous batch is released.  Their count in *count (0 on a timeout);
 * false with e (69).
 * Messages come in stream order, each once: a redelivery is left out, and
 * after a lost one the consumer starts again behind the last handed out. */
bool kv_js_fetch(struct kv_js_sub *s, int max, int timeout_ms, const struct kv_js_msg **msgs, int *count,
		 struct kv_err *e);
/* Acknowledges every message of the last batch (durables only; AckAll),
 * waiting for the server when sync; false with e (69). */
bool kv_js_ack(struct kv_js_sub *s, bool sync, struct kv_err *e);
/* How often a lost delivery (a consumer sequence skipped) made the
 * consumer start again after the last message handed out. */
uint64_t kv_js_restarts(const struct kv_js_sub *s);
void kv_js_unsubscribe(struct kv_js_sub *s);

/* ---- listing ---- */
struct kv_js_stream_row {
	const char *name;
	const char *const *subjects;
	int nsubjects;
	uint64_t messages, bytes, first_seq, last_seq;
	int64_t replicas, consumers;
};
struct kv_js_consumer_row {
	const char *stream, *name, *filter;
	bool durable;
	uint64_t pending, ack_pending, delivered, ack_floor;
};
struct kv_js_lister {
	void (*stream)(void *arg, const struct kv_js_stream_row *r);
	void (*consumer)(void *arg, const struct kv_js_consumer_row *r);
	void *arg;
};
/* Every stream (or only the one named), each followed by its consumers;
 * false with e: 66 (no such stream) or 69. */
bool kv_js_list(struct kv_js *js, const char *only, const struct kv_js_lister *l, struct kv_err *e);

#endif

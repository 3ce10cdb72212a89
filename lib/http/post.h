/* post: HTTP POSTs of JSON bodies to one service through libcurl, for
 * kvquery --against (kvquery(1) "Comparing with a router").  Requests wait
 * in a queue and run at most `concurrency` at a time, started no faster
 * than `rate` a second, each bounded by a total and a connect timeout, its
 * answer bounded in size; connections are kept and reused.  Every request
 * is reported once, in the order it finishes: with the HTTP status and the
 * body the service sent whatever the status (the caller decides what a 404
 * means), or with what went wrong on the way (refused, timed out, too
 * large) and a kind for it.
 *
 * Like fetch.c, this module lives in lib/http/, outside libkvtools.a, and
 * only kvquery links it (see the Makefile); its transfers are set up as
 * http/easy does for both (CURLOPT_NOSIGNAL: signal handling stays the
 * program's). */
#ifndef KV_POST_H
#define KV_POST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct kv_post_opts {
	uint64_t timeout_ns;          /* a whole request */
	uint64_t connect_timeout_ns;  /* until the connection is up */
	size_t max_body;              /* bytes of answer kept: a larger one fails */
	unsigned concurrency;         /* requests in flight, at least 1 */
	double rate;                  /* requests started a second; 0: no limit */
	const char *user_agent;
};

/* What went wrong on the way, when no HTTP answer came. */
enum kv_post_failure {
	KV_POST_OK = 0,
	KV_POST_UNAVAILABLE,          /* refused, unreachable, no such host: nobody answered */
	KV_POST_TIMEOUT,              /* no whole answer within the timeout */
	KV_POST_TOO_LARGE,            /* an answer over max_body */
	KV_POST_BROKEN,               /* the connection broke, or another transfer failure */
};

struct kv_post_result {
	uint64_t id;                  /* as given to kv_post_submit */
	enum kv_post_failure failure;
	long status;                  /* HTTP status, when failure is KV_POST_OK */
	const char *body;             /* and the answer, valid until the next kv_post_next */
	size_t len;
	const char *error;            /* failure: what curl says, one line */
	uint64_t elapsed_ns;          /* from the start of the request to its end */
};

struct kv_post;

/* False when libcurl cannot be set up (70). */
bool kv_post_new(struct kv_post **p, const struct kv_post_opts *o, struct kv_err *e);
void kv_post_free(struct kv_post *p);
/* Queues a POST of body (len bytes of JSON) to url.  Neither is copied:
 * both must stay as they are until the request is reported. */
void kv_post_submit(struct kv_post *p, uint64_t id, const char *url, const char *body, size_t len);
/* Requests queued or running. */
size_t kv_post_busy(const struct kv_post *p);
/* Starts what the limits allow and moves the transfers on, waiting at
 * most timeout_ms for something to happen. */
void kv_post_wait(struct kv_post *p, int timeout_ms);
/* A finished request, each reported once; false when there is none. */
bool kv_post_next(struct kv_post *p, struct kv_post_result *r);
/* The words for a failure kind: "unavailable", "timeout", ... */
const char *kv_post_failure_name(enum kv_post_failure f);

#endif

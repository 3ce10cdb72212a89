/* fetch: HTTP GETs of metrics endpoints through libcurl, all endpoints at
 * once in one curl multi handle, driven in slices of at most the caller's
 * timeout so that a main loop stays responsive to signals.
 *
 * Each transfer has a total and a connect timeout, follows at most three
 * redirects, speaks only http and https, asks for the Prometheus text
 * format (and any compression curl can undo), and keeps at most max_body
 * bytes of decoded response: a larger one fails.  Anything but status 200
 * fails.  A failed transfer is one line of text naming what went wrong
 * (kv_fetch_result: kvstat's scrapeset decides what to say of it).
 *
 * Its transfers are set up as http/easy does for lib/http (CURLOPT_NOSIGNAL:
 * signal handling stays the program's).  It lives in lib/http/, outside
 * libkvtools.a and the fuzz harnesses, and only kvstat links it (see the
 * Makefile). */
#ifndef KV_FETCH_H
#define KV_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct kv_fetch_opts {
	uint64_t timeout_ns;          /* whole transfer */
	uint64_t connect_timeout_ns;  /* until the connection is up */
	size_t max_body;              /* bytes of response, after decompression */
	const char *user_agent;
};

struct kv_fetch_result {
	size_t i;                     /* the endpoint, as kv_fetch_add numbered it */
	bool ok;
	const char *body;             /* ok: the response, valid until i starts again */
	size_t len;
	const char *error;            /* !ok: what went wrong */
	const char *kind;             /* !ok: the same for the same kind of failure
	                                 (error can differ in details, such as times) */
};

struct kv_fetch;

/* False when libcurl cannot be set up (70). */
bool kv_fetch_new(struct kv_fetch **f, const struct kv_fetch_opts *o, struct kv_err *e);
void kv_fetch_free(struct kv_fetch *f);
/* The URL must be http:// or https://; endpoints are numbered from 0 in
 * the order added.  False when libcurl cannot take another (70). */
bool kv_fetch_add(struct kv_fetch *f, const char *url, struct kv_err *e);
/* Starts a GET of endpoint i (one at a time per endpoint). */
void kv_fetch_start(struct kv_fetch *f, size_t i);
/* Transfers still running. */
size_t kv_fetch_running(const struct kv_fetch *f);
/* Moves the transfers on, waiting at most timeout_ms for something to do. */
void kv_fetch_wait(struct kv_fetch *f, int timeout_ms);
/* A finished transfer, each reported once; false when there is none. */
bool kv_fetch_next(struct kv_fetch *f, struct kv_fetch_result *r);
/* Abandons every running transfer. */
void kv_fetch_cancel(struct kv_fetch *f);

#endif

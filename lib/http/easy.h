/* easy: one libcurl transfer as lib/http's modules set it up (fetch:
 * kvstat's GETs; post: kvquery --against's POSTs), so that both programs
 * speak HTTP the same way: http and https only, CURLOPT_NOSIGNAL (signal
 * handling stays the program's), a total and a connect timeout, any
 * compression curl can undo, and the answer kept in memory up to a bound (a
 * larger one fails the transfer and is told apart from other failures). */
#ifndef KV_HTTP_EASY_H
#define KV_HTTP_EASY_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/curlapi.h"

/* An answer as it comes: at most max bytes, NUL-terminated. */
struct kv_http_answer {
	char *buf;
	size_t len, cap, max;
	bool too_big;                  /* more than max came: the transfer failed */
};

struct kv_http_easy_opts {
	uint64_t timeout_ns;           /* the whole transfer */
	uint64_t connect_timeout_ns;   /* until the connection is up */
	size_t max_body;               /* bytes of answer, after decompression */
	struct curl_slist *headers;    /* the caller's, kept until the handle goes */
	const char *user_agent;        /* or NULL */
	long max_redirects;            /* 0: a redirect is not followed, but reported with its status */
};

/* Sets up e through c: its answer goes to a, curl's words for a failure to errbuf
 * (CURL_ERROR_SIZE bytes), and priv is its CURLOPT_PRIVATE. */
void kv_http_easy_setup(const struct kv_curl *c, CURL *e, const struct kv_http_easy_opts *o, struct kv_http_answer *a, char *errbuf,
			void *priv);
/* Empties a for the next transfer (its buffer is kept). */
void kv_http_answer_reset(struct kv_http_answer *a);
/* Whether a transfer that ended with c failed for an answer over the bound. */
bool kv_http_too_large(const struct kv_http_answer *a, CURLcode c);

#endif

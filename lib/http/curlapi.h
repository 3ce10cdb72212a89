/* curlapi: the libcurl functions lib/http calls, as a table that a module
 * opens before its first transfer and closes after its last, so that the
 * program, not the module, decides when libcurl is loaded.  Two link units
 * fill it, one per way (see the Makefile): curllinked.c from libcurl linked
 * into the program (kvstat, which always speaks HTTP), curlload.c from
 * libcurl.so.4 loaded by dlopen when the table is opened (kvquery, which
 * speaks HTTP only for --against: libcurl and the 30 libraries it brings
 * took some 15 ms of CPU, a third of every kvquery run's start-up, whether
 * it asked a router or not). */
#ifndef KV_HTTP_CURLAPI_H
#define KV_HTTP_CURLAPI_H

#include <curl/curl.h>
#include <stdbool.h>

#include "base/err.h"

struct kv_curl {
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *e);
	CURLcode (*easy_setopt)(CURL *e, CURLoption o, ...);
	CURLcode (*easy_getinfo)(CURL *e, CURLINFO i, ...);
	const char *(*easy_strerror)(CURLcode c);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_cleanup)(CURLM *m);
	CURLMcode (*multi_add_handle)(CURLM *m, CURL *e);
	CURLMcode (*multi_remove_handle)(CURLM *m, CURL *e);
	CURLMcode (*multi_perform)(CURLM *m, int *running);
	CURLMcode (*multi_poll)(CURLM *m, struct curl_waitfd extra[], unsigned n, int timeout_ms, int *ret);
	CURLMsg *(*multi_info_read)(CURLM *m, int *left);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
	void *lib;                     /* what dlopen gave, or NULL */
};

/* curl_global_init through c once it is filled (both ways of filling it
 * end here); false with 70 and libcurl's words. */
static inline bool kv_curl_global_init(const struct kv_curl *c, struct kv_err *e)
{
	CURLcode r = c->global_init(CURL_GLOBAL_DEFAULT);
	if (r != CURLE_OK)
		return kv_err_set(e, KV_EX_SOFTWARE, "cannot set up libcurl: %s", c->easy_strerror(r));
	return true;
}

/* Fills c and sets libcurl up (curl_global_init); false when libcurl cannot
 * be loaded or set up (70, with what went wrong). */
bool kv_curl_open(struct kv_curl *c, struct kv_err *e);
/* curl_global_cleanup, and libcurl unloaded where it was loaded. */
void kv_curl_close(struct kv_curl *c);

#endif

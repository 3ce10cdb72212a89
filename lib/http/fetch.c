#include "http/fetch.h"
#include "base/util.h"
#include "http/curlapi.h"
#include "http/easy.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { IDLE, RUNNING, DONE };

struct xfer {
	CURL *easy;
	char *url;
	struct kv_http_answer ans;
	int state;
	CURLcode code;
	long status;
	char errbuf[CURL_ERROR_SIZE];
	char msg[CURL_ERROR_SIZE + 64];
	char kind[64];
};

struct kv_fetch {
	struct kv_curl curl;
	CURLM *multi;
	struct curl_slist *headers;
	struct kv_fetch_opts o;
	/* Each transfer on its own allocation: curl keeps pointers to it (write
	 * data, error buffer, private pointer) while the array of them grows. */
	struct xfer **x;
	size_t n, cap, running;
};

bool kv_fetch_new(struct kv_fetch **out, const struct kv_fetch_opts *o, struct kv_err *e)
{
	*out = NULL;
	struct kv_fetch *f = kv_xcalloc(1, sizeof *f);
	if (!kv_curl_open(&f->curl, e)) {
		free(f);
		return false;
	}
	f->o = *o;
	f->multi = f->curl.multi_init();
	f->headers = f->curl.slist_append(NULL, "Accept: text/plain;version=0.0.4;q=1.0,*/*;q=0.1");
	if (!f->multi || !f->headers) {
		kv_fetch_free(f);
		return kv_err_set(e, KV_EX_SOFTWARE, "cannot set up libcurl");
	}
	*out = f;
	return true;
}

void kv_fetch_free(struct kv_fetch *f)
{
	if (!f)
		return;
	kv_fetch_cancel(f);
	for (size_t i = 0; i < f->n; i++) {
		f->curl.easy_cleanup(f->x[i]->easy);
		free(f->x[i]->url);
		free(f->x[i]->ans.buf);
		free(f->x[i]);
	}
	free(f->x);
	if (f->multi)
		f->curl.multi_cleanup(f->multi);
	f->curl.slist_free_all(f->headers);
	kv_curl_close(&f->curl);
	free(f);
}

bool kv_fetch_add(struct kv_fetch *f, const char *url, struct kv_err *err)
{
	CURL *e = f->curl.easy_init();
	if (!e)
		return kv_err_set(err, KV_EX_SOFTWARE, "cannot set up libcurl for %s", url);
	f->x = kv_xgrow(f->x, &f->cap, f->n + 1, sizeof(struct xfer *));
	struct xfer *x = f->x[f->n] = kv_xcalloc(1, sizeof *x);
	x->url = kv_xstrdup(url);
	x->easy = e;
	f->curl.easy_setopt(e, CURLOPT_URL, x->url);
	struct kv_http_easy_opts eo = { .timeout_ns = f->o.timeout_ns, .connect_timeout_ns = f->o.connect_timeout_ns,
					.max_body = f->o.max_body, .headers = f->headers, .user_agent = f->o.user_agent,
					.max_redirects = 3 };
	kv_http_easy_setup(&f->curl, e, &eo, &x->ans, x->errbuf, x);
	f->n++;
	return true;
}

void kv_fetch_start(struct kv_fetch *f, size_t i)
{
	struct xfer *x = f->x[i];
	if (x->state == RUNNING)
		return;
	kv_http_answer_reset(&x->ans);
	x->errbuf[0] = 0;
	x->state = RUNNING;
	f->running++;
	if (f->curl.multi_add_handle(f->multi, x->easy) != CURLM_OK) {
		x->state = DONE;
		x->code = CURLE_FAILED_INIT;
		f->running--;
	}
}

size_t kv_fetch_running(const struct kv_fetch *f)
{
	return f->running;
}

static void collect(struct kv_fetch *f)
{
	CURLMsg *m;
	int left;
	while ((m = f->curl.multi_info_read(f->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		struct xfer *x = NULL;
		f->curl.easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		if (!x)
			continue;
		x->code = m->data.result;
		x->status = 0;
		f->curl.easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &x->status);
		f->curl.multi_remove_handle(f->multi, x->easy);
		if (x->state == RUNNING)
			f->running--;
		x->state = DONE;
	}
}

void kv_fetch_wait(struct kv_fetch *f, int timeout_ms)
{
	int still;
	f->curl.multi_perform(f->multi, &still);
	collect(f);
	for (size_t i = 0; i < f->n; i++)
		if (f->x[i]->state == DONE)
			return;
	f->curl.multi_poll(f->multi, NULL, 0, timeout_ms, NULL);
	f->curl.multi_perform(f->multi, &still);
	collect(f);
}

static void what_failed(const struct kv_fetch *f, struct xfer *x, struct kv_fetch_result *r)
{
	if (kv_http_too_large(&x->ans, x->code)) {
		snprintf(x->msg, sizeof x->msg, "response larger than %zu bytes", x->ans.max);
		snprintf(x->kind, sizeof x->kind, "size");
	} else if (x->code != CURLE_OK) {
		snprintf(x->msg, sizeof x->msg, "%s", x->errbuf[0] ? x->errbuf : f->curl.easy_strerror(x->code));
		snprintf(x->kind, sizeof x->kind, "curl %d", (int)x->code);
	} else {
		snprintf(x->msg, sizeof x->msg, "HTTP status %ld", x->status);
		snprintf(x->kind, sizeof x->kind, "http %ld", x->status);
	}
	r->error = x->msg;
	r->kind = x->kind;
}

bool kv_fetch_next(struct kv_fetch *f, struct kv_fetch_result *r)
{
	for (size_t i = 0; i < f->n; i++) {
		struct xfer *x = f->x[i];
		if (x->state != DONE)
			continue;
		x->state = IDLE;
		*r = (struct kv_fetch_result){ .i = i };
		if (x->code == CURLE_OK && x->status == 200 && !x->ans.too_big) {
			r->ok = true;
			r->body = x->ans.buf ? x->ans.buf : "";
			r->len = x->ans.len;
		} else {
			what_failed(f, x, r);
		}
		return true;
	}
	return false;
}

void kv_fetch_cancel(struct kv_fetch *f)
{
	for (size_t i = 0; i < f->n; i++) {
		struct xfer *x = f->x[i];
		if (x->state == RUNNING)
			f->curl.multi_remove_handle(f->multi, x->easy);
		x->state = IDLE;
	}
	f->running = 0;
}

#include "http/post.h"
#include "base/util.h"
#include "http/curlapi.h"
#include "http/easy.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A connection and what it is doing: a handle keeps its connection between
 * requests, and its answer until the caller has taken it. */
enum { IDLE, RUNNING, DONE, TAKEN };

struct handle {
	CURL *easy;
	int state;
	uint64_t id, started_ns, ended_ns, order;
	struct kv_http_answer ans;
	CURLcode code;
	long status;
	char errbuf[CURL_ERROR_SIZE];
};

struct request {
	uint64_t id;
	const char *url, *body;
	size_t len;
};

struct kv_post {
	struct kv_curl curl;
	CURLM *multi;
	struct curl_slist *headers;
	struct kv_post_opts o;
	struct handle *h;          /* o.concurrency of them; curl keeps pointers into each */
	struct request *q;         /* queued requests, [head, n) still to start */
	size_t head, n, cap;
	size_t running, done;
	uint64_t next_start_ns;    /* --rate: no request starts before this */
	uint64_t finished;         /* requests ended so far: the order results are reported in */
};

static void sleep_ms(int n)
{
	struct timespec t = { n / 1000, (long)(n % 1000) * 1000000L };
	nanosleep(&t, NULL);
}

static bool set_up_handle(struct kv_post *p, struct handle *h)
{
	CURL *e = h->easy = p->curl.easy_init();
	if (!e)
		return false;
	/* a POST is not followed to another place: a router that redirects is
	 * reported with its status */
	struct kv_http_easy_opts eo = { .timeout_ns = p->o.timeout_ns, .connect_timeout_ns = p->o.connect_timeout_ns,
					.max_body = p->o.max_body, .headers = p->headers, .user_agent = p->o.user_agent,
					.max_redirects = 0 };
	kv_http_easy_setup(&p->curl, e, &eo, &h->ans, h->errbuf, h);
	p->curl.easy_setopt(e, CURLOPT_POST, 1L);
	return true;
}

bool kv_post_new(struct kv_post **out, const struct kv_post_opts *o, struct kv_err *e)
{
	*out = NULL;
	struct kv_post *p = kv_xcalloc(1, sizeof *p);
	if (!kv_curl_open(&p->curl, e)) {
		free(p);
		return false;
	}
	p->o = *o;
	if (p->o.concurrency == 0)
		p->o.concurrency = 1;
	p->multi = p->curl.multi_init();
	struct curl_slist *hd = p->curl.slist_append(NULL, "Content-Type: application/json");
	hd = hd ? p->curl.slist_append(hd, "Accept: application/json") : NULL;
	/* no "Expect: 100-continue" round trip before a large body */
	p->headers = hd ? p->curl.slist_append(hd, "Expect:") : NULL;
	if (!p->headers && hd)
		p->curl.slist_free_all(hd);
	p->h = kv_xcalloc(p->o.concurrency, sizeof *p->h);
	bool ok = p->multi && p->headers;
	for (unsigned i = 0; ok && i < p->o.concurrency; i++)
		ok = set_up_handle(p, &p->h[i]);
	if (!ok) {
		kv_post_free(p);
		return kv_err_set(e, KV_EX_SOFTWARE, "cannot set up libcurl");
	}
	*out = p;
	return true;
}

void kv_post_free(struct kv_post *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->o.concurrency; i++) {
		struct handle *h = &p->h[i];
		if (h->state == RUNNING)
			p->curl.multi_remove_handle(p->multi, h->easy);
		if (h->easy)
			p->curl.easy_cleanup(h->easy);
		free(h->ans.buf);
	}
	free(p->h);
	free(p->q);
	if (p->multi)
		p->curl.multi_cleanup(p->multi);
	p->curl.slist_free_all(p->headers);
	kv_curl_close(&p->curl);
	free(p);
}

void kv_post_submit(struct kv_post *p, uint64_t id, const char *url, const char *body, size_t len)
{
	if (p->head == p->n)
		p->head = p->n = 0; /* all taken: the queue starts over */
	p->q = kv_xgrow(p->q, &p->cap, p->n + 1, sizeof *p->q);
	p->q[p->n++] = (struct request){ id, url, body, len };
}

size_t kv_post_busy(const struct kv_post *p)
{
	return (p->n - p->head) + p->running + p->done;
}

/* The handle whose answer the caller took last is free again. */
static void release_taken(struct kv_post *p)
{
	for (unsigned i = 0; i < p->o.concurrency; i++)
		if (p->h[i].state == TAKEN)
			p->h[i].state = IDLE;
}

static bool start(struct kv_post *p, struct handle *h, const struct request *rq, uint64_t now)
{
	h->id = rq->id;
	kv_http_answer_reset(&h->ans);
	h->errbuf[0] = 0;
	h->status = 0;
	h->code = CURLE_OK;
	h->started_ns = now;
	p->curl.easy_setopt(h->easy, CURLOPT_URL, rq->url);
	p->curl.easy_setopt(h->easy, CURLOPT_POSTFIELDS, rq->body);
	p->curl.easy_setopt(h->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->len);
	if (p->curl.multi_add_handle(p->multi, h->easy) != CURLM_OK) {
		h->code = CURLE_FAILED_INIT;
		h->ended_ns = now;
		h->order = p->finished++;
		h->state = DONE;
		p->done++;
		return false;
	}
	h->state = RUNNING;
	p->running++;
	return true;
}

/* Starts queued requests on idle handles as far as --rate allows. */
static void start_queued(struct kv_post *p)
{
	for (unsigned i = 0; i < p->o.concurrency && p->head < p->n; i++) {
		if (p->h[i].state != IDLE)
			continue;
		uint64_t now = kv_monotonic_ns();
		if (p->o.rate > 0 && now < p->next_start_ns)
			return;
		if (p->o.rate > 0)
			p->next_start_ns = now + (uint64_t)(1e9 / p->o.rate);
		start(p, &p->h[i], &p->q[p->head++], now);
	}
}

static void collect(struct kv_post *p)
{
	CURLMsg *m;
	int left;
	while ((m = p->curl.multi_info_read(p->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		struct handle *h = NULL;
		p->curl.easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&h);
		if (!h || h->state != RUNNING)
			continue;
		h->code = m->data.result;
		p->curl.easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &h->status);
		p->curl.multi_remove_handle(p->multi, h->easy);
		h->ended_ns = kv_monotonic_ns();
		h->order = p->finished++;
		h->state = DONE;
		p->running--;
		p->done++;
	}
}

void kv_post_wait(struct kv_post *p, int timeout_ms)
{
	release_taken(p);
	start_queued(p);
	int still;
	p->curl.multi_perform(p->multi, &still);
	collect(p);
	if (p->done)
		return;
	/* not past the next start --rate allows */
	if (p->o.rate > 0 && p->head < p->n) {
		uint64_t now = kv_monotonic_ns();
		int until = p->next_start_ns > now ? (int)((p->next_start_ns - now) / 1000000 + 1) : 0;
		timeout_ms = until < timeout_ms ? until : timeout_ms;
	}
	if (p->running)
		p->curl.multi_poll(p->multi, NULL, 0, timeout_ms, NULL);
	else if (timeout_ms > 0)
		sleep_ms(timeout_ms);
	p->curl.multi_perform(p->multi, &still);
	collect(p);
	start_queued(p);
}

static enum kv_post_failure failure_of(const struct handle *h)
{
	if (kv_http_too_large(&h->ans, h->code))
		return KV_POST_TOO_LARGE;
	switch (h->code) {
	case CURLE_OK: return KV_POST_OK;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY: return KV_POST_UNAVAILABLE;
	case CURLE_OPERATION_TIMEDOUT: return KV_POST_TIMEOUT;
	default: return KV_POST_BROKEN;
	}
}

bool kv_post_next(struct kv_post *p, struct kv_post_result *r)
{
	release_taken(p);
	struct handle *first = NULL;
	for (unsigned i = 0; i < p->o.concurrency; i++)
		if (p->h[i].state == DONE && (!first || p->h[i].order < first->order))
			first = &p->h[i];
	if (!first)
		return false;
	first->state = TAKEN;
	p->done--;
	*r = (struct kv_post_result){ .id = first->id, .failure = failure_of(first),
				      .elapsed_ns = first->ended_ns - first->started_ns };
	if (r->failure == KV_POST_OK) {
		r->status = first->status;
		r->body = first->ans.buf ? first->ans.buf : "";
		r->len = first->ans.len;
	} else if (r->failure == KV_POST_TOO_LARGE) {
		snprintf(first->errbuf, sizeof first->errbuf, "answer larger than %zu bytes", first->ans.max);
		r->error = first->errbuf;
	} else {
		if (!first->errbuf[0])
			snprintf(first->errbuf, sizeof first->errbuf, "%s", p->curl.easy_strerror(first->code));
		r->error = first->errbuf;
	}
	return true;
}

const char *kv_post_failure_name(enum kv_post_failure f)
{
	switch (f) {
	case KV_POST_OK: return "ok";
	case KV_POST_UNAVAILABLE: return "unavailable";
	case KV_POST_TIMEOUT: return "timeout";
	case KV_POST_TOO_LARGE: return "too_large";
	case KV_POST_BROKEN: return "broken";
	}
	return "broken";
}

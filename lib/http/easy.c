#include "http/easy.h"
#include "base/util.h"

#include <string.h>

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg)
{
	struct kv_http_answer *a = arg;
	size_t n = size * nmemb;
	if (n > a->max - a->len) {
		a->too_big = true;
		return 0; /* fails the transfer */
	}
	a->buf = kv_xgrow(a->buf, &a->cap, a->len + n + 1, 1);
	memcpy(a->buf + a->len, p, n);
	a->len += n;
	a->buf[a->len] = 0;
	return n;
}

/* curl takes milliseconds as a long: rounded up, so that 0.0001 s is not "none". */
static long ms(uint64_t ns)
{
	uint64_t v = (ns + 999999) / 1000000;
	return v > 0x7fffffff ? 0x7fffffff : (long)v;
}

void kv_http_easy_setup(const struct kv_curl *c, CURL *e, const struct kv_http_easy_opts *o, struct kv_http_answer *a, char *errbuf,
			void *priv)
{
	a->max = o->max_body;
	c->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
	c->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	c->easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
	c->easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
	c->easy_setopt(e, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	c->easy_setopt(e, CURLOPT_FOLLOWLOCATION, o->max_redirects > 0 ? 1L : 0L);
	if (o->max_redirects > 0)
		c->easy_setopt(e, CURLOPT_MAXREDIRS, o->max_redirects);
	c->easy_setopt(e, CURLOPT_TIMEOUT_MS, ms(o->timeout_ns));
	c->easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, ms(o->connect_timeout_ns));
	c->easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)o->max_body);
	c->easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	c->easy_setopt(e, CURLOPT_HTTPHEADER, o->headers);
	if (o->user_agent)
		c->easy_setopt(e, CURLOPT_USERAGENT, o->user_agent);
	c->easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
	c->easy_setopt(e, CURLOPT_WRITEDATA, a);
	c->easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	c->easy_setopt(e, CURLOPT_PRIVATE, priv);
}

void kv_http_answer_reset(struct kv_http_answer *a)
{
	a->len = 0;
	a->too_big = false;
	if (a->buf)
		a->buf[0] = 0;
}

bool kv_http_too_large(const struct kv_http_answer *a, CURLcode c)
{
	return a->too_big || c == CURLE_FILESIZE_EXCEEDED;
}

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

void kv_http_easy_setup(CURL *e, const struct kv_http_easy_opts *o, struct kv_http_answer *a, char *errbuf,
			void *priv)
{
	a->max = o->max_body;
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, o->max_redirects > 0 ? 1L : 0L);
	if (o->max_redirects > 0)
		curl_easy_setopt(e, CURLOPT_MAXREDIRS, o->max_redirects);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, ms(o->timeout_ns));
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, ms(o->connect_timeout_ns));
	curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)o->max_body);
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, o->headers);
	if (o->user_agent)
		curl_easy_setopt(e, CURLOPT_USERAGENT, o->user_agent);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_PRIVATE, priv);
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

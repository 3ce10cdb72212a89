#include "prom/scrapeset.h"
#include "prom/promout.h"
#include "base/util.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* A malformed endpoint argument: a usage error. */
static char *url_fail(struct kv_err *e, const char *what, const char *arg)
{
	if (arg)
		kv_err_set(e, KV_EX_USAGE, "%s: %s", arg, what);
	else
		kv_err_set(e, KV_EX_USAGE, "%s", what);
	return NULL;
}

static char *joined(const char *a, size_t an, const char *b, size_t bn, const char *c, size_t cn, const char *d)
{
	size_t dn = strlen(d);
	char *s = kv_xmalloc(an + bn + cn + dn + 1);
	memcpy(s, a, an);
	memcpy(s + an, b, bn);
	memcpy(s + an + bn, c, cn);
	memcpy(s + an + bn + cn, d, dn + 1);
	return s;
}

static bool port_ok(const char *p, size_t n)
{
	if (n == 0 || n > 5)
		return false;
	unsigned v = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (unsigned)(p[i] - '0');
	}
	return v >= 1 && v <= 65535;
}

static char *url_of(const char *arg, struct kv_err *e)
{
	if (!*arg)
		return url_fail(e, "an empty endpoint", NULL);
	for (const char *c = arg; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f)
			return url_fail(e, "blank or control character in the endpoint", arg);
	const char *sep = strstr(arg, "://");
	if (sep) {
		size_t sn = (size_t)(sep - arg);
		if (!((sn == 4 && strncasecmp(arg, "http", 4) == 0) || (sn == 5 && strncasecmp(arg, "https", 5) == 0)))
			return url_fail(e, "only http:// and https:// URLs can be scraped", arg);
		const char *auth = sep + 3, *rest = auth + strcspn(auth, "/?#");
		if (rest == auth)
			return url_fail(e, "no host", arg);
		if (*rest == '/')
			return kv_xstrdup(arg);
		return joined(arg, (size_t)(rest - arg), KV_SCRAPE_DEFAULT_PATH, strlen(KV_SCRAPE_DEFAULT_PATH), "", 0, rest);
	}
	size_t an = strcspn(arg, "/?#");
	const char *path = arg + an;
	const char *dpath = *path == '/' ? "" : KV_SCRAPE_DEFAULT_PATH;
	char port[16];
	snprintf(port, sizeof port, ":%d", KV_SCRAPE_DEFAULT_PORT);
	if (an == 0)
		return url_fail(e, "no host", arg);
	if (arg[0] == '[') {
		const char *close = memchr(arg, ']', an);
		if (!close || close == arg + 1)
			return url_fail(e, "unterminated IPv6 address", arg);
		size_t hn = (size_t)(close - arg) + 1;
		if (hn == an)
			return joined("http://", 7, arg, hn, port, strlen(port), *dpath ? KV_SCRAPE_DEFAULT_PATH : path);
		if (arg[hn] != ':' || !port_ok(arg + hn + 1, an - hn - 1))
			return url_fail(e, "bad port", arg);
		return joined("http://", 7, arg, an, dpath, strlen(dpath), path);
	}
	const char *colon = memchr(arg, ':', an);
	if (!colon)
		return joined("http://", 7, arg, an, port, strlen(port), *dpath ? KV_SCRAPE_DEFAULT_PATH : path);
	if (memchr(colon + 1, ':', an - (size_t)(colon + 1 - arg))) {
		/* a bare IPv6 address: bracket it */
		char *host = joined("[", 1, arg, an, "]", 1, "");
		char *url = joined("http://", 7, host, an + 2, port, strlen(port), *dpath ? KV_SCRAPE_DEFAULT_PATH : path);
		free(host);
		return url;
	}
	if (colon == arg)
		return url_fail(e, "no host", arg);
	if (!port_ok(colon + 1, an - (size_t)(colon + 1 - arg)))
		return url_fail(e, "bad port", arg);
	return joined("http://", 7, arg, an, dpath, strlen(dpath), path);
}

bool kv_scrape_url(const char *arg, char **url, struct kv_err *e)
{
	*url = url_of(arg, e);
	return *url != NULL;
}

void kv_scrapeset_init(struct kv_scrapeset *s, struct kv_out *out, const struct kv_scrape_opts *o)
{
	memset(s, 0, sizeof *s);
	s->o = *o;
	s->out = out;
}

void kv_scrapeset_free(struct kv_scrapeset *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct kv_scrape_ep *e = &s->ep[i];
		free(e->url);
		free(e->body);
		free(e->rates);
		free(e->error);
		free(e->kind);
		kv_prom_free(&e->doc);
		kv_promrate_free(&e->rate);
	}
	free(s->ep);
	memset(s, 0, sizeof *s);
}

size_t kv_scrapeset_add(struct kv_scrapeset *s, const char *url)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->ep[i].url, url) == 0)
			return i;
	s->ep = kv_xgrow(s->ep, &s->cap, s->n + 1, sizeof *s->ep);
	struct kv_scrape_ep *e = &s->ep[s->n];
	memset(e, 0, sizeof *e);
	e->url = kv_xstrdup(url);
	kv_prom_init(&e->doc);
	kv_promrate_init(&e->rate);
	return s->n++;
}

void kv_scrapeset_begin_round(struct kv_scrapeset *s)
{
	s->rounds++;
	for (size_t i = 0; i < s->n; i++)
		s->ep[i].done = false;
}

void kv_scrapeset_fail(struct kv_scrapeset *s, size_t i, const char *what, const char *kind, struct kv_err *news)
{
	struct kv_scrape_ep *e = &s->ep[i];
	if (!kind)
		kind = what;
	bool repeat = e->kind && strcmp(e->kind, kind) == 0;
	e->scrapes++;
	e->failures++;
	e->run++;
	e->done = true;
	if (!s->o.quiet && (!repeat || s->o.verbose))
		kv_err_set(news, KV_EX_OK, "%s: %s", e->url, what);
	free(e->error);
	e->error = kv_xstrdup(what);
	if (!repeat) {
		free(e->kind);
		e->kind = kv_xstrdup(kind);
	}
}

void kv_scrapeset_ok(struct kv_scrapeset *s, size_t i, const char *body, size_t len,
                     uint64_t mono_ns, uint64_t real_ns, struct kv_err *news)
{
	struct kv_scrape_ep *e = &s->ep[i];
	struct kv_err bad = { 0 };
	e->body = kv_xgrow(e->body, &e->body_cap, len + 1, 1);
	memcpy(e->body, body, len);
	e->body[len] = 0;
	if (!kv_prom_parse(&e->doc, e->body, len, &s->o.limits, &bad)) {
		kv_scrapeset_fail(s, i, kv_err_msg(&bad), NULL, news);
		kv_err_clear(&bad);
		return;
	}
	e->scrapes++;
	e->done = true;
	s->ok++;
	if (e->run && !s->o.quiet)
		kv_err_set(news, KV_EX_OK, "%s: scraped again after %" PRIu64 " failed scrape%s", e->url, e->run,
			   e->run == 1 ? "" : "s");
	e->run = 0;
	free(e->error);
	free(e->kind);
	e->error = e->kind = NULL;
	e->rates = kv_xgrow(e->rates, &e->rates_cap, e->doc.nsamples + 1, sizeof *e->rates);
	kv_promrate_update(&e->rate, &e->doc, mono_ns, e->rates);
	if (s->o.table)
		return;
	for (size_t k = 0; k < e->doc.nsamples; k++) {
		if (!kv_promout_matches(&e->doc, k, s->o.match))
			continue;
		kv_promout_json(s->out, e->url, &e->doc, k, e->rates[k], real_ns);
		kv_out_flush_if_full(s->out);
	}
	kv_out_flush(s->out);
}

void kv_scrapeset_end_round(struct kv_scrapeset *s, uint64_t real_ns)
{
	if (!s->o.table)
		return;
	if (s->o.screen)
		kv_out_puts(s->out, "\033[H\033[2J");
	char head[160], when[32], every[32];
	time_t t = (time_t)(real_ns / 1000000000u);
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(when, sizeof when, "%H:%M:%S", &tm);
	kv_promout_number(every, sizeof every, (double)s->o.interval_ns / 1e9);
	snprintf(head, sizeof head, "kvstat %s  round %" PRIu64 "  every %ss\n\n", when, s->rounds, every);
	kv_out_puts(s->out, head);
	for (size_t i = 0; i < s->n; i++) {
		const struct kv_scrape_ep *e = &s->ep[i];
		if (e->error) {
			kv_out_puts(s->out, e->url);
			kv_out_puts(s->out, "  (scrape failed: ");
			kv_out_puts(s->out, e->error);
			kv_out_puts(s->out, ")\n\n");
			continue;
		}
		if (!e->done)
			continue;
		kv_promout_table(s->out, e->url, &e->doc, e->rates, s->o.match);
		kv_out_putc(s->out, '\n');
	}
	kv_out_flush(s->out);
}

void kv_scrapeset_print_stats(const struct kv_scrapeset *s, FILE *f)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct kv_scrape_ep *e = &s->ep[i];
		fprintf(f, "%s: %s: %" PRIu64 " scrapes, %" PRIu64 " failed, %zu samples in the last\n",
		        kv_prog, e->url, e->scrapes, e->failures, e->error ? (size_t)0 : e->doc.nsamples);
	}
}

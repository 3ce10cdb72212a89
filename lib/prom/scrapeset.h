/* scrapeset: the metrics endpoints of a kvstat run and what became of
 * their scrapes.
 *
 * It owns the URL an endpoint argument stands for (the KV stores' metrics
 * port 50090 and the path /metrics by default), and for each endpoint the
 * last response, its parsed document (promtext), the counter rates
 * (promrate), the last error and the counts.  It writes the output
 * (promout): JSON lines as each scrape arrives, or a table per round.  A
 * failed scrape is news when its kind (libcurl's error code, the HTTP
 * status, the parse error) differs from the previous failure's, with -v
 * every time, and so is a recovery; kvstat prints the news (a message in a
 * kv_err, status 0: nothing here is fatal). */
#ifndef KV_SCRAPESET_H
#define KV_SCRAPESET_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/err.h"
#include "base/out.h"
#include "prom/promrate.h"
#include "prom/promtext.h"

/* Mooncake's master and memcache both serve kv_store_* metrics on this port
 * (Mooncake's business port 50088 has none). */
#define KV_SCRAPE_DEFAULT_PORT 50090
#define KV_SCRAPE_DEFAULT_PATH "/metrics"

/* The URL an endpoint argument means, a new string in *url: a URL with a
 * scheme (http or https) is kept, with /metrics added when it has no path;
 * anything else is host, host:port, [v6] or [v6]:port, optionally followed
 * by a path, and gets http://, port 50090 and path /metrics where it has
 * none.  False when the argument is malformed: a usage error (64). */
bool kv_scrape_url(const char *arg, char **url, struct kv_err *e);

struct kv_scrape_opts {
	struct kv_prom_limits limits;
	const regex_t *match;     /* samples to show (NULL: all) */
	bool table;               /* a table per round instead of JSON lines */
	bool screen;              /* clear the terminal before each table */
	int quiet, verbose;
	uint64_t interval_ns;     /* for the table's heading */
};

struct kv_scrape_ep {
	char *url;
	char *body;               /* the last good response, which doc refers to */
	size_t body_cap;
	struct kv_prom_doc doc;
	double *rates;
	size_t rates_cap;
	struct kv_promrate rate;
	char *error;              /* of the last scrape; NULL when it succeeded */
	char *kind;               /* of that error, to tell a repeat */
	bool done;                /* scraped (or failed) in the current round */
	uint64_t scrapes, failures, run;   /* run: failures in a row */
};

struct kv_scrapeset {
	struct kv_scrape_ep *ep;
	size_t n, cap;
	struct kv_scrape_opts o;
	struct kv_out *out;
	uint64_t rounds, ok;
};

void kv_scrapeset_init(struct kv_scrapeset *s, struct kv_out *out, const struct kv_scrape_opts *o);
void kv_scrapeset_free(struct kv_scrapeset *s);
/* Adds an endpoint by URL; the same URL twice is one endpoint.  Its index. */
size_t kv_scrapeset_add(struct kv_scrapeset *s, const char *url);

void kv_scrapeset_begin_round(struct kv_scrapeset *s);
/* A response arrived: parse (a bad document is a failed scrape), rates,
 * JSON lines.  mono_ns for rates, real_ns for the lines' ts.  What is news
 * ("URL: what", "URL: scraped again after N failed scrapes") is added to
 * news, for the program to print. */
void kv_scrapeset_ok(struct kv_scrapeset *s, size_t i, const char *body, size_t len,
                     uint64_t mono_ns, uint64_t real_ns, struct kv_err *news);
/* A failed scrape: what to say, and its kind (the same kind again is a
 * repeat, no news without -v); kind NULL means what. */
void kv_scrapeset_fail(struct kv_scrapeset *s, size_t i, const char *what, const char *kind, struct kv_err *news);
/* Every endpoint has answered or failed: the table, when that is the format. */
void kv_scrapeset_end_round(struct kv_scrapeset *s, uint64_t real_ns);

/* Whether any scrape of any endpoint succeeded so far. */
static inline bool kv_scrapeset_any_ok(const struct kv_scrapeset *s) { return s->ok > 0; }
/* One line per endpoint: scrapes, failures, samples in the last good one. */
void kv_scrapeset_print_stats(const struct kv_scrapeset *s, FILE *f);

#endif

/* The Prometheus text parser (promtext), counter rates (promrate), kvstat's
 * output (promout) and endpoint URLs (scrapeset): accepted and rejected
 * documents, every limit at and past its bound. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/out.h"
#include "prom/promout.h"
#include "prom/promrate.h"
#include "prom/promtext.h"
#include "prom/scrapeset.h"
#include "unit.h"

static char err[512];

/* The message of e, if any, into err. */
static bool said(bool ok, struct kv_err *e)
{
	snprintf(err, sizeof err, "%s", kv_err_msg(e));
	kv_err_clear(e);
	return ok;
}

static bool parse(struct kv_prom_doc *d, const char *text)
{
	struct kv_err e = { 0 };
	return said(kv_prom_parse(d, text, strlen(text), NULL, &e), &e);
}

static bool parse_lim(struct kv_prom_doc *d, const char *text, size_t len, const struct kv_prom_limits *lim)
{
	struct kv_err e = { 0 };
	return said(kv_prom_parse(d, text, len, lim, &e), &e);
}

static bool str_is(struct kv_prom_str s, const char *want)
{
	return s.n == strlen(want) && memcmp(s.p, want, s.n) == 0;
}

static const char realistic[] =
	"# HELP kv_store_used_bytes Bytes in use, per medium.\n"
	"# TYPE kv_store_used_bytes gauge\n"
	"kv_store_used_bytes{medium=\"dram\",backend=\"memcache\"} 12884901888\n"
	"kv_store_used_bytes{backend=\"memcache\",medium=\"ssd\"} 0\n"
	"\n"
	"# a comment, ignored\n"
	"# TYPE kv_store_requests_total counter\n"
	"kv_store_requests_total{op=\"get\",result=\"hit\",} 91200 1764500000000\n"
	"  kv_store_requests_total{op=\"get\",result=\"miss\"}\t8800\t-5  \n"
	"# TYPE lat histogram\n"
	"lat_bucket{le=\"0.5\"} 3\n"
	"lat_bucket{le=\"+Inf\"} 4\n"
	"lat_sum 1.25e0\n"
	"lat_count 4\n"
	"# TYPE q summary\n"
	"q{quantile=\"0.99\"} NaN\n"
	"q_sum 10\n"
	"q_count 2\n"
	"# TYPE ops counter\n"
	"ops_total 7\n"
	"misc_total{} 3\n"
	"info{v=\"a\\\\b \\\"q\\\" \\nz\"} -Inf\n"
	"up 1\n";

static void accepts_a_realistic_document(void)
{
	struct kv_prom_doc d;
	kv_prom_init(&d);
	ASSERT(parse(&d, realistic));
	ASSERT_EQ_U64(d.nsamples, 15);
	ASSERT_EQ_U64(d.lines, 23);
	const struct kv_prom_sample *s = d.samples;
	ASSERT(str_is(s[0].name, "kv_store_used_bytes") && s[0].type == KV_PROM_GAUGE && !s[0].cumulative);
	ASSERT(s[0].value == 12884901888.0 && !s[0].has_ts && s[0].nlabels == 2 && s[0].line == 3);
	/* labels come sorted by name */
	ASSERT(str_is(d.labels[s[0].label0].name, "backend") && str_is(d.labels[s[0].label0].value, "memcache"));
	ASSERT(str_is(d.labels[s[0].label0 + 1].name, "medium") && str_is(d.labels[s[0].label0 + 1].value, "dram"));
	ASSERT(s[2].type == KV_PROM_COUNTER && s[2].cumulative && s[2].has_ts && s[2].ts_ms == 1764500000000);
	ASSERT(s[2].nlabels == 2);                           /* the trailing comma is allowed */
	ASSERT(s[3].value == 8800 && s[3].has_ts && s[3].ts_ms == -5);
	ASSERT(s[4].type == KV_PROM_HISTOGRAM && s[4].cumulative && s[5].cumulative && s[6].cumulative && s[7].cumulative);
	ASSERT(s[6].value == 1.25);
	ASSERT(s[8].type == KV_PROM_SUMMARY && !s[8].cumulative && isnan(s[8].value));
	ASSERT(s[9].cumulative && s[10].cumulative);
	ASSERT(str_is(s[11].name, "ops_total") && s[11].type == KV_PROM_COUNTER && s[11].cumulative);
	ASSERT(str_is(s[12].name, "misc_total") && s[12].type == KV_PROM_UNTYPED && s[12].cumulative && s[12].nlabels == 0);
	ASSERT(str_is(d.labels[s[13].label0].value, "a\\b \"q\" \nz") && isinf(s[13].value) && s[13].value < 0);
	ASSERT(s[14].type == KV_PROM_UNTYPED && !s[14].cumulative);
	ASSERT(d.families[s[0].family].has_help && str_is(d.families[s[0].family].help, "Bytes in use, per medium."));
	kv_prom_free(&d);
}

static void values_and_timestamps(void)
{
	static const struct { const char *text; double v; } ok[] = {
		{ "m 0\n", 0 }, { "m -0.5\n", -0.5 }, { "m .5\n", 0.5 }, { "m 5.\n", 5 }, { "m +3\n", 3 },
		{ "m 1e3\n", 1000 }, { "m 1E-3\n", 0.001 }, { "m 2.5e+2\n", 250 }, { "m 1e-400\n", 0 },
		{ "m 18446744073709551616\n", 18446744073709551616.0 },
	};
	struct kv_prom_doc d;
	kv_prom_init(&d);
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		ASSERT(parse(&d, ok[i].text));
		ASSERT(d.samples[0].value == ok[i].v);
	}
	ASSERT(parse(&d, "m +Inf\nn -inf\no nan\np INF\n"));
	ASSERT(isinf(d.samples[0].value) && d.samples[0].value > 0);
	ASSERT(isinf(d.samples[1].value) && d.samples[1].value < 0);
	ASSERT(isnan(d.samples[2].value) && isinf(d.samples[3].value));
	ASSERT(parse(&d, "m 1 9223372036854775807\nn 1 -9223372036854775808\n"));
	ASSERT(d.samples[0].ts_ms == INT64_MAX && d.samples[1].ts_ms == INT64_MIN);
	ASSERT(!parse(&d, "m 1 9223372036854775808\n"));
	ASSERT(strcmp(err, "line 1: timestamp '9223372036854775808' is not an integer number of milliseconds") == 0);
	kv_prom_free(&d);
}

static void blanks_comments_and_empty_documents(void)
{
	struct kv_prom_doc d;
	kv_prom_init(&d);
	ASSERT(parse(&d, ""));
	ASSERT_EQ_U64(d.nsamples, 0);
	ASSERT(parse(&d, "\n\n   \n\t\n# just comments\n#\n#HELP_not_help x\n"));
	ASSERT_EQ_U64(d.nsamples, 0);
	ASSERT(parse(&d, "m{ a = \"1\" , b=\"2\" } 1\nn {} 2\n#TYPE o counter\no 3\n# HELP p\np 4\n"));
	ASSERT_EQ_U64(d.nsamples, 4);
	ASSERT(d.samples[0].nlabels == 2 && d.samples[1].nlabels == 0 && d.samples[2].type == KV_PROM_COUNTER);
	ASSERT(d.families[d.samples[3].family].has_help && d.families[d.samples[3].family].help.n == 0);
	ASSERT(parse(&d, "# HELP m two \\\\ and \\n escapes\nm 1\n"));
	ASSERT(str_is(d.families[0].help, "two \\ and \n escapes"));
	ASSERT(parse(&d, "m{v=\"caf\xc3\xa9 \xe2\x82\xac\"} 1\n"));  /* UTF-8 label value */
	kv_prom_free(&d);
}

static const struct { const char *text; const char *error; } rejected[] = {
	{ "m\n", "line 1: no value for m" },
	{ "m 1 2 3\n", "line 1: unexpected text after the timestamp" },
	{ "m 1 x\n", "line 1: timestamp 'x' is not an integer number of milliseconds" },
	{ "m 1 1.5\n", "line 1: timestamp '1.5' is not an integer number of milliseconds" },
	{ "m 0x10\n", "line 1: value '0x10' is not a number" },
	{ "m 1e\n", "line 1: value '1e' is not a number" },
	{ "m .\n", "line 1: value '.' is not a number" },
	{ "m infinity\n", "line 1: value 'infinity' is not a number" },
	{ "m 1e999\n", "line 1: value '1e999' out of range" },
	{ "m 1_000\n", "line 1: value '1_000' is not a number" },
	{ "1m 1\n", "line 1: expected a metric name, a comment or an empty line, not '1'" },
	{ "m! 1\n", "line 1: unexpected '!' after the metric name" },
	{ "ok 1\nm 1", "line 2: no newline at the end (cut off?)" },
	{ "m 1\r\n", "line 1: carriage return at the end (lines end in LF only)" },
	{ "m{a=\"x} 1\n", "line 1: unterminated value of label a" },
	{ "m{a=\"x\\\"} 1\n", "line 1: unterminated value of label a" },
	{ "m{a=\"\\t\"} 1\n", "line 1: bad escape '\\t' in the value of label a" },
	{ "m{a=\"x\",a=\"y\"} 1\n", "line 1: label a given twice" },
	{ "m{__name__=\"x\"} 1\n", "line 1: the label name __name__ is reserved" },
	{ "m{a=\"1\" b=\"2\"} 1\n", "line 1: expected ',' or '}' after the value of label a" },
	{ "m{a} 1\n", "line 1: expected '=' after the label name a" },
	{ "m{a=1} 1\n", "line 1: expected '\"' to open the value of label a" },
	{ "m{1a=\"x\"} 1\n", "line 1: expected a label name or '}'" },
	{ "m{a=\"x\"", "line 1: no newline at the end (cut off?)" },
	{ "m{a=\"x\",\n", "line 1: unterminated label set" },
	{ "m{a=\"\xff\"} 1\n", "line 1: value of label a is not valid UTF-8" },
	{ "m{a=\"\xed\xa0\x80\"} 1\n", "line 1: value of label a is not valid UTF-8" },
	{ "# TYPE\n", "line 1: # TYPE without a metric name" },
	{ "# TYPE m\n", "line 1: # TYPE m without a type" },
	{ "# TYPE m{ counter\n", "line 1: # TYPE: bad character in the metric name 'm{'" },
	{ "# TYPE m bogus\n", "line 1: unknown metric type 'bogus'" },
	{ "# TYPE m Counter\n", "line 1: unknown metric type 'Counter'" },
	{ "# TYPE m counter extra\n", "line 1: unexpected text after the type of m" },
	{ "# TYPE m counter\n# TYPE m gauge\n", "line 2: second # TYPE line for m" },
	{ "m 1\n# TYPE m counter\n", "line 2: # TYPE line for m after its samples" },
	{ "# HELP m a\n# HELP m b\n", "line 2: second # HELP line for m" },
	{ "# HELP m a \\t b\n", "line 1: bad escape '\\t' in the help text of m" },
	{ "# HELP m \xc3\n", "line 1: help text of m is not valid UTF-8" },
	{ "# TYPE h histogram\nh 1\n", "line 2: histogram h: a sample needs the suffix _bucket, _sum or _count" },
	{ "# TYPE h histogram\nh_bucket 1\n", "line 2: histogram h_bucket: no le label" },
	{ "# TYPE h histogram\nh_bucket{le=\"big\"} 1\n", "line 2: le label 'big' is not a number" },
	{ "# TYPE s summary\ns 1\n", "line 2: summary s: no quantile label" },
	{ "m{a=\"1\",b=\"2\"} 1\nn 0\nm{b=\"2\",a=\"1\"} 2\n", "line 3: series m{...} repeats line 1" },
	{ "m 1\nm 2\n", "line 2: series m repeats line 1" },
	{ "m{a=\"\x1b[2J\"} 1 \x1b\n", "line 1: timestamp '?' is not an integer number of milliseconds" },
	/* quoted input follows the one printable rule (kv_printable): bad UTF-8
	 * and controls (C1 too) as '?', other UTF-8 kept */
	{ "# TYPE m\xff\x01 counter\n", "line 1: # TYPE: bad character in the metric name 'm?" "?'" },  /* split: ??' is a trigraph */
	{ "# TYPE m\xc2\x85 counter\n", "line 1: # TYPE: bad character in the metric name 'm?'" },
	{ "# TYPE m\xc3\xa9 counter\n", "line 1: # TYPE: bad character in the metric name 'm\xc3\xa9'" },
	{ "m{a=\"\\\xc3\xa9\"} 1\n", "line 1: bad escape '\\?' in the value of label a" },
	{ "# HELP m \\\x7f\n", "line 1: bad escape '\\?' in the help text of m" },
};

static void rejects_malformed_lines(void)
{
	struct kv_prom_doc d;
	kv_prom_init(&d);
	for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; i++) {
		const char *t = rejected[i].text;
		bool ok = parse_lim(&d, t, strlen(t), NULL);
		if (ok || strcmp(err, rejected[i].error) != 0)
			printf("# case %zu: got '%s', expected '%s'\n", i, ok ? "(accepted)" : err, rejected[i].error);
		ASSERT(!ok);
		ASSERT(strcmp(err, rejected[i].error) == 0);
		ASSERT(d.nsamples == 0);           /* a rejected document leaves nothing behind */
	}
	static const char nul[] = "ok 1\nm{a=\"x\0\"} 1\n";
	ASSERT(!parse_lim(&d, nul, sizeof nul - 1, NULL));
	ASSERT(strcmp(err, "line 2: NUL byte") == 0);
	kv_prom_free(&d);
}

/* A buffer of n copies of line. */
static char *repeat(const char *line, size_t n, size_t *len)
{
	size_t l = strlen(line);
	char *b = malloc(l * n + 1);
	for (size_t i = 0; i < n; i++)
		memcpy(b + i * l, line, l);
	b[l * n] = 0;
	*len = l * n;
	return b;
}

static void limits_hold(void)
{
	struct kv_prom_limits lim = { 40, 8, 5, 3, 4, 2 };
	struct kv_prom_doc d;
	kv_prom_init(&d);
	/* line length: 40 bytes pass, 41 do not */
	ASSERT(parse_lim(&d, "m                                      1\n", 41, &lim));
	ASSERT(!parse_lim(&d, "m                                       1\n", 42, &lim));
	ASSERT(strcmp(err, "line 1: longer than 40 bytes") == 0);
	/* name length */
	ASSERT(parse_lim(&d, "abcdefgh 1\n", 11, &lim));
	ASSERT(!parse_lim(&d, "abcdefghi 1\n", 12, &lim));
	ASSERT(strcmp(err, "line 1: metric name longer than 8 bytes") == 0);
	ASSERT(!parse_lim(&d, "m{abcdefghi=\"\"} 1\n", 18, &lim));
	ASSERT(strcmp(err, "line 1: label name longer than 8 bytes") == 0);
	ASSERT(!parse_lim(&d, "# TYPE abcdefghi gauge\n", 23, &lim));
	ASSERT(strcmp(err, "line 1: metric name longer than 8 bytes") == 0);
	/* label value length, as written */
	ASSERT(parse_lim(&d, "m{a=\"12345\"} 1\n", 15, &lim));
	ASSERT(!parse_lim(&d, "m{a=\"123456\"} 1\n", 16, &lim));
	ASSERT(strcmp(err, "line 1: value of label a longer than 5 bytes") == 0);
	/* labels per sample */
	ASSERT(parse_lim(&d, "m{a=\"\",b=\"\",c=\"\"} 1\n", 20, &lim));
	ASSERT(!parse_lim(&d, "m{a=\"\",b=\"\",c=\"\",d=\"\"} 1\n", 25, &lim));
	ASSERT(strcmp(err, "line 1: more than 3 labels") == 0);
	/* samples */
	ASSERT(parse_lim(&d, "a 1\nb 1\nc 1\nd 1\n", 16, &lim));
	ASSERT(!parse_lim(&d, "a 1\nb 1\nc 1\nd 1\ne 1\n", 20, &lim));
	ASSERT(strcmp(err, "line 5: more than 4 samples") == 0);
	/* families named by # HELP or # TYPE */
	ASSERT(parse_lim(&d, "# TYPE a gauge\n# HELP a x\n# HELP b y\n", 37, &lim));
	ASSERT(!parse_lim(&d, "# TYPE a gauge\n# HELP b y\n# TYPE c gauge\n", 41, &lim));
	ASSERT(strcmp(err, "line 3: more than 2 metric families") == 0);
	/* the defaults: a huge document of many small samples stops at 200000 */
	size_t len;
	char *big = repeat("x 1\n", KV_PROM_MAX_SAMPLES + 1, &len);
	ASSERT(!parse_lim(&d, big, len, NULL));
	ASSERT(strcmp(err, "line 200001: more than 200000 samples") == 0);
	free(big);
	big = repeat("# comment lines cost nothing\n", 100000, &len);
	ASSERT(parse_lim(&d, big, len, NULL) && d.nsamples == 0);
	free(big);
	kv_prom_free(&d);
}

static void series_keys_ignore_label_order(void)
{
	struct kv_prom_doc d;
	kv_prom_init(&d);
	ASSERT(parse(&d, "z 1\nm{b=\"2\",a=\"1\"} 1\nm{a=\"1\"} 1\nm{a=\"1\",b=\"3\"} 1\na 1\n"));
	const struct kv_prom_sample *s = d.samples;
	/* keys: m{a=1,b=2} equals what {a="1",b="2"} would give; different values differ */
	ASSERT(kv_prom_key_cmp(d.keys + s[1].key_off, s[1].key_len, d.keys + s[3].key_off, s[3].key_len) != 0);
	for (size_t i = 1; i < d.nsamples; i++) {
		const struct kv_prom_sample *a = &s[d.order[i - 1]], *b = &s[d.order[i]];
		ASSERT(kv_prom_key_cmp(d.keys + a->key_off, a->key_len, d.keys + b->key_off, b->key_len) < 0);
	}
	struct kv_prom_doc e;
	kv_prom_init(&e);
	ASSERT(parse(&e, "m{a=\"1\",b=\"2\"} 5\n"));
	ASSERT(kv_prom_key_cmp(d.keys + s[1].key_off, s[1].key_len, e.keys + e.samples[0].key_off, e.samples[0].key_len) == 0);
	/* a name that is a prefix of another, a value with the separator bytes in it */
	ASSERT(parse(&e, "m{a=\"\\\"\"} 1\nm{a=\"\"} 1\nmm 1\n"));
	ASSERT_EQ_U64(e.nsamples, 3);
	kv_prom_free(&d);
	kv_prom_free(&e);
	ASSERT(kv_prom_metric_name_ok("a:b_1", 5) && !kv_prom_metric_name_ok("1a", 2) && !kv_prom_metric_name_ok("", 0));
	ASSERT(kv_prom_label_name_ok("_a1", 3) && !kv_prom_label_name_ok("a:b", 3));
}

static void types_of_samples(void)
{
	struct kv_prom_doc d;
	kv_prom_init(&d);
	ASSERT(parse(&d, "# TYPE c counter\nc_total 1\nc 2\n# TYPE g gauge\ng_total 1\n"
	                 "# TYPE h histogram\nh_count 1\nh_total 1\n# HELP u help only\nu_total 1\nu 1\n"
	                 "# TYPE s summary\ns_bucket 1\n"));
	const struct kv_prom_sample *s = d.samples;
	ASSERT(s[0].type == KV_PROM_COUNTER && s[0].cumulative);    /* OpenMetrics style name */
	ASSERT(s[1].type == KV_PROM_COUNTER && s[1].cumulative);
	ASSERT(s[2].type == KV_PROM_UNTYPED && s[2].cumulative);    /* not gauge g's: a name of its own */
	ASSERT(s[3].type == KV_PROM_HISTOGRAM && s[3].cumulative);
	ASSERT(s[4].type == KV_PROM_UNTYPED && s[4].cumulative);
	ASSERT(s[5].type == KV_PROM_UNTYPED && s[5].cumulative);
	ASSERT(s[6].type == KV_PROM_UNTYPED && !s[6].cumulative);
	ASSERT(s[7].type == KV_PROM_UNTYPED && !s[7].cumulative);   /* summaries have no buckets */
	ASSERT(strcmp(kv_prom_type_name(KV_PROM_SUMMARY), "summary") == 0);
	kv_prom_free(&d);
}

static void the_document_is_reused(void)
{
	struct kv_prom_doc d;
	kv_prom_init(&d);
	for (int round = 0; round < 3; round++) {
		ASSERT(parse(&d, realistic));
		ASSERT_EQ_U64(d.nsamples, 15);
		ASSERT(!parse(&d, "# TYPE m counter\n# TYPE m counter\n"));
		ASSERT(d.nsamples == 0 && d.nfamilies == 0);
	}
	kv_prom_free(&d);
}

static void rates_between_scrapes(void)
{
	struct kv_prom_doc a, b;
	struct kv_promrate r;
	double rate[8];
	kv_prom_init(&a);
	kv_prom_init(&b);
	kv_promrate_init(&r);
	ASSERT(parse(&a, "# TYPE c counter\nc{x=\"1\"} 100\nc{x=\"2\"} 50\ng 5\nt_total 10 1000\nn_total NaN\nr_total 9\n"));
	kv_promrate_update(&r, &a, 1000000000ull, rate);
	for (size_t i = 0; i < a.nsamples; i++)
		ASSERT(isnan(rate[i]));                   /* the first scrape has no rates */
	/* two seconds later; labels reordered, a series gone, one new, one reset */
	ASSERT(parse(&b, "# TYPE c counter\nnew_total 1\nc{x=\"2\"} 50\nc{x=\"1\"} 300\ng 9\nt_total 40 1500\n"
	                 "n_total 5\nr_total 2\n"));
	kv_promrate_update(&r, &b, 3000000000ull, rate);
	ASSERT(isnan(rate[0]));                       /* new series */
	ASSERT(rate[1] == 0);
	ASSERT(rate[2] == 100);                       /* 200 in 2 s of scrape time */
	ASSERT(isnan(rate[3]));                       /* a gauge */
	ASSERT(rate[4] == 60);                        /* 30 in 500 ms of the samples' own time */
	ASSERT(isnan(rate[5]));                       /* from NaN */
	ASSERT(isnan(rate[6]));                       /* a reset */
	/* the reset value is the new base; the same scrape time again gives no rate */
	ASSERT(parse(&a, "r_total 5\nc{x=\"1\"} 310\n"));
	kv_promrate_update(&r, &a, 3000000000ull, rate);
	ASSERT(isnan(rate[0]) && isnan(rate[1]));
	ASSERT(parse(&b, "r_total 8\n"));
	kv_promrate_update(&r, &b, 4000000000ull, rate);
	ASSERT(rate[0] == 3);
	ASSERT_EQ_U64(r.n, 1);                        /* c{x="1"} was forgotten */
	kv_prom_free(&a);
	kv_prom_free(&b);
	kv_promrate_free(&r);
}

static const char *json_of(const char *text, double rate, uint64_t real_ns)
{
	static char line[2048];
	struct kv_prom_doc d;
	struct kv_out o;
	kv_prom_init(&d);
	kv_out_open_mem(&o);
	line[0] = 0;
	if (parse(&d, text)) {
		kv_promout_json(&o, "http://h:50090/metrics", &d, 0, rate, real_ns);
		snprintf(line, sizeof line, "%.*s", (int)o.len, o.buf);
	}
	kv_out_free_mem(&o);
	kv_prom_free(&d);
	return line;
}

static void json_lines(void)
{
	ASSERT(strcmp(json_of("# TYPE c counter\nc{z=\"\\\"\\n\",a=\"\xc3\xa9\"} 12.5\n", 2.5, 1764500000123456789ull),
	               "{\"endpoint\":\"http://h:50090/metrics\",\"metric\":\"c\",\"type\":\"counter\","
	               "\"labels\":{\"a\":\"\xc3\xa9\",\"z\":\"\\\"\\n\"},\"value\":12.5,\"rate\":2.5,\"ts\":1764500000.123}\n") == 0);
	ASSERT(strcmp(json_of("g +Inf 1764500000001\n", NAN, 5),
	               "{\"endpoint\":\"http://h:50090/metrics\",\"metric\":\"g\",\"type\":\"untyped\","
	               "\"labels\":{},\"value\":\"+Inf\",\"rate\":null,\"ts\":1764500000.001}\n") == 0);
	ASSERT(strstr(json_of("g -Inf\n", NAN, 0), "\"value\":\"-Inf\""));
	ASSERT(strstr(json_of("g NaN\n", NAN, 0), "\"value\":\"NaN\""));
	ASSERT(strstr(json_of("g 1e300\n", NAN, 0), "\"value\":1e+300"));
	char buf[64];
	kv_promout_number(buf, sizeof buf, 68719476736.0);
	ASSERT(strcmp(buf, "68719476736") == 0);
	kv_promout_number(buf, sizeof buf, 0.125);
	ASSERT(strcmp(buf, "0.125") == 0);
	kv_promout_number(buf, sizeof buf, 2e20);
	ASSERT(strcmp(buf, "2e+20") == 0);
}

static void table_rows(void)
{
	struct kv_prom_doc d;
	struct kv_out o;
	regex_t rx;
	double rates[3] = { NAN, 4, NAN };
	kv_prom_init(&d);
	kv_out_open_mem(&o);
	ASSERT(regcomp(&rx, "^kv_", REG_EXTENDED | REG_NOSUB) == 0);
	ASSERT(parse(&d, "# TYPE kv_a counter\nkv_a{l=\"x\\ny\x1b\xc2\x85\"} 10\nkv_b_total 7\nother 1\n"));
	rates[0] = NAN;
	rates[1] = 4;
	kv_promout_table(&o, "http://h:1/metrics", &d, rates, &rx);
	kv_out_putc(&o, 0);
	ASSERT(strcmp(o.buf, "http://h:1/metrics  (3 samples, 2 shown)\n"
	                     "  SERIES            VALUE  RATE/s\n"
	                     "  kv_a{l=\"x\\ny??\"}     10  -\n"
	                     "  kv_b_total            7  4\n") == 0);
	regfree(&rx);
	kv_out_free_mem(&o);
	kv_prom_free(&d);
}

static const char *url(const char *arg)
{
	static char buf[512];
	struct kv_err e = { 0 };
	char *u;
	said(kv_scrape_url(arg, &u, &e), &e);
	snprintf(buf, sizeof buf, "%s", u ? u : "(error)");
	free(u);
	return buf;
}

static void endpoint_urls(void)
{
	ASSERT(strcmp(url("kvs-master"), "http://kvs-master:50090/metrics") == 0);
	ASSERT(strcmp(url("10.0.0.5:9003"), "http://10.0.0.5:9003/metrics") == 0);
	ASSERT(strcmp(url("10.0.0.5/stats"), "http://10.0.0.5:50090/stats") == 0);
	ASSERT(strcmp(url("10.0.0.5:8080/m"), "http://10.0.0.5:8080/m") == 0);
	ASSERT(strcmp(url("[fe80::1]"), "http://[fe80::1]:50090/metrics") == 0);
	ASSERT(strcmp(url("[fe80::1]:9003"), "http://[fe80::1]:9003/metrics") == 0);
	ASSERT(strcmp(url("fe80::1"), "http://[fe80::1]:50090/metrics") == 0);
	ASSERT(strcmp(url("http://kvs-master:50090/metrics"), "http://kvs-master:50090/metrics") == 0);
	ASSERT(strcmp(url("http://kvs-master"), "http://kvs-master/metrics") == 0);
	ASSERT(strcmp(url("HTTPS://h:1?x=1"), "HTTPS://h:1/metrics?x=1") == 0);
	ASSERT(strcmp(url("https://h/other"), "https://h/other") == 0);
	ASSERT(strcmp(url(""), "(error)") == 0 && strcmp(err, "an empty endpoint") == 0);
	ASSERT(strcmp(url("h:"), "(error)") == 0 && strcmp(err, "h:: bad port") == 0);
	ASSERT(strcmp(url("h:65536"), "(error)") == 0 && strcmp(err, "h:65536: bad port") == 0);
	ASSERT(strcmp(url("h:0"), "(error)") == 0);
	ASSERT(strcmp(url("h:x1"), "(error)") == 0);
	ASSERT(strcmp(url(":80"), "(error)") == 0 && strcmp(err, ":80: no host") == 0);
	ASSERT(strcmp(url("/metrics"), "(error)") == 0 && strcmp(err, "/metrics: no host") == 0);
	ASSERT(strcmp(url("[::1"), "(error)") == 0 && strcmp(err, "[::1: unterminated IPv6 address") == 0);
	ASSERT(strcmp(url("[::1]x"), "(error)") == 0);
	ASSERT(strcmp(url("ftp://h/"), "(error)") == 0 && strcmp(err, "ftp://h/: only http:// and https:// URLs can be scraped") == 0);
	ASSERT(strcmp(url("http:///x"), "(error)") == 0 && strcmp(err, "http:///x: no host") == 0);
	ASSERT(strcmp(url("h x"), "(error)") == 0 && strcmp(err, "h x: blank or control character in the endpoint") == 0);
}

int main(void)
{
	RUN(accepts_a_realistic_document);
	RUN(values_and_timestamps);
	RUN(blanks_comments_and_empty_documents);
	RUN(rejects_malformed_lines);
	RUN(limits_hold);
	RUN(series_keys_ignore_label_order);
	RUN(types_of_samples);
	RUN(the_document_is_reused);
	RUN(rates_between_scrapes);
	RUN(json_lines);
	RUN(table_rows);
	RUN(endpoint_urls);
	return unit_done();
}

#include "prom/promtext.h"
#include "base/utf8.h"
#include "base/util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NO_FAMILY UINT32_MAX

struct keyref {
	const unsigned char *key;
	size_t len;
	uint32_t sample;
};

struct parser {
	struct kv_prom_doc *doc;
	const struct kv_prom_limits *lim;
	size_t text_len;
	struct kv_err *e;
	uint64_t line;
};

static const struct kv_prom_limits default_limits = KV_PROM_LIMITS_DEFAULT;

void kv_prom_init(struct kv_prom_doc *doc)
{
	memset(doc, 0, sizeof *doc);
	kv_strmap_init(&doc->names, false);
}

void kv_prom_free(struct kv_prom_doc *doc)
{
	free(doc->samples);
	free(doc->labels);
	free(doc->families);
	free(doc->order);
	free(doc->keys);
	kv_strmap_free(&doc->names);
	free(doc->arena);
	memset(doc, 0, sizeof *doc);
}

static void reset(struct kv_prom_doc *doc)
{
	doc->nsamples = doc->nlabels = doc->nfamilies = doc->ndeclared = 0;
	doc->keys_len = doc->arena_len = 0;
	doc->lines = 0;
	kv_strmap_clear(&doc->names);
}

const char *kv_prom_type_name(enum kv_prom_type t)
{
	switch (t) {
	case KV_PROM_COUNTER: return "counter";
	case KV_PROM_GAUGE: return "gauge";
	case KV_PROM_HISTOGRAM: return "histogram";
	case KV_PROM_SUMMARY: return "summary";
	default: return "untyped";
	}
}

static bool is_blank(char c) { return c == ' ' || c == '\t'; }
static bool is_alpha_(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool metric_char(char c, bool first) { return is_alpha_(c) || c == ':' || (!first && is_digit(c)); }
static bool label_char(char c, bool first) { return is_alpha_(c) || (!first && is_digit(c)); }

bool kv_prom_metric_name_ok(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!metric_char(s[i], i == 0))
			return false;
	return true;
}

bool kv_prom_label_name_ok(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!label_char(s[i], i == 0))
			return false;
	return true;
}

static size_t skip_blanks(const char *s, size_t n, size_t i)
{
	while (i < n && is_blank(s[i]))
		i++;
	return i;
}

static size_t token_end(const char *s, size_t n, size_t i)
{
	while (i < n && !is_blank(s[i]))
		i++;
	return i;
}

/* Input text quoted in a message: the one printable rule, at most 40 bytes
 * of it, "..." when there was more. */
static const char *shown(char *buf, size_t bufsize, const char *s, size_t n)
{
	size_t max = bufsize - 4;
	if (max > 40)
		max = 40;
	size_t k = kv_printable(buf, max + 1, s, n);
	if (n > max)
		memcpy(buf + k, "...", 4);
	return buf;
}

static bool fail(struct parser *ps, const char *fmt, ...) KV_PRINTF(2, 3);
static bool fail(struct parser *ps, const char *fmt, ...)
{
	char why[256]; /* quoted input is at most 40 bytes (shown) */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	return kv_err_set(ps->e, KV_EX_DATAERR, "line %llu: %s", (unsigned long long)ps->line, why);
}

static bool utf8_ok(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t k = kv_utf8_len(u + i, n - i);
		if (!k)
			return false;
		i += k;
	}
	return true;
}

/* Text with escapes (\\, \n and, in label values, \") as the string it
 * stands for: the input itself when it has none, else a copy in the arena.
 * The arena is sized to the whole input before the first copy, so earlier
 * copies never move.  Returns false on a bad escape (*bad is its char). */
static bool unescape(struct parser *ps, const char *s, size_t n, bool quotes, struct kv_prom_str *out, char *bad)
{
	if (!memchr(s, '\\', n)) {
		*out = (struct kv_prom_str){ s, n };
		return true;
	}
	struct kv_prom_doc *doc = ps->doc;
	if (doc->arena_cap < ps->text_len) {
		free(doc->arena);
		doc->arena = kv_xmalloc(ps->text_len);
		doc->arena_cap = ps->text_len;
	}
	char *d = doc->arena + doc->arena_len, *start = d;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\\') {
			*d++ = s[i];
			continue;
		}
		char c = i + 1 < n ? s[i + 1] : 0;
		if (c == '\\')
			*d++ = '\\';
		else if (c == 'n')
			*d++ = '\n';
		else if (c == '"' && quotes)
			*d++ = '"';
		else {
			*bad = c;
			return false;
		}
		i++;
	}
	doc->arena_len += (size_t)(d - start);
	*out = (struct kv_prom_str){ start, (size_t)(d - start) };
	return true;
}

/* ---- families: their names mapped to their indices ---- */

static uint32_t find_family(struct kv_prom_doc *doc, const char *name, size_t n)
{
	uint32_t f = kv_strmap_find(&doc->names, name, n);
	return f == KV_STRMAP_NONE ? NO_FAMILY : f;
}

static uint32_t add_family(struct kv_prom_doc *doc, const char *name, size_t n)
{
	doc->families = kv_xgrow(doc->families, &doc->families_cap, doc->nfamilies + 1, sizeof *doc->families);
	uint32_t f = (uint32_t)doc->nfamilies++;
	doc->families[f] = (struct kv_prom_family){ .name = { name, n }, .type = KV_PROM_UNTYPED };
	kv_strmap_add(&doc->names, name, n, 0);
	return f;
}

/* The family a # HELP or # TYPE line names, created when new (bounded). */
static bool declared_family(struct parser *ps, const char *name, size_t n, uint32_t *out)
{
	struct kv_prom_doc *doc = ps->doc;
	uint32_t f = find_family(doc, name, n);
	if (f == NO_FAMILY) {
		if (doc->ndeclared >= ps->lim->max_families)
			return fail(ps, "more than %zu metric families", ps->lim->max_families);
		f = add_family(doc, name, n);
	}
	if (!doc->families[f].has_type && !doc->families[f].has_help)
		doc->ndeclared++;
	*out = f;
	return true;
}

/* ---- lines ---- */

static bool parse_comment(struct parser *ps, const char *s, size_t n, size_t i)
{
	char b1[48], b2[8];
	i = skip_blanks(s, n, i);
	size_t j = token_end(s, n, i);
	bool help = j - i == 4 && memcmp(s + i, "HELP", 4) == 0;
	bool type = j - i == 4 && memcmp(s + i, "TYPE", 4) == 0;
	if (!help && !type)
		return true;                   /* a plain comment */
	const char *what = help ? "HELP" : "TYPE";
	i = skip_blanks(s, n, j);
	size_t k = i;
	while (k < n && metric_char(s[k], k == i))
		k++;
	if (k == i)
		return fail(ps, "# %s without a metric name", what);
	if (k < n && !is_blank(s[k]))
		return fail(ps, "# %s: bad character in the metric name '%s'", what, shown(b1, sizeof b1, s + i, token_end(s, n, i) - i));
	if (k - i > ps->lim->max_name)
		return fail(ps, "metric name longer than %zu bytes", ps->lim->max_name);
	const char *name = s + i;
	size_t nlen = k - i;
	uint32_t f = 0;
	if (!declared_family(ps, name, nlen, &f))
		return false;
	struct kv_prom_family *fam = &ps->doc->families[f];
	i = skip_blanks(s, n, k);
	if (help) {
		if (fam->has_help)
			return fail(ps, "second # HELP line for %s", shown(b1, sizeof b1, name, nlen));
		if (!utf8_ok(s + i, n - i))
			return fail(ps, "help text of %s is not valid UTF-8", shown(b1, sizeof b1, name, nlen));
		char bad = 0;
		if (!unescape(ps, s + i, n - i, false, &fam->help, &bad))
			return fail(ps, "bad escape '\\%s' in the help text of %s",
			            shown(b2, sizeof b2, &bad, 1), shown(b1, sizeof b1, name, nlen));
		fam->has_help = true;
		return true;
	}
	if (i == n)
		return fail(ps, "# TYPE %s without a type", shown(b1, sizeof b1, name, nlen));
	j = token_end(s, n, i);
	static const struct { const char *name; enum kv_prom_type t; } types[] = {
		{ "counter", KV_PROM_COUNTER }, { "gauge", KV_PROM_GAUGE }, { "histogram", KV_PROM_HISTOGRAM },
		{ "summary", KV_PROM_SUMMARY }, { "untyped", KV_PROM_UNTYPED },
	};
	size_t t = 0;
	while (t < sizeof types / sizeof types[0] &&
	       !(strlen(types[t].name) == j - i && memcmp(types[t].name, s + i, j - i) == 0))
		t++;
	if (t == sizeof types / sizeof types[0])
		return fail(ps, "unknown metric type '%s'", shown(b1, sizeof b1, s + i, j - i));
	if (skip_blanks(s, n, j) != n)
		return fail(ps, "unexpected text after the type of %s", shown(b1, sizeof b1, name, nlen));
	if (fam->has_type)
		return fail(ps, "second # TYPE line for %s", shown(b1, sizeof b1, name, nlen));
	if (fam->has_samples)
		return fail(ps, "# TYPE line for %s after its samples", shown(b1, sizeof b1, name, nlen));
	fam->type = types[t].t;
	fam->has_type = true;
	return true;
}

/* A float as Go's strconv (and so Prometheus) writes it: decimal with an
 * optional exponent, or [+-]Inf or NaN in any case; no hex, no spaces. */
static bool parse_float(const char *s, size_t n, double *v, bool *range)
{
	size_t i = 0;
	*range = false;
	if (n && (s[0] == '+' || s[0] == '-'))
		i = 1;
	if (n - i == 3 && strncasecmp(s + i, "inf", 3) == 0) {
		*v = s[0] == '-' ? -INFINITY : INFINITY;
		return true;
	}
	if (n - i == 3 && strncasecmp(s + i, "nan", 3) == 0) {
		*v = NAN;
		return true;
	}
	size_t d1 = 0, d2 = 0;
	while (i < n && is_digit(s[i]))
		i++, d1++;
	if (i < n && s[i] == '.') {
		i++;
		while (i < n && is_digit(s[i]))
			i++, d2++;
	}
	if (d1 + d2 == 0)
		return false;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		size_t d3 = 0;
		while (i < n && is_digit(s[i]))
			i++, d3++;
		if (!d3)
			return false;
	}
	if (i != n)
		return false;
	char buf[128];
	if (n >= sizeof buf)
		return false;
	memcpy(buf, s, n);
	buf[n] = 0;
	errno = 0;
	*v = strtod(buf, NULL);
	if (errno == ERANGE && isinf(*v)) {
		*range = true;
		return false;
	}
	return true;
}

static bool parse_timestamp(const char *s, size_t n, int64_t *ts)
{
	size_t i = (n && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
	if (i == n || n > 20)
		return false;
	for (size_t k = i; k < n; k++)
		if (!is_digit(s[k]))
			return false;
	char buf[24];
	memcpy(buf, s, n);
	buf[n] = 0;
	errno = 0;
	long long v = strtoll(buf, NULL, 10);
	if (errno)
		return false;
	*ts = v;
	return true;
}

static bool has_suffix(const char *s, size_t n, const char *suf, size_t *base)
{
	size_t k = strlen(suf);
	if (n <= k || memcmp(s + n - k, suf, k) != 0)
		return false;
	*base = n - k;
	return true;
}

/* The family of a sample name and what the sample is in it. */
static bool resolve(struct parser *ps, struct kv_prom_sample *smp)
{
	struct kv_prom_doc *doc = ps->doc;
	const char *s = smp->name.p;
	size_t n = smp->name.n, base;
	char b1[48];
	uint32_t f = find_family(doc, s, n);
	if (f != NO_FAMILY && doc->families[f].has_type) {
		enum kv_prom_type t = doc->families[f].type;
		if (t == KV_PROM_HISTOGRAM)
			return fail(ps, "histogram %s: a sample needs the suffix _bucket, _sum or _count",
			            shown(b1, sizeof b1, s, n));
		smp->family = f;
		smp->type = t;
		smp->cumulative = t == KV_PROM_COUNTER || (t == KV_PROM_UNTYPED && has_suffix(s, n, "_total", &base));
		return true;
	}
	static const char *const suffixes[] = { "_bucket", "_sum", "_count", "_total" };
	for (size_t k = 0; k < 4; k++) {
		if (!has_suffix(s, n, suffixes[k], &base))
			continue;
		uint32_t g = find_family(doc, s, base);
		if (g == NO_FAMILY || !doc->families[g].has_type)
			continue;
		enum kv_prom_type t = doc->families[g].type;
		if ((t == KV_PROM_HISTOGRAM && k < 3) || (t == KV_PROM_SUMMARY && (k == 1 || k == 2)) ||
		    (t == KV_PROM_COUNTER && k == 3)) {
			smp->family = g;
			smp->type = t;
			smp->cumulative = true;
			return true;
		}
	}
	if (f == NO_FAMILY) {
		if (doc->nfamilies - doc->ndeclared >= ps->lim->max_samples)
			return fail(ps, "more than %zu samples", ps->lim->max_samples);
		f = add_family(doc, s, n);
	}
	smp->family = f;
	smp->type = KV_PROM_UNTYPED;
	smp->cumulative = has_suffix(s, n, "_total", &base);
	return true;
}

static const struct kv_prom_label *find_label(const struct kv_prom_doc *doc, const struct kv_prom_sample *smp, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < smp->nlabels; i++) {
		const struct kv_prom_label *l = &doc->labels[smp->label0 + i];
		if (l->name.n == n && memcmp(l->name.p, name, n) == 0)
			return l;
	}
	return NULL;
}

/* A histogram bucket needs le, a summary quantile needs quantile, both numbers. */
static bool check_bounds(struct parser *ps, const struct kv_prom_sample *smp)
{
	const char *need = NULL;
	size_t base;
	char b1[48], b2[48];
	if (smp->type == KV_PROM_HISTOGRAM && has_suffix(smp->name.p, smp->name.n, "_bucket", &base))
		need = "le";
	else if (smp->type == KV_PROM_SUMMARY && !smp->cumulative)
		need = "quantile";
	if (!need)
		return true;
	const struct kv_prom_label *l = find_label(ps->doc, smp, need);
	if (!l)
		return fail(ps, "%s %s: no %s label", kv_prom_type_name(smp->type), shown(b1, sizeof b1, smp->name.p, smp->name.n), need);
	double v;
	bool range;
	if (!parse_float(l->value.p, l->value.n, &v, &range))
		return fail(ps, "%s label '%s' is not a number", need, shown(b2, sizeof b2, l->value.p, l->value.n));
	return true;
}

static bool parse_labels(struct parser *ps, const char *s, size_t n, size_t *pos, struct kv_prom_sample *smp)
{
	struct kv_prom_doc *doc = ps->doc;
	const struct kv_prom_limits *lim = ps->lim;
	char b1[48], b2[8];
	size_t j = *pos + 1;               /* past '{' */
	for (;;) {
		j = skip_blanks(s, n, j);
		if (j < n && s[j] == '}') {
			j++;
			break;
		}
		size_t k = j;
		while (k < n && label_char(s[k], k == j))
			k++;
		if (k == j)
			return fail(ps, j < n ? "expected a label name or '}'" : "unterminated label set");
		if (k - j > lim->max_name)
			return fail(ps, "label name longer than %zu bytes", lim->max_name);
		struct kv_prom_str name = { s + j, k - j };
		const char *nm = shown(b1, sizeof b1, name.p, name.n);
		j = skip_blanks(s, n, k);
		if (j >= n || s[j] != '=')
			return fail(ps, "expected '=' after the label name %s", nm);
		j = skip_blanks(s, n, j + 1);
		if (j >= n || s[j] != '"')
			return fail(ps, "expected '\"' to open the value of label %s", nm);
		size_t v0 = ++j;
		while (j < n && s[j] != '"')
			j += s[j] == '\\' ? 2 : 1;
		if (j >= n)
			return fail(ps, "unterminated value of label %s", nm);
		if (j - v0 > lim->max_value)
			return fail(ps, "value of label %s longer than %zu bytes", nm, lim->max_value);
		if (smp->nlabels >= lim->max_labels)
			return fail(ps, "more than %zu labels", lim->max_labels);
		if (name.n == 8 && memcmp(name.p, "__name__", 8) == 0)
			return fail(ps, "the label name __name__ is reserved");
		for (size_t l = 0; l < smp->nlabels; l++) {
			const struct kv_prom_label *o = &doc->labels[smp->label0 + l];
			if (o->name.n == name.n && memcmp(o->name.p, name.p, name.n) == 0)
				return fail(ps, "label %s given twice", nm);
		}
		struct kv_prom_str value;
		char bad = 0;
		if (!unescape(ps, s + v0, j - v0, true, &value, &bad))
			return fail(ps, "bad escape '\\%s' in the value of label %s",
			            shown(b2, sizeof b2, &bad, 1), nm);
		if (!utf8_ok(value.p, value.n))
			return fail(ps, "value of label %s is not valid UTF-8", nm);
		doc->labels = kv_xgrow(doc->labels, &doc->labels_cap, doc->nlabels + 1, sizeof *doc->labels);
		doc->labels[doc->nlabels++] = (struct kv_prom_label){ name, value };
		smp->nlabels++;
		j = skip_blanks(s, n, j + 1);
		if (j < n && s[j] == ',') {
			j++;
			continue;
		}
		if (j < n && s[j] == '}') {
			j++;
			break;
		}
		return fail(ps, "expected ',' or '}' after the value of label %s", nm);
	}
	*pos = j;
	return true;
}

static bool parse_sample(struct parser *ps, const char *s, size_t n, size_t i)
{
	struct kv_prom_doc *doc = ps->doc;
	const struct kv_prom_limits *lim = ps->lim;
	char b1[48];
	size_t j = i;
	while (j < n && metric_char(s[j], j == i))
		j++;
	if (j == i)
		return fail(ps, "expected a metric name, a comment or an empty line, not '%s'", shown(b1, sizeof b1, s + i, 1));
	if (j - i > lim->max_name)
		return fail(ps, "metric name longer than %zu bytes", lim->max_name);
	if (doc->nsamples >= lim->max_samples)
		return fail(ps, "more than %zu samples", lim->max_samples);
	struct kv_prom_sample smp = { .name = { s + i, j - i }, .label0 = doc->nlabels, .line = ps->line };
	size_t nlabels0 = doc->nlabels;
	bool separated = j < n && is_blank(s[j]);
	j = skip_blanks(s, n, j);
	if (j < n && s[j] == '{') {
		if (!parse_labels(ps, s, n, &j, &smp)) {
			doc->nlabels = nlabels0;
			return false;
		}
		separated = true;
	}
	if (!separated && j < n)
		return fail(ps, "unexpected '%s' after the metric name", shown(b1, sizeof b1, s + j, 1));
	j = skip_blanks(s, n, j);
	if (j == n)
		return fail(ps, "no value for %s", shown(b1, sizeof b1, smp.name.p, smp.name.n));
	size_t k = token_end(s, n, j);
	bool range;
	if (!parse_float(s + j, k - j, &smp.value, &range))
		return fail(ps, range ? "value '%s' out of range" : "value '%s' is not a number", shown(b1, sizeof b1, s + j, k - j));
	j = skip_blanks(s, n, k);
	if (j < n) {
		k = token_end(s, n, j);
		if (!parse_timestamp(s + j, k - j, &smp.ts_ms))
			return fail(ps, "timestamp '%s' is not an integer number of milliseconds", shown(b1, sizeof b1, s + j, k - j));
		smp.has_ts = true;
		if (skip_blanks(s, n, k) != n)
			return fail(ps, "unexpected text after the timestamp");
	}
	if (!resolve(ps, &smp) || !check_bounds(ps, &smp))
		return false;
	doc->families[smp.family].has_samples = true;
	doc->samples = kv_xgrow(doc->samples, &doc->samples_cap, doc->nsamples + 1, sizeof *doc->samples);
	doc->samples[doc->nsamples++] = smp;
	return true;
}

/* ---- series keys ---- */

static void key_put(struct kv_prom_doc *doc, const char *p, size_t n)
{
	doc->keys = kv_xgrow(doc->keys, &doc->keys_cap, doc->keys_len + n + 10, 1);
	unsigned char *d = doc->keys + doc->keys_len;
	size_t v = n;
	do {
		*d++ = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	memcpy(d, p, n);
	doc->keys_len = (size_t)(d + n - doc->keys);
}

static int label_cmp(const struct kv_prom_label *a, const struct kv_prom_label *b)
{
	size_t n = a->name.n < b->name.n ? a->name.n : b->name.n;
	int c = memcmp(a->name.p, b->name.p, n);
	return c ? c : (a->name.n > b->name.n) - (a->name.n < b->name.n);
}

int kv_prom_key_cmp(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);
	return c ? c : (alen > blen) - (alen < blen);
}

static int keyref_cmp(const void *pa, const void *pb)
{
	const struct keyref *a = pa, *b = pb;
	int c = kv_prom_key_cmp(a->key, a->len, b->key, b->len);
	return c ? c : (a->sample > b->sample) - (a->sample < b->sample);
}

/* Sorts each sample's labels by name, builds its key, orders the samples by
 * key and rejects a series given twice. */
static bool index_series(struct parser *ps)
{
	struct kv_prom_doc *doc = ps->doc;
	for (size_t i = 0; i < doc->nsamples; i++) {
		struct kv_prom_sample *smp = &doc->samples[i];
		struct kv_prom_label *l = smp->nlabels ? doc->labels + smp->label0 : NULL;
		for (size_t a = 1; a < smp->nlabels; a++) {
			struct kv_prom_label x = l[a];
			size_t b = a;
			for (; b > 0 && label_cmp(&l[b - 1], &x) > 0; b--)
				l[b] = l[b - 1];
			l[b] = x;
		}
		smp->key_off = doc->keys_len;
		key_put(doc, smp->name.p, smp->name.n);
		for (size_t a = 0; a < smp->nlabels; a++) {
			key_put(doc, l[a].name.p, l[a].name.n);
			key_put(doc, l[a].value.p, l[a].value.n);
		}
		smp->key_len = doc->keys_len - smp->key_off;
	}
	if (!doc->nsamples)
		return true;
	struct keyref *refs = kv_xmalloc(doc->nsamples * sizeof *refs);
	for (size_t i = 0; i < doc->nsamples; i++)
		refs[i] = (struct keyref){ doc->keys + doc->samples[i].key_off, doc->samples[i].key_len, (uint32_t)i };
	qsort(refs, doc->nsamples, sizeof *refs, keyref_cmp);
	doc->order = kv_xgrow(doc->order, &doc->order_cap, doc->nsamples, sizeof *doc->order);
	bool ok = true;
	for (size_t i = 0; i < doc->nsamples; i++) {
		doc->order[i] = refs[i].sample;
		if (ok && i > 0 && kv_prom_key_cmp(refs[i - 1].key, refs[i - 1].len, refs[i].key, refs[i].len) == 0) {
			const struct kv_prom_sample *a = &doc->samples[refs[i - 1].sample], *b = &doc->samples[refs[i].sample];
			char b1[48];
			ps->line = b->line;
			ok = fail(ps, "series %s%s repeats line %llu", shown(b1, sizeof b1, b->name.p, b->name.n),
			          b->nlabels ? "{...}" : "", (unsigned long long)a->line);
		}
	}
	free(refs);
	return ok;
}

bool kv_prom_parse(struct kv_prom_doc *doc, const char *text, size_t len,
                   const struct kv_prom_limits *lim, struct kv_err *e)
{
	struct parser ps = { doc, lim ? lim : &default_limits, len, e, 0 };
	reset(doc);
	size_t pos = 0;
	bool ok = true;
	while (ok && pos < len) {
		ps.line++;
		const char *s = text + pos;
		const char *nl = memchr(s, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - s) : len - pos;
		if (n > ps.lim->max_line)
			ok = fail(&ps, "longer than %zu bytes", ps.lim->max_line);
		else if (!nl)
			ok = fail(&ps, "no newline at the end (cut off?)");
		else if (memchr(s, 0, n))
			ok = fail(&ps, "NUL byte");
		/* n is 0 on an empty line (cppcheck assumes otherwise) */
		// cppcheck-suppress knownConditionTrueFalse
		else if (n && s[n - 1] == '\r')
			ok = fail(&ps, "carriage return at the end (lines end in LF only)");
		else {
			size_t i = skip_blanks(s, n, 0);
			if (i < n)
				ok = s[i] == '#' ? parse_comment(&ps, s, n, i + 1) : parse_sample(&ps, s, n, i);
		}
		pos += n + 1;
	}
	doc->lines = ps.line;
	if (ok)
		ok = index_series(&ps);
	if (!ok)
		reset(doc);
	return ok;
}

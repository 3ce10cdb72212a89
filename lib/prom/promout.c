#include "prom/promout.h"
#include "base/jsonw.h"
#include "base/utf8.h"
#include "base/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool kv_promout_matches(const struct kv_prom_doc *doc, size_t i, const regex_t *match)
{
	if (!match)
		return true;
	const struct kv_prom_str *name = &doc->samples[i].name;
	char buf[KV_PROM_MAX_NAME + 1];
	char *s = name->n < sizeof buf ? buf : kv_xmalloc(name->n + 1);
	memcpy(s, name->p, name->n);
	s[name->n] = 0;
	bool ok = regexec(match, s, 0, NULL, 0) == 0;
	if (s != buf)
		free(s);
	return ok;
}

static void put_number(struct jw *w, double v)
{
	if (isfinite(v))
		jw_put_double(w, v);
	else
		jw_put_lit(w, isnan(v) ? "\"NaN\"" : v > 0 ? "\"+Inf\"" : "\"-Inf\"");
}

void kv_promout_json(struct kv_out *o, const char *endpoint, const struct kv_prom_doc *doc, size_t i,
                     double rate, uint64_t realtime_ns)
{
	const struct kv_prom_sample *s = &doc->samples[i];
	const struct kv_prom_label *l = s->nlabels ? doc->labels + s->label0 : NULL;
	struct jw w;
	jw_begin(&w, o);
	jw_put_lit(&w, "{\"endpoint\":");
	jw_put_cstr(&w, endpoint);
	jw_put_lit(&w, ",\"metric\":");
	jw_put_str(&w, s->name.p, s->name.n);
	jw_put_lit(&w, ",\"type\":\"");
	jw_put_lit(&w, kv_prom_type_name(s->type));
	jw_put_lit(&w, "\",\"labels\":{");
	for (size_t k = 0; k < s->nlabels; k++) {
		if (k)
			jw_put_char(&w, ',');
		jw_put_str(&w, l[k].name.p, l[k].name.n);
		jw_put_char(&w, ':');
		jw_put_str(&w, l[k].value.p, l[k].value.n);
	}
	jw_put_lit(&w, "},\"value\":");
	put_number(&w, s->value);
	jw_put_lit(&w, ",\"rate\":");
	jw_put_double(&w, rate);
	jw_put_lit(&w, ",\"ts\":");
	jw_put_ms_as_seconds(&w, s->has_ts ? s->ts_ms : (int64_t)(realtime_ns / 1000000));
	jw_put_lit(&w, "}\n");
	jw_end(&w);
}

void kv_promout_number(char *buf, size_t size, double v)
{
	if (isnan(v))
		snprintf(buf, size, "NaN");
	else if (isinf(v))
		snprintf(buf, size, v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 1e15)
		snprintf(buf, size, "%.0f", v);
	else
		snprintf(buf, size, "%.6g", v);
}

/* name{label="value",...} with the exposition's escapes (\\, \" and \n), as
 * kvstat(1) "Table" shows it; the caller makes it printable. */
static void put_series(struct kv_out *o, const struct kv_prom_doc *doc, const struct kv_prom_sample *s)
{
	kv_out_write(o, s->name.p, s->name.n);
	if (!s->nlabels)
		return;
	kv_out_putc(o, '{');
	for (size_t k = 0; k < s->nlabels; k++) {
		const struct kv_prom_label *l = &doc->labels[s->label0 + k];
		if (k)
			kv_out_putc(o, ',');
		kv_out_write(o, l->name.p, l->name.n);
		kv_out_write(o, "=\"", 2);
		for (size_t c = 0; c < l->value.n; c++) {
			unsigned char ch = (unsigned char)l->value.p[c];
			if (ch == '\\' || ch == '"')
				kv_out_putc(o, '\\'), kv_out_putc(o, (char)ch);
			else if (ch == '\n')
				kv_out_write(o, "\\n", 2);
			else
				kv_out_putc(o, (char)ch);
		}
		kv_out_putc(o, '"');
	}
	kv_out_putc(o, '}');
}

/* The text written to o (in memory) since start, through the one printable
 * rule in place.  The exposition's escapes come first: they are printable
 * ASCII, so a newline in a label value shows as \n and only what would drive
 * the terminal becomes '?'. */
static void shown_printable(struct kv_out *o, size_t start)
{
	size_t n = o->len - start;
	kv_out_putc(o, 0); /* room for kv_printable's NUL */
	o->len = start + kv_printable(o->buf + start, n + 1, o->buf + start, n);
}

static void pad(struct kv_out *o, size_t n)
{
	while (n--)
		kv_out_putc(o, ' ');
}

#define SERIES_WIDTH_MAX 72

void kv_promout_table(struct kv_out *o, const char *endpoint, const struct kv_prom_doc *doc,
                      const double *rates, const regex_t *match)
{
	struct kv_out text;                 /* the series column of the shown rows */
	kv_out_open_mem(&text);
	size_t *ends = kv_xcalloc(doc->nsamples + 1, sizeof *ends), nshown = 0;
	size_t *idx = kv_xcalloc(doc->nsamples + 1, sizeof *idx);
	size_t wseries = 6, wvalue = 5;
	char num[64];
	for (size_t i = 0; i < doc->nsamples; i++) {
		if (!kv_promout_matches(doc, i, match))
			continue;
		size_t start = text.len;
		put_series(&text, doc, &doc->samples[i]);
		shown_printable(&text, start);
		if (text.len - start > wseries)
			wseries = text.len - start;
		kv_promout_number(num, sizeof num, doc->samples[i].value);
		if (strlen(num) > wvalue)
			wvalue = strlen(num);
		ends[nshown] = text.len;
		idx[nshown++] = i;
	}
	if (wseries > SERIES_WIDTH_MAX)
		wseries = SERIES_WIDTH_MAX;
	char head[128];
	snprintf(head, sizeof head, "  (%zu samples, %zu shown)\n", doc->nsamples, nshown);
	kv_out_puts(o, endpoint);
	kv_out_puts(o, head);
	if (nshown) {
		kv_out_puts(o, "  SERIES");
		pad(o, wseries - 6 + 2 + wvalue - 5);
		kv_out_puts(o, "VALUE  RATE/s\n");
	}
	for (size_t r = 0; r < nshown; r++) {
		size_t start = r ? ends[r - 1] : 0, n = ends[r] - start;
		const struct kv_prom_sample *s = &doc->samples[idx[r]];
		kv_out_write(o, "  ", 2);
		kv_out_write(o, text.buf + start, n);
		pad(o, n < wseries ? wseries - n : 0);
		kv_out_write(o, "  ", 2);
		kv_promout_number(num, sizeof num, s->value);
		pad(o, wvalue - strlen(num));
		kv_out_puts(o, num);
		if (s->cumulative) {
			kv_out_write(o, "  ", 2);
			if (isfinite(rates[idx[r]])) {
				snprintf(num, sizeof num, "%.6g", rates[idx[r]]);
				kv_out_puts(o, num);
			} else {
				kv_out_putc(o, '-');
			}
		}
		kv_out_putc(o, '\n');
	}
	free(ends);
	free(idx);
	kv_out_free_mem(&text);
}

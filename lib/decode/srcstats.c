#include "decode/srcstats.h"
#include "base/utf8.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

void kv_srcstats_init(struct kv_srcstats *s)
{
	memset(s, 0, sizeof *s);
	kv_strmap_init(&s->names, false);
}

void kv_srcstats_free(struct kv_srcstats *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].src);
	free(s->v);
	kv_strmap_free(&s->names);
	memset(s, 0, sizeof *s);
}

struct kv_srcstat *kv_srcstats_get(struct kv_srcstats *s, const char *src, size_t n)
{
	uint32_t id = kv_strmap_find(&s->names, src, n);
	if (id != KV_STRMAP_NONE)
		return &s->v[id];
	if (s->n >= KV_MAX_SOURCES) {
		s->refused++;
		return NULL;
	}
	s->v = kv_xgrow(s->v, &s->cap, s->n + 1, sizeof *s->v);
	struct kv_srcstat *st = &s->v[s->n++];
	memset(st, 0, sizeof *st);
	st->src = kv_xstrndup(src, n);
	st->src_len = n;
	st->d.worker = UINT32_MAX;
	kv_strmap_add(&s->names, st->src, n, 0);
	return st;
}

void kv_srcstats_print(const struct kv_srcstats *s, FILE *f)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct kv_srcstat *st = &s->v[i];
		uint64_t total = 0;
		for (int fm = 0; fm < KV_NFORMATS; fm++)
			for (int t = 0; t < 3; t++)
				total += st->events[fm][t];
		char name[512];
		kv_printable(name, sizeof name, st->src[0] ? st->src : "-", strlen(st->src[0] ? st->src : "-"));
		fprintf(f, "%s: %s: %llu batches, %llu events", kv_prog, name,
			(unsigned long long)st->batches, (unsigned long long)total);
		const char *sep = " (";
		for (int fm = 0; fm < KV_NFORMATS; fm++) {
			const uint64_t *e = st->events[fm];
			if (!e[0] && !e[1] && !e[2])
				continue;
			fprintf(f, "%s%s: %llu stored, %llu removed, %llu cleared", sep, kv_format_name(fm),
				(unsigned long long)e[0], (unsigned long long)e[1], (unsigned long long)e[2]);
			sep = "; ";
		}
		if (*sep == ';')
			fputc(')', f);
		/* only Mooncake events: a Mooncake master, whose seq counts events */
		uint64_t mooncake = st->events[KV_FMT_MOONCAKE][0] + st->events[KV_FMT_MOONCAKE][1] +
				    st->events[KV_FMT_MOONCAKE][2];
		fprintf(f, ", %llu gaps, %llu %s, %llu restarts, %llu replayed, %llu ignored, %llu errors\n",
			(unsigned long long)st->seq.gaps, (unsigned long long)st->seq.missing,
			kv_seq_missing_words(mooncake && mooncake == total),
			(unsigned long long)st->seq.restarts, (unsigned long long)st->replayed,
			(unsigned long long)st->ignored, (unsigned long long)st->errors);
	}
	if (s->refused)
		fprintf(f, "%s: %llu records of sources beyond the first %u not counted\n", kv_prog,
			(unsigned long long)s->refused, KV_MAX_SOURCES);
}

/* promcheck: checks metrics files as Prometheus would scrape them.
 *   promcheck FILE...
 * Each file must parse with the strict exposition parser (lib/promtext),
 * and every family must have # HELP and # TYPE and a kvtools_ name.
 * Prints the first problem of each bad file; exit 1 if any was bad. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prom/promtext.h"
#include "base/util.h"

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, len = 0;
	char *buf = kv_xmalloc(cap);
	size_t k;
	while ((k = fread(buf + len, 1, cap - len, f)) > 0) {
		len += k;
		if (len == cap)
			buf = kv_xgrow(buf, &cap, cap + 1, 1);
	}
	fclose(f);
	*n = len;
	return buf;
}

static bool check(const char *path, struct kv_prom_doc *doc)
{
	size_t n;
	struct kv_err e = { 0 };
	char *text = slurp(path, &n);
	if (!text) {
		kv_warn_errno("%s", path);
		return false;
	}
	bool ok = kv_prom_parse(doc, text, n, NULL, &e);
	if (!ok)
		kv_warn("%s: %s", path, kv_err_msg(&e));
	kv_err_clear(&e);
	for (size_t i = 0; ok && i < doc->nfamilies; i++) {
		const struct kv_prom_family *f = &doc->families[i];
		if (!f->has_help || !f->has_type || f->name.n < 8 || memcmp(f->name.p, "kvtools_", 8) != 0) {
			kv_warn("%s: %.*s: needs # HELP, # TYPE and a kvtools_ name", path, (int)f->name.n, f->name.p);
			ok = false;
		}
	}
	free(text);
	return ok;
}

int main(int argc, char **argv)
{
	kv_set_prog(argv);
	struct kv_prom_doc doc;
	kv_prom_init(&doc);
	int bad = 0;
	for (int i = 1; i < argc; i++)
		bad |= !check(argv[i], &doc);
	kv_prom_free(&doc);
	return bad;
}

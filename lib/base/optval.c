#include "base/optval.h"
#include "base/utf8.h"
#include "base/util.h"

#include <stdbool.h>
#include <string.h>

const char *kv_name_flaw(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	if (n == 0)
		return "empty";
	if (u[0] == ' ' || u[n - 1] == ' ')
		return "padded with spaces";
	for (size_t i = 0; i < n;) {
		size_t len = kv_utf8_len(u + i, n - i);
		if (len == 0)
			return "not UTF-8";
		if (kv_utf8_is_control(u + i, len))
			return "a control character";
		i += len;
	}
	return NULL;
}

const char *kv_list_flaw(const char *s, char sep, struct kv_span *items, size_t max, size_t *n)
{
	*n = 0;
	for (const char *p = s;; p++) {
		const char *end = strchr(p, sep);
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == 0)
			return "an empty element";
		if (*n == max)
			return "too many elements";
		const char *why = kv_name_flaw(p, len);
		if (why)
			return why;
		items[(*n)++] = (struct kv_span){ p, len };
		if (!end)
			return NULL;
		p = end;
	}
}

const char *kv_numbers_flaw(const char *s, double min, double max, double *out, size_t n)
{
	struct kv_span items[16];
	size_t got;
	if (n > sizeof items / sizeof items[0])
		return "too many elements";
	const char *why = kv_list_flaw(s, ',', items, n, &got);
	if (why)
		return why;
	if (got < n)
		return "too few elements";
	for (size_t i = 0; i < n; i++) {
		char num[64];
		if (items[i].n >= sizeof num)
			return "not a number in range";
		memcpy(num, items[i].p, items[i].n);
		num[items[i].n] = 0;
		if (!kv_parse_double(num, min, max, &out[i]))
			return "not a number in range";
	}
	return NULL;
}

/* A name flaw said of one side of a pair. */
static const char *side_flaw(const char *why, bool key)
{
	static const char *const flaws[][3] = {
		{ "empty", "an empty key", "an empty value" },
		{ "padded with spaces", "a key padded with spaces", "a value padded with spaces" },
		{ "a control character", "a control character in its key", "a control character in its value" },
		{ "not UTF-8", "a key that is not UTF-8", "a value that is not UTF-8" },
	};
	for (size_t i = 0; i < sizeof flaws / sizeof flaws[0]; i++)
		if (strcmp(why, flaws[i][0]) == 0)
			return flaws[i][key ? 1 : 2];
	return why;
}

const char *kv_pair_flaw(const char *s, struct kv_span *key, struct kv_span *value)
{
	const char *eq = strchr(s, '=');
	if (!eq)
		return "no '='";
	if (strchr(eq + 1, '='))
		return "more than one '='";
	*key = (struct kv_span){ s, (size_t)(eq - s) };
	*value = (struct kv_span){ eq + 1, strlen(eq + 1) };
	const char *why = kv_name_flaw(key->p, key->n);
	if (why)
		return side_flaw(why, true);
	why = kv_name_flaw(value->p, value->n);
	return why ? side_flaw(why, false) : NULL;
}

static _Noreturn void refuse(const char *opt, const char *arg, const char *form, const char *why)
{
	kv_usage_error("%s: '%s' is not %s: %s", opt, arg, form, why);
}

void kv_opt_name(const char *opt, const char *arg, const char *form)
{
	const char *why = kv_name_flaw(arg, strlen(arg));
	if (why)
		refuse(opt, arg, form, why);
}

size_t kv_opt_list(const char *opt, const char *arg, char sep, struct kv_span *items, size_t max, const char *form)
{
	size_t n;
	const char *why = kv_list_flaw(arg, sep, items, max, &n);
	if (why)
		refuse(opt, arg, form, why);
	return n;
}

void kv_opt_numbers(const char *opt, const char *arg, double min, double max, double *out, size_t n,
		    const char *form)
{
	const char *why = kv_numbers_flaw(arg, min, max, out, n);
	if (why)
		refuse(opt, arg, form, why);
}

void kv_opt_pair(const char *opt, const char *arg, struct kv_span *key, struct kv_span *value, const char *form)
{
	const char *why = kv_pair_flaw(arg, key, value);
	if (why)
		refuse(opt, arg, form, why);
}

/* optval: the one reading of each kind of option value that is neither a
 * number (util.h) nor a file name (taken as given, as every Unix tool
 * takes one): a name (a model, a tenant, a host, an endpoint, a topic, a
 * pattern), a list of items separated by one character, and a KEY=VALUE
 * pair.  Every program reads its options' values of these kinds here, so
 * that one value means the same to all of them (kvtools(7)
 * "Conventions"): an empty value or element, one padded with spaces, one
 * holding a control character or bytes that are not UTF-8, an empty
 * element of a list (a doubled, leading or trailing separator) and a
 * second '=' in a pair are refused, never dropped or read around.  The
 * kv_*_flaw functions say why a value is refused (NULL: it is not) and
 * have no side effect; the kv_opt_* ones end the program with the usage
 * error `PROG: OPTION: 'VALUE' is not FORM: why` and exit 64. */
#ifndef KV_OPTVAL_H
#define KV_OPTVAL_H

#include <stddef.h>

/* A piece of a value: n bytes at p, not NUL-terminated. */
struct kv_span {
	const char *p;
	size_t n;
};

/* Why s[0..n) is not a name: "empty", "padded with spaces", "a control
 * character" (C0, DEL, C1), "not UTF-8"; NULL when it is one. */
const char *kv_name_flaw(const char *s, size_t n);

/* Splits s at each sep into at most max names (items), their count in *n.
 * Why it cannot: "an empty element" (s empty, or a separator doubled,
 * first or last), "too many elements" (more than max), or an element's name flaw;
 * NULL when it can.  *n and items hold what was read either way. */
const char *kv_list_flaw(const char *s, char sep, struct kv_span *items, size_t max, size_t *n);

/* Splits s = KEY=VALUE into two names.  Why it cannot: "no '='", "more
 * than one '='", or "KEY: " / "VALUE: " and the side's name flaw. */
const char *kv_pair_flaw(const char *s, struct kv_span *key, struct kv_span *value);

/* Splits s into exactly n numbers from min to max (kv_parse_double),
 * separated by commas, into out.  Why it cannot: a list flaw, "too few
 * elements", or "not a number in range"; NULL when it can. */
const char *kv_numbers_flaw(const char *s, double min, double max, double *out, size_t n);

/* The same, for an option's value: a refused value is a usage error
 * naming the option, the value and FORM (what it should be). */
void kv_opt_name(const char *opt, const char *arg, const char *form);
size_t kv_opt_list(const char *opt, const char *arg, char sep, struct kv_span *items, size_t max, const char *form);
void kv_opt_numbers(const char *opt, const char *arg, double min, double max, double *out, size_t n,
		    const char *form);
void kv_opt_pair(const char *opt, const char *arg, struct kv_span *key, struct kv_span *value, const char *form);

#endif

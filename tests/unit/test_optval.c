/* optval: the one reading of names, lists and KEY=VALUE pairs in option
 * values: nothing empty, padded, control or not UTF-8, no empty element,
 * no second '=', and what is taken is taken exactly. */
#include <stdint.h>
#include <string.h>

#include "base/optval.h"
#include "base/util.h"
#include "unit.h"

static int span_is(struct kv_span s, const char *want)
{
	return s.n == strlen(want) && memcmp(s.p, want, s.n) == 0;
}

static void names(void)
{
	static const struct { const char *s; const char *why; } cases[] = {
		{ "llama", NULL },
		{ "my model#2", NULL },                 /* inner spaces and '#' are a name's */
		{ "a\\b\"c", NULL },
		{ "\xc3\xa9\xe4\xb8\xad", NULL },       /* UTF-8 */
		{ "", "empty" },
		{ " llama", "padded with spaces" },
		{ "llama ", "padded with spaces" },
		{ " ", "padded with spaces" },
		{ "lla\tma", "a control character" },
		{ "llama\n", "a control character" },
		{ "ll\x7f", "a control character" },
		{ "l\xc2\x85", "a control character" },  /* C1: NEL */
		{ "l\xc2\xa0", NULL },                   /* no-break space is text */
		{ "\xff", "not UTF-8" },
		{ "\xc0\xaf", "not UTF-8" },             /* overlong */
		{ "\xe4\xb8", "not UTF-8" },             /* cut short */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *why = kv_name_flaw(cases[i].s, strlen(cases[i].s));
		if (cases[i].why)
			ASSERT(why && strcmp(why, cases[i].why) == 0);
		else
			ASSERT(why == NULL);
	}
	/* a NUL inside the bytes given is a control character too */
	ASSERT(kv_name_flaw("a\0b", 3) && strcmp(kv_name_flaw("a\0b", 3), "a control character") == 0);
}

static void lists(void)
{
	struct kv_span it[4];
	size_t n;
	ASSERT(kv_list_flaw("a,b,c", ',', it, 4, &n) == NULL);
	ASSERT_EQ_U64(n, 3);
	ASSERT(span_is(it[0], "a") && span_is(it[1], "b") && span_is(it[2], "c"));
	ASSERT(kv_list_flaw("only", ',', it, 4, &n) == NULL && n == 1 && span_is(it[0], "only"));
	static const struct { const char *s; const char *why; } bad[] = {
		{ "", "an empty element" },
		{ "a,,b", "an empty element" },
		{ ",a", "an empty element" },
		{ "a,", "an empty element" },
		{ ",", "an empty element" },
		{ "a, b", "padded with spaces" },
		{ "a ,b", "padded with spaces" },
		{ "a,b\t", "a control character" },
		{ "a,b,c,d,e", "too many elements" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *why = kv_list_flaw(bad[i].s, ',', it, 4, &n);
		ASSERT(why && strcmp(why, bad[i].why) == 0);
	}
	/* another separator: commas are then a name's */
	ASSERT(kv_list_flaw("a,b:c", ':', it, 4, &n) == NULL && n == 2 && span_is(it[0], "a,b"));
}

static void numbers(void)
{
	double v[3];
	ASSERT(kv_numbers_flaw("1,0.5,0", 0, 1e9, v, 3) == NULL);
	ASSERT(v[0] == 1 && v[1] == 0.5 && v[2] == 0);
	static const struct { const char *s; const char *why; } bad[] = {
		{ "1,,1,0", "an empty element" },       /* kvgen refused it, kvquery read 1,1,0 */
		{ "1,1,0,", "an empty element" },
		{ "1,1", "too few elements" },
		{ "1,1,0,0", "too many elements" },
		{ "1,x,0", "not a number in range" },
		{ "1,-1,0", "not a number in range" },
		{ "1,1e10,0", "not a number in range" },
		{ "1, 1,0", "padded with spaces" },
		{ "1,1,nan", "not a number in range" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *why = kv_numbers_flaw(bad[i].s, 0, 1e9, v, 3);
		ASSERT(why && strcmp(why, bad[i].why) == 0);
	}
}

/* One form of number for every option: what strtod or strtoumax take
 * besides (white space, '+', an exponent, hexadecimal, inf) is refused by
 * the fractional and the integer readers alike. */
static void number_forms(void)
{
	static const struct { const char *s; double v; } good[] = {
		{ "2", 2 }, { "0.5", 0.5 }, { ".5", 0.5 }, { "2.", 2 }, { "-1.25", -1.25 }, { "007", 7 },
	};
	double d;
	uint64_t u;
	int64_t i;
	for (size_t k = 0; k < sizeof good / sizeof good[0]; k++)
		ASSERT(kv_parse_double(good[k].s, -10, 10, &d) && d == good[k].v);
	static const char *const bad[] = {
		"", "-", ".", "-.", "1e3", "1E3", "1e-3", "0x10", "0x1p3", "inf", "nan", "+1", " 1", "1 ", "1..2", "1.2.3", "--1",
	};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		ASSERT(!kv_parse_double(bad[k], -1e9, 1e9, &d));
		ASSERT(!kv_parse_u64(bad[k], 0, UINT64_MAX, &u));
		ASSERT(!kv_parse_i64(bad[k], INT64_MIN, INT64_MAX, &i));
	}
	ASSERT(kv_parse_u64("10", 0, 10, &u) && u == 10 && !kv_parse_u64("11", 0, 10, &u));
	ASSERT(kv_parse_i64("-5", -5, 0, &i) && i == -5 && !kv_parse_u64("-5", 0, 10, &u));
	ASSERT(!kv_parse_u64("1.5", 0, 10, &u) && !kv_parse_double("11", 0, 10, &d));
}

static void pairs(void)
{
	struct kv_span k, v;
	ASSERT(kv_pair_flaw("tcp://10.0.0.1:5557=tcp://127.0.0.1:6000", &k, &v) == NULL);
	ASSERT(span_is(k, "tcp://10.0.0.1:5557") && span_is(v, "tcp://127.0.0.1:6000"));
	ASSERT(kv_pair_flaw("daemon=a,b", &k, &v) == NULL && span_is(k, "daemon") && span_is(v, "a,b"));
	static const struct { const char *s; const char *why; } bad[] = {
		{ "a", "no '='" },
		{ "", "no '='" },
		{ "a=b=c", "more than one '='" },       /* was backend a serving instance "b=c" */
		{ "a==b", "more than one '='" },
		{ "=b", "an empty key" },
		{ "a=", "an empty value" },
		{ " a=b", "a key padded with spaces" },
		{ "a =b", "a key padded with spaces" },
		{ "a= b", "a value padded with spaces" },
		{ "a=b\x1b[2J", "a control character in its value" },
		{ "\xff=b", "a key that is not UTF-8" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *why = kv_pair_flaw(bad[i].s, &k, &v);
		ASSERT(why && strcmp(why, bad[i].why) == 0);
	}
}

int main(void)
{
	RUN(names);
	RUN(lists);
	RUN(numbers);
	RUN(number_forms);
	RUN(pairs);
	return unit_done();
}

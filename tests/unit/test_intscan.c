/* kv_intscan_array against a reference: yajl reading the same array with
 * the rules of queryline.c's callbacks (JSON integers in i64 or u64 by
 * strtoll / strtoull, hashes as strings by kv_hash_value_str).  Whatever the
 * scanner takes, the reference must take, with the same values and the
 * same closing ']'; whatever it declines, the reference must refuse, or
 * the array must hold what the scanner leaves to yajl on purpose (an
 * escape, \v or \f, more values than allowed).  Inputs: every edge of the
 * number forms, every separator, every prefix of some arrays, and random
 * arrays with and without random damage, each in a buffer of its own size
 * so that a read past its end is caught under SAN=1. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "decode/flexhash.h"
#include "base/intscan.h"
#include "unit.h"

/* ---- the reference --------------------------------------------------- */

struct ref {
	enum kv_intscan_kind kind;
	int depth;
	bool bad, closed;
	uint64_t *v;
	size_t n, cap;
};

static int ref_push(struct ref *r, uint64_t v)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 64;
		r->v = realloc(r->v, r->cap * sizeof *r->v);
	}
	r->v[r->n++] = v;
	return 1;
}

static int ref_refuse(struct ref *r)
{
	r->bad = true;
	return 0;
}

static int ref_number(void *ctx, const char *s, size_t n)
{
	struct ref *r = ctx;
	char buf[400];
	if (r->depth != 1 || n >= sizeof buf || memchr(s, '.', n) || memchr(s, 'e', n) || memchr(s, 'E', n))
		return ref_refuse(r);
	memcpy(buf, s, n);
	buf[n] = 0;
	errno = 0;
	if (r->kind == KV_INTSCAN_I64) {
		long long x = strtoll(buf, NULL, 10);
		return errno ? ref_refuse(r) : ref_push(r, (uint64_t)x);
	}
	if (buf[0] == '-')
		return ref_refuse(r);
	unsigned long long x = strtoull(buf, NULL, 10);
	return errno ? ref_refuse(r) : ref_push(r, (uint64_t)x);
}

static int ref_string(void *ctx, const unsigned char *s, size_t n)
{
	struct ref *r = ctx;
	uint64_t h;
	if (r->depth != 1 || r->kind != KV_INTSCAN_U64_HEX || kv_hash_value_str((const char *)s, n, &h))
		return ref_refuse(r);
	return ref_push(r, h);
}

static int ref_start_array(void *ctx)
{
	struct ref *r = ctx;
	return r->depth++ == 0 ? 1 : ref_refuse(r);
}

static int ref_end_array(void *ctx)
{
	struct ref *r = ctx;
	r->closed = true;
	return 0; /* stop at the ']': yajl then tells where it is */
}

static int ref_other(void *ctx)
{
	return ref_refuse(ctx);
}

static int ref_bool(void *ctx, int b)
{
	(void)b;
	return ref_refuse(ctx);
}

static int ref_key(void *ctx, const unsigned char *s, size_t n)
{
	(void)s, (void)n;
	return ref_refuse(ctx);
}

static const yajl_callbacks ref_callbacks = {
	.yajl_null = ref_other, .yajl_boolean = ref_bool, .yajl_number = ref_number,
	.yajl_string = ref_string, .yajl_start_map = ref_other, .yajl_map_key = ref_key,
	.yajl_end_map = ref_other, .yajl_start_array = ref_start_array, .yajl_end_array = ref_end_array,
};

/* The reference on "[" + s: true with the values in r and the offset of
 * the ']' in s, or false. */
static bool ref_scan(const char *s, size_t len, enum kv_intscan_kind kind, struct ref *r, size_t *at)
{
	memset(r, 0, sizeof *r);
	r->kind = kind;
	yajl_handle h = yajl_alloc(&ref_callbacks, NULL, r);
	yajl_parse(h, (const unsigned char *)"[", 1);
	if (yajl_parse(h, (const unsigned char *)s, len) == yajl_status_client_canceled && r->closed && !r->bad)
		*at = yajl_get_bytes_consumed(h) - 1;
	yajl_free(h);
	return r->closed && !r->bad;
}

/* ---- the comparison -------------------------------------------------- */

/* What the scanner leaves to yajl although yajl may take it. */
static bool unusual(const char *s, size_t len)
{
	return memchr(s, '\\', len) || memchr(s, '\v', len) || memchr(s, '\f', len);
}

#define HEAD 2 /* values already in out: appended to, and kept on a decline */

/* kv_intscan_tokens on the same input as kv_intscan_array's I64 (which
 * gave at and the n values v): the same answer, each value's low 32 bits
 * (kv-conductor's `as u32`), the values before kept. */
static bool tokens_as_reference(const char *s, size_t len, size_t max, size_t at, const uint64_t *v, size_t n)
{
	struct kv_u32s out = { malloc(HEAD * sizeof(uint32_t)), HEAD, HEAD };
	out.v[0] = 11, out.v[1] = 22;
	size_t tat = kv_intscan_tokens(s, len, &out, max);
	bool same = tat == at && out.v[0] == 11 && out.v[1] == 22 && out.n == HEAD + (at == KV_INTSCAN_DECLINED ? 0 : n);
	for (size_t i = 0; same && at != KV_INTSCAN_DECLINED && i < n; i++)
		same = out.v[HEAD + i] == (uint32_t)v[i];
	if (!same)
		printf("# tokens: %zu (%zu values) where the u64 scan gave %zu (%zu values)\n", tat, out.n - HEAD, at, n);
	free(out.v);
	return same;
}

/* One input, for one kind and limit: false (with a note) when the scanner
 * and the reference disagree. */
static bool same_as_reference(const char *text, size_t len, enum kv_intscan_kind kind, size_t max)
{
	char *s = malloc(len ? len : 1);
	memcpy(s, text, len);
	struct kv_u64s out = { NULL, HEAD, 0 };
	out.v = malloc(HEAD * sizeof *out.v), out.cap = HEAD;
	out.v[0] = 11, out.v[1] = 22;
	size_t at = kv_intscan_array(s, len, kind, &out, max), ref_at = 0;
	struct ref r;
	bool ref_ok = ref_scan(s, len, kind, &r, &ref_at);
	bool same;
	if (at != KV_INTSCAN_DECLINED)
		same = ref_ok && at == ref_at && out.n == HEAD + r.n && HEAD + r.n <= max &&
		       (r.n == 0 || memcmp(out.v + HEAD, r.v, r.n * sizeof *r.v) == 0);
	else
		same = out.n == HEAD && (!ref_ok || unusual(s, len) || HEAD + r.n > max);
	same = same && out.v[0] == 11 && out.v[1] == 22;
	if (kind == KV_INTSCAN_I64)
		same = same && tokens_as_reference(s, len, max, at, out.v + HEAD, out.n - HEAD);
	if (!same)
		printf("# kind %d max %zu: scanner %zu (%zu values), reference %s %zu (%zu values): [%.*s\n", (int)kind,
		       max, at, out.n - HEAD, ref_ok ? "takes" : "refuses", ref_at, r.n, (int)(len < 300 ? len : 300),
		       s);
	free(r.v);
	free(out.v);
	free(s);
	return same;
}

static bool same_both_kinds(const char *s, size_t len)
{
	return same_as_reference(s, len, KV_INTSCAN_I64, SIZE_MAX) &&
	       same_as_reference(s, len, KV_INTSCAN_U64_HEX, SIZE_MAX) &&
	       same_as_reference(s, len, KV_INTSCAN_I64, HEAD + 3) &&
	       same_as_reference(s, len, KV_INTSCAN_U64_HEX, HEAD + 3);
}

/* The values the scanner takes from s, which it must take. */
static bool takes(const char *s, enum kv_intscan_kind kind, const uint64_t *want, size_t n)
{
	struct kv_u64s out = { 0 };
	size_t at = kv_intscan_array(s, strlen(s), kind, &out, SIZE_MAX);
	bool ok = at != KV_INTSCAN_DECLINED && s[at] == ']' && out.n == n &&
		  (n == 0 || memcmp(out.v, want, n * sizeof *want) == 0);
	free(out.v);
	return ok;
}

/* The token ids the scanner takes from s, which it must take. */
static bool takes_tokens(const char *s, const uint32_t *want, size_t n)
{
	struct kv_u32s out = { 0 };
	size_t at = kv_intscan_tokens(s, strlen(s), &out, SIZE_MAX);
	bool ok = at != KV_INTSCAN_DECLINED && s[at] == ']' && out.n == n &&
		  (n == 0 || memcmp(out.v, want, n * sizeof *want) == 0);
	free(out.v);
	return ok;
}

static bool declines_tokens(const char *s)
{
	struct kv_u32s out = { 0 };
	size_t at = kv_intscan_tokens(s, strlen(s), &out, SIZE_MAX);
	free(out.v);
	return at == KV_INTSCAN_DECLINED && out.n == 0;
}

static bool declines(const char *s, enum kv_intscan_kind kind)
{
	struct kv_u64s out = { 0 };
	size_t at = kv_intscan_array(s, strlen(s), kind, &out, SIZE_MAX);
	free(out.v);
	return at == KV_INTSCAN_DECLINED && out.n == 0;
}

/* ---- inputs ---------------------------------------------------------- */

static const char *const elements[] = {
	"0", "-0", "1", "7", "01", "-01", "00", "1.5", "1e3", "1E3", "1e+3", "1.0e-2", "-1", "-", "+1", ".5", "1.",
	"1e", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
	"18446744073709551615", "18446744073709551616", "18446744073709551619", "18446744073709551620",
	"99999999999999999999", "100000000000000000000", "00000000000000000001", "4294967296", "-4294967297",
	"12345678", "123456789", "87654321", "1234567890123456", "12345678901234567", "1234567890123456789",
	"12345678901234567890", "1844674407370955161", "18446744073709551610", "18446744073709550000",
	"18446744073709552000", "10000000000000000000", "9999999999999999999", "-9999999999999999999",
	"18439999999999999999", "18450000000000000000", "17999999999999999999",
	"\"0x1\"", "\"0X1\"", "\"1f\"", "\"0x\"", "\"\"", "\"g\"", "\"0xg\"", "\"0x0x1\"", "\"x1\"", "\"0\"",
	"\"0xffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff\"",
	"\"0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff\"",
	"\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"",
	"\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"", "\"\\u0030x1\"", "\"\\u0031\"",
	"\"\\n\"", "\"1\xff\"", "\"\xc3\xa9\"", "\"ab\\\"cd\"", "\"12\"", "\"0x 1\"", "\"0x1 \"", "true", "null",
	"false", "[1]", "{}", "[]", "[", "]", "{", "0x1", "Infinity", "NaN", "-Infinity", "\xff", "1 2", "1\t2",
};

static const char *const separators[] = { ",", ", ", " ,", ",\t", "\r,", ",\v", ",\f", ",,", "", " ", "\t,\t",
					  ",\r\n", "\n,", " , " };

static const char *const tails[] = { "]", "]}", " ]", "\t]\r", "]]", "],\"model\":\"m\"}", "", ",", " ", "}",
				     "\v]", "\f]" };

#define COUNT(a) (sizeof (a) / sizeof (a)[0])

static void test_edges_of_every_element(void)
{
	/* short arrays, read byte by byte, and long compact ones, read a block at a time */
#define RUN_OF_10 "1,22,333,4444,55555,666666,7777777,88888888,999999999,1234567890,"
	static const char *const forms[] = { "%s%s", "1,%s%s", "%s,2%s", "3, %s ,4%s", " %s %s", "12345678,123,%s%s",
					     RUN_OF_10 "%s%s", RUN_OF_10 RUN_OF_10 "%s,5,6,7" RUN_OF_10 "8%s",
					     "%s," RUN_OF_10 RUN_OF_10 "9%s" };
	char buf[800];
	for (size_t e = 0; e < COUNT(elements); e++)
		for (size_t t = 0; t < COUNT(tails); t++) {
			for (size_t f = 0; f < COUNT(forms); f++) {
				snprintf(buf, sizeof buf, forms[f], elements[e], tails[t]);
				ASSERT(same_both_kinds(buf, strlen(buf)));
			}
			snprintf(buf, sizeof buf, "%s,%s%s", elements[e], elements[e], tails[t]);
			ASSERT(same_both_kinds(buf, strlen(buf)));
		}
}

static void test_every_separator(void)
{
	char buf[200];
	for (size_t i = 0; i < COUNT(separators); i++)
		for (size_t t = 0; t < COUNT(tails); t++) {
			const char *sep = separators[i], *tail = tails[t];
			snprintf(buf, sizeof buf, "1%s22%s333%s", sep, sep, tail);
			ASSERT(same_both_kinds(buf, strlen(buf)));
			snprintf(buf, sizeof buf, "\"0x1\"%s\"ab\"%s5%s", sep, sep, tail);
			ASSERT(same_both_kinds(buf, strlen(buf)));
			snprintf(buf, sizeof buf, "%s1%s", sep, tail);
			ASSERT(same_both_kinds(buf, strlen(buf)));
			snprintf(buf, sizeof buf, "1%s%s", sep, tail);
			ASSERT(same_both_kinds(buf, strlen(buf)));
		}
}

/* NUL bytes, which strlen would hide: in every place of a small array. */
static void test_nul_bytes(void)
{
	const char base[] = "12,\"0x3\",456]";
	char buf[sizeof base];
	for (size_t i = 0; i < sizeof base - 1; i++) {
		memcpy(buf, base, sizeof base - 1);
		buf[i] = 0;
		ASSERT(same_both_kinds(buf, sizeof base - 1));
	}
}

static void test_every_prefix(void)
{
	const char *const arrays[] = {
		"1,-22,333,4444,55555,666666,7777777,88888888,999999999,18446744073709551615]}",
		"18446744073709551615,\"0xff\",1, \"DEADbeef\" ]",
		"0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34]",
	};
	for (size_t a = 0; a < COUNT(arrays); a++)
		for (size_t k = 0; k <= strlen(arrays[a]); k++)
			ASSERT(same_both_kinds(arrays[a], k));
}

static void test_what_must_be_taken(void)
{
	const uint64_t s[] = { 0, 0, 9223372036854775807u, 9223372036854775808u, 4294967296u, 12345678,
			       123456789, 0 - (uint64_t)5 };
	ASSERT(takes("0,-0,9223372036854775807,-9223372036854775808,4294967296,12345678,123456789,-5]",
		     KV_INTSCAN_I64, s, 8));
	const uint64_t u[] = { 18446744073709551615u, 0xff, 0xab, 0xffffffffffffffffu, 10000000000000000000u, 0x1 };
	ASSERT(takes("18446744073709551615, \"0xFF\",\"ab\",\t\"0X0000000000000000ffffffffffffffff\" ,"
		     "10000000000000000000,\"1\"\r\n]",
		     KV_INTSCAN_U64_HEX, u, 6));
	ASSERT(takes("]", KV_INTSCAN_I64, NULL, 0));
	ASSERT(takes(" \t]", KV_INTSCAN_U64_HEX, NULL, 0));
}

/* An array of 200 token ids of 1 to 9 digits (they cross every 16- and
 * 64-byte edge of the fast lane), every third separator sep; the 150th
 * written with form (a printf format of one %u) in buf; its values in want. */
static size_t token_array(char *buf, size_t cap, const char *sep, const char *form, uint32_t *want)
{
	size_t len = 0;
	for (uint32_t i = 0; i < 200; i++) {
		uint32_t mod = i % 9 == 8 ? 1000000000u : 1u + 10u * (i % 9 + 1) * (i % 7 + 1) * (i % 5 + 1);
		want[i] = (i * 2654435761u) % mod;
		len += (size_t)snprintf(buf + len, cap - len, "%s", i == 0 ? "" : i % 3 ? "," : sep);
		len += (size_t)snprintf(buf + len, cap - len, i == 150 ? form : "%u", want[i]);
	}
	len += (size_t)snprintf(buf + len, cap - len, "]");
	return len;
}

/* Token ids: i64 in range, each kept as its low 32 bits; around 2^32, the
 * ends of i64, signs, and long arrays in every whitespace form with a
 * leading zero, a sign, an exponent or a fraction in the middle of the
 * fast lane. */
static void test_tokens(void)
{
	const uint32_t t[] = { 0, 0, 4294967295u, 0, 1, 4294967295u, 4294967295u, 1, 0, 7 };
	ASSERT(takes_tokens("0,-0,4294967295,4294967296,4294967297,-1,9223372036854775807,"
			    "-9223372036854775807,-9223372036854775808, 7 ]",
			    t, COUNT(t)));
	const char *const refused[] = { "9223372036854775808]", "-9223372036854775809]", "18446744073709551616]",
					"18446744073709551615]", "01]", "-01]", "00]", "1e3]", "1E3]", "1.0]", "-]",
					"+1]", "1,,2]", "\"1\"]", "1\v]", "1", "1,", "", "--1]", "1-]" };
	for (size_t i = 0; i < COUNT(refused); i++)
		ASSERT(declines_tokens(refused[i]));
	const char *const seps[] = { ",", ", ", " ,", ",\t", "\r\n,", ",\n " };
	char buf[4000];
	uint32_t want[200];
	for (size_t sep = 0; sep < COUNT(seps); sep++) {
		size_t len = token_array(buf, sizeof buf, seps[sep], "%u", want);
		ASSERT(takes_tokens(buf, want, 200));
		ASSERT(same_as_reference(buf, len, KV_INTSCAN_I64, SIZE_MAX));
		/* -v is taken, as 2^32 - v */
		len = token_array(buf, sizeof buf, seps[sep], "-%u", want);
		want[150] = 0 - want[150];
		ASSERT(takes_tokens(buf, want, 200));
		ASSERT(same_as_reference(buf, len, KV_INTSCAN_I64, SIZE_MAX));
		const char *const bad[] = { "0%u", "%ue1", "%u.0", "%uE0", "+%u", "%u,", "--%u" };
		for (size_t b = 0; b < COUNT(bad); b++) {
			len = token_array(buf, sizeof buf, seps[sep], bad[b], want);
			ASSERT(declines_tokens(buf));
			ASSERT(same_as_reference(buf, len, KV_INTSCAN_I64, SIZE_MAX));
		}
	}
}

static void test_what_must_be_declined(void)
{
	const char *const both[] = { "01]", "1.0]", "1e2]", "18446744073709551616]", "1,]", ",1]", "1 2]", "[1]]",
				     "1", "1,", "", "\"0x\"]", "\"0x1\\u0030\"]", "1\v]", "1\f,2]", "1,,2]", "+1]" };
	for (size_t i = 0; i < COUNT(both); i++)
		ASSERT(declines(both[i], KV_INTSCAN_I64) && declines(both[i], KV_INTSCAN_U64_HEX));
	ASSERT(declines("9223372036854775808]", KV_INTSCAN_I64));
	ASSERT(declines("-9223372036854775809]", KV_INTSCAN_I64));
	ASSERT(declines("\"1\"]", KV_INTSCAN_I64));
	ASSERT(declines("-1]", KV_INTSCAN_U64_HEX));
	/* 2^64 and more in hex, as in decimal: for the parser to refuse, never cut to the low 64 bits */
	ASSERT(declines("\"0x1e9b66bae2ed2488d\"]", KV_INTSCAN_U64_HEX));
	ASSERT(declines("\"10000000000000000\"]", KV_INTSCAN_U64_HEX));
	ASSERT(declines("\"0Xffffffffffffffffffffffffffffffff\"]", KV_INTSCAN_U64_HEX));
	ASSERT(declines("-0]", KV_INTSCAN_U64_HEX));
}

/* The fast lane reads 64 bytes at a time: every byte value, in place of
 * every byte of an array long enough for the lane, on both sides of a
 * block's edge ('/' and ':' are just outside the digits, 0xb0 to 0xb9 are
 * digits with the top bit set, 0x2c is the comma). */
static void test_every_byte_in_the_lane(void)
{
	char base[200];
	size_t len = 0;
	for (int i = 0; len < 150; i++)
		len += (size_t)snprintf(base + len, sizeof base - len, "%d,", 100 + 37 * i);
	len += (size_t)snprintf(base + len, sizeof base - len, "5]");
	char buf[sizeof base];
	for (unsigned c = 0; c < 256; c++)
		for (size_t at = 0; at < len; at += 7) {
			memcpy(buf, base, len);
			buf[at] = (char)c;
			ASSERT(same_both_kinds(buf, len));
		}
}

/* Elements of every length from 1 to 21 digits, at every offset of a
 * 64-byte block: plain, with a leading zero, and at 2^64 and beyond. */
static void test_every_length_at_every_offset(void)
{
	static const char *const digits[] = { "12345678901234567890123", "01234567890123456789012",
					      "18446744073709551615", "18446744073709551616",
					      "99999999999999999999999", "9223372036854775808" };
	char buf[400];
	for (size_t d = 0; d < COUNT(digits); d++)
		for (size_t k = 1; k <= 21 && k <= strlen(digits[d]); k++)
			for (size_t pad = 0; pad < 64; pad++) {
				size_t len = 0;
				for (size_t i = 0; i < pad; i++)
					buf[len++] = '7', buf[len++] = ',';
				memcpy(buf + len, digits[d], k);
				len += k;
				len += (size_t)snprintf(buf + len, sizeof buf - len,
							",1,22,333,4444,55555,666666,7777777,88888888,"
							"999999999,1234567890,12345678901,123456789012]");
				ASSERT(same_both_kinds(buf, len));
			}
}

/* ---- random arrays --------------------------------------------------- */

struct rng {
	uint64_t s;
};

static uint64_t next(struct rng *r)
{
	r->s ^= r->s << 13, r->s ^= r->s >> 7, r->s ^= r->s << 17;
	return r->s;
}

static size_t below(struct rng *r, size_t n)
{
	return (size_t)(next(r) % n);
}

/* One random element of the kind, written as a client may. */
static int random_element(struct rng *r, bool is_signed, char *buf, size_t size)
{
	static const uint64_t edges[] = { 0, 1, 9, 10, 99999999, 100000000, 9223372036854775807u,
					  9223372036854775808u, 9999999999999999999u, 10000000000000000000u,
					  18446744073709551615u, 4294967295u, 4294967296u };
	uint64_t v = next(r);
	switch (below(r, 6)) {
	case 0: v %= 200000; break;
	case 1: v = edges[below(r, sizeof edges / sizeof edges[0])]; break;
	case 2: {
		uint64_t m = 1;
		for (size_t d = below(r, 20); d > 0; d--)
			m *= 10;
		v %= m;
		break;
	}
	default: break;
	}
	if (is_signed && below(r, 4))
		return snprintf(buf, size, "%lld", (long long)v);
	if (below(r, 3) == 0 && below(r, 4) == 0) /* leading zeros, or a 17th significant digit: beyond 2^64-1 */
		return snprintf(buf, size, below(r, 2) ? "\"0x000%016llx\"" : "\"0x1%016llx\"", (unsigned long long)v);
	if (below(r, 3) == 0)
		return snprintf(buf, size, below(r, 2) ? "\"0x%llx\"" : "\"%llX\"", (unsigned long long)v);
	return snprintf(buf, size, "%llu", (unsigned long long)v);
}

static const char *random_blank(struct rng *r)
{
	static const char *const blanks[] = { "", "", "", "", "", "", " ", "\t", " \r ", "  " };
	return blanks[below(r, COUNT(blanks))];
}

/* A random array of up to 300 elements, compact or spaced, then damaged
 * in one to three bytes half of the time. */
static size_t random_array(struct rng *r, bool is_signed, char *buf, size_t size)
{
	static const char damage[] = "0123456789-+.eE,[]{}\" \t\v\f\r\xff:xXaf\\nul";
	static const size_t counts[] = { 0, 1, 2, 3, 10, 30, 100, 300 };
	size_t n = counts[below(r, COUNT(counts))], len = 0;
	bool spaced = below(r, 3) == 0;
	for (size_t i = 0; i < n; i++) {
		char el[64];
		random_element(r, is_signed, el, sizeof el);
		len += (size_t)snprintf(buf + len, size - len, "%s%s%s%s", spaced ? random_blank(r) : "", el,
					spaced ? random_blank(r) : "", i + 1 < n ? "," : "");
	}
	len += (size_t)snprintf(buf + len, size - len, "]%s", below(r, 2) ? "}" : "");
	if (below(r, 2))
		return len;
	for (size_t k = 1 + below(r, 3); k > 0; k--) {
		size_t at = below(r, len + 1);
		char c = damage[below(r, sizeof damage - 1)];
		switch (below(r, 4)) {
		case 0: memmove(buf + at + 1, buf + at, len - at), buf[at] = c, len++; break;
		case 1: if (at < len) memmove(buf + at, buf + at + 1, len - at - 1), len--; break;
		case 2: if (at < len) buf[at] = c; break;
		default: len = at; break;
		}
	}
	return len;
}

static void test_random_arrays(void)
{
	struct rng r = { 0x9e3779b97f4a7c15u };
	char *buf = malloc(32768);
	for (int i = 0; i < 20000; i++) {
		bool is_signed = i & 1;
		size_t len = random_array(&r, is_signed, buf, 32768 - 8);
		ASSERT(same_both_kinds(buf, len));
	}
	free(buf);
}

int main(void)
{
	RUN(test_what_must_be_taken);
	RUN(test_what_must_be_declined);
	RUN(test_tokens);
	RUN(test_edges_of_every_element);
	RUN(test_every_separator);
	RUN(test_nul_bytes);
	RUN(test_every_prefix);
	RUN(test_every_byte_in_the_lane);
	RUN(test_every_length_at_every_offset);
	RUN(test_random_arrays);
	return unit_done();
}

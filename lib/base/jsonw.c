#include "base/jsonw.h"
#include "base/utf8.h"
#include "base/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char hexdigits[] = "0123456789abcdef";

static const char digit_pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				  "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				  "8081828384858687888990919293949596979899";

static unsigned decimal_digits(uint64_t v)
{
	unsigned n = 1;
	for (;;) {
		if (v < 10)
			return n;
		if (v < 100)
			return n + 1;
		if (v < 1000)
			return n + 2;
		if (v < 10000)
			return n + 3;
		v /= 10000;
		n += 4;
	}
}

/* Two digits a step from the end, which it knows first: token ids and
 * counts are most of what kvdecode and kvquery write. */
char *jw_u64(char *p, uint64_t v)
{
	char *end = p + decimal_digits(v);
	char *q = end;
	while (v >= 100) {
		q -= 2;
		memcpy(q, digit_pairs + v % 100 * 2, 2);
		v /= 100;
	}
	if (v >= 10)
		memcpy(q - 2, digit_pairs + v * 2, 2);
	else
		q[-1] = (char)('0' + v);
	return end;
}

char *jw_i64(char *p, int64_t v)
{
	if (v < 0) {
		*p++ = '-';
		return jw_u64(p, (uint64_t)0 - (uint64_t)v);
	}
	return jw_u64(p, (uint64_t)v);
}

char *jw_hash(char *p, uint64_t h)
{
	*p++ = '"';
	*p++ = '0';
	*p++ = 'x';
	for (int shift = 60; shift >= 0; shift -= 4)
		*p++ = hexdigits[(h >> shift) & 0xf];
	*p++ = '"';
	return p;
}

char *jw_double(char *p, double v)
{
	if (!isfinite(v)) {
		memcpy(p, "null", 4);
		return p + 4;
	}
	char buf[JW_DOUBLE_MAX];
	int n = 0;
	/* The shortest of %.15g..%.17g that reads back as the same double. */
	for (int prec = 15; prec <= 17; prec++) {
		n = snprintf(buf, sizeof buf, "%.*g", prec, v);
		if (prec == 17 || strtod(buf, NULL) == v)
			break;
	}
	size_t len = n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1; /* what was written */
	memcpy(p, buf, len);
	return p + len;
}

char *jw_real(char *p, double v, int digits)
{
	if (!isfinite(v))
		return jw_lit(p, "null");
	char buf[JW_DOUBLE_MAX];
	int n = snprintf(buf, sizeof buf - 2, "%.*g", digits < 1 ? 1 : digits > 17 ? 17 : digits, v);
	size_t len = n < 0 ? 0 : (size_t)n < sizeof buf - 2 ? (size_t)n : sizeof buf - 3;
	/* a real stays a real when read back: 1 is written 1.0 */
	if (!memchr(buf, '.', len) && !memchr(buf, 'e', len)) {
		memcpy(buf + len, ".0", 2);
		len += 2;
	}
	/* the exponent without '+' and leading zeros: 1e+21 is 1e21, 1e-07 is 1e-7 */
	char *e = memchr(buf, 'e', len);
	if (e) {
		char *from = e + 1, *to = e + 1;
		if (*from == '-')
			from++, to++;
		else if (*from == '+')
			from++;
		while (from < buf + len - 1 && *from == '0')
			from++;
		memmove(to, from, (size_t)(buf + len - from));
		len -= (size_t)(from - to);
	}
	memcpy(p, buf, len);
	return p + len;
}

char *jw_ms_as_seconds(char *p, int64_t ms)
{
	uint64_t u = (uint64_t)ms;
	if (ms < 0) {
		*p++ = '-';
		u = (uint64_t)0 - u;
	}
	p = jw_u64(p, u / 1000);
	unsigned frac = (unsigned)(u % 1000);
	if (frac) {
		*p++ = '.';
		*p++ = (char)('0' + frac / 100);
		if (frac % 100) {
			*p++ = (char)('0' + frac / 10 % 10);
			if (frac % 10)
				*p++ = (char)('0' + frac % 10);
		}
	}
	return p;
}

char *jw_str(char *p, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	*p++ = '"';
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			*p++ = (char)c;
			i++;
			continue;
		}
		if (c >= 0x80) {
			size_t len = kv_utf8_len(s + i, n - i);
			if (len) {
				memcpy(p, s + i, len);
				p += len;
				i += len;
			} else {
				memcpy(p, "\xef\xbf\xbd", 3); /* U+FFFD */
				p += 3;
				i++;
			}
			continue;
		}
		*p++ = '\\';
		switch (c) {
		case '"': *p++ = '"'; break;
		case '\\': *p++ = '\\'; break;
		case '\n': *p++ = 'n'; break;
		case '\r': *p++ = 'r'; break;
		case '\t': *p++ = 't'; break;
		case '\b': *p++ = 'b'; break;
		case '\f': *p++ = 'f'; break;
		default:
			*p++ = 'u';
			*p++ = '0';
			*p++ = '0';
			*p++ = hexdigits[c >> 4];
			*p++ = hexdigits[c & 0xf];
		}
		i++;
	}
	*p++ = '"';
	return p;
}

char *jw_hex_str(char *p, const uint8_t *b, size_t n)
{
	*p++ = '"';
	for (size_t i = 0; i < n; i++) {
		*p++ = hexdigits[b[i] >> 4];
		*p++ = hexdigits[b[i] & 0xf];
	}
	*p++ = '"';
	return p;
}

void jw_begin_slow(struct jw *w, struct kv_out *o)
{
	kv_out_reserve(o, JW_BEGIN_ROOM); /* a file's buffer is flushed, memory grows */
	w->o = o;
	w->p = o->buf + o->len;
	w->end = o->buf + o->cap;
}

struct jw jw_grown(struct jw w, size_t n)
{
	struct kv_out *o = w.o;
	jw_end(&w);
	/* not kv_out_reserve: that would flush a record cut in two */
	o->buf = kv_xgrow(o->buf, &o->cap, o->len + n, 1);
	w.p = o->buf + o->len;
	w.end = o->buf + o->cap;
	return w;
}

char *jw_u32_list(char *p, const uint32_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i)
			*p++ = ',';
		p = jw_u64(p, v[i]);
	}
	return p;
}

char *jw_u64_list(char *p, const uint64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i)
			*p++ = ',';
		p = jw_u64(p, v[i]);
	}
	return p;
}

char *jw_hash_list(char *p, const uint64_t *h, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i)
			*p++ = ',';
		p = jw_hash(p, h[i]);
	}
	return p;
}

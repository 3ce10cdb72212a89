#include "jsonw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char hexdigits[] = "0123456789abcdef";

char *jw_u64(char *p, uint64_t v)
{
	char tmp[JW_U64_MAX];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
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
	memcpy(p, buf, (size_t)n);
	return p + n;
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

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, UTF-16 surrogates and code points above U+10FFFF */
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
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
			size_t len = utf8_len(s + i, n - i);
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

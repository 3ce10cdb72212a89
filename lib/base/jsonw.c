#include "base/jsonw.h"
#include "base/utf8.h"

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
	size_t len = n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1; /* what was written */
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

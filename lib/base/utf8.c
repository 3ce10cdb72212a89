#include "base/utf8.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

size_t kv_utf8_len(const unsigned char *s, size_t n)
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

bool kv_utf8_is_control(const unsigned char *s, size_t len)
{
	return len == 1 ? s[0] < 0x20 || s[0] == 0x7f : len == 2 && s[0] == 0xc2 && s[1] < 0xa0;
}

size_t kv_printable(char *dst, size_t size, const char *src, size_t n)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t out = 0;
	if (!size)
		return 0;
	for (size_t i = 0; i < n && out < size - 1;) {
		size_t len = kv_utf8_len(s + i, n - i);
		if (len == 0 || kv_utf8_is_control(s + i, len) || out + len > size - 1) {
			dst[out++] = '?';
			i += len ? len : 1;
			continue;
		}
		memmove(dst + out, s + i, len);
		out += len;
		i += len;
	}
	dst[out] = 0;
	return out;
}

#include "decode/flexhash.h"

#include <stdio.h>
#include <string.h>

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static const char *parse_hex(const char *s, size_t n, uint64_t *h)
{
	if (n == 0)
		return "empty hex string";
	if (n > 64)
		return "hex string longer than 64 digits";
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		int d = hexval(s[i]);
		if (d < 0)
			return "not a hex string";
		v = v << 4 | (uint64_t)d; /* shifting out keeps the last 16 digits */
	}
	*h = v;
	return NULL;
}

static const char *parse_decimal(const char *s, size_t n, uint64_t *h)
{
	if (n == 0)
		return "empty string";
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return "not a decimal string";
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return "decimal string beyond 64 bits";
		v = v * 10 + d;
	}
	*h = v;
	return NULL;
}

static bool has_0x(const char *s, size_t n)
{
	return n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
}

const char *kv_flexhash_str(const char *s, size_t n, bool decimal, uint64_t *h)
{
	if (has_0x(s, n))
		return parse_hex(s + 2, n - 2, h);
	return decimal ? parse_decimal(s, n, h) : parse_hex(s, n, h);
}

const char *kv_flexhash(const msgpack_object *o, const struct kv_hash_opts *opts, uint64_t *h)
{
	switch (o->type) {
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		*h = o->via.u64;
		return NULL;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		*h = (uint64_t)o->via.i64;
		return NULL;
	case MSGPACK_OBJECT_BIN: {
		const uint8_t *b = (const uint8_t *)o->via.bin.ptr;
		uint32_t n = o->via.bin.size, from = n > 8 ? n - 8 : 0;
		uint64_t v = 0;
		for (uint32_t i = from; i < n; i++)
			v = v << 8 | b[i];
		*h = v;
		return NULL;
	}
	case MSGPACK_OBJECT_STR:
		return kv_flexhash_str(o->via.str.ptr, o->via.str.size, opts && opts->decimal_strings, h);
	case MSGPACK_OBJECT_NIL:
		return "nil is not a hash";
	case MSGPACK_OBJECT_BOOLEAN:
		return "a boolean is not a hash";
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return "a float is not a hash";
	default:
		return "not a hash (expected an integer, bytes or a hex string)";
	}
}

/* Hex whose value fits in 64 bits: leading zeros are no digits of it. */
static const char *parse_hex_value(const char *s, size_t n, uint64_t *h)
{
	while (n > 1 && s[0] == '0')
		s++, n--;
	if (n <= 16)
		return parse_hex(s, n, h);
	for (size_t i = 0; i < n; i++)
		if (hexval(s[i]) < 0)
			return "not a hex string";
	return "hex string beyond 64 bits";
}

static bool hex_fits(const char *s, size_t n, uint64_t *h)
{
	return parse_hex_value(s, n, h) == NULL;
}

const char *kv_hash_value_str(const char *s, size_t n, uint64_t *h)
{
	return has_0x(s, n) ? parse_hex_value(s + 2, n - 2, h) : parse_hex_value(s, n, h);
}

bool kv_hash_from_object_key(const char *s, size_t n, bool after_at, uint64_t *h)
{
	if (after_at)
		for (size_t i = n; i > 0; i--)
			if (s[i - 1] == '@')
				return parse_hex(s + i, n - i, h) == NULL;
	if (has_0x(s, n))
		return hex_fits(s + 2, n - 2, h);
	return parse_decimal(s, n, h) == NULL;
}

unsigned kv_hash_form(const msgpack_object *o)
{
	switch (o->type) {
	case MSGPACK_OBJECT_POSITIVE_INTEGER: return KV_HF_UINT;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER: return KV_HF_NEGINT;
	case MSGPACK_OBJECT_BIN: return o->via.bin.size > 8 ? KV_HF_BINLONG : KV_HF_BIN8;
	case MSGPACK_OBJECT_STR: return KV_HF_STR;
	default: return 0;
	}
}

void kv_hash_forms_text(unsigned forms, char *buf, size_t n)
{
	static const char *const names[KV_HF_NFORMS] = { "uint", "negative int", "bytes <= 8", "bytes > 8", "string" };
	size_t at = 0;
	if (n)
		buf[0] = 0;
	for (unsigned i = 0; i < KV_HF_NFORMS; i++)
		if (forms & (1u << i) && at < n) {
			int k = snprintf(buf + at, n - at, "%s%s", at ? ", " : "", names[i]);
			at += k > 0 ? (size_t)k : 0;
		}
	if (at == 0 && n)
		snprintf(buf, n, "forms not known");
}

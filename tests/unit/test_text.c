/* JSON text writing (jsonw), hash normalisation (flexhash) and medium names:
 * the rules every program shares, checked value by value. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decode/flexhash.h"
#include "base/jsonw.h"
#include "decode/medium.h"
#include "unit.h"

static char buf[4096];

static const char *str(const char *s, size_t n)
{
	*jw_str(buf, s, n) = 0;
	return buf;
}

static void escapes(void)
{
	ASSERT(strcmp(str("plain", 5), "\"plain\"") == 0);
	ASSERT(strcmp(str("a\"b\\c", 5), "\"a\\\"b\\\\c\"") == 0);
	ASSERT(strcmp(str("\n\r\t\b\f", 5), "\"\\n\\r\\t\\b\\f\"") == 0);
	ASSERT(strcmp(str("\x01\x1f\x7f", 3), "\"\\u0001\\u001f\x7f\"") == 0);
	ASSERT(strcmp(str("nul\0x", 5), "\"nul\\u0000x\"") == 0);
	/* valid UTF-8 passes through; invalid bytes become U+FFFD */
	ASSERT(strcmp(str("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9), "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"") == 0);
	ASSERT(strcmp(str("\xff", 1), "\"\xef\xbf\xbd\"") == 0);
	ASSERT(strcmp(str("\xc3", 1), "\"\xef\xbf\xbd\"") == 0);               /* cut short */
	ASSERT(strcmp(str("\xc0\xaf", 2), "\"\xef\xbf\xbd\xef\xbf\xbd\"") == 0); /* overlong */
	ASSERT(strcmp(str("\xed\xa0\x80", 3), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"") == 0); /* surrogate */
	ASSERT(strcmp(str("\xf4\x90\x80\x80", 4), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"") == 0);
	/* the bound holds for the worst case */
	char worst[100];
	memset(worst, 0x01, sizeof worst);
	ASSERT((size_t)(jw_str(buf, worst, sizeof worst) - buf) <= JW_STR_MAX(sizeof worst));
	memset(worst, 0xff, sizeof worst);
	ASSERT((size_t)(jw_str(buf, worst, sizeof worst) - buf) <= JW_STR_MAX(sizeof worst));
}

static const char *num(char *end)
{
	*end = 0;
	return buf;
}

static void numbers(void)
{
	ASSERT(strcmp(num(jw_u64(buf, 0)), "0") == 0);
	ASSERT(strcmp(num(jw_u64(buf, UINT64_MAX)), "18446744073709551615") == 0);
	ASSERT(strcmp(num(jw_i64(buf, INT64_MIN)), "-9223372036854775808") == 0);
	ASSERT(strcmp(num(jw_i64(buf, -5)), "-5") == 0);
	ASSERT(strcmp(num(jw_hash(buf, 0xb0147556276afc9cull)), "\"0xb0147556276afc9c\"") == 0);
	ASSERT(strcmp(num(jw_hash(buf, 1)), "\"0x0000000000000001\"") == 0);
	ASSERT(strcmp(num(jw_double(buf, 1717000003.25)), "1717000003.25") == 0);
	ASSERT(strcmp(num(jw_double(buf, 0.1)), "0.1") == 0);
	ASSERT(strcmp(num(jw_double(buf, NAN)), "null") == 0);
	double v = 1717000004.0009999;
	ASSERT(strtod(num(jw_double(buf, v)), NULL) == v);
	ASSERT(strcmp(num(jw_ms_as_seconds(buf, 1717000004001)), "1717000004.001") == 0);
	ASSERT(strcmp(num(jw_ms_as_seconds(buf, 1717000004000)), "1717000004") == 0);
	ASSERT(strcmp(num(jw_ms_as_seconds(buf, 1717000004010)), "1717000004.01") == 0);
	ASSERT(strcmp(num(jw_ms_as_seconds(buf, -1500)), "-1.5") == 0);
	ASSERT(strcmp(num(jw_ms_as_seconds(buf, INT64_MIN)), "-9223372036854775.808") == 0);
}

static const char *hash_of(const char *s, bool decimal, uint64_t *h)
{
	return kv_flexhash_str(s, strlen(s), decimal, h);
}

static void strings_as_hashes(void)
{
	uint64_t h = 0;
	ASSERT(!hash_of("b0147556276afc9c", false, &h) && h == 0xb0147556276afc9cull);
	ASSERT(!hash_of("0xB0147556276AFC9C", false, &h) && h == 0xb0147556276afc9cull);
	ASSERT(!hash_of("ff", false, &h) && h == 0xff);
	ASSERT(!hash_of("000000000000000000000000000000000000000000000000192dd62904fcccac", false, &h) &&
	       h == 0x192dd62904fcccacull);
	ASSERT(hash_of("0000000000000000000000000000000000000000000000000192dd62904fcccac", false, &h) != NULL);
	ASSERT(hash_of("xyz", false, &h) != NULL);
	ASSERT(hash_of("", false, &h) != NULL);
	ASSERT(hash_of("0x", false, &h) != NULL);
	ASSERT(!hash_of("12687895063098490012", true, &h) && h == 12687895063098490012ull);
	ASSERT(!hash_of("0x10", true, &h) && h == 16);
	ASSERT(hash_of("18446744073709551616", true, &h) != NULL);
	ASSERT(!hash_of("18446744073709551615", true, &h) && h == UINT64_MAX);
}

/* Why kv_hash_value_str refuses s ("" when it takes it). */
static const char *value_of(const char *s, uint64_t *h)
{
	const char *why = kv_hash_value_str(s, strlen(s), h);
	return why ? why : "";
}

/* A hash a user gives where a number is meant: its range is checked in hex
 * as in decimal; only a publisher's string on the wire keeps its last 16
 * digits (kvdecode(1) "Hashes"). */
static void hash_values_in_every_notation(void)
{
	uint64_t h = 0;
	ASSERT(!*value_of("0xffffffffffffffff", &h) && h == UINT64_MAX);
	ASSERT(!*value_of("ffffffffffffffff", &h) && h == UINT64_MAX);
	ASSERT(!*value_of("0X000000000000000000000000e9b66bae2ed2488d", &h) && h == 0xe9b66bae2ed2488dull);
	ASSERT(!*value_of("0x0", &h) && h == 0);
	/* 2^64 and beyond, as 18446744073709551616 is in decimal */
	ASSERT_EQ_STR(value_of("0x1e9b66bae2ed2488d", &h), "hex string beyond 64 bits");
	ASSERT_EQ_STR(value_of("10000000000000000", &h), "hex string beyond 64 bits");
	ASSERT_EQ_STR(value_of("0x000000000000000000000000000000000000000000000000192dd62904fcccac1", &h),
		      "hex string beyond 64 bits");
	ASSERT_EQ_STR(value_of("0x1g000000000000000", &h), "not a hex string");
	ASSERT_EQ_STR(value_of("0x", &h), "empty hex string");
	ASSERT(*value_of("", &h));
	ASSERT(*value_of("-1", &h));
	/* the wire keeps the last 16 digits of the same string */
	ASSERT(!hash_of("0x1e9b66bae2ed2488d", false, &h) && h == 0xe9b66bae2ed2488dull);
}

static void wire_values_as_hashes(void)
{
	uint64_t h;
	msgpack_object o;
	o.type = MSGPACK_OBJECT_NEGATIVE_INTEGER;
	o.via.i64 = -5758849010611061604;
	ASSERT(!kv_flexhash(&o, NULL, &h) && h == 12687895063098490012ull);
	uint8_t b32[32];
	for (int i = 0; i < 32; i++)
		b32[i] = (uint8_t)i;
	o.type = MSGPACK_OBJECT_BIN;
	o.via.bin.ptr = (const char *)b32;
	o.via.bin.size = 32;
	ASSERT(!kv_flexhash(&o, NULL, &h) && h == 0x18191a1b1c1d1e1full);
	o.via.bin.size = 3;
	ASSERT(!kv_flexhash(&o, NULL, &h) && h == 0x000102);
	o.via.bin.size = 0;
	ASSERT(!kv_flexhash(&o, NULL, &h) && h == 0);
	o.type = MSGPACK_OBJECT_FLOAT64;
	o.via.f64 = 1.0;
	ASSERT(kv_flexhash(&o, NULL, &h) != NULL);
	o.type = MSGPACK_OBJECT_NIL;
	ASSERT(kv_flexhash(&o, NULL, &h) != NULL);
}

static void object_keys(void)
{
	uint64_t h;
	ASSERT(kv_hash_from_object_key("12687895063098490012", 20, false, &h) && h == 12687895063098490012ull);
	ASSERT(kv_hash_from_object_key("0xff", 4, false, &h) && h == 255);
	ASSERT(kv_hash_from_object_key("0X00000000000000000000ff", 24, false, &h) && h == 255);
	const char *k = "llama@tenant@000000000000000000000000000000000000000000000000192dd62904fcccac";
	ASSERT(kv_hash_from_object_key(k, strlen(k), true, &h) && h == 0x192dd62904fcccacull);
	/* '@' is memcache's rule only: for Mooncake that key names no hash */
	ASSERT(!kv_hash_from_object_key(k, strlen(k), false, &h));
	ASSERT(!kv_hash_from_object_key("model@", 6, true, &h));
	ASSERT(!kv_hash_from_object_key("abc", 3, false, &h));
	/* beyond 64 bits: no hash, never a truncated one (0x1ffffffffffffffff is not 0xffffffffffffffff) */
	ASSERT(!kv_hash_from_object_key("18446744073709551616", 20, false, &h));
	ASSERT(!kv_hash_from_object_key("0x1ffffffffffffffff", 19, false, &h));
	ASSERT(!kv_hash_from_object_key("0x", 2, false, &h));
	ASSERT(!kv_hash_from_object_key("", 0, false, &h));
}

static void media(void)
{
	static const struct { const char *name; enum kv_medium m; } cases[] = {
		{ "npu", KV_XPU }, { "GPU", KV_XPU }, { "Xpu", KV_XPU }, { "HBM", KV_XPU }, { "device", KV_XPU },
		{ "cpu", KV_CPU }, { "CPU_PINNED", KV_CPU }, { "cpu_tier1", KV_CPU }, { "host", KV_CPU },
		{ "Memory", KV_CPU }, { "DRAM", KV_CPU }, { "disk", KV_DISK }, { "SSD", KV_DISK },
		{ "nvme", KV_DISK }, { "NOF_SSD", KV_DISK }, { "local_disk", KV_DISK }, { "dfs", KV_DISK },
		{ "STORAGE", KV_DISK }, { "fs", KV_DISK }, { "obj", KV_DISK }, { "EXTERNAL", KV_DISK }, { "DISK", KV_DISK }, { "tape", KV_UNKNOWN },
		{ "", KV_UNKNOWN }, { "cpux", KV_UNKNOWN }, { "gp", KV_UNKNOWN },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ASSERT(kv_medium_parse(cases[i].name, strlen(cases[i].name)) == cases[i].m);
	ASSERT(strcmp(kv_medium_name(KV_XPU), "xpu") == 0 && strcmp(kv_medium_name(KV_UNKNOWN), "unknown") == 0);
}

int main(void)
{
	RUN(escapes);
	RUN(numbers);
	RUN(strings_as_hashes);
	RUN(hash_values_in_every_notation);
	RUN(wire_values_as_hashes);
	RUN(object_keys);
	RUN(media);
	return unit_done();
}

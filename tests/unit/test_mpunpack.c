/* mpunpack: the same msgpack_object tree as msgpack-c's msgpack_unpack, on
 * every type and length form, and on random nested objects. */
#include <msgpack.h>
#include <string.h>

#include "decode/mpscan.h"
#include "decode/mpunpack.h"
#include "unit.h"

/* Same type, value and (for str, bin and ext) the same bytes at the same
 * address; arrays and maps element by element. */
static bool same_object(const msgpack_object *a, const msgpack_object *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case MSGPACK_OBJECT_NIL: return true;
	case MSGPACK_OBJECT_BOOLEAN: return a->via.boolean == b->via.boolean;
	case MSGPACK_OBJECT_POSITIVE_INTEGER: return a->via.u64 == b->via.u64;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER: return a->via.i64 == b->via.i64;
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64: return memcmp(&a->via.f64, &b->via.f64, sizeof a->via.f64) == 0;
	case MSGPACK_OBJECT_STR:
	case MSGPACK_OBJECT_BIN: return a->via.str.size == b->via.str.size && a->via.str.ptr == b->via.str.ptr;
	case MSGPACK_OBJECT_EXT:
		return a->via.ext.type == b->via.ext.type && a->via.ext.size == b->via.ext.size &&
		       a->via.ext.ptr == b->via.ext.ptr;
	case MSGPACK_OBJECT_ARRAY:
		if (a->via.array.size != b->via.array.size || !a->via.array.ptr != !b->via.array.ptr)
			return false;
		for (uint32_t i = 0; i < a->via.array.size; i++)
			if (!same_object(&a->via.array.ptr[i], &b->via.array.ptr[i]))
				return false;
		return true;
	case MSGPACK_OBJECT_MAP:
		if (a->via.map.size != b->via.map.size || !a->via.map.ptr != !b->via.map.ptr)
			return false;
		for (uint32_t i = 0; i < a->via.map.size; i++)
			if (!same_object(&a->via.map.ptr[i].key, &b->via.map.ptr[i].key) ||
			    !same_object(&a->via.map.ptr[i].val, &b->via.map.ptr[i].val))
				return false;
		return true;
	}
	return false;
}

/* Whether both unpackers agree on the object in sb (kv_mp_scan accepts it). */
static bool agree(const msgpack_sbuffer *sb)
{
	size_t size;
	if (kv_mp_scan((const uint8_t *)sb->data, sb->size, &kv_payload_limits, &size) != KV_MP_OK || size != sb->size)
		return false;
	msgpack_zone z1, z2;
	msgpack_zone_init(&z1, 1024);
	msgpack_zone_init(&z2, 1024);
	msgpack_object a, b;
	size_t used = 0;
	bool ok = msgpack_unpack(sb->data, size, &used, &z1, &a) >= 0 &&
		  kv_mp_unpack((const uint8_t *)sb->data, size, &z2, &b) && same_object(&a, &b);
	msgpack_zone_destroy(&z1);
	msgpack_zone_destroy(&z2);
	return ok;
}

static char filler[70000];

/* One object of every type and length form, in one array. */
static void every_form(void)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, 50);
	/* empty ones: msgpack-c's pointer is where the last bytes after a
	 * header began, NULL before any (the first one here) */
	msgpack_pack_str_with_body(&pk, filler, 0);
	msgpack_pack_nil(&pk);
	msgpack_pack_true(&pk);
	msgpack_pack_false(&pk);
	uint64_t us[] = { 0, 127, 128, 255, 256, 65535, 65536, 4294967295ull, 4294967296ull, UINT64_MAX };
	for (size_t i = 0; i < sizeof us / sizeof us[0]; i++)
		msgpack_pack_uint64(&pk, us[i]);
	int64_t is[] = { -1, -32, -33, -128, -129, -32768, -32769, INT32_MIN, (int64_t)INT32_MIN - 1, INT64_MIN };
	for (size_t i = 0; i < sizeof is / sizeof is[0]; i++)
		msgpack_pack_int64(&pk, is[i]);
	/* signed forms of values that are not negative */
	const char pos_signed[] = { (char)0xd0, 0, (char)0xd0, 5, (char)0xd1, 0, 7, (char)0xd2, 0, 0, 1, 0,
				    (char)0xd3, 0, 0, 0, 0, 0, 0, 0, 9 };
	msgpack_sbuffer_write(&sb, pos_signed, sizeof pos_signed);
	msgpack_pack_float(&pk, 1.5f);
	msgpack_pack_double(&pk, -2.25);
	msgpack_pack_str_with_body(&pk, filler, 5);
	msgpack_pack_str_with_body(&pk, filler, 40);
	msgpack_pack_str_with_body(&pk, filler, 300);
	msgpack_pack_str_with_body(&pk, filler, 70000);
	msgpack_pack_bin_with_body(&pk, filler, 3);
	msgpack_pack_bin_with_body(&pk, filler, 300);
	msgpack_pack_bin_with_body(&pk, filler, 70000);
	size_t exts[] = { 1, 2, 4, 8, 16, 3, 300 };
	for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
		msgpack_pack_ext_with_body(&pk, filler, exts[i], (int8_t)(i - 3));
	msgpack_pack_array(&pk, 0);
	msgpack_pack_map(&pk, 0);
	const char empty[] = { (char)0xd9, 0, (char)0xc4, 0, (char)0xa0 };
	msgpack_sbuffer_write(&sb, empty, sizeof empty);
	ASSERT(agree(&sb));
	msgpack_sbuffer_destroy(&sb);
}

static void pack_random(msgpack_packer *pk, unsigned depth)
{
	uint64_t r = unit_rand();
	switch (depth ? r % 9 : r % 7) {
	case 0: msgpack_pack_uint64(pk, unit_rand() >> (unit_rand() % 64)); break;
	case 1: msgpack_pack_int64(pk, -(int64_t)(unit_rand() >> (1 + unit_rand() % 63))); break;
	case 2: msgpack_pack_uint32(pk, (uint32_t)(unit_rand() % 70000)); break;
	case 3: msgpack_pack_str_with_body(pk, filler, unit_rand() % 300); break;
	case 4: msgpack_pack_bin_with_body(pk, filler, unit_rand() % 40); break;
	case 5: msgpack_pack_double(pk, (double)(int64_t)unit_rand() / 7); break;
	case 6: msgpack_pack_nil(pk); break;
	case 7: {
		size_t n = unit_rand() % 20 == 0 ? 2000 + unit_rand() % 20000 : unit_rand() % 20;
		msgpack_pack_array(pk, n);
		for (size_t i = 0; i < n; i++)
			pack_random(pk, n > 100 ? 0 : depth - 1);
		break;
	}
	default: {
		size_t n = unit_rand() % 8;
		msgpack_pack_map(pk, n);
		for (size_t i = 0; i < 2 * n; i++)
			pack_random(pk, depth - 1);
	}
	}
}

static void random_objects(void)
{
	for (int k = 0; k < 300; k++) {
		msgpack_sbuffer sb;
		msgpack_sbuffer_init(&sb);
		msgpack_packer pk;
		msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
		pack_random(&pk, 6);
		ASSERT(agree(&sb));
		msgpack_sbuffer_destroy(&sb);
	}
}

int main(void)
{
	memset(filler, 'x', sizeof filler);
	RUN(every_form);
	RUN(random_objects);
	return unit_done();
}

#include "decode/mpunpack.h"

#include <string.h>

struct unpacker {
	const uint8_t *p;
	msgpack_zone *zone;
	/* Where the last bytes after a header byte began (a length, a value, a
	 * body): msgpack-c's pointer for an empty str or bin is that one, NULL
	 * before any. */
	const uint8_t *trail;
};

/* A big-endian number of n (1, 2, 4 or 8) bytes. */
static uint64_t be(const uint8_t *p, unsigned n)
{
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;
	switch (n) {
	case 1: return p[0];
	case 2: memcpy(&v16, p, 2); return __builtin_bswap16(v16);
	case 4: memcpy(&v32, p, 4); return __builtin_bswap32(v32);
	default: memcpy(&v64, p, 8); return __builtin_bswap64(v64);
	}
}

/* A signed integer as msgpack-c keeps it: negative ones only as negative. */
static void signed_int(msgpack_object *o, int64_t v)
{
	if (v < 0) {
		o->type = MSGPACK_OBJECT_NEGATIVE_INTEGER;
		o->via.i64 = v;
	} else {
		o->type = MSGPACK_OBJECT_POSITIVE_INTEGER;
		o->via.u64 = (uint64_t)v;
	}
}

static void bytes(struct unpacker *u, msgpack_object *o, msgpack_object_type type, size_t n)
{
	if (n)
		u->trail = u->p;
	o->type = type;
	o->via.str.ptr = (const char *)u->trail;
	o->via.str.size = (uint32_t)n;
	u->p += n;
}

static void ext(struct unpacker *u, msgpack_object *o, size_t n)
{
	u->trail = u->p;
	o->type = MSGPACK_OBJECT_EXT;
	o->via.ext.type = (int8_t)u->p[0];
	o->via.ext.ptr = (const char *)u->p + 1;
	o->via.ext.size = (uint32_t)n;
	u->p += n + 1;
}

static bool one(struct unpacker *u, msgpack_object *o);

static bool array(struct unpacker *u, msgpack_object *o, uint32_t n)
{
	o->type = MSGPACK_OBJECT_ARRAY;
	o->via.array.size = n;
	o->via.array.ptr = msgpack_zone_malloc(u->zone, (size_t)n * sizeof *o->via.array.ptr);
	if (!o->via.array.ptr)
		return false;
	msgpack_object *a = o->via.array.ptr;
	for (uint32_t i = 0; i < n; i++) {
		/* Most elements are unsigned integers (token ids, hashes): no
		 * call for them. */
		uint8_t b = *u->p;
		if (b <= 0x7f) {
			a[i].type = MSGPACK_OBJECT_POSITIVE_INTEGER;
			a[i].via.u64 = b;
			u->p++;
		} else if (b >= 0xcc && b <= 0xcf) {
			unsigned len = 1u << (b - 0xcc);
			u->trail = u->p + 1;
			a[i].type = MSGPACK_OBJECT_POSITIVE_INTEGER;
			a[i].via.u64 = be(u->p + 1, len);
			u->p += 1 + len;
		} else if (!one(u, &a[i])) {
			return false;
		}
	}
	return true;
}

static bool map(struct unpacker *u, msgpack_object *o, uint32_t n)
{
	o->type = MSGPACK_OBJECT_MAP;
	o->via.map.size = n;
	o->via.map.ptr = msgpack_zone_malloc(u->zone, (size_t)n * sizeof *o->via.map.ptr);
	if (!o->via.map.ptr)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (!one(u, &o->via.map.ptr[i].key) || !one(u, &o->via.map.ptr[i].val))
			return false;
	return true;
}

static bool one(struct unpacker *u, msgpack_object *o)
{
	uint8_t b = *u->p++;
	const uint8_t *q = u->p;
	if (b <= 0x7f) {
		o->type = MSGPACK_OBJECT_POSITIVE_INTEGER;
		o->via.u64 = b;
		return true;
	}
	if (b >= 0xe0) {
		signed_int(o, (int8_t)b);
		return true;
	}
	if (b <= 0x8f)
		return map(u, o, b & 0x0f);
	if (b <= 0x9f)
		return array(u, o, b & 0x0f);
	if (b <= 0xbf) {
		bytes(u, o, MSGPACK_OBJECT_STR, b & 0x1f);
		return true;
	}
	if (b >= 0xc4 && b != 0xd4 && b != 0xd5 && b != 0xd6 && b != 0xd7 && b != 0xd8)
		u->trail = q; /* a length or a value; fixext's trail begins at its type, in ext() */
	switch (b) {
	case 0xc0: o->type = MSGPACK_OBJECT_NIL; return true;
	case 0xc2: o->type = MSGPACK_OBJECT_BOOLEAN; o->via.boolean = false; return true;
	case 0xc3: o->type = MSGPACK_OBJECT_BOOLEAN; o->via.boolean = true; return true;
	case 0xc4: u->p += 1; bytes(u, o, MSGPACK_OBJECT_BIN, be(q, 1)); return true;
	case 0xc5: u->p += 2; bytes(u, o, MSGPACK_OBJECT_BIN, be(q, 2)); return true;
	case 0xc6: u->p += 4; bytes(u, o, MSGPACK_OBJECT_BIN, be(q, 4)); return true;
	case 0xc7: u->p += 1; ext(u, o, be(q, 1)); return true;
	case 0xc8: u->p += 2; ext(u, o, be(q, 2)); return true;
	case 0xc9: u->p += 4; ext(u, o, be(q, 4)); return true;
	case 0xca: {
		uint32_t bits = (uint32_t)be(q, 4);
		float f;
		memcpy(&f, &bits, sizeof f);
		o->type = MSGPACK_OBJECT_FLOAT32;
		o->via.f64 = f;
		u->p += 4;
		return true;
	}
	case 0xcb: {
		uint64_t bits = be(q, 8);
		double d;
		memcpy(&d, &bits, sizeof d);
		o->type = MSGPACK_OBJECT_FLOAT64;
		o->via.f64 = d;
		u->p += 8;
		return true;
	}
	case 0xcc: case 0xcd: case 0xce: case 0xcf: {
		unsigned n = 1u << (b - 0xcc);
		o->type = MSGPACK_OBJECT_POSITIVE_INTEGER;
		o->via.u64 = be(q, n);
		u->p += n;
		return true;
	}
	case 0xd0: signed_int(o, (int8_t)q[0]); u->p += 1; return true;
	case 0xd1: signed_int(o, (int16_t)be(q, 2)); u->p += 2; return true;
	case 0xd2: signed_int(o, (int32_t)be(q, 4)); u->p += 4; return true;
	case 0xd3: signed_int(o, (int64_t)be(q, 8)); u->p += 8; return true;
	case 0xd4: ext(u, o, 1); return true;
	case 0xd5: ext(u, o, 2); return true;
	case 0xd6: ext(u, o, 4); return true;
	case 0xd7: ext(u, o, 8); return true;
	case 0xd8: ext(u, o, 16); return true;
	case 0xd9: u->p += 1; bytes(u, o, MSGPACK_OBJECT_STR, be(q, 1)); return true;
	case 0xda: u->p += 2; bytes(u, o, MSGPACK_OBJECT_STR, be(q, 2)); return true;
	case 0xdb: u->p += 4; bytes(u, o, MSGPACK_OBJECT_STR, be(q, 4)); return true;
	case 0xdc: u->p += 2; return array(u, o, (uint32_t)be(q, 2));
	case 0xdd: u->p += 4; return array(u, o, (uint32_t)be(q, 4));
	case 0xde: u->p += 2; return map(u, o, (uint32_t)be(q, 2));
	case 0xdf: u->p += 4; return map(u, o, (uint32_t)be(q, 4));
	default: return false; /* 0xc1: kv_mp_scan refuses it */
	}
}

bool kv_mp_unpack(const uint8_t *p, size_t size, msgpack_zone *zone, msgpack_object *o)
{
	struct unpacker u = { p, zone, NULL };
	return one(&u, o) && u.p == p + size;
}

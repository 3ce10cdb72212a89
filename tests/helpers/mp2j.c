/* mp2j: prints the payload of each record of a kvcap stream as one JSON
 * line, in j2mp's notation, so that a test can see every MessagePack type
 * a publisher chose: an integer is "u:DIGITS" (unsigned) or "i:DIGITS"
 * (negative), a float "f:NUM", a bin "b:HEX"; nil is null, a string and a
 * boolean are themselves, a map keeps its keys in their order (a key that
 * is no string is written as its notation).  Nesting deeper than 64 and
 * an undecodable payload end the program with 65. */
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <msgpack.h>
#include <stdio.h>
#include <unistd.h>

#include "decode/kvcap.h"
#include "base/util.h"

static json_t *notation(const char *prefix, const char *text)
{
	char buf[96];
	snprintf(buf, sizeof buf, "%s%s", prefix, text);
	return json_string(buf);
}

static json_t *to_json(const msgpack_object *o, int depth)
{
	char num[64];
	if (depth > 64)
		kv_die(65, "nesting deeper than 64");
	switch (o->type) {
	case MSGPACK_OBJECT_NIL: return json_null();
	case MSGPACK_OBJECT_BOOLEAN: return json_boolean(o->via.boolean);
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		snprintf(num, sizeof num, "%" PRIu64, o->via.u64);
		return notation("u:", num);
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		snprintf(num, sizeof num, "%" PRId64, o->via.i64);
		return notation("i:", num);
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		snprintf(num, sizeof num, "%.17g", o->via.f64);
		return notation("f:", num);
	case MSGPACK_OBJECT_STR: return json_stringn(o->via.str.ptr, o->via.str.size);
	case MSGPACK_OBJECT_BIN: {
		json_t *s;
		char *hex = kv_xmalloc(2 * o->via.bin.size + 3);
		hex[0] = 'b', hex[1] = ':';
		for (uint32_t i = 0; i < o->via.bin.size; i++)
			snprintf(hex + 2 + 2 * i, 3, "%02x", (unsigned char)o->via.bin.ptr[i]);
		s = json_string(hex);
		free(hex);
		return s;
	}
	case MSGPACK_OBJECT_ARRAY: {
		json_t *a = json_array();
		for (uint32_t i = 0; i < o->via.array.size; i++)
			json_array_append_new(a, to_json(&o->via.array.ptr[i], depth + 1));
		return a;
	}
	case MSGPACK_OBJECT_MAP: {
		json_t *m = json_object();
		for (uint32_t i = 0; i < o->via.map.size; i++) {
			const msgpack_object_kv *kv = &o->via.map.ptr[i];
			json_t *k = to_json(&kv->key, depth + 1);
			const char *key = json_is_string(k) ? json_string_value(k) : "?";
			json_object_set_new(m, key, to_json(&kv->val, depth + 1));
			json_decref(k);
		}
		return m;
	}
	default: kv_die(65, "an extension type");
	}
}

int main(int argc, char **argv)
{
	kv_set_prog(argv);
	int fd = argc > 1 ? open(argv[1], O_RDONLY) : 0;
	if (fd < 0)
		kv_die(66, "%s: cannot open", argv[1]);
	struct kv_cap_reader r;
	struct kv_record rec;
	kv_cap_open(&r, fd, argc > 1 ? argv[1] : "stdin");
	int st;
	while ((st = kv_cap_next(&r, &rec)) != KV_CAP_EOF) {
		if (st == KV_CAP_HEADER)
			continue;
		if (st != KV_CAP_RECORD)
			kv_die(65, "%s", r.error);
		struct kv_msg_parts m;
		kv_msg_split(rec.frames, rec.nframes, &m);
		msgpack_unpacked u;
		msgpack_unpacked_init(&u);
		size_t off = 0;
		if (msgpack_unpack_next(&u, (const char *)m.payload.p, m.payload.n, &off) != MSGPACK_UNPACK_SUCCESS)
			kv_die(65, "record of %.*s: undecodable payload", (int)rec.src_len, rec.src);
		json_t *j = to_json(&u.data, 0);
		json_dumpf(j, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
		putchar('\n');
		json_decref(j);
		msgpack_unpacked_destroy(&u);
	}
	kv_cap_close(&r);
	return fflush(stdout) ? 74 : 0;
}

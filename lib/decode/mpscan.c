#include "decode/mpscan.h"

#define MP_MAX_DEPTH 32

const struct kv_mp_limits kv_payload_limits = {
	.max_depth = MP_MAX_DEPTH,
	.max_objects = 4u << 20,
	.max_bytes = 64u << 20,
};

static uint64_t be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* One header: its size, the bytes of payload after it, and how many child
 * objects follow (arrays n, maps 2n). Returns 0, or -1 for 0xc1. */
static int header(uint8_t b, unsigned *hdr, unsigned *lenbytes, unsigned *extra,
		  uint64_t *fixed, int *kind)
{
	*hdr = 1, *lenbytes = 0, *extra = 0, *fixed = 0, *kind = 0; /* kind: 0 scalar, 1 array, 2 map */
	if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
		return 0;
	if (b <= 0x8f) { *kind = 2; *fixed = b & 0x0f; return 0; }
	if (b <= 0x9f) { *kind = 1; *fixed = b & 0x0f; return 0; }
	if (b <= 0xbf) { *fixed = b & 0x1f; *kind = 3; return 0; }
	switch (b) {
	case 0xc4: case 0xd9: *lenbytes = 1; *kind = 3; return 0;
	case 0xc5: case 0xda: *lenbytes = 2; *kind = 3; return 0;
	case 0xc6: case 0xdb: *lenbytes = 4; *kind = 3; return 0;
	case 0xc7: *lenbytes = 1; *extra = 1; *kind = 3; return 0;
	case 0xc8: *lenbytes = 2; *extra = 1; *kind = 3; return 0;
	case 0xc9: *lenbytes = 4; *extra = 1; *kind = 3; return 0;
	case 0xca: *fixed = 4; return 0;
	case 0xcb: *fixed = 8; return 0;
	case 0xcc: case 0xd0: *fixed = 1; return 0;
	case 0xcd: case 0xd1: *fixed = 2; return 0;
	case 0xce: case 0xd2: *fixed = 4; return 0;
	case 0xcf: case 0xd3: *fixed = 8; return 0;
	case 0xd4: *fixed = 2; return 0;
	case 0xd5: *fixed = 3; return 0;
	case 0xd6: *fixed = 5; return 0;
	case 0xd7: *fixed = 9; return 0;
	case 0xd8: *fixed = 17; return 0;
	case 0xdc: *lenbytes = 2; *kind = 1; return 0;
	case 0xdd: *lenbytes = 4; *kind = 1; return 0;
	case 0xde: *lenbytes = 2; *kind = 2; return 0;
	case 0xdf: *lenbytes = 4; *kind = 2; return 0;
	default: return -1; /* 0xc1 */
	}
}

enum kv_mp_scan kv_mp_scan(const uint8_t *p, size_t len, const struct kv_mp_limits *lim, size_t *size)
{
	uint64_t remain[MP_MAX_DEPTH + 1];
	unsigned depth = 0, max_depth = lim->max_depth < MP_MAX_DEPTH ? lim->max_depth : MP_MAX_DEPTH;
	uint64_t objects = 0;
	size_t pos = 0;
	remain[0] = 1;
	for (;;) {
		while (remain[depth] == 0) {
			if (depth == 0) {
				*size = pos;
				return KV_MP_OK;
			}
			depth--;
		}
		if (pos >= len)
			return KV_MP_SHORT;
		if (++objects > lim->max_objects)
			return KV_MP_BIG;
		/* Fast paths for the scalars that make up most of a payload (token ids). */
		uint8_t b = p[pos];
		if (b < 0x80 || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
			remain[depth]--;
			pos++;
			continue;
		}
		if (b >= 0xcc && b <= 0xd3) {
			size_t sz = 1 + ((size_t)1 << ((b - 0xcc) & 3));
			if (len - pos < sz)
				return KV_MP_SHORT;
			remain[depth]--;
			pos += sz;
			continue;
		}
		unsigned hdr, lenbytes, extra;
		uint64_t n;
		int kind;
		if (header(b, &hdr, &lenbytes, &extra, &n, &kind) < 0)
			return KV_MP_BAD;
		remain[depth]--;
		if (len - pos < (size_t)hdr + lenbytes + extra)
			return KV_MP_SHORT;
		if (lenbytes)
			n = be(p + pos + 1, lenbytes);
		pos += hdr + lenbytes + extra;
		if (kind == 1 || kind == 2) {
			uint64_t children = kind == 2 ? n * 2 : n;
			/* An empty container is a level too: msgpack-c's stack counts it. */
			if (depth + 1 > max_depth)
				return KV_MP_DEEP;
			if (children == 0)
				continue;
			/* Every child takes at least one byte: a count beyond what is
			 * left cannot complete here, and must not reach msgpack-c. */
			if (children > len - pos)
				return children > lim->max_objects ? KV_MP_BIG : KV_MP_SHORT;
			remain[++depth] = children;
		} else {
			if (kind == 3 && n > lim->max_bytes)
				return KV_MP_BIG;
			if (n > len - pos)
				return KV_MP_SHORT;
			pos += n;
		}
	}
}

const char *kv_mp_scan_strerror(enum kv_mp_scan r)
{
	switch (r) {
	case KV_MP_OK: return "ok";
	case KV_MP_SHORT: return "truncated MessagePack object";
	case KV_MP_BAD: return "invalid MessagePack byte 0xc1";
	case KV_MP_DEEP: return "MessagePack nesting deeper than 32";
	case KV_MP_BIG: return "MessagePack object over the size limits";
	}
	return "unknown MessagePack error";
}

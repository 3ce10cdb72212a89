/* mpscan: bounds a MessagePack object before msgpack-c builds it.
 * msgpack-c's C unpacker allocates count * 24 bytes for an array header before
 * it has seen a single element and has no limits of its own, so a 50-byte
 * payload claiming 4 G elements would ask for 96 GB.  kv_mp_scan walks only the
 * headers and tells whether the object at p is complete, how long it is, and
 * whether it stays within depth, object-count and string-length limits; only
 * then is it handed to msgpack-c. */
#ifndef KV_MPSCAN_H
#define KV_MPSCAN_H

#include <stddef.h>
#include <stdint.h>

enum kv_mp_scan {
	KV_MP_OK = 0,   /* complete object of *size bytes */
	KV_MP_SHORT,    /* the buffer ends inside the object */
	KV_MP_BAD,      /* byte 0xc1, never valid */
	KV_MP_DEEP,     /* nested deeper than max_depth */
	KV_MP_BIG,      /* more than max_objects objects, or a str/bin/ext over max_bytes */
};

struct kv_mp_limits {
	unsigned max_depth;    /* at most 32: msgpack-c's own stack depth */
	uint64_t max_objects;
	uint64_t max_bytes;    /* of one str, bin or ext */
};

/* Limits for one publisher payload (a batch): see kvdecode(1), LIMITS. */
extern const struct kv_mp_limits kv_payload_limits;

enum kv_mp_scan kv_mp_scan(const uint8_t *p, size_t len, const struct kv_mp_limits *lim, size_t *size);
const char *kv_mp_scan_strerror(enum kv_mp_scan r);

#endif

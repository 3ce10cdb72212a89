/* mpunpack: builds the msgpack_object tree of an object that kv_mp_scan
 * accepted, as msgpack-c's msgpack_unpack would build it (the same types,
 * strings, bins and exts pointing into the input, arrays and maps in the
 * zone), but in one pass without msgpack-c's general state machine: a
 * publisher's batch is mostly arrays of thousands of integers, and the scan
 * has checked already that it is complete and within its limits. */
#ifndef KV_MPUNPACK_H
#define KV_MPUNPACK_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The object of size bytes at p (kv_mp_scan said KV_MP_OK and size), into
 * *o with its arrays and maps in zone; false when the zone is out of memory. */
bool kv_mp_unpack(const uint8_t *p, size_t size, msgpack_zone *zone, msgpack_object *o);

#endif

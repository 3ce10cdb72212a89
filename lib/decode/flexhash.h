/* flexhash: every rule that turns a wire value into a u64 block hash
 * (kvdecode(1) "Hashes", kv-conductor's FlexHash).  Unsigned ints as they are,
 * negative ints as their two's complement (Mooncake packs int64), bin of up
 * to 8 bytes big-endian, longer bin by its last 8 bytes (vLLM's sha256 in
 * bytes mode = its int mode = memcache's BlockHashHexToU64), strings as hex
 * (0x optional, up to 64 digits, the last 16 kept) or, by option, decimal. */
#ifndef KV_FLEXHASH_H
#define KV_FLEXHASH_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kv_hash_opts {
	bool decimal_strings;   /* strings without 0x are decimal */
};

/* The wire forms a publisher used for its hashes, as bits (kvmatch
 * --diagnose names them when engines and pools never agree). */
enum {
	KV_HF_UINT = 1u << 0,       /* unsigned integer */
	KV_HF_NEGINT = 1u << 1,     /* negative integer (Mooncake's int64) */
	KV_HF_BIN8 = 1u << 2,       /* bytes, up to 8 */
	KV_HF_BINLONG = 1u << 3,    /* bytes, more than 8 (vLLM's sha256 in bytes mode) */
	KV_HF_STR = 1u << 4,        /* string (hex, or decimal by option) */
	KV_HF_NFORMS = 5
};
unsigned kv_hash_form(const msgpack_object *o);
/* "uint, bytes > 8" for a set of forms. */
void kv_hash_forms_text(unsigned forms, char *buf, size_t n);

/* NULL on success, else why the value is not a hash. */
const char *kv_flexhash(const msgpack_object *o, const struct kv_hash_opts *opts, uint64_t *h);
/* The string rules alone (also used for hashes that arrive in JSON). */
const char *kv_flexhash_str(const char *s, size_t n, bool decimal, uint64_t *h);
/* A hash a user gives as a string, where a number is meant (a query line's
 * block_hashes and seq_hashes, an event line's block_hashes and parent as
 * kvdecode writes them): hex, 0x optional, whose value fits in 64 bits, as
 * a JSON number there must: leading zeros are no digits of it, and a 17th
 * significant digit is out of range as 2^64 in decimal is, never cut to its
 * low 64 bits.  NULL on success, else why.  Only a publisher's strings on
 * the wire keep their last 16 of up to 64 digits (kv_flexhash_str,
 * kvdecode(1) "Hashes": vLLM's sha256 and memcache's hex). */
const char *kv_hash_value_str(const char *s, size_t n, uint64_t *h);
/* The hash an object key names (kvdecode(1) "Hashes"): decimal or 0x hex whose value
 * fits in 64 bits, or, with after_at (memcache keys), the hex after the
 * last '@' (its low 64 bits).  false when the key names none: never a
 * truncated value that another key already means. */
bool kv_hash_from_object_key(const char *s, size_t n, bool after_at, uint64_t *h);

#endif

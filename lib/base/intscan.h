/* intscan: the fast path for the long JSON arrays of integers that query
 * lines carry (kvquery(1): token_ids, block_hashes, seq_hashes), whose
 * elements yajl's callbacks took most of a /query line's time to read
 * (make bench).  It owns one function, kv_intscan_array, which reads the
 * elements of such an array straight from the line's bytes when they are
 * in the plain form clients write, and declines anything else: the caller
 * then lets its full parser read the array, which accepts or refuses it,
 * with its own messages, exactly as it did before this module existed.
 * So this module never refuses anything and has no messages: what it takes
 * is only what that parser would have taken, with the same values. */
#ifndef KV_INTSCAN_H
#define KV_INTSCAN_H

#include <stddef.h>
#include <stdint.h>

enum kv_intscan_kind {
	/* JSON integers from -2^63 to 2^63-1 (kv-conductor's i64 token ids),
	 * each kept as its two's complement */
	KV_INTSCAN_I64,
	/* JSON integers from 0 to 2^64-1, or strings of hex digits after an
	 * optional 0x or 0X whose value fits in 64 bits (block hashes, as
	 * kv_hash_value_str reads strings) */
	KV_INTSCAN_U64_HEX,
};

/* A growable array of values (grown with kv_xgrow; free v). */
struct kv_u64s {
	uint64_t *v;
	size_t n, cap;
};

/* A growable array of token ids (grown with kv_xgrow; free v). */
struct kv_u32s {
	uint32_t *v;
	size_t n, cap;
};

/* What kv_intscan_array returns for an array that is not its to read. */
#define KV_INTSCAN_DECLINED SIZE_MAX

/* s[0..len) is what follows the '[' of a JSON array.  When its elements,
 * up to its closing ']', are all of `kind` and in range, written plainly
 * (integers as JSON writes them, with no fraction or exponent; strings
 * with no escape), separated by commas with only spaces, tabs, CRs or LFs
 * around them, and when out then holds at most `max` values: appends them
 * to out and returns the offset of the ']' in s.  Else returns
 * KV_INTSCAN_DECLINED with out->n as it was (out->v may have moved). */
size_t kv_intscan_array(const char *s, size_t len, enum kv_intscan_kind kind, struct kv_u64s *out, size_t max);

/* kv_intscan_array for KV_INTSCAN_I64, each value stored as its low 32
 * bits: token ids, which kv-conductor reads as i64 and hashes `as u32`,
 * straight into the array that is hashed (no array of u64s between). */
size_t kv_intscan_tokens(const char *s, size_t len, struct kv_u32s *out, size_t max);

#endif

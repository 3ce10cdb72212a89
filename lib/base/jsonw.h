/* jsonw: writing JSON text fast and correctly.
 * Strings are escaped in one tested function (quotes, backslash, control
 * characters; bytes that are not valid UTF-8 become U+FFFD, so the output is
 * always valid UTF-8 JSON).  Numbers: exact integers, hashes as "0x" + 16
 * lowercase hex digits (u64 above 2^53 do not survive JSON numbers in jq or
 * JavaScript), doubles in their shortest round-trip form.
 * The writer appends to a kv_out buffer; jw_reserve makes room first. */
#ifndef KV_JSONW_H
#define KV_JSONW_H

#include <stddef.h>
#include <stdint.h>

#include "base/out.h"

/* Upper bounds of the text the functions below write. */
#define JW_U64_MAX 20
#define JW_I64_MAX 20
#define JW_HASH_MAX 20       /* "0x" + 16 digits, quoted */
#define JW_DOUBLE_MAX 32
#define JW_STR_MAX(n) (6 * (n) + 2)

char *jw_u64(char *p, uint64_t v);
char *jw_i64(char *p, int64_t v);
char *jw_hash(char *p, uint64_t h);               /* "0x0123456789abcdef" */
char *jw_double(char *p, double v);               /* null for NaN and infinities */
/* Milliseconds as seconds, exactly: 1717000004001 -> 1717000004.001 */
char *jw_ms_as_seconds(char *p, int64_t ms);
char *jw_str(char *p, const char *s, size_t n);   /* quoted and escaped */
char *jw_hex_str(char *p, const uint8_t *b, size_t n); /* bytes as a quoted hex string */

/* Appending to a kv_out: jw_reserve(o, n) returns room for n bytes;
 * jw_done(o, p) commits up to p. */
static inline char *jw_reserve(struct kv_out *o, size_t n) { return kv_out_reserve(o, n); }
static inline void jw_done(struct kv_out *o, const char *p) { o->len = (size_t)(p - o->buf); }

#endif

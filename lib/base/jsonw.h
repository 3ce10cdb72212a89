/* jsonw: writing JSON text, the one way kvtools writes it: fast and correct.
 * Strings are escaped in one tested function (quotes, backslash, control
 * characters; bytes that are not valid UTF-8 become U+FFFD, so the output is
 * always valid UTF-8 JSON).  Numbers: exact integers, hashes as "0x" + 16
 * lowercase hex digits (u64 above 2^53 do not survive JSON numbers in jq or
 * JavaScript), doubles in their shortest round-trip form, or as reals of a
 * fixed precision in jansson's form (the layout of kvgen's report).
 *
 * A writer (struct jw) appends to a kv_out: jw_begin, jw_put_* ..., jw_end.
 * Every jw_put_* makes its own room, so no caller counts bytes: the bound of
 * each piece is computed here, next to the code that writes it.  The check
 * is one comparison per piece (one per list for the lists of numbers), and
 * the buffer grows when it is short: cheaper than a guess that must be right
 * or corrupt memory.  The writer never flushes in the middle of a record
 * (kv_out cuts a failed file back to its last flush, and a reader must then
 * find whole records): jw_begin flushes when the buffer is nearly full, and a
 * record longer than what is left grows the buffer instead.
 *
 * Below the writer, the formatters (jw_u64(p, v) ...) write into memory
 * already large enough: JW_*_MAX bound what each writes. */
#ifndef KV_JSONW_H
#define KV_JSONW_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/out.h"

/* Upper bounds of the text the formatters below write. */
#define JW_U32_MAX 10
#define JW_U64_MAX 20
#define JW_I64_MAX 20
#define JW_HASH_MAX 20       /* "0x" + 16 digits, quoted */
#define JW_DOUBLE_MAX 32     /* also jw_real's, for up to 17 digits */
#define JW_MS_SECONDS_MAX 25 /* "-", 16 digits, ".", 3 digits, and spare */
#define JW_STR_MAX(n) (6 * (n) + 2)

/* ---- formatters: write at p, return the end ---------------------------- */

char *jw_u64(char *p, uint64_t v);
char *jw_i64(char *p, int64_t v);
char *jw_hash(char *p, uint64_t h);               /* "0x0123456789abcdef" */
char *jw_double(char *p, double v);               /* null for NaN and infinities */
/* v with digits (1-17) significant digits, always written as a real, as
 * jansson writes it (JSON_REAL_PRECISION): 1.0, 0.25, 1e21, 1.5e-7; null
 * for NaN and infinities. */
char *jw_real(char *p, double v, int digits);
/* Milliseconds as seconds, exactly: 1717000004001 -> 1717000004.001 */
char *jw_ms_as_seconds(char *p, int64_t ms);
char *jw_str(char *p, const char *s, size_t n);   /* quoted and escaped */
char *jw_hex_str(char *p, const uint8_t *b, size_t n); /* bytes as a quoted hex string */
/* Lists, comma-separated without brackets: n times the bound and a comma. */
char *jw_u32_list(char *p, const uint32_t *v, size_t n);
char *jw_u64_list(char *p, const uint64_t *v, size_t n);
char *jw_hash_list(char *p, const uint64_t *h, size_t n);
/* JSON text written as it is: keys, punctuation, true, null... */
static inline char *jw_lit(char *p, const char *s)
{
	size_t n = strlen(s);
	memcpy(p, s, n);
	return p + n;
}

/* ---- the writer -------------------------------------------------------- */

struct jw {
	char *p;              /* where the next byte goes */
	char *end;            /* the end of the buffer: every piece checks its room against it */
	struct kv_out *o;
};

/* Room a record may expect without growing: jw_begin flushes when less is left. */
#define JW_BEGIN_ROOM 4096

void jw_begin_slow(struct jw *w, struct kv_out *o);
/* Starts writing at the end of o's text (nothing else may write to o until jw_end). */
static inline void jw_begin(struct jw *w, struct kv_out *o)
{
	if (o->cap - o->len < JW_BEGIN_ROOM) {
		jw_begin_slow(w, o);
		return;
	}
	w->o = o;
	w->p = o->buf + o->len;
	w->end = o->buf + o->cap;
}
/* Commits what was written to o. */
static inline void jw_end(struct jw *w)
{
	w->o->len = (size_t)(w->p - w->o->buf);
}

/* The writer after growing the buffer for n more bytes; never flushes.
 * By value, so that a writer's address never escapes and the compiler can
 * keep it in registers. */
struct jw jw_grown(struct jw w, size_t n);
/* Room for n more bytes at w->p: for the jw_put_* below, whose n is a
 * formatter's bound, never a count made by a caller. */
static inline char *jw_room(struct jw *w, size_t n)
{
	if (__builtin_expect(n > (size_t)(w->end - w->p), 0))
		*w = jw_grown(*w, n);
	return w->p;
}

/* JSON text as it is (a literal, or text already JSON). */
static inline void jw_put_raw(struct jw *w, const char *s, size_t n)
{
	memcpy(jw_room(w, n), s, n);
	w->p += n;
}
static inline void jw_put_lit(struct jw *w, const char *s) { jw_put_raw(w, s, strlen(s)); }
static inline void jw_put_char(struct jw *w, char c)
{
	*jw_room(w, 1) = c;
	w->p++;
}
static inline void jw_put_u64(struct jw *w, uint64_t v) { w->p = jw_u64(jw_room(w, JW_U64_MAX), v); }
static inline void jw_put_i64(struct jw *w, int64_t v) { w->p = jw_i64(jw_room(w, JW_I64_MAX), v); }
static inline void jw_put_hash(struct jw *w, uint64_t h) { w->p = jw_hash(jw_room(w, JW_HASH_MAX), h); }
static inline void jw_put_double(struct jw *w, double v) { w->p = jw_double(jw_room(w, JW_DOUBLE_MAX), v); }
static inline void jw_put_real(struct jw *w, double v, int digits)
{
	w->p = jw_real(jw_room(w, JW_DOUBLE_MAX), v, digits);
}
static inline void jw_put_ms_as_seconds(struct jw *w, int64_t ms)
{
	w->p = jw_ms_as_seconds(jw_room(w, JW_MS_SECONDS_MAX), ms);
}
static inline void jw_put_str(struct jw *w, const char *s, size_t n) { w->p = jw_str(jw_room(w, JW_STR_MAX(n)), s, n); }
/* A NUL-terminated string, quoted and escaped. */
static inline void jw_put_cstr(struct jw *w, const char *s) { jw_put_str(w, s, strlen(s)); }
static inline void jw_put_hex_str(struct jw *w, const uint8_t *b, size_t n)
{
	w->p = jw_hex_str(jw_room(w, 2 * n + 2), b, n);
}
/* Lists of numbers, comma-separated without brackets: the room of the
 * whole list is made once. */
static inline void jw_put_u32_list(struct jw *w, const uint32_t *v, size_t n)
{
	w->p = jw_u32_list(jw_room(w, n * (JW_U32_MAX + 1)), v, n);
}
static inline void jw_put_u64_list(struct jw *w, const uint64_t *v, size_t n)
{
	w->p = jw_u64_list(jw_room(w, n * (JW_U64_MAX + 1)), v, n);
}
static inline void jw_put_hash_list(struct jw *w, const uint64_t *h, size_t n)
{
	w->p = jw_hash_list(jw_room(w, n * (JW_HASH_MAX + 1)), h, n);
}

#endif

/* utf8: the one UTF-8 validity rule, for what kvtools writes as JSON and
 * what it reads as Prometheus text: no overlong forms, no UTF-16
 * surrogates, nothing above U+10FFFF. */
#ifndef KV_UTF8_H
#define KV_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when it is not one;
 * n (at least 1) is what is left of the input. */
size_t kv_utf8_len(const unsigned char *s, size_t n);

/* Whether the UTF-8 sequence of len bytes at s (kv_utf8_len's) is a
 * control: C0 controls, DEL, C1 controls U+0080..U+009F, what could drive a
 * terminal.  kv_printable shows them as '?'; names given on the command
 * line refuse them (optval.h). */
bool kv_utf8_is_control(const unsigned char *s, size_t len);

/* The one rule for text shown to people (messages, tables, --stats): what
 * could drive a terminal (C0 controls, DEL, C1 controls U+0080..U+009F) and
 * bytes that are not UTF-8 become '?'; other UTF-8 is kept.  Copies the n
 * bytes of src into dst (at most size - 1 of them, then a NUL; dst may be
 * src) and returns the length written. */
size_t kv_printable(char *dst, size_t size, const char *src, size_t n);

#endif

/* utf8: the one UTF-8 validity rule, for what kvtools writes as JSON and
 * what it reads as Prometheus text: no overlong forms, no UTF-16
 * surrogates, nothing above U+10FFFF. */
#ifndef KV_UTF8_H
#define KV_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when it is not one;
 * n (at least 1) is what is left of the input. */
size_t kv_utf8_len(const unsigned char *s, size_t n);

#endif

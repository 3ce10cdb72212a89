/* arg: numbers in the test helpers' arguments, taken whole or refused (a
 * helper that misreads its options would make a test pass for nothing). */
#ifndef KV_TEST_ARG_H
#define KV_TEST_ARG_H

#include <limits.h>
#include <stdint.h>

#include "base/util.h"

static inline long arg_long(const char *s)
{
	int64_t v;
	if (!kv_parse_i64(s, LONG_MIN, LONG_MAX, &v))
		kv_die(64, "'%s' is not an integer", s);
	return (long)v;
}

static inline unsigned long long arg_u64(const char *s)
{
	uint64_t v;
	if (!kv_parse_u64(s, 0, UINT64_MAX, &v))
		kv_die(64, "'%s' is not a non-negative integer", s);
	return v;
}

#endif

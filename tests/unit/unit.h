/* unit.h: the smallest TAP test runner.  Each RUN(fn) is one test point;
 * ASSERT ends the test function at the first failure and says where. */
#ifndef KV_UNIT_H
#define KV_UNIT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unit_points, unit_failures, unit_current_failed;

static void unit_fail(const char *file, int line, const char *what)
{
	if (!unit_current_failed)
		printf("# %s:%d: failed: %s\n", file, line, what);
	unit_current_failed = 1;
}

#define ASSERT(c) do { if (!(c)) { unit_fail(__FILE__, __LINE__, #c); return; } } while (0)
#define ASSERT_EQ_U64(a, b) do { unsigned long long a_ = (a), b_ = (b); if (a_ != b_) { \
	printf("# %s:%d: %s == %llu, expected %llu\n", __FILE__, __LINE__, #a, a_, b_); \
	unit_fail(__FILE__, __LINE__, #a " == " #b); return; } } while (0)

/* Strings compared whole; each line of both shown on failure. */
static inline void unit_show(const char *label, const char *s)
{
	printf("# %s\n#   ", label);
	for (; *s; s++) {
		putchar(*s);
		if (*s == '\n')
			fputs("#   ", stdout);
	}
	putchar('\n');
}
#define ASSERT_EQ_STR(a, b) do { const char *a_ = (a), *b_ = (b); if (strcmp(a_, b_) != 0) { \
	printf("# %s:%d: %s differs\n", __FILE__, __LINE__, #a); unit_show("got", a_); unit_show("expected", b_); \
	unit_fail(__FILE__, __LINE__, #a " == " #b); return; } } while (0)

#define RUN(fn) unit_run(#fn, fn)
static void unit_run(const char *name, void (*fn)(void))
{
	unit_current_failed = 0;
	fn();
	unit_points++;
	if (unit_current_failed)
		unit_failures++;
	printf("%sok %d - %s\n", unit_current_failed ? "not " : "", unit_points, name);
}

/* A fixed sequence of pseudo-random numbers (xorshift64), the same on every
 * run, for tests that want many inputs. */
static uint64_t unit_rng = 88172645463325252ull;
static inline uint64_t unit_rand(void)
{
	unit_rng ^= unit_rng << 13;
	unit_rng ^= unit_rng >> 7;
	unit_rng ^= unit_rng << 17;
	return unit_rng;
}

static int unit_done(void)
{
	printf("1..%d\n", unit_points);
	return unit_failures ? 1 : 0;
}

#endif

/* Reading an input a program loads whole (kvmatch -r, kvsub -r, kvnats -r):
 * kv_lines with a bound on the whole input takes no byte past it but the
 * one that tells the input goes on, and returns every line that ends within
 * it first; kv_input_read stops at a stop signal.  Inputs are pipes, as
 * from a device or `yes`, which have no size of their own. */
#define _GNU_SOURCE /* memfd_create: a file of the test's own, in no directory */
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/input.h"
#include "base/lines.h"
#include "base/util.h"
#include "unit.h"

/* A pipe holding s, its writer closed: the input ends after s. */
static int pipe_of(const char *s, size_t n)
{
	int fds[2];
	if (pipe(fds) != 0 || write(fds[1], s, n) != (ssize_t)n)
		abort();
	close(fds[1]);
	return fds[0];
}

/* The statuses kv_lines_next gives for s under the bounds, one letter each
 * (L a line, T too long, E end, S stopped, X error, M past max_total), the
 * lines' text after them: "LLM a,bb". */
static const char *statuses(const char *s, size_t max_line, uint64_t max_total)
{
	static char out[256];
	char text[128] = "";
	int fd = pipe_of(s, strlen(s));
	struct kv_lines l;
	kv_lines_init(&l, fd, max_line, NULL, 0);
	l.max_total = max_total;
	size_t o = 0;
	for (;;) {
		char *line;
		size_t len;
		enum kv_lines_status st = kv_lines_next(&l, &line, &len);
		out[o++] = "LTESXM"[st];
		if (st == KV_LINE)
			snprintf(text + strlen(text), sizeof text - strlen(text), "%s%.*s", text[0] ? "," : "", (int)len, line);
		if (st != KV_LINE && st != KV_LINE_TOO_LONG)
			break;
	}
	kv_lines_free(&l);
	close(fd);
	snprintf(out + o, sizeof out - o, " %s", text);
	return out;
}

static void lines_within_max_total(void)
{
	/* "a\nbb\nccc\n" is 9 bytes: each line ends at 2, 5 and 9 */
	ASSERT_EQ_STR(statuses("a\nbb\nccc\n", 100, 0), "LLLE a,bb,ccc");
	ASSERT_EQ_STR(statuses("a\nbb\nccc\n", 100, 9), "LLLE a,bb,ccc");
	ASSERT_EQ_STR(statuses("a\nbb\nccc\n", 100, 8), "LLM a,bb");
	ASSERT_EQ_STR(statuses("a\nbb\nccc\n", 100, 5), "LLM a,bb");
	ASSERT_EQ_STR(statuses("a\nbb\nccc\n", 100, 4), "LM a");
	ASSERT_EQ_STR(statuses("a\nbb\nccc\n", 100, 1), "M ");
	/* a last line without its newline, ending at the bound */
	ASSERT_EQ_STR(statuses("a\nbb", 100, 4), "LLE a,bb");
	ASSERT_EQ_STR(statuses("a\nbb", 100, 3), "LM a");
}

static void long_line_reported_before_the_bound(void)
{
	/* a line longer than max_line is skipped as it streams by; when the
	 * bound cuts it, it is reported first, then the bound */
	ASSERT_EQ_STR(statuses("xxxxxxxxxxxxxxxxxxxx\nok\n", 4, 0), "TLE ok");
	ASSERT_EQ_STR(statuses("xxxxxxxxxxxxxxxxxxxx\nok\n", 4, 24), "TLE ok");
	ASSERT_EQ_STR(statuses("xxxxxxxxxxxxxxxxxxxx\nok\n", 4, 12), "TM ");
	ASSERT_EQ_STR(statuses("ok\nxxxxxxxxxxxxxxxxxxxx\n", 4, 12), "LTM ok");
}

static void lines_stopped_by_a_signal(void)
{
	int fd = pipe_of("a\nb\n", 4);
	struct kv_lines l;
	kv_lines_init(&l, fd, 100, NULL, 0);
	l.max_total = 100;
	char *line;
	size_t len;
	kv_stop_signal = SIGTERM;
	enum kv_lines_status st = kv_lines_next(&l, &line, &len);
	kv_stop_signal = 0;
	kv_lines_free(&l);
	close(fd);
	ASSERT_EQ_U64(st, KV_LINES_STOPPED);
}

/* Line i of lines_read_in_place's input: "i:" then digits, of a query
 * line's length: most of 60 to 100 KB (12,000 tokens), some of 600 KB
 * (100,000 tokens), a few of 1 byte or longer than the buffer at first. */
static size_t long_line(uint64_t i, char *out)
{
	size_t n = i % 40 == 5 ? (size_t)(1200u << 10) : i % 40 == 9 ? 1 : i % 10 == 3 ? (size_t)(600u << 10)
		   : 60000 + (size_t)(unit_rand() % 40000);
	int k = snprintf(out, n + 1, "%llu:", (unsigned long long)i);
	for (size_t j = (size_t)k; j < n; j++)
		out[j] = (char)('0' + (i + j) % 10);
	return n;
}

/* A file of lines from 1 byte to 1.2 MB, past many fills of the buffer:
 * each comes back whole, and the buffer moves little of them (a line begun
 * is moved to its front once a buffer-full): at most a tenth of the input,
 * where moving it at every read moved a seventh. */
static void lines_read_in_place(void)
{
	int fd = memfd_create("lines", 0);
	ASSERT(fd >= 0);
	static char want[(1200u << 10) + 1]; /* the longest line (no malloc: an ASSERT returns early) */
	uint64_t total = 0;
	enum { NLINES = 200 };
	uint64_t seed = unit_rng;
	for (uint64_t i = 0; i < NLINES; i++) {
		size_t n = long_line(i, want);
		want[n] = '\n';
		ASSERT(write(fd, want, n + 1) == (ssize_t)(n + 1));
		total += n + 1;
	}
	ASSERT(lseek(fd, 0, SEEK_SET) == 0);
	unit_rng = seed;
	struct kv_lines l;
	kv_lines_init(&l, fd, 256u << 20, NULL, 0);
	uint64_t i = 0, bad = 0;
	char *line;
	size_t len;
	while (kv_lines_next(&l, &line, &len) == KV_LINE) {
		size_t n = long_line(i++, want);
		bad += len != n || memcmp(line, want, n) != 0 || line[len] != 0;
	}
	ASSERT_EQ_U64(i, NLINES);
	ASSERT_EQ_U64(bad, 0);
	ASSERT_EQ_U64(kv_lines_taken(&l), total);
	ASSERT(l.moved * 10 <= total);
	kv_lines_free(&l);
	close(fd);
}

static void input_read(void)
{
	char d[16];
	size_t got;
	/* fewer than asked only at the end of the input */
	int fd = pipe_of("0123456789", 10);
	ASSERT_EQ_U64(kv_input_read(fd, d, 4, &got), KV_READ_OK);
	ASSERT_EQ_U64(got, 4);
	ASSERT(memcmp(d, "0123", 4) == 0);
	ASSERT_EQ_U64(kv_input_read(fd, d, sizeof d, &got), KV_READ_OK);
	ASSERT_EQ_U64(got, 6);
	ASSERT(memcmp(d, "456789", 6) == 0);
	ASSERT_EQ_U64(kv_input_read(fd, d, sizeof d, &got), KV_READ_OK);
	ASSERT_EQ_U64(got, 0);
	close(fd);
	/* a stop signal: nothing more is read */
	fd = pipe_of("0123456789", 10);
	kv_stop_signal = SIGINT;
	enum kv_read_status st = kv_input_read(fd, d, 4, &got);
	kv_stop_signal = 0;
	ASSERT_EQ_U64(st, KV_READ_STOPPED);
	ASSERT_EQ_U64(got, 0);
	close(fd);
	struct kv_err e = { 0 };
	ASSERT(!kv_input_stopped(&e, "regs.jsonl"));
	ASSERT_EQ_STR(kv_err_msg(&e), "regs.jsonl: loading stopped by a signal");
	ASSERT_EQ_U64(e.status, KV_EX_OK);
	kv_err_clear(&e);
}

int main(void)
{
	RUN(lines_within_max_total);
	RUN(long_line_reported_before_the_bound);
	RUN(lines_stopped_by_a_signal);
	RUN(lines_read_in_place);
	RUN(input_read);
	return unit_done();
}

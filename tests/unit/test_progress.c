/* The progress line (base/progress.h): its pieces (sizes, rates, times),
 * the whole line before and after its rates settle, the time left, its cut
 * to the terminal's width; and the bytes the one reader (base/input.h)
 * counts, and the size a regular input is known by. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/input.h"
#include "base/lines.h"
#include "base/progress.h"
#include "unit.h"

static const char *bytes(uint64_t b)
{
	static char s[32];
	kv_progress_bytes(b, s, sizeof s);
	return s;
}

static const char *rate(double r)
{
	static char s[32];
	kv_progress_rate(r, s, sizeof s);
	return s;
}

static const char *span(uint64_t secs)
{
	static char s[32];
	kv_progress_time(secs, s, sizeof s);
	return s;
}

static void sizes(void)
{
	ASSERT_EQ_STR(bytes(0), "0 B");
	ASSERT_EQ_STR(bytes(1023), "1023 B");
	ASSERT_EQ_STR(bytes(1024), "1.0 KiB");
	ASSERT_EQ_STR(bytes(1536), "1.5 KiB");
	/* 1023.96 KiB rounds to 1024.0: the next unit says it */
	ASSERT_EQ_STR(bytes(1048535), "1.0 MiB");
	ASSERT_EQ_STR(bytes(10ull << 30), "10.0 GiB");
	ASSERT_EQ_STR(bytes(1288490189), "1.2 GiB");
	ASSERT_EQ_STR(bytes(3ull << 40), "3.0 TiB");
	ASSERT_EQ_STR(bytes(UINT64_MAX), "16.0 EiB");
}

static void rates(void)
{
	ASSERT_EQ_STR(rate(0), "0");
	ASSERT_EQ_STR(rate(12.4), "12");
	ASSERT_EQ_STR(rate(999.4), "999");
	/* three figures as printed: 999.7 is a thousand */
	ASSERT_EQ_STR(rate(999.7), "1.00k");
	ASSERT_EQ_STR(rate(1234), "1.23k");
	ASSERT_EQ_STR(rate(45678), "45.7k");
	ASSERT_EQ_STR(rate(456789), "457k");
	ASSERT_EQ_STR(rate(1234567), "1.23M");
	ASSERT_EQ_STR(rate(2.5e9), "2.50G");
	ASSERT_EQ_STR(rate(-3), "0");
}

static void times(void)
{
	ASSERT_EQ_STR(span(0), "0:00");
	ASSERT_EQ_STR(span(59), "0:59");
	ASSERT_EQ_STR(span(88), "1:28");
	ASSERT_EQ_STR(span(3599), "59:59");
	ASSERT_EQ_STR(span(3600), "1:00:00");
	ASSERT_EQ_STR(span(100 * 3600 + 61), "100:01:01");
}

static struct kv_progress_view view(void)
{
	return (struct kv_progress_view){
		.prog = "kvmatch", .bytes = 1288490189, .total_known = true, .total = 10ull << 30,
		.records_unit = "records", .events_unit = "events", .records = 5484000, .events = 14760000,
		.elapsed_ns = 12000000000ull,
	};
}

static const char *line(const struct kv_progress_view *v, size_t width)
{
	static char s[600];
	size_t n = kv_progress_format(s, sizeof s, width, v);
	if (n != strlen(s))
		return "length returned is not the line's";
	return s;
}

static void whole_line(void)
{
	struct kv_progress_view v = view();
	/* 12% of 10 GiB in 12 s: the other 88% in 88 s */
	ASSERT_EQ_STR(line(&v, 0), "kvmatch: 1.2 GiB of 10.0 GiB (12%) 457k records/s 1.23M events/s 0:12 ETA 1:28");
	/* no events: no rate of them */
	v.events_unit = NULL;
	v.records_unit = "requests";
	ASSERT_EQ_STR(line(&v, 0), "kvmatch: 1.2 GiB of 10.0 GiB (12%) 457k requests/s 0:12 ETA 1:28");
	/* no total (a pipe): neither the share nor the time left */
	v = view();
	v.total_known = false;
	ASSERT_EQ_STR(line(&v, 0), "kvmatch: 1.2 GiB 457k records/s 1.23M events/s 0:12");
	/* the last line (--progress into a file): no time left */
	v = view();
	v.final = true;
	v.bytes = v.total;
	ASSERT_EQ_STR(line(&v, 0), "kvmatch: 10.0 GiB of 10.0 GiB (100%) 457k records/s 1.23M events/s 0:12");
	/* all read, not yet at its end: 100%, nothing left */
	v.final = false;
	ASSERT_EQ_STR(line(&v, 0), "kvmatch: 10.0 GiB of 10.0 GiB (100%) 457k records/s 1.23M events/s 0:12 ETA 0:00");
	/* an empty input is all read */
	v.bytes = v.total = 0;
	v.records = v.events = 0;
	ASSERT_EQ_STR(line(&v, 0), "kvmatch: 0 B of 0 B (100%) 0 records/s 0 events/s 0:12 ETA 0:00");
}

static void before_rates_settle(void)
{
	struct kv_progress_view v = view();
	/* a few records in a few microseconds say nothing of the pace */
	v.elapsed_ns = 499999999;
	ASSERT_EQ_STR(line(&v, 0), "kvmatch: 1.2 GiB of 10.0 GiB (12%) - records/s - events/s 0:00 ETA -");
	v.elapsed_ns = 500000000;
	ASSERT_EQ_STR(line(&v, 0), "kvmatch: 1.2 GiB of 10.0 GiB (12%) 11.0M records/s 29.5M events/s 0:00 ETA 0:04");
	/* nothing read yet: no pace to tell the time left by */
	v.bytes = 0;
	ASSERT_EQ_STR(line(&v, 0), "kvmatch: 0 B of 10.0 GiB (0%) 11.0M records/s 29.5M events/s 0:00 ETA -");
	/* the last line has its rates however short the run */
	v = view();
	v.elapsed_ns = 1000000;
	v.final = true;
	ASSERT_EQ_STR(line(&v, 0), "kvmatch: 1.2 GiB of 10.0 GiB (12%) 5.48G records/s 14.8G events/s 0:00");
}

static void cut_to_width(void)
{
	struct kv_progress_view v = view();
	const char *whole = "kvmatch: 1.2 GiB of 10.0 GiB (12%) 457k records/s 1.23M events/s 0:12 ETA 1:28";
	size_t n = strlen(whole);
	/* the last column stays free: a terminal that wraps there would scroll */
	ASSERT_EQ_STR(line(&v, n + 1), whole);
	char cut[200];
	snprintf(cut, sizeof cut, "%.*s", (int)(n - 1), whole);
	ASSERT_EQ_STR(line(&v, n), cut);
	ASSERT_EQ_STR(line(&v, 40), "kvmatch: 1.2 GiB of 10.0 GiB (12%) 457k");
	ASSERT_EQ_STR(line(&v, 1), "");
	/* a buffer smaller than the line: cut, never overrun */
	char small[20];
	ASSERT_EQ_U64(kv_progress_format(small, sizeof small, 0, &v), 19);
	ASSERT_EQ_STR(small, "kvmatch: 1.2 GiB of");
}

static void choose(void)
{
	/* no terminal here (a test's stderr is a pipe or a file) */
	if (isatty(STDERR_FILENO))
		return;
	ASSERT_EQ_U64(kv_progress_choose(0, false, false), KV_PROGRESS_OFF);
	ASSERT_EQ_U64(kv_progress_choose(1, false, false), KV_PROGRESS_LINES);
	ASSERT_EQ_U64(kv_progress_choose(1, true, true), KV_PROGRESS_LINES);
	ASSERT_EQ_U64(kv_progress_choose(-1, false, false), KV_PROGRESS_OFF);
}

static void countdown(void)
{
	struct kv_progress p;
	kv_progress_init(&p, KV_PROGRESS_OFF, "records", NULL);
	ASSERT(!kv_progress_due(&p));
	ASSERT(!kv_progress_idle_due(&p));
	/* on: the first record draws the first line, then the clock is read
	 * once every KV_PROGRESS_EVERY records */
	kv_progress_init(&p, KV_PROGRESS_LINES, "records", NULL);
	ASSERT(kv_progress_due(&p));
	p.next_ns = UINT64_MAX;
	for (unsigned i = 0; i < 3 * KV_PROGRESS_EVERY; i++)
		ASSERT(!kv_progress_due(&p));
	p.next_ns = 0;
	for (unsigned i = 1; i < KV_PROGRESS_EVERY; i++)
		ASSERT(!kv_progress_due(&p));
	ASSERT(kv_progress_due(&p));
	ASSERT(kv_progress_idle_due(&p));
}

/* The one reader counts every byte it reads; a regular file's size is
 * known, and standard input's from where it stands. */
static void reader_bytes_and_sizes(void)
{
	char path[] = "/tmp/kvtools-unit-XXXXXX";
	int fd = mkstemp(path);
	ASSERT(fd >= 0);
	const char text[] = "one\ntwo\nthree\n";
	ASSERT(write(fd, text, sizeof text - 1) == (ssize_t)sizeof text - 1);
	lseek(fd, 0, SEEK_SET);
	uint64_t size = 0;
	char *const paths[] = { path, path };
	bool known = kv_input_size(path, &size);
	bool both = kv_inputs_size(paths, 2, &size) && size == 2 * (sizeof text - 1);
	bool dev = kv_input_size("/dev/null", &size);
	struct kv_lines l;
	kv_lines_init(&l, fd, 100, NULL, 0);
	char *s;
	size_t n;
	enum kv_lines_status st = kv_lines_next(&l, &s, &n);
	uint64_t read = l.in.bytes, taken = kv_lines_taken(&l);
	kv_lines_free(&l);
	close(fd);
	unlink(path);
	ASSERT(known);
	ASSERT(both);
	ASSERT(!dev);
	ASSERT_EQ_U64(st, KV_LINE);
	ASSERT_EQ_U64(read, sizeof text - 1);
	ASSERT_EQ_U64(taken, 4);
}

int main(void)
{
	RUN(sizes);
	RUN(rates);
	RUN(times);
	RUN(whole_line);
	RUN(before_rates_settle);
	RUN(cut_to_width);
	RUN(choose);
	RUN(countdown);
	RUN(reader_bytes_and_sizes);
	return unit_done();
}

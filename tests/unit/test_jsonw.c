/* The JSON writer's bounds (jsonw): every piece makes its own room, the
 * buffer grows instead of overflowing, a record is never flushed in two;
 * and reals written as jansson writes them, compared with jansson itself. */
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/jsonw.h"
#include "base/out.h"
#include "unit.h"

/* Leaves exactly room bytes in the record being written. */
static void leave_room(struct jw *w, size_t room)
{
	size_t fill = (size_t)(w->end - w->p) - room;
	memset(w->p, 'x', fill);
	w->p += fill;
}

static void put_piece(struct jw *w, int piece)
{
	static const uint8_t bytes[] = { 0xde, 0xad };
	/* the longest numbers: a list then fills its bound to the comma */
	static const uint32_t u32s[] = { 4294967295u, 4294967295u, 4294967295u };
	static const uint64_t u64s[] = { 18446744073709551615ull, 18446744073709551615ull };
	static const uint64_t hashes[] = { 2, 3 };
	switch (piece) {
	case 0: jw_put_lit(w, "lit"); break;
	case 1: jw_put_char(w, 'c'); break;
	case 2: jw_put_u64(w, UINT64_MAX); break;
	case 3: jw_put_i64(w, INT64_MIN); break;
	case 4: jw_put_hash(w, 1); break;
	case 5: jw_put_double(w, -2.2250738585072014e-308); break;
	case 6: jw_put_real(w, -1.2345678901234567e-300, 17); break;
	case 7: jw_put_ms_as_seconds(w, INT64_MIN); break;
	case 8: jw_put_str(w, "a\"\x01\x1f", 4); break;
	case 9: jw_put_cstr(w, "q"); break;
	case 10: jw_put_hex_str(w, bytes, sizeof bytes); break;
	case 11: jw_put_u32_list(w, u32s, 3); break;
	case 12: jw_put_u64_list(w, u64s, 2); break;
	case 13: jw_put_hash_list(w, hashes, 2); break;
	case 14: jw_put_hash_list(w, hashes, 0); break;
	case 15: jw_put_raw(w, "raw", 3); break;
	}
}

/* Each piece, with any room left from none up to more than it needs:
 * never past the end of the buffer, and the text exact. */
static void every_piece_makes_its_room(void)
{
	static const char *const want[] = {
		"lit", "c", "18446744073709551615", "-9223372036854775808", "\"0x0000000000000001\"",
		"-2.2250738585072014e-308", "-1.2345678901234568e-300", "-9223372036854775.808",
		"\"a\\\"\\u0001\\u001f\"", "\"q\"", "\"dead\"", "4294967295,4294967295,4294967295",
		"18446744073709551615,18446744073709551615",
		"\"0x0000000000000002\",\"0x0000000000000003\"", "", "raw",
	};
	for (int piece = 0; piece < (int)(sizeof want / sizeof want[0]); piece++)
		for (size_t room = 0; room < 64; room++) {
			struct kv_out o;
			struct jw w;
			kv_out_open_mem(&o);
			jw_begin(&w, &o);
			leave_room(&w, room);
			size_t before = (size_t)(w.p - o.buf);
			put_piece(&w, piece);
			/* the writer's invariant: never past the end of its buffer */
			ASSERT(w.p <= w.end);
			ASSERT(w.end == o.buf + o.cap);
			jw_end(&w);
			ASSERT_EQ_U64(o.len, before + strlen(want[piece]));
			if (memcmp(o.buf + before, want[piece], strlen(want[piece])) != 0)
				printf("# piece %d: %.*s\n", piece, (int)(o.len - before), o.buf + before);
			ASSERT(memcmp(o.buf + before, want[piece], strlen(want[piece])) == 0);
			kv_out_free_mem(&o);
		}
}

/* Pieces of every size, far past the first buffer: the text is exact. */
static void long_records(void)
{
	struct kv_out o, want;
	struct jw w;
	kv_out_open_mem(&o);
	kv_out_open_mem(&want);
	jw_begin(&w, &o);
	char s[300];
	for (int i = 0; i < 3000; i++) {
		size_t n = (size_t)i % sizeof s;
		memset(s, "\x01" "a\"" "\xff"[i % 4], n);
		jw_put_str(&w, s, n);
		jw_put_char(&w, ',');
		ASSERT(w.p <= w.end);
		char *p = kv_out_reserve(&want, JW_STR_MAX(n) + 1);
		p = jw_str(p, s, n);
		*p++ = ',';
		want.len = (size_t)(p - want.buf);
	}
	jw_end(&w);
	ASSERT(o.len > 1000000);
	ASSERT_EQ_U64(o.len, want.len);
	ASSERT(memcmp(o.buf, want.buf, o.len) == 0);
	kv_out_free_mem(&o);
	kv_out_free_mem(&want);
}

static off_t file_size(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 ? st.st_size : -1;
}

/* A record longer than the file buffer stays whole in memory until jw_end:
 * a failed flush can then cut the file back to whole records. */
static void never_flushes_a_record_in_two(void)
{
	char path[] = "/tmp/kvtools-unit-XXXXXX";
	int fd = mkstemp(path);
	ASSERT(fd >= 0);
	close(fd);
	struct kv_out o;
	struct kv_err e = { 0 };
	ASSERT(kv_out_open(&o, path, &e));
	size_t cap = o.cap;
	struct jw w;
	jw_begin(&w, &o);
	for (size_t i = 0; i < cap / 10; i++)
		jw_put_lit(&w, "0123456789ab");
	jw_put_char(&w, '\n');
	int check = open(path, O_RDONLY);
	ASSERT(file_size(check) == 0);
	jw_end(&w);
	size_t record = o.len;
	ASSERT(record == cap / 10 * 12 + 1);
	ASSERT(kv_out_flush(&o));
	ASSERT(file_size(check) == (off_t)record);
	jw_begin(&w, &o);
	jw_put_lit(&w, "{}\n");
	jw_end(&w);
	ASSERT(kv_out_close(&o, &e));
	ASSERT(file_size(check) == (off_t)record + 3);
	close(check);
	unlink(path);
}

/* jw_begin flushes when less than JW_BEGIN_ROOM is left, and only then. */
static void begin_flushes_when_nearly_full(void)
{
	static char filler[1 << 20];
	struct kv_out o;
	struct kv_err e = { 0 };
	ASSERT(kv_out_open(&o, "/dev/null", &e));
	ASSERT(o.cap <= sizeof filler);
	struct jw w;
	kv_out_write(&o, filler, o.cap - JW_BEGIN_ROOM);
	jw_begin(&w, &o);
	ASSERT_EQ_U64(o.len, o.cap - JW_BEGIN_ROOM);
	jw_end(&w);
	kv_out_write(&o, filler, 1);
	jw_begin(&w, &o);
	ASSERT_EQ_U64(o.len, 0);
	jw_end(&w);
	ASSERT(kv_out_close(&o, &e));
}

static const char *jansson_real(double v, int digits)
{
	static char buf[64];
	json_t *r = json_real(v);
	char *s = json_dumps(r, JSON_ENCODE_ANY | JSON_REAL_PRECISION(digits));
	snprintf(buf, sizeof buf, "%s", s ? s : "?");
	free(s);
	json_decref(r);
	return buf;
}

static const char *ours(double v, int digits)
{
	static char buf[64];
	*jw_real(buf, v, digits) = 0;
	return buf;
}

static void reals_as_jansson_writes_them(void)
{
	static const double cases[] = { 0, 1, -1, 0.5, 0.1, 1e21, 1e-7, 1.5e-7, 123456789, 1234567, 0.0337318123,
					1e100, -1e-100, 5e-324, 1.7976931348623157e308, 100000, 1e5 + 0.5, 2.5e-5 };
	static const int digits[] = { 6, 17, 1, 15 };
	for (size_t d = 0; d < sizeof digits / sizeof digits[0]; d++) {
		for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
			if (strcmp(ours(cases[i], digits[d]), jansson_real(cases[i], digits[d])) != 0) {
				printf("# %.17g (%d digits): %s, jansson %s\n", cases[i], digits[d], ours(cases[i], digits[d]),
				       jansson_real(cases[i], digits[d]));
				ASSERT(0);
			}
		for (int i = 0; i < 20000; i++) {
			uint64_t bits = unit_rand();
			double v;
			memcpy(&v, &bits, sizeof v);
			if (!isfinite(v))
				continue;
			if (i % 2)
				v = (double)(bits % 1000000) / (double)(1 + unit_rand() % 100000);
			if (strcmp(ours(v, digits[d]), jansson_real(v, digits[d])) != 0) {
				printf("# %.17g (%d digits): %s, jansson %s\n", v, digits[d], ours(v, digits[d]),
				       jansson_real(v, digits[d]));
				ASSERT(0);
			}
		}
	}
	ASSERT(strcmp(ours(NAN, 6), "null") == 0);
	ASSERT(strcmp(ours(1e21, 6), "1e21") == 0);
	ASSERT(strcmp(ours(0.25, 6), "0.25") == 0);
	ASSERT(strcmp(ours(3, 17), "3.0") == 0);
}

static int same_as_printf(uint64_t v)
{
	char want[32], got[32];
	snprintf(want, sizeof want, "%llu", (unsigned long long)v);
	*jw_u64(got, v) = 0;
	if (strcmp(got, want) != 0)
		return printf("# %s: %s\n", want, got), 0;
	snprintf(want, sizeof want, "%lld", (long long)(int64_t)v);
	*jw_i64(got, (int64_t)v) = 0;
	if (strcmp(got, want) != 0)
		return printf("# %s: %s\n", want, got), 0;
	return 1;
}

/* Integers digit for digit as printf writes them: each power of ten and
 * its neighbours, and many others. */
static void integers_as_printf_writes_them(void)
{
	ASSERT(same_as_printf(0) && same_as_printf(UINT64_MAX) && same_as_printf((uint64_t)INT64_MIN));
	for (uint64_t t = 1; t <= 10000000000000000000ull; t *= 10) {
		ASSERT(same_as_printf(t - 1) && same_as_printf(t) && same_as_printf(t + 1));
		if (t == 10000000000000000000ull)
			break;
	}
	for (int i = 0; i < 200000; i++) {
		uint64_t v = unit_rand();
		ASSERT(same_as_printf(v) && same_as_printf(v >> (v % 64)) && same_as_printf(v % 100000));
	}
	static const uint32_t u32s[] = { 0, 9, 10, 99, 100, 4294967295u };
	char buf[128];
	*jw_u32_list(buf, u32s, 6) = 0;
	ASSERT(strcmp(buf, "0,9,10,99,100,4294967295") == 0);
	*jw_u32_list(buf, u32s, 0) = 0;
	ASSERT(strcmp(buf, "") == 0);
}

int main(void)
{
	RUN(every_piece_makes_its_room);
	RUN(long_records);
	RUN(never_flushes_a_record_in_two);
	RUN(begin_flushes_when_nearly_full);
	RUN(reals_as_jansson_writes_them);
	RUN(integers_as_printf_writes_them);
	return unit_done();
}

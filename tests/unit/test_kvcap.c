/* kvcap writer and reader: round trip, concatenated captures, every
 * truncation reported, garbage refused, a header of another version, the
 * record limit; and the message frame rule.  kvdecode, kvmatch, kvpub and
 * kvnats -P read captures through this one reader (kv_cap_next). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode/kvcap.h"
#include "decode/mpscan.h"
#include "unit.h"
#include "base/util.h"

/* Writes a small capture (header + 3 records) and returns its bytes. */
static uint8_t *small_capture(size_t *len)
{
	char tmpl[] = "/tmp/kvtools-unit-XXXXXX";
	int fd = mkstemp(tmpl);
	struct kv_out o;
	struct kv_err e = { 0 };
	o.fd = -1;
	if (fd < 0 || !kv_out_open(&o, tmpl, &e))
		abort();
	close(fd);
	kv_cap_write_header(&o, "unit", 42);
	for (uint64_t i = 0; i < 3; i++) {
		uint8_t seq[8], payload[300];
		memset(payload, (int)i, sizeof payload);
		kv_seq_encode(i + 7, seq);
		struct kv_frame f[3] = { { (const uint8_t *)"kv", 2 }, { seq, 8 }, { payload, 10 + 100 * i } };
		kv_cap_write_record(&o, 1000 + i, "tcp://h:1", 9, i == 2 ? KV_CAP_FLAG_REPLAYED : 0, f, 3);
	}
	if (!kv_out_close(&o, &e))
		abort();
	int in = open(tmpl, O_RDONLY);
	*len = (size_t)lseek(in, 0, SEEK_END);
	uint8_t *b = malloc(*len);
	if (pread(in, b, *len, 0) != (ssize_t)*len)
		abort();
	close(in);
	unlink(tmpl);
	return b;
}

/* Reads bytes through a pipe-free path: a temporary file. */
static int read_all(const uint8_t *b, size_t len, int *records, int *headers, char *err, size_t errlen)
{
	char path[] = "/tmp/kvtools-unit-XXXXXX";
	int fd = mkstemp(path);
	if (write(fd, b, len) != (ssize_t)len)
		abort();
	lseek(fd, 0, SEEK_SET);
	unlink(path);
	struct kv_cap_reader r;
	struct kv_record rec;
	kv_cap_open(&r, fd, "t");
	int st;
	*records = *headers = 0;
	while ((st = kv_cap_next(&r, &rec)) == KV_CAP_RECORD || st == KV_CAP_HEADER || st == KV_CAP_SKIP) {
		if (st == KV_CAP_RECORD)
			(*records)++;
		if (st == KV_CAP_HEADER)
			(*headers)++;
	}
	snprintf(err, errlen, "%s", r.error);
	kv_cap_close(&r);
	close(fd);
	return st;
}

static void round_trip(void)
{
	size_t len;
	uint8_t *b = small_capture(&len);
	char path[] = "/tmp/kvtools-unit-XXXXXX";
	int fd = mkstemp(path);
	ASSERT(write(fd, b, len) == (ssize_t)len);
	lseek(fd, 0, SEEK_SET);
	unlink(path);
	struct kv_cap_reader r;
	struct kv_record rec;
	kv_cap_open(&r, fd, "t");
	ASSERT(kv_cap_next(&r, &rec) == KV_CAP_HEADER);
	for (uint64_t i = 0; i < 3; i++) {
		ASSERT(kv_cap_next(&r, &rec) == KV_CAP_RECORD);
		ASSERT_EQ_U64(rec.recv_ns, 1000 + i);
		ASSERT(rec.src_len == 9 && memcmp(rec.src, "tcp://h:1", 9) == 0);
		ASSERT_EQ_U64(rec.flags, i == 2 ? 1 : 0);
		ASSERT_EQ_U64(rec.nframes, 3);
		ASSERT_EQ_U64(rec.number, i + 1);
		struct kv_msg_parts m;
		kv_msg_split(rec.frames, rec.nframes, &m);
		ASSERT(m.has_seq);
		ASSERT_EQ_U64(m.seq, i + 7);
		ASSERT(m.topic.n == 2 && memcmp(m.topic.p, "kv", 2) == 0);
		ASSERT_EQ_U64(m.payload.n, 10 + 100 * i);
		ASSERT(m.payload.p[0] == i && m.payload.p[m.payload.n - 1] == i);
	}
	ASSERT(kv_cap_next(&r, &rec) == KV_CAP_EOF);
	kv_cap_close(&r);
	close(fd);
	free(b);
}

static void concatenated(void)
{
	size_t len;
	uint8_t *b = small_capture(&len);
	uint8_t *two = malloc(2 * len);
	memcpy(two, b, len);
	memcpy(two + len, b, len);
	int records, headers;
	char err[200];
	int st = read_all(two, 2 * len, &records, &headers, err, sizeof err);
	free(two);
	free(b);
	ASSERT(st == KV_CAP_EOF);
	ASSERT_EQ_U64(records, 6);
	ASSERT_EQ_U64(headers, 2);
}

/* Cutting the stream anywhere yields the complete records before the cut and
 * an error naming the byte where the cut record starts, or a clean EOF when
 * the cut falls on a boundary. */
static void truncation_everywhere(void)
{
	size_t len;
	uint8_t *b = small_capture(&len);
	size_t bounds[5], nb = 0, off = 0, sz;
	while (off < len) {
		bounds[nb++] = off;
		ASSERT(kv_mp_scan(b + off, len - off, &kv_payload_limits, &sz) == KV_MP_OK);
		off += sz;
	}
	bounds[nb] = len;
	ASSERT_EQ_U64(nb, 4);
	for (size_t cut = 0; cut < len; cut++) {
		int records, headers;
		char err[200], want[80];
		int st = read_all(b, cut, &records, &headers, err, sizeof err);
		size_t k = 0;
		while (k + 1 <= nb && bounds[k + 1] <= cut)
			k++;
		if (cut == bounds[k]) {
			ASSERT(st == KV_CAP_EOF);
		} else {
			ASSERT(st == KV_CAP_ERROR);
			snprintf(want, sizeof want, "truncated record at byte %zu", bounds[k]);
			ASSERT(strcmp(err, want) == 0);
		}
		ASSERT_EQ_U64(records + headers, k);
	}
	free(b);
}

static void garbage_refused(void)
{
	static const uint8_t bad[] = { 0x81, 0xa5, 'k', 'v', 'c', 'a', 'p', 0x01, 0xc1, 0x00 };
	int records, headers;
	char err[200];
	ASSERT(read_all(bad, sizeof bad, &records, &headers, err, sizeof err) == KV_CAP_ERROR);
	ASSERT(strcmp(err, "byte 8: invalid MessagePack byte 0xc1") == 0);
	ASSERT_EQ_U64(headers, 1);
	/* A 4 GiB array claim is refused at once, without reading or allocating it. */
	static const uint8_t bomb[] = { 0xdd, 0xff, 0xff, 0xff, 0xff, 0x00 };
	ASSERT(read_all(bomb, sizeof bomb, &records, &headers, err, sizeof err) == KV_CAP_ERROR);
	ASSERT(strcmp(err, "byte 0: object larger than the record limit") == 0);
}

static void not_a_record_is_skipped(void)
{
	/* A header; [1, "s", 0, [1]]: a frame that is not binary; then a good record. */
	static const uint8_t b[] = { 0x81, 0xa5, 'k', 'v', 'c', 'a', 'p', 0x01,
				     0x94, 0x01, 0xa1, 's', 0x00, 0x91, 0x01,
				     0x94, 0x02, 0xa1, 's', 0x00, 0x91, 0xc4, 0x01, 'x' };
	char path[] = "/tmp/kvtools-unit-XXXXXX";
	int fd = mkstemp(path);
	ASSERT(write(fd, b, sizeof b) == (ssize_t)sizeof b);
	lseek(fd, 0, SEEK_SET);
	unlink(path);
	struct kv_cap_reader r;
	struct kv_record rec;
	kv_cap_open(&r, fd, "t");
	ASSERT(kv_cap_next(&r, &rec) == KV_CAP_HEADER);
	ASSERT(kv_cap_next(&r, &rec) == KV_CAP_SKIP);
	ASSERT(strcmp(r.error, "record 1 (byte 8): a frame is not binary") == 0);
	ASSERT(kv_cap_next(&r, &rec) == KV_CAP_RECORD);
	ASSERT_EQ_U64(rec.number, 2);
	ASSERT_EQ_U64(rec.recv_ns, 2);
	ASSERT(kv_cap_next(&r, &rec) == KV_CAP_EOF);
	kv_cap_close(&r);
	close(fd);
}

/* A first object that is no header makes the input no capture, even when
 * valid records follow: a map without "kvcap", a record, anything else. */
static void header_required(void)
{
	static const uint8_t map_first[] = { 0x81, 0xa1, 'x', 0x01,
					     0x94, 0x02, 0xa1, 's', 0x00, 0x91, 0xc4, 0x01, 'x' };
	static const uint8_t record_first[] = { 0x94, 0x02, 0xa1, 's', 0x00, 0x91, 0xc4, 0x01, 'x' };
	static const uint8_t int_first[] = { 0x7b, 0x81, 0xa5, 'k', 'v', 'c', 'a', 'p', 0x01 };
	const struct { const uint8_t *b; size_t n; } cases[] = {
		{ map_first, sizeof map_first }, { record_first, sizeof record_first }, { int_first, sizeof int_first },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int records, headers;
		char err[200];
		ASSERT(read_all(cases[i].b, cases[i].n, &records, &headers, err, sizeof err) == KV_CAP_ERROR);
		ASSERT(strcmp(err, "not a kvcap capture (it does not start with a kvcap header)") == 0);
		ASSERT_EQ_U64(records + headers, 0);
	}
	/* An empty input is an empty capture, not an error. */
	int records, headers;
	char err[200];
	ASSERT(read_all(map_first, 0, &records, &headers, err, sizeof err) == KV_CAP_EOF);
}

/* A header of another version, first or after records (a concatenation):
 * the input is refused there, with the version it claims. */
static void header_version_refused(void)
{
	static const uint8_t v2[] = { 0x81, 0xa5, 'k', 'v', 'c', 'a', 'p', 0x02 };
	static const uint8_t neg[] = { 0x81, 0xa5, 'k', 'v', 'c', 'a', 'p', 0xff };
	static const uint8_t str[] = { 0x81, 0xa5, 'k', 'v', 'c', 'a', 'p', 0xa1, '1' };
	static const uint8_t later[] = { 0x81, 0xa5, 'k', 'v', 'c', 'a', 'p', 0x01,
					 0x94, 0x02, 0xa1, 's', 0x00, 0x91, 0xc4, 0x01, 'x',
					 0x81, 0xa5, 'k', 'v', 'c', 'a', 'p', 0x03,
					 0x94, 0x03, 0xa1, 's', 0x00, 0x91, 0xc4, 0x01, 'y' };
	const struct { const uint8_t *b; size_t n; const char *why; int records, headers; } cases[] = {
		{ v2, sizeof v2, "byte 0: kvcap header with version 2 (this kvtools reads version 1)", 0, 0 },
		{ neg, sizeof neg, "byte 0: kvcap header with version -1 (this kvtools reads version 1)", 0, 0 },
		{ str, sizeof str, "byte 0: kvcap header with a version that is not an integer (this kvtools reads version 1)",
		  0, 0 },
		{ later, sizeof later, "byte 17: kvcap header with version 3 (this kvtools reads version 1)", 1, 1 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int records, headers;
		char err[200];
		ASSERT(read_all(cases[i].b, cases[i].n, &records, &headers, err, sizeof err) == KV_CAP_ERROR);
		ASSERT_EQ_STR(err, cases[i].why);
		ASSERT_EQ_U64(records, cases[i].records);
		ASSERT_EQ_U64(headers, cases[i].headers);
	}
}

/* A header, then a record of one bin frame of size bytes in all. */
static uint8_t *record_of_size(size_t size, size_t *len)
{
	static const uint8_t head[] = { 0x81, 0xa5, 'k', 'v', 'c', 'a', 'p', 0x01 };
	static const uint8_t rec[] = { 0x94, 0x01, 0xa1, 's', 0x00, 0x91, 0xc6 };
	size_t data = size - sizeof rec - 4;
	*len = sizeof head + size;
	uint8_t *b = calloc(1, *len), *p = b;
	if (!b)
		abort();
	memcpy(p, head, sizeof head), p += sizeof head;
	memcpy(p, rec, sizeof rec), p += sizeof rec;
	for (int k = 3; k >= 0; k--)
		*p++ = (uint8_t)(data >> (8 * k));
	return b;
}

/* kvcap(5): a record of KV_CAP_MAX_RECORD bytes is read; one byte more is
 * refused, named by the byte where it starts. */
static void record_limit(void)
{
	size_t len;
	int records, headers;
	char err[200];
	uint8_t *b = record_of_size(KV_CAP_MAX_RECORD, &len);
	ASSERT(read_all(b, len, &records, &headers, err, sizeof err) == KV_CAP_EOF);
	ASSERT_EQ_U64(records, 1);
	free(b);
	b = record_of_size(KV_CAP_MAX_RECORD + 1, &len);
	ASSERT(read_all(b, len, &records, &headers, err, sizeof err) == KV_CAP_ERROR);
	ASSERT_EQ_STR(err, "byte 8: object larger than the record limit");
	ASSERT_EQ_U64(records, 0);
	ASSERT_EQ_U64(headers, 1);
	free(b);
}

static void frame_rule(void)
{
	uint8_t seq[8];
	kv_seq_encode(0x0102030405060708ull, seq);
	struct kv_frame f3[3] = { { (const uint8_t *)"t", 1 }, { seq, 8 }, { (const uint8_t *)"p", 1 } };
	struct kv_msg_parts m;
	kv_msg_split(f3, 3, &m);
	ASSERT(m.has_seq && m.seq == 0x0102030405060708ull && m.payload.p[0] == 'p');
	struct kv_frame bad[3] = { f3[0], { seq, 7 }, f3[2] };
	kv_msg_split(bad, 3, &m);
	ASSERT(!m.has_seq && m.payload.n == 1);
	kv_msg_split(&f3[2], 1, &m);
	ASSERT(!m.has_seq && m.topic.n == 0 && m.payload.p[0] == 'p');
	struct kv_frame f4[4] = { f3[0], f3[1], { (const uint8_t *)"x", 1 }, { (const uint8_t *)"last", 4 } };
	kv_msg_split(f4, 4, &m);
	ASSERT(m.payload.n == 4 && m.has_seq);
}

/* kv_mp_scan steps over runs of scalars in a loop of its own: the limits
 * and truncations inside a run must come out as they do one object at a
 * time. */
static void scan_runs(void)
{
	/* [1, 2 (uint16), nil, -1, 3 (uint32)]: 6 objects, 12 bytes */
	static const uint8_t a[] = { 0x95, 0x01, 0xcd, 0x00, 0x02, 0xc0, 0xff, 0xce, 0, 0, 0, 3, 0x07 };
	size_t sz = 0;
	struct kv_mp_limits lim = { 32, 6, 100 };
	ASSERT(kv_mp_scan(a, sizeof a, &lim, &sz) == KV_MP_OK);
	ASSERT_EQ_U64(sz, 12);
	lim.max_objects = 5;
	ASSERT(kv_mp_scan(a, sizeof a, &lim, &sz) == KV_MP_BIG);
	lim.max_objects = 6;
	/* cut inside the uint16 and inside the uint32: short, never ok */
	for (size_t cut = 0; cut < 12; cut++)
		ASSERT(kv_mp_scan(a, cut, &lim, &sz) == KV_MP_SHORT);
	/* a run that ends at a map: the map's children are counted too */
	static const uint8_t m[] = { 0x93, 0x01, 0x81, 0x02, 0x03, 0x04 };
	lim.max_objects = 6;
	ASSERT(kv_mp_scan(m, sizeof m, &lim, &sz) == KV_MP_OK);
	ASSERT_EQ_U64(sz, 6);
	lim.max_objects = 5;
	ASSERT(kv_mp_scan(m, sizeof m, &lim, &sz) == KV_MP_BIG);
	/* a bad byte after a run */
	static const uint8_t bad[] = { 0x93, 0x01, 0x02, 0xc1 };
	lim.max_objects = 10;
	ASSERT(kv_mp_scan(bad, sizeof bad, &lim, &sz) == KV_MP_BAD);
}

/* A header that names the stream its records come from (kvnats -C): read
 * back whole; any of its keys missing or of another type, no stream; and
 * the same header without those keys (kvnats -P publishing it anew). */
static void stream_header(void)
{
	struct kv_out o, q;
	kv_out_open_mem(&o);
	kv_out_open_mem(&q);
	msgpack_zone z;
	msgpack_zone_init(&z, 1024);
	const struct kv_cap_stream in = { "R3", 2, 1764500000123456789ull, 41 };
	kv_cap_write_stream_header(&o, "kvnats 0.1.0", 7, &in);
	struct kv_record rec;
	const char *why = NULL;
	ASSERT(kv_cap_classify((const uint8_t *)o.buf, o.len, &z, &rec, &why) == KV_CAP_HEADER);
	struct kv_cap_stream st;
	ASSERT(kv_cap_header_stream((const uint8_t *)o.buf, o.len, &z, &st));
	ASSERT(st.name_len == 2 && memcmp(st.name, "R3", 2) == 0 && st.created_ns == in.created_ns && st.after == 41);
	ASSERT(kv_cap_header_without_stream((const uint8_t *)o.buf, o.len, &z, &q));
	struct kv_out plain;
	kv_out_open_mem(&plain);
	kv_cap_write_header(&plain, "kvnats 0.1.0", 7);
	ASSERT(q.len == plain.len && memcmp(q.buf, plain.buf, q.len) == 0);
	/* a plain header names none, and has none to drop */
	ASSERT(!kv_cap_header_stream((const uint8_t *)plain.buf, plain.len, &z, &st));
	q.len = 0;
	ASSERT(!kv_cap_header_without_stream((const uint8_t *)plain.buf, plain.len, &z, &q) && q.len == 0);
	/* one key of the wrong type, or missing: no stream */
	static const char *const bad[] = {
		"\x84\xa5kvcap\x01\xa6stream\xa2R3\xaestream_created\x05\xacstream_after\xa1x",
		"\x84\xa5kvcap\x01\xa6stream\x03\xaestream_created\x05\xacstream_after\x06",
		"\x83\xa5kvcap\x01\xa6stream\xa2R3\xaestream_created\x05",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		size_t n = strlen(bad[i]);
		ASSERT(kv_cap_classify((const uint8_t *)bad[i], n, &z, &rec, &why) == KV_CAP_HEADER);
		ASSERT(!kv_cap_header_stream((const uint8_t *)bad[i], n, &z, &st));
	}
	msgpack_zone_destroy(&z);
	kv_out_free_mem(&o);
	kv_out_free_mem(&q);
	kv_out_free_mem(&plain);
}

int main(void)
{
	RUN(round_trip);
	RUN(concatenated);
	RUN(truncation_everywhere);
	RUN(garbage_refused);
	RUN(not_a_record_is_skipped);
	RUN(header_required);
	RUN(header_version_refused);
	RUN(record_limit);
	RUN(frame_rule);
	RUN(scan_runs);
	RUN(stream_header);
	return unit_done();
}

#include "decode/source.h"
#include "base/input.h"
#include "base/lines.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An event JSON line longer than this is skipped: kvmatch(1), LIMITS. */
#define MAX_JSON_LINE (64u << 20)

struct kv_source {
	char *const *files;
	size_t nfiles, next;
	struct kv_source_opts opts;
	unsigned open_failures;
	uint64_t bytes_done;           /* taken from the inputs closed */
	/* the input being read */
	bool open;
	int fd;
	const char *name;
	enum kv_input_kind kind;
	struct kv_cap_reader cap;      /* kvcap and payload streams */
	uint64_t payloads;
	struct kv_lines lines;         /* JSON lines */
	struct kv_evjson_reader *json;
	struct kv_event json_event;
	/* decoding */
	struct kv_wire wire;
	char error[240];
	struct kv_cap_stream stream;   /* the last header naming a stream, its name in stream_name */
	char *stream_name;
	size_t stream_cap;
};

struct kv_source *kv_source_new(char *const *files, size_t nfiles, const struct kv_source_opts *opts)
{
	static char *const stdin_only[] = { "-" };
	struct kv_source *s = kv_xcalloc(1, sizeof *s);
	s->files = nfiles ? files : stdin_only;
	s->nfiles = nfiles ? nfiles : 1;
	s->opts = *opts;
	kv_wire_init(&s->wire, &opts->wire);
	return s;
}

unsigned kv_source_open_failures(const struct kv_source *s)
{
	return s->open_failures;
}

/* The bytes taken from the input being read. */
static uint64_t taken(const struct kv_source *s)
{
	return s->kind == KV_IN_JSON ? kv_lines_taken(&s->lines) : kv_mps_taken(&s->cap.in);
}

uint64_t kv_source_bytes(const struct kv_source *s)
{
	return s->bytes_done + (s->open ? taken(s) : 0);
}

static void close_input(struct kv_source *s)
{
	if (!s->open)
		return;
	s->bytes_done += taken(s);
	if (s->kind == KV_IN_JSON)
		kv_lines_free(&s->lines);
	else
		kv_cap_close(&s->cap);
	kv_input_close(s->fd);
	s->open = false;
}

void kv_source_free(struct kv_source *s)
{
	close_input(s);
	free(s->stream_name);
	kv_wire_free(&s->wire);
	kv_evjson_reader_free(s->json);
	free(s);
}

/* Opens the next input and decides what it holds: BATCH when one is
 * open, END when none is left, UNOPENED (e) when the next one failed. */
static enum kv_source_status open_next(struct kv_source *s, struct kv_err *e)
{
	if (s->next < s->nfiles) {
		int fd;
		if (!kv_input_open_named(s->files[s->next++], &fd, &s->name, e)) {
			s->open_failures++;
			return KV_SOURCE_UNOPENED;
		}
		s->fd = fd;
		s->open = true;
		s->payloads = 0;
		kv_cap_open(&s->cap, fd, s->name);
		s->cap.in.in.idle = s->opts.idle;
		s->cap.in.in.idle_arg = s->opts.idle_arg;
		const uint8_t *p;
		size_t n = kv_mps_peek(&s->cap.in, 1, &p);
		if (s->opts.payload)
			s->kind = KV_IN_PAYLOAD;
		else if (n == 0 || kv_cap_sniff(p, n) || !s->opts.allow_json)
			s->kind = KV_IN_KVCAP;
		else {
			/* Hand what was read already to the line reader. */
			s->kind = KV_IN_JSON;
			n = s->cap.in.len - s->cap.in.pos;
			kv_lines_init(&s->lines, fd, MAX_JSON_LINE, p, n);
			s->lines.in.idle = s->opts.idle;
			s->lines.in.idle_arg = s->opts.idle_arg;
			kv_cap_close(&s->cap);
			if (!s->json)
				s->json = kv_evjson_reader_new();
		}
		return KV_SOURCE_BATCH;
	}
	return KV_SOURCE_END;
}

static void batch_init(struct kv_source *s, struct kv_batch *b)
{
	memset(b, 0, sizeof *b);
	b->file = s->name;
	b->kind = s->kind;
}

static void decode_payload(struct kv_source *s, struct kv_batch *b, const uint8_t *p, size_t n)
{
	if (!kv_wire_decode(&s->wire, &b->ctx, p, n)) {
		snprintf(s->error, sizeof s->error, "%s", s->wire.error);
		b->error = s->error;
		return;
	}
	b->ev = s->wire.ev;
	b->nev = s->wire.nev;
	b->nissues = s->wire.nissues;
	b->issues = (const char (*)[160])s->wire.issues;
	b->ignored = s->wire.ignored;
}

/* A fatal read problem ends this input after reporting it as a batch. */
static void fatal(struct kv_source *s, struct kv_batch *b, const char *msg)
{
	snprintf(s->error, sizeof s->error, "%s", msg);
	b->error = s->error;
	b->fatal = true;
	close_input(s);
}

/* Whether a header names a stream: then kept for the batch (b->stream). */
static bool stream_named(struct kv_source *s, const struct kv_record *header)
{
	struct kv_cap_stream st;
	if (!kv_cap_header_stream(header->raw, header->raw_len, &s->cap.zone, &st))
		return false;
	s->stream_name = kv_xgrow(s->stream_name, &s->stream_cap, st.name_len + 1, 1);
	memcpy(s->stream_name, st.name, st.name_len);
	s->stream_name[st.name_len] = 0;
	st.name = s->stream_name;
	s->stream = st;
	return true;
}

static enum kv_source_status next_kvcap(struct kv_source *s, struct kv_batch *b, bool *got)
{
	struct kv_record rec;
	enum kv_cap_status st = kv_cap_next(&s->cap, &rec);
	*got = true;
	switch (st) {
	case KV_CAP_EOF:
		close_input(s);
		*got = false;
		return KV_SOURCE_BATCH;
	case KV_CAP_STOPPED:
		return KV_SOURCE_STOPPED;
	case KV_CAP_ERROR: {
		char msg[sizeof s->cap.error + 40];
		snprintf(msg, sizeof msg, "%s%s", s->cap.error,
			 s->cap.not_capture ? "; --payload reads bare payloads" : "");
		b->record = s->cap.records + 1;
		fatal(s, b, msg);
		return KV_SOURCE_BATCH;
	}
	case KV_CAP_HEADER:
		*got = s->opts.stream_headers && stream_named(s, &rec);
		b->stream = *got ? &s->stream : NULL;
		return KV_SOURCE_BATCH;
	case KV_CAP_SKIP:
	case KV_CAP_RECORD:
		break;
	}
	b->record = rec.number;
	if (st == KV_CAP_SKIP) {
		snprintf(s->error, sizeof s->error, "%s", strchr(s->cap.error, ':') ? strchr(s->cap.error, ':') + 2 : s->cap.error);
		b->error = s->error;
		return KV_SOURCE_BATCH;
	}
	struct kv_msg_parts m;
	kv_msg_split(rec.frames, rec.nframes, &m);
	b->ctx.src = (struct kv_str){ rec.src, rec.src_len };
	b->ctx.topic = (struct kv_str){ (const char *)m.topic.p, m.topic.n };
	b->ctx.recv_ns = rec.recv_ns;
	b->ctx.has_seq = m.has_seq;
	b->ctx.seq = m.seq;
	b->ctx.replayed = rec.flags & KV_CAP_FLAG_REPLAYED;
	b->ctx.has_position = rec.has_position;
	b->ctx.position = rec.position;
	decode_payload(s, b, m.payload.p, m.payload.n);
	return KV_SOURCE_BATCH;
}

static enum kv_source_status next_payload(struct kv_source *s, struct kv_batch *b, bool *got)
{
	const uint8_t *p;
	size_t n;
	uint64_t off;
	*got = true;
	switch (kv_mps_next(&s->cap.in, &p, &n, &off)) {
	case KV_MPS_EOF:
		close_input(s);
		*got = false;
		return KV_SOURCE_BATCH;
	case KV_MPS_STOPPED:
		return KV_SOURCE_STOPPED;
	case KV_MPS_ERROR: {
		char msg[200];
		b->record = s->payloads + 1;
		if (strcmp(s->cap.in.error, "truncated") == 0)
			snprintf(msg, sizeof msg, "truncated payload at byte %llu", (unsigned long long)s->cap.in.error_off);
		else
			snprintf(msg, sizeof msg, "byte %llu: %s", (unsigned long long)s->cap.in.error_off, s->cap.in.error);
		fatal(s, b, msg);
		return KV_SOURCE_BATCH;
	}
	case KV_MPS_OBJECT:
		break;
	}
	b->record = ++s->payloads;
	b->ctx.src = (struct kv_str){ "", 0 };
	b->ctx.topic = (struct kv_str){ "", 0 };
	decode_payload(s, b, p, n);
	return KV_SOURCE_BATCH;
}

static enum kv_source_status next_json(struct kv_source *s, struct kv_batch *b, bool *got)
{
	char *line;
	size_t n;
	*got = true;
	enum kv_lines_status st = kv_lines_next(&s->lines, &line, &n);
	b->record = s->lines.lineno;
	switch (st) {
	case KV_LINES_EOF:
		close_input(s);
		*got = false;
		return KV_SOURCE_BATCH;
	case KV_LINES_STOPPED:
		return KV_SOURCE_STOPPED;
	case KV_LINES_ERROR:
		fatal(s, b, strerror(s->lines.in.err));
		return KV_SOURCE_BATCH;
	case KV_LINES_LIMIT: /* a stream of lines has no bound on the whole (no max_total) */
		kv_die(KV_EX_SOFTWARE, "event lines: a bound on the whole input");
	case KV_LINE_TOO_LONG:
		snprintf(s->error, sizeof s->error, "line longer than %u bytes skipped", MAX_JSON_LINE);
		b->error = s->error;
		return KV_SOURCE_BATCH;
	case KV_LINE:
		break;
	}
	if (n == 0 || line[strspn(line, " \t")] == 0) {
		*got = false;
		return KV_SOURCE_BATCH;
	}
	struct kv_event *e = &s->json_event;
	enum kv_evjson_status js = kv_evjson_parse(s->json, line, n, e);
	if (js != KV_EVJSON_BAD && e->src.n > KV_CAP_MAX_SRC) {
		/* as in captures (kvcap.h): readers keep every source's name */
		snprintf(s->error, sizeof s->error, "src longer than %u bytes", KV_CAP_MAX_SRC);
		b->error = s->error;
		return KV_SOURCE_BATCH;
	}
	if (js != KV_EVJSON_BAD)
		b->ctx = kv_wire_ctx_of(e);
	switch (js) {
	case KV_EVJSON_BAD:
		snprintf(s->error, sizeof s->error, "%s", kv_evjson_error(s->json));
		b->error = s->error;
		break;
	case KV_EVJSON_ERROR_LINE:
		snprintf(s->error, sizeof s->error, "an error line from the decoder");
		b->error = s->error;
		break;
	case KV_EVJSON_NO_EVENTS:
	case KV_EVJSON_LOST:
		b->lost = js == KV_EVJSON_LOST;
		break;
	case KV_EVJSON_EVENT:
		b->ev = e;
		b->nev = 1;
		break;
	}
	return KV_SOURCE_BATCH;
}

enum kv_source_status kv_source_next(struct kv_source *s, struct kv_batch *b, struct kv_err *e)
{
	for (;;) {
		if (kv_stop_signal)
			return KV_SOURCE_STOPPED;
		enum kv_source_status opened = s->open ? KV_SOURCE_BATCH : open_next(s, e);
		if (opened != KV_SOURCE_BATCH)
			return opened;
		batch_init(s, b);
		bool got;
		enum kv_source_status st = s->kind == KV_IN_KVCAP ? next_kvcap(s, b, &got)
					   : s->kind == KV_IN_PAYLOAD ? next_payload(s, b, &got)
					   : next_json(s, b, &got);
		if (st != KV_SOURCE_BATCH || got)
			return st;
	}
}

void kv_source_skip_input(struct kv_source *s)
{
	close_input(s);
}

unsigned kv_batch_problem_lines(const struct kv_batch *b)
{
	return b->nissues > KV_WIRE_MAX_ISSUES ? KV_WIRE_MAX_ISSUES + 1 : b->nissues;
}

void kv_batch_where(const struct kv_batch *b, char *buf, size_t n)
{
	const char *unit = b->kind == KV_IN_JSON ? "line" : b->kind == KV_IN_PAYLOAD ? "payload" : "record";
	int k = snprintf(buf, n, "%s: %s %llu", b->file, unit, (unsigned long long)b->record);
	if (k < 0 || (size_t)k >= n || b->kind == KV_IN_PAYLOAD || (b->fatal && !b->ctx.src.n))
		return;
	if (b->ctx.has_seq)
		snprintf(buf + k, n - (size_t)k, " (%.*s, seq %llu)", (int)(b->ctx.src.n > 200 ? 200 : b->ctx.src.n),
			 b->ctx.src.p, (unsigned long long)b->ctx.seq);
	else if (b->ctx.src.n)
		snprintf(buf + k, n - (size_t)k, " (%.*s, no seq)", (int)(b->ctx.src.n > 200 ? 200 : b->ctx.src.n),
			 b->ctx.src.p);
}

#include "decode/source.h"
#include "base/input.h"
#include "base/lines.h"
#include "base/thread.h"
#include "base/util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An event JSON line longer than this is skipped: kvmatch(1), LIMITS. */
#define MAX_JSON_LINE (64u << 20)

/* Read-ahead (kv_source_opts.read_ahead): batches decoded and waiting for
 * the program, at most this many, and at most this many bytes of their
 * records besides the first (a capture of 48 MiB records keeps one, not
 * eight); buffers a batch grew past KEEP_BYTES are given back once it is
 * taken, so that one huge record does not stay in every slot. */
#define AHEAD_SLOTS 3
#define AHEAD_BYTES ((size_t)4 << 20)
#define KEEP_BYTES ((size_t)256 << 10)

/* What a batch points into: the decoder's buffers and the bytes of its
 * record.  Without read-ahead the source has one, and the record's bytes
 * stay in the reader's buffer until the next call; with it every slot has
 * its own, the bytes copied in, so that the batch the program holds is
 * not overwritten by those decoded after it. */
struct decoded {
	struct kv_wire wire;
	char error[240];
	struct kv_cap_stream stream;   /* the last header naming a stream, its name in stream_name */
	char *stream_name;
	size_t stream_cap;
	struct kv_evjson_reader *json;
	struct kv_event json_event;
	char *copy;                    /* the record's bytes (read-ahead only) */
	size_t copy_len, copy_cap;
};

/* A batch decoded ahead, or how the source ended or failed there. */
struct slot {
	enum kv_source_status st;
	struct kv_batch b;
	struct kv_err e;               /* KV_SOURCE_UNOPENED */
	uint64_t bytes;                /* kv_source_bytes once this batch is taken */
	size_t input;                  /* 1 + the index of its input */
	struct decoded d;
};

/* The queue between the decoding thread and the program: slots [head,
 * head + count) of the ring are decoded and waiting; the program holds
 * the one at head from one kv_source_next to the next. */
struct ahead {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t filled, freed;
	struct slot slots[AHEAD_SLOTS];
	size_t head, count;
	size_t bytes;                  /* of the records waiting, after the first */
	bool quit;                     /* the program wants no more */
	size_t skip;                   /* the program skips the rest of this input (1-based; 0 none) */
	/* the program's side */
	bool holding;                  /* the slot at head is the batch last returned */
	uint64_t taken;                /* kv_source_bytes */
	unsigned open_failures;
};

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
	struct decoded one;            /* without read-ahead */
	struct ahead *ahead;           /* with it */
};

static void decoded_init(struct decoded *d, const struct kv_source_opts *opts)
{
	memset(d, 0, sizeof *d);
	kv_wire_init(&d->wire, &opts->wire);
}

static void decoded_free(struct decoded *d)
{
	free(d->stream_name);
	free(d->copy);
	kv_wire_free(&d->wire);
	kv_evjson_reader_free(d->json);
}

bool kv_source_reads_ahead(const struct kv_source *s)
{
	return s->ahead != NULL;
}

unsigned kv_source_open_failures(const struct kv_source *s)
{
	return s->ahead ? s->ahead->open_failures : s->open_failures;
}

/* The bytes taken from the input being read. */
static uint64_t taken(const struct kv_source *s)
{
	return s->kind == KV_IN_JSON ? kv_lines_taken(&s->lines) : kv_mps_taken(&s->cap.in);
}

static uint64_t bytes_read(const struct kv_source *s)
{
	return s->bytes_done + (s->open ? taken(s) : 0);
}

uint64_t kv_source_bytes(const struct kv_source *s)
{
	return s->ahead ? s->ahead->taken : bytes_read(s);
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
		/* read ahead, the decoding thread never waits for input: a regular
		 * file never blocks, and the program's idle work is the program's */
		void (*idle)(void *) = s->ahead ? NULL : s->opts.idle;
		s->fd = fd;
		s->open = true;
		s->payloads = 0;
		kv_cap_open(&s->cap, fd, s->name);
		s->cap.in.in.idle = idle;
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
			s->lines.in.idle = idle;
			s->lines.in.idle_arg = s->opts.idle_arg;
			kv_cap_close(&s->cap);
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

/* Read ahead, a batch's bytes are copied into its slot before they are
 * decoded: the reader's buffer moves on meanwhile. */
static void copy_begin(struct kv_source *s, struct decoded *d, size_t n)
{
	if (!s->ahead)
		return;
	d->copy = kv_xgrow(d->copy, &d->copy_cap, n + 1, 1);
	d->copy_len = 0;
}

/* p[0..n) in the batch's own copy (read ahead) or where it is. */
static const void *copy_of(struct kv_source *s, struct decoded *d, const void *p, size_t n)
{
	if (!s->ahead || !n)
		return p;
	char *c = d->copy + d->copy_len;
	memcpy(c, p, n);
	c[n] = 0;
	d->copy_len += n + 1;
	return c;
}

static void decode_payload(struct decoded *d, struct kv_batch *b, const uint8_t *p, size_t n)
{
	if (!kv_wire_decode(&d->wire, &b->ctx, p, n)) {
		snprintf(d->error, sizeof d->error, "%s", d->wire.error);
		b->error = d->error;
		return;
	}
	b->ev = d->wire.ev;
	b->nev = d->wire.nev;
	b->nissues = d->wire.nissues;
	b->issues = (const char (*)[160])d->wire.issues;
	b->ignored = d->wire.ignored;
}

/* A fatal read problem ends this input after reporting it as a batch. */
static void fatal(struct kv_source *s, struct decoded *d, struct kv_batch *b, const char *msg)
{
	snprintf(d->error, sizeof d->error, "%s", msg);
	b->error = d->error;
	b->fatal = true;
	close_input(s);
}

/* Whether a header names a stream: then kept for the batch (b->stream). */
static bool stream_named(struct kv_source *s, struct decoded *d, const struct kv_record *header)
{
	struct kv_cap_stream st;
	if (!kv_cap_header_stream(header->raw, header->raw_len, &s->cap.zone, &st))
		return false;
	d->stream_name = kv_xgrow(d->stream_name, &d->stream_cap, st.name_len + 1, 1);
	memcpy(d->stream_name, st.name, st.name_len);
	d->stream_name[st.name_len] = 0;
	st.name = d->stream_name;
	d->stream = st;
	return true;
}

static enum kv_source_status next_kvcap(struct kv_source *s, struct decoded *d, struct kv_batch *b, bool *got)
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
		fatal(s, d, b, msg);
		return KV_SOURCE_BATCH;
	}
	case KV_CAP_HEADER:
		*got = s->opts.stream_headers && stream_named(s, d, &rec);
		b->stream = *got ? &d->stream : NULL;
		return KV_SOURCE_BATCH;
	case KV_CAP_SKIP:
	case KV_CAP_RECORD:
		break;
	}
	b->record = rec.number;
	if (st == KV_CAP_SKIP) {
		snprintf(d->error, sizeof d->error, "%s", strchr(s->cap.error, ':') ? strchr(s->cap.error, ':') + 2 : s->cap.error);
		b->error = d->error;
		return KV_SOURCE_BATCH;
	}
	struct kv_msg_parts m;
	kv_msg_split(rec.frames, rec.nframes, &m);
	copy_begin(s, d, rec.src_len + m.topic.n + m.payload.n + 3);
	b->ctx.src = (struct kv_str){ copy_of(s, d, rec.src, rec.src_len), rec.src_len };
	b->ctx.topic = (struct kv_str){ copy_of(s, d, m.topic.p, m.topic.n), m.topic.n };
	b->ctx.recv_ns = rec.recv_ns;
	b->ctx.has_seq = m.has_seq;
	b->ctx.seq = m.seq;
	b->ctx.replayed = rec.flags & KV_CAP_FLAG_REPLAYED;
	b->ctx.has_position = rec.has_position;
	b->ctx.position = rec.position;
	decode_payload(d, b, copy_of(s, d, m.payload.p, m.payload.n), m.payload.n);
	return KV_SOURCE_BATCH;
}

static enum kv_source_status next_payload(struct kv_source *s, struct decoded *d, struct kv_batch *b, bool *got)
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
		fatal(s, d, b, msg);
		return KV_SOURCE_BATCH;
	}
	case KV_MPS_OBJECT:
		break;
	}
	b->record = ++s->payloads;
	b->ctx.src = (struct kv_str){ "", 0 };
	b->ctx.topic = (struct kv_str){ "", 0 };
	copy_begin(s, d, n + 1);
	decode_payload(d, b, copy_of(s, d, p, n), n);
	return KV_SOURCE_BATCH;
}

static enum kv_source_status next_json(struct kv_source *s, struct decoded *d, struct kv_batch *b, bool *got)
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
		fatal(s, d, b, strerror(s->lines.in.err));
		return KV_SOURCE_BATCH;
	case KV_LINES_LIMIT: /* a stream of lines has no bound on the whole (no max_total) */
		kv_die(KV_EX_SOFTWARE, "event lines: a bound on the whole input");
	case KV_LINE_TOO_LONG:
		snprintf(d->error, sizeof d->error, "line longer than %u bytes skipped", MAX_JSON_LINE);
		b->error = d->error;
		return KV_SOURCE_BATCH;
	case KV_LINE:
		break;
	}
	if (n == 0 || line[strspn(line, " \t")] == 0) {
		*got = false;
		return KV_SOURCE_BATCH;
	}
	copy_begin(s, d, n + 1);
	line = (char *)copy_of(s, d, line, n);
	struct kv_event *e = &d->json_event;
	if (!d->json)
		d->json = kv_evjson_reader_new();
	enum kv_evjson_status js = kv_evjson_parse(d->json, line, n, e);
	if (js != KV_EVJSON_BAD && e->src.n > KV_CAP_MAX_SRC) {
		/* as in captures (kvcap.h): readers keep every source's name */
		snprintf(d->error, sizeof d->error, "src longer than %u bytes", KV_CAP_MAX_SRC);
		b->error = d->error;
		return KV_SOURCE_BATCH;
	}
	if (js != KV_EVJSON_BAD)
		b->ctx = kv_wire_ctx_of(e);
	switch (js) {
	case KV_EVJSON_BAD:
		snprintf(d->error, sizeof d->error, "%s", kv_evjson_error(d->json));
		b->error = d->error;
		break;
	case KV_EVJSON_ERROR_LINE:
		snprintf(d->error, sizeof d->error, "an error line from the decoder");
		b->error = d->error;
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

/* The next batch of the inputs into d, whoever asks. */
static enum kv_source_status decode_next(struct kv_source *s, struct decoded *d, struct kv_batch *b,
					 struct kv_err *e)
{
	for (;;) {
		if (kv_stop_signal)
			return KV_SOURCE_STOPPED;
		enum kv_source_status opened = s->open ? KV_SOURCE_BATCH : open_next(s, e);
		if (opened != KV_SOURCE_BATCH)
			return opened;
		batch_init(s, b);
		bool got;
		enum kv_source_status st = s->kind == KV_IN_KVCAP ? next_kvcap(s, d, b, &got)
					   : s->kind == KV_IN_PAYLOAD ? next_payload(s, d, b, &got)
					   : next_json(s, d, b, &got);
		if (st != KV_SOURCE_BATCH || got)
			return st;
	}
}

/* ---- read-ahead: the decoding thread's side ---- */

/* The decoding thread waits for a free slot, and the rest of an input the
 * program skips is not read. */
static struct slot *free_slot(struct kv_source *s)
{
	struct ahead *a = s->ahead;
	pthread_mutex_lock(&a->lock);
	while (a->count == AHEAD_SLOTS && !a->quit)
		pthread_cond_wait(&a->freed, &a->lock);
	bool skip = a->skip && a->skip == s->next;
	struct slot *sl = a->quit ? NULL : &a->slots[(a->head + a->count) % AHEAD_SLOTS];
	pthread_mutex_unlock(&a->lock);
	if (skip)
		close_input(s);
	return sl;
}

/* A batch decoded is handed to the program; its bytes wait while others,
 * as many as AHEAD_BYTES, are waiting already (the first always goes). */
static void publish(struct kv_source *s, struct slot *sl)
{
	struct ahead *a = s->ahead;
	pthread_mutex_lock(&a->lock);
	while (a->count && a->bytes + sl->d.copy_len > AHEAD_BYTES && !a->quit)
		pthread_cond_wait(&a->freed, &a->lock);
	if (a->count)
		a->bytes += sl->d.copy_len;
	a->count++;
	pthread_cond_signal(&a->filled);
	pthread_mutex_unlock(&a->lock);
}

static void *decode_ahead(void *arg)
{
	struct kv_source *s = arg;
	struct slot *sl;
	while ((sl = free_slot(s))) {
		sl->d.copy_len = 0;
		sl->st = decode_next(s, &sl->d, &sl->b, &sl->e);
		sl->bytes = bytes_read(s);
		sl->input = s->next;
		publish(s, sl);
		if (sl->st == KV_SOURCE_END || sl->st == KV_SOURCE_STOPPED)
			break;
	}
	return NULL;
}

/* ---- read-ahead: the program's side ---- */

/* The thread takes no signal: they all go to the program's, where the
 * handlers set their flags and the program acts between batches. */
static bool start_ahead(struct kv_source *s)
{
	struct ahead *a = kv_xcalloc(1, sizeof *a);
	for (size_t i = 0; i < AHEAD_SLOTS; i++)
		decoded_init(&a->slots[i].d, &s->opts);
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->filled, NULL);
	pthread_cond_init(&a->freed, NULL);
	s->ahead = a;
	if (kv_thread_start(&a->thread, decode_ahead, s) == 0)
		return true;
	s->ahead = NULL;
	for (size_t i = 0; i < AHEAD_SLOTS; i++)
		decoded_free(&a->slots[i].d);
	free(a);
	return false;
}

static void stop_ahead(struct kv_source *s)
{
	struct ahead *a = s->ahead;
	pthread_mutex_lock(&a->lock);
	a->quit = true;
	pthread_cond_signal(&a->freed);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->thread, NULL);
	for (size_t i = 0; i < AHEAD_SLOTS; i++) {
		kv_err_clear(&a->slots[i].e);
		decoded_free(&a->slots[i].d);
	}
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->filled);
	pthread_cond_destroy(&a->freed);
	free(a);
	s->ahead = NULL;
}

/* The batch the program held goes back to the decoding thread, without
 * the buffers a huge record grew. */
static void give_back(struct kv_source *s)
{
	struct ahead *a = s->ahead;
	struct slot *sl = &a->slots[a->head];
	if (sl->d.copy_cap > KEEP_BYTES || sl->d.wire.caph * sizeof *sl->d.wire.hashes > KEEP_BYTES) {
		decoded_free(&sl->d);
		decoded_init(&sl->d, &s->opts);
	}
	pthread_mutex_lock(&a->lock);
	a->head = (a->head + 1) % AHEAD_SLOTS;
	a->count--;
	if (a->count)
		a->bytes -= a->slots[a->head].d.copy_len;
	a->holding = false;
	pthread_cond_signal(&a->freed);
	pthread_mutex_unlock(&a->lock);
}

/* Waits for the next batch decoded; while none comes the program's idle
 * work is done every KV_IDLE_TICK_MS, as while a read would block.  NULL
 * when a stop signal came. */
static struct slot *wait_filled(struct kv_source *s)
{
	struct ahead *a = s->ahead;
	pthread_mutex_lock(&a->lock);
	while (!a->count) {
		if (!kv_cond_wait_tick(&a->filled, &a->lock) || a->count)
			continue;
		pthread_mutex_unlock(&a->lock);
		if (kv_stop_signal)
			return NULL;
		if (s->opts.idle)
			s->opts.idle(s->opts.idle_arg);
		pthread_mutex_lock(&a->lock);
	}
	struct slot *sl = &a->slots[a->head];
	pthread_mutex_unlock(&a->lock);
	return sl;
}

static enum kv_source_status take_ahead(struct kv_source *s, struct kv_batch *b, struct kv_err *e)
{
	struct ahead *a = s->ahead;
	for (;;) {
		if (a->holding)
			give_back(s);
		struct slot *sl = wait_filled(s);
		if (!sl)
			return KV_SOURCE_STOPPED;
		if (sl->st == KV_SOURCE_END || sl->st == KV_SOURCE_STOPPED)
			return sl->st;
		a->holding = true;
		a->taken = sl->bytes;
		if (sl->st == KV_SOURCE_UNOPENED) {
			a->open_failures++;
			*e = sl->e;
			memset(&sl->e, 0, sizeof sl->e);
			return sl->st;
		}
		if (sl->input != a->skip) {
			*b = sl->b;
			return sl->st;
		}
	}
}

/* ---- the source ---- */

struct kv_source *kv_source_new(char *const *files, size_t nfiles, const struct kv_source_opts *opts)
{
	static char *const stdin_only[] = { "-" };
	struct kv_source *s = kv_xcalloc(1, sizeof *s);
	s->files = nfiles ? files : stdin_only;
	s->nfiles = nfiles ? nfiles : 1;
	s->opts = *opts;
	decoded_init(&s->one, opts);
	if (opts->read_ahead && kv_inputs_regular(s->files, s->nfiles))
		start_ahead(s);
	return s;
}

void kv_source_free(struct kv_source *s)
{
	if (s->ahead)
		stop_ahead(s);
	close_input(s);
	decoded_free(&s->one);
	free(s);
}

enum kv_source_status kv_source_next(struct kv_source *s, struct kv_batch *b, struct kv_err *e)
{
	if (kv_stop_signal)
		return KV_SOURCE_STOPPED;
	return s->ahead ? take_ahead(s, b, e) : decode_next(s, &s->one, b, e);
}

void kv_source_skip_input(struct kv_source *s)
{
	if (!s->ahead) {
		close_input(s);
		return;
	}
	struct ahead *a = s->ahead;
	pthread_mutex_lock(&a->lock);
	a->skip = a->slots[a->head].input;
	pthread_mutex_unlock(&a->lock);
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

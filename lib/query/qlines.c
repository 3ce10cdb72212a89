/* qlines: query lines read and parsed, in order (qlines.h says what it
 * owns). */
#include "query/qlines.h"
#include "base/input.h"
#include "base/lines.h"
#include "base/thread.h"
#include "base/util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A chunk: at most this many lines, and lines until this many bytes have
 * been read into it (a longer line is a chunk alone).  Chunks in the ring:
 * two for each thread and two more, so that no thread waits for the
 * program while it holds one chunk and another is ready. */
#define CHUNK_LINES 256
#define CHUNK_BYTES ((size_t)256 << 10)
/* Memory a chunk keeps from one use to the next, at most (the rest of
 * what a huge line made it take is given back). */
#define KEEP_BYTES ((size_t)4 << 20)

/* ---- the inputs, in order ------------------------------------------------ */

struct reader {
	char *const *files;
	size_t nfiles, next;
	bool open, done;
	int fd;
	const char *name;
	struct kv_lines lines;
	size_t max_line;
	void (*idle)(void *);
	void *idle_arg;
};

static void close_input(struct reader *r)
{
	if (!r->open)
		return;
	kv_lines_free(&r->lines);
	kv_input_close(r->fd);
	r->open = false;
}

/* The next item of the inputs, not parsed: for KV_QI_QUERY the line's
 * bytes in *line, *n (valid until the next call).  False after the last;
 * nothing is read after a stop. */
static bool read_item(struct reader *r, struct kv_qitem *it, char **line, size_t *n)
{
	for (;;) {
		memset(it, 0, sizeof *it);
		if (r->done)
			return false;
		if (!r->open) {
			if (r->next == r->nfiles) {
				r->done = true;
				return false;
			}
			if (kv_stop_signal) {
				r->done = true;
				it->kind = KV_QI_STOPPED;
				return true;
			}
			if (!kv_input_open_named(r->files[r->next++], &r->fd, &r->name, &it->e)) {
				it->kind = KV_QI_UNOPENED;
				it->file = r->name;
				return true;
			}
			kv_lines_init(&r->lines, r->fd, r->max_line, NULL, 0);
			r->lines.in.idle = r->idle;
			r->lines.in.idle_arg = r->idle_arg;
			r->open = true;
		}
		enum kv_lines_status st = kv_lines_next(&r->lines, line, n);
		it->file = r->name;
		it->lineno = r->lines.lineno;
		switch (st) {
		case KV_LINE:
			it->kind = KV_QI_QUERY;
			return true;
		case KV_LINE_TOO_LONG:
			it->kind = KV_QI_TOO_LONG;
			return true;
		case KV_LINES_STOPPED:
			close_input(r);
			r->done = true;
			it->kind = KV_QI_STOPPED;
			return true;
		case KV_LINES_ERROR:
			it->kind = KV_QI_READ_ERROR;
			it->err = r->lines.in.err;
			close_input(r);
			return true;
		default: /* the end of this input (no bound on the whole: no LIMIT) */
			close_input(r);
		}
	}
}

/* ---- memory for lines parsed ahead ----------------------------------------
 * Pieces handed out in order and never moved (a query parsed points into
 * them), all taken back at once when the chunk is used again. */

struct piece {
	char *p;
	size_t size;
};

struct arena {
	struct piece *pieces;
	size_t n, cap;
	size_t at, used;  /* the piece handed out from, and how much of it */
};

static void *arena_alloc(void *arg, size_t n)
{
	struct arena *a = arg;
	n = (n + 7) & ~(size_t)7;
	while (a->n && a->used + n > a->pieces[a->at].size) {
		if (a->at + 1 == a->n)
			break;
		a->at++;
		a->used = 0;
	}
	if (!a->n || a->used + n > a->pieces[a->at].size) {
		a->pieces = kv_xgrow(a->pieces, &a->cap, a->n + 1, sizeof *a->pieces);
		size_t size = n > CHUNK_BYTES ? n : CHUNK_BYTES;
		a->pieces[a->n] = (struct piece){ kv_xmalloc(size), size };
		a->at = a->n++;
		a->used = 0;
	}
	void *p = a->pieces[a->at].p + a->used;
	a->used += n;
	return p;
}

/* Everything handed out is free again; pieces past KEEP_BYTES in all are
 * given back. */
static void arena_reset(struct arena *a)
{
	size_t kept = 0, k = 0;
	for (size_t i = 0; i < a->n; i++) {
		if (kept + a->pieces[i].size > KEEP_BYTES && k) {
			free(a->pieces[i].p);
			continue;
		}
		kept += a->pieces[i].size;
		a->pieces[k++] = a->pieces[i];
	}
	a->n = k;
	a->at = 0;
	a->used = 0;
}

static void arena_free(struct arena *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->pieces[i].p);
	free(a->pieces);
}

/* ---- chunks of lines ------------------------------------------------------ */

struct entry {
	struct kv_qitem it;
	size_t off, len;          /* KV_QI_QUERY: the line, in the chunk's text */
	struct kv_qline q;        /* ... once parsed */
};

struct chunk {
	char *text;
	size_t tlen, tcap;
	struct entry *v;
	size_t n, cap;
	struct arena arena;       /* what the queries parsed point to */
	bool parsed;
	bool last;                /* the inputs ended (or a stop came) within it */
};

static void chunk_add(struct chunk *c, const struct kv_qitem *it, const char *line, size_t n)
{
	c->v = kv_xgrow(c->v, &c->cap, c->n + 1, sizeof *c->v);
	struct entry *e = &c->v[c->n++];
	e->it = *it;
	e->off = c->tlen;
	e->len = 0;
	if (it->kind != KV_QI_QUERY)
		return;
	c->text = kv_xgrow(c->text, &c->tcap, c->tlen + n + 1, 1);
	memcpy(c->text + c->tlen, line, n);
	c->tlen += n;
	e->len = n;
}

/* Lines from the inputs into c, up to its bounds or their end. */
static void chunk_fill(struct chunk *c, struct reader *r)
{
	c->n = 0;
	c->tlen = 0;
	struct kv_qitem it;
	char *line;
	size_t n;
	while (c->n < CHUNK_LINES && c->tlen < CHUNK_BYTES && read_item(r, &it, &line, &n))
		chunk_add(c, &it, line, n);
	c->last = r->done;
}

/* Every line of c parsed, what a query holds copied into c's arena. */
static void chunk_parse(struct chunk *c, struct kv_qparser *p, struct kv_qline *scratch)
{
	arena_reset(&c->arena);
	for (size_t i = 0; i < c->n; i++) {
		struct entry *e = &c->v[i];
		if (e->it.kind != KV_QI_QUERY)
			continue;
		if (kv_qparse(p, c->text + e->off, e->len, scratch)) {
			kv_qline_copy(scratch, &e->q, arena_alloc, &c->arena);
			e->it.q = &e->q;
			continue;
		}
		const char *why = kv_qparser_error(p);
		size_t len = strlen(why) + 1;
		e->it.kind = KV_QI_BAD;
		e->it.why = memcpy(arena_alloc(&c->arena, len), why, len);
	}
}

/* What a chunk keeps is bounded: a huge line's buffers go. */
static void chunk_trim(struct chunk *c)
{
	for (size_t i = 0; i < c->n; i++)
		kv_err_clear(&c->v[i].it.e);
	if (c->tcap > KEEP_BYTES) {
		free(c->text);
		c->text = NULL;
		c->tcap = 0;
	}
	c->n = 0;
	c->tlen = 0;
}

static void chunk_free(struct chunk *c)
{
	chunk_trim(c);
	free(c->text);
	free(c->v);
	arena_free(&c->arena);
}

/* ---- the reader ------------------------------------------------------------ */

struct kv_qlines {
	struct reader rd;
	/* in turn */
	struct kv_qparser *parser;
	struct kv_qline q;
	/* ahead: chunks [head, tail) of the ring are the threads' or waiting,
	 * the one at head the program's once parsed */
	unsigned jobs;
	pthread_t *threads;
	pthread_mutex_t lock;     /* the ring */
	pthread_mutex_t reading;  /* the reader: chunks are filled in ring order */
	pthread_cond_t filled, freed;
	struct chunk *ring;
	size_t nring, head, tail;
	bool quit;
	/* the program's side */
	void (*idle)(void *);     /* while it waits for a chunk */
	void *idle_arg;
	bool holding, finished;
	size_t pos;
};

/* One thread: claims the next chunk of the ring (in order, while the
 * reader is its), fills it, then parses it while others read. */
static void *parse_ahead(void *arg)
{
	struct kv_qlines *l = arg;
	struct kv_qparser *p = kv_qparser_new();
	struct kv_qline scratch = { 0 };
	for (;;) {
		pthread_mutex_lock(&l->reading);
		pthread_mutex_lock(&l->lock);
		while (!l->quit && !l->rd.done && l->tail - l->head == l->nring)
			pthread_cond_wait(&l->freed, &l->lock);
		if (l->quit || l->rd.done) {
			pthread_mutex_unlock(&l->lock);
			pthread_mutex_unlock(&l->reading);
			break;
		}
		struct chunk *c = &l->ring[l->tail++ % l->nring];
		c->parsed = false; /* before the program can see the chunk claimed */
		pthread_mutex_unlock(&l->lock);
		chunk_fill(c, &l->rd);
		pthread_mutex_unlock(&l->reading);
		chunk_parse(c, p, &scratch);
		pthread_mutex_lock(&l->lock);
		c->parsed = true;
		pthread_cond_broadcast(&l->filled);
		pthread_mutex_unlock(&l->lock);
	}
	free(scratch.tokens);
	free(scratch.hashes);
	kv_qparser_free(p);
	return NULL;
}

/* The threads take no signal: they all go to the program's, where the
 * handlers set their flags (a read of a regular file ends with a stop as
 * the program's would).  False when none could be started. */
static bool start_threads(struct kv_qlines *l, unsigned jobs)
{
	l->nring = 2 * (size_t)jobs + 2;
	l->ring = kv_xcalloc(l->nring, sizeof *l->ring);
	l->threads = kv_xcalloc(jobs, sizeof *l->threads);
	pthread_mutex_init(&l->lock, NULL);
	pthread_mutex_init(&l->reading, NULL);
	pthread_cond_init(&l->filled, NULL);
	pthread_cond_init(&l->freed, NULL);
	l->rd.idle = NULL; /* regular files: no read waits */
	for (l->jobs = 0; l->jobs < jobs; l->jobs++)
		if (kv_thread_start(&l->threads[l->jobs], parse_ahead, l) != 0)
			break;
	return l->jobs > 0;
}

static void stop_threads(struct kv_qlines *l)
{
	pthread_mutex_lock(&l->lock);
	l->quit = true;
	pthread_cond_broadcast(&l->freed);
	pthread_mutex_unlock(&l->lock);
	for (unsigned i = 0; i < l->jobs; i++)
		pthread_join(l->threads[i], NULL);
	for (size_t i = 0; i < l->nring; i++)
		chunk_free(&l->ring[i]);
	free(l->ring);
	free(l->threads);
	pthread_mutex_destroy(&l->lock);
	pthread_mutex_destroy(&l->reading);
	pthread_cond_destroy(&l->filled);
	pthread_cond_destroy(&l->freed);
}

struct kv_qlines *kv_qlines_new(char *const *files, size_t nfiles, const struct kv_qlines_opts *o)
{
	static char *const stdin_only[] = { "-" };
	struct kv_qlines *l = kv_xcalloc(1, sizeof *l);
	l->rd.files = nfiles ? files : stdin_only;
	l->rd.nfiles = nfiles ? nfiles : 1;
	l->rd.max_line = o->max_line ? o->max_line : KV_QLINE_MAX;
	l->rd.idle = l->idle = o->idle;
	l->rd.idle_arg = l->idle_arg = o->idle_arg;
	unsigned jobs = o->jobs < KV_QLINES_MAX_JOBS ? o->jobs : KV_QLINES_MAX_JOBS;
	if (jobs && kv_inputs_regular(l->rd.files, l->rd.nfiles) && !start_threads(l, jobs)) {
		stop_threads(l);
		l->rd.idle = o->idle;
	}
	if (!l->jobs)
		l->parser = kv_qparser_new();
	return l;
}

unsigned kv_qlines_jobs(const struct kv_qlines *l)
{
	return l->jobs;
}

void kv_qlines_free(struct kv_qlines *l)
{
	if (!l)
		return;
	if (l->jobs)
		stop_threads(l);
	close_input(&l->rd);
	kv_qparser_free(l->parser);
	free(l->q.tokens);
	free(l->q.hashes);
	free(l);
}

static bool next_in_turn(struct kv_qlines *l, struct kv_qitem *it)
{
	char *line;
	size_t n;
	if (!read_item(&l->rd, it, &line, &n))
		return false;
	if (it->kind != KV_QI_QUERY)
		return true;
	if (kv_qparse(l->parser, line, n, &l->q))
		it->q = &l->q;
	else
		it->kind = KV_QI_BAD, it->why = kv_qparser_error(l->parser);
	return true;
}

/* The chunk the program held goes back to the threads. */
static void give_back(struct kv_qlines *l)
{
	struct chunk *c = &l->ring[l->head % l->nring];
	chunk_trim(c);
	pthread_mutex_lock(&l->lock);
	l->head++;
	l->holding = false;
	pthread_cond_broadcast(&l->freed);
	pthread_mutex_unlock(&l->lock);
}

/* Waits for the chunk at head to be parsed; meanwhile the program's idle
 * work is done every KV_IDLE_TICK_MS.  NULL when a stop signal came. */
static struct chunk *wait_parsed(struct kv_qlines *l)
{
	struct chunk *c = &l->ring[l->head % l->nring];
	pthread_mutex_lock(&l->lock);
	while (l->tail == l->head || !c->parsed) {
		if (!kv_cond_wait_tick(&l->filled, &l->lock) || (l->tail != l->head && c->parsed))
			continue;
		pthread_mutex_unlock(&l->lock);
		if (kv_stop_signal)
			return NULL;
		if (l->idle)
			l->idle(l->idle_arg);
		pthread_mutex_lock(&l->lock);
	}
	pthread_mutex_unlock(&l->lock);
	return c;
}

static bool next_ahead(struct kv_qlines *l, struct kv_qitem *it)
{
	for (;;) {
		if (l->finished)
			return false;
		if (l->holding) {
			struct chunk *c = &l->ring[l->head % l->nring];
			if (l->pos < c->n) {
				struct entry *e = &c->v[l->pos++];
				*it = e->it;
				memset(&e->it.e, 0, sizeof e->it.e); /* the caller's now */
				return true;
			}
			l->finished = c->last;
			give_back(l);
			continue;
		}
		struct chunk *c = wait_parsed(l);
		if (!c) {
			l->finished = true;
			*it = (struct kv_qitem){ .kind = KV_QI_STOPPED };
			return true;
		}
		l->holding = true;
		l->pos = 0;
	}
}

bool kv_qlines_next(struct kv_qlines *l, struct kv_qitem *it)
{
	return l->jobs ? next_ahead(l, it) : next_in_turn(l, it);
}

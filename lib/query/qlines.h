/* qlines: kvquery's query lines, read from its inputs in order and parsed
 * (queryline.h), as items: a line parsed, a line that is no query, a line
 * too long, an input that cannot be opened or fails to read, a stop
 * signal.  With jobs, and when every input is a regular file, lines are
 * read and parsed ahead on that many threads of their own, in chunks of
 * lines, while the program answers those before: the items come in the
 * same order with the same contents as without; only where the lines are
 * parsed differs.  A pipe, a fifo or a terminal is read as it comes, each
 * line parsed by the program's thread when its turn comes, its idle times
 * the program's (kvquery(1), "Threads"). */
#ifndef KV_QLINES_H
#define KV_QLINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "query/queryline.h"

/* A line longer than this is skipped (kvquery(1), LIMITS). */
#define KV_QLINE_MAX ((size_t)256 << 20)
/* Threads that parse ahead, at most. */
#define KV_QLINES_MAX_JOBS 64u

enum kv_qitem_kind {
	KV_QI_QUERY,       /* q: a query */
	KV_QI_BAD,         /* why: the line is no query (the parser's words) */
	KV_QI_TOO_LONG,    /* longer than KV_QLINE_MAX: skipped */
	KV_QI_UNOPENED,    /* e: the input cannot be opened (66); the next follows */
	KV_QI_READ_ERROR,  /* err: a read of the input failed; the rest of it is lost */
	KV_QI_STOPPED,     /* a stop signal came: nothing follows */
};

struct kv_qitem {
	enum kv_qitem_kind kind;
	const char *file;        /* the input's name in messages ("stdin" for "-") */
	uint64_t lineno;
	const struct kv_qline *q;
	const char *why;
	int err;
	struct kv_err e;         /* KV_QI_UNOPENED: the caller's to print or clear */
};

struct kv_qlines_opts {
	unsigned jobs;           /* threads that parse ahead (0: every line in turn) */
	size_t max_line;         /* a longer line is KV_QI_TOO_LONG (0: KV_QLINE_MAX) */
	void (*idle)(void *);    /* before a wait: a read that would block, or for lines parsed ahead */
	void *idle_arg;
};

struct kv_qlines;

/* files: none is standard input; they must outlive the reader. */
struct kv_qlines *kv_qlines_new(char *const *files, size_t nfiles, const struct kv_qlines_opts *o);
/* The next item, valid until the next call; false after the last. */
bool kv_qlines_next(struct kv_qlines *l, struct kv_qitem *it);
/* The threads parsing ahead: the jobs asked for, or 0 when an input is
 * not a regular file (or no thread could be started). */
unsigned kv_qlines_jobs(const struct kv_qlines *l);
void kv_qlines_free(struct kv_qlines *l);

#endif

/* lines: reads text lines from a file descriptor, bounded in length.
 * A line longer than the limit is skipped (reported by the caller with its
 * number) instead of growing memory without bound.  Before a read that would
 * block, the idle callback runs, so that pipelines stay live. */
#ifndef KV_LINES_H
#define KV_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/input.h"

/* KV_LINES_LIMIT: the input goes on past max_total bytes (a file read
 * whole before the program starts, whose every line is kept); the lines
 * that end within them were returned first. */
enum kv_lines_status { KV_LINE, KV_LINE_TOO_LONG, KV_LINES_EOF, KV_LINES_STOPPED, KV_LINES_ERROR, KV_LINES_LIMIT };

struct kv_lines {
	struct kv_reader in;  /* in.idle: before a read that would block; in.err: a read's errno */
	char *buf;
	size_t len, cap, pos, max_line;
	uint64_t lineno;
	uint64_t max_total;  /* 0: no bound on the whole input, else at most this many bytes are taken */
	uint64_t total;      /* bytes read so far, pre included */
	uint64_t moved;      /* bytes moved to the buffer's front so far: a line begun, kept for the next read */
	bool eof;
};

/* pre: bytes already read from fd (may be NULL). */
void kv_lines_init(struct kv_lines *l, int fd, size_t max_line, const void *pre, size_t npre);
void kv_lines_free(struct kv_lines *l);
/* The bytes of the input taken so far, up to the end of the last line
 * returned (what is read ahead is not): for the progress line. */
static inline uint64_t kv_lines_taken(const struct kv_lines *l)
{
	return l->total - (l->len - l->pos);
}
/* A line without its newline (and without a trailing CR); valid until the next call. */
enum kv_lines_status kv_lines_next(struct kv_lines *l, char **line, size_t *len);

#endif

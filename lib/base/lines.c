#include "base/lines.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

/* One read: a piece small enough to be still in the cache when its lines
 * are parsed.  The buffer holds several (START), so that lines are
 * returned where they were read and the line begun is moved to the front
 * once a buffer-full, not once a read (with a buffer of one read, a 12,000-
 * token line was moved about once for every three read).  It grows to
 * SPACIOUS when what it moves is a quarter of it (lines of 100,000 tokens
 * are 600 KB), but not past twice the longest line it may return: a line
 * too long is skipped in a buffer of that size, as before; beyond only as
 * far as a line needs. */
#define CHUNK ((size_t)256 << 10)
#define START (4 * CHUNK)
#define SPACIOUS ((size_t)16 << 20)

void kv_lines_init(struct kv_lines *l, int fd, size_t max_line, const void *pre, size_t npre)
{
	memset(l, 0, sizeof *l);
	kv_reader_init(&l->in, fd);
	l->max_line = max_line;
	l->cap = START > npre ? START : npre;
	l->buf = kv_xmalloc(l->cap + 1);
	if (npre)
		memcpy(l->buf, pre, npre);
	l->len = npre;
	l->total = npre;
}

void kv_lines_free(struct kv_lines *l)
{
	free(l->buf);
	l->buf = NULL;
}

/* How much fill may read: with max_total, one byte past it at most, which
 * tells that the input goes on. */
static size_t room(const struct kv_lines *l)
{
	size_t r = l->cap - l->len;
	if (r > CHUNK)
		r = CHUNK;
	if (l->max_total && l->max_total + 1 - l->total < r)
		r = (size_t)(l->max_total + 1 - l->total);
	return r;
}

/* Room for a whole read after the bytes kept (START says why not before). */
static void make_room(struct kv_lines *l)
{
	size_t keep = l->len - l->pos;
	if (l->pos > 0) {
		memmove(l->buf, l->buf + l->pos, keep);
		l->moved += keep;
		l->len = keep;
		l->pos = 0;
	}
	if (l->cap - l->len < CHUNK || (keep > l->cap / 4 && l->cap < SPACIOUS && l->cap < 2 * l->max_line)) {
		l->cap *= 2;
		l->buf = kv_xrealloc(l->buf, l->cap + 1);
	}
}

/* -1 error, 0 EOF, 1 data, 2 stopped, 3 past max_total */
static int fill(struct kv_lines *l)
{
	if (l->cap - l->len < CHUNK)
		make_room(l);
	if (room(l) == 0)
		return 3;
	size_t n;
	switch (kv_reader_fill(&l->in, l->buf + l->len, room(l), &n)) {
	case KV_READ_STOPPED:
		return 2;
	case KV_READ_ERROR:
		return -1;
	case KV_READ_OK:
		break;
	}
	if (n == 0) {
		l->eof = true;
		return 0;
	}
	l->len += n;
	l->total += n;
	return 1;
}

enum kv_lines_status kv_lines_next(struct kv_lines *l, char **line, size_t *len)
{
	size_t scanned = 0;
	bool skipping = false;
	for (;;) {
		char *start = l->buf + l->pos;
		size_t avail = l->len - l->pos;
		char *nl = memchr(start + scanned, '\n', avail - scanned);
		if (nl || (l->eof && avail > 0)) {
			size_t n = nl ? (size_t)(nl - start) : avail;
			/* where the line ends in the input, its newline included */
			if (l->max_total && !skipping && l->total - (avail - n - (nl != NULL)) > l->max_total)
				return KV_LINES_LIMIT;
			l->pos += nl ? n + 1 : n;
			l->lineno++;
			if (skipping || n > l->max_line)
				return KV_LINE_TOO_LONG;
			if (n > 0 && start[n - 1] == '\r')
				n--;
			start[n] = 0;
			*line = start;
			*len = n;
			return KV_LINE;
		}
		if (l->eof) {
			/* A last line without newline that was too long ends here:
			 * it is reported like any other, not lost silently. */
			if (skipping) {
				l->lineno++;
				return KV_LINE_TOO_LONG;
			}
			return KV_LINES_EOF;
		}
		scanned = avail;
		if (avail > l->max_line) {
			/* Keep only the line's tail in memory: drop what was scanned. */
			skipping = true;
			l->pos = l->len;
			scanned = 0;
		}
		int f = fill(l);
		if (f < 0)
			return KV_LINES_ERROR;
		if (f == 2)
			return KV_LINES_STOPPED;
		if (f == 3 && skipping) { /* the line too long is reported before the limit */
			l->lineno++;
			l->pos = l->len;
			return KV_LINE_TOO_LONG;
		}
		if (f == 3)
			return KV_LINES_LIMIT;
	}
}

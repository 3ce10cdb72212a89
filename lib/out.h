/* out: checked, buffered output to a file descriptor.
 * Every write is checked; the first failure is kept and reported once.
 * EPIPE (the reader went away) is a clean end, anything else is exit 74.
 * Flushes happen whole-buffer at a time and only between records, so that on
 * a failure into a regular file the file can be cut back to the last flush
 * that succeeded: a reader then finds complete records only. */
#ifndef KV_OUT_H
#define KV_OUT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct kv_out {
	int fd;
	const char *name;   /* for messages: the path, or "stdout" */
	char *buf;
	size_t len, cap;
	int err;            /* errno of the first failure, 0 if none */
	bool regular;       /* a regular file: can be cut back on failure */
	bool tty;
	bool owns_fd;
	int64_t good_off;   /* file offset after the last successful flush */
};

/* path NULL or "-" is stdout. Returns false with errno set on failure to open. */
bool kv_out_open(struct kv_out *o, const char *path);
/* An output that only collects bytes in memory (buf, len), for building text. */
void kv_out_open_mem(struct kv_out *o);
void kv_out_free_mem(struct kv_out *o);
/* Grows the buffer so that n more bytes fit, flushing first when full. */
char *kv_out_reserve(struct kv_out *o, size_t n);
static inline void kv_out_commit(struct kv_out *o, size_t n) { o->len += n; }
static inline void kv_out_write(struct kv_out *o, const void *p, size_t n)
{
	char *d = kv_out_reserve(o, n);
	memcpy(d, p, n);
	o->len += n;
}
static inline void kv_out_putc(struct kv_out *o, char c)
{
	if (o->len < o->cap)
		o->buf[o->len++] = c;
	else
		kv_out_write(o, &c, 1);
}
static inline void kv_out_puts(struct kv_out *o, const char *s) { kv_out_write(o, s, strlen(s)); }
/* Writes the buffer out; false once output has failed (see o->err). */
bool kv_out_flush(struct kv_out *o);
/* Flushes only when the buffer is nearly full; cheap to call per record. */
static inline bool kv_out_flush_if_full(struct kv_out *o)
{
	return o->len < o->cap - o->cap / 4 ? o->err == 0 : kv_out_flush(o);
}
static inline bool kv_out_failed(const struct kv_out *o) { return o->err != 0; }
/* True when output failed because the reader went away (EPIPE): a clean stop. */
static inline bool kv_out_reader_gone(const struct kv_out *o) { return o->err == EPIPE; }
/* Flushes, closes, reports a failure once; returns 0 or 74 (EPIPE counts as 0). */
int kv_out_close(struct kv_out *o);

#endif

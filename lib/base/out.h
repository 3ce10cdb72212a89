/* out: checked, buffered output to a file descriptor.
 * Every write is checked; the first failure is kept and reported once (at
 * kv_out_close, as a kv_err).
 * EPIPE (the reader went away) is a clean end, anything else is exit 74.
 * Flushes happen whole-buffer at a time and only between records, so that on
 * a failure into a regular file the file can be cut back to the last flush
 * that succeeded: a reader then finds complete records only.
 *
 * A file is not truncated when opened but at its first flush, or at a
 * close: a program that stops on a set-up error before either leaves
 * yesterday's file as it was (kv_out_abandon, or just exit).  And it owns
 * the rule that an output may not be one of the program's inputs, nor
 * another of its outputs.
 *
 * It counts the records that reach the file whole (kv_out_end_record), for
 * messages that say how many were written: a record still in the buffer,
 * or cut back after a failure, is not written. */
#ifndef KV_OUT_H
#define KV_OUT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/err.h"

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
	bool trunc_pending; /* a regular file not truncated yet */
	bool created;       /* the file did not exist before kv_out_open */
	bool nonblock;      /* see kv_out_nonblocking */
	int saved_flags;    /* the fd's flags before, put back at close */
	uint64_t records;   /* records written whole (kv_out_end_record) */
	uint64_t taken;     /* bytes written since the open: where ends[] count from */
	uint64_t *ends;     /* where the records in buf end, from ends_first on */
	size_t ends_first, nends, ends_cap;
};

/* path NULL or "-" is stdout.  False when the file cannot be opened: e
 * says "PATH: why", status 74. */
bool kv_out_open(struct kv_out *o, const char *path, struct kv_err *e);
/* Standard output, which is always there to open. */
void kv_out_open_stdout(struct kv_out *o);
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
/* Formatted text, all of it: the buffer grows to what the format needs, so
 * nothing is cut and nothing beyond what was formatted is written. */
void kv_out_printf(struct kv_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* For a program that must go on reading its sources while the reader of
 * its output is slow (kvsub: what ZeroMQ would queue instead is bounded in
 * messages, not bytes): a pipe or socket output becomes non-blocking, a
 * flush writes what the reader takes now and keeps the rest (o->len bytes
 * held, the caller bounds them), and kv_out_close writes the rest blocking
 * and puts the flags back.  A regular file is left as it is. */
void kv_out_nonblocking(struct kv_out *o);
/* Marks the end of a record just put in the buffer: once its last byte is
 * written, kv_out_records counts it.  Nothing for a memory output. */
void kv_out_end_record(struct kv_out *o);
/* Records marked and written whole so far; after kv_out_close, exactly
 * those the output holds (a pipe: those its reader was given). */
static inline uint64_t kv_out_records(const struct kv_out *o) { return o->records; }
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
/* Flushes and closes; false when output failed (the first failure, once:
 * "NAME: why", status 74).  A reader that went away (EPIPE) is no failure. */
bool kv_out_close(struct kv_out *o, struct kv_err *e);
/* Closes without writing or truncating anything, when the run produced
 * nothing (no input could be opened): an existing file keeps its contents,
 * one that kv_out_open created is removed. */
void kv_out_abandon(struct kv_out *o);
/* At the end of a run: kv_out_abandon when not one input could be opened
 * (the run produced nothing, and -o keeps what it held: true), else
 * kv_out_close. */
bool kv_out_finish(struct kv_out *o, bool no_input_opened, struct kv_err *e);
/* Whether a failure of o ends the program's work.  Not while it has a file
 * to finish besides (a snapshot, a report): a reader that went away from
 * standard output, or a full disk under a side stream, must not cut that
 * product short and have it replace the last good one. */
static inline bool kv_out_ends_work(const struct kv_out *o, bool file_products)
{
	return kv_out_failed(o) && !file_products;
}

/* False, a usage error (64, kv_err_exit adds `Try 'PROG --help'.`), when
 * output (the argument of option opt) is the same file as one of the n
 * inputs, by device and inode as cat and sort -o judge, so that a typo
 * cannot destroy what is still to be read.  n == 0, or an input "-", is
 * standard input.  Outputs that are not regular files (/dev/null, a pipe)
 * are never refused. */
bool kv_out_refuse_inputs(const char *opt, const char *output, char *const *inputs, size_t n, struct kv_err *e);
/* The same for one input (a -s snapshot, a -r registrations file; NULL:
 * none given). */
bool kv_out_refuse_input(const char *opt, const char *output, const char *input, struct kv_err *e);
/* An output of a command: the option naming it and its path (NULL: not
 * written in this run; "-": standard output, whatever the option). */
struct kv_out_name {
	const char *opt, *path;
};
/* False, a usage error (64), when two of the n outputs of one command are
 * the same file (`--metrics x: the same file as -o x`): by the same rule
 * as an output and an input (device and inode; no regular file: never),
 * and also when neither is there yet, by place (x, ./x and a symbolic link
 * to x are one file), so that one product cannot overwrite another. */
bool kv_out_refuse_same(const struct kv_out_name *outs, size_t n, struct kv_err *e);
/* Whether a file can be written at each of n paths (NULL or "-": yes), by
 * kv_path_check_writable: its directory exists and may be written, or it
 * is a device or fifo that may be; the path is no directory and no socket.
 * Asked before the work whose product it holds, so that a typo in a
 * directory name fails at once, not after hours of input: false for the
 * first that cannot be written, "PATH: why", status 74. */
bool kv_out_check_creatable(const char *const *paths, size_t n, struct kv_err *e);

#endif

#include "base/out.h"
#include "base/product.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OUT_BUFSIZE (256 * 1024)

/* What an open output learns of its fd (a regular file can be cut back
 * and is truncated late; a terminal), and its buffer. */
static void set_up(struct kv_out *o)
{
	struct stat st;
	if (fstat(o->fd, &st) == 0 && S_ISREG(st.st_mode)) {
		o->good_off = lseek(o->fd, 0, SEEK_CUR);
		o->regular = o->good_off >= 0;
		o->trunc_pending = o->owns_fd;
	}
	o->tty = isatty(o->fd);
	o->cap = OUT_BUFSIZE;
	o->buf = kv_xmalloc(o->cap);
}

void kv_out_open_stdout(struct kv_out *o)
{
	memset(o, 0, sizeof *o);
	o->fd = STDOUT_FILENO;
	o->name = "stdout";
	set_up(o);
}

bool kv_out_open(struct kv_out *o, const char *path, struct kv_err *e)
{
	if (!path || strcmp(path, "-") == 0) {
		kv_out_open_stdout(o);
		return true;
	}
	memset(o, 0, sizeof *o);
	/* no O_TRUNC: see trunc_pending */
	o->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	o->created = o->fd >= 0;
	if (o->fd < 0 && errno == EEXIST)
		o->fd = open(path, O_WRONLY | O_CREAT | O_NOCTTY | O_CLOEXEC, 0666);
	if (o->fd < 0) {
		/* a socket says ENXIO: said as every output says it */
		int err = errno;
		if (err == ENXIO && !kv_path_check_writable(path, e))
			return false;
		errno = err;
		return kv_err_set_errno(e, KV_EX_IOERR, "%s", path);
	}
	o->name = path;
	o->owns_fd = true;
	set_up(o);
	return true;
}

/* The records whose last byte has been written are written whole. */
static void count_written(struct kv_out *o)
{
	while (o->ends_first < o->nends && o->ends[o->ends_first] <= o->taken) {
		o->ends_first++;
		o->records++;
	}
	if (o->ends_first == o->nends)
		o->ends_first = o->nends = 0;
}

/* The buffer's bytes are dropped: so are the records in it. */
static void drop_held(struct kv_out *o)
{
	o->len = 0;
	o->ends_first = o->nends = 0;
}

void kv_out_end_record(struct kv_out *o)
{
	if (o->fd < 0 || o->err)
		return;
	if (o->nends == o->ends_cap && o->ends_first) {
		memmove(o->ends, o->ends + o->ends_first, (o->nends - o->ends_first) * sizeof *o->ends);
		o->nends -= o->ends_first;
		o->ends_first = 0;
	}
	if (o->nends == o->ends_cap)
		o->ends = kv_xgrow(o->ends, &o->ends_cap, o->nends + 1, sizeof *o->ends);
	o->ends[o->nends++] = o->taken + o->len;
}

/* A failed flush into a regular file would leave part of a record at its end;
 * cutting the file back to the last good flush keeps it a valid stream. */
static void cut_back(struct kv_out *o)
{
	if (o->regular && ftruncate(o->fd, o->good_off) == 0)
		lseek(o->fd, o->good_off, SEEK_SET);
}

/* The truncation kv_out_open left for the first flush or the close. */
static bool truncate_now(struct kv_out *o)
{
	o->trunc_pending = false;
	if (ftruncate(o->fd, 0) != 0 || lseek(o->fd, 0, SEEK_SET) != 0) {
		o->err = errno;
		drop_held(o);
		return false;
	}
	o->good_off = 0;
	return true;
}

bool kv_out_flush(struct kv_out *o)
{
	if (o->fd < 0)
		return true;
	if (o->err) {
		drop_held(o);
		return false;
	}
	if (o->trunc_pending && o->len && !truncate_now(o))
		return false;
	size_t done = 0;
	uint64_t taken_before = o->taken;
	while (done < o->len) {
		ssize_t n = write(o->fd, o->buf + done, o->len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && o->nonblock) {
			/* the reader is slow: keep the rest for later */
			memmove(o->buf, o->buf + done, o->len - done);
			o->len -= done;
			return true;
		}
		if (n <= 0) {
			o->err = n < 0 ? errno : ENOSPC;
			/* a regular file is cut back to the last good flush:
			 * what this one wrote is gone again */
			if (o->regular)
				o->taken = taken_before;
			drop_held(o);
			cut_back(o);
			return false;
		}
		done += (size_t)n;
		o->taken += (uint64_t)n;
		/* a pipe's reader has what was written, whatever follows */
		if (!o->regular)
			count_written(o);
	}
	o->good_off += (int64_t)o->len;
	o->len = 0;
	count_written(o);
	return true;
}

void kv_out_open_mem(struct kv_out *o)
{
	memset(o, 0, sizeof *o);
	o->fd = -1;
	o->name = "memory";
	o->cap = 256;
	o->buf = kv_xmalloc(o->cap);
}

void kv_out_free_mem(struct kv_out *o)
{
	free(o->buf);
	memset(o, 0, sizeof *o);
}

char *kv_out_reserve(struct kv_out *o, size_t n)
{
	if (o->cap - o->len >= n)
		return o->buf + o->len;
	if (o->fd < 0) {
		o->buf = kv_xgrow(o->buf, &o->cap, o->len + n, 1);
		return o->buf + o->len;
	}
	kv_out_flush(o);
	if (o->cap - o->len < n) /* a large record, or bytes a slow reader left */
		o->buf = kv_xgrow(o->buf, &o->cap, o->len + n, 1);
	return o->buf + o->len;
}

void kv_out_printf(struct kv_out *o, const char *fmt, ...)
{
	va_list ap, again;
	va_start(ap, fmt);
	va_copy(again, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n > 0) {
		char *p = kv_out_reserve(o, (size_t)n + 1);
		vsnprintf(p, (size_t)n + 1, fmt, again);
		o->len += (size_t)n;
	}
	va_end(again);
}

void kv_out_nonblocking(struct kv_out *o)
{
	struct stat st;
	if (o->fd < 0 || o->regular || fstat(o->fd, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
		return;
	o->saved_flags = fcntl(o->fd, F_GETFL);
	o->nonblock = o->saved_flags >= 0 && fcntl(o->fd, F_SETFL, o->saved_flags | O_NONBLOCK) == 0;
}

bool kv_out_close(struct kv_out *o, struct kv_err *e)
{
	if (o->nonblock) {
		fcntl(o->fd, F_SETFL, o->saved_flags);
		o->nonblock = false;
	}
	kv_out_flush(o);
	if (o->trunc_pending && !o->err)
		truncate_now(o);
	if (o->owns_fd && close(o->fd) != 0 && !o->err)
		o->err = errno;
	free(o->buf);
	o->buf = NULL;
	o->cap = o->len = 0;
	free(o->ends);
	o->ends = NULL;
	o->nends = o->ends_first = o->ends_cap = 0;
	if (!o->err || o->err == EPIPE)
		return true;
	errno = o->err;
	return kv_err_set_errno(e, KV_EX_IOERR, "%s", o->name);
}

void kv_out_abandon(struct kv_out *o)
{
	if (o->owns_fd) {
		close(o->fd);
		if (o->created && o->good_off == 0)
			unlink(o->name);
	}
	free(o->buf);
	free(o->ends);
	memset(o, 0, sizeof *o);
	o->fd = -1;
}

bool kv_out_finish(struct kv_out *o, bool no_input_opened, struct kv_err *e)
{
	if (!no_input_opened)
		return kv_out_close(o, e);
	kv_out_abandon(o);
	return true;
}

/* The one rule for "the same file" of an output and another file
 * (kvtools(7) "Conventions"): by device and inode when both exist, by
 * place when neither does yet (links followed); an output there that is no
 * regular file (/dev/null, a fifo) is the same as nothing, and "-" is the
 * descriptor std of its side (0 for an input, 1 for an output), known by
 * device and inode only.  An input that is not there is no input. */
static bool same_file(const char *out, const char *other, int other_std, bool other_is_input)
{
	struct stat so, st;
	bool out_std = strcmp(out, "-") == 0, other_stdio = strcmp(other, "-") == 0;
	bool out_there = (out_std ? fstat(STDOUT_FILENO, &so) : stat(out, &so)) == 0;
	bool other_there = (other_stdio ? fstat(other_std, &st) : stat(other, &st)) == 0;
	if ((out_there && !S_ISREG(so.st_mode)) || (other_is_input && !other_there))
		return false;
	if (out_std || other_stdio || out_there || other_there)
		return out_there && other_there && so.st_dev == st.st_dev && so.st_ino == st.st_ino;
	return kv_path_same(out, other);
}

bool kv_out_refuse_input(const char *opt, const char *output, const char *input, struct kv_err *e)
{
	if (!input || !output || strcmp(output, "-") == 0 || !same_file(output, input, STDIN_FILENO, true))
		return true;
	return kv_err_set(e, KV_EX_USAGE, "%s %s: the same file as the input %s", opt, output,
			  strcmp(input, "-") == 0 ? "(standard input)" : input);
}

bool kv_out_refuse_inputs(const char *opt, const char *output, char *const *inputs, size_t n, struct kv_err *e)
{
	if (n == 0)
		return kv_out_refuse_input(opt, output, "-", e);
	for (size_t i = 0; i < n; i++)
		if (!kv_out_refuse_input(opt, output, inputs[i], e))
			return false;
	return true;
}

/* An output in a message: "-o FILE", or "standard output". */
struct said { const char *opt, *space, *path; };
static struct said say_output(const struct kv_out_name *o)
{
	if (strcmp(o->path, "-") == 0)
		return (struct said){ "standard output", "", "" };
	return (struct said){ o->opt, " ", o->path };
}

bool kv_out_refuse_same(const struct kv_out_name *outs, size_t n, struct kv_err *e)
{
	for (size_t j = 1; j < n; j++)
		for (size_t i = 0; i < j && outs[j].path; i++) {
			if (!outs[i].path || !same_file(outs[j].path, outs[i].path, STDOUT_FILENO, false))
				continue;
			struct said a = say_output(&outs[j]), b = say_output(&outs[i]);
			return kv_err_set(e, KV_EX_USAGE, "%s%s%s: the same file as %s%s%s", a.opt, a.space, a.path, b.opt,
					  b.space, b.path);
		}
	return true;
}

bool kv_out_check_creatable(const char *const *paths, size_t n, struct kv_err *e)
{
	for (size_t i = 0; i < n; i++)
		if (!kv_path_check_writable(paths[i], e))
			return false;
	return true;
}

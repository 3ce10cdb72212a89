#include "base/out.h"
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
		o->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	if (o->fd < 0)
		return kv_err_set_errno(e, KV_EX_IOERR, "%s", path);
	o->name = path;
	o->owns_fd = true;
	set_up(o);
	return true;
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
		o->len = 0;
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
		o->len = 0;
		return false;
	}
	if (o->trunc_pending && o->len && !truncate_now(o))
		return false;
	size_t done = 0;
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
			o->len = 0;
			cut_back(o);
			return false;
		}
		done += (size_t)n;
	}
	o->good_off += (int64_t)o->len;
	o->len = 0;
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

bool kv_out_refuse_input(const char *opt, const char *output, const char *input, struct kv_err *e)
{
	struct stat out, in;
	if (!input || !output || strcmp(output, "-") == 0 || stat(output, &out) != 0 || !S_ISREG(out.st_mode))
		return true;
	bool std = strcmp(input, "-") == 0;
	if ((std ? fstat(STDIN_FILENO, &in) : stat(input, &in)) != 0)
		return true; /* an input that cannot be read is reported when it is met */
	if (in.st_dev == out.st_dev && in.st_ino == out.st_ino)
		return kv_err_set(e, KV_EX_USAGE, "%s %s: the same file as the input %s", opt, output,
				  std ? "(standard input)" : input);
	return true;
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

static bool creatable(const char *path)
{
	struct stat st;
	if (!path || strcmp(path, "-") == 0)
		return true;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		return false;
	}
	const char *slash = strrchr(path, '/');
	if (!slash)
		return access(".", W_OK | X_OK) == 0;
	if (slash == path)
		return access("/", W_OK | X_OK) == 0;
	char *dir = kv_xstrndup(path, (size_t)(slash - path));
	bool ok = access(dir, W_OK | X_OK) == 0;
	int e = errno;
	free(dir);
	errno = e;
	return ok;
}

bool kv_out_check_creatable(const char *const *paths, size_t n, struct kv_err *e)
{
	for (size_t i = 0; i < n; i++)
		if (!creatable(paths[i]))
			return kv_err_set_errno(e, KV_EX_IOERR, "%s", paths[i]);
	return true;
}

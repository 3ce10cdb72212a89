#include "base/input.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool kv_input_open(const char *path, int *fd, struct kv_err *e)
{
	if (strcmp(path, "-") == 0) {
		*fd = STDIN_FILENO;
		return true;
	}
	int f = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (f >= 0 && fstat(f, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(f);
		f = -1;
		errno = EISDIR;
	}
	*fd = f;
	return f >= 0 || kv_err_set_errno(e, KV_EX_NOINPUT, "%s", path);
}

bool kv_input_open_named(const char *path, int *fd, const char **name, struct kv_err *e)
{
	*name = strcmp(path, "-") == 0 ? "stdin" : path;
	return kv_input_open(path, fd, e);
}

void kv_input_close(int fd)
{
	if (fd >= 0 && fd != STDIN_FILENO)
		close(fd);
}

int kv_input_stat(const char *path, struct stat *st)
{
	return strcmp(path, "-") == 0 ? fstat(STDIN_FILENO, st) : stat(path, st);
}

bool kv_input_size(const char *path, uint64_t *size)
{
	bool std = strcmp(path, "-") == 0;
	struct stat st;
	if (kv_input_stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return false;
	/* standard input is read from where it stands: `(head -c 1k; kvdecode) < f` */
	off_t at = std ? lseek(STDIN_FILENO, 0, SEEK_CUR) : 0;
	if (at < 0)
		at = 0;
	*size = at < st.st_size ? (uint64_t)(st.st_size - at) : 0;
	return true;
}

bool kv_inputs_size(char *const *paths, size_t n, uint64_t *total)
{
	static char *const stdin_only[] = { "-" };
	if (n == 0) {
		paths = stdin_only;
		n = 1;
	}
	*total = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t size;
		if (!kv_input_size(paths[i], &size))
			return false;
		*total += size;
	}
	return true;
}

/* A named pipe, a terminal or a socket is not opened to be checked: a
 * pipe's writer sees its only reader close, and writes into the gap before
 * the second open fail (EPIPE), or wait for a reader that comes back.  Its
 * permission stands for the open it gets when its turn comes. */
static bool check_unopened(const char *path, struct kv_err *e)
{
	if (access(path, R_OK) == 0)
		return true;
	return kv_err_set_errno(e, KV_EX_NOINPUT, "%s", path);
}

bool kv_inputs_check(char *const *paths, size_t n, struct kv_err *e)
{
	bool ok = true;
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		int fd;
		if (strcmp(paths[i], "-") == 0)
			continue;
		if (stat(paths[i], &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
			ok = check_unopened(paths[i], e) && ok;
		else if (!kv_input_open(paths[i], &fd, e))
			ok = false;
		else
			close(fd);
	}
	return ok;
}

/* Waits until fd has something to read (or its end, or an error for read
 * to report); false when a stop signal came first.  A regular file is
 * always ready; a pipe is polled in ticks, so that a signal that lands
 * between the flag's test and a blocking read() is still seen. */
static bool wait_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	for (;;) {
		if (kv_stop_signal)
			return false;
		int n = poll(&p, 1, KV_IDLE_TICK_MS);
		if (n > 0 || (n < 0 && errno != EINTR))
			return true;
	}
}

enum kv_read_status kv_input_read(int fd, void *d, size_t n, size_t *got)
{
	char *p = d;
	*got = 0;
	while (*got < n) {
		if (!wait_readable(fd))
			return KV_READ_STOPPED;
		size_t want = n - *got < KV_INPUT_PIECE ? n - *got : KV_INPUT_PIECE;
		ssize_t r = read(fd, p + *got, want);
		if (r < 0 && errno == EINTR)
			continue; /* the flag is tested again before the next read */
		if (r < 0)
			return KV_READ_ERROR;
		if (r == 0)
			break;
		*got += (size_t)r;
	}
	return KV_READ_OK;
}

void kv_reader_init(struct kv_reader *r, int fd)
{
	*r = (struct kv_reader){ .fd = fd };
}

enum kv_read_status kv_reader_fill(struct kv_reader *r, void *buf, size_t room, size_t *got)
{
	*got = 0;
	if (r->idle && !kv_wait_input(r->fd, r->idle, r->idle_arg))
		return KV_READ_STOPPED;
	for (;;) {
		/* A stop that came while idle must not wait for more input. */
		if (kv_stop_signal)
			return KV_READ_STOPPED;
		ssize_t n = read(r->fd, buf, room);
		if (n >= 0) {
			*got = (size_t)n;
			r->bytes += (uint64_t)n;
			return KV_READ_OK;
		}
		if (errno != EINTR) {
			r->err = errno;
			return KV_READ_ERROR;
		}
		if (kv_stop_signal)
			return KV_READ_STOPPED;
		/* Another signal (SIGUSR1, say): let the program act on it between records. */
		if (r->idle)
			r->idle(r->idle_arg);
	}
}

bool kv_input_stopped(struct kv_err *e, const char *path)
{
	return kv_err_set(e, KV_EX_OK, "%s: loading stopped by a signal", path);
}

bool kv_inputs_regular(char *const *paths, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (kv_input_stat(paths[i], &st) == 0 && !S_ISREG(st.st_mode))
			return false;
	}
	return true;
}

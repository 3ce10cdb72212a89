#include "base/input.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
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

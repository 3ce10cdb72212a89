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

bool kv_inputs_check(char *const *paths, size_t n, struct kv_err *e)
{
	bool ok = true;
	for (size_t i = 0; i < n; i++) {
		int fd;
		if (!kv_input_open(paths[i], &fd, e))
			ok = false;
		else if (fd != STDIN_FILENO)
			close(fd);
	}
	return ok;
}

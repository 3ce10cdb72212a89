#include "base/product.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* As the kernel gives up on a path (MAXSYMLINKS). */
#define MAX_LINKS 40

/* The text of the link at path, malloc'd; NULL with errno. */
static char *read_link(const char *path, off_t size_hint)
{
	size_t cap = size_hint > 0 ? (size_t)size_hint + 1 : 64;
	for (;;) {
		char *buf = kv_xmalloc(cap);
		ssize_t n = readlink(path, buf, cap);
		if (n < 0) {
			int err = errno;
			free(buf);
			errno = err;
			return NULL;
		}
		if ((size_t)n < cap) {
			buf[n] = 0;
			return buf;
		}
		free(buf);
		cap *= 2;   /* the link changed since lstat */
	}
}

/* The directory part of path, "." when it has none. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return kv_xstrdup(".");
	return kv_xstrndup(path, slash == path ? 1 : (size_t)(slash - path));
}

char *kv_path_target(const char *path)
{
	char *p = kv_xstrdup(path);
	for (int hops = 0;; hops++) {
		struct stat st;
		if (lstat(p, &st) != 0 || !S_ISLNK(st.st_mode))
			return p;
		char *link = hops < MAX_LINKS ? read_link(p, st.st_size) : NULL;
		if (!link) {
			int err = hops < MAX_LINKS ? errno : ELOOP;
			free(p);
			errno = err;
			return NULL;
		}
		/* a relative link is relative to the directory holding it */
		const char *slash = strrchr(p, '/');
		if (link[0] != '/' && slash) {
			size_t dn = (size_t)(slash - p) + 1, ln = strlen(link);
			char *joined = kv_xmalloc(dn + ln + 1);
			memcpy(joined, p, dn);
			memcpy(joined + dn, link, ln + 1);
			free(link);
			link = joined;
		}
		free(p);
		p = link;
	}
}

/* Where path's target is, as one absolute name: its directory resolved by
 * realpath, so that the same place reads the same whatever the spelling.
 * The target as it is when its directory cannot be resolved. */
static char *place_of(const char *path)
{
	char *target = kv_path_target(path);
	if (!target)
		return kv_xstrdup(path);
	char *dir = dir_of(target), *real = realpath(dir, NULL);
	free(dir);
	if (!real)
		return target;
	const char *slash = strrchr(target, '/'), *base = slash ? slash + 1 : target;
	size_t rn = strlen(real), bn = strlen(base);
	char *place = kv_xmalloc(rn + bn + 2);
	memcpy(place, real, rn);
	place[rn] = '/';
	memcpy(place + rn + 1, base, bn + 1);
	free(real);
	free(target);
	return place;
}

bool kv_path_same(const char *a, const char *b)
{
	struct stat sa, sb;
	bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
	if (ea || eb)
		return ea && eb && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	char *pa = place_of(a), *pb = place_of(b);
	bool same = strcmp(pa, pb) == 0;
	free(pa);
	free(pb);
	return same;
}

static bool refuse_socket(const char *path, struct kv_err *e)
{
	return kv_err_set(e, KV_EX_IOERR, "%s: a socket: no file can be written there", path);
}

bool kv_path_check_writable(const char *path, struct kv_err *e)
{
	if (!path || strcmp(path, "-") == 0)
		return true;
	char *target = kv_path_target(path);
	if (!target)
		return kv_err_set_errno(e, KV_EX_IOERR, "%s", path);
	struct stat st;
	bool exists = stat(target, &st) == 0, ok = true;
	if (exists && S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		ok = false;
	} else if (exists && S_ISSOCK(st.st_mode)) {
		free(target);
		return refuse_socket(path, e);
	} else if (exists && !S_ISREG(st.st_mode)) {
		ok = access(target, W_OK) == 0;      /* written to directly */
	} else {
		char *dir = dir_of(target);          /* a file made beside it */
		ok = access(dir, W_OK | X_OK) == 0;
		int err = errno;
		free(dir);
		errno = err;
	}
	free(target);
	return ok || kv_err_set_errno(e, KV_EX_IOERR, "%s", path);
}

/* The rename is durable only once the directory holding the name is
 * synced: after a crash without it, the path can name the previous file
 * (or none).  A file system that cannot sync a directory says EINVAL. */
static bool sync_directory_of(const char *path)
{
	char *dir = dir_of(path);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return false;
	bool ok = fsync(fd) == 0 || errno == EINVAL;
	int err = errno;
	close(fd);
	errno = err;
	return ok;
}

static void release(struct kv_product *p)
{
	free(p->target);
	free(p->tmp);
	p->target = p->tmp = NULL;
	p->fd = -1;
}

static bool fail_open(struct kv_product *p, struct kv_err *e)
{
	int err = errno;
	release(p);
	errno = err;
	return kv_err_set_errno(e, KV_EX_IOERR, "%s", p->path);
}

bool kv_product_open(struct kv_product *p, const char *path, mode_t mode, struct kv_err *e)
{
	*p = (struct kv_product){ .path = path, .fd = -1 };
	if (!(p->target = kv_path_target(path)))
		return fail_open(p, e);
	struct stat st;
	if (stat(p->target, &st) == 0 && !S_ISREG(st.st_mode)) {
		if (S_ISSOCK(st.st_mode)) {
			release(p);
			return refuse_socket(path, e);
		}
		/* a directory fails here, EISDIR */
		p->fd = open(p->target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		return p->fd >= 0 || fail_open(p, e);
	}
	size_t n = strlen(p->target) + sizeof ".tmp.XXXXXX";
	p->tmp = kv_xmalloc(n);
	snprintf(p->tmp, n, "%s.tmp.XXXXXX", p->target);
	if ((p->fd = mkstemp(p->tmp)) < 0)
		return fail_open(p, e);
	if (!mode) {
		mode_t mask = umask(0);
		umask(mask);
		mode = 0666 & ~mask;
	}
	if (fchmod(p->fd, mode) != 0) {
		int err = errno;
		kv_product_abort(p);
		errno = err;
		return kv_err_set_errno(e, KV_EX_IOERR, "%s", path);
	}
	return true;
}

bool kv_product_close(struct kv_product *p, int err, bool durable, struct kv_err *e)
{
	if (!err && durable && p->tmp && fsync(p->fd) != 0)
		err = errno;
	if (p->fd >= 0 && close(p->fd) != 0 && !err)
		err = errno;
	p->fd = -1;
	if (!err && p->tmp && rename(p->tmp, p->target) != 0)
		err = errno;
	if (err) {
		if (p->tmp)
			unlink(p->tmp);
		release(p);
		errno = err;
		return kv_err_set_errno(e, KV_EX_IOERR, "%s", p->path);
	}
	bool synced = !durable || !p->tmp || sync_directory_of(p->target);
	err = errno;
	release(p);
	errno = err;
	return synced || kv_err_set_errno(e, KV_EX_IOERR, "%s: syncing its directory", p->path);
}

void kv_product_abort(struct kv_product *p)
{
	if (p->fd >= 0)
		close(p->fd);
	if (p->tmp)
		unlink(p->tmp);
	release(p);
}

/* What a program does to the paths it writes (base/product.h, base/out.h):
 * links followed, devices and fifos written to directly and never renamed
 * over, one rule for "the same file", records counted once written whole,
 * the standard descriptors reserved at start-up and the line a stop
 * signal gets. */
/* F_SETPIPE_SZ */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/err.h"
#include "base/out.h"
#include "base/product.h"
#include "base/util.h"
#include "unit.h"

/* Each test works in a directory of its own under $TMPDIR (or /tmp), made
 * the working directory, removed with what is in it at the end. */
static char dir[PATH_MAX], home[PATH_MAX];

static bool enter_dir(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/kvtools-product-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	return getcwd(home, sizeof home) && mkdtemp(dir) && chdir(dir) == 0;
}

static void leave_dir(void)
{
	char cmd[PATH_MAX + 16];
	if (chdir(home) != 0)
		return;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
}

static bool write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	return f && fputs(text, f) >= 0 && fclose(f) == 0;
}

static bool file_is(const char *path, const char *text)
{
	char buf[256] = "";
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	return strcmp(buf, text) == 0;
}

static bool is_kind(const char *path, mode_t kind)
{
	struct stat st;
	return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == kind;
}

/* A unix socket bound at path (closed: the file stays). */
static bool make_socket(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	bool ok = s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0;
	if (s >= 0)
		close(s);
	return ok;
}

static void targets_follow_links(void)
{
	ASSERT(enter_dir());
	bool ok = mkdir("d", 0700) == 0 && symlink("x", "d/rel") == 0 && symlink("d/rel", "top") == 0 &&
		  symlink("loop2", "loop1") == 0 && symlink("loop1", "loop2") == 0;
	/* a link relative to its own directory, to a file not there yet */
	char *a = kv_path_target("top"), *b = kv_path_target("plain"), *c = kv_path_target("loop1");
	int loop_errno = errno;
	leave_dir();
	ASSERT(ok);
	ASSERT_EQ_STR(a, "d/x");
	ASSERT_EQ_STR(b, "plain");
	ASSERT(!c && loop_errno == ELOOP);
	free(a);
	free(b);
}

static void same_file_rule(void)
{
	ASSERT(enter_dir());
	bool ok = mkdir("d", 0700) == 0 && symlink("new", "to-new") == 0 && write_text("old", "x") &&
		  link("old", "hard") == 0 && symlink("old", "to-old") == 0;
	bool same_new = kv_path_same("new", "./new") && kv_path_same("new", "d/../new") && kv_path_same("to-new", "new");
	bool same_old = kv_path_same("old", "hard") && kv_path_same("to-old", "old");
	bool apart = !kv_path_same("new", "new2") && !kv_path_same("old", "new") && !kv_path_same("new", "old");
	leave_dir();
	ASSERT(ok);
	ASSERT(same_new);
	ASSERT(same_old);
	ASSERT(apart);
}

static void outputs_refused_when_one(void)
{
	ASSERT(enter_dir());
	struct kv_err e = { 0 };
	bool made = mkfifo("p", 0600) == 0;
	const struct kv_out_name twice[] = { { "-o", "s.kvsnap" }, { "--report", NULL }, { "--metrics", "./s.kvsnap" } };
	bool refused = !kv_out_refuse_same(twice, 3, &e);
	char *msg = kv_xstrdup(kv_err_msg(&e));
	int status = e.status;
	kv_err_clear(&e);
	/* a fifo (or /dev/null) named twice is no file to overwrite */
	const struct kv_out_name fifo[] = { { "-o", "p" }, { "--metrics", "p" }, { "--report", "r" } };
	bool fifo_ok = kv_out_refuse_same(fifo, 3, &e);
	leave_dir();
	ASSERT(made);
	ASSERT(refused);
	ASSERT_EQ_STR(msg, "--metrics ./s.kvsnap: the same file as -o s.kvsnap");
	ASSERT_EQ_U64(status, KV_EX_USAGE);
	ASSERT(fifo_ok && !kv_err_any(&e));
	free(msg);
}

static void product_replaces_a_link_target(void)
{
	ASSERT(enter_dir());
	struct kv_err e = { 0 };
	bool ok = mkdir("d", 0700) == 0 && write_text("d/real", "old") && symlink("d/real", "link") == 0;
	struct kv_product p;
	ok = ok && kv_product_open(&p, "link", 0, &e);
	bool temp_beside_target = ok && p.tmp && strncmp(p.tmp, "d/real.tmp.", 11) == 0;
	ok = ok && write(p.fd, "new", 3) == 3 && kv_product_close(&p, 0, true, &e);
	bool link_kept = is_kind("link", S_IFLNK), replaced = file_is("link", "new");
	leave_dir();
	ASSERT(ok);
	ASSERT(temp_beside_target);
	ASSERT(link_kept);
	ASSERT(replaced);
}

static void product_writes_a_fifo_directly(void)
{
	ASSERT(enter_dir());
	struct kv_err e = { 0 };
	bool made = mkfifo("p", 0600) == 0 && symlink("p", "to-p") == 0;
	/* a reader first, so that opening for writing does not wait */
	int rd = made ? open("p", O_RDONLY | O_NONBLOCK) : -1;
	struct kv_product p = { 0 };
	bool opened = rd >= 0 && kv_product_open(&p, "to-p", 0, &e);
	bool direct = opened && p.tmp == NULL;
	bool closed = opened && write(p.fd, "abc", 3) == 3 && kv_product_close(&p, 0, true, &e);
	char buf[8] = "";
	bool got = rd >= 0 && read(rd, buf, sizeof buf) == 3 && memcmp(buf, "abc", 3) == 0;
	if (rd >= 0)
		close(rd);
	bool still_fifo = is_kind("p", S_IFIFO) && is_kind("to-p", S_IFLNK);
	/* a failed write replaces nothing and removes nothing */
	rd = open("p", O_RDONLY | O_NONBLOCK);
	bool failed = kv_product_open(&p, "p", 0, &e) && !kv_product_close(&p, ENOSPC, true, &e);
	if (rd >= 0)
		close(rd);
	bool fifo_after_failure = is_kind("p", S_IFIFO);
	leave_dir();
	ASSERT(made && opened && direct && closed && got);
	ASSERT(still_fifo);
	ASSERT(failed && fifo_after_failure);
	ASSERT_EQ_STR(kv_err_msg(&e), "p: No space left on device");
	kv_err_clear(&e);
}

static void no_file_where_a_socket_or_directory_is(void)
{
	ASSERT(enter_dir());
	struct kv_err e = { 0 };
	bool made = make_socket("s") && mkdir("d", 0700) == 0;
	struct kv_product p;
	bool refused = !kv_product_open(&p, "s", 0, &e);
	char *msg = kv_xstrdup(kv_err_msg(&e));
	kv_err_clear(&e);
	bool checked = !kv_path_check_writable("s", &e);
	char *check_msg = kv_xstrdup(kv_err_msg(&e));
	kv_err_clear(&e);
	bool dir_refused = !kv_path_check_writable("d", &e);
	char *dir_msg = kv_xstrdup(kv_err_msg(&e));
	kv_err_clear(&e);
	bool socket_kept = is_kind("s", S_IFSOCK);
	leave_dir();
	ASSERT(made && refused && checked && dir_refused);
	ASSERT_EQ_STR(msg, "s: a socket: no file can be written there");
	ASSERT_EQ_STR(check_msg, msg);
	ASSERT_EQ_STR(dir_msg, "d: Is a directory");
	ASSERT(socket_kept);
	free(msg);
	free(check_msg);
	free(dir_msg);
}

/* n records of size bytes each into o, each marked. */
static void put_records(struct kv_out *o, int n, size_t size)
{
	char *rec = malloc(size);
	memset(rec, 'r', size);
	for (int i = 0; i < n; i++) {
		kv_out_write(o, rec, size);
		kv_out_end_record(o);
	}
	free(rec);
}

static void records_counted_once_written_to_a_pipe(void)
{
	int fds[2];
	ASSERT(pipe(fds) == 0);
	signal(SIGPIPE, SIG_IGN);
	/* a pipe of one page: a non-blocking flush writes 4 of 10 records
	 * of 1000 bytes and part of the fifth */
	bool small = fcntl(fds[1], F_SETPIPE_SZ, 4096) == 4096;
	char path[32];
	snprintf(path, sizeof path, "/dev/fd/%d", fds[1]);
	struct kv_out o;
	struct kv_err e = { 0 };
	bool opened = kv_out_open(&o, path, &e);
	kv_out_nonblocking(&o);
	bool nonblock = o.nonblock;
	put_records(&o, 10, 1000);
	bool none_yet = kv_out_records(&o) == 0;
	bool flushed = kv_out_flush(&o);
	uint64_t partial = kv_out_records(&o);
	close(fds[0]);              /* the reader goes away */
	bool closed = kv_out_close(&o, &e);   /* EPIPE: a clean end */
	close(fds[1]);
	ASSERT(small && opened && nonblock && none_yet && flushed && closed);
	ASSERT_EQ_U64(partial, 4);
	ASSERT_EQ_U64(kv_out_records(&o), 4);
}

static void records_counted_once_written_to_a_file(void)
{
	ASSERT(enter_dir());
	/* a file that may not grow past 10000 bytes: the second flush of
	 * 6 records of 1000 bytes fails, and the file is cut back to the first */
	struct rlimit before;
	bool limited = getrlimit(RLIMIT_FSIZE, &before) == 0;
	struct rlimit small = { 10000, before.rlim_max };
	limited = limited && setrlimit(RLIMIT_FSIZE, &small) == 0;
	signal(SIGXFSZ, SIG_IGN);
	struct kv_out o;
	struct kv_err e = { 0 };
	bool opened = kv_out_open(&o, "f", &e);
	put_records(&o, 6, 1000);
	bool first = kv_out_flush(&o);
	put_records(&o, 6, 1000);
	bool second = kv_out_flush(&o);
	bool closed = kv_out_close(&o, &e);
	struct stat st;
	bool size_ok = stat("f", &st) == 0 && st.st_size == 6000;
	setrlimit(RLIMIT_FSIZE, &before);
	signal(SIGXFSZ, SIG_DFL);
	leave_dir();
	ASSERT(limited && opened && first);
	ASSERT(!second && !closed && size_ok);
	ASSERT_EQ_STR(kv_err_msg(&e), "f: File too large");
	ASSERT_EQ_U64(kv_out_records(&o), 6);
	kv_err_clear(&e);
}

/* In a child started with descriptor closed_fd closed: kv_start, then
 * the status says what became of it (0: unusable as before, /dev/null,
 * and a file opened next does not get its number). */
static int child_with_closed(int closed_fd)
{
	pid_t pid = fork();
	if (pid == 0) {
		close(closed_fd);
		char name[] = "test_product", *argv[] = { name, NULL };
		kv_start(argv);
		int flags = fcntl(closed_fd, F_GETFL);
		struct stat st, null;
		int fd = open("/dev/null", O_RDWR);
		bool wrong_way = flags >= 0 && (flags & O_ACCMODE) == (closed_fd == 0 ? O_WRONLY : O_RDONLY);
		bool is_null = fstat(closed_fd, &st) == 0 && stat("/dev/null", &null) == 0 && st.st_rdev == null.st_rdev;
		char c = 'x';
		errno = 0;
		bool unusable = closed_fd == 0 ? read(0, &c, 1) < 0 && errno == EBADF
					       : write(closed_fd, &c, 1) < 0 && errno == EBADF;
		_exit(wrong_way && is_null && unusable && fd > 2 ? 0 : 1);
	}
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static void start_reserves_closed_standard_descriptors(void)
{
	fflush(stdout);
	for (int fd = 0; fd <= 2; fd++) {
		int st = child_with_closed(fd);
		if (st != 0)
			printf("# with descriptor %d closed: child status %d\n", fd, st);
		ASSERT(st == 0);
	}
}

/* What kv_say_stopped writes to stderr, in memory of its own. */
static char *said_stopped(int sig, const char *const *products, size_t n)
{
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	FILE *f = tmpfile();
	if (saved < 0 || !f)
		return NULL;
	dup2(fileno(f), STDERR_FILENO);
	kv_stop_signal = sig;
	kv_say_stopped(products, n);
	kv_stop_signal = 0;
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	char buf[512] = "";
	rewind(f);
	size_t got = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[got] = 0;
	return kv_xstrdup(buf);
}

static void stop_line(void)
{
	const char *products[] = { "-", NULL, "s.kvsnap" };
	char *all = said_stopped(SIGTERM, products, 3), *none = said_stopped(SIGINT, NULL, 0);
	char *quiet = said_stopped(0, products, 3);
	ASSERT(all && none && quiet);
	ASSERT_EQ_STR(all, "kvtools: stopped by SIGTERM before the end; what came before it goes to standard output, s.kvsnap\n");
	ASSERT_EQ_STR(none, "kvtools: stopped by SIGINT before the end\n");
	ASSERT_EQ_STR(quiet, "");
	free(all);
	free(none);
	free(quiet);
}

int main(void)
{
	RUN(targets_follow_links);
	RUN(same_file_rule);
	RUN(outputs_refused_when_one);
	RUN(product_replaces_a_link_target);
	RUN(product_writes_a_fifo_directly);
	RUN(no_file_where_a_socket_or_directory_is);
	RUN(records_counted_once_written_to_a_pipe);
	RUN(records_counted_once_written_to_a_file);
	RUN(start_reserves_closed_standard_descriptors);
	RUN(stop_line);
	return unit_done();
}

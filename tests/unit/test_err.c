/* err and kv_status_merge: the one way lib/ reports a failure, and the one
 * order in which a program's failures make its exit status; and input, the
 * one rule for an input that cannot be opened. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/err.h"
#include "base/input.h"
#include "base/out.h"
#include "base/util.h"
#include "unit.h"

/* Most serious first, as util.h documents. */
static const int order[] = { KV_EX_USAGE, KV_EX_SOFTWARE, KV_EX_IOERR, KV_EX_UNAVAILABLE,
			     KV_EX_NOINPUT, KV_EX_DATAERR, KV_EX_NOTFOUND, KV_EX_OK };
#define NORDER (sizeof order / sizeof order[0])

static void merge_precedence(void)
{
	ASSERT_EQ_U64(order[0], 64);
	for (size_t i = 0; i < NORDER; i++) {
		ASSERT_EQ_U64(kv_status_merge(order[i], order[i]), order[i]);
		for (size_t j = i + 1; j < NORDER; j++) {
			ASSERT_EQ_U64(kv_status_merge(order[i], order[j]), order[i]);
			ASSERT_EQ_U64(kv_status_merge(order[j], order[i]), order[i]);
		}
	}
	/* the cases the programs met before there was one function */
	ASSERT_EQ_U64(kv_status_merge(KV_EX_IOERR, KV_EX_NOINPUT), 74);      /* kvdecode, kvmatch, kvquery */
	ASSERT_EQ_U64(kv_status_merge(KV_EX_NOINPUT, KV_EX_DATAERR), 66);    /* kvdecode, kvmatch, kvquery, kvnats */
	ASSERT_EQ_U64(kv_status_merge(KV_EX_UNAVAILABLE, KV_EX_NOINPUT), 69); /* kvnats -P */
	ASSERT_EQ_U64(kv_status_merge(KV_EX_IOERR, KV_EX_UNAVAILABLE), 74);  /* kvnats -C, kvstat */
	ASSERT_EQ_U64(kv_status_merge(KV_EX_SOFTWARE, KV_EX_IOERR), 70);     /* kvpub */
	ASSERT_EQ_U64(kv_status_merge(KV_EX_OK, KV_EX_DATAERR), 65);
}

static void merge_other_statuses(void)
{
	/* below every named failure, above "nothing found", the larger first */
	ASSERT_EQ_U64(kv_status_merge(71, KV_EX_DATAERR), 65);
	ASSERT_EQ_U64(kv_status_merge(KV_EX_NOTFOUND, 71), 71);
	ASSERT_EQ_U64(kv_status_merge(2, 71), 71);
	ASSERT_EQ_U64(kv_status_merge(71, 2), 71);
	ASSERT_EQ_U64(kv_status_merge(0, 3), 3);
}

static void merge_is_an_order(void)
{
	static const int all[] = { 64, 70, 74, 69, 66, 65, 1, 0, 2, 3, 71, 75, 255 };
	size_t n = sizeof all / sizeof all[0];
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			int ab = kv_status_merge(all[i], all[j]);
			ASSERT_EQ_U64(ab, kv_status_merge(all[j], all[i]));
			ASSERT(ab == all[i] || ab == all[j]);
			for (size_t k = 0; k < n; k++)
				ASSERT_EQ_U64(kv_status_merge(ab, all[k]), kv_status_merge(all[i], kv_status_merge(all[j], all[k])));
		}
}

static void set_and_read(void)
{
	struct kv_err e = { 0 };
	ASSERT(!kv_err_any(&e));
	ASSERT(strcmp(kv_err_msg(&e), "") == 0);
	ASSERT(!kv_err_set(&e, KV_EX_DATAERR, "%s: line %u: %s", "regs.jsonl", 3u, "bad"));
	ASSERT(kv_err_any(&e));
	ASSERT_EQ_U64(e.status, 65);
	ASSERT(strcmp(kv_err_msg(&e), "regs.jsonl: line 3: bad") == 0);
	/* a second problem: the messages in order, the status the more serious */
	kv_err_set(&e, KV_EX_IOERR, "regs.jsonl: cut");
	ASSERT_EQ_U64(e.status, 74);
	ASSERT(strcmp(kv_err_msg(&e), "regs.jsonl: line 3: bad") == 0);
	ASSERT(strcmp(e.text + strlen(e.text) + 1, "regs.jsonl: cut") == 0);
	kv_err_set(&e, KV_EX_DATAERR, "again");
	ASSERT_EQ_U64(e.status, 74);
	kv_err_clear(&e);
	ASSERT(!kv_err_any(&e));
	ASSERT_EQ_U64(e.status, 0);
	/* no length limit */
	char path[5000];
	memset(path, 'p', sizeof path - 1);
	path[sizeof path - 1] = 0;
	kv_err_set(&e, KV_EX_NOINPUT, "%s: gone", path);
	ASSERT_EQ_U64(strlen(kv_err_msg(&e)), sizeof path - 1 + 6);
	kv_err_clear(&e);
}

static void set_errno(void)
{
	struct kv_err e = { 0 };
	errno = ENOENT;
	ASSERT(!kv_err_set_errno(&e, KV_EX_NOINPUT, "%s", "typo.kvcap"));
	ASSERT_EQ_U64(errno, ENOENT);
	ASSERT(strcmp(kv_err_msg(&e), "typo.kvcap: No such file or directory") == 0);
	ASSERT_EQ_U64(e.status, 66);
	kv_err_clear(&e);
	errno = 0;
	kv_err_set_errno(&e, KV_EX_IOERR, "out");
	ASSERT(strcmp(kv_err_msg(&e), "out") == 0);
	kv_err_clear(&e);
}

/* What fn writes to stderr, and its exit status when it exits (else -1). */
static int run_child(void (*fn)(void), char *buf, size_t size)
{
	int p[2];
	if (pipe(p) != 0)
		return -2;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		dup2(p[1], STDERR_FILENO);
		fn();
		fflush(stderr);
		_exit(255);
	}
	close(p[1]);
	size_t len = 0;
	ssize_t n;
	while (len < size - 1 && (n = read(p[0], buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void print_two(void)
{
	struct kv_err e = { 0 };
	kv_err_set(&e, KV_EX_DATAERR, "r.jsonl: line 1: a \033[2J b");
	kv_err_set(&e, KV_EX_NOINPUT, "x: gone");
	int status = kv_err_print(&e);
	if (status != 66 || kv_err_any(&e) || e.text)
		fputs("wrong status or not emptied\n", stderr);
	fflush(stderr);
	_exit(0);
}

static void exit_usage(void)
{
	struct kv_err e = { 0 };
	kv_err_set(&e, KV_EX_USAGE, "-o out: the same file as the input in");
	kv_err_exit(&e);
}

static void exit_noinput(void)
{
	struct kv_err e = { 0 };
	kv_err_set(&e, KV_EX_NOINPUT, "dir: Is a directory");
	kv_err_exit(&e);
}

static void printing(void)
{
	char buf[512];
	kv_prog = "prog";
	ASSERT_EQ_U64(run_child(print_two, buf, sizeof buf), 0);
	/* each message its own line, made printable as every diagnostic is */
	ASSERT(strcmp(buf, "prog: r.jsonl: line 1: a ?[2J b\nprog: x: gone\n") == 0);
	ASSERT_EQ_U64(run_child(exit_usage, buf, sizeof buf), 64);
	ASSERT(strcmp(buf, "prog: -o out: the same file as the input in\nTry 'prog --help'.\n") == 0);
	ASSERT_EQ_U64(run_child(exit_noinput, buf, sizeof buf), 66);
	ASSERT(strcmp(buf, "prog: dir: Is a directory\n") == 0);
	struct kv_err e = { 0 };
	ASSERT_EQ_U64(kv_err_print(&e), 0); /* nothing held: nothing said */
}

static void inputs(void)
{
	char dir[] = "/tmp/kvtools-unit-XXXXXX";
	ASSERT(mkdtemp(dir) != NULL);
	struct kv_err e = { 0 };
	int fd = 5;
	/* a directory opens, but is no input: refused as one that cannot be opened */
	ASSERT(!kv_input_open(dir, &fd, &e));
	ASSERT_EQ_U64(fd, (unsigned long long)-1);
	ASSERT_EQ_U64(e.status, 66);
	char want[64];
	snprintf(want, sizeof want, "%s: Is a directory", dir);
	ASSERT(strcmp(kv_err_msg(&e), want) == 0);
	kv_err_clear(&e);
	ASSERT(kv_input_open("-", &fd, &e) && fd == STDIN_FILENO && !kv_err_any(&e));
	ASSERT(kv_input_open("/dev/null", &fd, &e) && fd > STDERR_FILENO);
	close(fd);
	/* every file that cannot be opened is named, in order */
	char *paths[] = { "/dev/null", dir, "-", "/nonexistent/x" };
	ASSERT(!kv_inputs_check(paths, 4, &e));
	ASSERT_EQ_U64(e.status, 66);
	ASSERT(strcmp(kv_err_msg(&e), want) == 0);
	ASSERT(strcmp(e.text + strlen(e.text) + 1, "/nonexistent/x: No such file or directory") == 0);
	ASSERT_EQ_U64(e.len, strlen(want) + 1 + strlen("/nonexistent/x: No such file or directory") + 1);
	kv_err_clear(&e);
	ASSERT(kv_inputs_check(paths, 1, &e) && !kv_err_any(&e));
	/* an output that cannot be made there: a write error */
	const char *outs[] = { NULL, "-", dir };
	ASSERT(!kv_out_check_creatable(outs, 3, &e));
	ASSERT_EQ_U64(e.status, 74);
	ASSERT(strcmp(kv_err_msg(&e), want) == 0);
	kv_err_clear(&e);
	rmdir(dir);
}

int main(void)
{
	RUN(merge_precedence);
	RUN(merge_other_statuses);
	RUN(merge_is_an_order);
	RUN(set_and_read);
	RUN(set_errno);
	RUN(printing);
	RUN(inputs);
	return unit_done();
}

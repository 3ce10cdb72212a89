/* Replays a fuzz corpus through a harness without libFuzzer, so that
 * `make check` runs every corpus file (under the sanitizers with SAN=1).
 * Prints one TAP line per corpus directory.
 *
 * Each file runs in a child process whose stderr goes to a scratch file:
 * harnesses of readers that warn (regs) stay quiet when all is well, and
 * when a file crashes, leaks (LSan reports at the child's exit), hangs or
 * runs out of memory, the line names that file and its report follows as
 * TAP comments. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Corpus files are small: anything past 16 MiB is not replayed. */
#define REPLAY_MAX (1 << 24)
/* Seconds one input may take, sanitizers included, before it counts as a hang. */
#define REPLAY_TIMEOUT 60
/* Address space one input may use, as libFuzzer's -rss_limit_mb: an input
 * that makes a reader allocate without bound fails here too.  Not under
 * AddressSanitizer, whose shadow memory reserves terabytes of addresses. */
#define REPLAY_MEMORY (1ul << 30)
#if defined(__SANITIZE_ADDRESS__)
#define REPLAY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPLAY_ASAN 1
#endif
#endif

/* In the child: one input through the harness; the exit status says how it went. */
static _Noreturn void replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(2);
	}
	uint8_t *buf = malloc(REPLAY_MAX);
	if (!buf)
		exit(2);
	size_t len = fread(buf, 1, REPLAY_MAX, f);
	fclose(f);
	alarm(REPLAY_TIMEOUT);
#ifndef REPLAY_ASAN
	struct rlimit mem = { REPLAY_MEMORY, REPLAY_MEMORY };
	setrlimit(RLIMIT_AS, &mem);
#endif
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	exit(0); /* not _exit: LeakSanitizer checks at exit */
}

/* The captured stderr of a failed input, as TAP comments. */
static void show_log(FILE *log)
{
	char line[1024];
	rewind(log);
	while (fgets(line, sizeof line, log))
		printf("# %s%s", line, strchr(line, '\n') ? "" : "\n");
}

/* Runs one file; 0 when it passed, else prints why and returns 1. */
static int run_one(const char *path, FILE *log)
{
	if (ftruncate(fileno(log), 0) != 0 || fseek(log, 0, SEEK_SET) != 0) {
		perror("replay: scratch file");
		return 1;
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		perror("replay: fork");
		return 1;
	}
	if (pid == 0) {
		dup2(fileno(log), STDERR_FILENO);
		replay_file(path);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			perror("replay: waitpid");
			return 1;
		}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	show_log(log);
	if (WIFSIGNALED(st))
		printf("# %s: killed by signal %d%s\n", path, WTERMSIG(st),
		       WTERMSIG(st) == SIGALRM ? " (timeout)" : "");
	else
		printf("# %s: exit status %d\n", path, WEXITSTATUS(st));
	return 1;
}

int main(int argc, char **argv)
{
	int failed = 0;
	FILE *log = tmpfile();
	if (!log) {
		perror("replay: tmpfile");
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		if (!d) {
			printf("not ok %d - %s: cannot open\n", i, argv[i]);
			failed = 1;
			continue;
		}
		struct dirent *e;
		unsigned n = 0, bad = 0;
		const char *first_bad = NULL;
		char path[4096], bad_path[4096];
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
			n++;
			if (run_one(path, log) && bad++ == 0) {
				snprintf(bad_path, sizeof bad_path, "%s", e->d_name);
				first_bad = bad_path;
			}
		}
		closedir(d);
		if (bad)
			printf("not ok %d - %s: %u of %u inputs failed (first: %s)\n", i, argv[i], bad, n, first_bad);
		else
			printf("%s %d - %s: %u inputs replayed\n", n ? "ok" : "not ok", i, argv[i], n);
		failed |= n == 0 || bad;
	}
	printf("1..%d\n", argc - 1);
	fclose(log);
	return failed;
}

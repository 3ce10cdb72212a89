/* peakrss: runs a command and writes its peak resident set size, in KiB,
 * to a file: what GNU time's -f %M reports, for systems without
 * /usr/bin/time (tests/memory.bats).
 *   peakrss FILE COMMAND [ARG]...
 * The command inherits standard input, output and error; peakrss exits with
 * its status (128 + N when signal N ended it, 127 when it cannot be run). */
#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: peakrss FILE COMMAND [ARG]...\n");
		return 64;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("peakrss: fork");
		return 71;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	int status;
	struct rusage ru;
	/* wait4 reports the child's own rusage: ru_maxrss is its peak, in KiB */
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("peakrss: wait4");
			return 71;
		}
	}
	FILE *f = fopen(argv[1], "w");
	if (!f || fprintf(f, "%ld\n", ru.ru_maxrss) < 0 || fclose(f) != 0) {
		perror(argv[1]);
		return 74;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

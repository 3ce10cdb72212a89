/* Replays a fuzz corpus through a harness without libFuzzer, so that
 * `make check` runs every corpus file (under the sanitizers with SAN=1).
 * Prints one TAP line per corpus directory. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	int failed = 0;
	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		if (!d) {
			printf("not ok %d - %s: cannot open\n", i, argv[i]);
			failed = 1;
			continue;
		}
		struct dirent *e;
		unsigned n = 0;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char path[4096];
			snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
			FILE *f = fopen(path, "rb");
			if (!f)
				continue;
			/* corpus files are small: anything past 16 MiB is not replayed */
			uint8_t *buf = malloc(1 << 24);
			if (!buf) {
				fclose(f);
				printf("not ok %d - %s: out of memory\n", i, argv[i]);
				return 1;
			}
			size_t len = fread(buf, 1, 1 << 24, f);
			fclose(f);
			LLVMFuzzerTestOneInput(buf, len);
			free(buf);
			n++;
		}
		closedir(d);
		printf("%s %d - %s: %u inputs replayed\n", n ? "ok" : "not ok", i, argv[i], n);
		failed |= n == 0;
	}
	printf("1..%d\n", argc - 1);
	return failed;
}

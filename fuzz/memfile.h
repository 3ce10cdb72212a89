/* memfile: a fuzz input as a file, for the readers that take a path
 * (kv_source's inputs, registrations, snapshots), so that they are fuzzed
 * exactly as the programs call them, lib/ unchanged.  One memfd per
 * process, rewritten for each input; its /proc/self/fd path opens it afresh
 * at offset 0.  Include after defining _GNU_SOURCE (memfd_create). */
#ifndef FUZZ_MEMFILE_H
#define FUZZ_MEMFILE_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static const char *fuzz_memfile(const void *data, size_t size)
{
	static int fd = -1;
	static char path[48];
	if (fd < 0) {
		fd = memfd_create("fuzz-input", MFD_CLOEXEC);
		if (fd < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0) {
		perror("memfd: ftruncate");
		abort();
	}
	const char *p = data;
	for (off_t off = 0; size > 0;) {
		ssize_t w = pwrite(fd, p, size, off);
		if (w <= 0) {
			perror("memfd: write");
			abort();
		}
		p += w;
		off += w;
		size -= (size_t)w;
	}
	return path;
}

#endif

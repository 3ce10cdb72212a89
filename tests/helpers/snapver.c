/* snapver: gives a kvsnap snapshot another format version in its header,
 * the header's checksum made again (kvsnap(5)), so that a test can show
 * how a file of that version is read.
 *   snapver VERSION FILE.kvsnap */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "arg.h"
#include "base/util.h"

int main(int argc, char **argv)
{
	kv_set_prog(argv);
	if (argc != 3)
		kv_die(KV_EX_USAGE, "usage: snapver VERSION FILE.kvsnap");
	unsigned long long version = arg_u64(argv[1]);
	FILE *f = fopen(argv[2], "r+b");
	if (!f) {
		kv_warn_errno("%s", argv[2]);
		return KV_EX_NOINPUT;
	}
	unsigned char head[32];
	if (fread(head, 1, sizeof head, f) != sizeof head || memcmp(head, "KVSNAP", 6) != 0)
		kv_die(KV_EX_DATAERR, "%s: not a kvsnap snapshot", argv[2]);
	uint32_t nsec;
	memcpy(&nsec, head + 8, 4);
	if (version > 0xffff || nsec > 64)
		kv_die(KV_EX_DATAERR, "%s: version or section count out of range", argv[2]);
	uint16_t v = (uint16_t)version;
	memcpy(head + 6, &v, 2);
	size_t n = 24 + (size_t)nsec * 32;
	unsigned char *buf = kv_xmalloc(n);
	memcpy(buf, head, 24);
	if (fread(buf + 24, 1, n - 24, f) != n - 24)
		kv_die(KV_EX_DATAERR, "%s: truncated section table", argv[2]);
	uint64_t sum = XXH3_64bits(buf, n);
	memcpy(head + 24, &sum, 8);
	free(buf);
	if (fseek(f, 0, SEEK_SET) != 0 || fwrite(head, 1, sizeof head, f) != sizeof head || fclose(f) != 0)
		kv_die(KV_EX_IOERR, "%s: cannot write", argv[2]);
	return 0;
}

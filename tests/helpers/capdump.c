/* capdump: prints a kvcap stream as text, one record a line:
 * src, flags, topic hex, seq (or -), payload hex, number of frames.
 * The tests compare captures with what a publisher logged. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "decode/kvcap.h"
#include "base/util.h"

static void hex(const struct kv_frame *f)
{
	for (size_t i = 0; i < f->n; i++)
		printf("%02x", f->p[i]);
}

int main(int argc, char **argv)
{
	kv_set_prog(argv);
	int fd = argc > 1 ? open(argv[1], O_RDONLY) : 0;
	if (fd < 0)
		kv_die(66, "%s: cannot open", argv[1]);
	struct kv_cap_reader r;
	struct kv_record rec;
	kv_cap_open(&r, fd, argc > 1 ? argv[1] : "stdin");
	int st, headers = 0;
	while ((st = kv_cap_next(&r, &rec)) != KV_CAP_EOF) {
		if (st == KV_CAP_HEADER) {
			headers++;
			continue;
		}
		if (st == KV_CAP_ERROR) {
			fprintf(stderr, "capdump: %s\n", r.error);
			kv_cap_close(&r);
			return 65;
		}
		if (st == KV_CAP_SKIP) {
			fprintf(stderr, "capdump: %s\n", r.error);
			continue;
		}
		struct kv_msg_parts m;
		kv_msg_split(rec.frames, rec.nframes, &m);
		printf("%.*s\t%llu\t", (int)rec.src_len, rec.src, (unsigned long long)rec.flags);
		hex(&m.topic);
		if (m.has_seq)
			printf("\t%llu\t", (unsigned long long)m.seq);
		else
			printf("\t-\t");
		hex(&m.payload);
		printf("\t%zu\n", rec.nframes);
	}
	kv_cap_close(&r);
	fprintf(stderr, "capdump: %d headers\n", headers);
	return fflush(stdout) ? 74 : 0;
}

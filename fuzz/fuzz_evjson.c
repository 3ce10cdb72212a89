/* libFuzzer harness: event JSON lines (kvdecode(1) "JSON FIELDS") through the yajl
 * reader kvmatch uses, one reader for all the lines of an input, as
 * kvmatch keeps one for a file.  Each line is parsed from a buffer of its
 * own size, so that a read past its end is caught.  Checked beyond "no
 * crash": a rejected line has a message, and an accepted event, written
 * again as kvdecode writes events, reads back as the same event
 * (evcheck.h). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "evcheck.h"
#include "decode/evjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(struct kv_evjson_reader *r, struct kv_evjson_reader *again, const char *line, size_t n)
{
	struct kv_event e;
	switch (kv_evjson_parse(r, line, n, &e)) {
	case KV_EVJSON_BAD:
		evcheck(kv_evjson_error(r)[0] != 0);
		break;
	case KV_EVJSON_ERROR_LINE:
	case KV_EVJSON_NO_EVENTS:
	case KV_EVJSON_LOST:
		break;
	case KV_EVJSON_EVENT: {
		struct kv_wire_ctx ctx = { e.src, e.topic, e.recv_ns, e.has_seq, e.seq, e.replayed, false, 0 };
		evcheck_roundtrip(again, &e, &ctx);
		break;
	}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kv_evjson_reader *r = kv_evjson_reader_new(), *again = kv_evjson_reader_new();
	const char *p = (const char *)data, *end = p + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		char *line = malloc(n ? n : 1);
		memcpy(line, p, n);
		check_line(r, again, line, n);
		free(line);
		p += n + 1;
	}
	kv_evjson_reader_free(again);
	kv_evjson_reader_free(r);
	return 0;
}

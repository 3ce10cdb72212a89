/* libFuzzer harness: publisher payloads through the wire decoder and the
 * JSON writer, in every option combination (the first byte picks them). */
#include <stddef.h>
#include <stdint.h>

#include "evjson.h"
#include "out.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct kv_wire_opts opts = { .hash.decimal_strings = data[0] & 1, .raw_hashes = data[0] & 2 };
	struct kv_wire w;
	kv_wire_init(&w, &opts);
	struct kv_wire_ctx ctx = { .src = { "tcp://h:1", 9 }, .topic = { "t", 1 }, .recv_ns = 1, .has_seq = true };
	struct kv_out o;
	kv_out_open_mem(&o);
	if (kv_wire_decode(&w, &ctx, data + 1, size - 1)) {
		struct kv_evjson j;
		kv_evjson_init(&j);
		kv_evjson_record(&j, &ctx);
		for (size_t i = 0; i < w.nev; i++)
			kv_evjson_write(&j, &o, &w.ev[i]);
		kv_evjson_free(&j);
	}
	kv_out_free_mem(&o);
	kv_wire_free(&w);
	return 0;
}

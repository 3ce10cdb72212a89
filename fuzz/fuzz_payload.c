/* libFuzzer harness: publisher payloads (vLLM array and map events in
 * every batch shape, memcache MetaService and Mooncake master batches: the
 * decoder tells them apart itself) through the wire decoder and the JSON
 * writer, in every option combination.  The first byte picks them:
 *   bit 0 --decimal-strings, bit 1 --raw-hashes, bit 2 a record without a
 *   seq frame, bit 3 a replayed record.
 * Checked beyond "no crash": every event line kvdecode writes is read back
 * by kvmatch's line reader as the same event (evcheck.h), and a failed
 * payload says why. */
#include <stddef.h>
#include <stdint.h>

#include "evcheck.h"
#include "decode/evjson.h"
#include "base/out.h"
#include "decode/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct kv_wire_opts opts = { .hash.decimal_strings = data[0] & 1, .raw_hashes = data[0] & 2 };
	struct kv_wire w;
	kv_wire_init(&w, &opts);
	struct kv_wire_ctx ctx = { .src = { "tcp://h:1", 9 }, .topic = { "t", 1 }, .recv_ns = 1,
				   .has_seq = !(data[0] & 4), .seq = 7, .replayed = data[0] & 8 };
	struct kv_out o;
	kv_out_open_mem(&o);
	if (kv_wire_decode(&w, &ctx, data + 1, size - 1)) {
		struct kv_evjson j;
		struct kv_evjson_reader *r = kv_evjson_reader_new();
		kv_evjson_init(&j);
		kv_evjson_record(&j, &ctx);
		for (size_t i = 0; i < w.nev; i++) {
			kv_evjson_write(&j, &o, &w.ev[i]);
			evcheck_roundtrip(r, &w.ev[i], &ctx);
		}
		for (unsigned i = 0; i < w.nissues && i < KV_WIRE_MAX_ISSUES; i++)
			kv_evjson_write_error(&o, &ctx, 1, w.issues[i]);
		kv_evjson_free(&j);
		kv_evjson_reader_free(r);
	} else {
		evcheck(w.error[0] != 0 && w.nev == 0);
		kv_evjson_write_error(&o, &ctx, 1, w.error);
	}
	kv_out_free_mem(&o);
	kv_wire_free(&w);
	return 0;
}

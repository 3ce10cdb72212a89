/* synthcap: a large synthetic capture for benchmarks.
 *   synthcap [-n RECORDS] [-e EVENTS_PER_BATCH] [-b BLOCKS] [-t TOKENS] [-s SOURCES]
 * Each record is a vLLM batch [ts, events, dp] of BLOCKS-block (default 1) BlockStored
 * array events (int hashes, parent chained), TOKENS pseudo-random tokens each
 * (vocabulary 150000, so no two blocks are alike); records go
 * round-robin over SOURCES publishers with their own seq. */
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "decode/kvcap.h"
#include "base/out.h"
#include "base/util.h"
#include "arg.h"

int main(int argc, char **argv)
{
	long n = 100000, events = 8, tokens = 16, sources = 4, blocks = 1;
	int c;
	kv_set_prog(argv);
	while ((c = getopt(argc, argv, "n:e:b:t:s:")) != -1) {
		switch (c) {
		case 'b': blocks = arg_long(optarg); break;
		case 'n': n = arg_long(optarg); break;
		case 'e': events = arg_long(optarg); break;
		case 't': tokens = arg_long(optarg); break;
		case 's': sources = arg_long(optarg); break;
		default: return 64;
		}
	}
	struct kv_out out;
	kv_out_open_stdout(&out);
	kv_cap_write_header(&out, "synthcap", 0);
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	uint64_t hash = 0x9e3779b97f4a7c15ull;
	uint32_t tok = 0;
	for (long r = 0; r < n; r++) {
		msgpack_packer pk;
		msgpack_sbuffer_clear(&sb);
		msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
		msgpack_pack_array(&pk, 3);
		msgpack_pack_double(&pk, 1717000000.0 + (double)r / 1000);
		msgpack_pack_array(&pk, (size_t)events);
		for (long e = 0; e < events; e++) {
			uint64_t parent = hash;
			msgpack_pack_array(&pk, 6);
			msgpack_pack_str_with_body(&pk, "BlockStored", 11);
			msgpack_pack_array(&pk, (size_t)blocks);
			for (long b = 0; b < blocks; b++) {
				hash = hash * 6364136223846793005ull + 1442695040888963407ull;
				msgpack_pack_uint64(&pk, hash);
			}
			if (e == 0)
				msgpack_pack_nil(&pk);
			else
				msgpack_pack_uint64(&pk, parent);
			msgpack_pack_array(&pk, (size_t)(tokens * blocks));
			for (long t = 0; t < tokens * blocks; t++)
				msgpack_pack_uint32(&pk, (tok = tok * 1103515245u + 12345u) % 150000);
			msgpack_pack_int(&pk, (int)tokens);
			msgpack_pack_nil(&pk);
		}
		msgpack_pack_int(&pk, (int)(r % sources % 4));
		char src[64];
		int srclen = snprintf(src, sizeof src, "tcp://10.0.%ld.%ld:5557", r % sources / 250, r % sources % 250);
		uint8_t seq[8];
		kv_seq_encode((uint64_t)(r / sources), seq);
		struct kv_frame f[3] = { { (const uint8_t *)"", 0 }, { seq, 8 }, { (const uint8_t *)sb.data, sb.size } };
		kv_cap_write_record(&out, 1764500000000000000ull + (uint64_t)r * 1000000, src, (size_t)srclen, 0, f, 3);
		kv_out_flush_if_full(&out);
	}
	msgpack_sbuffer_destroy(&sb);
	struct kv_err e = { 0 };
	return kv_out_close(&out, &e) ? 0 : kv_err_print(&e);
}

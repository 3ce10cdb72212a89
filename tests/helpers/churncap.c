/* churncap: synthetic captures for the memory tests (tests/memory.bats).
 *   churncap churn [-n RECORDS] [-l LIVE] [-S STEP_NS]
 *     One vLLM engine (tcp://10.0.0.1:5557) stores a new one-block prefix
 *     in xpu per record and removes, in the same batch, the block it
 *     stored LIVE records before: two events per record, a live set of
 *     LIVE blocks whatever the length of the capture.
 *   churncap offload [-n RECORDS] [-S STEP_NS]
 *     The same engine offloads a new one-block prefix to cpu per record,
 *     an engine offload that no pool ever confirms.
 *   churncap flood [-n HASHES] [-b PER_EVENT] [-S STEP_NS]
 *     One engine batch (so that a worker on host 10.0.0.1 exists), then a
 *     memcache pool (tcp://10.0.0.9:5557) storing HASHES distinct hashes
 *     for backend 10.0.0.1, PER_EVENT a batch, none of which any engine
 *     ever offloads: every one waits in the pending pool.
 * Records are 1 ms apart (STEP_NS) from 1764500000 s; tokens and hashes
 * follow from the record number, so the same options give the same bytes. */
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode/kvcap.h"
#include "base/out.h"
#include "base/util.h"

#define BASE_NS 1764500000000000000ull
#define BLOCK 16

struct gen {
	struct kv_out out;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	uint64_t seq, recv_ns, step_ns;
};

static void begin(struct gen *g)
{
	msgpack_sbuffer_clear(&g->sb);
	msgpack_packer_init(&g->pk, &g->sb, msgpack_sbuffer_write);
}

static void emit(struct gen *g, const char *src)
{
	uint8_t seq[8];
	kv_seq_encode(g->seq++, seq);
	struct kv_frame f[3] = { { (const uint8_t *)"", 0 }, { seq, 8 }, { (const uint8_t *)g->sb.data, g->sb.size } };
	kv_cap_write_record(&g->out, g->recv_ns, src, strlen(src), 0, f, 3);
	kv_out_flush_if_full(&g->out);
	g->recv_ns += g->step_ns;
}

/* The engine hash of block i: distinct for every i (an odd multiplier is a bijection). */
static uint64_t ehash(uint64_t i)
{
	return (i + 1) * 0x9e3779b97f4a7c15ull;
}

static void stored(struct gen *g, uint64_t i, const char *medium)
{
	msgpack_packer *pk = &g->pk;
	msgpack_pack_array(pk, 7);
	msgpack_pack_str_with_body(pk, "BlockStored", 11);
	msgpack_pack_array(pk, 1);
	msgpack_pack_uint64(pk, ehash(i));
	msgpack_pack_nil(pk);
	msgpack_pack_array(pk, BLOCK);
	for (uint32_t t = 0; t < BLOCK; t++)
		msgpack_pack_uint32(pk, (uint32_t)(i * BLOCK + t));
	msgpack_pack_int(pk, BLOCK);
	msgpack_pack_nil(pk);
	msgpack_pack_str_with_body(pk, medium, strlen(medium));
}

static void churn(struct gen *g, uint64_t n, uint64_t live)
{
	for (uint64_t r = 0; r < n; r++) {
		begin(g);
		msgpack_pack_array(&g->pk, 3);
		msgpack_pack_double(&g->pk, (double)g->recv_ns / 1e9);
		msgpack_pack_array(&g->pk, r >= live ? 2 : 1);
		stored(g, r, "GPU");
		if (r >= live) {
			msgpack_pack_array(&g->pk, 3);
			msgpack_pack_str_with_body(&g->pk, "BlockRemoved", 12);
			msgpack_pack_array(&g->pk, 1);
			msgpack_pack_uint64(&g->pk, ehash(r - live));
			msgpack_pack_str_with_body(&g->pk, "GPU", 3);
		}
		msgpack_pack_int(&g->pk, 0);
		emit(g, "tcp://10.0.0.1:5557");
	}
}

static void offload(struct gen *g, uint64_t n)
{
	for (uint64_t r = 0; r < n; r++) {
		begin(g);
		msgpack_pack_array(&g->pk, 3);
		msgpack_pack_double(&g->pk, (double)g->recv_ns / 1e9);
		msgpack_pack_array(&g->pk, 1);
		stored(g, r, "CPU");
		msgpack_pack_int(&g->pk, 0);
		emit(g, "tcp://10.0.0.1:5557");
	}
}

static void flood(struct gen *g, uint64_t n, uint64_t per)
{
	begin(g);
	msgpack_pack_array(&g->pk, 3);
	msgpack_pack_double(&g->pk, (double)g->recv_ns / 1e9);
	msgpack_pack_array(&g->pk, 1);
	stored(g, 0, "GPU");
	msgpack_pack_int(&g->pk, 0);
	emit(g, "tcp://10.0.0.1:5557");
	g->seq = 0; /* the pool's own seq */
	for (uint64_t h = 0; h < n; h += per) {
		uint64_t k = n - h < per ? n - h : per;
		msgpack_packer *pk = &g->pk;
		begin(g);
		msgpack_pack_map(pk, 1);
		msgpack_pack_str_with_body(pk, "events", 6);
		msgpack_pack_array(pk, 1);
		msgpack_pack_map(pk, 4);
		msgpack_pack_str_with_body(pk, "event_type", 10);
		msgpack_pack_str_with_body(pk, "BlockStored", 11);
		msgpack_pack_str_with_body(pk, "backend_id", 10);
		msgpack_pack_str_with_body(pk, "10.0.0.1", 8);
		msgpack_pack_str_with_body(pk, "medium", 6);
		msgpack_pack_str_with_body(pk, "cpu", 3);
		msgpack_pack_str_with_body(pk, "block_hashes", 12);
		msgpack_pack_array(pk, (uint32_t)k);
		/* far from the engine's hashes: pool hashes that never meet one */
		for (uint64_t j = 0; j < k; j++)
			msgpack_pack_uint64(pk, ehash(h + j + (1ull << 40)));
		emit(g, "tcp://10.0.0.9:5557");
	}
}

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end || end == s)
		kv_die(64, "'%s' is not a number", s);
	return v;
}

int main(int argc, char **argv)
{
	kv_set_prog(argv);
	static const char *const modes[] = { "churn", "offload", "flood" };
	int mode = -1;
	for (int i = 0; argc >= 2 && i < 3; i++)
		if (strcmp(argv[1], modes[i]) == 0)
			mode = i;
	if (mode < 0)
		kv_die(64, "usage: churncap churn|offload|flood [-n N] [-l LIVE] [-b PER_EVENT] [-S STEP_NS]");
	uint64_t n = 100000, live = 1000, per = 100, step = 1000000;
	int c;
	optind = 2;
	while ((c = getopt(argc, argv, "n:l:b:S:")) != -1) {
		switch (c) {
		case 'n': n = num(optarg); break;
		case 'l': live = num(optarg); break;
		case 'b': per = num(optarg); break;
		case 'S': step = num(optarg); break;
		default: return 64;
		}
	}
	if (per == 0)
		kv_die(64, "-b: at least 1");
	struct gen g = { .recv_ns = BASE_NS, .step_ns = step };
	kv_out_open_stdout(&g.out);
	msgpack_sbuffer_init(&g.sb);
	kv_cap_write_header(&g.out, "churncap", BASE_NS);
	if (mode == 0)
		churn(&g, n, live);
	else if (mode == 1)
		offload(&g, n);
	else
		flood(&g, n, per);
	msgpack_sbuffer_destroy(&g.sb);
	struct kv_err e = { 0 };
	return kv_out_close(&g.out, &e) ? 0 : kv_err_print(&e);
}

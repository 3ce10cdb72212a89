/* kvcap records as JetStream messages: subject tokens and their escaping,
 * message ids (the same message, the same id; any part changed, another),
 * and a record written back with its stream position as a fifth element. */
#include <stdlib.h>
#include <string.h>

#include "decode/jsmsg.h"
#include "decode/kvcap.h"
#include "unit.h"
#include "base/util.h"

static void tokens(void)
{
	char out[64];
	ASSERT(kv_js_token(NULL, 0, out) == 1 && strcmp(out, "_") == 0);
	ASSERT(kv_js_token("", 0, out) == 1 && strcmp(out, "%") == 0);
	ASSERT(kv_js_token("_", 1, out) == 3 && strcmp(out, "%5F") == 0);
	kv_js_token("llama_3-8B", 10, out);
	ASSERT(strcmp(out, "llama_3-8B") == 0);
	kv_js_token("a.b *>%\xff", 8, out);
	ASSERT(strcmp(out, "a%2Eb%20%2A%3E%25%FF") == 0);
	char *s = kv_js_record_subject("KVTOOLS", "llama", NULL, "tcp://10.0.0.1:5557", 19);
	ASSERT(strcmp(s, "KVTOOLS.llama._.tcp%3A%2F%2F10%2E0%2E0%2E1%3A5557") == 0);
	free(s);
	s = kv_js_header_subject("KVTOOLS");
	ASSERT(strcmp(s, "KVTOOLS.header") == 0);
	free(s);
	ASSERT(kv_js_name_ok("KV_tools-1") && !kv_js_name_ok("a.b") && !kv_js_name_ok("") && !kv_js_name_ok("a>"));
}

/* A token longer than 256 bytes escaped is its XXH3-128 digest after '~':
 * NATS closes the connection of a PUB line beyond 4096 bytes.  The check
 * values are python3-xxhash's xxh3_128_hexdigest of the same bytes. */
static void long_tokens(void)
{
	char v[300], out[KV_JS_TOKEN_MAX + 1];
	memset(v, 'a', sizeof v);
	ASSERT_EQ_U64(kv_js_token(v, 256, out), 256);
	ASSERT(out[0] == 'a' && out[255] == 'a' && out[256] == 0);
	ASSERT_EQ_U64(kv_js_token(v, 257, out), 33);
	ASSERT(strcmp(out, "~69fdd6b54ec7c0d04dd04767c00e03f1") == 0);
	memset(v, '.', sizeof v);
	ASSERT_EQ_U64(kv_js_token(v, 85, out), 255);
	ASSERT(strncmp(out, "%2E%2E", 6) == 0);
	ASSERT_EQ_U64(kv_js_token(v, 86, out), 33);
	ASSERT(strcmp(out, "~fa3e73abb8d7343db8235bbef05955f9") == 0);
}

static struct kv_record record(uint64_t recv_ns, const char *src, struct kv_frame *f, uint8_t seq[8], uint64_t s,
			       const char *payload)
{
	struct kv_record r;
	memset(&r, 0, sizeof r);
	kv_seq_encode(s, seq);
	f[0] = (struct kv_frame){ (const uint8_t *)"kv", 2 };
	f[1] = (struct kv_frame){ seq, 8 };
	f[2] = (struct kv_frame){ (const uint8_t *)payload, strlen(payload) };
	r.recv_ns = recv_ns;
	r.src = src;
	r.src_len = strlen(src);
	r.nframes = 3;
	memcpy(r.frames, f, 3 * sizeof *f);
	return r;
}

static void message_ids(void)
{
	struct kv_frame f[3];
	uint8_t seq[8];
	char a[KV_JS_MSGID_LEN + 1], b[KV_JS_MSGID_LEN + 1];
	struct kv_record r = record(1, "tcp://h:1", f, seq, 7, "payload");
	kv_js_msg_id(&r, NULL, 0, a);
	ASSERT(strlen(a) == KV_JS_MSGID_LEN && a[0] == 'r');
	/* the same record published again: the same message */
	kv_js_msg_id(&r, NULL, 0, b);
	ASSERT(strcmp(a, b) == 0);
	/* a publisher that restarted sent the same batch with the same seq
	 * again: another record (kvmatch applies it as a restart), not a
	 * duplicate; so is the same batch received by another kvsub */
	r = record(2, "tcp://h:1", f, seq, 7, "payload");
	kv_js_msg_id(&r, NULL, 0, b);
	ASSERT(strcmp(a, b) != 0);
	r = record(1, "tcp://h:1", f, seq, 7, "payload");
	r.flags = KV_CAP_FLAG_REPLAYED;
	kv_js_msg_id(&r, NULL, 0, b);
	ASSERT(strcmp(a, b) != 0);
	r = record(1, "tcp://h:1", f, seq, 8, "payload");
	kv_js_msg_id(&r, NULL, 0, b);
	ASSERT(strcmp(a, b) != 0);
	r = record(1, "tcp://h:2", f, seq, 7, "payload");
	kv_js_msg_id(&r, NULL, 0, b);
	ASSERT(strcmp(a, b) != 0);
	r = record(1, "tcp://h:1", f, seq, 7, "payloae");
	kv_js_msg_id(&r, NULL, 0, b);
	ASSERT(strcmp(a, b) != 0);
	/* the topic counts, and so does where one frame ends and the next begins */
	r = record(1, "tcp://h:1", f, seq, 7, "payload");
	r.frames[0] = (struct kv_frame){ (const uint8_t *)"kw", 2 };
	kv_js_msg_id(&r, NULL, 0, b);
	ASSERT(strcmp(a, b) != 0);
	r = record(1, "tcp://h:1", f, seq, 7, "payload");
	r.frames[0] = (struct kv_frame){ (const uint8_t *)"kvp", 3 };
	r.frames[2] = (struct kv_frame){ (const uint8_t *)"ayload", 6 };
	kv_js_msg_id(&r, NULL, 0, b);
	ASSERT(strcmp(a, b) != 0);
	/* no seq frame: the receiving time tells two equal messages apart */
	r = record(1, "tcp://h:1", f, seq, 7, "payload");
	r.nframes = 1;
	r.frames[0] = f[2];
	kv_js_msg_id(&r, NULL, 0, a);
	r.recv_ns = 2;
	kv_js_msg_id(&r, NULL, 0, b);
	ASSERT(strcmp(a, b) != 0);
	kv_js_msg_id(NULL, (const uint8_t *)"\x81\xa5kvcap\x01", 8, a);
	ASSERT(a[0] == 'h');
}

/* A record written by kvtools, read back, written with a position. */
static void positioned(void)
{
	struct kv_out o, p;
	kv_out_open_mem(&o);
	kv_out_open_mem(&p);
	struct kv_frame f[3];
	uint8_t seq[8];
	struct kv_record r = record(1764547200000000000ull, "tcp://h:1", f, seq, 7, "payload");
	kv_cap_write_record(&o, r.recv_ns, r.src, r.src_len, 0, r.frames, 3);
	msgpack_zone z;
	msgpack_zone_init(&z, 1024);
	struct kv_record got;
	const char *why = NULL;
	ASSERT(kv_cap_classify((const uint8_t *)o.buf, o.len, &z, &got, &why) == KV_CAP_RECORD && !got.has_position);
	kv_cap_write_positioned(&p, &got, 300);
	/* the same bytes but the array's size, and the position after them */
	ASSERT(p.len == o.len + 3 && (uint8_t)p.buf[0] == 0x95 && memcmp(p.buf + 1, o.buf + 1, o.len - 1) == 0);
	ASSERT(kv_cap_classify((const uint8_t *)p.buf, p.len, &z, &got, &why) == KV_CAP_RECORD);
	ASSERT(got.has_position && got.position == 300 && got.recv_ns == r.recv_ns && got.nframes == 3);
	/* a record that has one already (from kvnats -C) gets the new one instead */
	struct kv_out q;
	kv_out_open_mem(&q);
	kv_cap_write_positioned(&q, &got, 301);
	ASSERT(q.len == p.len && kv_cap_classify((const uint8_t *)q.buf, q.len, &z, &got, &why) == KV_CAP_RECORD);
	ASSERT(got.position == 301);
	ASSERT(kv_cap_classify((const uint8_t *)"hello", 5, &z, &got, &why) == KV_CAP_SKIP && why);
	msgpack_zone_destroy(&z);
	kv_out_free_mem(&o);
	kv_out_free_mem(&p);
	kv_out_free_mem(&q);
}

int main(void)
{
	RUN(tokens);
	RUN(long_tokens);
	RUN(message_ids);
	RUN(positioned);
	return unit_done();
}

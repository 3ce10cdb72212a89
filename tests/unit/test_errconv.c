/* The failures of publish as kv_err: the message kvpub prints after
 * `PROG: `, and the exit status it calls for. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "net/publish.h"
#include "unit.h"

static void pub_setup_failures(void)
{
	struct kv_pub_opts o = { .host = "127.0.0.1", .port_base = -1, .replay_port_base = -1, .hwm = 1000,
				 .buffer_steps = 10, .buffer_bytes = 1 << 20 };
	struct kv_pub *p = kv_pub_new(&o);
	struct kv_err e = { 0 };
	ASSERT(!kv_pub_map(p, "a", "nosuch://x", &e));
	ASSERT_EQ_STR(kv_err_msg(&e), "nosuch://x: cannot bind: Protocol not supported");
	ASSERT_EQ_U64(e.status, KV_EX_USAGE);
	kv_err_clear(&e);
	kv_pub_free(p, false);   /* kvpub stops at the first: a fresh one for the next */
	p = kv_pub_new(&o);
	ASSERT(kv_pub_replay_map(p, "b", "inproc://b-replay", &e));
	ASSERT(!kv_pub_replay_map(p, "b", "inproc://b-replay", &e));
	ASSERT_EQ_STR(kv_err_msg(&e), "b: --replay-map names it twice");
	ASSERT_EQ_U64(e.status, KV_EX_USAGE);
	kv_err_clear(&e);
	ASSERT(!kv_pub_start(p, &e));
	ASSERT_EQ_STR(kv_err_msg(&e), "--replay-map: b is not published (no --map for it)");
	ASSERT_EQ_U64(e.status, KV_EX_USAGE);
	kv_err_clear(&e);
	ASSERT(kv_pub_map(p, "c", "inproc://c", &e) && !kv_err_any(&e));
	ASSERT(!kv_pub_map(p, "c", "inproc://c", &e));
	ASSERT_EQ_STR(kv_err_msg(&e), "c: --map names it twice");
	kv_err_clear(&e);
	kv_pub_free(p, false);
}

int main(void)
{
	RUN(pub_setup_failures);
	return unit_done();
}

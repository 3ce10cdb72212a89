/* The failures of publish, capture and metrics as kv_err: the message kvpub
 * and kvsub print after `PROG: `, and the exit status it calls for. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/metrics.h"
#include "net/capture.h"
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

static void capture_setup_failures(void)
{
	struct kv_capture_opts o = { .hwm = 1000 };
	struct kv_capture *c = kv_capture_new(NULL, &o);
	struct kv_err e = { 0 };
	ASSERT(!kv_capture_add(c, "nosuch://x", NULL, &e));
	ASSERT_EQ_U64(e.status, KV_EX_USAGE);
	ASSERT(strncmp(kv_err_msg(&e), "nosuch://x: ", 12) == 0);
	kv_err_clear(&e);
	ASSERT(!kv_capture_set_replay(c, "tcp://127.0.0.1:1", "tcp://127.0.0.1:2", &e));
	ASSERT_EQ_STR(kv_err_msg(&e), "tcp://127.0.0.1:1: --replay names an endpoint that is not captured");
	ASSERT_EQ_U64(e.status, KV_EX_USAGE);
	kv_err_clear(&e);
	kv_capture_free(c);
}

static void metrics_failures(void)
{
	struct kv_metrics m;
	struct kv_err e = { 0 };
	kv_metrics_init(&m, "/nonexistent-kvtools-dir/m.prom", 0);
	ASSERT(!kv_metrics_begin(&m, &e));
	ASSERT_EQ_STR(kv_err_msg(&e), "/nonexistent-kvtools-dir/m.prom: No such file or directory");
	ASSERT_EQ_U64(e.status, KV_EX_IOERR);
	kv_err_clear(&e);
	kv_metrics_free(&m);

	char dir[] = "/tmp/kvtools-metrics-XXXXXX", path[64], want[128];
	ASSERT(mkdtemp(dir) != NULL);
	snprintf(path, sizeof path, "%s/m.prom", dir);
	kv_metrics_init(&m, path, 0);
	ASSERT(kv_metrics_begin(&m, &e));
	kv_metrics_sample(&m, "x", 1, NULL);
	ASSERT(mkdir(path, 0700) == 0);   /* the rename into place then fails */
	bool ok = kv_metrics_commit(&m, &e);
	rmdir(path);
	kv_metrics_free(&m);
	rmdir(dir);
	ASSERT(!ok);
	snprintf(want, sizeof want, "%s: Is a directory", path);
	ASSERT_EQ_STR(kv_err_msg(&e), want);
	ASSERT_EQ_U64(e.status, KV_EX_IOERR);
	kv_err_clear(&e);
}

int main(void)
{
	RUN(pub_setup_failures);
	RUN(capture_setup_failures);
	RUN(metrics_failures);
	return unit_done();
}

/* test_workers: the pool-event targets of a host (kv_workers_on_host),
 * indexed as workers arrive instead of scanned per event, and
 * --backend-serves taken all or nothing. */
#include "unit.h"
#include "index/workers.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct kv_str str(const char *s)
{
	return (struct kv_str){ s, strlen(s) };
}

/* "a/0 b/1": the targets of ip, by name. */
static const char *targets(struct kv_workers *ws, const char *ip, char *buf, size_t n)
{
	uint32_t ids[16];
	size_t k = kv_workers_on_host(ws, str(ip), ids, 16), used = 0;
	buf[0] = 0;
	for (size_t i = 0; i < k && i < 16; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%s/%lld", i ? " " : "", ws->v[ids[i]].instance_id,
					 (long long)ws->v[ids[i]].dp_rank);
	return buf;
}

/* Targets come in name order whatever order the workers came in, and a
 * worker added after a lookup is a target at the next. */
static void sorted_and_incremental(void)
{
	struct kv_workers ws;
	char buf[256];
	kv_workers_init(&ws);
	kv_workers_add(&ws, "c", 0, "10.0.0.5", false);
	kv_workers_add(&ws, "a", 1, "10.0.0.5", false);
	kv_workers_add(&ws, "x", 0, "10.0.0.6", false);
	ASSERT(strcmp(targets(&ws, "10.0.0.5", buf, sizeof buf), "a/1 c/0") == 0);
	kv_workers_add(&ws, "a", 0, "10.0.0.5", true);
	kv_workers_add(&ws, "b", 3, "10.0.0.5", false);
	ASSERT(strcmp(targets(&ws, "10.0.0.5", buf, sizeof buf), "a/0 a/1 b/3 c/0") == 0);
	ASSERT(strcmp(targets(&ws, "10.0.0.6", buf, sizeof buf), "x/0") == 0);
	ASSERT(strcmp(targets(&ws, "10.0.0.7", buf, sizeof buf), "") == 0);
	/* fewer places than targets: the first ones, and how many there are */
	uint32_t two[2];
	ASSERT_EQ_U64(kv_workers_on_host(&ws, str("10.0.0.5"), two, 2), 4);
	ASSERT(strcmp(ws.v[two[0]].instance_id, "a") == 0 && ws.v[two[1]].dp_rank == 1);
	ASSERT_EQ_U64(kv_workers_on_host(&ws, str("10.0.0.5"), NULL, 0), 4);
	kv_workers_free(&ws);
}

/* A pool holder is never a target; --backend-serves adds the served
 * instances' ranks to the backend's targets, each once. */
static void holders_and_serves(void)
{
	struct kv_workers ws;
	char buf[256];
	kv_workers_init(&ws);
	ASSERT(!kv_workers_add_serves(&ws, "daemon=b,a"));
	ASSERT(!kv_workers_add_serves(&ws, "10.0.0.5=a"));
	kv_workers_add(&ws, "a", 0, "10.0.0.5", false);
	kv_workers_add(&ws, "b", 0, "10.0.0.6", false);
	kv_workers_pool_holder(&ws, str("daemon"));
	kv_workers_add(&ws, "b", 1, "10.0.0.6", false);
	ASSERT(strcmp(targets(&ws, "daemon", buf, sizeof buf), "a/0 b/0 b/1") == 0);
	ASSERT(strcmp(targets(&ws, "10.0.0.5", buf, sizeof buf), "a/0") == 0);
	kv_workers_free(&ws);
}

/* A host learnt after the worker was indexed (a registration naming an
 * instance first seen without one) moves it to that host's targets. */
static void host_set_later(void)
{
	struct kv_workers ws;
	struct kv_regs regs = { 0 };
	char buf[256], path[] = "/tmp/test_workers.XXXXXX";
	kv_workers_init(&ws);
	kv_workers_add(&ws, "a", 0, NULL, false);
	ASSERT(strcmp(targets(&ws, "10.0.0.9", buf, sizeof buf), "") == 0);
	int fd = mkstemp(path);
	ASSERT(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fputs("{\"instance_id\": \"a\", \"type\": \"vLLM\", \"dp_rank\": 0, \"block_size\": 4, \"modelname\": \"m\", "
	      "\"medium_endpoints\": {\"npu\": \"tcp://10.0.0.9:5557\"}}\n",
	      f);
	fclose(f);
	struct kv_err e = { 0 };
	bool ok = kv_regs_load(path, &regs, &e);
	unlink(path);
	ASSERT(ok);
	kv_workers_register(&ws, &regs);
	ASSERT(strcmp(targets(&ws, "10.0.0.9", buf, sizeof buf), "a/0") == 0);
	kv_regs_free(&regs);
	kv_workers_free(&ws);
}

/* A refused --backend-serves leaves nothing of itself behind. */
static void serves_all_or_nothing(void)
{
	struct kv_workers ws;
	kv_workers_init(&ws);
	const char *bad[] = { "d", "=a", "d=", "d=a,", "d=a,,b", "d=,a", "d=a=b", "d=a, b", " d=a", "d=a\tb" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ASSERT(kv_workers_add_serves(&ws, bad[i]) != NULL);
	ASSERT_EQ_U64(ws.nserves, 0);
	ASSERT(kv_workers_add_serves(&ws, "d=a,b") == NULL);
	ASSERT_EQ_U64(ws.nserves, 2);
	kv_workers_free(&ws);
}

int main(void)
{
	RUN(sorted_and_incremental);
	RUN(holders_and_serves);
	RUN(host_set_later);
	RUN(serves_all_or_nothing);
	return unit_done();
}

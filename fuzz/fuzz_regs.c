/* libFuzzer harness: a registrations file (kvmatch(1) "Workers", kv-conductor
 * /register bodies, one per line) through kv_regs_load, as kvsub -r and
 * kvmatch -r read it, then used as they use it: the workers and pool
 * subscribers registered, every endpoint's host and port, wildcard
 * endpoints resolved, and each endpoint looked up as an event source.
 * Checked beyond "no crash": every registration kept is a worker with an
 * instance id and medium endpoints, or a pool with an endpoint, and has a
 * tenant and its line number. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/endpoint.h"
#include "memfile.h"
#include "index/regs.h"
#include "base/util.h"
#include "index/workers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_reg(const struct kv_reg *r)
{
	bool engine = r->medium_ep[KV_XPU] || r->medium_ep[KV_CPU] || r->medium_ep[KV_DISK];
	if (engine == r->is_pool || (engine && !r->instance_id) || (!engine && !r->endpoint) || !r->tenant ||
	    r->line == 0)
		__builtin_trap();
}

/* kvsub's and kvmatch's uses of one endpoint of a registration. */
static void use_endpoint(struct kv_workers *ws, const char *url)
{
	char host[256];
	long port;
	if (kv_endpoint_host_port(url, strlen(url), host, sizeof host, &port) &&
	    (strlen(host) >= sizeof host || port < -1 || port > 65535))
		__builtin_trap();
	if (kv_endpoint_is_wildcard(url))
		free(kv_endpoint_with_host(url, "10.0.0.9"));
	struct kv_str src = { url, strlen(url) };
	kv_workers_pool(ws, src);
	kv_workers_of_source(ws, src, true, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kv_regs regs;
	struct kv_err e = { 0 };
	if (!kv_regs_load(fuzz_memfile(data, size), &regs, &e) && e.status != KV_EX_DATAERR)
		__builtin_trap();
	kv_err_clear(&e);
	for (size_t i = 0; i < regs.n; i++)
		check_reg(&regs.v[i]);
	struct kv_workers ws;
	kv_workers_init(&ws);
	kv_workers_register(&ws, &regs);
	for (size_t i = 0; i < regs.n; i++) {
		const struct kv_reg *r = &regs.v[i];
		for (int m = 0; m < KV_NMEDIA; m++)
			if (r->medium_ep[m])
				use_endpoint(&ws, r->medium_ep[m]);
		if (r->endpoint)
			use_endpoint(&ws, r->endpoint);
		if (r->replay_endpoint)
			use_endpoint(&ws, r->replay_endpoint);
	}
	for (size_t i = 0; i < ws.npools; i++) {
		uint32_t w;
		kv_workers_pool_worker(&ws, &ws.pools[i], &w);
	}
	kv_workers_free(&ws);
	kv_regs_free(&regs);
	return 0;
}

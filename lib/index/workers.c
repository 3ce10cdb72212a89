#define _GNU_SOURCE /* qsort_r */
#include "index/workers.h"
#include "base/endpoint.h"
#include "index/index.h"
#include "base/optval.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void kv_workers_init(struct kv_workers *ws)
{
	memset(ws, 0, sizeof *ws);
	kv_strmap_init(&ws->bysrc, true);
}

void kv_workers_free(struct kv_workers *ws)
{
	for (size_t i = 0; i < ws->n; i++) {
		free(ws->v[i].instance_id);
		free(ws->v[i].host);
		free(ws->v[i].model);
		free(ws->v[i].salt);
		free(ws->v[i].tenant);
	}
	free(ws->v);
	kv_strmap_free(&ws->bysrc);
	for (size_t i = 0; i < ws->npools; i++) {
		free(ws->pools[i].endpoint);
		free(ws->pools[i].model);
		free(ws->pools[i].salt);
		free(ws->pools[i].tenant);
		free(ws->pools[i].instance_id);
	}
	free(ws->pools);
	for (size_t i = 0; i < ws->nserves; i++) {
		free(ws->serves[i].backend_id);
		free(ws->serves[i].instance_id);
	}
	free(ws->serves);
	for (size_t i = 0; i < ws->nhosts; i++)
		free(ws->hosts[i].ids);
	free(ws->hosts);
	memset(ws, 0, sizeof *ws);
}

/* Instance ids and dp ranks name workers: "by id" lookups use the map with
 * the instance id as key and a marker that no source endpoint can carry. */
#define BY_ID_MARK ((int64_t)1 << 40)
/* Hosts and backend_ids name pool-event target lists in the same map. */
#define HOST_MARK INT64_MIN

/* Not in the map: a key that names no worker and no target list. */
#define NOT_NAMED UINT32_MAX

/* The worker or target list that a key of the map names, or NOT_NAMED. */
static inline uint32_t named(struct kv_workers *ws, const char *k, size_t n, int64_t num)
{
	uint32_t id = kv_strmap_find_num(&ws->bysrc, k, n, num);
	return id == KV_STRMAP_NONE ? NOT_NAMED : kv_strmap_at(&ws->bysrc, id)->value;
}

uint32_t kv_workers_add(struct kv_workers *ws, const char *instance_id, int64_t dp_rank, const char *host,
			bool inferred)
{
	uint32_t known = named(ws, instance_id, strlen(instance_id), BY_ID_MARK + dp_rank);
	if (known != NOT_NAMED)
		return known;
	/* Worker ids are bounded (KV_MAX_WORKERS, index.h): past the bound
	 * nobody is added, and the caller drops what needed one. */
	if (ws->n >= KV_MAX_WORKERS)
		return KV_NO_WORKER;
	ws->v = kv_xgrow(ws->v, &ws->cap, ws->n + 1, sizeof *ws->v);
	struct kv_worker *w = &ws->v[ws->n];
	memset(w, 0, sizeof *w);
	w->instance_id = kv_xstrdup(instance_id);
	w->dp_rank = dp_rank;
	w->host = host ? kv_xstrdup(host) : NULL;
	w->inferred = inferred;
	ws->ninferred += inferred;
	kv_strmap_add_num(&ws->bysrc, instance_id, strlen(instance_id), BY_ID_MARK + dp_rank, (uint32_t)ws->n);
	return (uint32_t)ws->n++;
}

static char *host_of(const char *url, size_t len)
{
	char host[256];
	long port;
	if (!kv_endpoint_host_port(url, len, host, sizeof host, &port))
		return NULL;
	return kv_xstrdup(host);
}

/* The map key of a Dynamo worker id: a name no endpoint has. */
static int dynamo_key(uint64_t worker_id, char key[40])
{
	return snprintf(key, 40, "dynamo:%llu", (unsigned long long)worker_id);
}

void kv_workers_register(struct kv_workers *ws, const struct kv_regs *regs)
{
	ws->registered = true;
	for (size_t i = 0; i < regs->n; i++) {
		const struct kv_reg *r = &regs->v[i];
		if (r->is_pool) {
			ws->pools = kv_xgrow(ws->pools, &ws->cappools, ws->npools + 1, sizeof *ws->pools);
			ws->pools[ws->npools++] = (struct kv_pool_sub){
				kv_xstrdup(r->endpoint), r->backend, kv_reg_partition(r),
				r->tenant ? kv_xstrdup(r->tenant) : NULL, r->salt ? kv_xstrdup(r->salt) : NULL,
				r->instance_id ? kv_xstrdup(r->instance_id) : NULL, r->dp_rank,
			};
			continue;
		}
		if (r->instance_id) {
			int64_t worker;
			const char *url = r->medium_ep[KV_XPU] ? r->medium_ep[KV_XPU] : r->medium_ep[KV_CPU] ? r->medium_ep[KV_CPU]
													     : r->medium_ep[KV_DISK];
			char *host = url ? host_of(url, strlen(url)) : NULL;
			worker = kv_workers_add(ws, r->instance_id, r->dp_rank, host, false);
			free(host);
			if (worker == KV_NO_WORKER)
				continue;
			struct kv_worker *w = &ws->v[worker];
			ws->ninferred -= w->inferred; /* registered now: no longer counts as inferred */
			w->inferred = false;
			if (!w->host && url) {
				w->host = host_of(url, strlen(url));
				ws->hosts_stale |= (size_t)worker < ws->hosts_indexed;
			}
			free(w->model);
			free(w->tenant);
			free(w->salt);
			w->model = kv_reg_partition(r);
			w->salt = r->salt ? kv_xstrdup(r->salt) : NULL;
			w->tenant = r->tenant ? kv_xstrdup(r->tenant) : NULL;
			w->block_size = (uint32_t)r->block_size;
			w->ranks_in_batch = r->type && (strcasecmp(r->type, "TensorRT-LLM") == 0 || strcasecmp(r->type, "trtllm") == 0);
			if (r->has_worker_id) {
				char key[40];
				int n = dynamo_key(r->worker_id, key);
				kv_strmap_add_num(&ws->bysrc, key, (size_t)n, r->dp_rank, (uint32_t)worker);
			}
			/* an endpoint already named keeps its first worker */
			for (int m = 0; m < KV_NMEDIA; m++)
				if (r->medium_ep[m])
					kv_strmap_add_num(&ws->bysrc, r->medium_ep[m], strlen(r->medium_ep[m]), -1,
							  (uint32_t)worker);
		}
	}
}

bool kv_workers_load(struct kv_workers *ws, const char *path, struct kv_err *e)
{
	struct kv_regs regs;
	bool ok = kv_regs_load(path, &regs, e);
	if (ok)
		kv_workers_register(ws, &regs);
	/* a refused file's good lines are kept in regs: freed either way */
	kv_regs_free(&regs);
	return ok;
}

bool kv_workers_pool_worker(struct kv_workers *ws, const struct kv_pool_sub *sub, uint32_t *w)
{
	if (!sub || !sub->instance_id)
		return false;
	*w = kv_workers_add(ws, sub->instance_id, sub->dp_rank, NULL, false);
	return *w != KV_NO_WORKER;
}

/* "host:port" of an engine endpoint with port minus dp (vLLM offsets each
 * DP rank's port by its rank); the endpoint itself when it has no port. */
static char *inferred_instance(struct kv_str src, int64_t dp)
{
	char host[256], out[320];
	long port;
	if (!kv_endpoint_host_port(src.p, src.n, host, sizeof host, &port) || port < 0)
		return kv_xstrndup(src.p, src.n);
	long base = port - dp >= 0 ? port - dp : port;
	snprintf(out, sizeof out, strchr(host, ':') ? "[%s]:%ld" : "%s:%ld", host, base);
	return kv_xstrdup(out);
}

/* An event of rank dp on the endpoint registered for worker reg, another
 * rank, where the registration says its engine sends all its ranks on one
 * socket (TensorRT-LLM's publisher: a server's attention-DP ranks): the
 * event is the same instance's at rank dp, in its partition.  Elsewhere the
 * registration's rank wins over the batch's, which engines that know no
 * data parallelism leave at 0. */
static uint32_t registered_rank(struct kv_workers *ws, uint32_t reg, struct kv_str src, int64_t dp)
{
	uint32_t known = named(ws, src.p, src.n, dp);
	if (known != NOT_NAMED)
		return known;
	/* the strings live apart from the array, which the add may move */
	const char *instance = ws->v[reg].instance_id, *host = ws->v[reg].host;
	uint32_t w = kv_workers_add(ws, instance, dp, host, false);
	if (w == KV_NO_WORKER)
		return w;
	const struct kv_worker *r = &ws->v[reg];
	struct kv_worker *nw = &ws->v[w];
	if (w != reg && !nw->model && !nw->block_size) {
		nw->model = r->model ? kv_xstrdup(r->model) : NULL;
		nw->tenant = r->tenant ? kv_xstrdup(r->tenant) : NULL;
		nw->salt = r->salt ? kv_xstrdup(r->salt) : NULL;
		nw->block_size = r->block_size;
	}
	kv_strmap_add_num(&ws->bysrc, src.p, src.n, dp, w);
	return w;
}

uint32_t kv_workers_of_source(struct kv_workers *ws, struct kv_str src, bool has_dp, int64_t dp)
{
	uint32_t known = named(ws, src.p, src.n, -1);
	if (known != NOT_NAMED)
		return ws->v[known].ranks_in_batch && has_dp && dp >= 0 && dp != ws->v[known].dp_rank
			       ? registered_rank(ws, known, src, dp) : known;
	int64_t rank = has_dp && dp >= 0 ? dp : 0;
	known = named(ws, src.p, src.n, rank);
	if (known != NOT_NAMED)
		return known;
	if (ws->ninferred >= KV_MAX_INFERRED_WORKERS)
		return KV_NO_WORKER;
	char *instance = inferred_instance(src, rank);
	char *host = host_of(src.p, src.n);
	uint32_t w = kv_workers_add(ws, instance, rank, host, true);
	free(instance);
	free(host);
	if (w == KV_NO_WORKER)
		return w;
	kv_strmap_add_num(&ws->bysrc, src.p, src.n, rank, w);
	return w;
}

uint32_t kv_workers_of_dynamo(struct kv_workers *ws, uint64_t worker_id, int64_t dp)
{
	char key[40];
	size_t n = (size_t)dynamo_key(worker_id, key);
	int64_t rank = dp >= 0 ? dp : 0;
	uint32_t known = named(ws, key, n, rank);
	if (known != NOT_NAMED)
		return known;
	if (ws->ninferred >= KV_MAX_INFERRED_WORKERS)
		return KV_NO_WORKER;
	uint32_t w = kv_workers_add(ws, key + strlen("dynamo:"), rank, NULL, true);
	if (w != KV_NO_WORKER)
		kv_strmap_add_num(&ws->bysrc, key, n, rank, w);
	return w;
}

int kv_workers_compare(const struct kv_worker *a, const struct kv_worker *b)
{
	int c = strcmp(a->instance_id, b->instance_id);
	return c ? c : (a->dp_rank > b->dp_rank) - (a->dp_rank < b->dp_rank);
}

static int by_name(const void *x, const void *y, void *ctx)
{
	const struct kv_workers *ws = ctx;
	return kv_workers_compare(&ws->v[*(const uint32_t *)x], &ws->v[*(const uint32_t *)y]);
}

void kv_workers_sort(const struct kv_workers *ws, uint32_t *ids, size_t n)
{
	if (n > 1) /* ids may be NULL when there are none */
		qsort_r(ids, n, sizeof *ids, by_name, (void *)ws);
}

/* Puts worker id into the target list of name, in kv_workers_compare order. */
static void hostlist_insert(struct kv_workers *ws, const char *name, uint32_t id)
{
	uint32_t list = named(ws, name, strlen(name), HOST_MARK);
	if (list == NOT_NAMED) {
		list = (uint32_t)ws->nhosts;
		ws->hosts = kv_xgrow(ws->hosts, &ws->caphosts, ws->nhosts + 1, sizeof *ws->hosts);
		ws->hosts[ws->nhosts++] = (struct kv_hostlist){ NULL, 0, 0 };
		kv_strmap_add_num(&ws->bysrc, name, strlen(name), HOST_MARK, list);
	}
	struct kv_hostlist *l = &ws->hosts[list];
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (kv_workers_compare(&ws->v[l->ids[mid]], &ws->v[id]) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < l->n && l->ids[lo] == id)
		return; /* served by its own host too */
	l->ids = kv_xgrow(l->ids, &l->cap, l->n + 1, sizeof *l->ids);
	memmove(l->ids + lo + 1, l->ids + lo, (l->n - lo) * sizeof *l->ids);
	l->ids[lo] = id;
	l->n++;
}

/* A worker in the lists of its host and of the backend_ids that serve it. */
static void index_worker(struct kv_workers *ws, uint32_t id)
{
	const struct kv_worker *w = &ws->v[id];
	if (w->pool)
		return;
	if (w->host)
		hostlist_insert(ws, w->host, id);
	for (size_t i = 0; i < ws->nserves; i++)
		if (strcmp(ws->serves[i].instance_id, w->instance_id) == 0)
			hostlist_insert(ws, ws->serves[i].backend_id, id);
}

static void index_hosts(struct kv_workers *ws)
{
	if (ws->hosts_stale) {
		for (size_t i = 0; i < ws->nhosts; i++)
			ws->hosts[i].n = 0;
		ws->hosts_indexed = 0;
		ws->hosts_stale = false;
	}
	for (; ws->hosts_indexed < ws->n; ws->hosts_indexed++)
		index_worker(ws, (uint32_t)ws->hosts_indexed);
}

size_t kv_workers_on_host(struct kv_workers *ws, struct kv_str ip, uint32_t *out, size_t max)
{
	index_hosts(ws);
	uint32_t list = named(ws, ip.p, ip.n, HOST_MARK);
	if (list == NOT_NAMED)
		return 0;
	const struct kv_hostlist *l = &ws->hosts[list];
	if (l->n && max)
		memcpy(out, l->ids, (l->n < max ? l->n : max) * sizeof *out);
	return l->n;
}

const char *kv_workers_add_serves(struct kv_workers *ws, const char *spec)
{
	struct kv_span backend, list;
	const char *why = kv_pair_flaw(spec, &backend, &list);
	if (why)
		return why;
	/* all or nothing: a refused spec leaves no half of itself behind */
	size_t n = 0;
	for (const char *p = list.p; (p = strchr(p, ',')); p++)
		n++;
	struct kv_span *names = kv_xmalloc((n + 1) * sizeof *names);
	why = kv_list_flaw(list.p, ',', names, n + 1, &n);
	for (size_t i = 0; !why && i < n; i++) {
		ws->serves = kv_xgrow(ws->serves, &ws->capserves, ws->nserves + 1, sizeof *ws->serves);
		ws->serves[ws->nserves++] =
			(struct kv_serves){ kv_xstrndup(backend.p, backend.n), kv_xstrndup(names[i].p, names[i].n) };
	}
	free(names);
	ws->hosts_stale |= !why;
	return why;
}

uint32_t kv_workers_pool_holder(struct kv_workers *ws, struct kv_str backend_id)
{
	char *name = kv_xstrndup(backend_id.p, backend_id.n);
	uint32_t w = kv_workers_add(ws, name, KV_POOL_HOLDER_DP, NULL, false);
	free(name);
	if (w != KV_NO_WORKER)
		ws->v[w].pool = true;
	return w;
}

/* A registered wildcard endpoint (tcp://<*>:PORT, resolved by kvsub from
 * KVS_MASTER_SERVICE) stands for any tcp source on that port. */
static bool endpoint_matches(const char *reg, struct kv_str src)
{
	if (strlen(reg) == src.n && memcmp(reg, src.p, src.n) == 0)
		return true;
	if (!kv_endpoint_is_wildcard(reg) || src.n < 6 || memcmp(src.p, "tcp://", 6) != 0)
		return false;
	const char *port = reg + 7; /* ":PORT" */
	size_t pn = strlen(port);
	return src.n > pn && memcmp(src.p + src.n - pn, port, pn) == 0;
}

const struct kv_pool_sub *kv_workers_pool(const struct kv_workers *ws, struct kv_str src)
{
	for (size_t i = 0; i < ws->npools; i++)
		if (endpoint_matches(ws->pools[i].endpoint, src))
			return &ws->pools[i];
	return NULL;
}

bool kv_workers_partition_of(struct kv_workers *ws, struct kv_str src, const char **model, const char **tenant)
{
	uint32_t w = named(ws, src.p, src.n, -1);
	if (w != NOT_NAMED) {
		*model = ws->v[w].model;
		*tenant = ws->v[w].tenant;
		return true;
	}
	const struct kv_pool_sub *sub = kv_workers_pool(ws, src);
	if (!sub)
		return false;
	*model = sub->model;
	*tenant = sub->tenant;
	return true;
}

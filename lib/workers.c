#define _GNU_SOURCE /* qsort_r */
#include "workers.h"
#include "endpoint.h"
#include "index.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* String keys (with a number beside them) to worker ids. */
struct srcmap_slot {
	char *key;
	size_t len;
	int64_t num;
	uint32_t worker;
};

struct kv_srcmap {
	struct srcmap_slot *s;
	size_t cap, n;
};

static uint64_t key_hash(const char *k, size_t n, int64_t num)
{
	return XXH3_64bits_withSeed(k, n, (uint64_t)num);
}

static struct srcmap_slot *srcmap_find(struct kv_srcmap *m, const char *k, size_t n, int64_t num)
{
	if (!m->cap)
		return NULL;
	for (size_t i = key_hash(k, n, num) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		struct srcmap_slot *s = &m->s[i];
		if (!s->key)
			return NULL;
		if (s->len == n && s->num == num && memcmp(s->key, k, n) == 0)
			return s;
	}
}

static void srcmap_put(struct kv_srcmap *m, const char *k, size_t n, int64_t num, uint32_t worker)
{
	if (2 * (m->n + 1) > m->cap) {
		struct kv_srcmap bigger = { kv_xcalloc(m->cap ? 2 * m->cap : 64, sizeof *m->s), m->cap ? 2 * m->cap : 64, 0 };
		for (size_t i = 0; i < m->cap; i++)
			if (m->s[i].key) {
				size_t j = key_hash(m->s[i].key, m->s[i].len, m->s[i].num) & (bigger.cap - 1);
				while (bigger.s[j].key)
					j = (j + 1) & (bigger.cap - 1);
				bigger.s[j] = m->s[i];
				bigger.n++;
			}
		free(m->s);
		*m = bigger;
	}
	size_t i = key_hash(k, n, num) & (m->cap - 1);
	while (m->s[i].key)
		i = (i + 1) & (m->cap - 1);
	m->s[i] = (struct srcmap_slot){ kv_xstrndup(k, n), n, num, worker };
	m->n++;
}

void kv_workers_init(struct kv_workers *ws)
{
	memset(ws, 0, sizeof *ws);
	ws->bysrc = kv_xcalloc(1, sizeof *ws->bysrc);
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
	for (size_t i = 0; i < ws->bysrc->cap; i++)
		free(ws->bysrc->s[i].key);
	free(ws->bysrc->s);
	free(ws->bysrc);
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
	memset(ws, 0, sizeof *ws);
}

/* Instance ids and dp ranks name workers: "by id" lookups use the map with
 * the instance id as key and a marker that no source endpoint can carry. */
#define BY_ID_MARK ((int64_t)1 << 40)

uint32_t kv_workers_add(struct kv_workers *ws, const char *instance_id, int64_t dp_rank, const char *host,
			bool inferred)
{
	struct srcmap_slot *s = srcmap_find(ws->bysrc, instance_id, strlen(instance_id), BY_ID_MARK + dp_rank);
	if (s)
		return s->worker;
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
	srcmap_put(ws->bysrc, instance_id, strlen(instance_id), BY_ID_MARK + dp_rank, (uint32_t)ws->n);
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
			if (!w->host && url)
				w->host = host_of(url, strlen(url));
			free(w->model);
			free(w->tenant);
			free(w->salt);
			w->model = kv_reg_partition(r);
			w->salt = r->salt ? kv_xstrdup(r->salt) : NULL;
			w->tenant = r->tenant ? kv_xstrdup(r->tenant) : NULL;
			w->block_size = (uint32_t)r->block_size;
			for (int m = 0; m < KV_NMEDIA; m++)
				if (r->medium_ep[m] && !srcmap_find(ws->bysrc, r->medium_ep[m], strlen(r->medium_ep[m]), -1))
					srcmap_put(ws->bysrc, r->medium_ep[m], strlen(r->medium_ep[m]), -1, (uint32_t)worker);
		}
	}
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

uint32_t kv_workers_of_source(struct kv_workers *ws, struct kv_str src, bool has_dp, int64_t dp)
{
	struct srcmap_slot *s = srcmap_find(ws->bysrc, src.p, src.n, -1);
	if (s)
		return s->worker;
	int64_t rank = has_dp && dp >= 0 ? dp : 0;
	s = srcmap_find(ws->bysrc, src.p, src.n, rank);
	if (s)
		return s->worker;
	if (ws->ninferred >= KV_MAX_INFERRED_WORKERS)
		return KV_NO_WORKER;
	char *instance = inferred_instance(src, rank);
	char *host = host_of(src.p, src.n);
	uint32_t w = kv_workers_add(ws, instance, rank, host, true);
	free(instance);
	free(host);
	if (w == KV_NO_WORKER)
		return w;
	srcmap_put(ws->bysrc, src.p, src.n, rank, w);
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

static bool str_is(const char *s, struct kv_str k)
{
	return s && strlen(s) == k.n && memcmp(s, k.p, k.n) == 0;
}

/* Whether --backend-serves says backend_id serves this instance. */
static bool served_by(const struct kv_workers *ws, struct kv_str backend_id, const char *instance_id)
{
	for (size_t i = 0; i < ws->nserves; i++)
		if (str_is(ws->serves[i].backend_id, backend_id) && strcmp(ws->serves[i].instance_id, instance_id) == 0)
			return true;
	return false;
}

size_t kv_workers_on_host(const struct kv_workers *ws, struct kv_str ip, uint32_t *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < ws->n && n < max; i++) {
		const struct kv_worker *w = &ws->v[i];
		if (!w->pool && (str_is(w->host, ip) || served_by(ws, ip, w->instance_id)))
			out[n++] = (uint32_t)i;
	}
	/* Ids follow the order workers were first seen, which a resumed run
	 * (ids in the snapshot's order) does not share: name order keeps state
	 * lines and the pending pool the same either way. */
	kv_workers_sort(ws, out, n);
	return n;
}

bool kv_workers_add_serves(struct kv_workers *ws, const char *spec)
{
	const char *eq = strchr(spec, '=');
	if (!eq || eq == spec || !eq[1])
		return false;
	for (const char *p = eq + 1; *p;) {
		size_t n = strcspn(p, ",");
		if (n == 0)
			return false;
		ws->serves = kv_xgrow(ws->serves, &ws->capserves, ws->nserves + 1, sizeof *ws->serves);
		ws->serves[ws->nserves++] = (struct kv_serves){ kv_xstrndup(spec, (size_t)(eq - spec)), kv_xstrndup(p, n) };
		p += n;
		if (*p == ',' && !*++p)
			return false;
	}
	return true;
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

/* workers: who the events are about.  A worker is one (instance_id,
 * dp_rank).  Workers come from registrations (kv-conductor /register bodies)
 * or are inferred from an engine event's source (kvmatch(1) "Workers"); this module
 * maps an engine event's source to its worker, a pool event's backend_id to
 * the workers on that host (kv-conductor's hbm_ip_index, IpOnly matching),
 * and a pool source to its own registered worker (YuanRong). */
#ifndef KV_WORKERS_H
#define KV_WORKERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strmap.h"
#include "decode/event.h"
#include "index/regs.h"

struct kv_worker {
	char *instance_id;
	int64_t dp_rank;
	char *host;            /* host of its engine endpoint, for IpOnly targets */
	char *model, *tenant;  /* its partition (kv_partition_name); NULL: "default" */
	char *salt;            /* its registration's additionalsalt, for events naming a LoRA */
	uint32_t block_size;   /* registered block size, 0 if unknown */
	bool inferred;
	bool pool;             /* a pool holder: a pool that holds blocks for no named worker */
	bool ranks_in_batch;   /* its endpoint carries every DP rank, named by the batch (TensorRT-LLM) */
};

/* A pool subscriber's registration, found by its source endpoint. */
struct kv_pool_sub {
	char *endpoint;
	enum kv_backend backend;
	char *model, *tenant;  /* model: kv_partition_name of its registration */
	char *salt;
	char *instance_id;     /* its own worker (YuanRong), created when first targeted */
	int64_t dp_rank;
};

/* No worker: returned when a limit keeps one from being created. */
#define KV_NO_WORKER UINT32_MAX
/* Workers inferred from event sources, at most (kvmatch(1), LIMITS): a
 * registered cluster needs none, and each one costs memory for the rest of
 * the run, so a stream of made-up sources or dp ranks must not add them
 * without end. */
#define KV_MAX_INFERRED_WORKERS 65536u

struct kv_workers {
	struct kv_worker *v;
	size_t n, cap;
	size_t ninferred;      /* of them inferred */
	bool registered;       /* registrations were given */
	/* source endpoint (+ dp for inferred workers) -> worker, in the values */
	struct kv_strmap bysrc;
	struct kv_pool_sub *pools;
	size_t npools, cappools;
	struct kv_serves *serves;   /* backend_id -> instance_id it serves (kvmatch --backend-serves) */
	size_t nserves, capserves;
	/* Pool-event targets by host or served backend_id, each list sorted
	 * (kv_workers_compare); bysrc maps the name to its list.  Workers
	 * [0, hosts_indexed) are in them; a host set later rebuilds them. */
	struct kv_hostlist *hosts;
	size_t nhosts, caphosts, hosts_indexed;
	bool hosts_stale;
};

struct kv_hostlist {
	uint32_t *ids;
	size_t n, cap;
};

struct kv_serves {
	char *backend_id, *instance_id;
};

void kv_workers_init(struct kv_workers *ws);
void kv_workers_free(struct kv_workers *ws);
/* Adds the workers and pool subscribers of a registrations file. */
void kv_workers_register(struct kv_workers *ws, const struct kv_regs *regs);
/* Reads the registrations file at path (kv_regs_load) and adds them;
 * false, with e set and nothing added, when it cannot be read or is
 * refused. */
bool kv_workers_load(struct kv_workers *ws, const char *path, struct kv_err *e);
/* The worker that published an engine event from src with batch dp_rank
 * (registered, or inferred and created on first sight); KV_NO_WORKER when
 * inferring one more would pass KV_MAX_INFERRED_WORKERS or 2^24 workers. */
uint32_t kv_workers_of_source(struct kv_workers *ws, struct kv_str src, bool has_dp, int64_t dp);
/* The worker that published a Dynamo event: the one registered with its
 * worker_id and dp_rank, else one inferred and created on first sight, its
 * instance_id the worker_id in decimal; KV_NO_WORKER as above. */
uint32_t kv_workers_of_dynamo(struct kv_workers *ws, uint64_t worker_id, int64_t dp);
/* Finds or adds the worker (instance_id, dp_rank); for snapshot loading.
 * KV_NO_WORKER when there are 2^24 workers already. */
uint32_t kv_workers_add(struct kv_workers *ws, const char *instance_id, int64_t dp_rank, const char *host,
			bool inferred);
/* The order of workers wherever order shows (state lines, the pending
 * pool, snapshots): by instance_id, then dp_rank. */
int kv_workers_compare(const struct kv_worker *a, const struct kv_worker *b);
/* Sorts n worker ids of ws into that order. */
void kv_workers_sort(const struct kv_workers *ws, uint32_t *ids, size_t n);
/* The workers whose engine endpoint host is ip, or whose instance
 * --backend-serves names as served by ip, in kv_workers_compare order: the
 * first max of them in out; returns how many there are.  Never pool
 * holders.  One lookup (workers added since the last call are indexed
 * first), not a scan of every worker: it runs for every pool event. */
size_t kv_workers_on_host(struct kv_workers *ws, struct kv_str ip, uint32_t *out, size_t max);
const struct kv_pool_sub *kv_workers_pool(const struct kv_workers *ws, struct kv_str src);
/* The partition (kv_reg_partition, NULL: "default"; tenant NULL: none) of
 * the registration that names src: the worker registered at that engine
 * endpoint, else the pool subscriber whose endpoint matches it, wildcards
 * included, as kvmatch files its events; false when none names it.  Adds
 * nothing (kvnats' subjects). */
bool kv_workers_partition_of(struct kv_workers *ws, struct kv_str src, const char **model, const char **tenant);
/* The pool subscriber's own worker; false when its registration names none
 * (or no further worker can be added). */
bool kv_workers_pool_worker(struct kv_workers *ws, const struct kv_pool_sub *sub, uint32_t *w);

/* Takes "BACKEND_ID=INSTANCE[,INSTANCE]..." (kvmatch --backend-serves):
 * pool events from BACKEND_ID target those instances' workers, every DP
 * rank.  NULL, or why the text is refused (kv_pair_flaw, kv_list_flaw:
 * no '=' or more than one, an empty, padded or control-character name),
 * with nothing added. */
const char *kv_workers_add_serves(struct kv_workers *ws, const char *spec);
/* The pool holder named backend_id (kvmatch(1) "Pool events"): the pool itself holds the
 * blocks of its events when backend_id names no worker (a decoupled cache
 * daemon).  A worker with dp_rank -1, so that it never is an engine's.
 * KV_NO_WORKER past KV_MAX_WORKERS. */
uint32_t kv_workers_pool_holder(struct kv_workers *ws, struct kv_str backend_id);
/* dp_rank of every pool holder. */
#define KV_POOL_HOLDER_DP (-1)

#endif

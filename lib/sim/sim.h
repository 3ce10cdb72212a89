/* sim: a simulated inference cluster for kvgen.  Instances of DP ranks,
 * each rank an engine with an LRU cache of --capacity blocks in accelerator
 * memory, each instance a node with an optional KV pool (memcache or
 * Mooncake: host memory, optionally disk behind it).  Requests are routed
 * (random, round-robin, or kv: kvquery --route's scoring against the live
 * index), served from cache as far as their prefix allows, and the cluster
 * publishes what happened as real publishers would, as kvcap records.  The
 * index the simulation holds (lib/index) is the truth kvmatch must rebuild
 * from those records. */
#ifndef KV_SIM_H
#define KV_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/err.h"
#include "sim/emit.h"
#include "index/index.h"
#include "base/out.h"
#include "query/query.h"
#include "index/regs.h"
#include "sim/trace.h"
#include "index/workers.h"

/* kv: the routers' default, cache affinity and load; affinity: cache
 * affinity alone (kvquery --route's choice). */
enum kv_policy { KV_POLICY_RANDOM, KV_POLICY_ROUND_ROBIN, KV_POLICY_KV, KV_POLICY_AFFINITY };
/* The kv policy's load term by default: a weight of 1 per prompt block
 * (Dynamo's and kv-conductor's default weights), over requests taken within
 * the last LOAD_WINDOW of trace time.  kvgen(1) says why. */
#define KV_SIM_LOAD_WEIGHT_DEFAULT 1.0
#define KV_SIM_LOAD_WINDOW_DEFAULT (20ull * 1000000000ull)
enum kv_pool_kind { KV_POOL_NONE, KV_POOL_MEMCACHE, KV_POOL_MOONCAKE };

struct kv_sim_opts {
	uint32_t instances, dp;
	uint32_t capacity;          /* xpu blocks per rank */
	uint32_t block_size;
	enum kv_pool_kind pool;
	uint32_t pool_capacity;     /* cpu blocks per node */
	uint32_t disk_capacity;     /* disk blocks per node, 0: no disk tier */
	enum kv_policy policy;
	struct kv_weights weights;
	double load_weight;         /* kv policy: score less this per prompt block of the requests a
	                               rank took within load_window */
	uint64_t load_window_ns;
	uint64_t seed;
	double speed;               /* trace time is divided by this */
	int64_t pool_lag_ns;        /* pool events come this long after the engine's; negative: the
	                               engine's this long after the pool's */
	const char *pool_backend;   /* every pool event's backend_id (a decoupled pool); NULL: its node's IP */
	struct kv_emit_opts emit;
	const char *model;
	uint64_t base_ns;           /* recv_ns of trace time 0 */
	uint64_t window_ns;         /* report windows, in trace time */
};

struct kv_sim;

struct kv_sim *kv_sim_new(const struct kv_sim_opts *o, struct kv_out *capture);
void kv_sim_free(struct kv_sim *s);
/* Routes and serves one request, writing its records to the capture.
 * False when its timestamp is before the previous request's: it is then
 * served at the previous request's time (recv_ns never goes back). */
bool kv_sim_request(struct kv_sim *s, const struct kv_trace_req *r);
/* Also writes each request as a kv-conductor /query line (token_ids), or a
 * /query_by_hash line (local hashes) with by_hash, to f (NULL: none). */
void kv_sim_queries(struct kv_sim *s, FILE *f, bool by_hash);
/* Writes what is still queued (pool batches due later). */
void kv_sim_finish(struct kv_sim *s);
/* The registrations of the simulated cluster, kv-conductor /register bodies. */
void kv_sim_write_registrations(const struct kv_sim *s, FILE *f);
/* The simulation's own index as a snapshot; false with `PATH: why` (74)
 * in e. */
bool kv_sim_write_snapshot(const struct kv_sim *s, const char *path, struct kv_err *e);
/* The summary line (stderr) and the JSON report.  The summary is made
 * after the capture is closed: when it failed, it says how many records
 * the capture holds. */
void kv_sim_summary(const struct kv_sim *s, FILE *f);
void kv_sim_report(const struct kv_sim *s, FILE *f);

#endif

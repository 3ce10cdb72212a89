/* snapset: kvquery's query source, one or several snapshots (kvquery(1)
 * "Sharding"): loading them (shards hold disjoint partitions), reloading one
 * that was replaced (--watch), and resolving a parsed query line to the
 * partition that answers it and the request its walks take (model, tenant
 * and block size; seq_hashes chained through the engine hashes; --hash's
 * hashing). */
#ifndef KV_SNAPSET_H
#define KV_SNAPSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "query/query.h"
#include "query/queryline.h"

struct kv_snapset_opts {
	const char *model, *tenant;   /* --model, --tenant; NULL: not given */
	uint64_t block_size;          /* --block-size; 0: not given */
	bool rfc;                     /* --api mooncake */
	bool rfc_hash;                /* --hash rfc1403[:SEED] */
	bool dynamo_hash;             /* --hash dynamo */
	uint64_t rfc_seed;
};

/* A query resolved: where it is answered and what its walks take. */
struct kv_resolved {
	struct kv_qsource *src;       /* the partition's shard */
	struct kv_snap *snap;         /* of src */
	struct kv_query req;          /* its arrays valid until the next resolve */
	const char *model;            /* as a router is asked: the query's, --model's or the partition's */
	size_t mlen;
	const char *tenant;           /* the partition's, whole: answers are keyed by it */
	size_t tlen;
};

struct kv_snapset;

/* paths (not copied) in -s order; nothing is read yet. */
struct kv_snapset *kv_snapset_new(const char *const *paths, size_t n, const struct kv_snapset_opts *o);
void kv_snapset_free(struct kv_snapset *s);
/* Loads snapshot i (any file: a pipe, /dev/stdin): false with the reason in e. */
bool kv_snapset_load(struct kv_snapset *s, size_t i, struct kv_err *e);
/* --watch: 0 when snapshot i is the version loaded; else before(arg) is
 * called and the file loaded again (a regular file only): 1, or -1 with the
 * reason in e, the version before staying in use (a bad file is not tried
 * again until it changes again). */
int kv_snapset_refresh(struct kv_snapset *s, size_t i, void (*before)(void *), void *arg, struct kv_err *e);
size_t kv_snapset_count(const struct kv_snapset *s);
const char *kv_snapset_path(const struct kv_snapset *s, size_t i);
/* What snapshot i holds (kvquery -v). */
void kv_snapset_sizes(const struct kv_snapset *s, size_t i, size_t *blocks, size_t *workers, size_t *partitions);
/* The longest worker name of all of them, at least 8 (--format table). */
int kv_snapset_name_width(const struct kv_snapset *s);
/* NULL and r filled, or why the query cannot be answered (the text of a
 * bad line, valid until the next call). */
const char *kv_snapset_resolve(struct kv_snapset *s, const struct kv_qline *q, struct kv_resolved *r);

#endif

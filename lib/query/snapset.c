/* snapset: kvquery's snapshots and the resolution of its queries (snapset.h). */
#include "query/snapset.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "decode/event.h"
#include "index/blockhash.h"
#include "index/regs.h"
#include "index/snap.h"
#include "index/snapload.h"
#include "index/snaplookup.h"

/* One -s snapshot: a shard when there are several (kvquery(1), Sharding). */
struct shard {
	const char *path;
	struct kv_snap snap;
	struct kv_qsource src;
	struct stat version;          /* of the file loaded, taken before it was read */
};

struct kv_snapset {
	struct kv_snapset_opts o;
	struct shard *shards;
	size_t nshards;
	struct shard *cur;            /* the shard that owns the partition of the query resolved */
	uint64_t *chains;             /* resolved seq_hashes */
	size_t capchains;
	uint64_t *seq;                /* --hash: a token query's hashes */
	size_t capseq;
	struct kv_err err;            /* the engine hashes' failure, until the next resolve */
};

struct kv_snapset *kv_snapset_new(const char *const *paths, size_t n, const struct kv_snapset_opts *o)
{
	struct kv_snapset *s = kv_xcalloc(1, sizeof *s);
	s->o = *o;
	s->shards = kv_xcalloc(n ? n : 1, sizeof *s->shards);
	s->nshards = n;
	for (size_t i = 0; i < n; i++)
		s->shards[i].path = paths[i];
	return s;
}

void kv_snapset_free(struct kv_snapset *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nshards; i++) {
		kv_qsource_free(&s->shards[i].src);
		kv_snapr_close(&s->shards[i].snap);
	}
	free(s->shards);
	free(s->chains);
	free(s->seq);
	kv_err_clear(&s->err);
	free(s);
}

size_t kv_snapset_count(const struct kv_snapset *s)
{
	return s->nshards;
}

const char *kv_snapset_path(const struct kv_snapset *s, size_t i)
{
	return s->shards[i].path;
}

void kv_snapset_sizes(const struct kv_snapset *s, size_t i, size_t *blocks, size_t *workers, size_t *partitions)
{
	const struct kv_snap *snap = &s->shards[i].snap;
	*blocks = snap->nblocks;
	*workers = snap->nworkers;
	*partitions = snap->npartitions;
}

int kv_snapset_name_width(const struct kv_snapset *s)
{
	int w = 8;
	for (size_t k = 0; k < s->nshards; k++)
		for (size_t i = 0; i < s->shards[k].snap.nworkers; i++)
			if ((int)s->shards[k].snap.workers[i].instance_id.len > w)
				w = (int)s->shards[k].snap.workers[i].instance_id.len;
	return w;
}

/* Partition p of snap holds blocks: a partition kvmatch created for a
 * registration alone holds none, and every shard given the same
 * registrations has it. */
static bool holds_blocks(const struct kv_snap *snap, int64_t p)
{
	return p >= 0 && snap->partitions[p].r[KV_RANGE_BLOCKS].count > 0;
}

/* The shard other than skip whose partition of p's name holds blocks too,
 * or NULL: p of snap holds blocks. */
static const struct shard *partition_owner(const struct kv_snapset *s, const struct shard *skip,
					   const struct kv_snap *snap, size_t p)
{
	size_t mn, tn;
	const char *m = kv_snap_string(snap, snap->partitions[p].model, &mn);
	const char *t = kv_snap_string(snap, snap->partitions[p].tenant, &tn);
	if (!holds_blocks(snap, (int64_t)p))
		return NULL;
	for (size_t i = 0; i < s->nshards; i++)
		if (&s->shards[i] != skip && s->shards[i].snap.data &&
		    holds_blocks(&s->shards[i].snap, kv_snap_partition(&s->shards[i].snap, m, mn, t, tn)))
			return &s->shards[i];
	return NULL;
}

/* Shards answer for disjoint partitions: false with "model/tenant in two
 * snapshots" (65) in e. */
static bool shards_disjoint(const struct kv_snapset *s, const struct shard *sh, const struct kv_snap *snap,
			    struct kv_err *e)
{
	for (size_t p = 0; p < snap->npartitions; p++) {
		const struct shard *other = partition_owner(s, sh, snap, p);
		if (other) {
			size_t mn, tn;
			const char *m = kv_snap_string(snap, snap->partitions[p].model, &mn);
			const char *t = kv_snap_string(snap, snap->partitions[p].tenant, &tn);
			return kv_err_set(e, KV_EX_DATAERR,
					  "%s: partition %.*s/%.*s is in %s too: shards must hold disjoint partitions",
					  sh->path, (int)mn, m, (int)tn, t, other->path);
		}
	}
	return true;
}

static bool load(struct kv_snapset *s, struct shard *sh, bool regular, struct kv_err *e)
{
	struct kv_snap snap;
	/* the version before reading it: a change while it is read is seen next time */
	struct stat version = { 0 };
	stat(sh->path, &version);
	/* what lookups need; the engine hashes when a line first needs them.
	 * A reload (--watch) takes a regular file only: a fifo or a device put
	 * in the snapshot's place would hang it or feed it without end. */
	bool ok = regular ? kv_snapr_open_regular(sh->path, KV_SNAP_PART_BLOCKS, &snap, e)
			  : kv_snapr_open(sh->path, KV_SNAP_PART_BLOCKS, &snap, e);
	if (ok && !shards_disjoint(s, sh, &snap, e)) {
		kv_snapr_close(&snap);
		ok = false;
	}
	if (!ok)
		return false;
	kv_qsource_free(&sh->src);
	kv_snapr_close(&sh->snap);
	sh->snap = snap;
	kv_qsource_snap(&sh->src, &sh->snap);
	sh->version = version;
	return true;
}

bool kv_snapset_load(struct kv_snapset *s, size_t i, struct kv_err *e)
{
	return load(s, &s->shards[i], false, e);
}

/* Whether the path still names the file as it was at load.  ctime too:
 * a rewrite in place keeps the inode and may keep the size, and mtime can
 * be set back (cp -p, rsync, touch -r); a change of ctime cannot be hidden.
 * A pipe or a device read at start (-s /dev/stdin) is the same file while
 * the path names it: its times change as it is written, not replaced. */
static bool same_version(const struct stat *a, const struct stat *b)
{
	if (a->st_dev == b->st_dev && a->st_ino == b->st_ino && !S_ISREG(a->st_mode) && !S_ISREG(b->st_mode))
		return true;
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* kvmatch replaces the file by rename, others rewrite it in place; either
 * is a new version.  The snapshot in use is a copy in memory, so it stays
 * whole whatever the file goes through. */
int kv_snapset_refresh(struct kv_snapset *s, size_t i, void (*before)(void *), void *arg, struct kv_err *e)
{
	struct shard *sh = &s->shards[i];
	struct stat st;
	if (stat(sh->path, &st) != 0 || same_version(&st, &sh->version))
		return 0;
	if (before)
		before(arg);
	if (load(s, sh, true, e))
		return 1;
	sh->version = st; /* a bad file is not retried until it changes again */
	return -1;
}

/* The snapshot holding the only partition of all the snapshots, or NULL. */
static const struct kv_snap *single_partition(const struct kv_snapset *s)
{
	const struct kv_snap *only = NULL;
	for (size_t i = 0; i < s->nshards; i++) {
		if (s->shards[i].snap.npartitions > 1 || (only && s->shards[i].snap.npartitions))
			return NULL;
		if (s->shards[i].snap.npartitions)
			only = &s->shards[i].snap;
	}
	return only;
}

/* The shard whose partition of that name holds blocks, else the first that
 * has it (registered, empty): s->cur and the partition's index, or -1. */
static void find_partition(struct kv_snapset *s, struct kv_str model, struct kv_str tenant, int64_t *part)
{
	*part = -1;
	for (size_t i = 0; i < s->nshards; i++) {
		int64_t p = kv_snap_partition(&s->shards[i].snap, model.p, model.n, tenant.p, tenant.n);
		if (p >= 0 && (*part < 0 || holds_blocks(&s->shards[i].snap, p))) {
			s->cur = &s->shards[i];
			*part = p;
		}
		if (holds_blocks(&s->shards[i].snap, p))
			return;
	}
}

/* Model, tenant and block size of a query: its own, the options', or the
 * single partition's; a tenant named nowhere is kv-conductor's "default".
 * The shard that holds the partition answers (s->cur). */
static const char *find_owner(struct kv_snapset *s, const struct kv_qline *q, int64_t *part, size_t *bs)
{
	const struct kv_snap *only = single_partition(s);
	struct kv_str model = { NULL, 0 }, tenant = { NULL, 0 };
	char *name = NULL, *base = NULL, *salt = NULL;
	if (q->has_model || s->o.model) {
		model.p = q->has_model ? q->model : s->o.model, model.n = strlen(model.p);
	} else if (only) {
		/* the partition's own name, unless the query names an adapter or salt of its model */
		model.p = kv_snap_string(only, only->partitions[0].model, &model.n);
		if (s->o.rfc && (q->lora || q->salt) && kv_partition_name_split(model.p, model.n, &base, &salt))
			model.p = base, model.n = strlen(base);
		else
			name = kv_xstrndup(model.p, model.n);
	}
	if (q->has_tenant || s->o.tenant)
		tenant.p = q->has_tenant ? q->tenant : s->o.tenant, tenant.n = strlen(tenant.p);
	else if (only)
		tenant.p = kv_snap_string(only, only->partitions[0].tenant, &tenant.n);
	else
		tenant.p = "default", tenant.n = 7;
	if (!model.p)
		return "no model in the query, no --model, and the snapshot holds several partitions";
	/* RFC #1403: the adapter and the salt are part of the partition's name
	 * (kv-conductor's /query has neither: it ignores them) */
	if (!name && s->o.rfc && (q->lora || q->salt))
		name = kv_partition_name(q->lora ? q->lora : model.p, q->lora ? strlen(q->lora) : model.n, q->salt,
					 q->salt ? strlen(q->salt) : 0);
	else if (!name)
		name = kv_partition_name(model.p, model.n, NULL, 0);
	model.p = name, model.n = strlen(name);
	find_partition(s, model, tenant, part);
	free(name);
	free(base);
	free(salt);
	if (*part < 0)
		return "no such model and tenant in the snapshot (kv-conductor: 404 \"no indexer for model=M tenant=T\")";
	const struct kv_snap *snap = &s->cur->snap;
	*bs = q->has_block_size ? q->block_size : s->o.block_size ? s->o.block_size : snap->partitions[*part].block_size;
	if (*bs == 0)
		return "no block_size in the query, no --block-size, and none known for the partition";
	return NULL;
}

/* RFC #1403's seq_hashes are the engines' own block hashes: the chains they
 * name are those kvmatch learned from the stored events; the walk ends at
 * the first the snapshot does not know. */
static void resolve_seq_hashes(struct kv_snapset *s, const uint64_t *hashes, size_t nhashes, struct kv_query *req)
{
	if (nhashes > s->capchains) {
		s->chains = kv_xrealloc(s->chains, nhashes * sizeof *s->chains);
		s->capchains = nhashes;
	}
	const struct kv_snap *snap = &s->cur->snap;
	size_t n = 0;
	uint64_t parent = KV_CHAIN_ROOT;
	uint64_t b;
	/* a sequence hash names a whole prefix: it must follow the one before */
	while (n < nhashes && kv_snap_ehash_chain(snap, req->part, hashes[n], &s->chains[n]) &&
	       (b = kv_snap_find(snap, req->part, s->chains[n])) != KV_SNAP_NO_BLOCK &&
	       kv_snap_parent(snap, req->part, b) == parent)
		parent = s->chains[n++];
	req->tokens = NULL;
	req->locals = NULL;
	req->nlocals = 0;
	req->chains = s->chains;
	req->nchains = n;
}

/* Room for a token query's n block hashes. */
static uint64_t *seq_room(struct kv_snapset *s, size_t n)
{
	if (n > s->capseq) {
		s->seq = kv_xrealloc(s->seq, n * sizeof *s->seq);
		s->capseq = n;
	}
	return s->seq;
}

/* --hash rfc1403: the query's tokens become the sequence hashes engines
 * following the RFC's standard published, resolved as seq_hashes are. */
static void hash_rfc1403(struct kv_snapset *s, const struct kv_qline *q, struct kv_query *req)
{
	size_t n = q->ntokens / req->block_size;
	uint64_t *seq = seq_room(s, n);
	n = kv_rfc_seq_hashes(q->tokens, q->ntokens, req->block_size, s->o.rfc_seed, seq, n);
	resolve_seq_hashes(s, seq, n, req);
}

/* --hash dynamo: the query's tokens become the local hashes Dynamo's router
 * computes (its adapter and cache namespace in the seed), looked up as a
 * /query_by_hash body's are: Dynamo's stores are chained from them. */
static void hash_dynamo(struct kv_snapset *s, const struct kv_qline *q, struct kv_query *req)
{
	size_t n = q->ntokens / req->block_size;
	uint64_t *seq = seq_room(s, n);
	uint64_t seed = kv_dynamo_seed(q->lora, q->cache_namespace);
	req->locals = seq;
	req->nlocals = kv_seeded_local_hashes(q->tokens, q->ntokens, req->block_size, seed, seq, n);
	req->tokens = NULL;
	req->ntokens = 0;
}

const char *kv_snapset_resolve(struct kv_snapset *s, const struct kv_qline *q, struct kv_resolved *r)
{
	kv_err_clear(&s->err);
	int64_t part;
	size_t bs;
	const char *why = find_owner(s, q, &part, &bs);
	if (why)
		return why;
	struct kv_snap *snap = &s->cur->snap;
	const struct kv_snap_partition *p = &snap->partitions[part];
	r->src = &s->cur->src;
	r->snap = snap;
	r->tenant = kv_snap_string(snap, p->tenant, &r->tlen);
	r->model = q->has_model ? q->model : s->o.model;
	if (r->model)
		r->mlen = strlen(r->model);
	else
		r->model = kv_snap_string(snap, p->model, &r->mlen);
	r->req = (struct kv_query){ (uint32_t)part, bs, q->by_hash ? NULL : q->tokens, q->ntokens,
				    q->by_hash && !q->by_seq ? q->hashes : NULL, q->nhashes, NULL, 0 };
	/* sequence hashes name chains through the snapshot's engine hashes,
	 * read (and checked) when the first line needs them: lines without
	 * need only the blocks */
	if ((q->by_seq || (s->o.rfc_hash && !q->by_hash)) && !kv_snapr_read(snap, KV_SNAP_PART_EHASHES, &s->err))
		return kv_err_msg(&s->err);
	if (q->by_seq)
		resolve_seq_hashes(s, q->hashes, q->nhashes, &r->req);
	else if (s->o.rfc_hash && !q->by_hash)
		hash_rfc1403(s, q, &r->req);
	else if (s->o.dynamo_hash && !q->by_hash)
		hash_dynamo(s, q, &r->req);
	else if (s->o.rfc && !q->by_hash)
		r->req.ntokens -= r->req.ntokens % bs; /* RFC #1403: only complete blocks are considered */
	return NULL;
}

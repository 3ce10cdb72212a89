/* snapdump: a loaded snapshot as JSON lines (snapdump.h says what it
 * owns). */
#include "index/snapdump.h"
#include "index/snap.h"
#include "index/snaplookup.h"
#include "index/match.h"
#include "base/jsonw.h"
#include "base/out.h"

#include <stddef.h>
#include <stdint.h>

void kv_snap_put_str(struct jw *w, const struct kv_snap *s, struct kv_snap_str r)
{
	size_t n;
	const char *str = kv_snap_string(s, r, &n);
	jw_put_str(w, str, n);
}

/* Who holds or waits: "instance_id" and "dp_rank", or for a pool holder
 * "pool" and its backend_id, as state lines name it. */
void kv_snap_put_who(struct jw *w, const struct kv_snap *s, const struct kv_snap_worker *wk)
{
	if (wk->flags & 2) {
		jw_put_lit(w, "\"pool\":");
		kv_snap_put_str(w, s, wk->instance_id);
		return;
	}
	jw_put_lit(w, "\"instance_id\":");
	kv_snap_put_str(w, s, wk->instance_id);
	jw_put_lit(w, ",\"dp_rank\":");
	jw_put_u64(w, wk->dp_rank);
}

static void put_holder(struct jw *w, const struct kv_snap *s, uint32_t h, bool first)
{
	static const char *const media[] = { "xpu", "cpu", "disk" };
	jw_put_lit(w, first ? "{" : ",{");
	kv_snap_put_who(w, s, &s->workers[KV_HOLDER_WORKER(h)]);
	jw_put_lit(w, ",\"media\":[");
	const char *sep = "";
	for (int med = 0; med < KV_NMEDIA; med++)
		if (KV_HOLDER_MEDIA(h) & (1u << med)) {
			jw_put_lit(w, sep);
			jw_put_char(w, '"');
			jw_put_lit(w, media[med]);
			jw_put_char(w, '"');
			sep = ",";
		}
	jw_put_lit(w, "]}");
}

static void dump_block(const struct kv_snap *s, uint32_t p, uint64_t b, struct kv_out *o)
{
	const struct kv_snap_partition *rp = &s->partitions[p];
	struct jw w;
	jw_begin(&w, o);
	jw_put_lit(&w, "{\"kind\":\"block\",\"model\":");
	kv_snap_put_str(&w, s, rp->model);
	jw_put_lit(&w, ",\"tenant\":");
	kv_snap_put_str(&w, s, rp->tenant);
	jw_put_lit(&w, ",\"chain\":");
	jw_put_hash(&w, s->chains[b]);
	jw_put_lit(&w, ",\"parent\":");
	jw_put_hash(&w, kv_snap_parent(s, p, b));
	jw_put_lit(&w, ",\"local\":");
	jw_put_hash(&w, s->locals[b]);
	jw_put_lit(&w, ",\"holders\":[");
	size_t nh;
	const uint32_t *hs = kv_snap_holders(s, b, &nh);
	for (size_t k = 0; k < nh; k++)
		put_holder(&w, s, hs[k], k == 0);
	jw_put_lit(&w, "]}\n");
	jw_end(&w);
}

static void dump_blocks(const struct kv_snap *s, struct kv_out *o)
{
	for (size_t p = 0; p < s->npartitions; p++) {
		const struct kv_snap_range *r = &s->partitions[p].r[KV_RANGE_BLOCKS];
		for (uint64_t i = r->first; i < r->first + r->count; i++)
			dump_block(s, (uint32_t)p, i, o);
	}
}

/* {"kind":KIND,"partition":p, as every per-partition record begins. */
void kv_snap_put_kind_partition(struct jw *w, const char *kind, uint64_t p)
{
	jw_put_lit(w, "{\"kind\":\"");
	jw_put_lit(w, kind);
	jw_put_lit(w, "\",\"partition\":");
	jw_put_u64(w, p);
}

void kv_snap_put_hash_field(struct jw *w, const char *key, uint64_t h)
{
	jw_put_lit(w, key);
	jw_put_hash(w, h);
}

void kv_snap_put_u64_field(struct jw *w, const char *key, uint64_t v)
{
	jw_put_lit(w, key);
	jw_put_u64(w, v);
}

static void dump_ehash(struct kv_out *o, uint32_t p, uint64_t ehash, uint64_t chain)
{
	struct jw w;
	jw_begin(&w, o);
	kv_snap_put_kind_partition(&w, "engine_hash", p);
	kv_snap_put_hash_field(&w, ",\"hash\":", ehash);
	kv_snap_put_hash_field(&w, ",\"chain\":", chain);
	jw_put_lit(&w, "}\n");
	jw_end(&w);
}

/* A partition's engine hashes in engine-hash order, those naming blocks and
 * the stale ones merged. */
static void dump_ehashes(const struct kv_snap *s, uint32_t p, struct kv_out *o)
{
	const struct kv_snap_partition *rp = &s->partitions[p];
	const struct kv_snap_range *r = &rp->r[KV_RANGE_EHASHES], *st = &rp->r[KV_RANGE_STALE];
	uint64_t i = r->first, j = st->first;
	while (i < r->first + r->count || j < st->first + st->count) {
		if (j == st->first + st->count || (i < r->first + r->count && s->ehashes[i] < s->stale[j].ehash)) {
			dump_ehash(o, p, s->ehashes[i], kv_snap_named_chain(s, p, i));
			i++;
		} else {
			dump_ehash(o, p, s->stale[j].ehash, s->stale[j].chain);
			j++;
		}
	}
}

static void dump_meta(const struct kv_snap *s, struct kv_out *o)
{
	struct jw w;
	jw_begin(&w, o);
	kv_snap_put_u64_field(&w, "{\"kind\":\"meta\",\"version\":", KV_SNAP_VERSION);
	kv_snap_put_u64_field(&w, ",\"now_ns\":", s->meta->now_ns);
	kv_snap_put_u64_field(&w, ",\"partitions\":", s->npartitions);
	kv_snap_put_u64_field(&w, ",\"workers\":", s->nworkers);
	kv_snap_put_u64_field(&w, ",\"blocks\":", s->nblocks);
	kv_snap_put_u64_field(&w, ",\"holdings\":", kv_snap_holdings(s));
	kv_snap_put_u64_field(&w, ",\"engine_hashes\":", s->nehashes + s->nstale);
	kv_snap_put_u64_field(&w, ",\"pending\":", s->npending);
	jw_put_lit(&w, "}\n");
	jw_end(&w);
}

static void dump_partition(const struct kv_snap *s, const struct kv_snap_partition *rp, struct kv_out *o)
{
	struct jw w;
	jw_begin(&w, o);
	jw_put_lit(&w, "{\"kind\":\"partition\",\"model\":");
	kv_snap_put_str(&w, s, rp->model);
	jw_put_lit(&w, ",\"tenant\":");
	kv_snap_put_str(&w, s, rp->tenant);
	kv_snap_put_u64_field(&w, ",\"block_size\":", rp->block_size);
	kv_snap_put_u64_field(&w, ",\"blocks\":", rp->r[KV_RANGE_BLOCKS].count);
	jw_put_lit(&w, "}\n");
	jw_end(&w);
}

static void dump_worker(const struct kv_snap *s, const struct kv_snap_worker *wk, struct kv_out *o)
{
	struct jw w;
	jw_begin(&w, o);
	jw_put_lit(&w, "{\"kind\":\"worker\",\"instance_id\":");
	kv_snap_put_str(&w, s, wk->instance_id);
	if (wk->flags & 2)
		jw_put_lit(&w, ",\"pool\":true,\"dp_rank\":null");
	else
		kv_snap_put_u64_field(&w, ",\"dp_rank\":", wk->dp_rank);
	jw_put_lit(&w, ",\"host\":");
	kv_snap_put_str(&w, s, wk->host);
	if (wk->partition)
		kv_snap_put_u64_field(&w, ",\"partition\":", wk->partition - 1);
	jw_put_lit(&w, wk->flags & 1 ? ",\"inferred\":true}\n" : ",\"inferred\":false}\n");
	jw_end(&w);
}

/* One JSON line per record (kvsnap(5), kvmatch --dump), each written whole. */
void kv_snap_dump(const struct kv_snap *s, struct kv_out *o)
{
	dump_meta(s, o);
	for (size_t p = 0; p < s->npartitions; p++)
		dump_partition(s, &s->partitions[p], o);
	for (size_t i = 0; i < s->nworkers; i++)
		dump_worker(s, &s->workers[i], o);
	dump_blocks(s, o);
	for (size_t p = 0; p < s->npartitions; p++)
		dump_ehashes(s, (uint32_t)p, o);
	kv_match_dump_snap(s, o);
}

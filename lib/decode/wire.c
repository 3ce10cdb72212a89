#include "decode/wire.h"
#include "decode/dynamo.h"
#include "decode/mpscan.h"
#include "decode/pool.h"
#include "decode/vllm.h"
#include "decode/wireparts.h"
#include "base/util.h"

#include <stdio.h>
#include <string.h>

void kv_wire_init(struct kv_wire *w, const struct kv_wire_opts *opts)
{
	memset(w, 0, sizeof *w);
	if (opts)
		w->opts = *opts;
	msgpack_zone_init(&w->zone, 64 * 1024);
}

void kv_wire_free(struct kv_wire *w)
{
	msgpack_zone_destroy(&w->zone);
	free(w->ev);
	free(w->hashes);
	free(w->tokens);
	free(w->raw);
	free(w->locals);
	free(w->off);
	free(w->seen);
	free(w->inner[0].p);
	free(w->inner[1].p);
	memset(w, 0, sizeof *w);
}

/* Points every event at its arrays, now that they no longer move. */
static void fix_pointers(struct kv_wire *w)
{
	for (size_t k = 0; k < w->nev; k++) {
		struct kv_event *e = &w->ev[k];
		size_t *off = kv_wire_event_offsets(w, k);
		const size_t *next = off + KV_WIRE_NOFF;
		size_t hend = k + 1 < w->nev ? next[0] : w->nh;
		size_t tend = k + 1 < w->nev ? next[1] : w->nt;
		size_t rend = k + 1 < w->nev ? next[2] : w->nraw;
		size_t lend = k + 1 < w->nev ? next[3] : w->nl;
		/* An array nothing was pushed to yet is NULL, and NULL + 0 is
		 * undefined behaviour: such events get NULL and a count of 0. */
		e->hashes = w->hashes ? w->hashes + off[0] : NULL;
		e->nhashes = hend - off[0];
		if (e->has & KV_HAS_TOKENS) {
			e->tokens = w->tokens ? w->tokens + off[1] : NULL;
			e->ntokens = tend - off[1];
		}
		if (e->has & KV_HAS_RAW_HASHES) {
			e->raw_hashes = w->raw ? w->raw + off[2] : NULL;
			e->nraw = rend - off[2];
		}
		if (e->has & KV_HAS_TOKENS_HASHES) {
			e->tokens_hashes = w->locals ? w->locals + off[3] : NULL;
			e->ntokens_hashes = lend - off[3];
		}
	}
}

/* ---- batches ------------------------------------------------------------- */

/* batch_ts: the batch's ts element (or NULL); map_batch: events came in a map. */
static void events_of(struct kv_wire *w, const struct kv_event *base, const msgpack_object *events,
		      const msgpack_object *batch_ts, bool map_batch)
{
	for (uint32_t k = 0; k < events->via.array.size; k++) {
		const msgpack_object *o = &events->via.array.ptr[k];
		struct kv_event b = *base;
		bool vllm = (o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size > 0 &&
			     o->via.array.ptr[0].type == MSGPACK_OBJECT_STR) ||
			    (o->type == MSGPACK_OBJECT_MAP && kv_vllm_is_map_event(o));
		if (!vllm && o->type != MSGPACK_OBJECT_MAP) {
			kv_wire_issue(w, "event %u: neither a vLLM event nor a pool event map", k);
			continue;
		}
		b.format = vllm ? KV_FMT_VLLM : map_batch ? KV_FMT_MEMCACHE : KV_FMT_MOONCAKE;
		/* vLLM stamps batches in float seconds, array or map; the Mooncake
		 * master's array batches carry integer milliseconds.  A map batch
		 * with a ts is vLLM's shape (kvdecode(1) "Publishers"), so its ts is seconds
		 * whatever events it holds. */
		if (batch_ts && mp_is_number(batch_ts)) {
			if (b.format == KV_FMT_MOONCAKE && mp_get_i64(batch_ts, &b.ts_ms)) {
				b.ts_kind = KV_TS_MS;
			} else {
				b.ts_kind = KV_TS_SECONDS;
				b.ts = mp_as_double(batch_ts);
			}
		}
		if (vllm)
			kv_vllm_event(w, &b, k, o);
		else
			kv_pool_event(w, &b, k, o);
	}
}

static bool take_batch_dp(struct kv_wire *w, struct kv_event *base, const msgpack_object *dp)
{
	if (!mp_present(dp))
		return true;
	if (!mp_get_i64(dp, &base->dp_rank)) {
		snprintf(w->error, sizeof w->error, "data_parallel_rank is not an integer");
		return false;
	}
	if (!kv_dp_rank_valid(base->dp_rank)) {
		snprintf(w->error, sizeof w->error, "data_parallel_rank %lld is not %s", (long long)base->dp_rank,
			 KV_DP_RANK_RULE);
		return false;
	}
	base->has_dp = true;
	return true;
}

static bool map_batch(struct kv_wire *w, struct kv_event *base, const msgpack_object *root)
{
	const msgpack_object *events = mp_map_get(root, "events");
	const msgpack_object *ts = mp_map_get(root, "ts");
	if (!events || events->type != MSGPACK_OBJECT_ARRAY) {
		snprintf(w->error, sizeof w->error, "map batch without an events array");
		return false;
	}
	if (ts && !take_batch_dp(w, base, mp_map_get(root, "data_parallel_rank")))
		return false;
	events_of(w, base, events, ts, true);
	return true;
}

static bool array_batch(struct kv_wire *w, struct kv_event *base, const msgpack_object *root)
{
	const msgpack_object *a = root->via.array.ptr;
	uint32_t n = root->via.array.size;
	if (n < 2) {
		snprintf(w->error, sizeof w->error, "batch array has %u elements (expected [ts, events, ...])", n);
		return false;
	}
	/* [ts, events, dp] and [ts, events]; tolerated: [ts, dp, events]. */
	int ev = a[1].type == MSGPACK_OBJECT_ARRAY ? 1 : n >= 3 && a[2].type == MSGPACK_OBJECT_ARRAY ? 2 : -1;
	if (ev < 0) {
		snprintf(w->error, sizeof w->error, "batch has no events array");
		return false;
	}
	if (mp_present(&a[0]) && !mp_is_number(&a[0])) {
		snprintf(w->error, sizeof w->error, "batch ts is not a number");
		return false;
	}
	const msgpack_object *dp = ev == 2 ? &a[1] : n >= 3 ? &a[2] : NULL;
	if (!take_batch_dp(w, base, dp))
		return false;
	events_of(w, base, &a[ev], mp_present(&a[0]) ? &a[0] : NULL, false);
	return true;
}

bool kv_wire_is_mooncake_batch(const uint8_t *p, size_t n)
{
	if (n < 2 || !(p[0] >= 0x92 && p[0] <= 0x9f))
		return false;
	uint8_t t = p[1];
	return t <= 0x7f || (t >= 0xcc && t <= 0xd3) || t >= 0xe0;   /* any MessagePack integer */
}

/* The end of a decode: the events pointed at their arrays, or none. */
static bool finish(struct kv_wire *w, bool ok)
{
	if (!ok) {
		w->nev = 0;
		return false;
	}
	fix_pointers(w);
	return true;
}

bool kv_wire_decode(struct kv_wire *w, const struct kv_wire_ctx *ctx, const uint8_t *p, size_t n)
{
	w->nev = w->nh = w->nt = w->nraw = w->nl = 0;
	w->nissues = w->ignored = 0;
	w->error[0] = 0;
	struct kv_event base;
	memset(&base, 0, sizeof base);
	base.src = ctx->src;
	base.topic = ctx->topic;
	base.recv_ns = ctx->recv_ns;
	base.has_seq = ctx->has_seq;
	base.seq = ctx->seq;
	base.replayed = ctx->replayed;
	if (w->opts.raw_hashes)
		base.has |= KV_HAS_RAW_HASHES;
	msgpack_zone_clear(&w->zone);
	/* Dynamo's framed envelopes and JSON are no batch of any other publisher */
	if (kv_dynamo_is_bytes(p, n))
		return finish(w, kv_dynamo_decode_bytes(w, &base, p, n));
	size_t size;
	enum kv_mp_scan sc = kv_mp_scan(p, n, &kv_payload_limits, &size);
	if (sc != KV_MP_OK) {
		snprintf(w->error, sizeof w->error, "%s", sc == KV_MP_SHORT ? "truncated payload" : kv_mp_scan_strerror(sc));
		return false;
	}
	msgpack_object root;
	size_t used = 0;
	if (msgpack_unpack((const char *)p, size, &used, &w->zone, &root) < 0) {
		snprintf(w->error, sizeof w->error, "undecodable MessagePack");
		return false;
	}
	if (size < n)
		kv_wire_issue(w, "%zu bytes after the batch ignored", n - size);
	bool ok;
	if (kv_dynamo_is_object(&root))
		ok = kv_dynamo_decode_object(w, &base, &root);
	else if (root.type == MSGPACK_OBJECT_MAP)
		ok = map_batch(w, &base, &root);
	else if (root.type == MSGPACK_OBJECT_ARRAY)
		ok = array_batch(w, &base, &root);
	else {
		snprintf(w->error, sizeof w->error, "payload is neither a map nor an array");
		ok = false;
	}
	return finish(w, ok);
}

/* srcstats: counts per event source (src endpoint): batches, events by
 * type and format, ignored events, errors, and seq accounting.  kvdecode
 * --stats prints them; kvmatch keeps the last seq per source. */
#ifndef KV_SRCSTATS_H
#define KV_SRCSTATS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/strmap.h"
#include "decode/event.h"
#include "decode/seqtrack.h"

/* What kvmatch saw of a source, for its metrics and --diagnose: blocks by
 * kind and what became of them, drops by reason, and samples of the values
 * that explain a drop. */
#define KV_SRCDIAG_REASONS 24
#define KV_SRCDIAG_BACKENDS 4

struct kv_srcdiag {
	uint64_t first_ns;          /* receive time of its first batch */
	uint32_t worker;            /* engine source: its worker (of the last event); UINT32_MAX if none */
	uint8_t hash_forms;         /* KV_HF_* of its hashes */
	bool engine, pool;          /* it sent engine (vLLM) or pool events */
	bool mooncake;              /* ... Mooncake master events: its seq counts events */
	uint64_t xpu_blocks;        /* engine stores in accelerator memory */
	uint64_t offload_blocks;    /* engine stores in cpu/disk (offloads) */
	uint64_t offload_met;       /* ... that met a pool event */
	uint64_t pool_blocks;       /* pool stores */
	uint64_t pool_met;          /* ... confirmed or matched with engine content */
	uint64_t pool_held;         /* pool blocks (stored or removed) held by the pool itself: backend_id names no worker */
	uint64_t drops[KV_SRCDIAG_REASONS];
	uint64_t pnf_early;         /* parent_not_found in the first 10 s of its stream */
	uint64_t time_jumps;        /* records stamped far beyond event time (kvmatch(1), Time) */
	int64_t bs_got, bs_want;    /* a block_size mismatch */
	char spec_kind[32];         /* a group that is not full attention */
	char backend_ids[KV_SRCDIAG_BACKENDS][48];  /* backend_id values that name no worker */
	unsigned nbackend_ids;
	uint64_t sample_hash;       /* one of its hashes (stores) */
	bool has_sample;
	double lag_sum, lag_max, lag_last;  /* receive time minus the publisher's timestamp, seconds */
	uint64_t lag_n;
};

/* The record a source sent last, for the lines that continue it. */
enum kv_rec_state { KV_REC_NONE = 0, KV_REC_BATCH, KV_REC_BAD, KV_REC_DUPLICATE };

struct kv_srcstat {
	char *src;
	size_t src_len;
	uint64_t batches, replayed, errors, ignored;
	uint64_t last_recv_ns;       /* of the last record, to know its other events */
	uint64_t rec_seq;           /* seq of the last record */
	enum kv_rec_state rec;      /* what became of it (KV_REC_NONE: no seq, nothing continues it) */
	uint64_t events[KV_NFORMATS][3]; /* [format][type] */
	struct kv_seqtrack seq;
	struct kv_srcdiag d;
};

/* Sources kept, at most (kvdecode(1) and kvmatch(1), LIMITS): each costs
 * memory for the rest of the run, and a cluster has far fewer publishers,
 * so a stream of made-up src names must not add them without end. */
#define KV_MAX_SOURCES 65536u

struct kv_srcstats {
	struct kv_srcstat *v;
	size_t n, cap;
	struct kv_strmap names;     /* src -> its index in v (the keys are the srcs of v) */
	uint64_t refused;           /* lookups of sources beyond KV_MAX_SOURCES */
};

void kv_srcstats_init(struct kv_srcstats *s);
void kv_srcstats_free(struct kv_srcstats *s);
/* The source's entry, created on first sight; NULL (and refused counted)
 * for a new source when KV_MAX_SOURCES are kept. */
struct kv_srcstat *kv_srcstats_get(struct kv_srcstats *s, const char *src, size_t n);
/* One line per source, in order of first appearance, and one for the
 * records of sources beyond the limit, if any. */
void kv_srcstats_print(const struct kv_srcstats *s, FILE *f);

#endif

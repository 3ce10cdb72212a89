/* compare: a router's answer beside kvquery's, field by field
 * (kvquery(1) "Comparing with a router").  Both answers become rows: one per
 * (instance, DP rank) with that rank's counts, and one per instance (dp -1)
 * with its own fields (longest_matched; RFC #1403's GPU, CPU and DISK).  A
 * router's answer is read from its JSON as kv-conductor's /query or RFC
 * #1403's /query shape, checked field by field (a body of another shape is
 * no answer, and says why); kvquery's from the hits of its walk.  An
 * instance or rank one side leaves out is one with no hits: zero
 * everywhere.  Each field that differs is a difference; one that follows
 * from another of the same rank (matched_tokens from the block counts, cpu
 * blocks from npu blocks when the cover ends where it did, an instance's
 * longest_matched from its ranks) names that one instead of a cause of its
 * own. */
#ifndef KV_COMPARE_H
#define KV_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "query/query.h"

enum kv_field {
	KV_F_NPU, KV_F_CPU, KV_F_DISK, KV_F_LOCAL, KV_F_REMOTE, KV_F_TOKENS,  /* a conductor rank */
	KV_F_LONGEST,                                                         /* an instance */
	KV_F_GPU, KV_F_RCPU, KV_F_RDISK,                                      /* an RFC #1403 instance */
	KV_F_DP,                                                              /* an RFC #1403 rank: its tokens */
	KV_NFIELDS
};
const char *kv_field_name(enum kv_field f);

struct kv_row {
	char *instance;
	size_t len;
	int64_t dp;                    /* -1: the instance's own fields */
	uint32_t has;                  /* 1 << field, for the fields present */
	uint64_t f[KV_NFIELDS];
};

struct kv_rows {
	struct kv_row *v;
	size_t n, cap;
};

void kv_rows_free(struct kv_rows *r);
/* kvquery's answer as rows (instance: only that instance, RFC #1403's
 * instance_id; NULL: all), sorted. */
void kv_rows_of_hits(struct kv_rows *r, const struct kv_qsource *src, const struct kv_hit *hits, size_t n,
		     size_t block_size, bool shared_pool, bool rfc, const char *instance);
/* A router's answer for tenant as rows, sorted; false with why (a short
 * phrase, for "not an answer: WHY") when the body is not one. */
bool kv_rows_parse(struct kv_rows *r, const char *body, size_t len, const char *tenant, size_t tlen, bool rfc,
		   char *why, size_t whylen);
/* The row of (instance, dp), or NULL. */
const struct kv_row *kv_rows_find(const struct kv_rows *r, const char *instance, size_t len, int64_t dp);

#define KV_NO_FOLLOW SIZE_MAX
struct kv_fdiff {
	const char *instance;          /* points into one of the rows compared */
	size_t len;
	int64_t dp;
	enum kv_field field;
	uint64_t router, kvtools;
	size_t follows;                /* the difference this one follows from, or KV_NO_FOLLOW */
};

struct kv_fdiffs {
	struct kv_fdiff *v;
	size_t n, cap;
};

/* The differences of router's rows and kvquery's, instance by instance,
 * rank by rank, fields in kv_field order; cpu_local and cpu_remote only
 * where the router gives them (kv-conductor before their time does not). */
void kv_rows_diff(const struct kv_rows *router, const struct kv_rows *kvtools, struct kv_fdiffs *out);

#endif

/* against: kvquery --against URL (kvquery(1) "Comparing with a router").
 * Each query kvquery answers is also sent to a running router, in the
 * body its API takes (kv-conductor's /query and /query_by_hash, or RFC
 * #1403's); its answer is compared with kvquery's field by field
 * (query/compare), and each difference is explained (query/classify) from
 * the events about the blocks where the two part, read from the captures
 * (query/evidence).  One JSON line (or table rows) per query, in input
 * order; a summary and the exit status at the end.
 *
 * Queries are taken in batches: sent together (as many at a time as the
 * transport allows), then compared, with one pass over the captures for
 * the whole batch.  A batch ends when it is full (KV_AGAINST_BATCH
 * queries, or KV_AGAINST_BATCH_BYTES of bodies), when the input has nothing
 * more ready, before a snapshot is reloaded, and at the end.
 *
 * The HTTP client is the caller's (lib/http/post, outside libkvtools.a):
 * this module sees it through struct kv_transport. */
#ifndef KV_AGAINST_H
#define KV_AGAINST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/out.h"
#include "index/regs.h"
#include "index/snap.h"
#include "query/query.h"
#include "query/queryline.h"

#define KV_AGAINST_BATCH 1024u
#define KV_AGAINST_BATCH_BYTES (64u << 20)

/* A router's reply, as the transport reports it. */
struct kv_reply {
	uint64_t id;
	bool answered;                 /* an HTTP answer came, whatever its status */
	long status;
	const char *body;              /* answered: valid until the next call of the transport */
	size_t len;
	const char *failure;           /* !answered: "unavailable", "timeout", "too_large", "broken" */
	const char *error;             /* !answered: what went wrong */
};

struct kv_transport {
	void *ctx;
	/* POST body to the router's path (e.g. "/query"); body stays valid until its reply */
	void (*submit)(void *ctx, uint64_t id, const char *path, const char *body, size_t len);
	size_t (*busy)(void *ctx);
	void (*wait)(void *ctx, int timeout_ms);
	bool (*next)(void *ctx, struct kv_reply *r);
};

struct kv_against_opts {
	const char *url;               /* for the summary */
	bool rfc;                      /* the router speaks RFC #1403 (--api mooncake) */
	bool shared_pool;              /* kvquery's own walk */
	bool table;
	char *const *events;           /* --events: captures, kvcap or event JSON lines */
	size_t nevents;
	const struct kv_regs *regs;    /* -r: who the events are about, as kvmatch had it */
	uint64_t window_ns;            /* --lag-window */
	int quiet;
};

/* A query kvquery answered, as the caller resolved it. */
struct kv_against_query {
	uint64_t number;               /* the query's number (bad lines count) */
	struct kv_qsource *src;
	struct kv_snap *snap;          /* of src: it stays loaded until the batch is flushed */
	struct kv_querier *q;
	const struct kv_query *req;
	const struct kv_qline *line;
	const char *model;             /* as the router is to be asked */
	size_t mlen;
	const char *tenant;            /* the partition's: answers are keyed by it */
	size_t tlen;
};

struct kv_against;

struct kv_against *kv_against_new(const struct kv_against_opts *o, const struct kv_transport *t, struct kv_out *out);
void kv_against_free(struct kv_against *a);
void kv_against_add(struct kv_against *a, const struct kv_against_query *q);
/* A query kvquery could not answer: it is not sent; its line says why. */
void kv_against_bad(struct kv_against *a, uint64_t number, const char *why);
/* Whether the batch is full. */
bool kv_against_due(const struct kv_against *a);
/* Sends, compares and writes the batch. */
void kv_against_flush(struct kv_against *a);
/* The summary on stderr (unless quiet); the status of the comparisons:
 * 0 all agree, 1 every difference explained, 2 a difference unexplained,
 * 69 some query the router did not answer (kvquery(1), EXIT STATUS). */
int kv_against_finish(struct kv_against *a);

#endif

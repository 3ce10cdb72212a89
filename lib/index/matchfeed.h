/* matchfeed: one batch of a source (decode/source.h: a record, the lines of
 * one, or a header naming a stream) fed to the matcher, the one way kvmatch
 * does it: a stream header checked against the position reached, a record
 * delivered again from a stream dropped whole, a record that failed or was
 * lost counted as such, its problems (kvdecode -e's lines) counted against
 * it, then its events applied unless it is a replayed duplicate.  kvmatch,
 * fuzz/fuzz_kvcap.c and bench/applyonly.c all call it, so that the fuzzer
 * exercises what kvmatch runs and the bench times it. */
#ifndef KV_MATCHFEED_H
#define KV_MATCHFEED_H

#include "decode/source.h"
#include "index/match.h"

/* What a program does around a batch fed (any may be NULL):
 * stream: a header naming a stream was checked (the verdict and the
 * position reached before it); nothing else is done with such a batch.
 * due: the batch is not a stream duplicate and nothing of it is applied
 * yet (kvmatch's periodic snapshots are written there).
 * problem: the record failed (what: b->error) or has a problem (what: the
 * issue; NULL for each problem past KV_WIRE_MAX_ISSUES, which has no text). */
struct kv_feed_hooks {
	void (*stream)(void *arg, const struct kv_batch *b, enum kv_stream_verdict v,
		       const struct kv_stream_reached *was);
	void (*due)(void *arg, const struct kv_batch *b);
	void (*problem)(void *arg, const struct kv_batch *b, const char *what);
	void *arg;
};

void kv_match_feed(struct kv_match *m, const struct kv_batch *b, const struct kv_feed_hooks *h);

#endif

/* matchfeed: a batch fed to the matcher (matchfeed.h says what it owns). */
#include "index/matchfeed.h"
#include "index/match.h"
#include "decode/source.h"

#include <stddef.h>

static void problems(const struct kv_batch *b, const struct kv_feed_hooks *h)
{
	if (!h || !h->problem)
		return;
	for (unsigned i = 0; i < b->nissues; i++)
		h->problem(h->arg, b, i < KV_WIRE_MAX_ISSUES ? b->issues[i] : NULL);
}

void kv_match_feed(struct kv_match *m, const struct kv_batch *b, const struct kv_feed_hooks *h)
{
	if (b->stream) {
		struct kv_stream_reached was;
		enum kv_stream_verdict v = kv_match_stream_begins(m, b->stream, &was);
		if (h && h->stream)
			h->stream(h->arg, b, v, &was);
		return;
	}
	if (kv_match_stream_duplicate(m, &b->ctx, b->nev))
		return;
	if (h && h->due)
		h->due(h->arg, b);
	if (b->error) {
		if (h && h->problem)
			h->problem(h->arg, b, b->error);
		kv_match_bad_record(m, &b->ctx);
		return;
	}
	if (b->lost) {
		kv_match_lost_record(m, &b->ctx);
		return;
	}
	/* counted as kvdecode -e's lines for them would be: one problem each */
	problems(b, h);
	for (unsigned i = 0; i < kv_batch_problem_lines(b); i++)
		kv_match_bad_record(m, &b->ctx);
	if (kv_match_record(m, &b->ctx, b->nev))
		for (size_t i = 0; i < b->nev; i++)
			kv_match_event(m, &b->ev[i]);
}

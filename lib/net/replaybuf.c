#include "net/replaybuf.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

void kv_replaybuf_init(struct kv_replaybuf *b, size_t steps, size_t max_bytes)
{
	memset(b, 0, sizeof *b);
	b->steps = steps;
	b->max_bytes = max_bytes;
}

static void forget_oldest(struct kv_replaybuf *b)
{
	struct kv_replaybuf_entry *e = &b->kept[b->head];
	b->bytes -= e->topic_n + e->payload_n;
	free(e->bytes);
	b->head = (b->head + 1) % b->alloc;
	b->n--;
}

static void forget_all(struct kv_replaybuf *b)
{
	while (b->n)
		forget_oldest(b);
	b->head = 0;
}

void kv_replaybuf_free(struct kv_replaybuf *b)
{
	forget_all(b);
	free(b->kept);
	b->kept = NULL;
	b->alloc = 0;
}

/* Grows the ring (only while below steps), laying it out from 0 again. */
static void grow(struct kv_replaybuf *b)
{
	size_t na = b->alloc ? b->alloc * 2 : 64;
	if (na > b->steps)
		na = b->steps;
	struct kv_replaybuf_entry *nk = kv_xcalloc(na, sizeof *nk);
	for (size_t j = 0; j < b->n; j++)
		nk[j] = b->kept[(b->head + j) % b->alloc];
	free(b->kept);
	b->kept = nk;
	b->alloc = na;
	b->head = 0;
}

void kv_replaybuf_keep(struct kv_replaybuf *b, uint64_t seq, struct kv_frame topic, struct kv_frame payload)
{
	if (b->seen_seq && seq <= b->last_seq)
		forget_all(b);
	b->seen_seq = true;
	b->last_seq = seq;
	if (b->steps == 0 || topic.n + payload.n > b->max_bytes)
		return;
	if (b->n == b->steps)
		forget_oldest(b);
	while (b->n && b->bytes + topic.n + payload.n > b->max_bytes)
		forget_oldest(b);
	if (b->n == b->alloc)
		grow(b);
	struct kv_replaybuf_entry *e = &b->kept[(b->head + b->n) % b->alloc];
	e->seq = seq;
	e->topic_n = topic.n;
	e->payload_n = payload.n;
	e->bytes = kv_xmalloc(topic.n + payload.n);
	if (topic.n)
		memcpy(e->bytes, topic.p, topic.n);
	if (payload.n)
		memcpy(e->bytes + topic.n, payload.p, payload.n);
	b->bytes += topic.n + payload.n;
	b->n++;
}

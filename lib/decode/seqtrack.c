#include "decode/seqtrack.h"

const char *kv_seq_missing_words(bool per_event)
{
	return per_event ? "missing events" : "missing";
}

enum kv_seq_event kv_seq_observe(struct kv_seqtrack *t, uint64_t seq)
{
	enum kv_seq_event e;
	if (!t->seen)
		e = KV_SEQ_FIRST;
	else if (seq == t->last + 1)
		e = KV_SEQ_NEXT;
	else if (seq > t->last) {
		e = KV_SEQ_GAP;
		t->gaps++;
		t->missing += seq - t->last - 1;
	} else {
		e = KV_SEQ_RESTART;
		t->restarts++;
	}
	t->seen = true;
	t->last = seq;
	return e;
}

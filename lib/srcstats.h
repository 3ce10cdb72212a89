/* srcstats: counts per event source (src endpoint): batches, events by
 * type and format, ignored events, errors, and seq accounting.  kvdecode
 * --stats prints them; kvmatch keeps the last seq per source. */
#ifndef KV_SRCSTATS_H
#define KV_SRCSTATS_H

#include <stdint.h>
#include <stdio.h>

#include "event.h"
#include "seqtrack.h"

struct kv_srcstat {
	char *src;
	size_t src_len;
	uint64_t batches, replayed, errors, ignored;
	uint64_t last_recv_ns;       /* of the last batch, to know its other events */
	uint64_t events[3][3];      /* [format][type] */
	struct kv_seqtrack seq;
};

struct kv_srcstats {
	struct kv_srcstat *v;
	size_t n, cap;
	uint32_t *slots;            /* open addressing: index + 1 */
	size_t nslots;
};

void kv_srcstats_init(struct kv_srcstats *s);
void kv_srcstats_free(struct kv_srcstats *s);
struct kv_srcstat *kv_srcstats_get(struct kv_srcstats *s, const char *src, size_t n);
/* One line per source, in order of first appearance. */
void kv_srcstats_print(const struct kv_srcstats *s, FILE *f);

#endif

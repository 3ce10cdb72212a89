/* mpstream: reads whole MessagePack objects, one after another, from a file
 * descriptor.  Each object is bounded by mpscan before it is returned, so a
 * length claim can never make the reader buffer more than max_object bytes.
 * Offsets are stream offsets, for messages such as "truncated record at byte N".
 * Before a read that would block, and when a signal interrupts a read, the
 * idle callback runs: programs flush their output there, so that pipelines
 * stay live, and act on signals such as SIGUSR1 between records. */
#ifndef KV_MPSTREAM_H
#define KV_MPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/input.h"
#include "decode/mpscan.h"

enum kv_mps_status {
	KV_MPS_OBJECT,   /* *obj, *len, *off describe one complete object */
	KV_MPS_EOF,      /* clean end of input */
	KV_MPS_STOPPED,  /* a stop signal interrupted a read */
	KV_MPS_ERROR,    /* fatal: r->error says what, at byte r->error_off */
};

struct kv_mpstream {
	struct kv_reader in;  /* in.idle: before a read that would block; in.bytes: read so far */
	const char *name;
	uint8_t *buf;
	size_t len, cap, pos;
	uint64_t base;        /* stream offset of buf[0] */
	size_t max_object;
	struct kv_mp_limits limits;
	bool eof;
	char error[160];
	uint64_t error_off;
};

void kv_mps_init(struct kv_mpstream *s, int fd, const char *name, size_t max_object);
void kv_mps_free(struct kv_mpstream *s);
enum kv_mps_status kv_mps_next(struct kv_mpstream *s, const uint8_t **obj, size_t *len, uint64_t *off);
/* The bytes of the stream taken so far, up to the end of the last object
 * returned (what is read ahead is not): for the progress line. */
static inline uint64_t kv_mps_taken(const struct kv_mpstream *s)
{
	return s->base + s->pos;
}
/* Makes at least n bytes visible (fewer at end of input) without consuming them. */
size_t kv_mps_peek(struct kv_mpstream *s, size_t n, const uint8_t **p);

#endif

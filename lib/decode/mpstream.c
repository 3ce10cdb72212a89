#include "decode/mpstream.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define READ_CHUNK (1u << 20)

void kv_mps_init(struct kv_mpstream *s, int fd, const char *name, size_t max_object)
{
	memset(s, 0, sizeof *s);
	kv_reader_init(&s->in, fd);
	s->name = name;
	s->max_object = max_object;
	s->limits = kv_payload_limits;
	s->limits.max_bytes = max_object;
	s->limits.max_objects = max_object;
	s->cap = READ_CHUNK;
	s->buf = kv_xmalloc(s->cap);
}

void kv_mps_free(struct kv_mpstream *s)
{
	free(s->buf);
	s->buf = NULL;
}

/* Reads more input behind what is buffered; -1 on error, 0 at EOF, 1 on data, 2 on stop. */
static int fill(struct kv_mpstream *s, size_t want)
{
	if (s->pos > 0 && (s->pos == s->len || s->len + READ_CHUNK > s->cap)) {
		memmove(s->buf, s->buf + s->pos, s->len - s->pos);
		s->len -= s->pos;
		s->base += s->pos;
		s->pos = 0;
	}
	size_t need = s->len + (want > READ_CHUNK ? want : READ_CHUNK);
	if (need > s->cap) {
		size_t c = s->cap;
		while (c < need)
			c *= 2;
		s->buf = kv_xrealloc(s->buf, c);
		s->cap = c;
	}
	size_t n;
	switch (kv_reader_fill(&s->in, s->buf + s->len, s->cap - s->len, &n)) {
	case KV_READ_STOPPED:
		return 2;
	case KV_READ_ERROR:
		snprintf(s->error, sizeof s->error, "%s", strerror(s->in.err));
		s->error_off = s->base + s->len;
		return -1;
	case KV_READ_OK:
		break;
	}
	if (n == 0) {
		s->eof = true;
		return 0;
	}
	s->len += n;
	return 1;
}

size_t kv_mps_peek(struct kv_mpstream *s, size_t n, const uint8_t **p)
{
	while (s->len - s->pos < n && !s->eof)
		if (fill(s, n) != 1)
			break;
	*p = s->buf + s->pos;
	return s->len - s->pos;
}

enum kv_mps_status kv_mps_next(struct kv_mpstream *s, const uint8_t **obj, size_t *len, uint64_t *off)
{
	for (;;) {
		size_t avail = s->len - s->pos, size;
		if (avail == 0 && s->eof)
			return KV_MPS_EOF;
		enum kv_mp_scan r = avail ? kv_mp_scan(s->buf + s->pos, avail, &s->limits, &size) : KV_MP_SHORT;
		if (r == KV_MP_OK) {
			*obj = s->buf + s->pos;
			*len = size;
			*off = s->base + s->pos;
			s->pos += size;
			return KV_MPS_OBJECT;
		}
		s->error_off = s->base + s->pos;
		if (r == KV_MP_SHORT && avail >= s->max_object)
			r = KV_MP_BIG;
		if (r != KV_MP_SHORT) {
			snprintf(s->error, sizeof s->error, "%s", r == KV_MP_BIG ? "object larger than the record limit" : kv_mp_scan_strerror(r));
			return KV_MPS_ERROR;
		}
		if (s->eof) {
			snprintf(s->error, sizeof s->error, "truncated");
			return KV_MPS_ERROR;
		}
		int f = fill(s, 0);
		if (f == 2)
			return KV_MPS_STOPPED;
		if (f < 0)
			return KV_MPS_ERROR;
	}
}

#include "decode/kvcap.h"
#include "base/util.h"

#include <stdio.h>
#include <string.h>

void kv_seq_encode(uint64_t seq, uint8_t out[8])
{
	for (int i = 7; i >= 0; i--, seq >>= 8)
		out[i] = (uint8_t)seq;
}

void kv_msg_split(const struct kv_frame *frames, size_t n, struct kv_msg_parts *m)
{
	static const uint8_t none;
	memset(m, 0, sizeof *m);
	m->topic.p = m->payload.p = &none;
	if (n == 0)
		return;
	m->payload = n == 3 ? frames[2] : frames[n - 1];
	if (n >= 2)
		m->topic = frames[0];
	m->seq_frame = n >= 3;
	/* Dynamo's event plane on ZMQ: [topic, publisher_id, sequence, frame],
	 * both 8 bytes big-endian; the seq is the sequence (kvdecode(1)
	 * "Dynamo's event plane"). */
	const struct kv_frame *seq = n == 4 && frames[1].n == 8 && frames[2].n == 8 ? &frames[2] : &frames[1];
	if (m->seq_frame && seq->n == 8) {
		m->has_seq = true;
		for (int i = 0; i < 8; i++)
			m->seq = m->seq << 8 | seq->p[i];
	}
}

static int pack_to_out(void *data, const char *buf, size_t len)
{
	kv_out_write(data, buf, len);
	return 0;
}

void kv_cap_write_header(struct kv_out *o, const char *tool, uint64_t start_ns)
{
	msgpack_packer pk;
	msgpack_packer_init(&pk, o, pack_to_out);
	msgpack_pack_map(&pk, 3);
	msgpack_pack_str_with_body(&pk, "kvcap", 5);
	msgpack_pack_uint64(&pk, KV_CAP_VERSION);
	msgpack_pack_str_with_body(&pk, "tool", 4);
	msgpack_pack_str_with_body(&pk, tool, strlen(tool));
	msgpack_pack_str_with_body(&pk, "start_ns", 8);
	msgpack_pack_uint64(&pk, start_ns);
}

static void pack_key(msgpack_packer *pk, const char *key)
{
	msgpack_pack_str_with_body(pk, key, strlen(key));
}

/* The three entries that name a stream (stream_keys, below). */
static void pack_stream_keys(msgpack_packer *pk, const struct kv_cap_stream *st)
{
	pack_key(pk, "stream");
	msgpack_pack_str_with_body(pk, st->name, st->name_len);
	pack_key(pk, "stream_created");
	msgpack_pack_uint64(pk, st->created_ns);
	pack_key(pk, "stream_after");
	msgpack_pack_uint64(pk, st->after);
}

void kv_cap_write_stream_header(struct kv_out *o, const char *tool, uint64_t start_ns, const struct kv_cap_stream *st)
{
	msgpack_packer pk;
	msgpack_packer_init(&pk, o, pack_to_out);
	msgpack_pack_map(&pk, 6);
	pack_key(&pk, "kvcap");
	msgpack_pack_uint64(&pk, KV_CAP_VERSION);
	pack_key(&pk, "tool");
	pack_key(&pk, tool);
	pack_key(&pk, "start_ns");
	msgpack_pack_uint64(&pk, start_ns);
	pack_stream_keys(&pk, st);
}

void kv_cap_write_record(struct kv_out *o, uint64_t recv_ns, const char *src, size_t src_len,
			 uint64_t flags, const struct kv_frame *frames, size_t nframes)
{
	/* Room for the whole record first: the packer writes it piece by piece,
	 * and a flush between two pieces (a frame larger than what is left of
	 * the buffer) would put part of a record in the file; after a later
	 * failed write (disk full), the file would be cut back to that flush
	 * and end inside a record (kv_out flushes only between records). */
	kv_out_reserve(o, kv_cap_record_size(recv_ns, src_len, flags, frames, nframes));
	msgpack_packer pk;
	msgpack_packer_init(&pk, o, pack_to_out);
	msgpack_pack_array(&pk, 4);
	msgpack_pack_uint64(&pk, recv_ns);
	msgpack_pack_str_with_body(&pk, src, src_len);
	msgpack_pack_uint64(&pk, flags);
	msgpack_pack_array(&pk, nframes);
	for (size_t i = 0; i < nframes; i++)
		msgpack_pack_bin_with_body(&pk, frames[i].p, frames[i].n);
}

void kv_cap_write_positioned(struct kv_out *o, const struct kv_record *rec, uint64_t position)
{
	/* kvtools writers pack a record as a fixarray of 4: it becomes one of
	 * 5 by its first byte; any other record is packed again. */
	if (rec->raw_len > 0 && rec->raw[0] == 0x94) {
		kv_out_reserve(o, rec->raw_len + 9);
		kv_out_putc(o, (char)0x95);
		kv_out_write(o, rec->raw + 1, rec->raw_len - 1);
	} else {
		uint64_t n = kv_cap_record_size(rec->recv_ns, rec->src_len, rec->flags, rec->frames, rec->nframes);
		kv_out_reserve(o, n + 9);
		kv_cap_write_record(o, rec->recv_ns, rec->src, rec->src_len, rec->flags, rec->frames, rec->nframes);
		o->buf[o->len - n] = (char)0x95;
	}
	msgpack_packer pk;
	msgpack_packer_init(&pk, o, pack_to_out);
	msgpack_pack_uint64(&pk, position);
}

/* MessagePack sizes of what kv_cap_write_record packs, as msgpack-c packs
 * them (the smallest form). */
static uint64_t uint_size(uint64_t v)
{
	return v < 128 ? 1 : v <= UINT8_MAX ? 2 : v <= UINT16_MAX ? 3 : v <= UINT32_MAX ? 5 : 9;
}

static uint64_t str_size(size_t n)
{
	return (n < 32 ? 1 : n <= UINT8_MAX ? 2 : n <= UINT16_MAX ? 3 : 5) + (uint64_t)n;
}

static uint64_t bin_size(size_t n)
{
	return (n <= UINT8_MAX ? 2 : n <= UINT16_MAX ? 3 : 5) + (uint64_t)n;
}

uint64_t kv_cap_record_size(uint64_t recv_ns, size_t src_len, uint64_t flags, const struct kv_frame *frames,
			    size_t nframes)
{
	uint64_t n = 1 + uint_size(recv_ns) + str_size(src_len) + uint_size(flags) +
		     (nframes < 16 ? 1 : nframes <= UINT16_MAX ? 3 : 5);
	for (size_t i = 0; i < nframes; i++)
		n += bin_size(frames[i].n);
	return n;
}

bool kv_cap_sniff(const uint8_t *p, size_t n)
{
	return n > 0 && ((p[0] >= 0x80 && p[0] <= 0x8f) || p[0] == 0xde || p[0] == 0xdf);
}

void kv_cap_open(struct kv_cap_reader *r, int fd, const char *name)
{
	memset(r, 0, sizeof *r);
	kv_mps_init(&r->in, fd, name, KV_CAP_MAX_RECORD);
	msgpack_zone_init(&r->zone, 8192);
}

void kv_cap_close(struct kv_cap_reader *r)
{
	kv_mps_free(&r->in);
	msgpack_zone_destroy(&r->zone);
}

/* The version of a header map (its "kvcap" value), or NULL if it is none. */
static const msgpack_object *header_version(const msgpack_object *o)
{
	for (uint32_t i = 0; i < o->via.map.size; i++) {
		const msgpack_object *k = &o->via.map.ptr[i].key;
		if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == 5 &&
		    memcmp(k->via.str.ptr, "kvcap", 5) == 0)
			return &o->via.map.ptr[i].val;
	}
	return NULL;
}

/* A header of another version than this reader's: its records may mean
 * something else, so the input is refused, not read as version 1. */
static bool version_known(struct kv_cap_reader *r, const msgpack_object *v, uint64_t off)
{
	if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER && v->via.u64 == KV_CAP_VERSION)
		return true;
	char what[48];
	if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
		snprintf(what, sizeof what, "version %llu", (unsigned long long)v->via.u64);
	else if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		snprintf(what, sizeof what, "version %lld", (long long)v->via.i64);
	else
		snprintf(what, sizeof what, "a version that is not an integer");
	r->error_off = off;
	snprintf(r->error, sizeof r->error, "byte %llu: kvcap header with %s (this kvtools reads version %d)",
		 (unsigned long long)off, what, KV_CAP_VERSION);
	return false;
}

/* Checks the shape of a record and fills rec; NULL or the reason it is not one. */
static const char *take_record(const msgpack_object *o, struct kv_record *rec)
{
	if (o->type != MSGPACK_OBJECT_ARRAY)
		return "not a record (expected an array)";
	if (o->via.array.size < 4)
		return "record has fewer than 4 elements";
	const msgpack_object *e = o->via.array.ptr;
	if (e[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return "recv_ns is not an unsigned integer";
	if (e[1].type != MSGPACK_OBJECT_STR)
		return "src is not a string";
	if (e[1].via.str.size > KV_CAP_MAX_SRC)
		return "src longer than 1024 bytes";
	if (e[2].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return "flags is not an unsigned integer";
	if (e[3].type != MSGPACK_OBJECT_ARRAY)
		return "frames is not an array";
	if (e[3].via.array.size > KV_CAP_MAX_FRAMES)
		return "more than 64 frames";
	rec->recv_ns = e[0].via.u64;
	rec->src = e[1].via.str.ptr;
	rec->src_len = e[1].via.str.size;
	rec->flags = e[2].via.u64;
	rec->nframes = e[3].via.array.size;
	rec->has_position = o->via.array.size > 4 && e[4].type == MSGPACK_OBJECT_POSITIVE_INTEGER;
	rec->position = rec->has_position ? e[4].via.u64 : 0;
	for (size_t i = 0; i < rec->nframes; i++) {
		const msgpack_object *f = &e[3].via.array.ptr[i];
		if (f->type == MSGPACK_OBJECT_BIN) {
			rec->frames[i].p = (const uint8_t *)f->via.bin.ptr;
			rec->frames[i].n = f->via.bin.size;
		} else if (f->type == MSGPACK_OBJECT_STR) { /* tolerated: some writers pack bytes as str */
			rec->frames[i].p = (const uint8_t *)f->via.str.ptr;
			rec->frames[i].n = f->via.str.size;
		} else {
			return "a frame is not binary";
		}
	}
	return NULL;
}

/* Unpacks one object of a capture and says what it is; a header's "kvcap"
 * value (in the zone) is left in *version for the reader to check. */
static enum kv_cap_status classify(const uint8_t *p, size_t n, msgpack_zone *zone, struct kv_record *rec,
				   const char **why, const msgpack_object **version)
{
	msgpack_zone_clear(zone);
	msgpack_object o;
	size_t used = 0;
	if (msgpack_unpack((const char *)p, n, &used, zone, &o) < 0) {
		*why = "undecodable object";
		return KV_CAP_ERROR;
	}
	if (used != n) {
		*why = "bytes after the object";
		return KV_CAP_SKIP;
	}
	rec->raw = p;
	rec->raw_len = n;
	if (o.type == MSGPACK_OBJECT_MAP && (*version = header_version(&o)) != NULL)
		return KV_CAP_HEADER;
	*why = take_record(&o, rec);
	return *why ? KV_CAP_SKIP : KV_CAP_RECORD;
}

enum kv_cap_status kv_cap_classify(const uint8_t *p, size_t n, msgpack_zone *zone, struct kv_record *rec,
				   const char **why)
{
	const msgpack_object *version;
	return classify(p, n, zone, rec, why, &version);
}

enum kv_cap_status kv_cap_next(struct kv_cap_reader *r, struct kv_record *rec)
{
	const uint8_t *p;
	size_t n;
	uint64_t off;
	switch (kv_mps_next(&r->in, &p, &n, &off)) {
	case KV_MPS_EOF:
		return KV_CAP_EOF;
	case KV_MPS_STOPPED:
		return KV_CAP_STOPPED;
	case KV_MPS_ERROR:
		r->error_off = r->in.error_off;
		if (strcmp(r->in.error, "truncated") == 0)
			snprintf(r->error, sizeof r->error, "truncated record at byte %llu",
				 (unsigned long long)r->error_off);
		else
			snprintf(r->error, sizeof r->error, "byte %llu: %s",
				 (unsigned long long)r->error_off, r->in.error);
		return KV_CAP_ERROR;
	case KV_MPS_OBJECT:
		break;
	}
	const char *why = NULL;
	const msgpack_object *version = NULL;
	enum kv_cap_status st = classify(p, n, &r->zone, rec, &why, &version);
	if (st == KV_CAP_ERROR) {
		r->error_off = off;
		snprintf(r->error, sizeof r->error, "byte %llu: undecodable object", (unsigned long long)off);
		return KV_CAP_ERROR;
	}
	if (st == KV_CAP_HEADER) {
		if (!version_known(r, version, off))
			return KV_CAP_ERROR;
		r->started = true;
		return KV_CAP_HEADER;
	}
	if (!r->started) {
		/* Records before any header would be read from something that
		 * merely looks like MessagePack: refuse the whole input. */
		r->not_capture = true;
		r->error_off = off;
		snprintf(r->error, sizeof r->error, "not a kvcap capture (it does not start with a kvcap header)");
		return KV_CAP_ERROR;
	}
	rec->offset = off;
	rec->number = ++r->records;
	if (st == KV_CAP_SKIP) {
		r->error_off = off;
		snprintf(r->error, sizeof r->error, "record %llu (byte %llu): %s",
			 (unsigned long long)rec->number, (unsigned long long)off, why);
		return KV_CAP_SKIP;
	}
	return KV_CAP_RECORD;
}

/* The keys of a header that name a stream (kv_cap_write_stream_header). */
static const char *const stream_keys[] = { "stream", "stream_created", "stream_after" };

/* Which of stream_keys a map key is, or -1. */
static int stream_key(const msgpack_object *k)
{
	for (int i = 0; i < 3; i++)
		if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(stream_keys[i]) &&
		    memcmp(k->via.str.ptr, stream_keys[i], k->via.str.size) == 0)
			return i;
	return -1;
}

/* A header's map, unpacked into zone; false when the bytes are none. */
static bool header_map(const uint8_t *p, size_t n, msgpack_zone *zone, msgpack_object *o)
{
	size_t used = 0;
	msgpack_zone_clear(zone);
	return msgpack_unpack((const char *)p, n, &used, zone, o) == MSGPACK_UNPACK_SUCCESS && used == n &&
	       o->type == MSGPACK_OBJECT_MAP && header_version(o) != NULL;
}

bool kv_cap_header_stream(const uint8_t *p, size_t n, msgpack_zone *zone, struct kv_cap_stream *st)
{
	msgpack_object o;
	if (!header_map(p, n, zone, &o))
		return false;
	unsigned have = 0;
	for (uint32_t i = 0; i < o.via.map.size; i++) {
		const msgpack_object *v = &o.via.map.ptr[i].val;
		int k = stream_key(&o.via.map.ptr[i].key);
		if (k < 0)
			continue;
		if (v->type != (k == 0 ? MSGPACK_OBJECT_STR : MSGPACK_OBJECT_POSITIVE_INTEGER))
			return false;
		if (k == 0) {
			st->name = v->via.str.ptr;
			st->name_len = v->via.str.size;
		} else {
			*(k == 1 ? &st->created_ns : &st->after) = v->via.u64;
		}
		have |= 1u << k;
	}
	return have == 7;
}

/* The entries of header map o but those that name a stream. */
static void pack_header_entries(msgpack_packer *pk, const msgpack_object *o)
{
	for (uint32_t i = 0; i < o->via.map.size; i++) {
		if (stream_key(&o->via.map.ptr[i].key) >= 0)
			continue;
		msgpack_pack_object(pk, o->via.map.ptr[i].key);
		msgpack_pack_object(pk, o->via.map.ptr[i].val);
	}
}

static uint32_t entries_kept(const msgpack_object *o)
{
	uint32_t keep = 0;
	for (uint32_t i = 0; i < o->via.map.size; i++)
		keep += stream_key(&o->via.map.ptr[i].key) < 0;
	return keep;
}

bool kv_cap_header_with_stream(const uint8_t *p, size_t n, msgpack_zone *zone, const struct kv_cap_stream *st,
			       struct kv_out *out)
{
	msgpack_object o;
	if (!header_map(p, n, zone, &o))
		return false;
	msgpack_packer pk;
	msgpack_packer_init(&pk, out, pack_to_out);
	msgpack_pack_map(&pk, entries_kept(&o) + 3);
	pack_header_entries(&pk, &o);
	pack_stream_keys(&pk, st);
	return true;
}

bool kv_cap_header_without_stream(const uint8_t *p, size_t n, msgpack_zone *zone, struct kv_out *out)
{
	msgpack_object o;
	if (!header_map(p, n, zone, &o))
		return false;
	uint32_t keep = entries_kept(&o);
	if (keep == o.via.map.size)
		return false;
	msgpack_packer pk;
	msgpack_packer_init(&pk, out, pack_to_out);
	msgpack_pack_map(&pk, keep);
	pack_header_entries(&pk, &o);
	return true;
}

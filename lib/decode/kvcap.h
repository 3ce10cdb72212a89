/* kvcap: the capture stream of kvcap(5), both directions.
 * A stream is MessagePack objects back to back: header maps
 * {"kvcap": 1, "tool": .., "start_ns": ..} (first, and again wherever captures
 * were concatenated) and records [recv_ns, src, flags, [frame, ...], ...].
 * A fifth element, when it is an unsigned integer, is the record's position
 * in the JetStream stream it was consumed from (kvnats -C, kvnats(1));
 * other readers ignore it.  This module also owns the one rule for which frame is the topic, the seq
 * and the payload of a message. */
#ifndef KV_KVCAP_H
#define KV_KVCAP_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/mpstream.h"
#include "base/out.h"

#define KV_CAP_VERSION 1
/* A record (all its frames and fields) larger than this is refused: kvcap(5). */
#define KV_CAP_MAX_RECORD (64u << 20)
#define KV_CAP_MAX_FRAMES 64
/* A record whose src is longer is refused: src names an endpoint, and
 * readers keep each source's name for the whole run (kvcap(5)). */
#define KV_CAP_MAX_SRC 1024u
#define KV_CAP_FLAG_REPLAYED 1u

struct kv_frame {
	const uint8_t *p;
	size_t n;
};

struct kv_record {
	uint64_t recv_ns;
	const char *src;
	size_t src_len;
	uint64_t flags;
	struct kv_frame frames[KV_CAP_MAX_FRAMES];
	size_t nframes;
	bool has_position;    /* a fifth element: the JetStream stream sequence */
	uint64_t position;
	const uint8_t *raw;   /* the record's bytes as read, until the next read */
	size_t raw_len;
	uint64_t offset;      /* stream offset of the record */
	uint64_t number;      /* 1-based record number in this input */
};

/* The parts of a publisher message: [topic, seq, payload] (kvdecode(1) "Publishers"). */
struct kv_msg_parts {
	struct kv_frame topic, payload;
	bool seq_frame;       /* the message has a seq position: 3 frames or more */
	bool has_seq;         /* ... and that frame is a seq (8 bytes) */
	uint64_t seq;
};
void kv_msg_split(const struct kv_frame *frames, size_t n, struct kv_msg_parts *m);
void kv_seq_encode(uint64_t seq, uint8_t out[8]);

/* The JetStream stream the records of a kvnats -C output come from, said
 * by the header kvnats writes first: {"kvcap": 1, "tool": .., "start_ns":
 * .., "stream": NAME, "stream_created": NS, "stream_after": SEQ}.  The
 * name and the time the stream was created say which stream it is (one
 * deleted and made again under the name is another, its sequences anew);
 * the records that follow are every record the consumer takes after stream
 * sequence SEQ, in order, each with its own sequence (the fifth element). */
struct kv_cap_stream {
	const char *name;
	size_t name_len;
	uint64_t created_ns;
	uint64_t after;
};

/* Writing. */
void kv_cap_write_header(struct kv_out *o, const char *tool, uint64_t start_ns);
/* A header that names the stream its records come from. */
void kv_cap_write_stream_header(struct kv_out *o, const char *tool, uint64_t start_ns, const struct kv_cap_stream *st);
void kv_cap_write_record(struct kv_out *o, uint64_t recv_ns, const char *src, size_t src_len,
			 uint64_t flags, const struct kv_frame *frames, size_t nframes);
/* Writes a record read as raw bytes with its stream position as a fifth
 * element, replacing any fifth element it had (kvnats -C). */
void kv_cap_write_positioned(struct kv_out *o, const struct kv_record *rec, uint64_t position);
/* The bytes kv_cap_write_record writes for such a record (writers check it
 * against KV_CAP_MAX_RECORD, which readers enforce). */
uint64_t kv_cap_record_size(uint64_t recv_ns, size_t src_len, uint64_t flags, const struct kv_frame *frames,
			    size_t nframes);

/* Reading. */
enum kv_cap_status {
	KV_CAP_RECORD,
	KV_CAP_HEADER,
	KV_CAP_SKIP,      /* a complete object that is not a record: r->error says why */
	KV_CAP_EOF,
	KV_CAP_STOPPED,
	KV_CAP_ERROR,     /* fatal (truncation, garbage, read error): r->error, r->error_off */
};

struct kv_cap_reader {
	struct kv_mpstream in;
	msgpack_zone zone;
	uint64_t records;     /* objects read that were records or skipped */
	bool started;         /* a header was read: this is a capture */
	bool not_capture;     /* the error is that the first object is no header */
	char error[200];
	uint64_t error_off;
};

void kv_cap_open(struct kv_cap_reader *r, int fd, const char *name);
void kv_cap_close(struct kv_cap_reader *r);
/* The next object.  A stream whose first object is not a header is not a
 * capture: KV_CAP_ERROR with not_capture set, whatever follows (the one
 * rule for every reader: kvdecode, kvmatch, kvpub). */
enum kv_cap_status kv_cap_next(struct kv_cap_reader *r, struct kv_record *rec);
/* What one whole MessagePack object is: a header (rec->raw, raw_len set),
 * a record (rec filled, pointing into zone and p), or anything else (KV_CAP_SKIP, with the
 * reason in why; also for bytes that are no MessagePack object at all).
 * The one rule kv_cap_next applies to each object of a stream. */
enum kv_cap_status kv_cap_classify(const uint8_t *p, size_t n, msgpack_zone *zone, struct kv_record *rec,
				   const char **why);
/* True when the bytes look like the start of a kvcap stream (a map first). */
bool kv_cap_sniff(const uint8_t *p, size_t n);
/* Whether a header (its bytes, as kv_cap_next or kv_cap_classify gave them)
 * names the stream its records come from, with each of the three keys of
 * the right type; st then points into zone. */
bool kv_cap_header_stream(const uint8_t *p, size_t n, msgpack_zone *zone, struct kv_cap_stream *st);
/* A header (its bytes) with the keys that name a stream set to st's,
 * appended to o; false (o untouched) when the bytes are no header. */
bool kv_cap_header_with_stream(const uint8_t *p, size_t n, msgpack_zone *zone, const struct kv_cap_stream *st,
			       struct kv_out *o);
/* The header without the keys that name a stream, appended to o; false
 * (o untouched) when it has none of them.  Records published anew are no
 * longer those of the stream they were consumed from (kvnats -P drops their
 * positions, and their header's stream with them). */
bool kv_cap_header_without_stream(const uint8_t *p, size_t n, msgpack_zone *zone, struct kv_out *o);

#endif

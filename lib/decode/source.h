/* source: the inputs of kvdecode and kvmatch, as batches of events.
 * Files are named as arguments (none or "-" is stdin) and read in order;
 * each is a kvcap capture (recognised by its header), a stream of bare
 * publisher payloads (--payload), or, where allowed, event JSON lines.
 * A record that cannot be decoded comes back as a batch with an error, so
 * that the program reports it and goes on; an input that cannot be opened
 * (base/input.h) comes back as a failure, and the next input follows. */
#ifndef KV_SOURCE_H
#define KV_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "decode/evjson.h"
#include "decode/kvcap.h"
#include "decode/wire.h"

enum kv_input_kind { KV_IN_KVCAP, KV_IN_PAYLOAD, KV_IN_JSON };

struct kv_source_opts {
	bool payload;           /* inputs are bare payload streams */
	bool allow_json;        /* inputs that are not kvcap are event JSON lines */
	bool stream_headers;    /* a header that names a stream comes back as a batch (b->stream) */
	bool read_ahead;        /* decode on a thread of its own while the batches before are used,
				 * when every input is a regular file (kv_source_next) */
	struct kv_wire_opts wire;
	void (*idle)(void *);   /* before a read that would block */
	void *idle_arg;
};

struct kv_batch {
	const char *file;
	enum kv_input_kind kind;
	uint64_t record;        /* record number, or line number of JSON input */
	struct kv_wire_ctx ctx;
	const struct kv_event *ev;
	size_t nev;
	const char *error;      /* the whole record failed */
	bool fatal;             /* ... and the rest of this input is lost (truncation, garbage) */
	unsigned nissues;       /* problems with single events or hashes */
	const char (*issues)[160];
	unsigned ignored;       /* events of unknown types */
	bool lost;              /* a record that arrived undecoded, its problem not given (no_events line) */
	const struct kv_cap_stream *stream;  /* no record, but a header naming the stream the records
					      * after it come from (kvnats -C), until the next call */
};

enum kv_source_status {
	KV_SOURCE_BATCH,
	KV_SOURCE_END,
	KV_SOURCE_STOPPED,
	KV_SOURCE_UNOPENED,     /* an input could not be opened: e says which (66); call again */
};

struct kv_source;

struct kv_source *kv_source_new(char *const *files, size_t nfiles, const struct kv_source_opts *opts);
/* The next batch, valid until the next call.  Read ahead, batches come in
 * the same order, with the same contents, as without: only where they are
 * decoded differs (a bounded queue between the threads; the decoding one
 * owns a batch's memory again once the next call gives it back), and the
 * idle function is called from here, never from the decoding thread. */
enum kv_source_status kv_source_next(struct kv_source *s, struct kv_batch *b, struct kv_err *e);
/* The bytes of the inputs taken so far (read and returned as batches; not
 * what is read ahead), for the progress line (base/progress.h): what
 * kv_inputs_size of the same files comes to at their end. */
uint64_t kv_source_bytes(const struct kv_source *s);
/* Whether batches are decoded on a thread of their own: asked for, and
 * every input a regular file (or one that does not open). */
bool kv_source_reads_ahead(const struct kv_source *s);
/* Inputs that could not be opened so far. */
unsigned kv_source_open_failures(const struct kv_source *s);
void kv_source_free(struct kv_source *s);
/* Reads no more of the input being read: the next call goes on with the
 * next one. */
void kv_source_skip_input(struct kv_source *s);
/* The problem lines a batch's issues make (kvdecode -e writes one per
 * issue up to KV_WIRE_MAX_ISSUES, then one for the rest): kvmatch counts a
 * capture's problems as it would count those lines. */
unsigned kv_batch_problem_lines(const struct kv_batch *b);
/* "FILE: record N (SRC, seq S)" for messages about a batch. */
void kv_batch_where(const struct kv_batch *b, char *buf, size_t n);

#endif

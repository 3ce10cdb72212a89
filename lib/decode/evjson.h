/* evjson: the event JSON line (kvdecode(1) "JSON FIELDS"), both directions.
 * Writing: one object per event on one line, batch fields on every line,
 * hashes as "0x" + 16 hex digits; the record's own fields (src, recv_ns, seq,
 * topic, replayed) are rendered once per record and copied per event.
 * Reading (kvmatch): a streaming yajl parser fills a kv_event from a line,
 * with hashes read exactly (never through a double). */
#ifndef KV_EVJSON_H
#define KV_EVJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/event.h"
#include "base/jsonw.h"
#include "base/out.h"
#include "decode/wire.h"

struct kv_evjson {
	struct kv_out prefix;   /* in memory: {"src":..,"recv_ns":..,"seq":..,"topic":..,"replayed":.., */
	double ts_cached;
	char ts_text[JW_DOUBLE_MAX];
	size_t ts_len;
};

void kv_evjson_init(struct kv_evjson *j);
void kv_evjson_free(struct kv_evjson *j);
/* Renders the per-record fields once; call before writing a record's events. */
void kv_evjson_record(struct kv_evjson *j, const struct kv_wire_ctx *ctx);
void kv_evjson_write(struct kv_evjson *j, struct kv_out *o, const struct kv_event *e);
/* {"type":"error","src":..,"seq":..,"recv_ns":..,"record":N,"error":".."} */
void kv_evjson_write_error(struct kv_out *o, const struct kv_wire_ctx *ctx, uint64_t record, const char *msg);
/* {"type":"no_events",..,"record":N,"decoded":B}: a record that gave no
 * other line (no events, or undecodable without -e), so that a reader
 * still counts it and its seq: it is no gap (kvdecode(1)). */
void kv_evjson_write_no_events(struct kv_out *o, const struct kv_wire_ctx *ctx, uint64_t record, bool decoded);
/* Any MessagePack value as JSON (bin as hex strings; map keys as strings,
 * a key of another type as its JSON text, cut at 128 bytes). */
void kv_json_put_msgpack(struct jw *w, const msgpack_object *v);


/* ---- reading ------------------------------------------------------------ */

struct kv_evjson_reader;

enum kv_evjson_status {
	KV_EVJSON_EVENT,    /* *e holds the event */
	KV_EVJSON_ERROR_LINE, /* a {"type":"error"} line written by kvdecode -e; e has src/seq/recv_ns */
	KV_EVJSON_NO_EVENTS,  /* a {"type":"no_events","decoded":true} line; e has src/seq/recv_ns */
	KV_EVJSON_LOST,       /* the same with "decoded":false: a record that could not be decoded */
	KV_EVJSON_BAD,      /* not an event line: the reader's message says why */
};

struct kv_evjson_reader *kv_evjson_reader_new(void);
void kv_evjson_reader_free(struct kv_evjson_reader *r);
/* Parses one line; the event and its strings stay valid until the next call. */
enum kv_evjson_status kv_evjson_parse(struct kv_evjson_reader *r, const char *line, size_t n,
				      struct kv_event *e);
const char *kv_evjson_error(const struct kv_evjson_reader *r);

#endif

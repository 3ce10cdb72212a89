/* jsmsg: how kvcap objects travel as JetStream messages (kvnats(1)): the
 * subject a record is published on, and the Nats-Msg-Id that lets the
 * stream store it once however often it is published.
 *
 * Subjects: records on STREAM.MODEL.TENANT.SRC, headers on STREAM.header.
 * Each of MODEL, TENANT and SRC is one subject token: bytes other than
 * A-Z a-z 0-9 '_' '-' become %XX (upper-case hex), an empty value is "%",
 * and the value "_" is "%5F", because "_" stands for "not registered";
 * a value longer than KV_JS_TOKEN_LIMIT escaped is "~" and the 32 hex digits
 * of its XXH3-128 digest (NATS closes a connection whose PUB line passes
 * 4096 bytes: four tokens of 256 stay far below).
 * Message ids: "r" and 32 hex digits of XXH3-128 over the record's src,
 * recv_ns, flags and every frame, what tells two captured records apart
 * (a record published again has the same id; a publisher that restarted
 * and sent the same batch with the same seq again made another record);
 * "h" and the digest of the bytes for a header. */
#ifndef KV_JSMSG_H
#define KV_JSMSG_H

#include <stdbool.h>
#include <stddef.h>

#include "decode/kvcap.h"

#define KV_JS_TOKEN_LIMIT 256
#define KV_JS_TOKEN_MAX (3 * KV_CAP_MAX_SRC + 1)
#define KV_JS_MSGID_LEN 33

/* One subject token for value (NULL: not registered, "_"); returns its
 * length, written to out (which holds 3 * n + 2 bytes) with a NUL. */
size_t kv_js_token(const char *value, size_t n, char *out);
/* The subject of a record: a new string. */
char *kv_js_record_subject(const char *stream, const char *model, const char *tenant, const char *src, size_t src_len);
/* The subject of headers: a new string. */
char *kv_js_header_subject(const char *stream);
/* The message id of a record, or of the bytes of a header (rec NULL). */
void kv_js_msg_id(const struct kv_record *rec, const uint8_t *header, size_t header_len, char out[KV_JS_MSGID_LEN + 1]);
/* True when name can be a stream (and so a subject token): 1 to 255 bytes
 * of A-Z a-z 0-9 '_' '-'. */
bool kv_js_name_ok(const char *name);

#endif

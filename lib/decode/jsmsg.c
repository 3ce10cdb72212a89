#include "decode/jsmsg.h"
#include "base/util.h"

#include <stdio.h>
#include <string.h>
/* the state on the stack: one digest per published message */
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

static bool token_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* 32 lower-case hex digits of a digest, high half first (as xxh128sum and
 * python's xxh3_128_hexdigest print it), and a NUL. */
static char *put_hex128(char *out, XXH128_hash_t d)
{
	snprintf(out, 33, "%016llx%016llx", (unsigned long long)d.high64, (unsigned long long)d.low64);
	return out + 32;
}

static size_t escaped_length(const char *value, size_t n)
{
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += token_char((unsigned char)value[i]) ? 1 : 3;
	return len;
}

size_t kv_js_token(const char *value, size_t n, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	if (!value)
		return (size_t)(stpcpy(out, "_") - out);
	if (n == 0)
		return (size_t)(stpcpy(out, "%") - out);
	if (n == 1 && value[0] == '_')
		return (size_t)(stpcpy(out, "%5F") - out);
	/* a long name escaped would pass NATS's 4096-byte control line, and
	 * the server closes the connection: its digest stands for it */
	if (escaped_length(value, n) > KV_JS_TOKEN_LIMIT) {
		out[0] = '~';
		return (size_t)(put_hex128(out + 1, XXH3_128bits(value, n)) - out);
	}
	char *q = out;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)value[i];
		if (token_char(c)) {
			*q++ = (char)c;
		} else {
			*q++ = '%';
			*q++ = hex[c >> 4];
			*q++ = hex[c & 15];
		}
	}
	*q = 0;
	return (size_t)(q - out);
}

char *kv_js_record_subject(const char *stream, const char *model, const char *tenant, const char *src, size_t src_len)
{
	size_t nm = model ? strlen(model) : 0, nt = tenant ? strlen(tenant) : 0;
	size_t cap = strlen(stream) + 3 * (nm + nt + src_len) + 16;
	char *s = kv_xmalloc(cap), *q = stpcpy(s, stream);
	*q++ = '.';
	q += kv_js_token(model, nm, q);
	*q++ = '.';
	q += kv_js_token(tenant, nt, q);
	*q++ = '.';
	kv_js_token(src, src_len, q);
	return s;
}

char *kv_js_header_subject(const char *stream)
{
	size_t n = strlen(stream) + 8;
	char *s = kv_xmalloc(n);
	snprintf(s, n, "%s.header", stream);
	return s;
}

static void put_u64(XXH3_state_t *h, uint64_t v)
{
	uint8_t b[8];
	kv_seq_encode(v, b);
	XXH3_128bits_update(h, b, 8);
}

void kv_js_msg_id(const struct kv_record *rec, const uint8_t *header, size_t header_len, char out[KV_JS_MSGID_LEN + 1])
{
	XXH3_state_t state, *h = &state;
	XXH3_INITSTATE(h);
	XXH3_128bits_reset(h);
	char kind = 'h';
	if (rec) {
		/* what tells two captured records apart for kvmatch: a batch
		 * sent again with the same seq and payload (a publisher that
		 * restarted) is another record, received at another time */
		kind = 'r';
		put_u64(h, rec->src_len);
		XXH3_128bits_update(h, rec->src, rec->src_len);
		put_u64(h, rec->recv_ns);
		put_u64(h, rec->flags);
		put_u64(h, rec->nframes);
		for (size_t i = 0; i < rec->nframes; i++) {
			put_u64(h, rec->frames[i].n);
			XXH3_128bits_update(h, rec->frames[i].p, rec->frames[i].n);
		}
	} else {
		XXH3_128bits_update(h, header, header_len);
	}
	out[0] = kind;
	put_hex128(out + 1, XXH3_128bits_digest(h));
}

bool kv_js_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 255)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!token_char((unsigned char)name[i]))
			return false;
	return true;
}

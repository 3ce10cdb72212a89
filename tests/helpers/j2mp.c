/* j2mp: writes test captures from JSON, one payload per input line.
 *   j2mp [--payload] [--src S] [--topic T] [--seq N] [--seq-bytes K] [--recv NS] [--step NS] < lines
 * JSON maps to MessagePack as expected, with string forms for what JSON
 * cannot say: "b:HEX" is bin, "u:DIGITS" an unsigned integer (above 2^63
 * too), "i:DIGITS" a signed one, "f:NUM" a float64, "x:HEX" a string of
 * those bytes (invalid UTF-8 too); "s:TEXT" is the string TEXT.  A line "raw:HEX" is a payload given byte for byte.  Output: a kvcap
 * stream (header, then one record per line, frames [topic, seq, payload],
 * seq counting up from N, recv_ns from NS in steps of --step, default 1 ms)
 * or, with --payload, the bare payloads. */
#include <getopt.h>
#include <jansson.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/kvcap.h"
#include "base/out.h"
#include "base/util.h"
#include "arg.h"

static int hexdigit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)(c | 0x20);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static size_t unhex(const char *s, uint8_t *out)
{
	size_t n = 0;
	for (; s[0] && s[1]; s += 2) {
		int hi = hexdigit(s[0]), lo = hexdigit(s[1]);
		if (hi < 0 || lo < 0)
			kv_die(65, "bad hex near '%s'", s);
		out[n++] = (uint8_t)((unsigned)hi << 4 | (unsigned)lo);
	}
	return n;
}

static void pack(msgpack_packer *pk, json_t *v)
{
	if (json_is_object(v)) {
		const char *k;
		json_t *x;
		msgpack_pack_map(pk, json_object_size(v));
		json_object_foreach(v, k, x) {
			msgpack_pack_str_with_body(pk, k, strlen(k));
			pack(pk, x);
		}
	} else if (json_is_array(v)) {
		msgpack_pack_array(pk, json_array_size(v));
		for (size_t i = 0; i < json_array_size(v); i++)
			pack(pk, json_array_get(v, i));
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		if (strncmp(s, "b:", 2) == 0) {
			uint8_t *b = malloc(strlen(s) / 2 + 1);
			size_t n = unhex(s + 2, b);
			msgpack_pack_bin_with_body(pk, b, n);
			free(b);
		} else if (strncmp(s, "x:", 2) == 0) {
			uint8_t *b = malloc(strlen(s) / 2 + 1);
			size_t n = unhex(s + 2, b);
			msgpack_pack_str_with_body(pk, b, n);
			free(b);
		} else if (strncmp(s, "u:", 2) == 0) {
			msgpack_pack_uint64(pk, arg_u64(s + 2));
		} else if (strncmp(s, "i:", 2) == 0) {
			msgpack_pack_int64(pk, strtoll(s + 2, NULL, 10));
		} else if (strncmp(s, "f:", 2) == 0) {
			msgpack_pack_double(pk, strtod(s + 2, NULL));
		} else {
			if (strncmp(s, "s:", 2) == 0)
				s += 2;
			msgpack_pack_str_with_body(pk, s, json_string_length(v) - (size_t)(s - json_string_value(v)));
		}
	} else if (json_is_integer(v)) {
		msgpack_pack_int64(pk, json_integer_value(v));
	} else if (json_is_real(v)) {
		msgpack_pack_double(pk, json_real_value(v));
	} else if (json_is_true(v) || json_is_false(v)) {
		json_is_true(v) ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
	} else {
		msgpack_pack_nil(pk);
	}
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "payload", 0, NULL, 'p' }, { "src", 1, NULL, 's' }, { "topic", 1, NULL, 't' },
		{ "seq", 1, NULL, 'n' }, { "seq-bytes", 1, NULL, 'k' }, { "recv", 1, NULL, 'r' },
		{ "step", 1, NULL, 'S' }, { NULL, 0, NULL, 0 },
	};
	const char *src = "tcp://10.0.0.5:5557", *topic = "";
	bool bare = false;
	unsigned long long seq = 0, recv = 1764500000000000000ull, step = 1000000;
	int seq_bytes = 8, c;
	kv_set_prog(argv);
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'p': bare = true; break;
		case 's': src = optarg; break;
		case 't': topic = optarg; break;
		case 'n': seq = arg_u64(optarg); break;
		case 'k': seq_bytes = (int)arg_long(optarg); break;
		case 'r': recv = arg_u64(optarg); break;
		case 'S': step = arg_u64(optarg); break;
		default: return 64;
		}
	}
	struct kv_out out;
	kv_out_open_stdout(&out);
	if (!bare)
		kv_cap_write_header(&out, "j2mp", 0);
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, stdin)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = 0;
		msgpack_sbuffer sb;
		msgpack_sbuffer_init(&sb);
		if (strncmp(line, "raw:", 4) == 0) {
			uint8_t *b = malloc((size_t)n);
			size_t len = unhex(line + 4, b);
			msgpack_sbuffer_write(&sb, (const char *)b, len);
			free(b);
		} else {
			json_error_t err;
			json_t *v = json_loadb(line, (size_t)n, JSON_DECODE_ANY, &err);
			if (!v)
				kv_die(65, "line: %s", err.text);
			msgpack_packer pk;
			msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
			pack(&pk, v);
			json_decref(v);
		}
		if (bare) {
			kv_out_write(&out, sb.data, sb.size);
		} else {
			uint8_t seqb[8];
			kv_seq_encode(seq++, seqb);
			struct kv_frame f[3] = { { (const uint8_t *)topic, strlen(topic) },
						 { seqb + 8 - seq_bytes, (size_t)seq_bytes },
						 { (const uint8_t *)sb.data, sb.size } };
			kv_cap_write_record(&out, recv, src, strlen(src), 0, f, 3);
			recv += step;
		}
		msgpack_sbuffer_destroy(&sb);
	}
	free(line);
	struct kv_err e = { 0 };
	return kv_out_close(&out, &e) ? 0 : kv_err_print(&e);
}

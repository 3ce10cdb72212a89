#include "regs.h"
#include "lines.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

bool kv_backend_parse(const char *s, enum kv_backend *b)
{
	static const struct { const char *name; enum kv_backend b; } names[] = {
		{ "mooncake", KV_BACKEND_MOONCAKE },
		{ "memcache", KV_BACKEND_MEMCACHE },
		{ "yuanrong", KV_BACKEND_YUANRONG },
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcasecmp(s, names[i].name) == 0) {
			*b = names[i].b;
			return true;
		}
	return false;
}

const char *kv_backend_name(enum kv_backend b)
{
	switch (b) {
	case KV_BACKEND_MOONCAKE: return "Mooncake";
	case KV_BACKEND_MEMCACHE: return "Memcache";
	case KV_BACKEND_YUANRONG: return "YuanRong";
	default: return "none";
	}
}

static void reg_free(struct kv_reg *r)
{
	free(r->instance_id);
	for (int m = 0; m < KV_NMEDIA; m++)
		free(r->medium_ep[m]);
	free(r->endpoint);
	free(r->replay_endpoint);
	free(r->model);
	free(r->tenant);
	free(r->node_id);
}

void kv_regs_free(struct kv_regs *regs)
{
	for (size_t i = 0; i < regs->n; i++)
		reg_free(&regs->v[i]);
	free(regs->v);
	memset(regs, 0, sizeof *regs);
}

/* Optional string member; false (with *why set) when present with another type. */
static bool opt_string(json_t *obj, const char *key, char **out, const char **why)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return true;
	if (!json_is_string(v) || json_string_length(v) == 0) {
		*why = "expected a non-empty string";
		return false;
	}
	*out = kv_xstrdup(json_string_value(v));
	return true;
}

static bool opt_int(json_t *obj, const char *key, int64_t min, int64_t max, int64_t *out, const char **why)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return true;
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
		*why = "expected an integer in range";
		return false;
	}
	*out = json_integer_value(v);
	return true;
}

/* Fills r from one parsed line; returns the offending key, or NULL. */
static const char *take_reg(json_t *o, struct kv_reg *r, const char **why)
{
	if (!opt_string(o, "instance_id", &r->instance_id, why))
		return "instance_id";
	if (!opt_string(o, "endpoint", &r->endpoint, why))
		return "endpoint";
	if (!opt_string(o, "replay_endpoint", &r->replay_endpoint, why))
		return "replay_endpoint";
	if (!opt_string(o, "modelname", &r->model, why))
		return "modelname";
	if (!opt_string(o, "tenant_id", &r->tenant, why))
		return "tenant_id";
	if (!opt_string(o, "node_id", &r->node_id, why))
		return "node_id";
	if (!opt_int(o, "block_size", 1, 1 << 20, &r->block_size, why))
		return "block_size";
	if (!opt_int(o, "dp_rank", 0, 65535, &r->dp_rank, why))
		return "dp_rank";
	json_t *b = json_object_get(o, "store_backend");
	if (b && !json_is_null(b) && (!json_is_string(b) || !kv_backend_parse(json_string_value(b), &r->backend))) {
		*why = "expected Mooncake, Memcache or YuanRong";
		return "store_backend";
	}
	json_t *eps = json_object_get(o, "medium_endpoints");
	if (eps && !json_is_null(eps)) {
		const char *key;
		json_t *v;
		if (!json_is_object(eps)) {
			*why = "expected an object of medium: endpoint";
			return "medium_endpoints";
		}
		json_object_foreach(eps, key, v) {
			enum kv_medium m = kv_medium_parse(key, strlen(key));
			if (m == KV_UNKNOWN) {
				*why = "unknown medium name";
				return "medium_endpoints";
			}
			if (!json_is_string(v) || json_string_length(v) == 0) {
				*why = "expected endpoint strings";
				return "medium_endpoints";
			}
			free(r->medium_ep[m]);
			r->medium_ep[m] = kv_xstrdup(json_string_value(v));
		}
	}
	bool engine = r->medium_ep[KV_XPU] || r->medium_ep[KV_CPU] || r->medium_ep[KV_DISK];
	if (!engine && !r->endpoint) {
		*why = "a registration needs medium_endpoints or endpoint";
		return "medium_endpoints";
	}
	if (engine && !r->instance_id) {
		*why = "required for a worker";
		return "instance_id";
	}
	r->is_pool = !engine;
	if (!r->tenant)
		r->tenant = kv_xstrdup("default");
	return NULL;
}

static bool blank(const char *s)
{
	return s[strspn(s, " \t\r\n")] == 0;
}

int kv_regs_load(const char *path, struct kv_regs *regs)
{
	memset(regs, 0, sizeof *regs);
	bool std = strcmp(path, "-") == 0;
	int fd = std ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		kv_warn_errno("%s", path);
		return KV_EX_NOINPUT;
	}
	/* Bounded reading: a line past the limit is skipped as it streams by,
	 * never held whole (getline would grow with it). */
	struct kv_lines l;
	kv_lines_init(&l, fd, KV_REGS_MAX_LINE, NULL, 0);
	char *line;
	size_t len;
	unsigned bad = 0;
	enum kv_lines_status st;
	while ((st = kv_lines_next(&l, &line, &len)) == KV_LINE || st == KV_LINE_TOO_LONG) {
		unsigned lineno = (unsigned)l.lineno;
		if (st == KV_LINE_TOO_LONG) {
			kv_warn("%s: line %u: longer than %u bytes", path, lineno, KV_REGS_MAX_LINE);
			bad++;
			continue;
		}
		if (blank(line))
			continue;
		if (regs->n >= KV_REGS_MAX) {
			kv_warn("%s: line %u: more than %u registrations", path, lineno, KV_REGS_MAX);
			bad++;
			break;
		}
		json_error_t jerr;
		json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
		if (!o || !json_is_object(o)) {
			kv_warn("%s: line %u: %s", path, lineno, o ? "expected a JSON object" : jerr.text);
			json_decref(o);
			bad++;
			continue;
		}
		struct kv_reg r = { .line = lineno };
		const char *why = NULL, *key = take_reg(o, &r, &why);
		json_decref(o);
		if (key) {
			kv_warn("%s: line %u: %s: %s", path, lineno, key, why);
			reg_free(&r);
			bad++;
			continue;
		}
		regs->v = kv_xgrow(regs->v, &regs->cap, regs->n + 1, sizeof *regs->v);
		regs->v[regs->n++] = r;
	}
	int read_err = st == KV_LINES_ERROR ? l.err : 0;
	kv_lines_free(&l);
	if (!std)
		close(fd);
	if (read_err) {
		errno = read_err;
		kv_warn_errno("%s", path);
		return KV_EX_IOERR;
	}
	/* Stopped by a signal: the program notices the flag and ends. */
	return bad ? KV_EX_DATAERR : KV_EX_OK;
}

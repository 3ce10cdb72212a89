#include "index/regs.h"
#include "base/endpoint.h"
#include "decode/kvcap.h"
#include "base/input.h"
#include "base/lines.h"
#include "base/util.h"

#include <errno.h>
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
	free(r->type);
	free(r->lora);
	free(r->salt);
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

static const char KV_REGS_MISSING[] = "missing";

/* kv-conductor's RegisterRequest has no default for these (nor has RFC
 * #1403): serde refuses a body without one, or with null for one (not an
 * Option: "invalid type: null"), and the HTTP answer is 422. */
static const char *missing_required(json_t *o, const char **why)
{
	static const char *const required[] = { "instance_id", "type", "modelname", "block_size", "dp_rank" };
	for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
		json_t *v = json_object_get(o, required[i]);
		if (!v || json_is_null(v)) {
			*why = v ? "null, where kv-conductor requires a value (it answers 422)" : KV_REGS_MISSING;
			return required[i];
		}
	}
	return NULL;
}

/* An endpoint kvsub could never read from (the rule kvsub applies to its
 * own arguments), or one too long to name a capture record's source. */
static bool check_endpoint(const char *url, const char **why)
{
	if (strlen(url) > KV_CAP_MAX_SRC) {
		*why = "endpoint longer than 1024 bytes";
		return false;
	}
	const char *problem = kv_endpoint_connect_problem(url);
	if (problem && !kv_endpoint_is_wildcard(url)) {
		*why = problem;
		return false;
	}
	/* what ZMQ would refuse at connect, found here with its line */
	static const char *const transports[] = { "tcp://", "ipc://", "inproc://", "pgm://", "epgm://", "tipc://",
						  "vmci://", "udp://", "ws://", "wss://" };
	for (size_t i = 0; i < sizeof transports / sizeof transports[0]; i++)
		if (strncmp(url, transports[i], strlen(transports[i])) == 0)
			return true;
	*why = "not a ZMQ transport (tcp://, ipc://, inproc://, ...)";
	return false;
}

static const char *take_medium_endpoints(json_t *o, struct kv_reg *r, const char **why)
{
	json_t *eps = json_object_get(o, "medium_endpoints");
	if (!eps || json_is_null(eps))
		return NULL;
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
		if (!check_endpoint(json_string_value(v), why))
			return "medium_endpoints";
		free(r->medium_ep[m]);
		r->medium_ep[m] = kv_xstrdup(json_string_value(v));
	}
	return NULL;
}

/* Dynamo's worker_id (kvmatch(1) "Workers"): a u64, as a JSON integer or,
 * beyond what JSON integers carry here (2^63), a string of its decimal
 * digits (what kvdecode writes). */
static bool take_worker_id(json_t *o, struct kv_reg *r, const char **why)
{
	json_t *v = json_object_get(o, "worker_id");
	if (!v || json_is_null(v))
		return true;
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		r->worker_id = (uint64_t)json_integer_value(v);
	} else if (!json_is_string(v) || !kv_parse_u64(json_string_value(v), 0, UINT64_MAX, &r->worker_id)) {
		*why = "expected a worker id (an integer from 0 to 2^64-1)";
		return false;
	}
	r->has_worker_id = true;
	return true;
}

/* Fills r from one parsed line; returns the offending key, or NULL. */
static const char *take_reg(json_t *o, struct kv_reg *r, const char **why)
{
	static const struct { const char *key; size_t off; } strings[] = {
		{ "instance_id", offsetof(struct kv_reg, instance_id) },
		{ "type", offsetof(struct kv_reg, type) },
		{ "endpoint", offsetof(struct kv_reg, endpoint) },
		{ "replay_endpoint", offsetof(struct kv_reg, replay_endpoint) },
		{ "modelname", offsetof(struct kv_reg, model) },
		{ "tenant_id", offsetof(struct kv_reg, tenant) },
		{ "node_id", offsetof(struct kv_reg, node_id) },
	};
	const char *key;
	/* serde's order: a field of the wrong type first, then a missing one */
	for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
		if (!opt_string(o, strings[i].key, (char **)((char *)r + strings[i].off), why))
			return strings[i].key;
	/* RFC #1403: empty or null means the base model, and no salt */
	json_t *v = json_object_get(o, "lora_name");
	if (v && !json_is_null(v) && !(json_is_string(v) && json_string_length(v) == 0) &&
	    !opt_string(o, "lora_name", &r->lora, why))
		return "lora_name";
	v = json_object_get(o, "additionalsalt");
	if (v && !json_is_null(v) && !(json_is_string(v) && json_string_length(v) == 0) &&
	    !opt_string(o, "additionalsalt", &r->salt, why))
		return "additionalsalt";
	if (!opt_int(o, "block_size", 1, 1 << 20, &r->block_size, why))
		return "block_size";
	if (!opt_int(o, "dp_rank", 0, 65535, &r->dp_rank, why))
		return "dp_rank";
	if ((key = missing_required(o, why)))
		return key;
	r->backend = KV_BACKEND_MOONCAKE; /* kv-conductor's default */
	json_t *b = json_object_get(o, "store_backend");
	if (b && !json_is_null(b) && (!json_is_string(b) || !kv_backend_parse(json_string_value(b), &r->backend))) {
		*why = "expected Mooncake, Memcache or YuanRong";
		return "store_backend";
	}
	if ((key = take_medium_endpoints(o, r, why)))
		return key;
	if (!take_worker_id(o, r, why))
		return "worker_id";
	if (r->replay_endpoint && !check_endpoint(r->replay_endpoint, why))
		return "replay_endpoint";
	bool engine = r->medium_ep[KV_XPU] || r->medium_ep[KV_CPU] || r->medium_ep[KV_DISK];
	/* a Dynamo worker is named by its worker_id: it needs no endpoint */
	if (!engine && !r->endpoint && r->has_worker_id) {
		r->tenant = r->tenant ? r->tenant : kv_xstrdup("default");
		return NULL;
	}
	if (!engine && !r->endpoint) {
		*why = "a registration needs medium_endpoints, endpoint or worker_id";
		return "medium_endpoints";
	}
	/* beside medium_endpoints, endpoint is the engine's HTTP address: unused */
	if (!engine && !check_endpoint(r->endpoint, why))
		return "endpoint";
	enum kv_backend pool_type;
	r->is_pool = !engine && kv_backend_parse(r->type, &pool_type);
	/* RFC #1403: an engine's endpoint is its event publisher, for every medium */
	if (!engine && !r->is_pool)
		r->medium_ep[KV_XPU] = kv_xstrdup(r->endpoint);
	if (!r->tenant)
		r->tenant = kv_xstrdup("default");
	return NULL;
}

static bool blank(const char *s)
{
	return s[strspn(s, " \t\r\n")] == 0;
}

/* Appends s[0..n) escaped: a backslash, '#' and NUL become \\, \# and \0. */
static char *put_escaped(char *d, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\' || s[i] == '#' || s[i] == 0)
			*d++ = '\\';
		*d++ = s[i] ? s[i] : '0';
	}
	return d;
}

char *kv_partition_name(const char *name, size_t n, const char *salt, size_t saltlen)
{
	if (!salt)
		saltlen = 0;
	char *s = kv_xmalloc(2 * (n + saltlen) + 2), *d = put_escaped(s, name, n);
	if (saltlen) {
		*d++ = '#';
		d = put_escaped(d, salt, saltlen);
	}
	*d = 0;
	return s;
}

bool kv_partition_name_split(const char *key, size_t n, char **name, char **salt)
{
	char *part[2] = { kv_xmalloc(n + 1), NULL }, *d = part[0];
	int k = 0;
	for (size_t i = 0; i < n; i++) {
		if (key[i] == '#' && k == 0) {
			*d = 0;
			part[++k] = d = kv_xmalloc(n - i);
			continue;
		}
		if (key[i] == '\\' && i + 1 < n && (key[i + 1] == '\\' || key[i + 1] == '#' || key[i + 1] == '0')) {
			i++;
			*d++ = key[i] == '0' ? 0 : key[i];
			continue;
		}
		if (key[i] == '\\' || key[i] == '#' || key[i] == 0) {
			free(part[0]);
			free(part[1]);
			return false;
		}
		*d++ = key[i];
	}
	*d = 0;
	/* the encoding of a name with an empty salt has no '#' */
	if (part[1] && !part[1][0]) {
		free(part[0]);
		free(part[1]);
		return false;
	}
	*name = part[0];
	*salt = part[1];
	return true;
}

char *kv_reg_partition(const struct kv_reg *r)
{
	const char *name = r->lora ? r->lora : r->model;
	return name ? kv_partition_name(name, strlen(name), r->salt, r->salt ? strlen(r->salt) : 0) : NULL;
}

/* ---- registrations that contradict each other ---------------------------- */

static int cmp_opt(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

/* The field in which two registrations of one worker differ, or NULL. */
static const char *differing_field(const struct kv_reg *a, const struct kv_reg *b)
{
	if (cmp_opt(a->instance_id, b->instance_id) || a->dp_rank != b->dp_rank)
		return "instance_id";
	if (a->block_size != b->block_size)
		return "block_size";
	for (int m = 0; m < KV_NMEDIA; m++)
		if (cmp_opt(a->medium_ep[m], b->medium_ep[m]))
			return "medium_endpoints";
	if (cmp_opt(a->endpoint, b->endpoint))
		return "endpoint";
	if (cmp_opt(a->replay_endpoint, b->replay_endpoint))
		return "replay_endpoint";
	if (cmp_opt(a->model, b->model) || cmp_opt(a->lora, b->lora) || cmp_opt(a->salt, b->salt))
		return "modelname";
	if (cmp_opt(a->tenant, b->tenant))
		return "tenant_id";
	if (a->backend != b->backend || a->is_pool != b->is_pool)
		return "store_backend";
	return NULL;
}

/* One key per (registration, what it claims): sorted by key, then line. */
struct claim {
	const char *key;     /* worker: instance_id; endpoint: the url; partition: its name */
	const char *key2;    /* partition: the tenant */
	int64_t num;         /* worker: dp_rank */
	size_t reg;
};

static int by_claim(const void *x, const void *y)
{
	const struct claim *a = x, *b = y;
	int c = strcmp(a->key, b->key);
	if (!c)
		c = cmp_opt(a->key2, b->key2);
	if (!c)
		c = (a->num > b->num) - (a->num < b->num);
	return c ? c : (a->reg > b->reg) - (a->reg < b->reg);
}

static bool same_claim(const struct claim *a, const struct claim *b)
{
	return strcmp(a->key, b->key) == 0 && cmp_opt(a->key2, b->key2) == 0 && a->num == b->num;
}

struct verdicts {
	char **why;          /* per registration: why it is left out, or NULL */
	bool *dup;           /* per registration: a repeat of an earlier line, left out quietly */
};

static bool out(const struct verdicts *v, size_t i)
{
	return v->why[i] || v->dup[i];
}

static void worker_claims(const struct kv_regs *regs, const struct verdicts *v, struct claim *c, size_t *n)
{
	for (size_t i = 0; i < regs->n; i++)
		if (!regs->v[i].is_pool && !out(v, i))
			c[(*n)++] = (struct claim){ regs->v[i].instance_id, NULL, regs->v[i].dp_rank, i };
}

static void endpoint_claims(const struct kv_regs *regs, const struct verdicts *v, struct claim *c, size_t *n)
{
	for (size_t i = 0; i < regs->n; i++) {
		const struct kv_reg *r = &regs->v[i];
		if (out(v, i))
			continue;
		if (r->is_pool) {
			c[(*n)++] = (struct claim){ r->endpoint, NULL, 0, i };
			continue;
		}
		for (int m = 0; m < KV_NMEDIA; m++) {
			bool seen = false; /* media of one worker may share a url */
			for (int k = 0; k < m; k++)
				seen |= r->medium_ep[k] && r->medium_ep[m] && strcmp(r->medium_ep[k], r->medium_ep[m]) == 0;
			if (r->medium_ep[m] && !seen)
				c[(*n)++] = (struct claim){ r->medium_ep[m], NULL, 0, i };
		}
	}
}

static void partition_claims(const struct kv_regs *regs, const struct verdicts *v, struct claim *c, size_t *n,
			     char **names)
{
	for (size_t i = 0; i < regs->n; i++) {
		const struct kv_reg *r = &regs->v[i];
		if (out(v, i))
			continue;
		names[i] = kv_reg_partition(r);
		c[(*n)++] = (struct claim){ names[i], r->tenant, 0, i };
	}
}

static char *describe(const struct kv_reg *r)
{
	char buf[600];
	if (r->is_pool)
		snprintf(buf, sizeof buf, "the pool subscriber");
	else
		snprintf(buf, sizeof buf, "instance_id %.256s dp_rank %lld", r->instance_id, (long long)r->dp_rank);
	return kv_xstrdup(buf);
}

/* Marks every claim that contradicts the first of its group (in line order). */
static void judge(const struct kv_regs *regs, struct verdicts *v, struct claim *c, size_t n, int kind)
{
	qsort(c, n, sizeof *c, by_claim);
	size_t first = 0; /* the group's first claim, the earliest line */
	for (size_t i = 1; i < n; i++) {
		if (!same_claim(&c[i], &c[first])) {
			first = i;
			continue;
		}
		const struct kv_reg *a = &regs->v[c[first].reg], *b = &regs->v[c[i].reg];
		if (out(v, c[i].reg) || c[i].reg == c[first].reg)
			continue;
		const char *field = differing_field(a, b);
		char msg[1400];
		if (!field) {
			v->dup[c[i].reg] = true;
			continue;
		}
		if (kind == 0)
			snprintf(msg, sizeof msg, "instance_id %.256s dp_rank %lld registered again with another %s (line %u wins)",
				 b->instance_id, (long long)b->dp_rank, field, a->line);
		else if (kind == 1) {
			char *who = describe(a);
			snprintf(msg, sizeof msg, "endpoint %.256s is already %s's at line %u (line %u wins)", c[i].key, who,
				 a->line, a->line);
			free(who);
		} else if (a->block_size != b->block_size)
			snprintf(msg, sizeof msg, "block_size %lld in partition %.256s/%.256s, where line %u has %lld (line %u wins)",
				 (long long)b->block_size, c[i].key, c[i].key2, a->line, (long long)a->block_size, a->line);
		else
			continue;
		v->why[c[i].reg] = kv_xstrdup(msg);
	}
}

/* Removes the registrations that contradict earlier ones, a message in e
 * for each; returns how many. */
static unsigned drop_conflicts(const char *path, struct kv_regs *regs, struct kv_err *e)
{
	size_t n = regs->n;
	struct verdicts v = { kv_xcalloc(n + 1, sizeof *v.why), kv_xcalloc(n + 1, sizeof *v.dup) };
	struct claim *c = kv_xmalloc((n * KV_NMEDIA + 1) * sizeof *c);
	char **names = kv_xcalloc(n + 1, sizeof *names);
	size_t k = 0;
	worker_claims(regs, &v, c, &k);
	judge(regs, &v, c, k, 0);
	k = 0;
	endpoint_claims(regs, &v, c, &k);
	judge(regs, &v, c, k, 1);
	k = 0;
	partition_claims(regs, &v, c, &k, names);
	judge(regs, &v, c, k, 2);
	unsigned reported = 0;
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		if (v.why[i]) {
			kv_err_set(e, KV_EX_DATAERR, "%s: line %u: %s", path, regs->v[i].line, v.why[i]);
			reported++;
		}
		if (out(&v, i))
			reg_free(&regs->v[i]);
		else
			regs->v[kept++] = regs->v[i];
		free(v.why[i]);
		free(names[i]);
	}
	regs->n = kept;
	free(v.why);
	free(v.dup);
	free(c);
	free(names);
	return reported;
}

enum line_kind { LINE_TAKEN, LINE_BAD, LINE_FULL };

/* One line of the file: a registration added to regs (a blank line is
 * taken too), or why the line is not one in why; LINE_FULL: one past
 * KV_REGS_MAX, which ends the reading. */
static enum line_kind take_line(enum kv_lines_status st, const char *line, size_t len, unsigned lineno,
				struct kv_regs *regs, char *why, size_t n)
{
	if (st == KV_LINE_TOO_LONG) {
		snprintf(why, n, "longer than %u bytes", KV_REGS_MAX_LINE);
		return LINE_BAD;
	}
	if (blank(line))
		return LINE_TAKEN;
	if (regs->n >= KV_REGS_MAX) {
		snprintf(why, n, "more than %u registrations", (unsigned)KV_REGS_MAX);
		return LINE_FULL;
	}
	json_error_t jerr;
	json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!o || !json_is_object(o)) {
		snprintf(why, n, "%s", o ? "expected a JSON object" : jerr.text);
		json_decref(o);
		return LINE_BAD;
	}
	struct kv_reg r = { .line = lineno };
	const char *what = NULL, *key = take_reg(o, &r, &what);
	json_decref(o);
	if (key) {
		if (what == KV_REGS_MISSING)
			snprintf(why, n, "missing field `%s` (kv-conductor answers 422)", key);
		else
			snprintf(why, n, "%s: %s", key, what);
		reg_free(&r);
		return LINE_BAD;
	}
	regs->v = kv_xgrow(regs->v, &regs->cap, regs->n + 1, sizeof *regs->v);
	regs->v[regs->n++] = r;
	return LINE_TAKEN;
}

bool kv_regs_load(const char *path, struct kv_regs *regs, struct kv_err *e)
{
	memset(regs, 0, sizeof *regs);
	int fd;
	if (!kv_input_open(path, &fd, e))
		return false;
	/* Bounded reading: a line past the limit is skipped as it streams by,
	 * never held whole (getline would grow with it); and so is the file, a
	 * pipe or a device too, which has no end of its own. */
	struct kv_lines l;
	kv_lines_init(&l, fd, KV_REGS_MAX_LINE, NULL, 0);
	l.max_total = KV_REGS_MAX_BYTES;
	char *line, why[320];
	size_t len;
	unsigned bad = 0;
	enum kv_lines_status st;
	while ((st = kv_lines_next(&l, &line, &len)) == KV_LINE || st == KV_LINE_TOO_LONG) {
		unsigned lineno = (unsigned)l.lineno;
		enum line_kind k = take_line(st, line, len, lineno, regs, why, sizeof why);
		if (k == LINE_TAKEN)
			continue;
		/* a file that is not registrations at all says so soon enough */
		if (bad++ == KV_REGS_MAX_BAD) {
			kv_err_set(e, KV_EX_DATAERR, "%s: line %u: more than %u bad lines: the rest is not read", path,
				   lineno, KV_REGS_MAX_BAD);
			break;
		}
		kv_err_set(e, KV_EX_DATAERR, "%s: line %u: %s", path, lineno, why);
		if (k == LINE_FULL)
			break;
	}
	int read_err = st == KV_LINES_ERROR ? l.in.err : 0;
	if (st == KV_LINES_LIMIT) {
		kv_err_set(e, KV_EX_DATAERR, "%s: line %llu: beyond the first %u bytes: a registrations file is at most 64 MiB",
			   path, (unsigned long long)l.lineno + 1, KV_REGS_MAX_BYTES);
		bad++;
	}
	bad += drop_conflicts(path, regs, e);
	kv_lines_free(&l);
	kv_input_close(fd);
	/* a file that cannot be read whole is one that cannot be opened, as a
	 * snapshot is: registrations are all or nothing */
	if (read_err) {
		errno = read_err;
		return kv_err_set_errno(e, KV_EX_NOINPUT, "%s", path);
	}
	/* stopped by a signal: registrations of part of the file are none */
	if (st == KV_LINES_STOPPED)
		return kv_input_stopped(e, path);
	return bad == 0;
}

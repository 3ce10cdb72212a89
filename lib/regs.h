/* regs: the registrations file (SPEC sec. 6.1), one kv-conductor /register
 * body per line.  Engine workers (medium_endpoints) and pool subscribers
 * (endpoint without medium_endpoints); every bad line is reported with its
 * line number. */
#ifndef KV_REGS_H
#define KV_REGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "medium.h"

enum kv_backend { KV_BACKEND_NONE = 0, KV_BACKEND_MOONCAKE, KV_BACKEND_MEMCACHE, KV_BACKEND_YUANRONG };

#define KV_REGS_MAX 65536
#define KV_REGS_MAX_LINE (1u << 20)

struct kv_reg {
	char *instance_id;
	char *medium_ep[KV_NMEDIA];  /* engine event endpoints by medium, or NULL */
	char *endpoint;              /* a pool subscriber's endpoint */
	char *replay_endpoint;
	char *model;                 /* "modelname"; NULL when absent */
	char *tenant;                /* "tenant_id", default "default" */
	char *node_id;
	int64_t block_size;          /* 0 when absent */
	int64_t dp_rank;
	enum kv_backend backend;
	unsigned line;
	bool is_pool;
};

struct kv_regs {
	struct kv_reg *v;
	size_t n, cap;
};

/* Reads the file; on failure the messages are printed and the exit status
 * (66 cannot open, 65 bad lines) is returned, else 0. */
int kv_regs_load(const char *path, struct kv_regs *regs);
void kv_regs_free(struct kv_regs *regs);
/* "Mooncake", "memcache", ... case-insensitive; false if none of the three. */
bool kv_backend_parse(const char *s, enum kv_backend *b);
const char *kv_backend_name(enum kv_backend b);

#endif

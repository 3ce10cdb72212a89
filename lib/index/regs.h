/* regs: the registrations file (kvmatch(1) "Workers"), one /register body per
 * line, in kv-conductor's shape (medium_endpoints, store_backend, node_id) or
 * Mooncake RFC #1403's (endpoint, lora_name, additionalsalt).  Both require
 * instance_id, type, modelname, block_size and dp_rank, and so does this
 * reader: a line kv-conductor would answer 422 is refused, with its reason.
 * Engine workers (medium_endpoints, or an endpoint of an engine type) and
 * pool subscribers (an endpoint of type Mooncake, Memcache or YuanRong).
 * The one place that reports registrations that contradict each other
 * (kv_regs_load): every program that reads them says the same. */
#ifndef KV_REGS_H
#define KV_REGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "decode/medium.h"

enum kv_backend { KV_BACKEND_NONE = 0, KV_BACKEND_MOONCAKE, KV_BACKEND_MEMCACHE, KV_BACKEND_YUANRONG };

#define KV_REGS_MAX 65536
#define KV_REGS_MAX_LINE (1u << 20)
/* The whole file: 1 KiB a registration at the most of them (a pipe or a
 * device has no size of its own), and the bad lines reported before the
 * rest is left unread (a file that is not registrations at all). */
#define KV_REGS_MAX_BYTES (64u << 20)
#define KV_REGS_MAX_BAD 100

struct kv_reg {
	char *instance_id;
	char *medium_ep[KV_NMEDIA];  /* engine event endpoints by medium, or NULL */
	char *endpoint;              /* a pool subscriber's endpoint */
	char *replay_endpoint;
	char *model;                 /* "modelname"; NULL when absent */
	char *tenant;                /* "tenant_id", default "default" */
	char *node_id;
	char *type;                  /* "type": vLLM, SGLang, Mooncake, ... */
	char *lora;                  /* "lora_name" (RFC #1403), NULL for the base model */
	char *salt;                  /* "additionalsalt" (RFC #1403), NULL when empty */
	int64_t block_size;
	int64_t dp_rank;
	bool has_worker_id;          /* "worker_id": Dynamo's id of this worker */
	uint64_t worker_id;
	enum kv_backend backend;
	unsigned line;
	bool is_pool;
};

struct kv_regs {
	struct kv_reg *v;
	size_t n, cap;
};

/* Reads the file ("-": standard input).  False when it cannot be opened
 * or read (66), when a stop signal ended the reading (status 0: no
 * registrations of part of the file are used; kv_input_stopped), or when
 * a line is bad (65): a line beyond KV_REGS_MAX_BYTES (the rest is not
 * read), a line after KV_REGS_MAX_BAD bad ones (the same), a bad line, or one that
 * contradicts an earlier line (the same worker with another block size,
 * endpoint, model or tenant; an endpoint of another worker; another block
 * size in the same partition), gets a message "FILE: line N: why" in e and
 * is left out: the first line wins.  The good lines are kept either way. */
bool kv_regs_load(const char *path, struct kv_regs *regs, struct kv_err *e);
void kv_regs_free(struct kv_regs *regs);
/* "Mooncake", "memcache", ... case-insensitive; false if none of the three. */
bool kv_backend_parse(const char *s, enum kv_backend *b);
const char *kv_backend_name(enum kv_backend b);
/* The name of a partition, its key in the index and the snapshot: the
 * LoRA adapter's name, else the model's, and "#SALT" after it when there
 * is a salt (RFC #1403's additionalsalt and cache_salt): LoRA and salt are
 * part of a partition's identity.  Injective, so that no two (name, salt)
 * are one partition: in both, a backslash, '#' and NUL are written \\, \#
 * and \0, and so a name without them and no salt is its own key.  The
 * one function every caller names a partition with (kvmatch(1)
 * "Partitions and block identity").  A new string; name is n bytes, salt
 * may be NULL or empty (no salt). */
char *kv_partition_name(const char *name, size_t n, const char *salt, size_t saltlen);
/* The inverse: the name and salt (NULL: none) of a key, new strings;
 * false when key[0..n) is no key kv_partition_name writes. */
bool kv_partition_name_split(const char *key, size_t n, char **name, char **salt);
/* The partition a registration's events go to by default: kv_partition_name
 * of its adapter or model and its salt; NULL without a model. */
char *kv_reg_partition(const struct kv_reg *r);

#endif

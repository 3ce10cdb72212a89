#include "base/strmap.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

void kv_strmap_init(struct kv_strmap *m, bool copies)
{
	memset(m, 0, sizeof *m);
	m->copies = copies;
}

static void free_keys(struct kv_strmap *m)
{
	if (!m->copies)
		return;
	for (size_t i = 0; i < m->n; i++)
		free((char *)m->v[i].key);
}

void kv_strmap_free(struct kv_strmap *m)
{
	free_keys(m);
	free(m->v);
	kv_strmap_heads_free(&m->heads);
	kv_strmap_init(m, m->copies);
}

void kv_strmap_clear(struct kv_strmap *m)
{
	free_keys(m);
	m->n = 0;
	/* Every slot empty again, as table.h knows an empty slot: key 0. */
	if (m->heads.cap)
		memset(m->heads.slots, 0, m->heads.cap * sizeof *m->heads.slots);
	m->heads.n = 0;
	m->heads.has_zero = false;
}

static const char *copy_key(const char *key, size_t len)
{
	char *p = kv_xmalloc(len + 1);
	if (len)
		memcpy(p, key, len);
	p[len] = 0;
	return p;
}

uint32_t kv_strmap_add_hashed(struct kv_strmap *m, uint64_t hash, const char *key, size_t len, int64_t num,
			      uint32_t value)
{
	uint32_t id = kv_strmap_find_hashed(m, hash, key, len, num);
	if (id != KV_STRMAP_NONE)
		return id;
	if (m->n >= KV_STRMAP_NONE)
		kv_die(KV_EX_SOFTWARE, "a string map of %zu entries", m->n);
	bool added;
	struct kv_strmap_head *h = kv_strmap_heads_upsert(&m->heads, hash, &added);
	m->v = kv_xgrow(m->v, &m->cap, m->n + 1, sizeof *m->v);
	m->v[m->n] = (struct kv_strmap_entry){
		m->copies ? copy_key(key, len) : key, len, num, value, added ? KV_STRMAP_NONE : h->first,
	};
	h->first = (uint32_t)m->n;
	return (uint32_t)m->n++;
}

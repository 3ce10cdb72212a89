/* test_strmap: the string map under random additions, lookups and clears,
 * against a plain array searched from end to end; growth, empty keys, keys
 * that differ in their last byte or their number only, and keys whose
 * hashes all collide. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"
#include "unit.h"

/* ---- the reference model ------------------------------------------------ */

enum { MAXKEY = 24, MAXENT = 4096 };

struct ref_entry {
	char key[MAXKEY];
	size_t len;
	int64_t num;
	uint32_t value;
};

struct ref {
	struct ref_entry e[MAXENT];
	size_t n;
};

static uint32_t ref_find(const struct ref *r, const char *key, size_t len, int64_t num)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->e[i].len == len && r->e[i].num == num && memcmp(r->e[i].key, key, len) == 0)
			return (uint32_t)i;
	return KV_STRMAP_NONE;
}

/* A key from a small alphabet, often empty or short, so that keys repeat,
 * are prefixes of one another and hold NUL bytes. */
static size_t random_key(char *k)
{
	static const char alphabet[] = { 'a', 'b', '\0', '\xff' };
	size_t len = (size_t)(unit_rand() % 7);
	if (unit_rand() % 8 == 0)
		len = MAXKEY - 1 - (size_t)(unit_rand() % 3);   /* long ones too */
	for (size_t i = 0; i < len; i++)
		k[i] = alphabet[unit_rand() % 4];
	return len;
}

enum hashing { REAL, CONSTANT, FIRST_BYTE, ZERO };

/* The hash a test map uses: the map's own, or one that collides on purpose. */
static uint64_t test_hash(enum hashing h, const char *key, size_t len, int64_t num)
{
	switch (h) {
	case CONSTANT: return 0x5eed;
	case FIRST_BYTE: return len ? (uint8_t)key[0] + 1 : 1;
	case ZERO: return 0;           /* table.h keeps key 0 beside its slots */
	default: return kv_strmap_hash(key, len, num);
	}
}

/* Every entry of the model is in the map under its id with its value and
 * its key's bytes, and the map holds nothing else. */
static bool same_as_ref(struct kv_strmap *m, const struct ref *r, enum hashing h)
{
	if (kv_strmap_count(m) != r->n)
		return false;
	for (size_t i = 0; i < r->n; i++) {
		const struct ref_entry *x = &r->e[i];
		const struct kv_strmap_entry *e = kv_strmap_at(m, (uint32_t)i);
		if (kv_strmap_find_hashed(m, test_hash(h, x->key, x->len, x->num), x->key, x->len, x->num) != i)
			return false;
		if (e->len != x->len || e->num != x->num || e->value != x->value ||
		    (x->len && memcmp(e->key, x->key, x->len) != 0))
			return false;
		if (m->copies && e->key[e->len] != 0)
			return false;
	}
	return true;
}

static void random_operations(enum hashing h, bool copies, int ops)
{
	static struct ref r;
	struct kv_strmap m;
	kv_strmap_init(&m, copies);
	r.n = 0;
	/* Keys of a map that does not copy them stay where they were given. */
	static char stored[MAXENT][MAXKEY];
	for (int op = 0; op < ops; op++) {
		char buf[MAXKEY];
		size_t len = random_key(buf);
		int64_t num = (int64_t)(unit_rand() % 3) - 1;
		uint64_t hash = test_hash(h, buf, len, num);
		uint32_t want = ref_find(&r, buf, len, num);
		int what = (int)(unit_rand() % 16);
		if (what < 6 && r.n < MAXENT) {
			uint32_t value = (uint32_t)unit_rand();
			const char *key = buf;
			if (!copies && want == KV_STRMAP_NONE)
				key = memcpy(stored[r.n], buf, len);
			uint32_t id = kv_strmap_add_hashed(&m, hash, key, len, num, value);
			if (want == KV_STRMAP_NONE) {
				ASSERT_EQ_U64(id, r.n);
				struct ref_entry *x = &r.e[r.n++];
				memcpy(x->key, buf, len);
				x->len = len;
				x->num = num;
				x->value = value;
			} else {
				ASSERT_EQ_U64(id, want);
			}
			/* a copying map owns its key: the caller's buffer may change */
			memset(buf, 'z', sizeof buf);
		} else if (what == 15 && unit_rand() % 64 == 0) {
			kv_strmap_clear(&m);
			r.n = 0;
			ASSERT_EQ_U64(kv_strmap_count(&m), 0);
		} else {
			ASSERT_EQ_U64(kv_strmap_find_hashed(&m, hash, buf, len, num), want);
		}
		if (op % 997 == 0)
			ASSERT(same_as_ref(&m, &r, h));
	}
	ASSERT(same_as_ref(&m, &r, h));
	kv_strmap_free(&m);
	ASSERT_EQ_U64(kv_strmap_count(&m), 0);
}

static void matches_reference(void)
{
	random_operations(REAL, true, 200000);
	random_operations(REAL, false, 200000);
}

/* Every key of one hash: the map tells them apart by their bytes alone. */
static void collisions_match_reference(void)
{
	random_operations(CONSTANT, true, 20000);
	random_operations(FIRST_BYTE, false, 100000);
	random_operations(ZERO, true, 20000);
}

/* ---- particular keys ---------------------------------------------------- */

/* Many more keys than the table's first size: ids in order, all found. */
static void grows(void)
{
	enum { N = 100000 };
	struct kv_strmap m;
	kv_strmap_init(&m, true);
	char k[32];
	for (uint32_t i = 0; i < N; i++) {
		int n = snprintf(k, sizeof k, "tcp://10.0.%u.%u:5557", i / 256, i % 256);
		ASSERT_EQ_U64(kv_strmap_add(&m, k, (size_t)n, i * 7), i);
	}
	ASSERT_EQ_U64(kv_strmap_count(&m), N);
	for (uint32_t i = 0; i < N; i++) {
		int n = snprintf(k, sizeof k, "tcp://10.0.%u.%u:5557", i / 256, i % 256);
		uint32_t id = kv_strmap_find(&m, k, (size_t)n);
		ASSERT_EQ_U64(id, i);
		ASSERT_EQ_U64(kv_strmap_at(&m, id)->value, i * 7);
		ASSERT(strcmp(kv_strmap_at(&m, id)->key, k) == 0);
	}
	ASSERT_EQ_U64(kv_strmap_find(&m, "tcp://10.0.0.0:5558", 19), KV_STRMAP_NONE);
	kv_strmap_free(&m);
}

static void empty_keys(void)
{
	struct kv_strmap m;
	kv_strmap_init(&m, true);
	ASSERT_EQ_U64(kv_strmap_find(&m, "", 0), KV_STRMAP_NONE);
	ASSERT_EQ_U64(kv_strmap_add(&m, "", 0, 10), 0);
	ASSERT_EQ_U64(kv_strmap_find(&m, NULL, 0), 0);      /* no bytes: no pointer needed */
	ASSERT_EQ_U64(kv_strmap_find(&m, "x", 0), 0);
	ASSERT_EQ_U64(kv_strmap_find(&m, "\0", 1), KV_STRMAP_NONE);
	ASSERT_EQ_U64(kv_strmap_find_num(&m, "", 0, 1), KV_STRMAP_NONE);
	ASSERT_EQ_U64(kv_strmap_add(&m, "\0", 1, 11), 1);
	ASSERT_EQ_U64(kv_strmap_add_num(&m, NULL, 0, -1, 12), 2);
	ASSERT_EQ_U64(kv_strmap_add(&m, "", 0, 99), 0);     /* there already: value kept */
	ASSERT_EQ_U64(kv_strmap_at(&m, 0)->value, 10);
	ASSERT_EQ_U64(kv_strmap_at(&m, 2)->num, -1);
	ASSERT(kv_strmap_at(&m, 2)->key[0] == 0);
	ASSERT_EQ_U64(kv_strmap_count(&m), 3);
	kv_strmap_free(&m);
}

/* 256 keys of 200 bytes that differ only in their last byte, and their
 * prefixes one byte shorter, which differ from each of them in length only;
 * under the map's hash and under one hash for all. */
static void last_byte_differs_hashed(enum hashing h)
{
	struct kv_strmap m;
	kv_strmap_init(&m, false);
	static char keys[256][200];
	for (int i = 0; i < 256; i++) {
		memset(keys[i], 'p', 199);
		keys[i][199] = (char)i;
	}
	for (int i = 0; i < 256; i++)
		ASSERT_EQ_U64(kv_strmap_add_hashed(&m, test_hash(h, keys[i], 200, 0), keys[i], 200, 0, (uint32_t)i),
			      (uint64_t)i);
	uint64_t short_hash = test_hash(h, keys[0], 199, 0);
	ASSERT_EQ_U64(kv_strmap_find_hashed(&m, short_hash, keys[0], 199, 0), KV_STRMAP_NONE);
	ASSERT_EQ_U64(kv_strmap_add_hashed(&m, short_hash, keys[0], 199, 0, 256), 256);
	for (int i = 0; i < 256; i++) {
		char probe[200];
		memcpy(probe, keys[i], 200);   /* equal bytes elsewhere: not the same pointer */
		ASSERT_EQ_U64(kv_strmap_find_hashed(&m, test_hash(h, probe, 200, 0), probe, 200, 0), (uint64_t)i);
	}
	ASSERT_EQ_U64(kv_strmap_find_hashed(&m, short_hash, keys[7], 199, 0), 256);
	ASSERT_EQ_U64(kv_strmap_count(&m), 257);
	kv_strmap_free(&m);
}

static void last_byte_differs(void)
{
	last_byte_differs_hashed(REAL);
	last_byte_differs_hashed(CONSTANT);
}

/* The number beside a key is part of it; plain keys have number 0. */
static void numbers_hashed(enum hashing h)
{
	struct kv_strmap m;
	kv_strmap_init(&m, true);
	static const int64_t nums[] = { INT64_MIN, -1, 0, 1 << 20 };
	for (uint32_t i = 0; i < 4; i++)
		ASSERT_EQ_U64(kv_strmap_add_hashed(&m, test_hash(h, "w", 1, nums[i]), "w", 1, nums[i], i), i);
	for (uint32_t i = 0; i < 4; i++)
		ASSERT_EQ_U64(kv_strmap_find_hashed(&m, test_hash(h, "w", 1, nums[i]), "w", 1, nums[i]), i);
	ASSERT_EQ_U64(kv_strmap_find_hashed(&m, test_hash(h, "w", 1, 1), "w", 1, 1), KV_STRMAP_NONE);
	kv_strmap_free(&m);
}

static void numbers_are_part_of_keys(void)
{
	numbers_hashed(REAL);
	numbers_hashed(CONSTANT);
	struct kv_strmap m;
	kv_strmap_init(&m, true);
	ASSERT_EQ_U64(kv_strmap_add_num(&m, "w", 1, -1, 2), 0);
	ASSERT_EQ_U64(kv_strmap_add(&m, "w", 1, 3), 1);
	ASSERT_EQ_U64(kv_strmap_find_num(&m, "w", 1, 0), 1);
	ASSERT_EQ_U64(kv_strmap_find(&m, "w", 1), 1);
	kv_strmap_free(&m);
}

/* A cleared map is empty, keeps its slots, and counts ids from 0 again. */
static void clear_hashed(enum hashing h)
{
	struct kv_strmap m;
	kv_strmap_init(&m, false);
	static const char *names[] = { "a", "bb", "", "ccc" };
	for (int round = 0; round < 3; round++) {
		for (uint32_t i = 0; i < 4; i++) {
			size_t n = strlen(names[i]);
			ASSERT_EQ_U64(kv_strmap_add_hashed(&m, test_hash(h, names[i], n, 0), names[i], n, 0, i), i);
		}
		size_t cap = m.heads.cap;
		kv_strmap_clear(&m);
		ASSERT_EQ_U64(m.heads.cap, cap);
		ASSERT_EQ_U64(kv_strmap_count(&m), 0);
		for (uint32_t i = 0; i < 4; i++) {
			size_t n = strlen(names[i]);
			ASSERT_EQ_U64(kv_strmap_find_hashed(&m, test_hash(h, names[i], n, 0), names[i], n, 0),
				      KV_STRMAP_NONE);
		}
		ASSERT_EQ_U64(kv_strmap_add_hashed(&m, test_hash(h, "ccc", 3, 0), "ccc", 3, 0, 9), 0);
		kv_strmap_clear(&m);
	}
	kv_strmap_free(&m);
}

static void clear_starts_over(void)
{
	clear_hashed(REAL);
	clear_hashed(ZERO);
}

int main(void)
{
	/* clear_starts_over before the random runs: a map that clears badly
	 * can loop in them (a chain through stale entries) */
	RUN(grows);
	RUN(empty_keys);
	RUN(last_byte_differs);
	RUN(numbers_are_part_of_keys);
	RUN(clear_starts_over);
	RUN(matches_reference);
	RUN(collisions_match_reference);
	return unit_done();
}

/* regs: partition names (kv_partition_name) are one per (name, salt): no
 * two pairs share one, a plain name is its own, and kv_partition_name_split
 * gives back what was joined. */
#include <stdlib.h>
#include <string.h>

#include "index/regs.h"
#include "unit.h"

struct pair {
	const char *name;
	size_t n;
	const char *salt;
};

/* Names and salts built of the characters the encoding treats apart. */
static const struct pair pairs[] = {
	{ "x#y", 3, NULL }, { "x", 1, "y" }, { "x", 1, "#y" }, { "x#", 2, "y" }, { "x\\", 2, "y" }, { "x\\#y", 4, NULL },
	{ "x\\", 2, "#y" }, { "x", 1, "\\#y" }, { "x\\\\", 3, NULL }, { "x\\0", 3, NULL }, { "x\0", 2, NULL },
	{ "x", 1, NULL }, { "", 0, "y" }, { "#", 1, NULL }, { "", 0, "#" }, { "x#y#z", 5, NULL }, { "x", 1, "y#z" },
	{ "x#y", 3, "z" }, { "llama", 5, NULL }, { "llama", 5, "w8a8" },
};

static void injective(void)
{
	size_t n = sizeof pairs / sizeof pairs[0];
	char **keys = calloc(n, sizeof *keys);
	for (size_t i = 0; i < n; i++)
		keys[i] = kv_partition_name(pairs[i].name, pairs[i].n, pairs[i].salt,
					    pairs[i].salt ? strlen(pairs[i].salt) : 0);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			ASSERT(strcmp(keys[i], keys[j]) != 0);
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
}

static void written_as_documented(void)
{
	static const struct { struct pair p; const char *key; } cases[] = {
		{ { "llama", 5, NULL }, "llama" },            /* a plain name is its own key */
		{ { "llama", 5, "w8a8" }, "llama#w8a8" },
		{ { "x#y", 3, NULL }, "x\\#y" },
		{ { "x", 1, "y" }, "x#y" },
		{ { "a\\b", 3, NULL }, "a\\\\b" },
		{ { "a\0b", 3, NULL }, "a\\0b" },              /* a NUL never cuts a key short */
		{ { "m", 1, "" }, "m" },                       /* an empty salt is none */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct pair *p = &cases[i].p;
		char *k = kv_partition_name(p->name, p->n, p->salt, p->salt ? strlen(p->salt) : 0);
		ASSERT_EQ_STR(k, cases[i].key);
		free(k);
	}
}

static void split_inverts(void)
{
	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
		const struct pair *p = &pairs[i];
		char *k = kv_partition_name(p->name, p->n, p->salt, p->salt ? strlen(p->salt) : 0), *name, *salt;
		ASSERT(kv_partition_name_split(k, strlen(k), &name, &salt));
		ASSERT(memcmp(name, p->name, p->n) == 0 && name[p->n] == 0);
		bool has_salt = p->salt && *p->salt;
		ASSERT(has_salt ? salt && strcmp(salt, p->salt) == 0 : salt == NULL);
		free(k);
		free(name);
		free(salt);
	}
	/* what kv_partition_name never writes */
	static const char *const bad[] = { "x\\", "x\\y", "x#y#z", "x#", "a\\q" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *name = NULL, *salt = NULL;
		ASSERT(!kv_partition_name_split(bad[i], strlen(bad[i]), &name, &salt));
	}
}

int main(void)
{
	RUN(injective);
	RUN(written_as_documented);
	RUN(split_inverts);
	return unit_done();
}

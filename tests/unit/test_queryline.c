/* Query lines (query/queryline.c, kvquery(1) "Queries"): what each form
 * gives, and each refusal with the exact text kvquery prints for the bad
 * line: bad numbers, numbers out of range, an empty line, a key given
 * twice (also under its two names), a wrong type, a missing list.  One
 * parser reads every line, so a refusal must leave nothing behind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/queryline.h"
#include "unit.h"

static struct kv_qparser *parser;
static struct kv_qline line;

static bool parse(const char *text)
{
	return kv_qparse(parser, text, strlen(text), &line);
}

/* A /query body: its fields; token ids are i64 cast to u32. */
static void query_body(void)
{
	ASSERT(parse("{\"model\":\"m\",\"tenant_id\":\"t\",\"block_size\":4,\"token_ids\":[1,-1,4294967296,2]}"));
	ASSERT(line.has_model && line.has_tenant && line.has_block_size && !line.by_hash && !line.by_seq);
	ASSERT_EQ_STR(line.model, "m");
	ASSERT_EQ_STR(line.tenant, "t");
	ASSERT_EQ_U64(line.block_size, 4);
	ASSERT_EQ_U64(line.ntokens, 4);
	ASSERT_EQ_U64(line.tokens[0], 1);
	ASSERT_EQ_U64(line.tokens[1], 4294967295u);
	ASSERT_EQ_U64(line.tokens[2], 0);
	ASSERT_EQ_U64(line.tokens[3], 2);
}

/* /query_by_hash: numbers read exactly as u64, or hex strings. */
static void by_hash_body(void)
{
	ASSERT(parse("{\"block_hashes\":[18446744073709551615,\"0x10\"]}"));
	ASSERT(line.by_hash && !line.by_seq && !line.has_model);
	ASSERT_EQ_U64(line.nhashes, 2);
	ASSERT_EQ_U64(line.hashes[0], UINT64_MAX);
	ASSERT_EQ_U64(line.hashes[1], 16);
	ASSERT(parse("{\"seq_hashes\":[7],\"instance_id\":\"i\",\"lora_name\":\"l\",\"cache_salt\":\"s\"}"));
	ASSERT(line.by_hash && line.by_seq);
	ASSERT_EQ_STR(line.instance, "i");
	ASSERT_EQ_STR(line.lora, "l");
	ASSERT_EQ_STR(line.salt, "s");
}

/* Bare lists, and a key kvquery does not read may repeat. */
static void bare_lists(void)
{
	ASSERT(parse("[5,6,7]"));
	ASSERT_EQ_U64(line.ntokens, 3);
	ASSERT_EQ_U64(line.tokens[2], 7);
	ASSERT(parse("  8 9,10"));
	ASSERT_EQ_U64(line.ntokens, 3);
	ASSERT_EQ_U64(line.tokens[0], 8);
	ASSERT_EQ_U64(line.tokens[2], 10);
	ASSERT(parse("{\"x\":1,\"x\":[2],\"token_ids\":[3]}"));
	ASSERT_EQ_U64(line.ntokens, 1);
}

struct refusal {
	const char *line, *why;
};

static const struct refusal refusals[] = {
	/* empty */
	{ "", "empty query" },
	{ " \t ", "empty query" },
	/* bad numbers, and numbers out of range */
	{ "{\"token_ids\":[9223372036854775808]}", "token_ids: token ids are integers from -2^63 to 2^63-1 (i64)" },
	{ "{\"token_ids\":[-9223372036854775809]}", "token_ids: token ids are integers from -2^63 to 2^63-1 (i64)" },
	{ "{\"token_ids\":[1.5]}", "token_ids: token ids are integers from -2^63 to 2^63-1 (i64)" },
	{ "{\"token_ids\":[\"1\"]}", "token_ids: token ids are integers from -2^63 to 2^63-1 (i64)" },
	{ "1 2 x", "token_ids: token ids are integers from -2^63 to 2^63-1 (i64)" },
	{ "{\"block_hashes\":[-1]}", "block_hashes: hashes are integers from 0 to 2^64-1 or hex strings" },
	{ "{\"block_hashes\":[18446744073709551616]}",
	  "block_hashes: hashes are integers from 0 to 2^64-1 or hex strings" },
	{ "{\"block_size\":0,\"token_ids\":[1]}", "block_size: expected an integer from 1 to 1048576" },
	{ "{\"block_size\":1048577,\"token_ids\":[1]}", "block_size: expected an integer from 1 to 1048576" },
	{ "{\"block_size\":\"4\",\"token_ids\":[1]}", "block_size: expected an integer from 1 to 1048576" },
	/* a wrong type, a nested list */
	{ "{\"model\":3,\"token_ids\":[1]}", "model: expected a string" },
	{ "{\"tenant_id\":[\"t\"],\"token_ids\":[1]}", "tenant_id: expected a string" },
	{ "{\"token_ids\":5}", "token_ids: expected an array" },
	{ "{\"token_ids\":[[1]]}", "token_ids: nested values" },
	{ "7", NULL }, /* a lone number is a bare list of one token: accepted, checked below */
	/* a key given twice, also under its two names */
	{ "{\"token_ids\":[1],\"token_ids\":[2]}", "token_ids: given twice" },
	{ "{\"model\":\"a\",\"model\":\"b\",\"token_ids\":[1]}", "model: given twice" },
	{ "{\"seq_hashes\":[1],\"block_hash\":[2]}", "block_hash: given twice" },
	/* what a query must have, and must not have together */
	{ "{\"model\":\"m\"}", "no token_ids or block_hashes" },
	{ "{\"token_ids\":[1],\"block_hashes\":[2]}", "both token_ids and block_hashes" },
	/* local and sequence hashes in one line: one field under two names to serde */
	{ "{\"block_hashes\":[1],\"seq_hashes\":[2]}", "seq_hashes: given twice" },
	{ "\"x\"", "expected a JSON object, an array or numbers" },
};

static void refusals_say_why(void)
{
	for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
		bool ok = parse(refusals[i].line);
		if (!refusals[i].why) {
			ASSERT(ok);
			continue;
		}
		if (ok)
			printf("# accepted: %s\n", refusals[i].line);
		ASSERT(!ok);
		ASSERT_EQ_STR(kv_qparser_error(parser), refusals[i].why);
		/* the next line is read afresh */
		ASSERT(parse("{\"token_ids\":[3,4]}"));
		ASSERT_EQ_U64(line.ntokens, 2);
		ASSERT(!line.has_model && !line.by_hash);
	}
}

/* Bad JSON: yajl's own words, on one line. */
static void bad_json(void)
{
	ASSERT(!parse("{\"token_ids\":[1,2"));
	const char *why = kv_qparser_error(parser);
	ASSERT(why[0] != 0);
	ASSERT(strchr(why, '\n') == NULL);
	/* \v is no JSON blank (yajl would skip it) */
	ASSERT(!parse("{\"token_ids\":\v[1]}"));
	ASSERT_EQ_STR(kv_qparser_error(parser), "lexical error: invalid char in json text.");
}

/* A line of n token ids 0..n-1 (hashes: "block_hashes"), with a field
 * after the list when tail. */
static char *numbers_line(const char *key, size_t n, bool tail)
{
	char *t = malloc(32 + 12 * n + 32), *at = t;
	at += sprintf(at, "{\"%s\":[", key);
	for (size_t i = 0; i < n; i++)
		at += sprintf(at, "%s%zu", i ? "," : "", i);
	sprintf(at, "]%s}", tail ? ",\"model\":\"m\"" : "");
	return t;
}

/* The arrays are sized from the rest of the line before a list is read,
 * in memory of their own: lines long and short in turn, tokens and
 * hashes, each read whole with the values of its own line. */
static void lists_sized_from_the_line(void)
{
	static const size_t sizes[] = { 3, 100000, 1, 70000, 0, 200000, 64, 65, 129 };
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		for (int k = 0; k < 2; k++) {
			char *t = numbers_line(k ? "block_hashes" : "token_ids", sizes[i], i % 2);
			ASSERT(parse(t));
			free(t);
			size_t n = k ? line.nhashes : line.ntokens;
			ASSERT_EQ_U64(n, sizes[i]);
			bool all = true;
			for (size_t j = 0; j < n; j++)
				all = all && (k ? line.hashes[j] : line.tokens[j]) == j;
			ASSERT(all);
		}
	}
}

int main(void)
{
	parser = kv_qparser_new();
	RUN(query_body);
	RUN(by_hash_body);
	RUN(bare_lists);
	RUN(refusals_say_why);
	RUN(bad_json);
	RUN(lists_sized_from_the_line);
	kv_qparser_free(parser);
	free(line.tokens);
	free(line.hashes);
	return unit_done();
}

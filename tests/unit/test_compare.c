/* compare: a router's answer read as kv-conductor and RFC #1403 write it,
 * what is no answer and why, and which differences follow from which
 * (kvquery(1) "Comparing with a router"). */
#include <stdlib.h>
#include <string.h>

#include "query/compare.h"
#include "unit.h"

/* A conductor DP object with every field. */
#define DP6(c, l, r, d, t, n) \
	"{\"cpu_blocks\":" #c ",\"cpu_local_blocks\":" #l ",\"cpu_remote_blocks\":" #r ",\"disk_blocks\":" #d \
	",\"matched_tokens\":" #t ",\"npu_blocks\":" #n "}"

static bool parse(struct kv_rows *r, const char *body, bool rfc, char *why)
{
	*r = (struct kv_rows){ 0 };
	return kv_rows_parse(r, body, strlen(body), "default", 7, rfc, why, 200);
}

static void conductor_answer_read(void)
{
	struct kv_rows r;
	char why[200];
	ASSERT(parse(&r, "{\"default\":{\"b\":{\"DP\":{\"10\":" DP6(0, 0, 0, 0, 64, 1) ",\"2\":" DP6(2, 1, 1, 0, 192, 1)
			 "},\"longest_matched\":192},\"a\":{\"DP\":{\"0\":" DP6(2, 2, 0, 0, 640, 3)
			 "},\"longest_matched\":640}}}",
		     false, why));
	/* sorted by instance, its own fields first, then ranks by number */
	ASSERT_EQ_U64(r.n, 5);
	ASSERT_EQ_STR(r.v[0].instance, "a");
	ASSERT_EQ_U64((uint64_t)(r.v[0].dp + 1), 0);
	ASSERT_EQ_U64(r.v[0].f[KV_F_LONGEST], 640);
	ASSERT_EQ_U64(r.v[1].f[KV_F_NPU], 3);
	ASSERT_EQ_U64(r.v[1].f[KV_F_TOKENS], 640);
	ASSERT_EQ_STR(r.v[2].instance, "b");
	ASSERT_EQ_U64((uint64_t)r.v[3].dp, 2);
	ASSERT_EQ_U64(r.v[3].f[KV_F_REMOTE], 1);
	ASSERT_EQ_U64((uint64_t)r.v[4].dp, 10);
	kv_rows_free(&r);
	/* kv-conductor before 5246d49: four fields a rank, no split */
	ASSERT(parse(&r, "{\"default\":{\"a\":{\"DP\":{\"0\":{\"cpu_blocks\":2,\"disk_blocks\":0,\"matched_tokens\":640,"
			 "\"npu_blocks\":3}},\"longest_matched\":640}}}",
		     false, why));
	ASSERT(!(r.v[1].has & (1u << KV_F_LOCAL)));
	kv_rows_free(&r);
	/* no hits */
	ASSERT(parse(&r, "{\"default\":{}}", false, why));
	ASSERT_EQ_U64(r.n, 0);
	kv_rows_free(&r);
}

static void not_an_answer(void)
{
	static const struct { const char *body, *why; } cases[] = {
		{ "<html>", "not JSON ('[' or '{' expected near '<' at byte 1)" },
		{ "{\"default\":{\"a\":{\"DP\":{\"0\":{\"cpu_blocks\":2", "not JSON ('}' expected near end of file at byte 42)" },
		{ "[]", "not a JSON object" },
		{ "{\"error\":\"no indexer for model=m tenant=default\"}", "an error: no indexer for model=m tenant=default" },
		{ "{\"other\":{}}", "no tenant \"default\" in it" },
		{ "{\"default\":{},\"other\":{}}", "it names another tenant beside \"default\"" },
		{ "{\"default\":[]}", "tenant \"default\" is not an object" },
		{ "{\"default\":{\"a\":{\"DP\":{}}}}", "longest_matched of a is missing or not a count" },
		{ "{\"default\":{\"a\":{\"longest_matched\":-1,\"DP\":{}}}}", "longest_matched of a is missing or not a count" },
		{ "{\"default\":{\"a\":{\"longest_matched\":1.5,\"DP\":{}}}}", "longest_matched of a is missing or not a count" },
		{ "{\"default\":{\"a\":{\"longest_matched\":0}}}", "DP of a is missing or not an object" },
		{ "{\"default\":{\"a\":{\"longest_matched\":0,\"DP\":{\"01\":{}}}}}", "DP key \"01\" of a is not a rank" },
		{ "{\"default\":{\"a\":{\"longest_matched\":0,\"DP\":{\"0\":7}}}}", "DP 0 of a is not an object" },
		{ "{\"default\":{\"a\":{\"longest_matched\":0,\"DP\":{\"0\":{\"cpu_blocks\":\"2\"}}}}}",
		  "npu_blocks of a DP of a is missing or not a count" },
		{ "{\"default\":{\"a\":{\"longest_matched\":0,\"DP\":{\"0\":{\"npu_blocks\":1,\"cpu_blocks\":\"2\"}}}}}",
		  "cpu_blocks of a DP of a is missing or not a count" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct kv_rows r;
		char why[200] = "";
		bool ok = parse(&r, cases[i].body, false, why);
		kv_rows_free(&r);
		if (ok)
			printf("# case %zu read as an answer\n", i);
		ASSERT(!ok);
		ASSERT_EQ_STR(why, cases[i].why);
	}
}

static void rfc_answer_read(void)
{
	struct kv_rows r;
	char why[200];
	ASSERT(parse(&r, "{\"default\":{\"a\":{\"CPU\":640,\"DISK\":640,\"DP\":{\"0\":640},\"GPU\":384,\"longest_matched\":640}}}",
		     true, why));
	ASSERT_EQ_U64(r.n, 2);
	ASSERT_EQ_U64(r.v[0].f[KV_F_GPU], 384);
	ASSERT_EQ_U64(r.v[0].f[KV_F_RCPU], 640);
	ASSERT_EQ_U64(r.v[1].f[KV_F_DP], 640);
	kv_rows_free(&r);
	ASSERT(!parse(&r, "{\"default\":{\"a\":{\"DP\":{\"0\":640},\"GPU\":384,\"longest_matched\":640}}}", true, why));
	ASSERT_EQ_STR(why, "GPU, CPU or DISK of a is missing or not a count");
	kv_rows_free(&r);
}

/* The differences of two conductor answers of one rank "a"/0, as lines
 * "field router kvtools follows". */
static void diffs(const char *router_dp, const char *kv_dp, char *out, size_t n)
{
	char rb[600], kb[600], why[200];
	snprintf(rb, sizeof rb, "{\"default\":{\"a\":{\"DP\":{\"0\":%s},\"longest_matched\":0}}}", router_dp);
	snprintf(kb, sizeof kb, "{\"default\":{\"a\":{\"DP\":{\"0\":%s},\"longest_matched\":0}}}", kv_dp);
	struct kv_rows r, k;
	struct kv_fdiffs d = { 0 };
	parse(&r, rb, false, why);
	parse(&k, kb, false, why);
	kv_rows_diff(&r, &k, &d);
	size_t len = 0;
	out[0] = 0;
	for (size_t i = 0; i < d.n; i++)
		len += (size_t)snprintf(out + len, n - len, "%s %llu %llu %s\n", kv_field_name(d.v[i].field),
					(unsigned long long)d.v[i].router, (unsigned long long)d.v[i].kvtools,
					d.v[i].follows == KV_NO_FOLLOW ? "-" : kv_field_name(d.v[d.v[i].follows].field));
	free(d.v);
	kv_rows_free(&r);
	kv_rows_free(&k);
}

static void what_follows(void)
{
	char out[1000];
	/* the router kept 2 xpu blocks kvquery counts as cpu: one cpu walk ends at 2 for both */
	diffs(DP6(0, 0, 0, 0, 2, 2), DP6(2, 2, 0, 0, 2, 0), out, sizeof out);
	ASSERT_EQ_STR(out, "npu_blocks 2 0 -\ncpu_blocks 0 2 npu_blocks\ncpu_local_blocks 0 2 cpu_blocks\n");
	/* the router's cpu walk (hidden under its npu) cannot reach block 6: cpu stands alone */
	diffs(DP6(0, 0, 0, 0, 4, 4), DP6(6, 6, 0, 0, 6, 0), out, sizeof out);
	ASSERT_EQ_STR(out, "npu_blocks 4 0 -\ncpu_blocks 0 6 -\ncpu_local_blocks 0 6 cpu_blocks\nmatched_tokens 4 6 npu_blocks\n");
	/* both sides' cpu counted, ending at the same block */
	diffs(DP6(1, 1, 0, 0, 4, 3), DP6(3, 3, 0, 0, 4, 1), out, sizeof out);
	ASSERT_EQ_STR(out, "npu_blocks 3 1 -\ncpu_blocks 1 3 npu_blocks\ncpu_local_blocks 1 3 cpu_blocks\n");
	/* only the split: its own difference */
	diffs(DP6(2, 2, 0, 0, 2, 0), DP6(2, 0, 2, 0, 2, 0), out, sizeof out);
	ASSERT_EQ_STR(out, "cpu_local_blocks 2 0 -\ncpu_remote_blocks 0 2 cpu_local_blocks\n");
	/* disk past the same end follows the tier above */
	diffs(DP6(0, 0, 0, 3, 5, 2), DP6(2, 2, 0, 1, 5, 2), out, sizeof out);
	ASSERT_EQ_STR(out, "cpu_blocks 0 2 -\ndisk_blocks 3 1 cpu_blocks\ncpu_local_blocks 0 2 cpu_blocks\n");
}

static void instances(void)
{
	char why[200];
	struct kv_rows r, k;
	struct kv_fdiffs d = { 0 };
	/* an instance only the router names: zeros on kvquery's side; its
	 * longest_matched follows its rank's tokens */
	parse(&r, "{\"default\":{\"z\":{\"DP\":{\"1\":" DP6(0, 0, 0, 0, 128, 2) "},\"longest_matched\":128}}}", false, why);
	parse(&k, "{\"default\":{}}", false, why);
	kv_rows_diff(&r, &k, &d);
	ASSERT_EQ_U64(d.n, 3);
	ASSERT_EQ_STR(kv_field_name(d.v[0].field), "npu_blocks");
	ASSERT_EQ_U64((uint64_t)d.v[0].dp, 1);
	ASSERT_EQ_U64(d.v[0].kvtools, 0);
	ASSERT_EQ_STR(kv_field_name(d.v[1].field), "matched_tokens");
	ASSERT_EQ_STR(kv_field_name(d.v[2].field), "longest_matched");
	ASSERT_EQ_U64(d.v[2].follows, 1);
	free(d.v);
	kv_rows_free(&r);
	kv_rows_free(&k);
	/* identical answers: no difference */
	d = (struct kv_fdiffs){ 0 };
	parse(&r, "{\"default\":{\"a\":{\"DP\":{\"0\":" DP6(2, 2, 0, 0, 640, 3) "},\"longest_matched\":640}}}", false, why);
	parse(&k, "{\"default\":{\"a\":{\"DP\":{\"0\":" DP6(2, 2, 0, 0, 640, 3) "},\"longest_matched\":640}}}", false, why);
	kv_rows_diff(&r, &k, &d);
	ASSERT_EQ_U64(d.n, 0);
	free(d.v);
	kv_rows_free(&r);
	kv_rows_free(&k);
}

int main(void)
{
	RUN(conductor_answer_read);
	RUN(not_an_answer);
	RUN(rfc_answer_read);
	RUN(what_follows);
	RUN(instances);
	return unit_done();
}
